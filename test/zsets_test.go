package test

// End-to-end tests of the sorted-set commands (ZADD ZINCRBY ZREM ZSCORE ZMSCORE ZCARD ZCOUNT
// ZLEXCOUNT ZRANK ZREVRANK, the ZRANGE family and ZRANGESTORE, ZREMRANGEBY*, ZPOPMIN ZPOPMAX ZMPOP
// and the blocking BZPOPMIN BZPOPMAX BZMPOP, ZRANDMEMBER, ZUNION ZINTER ZDIFF and their STORE
// forms, ZINTERCARD, ZSCAN), of sorted-set keys under the keyspace commands, transactions,
// restarts and kill -9. Every reply and error line was checked against redis-server 7.0.15
// (LAVIK_TEST_SERVER=redis go test -run 'TestZSet' ./...). Replies whose order Redis does not
// define (ZRANDMEMBER, ZSCAN) are compared as sets.
//
// Scores are compared as the exact strings Redis 7.0 prints (printf's %.17g, "inf", "-inf"):
// clients parse them, and a server that prints 0.1 as "0.1" is a visible difference.

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
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
	errZNaN         = "ERR resulting score is not a number (NaN)"
	errZXXNX        = "ERR XX and NX options at the same time are not compatible"
	errZGTLTNX      = "ERR GT, LT, and/or NX options at the same time are not compatible"
	errZIncrPair    = "ERR INCR option supports a single increment-element pair"
	errZMinMaxFloat = "ERR min or max is not a float"
	errZMinMaxLex   = "ERR min or max not valid string range item"
	errZLimitBy     = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	errZLexScores   = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	errZCount       = "ERR count should be greater than 0"
	errZWeight      = "ERR weight value is not a float"
	errZTimeoutNeg  = "ERR timeout is negative"
	errZTimeout     = "ERR timeout is not a float or out of range"
	// ZPOPMIN and ZPOPMAX refuse a negative or non-integer count with SPOP's line
	// (errSetPopCount); ZMPOP and BZMPOP say errZCount. ZRANDMEMBER's count limits are
	// HRANDFIELD's (errRandCountRange, errRandWithValues); ZMPOP's numkeys error is SINTERCARD's
	// (errSetNumkeys) and ZINTERCARD's LIMIT error SINTERCARD's (errSetLimit).
)

// errZInputKeys is the error of ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD for a
// numkeys below 1.
func errZInputKeys(cmd string) string {
	return "ERR at least 1 input key is needed for '" + cmd + "' command"
}

// zsetEncodings are the OBJECT ENCODING replies a sorted set may have: Redis 7 says "listpack"
// while it is small (<= 128 members of <= 64 bytes) and "skiplist" beyond; Redis 6 said
// "ziplist" for the small form. The tests only require one of these names.
var zsetEncodings = []string{"listpack", "skiplist", "ziplist"}

// zsFormat formats a score as Redis 7.0 prints it in a bulk string or RESP3 double: %.17g (which
// Go's 'g' format with 17 digits reproduces, exponent included), and inf and -inf.
func zsFormat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// zsSorted returns the members of m with their scores, flat as ZRANGE ... WITHSCORES replies in
// RESP2, in sorted-set order: by score, then by member bytes.
func zsSorted(m map[string]float64) []string {
	members := slices.Collect(maps.Keys(m))
	sort.Slice(members, func(i, j int) bool {
		a, b := members[i], members[j]
		if m[a] != m[b] {
			return m[a] < m[b]
		}
		return a < b
	})
	out := make([]string, 0, 2*len(members))
	for _, mem := range members {
		out = append(out, mem, zsFormat(m[mem]))
	}
	return out
}

// zsAddArgs returns ZADD key followed by the score/member pairs of m.
func zsAddArgs(key string, m map[string]float64) []any {
	args := []any{"ZADD", key}
	for _, mem := range slices.Sorted(maps.Keys(m)) {
		args = append(args, zsFormat(m[mem]), mem)
	}
	return args
}

// zsCheck checks that key holds exactly the flat member/score pairs want, in this order,
// through ZRANGE WITHSCORES and ZCARD. No pairs means the key must not exist.
func zsCheck(t testing.TB, k checker, key string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	got := k.arr("ZRANGE", key, 0, -1, "WITHSCORES")
	if !slices.Equal(zsStrings(t, got), want) {
		t.Fatalf("ZRANGE %s 0 -1 WITHSCORES: %s", key, zsDiff(zsStrings(t, got), want))
	}
	k.eq(len(want)/2, "ZCARD", key)
	if len(want) == 0 {
		k.eq(0, "EXISTS", key)
	}
}

// zsStrings converts an array reply of bulk strings to []string.
func zsStrings(t testing.TB, a []any) []string {
	t.Helper()
	out := make([]string, len(a))
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			t.Fatalf("element %d of %s is not a string", i, short(a))
		}
		out[i] = s
	}
	return out
}

// zsDiff describes where two flat member/score lists first differ.
func zsDiff(got, want []string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	at := func(s []string) string {
		if i >= len(s) {
			return "(end)"
		}
		return strconv.Quote(trunc(s[i]))
	}
	return fmt.Sprintf("%d elements, want %d; first difference at %d: got %s, want %s",
		len(got), len(want), i, at(got), at(want))
}

// zsNames returns n members prefix00000, prefix00001, ... whose byte order is their numeric order.
func zsNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return out
}

