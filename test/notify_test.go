package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

// TestNotifyConfig checks notify-keyspace-events' validation and the form CONFIG GET shows.
func TestNotifyConfig(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	c := s.Client()
	for _, tc := range []struct{ set, get string }{
		{"KEA", "AKE"}, {"Ex", "xE"}, {"K$lsh", "$lshK"}, {"", ""}, {"KEAmn", "AKEm"},
	} {
		if err := c.ConfigSet(ctx, "notify-keyspace-events", tc.set).Err(); err != nil {
			t.Fatalf("CONFIG SET %q: %v", tc.set, err)
		}
		if got := c.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]; got != tc.get {
			t.Fatalf("after %q CONFIG GET = %q, want %q", tc.set, got, tc.get)
		}
	}
	err := c.ConfigSet(ctx, "notify-keyspace-events", "KEZ").Err()
	want := "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
	if err == nil || err.Error() != want {
		t.Fatalf("CONFIG SET KEZ: %v, want %s", err, want)
	}
}

type event struct{ channel, payload string }

func collect(t *testing.T, ps *redis.PubSub, n int) []event {
	t.Helper()
	var out []event
	for len(out) < n {
		m, err := ps.ReceiveTimeout(harness.Ctx(t), 5*time.Second)
		if err != nil {
			t.Fatalf("after %v: %v", out, err)
		}
		if msg, ok := m.(*redis.Message); ok {
			out = append(out, event{msg.Channel, msg.Payload})
		}
	}
	return out
}

// TestNotifyKeyspaceEvents runs commands of every type and checks the keyevent notifications
// Redis emits for them, in order.
func TestNotifyKeyspaceEvents(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	c := s.Client()
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		t.Fatal(err)
	}
	ps := s.Client().PSubscribe(ctx, "__keyevent@0__:*")
	defer ps.Close()
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		run  func()
		want []string // event:key
	}{
		{func() { c.Set(ctx, "s", "1", 0) }, []string{"set:s"}},
		{func() { c.Set(ctx, "s", "1", time.Hour) }, []string{"set:s", "expire:s"}},
		{func() { c.Incr(ctx, "s") }, []string{"incrby:s"}},
		{func() { c.IncrByFloat(ctx, "s", 1.5) }, []string{"incrbyfloat:s"}},
		{func() { c.Append(ctx, "s", "x") }, []string{"append:s"}},
		{func() { c.SetRange(ctx, "s", 0, "y") }, []string{"setrange:s"}},
		{func() { c.Persist(ctx, "s") }, []string{"persist:s"}},
		{func() { c.MSet(ctx, "a", "1", "b", "2") }, []string{"set:a", "set:b"}},
		{func() { c.GetSet(ctx, "a", "3") }, []string{"set:a"}},
		{func() { c.Expire(ctx, "a", time.Hour) }, []string{"expire:a"}},
		{func() { c.Rename(ctx, "a", "a2") }, []string{"rename_from:a", "rename_to:a2"}},
		{func() { c.Copy(ctx, "a2", "a3", 0, false) }, []string{"copy_to:a3"}},
		{func() { c.Del(ctx, "a2", "a3", "missing") }, []string{"del:a2", "del:a3"}},
		{func() { c.GetDel(ctx, "b") }, []string{"del:b"}},
		{func() { c.LPush(ctx, "l", "x", "y") }, []string{"lpush:l"}},
		{func() { c.RPush(ctx, "l", "z") }, []string{"rpush:l"}},
		{func() { c.LPop(ctx, "l") }, []string{"lpop:l"}},
		{func() { c.RPop(ctx, "l") }, []string{"rpop:l"}},
		{func() { c.HSet(ctx, "h", "f", "v") }, []string{"hset:h"}},
		{func() { c.HDel(ctx, "h", "nope") }, nil},
		{func() { c.HSet(ctx, "h", "g", "v") }, []string{"hset:h"}},
		{func() { c.HDel(ctx, "h", "f") }, []string{"hdel:h"}},
		{func() { c.SAdd(ctx, "st", "m1", "m2") }, []string{"sadd:st"}},
		{func() { c.SRem(ctx, "st", "m1") }, []string{"srem:st"}},
		{func() { c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "m"}) }, []string{"zadd:z"}},
		{func() { c.ZIncrBy(ctx, "z", 2, "m") }, []string{"zincr:z"}},
		{func() { c.ZAdd(ctx, "z", redis.Z{Score: 2, Member: "n"}) }, []string{"zadd:z"}},
		{func() { c.ZRem(ctx, "z", "n") }, []string{"zrem:z"}},
		{func() { c.XAdd(ctx, &redis.XAddArgs{Stream: "x", Values: []string{"f", "v"}}) }, []string{"xadd:x"}},
		{func() { c.Do(ctx, "MOVE", "s", "1") }, []string{"move_from:s"}},
	}
	for i, st := range steps {
		t.Logf("step %d: %v", i, st.want)
		st.run()
		// A marker after each step: whatever the step emitted comes before it.
		c.Set(ctx, "marker", "1", 0)
		got := collect(t, ps, len(st.want)+1)
		var gs []string
		for _, e := range got[:len(got)-1] {
			gs = append(gs, strings.TrimPrefix(e.channel, "__keyevent@0__:")+":"+e.payload)
		}
		if strings.Join(gs, ",") != strings.Join(st.want, ",") {
			t.Fatalf("events %v, want %v", gs, st.want)
		}
		if last := got[len(got)-1]; last.channel != "__keyevent@0__:set" || last.payload != "marker" {
			t.Fatalf("unexpected event %v, want the marker (after %v)", last, st.want)
		}
	}
}

// TestNotifyKeyspaceChannel checks the __keyspace@<db>__:<key> side, the class filter and the
// move_to event of the destination database.
func TestNotifyKeyspaceChannel(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	c := s.Client()
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "Kg$").Err(); err != nil {
		t.Fatal(err)
	}
	ps := s.Client().PSubscribe(ctx, "__keyspace@*")
	defer ps.Close()
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c.LPush(ctx, "l", "x") // class l is off: no event
	c.Set(ctx, "k", "v", 0)
	c.Do(ctx, "MOVE", "k", "2")
	got := collect(t, ps, 3)
	want := []event{{"__keyspace@0__:k", "set"}, {"__keyspace@0__:k", "move_from"}, {"__keyspace@2__:k", "move_to"}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
}

// TestNotifyExpired checks the expired event, from active expiry (nobody touches the key) and
// from lazy expiry (a read finds it expired).
func TestNotifyExpired(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	c := s.Client()
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "Ex").Err(); err != nil {
		t.Fatal(err)
	}
	ps := s.Client().Subscribe(ctx, "__keyevent@0__:expired")
	defer ps.Close()
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "gone", "v", 50*time.Millisecond)
	got := collect(t, ps, 1)
	if got[0].payload != "gone" {
		t.Fatalf("expired event %v", got)
	}
	// Lazy: the key's expiry passes while active expiry is kept from it by DEBUG? No such
	// control on both servers: a read right after the deadline finds it first or the cycle
	// does; either way exactly one expired event comes.
	c.Set(ctx, "lazy", "v", 20*time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	if c.Exists(ctx, "lazy").Val() != 0 {
		t.Fatal("an expired key exists")
	}
	got = collect(t, ps, 1)
	if got[0].payload != "lazy" {
		t.Fatalf("expired event %v", got)
	}
	if m, err := ps.ReceiveTimeout(ctx, 300*time.Millisecond); err == nil {
		t.Fatalf("a second event %v", m)
	}
}

