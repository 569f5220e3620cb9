package vfs

import "golang.org/x/sys/unix"

// DirectAlign returns the alignment that offsets and lengths of direct reads of f need: what
// the kernel reports for the file (statx STATX_DIOALIGN, the device's logical block size on
// most file systems, often 512 bytes), or AlignedBlock when it reports nothing or f has
// no descriptor. Reading at the finer alignment moves less data: a 1 KiB record read in 4 KiB
// units costs 4 or 8 KiB, in 512-byte units 1.5 KiB. Memory stays aligned to AlignedBlock.
func DirectAlign(f File) int64 {
	fd, err := f.Fd()
	if err != nil {
		return AlignedBlock
	}
	var st unix.Statx_t
	if unix.Statx(int(fd), "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &st) != nil || st.Mask&unix.STATX_DIOALIGN == 0 {
		return AlignedBlock
	}
	a := int64(st.Dio_offset_align)
	if r := int64(st.Dio_read_offset_align); r != 0 && r < a {
		a = r // kernels that read at a finer alignment than they write say so apart
	}
	if a < 512 || a > AlignedBlock || a&(a-1) != 0 || int64(st.Dio_mem_align) > AlignedBlock {
		return AlignedBlock
	}
	return a
}
