package test

// End-to-end tests of the set commands (SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP
// SRANDMEMBER SMOVE SINTER SUNION SDIFF SINTERCARD and the STORE forms, SSCAN) and of the generic
// commands on set keys, against Redis 7 semantics. Every reply and error line was checked against
// redis-server 7.0.15 (LAVIK_TEST_SERVER=redis go test -run 'TestSet' ./...). Replies whose order
// Redis does not define are compared as sets; random replies are checked for their shape.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

const (
	// SPOP refuses a negative count, and a count that is not an integer at all, with this line;
	// SRANDMEMBER says errNotInt for the latter.
	errSetPopCount = "ERR value is out of range, must be positive"
	// SRANDMEMBER refuses LONG_MIN (it could not be negated) with the range check of its parser.
	errSetRandRange   = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
	errSetNumkeys     = "ERR numkeys should be greater than 0"
	errSetNumkeysArgs = "ERR Number of keys can't be greater than number of args"
	errSetLimit       = "ERR LIMIT can't be negative"
	errSetCursor      = "ERR invalid cursor"
)

// setEncodings are the OBJECT ENCODING replies a set may have: Redis 7.0 says "intset" for a
// small set of integers and "hashtable" otherwise; 7.2 added "listpack" for small sets of
// strings. Lavik may store sets differently; the tests only require one of these names.
var setEncodings = []string{"intset", "listpack", "hashtable"}

// setEq checks that the array reply of args holds exactly the members want, each once, in any
// order.
func setEq(t testing.TB, k checker, want []string, args ...any) {
	t.Helper()
	got := sortedStrings(t, k.arr(args...))
	w := slices.Sorted(slices.Values(want))
	if !slices.Equal(got, w) {
		t.Fatalf("%s: %s", cmdString(args), setDiff(got, w))
	}
}

// setOf returns the members of key as a Go set, checking that SMEMBERS lists each only once.
func setOf(t testing.TB, k checker, key string) map[string]bool {
	t.Helper()
	m := map[string]bool{}
	for _, e := range k.arr("SMEMBERS", key) {
		s, ok := e.(string)
		if !ok || m[s] {
			t.Fatalf("SMEMBERS %s: element %s is not a string or is repeated", key, short(e))
		}
		m[s] = true
	}
	return m
}

// setDiff describes how the sorted lists got and want differ, naming a few members of each side.
func setDiff(got, want []string) string {
	have := map[string]int{}
	for _, g := range got {
		have[g]++
	}
	var missing, extra []string
	for _, w := range want {
		if have[w] == 0 {
			missing = append(missing, strconv.Quote(w))
		} else {
			have[w]--
		}
	}
	for _, g := range got {
		if have[g] > 0 {
			extra = append(extra, strconv.Quote(g))
			have[g]--
		}
	}
	cut := func(s []string) string {
		if len(s) > 5 {
			return strings.Join(s[:5], " ") + fmt.Sprintf(" ...(%d in all)", len(s))
		}
		return strings.Join(s, " ")
	}
	return fmt.Sprintf("got %d members, want %d; missing [%s], unexpected or repeated [%s]",
		len(got), len(want), cut(missing), cut(extra))
}

// setPick checks that reply is an array of n strings, all members of universe, pairwise distinct
// when distinct is set, and returns them.
func setPick(t testing.TB, reply []any, universe map[string]bool, n int, distinct bool, what string) []string {
	t.Helper()
	if len(reply) != n {
		t.Fatalf("%s: got %d elements, want %d: %s", what, len(reply), n, short(reply))
	}
	seen := map[string]bool{}
	out := make([]string, len(reply))
	for i, e := range reply {
		s, ok := e.(string)
		if !ok || !universe[s] {
			t.Fatalf("%s: element %s is not a member", what, short(e))
		}
		if distinct && seen[s] {
			t.Fatalf("%s: member %q returned twice", what, s)
		}
		seen[s] = true
		out[i] = s
	}
	return out
}

// setNames returns n members prefix0, prefix1, ...
func setNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// setArgs returns cmd and key followed by members, as command arguments.
func setArgs(cmd, key string, members []string) []any {
	args := []any{cmd, key}
	for _, m := range members {
		args = append(args, m)
	}
	return args
}

// setKeys returns the keys of a Go set.
func setKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	return out
}

