package keyspace

import "golang.org/x/sys/unix"

func osResize(old []byte, n int) (b []byte, err error) {
	if len(old) == 0 {
		b, err = unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	} else {
		b, err = unix.Mremap(old, n, unix.MREMAP_MAYMOVE)
	}
	if err == nil && n >= hugeMin {
		// Advisory: where transparent huge pages are off, or the kernel finds none, the
		// region simply keeps 4 KiB pages.
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
	return b, err
}

// hugeMin is the region size from which the index asks for transparent huge pages. A lookup
// touches a slot, an entry and a key at random places of arrays that reach gigabytes, and with
// 4 KiB pages each of those is a TLB miss on top of the cache miss; with 2 MiB pages far fewer.
// GET at 50 connections, pipeline 1, 10M keys, alternating runs: 4-15% more with huge pages.
// Small regions keep small pages, so a small index does not round up to 2 MiB a region.
const hugeMin = 8 << 20

func osFree(b []byte) {
	// Munmap fails only for a slice that is not a live mapping, which region never passes.
	if err := unix.Munmap(b); err != nil {
		panic("keyspace: munmap: " + err.Error())
	}
}
