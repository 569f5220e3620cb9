package test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

// Client-side caching (CLIENT TRACKING), checked on the wire: invalidations are pushes (RESP3)
// or messages on __redis__:invalidate (RESP2 with REDIRECT), which go-redis does not surface.

// trackingConn is a raw connection in RESP3 with tracking turned on with opts.
func trackingConn(t *testing.T, s *harness.Server, opts ...string) *rawConn {
	c := newRaw(t, s)
	c.send("HELLO", "3")
	c.reply()
	c.send(append([]string{"CLIENT", "TRACKING", "ON"}, opts...)...)
	c.expect("+OK")
	return c
}

// expectQuiet checks that nothing was sent to c before the reply to a PING.
func (c *rawConn) expectQuiet() {
	c.t.Helper()
	c.send("PING")
	c.expect("+PONG")
}

func TestTrackingRESP3Invalidate(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	w := s.Client()
	c := trackingConn(t, s)

	w.Set(ctx, "k", "v1", 0)
	c.send("GET", "k")
	c.expect("v1")
	c.send("GET", "missing")
	c.expect("_")
	w.Set(ctx, "k", "v2", 0)
	c.expect(">2 invalidate *1 k")
	// Told once per read: a second write sends nothing until the key is read again.
	w.Set(ctx, "k", "v3", 0)
	c.expectQuiet()
	// A key never read is not reported; a missing key that was read is, when it is created.
	w.Set(ctx, "other", "x", 0)
	w.Set(ctx, "missing", "now", 0)
	c.expect(">2 invalidate *1 missing")
	c.expectQuiet()

	// Reads of other types, and a write of another command, are tracked too.
	w.HSet(ctx, "h", "f", "1")
	c.send("HGET", "h", "f")
	c.expect("1")
	w.Del(ctx, "h")
	c.expect(">2 invalidate *1 h")

	// The client's own write, without NOLOOP: its reply, then the invalidation.
	c.send("GET", "k")
	c.expect("v3")
	c.send("SET", "k", "mine")
	c.expect("+OK")
	c.expect(">2 invalidate *1 k")

	// Expiry.
	w.Set(ctx, "e", "v", 200*time.Millisecond)
	c.send("GET", "e")
	c.expect("v")
	c.expect(">2 invalidate *1 e")

	// A flush: a null invalidation, whatever was read.
	c.send("GET", "k")
	c.expect("mine")
	w.FlushAll(ctx)
	c.expect(">2 invalidate _")
	w.FlushDB(ctx)
	c.expect(">2 invalidate _")

	// The client shows as tracking; OFF ends it.
	info := w.Do(ctx, "CLIENT", "LIST").String()
	if !strings.Contains(info, "flags=t ") {
		t.Fatalf("CLIENT LIST does not show the tracking client: %s", info)
	}
	c.send("CLIENT", "TRACKING", "OFF")
	c.expect("+OK")
	c.send("GET", "k")
	c.expect("_")
	w.Set(ctx, "k", "again", 0)
	c.expectQuiet()
}

func TestTrackingRedirectRESP2(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	w := s.Client()
	sub := newRaw(t, s)
	sub.send("CLIENT", "ID")
	subID := strings.TrimPrefix(sub.reply(), ":")
	sub.send("SUBSCRIBE", "__redis__:invalidate")
	sub.expect("*3 subscribe __redis__:invalidate :1")

	c := newRaw(t, s)
	c.send("CLIENT", "TRACKING", "ON", "REDIRECT", subID)
	c.expect("+OK")
	c.send("CLIENT", "GETREDIR")
	c.expect(":" + subID)
	c.send("CLIENT", "TRACKINGINFO")
	c.expect("*6 flags *1 on redirect :" + subID + " prefixes *0")

	c.send("GET", "k")
	c.expect("(nil)")
	c.send("MGET", "a", "b")
	c.expect("*2 (nil) (nil)")
	w.Set(ctx, "k", "1", 0)
	sub.expect("*3 message __redis__:invalidate *1 k")
	w.MSet(ctx, "b", "1", "zz", "2")
	sub.expect("*3 message __redis__:invalidate *1 b")
	// The RESP2 client itself gets nothing on its connection.
	c.expectQuiet()
	w.FlushAll(ctx)
	sub.expect("*3 message __redis__:invalidate (nil)")

	// The redirect's connection goes away: the client is marked (R), and told nothing.
	c.send("GET", "k")
	c.expect("(nil)")
	sub.nc.Close()
	harness.Eventually(t, 5*time.Second, "the subscriber's connection is gone", func() bool {
		return !strings.Contains(w.ClientList(ctx).Val(), "id="+subID+" ")
	})
	w.Set(ctx, "k", "2", 0)
	c.expectQuiet()
	c.send("CLIENT", "INFO")
	if line := c.reply(); !strings.Contains(line, "flags=tR ") || !strings.Contains(line, "redir="+subID+" ") {
		t.Fatalf("CLIENT INFO after the redirect broke: %s", line)
	}
	c.send("CLIENT", "TRACKINGINFO")
	c.expect("*6 flags *2 on broken_redirect redirect :" + subID + " prefixes *0")
}

