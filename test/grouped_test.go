package test

// End-to-end tests of grouped collections: a hash or set whose encoding is longer than the
// group-threshold setting is stored as a directory record and groups of a few KiB, so that a
// command naming a few fields or members reads and writes a constant number of records however
// large the collection is (checked through INFO's lavik_engine_reads and lavik_log_appends), and
// whose contents survive clean restarts, kill -9, shrinking below the threshold and growing
// again, expiry, RENAME, COPY, DEL and transactions.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

// groupedCost is what the server did between two INFO snapshots: reads through the I/O engine,
// the bytes they read, and records appended to the value log.
type groupedCost struct {
	reads, readBytes, appends int64
}

func (c groupedCost) String() string {
	return fmt.Sprintf("%d reads (%d bytes), %d appends", c.reads, c.readBytes, c.appends)
}

// groupedCounters reads the three counters from one INFO all.
func groupedCounters(t testing.TB, k checker) groupedCost {
	t.Helper()
	f := infoFields(k.str("INFO", "all"))
	var out groupedCost
	for name, p := range map[string]*int64{
		"lavik_engine_reads":      &out.reads,
		"lavik_engine_read_bytes": &out.readBytes,
		"lavik_log_appends":       &out.appends,
	} {
		n, err := strconv.ParseInt(f[name], 10, 64)
		if err != nil {
			t.Fatalf("INFO all %s = %q; want an integer", name, f[name])
		}
		*p = n
	}
	return out
}

// groupedStep runs one command between two INFO snapshots, checks its reply against want (nil:
// a null reply; ints as int64, []string as []any, as checker.eq), checks that it read at most
// maxReads records and appended at most maxAppends, logs the numbers and returns the cost.
func groupedStep(t *testing.T, k checker, want any, maxReads, maxAppends int64, args ...any) groupedCost {
	t.Helper()
	before := groupedCounters(t, k)
	got, err := k.do(args...)
	after := groupedCounters(t, k)
	cost := groupedCost{after.reads - before.reads, after.readBytes - before.readBytes, after.appends - before.appends}
	t.Logf("%-40s %s", cmdString(args), cost)
	switch {
	case want == nil && err != redis.Nil:
		t.Errorf("%s: got %s, %v; want nil", cmdString(args), short(got), err)
	case want != nil && err != nil:
		t.Errorf("%s: unexpected error %v; want %s", cmdString(args), err, short(want))
	case want != nil && !reflect.DeepEqual(got, normalize(want)):
		t.Errorf("%s: got %s; want %s", cmdString(args), short(got), short(normalize(want)))
	}
	if cost.reads > maxReads || cost.appends > maxAppends {
		t.Errorf("%s: cost %s; want at most %d reads and %d appends", cmdString(args), cost, maxReads, maxAppends)
	}
	return cost
}

// groupedVal is the value of field i of the big hash: 19 bytes.
func groupedVal(i int) string { return fmt.Sprintf("val-%07d-abcdef", i) }

func groupedField(i int) string { return fmt.Sprintf("f:%06d", i) }

// groupedHashArgs returns cmd key followed by the fields lo..hi-1 of the big hash and their values.
func groupedHashArgs(cmd, key string, lo, hi int) []any {
	args := make([]any, 0, 2+2*(hi-lo))
	args = append(args, cmd, key)
	for i := lo; i < hi; i++ {
		args = append(args, groupedField(i), groupedVal(i))
	}
	return args
}

// groupedBulk runs a command of many arguments and checks that it replies the integer want,
// naming only its first two arguments in a failure.
func groupedBulk(t testing.TB, k checker, want int64, args []any) {
	t.Helper()
	got, err := k.do(args...)
	if n, ok := got.(int64); err != nil || !ok || n != want {
		t.Fatalf("%v %v with %d arguments: got %s, %v; want %d", args[0], args[1], len(args), short(got), err, want)
	}
}

