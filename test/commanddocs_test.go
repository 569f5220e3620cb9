package test

// COMMAND INFO, COMMAND DOCS and COMMAND GETKEYSANDFLAGS compared with a redis-server 7.0
// started beside lavik-data, for every command and subcommand lavik-data has.

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/lavikdb/lavik/test/harness"
)

// docsDiffer are the commands whose COMMAND INFO flags differ from Redis's, with the reason.
var docsDiffer = map[string]string{
	"blmove": blockingNoScript, "blpop": blockingNoScript, "brpop": blockingNoScript,
	"brpoplpush": blockingNoScript, "bzpopmax": blockingNoScript, "bzpopmin": blockingNoScript,
	"eval": scriptFlags, "eval_ro": scriptFlags, "evalsha": scriptFlags, "evalsha_ro": scriptFlags,
	"fcall": scriptFlags, "fcall_ro": scriptFlags,
	"monitor":  "Lavik flags MONITOR no_multi (Redis refuses it inside MULTI by a check of its own)",
	"smove":    "Lavik flags SMOVE denyoom: the member it adds may grow the destination",
	"replconf": "Lavik has no allow_busy REPLCONF: a follower's REPLCONF waits for a running script",
	"psync":    noAsyncLoading, "sync": noAsyncLoading, "replicaof": noAsyncLoading, "slaveof": noAsyncLoading,
}

// keysDiffer are the commands whose legacy key positions (first, last, step) differ from
// Redis's, with the reason.
var keysDiffer = map[string]string{"ssubscribe": shardChannels, "sunsubscribe": shardChannels, "spublish": shardChannels}

const (
	shardChannels    = "a shard channel is not a key on one node: Lavik's table gives it no key positions (no slot routing)"
	blockingNoScript = "Lavik's table leaves noscript to the script engine, which refuses blocking commands itself"
	scriptFlags      = "Lavik has no no_mandatory_keys or skip_monitor flag in its table"
	noAsyncLoading   = "Lavik has no repl-diskless-load swapdb, so no no_async_loading flag"
)

func TestCommandDocsMatchRedis(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("compares lavik-data with redis-server")
	}
	lv := dialRESP(t, harness.Start(t))
	rd := dialRESP(t, harness.StartRedis(t))
	for _, r := range []*respConn{lv, rd} {
		r.do("HELLO", "3")
	}
	var names []string
	for _, v := range lv.do("COMMAND").([]any) {
		e := v.([]any)
		names = append(names, e[0].(string))
		for _, s := range e[9].([]any) {
			names = append(names, s.([]any)[0].(string))
		}
	}
	if len(names) < 200 {
		t.Fatalf("COMMAND lists %d commands", len(names))
	}
	compared := 0
	for _, name := range names {
		want := rd.do("COMMAND", "INFO", name).([]any)[0]
		if want == nil {
			continue // a command of Lavik's own
		}
		compared++
		got := lv.do("COMMAND", "INFO", name).([]any)[0]
		g, w := infoComparable(got), infoComparable(want)
		if why, ok := docsDiffer[name]; ok {
			t.Logf("%s: flags not compared: %s", name, why)
			g[2], w[2] = nil, nil
		}
		if why, ok := keysDiffer[name]; ok {
			t.Logf("%s: key positions not compared: %s", name, why)
			g[3], w[3], g[4], w[4], g[5], w[5] = nil, nil, nil, nil, nil, nil
		}
		for _, s := range got.([]any)[9].([]any) {
			sub := s.([]any)[0].(string)
			if !strings.HasPrefix(sub, "debug|") && sub != "client|no-touch" && !redisSubs(want)[sub] {
				t.Errorf("COMMAND INFO %s lists %s, which Redis does not have", name, sub)
			}
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("COMMAND INFO %s:\n lavik %s\n redis %s", name, short(g), short(w))
		}
		gd := docsComparable(t, lv.do("COMMAND", "DOCS", name), name)
		wd := docsComparable(t, rd.do("COMMAND", "DOCS", name), name)
		if !reflect.DeepEqual(gd, wd) {
			t.Errorf("COMMAND DOCS %s:\n lavik %s\n redis %s", name, short(gd), short(wd))
		}
	}
	t.Logf("compared %d of %d commands and subcommands", compared, len(names))

	// Key flags from Redis's key specs.
	for _, args := range [][]string{
		{"SET", "k", "v"}, {"GET", "k"}, {"DEL", "a", "b"}, {"LMOVE", "a", "b", "LEFT", "RIGHT"},
		{"SINTERSTORE", "d", "a", "b"}, {"ZUNIONSTORE", "d", "2", "a", "b"}, {"RENAME", "a", "b"},
		{"XREAD", "COUNT", "2", "STREAMS", "s1", "s2", "0", "0"}, {"GETDEL", "k"}, {"COPY", "a", "b"},
		{"EVAL", "return 1", "2", "a", "b"}, {"SET", "k", "v", "GET"}, {"SET", "k", "v", "NX", "EX", "10"},
		{"OBJECT", "ENCODING", "k"}, {"MSET", "a", "1", "b", "2"},
	} {
		q := append([]string{"COMMAND", "GETKEYSANDFLAGS"}, args...)
		got, want := lv.do(q...), rd.do(q...)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n lavik %s\n redis %s", q, short(got), short(want))
		}
	}
}

// infoComparable is a COMMAND INFO entry with its sets sorted and its subcommands by name only.
func infoComparable(v any) []any {
	e := append([]any(nil), v.([]any)...)
	for _, i := range []int{2, 6} {
		e[i] = sortedAny(e[i])
	}
	e[9] = nil // subcommands are compared by their own entries
	return e
}

func redisSubs(info any) map[string]bool {
	out := map[string]bool{}
	for _, s := range info.([]any)[9].([]any) {
		out[s.([]any)[0].(string)] = true
	}
	return out
}

func sortedAny(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, fmt.Sprint(x))
	}
	sort.Strings(out)
	return out
}

// docsComparable is a COMMAND DOCS entry without its subcommands (compared by their own entry).
func docsComparable(t *testing.T, v any, name string) map[string]any {
	m, ok := v.(respMap)
	if !ok || len(m) != 2 {
		t.Fatalf("COMMAND DOCS %s: %s", name, short(v))
	}
	d, ok := m[1].(respMap)
	if !ok {
		t.Fatalf("COMMAND DOCS %s: %s", name, short(v))
	}
	out := map[string]any{}
	for i := 0; i+1 < len(d); i += 2 {
		if k := d[i].(string); k != "subcommands" {
			out[k] = d[i+1]
		}
	}
	return out
}
