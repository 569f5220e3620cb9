package test

// End-to-end tests of the list commands (LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX
// LSET LINSERT LREM LTRIM LPOS LMOVE RPOPLPUSH LMPOP), of list keys under the keyspace commands,
// transactions, restarts and kill -9. The blocking commands are in lists_blocking_test.go. Every
// reply and error line was checked against redis-server 7.0.15
// (LAVIK_TEST_SERVER=redis go test -run 'TestList|TestBlocking' ./...).

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

const (
	errListIndexRange = "ERR index out of range"
	// LPOP and RPOP refuse a negative count, and one that is not an integer at all, with the
	// line SPOP uses.
	errListPopCount = errSetPopCount
	// LMPOP and BLMPOP say errSetNumkeys for a numkeys that is not positive or not a number, and
	// this for such a COUNT.
	errListCount      = "ERR count should be greater than 0"
	errListRankZero   = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	errListPosCount   = "ERR COUNT can't be negative"
	errListPosMaxlen  = "ERR MAXLEN can't be negative"
	errTimeoutNeg     = "ERR timeout is negative"
	errTimeoutInvalid = "ERR timeout is not a float or out of range"
)

// listEncodings are the OBJECT ENCODING replies a list may have: Redis 7.0 says "quicklist"
// for every list, 7.2 says "listpack" for a small one. Lavik may store lists differently; the
// tests only require one of these names.
var listEncodings = []string{"quicklist", "listpack"}

// checkList checks that key holds exactly the elements want, in order, through LRANGE and LLEN;
// an empty want means the key must not exist.
func checkList(t testing.TB, k checker, key string, want []string) {
	t.Helper()
	got := k.arr("LRANGE", key, 0, -1)
	if !slices.Equal(got, anySlice(want)) {
		t.Fatalf("LRANGE %s 0 -1: %s", key, listDiff(got, want))
	}
	k.eq(len(want), "LLEN", key)
	if len(want) == 0 {
		k.eq(0, "EXISTS", key)
	}
}

// listDiff describes how the elements got differ from want: the lengths and the first index
// where they differ.
func listDiff(got []any, want []string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	at := func(a []any, i int) string {
		if i < len(a) {
			return short(a[i])
		}
		return "(end)"
	}
	return fmt.Sprintf("%d elements, want %d; first difference at %d: %s, want %s",
		len(got), len(want), i, at(got, i), at(anySlice(want), i))
}

// oneLine sends args on r and returns the reply as it is on the wire, for replies of one line
// only (nulls, integers, empty arrays, errors): the decoder shows a RESP2 null bulk string, a
// RESP2 null array and a RESP3 null all as nil.
func (r *respConn) oneLine(args ...string) string {
	r.t.Helper()
	r.send(args...)
	return r.rawLine()
}

// expectLines sends args on r and compares each line of the reply, as it is on the wire, with
// want; the reply must consist of exactly these lines.
func (r *respConn) expectLines(want []string, args ...string) {
	r.t.Helper()
	r.send(args...)
	for i, w := range want {
		if got := r.rawLine(); got != w {
			r.t.Fatalf("%q: reply line %d is %q; want %q (all: %q)", args, i, got, w, want)
		}
	}
}

// hello3 switches r to RESP3.
func (r *respConn) hello3() {
	r.t.Helper()
	if _, ok := r.do("HELLO", "3").(respMap); !ok {
		r.t.Fatalf("HELLO 3 did not answer a map")
	}
}

