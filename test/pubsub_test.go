package test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

// rawConn is a RESP connection read line by line, for replies go-redis hides.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func newRaw(t *testing.T, s *harness.Server) *rawConn {
	nc := s.Conn()
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (c *rawConn) send(args ...string) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.nc.Write([]byte(b.String())); err != nil {
		c.t.Fatal(err)
	}
}

// reply reads one reply, flattened to its lines without the length headers of bulk strings.
func (c *rawConn) reply() string {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var out []string
	var read func()
	read = func() {
		line, err := c.r.ReadString('\n')
		if err != nil {
			c.t.Fatalf("reading a reply: %v (so far %q)", err, out)
		}
		line = strings.TrimRight(line, "\r\n")
		switch line[0] {
		case '*', '>', '%', '~':
			var n int
			fmt.Sscan(line[1:], &n)
			out = append(out, line[:1]+fmt.Sprint(n))
			if line[0] == '%' {
				n *= 2
			}
			for i := 0; i < n; i++ {
				read()
			}
		case '$':
			var n int
			fmt.Sscan(line[1:], &n)
			if n < 0 {
				out = append(out, "(nil)")
				return
			}
			buf := make([]byte, n+2)
			if _, err := ioReadFull(c.r, buf); err != nil {
				c.t.Fatal(err)
			}
			out = append(out, string(buf[:n]))
		default:
			out = append(out, line)
		}
	}
	read()
	return strings.Join(out, " ")
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (c *rawConn) expect(want string) {
	c.t.Helper()
	if got := c.reply(); got != want {
		c.t.Fatalf("reply %q, want %q", got, want)
	}
}

func TestPubSubSubscribeAndPublish(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	pub := s.Client()
	sub := s.Client().Subscribe(ctx, "news", "sport")
	defer sub.Close()
	for _, ch := range []string{"news", "sport"} {
		m, err := sub.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := m.(*redis.Subscription); !ok || s.Kind != "subscribe" || s.Channel != ch {
			t.Fatalf("confirmation %#v, want subscribe %s", m, ch)
		}
	}
	psub := s.Client().PSubscribe(ctx, "n*")
	defer psub.Close()
	if _, err := psub.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := pub.Publish(ctx, "news", "hello").Val(); n != 2 {
		t.Fatalf("PUBLISH news reached %d, want 2 (a channel and a pattern subscriber)", n)
	}
	if n := pub.Publish(ctx, "nothing", "x").Val(); n != 1 {
		t.Fatalf("PUBLISH nothing reached %d, want 1", n)
	}
	if n := pub.Publish(ctx, "weather", "x").Val(); n != 0 {
		t.Fatalf("PUBLISH weather reached %d, want 0", n)
	}
	m, err := sub.ReceiveMessage(ctx)
	if err != nil || m.Channel != "news" || m.Payload != "hello" {
		t.Fatalf("message %#v %v", m, err)
	}
	pm, err := psub.ReceiveMessage(ctx)
	if err != nil || pm.Channel != "news" || pm.Pattern != "n*" || pm.Payload != "hello" {
		t.Fatalf("pmessage %#v %v", pm, err)
	}
	pm, err = psub.ReceiveMessage(ctx)
	if err != nil || pm.Channel != "nothing" {
		t.Fatalf("second pmessage %#v %v", pm, err)
	}

	chans := pub.PubSubChannels(ctx, "*").Val()
	if strings.Join(chans, ",") != "news,sport" && strings.Join(chans, ",") != "sport,news" {
		t.Fatalf("PUBSUB CHANNELS = %v", chans)
	}
	if got := pub.PubSubChannels(ctx, "s*").Val(); len(got) != 1 || got[0] != "sport" {
		t.Fatalf("PUBSUB CHANNELS s* = %v", got)
	}
	ns := pub.PubSubNumSub(ctx, "news", "sport", "none").Val()
	if ns["news"] != 1 || ns["sport"] != 1 || ns["none"] != 0 || len(ns) != 3 {
		t.Fatalf("PUBSUB NUMSUB = %v", ns)
	}
	if n := pub.PubSubNumPat(ctx).Val(); n != 1 {
		t.Fatalf("PUBSUB NUMPAT = %d", n)
	}
	info := pub.Info(ctx, "stats").Val()
	for _, want := range []string{"pubsub_channels:2", "pubsub_patterns:1", "pubsubshard_channels:0"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO stats lacks %s", want)
		}
	}
	list := pub.ClientList(ctx).Val()
	if !strings.Contains(list, "flags=P db=0 sub=2 psub=0 ssub=0") || !strings.Contains(list, "flags=P db=0 sub=0 psub=1 ssub=0") {
		t.Fatalf("CLIENT LIST does not show the subscribers:\n%s", list)
	}
	// Closing a subscriber drops its subscriptions.
	sub.Close()
	harness.Eventually(t, 5*time.Second, "subscriptions dropped at close", func() bool {
		return len(pub.PubSubChannels(ctx, "*").Val()) == 0
	})
}