func TestSetCommands(t *testing.T) {
	_, c := startServer(t)

	subtest(t, c, "SAdd", func(t *testing.T, k checker) {
		k.eq(3, "SADD", "s", "a", "b", "c")
		k.eq(1, "SADD", "s", "a", "d", "d", "d") // a repeated new member counts once
		k.eq(0, "SADD", "s", "a", "b")
		k.eq(2, "SADD", "s", "", "e") // the empty string is a member like any other
		setEq(t, k, []string{"a", "b", "c", "d", "", "e"}, "SMEMBERS", "s")
		k.eq(6, "SCARD", "s")
		k.eq(1, "SADD", "one", "x", "x")
		k.eq("set", "TYPE", "one")
		// Changing members keeps the key's TTL.
		k.eq(1, "EXPIRE", "s", 100)
		k.eq(1, "SADD", "s", "f")
		k.between(99, 100, "TTL", "s")
	})

	subtest(t, c, "SRem", func(t *testing.T, k checker) {
		k.eq(0, "SREM", "missing", "a")
		k.eq(4, "SADD", "s", "a", "b", "c", "d")
		k.eq(1, "EXPIRE", "s", 100)
		k.eq(0, "SREM", "s", "x", "y")
		k.eq(1, "SREM", "s", "a", "a", "x") // a member named twice is removed once
		k.eq(2, "SREM", "s", "b", "c")
		k.between(99, 100, "TTL", "s")
		setEq(t, k, []string{"d"}, "SMEMBERS", "s")
		// Removing the last member removes the key.
		k.eq(1, "SREM", "s", "d", "e")
		k.eq(0, "EXISTS", "s")
		k.eq("none", "TYPE", "s")
		k.eq(-2, "TTL", "s")
		k.eq(0, "SCARD", "s")
		// A set created again afterwards starts without the old TTL.
		k.eq(1, "SADD", "s", "new")
		k.eq(-1, "TTL", "s")
	})

	subtest(t, c, "SMembersSIsMemberSCard", func(t *testing.T, k checker) {
		setEq(t, k, nil, "SMEMBERS", "missing")
		k.eq(0, "SISMEMBER", "missing", "a")
		k.eq([]any{int64(0), int64(0)}, "SMISMEMBER", "missing", "a", "b")
		k.eq(0, "SCARD", "missing")
		k.eq(3, "SADD", "s", "a", "b", "c")
		setEq(t, k, []string{"a", "b", "c"}, "SMEMBERS", "s")
		k.eq(1, "SISMEMBER", "s", "a")
		k.eq(0, "SISMEMBER", "s", "z")
		k.eq(0, "SISMEMBER", "s", "A") // members are case-sensitive
		k.eq([]any{int64(1), int64(0), int64(1), int64(1)}, "SMISMEMBER", "s", "a", "z", "c", "a")
		k.eq([]any{int64(0)}, "SMISMEMBER", "s", "")
		k.eq(3, "SCARD", "s")
		// None of the reads created or changed anything.
		k.eq(0, "EXISTS", "missing")
		k.eq(3, "SCARD", "s")
	})

	subtest(t, c, "SPop", func(t *testing.T, k checker) {
		k.null("SPOP", "missing")
		k.eq([]any{}, "SPOP", "missing", 0)
		k.eq([]any{}, "SPOP", "missing", 3)
		k.eq(0, "EXISTS", "missing")

		all := map[string]bool{"a": true, "b": true, "c": true, "d": true, "e": true}
		k.eq(5, setArgs("SADD", "s", setKeys(all))...)
		k.eq([]any{}, "SPOP", "s", 0)
		k.eq(5, "SCARD", "s")
		// Without a count: one member, removed.
		m := k.str("SPOP", "s")
		if !all[m] {
			t.Fatalf("SPOP returned %q, not a member", m)
		}
		delete(all, m)
		k.eq(0, "SISMEMBER", "s", m)
		k.eq(4, "SCARD", "s")
		// With a count: that many distinct members, removed.
		for _, p := range setPick(t, k.arr("SPOP", "s", 2), all, 2, true, "SPOP s 2") {
			delete(all, p)
		}
		setEq(t, k, setKeys(all), "SMEMBERS", "s")
		// A count beyond the size pops everything and removes the key.
		setPick(t, k.arr("SPOP", "s", 10), all, 2, true, "SPOP s 10")
		k.eq(0, "EXISTS", "s")
		k.null("SPOP", "s")

		// Popping the last member one at a time removes the key too.
		k.eq(1, "SADD", "one", "x")
		k.eq("x", "SPOP", "one")
		k.eq(0, "EXISTS", "one")
		k.eq(1, "SADD", "one", "x")
		k.eq([]any{"x"}, "SPOP", "one", 1)
		k.eq(0, "EXISTS", "one")

		// Redis picks members differently for small and large counts relative to the size; both
		// must give distinct members that are gone afterwards.
		for _, count := range []int{30, 250, 299} {
			names := setNames("m", 300)
			k.eq(300, setArgs("SADD", "big", names)...)
			before := setOf(t, k, "big")
			popped := setPick(t, k.arr("SPOP", "big", count), before, count, true, fmt.Sprintf("SPOP big %d", count))
			after := setOf(t, k, "big")
			if len(after) != 300-count {
				t.Fatalf("SPOP big %d left %d members", count, len(after))
			}
			for _, p := range popped {
				if after[p] {
					t.Fatalf("SPOP big %d returned %q but left it in the set", count, p)
				}
			}
			k.eq(1, "DEL", "big")
		}

		k.eq(2, "SADD", "s", "a", "b")
		k.err(errSetPopCount, "SPOP", "s", -1)
		k.err(errSetPopCount, "SPOP", "s", "abc")
		k.err(errSetPopCount, "SPOP", "s", "1.5")
		k.err(errSetPopCount, "SPOP", "s", "9223372036854775808")
		k.err(errSetPopCount, "SPOP", "missing", -1)
		k.err(errSyntax, "SPOP", "s", 1, 2)
		k.eq(2, "SCARD", "s")
	})

	subtest(t, c, "SRandMember", func(t *testing.T, k checker) {
		k.null("SRANDMEMBER", "missing")
		for _, n := range []int{3, -3, 0} {
			k.eq([]any{}, "SRANDMEMBER", "missing", n)
		}
		k.eq(0, "EXISTS", "missing")

		all := map[string]bool{"a": true, "b": true, "c": true}
		k.eq(3, "SADD", "s", "a", "b", "c")
		if m := k.str("SRANDMEMBER", "s"); !all[m] {
			t.Fatalf("SRANDMEMBER returned %q, not a member", m)
		}
		k.eq([]any{}, "SRANDMEMBER", "s", 0)
		setPick(t, k.arr("SRANDMEMBER", "s", 2), all, 2, true, "SRANDMEMBER s 2")
		setEq(t, k, []string{"a", "b", "c"}, "SRANDMEMBER", "s", 3)
		setEq(t, k, []string{"a", "b", "c"}, "SRANDMEMBER", "s", 100)
		// A negative count gives exactly -count members, repeats allowed. Over 100 draws from 3
		// members each shows up (missing one has probability 3*(2/3)^100).
		setPick(t, k.arr("SRANDMEMBER", "s", -1), all, 1, false, "SRANDMEMBER s -1")
		drawn := setPick(t, k.arr("SRANDMEMBER", "s", -100), all, 100, false, "SRANDMEMBER s -100")
		seen := map[string]bool{}
		for _, d := range drawn {
			seen[d] = true
		}
		if len(seen) != 3 {
			t.Fatalf("SRANDMEMBER s -100 drew only %v", setKeys(seen))
		}
		// Without a count, 200 calls see every member too.
		seen = map[string]bool{}
		for i := 0; i < 200 && len(seen) < 3; i++ {
			seen[k.str("SRANDMEMBER", "s")] = true
		}
		if len(seen) != 3 {
			t.Fatalf("200 SRANDMEMBER calls returned only %v", setKeys(seen))
		}
		// On a larger set a positive count is a distinct sample.
		names := setNames("m", 200)
		k.eq(200, setArgs("SADD", "big", names)...)
		universe := setOf(t, k, "big")
		setPick(t, k.arr("SRANDMEMBER", "big", 50), universe, 50, true, "SRANDMEMBER big 50")
		setPick(t, k.arr("SRANDMEMBER", "big", 190), universe, 190, true, "SRANDMEMBER big 190")
		setPick(t, k.arr("SRANDMEMBER", "big", -500), universe, 500, false, "SRANDMEMBER big -500")
		k.eq(200, "SCARD", "big") // nothing was removed

		k.err(errNotInt, "SRANDMEMBER", "s", "x")
		k.err(errNotInt, "SRANDMEMBER", "s", "1.5")
		k.err(errNotInt, "SRANDMEMBER", "s", "9223372036854775808")
		// Redis 7.0 refuses LONG_MIN, but takes -LONG_MAX and tries to build a reply that large:
		// never send it a huge negative count.
		k.err(errSetRandRange, "SRANDMEMBER", "s", "-9223372036854775808")
		k.err(errSyntax, "SRANDMEMBER", "s", 1, 2)
		k.err(errSyntax, "SRANDMEMBER", "s", 1, "WITHSCORES")
		k.eq(3, "SCARD", "s")
	})

	subtest(t, c, "SMove", func(t *testing.T, k checker) {
		k.eq(3, "SADD", "src", "a", "b", "c")
		k.eq(1, "SMOVE", "src", "dst", "a") // creates the destination
		k.eq("set", "TYPE", "dst")
		setEq(t, k, []string{"a"}, "SMEMBERS", "dst")
		setEq(t, k, []string{"b", "c"}, "SMEMBERS", "src")
		k.eq(0, "SMOVE", "src", "dst", "a") // no longer in the source
		k.eq(0, "SMOVE", "src", "dst", "zz")
		k.eq(0, "SMOVE", "missing", "dst", "a")
		k.eq(0, "EXISTS", "missing")
		// A member already in the destination still leaves the source.
		k.eq(1, "SADD", "dst", "b")
		k.eq(1, "SMOVE", "src", "dst", "b")
		setEq(t, k, []string{"a", "b"}, "SMEMBERS", "dst")
		setEq(t, k, []string{"c"}, "SMEMBERS", "src")
		// The same key as source and destination: 1 when the member is there, nothing changes.
		k.eq(1, "SMOVE", "src", "src", "c")
		k.eq(0, "SMOVE", "src", "src", "zz")
		setEq(t, k, []string{"c"}, "SMEMBERS", "src")
		// Moving the last member removes the source.
		k.eq(1, "EXPIRE", "dst", 100)
		k.eq(1, "SMOVE", "src", "dst", "c")
		k.eq(0, "EXISTS", "src")
		k.between(99, 100, "TTL", "dst") // the destination keeps its TTL
		setEq(t, k, []string{"a", "b", "c"}, "SMEMBERS", "dst")

		// The destination must be a set (or missing), whether or not the member is there.
		k.ok("SET", "str", "v")
		k.err(errWrongType, "SMOVE", "dst", "str", "a")
		k.err(errWrongType, "SMOVE", "dst", "str", "zz")
		k.err(errWrongType, "SMOVE", "str", "dst", "a")
		k.err(errWrongType, "SMOVE", "str", "str", "a")
		// A missing source answers 0 before the destination's type is looked at.
		k.eq(0, "SMOVE", "missing", "str", "a")
		k.eq("v", "GET", "str")
		setEq(t, k, []string{"a", "b", "c"}, "SMEMBERS", "dst")
	})

	subtest(t, c, "SInterSUnionSDiff", func(t *testing.T, k checker) {
		k.eq(4, "SADD", "s1", "a", "b", "c", "d")
		k.eq(3, "SADD", "s2", "c", "d", "e")
		k.eq(4, "SADD", "s3", "a", "c", "e", "f")
		for _, tc := range []struct {
			want []string
			args []any
		}{
			{[]string{"c", "d"}, []any{"SINTER", "s1", "s2"}},
			{[]string{"c"}, []any{"SINTER", "s1", "s2", "s3"}},
			{[]string{"a", "b", "c", "d"}, []any{"SINTER", "s1"}},
			{[]string{"a", "b", "c", "d"}, []any{"SINTER", "s1", "s1"}},
			{nil, []any{"SINTER", "s1", "missing"}},
			{nil, []any{"SINTER", "missing", "s1"}},
			{nil, []any{"SINTER", "missing"}},
			{[]string{"a", "b", "c", "d", "e"}, []any{"SUNION", "s1", "s2"}},
			{[]string{"a", "b", "c", "d", "e", "f"}, []any{"SUNION", "s1", "missing", "s2", "s3"}},
			{[]string{"c", "d", "e"}, []any{"SUNION", "s2"}},
			{nil, []any{"SUNION", "missing", "missing2"}},
			{[]string{"a", "b"}, []any{"SDIFF", "s1", "s2"}},
			{[]string{"b"}, []any{"SDIFF", "s1", "s2", "s3"}},
			{[]string{"e"}, []any{"SDIFF", "s2", "s1"}},
			{[]string{"a", "b", "c", "d"}, []any{"SDIFF", "s1", "missing"}},
			{[]string{"a", "b", "c", "d"}, []any{"SDIFF", "s1"}},
			{nil, []any{"SDIFF", "s1", "s1"}},
			{nil, []any{"SDIFF", "missing", "s1"}},
		} {
			setEq(t, k, tc.want, tc.args...)
		}
		// Integer-looking members match by their exact string.
		k.eq(3, "SADD", "i", 1, 2, 3)
		k.eq(3, "SADD", "j", "2", "3", "03")
		setEq(t, k, []string{"2", "3"}, "SINTER", "i", "j")
		setEq(t, k, []string{"1", "2", "3", "03"}, "SUNION", "i", "j")
		setEq(t, k, []string{"03"}, "SDIFF", "j", "i")
		k.eq(0, "EXISTS", "missing")
	})

	subtest(t, c, "SInterCard", func(t *testing.T, k checker) {
		k.eq(4, "SADD", "s1", "a", "b", "c", "d")
		k.eq(3, "SADD", "s2", "b", "c", "d")
		k.eq(3, "SINTERCARD", 2, "s1", "s2")
		k.eq(4, "SINTERCARD", 1, "s1")
		k.eq(3, "SINTERCARD", 2, "s2", "s2")
		k.eq(0, "SINTERCARD", 2, "s1", "missing")
		k.eq(0, "SINTERCARD", 1, "missing")
		k.eq(2, "SINTERCARD", 2, "s1", "s2", "LIMIT", 2)
		k.eq(3, "SINTERCARD", 2, "s1", "s2", "LIMIT", 3)
		k.eq(3, "SINTERCARD", 2, "s1", "s2", "LIMIT", 100)
		k.eq(3, "SINTERCARD", 2, "s1", "s2", "LIMIT", 0) // 0: no limit
		k.eq(1, "SINTERCARD", 1, "s1", "limit", 1)
		k.eq(1, "SINTERCARD", 1, "s1", "LIMIT", 5, "LIMIT", 1) // the last LIMIT wins

		k.err(errSetNumkeys, "SINTERCARD", 0, "s1")
		k.err(errSetNumkeys, "SINTERCARD", -1, "s1")
		k.err(errSetNumkeys, "SINTERCARD", "x", "s1")
		k.err(errSetNumkeys, "SINTERCARD", "1.5", "s1")
		k.err(errSetNumkeys, "SINTERCARD", "99999999999999999999", "s1")
		k.err(errSetNumkeysArgs, "SINTERCARD", 2, "s1")
		k.err(errSetNumkeysArgs, "SINTERCARD", 3, "s1", "s2")
		k.err(errSetLimit, "SINTERCARD", 1, "s1", "LIMIT", -1)
		k.err(errSetLimit, "SINTERCARD", 1, "s1", "LIMIT", "x")
		k.err(errSetLimit, "SINTERCARD", 1, "s1", "LIMIT", "1.5")
		k.err(errSetLimit, "SINTERCARD", 1, "s1", "LIMIT", "9223372036854775808")
		k.err(errSyntax, "SINTERCARD", 1, "s1", "LIMIT")
		k.err(errSyntax, "SINTERCARD", 1, "s1", "LIMIT", 1, "LIMIT")
		k.err(errSyntax, "SINTERCARD", 1, "s1", "s2")
		k.err(errSyntax, "SINTERCARD", 1, "s1", "FOO", 1)
	})

	subtest(t, c, "StoreCommands", func(t *testing.T, k checker) {
		k.eq(4, "SADD", "s1", "a", "b", "c", "d")
		k.eq(3, "SADD", "s2", "c", "d", "e")
		k.eq(2, "SINTERSTORE", "d", "s1", "s2")
		setEq(t, k, []string{"c", "d"}, "SMEMBERS", "d")
		k.eq(5, "SUNIONSTORE", "d", "s1", "s2", "missing") // replaces the previous d
		setEq(t, k, []string{"a", "b", "c", "d", "e"}, "SMEMBERS", "d")
		k.eq(2, "SDIFFSTORE", "d", "s1", "s2")
		setEq(t, k, []string{"a", "b"}, "SMEMBERS", "d")
		k.eq(3, "SUNIONSTORE", "copy", "s2")
		setEq(t, k, []string{"c", "d", "e"}, "SMEMBERS", "copy")

		// An empty result deletes the destination, whatever it held.
		for _, store := range []string{"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"} {
			k.eq(1, "SADD", "d", "x")
			k.eq(0, store, "d", "missing")
			k.eq(0, "EXISTS", "d")
			k.ok("SET", "d", "string")
			k.eq(0, store, "d", "missing", "missing2")
			k.eq(0, "EXISTS", "d")
			k.eq(0, store, "d", "missing") // and a missing destination stays missing
			k.eq(0, "EXISTS", "d")
		}
		k.eq(0, "SINTERSTORE", "d", "s1", "missing")
		k.eq(0, "SDIFFSTORE", "d", "missing", "s1")
		k.eq(0, "SDIFFSTORE", "d", "s1", "s1")
		k.eq(0, "EXISTS", "d")

		// A destination of another type is overwritten, and its TTL goes with it.
		k.ok("SET", "str", "v", "EX", 100)
		k.eq(2, "SINTERSTORE", "str", "s1", "s2")
		k.eq("set", "TYPE", "str")
		k.eq(-1, "TTL", "str")
		setEq(t, k, []string{"c", "d"}, "SMEMBERS", "str")
		k.eq(1, "SADD", "ttl", "x")
		k.eq(1, "EXPIRE", "ttl", 100)
		k.eq(5, "SUNIONSTORE", "ttl", "s1", "s2")
		k.eq(-1, "TTL", "ttl")
		// The destination may be one of the sources.
		k.eq(2, "SINTERSTORE", "s1", "s1", "s2")
		setEq(t, k, []string{"c", "d"}, "SMEMBERS", "s1")
		k.eq(3, "SUNIONSTORE", "s1", "s1", "s2")
		setEq(t, k, []string{"c", "d", "e"}, "SMEMBERS", "s1")
		k.eq(0, "SDIFFSTORE", "s1", "s1", "s2")
		k.eq(0, "EXISTS", "s1")
		// A source of another type fails the command and leaves the destination alone.
		k.ok("SET", "notset", "v")
		k.eq(1, "SADD", "keep", "k")
		for _, store := range []string{"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"} {
			k.err(errWrongType, store, "keep", "s2", "notset")
			k.err(errWrongType, store, "keep", "missing", "notset")
		}
		setEq(t, k, []string{"k"}, "SMEMBERS", "keep")
	})

	subtest(t, c, "IntegerMembers", func(t *testing.T, k checker) {
		// Members that look like integers are strings to SADD: only the exact bytes match.
		members := []string{"1", "-5", "007", "+1", "01", "0", "-0", "1.0", " 1",
			"9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551616"}
		k.eq(len(members), setArgs("SADD", "n", members)...)
		k.eq(0, "SADD", "n", "1", "007", "-0")
		k.eq(len(members), "SCARD", "n")
		setEq(t, k, members, "SMEMBERS", "n")
		k.eq([]any{int64(1), int64(1), int64(0), int64(0)}, "SMISMEMBER", "n", "-5", "007", "7", "-05")
		// An all-integer set, as Redis keeps in its intset encoding, behaves the same.
		k.eq(4, "SADD", "i", 3, 1, 2, -5)
		k.eq(0, "SISMEMBER", "i", "01")
		k.eq(0, "SISMEMBER", "i", "+1")
		k.eq(0, "SISMEMBER", "i", "1.0")
		k.eq(1, "SISMEMBER", "i", "-5")
		k.eq(0, "SREM", "i", "01", "+1")
		setEq(t, k, []string{"1", "2", "3", "-5"}, "SMEMBERS", "i")
		// Adding a non-integer member to it changes nothing for the integers already there.
		k.eq(2, "SADD", "i", "01", "x")
		setEq(t, k, []string{"1", "2", "3", "-5", "01", "x"}, "SMEMBERS", "i")
		k.eq(1, "SREM", "i", "1")
		k.eq([]any{int64(0), int64(1)}, "SMISMEMBER", "i", "1", "01")
		k.eq(5, "SCARD", "i")
	})

	subtest(t, c, "BinaryMembers", func(t *testing.T, k checker) {
		all := make([]byte, 256)
		for i := range all {
			all[i] = byte(i)
		}
		members := []string{"", "\x00", "a\x00b", "\r\n", "line1\r\nline2", "$5\r\nhello\r\n",
			"*1\r\n", "-ERR x", "\xff\xfe", string(all), strings.Repeat("long", 1000)}
		k.eq(len(members), setArgs("SADD", "bin", members)...)
		setEq(t, k, members, "SMEMBERS", "bin")
		for _, m := range members {
			k.eq(1, "SISMEMBER", "bin", m)
		}
		k.eq(0, "SISMEMBER", "bin", "a")
		k.eq(0, "SISMEMBER", "bin", "\x00\x00")
		k.eq(1, "SREM", "bin", "\x00")
		k.eq(len(members)-1, "SCARD", "bin")
		k.eq(1, "SADD", "\x00key\r\n", "v") // binary key names too
		setEq(t, k, []string{"v"}, "SMEMBERS", "\x00key\r\n")
	})

	subtest(t, c, "Arity", func(t *testing.T, k checker) {
		for _, args := range [][]any{
			{"SADD"}, {"SADD", "s"}, {"SREM"}, {"SREM", "s"},
			{"SMEMBERS"}, {"SMEMBERS", "s", "t"}, {"SISMEMBER", "s"}, {"SISMEMBER", "s", "a", "b"},
			{"SMISMEMBER"}, {"SMISMEMBER", "s"}, {"SCARD"}, {"SCARD", "s", "t"},
			{"SPOP"}, {"SRANDMEMBER"}, {"SMOVE", "s", "d"}, {"SMOVE", "s", "d", "a", "b"},
			{"SINTER"}, {"SUNION"}, {"SDIFF"}, {"SINTERCARD"}, {"SINTERCARD", 1},
			{"SINTERSTORE"}, {"SINTERSTORE", "d"}, {"SUNIONSTORE", "d"}, {"SDIFFSTORE", "d"},
			{"SSCAN"}, {"SSCAN", "s"},
		} {
			k.err(errArity(strings.ToLower(args[0].(string))), args...)
		}
		k.eq(0, "EXISTS", "s") // SADD s refused by its arity created nothing
	})

	subtest(t, c, "WrongTypeString", func(t *testing.T, k checker) {
		k.ok("SET", "str", "v")
		k.eq(2, "SADD", "s", "a", "b")
		for _, args := range [][]any{
			{"SADD", "str", "a"}, {"SREM", "str", "a"}, {"SMEMBERS", "str"},
			{"SISMEMBER", "str", "a"}, {"SMISMEMBER", "str", "a"}, {"SCARD", "str"},
			{"SPOP", "str"}, {"SPOP", "str", 0}, {"SPOP", "str", 2},
			{"SRANDMEMBER", "str"}, {"SRANDMEMBER", "str", 0}, {"SRANDMEMBER", "str", -2},
			{"SINTER", "str"}, {"SINTER", "s", "str"}, {"SINTER", "missing", "str"}, {"SINTER", "str", "missing"},
			{"SUNION", "s", "str"}, {"SUNION", "missing", "str"},
			{"SDIFF", "str", "s"}, {"SDIFF", "s", "str"}, {"SDIFF", "missing", "str"},
			{"SINTERCARD", 1, "str"}, {"SINTERCARD", 2, "s", "str"}, {"SINTERCARD", 2, "missing", "str"},
			{"SINTERSTORE", "d", "str"}, {"SINTERSTORE", "d", "missing", "str"},
			{"SUNIONSTORE", "d", "s", "str"}, {"SDIFFSTORE", "d", "missing", "str"},
			{"SSCAN", "str", 0}, {"SSCAN", "str", 0, "COUNT", 0}, // the type is checked before the options
			{"SMOVE", "str", "s", "a"}, {"SMOVE", "s", "str", "a"},
		} {
			k.err(errWrongType, args...)
		}
		// Argument errors that Redis reports before looking at the key.
		k.err(errSetPopCount, "SPOP", "str", -1)
		k.err(errNotInt, "SRANDMEMBER", "str", "x")
		k.err(errSetCursor, "SSCAN", "str", "x")
		k.err(errSetLimit, "SINTERCARD", 1, "str", "LIMIT", -1)
		k.eq("v", "GET", "str")
		k.eq(0, "EXISTS", "d")
		setEq(t, k, []string{"a", "b"}, "SMEMBERS", "s")

		// String commands on a set key.
		for _, args := range [][]any{
			{"GET", "s"}, {"APPEND", "s", "x"}, {"INCR", "s"}, {"DECR", "s"}, {"INCRBY", "s", 1},
			{"DECRBY", "s", 1}, {"INCRBYFLOAT", "s", 1}, {"STRLEN", "s"}, {"GETRANGE", "s", 0, 1},
			{"SETRANGE", "s", 0, "x"}, {"GETSET", "s", "v"}, {"GETDEL", "s"}, {"GETEX", "s"},
			{"SET", "s", "v", "GET"},
		} {
			k.err(errWrongType, args...)
		}
		k.eq([]any{nil, "v"}, "MGET", "s", "str") // MGET answers nil for a key of another type
		k.eq(0, "SETNX", "s", "v")
		setEq(t, k, []string{"a", "b"}, "SMEMBERS", "s")
		// A plain SET replaces the set.
		k.ok("SET", "s", "v")
		k.eq("string", "TYPE", "s")
		k.eq("v", "GET", "s")
	})

	subtest(t, c, "WrongTypeHash", func(t *testing.T, k checker) {
		k.eq(1, "HSET", "h", "f", "v")
		k.eq(1, "SADD", "s", "a")
		for _, args := range [][]any{
			{"SADD", "h", "a"}, {"SREM", "h", "a"}, {"SMEMBERS", "h"}, {"SISMEMBER", "h", "a"},
			{"SMISMEMBER", "h", "a"}, {"SCARD", "h"}, {"SPOP", "h"}, {"SRANDMEMBER", "h", 2},
			{"SINTER", "s", "h"}, {"SUNION", "h"}, {"SDIFF", "s", "h"}, {"SINTERCARD", 2, "s", "h"},
			{"SDIFFSTORE", "d", "s", "h"}, {"SSCAN", "h", 0}, {"SMOVE", "s", "h", "a"}, {"SMOVE", "h", "s", "a"},
			{"HGET", "s", "f"}, {"HSET", "s", "f", "v"}, {"HGETALL", "s"},
		} {
			k.err(errWrongType, args...)
		}
		k.eq("hash", "TYPE", "h")
		k.eq("v", "HGET", "h", "f")
		setEq(t, k, []string{"a"}, "SMEMBERS", "s")
		k.eq(1, "SUNIONSTORE", "h", "s") // a STORE destination of any type is overwritten
		k.eq("set", "TYPE", "h")
	})
}

