package test

// End-to-end tests of replies where clients found Lavik answering differently from Redis 7: the
// empty key in SCAN and RANDOMKEY, INFO's avg_ttl, expire times at the ends of the 64-bit range,
// the order in which SET and GETEX check their arguments, and SCAN cursors. Every expected reply
// is redis-server 7.0.15's, and the file passes against it (make test-redis).

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

func TestCompat(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "EmptyKey", func(t *testing.T, k checker) {
		k.ok("SET", "", "x")
		k.eq("", "RANDOMKEY") // an empty bulk string, not nil
		k.eq([]any{""}, "KEYS", "*")
		checkKeys(t, "SCAN MATCH *", scanFrom(t, k, "0", "MATCH", "*"), "")
		k.ok("MSET", "a", 1, "b", 2)
		checkKeys(t, "SCAN", scanFrom(t, k, "0"), "", "a", "b")
		checkKeys(t, "SCAN MATCH *", scanFrom(t, k, "0", "MATCH", "*"), "", "a", "b")
		checkKeys(t, "SCAN MATCH * COUNT 1", scanFrom(t, k, "0", "MATCH", "*", "COUNT", 1), "", "a", "b")
		// The last MATCH counts; only "*" itself means every key: no other pattern matches "".
		checkKeys(t, "SCAN MATCH x MATCH *", scanFrom(t, k, "0", "MATCH", "x", "MATCH", "*"), "", "a", "b")
		checkKeys(t, "SCAN MATCH **", scanFrom(t, k, "0", "MATCH", "**"), "a", "b")
		checkKeys(t, "SCAN MATCH ?*", scanFrom(t, k, "0", "MATCH", "?*"), "a", "b")
		checkKeys(t, "SCAN MATCH empty", scanFrom(t, k, "0", "MATCH", ""), "")
		checkKeys(t, "SCAN TYPE string", scanFrom(t, k, "0", "TYPE", "string", "MATCH", "*"), "", "a", "b")
		k.eq(2, "DEL", "a", "b")
		for i := 0; i < 10; i++ {
			k.eq("", "RANDOMKEY")
		}
		k.eq(1, "DEL", "")
		k.null("RANDOMKEY")
	})

	subtest(t, c, "AvgTTL", func(t *testing.T, k checker) {
		// Redis estimates avg_ttl from its expire cycle's samples (10 cycles a second) as a
		// moving average that moves 2% a cycle, so a test can only wait for it to pass a bound.
		// It is 0 when a database has no key with a TTL, from FLUSHDB on and from the first
		// cycle that finds none.
		k1 := newChecker(t, s.ClientOpts(&redis.Options{DB: 1}))
		k.ok("SET", "p", "v")
		wantAvgTTL(t, k, 0, 1, 0, 0, 0)
		for i := 0; i < 20; i++ {
			k.ok("SET", fmt.Sprintf("t%d", i), "v", "EX", 100)
		}
		waitAvgTTL(t, k, 0, 90_000, 100_000)
		for i := 0; i < 5; i++ {
			k1.ok("SET", fmt.Sprintf("x%d", i), "v", "EX", 10_000)
		}
		waitAvgTTL(t, k, 1, 9_000_000, 10_000_000)
		waitAvgTTL(t, k, 0, 90_000, 100_000) // each database its own
		// Keys with a longer TTL added: the average rises.
		for i := 0; i < 200; i++ {
			k.ok("SET", fmt.Sprintf("long%d", i), "v", "EX", 10_000)
		}
		waitAvgTTL(t, k, 0, 1_000_000, 10_000_000)
		// Every TTL removed: 0.
		for i := 0; i < 200; i++ {
			k.eq(1, "DEL", fmt.Sprintf("long%d", i))
		}
		for i := 0; i < 20; i++ {
			k.eq(1, "PERSIST", fmt.Sprintf("t%d", i))
		}
		// Redis resets the average at its next expire cycle.
		wantAvgTTL(t, k, 0, 21, 0, 0, math.MaxInt64)
		waitAvgTTL(t, k, 0, 0, 0)
		// Keys with a TTL again, after the average was reset.
		k.ok("SET", "again", "v", "EX", 50)
		waitAvgTTL(t, k, 0, 40_000, 50_000)
		// Expired: once the keys are gone, 0 again.
		k.eq(1, "PERSIST", "again")
		for i := 0; i < 10; i++ {
			k.ok("SET", fmt.Sprintf("short%d", i), "v", "PX", 100)
		}
		harness.Eventually(t, 30*time.Second, "the short TTLs to expire and avg_ttl to be 0", func() bool {
			keys, expires, avg := avgTTL(t, k, 0)
			return keys == 22 && expires == 0 && avg == 0
		})
		// FLUSHDB forgets the average at once.
		waitAvgTTL(t, k1, 1, 9_000_000, 10_000_000)
		k1.ok("FLUSHDB")
		k1.ok("SET", "p", "v")
		wantAvgTTL(t, k1, 1, 1, 0, 0, 0)
		k1.ok("SET", "y", "v", "EX", 50)
		waitAvgTTL(t, k1, 1, 40_000, 50_000)
	})

	subtest(t, c, "ExpireTimeAtTheEndOfTime", func(t *testing.T, k checker) {
		const maxMs = math.MaxInt64
		k.ok("SET", "k", "v")
		k.eq(1, "PEXPIREAT", "k", maxMs)
		k.eq(maxMs, "PEXPIRETIME", "k")
		k.eq(9223372036854776, "EXPIRETIME", "k") // rounded to the nearest second, no overflow
		now := time.Now().UnixMilli()
		k.between(maxMs-now-60_000, maxMs-now+60_000, "PTTL", "k")
		k.between((maxMs-now)/1000-60, (maxMs-now)/1000+60, "TTL", "k")
		for _, c := range []struct{ ms, secs int64 }{
			{9223372036854775806, 9223372036854776},
			{9223372036854775500, 9223372036854776},
			{9223372036854775499, 9223372036854775},
			{9223372036854775308, 9223372036854775},
			{9223372036854775307, 9223372036854775},
			{9223372036854775000, 9223372036854775},
		} {
			k.eq(1, "PEXPIREAT", "k", c.ms)
			k.eq(c.ms, "PEXPIRETIME", "k")
			k.eq(c.secs, "EXPIRETIME", "k")
		}
		k.eq(1, "EXPIREAT", "k", 9223372036854775)
		k.eq(9223372036854775, "EXPIRETIME", "k")
		k.eq(9223372036854775000, "PEXPIRETIME", "k")
		k.ok("SET", "k", "v", "PXAT", maxMs)
		k.eq(9223372036854776, "EXPIRETIME", "k")
		k.ok("SET", "k", "v")
		k.eq("v", "GETEX", "k", "PXAT", maxMs)
		k.eq(9223372036854776, "EXPIRETIME", "k")
		k.eq(maxMs, "PEXPIRETIME", "k")
	})

	subtest(t, c, "HugeNegativeExpire", func(t *testing.T, k checker) {
		// A time in the past deletes the key. Redis refuses only seconds that do not fit in
		// milliseconds (below -9223372036854775 or above 9223372036854775) and a relative time
		// that overflows when added to now, which a negative one cannot.
		for _, args := range [][]any{
			{"EXPIRE", "k", "-9223372036854775"},
			{"EXPIRE", "k", "-9223372036854774"},
			{"PEXPIRE", "k", "-9223372036854775808"},
			{"PEXPIRE", "k", "-9223372036854775807"},
			{"PEXPIRE", "k", "-9223372036854775000"},
			{"PEXPIRE", "k", "-9223372036854775808", "LT"},
			{"EXPIREAT", "k", "-9223372036854775"},
			{"PEXPIREAT", "k", "-9223372036854775808"},
		} {
			k.ok("SET", "k", "v")
			k.eq(1, args...)
			k.eq(0, "EXISTS", "k")
		}
		k.eq(0, "PEXPIRE", "missing", "-9223372036854775808")
		k.eq(0, "EXPIRE", "missing", "-9223372036854775")

		k.ok("SET", "k", "v", "EX", 100)
		for _, args := range [][]any{
			{"EXPIRE", "k", "-9223372036854775808"},
			{"EXPIRE", "k", "-9223372036854775807"},
			{"EXPIRE", "k", "-9223372036854776"},
			{"EXPIRE", "k", "-100000000000000000"},
			{"EXPIRE", "k", "9223372036854775"}, // fits in ms, but not once added to now
			{"EXPIRE", "k", "9223372036854776"},
			{"PEXPIRE", "k", "9223372036854775807"},
			{"EXPIREAT", "k", "-9223372036854776"},
			{"EXPIREAT", "k", "9223372036854776"},
		} {
			k.err(errExpire(strings.ToLower(args[0].(string))), args...)
		}
		k.err(errExpire("expire"), "EXPIRE", "missing", "-9223372036854775808")
		k.between(99, 100, "TTL", "k") // nothing changed
		// The options are checked before the time.
		k.err("ERR Unsupported option foo", "EXPIRE", "k", "abc", "foo")
		k.err(errExpireOpts, "EXPIRE", "k", "abc", "NX", "XX")
		k.err(errNotInt, "EXPIRE", "k", "abc", "NX")

		// SET, GETEX, SETEX and PSETEX want a positive time.
		for _, v := range []string{"-9223372036854775808", "-9223372036854775", "-1", "0"} {
			for _, opt := range []string{"EX", "PX", "EXAT", "PXAT"} {
				k.err(errExpire("set"), "SET", "k", "v2", opt, v)
				k.err(errExpire("getex"), "GETEX", "k", opt, v)
			}
			k.err(errExpire("setex"), "SETEX", "k", v, "v2")
			k.err(errExpire("psetex"), "PSETEX", "k", v, "v2")
		}
		k.err(errExpire("set"), "SET", "k", "v2", "EX", "9223372036854775")
		k.err(errExpire("set"), "SET", "k", "v2", "PX", "9223372036854775807")
		k.err(errExpire("set"), "SET", "k", "v2", "EXAT", "9223372036854776")
		k.eq("v", "GET", "k")
		k.between(99, 100, "TTL", "k")
		k.ok("SET", "k", "v2", "PX", "9223372036854775")
		k.ok("SET", "k", "v2", "EXAT", "9223372036854775")
		k.ok("SET", "k", "v2", "PXAT", "9223372036854775807")
	})

	subtest(t, c, "GetexOrderOfChecks", func(t *testing.T, k checker) {
		// Syntax first, then a missing key answers nil whatever the time, then the time.
		for _, args := range [][]any{
			{"EX"}, {"EX", 10, "PX", 10}, {"EX", "abc", "foo"}, {"PERSIST", "EX", -1},
			{"EX", -1, "PERSIST"}, {"KEEPTTL"}, {"NX"}, {"GET"},
		} {
			k.err(errSyntax, append([]any{"GETEX", "missing"}, args...)...)
		}
		for _, args := range [][]any{
			{"EX", -1}, {"EX", 0}, {"EX", "abc"}, {"PX", 0}, {"EXAT", -1}, {"PXAT", 0},
			{"EX", "9223372036854775807"}, {"EX", -1, "EX", 10}, {"EX", 10, "EX", -1},
			{"PERSIST"},
		} {
			k.null(append([]any{"GETEX", "missing"}, args...)...)
		}
		k.eq(0, "EXISTS", "missing")
		// An existing key: the time is checked, and only the last one given counts.
		k.ok("SET", "k", "v")
		k.err(errExpire("getex"), "GETEX", "k", "EX", -1)
		k.err(errExpire("getex"), "GETEX", "k", "PX", 0)
		k.err(errExpire("getex"), "GETEX", "k", "EX", "9223372036854775807")
		k.err(errNotInt, "GETEX", "k", "EX", "abc")
		k.eq(-1, "TTL", "k")
		k.eq("v", "GETEX", "k", "EX", -1, "EX", 100)
		k.between(99, 100, "TTL", "k")
		k.err(errExpire("getex"), "GETEX", "k", "EX", 200, "EX", -1)
		k.err(errNotInt, "GETEX", "k", "EX", 200, "ex", "abc")
		k.between(99, 100, "TTL", "k")
		k.eq("v", "GETEX", "k", "PERSIST", "persist")
		k.eq(-1, "TTL", "k")
		k.eq("v", "GETEX", "k", "EXAT", 1) // a past time deletes the key
		k.eq(0, "EXISTS", "k")
		// A key of another type would answer WRONGTYPE before the time is checked; Lavik has
		// only strings so far.
	})

	subtest(t, c, "SetOptions", func(t *testing.T, k checker) {
		// Each case runs on an existing key "old" without a TTL, then on a missing key. ttl is
		// the key's TTL in seconds afterwards: -1 none, -2 gone.
		type outcome struct {
			reply any // a string, nil, or errorReply
			value any // the value afterwards, nil when missing
			ttl   int64
		}
		type errorReply string
		notSet := outcome{nil, "old", -1}
		missingNotSet := outcome{nil, nil, -2}
		syntax := outcome{errorReply(errSyntax), "old", -1}
		missingSyntax := outcome{errorReply(errSyntax), nil, -2}
		notInt := outcome{errorReply(errNotInt), "old", -1}
		missingNotInt := outcome{errorReply(errNotInt), nil, -2}
		badTime := outcome{errorReply(errExpire("set")), "old", -1}
		missingBadTime := outcome{errorReply(errExpire("set")), nil, -2}
		set := func(reply any, ttl int64) outcome { return outcome{reply, "v", ttl} }
		for _, c := range []struct {
			opts             string
			existing, absent outcome
		}{
			// Accepted, alone, repeated, and in any order.
			{"NX", notSet, set("OK", -1)},
			{"XX", set("OK", -1), missingNotSet},
			{"GET", set("old", -1), set(nil, -1)},
			{"KEEPTTL", set("OK", -1), set("OK", -1)},
			{"NX NX", notSet, set("OK", -1)},
			{"XX xx", set("OK", -1), missingNotSet},
			{"GET GET", set("old", -1), set(nil, -1)},
			{"KEEPTTL KEEPTTL", set("OK", -1), set("OK", -1)},
			{"NX GET", outcome{"old", "old", -1}, set(nil, -1)},
			{"GET NX", outcome{"old", "old", -1}, set(nil, -1)},
			{"XX GET", set("old", -1), missingNotSet},
			{"GET XX KEEPTTL", set("old", -1), missingNotSet},
			{"KEEPTTL NX", notSet, set("OK", -1)},
			{"EX 100", set("OK", 100), set("OK", 100)},
			{"PX 100000", set("OK", 100), set("OK", 100)},
			{"EXAT 4000000000", set("OK", 0), set("OK", 0)},
			{"PXAT 4000000000000", set("OK", 0), set("OK", 0)},
			{"EX 10 EX 100", set("OK", 100), set("OK", 100)},
			{"ex 10 EX 100", set("OK", 100), set("OK", 100)},
			{"EX 100 NX", notSet, set("OK", 100)},
			{"NX EX 100 GET", outcome{"old", "old", -1}, set(nil, 100)},
			{"XX PX 100000 GET", set("old", 100), missingNotSet},
			{"GET EX 100 GET", set("old", 100), set(nil, 100)},
			// Only the last time given is checked.
			{"EX -1 EX 100", set("OK", 100), set("OK", 100)},
			{"EX abc EX 100", set("OK", 100), set("OK", 100)},
			{"EX 100 EX -1", badTime, missingBadTime},
			{"EX 100 EX abc", notInt, missingNotInt},
			{"EX abc EX -1", badTime, missingBadTime},
			{"EX EX", notInt, missingNotInt}, // the second EX is the first one's value
			// A past time deletes the key.
			{"PXAT 1", outcome{"OK", nil, -2}, outcome{"OK", nil, -2}},
			{"EXAT 1 GET", outcome{"old", nil, -2}, outcome{nil, nil, -2}},
			// Syntax errors, whatever else is wrong.
			{"EX", syntax, missingSyntax},
			{"PX", syntax, missingSyntax},
			{"EXAT", syntax, missingSyntax},
			{"PXAT", syntax, missingSyntax},
			{"NX EX", syntax, missingSyntax},
			{"EX 10 PX", syntax, missingSyntax},
			{"NX XX", syntax, missingSyntax},
			{"XX NX", syntax, missingSyntax},
			{"NX GET XX", syntax, missingSyntax},
			{"KEEPTTL EX 10", syntax, missingSyntax},
			{"EX 10 KEEPTTL", syntax, missingSyntax},
			{"KEEPTTL PXAT 4000000000000", syntax, missingSyntax},
			{"PX 10 EX 10", syntax, missingSyntax},
			{"EX 10 PX 10", syntax, missingSyntax},
			{"EX 10 EXAT 4000000000", syntax, missingSyntax},
			{"EXAT 4000000000 PXAT 4000000000000", syntax, missingSyntax},
			{"PXAT 4000000000000 PX 10", syntax, missingSyntax},
			{"EX EX 10", syntax, missingSyntax},
			{"EX abc NX XX", syntax, missingSyntax},
			{"EX -1 KEEPTTL", syntax, missingSyntax},
			{"EX -1 PX 100", syntax, missingSyntax},
			{"EX abc foo", syntax, missingSyntax},
			{"PERSIST", syntax, missingSyntax},
			{"foo", syntax, missingSyntax},
			{"NX foo", syntax, missingSyntax},
			{"EX 10 foo", syntax, missingSyntax},
			{"GET foo GET", syntax, missingSyntax},
			// The time before NX and XX: an error even when nothing would be set.
			{"NX EX -1", badTime, missingBadTime},
			{"XX EX 0", badTime, missingBadTime},
			{"NX EX abc", notInt, missingNotInt},
			{"XX PXAT 0 GET", badTime, missingBadTime},
			{"EX 9223372036854775807", badTime, missingBadTime},
			{"EXAT 9223372036854776", badTime, missingBadTime},
		} {
			for _, existing := range []bool{true, false} {
				want := c.absent
				k.do("DEL", "k")
				if existing {
					k.ok("SET", "k", "old")
					want = c.existing
				}
				args := []any{"SET", "k", "v"}
				for _, f := range strings.Fields(c.opts) {
					args = append(args, f)
				}
				switch r := want.reply.(type) {
				case errorReply:
					k.err(string(r), args...)
				default:
					k.eq(r, args...)
				}
				if want.value == nil {
					k.null("GET", "k")
				} else {
					k.eq(want.value, "GET", "k")
				}
				ttl := k.int("TTL", "k")
				switch {
				case want.ttl == 0 && ttl > 100: // an absolute time in the far future
				case want.ttl > 0 && (ttl == want.ttl || ttl == want.ttl-1):
				case ttl == want.ttl:
				default:
					t.Fatalf("SET k v %s on a key that exists: %v: TTL %d, want %d", c.opts, existing, ttl, want.ttl)
				}
			}
		}
		// KEEPTTL keeps the old TTL; without it, SET drops it.
		k.ok("SET", "k", "v", "EX", 100)
		k.ok("SET", "k", "v2", "KEEPTTL")
		k.between(99, 100, "TTL", "k")
		k.eq("v2", "SET", "k", "v3", "GET", "KEEPTTL", "XX")
		k.between(99, 100, "TTL", "k")
		k.ok("SET", "k", "v4")
		k.eq(-1, "TTL", "k")
	})

	subtest(t, c, "ScanCursors", func(t *testing.T, k checker) {
		k.ok("MSET", "a", 1, "b", 2, "c", 3)
		// Redis reads the cursor with strtoul: any unsigned 64-bit number, with an optional sign
		// (a negative one wraps), leading zeros, or nothing at all. A cursor the server did not
		// hand out may skip keys, but it neither fails nor loops.
		for _, cur := range []string{
			"18446744073709551615", "9223372036854775808", "9223372036854775807", "4294967296",
			"34359738368", "1", "01", "00000000000000000000000000000000000000001", "-1", "+5",
			"-18446744073709551615", "+18446744073709551615",
		} {
			for key := range scanFrom(t, k, cur) {
				if key != "a" && key != "b" && key != "c" {
					t.Fatalf("SCAN from %q returned %q", cur, key)
				}
			}
		}
		// These are all cursor 0: a full iteration.
		for _, cur := range []string{"0", "", "-0", "+0", "000"} {
			checkKeys(t, "SCAN from "+strconv.Quote(cur), scanFrom(t, k, cur), "a", "b", "c")
		}
		for _, cur := range []string{
			"18446744073709551616", "-18446744073709551616", "99999999999999999999", " 1", "1 ",
			"+", "-", "--1", "+-1", "0x10", "1.0", "1e3", "abc",
		} {
			k.err("ERR invalid cursor", "SCAN", cur)
			k.err("ERR invalid cursor", "SCAN", cur, "MATCH", "*", "COUNT", 10)
		}
	})
}

