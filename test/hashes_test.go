package test

// End-to-end tests of the hash commands (HSET HSETNX HGET HMGET HMSET HDEL HLEN HSTRLEN HEXISTS
// HKEYS HVALS HGETALL HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN), of hash keys under the keyspace
// commands, transactions, restarts and kill -9, and of Lavik's own LAVIK.HREPLACE. Exact replies
// and error lines were checked against redis-server 7.0.15.
//
// Against a lavik-data without hashes these tests fail with "ERR unknown command": every reply
// is checked before a test polls or iterates on it, so an unknown command fails the test at once
// instead of hanging it.

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
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
	errHashNotInt   = "ERR hash value is not an integer"
	errHashNotFloat = "ERR hash value is not a float"
	// HINCRBYFLOAT refuses an infinite increment with this line, while INCRBYFLOAT (strings)
	// says "ERR increment would produce NaN or Infinity" for the same argument.
	errIncrNaNInf   = "ERR value is NaN or Infinity"
	errResultNaNInf = "ERR increment would produce NaN or Infinity"
	errBadCursor    = "ERR invalid cursor"
	// HRANDFIELD's count limits: LONG_MIN is refused by the range check of the count parser,
	// and with WITHVALUES a count beyond +-LONG_MAX/2 (4611686018427387903) by HRANDFIELD itself.
	errRandCountRange = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
	errRandWithValues = "ERR value is out of range"
)

// hashEncodings are the OBJECT ENCODING replies Redis 7 gives for a hash: "listpack" while it
// is small (<= 128 fields, values <= 64 bytes), "hashtable" beyond. Lavik may organise hashes
// differently; the tests only check that the reply is one of these names, so that clients
// which look at it (for example to estimate memory) see a name they know.
var hashEncodings = []string{"listpack", "hashtable"}

// flatToMap converts a flat field/value array (HGETALL, HSCAN, HRANDFIELD WITHVALUES in RESP2)
// to a map, failing on a non-string element or on a field that appears twice when unique.
func flatToMap(t testing.TB, what string, flat []any, unique bool) map[string]string {
	t.Helper()
	if len(flat)%2 != 0 {
		t.Fatalf("%s: odd number of elements (%d)", what, len(flat))
	}
	m := make(map[string]string, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		f, ok1 := flat[i].(string)
		v, ok2 := flat[i+1].(string)
		if !ok1 || !ok2 {
			t.Fatalf("%s: element %d or %d is not a string: %s", what, i, i+1, short(flat[i:i+2]))
		}
		if _, dup := m[f]; dup && unique {
			t.Fatalf("%s: field %q appears twice", what, f)
		}
		m[f] = v
	}
	return m
}

// hgetall returns HGETALL key as a map (RESP2 client).
func hgetall(t testing.TB, k checker, key string) map[string]string {
	t.Helper()
	return flatToMap(t, "HGETALL "+key, k.arr("HGETALL", key), true)
}

// checkHash checks that key holds exactly the fields want, through HGETALL and HLEN.
func checkHash(t testing.TB, k checker, key string, want map[string]string) {
	t.Helper()
	got := hgetall(t, k, key)
	if !maps.Equal(got, want) {
		t.Fatalf("HGETALL %s: %s", key, hashDiff(got, want))
	}
	k.eq(len(want), "HLEN", key)
}

// hashDiff describes how got differs from want in a few lines, whatever their sizes.
func hashDiff(got, want map[string]string) string {
	var missing, extra, wrong []string
	for f, v := range want {
		g, ok := got[f]
		switch {
		case !ok:
			missing = append(missing, f)
		case g != v:
			wrong = append(wrong, fmt.Sprintf("%q=%q (want %q)", f, trunc(g), trunc(v)))
		}
	}
	for f := range got {
		if _, ok := want[f]; !ok {
			extra = append(extra, f)
		}
	}
	first := func(s []string) []string {
		sort.Strings(s)
		return s[:min(len(s), 5)]
	}
	return fmt.Sprintf("%d fields, want %d; %d missing %q, %d extra %q, %d wrong %s",
		len(got), len(want), len(missing), first(missing), len(extra), first(extra), len(wrong), first(wrong))
}

func trunc(s string) string {
	if len(s) > 20 {
		return s[:20] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

// hsetArgs returns HSET key followed by the pairs of m, in field order.
func hsetArgs(key string, m map[string]string) []any {
	args := []any{"HSET", key}
	for _, f := range slices.Sorted(maps.Keys(m)) {
		args = append(args, f, m[f])
	}
	return args
}

// numberedFields returns n fields "<prefix><i>" with values "<valPrefix><i>".
func numberedFields(n int, prefix, valPrefix string) map[string]string {
	m := make(map[string]string, n)
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("%s%d", prefix, i)] = fmt.Sprintf("%s%d", valPrefix, i)
	}
	return m
}

// pipelineDo sends cmds through go-redis pipelines of at most batch commands and returns the
// replies; any error reply fails the test (a null reply is returned as nil). For commands that
// are not idempotent, give it a client with MaxRetries -1: go-redis resends a whole pipeline
// whose replies time out, and the server then runs every command twice.
func pipelineDo(t testing.TB, c *redis.Client, batch int, cmds [][]any) []any {
	t.Helper()
	ctx := harness.Ctx(t)
	out := make([]any, 0, len(cmds))
	for lo := 0; lo < len(cmds); lo += batch {
		pipe := c.Pipeline()
		var sent []*redis.Cmd
		for _, args := range cmds[lo:min(lo+batch, len(cmds))] {
			sent = append(sent, pipe.Do(ctx, args...))
		}
		_, _ = pipe.Exec(ctx)
		for i, cmd := range sent {
			v, err := cmd.Result()
			if err == redis.Nil {
				v, err = nil, nil
			}
			if err != nil {
				t.Fatalf("pipelined %s: %v", cmdString(cmds[lo+i]), err)
			}
			out = append(out, v)
		}
	}
	return out
}

// hscanAll iterates HSCAN key from cursor 0 until the cursor comes back as 0 and returns every
// field/value pair seen.
func hscanAll(t testing.TB, k checker, key string, args ...any) map[string]string {
	t.Helper()
	fields := map[string]string{}
	cursor := "0"
	for calls := 0; ; calls++ {
		if calls > 100000 {
			t.Fatalf("HSCAN %s did not finish after %d calls", key, calls)
		}
		reply := k.arr(append([]any{"HSCAN", key, cursor}, args...)...)
		if len(reply) != 2 {
			t.Fatalf("HSCAN reply has %d elements: %s", len(reply), short(reply))
		}
		next, ok := reply[0].(string)
		if !ok {
			t.Fatalf("HSCAN cursor is not a bulk string: %s", short(reply[0]))
		}
		if _, err := strconv.ParseUint(next, 10, 64); err != nil {
			t.Fatalf("HSCAN cursor %q is not an unsigned integer", next)
		}
		flat, ok := reply[1].([]any)
		if !ok {
			t.Fatalf("HSCAN elements are not an array: %s", short(reply[1]))
		}
		// A field may come back twice across calls (SCAN guarantees), but not with another value.
		for f, v := range flatToMap(t, "HSCAN "+key+" "+cursor, flat, false) {
			if old, ok := fields[f]; ok && old != v {
				t.Fatalf("HSCAN %s: field %q returned as %q and as %q", key, f, old, v)
			}
			fields[f] = v
		}
		if next == "0" {
			return fields
		}
		cursor = next
	}
}

