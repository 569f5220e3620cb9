package test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

// FUNCTION's libraries beyond LOAD and FCALL: on followers (full resync, rebuild, promotion),
// DUMP and RESTORE, STATS and KILL.

const (
	fnLibA = "#!lua name=liba\nredis.register_function('bump', function(k, a) return redis.call('incrby', k[1], a[1]) end)\n" +
		"redis.register_function{function_name='peek', callback=function(k) return redis.call('get', k[1]) end, flags={'no-writes'}}"
	fnLibB = "#!lua name=libb\nredis.register_function('twice', function(k, a) return a[1] .. a[1] end)"
)

// fnPairs reads a RESP2 reply of a map, a flat array of keys and values.
func fnPairs(t testing.TB, v any) map[string]any {
	t.Helper()
	a, ok := v.([]any)
	if !ok || len(a)%2 != 0 {
		t.Fatalf("not a map's reply: %#v", v)
	}
	m := map[string]any{}
	for i := 0; i < len(a); i += 2 {
		m[fmt.Sprint(a[i])] = a[i+1]
	}
	return m
}

func libraryNames(t testing.TB, c *redis.Client) []string {
	t.Helper()
	libs, err := c.FunctionList(context.Background(), redis.FunctionListQuery{}).Result()
	if err != nil {
		t.Fatalf("FUNCTION LIST: %v", err)
	}
	var names []string
	for _, l := range libs {
		names = append(names, l.Name)
	}
	sort.Strings(names) // Redis lists them in no particular order
	return names
}

func wantLibraries(t testing.TB, c *redis.Client, what string, want ...string) {
	t.Helper()
	if got := strings.Join(libraryNames(t, c), " "); got != strings.Join(want, " ") {
		t.Fatalf("%s: libraries %q, want %q", what, got, strings.Join(want, " "))
	}
}

