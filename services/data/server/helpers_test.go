package server_test

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/config"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/repl"
	"github.com/lavikdb/lavik/services/data/server"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// waitFor bounds every wait of these tests: a reply, a close, a condition polled for. It is far
// above what any of them takes, so that only a hang fails a test.
const waitFor = 10 * time.Second

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// testServer is a real Server over a real Keyspace on its own file system, listening on an
// ephemeral port of 127.0.0.1.
type testServer struct {
	srv    *server.Server
	ks     *keyspace.Keyspace
	cfg    *config.Config
	engine vlog.Engine
	node   *repl.Node // with startServerRepl
	addr   string
	// served is closed when Serve has returned serveErr.
	served   chan struct{}
	serveErr error
	stopOnce sync.Once
}

// stop stops the server and closes its keyspace (at the test's end, or earlier: a crash).
func (ts *testServer) stop(t *testing.T) {
	ts.stopOnce.Do(func() {
		if ts.node != nil {
			ts.node.Close()
		}
		ts.srv.Close()
		<-ts.served
		if ts.serveErr != nil {
			t.Errorf("Serve: %v", ts.serveErr)
		}
		// A test that injected errors may leave the log unable to sync; that is its business.
		ts.ks.Close()
		ts.engine.Close()
	})
}

// startServer starts a server whose keyspace lives on fs (an in-memory file system if nil),
// with appendfsync always and the given settings as name, value pairs. It is stopped, and its
// keyspace closed, when the test ends.
func startServer(t *testing.T, fs vfs.FS, settings ...string) *testServer {
	t.Helper()
	if fs == nil {
		fs = vfs.NewMem()
	}
	// pread reads through File.ReadAt, so it works on the in-memory and error-injecting file
	// systems; io_uring would need a real descriptor.
	engine, err := vlog.NewEngine("pread", 16)
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, fs, "/data", engine, settings...)
}

// startDiskServer is startServer on the real file system: the keyspace lives in a temporary
// directory and reads through io_uring, so that each event loop answers GETs on its own ring
// (the path the in-memory servers never take: they read through pread). inj, when not nil,
// injects errors or holds syncs (see syncGate). The test is skipped where the kernel refuses
// io_uring.
func startDiskServer(t *testing.T, inj vfs.Injector, settings ...string) *testServer {
	t.Helper()
	var fs vfs.FS = vfs.Default
	if inj != nil {
		fs = vfs.NewErrorFS(fs, inj)
	}
	return startDiskServerOn(t, fs, settings...)
}

// startDiskServerOn is startDiskServer on fs, a file system over the real one.
func startDiskServerOn(t *testing.T, fs vfs.FS, settings ...string) *testServer {
	t.Helper()
	engine, err := vlog.NewEngine("uring", 128)
	if err != nil {
		t.Skipf("the kernel refuses io_uring, which this test is about: %v", err)
	}
	return startServerOn(t, fs, t.TempDir(), engine, settings...)
}

func startServerOn(t *testing.T, fs vfs.FS, dir string, engine vlog.Engine, settings ...string) *testServer {
	t.Helper()
	return startServerRepl(t, fs, dir, engine, false, settings...)
}