func TestTrackingBroadcast(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	w := s.Client()
	c := trackingConn(t, s, "BCAST", "PREFIX", "user:", "PREFIX", "obj:")
	c.send("CLIENT", "TRACKINGINFO")
	c.expect("%3 flags ~2 on bcast redirect :0 prefixes *2 obj: user:")
	// Keys are reported without being read.
	w.Set(ctx, "user:1", "a", 0)
	c.expect(">2 invalidate *1 user:1")
	w.Set(ctx, "other", "a", 0)
	w.Set(ctx, "obj:7", "a", 0)
	c.expect(">2 invalidate *1 obj:7")
	w.Set(ctx, "user:1", "b", 0)
	c.expect(">2 invalidate *1 user:1")
	c.expectQuiet()
	if list := w.ClientList(ctx).Val(); !strings.Contains(list, "flags=tB ") {
		t.Fatalf("CLIENT LIST with a BCAST client: %s", list)
	}
	// Prefixes may be added, not changed to overlap.
	c.send("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "new:")
	c.expect("+OK")
	w.Set(ctx, "new:1", "x", 0)
	c.expect(">2 invalidate *1 new:1")
	c.send("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user")
	c.expect("-ERR Prefix 'user' overlaps with an existing prefix 'user:'. Prefixes for a single client must not overlap.")

	// BCAST without a prefix: every key.
	all := trackingConn(t, s, "BCAST")
	w.Set(ctx, "anything", "x", 0)
	all.expect(">2 invalidate *1 anything")
}

func TestTrackingOptInOptOut(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	w := s.Client()
	c := trackingConn(t, s, "OPTIN")
	c.send("GET", "a")
	c.expect("_")
	c.send("CLIENT", "CACHING", "YES")
	c.expect("+OK")
	c.send("CLIENT", "TRACKINGINFO")
	c.expect("%3 flags ~3 on optin caching-yes redirect :0 prefixes *0")
	c.send("GET", "b")
	c.expect("_")
	// CACHING YES held for one command only.
	c.send("GET", "c")
	c.expect("_")
	w.Set(ctx, "a", "1", 0)
	w.Set(ctx, "c", "1", 0)
	w.Set(ctx, "b", "1", 0)
	c.expect(">2 invalidate *1 b")
	c.expectQuiet()

	o := trackingConn(t, s, "OPTOUT")
	o.send("CLIENT", "CACHING", "NO")
	o.expect("+OK")
	o.send("GET", "x")
	o.expect("_")
	o.send("GET", "y")
	o.expect("_")
	w.Set(ctx, "x", "1", 0)
	w.Set(ctx, "y", "1", 0)
	o.expect(">2 invalidate *1 y")
	o.expectQuiet()
}

func TestTrackingNoLoop(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	w := s.Client()
	c := trackingConn(t, s, "NOLOOP")
	c.send("GET", "mine")
	c.expect("_")
	c.send("GET", "theirs")
	c.expect("_")
	c.send("SET", "mine", "1")
	c.expect("+OK")
	c.expectQuiet()
	w.Set(ctx, "theirs", "1", 0)
	c.expect(">2 invalidate *1 theirs")

	b := trackingConn(t, s, "BCAST", "NOLOOP")
	b.send("SET", "k1", "x")
	b.expect("+OK")
	b.expectQuiet()
	w.Set(ctx, "k2", "x", 0)
	b.expect(">2 invalidate *1 k2")
}

func TestTrackingTableMaxKeys(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	w := s.Client()
	if err := w.ConfigSet(ctx, "tracking-table-max-keys", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c := trackingConn(t, s)
	c.send("GET", "a")
	c.expect("_")
	c.send("GET", "b")
	c.expect("_")
	// Two keys in a table of one: one of them is forgotten, with its invalidation.
	got := c.reply()
	if got != ">2 invalidate *1 a" && got != ">2 invalidate *1 b" {
		t.Fatalf("eviction from the tracking table: %q", got)
	}
	if v := w.ConfigGet(ctx, "tracking-table-max-keys").Val()["tracking-table-max-keys"]; v != "1" {
		t.Fatalf("CONFIG GET tracking-table-max-keys = %q", v)
	}
}

func TestTrackingResetAndErrors(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	w := s.Client()
	c := s.Client()
	errOf := func(args ...any) string {
		t.Helper()
		err := c.Do(ctx, args...).Err()
		if err == nil {
			t.Fatalf("%v: no error", args)
		}
		return err.Error()
	}
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"CLIENT", "TRACKING", "MAYBE"}, "ERR syntax error"},
		{[]any{"CLIENT", "TRACKING", "ON", "FOO"}, "ERR syntax error"},
		{[]any{"CLIENT", "TRACKING", "ON", "PREFIX", "a"}, "ERR PREFIX option requires BCAST mode to be enabled"},
		{[]any{"CLIENT", "TRACKING", "ON", "REDIRECT", "999999"}, "ERR The client ID you want redirect to does not exist"},
		{[]any{"CLIENT", "TRACKING", "ON", "REDIRECT", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"}, "ERR OPTIN and OPTOUT are not compatible with BCAST"},
		{[]any{"CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"}, "ERR You can't specify both OPTIN mode and OPTOUT mode"},
		{[]any{"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a"},
			"ERR Prefix 'ab' overlaps with another provided prefix 'a'. Prefixes for a single client must not overlap."},
		{[]any{"CLIENT", "CACHING", "YES"}, "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"},
		{[]any{"CLIENT", "TRACKING"}, "ERR wrong number of arguments for 'client|tracking' command"},
	} {
		if got := errOf(tc.args...); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
	if n := c.Do(ctx, "CLIENT", "GETREDIR").Val(); n != int64(-1) {
		t.Fatalf("CLIENT GETREDIR without tracking: %v", n)
	}
	id := w.ClientID(ctx).Val()
	if err := c.Do(ctx, "CLIENT", "TRACKING", "ON", "REDIRECT", strconv.FormatInt(id, 10), "OPTIN").Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"CLIENT", "TRACKING", "ON", "BCAST"}, "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."},
		{[]any{"CLIENT", "TRACKING", "ON", "OPTOUT"}, "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."},
		{[]any{"CLIENT", "CACHING", "NO"}, "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."},
		{[]any{"CLIENT", "CACHING", "MAYBE"}, "ERR syntax error"},
		{[]any{"CLIENT", "TRACKING", "ON", "REDIRECT", id, "REDIRECT", id}, "ERR A client can only redirect to a single other client"},
	} {
		if got := errOf(tc.args...); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
	if n := c.Do(ctx, "CLIENT", "GETREDIR").Val(); n != id {
		t.Fatalf("CLIENT GETREDIR: %v, want %d", n, id)
	}
	// RESET turns tracking off.
	r := newRaw(t, s)
	r.send("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p")
	r.expect("+OK")
	r.send("RESET")
	r.expect("+RESET")
	r.send("CLIENT", "GETREDIR")
	r.expect(":-1")
	r.send("CLIENT", "TRACKINGINFO")
	r.expect("*6 flags *1 off redirect :-1 prefixes *0")
	// And so does closing the connection: a tracking client that went away costs nothing.
	r2 := trackingConn(t, s, "BCAST")
	r2.nc.Close()
	harness.Eventually(t, 5*time.Second, "the tracking client is gone", func() bool {
		return !strings.Contains(w.ClientList(ctx).Val(), "flags=tB")
	})
	if err := w.Set(ctx, "after", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
}
