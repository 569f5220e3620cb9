package test

// Replication end to end: a primary and its followers as separate processes, driven through the
// documented surface (--replicaof, REPLICAOF/SLAVEOF, INFO replication, ROLE, WAIT, READONLY,
// masterauth, redis-cli --replica). Each test is a scenario an operator would recognise and ends
// by proving the two nodes hold the same data: DEBUG DIGEST of the whole keyspace, which both
// Redis and Lavik compute (each its own way; only nodes of one kind are compared).
//
// LAVIK_TEST_SERVER=redis runs the same tests against redis-server pairs, which shows the tests
// ask for Redis's behaviour; the few whose point is Lavik's persistence skip there.

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

const (
	// replPause is how long TestReplFollowerPausedPartialResync keeps the follower stopped: two
	// minutes, longer than the default repl-timeout (60 s), so both sides give up on the link
	// and the follower must come back through PSYNC.
	replPause = 2 * time.Minute
	// replSyncWait bounds every wait for a link to come up or a follower to catch up.
	replSyncWait = 60 * time.Second
	// replReadOnly is the error a follower gives a write.
	replReadOnly = "READONLY You can't write against a read only replica."
)

// replNode starts a server for a replication test. Against redis-server it also enables DEBUG
// (off by default in Redis 7, and needed for DEBUG DIGEST), drops the 5 s wait a diskless full
// sync makes by default for more followers to join, which only slows the tests down, and turns
// the harness's appendonly off: a Redis follower rewrites its AOF after every full sync and
// refuses SIGTERM meanwhile ("Writing initial AOF, can't exit"), and no test here relies on
// Redis's persistence (those that rely on Lavik's skip under Redis).
func replNode(t *testing.T, args ...string) *harness.Server {
	t.Helper()
	if harness.IsRedis() {
		args = append([]string{"--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0", "--appendonly", "no"}, args...)
	}
	return harness.Start(t, args...)
}

// replFollower starts a follower of primary (--replicaof on the command line) and waits until
// its link is up.
func replFollower(t *testing.T, primary *harness.Server, args ...string) *harness.Server {
	t.Helper()
	f := replNode(t, append(harness.ReplicaOfArgs(primary), args...)...)
	waitLinkUp(t, f.Client(), replSyncWait)
	return f
}

// replPair starts a primary and a follower in sync with it.
func replPair(t *testing.T, primaryArgs ...string) (p, f *harness.Server, pc, fc *redis.Client) {
	t.Helper()
	p = replNode(t, primaryArgs...)
	f = replFollower(t, p)
	pc, fc = p.Client(), f.Client()
	waitInSync(t, pc, fc)
	return p, f, pc, fc
}

// replInfo returns the fields of one INFO section.
func replInfo(t testing.TB, c *redis.Client, section string) map[string]string {
	t.Helper()
	s, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	return infoFields(s)
}

// replInt returns an integer field of an INFO map, failing when it is missing or not a number.
func replInt(t testing.TB, m map[string]string, field string) int64 {
	t.Helper()
	v, ok := m[field]
	if !ok {
		t.Fatalf("INFO has no %s field: %v", field, m)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s:%s is not an integer", field, v)
	}
	return n
}

// syncStats returns the primary's sync_full, sync_partial_ok and sync_partial_err.
func syncStats(t testing.TB, pc *redis.Client) (full, partialOK, partialErr int64) {
	t.Helper()
	m := replInfo(t, pc, "stats")
	return replInt(t, m, "sync_full"), replInt(t, m, "sync_partial_ok"), replInt(t, m, "sync_partial_err")
}

