package test

// End-to-end tests of the stream commands (XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID XINFO),
// of stream keys under transactions, restarts and kill -9. Exact replies and error lines were
// checked against redis-server 7.0.15, in RESP2 and RESP3.
//
// Trimming with "~" is not checked for how much it trims: Redis trims whole radix-tree nodes
// only (so a small stream is not trimmed at all), Lavik trims exactly.

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

const errStreamID = "ERR Invalid stream ID specified as stream command argument"

// ent is one stream entry as XRANGE replies with it.
func ent(id string, fv ...string) []any {
	f := make([]any, len(fv))
	for i, s := range fv {
		f[i] = s
	}
	return []any{id, f}
}

// ents is a list of entries.
func ents(es ...[]any) []any {
	out := make([]any, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// infoMap returns a flat field/value reply (XINFO in RESP2) as a map.
func infoMap(t testing.TB, v any) map[string]any {
	t.Helper()
	a, ok := v.([]any)
	if !ok || len(a)%2 != 0 {
		t.Fatalf("want a flat field/value array, got %s", short(v))
	}
	m := map[string]any{}
	for i := 0; i < len(a); i += 2 {
		m[a[i].(string)] = a[i+1]
	}
	return m
}

func TestStreamCommands(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "XADD", func(t *testing.T, k checker) {
		k.eq("1-1", "XADD", "s", "1-1", "a", "1")
		k.err("ERR The ID specified in XADD is equal or smaller than the target stream top item", "XADD", "s", "1-1", "a", "1")
		k.err("ERR The ID specified in XADD is equal or smaller than the target stream top item", "XADD", "s", "1-0", "a", "1")
		k.err("ERR The ID specified in XADD must be greater than 0-0", "XADD", "s", "0-0", "a", "1")
		k.err("ERR The ID specified in XADD must be greater than 0-0", "XADD", "new", "0-0", "a", "1")
		k.eq(0, "EXISTS", "new")
		k.eq("1-2", "XADD", "s", "1-*", "b", "2")
		k.eq("5-0", "XADD", "s", "5", "c", "3", "d", "4")
		k.eq("5-1", "XADD", "s", "5-*", "e", "5")
		k.eq("7-0", "XADD", "s", "7-*", "e", "5")
		for _, bad := range []string{"abc", "-1", "+", "-", "1-2-3", "1-x", "18446744073709551616"} {
			k.err(errStreamID, "XADD", "s", bad, "a", "1")
		}
		// An id from the clock is above the last one and made of the time in ms.
		before := time.Now().UnixMilli()
		k.str("XADD", "clock", "1-1", "f", "v")
		id := k.str("XADD", "clock", "*", "f", "v")
		ms, _, _ := strings.Cut(id, "-")
		if n, err := strconv.ParseInt(ms, 10, 64); err != nil || n < before-1000 || n > time.Now().UnixMilli()+1000 {
			t.Fatalf("XADD *: id %s is not the time (%d)", id, before)
		}
		// After an explicit id in the future, * continues from it.
		k.eq("99999999999999-0", "XADD", "t", "99999999999999-0", "a", "1")
		k.eq("99999999999999-1", "XADD", "t", "*", "a", "1")
		k.eq("18446744073709551615-18446744073709551615", "XADD", "m", "18446744073709551615-18446744073709551615", "a", "1")
		k.err("ERR The stream has exhausted the last possible ID, unable to add more items", "XADD", "m", "*", "a", "1")
		k.eq(5, "XLEN", "s")

		for _, args := range [][]any{
			{"XADD", "s", "maxlen", "2"}, {"XADD", "s", "6-0", "a"}, {"XADD", "s", "6-0", "a", "b", "c"},
		} {
			k.err(errArity("xadd"), args...)
		}
		k.err(errStreamID, "XADD", "s", "NOMKSTREAM", "a", "b") // a is taken for the id
		k.err(errNotInt, "XADD", "s", "MAXLEN", "x", "*", "a", "1")
		k.err("ERR The MAXLEN argument must be >= 0.", "XADD", "s", "MAXLEN", "-1", "*", "a", "1")
		k.err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible", "XADD", "s", "MAXLEN", "2", "MINID", "3", "*", "a", "1")
		k.err("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy", "XADD", "s", "LIMIT", "2", "*", "a", "1")
		k.err("ERR syntax error, LIMIT cannot be used without the special ~ option", "XADD", "s", "MAXLEN", "2", "LIMIT", "2", "*", "a", "1")
		k.err("ERR syntax error, LIMIT cannot be used without the special ~ option", "XADD", "s", "MAXLEN", "=", "2", "LIMIT", "2", "*", "a", "1")
		k.err("ERR The LIMIT argument must be >= 0.", "XADD", "s", "MAXLEN", "~", "2", "LIMIT", "-1", "*", "a", "1")
		k.err(errStreamID, "XADD", "s", "MINID", "+", "*", "a", "1")

		k.null("XADD", "nk", "NOMKSTREAM", "*", "a", "1")
		k.eq(0, "EXISTS", "nk")
		k.eq("3-0", "XADD", "e", "3", "a", "1")
		k.eq("3-1", "XADD", "e", "NOMKSTREAM", "3-1", "a", "1")

		// Trimming: MAXLEN keeps the newest, MINID drops ids below.
		k.eq("8-0", "XADD", "s", "MAXLEN", "3", "8-0", "x", "y")
		k.eq(ents(ent("5-1", "e", "5"), ent("7-0", "e", "5"), ent("8-0", "x", "y")), "XRANGE", "s", "5-1", "8")
		k.eq(3, "XLEN", "s")
		k.eq("9-0", "XADD", "s", "MINID", "=", "8", "9-0", "x", "y")
		k.eq(ents(ent("8-0", "x", "y"), ent("9-0", "x", "y")), "XRANGE", "s", "-", "+")
		k.eq("10-0", "XADD", "s", "MAXLEN", "~", "100", "10-0", "x", "y")
		k.eq(3, "XLEN", "s")
	})

	subtest(t, c, "XRANGE", func(t *testing.T, k checker) {
		for i := 1; i <= 5; i++ {
			k.eq(fmt.Sprintf("%d-1", i), "XADD", "s", fmt.Sprintf("%d-1", i), "f", strconv.Itoa(i))
		}
		all := ents(ent("1-1", "f", "1"), ent("2-1", "f", "2"), ent("3-1", "f", "3"), ent("4-1", "f", "4"), ent("5-1", "f", "5"))
		k.eq(all, "XRANGE", "s", "-", "+")
		k.eq(all[:2], "XRANGE", "s", "-", "+", "COUNT", "2")
		k.eq(all[1:3], "XRANGE", "s", "2", "3")
		k.eq(all[1:2], "XRANGE", "s", "(1-1", "(3-1")
		k.eq(all, "XRANGE", "s", "(1", "+") // (1 is after 1-0
		k.eq(all[1:], "XRANGE", "s", "(1-1", "+")
		k.eq(ents(), "XRANGE", "s", "5", "1")
		k.eq(ents(), "XRANGE", "nokey", "-", "+")
		k.null("XRANGE", "s", "-", "+", "COUNT", "0")
		k.null("XRANGE", "s", "-", "+", "COUNT", "-1") // a negative count is 0
		k.eq(ents(all[4].([]any), all[3].([]any)), "XREVRANGE", "s", "+", "-", "COUNT", "2")
		k.eq(ents(all[2].([]any), all[1].([]any)), "XREVRANGE", "s", "(4-1", "(1-1")
		k.eq(ents(), "XREVRANGE", "s", "-", "+")
		k.err(errNotInt, "XRANGE", "s", "-", "+", "COUNT", "x")
		k.err(errSyntax, "XRANGE", "s", "-", "+", "foo")
		k.err(errSyntax, "XRANGE", "s", "-", "+", "COUNT")
		k.err(errStreamID, "XRANGE", "s", "x", "+")
		k.err(errStreamID, "XRANGE", "s", "(-", "+")
		k.err("ERR invalid end ID for the interval", "XRANGE", "s", "-", "(0-0")
		k.err("ERR invalid start ID for the interval", "XRANGE", "s", "(18446744073709551615-18446744073709551615", "+")
		k.err(errArity("xrange"), "XRANGE", "s", "-")
	})

	subtest(t, c, "XDEL XTRIM XSETID", func(t *testing.T, k checker) {
		for i := 1; i <= 5; i++ {
			k.str("XADD", "s", fmt.Sprintf("%d-1", i), "f", strconv.Itoa(i))
		}
		k.eq(0, "XDEL", "nokey", "x") // a missing key answers before the ids are parsed
		k.err(errStreamID, "XDEL", "s", "1-1", "x")
		k.eq(5, "XLEN", "s") // nothing was deleted by the refused XDEL
		k.eq(2, "XDEL", "s", "1-1", "1-1", "5-1", "99")
		k.eq(3, "XLEN", "s")
		info := infoMap(t, k.arr("XINFO", "STREAM", "s"))
		if info["max-deleted-entry-id"] != "5-1" || info["recorded-first-entry-id"] != "2-1" || info["entries-added"] != int64(5) || info["last-generated-id"] != "5-1" {
			t.Fatalf("XINFO STREAM after XDEL: %v", info)
		}
		k.err(errSyntax, "XTRIM", "s", "FOO", "1")
		k.err(errNotInt, "XTRIM", "s", "MAXLEN", "~")
		k.err(errSyntax, "XTRIM", "s", "MAXLEN", "1", "extra")
		k.err("ERR syntax error, LIMIT cannot be used without the special ~ option", "XTRIM", "s", "MINID", "1", "LIMIT", "1")
		k.err(errArity("xtrim"), "XTRIM", "s")
		k.eq(0, "XTRIM", "nokey", "MAXLEN", "0")
		k.eq(1, "XTRIM", "s", "MINID", "3")
		k.eq(1, "XTRIM", "s", "MAXLEN", "=", "1")
		k.eq(ents(ent("4-1", "f", "4")), "XRANGE", "s", "-", "+")
		k.eq(0, "XTRIM", "s", "MAXLEN", "~", "5", "LIMIT", "0")

		k.err("ERR The ID specified in XSETID is smaller than the target stream top item", "XSETID", "s", "4-0")
		k.err("ERR entries_added must be positive", "XSETID", "s", "6-0", "ENTRIESADDED", "-1")
		k.err("ERR The entries_added specified in XSETID is smaller than the target stream length", "XSETID", "s", "6-0", "ENTRIESADDED", "0")
		k.err("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id", "XSETID", "s", "6-0", "MAXDELETEDID", "7-0")
		k.err(errSyntax, "XSETID", "s", "6-0", "foo")
		k.err(errStreamID, "XSETID", "s", "+")
		k.err("ERR no such key", "XSETID", "nokey", "1-1")
		k.ok("XSETID", "s", "6-0", "ENTRIESADDED", "9", "MAXDELETEDID", "5-5")
		info = infoMap(t, k.arr("XINFO", "STREAM", "s"))
		if info["max-deleted-entry-id"] != "5-5" || info["entries-added"] != int64(9) || info["last-generated-id"] != "6-0" {
			t.Fatalf("XINFO STREAM after XSETID: %v", info)
		}
		k.err("ERR The ID specified in XADD is equal or smaller than the target stream top item", "XADD", "s", "6-0", "a", "b")
		k.eq("6-1", "XADD", "s", "6-*", "a", "b")

		// A stream emptied by XDEL or XTRIM is still a key, of type stream.
		k.eq(1, "XDEL", "s", "4-1")
		k.eq(1, "XTRIM", "s", "MAXLEN", "0")
		k.eq(0, "XLEN", "s")
		k.eq(1, "EXISTS", "s")
		k.eq("stream", "TYPE", "s")
		k.eq("stream", "OBJECT", "ENCODING", "s")
	})

	subtest(t, c, "XINFO", func(t *testing.T, k checker) {
		k.str("XADD", "s", "1-1", "a", "1")
		k.str("XADD", "s", "2-1", "b", "2")
		k.eq(1, "XDEL", "s", "2-1")
		k.eq([]any{"length", int64(1), "radix-tree-keys", int64(1), "radix-tree-nodes", int64(2),
			"last-generated-id", "2-1", "max-deleted-entry-id", "2-1", "entries-added", int64(2),
			"recorded-first-entry-id", "1-1", "groups", int64(0), "first-entry", ent("1-1", "a", "1"),
			"last-entry", ent("1-1", "a", "1")}, "XINFO", "STREAM", "s")
		k.eq([]any{"length", int64(1), "radix-tree-keys", int64(1), "radix-tree-nodes", int64(2),
			"last-generated-id", "2-1", "max-deleted-entry-id", "2-1", "entries-added", int64(2),
			"recorded-first-entry-id", "1-1", "entries", ents(ent("1-1", "a", "1")), "groups", []any{}},
			"XINFO", "STREAM", "s", "FULL")
		k.err("ERR no such key", "XINFO", "STREAM", "nokey")
		k.err("ERR no such key", "XINFO", "GROUPS", "nokey")
		k.err("ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.", "XINFO", "STREAM", "s", "foo")
		k.err("ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.", "XINFO", "STREAM", "s", "FULL", "COUNT")
		k.err(errNotInt, "XINFO", "STREAM", "s", "FULL", "COUNT", "x")
		k.err("ERR unknown subcommand 'FOO'. Try XINFO HELP.", "XINFO", "FOO")
		k.err(errArity("xinfo|stream"), "XINFO", "STREAM")
		k.err("NOGROUP No such consumer group 'g' for key name 's'", "XINFO", "CONSUMERS", "s", "g")
		k.eq([]any{}, "XINFO", "GROUPS", "s")
		help := k.arr("XINFO", "HELP")
		if len(help) != 9 || help[0] != "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" {
			t.Fatalf("XINFO HELP: %s", short(help))
		}
		k.str("XADD", "e", "1-1", "a", "1")
		k.eq(1, "XDEL", "e", "1-1")
		k.eq([]any{"length", int64(0), "radix-tree-keys", int64(0), "radix-tree-nodes", int64(1),
			"last-generated-id", "1-1", "max-deleted-entry-id", "1-1", "entries-added", int64(1),
			"recorded-first-entry-id", "0-0", "groups", int64(0), "first-entry", nil, "last-entry", nil}, "XINFO", "STREAM", "e")
	})

	subtest(t, c, "WRONGTYPE", func(t *testing.T, k checker) {
		k.ok("SET", "str", "v")
		k.str("XADD", "s", "1-1", "a", "1")
		for _, args := range [][]any{
			{"XADD", "str", "*", "a", "1"}, {"XLEN", "str"}, {"XRANGE", "str", "-", "+"},
			{"XRANGE", "str", "-", "+", "COUNT", "0"}, {"XREVRANGE", "str", "+", "-"}, {"XDEL", "str", "1-1"},
			{"XTRIM", "str", "MAXLEN", "0"}, {"XSETID", "str", "1-1"}, {"XINFO", "STREAM", "str"},
			{"XINFO", "GROUPS", "str"}, {"XINFO", "CONSUMERS", "str", "g"},
			{"GET", "s"}, {"LPUSH", "s", "x"}, {"HSET", "s", "f", "v"}, {"SADD", "s", "m"}, {"ZADD", "s", "1", "m"},
		} {
			k.err(errWrongType, args...)
		}
		k.eq("v", "GET", "str")
		k.eq(1, "XLEN", "s")
	})

	// RESP3: XINFO replies are maps; entries are the same arrays.
	k3 := newChecker(t, s.ClientOpts(&redis.Options{Protocol: 3}))
	k3.ok("FLUSHALL")
	k3.str("XADD", "s", "1-1", "a", "1")
	got, err := k3.do("XINFO", "STREAM", "s")
	m, ok := got.(map[any]any)
	if err != nil || !ok || m["length"] != int64(1) || !reflect.DeepEqual(m["first-entry"], ent("1-1", "a", "1")) {
		t.Fatalf("RESP3 XINFO STREAM: %s %v", short(got), err)
	}
	k3.eq(ents(ent("1-1", "a", "1")), "XRANGE", "s", "-", "+")
	k3.null("XRANGE", "s", "-", "+", "COUNT", "0")
}

// streamModel is what the durability tests expect: per key, the entries in order.
type streamModel map[string][]any

func streamWorkload(t *testing.T, s *harness.Server, m streamModel, round int) {
	t.Helper()
	k := newChecker(t, s.Client())
	for i := 0; i < 50; i++ {
		key := fmt.Sprintf("s%d", i%5)
		id := fmt.Sprintf("%d-%d", round, i)
		k.eq(id, "XADD", key, id, "n", strconv.Itoa(i), "round", strconv.Itoa(round))
		m[key] = append(m[key], ent(id, "n", strconv.Itoa(i), "round", strconv.Itoa(round)))
	}
	k.eq(1, "XDEL", "s0", fmt.Sprintf("%d-0", round))
	for i, e := range m["s0"] {
		if e.([]any)[0] == fmt.Sprintf("%d-0", round) {
			m["s0"] = append(m["s0"][:i], m["s0"][i+1:]...)
			break
		}
	}
	k.eq(2, "XTRIM", "s1", "MAXLEN", strconv.Itoa(len(m["s1"])-2))
	m["s1"] = m["s1"][2:]
}

func verifyStreamModel(t *testing.T, s *harness.Server, m streamModel, when string) {
	t.Helper()
	k := newChecker(t, s.Client())
	for key, want := range m {
		got := k.arr("XRANGE", key, "-", "+")
		if !reflect.DeepEqual(got, normalize(want)) {
			t.Fatalf("%s: XRANGE %s = %s; want %s", when, key, short(got), short(want))
		}
	}
}

func TestStreamRestart(t *testing.T) {
	s := harness.Start(t)
	m := streamModel{}
	for round := 1; round <= 2; round++ {
		streamWorkload(t, s, m, round)
		verifyStreamModel(t, s, m, fmt.Sprintf("round %d before restart", round))
		s.Restart()
		verifyStreamModel(t, s, m, fmt.Sprintf("round %d after restart", round))
	}
	// The last id and counters survive too: an id at or below the last is still refused.
	k := newChecker(t, s.Client())
	k.err("ERR The ID specified in XADD is equal or smaller than the target stream top item", "XADD", "s0", "2-0", "a", "b")
}

func TestStreamKill9AppendfsyncAlways(t *testing.T) {
	s := harness.Start(t, "--appendfsync", "always")
	m := streamModel{}
	for round := 1; round <= 2; round++ {
		streamWorkload(t, s, m, round)
		s.KillRestart()
		verifyStreamModel(t, s, m, fmt.Sprintf("round %d after kill -9", round))
	}
}

func TestStreamTransactions(t *testing.T) {
	s, c := startServer(t)
	subtest(t, c, "MultiExec", func(t *testing.T, k checker) {
		k.ok("SET", "str", "v")
		r := dialRESP(t, s)
		got := r.txRun(
			txCmd("XADD", "s", "1-1", "a", "1"),
			txCmd("XADD", "s", "1-1", "a", "1"), // refused at execution; the others still apply
			txCmd("XADD", "str", "*", "a", "1"),
			txCmd("XADD", "s", "2-1", "b", "2"),
			txCmd("XLEN", "s"),
			txCmd("XDEL", "s", "1-1"),
		)
		want := []any{"1-1", respError("ERR The ID specified in XADD is equal or smaller than the target stream top item"),
			respError(errWrongType), "2-1", int64(2), int64(1)}
		if !reflect.DeepEqual(asSlice(t, got), want) {
			t.Fatalf("EXEC: got %s; want %s", short(got), short(want))
		}
		k.eq(ents(ent("2-1", "b", "2")), "XRANGE", "s", "-", "+")
	})
}

// TestStreamRead checks XREAD: replies, errors, BLOCK woken by an XADD on another connection,
// BLOCK timing out with a null reply, "$" meaning the last id when the command was first run,
// and BLOCK inside MULTI answering at once.
func TestStreamRead(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "Replies", func(t *testing.T, k checker) {
		k.str("XADD", "s", "1-1", "a", "1")
		k.str("XADD", "s", "2-1", "b", "2")
		k.str("XADD", "t", "5-1", "c", "3")
		k.eq([]any{[]any{"s", ents(ent("1-1", "a", "1"), ent("2-1", "b", "2"))}}, "XREAD", "STREAMS", "s", "0")
		k.eq([]any{[]any{"s", ents(ent("1-1", "a", "1"))}, []any{"t", ents(ent("5-1", "c", "3"))}},
			"XREAD", "COUNT", "1", "STREAMS", "s", "t", "0", "0")
		k.eq([]any{[]any{"t", ents(ent("5-1", "c", "3"))}}, "XREAD", "COUNT", "-1", "STREAMS", "nokey", "s", "t", "0", "2-1", "0")
		k.eq([]any{[]any{"s", ents(ent("2-1", "b", "2"))}}, "XREAD", "STREAMS", "s", "1-1")
		k.eq([]any{[]any{"s", ents(ent("1-1", "a", "1"), ent("2-1", "b", "2"))}}, "XREAD", "STREAMS", "s", "1") // 1 is 1-0
		k.null("XREAD", "STREAMS", "s", "$")
		k.err(errStreamID, "XREAD", "STREAMS", "s", "+")
		k.null("XREAD", "BLOCK", "10", "STREAMS", "s", "$")
		k.err(errSyntax, "XREAD", "COUNT", "1", "FOO")
		k.err(errSyntax, "XREAD", "COUNT", "1", "s", "0")
		k.err(errSyntax, "XREAD", "FOO", "STREAMS", "s", "0")
		k.err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.", "XREAD", "STREAMS", "s", "0", "t")
		k.err(errNotInt, "XREAD", "COUNT", "x", "STREAMS", "s", "0")
		k.err("ERR timeout is not an integer or out of range", "XREAD", "BLOCK", "x", "STREAMS", "s", "0")
		k.err("ERR timeout is negative", "XREAD", "BLOCK", "-1", "STREAMS", "s", "0")
		k.err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.", "XREAD", "GROUP", "g", "c", "STREAMS", "s", "0")
		k.err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.", "XREAD", "NOACK", "STREAMS", "s", "0")
		k.err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.", "XREAD", "STREAMS", "s", ">")
		k.err(errStreamID, "XREAD", "STREAMS", "s", "-")
		k.err(errStreamID, "XREAD", "STREAMS", "s", "x")
		k.ok("SET", "str", "v")
		k.err(errWrongType, "XREAD", "STREAMS", "s", "str", "0", "0")
		k.err(errArity("xread"), "XREAD", "STREAMS", "s")
		k.eq([]any{"s", "t"}, "COMMAND", "GETKEYS", "XREAD", "COUNT", "1", "STREAMS", "s", "t", "0", "0")

		k3 := newChecker(t, s.ClientOpts(&redis.Options{Protocol: 3}))
		k3.eq(map[any]any{"s": ents(ent("2-1", "b", "2")), "t": ents(ent("5-1", "c", "3"))}, "XREAD", "STREAMS", "s", "t", "1-1", "0")
		k3.null("XREAD", "STREAMS", "s", "$")
	})

	subtest(t, c, "Block", func(t *testing.T, k checker) {
		k.str("XADD", "s", "1-1", "a", "1")
		r := dialRESP(t, s)
		// "$" is the last id when XREAD first runs: an entry added while it waits is served,
		// and the XDEL meanwhile (a write to the key) does not end the wait.
		r.send("XREAD", "BLOCK", "0", "STREAMS", "nokey", "s", "$", "$")
		waitBlocked(t, k, 1)
		k.eq(1, "XDEL", "s", "1-1")
		k.str("XADD", "s", "2-1", "b", "2")
		if got := r.read(); !reflect.DeepEqual(got, []any{[]any{"s", ents(ent("2-1", "b", "2"))}}) {
			t.Fatalf("XREAD BLOCK woken by XADD: %s", short(got))
		}
		// On a missing key "$" is 0-0: the first entry added is served.
		r.send("XREAD", "BLOCK", "0", "STREAMS", "nokey", "$")
		waitBlocked(t, k, 1)
		k.str("XADD", "nokey", "1-1", "x", "y")
		if got := r.read(); !reflect.DeepEqual(got, []any{[]any{"nokey", ents(ent("1-1", "x", "y"))}}) {
			t.Fatalf("XREAD BLOCK on a missing key: %s", short(got))
		}
		// Two readers of one stream are both served by one XADD.
		r2 := dialRESP(t, s)
		r.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
		r2.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
		waitBlocked(t, k, 2)
		k.str("XADD", "s", "3-1", "c", "3")
		for _, rc := range []*respConn{r, r2} {
			if got := rc.read(); !reflect.DeepEqual(got, []any{[]any{"s", ents(ent("3-1", "c", "3"))}}) {
				t.Fatalf("XREAD BLOCK, two readers: %s", short(got))
			}
		}
		// A timeout answers null.
		start := time.Now()
		if got := r.do("XREAD", "BLOCK", "100", "STREAMS", "s", "$"); got != nil {
			t.Fatalf("XREAD BLOCK 100: %s; want null", short(got))
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Fatalf("XREAD BLOCK 100 answered after %v", d)
		}
		// A blocked XREAD goes on waiting when its key comes to hold another type.
		r.send("XREAD", "BLOCK", "0", "STREAMS", "t", "$")
		waitBlocked(t, k, 1)
		k.ok("SET", "t", "string")
		k.eq(1, "DEL", "t")
		k.str("XADD", "t", "1-1", "a", "1")
		if got := r.read(); !reflect.DeepEqual(got, []any{[]any{"t", ents(ent("1-1", "a", "1"))}}) {
			t.Fatalf("XREAD BLOCK across a type change: %s", short(got))
		}
		// Inside MULTI, BLOCK answers at once as if timed out.
		got := r.txRun(txCmd("XREAD", "BLOCK", "0", "STREAMS", "s", "$"), txCmd("XLEN", "s"))
		if !reflect.DeepEqual(got, []any{nil, int64(2)}) {
			t.Fatalf("XREAD BLOCK in MULTI: %s", short(got))
		}
	})
}

