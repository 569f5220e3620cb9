//go:build !invariants

package keyspace

const invariants = false
