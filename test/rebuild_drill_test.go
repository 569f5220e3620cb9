package test

// The drill from the operator's side: a follower rebuilt with lavikctl while its primary holds
// acknowledged data, and the primary killed with kill -9 in the middle of the copy. The
// follower's data is then a part of the primary's: meta must not promote it, lavikctl status
// must say why, and when the primary comes back everything it acknowledged is there.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

// drillKeys is how many keys the primary holds: enough that the copy takes long enough to be
// cut in the middle.
const drillKeys = 200_000

// TestMetaRebuildThenPrimaryKilled: 200,000 keys acknowledged by WAIT 1; lavikctl rebuild of
// the follower; kill -9 of the primary while the snapshot is loading. Throughout, a watcher
// checks that any node taking writes holds every acknowledged key. The follower, incomplete,
// is never promoted (lavikctl status says why), the old primary comes back as the primary with
// every key, and the follower then completes its copy.
func TestMetaRebuildThenPrimaryKilled(t *testing.T) {
	t0 := time.Now()
	phase := func(what string) { t.Logf("%v: %s", time.Since(t0).Round(time.Millisecond), what) }
	c := startMetaCluster(t)
	pid := c.placed(20 * time.Second)
	phase("placed")
	fid := c.other(pid)
	ctx := context.Background()
	pc := c.data[pid].ClientOpts(&redis.Options{ReadTimeout: 30 * time.Second})
	defer pc.Close()

	// The data, acknowledged by WAIT 1 in pipelines of 5,000.
	val := strings.Repeat("v", 64)
	for i := 0; i < drillKeys; i += 5000 {
		pipe := pc.Pipeline()
		for j := i; j < i+5000; j++ {
			pipe.Set(ctx, fmt.Sprintf("drill:%d", j), val, 0)
		}
		wait := pipe.Do(ctx, "WAIT", 1, 10000)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := wait.Int(); err != nil || n != 1 {
			t.Fatalf("WAIT 1 after key %d: %d, %v", i, n, err)
		}
	}
	epoch := c.epoch()
	phase("loaded")

	// The watcher: a node that takes a write (a probe in database 1) must hold every key of
	// database 0 the primary acknowledged.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var violation atomic.Value
	var probes atomic.Int64
	for _, id := range []string{pid, fid} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := c.data[id].ClientOpts(&redis.Options{DB: 1, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
				ReadTimeout: 2 * time.Second, WriteTimeout: 500 * time.Millisecond, PoolSize: 1})
			defer cl.Close()
			for !stop.Load() {
				if cl.Set(ctx, "probe", id, 0).Err() == nil {
					probes.Add(1)
					r := cl.Pipeline()
					r.Select(ctx, 0)
					size := r.DBSize(ctx)
					r.Select(ctx, 1)
					if _, err := r.Exec(ctx); err == nil && size.Val() < drillKeys {
						violation.Store(fmt.Sprintf("%s took a write holding %d of the %d acknowledged keys", id, size.Val(), drillKeys))
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()

	// The rebuild, then kill -9 of the primary once the follower is loading the snapshot.
	if out, stderr, code := runCtl(t, "--timeout", "5s", "rebuild", "--no-wait", "--data", fmt.Sprint("127.0.0.1:", c.admin[fid]),
		"--primary", fmt.Sprint("127.0.0.1:", c.data[pid].Port())); code != 0 {
		t.Fatalf("lavikctl rebuild: exit %d\n%s%s", code, out, stderr)
	}
	fc := probeClient(c.data[fid])
	defer fc.Close()
	// Loading: its old data is gone (the count restarts from 0 after the FLUSHALL) and the
	// snapshot is partly in.
	loaded := 0
	harness.Eventually(t, 20*time.Second, "the follower loading the snapshot", func() bool {
		info, err := fc.Info(ctx, "replication").Result()
		f := infoFields(info)
		fmt.Sscan(f["master_sync_loaded_keys"], &loaded)
		return err == nil && f["master_sync_in_progress"] == "1" && loaded > 1000 && loaded < drillKeys/2
	})
	c.data[pid].Kill()
	t.Logf("the primary killed with %d keys of the snapshot loaded on the follower", loaded)

	phase("killed")
	// Long past a failover's time: the follower is not promoted, and says why.
	time.Sleep(4 * metaLease)
	if r := roleOf(fc); r != "slave" {
		t.Fatalf("the follower with incomplete data is %q", r)
	}
	info, _ := fc.Info(ctx, "replication").Result()
	if f := infoFields(info); f["lavik_data_complete"] != "0" || !strings.Contains(f["lavik_data_incomplete_reason"], "full resync") {
		t.Fatalf("the follower's INFO replication says lavik_data_complete:%s (%s)", f["lavik_data_complete"], f["lavik_data_incomplete_reason"])
	}
	harness.Eventually(t, 10*time.Second, "lavikctl status saying why the group has no primary", func() bool {
		out, _, _ := runCtl(t, "--meta", metaAddrs(c.ms), "--timeout", "2s", "status")
		return strings.Contains(out, "NO WRITABLE PRIMARY") && strings.Contains(out, fid+": data incomplete") &&
			strings.Contains(out, "INCOMPLETE")
	})
	if e := c.epoch(); e != epoch {
		t.Fatalf("epoch %d, was %d: meta changed the primary", e, epoch)
	}
	phase("checked")

	// The primary comes back with every key, takes writes again, and the follower completes.
	c.data[pid].Restart()
	phase("restarted")
	pc2 := probeClient(c.data[pid])
	defer pc2.Close()
	back := time.Now()
	harness.Eventually(t, 30*time.Second, "the old primary taking writes again", func() bool {
		return pc2.Set(ctx, "back", "1", 0).Err() == nil
	})
	t.Logf("the old primary took writes %v after it started again", time.Since(back).Round(time.Millisecond))
	if n, err := pc2.DBSize(ctx).Result(); err != nil || n < drillKeys {
		t.Fatalf("the primary holds %d keys (%v), want %d and more", n, err, drillKeys)
	}
	checkDrillKeys(t, pc2, val)
	phase("every key on the primary")
	harness.Eventually(t, 60*time.Second, "the follower's data complete again", func() bool {
		info, err := fc.Info(ctx, "replication").Result()
		return err == nil && infoFields(info)["lavik_data_complete"] == "1"
	})
	t.Logf("the follower complete %v after the primary started again", time.Since(back).Round(time.Millisecond))
	stop.Store(true)
	wg.Wait()
	waitInSync(t, pc2, fc)
	phase("in sync")
	if dp, df := pc2.DBSize(ctx).Val(), fc.DBSize(ctx).Val(); dp != df {
		t.Fatalf("DBSIZE: primary %d, follower %d", dp, df)
	}
	checkDrillKeys(t, fc, val)
	if v := violation.Load(); v != nil {
		t.Fatal(v)
	}
	if probes.Load() == 0 {
		t.Fatal("the watcher never saw a node take a write: it checked nothing")
	}
}

// checkDrillKeys checks that c holds every drill key with its value, by MGETs of 5,000.
func checkDrillKeys(t *testing.T, c *redis.Client, val string) {
	t.Helper()
	ctx := context.Background()
	keys := make([]string, 0, 5000)
	for i := 0; i < drillKeys; i += 5000 {
		keys = keys[:0]
		for j := i; j < i+5000; j++ {
			keys = append(keys, fmt.Sprintf("drill:%d", j))
		}
		vs, err := c.MGet(ctx, keys...).Result()
		if err != nil {
			t.Fatalf("MGET: %v", err)
		}
		for j, v := range vs {
			if v != val {
				t.Fatalf("%s: %v, want the acknowledged value", keys[j], v)
			}
		}
	}
}
