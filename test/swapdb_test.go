package test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

// swapdbFill writes keys of several types into databases 0 and 1: db0 a string with a TTL and
// a list, db1 a hash and a set.
func swapdbFill(t *testing.T, c0, c1 *redis.Client) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c0.Set(ctx, "s", "zero", time.Hour).Err())
	must(c0.RPush(ctx, "l", "x", "y").Err())
	must(c1.HSet(ctx, "h", "f", "one").Err())
	must(c1.SAdd(ctx, "x", "m").Err())
}

// swapdbCheckSwapped checks that db0 now holds what db1 held and db1 what db0 held, values,
// types and TTLs.
func swapdbCheckSwapped(t *testing.T, c0, c1 *redis.Client) {
	t.Helper()
	ctx := context.Background()
	if typ := c0.Type(ctx, "h").Val(); typ != "hash" {
		t.Fatalf("db0 h is %q, want hash", typ)
	}
	if v := c0.HGet(ctx, "h", "f").Val(); v != "one" {
		t.Fatalf("db0 h.f = %q", v)
	}
	if ok := c0.SIsMember(ctx, "x", "m").Val(); !ok {
		t.Fatal("db0 x lacks m")
	}
	if n := c0.Exists(ctx, "s", "l").Val(); n != 0 {
		t.Fatalf("db0 still has %d of db0's old keys", n)
	}
	if v := c1.Get(ctx, "s").Val(); v != "zero" {
		t.Fatalf("db1 s = %q", v)
	}
	if ttl := c1.TTL(ctx, "s").Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("db1 s TTL %v, want (0, 1h]", ttl)
	}
	if l := c1.LRange(ctx, "l", 0, -1).Val(); strings.Join(l, ",") != "x,y" {
		t.Fatalf("db1 l = %v", l)
	}
	if n := c1.Exists(ctx, "h", "x").Val(); n != 0 {
		t.Fatalf("db1 still has %d of db1's old keys", n)
	}
}

func TestSwapDBSwapsData(t *testing.T) {
	s := harness.Start(t)
	ctx := context.Background()
	c0, c1 := s.Client(), s.ClientOpts(&redis.Options{DB: 1})
	swapdbFill(t, c0, c1)
	c1.Set(ctx, "s2", "v", time.Hour) // db1: 3 keys, 1 with a TTL
	if err := c0.Do(ctx, "SWAPDB", 0, 1).Err(); err != nil {
		t.Fatal(err)
	}
	swapdbCheckSwapped(t, c0, c1)
	if n := c0.DBSize(ctx).Val(); n != 3 {
		t.Fatalf("db0 DBSIZE %d, want 3", n)
	}
	if n := c1.DBSize(ctx).Val(); n != 2 {
		t.Fatalf("db1 DBSIZE %d, want 2", n)
	}
	info := c0.Info(ctx, "keyspace").Val()
	for _, want := range []string{"db0:keys=3,expires=1,", "db1:keys=2,expires=1,"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO keyspace lacks %q:\n%s", want, info)
		}
	}
	var scanned []string
	iter := c0.Scan(ctx, 0, "*", 10).Iterator()
	for iter.Next(ctx) {
		scanned = append(scanned, iter.Val())
	}
	if iter.Err() != nil || len(scanned) != 3 || !strings.Contains(strings.Join(scanned, ","), "s2") {
		t.Fatalf("SCAN of db0: %v %v", scanned, iter.Err())
	}
	// Swapping back restores both.
	if err := c0.Do(ctx, "SWAPDB", "1", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if v := c0.Get(ctx, "s").Val(); v != "zero" {
		t.Fatalf("after swapping back, db0 s = %q", v)
	}
	// A database swapped with itself is unchanged.
	if err := c0.Do(ctx, "SWAPDB", "0", "0").Err(); err != nil || c0.Get(ctx, "s").Val() != "zero" {
		t.Fatalf("SWAPDB 0 0: %v", err)
	}
}