// TestSetRESP3 checks the reply types of the set commands after HELLO 3 (SMEMBERS, SINTER,
// SUNION, SDIFF and SPOP with a count reply with a RESP3 set; SRANDMEMBER with a count, SMISMEMBER
// and SSCAN with arrays) and in RESP2, on the wire and through go-redis with Protocol 3.
func TestSetRESP3(t *testing.T) {
	s, c := startServer(t)
	k := newChecker(t, c)
	k.eq(3, "SADD", "s", "a", "b", "c")
	k.eq(2, "SADD", "t", "b", "x")

	w := dialWire(t, s)
	// members checks that r is an aggregate of kind with bulk-string elements equal to want as
	// a set.
	members := func(r wireReply, kind byte, want []string, what string) {
		t.Helper()
		if r.Kind != kind {
			t.Fatalf("%s: got %v; want a reply of type %q", what, r, kind)
		}
		got := make([]string, len(r.Elems))
		for i, e := range r.Elems {
			if e.Kind != '$' {
				t.Fatalf("%s: element %v is not a bulk string", what, e)
			}
			got[i] = e.Str
		}
		slices.Sort(got)
		if w := slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
			t.Fatalf("%s: %s", what, setDiff(got, w))
		}
	}

	// RESP2 first: every aggregate is an array, a missing single member a null bulk.
	members(w.do("SMEMBERS", "s"), '*', []string{"a", "b", "c"}, "RESP2 SMEMBERS")
	members(w.do("SPOP", "missing", "2"), '*', nil, "RESP2 SPOP missing 2")
	w.expectDo(wNil(), "SPOP", "missing")
	w.expectDo(wNil(), "SRANDMEMBER", "missing")

	if h := w.do("HELLO", "3"); h.Kind != '%' {
		t.Fatalf("HELLO 3: %v", h)
	}
	null := wireReply{Kind: '_', Null: true}
	members(w.do("SMEMBERS", "s"), '~', []string{"a", "b", "c"}, "SMEMBERS")
	members(w.do("SMEMBERS", "missing"), '~', nil, "SMEMBERS missing")
	members(w.do("SINTER", "s", "t"), '~', []string{"b"}, "SINTER")
	members(w.do("SINTER", "s", "missing"), '~', nil, "SINTER with a missing key")
	members(w.do("SUNION", "s", "t"), '~', []string{"a", "b", "c", "x"}, "SUNION")
	members(w.do("SDIFF", "s", "t"), '~', []string{"a", "c"}, "SDIFF")
	members(w.do("SDIFF", "missing"), '~', nil, "SDIFF missing")
	members(w.do("SPOP", "s", "0"), '~', nil, "SPOP s 0")
	members(w.do("SPOP", "missing", "2"), '~', nil, "SPOP missing 2")
	w.expectDo(null, "SPOP", "missing")
	w.expectDo(null, "SRANDMEMBER", "missing")
	// SRANDMEMBER with a count replies with an array even when the members are distinct.
	members(w.do("SRANDMEMBER", "s", "3"), '*', []string{"a", "b", "c"}, "SRANDMEMBER s 3")
	members(w.do("SRANDMEMBER", "s", "0"), '*', nil, "SRANDMEMBER s 0")
	members(w.do("SRANDMEMBER", "missing", "2"), '*', nil, "SRANDMEMBER missing 2")
	members(w.do("SRANDMEMBER", "missing", "-2"), '*', nil, "SRANDMEMBER missing -2")
	if r := w.do("SRANDMEMBER", "t", "-4"); r.Kind != '*' || len(r.Elems) != 4 {
		t.Fatalf("SRANDMEMBER t -4: %v", r)
	}
	// Membership tests stay integers, not RESP3 booleans.
	w.expectDo(wInt(1), "SISMEMBER", "s", "a")
	w.expectDo(wArr(wInt(1), wInt(0)), "SMISMEMBER", "s", "a", "zz")
	w.expectDo(wInt(1), "SINTERCARD", "2", "s", "t")
	if r := w.do("SSCAN", "s", "0", "COUNT", "100"); r.Kind != '*' || len(r.Elems) != 2 ||
		!r.Elems[0].equal(wBulk("0")) {
		t.Fatalf("SSCAN: want an array of the cursor \"0\" and the members, got %v", r)
	} else {
		members(r.Elems[1], '*', []string{"a", "b", "c"}, "SSCAN members")
	}
	// SPOP with a count removes what it returns, in a RESP3 set.
	popped := w.do("SPOP", "t", "5")
	members(popped, '~', []string{"b", "x"}, "SPOP t 5")
	w.expectDo(wInt(0), "EXISTS", "t")
	// Inside EXEC the elements keep their types.
	w.expectDo(wOK, "MULTI")
	w.expectDo(wStatus("QUEUED"), "SMEMBERS", "s")
	w.expectDo(wStatus("QUEUED"), "SCARD", "s")
	if r := w.do("EXEC"); r.Kind != '*' || len(r.Elems) != 2 || !r.Elems[1].equal(wInt(3)) {
		t.Fatalf("EXEC: %v", r)
	} else {
		members(r.Elems[0], '~', []string{"a", "b", "c"}, "SMEMBERS in EXEC")
	}

	// go-redis decodes the RESP3 set like an array.
	ctx := harness.Ctx(t)
	c3 := s.ClientOpts(&redis.Options{Protocol: 3})
	k3 := newChecker(t, c3)
	setEq(t, k3, []string{"a", "b", "c"}, "SMEMBERS", "s")
	setEq(t, k3, nil, "SMEMBERS", "missing")
	got, err := c3.SMembers(ctx, "s").Result()
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("SMembers over RESP3: %q, %v", got, err)
	}
	k3.eq(2, "SADD", "t", "b", "x")
	if got, err := c3.SInter(ctx, "s", "t").Result(); err != nil || !slices.Equal(got, []string{"b"}) {
		t.Fatalf("SInter over RESP3: %q, %v", got, err)
	}
	if got, err := c3.SMIsMember(ctx, "s", "a", "zz").Result(); err != nil || !slices.Equal(got, []bool{true, false}) {
		t.Fatalf("SMIsMember over RESP3: %v, %v", got, err)
	}
	if got, err := c3.SPopN(ctx, "t", 1).Result(); err != nil || len(got) != 1 {
		t.Fatalf("SPopN over RESP3: %q, %v", got, err)
	}
	if err := c3.SPop(ctx, "missing").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("SPop of a missing key over RESP3: %v; want redis.Nil", err)
	}
	if got, err := c3.SRandMemberN(ctx, "s", -5).Result(); err != nil || len(got) != 5 {
		t.Fatalf("SRandMemberN over RESP3: %q, %v", got, err)
	}
	if keys, cursor, err := c3.SScan(ctx, "s", 0, "*", 100).Result(); err != nil || cursor != 0 || len(keys) != 3 {
		t.Fatalf("SScan over RESP3: %q, %d, %v", keys, cursor, err)
	}
}