// scanFrom runs SCAN from cursor until the server answers cursor 0 and returns how often each
// key came back.
func scanFrom(t testing.TB, k checker, cursor string, args ...any) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatalf("SCAN from %q did not finish after %d calls", cursor, i)
		}
		reply := k.arr(append([]any{"SCAN", cursor}, args...)...)
		if len(reply) != 2 {
			t.Fatalf("SCAN reply has %d elements: %s", len(reply), short(reply))
		}
		next, ok := reply[0].(string)
		if !ok {
			t.Fatalf("SCAN cursor is not a bulk string: %s", short(reply[0]))
		}
		if _, err := strconv.ParseUint(next, 10, 64); err != nil {
			t.Fatalf("SCAN cursor %q is not an unsigned integer", next)
		}
		keys, ok := reply[1].([]any)
		if !ok {
			t.Fatalf("SCAN keys are not an array: %s", short(reply[1]))
		}
		for _, key := range keys {
			seen[key.(string)]++
		}
		if next == "0" {
			return seen
		}
		cursor = next
	}
}

// checkKeys checks that got holds exactly the keys want.
func checkKeys(t testing.TB, what string, got map[string]int, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got keys %q; want %q", what, mapKeys(got), want)
	}
	for _, w := range want {
		if got[w] == 0 {
			t.Fatalf("%s: got keys %q; want %q", what, mapKeys(got), want)
		}
	}
}

func mapKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// avgTTL returns db's keys, expires and avg_ttl from INFO keyspace (zeros when db has no line).
func avgTTL(t testing.TB, k checker, db int) (keys, expires, avg int64) {
	t.Helper()
	line, ok := infoFields(k.str("INFO", "keyspace"))[fmt.Sprintf("db%d", db)]
	if !ok {
		return 0, 0, 0
	}
	if _, err := fmt.Sscanf(line, "keys=%d,expires=%d,avg_ttl=%d", &keys, &expires, &avg); err != nil {
		t.Fatalf("INFO keyspace line db%d:%s: %v", db, line, err)
	}
	return keys, expires, avg
}

// wantAvgTTL checks db's INFO keyspace line now.
func wantAvgTTL(t testing.TB, k checker, db int, keys, expires, lo, hi int64) {
	t.Helper()
	gk, ge, ga := avgTTL(t, k, db)
	if gk != keys || ge != expires || ga < lo || ga > hi {
		t.Fatalf("db%d: keys=%d,expires=%d,avg_ttl=%d; want keys=%d,expires=%d,avg_ttl in [%d, %d]",
			db, gk, ge, ga, keys, expires, lo, hi)
	}
}

// waitAvgTTL waits until db's avg_ttl is within [lo, hi].
func waitAvgTTL(t testing.TB, k checker, db int, lo, hi int64) {
	t.Helper()
	var last int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, last = avgTTL(t, k, db)
		if last >= lo && last <= hi {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("db%d: avg_ttl %d after 30s; want it within [%d, %d]", db, last, lo, hi)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