// TestListCommands checks each list command's replies and errors on small lists, in RESP2 and,
// where the reply differs, RESP3, down to the bytes on the wire for the nulls.
func TestListCommands(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "PushLLen", func(t *testing.T, k checker) {
		k.eq(3, "LPUSH", "l", "a", "b", "c") // each goes to the head in turn
		checkList(t, k, "l", []string{"c", "b", "a"})
		k.eq(5, "RPUSH", "l", "d", "e")
		checkList(t, k, "l", []string{"c", "b", "a", "d", "e"})
		k.eq(6, "LPUSH", "l", "c") // duplicates are kept
		k.eq(2, "RPUSH", "r", "", "\x00\r\n\xff")
		checkList(t, k, "r", []string{"", "\x00\r\n\xff"})
		k.eq("list", "TYPE", "l")
		k.eq(0, "LLEN", "missing")
		k.eq(0, "EXISTS", "missing")
		// Pushing keeps the key's TTL.
		k.eq(1, "EXPIRE", "l", 100)
		k.eq(7, "RPUSH", "l", "x")
		k.eq(8, "LPUSH", "l", "y")
		k.between(99, 100, "TTL", "l")
	})

	subtest(t, c, "PushX", func(t *testing.T, k checker) {
		k.eq(0, "LPUSHX", "l", "a")
		k.eq(0, "RPUSHX", "l", "a", "b")
		k.eq(0, "EXISTS", "l")
		k.eq(1, "RPUSH", "l", "m")
		k.eq(3, "LPUSHX", "l", "b", "a")
		k.eq(5, "RPUSHX", "l", "y", "z")
		checkList(t, k, "l", []string{"a", "b", "m", "y", "z"})
	})

	subtest(t, c, "PopWithoutCount", func(t *testing.T, k checker) {
		k.null("LPOP", "l")
		k.null("RPOP", "l")
		k.eq(4, "RPUSH", "l", "a", "b", "c", "d")
		k.eq("a", "LPOP", "l")
		k.eq("d", "RPOP", "l")
		checkList(t, k, "l", []string{"b", "c"})
		k.eq(1, "EXPIRE", "l", 100)
		k.eq("b", "LPOP", "l")
		k.between(99, 100, "TTL", "l")
		// Popping the last element removes the key and its TTL.
		k.eq("c", "RPOP", "l")
		k.eq(0, "EXISTS", "l")
		k.eq(-2, "TTL", "l")
		k.null("LPOP", "l")
		k.eq(1, "RPUSH", "l", "new")
		k.eq(-1, "TTL", "l")
	})

	subtest(t, c, "PopWithCount", func(t *testing.T, k checker) {
		k.eq(5, "RPUSH", "l", "a", "b", "c", "d", "e")
		k.eq([]string{"a", "b"}, "LPOP", "l", 2)
		k.eq([]string{"e", "d"}, "RPOP", "l", 2) // from the tail, tail first
		k.eq([]string{"c"}, "LPOP", "l", 1)
		k.eq(0, "EXISTS", "l")
		k.eq(3, "RPUSH", "l", "a", "b", "c")
		k.eq([]string{}, "LPOP", "l", 0) // an empty array, and nothing removed
		k.eq([]string{}, "RPOP", "l", 0)
		k.eq([]string{"c", "b", "a"}, "RPOP", "l", 100) // beyond the length: everything
		k.eq(0, "EXISTS", "l")
		// A missing key is a null, with a count as without, even a count of 0.
		for _, n := range []int{0, 1, 5} {
			k.null("LPOP", "missing", n)
			k.null("RPOP", "missing", n)
		}
		k.eq(2, "RPUSH", "l", "a", "b")
		for _, bad := range []any{-1, "-9223372036854775808", "x", "1.5", "", "9223372036854775808"} {
			k.err(errListPopCount, "LPOP", "l", bad)
			k.err(errListPopCount, "RPOP", "l", bad)
		}
		k.err(errListPopCount, "LPOP", "missing", -1)
		k.err(errArity("lpop"), "LPOP", "l", 1, 2)
		k.err(errArity("rpop"), "RPOP", "l", 1, 2)
		checkList(t, k, "l", []string{"a", "b"})

		// On the wire: a missing key is a null bulk string without a count and a null array
		// with one; an existing key with a count of 0 is an empty array. RESP3 has one null.
		r := dialRESP(t, s)
		for _, tc := range []struct {
			args  []string
			resp2 string
		}{
			{[]string{"LPOP", "missing"}, "$-1\r\n"},
			{[]string{"RPOP", "missing"}, "$-1\r\n"},
			{[]string{"LPOP", "missing", "0"}, "*-1\r\n"},
			{[]string{"LPOP", "missing", "2"}, "*-1\r\n"},
			{[]string{"RPOP", "missing", "2"}, "*-1\r\n"},
			{[]string{"LPOP", "l", "0"}, "*0\r\n"},
			{[]string{"RPOP", "l", "0"}, "*0\r\n"},
		} {
			if got := r.oneLine(tc.args...); got != tc.resp2 {
				t.Fatalf("RESP2 %q: %q; want %q", tc.args, got, tc.resp2)
			}
		}
		r.hello3()
		for _, tc := range []struct {
			args  []string
			resp3 string
		}{
			{[]string{"LPOP", "missing"}, "_\r\n"},
			{[]string{"LPOP", "missing", "0"}, "_\r\n"},
			{[]string{"RPOP", "missing", "2"}, "_\r\n"},
			{[]string{"LPOP", "l", "0"}, "*0\r\n"},
		} {
			if got := r.oneLine(tc.args...); got != tc.resp3 {
				t.Fatalf("RESP3 %q: %q; want %q", tc.args, got, tc.resp3)
			}
		}
		r.expectLines([]string{"*1\r\n", "$1\r\n", "a\r\n"}, "LPOP", "l", "1")
		checkList(t, k, "l", []string{"b"})
	})

	subtest(t, c, "LRange", func(t *testing.T, k checker) {
		k.eq(5, "RPUSH", "l", "a", "b", "c", "d", "e")
		for _, tc := range []struct {
			start, stop any
			want        []string
		}{
			{0, -1, []string{"a", "b", "c", "d", "e"}},
			{0, 0, []string{"a"}},
			{1, 3, []string{"b", "c", "d"}},
			{-2, -1, []string{"d", "e"}},
			{-100, 100, []string{"a", "b", "c", "d", "e"}},
			{-100, 1, []string{"a", "b"}},
			{3, 100, []string{"d", "e"}},
			{3, 1, []string{}},
			{5, 10, []string{}},
			{-1, -2, []string{}},
			{-100, -6, []string{}},
			{"-9223372036854775808", "9223372036854775807", []string{"a", "b", "c", "d", "e"}},
		} {
			k.eq(tc.want, "LRANGE", "l", tc.start, tc.stop)
		}
		k.eq([]string{}, "LRANGE", "missing", 0, -1)
		for _, bad := range [][]any{{"x", 1}, {0, "y"}, {"1.5", 2}, {0, ""}, {0, "9223372036854775808"}} {
			k.err(errNotInt, "LRANGE", "l", bad[0], bad[1])
			k.err(errNotInt, "LRANGE", "missing", bad[0], bad[1])
		}
	})

	subtest(t, c, "LIndex", func(t *testing.T, k checker) {
		k.eq(3, "RPUSH", "l", "a", "b", "c")
		k.eq("a", "LINDEX", "l", 0)
		k.eq("c", "LINDEX", "l", 2)
		k.eq("c", "LINDEX", "l", -1)
		k.eq("a", "LINDEX", "l", -3)
		k.null("LINDEX", "l", 3)
		k.null("LINDEX", "l", -4)
		k.null("LINDEX", "missing", 0)
		for _, bad := range []string{"x", "1.5", "", "9223372036854775808"} {
			k.err(errNotInt, "LINDEX", "l", bad)
		}
	})

	subtest(t, c, "LSet", func(t *testing.T, k checker) {
		k.err(errNoSuchKey, "LSET", "missing", 0, "x")
		k.eq(0, "EXISTS", "missing")
		k.eq(3, "RPUSH", "l", "a", "b", "c")
		k.ok("LSET", "l", 0, "A")
		k.ok("LSET", "l", -1, "C")
		k.ok("LSET", "l", 1, strings.Repeat("b", 1000))
		checkList(t, k, "l", []string{"A", strings.Repeat("b", 1000), "C"})
		k.err(errListIndexRange, "LSET", "l", 3, "x")
		k.err(errListIndexRange, "LSET", "l", -4, "x")
		k.err(errNotInt, "LSET", "l", "x", "x")
		k.err(errNotInt, "LSET", "l", "1.5", "x")
		k.err(errNoSuchKey, "LSET", "missing", "x", "x") // the key is looked up first
		checkList(t, k, "l", []string{"A", strings.Repeat("b", 1000), "C"})
	})

	subtest(t, c, "LInsert", func(t *testing.T, k checker) {
		k.eq(0, "LINSERT", "missing", "BEFORE", "a", "x") // 0: no list
		k.eq(0, "EXISTS", "missing")
		k.eq(3, "RPUSH", "l", "a", "b", "a")
		k.eq(-1, "LINSERT", "l", "BEFORE", "zz", "x") // -1: no such pivot
		k.eq(4, "LINSERT", "l", "BEFORE", "a", "x")   // the first match only
		k.eq(5, "LINSERT", "l", "AFTER", "a", "y")
		k.eq(6, "LINSERT", "l", "after", "b", "z") // the direction in any case
		k.eq(7, "LINSERT", "l", "Before", "x", "w")
		checkList(t, k, "l", []string{"w", "x", "a", "y", "b", "z", "a"})
		k.err(errSyntax, "LINSERT", "l", "MIDDLE", "a", "x")
		k.err(errSyntax, "LINSERT", "l", "", "a", "x")
		k.err(errSyntax, "LINSERT", "missing", "MIDDLE", "a", "x")
		k.err(errArity("linsert"), "LINSERT", "l", "BEFORE", "a")
		k.err(errArity("linsert"), "LINSERT", "l", "BEFORE", "a", "x", "y")
		k.eq(7, "LLEN", "l")
	})

	subtest(t, c, "LRem", func(t *testing.T, k checker) {
		k.eq(0, "LREM", "missing", 1, "a")
		all := []string{"a", "b", "a", "c", "a", "b", "a"}
		k.eq(7, setArgs("RPUSH", "l", all)...)
		k.eq(0, "LREM", "l", 0, "zz")
		k.eq(2, "LREM", "l", 2, "a") // from the head
		checkList(t, k, "l", []string{"b", "c", "a", "b", "a"})
		k.eq(1, "LREM", "l", -1, "b") // from the tail
		checkList(t, k, "l", []string{"b", "c", "a", "a"})
		k.eq(2, "LREM", "l", -5, "a") // more than there are
		checkList(t, k, "l", []string{"b", "c"})
		k.eq(7, setArgs("RPUSH", "m", all)...)
		k.eq(4, "LREM", "m", 0, "a") // 0: every match
		checkList(t, k, "m", []string{"b", "c", "b"})
		k.eq(0, "LREM", "m", 0, "B") // elements are case-sensitive
		// Removing every element removes the key.
		k.eq(1, "EXPIRE", "m", 100)
		k.eq(2, "LREM", "m", 0, "b")
		k.eq(1, "LREM", "m", 1, "c")
		k.eq(0, "EXISTS", "m")
		k.eq(-2, "TTL", "m")
		for _, bad := range []string{"x", "1.5", ""} {
			k.err(errNotInt, "LREM", "l", bad, "a")
		}
		checkList(t, k, "l", []string{"b", "c"})
	})

	subtest(t, c, "LTrim", func(t *testing.T, k checker) {
		k.ok("LTRIM", "missing", 0, 1)
		k.eq(0, "EXISTS", "missing")
		k.eq(6, "RPUSH", "l", "a", "b", "c", "d", "e", "f")
		k.ok("LTRIM", "l", 0, -1)
		checkList(t, k, "l", []string{"a", "b", "c", "d", "e", "f"})
		k.ok("LTRIM", "l", 1, -2)
		checkList(t, k, "l", []string{"b", "c", "d", "e"})
		k.ok("LTRIM", "l", -3, 100)
		checkList(t, k, "l", []string{"c", "d", "e"})
		k.ok("LTRIM", "l", -100, 1)
		checkList(t, k, "l", []string{"c", "d"})
		k.eq(1, "EXPIRE", "l", 100)
		k.ok("LTRIM", "l", 0, 0)
		k.between(99, 100, "TTL", "l")
		checkList(t, k, "l", []string{"c"})
		// A range that keeps nothing deletes the key.
		k.ok("LTRIM", "l", 1, 0)
		k.eq(0, "EXISTS", "l")
		k.eq(-2, "TTL", "l")
		k.eq(2, "RPUSH", "l", "a", "b")
		k.ok("LTRIM", "l", 5, 10)
		k.eq(0, "EXISTS", "l")
		k.eq(2, "RPUSH", "l", "a", "b")
		k.ok("LTRIM", "l", -1, -2)
		k.eq(0, "EXISTS", "l")
		k.eq(2, "RPUSH", "l", "a", "b")
		for _, bad := range [][]any{{"x", 1}, {0, "y"}, {"1.5", 1}} {
			k.err(errNotInt, "LTRIM", "l", bad[0], bad[1])
		}
		checkList(t, k, "l", []string{"a", "b"})
	})

	subtest(t, c, "LPos", func(t *testing.T, k checker) {
		k.eq(7, "RPUSH", "l", "a", "b", "c", "a", "b", "c", "a")
		k.eq(0, "LPOS", "l", "a")
		k.eq(2, "LPOS", "l", "c")
		k.null("LPOS", "l", "zz")
		k.null("LPOS", "missing", "a")
		// RANK: the n-th match, from the tail when negative.
		k.eq(3, "LPOS", "l", "a", "RANK", 2)
		k.eq(6, "LPOS", "l", "a", "RANK", 3)
		k.null("LPOS", "l", "a", "RANK", 4)
		k.eq(6, "LPOS", "l", "a", "RANK", -1)
		k.eq(3, "LPOS", "l", "a", "RANK", -2)
		k.eq(4, "LPOS", "l", "b", "rank", -1) // option names in any case
		// COUNT: an array of up to count positions, 0 meaning all of them.
		k.eq([]any{int64(0), int64(3)}, "LPOS", "l", "a", "COUNT", 2)
		k.eq([]any{int64(0), int64(3), int64(6)}, "LPOS", "l", "a", "COUNT", 0)
		k.eq([]any{int64(0), int64(3), int64(6)}, "LPOS", "l", "a", "COUNT", 100)
		k.eq([]any{int64(6), int64(3)}, "LPOS", "l", "a", "RANK", -1, "COUNT", 2)
		k.eq([]any{int64(3), int64(6)}, "LPOS", "l", "a", "RANK", 2, "COUNT", 0)
		k.eq([]any{}, "LPOS", "l", "zz", "COUNT", 2)
		k.eq([]any{}, "LPOS", "missing", "a", "COUNT", 2)
		k.eq([]any{int64(6)}, "LPOS", "l", "a", "COUNT", 1, "COUNT", 1, "RANK", 3) // the last of a repeated option wins
		// MAXLEN: compare at most that many elements, from where the scan starts; 0 is all.
		k.eq(0, "LPOS", "l", "a", "MAXLEN", 1)
		k.null("LPOS", "l", "c", "MAXLEN", 2)
		k.eq(2, "LPOS", "l", "c", "MAXLEN", 3)
		k.eq([]any{int64(0)}, "LPOS", "l", "a", "MAXLEN", 3, "COUNT", 0)
		k.eq([]any{int64(0), int64(3), int64(6)}, "LPOS", "l", "a", "MAXLEN", 0, "COUNT", 0)
		k.eq([]any{int64(6)}, "LPOS", "l", "a", "RANK", -1, "MAXLEN", 3, "COUNT", 0)
		k.null("LPOS", "l", "a", "RANK", 2, "MAXLEN", 1)

		k.err(errListRankZero, "LPOS", "l", "a", "RANK", 0)
		k.err(errNotInt, "LPOS", "l", "a", "RANK", "x")
		k.err(errListPosCount, "LPOS", "l", "a", "COUNT", -1)
		k.err(errListPosCount, "LPOS", "l", "a", "COUNT", "x")
		k.err(errListPosMaxlen, "LPOS", "l", "a", "MAXLEN", -1)
		k.err(errListPosMaxlen, "LPOS", "l", "a", "MAXLEN", "x")
		k.err(errSyntax, "LPOS", "l", "a", "FOO", 1)
		k.err(errSyntax, "LPOS", "l", "a", "RANK")
		k.err(errSyntax, "LPOS", "l", "a", "COUNT")
		k.err(errSyntax, "LPOS", "l", "a", "COUNT", 1, "MAXLEN")
		// Options are parsed before the key is looked up.
		k.err(errListRankZero, "LPOS", "missing", "a", "RANK", 0)
		k.err(errArity("lpos"), "LPOS", "l")
	})

	subtest(t, c, "LMove", func(t *testing.T, k checker) {
		k.eq(4, "RPUSH", "src", "a", "b", "c", "d")
		k.eq(2, "RPUSH", "dst", "x", "y")
		k.eq("a", "LMOVE", "src", "dst", "LEFT", "LEFT")
		checkList(t, k, "dst", []string{"a", "x", "y"})
		k.eq("b", "LMOVE", "src", "dst", "LEFT", "RIGHT")
		checkList(t, k, "dst", []string{"a", "x", "y", "b"})
		k.eq("d", "LMOVE", "src", "dst", "RIGHT", "LEFT")
		checkList(t, k, "dst", []string{"d", "a", "x", "y", "b"})
		k.eq(1, "EXPIRE", "dst", 100)
		// Moving the last element removes the source; the destination keeps its TTL.
		k.eq("c", "LMOVE", "src", "dst", "right", "right")
		checkList(t, k, "src", nil)
		checkList(t, k, "dst", []string{"d", "a", "x", "y", "b", "c"})
		k.between(99, 100, "TTL", "dst")
		// A missing source: null, and no destination is created.
		k.null("LMOVE", "src", "new", "LEFT", "RIGHT")
		k.eq(0, "EXISTS", "new")
		// A missing destination is created.
		k.eq("d", "LMOVE", "dst", "new", "LEFT", "RIGHT")
		checkList(t, k, "new", []string{"d"})
		k.eq(-1, "TTL", "new")

		// The same key as source and destination rotates the list.
		k.eq(3, "RPUSH", "r", "1", "2", "3")
		k.eq("1", "LMOVE", "r", "r", "LEFT", "RIGHT")
		checkList(t, k, "r", []string{"2", "3", "1"})
		k.eq("1", "LMOVE", "r", "r", "RIGHT", "LEFT")
		checkList(t, k, "r", []string{"1", "2", "3"})
		k.eq("1", "LMOVE", "r", "r", "LEFT", "LEFT")
		k.eq("3", "LMOVE", "r", "r", "RIGHT", "RIGHT")
		checkList(t, k, "r", []string{"1", "2", "3"})
		k.eq(1, "RPUSH", "one", "x")
		k.eq("x", "LMOVE", "one", "one", "LEFT", "RIGHT")
		checkList(t, k, "one", []string{"x"})
		k.null("LMOVE", "missing", "missing", "LEFT", "RIGHT")
		k.eq(0, "EXISTS", "missing")

		k.err(errSyntax, "LMOVE", "r", "dst", "UP", "LEFT")
		k.err(errSyntax, "LMOVE", "r", "dst", "LEFT", "DOWN")
		k.err(errSyntax, "LMOVE", "missing", "dst", "LEFT", "")
		checkList(t, k, "r", []string{"1", "2", "3"})
	})

	subtest(t, c, "RPopLPush", func(t *testing.T, k checker) {
		k.eq(3, "RPUSH", "src", "a", "b", "c")
		k.eq("c", "RPOPLPUSH", "src", "dst")
		k.eq("b", "RPOPLPUSH", "src", "dst")
		checkList(t, k, "dst", []string{"b", "c"})
		k.eq("c", "RPOPLPUSH", "dst", "dst") // rotation
		checkList(t, k, "dst", []string{"c", "b"})
		k.eq("a", "RPOPLPUSH", "src", "dst")
		checkList(t, k, "src", nil)
		checkList(t, k, "dst", []string{"a", "c", "b"})
		k.null("RPOPLPUSH", "src", "dst")
		k.null("RPOPLPUSH", "missing", "other")
		k.eq(0, "EXISTS", "missing", "other")
		// A one-element list moved onto itself stays, and keeps its TTL.
		k.eq(1, "RPUSH", "one", "x")
		k.eq(1, "EXPIRE", "one", 1000)
		k.eq("x", "RPOPLPUSH", "one", "one")
		k.eq("x", "LMOVE", "one", "one", "LEFT", "LEFT")
		checkList(t, k, "one", []string{"x"})
		k.eq(1, "PERSIST", "one")
	})

	subtest(t, c, "LMPop", func(t *testing.T, k checker) {
		k.null("LMPOP", 2, "a", "b", "LEFT")
		k.eq(4, "RPUSH", "b", "1", "2", "3", "4")
		k.eq(1, "RPUSH", "c", "x")
		// The first non-empty key in argument order.
		k.eq([]any{"b", []any{"1"}}, "LMPOP", 3, "a", "b", "c", "LEFT")
		k.eq([]any{"b", []any{"4", "3"}}, "LMPOP", 3, "a", "b", "c", "RIGHT", "COUNT", 2)
		k.eq([]any{"b", []any{"2"}}, "LMPOP", 2, "b", "c", "left", "count", 10)
		k.eq(0, "EXISTS", "b")
		k.eq([]any{"c", []any{"x"}}, "LMPOP", 2, "b", "c", "RIGHT")
		k.eq(0, "EXISTS", "c")
		k.null("LMPOP", 3, "a", "b", "c", "LEFT", "COUNT", 5)
		k.eq(2, "RPUSH", "a", "1", "2")
		k.eq([]any{"a", []any{"1", "2"}}, "LMPOP", 1, "a", "LEFT", "COUNT", 2)

		k.eq(2, "RPUSH", "l", "1", "2")
		for _, bad := range []any{0, -1, "x", "1.5", "9223372036854775808"} {
			k.err(errSetNumkeys, "LMPOP", bad, "l", "LEFT")
		}
		for _, bad := range []any{0, -1, "x"} {
			k.err(errListCount, "LMPOP", 1, "l", "LEFT", "COUNT", bad)
		}
		for _, args := range [][]any{
			{"LMPOP", 1, "l", "MIDDLE"},
			{"LMPOP", 2, "l", "LEFT"}, // numkeys beyond the keys given
			{"LMPOP", 3, "l", "m"},
			{"LMPOP", "9223372036854775807", "l", "LEFT"},
			{"LMPOP", "9223372036854775806", "l", "LEFT"},
			{"LMPOP", 1, "l", "LEFT", "COUNT"},
			{"LMPOP", 1, "l", "LEFT", "COUNT", 1, "COUNT", 2},
			{"LMPOP", 1, "l", "LEFT", "extra"},
		} {
			k.err(errSyntax, args...)
		}
		k.err(errArity("lmpop"), "LMPOP", 1, "l")
		k.err(errArity("lmpop"), "LMPOP", 1)
		checkList(t, k, "l", []string{"1", "2"})
	})

	subtest(t, c, "Arity", func(t *testing.T, k checker) {
		k.eq(2, "RPUSH", "l", "a", "b")
		for _, args := range [][]any{
			{"LPUSH"}, {"LPUSH", "l"}, {"RPUSH", "l"}, {"LPUSHX", "l"}, {"RPUSHX", "l"},
			{"LPOP"}, {"LPOP", "l", 1, 2}, {"RPOP"}, {"RPOP", "l", 1, 2},
			{"LLEN"}, {"LLEN", "l", "x"},
			{"LRANGE", "l", 0}, {"LRANGE", "l", 0, 1, 2},
			{"LINDEX", "l"}, {"LINDEX", "l", 0, 1},
			{"LSET", "l", 0}, {"LSET", "l", 0, "x", "y"},
			{"LINSERT", "l", "BEFORE", "a"}, {"LINSERT", "l", "BEFORE", "a", "x", "y"},
			{"LREM", "l", 0}, {"LREM", "l", 0, "a", "b"},
			{"LTRIM", "l", 0}, {"LTRIM", "l", 0, 1, 2},
			{"LPOS", "l"},
			{"LMOVE", "l", "d", "LEFT"}, {"LMOVE", "l", "d", "LEFT", "RIGHT", "x"},
			{"RPOPLPUSH", "l"}, {"RPOPLPUSH", "l", "d", "x"},
			{"LMPOP", 1, "l"},
			{"BLPOP", "l"}, {"BRPOP", "l"},
			{"BLMOVE", "l", "d", "LEFT", "RIGHT"}, {"BLMOVE", "l", "d", "LEFT", "RIGHT", 0, "x"},
			{"BRPOPLPUSH", "l", "d"}, {"BRPOPLPUSH", "l", "d", 0, "x"},
			{"BLMPOP", 0, 1, "l"},
		} {
			k.err(errArity(strings.ToLower(args[0].(string))), args...)
		}
		k.err(errArity("rpush"), "rpush", "l") // the name is lower case however it was sent
		checkList(t, k, "l", []string{"a", "b"})
	})

	subtest(t, c, "WrongTypeListOnString", func(t *testing.T, k checker) {
		k.ok("SET", "s", "v")
		k.eq(1, "RPUSH", "l", "a")
		for _, args := range [][]any{
			{"LPUSH", "s", "a"}, {"RPUSH", "s", "a"}, {"LPUSHX", "s", "a"}, {"RPUSHX", "s", "a"},
			{"LPOP", "s"}, {"RPOP", "s"}, {"LPOP", "s", 2}, {"RPOP", "s", 0},
			{"LLEN", "s"}, {"LRANGE", "s", 0, -1}, {"LINDEX", "s", 0}, {"LSET", "s", 0, "x"},
			{"LINSERT", "s", "BEFORE", "a", "x"}, {"LREM", "s", 0, "a"}, {"LTRIM", "s", 0, 1},
			{"LPOS", "s", "a"}, {"LPOS", "s", "a", "COUNT", 0},
			{"LMOVE", "s", "l", "LEFT", "RIGHT"}, {"LMOVE", "l", "s", "LEFT", "RIGHT"},
			{"LMOVE", "s", "s", "LEFT", "RIGHT"},
			{"RPOPLPUSH", "s", "l"}, {"RPOPLPUSH", "l", "s"},
			{"LMPOP", 1, "s", "LEFT"}, {"LMPOP", 2, "missing", "s", "LEFT"},
			{"BLPOP", "s", 0}, {"BLPOP", "missing", "s", 0}, {"BRPOP", "s", 0},
			{"BLMOVE", "s", "l", "LEFT", "RIGHT", 0}, {"BLMOVE", "l", "s", "LEFT", "RIGHT", 0},
			{"BRPOPLPUSH", "s", "l", 0}, {"BRPOPLPUSH", "l", "s", 0},
			{"BLMPOP", 0, 1, "s", "LEFT"},
		} {
			k.err(errWrongType, args...)
		}
		k.eq("v", "GET", "s")
		checkList(t, k, "l", []string{"a"}) // a refused move took nothing from its source
		// The first non-empty key answers before a later key's type is looked at; a missing
		// source answers null before the destination's is.
		k.eq([]any{"l", []any{"a"}}, "LMPOP", 2, "l", "s", "LEFT")
		k.eq(1, "RPUSH", "l", "a")
		k.eq([]any{"l", "a"}, "BLPOP", "l", "s", 0)
		k.null("LMOVE", "missing", "s", "LEFT", "RIGHT")
		k.null("RPOPLPUSH", "missing", "s")
		k.eq("string", "TYPE", "s")
	})

	subtest(t, c, "WrongTypeOthersOnList", func(t *testing.T, k checker) {
		k.eq(2, "RPUSH", "l", "a", "b")
		for _, args := range [][]any{
			{"GET", "l"}, {"APPEND", "l", "x"}, {"INCR", "l"}, {"STRLEN", "l"},
			{"GETRANGE", "l", 0, 1}, {"SETRANGE", "l", 0, "x"}, {"GETDEL", "l"},
			{"SET", "l", "v", "GET"},
			{"HSET", "l", "f", "v"}, {"HGET", "l", "f"}, {"HGETALL", "l"},
			{"SADD", "l", "a"}, {"SMEMBERS", "l"}, {"SCARD", "l"},
		} {
			k.err(errWrongType, args...)
		}
		k.eq([]any{nil}, "MGET", "l") // MGET answers nil for other types
		checkList(t, k, "l", []string{"a", "b"})
		// SET replaces a list, and drops its TTL.
		k.eq(1, "EXPIRE", "l", 100)
		k.ok("SET", "l", "v")
		k.eq("string", "TYPE", "l")
		k.eq(-1, "TTL", "l")
		k.err(errWrongType, "LLEN", "l")
	})

	subtest(t, c, "RESP3", func(t *testing.T, k checker) {
		k3 := newChecker(t, s.ClientOpts(&redis.Options{Protocol: 3}))
		k3.eq(3, "RPUSH", "l", "a", "b", "c")
		k3.eq([]string{"a", "b", "c"}, "LRANGE", "l", 0, -1)
		k3.eq([]string{}, "LRANGE", "missing", 0, -1)
		k3.eq("b", "LINDEX", "l", 1)
		k3.null("LINDEX", "l", 10)
		k3.null("LPOS", "l", "zz")
		k3.eq([]any{int64(0)}, "LPOS", "l", "a", "COUNT", 0)
		k3.eq([]string{"a"}, "LPOP", "l", 1)
		k3.null("LPOP", "missing", 1)
		k3.null("LMOVE", "missing", "x", "LEFT", "LEFT")
		k3.eq([]any{"l", []any{"c"}}, "LMPOP", 1, "l", "RIGHT")
		k3.null("LMPOP", 1, "missing", "RIGHT")
		// BLPOP answers a two-element array, not a map, in RESP3 too.
		k3.eq([]any{"l", "b"}, "BLPOP", "missing", "l", 0)
		k3.eq(0, "EXISTS", "l")

		k3.eq(1, "RPUSH", "k", "v")
		r := dialRESP(t, s)
		r.hello3()
		r.expectLines([]string{"_\r\n"}, "LINDEX", "missing", "0")
		r.expectLines([]string{"_\r\n"}, "LMPOP", "1", "missing", "LEFT")
		r.expectLines([]string{"_\r\n"}, "RPOPLPUSH", "missing", "x")
		r.expectLines([]string{"*0\r\n"}, "LRANGE", "missing", "0", "-1")
		r.expectLines([]string{"*2\r\n", "$1\r\n", "k\r\n", "*1\r\n", "$1\r\n", "v\r\n"}, "LMPOP", "1", "k", "LEFT")
	})

	subtest(t, c, "RESP2Nulls", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"LINDEX", "missing", "0"}, "$-1\r\n"},
			{[]string{"LPOS", "missing", "a"}, "$-1\r\n"},
			{[]string{"LMOVE", "missing", "x", "LEFT", "LEFT"}, "$-1\r\n"},
			{[]string{"RPOPLPUSH", "missing", "x"}, "$-1\r\n"},
			{[]string{"LMPOP", "1", "missing", "LEFT"}, "*-1\r\n"},
			{[]string{"LRANGE", "missing", "0", "-1"}, "*0\r\n"},
			{[]string{"LPOS", "missing", "a", "COUNT", "0"}, "*0\r\n"},
		} {
			if got := r.oneLine(tc.args...); got != tc.want {
				t.Fatalf("%q: %q; want %q", tc.args, got, tc.want)
			}
		}
	})
}

