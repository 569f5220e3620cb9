package server_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// shardGate holds the syncs of chosen shards' value logs (by directory) until released, and
// records which shard directory each sync was of.
type shardGate struct {
	mu      sync.Mutex
	last    string                   // directory of the last sync
	held    map[string]chan struct{} // directory -> closed to release its syncs
	entered chan string              // gets a directory when a sync of it is being held
}

func newShardGate() *shardGate {
	return &shardGate{held: map[string]chan struct{}{}, entered: make(chan string, 16)}
}

func (g *shardGate) MaybeError(op vfs.Op, path string) error {
	if op != vfs.OpSync {
		return nil
	}
	dir := filepath.Dir(path)
	g.mu.Lock()
	g.last = dir
	ch := g.held[dir]
	g.mu.Unlock()
	if ch != nil {
		select {
		case g.entered <- dir:
		default:
		}
		<-ch
	}
	return nil
}

func (g *shardGate) lastDir() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

func (g *shardGate) hold(dir string) {
	g.mu.Lock()
	g.held[dir] = make(chan struct{})
	g.mu.Unlock()
}

func (g *shardGate) release(dir string) {
	g.mu.Lock()
	if ch := g.held[dir]; ch != nil {
		close(ch)
		delete(g.held, dir)
	}
	g.mu.Unlock()
}

func (g *shardGate) releaseAll() {
	g.mu.Lock()
	for dir, ch := range g.held {
		close(ch)
		delete(g.held, dir)
	}
	g.mu.Unlock()
}

// shardOf writes key (appendfsync always) and returns the directory of the shard log synced.
func (g *shardGate) shardOf(t *testing.T, c *client, key string) string {
	t.Helper()
	c.send(cmd{"SET", key, "probe"})
	c.expect("+OK")
	return g.lastDir()
}

// TestLoopSyncOverlapsGets: under appendfsync always a connection's durability wait runs on a
// goroutine while the loop answers the connection's GETs that are still reading from the disk,
// and, when one of them finds a chunked value, while another goroutine runs the rest detached.
// The wait, the loop and the detached goroutine all use the connection's session and pending
// replies; the race detector must find no conflict, and every reply must be right.
func TestLoopSyncOverlapsGets(t *testing.T) {
	gate := newSyncGate()
	ts := startDiskServer(t, gate)
	defer gate.open()
	setup := ts.dial(t)
	preloadDisk(t, setup, 4)
	big := pattern(200<<10, 13)
	setup.setBytes("big", big)

	c := ts.dial(t)
	before := ts.ringReads()
	gate.armed.Store(true)
	// SET a: a write whose sync is held; GET disk0 reads from the disk on the ring, after the
	// round that started the wait; GET a depends on the write; GET big finds a chunked value.
	c.send(cmd{"SET", "a", "1"}, cmd{"GET", "disk0"}, cmd{"GET", "a"}, cmd{"GET", "big"}, cmd{"PING"})
	select {
	case <-gate.entered:
	case <-time.After(waitFor):
		t.Fatal("the SET's sync never started")
	}
	eventually(t, "the GET from the disk answered on the ring", func() bool { return ts.ringReads() > before })
	reply := pending(c)
	noReplyWhileHeld(t, reply, "the pipeline after SET")
	gate.armed.Store(false)
	gate.open()
	if got := replyOf(t, reply); got != "+OK" {
		t.Fatalf("SET: %s", got)
	}
	c.expect(bulk(diskValue(0)), bulk("1"))
	c.readBulk("GET big", big)
	c.expect("+PONG")
}