// TestGroupedHashConstantRecords builds a 1,000,000-field hash and two 1,000,000-member sets and
// checks that each command naming one or a few fields or members reads at most the directory
// and a group (2 records) and appends at most 3 (a group split writes two groups and the
// directory), HLEN and SCARD the directory alone; SMOVE, which names two keys, twice that.
// Records still in a shard's in-memory log tail are read without the engine, so a read shows 0
// or 1 where its records were written just before; the value cache is off, so every other read
// goes through the engine. The server runs with appendfsync no and the collector off: under
// everysec and always, the sync loop appends a mark record (vlog.Log.Mark) a second after a
// shard's last write, which INFO counts in lavik_log_appends and which would land inside a
// measured command now and then; under no, and without the collector, nothing appends but
// the commands.
func TestGroupedHashConstantRecords(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("grouped collections and their INFO counters are Lavik's")
	}
	s := harness.Start(t, "--appendfsync", "no", "--reclaim-rate", "0")
	c := s.ClientOpts(&redis.Options{MaxRetries: -1, ReadTimeout: 2 * time.Minute, WriteTimeout: 2 * time.Minute})
	k := newChecker(t, c)
	const n = 1_000_000

	// Small hash first: one record, so a read is one read and a write one append.
	small := []any{"HSET", "small"}
	for i := 0; i < 10; i++ {
		small = append(small, groupedField(i), groupedVal(i))
	}
	k.eq(10, small...)
	groupedStep(t, k, groupedVal(3), 1, 0, "HGET", "small", groupedField(3))
	groupedStep(t, k, 1, 1, 1, "HSET", "small", "new", "v")
	groupedStep(t, k, 0, 1, 1, "HSET", "small", groupedField(4), "v4")

	// A command carries at most 1024*1024 arguments (the RESP reader's multibulk limit, as in
	// Redis), so the hash is built by one LAVIK.HREPLACE of 500,000 pairs and HSETs of 100,000.
	start := time.Now()
	groupedBulk(t, k, 500_000, groupedHashArgs("LAVIK.HREPLACE", "big", 0, 500_000))
	t.Logf("LAVIK.HREPLACE of 500,000 fields: %v", time.Since(start).Round(time.Millisecond))
	for lo := 500_000; lo < n; lo += 100_000 {
		groupedBulk(t, k, 100_000, groupedHashArgs("HSET", "big", lo, lo+100_000))
	}
	t.Logf("%d-field hash built in %v", n, time.Since(start).Round(time.Millisecond))

	dir := groupedStep(t, k, n, 1, 0, "HLEN", "big")
	// The directory is a patch against a base, both cached decoded in DRAM by the writes that
	// built the hash: their cost per field, and against the hash's bytes (at most 1%).
	cached := infoInt(t, k, "memory", "lavik_dir_cache_bytes")
	hashBytes := int64(n * (len(groupedField(0)) + len(groupedVal(0)) + 2))
	t.Logf("directory of the %d-field hash: HLEN read %d bytes (0: the directory is cached); directories cached in DRAM %d bytes, %.4f bytes per field, %.2f%% of the hash's %d bytes",
		n, dir.readBytes, cached, float64(cached)/n, 100*float64(cached)/float64(hashBytes), hashBytes)
	if cached <= 0 || cached*100 > hashBytes {
		t.Fatalf("directory bases in DRAM %d bytes for a hash of %d bytes: want some, at most 1%%", cached, hashBytes)
	}
	groupedStep(t, k, groupedVal(123456), 2, 0, "HGET", "big", groupedField(123456))
	groupedStep(t, k, groupedVal(999999), 2, 0, "HGET", "big", groupedField(999999))
	groupedStep(t, k, nil, 2, 0, "HGET", "big", "f:missing")
	groupedStep(t, k, 1, 2, 0, "HEXISTS", "big", groupedField(42))
	groupedStep(t, k, 0, 2, 0, "HEXISTS", "big", "f:missing")
	groupedStep(t, k, len(groupedVal(7)), 2, 0, "HSTRLEN", "big", groupedField(7))
	groupedStep(t, k, []any{groupedVal(5)}, 2, 0, "HMGET", "big", groupedField(5))
	groupedStep(t, k, []any{groupedVal(1), nil, groupedVal(500000)}, 4, 0,
		"HMGET", "big", groupedField(1), "f:missing", groupedField(500000))

	groupedStep(t, k, 1, 2, 3, "HSET", "big", "f:new", "new value")
	groupedStep(t, k, "new value", 2, 0, "HGET", "big", "f:new")
	groupedStep(t, k, 0, 2, 3, "HSET", "big", groupedField(777), "changed")
	groupedStep(t, k, "changed", 2, 0, "HGET", "big", groupedField(777))
	groupedStep(t, k, 0, 2, 3, "HSETNX", "big", groupedField(778), "not set")
	groupedStep(t, k, 1, 2, 3, "HSETNX", "big", "f:nx", "set")
	groupedStep(t, k, 1, 2, 3, "HDEL", "big", groupedField(778))
	groupedStep(t, k, nil, 2, 0, "HGET", "big", groupedField(778))
	groupedStep(t, k, 0, 2, 3, "HDEL", "big", groupedField(778))
	groupedStep(t, k, 5, 2, 3, "HINCRBY", "big", "f:counter", 5)
	groupedStep(t, k, 12, 2, 3, "HINCRBY", "big", "f:counter", 7)
	groupedStep(t, k, "2.5", 2, 3, "HINCRBYFLOAT", "big", "f:float", "2.5")
	groupedStep(t, k, n+3, 1, 0, "HLEN", "big") // + f:new, f:nx, f:counter, f:float - 778

	// A few dozen more single-field writes at random, to catch a split or a neighbour's read.
	rng := rand.New(rand.NewPCG(1, 2))
	var worst groupedCost
	for i := 0; i < 40; i++ {
		f := groupedField(rng.IntN(n))
		c := groupedStep(t, k, 0, 2, 3, "HSET", "big", f, "rewritten")
		worst.reads, worst.appends = max(worst.reads, c.reads), max(worst.appends, c.appends)
		c = groupedStep(t, k, 1, 2, 3, "HSET", "big", f+":x", "added")
		worst.reads, worst.appends = max(worst.reads, c.reads), max(worst.appends, c.appends)
	}
	t.Logf("80 random HSETs on the big hash: at most %d reads and %d appends each", worst.reads, worst.appends)
	groupedStep(t, k, n+43, 1, 0, "HLEN", "big") // + 40 new fields

	// A hash a little past the default threshold has groups of the least target size (4 KiB),
	// which split at twice that: grow one field at a time until several have split.
	mid := map[string]string{}
	midArgs := []any{"HSET", "mid"}
	for i := 0; i < 1200; i++ { // about 36 KB
		mid[groupedField(i)] = groupedVal(i)
		midArgs = append(midArgs, groupedField(i), groupedVal(i))
	}
	groupedBulk(t, k, 1200, midArgs)
	splits := 0
	start = time.Now()
	for i := 1200; i < 3000; i++ {
		before := groupedCounters(t, k)
		k.eq(1, "HSET", "mid", groupedField(i), groupedVal(i))
		after := groupedCounters(t, k)
		mid[groupedField(i)] = groupedVal(i)
		reads, appends := after.reads-before.reads, after.appends-before.appends
		if reads > 2 || appends > 3 {
			t.Errorf("HSET mid %s (field %d of the hash): %d reads, %d appends; want at most 2 and 3",
				groupedField(i), i+1, reads, appends)
		}
		if appends == 3 {
			splits++
		}
	}
	t.Logf("1,800 single-field HSETs growing a 1,200-field hash: %d split a group (3 appends), %v",
		splits, time.Since(start).Round(time.Millisecond))
	if splits == 0 {
		t.Errorf("no HSET split a group (3 appends) while a hash grew from 1,200 to 3,000 fields")
	}
	checkHash(t, k, "mid", mid)

	// Sets: two of a million members each, built with SADDs of 100,000.
	start = time.Now()
	for _, key := range []string{"s1", "s2"} {
		for lo := 0; lo < n; lo += 100_000 {
			sargs := make([]any, 0, 2+100_000)
			sargs = append(sargs, "SADD", key)
			for i := lo; i < lo+100_000; i++ {
				sargs = append(sargs, key+":m:"+strconv.Itoa(i))
			}
			groupedBulk(t, k, 100_000, sargs)
		}
	}
	t.Logf("two %d-member sets by SADDs of 100,000: %v", n, time.Since(start).Round(time.Millisecond))
	dir = groupedStep(t, k, n, 1, 0, "SCARD", "s1")
	t.Logf("directory of the %d-member set: a patch of about %d bytes (SCARD's read)", n, dir.readBytes)
	groupedStep(t, k, 1, 2, 0, "SISMEMBER", "s1", "s1:m:4242")
	groupedStep(t, k, 0, 2, 0, "SISMEMBER", "s1", "s2:m:4242")
	groupedStep(t, k, []any{int64(1)}, 2, 0, "SMISMEMBER", "s1", "s1:m:1")
	groupedStep(t, k, []any{int64(1), int64(0), int64(1)}, 4, 0, "SMISMEMBER", "s1", "s1:m:1", "nope", "s1:m:999999")
	groupedStep(t, k, 1, 2, 3, "SADD", "s1", "s1:new")
	groupedStep(t, k, 0, 2, 3, "SADD", "s1", "s1:m:17")
	groupedStep(t, k, 1, 2, 0, "SISMEMBER", "s1", "s1:new")
	groupedStep(t, k, 1, 2, 3, "SREM", "s1", "s1:m:18")
	groupedStep(t, k, 0, 2, 3, "SREM", "s1", "s1:m:18")
	groupedStep(t, k, 0, 2, 0, "SISMEMBER", "s1", "s1:m:18")
	groupedStep(t, k, n, 1, 0, "SCARD", "s1") // + s1:new - s1:m:18
	// SMOVE names two keys: the directory and a group of each, read and written.
	groupedStep(t, k, 1, 4, 6, "SMOVE", "s1", "s2", "s1:m:19")
	groupedStep(t, k, 0, 4, 6, "SMOVE", "s1", "s2", "s1:m:19")
	groupedStep(t, k, 0, 2, 0, "SISMEMBER", "s1", "s1:m:19")
	groupedStep(t, k, 1, 2, 0, "SISMEMBER", "s2", "s1:m:19")
	groupedStep(t, k, n-1, 1, 0, "SCARD", "s1")
	groupedStep(t, k, n+1, 1, 0, "SCARD", "s2")
	groupedStep(t, k, 1, 4, 6, "SMOVE", "s2", "s1", "s2:m:20")
	groupedStep(t, k, n, 1, 0, "SCARD", "s1")
	groupedStep(t, k, n, 1, 0, "SCARD", "s2")
	groupedStep(t, k, 1, 2, 0, "SISMEMBER", "s1", "s2:m:20")
	groupedStep(t, k, 0, 2, 0, "SISMEMBER", "s2", "s2:m:20")
}