// waitLinkUp polls the follower until INFO replication says master_link_status:up.
func waitLinkUp(t testing.TB, fc *redis.Client, d time.Duration) {
	t.Helper()
	var last map[string]string
	deadline := time.Now().Add(d)
	for {
		s, err := fc.Info(context.Background(), "replication").Result()
		if err == nil {
			last = infoFields(s)
			if last["master_link_status"] == "up" && last["master_sync_in_progress"] != "1" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("follower's link not up after %v: %v (last error %v)", d, last, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitInSync polls until the follower's link is up and its replication offset equals the
// primary's master_repl_offset: with writes stopped, everything the primary applied has been
// applied on the follower. (The primary's periodic PING moves its offset; the loop simply reads
// both again.)
func waitInSync(t testing.TB, pc, fc *redis.Client) { waitInSyncFor(t, pc, fc, replSyncWait) }

func waitInSyncFor(t testing.TB, pc, fc *redis.Client, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	var pm, fm map[string]string
	var err error
	deadline := time.Now().Add(d)
	for {
		var ps, fs string
		if ps, err = pc.Info(ctx, "replication").Result(); err == nil {
			if fs, err = fc.Info(ctx, "replication").Result(); err == nil {
				pm, fm = infoFields(ps), infoFields(fs)
				if fm["master_link_status"] == "up" && pm["master_repl_offset"] != "" &&
					fm["slave_repl_offset"] == pm["master_repl_offset"] {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("follower not in sync after %v (last error %v)\nprimary: %v\nfollower: %v", d, err, pm, fm)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// digest returns DEBUG DIGEST: 40 hex digits over every database.
func digest(t testing.TB, c *redis.Client) string {
	t.Helper()
	// A digest reads every value: give it longer than a command's usual read timeout.
	o := *c.Options()
	o.ReadTimeout = 2 * time.Minute
	dc := redis.NewClient(&o)
	defer dc.Close()
	s, err := dc.Do(context.Background(), "DEBUG", "DIGEST").Text()
	if err != nil || len(s) != 40 {
		t.Fatalf("DEBUG DIGEST: %q, %v; want 40 hex digits", s, err)
	}
	return s
}

// assertSameData checks that primary and follower have the same digest, and the same DBSIZE in
// databases 0..dbs-1 (which names the database when digests differ). DBSIZE counts keys that
// expired but that the primary's expiry has not removed yet (as Redis's does), and the primary
// may remove some between the two DBSIZEs, its DELs reaching the follower before the second:
// the sizes are compared again, in step, for a few seconds before they count as different.
func assertSameData(t testing.TB, pc, fc *redis.Client, dbs int) {
	t.Helper()
	var sizes []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		sizes = dbSizeDiffs(t, pc, fc, dbs)
		if len(sizes) == 0 || time.Now().After(deadline) {
			break
		}
		waitInSync(t, pc, fc)
	}
	dp, df := digest(t, pc), digest(t, fc)
	if dp != df || len(sizes) > 0 {
		t.Fatalf("primary and follower differ: digests %s and %s; DBSIZE %v; keys that differ: %v", dp, df, sizes, differingKeys(t, pc, fc, dbs))
	}
}

// dbSizeDiffs names the databases among 0..dbs-1 whose DBSIZE differs between two nodes.
func dbSizeDiffs(t testing.TB, pc, fc *redis.Client, dbs int) []string {
	t.Helper()
	ctx := context.Background()
	var sizes []string
	for db := range dbs {
		var np, nf int64
		for _, side := range []struct {
			c *redis.Client
			n *int64
		}{{pc, &np}, {fc, &nf}} {
			cmds, err := side.c.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Select(ctx, db)
				p.DBSize(ctx)
				p.Select(ctx, 0)
				return nil
			})
			if err != nil {
				t.Fatalf("DBSIZE of db %d: %v", db, err)
			}
			*side.n = cmds[1].(*redis.IntCmd).Val()
		}
		if np != nf {
			sizes = append(sizes, fmt.Sprintf("db%d: primary %d, follower %d", db, np, nf))
		}
	}
	return sizes
}

// differingKeys names up to 10 keys whose DEBUG DIGEST-VALUE differs between two nodes.
func differingKeys(t testing.TB, pc, fc *redis.Client, dbs int) []string {
	ctx := context.Background()
	var out []string
	for db := range dbs {
		keys := map[string]bool{}
		for _, c := range []*redis.Client{pc, fc} {
			conn := c.Conn()
			conn.Select(ctx, db)
			ks, _ := conn.Keys(ctx, "*").Result()
			for _, k := range ks {
				keys[k] = true
			}
			conn.Close()
		}
		for k := range keys {
			var ds [2]string
			for i, c := range []*redis.Client{pc, fc} {
				conn := c.Conn()
				conn.Select(ctx, db)
				d, err := conn.Do(ctx, "DEBUG", "DIGEST-VALUE", k).Slice()
				ds[i] = fmt.Sprint(d, err)
				if ttl, _ := conn.PTTL(ctx, k).Result(); ttl > 0 {
					ds[i] += fmt.Sprintf(" ttl %v", ttl.Round(time.Second))
				}
				ds[i] += " " + keyContent(ctx, conn, k)
				conn.Close()
			}
			if ds[0] != ds[1] && len(out) < 10 {
				out = append(out, fmt.Sprintf("db%d %q (%s vs %s)", db, k, ds[0], ds[1]))
			}
		}
	}
	return out
}

// keyContent renders a key's type and value for a failure message, cut to 400 bytes.
func keyContent(ctx context.Context, conn *redis.Conn, k string) string {
	typ, _ := conn.Type(ctx, k).Result()
	var v any
	var err error
	switch typ {
	case "string":
		v, err = conn.Get(ctx, k).Result()
	case "list":
		v, err = conn.LRange(ctx, k, 0, -1).Result()
	case "set":
		var m []string
		m, err = conn.SMembers(ctx, k).Result()
		slices.Sort(m)
		v = m
	case "zset":
		v, err = conn.ZRangeWithScores(ctx, k, 0, -1).Result()
	case "hash":
		v, err = conn.HGetAll(ctx, k).Result()
	}
	s := fmt.Sprintf("%s %v %v", typ, v, err)
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

// checkNoErr records err from a worker goroutine; redis.Nil is a reply, not an error.
func checkNoErr(t *testing.T, what string, err error) {
	if err != nil && err != redis.Nil {
		t.Errorf("%s: %v", what, err)
	}
}

// TestReplBasic writes every type from concurrent clients on a primary (expiries, blocking pops,
// transactions, several databases, FLUSHDB, large values) and checks the follower ends with the
// same keyspace: digest, per-key digests, DBSIZE of each database and TTLs.
func TestReplBasic(t *testing.T) {
	_, _, pc, fc := replPair(t)
	ctx := harness.Ctx(t)

	// A BLPOP waiting on the primary, served by a later push: the follower sees the push and
	// the pop, so the list is gone on both.
	blk := make(chan []string, 1)
	go func() {
		v, err := pc.BLPop(ctx, 30*time.Second, "blk").Result()
		checkNoErr(t, "BLPOP", err)
		blk <- v
	}()
	harness.Eventually(t, 10*time.Second, "BLPOP blocked on the primary", func() bool {
		return replInfo(t, pc, "clients")["blocked_clients"] == "1"
	})

	const iters = 400
	var shortKeys sync.Map // keys given a 50 ms TTL
	var wg sync.WaitGroup
	worker := func(name string, f func(p string, i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				if err := f(name+":", i); err != nil && err != redis.Nil {
					t.Errorf("%s worker, iteration %d: %v", name, i, err)
					return
				}
			}
		}()
	}
	val := func(i int) string { return fmt.Sprintf("value-%d-%s", i, strings.Repeat("v", i%40)) }
	worker("str", func(p string, i int) error {
		_, err := pc.Pipelined(ctx, func(q redis.Pipeliner) error {
			q.Set(ctx, fmt.Sprint(p, "s", i%50), val(i), 0)
			q.Incr(ctx, p+"cnt")
			q.Append(ctx, p+"app", "x")
			q.SetRange(ctx, p+"rng", int64(i%100), "ab")
			q.Set(ctx, fmt.Sprint(p, "ex", i%20), val(i), time.Hour)
			q.Do(ctx, "SET", fmt.Sprint(p, "px", i%20), val(i), "PX", 3_600_000+i)
			q.IncrByFloat(ctx, p+"flt", 0.1)
			if i%7 == 0 {
				q.Expire(ctx, fmt.Sprint(p, "s", i%50), 2*time.Hour)
			}
			if i%11 == 0 {
				q.Persist(ctx, fmt.Sprint(p, "s", (i+43)%50))
			}
			if i%13 == 0 {
				q.GetDel(ctx, fmt.Sprint(p, "s", (i+10)%50))
			}
			return nil
		})
		return err
	})
	worker("hash", func(p string, i int) error {
		_, err := pc.Pipelined(ctx, func(q redis.Pipeliner) error {
			h := fmt.Sprint(p, "h", i%10)
			q.HSet(ctx, h, fmt.Sprint("f", i%30), val(i))
			q.HDel(ctx, h, fmt.Sprint("f", (i+7)%30))
			q.HIncrBy(ctx, p+"hc", fmt.Sprint("n", i%5), 3)
			q.HIncrByFloat(ctx, p+"hc", "fl", 1.5)
			return nil
		})
		return err
	})
	worker("list", func(p string, i int) error {
		_, err := pc.Pipelined(ctx, func(q redis.Pipeliner) error {
			q.LPush(ctx, p+"l", val(i))
			q.RPush(ctx, p+"l", "pivot", i)
			if i%3 == 0 {
				q.LPop(ctx, p+"l")
			}
			if i%4 == 0 {
				q.RPop(ctx, p+"l")
			}
			q.LMove(ctx, p+"l", p+"l2", "LEFT", "RIGHT")
			if i%10 == 0 {
				q.LTrim(ctx, p+"l2", 0, 99)
			}
			q.LInsertBefore(ctx, p+"l", "pivot", fmt.Sprint("ins", i))
			if i == iters/2 {
				q.RPush(ctx, "blk", "served")
			}
			return nil
		})
		return err
	})
	worker("set", func(p string, i int) error {
		_, err := pc.Pipelined(ctx, func(q redis.Pipeliner) error {
			s := fmt.Sprint(p, "set", i%5)
			q.SAdd(ctx, s, fmt.Sprint("m", i%40), fmt.Sprint("m", (i*7)%40))
			q.SRem(ctx, s, fmt.Sprint("m", (i+13)%40))
			if i%9 == 0 {
				q.SPop(ctx, s)
			}
			q.SMove(ctx, p+"set0", p+"set1", fmt.Sprint("m", i%40))
			if i%10 == 0 {
				q.SInterStore(ctx, p+"inter", p+"set1", p+"set2")
			}
			return nil
		})
		return err
	})
	worker("zset", func(p string, i int) error {
		_, err := pc.Pipelined(ctx, func(q redis.Pipeliner) error {
			q.ZAdd(ctx, p+"z", redis.Z{Score: float64(i % 100), Member: fmt.Sprint("m", i%60)})
			q.ZIncrBy(ctx, p+"z", 1.5, fmt.Sprint("m", (i*3)%60))
			q.ZRem(ctx, p+"z", fmt.Sprint("m", (i+17)%60))
			if i%10 == 0 {
				q.ZPopMin(ctx, p+"z")
				q.ZRangeStore(ctx, p+"zdst", redis.ZRangeArgs{Key: p + "z", Start: 0, Stop: 9})
			}
			return nil
		})
		return err
	})
	worker("stream", func(p string, i int) error {
		x := p + "x"
		if i == 0 {
			if err := pc.XGroupCreateMkStream(ctx, x, "grp", "0").Err(); err != nil {
				return err
			}
		}
		if err := pc.XAdd(ctx, &redis.XAddArgs{Stream: x, MaxLen: 100, Values: []any{"f", val(i)}}).Err(); err != nil {
			return err
		}
		if err := pc.XAdd(ctx, &redis.XAddArgs{Stream: p + "xe", ID: fmt.Sprintf("%d-1", i+1), Values: []any{"n", i}}).Err(); err != nil {
			return err
		}
		if i%5 != 4 {
			return nil
		}
		got, err := pc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "grp", Consumer: "c1", Streams: []string{x, ">"}, Count: 3, Block: -1}).Result()
		if err != nil {
			return err
		}
		msgs := got[0].Messages
		if len(msgs) < 3 {
			return fmt.Errorf("XREADGROUP read %d entries, want 3", len(msgs))
		}
		_, err = pc.Pipelined(ctx, func(q redis.Pipeliner) error {
			q.XAck(ctx, x, "grp", msgs[0].ID)
			q.XClaim(ctx, &redis.XClaimArgs{Stream: x, Group: "grp", Consumer: "c2", Messages: []string{msgs[1].ID}})
			q.XDel(ctx, x, msgs[2].ID)
			return nil
		})
		return err
	})
	// Keys and databases on one connection, since SELECT is per connection.
	keysConn := pc.Conn()
	defer keysConn.Close()
	worker("keys", func(p string, i int) error {
		short := fmt.Sprint(p, "short", i)
		shortKeys.Store(short, true)
		_, err := keysConn.Pipelined(ctx, func(q redis.Pipeliner) error {
			q.Set(ctx, p+"ra", val(i), 0)
			q.Rename(ctx, p+"ra", fmt.Sprint(p, "rb", i%20))
			q.Copy(ctx, fmt.Sprint(p, "rb", i%20), fmt.Sprint(p, "rc", i%10), 0, true)
			q.Del(ctx, fmt.Sprint(p, "rc", (i+5)%10))
			q.Set(ctx, fmt.Sprint(p, "mv", i), val(i), 0)
			q.Move(ctx, fmt.Sprint(p, "mv", i), 2)
			q.Set(ctx, fmt.Sprint(p, "ea", i%30), val(i), 0)
			q.ExpireAt(ctx, fmt.Sprint(p, "ea", i%30), time.Now().Add(time.Hour))
			q.Set(ctx, short, "gone soon", 0)
			q.PExpire(ctx, short, 50*time.Millisecond)
			q.Select(ctx, 3)
			q.Set(ctx, fmt.Sprint("db3:", i%100), val(i), 0)
			q.HSet(ctx, "db3:h", fmt.Sprint("f", i%7), i)
			q.Select(ctx, 4)
			q.Set(ctx, fmt.Sprint("db4:", i), val(i), 0)
			if i%100 == 50 {
				q.FlushDB(ctx) // database 4 only: 3 keeps its keys
			}
			q.Select(ctx, 0)
			return nil
		})
		return err
	})
	worker("multi", func(p string, i int) error {
		_, err := pc.TxPipelined(ctx, func(q redis.Pipeliner) error {
			q.Incr(ctx, p+"a")
			q.LPush(ctx, p+"l", i)
			q.HSet(ctx, p+"h", fmt.Sprint("f", i%9), i)
			q.Set(ctx, p+"s", val(i), time.Hour)
			q.ZAdd(ctx, p+"z", redis.Z{Score: float64(i), Member: fmt.Sprint(i % 13)})
			return nil
		})
		return err
	})
	// Large values: a 1 MiB string and a hash of 5,000 fields.
	wg.Add(1)
	go func() {
		defer wg.Done()
		big := strings.Repeat("0123456789abcdef", 1<<16)
		checkNoErr(t, "SET big", pc.Set(ctx, "big", big, 0).Err())
		checkNoErr(t, "SETRANGE big", pc.SetRange(ctx, "big", 500_000, "patched").Err())
		for b := range 10 {
			var fv []any
			for j := range 500 {
				fv = append(fv, fmt.Sprint("field", b*500+j), fmt.Sprint("v", j))
			}
			checkNoErr(t, "HSET bighash", pc.HSet(ctx, "bighash", fv...).Err())
		}
	}()
	wg.Wait()
	select {
	case v := <-blk:
		if !slices.Equal(v, []string{"blk", "served"}) {
			t.Fatalf("BLPOP got %q, want [blk served]", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("BLPOP not served by the push")
	}
	if t.Failed() {
		return
	}

	// The 50 ms keys expire on the primary (a read makes sure), which replicates their deletion.
	var shorts []string
	shortKeys.Range(func(k, _ any) bool { shorts = append(shorts, k.(string)); return true })
	harness.Eventually(t, 10*time.Second, "short-TTL keys expired on the primary", func() bool {
		n, err := pc.Exists(ctx, shorts...).Result()
		return err == nil && n == 0
	})

	waitInSync(t, pc, fc)
	assertSameData(t, pc, fc, 6)
	// The databases other than 0 were written: MOVE to 2, SELECT 3, and 4 flushed then refilled.
	for _, db := range []int{2, 3, 4} {
		cmds, err := fc.Pipelined(ctx, func(q redis.Pipeliner) error {
			q.Select(ctx, db)
			q.DBSize(ctx)
			q.Select(ctx, 0)
			return nil
		})
		if err != nil || cmds[1].(*redis.IntCmd).Val() == 0 {
			t.Fatalf("database %d on the follower is empty (%v)", db, err)
		}
	}
	if n := pc.Exists(ctx, "big", "bighash", "str:cnt", "keys:short0").Val(); n != 3 {
		t.Fatalf("EXISTS big bighash str:cnt keys:short0 = %d on the primary, want 3", n)
	}

	keys := []any{"big", "bighash", "str:cnt", "str:app", "str:rng", "str:flt", "hash:hc", "list:l",
		"list:l2", "set:set1", "set:inter", "zset:z", "zset:zdst", "stream:x", "stream:xe", "keys:rb3",
		"multi:z", "blk", "keys:short1"}
	dvp, err1 := pc.Do(ctx, append([]any{"DEBUG", "DIGEST-VALUE"}, keys...)...).Slice()
	dvf, err2 := fc.Do(ctx, append([]any{"DEBUG", "DIGEST-VALUE"}, keys...)...).Slice()
	if err1 != nil || err2 != nil || !slices.Equal(dvp, dvf) || len(dvp) != len(keys) {
		t.Fatalf("DEBUG DIGEST-VALUE %v: primary %v (%v), follower %v (%v)", keys, dvp, err1, dvf, err2)
	}
	// The follower reads what the primary reads.
	for _, k := range []string{"str:cnt", "str:flt", "big"} {
		vp, vf := pc.Get(ctx, k).Val(), fc.Get(ctx, k).Val()
		if vp != vf || vp == "" {
			t.Fatalf("GET %s: primary %s, follower %s", k, short(vp), short(vf))
		}
	}
	if n := fc.HLen(ctx, "bighash").Val(); n != 5000 {
		t.Fatalf("HLEN bighash on the follower = %d, want 5000", n)
	}

	// TTLs: the follower has the primary's deadlines (replicated as absolute times).
	var withTTL []string
	for i := range 20 {
		withTTL = append(withTTL, fmt.Sprint("str:ex", i), fmt.Sprint("str:px", i))
	}
	for i := range 30 {
		withTTL = append(withTTL, fmt.Sprint("keys:ea", i))
	}
	withTTL = append(withTTL, "multi:s")
	for _, k := range withTTL {
		tp, err1 := pc.PTTL(ctx, k).Result()
		tf, err2 := fc.PTTL(ctx, k).Result()
		if err1 != nil || err2 != nil || tp < 50*time.Minute || (tp-tf).Abs() > time.Second {
			t.Fatalf("PTTL %s: primary %v (%v), follower %v (%v); want over 50m and within 1s of each other", k, tp, err1, tf, err2)
		}
	}
}

// replWriter writes on the primary from one goroutine until stopped: SETs over a rolling key
// space, INCRs and list pushes, ratePerSec writes a second (0: as fast as it can). It counts
// the writes and fails t on any error.
type replWriter struct {
	n    atomic.Int64
	stop chan struct{}
	done chan struct{}
}

func startReplWriter(t *testing.T, pc *redis.Client, prefix string, ratePerSec int) *replWriter {
	w := &replWriter{stop: make(chan struct{}), done: make(chan struct{})}
	const batch = 20
	go func() {
		defer close(w.done)
		ctx := context.Background()
		var tick <-chan time.Time
		if ratePerSec > 0 {
			tk := time.NewTicker(time.Second * batch / time.Duration(ratePerSec))
			defer tk.Stop()
			tick = tk.C
		}
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			if tick != nil {
				select {
				case <-w.stop:
					return
				case <-tick:
				}
			}
			_, err := pc.Pipelined(ctx, func(q redis.Pipeliner) error {
				for j := range batch {
					n := i*batch + j
					switch n % 4 {
					case 0, 1:
						q.Set(ctx, fmt.Sprint(prefix, "k", n%20000), fmt.Sprint("v", n), 0)
					case 2:
						q.Incr(ctx, fmt.Sprint(prefix, "c", n%100))
					case 3:
						q.RPush(ctx, fmt.Sprint(prefix, "l", n%50), n)
						q.LTrim(ctx, fmt.Sprint(prefix, "l", n%50), -100, -1)
					}
				}
				return nil
			})
			if err != nil {
				t.Errorf("writer: %v", err)
				return
			}
			w.n.Add(batch)
		}
	}()
	t.Cleanup(w.halt)
	return w
}

// halt stops the writer and waits for its last batch.
func (w *replWriter) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// waitWrites waits until the writer has made n more writes than it had at the call.
func (w *replWriter) waitWrites(t *testing.T, n int64) {
	t.Helper()
	target := w.n.Load() + n
	harness.Eventually(t, 30*time.Second, fmt.Sprintf("%d more writes", n), func() bool { return w.n.Load() >= target })
}

// TestReplFollowerKill9PartialResync kills the follower (kill -9) while the primary takes
// writes and restarts it: it comes back from its own data with a partial resync (PSYNC from its
// persisted offset), so the primary's sync_full stays and sync_partial_ok grows.
func TestReplFollowerKill9PartialResync(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("a redis-server follower restarted after kill -9 has no replication ID or offset to resume from (only an RDB written at shutdown keeps them), so it always resyncs in full")
	}
	_, f, pc, fc := replPair(t, "--repl-backlog-size", "64mb")
	full0, ok0, _ := syncStats(t, pc)
	w := startReplWriter(t, pc, "w:", 0)
	w.waitWrites(t, 20_000)
	f.KillRestart()
	w.waitWrites(t, 20_000)
	waitLinkUp(t, fc, replSyncWait)
	w.halt()
	if t.Failed() {
		return
	}
	waitInSync(t, pc, fc)
	full1, ok1, _ := syncStats(t, pc)
	if full1 != full0 || ok1 <= ok0 {
		t.Fatalf("after the follower's kill -9 and restart: sync_full %d -> %d, sync_partial_ok %d -> %d; want a partial resync only", full0, full1, ok0, ok1)
	}
	assertSameData(t, pc, fc, 1)
}

// TestReplFollowerPausedPartialResync stops the follower (SIGSTOP) for replPause while a steady
// writer runs on the primary, whose backlog holds all of those writes: when the follower runs
// again it resumes with a partial resync and ends with the primary's data.
func TestReplFollowerPausedPartialResync(t *testing.T) {
	_, f, pc, fc := replPair(t, "--repl-backlog-size", "128mb")
	full0, ok0, _ := syncStats(t, pc)
	before := replInt(t, replInfo(t, fc, "replication"), "slave_repl_offset")
	f.Pause()
	w := startReplWriter(t, pc, "w:", 3000)
	start := time.Now()
	// The outage lasts replPause (a scenario length, not a wait for a condition); a writer that
	// fails ends it early.
	select {
	case <-time.After(replPause):
	case <-w.done:
	}
	w.halt()
	if t.Failed() {
		return
	}
	pm := replInfo(t, pc, "replication")
	if first := replInt(t, pm, "repl_backlog_first_byte_offset"); first > before+1 {
		t.Fatalf("the backlog starts at %d, past the follower's offset %d: raise --repl-backlog-size", first, before)
	}
	t.Logf("follower stopped %v while the primary took %d writes (%d bytes of stream)",
		time.Since(start).Round(time.Second), w.n.Load(), replInt(t, pm, "master_repl_offset")-before)
	f.Resume()
	harness.Eventually(t, replSyncWait, "the follower to resync", func() bool {
		full, ok, _ := syncStats(t, pc)
		return ok > ok0 || full > full0
	})
	waitInSync(t, pc, fc)
	full1, ok1, _ := syncStats(t, pc)
	if full1 != full0 || ok1 <= ok0 {
		t.Fatalf("after a %v pause: sync_full %d -> %d, sync_partial_ok %d -> %d; want a partial resync only", replPause, full0, full1, ok0, ok1)
	}
	assertSameData(t, pc, fc, 1)
}

// TestReplBacklogExceededFullResync drops a stopped follower's link, writes more than the
// primary's 1 MB backlog holds, and lets the follower run again: its PSYNC asks for an offset the
// backlog no longer has, so the primary answers with a full resync.
func TestReplBacklogExceededFullResync(t *testing.T) {
	// 1 MB: both servers accept it (Redis raises anything under 16 KB to 16 KB).
	_, f, pc, fc := replPair(t, "--repl-backlog-size", "1mb")
	if got := replInfo(t, pc, "replication")["repl_backlog_size"]; got != "1048576" {
		t.Fatalf("repl_backlog_size:%s, want 1048576", got)
	}
	pc.Set(harness.Ctx(t), "before", "1", 0)
	waitInSync(t, pc, fc)
	// writeMore writes 8 MiB, eight times the backlog, in 8 KiB values.
	writeMore := func(round int) {
		t.Helper()
		ctx := harness.Ctx(t)
		v := strings.Repeat("b", 8<<10)
		_, err := pc.Pipelined(ctx, func(q redis.Pipeliner) error {
			for i := range 1024 {
				q.Set(ctx, fmt.Sprint("big:", i%300), fmt.Sprint(round, v), 0)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// checkFull checks that the follower, whose offset was off, came back through a full resync.
	checkFull := func(off, full0, err0 int64) {
		t.Helper()
		if first := replInt(t, replInfo(t, pc, "replication"), "repl_backlog_first_byte_offset"); first <= off+1 {
			t.Fatalf("the backlog still starts at %d, at or before the follower's offset %d", first, off)
		}
		harness.Eventually(t, replSyncWait, "a full resync", func() bool {
			full, _, _ := syncStats(t, pc)
			return full > full0
		})
		waitInSync(t, pc, fc)
		full1, _, err1 := syncStats(t, pc)
		if full1 != full0+1 || err1 != err0+1 {
			t.Fatalf("sync_full %d -> %d, sync_partial_err %d -> %d; want one refused PSYNC and one full resync", full0, full1, err0, err1)
		}
		assertSameData(t, pc, fc, 1)
	}

	t.Run("LinkDropped", func(t *testing.T) {
		full0, _, err0 := syncStats(t, pc)
		off := replInt(t, replInfo(t, fc, "replication"), "slave_repl_offset")
		// A stopped follower keeps its connection until repl-timeout (60 s); dropping it the way
		// a network failure would makes the follower reconnect as soon as it runs again.
		f.Pause()
		if n, err := pc.Do(harness.Ctx(t), "CLIENT", "KILL", "TYPE", "replica").Int(); err != nil || n != 1 {
			t.Fatalf("CLIENT KILL TYPE replica: %d, %v; want 1", n, err)
		}
		writeMore(1)
		f.Resume()
		checkFull(off, full0, err0)
	})
	t.Run("Kill9", func(t *testing.T) {
		if harness.IsRedis() {
			t.Skip("a redis-server follower restarted after kill -9 always resyncs in full, whatever the backlog")
		}
		full0, _, err0 := syncStats(t, pc)
		off := replInt(t, replInfo(t, fc, "replication"), "slave_repl_offset")
		f.Kill()
		writeMore(2)
		f.Restart()
		checkFull(off, full0, err0)
	})
}

// TestReplWaitThenPrimaryKill9 has clients write and WAIT for one follower; the primary is
// killed (kill -9) while they go on. Every write whose WAIT returned 1 is on the follower, which
// then takes writes after REPLICAOF NO ONE.
func TestReplWaitThenPrimaryKill9(t *testing.T) {
	p, _, pc, fc := replPair(t)
	ctx := harness.Ctx(t)
	var mu sync.Mutex
	acked := map[string]string{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := pc.Conn() // WAIT covers the writes of its own connection
			defer conn.Close()
			for i := 0; ; i++ {
				batch := map[string]string{}
				cmds, err := conn.Pipelined(ctx, func(q redis.Pipeliner) error {
					for j := range 10 {
						k, v := fmt.Sprintf("wait:%d:%d:%d", g, i, j), fmt.Sprint("v", rand.Uint64())
						batch[k] = v
						q.Set(ctx, k, v, 0)
					}
					q.Do(ctx, "WAIT", 1, 5000)
					return nil
				})
				if err != nil {
					return // the primary is gone
				}
				if n, _ := cmds[len(cmds)-1].(*redis.Cmd).Int(); n != 1 {
					t.Errorf("WAIT 1 5000 returned %d with the follower up", n)
					return
				}
				mu.Lock()
				for k, v := range batch {
					acked[k] = v
				}
				mu.Unlock()
			}
		}()
	}
	harness.Eventually(t, 30*time.Second, "2,000 acknowledged writes", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 2000 || t.Failed()
	})
	p.Kill()
	wg.Wait()
	if t.Failed() {
		return
	}
	want := maps2slices(acked) // writes acknowledged up to the kill
	for i := 0; i < len(want); i += 500 {
		end := min(i+500, len(want))
		keys := make([]string, 0, end-i)
		for _, kv := range want[i:end] {
			keys = append(keys, kv[0])
		}
		got, err := fc.MGet(ctx, keys...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for j, kv := range want[i:end] {
			if got[j] != kv[1] {
				t.Fatalf("%s on the follower after the primary's kill -9: %v; the primary acknowledged %q with WAIT 1 = 1", kv[0], got[j], kv[1])
			}
		}
	}
	t.Logf("%d acknowledged writes, all on the follower", len(want))
	harness.Eventually(t, replSyncWait, "master_link_status:down", func() bool {
		return replInfo(t, fc, "replication")["master_link_status"] == "down"
	})
	if err := fc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatalf("REPLICAOF NO ONE: %v", err)
	}
	if err := fc.Set(ctx, "after", "promoted", 0).Err(); err != nil {
		t.Fatalf("SET on the promoted follower: %v", err)
	}
	if role := replInfo(t, fc, "replication")["role"]; role != "master" {
		t.Fatalf("role:%s after REPLICAOF NO ONE, want master", role)
	}
}

// maps2slices returns m's pairs sorted by key.
func maps2slices(m map[string]string) [][2]string {
	out := make([][2]string, 0, len(m))
	for k, v := range m {
		out = append(out, [2]string{k, v})
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

// TestReplReadOnlyFollower checks that a follower refuses writes with READONLY, through
// go-redis, in a transaction and through redis-cli, and serves reads.
func TestReplReadOnlyFollower(t *testing.T) {
	_, f, pc, fc := replPair(t)
	ctx := harness.Ctx(t)
	pc.Set(ctx, "s", "v", 0)
	pc.HSet(ctx, "h", "a", "1", "b", "2")
	pc.RPush(ctx, "l", "x", "y")
	waitInSync(t, pc, fc)

	k := newChecker(t, fc)
	for _, args := range [][]any{
		{"SET", "a", "b"}, {"SET", "s", "other"}, {"HSET", "h", "c", "3"}, {"DEL", "s"},
		{"LPUSH", "l", "z"}, {"INCR", "n"}, {"EXPIRE", "s", 100}, {"SADD", "set", "m"},
		{"ZADD", "z", 1, "m"}, {"XADD", "x", "*", "f", "v"}, {"RENAME", "s", "t"}, {"FLUSHDB"},
	} {
		k.err(replReadOnly, args...)
	}
	k.eq("v", "GET", "s")
	k.eq([]string{"1", "2"}, "HMGET", "h", "a", "b")
	k.eq([]string{"x", "y"}, "LRANGE", "l", 0, -1)
	k.eq(3, "DBSIZE")
	k.eq(-1, "TTL", "s")
	k.eq(0, "EXISTS", "a")

	// MULTI/SET/EXEC: the SET is refused when queued (Redis 7: READONLY, then EXECABORT) or
	// inside EXEC's reply; either way nothing is written.
	r := dialRESP(t, f)
	r.expect(respStatus("OK"), "MULTI")
	queued := r.do("SET", "a", "b")
	execReply := r.do("EXEC")
	switch {
	case queued == respError(replReadOnly):
		if e, ok := execReply.(respError); !ok || !strings.HasPrefix(string(e), "EXECABORT") {
			t.Fatalf("EXEC after a refused SET: %s, want an EXECABORT error", short(execReply))
		}
	case queued == respStatus("QUEUED"):
		if a, ok := execReply.([]any); !ok || len(a) != 1 || a[0] != respError(replReadOnly) {
			t.Fatalf("EXEC of a queued SET on a follower: %s, want [%q]", short(execReply), replReadOnly)
		}
	default:
		t.Fatalf("SET inside MULTI on a follower: %s", short(queued))
	}
	k.eq(0, "EXISTS", "a")

	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(cctx, "redis-cli", "-h", "127.0.0.1", "-p", strconv.Itoa(f.Port()), "set", "a", "b").CombinedOutput()
	if !strings.Contains(string(out), replReadOnly) {
		t.Fatalf("redis-cli set a b on the follower printed %q, want %q", out, replReadOnly)
	}
	out, err := exec.CommandContext(cctx, "redis-cli", "-h", "127.0.0.1", "-p", strconv.Itoa(f.Port()), "get", "s").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "v" {
		t.Fatalf("redis-cli get s on the follower: %q, %v", out, err)
	}
}

// TestReplPromoteAndAttach promotes a follower with REPLICAOF NO ONE (it keeps its data and takes
// writes), and attaches nodes at run time with REPLICAOF and SLAVEOF: a node that had data of its
// own ends with exactly the primary's.
func TestReplPromoteAndAttach(t *testing.T) {
	p, _, pc, fc := replPair(t)
	ctx := harness.Ctx(t)
	for i := range 500 {
		pc.Set(ctx, fmt.Sprint("p:", i), i, 0)
	}
	pc.HSet(ctx, "p:h", "f", "v")
	waitInSync(t, pc, fc)
	before := digest(t, pc)

	// Promote.
	if err := fc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatalf("REPLICAOF NO ONE: %v", err)
	}
	if d := digest(t, fc); d != before {
		t.Fatalf("digest after promotion %s, want the primary's %s", d, before)
	}
	if role, _ := fc.Do(ctx, "ROLE").Slice(); len(role) == 0 || role[0] != "master" {
		t.Fatalf("ROLE after REPLICAOF NO ONE: %v", role)
	}
	if err := fc.Set(ctx, "f:own", "mine", 0).Err(); err != nil {
		t.Fatalf("SET on the promoted node: %v", err)
	}
	harness.Eventually(t, 10*time.Second, "the primary to drop its follower", func() bool {
		return replInfo(t, pc, "replication")["connected_slaves"] == "0"
	})

	// A node with data of its own, attached at run time, ends with the primary's data only.
	c := replNode(t)
	cc := c.Client()
	for i := range 300 {
		cc.Set(ctx, fmt.Sprint("c:", i), i, 0)
	}
	if _, err := cc.Pipelined(ctx, func(q redis.Pipeliner) error {
		q.Select(ctx, 1)
		q.Set(ctx, "p:1", "other", 0)
		q.Select(ctx, 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	full0, _, _ := syncStats(t, pc)
	if err := cc.Do(ctx, "REPLICAOF", "127.0.0.1", p.Port()).Err(); err != nil {
		t.Fatalf("REPLICAOF 127.0.0.1 %d: %v", p.Port(), err)
	}
	waitLinkUp(t, cc, replSyncWait)
	waitInSync(t, pc, cc)
	assertSameData(t, pc, cc, 2)
	if n := cc.Exists(ctx, "c:0", "c:299").Val(); n != 0 {
		t.Fatalf("the attached node still has %d of its own keys", n)
	}
	if full1, _, _ := syncStats(t, pc); full1 != full0+1 {
		t.Fatalf("sync_full %d -> %d; want one full resync for the attached node", full0, full1)
	}
	if m := replInfo(t, cc, "replication"); m["role"] != "slave" || m["master_link_status"] != "up" || m["master_port"] != strconv.Itoa(p.Port()) {
		t.Fatalf("INFO replication of the attached node: %v", m)
	}

	// The promoted node, which took a write of its own, goes back with SLAVEOF.
	if err := fc.Do(ctx, "SLAVEOF", "127.0.0.1", p.Port()).Err(); err != nil {
		t.Fatalf("SLAVEOF: %v", err)
	}
	pc.Set(ctx, "p:after", "x", 0)
	waitLinkUp(t, fc, replSyncWait)
	waitInSync(t, pc, fc)
	assertSameData(t, pc, fc, 2)
	if n := fc.Exists(ctx, "f:own").Val(); n != 0 {
		t.Fatal("f:own, written on the promoted node, survived its re-attachment")
	}
}

// TestReplMasterAuth runs a primary with requirepass: a follower with the right masterauth
// syncs; one with a wrong masterauth stays down and leaves the primary as it was.
func TestReplMasterAuth(t *testing.T) {
	p := replNode(t, "--requirepass", "s3cret")
	pc := p.ClientOpts(&redis.Options{Password: "s3cret", PoolSize: 1})
	ctx := harness.Ctx(t)
	for i := range 100 {
		pc.Set(ctx, fmt.Sprint("k", i), i, 0)
	}
	good := replFollower(t, p, "--masterauth", "s3cret")
	gc := good.Client()
	waitInSync(t, pc, gc)
	assertSameData(t, pc, gc, 1)

	full0, _, _ := syncStats(t, pc)
	conns0 := replInt(t, replInfo(t, pc, "stats"), "total_connections_received")
	bad := replNode(t, append(harness.ReplicaOfArgs(p), "--masterauth", "wrong")...)
	bc := bad.Client()
	// Two connection attempts from the follower show it has tried and retried.
	harness.Eventually(t, 30*time.Second, "two attempts by the follower with the wrong masterauth", func() bool {
		return replInt(t, replInfo(t, pc, "stats"), "total_connections_received") >= conns0+2
	})
	if m := replInfo(t, bc, "replication"); m["master_link_status"] != "down" || m["role"] != "slave" {
		t.Fatalf("follower with a wrong masterauth: %v; want role:slave, master_link_status:down", m)
	}
	if n := bc.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("follower with a wrong masterauth has %d keys", n)
	}
	pm := replInfo(t, pc, "replication")
	full1, _, _ := syncStats(t, pc)
	if pm["connected_slaves"] != "1" || full1 != full0 {
		t.Fatalf("primary after the refused follower: connected_slaves:%s, sync_full %d -> %d", pm["connected_slaves"], full0, full1)
	}
	pc.Set(ctx, "after", "1", 0)
	waitInSync(t, pc, gc)
	assertSameData(t, pc, gc, 1)
}

// TestReplRedisCliReplica runs `redis-cli --replica` against a primary: it reports the sync and
// then prints the commands the primary replicates.
func TestReplRedisCliReplica(t *testing.T) {
	p := replNode(t)
	pc := p.Client()
	ctx := harness.Ctx(t)
	pc.Set(ctx, "existing", "1", 0)

	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, "redis-cli", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port()), "--replica")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout // redis-cli reports the sync on stderr, the commands on stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen []string
	expect := func(what string, match func(string) bool) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("redis-cli --replica exited before %s; it printed %q", what, seen)
				}
				seen = append(seen, l)
				if match(l) {
					return
				}
			case <-timeout:
				t.Fatalf("redis-cli --replica: no %s after 20s; it printed %q", what, seen)
			}
		}
	}
	// "SYNC with master, discarding N bytes of bulk transfer..." (or "... until EOF marker...").
	expect("sync with master", regexp.MustCompile(`(?i)^sync with master, discarding`).MatchString)
	expect("sync done", regexp.MustCompile(`(?i)^sync done`).MatchString)
	key := fmt.Sprintf("unique-%d", rand.Uint64())
	if err := pc.Set(ctx, key, "hello", 0).Err(); err != nil {
		t.Fatal(err)
	}
	setRE := regexp.MustCompile(`(?i)"set","` + key + `","hello"`)
	expect("the SET of "+key, setRE.MatchString)
	t.Logf("redis-cli --replica printed %q", seen)
}

// replicaEntry parses INFO's "slaveN:ip=...,port=...,state=...,offset=...,lag=..." value.
func replicaEntry(v string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		if k, val, ok := strings.Cut(kv, "="); ok {
			m[k] = val
		}
	}
	return m
}

// TestReplInfoAndRole checks INFO replication and ROLE on both sides once the follower has
// caught up and acknowledged.
func TestReplInfoAndRole(t *testing.T) {
	p, f, pc, fc := replPair(t, "--repl-backlog-size", "2mb")
	ctx := harness.Ctx(t)
	for i := range 200 {
		pc.Set(ctx, fmt.Sprint("k", i), i, 0)
	}
	waitInSync(t, pc, fc)
	// The follower acknowledges its offset every second; wait for the primary to have it.
	var pm, fm map[string]string
	harness.Eventually(t, 10*time.Second, "the primary to see the follower's offset", func() bool {
		pm = replInfo(t, pc, "replication")
		return replicaEntry(pm["slave0"])["offset"] == pm["master_repl_offset"]
	})
	fm = replInfo(t, fc, "replication")
	off := replInt(t, pm, "master_repl_offset")
	hex40 := regexp.MustCompile(`^[0-9a-f]{40}$`)

	if pm["role"] != "master" || pm["connected_slaves"] != "1" || !hex40.MatchString(pm["master_replid"]) {
		t.Fatalf("primary INFO replication: %v", pm)
	}
	s0 := replicaEntry(pm["slave0"])
	if s0["ip"] != "127.0.0.1" || s0["port"] != strconv.Itoa(f.Port()) || s0["state"] != "online" {
		t.Fatalf("primary's slave0:%s; want ip=127.0.0.1,port=%d,state=online", pm["slave0"], f.Port())
	}
	if lag, err := strconv.Atoi(s0["lag"]); err != nil || lag < 0 || lag > 5 {
		t.Fatalf("slave0 lag=%q, want 0..5 seconds", s0["lag"])
	}
	if pm["repl_backlog_active"] != "1" || replInt(t, pm, "repl_backlog_size") != 2<<20 {
		t.Fatalf("primary backlog: active %s, size %s; want 1 and 2097152", pm["repl_backlog_active"], pm["repl_backlog_size"])
	}
	first, hist := replInt(t, pm, "repl_backlog_first_byte_offset"), replInt(t, pm, "repl_backlog_histlen")
	if first < 1 || hist <= 0 || first+hist-1 != off {
		t.Fatalf("backlog first_byte_offset %d + histlen %d - 1 != master_repl_offset %d", first, hist, off)
	}

	if fm["role"] != "slave" || fm["master_host"] != "127.0.0.1" || fm["master_port"] != strconv.Itoa(p.Port()) ||
		fm["master_link_status"] != "up" || fm["master_sync_in_progress"] != "0" || fm["connected_slaves"] != "0" {
		t.Fatalf("follower INFO replication: %v", fm)
	}
	if io := replInt(t, fm, "master_last_io_seconds_ago"); io < 0 || io > 11 {
		t.Fatalf("master_last_io_seconds_ago:%d; want 0..11 (the primary pings every 10 s)", io)
	}
	if fm["master_replid"] != pm["master_replid"] {
		t.Fatalf("follower's master_replid %s, primary's %s", fm["master_replid"], pm["master_replid"])
	}
	// The primary may have pinged since; the follower is never ahead, and catches up.
	if fo := replInt(t, fm, "slave_repl_offset"); fo < off || fo != replInt(t, fm, "master_repl_offset") {
		t.Fatalf("follower slave_repl_offset %d, master_repl_offset %s; primary's offset %d", fo, fm["master_repl_offset"], off)
	}

	// ROLE on the primary: ["master", offset, [[ip, port, offset]]].
	role, err := pc.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) != 3 || role[0] != "master" {
		t.Fatalf("ROLE on the primary: %v, %v", role, err)
	}
	if ro, ok := role[1].(int64); !ok || ro < off {
		t.Fatalf("ROLE offset %v, INFO said %d", role[1], off)
	}
	reps, ok := role[2].([]any)
	if !ok || len(reps) != 1 {
		t.Fatalf("ROLE replicas: %v", role[2])
	}
	rep, ok := reps[0].([]any)
	if !ok || len(rep) != 3 || rep[0] != "127.0.0.1" || rep[1] != strconv.Itoa(f.Port()) {
		t.Fatalf("ROLE replica entry %v; want [127.0.0.1 %d offset]", reps[0], f.Port())
	}
	if ro, err := strconv.ParseInt(fmt.Sprint(rep[2]), 10, 64); err != nil || ro < off {
		t.Fatalf("ROLE replica offset %v; want at least %d", rep[2], off)
	}
	// ROLE on the follower: ["slave", host, port, "connected", offset].
	role, err = fc.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) != 5 || role[0] != "slave" || role[1] != "127.0.0.1" ||
		role[2] != int64(p.Port()) || role[3] != "connected" {
		t.Fatalf("ROLE on the follower: %v, %v", role, err)
	}
	if ro, ok := role[4].(int64); !ok || ro < off {
		t.Fatalf("follower's ROLE offset %v; want at least %d", role[4], off)
	}
}