// TestHashCommands checks each hash command's replies and errors on small hashes, in RESP2 and
// (where the reply type differs) RESP3.
func TestHashCommands(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "HSetHGet", func(t *testing.T, k checker) {
		k.eq(3, "HSET", "h", "a", "1", "b", "2", "c", "3")
		k.eq("1", "HGET", "h", "a")
		k.eq("3", "HGET", "h", "c")
		k.null("HGET", "h", "missing")
		k.null("HGET", "nokey", "a")
		// The reply counts only the fields that were new; existing ones are overwritten.
		k.eq(1, "HSET", "h", "a", "10", "d", "4", "b", "20")
		k.eq("10", "HGET", "h", "a")
		k.eq("20", "HGET", "h", "b")
		k.eq(0, "HSET", "h", "a", "10")
		// A field named twice in one HSET counts once; the last value wins.
		k.eq(1, "HSET", "h", "e", "x", "e", "y")
		k.eq("y", "HGET", "h", "e")
		// Empty field names and values, and binary bytes, are ordinary.
		k.eq(1, "HSET", "h", "", "")
		k.eq("", "HGET", "h", "")
		bin := "\x00\r\n\xff bin"
		k.eq(1, "HSET", "h", bin, bin+bin)
		k.eq(bin+bin, "HGET", "h", bin)
		k.eq("hash", "TYPE", "h")
		checkHash(t, k, "h", map[string]string{"a": "10", "b": "20", "c": "3", "d": "4", "e": "y", "": "", bin: bin + bin})
	})

	subtest(t, c, "HSetNX", func(t *testing.T, k checker) {
		k.eq(1, "HSETNX", "h", "a", "1")
		k.eq("hash", "TYPE", "h")
		k.eq(0, "HSETNX", "h", "a", "2")
		k.eq("1", "HGET", "h", "a")
		k.eq(1, "HSETNX", "h", "b", "2")
		checkHash(t, k, "h", map[string]string{"a": "1", "b": "2"})
	})

	subtest(t, c, "HMGetHMSet", func(t *testing.T, k checker) {
		k.ok("HMSET", "h", "a", "1", "b", "2")
		k.ok("HMSET", "h", "b", "20", "c", "3") // +OK whether fields are new or not
		k.eq([]any{"1", nil, "20", "3", "1"}, "HMGET", "h", "a", "missing", "b", "c", "a")
		k.eq([]any{nil, nil}, "HMGET", "nokey", "a", "b")
		k.eq([]any{"3"}, "HMGET", "h", "c")
		checkHash(t, k, "h", map[string]string{"a": "1", "b": "20", "c": "3"})
	})

	subtest(t, c, "HDel", func(t *testing.T, k checker) {
		k.eq(4, "HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4")
		k.eq(0, "HDEL", "h", "missing")
		k.eq(0, "HDEL", "nokey", "a")
		k.eq(2, "HDEL", "h", "a", "b", "a", "missing") // a field named twice is deleted once
		k.null("HGET", "h", "a")
		k.eq(0, "HEXISTS", "h", "b")
		checkHash(t, k, "h", map[string]string{"c": "3", "d": "4"})
		// Deleting the last field deletes the key.
		k.eq(2, "HDEL", "h", "c", "d")
		k.eq(0, "EXISTS", "h")
		k.eq("none", "TYPE", "h")
		k.eq(0, "HLEN", "h")
		k.eq([]any{}, "HGETALL", "h")
		k.eq(0, "DBSIZE")
	})

	subtest(t, c, "HLenHStrlenHExists", func(t *testing.T, k checker) {
		k.eq(3, "HSET", "h", "a", "hello", "empty", "", "n", 12345)
		k.eq(3, "HLEN", "h")
		k.eq(0, "HLEN", "nokey")
		k.eq(5, "HSTRLEN", "h", "a")
		k.eq(0, "HSTRLEN", "h", "empty")
		k.eq(5, "HSTRLEN", "h", "n") // the length of the value as written, not of a number
		k.eq(0, "HSTRLEN", "h", "missing")
		k.eq(0, "HSTRLEN", "nokey", "a")
		k.eq(1, "HEXISTS", "h", "a")
		k.eq(1, "HEXISTS", "h", "empty")
		k.eq(0, "HEXISTS", "h", "missing")
		k.eq(0, "HEXISTS", "nokey", "a")
	})

	subtest(t, c, "HKeysHValsHGetAll", func(t *testing.T, k checker) {
		want := numberedFields(50, "f", "v")
		k.eq(50, hsetArgs("h", want)...)
		keys := k.arr("HKEYS", "h")
		vals := k.arr("HVALS", "h")
		if len(keys) != 50 || len(vals) != 50 {
			t.Fatalf("HKEYS has %d elements, HVALS %d; want 50", len(keys), len(vals))
		}
		// HKEYS and HVALS of an unchanged hash walk it in the same order, as HGETALL does, so
		// clients can zip them. Redis never promises this in its documentation, but every
		// version does it and Lavik must not iterate in a random order.
		zipped := map[string]string{}
		for i := range keys {
			zipped[keys[i].(string)] = vals[i].(string)
		}
		if !maps.Equal(zipped, want) {
			t.Fatalf("HKEYS zipped with HVALS: %s", hashDiff(zipped, want))
		}
		all := k.arr("HGETALL", "h")
		for i := range keys {
			if all[2*i] != keys[i] || all[2*i+1] != vals[i] {
				t.Fatalf("HGETALL pair %d is %q=%q; HKEYS/HVALS say %q=%q", i, all[2*i], all[2*i+1], keys[i], vals[i])
			}
		}
		checkHash(t, k, "h", want)
		k.eq([]any{}, "HKEYS", "nokey")
		k.eq([]any{}, "HVALS", "nokey")
		k.eq([]any{}, "HGETALL", "nokey")
	})

	subtest(t, c, "RESP3", func(t *testing.T, k checker) {
		k3 := newChecker(t, s.ClientOpts(&redis.Options{Protocol: 3}))
		k.eq(2, "HSET", "h", "a", "1", "b", "2")
		// HGETALL is a map in RESP3; an absent key is an empty map.
		got, err := k3.do("HGETALL", "h")
		m, ok := got.(map[any]any)
		if err != nil || !ok {
			t.Fatalf("RESP3 HGETALL: got %s, %v; want a map", short(got), err)
		}
		if want := (map[any]any{"a": "1", "b": "2"}); !maps.Equal(m, want) {
			t.Fatalf("RESP3 HGETALL: got %v; want %v", m, want)
		}
		got, err = k3.do("HGETALL", "nokey")
		if m, ok := got.(map[any]any); err != nil || !ok || len(m) != 0 {
			t.Fatalf("RESP3 HGETALL of a missing key: got %s, %v; want an empty map", short(got), err)
		}
		// HRANDFIELD WITHVALUES gives [field, value] pairs in RESP3, a flat array in RESP2.
		got, err = k3.do("HRANDFIELD", "h", 2, "WITHVALUES")
		a, isArr := got.([]any)
		if err != nil || !isArr || len(a) != 2 {
			t.Fatalf("RESP3 HRANDFIELD h 2 WITHVALUES: got %s, %v", short(got), err)
		}
		seen := map[string]string{}
		for _, p := range a {
			pair, isPair := p.([]any)
			if !isPair || len(pair) != 2 {
				t.Fatalf("RESP3 HRANDFIELD WITHVALUES element %s; want a [field, value] pair", short(p))
			}
			seen[pair[0].(string)] = pair[1].(string)
		}
		if !maps.Equal(seen, map[string]string{"a": "1", "b": "2"}) {
			t.Fatalf("RESP3 HRANDFIELD h 2 WITHVALUES: %v", seen)
		}
		if got := k3.arr("HRANDFIELD", "h", -3, "WITHVALUES"); len(got) != 3 {
			t.Fatalf("RESP3 HRANDFIELD h -3 WITHVALUES: %s; want 3 pairs", short(got))
		} else {
			for _, p := range got {
				if pair, isPair := p.([]any); !isPair || len(pair) != 2 {
					t.Fatalf("RESP3 HRANDFIELD h -3 WITHVALUES element %s; want a [field, value] pair", short(p))
				}
			}
		}
		k3.eq([]any{}, "HRANDFIELD", "h", 0, "WITHVALUES")
		k3.eq([]any{}, "HRANDFIELD", "nokey", 1, "WITHVALUES")
		k3.null("HRANDFIELD", "nokey")
		// HINCRBYFLOAT stays a bulk string, not a RESP3 double.
		k3.eq("2.5", "HINCRBYFLOAT", "h", "a", "1.5")
		// HSCAN keeps its flat field/value array.
		k3.eq([]any{"0", []any{}}, "HSCAN", "nokey", 0)
		if got := hscanAll(t, k3, "h"); !maps.Equal(got, map[string]string{"a": "2.5", "b": "2"}) {
			t.Fatalf("RESP3 HSCAN: %v", got)
		}
	})

	subtest(t, c, "HIncrBy", func(t *testing.T, k checker) {
		k.eq(5, "HINCRBY", "h", "n", 5) // creates the key and the field
		k.eq("hash", "TYPE", "h")
		k.eq(2, "HINCRBY", "h", "n", -3)
		k.eq("2", "HGET", "h", "n")
		k.eq(-10, "HINCRBY", "h", "neg", -10)
		k.eq(2, "HINCRBY", "h", "n", 0)
		k.eq(6, "HSET", "h", "max", "9223372036854775800", "min", "-9223372036854775800",
			"s", "abc", "f", "1.5", "sp", " 1", "e", "")
		k.eq(int64(9223372036854775807), "HINCRBY", "h", "max", 7)
		k.err(errOverflow, "HINCRBY", "h", "max", 1)
		k.eq("9223372036854775807", "HGET", "h", "max")
		k.eq(int64(-9223372036854775808), "HINCRBY", "h", "min", -8)
		k.err(errOverflow, "HINCRBY", "h", "min", -1)
		k.eq("-9223372036854775808", "HGET", "h", "min")
		k.eq(1, "HINCRBY", "h", "max", "-9223372036854775806")
		// The stored value must be an integer by the strict rules of INCR: no spaces, no '+',
		// no leading zero, no "-0", no fraction.
		for _, v := range []string{"abc", "1.5", " 1", "", "01", "+1", "-0", "1e3", "9223372036854775808"} {
			k.eq(0, "HSET", "h", "s", v)
			k.err(errHashNotInt, "HINCRBY", "h", "s", 1)
			k.eq(v, "HGET", "h", "s")
		}
		// The increment must be an integer by the same rules.
		for _, inc := range []string{"abc", "1.5", "+1", "01", "", "9223372036854775808"} {
			k.err(errNotInt, "HINCRBY", "h", "n", inc)
			k.err(errNotInt, "HINCRBY", "nokey", "n", inc)
		}
		k.eq(0, "EXISTS", "nokey") // a refused HINCRBY creates nothing
		k.eq("2", "HGET", "h", "n")
	})

	subtest(t, c, "HIncrByFloat", func(t *testing.T, k checker) {
		k.eq("10.5", "HINCRBYFLOAT", "h", "f", "10.5") // creates the key and the field
		k.eq("hash", "TYPE", "h")
		k.eq("10.6", "HINCRBYFLOAT", "h", "f", "0.1")
		k.eq("10.6", "HGET", "h", "f")
		k.eq("5000", "HINCRBYFLOAT", "h", "e", "5.0e3") // no exponent and no ".0" in the result
		k.eq("5000.5", "HINCRBYFLOAT", "h", "e", "5e-1")
		k.eq("-1.25", "HINCRBYFLOAT", "h", "neg", "-1.25")
		k.eq("0", "HINCRBYFLOAT", "h", "z", "-0")
		// Redis adds in long double: 0.1 + 0.2 is exactly "0.3" (float64 would give
		// 0.30000000000000004).
		k.eq("0.1", "HINCRBYFLOAT", "h", "p", "0.1")
		k.eq("0.3", "HINCRBYFLOAT", "h", "p", "0.2")
		k.eq("100000000000000000000", "HINCRBYFLOAT", "h", "big", "1e20")
		k.eq(1, "HSET", "h", "i", "10")
		k.eq("10.5", "HINCRBYFLOAT", "h", "i", "0.5")
		k.eq("10", "HINCRBYFLOAT", "h", "i", "-0.5")
		k.eq(12, "HINCRBY", "h", "i", 2) // an integral result is an integer again
		k.eq(0, "HSET", "h", "f", "3.0")
		k.err(errHashNotInt, "HINCRBY", "h", "f", 1)
		k.eq("4", "HINCRBYFLOAT", "h", "f", 1)
		// Stored values are parsed more leniently than HINCRBY's integers ...
		for _, v := range []string{"01", "+1", "-0", "1e0"} {
			k.eq(1, "HSET", "h", "l"+v, v)
			k.eq(strconv.Itoa(int(mustFloat(t, v))+1), "HINCRBYFLOAT", "h", "l"+v, 1)
		}
		// ... but not without limits.
		for _, v := range []string{"abc", "", " 1", "1 ", "1.5.5", "nan"} {
			k.eq(0, "HSET", "h", "f", v)
			k.err(errHashNotFloat, "HINCRBYFLOAT", "h", "f", 1)
			k.eq(v, "HGET", "h", "f")
		}
		// An infinite increment is refused with HINCRBYFLOAT's own line; NaN does not parse.
		for _, inc := range []string{"inf", "+inf", "-inf", "Infinity"} {
			k.err(errIncrNaNInf, "HINCRBYFLOAT", "h", "i", inc)
			k.err(errIncrNaNInf, "HINCRBYFLOAT", "nokey", "i", inc)
		}
		for _, inc := range []string{"nan", "-nan", "abc", "", "1.5x", " 1"} {
			k.err(errNotFloat, "HINCRBYFLOAT", "h", "i", inc)
			k.err(errNotFloat, "HINCRBYFLOAT", "nokey", "i", inc)
		}
		k.eq(0, "EXISTS", "nokey")
		// A stored "inf" parses, but the sum would be infinite.
		k.eq(1, "HSET", "h", "inf", "inf")
		k.err(errResultNaNInf, "HINCRBYFLOAT", "h", "inf", 1)
		k.eq("inf", "HGET", "h", "inf")
		k.eq("12", "HGET", "h", "i")
	})

	subtest(t, c, "HRandField", func(t *testing.T, k checker) {
		small := map[string]string{"a": "1", "b": "2", "c": "3"}
		k.eq(3, hsetArgs("h", small)...)
		// Without a count: one field, a null for a missing key.
		distinct := map[string]bool{}
		for i := 0; i < 100; i++ {
			f := k.str("HRANDFIELD", "h")
			if _, ok := small[f]; !ok {
				t.Fatalf("HRANDFIELD h: %q is not a field", f)
			}
			distinct[f] = true
		}
		if len(distinct) < 2 { // all 100 the same: probability 3^-99
			t.Fatalf("HRANDFIELD h returned only %v in 100 calls", distinct)
		}
		k.null("HRANDFIELD", "nokey")
		// A count, even 0, makes the reply an array, empty for a missing key.
		k.eq([]any{}, "HRANDFIELD", "nokey", 5)
		k.eq([]any{}, "HRANDFIELD", "nokey", -5)
		k.eq([]any{}, "HRANDFIELD", "nokey", -5, "WITHVALUES")
		k.eq([]any{}, "HRANDFIELD", "h", 0)
		k.eq([]any{}, "HRANDFIELD", "h", 0, "WITHVALUES")

		// A positive count gives distinct fields, at most all of them.
		checkDistinct := func(h map[string]string, key string, count, want int, withValues bool) {
			t.Helper()
			args := []any{"HRANDFIELD", key, count}
			if withValues {
				args = append(args, "WITHVALUES")
			}
			reply := k.arr(args...)
			got := map[string]string{}
			if withValues {
				got = flatToMap(t, cmdString(args), reply, true)
			} else {
				for _, f := range sortedStrings(t, reply) {
					if _, dup := got[f]; dup {
						t.Fatalf("%s: field %q twice", cmdString(args), f)
					}
					got[f] = h[f]
				}
			}
			if len(got) != want {
				t.Fatalf("%s: %d fields; want %d", cmdString(args), len(got), want)
			}
			for f, v := range got {
				if hv, ok := h[f]; !ok || hv != v {
					t.Fatalf("%s: %q=%q is not in the hash", cmdString(args), f, v)
				}
			}
		}
		checkDistinct(small, "h", 2, 2, false)
		checkDistinct(small, "h", 3, 3, false)
		checkDistinct(small, "h", 10, 3, false)
		checkDistinct(small, "h", 2, 2, true)
		checkDistinct(small, "h", 10, 3, true)
		checkDistinct(small, "h", math.MaxInt64, 3, false)
		checkDistinct(small, "h", math.MaxInt64/2, 3, true)
		// Redis picks fields differently for a count well below the size, near it and above it;
		// the reply rules are the same.
		large := numberedFields(200, "f", "v")
		k.eq(200, hsetArgs("big", large)...)
		for _, count := range []int{1, 10, 60, 150, 199, 200, 500} {
			checkDistinct(large, "big", count, min(count, 200), count%2 == 0)
		}

		// A negative count gives exactly -count fields, repeats allowed.
		for _, count := range []int{-1, -2, -10, -300} {
			reply := k.arr("HRANDFIELD", "h", count)
			if len(reply) != -count {
				t.Fatalf("HRANDFIELD h %d: %d elements; want %d", count, len(reply), -count)
			}
			for _, f := range sortedStrings(t, reply) {
				if _, ok := small[f]; !ok {
					t.Fatalf("HRANDFIELD h %d: %q is not a field", count, f)
				}
			}
			flat := k.arr("HRANDFIELD", "h", count, "WITHVALUES")
			if len(flat) != -2*count {
				t.Fatalf("HRANDFIELD h %d WITHVALUES: %d elements; want %d", count, len(flat), -2*count)
			}
			for i := 0; i < len(flat); i += 2 {
				if v, ok := small[flat[i].(string)]; !ok || v != flat[i+1] {
					t.Fatalf("HRANDFIELD h %d WITHVALUES: pair %q=%q is not in the hash", count, flat[i], flat[i+1])
				}
			}
		}
		k.eq(1, "HSET", "one", "only", "x")
		k.eq([]any{"only", "only", "only", "only", "only"}, "HRANDFIELD", "one", -5)
		k.eq([]any{"only", "x", "only", "x"}, "HRANDFIELD", "one", -2, "WITHVALUES")
		k.eq([]any{"only", "x"}, "HRANDFIELD", "one", 5, "WITHVALUES")

		k.err(errNotInt, "HRANDFIELD", "h", "x")
		k.err(errNotInt, "HRANDFIELD", "h", "1.5")
		k.err(errNotInt, "HRANDFIELD", "h", "WITHVALUES") // WITHVALUES needs a count before it
		k.err(errSyntax, "HRANDFIELD", "h", 1, "foo")
		k.err(errSyntax, "HRANDFIELD", "h", 1, "WITHVALUES", "x")
		k.err(errRandCountRange, "HRANDFIELD", "h", "-9223372036854775808")
		k.err(errRandWithValues, "HRANDFIELD", "h", "-9223372036854775807", "WITHVALUES")
		k.err(errRandWithValues, "HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES")
		k.err(errRandWithValues, "HRANDFIELD", "h", "4611686018427387904", "WITHVALUES")
		k.err(errRandWithValues, "HRANDFIELD", "h", "9223372036854775807", "WITHVALUES")
	})

	subtest(t, c, "HScan", func(t *testing.T, k checker) {
		want := numberedFields(1000, "f:", "v:")
		cmds := [][]any{}
		for lo := 0; lo < 1000; lo += 100 {
			args := []any{"HSET", "h"}
			for i := lo; i < lo+100; i++ {
				f := fmt.Sprintf("f:%d", i)
				args = append(args, f, want[f])
			}
			cmds = append(cmds, args)
		}
		pipelineDo(t, c, 100, cmds)
		k.eq(1000, "HLEN", "h")
		for _, opts := range [][]any{nil, {"COUNT", 1}, {"COUNT", 10}, {"count", 1000}, {"COUNT", 100000}} {
			got := hscanAll(t, k, "h", opts...)
			if !maps.Equal(got, want) {
				t.Fatalf("HSCAN h %v: %s", opts, hashDiff(got, want))
			}
		}
		// MATCH filters fields (not values) by glob pattern.
		sub := map[string]string{}
		for f, v := range want {
			if strings.HasPrefix(f, "f:1") {
				sub[f] = v
			}
		}
		for _, opts := range [][]any{{"MATCH", "f:1*"}, {"MATCH", "f:1*", "COUNT", 50}, {"COUNT", 50, "match", "f:1*"}} {
			got := hscanAll(t, k, "h", opts...)
			if len(sub) != 111 || !maps.Equal(got, sub) {
				t.Fatalf("HSCAN h %v: %s", opts, hashDiff(got, sub))
			}
		}
		got := hscanAll(t, k, "h", "MATCH", "v:*") // values never match
		if len(got) != 0 {
			t.Fatalf("HSCAN MATCH v:*: %d fields; want 0", len(got))
		}
		got = hscanAll(t, k, "h", "MATCH", "f:99[0-2]")
		if !maps.Equal(got, map[string]string{"f:990": "v:990", "f:991": "v:991", "f:992": "v:992"}) {
			t.Fatalf("HSCAN MATCH f:99[0-2]: %v", got)
		}

		// A small hash comes back whole in one call, whatever COUNT says: Redis scans a listpack
		// in one go, and code written against Redis may issue a single HSCAN for a small hash.
		k.eq(2, "HSET", "small", "a", "1", "b", "2")
		for _, opts := range [][]any{nil, {"COUNT", 1}} {
			reply := k.arr(append([]any{"HSCAN", "small", 0}, opts...)...)
			if len(reply) != 2 || reply[0] != "0" {
				t.Fatalf("HSCAN small 0 %v: %s; want cursor 0", opts, short(reply))
			}
			if got := flatToMap(t, "HSCAN small", reply[1].([]any), true); !maps.Equal(got, map[string]string{"a": "1", "b": "2"}) {
				t.Fatalf("HSCAN small 0 %v: %v", opts, got)
			}
		}
		k.eq([]any{"0", []any{"a", "1"}}, "HSCAN", "small", 0, "MATCH", "a")
		k.eq([]any{"0", []any{}}, "HSCAN", "nokey", 0)
		k.eq([]any{"0", []any{}}, "HSCAN", "nokey", 0, "MATCH", "*", "COUNT", 10)

		k.err(errBadCursor, "HSCAN", "h", "x")
		k.err(errBadCursor, "HSCAN", "h", "18446744073709551616")
		k.err(errSyntax, "HSCAN", "h", 0, "COUNT", 0)
		k.err(errSyntax, "HSCAN", "h", 0, "COUNT", -1)
		k.err(errNotInt, "HSCAN", "h", 0, "COUNT", "x")
		k.err(errSyntax, "HSCAN", "h", 0, "MATCH")
		k.err(errSyntax, "HSCAN", "h", 0, "COUNT")
		k.err(errSyntax, "HSCAN", "h", 0, "foo")
		k.err(errSyntax, "HSCAN", "h", 0, "TYPE", "string") // SCAN's option, not HSCAN's
	})

	subtest(t, c, "Arity", func(t *testing.T, k checker) {
		k.eq(1, "HSET", "h", "a", "1")
		for _, args := range [][]any{
			{"HSET"}, {"HSET", "h"}, {"HSET", "h", "a"},
			{"HSET", "h", "a", "1", "b"}, // an odd number of field/value arguments
			{"HSET", "h", "a", "1", "b", "2", "c"},
			{"HSETNX", "h", "a"}, {"HSETNX", "h", "a", "1", "2"},
			{"HGET", "h"}, {"HGET", "h", "a", "b"},
			{"HMGET", "h"},
			{"HMSET", "h"}, {"HMSET", "h", "a"}, {"HMSET", "h", "a", "1", "b"},
			{"HDEL", "h"},
			{"HLEN"}, {"HLEN", "h", "x"},
			{"HSTRLEN", "h"}, {"HSTRLEN", "h", "a", "b"},
			{"HEXISTS", "h"}, {"HEXISTS", "h", "a", "b"},
			{"HKEYS"}, {"HKEYS", "h", "x"},
			{"HVALS"}, {"HVALS", "h", "x"},
			{"HGETALL"}, {"HGETALL", "h", "x"},
			{"HINCRBY", "h", "a"}, {"HINCRBY", "h", "a", 1, 2},
			{"HINCRBYFLOAT", "h", "a"}, {"HINCRBYFLOAT", "h", "a", 1, 2},
			{"HRANDFIELD"},
			{"HSCAN", "h"},
		} {
			k.err(errArity(strings.ToLower(args[0].(string))), args...)
		}
		k.err(errArity("hset"), "hset", "h", "a") // the name is lower case however it was sent
		checkHash(t, k, "h", map[string]string{"a": "1"})
	})

	subtest(t, c, "WrongTypeHashOnString", func(t *testing.T, k checker) {
		k.ok("SET", "s", "v")
		for _, args := range [][]any{
			{"HSET", "s", "a", "1"}, {"HSETNX", "s", "a", "1"}, {"HMSET", "s", "a", "1"},
			{"HGET", "s", "a"}, {"HMGET", "s", "a", "b"}, {"HDEL", "s", "a"},
			{"HLEN", "s"}, {"HSTRLEN", "s", "a"}, {"HEXISTS", "s", "a"},
			{"HKEYS", "s"}, {"HVALS", "s"}, {"HGETALL", "s"},
			{"HINCRBY", "s", "a", 1}, {"HINCRBYFLOAT", "s", "a", 1},
			{"HRANDFIELD", "s"}, {"HRANDFIELD", "s", 2}, {"HRANDFIELD", "s", -2, "WITHVALUES"},
			{"HSCAN", "s", 0},
		} {
			k.err(errWrongType, args...)
		}
		k.eq("v", "GET", "s")
		k.eq("string", "TYPE", "s")
	})

	subtest(t, c, "WrongTypeStringOnHash", func(t *testing.T, k checker) {
		k.eq(1, "HSET", "h", "a", "1")
		for _, args := range [][]any{
			{"GET", "h"}, {"APPEND", "h", "x"}, {"INCR", "h"}, {"DECR", "h"}, {"INCRBY", "h", 1},
			{"INCRBYFLOAT", "h", 1}, {"STRLEN", "h"}, {"SETRANGE", "h", 0, "x"},
			{"GETRANGE", "h", 0, 1}, {"GETSET", "h", "v"}, {"GETDEL", "h"}, {"GETEX", "h"},
			{"SET", "h", "v", "GET"},
		} {
			k.err(errWrongType, args...)
		}
		k.eq([]any{nil, nil}, "MGET", "h", "missing") // MGET answers nil for other types
		k.eq(0, "SETNX", "h", "v")
		k.eq(0, "MSETNX", "h", "v", "other", "v")
		checkHash(t, k, "h", map[string]string{"a": "1"})
	})

	subtest(t, c, "SetReplacesHash", func(t *testing.T, k checker) {
		k.eq(2, "HSET", "h", "a", "1", "b", "2")
		k.eq(1, "EXPIRE", "h", 100)
		k.ok("SET", "h", "v")
		k.eq("string", "TYPE", "h")
		k.eq("v", "GET", "h")
		k.eq(-1, "TTL", "h")
		k.err(errWrongType, "HGET", "h", "a")
		// And the other way round: once deleted, the name can hold a hash again.
		k.eq(1, "DEL", "h")
		k.eq(1, "HSET", "h", "c", "3")
		checkHash(t, k, "h", map[string]string{"c": "3"})
		k.ok("MSET", "h", "m")
		k.eq("string", "TYPE", "h")
	})
}

