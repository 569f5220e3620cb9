package test

import (
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