// TestReplFullSyncUnderLoad attaches a follower to a primary holding 200,000 keys of 1 KiB
// while clients keep reading and writing on the primary: the sync completes, no request fails,
// and the follower ends with the primary's data. The request latencies are logged, not asserted.
func TestReplFullSyncUnderLoad(t *testing.T) {
	const keys, valueSize = 200_000, 1024
	p := replNode(t)
	pc := p.ClientOpts(&redis.Options{PoolSize: 8})
	ctx := harness.Ctx(t)
	value := strings.Repeat("x", valueSize)
	for i := 0; i < keys; i += 1000 {
		if _, err := pc.Pipelined(ctx, func(q redis.Pipeliner) error {
			for j := i; j < i+1000; j++ {
				q.Set(ctx, fmt.Sprint("key:", j), value, 0)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	// load runs GET/SET from 4 clients until stop, recording each request's latency.
	var phase atomic.Int32 // 0 before the follower starts, 1 during its sync, 2 after
	var mu sync.Mutex
	lat := [3][]time.Duration{}
	var failed, done atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			var mine [3][]time.Duration
			defer func() {
				mu.Lock()
				for i := range mine {
					lat[i] = append(lat[i], mine[i]...)
				}
				mu.Unlock()
			}()
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprint("key:", rng.IntN(keys))
				ph := phase.Load()
				start := time.Now()
				var err error
				if rng.IntN(2) == 0 {
					err = pc.Get(ctx, k).Err()
				} else {
					err = pc.Set(ctx, k, value, 0).Err()
				}
				mine[ph] = append(mine[ph], time.Since(start))
				done.Add(1)
				if err != nil {
					failed.Add(1)
					t.Errorf("request during the sync: %v", err)
					return
				}
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	// A baseline of requests before the follower arrives.
	harness.Eventually(t, 30*time.Second, "baseline requests", func() bool { return done.Load() >= 20_000 || t.Failed() })
	phase.Store(1)
	syncStart := time.Now()
	f := replNode(t, harness.ReplicaOfArgs(p)...)
	fc := f.Client()
	waitLinkUp(t, fc, 3*time.Minute)
	syncTook := time.Since(syncStart)
	phase.Store(2)
	n0 := done.Load()
	harness.Eventually(t, 30*time.Second, "requests after the sync", func() bool { return done.Load() >= n0+20_000 || t.Failed() })
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d requests failed during the sync", failed.Load())
	}
	waitInSyncFor(t, pc, fc, 2*time.Minute)
	assertSameData(t, pc, fc, 1)
	if n := fc.DBSize(ctx).Val(); n != keys {
		t.Fatalf("follower DBSIZE %d, want %d", n, keys)
	}
	for i, name := range []string{"before the follower", "during the full sync", "after the sync"} {
		d := lat[i]
		if len(d) == 0 {
			t.Logf("%s: no requests", name)
			continue
		}
		slices.Sort(d)
		q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
		t.Logf("latency %s: %d requests, p50 %v, p99 %v, p99.9 %v, max %v", name, len(d), q(0.5), q(0.99), q(0.999), d[len(d)-1])
	}
	t.Logf("full sync of %d keys x %d B took %v (follower start to master_link_status:up)", keys, valueSize, syncTook.Round(time.Millisecond))
}

// TestReplWaitBlocksOnlyItsClient: a WAIT that cannot be satisfied (2 followers asked, 1
// exists) holds up its own client until its timeout, and nobody else: other clients' commands
// are answered while it waits, and it then replies how many followers acknowledged.
func TestReplWaitBlocksOnlyItsClient(t *testing.T) {
	_, _, pc, _ := replPair(t)
	ctx := context.Background()
	checkNoErr(t, "SET", pc.Set(ctx, "w", "1", 0).Err())
	done := make(chan int64, 1)
	go func() {
		conn := pc.Conn()
		defer conn.Close()
		conn.Set(ctx, "mine", "x", 0)
		n, _ := conn.Do(ctx, "WAIT", 2, 3000).Int64()
		done <- n
	}()
	// The WAIT is in progress: another client sees it in CLIENT LIST.
	harness.Eventually(t, 2*time.Second, "the WAIT running", func() bool {
		l, err := pc.ClientList(ctx).Result()
		return err == nil && strings.Contains(l, "cmd=wait")
	})
	// Connections are spread over the server's event loops: with several open at once, some
	// share the WAITing client's loop, which a WAIT run on the loop would hold up for its
	// timeout.
	var others []*redis.Conn
	for range 16 {
		o := pc.Conn()
		defer o.Close()
		if err := o.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		others = append(others, o)
	}
	for i, o := range others {
		if err := o.Set(ctx, fmt.Sprint("other", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-done:
			t.Fatalf("WAIT 2 returned %d while other clients were still being served (after %d of them)", n, i)
		default:
		}
	}
	if n := <-done; n != 1 {
		t.Fatalf("WAIT 2 3000 with one follower = %d, want 1", n)
	}
}

// TestReplSwitchover: the follower is promoted and the old primary follows it. With no write in
// between, the old primary continues with a partial resync (the promoted node keeps the old
// history as replid2, up to where it got it). When the old primary took a write the new one
// never saw, its history diverged: it is detected by offset and the old primary is rebuilt with
// a full resync, losing that write, and both end with the same data.
func TestReplSwitchover(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("Lavik's switchover; Redis's PSYNC2 is alike but its test would differ in details")
	}
	for _, diverge := range []bool{false, true} {
		t.Run(fmt.Sprintf("diverged=%v", diverge), func(t *testing.T) {
			a, b, ac, bc := replPair(t)
			ctx := context.Background()
			for i := range 200 {
				checkNoErr(t, "SET", ac.Set(ctx, fmt.Sprint("k", i), i, 0).Err())
			}
			checkNoErr(t, "HSET", ac.HSet(ctx, "h", "f", "v").Err())
			waitInSync(t, ac, bc)
			if err := bc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
				t.Fatal(err)
			}
			if diverge {
				checkNoErr(t, "SET on the old primary", ac.Set(ctx, "lost", "x", 0).Err())
			}
			// Writes the new primary takes before the old one follows it: a partial resync
			// from where the old primary stopped must bring them.
			for i := range 100 {
				checkNoErr(t, "SET on the new primary", bc.Set(ctx, fmt.Sprint("between", i), i, 0).Err())
			}
			if err := ac.Do(ctx, "REPLICAOF", "127.0.0.1", b.Port()).Err(); err != nil {
				t.Fatal(err)
			}
			waitLinkUp(t, ac, 20*time.Second)
			checkNoErr(t, "SET on the new primary", bc.Set(ctx, "after", "1", 0).Err())
			waitInSync(t, bc, ac)
			assertSameData(t, bc, ac, 1)
			full, partial, _ := syncStats(t, bc)
			if diverge && (full != 1 || partial != 0) {
				t.Fatalf("diverged old primary: sync_full %d, sync_partial_ok %d; want a full resync", full, partial)
			}
			if !diverge && (full != 0 || partial != 1) {
				t.Fatalf("old primary in step: sync_full %d, sync_partial_ok %d; want a partial resync", full, partial)
			}
			if n, _ := ac.Exists(ctx, "lost").Result(); n != 0 {
				t.Fatal("the write the new primary never saw survived on the old primary")
			}
			if v, _ := ac.Get(ctx, "after").Result(); v != "1" {
				t.Fatalf("old primary has after=%q, want 1", v)
			}
			info := replInfo(t, bc, "replication")
			if info["master_replid2"] == strings.Repeat("0", 40) || replInt(t, info, "second_repl_offset") <= 0 {
				t.Fatalf("promoted node: master_replid2 %s second_repl_offset %s", info["master_replid2"], info["second_repl_offset"])
			}
			_ = a
		})
	}
}

// TestReplResyncCommand: LAVIK.RESYNC rebuilds a follower: it copies everything again (a full
// resync the primary counts), then follows the stream, and ends with the primary's data. On a
// primary it is refused.
func TestReplResyncCommand(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("LAVIK.RESYNC is Lavik's")
	}
	_, _, pc, fc := replPair(t)
	ctx := context.Background()
	for i := range 2000 {
		checkNoErr(t, "SET", pc.Set(ctx, fmt.Sprint("k", i), strings.Repeat("v", i%300), 0).Err())
	}
	waitInSync(t, pc, fc)
	full0, _, _ := syncStats(t, pc)
	if err := fc.Do(ctx, "LAVIK.RESYNC").Err(); err != nil {
		t.Fatalf("LAVIK.RESYNC on the follower: %v", err)
	}
	harness.Eventually(t, 20*time.Second, "the rebuild's full resync", func() bool {
		full, _, _ := syncStats(t, pc)
		return full == full0+1
	})
	waitLinkUp(t, fc, 20*time.Second)
	checkNoErr(t, "SET after", pc.Set(ctx, "after", "1", 0).Err())
	waitInSync(t, pc, fc)
	assertSameData(t, pc, fc, 1)
	if err := pc.Do(ctx, "LAVIK.RESYNC").Err(); err == nil || !strings.Contains(err.Error(), "follows no primary") {
		t.Fatalf("LAVIK.RESYNC on a primary: %v, want an error", err)
	}
}

// TestReplFullResyncEveryType: a follower attached to a primary that already holds every type
// (strings small and chunked, hashes, sets, sorted sets and lists small and grouped, streams
// with consumer groups and pending entries, expiries, two databases) gets all of it by the
// snapshot, stored grouped or not as its own group-threshold says, with the same digests; then
// the stream goes on from the snapshot's offset.
func TestReplFullResyncEveryType(t *testing.T) {
	var args []string
	if !harness.IsRedis() {
		args = []string{"--group-threshold", "256"} // the follower keeps the default
	}
	p := replNode(t, args...)
	pc := p.Client()
	applyDigestData(t, pc, digestData(11), func() []int {
		keys := digestData(11)
		perm := make([]int, len(keys))
		for i := range perm {
			perm[i] = i
		}
		return perm
	}())
	f := replFollower(t, p)
	fc := f.Client()
	waitInSync(t, pc, fc)
	assertSameData(t, pc, fc, 2)
	ctx := context.Background()
	checkNoErr(t, "HSET after", pc.HSet(ctx, "h3", "after", "1").Err())
	checkNoErr(t, "XADD after", pc.XAdd(ctx, &redis.XAddArgs{Stream: "x2", Values: []any{"f", "v"}}).Err())
	waitInSync(t, pc, fc)
	assertSameData(t, pc, fc, 2)
	if full, _, _ := syncStats(t, pc); full != 1 {
		t.Fatalf("sync_full %d, want 1", full)
	}
}

// TestReplServedBlockedPopSkipsOtherType parks blocking pops on two keys, makes the first a
// string and then pushes to the second: the parked client is served from the second (a key of
// another type does not serve it, as in Redis), and the follower must pop the same. Running
// the blocking command itself there would answer WRONGTYPE for the first key and pop nothing;
// the effect is the pop it did.
func TestReplServedBlockedPopSkipsOtherType(t *testing.T) {
	_, _, pc, fc := replPair(t)
	ctx := harness.Ctx(t)
	cases := []struct {
		name  string
		block func(c *redis.Client, str, key string) error
		push  func(key string) error
		left  func(c *redis.Client, key string) (int64, error)
	}{
		{"BRPOP", func(c *redis.Client, str, key string) error {
			return c.BRPop(ctx, 10*time.Second, str, key).Err()
		}, func(key string) error { return pc.RPush(ctx, key, "a", "b", "c").Err() },
			func(c *redis.Client, key string) (int64, error) { return c.LLen(ctx, key).Result() }},
		{"BLMPOP", func(c *redis.Client, str, key string) error {
			return c.BLMPop(ctx, 10*time.Second, "LEFT", 2, str, key).Err()
		}, func(key string) error { return pc.RPush(ctx, key, "a", "b", "c").Err() },
			func(c *redis.Client, key string) (int64, error) { return c.LLen(ctx, key).Result() }},
		{"BZPOPMIN", func(c *redis.Client, str, key string) error {
			return c.BZPopMin(ctx, 10*time.Second, str, key).Err()
		}, func(key string) error {
			return pc.ZAdd(ctx, key, redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Err()
		}, func(c *redis.Client, key string) (int64, error) { return c.ZCard(ctx, key).Result() }},
		{"BZMPOP", func(c *redis.Client, str, key string) error {
			return c.BZMPop(ctx, 10*time.Second, "MIN", 2, str, key).Err()
		}, func(key string) error {
			return pc.ZAdd(ctx, key, redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Err()
		}, func(c *redis.Client, key string) (int64, error) { return c.ZCard(ctx, key).Result() }},
	}
	for _, tc := range cases {
		str, key := "str:"+tc.name, "key:"+tc.name
		blocker := redis.NewClient(&redis.Options{Addr: pc.Options().Addr})
		done := make(chan error, 1)
		go func() { done <- tc.block(blocker, str, key) }()
		harness.Eventually(t, 10*time.Second, tc.name+" parked", func() bool {
			return replInfo(t, pc, "clients")["blocked_clients"] == "1"
		})
		if err := pc.Set(ctx, str, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := tc.push(key); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s: %v; want it served from %s", tc.name, err, key)
		}
		blocker.Close()
		waitInSync(t, pc, fc)
		np, perr := tc.left(pc, key)
		nf, ferr := tc.left(fc, key)
		if perr != nil || ferr != nil || np != nf {
			t.Errorf("%s: %s holds %d elements on the primary (%v), %d on the follower (%v)", tc.name, key, np, perr, nf, ferr)
		}
	}
	assertSameData(t, pc, fc, 1)
}

// TestReplFollowerRestartKeepsExpiredKeys kills the follower, changes keys with a TTL on the
// primary before they expire (PERSIST, a push), and starts the follower again once the TTLs
// have passed by the clock: the follower must not drop those keys as expired while it loads,
// since the stream it resumes (a partial resync) makes them persistent.
func TestReplFollowerRestartKeepsExpiredKeys(t *testing.T) {
	_, f, pc, fc := replPair(t, "--repl-backlog-size", "64mb")
	ctx := harness.Ctx(t)
	set := time.Now()
	pc.RPush(ctx, "list", "a")
	pc.PExpire(ctx, "list", 1500*time.Millisecond)
	pc.Set(ctx, "str", "v", 1500*time.Millisecond)
	waitInSync(t, pc, fc)
	f.Kill()
	if err := pc.Persist(ctx, "list").Err(); err != nil {
		t.Fatal(err)
	}
	pc.RPush(ctx, "list", "b")
	pc.Persist(ctx, "str")
	if time.Since(set) > time.Second {
		t.Skipf("the writes took %v: too slow to be before the TTLs ended", time.Since(set))
	}
	time.Sleep(time.Until(set.Add(2 * time.Second)))
	f.Restart()
	waitLinkUp(t, fc, replSyncWait)
	waitInSync(t, pc, fc)
	if got := fc.LRange(ctx, "list", 0, -1).Val(); strings.Join(got, ",") != "a,b" {
		t.Errorf("follower's list = %q; want [a b] as the primary's", got)
	}
	if got := fc.Get(ctx, "str").Val(); got != "v" {
		t.Errorf("follower's str = %q; want %q", got, "v")
	}
	assertSameData(t, pc, fc, 1)
}