func mustFloat(t testing.TB, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestHashKeyspace checks the generic key commands on hash keys.
func TestHashKeyspace(t *testing.T) {
	s, c := startServer(t)
	db1 := s.ClientOpts(&redis.Options{DB: 1})

	subtest(t, c, "TypeAndEncoding", func(t *testing.T, k checker) {
		k.eq(1, "HSET", "small", "a", "1")
		k.eq(200, hsetArgs("many", numberedFields(200, "f", "v"))...)
		k.eq(1, "HSET", "wide", "a", strings.Repeat("x", 100))
		for _, key := range []string{"small", "many", "wide"} {
			k.eq("hash", "TYPE", key)
			if enc := k.str("OBJECT", "ENCODING", key); !slices.Contains(hashEncodings, enc) {
				t.Fatalf("OBJECT ENCODING %s: %q; want one of %q", key, enc, hashEncodings)
			}
		}
		k.null("OBJECT", "ENCODING", "nokey")
	})

	subtest(t, c, "DelUnlinkExists", func(t *testing.T, k checker) {
		for _, key := range []string{"h1", "h2", "h3"} {
			k.eq(1, "HSET", key, "f", key)
		}
		k.eq(1000, hsetArgs("big", numberedFields(1000, "f", "v"))...)
		k.eq(3, "EXISTS", "h1", "h2", "missing", "h1")
		k.eq(4, "DBSIZE")
		k.eq(1, "DEL", "h1")
		k.eq(2, "UNLINK", "h2", "h3", "missing")
		k.eq(1, "UNLINK", "big")
		k.eq(0, "EXISTS", "h1", "h2", "h3", "big")
		k.eq([]any{}, "HGETALL", "h1")
		k.eq(0, "HLEN", "big")
		k.eq(0, "DBSIZE")
	})

	subtest(t, c, "Expire", func(t *testing.T, k checker) {
		k.eq(2, "HSET", "h", "a", "1", "b", "2")
		k.eq(-1, "TTL", "h")
		k.eq(1, "EXPIRE", "h", 100)
		k.between(99, 100, "TTL", "h")
		// Changing the fields keeps the key's TTL.
		k.eq(1, "HSET", "h", "c", "3")
		k.eq(1, "HDEL", "h", "a")
		k.eq(5, "HINCRBY", "h", "n", 5)
		k.ok("HMSET", "h", "b", "20")
		k.between(99, 100, "TTL", "h")
		k.eq(1, "PERSIST", "h")
		k.eq(-1, "TTL", "h")
		k.eq(0, "PERSIST", "h")
		checkHash(t, k, "h", map[string]string{"b": "20", "c": "3", "n": "5"})

		// Deleting the last field deletes the TTL with the key.
		k.eq(1, "EXPIRE", "h", 100)
		k.eq(3, "HDEL", "h", "b", "c", "n")
		k.eq(-2, "TTL", "h")
		k.eq(1, "HSET", "h", "x", "1")
		k.eq(-1, "TTL", "h")

		// An expired hash is gone, and a new one under its name starts empty.
		k.eq(1, "PEXPIRE", "h", 100)
		k.between(1, 100, "PTTL", "h")
		harness.Eventually(t, 10*time.Second, "the hash to expire", func() bool {
			return k.int("EXISTS", "h") == 0
		})
		k.null("HGET", "h", "x")
		k.eq(0, "HLEN", "h")
		k.eq([]any{}, "HGETALL", "h")
		k.eq("none", "TYPE", "h")
		k.eq(-2, "TTL", "h")
		k.eq(1, "HSET", "h", "y", "2")
		checkHash(t, k, "h", map[string]string{"y": "2"})
		k.eq(-1, "TTL", "h")
	})

	subtest(t, c, "Rename", func(t *testing.T, k checker) {
		want := map[string]string{"a": "1", "b": "2"}
		k.eq(2, hsetArgs("src", want)...)
		k.eq(1, "EXPIRE", "src", 100)
		k.ok("RENAME", "src", "dst")
		k.eq(0, "EXISTS", "src")
		checkHash(t, k, "dst", want)
		k.between(99, 100, "TTL", "dst") // RENAME moves the TTL with the value
		// RENAME over a string replaces it with the hash.
		k.ok("SET", "str", "v")
		k.ok("RENAME", "dst", "str")
		k.eq("hash", "TYPE", "str")
		checkHash(t, k, "str", want)
		k.eq(1, "HSET", "other", "z", "9")
		k.eq(0, "RENAMENX", "str", "other")
		k.eq(1, "RENAMENX", "str", "fresh")
		checkHash(t, k, "fresh", want)
		checkHash(t, k, "other", map[string]string{"z": "9"})
	})

	subtest(t, c, "Copy", func(t *testing.T, k checker) {
		want := map[string]string{"a": "1", "b": "2"}
		k.eq(2, hsetArgs("src", want)...)
		k.eq(1, "COPY", "src", "cp")
		checkHash(t, k, "src", want)
		checkHash(t, k, "cp", want)
		// The copy is independent of its source.
		k.eq(0, "HSET", "cp", "a", "changed")
		k.eq(1, "HSET", "cp", "c", "3")
		k.eq(1, "HDEL", "src", "b")
		checkHash(t, k, "src", map[string]string{"a": "1"})
		checkHash(t, k, "cp", map[string]string{"a": "changed", "b": "2", "c": "3"})
		k.eq(0, "COPY", "src", "cp")
		k.eq("changed", "HGET", "cp", "a")
		k.eq(1, "COPY", "src", "cp", "REPLACE")
		checkHash(t, k, "cp", map[string]string{"a": "1"})
		k.eq(1, "COPY", "src", "cp", "DB", 1)
		checkHash(t, newChecker(t, db1), "cp", map[string]string{"a": "1"})
		k.eq(0, "COPY", "nokey", "cp2")
	})

	subtest(t, c, "Move", func(t *testing.T, k checker) {
		want := numberedFields(300, "f", "v")
		k.eq(300, hsetArgs("h", want)...)
		k.eq(1, "MOVE", "h", 1)
		k.eq(0, "EXISTS", "h")
		k1 := newChecker(t, db1)
		k1.eq("hash", "TYPE", "h")
		checkHash(t, k1, "h", want)
		k.eq(1, "HSET", "h", "a", "1")
		k.eq(0, "MOVE", "h", 1) // the destination has the key: nothing moves
		checkHash(t, k, "h", map[string]string{"a": "1"})
		checkHash(t, k1, "h", want)
	})

	subtest(t, c, "ScanTypeRandomKey", func(t *testing.T, k checker) {
		k.eq(1, "HSET", "h", "f", "v")
		k.eq("h", "RANDOMKEY")
		k.eq(1, "DBSIZE")
		var hashes, strs []string
		for i := 0; i < 20; i++ {
			hk, sk := fmt.Sprintf("hash:%d", i), fmt.Sprintf("str:%d", i)
			k.eq(1, "HSET", hk, "f", i)
			k.ok("SET", sk, i)
			hashes, strs = append(hashes, hk), append(strs, sk)
		}
		hashes = append(hashes, "h")
		checkKeys(t, "SCAN TYPE hash", scanAll(t, k, "TYPE", "hash", "COUNT", 5), hashes...)
		checkKeys(t, "SCAN TYPE HASH", scanAll(t, k, "TYPE", "HASH", "COUNT", 100), hashes...)
		checkKeys(t, "SCAN TYPE string", scanAll(t, k, "TYPE", "string", "COUNT", 5), strs...)
		checkKeys(t, "SCAN MATCH hash:1* TYPE hash", scanAll(t, k, "MATCH", "hash:1*", "TYPE", "hash"),
			"hash:1", "hash:10", "hash:11", "hash:12", "hash:13", "hash:14", "hash:15", "hash:16", "hash:17", "hash:18", "hash:19")
		checkKeys(t, "SCAN", scanAll(t, k), append(slices.Clone(hashes), strs...)...)
		k.eq(41, "DBSIZE")
		if got := sortedStrings(t, k.arr("KEYS", "hash:*")); len(got) != 20 {
			t.Fatalf("KEYS hash:*: %d keys; want 20", len(got))
		}
	})
}

// TestHashTransactions checks hash commands inside MULTI/EXEC and WATCH on hash keys.
func TestHashTransactions(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "MultiExec", func(t *testing.T, k checker) {
		k.ok("SET", "s", "str")
		r := dialRESP(t, s)
		got := r.txRun(
			txCmd("HSET", "h", "a", "1", "b", "2"),
			txCmd("HINCRBY", "h", "n", "5"),
			txCmd("HSET", "s", "f", "v"), // WRONGTYPE at execution; the others still apply
			txCmd("HGET", "h", "a"),
			txCmd("GET", "h"),
			txCmd("HDEL", "h", "b"),
			txCmd("HLEN", "h"),
			txCmd("HINCRBYFLOAT", "h", "n", "0.5"),
		)
		want := []any{int64(2), int64(5), respError(errWrongType), "1", respError(errWrongType), int64(1), int64(2), "5.5"}
		if !slices.EqualFunc(asSlice(t, got), want, func(a, b any) bool { return a == b }) {
			t.Fatalf("EXEC: got %s; want %s", short(got), short(want))
		}
		checkHash(t, k, "h", map[string]string{"a": "1", "n": "5.5"})
		k.eq("str", "GET", "s")

		// HGETALL inside EXEC is the same flat array as outside.
		got = r.txRun(txCmd("HSET", "h", "c", "3"), txCmd("HGETALL", "h"))
		arr := asSlice(t, got)
		if len(arr) != 2 || arr[0] != int64(1) {
			t.Fatalf("EXEC: %s", short(got))
		}
		if m := flatToMap(t, "HGETALL in EXEC", asSlice(t, arr[1]), true); !maps.Equal(m, map[string]string{"a": "1", "n": "5.5", "c": "3"}) {
			t.Fatalf("HGETALL in EXEC: %v", m)
		}

		// An arity error is found while queueing and discards the whole transaction.
		r.expect(txOK, "MULTI")
		r.expect(txQueued, "HSET", "h", "d", "4")
		r.expect(respError(errArity("hset")), "HSET", "h", "e")
		r.expect(respError(errTxAbortPrev), "EXEC")
		k.eq(0, "HEXISTS", "h", "d")
	})

	subtest(t, c, "TxPipelined", func(t *testing.T, k checker) {
		var set *redis.IntCmd
		var all *redis.MapStringStringCmd
		var incr *redis.IntCmd
		_, err := c.TxPipelined(k.ctx, func(p redis.Pipeliner) error {
			set = p.HSet(k.ctx, "h", "a", "1", "b", "2")
			incr = p.HIncrBy(k.ctx, "h", "a", 10)
			all = p.HGetAll(k.ctx, "h")
			return nil
		})
		if err != nil {
			t.Fatalf("TxPipelined: %v", err)
		}
		if set.Val() != 2 || incr.Val() != 11 || !maps.Equal(all.Val(), map[string]string{"a": "11", "b": "2"}) {
			t.Fatalf("TxPipelined: HSET %d, HINCRBY %d, HGETALL %v", set.Val(), incr.Val(), all.Val())
		}
	})

	subtest(t, c, "WatchAbortedByHSet", func(t *testing.T, k checker) {
		k.eq(2, "HSET", "h", "a", "1", "b", "2")
		w := dialRESP(t, s)
		w.expect(txOK, "WATCH", "h")
		k.eq(0, "HSET", "h", "a", "other") // another client changes a field
		w.expect(txOK, "MULTI")
		w.expect(txQueued, "HSET", "h", "a", "mine")
		w.expect(txQueued, "HSET", "h", "c", "3")
		w.expect(nil, "EXEC") // aborted: a null reply
		checkHash(t, k, "h", map[string]string{"a": "other", "b": "2"})

		// The same through go-redis's optimistic-locking helper.
		err := c.Watch(k.ctx, func(tx *redis.Tx) error {
			k.eq(1, "HSET", "h", "x", "from another client")
			_, err := tx.TxPipelined(k.ctx, func(p redis.Pipeliner) error {
				p.HSet(k.ctx, "h", "a", "mine")
				return nil
			})
			return err
		}, "h")
		if !errors.Is(err, redis.TxFailedErr) {
			t.Fatalf("Watch with a conflicting HSET: %v; want %v", err, redis.TxFailedErr)
		}
		k.eq("other", "HGET", "h", "a")
	})

	subtest(t, c, "WatchWhatCounts", func(t *testing.T, k checker) {
		// Each case changes (or not) the watched hash from another client between WATCH and EXEC.
		for _, tc := range []struct {
			name    string
			change  []any
			aborted bool
		}{
			{"HSET same value", []any{"HSET", "h", "a", "1"}, true},
			{"HSETNX existing field", []any{"HSETNX", "h", "a", "x"}, false},
			{"HDEL missing field", []any{"HDEL", "h", "missing"}, false},
			{"HDEL field", []any{"HDEL", "h", "b"}, true},
			{"HINCRBY", []any{"HINCRBY", "h", "n", 1}, true},
			{"HINCRBYFLOAT", []any{"HINCRBYFLOAT", "h", "n", "0.5"}, true},
			{"EXPIRE", []any{"EXPIRE", "h", 100}, true},
			{"DEL", []any{"DEL", "h"}, true},
			{"HSET other key", []any{"HSET", "other", "a", "1"}, false},
			{"HGETALL", []any{"HGETALL", "h"}, false},
		} {
			k.ok("FLUSHALL")
			k.eq(2, "HSET", "h", "a", "1", "b", "2")
			w := dialRESP(t, s)
			w.expect(txOK, "WATCH", "h")
			if _, err := k.do(tc.change...); err != nil && err != redis.Nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			w.expect(txOK, "MULTI")
			w.expect(txQueued, "HSET", "h", "w", "1")
			got := w.do("EXEC")
			if tc.aborted && got != nil {
				t.Fatalf("%s between WATCH and EXEC: EXEC gave %s; want the transaction aborted", tc.name, short(got))
			}
			if !tc.aborted && !slices.Equal(asSlice(t, got), []any{int64(1)}) {
				t.Fatalf("%s between WATCH and EXEC: EXEC gave %s; want [1]", tc.name, short(got))
			}
		}
	})
}

