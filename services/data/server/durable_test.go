package server_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// syncGate holds every fdatasync of the value log while armed, until released.
type syncGate struct {
	armed   atomic.Bool
	entered chan struct{} // gets a value when a sync is being held
	release chan struct{} // closed to let the held syncs go
	once    sync.Once
}

func newSyncGate() *syncGate {
	return &syncGate{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (g *syncGate) MaybeError(op vfs.Op, path string) error {
	if op == vfs.OpSync && g.armed.Load() {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		<-g.release
	}
	return nil
}

func (g *syncGate) open() { g.once.Do(func() { close(g.release) }) }

// pending reads the next reply of c in the background.
func pending(c *client) <-chan string {
	ch := make(chan string, 1)
	go func() {
		c.nc.SetReadDeadline(time.Now().Add(waitFor))
		v, err := c.rd.Read()
		if err != nil {
			ch <- "error: " + err.Error()
			return
		}
		ch <- show(v)
	}()
	return ch
}

// noReplyWhileHeld checks that ch gets nothing while the sync is held: the window is long
// against a loopback round trip, and only a reply sent too early fails it.
func noReplyWhileHeld(t *testing.T, ch <-chan string, what string) {
	t.Helper()
	select {
	case got := <-ch:
		t.Fatalf("%s replied %s before the write it depends on was synced", what, got)
	case <-time.After(300 * time.Millisecond):
	}
}

func replyOf(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case got := <-ch:
		return got
	case <-time.After(waitFor):
		t.Fatal("no reply")
		return ""
	}
}

// TestReadWaitsForSync: under appendfsync always no client sees a value before it is synced.
// While a SET's sync is held, another client's GET, EXISTS, STRLEN and MGET of that key, and
// DBSIZE, wait for it, as Redis sends no reply before its AOF is synced; a GET of a key synced
// earlier does not wait.
func TestReadWaitsForSync(t *testing.T) {
	gate := newSyncGate()
	ts := startServer(t, vfs.NewErrorFS(vfs.NewMem(), gate))
	defer gate.open()
	w, r := ts.dial(t), ts.dial(t)
	w.send(cmd{"SET", "old", "synced"})
	w.expect("+OK")

	gate.armed.Store(true)
	w.send(cmd{"SET", "new", "value"})
	setReply := pending(w)
	select {
	case <-gate.entered:
	case <-time.After(waitFor):
		t.Fatal("the SET's sync never started")
	}
	for _, c := range []cmd{{"GET", "new"}, {"EXISTS", "new"}, {"STRLEN", "new"}, {"MGET", "old", "new"}, {"DBSIZE"}} {
		rc := ts.dial(t)
		rc.send(c)
		noReplyWhileHeld(t, pending(rc), strings.Join(c, " "))
	}
	// A key whose record is synced does not wait (the two keys' slots differ).
	r.send(cmd{"GET", "old"})
	if got := replyOf(t, pending(r)); got != bulk("synced") {
		t.Fatalf("GET of a synced key: %s", got)
	}
	reply := pending(r)
	r.send(cmd{"GET", "new"})
	noReplyWhileHeld(t, reply, "GET new")
	gate.armed.Store(false)
	gate.open()
	if got := replyOf(t, setReply); got != "+OK" {
		t.Fatalf("SET: %s", got)
	}
	if got := replyOf(t, reply); got != bulk("value") {
		t.Fatalf("GET after the sync: %s", got)
	}
}

// TestReadOfWriteThatFailed: a write whose sync fails stays in memory and is retried, and its
// client is told so (and not to repeat it); another client's read of it gets an error instead
// of a value that could still be lost; once the disk takes writes again the write is there,
// applied once.
func TestReadOfWriteThatFailed(t *testing.T) {
	full := vfs.NewToggle(syscall.ENOSPC, vfs.OpSync)
	ts := startServer(t, vfs.NewErrorFS(vfs.NewMem(), full))
	t.Cleanup(full.Disable)
	w, r := ts.dial(t), ts.dial(t)
	w.send(cmd{"SET", "n", "1"})
	w.expect("+OK")

	full.Enable()
	failedWrite := "-" + commands.DurabilityError(&vlog.WriteError{Op: "sync", Err: syscall.ENOSPC}, true)
	failedRead := "-" + commands.DurabilityError(&vlog.WriteError{Op: "sync", Err: syscall.ENOSPC}, false)
	w.send(cmd{"INCR", "n"})
	w.expect(failedWrite)
	if !strings.Contains(failedWrite, "do not repeat it blindly") {
		t.Fatalf("the reply to a write that took effect does not warn against repeating it: %s", failedWrite)
	}
	r.send(cmd{"GET", "n"}, cmd{"GET", "other"})
	r.expect(failedRead, "(nil)")

	full.Disable()
	eventually(t, "the retry", func() bool { return ts.ks.WriteErr() == nil })
	r.send(cmd{"GET", "n"})
	r.expect(bulk("2")) // the failed INCR, applied once
	w.send(cmd{"INCR", "n"})
	w.expect(":3")
}

// TestPrefetchedReadWaitsForSync: reads of a collection that the event loop answers from its
// batch of reads (HGET, HGETALL, HLEN in one pipeline) wait, as GET does, for the
// sync of the write they read, on the in-memory server (pread batches) and on the real file
// system (the loop's io_uring ring).
func TestPrefetchedReadWaitsForSync(t *testing.T) {
	for _, disk := range []bool{false, true} {
		t.Run(map[bool]string{false: "pread", true: "ring"}[disk], func(t *testing.T) {
			gate := newSyncGate()
			var ts *testServer
			if disk {
				ts = startDiskServer(t, gate)
			} else {
				ts = startServer(t, vfs.NewErrorFS(vfs.NewMem(), gate))
			}
			defer gate.open()
			w, r := ts.dial(t), ts.dial(t)
			w.send(cmd{"SET", "s", "synced"})
			w.expect("+OK")
			gate.armed.Store(true)
			w.send(cmd{"HSET", "h", "f", "v", "g", "w"})
			setReply := pending(w)
			select {
			case <-gate.entered:
			case <-time.After(waitFor):
				t.Fatal("the HSET's sync never started")
			}
			r.send(cmd{"GET", "s"})
			if got := r.read(); got != bulk("synced") {
				t.Fatalf("GET of a synced key: %s", got)
			}
			reply := pending(r)
			r.send(cmd{"HGET", "h", "f"}, cmd{"HGETALL", "h"}, cmd{"HLEN", "h"})
			noReplyWhileHeld(t, reply, "HGET of a hash whose write is not synced")
			gate.armed.Store(false)
			gate.open()
			if got := replyOf(t, setReply); got != ":2" {
				t.Fatalf("HSET: %s", got)
			}
			if got := replyOf(t, reply); got != bulk("v") {
				t.Fatalf("HGET after the sync: %s", got)
			}
			if got := r.read(); !strings.Contains(got, `"f"`) || !strings.Contains(got, `"w"`) {
				t.Fatalf("HGETALL after the sync: %s", got)
			}
			r.expect(":2")
		})
	}
}
