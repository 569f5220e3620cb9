package test

// Space reclamation: overwritten and deleted values give their disk space back by themselves,
// INFO persistence shows it, and nothing is lost across a restart.

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

// reclaimFigures are the INFO persistence fields the reclamation test follows.
type reclaimFigures struct {
	disk, live, dead, segments, moved, freed int64
}

func readReclaimFigures(t *testing.T, k checker) reclaimFigures {
	t.Helper()
	f := infoFields(k.str("INFO", "persistence"))
	var r reclaimFigures
	for name, p := range map[string]*int64{
		"lavik_disk_bytes": &r.disk, "lavik_live_bytes": &r.live, "lavik_dead_bytes": &r.dead,
		"lavik_reclaim_segments_total": &r.segments, "lavik_reclaim_bytes_moved": &r.moved,
		"lavik_reclaim_bytes_freed": &r.freed,
	} {
		if _, err := fmt.Sscan(f[name], p); err != nil {
			t.Fatalf("INFO persistence %s = %q: %v", name, f[name], err)
		}
	}
	return r
}

// TestReclaimOverwriteAndDelete overwrites 20,000 keys of 1 KiB ten times: once the collector
// has caught up, disk use is within twice the live data; a restart brings back every latest
// value; deleting everything then gives the space back, down to about a segment a shard.
func TestReclaimOverwriteAndDelete(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("value-log reclamation is Lavik's")
	}
	s := harness.Start(t, "--segment-size", "1mb", "--reclaim-rate", "256mb")
	c := s.Client()
	k := newChecker(t, c)
	k.eq([]any{"reclaim-rate", "268435456"}, "CONFIG", "GET", "reclaim-rate")
	ctx := harness.Ctx(t)
	const keys, rounds, size = 20000, 10, 1024
	key := func(i int) string { return fmt.Sprintf("key:%05d", i) }
	val := func(r, i int) string {
		head := fmt.Sprintf("round %d key %d ", r, i)
		return head + string(bytes.Repeat([]byte{byte('a' + (r+i)%26)}, size-len(head)))
	}
	for r := 0; r < rounds; r++ {
		for start := 0; start < keys; start += 500 {
			p := c.Pipeline()
			for i := start; i < start+500; i++ {
				p.Set(ctx, key(i), val(r, i), 0)
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		}
	}
	var f reclaimFigures
	harness.Eventually(t, 2*time.Minute, "disk use within twice the live data", func() bool {
		f = readReclaimFigures(t, k)
		return f.disk <= 2*f.live
	})
	t.Logf("after %d overwrites of %d keys: disk %d bytes, live %d, dead %d; %d segments reclaimed, %d bytes moved, %d freed",
		rounds, keys, f.disk, f.live, f.dead, f.segments, f.moved, f.freed)
	if f.segments == 0 || f.live < keys*size {
		t.Fatalf("figures %+v: nothing reclaimed, or less live data than written", f)
	}

	s.Restart()
	c = s.Client()
	k = newChecker(t, c)
	for start := 0; start < keys; start += 1000 {
		names := make([]string, 0, 1000)
		for i := start; i < start+1000; i++ {
			names = append(names, key(i))
		}
		got, err := c.MGet(ctx, names...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range got {
			if want := val(rounds-1, start+j); v != want {
				t.Fatalf("after the restart %s = %.40q..., want %.40q...", names[j], v, want)
			}
		}
	}
	k.eq(keys, "DBSIZE")

	// Delete everything: the space comes back without a restart.
	for start := 0; start < keys; start += 1000 {
		names := make([]string, 0, 1000)
		for i := start; i < start+1000; i++ {
			names = append(names, key(i))
		}
		if err := c.Del(ctx, names...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	shards := infoInt(t, k, "server", "lavik_shards")
	harness.Eventually(t, 2*time.Minute, "the deleted values' space back", func() bool {
		f = readReclaimFigures(t, k)
		return f.live == 0 && f.disk <= shards<<20
	})
	t.Logf("after deleting every key: disk %d bytes, %d shards", f.disk, shards)
	s.Restart()
	k = newChecker(t, s.Client())
	k.eq(0, "DBSIZE")
}
