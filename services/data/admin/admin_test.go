package admin_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/lavikdb/lavik/pkg/vfs"
	commonv1 "github.com/lavikdb/lavik/proto/lavik/common/v1"
	datav1 "github.com/lavikdb/lavik/proto/lavik/data/v1"
	"github.com/lavikdb/lavik/services/data/admin"
	"github.com/lavikdb/lavik/services/data/config"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/repl"
	"github.com/lavikdb/lavik/services/data/server"
	"github.com/lavikdb/lavik/services/data/vlog"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// node is a real lavik-data node in the test process: keyspace, replication, RESP server and
// admin API, each on 127.0.0.1 ephemeral ports.
type node struct {
	ks    *keyspace.Keyspace
	repl  *repl.Node
	srv   *server.Server
	port  int
	admin datav1.DataAdminClient
}

func startNode(t *testing.T, ident *repl.Identity) *node {
	t.Helper()
	engine, err := vlog.NewEngine("pread", 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close() })
	fs := vfs.NewMem()
	ks, err := keyspace.Open(keyspace.Options{FS: fs, Dir: "/data", Shards: 2, SegmentSize: 1 << 20, Engine: engine,
		Fsync: vlog.FsyncEverysec, Databases: 16, Logger: quiet, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	cfg := config.New()
	cfg.SetStartup("bind", "127.0.0.1")
	cfg.SetStartup("port", "0")
	n := &node{ks: ks}
	n.srv = server.New(server.Options{Config: cfg, Keyspace: ks, Logger: quiet})
	if err := n.srv.Listen(); err != nil {
		t.Fatal(err)
	}
	n.port = n.srv.Addr().(*net.TCPAddr).Port
	n.repl = repl.New(ks, repl.Options{FS: fs, Dir: "/data", BacklogSize: 1 << 20, Logger: quiet, Server: n.srv,
		MasterAuth: func() string { return "" }, ListeningPort: func() int { return n.port }})
	n.srv.SetReplication(n.repl)
	served := make(chan struct{})
	go func() { n.srv.Serve(); close(served) }()
	t.Cleanup(func() { n.srv.Close(); <-served; n.repl.Close() })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := admin.Serve(lis, admin.New(n.repl, ks, ident, "test"))
	t.Cleanup(g.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	n.admin = datav1.NewDataAdminClient(cc)
	return n
}

func (n *node) status(t *testing.T) *datav1.StatusResponse {
	t.Helper()
	r, err := n.admin.Status(context.Background(), &datav1.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAdminStatusAndRebuild: a standalone node reports itself standalone and writable; a
// follower reports its primary, its link and its offset reaching the primary's; the primary
// lists the follower with its acknowledged offset; Rebuild of the follower does a full resync
// (the primary counts it), and is refused on the primary.
func TestAdminStatusAndRebuild(t *testing.T) {
	mem := vfs.NewMem()
	mem.MkdirAll("/id", 0o755)
	ident, err := repl.LoadIdentity(mem, "/id", "data-b")
	if err != nil {
		t.Fatal(err)
	}
	a := startNode(t, nil)
	b := startNode(t, ident)
	if st := a.status(t); st.Role != commonv1.Role_ROLE_STANDALONE || !st.Writable || st.NodeId != "" {
		t.Fatalf("standalone status %v", st)
	}
	se := a.ks.NewSession()
	for i := range 100 {
		se.Propagate(0, [][]byte{[]byte("SET"), []byte(strconv.Itoa(i)), []byte("v")})
		if err := a.ks.Put(se, 0, []byte(strconv.Itoa(i)), []byte("v"), 0, keyspace.TypeString); err != nil {
			t.Fatal(err)
		}
	}
	se.Wait()
	if err := b.repl.ReplicaOf("127.0.0.1", a.port); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var fs, ps *datav1.StatusResponse
	for {
		fs, ps = b.status(t), a.status(t)
		if fs.PrimaryLink != nil && fs.PrimaryLink.State == datav1.LinkState_LINK_STATE_ONLINE && fs.KeyCount == 100 &&
			len(ps.Followers) == 1 && ps.Followers[0].AckedOffset == ps.ReplicationOffset && fs.ReplicationOffset == ps.ReplicationOffset {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("follower never in step: follower %v, primary %v", fs, ps)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if fs.Role != commonv1.Role_ROLE_FOLLOWER || fs.Writable || fs.NodeId != "data-b" || fs.ReplicationId != ps.ReplicationId ||
		fs.PrimaryLink.PrimaryAddress != net.JoinHostPort("127.0.0.1", strconv.Itoa(a.port)) {
		t.Fatalf("follower status %v (primary %v)", fs, ps)
	}
	full0 := a.repl.Stats().SyncFull
	r, err := b.admin.Rebuild(context.Background(), &datav1.RebuildRequest{PrimaryAddress: fs.PrimaryLink.PrimaryAddress})
	if err != nil || r.AlreadyRunning {
		t.Fatalf("Rebuild: %v, %v", r, err)
	}
	for a.repl.Stats().SyncFull != full0+1 {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the rebuild did no full resync")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = a.admin.Rebuild(context.Background(), &datav1.RebuildRequest{PrimaryAddress: "127.0.0.1:1"})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("Rebuild of a primary: %v, want FAILED_PRECONDITION", err)
	}
	_, err = b.admin.Rebuild(context.Background(), &datav1.RebuildRequest{PrimaryAddress: "nonsense"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Rebuild with a bad address: %v, want INVALID_ARGUMENT", err)
	}
}
