package server_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBlockingNoLostWakeups: 16 clients pop in a loop with BLPOP (timeout 0) from one list
// while 4 clients push 400 elements each, in pipelines, from every loop. Every element is
// popped exactly once: no wake-up is lost (a waiter that registers just after a push, a waiter
// woken for an element another took), and the waiters are not left parked with elements in
// the list.
func TestBlockingNoLostWakeups(t *testing.T) {
	ts := startServer(t, nil, "appendfsync", "everysec")
	const poppers, pushers, each = 16, 4, 400
	got := make(chan string, pushers*each)
	var wg sync.WaitGroup
	for p := 0; p < poppers; p++ {
		c := ts.dial(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c.nc.SetReadDeadline(time.Now().Add(waitFor))
				c.send(cmd{"BLPOP", "q", "0"})
				r := c.read()
				if strings.Contains(r, "STOP") {
					return
				}
				got <- r
			}
		}()
	}
	for p := 0; p < pushers; p++ {
		c := ts.dial(t)
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < each; i += 20 {
				var cmds []cmd
				for j := i; j < i+20; j++ {
					cmds = append(cmds, cmd{"RPUSH", "q", fmt.Sprintf("e%d-%d", p, j)})
				}
				c.send(cmds...)
				for range cmds {
					c.read()
				}
			}
		}(p)
	}
	seen := map[string]bool{}
	deadline := time.After(waitFor)
	for len(seen) < pushers*each {
		select {
		case r := <-got:
			if seen[r] {
				t.Fatalf("%s popped twice", r)
			}
			seen[r] = true
		case <-deadline:
			admin := ts.dial(t)
			t.Fatalf("%d of %d elements popped; LLEN q %s, %s", len(seen), pushers*each, admin.do("LLEN", "q"),
				infoField(t, admin, "clients", "blocked_clients"))
		}
	}
	admin := ts.dial(t)
	eventually(t, "every popper parked again", func() bool { return infoField(t, admin, "clients", "blocked_clients") == fmt.Sprint(poppers) })
	for p := 0; p < poppers; p++ {
		admin.send(cmd{"RPUSH", "q", "STOP"})
		admin.read()
	}
	wg.Wait()
	if got := admin.do("LLEN", "q"); got != ":0" {
		t.Fatalf("LLEN q after the stops: %s", got)
	}
}

// TestBlockingTimeoutAndUnblock: a BLPOP with a timeout answers null on time; CLIENT UNBLOCK
// ends another's wait with null or an UNBLOCKED error; a parked client that disconnects is
// forgotten, and a later push stays in the list.
func TestBlockingTimeoutAndUnblock(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	start := time.Now()
	if got := c.do("BLPOP", "none", "0.3"); got != "(nil)" && got != "*-1" {
		t.Fatalf("BLPOP timeout: %s", got)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 2*time.Second {
		t.Fatalf("BLPOP with timeout 0.3 answered after %v", d)
	}
	admin := ts.dial(t)
	for _, mode := range []string{"TIMEOUT", "ERROR"} {
		w := ts.dial(t)
		id := strings.TrimPrefix(w.do("CLIENT", "ID"), ":")
		w.send(cmd{"BRPOP", "none", "0"})
		eventually(t, "the client parked", func() bool { return infoField(t, admin, "clients", "blocked_clients") == "1" })
		if got := admin.do("CLIENT", "UNBLOCK", id, mode); got != ":1" {
			t.Fatalf("CLIENT UNBLOCK %s %s: %s", id, mode, got)
		}
		r := w.read()
		if mode == "ERROR" && !strings.Contains(r, "UNBLOCKED client unblocked via CLIENT UNBLOCK") || mode == "TIMEOUT" && r != "(nil)" && r != "*-1" {
			t.Fatalf("unblocked with %s: %s", mode, r)
		}
		if got := admin.do("CLIENT", "UNBLOCK", id); got != ":0" {
			t.Fatalf("CLIENT UNBLOCK of a client not blocked: %s", got)
		}
	}
	gone := ts.dial(t)
	gone.send(cmd{"BLPOP", "q2", "0"})
	eventually(t, "the client parked", func() bool { return infoField(t, admin, "clients", "blocked_clients") == "1" })
	gone.nc.Close()
	eventually(t, "the closed client forgotten", func() bool { return infoField(t, admin, "clients", "blocked_clients") == "0" })
	admin.send(cmd{"RPUSH", "q2", "x"})
	admin.read()
	if got := admin.do("LLEN", "q2"); got != ":1" {
		t.Fatalf("LLEN after a push with only a closed client parked: %s", got)
	}
}
