package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lavikdb/lavik/pkg/resp"
)

// Tests of the event loops' handling of connections: clients that read slowly, leave, are
// killed or time out in the middle of the states a loop keeps a connection in (GETs in flight
// on the ring, a command running detached, a durability wait on a goroutine).

// prompt bounds the reply time of a client that the tests expect to be served while others are
// stalled: far above a loopback round trip (under the race detector too), far below waitFor.
const prompt = time.Second

// coverLoops is how many connections, dealt to a server's event loops in turn as they are
// accepted, put at least one on every loop: a server has one loop per P, and GOMAXPROCS, asked
// once it runs, is at least that.
func coverLoops() int { return runtime.GOMAXPROCS(0) }

// pattern is n deterministic bytes for a long value; seed tells values apart.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte((i/1000+int(seed))%26)
	}
	return b
}

// setBytes stores a value (of any length) under key.
func (c *client) setBytes(key string, val []byte) {
	c.t.Helper()
	c.writeRaw(resp.AppendCommand(nil, []byte("SET"), []byte(key), val))
	c.expect("+OK")
}

// readBulk reads a bulk string reply and checks it against want without rendering it whole.
func (c *client) readBulk(what string, want []byte) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitFor))
	v, err := c.rd.Read()
	if err != nil {
		c.t.Fatalf("%s: read reply: %v", what, err)
	}
	if v.Kind != resp.BulkString || !bytes.Equal(v.Str, want) {
		c.t.Fatalf("%s: got %s, want %s", what, sig(v), bulkSig(want))
	}
}

// id returns the client's CLIENT ID.
func (c *client) id() string {
	c.t.Helper()
	got := c.do("CLIENT", "ID")
	if !strings.HasPrefix(got, ":") {
		c.t.Fatalf("CLIENT ID: %s", got)
	}
	return got[1:]
}

// listed reports whether CLIENT LIST, asked on c, lists the client with the given id.
func (c *client) listed(id string) bool {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitFor))
	c.send(cmd{"CLIENT", "LIST"})
	v, err := c.rd.Read()
	if err != nil || v.Kind != resp.BulkString {
		c.t.Fatalf("CLIENT LIST: %v %v", sig(v), err)
	}
	for _, line := range strings.Split(string(v.Str), "\n") {
		if strings.HasPrefix(line, "id="+id+" ") {
			return true
		}
	}
	return false
}

// gone waits until CLIENT LIST, asked on obs, no longer lists the client id.
func gone(t *testing.T, obs *client, id, what string) {
	t.Helper()
	eventually(t, what+" gone from CLIENT LIST", func() bool { return !obs.listed(id) })
}

// drainClosed reads and drops whatever the server still sends and checks that the connection
// then ends (EOF or a reset) within waitFor.
func drainClosed(t *testing.T, nc net.Conn, what string) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(waitFor))
	_, err := io.Copy(io.Discard, nc)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("%s: %v; want the connection closed", what, err)
	}
}

// abort closes nc with a reset, as a client that dies does, rather than a FIN.
func abort(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	nc.Close()
}

// servedPromptly runs a few commands on c, each of which must be answered within prompt.
func servedPromptly(t *testing.T, c *client, what string) {
	t.Helper()
	key := fmt.Sprintf("prompt:%p", c)
	for i := 0; i < 5; i++ {
		start := time.Now()
		// The write in a round trip of its own: its durability wait then never overlaps GETs
		// of the same connection (see TestLoopSyncOverlapsGets).
		c.send(cmd{"SET", key, fmt.Sprint(i)})
		c.expect("+OK")
		c.send(cmd{"GET", key}, cmd{"GET", "disk0"}, cmd{"PING"})
		c.expect(bulk(fmt.Sprint(i)), bulk(diskValue(0)), "+PONG")
		if d := time.Since(start); d > prompt {
			t.Fatalf("%s: a round trip took %v", what, d)
		}
	}
}

// diskValue is the value preloadDisk stores under disk<i>.
func diskValue(i int) string { return fmt.Sprintf("disk%d:", i) + strings.Repeat("d", 200) }