// groupedModel is what a grouped hash and a grouped set should hold.
type groupedModel struct {
	rng  *rand.Rand
	hash map[string]string
	set  map[string]bool
}

// groupedRandomOps sends n random HSET/HDEL/SADD/SREM commands (1-3 fields or members each) on
// hkey and skey in pipelines, applying each to the model and checking each reply; grow is the
// chance in percent that a command adds rather than removes.
func (m *groupedModel) groupedRandomOps(t *testing.T, c *redis.Client, hkey, skey string, n, grow, universe int) {
	t.Helper()
	cmds := make([][]any, 0, n)
	wants := make([]int64, 0, n)
	for len(cmds) < n {
		add := m.rng.IntN(100) < grow
		name := func() string { return fmt.Sprintf("m:%05d", m.rng.IntN(universe)) }
		switch hash := m.rng.IntN(2) == 0; {
		case hash && add:
			args := []any{"HSET", hkey}
			added := int64(0)
			seen := map[string]bool{}
			for i := m.rng.IntN(3); i >= 0; i-- {
				f, v := name(), fmt.Sprintf("v%d-%s", m.rng.IntN(1000), strings.Repeat("x", m.rng.IntN(30)))
				args = append(args, f, v)
				if _, ok := m.hash[f]; !ok && !seen[f] {
					added++
				}
				seen[f] = true
				m.hash[f] = v
			}
			cmds, wants = append(cmds, args), append(wants, added)
		case hash:
			args := []any{"HDEL", hkey}
			gone := int64(0)
			for i := m.rng.IntN(3); i >= 0; i-- {
				f := name()
				args = append(args, f)
				if _, ok := m.hash[f]; ok {
					gone++
					delete(m.hash, f)
				}
			}
			cmds, wants = append(cmds, args), append(wants, gone)
		default:
			cmd := "SREM"
			if add {
				cmd = "SADD"
			}
			args := []any{cmd, skey}
			changed := int64(0)
			for i := m.rng.IntN(3); i >= 0; i-- {
				e := name()
				args = append(args, e)
				if m.set[e] != add {
					changed++
					if add {
						m.set[e] = true
					} else {
						delete(m.set, e)
					}
				}
			}
			cmds, wants = append(cmds, args), append(wants, changed)
		}
	}
	for i, got := range pipelineDo(t, c, 200, cmds) {
		if got != wants[i] {
			t.Fatalf("%s: got %s; want %d", cmdString(cmds[i]), short(got), wants[i])
		}
	}
}

