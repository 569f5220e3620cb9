package vfs

import "unsafe"

// AlignedBuffer returns a zeroed buffer for direct reads: its length is n rounded up to a multiple
// of AlignedBlock and its first byte is AlignedBlock-aligned in memory. The capacity equals the
// length, so an append cannot move the data to an unaligned array. n must not be negative.
//
// It over-allocates by one block and slices; Go's heap does not move objects, so the alignment
// holds for the buffer's lifetime. Rejected: mmap-backed buffers, which are aligned for free but
// must be unmapped by hand and are invisible to the garbage collector.
func AlignedBuffer(n int) []byte {
	if n < 0 {
		panic("vfs: AlignedBuffer of negative size")
	}
	size := (n + AlignedBlock - 1) / AlignedBlock * AlignedBlock
	if size == 0 {
		return []byte{}
	}
	buf := make([]byte, size+AlignedBlock)
	off := 0
	if rem := int(uintptr(unsafe.Pointer(&buf[0])) % AlignedBlock); rem != 0 {
		off = AlignedBlock - rem
	}
	return buf[off : off+size : off+size]
}

// IsAligned reports whether b starts at an AlignedBlock-aligned address and its length is a
// multiple of AlignedBlock, as direct reads require. An empty slice is aligned.
func IsAligned(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	return uintptr(unsafe.Pointer(&b[0]))%AlignedBlock == 0 && len(b)%AlignedBlock == 0
}