func asSlice(t testing.TB, v any) []any {
	t.Helper()
	a, ok := v.([]any)
	if !ok {
		t.Fatalf("not an array: %s", short(v))
	}
	return a
}

// largeHashValue is field i's 100-byte value in TestHashLarge.
func largeHashValue(i int) string {
	return strings.Repeat(fmt.Sprintf("%06d-", i), 15)[:100]
}

// TestHashLarge writes one hash of 20,000 fields with 100-byte values through pipelined HSETs,
// reads it back, deletes half of it and reads it again.
func TestHashLarge(t *testing.T) {
	const n = 20000
	s := harness.Start(t)
	// No retries and no deadline short enough to trigger one: a resent pipeline of HDELs would
	// find its fields gone and count 0. How fast the server is, is not this test's business.
	c := s.ClientOpts(&redis.Options{MaxRetries: -1, ReadTimeout: 2 * time.Minute})
	k := newChecker(t, c)
	want := make(map[string]string, n)
	var cmds [][]any
	for lo := 0; lo < n; lo += 10 {
		args := []any{"HSET", "big"}
		for i := lo; i < lo+10; i++ {
			f := fmt.Sprintf("field:%05d", i)
			want[f] = largeHashValue(i)
			args = append(args, f, want[f])
		}
		cmds = append(cmds, args)
	}
	var added int64
	for _, r := range pipelineDo(t, c, 500, cmds) {
		added += r.(int64)
	}
	if added != n {
		t.Fatalf("pipelined HSETs added %d fields; want %d", added, n)
	}
	k.eq(n, "HLEN", "big")
	for _, i := range []int{0, 1, 9999, 12345, n - 1} {
		k.eq(largeHashValue(i), "HGET", "big", fmt.Sprintf("field:%05d", i))
	}
	k.eq(100, "HSTRLEN", "big", "field:00007")
	k.null("HGET", "big", fmt.Sprintf("field:%05d", n))
	checkHash(t, k, "big", want)
	if enc := k.str("OBJECT", "ENCODING", "big"); !slices.Contains(hashEncodings, enc) {
		t.Fatalf("OBJECT ENCODING big: %q; want one of %q", enc, hashEncodings)
	}

	// Delete the even fields, 50 per HDEL.
	cmds = nil
	for lo := 0; lo < n; lo += 100 {
		args := []any{"HDEL", "big"}
		for i := lo; i < lo+100; i += 2 {
			f := fmt.Sprintf("field:%05d", i)
			delete(want, f)
			args = append(args, f)
		}
		cmds = append(cmds, args)
	}
	var deleted int64
	for _, r := range pipelineDo(t, c, 500, cmds) {
		deleted += r.(int64)
	}
	if deleted != n/2 {
		t.Fatalf("pipelined HDELs deleted %d fields; want %d", deleted, n/2)
	}
	k.eq(n/2, "HLEN", "big")
	k.null("HGET", "big", "field:00000")
	k.eq(0, "HEXISTS", "big", "field:12344")
	k.eq(largeHashValue(12345), "HGET", "big", "field:12345")
	checkHash(t, k, "big", want)
	got := hscanAll(t, k, "big", "COUNT", 1000)
	if !maps.Equal(got, want) {
		t.Fatalf("HSCAN after HDEL: %s", hashDiff(got, want))
	}
}

