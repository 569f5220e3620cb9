package test

// Index checkpoints: a clean restart loads the checkpoints written at shutdown and replays
// almost nothing of the log; a kill -9 restart loads the latest checkpoints plus the log written
// after them, and everything acknowledged is there, nothing deleted comes back.

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

// ckptFigures reads the INFO persistence fields of the checkpoint test.
func ckptFigures(t *testing.T, k checker) map[string]int64 {
	t.Helper()
	f := infoFields(k.str("INFO", "persistence"))
	out := map[string]int64{}
	for _, name := range []string{
		"lavik_checkpoints_total", "lavik_checkpoint_failures", "lavik_checkpoint_entries",
		"lavik_checkpoint_last_seconds_ago", "lavik_load_checkpoint_entries",
		"lavik_load_replayed_records", "lavik_load_checkpoints_rejected",
	} {
		v, err := strconv.ParseInt(f[name], 10, 64)
		if err != nil {
			t.Fatalf("INFO persistence %s = %q: %v", name, f[name], err)
		}
		out[name] = v
	}
	return out
}

// TestCheckpointRestart writes 200,000 keys (40,000 with -short), restarts cleanly and checks
// that the start loaded checkpoints and replayed at most a few records; then overwrites, adds,
// deletes and expires keys while background checkpoints run, kills the server with SIGKILL, and
// checks every key against what the clients were told, and again after a clean restart.
func TestCheckpointRestart(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("index checkpoints are Lavik's")
	}
	n := 200000
	if testing.Short() {
		n = 40000
	}
	// Four shards, so that overwriting every key grows each shard's log past the smallest
	// interval even with -short.
	s := harness.Start(t, "--segment-size", "4mb", "--checkpoint-interval-bytes", "1mb", "--shards", "4")
	c := s.Client()
	ctx := harness.Ctx(t)
	model := map[string]string{} // acknowledged state; absent = deleted or never written
	key := func(i int) string { return fmt.Sprintf("ckpt:%07d", i) }
	val := func(i, round int) string {
		return fmt.Sprintf("%s round %d %0*d", key(i), round, 60+i%100, i)
	}
	// write sets keys lo..hi-1 to round's values, 1,000 per pipeline.
	write := func(lo, hi, round int) {
		t.Helper()
		for b := lo; b < hi; b += 1000 {
			p := c.Pipeline()
			for i := b; i < min(b+1000, hi); i++ {
				p.Set(ctx, key(i), val(i, round), 0)
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			for i := b; i < min(b+1000, hi); i++ {
				model[key(i)] = val(i, round)
			}
		}
	}
	verify := func(c *redis.Client, what string) {
		t.Helper()
		if got, err := c.DBSize(ctx).Result(); err != nil || got != int64(len(model)) {
			t.Fatalf("%s: DBSIZE %d, %v; want %d", what, got, err, len(model))
		}
		all := n + n/10
		for b := 0; b < all; b += 1000 {
			var keys []string
			for i := b; i < min(b+1000, all); i++ {
				keys = append(keys, key(i))
			}
			vals, err := c.MGet(ctx, keys...).Result()
			if err != nil {
				t.Fatalf("%s: MGET: %v", what, err)
			}
			for j, v := range vals {
				want, ok := model[keys[j]]
				switch {
				case !ok && v != nil:
					t.Fatalf("%s: %s = %q, but it was deleted (or never written)", what, keys[j], v)
				case ok && v != want:
					t.Fatalf("%s: %s = %v, want %q", what, keys[j], v, want)
				}
			}
		}
	}

	write(0, n, 0)
	s.Restart()
	c = s.Client()
	k := newChecker(t, c)
	fig := ckptFigures(t, k)
	if fig["lavik_load_checkpoint_entries"] != int64(n) || fig["lavik_load_replayed_records"] > int64(n/1000) ||
		fig["lavik_load_checkpoints_rejected"] != 0 {
		t.Fatalf("clean restart: %v; want %d keys from checkpoints and almost nothing replayed", fig, n)
	}
	t.Logf("clean restart: %v", fig)
	verify(c, "after a clean restart")

	// Changes: overwrite every key, add a tenth more, delete every tenth key, and give some
	// keys a TTL long past the test and others one that ends before the restart.
	write(0, n, 1)
	harness.Eventually(t, 30*time.Second, "a background checkpoint", func() bool {
		return ckptFigures(t, k)["lavik_checkpoints_total"] > 0
	})
	write(n, n+n/10, 1)
	for b := 0; b < n; b += 10000 {
		p := c.Pipeline()
		for i := b; i < min(b+10000, n); i += 10 {
			p.Del(ctx, key(i))
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("deletes: %v", err)
		}
		for i := b; i < min(b+10000, n); i += 10 {
			delete(model, key(i))
		}
	}
	p := c.Pipeline()
	var shortTTL []string
	for i := 1; i < n; i += 1000 {
		p.Expire(ctx, key(i), time.Hour)
		if i%2000 == 1 {
			p.PExpire(ctx, key(i+2), 300*time.Millisecond)
			delete(model, key(i+2))
			shortTTL = append(shortTTL, key(i+2))
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("expires: %v", err)
	}
	write(n/2, n/2+n/20, 2)
	before := ckptFigures(t, k)
	var expiring []string // short TTLs not cleared by a later SET
	for _, kk := range shortTTL {
		if _, ok := model[kk]; !ok {
			expiring = append(expiring, kk)
		}
	}
	harness.Eventually(t, 10*time.Second, "the short TTLs to pass", func() bool {
		n, err := c.Exists(ctx, expiring...).Result()
		return err == nil && n == 0
	})

	s.KillRestart()
	c = s.Client()
	k = newChecker(t, c)
	fig = ckptFigures(t, k)
	t.Logf("before kill -9: %v; after: %v", before, fig)
	if fig["lavik_load_checkpoint_entries"] == 0 || fig["lavik_load_checkpoints_rejected"] != 0 {
		t.Fatalf("kill -9 restart: %v; want checkpoints loaded", fig)
	}
	// The tail may be empty if a background checkpoint ran after the last write; what must
	// never happen is a full replay.
	if rec := fig["lavik_load_replayed_records"]; rec >= int64(2*n+n/10+n/20) {
		t.Fatalf("kill -9 restart replayed %d records; want the log tail only", rec)
	}
	verify(c, "after kill -9")
	if ttl, err := c.TTL(ctx, key(1001)).Result(); err != nil || ttl < 50*time.Minute {
		t.Fatalf("TTL of %s after kill -9: %v, %v", key(1001), ttl, err)
	}

	s.Restart()
	c = s.Client()
	if rec := ckptFigures(t, newChecker(t, c))["lavik_load_replayed_records"]; rec > int64(n/1000) {
		t.Fatalf("second clean restart replayed %d records", rec)
	}
	verify(c, "after the second clean restart")
}