func TestPubSubShardChannels(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	pub := s.Client()
	sub := s.Client().SSubscribe(ctx, "orders")
	defer sub.Close()
	if _, err := sub.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// Shard channels are their own namespace.
	if n := pub.Publish(ctx, "orders", "x").Val(); n != 0 {
		t.Fatalf("PUBLISH to a shard channel's name reached %d", n)
	}
	if n := pub.SPublish(ctx, "orders", "o1").Val(); n != 1 {
		t.Fatalf("SPUBLISH reached %d, want 1", n)
	}
	m, err := sub.ReceiveMessage(ctx)
	if err != nil || m.Channel != "orders" || m.Payload != "o1" {
		t.Fatalf("smessage %#v %v", m, err)
	}
	if got := pub.PubSubShardChannels(ctx, "*").Val(); len(got) != 1 || got[0] != "orders" {
		t.Fatalf("PUBSUB SHARDCHANNELS = %v", got)
	}
	if ns := pub.PubSubShardNumSub(ctx, "orders", "x").Val(); ns["orders"] != 1 || ns["x"] != 0 {
		t.Fatalf("PUBSUB SHARDNUMSUB = %v", ns)
	}
	if len(pub.PubSubChannels(ctx, "*").Val()) != 0 {
		t.Fatal("a shard channel is listed by PUBSUB CHANNELS")
	}
}

