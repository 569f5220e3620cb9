//go:build !linux

package main

// setSchedPolicy does nothing outside Linux (see sched_linux.go).
func setSchedPolicy(string) error { return nil }
