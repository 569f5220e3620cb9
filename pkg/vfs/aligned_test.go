package vfs

import (
	"testing"
	"unsafe"
)

func TestAlignedBuffer(t *testing.T) {
	for _, n := range []int{0, 1, 511, 4095, 4096, 4097, 3 * 4096, 1 << 20} {
		b := AlignedBuffer(n)
		want := (n + AlignedBlock - 1) / AlignedBlock * AlignedBlock
		if len(b) != want || cap(b) != want {
			t.Errorf("AlignedBuffer(%d): len %d cap %d, want %d", n, len(b), cap(b), want)
		}
		if n > 0 && uintptr(unsafe.Pointer(&b[0]))%AlignedBlock != 0 {
			t.Errorf("AlignedBuffer(%d) starts at %p, not %d-aligned", n, &b[0], AlignedBlock)
		}
		if !IsAligned(b) {
			t.Errorf("IsAligned(AlignedBuffer(%d)) = false", n)
		}
		for i, c := range b {
			if c != 0 {
				t.Fatalf("AlignedBuffer(%d)[%d] = %d, want 0", n, i, c)
			}
		}
	}
}

func TestIsAligned(t *testing.T) {
	b := AlignedBuffer(2 * AlignedBlock)
	if IsAligned(b[1 : 1+AlignedBlock]) {
		t.Error("IsAligned accepted a misaligned start")
	}
	if IsAligned(b[:AlignedBlock-1]) {
		t.Error("IsAligned accepted a length that is not a multiple of the block")
	}
	if !IsAligned(b[AlignedBlock:]) {
		t.Error("IsAligned rejected the second block")
	}
}

func TestAlignedBufferNegativePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("AlignedBuffer(-1) did not panic")
		}
	}()
	AlignedBuffer(-1)
}