// TestPubSubRESP2Mode checks the replies of a RESP2 subscriber byte for byte: confirmations,
// the commands refused in subscribe mode, PING's shape, the unsubscribe-all forms and RESET.
func TestPubSubRESP2Mode(t *testing.T) {
	s := harness.Start(t)
	c := newRaw(t, s)
	c.send("SUBSCRIBE", "a", "b")
	c.expect("*3 subscribe a :1")
	c.expect("*3 subscribe b :2")
	c.send("PSUBSCRIBE", "p*")
	c.expect("*3 psubscribe p* :3")
	c.send("SSUBSCRIBE", "s1")
	c.expect("*3 ssubscribe s1 :1")
	c.send("GET", "k")
	c.expect("-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	c.send("CLIENT", "LIST")
	c.expect("-ERR Can't execute 'client|list': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	c.send("PING")
	c.expect("*2 pong ")
	c.send("PING", "hi")
	c.expect("*2 pong hi")
	c.send("UNSUBSCRIBE", "nope")
	c.expect("*3 unsubscribe nope :3")
	c.send("UNSUBSCRIBE")
	got := []string{c.reply(), c.reply()}
	if !(got[0] == "*3 unsubscribe a :2" && got[1] == "*3 unsubscribe b :1" || got[0] == "*3 unsubscribe b :2" && got[1] == "*3 unsubscribe a :1") {
		t.Fatalf("UNSUBSCRIBE all = %q", got)
	}
	c.send("UNSUBSCRIBE")
	c.expect("*3 unsubscribe (nil) :1")
	c.send("PUNSUBSCRIBE")
	c.expect("*3 punsubscribe p* :0")
	c.send("PUNSUBSCRIBE")
	c.expect("*3 punsubscribe (nil) :0")
	// Still subscribed to a shard channel: still in subscribe mode.
	c.send("SET", "k", "v")
	c.expect("-ERR Can't execute 'set': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	c.send("RESET")
	c.expect("+RESET")
	c.send("PING")
	c.expect("+PONG")
	pub := s.Client()
	if n := pub.SPublish(harness.Ctx(t), "s1", "x").Val(); n != 0 {
		t.Fatalf("SPUBLISH after RESET reached %d", n)
	}
	c.send("SUBSCRIBE", "z")
	c.expect("*3 subscribe z :1")
	if n := pub.Publish(harness.Ctx(t), "z", "payload").Val(); n != 1 {
		t.Fatalf("PUBLISH reached %d", n)
	}
	c.expect("*3 message z payload")
	c.send("QUIT")
	c.expect("+OK")
}

// TestPubSubRESP3 checks that a RESP3 subscriber gets pushes and may run any command.
func TestPubSubRESP3(t *testing.T) {
	s := harness.Start(t)
	c := newRaw(t, s)
	c.send("HELLO", "3")
	c.reply()
	c.send("SUBSCRIBE", "a")
	c.expect(">3 subscribe a :1")
	c.send("SET", "k", "v")
	c.expect("+OK")
	c.send("PING")
	c.expect("+PONG")
	pub := s.Client()
	ctx := harness.Ctx(t)
	if n := pub.Publish(ctx, "a", "m1").Val(); n != 1 {
		t.Fatalf("PUBLISH reached %d", n)
	}
	c.expect(">3 message a m1")
	c.send("PSUBSCRIBE", "a*")
	c.expect(">3 psubscribe a* :2")
	pub.Publish(ctx, "a", "m2")
	c.expect(">3 message a m2")
	c.expect(">4 pmessage a* a m2")
	c.send("SSUBSCRIBE", "s")
	c.expect(">3 ssubscribe s :1")
	pub.SPublish(ctx, "s", "m3")
	c.expect(">3 smessage s m3")
	c.send("UNSUBSCRIBE")
	c.expect(">3 unsubscribe a :1")
	c.send("UNSUBSCRIBE")
	c.expect(">3 unsubscribe _ :1")

	// go-redis with Protocol 3.
	r3 := s.ClientOpts(&redis.Options{Protocol: 3})
	ps := r3.Subscribe(ctx, "chat")
	defer ps.Close()
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	pub.Publish(ctx, "chat", "hi")
	m, err := ps.ReceiveMessage(ctx)
	if err != nil || m.Payload != "hi" {
		t.Fatalf("RESP3 message %#v %v", m, err)
	}
}

// TestPubSubOrderAcrossLoops publishes from several connections to subscribers on several
// connections (so, in Lavik, on several event loops): every subscriber gets every message of
// each publisher in the order published.
func TestPubSubOrderAcrossLoops(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	const subs, pubs, per = 6, 3, 300
	var pss []*redis.PubSub
	for i := 0; i < subs; i++ {
		ps := s.Client().Subscribe(ctx, "ch")
		defer ps.Close()
		if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		pss = append(pss, ps)
	}
	errs := make(chan error, pubs)
	for p := 0; p < pubs; p++ {
		go func(p int) {
			c := s.Client()
			for i := 0; i < per; i++ {
				n, err := c.Publish(ctx, "ch", fmt.Sprintf("%d:%d", p, i)).Result()
				if err != nil || n != subs {
					errs <- fmt.Errorf("publish %d:%d reached %d (%v)", p, i, n, err)
					return
				}
			}
			errs <- nil
		}(p)
	}
	for p := 0; p < pubs; p++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for si, ps := range pss {
		next := make([]int, pubs)
		for k := 0; k < pubs*per; k++ {
			m, err := ps.ReceiveTimeout(ctx, 5*time.Second)
			if err != nil {
				t.Fatalf("subscriber %d, message %d: %v", si, k, err)
			}
			var p, i int
			fmt.Sscanf(m.(*redis.Message).Payload, "%d:%d", &p, &i)
			if i != next[p] {
				t.Fatalf("subscriber %d got %d:%d, want %d:%d", si, p, i, p, next[p])
			}
			next[p]++
		}
	}
}

// TestPubSubSlowSubscriberDisconnected fills a subscriber that does not read past the pubsub
// client-output-buffer-limit: it is disconnected, and a subscriber that reads keeps receiving.
func TestPubSubSlowSubscriberDisconnected(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	pub := s.Client()
	if err := pub.ConfigSet(ctx, "client-output-buffer-limit", "pubsub 256kb 128kb 60").Err(); err != nil {
		t.Fatal(err)
	}
	slow := newRaw(t, s)
	slow.send("CLIENT", "SETNAME", "slow")
	slow.expect("+OK")
	slow.send("SUBSCRIBE", "firehose")
	slow.expect("*3 subscribe firehose :1")
	fast := s.Client().Subscribe(ctx, "firehose")
	defer fast.Close()
	if _, err := fast.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	payload := strings.Repeat("x", 16<<10)
	received := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := fast.ReceiveMessage(ctx); err != nil {
				return
			}
			received++
		}
	}()
	// The socket buffers take a few MB; the slow client must go well before 64 MB.
	gone := false
	for i := 0; i < 4000 && !gone; i++ {
		pub.Publish(ctx, "firehose", payload)
		if i%100 == 99 {
			gone = !strings.Contains(pub.ClientList(ctx).Val(), "name=slow")
		}
	}
	if !gone {
		harness.Eventually(t, 10*time.Second, "the slow subscriber is disconnected", func() bool {
			return !strings.Contains(pub.ClientList(ctx).Val(), "name=slow")
		})
	}
	if n := pub.Publish(ctx, "firehose", "last").Val(); n != 1 {
		t.Fatalf("PUBLISH after the disconnection reached %d, want 1", n)
	}
	harness.Eventually(t, 10*time.Second, "the fast subscriber keeps receiving", func() bool { return received > 100 })
	if !strings.Contains(pub.Info(ctx, "stats").Val(), "client_output_buffer_limit_disconnections:1") && !harness.IsRedis() {
		t.Fatal("INFO does not count the disconnection")
	}
	fast.Close()
	<-done
}

func TestPubSubResetDropsSubscriptions(t *testing.T) {
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	pub := s.Client()
	c := newRaw(t, s)
	c.send("SUBSCRIBE", "a")
	c.expect("*3 subscribe a :1")
	c.send("PSUBSCRIBE", "b*")
	c.expect("*3 psubscribe b* :2")
	if n := pub.PubSubNumPat(ctx).Val(); n != 1 {
		t.Fatalf("NUMPAT %d", n)
	}
	c.send("RESET")
	c.expect("+RESET")
	if n := pub.Publish(ctx, "a", "x").Val(); n != 0 {
		t.Fatalf("PUBLISH after RESET reached %d", n)
	}
	if n := pub.PubSubNumPat(ctx).Val(); n != 0 {
		t.Fatalf("NUMPAT after RESET %d", n)
	}
	c.send("GET", "a")
	c.expect("(nil)")
}
