package test

// Pub/sub across replication: a follower publishes the keyspace events of the commands it
// applies from its primary's stream, and delivers to its own subscribers the messages PUBLISHed
// on its primary, in their place among the writes, as a Redis replica does.

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

// receiveN returns the next n messages of ps as channel=payload.
func receiveN(t *testing.T, ps *redis.PubSub, n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		m, err := ps.ReceiveTimeout(harness.Ctx(t), 10*time.Second)
		if err != nil {
			t.Fatalf("after %q: %v", out, err)
		}
		if msg, ok := m.(*redis.Message); ok {
			out = append(out, msg.Channel+"="+msg.Payload)
		}
	}
	return out
}

// TestReplNotifyOnFollower checks the keyspace events a follower publishes for what it applies:
// writes, an emptied list's del, a MULTI of several keys, and the primary's removal of an
// expired key, which reaches the follower as a DEL (so its event there is del, as on a Redis
// replica).
func TestReplNotifyOnFollower(t *testing.T) {
	_, _, pc, fc := replPair(t)
	ctx := harness.Ctx(t)
	if err := fc.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		t.Fatal(err)
	}
	ps := fc.PSubscribe(ctx, "__keyevent@*")
	defer ps.Close()
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	pc.Set(ctx, "a", "1", 0)
	pc.RPush(ctx, "l", "x")
	pc.LPop(ctx, "l")
	if _, err := pc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, "h", "f", "v")
		p.Incr(ctx, "n")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pc.Do(ctx, "SELECT", "0")
	pc.Set(ctx, "e", "v", 100*time.Millisecond)
	want := []string{
		"__keyevent@0__:set=a", "__keyevent@0__:rpush=l", "__keyevent@0__:lpop=l", "__keyevent@0__:del=l",
		"__keyevent@0__:hset=h", "__keyevent@0__:incrby=n",
		"__keyevent@0__:set=e", "__keyevent@0__:expire=e",
		"__keyevent@0__:del=e", // the primary's expiry, applied
	}
	got := receiveN(t, ps, len(want))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("follower's events\n%q\nwant\n%q", got, want)
	}
	if n := fc.Exists(ctx, "e").Val(); n != 0 {
		t.Fatalf("EXISTS e on the follower = %d after its del event", n)
	}
}

// TestReplPublishToFollower checks that a message PUBLISHed on the primary reaches subscribers
// on the follower, in order with the writes around it (their keyspace events), and that an
// SPUBLISH and a PUBLISH inside MULTI do too.
func TestReplPublishToFollower(t *testing.T) {
	_, _, pc, fc := replPair(t)
	ctx := harness.Ctx(t)
	if err := fc.ConfigSet(ctx, "notify-keyspace-events", "E$").Err(); err != nil {
		t.Fatal(err)
	}
	ps := fc.Subscribe(ctx, "news", "__keyevent@0__:set")
	defer ps.Close()
	for i := 0; i < 2; i++ {
		if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	sps := fc.SSubscribe(ctx, "shardnews")
	defer sps.Close()
	if _, err := sps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	pc.Set(ctx, "a", "1", 0)
	// Nobody listens on the primary: the message goes down the stream all the same.
	if n := pc.Publish(ctx, "news", "m1").Val(); n != 0 {
		t.Fatalf("PUBLISH on the primary reached %d subscribers there", n)
	}
	pc.Set(ctx, "b", "2", 0)
	pc.Publish(ctx, "news", "m2")
	if _, err := pc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Publish(ctx, "news", "m3")
		p.Set(ctx, "c", "3", 0)
		p.Publish(ctx, "news", "m4")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Publish(ctx, "news", "m5") // a MULTI that writes nothing
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pc.SPublish(ctx, "shardnews", "s1")
	want := []string{
		"__keyevent@0__:set=a", "news=m1", "__keyevent@0__:set=b", "news=m2",
		"news=m3", "__keyevent@0__:set=c", "news=m4", "news=m5",
	}
	got := receiveN(t, ps, len(want))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("follower's subscriber got\n%q\nwant\n%q", got, want)
	}
	m, err := sps.ReceiveTimeout(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if msg, ok := m.(*redis.Message); !ok || msg.Channel != "shardnews" || msg.Payload != "s1" {
		t.Fatalf("shard subscriber on the follower got %v", m)
	}
	// A PUBLISH on the follower itself reaches its own subscribers and goes nowhere else.
	if n := fc.Publish(ctx, "news", "local").Val(); n != 1 {
		t.Fatalf("PUBLISH on the follower reached %d subscribers, want 1", n)
	}
	if got := receiveN(t, ps, 1); got[0] != "news=local" {
		t.Fatalf("got %q", got)
	}
}

// TestReplKeymissOnFollower checks that a follower publishes "keymiss" for the reads its own
// clients make there (a GET answered in a batch, a command's read, EXISTS), as a Redis replica
// does, and none for the writes it applies from its primary.
func TestReplKeymissOnFollower(t *testing.T) {
	_, f, pc, fc := replPair(t)
	ctx := harness.Ctx(t)
	if err := fc.ConfigSet(ctx, "notify-keyspace-events", "Em").Err(); err != nil {
		t.Fatal(err)
	}
	until := untilMarker(t, subscribeEvents(t, f, "__keyevent@*"), fc, channelPayload)
	pc.Set(ctx, "a", "1", 0)
	pc.Incr(ctx, "n") // a write's lookup of a missing key states nothing, here or there
	waitInSync(t, pc, fc)
	p := fc.Pipeline()
	p.Get(ctx, "a")
	p.Get(ctx, "b")
	p.HGet(ctx, "h", "f")
	p.Exists(ctx, "a", "c")
	p.Get(ctx, "n")
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	// Nothing else came before the marker.
	want := []string{"__keyevent@0__:keymiss=b", "__keyevent@0__:keymiss=h", "__keyevent@0__:keymiss=c"}
	if got := until(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("follower's events\n%q\nwant\n%q", got, want)
	}
}

// TestReplNotifySetPastTime checks a follower's events for a SET whose time has already passed:
// set, expire, then del, as a Redis replica states when its primary's expiry of the key (here
// forced by the EXISTS) reaches it; Lavik's primary stores no such key and its follower states
// the del as it applies the SET.
func TestReplNotifySetPastTime(t *testing.T) {
	_, f, pc, fc := replPair(t)
	ctx := harness.Ctx(t)
	if err := fc.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		t.Fatal(err)
	}
	// The marker goes through the primary, so it reaches the follower after the SET.
	until := untilMarker(t, subscribeEvents(t, f, "__keyevent@*"), pc, channelPayload)
	if err := pc.Do(ctx, "SET", "s", "v", "PXAT", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if n := pc.Exists(ctx, "s").Val(); n != 0 {
		t.Fatalf("EXISTS s = %d after SET ... PXAT 1", n)
	}
	want := []string{"__keyevent@0__:set=s", "__keyevent@0__:expire=s", "__keyevent@0__:del=s"}
	if got := until(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("follower's events\n%q\nwant\n%q", got, want)
	}
	if n := fc.Exists(ctx, "s").Val(); n != 0 {
		t.Fatalf("EXISTS s on the follower = %d", n)
	}
}