// notifyCase is one row of TestNotifyEventTable: setup runs unobserved, then cmd, whose events
// (db:event:key, in order; "new" included, the n class being on) must be want.
type notifyCase struct {
	setup [][]any
	cmd   []any
	want  []string
}

// notifyTable lists, family by family, Redis 7.0's keyspace events for the commands Lavik has
// (notifyKeyspaceEvent in t_string.c, t_list.c, t_hash.c, t_set.c, t_zset.c, t_stream.c, db.c,
// expire.c, bitops.c, sort.c and geo.c). Each row starts from empty databases.
var notifyTable = []notifyCase{
	// Strings.
	{nil, []any{"SET", "s", "v"}, []string{"0:new:s", "0:set:s"}},
	{[][]any{{"SET", "s", "v"}}, []any{"SET", "s", "w"}, []string{"0:set:s"}},
	{[][]any{{"SET", "s", "v", "EX", "100"}}, []any{"SET", "s", "w", "KEEPTTL"}, []string{"0:set:s"}},
	{[][]any{{"SET", "s", "v"}}, []any{"SET", "s", "w", "GET", "PX", "100000"}, []string{"0:set:s", "0:expire:s"}},
	{[][]any{{"SET", "s", "v"}}, []any{"SET", "s", "w", "NX"}, nil},
	{nil, []any{"SET", "s", "w", "XX"}, nil},
	{nil, []any{"SETNX", "s", "v"}, []string{"0:new:s", "0:set:s"}},
	{nil, []any{"SETEX", "s", "100", "v"}, []string{"0:new:s", "0:set:s", "0:expire:s"}},
	{nil, []any{"PSETEX", "s", "100000", "v"}, []string{"0:new:s", "0:set:s", "0:expire:s"}},
	{nil, []any{"MSET", "a", "1", "b", "2"}, []string{"0:new:a", "0:set:a", "0:new:b", "0:set:b"}},
	{[][]any{{"SET", "a", "1"}}, []any{"MSETNX", "a", "1", "b", "2"}, nil},
	{nil, []any{"MSETNX", "a", "1", "b", "2"}, []string{"0:new:a", "0:set:a", "0:new:b", "0:set:b"}},
	{nil, []any{"GETSET", "s", "v"}, []string{"0:new:s", "0:set:s"}},
	{[][]any{{"SET", "s", "v"}}, []any{"GETDEL", "s"}, []string{"0:del:s"}},
	{nil, []any{"GETDEL", "s"}, nil},
	{[][]any{{"SET", "s", "v"}}, []any{"GETEX", "s", "EX", "100"}, []string{"0:expire:s"}},
	{[][]any{{"SET", "s", "v", "EX", "100"}}, []any{"GETEX", "s", "PERSIST"}, []string{"0:persist:s"}},
	{[][]any{{"SET", "s", "v"}}, []any{"GETEX", "s", "PXAT", "1"}, []string{"0:del:s"}},
	{[][]any{{"SET", "s", "v"}}, []any{"GETEX", "s"}, nil},
	{nil, []any{"APPEND", "s", "x"}, []string{"0:new:s", "0:append:s"}},
	{nil, []any{"SETRANGE", "s", "2", "x"}, []string{"0:new:s", "0:setrange:s"}},
	{nil, []any{"SETRANGE", "s", "2", ""}, nil},
	{[][]any{{"SET", "s", "v"}}, []any{"SETRANGE", "s", "0", ""}, nil},
	{nil, []any{"INCR", "n"}, []string{"0:new:n", "0:incrby:n"}},
	{[][]any{{"SET", "n", "1"}}, []any{"DECRBY", "n", "3"}, []string{"0:incrby:n"}},
	{[][]any{{"SET", "n", "1"}}, []any{"INCRBYFLOAT", "n", "1.5"}, []string{"0:incrbyfloat:n"}},
	// A time already past: Redis stores the key and states "expired" at its next lookup (here
	// EXISTS, in the same script); Lavik stores none and states "expired" at once.
	{nil, []any{"EVAL", "redis.call('SET', KEYS[1], 'v', 'PXAT', 1) return redis.call('EXISTS', KEYS[1])", "1", "s"}, []string{"0:new:s", "0:set:s", "0:expire:s", "0:expired:s"}},
	{[][]any{{"SET", "s", "v"}}, []any{"EVAL", "redis.call('SET', KEYS[1], 'w', 'EXAT', 1, 'XX') return redis.call('EXISTS', KEYS[1])", "1", "s"}, []string{"0:set:s", "0:expire:s", "0:expired:s"}},

	// Bitmaps: SETBIT and BITFIELD state "setbit" when a bit changed or the string was created
	// or grew; BITOP "set", or "del" when an empty result removed the destination.
	{nil, []any{"SETBIT", "b", "7", "0"}, []string{"0:new:b", "0:setbit:b"}},
	{[][]any{{"SET", "b", "x"}}, []any{"SETBIT", "b", "1", "0"}, []string{"0:setbit:b"}},
	{[][]any{{"SET", "b", "x"}}, []any{"SETBIT", "b", "8", "0"}, []string{"0:setbit:b"}},
	{[][]any{{"SET", "b", "x"}}, []any{"SETBIT", "b", "7", "0"}, nil},
	{nil, []any{"BITFIELD", "b", "SET", "u8", "0", "0"}, []string{"0:new:b", "0:setbit:b"}},
	{[][]any{{"SET", "b", "x"}}, []any{"BITFIELD", "b", "INCRBY", "u8", "0", "1", "SET", "u8", "0", "120"}, []string{"0:setbit:b"}},
	{[][]any{{"SET", "b", "x"}}, []any{"BITFIELD", "b", "SET", "u8", "0", "120", "INCRBY", "i8", "0", "0"}, nil},
	{[][]any{{"BITFIELD", "b", "SET", "u8", "0", "255"}}, []any{"BITFIELD", "b", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "1"}, nil},
	{nil, []any{"BITFIELD", "b", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "10"}, []string{"0:new:b"}},
	{nil, []any{"BITFIELD", "b", "GET", "u8", "0"}, nil},
	{[][]any{{"SET", "a", "x"}, {"SET", "b", "y"}}, []any{"BITOP", "AND", "d", "a", "b"}, []string{"0:new:d", "0:set:d"}},
	{[][]any{{"SET", "a", "x"}, {"SET", "d", "x"}}, []any{"BITOP", "XOR", "d", "a", "d"}, []string{"0:set:d"}},
	{[][]any{{"SET", "d", "x"}}, []any{"BITOP", "OR", "d", "a", "b"}, []string{"0:del:d"}},
	{nil, []any{"BITOP", "NOT", "d", "a"}, nil},

	// Generic.
	{[][]any{{"SET", "a", "1"}, {"SET", "b", "1"}}, []any{"DEL", "a", "x", "b"}, []string{"0:del:a", "0:del:b"}},
	{[][]any{{"SET", "a", "1"}}, []any{"UNLINK", "a"}, []string{"0:del:a"}},
	{[][]any{{"SET", "a", "1"}}, []any{"EXPIRE", "a", "100"}, []string{"0:expire:a"}},
	{[][]any{{"SET", "a", "1"}}, []any{"EXPIRE", "a", "-1"}, []string{"0:del:a"}},
	{[][]any{{"SET", "a", "1"}}, []any{"PEXPIREAT", "a", "1"}, []string{"0:del:a"}},
	{[][]any{{"SET", "a", "1"}}, []any{"EXPIREAT", "a", "99999999999"}, []string{"0:expire:a"}},
	{[][]any{{"SET", "a", "1"}}, []any{"PEXPIRE", "a", "100000", "XX"}, nil},
	{nil, []any{"EXPIRE", "a", "100"}, nil},
	{[][]any{{"SET", "a", "1", "EX", "100"}}, []any{"PERSIST", "a"}, []string{"0:persist:a"}},
	{[][]any{{"SET", "a", "1"}}, []any{"PERSIST", "a"}, nil},
	{[][]any{{"SET", "a", "1"}}, []any{"RENAME", "a", "b"}, []string{"0:new:b", "0:rename_from:a", "0:rename_to:b"}},
	{[][]any{{"SET", "a", "1"}, {"SET", "b", "2"}}, []any{"RENAME", "a", "b"}, []string{"0:new:b", "0:rename_from:a", "0:rename_to:b"}},
	{[][]any{{"SET", "a", "1"}}, []any{"RENAME", "a", "a"}, nil},
	{[][]any{{"SET", "a", "1"}, {"SET", "b", "2"}}, []any{"RENAMENX", "a", "b"}, nil},
	{[][]any{{"SET", "a", "1"}}, []any{"RENAMENX", "a", "b"}, []string{"0:new:b", "0:rename_from:a", "0:rename_to:b"}},
	{[][]any{{"SET", "a", "1"}}, []any{"COPY", "a", "b"}, []string{"0:new:b", "0:copy_to:b"}},
	{[][]any{{"SET", "a", "1"}, {"SET", "b", "2"}}, []any{"COPY", "a", "b"}, nil},
	{[][]any{{"SET", "a", "1"}, {"SET", "b", "2"}}, []any{"COPY", "a", "b", "REPLACE"}, []string{"0:new:b", "0:copy_to:b"}},
	{[][]any{{"SET", "a", "1"}}, []any{"COPY", "a", "b", "DB", "3"}, []string{"3:new:b", "3:copy_to:b"}},
	{[][]any{{"SET", "a", "1"}}, []any{"MOVE", "a", "3"}, []string{"3:new:a", "0:move_from:a", "3:move_to:a"}},
	{[][]any{{"SET", "a", "1"}, {"SELECT", "3"}, {"SET", "a", "2"}, {"SELECT", "0"}}, []any{"MOVE", "a", "3"}, nil},
	{[][]any{{"SET", "a", "1"}, {"SELECT", "3"}, {"SET", "a", "2"}, {"SELECT", "0"}}, []any{"FLUSHDB"}, nil},
	{[][]any{{"RPUSH", "l", "2", "1"}}, []any{"SORT", "l", "STORE", "d"}, []string{"0:new:d", "0:sortstore:d"}},
	{[][]any{{"RPUSH", "l", "2", "1"}}, []any{"SORT", "l", "STORE", "l"}, []string{"0:sortstore:l"}},
	{[][]any{{"RPUSH", "l", "2", "1"}, {"SET", "d", "x"}}, []any{"SORT", "l", "LIMIT", "5", "5", "STORE", "d"}, []string{"0:del:d"}},
	{[][]any{{"SET", "d", "x"}}, []any{"SORT", "l", "STORE", "d"}, []string{"0:del:d"}},
	{nil, []any{"SORT", "l", "STORE", "d"}, nil},
	{[][]any{{"SET", "a", "1"}, {"SELECT", "3"}, {"SET", "a", "2"}, {"SELECT", "0"}}, []any{"FLUSHALL"}, nil},

	// Lists.
	{nil, []any{"LPUSH", "l", "a", "b"}, []string{"0:new:l", "0:lpush:l"}},
	{[][]any{{"RPUSH", "l", "a"}}, []any{"RPUSH", "l", "b"}, []string{"0:rpush:l"}},
	{nil, []any{"LPUSHX", "l", "a"}, nil},
	{[][]any{{"RPUSH", "l", "a"}}, []any{"RPUSHX", "l", "b"}, []string{"0:rpush:l"}},
	{[][]any{{"RPUSH", "l", "a", "b"}}, []any{"LPOP", "l"}, []string{"0:lpop:l"}},
	{[][]any{{"RPUSH", "l", "a"}}, []any{"RPOP", "l"}, []string{"0:rpop:l", "0:del:l"}},
	{[][]any{{"RPUSH", "l", "a", "b"}}, []any{"LPOP", "l", "5"}, []string{"0:lpop:l", "0:del:l"}},
	{[][]any{{"RPUSH", "l", "a", "b"}}, []any{"LPOP", "l", "0"}, nil},
	{[][]any{{"RPUSH", "l", "a", "b"}}, []any{"LINSERT", "l", "BEFORE", "b", "x"}, []string{"0:linsert:l"}},
	{[][]any{{"RPUSH", "l", "a", "b"}}, []any{"LINSERT", "l", "BEFORE", "z", "x"}, nil},
	{[][]any{{"RPUSH", "l", "a", "b"}}, []any{"LSET", "l", "0", "x"}, []string{"0:lset:l"}},
	{[][]any{{"RPUSH", "l", "a", "b", "c"}}, []any{"LTRIM", "l", "0", "1"}, []string{"0:ltrim:l"}},
	{[][]any{{"RPUSH", "l", "a", "b", "c"}}, []any{"LTRIM", "l", "5", "9"}, []string{"0:ltrim:l", "0:del:l"}},
	{[][]any{{"RPUSH", "l", "a", "b", "a"}}, []any{"LREM", "l", "0", "a"}, []string{"0:lrem:l"}},
	{[][]any{{"RPUSH", "l", "a", "a"}}, []any{"LREM", "l", "0", "a"}, []string{"0:lrem:l", "0:del:l"}},
	{[][]any{{"RPUSH", "l", "a"}}, []any{"LREM", "l", "0", "z"}, nil},
	{[][]any{{"RPUSH", "l", "a", "b"}}, []any{"LMOVE", "l", "m", "LEFT", "RIGHT"}, []string{"0:new:m", "0:rpush:m", "0:lpop:l"}},
	{[][]any{{"RPUSH", "l", "a"}, {"RPUSH", "m", "z"}}, []any{"RPOPLPUSH", "l", "m"}, []string{"0:lpush:m", "0:rpop:l", "0:del:l"}},
	{[][]any{{"RPUSH", "l", "a", "b"}}, []any{"RPOPLPUSH", "l", "l"}, []string{"0:lpush:l", "0:rpop:l"}},
	{[][]any{{"RPUSH", "l", "a"}}, []any{"BLMOVE", "l", "m", "RIGHT", "LEFT", "1"}, []string{"0:new:m", "0:lpush:m", "0:rpop:l", "0:del:l"}},
	{[][]any{{"RPUSH", "l", "a", "b"}}, []any{"BRPOPLPUSH", "l", "m", "1"}, []string{"0:new:m", "0:lpush:m", "0:rpop:l"}},
	{[][]any{{"RPUSH", "l2", "a", "b"}}, []any{"LMPOP", "2", "l1", "l2", "RIGHT", "COUNT", "5"}, []string{"0:rpop:l2", "0:del:l2"}},
	{[][]any{{"RPUSH", "l2", "a", "b"}}, []any{"BLMPOP", "1", "2", "l1", "l2", "LEFT"}, []string{"0:lpop:l2"}},
	{[][]any{{"RPUSH", "l", "a"}}, []any{"BLPOP", "x", "l", "1"}, []string{"0:lpop:l", "0:del:l"}},
	{[][]any{{"RPUSH", "l", "a", "b"}}, []any{"BRPOP", "l", "1"}, []string{"0:rpop:l"}},

	// Hashes.
	{nil, []any{"HSET", "h", "f", "v"}, []string{"0:new:h", "0:hset:h"}},
	{[][]any{{"HSET", "h", "f", "v"}}, []any{"HMSET", "h", "f", "w", "g", "x"}, []string{"0:hset:h"}},
	{[][]any{{"HSET", "h", "f", "v"}}, []any{"HSETNX", "h", "f", "w"}, nil},
	{nil, []any{"HSETNX", "h", "f", "w"}, []string{"0:new:h", "0:hset:h"}},
	{[][]any{{"HSET", "h", "f", "v", "g", "w"}}, []any{"HDEL", "h", "f"}, []string{"0:hdel:h"}},
	{[][]any{{"HSET", "h", "f", "v"}}, []any{"HDEL", "h", "f", "x"}, []string{"0:hdel:h", "0:del:h"}},
	{[][]any{{"HSET", "h", "f", "v"}}, []any{"HDEL", "h", "x"}, nil},
	{nil, []any{"HINCRBY", "h", "f", "2"}, []string{"0:new:h", "0:hincrby:h"}},
	{[][]any{{"HSET", "h", "f", "1"}}, []any{"HINCRBYFLOAT", "h", "f", "2.5"}, []string{"0:hincrbyfloat:h"}},

	// Sets.
	{nil, []any{"SADD", "st", "a", "b"}, []string{"0:new:st", "0:sadd:st"}},
	{[][]any{{"SADD", "st", "a"}}, []any{"SADD", "st", "a"}, nil},
	{[][]any{{"SADD", "st", "a", "b"}}, []any{"SREM", "st", "a"}, []string{"0:srem:st"}},
	{[][]any{{"SADD", "st", "a"}}, []any{"SREM", "st", "a"}, []string{"0:srem:st", "0:del:st"}},
	{[][]any{{"SADD", "st", "a", "b"}}, []any{"SPOP", "st"}, []string{"0:spop:st"}},
	{[][]any{{"SADD", "st", "a"}}, []any{"SPOP", "st"}, []string{"0:spop:st", "0:del:st"}},
	{[][]any{{"SADD", "st", "a", "b", "c"}}, []any{"SPOP", "st", "2"}, []string{"0:spop:st"}},
	{[][]any{{"SADD", "st", "a", "b"}}, []any{"SPOP", "st", "5"}, []string{"0:spop:st", "0:del:st"}},
	{[][]any{{"SADD", "st", "a", "b"}}, []any{"SPOP", "st", "0"}, nil},
	{[][]any{{"SADD", "st", "a", "b"}}, []any{"SMOVE", "st", "d", "a"}, []string{"0:srem:st", "0:new:d", "0:sadd:d"}},
	{[][]any{{"SADD", "st", "a"}, {"SADD", "d", "a"}}, []any{"SMOVE", "st", "d", "a"}, []string{"0:srem:st", "0:del:st"}},
	{[][]any{{"SADD", "st", "a"}}, []any{"SMOVE", "st", "d", "x"}, nil},
	{[][]any{{"SADD", "st", "a"}}, []any{"SMOVE", "st", "st", "a"}, nil},
	{[][]any{{"SADD", "s1", "a", "b"}, {"SADD", "s2", "b"}}, []any{"SINTERSTORE", "d", "s1", "s2"}, []string{"0:new:d", "0:sinterstore:d"}},
	{[][]any{{"SADD", "s1", "a"}, {"SADD", "s2", "b"}, {"SET", "d", "x"}}, []any{"SINTERSTORE", "d", "s1", "s2"}, []string{"0:del:d"}},
	{[][]any{{"SADD", "s1", "a"}}, []any{"SINTERSTORE", "d", "s1", "missing"}, nil},
	{[][]any{{"SADD", "s1", "a"}, {"SADD", "s2", "b"}}, []any{"SUNIONSTORE", "d", "s1", "s2"}, []string{"0:new:d", "0:sunionstore:d"}},
	{[][]any{{"SADD", "s1", "a"}, {"SADD", "d", "b"}}, []any{"SDIFFSTORE", "d", "s1", "d"}, []string{"0:sdiffstore:d"}},
	{[][]any{{"SADD", "s1", "a"}, {"SADD", "d", "a"}}, []any{"SDIFFSTORE", "d", "s1", "d"}, []string{"0:del:d"}},

	// Sorted sets.
	{nil, []any{"ZADD", "z", "1", "a"}, []string{"0:new:z", "0:zadd:z"}},
	{[][]any{{"ZADD", "z", "1", "a"}}, []any{"ZADD", "z", "1", "a"}, nil},
	{[][]any{{"ZADD", "z", "1", "a"}}, []any{"ZADD", "z", "2", "a"}, []string{"0:zadd:z"}},
	{[][]any{{"ZADD", "z", "1", "a"}}, []any{"ZADD", "z", "INCR", "2", "a"}, []string{"0:zincr:z"}},
	{nil, []any{"ZINCRBY", "z", "2", "a"}, []string{"0:new:z", "0:zincr:z"}},
	{[][]any{{"ZADD", "z", "1", "a", "2", "b"}}, []any{"ZREM", "z", "a"}, []string{"0:zrem:z"}},
	{[][]any{{"ZADD", "z", "1", "a"}}, []any{"ZREM", "z", "a"}, []string{"0:zrem:z", "0:del:z"}},
	{[][]any{{"ZADD", "z", "1", "a", "2", "b"}}, []any{"ZREMRANGEBYSCORE", "z", "0", "1"}, []string{"0:zremrangebyscore:z"}},
	{[][]any{{"ZADD", "z", "1", "a", "2", "b"}}, []any{"ZREMRANGEBYRANK", "z", "0", "-1"}, []string{"0:zremrangebyrank:z", "0:del:z"}},
	{[][]any{{"ZADD", "z", "0", "a", "0", "b"}}, []any{"ZREMRANGEBYLEX", "z", "[a", "[a"}, []string{"0:zremrangebylex:z"}},
	{[][]any{{"ZADD", "z", "0", "a"}}, []any{"ZREMRANGEBYLEX", "z", "[x", "[y"}, nil},
	{[][]any{{"ZADD", "z", "1", "a", "2", "b"}}, []any{"ZPOPMIN", "z"}, []string{"0:zpopmin:z"}},
	{[][]any{{"ZADD", "z", "1", "a", "2", "b"}}, []any{"ZPOPMAX", "z", "5"}, []string{"0:zpopmax:z", "0:del:z"}},
	{[][]any{{"ZADD", "z", "1", "a"}}, []any{"BZPOPMIN", "z", "1"}, []string{"0:zpopmin:z", "0:del:z"}},
	{[][]any{{"ZADD", "z", "1", "a", "2", "b"}}, []any{"BZPOPMAX", "y", "z", "1"}, []string{"0:zpopmax:z"}},
	{[][]any{{"ZADD", "z", "1", "a", "2", "b"}}, []any{"ZMPOP", "2", "y", "z", "MIN", "COUNT", "2"}, []string{"0:zpopmin:z", "0:del:z"}},
	{[][]any{{"ZADD", "z", "1", "a", "2", "b"}}, []any{"BZMPOP", "1", "1", "z", "MAX"}, []string{"0:zpopmax:z"}},
	{[][]any{{"ZADD", "z", "1", "a", "2", "b"}}, []any{"ZRANGESTORE", "d", "z", "0", "0"}, []string{"0:new:d", "0:zrangestore:d"}},
	{[][]any{{"ZADD", "z", "1", "a"}, {"SET", "d", "x"}}, []any{"ZRANGESTORE", "d", "z", "5", "6"}, []string{"0:del:d"}},
	{[][]any{{"ZADD", "z", "1", "a"}, {"ZADD", "y", "1", "b"}}, []any{"ZUNIONSTORE", "d", "2", "z", "y"}, []string{"0:new:d", "0:zunionstore:d"}},
	{[][]any{{"ZADD", "z", "1", "a"}, {"ZADD", "y", "1", "b"}, {"ZADD", "d", "1", "c"}}, []any{"ZINTERSTORE", "d", "2", "z", "y"}, []string{"0:del:d"}},
	{[][]any{{"ZADD", "z", "1", "a", "2", "b"}, {"ZADD", "y", "1", "b"}}, []any{"ZDIFFSTORE", "d", "2", "z", "y"}, []string{"0:new:d", "0:zdiffstore:d"}},
	{nil, []any{"ZDIFFSTORE", "d", "1", "z"}, nil},

	// Geo: GEOADD is ZADD; the searches that store state their own event or "del".
	{nil, []any{"GEOADD", "g", "13.36", "38.11", "p"}, []string{"0:new:g", "0:zadd:g"}},
	{[][]any{{"GEOADD", "g", "13.36", "38.11", "p"}}, []any{"GEOADD", "g", "13.36", "38.11", "p"}, nil},
	{[][]any{{"GEOADD", "g", "13.36", "38.11", "p"}}, []any{"GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "13.36", "38.11", "BYRADIUS", "10", "km", "STOREDIST"}, []string{"0:new:d", "0:geosearchstore:d"}},
	{[][]any{{"GEOADD", "g", "13.36", "38.11", "p"}, {"SET", "d", "x"}}, []any{"GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "10", "km"}, []string{"0:del:d"}},
	{[][]any{{"SET", "d", "x"}}, []any{"GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "10", "km"}, []string{"0:del:d"}},
	{[][]any{{"GEOADD", "g", "13.36", "38.11", "p"}}, []any{"GEORADIUS", "g", "13.36", "38.11", "10", "km", "STORE", "d"}, []string{"0:new:d", "0:georadiusstore:d"}},
	{[][]any{{"GEOADD", "g", "13.36", "38.11", "p"}, {"SET", "d", "x"}}, []any{"GEORADIUS", "g", "0", "0", "10", "km", "STOREDIST", "d"}, []string{"0:del:d"}},
	{[][]any{{"GEOADD", "g", "13.36", "38.11", "p"}}, []any{"GEORADIUSBYMEMBER", "g", "p", "10", "km", "STORE", "d"}, []string{"0:new:d", "0:georadiusstore:d"}},

	// Streams.
	{nil, []any{"XADD", "x", "1-1", "f", "v"}, []string{"0:new:x", "0:xadd:x"}},
	{nil, []any{"XADD", "x", "NOMKSTREAM", "1-1", "f", "v"}, nil},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}}, []any{"XADD", "x", "MAXLEN", "1", "2-1", "f", "v"}, []string{"0:xadd:x", "0:xtrim:x"}},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}, {"XADD", "x", "2-1", "f", "v"}}, []any{"XTRIM", "x", "MAXLEN", "1"}, []string{"0:xtrim:x"}},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}}, []any{"XTRIM", "x", "MAXLEN", "5"}, nil},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}}, []any{"XDEL", "x", "1-1"}, []string{"0:xdel:x"}},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}}, []any{"XDEL", "x", "9-9"}, nil},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}}, []any{"XSETID", "x", "5-5"}, []string{"0:xsetid:x"}},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}}, []any{"XGROUP", "CREATE", "x", "g", "0"}, []string{"0:xgroup-create:x"}},
	{nil, []any{"XGROUP", "CREATE", "x", "g", "$", "MKSTREAM"}, []string{"0:new:x", "0:xgroup-create:x"}},
	{[][]any{{"XGROUP", "CREATE", "x", "g", "$", "MKSTREAM"}}, []any{"XGROUP", "SETID", "x", "g", "0"}, []string{"0:xgroup-setid:x"}},
	{[][]any{{"XGROUP", "CREATE", "x", "g", "$", "MKSTREAM"}}, []any{"XGROUP", "CREATECONSUMER", "x", "g", "c"}, []string{"0:xgroup-createconsumer:x"}},
	{[][]any{{"XGROUP", "CREATE", "x", "g", "$", "MKSTREAM"}, {"XGROUP", "CREATECONSUMER", "x", "g", "c"}}, []any{"XGROUP", "CREATECONSUMER", "x", "g", "c"}, nil},
	{[][]any{{"XGROUP", "CREATE", "x", "g", "$", "MKSTREAM"}, {"XGROUP", "CREATECONSUMER", "x", "g", "c"}}, []any{"XGROUP", "DELCONSUMER", "x", "g", "c"}, []string{"0:xgroup-delconsumer:x"}},
	{[][]any{{"XGROUP", "CREATE", "x", "g", "$", "MKSTREAM"}}, []any{"XGROUP", "DELCONSUMER", "x", "g", "c"}, nil},
	{[][]any{{"XGROUP", "CREATE", "x", "g", "$", "MKSTREAM"}}, []any{"XGROUP", "DESTROY", "x", "g"}, []string{"0:xgroup-destroy:x"}},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}}, []any{"XGROUP", "DESTROY", "x", "g"}, nil},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}, {"XGROUP", "CREATE", "x", "g", "0"}}, []any{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"}, []string{"0:xgroup-createconsumer:x"}},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}, {"XGROUP", "CREATE", "x", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"}}, []any{"XACK", "x", "g", "1-1"}, nil},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}, {"XGROUP", "CREATE", "x", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"}}, []any{"XCLAIM", "x", "g", "d", "0", "1-1"}, []string{"0:xgroup-createconsumer:x"}},
	{[][]any{{"XADD", "x", "1-1", "f", "v"}, {"XGROUP", "CREATE", "x", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"}}, []any{"XAUTOCLAIM", "x", "g", "d", "0", "0"}, []string{"0:xgroup-createconsumer:x"}},
}

// notifyKeymissTable lists Redis 7.0's "keymiss" events (class m), run with every other class
// on too (EAnm), so that their order among a command's other events shows: Redis's lookupKey
// states one for every read lookup (lookupKeyRead) that finds no key, so a command states one
// per missing key it reads, and one per lookup when it looks a key up twice (XREAD); the lookups
// of writes (lookupKeyWrite) and OBJECT's state none. Checked against redis-server 7.0.15.
var notifyKeymissTable = []notifyCase{
	// Strings and bitmaps.
	{nil, []any{"GET", "k"}, []string{"0:keymiss:k"}},
	{[][]any{{"SET", "k", "v"}}, []any{"GET", "k"}, nil},
	{[][]any{{"RPUSH", "k", "v"}}, []any{"GET", "k"}, nil}, // WRONGTYPE: the key is there
	{nil, []any{"GETRANGE", "k", "0", "1"}, []string{"0:keymiss:k"}},
	{nil, []any{"STRLEN", "k"}, []string{"0:keymiss:k"}},
	{[][]any{{"SET", "b", "1"}}, []any{"MGET", "a", "b", "c"}, []string{"0:keymiss:a", "0:keymiss:c"}},
	{nil, []any{"MGET", "a", "a"}, []string{"0:keymiss:a", "0:keymiss:a"}},
	{nil, []any{"GETSET", "k", "v"}, []string{"0:keymiss:k", "0:new:k", "0:set:k"}},
	{nil, []any{"SET", "k", "v", "GET"}, []string{"0:keymiss:k", "0:new:k", "0:set:k"}},
	{nil, []any{"GETDEL", "k"}, []string{"0:keymiss:k"}},
	{nil, []any{"GETEX", "k", "EX", "100"}, []string{"0:keymiss:k"}},
	{nil, []any{"INCR", "k"}, []string{"0:new:k", "0:incrby:k"}},
	{nil, []any{"APPEND", "k", "x"}, []string{"0:new:k", "0:append:k"}},
	{[][]any{{"SET", "a", "x"}}, []any{"LCS", "a", "b"}, []string{"0:keymiss:b"}},
	{nil, []any{"GETBIT", "b", "1"}, []string{"0:keymiss:b"}},
	{nil, []any{"BITCOUNT", "b"}, []string{"0:keymiss:b"}},
	{nil, []any{"BITPOS", "b", "1"}, []string{"0:keymiss:b"}},
	{nil, []any{"BITFIELD_RO", "b", "GET", "u8", "0"}, []string{"0:keymiss:b"}},
	{nil, []any{"BITOP", "AND", "d", "a", "b"}, []string{"0:keymiss:a", "0:keymiss:b"}},

	// Generic: EXISTS, TYPE and the TTL family look keys up for reading too; OBJECT does not.
	{[][]any{{"SET", "b", "1"}}, []any{"EXISTS", "a", "b", "c"}, []string{"0:keymiss:a", "0:keymiss:c"}},
	{nil, []any{"TOUCH", "a", "b"}, []string{"0:keymiss:a", "0:keymiss:b"}},
	{nil, []any{"TYPE", "k"}, []string{"0:keymiss:k"}},
	{nil, []any{"TTL", "k"}, []string{"0:keymiss:k"}},
	{nil, []any{"PTTL", "k"}, []string{"0:keymiss:k"}},
	{nil, []any{"EXPIRETIME", "k"}, []string{"0:keymiss:k"}},
	{nil, []any{"OBJECT", "ENCODING", "k"}, nil},
	{nil, []any{"OBJECT", "REFCOUNT", "k"}, nil},
	{nil, []any{"SCAN", "0"}, nil},
	{nil, []any{"DEL", "k"}, nil},
	{nil, []any{"EXPIRE", "k", "100"}, nil},
	{nil, []any{"COPY", "a", "b"}, []string{"0:keymiss:a"}},
	{[][]any{{"SELECT", "3"}}, []any{"GET", "k"}, []string{"3:keymiss:k"}},
	{[][]any{{"SELECT", "0"}}, []any{"SORT", "l"}, []string{"0:keymiss:l"}},
	{[][]any{{"RPUSH", "l", "1", "2"}}, []any{"SORT", "l", "BY", "w_*", "GET", "o_*"}, []string{"0:keymiss:w_1", "0:keymiss:w_2", "0:keymiss:o_1", "0:keymiss:o_2"}},
	{nil, []any{"EVAL", "return redis.call('GET', KEYS[1])", "1", "k"}, []string{"0:keymiss:k"}},

	// Hashes.
	{nil, []any{"HGET", "h", "f"}, []string{"0:keymiss:h"}},
	{nil, []any{"HGETALL", "h"}, []string{"0:keymiss:h"}},
	{nil, []any{"HEXISTS", "h", "f"}, []string{"0:keymiss:h"}},
	{nil, []any{"HLEN", "h"}, []string{"0:keymiss:h"}},
	{[][]any{{"HSET", "h", "f", "v"}}, []any{"HGET", "h", "g"}, nil}, // a missing field is no miss
	{nil, []any{"HDEL", "h", "f"}, nil},
	{nil, []any{"HINCRBY", "h", "f", "1"}, []string{"0:new:h", "0:hincrby:h"}},

	// Lists.
	{nil, []any{"LRANGE", "l", "0", "-1"}, []string{"0:keymiss:l"}},
	{nil, []any{"LLEN", "l"}, []string{"0:keymiss:l"}},
	{nil, []any{"LINDEX", "l", "0"}, []string{"0:keymiss:l"}},
	{nil, []any{"LPOS", "l", "a"}, []string{"0:keymiss:l"}},
	{nil, []any{"LPOP", "l"}, nil},
	{nil, []any{"LMOVE", "l", "m", "LEFT", "RIGHT"}, nil},
	{nil, []any{"LPUSHX", "l", "a"}, nil},

	// Sets.
	{nil, []any{"SMEMBERS", "s"}, []string{"0:keymiss:s"}},
	{nil, []any{"SISMEMBER", "s", "a"}, []string{"0:keymiss:s"}},
	{nil, []any{"SCARD", "s"}, []string{"0:keymiss:s"}},
	{nil, []any{"SRANDMEMBER", "s", "2"}, []string{"0:keymiss:s"}},
	{[][]any{{"SADD", "a", "1"}}, []any{"SUNION", "a", "b", "c"}, []string{"0:keymiss:b", "0:keymiss:c"}},
	{nil, []any{"SINTER", "a", "b"}, []string{"0:keymiss:a", "0:keymiss:b"}},
	{nil, []any{"SINTERSTORE", "d", "a", "b"}, []string{"0:keymiss:a", "0:keymiss:b"}},
	{nil, []any{"SREM", "s", "a"}, nil},
	{nil, []any{"SPOP", "s"}, nil},
	{nil, []any{"SMOVE", "a", "b", "x"}, nil},

	// Sorted sets and geo.
	{nil, []any{"ZRANGE", "z", "0", "-1"}, []string{"0:keymiss:z"}},
	{nil, []any{"ZSCORE", "z", "a"}, []string{"0:keymiss:z"}},
	{nil, []any{"ZCARD", "z"}, []string{"0:keymiss:z"}},
	{nil, []any{"ZRANK", "z", "a"}, []string{"0:keymiss:z"}},
	{nil, []any{"ZUNION", "2", "a", "b"}, []string{"0:keymiss:a", "0:keymiss:b"}},
	{nil, []any{"ZUNIONSTORE", "d", "2", "a", "b"}, []string{"0:keymiss:a", "0:keymiss:b"}},
	{nil, []any{"ZRANGESTORE", "d", "z", "0", "-1"}, []string{"0:keymiss:z"}},
	{nil, []any{"ZPOPMIN", "z"}, nil},
	{nil, []any{"ZPOPMIN", "z", "0"}, nil},
	{nil, []any{"ZREM", "z", "a"}, nil},
	{nil, []any{"GEOPOS", "g", "a"}, []string{"0:keymiss:g"}},
	{nil, []any{"GEODIST", "g", "a", "b"}, []string{"0:keymiss:g"}},
	{nil, []any{"GEOSEARCH", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "10", "km"}, []string{"0:keymiss:g"}},

	// HyperLogLog: PFCOUNT and PFMERGE read every key, PFMERGE's destination first.
	{nil, []any{"PFCOUNT", "h"}, []string{"0:keymiss:h"}},
	{nil, []any{"PFCOUNT", "a", "b"}, []string{"0:keymiss:a", "0:keymiss:b"}},
	{[][]any{{"PFADD", "a", "x"}}, []any{"PFMERGE", "d", "a", "b"}, []string{"0:keymiss:d", "0:keymiss:b", "0:new:d", "0:pfadd:d"}},
	{nil, []any{"PFADD", "h", "a"}, []string{"0:new:h", "0:pfadd:h"}},
	{[][]any{{"PFADD", "h", "a"}}, []any{"PFADD", "h", "a"}, nil},

	// Streams: XREAD looks each key up twice.
	{nil, []any{"XRANGE", "x", "-", "+"}, []string{"0:keymiss:x"}},
	{nil, []any{"XLEN", "x"}, []string{"0:keymiss:x"}},
	{[][]any{{"XADD", "a", "1-1", "f", "v"}}, []any{"XREAD", "STREAMS", "a", "b", "0", "0"}, []string{"0:keymiss:b", "0:keymiss:b"}},
	{nil, []any{"XINFO", "STREAM", "x"}, []string{"0:keymiss:x"}},
	{nil, []any{"XACK", "x", "g", "1-1"}, []string{"0:keymiss:x"}},
	{nil, []any{"XPENDING", "x", "g"}, []string{"0:keymiss:x"}},
	{nil, []any{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"}, []string{"0:keymiss:x"}},
	{nil, []any{"XDEL", "x", "1-1"}, nil},
	{nil, []any{"XTRIM", "x", "MAXLEN", "1"}, nil},
}

// TestNotifyEventTable runs notifyTable: each command's keyspace events, in order, on the
// __keyevent channels of every database.
func TestNotifyEventTable(t *testing.T) {
	runNotifyTable(t, "EAn", notifyTable, false)
}

// TestNotifyKeymissTable runs notifyKeymissTable with class m on as well. Its commands may
// answer an error (WRONGTYPE, NOGROUP, no such key): what it checks is their events.
func TestNotifyKeymissTable(t *testing.T) {
	runNotifyTable(t, "EAnm", notifyKeymissTable, true)
}

// runNotifyTable runs the rows of table with notify-keyspace-events set to flags; with errOK a
// command may answer an error other than an unknown command's.
func runNotifyTable(t *testing.T, flags string, table []notifyCase, errOK bool) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	// One connection runs setup and commands (SELECT sticks to it).
	c := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 1, MaxRetries: -1})
	defer c.Close()
	until := eventsUntilMarkerFlags(t, s, c, flags)
	for _, tc := range table {
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for _, s := range tc.setup {
			if err := c.Do(ctx, s...).Err(); err != nil && err != redis.Nil {
				t.Fatalf("%v: setup %v: %v", tc.cmd, s, err)
			}
		}
		until()
		if err := c.Do(ctx, tc.cmd...).Err(); err != nil && err != redis.Nil &&
			(!errOK || strings.HasPrefix(err.Error(), "ERR unknown command")) {
			t.Fatalf("%v: %v", tc.cmd, err)
		}
		if got := until(); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%v (after %v): events %q, want %q", tc.cmd, tc.setup, got, tc.want)
		}
	}
}

// eventsUntilMarker turns on every class of events (n included) on s, subscribes to the
// __keyevent channels of every database and returns a function that publishes a marker with c
// and returns the events (db:event:key) received before it.
func eventsUntilMarker(t *testing.T, s *harness.Server, c *redis.Client) func() []string {
	return eventsUntilMarkerFlags(t, s, c, "EAn")
}

// eventsUntilMarkerFlags is eventsUntilMarker with notify-keyspace-events set to flags.
func eventsUntilMarkerFlags(t *testing.T, s *harness.Server, c *redis.Client, flags string) func() []string {
	if err := c.ConfigSet(harness.Ctx(t), "notify-keyspace-events", flags).Err(); err != nil {
		t.Fatal(err)
	}
	return untilMarker(t, subscribeEvents(t, s, "__keyevent@*"), c, func(m *redis.Message) string {
		db, ev, _ := strings.Cut(strings.TrimPrefix(m.Channel, "__keyevent@"), "__:")
		return db + ":" + ev + ":" + m.Payload
	})
}

// subscribeEvents subscribes a client of s to the channel patterns, confirmed.
func subscribeEvents(t *testing.T, s *harness.Server, patterns ...string) *redis.PubSub {
	ctx := harness.Ctx(t)
	ps := s.Client().PSubscribe(ctx, patterns...)
	t.Cleanup(func() { ps.Close() })
	for range patterns {
		if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return ps
}

// untilMarker returns a function that publishes a marker with c and returns the messages ps
// received before it, each as format writes it.
func untilMarker(t *testing.T, ps *redis.PubSub, c *redis.Client, format func(*redis.Message) string) func() []string {
	ctx := harness.Ctx(t)
	return func() []string {
		t.Helper()
		if err := c.Publish(ctx, "__keyevent@99__:marker", "m").Err(); err != nil {
			t.Fatal(err)
		}
		var out []string
		for {
			m, err := ps.ReceiveTimeout(ctx, 5*time.Second)
			if err != nil {
				t.Fatalf("after %v: %v", out, err)
			}
			msg, ok := m.(*redis.Message)
			if !ok {
				continue
			}
			if msg.Channel == "__keyevent@99__:marker" {
				return out
			}
			out = append(out, format(msg))
		}
	}
}

// channelPayload writes a message as channel=payload.
func channelPayload(m *redis.Message) string { return m.Channel + "=" + m.Payload }

// TestNotifyBlockedServed checks the events of a blocking pop served after it blocked: the
// push's events, then the pop's (and the push of BLMOVE's destination), then "del" when the
// source is left empty, as Redis's serveClientBlockedOnList and serveClientBlockedOnSortedSet.
func TestNotifyBlockedServed(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 1, MaxRetries: -1})
	defer c.Close()
	until := eventsUntilMarker(t, s, c)
	for _, tc := range []struct {
		block, push []any
		want        []string
	}{
		{[]any{"BLPOP", "l", "5"}, []any{"RPUSH", "l", "a"}, []string{"0:new:l", "0:rpush:l", "0:lpop:l", "0:del:l"}},
		{[]any{"BRPOP", "l", "5"}, []any{"RPUSH", "l", "a", "b"}, []string{"0:new:l", "0:rpush:l", "0:rpop:l"}},
		{[]any{"BLMPOP", "5", "1", "l", "LEFT", "COUNT", "3"}, []any{"RPUSH", "l", "a", "b"}, []string{"0:new:l", "0:rpush:l", "0:lpop:l", "0:del:l"}},
		{[]any{"BLMOVE", "l", "m", "LEFT", "RIGHT", "5"}, []any{"RPUSH", "l", "a"}, []string{"0:new:l", "0:rpush:l", "0:new:m", "0:rpush:m", "0:lpop:l", "0:del:l"}},
		{[]any{"BRPOPLPUSH", "l", "m", "5"}, []any{"LPUSH", "l", "a", "b"}, []string{"0:new:l", "0:lpush:l", "0:new:m", "0:lpush:m", "0:rpop:l"}},
		{[]any{"BZPOPMIN", "z", "5"}, []any{"ZADD", "z", "1", "a"}, []string{"0:new:z", "0:zadd:z", "0:zpopmin:z", "0:del:z"}},
		{[]any{"BZMPOP", "5", "1", "z", "MAX"}, []any{"ZADD", "z", "1", "a", "2", "b"}, []string{"0:new:z", "0:zadd:z", "0:zpopmax:z"}},
	} {
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		until()
		b := s.Client()
		done := make(chan error, 1)
		go func() { done <- b.Do(ctx, tc.block...).Err() }()
		waitBlocked(t, checker{t, ctx, c}, 1)
		if err := c.Do(ctx, tc.push...).Err(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%v: %v", tc.block, err)
		}
		b.Close()
		if got := until(); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%v served by %v: events %q, want %q", tc.block, tc.push, got, tc.want)
		}
	}
}

