//go:build !invariants

package vlog

const invariants = false