// TestListKeyspace checks the generic key commands on list keys.
func TestListKeyspace(t *testing.T) {
	s, c := startServer(t)
	db1 := s.ClientOpts(&redis.Options{DB: 1})

	subtest(t, c, "TypeAndEncoding", func(t *testing.T, k checker) {
		k.eq(1, "RPUSH", "small", "a")
		k.eq(1000, setArgs("RPUSH", "many", setNames("e", 1000))...)
		k.eq(1, "RPUSH", "wide", strings.Repeat("x", 10000))
		for _, key := range []string{"small", "many", "wide"} {
			k.eq("list", "TYPE", key)
			if enc := k.str("OBJECT", "ENCODING", key); !slices.Contains(listEncodings, enc) {
				t.Fatalf("OBJECT ENCODING %s: %q; want one of %q", key, enc, listEncodings)
			}
		}
		k.null("OBJECT", "ENCODING", "nokey")
	})

	subtest(t, c, "DelExists", func(t *testing.T, k checker) {
		for _, key := range []string{"l1", "l2", "l3"} {
			k.eq(1, "RPUSH", key, key)
		}
		k.eq(1000, setArgs("RPUSH", "big", setNames("e", 1000))...)
		k.eq(3, "EXISTS", "l1", "l2", "missing", "l1")
		k.eq(4, "DBSIZE")
		k.eq(1, "DEL", "l1")
		k.eq(2, "UNLINK", "l2", "l3", "missing")
		k.eq(1, "DEL", "big")
		k.eq(0, "EXISTS", "l1", "l2", "l3", "big")
		k.eq([]string{}, "LRANGE", "big", 0, -1)
		k.eq(0, "LLEN", "big")
		k.eq(0, "DBSIZE")
		// A deleted list's name starts again empty.
		k.eq(1, "RPUSH", "big", "new")
		checkList(t, k, "big", []string{"new"})
	})

	subtest(t, c, "Expire", func(t *testing.T, k checker) {
		k.eq(2, "RPUSH", "l", "a", "b")
		k.eq(-1, "TTL", "l")
		k.eq(1, "EXPIRE", "l", 100)
		k.between(99, 100, "TTL", "l")
		// Changing the elements keeps the key's TTL.
		k.eq(3, "LPUSH", "l", "z")
		k.ok("LSET", "l", 1, "A")
		k.eq(4, "LINSERT", "l", "AFTER", "A", "y")
		k.eq(1, "LREM", "l", 0, "y")
		k.eq("b", "RPOP", "l")
		k.between(99, 100, "TTL", "l")
		k.eq(1, "PERSIST", "l")
		k.eq(-1, "TTL", "l")
		checkList(t, k, "l", []string{"z", "A"})

		// An expired list is gone, and a new one under its name starts empty.
		k.eq(1, "PEXPIRE", "l", 100)
		k.between(1, 100, "PTTL", "l")
		harness.Eventually(t, 10*time.Second, "the list to expire", func() bool {
			return k.int("EXISTS", "l") == 0
		})
		k.eq(0, "LLEN", "l")
		k.null("LPOP", "l")
		k.eq([]string{}, "LRANGE", "l", 0, -1)
		k.eq("none", "TYPE", "l")
		k.eq(0, "RPUSHX", "l", "x")
		k.eq(1, "RPUSH", "l", "x")
		checkList(t, k, "l", []string{"x"})
		k.eq(-1, "TTL", "l")
	})

	subtest(t, c, "Rename", func(t *testing.T, k checker) {
		want := []string{"a", "b", "c"}
		k.eq(3, setArgs("RPUSH", "src", want)...)
		k.eq(1, "EXPIRE", "src", 100)
		k.ok("RENAME", "src", "dst")
		k.eq(0, "EXISTS", "src")
		checkList(t, k, "dst", want)
		k.between(99, 100, "TTL", "dst") // RENAME moves the TTL with the value
		// RENAME over a string replaces it with the list.
		k.ok("SET", "str", "v")
		k.ok("RENAME", "dst", "str")
		k.eq("list", "TYPE", "str")
		checkList(t, k, "str", want)
		k.eq(1, "RPUSH", "other", "z")
		k.eq(0, "RENAMENX", "str", "other")
		k.eq(1, "RENAMENX", "str", "fresh")
		checkList(t, k, "fresh", want)
		checkList(t, k, "other", []string{"z"})
	})

	subtest(t, c, "Copy", func(t *testing.T, k checker) {
		k.eq(3, "RPUSH", "src", "a", "b", "c")
		k.eq(1, "COPY", "src", "cp")
		checkList(t, k, "src", []string{"a", "b", "c"})
		checkList(t, k, "cp", []string{"a", "b", "c"})
		// The copy is independent of its source.
		k.ok("LSET", "cp", 0, "changed")
		k.eq(4, "RPUSH", "cp", "d")
		k.eq("a", "LPOP", "src")
		checkList(t, k, "src", []string{"b", "c"})
		checkList(t, k, "cp", []string{"changed", "b", "c", "d"})
		k.eq(0, "COPY", "src", "cp")
		k.eq(1, "COPY", "src", "cp", "REPLACE")
		checkList(t, k, "cp", []string{"b", "c"})
		k.eq(1, "COPY", "src", "cp", "DB", 1)
		checkList(t, newChecker(t, db1), "cp", []string{"b", "c"})
		k.eq(0, "COPY", "nokey", "cp2")
	})

	subtest(t, c, "Move", func(t *testing.T, k checker) {
		want := setNames("e", 300)
		k.eq(300, setArgs("RPUSH", "l", want)...)
		k.eq(1, "MOVE", "l", 1)
		k.eq(0, "EXISTS", "l")
		k1 := newChecker(t, db1)
		k1.eq("list", "TYPE", "l")
		checkList(t, k1, "l", want)
		k.eq(1, "RPUSH", "l", "a")
		k.eq(0, "MOVE", "l", 1) // the destination has the key: nothing moves
		checkList(t, k, "l", []string{"a"})
		checkList(t, k1, "l", want)
	})

	subtest(t, c, "ScanType", func(t *testing.T, k checker) {
		var lists, strs []string
		for i := 0; i < 20; i++ {
			lk, sk := fmt.Sprintf("list:%d", i), fmt.Sprintf("str:%d", i)
			k.eq(1, "RPUSH", lk, i)
			k.ok("SET", sk, i)
			lists, strs = append(lists, lk), append(strs, sk)
		}
		k.eq(1, "SADD", "set", "m")
		checkKeys(t, "SCAN TYPE list", scanAll(t, k, "TYPE", "list", "COUNT", 5), lists...)
		checkKeys(t, "SCAN TYPE LIST", scanAll(t, k, "TYPE", "LIST", "COUNT", 100), lists...)
		checkKeys(t, "SCAN MATCH list:1* TYPE list", scanAll(t, k, "MATCH", "list:1*", "TYPE", "list"),
			"list:1", "list:10", "list:11", "list:12", "list:13", "list:14", "list:15", "list:16", "list:17", "list:18", "list:19")
		checkKeys(t, "SCAN TYPE string", scanAll(t, k, "TYPE", "string"), strs...)
		k.eq(41, "DBSIZE")
		// A list emptied by a pop no longer shows.
		k.eq("0", "LPOP", "list:0")
		checkKeys(t, "SCAN TYPE list after a pop", scanAll(t, k, "TYPE", "list"), lists[1:]...)
	})
}

