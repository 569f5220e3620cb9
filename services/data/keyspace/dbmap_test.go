package keyspace

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// refMap is the reference: a plain permutation swapped in memory.
type refMap [16]int

func identityRef() refMap {
	var m refMap
	for i := range m {
		m[i] = i
	}
	return m
}

func checkMap(t *testing.T, ks *Keyspace, want refMap, seed uint64, when string) {
	t.Helper()
	for l, p := range want {
		if got := ks.physicalDB(l); got != p {
			t.Fatalf("seed %d, %s: logical db %d is physical %d, want %d", seed, when, l, got, p)
		}
		if got := ks.logicalDB(p); got != l {
			t.Fatalf("seed %d, %s: physical db %d is logical %d, want %d", seed, when, p, got, l)
		}
	}
}

// TestDBMapSwapsSurviveRestartsAndCrashes swaps databases at random, between writes, FLUSHALLs
// and restarts, and checks the map against a reference; at random points it takes a crash
// clone of the file system (power loss in the middle of whatever runs, a swap included) and
// checks that the reopened keyspace holds the map of before or after the operation that was
// running, never anything else.
func TestDBMapSwapsSurviveRestartsAndCrashes(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		clk := newTestClock()
		mem := vfs.NewMem()
		cr := &crasher{mem: mem}
		opts := testOpts(vfs.NewErrorFS(mem, cr), clk)
		opts.Shards = []int{1, 2, 4, 8}[rng.IntN(4)]
		opts.SegmentSize = 2 << 10
		opts.CheckpointInterval = []int64{-1, 4 << 10}[rng.IntN(2)]
		ks := mustOpen(t, opts)
		se := ks.NewSession()
		want := identityRef()
		for op := 0; op < 300; op++ {
			before := want
			cr.arm(rng, 30)
			switch r := rng.IntN(100); {
			case r < 40:
				mustPut(t, ks, se, rng.IntN(16), "k"+string(rune('a'+rng.IntN(26))), "v", 0)
			case r < 80:
				a, b := rng.IntN(16), rng.IntN(16)
				if err := ks.SwapDB(se, a, b); err != nil {
					t.Fatalf("seed %d: swapdb: %v", seed, err)
				}
				if err := se.Wait(); err != nil {
					t.Fatal(err)
				}
				want[a], want[b] = want[b], want[a]
			case r < 83:
				if err := ks.FlushAll(se); err != nil {
					t.Fatal(err)
				}
				want = identityRef()
			case r < 93:
				mustClose(t, ks)
				ks = mustOpen(t, opts)
				se = ks.NewSession()
			default:
				ks.Checkpoint() //nolint:errcheck // a failed checkpoint changes nothing
			}
			checkMap(t, ks, want, seed, "after op")
			clone := cr.taken()
			cr.disarm()
			if clone == nil {
				continue
			}
			copts := opts
			copts.FS = clone
			cks, err := Open(copts)
			if err != nil {
				t.Fatalf("seed %d: open after crash: %v", seed, err)
			}
			ok := true
			for l := range want {
				if cks.physicalDB(l) != before[l] {
					ok = false
				}
			}
			if !ok {
				checkMap(t, cks, want, seed, "after crash")
			}
			mustClose(t, cks)
		}
		mustClose(t, ks)
	}
}

// TestSwapDBErrorsAndWatches checks the range errors, a swap with itself, and that watchers of
// keys of either database are marked dirty while others are not.
func TestSwapDBErrorsAndWatches(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer mustClose(t, ks)
	se := ks.NewSession()
	for _, c := range [][2]int{{-1, 0}, {0, 16}, {16, 16}} {
		if err := ks.SwapDB(se, c[0], c[1]); !errors.Is(err, ErrDBRange) {
			t.Fatalf("swapdb %v: %v, want ErrDBRange", c, err)
		}
	}
	if err := ks.SwapDB(se, 3, 3); err != nil || ks.physicalDB(3) != 3 {
		t.Fatalf("swapdb 3 3: %v, db 3 is %d", err, ks.physicalDB(3))
	}
	var w0, w1, w2 Watches
	ks.Watch(&w0, 0, []byte("a"))
	ks.Watch(&w1, 1, []byte("missing"))
	ks.Watch(&w2, 2, []byte("a"))
	if err := ks.SwapDB(se, 0, 1); err != nil {
		t.Fatal(err)
	}
	if !w0.dirty.Load() || !w1.dirty.Load() || w2.dirty.Load() {
		t.Fatalf("dirty after swapdb 0 1: %v %v %v, want true true false", w0.dirty.Load(), w1.dirty.Load(), w2.dirty.Load())
	}
	if ks.physicalDB(0) != 1 || ks.physicalDB(1) != 0 {
		t.Fatalf("map after swapdb 0 1: %d %d", ks.physicalDB(0), ks.physicalDB(1))
	}
	if ks.Fsync() != vlog.FsyncAlways {
		t.Fatal("test options changed")
	}
}
