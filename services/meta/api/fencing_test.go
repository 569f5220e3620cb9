package api

// Fencing across meta leader changes, with the real pieces: three members (raft, state
// machine, authority, gRPC) over a raft transport that drops chosen links and delays messages,
// and two data nodes (repl.Node over an in-memory keyspace, served by a real server so that
// the follower replicates) driven by the real metalink.Link, whose connections to chosen
// members can be cut.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"

	"github.com/lavikdb/lavik/pkg/testseed"
	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/config"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/metalink"
	"github.com/lavikdb/lavik/services/data/repl"
	"github.com/lavikdb/lavik/services/data/server"
	"github.com/lavikdb/lavik/services/data/vlog"
	"github.com/lavikdb/lavik/services/meta/failover"
)

// raftNet is the members' network: links cut by (from, to), and every message that passes
// delayed at random (and, at the trial's rate, lost).
type raftNet struct {
	mu       sync.Mutex
	rng      *rand.Rand
	cut      map[[2]uint64]bool
	maxDelay time.Duration
	loss     float64
}

func (n *raftNet) fault(m raftpb.Message) (bool, time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut[[2]uint64{m.From, m.To}] || n.rng.Float64() < n.loss {
		return true, 0
	}
	if n.maxDelay == 0 {
		return false, 0
	}
	return false, time.Duration(n.rng.Int64N(int64(n.maxDelay)))
}

// isolate cuts member id off from the others, both ways.
func (n *raftNet) isolate(id uint64, others []uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, o := range others {
		n.cut[[2]uint64{id, o}] = true
		n.cut[[2]uint64{o, id}] = true
	}
}

// cutDialer is a data node's way to the members: dials to a cut address fail, and cutting an
// address closes the connections open to it, as a partition would.
type cutDialer struct {
	mu    sync.Mutex
	cut   map[string]bool
	conns map[string][]net.Conn
}

var errCut = errors.New("cut off")

func (d *cutDialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	d.mu.Lock()
	cut := d.cut[addr]
	d.mu.Unlock()
	if cut {
		return nil, errCut
	}
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut[addr] {
		c.Close()
		return nil, errCut
	}
	d.conns[addr] = append(d.conns[addr], c)
	return c, nil
}

func (d *cutDialer) setCut(addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut[addr] = true
	for _, c := range d.conns[addr] {
		c.Close()
	}
	delete(d.conns, addr)
}

// span is one acknowledgement check: Writable was called after before and returned by after.
type span struct{ before, after time.Time }

// writableLog records a node's acknowledgement checks that found it writable: the first and
// the last.
type writableLog struct {
	mu          sync.Mutex
	seen        bool
	first, last span
}

func (w *writableLog) get() (first, last span, seen bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first, w.last, w.seen
}

// dataNode is one in-process data node under meta.
type dataNode struct {
	id   string
	node *repl.Node
	link *metalink.Link
	dial *cutDialer
	log  writableLog
}

