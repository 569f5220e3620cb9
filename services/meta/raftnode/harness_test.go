package raftnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// testSM is a real, if small, state machine: the ordered list of applied values. It counts
// Apply calls per index so that tests can check nothing is applied twice, and Restore calls so
// that tests can check a snapshot path was taken. Its state outlives a Node (as bbolt's does)
// unless a test replaces it with a fresh one.
type testSM struct {
	mu       sync.Mutex
	applied  uint64
	values   []string
	counts   map[uint64]int
	restores int
	// restoredAt is the index of the last Restore.
	restoredAt uint64
}

func newTestSM() *testSM { return &testSM{counts: make(map[uint64]int)} }

type smState struct {
	Applied uint64
	Values  []string
}

func (s *testSM) Apply(index uint64, data []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index <= s.applied {
		return nil, fmt.Errorf("testsm: apply %d at applied %d", index, s.applied)
	}
	s.counts[index]++
	s.applied = index
	s.values = append(s.values, string(data))
	return []byte(fmt.Sprint(len(s.values))), nil
}

func (s *testSM) Applied() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

func (s *testSM) Snapshot() ([]byte, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := json.Marshal(smState{Applied: s.applied, Values: s.values})
	return data, s.applied, err
}

func (s *testSM) Restore(data []byte, index uint64) error {
	var st smState
	if err := json.Unmarshal(data, &st); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied, s.values = index, st.Values
	s.restores++
	s.restoredAt = index
	return nil
}

func (s *testSM) restoredIndex() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restoredAt
}

func (s *testSM) state() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.values), s.restores
}

// twice returns an index applied more than once, or 0.
func (s *testSM) twice() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.counts {
		if c > 1 {
			return i
		}
	}
	return 0
}

// memNet is an in-memory transport: each message is marshaled and unmarshaled (no sharing
// with the sender), queued per destination in order, and delivered by one goroutine per
// member. Links can be cut and messages filtered.
type memNet struct {
	mu    sync.Mutex
	eps   map[uint64]*endpoint
	cut   map[[2]uint64]bool
	drop  func(m raftpb.Message) bool
	wg    sync.WaitGroup
	nodes map[uint64]*Node
}

type endpoint struct {
	node *Node
	in   chan raftpb.Message
	quit chan struct{}
}

func newMemNet() *memNet {
	return &memNet{eps: make(map[uint64]*endpoint), cut: make(map[[2]uint64]bool), nodes: make(map[uint64]*Node)}
}

// transport returns the Transport of member from.
func (net *memNet) transport(from uint64) Transport { return sender{net, from} }

type sender struct {
	net  *memNet
	from uint64
}

func (s sender) Send(msgs []raftpb.Message) {
	net := s.net
	net.mu.Lock()
	defer net.mu.Unlock()
	for _, m := range msgs {
		ep := net.eps[m.To]
		ok := ep != nil && !net.cut[[2]uint64{m.From, m.To}] && (net.drop == nil || !net.drop(m))
		if ok {
			b, err := m.Marshal()
			if err != nil {
				panic(err)
			}
			var c raftpb.Message
			if err := c.Unmarshal(b); err != nil {
				panic(err)
			}
			select {
			case ep.in <- c:
			default:
				ok = false
			}
		}
		if !ok && m.Type == raftpb.MsgSnap {
			if from := net.eps[m.From]; from != nil {
				go from.node.ReportSnapshot(m.To, raft.SnapshotFailure)
			}
		}
	}
}

func (net *memNet) add(n *Node) {
	ep := &endpoint{node: n, in: make(chan raftpb.Message, 4096), quit: make(chan struct{})}
	net.mu.Lock()
	net.eps[n.cfg.ID] = ep
	net.mu.Unlock()
	net.wg.Add(1)
	go func() {
		defer net.wg.Done()
		for {
			select {
			case m := <-ep.in:
				if n.Step(context.Background(), m) == nil && m.Type == raftpb.MsgSnap {
					net.mu.Lock()
					from := net.eps[m.From]
					net.mu.Unlock()
					if from != nil {
						from.node.ReportSnapshot(m.To, raft.SnapshotFinish)
					}
				}
			case <-ep.quit:
				return
			}
		}
	}()
}

func (net *memNet) remove(id uint64) {
	net.mu.Lock()
	ep := net.eps[id]
	delete(net.eps, id)
	net.mu.Unlock()
	if ep != nil {
		close(ep.quit)
	}
}

