package keyspace

import (
	"fmt"
	"math"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// TestAvgTTL: INFO's avg_ttl is the mean remaining TTL of each database's keys with a TTL, and
// follows keys given a TTL, deleted, persisted, expired and flushed; 0 when none has a TTL. The
// shards here are smaller than INFO's sample, so the estimate is exact; the clock stands still
// unless moved.
func TestAvgTTL(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer ks.Close()
	se := ks.NewSession()
	check := func(when string, want ...int64) {
		t.Helper()
		info := ks.Info(nil)
		for db, w := range want {
			if got := info[db].AvgTTLMs; got != w {
				t.Fatalf("%s: db %d avg_ttl %d, want %d (%+v)", when, db, got, w, info[db])
			}
		}
	}
	put := func(db int, prefix string, n int, ttl int64) {
		t.Helper()
		for i := 0; i < n; i++ {
			exp := int64(0)
			if ttl > 0 {
				exp = clk.After(ttl)
			}
			if err := ks.Put(se, db, []byte(fmt.Sprintf("%s%d", prefix, i)), []byte("v"), exp, TypeString); err != nil {
				t.Fatal(err)
			}
		}
		if err := se.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	update := func(db int, prefix string, n int, fn func(tx *Tx)) {
		t.Helper()
		for i := 0; i < n; i++ {
			key := []Key{{DB: db, Key: []byte(fmt.Sprintf("%s%d", prefix, i))}}
			if err := ks.Update(se, key, func(tx *Tx) error { fn(tx); return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	sweep := func() {
		for _, s := range ks.shards {
			for pass := 0; pass < 8; pass++ {
				ks.expireShard(s)
			}
		}
	}

	put(0, "none", 100, 0)
	check("keys without a TTL", 0, 0)
	put(0, "a", 50, 100_000)
	put(1, "b", 50, 10_000_000)
	check("keys with a TTL", 100_000, 10_000_000)
	put(0, "c", 50, 300_000)
	check("more keys with a TTL", 200_000, 10_000_000)
	update(0, "a", 50, func(tx *Tx) { tx.Delete(0) })
	check("deleted", 300_000, 10_000_000)
	update(0, "c", 25, func(tx *Tx) { tx.SetExpire(0, 0) })
	check("some persisted", 300_000, 10_000_000)
	update(0, "c", 50, func(tx *Tx) { tx.SetExpire(0, 0) })
	check("all persisted", 0, 10_000_000)
	sweep()
	check("all persisted, after a sweep", 0, 10_000_000)

	// Expired keys do not count, before the sweep removes them and after.
	put(0, "short", 50, 1_000)
	put(0, "long", 50, 11_000)
	check("short and long", 6_000, 10_000_000)
	clk.Advance(1_000)
	check("short expired", 10_000, 9_999_000)
	sweep()
	check("short expired and swept", 10_000, 9_999_000)
	clk.Advance(10_000)
	sweep()
	check("all expired", 0, 9_989_000)

	if err := ks.FlushDB(se, 1); err != nil {
		t.Fatal(err)
	}
	check("db 1 flushed", 0, 0)
	put(1, "d", 10, 5_000)
	check("after the flush", 0, 5_000)
	if err := ks.FlushAll(se); err != nil {
		t.Fatal(err)
	}
	check("all flushed", 0, 0)
}

// TestAvgTTLSweepAverage: the sweep's per-shard average, INFO's fallback when its sample misses
// every key with a TTL, follows the keys too.
func TestAvgTTLSweepAverage(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer ks.Close()
	se := ks.NewSession()
	// fallback is the estimate of db from the sweep's averages alone.
	fallback := func(db int) int64 {
		est := ks.newAvgTTLEstimate()
		est.probes = 0
		for _, s := range ks.shards {
			s.mu.RLock()
			est.addLocked(s)
			s.mu.RUnlock()
		}
		return est.avg(db)
	}
	sweep := func() {
		for _, s := range ks.shards {
			ks.expireShard(s)
		}
	}
	for i := 0; i < 40; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("k%d", i), "v", clk.After(100_000))
	}
	sweep()
	if got := fallback(0); got != 100_000 {
		t.Fatalf("after a sweep: %d, want 100000", got)
	}
	// A shard's sweep covers all of its keys here, so its average is replaced, not blended.
	for i := 0; i < 40; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("k%d", i), "v", clk.After(300_000))
	}
	sweep()
	if got := fallback(0); got != 300_000 {
		t.Fatalf("after new TTLs and a sweep: %d, want 300000", got)
	}
	if err := ks.FlushDB(se, 0); err != nil {
		t.Fatal(err)
	}
	for i, s := range ks.shards {
		if a := s.avgTTLMs.Load(); a != 0 {
			t.Fatalf("shard %d average %d after FLUSHDB, want 0", i, a)
		}
	}
	// Without keys with a TTL the sweep resets the average, as Redis resets avg_ttl.
	mustPut(t, ks, se, 0, "t", "v", clk.After(50_000))
	sweep()
	if got := fallback(0); got != 50_000 {
		t.Fatalf("one key: %d, want 50000", got)
	}
	if err := ks.Update(se, []Key{{DB: 0, Key: []byte("t")}}, func(tx *Tx) error { tx.SetExpire(0, 0); return nil }); err != nil {
		t.Fatal(err)
	}
	sweep()
	for i, s := range ks.shards {
		if a := s.avgTTLMs.Load(); a != 0 {
			t.Fatalf("shard %d average %d with no key with a TTL, want 0", i, a)
		}
	}
}

// TestAvgTTLHuge: TTLs near the largest time neither overflow the sums nor turn negative.
func TestAvgTTLHuge(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer ks.Close()
	se := ks.NewSession()
	for i := 0; i < 20; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("k%d", i), "v", math.MaxInt64)
	}
	for _, s := range ks.shards {
		ks.expireShard(s)
		if a := s.avgTTLMs.Load(); a < math.MaxInt64-clk.Now()-1024 && s.expires[0] > 0 {
			t.Fatalf("sweep average %d, want about %d", a, int64(math.MaxInt64)-clk.Now())
		}
	}
	if got := ks.Info(nil)[0].AvgTTLMs; got < math.MaxInt64-clk.Now()-1024 {
		t.Fatalf("avg_ttl %d, want about %d", got, int64(math.MaxInt64)-clk.Now())
	}
}