// TestListTransactions checks list commands inside MULTI/EXEC and WATCH on list keys.
func TestListTransactions(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "MultiExec", func(t *testing.T, k checker) {
		k.ok("SET", "s", "str")
		r := dialRESP(t, s)
		got := r.txRun(
			txCmd("RPUSH", "l", "a", "b", "c"),
			txCmd("LPUSH", "l", "z"),
			txCmd("LPUSH", "s", "x"), // WRONGTYPE at execution; the others still apply
			txCmd("LRANGE", "l", "0", "-1"),
			txCmd("LPOP", "l", "2"),
			txCmd("LSET", "l", "5", "x"),
			txCmd("LMOVE", "l", "m", "RIGHT", "LEFT"),
			txCmd("LMPOP", "2", "l", "m", "LEFT"),
			txCmd("LLEN", "l"),
			txCmd("LPOP", "missing", "2"),
		)
		want := []any{int64(3), int64(4), respError(errWrongType), []any{"z", "a", "b", "c"},
			[]any{"z", "a"}, respError(errListIndexRange), "c", []any{"l", []any{"b"}}, int64(0), nil}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EXEC: got %s; want %s", short(got), short(want))
		}
		checkList(t, k, "l", nil)
		checkList(t, k, "m", []string{"c"})
		k.eq("str", "GET", "s")

		// An arity error is found while queueing and discards the whole transaction.
		r.expect(txOK, "MULTI")
		r.expect(txQueued, "RPUSH", "m", "d")
		r.expect(respError(errArity("lpush")), "LPUSH", "m")
		r.expect(respError(errTxAbortPrev), "EXEC")
		checkList(t, k, "m", []string{"c"})
	})

	subtest(t, c, "TxPipelined", func(t *testing.T, k checker) {
		var push *redis.IntCmd
		var pop *redis.StringSliceCmd
		var rng *redis.StringSliceCmd
		_, err := c.TxPipelined(k.ctx, func(p redis.Pipeliner) error {
			push = p.RPush(k.ctx, "l", "a", "b", "c")
			pop = p.LPopCount(k.ctx, "l", 2)
			rng = p.LRange(k.ctx, "l", 0, -1)
			return nil
		})
		if err != nil {
			t.Fatalf("TxPipelined: %v", err)
		}
		if push.Val() != 3 || !slices.Equal(pop.Val(), []string{"a", "b"}) || !slices.Equal(rng.Val(), []string{"c"}) {
			t.Fatalf("TxPipelined: RPUSH %d, LPOP 2 %q, LRANGE %q", push.Val(), pop.Val(), rng.Val())
		}
	})

	subtest(t, c, "WatchAbortedByLPush", func(t *testing.T, k checker) {
		k.eq(2, "RPUSH", "l", "a", "b")
		w := dialRESP(t, s)
		w.expect(txOK, "WATCH", "l")
		k.eq(3, "LPUSH", "l", "other") // another client pushes
		w.expect(txOK, "MULTI")
		w.expect(txQueued, "RPOP", "l")
		w.expect(txQueued, "RPUSH", "l", "mine")
		w.expect(nil, "EXEC") // aborted: a null reply
		checkList(t, k, "l", []string{"other", "a", "b"})

		// A WATCHed key that does not exist yet is changed by an LPUSH creating it.
		w.expect(txOK, "WATCH", "new")
		k.eq(1, "LPUSH", "new", "x")
		w.expect(txOK, "MULTI")
		w.expect(txQueued, "LPUSH", "new", "mine")
		w.expect(nil, "EXEC")
		checkList(t, k, "new", []string{"x"})

		// The same through go-redis's optimistic-locking helper.
		err := c.Watch(k.ctx, func(tx *redis.Tx) error {
			k.eq(4, "LPUSH", "l", "from another client")
			_, err := tx.TxPipelined(k.ctx, func(p redis.Pipeliner) error {
				p.RPush(k.ctx, "l", "mine")
				return nil
			})
			return err
		}, "l")
		if !errors.Is(err, redis.TxFailedErr) {
			t.Fatalf("Watch with a conflicting LPUSH: %v; want %v", err, redis.TxFailedErr)
		}
		checkList(t, k, "l", []string{"from another client", "other", "a", "b"})
	})

	subtest(t, c, "WatchWhatCounts", func(t *testing.T, k checker) {
		// Each case changes (or not) the watched list from another client between WATCH and EXEC.
		for _, tc := range []struct {
			name    string
			change  []any
			aborted bool
		}{
			{"RPUSH", []any{"RPUSH", "l", "x"}, true},
			{"LPUSHX", []any{"LPUSHX", "l", "x"}, true},
			{"LPOP", []any{"LPOP", "l"}, true},
			{"LSET same value", []any{"LSET", "l", 0, "a"}, true},
			{"LREM of nothing", []any{"LREM", "l", 0, "zz"}, false},
			{"LINSERT missing pivot", []any{"LINSERT", "l", "BEFORE", "zz", "x"}, false},
			{"LMOVE to another key", []any{"LMOVE", "l", "other", "LEFT", "LEFT"}, true},
			{"LPOP 0", []any{"LPOP", "l", 0}, false},
			{"LRANGE", []any{"LRANGE", "l", 0, -1}, false},
			{"RPUSH other key", []any{"RPUSH", "other", "x"}, false},
		} {
			k.ok("FLUSHALL")
			k.eq(2, "RPUSH", "l", "a", "b")
			w := dialRESP(t, s)
			w.expect(txOK, "WATCH", "l")
			if _, err := k.do(tc.change...); err != nil && err != redis.Nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			w.expect(txOK, "MULTI")
			w.expect(txQueued, "LLEN", "l")
			got := w.do("EXEC")
			if tc.aborted && got != nil {
				t.Fatalf("%s between WATCH and EXEC: EXEC gave %s; want the transaction aborted", tc.name, short(got))
			}
			if !tc.aborted && len(asSlice(t, got)) != 1 {
				t.Fatalf("%s between WATCH and EXEC: EXEC gave %s; want one reply", tc.name, short(got))
			}
		}
	})
}