// watch checks Writable every 200 µs, as a write's acknowledgement would, until stop closes.
func (d *dataNode) watch(stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case <-stop:
			return
		default:
		}
		before := time.Now()
		w := d.node.Writable()
		after := time.Now()
		if w {
			d.log.mu.Lock()
			if !d.log.seen {
				d.log.first, d.log.seen = span{before, after}, true
			}
			d.log.last = span{before, after}
			d.log.mu.Unlock()
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// startDataNode starts data node id of group g under the members at metaAddrs: keyspace,
// replication, RESP server (for its follower) and meta link, with heartbeats to meta delayed
// by up to rpcDelay each way.
func startDataNode(t *testing.T, id string, metaAddrs []string, rpcDelay func() time.Duration) *dataNode {
	t.Helper()
	fs := vfs.NewMem()
	engine, err := vlog.NewEngine("pread", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close() })
	ks, err := keyspace.Open(keyspace.Options{FS: fs, Dir: "/data", Shards: 2, SegmentSize: 1 << 20, Engine: engine,
		Fsync: vlog.FsyncEverysec, Databases: 16, Logger: quiet, CheckpointInterval: -1, Follower: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	cfg := config.New()
	for _, kv := range [][2]string{{"bind", "127.0.0.1"}, {"port", "0"}} {
		if err := cfg.SetStartup(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	srv := server.New(server.Options{Config: cfg, Keyspace: ks, Logger: quiet})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	node := repl.New(ks, repl.Options{FS: fs, Dir: "/data", BacklogSize: 1 << 20, Logger: quiet, Server: srv, PubSub: srv.PubSub(),
		MasterAuth: func() string { return "" }, ListeningPort: func() int { return srv.Addr().(*net.TCPAddr).Port }})
	srv.SetReplication(node)
	served := make(chan struct{})
	go func() { srv.Serve(); close(served) }()
	t.Cleanup(func() { srv.Close(); <-served; node.Close() })
	ident, err := repl.LoadIdentity(fs, "/data", id)
	if err != nil {
		t.Fatal(err)
	}
	d := &dataNode{id: id, node: node, dial: &cutDialer{cut: map[string]bool{}, conns: map[string][]net.Conn{}}}
	delay := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		time.Sleep(rpcDelay())
		err := invoke(ctx, method, req, reply, cc, opts...)
		time.Sleep(rpcDelay())
		return err
	}
	d.link = metalink.Start(metalink.Config{Meta: metaAddrs, DataAddr: srv.Addr().String(), ShardGroup: "g", Version: "test", Logger: quiet,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(d.dial.dial), grpc.WithUnaryInterceptor(delay)}}, node, ident)
	t.Cleanup(d.link.Close) // runs first: the link stops before the node and the members
	return d
}

// TestFencingAcrossLeaderChange isolates the meta leader together with the primary: the
// primary reaches only that member, the follower only the other two, and the leader's raft
// links to them are cut, while every raft message that passes is delayed at random (and some
// are lost). The two members elect a leader, which promotes the follower; the old leader
// keeps answering the primary until raft deposes it. The old primary's last acknowledged
// write (the last check of Writable that found it writable) must come before the new
// primary's first. Over many seeds: the old leader's grants are bounded by its last proof of
// leadership, which the new leader's election follows, or this fails.
//
// LAVIK_FENCING_TRIALS sets the number of trials (default 8); LAVIK_FENCING_SEED the first
// trial's seed (trial i runs seed+i).
func TestFencingAcrossLeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds a trial")
	}
	seed := testseed.Seed(t, "LAVIK_FENCING_SEED")
	trials := 8
	if s := os.Getenv("LAVIK_FENCING_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LAVIK_FENCING_TRIALS=%q", s)
		}
		trials = n
	}
	for i := range uint64(trials) {
		s := seed + i
		t.Run(fmt.Sprint("seed=", s), func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("rerun with LAVIK_FENCING_SEED=%d LAVIK_FENCING_TRIALS=1", s)
				}
			})
			fencingTrial(t, s)
		})
	}
}