// TestFunctionsFullResync: a follower attached after FUNCTION LOAD gets the libraries with the
// full resync, keeps them when it is rebuilt (LAVIK.RESYNC), and, promoted, runs them.
func TestFunctionsFullResync(t *testing.T) {
	ctx := context.Background()
	p := replNode(t)
	pc := p.Client()
	checkNoErr(t, "FUNCTION LOAD", pc.FunctionLoad(ctx, fnLibA).Err())
	checkNoErr(t, "SET", pc.Set(ctx, "n", "5", 0).Err())

	f := replFollower(t, p)
	fc := f.Client()
	waitInSync(t, pc, fc)
	wantLibraries(t, fc, "follower attached after FUNCTION LOAD", "liba")
	if v, err := fc.FCallRO(ctx, "peek", []string{"n"}).Result(); err != nil || v != "5" {
		t.Fatalf("FCALL_RO on the follower: %v %v", v, err)
	}
	err := fc.FCall(ctx, "bump", []string{"n"}, 1).Err()
	wantErrPrefix(t, err, "READONLY")

	if !harness.IsRedis() {
		// A library loaded while the follower is linked comes down the stream; a rebuild (a
		// full resync again) keeps both.
		checkNoErr(t, "FUNCTION LOAD libb", pc.FunctionLoad(ctx, fnLibB).Err())
		waitInSync(t, pc, fc)
		full0, _, _ := syncStats(t, pc)
		checkNoErr(t, "LAVIK.RESYNC", fc.Do(ctx, "LAVIK.RESYNC").Err())
		harness.Eventually(t, 20*time.Second, "the rebuild's full resync", func() bool {
			full, _, _ := syncStats(t, pc)
			return full == full0+1
		})
		waitLinkUp(t, fc, 20*time.Second)
		waitInSync(t, pc, fc)
		wantLibraries(t, fc, "follower after LAVIK.RESYNC", "liba", "libb")
		// A library deleted on the primary goes on the follower too; the next full resync
		// does not bring it back.
		checkNoErr(t, "FUNCTION DELETE", pc.FunctionDelete(ctx, "libb").Err())
		waitInSync(t, pc, fc)
		wantLibraries(t, fc, "follower after FUNCTION DELETE", "liba")
	}

	checkNoErr(t, "REPLICAOF NO ONE", fc.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	harness.Eventually(t, 10*time.Second, "the follower to be a primary", func() bool {
		return replInfo(t, fc, "replication")["role"] == "master"
	})
	if v, err := fc.FCall(ctx, "bump", []string{"n"}, 10).Result(); err != nil || v != int64(15) {
		t.Fatalf("FCALL on the promoted follower: %v %v", v, err)
	}
	wantLibraries(t, fc, "promoted follower", "liba")
}

// TestFunctionsDumpRestore: FUNCTION DUMP's payload restores the same libraries, with each
// policy, and what is wrong (a damaged payload, a policy, a collision) is refused, changing
// nothing.
func TestFunctionsDumpRestore(t *testing.T) {
	s, c := startServer(t)
	ctx := context.Background()
	k := newChecker(t, c)
	k.ok("FUNCTION", "FLUSH")
	checkNoErr(t, "FUNCTION LOAD", c.FunctionLoad(ctx, fnLibA).Err())
	dumpA, err := c.FunctionDump(ctx).Result()
	checkNoErr(t, "FUNCTION DUMP", err)
	checkNoErr(t, "FUNCTION LOAD libb", c.FunctionLoad(ctx, fnLibB).Err())
	dumpAB, err := c.FunctionDump(ctx).Result()
	checkNoErr(t, "FUNCTION DUMP", err)

	k.err("ERR Library liba already exists", "FUNCTION", "RESTORE", dumpA)
	k.err("ERR Library liba already exists", "FUNCTION", "RESTORE", dumpA, "APPEND")
	k.err("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.", "FUNCTION", "RESTORE", dumpA, "MERGE")
	k.err("ERR unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP.", "FUNCTION", "RESTORE", dumpA, "FLUSH", "x")
	k.err("ERR wrong number of arguments for 'function|restore' command", "FUNCTION", "RESTORE")
	k.err("ERR wrong number of arguments for 'function|dump' command", "FUNCTION", "DUMP", "x")
	k.err("ERR DUMP payload version or checksum are wrong", "FUNCTION", "RESTORE", "not a payload")
	damaged := []byte(dumpA)
	damaged[len(damaged)/2] ^= 1
	k.err("ERR DUMP payload version or checksum are wrong", "FUNCTION", "RESTORE", string(damaged), "FLUSH")
	wantLibraries(t, c, "after refused restores", "liba", "libb")

	// FLUSH: only what the payload holds.
	k.ok("FUNCTION", "RESTORE", dumpA, "FLUSH")
	wantLibraries(t, c, "RESTORE FLUSH", "liba")
	k.ok("FUNCTION", "FLUSH")
	k.ok("FUNCTION", "RESTORE", dumpAB)
	wantLibraries(t, c, "RESTORE into none", "liba", "libb")
	k.ok("SET", "n", "1")
	if v, err := c.FCall(ctx, "bump", []string{"n"}, 2).Result(); err != nil || v != int64(3) {
		t.Fatalf("FCALL after RESTORE: %v %v", v, err)
	}
	// REPLACE: the payload's version of a library wins; a function another library has is
	// still a collision, and then nothing is restored.
	k.ok("FUNCTION", "RESTORE", dumpA, "REPLACE")
	wantLibraries(t, c, "RESTORE REPLACE", "liba", "libb")
	k.ok("FUNCTION", "DELETE", "liba")
	checkNoErr(t, "FUNCTION LOAD", c.FunctionLoad(ctx, "#!lua name=other\nredis.register_function('bump', function() return 0 end)").Err())
	k.err("ERR Function bump already exists", "FUNCTION", "RESTORE", dumpAB, "REPLACE")
	wantLibraries(t, c, "after a collision", "libb", "other")
	// An empty set of libraries dumps and restores too.
	k.ok("FUNCTION", "FLUSH")
	empty, err := c.FunctionDump(ctx).Result()
	checkNoErr(t, "FUNCTION DUMP of none", err)
	k.ok("FUNCTION", "RESTORE", dumpA)
	k.ok("FUNCTION", "RESTORE", empty, "FLUSH")
	wantLibraries(t, c, "RESTORE FLUSH of an empty dump")

	if !harness.IsRedis() {
		// Redis's payload is RDB-encoded: Lavik says it cannot read it. This one begins as Redis
		// 7.0.15's dump of a library does (opcode 0xf5, the code as an RDB string; then the
		// RDB version and a CRC64).
		redisDump := "\xf5\xc3@F#!lua name=lib1\nredis.register_function('f1', function() return 1 end)\n\x00\x98\xfaC\x9b\xf0\x00\x00\x00\x00\x00\x00\x00\x00"
		err := c.Do(ctx, "FUNCTION", "RESTORE", redisDump).Err()
		wantErrPrefix(t, err, "ERR lavik: the payload is a Redis FUNCTION DUMP")
		// The libraries survive a restart, as saved by the restore.
		k.ok("FUNCTION", "RESTORE", dumpAB)
		s.Restart()
		wantLibraries(t, s.Client(), "after a restart", "liba", "libb")
	}
}

// TestFunctionsStatsAndKill: FUNCTION STATS counts the libraries and shows the function that
// runs; FUNCTION KILL stops a function that has not written, SCRIPT KILL does not (and the
// reverse for an EVAL script, while which STATS answers BUSY), and other clients' BUSY names
// the KILL that applies.
func TestFunctionsStatsAndKill(t *testing.T) {
	s, c := startServer(t)
	ctx := context.Background()
	k := newChecker(t, c)
	k.ok("FUNCTION", "FLUSH")
	k.eq([]any{"running_script", nil, "engines", []any{"LUA", []any{"libraries_count", int64(0), "functions_count", int64(0)}}},
		"FUNCTION", "STATS")
	checkNoErr(t, "FUNCTION LOAD", c.FunctionLoad(ctx, fnLibA).Err())
	checkNoErr(t, "FUNCTION LOAD", c.FunctionLoad(ctx, "#!lua name=slow\nredis.register_function('spin', function() local i = 0 while true do i = i + 1 end end)").Err())
	k.eq([]any{"running_script", nil, "engines", []any{"LUA", []any{"libraries_count", int64(2), "functions_count", int64(3)}}},
		"FUNCTION", "STATS")
	k.err("ERR wrong number of arguments for 'function|stats' command", "FUNCTION", "STATS", "x")
	k.err("NOTBUSY No scripts in execution right now.", "FUNCTION", "KILL")
	checkNoErr(t, "CONFIG SET", c.ConfigSet(ctx, "busy-reply-threshold", "100").Err())

	runner := s.Client()
	done := make(chan error, 1)
	go func() { done <- runner.FCall(ctx, "spin", nil).Err() }()
	other := s.Client()
	harness.Eventually(t, 10*time.Second, "BUSY naming FUNCTION KILL", func() bool {
		err := other.Get(ctx, "k").Err()
		return err != nil && err.Error() == "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	})
	st, err := other.Do(ctx, "FUNCTION", "STATS").Result()
	checkNoErr(t, "FUNCTION STATS while busy", err)
	rs := fnPairs(t, fnPairs(t, st)["running_script"])
	if rs["name"] != "spin" || !reflect.DeepEqual(rs["command"], []any{"fcall", "spin", "0"}) {
		t.Fatalf("FUNCTION STATS while spin runs: %#v", st)
	}
	if d, ok := rs["duration_ms"].(int64); !ok || d < 0 {
		t.Fatalf("duration_ms: %#v", rs["duration_ms"])
	}
	err = other.Do(ctx, "SCRIPT", "KILL").Err()
	if err == nil || err.Error() != "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE." {
		t.Fatalf("SCRIPT KILL of a function: %v", err)
	}
	checkNoErr(t, "FUNCTION KILL", other.Do(ctx, "FUNCTION", "KILL").Err())
	select {
	case err := <-done:
		wantErrPrefix(t, err, "ERR Script killed by user with")
	case <-time.After(10 * time.Second):
		t.Fatal("the killed function did not end")
	}
	if err := other.Get(ctx, "k").Err(); err != redis.Nil {
		t.Fatalf("GET after the kill: %v", err)
	}

	// An EVAL script: FUNCTION KILL refuses, SCRIPT KILL stops it; STATS shows no function.
	go func() { done <- runner.Eval(ctx, "local i = 0 while true do i = i + 1 end", nil).Err() }()
	harness.Eventually(t, 10*time.Second, "BUSY naming SCRIPT KILL", func() bool {
		err := other.Get(ctx, "k").Err()
		return err != nil && err.Error() == "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	})
	err = other.Do(ctx, "FUNCTION", "STATS").Err()
	if err == nil || err.Error() != "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE." {
		t.Fatalf("FUNCTION STATS while an EVAL script runs: %v", err)
	}
	err = other.Do(ctx, "FUNCTION", "KILL").Err()
	if err == nil || err.Error() != "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE." {
		t.Fatalf("FUNCTION KILL of a script: %v", err)
	}
	checkNoErr(t, "SCRIPT KILL", other.Do(ctx, "SCRIPT", "KILL").Err())
	select {
	case err := <-done:
		wantErrPrefix(t, err, "ERR Script killed by user with")
	case <-time.After(10 * time.Second):
		t.Fatal("the killed script did not end")
	}
}