// hashModel is what each db must hold after hashWorkload: key -> fields, and the keys given a
// TTL of about an hour.
type hashModel struct {
	dbs map[int]map[string]map[string]string
	ttl map[string]bool // db 0 keys
}

// hashWorkload writes round's hashes into db 0 and db 2 with one acknowledged command at a
// time, covering the ways a hash changes (new and updated fields, deletions, counters, a hash
// emptied to nothing, deleted and recreated, renamed, moved, with a TTL, large and with large
// values), and records in m what must be there afterwards.
func hashWorkload(t *testing.T, s *harness.Server, m *hashModel, round int) {
	t.Helper()
	k := newChecker(t, s.Client())
	db0 := m.dbs[0]
	key := func(name string) string { return fmt.Sprintf("r%d:%s", round, name) }

	small := map[string]string{"a": "1", "b": "2", "c": "3"}
	k.eq(3, hsetArgs(key("small"), small)...)
	db0[key("small")] = small

	big := numberedFields(300, "f", fmt.Sprintf("r%d-v", round))
	for f, v := range big {
		k.eq(1, "HSET", key("big"), f, v)
	}
	db0[key("big")] = big

	wide := map[string]string{}
	for i := 0; i < 10; i++ {
		wide[fmt.Sprint("w", i)] = strings.Repeat(fmt.Sprint(i), 1000+i)
	}
	k.ok(append([]any{"HMSET", key("wide")}, hsetArgs("", wide)[2:]...)...)
	db0[key("wide")] = wide

	bin := "\x00\r\n\xff"
	k.eq(2, "HSET", key("odd"), "", "", bin, bin+bin)
	db0[key("odd")] = map[string]string{"": "", bin: bin + bin}

	for i := 0; i < 3; i++ {
		k.int("HINCRBY", key("counters"), "n", 5)
		k.str("HINCRBYFLOAT", key("counters"), "f", "1.5")
	}
	db0[key("counters")] = map[string]string{"n": "15", "f": "4.5"}

	edited := numberedFields(10, "e", "v")
	k.eq(10, hsetArgs(key("edited"), edited)...)
	k.eq(2, "HDEL", key("edited"), "e1", "e3")
	k.eq(0, "HSET", key("edited"), "e0", "new")
	k.eq(0, "HSETNX", key("edited"), "e2", "ignored")
	k.eq(1, "HSETNX", key("edited"), "e10", "added")
	delete(edited, "e1")
	delete(edited, "e3")
	edited["e0"], edited["e10"] = "new", "added"
	db0[key("edited")] = edited

	k.eq(2, "HSET", key("emptied"), "x", "1", "y", "2")
	k.eq(2, "HDEL", key("emptied"), "x", "y")

	k.eq(2, "HSET", key("recreated"), "a", "1", "b", "2")
	k.eq(1, "DEL", key("recreated"))
	k.eq(1, "HSET", key("recreated"), "c", "3")
	db0[key("recreated")] = map[string]string{"c": "3"}

	k.eq(1, "HSET", key("ttl"), "t", "1")
	k.eq(1, "EXPIRE", key("ttl"), 3600)
	db0[key("ttl")] = map[string]string{"t": "1"}
	m.ttl[key("ttl")] = true

	k.eq(2, "HSET", key("src"), "a", "1", "b", "2")
	k.ok("RENAME", key("src"), key("renamed"))
	db0[key("renamed")] = map[string]string{"a": "1", "b": "2"}

	k.eq(1, "HSET", key("moved"), "m", "1")
	k.eq(1, "MOVE", key("moved"), 2)
	m.dbs[2][key("moved")] = map[string]string{"m": "1"}

	// A hash of an earlier round changes in this one.
	if round > 1 {
		prev := fmt.Sprintf("r%d:small", round-1)
		k.eq(1, "HDEL", prev, "a")
		k.eq(1, "HSET", prev, "z", fmt.Sprint(round))
		delete(db0[prev], "a")
		db0[prev]["z"] = fmt.Sprint(round)
	}
}