// TestSetSScan iterates sets with SSCAN: a 1000-member set in full with each COUNT, with MATCH,
// while other members come and go, and the argument errors.
func TestSetSScan(t *testing.T) {
	_, c := startServer(t)

	// sscan iterates key from cursor 0 to 0 and returns how often each member came back and the
	// number of calls; a call with more than maxBatch members fails the test.
	sscan := func(t *testing.T, k checker, key string, maxBatch int, between func(), args ...any) (map[string]int, int) {
		t.Helper()
		seen := map[string]int{}
		cursor := "0"
		for calls := 1; ; calls++ {
			if calls > 100000 {
				t.Fatalf("SSCAN %s did not return to cursor 0 after %d calls", key, calls)
			}
			reply := k.arr(append([]any{"SSCAN", key, cursor}, args...)...)
			if len(reply) != 2 {
				t.Fatalf("SSCAN reply has %d elements: %s", len(reply), short(reply))
			}
			next, ok := reply[0].(string)
			if _, err := strconv.ParseUint(next, 10, 64); !ok || err != nil {
				t.Fatalf("SSCAN cursor %s is not an unsigned integer", short(reply[0]))
			}
			batch, ok := reply[1].([]any)
			if !ok {
				t.Fatalf("SSCAN members are not an array: %s", short(reply[1]))
			}
			if maxBatch > 0 && len(batch) > maxBatch {
				t.Fatalf("SSCAN %s %s returned %d members in one call; want at most %d",
					key, cmdString(args), len(batch), maxBatch)
			}
			for _, m := range batch {
				s, ok := m.(string)
				if !ok {
					t.Fatalf("SSCAN member %s is not a string", short(m))
				}
				seen[s]++
			}
			if next == "0" {
				return seen, calls
			}
			cursor = next
			if between != nil {
				between()
			}
		}
	}
	// covers checks that seen holds exactly the members want (repeats allowed, as SSCAN may
	// return a member more than once).
	covers := func(t *testing.T, seen map[string]int, want []string, what string) {
		t.Helper()
		got := make([]string, 0, len(seen))
		for m := range seen {
			got = append(got, m)
		}
		slices.Sort(got)
		if w := slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
			t.Fatalf("%s: %s", what, setDiff(got, w))
		}
	}
	names := setNames("m:", 1000)
	fill := func(k checker) {
		for lo := 0; lo < len(names); lo += 250 {
			k.eq(250, setArgs("SADD", "big", names[lo:lo+250])...)
		}
	}

	subtest(t, c, "Full", func(t *testing.T, k checker) {
		fill(k)
		seen, calls := sscan(t, k, "big", 0, nil)
		covers(t, seen, names, "SSCAN big")
		// The default COUNT is 10: a 1000-member set takes many calls (Redis: 96, at most 13
		// members each). COUNT is only a hint, but a server that ignores it sends a large set in
		// one reply, which is what SSCAN exists to avoid; the bounds here are loose on purpose.
		if calls < 10 {
			t.Fatalf("SSCAN of 1000 members with the default COUNT took %d calls; want at least 10", calls)
		}
		seen, calls = sscan(t, k, "big", 100, nil, "COUNT", 10)
		covers(t, seen, names, "SSCAN big COUNT 10")
		if calls < 10 {
			t.Fatalf("SSCAN COUNT 10 of 1000 members took %d calls; want at least 10", calls)
		}
		seen, _ = sscan(t, k, "big", 0, nil, "COUNT", 1)
		covers(t, seen, names, "SSCAN big COUNT 1")
		seen, _ = sscan(t, k, "big", 0, nil, "count", 100)
		covers(t, seen, names, "SSCAN big COUNT 100")
		// A COUNT above the size returns the whole set in one call.
		seen, calls = sscan(t, k, "big", 0, nil, "COUNT", 5000)
		covers(t, seen, names, "SSCAN big COUNT 5000")
		if calls != 1 {
			t.Fatalf("SSCAN COUNT 5000 of 1000 members took %d calls; want 1", calls)
		}
		k.eq(1000, "SCARD", "big") // SSCAN changed nothing
	})

	subtest(t, c, "Match", func(t *testing.T, k checker) {
		fill(k)
		var want []string
		for _, n := range names {
			if strings.HasPrefix(n, "m:1") {
				want = append(want, n)
			}
		}
		seen, _ := sscan(t, k, "big", 0, nil, "MATCH", "m:1*")
		covers(t, seen, want, "SSCAN MATCH m:1*")
		seen, _ = sscan(t, k, "big", 0, nil, "MATCH", "m:1*", "COUNT", 1000)
		covers(t, seen, want, "SSCAN MATCH m:1* COUNT 1000")
		seen, _ = sscan(t, k, "big", 0, nil, "COUNT", 50, "match", "m:?5")
		covers(t, seen, []string{"m:15", "m:25", "m:35", "m:45", "m:55", "m:65", "m:75", "m:85", "m:95"},
			"SSCAN COUNT 50 MATCH m:?5")
		seen, _ = sscan(t, k, "big", 0, nil, "MATCH", "nothing*")
		covers(t, seen, nil, "SSCAN MATCH nothing*")
		seen, _ = sscan(t, k, "big", 0, nil, "MATCH", "m:999")
		covers(t, seen, []string{"m:999"}, "SSCAN MATCH m:999")
		// An all-integer set and a small one iterate the same way.
		k.eq(5, "SADD", "ints", 10, 11, 12, 20, 200)
		seen, _ = sscan(t, k, "ints", 0, nil, "MATCH", "1*")
		covers(t, seen, []string{"10", "11", "12"}, "SSCAN ints MATCH 1*")
		seen, _ = sscan(t, k, "ints", 0, nil, "COUNT", 1)
		covers(t, seen, []string{"10", "11", "12", "20", "200"}, "SSCAN ints COUNT 1")
		k.eq(3, "SADD", "small", "a", "b", "c")
		seen, _ = sscan(t, k, "small", 0, nil, "COUNT", 1)
		covers(t, seen, []string{"a", "b", "c"}, "SSCAN small COUNT 1")
	})

	subtest(t, c, "WhileChanging", func(t *testing.T, k checker) {
		// Members present for the whole iteration are all returned, while others are added and
		// removed between the calls.
		fill(k)
		gone := setNames("y:", 200)
		k.eq(200, setArgs("SADD", "big", gone)...)
		step := 0
		between := func() {
			if step < len(gone) {
				k.eq(1, "SREM", "big", gone[step])
				k.eq(3, "SADD", "big", fmt.Sprintf("x:%d:a", step), fmt.Sprintf("x:%d:b", step), fmt.Sprintf("x:%d:c", step))
			}
			step++
		}
		seen, _ := sscan(t, k, "big", 0, between, "COUNT", 10)
		for _, n := range names {
			if seen[n] == 0 {
				t.Fatalf("SSCAN during changes missed %q, a member all along", n)
			}
		}
		for m := range seen {
			if !strings.HasPrefix(m, "m:") && !strings.HasPrefix(m, "x:") && !strings.HasPrefix(m, "y:") {
				t.Fatalf("SSCAN returned %q, never a member", m)
			}
		}
	})

	subtest(t, c, "Errors", func(t *testing.T, k checker) {
		k.eq([]any{"0", []any{}}, "SSCAN", "missing", 0)
		k.eq([]any{"0", []any{}}, "SSCAN", "missing", 0, "MATCH", "*", "COUNT", 10)
		k.eq(2, "SADD", "s", "a", "b")
		k.err(errSetCursor, "SSCAN", "s", "x")
		k.err(errSetCursor, "SSCAN", "s", "1.5")
		k.err(errSetCursor, "SSCAN", "s", "18446744073709551616")
		k.err(errSetCursor, "SSCAN", "missing", "x")
		k.err(errSyntax, "SSCAN", "s", 0, "COUNT", 0)
		k.err(errSyntax, "SSCAN", "s", 0, "COUNT", -1)
		k.err(errNotInt, "SSCAN", "s", 0, "COUNT", "x")
		k.err(errNotInt, "SSCAN", "s", 0, "COUNT", "1.5")
		k.err(errSyntax, "SSCAN", "s", 0, "COUNT")
		k.err(errSyntax, "SSCAN", "s", 0, "MATCH")
		k.err(errSyntax, "SSCAN", "s", 0, "FOO")
		k.err(errSyntax, "SSCAN", "s", 0, "TYPE", "set") // TYPE is SCAN's option only
	})
}

