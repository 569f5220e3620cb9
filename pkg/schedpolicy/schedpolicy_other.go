//go:build !linux

// Package schedpolicy sets the scheduling policy of the process's threads (Linux only).
package schedpolicy

// Apply does nothing outside Linux (see schedpolicy_linux.go).
func Apply(string) error { return nil }