// largeListElem is element i of TestListLarge's list.
func largeListElem(i int) string { return fmt.Sprintf("elem:%05d", i) }

// TestListLarge builds a 5,000-element list through pipelined RPUSHes of 100 elements each and
// reads it back in slices, by index and by popping from both ends.
func TestListLarge(t *testing.T) {
	const n = 5000
	s := harness.Start(t)
	// No retries: a resent pipeline of RPUSHes would push its elements twice.
	c := s.ClientOpts(&redis.Options{MaxRetries: -1, ReadTimeout: 2 * time.Minute})
	k := newChecker(t, c)
	want := make([]string, n)
	var cmds [][]any
	for lo := 0; lo < n; lo += 100 {
		for i := lo; i < lo+100; i++ {
			want[i] = largeListElem(i)
		}
		cmds = append(cmds, setArgs("RPUSH", "big", want[lo:lo+100]))
	}
	for i, r := range pipelineDo(t, c, len(cmds), cmds) {
		if r != int64((i+1)*100) {
			t.Fatalf("pipelined RPUSH %d: %s; want %d", i, short(r), (i+1)*100)
		}
	}
	k.eq(n, "LLEN", "big")
	for _, sl := range [][2]int{{0, 99}, {100, 199}, {2450, 2549}, {4900, 4999}, {1000, 3999}, {0, n - 1}} {
		k.eq(want[sl[0]:sl[1]+1], "LRANGE", "big", sl[0], sl[1])
	}
	k.eq(want[n-100:], "LRANGE", "big", -100, -1)
	k.eq(want[:10], "LRANGE", "big", -n-10, 9)
	k.eq(want[n-3:], "LRANGE", "big", n-3, n+100)
	k.eq(want[0], "LINDEX", "big", 0)
	k.eq(want[n-1], "LINDEX", "big", n-1)
	k.eq(want[n-1], "LINDEX", "big", -1)
	k.eq(want[0], "LINDEX", "big", -n)
	k.eq(want[2500], "LINDEX", "big", 2500)
	k.null("LINDEX", "big", n)
	k.null("LINDEX", "big", -n-1)
	k.eq(3210, "LPOS", "big", want[3210])
	if enc := k.str("OBJECT", "ENCODING", "big"); !slices.Contains(listEncodings, enc) {
		t.Fatalf("OBJECT ENCODING big: %q; want one of %q", enc, listEncodings)
	}

	// Pops from both ends.
	k.eq(want[:100], "LPOP", "big", 100)
	rev := slices.Clone(want[n-250:])
	slices.Reverse(rev)
	k.eq(rev, "RPOP", "big", 250)
	want = want[100 : n-250]
	k.eq(len(want), "LLEN", "big")
	k.eq(want[0], "LINDEX", "big", 0)
	k.eq(want[len(want)-1], "LINDEX", "big", -1)
	// Edits in the middle.
	k.ok("LSET", "big", 2000, "changed")
	want[2000] = "changed"
	k.eq(len(want)+1, "LINSERT", "big", "AFTER", want[3000], "inserted")
	want = slices.Insert(want, 3001, "inserted")
	k.eq(1, "LREM", "big", 0, want[10])
	want = slices.Delete(want, 10, 11)
	checkList(t, k, "big", want)
	k.ok("LTRIM", "big", 1000, 1999)
	checkList(t, k, "big", want[1000:2000])
	k.eq(1, "DEL", "big")
	k.eq(0, "EXISTS", "big")
}