func TestSwapDBErrors(t *testing.T) {
	s := harness.Start(t)
	ctx := context.Background()
	c := s.Client()
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"SWAPDB", "a", "1"}, "ERR invalid first DB index"},
		{[]any{"SWAPDB", "0", "1.5"}, "ERR invalid second DB index"},
		{[]any{"SWAPDB", "99999999999", "0"}, "ERR invalid first DB index"},
		{[]any{"SWAPDB", "0", "16"}, "ERR DB index is out of range"},
		{[]any{"SWAPDB", "-1", "0"}, "ERR DB index is out of range"},
		{[]any{"SWAPDB", "0"}, "ERR wrong number of arguments for 'swapdb' command"},
		{[]any{"SWAPDB", "0", "1", "2"}, "ERR wrong number of arguments for 'swapdb' command"},
	} {
		err := c.Do(ctx, tc.args...).Err()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestSwapDBSurvivesRestart: the swap is durable, through a clean restart and a kill.
func TestSwapDBSurvivesRestart(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("redis-server keeps a swap across restarts only if it saves (RDB or AOF); lavik keeps every acknowledged write")
	}
	s := harness.Start(t)
	ctx := context.Background()
	swapdbFill(t, s.Client(), s.ClientOpts(&redis.Options{DB: 1}))
	if err := s.Client().Do(ctx, "SWAPDB", 0, 1).Err(); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	swapdbCheckSwapped(t, s.Client(), s.ClientOpts(&redis.Options{DB: 1}))
	// A write after the swap, then a kill: both survive.
	if err := s.Client().Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.KillRestart()
	c0, c1 := s.Client(), s.ClientOpts(&redis.Options{DB: 1})
	swapdbCheckSwapped(t, c0, c1)
	if v := c0.Get(ctx, "after").Val(); v != "1" {
		t.Fatalf("db0 after = %q after a kill", v)
	}
	// Swap back, kill: the second swap survives too.
	if err := c0.Do(ctx, "SWAPDB", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.KillRestart()
	if v := s.Client().Get(ctx, "s").Val(); v != "zero" {
		t.Fatalf("db0 s = %q after swapping back and a kill", v)
	}
	if v := s.ClientOpts(&redis.Options{DB: 1}).Get(ctx, "after").Val(); v != "1" {
		t.Fatalf("db1 after = %q after swapping back and a kill", v)
	}
}

// TestSwapDBTouchesWatchedKeys: a watched key of either database that exists in either makes
// EXEC fail; one that exists in neither does not (as Redis's touchAllWatchedKeysInDb).
func TestSwapDBTouchesWatchedKeys(t *testing.T) {
	s := harness.Start(t)
	ctx := context.Background()
	c0, c1 := s.Client(), s.ClientOpts(&redis.Options{DB: 1})
	if err := c1.Set(ctx, "k", "db1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	run := func(key string) error {
		return c0.Watch(ctx, func(tx *redis.Tx) error {
			if err := c1.Do(ctx, "SWAPDB", 0, 1).Err(); err != nil {
				return err
			}
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "w", "1", 0)
				return nil
			})
			return err
		}, key)
	}
	// k exists in db1 (the other database): the EXEC fails.
	if err := run("k"); !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("EXEC after SWAPDB with k watched: %v, want a failed transaction", err)
	}
	if n := c0.Exists(ctx, "w").Val() + c1.Exists(ctx, "w").Val(); n != 0 {
		t.Fatal("the failed EXEC wrote")
	}
	// nothing exists in either database: the EXEC runs.
	if err := run("nothing"); err != nil {
		t.Fatalf("EXEC after SWAPDB with a missing key watched: %v", err)
	}
}

// TestSwapDBServesBlockedClient: a client blocked on a key is served when a swap brings a
// database where the key exists.
func TestSwapDBServesBlockedClient(t *testing.T) {
	swapServesBLPOP(t, func(ctx context.Context, c *redis.Client) error { return c.Do(ctx, "SWAPDB", 0, 1).Err() })
}

// TestSwapDBInMultiServesBlockedClient: a SWAPDB inside EXEC wakes the blocked clients.
func TestSwapDBInMultiServesBlockedClient(t *testing.T) {
	swapServesBLPOP(t, func(ctx context.Context, c *redis.Client) error {
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "SWAPDB", 0, 1)
			return nil
		})
		return err
	})
}