// keyEvents subscribes to the keyspace and keyevent channels of every database of s and
// returns a function that publishes a marker with c and returns the messages (channel=payload)
// received before it.
func keyEvents(t *testing.T, s *harness.Server, c *redis.Client) func() []string {
	return untilMarker(t, subscribeEvents(t, s, "__keyspace@*", "__keyevent@*"), c, channelPayload)
}

// TestNotifyKeymissClasses checks which notify-keyspace-events values publish "keymiss": only
// those with m and K or E (A does not include m), on the channels K and E name; and that reads
// inside MULTI publish them too.
func TestNotifyKeymissClasses(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 1, MaxRetries: -1})
	defer c.Close()
	until := keyEvents(t, s, c)
	for _, tc := range []struct {
		flags string
		want  []string
	}{
		{"", nil},
		{"KEA", nil},
		{"KEAn", nil},
		{"m", nil}, // neither K nor E
		{"Em", []string{"__keyevent@0__:keymiss=k"}},
		{"Km", []string{"__keyspace@0__:k=keymiss"}},
		{"KEm", []string{"__keyspace@0__:k=keymiss", "__keyevent@0__:keymiss=k"}},
	} {
		if err := c.ConfigSet(ctx, "notify-keyspace-events", tc.flags).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, "k").Err(); err != redis.Nil {
			t.Fatalf("GET k: %v", err)
		}
		if got := until(); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("flags %q: GET of a missing key published %q, want %q", tc.flags, got, tc.want)
		}
	}
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "a")
		p.MGet(ctx, "b", "c")
		p.Set(ctx, "d", "1", 0)
		return nil
	}); err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	want := "__keyspace@0__:a=keymiss __keyevent@0__:keymiss=a __keyspace@0__:b=keymiss __keyevent@0__:keymiss=b " +
		"__keyspace@0__:c=keymiss __keyevent@0__:keymiss=c"
	if got := until(); strings.Join(got, " ") != want {
		t.Errorf("MULTI GET a, MGET b c, SET d, EXEC published %q, want %q", got, want)
	}
}