// listModel is what each db must hold after listWorkload: key -> elements, and the db 0 keys
// given a TTL of about an hour.
type listModel struct {
	dbs map[int]map[string][]string
	ttl map[string]bool
}

// listWorkload writes round's lists into db 0 and db 2 with one acknowledged command at a
// time, covering the ways a list changes (pushes at both ends, pops with and without a count,
// LSET, LINSERT, LREM, LTRIM, moves between lists and rotation, a list emptied to nothing,
// deleted and recreated, renamed, moved, with a TTL, long and with large elements) and records
// in m what must be there afterwards.
func listWorkload(t *testing.T, s *harness.Server, m *listModel, round int) {
	t.Helper()
	k := newChecker(t, s.Client())
	db0 := m.dbs[0]
	key := func(name string) string { return fmt.Sprintf("r%d:%s", round, name) }

	k.eq(3, "RPUSH", key("small"), "a", "b", "c")
	k.eq(5, "LPUSH", key("small"), "y", "z")
	db0[key("small")] = []string{"z", "y", "a", "b", "c"}

	long := setNames(fmt.Sprintf("r%d-e", round), 600)
	for i, e := range long {
		k.eq(i+1, "RPUSH", key("long"), e)
	}
	db0[key("long")] = long

	wide := make([]string, 5)
	for i := range wide {
		wide[i] = strings.Repeat(fmt.Sprint(i), 3000+i)
	}
	k.eq(5, setArgs("RPUSH", key("wide"), wide)...)
	db0[key("wide")] = wide

	bin := "\x00\r\n\xff"
	k.eq(2, "RPUSH", key("odd"), "", bin)
	db0[key("odd")] = []string{"", bin}

	k.eq(8, "RPUSH", key("edited"), "0", "1", "2", "3", "4", "5", "6", "7")
	k.ok("LSET", key("edited"), 2, "two")
	k.eq(9, "LINSERT", key("edited"), "BEFORE", "5", "4.5")
	k.eq(1, "LREM", key("edited"), 0, "6")
	k.eq("0", "LPOP", key("edited"))
	k.eq([]string{"7"}, "RPOP", key("edited"), 1)
	k.ok("LTRIM", key("edited"), 0, 4)
	db0[key("edited")] = []string{"1", "two", "3", "4", "4.5"}

	k.eq(4, "RPUSH", key("from"), "a", "b", "c", "d")
	k.eq("a", "LMOVE", key("from"), key("to"), "LEFT", "RIGHT")
	k.eq("d", "RPOPLPUSH", key("from"), key("to"))
	k.eq("b", "LMOVE", key("from"), key("from"), "LEFT", "RIGHT")
	k.eq([]any{key("from"), []any{"c", "b"}}, "LMPOP", 1, key("from"), "LEFT", "COUNT", 5)
	db0[key("to")] = []string{"d", "a"}

	k.eq(2, "RPUSH", key("emptied"), "x", "y")
	k.eq([]string{"x", "y"}, "LPOP", key("emptied"), 2)

	k.eq(2, "RPUSH", key("recreated"), "a", "b")
	k.eq(1, "DEL", key("recreated"))
	k.eq(1, "RPUSH", key("recreated"), "c")
	db0[key("recreated")] = []string{"c"}

	k.eq(1, "RPUSH", key("ttl"), "t")
	k.eq(1, "EXPIRE", key("ttl"), 3600)
	db0[key("ttl")] = []string{"t"}
	m.ttl[key("ttl")] = true

	k.eq(2, "RPUSH", key("src"), "a", "b")
	k.ok("RENAME", key("src"), key("renamed"))
	db0[key("renamed")] = []string{"a", "b"}

	k.eq(1, "RPUSH", key("moved"), "m")
	k.eq(1, "MOVE", key("moved"), 2)
	m.dbs[2][key("moved")] = []string{"m"}

	// A list of an earlier round changes in this one.
	if round > 1 {
		prev := fmt.Sprintf("r%d:small", round-1)
		k.eq(db0[prev][0], "LPOP", prev)
		k.eq(len(db0[prev]), "RPUSH", prev, fmt.Sprint(round))
		db0[prev] = append(db0[prev][1:], fmt.Sprint(round))
	}
}