// preloadDisk stores n keys disk0... with appendfsync always: once synced their records are
// read from the segment files, so GETs of them go through the loops' rings to the disk.
func preloadDisk(t *testing.T, c *client, n int) {
	t.Helper()
	var cmds []cmd
	var want []string
	for i := 0; i < n; i++ {
		cmds = append(cmds, cmd{"SET", fmt.Sprintf("disk%d", i), diskValue(i)})
		want = append(want, "+OK")
	}
	c.send(cmds...)
	c.expect(want...)
}

// everysec switches the server to appendfsync everysec, once the keys a test reads from the
// disk are written (and synced). A test about something else than durability then has no
// connection whose durability wait runs on a goroutine while its GETs are answered on the loop
// (TestLoopSyncOverlapsGets is about that).
func everysec(t *testing.T, c *client) {
	t.Helper()
	c.send(cmd{"CONFIG", "SET", "appendfsync", "everysec"})
	c.expect("+OK")
}

// TestLoopSlowReader: a client that asks for a 20 MB value and an MGET of 8 MB and reads
// nothing holds up only itself: clients on every loop, its own included, go on being answered
// within a second, GETs from the disk and a detached GET of a chunked value among their
// commands; then the slow client reads its replies, whole and in order.
func TestLoopSlowReader(t *testing.T) {
	ts := startDiskServer(t, nil)
	setup := ts.dial(t)
	preloadDisk(t, setup, 16)
	huge := pattern(20<<20, 0)
	setup.setBytes("huge", huge)
	var mget []string
	var parts [][]byte
	for i := 0; i < 8; i++ {
		k := fmt.Sprintf("mb%d", i)
		parts = append(parts, pattern(1<<20, byte(i+1)))
		setup.setBytes(k, parts[i])
		mget = append(mget, k)
	}
	mid := pattern(300<<10, 9)
	setup.setBytes("mid", mid)
	everysec(t, setup)

	slow := ts.dial(t)
	if tc, ok := slow.nc.(*net.TCPConn); ok {
		tc.SetReadBuffer(16 << 10) // the server's writes stall sooner
	}
	slow.send(cmd{"GET", "huge"}, append(cmd{"MGET"}, mget...), cmd{"PING"})

	// Connections are dealt to the loops in turn: these cover every loop, the slow client's
	// own included.
	var others []*client
	for i := 0; i < coverLoops(); i++ {
		others = append(others, ts.dial(t))
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(others))
	for i, c := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 10; round++ {
				start := time.Now()
				var p pipeline
				k := fmt.Sprintf("other%d", i)
				v := fmt.Sprint(round)
				p.add(wantSig("+OK"), "SET", k, v)
				p.add(wantSig(bulk(v)), "GET", k)
				for j := 0; j < 16; j++ {
					p.add(wantBulk(diskValue(j)), "GET", fmt.Sprintf("disk%d", j))
				}
				if round%4 == 0 {
					p.add(wantSig(bulkSig(mid)), "GET", "mid")
				}
				if err := p.run(c.nc, c.rd); err != nil {
					errs <- fmt.Errorf("client %d, round %d: %w", i, round, err)
					return
				}
				if d := time.Since(start); d > prompt {
					errs <- fmt.Errorf("client %d, round %d: answered after %v while a client reads nothing", i, round, d)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	slow.readBulk("GET huge", huge)
	slow.nc.SetReadDeadline(time.Now().Add(waitFor))
	v, err := slow.rd.Read()
	if err != nil || v.Kind != resp.Array || len(v.Elems) != len(parts) {
		t.Fatalf("MGET: %v, %v", sig(v), err)
	}
	for i, e := range v.Elems {
		if !bytes.Equal(e.Str, parts[i]) {
			t.Fatalf("MGET element %d: got %s, want %s", i, sig(e), bulkSig(parts[i]))
		}
	}
	slow.expect("+PONG")
}

// TestLoopClientGoneMidCommand: a client that goes away while its GETs are in flight on the
// ring, while a detached command streams its reply, or while its reply waits for a sync, is
// forgotten (gone from CLIENT LIST) and the server goes on serving the others.
func TestLoopClientGoneMidCommand(t *testing.T) {
	gate := newSyncGate()
	ts := startDiskServer(t, gate)
	defer gate.open()
	obs := ts.dial(t)
	preloadDisk(t, obs, 16)
	var vals []cmd
	for i := 0; i < 128; i++ {
		vals = append(vals, cmd{"SET", fmt.Sprintf("v%d", i), strings.Repeat("v", 40<<10)})
	}
	obs.send(vals...)
	for range vals {
		obs.expect("+OK")
	}
	huge := pattern(20<<20, 3)
	obs.setBytes("huge", huge)

	t.Run("GETs on the ring", func(t *testing.T) {
		// 128 GETs of 40 KiB records on disk: more than the 4 MiB a batch reads at once.
		var gets []cmd
		for i := 0; i < 128; i++ {
			gets = append(gets, cmd{"GET", fmt.Sprintf("v%d", i)})
		}
		for round := 0; round < 10; round++ {
			c := ts.dial(t)
			id := c.id()
			c.send(gets...)
			abort(c.nc)
			gone(t, obs, id, "a client that left with GETs in flight")
		}
		servedPromptly(t, ts.dial(t), "after clients left mid-GETs")
	})

	t.Run("detached", func(t *testing.T) {
		c := ts.dial(t)
		id := c.id()
		c.send(cmd{"GET", "huge"}, cmd{"PING"})
		// Read the start of the reply: the GET is streaming.
		buf := make([]byte, 64<<10)
		c.nc.SetReadDeadline(time.Now().Add(waitFor))
		if _, err := io.ReadFull(c.nc, buf); err != nil {
			t.Fatal(err)
		}
		abort(c.nc)
		servedPromptly(t, ts.dial(t), "while a detached GET's client is gone")
		gone(t, obs, id, "a client that left mid-reply")
	})

	t.Run("syncing", func(t *testing.T) {
		c := ts.dial(t)
		id := c.id()
		gate.armed.Store(true)
		c.send(cmd{"SET", "held", "1"})
		select {
		case <-gate.entered:
		case <-time.After(waitFor):
			t.Fatal("the SET's sync never started")
		}
		abort(c.nc)
		// Reads of synced records do not wait for the held sync.
		other := ts.dial(t)
		start := time.Now()
		other.send(cmd{"GET", "disk0"}, cmd{"PING"})
		other.expect(bulk(diskValue(0)), "+PONG")
		if d := time.Since(start); d > prompt {
			t.Fatalf("a GET of a synced key took %v while another client's sync was held", d)
		}
		gate.armed.Store(false)
		gate.open()
		gone(t, obs, id, "a client that left while its reply waited for a sync")
		servedPromptly(t, other, "after the sync")
		obs.send(cmd{"GET", "held"})
		obs.expect(bulk("1"))
	})
}

// TestLoopClientKill: CLIENT KILL of a connection that is idle, that runs a detached command
// streaming a long reply to a client that reads nothing, or whose reply waits for a held sync:
// the killer is told one client was killed, the victim's connection ends, and it goes from
// CLIENT LIST (the last once its sync is done: the goroutine waiting for it owns the
// connection until then).
func TestLoopClientKill(t *testing.T) {
	gate := newSyncGate()
	ts := startDiskServer(t, gate)
	defer gate.open()
	killer := ts.dial(t)
	preloadDisk(t, killer, 4)
	huge := pattern(20<<20, 5)
	killer.setBytes("huge", huge)

	t.Run("idle", func(t *testing.T) {
		v := ts.dial(t)
		id := v.id()
		killer.send(cmd{"CLIENT", "KILL", "ID", id})
		killer.expect(":1")
		v.expectClosed()
		gone(t, killer, id, "the killed idle client")
	})

	t.Run("detached", func(t *testing.T) {
		v := ts.dial(t)
		if tc, ok := v.nc.(*net.TCPConn); ok {
			tc.SetReadBuffer(16 << 10)
		}
		id := v.id()
		v.send(cmd{"GET", "huge"}, cmd{"PING"})
		// Read the start of the reply, then nothing: the detached GET fills the socket and
		// waits for a reader that never comes; it is listed the while.
		buf := make([]byte, 64<<10)
		v.nc.SetReadDeadline(time.Now().Add(waitFor))
		if _, err := io.ReadFull(v.nc, buf); err != nil {
			t.Fatal(err)
		}
		if !killer.listed(id) {
			t.Fatal("the streaming client is not listed")
		}
		killer.send(cmd{"CLIENT", "KILL", "ID", id})
		killer.expect(":1")
		drainClosed(t, v.nc, "the killed streaming client")
		gone(t, killer, id, "the killed streaming client")
		servedPromptly(t, killer, "after the kill")
	})

	t.Run("syncing", func(t *testing.T) {
		v := ts.dial(t)
		id := v.id()
		gate.armed.Store(true)
		v.send(cmd{"SET", "held", "1"})
		select {
		case <-gate.entered:
		case <-time.After(waitFor):
			t.Fatal("the SET's sync never started")
		}
		killer.send(cmd{"CLIENT", "KILL", "ID", id})
		killer.expect(":1")
		// The socket is shut down at once: the client sees its connection end while the sync
		// is still held.
		v.expectClosed()
		gate.armed.Store(false)
		gate.open()
		gone(t, killer, id, "the killed client whose reply waited for a sync")
		killer.send(cmd{"CLIENT", "KILL", "ID", id})
		killer.expect(":0")
	})
}

// TestLoopIdleTimeout: with timeout 1 an idle connection is closed within the next sweeps (one
// a second on each loop), a connection inside MULTI as well: Redis's clientsCronHandleTimeout
// spares replicas, masters, blocked and Pub/Sub clients only.
func TestLoopIdleTimeout(t *testing.T) {
	ts := startDiskServer(t, nil, "timeout", "1")
	multi := ts.dial(t)
	multi.send(cmd{"MULTI"}, cmd{"SET", "m", "1"})
	multi.expect("+OK", "+QUEUED")
	idle := []*client{multi}
	for i := 0; i < coverLoops(); i++ {
		c := ts.dial(t)
		c.send(cmd{"PING"})
		c.expect("+PONG")
		idle = append(idle, c)
	}
	start := time.Now()
	for i, c := range idle {
		c.expectClosed()
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("idle client %d closed after %v; timeout is 1s and the sweep runs every second", i, d)
		}
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("idle clients closed after %v; timeout is 1s", d)
	}
	c := ts.dial(t)
	c.send(cmd{"EXISTS", "m"})
	c.expect(":0")
}

// TestLoopIdleTimeoutSparesSyncing: a connection whose reply waits for a sync longer than the
// idle timeout is not idle: it sent a command and waits for the answer (as one whose GETs are
// in flight, or whose command runs detached, which the sweep spares). It must get its reply.
func TestLoopIdleTimeoutSparesSyncing(t *testing.T) {
	gate := newSyncGate()
	ts := startDiskServer(t, gate, "timeout", "1")
	defer gate.open()
	w := ts.dial(t)
	gate.armed.Store(true)
	w.send(cmd{"SET", "k", "v"})
	reply := pending(w)
	select {
	case <-gate.entered:
	case <-time.After(waitFor):
		t.Fatal("the SET's sync never started")
	}
	// An idle connection on every loop, made after the SET: once they are closed, a sweep of
	// each loop has passed the SET's connection with its last command over a second old.
	var idle []*client
	for i := 0; i < coverLoops(); i++ {
		c := ts.dial(t)
		c.send(cmd{"PING"})
		c.expect("+PONG")
		idle = append(idle, c)
	}
	for _, c := range idle {
		c.expectClosed()
	}
	gate.armed.Store(false)
	gate.open()
	if got := replyOf(t, reply); got != "+OK" {
		t.Fatalf("SET whose sync outlasted the idle timeout: %s", got)
	}
}

// TestLoopHalfClose: a client that sends its commands and then shuts its write side gets every
// reply (writes, GETs from the disk, a detached GET of a chunked value) before the server closes
// the connection; a client that sends part of a command and
// closes (half or whole) is closed and forgotten, and the partial command is not run.
func TestLoopHalfClose(t *testing.T) {
	ts := startDiskServer(t, nil)
	obs := ts.dial(t)
	preloadDisk(t, obs, 8)
	big := pattern(200<<10, 7)
	obs.setBytes("big", big)
	everysec(t, obs)

	c := ts.dial(t)
	id := c.id()
	var p pipeline
	for i := 0; i < 300; i++ {
		switch i % 6 {
		case 0:
			p.add(wantSig("+OK"), "SET", fmt.Sprintf("hc%d", i), fmt.Sprint(i))
		case 1:
			p.add(wantSig(bulk(fmt.Sprint(i-1))), "GET", fmt.Sprintf("hc%d", i-1))
		case 5:
			if i%60 == 5 {
				p.add(wantSig(bulkSig(big)), "GET", "big")
				continue
			}
			fallthrough
		default:
			p.add(wantBulk(diskValue(i%8)), "GET", fmt.Sprintf("disk%d", i%8))
		}
	}
	c.writeRaw(p.buf)
	if err := c.nc.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	for i, ck := range p.checks {
		c.nc.SetReadDeadline(time.Now().Add(waitFor))
		v, err := c.rd.Read()
		if err != nil {
			t.Fatalf("reply %d of %d (%s) after the half-close: %v", i, len(p.checks), p.names[i], err)
		}
		if what := ck(v); what != "" {
			t.Fatalf("reply %d of %d (%s): %s", i, len(p.checks), p.names[i], what)
		}
	}
	c.expectClosed()
	gone(t, obs, id, "the half-closed client")

	partial := resp.AppendCommandStrings(nil, "SET", "partial", "value")
	partial = partial[:len(partial)-4]
	for _, half := range []bool{true, false} {
		c := ts.dial(t)
		id := c.id()
		c.writeRaw(partial)
		if half {
			c.nc.(*net.TCPConn).CloseWrite()
			c.expectClosed()
		} else {
			c.nc.Close()
		}
		gone(t, obs, id, fmt.Sprintf("a client that sent part of a command (half-close %v)", half))
	}
	obs.send(cmd{"EXISTS", "partial"})
	obs.expect(":0")
}

// raiseFileLimit raises the soft limit on open descriptors to at least n, or skips the test.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Skipf("the hard limit on open files is %d; the test needs %d", lim.Max, n)
	}
	old := lim
	lim.Cur = n
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("setrlimit to %d: %v", n, err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &old) })
}

