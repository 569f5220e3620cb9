package test

// The hot-value cache (value-cache-size): repeated reads of a hot key are served from DRAM
// without SSD reads, and overwrites, deletes and FLUSHALL are seen at once.

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/lavikdb/lavik/test/harness"
)

// cacheCounters are the INFO figures the cache tests follow.
type cacheCounters struct {
	engineReads, hits, misses, bytes int64
}

func readCacheCounters(t *testing.T, k checker) cacheCounters {
	t.Helper()
	return cacheCounters{
		engineReads: infoInt(t, k, "stats", "lavik_engine_reads"),
		hits:        infoInt(t, k, "stats", "lavik_value_cache_hits"),
		misses:      infoInt(t, k, "stats", "lavik_value_cache_misses"),
		bytes:       infoInt(t, k, "memory", "lavik_value_cache_bytes"),
	}
}

func TestValueCache(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("the value cache is Lavik's")
	}
	// appendfsync always: a write is synced before its reply, so its record has left the
	// in-memory tail and the next read of it goes to the disk (and then to the cache).
	s := harness.Start(t, "--value-cache-size", "64mb", "--appendfsync", "always")
	k := newChecker(t, s.Client())
	k.eq([]any{"value-cache-size", "67108864"}, "CONFIG", "GET", "value-cache-size")

	val := func(version int) string {
		return string(bytes.Repeat([]byte(fmt.Sprintf("hot-v%d-", version)), 500))
	}
	k.ok("SET", "hot", val(1))
	for i := 0; i < 20; i++ {
		k.ok("SET", fmt.Sprintf("cold:%d", i), fmt.Sprintf("cold value %d", i))
	}

	// The first GET reads the disk and fills the cache.
	before := readCacheCounters(t, k)
	k.eq(val(1), "GET", "hot")
	first := readCacheCounters(t, k)
	if first.engineReads != before.engineReads+1 || first.misses != before.misses+1 || first.bytes <= before.bytes {
		t.Fatalf("first GET of a synced key: before %+v, after %+v; want one engine read, one miss, bytes cached", before, first)
	}

	// Repeated GETs of the hot key: no engine reads, one hit each.
	const n = 200
	for i := 0; i < n; i++ {
		k.eq(val(1), "GET", "hot")
	}
	hot := readCacheCounters(t, k)
	if hot.engineReads != first.engineReads || hot.hits != first.hits+n || hot.misses != first.misses {
		t.Fatalf("%d GETs of a cached key: before %+v, after %+v; want no engine reads and %d hits", n, first, hot, n)
	}

	// An overwrite is a new record at a new location: the next GET returns the new value (one
	// disk read), then the cache serves it.
	k.ok("SET", "hot", val(2))
	for i := 0; i < n; i++ {
		k.eq(val(2), "GET", "hot")
	}
	over := readCacheCounters(t, k)
	if over.engineReads != hot.engineReads+1 || over.hits != hot.hits+n-1 {
		t.Fatalf("GETs after an overwrite: before %+v, after %+v; want one engine read, then hits", hot, over)
	}

	// MGET mixes cached and uncached keys in one batch.
	want := []any{val(2)}
	args := []any{"MGET", "hot"}
	for i := 0; i < 20; i++ {
		want = append(want, fmt.Sprintf("cold value %d", i))
		args = append(args, fmt.Sprintf("cold:%d", i))
	}
	for i := 0; i < 3; i++ {
		k.eq(want, args...)
	}
	if mget := readCacheCounters(t, k); mget.engineReads != over.engineReads+20 {
		t.Fatalf("3 MGETs of 1 cached and 20 new keys: before %+v, after %+v; want 20 engine reads", over, mget)
	}

	// Deletes, expiry and FLUSHALL need no invalidation: the index no longer points anywhere.
	k.eq(1, "DEL", "hot")
	k.null("GET", "hot")
	k.ok("SET", "hot", val(3))
	k.eq(val(3), "GET", "hot")
	k.eq(val(3), "GET", "hot")
	k.ok("FLUSHALL")
	k.null("GET", "hot")
	k.eq([]any{nil}, "MGET", "cold:1")
	k.ok("SET", "hot", val(4))
	for i := 0; i < 3; i++ {
		k.eq(val(4), "GET", "hot")
	}

	// The cache is memory only: after a restart the values come from disk, correct.
	s.Restart()
	k = newChecker(t, s.Client())
	k.eq(val(4), "GET", "hot")
	k.eq(val(4), "GET", "hot")
	if c := readCacheCounters(t, k); c.engineReads != 1 || c.misses != 1 || c.hits != 1 {
		t.Fatalf("after restart: %+v; want one engine read, one miss, one hit", c)
	}
}

// TestValueCacheOff: by default there is no cache, every read of a synced record is an engine
// read, and INFO reports the cache's figures as zero.
func TestValueCacheOff(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("the value cache is Lavik's")
	}
	s := harness.Start(t, "--appendfsync", "always")
	k := newChecker(t, s.Client())
	k.eq([]any{"value-cache-size", "0"}, "CONFIG", "GET", "value-cache-size")
	k.ok("SET", "hot", "v")
	before := readCacheCounters(t, k)
	for i := 0; i < 10; i++ {
		k.eq("v", "GET", "hot")
	}
	after := readCacheCounters(t, k)
	if after.engineReads != before.engineReads+10 || after.hits != 0 || after.misses != 0 || after.bytes != 0 {
		t.Fatalf("without a cache: before %+v, after %+v; want 10 engine reads and zero cache figures", before, after)
	}
	k.err("ERR CONFIG SET failed (possibly related to argument 'value-cache-size') - can't set immutable config", "CONFIG", "SET", "value-cache-size", "1mb")
}