// verifyHashModel checks that each db holds exactly the hashes of m, field for field.
func verifyHashModel(t *testing.T, s *harness.Server, m *hashModel, when string) {
	t.Helper()
	for db, keys := range m.dbs {
		k := newChecker(t, s.ClientOpts(&redis.Options{DB: db}))
		want := slices.Sorted(maps.Keys(keys))
		checkKeys(t, fmt.Sprintf("%s: db %d SCAN", when, db), scanAll(t, k, "COUNT", 1000), want...)
		for _, key := range want {
			k.eq("hash", "TYPE", key)
			if got := hgetall(t, k, key); !maps.Equal(got, keys[key]) {
				t.Fatalf("%s: db %d HGETALL %s: %s", when, db, key, hashDiff(got, keys[key]))
			}
			if m.ttl[key] && db == 0 {
				k.between(3000, 3600, "TTL", key)
			} else {
				k.eq(-1, "TTL", key)
			}
		}
	}
}

// TestHashRestart writes hashes, restarts the server cleanly and checks every field, twice.
func TestHashRestart(t *testing.T) {
	s := harness.Start(t)
	m := &hashModel{dbs: map[int]map[string]map[string]string{0: {}, 2: {}}, ttl: map[string]bool{}}
	for round := 1; round <= 2; round++ {
		hashWorkload(t, s, m, round)
		verifyHashModel(t, s, m, fmt.Sprintf("round %d before restart", round))
		s.Restart()
		verifyHashModel(t, s, m, fmt.Sprintf("round %d after restart", round))
	}
}