// TestLoopManyConnections: 2,000 connections open at once, each a pipeline of a few commands,
// all answered; once they close, CLIENT LIST is back to the one observer.
func TestLoopManyConnections(t *testing.T) {
	const n = 2000
	// Each connection takes a descriptor on each side, in this one process.
	raiseFileLimit(t, 2*n+1000)
	ts := startDiskServer(t, nil, "maxclients", "10000")
	obs := ts.dial(t)
	preloadDisk(t, obs, 4)
	everysec(t, obs)

	conns := make([]net.Conn, n)
	t.Cleanup(func() {
		for _, nc := range conns {
			if nc != nil {
				nc.Close()
			}
		}
	})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			nc, err := net.DialTimeout("tcp", ts.addr, waitFor)
			if err != nil {
				errs <- fmt.Errorf("connection %d: %v", i, err)
				return
			}
			conns[i] = nc
			k := fmt.Sprintf("many%d", i)
			var p pipeline
			p.add(wantSig("+OK"), "SET", k, k)
			p.add(wantSig(bulk(k)), "GET", k)
			p.add(wantSig(":1"), "INCR", k+":n")
			p.add(wantBulk(diskValue(i%4)), "GET", fmt.Sprintf("disk%d", i%4))
			if err := p.run(nc, resp.NewReplyReader(nc)); err != nil {
				errs <- fmt.Errorf("connection %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := ts.srv.Stats().ConnectedClients; got != n+1 {
		t.Fatalf("%d clients connected, want %d", got, n+1)
	}
	for _, nc := range conns {
		nc.Close()
	}
	eventually(t, "CLIENT LIST down to the observer", func() bool {
		obs.send(cmd{"CLIENT", "LIST"})
		obs.nc.SetReadDeadline(time.Now().Add(waitFor))
		v, err := obs.rd.Read()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(strings.TrimSpace(string(v.Str)), "\n") == 0
	})
}

// openFds counts this process's open descriptors.
func openFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open descriptors: %v", err)
	}
	return len(ents)
}