// swapServesBLPOP parks a BLPOP on q in database 0 while database 1 holds q, runs swap and
// checks that the BLPOP is served from the swapped-in list.
func swapServesBLPOP(t *testing.T, swap func(ctx context.Context, c *redis.Client) error) {
	t.Helper()
	s := harness.Start(t)
	ctx := context.Background()
	c0, c1 := s.Client(), s.ClientOpts(&redis.Options{DB: 1})
	if err := c1.RPush(ctx, "q", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	got := make(chan []string, 1)
	go func() {
		b := s.Client()
		defer b.Close()
		v, err := b.BLPop(ctx, 10*time.Second, "q").Result()
		if err != nil {
			v = []string{"error", err.Error()}
		}
		got <- v
	}()
	harness.Eventually(t, 5*time.Second, "the client blocks", func() bool {
		return strings.Contains(c0.Info(ctx, "clients").Val(), "blocked_clients:1")
	})
	if err := swap(ctx, c0); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-got:
		if strings.Join(v, ",") != "q,hello" {
			t.Fatalf("BLPOP got %v", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("BLPOP not served by the swap")
	}
	if n := c0.Exists(ctx, "q").Val(); n != 0 {
		t.Fatal("the popped list is still there")
	}
}

// TestSwapDBInMulti: commands after SWAPDB in the same transaction see the swapped databases.
func TestSwapDBInMulti(t *testing.T) {
	s := harness.Start(t)
	ctx := context.Background()
	c0, c1 := s.Client(), s.ClientOpts(&redis.Options{DB: 1})
	if err := c1.Set(ctx, "from1", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var get *redis.StringCmd
	var idle *redis.DurationCmd
	_, err := c0.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "before", "1", 0)
		p.Do(ctx, "SWAPDB", 0, 1)
		get = p.Get(ctx, "from1")
		idle = p.ObjectIdleTime(ctx, "from1") // found in the swapped database
		p.Set(ctx, "after", "2", 0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if get.Val() != "v" {
		t.Fatalf("GET in the transaction after SWAPDB: %q", get.Val())
	}
	if idle.Err() != nil {
		t.Fatalf("OBJECT IDLETIME in the transaction after SWAPDB: %v", idle.Err())
	}
	if c1.Get(ctx, "before").Val() != "1" || c0.Get(ctx, "after").Val() != "2" || c0.Get(ctx, "from1").Val() != "v" {
		t.Fatalf("after EXEC: db1 before=%q db0 after=%q db0 from1=%q", c1.Get(ctx, "before").Val(), c0.Get(ctx, "after").Val(), c0.Get(ctx, "from1").Val())
	}
	if n := c0.Exists(ctx, "before").Val() + c1.Exists(ctx, "after", "from1").Val(); n != 0 {
		t.Fatalf("%d keys in the wrong database", n)
	}
}

// TestSwapDBReplicated: a follower ends with the primary's data, whether it follows the swap
// in the change stream or gets it in a full resync.
func TestSwapDBReplicated(t *testing.T) {
	p, _, pc, fc := replPair(t)
	ctx := context.Background()
	for db := range 3 {
		c := p.ClientOpts(&redis.Options{DB: db})
		if err := c.Set(ctx, "k", db, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.RPush(ctx, "l", db).Err(); err != nil {
			t.Fatal(err)
		}
		if db == 2 {
			c.Set(ctx, "only2", "x", 0)
		}
	}
	if err := pc.Do(ctx, "SWAPDB", 0, 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := pc.Set(ctx, "after", "1", 0).Err(); err != nil { // db0, the old db2
		t.Fatal(err)
	}
	_, err := pc.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.Do(ctx, "SWAPDB", 1, 2)
		tx.Set(ctx, "inmulti", "1", 0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitInSync(t, pc, fc)
	assertSameData(t, pc, fc, 3)
	fc0 := fc
	if v := fc0.Get(ctx, "only2").Val(); v != "x" {
		t.Fatalf("follower db0 only2 = %q", v)
	}
	// A follower that starts now gets the swapped databases in its first snapshot.
	f2 := replFollower(t, p)
	f2c := f2.Client()
	waitInSync(t, pc, f2c)
	assertSameData(t, pc, f2c, 3)
}

// TestSwapDBInScriptServesBlockedClient: a SWAPDB a script runs wakes the blocked clients too.
func TestSwapDBInScriptServesBlockedClient(t *testing.T) {
	swapServesBLPOP(t, func(ctx context.Context, c *redis.Client) error {
		return c.Eval(ctx, "return redis.call('SWAPDB', 0, 1)", nil).Err()
	})
}