// verifyListModel checks that each db holds exactly the lists of m, element for element.
func verifyListModel(t *testing.T, s *harness.Server, m *listModel, when string) {
	t.Helper()
	for db, keys := range m.dbs {
		k := newChecker(t, s.ClientOpts(&redis.Options{DB: db}))
		want := slices.Sorted(maps.Keys(keys))
		checkKeys(t, fmt.Sprintf("%s: db %d SCAN", when, db), scanAll(t, k, "COUNT", 1000), want...)
		for _, key := range want {
			k.eq("list", "TYPE", key)
			if got := k.arr("LRANGE", key, 0, -1); !slices.Equal(got, anySlice(keys[key])) {
				t.Fatalf("%s: db %d LRANGE %s: %s", when, db, key, listDiff(got, keys[key]))
			}
			if m.ttl[key] && db == 0 {
				k.between(3000, 3600, "TTL", key)
			} else {
				k.eq(-1, "TTL", key)
			}
		}
	}
}

// TestListRestart writes lists, restarts the server cleanly and checks every element, twice.
func TestListRestart(t *testing.T) {
	s := harness.Start(t)
	m := &listModel{dbs: map[int]map[string][]string{0: {}, 2: {}}, ttl: map[string]bool{}}
	for round := 1; round <= 2; round++ {
		listWorkload(t, s, m, round)
		verifyListModel(t, s, m, fmt.Sprintf("round %d before restart", round))
		s.Restart()
		verifyListModel(t, s, m, fmt.Sprintf("round %d after restart", round))
	}
}