// TestLoopReadDuringOwnSyncWaitsForIt: no client sees a value before the write that made it is
// synced (appendfsync always), even when the client is itself waiting for the sync of a write of
// its own. A connection's GETs that a batch looks up after the connection's durability wait has
// started (a run of GETs longer than one window of reads) add to what its session must wait
// for; the wait, already under way on its goroutine, must not drop them.
//
// The keys of the test are chosen in two different shards, whose syncs are held apart: w's SET
// of h is held in one; c's own SET in the other is released, and c must then still not get h's
// value while w's SET is held.
func TestLoopReadDuringOwnSyncWaitsForIt(t *testing.T) {
	gate := newShardGate()
	ts := startDiskServer(t, gate)
	defer gate.releaseAll()
	setup := ts.dial(t)
	// 126 values of 40 KiB on disk: more than the 4 MiB a batch reads at once, so that the
	// last GETs of a run are looked up in a later round.
	var vals []cmd
	for i := 0; i < 126; i++ {
		vals = append(vals, cmd{"SET", fmt.Sprintf("v%d", i), strings.Repeat(fmt.Sprint(i%10), 40<<10)})
	}
	setup.send(vals...)
	for range vals {
		setup.expect("+OK")
	}
	x := gate.shardOf(t, setup, "a")
	h := ""
	for i := 0; i < 64 && h == ""; i++ {
		k := fmt.Sprintf("h%d", i)
		if gate.shardOf(t, setup, k) != x {
			h = k
		}
	}
	if h == "" {
		t.Fatal("no key found in another shard than a's")
	}
	y := gate.lastDir()

	const attempts = 3
	for attempt := 0; attempt < attempts; attempt++ {
		w, c := ts.dial(t), ts.dial(t)
		gate.hold(y)
		val := fmt.Sprintf("new%d", attempt)
		w.send(cmd{"SET", h, val})
		wReply := pending(w)
		if got := <-gate.entered; got != y {
			t.Fatalf("held a sync of %s, want %s", got, y)
		}
		gate.hold(x)
		var p pipeline
		p.add(wantSig("+OK"), "SET", "a", fmt.Sprint(attempt))
		for i := 0; i < 126; i++ {
			p.add(wantBulk(strings.Repeat(fmt.Sprint(i%10), 40<<10)), "GET", fmt.Sprintf("v%d", i))
		}
		p.add(wantSig(bulk(val)), "GET", h)
		before := ts.ringReads()
		c.writeRaw(p.buf)
		if got := <-gate.entered; got != x {
			t.Fatalf("held a sync of %s, want %s", got, x)
		}
		// c's wait is under way on its goroutine, held in x's sync. The last disk reads of the
		// run start in the same round as the lookup of h: once they are done, h is looked up.
		eventually(t, "the run's disk reads", func() bool { return ts.ringReads() >= before+126 })
		gate.release(x)
		// Replies before the GET of h may come now; that one depends on h's write, whose sync
		// is held: it may not.
		type result struct {
			i         int
			got, what string
		}
		results := make(chan result, len(p.checks))
		go func() {
			for i, ck := range p.checks {
				c.nc.SetReadDeadline(time.Now().Add(waitFor))
				v, err := c.rd.Read()
				if err != nil {
					results <- result{i, err.Error(), err.Error()}
					return
				}
				results <- result{i, sig(v), ck(v)}
			}
		}()
		last := len(p.checks) - 1
		next := 0
	held:
		for {
			select {
			case r := <-results:
				if r.i == last {
					t.Fatalf("attempt %d: GET %s answered %s while the SET that wrote it is not synced (its sync is held)", attempt, h, r.got)
				}
				if r.what != "" {
					t.Fatalf("attempt %d, reply %d (%s): %s", attempt, r.i, p.names[r.i], r.what)
				}
				next++
			case <-time.After(300 * time.Millisecond):
				break held
			}
		}
		gate.release(y)
		if got := replyOf(t, wReply); got != "+OK" {
			t.Fatalf("SET %s: %s", h, got)
		}
		for ; next <= last; next++ {
			select {
			case r := <-results:
				if r.what != "" {
					t.Fatalf("attempt %d, reply %d (%s): %s", attempt, r.i, p.names[r.i], r.what)
				}
			case <-time.After(waitFor):
				t.Fatalf("attempt %d: reply %d (%s) not received", attempt, next, p.names[next])
			}
		}
	}
}
