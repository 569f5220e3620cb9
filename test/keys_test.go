package test

// End-to-end tests of the keyspace commands (DEL EXISTS TYPE, expiry, RENAME COPY MOVE, SCAN KEYS
// RANDOMKEY TOUCH OBJECT) against Redis 7 semantics, checked against redis-server 7.0.15.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

const errExpireOpts = "ERR NX and XX, GT or LT options at the same time are not compatible"

func TestKeys(t *testing.T) {
	s, c := startServer(t)
	db1 := s.ClientOpts(&redis.Options{DB: 1})

	subtest(t, c, "DelUnlink", func(t *testing.T, k checker) {
		k.ok("MSET", "a", 1, "b", 2, "c", 3, "d", 4)
		k.eq(0, "DEL", "missing")
		k.eq(1, "DEL", "a", "a", "missing") // a key named twice is deleted once
		k.eq(2, "DEL", "b", "c")
		k.eq(1, "UNLINK", "d", "d", "missing")
		k.eq(0, "UNLINK", "d")
		k.eq(0, "DBSIZE")
		k.err(errArity("del"), "DEL")
		k.err(errArity("unlink"), "UNLINK")
	})

	subtest(t, c, "Exists", func(t *testing.T, k checker) {
		k.ok("MSET", "a", 1, "b", "")
		k.eq(0, "EXISTS", "missing")
		k.eq(1, "EXISTS", "a")
		k.eq(1, "EXISTS", "b")           // an empty value is still a key
		k.eq(3, "EXISTS", "a", "a", "a") // duplicates are counted each time
		k.eq(4, "EXISTS", "a", "b", "missing", "a", "b")
		k.err(errArity("exists"), "EXISTS")
	})

	subtest(t, c, "Type", func(t *testing.T, k checker) {
		k.ok("SET", "s", "v")
		k.ok("SET", "n", 12)
		k.eq("string", "TYPE", "s")
		k.eq("string", "TYPE", "n")
		k.eq("none", "TYPE", "missing")
		k.err(errArity("type"), "TYPE")
		k.err(errArity("type"), "TYPE", "a", "b")
	})

	subtest(t, c, "ExpireOptions", func(t *testing.T, k checker) {
		k.ok("SET", "k", "v")
		// A key without a TTL counts as an infinite TTL for GT and LT.
		steps := []struct {
			args []any
			want int
			ttl  int // TTL in seconds afterwards
		}{
			{[]any{100, "XX"}, 0, -1},
			{[]any{100, "GT"}, 0, -1},
			{[]any{100, "LT"}, 1, 100},
			{[]any{200, "NX"}, 0, 100},
			{[]any{200, "XX"}, 1, 200},
			{[]any{300, "GT"}, 1, 300},
			{[]any{100, "GT"}, 0, 300},
			{[]any{50, "LT"}, 1, 50},
			{[]any{500, "LT"}, 0, 50},
			{[]any{400, "xx", "gt"}, 1, 400},
			{[]any{500, "NX", "NX"}, 0, 400}, // repeated options are accepted
		}
		for _, st := range steps {
			args := append([]any{"EXPIRE", "k"}, st.args...)
			k.eq(st.want, args...)
			if st.ttl < 0 {
				k.eq(-1, "TTL", "k")
			} else {
				k.between(int64(st.ttl)-1, int64(st.ttl), "TTL", "k")
			}
		}
		k.eq(1, "PERSIST", "k")
		k.eq(1, "EXPIRE", "k", 100, "NX")
		k.eq(0, "EXPIRE", "missing", 100)
		k.eq(0, "EXPIRE", "missing", 100, "NX")
		k.eq(0, "EXPIRE", "missing", 100, "LT")
		k.eq(1, "PEXPIRE", "k", 50000, "LT")
		k.between(48000, 50000, "PTTL", "k")
		k.eq(0, "EXPIREAT", "k", farFutureSecs, "LT")
		k.eq(1, "EXPIREAT", "k", farFutureSecs, "GT")
		k.eq(farFutureSecs, "EXPIRETIME", "k")
		k.eq(1, "PEXPIREAT", "k", farFutureSecs*1000+5, "XX")
		k.eq(farFutureSecs*1000+5, "PEXPIRETIME", "k")
		// The same absolute time is neither greater nor less.
		k.eq(0, "PEXPIREAT", "k", farFutureSecs*1000+5, "GT")
		k.eq(0, "PEXPIREAT", "k", farFutureSecs*1000+5, "LT")
		k.eq(0, "EXPIREAT", "k", farFutureSecs, "GT") // a whole second is less than ...005 ms
		k.eq(1, "EXPIREAT", "k", farFutureSecs, "LT")

		for _, cmd := range []string{"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"} {
			k.err(errExpireOpts, cmd, "k", 100, "NX", "XX")
			k.err(errExpireOpts, cmd, "k", 100, "NX", "GT")
			k.err(errExpireOpts, cmd, "k", 100, "LT", "NX")
			k.err(errExpireOpts, cmd, "k", 100, "GT", "LT", "NX")
			k.err("ERR GT and LT options at the same time are not compatible", cmd, "k", 100, "GT", "LT")
			k.err("ERR Unsupported option foo", cmd, "k", 100, "foo")
			k.err("ERR Unsupported option foo", cmd, "k", 100, "NX", "foo")
			k.err(errNotInt, cmd, "k", "abc")
			k.err(errNotInt, cmd, "k", "1.5")
			k.err(errNotInt, cmd, "k", "9223372036854775808")
			lower := strings.ToLower(cmd)
			k.err(errArity(lower), cmd, "k")
			k.err(errArity(lower), cmd)
		}
		// Times that overflow once converted to absolute milliseconds.
		k.err(errExpire("expire"), "EXPIRE", "k", "9223372036854775807")
		k.err(errExpire("expire"), "EXPIRE", "k", "-9223372036854775808")
		k.err(errExpire("pexpire"), "PEXPIRE", "k", "9223372036854775806")
		k.err(errExpire("expireat"), "EXPIREAT", "k", "9223372036854775807")
		k.eq(farFutureSecs*1000, "PEXPIRETIME", "k") // the errors changed nothing
		// The largest absolute millisecond time is accepted as is.
		k.eq(1, "PEXPIREAT", "k", "9223372036854775807")
		k.eq(int64(9223372036854775807), "PEXPIRETIME", "k")
	})

	subtest(t, c, "ExpireInThePastDeletes", func(t *testing.T, k checker) {
		for _, args := range [][]any{
			{"EXPIRE", "k", 0}, {"EXPIRE", "k", -1}, {"PEXPIRE", "k", 0}, {"PEXPIRE", "k", -1000},
			{"EXPIREAT", "k", 1}, {"EXPIREAT", "k", -1}, {"PEXPIREAT", "k", 1}, {"PEXPIREAT", "k", 0},
			{"EXPIRE", "k", -1, "LT"}, {"EXPIRE", "k", 0, "XX"},
		} {
			k.ok("SET", "k", "v", "EX", 100)
			k.eq(1, args...)
			k.eq(0, "EXISTS", "k")
			k.null("GET", "k")
		}
		// The options are checked first: a refused past time deletes nothing.
		k.ok("SET", "k", "v", "EX", 100)
		k.eq(0, "EXPIRE", "k", -1, "NX")
		k.eq(1, "EXISTS", "k")
		k.ok("SET", "k", "v")
		k.eq(0, "EXPIRE", "k", -1, "GT") // -1s is not greater than "no TTL"
		k.eq(0, "EXPIRE", "k", -1, "XX")
		k.eq(1, "EXISTS", "k")
	})

	subtest(t, c, "TTLs", func(t *testing.T, k checker) {
		k.ok("SET", "k", "v")
		k.eq(-1, "TTL", "k")
		k.eq(-1, "PTTL", "k")
		k.eq(-1, "EXPIRETIME", "k")
		k.eq(-1, "PEXPIRETIME", "k")
		k.eq(-2, "TTL", "missing")
		k.eq(-2, "PTTL", "missing")
		k.eq(-2, "EXPIRETIME", "missing")
		k.eq(-2, "PEXPIRETIME", "missing")
		k.eq(1, "EXPIREAT", "k", farFutureSecs)
		k.eq(farFutureSecs, "EXPIRETIME", "k")
		k.eq(farFutureSecs*1000, "PEXPIRETIME", "k")
		// EXPIRETIME rounds the millisecond time to the nearest second, like TTL.
		k.eq(1, "PEXPIREAT", "k", farFutureSecs*1000+499)
		k.eq(farFutureSecs*1000+499, "PEXPIRETIME", "k")
		k.eq(farFutureSecs, "EXPIRETIME", "k")
		k.eq(1, "PEXPIREAT", "k", farFutureSecs*1000+500)
		k.eq(farFutureSecs+1, "EXPIRETIME", "k")
		// TTL rounds the remaining milliseconds to the nearest second.
		k.ok("SET", "p", "v", "PX", 1500)
		k.between(1, 1500, "PTTL", "p")
		k.between(1, 2, "TTL", "p")
		k.eq(1, "PEXPIRE", "p", 100000)
		k.between(98000, 100000, "PTTL", "p")
		k.between(99, 100, "TTL", "p")
		for _, cmd := range []string{"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "PERSIST"} {
			k.err(errArity(strings.ToLower(cmd)), cmd)
			k.err(errArity(strings.ToLower(cmd)), cmd, "a", "b")
		}
	})

	subtest(t, c, "Persist", func(t *testing.T, k checker) {
		k.ok("SET", "k", "v", "EX", 100)
		k.eq(1, "PERSIST", "k")
		k.eq(-1, "TTL", "k")
		k.eq(0, "PERSIST", "k")
		k.eq(0, "PERSIST", "missing")
		k.eq("v", "GET", "k")
	})

	subtest(t, c, "Rename", func(t *testing.T, k checker) {
		k.ok("SET", "a", "1", "EX", 100)
		k.ok("RENAME", "a", "b")
		k.eq(0, "EXISTS", "a")
		k.eq("1", "GET", "b")
		k.between(99, 100, "TTL", "b") // the TTL moves with the value
		// The destination is overwritten, and its own TTL goes with it.
		k.ok("SET", "c", "2", "EX", 100)
		k.ok("SET", "d", "3")
		k.ok("RENAME", "d", "c")
		k.eq("3", "GET", "c")
		k.eq(-1, "TTL", "c")
		k.ok("RENAME", "c", "c") // renaming a key to itself succeeds and changes nothing
		k.eq("3", "GET", "c")
		k.err(errNoSuchKey, "RENAME", "missing", "x")
		k.err(errNoSuchKey, "RENAME", "missing", "missing")
		k.eq(0, "EXISTS", "x")
		k.err(errArity("rename"), "RENAME", "a")
		k.err(errArity("rename"), "RENAME", "a", "b", "c")
	})

	subtest(t, c, "RenameNX", func(t *testing.T, k checker) {
		k.ok("MSET", "a", "1", "b", "2")
		k.eq(0, "RENAMENX", "a", "b")
		k.eq([]any{"1", "2"}, "MGET", "a", "b")
		k.eq(0, "RENAMENX", "a", "a") // the destination exists: it is the source
		k.ok("SET", "t", "x", "EX", 100)
		k.eq(1, "RENAMENX", "t", "u")
		k.eq("x", "GET", "u")
		k.between(99, 100, "TTL", "u")
		k.eq(0, "EXISTS", "t")
		k.err(errNoSuchKey, "RENAMENX", "missing", "x")
		k.err(errArity("renamenx"), "RENAMENX", "a")
	})

	subtest(t, c, "Copy", func(t *testing.T, k checker) {
		k1 := newChecker(t, db1)
		k.ok("SET", "src", "v", "EX", 100)
		k.eq(1, "COPY", "src", "dst")
		k.eq("v", "GET", "dst")
		k.between(99, 100, "TTL", "dst") // the TTL is copied
		k.eq("v", "GET", "src")
		k.ok("SET", "other", "o")
		k.eq(0, "COPY", "src", "other")
		k.eq("o", "GET", "other")
		k.eq(1, "COPY", "src", "other", "REPLACE")
		k.eq("v", "GET", "other")
		k.eq(1, "COPY", "src", "other", "replace", "replace")
		k.eq(0, "COPY", "missing", "x")
		k.eq(0, "COPY", "missing", "x", "REPLACE")
		k.eq(0, "EXISTS", "x")
		// Into another database, under the same name or another.
		k.eq(1, "COPY", "src", "src", "DB", 1)
		k.eq(1, "COPY", "src", "dst", "DB", 1, "REPLACE")
		k1.eq("v", "GET", "src")
		k1.eq("v", "GET", "dst")
		k1.between(99, 100, "TTL", "src")
		k.eq(0, "COPY", "src", "dst", "DB", 1)
		k.err("ERR source and destination objects are the same", "COPY", "src", "src")
		k.err("ERR source and destination objects are the same", "COPY", "src", "src", "DB", 0)
		k.err("ERR source and destination objects are the same", "COPY", "missing", "missing")
		k.err(errDBRange, "COPY", "src", "x", "DB", 16)
		k.err(errDBRange, "COPY", "src", "x", "DB", -1)
		k.err(errNotInt, "COPY", "src", "x", "DB", "one")
		k.err(errSyntax, "COPY", "src", "x", "DB")
		k.err(errSyntax, "COPY", "src", "x", "foo")
		k.err(errArity("copy"), "COPY", "src")
	})

	subtest(t, c, "Move", func(t *testing.T, k checker) {
		k1 := newChecker(t, db1)
		k.ok("SET", "a", "1", "EX", 100)
		k.eq(1, "MOVE", "a", 1)
		k.eq(0, "EXISTS", "a")
		k1.eq("1", "GET", "a")
		k1.between(99, 100, "TTL", "a") // the TTL moves with the value
		k.ok("SET", "a", "2")
		k.eq(0, "MOVE", "a", 1) // the destination has the key: nothing moves
		k.eq("2", "GET", "a")
		k1.eq("1", "GET", "a")
		k.eq(0, "MOVE", "missing", 1)
		k1.eq(0, "MOVE", "a", 0) // the other way round: refused too
		k.eq("2", "GET", "a")
		k.eq(1, "DEL", "a")
		k1.eq(1, "MOVE", "a", 0)
		k1.eq(0, "EXISTS", "a")
		k.eq("1", "GET", "a")
		k.err("ERR source and destination objects are the same", "MOVE", "a", 0)
		k.err("ERR source and destination objects are the same", "MOVE", "missing", 0)
		k.err(errDBRange, "MOVE", "a", 16)
		k.err(errDBRange, "MOVE", "a", -1)
		k.err(errNotInt, "MOVE", "a", "x")
		k.err(errArity("move"), "MOVE", "a")
		k.err(errArity("move"), "MOVE", "a", 1, 2)
	})

	subtest(t, c, "Scan", func(t *testing.T, k checker) {
		const n = 10000
		want := map[string]bool{}
		for b := 0; b < n; b += 1000 {
			args := []any{"MSET"}
			for i := b; i < b+1000; i++ {
				key := fmt.Sprintf("key:%d", i)
				want[key] = true
				args = append(args, key, i)
			}
			k.ok(args...)
		}
		k.eq(n, "DBSIZE")
		checkSet := func(what string, got map[string]int, want map[string]bool) {
			t.Helper()
			for key := range want {
				if got[key] == 0 {
					t.Fatalf("%s: key %q never returned", what, key)
				}
			}
			for key := range got {
				if !want[key] {
					t.Fatalf("%s: unexpected key %q", what, key)
				}
			}
		}
		checkSet("SCAN", scanAll(t, k), want)
		checkSet("SCAN COUNT 1", scanAll(t, k, "COUNT", 1), want)
		checkSet("SCAN COUNT 5000", scanAll(t, k, "COUNT", 5000), want)
		checkSet("SCAN TYPE string", scanAll(t, k, "TYPE", "string", "COUNT", 500), want)
		checkSet("SCAN type STRING", scanAll(t, k, "type", "STRING", "COUNT", 500), want)
		checkSet("SCAN TYPE list", scanAll(t, k, "TYPE", "list", "COUNT", 500), nil)
		// Redis 7.0 accepts an unknown type name and matches nothing (Redis-version dependent).
		checkSet("SCAN TYPE unknown", scanAll(t, k, "TYPE", "nosuchtype", "COUNT", 500), nil)
		sub := map[string]bool{}
		for key := range want {
			if strings.HasPrefix(key, "key:12") {
				sub[key] = true
			}
		}
		checkSet("SCAN MATCH key:12*", scanAll(t, k, "MATCH", "key:12*", "COUNT", 500), sub)
		checkSet("SCAN MATCH nothing", scanAll(t, k, "MATCH", "nothing*", "COUNT", 1000), nil)
		checkSet("SCAN MATCH key:1234", scanAll(t, k, "MATCH", "key:1234", "COUNT", 1000),
			map[string]bool{"key:1234": true})

		// The largest 64-bit cursor is valid.
		if got := k.arr("SCAN", "18446744073709551615"); len(got) != 2 {
			t.Fatalf("SCAN max cursor: %s", short(got))
		}
		for _, cur := range []string{"abc", "1abc", "1.5", "18446744073709551616", " 1"} {
			k.err("ERR invalid cursor", "SCAN", cur)
		}
		k.err(errSyntax, "SCAN", 0, "COUNT", 0)
		k.err(errSyntax, "SCAN", 0, "COUNT", -1)
		k.err(errNotInt, "SCAN", 0, "COUNT", "abc")
		k.err(errSyntax, "SCAN", 0, "COUNT")
		k.err(errSyntax, "SCAN", 0, "MATCH")
		k.err(errSyntax, "SCAN", 0, "TYPE")
		k.err(errSyntax, "SCAN", 0, "foo", "bar")
		k.err(errArity("scan"), "SCAN")
	})

	subtest(t, c, "ScanEmpty", func(t *testing.T, k checker) {
		k.eq([]any{"0", []any{}}, "SCAN", 0)
		k.eq([]any{"0", []any{}}, "SCAN", 0, "MATCH", "*", "COUNT", 10, "TYPE", "string")
	})

	subtest(t, c, "Keys", func(t *testing.T, k checker) {
		k.eq([]any{}, "KEYS", "*")
		keys := []string{"hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "h?llo", "h[a]llo",
			`h\llo`, "hbllo", "other", "a\x00b"}
		for _, key := range keys {
			k.ok("SET", key, 1)
		}
		for _, tc := range []struct {
			pattern string
			want    []string
		}{
			{"*", keys},
			{"h?llo", []string{"h*llo", "h?llo", `h\llo`, "hallo", "hbllo", "hello", "hxllo"}},
			{"h*llo", []string{"h*llo", "h?llo", "h[a]llo", `h\llo`, "hallo", "hbllo", "heeeello", "hello", "hllo", "hxllo"}},
			{"h[ae]llo", []string{"hallo", "hello"}},
			{"h[^e]llo", []string{"h*llo", "h?llo", `h\llo`, "hallo", "hbllo", "hxllo"}},
			{"h[a-b]llo", []string{"hallo", "hbllo"}},
			{"h[b-a]llo", []string{"hallo", "hbllo"}}, // a reversed range still matches
			{`h\*llo`, []string{"h*llo"}},
			{`h\?llo`, []string{"h?llo"}},
			{`h\[a\]llo`, []string{"h[a]llo"}},
			{`h\\llo`, []string{`h\llo`}},
			{`h\ello`, []string{"hello"}}, // escaping an ordinary character matches it
			{"h[\\]]llo", nil},
			{"hello", []string{"hello"}},
			{"hello*", []string{"hello"}},
			{"*llo", []string{"h*llo", "h?llo", "h[a]llo", `h\llo`, "hallo", "hbllo", "heeeello", "hello", "hllo", "hxllo"}},
			{"?????", []string{"h*llo", "h?llo", `h\llo`, "hallo", "hbllo", "hello", "hxllo", "other"}},
			{"*e*", []string{"heeeello", "hello", "other"}},
			{"a?b", []string{"a\x00b"}},
			{"nomatch*", nil},
			{"H*", nil}, // case-sensitive
		} {
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			got := sortedStrings(t, k.arr("KEYS", tc.pattern))
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("KEYS %q: got %q; want %q", tc.pattern, got, want)
			}
		}
		k.err(errArity("keys"), "KEYS")
		k.err(errArity("keys"), "KEYS", "a", "b")
	})

	subtest(t, c, "RandomKey", func(t *testing.T, k checker) {
		k.null("RANDOMKEY")
		k.ok("SET", "only", "v")
		k.eq("only", "RANDOMKEY")
		k.ok("MSET", "a", 1, "b", 2)
		seen := map[string]bool{}
		for i := 0; i < 50; i++ {
			key := k.str("RANDOMKEY")
			if key != "only" && key != "a" && key != "b" {
				t.Fatalf("RANDOMKEY returned %q", key)
			}
			seen[key] = true
		}
		if len(seen) < 2 {
			t.Fatalf("50 RANDOMKEY calls over 3 keys all returned %v", seen)
		}
		k.err(errArity("randomkey"), "RANDOMKEY", "x")
	})

	subtest(t, c, "Touch", func(t *testing.T, k checker) {
		k.ok("MSET", "a", 1, "b", 2)
		k.eq(0, "TOUCH", "missing")
		k.eq(2, "TOUCH", "a", "b", "missing")
		k.eq(2, "TOUCH", "a", "a") // duplicates are counted each time
		k.err(errArity("touch"), "TOUCH")
	})

	subtest(t, c, "ObjectEncoding", func(t *testing.T, k checker) {
		for _, tc := range []struct{ value, enc string }{
			{"123", "int"},
			{"-123", "int"},
			{"0", "int"},
			{"9223372036854775807", "int"},
			{"-9223372036854775808", "int"},
			{"9223372036854775808", "embstr"},
			{"12345678901234567890", "embstr"},
			{"0123", "embstr"},
			{"-0", "embstr"},
			{" 12", "embstr"},
			{"1.5", "embstr"},
			{"", "embstr"},
			{"hello", "embstr"},
			{strings.Repeat("x", 44), "embstr"}, // the embstr limit is 44 bytes
			{strings.Repeat("x", 45), "raw"},
			{strings.Repeat("x", 1000), "raw"},
		} {
			k.ok("SET", "k", tc.value)
			k.eq(tc.enc, "OBJECT", "ENCODING", "k")
		}
		k.ok("SET", "a", "abc")
		k.eq(4, "APPEND", "a", "d")
		k.eq("raw", "OBJECT", "ENCODING", "a") // modified in place
		k.ok("SET", "r", "abc")
		k.eq(3, "SETRANGE", "r", 0, "x")
		k.eq("raw", "object", "encoding", "r")
		k.eq(1, "INCR", "i")
		k.eq("int", "OBJECT", "ENCODING", "i")
		k.null("OBJECT", "ENCODING", "missing")
		k.err("ERR unknown subcommand 'foo'. Try OBJECT HELP.", "OBJECT", "foo", "k")
		k.err(errArity("object|encoding"), "OBJECT", "ENCODING")
		k.err(errArity("object"), "OBJECT")
	})

	subtest(t, c, "ShortTTLDisappears", func(t *testing.T, k checker) {
		k.ok("SET", "k", "v", "PX", 100)
		harness.Eventually(t, 5*time.Second, "a key with a 100ms TTL to expire", func() bool {
			return k.int("EXISTS", "k") == 0
		})
		k.null("GET", "k")
		k.eq(-2, "PTTL", "k")
		k.ok("SET", "e", "v", "EX", 1)
		harness.Eventually(t, 5*time.Second, "a key with a 1s TTL to expire", func() bool {
			_, err := k.do("GET", "e")
			return err == redis.Nil
		})
	})

	subtest(t, c, "ExpiredKeysAreInvisible", func(t *testing.T, k checker) {
		// Every volatile key gets the same absolute expiry as the marker: once the marker is gone
		// all of them are expired, whether or not the server has reclaimed them yet.
		at := serverTimeMs(t, k) + 200
		k.ok("SET", "keep", "v")
		names := []string{"marker", "e1", "e2", "e3", "e4", "e5", "e6"}
		for _, name := range names {
			k.ok("SET", name, "v", "PXAT", at)
		}
		harness.Eventually(t, 5*time.Second, "the marker key to expire", func() bool {
			_, err := k.do("GET", "marker")
			return err == redis.Nil
		})
		k.eq([]any{"keep"}, "KEYS", "*")
		got := scanAll(t, k, "COUNT", 1)
		if len(got) != 1 || got["keep"] == 0 {
			t.Fatalf("SCAN after expiry returned %v; want only keep", got)
		}
		k.eq(1, "EXISTS", "e1", "e2", "keep")
		k.eq([]any{nil, "v", nil}, "MGET", "e3", "keep", "e4")
		k.null("GET", "e5")
		k.eq(-2, "TTL", "e6")
		k.eq(0, "PERSIST", "e6")
		// The server also reclaims expired keys nobody asks for.
		k.ok("SET", "lazy", "v", "PX", 50)
		harness.Eventually(t, 10*time.Second, "DBSIZE to drop to the one persistent key", func() bool {
			return k.int("DBSIZE") == 1
		})
	})
}

// scanAll iterates SCAN with the extra arguments until the cursor returns to 0 and counts how
// often each key came back.
func scanAll(t testing.TB, k checker, args ...any) map[string]int {
	t.Helper()
	return scanFrom(t, k, "0", args...)
}

// serverTimeMs returns the server clock in Unix milliseconds.
func serverTimeMs(t testing.TB, k checker) int64 {
	t.Helper()
	tm := k.arr("TIME")
	sec, err1 := strconv.ParseInt(tm[0].(string), 10, 64)
	usec, err2 := strconv.ParseInt(tm[1].(string), 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("TIME reply %s", short(tm))
	}
	return sec*1000 + usec/1000
}
