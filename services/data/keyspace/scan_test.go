package keyspace

import (
	"fmt"
	"math"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// TestEmptyKey: the empty key is a key like any other for Scan, Keys and RandomKey.
func TestEmptyKey(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer ks.Close()
	se := ks.NewSession()
	mustPut(t, ks, se, 0, "", "v", 0)
	if got := keysOf(ks, 0); len(got) != 1 || got[0] != "" {
		t.Fatalf("Keys(0) = %q, want [\"\"]", got)
	}
	for i := 0; i < 20; i++ {
		if k := ks.RandomKey(nil, 0); k == nil || len(k) != 0 {
			t.Fatalf("RandomKey(0) = %q (nil: %v), want the empty key", k, k == nil)
		}
	}
	// The same through the walk RandomKey falls back on in a sparse database: db 2 holds only
	// the empty key while db 0 fills the shards.
	for i := 0; i < 5000; i++ {
		if err := ks.Put(se, 0, []byte(fmt.Sprintf("big%d", i)), []byte("v"), 0, TypeString); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, ks, se, 2, "", "v", 0)
	for i := 0; i < 20; i++ {
		if k := ks.RandomKey(nil, 2); k == nil || len(k) != 0 {
			t.Fatalf("RandomKey(2) = %q (nil: %v), want the empty key", k, k == nil)
		}
	}
}

// TestScanAnyCursor: Scan takes any 64-bit cursor. One past the last shard ends the iteration
// without keys; an entry index past a shard's entries goes on with the next shard.
func TestScanAnyCursor(t *testing.T) {
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	ks := mustOpen(t, opts)
	defer ks.Close()
	se := ks.NewSession()
	for i := 0; i < 100; i++ {
		if err := ks.Put(se, 0, []byte(fmt.Sprintf("k%d", i)), []byte("v"), 0, TypeString); err != nil {
			t.Fatal(err)
		}
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []uint64{uint64(opts.Shards) << 32, 1 << 63, math.MaxUint64, math.MaxUint64 - 1} {
		if ks.ValidCursor(c) {
			t.Errorf("ValidCursor(%d) = true", c)
		}
		if next := ks.Scan(nil, 0, c, 10, func(key []byte, _ Meta) { t.Errorf("Scan(%d) returned %q", c, key) }); next != 0 {
			t.Errorf("Scan(%d) = %d, want 0", c, next)
		}
	}
	// Past shard 0's entries: the keys of the other shards, and none of shard 0.
	want := map[string]bool{}
	for i := 0; i < 100; i++ {
		if k := fmt.Sprintf("k%d", i); shardFor(opts.Shards, 0, k) != 0 {
			want[k] = true
		}
	}
	got := map[string]bool{}
	for c := uint64(math.MaxUint32); ; {
		c = ks.Scan(nil, 0, c, 1000, func(key []byte, _ Meta) { got[string(key)] = true })
		if c == 0 {
			break
		}
	}
	if len(got) != len(want) {
		t.Fatalf("scan from past shard 0's entries: %d keys, want %d", len(got), len(want))
	}
	for k := range got {
		if !want[k] {
			t.Fatalf("scan from past shard 0's entries returned %q of shard 0", k)
		}
	}
}
