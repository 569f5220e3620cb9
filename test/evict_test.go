package test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

// Eviction under maxmemory, run against Lavik and redis-server alike. The two count memory
// differently (Lavik keeps values on disk), so each test sets maxmemory relative to the
// used_memory the server reports once its keys are written, never to an absolute figure.

const oomErr = "OOM command not allowed when used memory > 'maxmemory'."

// usedMemory is INFO's used_memory after MEMORY PURGE: Lavik counts the Go heap's live bytes
// as of the last collection, which PURGE makes now, so that a maxmemory set from it is not
// inflated by garbage the collector had not yet seen.
func usedMemory(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	if err := c.Do(context.Background(), "MEMORY", "PURGE").Err(); err != nil {
		t.Fatalf("MEMORY PURGE: %v", err)
	}
	return replInt(t, replInfo(t, c, "memory"), "used_memory")
}

func evictedKeys(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	return replInt(t, replInfo(t, c, "stats"), "evicted_keys")
}

func configSet(t *testing.T, c *redis.Client, kv ...string) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		if err := c.ConfigSet(context.Background(), kv[i], kv[i+1]).Err(); err != nil {
			t.Fatalf("CONFIG SET %s %s: %v", kv[i], kv[i+1], err)
		}
	}
}

// fill writes n keys prefix:0.. with short values (and a TTL of ttl(i) seconds when ttl is not
// nil), pipelined.
func fill(t *testing.T, c *redis.Client, prefix string, n int, ttl func(i int) time.Duration) {
	t.Helper()
	ctx := context.Background()
	for start := 0; start < n; start += 1000 {
		p := c.Pipeline()
		for i := start; i < min(n, start+1000); i++ {
			var d time.Duration
			if ttl != nil {
				d = ttl(i)
			}
			p.Set(ctx, prefix+":"+strconv.Itoa(i), "v"+strconv.Itoa(i), d)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("filling %s: %v", prefix, err)
		}
	}
}

// present counts which of prefix:lo..hi-1 exist.
func present(t *testing.T, c *redis.Client, prefix string, lo, hi int) int {
	t.Helper()
	ctx := context.Background()
	keys := make([]string, 0, hi-lo)
	for i := lo; i < hi; i++ {
		keys = append(keys, prefix+":"+strconv.Itoa(i))
	}
	n := 0
	for start := 0; start < len(keys); start += 500 {
		// EXISTS does not touch the keys, so counting leaves LRU/LFU as they were.
		v, err := c.Exists(ctx, keys[start:min(len(keys), start+500)]...).Result()
		if err != nil {
			t.Fatal(err)
		}
		n += int(v)
	}
	return n
}

func TestEvictNoEvictionOOM(t *testing.T) {
	ctx := context.Background()
	c := harness.Start(t).Client()
	fill(t, c, "k", 100, nil)
	configSet(t, c, "maxmemory-policy", "noeviction", "maxmemory", "1")
	if err := c.Set(ctx, "new", "x", 0).Err(); err == nil || err.Error() != oomErr {
		t.Fatalf("SET over maxmemory: %v, want %q", err, oomErr)
	}
	if err := c.LPush(ctx, "l", "x").Err(); err == nil || err.Error() != oomErr {
		t.Fatalf("LPUSH over maxmemory: %v, want %q", err, oomErr)
	}
	if v, err := c.Get(ctx, "k:7").Result(); err != nil || v != "v7" {
		t.Fatalf("GET over maxmemory: %q %v", v, err)
	}
	if n, err := c.Del(ctx, "k:7").Result(); err != nil || n != 1 {
		t.Fatalf("DEL over maxmemory: %d %v", n, err)
	}
	// MULTI refuses the queued SET and EXEC aborts.
	p := c.TxPipeline()
	p.Set(ctx, "new", "x", 0)
	if _, err := p.Exec(ctx); err == nil || !strings.Contains(err.Error(), "EXECABORT") {
		t.Fatalf("MULTI SET EXEC over maxmemory: %v", err)
	}
	if n := evictedKeys(t, c); n != 0 {
		t.Fatalf("noeviction evicted %d keys", n)
	}
	configSet(t, c, "maxmemory", "0")
	if err := c.Set(ctx, "new", "x", 0).Err(); err != nil {
		t.Fatalf("SET after maxmemory 0: %v", err)
	}
}

