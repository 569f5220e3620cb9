package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/config"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/repl"
	"github.com/lavikdb/lavik/services/data/server"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// leasedServer is a server over a node whose syncs gate can hold, with a client.
type leasedServer struct {
	node *repl.Node
	gate *syncGate
	c    *client
}

func startLeasedServer(t *testing.T) leasedServer {
	gate := newSyncGate()
	t.Cleanup(gate.open)
	fs := vfs.NewErrorFS(vfs.NewMem(), gate)
	engine, err := vlog.NewEngine("pread", 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close() })
	ks, err := keyspace.Open(keyspace.Options{FS: fs, Dir: "/data", Shards: 2, SegmentSize: 1 << 20, Engine: engine,
		Fsync: vlog.FsyncAlways, Databases: 16, Logger: quietLogger, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	node := repl.New(ks, repl.Options{FS: fs, Dir: "/data", BacklogSize: 1 << 20, Logger: quietLogger,
		MasterAuth: func() string { return "" }, ListeningPort: func() int { return 0 }})
	t.Cleanup(func() { node.Close() })
	cfg := config.New()
	for _, kv := range [][2]string{{"bind", "127.0.0.1"}, {"port", "0"}, {"appendfsync", "always"}} {
		if err := cfg.SetStartup(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	srv := server.New(server.Options{Config: cfg, Keyspace: ks, Logger: quietLogger, Replication: node})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { srv.Serve(); close(served) }()
	t.Cleanup(func() { srv.Close(); <-served })
	ts := &testServer{srv: srv, ks: ks, cfg: cfg, addr: srv.Addr().String()}
	c := ts.dial(t)

	return leasedServer{node: node, gate: gate, c: c}
}

// revokeDuringSync sends cmds, the first a write, holds its group commit while the lease ends,
// and checks that the write's reply says the lease ran out.
func (ls leasedServer) revokeDuringSync(t *testing.T, cmds ...cmd) {
	t.Helper()
	ls.gate.armed.Store(true)
	ls.c.send(cmds...)
	reply := pending(ls.c)
	select {
	case <-ls.gate.entered:
	case <-time.After(waitFor):
		t.Fatal("the write's sync never started")
	}
	ls.node.RevokeLease()
	ls.gate.armed.Store(false)
	ls.gate.open()
	if got := replyOf(t, reply); !strings.HasPrefix(got, "-READONLY lavik: this primary's lease ran out") {
		t.Fatalf("a write acknowledged after the lease ended: %.80s", got)
	}
}

// TestLeaseFencesWrites: a primary under meta takes writes only while it holds a lease. Without
// one a write is refused with READONLY before it runs; with one it is served; and a write whose
// group commit is in flight when the lease ends gets READONLY too instead of an acknowledgement
// (it may have been applied, but no client was told so after the lease). Reads go on throughout.
func TestLeaseFencesWrites(t *testing.T) {
	ls := startLeasedServer(t)
	node, c := ls.node, ls.c
	c.send(cmd{"SET", "k", "before"})
	c.expect("+OK")
	node.RequireLease(true)
	if got := c.do("SET", "k", "no-lease"); !strings.HasPrefix(got, "-READONLY lavik: this primary holds no lease") {
		t.Fatalf("SET without a lease: %s", got)
	}
	c.send(cmd{"GET", "k"})
	c.expect(bulk("before"))

	node.GrantLease(node.LeaseClock(), time.Minute, 1)
	c.send(cmd{"SET", "k", "leased"})
	c.expect("+OK")

	// The group commit of this write is held while the lease ends.
	ls.revokeDuringSync(t, cmd{"SET", "k", "in-flight"})
	c.send(cmd{"GET", "k"})
	if got := replyOf(t, pending(c)); got != bulk("in-flight") && got != bulk("leased") {
		t.Fatalf("GET after: %s", got)
	}
}

// TestLeaseLostMidReply: a long reply flushed in the middle of a detached command (a GET of a
// large value) passes the same checks as the final flush: when the lease ends while the
// writes before it wait for their group commit, neither the write's acknowledgement nor any of
// the long reply goes out.
func TestLeaseLostMidReply(t *testing.T) {
	ls := startLeasedServer(t)
	node, c := ls.node, ls.c
	node.RequireLease(true)
	node.GrantLease(node.LeaseClock(), time.Minute, 1)
	big := strings.Repeat("v", 300<<10)
	c.send(cmd{"SET", "big", big})
	c.expect("+OK")

	ls.revokeDuringSync(t, cmd{"SET", "k", "in-flight"}, cmd{"GET", "big"})
	if got := replyOf(t, pending(c)); !strings.HasPrefix(got, "-READONLY") {
		t.Fatalf("the long reply after it: %.80s", got)
	}
	c.send(cmd{"GET", "k"})
	if got := replyOf(t, pending(c)); got != bulk("in-flight") {
		t.Fatalf("GET after: %s", got)
	}
}
