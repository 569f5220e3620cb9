//go:build invariants

package keyspace

// invariants turns on the self-checks of invariants.go; `go test -tags invariants` builds them
// in.
const invariants = true