// TestSetKeyspace checks the generic commands on set keys: TYPE, OBJECT ENCODING, DEL, EXISTS,
// expiry, RENAME, COPY, MOVE and SCAN TYPE.
func TestSetKeyspace(t *testing.T) {
	s, c := startServer(t)
	db1 := s.ClientOpts(&redis.Options{DB: 1})

	subtest(t, c, "TypeEncodingDelExists", func(t *testing.T, k checker) {
		k.eq(3, "SADD", "ints", 1, 2, 3)
		k.eq(2, "SADD", "strs", "a", "b")
		k.eq(1000, setArgs("SADD", "big", setNames("m", 1000))...)
		k.eq(600, setArgs("SADD", "manyints", setNames("", 600))...)
		for _, key := range []string{"ints", "strs", "big", "manyints"} {
			k.eq("set", "TYPE", key)
			if enc := k.str("OBJECT", "ENCODING", key); !slices.Contains(setEncodings, enc) {
				t.Fatalf("OBJECT ENCODING %s: %q; want one of %q", key, enc, setEncodings)
			}
		}
		k.eq(2, "EXISTS", "ints", "strs")
		k.eq(3, "EXISTS", "ints", "ints", "big", "missing")
		k.ok("SET", "str", "v")
		k.eq(3, "DEL", "ints", "str", "missing", "big")
		k.eq(0, "EXISTS", "ints", "big")
		k.eq("none", "TYPE", "ints")
		k.null("OBJECT", "ENCODING", "ints")
		k.eq(0, "SCARD", "ints")
		k.eq(1, "UNLINK", "strs")
		k.eq(1, "DBSIZE")
		// A deleted set comes back empty, without its old members.
		k.eq(1, "SADD", "ints", 9)
		setEq(t, k, []string{"9"}, "SMEMBERS", "ints")
	})

	subtest(t, c, "Expire", func(t *testing.T, k checker) {
		k.eq(2, "SADD", "e", "a", "b")
		k.eq(-1, "TTL", "e")
		k.eq(1, "EXPIRE", "e", 100)
		k.between(99, 100, "TTL", "e")
		k.eq(1, "PERSIST", "e")
		k.eq(-1, "TTL", "e")
		k.eq(1, "PEXPIRE", "e", 100)
		harness.Eventually(t, 10*time.Second, "the set to expire", func() bool {
			return k.int("EXISTS", "e") == 0
		})
		k.eq(-2, "TTL", "e")
		k.eq("none", "TYPE", "e")
		setEq(t, k, nil, "SMEMBERS", "e")
		k.eq(0, "SCARD", "e")
		k.eq(0, "SISMEMBER", "e", "a")
		k.null("SPOP", "e")
		// SADD after the expiry starts a new set without a TTL.
		k.eq(1, "SADD", "e", "c")
		k.eq(-1, "TTL", "e")
		setEq(t, k, []string{"c"}, "SMEMBERS", "e")
		// A set that expires while only its members are read is gone for those reads too.
		k.eq(1, "SADD", "r", "x")
		k.eq(1, "PEXPIRE", "r", 100)
		harness.Eventually(t, 10*time.Second, "SCARD of the expiring set to drop to 0", func() bool {
			return k.int("SCARD", "r") == 0
		})
		k.eq(0, "SISMEMBER", "r", "x")
		k.eq(0, "EXISTS", "r")
		// An expiry in the past deletes the set at once.
		k.eq(1, "SADD", "p", "x")
		k.eq(1, "EXPIREAT", "p", 1)
		k.eq(0, "EXISTS", "p")
	})

	subtest(t, c, "Rename", func(t *testing.T, k checker) {
		k.eq(2, "SADD", "a", "x", "y")
		k.eq(1, "EXPIRE", "a", 100)
		k.ok("RENAME", "a", "b")
		k.eq(0, "EXISTS", "a")
		setEq(t, k, []string{"x", "y"}, "SMEMBERS", "b")
		k.between(99, 100, "TTL", "b")
		// Onto a key of another type: replaced, with the source's TTL.
		k.ok("SET", "str", "v")
		k.ok("RENAME", "b", "str")
		k.eq("set", "TYPE", "str")
		k.between(99, 100, "TTL", "str")
		setEq(t, k, []string{"x", "y"}, "SMEMBERS", "str")
		// Onto another set: replaced, not merged.
		k.eq(1, "SADD", "other", "z")
		k.ok("RENAME", "other", "str")
		setEq(t, k, []string{"z"}, "SMEMBERS", "str")
		k.eq(-1, "TTL", "str")
		k.eq(1, "SADD", "n", "w")
		k.eq(0, "RENAMENX", "n", "str")
		k.eq(1, "RENAMENX", "n", "n2")
		setEq(t, k, []string{"w"}, "SMEMBERS", "n2")
		k.ok("RENAME", "n2", "n2")
		setEq(t, k, []string{"w"}, "SMEMBERS", "n2")
		k.err(errNoSuchKey, "RENAME", "missing", "x")
	})

	subtest(t, c, "Copy", func(t *testing.T, k checker) {
		k.eq(3, "SADD", "src", "a", "b", "c")
		k.eq(1, "EXPIRE", "src", 100)
		k.eq(1, "COPY", "src", "dst")
		setEq(t, k, []string{"a", "b", "c"}, "SMEMBERS", "dst")
		k.between(99, 100, "TTL", "dst")
		// The copy is independent of the original both ways.
		k.eq(1, "SADD", "dst", "d")
		k.eq(1, "SREM", "src", "a")
		setEq(t, k, []string{"b", "c"}, "SMEMBERS", "src")
		setEq(t, k, []string{"a", "b", "c", "d"}, "SMEMBERS", "dst")
		// An existing destination is kept unless REPLACE.
		k.eq(0, "COPY", "src", "dst")
		setEq(t, k, []string{"a", "b", "c", "d"}, "SMEMBERS", "dst")
		k.eq(1, "COPY", "src", "dst", "REPLACE")
		setEq(t, k, []string{"b", "c"}, "SMEMBERS", "dst")
		k.ok("SET", "str", "v")
		k.eq(0, "COPY", "src", "str")
		k.eq(1, "COPY", "src", "str", "REPLACE")
		k.eq("set", "TYPE", "str")
		// Into another database.
		k.eq(1, "COPY", "src", "src", "DB", 1)
		k1 := newChecker(t, db1)
		setEq(t, k1, []string{"b", "c"}, "SMEMBERS", "src")
		k1.between(99, 100, "TTL", "src")
		k1.eq(1, "SADD", "src", "only-in-db1")
		setEq(t, k, []string{"b", "c"}, "SMEMBERS", "src")
		k.eq(0, "COPY", "missing", "x")
	})

	subtest(t, c, "Move", func(t *testing.T, k checker) {
		k1 := newChecker(t, db1)
		k.eq(2, "SADD", "m", "a", "b")
		k.eq(1, "EXPIRE", "m", 100)
		k.eq(1, "MOVE", "m", 1)
		k.eq(0, "EXISTS", "m")
		setEq(t, k1, []string{"a", "b"}, "SMEMBERS", "m")
		k1.between(99, 100, "TTL", "m")
		// A key of that name in the target database stops the move; both stay as they were.
		k.eq(1, "SADD", "m", "c")
		k.eq(0, "MOVE", "m", 1)
		setEq(t, k, []string{"c"}, "SMEMBERS", "m")
		setEq(t, k1, []string{"a", "b"}, "SMEMBERS", "m")
		k.eq(0, "MOVE", "missing", 1)
	})

	subtest(t, c, "ScanType", func(t *testing.T, k checker) {
		var sets, strs []string
		for i := 0; i < 20; i++ {
			sets = append(sets, fmt.Sprintf("set:%d", i))
			k.eq(1, "SADD", sets[i], i)
			strs = append(strs, fmt.Sprintf("str:%d", i))
			k.ok("SET", strs[i], i)
		}
		k.eq(1, "SADD", "emptied", "x")
		k.eq(1, "SREM", "emptied", "x")
		got := scanAll(t, k, "TYPE", "set")
		if keys := sortedKeys(got); !slices.Equal(keys, slices.Sorted(slices.Values(sets))) {
			t.Fatalf("SCAN TYPE set: %s", setDiff(keys, slices.Sorted(slices.Values(sets))))
		}
		got = scanAll(t, k, "TYPE", "SET", "COUNT", 5)
		if keys := sortedKeys(got); !slices.Equal(keys, slices.Sorted(slices.Values(sets))) {
			t.Fatalf("SCAN TYPE SET COUNT 5: %s", setDiff(keys, slices.Sorted(slices.Values(sets))))
		}
		got = scanAll(t, k, "TYPE", "string", "MATCH", "*:1*")
		if keys := sortedKeys(got); len(keys) != 11 || !strings.HasPrefix(keys[0], "str:1") ||
			!strings.HasPrefix(keys[10], "str:1") {
			t.Fatalf("SCAN TYPE string MATCH *:1*: %q", keys)
		}
		got = scanAll(t, k, "MATCH", "set:1?", "TYPE", "set")
		if keys := sortedKeys(got); len(keys) != 10 {
			t.Fatalf("SCAN MATCH set:1? TYPE set: %q", keys)
		}
		k.eq(40, "DBSIZE")
		setEq(t, k, []string{"set:3"}, "KEYS", "set:3")
	})
}

