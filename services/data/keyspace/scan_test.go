package keyspace

import (
	"fmt"
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
		if k := ks.RandomKey(0); k == nil || len(k) != 0 {
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
		if k := ks.RandomKey(2); k == nil || len(k) != 0 {
			t.Fatalf("RandomKey(2) = %q (nil: %v), want the empty key", k, k == nil)
		}
	}
}