// TestZSetCommands checks each sorted-set command's replies and errors on small sorted sets.
func TestZSetCommands(t *testing.T) {
	_, c := startServer(t)

	subtest(t, c, "ZAdd", func(t *testing.T, k checker) {
		k.eq(1, "ZADD", "z", 1, "a")
		k.eq(2, "ZADD", "z", 1, "a", 2, "b", 3, "c") // only new members count
		k.eq(0, "ZADD", "z", 5, "a")                 // a new score is not a new member
		k.eq("zset", "TYPE", "z")
		zsCheck(t, k, "z", "b", "2", "c", "3", "a", "5")
		// A member named twice in one ZADD is added once, with the last score.
		k.eq(1, "ZADD", "z", 1, "d", 9, "d")
		k.eq("9", "ZSCORE", "z", "d")
		// Equal scores are ordered by member bytes; the empty member sorts first.
		k.eq(3, "ZADD", "eq", 0, "b", 0, "", 0, "B")
		zsCheck(t, k, "eq", "", "0", "B", "0", "b", "0")
		// Changing scores keeps the key's TTL.
		k.eq(1, "EXPIRE", "z", 100)
		k.eq(0, "ZADD", "z", 7, "a")
		k.eq(1, "ZADD", "z", 7, "e")
		k.between(99, 100, "TTL", "z")
		// A ZADD that is refused adds nothing, even the pairs before the bad one.
		k.err(errNotFloat, "ZADD", "n", 1, "x", "abc", "y")
		k.eq(0, "EXISTS", "n")
		k.err(errSyntax, "ZADD", "n", 1, "x", 2)
		k.eq(0, "EXISTS", "n")
	})

	subtest(t, c, "ZAddFlags", func(t *testing.T, k checker) {
		k.eq(3, "ZADD", "z", 1, "a", 2, "b", 3, "c")
		// CH counts changed scores as well as new members.
		k.eq(2, "ZADD", "z", "CH", 1, "a", 6, "b", 7, "d")
		k.eq(0, "ZADD", "z", "CH", 1, "a")
		// NX only adds; XX only updates.
		k.eq(1, "ZADD", "z", "NX", 100, "a", 8, "e")
		k.eq("1", "ZSCORE", "z", "a")
		k.eq(0, "ZADD", "z", "XX", 100, "a", 9, "f")
		k.eq("100", "ZSCORE", "z", "a")
		k.null("ZSCORE", "z", "f")
		k.eq(1, "ZADD", "z", "XX", "CH", 101, "a", 9, "g")
		k.null("ZSCORE", "z", "g")
		// GT and LT update only upwards and downwards, and still add new members.
		k.eq(0, "ZADD", "z", "GT", "CH", 50, "a")
		k.eq(1, "ZADD", "z", "GT", "CH", 200, "a")
		k.eq(0, "ZADD", "z", "LT", "CH", 300, "a")
		k.eq(1, "ZADD", "z", "LT", "CH", 1, "a")
		k.eq(1, "ZADD", "z", "GT", 1, "newgt")
		k.eq(1, "ZADD", "z", "LT", 1, "newlt")
		// XX with GT or LT: updates in one direction, adds nothing.
		k.eq(0, "ZADD", "z", "XX", "GT", 10, "a")
		k.eq("10", "ZSCORE", "z", "a")
		k.eq(1, "ZADD", "z", "XX", "LT", "CH", 0, "a", 5, "zz")
		k.null("ZSCORE", "z", "zz")
		// Options are case-insensitive, in any order, and only before the first score.
		k.eq(1, "ZADD", "z", "nx", 1, "q")
		k.eq(1, "ZADD", "z", "Ch", "Xx", 2, "q")
		k.err(errSyntax, "ZADD", "z", 1, "a", "NX")
		zsCheck(t, k, "z", "a", "0", "newgt", "1", "newlt", "1", "q", "2", "c", "3", "b", "6", "d", "7", "e", "8")
		// XX on a missing key creates nothing.
		k.eq(0, "ZADD", "missing", "XX", 1, "x")
		k.eq(0, "EXISTS", "missing")
		k.eq(1, "ZADD", "fresh", "GT", "CH", 1, "x")

		k.err(errZXXNX, "ZADD", "z", "NX", "XX", 1, "a")
		k.err(errZGTLTNX, "ZADD", "z", "NX", "GT", 1, "a")
		k.err(errZGTLTNX, "ZADD", "z", "NX", "LT", 1, "a")
		k.err(errZGTLTNX, "ZADD", "z", "GT", "LT", 1, "a")
		k.err(errZGTLTNX, "ZADD", "z", "NX", "GT", "LT", 1, "a")
		k.err(errZXXNX, "ZADD", "z", "XX", "NX", "INCR", 1, "a")
		k.err(errZGTLTNX, "ZADD", "z", "GT", "LT", "INCR", 1, "a")
		// Option conflicts are found before the key's type is looked at.
		k.ok("SET", "str", "v")
		k.err(errZXXNX, "ZADD", "str", "NX", "XX", 1, "a")
		k.err(errNotFloat, "ZADD", "str", "x", "a")
		k.err(errZIncrPair, "ZADD", "str", "INCR", 1, "a", 2, "b")
	})

	subtest(t, c, "ZAddIncr", func(t *testing.T, k checker) {
		// With INCR, ZADD behaves like ZINCRBY and replies with the new score (a bulk string).
		k.eq("5", "ZADD", "z", "INCR", 5, "a")
		k.eq("6.5", "ZADD", "z", "INCR", "1.5", "a")
		k.eq("7.5", "ZADD", "z", "INCR", "CH", 1, "a")
		k.eq("8.5", "ZADD", "z", "CH", "INCR", 1, "a")
		// A condition that stops the update gives a null reply.
		k.null("ZADD", "z", "INCR", "NX", 5, "a")
		k.null("ZADD", "z", "INCR", "XX", 5, "nope")
		k.null("ZADD", "z", "INCR", "GT", -100, "a")
		k.eq("-91.5", "ZADD", "z", "INCR", "LT", -100, "a")
		k.null("ZADD", "z", "INCR", "LT", 100, "a")
		k.null("ZADD", "z", "INCR", "GT", 0, "a") // an unchanged score is neither greater nor less
		k.null("ZADD", "z", "INCR", "LT", 0, "a")
		k.eq("5", "ZADD", "z", "GT", "INCR", 5, "newgt")
		k.eq("1", "ZADD", "z", "XX", "INCR", 92.5, "a")
		k.eq("1", "ZADD", "z", "NX", "INCR", 1, "brand")
		k.null("ZADD", "missing", "XX", "INCR", 1, "x")
		k.eq(0, "EXISTS", "missing")
		zsCheck(t, k, "z", "a", "1", "brand", "1", "newgt", "5")

		k.err(errZIncrPair, "ZADD", "z", "INCR", 1, "a", 2, "b")
		k.err(errSyntax, "ZADD", "z", "INCR", 1, "a", 2)
		k.err(errSyntax, "ZADD", "z", "INCR", 1)
		k.err(errArity("zadd"), "ZADD", "z", "INCR")
		k.err(errNotFloat, "ZADD", "z", "INCR", "nan", "a")
		// Infinite increments: inf + -inf is not a number.
		k.eq("inf", "ZADD", "z", "INCR", "inf", "a")
		k.err(errZNaN, "ZADD", "z", "INCR", "-inf", "a")
		k.eq("inf", "ZSCORE", "z", "a")
		k.eq("1e+308", "ZADD", "z", "INCR", "1e308", "big")
		k.eq("inf", "ZADD", "z", "INCR", "1e308", "big") // overflow gives inf, not an error
		k.eq("-inf", "ZADD", "z", "INCR", "-inf", "neg")
		k.eq("-inf", "ZADD", "z", "INCR", "-inf", "neg")
		k.err(errZNaN, "ZADD", "z", "INCR", "+inf", "neg")
		k.eq("-inf", "ZSCORE", "z", "neg")
	})

	subtest(t, c, "ScoreParsing", func(t *testing.T, k checker) {
		// Scores are read with strtod: inf, -inf, +inf, Infinity, hexadecimal and exponents are
		// valid; NaN, the empty string, spaces, trailing garbage and overflow are not.
		for _, tc := range []struct{ in, out string }{
			{"inf", "inf"}, {"+inf", "inf"}, {"-inf", "-inf"}, {"Infinity", "inf"}, {"-Infinity", "-inf"},
			{"inFinity", "inf"}, {"0x10", "16"}, {"1.5e3", "1500"}, {"1E2", "100"}, {"+7", "7"},
			{"-.5", "-0.5"}, {".5", "0.5"}, {"5.", "5"}, {"007", "7"}, {"1e-300", "1e-300"},
		} {
			k.eq(1, "ZADD", "p", tc.in, "m")
			k.eq(tc.out, "ZSCORE", "p", "m")
			k.eq(1, "DEL", "p")
		}
		for _, bad := range []string{"abc", "nan", "NaN", "-nan", "", " 1", "1 ", "1\x00", "1e400", "-1e400",
			"1.5.5", "--1", "0x", "inf1"} {
			k.err(errNotFloat, "ZADD", "p", bad, "m")
			k.err(errNotFloat, "ZINCRBY", "p", bad, "m")
			k.err(errNotFloat, "ZADD", "p", "INCR", bad, "m")
		}
		k.eq(0, "EXISTS", "p")
		// strtod underflows on 1e-400 and Redis refuses the score rather than round it to 0.
		k.err(errNotFloat, "ZADD", "p", "1e-400", "m")
		k.err(errNotFloat, "ZINCRBY", "p", "1e-400", "m")
		k.eq(0, "EXISTS", "p")
	})

	subtest(t, c, "ScoreFormat", func(t *testing.T, k checker) {
		// Scores print as %.17g: 0.1 is "0.10000000000000001", integers up to 1e16 print in
		// full, larger ones with an exponent.
		scores := []struct{ in, out string }{
			{"0.1", "0.10000000000000001"}, {"1e20", "1e+20"}, {"0.3", "0.29999999999999999"},
			{"0.30000000000000004", "0.30000000000000004"}, {"1e15", "1000000000000000"},
			{"1e16", "10000000000000000"}, {"1e17", "1e+17"}, {"123456789012345678", "1.2345678901234568e+17"},
			{"3.0", "3"}, {"-2.5", "-2.5"}, {"1e-5", "1.0000000000000001e-05"}, {"2e-7", "1.9999999999999999e-07"},
			{"1.7976931348623157e308", "1.7976931348623157e+308"}, {"5e-324", "4.9406564584124654e-324"},
			{"100000000000000000000000", "9.9999999999999992e+22"}, {"1e21", "1e+21"},
			{"12345.6789", "12345.678900000001"}, {"17", "17"}, {"0", "0"}, {"-1", "-1"},
		}
		m := map[string]float64{}
		args := []any{"ZADD", "f"}
		for i, s := range scores {
			if zsFormat(mustFloat(t, s.in)) != s.out {
				t.Fatalf("zsFormat(%s) = %q; the helper disagrees with Redis's %q", s.in, zsFormat(mustFloat(t, s.in)), s.out)
			}
			member := fmt.Sprintf("m%02d", i)
			m[member] = mustFloat(t, s.in)
			args = append(args, s.in, member)
		}
		k.eq(len(scores), args...)
		for i, s := range scores {
			member := fmt.Sprintf("m%02d", i)
			k.eq(s.out, "ZSCORE", "f", member)
			k.eq([]any{s.out, nil}, "ZMSCORE", "f", member, "nope")
		}
		zsCheck(t, k, "f", zsSorted(m)...)
		k.eq([]any{"m00", "0.10000000000000001"}, "ZRANGEBYSCORE", "f", "0.1", "0.1", "WITHSCORES")
		k.eq([]any{"m01", "1e+20"}, "ZRANGE", "f", "1e20", "1e20", "BYSCORE", "WITHSCORES")
		// Replies that carry a computed score use the same format.
		k.eq("0.30000000000000004", "ZINCRBY", "f", "0.2", "m00")
		k.eq("0.30000000000000004", "ZADD", "f", "INCR", 0, "m00")
		k.eq([]any{"m00", "0.30000000000000004", "m03", "0.30000000000000004"}, "ZRANGE", "f", "0.30000000000000004", "0.30000000000000004", "BYSCORE", "WITHSCORES")
	})

	subtest(t, c, "NegativeZero", func(t *testing.T, k checker) {
		// A small sorted set (Redis's listpack) stores a score of -0 as the integer 0 and prints
		// "0"; a large one (skiplist) keeps the sign and prints "-0". Clients see both.
		k.eq(1, "ZADD", "small", "-0", "a")
		k.eq("0", "ZSCORE", "small", "a")
		k.eq([]any{"a", "0"}, "ZRANGE", "small", 0, -1, "WITHSCORES")
		k.eq(1, "ZADD", "small2", "-0.0", "a")
		k.eq("0", "ZINCRBY", "small2", "-0", "a")
		k.eq("0", "ZSCORE", "small2", "a")
		big := map[string]float64{}
		for _, m := range zsNames("m", 140) {
			big[m] = 1
		}
		k.eq(140, zsAddArgs("big", big)...)
		if enc := k.str("OBJECT", "ENCODING", "big"); !slices.Contains(zsetEncodings, enc) {
			t.Fatalf("OBJECT ENCODING big: %q; want one of %q", enc, zsetEncodings)
		}
		k.eq(1, "ZADD", "big", "-0.0", "neg")
		k.eq("-0", "ZSCORE", "big", "neg")
		k.eq([]any{"neg", "-0"}, "ZRANGE", "big", 0, 0, "WITHSCORES")
	})

	subtest(t, c, "ZIncrBy", func(t *testing.T, k checker) {
		k.eq("1", "ZINCRBY", "z", 1, "new") // creates the key and the member
		k.eq("zset", "TYPE", "z")
		k.eq("3.5", "ZINCRBY", "z", "2.5", "new")
		k.eq("-0.5", "ZINCRBY", "z", -4, "new")
		k.eq("-0.5", "ZINCRBY", "z", 0, "new")
		k.eq("0.10000000000000001", "ZINCRBY", "z", "0.1", "m")
		k.eq("0.30000000000000004", "ZINCRBY", "z", "0.2", "m")
		k.eq("0.5", "ZINCRBY", "z", "0.19999999999999996", "m")
		k.eq("inf", "ZINCRBY", "z", "inf", "m")
		k.eq("inf", "ZINCRBY", "z", 1, "m")
		k.err(errZNaN, "ZINCRBY", "z", "-inf", "m")
		k.eq("inf", "ZSCORE", "z", "m")
		k.eq("-inf", "ZINCRBY", "z", "-inf", "n")
		k.eq("1.7976931348623157e+308", "ZINCRBY", "z", "1.7976931348623157e308", "o")
		k.eq("inf", "ZINCRBY", "z", "1.7976931348623157e308", "o")
		zsCheck(t, k, "z", "n", "-inf", "new", "-0.5", "m", "inf", "o", "inf")
		k.eq(1, "EXPIRE", "z", 100)
		k.eq("0.5", "ZINCRBY", "z", 1, "new")
		k.between(99, 100, "TTL", "z")
		k.err(errNotFloat, "ZINCRBY", "z", "abc", "new")
		k.err(errNotFloat, "ZINCRBY", "missing", "nan", "x")
		k.eq(0, "EXISTS", "missing")
	})

	subtest(t, c, "ZRemZCard", func(t *testing.T, k checker) {
		k.eq(0, "ZCARD", "z")
		k.eq(0, "ZREM", "z", "a")
		k.eq(4, "ZADD", "z", 1, "a", 2, "b", 3, "c", 3, "cc")
		k.eq(4, "ZCARD", "z")
		k.eq(1, "EXPIRE", "z", 100)
		k.eq(1, "ZREM", "z", "a", "x")
		k.eq(0, "ZREM", "z", "a")
		k.eq(1, "ZREM", "z", "b", "b", "b") // a member named twice is removed once
		k.between(99, 100, "TTL", "z")
		zsCheck(t, k, "z", "c", "3", "cc", "3")
		// Removing the last member removes the key and its TTL.
		k.eq(2, "ZREM", "z", "c", "cc", "zz")
		k.eq(0, "EXISTS", "z")
		k.eq(-2, "TTL", "z")
		k.eq(1, "ZADD", "z", 1, "again")
		k.eq(-1, "TTL", "z")
		k.eq(0, "ZREM", "z", "A") // members are case-sensitive
		k.eq(1, "ZCARD", "z")
	})

	subtest(t, c, "ZScoreZMScore", func(t *testing.T, k checker) {
		k.null("ZSCORE", "missing", "a")
		k.eq([]any{nil, nil}, "ZMSCORE", "missing", "a", "b")
		k.eq(3, "ZADD", "z", 1, "a", "2.5", "b", -3, "c")
		k.eq("1", "ZSCORE", "z", "a")
		k.eq("2.5", "ZSCORE", "z", "b")
		k.eq("-3", "ZSCORE", "z", "c")
		k.null("ZSCORE", "z", "x")
		k.eq([]any{"1", nil, "-3", "1"}, "ZMSCORE", "z", "a", "x", "c", "a")
		k.eq([]any{nil}, "ZMSCORE", "z", "")
		k.eq(0, "EXISTS", "missing")
	})

	subtest(t, c, "ZRankZRevRank", func(t *testing.T, k checker) {
		k.null("ZRANK", "missing", "a")
		k.null("ZREVRANK", "missing", "a")
		k.eq(4, "ZADD", "z", 1, "a", 2, "b", 3, "c", 3, "cc")
		for i, m := range []string{"a", "b", "c", "cc"} {
			k.eq(i, "ZRANK", "z", m)
			k.eq(3-i, "ZREVRANK", "z", m)
		}
		k.null("ZRANK", "z", "x")
		k.null("ZREVRANK", "z", "x")
		// Redis 7.0 has no WITHSCORE option (7.2 added it).
		k.err(errArity("zrank"), "ZRANK", "z", "a", "WITHSCORE")
		k.err(errArity("zrevrank"), "ZREVRANK", "z", "a", "WITHSCORE")
	})

	subtest(t, c, "ZRangeByRank", func(t *testing.T, k checker) {
		k.eq([]any{}, "ZRANGE", "missing", 0, -1)
		k.eq(5, "ZADD", "z", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e")
		for _, tc := range []struct {
			want []string
			args []any
		}{
			{[]string{"a", "b", "c", "d", "e"}, []any{"ZRANGE", "z", 0, -1}},
			{[]string{"b", "2", "c", "3", "d", "4"}, []any{"ZRANGE", "z", 1, 3, "WITHSCORES"}},
			{[]string{"c", "3", "d", "4", "e", "5"}, []any{"ZRANGE", "z", 2, 4, "withscores"}},
			{[]string{"d", "e"}, []any{"ZRANGE", "z", -2, -1}},
			{[]string{}, []any{"ZRANGE", "z", 3, 1}},
			{[]string{}, []any{"ZRANGE", "z", 10, 20}},
			{[]string{"a", "b", "c", "d", "e"}, []any{"ZRANGE", "z", -100, 100}},
			{[]string{"a", "b", "c", "d", "e"}, []any{"ZRANGE", "z", 0, "9223372036854775807"}},
			{[]string{"a", "b", "c", "d", "e"}, []any{"ZRANGE", "z", "-9223372036854775808", -1}},
			{[]string{"e", "d", "c", "b", "a"}, []any{"ZRANGE", "z", 0, -1, "REV"}},
			{[]string{"e", "5", "d", "4"}, []any{"ZRANGE", "z", 0, 1, "REV", "WITHSCORES"}},
			{[]string{"d", "c", "b"}, []any{"ZRANGE", "z", 1, 3, "rev"}},
			{[]string{"c", "3", "b", "2"}, []any{"ZRANGE", "z", -3, -2, "WITHSCORES", "REV"}},
			{[]string{"e", "d", "c", "b", "a"}, []any{"ZREVRANGE", "z", 0, -1}},
			{[]string{"e", "5", "d", "4"}, []any{"ZREVRANGE", "z", 0, 1, "WITHSCORES"}},
			{[]string{"b", "a"}, []any{"ZREVRANGE", "z", -2, 10}},
			{[]string{"a", "1", "b", "2"}, []any{"ZRANGE", "z", 0, 1, "WITHSCORES", "WITHSCORES"}},
		} {
			k.eq(tc.want, tc.args...)
		}
		k.err(errNotInt, "ZRANGE", "z", "a", "b")
		k.err(errNotInt, "ZRANGE", "z", 0, "1.5")
		k.err(errNotInt, "ZRANGE", "z", 0, "9223372036854775808")
		k.err(errNotInt, "ZREVRANGE", "z", "a", 1)
		k.err(errSyntax, "ZRANGE", "z", 0, 1, "FOO")
		k.err(errSyntax, "ZREVRANGE", "z", 0, 1, "BYSCORE")
		k.err(errSyntax, "ZREVRANGE", "z", 0, 1, "REV")
		k.err(errZLimitBy, "ZRANGE", "z", 0, -1, "LIMIT", 0, 1)
		k.err(errZLimitBy, "ZREVRANGE", "z", 0, 1, "LIMIT", 0, 1)
	})

	subtest(t, c, "ZRangeByScore", func(t *testing.T, k checker) {
		k.eq(5, "ZADD", "z", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e")
		for _, tc := range []struct {
			want []string
			args []any
		}{
			{[]string{"b", "c"}, []any{"ZRANGE", "z", "(1", 3, "BYSCORE"}},
			{[]string{"a", "b"}, []any{"ZRANGE", "z", 1, "(3", "BYSCORE"}},
			{[]string{"b"}, []any{"ZRANGE", "z", "(1", "(3", "BYSCORE"}},
			{[]string{}, []any{"ZRANGE", "z", "(1", 1, "BYSCORE"}},
			{[]string{}, []any{"ZRANGE", "z", 1, "(1", "BYSCORE"}},
			{[]string{"a", "b", "c", "d", "e"}, []any{"ZRANGE", "z", "-inf", "+inf", "BYSCORE"}},
			{[]string{"a", "1", "b", "2", "c", "3", "d", "4", "e", "5"}, []any{"ZRANGE", "z", "-inf", "inf", "byscore", "WITHSCORES"}},
			{[]string{}, []any{"ZRANGE", "z", "(inf", "+inf", "BYSCORE"}},
			{[]string{}, []any{"ZRANGE", "z", "-inf", "(-inf", "BYSCORE"}},
			{[]string{"b", "c"}, []any{"ZRANGE", "z", "1.5", "3.5", "BYSCORE"}},
			{[]string{"b", "c", "d"}, []any{"ZRANGE", "z", "(1e0", "(5e0", "BYSCORE"}},
			{[]string{"a", "b", "c", "d", "e"}, []any{"ZRANGE", "z", "0x1", 5, "BYSCORE"}},
			// strtod overflows to inf without an error here, unlike in ZADD.
			{[]string{"a", "b", "c", "d", "e"}, []any{"ZRANGE", "z", "-1e400", "1e400", "BYSCORE"}},
			{[]string{}, []any{"ZRANGE", "z", 0, -1, "BYSCORE"}}, // min above max: nothing
			{[]string{"e", "d", "c", "b", "a"}, []any{"ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV"}},
			{[]string{"d", "c", "b"}, []any{"ZRANGE", "z", 4, 2, "BYSCORE", "REV"}},
			{[]string{"c", "b"}, []any{"ZRANGE", "z", "(4", 2, "BYSCORE", "REV"}},
			{[]string{}, []any{"ZRANGE", "z", 2, 4, "BYSCORE", "REV"}}, // REV takes max first
			// LIMIT offset count: a negative count means all the rest, a negative offset nothing.
			{[]string{"b", "c"}, []any{"ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", 1, 2}},
			{[]string{"b", "c", "d", "e"}, []any{"ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", 1, -1}},
			{[]string{}, []any{"ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", -1, 2}},
			{[]string{}, []any{"ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", 1, 0}},
			{[]string{}, []any{"ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", 10, 2}},
			{[]string{"a", "b", "c", "d", "e"}, []any{"ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", 0, "9223372036854775807"}},
			{[]string{}, []any{"ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", "9223372036854775807", 1}},
			{[]string{"b"}, []any{"ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", 0, 1, "LIMIT", 1, 1}}, // the last LIMIT wins
			{[]string{"d", "4", "c", "3"}, []any{"ZRANGE", "z", 5, 1, "BYSCORE", "REV", "LIMIT", 1, 2, "WITHSCORES"}},
			{[]string{"b", "c", "d"}, []any{"ZRANGEBYSCORE", "z", "(1", "(5"}},
			{[]string{"b", "2", "c", "3"}, []any{"ZRANGEBYSCORE", "z", 1, 5, "WITHSCORES", "LIMIT", 1, 2}},
			{[]string{"b", "2", "c", "3"}, []any{"ZRANGEBYSCORE", "z", 1, 5, "LIMIT", 1, 2, "WITHSCORES"}},
			{[]string{"e", "d", "c", "b", "a"}, []any{"ZREVRANGEBYSCORE", "z", 5, 1}},
			{[]string{}, []any{"ZREVRANGEBYSCORE", "z", 1, 5}},
			{[]string{"d", "4", "c", "3", "b", "2"}, []any{"ZREVRANGEBYSCORE", "z", "(5", "(1", "WITHSCORES"}},
			{[]string{"e", "d"}, []any{"ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", 0, 2}},
			{[]string{}, []any{"ZRANGEBYSCORE", "missing", 1, 2}},
		} {
			k.eq(tc.want, tc.args...)
		}
		for _, bad := range [][2]any{{"a", 5}, {1, "a"}, {"(a", 5}, {"[1", 5}, {"nan", 5}, {"(nan", 5},
			{1, "1 "}} {
			k.err(errZMinMaxFloat, "ZRANGE", "z", bad[0], bad[1], "BYSCORE")
			k.err(errZMinMaxFloat, "ZRANGEBYSCORE", "z", bad[0], bad[1])
			k.err(errZMinMaxFloat, "ZREVRANGEBYSCORE", "z", bad[1], bad[0])
		}
		k.err(errZMinMaxFloat, "ZRANGEBYSCORE", "missing", "a", "b") // checked on a missing key too
		k.err(errSyntax, "ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", 1)
		k.err(errSyntax, "ZRANGEBYSCORE", "z", 1, 5, "LIMIT", 1)
		k.err(errSyntax, "ZRANGEBYSCORE", "z", 1, 5, "LIMIT")
		k.err(errNotInt, "ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", "a", 1)
		k.err(errNotInt, "ZRANGE", "z", 1, 5, "BYSCORE", "LIMIT", 1, "a")
		// ZRANGEBYSCORE and ZREVRANGEBYSCORE fix the direction and the range type.
		k.err(errSyntax, "ZRANGEBYSCORE", "z", 1, 5, "REV")
		k.err(errSyntax, "ZRANGEBYSCORE", "z", 1, 5, "BYSCORE")
		k.err(errSyntax, "ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", 0, 2, "REV")
	})

	subtest(t, c, "ZRangeByLex", func(t *testing.T, k checker) {
		k.eq(8, "ZADD", "l", 0, "a", 0, "b", 0, "c", 0, "d", 0, "e", 0, "", 0, "aa", 0, "b\x00")
		all := []string{"", "a", "aa", "b", "b\x00", "c", "d", "e"}
		for _, tc := range []struct {
			want []string
			args []any
		}{
			{all, []any{"ZRANGE", "l", "-", "+", "BYLEX"}},
			{[]string{"b", "b\x00", "c", "d"}, []any{"ZRANGE", "l", "[b", "[d", "BYLEX"}},
			{[]string{"b\x00", "c", "d"}, []any{"ZRANGE", "l", "(b", "[d", "BYLEX"}},
			{[]string{"b\x00", "c"}, []any{"ZRANGE", "l", "(b", "(d", "bylex"}},
			{[]string{"b", "b\x00", "c"}, []any{"ZRANGE", "l", "[b", "(d", "BYLEX"}},
			{[]string{"", "a", "aa", "b", "b\x00"}, []any{"ZRANGE", "l", "-", "(c", "BYLEX"}},
			{[]string{"c", "d", "e"}, []any{"ZRANGE", "l", "[c", "+", "BYLEX"}},
			{[]string{"b\x00", "c", "d", "e"}, []any{"ZRANGE", "l", "[b\x00", "+", "BYLEX"}},
			{[]string{}, []any{"ZRANGE", "l", "+", "-", "BYLEX"}},
			{[]string{}, []any{"ZRANGE", "l", "[b", "(b", "BYLEX"}},
			{[]string{"b"}, []any{"ZRANGE", "l", "[b", "[b", "BYLEX"}},
			// "[" alone is the empty string, inclusive; "(" alone excludes it.
			{all, []any{"ZRANGE", "l", "[", "+", "BYLEX"}},
			{all[1:], []any{"ZRANGE", "l", "(", "+", "BYLEX"}},
			{[]string{}, []any{"ZRANGE", "l", "[", "(", "BYLEX"}},
			{[]string{"e", "d", "c", "b\x00", "b", "aa", "a", ""}, []any{"ZRANGE", "l", "+", "-", "BYLEX", "REV"}},
			{[]string{"d", "c", "b\x00", "b"}, []any{"ZRANGE", "l", "[d", "[b", "BYLEX", "REV"}},
			{[]string{}, []any{"ZRANGE", "l", "[b", "[d", "BYLEX", "REV"}},
			{[]string{"a", "aa", "b"}, []any{"ZRANGE", "l", "-", "+", "BYLEX", "LIMIT", 1, 3}},
			{[]string{"e", "d"}, []any{"ZRANGE", "l", "+", "-", "BYLEX", "REV", "LIMIT", 0, 2}},
			{[]string{"d", "c", "b\x00", "b", "aa", "a", ""}, []any{"ZRANGE", "l", "+", "-", "BYLEX", "REV", "LIMIT", 1, -1}},
			{[]string{"d", "e"}, []any{"ZRANGE", "l", "-", "+", "BYLEX", "LIMIT", 6, 100}},
			{[]string{}, []any{"ZRANGE", "l", "-", "+", "BYLEX", "LIMIT", 0, 0}},
			{[]string{}, []any{"ZRANGE", "l", "-", "+", "BYLEX", "LIMIT", -1, 1}},
			{all, []any{"ZRANGEBYLEX", "l", "-", "+"}},
			{[]string{"a", "aa", "b", "b\x00"}, []any{"ZRANGEBYLEX", "l", "[a", "(c"}},
			{[]string{"aa", "b"}, []any{"ZRANGEBYLEX", "l", "-", "+", "LIMIT", 2, 2}},
			{[]string{"e", "d", "c", "b\x00", "b", "aa", "a", ""}, []any{"ZREVRANGEBYLEX", "l", "+", "-"}},
			{[]string{"c", "b\x00", "b", "aa", "a", ""}, []any{"ZREVRANGEBYLEX", "l", "[c", "-"}},
			{[]string{}, []any{"ZREVRANGEBYLEX", "l", "-", "+"}},
			{[]string{"d", "c"}, []any{"ZREVRANGEBYLEX", "l", "+", "-", "LIMIT", 1, 2}},
			{[]string{}, []any{"ZRANGEBYLEX", "missing", "-", "+"}},
		} {
			k.eq(tc.want, tc.args...)
		}
		for _, bad := range [][2]string{{"b", "[d"}, {"[b", "d"}, {"", "+"}, {"-a", "+"}, {"-", "+a"}, {"a", "b"}} {
			k.err(errZMinMaxLex, "ZRANGE", "l", bad[0], bad[1], "BYLEX")
			k.err(errZMinMaxLex, "ZRANGEBYLEX", "l", bad[0], bad[1])
			k.err(errZMinMaxLex, "ZREVRANGEBYLEX", "l", bad[1], bad[0])
		}
		k.err(errZMinMaxLex, "ZRANGEBYLEX", "missing", "a", "b")
		k.err(errZLexScores, "ZRANGE", "l", "-", "+", "BYLEX", "WITHSCORES")
		k.err(errZLexScores, "ZRANGEBYLEX", "l", "-", "+", "WITHSCORES")
		k.err(errZLexScores, "ZREVRANGEBYLEX", "l", "+", "-", "WITHSCORES")
		k.err(errSyntax, "ZRANGEBYLEX", "l", "-", "+", "LIMIT", 0)
		k.err(errSyntax, "ZRANGEBYLEX", "l", "-", "+", "REV")
	})

	subtest(t, c, "ZRangeOptionErrors", func(t *testing.T, k checker) {
		// ZRANGE takes each of REV, BYSCORE and BYLEX once, and only one of BYSCORE and BYLEX;
		// anything else is a syntax error.
		k.eq(5, "ZADD", "z", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e")
		k.err(errSyntax, "ZRANGE", "z", 1, 5, "BYSCORE", "BYLEX")
		k.err(errSyntax, "ZRANGE", "z", "-", "+", "BYLEX", "BYSCORE")
		k.err(errSyntax, "ZRANGE", "z", 1, 5, "BYSCORE", "BYSCORE")
		k.err(errSyntax, "ZRANGE", "z", "-", "+", "BYLEX", "BYLEX")
		k.err(errSyntax, "ZRANGE", "z", 0, -1, "REV", "REV")
		k.err(errSyntax, "ZRANGESTORE", "d", "z", "-", "+", "BYLEX", "BYSCORE")
		k.eq(0, "EXISTS", "d")
	})

	subtest(t, c, "ScoreBoundParsing", func(t *testing.T, k checker) {
		// Range bounds are parsed by strtod without the checks ZADD's scores get: leading spaces
		// are skipped, and an empty number is 0, so "" is 0 and "(" alone is "(0".
		k.eq(5, "ZADD", "z", -1, "n", 1, "a", 2, "b", 3, "c", 0, "zero")
		k.eq([]any{"a", "b", "c"}, "ZRANGE", "z", " 1", 5, "BYSCORE")
		k.eq([]any{"b", "c"}, "ZRANGE", "z", "( 1", 5, "BYSCORE")
		k.eq([]any{"zero", "a", "b", "c"}, "ZRANGE", "z", "", 5, "BYSCORE")
		k.eq([]any{"a", "b", "c"}, "ZRANGE", "z", "(", 5, "BYSCORE")
		k.eq(3, "ZCOUNT", "z", "(", "+inf")
		k.eq(2, "ZCOUNT", "z", "-inf", "")
	})

	subtest(t, c, "ZRangeStore", func(t *testing.T, k checker) {
		k.eq(5, "ZADD", "z", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e")
		k.eq(5, "ZRANGESTORE", "dst", "z", 0, -1)
		zsCheck(t, k, "dst", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5")
		k.eq(2, "ZRANGESTORE", "dst", "z", 1, 2) // replaces the destination
		zsCheck(t, k, "dst", "b", "2", "c", "3")
		k.eq(2, "ZRANGESTORE", "dst", "z", "(1", 4, "BYSCORE", "LIMIT", 1, 2)
		zsCheck(t, k, "dst", "c", "3", "d", "4")
		k.eq(4, "ZRANGESTORE", "dst", "z", 4, 1, "BYSCORE", "REV") // stored in score order all the same
		zsCheck(t, k, "dst", "a", "1", "b", "2", "c", "3", "d", "4")
		k.eq(2, "ZRANGESTORE", "dst", "z", 0, 1, "REV")
		zsCheck(t, k, "dst", "d", "4", "e", "5")
		k.eq(3, "ZRANGESTORE", "dst", "z", "[b", "[d", "BYLEX")
		zsCheck(t, k, "dst", "b", "2", "c", "3", "d", "4")
		k.eq(2, "ZRANGESTORE", "dst", "z", "+", "-", "BYLEX", "REV", "LIMIT", 0, 2)
		zsCheck(t, k, "dst", "d", "4", "e", "5")
		// An empty result deletes the destination; a missing source is an empty one.
		k.eq(0, "ZRANGESTORE", "dst", "z", 10, 20)
		k.eq(0, "EXISTS", "dst")
		k.eq(0, "ZRANGESTORE", "dst", "missing", 0, -1)
		k.eq(0, "EXISTS", "dst")
		// A destination of another type is replaced, and its TTL goes with it.
		k.ok("SET", "str", "v", "EX", 100)
		k.eq(1, "ZRANGESTORE", "str", "z", 0, 0)
		k.eq("zset", "TYPE", "str")
		k.eq(-1, "TTL", "str")
		k.eq(1, "ZADD", "ttl", 1, "x")
		k.eq(1, "EXPIRE", "ttl", 100)
		k.eq(2, "ZRANGESTORE", "ttl", "z", 0, 1)
		k.eq(-1, "TTL", "ttl")
		// The source may be the destination.
		k.eq(2, "ZRANGESTORE", "z", "z", 1, 2)
		zsCheck(t, k, "z", "b", "2", "c", "3")

		k.err(errSyntax, "ZRANGESTORE", "dst", "z", 0, -1, "WITHSCORES")
		k.err(errSyntax, "ZRANGESTORE", "dst", "z", 0, 1, "BYLEX", "WITHSCORES")
		k.err(errZLimitBy, "ZRANGESTORE", "dst", "z", 0, -1, "LIMIT", 0, 1)
		k.err(errZMinMaxLex, "ZRANGESTORE", "dst", "z", "a", "b", "BYLEX")
		k.err(errZMinMaxFloat, "ZRANGESTORE", "dst", "z", "a", "b", "BYSCORE")
		k.err(errNotInt, "ZRANGESTORE", "dst", "z", "a", "b")
		k.ok("SET", "str", "v")
		k.err(errWrongType, "ZRANGESTORE", "dst", "str", 0, -1)
		k.eq(0, "EXISTS", "dst")
	})

	subtest(t, c, "ZCountZLexCount", func(t *testing.T, k checker) {
		k.eq(0, "ZCOUNT", "missing", "-inf", "+inf")
		k.eq(0, "ZLEXCOUNT", "missing", "-", "+")
		k.eq(3, "ZADD", "s", 1, "a", 2, "b", 3, "c")
		k.eq(2, "ZCOUNT", "s", 1, 2)
		k.eq(1, "ZCOUNT", "s", "(1", 2)
		k.eq(0, "ZCOUNT", "s", "(1", "(2")
		k.eq(0, "ZCOUNT", "s", 2, 1)
		k.eq(3, "ZCOUNT", "s", "-inf", "+inf")
		k.eq(0, "ZCOUNT", "s", "-inf", "-inf")
		k.eq(0, "ZCOUNT", "s", "+inf", "+inf")
		k.eq(8, "ZADD", "l", 0, "a", 0, "b", 0, "c", 0, "d", 0, "e", 0, "", 0, "aa", 0, "b\x00")
		k.eq(8, "ZCOUNT", "l", 0, 0)
		k.eq(0, "ZCOUNT", "l", "(0", 0)
		k.eq(8, "ZLEXCOUNT", "l", "-", "+")
		k.eq(4, "ZLEXCOUNT", "l", "[b", "[d")
		k.eq(2, "ZLEXCOUNT", "l", "(b", "(d")
		k.eq(0, "ZLEXCOUNT", "l", "+", "-")
		k.eq(7, "ZLEXCOUNT", "l", "(", "+")
		k.err(errZMinMaxFloat, "ZCOUNT", "s", "x", 1)
		k.err(errZMinMaxFloat, "ZCOUNT", "missing", "a", "b")
		k.err(errZMinMaxLex, "ZLEXCOUNT", "l", "a", "b")
		k.err(errZMinMaxLex, "ZLEXCOUNT", "missing", "a", "b")
	})

	subtest(t, c, "ZRemRange", func(t *testing.T, k checker) {
		k.eq(0, "ZREMRANGEBYRANK", "missing", 0, -1)
		k.eq(0, "ZREMRANGEBYSCORE", "missing", 1, 2)
		k.eq(0, "ZREMRANGEBYLEX", "missing", "-", "+")
		// By rank.
		k.eq(5, "ZADD", "z", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e")
		k.eq(1, "EXPIRE", "z", 100)
		k.eq(1, "ZREMRANGEBYRANK", "z", 0, 0)
		k.eq(1, "ZREMRANGEBYRANK", "z", -1, -1)
		k.eq(0, "ZREMRANGEBYRANK", "z", 5, 10)
		k.eq(0, "ZREMRANGEBYRANK", "z", 2, 1)
		k.between(99, 100, "TTL", "z")
		zsCheck(t, k, "z", "b", "2", "c", "3", "d", "4")
		k.eq(3, "ZREMRANGEBYRANK", "z", 0, -1) // emptied: the key goes
		k.eq(0, "EXISTS", "z")
		// By score.
		k.eq(5, "ZADD", "z", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e")
		k.eq(1, "ZREMRANGEBYSCORE", "z", "(1", 2)
		k.eq(0, "ZREMRANGEBYSCORE", "z", 10, 20)
		k.eq(2, "ZREMRANGEBYSCORE", "z", 4, "+inf")
		zsCheck(t, k, "z", "a", "1", "c", "3")
		k.eq(2, "ZREMRANGEBYSCORE", "z", "-inf", "+inf")
		k.eq(0, "EXISTS", "z")
		// By lex.
		k.eq(4, "ZADD", "z", 0, "a", 0, "b", 0, "c", 0, "d")
		k.eq(2, "ZREMRANGEBYLEX", "z", "[b", "(d")
		k.eq(0, "ZREMRANGEBYLEX", "z", "+", "-")
		zsCheck(t, k, "z", "a", "0", "d", "0")
		k.eq(2, "ZREMRANGEBYLEX", "z", "-", "+")
		k.eq(0, "EXISTS", "z")
		// Argument errors come before the key is looked at.
		k.ok("SET", "str", "v")
		for _, key := range []string{"z", "missing", "str"} {
			k.err(errNotInt, "ZREMRANGEBYRANK", key, "a", 1)
			k.err(errZMinMaxFloat, "ZREMRANGEBYSCORE", key, "x", 2)
			k.err(errZMinMaxLex, "ZREMRANGEBYLEX", key, "a", "b")
		}
	})

	subtest(t, c, "ZPopMinMax", func(t *testing.T, k checker) {
		// A missing key gives an empty array, with or without a count.
		k.eq([]any{}, "ZPOPMIN", "missing")
		k.eq([]any{}, "ZPOPMAX", "missing", 2)
		k.eq([]any{}, "ZPOPMIN", "missing", 0)
		k.eq(6, "ZADD", "p", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e", 5, "f")
		k.eq([]any{"a", "1"}, "ZPOPMIN", "p")
		k.eq([]any{"f", "5"}, "ZPOPMAX", "p") // equal scores: the last member in order
		k.eq([]any{"b", "2", "c", "3"}, "ZPOPMIN", "p", 2)
		k.eq([]any{}, "ZPOPMAX", "p", 0)
		k.eq([]any{"e", "5", "d", "4"}, "ZPOPMAX", "p", 10) // a count beyond the size takes all
		k.eq(0, "EXISTS", "p")
		k.eq(2, "ZADD", "p", 1, "a", 2, "b")
		k.eq([]any{"a", "1", "b", "2"}, "ZPOPMIN", "p", "9223372036854775807")
		k.eq(0, "EXISTS", "p")
		k.eq(1, "ZADD", "p", 1, "a")
		k.eq([]any{"a", "1"}, "ZPOPMAX", "p", 1)
		k.eq(0, "EXISTS", "p")

		k.eq(1, "ZADD", "p", 1, "a")
		k.ok("SET", "str", "v")
		for _, key := range []string{"p", "missing", "str"} {
			for _, bad := range []string{"-1", "x", "1.5", "9223372036854775808"} {
				k.err(errSetPopCount, "ZPOPMIN", key, bad)
				k.err(errSetPopCount, "ZPOPMAX", key, bad)
			}
		}
		k.err(errSyntax, "ZPOPMIN", "p", 1, 2)
		zsCheck(t, k, "p", "a", "1")
	})

	subtest(t, c, "ZMPop", func(t *testing.T, k checker) {
		k.eq(5, "ZADD", "p", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e")
		k.eq(2, "ZADD", "q", 10, "x", 20, "y")
		k.eq([]any{"p", []any{[]any{"a", "1"}}}, "ZMPOP", 1, "p", "MIN")
		k.eq([]any{"p", []any{[]any{"e", "5"}, []any{"d", "4"}}}, "ZMPOP", 1, "p", "MAX", "COUNT", 2)
		k.eq([]any{"p", []any{[]any{"c", "3"}}}, "ZMPOP", 1, "p", "max", "count", 1)
		// The first non-empty key is popped from; a count beyond its size empties it.
		k.eq([]any{"q", []any{[]any{"x", "10"}, []any{"y", "20"}}}, "ZMPOP", 2, "missing", "q", "MIN", "COUNT", 10)
		k.eq(0, "EXISTS", "q")
		k.eq([]any{"p", []any{[]any{"b", "2"}}}, "ZMPOP", 2, "p", "q", "MIN", "COUNT", "9223372036854775807")
		k.eq(0, "EXISTS", "p")
		k.eq(nil, "ZMPOP", 2, "missing", "missing2", "MIN") // nothing to pop: a null array

		k.eq(1, "ZADD", "p", 1, "a")
		for _, bad := range []any{0, -1, "x"} {
			k.err(errSetNumkeys, "ZMPOP", bad, "p", "MIN")
		}
		k.err(errSyntax, "ZMPOP", 2, "p", "MIN") // numkeys beyond the arguments
		k.err(errSyntax, "ZMPOP", "2147483648", "p", "MIN")
		k.err(errSyntax, "ZMPOP", 1, "p", "FOO")
		k.err(errSyntax, "ZMPOP", 1, "p", "MIN", "MAX")
		k.err(errSyntax, "ZMPOP", 1, "p", "MIN", "COUNT")
		k.err(errSyntax, "ZMPOP", 1, "p", "MIN", "COUNT", 1, "COUNT", 2)
		k.err(errSyntax, "ZMPOP", 1, "p", "MIN", "COUNT", 1, "FOO")
		for _, bad := range []any{0, -1, "x", "1.5", "9223372036854775808"} {
			k.err(errZCount, "ZMPOP", 1, "p", "MIN", "COUNT", bad)
		}
		k.err(errArity("zmpop"), "ZMPOP", 1, "p")
		k.err(errArity("zmpop"), "ZMPOP", 3, "p")
		k.ok("SET", "str", "v")
		k.err(errWrongType, "ZMPOP", 1, "str", "MIN")
		k.err(errWrongType, "ZMPOP", 2, "missing", "str", "MIN")
		k.err(errWrongType, "ZMPOP", 2, "str", "p", "MIN")
		// ZMPOP pops from the first non-empty key without looking at the keys after it.
		k.eq([]any{"p", []any{[]any{"a", "1"}}}, "ZMPOP", 2, "p", "str", "MIN")
	})

	subtest(t, c, "ZRandMember", func(t *testing.T, k checker) {
		k.null("ZRANDMEMBER", "missing")
		for _, n := range []int{3, -3, 0} {
			k.eq([]any{}, "ZRANDMEMBER", "missing", n)
			k.eq([]any{}, "ZRANDMEMBER", "missing", n, "WITHSCORES")
		}
		k.eq(0, "EXISTS", "missing")

		scores := map[string]string{"a": "1", "b": "2", "c": "3", "d": "0.5"}
		universe := map[string]bool{"a": true, "b": true, "c": true, "d": true}
		k.eq(4, "ZADD", "z", 1, "a", 2, "b", 3, "c", "0.5", "d")
		if m := k.str("ZRANDMEMBER", "z"); !universe[m] {
			t.Fatalf("ZRANDMEMBER returned %q, not a member", m)
		}
		k.eq([]any{}, "ZRANDMEMBER", "z", 0)
		k.eq([]any{}, "ZRANDMEMBER", "z", 0, "WITHSCORES")
		setPick(t, k.arr("ZRANDMEMBER", "z", 2), universe, 2, true, "ZRANDMEMBER z 2")
		setEq(t, k, []string{"a", "b", "c", "d"}, "ZRANDMEMBER", "z", 4)
		setEq(t, k, []string{"a", "b", "c", "d"}, "ZRANDMEMBER", "z", 100)
		setEq(t, k, []string{"a", "b", "c", "d"}, "ZRANDMEMBER", "z", "9223372036854775807")
		// WITHSCORES: member, score pairs, flat in RESP2, each with its own score.
		for _, count := range []int{1, 3, 4, 10} {
			got := flatToMap(t, "ZRANDMEMBER WITHSCORES", k.arr("ZRANDMEMBER", "z", count, "WITHSCORES"), true)
			if len(got) != min(count, 4) {
				t.Fatalf("ZRANDMEMBER z %d WITHSCORES: %d members", count, len(got))
			}
			for m, s := range got {
				if scores[m] != s {
					t.Fatalf("ZRANDMEMBER z %d WITHSCORES: %q with score %q; want %q", count, m, s, scores[m])
				}
			}
		}
		// A negative count gives exactly -count members with repeats; over 100 draws from 4
		// members each shows up (missing one has probability 4*(3/4)^100).
		drawn := setPick(t, k.arr("ZRANDMEMBER", "z", -100), universe, 100, false, "ZRANDMEMBER z -100")
		seen := map[string]bool{}
		for _, d := range drawn {
			seen[d] = true
		}
		if len(seen) != 4 {
			t.Fatalf("ZRANDMEMBER z -100 drew only %v", setKeys(seen))
		}
		flat := k.arr("ZRANDMEMBER", "z", -50, "WITHSCORES")
		if len(flat) != 100 {
			t.Fatalf("ZRANDMEMBER z -50 WITHSCORES: %d elements; want 100", len(flat))
		}
		flatToMap(t, "ZRANDMEMBER z -50 WITHSCORES", flat, false)
		for i := 0; i < len(flat); i += 2 {
			if m := flat[i].(string); scores[m] != flat[i+1] {
				t.Fatalf("ZRANDMEMBER z -50 WITHSCORES: %q with score %s", m, short(flat[i+1]))
			}
		}
		k.eq(4, "ZCARD", "z") // nothing was removed

		k.err(errNotInt, "ZRANDMEMBER", "z", "x")
		k.err(errNotInt, "ZRANDMEMBER", "z", "1.5")
		k.err(errNotInt, "ZRANDMEMBER", "z", "WITHSCORES")
		k.err(errRandCountRange, "ZRANDMEMBER", "z", "-9223372036854775808")
		k.err(errRandWithValues, "ZRANDMEMBER", "z", "-9223372036854775807", "WITHSCORES")
		k.err(errRandWithValues, "ZRANDMEMBER", "z", "4611686018427387904", "WITHSCORES")
		k.err(errRandWithValues, "ZRANDMEMBER", "z", "-4611686018427387904", "WITHSCORES")
		k.err(errSyntax, "ZRANDMEMBER", "z", 1, "FOO")
		k.err(errSyntax, "ZRANDMEMBER", "z", 1, "WITHSCORES", "FOO")
		k.ok("SET", "str", "v")
		k.err(errNotInt, "ZRANDMEMBER", "str", "x") // the count is parsed first
	})

	subtest(t, c, "ZUnionZInterZDiff", func(t *testing.T, k checker) {
		k.eq(3, "ZADD", "z1", 1, "a", 2, "b", 3, "c")
		k.eq(3, "ZADD", "z2", 10, "b", 20, "c", 30, "d")
		k.eq(3, "SADD", "s1", "a", "d", "x") // a plain set counts as members with score 1
		for _, tc := range []struct {
			want []string
			args []any
		}{
			{[]string{"a", "1", "b", "12", "c", "23", "d", "30"}, []any{"ZUNION", 2, "z1", "z2", "WITHSCORES"}},
			{[]string{"a", "b", "c", "d"}, []any{"ZUNION", 2, "z1", "z2"}},
			{[]string{"a", "2", "b", "34", "c", "66", "d", "90"}, []any{"ZUNION", 2, "z1", "z2", "WEIGHTS", 2, 3, "WITHSCORES"}},
			{[]string{"a", "1", "b", "2", "c", "3", "d", "30"}, []any{"ZUNION", 2, "z1", "z2", "AGGREGATE", "MIN", "WITHSCORES"}},
			{[]string{"a", "1", "b", "10", "c", "20", "d", "30"}, []any{"ZUNION", 2, "z1", "z2", "AGGREGATE", "MAX", "WITHSCORES"}},
			{[]string{"a", "1", "b", "12", "c", "23", "d", "30"}, []any{"ZUNION", 2, "z1", "z2", "AGGREGATE", "SUM", "WITHSCORES"}},
			{[]string{"d", "-30", "a", "1", "b", "2", "c", "3"}, []any{"ZUNION", 2, "z1", "z2", "aggregate", "max", "weights", 1, -1, "withscores"}},
			{[]string{"a", "0.10000000000000001", "b", "0.20000000000000001", "c", "0.30000000000000004"}, []any{"ZUNION", 1, "z1", "WEIGHTS", "0.1", "WITHSCORES"}},
			{[]string{"d", "1", "x", "1", "a", "2", "b", "2", "c", "3"}, []any{"ZUNION", 2, "z1", "s1", "WITHSCORES"}},
			{[]string{"x", "5", "a", "6", "b", "12", "c", "23", "d", "35"}, []any{"ZUNION", 3, "z1", "z2", "s1", "WEIGHTS", 1, 1, 5, "WITHSCORES"}},
			{[]string{"a", "1", "b", "2", "c", "3"}, []any{"ZUNION", 2, "z1", "missing", "WITHSCORES"}},
			{[]string{}, []any{"ZUNION", 2, "missing", "missing2"}},
			{[]string{"a", "1", "b", "12", "c", "23", "d", "30"}, []any{"ZUNION", 2, "z1", "z2", "WITHSCORES", "WITHSCORES"}},
			{[]string{"b", "12", "c", "23"}, []any{"ZINTER", 2, "z1", "z2", "WITHSCORES"}},
			{[]string{"b", "30", "c", "60"}, []any{"ZINTER", 2, "z1", "z2", "WEIGHTS", 2, 3, "AGGREGATE", "MAX", "WITHSCORES"}},
			{[]string{"b", "2", "c", "3"}, []any{"ZINTER", 2, "z2", "z1", "AGGREGATE", "MIN", "WITHSCORES"}},
			{[]string{"a", "2"}, []any{"ZINTER", 2, "z1", "s1", "WITHSCORES"}},
			{[]string{"a", "1", "d", "1", "x", "1"}, []any{"ZINTER", 1, "s1", "WITHSCORES"}},
			{[]string{}, []any{"ZINTER", 2, "z1", "missing", "WITHSCORES"}},
			{[]string{"a", "b", "c"}, []any{"ZINTER", 1, "z1"}},
			{[]string{"a", "1"}, []any{"ZDIFF", 2, "z1", "z2", "WITHSCORES"}},
			{[]string{"b", "2", "c", "3"}, []any{"ZDIFF", 2, "z1", "s1", "WITHSCORES"}},
			{[]string{"d", "1", "x", "1"}, []any{"ZDIFF", 2, "s1", "z1", "WITHSCORES"}},
			{[]string{"a", "1", "b", "2", "c", "3"}, []any{"ZDIFF", 1, "z1", "WITHSCORES"}},
			{[]string{"a", "b", "c"}, []any{"ZDIFF", 2, "z1", "missing"}},
			{[]string{}, []any{"ZDIFF", 2, "missing", "z1"}},
			{[]string{}, []any{"ZDIFF", 2, "z1", "z1"}},
		} {
			k.eq(tc.want, tc.args...)
		}
		// inf and -inf: a sum that is not a number counts as 0, and so does a weight of 0 times inf.
		k.eq(1, "ZADD", "inf", "inf", "a")
		k.eq(1, "ZADD", "ninf", "-inf", "a")
		k.eq([]any{"a", "0"}, "ZUNION", 2, "inf", "ninf", "WITHSCORES")
		k.eq([]any{"a", "0"}, "ZINTER", 2, "inf", "ninf", "WITHSCORES")
		k.eq([]any{"a", "0"}, "ZUNION", 1, "inf", "WEIGHTS", 0, "WITHSCORES")
		k.eq([]any{"a", "inf"}, "ZUNION", 2, "inf", "ninf", "AGGREGATE", "MAX", "WITHSCORES")
		k.eq([]any{"a", "-inf"}, "ZUNION", 2, "inf", "ninf", "AGGREGATE", "MIN", "WITHSCORES")
		k.eq([]any{"a", "inf"}, "ZUNION", 1, "ninf", "WEIGHTS", "-inf", "WITHSCORES")
		k.eq([]any{"a", "inf", "b", "inf", "c", "inf"}, "ZUNION", 1, "z1", "WEIGHTS", "inf", "WITHSCORES")

		for _, cmd := range []string{"ZUNION", "ZINTER", "ZDIFF"} {
			lc := strings.ToLower(cmd)
			k.err(errZInputKeys(lc), cmd, 0, "z1")
			k.err(errZInputKeys(lc), cmd, -1, "z1")
			k.err(errNotInt, cmd, "x", "z1")
			k.err(errSyntax, cmd, 3, "z1", "z2")
			k.err(errSyntax, cmd, "9223372036854775807", "z1")
			k.err(errSyntax, cmd, 1, "z1", "FOO")
		}
		k.err(errSyntax, "ZUNION", 2, "z1", "z2", "WEIGHTS", 1)
		k.err(errSyntax, "ZUNION", 2, "z1", "z2", "WEIGHTS", 1, 2, 3)
		k.err(errZWeight, "ZUNION", 2, "z1", "z2", "WEIGHTS", 1, "x")
		k.err(errZWeight, "ZINTER", 2, "z1", "z2", "WEIGHTS", "nan", 1)
		k.err(errSyntax, "ZUNION", 2, "z1", "z2", "AGGREGATE")
		k.err(errSyntax, "ZUNION", 2, "z1", "z2", "AGGREGATE", "FOO")
		k.err(errSyntax, "ZDIFF", 2, "z1", "z2", "WEIGHTS", 1, 2) // ZDIFF has neither option
		k.err(errSyntax, "ZDIFF", 2, "z1", "z2", "AGGREGATE", "MIN")
		k.ok("SET", "str", "v")
		k.err(errWrongType, "ZUNION", 2, "z1", "str")
		k.err(errWrongType, "ZINTER", 2, "missing", "str")
		k.err(errWrongType, "ZINTER", 2, "str", "missing")
		k.err(errWrongType, "ZDIFF", 2, "missing", "str")
		k.err(errWrongType, "ZDIFF", 2, "z1", "str")
	})

	subtest(t, c, "StoreCommands", func(t *testing.T, k checker) {
		k.eq(3, "ZADD", "z1", 1, "a", 2, "b", 3, "c")
		k.eq(3, "ZADD", "z2", 10, "b", 20, "c", 30, "d")
		k.eq(2, "SADD", "s1", "a", "x")
		k.eq(4, "ZUNIONSTORE", "d", 2, "z1", "z2")
		zsCheck(t, k, "d", "a", "1", "b", "12", "c", "23", "d", "30")
		k.eq(2, "ZINTERSTORE", "d", 2, "z1", "z2", "WEIGHTS", 1, 2) // replaces d
		zsCheck(t, k, "d", "b", "22", "c", "43")
		k.eq(2, "ZINTERSTORE", "d", 2, "z1", "z2", "AGGREGATE", "MIN")
		zsCheck(t, k, "d", "b", "2", "c", "3")
		k.eq(1, "ZDIFFSTORE", "d", 2, "z1", "z2")
		zsCheck(t, k, "d", "a", "1")
		k.eq(4, "ZUNIONSTORE", "d", 2, "z1", "s1", "WEIGHTS", 1, 10)
		zsCheck(t, k, "d", "b", "2", "c", "3", "x", "10", "a", "11")
		k.eq(2, "ZUNIONSTORE", "fromset", 1, "s1") // a set in, a sorted set out
		k.eq("zset", "TYPE", "fromset")
		zsCheck(t, k, "fromset", "a", "1", "x", "1")

		// An empty result deletes the destination, whatever it held.
		k.eq(1, "DEL", "d")
		for _, args := range [][]any{
			{"ZINTERSTORE", "d", 2, "z1", "missing"}, {"ZUNIONSTORE", "d", 1, "missing"},
			{"ZDIFFSTORE", "d", 2, "z1", "z1"}, {"ZDIFFSTORE", "d", 1, "missing"},
		} {
			k.eq(1, "ZADD", "d", 1, "x")
			k.eq(0, args...)
			k.eq(0, "EXISTS", "d")
			k.ok("SET", "d", "string")
			k.eq(0, args...)
			k.eq(0, "EXISTS", "d")
			k.eq(0, args...)
			k.eq(0, "EXISTS", "d")
		}
		// A destination of another type is overwritten, and its TTL goes with it.
		k.ok("SET", "str", "v", "EX", 100)
		k.eq(3, "ZUNIONSTORE", "str", 1, "z2")
		k.eq("zset", "TYPE", "str")
		k.eq(-1, "TTL", "str")
		k.eq(1, "ZADD", "ttl", 1, "x")
		k.eq(1, "EXPIRE", "ttl", 100)
		k.eq(2, "ZINTERSTORE", "ttl", 2, "z1", "z2")
		k.eq(-1, "TTL", "ttl")
		// The destination may be one of the sources.
		k.eq(4, "ZUNIONSTORE", "z1", 2, "z1", "z2")
		zsCheck(t, k, "z1", "a", "1", "b", "12", "c", "23", "d", "30")
		k.eq(0, "ZDIFFSTORE", "z1", 2, "z1", "z1")
		k.eq(0, "EXISTS", "z1")

		for _, cmd := range []string{"ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"} {
			k.err(errZInputKeys(strings.ToLower(cmd)), cmd, "d", 0, "z2")
			k.err(errSyntax, cmd, "d", 2, "z2")
			k.err(errSyntax, cmd, "d", 1, "z2", "WITHSCORES") // no WITHSCORES when storing
		}
		k.err(errSyntax, "ZDIFFSTORE", "d", 2, "z2", "z2", "WEIGHTS", 1, 1)
		// A source of another type fails the command and leaves the destination alone.
		k.ok("SET", "notz", "v")
		k.eq(1, "ZADD", "keep", 1, "k")
		for _, cmd := range []string{"ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"} {
			k.err(errWrongType, cmd, "keep", 2, "z2", "notz")
			k.err(errWrongType, cmd, "keep", 2, "missing", "notz")
		}
		zsCheck(t, k, "keep", "k", "1")
	})

	subtest(t, c, "ZInterCard", func(t *testing.T, k checker) {
		k.eq(4, "ZADD", "z1", 1, "a", 2, "b", 3, "c", 4, "d")
		k.eq(4, "ZADD", "z2", 1, "b", 1, "c", 1, "d", 1, "e")
		k.eq(3, "SADD", "s", "c", "d", "e")
		k.eq(3, "ZINTERCARD", 2, "z1", "z2")
		k.eq(2, "ZINTERCARD", 2, "z1", "z2", "LIMIT", 2)
		k.eq(3, "ZINTERCARD", 2, "z1", "z2", "LIMIT", 0) // 0: no limit
		k.eq(3, "ZINTERCARD", 2, "z1", "z2", "limit", 100)
		k.eq(2, "ZINTERCARD", 3, "z1", "z2", "s")
		k.eq(4, "ZINTERCARD", 1, "z1")
		k.eq(0, "ZINTERCARD", 2, "z1", "missing")
		k.eq(2, "ZINTERCARD", 1, "z1", "LIMIT", 1, "LIMIT", 2) // the last LIMIT wins
		k.err(errZInputKeys("zintercard"), "ZINTERCARD", 0, "z1")
		k.err(errZInputKeys("zintercard"), "ZINTERCARD", -1, "z1")
		k.err(errNotInt, "ZINTERCARD", "x", "z1")
		k.err(errSyntax, "ZINTERCARD", 2, "z1")
		k.err(errSyntax, "ZINTERCARD", 1, "z1", "z2")
		k.err(errSyntax, "ZINTERCARD", "2147483648", "z1")
		k.err(errSetLimit, "ZINTERCARD", 1, "z1", "LIMIT", -1)
		k.err(errSetLimit, "ZINTERCARD", 1, "z1", "LIMIT", "x")
		k.err(errSetLimit, "ZINTERCARD", 1, "z1", "LIMIT", "9223372036854775808")
		k.err(errSyntax, "ZINTERCARD", 1, "z1", "LIMIT")
		k.err(errSyntax, "ZINTERCARD", 1, "z1", "FOO", 1)
		k.ok("SET", "str", "v")
		k.err(errWrongType, "ZINTERCARD", 2, "z1", "str")
		k.err(errWrongType, "ZINTERCARD", 2, "missing", "str")
	})

	subtest(t, c, "ZScanSmall", func(t *testing.T, k checker) {
		k.eq([]any{"0", []any{}}, "ZSCAN", "missing", 0)
		k.eq(4, "ZADD", "z", 1, "a", 2, "b", "0.1", "c", "inf", "d")
		// A small sorted set comes back whole in one call, whatever COUNT says.
		want := map[string]string{"a": "1", "b": "2", "c": "0.10000000000000001", "d": "inf"}
		for _, opts := range [][]any{nil, {"COUNT", 1}, {"COUNT", 100}} {
			reply := k.arr(append([]any{"ZSCAN", "z", 0}, opts...)...)
			if len(reply) != 2 || reply[0] != "0" {
				t.Fatalf("ZSCAN z 0 %v: %s; want cursor 0", opts, short(reply))
			}
			if got := flatToMap(t, "ZSCAN z", reply[1].([]any), true); !maps.Equal(got, want) {
				t.Fatalf("ZSCAN z 0 %v: %v; want %v", opts, got, want)
			}
		}
		k.eq([]any{"0", []any{"a", "1"}}, "ZSCAN", "z", 0, "MATCH", "a*")
		k.eq([]any{"0", []any{}}, "ZSCAN", "z", 0, "MATCH", "1") // MATCH looks at members, not scores
		reply := k.arr("ZSCAN", "z", 0, "match", "[ab]")
		if got := flatToMap(t, "ZSCAN MATCH [ab]", reply[1].([]any), true); reply[0] != "0" || !maps.Equal(got, map[string]string{"a": "1", "b": "2"}) {
			t.Fatalf("ZSCAN z 0 MATCH [ab]: %s", short(reply))
		}
		k.err(errBadCursor, "ZSCAN", "z", "x")
		k.err(errBadCursor, "ZSCAN", "z", "18446744073709551616")
		k.err(errSyntax, "ZSCAN", "z", 0, "COUNT", 0)
		k.err(errSyntax, "ZSCAN", "z", 0, "COUNT", -1)
		k.err(errNotInt, "ZSCAN", "z", 0, "COUNT", "x")
		k.err(errSyntax, "ZSCAN", "z", 0, "COUNT")
		k.err(errSyntax, "ZSCAN", "z", 0, "MATCH")
		k.err(errSyntax, "ZSCAN", "z", 0, "FOO")
		k.err(errSyntax, "ZSCAN", "z", 0, "TYPE", "zset") // SCAN's option only
		k.err(errSyntax, "ZSCAN", "z", 0, "NOSCORES")     // added in Redis 8
		k.ok("SET", "str", "v")
		k.err(errWrongType, "ZSCAN", "str", 0)
		k.err(errBadCursor, "ZSCAN", "str", "x") // the cursor is parsed before the type is checked
	})

	subtest(t, c, "Arity", func(t *testing.T, k checker) {
		for _, args := range [][]any{
			{"ZADD"}, {"ZADD", "z"}, {"ZADD", "z", 1}, {"ZADD", "z", "NX"}, {"ZADD", "z", "CH"},
			{"ZINCRBY", "z", 1}, {"ZINCRBY", "z", 1, "a", "b"},
			{"ZREM", "z"}, {"ZSCORE", "z"}, {"ZSCORE", "z", "a", "b"}, {"ZMSCORE", "z"},
			{"ZCARD"}, {"ZCARD", "z", "x"}, {"ZCOUNT", "z", 1}, {"ZCOUNT", "z", 1, 2, 3},
			{"ZLEXCOUNT", "z", "-"}, {"ZRANK", "z"}, {"ZRANK", "z", "a", "b"}, {"ZREVRANK", "z"},
			{"ZRANGE", "z", 0}, {"ZRANGEBYSCORE", "z", 1}, {"ZREVRANGEBYSCORE", "z", 1},
			{"ZRANGEBYLEX", "z", "-"}, {"ZREVRANGEBYLEX", "z", "+"}, {"ZREVRANGE", "z", 0},
			{"ZRANGESTORE", "d", "z"}, {"ZRANGESTORE", "d", "z", 0},
			{"ZREMRANGEBYRANK", "z", 0}, {"ZREMRANGEBYRANK", "z", 0, 1, 2},
			{"ZREMRANGEBYSCORE", "z", 0}, {"ZREMRANGEBYLEX", "z", "-"},
			{"ZPOPMIN"}, {"ZPOPMAX"}, {"ZMPOP"}, {"ZMPOP", 1}, {"ZMPOP", 1, "z"},
			{"BZPOPMIN"}, {"BZPOPMIN", "z"}, {"BZPOPMAX", "z"},
			{"BZMPOP", 0}, {"BZMPOP", 0, 1}, {"BZMPOP", 0, 1, "z"},
			{"ZRANDMEMBER"}, {"ZUNION"}, {"ZUNION", 1}, {"ZINTER", 1}, {"ZDIFF", 1},
			{"ZUNIONSTORE", "d"}, {"ZUNIONSTORE", "d", 1}, {"ZINTERSTORE", "d", 1}, {"ZDIFFSTORE", "d", 1},
			{"ZINTERCARD"}, {"ZINTERCARD", 1}, {"ZSCAN"}, {"ZSCAN", "z"},
		} {
			k.err(errArity(strings.ToLower(args[0].(string))), args...)
		}
		k.err(errArity("zadd"), "zAdd", "z", 1) // the name is lower case however it was sent
		k.eq(0, "EXISTS", "z")
	})

	subtest(t, c, "WrongTypeZSetOnOthers", func(t *testing.T, k checker) {
		k.ok("SET", "str", "v")
		k.eq(1, "HSET", "h", "f", "v")
		k.eq(1, "SADD", "st", "a")
		k.eq(1, "ZADD", "z", 1, "a")
		for _, key := range []string{"str", "h"} {
			for _, args := range [][]any{
				{"ZADD", key, 1, "a"}, {"ZADD", key, "INCR", 1, "a"}, {"ZINCRBY", key, 1, "a"},
				{"ZREM", key, "a"}, {"ZSCORE", key, "a"}, {"ZMSCORE", key, "a"}, {"ZCARD", key},
				{"ZCOUNT", key, 0, 1}, {"ZLEXCOUNT", key, "-", "+"}, {"ZRANK", key, "a"}, {"ZREVRANK", key, "a"},
				{"ZRANGE", key, 0, -1}, {"ZRANGE", key, 0, -1, "BYSCORE"}, {"ZRANGE", key, "-", "+", "BYLEX"},
				{"ZRANGEBYSCORE", key, 0, 1}, {"ZREVRANGEBYSCORE", key, 1, 0}, {"ZRANGEBYLEX", key, "-", "+"},
				{"ZREVRANGEBYLEX", key, "+", "-"}, {"ZREVRANGE", key, 0, 1}, {"ZRANGESTORE", "d", key, 0, 1},
				{"ZREMRANGEBYRANK", key, 0, 1}, {"ZREMRANGEBYSCORE", key, 0, 1}, {"ZREMRANGEBYLEX", key, "-", "+"},
				{"ZPOPMIN", key}, {"ZPOPMAX", key, 2}, {"ZMPOP", 1, key, "MIN"},
				{"BZPOPMIN", key, "0.01"}, {"BZPOPMAX", "missing", key, "0.01"}, {"BZMPOP", "0.01", 1, key, "MAX"},
				{"ZRANDMEMBER", key}, {"ZRANDMEMBER", key, -2, "WITHSCORES"},
				{"ZUNION", 2, "z", key}, {"ZINTER", 1, key}, {"ZDIFF", 2, "z", key},
				{"ZUNIONSTORE", "d", 1, key}, {"ZINTERSTORE", "d", 2, key, "z"}, {"ZDIFFSTORE", "d", 1, key},
				{"ZINTERCARD", 1, key}, {"ZSCAN", key, 0},
			} {
				k.err(errWrongType, args...)
			}
		}
		// A plain set is an input to the union family, never a sorted set for the others.
		k.err(errWrongType, "ZCARD", "st")
		k.err(errWrongType, "ZADD", "st", 1, "a")
		k.err(errWrongType, "ZRANGESTORE", "d", "st", 0, -1)
		k.eq([]any{"a", "2"}, "ZUNION", 2, "z", "st", "WITHSCORES")
		k.eq(0, "EXISTS", "d")
		k.eq("v", "GET", "str")
		k.eq("v", "HGET", "h", "f")
		zsCheck(t, k, "z", "a", "1")
	})

	subtest(t, c, "WrongTypeOthersOnZSet", func(t *testing.T, k checker) {
		k.eq(2, "ZADD", "z", 1, "a", 2, "b")
		for _, args := range [][]any{
			{"GET", "z"}, {"APPEND", "z", "x"}, {"INCR", "z"}, {"INCRBYFLOAT", "z", 1}, {"STRLEN", "z"},
			{"GETRANGE", "z", 0, 1}, {"SETRANGE", "z", 0, "x"}, {"GETSET", "z", "v"}, {"GETDEL", "z"},
			{"SET", "z", "v", "GET"},
			{"HGET", "z", "f"}, {"HSET", "z", "f", "v"}, {"HGETALL", "z"},
			{"LPUSH", "z", "a"}, {"LRANGE", "z", 0, -1}, {"LLEN", "z"},
			{"SADD", "z", "a"}, {"SMEMBERS", "z"}, {"SCARD", "z"}, {"SISMEMBER", "z", "a"},
			{"SUNION", "z"}, {"SINTERSTORE", "d", "z"},
		} {
			k.err(errWrongType, args...)
		}
		k.eq([]any{nil}, "MGET", "z") // MGET answers nil for a key of another type
		k.eq(0, "SETNX", "z", "v")
		zsCheck(t, k, "z", "a", "1", "b", "2")
		// A plain SET replaces the sorted set.
		k.ok("SET", "z", "v")
		k.eq("string", "TYPE", "z")
		k.eq(1, "DEL", "z")
		k.eq(1, "ZADD", "z", 3, "c")
		zsCheck(t, k, "z", "c", "3")
	})

	subtest(t, c, "BinaryMembers", func(t *testing.T, k checker) {
		members := []string{"", "\x00", "a\x00b", "\r\n", "$5\r\nhello\r\n", "-ERR x", "\xff\xfe", strings.Repeat("long", 1000)}
		m := map[string]float64{}
		for i, mem := range members {
			m[mem] = float64(i % 3)
		}
		k.eq(len(members), zsAddArgs("bin", m)...)
		zsCheck(t, k, "bin", zsSorted(m)...)
		for mem, s := range m {
			k.eq(zsFormat(s), "ZSCORE", "bin", mem)
		}
		k.eq(1, "ZREM", "bin", "\x00")
		k.null("ZSCORE", "bin", "\x00\x00")
		k.eq(1, "ZADD", "\x00key\r\n", 1, "v") // binary key names too
		zsCheck(t, k, "\x00key\r\n", "v", "1")
	})
}

// zsDouble is a RESP3 double reply as it is on the wire.
func zsDouble(s string) wireReply { return wireReply{Kind: ',', Str: s} }

// zsPair3 is a [member, score] pair of a RESP3 WITHSCORES reply.
func zsPair3(member, score string) wireReply { return wArr(wBulk(member), zsDouble(score)) }

// zsNull3 is the RESP3 null.
var zsNull3 = wireReply{Kind: '_', Null: true}

// zsNullArray is the RESP2 null array (*-1).
var zsNullArray = wireReply{Kind: '*', Null: true}

// TestZSetRESP3 checks the reply shapes of the sorted-set commands on the wire in RESP2 and,
// after HELLO 3, in RESP3 (scores as doubles, WITHSCORES as [member, score] pairs, nulls as _),
// and through go-redis with Protocol 3.
func TestZSetRESP3(t *testing.T) {
	s, c := startServer(t)
	k := newChecker(t, c)
	fill := func() {
		t.Helper()
		k.ok("FLUSHALL")
		k.eq(5, "ZADD", "z", 1, "a", 2, "b", "0.1", "c", "1e20", "d", "inf", "e")
		k.eq(3, "ZADD", "p", 1, "a", 2, "b", 3, "c")
	}
	w := dialWire(t, s)

	// RESP2: scores are bulk strings, WITHSCORES replies flat, and nulls $-1 or *-1.
	fill()
	w.expectDo(wBulk("0.10000000000000001"), "ZSCORE", "z", "c")
	w.expectDo(wNil(), "ZSCORE", "z", "nope")
	w.expectDo(wArr(wBulk("1e+20"), wNil()), "ZMSCORE", "z", "d", "nope")
	w.expectDo(wArr(wBulk("c"), wBulk("0.10000000000000001"), wBulk("a"), wBulk("1")), "ZRANGE", "z", "0", "1", "WITHSCORES")
	w.expectDo(wArr(wBulk("e"), wBulk("inf")), "ZREVRANGE", "z", "0", "0", "WITHSCORES")
	w.expectDo(wBulk("2.5"), "ZINCRBY", "p", "0.5", "b")
	w.expectDo(wNil(), "ZADD", "p", "NX", "INCR", "1", "a")
	w.expectDo(wNil(), "ZRANK", "z", "nope")
	w.expectDo(wInt(4), "ZRANK", "z", "e")
	w.expectDo(wArr(wBulk("a"), wBulk("1")), "ZPOPMIN", "p")
	w.expectDo(wArr(wBulk("c"), wBulk("3")), "ZPOPMAX", "p", "1")
	w.expectDo(wArr(), "ZPOPMIN", "nope")
	w.expectDo(wArr(wBulk("p"), wArr(wArr(wBulk("b"), wBulk("2.5")))), "ZMPOP", "1", "p", "MIN")
	w.expectDo(zsNullArray, "ZMPOP", "1", "p", "MIN")
	w.expectDo(zsNullArray, "BZPOPMIN", "nope", "0.01")
	w.expectDo(zsNullArray, "BZMPOP", "0.01", "1", "nope", "MAX")
	w.expectDo(wNil(), "ZRANDMEMBER", "nope")

	if h := w.do("HELLO", "3"); h.Kind != '%' {
		t.Fatalf("HELLO 3: %v", h)
	}
	fill()
	w.expectDo(zsDouble("0.10000000000000001"), "ZSCORE", "z", "c")
	w.expectDo(zsDouble("1e+20"), "ZSCORE", "z", "d")
	w.expectDo(zsDouble("inf"), "ZSCORE", "z", "e")
	w.expectDo(zsNull3, "ZSCORE", "z", "nope")
	w.expectDo(zsNull3, "ZSCORE", "nokey", "a")
	w.expectDo(wArr(zsDouble("1"), zsNull3, zsDouble("0.10000000000000001")), "ZMSCORE", "z", "a", "nope", "c")
	w.expectDo(zsDouble("2.5"), "ZINCRBY", "p", "0.5", "b")
	w.expectDo(zsDouble("3"), "ZADD", "p", "INCR", "0.5", "b")
	w.expectDo(zsNull3, "ZADD", "p", "NX", "INCR", "1", "a")
	w.expectDo(wInt(3), "ZADD", "q", "1", "x", "2", "y", "-inf", "w")
	w.expectDo(wInt(2), "ZRANK", "z", "b")
	w.expectDo(zsNull3, "ZRANK", "z", "nope")
	w.expectDo(zsNull3, "ZREVRANK", "nokey", "a")
	w.expectDo(wInt(5), "ZCARD", "z")
	w.expectDo(wInt(2), "ZCOUNT", "z", "1", "2")
	// WITHSCORES: an array of [member, double] pairs.
	w.expectDo(wArr(zsPair3("c", "0.10000000000000001"), zsPair3("a", "1")), "ZRANGE", "z", "0", "1", "WITHSCORES")
	w.expectDo(wArr(wBulk("c"), wBulk("a")), "ZRANGE", "z", "0", "1")
	w.expectDo(wArr(zsPair3("d", "1e+20"), zsPair3("e", "inf")), "ZRANGEBYSCORE", "z", "(2", "+inf", "WITHSCORES")
	w.expectDo(wArr(zsPair3("e", "inf"), zsPair3("d", "1e+20")), "ZREVRANGEBYSCORE", "z", "+inf", "(2", "WITHSCORES")
	w.expectDo(wArr(zsPair3("e", "inf")), "ZREVRANGE", "z", "0", "0", "WITHSCORES")
	w.expectDo(wArr(zsPair3("b", "2")), "ZRANGE", "z", "2", "1", "BYSCORE", "REV", "LIMIT", "0", "1", "WITHSCORES")
	w.expectDo(wArr(), "ZRANGE", "nokey", "0", "-1", "WITHSCORES")
	w.expectDo(wArr(zsPair3("w", "-inf"), zsPair3("x", "1"), zsPair3("y", "2")), "ZUNION", "1", "q", "WITHSCORES")
	w.expectDo(wArr(zsPair3("w", "-inf"), zsPair3("x", "2"), zsPair3("y", "4")), "ZINTER", "2", "q", "q", "WITHSCORES")
	w.expectDo(wArr(zsPair3("w", "-inf"), zsPair3("x", "1"), zsPair3("y", "2")), "ZDIFF", "2", "q", "z", "WITHSCORES")
	// ZPOPMIN and ZPOPMAX: one flat pair without a count, pairs with one.
	w.expectDo(wArr(wBulk("a"), zsDouble("1")), "ZPOPMIN", "p")
	w.expectDo(wArr(zsPair3("c", "3")), "ZPOPMAX", "p", "1")
	w.expectDo(wArr(), "ZPOPMIN", "p", "0")
	w.expectDo(wArr(), "ZPOPMIN", "nokey")
	w.expectDo(wArr(), "ZPOPMAX", "nokey", "2")
	w.expectDo(wInt(2), "ZADD", "p", "1", "a", "3", "c")
	w.expectDo(wArr(zsPair3("c", "3"), zsPair3("b", "3")), "ZPOPMAX", "p", "2")
	// ZMPOP: [key, [[member, score], ...]], or a null.
	w.expectDo(wArr(wBulk("p"), wArr(zsPair3("a", "1"))), "ZMPOP", "2", "nokey", "p", "MIN", "COUNT", "5")
	w.expectDo(zsNull3, "ZMPOP", "1", "p", "MIN")
	w.expectDo(zsNull3, "BZPOPMIN", "nokey", "0.01")
	w.expectDo(zsNull3, "BZMPOP", "0.01", "1", "nokey", "MIN")
	w.expectDo(wInt(2), "ZADD", "p", "1", "a", "2", "b")
	w.expectDo(wArr(wBulk("p"), wBulk("a"), zsDouble("1")), "BZPOPMIN", "p", "0")
	w.expectDo(wArr(wBulk("p"), wArr(zsPair3("b", "2"))), "BZMPOP", "0", "1", "p", "MAX", "COUNT", "9")
	// ZRANDMEMBER: a bulk string, an array of members, or [member, score] pairs.
	w.expectDo(zsNull3, "ZRANDMEMBER", "nokey")
	w.expectDo(wArr(), "ZRANDMEMBER", "nokey", "2", "WITHSCORES")
	w.expectDo(wInt(1), "ZADD", "one", "-inf", "w")
	w.expectDo(wArr(zsPair3("w", "-inf"), zsPair3("w", "-inf")), "ZRANDMEMBER", "one", "-2", "WITHSCORES")
	w.expectDo(wArr(wBulk("w")), "ZRANDMEMBER", "one", "1")
	w.expectDo(wBulk("w"), "ZRANDMEMBER", "one")
	if r := w.do("ZRANDMEMBER", "q", "-4", "WITHSCORES"); r.Kind != '*' || len(r.Elems) != 4 {
		t.Fatalf("ZRANDMEMBER q -4 WITHSCORES: %v; want 4 pairs", r)
	} else {
		scores := map[string]string{"w": "-inf", "x": "1", "y": "2"}
		for _, p := range r.Elems {
			if p.Kind != '*' || len(p.Elems) != 2 || p.Elems[1].Kind != ',' || scores[p.Elems[0].Str] != p.Elems[1].Str {
				t.Fatalf("ZRANDMEMBER q -4 WITHSCORES: element %v is not a [member, score] pair of q", p)
			}
		}
	}
	// ZSCAN stays a flat array of bulk strings, scores included.
	w.expectDo(wArr(wBulk("0"), wArr(wBulk("w"), wBulk("-inf"), wBulk("x"), wBulk("1"), wBulk("y"), wBulk("2"))), "ZSCAN", "q", "0")
	// Inside EXEC the replies keep their RESP3 types.
	w.expectDo(wOK, "MULTI")
	for _, args := range [][]string{{"ZSCORE", "q", "x"}, {"ZSCORE", "q", "nope"}, {"ZRANGE", "q", "0", "0", "WITHSCORES"}, {"ZPOPMIN", "q"}} {
		w.expectDo(wStatus("QUEUED"), args...)
	}
	w.expectDo(wArr(zsDouble("1"), zsNull3, wArr(zsPair3("w", "-inf")), wArr(wBulk("w"), zsDouble("-inf"))), "EXEC")

	// go-redis decodes the RESP3 shapes into the same values as RESP2.
	fill()
	ctx := harness.Ctx(t)
	c3 := s.ClientOpts(&redis.Options{Protocol: 3})
	k3 := newChecker(t, c3)
	k3.eq(0.1, "ZSCORE", "z", "c")
	k3.eq(math.Inf(1), "ZSCORE", "z", "e")
	k3.null("ZSCORE", "z", "nope")
	k3.eq([]any{[]any{"c", 0.1}, []any{"a", 1.0}}, "ZRANGE", "z", 0, 1, "WITHSCORES")
	k3.eq([]any{"a", 1.0}, "ZPOPMIN", "p")
	k3.eq([]any{"p", []any{[]any{"c", 3.0}}}, "ZMPOP", 1, "p", "MAX")
	if got, err := c3.ZRangeWithScores(ctx, "z", 0, 1).Result(); err != nil ||
		!slices.Equal(got, []redis.Z{{Score: 0.1, Member: "c"}, {Score: 1, Member: "a"}}) {
		t.Fatalf("ZRangeWithScores over RESP3: %v, %v", got, err)
	}
	if got, err := c3.ZScore(ctx, "z", "d").Result(); err != nil || got != 1e20 {
		t.Fatalf("ZScore over RESP3: %v, %v", got, err)
	}
	if err := c3.ZScore(ctx, "z", "nope").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("ZScore of a missing member over RESP3: %v; want redis.Nil", err)
	}
	if got, err := c3.ZIncrBy(ctx, "z", 0.2, "c").Result(); err != nil || got != 0.30000000000000004 {
		t.Fatalf("ZIncrBy over RESP3: %v, %v", got, err)
	}
	k3.eq(2, "ZADD", "p", 1, "a", 3, "c")
	if got, err := c3.ZPopMin(ctx, "p", 2).Result(); err != nil ||
		!slices.Equal(got, []redis.Z{{Score: 1, Member: "a"}, {Score: 2, Member: "b"}}) {
		t.Fatalf("ZPopMin p 2 over RESP3: %v, %v", got, err)
	}
	if key, got, err := c3.ZMPop(ctx, "max", 5, "nokey", "p").Result(); err != nil || key != "p" ||
		!slices.Equal(got, []redis.Z{{Score: 3, Member: "c"}}) {
		t.Fatalf("ZMPop over RESP3: %q %v, %v", key, got, err)
	}
	k3.eq(1, "ZADD", "p", 7, "x")
	if got, err := c3.BZPopMax(ctx, time.Second, "nokey", "p").Result(); err != nil ||
		got.Key != "p" || got.Member != "x" || got.Score != 7 {
		t.Fatalf("BZPopMax over RESP3: %+v, %v", got, err)
	}
	if got, err := c3.ZRandMemberWithScores(ctx, "z", -3).Result(); err != nil || len(got) != 3 {
		t.Fatalf("ZRandMemberWithScores over RESP3: %v, %v", got, err)
	}
	if got, err := c3.ZUnionWithScores(ctx, redis.ZStore{Keys: []string{"z"}, Weights: []float64{2}}).Result(); err != nil ||
		len(got) != 5 || got[4] != (redis.Z{Score: math.Inf(1), Member: "e"}) || got[0] != (redis.Z{Score: 0.6000000000000001, Member: "c"}) {
		t.Fatalf("ZUnionWithScores over RESP3: %v, %v", got, err)
	}
}

// zsBlockedClients returns INFO clients blocked_clients.
func zsBlockedClients(t testing.TB, k checker) int {
	t.Helper()
	n, err := strconv.Atoi(infoFields(k.str("INFO", "clients"))["blocked_clients"])
	if err != nil {
		t.Fatalf("INFO clients blocked_clients: %v", err)
	}
	return n
}

// zsBlock sends the blocking command args on a new raw connection without reading its reply,
// and waits until the server counts n blocked clients: a test never sleeps to let a client
// block, and clients that block one after another are queued in that order.
func zsBlock(t testing.TB, s *harness.Server, k checker, n int, args ...string) *wireConn {
	t.Helper()
	w := dialWire(t, s)
	w.write(wireCmd(args...))
	harness.Eventually(t, 20*time.Second, fmt.Sprintf("%d blocked clients after %s", n, fmtArgs(args)), func() bool {
		return zsBlockedClients(t, k) == n
	})
	return w
}

// zsExpectBlocked checks that the server counts n blocked clients.
func zsExpectBlocked(t testing.TB, k checker, n int) {
	t.Helper()
	if got := zsBlockedClients(t, k); got != n {
		t.Fatalf("INFO clients blocked_clients: %d; want %d", got, n)
	}
}

// zsNoReply checks that w has received nothing within d.
func zsNoReply(t testing.TB, w *wireConn, d time.Duration, what string) {
	t.Helper()
	w.c.SetReadDeadline(time.Now().Add(d))
	b, err := w.r.Peek(1)
	if err == nil {
		t.Fatalf("%s: got %q; want no reply yet", what, b)
	}
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("%s: %v; want no reply yet", what, err)
	}
}

// zsExpectRead reads the reply of an earlier command on w and compares it with want.
func zsExpectRead(t testing.TB, w *wireConn, want wireReply, what string) {
	t.Helper()
	if got := w.read(); !got.equal(want) {
		t.Fatalf("%s: got %v; want %v", what, got, want)
	}
}

// TestZSetBlocking checks BZPOPMIN, BZPOPMAX and BZMPOP: served at once from a non-empty key,
// woken by a write from another connection, timing out with a null, serving blocked clients in
// the order they blocked, and their argument errors.
func TestZSetBlocking(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "Immediate", func(t *testing.T, k checker) {
		k.eq(3, "ZADD", "z", 1, "a", 2, "b", 3, "c")
		k.eq([]any{"z", "a", "1"}, "BZPOPMIN", "z", 0)
		k.eq([]any{"z", "c", "3"}, "BZPOPMAX", "z", 0)
		k.eq([]any{"z", "b", "2"}, "BZPOPMIN", "missing", "z", 0) // the first non-empty key
		k.eq(0, "EXISTS", "z")
		k.eq(3, "ZADD", "z", 1, "a", 2, "b", 3, "c")
		k.eq(1, "ZADD", "y", 9, "q")
		k.eq([]any{"y", "q", "9"}, "BZPOPMAX", "y", "z", 0) // keys are tried in argument order
		k.eq([]any{"z", []any{[]any{"a", "1"}, []any{"b", "2"}, []any{"c", "3"}}}, "BZMPOP", 0, 2, "missing", "z", "MIN", "COUNT", 5)
		k.eq(0, "EXISTS", "z")
		k.eq(2, "ZADD", "z", 1, "a", "0x10", "b")
		k.eq([]any{"z", "b", "16"}, "BZPOPMAX", "z", "0x10") // a hexadecimal timeout is a float too
		k.eq([]any{"z", []any{[]any{"a", "1"}}}, "BZMPOP", "1.5", 1, "z", "max", "count", 1)
	})

	subtest(t, c, "WokenByZAdd", func(t *testing.T, k checker) {
		for _, tc := range []struct {
			args []string
			want wireReply
			left []string
		}{
			{[]string{"BZPOPMIN", "k", "5"}, wArr(wBulk("k"), wBulk("a"), wBulk("1")), []string{"b", "2", "c", "3"}},
			{[]string{"BZPOPMAX", "other", "k", "5"}, wArr(wBulk("k"), wBulk("c"), wBulk("3")), []string{"a", "1", "b", "2"}},
			{[]string{"BZPOPMIN", "k", "0"}, wArr(wBulk("k"), wBulk("a"), wBulk("1")), []string{"b", "2", "c", "3"}},
			{[]string{"BZMPOP", "5", "2", "other", "k", "MIN", "COUNT", "2"},
				wArr(wBulk("k"), wArr(wArr(wBulk("a"), wBulk("1")), wArr(wBulk("b"), wBulk("2")))), []string{"c", "3"}},
			{[]string{"BZMPOP", "0", "1", "k", "MAX"}, wArr(wBulk("k"), wArr(wArr(wBulk("c"), wBulk("3")))), []string{"a", "1", "b", "2"}},
		} {
			k.ok("FLUSHALL")
			w := zsBlock(t, s, k, 1, tc.args...)
			zsNoReply(t, w, 50*time.Millisecond, fmtArgs(tc.args))
			k.eq(3, "ZADD", "k", 1, "a", 2, "b", 3, "c")
			zsExpectRead(t, w, tc.want, fmtArgs(tc.args))
			zsCheck(t, k, "k", tc.left...)
			if n := zsBlockedClients(t, k); n != 0 {
				t.Fatalf("%s: %d blocked clients after it was served", fmtArgs(tc.args), n)
			}
		}
	})

	subtest(t, c, "WokenByOtherWrites", func(t *testing.T, k checker) {
		// Every write that leaves a sorted set under the key serves the blocked client.
		k.eq(2, "ZADD", "src", 1, "a", 2, "b")
		for _, tc := range []struct {
			key   string
			write []any
			want  wireReply
		}{
			{"k1", []any{"ZUNIONSTORE", "k1", 1, "src"}, wArr(wBulk("k1"), wBulk("a"), wBulk("1"))},
			{"k2", []any{"RENAME", "k1", "k2"}, wArr(wBulk("k2"), wBulk("b"), wBulk("2"))},
			{"k3", []any{"COPY", "src", "k3"}, wArr(wBulk("k3"), wBulk("a"), wBulk("1"))},
			{"k4", []any{"ZRANGESTORE", "k4", "src", 1, 1}, wArr(wBulk("k4"), wBulk("b"), wBulk("2"))},
			{"k5", []any{"ZINCRBY", "k5", 3, "m"}, wArr(wBulk("k5"), wBulk("m"), wBulk("3"))},
			{"k6", []any{"ZADD", "k6", "NX", "INCR", 4, "n"}, wArr(wBulk("k6"), wBulk("n"), wBulk("4"))},
		} {
			w := zsBlock(t, s, k, 1, "BZPOPMIN", tc.key, "5")
			if _, err := k.do(tc.write...); err != nil {
				t.Fatalf("%s: %v", cmdString(tc.write), err)
			}
			zsExpectRead(t, w, tc.want, "BZPOPMIN "+tc.key+" after "+cmdString(tc.write))
		}
		// A transaction that adds and removes the member leaves nothing to serve; the client
		// stays blocked until the next ZADD.
		w := zsBlock(t, s, k, 1, "BZPOPMIN", "t", "5")
		r := dialRESP(t, s)
		if got := r.txRun(txCmd("ZADD", "t", "1", "a"), txCmd("ZREM", "t", "a")); !slices.Equal(asSlice(t, got), []any{int64(1), int64(1)}) {
			t.Fatalf("EXEC: %s", short(got))
		}
		zsNoReply(t, w, 50*time.Millisecond, "BZPOPMIN t after ZADD and ZREM in one transaction")
		k.eq(1, "ZADD", "t", 7, "x")
		zsExpectRead(t, w, wArr(wBulk("t"), wBulk("x"), wBulk("7")), "BZPOPMIN t")
		// A transaction that adds several members serves the client once, after EXEC.
		w = zsBlock(t, s, k, 1, "BZMPOP", "5", "1", "u", "MIN", "COUNT", "10")
		if got := r.txRun(txCmd("ZADD", "u", "2", "b"), txCmd("ZADD", "u", "1", "a")); !slices.Equal(asSlice(t, got), []any{int64(1), int64(1)}) {
			t.Fatalf("EXEC: %s", short(got))
		}
		zsExpectRead(t, w, wArr(wBulk("u"), wArr(wArr(wBulk("a"), wBulk("1")), wArr(wBulk("b"), wBulk("2")))), "BZMPOP u after EXEC")
		k.eq(0, "EXISTS", "u")
	})

	subtest(t, c, "ArrivalOrder", func(t *testing.T, k checker) {
		c1 := zsBlock(t, s, k, 1, "BZPOPMIN", "k", "10")
		c2 := zsBlock(t, s, k, 2, "BZPOPMIN", "k", "10")
		c3 := zsBlock(t, s, k, 3, "BZMPOP", "10", "1", "k", "MAX", "COUNT", "2")
		c4 := zsBlock(t, s, k, 4, "BZPOPMAX", "other", "k", "10")
		k.eq(5, "ZADD", "k", 1, "a", 2, "b", 3, "c", 4, "d", 5, "e")
		zsExpectRead(t, c1, wArr(wBulk("k"), wBulk("a"), wBulk("1")), "first blocked BZPOPMIN")
		zsExpectRead(t, c2, wArr(wBulk("k"), wBulk("b"), wBulk("2")), "second blocked BZPOPMIN")
		zsExpectRead(t, c3, wArr(wBulk("k"), wArr(wArr(wBulk("e"), wBulk("5")), wArr(wBulk("d"), wBulk("4")))), "third, BZMPOP MAX COUNT 2")
		zsExpectRead(t, c4, wArr(wBulk("k"), wBulk("c"), wBulk("3")), "fourth, BZPOPMAX")
		k.eq(0, "EXISTS", "k")

		// One member for two clients: the first gets it, the second waits for the next.
		c1 = zsBlock(t, s, k, 1, "BZPOPMIN", "q", "10")
		c2 = zsBlock(t, s, k, 2, "BZPOPMAX", "q", "10")
		k.eq(1, "ZADD", "q", 1, "a")
		zsExpectRead(t, c1, wArr(wBulk("q"), wBulk("a"), wBulk("1")), "first of two blocked clients")
		zsNoReply(t, c2, 50*time.Millisecond, "second of two blocked clients, one member added")
		zsExpectBlocked(t, k, 1)
		k.eq(1, "ZADD", "q", 2, "b")
		zsExpectRead(t, c2, wArr(wBulk("q"), wBulk("b"), wBulk("2")), "second of two blocked clients")
	})

	subtest(t, c, "Timeout", func(t *testing.T, k checker) {
		for _, args := range [][]string{
			{"BZPOPMIN", "missing", "0.1"}, {"BZPOPMAX", "missing", "missing2", "0.1"},
			{"BZMPOP", "0.1", "1", "missing", "MIN"}, {"BZMPOP", "0.1", "2", "missing", "m2", "MAX", "COUNT", "3"},
			{"BZPOPMIN", "missing", "0.0001"}, // a timeout below a millisecond still times out
		} {
			w := dialWire(t, s)
			start := time.Now()
			w.expectDo(zsNullArray, args...)
			if d := time.Since(start); args[len(args)-1] == "0.1" && d < 50*time.Millisecond {
				t.Fatalf("%s: timed out after %v", fmtArgs(args), d)
			}
		}
		w := dialWire(t, s)
		if h := w.do("HELLO", "3"); h.Kind != '%' {
			t.Fatalf("HELLO 3: %v", h)
		}
		w.expectDo(zsNull3, "BZPOPMAX", "missing", "0.05")
		w.expectDo(zsNull3, "BZMPOP", "0.05", "1", "missing", "MIN")
		zsExpectBlocked(t, k, 0)
		k.eq(0, "EXISTS", "missing")
	})

	subtest(t, c, "RESP3Woken", func(t *testing.T, k checker) {
		w1 := dialWire(t, s)
		w2 := dialWire(t, s)
		for _, w := range []*wireConn{w1, w2} {
			if h := w.do("HELLO", "3"); h.Kind != '%' {
				t.Fatalf("HELLO 3: %v", h)
			}
		}
		w1.write(wireCmd("BZPOPMIN", "v", "10"))
		harness.Eventually(t, 20*time.Second, "1 blocked client", func() bool { return zsBlockedClients(t, k) == 1 })
		w2.write(wireCmd("BZMPOP", "10", "1", "v", "MIN", "COUNT", "3"))
		harness.Eventually(t, 20*time.Second, "2 blocked clients", func() bool { return zsBlockedClients(t, k) == 2 })
		k.eq(3, "ZADD", "v", 1, "a", "0.1", "b", "inf", "c")
		zsExpectRead(t, w1, wArr(wBulk("v"), wBulk("b"), zsDouble("0.10000000000000001")), "RESP3 BZPOPMIN")
		zsExpectRead(t, w2, wArr(wBulk("v"), wArr(zsPair3("a", "1"), zsPair3("c", "inf"))), "RESP3 BZMPOP")
	})

	subtest(t, c, "InMulti", func(t *testing.T, k checker) {
		// Inside a transaction the blocking forms do not block: a null when there is nothing.
		k.eq(1, "ZADD", "z", 1, "a")
		r := dialRESP(t, s)
		got := r.txRun(txCmd("BZPOPMIN", "missing", "0"), txCmd("BZMPOP", "0", "1", "missing", "MIN"),
			txCmd("BZPOPMAX", "z", "0"), txCmd("BZPOPMIN", "z", "0"))
		want := []any{nil, nil, []any{"z", "a", "1"}, nil}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EXEC: %s; want %s", short(got), short(want))
		}
		zsExpectBlocked(t, k, 0)
	})

	subtest(t, c, "Errors", func(t *testing.T, k checker) {
		k.eq(1, "ZADD", "z", 1, "a")
		k.ok("SET", "str", "v")
		for _, key := range []string{"z", "str", "missing"} {
			k.err(errZTimeoutNeg, "BZPOPMIN", key, -1)
			k.err(errZTimeoutNeg, "BZMPOP", -1, 1, key, "MIN")
			for _, bad := range []string{"x", "1.5x", "nan", "", " 1"} {
				k.err(errZTimeout, "BZPOPMAX", key, bad)
				k.err(errZTimeout, "BZMPOP", bad, 1, key, "MIN")
			}
		}
		for _, bad := range []any{0, -1, "x"} {
			k.err(errSetNumkeys, "BZMPOP", 0, bad, "z", "MIN")
		}
		k.err(errZCount, "BZMPOP", 0, 1, "z", "MIN", "COUNT", 0)
		k.err(errZCount, "BZMPOP", 0, 1, "z", "MIN", "COUNT", "x")
		k.err(errSyntax, "BZMPOP", 0, 1, "z", "FOO")
		k.err(errSyntax, "BZMPOP", 0, 2, "z", "MIN")
		k.err(errSyntax, "BZMPOP", 0, 1, "z", "MIN", "COUNT")
		k.err(errSyntax, "BZMPOP", 0, 1, "z", "MIN", "COUNT", 1, "COUNT", 1)
		// A key of another type fails at once, unless an earlier key has members to pop.
		k.err(errWrongType, "BZPOPMIN", "str", "z", "0.05")
		k.err(errWrongType, "BZPOPMIN", "missing", "str", "0.05")
		k.err(errWrongType, "BZMPOP", "0.05", 2, "missing", "str", "MIN")
		k.eq([]any{"z", "a", "1"}, "BZPOPMIN", "z", "str", "0.05")
		zsExpectBlocked(t, k, 0)
		k.eq("v", "GET", "str")
	})

	subtest(t, c, "OtherTypeDoesNotServe", func(t *testing.T, k checker) {
		// A value of another type written under the key does not serve a blocked client (Redis
		// 7.0 only looks for a sorted set when the key becomes ready): the client stays blocked,
		// and a sorted set written there later serves it.
		for _, write := range [][]any{{"SET", "k", "str"}, {"LPUSH", "k", "x"}, {"SADD", "k", "x"}, {"HSET", "k", "f", "v"}} {
			w := zsBlock(t, s, k, 1, "BZPOPMIN", "k", "10")
			if _, err := k.do(write...); err != nil {
				t.Fatalf("%s: %v", cmdString(write), err)
			}
			zsNoReply(t, w, 50*time.Millisecond, "BZPOPMIN k after "+cmdString(write))
			k.eq(1, "DEL", "k")
			k.eq(1, "ZADD", "k", 9, "z")
			zsExpectRead(t, w, wArr(wBulk("k"), wBulk("z"), wBulk("9")), "BZPOPMIN k after "+cmdString(write)+", DEL and ZADD")
		}
	})
}

// TestZSetKeyspace checks the generic commands on sorted-set keys: TYPE, OBJECT ENCODING, DEL,
// EXISTS, expiry, RENAME, COPY, MOVE and SCAN TYPE.
func TestZSetKeyspace(t *testing.T) {
	s, c := startServer(t)
	db1 := s.ClientOpts(&redis.Options{DB: 1})

	subtest(t, c, "TypeEncodingDelExists", func(t *testing.T, k checker) {
		k.eq(2, "ZADD", "small", 1, "a", 2, "b")
		k.eq(1, "ZADD", "long", 1, strings.Repeat("m", 100))
		big := map[string]float64{}
		for i, m := range zsNames("m", 300) {
			big[m] = float64(i)
		}
		k.eq(300, zsAddArgs("big", big)...)
		for _, key := range []string{"small", "long", "big"} {
			k.eq("zset", "TYPE", key)
			if enc := k.str("OBJECT", "ENCODING", key); !slices.Contains(zsetEncodings, enc) {
				t.Fatalf("OBJECT ENCODING %s: %q; want one of %q", key, enc, zsetEncodings)
			}
		}
		k.eq(2, "EXISTS", "small", "big")
		k.eq(3, "EXISTS", "small", "small", "big", "missing")
		k.ok("SET", "str", "v")
		k.eq(3, "DEL", "small", "str", "missing", "big")
		k.eq(0, "EXISTS", "small", "big")
		k.eq("none", "TYPE", "small")
		k.null("OBJECT", "ENCODING", "small")
		k.eq(0, "ZCARD", "big")
		k.eq(1, "UNLINK", "long")
		k.eq(0, "DBSIZE")
		// A deleted sorted set comes back empty, without its old members.
		k.eq(1, "ZADD", "big", 5, "new")
		zsCheck(t, k, "big", "new", "5")
	})

	subtest(t, c, "Expire", func(t *testing.T, k checker) {
		k.eq(2, "ZADD", "e", 1, "a", 2, "b")
		k.eq(-1, "TTL", "e")
		k.eq(1, "EXPIRE", "e", 100)
		k.between(99, 100, "TTL", "e")
		// Every kind of change keeps the TTL.
		k.eq(1, "ZADD", "e", 3, "c")
		k.eq("4", "ZINCRBY", "e", 1, "c")
		k.eq(1, "ZREM", "e", "a")
		k.eq([]any{"b", "2"}, "ZPOPMIN", "e")
		k.between(99, 100, "TTL", "e")
		k.eq(1, "PERSIST", "e")
		k.eq(-1, "TTL", "e")
		k.eq(1, "PEXPIRE", "e", 100)
		harness.Eventually(t, 10*time.Second, "the sorted set to expire", func() bool {
			return k.int("EXISTS", "e") == 0
		})
		k.eq(-2, "TTL", "e")
		k.eq("none", "TYPE", "e")
		k.eq([]any{}, "ZRANGE", "e", 0, -1)
		k.eq(0, "ZCARD", "e")
		k.null("ZSCORE", "e", "c")
		k.eq([]any{}, "ZPOPMIN", "e")
		// ZADD after the expiry starts a new sorted set without a TTL.
		k.eq(1, "ZADD", "e", 9, "z")
		k.eq(-1, "TTL", "e")
		zsCheck(t, k, "e", "z", "9")
		// An expiry in the past deletes the sorted set at once.
		k.eq(1, "ZADD", "p", 1, "x")
		k.eq(1, "EXPIREAT", "p", 1)
		k.eq(0, "EXISTS", "p")
	})

	subtest(t, c, "Rename", func(t *testing.T, k checker) {
		k.eq(2, "ZADD", "a", 1, "x", 2, "y")
		k.eq(1, "EXPIRE", "a", 100)
		k.ok("RENAME", "a", "b")
		k.eq(0, "EXISTS", "a")
		zsCheck(t, k, "b", "x", "1", "y", "2")
		k.between(99, 100, "TTL", "b")
		// Onto a key of another type: replaced, with the source's TTL.
		k.ok("SET", "str", "v")
		k.ok("RENAME", "b", "str")
		k.eq("zset", "TYPE", "str")
		k.between(99, 100, "TTL", "str")
		// Onto another sorted set: replaced, not merged.
		k.eq(1, "ZADD", "other", 5, "z")
		k.ok("RENAME", "other", "str")
		zsCheck(t, k, "str", "z", "5")
		k.eq(-1, "TTL", "str")
		k.eq(1, "ZADD", "n", 1, "w")
		k.eq(0, "RENAMENX", "n", "str")
		k.eq(1, "RENAMENX", "n", "n2")
		zsCheck(t, k, "n2", "w", "1")
		k.err(errNoSuchKey, "RENAME", "missing", "x")
	})

	subtest(t, c, "Copy", func(t *testing.T, k checker) {
		k.eq(3, "ZADD", "src", 1, "a", 2, "b", 3, "c")
		k.eq(1, "EXPIRE", "src", 100)
		k.eq(1, "COPY", "src", "dst")
		zsCheck(t, k, "dst", "a", "1", "b", "2", "c", "3")
		k.between(99, 100, "TTL", "dst")
		// The copy is independent of the original both ways.
		k.eq(1, "ZADD", "dst", 4, "d")
		k.eq("11", "ZINCRBY", "src", 10, "a")
		zsCheck(t, k, "src", "b", "2", "c", "3", "a", "11")
		zsCheck(t, k, "dst", "a", "1", "b", "2", "c", "3", "d", "4")
		// An existing destination is kept unless REPLACE.
		k.eq(0, "COPY", "src", "dst")
		k.eq(4, "ZCARD", "dst")
		k.eq(1, "COPY", "src", "dst", "REPLACE")
		zsCheck(t, k, "dst", "b", "2", "c", "3", "a", "11")
		k.ok("SET", "str", "v")
		k.eq(0, "COPY", "src", "str")
		k.eq(1, "COPY", "src", "str", "REPLACE")
		k.eq("zset", "TYPE", "str")
		// Into another database.
		k.eq(1, "COPY", "src", "src", "DB", 1)
		k1 := newChecker(t, db1)
		zsCheck(t, k1, "src", "b", "2", "c", "3", "a", "11")
		k1.between(99, 100, "TTL", "src")
		k1.eq(1, "ZADD", "src", 1, "only-in-db1")
		k.eq(3, "ZCARD", "src")
		k.eq(0, "COPY", "missing", "x")
		k1.ok("FLUSHDB")
	})

	subtest(t, c, "Move", func(t *testing.T, k checker) {
		k1 := newChecker(t, db1)
		k1.ok("FLUSHDB")
		k.eq(2, "ZADD", "m", 1, "a", 2, "b")
		k.eq(1, "EXPIRE", "m", 100)
		k.eq(1, "MOVE", "m", 1)
		k.eq(0, "EXISTS", "m")
		zsCheck(t, k1, "m", "a", "1", "b", "2")
		k1.between(99, 100, "TTL", "m")
		// A key of that name in the target database stops the move; both stay as they were.
		k.eq(1, "ZADD", "m", 3, "c")
		k.eq(0, "MOVE", "m", 1)
		zsCheck(t, k, "m", "c", "3")
		zsCheck(t, k1, "m", "a", "1", "b", "2")
		k.eq(0, "MOVE", "missing", 1)
		k1.ok("FLUSHDB")
	})

	subtest(t, c, "ScanType", func(t *testing.T, k checker) {
		var zsets, strs []string
		for i := 0; i < 20; i++ {
			zsets = append(zsets, fmt.Sprintf("zset:%d", i))
			k.eq(1, "ZADD", zsets[i], i, "m")
			strs = append(strs, fmt.Sprintf("str:%d", i))
			k.ok("SET", strs[i], i)
		}
		k.eq(1, "SADD", "set", "x")
		k.eq(1, "ZADD", "emptied", 1, "x")
		k.eq(1, "ZREM", "emptied", "x")
		checkKeys(t, "SCAN TYPE zset", scanAll(t, k, "TYPE", "zset"), zsets...)
		checkKeys(t, "SCAN TYPE ZSET COUNT 5", scanAll(t, k, "TYPE", "ZSET", "COUNT", 5), zsets...)
		checkKeys(t, "SCAN MATCH zset:1? TYPE zset", scanAll(t, k, "MATCH", "zset:1?", "TYPE", "zset"),
			"zset:10", "zset:11", "zset:12", "zset:13", "zset:14", "zset:15", "zset:16", "zset:17", "zset:18", "zset:19")
		checkKeys(t, "SCAN TYPE set", scanAll(t, k, "TYPE", "set"), "set")
		k.eq(41, "DBSIZE")
		k.eq([]any{"zset:3"}, "KEYS", "zset:3")
	})
}

// TestZSetTransactions runs sorted-set commands in MULTI/EXEC (an error while running fails only
// its own command) and checks which of them abort another client's WATCH: those that change the
// sorted set, and not those that leave it as it was.
func TestZSetTransactions(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "Exec", func(t *testing.T, k checker) {
		k.ok("SET", "str", "v")
		r := dialRESP(t, s)
		got := r.txRun(
			txCmd("ZADD", "z", "1", "a", "2", "b"),
			txCmd("ZINCRBY", "z", "1.5", "a"),
			txCmd("ZADD", "str", "1", "a"), // WRONGTYPE while running
			txCmd("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			txCmd("ZADD", "z", "NX", "XX", "1", "a"), // refused while running, not while queueing
			txCmd("ZSCORE", "z", "a"),
			txCmd("ZPOPMAX", "z"),
			txCmd("ZADD", "z", "abc", "a"),
			txCmd("ZCARD", "z"),
			txCmd("GET", "z"),
		)
		want := []any{int64(2), "2.5", respError(errWrongType), []any{"b", "2", "a", "2.5"}, respError(errZXXNX),
			"2.5", []any{"a", "2.5"}, respError(errNotFloat), int64(1), respError(errWrongType)}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EXEC: got %s; want %s", short(got), short(want))
		}
		zsCheck(t, k, "z", "b", "2")
		k.eq("v", "GET", "str")

		// An arity error while queueing discards the whole transaction.
		r.expect(txOK, "MULTI")
		r.expect(txQueued, "ZADD", "z", "3", "c")
		r.expect(respError(errArity("zadd")), "ZADD", "z", "1")
		r.expect(respError(errTxAbortPrev), "EXEC")
		zsCheck(t, k, "z", "b", "2")

		// go-redis's transaction pipeline.
		ctx := k.ctx
		var card *redis.IntCmd
		var rng *redis.ZSliceCmd
		if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.ZAdd(ctx, "t", redis.Z{Score: 1, Member: "x"}, redis.Z{Score: 0.5, Member: "y"})
			p.ZIncrBy(ctx, "t", 1, "y")
			rng = p.ZRangeWithScores(ctx, "t", 0, -1)
			card = p.ZCard(ctx, "t")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if card.Val() != 2 || !slices.Equal(rng.Val(), []redis.Z{{Score: 1, Member: "x"}, {Score: 1.5, Member: "y"}}) {
			t.Fatalf("TxPipelined: ZRANGE %v, ZCARD %d", rng.Val(), card.Val())
		}
	})

	subtest(t, c, "Watch", func(t *testing.T, k checker) {
		for _, tc := range []struct {
			name  string
			watch string
			op    []any
			abort bool
		}{
			{"ZaddNewMember", "w:z", []any{"ZADD", "w:z", 3, "c"}, true},
			{"ZaddNewScore", "w:z", []any{"ZADD", "w:z", 5, "a"}, true},
			{"ZaddSameScore", "w:z", []any{"ZADD", "w:z", 1, "a"}, false},
			{"ZaddNXExisting", "w:z", []any{"ZADD", "w:z", "NX", 5, "a"}, false},
			{"ZaddXXMissing", "w:z", []any{"ZADD", "w:z", "XX", 1, "new"}, false},
			{"ZaddGTLower", "w:z", []any{"ZADD", "w:z", "GT", 0, "a"}, false},
			{"ZaddIncrZero", "w:z", []any{"ZADD", "w:z", "INCR", 0, "a"}, false},
			{"ZincrbyOne", "w:z", []any{"ZINCRBY", "w:z", 1, "a"}, true},
			{"ZremMember", "w:z", []any{"ZREM", "w:z", "a"}, true},
			{"ZremMissingMember", "w:z", []any{"ZREM", "w:z", "zz"}, false},
			{"ZremrangebyscoreSome", "w:z", []any{"ZREMRANGEBYSCORE", "w:z", 1, 1}, true},
			{"ZremrangebyscoreNone", "w:z", []any{"ZREMRANGEBYSCORE", "w:z", 10, 20}, false},
			{"ZremrangebyrankNone", "w:z", []any{"ZREMRANGEBYRANK", "w:z", 5, 6}, false},
			{"ZremrangebylexSome", "w:z", []any{"ZREMRANGEBYLEX", "w:z", "[a", "[a"}, true},
			{"ZremrangebylexNone", "w:z", []any{"ZREMRANGEBYLEX", "w:z", "[x", "[y"}, false},
			{"ZpopminOne", "w:z", []any{"ZPOPMIN", "w:z"}, true},
			{"ZpopminZero", "w:z", []any{"ZPOPMIN", "w:z", 0}, false},
			{"Zmpop", "w:z", []any{"ZMPOP", 1, "w:z", "MAX"}, true},
			{"Bzpopmax", "w:z", []any{"BZPOPMAX", "w:z", 0}, true},
			{"ZrangestoreOver", "w:z", []any{"ZRANGESTORE", "w:z", "w:x", 0, -1}, true},
			{"ZrangestoreEmptyIntoMissing", "w:d", []any{"ZRANGESTORE", "w:d", "w:z", 5, 6}, false},
			{"ZunionstoreCreates", "w:d", []any{"ZUNIONSTORE", "w:d", 1, "w:z"}, true},
			{"ZinterstoreEmptyIntoMissing", "w:d", []any{"ZINTERSTORE", "w:d", 2, "w:z", "w:x"}, false},
			{"ZinterstoreEmptyDeletes", "w:z", []any{"ZINTERSTORE", "w:z", 2, "w:z", "w:x"}, true},
			{"ZdiffstoreOver", "w:z", []any{"ZDIFFSTORE", "w:z", 1, "w:z"}, true},
			{"Expire", "w:z", []any{"EXPIRE", "w:z", 100}, true},
			{"Del", "w:z", []any{"DEL", "w:z"}, true},
			{"Reads", "w:z", []any{"ZRANGE", "w:z", 0, -1}, false},
			{"Zscan", "w:z", []any{"ZSCAN", "w:z", 0}, false},
			{"Zrandmember", "w:z", []any{"ZRANDMEMBER", "w:z", 2}, false},
			{"Zunion", "w:z", []any{"ZUNION", 1, "w:z"}, false},
			// ZINCRBY by 0 leaves the score as it was, and Redis does not count it as a change.
			{"ZincrbyZero", "w:z", []any{"ZINCRBY", "w:z", 0, "a"}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				o := newChecker(t, c)
				o.ok("FLUSHALL")
				o.eq(2, "ZADD", "w:z", 1, "a", 2, "b")
				o.eq(1, "ZADD", "w:x", 5, "q")
				w := dialRESP(t, s)
				w.expect(txOK, "WATCH", tc.watch)
				if _, err := o.do(tc.op...); err != nil && !errors.Is(err, redis.Nil) {
					t.Fatalf("%s: %v", cmdString(tc.op), err)
				}
				got := w.txRun(txCmd("ZCARD", tc.watch))
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

// zsLargeScore is member i's score in TestZSetLarge: i/2, so that pairs of members share a score.
func zsLargeScore(i int) float64 { return float64(i / 2) }

// TestZSetLarge builds a 5,000-member sorted set with pipelined ZADDs of 100 members, reads it
// by rank, score and lex slices, ranks and counts, iterates it with ZSCAN and removes a score
// range.
func TestZSetLarge(t *testing.T) {
	const n = 5000
	s := harness.Start(t)
	// No retries: a resent pipeline of ZADDs would count 0 new members.
	c := s.ClientOpts(&redis.Options{MaxRetries: -1, ReadTimeout: 2 * time.Minute})
	k := newChecker(t, c)
	names := zsNames("m:", n)
	model := map[string]float64{}
	var cmds [][]any
	for lo := 0; lo < n; lo += 100 {
		args := []any{"ZADD", "big"}
		for i := lo; i < lo+100; i++ {
			model[names[i]] = zsLargeScore(i)
			args = append(args, zsLargeScore(i), names[i])
		}
		cmds = append(cmds, args)
	}
	var added int64
	for _, r := range pipelineDo(t, c, 10, cmds) {
		added += r.(int64)
	}
	if added != n {
		t.Fatalf("pipelined ZADDs added %d members; want %d", added, n)
	}
	k.eq(n, "ZCARD", "big")
	if enc := k.str("OBJECT", "ENCODING", "big"); !slices.Contains(zsetEncodings, enc) {
		t.Fatalf("OBJECT ENCODING big: %q; want one of %q", enc, zsetEncodings)
	}
	all := zsSorted(model) // names in order, since score i/2 and byte order agree
	zsCheck(t, k, "big", all...)
	members := func(lo, hi int) []string { // names[lo:hi]
		return slices.Clone(names[lo:hi])
	}
	rev := func(ss []string) []string { slices.Reverse(ss); return ss }

	// Rank slices.
	k.eq(members(0, 10), "ZRANGE", "big", 0, 9)
	k.eq(members(2500, 2600), "ZRANGE", "big", 2500, 2599)
	k.eq(members(4990, 5000), "ZRANGE", "big", -10, -1)
	k.eq(all[2*1234:2*1237], "ZRANGE", "big", 1234, 1236, "WITHSCORES")
	k.eq(rev(members(4995, 5000)), "ZRANGE", "big", 0, 4, "REV")
	k.eq(rev(members(0, 3)), "ZREVRANGE", "big", -3, -1)
	// Score slices: score s belongs to members 2s and 2s+1.
	k.eq(members(200, 210), "ZRANGE", "big", 100, 104, "BYSCORE")
	k.eq(members(202, 208), "ZRANGE", "big", "(100", "(104", "BYSCORE")
	k.eq(members(1000, 1003), "ZRANGEBYSCORE", "big", 500, "+inf", "LIMIT", 0, 3)
	k.eq(members(1004, 1006), "ZRANGEBYSCORE", "big", 500, "+inf", "LIMIT", 4, 2)
	k.eq(rev(members(4000, 4010)), "ZREVRANGEBYSCORE", "big", 2004, 2000)
	k.eq(rev(members(4996, 5000)), "ZRANGE", "big", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", 0, 4)
	k.eq(all[2*3000:2*3004], "ZRANGEBYSCORE", "big", 1500, 1501, "WITHSCORES")
	// Lex slices, over the members of one score and over a copy with every score 0.
	k.eq(members(2468, 2470), "ZRANGE", "big", 1234, 1234, "BYSCORE")
	k.eq(n, "ZUNIONSTORE", "lex", 1, "big", "WEIGHTS", 0)
	k.eq(members(1000, 1100), "ZRANGE", "lex", "[m:01000", "(m:01100", "BYLEX")
	k.eq(members(1001, 1100), "ZRANGEBYLEX", "lex", "(m:01000", "[m:01099")
	k.eq(members(4990, 5000), "ZRANGEBYLEX", "lex", "[m:0499", "+")
	k.eq(rev(members(0, 5)), "ZREVRANGEBYLEX", "lex", "(m:00005", "-")
	k.eq(members(10, 13), "ZRANGE", "lex", "-", "+", "BYLEX", "LIMIT", 10, 3)
	k.eq(100, "ZLEXCOUNT", "lex", "[m:01000", "(m:01100")
	k.eq(n, "ZLEXCOUNT", "lex", "-", "+")
	// Ranks and counts.
	for _, i := range []int{0, 1, 2345, 4998, 4999} {
		k.eq(i, "ZRANK", "big", names[i])
		k.eq(n-1-i, "ZREVRANK", "big", names[i])
		k.eq(zsFormat(zsLargeScore(i)), "ZSCORE", "big", names[i])
	}
	k.null("ZRANK", "big", "m:05000")
	k.eq(n, "ZCOUNT", "big", "-inf", "+inf")
	k.eq(200, "ZCOUNT", "big", 1000, "(1100")
	k.eq(2, "ZCOUNT", "big", 2499, 2499)
	k.eq(0, "ZCOUNT", "big", "(2499", "+inf")

	// ZSCAN: every member comes back at least once, always with its score.
	for _, opts := range [][]any{nil, {"COUNT", 100}, {"COUNT", 1000}} {
		seen := map[string]int{}
		cursor := "0"
		calls := 0
		for {
			calls++
			if calls > 100000 {
				t.Fatalf("ZSCAN big %v did not return to cursor 0 after %d calls", opts, calls)
			}
			reply := k.arr(append([]any{"ZSCAN", "big", cursor}, opts...)...)
			if len(reply) != 2 {
				t.Fatalf("ZSCAN reply has %d elements: %s", len(reply), short(reply))
			}
			next, ok := reply[0].(string)
			if _, err := strconv.ParseUint(next, 10, 64); !ok || err != nil {
				t.Fatalf("ZSCAN cursor %s is not an unsigned integer", short(reply[0]))
			}
			for m, sc := range flatToMap(t, "ZSCAN big", asSlice(t, reply[1]), false) {
				want, ok := model[m]
				if !ok || sc != zsFormat(want) {
					t.Fatalf("ZSCAN big %v: member %q with score %q; want score %q (a member: %v)", opts, m, sc, zsFormat(want), ok)
				}
				seen[m]++
			}
			if next == "0" {
				break
			}
			cursor = next
		}
		if len(seen) != n {
			got := slices.Sorted(maps.Keys(seen))
			t.Fatalf("ZSCAN big %v: %s", opts, setDiff(got, names))
		}
		if opts == nil && calls < 10 {
			// COUNT is only a hint, but a server that ignores it sends a large set in one
			// reply, which is what ZSCAN exists to avoid.
			t.Fatalf("ZSCAN of 5,000 members with the default COUNT took %d calls; want at least 10", calls)
		}
	}
	seen := map[string]int{}
	for cursor := "0"; ; {
		reply := k.arr("ZSCAN", "big", cursor, "MATCH", "m:0123*", "COUNT", 500)
		for m := range flatToMap(t, "ZSCAN MATCH", asSlice(t, reply[1]), false) {
			seen[m]++
		}
		if cursor = reply[0].(string); cursor == "0" {
			break
		}
	}
	if got := slices.Sorted(maps.Keys(seen)); !slices.Equal(got, members(1230, 1240)) {
		t.Fatalf("ZSCAN big MATCH m:0123*: %q", got)
	}

	// Remove a score range in the middle, then the lowest ranks.
	k.eq(1000, "ZREMRANGEBYSCORE", "big", 1000, "(1500")
	for i := 2000; i < 3000; i++ {
		delete(model, names[i])
	}
	k.eq(n-1000, "ZCARD", "big")
	k.null("ZSCORE", "big", names[2000])
	k.eq(2000, "ZRANK", "big", names[3000])
	k.eq(slices.Concat(members(1998, 2000), members(3000, 3002)), "ZRANGE", "big", 999, 1500, "BYSCORE")
	k.eq(100, "ZREMRANGEBYRANK", "big", 0, 99)
	for i := 0; i < 100; i++ {
		delete(model, names[i])
	}
	k.eq(0, "ZRANK", "big", names[100])
	zsCheck(t, k, "big", zsSorted(model)...)
	k.eq(1, "DEL", "big")
	k.eq(0, "EXISTS", "big")
}

// zsModel is what each db must hold: db -> key -> member -> score, and the db 0 keys that have a
// TTL of about an hour.
type zsModel struct {
	dbs map[int]map[string]map[string]float64
	ttl map[string]bool
}

// zsWorkload writes round's sorted sets into db 0 and db 2 with one acknowledged command at a
// time, covering the ways a sorted set changes (new members and new scores, increments,
// removals by member, rank, score and lex, pops, the STORE commands, a sorted set emptied to
// nothing, renamed, moved, with a TTL, large, with special scores), and records in m what must
// be there afterwards.
func zsWorkload(t *testing.T, s *harness.Server, m *zsModel, round int) {
	t.Helper()
	k := newChecker(t, s.Client())
	db0 := m.dbs[0]
	key := func(name string) string { return fmt.Sprintf("r%d:%s", round, name) }

	small := map[string]float64{"a": 1, "b": 2.5, "c": -3}
	k.eq(3, zsAddArgs(key("small"), small)...)
	db0[key("small")] = small

	big := map[string]float64{}
	for i, mem := range zsNames("m", 500) {
		big[mem] = float64(i%50) + 0.25*float64(round)
	}
	names := slices.Sorted(maps.Keys(big))
	for lo := 0; lo < len(names); lo += 50 {
		part := map[string]float64{}
		for _, mem := range names[lo : lo+50] {
			part[mem] = big[mem]
		}
		k.eq(50, zsAddArgs(key("big"), part)...)
	}
	k.eq(50, "ZREMRANGEBYRANK", key("big"), 0, 49) // the 50 lowest: the members with i%50 < 5
	k.eq(10, "ZREMRANGEBYSCORE", key("big"), 49, "+inf")
	for _, mem := range names {
		if sc := big[mem] - 0.25*float64(round); sc < 5 || sc == 49 {
			delete(big, mem)
		}
	}
	for i := 1; i < 500; i += 7 {
		mem := fmt.Sprintf("m%05d", i)
		if _, ok := big[mem]; ok {
			big[mem] += 100
			k.eq(zsFormat(big[mem]), "ZINCRBY", key("big"), 100, mem)
		}
	}
	db0[key("big")] = big

	special := map[string]float64{"pinf": math.Inf(1), "ninf": math.Inf(-1), "tenth": 0.1, "huge": 1e20,
		"tiny": 5e-324, "": 0, "bin\x00\r\n": 7}
	k.eq(len(special), zsAddArgs(key("special"), special)...)
	db0[key("special")] = special

	k.eq(5, "ZADD", key("lex"), 0, "a", 0, "b", 0, "c", 0, "d", 0, "e")
	k.eq(2, "ZREMRANGEBYLEX", key("lex"), "(a", "[c")
	k.eq([]any{"a", "0"}, "ZPOPMIN", key("lex"))
	k.eq([]any{key("lex"), []any{[]any{"e", "0"}}}, "ZMPOP", 1, key("lex"), "MAX")
	db0[key("lex")] = map[string]float64{"d": 0}

	k.eq(3, "ZADD", key("flags"), 1, "x", 2, "y", 3, "z")
	k.eq(1, "ZADD", key("flags"), "GT", "CH", 5, "x", 0, "y")
	k.eq(0, "ZADD", key("flags"), "XX", 9, "w", 8, "z")
	k.eq("4", "ZADD", key("flags"), "INCR", 2, "y")
	k.eq(1, "ZREM", key("flags"), "z")
	db0[key("flags")] = map[string]float64{"x": 5, "y": 4}

	k.eq(2, "ZADD", key("emptied"), 1, "x", 2, "y")
	k.eq([]any{"x", "1", "y", "2"}, "ZPOPMIN", key("emptied"), 5)

	k.eq(5, "ZUNIONSTORE", key("union"), 2, key("small"), key("flags"), "WEIGHTS", 2, 1)
	db0[key("union")] = map[string]float64{"a": 2, "b": 5, "c": -6, "x": 5, "y": 4}
	k.eq(3, "ZINTERSTORE", key("inter"), 2, key("small"), key("union"), "AGGREGATE", "MAX")
	k.eq(2, "ZRANGESTORE", key("inter"), key("small"), 0, 1) // replaces it
	db0[key("inter")] = map[string]float64{"c": -3, "a": 1}
	k.ok("SET", key("was-string"), "v")
	k.eq(1, "ZDIFFSTORE", key("was-string"), 2, key("small"), key("inter"))
	db0[key("was-string")] = map[string]float64{"b": 2.5}
	k.eq(0, "ZINTERSTORE", key("inter-empty"), 2, key("small"), key("missing"))

	k.eq(1, "ZADD", key("ttl"), 1, "t")
	k.eq(1, "EXPIRE", key("ttl"), 3600)
	db0[key("ttl")] = map[string]float64{"t": 1}
	m.ttl[key("ttl")] = true

	k.eq(2, "ZADD", key("src"), 1, "a", 2, "b")
	k.ok("RENAME", key("src"), key("renamed"))
	db0[key("renamed")] = map[string]float64{"a": 1, "b": 2}

	k.eq(1, "ZADD", key("moved"), 1, "m")
	k.eq(1, "MOVE", key("moved"), 2)
	m.dbs[2][key("moved")] = map[string]float64{"m": 1}

	// A sorted set of an earlier round changes in this one.
	if round > 1 {
		prev := fmt.Sprintf("r%d:small", round-1)
		k.eq(1, "ZREM", prev, "a")
		k.eq(1, "ZADD", prev, round, "z")
		delete(db0[prev], "a")
		db0[prev]["z"] = float64(round)
	}
}

// verifyZsModel checks that each db holds exactly the sorted sets of m, member for member and
// score for score, with their TTLs.
func verifyZsModel(t *testing.T, s *harness.Server, m *zsModel, when string) {
	t.Helper()
	for db, keys := range m.dbs {
		k := newChecker(t, s.ClientOpts(&redis.Options{DB: db}))
		want := slices.Sorted(maps.Keys(keys))
		checkKeys(t, fmt.Sprintf("%s: db %d SCAN", when, db), scanAll(t, k, "COUNT", 1000), want...)
		for _, key := range want {
			k.eq("zset", "TYPE", key)
			got := zsStrings(t, k.arr("ZRANGE", key, 0, -1, "WITHSCORES"))
			if w := zsSorted(keys[key]); !slices.Equal(got, w) {
				t.Fatalf("%s: db %d ZRANGE %s 0 -1 WITHSCORES: %s", when, db, key, zsDiff(got, w))
			}
			if m.ttl[key] && db == 0 {
				k.between(3000, 3600, "TTL", key)
			} else {
				k.eq(-1, "TTL", key)
			}
		}
	}
}

// TestZSetRestart writes sorted sets, restarts the server cleanly and checks every member and
// score, twice.
func TestZSetRestart(t *testing.T) {
	s := harness.Start(t)
	m := &zsModel{dbs: map[int]map[string]map[string]float64{0: {}, 2: {}}, ttl: map[string]bool{}}
	for round := 1; round <= 2; round++ {
		zsWorkload(t, s, m, round)
		verifyZsModel(t, s, m, fmt.Sprintf("round %d before restart", round))
		s.Restart()
		verifyZsModel(t, s, m, fmt.Sprintf("round %d after restart", round))
	}
}

// TestZSetKill9AppendfsyncAlways: with an fsync before every reply, every acknowledged
// sorted-set write survives kill -9, over two rounds on the same data directory. A third round
// has several clients writing concurrently right up to the kill; each acknowledged ZADD must be
// there, with its score.
func TestZSetKill9AppendfsyncAlways(t *testing.T) {
	s := harness.Start(t, "--appendfsync", "always")
	m := &zsModel{dbs: map[int]map[string]map[string]float64{0: {}, 2: {}}, ttl: map[string]bool{}}
	for round := 1; round <= 2; round++ {
		zsWorkload(t, s, m, round)
		s.KillRestart()
		verifyZsModel(t, s, m, fmt.Sprintf("round %d after kill -9", round))
	}

	// Concurrent writers, each on its own sorted set: ZADD of member i with score i/4, and
	// every tenth write a ZINCRBY of member 0 instead. The kill comes while they write, so the
	// write after the last acknowledged one may or may not be there.
	ctx := harness.Ctx(t)
	const writers = 4
	c := s.ClientOpts(&redis.Options{PoolSize: writers + 1, MaxRetries: -1})
	acked := make([]int, writers)
	errs := make([]error, writers)
	var total atomic.Int64
	var killed, failed atomic.Bool
	var wg sync.WaitGroup
	// member0 is member 0's score after the first n writes of a writer.
	member0 := func(n int) float64 { return float64((n + 9) / 10) }
	for w := 0; w < writers; w++ {
		// One sticky connection per writer: once the kill breaks it, go-redis reports the
		// error instead of dialing the restarted server.
		conn := c.Conn()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			key := fmt.Sprintf("live:%d", w)
			for i := 0; ; i++ {
				var err error
				if i%10 == 0 {
					err = conn.ZIncrBy(ctx, key, 1, "m00000").Err()
				} else {
					err = conn.ZAdd(ctx, key, redis.Z{Score: float64(i) / 4, Member: fmt.Sprintf("m%05d", i)}).Err()
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
	k := newChecker(t, s.Client())
	for w := 0; w < writers; w++ {
		key := fmt.Sprintf("live:%d", w)
		// The writes that made it are the first n, with n the number acknowledged or one more.
		var want map[string]float64
		var matched bool
		got := zsStrings(t, k.arr("ZRANGE", key, 0, -1, "WITHSCORES"))
		for _, n := range []int{acked[w], acked[w] + 1} {
			want = map[string]float64{}
			if n > 0 {
				want["m00000"] = member0(n)
			}
			for i := 1; i < n; i++ {
				if i%10 != 0 {
					want[fmt.Sprintf("m%05d", i)] = float64(i) / 4
				}
			}
			if slices.Equal(got, zsSorted(want)) {
				matched = true
				break
			}
		}
		if !matched {
			t.Fatalf("%s after kill -9 with %d writes acknowledged: %s", key, acked[w], zsDiff(got, zsSorted(want)))
		}
		if len(want) > 0 {
			m.dbs[0][key] = want
		}
	}
	verifyZsModel(t, s, m, "after the concurrent round")
}