// TestHashKill9AppendfsyncAlways: with fsync before every reply, every acknowledged hash write
// survives kill -9, over two rounds on the same data directory. A third round has several
// clients writing concurrently right up to the kill; each acknowledged HSET must be there.
func TestHashKill9AppendfsyncAlways(t *testing.T) {
	s := harness.Start(t, "--appendfsync", "always")
	m := &hashModel{dbs: map[int]map[string]map[string]string{0: {}, 2: {}}, ttl: map[string]bool{}}
	for round := 1; round <= 2; round++ {
		hashWorkload(t, s, m, round)
		s.KillRestart()
		verifyHashModel(t, s, m, fmt.Sprintf("round %d after kill -9", round))
	}

	// Concurrent writers, each on its own hash, one field per HSET; the kill comes while they
	// write, so the field after the last acknowledged one may or may not be there.
	ctx := harness.Ctx(t)
	const writers = 4
	c := s.ClientOpts(&redis.Options{PoolSize: writers + 1, MaxRetries: -1})
	acked := make([]int, writers)
	errs := make([]error, writers)
	var total atomic.Int64
	var killed, failed atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		// One sticky connection per writer: once the kill breaks it, go-redis reports the
		// error instead of dialing the restarted server.
		conn := c.Conn()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			for i := 0; ; i++ {
				err := conn.HSet(ctx, fmt.Sprintf("live:%d", w), fmt.Sprintf("f%06d", i), largeHashValue(i)).Err()
				if err != nil {
					if !killed.Load() { // refused while the server was up, e.g. an unknown command
						errs[w] = err
						failed.Store(true)
					}
					return
				}
				acked[w] = i + 1
				total.Add(1)
			}
		}()
	}
	harness.Eventually(t, 60*time.Second, "2,000 acknowledged HSETs", func() bool {
		return total.Load() >= 2000 || failed.Load()
	})
	killed.Store(true)
	s.KillRestart()
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", w, err)
		}
	}
	k := newChecker(t, s.Client())
	for w := 0; w < writers; w++ {
		key := fmt.Sprintf("live:%d", w)
		got := hgetall(t, k, key)
		m.dbs[0][key] = got
		if len(got) != acked[w] && len(got) != acked[w]+1 {
			t.Fatalf("%s: %d fields after kill -9; %d HSETs were acknowledged", key, len(got), acked[w])
		}
		for i := 0; i < len(got); i++ {
			if v := got[fmt.Sprintf("f%06d", i)]; v != largeHashValue(i) {
				t.Fatalf("%s: field %d is %q after kill -9; want %q", key, i, trunc(v), trunc(largeHashValue(i)))
			}
		}
	}
	verifyHashModel(t, s, m, "after the concurrent round")
}