// startServerRepl is startServerOn; withRepl gives the server a replication node of its own
// (ts.node), as lavik-data's main does: a primary until told to follow.
func startServerRepl(t *testing.T, fs vfs.FS, dir string, engine vlog.Engine, withRepl bool, settings ...string) *testServer {
	t.Helper()
	cfg := config.New()
	set := func(name, value string) {
		if err := cfg.SetStartup(name, value); err != nil {
			engine.Close()
			t.Fatalf("config %s %s: %v", name, value, err)
		}
	}
	set("bind", "127.0.0.1")
	set("port", "0")
	set("appendfsync", "always")
	if len(settings)%2 != 0 {
		engine.Close()
		t.Fatalf("settings %q are not name, value pairs", settings)
	}
	for i := 0; i < len(settings); i += 2 {
		set(settings[i], settings[i+1])
	}
	fsync, err := vlog.ParseFsync(cfg.Get("appendfsync"))
	if err != nil {
		engine.Close()
		t.Fatal(err)
	}
	ks, err := keyspace.Open(keyspace.Options{
		FS:                 fs,
		Dir:                dir,
		Shards:             2,
		SegmentSize:        1 << 20,
		Engine:             engine,
		Fsync:              fsync,
		Databases:          int(cfg.Int("databases")),
		Logger:             quietLogger,
		CheckpointInterval: -1,
	})
	if err != nil {
		engine.Close()
		t.Fatalf("open keyspace: %v", err)
	}
	srv := server.New(server.Options{Config: cfg, Keyspace: ks, Logger: quietLogger})
	cfg.OnChange(srv.ConfigChanged)
	if err := srv.Listen(); err != nil {
		ks.Close()
		engine.Close()
		t.Fatal(err)
	}
	ts := &testServer{srv: srv, ks: ks, cfg: cfg, engine: engine, addr: srv.Addr().String(), served: make(chan struct{})}
	if withRepl {
		ts.node = repl.New(ks, repl.Options{FS: fs, Dir: dir, BacklogSize: 64 << 20, Logger: quietLogger, Server: srv, PubSub: srv.PubSub(),
			MasterAuth: func() string { return "" }, ListeningPort: func() int { return srv.Addr().(*net.TCPAddr).Port }})
		srv.SetReplication(ts.node)
	}
	go func() {
		ts.serveErr = srv.Serve()
		close(ts.served)
	}()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

// ringReads is how many reads the event loops' rings have completed: those the keyspace counts
// beyond its own engine's.
func (ts *testServer) ringReads() uint64 {
	return ts.ks.Stats(nil).Engine.Reads - ts.engine.Stats().Reads
}

// client talks raw RESP to a test server.
type client struct {
	t  *testing.T
	nc net.Conn
	rd *resp.ReplyReader
}

func (ts *testServer) dial(t *testing.T) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", ts.addr, waitFor)
	if err != nil {
		t.Fatalf("dial %s: %v", ts.addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, rd: resp.NewReplyReader(nc)}
}

// cmd is one command's arguments.
type cmd []string

// encode appends cmds in RESP multibulk form.
func encode(dst []byte, cmds ...cmd) []byte {
	for _, c := range cmds {
		dst = resp.AppendCommandStrings(dst, c...)
	}
	return dst
}

// writeRaw sends b in one write.
func (c *client) writeRaw(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(waitFor))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send writes cmds as one pipeline, in one write.
func (c *client) send(cmds ...cmd) { c.t.Helper(); c.writeRaw(encode(nil, cmds...)) }

// read returns the next reply, rendered by show.
func (c *client) read() string {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitFor))
	v, err := c.rd.Read()
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	return show(v)
}

// do sends one command and returns its reply.
func (c *client) do(args ...string) string {
	c.t.Helper()
	c.send(args)
	return c.read()
}

// expect reads one reply per element of want and checks each, in order.
func (c *client) expect(want ...string) {
	c.t.Helper()
	for i, w := range want {
		if got := c.read(); got != w {
			c.t.Fatalf("reply %d: got %s, want %s", i, got, w)
		}
	}
}

// expectClosed checks that the server closes the connection with no further reply.
func (c *client) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitFor))
	v, err := c.rd.Read()
	switch {
	case err == nil:
		c.t.Fatalf("got reply %s; want the connection closed", show(v))
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
	default:
		c.t.Fatalf("got %v; want the connection closed", err)
	}
}

// show renders a reply compactly: +OK, -ERR ..., :1, "bulk", (nil), [a b].
func show(v resp.Value) string {
	switch v.Kind {
	case resp.SimpleString:
		return "+" + string(v.Str)
	case resp.Error:
		return "-" + string(v.Str)
	case resp.Integer:
		return ":" + strconv.FormatInt(v.Int, 10)
	case resp.BulkString:
		return strconv.Quote(string(v.Str))
	case resp.Null:
		return "(nil)"
	case resp.Array:
		parts := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			parts[i] = show(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return v.String()
}

// bulk is how show renders a bulk string reply.
func bulk(s string) string { return strconv.Quote(s) }

// eventually polls cond until it holds, failing the test after waitFor.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after %v", what, waitFor)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