// TestSetTransactions runs set commands in MULTI/EXEC (an error while running fails only its own
// command) and checks which set commands abort another client's WATCH: only those that change
// the set.
func TestSetTransactions(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "Exec", func(t *testing.T, k checker) {
		k.ok("SET", "str", "v")
		r := dialRESP(t, s)
		got := r.txRun(
			txCmd("SADD", "s", "a", "b"),
			txCmd("SADD", "str", "x"), // WRONGTYPE while running
			txCmd("SCARD", "s"),
			txCmd("SMEMBERS", "s"),
			txCmd("SREM", "s", "a"),
			txCmd("GET", "s"), // WRONGTYPE the other way
			txCmd("SPOP", "s", "-1"),
			txCmd("SISMEMBER", "s", "b"),
		)
		a, ok := got.([]any)
		if !ok || len(a) != 8 {
			t.Fatalf("EXEC: %s", short(got))
		}
		want := []any{int64(2), respError(errWrongType), int64(2), nil, int64(1),
			respError(errWrongType), respError(errSetPopCount), int64(1)}
		for i, w := range want {
			if i == 3 {
				if m, ok := a[3].([]any); !ok || !slices.Equal(sortedStrings(t, m), []string{"a", "b"}) {
					t.Fatalf("EXEC reply 4 (SMEMBERS): %s; want a and b", short(a[3]))
				}
				continue
			}
			if a[i] != w {
				t.Fatalf("EXEC reply %d: %s; want %s (whole reply %s)", i+1, short(a[i]), short(w), short(got))
			}
		}
		setEq(t, k, []string{"b"}, "SMEMBERS", "s")
		k.eq("v", "GET", "str")

		// An arity error while queuing discards the whole transaction.
		r.expect(txOK, "MULTI")
		r.expect(txQueued, "SADD", "s", "c")
		r.expect(respError(errArity("sadd")), "SADD", "s")
		r.expect(respError(errTxAbortPrev), "EXEC")
		setEq(t, k, []string{"b"}, "SMEMBERS", "s")

		// go-redis's transaction pipeline.
		ctx := k.ctx
		var card *redis.IntCmd
		var moved *redis.BoolCmd
		if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SAdd(ctx, "t", "x", "y")
			moved = p.SMove(ctx, "t", "s", "x")
			card = p.SCard(ctx, "s")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !moved.Val() || card.Val() != 2 {
			t.Fatalf("TxPipelined: SMOVE %v, SCARD %d; want true and 2", moved.Val(), card.Val())
		}
	})

	subtest(t, c, "Watch", func(t *testing.T, k checker) {
		for _, tc := range []struct {
			name  string
			watch string
			op    []any
			abort bool
		}{
			{"SaddNewMember", "w:s", []any{"SADD", "w:s", "new"}, true},
			{"SaddExistingMember", "w:s", []any{"SADD", "w:s", "a"}, false},
			{"SremMember", "w:s", []any{"SREM", "w:s", "a"}, true},
			{"SremMissingMember", "w:s", []any{"SREM", "w:s", "zz"}, false},
			{"SpopOne", "w:s", []any{"SPOP", "w:s"}, true},
			{"SpopZero", "w:s", []any{"SPOP", "w:s", 0}, false},
			{"SmoveOut", "w:s", []any{"SMOVE", "w:s", "w:d", "a"}, true},
			{"SmoveIn", "w:s", []any{"SMOVE", "w:x", "w:s", "q"}, true},
			{"SmoveMissingMember", "w:s", []any{"SMOVE", "w:s", "w:d", "zz"}, false},
			{"SmoveToItself", "w:s", []any{"SMOVE", "w:s", "w:s", "a"}, false},
			{"SinterstoreOver", "w:s", []any{"SINTERSTORE", "w:s", "w:x"}, true},
			{"SinterstoreEmptyDeletes", "w:s", []any{"SINTERSTORE", "w:s", "w:missing"}, true},
			{"SinterstoreEmptyIntoMissing", "w:d", []any{"SINTERSTORE", "w:d", "w:missing"}, false},
			{"SunionstoreCreates", "w:d", []any{"SUNIONSTORE", "w:d", "w:x"}, true},
			{"Expire", "w:s", []any{"EXPIRE", "w:s", 100}, true},
			{"Del", "w:s", []any{"DEL", "w:s"}, true},
			{"Reads", "w:s", []any{"SMEMBERS", "w:s"}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				o := newChecker(t, c)
				o.ok("FLUSHALL")
				o.eq(2, "SADD", "w:s", "a", "b")
				o.eq(1, "SADD", "w:x", "q")
				w := dialRESP(t, s)
				w.expect(txOK, "WATCH", tc.watch)
				if _, err := o.do(tc.op...); err != nil && !errors.Is(err, redis.Nil) {
					t.Fatalf("%s: %v", cmdString(tc.op), err)
				}
				got := w.txRun(txCmd("SCARD", tc.watch))
				if tc.abort && got != nil {
					t.Fatalf("%s did not abort the watcher's EXEC: %s", cmdString(tc.op), short(got))
				}
				if a, ok := got.([]any); !tc.abort && (!ok || len(a) != 1) {
					t.Fatalf("%s aborted the watcher's EXEC (%s); it changes nothing", cmdString(tc.op), short(got))
				}
			})
		}
	})
}

