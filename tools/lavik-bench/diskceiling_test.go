package main

import "testing"

// TestDirectSpan checks the widening of a record read to direct-I/O units against cases worked
// by hand, and that every span covers its record within maxDirectSpan.
func TestDirectSpan(t *testing.T) {
	const size = 1 << 20
	for _, tc := range []struct {
		off     int64
		n       int
		align   int64
		start   int64
		length  int
		comment string
	}{
		{0, 1088, 512, 0, 1536, "aligned start: three 512 B blocks"},
		{511, 1088, 512, 0, 2048, "starts on a block's last byte: four"},
		{1000, 1088, 512, 512, 2048, "bytes 1000 to 2088: blocks 512 to 2560"},
		{0, 1088, 4096, 0, 4096, "one page"},
		{4000, 1088, 4096, 0, 8192, "crosses a page"},
		{size - 100, 1088, 512, size - 512, 512, "cut at the end of the file"},
	} {
		start, length := directSpan(tc.off, tc.n, tc.align, size)
		if start != tc.start || length != tc.length {
			t.Errorf("%s: directSpan(%d, %d, %d) = %d+%d, want %d+%d", tc.comment, tc.off, tc.n, tc.align, start, length, tc.start, tc.length)
		}
	}
	for _, align := range []int64{512, 4096} {
		for off := int64(0); off < 3*align; off += 7 {
			start, length := directSpan(off, 1088, align, size)
			if start%align != 0 || int64(length)%align != 0 || start > off || start+int64(length) < off+1088 || length > maxDirectSpan(1088, align) {
				t.Fatalf("align %d off %d: %d+%d", align, off, start, length)
			}
		}
	}
}