func TestEvictVolatileWithoutTTLIsOOM(t *testing.T) {
	ctx := context.Background()
	c := harness.Start(t).Client()
	fill(t, c, "k", 1000, nil)
	for _, pol := range []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"} {
		configSet(t, c, "maxmemory-policy", pol, "maxmemory", "1")
		if err := c.Set(ctx, "new", "x", 0).Err(); err == nil || err.Error() != oomErr {
			t.Fatalf("%s with no key with a TTL: SET gave %v, want %q", pol, err, oomErr)
		}
		configSet(t, c, "maxmemory", "0")
	}
	if n, _ := c.DBSize(ctx).Result(); n != 1000 {
		t.Fatalf("DBSIZE %d after refused writes, want 1000", n)
	}
}

// TestEvictAllKeysLRUKeepsHotKeys: of keys written two seconds ago, a hot tenth is read again;
// writing more past maxmemory evicts the cold ones and keeps nearly all of the hot.
func TestEvictAllKeysLRUKeepsHotKeys(t *testing.T) {
	ctx := context.Background()
	c := harness.Start(t).Client()
	const n, hot, batch = 30000, 1000, 2000
	configSet(t, c, "maxmemory-policy", "allkeys-lru", "maxmemory-samples", "10")
	fill(t, c, "k", n, nil)
	time.Sleep(2100 * time.Millisecond) // the LRU clock counts seconds
	p := c.Pipeline()
	for i := range hot {
		p.Get(ctx, "k:"+strconv.Itoa(i))
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	configSet(t, c, "maxmemory", strconv.FormatInt(usedMemory(t, c), 10))
	// New keys go in until a fifth of the cold keys are gone: how many that takes depends on
	// how each server counts memory (Lavik's few bytes a key are small beside its heap's
	// swings), so the test writes until the eviction it needs has happened.
	var hotLeft, coldLeft, written int
	for written = 0; written < 100*batch; written += batch {
		fillFrom(t, c, "new", written, written+batch)
		hotLeft, coldLeft = present(t, c, "k", 0, hot), present(t, c, "k", hot, n)
		if coldLeft < (n-hot)*4/5 {
			break
		}
	}
	ev := evictedKeys(t, c)
	t.Logf("wrote %d keys; evicted %d; hot keys left %d of %d, cold %d of %d", written+batch, ev, hotLeft, hot, coldLeft, n-hot)
	if coldLeft >= (n-hot)*4/5 {
		t.Fatalf("writing %d keys past maxmemory evicted only %d cold keys of %d", written, n-hot-coldLeft, n-hot)
	}
	// Random eviction would take the hot keys in the same proportion as the cold ones.
	if hotLeft < hot*95/100 {
		t.Fatalf("only %d of %d hot keys survived while %d of %d cold ones did", hotLeft, hot, coldLeft, n-hot)
	}
}

// fillFrom writes prefix:lo .. prefix:hi-1.
func fillFrom(t *testing.T, c *redis.Client, prefix string, lo, hi int) {
	t.Helper()
	ctx := context.Background()
	p := c.Pipeline()
	for i := lo; i < hi; i++ {
		p.Set(ctx, prefix+":"+strconv.Itoa(i), "value-"+strconv.Itoa(i), 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestEvictVolatileTTLNearestFirst: volatile-ttl evicts keys whose expiry is nearest, and never
// keys without a TTL.
func TestEvictVolatileTTLNearestFirst(t *testing.T) {
	c := harness.Start(t).Client()
	const n = 8000
	configSet(t, c, "maxmemory-policy", "volatile-ttl", "maxmemory-samples", "10")
	fill(t, c, "p", 2000, nil)
	fill(t, c, "v", n, func(i int) time.Duration { return time.Duration(1000+i) * time.Second })
	configSet(t, c, "maxmemory", strconv.FormatInt(usedMemory(t, c), 10))
	fill(t, c, "new", 3000, nil)
	near, far := present(t, c, "v", 0, n/4), present(t, c, "v", 3*n/4, n)
	ev := evictedKeys(t, c)
	t.Logf("evicted %d; nearest quarter left %d, farthest %d of %d", ev, near, far, n/4)
	if ev == 0 {
		t.Fatal("nothing evicted")
	}
	if left := present(t, c, "p", 0, 2000); left != 2000 {
		t.Fatalf("volatile-ttl evicted keys without a TTL: %d of 2000 left", left)
	}
	if near >= far {
		t.Fatalf("keys nearest expiry survived as well as the farthest: %d against %d", near, far)
	}
}

func TestEvictAllKeysRandom(t *testing.T) {
	ctx := context.Background()
	c := harness.Start(t).Client()
	configSet(t, c, "maxmemory-policy", "allkeys-random")
	fill(t, c, "k", 10000, nil)
	configSet(t, c, "maxmemory", strconv.FormatInt(usedMemory(t, c), 10))
	fill(t, c, "new", 5000, nil)
	ev := evictedKeys(t, c)
	size, _ := c.DBSize(ctx).Result()
	t.Logf("evicted %d, dbsize %d", ev, size)
	if ev == 0 || size >= 15000 || size+ev != 15000 {
		t.Fatalf("evicted %d, dbsize %d: want evictions and dbsize + evicted = 15000", ev, size)
	}
	if used, limit := usedMemory(t, c), c.ConfigGet(ctx, "maxmemory").Val()["maxmemory"]; strconv.FormatInt(used, 10) == "" || limit == "" {
		t.Fatal("INFO or CONFIG GET failed")
	}
}

func TestEvictObjectFreq(t *testing.T) {
	ctx := context.Background()
	c := harness.Start(t).Client()
	c.Set(ctx, "k", "v", 0)
	if err := c.ObjectFreq(ctx, "k").Err(); err == nil || !strings.Contains(err.Error(), "An LFU maxmemory policy is not selected") {
		t.Fatalf("OBJECT FREQ under noeviction: %v", err)
	}
	configSet(t, c, "maxmemory-policy", "allkeys-lfu")
	// A key made after the switch: an older key's access bits were an LRU clock, which LFU
	// reads as some counter until it adjusts (Redis says as much in its error text).
	c.Set(ctx, "k2", "v", 0)
	before, err := c.ObjectFreq(ctx, "k2").Result()
	if err != nil {
		t.Fatal(err)
	}
	p := c.Pipeline()
	for range 200 {
		p.Get(ctx, "k2")
	}
	p.Exec(ctx)
	after, _ := c.ObjectFreq(ctx, "k2").Result()
	if after <= before {
		t.Fatalf("OBJECT FREQ %d after 200 reads, %d before", after, before)
	}
	// Introspection does not count as an access.
	for range 50 {
		c.Type(ctx, "k2")
		c.TTL(ctx, "k2")
	}
	if again, _ := c.ObjectFreq(ctx, "k2").Result(); again != after {
		t.Fatalf("OBJECT FREQ moved from %d to %d by TYPE and TTL", after, again)
	}
	if err := c.ObjectIdleTime(ctx, "k2").Err(); err == nil || !strings.Contains(err.Error(), "An LFU maxmemory policy is selected") {
		t.Fatalf("OBJECT IDLETIME under allkeys-lfu: %v", err)
	}
	if err := c.ObjectFreq(ctx, "missing").Err(); err != redis.Nil {
		t.Fatalf("OBJECT FREQ of a missing key: %v", err)
	}
}

func TestEvictObjectIdletime(t *testing.T) {
	ctx := context.Background()
	s := harness.Start(t)
	c := s.Client()
	c.Set(ctx, "k", "v", 0)
	c.Set(ctx, "k2", "v", 0)
	time.Sleep(2100 * time.Millisecond)
	if d, err := c.ObjectIdleTime(ctx, "k").Result(); err != nil || d < 2*time.Second {
		t.Fatalf("OBJECT IDLETIME after 2 s idle: %v %v", d, err)
	}
	c.Type(ctx, "k")
	c.Exists(ctx, "k")
	if d, _ := c.ObjectIdleTime(ctx, "k").Result(); d < 2*time.Second {
		t.Fatalf("TYPE/EXISTS reset the idle time to %v", d)
	}
	c.Get(ctx, "k")
	if d, _ := c.ObjectIdleTime(ctx, "k").Result(); d > time.Second {
		t.Fatalf("OBJECT IDLETIME %v right after GET", d)
	}
	if n, _ := c.Touch(ctx, "k2", "missing").Result(); n != 1 {
		t.Fatalf("TOUCH counted %d keys", n)
	}
	if d, _ := c.ObjectIdleTime(ctx, "k2").Result(); d > time.Second {
		t.Fatalf("OBJECT IDLETIME %v right after TOUCH", d)
	}
	if v, err := c.Do(ctx, "DEBUG", "OBJECT", "k").Text(); err == nil && !strings.Contains(v, "lru_seconds_idle:0") {
		t.Fatalf("DEBUG OBJECT after GET: %q", v)
	}
	if harness.IsRedis() {
		t.Log("CLIENT NO-TOUCH is Redis 7.2's: not in the reference 7.0")
		return
	}
	// With CLIENT NO-TOUCH a GET leaves the idle time; TOUCH still touches.
	nc := s.ClientOpts(&redis.Options{PoolSize: 1})
	if err := nc.Do(ctx, "CLIENT", "NO-TOUCH", "ON").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	nc.Get(ctx, "k")
	if d, _ := c.ObjectIdleTime(ctx, "k").Result(); d < time.Second {
		t.Fatalf("GET under CLIENT NO-TOUCH reset the idle time to %v", d)
	}
	nc.Do(ctx, "CLIENT", "NO-TOUCH", "OFF")
	nc.Get(ctx, "k")
	if d, _ := c.ObjectIdleTime(ctx, "k").Result(); d > 0 {
		t.Fatalf("GET after CLIENT NO-TOUCH OFF left the idle time at %v", d)
	}
}

// TestEvictFollowerSameData: evictions reach the follower as DELs.
func TestEvictFollowerSameData(t *testing.T) {
	_, _, pc, fc := replPair(t)
	configSet(t, pc, "maxmemory-policy", "allkeys-lru")
	// The replication backlog's memory counts too: measure once it has filled.
	fill(t, pc, "k", 40000, nil)
	waitInSync(t, pc, fc)
	configSet(t, pc, "maxmemory", strconv.FormatInt(usedMemory(t, pc), 10))
	fillOrReport(t, pc, "new", 3000)
	if evictedKeys(t, pc) == 0 {
		t.Fatal("nothing evicted")
	}
	configSet(t, pc, "maxmemory", "0")
	waitInSync(t, pc, fc)
	assertSameData(t, pc, fc, 1)
	if fmt.Sprint(evictedKeys(t, fc)) != "0" {
		t.Fatalf("the follower evicted on its own: %d", evictedKeys(t, fc))
	}
}

func fillOrReport(t *testing.T, c *redis.Client, prefix string, n int) {
	t.Helper()
	for i := range n {
		if err := c.Set(context.Background(), prefix+":"+strconv.Itoa(i), "v", 0).Err(); err != nil {
			n, _ := c.DBSize(context.Background()).Result()
			t.Fatalf("SET %d: %v (evicted %d, dbsize %d, used_memory %d)", i, err, evictedKeys(t, c), n, usedMemory(t, c))
		}
	}
}

// TestEvictNotification: with notify-keyspace-events Ee, every eviction is published on
// __keyevent@0__:evicted.
func TestEvictNotification(t *testing.T) {
	ctx := context.Background()
	s := harness.Start(t)
	c := s.Client()
	configSet(t, c, "notify-keyspace-events", "Ee")
	sub := s.Client().Subscribe(ctx, "__keyevent@0__:evicted")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	configSet(t, c, "maxmemory-policy", "allkeys-random")
	fill(t, c, "k", 10000, nil)
	configSet(t, c, "maxmemory", strconv.FormatInt(usedMemory(t, c), 10))
	fill(t, c, "new", 5000, nil)
	ev := evictedKeys(t, c)
	if ev == 0 {
		t.Fatal("nothing evicted")
	}
	got := 0
	for got < int(ev) {
		m, err := sub.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			t.Fatalf("%d evicted events of %d: %v", got, ev, err)
		}
		if msg, ok := m.(*redis.Message); ok && msg.Payload != "" {
			got++
		}
	}
	t.Logf("%d evictions, %d evicted events", ev, got)
}
