//go:build !linux

package vfs

// DirectAlign returns AlignedBlock outside Linux (see dioalign_linux.go).
func DirectAlign(File) int64 { return AlignedBlock }
