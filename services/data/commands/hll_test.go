package commands

import (
	"bytes"
	"fmt"
	"testing"
)

// TestHLLSparseToDense adds elements one by one and checks the invariants Redis keeps: the
// sparse form decodes to the same registers as a dense one built alongside, it is promoted
// once it would pass 3000 bytes, and the estimate stays within 2% of the truth.
func TestHLLSparseToDense(t *testing.T) {
	v := hllNew()
	d, _ := hllToDense(hllNew())
	promotedAt := -1
	for i := 0; i < 20000; i++ {
		ele := []byte(fmt.Sprintf("ele:%d", i))
		var r int
		v, r = hllAdd(v, ele)
		if r < 0 {
			t.Fatalf("add %d: corrupt", i)
		}
		d, _ = hllAdd(d, ele)
		if v[4] == hllSparse && len(v) > hllSparseMax {
			t.Fatalf("add %d: sparse value of %d bytes", i, len(v))
		}
		if v[4] == hllDense && promotedAt < 0 {
			promotedAt = i
		}
		if i%997 == 0 || i == promotedAt {
			vd, ok := hllToDense(v)
			if !ok || !bytes.Equal(vd[hllHdrSize:], d[hllHdrSize:]) {
				t.Fatalf("add %d: registers differ from the dense twin", i)
			}
		}
	}
	if promotedAt < 0 {
		t.Fatal("never promoted to dense")
	}
	h, ok := hllHisto(v)
	if !ok {
		t.Fatal("histogram: corrupt")
	}
	if est := float64(hllEstimate(h)); est < 20000*0.98 || est > 20000*1.02 {
		t.Fatalf("estimate %v for 20000 elements", est)
	}
	if hllEstimate(func() [64]int { h, _ := hllHisto(hllNew()); return h }()) != 0 {
		t.Fatal("an empty HLL does not count 0")
	}
	// A sparse value that does not cover every register is corrupt.
	bad := append(hllNew()[:hllHdrSize], spZero(10))
	if _, ok := hllHisto(bad); ok {
		t.Fatal("a short sparse value passed")
	}
	if _, r := hllAdd(bad, []byte("x")); r != -1 {
		t.Fatalf("add to a short sparse value = %d; want -1", r)
	}
}
