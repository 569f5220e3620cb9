package keyspace

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

func TestRegion(t *testing.T) {
	base := offheapBytes.Load()
	var r region
	if r.size() != 0 || view[uint64](&r, 0) != nil {
		t.Fatal("zero region not empty")
	}
	if err := r.resize(100); err != nil {
		t.Fatal(err)
	}
	if r.size() != pageSize || offheapBytes.Load()-base != int64(pageSize) {
		t.Fatalf("resize(100): size %d, counted %d", r.size(), offheapBytes.Load()-base)
	}
	if !bytes.Equal(r.b, make([]byte, pageSize)) {
		t.Fatal("fresh region not zeroed")
	}
	for i := range r.b {
		r.b[i] = byte(i)
	}
	// Grow far enough that the mapping probably moves; the contents must follow.
	for _, n := range []int{3 * pageSize, 1 << 20, 16 << 20} {
		if err := r.resize(n); err != nil {
			t.Fatal(err)
		}
		if r.size() != n || offheapBytes.Load()-base != int64(n) {
			t.Fatalf("resize(%d): size %d, counted %d", n, r.size(), offheapBytes.Load()-base)
		}
		for i := 0; i < pageSize; i++ {
			if r.b[i] != byte(i) {
				t.Fatalf("after resize(%d) byte %d = %d", n, i, r.b[i])
			}
		}
		if r.b[pageSize] != 0 || r.b[n-1] != 0 {
			t.Fatalf("after resize(%d) the new bytes are not zero", n)
		}
	}
	u := view[uint64](&r, capOf[uint64](&r))
	if len(u) != r.size()/8 {
		t.Fatalf("view of %d uint64 over %d bytes", len(u), r.size())
	}
	u[len(u)-1] = 7
	if r.b[r.size()-8] != 7 {
		t.Fatal("view does not alias the region")
	}
	if err := r.resize(2 * pageSize); err != nil {
		t.Fatal(err)
	}
	if r.size() != 2*pageSize || r.b[5] != 5 {
		t.Fatalf("shrink: size %d, byte 5 = %d", r.size(), r.b[5])
	}
	r.free()
	r.free()
	if r.size() != 0 || offheapBytes.Load() != base {
		t.Fatalf("after free: size %d, counted %d", r.size(), offheapBytes.Load()-base)
	}
	if got := growSize(0, 1); got != pageSize {
		t.Fatalf("growSize(0, 1) = %d", got)
	}
	if got := growSize(1<<20, 1<<20+1); got != 1<<20+1<<16 {
		t.Fatalf("growSize(1M, 1M+1) = %d", got)
	}
}

// TestIndexMemoryAccounting checks that the index's memory is what Stats reports, that
// removing keys and FLUSHALL give it back, and that Close frees all of it.
func TestIndexMemoryAccounting(t *testing.T) {
	base := offheapBytes.Load()
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	opts.Fsync = vlog.FsyncNo
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	indexBytes := func() int64 {
		st := ks.Stats(nil)
		if got := offheapBytes.Load() - base; got != st.IndexBytes {
			t.Fatalf("off-heap %d bytes, Stats.IndexBytes %d", got, st.IndexBytes)
		}
		return st.IndexBytes
	}
	empty := indexBytes()
	if empty != int64(len(ks.shards))*minSlots*4 {
		t.Fatalf("empty keyspace holds %d index bytes", empty)
	}
	const n = 20_000
	for i := 0; i < n; i++ {
		mustPut(t, ks, se, i%3, fmt.Sprintf("key:%012d", i), "v", 0)
	}
	full := indexBytes()
	if per := float64(full-empty) / n; per < 32+17 || per > 16+48+16 {
		t.Fatalf("%.1f index bytes a key", per)
	}
	// Replay rebuilds the index and frees its version table.
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	se = ks.NewSession()
	indexBytes()
	if got := ks.Stats(nil).Keys; got != n {
		t.Fatalf("%d keys after reopening, want %d", got, n)
	}
	if err := ks.FlushAll(se); err != nil {
		t.Fatal(err)
	}
	if got := indexBytes(); got != empty {
		t.Fatalf("after FLUSHALL %d index bytes, empty %d", got, empty)
	}
	mustPut(t, ks, se, 0, "after", "flush", 0)
	wantValue(t, ks, 0, "after", "flush")
	indexBytes()
	mustClose(t, ks)
	if got := offheapBytes.Load() - base; got != 0 {
		t.Fatalf("%d off-heap bytes left after Close", got)
	}
	// A closed keyspace is empty and refuses writes, touching no freed memory.
	if _, ok := ks.Lookup(nil, 0, []byte("after")); ok {
		t.Fatal("Lookup after Close found a key")
	}
	if err := ks.Put(se, 0, []byte("new"), []byte("v"), 0, TypeString); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
	ks.Keys(nil, 0, func([]byte, Meta) { t.Fatal("Keys after Close visited a key") })
	if ks.Stats(nil).IndexBytes != 0 || ks.DBSize(nil, 0) != 0 {
		t.Fatal("closed keyspace reports keys or index memory")
	}
}