// check compares hkey and skey with the model through HGETALL, HLEN, SMEMBERS and SCARD.
func (m *groupedModel) check(t *testing.T, k checker, hkey, skey, when string) {
	t.Helper()
	if got := hgetall(t, k, hkey); !maps.Equal(got, m.hash) {
		t.Fatalf("%s: HGETALL %s: %s", when, hkey, hashDiff(got, m.hash))
	}
	k.eq(len(m.hash), "HLEN", hkey)
	got, want := sortedStrings(t, k.arr("SMEMBERS", skey)), slices.Sorted(maps.Keys(m.set))
	if !slices.Equal(got, want) {
		t.Fatalf("%s: SMEMBERS %s: %s", when, skey, setDiff(got, want))
	}
	k.eq(len(m.set), "SCARD", skey)
}

// groupedBytes is about what a hash's or set's encoding takes: at least its fields, values and
// members, one length byte each.
func (m *groupedModel) groupedBytes() (hash, set int) {
	for f, v := range m.hash {
		hash += len(f) + len(v) + 2
	}
	for e := range m.set {
		set += len(e) + 1
	}
	return hash, set
}

// TestGroupedRestartAndKill drives a hash and a set well past a group threshold of 1,024 bytes
// (about 5,000 members each) with random HSET/HDEL/SADD/SREM against a Go model and compares
// their whole contents after clean restarts and kill -9 (appendfsync always: every acknowledged
// write must survive), through shrinking below half the threshold (one record again) and growing
// past it again, PEXPIRE, RENAME, COPY, DEL and MULTI/EXEC on two grouped keys, and a kill -9
// while a client runs such transactions: each must be there whole or not at all.
func TestGroupedRestartAndKill(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("group-threshold is Lavik's")
	}
	const threshold = 1024
	// Small segments, so that the collector reclaims segments and moves live groups and
	// directories while the test runs.
	s := harness.Start(t, "--group-threshold", strconv.Itoa(threshold), "--appendfsync", "always", "--segment-size", "1mb")
	seed := e2eSeed(t)
	m := &groupedModel{rng: rand.New(rand.NewPCG(uint64(seed), 7)), hash: map[string]string{}, set: map[string]bool{}}
	clients := func() (*redis.Client, checker) {
		c := s.ClientOpts(&redis.Options{MaxRetries: -1, ReadTimeout: time.Minute})
		return c, newChecker(t, c)
	}
	c, k := clients()
	reclaimed := int64(0) // segments the collector reclaimed, over the server's lives
	restart := func(kill bool, when string) {
		t.Helper()
		reclaimed += infoInt(t, k, "persistence", "lavik_reclaim_segments_total")
		if kill {
			s.KillRestart()
		} else {
			s.Restart()
		}
		c, k = clients()
		m.check(t, k, "gh", "gs", when)
	}
	logSizes := func(when string) {
		h, st := m.groupedBytes()
		t.Logf("%s: hash %d fields (~%d bytes), set %d members (~%d bytes)", when, len(m.hash), h, len(m.set), st)
	}

	// Grow past the threshold and on to about 5,000 members each.
	start := time.Now()
	m.groupedRandomOps(t, c, "gh", "gs", 12000, 85, 7000)
	logSizes("grown")
	m.check(t, k, "gh", "gs", "grown")
	if got := hscanAll(t, k, "gh", "COUNT", 100); !maps.Equal(got, m.hash) {
		t.Fatalf("HSCAN gh: %s", hashDiff(got, m.hash))
	}
	restart(false, "grown, after a clean restart")
	m.groupedRandomOps(t, c, "gh", "gs", 3000, 50, 7000)
	m.check(t, k, "gh", "gs", "mixed")
	restart(true, "mixed, after kill -9")

	// Shrink below half the threshold: every member but a few goes, by HDEL and SREM of many.
	shrinkTo := func(n int) {
		t.Helper()
		var cmds [][]any
		hf := slices.Sorted(maps.Keys(m.hash))
		for len(hf) > n {
			cut := min(50, len(hf)-n)
			args := []any{"HDEL", "gh"}
			for _, f := range hf[:cut] {
				args = append(args, f)
				delete(m.hash, f)
			}
			cmds, hf = append(cmds, args), hf[cut:]
		}
		sm := slices.Sorted(maps.Keys(m.set))
		for len(sm) > n {
			cut := min(50, len(sm)-n)
			args := []any{"SREM", "gs"}
			for _, e := range sm[:cut] {
				args = append(args, e)
				delete(m.set, e)
			}
			cmds, sm = append(cmds, args), sm[cut:]
		}
		for i, got := range pipelineDo(t, c, 100, cmds) {
			if want := int64(len(cmds[i]) - 2); got != want {
				t.Fatalf("%s: got %s; want %d", cmdString(cmds[i][:4]), short(got), want)
			}
		}
	}
	// An HGET of a grouped hash reads a group and the directory, unless the directory is cached
	// (the last write of the key leaves it so). (The least of three tries: the collector's reads
	// are counted too.)
	hgetReads := func() int64 {
		t.Helper()
		f := slices.Sorted(maps.Keys(m.hash))[0]
		least := int64(-1)
		for range 3 {
			before := groupedCounters(t, k)
			k.eq(m.hash[f], "HGET", "gh", f)
			if n := groupedCounters(t, k).reads - before.reads; least < 0 || n < least {
				least = n
			}
		}
		t.Logf("HGET gh (%d fields): %d engine reads", len(m.hash), least)
		return least
	}
	if n := hgetReads(); n < 1 || n > 2 {
		t.Errorf("HGET of a grouped hash of %d fields: %d engine reads; want a group and the directory unless it is cached", len(m.hash), n)
	}
	shrinkTo(10)
	logSizes("shrunk")
	if n := hgetReads(); n > 1 {
		t.Errorf("HGET of a hash shrunk to %d fields, under half the threshold: %d engine reads; want 1 (one record again)", len(m.hash), n)
	}
	if h, st := m.groupedBytes(); h >= threshold/2 || st >= threshold/2 {
		t.Fatalf("shrunk to %d and %d bytes; want both under half the threshold", h, st)
	}
	m.check(t, k, "gh", "gs", "shrunk")
	restart(true, "shrunk, after kill -9")
	restart(false, "shrunk, after a clean restart")
	m.groupedRandomOps(t, c, "gh", "gs", 6000, 90, 7000)
	logSizes("grown again")
	m.check(t, k, "gh", "gs", "grown again")
	restart(true, "grown again, after kill -9")

	// RENAME and COPY of grouped keys, then edits of the copies and the originals: each must
	// keep groups of its own.
	k.ok("RENAME", "gh", "gh2")
	k.eq(0, "EXISTS", "gh")
	k.ok("RENAME", "gh2", "gh")
	k.eq(1, "COPY", "gh", "ghc")
	k.eq(1, "COPY", "gs", "gsc")
	copyModel := &groupedModel{rng: rand.New(rand.NewPCG(uint64(seed), 8)), hash: maps.Clone(m.hash), set: maps.Clone(m.set)}
	copyModel.check(t, k, "ghc", "gsc", "copies")
	copyModel.groupedRandomOps(t, c, "ghc", "gsc", 2000, 50, 7000)
	m.groupedRandomOps(t, c, "gh", "gs", 2000, 50, 7000)
	m.check(t, k, "gh", "gs", "originals after edits of both")
	copyModel.check(t, k, "ghc", "gsc", "copies after edits of both")
	k.ok("RENAME", "gsc", "gsc2")
	k.eq(0, "EXISTS", "gsc")
	restart(true, "after RENAME, COPY and edits, after kill -9")
	copyModel.check(t, k, "ghc", "gsc2", "copies after kill -9")
	restart(false, "after RENAME, COPY and edits, after a clean restart")
	copyModel.check(t, k, "ghc", "gsc2", "copies after a clean restart")

	// DEL of grouped keys: gone, and they stay gone.
	k.eq(2, "DEL", "ghc", "gsc2")
	k.eq(0, "EXISTS", "ghc", "gsc2")
	restart(true, "after DEL, after kill -9")
	k.eq(0, "EXISTS", "ghc", "gsc2")

	// PEXPIRE on grouped copies: gone once the time passes, and still gone after a restart.
	k.eq(1, "COPY", "gh", "ghx")
	k.eq(1, "COPY", "gs", "gsx")
	k.eq(len(m.hash), "HLEN", "ghx")
	k.eq(len(m.set), "SCARD", "gsx")
	k.eq(1, "PEXPIRE", "ghx", 500)
	k.eq(1, "PEXPIRE", "gsx", 500)
	k.between(1, 500, "PTTL", "gsx")
	harness.Eventually(t, 10*time.Second, "the grouped keys to expire", func() bool {
		return k.int("EXISTS", "ghx", "gsx") == 0
	})
	k.eq(0, "HLEN", "ghx")
	k.eq(0, "SCARD", "gsx")
	k.null("HGET", "ghx", slices.Sorted(maps.Keys(m.hash))[0])
	restart(true, "after PEXPIRE, after kill -9")
	k.eq(0, "EXISTS", "ghx", "gsx")

	// MULTI/EXEC changing both grouped keys.
	hf, sm := slices.Sorted(maps.Keys(m.hash)), slices.Sorted(maps.Keys(m.set))
	tx := [][]any{
		{"HSET", "gh", "tx:new", "1", hf[0], "changed"},
		{"HDEL", "gh", hf[1], hf[2]},
		{"HINCRBY", "gh", "tx:new", 41},
		{"SADD", "gs", "tx:new", sm[0]},
		{"SREM", "gs", sm[1], "tx:missing"},
		{"SMOVE", "gs", "gs", sm[2]},
	}
	m.hash["tx:new"], m.hash[hf[0]] = "42", "changed"
	delete(m.hash, hf[1])
	delete(m.hash, hf[2])
	m.set["tx:new"] = true
	delete(m.set, sm[1])
	txc := newChecker(t, c.Conn())
	txc.ok("MULTI")
	for _, args := range tx {
		txc.eq("QUEUED", args...)
	}
	txc.eq([]any{int64(1), int64(2), int64(42), int64(1), int64(1), int64(1)}, "EXEC")
	m.check(t, k, "gh", "gs", "after MULTI/EXEC")
	restart(false, "after MULTI/EXEC, after a clean restart")
	restart(true, "after MULTI/EXEC, after kill -9")

	// A kill -9 while a client runs transactions that add a field to the hash and a member to
	// the set: every acknowledged one must be there, and each whole or not at all.
	ctx := harness.Ctx(t)
	conn := c.Conn()
	acked := make(chan int, 1)
	go func() {
		last := -1
		defer func() { acked <- last }()
		for i := 0; ; i++ {
			_, err := conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, "gh", fmt.Sprintf("kill:%05d", i), strconv.Itoa(i))
				p.SAdd(ctx, "gs", fmt.Sprintf("kill:%05d", i))
				return nil
			})
			if err != nil {
				return
			}
			last = i
		}
	}()
	harness.Eventually(t, 30*time.Second, "200 acknowledged transactions", func() bool {
		return k.int("HEXISTS", "gh", "kill:00199") == 1
	})
	s.KillRestart()
	last := <-acked
	conn.Close()
	c, k = clients()
	got := hgetall(t, k, "gh")
	gotSet := setOf(t, k, "gs")
	n := 0
	for ; ; n++ {
		f := fmt.Sprintf("kill:%05d", n)
		_, inHash := got[f]
		if inHash != gotSet[f] {
			t.Fatalf("after kill -9: transaction %d is half there: HEXISTS gh %s = %v, SISMEMBER gs %s = %v",
				n, f, inHash, f, gotSet[f])
		}
		if !inHash {
			break
		}
		m.hash[f], m.set[f] = strconv.Itoa(n), true
	}
	if n < last+1 || n > last+2 {
		t.Fatalf("after kill -9: transactions 0..%d there; %d were acknowledged (the last %d)", n-1, last+1, last)
	}
	t.Logf("kill -9 after %d acknowledged transactions: %d there", last+1, n)
	m.check(t, k, "gh", "gs", "after kill -9 during transactions")
	restart(false, "after kill -9 during transactions, after a clean restart")

	// Another threshold on the same data: grouped values stay readable and editable where the
	// setting would now keep them whole (gs, about 30 KB, with 32768), and values kept whole
	// where it would now group them (a hash and a set of about 600 bytes, with 256).
	mid := &groupedModel{rng: rand.New(rand.NewPCG(uint64(seed), 9)), hash: map[string]string{}, set: map[string]bool{}}
	mid.groupedRandomOps(t, c, "mh", "ms", 60, 100, 40)
	mh, ms := mid.groupedBytes()
	t.Logf("mh ~%d bytes, ms ~%d bytes", mh, ms)
	mid.check(t, k, "mh", "ms", "mid-sized")
	for _, th := range []string{"32768", "256"} {
		s.Args = []string{"--group-threshold", th, "--appendfsync", "always", "--segment-size", "1mb"}
		restart(false, "after a restart with group-threshold "+th)
		mid.check(t, k, "mh", "ms", "mid-sized, after a restart with group-threshold "+th)
		m.groupedRandomOps(t, c, "gh", "gs", 2000, 50, 7000)
		mid.groupedRandomOps(t, c, "mh", "ms", 40, 60, 40)
		m.check(t, k, "gh", "gs", "edited with group-threshold "+th)
		mid.check(t, k, "mh", "ms", "mid-sized, edited with group-threshold "+th)
		restart(true, "edited with group-threshold "+th+", after kill -9")
		mid.check(t, k, "mh", "ms", "mid-sized, edited with group-threshold "+th+", after kill -9")
	}
	reclaimed += infoInt(t, k, "persistence", "lavik_reclaim_segments_total")
	t.Logf("%d segments reclaimed in all; %v", reclaimed, time.Since(start).Round(time.Millisecond))
}

