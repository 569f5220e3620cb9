package test

import (
	"context"
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