func (net *memNet) setCut(a, b uint64, cut bool) {
	net.mu.Lock()
	defer net.mu.Unlock()
	net.cut[[2]uint64{a, b}] = cut
}

func (net *memNet) setDrop(f func(m raftpb.Message) bool) {
	net.mu.Lock()
	defer net.mu.Unlock()
	net.drop = f
}

// cluster runs members over per-member MemFS file systems.
type cluster struct {
	t        *testing.T
	net      *memNet
	peers    []uint64
	fs       map[uint64]*vfs.MemFS
	sms      map[uint64]*testSM
	nodes    map[uint64]*Node
	snapN    uint64
	segBytes int64
	// confirmGap is the members' ConfirmGap.
	confirmGap time.Duration
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() && os.Getenv("RAFTNODE_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newCluster(t *testing.T, ids ...uint64) *cluster {
	c := &cluster{
		t: t, net: newMemNet(), peers: ids,
		fs: make(map[uint64]*vfs.MemFS), sms: make(map[uint64]*testSM), nodes: make(map[uint64]*Node),
		snapN: 10000, segBytes: 4 << 20,
	}
	t.Cleanup(c.stopAll)
	return c
}

func (c *cluster) config(id uint64, join bool) Config {
	return Config{
		ID: id, Peers: c.peers, Join: join, FS: c.fs[id], Dir: "/member", SM: c.sms[id],
		Transport: c.net.transport(id), Logger: testLogger(c.t).With("test", c.t.Name()),
		TickInterval: 10 * time.Millisecond, ElectionTicks: 10, HeartbeatTicks: 1,
		SnapshotEntries: c.snapN, WALSegmentBytes: c.segBytes, ConfirmGap: c.confirmGap,
	}
}

// start starts member id over its file system and state machine, creating both if new.
func (c *cluster) start(id uint64, join bool) *Node {
	c.t.Helper()
	if c.fs[id] == nil {
		c.fs[id] = vfs.NewMem()
	}
	if c.sms[id] == nil {
		c.sms[id] = newTestSM()
	}
	n, err := Start(c.config(id, join))
	if err != nil {
		c.t.Fatalf("start member %d: %v", id, err)
	}
	c.nodes[id] = n
	c.net.add(n)
	return n
}

func (c *cluster) startAll() {
	for _, id := range c.peers {
		c.start(id, false)
	}
}

func (c *cluster) stop(id uint64) {
	c.t.Helper()
	n := c.nodes[id]
	if n == nil {
		return
	}
	c.net.remove(id)
	delete(c.nodes, id)
	if err := n.Stop(); err != nil {
		c.t.Errorf("stop member %d: %v", id, err)
	}
}

func (c *cluster) stopAll() {
	for id := range c.nodes {
		c.stop(id)
	}
	c.net.wg.Wait()
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// leader waits until one running member is leader and every running member agrees.
func (c *cluster) leader() uint64 {
	c.t.Helper()
	var lead uint64
	waitFor(c.t, 10*time.Second, "a leader", func() bool {
		lead = 0
		for id, n := range c.nodes {
			if n.Status().State == raft.StateLeader.String() {
				lead = id
			}
		}
		if lead == 0 {
			return false
		}
		for _, n := range c.nodes {
			if n.Status().Leader != lead {
				return false
			}
		}
		return true
	})
	return lead
}

// propose proposes v on the current leader, retrying while leadership moves.
func (c *cluster) propose(v string) []byte {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := c.nodes[c.leader()]
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		res, err := n.Propose(ctx, []byte(v))
		cancel()
		if err == nil {
			return res
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("propose %q: %v", v, err)
		}
		if !errors.Is(err, ErrNotLeader) && !errors.Is(err, context.DeadlineExceeded) {
			c.t.Fatalf("propose %q: %v", v, err)
		}
	}
}

// converge waits until the state machines of ids hold exactly want, and checks that none
// applied an index twice.
func (c *cluster) converge(want []string, ids ...uint64) {
	c.t.Helper()
	for _, id := range ids {
		waitFor(c.t, 10*time.Second, fmt.Sprintf("member %d to apply %d values", id, len(want)), func() bool {
			got, _ := c.sms[id].state()
			return slices.Equal(got, want)
		})
		if i := c.sms[id].twice(); i != 0 {
			c.t.Fatalf("member %d applied index %d twice", id, i)
		}
	}
}

func values(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

func (c *cluster) proposeAll(vs []string) {
	c.t.Helper()
	for _, v := range vs {
		c.propose(v)
	}
}
