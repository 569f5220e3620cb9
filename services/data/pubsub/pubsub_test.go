package pubsub

import (
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// match is a stand-in glob for the tests (the server uses commands.GlobMatch).
func match(p, s []byte) bool { ok, _ := path.Match(string(p), string(s)); return ok }

func newSub(proto int32) (*Subscriber, *atomic.Int32) {
	var wakes atomic.Int32
	p := &atomic.Int32{}
	p.Store(proto)
	return NewSubscriber(p, func() { wakes.Add(1) }, nil), &wakes
}

func mail(s *Subscriber) string {
	var out []byte
	s.Take(func(b []byte) { out = append(out, b...) })
	return string(out)
}

func TestRegistryPublish(t *testing.T) {
	r := NewRegistry(match)
	a, wa := newSub(2)
	b, _ := newSub(3)
	r.Subscribe(a, Channel, "news")
	r.Subscribe(a, Channel, "news") // twice is once
	r.Subscribe(b, Pattern, "n*")
	r.Subscribe(b, Shard, "news")
	if a.Count(Channel) != 1 || !a.Subscribed() || b.Count(Pattern) != 1 || b.Count(Shard) != 1 {
		t.Fatal("counts")
	}
	if n := r.Publish("news", "hi"); n != 2 {
		t.Fatalf("Publish reached %d", n)
	}
	if n := r.SPublish("news", "s"); n != 1 {
		t.Fatalf("SPublish reached %d", n)
	}
	if got := mail(a); got != "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n" {
		t.Fatalf("RESP2 message %q", got)
	}
	if got := mail(b); got != ">4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n>3\r\n$8\r\nsmessage\r\n$4\r\nnews\r\n$1\r\ns\r\n" {
		t.Fatalf("RESP3 messages %q", got)
	}
	if wa.Load() != 1 {
		t.Fatalf("%d wake-ups for one message", wa.Load())
	}
	r.Publish("news", "1")
	r.Publish("news", "2")
	if wa.Load() != 2 {
		t.Fatalf("%d wake-ups: one per empty mailbox expected", wa.Load())
	}
	if got := r.Active(Channel, nil); len(got) != 1 || got[0] != "news" {
		t.Fatalf("Active %v", got)
	}
	if r.NumSub(Shard, "news") != 1 || r.Len(Pattern) != 1 {
		t.Fatal("NumSub/Len")
	}
	r.UnsubscribeAll(a)
	r.UnsubscribeAll(b)
	if a.Subscribed() || b.Subscribed() || r.Len(Channel)+r.Len(Pattern)+r.Len(Shard) != 0 {
		t.Fatal("UnsubscribeAll left subscriptions")
	}
	if r.Unsubscribe(a, Channel, "news") {
		t.Fatal("Unsubscribe of nothing reported one")
	}
}

func TestRegistryMaxMail(t *testing.T) {
	r := NewRegistry(match)
	var over atomic.Int32
	p := &atomic.Int32{}
	p.Store(2)
	s := NewSubscriber(p, func() {}, func() { over.Add(1) })
	r.Subscribe(s, Channel, "c")
	r.SetMaxMail(100)
	for i := 0; i < 10; i++ {
		r.Publish("c", strings.Repeat("x", 20))
	}
	if over.Load() != 1 {
		t.Fatalf("overflow called %d times, want once", over.Load())
	}
	if s.HasMail() {
		t.Fatal("an overflowed mailbox keeps mail")
	}
}

// TestRegistryConcurrent publishes from many goroutines while others subscribe and
// unsubscribe (run with -race): every subscriber sees each publisher's messages in order.
func TestRegistryConcurrent(t *testing.T) {
	r := NewRegistry(match)
	const subs, pubs, per = 8, 4, 500
	var ss []*Subscriber
	for i := 0; i < subs; i++ {
		s, _ := newSub(2)
		r.Subscribe(s, Channel, "c")
		ss = append(ss, s)
	}
	var wg sync.WaitGroup
	for p := 0; p < pubs; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if n := r.Publish("c", fmt.Sprintf("%d:%d", p, i)); n != subs {
					t.Errorf("Publish reached %d", n)
					return
				}
			}
		}(p)
	}
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Add(1)
	go func() { // other connections come and go meanwhile
		defer churn.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s, _ := newSub(3)
			r.Subscribe(s, Pattern, "x*")
			r.Subscribe(s, Channel, fmt.Sprint("o", i))
			_ = r.Active(Channel, []byte("o*"))
			r.UnsubscribeAll(s)
		}
	}()
	wg.Wait()
	close(stop)
	churn.Wait()
	for si, s := range ss {
		next := make([]int, pubs)
		for _, m := range strings.Split(mail(s), "*3\r\n")[1:] {
			f := strings.Split(m, "\r\n")
			var p, i int
			fmt.Sscanf(f[5], "%d:%d", &p, &i)
			if i != next[p] {
				t.Fatalf("subscriber %d: %d:%d after %d:%d", si, p, i, p, next[p]-1)
			}
			next[p]++
		}
		for p := range next {
			if next[p] != per {
				t.Fatalf("subscriber %d got %d of publisher %d's %d messages", si, next[p], p, per)
			}
		}
	}
}

func TestParseNotify(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"", ""}, {"KEA", "AKE"}, {"E$", "$E"}, {"Kgx", "gxK"}, {"AmnKE", "AKEm"}, {"Kn", "nK"}, {"KEg$lshzxetd", "AKE"},
	} {
		f, err := ParseNotify(tc.in)
		if err != nil || f.String() != tc.out {
			t.Errorf("ParseNotify(%q) = %q, %v; want %q", tc.in, f.String(), err, tc.out)
		}
	}
	for _, bad := range []string{"KEZ", "a", " "} {
		if _, err := ParseNotify(bad); err != ErrNotifyFlags {
			t.Errorf("ParseNotify(%q) err %v", bad, err)
		}
	}
	r := NewRegistry(match)
	if r.Notifying(String) || (*Registry)(nil).Notifying(String) {
		t.Fatal("notifying by default")
	}
	r.SetNotify(String) // a class without K or E publishes nothing
	if r.Notifying(String) {
		t.Fatal("notifying without K or E")
	}
	r.SetNotify(String | Keyevent)
	if !r.Notifying(String) || r.Notifying(List) {
		t.Fatal("class filter")
	}
}