func fencingTrial(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 21))
	cfg := failover.Config{HeartbeatInterval: 50 * time.Millisecond, Lease: 300 * time.Millisecond, FailAfter: 150 * time.Millisecond}
	const tick, electionTicks = 40 * time.Millisecond, 10
	election := tick * electionTicks
	rn := &raftNet{rng: rand.New(rand.NewPCG(seed, 22)), cut: map[[2]uint64]bool{},
		maxDelay: []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 15 * time.Millisecond}[rng.IntN(4)],
		loss:     []float64{0, 0, 0.01, 0.05}[rng.IntN(4)]}
	var rpcMu sync.Mutex
	rpcRng := rand.New(rand.NewPCG(seed, 23))
	maxRPC := []time.Duration{0, 2 * time.Millisecond, 10 * time.Millisecond}[rng.IntN(3)]
	rpcDelay := func() time.Duration {
		if maxRPC == 0 {
			return 0
		}
		rpcMu.Lock()
		defer rpcMu.Unlock()
		return time.Duration(rpcRng.Int64N(int64(maxRPC)))
	}
	t.Logf("raft messages delayed up to %v, %.0f%% lost; heartbeats delayed up to %v each way", rn.maxDelay, rn.loss*100, maxRPC)

	ids := []uint64{1, 2, 3}
	peers := map[uint64]Peer{}
	for _, id := range ids {
		peers[id] = Peer{Name: fmt.Sprint("meta-", id), PeerAddr: freeAddr(t), ClientAddr: freeAddr(t)}
	}
	members := map[uint64]*Member{}
	for _, id := range ids {
		p := peers[id]
		m, err := Start(Config{ID: id, Name: p.Name, Dir: t.TempDir(), ClientAddr: p.ClientAddr, PeerAddr: p.PeerAddr, Peers: peers,
			Failover: cfg, TickInterval: tick, ElectionTicks: electionTicks, Logger: quiet, RaftFault: rn.fault})
		if err != nil {
			t.Fatalf("start member %d: %v", id, err)
		}
		members[id] = m
		t.Cleanup(func() { m.Close() })
	}
	var metaAddrs []string
	for _, id := range ids {
		metaAddrs = append(metaAddrs, peers[id].ClientAddr)
	}
	nodes := []*dataNode{startDataNode(t, "a", metaAddrs, rpcDelay), startDataNode(t, "b", metaAddrs, rpcDelay)}

	// Placed: one node takes writes, the other follows it, streaming.
	var primary, follower *dataNode
	deadline := time.Now().Add(30 * time.Second)
	for primary == nil {
		if time.Now().After(deadline) {
			t.Fatal("no writable primary with a streaming follower in 30 s")
		}
		for i, d := range nodes {
			o := nodes[1-i]
			if st := o.node.Status(); d.node.Writable() && st.Follower && st.LinkState == "connected" {
				primary, follower = d, o
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(time.Duration(rng.Int64N(int64(2 * cfg.HeartbeatInterval)))) // any phase of the heartbeats and ticks

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go primary.watch(stop, &wg)
	go follower.watch(stop, &wg)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	// The leader beside the primary: the one of the highest term that says it leads (with
	// messages lost, an election may be under way: wait for its end).
	var lead, term uint64
	for deadline := time.Now().Add(30 * time.Second); lead == 0; time.Sleep(time.Millisecond) {
		for id, m := range members {
			if st := m.Status(); st.Leader == id && st.Term > term {
				lead, term = id, st.Term
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no member has led in 30 s")
		}
	}
	var others []uint64
	for _, id := range ids {
		if id != lead {
			others = append(others, id)
			primary.dial.setCut(peers[id].ClientAddr)
		}
	}
	follower.dial.setCut(peers[lead].ClientAddr)
	rn.isolate(lead, others)
	cut := time.Now()
	t.Logf("member %d (term %d) cut off with primary %s; follower %s with members %v", lead, term, primary.id, follower.id, others)

	deadline = cut.Add(30 * time.Second)
	for {
		if _, _, ok := follower.log.get(); ok {
			break
		}
		if time.Now().After(deadline) {
			for id, m := range members {
				t.Logf("member %d: %+v", id, m.Status())
			}
			t.Fatalf("%s never took writes after the partition", follower.id)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The old primary may write on for as long as its leader keeps granting: until raft
	// deposes that leader (within two election timeouts) and the last grant runs out. Watch
	// past that.
	until := cut.Add(2*election + cfg.Lease + 300*time.Millisecond)
	time.Sleep(time.Until(until))
	close(stop)
	wg.Wait()

	_, oldLast, ok := primary.log.get()
	newFirst, _, _ := follower.log.get()
	if !ok {
		// It lost its lease (messages lost) between being picked and the watch: nothing to
		// order, and nothing wrong.
		t.Logf("the old primary took no write after the watch began")
		return
	}
	t.Logf("cut at 0: the old primary's last acknowledgement check that passed at %v, the new primary's first at %v",
		oldLast.before.Sub(cut).Round(time.Millisecond), newFirst.after.Sub(cut).Round(time.Millisecond))
	// A check took place between its before and after: the new primary surely took writes
	// before the old one's last acknowledgement when its first check ended before that one
	// began.
	if newFirst.after.Before(oldLast.before) {
		t.Fatalf("two writable primaries: %s took writes from %v after the cut, %s until %v (for %v at once)",
			follower.id, newFirst.after.Sub(cut).Round(time.Millisecond), primary.id, oldLast.before.Sub(cut).Round(time.Millisecond),
			oldLast.before.Sub(newFirst.after).Round(time.Millisecond))
	}
}
