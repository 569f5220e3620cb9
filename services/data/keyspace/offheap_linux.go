package keyspace

import "golang.org/x/sys/unix"

func osResize(old []byte, n int) ([]byte, error) {
	if len(old) == 0 {
		return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	}
	return unix.Mremap(old, n, unix.MREMAP_MAYMOVE)
}

func osFree(b []byte) {
	// Munmap fails only for a slice that is not a live mapping, which region never passes.
	if err := unix.Munmap(b); err != nil {
		panic("keyspace: munmap: " + err.Error())
	}
}