// TestListKill9AppendfsyncAlways: with fsync before every reply, every acknowledged list write
// survives kill -9, over two rounds on the same data directory. A third round has several
// clients pushing concurrently right up to the kill, and one moving elements from list to
// list; each acknowledged write must be there.
func TestListKill9AppendfsyncAlways(t *testing.T) {
	s := harness.Start(t, "--appendfsync", "always")
	m := &listModel{dbs: map[int]map[string][]string{0: {}, 2: {}}, ttl: map[string]bool{}}
	for round := 1; round <= 2; round++ {
		listWorkload(t, s, m, round)
		s.KillRestart()
		verifyListModel(t, s, m, fmt.Sprintf("round %d after kill -9", round))
	}

	// Concurrent writers, each pushing to its own list one element per RPUSH, and a mover
	// taking elements from "move:src" to "move:dst" with LMOVE. The kill comes while they
	// write, so the write after the last acknowledged one may or may not be there.
	ctx := harness.Ctx(t)
	const writers = 4
	const moveN = 3000
	k := newChecker(t, s.Client())
	k.eq(moveN, setArgs("RPUSH", "move:src", setNames("m", moveN))...)
	c := s.ClientOpts(&redis.Options{PoolSize: writers + 2, MaxRetries: -1})
	acked := make([]int, writers+1) // the last is the mover's
	errs := make([]error, writers+1)
	var total atomic.Int64
	var killed, failed atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w <= writers; w++ {
		// One sticky connection per writer: once the kill breaks it, go-redis reports the
		// error instead of dialing the restarted server.
		conn := c.Conn()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			for i := 0; ; i++ {
				var err error
				if w < writers {
					var n int64
					n, err = conn.RPush(ctx, fmt.Sprintf("live:%d", w), largeHashValue(i)).Result()
					if err == nil && n != int64(i+1) {
						err = fmt.Errorf("RPUSH %d replied length %d", i, n)
					}
				} else if i < moveN {
					var e string
					e, err = conn.LMove(ctx, "move:src", "move:dst", "LEFT", "RIGHT").Result()
					if err == nil && e != fmt.Sprint("m", i) {
						err = fmt.Errorf("LMOVE %d moved %q", i, e)
					}
				} else {
					return
				}
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
	harness.Eventually(t, 60*time.Second, "2,000 acknowledged writes", func() bool {
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
	k = newChecker(t, s.Client())
	for w := 0; w < writers; w++ {
		key := fmt.Sprintf("live:%d", w)
		got := k.arr("LRANGE", key, 0, -1)
		if len(got) != acked[w] && len(got) != acked[w]+1 {
			t.Fatalf("%s: %d elements after kill -9; %d RPUSHes were acknowledged", key, len(got), acked[w])
		}
		want := make([]string, len(got))
		for i := range want {
			want[i] = largeHashValue(i)
		}
		if !slices.Equal(got, anySlice(want)) {
			t.Fatalf("%s after kill -9: %s", key, listDiff(got, want))
		}
		m.dbs[0][key] = want
	}
	// Each element is in exactly one of the two lists, the moved ones in order.
	moved := k.int("LLEN", "move:dst")
	if moved != int64(acked[writers]) && moved != int64(acked[writers]+1) {
		t.Fatalf("move:dst has %d elements after kill -9; %d LMOVEs were acknowledged", moved, acked[writers])
	}
	all := setNames("m", moveN)
	for key, elems := range map[string][]string{"move:dst": all[:moved], "move:src": all[moved:]} {
		if len(elems) > 0 { // an emptied list is no key
			m.dbs[0][key] = elems
		}
	}
	t.Logf("%d pushes and %d moves acknowledged before kill -9", total.Load()-int64(acked[writers]), acked[writers])
	verifyListModel(t, s, m, "after the concurrent round")
}
