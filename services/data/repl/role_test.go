package repl

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// roleNode opens a keyspace in /data of fs and a node over it; both close with the test.
func roleNode(t *testing.T, fs vfs.FS) (*Node, *keyspace.Keyspace) {
	t.Helper()
	engine, err := vlog.NewEngine("pread", 16)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ks, err := keyspace.Open(keyspace.Options{FS: fs, Dir: "/data", Shards: 2, SegmentSize: 1 << 20, Engine: engine,
		Fsync: vlog.FsyncAlways, Databases: 16, Logger: quiet, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	n := New(ks, Options{FS: fs, Dir: "/data", BacklogSize: 1 << 20, Logger: quiet,
		MasterAuth: func() string { return "" }, ListeningPort: func() int { return 0 }})
	t.Cleanup(func() {
		n.Close()
		ks.Close()
		engine.Close()
	})
	return n, ks
}

// TestIncompleteMarkLifecycle: the mark a full resync writes before its FLUSHALL survives a
// crash (the next start still reports the data incomplete, in Status and INFO), and is removed
// at start-up when the replication state shows the snapshot it waited for did load (the crash
// came after the state and before the mark's removal); a state of another history, or short of
// the snapshot's offset, leaves it.
func TestIncompleteMarkLifecycle(t *testing.T) {
	mem := vfs.NewMem()
	n, ks := roleNode(t, mem)
	if inc, _ := n.Incomplete(); inc {
		t.Fatal("a node that never synced standalone starts incomplete")
	}
	const id = "1111111111111111111111111111111111111111"
	if err := n.markIncomplete(incompleteMark{replid: id, offset: 500, reason: "full resync from p:1 not finished"}); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.writeStateLocked(replState{replid: id, offset: 499, db: -1}) // short of the snapshot
	n.mu.Unlock()
	ks.WaitAll()

	for _, step := range []struct {
		state    replState
		complete bool
	}{
		{replState{replid: id, offset: 499, db: -1}, false},
		{replState{replid: strings.Repeat("2", 40), offset: 900, db: -1}, false},
		{replState{replid: id, offset: 500, db: -1}, true},
	} {
		crashed := mem.CrashClone()
		n2, ks2 := roleNode(t, crashed)
		n2.mu.Lock()
		n2.writeStateLocked(step.state)
		n2.mu.Unlock()
		if err := ks2.SyncAll(); err != nil {
			t.Fatal(err)
		}
		n3, _ := roleNode(t, crashed.CrashClone())
		inc, why := n3.Incomplete()
		if inc == step.complete {
			t.Fatalf("state %+v: incomplete %v (%s), want %v", step.state, inc, why, !step.complete)
		}
		var b strings.Builder
		n3.Info(&b)
		want := "lavik_data_complete:0\r\nlavik_data_incomplete_reason:full resync from p:1 not finished\r\n"
		if step.complete {
			want = "lavik_data_complete:1\r\n"
		}
		if !strings.Contains(b.String(), want) {
			t.Fatalf("INFO replication lacks %q:\n%s", want, b.String())
		}
		if st := n3.Status(); st.Incomplete == step.complete {
			t.Fatalf("Status().Incomplete = %v", st.Incomplete)
		}
	}
}

// TestManagedRoles: under meta only Assign changes the role. A new data directory starts
// incomplete; clients' REPLICAOF, SLAVEOF's path and LAVIK.RESYNC are refused naming lavikctl;
// an answer at an epoch older than the node has seen changes nothing; the first placement as
// primary makes the data the group's (the mark goes) and the epoch is persisted before; a
// rebuild needs the current epoch and a node that follows.
func TestManagedRoles(t *testing.T) {
	mem := vfs.NewMem()
	n, _ := roleNode(t, mem)
	ident, err := LoadIdentity(mem, "/data", "n1")
	if err != nil {
		t.Fatal(err)
	}
	n.Manage(ident)
	if inc, why := n.Incomplete(); !inc || !strings.Contains(why, "new data directory") {
		t.Fatalf("a new managed node: incomplete %v (%s)", inc, why)
	}
	if err := n.ReplicaOf("127.0.0.1", 1); !errors.Is(err, ErrManaged) || !strings.Contains(err.Error(), "lavikctl") {
		t.Fatalf("REPLICAOF under meta: %v", err)
	}
	if err := n.ReplicaOf("", 0); !errors.Is(err, ErrManaged) {
		t.Fatalf("REPLICAOF NO ONE under meta: %v", err)
	}
	if err := n.Resync(); !errors.Is(err, ErrManaged) {
		t.Fatalf("LAVIK.RESYNC under meta: %v", err)
	}
	if err := n.Assign(Assignment{Epoch: 5, Primary: true}); err != nil {
		t.Fatal(err)
	}
	if ident.Epoch() != 5 {
		t.Fatalf("epoch %d after an answer at 5", ident.Epoch())
	}
	if inc, why := n.Incomplete(); inc {
		t.Fatalf("made primary by meta, still incomplete: %s", why)
	}
	if n.Writable() {
		t.Fatal("writable without a lease")
	}
	if err := n.Assign(Assignment{Epoch: 4, PrimaryAddr: "127.0.0.1:1"}); !errors.Is(err, ErrStaleEpoch) || n.Follower() {
		t.Fatalf("an answer at an older epoch: %v (follower %v)", err, n.Follower())
	}
	if _, err := n.Rebuild("127.0.0.1", 1, 5); err == nil {
		t.Fatal("a primary was rebuilt")
	}
	if err := n.Assign(Assignment{Epoch: 6, PrimaryAddr: "127.0.0.1:1"}); err != nil || !n.Follower() {
		t.Fatalf("stepping down: %v (follower %v)", err, n.Follower())
	}
	for _, tc := range []struct {
		addr  string
		port  int
		epoch uint64
		want  string
	}{
		{"127.0.0.1", 1, 0, "must name the node's current epoch (6)"},
		{"127.0.0.1", 1, 5, "at epoch 6, not 5"},
		{"127.0.0.1", 2, 6, "follows 127.0.0.1:1, as lavik-meta assigned"},
	} {
		if _, err := n.Rebuild(tc.addr, tc.port, tc.epoch); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("Rebuild(%s:%d, %d): %v, want %q", tc.addr, tc.port, tc.epoch, err, tc.want)
		}
	}
	if _, err := n.Rebuild("127.0.0.1", 1, 6); err != nil {
		t.Fatalf("a rebuild at the current epoch from the assigned primary: %v", err)
	}
}