// pendingIDs returns the ids and consumers of XPENDING key group - + 100 [consumer], and checks
// each delivery count against counts (by id) when given.
func pendingIDs(t *testing.T, k checker, key, group string, counts map[string]int64, consumer ...any) []string {
	t.Helper()
	args := append([]any{"XPENDING", key, group, "-", "+", "100"}, consumer...)
	var out []string
	for _, v := range k.arr(args...) {
		p := v.([]any)
		out = append(out, p[0].(string)+"@"+p[1].(string))
		if want, ok := counts[p[0].(string)]; ok && p[3] != want {
			t.Fatalf("XPENDING: %s delivered %v times; want %d", p[0], p[3], want)
		}
	}
	return out
}

func TestStreamGroups(t *testing.T) {
	s, c := startServer(t)
	const noKey = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."

	subtest(t, c, "XGROUP", func(t *testing.T, k checker) {
		k.err(noKey, "XGROUP", "CREATE", "s", "g", "$")
		k.ok("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
		k.eq("stream", "TYPE", "s")
		k.err("BUSYGROUP Consumer Group name already exists", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
		k.err("ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.", "XGROUP", "CREATE", "s", "g2", "0", "FOO")
		k.err(errStreamID, "XGROUP", "CREATE", "s", "g2", "x")
		k.err(errStreamID, "XGROUP", "CREATE", "s", "g2", "-")
		k.err(errNotInt, "XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "x")
		k.err("ERR value for ENTRIESREAD must be positive or -1", "XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "-5")
		k.ok("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "-1", "MKSTREAM")
		k.err(noKey, "XGROUP", "SETID", "nokey", "g", "0")
		k.err("NOGROUP No such consumer group 'nog' for key name 's'", "XGROUP", "SETID", "s", "nog", "0")
		k.ok("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "5")
		k.ok("XGROUP", "SETID", "s", "g", "-")
		k.err("ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP.", "XGROUP", "SETID", "s", "g", "0", "MKSTREAM")
		k.eq(1, "XGROUP", "CREATECONSUMER", "s", "g", "c1")
		k.eq(0, "XGROUP", "CREATECONSUMER", "s", "g", "c1")
		k.err("NOGROUP No such consumer group 'nog' for key name 's'", "XGROUP", "CREATECONSUMER", "s", "nog", "c1")
		k.eq(0, "XGROUP", "DELCONSUMER", "s", "g", "nobody")
		k.eq(0, "XGROUP", "DELCONSUMER", "s", "g", "c1")
		k.eq(0, "XGROUP", "DELCONSUMER", "s", "g", "c1")
		k.eq(0, "XGROUP", "DESTROY", "s", "nog")
		k.eq(1, "XGROUP", "DESTROY", "s", "g2")
		k.err(noKey, "XGROUP", "DESTROY", "nokey", "g")
		k.err("ERR unknown subcommand 'FOO'. Try XGROUP HELP.", "XGROUP", "FOO")
		k.err(errArity("xgroup|create"), "XGROUP", "CREATE", "s")
		k.ok("SET", "str", "v")
		k.err(errWrongType, "XGROUP", "CREATE", "str", "g", "0")
		k.err(errWrongType, "XGROUP", "DESTROY", "str", "g")
		help := k.arr("XGROUP", "HELP")
		if len(help) != 17 || help[0] != "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" {
			t.Fatalf("XGROUP HELP: %s", short(help))
		}
		k.eq([]any{[]any{"name", "g", "consumers", int64(0), "pending", int64(0), "last-delivered-id", "0-0", "entries-read", nil, "lag", int64(0)}},
			"XINFO", "GROUPS", "s")
	})

	subtest(t, c, "Flow", func(t *testing.T, k checker) {
		for i := 1; i <= 4; i++ {
			k.str("XADD", "s", fmt.Sprintf("%d-1", i), "f", strconv.Itoa(i))
		}
		k.ok("XGROUP", "CREATE", "s", "g", "0")
		k.eq([]any{[]any{"name", "g", "consumers", int64(0), "pending", int64(0), "last-delivered-id", "0-0", "entries-read", nil, "lag", int64(4)}},
			"XINFO", "GROUPS", "s")
		// New entries: > gives each once, to whoever asks first.
		k.eq([]any{[]any{"s", ents(ent("1-1", "f", "1"), ent("2-1", "f", "2"))}}, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
		k.eq([]any{[]any{"s", ents(ent("3-1", "f", "3"))}}, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">")
		sameValue(t, "XINFO GROUPS", infoGroup(t, k, "s", 0),
			[]any{"name", "g", "consumers", int64(2), "pending", int64(3), "last-delivered-id", "3-1", "entries-read", int64(3), "lag", int64(1)})
		// History: an id gives the consumer's own pending entries after it, counting deliveries.
		k.eq([]any{[]any{"s", ents(ent("1-1", "f", "1"), ent("2-1", "f", "2"))}}, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
		k.eq([]any{[]any{"s", ents(ent("2-1", "f", "2"))}}, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "1-1")
		k.eq([]any{[]any{"s", ents()}}, "XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", "0")
		if got := pendingIDs(t, k, "s", "g", map[string]int64{"1-1": 2, "2-1": 3, "3-1": 1}); !reflect.DeepEqual(got, []string{"1-1@alice", "2-1@alice", "3-1@bob"}) {
			t.Fatalf("XPENDING: %v", got)
		}
		k.eq([]any{int64(3), "1-1", "3-1", []any{[]any{"alice", "2"}, []any{"bob", "1"}}}, "XPENDING", "s", "g")
		if n := len(k.arr("XPENDING", "s", "g", "-", "+", "10", "bob")); n != 1 {
			t.Fatalf("XPENDING for bob: %d entries", n)
		}
		k.eq([]any{}, "XPENDING", "s", "g", "-", "+", "10", "nobody")
		k.eq([]any{}, "XPENDING", "s", "g", "IDLE", "3600000", "-", "+", "10")
		k.err("NOGROUP No such key 's' or consumer group 'nog'", "XPENDING", "s", "nog")
		k.err(errSyntax, "XPENDING", "s", "g", "-")
		k.err(errSyntax, "XPENDING", "s", "g", "IDLE", "10", "-", "+")
		// A deleted entry still pending comes back as [id, nil] in the history.
		k.eq(1, "XDEL", "s", "1-1")
		got := k.arr("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
		if !reflect.DeepEqual(got, []any{[]any{"s", []any{[]any{"1-1", nil}, ent("2-1", "f", "2")}}}) {
			t.Fatalf("XREADGROUP history with a deleted entry: %s", short(got))
		}
		// XACK: ids are parsed first; unknown ids count nothing.
		k.err(errStreamID, "XACK", "s", "g", "1-1", "x")
		k.eq(2, "XACK", "s", "g", "1-1", "1-1", "2-1", "9-9")
		k.eq(0, "XACK", "s", "nog", "3-1")
		k.eq(0, "XACK", "nokey", "g", "3-1")
		k.eq([]any{int64(1), "3-1", "3-1", []any{[]any{"bob", "1"}}}, "XPENDING", "s", "g")
		// NOACK delivers without a PEL entry.
		k.eq([]any{[]any{"s", ents(ent("4-1", "f", "4"))}}, "XREADGROUP", "GROUP", "g", "dave", "NOACK", "STREAMS", "s", ">")
		if n := len(k.arr("XPENDING", "s", "g", "-", "+", "10")); n != 1 {
			t.Fatalf("XPENDING after NOACK: %d entries", n)
		}
		k.null("XREADGROUP", "GROUP", "g", "dave", "STREAMS", "s", ">")
		// Errors.
		k.err("NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option", "XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">")
		k.err("NOGROUP No such key 'nokey' or consumer group 'g' in XREADGROUP with GROUP option", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">")
		k.err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
			"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$")
		k.err("ERR Missing GROUP option for XREADGROUP", "XREADGROUP", "COUNT", "1", "NOACK", "STREAMS", "s", ">")
		k.err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">", "x")
		k.ok("SET", "str", "v")
		k.err(errWrongType, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">")
		k.err(errWrongType, "XACK", "str", "g", "1-1")
		k.err(errWrongType, "XPENDING", "str", "g")
		k.err(errWrongType, "XCLAIM", "str", "g", "c", "0", "1-1")
		k.err(errWrongType, "XAUTOCLAIM", "str", "g", "c", "0", "0")
		k.eq([]any{"s"}, "COMMAND", "GETKEYS", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")

		// XINFO CONSUMERS: by name, with pending counts.
		cons := k.arr("XINFO", "CONSUMERS", "s", "g")
		var names []string
		for _, v := range cons {
			m := infoMap(t, v)
			names = append(names, fmt.Sprintf("%s:%d", m["name"], m["pending"]))
		}
		if !reflect.DeepEqual(names, []string{"alice:0", "bob:1", "carol:0", "dave:0"}) {
			t.Fatalf("XINFO CONSUMERS: %v", names)
		}
		k.eq(1, "XGROUP", "DELCONSUMER", "s", "g", "bob")
		k.eq([]any{int64(0), nil, nil, nil}, "XPENDING", "s", "g")
	})

	subtest(t, c, "Claim", func(t *testing.T, k checker) {
		for i := 1; i <= 5; i++ {
			k.str("XADD", "s", fmt.Sprintf("%d-1", i), "f", strconv.Itoa(i))
		}
		k.ok("XGROUP", "CREATE", "s", "g", "0")
		k.arr("XREADGROUP", "GROUP", "g", "alice", "COUNT", "4", "STREAMS", "s", ">")
		// XCLAIM: min-idle-time filters; JUSTID does not count a delivery; RETRYCOUNT sets it.
		k.eq([]any{}, "XCLAIM", "s", "g", "bob", "3600000", "1-1")
		k.eq([]any{ent("1-1", "f", "1")}, "XCLAIM", "s", "g", "bob", "0", "1-1")
		k.eq([]any{"2-1"}, "XCLAIM", "s", "g", "bob", "0", "2-1", "JUSTID")
		k.eq([]any{"3-1"}, "XCLAIM", "s", "g", "bob", "0", "3-1", "RETRYCOUNT", "7", "JUSTID")
		k.eq([]any{}, "XCLAIM", "s", "g", "bob", "0", "5-1") // not pending
		k.eq([]any{"5-1"}, "XCLAIM", "s", "g", "bob", "0", "5-1", "FORCE", "JUSTID")
		k.eq([]any{"4-1"}, "XCLAIM", "s", "g", "bob", "0", "4-1", "IDLE", "5000", "JUSTID", "LASTID", "9-0")
		if got := pendingIDs(t, k, "s", "g", map[string]int64{"1-1": 2, "2-1": 1, "3-1": 7, "4-1": 1, "5-1": 1}); !reflect.DeepEqual(got,
			[]string{"1-1@bob", "2-1@bob", "3-1@bob", "4-1@bob", "5-1@bob"}) {
			t.Fatalf("XPENDING after XCLAIM: %v", got)
		}
		if idle := k.arr("XPENDING", "s", "g", "4-1", "4-1", "1")[0].([]any)[2].(int64); idle < 5000 || idle > 60000 {
			t.Fatalf("XCLAIM IDLE 5000: idle %d", idle)
		}
		sameValue(t, "XCLAIM LASTID", infoMap(t, infoGroup(t, k, "s", 0))["last-delivered-id"], "9-0")
		k.err("ERR Invalid min-idle-time argument for XCLAIM", "XCLAIM", "s", "g", "bob", "x", "1-1")
		k.err("ERR Unrecognized XCLAIM option 'foo'", "XCLAIM", "s", "g", "bob", "0", "1-1", "foo")
		k.err("ERR Invalid IDLE option argument for XCLAIM", "XCLAIM", "s", "g", "bob", "0", "1-1", "IDLE", "x")
		k.err("ERR Invalid TIME option argument for XCLAIM", "XCLAIM", "s", "g", "bob", "0", "1-1", "TIME", "x")
		k.err("ERR Invalid RETRYCOUNT option argument for XCLAIM", "XCLAIM", "s", "g", "bob", "0", "1-1", "RETRYCOUNT", "x")
		k.err("NOGROUP No such key 's' or consumer group 'nog'", "XCLAIM", "s", "nog", "bob", "0", "1-1")
		// A claimed entry deleted from the stream leaves the PEL and is not returned.
		k.eq(1, "XDEL", "s", "2-1")
		k.eq([]any{"1-1"}, "XCLAIM", "s", "g", "carol", "0", "1-1", "2-1", "JUSTID")
		if n := len(k.arr("XPENDING", "s", "g", "-", "+", "10")); n != 4 {
			t.Fatalf("XPENDING after XCLAIM of a deleted entry: %d entries", n)
		}

		// XAUTOCLAIM: from a start id, COUNT at a time, with a cursor; deleted entries are
		// dropped and reported.
		k.eq(1, "XDEL", "s", "3-1")
		k.eq([]any{"4-1", []any{ent("1-1", "f", "1")}, []any{"3-1"}}, "XAUTOCLAIM", "s", "g", "dave", "0", "0", "COUNT", "2")
		k.eq([]any{"0-0", []any{"5-1"}, []any{}}, "XAUTOCLAIM", "s", "g", "dave", "0", "(4-1", "JUSTID")
		k.eq([]any{"0-0", []any{}, []any{}}, "XAUTOCLAIM", "s", "g", "dave", "3600000", "0")
		k.err("ERR COUNT must be > 0", "XAUTOCLAIM", "s", "g", "dave", "0", "0", "COUNT", "0")
		k.err(errSyntax, "XAUTOCLAIM", "s", "g", "dave", "0", "0", "foo")
		k.err("ERR Invalid min-idle-time argument for XAUTOCLAIM", "XAUTOCLAIM", "s", "g", "dave", "x", "0")
		k.err("NOGROUP No such key 's' or consumer group 'nog'", "XAUTOCLAIM", "s", "nog", "dave", "0", "0")
		if got := pendingIDs(t, k, "s", "g", nil); !reflect.DeepEqual(got, []string{"1-1@dave", "4-1@bob", "5-1@dave"}) {
			t.Fatalf("XPENDING after XAUTOCLAIM: %v", got)
		}
	})

	subtest(t, c, "Block", func(t *testing.T, k checker) {
		k.ok("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
		r := dialRESP(t, s)
		r.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
		waitBlocked(t, k, 1)
		k.str("XADD", "s", "1-1", "a", "1")
		if got := r.read(); !reflect.DeepEqual(got, []any{[]any{"s", ents(ent("1-1", "a", "1"))}}) {
			t.Fatalf("XREADGROUP BLOCK woken by XADD: %s", short(got))
		}
		k.eq([]any{int64(1), "1-1", "1-1", []any{[]any{"alice", "1"}}}, "XPENDING", "s", "g")
		if got := r.do("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "50", "STREAMS", "s", ">"); got != nil {
			t.Fatalf("XREADGROUP BLOCK 50: %s; want null", short(got))
		}
		// A blocked reader whose group or key goes away is told so.
		r.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
		waitBlocked(t, k, 1)
		k.eq(1, "XGROUP", "DESTROY", "s", "g")
		if got := r.read(); got != respError("NOGROUP the consumer group this client was blocked on no longer exists") {
			t.Fatalf("XREADGROUP BLOCK, group destroyed: %s", short(got))
		}
		k.ok("XGROUP", "CREATE", "s", "g", "$")
		r.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
		waitBlocked(t, k, 1)
		k.eq(1, "DEL", "s")
		if got := r.read(); got != respError("UNBLOCKED the stream key no longer exists") {
			t.Fatalf("XREADGROUP BLOCK, key deleted: %s", short(got))
		}
		k.ok("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM")
		k.str("XADD", "s", "1-1", "a", "1")
		k.arr("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")

		// With a history id it answers at once, however long it may block.
		if got := r.do("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", "0"); !reflect.DeepEqual(got, []any{[]any{"s", ents(ent("1-1", "a", "1"))}}) {
			t.Fatalf("XREADGROUP BLOCK with a history id: %s", short(got))
		}
	})

	// RESP3: XREADGROUP is a map by key.
	k3 := newChecker(t, s.ClientOpts(&redis.Options{Protocol: 3}))
	k3.ok("FLUSHALL")
	k3.str("XADD", "s", "1-1", "a", "1")
	k3.ok("XGROUP", "CREATE", "s", "g", "0")
	k3.eq(map[any]any{"s": ents(ent("1-1", "a", "1"))}, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
	got, err := k3.do("XINFO", "GROUPS", "s")
	if a, ok := got.([]any); err != nil || !ok || len(a) != 1 || a[0].(map[any]any)["pending"] != int64(1) {
		t.Fatalf("RESP3 XINFO GROUPS: %s %v", short(got), err)
	}
}

// sameValue fails t unless got equals want.
func sameValue(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %s; want %s", what, short(got), short(want))
	}
}

// infoGroup returns group i of XINFO GROUPS key, as a flat array.
func infoGroup(t *testing.T, k checker, key string, i int) any {
	t.Helper()
	gs := k.arr("XINFO", "GROUPS", key)
	if i >= len(gs) {
		t.Fatalf("XINFO GROUPS %s: %d groups", key, len(gs))
	}
	return gs[i]
}

// TestStreamGroupsRestart: groups, their PEL and consumers survive a restart and kill -9.
func TestStreamGroupsRestart(t *testing.T) {
	s := harness.Start(t, "--appendfsync", "always")
	k := newChecker(t, s.Client())
	for i := 1; i <= 3; i++ {
		k.str("XADD", "s", fmt.Sprintf("%d-1", i), "f", strconv.Itoa(i))
	}
	k.ok("XGROUP", "CREATE", "s", "g", "0")
	k.arr("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
	k.eq(1, "XACK", "s", "g", "1-1")
	check := func(when string) {
		k := newChecker(t, s.Client())
		if got := pendingIDs(t, k, "s", "g", map[string]int64{"2-1": 1}); !reflect.DeepEqual(got, []string{"2-1@alice"}) {
			t.Fatalf("%s: XPENDING %v", when, got)
		}
		// Not entries-read and lag: Redis 7.0 loses them when it loads its AOF (they come back
		// null), Lavik keeps them.
		sameValue(t, when+": XINFO GROUPS", infoGroup(t, k, "s", 0).([]any)[:8],
			[]any{"name", "g", "consumers", int64(1), "pending", int64(1), "last-delivered-id", "2-1"})
	}
	check("before restart")
	s.Restart()
	check("after restart")
	s.KillRestart()
	check("after kill -9")
}

func TestStreamGroupTransactions(t *testing.T) {
	s, c := startServer(t)
	subtest(t, c, "MultiExec", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		got := r.txRun(
			txCmd("XADD", "s", "1-1", "a", "1"),
			txCmd("XGROUP", "CREATE", "s", "g", "0"),
			txCmd("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
			txCmd("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
			txCmd("XACK", "s", "g", "1-1"),
			txCmd("XGROUP", "CREATE", "s", "g", "0"),
		)
		want := []any{"1-1", respStatus("OK"), []any{[]any{"s", ents(ent("1-1", "a", "1"))}}, nil, int64(1),
			respError("BUSYGROUP Consumer Group name already exists")}
		if !reflect.DeepEqual(asSlice(t, got), want) {
			t.Fatalf("EXEC: got %s; want %s", short(got), short(want))
		}
		k.eq([]any{int64(0), nil, nil, nil}, "XPENDING", "s", "g")
	})
}