// fdTargets lists what the process's descriptors point at, for a failure message.
func fdTargets() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+"->"+target)
	}
	return strings.Join(out, " ")
}

// TestLoopCloseMidFlight: Server.Close while clients are in the middle of a pipeline, of a
// detached GET streaming to a client that reads nothing, and of runs of GETs from the disk
// returns within a bound, and leaves no goroutine and no descriptor behind once the keyspace is
// closed too.
func TestLoopCloseMidFlight(t *testing.T) {
	// Registered first, so that it runs after the server's cleanup has closed the keyspace.
	var goroutines, fds int
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		deadline := time.Now().Add(waitFor)
		for {
			g, f := runtime.NumGoroutine(), openFds(t)
			// A little slack for the runtime's and the test framework's own.
			if g <= goroutines+2 && f <= fds {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("after Close: %d goroutines (%d before), %d descriptors (%d before): %s\n%s", g, goroutines, f, fds, fdTargets(), buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	goroutines, fds = runtime.NumGoroutine(), openFds(t)

	ts := startDiskServer(t, nil)
	setup := ts.dial(t)
	preloadDisk(t, setup, 64)
	huge := pattern(20<<20, 11)
	setup.setBytes("huge", huge)
	everysec(t, setup)

	// A detached GET whose client reads nothing.
	stuck := ts.dial(t)
	stuck.send(cmd{"GET", "huge"})

	var wg sync.WaitGroup
	stop := make(chan struct{})
	// Clients that keep pipelines of GET runs and writes going until the server goes.
	for i := 0; i < min(coverLoops(), 16); i++ {
		c := ts.dial(t)
		wg.Add(2)
		go func() {
			defer wg.Done()
			var buf []byte
			for j := 0; j < 200; j++ {
				buf = resp.AppendCommandStrings(buf, "GET", fmt.Sprintf("disk%d", j%64))
				if j%50 == 0 {
					buf = resp.AppendCommandStrings(buf, "SET", fmt.Sprintf("w%d", i), "x")
				}
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				c.nc.SetWriteDeadline(time.Now().Add(waitFor))
				if _, err := c.nc.Write(buf); err != nil {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			c.nc.SetReadDeadline(time.Now().Add(2 * waitFor))
			io.Copy(io.Discard, c.nc)
		}()
	}
	// Let the pipelines get going.
	eventually(t, "GETs answered on the rings", func() bool { return ts.ringReads() > 2000 })

	closed := make(chan struct{})
	start := time.Now()
	go func() {
		ts.srv.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatalf("Close still running after 5s with clients mid-pipeline and a detached GET")
	}
	t.Logf("Close took %v", time.Since(start))
	close(stop)
	drainClosed(t, stuck.nc, "the client of the detached GET")
	wg.Wait()
	if n := ts.srv.Stats().ConnectedClients; n != 0 {
		t.Fatalf("%d clients still connected after Close", n)
	}
}

// TestCloseTwiceTouchesNoOtherDescriptor: a second Close (the test helpers' cleanup closes a
// server a test closed already) must not write to descriptors the first one closed: by then
// their numbers may belong to anything else in the process. Sockets opened between the two Closes
// take the lowest free numbers, those the server gave back among them; none may receive a byte.
func TestCloseTwiceTouchesNoOtherDescriptor(t *testing.T) {
	ts := startDiskServer(t, nil)
	c := ts.dial(t)
	c.send(cmd{"PING"})
	c.expect("+PONG")
	ts.srv.Close()
	<-ts.served
	// Socket pairs: a byte written to either end can be read at the other.
	var pairs [][2]int
	for i := 0; i < 32; i++ {
		p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, p)
	}
	defer func() {
		for _, p := range pairs {
			unix.Close(p[0])
			unix.Close(p[1])
		}
	}()
	ts.srv.Close()
	for _, p := range pairs {
		for end := 0; end < 2; end++ {
			var buf [64]byte
			if n, err := unix.Read(p[end], buf[:]); n > 0 {
				t.Fatalf("the second Close wrote %v to fd %d, opened after the first Close", buf[:n], p[1-end])
			} else if err != unix.EAGAIN {
				t.Fatalf("read socket pair: %v", err)
			}
		}
	}
}

// TestServersLeaveGOMAXPROCS: a server gives the runtime one P more than it has event loops
// (server.go startLoops); once closed it must give it back, or every server started after it in
// the process (tests start hundreds) has one event loop more than the one before, with its
// epoll set, eventfd and io_uring ring.
func TestServersLeaveGOMAXPROCS(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	for i := 0; i < 3; i++ {
		ts := startServer(t, nil)
		if got := ts.dial(t).do("PING"); got != "+PONG" {
			t.Fatalf("PING: %s", got)
		}
		ts.srv.Close()
		<-ts.served
	}
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Fatalf("GOMAXPROCS is %d after three servers were started and closed; it was %d", after, before)
	}
}