// TestNotifyKeymissPipelinedGets checks the GETs an event loop answers in a batch (a pipeline
// of many GETs, some of missing keys): one "keymiss" per GET that missed,
// in order, and none for those that found their key.
func TestNotifyKeymissPipelinedGets(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 1, MaxRetries: -1})
	defer c.Close()
	const n = 300
	p := c.Pipeline()
	for i := 0; i < n; i += 3 {
		p.Set(ctx, fmt.Sprint("k", i), "v", 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	until := keyEvents(t, s, c)
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "Em").Err(); err != nil {
		t.Fatal(err)
	}
	until()
	for round := 0; round < 2; round++ {
		p = c.Pipeline()
		var want []string
		for i := 0; i < n; i++ {
			k := fmt.Sprint("k", i)
			p.Get(ctx, k)
			if i%3 != 0 {
				want = append(want, "__keyevent@0__:keymiss="+k)
			}
		}
		if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		got := until()
		if len(got) != len(want) {
			t.Fatalf("round %d: %d GETs of which %d missed published %d keymiss events", round, n, len(want), len(got))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("round %d: keymiss events out of order:\n%q\nwant\n%q", round, got, want)
		}
	}
	// With m off the same pipeline publishes nothing.
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		t.Fatal(err)
	}
	p = c.Pipeline()
	for i := 0; i < n; i++ {
		p.Get(ctx, fmt.Sprint("k", i))
	}
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	if got := until(); len(got) != 0 {
		t.Fatalf("with KEA the GETs published %q", got)
	}
}