// TestHashLavikHReplace checks LAVIK.HREPLACE key field value [field value ...], which replaces
// the whole hash atomically: afterwards the hash holds exactly the given fields, and the reply
// is their number.
func TestHashLavikHReplace(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("LAVIK.HREPLACE is Lavik's own command")
	}
	s, c := startServer(t)

	subtest(t, c, "Replace", func(t *testing.T, k checker) {
		k.eq(3, "HSET", "h", "a", "1", "b", "2", "c", "3")
		k.eq(2, "LAVIK.HREPLACE", "h", "b", "20", "d", "4")
		checkHash(t, k, "h", map[string]string{"b": "20", "d": "4"})
		k.null("HGET", "h", "a")
		// On a missing key it creates the hash.
		k.eq(1, "LAVIK.HREPLACE", "new", "x", "1")
		k.eq("hash", "TYPE", "new")
		checkHash(t, k, "new", map[string]string{"x": "1"})
		k.eq(1, "lavik.hreplace", "new", "y", "2") // command names are case-insensitive
		checkHash(t, k, "new", map[string]string{"y": "2"})
		// Assumed like HSET: the last value of a repeated field wins and the reply counts the
		// fields the hash ends up with.
		k.eq(1, "LAVIK.HREPLACE", "new", "z", "1", "z", "2")
		checkHash(t, k, "new", map[string]string{"z": "2"})
		// From a small hash to a large one and back.
		large := numberedFields(1000, "f", "v")
		k.eq(1000, append([]any{"LAVIK.HREPLACE"}, hsetArgs("h", large)[1:]...)...)
		checkHash(t, k, "h", large)
		k.eq(1, "LAVIK.HREPLACE", "h", "only", "one")
		checkHash(t, k, "h", map[string]string{"only": "one"})
	})

	subtest(t, c, "Errors", func(t *testing.T, k checker) {
		k.ok("SET", "s", "v")
		k.err(errWrongType, "LAVIK.HREPLACE", "s", "a", "1")
		k.eq("v", "GET", "s")
		k.eq(1, "HSET", "h", "a", "1")
		for _, args := range [][]any{
			{"LAVIK.HREPLACE"}, {"LAVIK.HREPLACE", "h"}, {"LAVIK.HREPLACE", "h", "a"},
			{"LAVIK.HREPLACE", "h", "a", "1", "b"},
		} {
			k.err(errArity("lavik.hreplace"), args...)
		}
		checkHash(t, k, "h", map[string]string{"a": "1"})
	})

	subtest(t, c, "InMulti", func(t *testing.T, k checker) {
		k.eq(2, "HSET", "h", "a", "1", "b", "2")
		r := dialRESP(t, s)
		got := asSlice(t, r.txRun(txCmd("LAVIK.HREPLACE", "h", "c", "3"), txCmd("HLEN", "h"), txCmd("HGET", "h", "a")))
		if !slices.Equal(got, []any{int64(1), int64(1), nil}) {
			t.Fatalf("EXEC: %s", short(got))
		}
	})

	subtest(t, c, "Atomic", func(t *testing.T, k checker) {
		// A writer alternates between two full contents; readers must only ever see one of
		// them whole, never a mixture or a partly written hash.
		gens := [2]map[string]string{numberedFields(200, "a", "x"), numberedFields(150, "b", "y")}
		k.eq(200, append([]any{"LAVIK.HREPLACE"}, hsetArgs("h", gens[0])[1:]...)...)
		var done atomic.Bool
		var wg sync.WaitGroup
		var readErr error
		var mu sync.Mutex
		for r := 0; r < 3; r++ {
			rk := newChecker(t, s.Client())
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !done.Load() {
					v, err := rk.do("HGETALL", "h")
					flat, ok := v.([]any)
					if err != nil || !ok {
						mu.Lock()
						readErr = fmt.Errorf("HGETALL: %v, %v", short(v), err)
						mu.Unlock()
						return
					}
					m := map[string]string{}
					for i := 0; i+1 < len(flat); i += 2 {
						m[flat[i].(string)] = flat[i+1].(string)
					}
					if !maps.Equal(m, gens[0]) && !maps.Equal(m, gens[1]) {
						mu.Lock()
						readErr = fmt.Errorf("HGETALL saw a mixed hash of %d fields", len(m))
						mu.Unlock()
						return
					}
				}
			}()
		}
		for i := 1; i <= 300; i++ {
			g := gens[i%2]
			k.eq(len(g), append([]any{"LAVIK.HREPLACE"}, hsetArgs("h", g)[1:]...)...)
		}
		done.Store(true)
		wg.Wait()
		if readErr != nil {
			t.Fatal(readErr)
		}
	})

	// Last: the restart leaves c's pooled connections dead.
	subtest(t, c, "SurvivesRestart", func(t *testing.T, k checker) {
		k.eq(3, "HSET", "h", "a", "1", "b", "2", "c", "3")
		k.eq(2, "LAVIK.HREPLACE", "h", "c", "30", "d", "4")
		s.Restart()
		checkHash(t, newChecker(t, s.Client()), "h", map[string]string{"c": "30", "d": "4"})
	})
}
