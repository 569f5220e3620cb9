//go:build invariants

package vlog

// invariants turns on costly self-checks; `go test -tags invariants` builds them in.
const invariants = true