// TestSetLarge builds a 5,000-member set with pipelined SADDs of 100 members each, then reads it
// and removes half of it.
func TestSetLarge(t *testing.T) {
	_, c := startServer(t)
	k := newChecker(t, c)
	ctx := k.ctx
	names := setNames("member:", 5000)

	pipe := c.Pipeline()
	var adds []*redis.IntCmd
	for lo := 0; lo < len(names); lo += 100 {
		adds = append(adds, pipe.SAdd(ctx, "big", anySlice(names[lo:lo+100])...))
	}
	// The first batch again: nothing new.
	again := pipe.SAdd(ctx, "big", anySlice(names[:100])...)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("pipelined SADD: %v", err)
	}
	for i, a := range adds {
		if a.Val() != 100 {
			t.Fatalf("SADD batch %d: %d; want 100", i, a.Val())
		}
	}
	if again.Val() != 0 {
		t.Fatalf("SADD of 100 existing members: %d; want 0", again.Val())
	}
	k.eq(5000, "SCARD", "big")
	setEq(t, k, names, "SMEMBERS", "big")

	// Members and non-members, in a pipeline and in one SMISMEMBER.
	pipe = c.Pipeline()
	var probes []*redis.BoolCmd
	for i := 0; i < 5000; i += 37 {
		probes = append(probes, pipe.SIsMember(ctx, "big", names[i]), pipe.SIsMember(ctx, "big", fmt.Sprintf("member:%d", 5000+i)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, p := range probes {
		if p.Val() != (i%2 == 0) {
			t.Fatalf("SISMEMBER %v: %v", p.Args(), p.Val())
		}
	}
	flags, err := c.SMIsMember(ctx, "big", anySlice(slices.Concat(names[4000:], []string{"member:-1", "member:5000"}))...).Result()
	if err != nil || len(flags) != 1002 || slices.Contains(flags[:1000], false) || flags[1000] || flags[1001] {
		t.Fatalf("SMISMEMBER of 1,000 members and 2 others: %d flags, %v", len(flags), err)
	}

	// Remove the even-numbered half, 100 members per SREM.
	var even, odd []string
	for i, n := range names {
		if i%2 == 0 {
			even = append(even, n)
		} else {
			odd = append(odd, n)
		}
	}
	pipe = c.Pipeline()
	var rems []*redis.IntCmd
	for lo := 0; lo < len(even); lo += 100 {
		rems = append(rems, pipe.SRem(ctx, "big", anySlice(even[lo:lo+100])...))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("pipelined SREM: %v", err)
	}
	for i, r := range rems {
		if r.Val() != 100 {
			t.Fatalf("SREM batch %d: %d; want 100", i, r.Val())
		}
	}
	k.eq(2500, "SCARD", "big")
	setEq(t, k, odd, "SMEMBERS", "big")
	k.eq([]any{int64(0), int64(1)}, "SMISMEMBER", "big", even[1234], odd[1234])
	universe := setOf(t, k, "big")
	setPick(t, k.arr("SRANDMEMBER", "big", 100), universe, 100, true, "SRANDMEMBER big 100")
	k.eq(100, "SINTERCARD", 1, "big", "LIMIT", 100)
	k.eq(1, "DEL", "big")
	k.eq(0, "EXISTS", "big")
}

// anySlice converts members to go-redis's variadic argument type.
func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// setRestartData writes sets of several shapes and returns what each key must hold; a key
// mapped to nil must not exist.
func setRestartData(t *testing.T, k checker, db1 checker) (map[string][]string, map[string][]string) {
	t.Helper()
	want := map[string][]string{}
	k.eq(100, setArgs("SADD", "r:ints", setNames("", 100))...)
	want["r:ints"] = setNames("", 100)
	mixed := []string{"1", "-5", "007", "+1", "1.0", "", "a\x00b", "\r\n", strings.Repeat("x", 5000)}
	k.eq(len(mixed), setArgs("SADD", "r:mixed", mixed)...)
	want["r:mixed"] = mixed
	big := setNames("big:", 3000)
	for lo := 0; lo < len(big); lo += 500 {
		k.eq(500, setArgs("SADD", "r:big", big[lo:lo+500])...)
	}
	k.eq(1000, setArgs("SREM", "r:big", big[:1000])...)
	want["r:big"] = big[1000:]
	k.eq(2, "SADD", "r:ttl", "a", "b")
	k.eq(1, "EXPIRE", "r:ttl", 1000)
	want["r:ttl"] = []string{"a", "b"}
	k.eq(2, "SADD", "r:emptied", "a", "b")
	k.eq(2, "SREM", "r:emptied", "a", "b")
	want["r:emptied"] = nil
	k.eq(2, "SADD", "r:src", "a", "b")
	k.eq(1, "SMOVE", "r:src", "r:moved", "a")
	want["r:src"], want["r:moved"] = []string{"b"}, []string{"a"}
	k.eq(2, "SUNIONSTORE", "r:union", "r:src", "r:moved", "r:ttl")
	want["r:union"] = []string{"a", "b"}
	k.ok("SET", "r:was-string", "v")
	k.eq(1, "SINTERSTORE", "r:was-string", "r:src")
	want["r:was-string"] = []string{"b"}
	k.eq(0, "SDIFFSTORE", "r:union2", "r:src", "r:src")
	want["r:union2"] = nil
	k.eq(20, setArgs("SADD", "r:popped", setNames("p", 20))...)
	rest := setOf(t, k, "r:popped")
	for _, p := range k.arr("SPOP", "r:popped", 7) {
		delete(rest, p.(string))
	}
	delete(rest, k.str("SPOP", "r:popped"))
	want["r:popped"] = setKeys(rest)
	k.eq(2, "SADD", "r:renamed-from", "x", "y")
	k.ok("RENAME", "r:renamed-from", "r:renamed")
	want["r:renamed-from"], want["r:renamed"] = nil, []string{"x", "y"}

	want1 := map[string][]string{}
	db1.eq(3, "SADD", "r:db1", "one", "two", "3")
	want1["r:db1"] = []string{"one", "two", "3"}
	return want, want1
}

// checkSets checks every key of want against SMEMBERS, and DBSIZE against the live keys.
func checkSets(t *testing.T, k checker, want map[string][]string, when string) {
	t.Helper()
	live := 0
	for key, members := range want {
		if members == nil {
			if k.int("EXISTS", key) != 0 {
				t.Fatalf("%s: %s exists; it was removed", when, key)
			}
			continue
		}
		live++
		k.eq("set", "TYPE", key)
		got := sortedStrings(t, k.arr("SMEMBERS", key))
		if w := slices.Sorted(slices.Values(members)); !slices.Equal(got, w) {
			t.Fatalf("%s: SMEMBERS %s: %s", when, key, setDiff(got, w))
		}
		k.eq(len(members), "SCARD", key)
	}
	k.eq(live, "DBSIZE")
}

// TestSetRestart writes sets of every shape, restarts the server cleanly, checks every member
// (and that a TTL survived), changes them and restarts again.
func TestSetRestart(t *testing.T) {
	s := harness.Start(t)
	k := newChecker(t, s.Client())
	want, want1 := setRestartData(t, k, newChecker(t, s.ClientOpts(&redis.Options{DB: 1})))

	s.Restart()
	k = newChecker(t, s.Client())
	k1 := newChecker(t, s.ClientOpts(&redis.Options{DB: 1}))
	checkSets(t, k, want, "after a restart")
	checkSets(t, k1, want1, "after a restart, db 1")
	k.between(990, 1000, "TTL", "r:ttl")
	k.eq(-1, "TTL", "r:big")

	// Changes to recovered sets survive the next restart.
	k.eq(1, "SADD", "r:ints", "100")
	want["r:ints"] = append(want["r:ints"], "100")
	k.eq(1, "SREM", "r:mixed", "")
	want["r:mixed"] = slices.DeleteFunc(want["r:mixed"], func(m string) bool { return m == "" })
	k.eq(1, "SREM", "r:moved", "a")
	want["r:moved"] = nil
	k.eq(1, "SADD", "r:emptied", "back")
	want["r:emptied"] = []string{"back"}
	k.eq(500, setArgs("SREM", "r:big", want["r:big"][:500])...)
	want["r:big"] = want["r:big"][500:]
	k1.eq(1, "SMOVE", "r:db1", "r:db1b", "3")
	want1["r:db1"], want1["r:db1b"] = []string{"one", "two"}, []string{"3"}

	s.Restart()
	k = newChecker(t, s.Client())
	checkSets(t, k, want, "after a second restart")
	checkSets(t, newChecker(t, s.ClientOpts(&redis.Options{DB: 1})), want1, "after a second restart, db 1")
	k.between(990, 1000, "TTL", "r:ttl")
}

// TestSetKill9AppendfsyncAlways: with an fsync before every reply, no acknowledged set write is
// lost to kill -9. Each round sends seeded random pipelines of set commands, checks every reply
// against a model (SPOP's choice is taken from its reply), kills the server and compares every
// key with the model after the restart.
func TestSetKill9AppendfsyncAlways(t *testing.T) {
	seed := e2eSeed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 17))
	s := harness.Start(t, "--appendfsync", "always")
	ctx := harness.Ctx(t)
	keys := setNames("k:", 8)
	model := map[string]map[string]bool{}
	for _, key := range keys {
		model[key] = map[string]bool{}
	}
	// Keys k:0 and k:1 only ever get integers (Redis's intset); the others get both kinds.
	member := func(key string) string {
		if key == "k:0" || key == "k:1" || rng.IntN(2) == 0 {
			return strconv.Itoa(rng.IntN(60) - 10)
		}
		return fmt.Sprintf("m%d", rng.IntN(60))
	}
	type op struct {
		args  []any
		check func(reply any, err error) error // checks the reply against the model and applies it
	}
	for round := 1; round <= 3; round++ {
		c := s.ClientOpts(&redis.Options{})
		for batch := 0; batch < 20; batch++ {
			ops := make([]op, 50)
			for i := range ops {
				key := keys[rng.IntN(len(keys))]
				switch r := rng.IntN(100); {
				case r < 45: // SADD of 1 to 10 members
					ms := make([]string, 1+rng.IntN(10))
					for j := range ms {
						ms[j] = member(key)
					}
					ops[i] = op{setArgs("SADD", key, ms), func(reply any, err error) error {
						n := int64(0)
						for _, m := range ms {
							if !model[key][m] {
								model[key][m] = true
								n++
							}
						}
						return expectReply(reply, err, n)
					}}
				case r < 65: // SREM of 1 to 4 members
					ms := make([]string, 1+rng.IntN(4))
					for j := range ms {
						ms[j] = member(key)
					}
					ops[i] = op{setArgs("SREM", key, ms), func(reply any, err error) error {
						n := int64(0)
						for _, m := range ms {
							if model[key][m] {
								delete(model[key], m)
								n++
							}
						}
						return expectReply(reply, err, n)
					}}
				case r < 75: // SPOP, with a count or without
					count := rng.IntN(6) - 1
					args := []any{"SPOP", key}
					if count >= 0 {
						args = append(args, count)
					}
					ops[i] = op{args, func(reply any, err error) error {
						var popped []any
						if count < 0 {
							if len(model[key]) == 0 {
								return expectReply(reply, err, nil)
							}
							popped = []any{reply}
						} else {
							popped, _ = reply.([]any)
							if err != nil || len(popped) != min(count, len(model[key])) {
								return fmt.Errorf("got %s, %v; want %d members", short(reply), err, min(count, len(model[key])))
							}
						}
						for _, p := range popped {
							m, _ := p.(string)
							if !model[key][m] {
								return fmt.Errorf("popped %s, not a member", short(p))
							}
							delete(model[key], m)
						}
						return nil
					}}
				case r < 88: // SMOVE
					dst := keys[rng.IntN(len(keys))]
					m := member(key)
					ops[i] = op{[]any{"SMOVE", key, dst, m}, func(reply any, err error) error {
						want := int64(0)
						if model[key][m] {
							want = 1
							delete(model[key], m)
							model[dst][m] = true
						}
						return expectReply(reply, err, want)
					}}
				case r < 98: // a STORE command
					store := []string{"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"}[rng.IntN(3)]
					a, b := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
					ops[i] = op{[]any{store, key, a, b}, func(reply any, err error) error {
						res := map[string]bool{}
						for m := range model[a] {
							if store == "SUNIONSTORE" || model[b][m] == (store == "SINTERSTORE") {
								res[m] = true
							}
						}
						if store == "SUNIONSTORE" {
							for m := range model[b] {
								res[m] = true
							}
						}
						model[key] = res
						return expectReply(reply, err, int64(len(res)))
					}}
				default:
					ops[i] = op{[]any{"DEL", key}, func(reply any, err error) error {
						want := int64(min(len(model[key]), 1))
						model[key] = map[string]bool{}
						return expectReply(reply, err, want)
					}}
				}
			}
			pipe := c.Pipeline()
			cmds := make([]*redis.Cmd, len(ops))
			for i, o := range ops {
				cmds[i] = pipe.Do(ctx, o.args...)
			}
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				var rerr redis.Error
				if !errors.As(err, &rerr) {
					t.Fatalf("round %d: pipeline: %v", round, err)
				}
			}
			for i, o := range ops {
				reply, err := cmds[i].Result()
				if err := o.check(reply, err); err != nil {
					t.Fatalf("round %d, batch %d: %s: %v (seed %d)", round, batch, cmdString(o.args), err, seed)
				}
			}
		}
		// Every write above was acknowledged: none may be lost.
		s.KillRestart()
		k := newChecker(t, s.ClientOpts(&redis.Options{}))
		want := map[string][]string{}
		for key, m := range model {
			want[key] = nil
			if len(m) > 0 {
				want[key] = setKeys(m)
			}
		}
		checkSets(t, k, want, fmt.Sprintf("round %d, after kill -9 (seed %d)", round, seed))
		members := 0
		for _, m := range model {
			members += len(m)
		}
		t.Logf("round %d: %d members in %d keys survived kill -9", round, members, k.int("DBSIZE"))
	}
}

// expectReply compares one generic reply with want (int64, or nil for a null reply).
func expectReply(reply any, err error, want any) error {
	if want == nil {
		if !errors.Is(err, redis.Nil) {
			return fmt.Errorf("got %s, %v; want nil", short(reply), err)
		}
		return nil
	}
	if err != nil || reply != want {
		return fmt.Errorf("got %s, %v; want %s", short(reply), err, short(want))
	}
	return nil
}