// TestGroupedScanWhileEditing checks SCAN's guarantee on grouped collections: HSCAN and SSCAN,
// run to the end while other fields and members are added (splitting groups) and removed
// (emptying them) between the calls, return every field or member that was there the whole
// time, at least once.
func TestGroupedScanWhileEditing(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("group-threshold is Lavik's")
	}
	s := harness.Start(t, "--group-threshold", "1024")
	c := s.ClientOpts(&redis.Options{MaxRetries: -1, ReadTimeout: time.Minute})
	k := newChecker(t, c)
	const stable = 2000
	var hset, sadd [][]any
	for i := 0; i < stable; i++ {
		hset = append(hset, []any{"HSET", "h", fmt.Sprintf("stable:%d", i), strconv.Itoa(i), fmt.Sprintf("churn:%d", i), "x"})
		sadd = append(sadd, []any{"SADD", "s", fmt.Sprintf("stable:%d", i), fmt.Sprintf("churn:%d", i)})
	}
	pipelineDo(t, c, 500, append(hset, sadd...))
	for _, tc := range []struct{ cmd, key, add, del string }{{"HSCAN", "h", "HSET", "HDEL"}, {"SSCAN", "s", "SADD", "SREM"}} {
		seen := map[string]bool{}
		cursor, calls, added, deleted := "0", 0, 0, 0
		for {
			reply := k.arr(tc.cmd, tc.key, cursor, "COUNT", 20)
			cursor = reply[0].(string)
			items := reply[1].([]any)
			step := 1
			if tc.cmd == "HSCAN" {
				step = 2
			}
			for i := 0; i < len(items); i += step {
				seen[items[i].(string)] = true
			}
			calls++
			// Between the calls: 30 new fields or members, and 10 of the churn ones gone.
			var cmds [][]any
			for j := 0; j < 30; j++ {
				args := []any{tc.add, tc.key, fmt.Sprintf("new:%d", added)}
				if tc.add == "HSET" {
					args = append(args, "y")
				}
				cmds = append(cmds, args)
				added++
			}
			for j := 0; j < 10 && deleted < stable; j++ {
				cmds = append(cmds, []any{tc.del, tc.key, fmt.Sprintf("churn:%d", deleted)})
				deleted++
			}
			pipelineDo(t, c, 100, cmds)
			if cursor == "0" {
				break
			}
			if calls > 100000 {
				t.Fatalf("%s %s: no end after %d calls", tc.cmd, tc.key, calls)
			}
		}
		var missing []string
		for i := 0; i < stable; i++ {
			if f := fmt.Sprintf("stable:%d", i); !seen[f] {
				missing = append(missing, f)
			}
		}
		t.Logf("%s %s: %d calls, %d distinct returned, %d added and %d removed meanwhile", tc.cmd, tc.key, calls, len(seen), added, deleted)
		if len(missing) > 0 {
			t.Errorf("%s %s with edits between the calls: %d of the %d fields or members there throughout never returned, e.g. %q",
				tc.cmd, tc.key, len(missing), stable, missing[:min(5, len(missing))])
		}
	}
}
