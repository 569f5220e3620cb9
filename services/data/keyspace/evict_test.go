package keyspace

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

func TestLFUCounter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := uint8(lfuInit)
	for range 1000 {
		c = lfuIncr(c, 10, rng.Float64())
	}
	// Redis's table for factor 10: about 10 at 100 hits, 18 at 1000.
	if c < 12 || c > 25 {
		t.Fatalf("counter %d after 1000 increments at factor 10", c)
	}
	if lfuIncr(255, 10, 0) != 255 {
		t.Fatal("counter past 255")
	}
	if lfuIncr(3, 10, 0.99) != 4 {
		t.Fatal("a counter below the initial value always grows")
	}
	if got := lfuDecay(20, 7, 1); got != 13 {
		t.Fatalf("decay of 20 by 7 minutes at 1 a minute: %d", got)
	}
	if got := lfuDecay(20, 7, 0); got != 20 {
		t.Fatalf("decay time 0 decayed to %d", got)
	}
	if got := lfuDecay(5, 600, 1); got != 0 {
		t.Fatalf("decay below 0: %d", got)
	}
	// The LFU minute and LRU clock wrap: idle time is measured modulo their widths.
	w := lfuWord(250, 30)
	if got := lfuDecayed(w, 4*60000, 1); got != 20 { // minute 4 is 10 minutes after minute 250
		t.Fatalf("decayed across the minute's wrap: %d", got)
	}
	if got := idleMs(65535, 3000); got != 4000 {
		t.Fatalf("idle across the clock's wrap: %d ms", got)
	}
}

// TestEvictSampling: under allkeys-lru with a driven clock the keys evicted are the idle ones;
// under volatile-ttl the nearest to expire; with no candidate CheckLimits refuses.
func TestEvictSampling(t *testing.T) {
	for _, tc := range []struct {
		policy Policy
		ttl    bool
	}{{AllKeysLRU, false}, {AllKeysLFU, false}, {VolatileLRU, true}, {VolatileTTL, true}, {AllKeysRandom, false}} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			clk := newTestClock()
			ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
			defer mustClose(t, ks)
			ks.SetLimits(Limits{Policy: tc.policy, Samples: 5})
			se := ks.NewSession()
			const n = 2000
			for i := range n {
				var exp int64
				if tc.ttl {
					exp = clk.After(int64(1e6 + i*1000))
				}
				mustPut(t, ks, se, 0, fmt.Sprintf("k%d", i), "v", exp)
			}
			clk.Advance(600_000)
			// The second half is read again (hot), many times for LFU.
			for i := n / 2; i < n; i++ {
				for range 20 {
					ks.Get(se, 0, fmt.Appendf(nil, "k%d", i), func(Value, Meta) error { return nil })
				}
			}
			// Evict 300 keys round by round (the memory figure includes the process's Go heap,
			// which other tests move: CheckLimits is tested below and end to end).
			l := &Limits{Policy: tc.policy, Samples: 5}
			ks.ev.mu.Lock()
			for range 300 {
				if !ks.evictOneLocked(l) {
					t.Fatal("found nothing to evict")
				}
			}
			ks.ev.mu.Unlock()
			first := 0
			for i := range n / 2 {
				if _, ok := ks.Lookup(se, 0, fmt.Appendf(nil, "k%d", i)); !ok {
					first++
				}
			}
			ev := int(ks.EvictedKeys())
			t.Logf("evicted %d, %d of them from the cold (or nearest-expiry) half", ev, first)
			if ev != 300 {
				t.Fatalf("evicted %d keys", ev)
			}
			if tc.policy != AllKeysRandom && first < ev*8/10 {
				t.Fatalf("only %d of %d evicted keys were cold", first, ev)
			}
		})
	}
	t.Run("CheckLimits", func(t *testing.T) {
		clk := newTestClock()
		ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
		defer mustClose(t, ks)
		se := ks.NewSession()
		for i := range 2000 {
			mustPut(t, ks, se, 0, fmt.Sprintf("k%d", i), "v", 0)
		}
		ks.RefreshUse()
		limit := ks.MemoryUsed() - 300*(entrySize+2+5)
		ks.SetLimits(Limits{Policy: AllKeysLRU, Samples: 5, MaxMemory: limit})
		// Each call evicts for at most evictBudget: a burst takes several (or the tick).
		for range 1000 {
			if err := ks.CheckLimits(); err != nil {
				t.Fatal(err)
			}
			if ks.MemoryUsed() <= limit {
				break
			}
		}
		if ks.MemoryUsed() > limit || ks.EvictedKeys() < 250 {
			t.Fatalf("used %d over the limit %d after evicting %d keys", ks.MemoryUsed(), limit, ks.EvictedKeys())
		}
	})
	t.Run("nothing to evict", func(t *testing.T) {
		clk := newTestClock()
		ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
		defer mustClose(t, ks)
		se := ks.NewSession()
		mustPut(t, ks, se, 0, "k", "v", 0)
		ks.SetLimits(Limits{Policy: VolatileLRU, Samples: 5, MaxMemory: 1})
		if err := ks.CheckLimits(); err != ErrOOM {
			t.Fatalf("volatile-lru with no key with a TTL: %v", err)
		}
		ks.SetLimits(Limits{Policy: NoEviction, MaxMemory: 1})
		if err := ks.CheckLimits(); err != ErrOOM {
			t.Fatalf("noeviction: %v", err)
		}
		if ks.EvictedKeys() != 0 {
			t.Fatal("evicted")
		}
	})
}
