package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	commonv1 "github.com/lavikdb/lavik/proto/lavik/common/v1"
	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
	"github.com/lavikdb/lavik/services/meta/failover"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// freeAddr returns a 127.0.0.1 address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type cluster struct {
	t       *testing.T
	peers   map[uint64]Peer
	dirs    map[uint64]string
	members map[uint64]*Member
	cfg     failover.Config
}

func startCluster(t *testing.T) *cluster {
	c := &cluster{t: t, peers: map[uint64]Peer{}, dirs: map[uint64]string{}, members: map[uint64]*Member{},
		cfg: failover.DefaultConfig}
	for id := uint64(1); id <= 3; id++ {
		c.peers[id] = Peer{Name: fmt.Sprint("meta-", id), PeerAddr: freeAddr(t), ClientAddr: freeAddr(t)}
		c.dirs[id] = t.TempDir()
	}
	for id := range c.peers {
		c.start(id)
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			m.Close()
		}
	})
	return c
}

func (c *cluster) start(id uint64) {
	p := c.peers[id]
	m, err := Start(Config{ID: id, Name: p.Name, Dir: c.dirs[id], ClientAddr: p.ClientAddr, PeerAddr: p.PeerAddr, Peers: c.peers,
		Failover: c.cfg, TickInterval: 50 * time.Millisecond, ElectionTicks: 10, Logger: quiet})
	if err != nil {
		c.t.Fatalf("start member %d: %v", id, err)
	}
	c.members[id] = m
}

func (c *cluster) stop(id uint64) {
	c.members[id].Close()
	delete(c.members, id)
}

func (c *cluster) leader() uint64 {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for id, m := range c.members {
			if m.Status().Leader == id {
				return id
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no leader elected")
	return 0
}

// client is a Meta client that follows NotLeader details, as lavikctl and data nodes do, over
// connections it keeps (a data node heartbeats on one connection).
type client struct {
	c    *cluster
	addr string
}

var conns = map[string]*grpc.ClientConn{}

func connTo(addr string) (*grpc.ClientConn, error) {
	if cc := conns[addr]; cc != nil {
		return cc, nil
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err == nil {
		conns[addr] = cc
	}
	return cc, err
}

func (cl *client) call(fn func(metav1.MetaClient) error) error {
	addr := cl.addr
	for range 20 {
		cc, err := connTo(addr)
		if err != nil {
			return err
		}
		err = fn(metav1.NewMetaClient(cc))
		st, _ := status.FromError(err)
		if st.Code() != codes.Unavailable {
			return err
		}
		addr = cl.addr
		for _, d := range st.Details() {
			if nl, ok := d.(*metav1.NotLeader); ok && nl.LeaderAddress != "" {
				addr = nl.LeaderAddress
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("no leader answered")
}

func (cl *client) heartbeat(id string, off uint64) (*metav1.HeartbeatResponse, error) {
	var r *metav1.HeartbeatResponse
	err := cl.call(func(mc metav1.MetaClient) error {
		var err error
		r, err = mc.Heartbeat(context.Background(), &metav1.HeartbeatRequest{NodeId: id, ReplicationId: "r1", ReplicationOffset: off, Health: metav1.Health_HEALTH_OK})
		return err
	})
	return r, err
}

func (cl *client) topology() *metav1.GetTopologyResponse {
	var r *metav1.GetTopologyResponse
	if err := cl.call(func(mc metav1.MetaClient) error {
		var err error
		r, err = mc.GetTopology(context.Background(), &metav1.GetTopologyRequest{})
		return err
	}); err != nil {
		panic(err)
	}
	return r
}

// TestMetaGroup: three members elect a leader; data nodes register (through any member: a
// follower points at the leader) and heartbeat; the group gets its first primary; the primary
// that stops heartbeating is replaced once its lease is over; the meta leader killed, another
// is elected and the data primary keeps its role (no data failover); the stopped member comes
// back from its directory and catches up; followers answer stale reads, the leader
// linearizable ones.
func TestMetaGroup(t *testing.T) {
	c := startCluster(t)
	lead := c.leader()
	other := lead%3 + 1
	cl := &client{c: c, addr: c.peers[other].ClientAddr}
	for _, n := range []string{"a", "b"} {
		if err := cl.call(func(mc metav1.MetaClient) error {
			_, err := mc.RegisterNode(context.Background(), &metav1.RegisterNodeRequest{NodeId: n, DataAddress: n + ":6379", ShardGroup: "g"})
			return err
		}); err != nil {
			t.Fatalf("register %s: %v", n, err)
		}
	}
	// Both heartbeat; a is further ahead, so it becomes the first primary.
	var ra, rb *metav1.HeartbeatResponse
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if ra, err = cl.heartbeat("a", 10); err != nil {
			t.Fatal(err)
		}
		if rb, err = cl.heartbeat("b", 5); err != nil {
			t.Fatal(err)
		}
		if ra.AssignedRole == commonv1.Role_ROLE_PRIMARY && ra.LeaseDurationMs > 0 && rb.PrimaryNodeId == "a" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no primary: a %v, b %v", ra, rb)
		}
		time.Sleep(c.cfg.HeartbeatInterval)
	}
	epoch1 := ra.Epoch
	if rb.AssignedRole != commonv1.Role_ROLE_FOLLOWER || rb.PrimaryAddress != "a:6379" || rb.LeaseDurationMs != 0 {
		t.Fatalf("follower's answer %v", rb)
	}
	// The meta leader dies; b and a keep heartbeating: a new leader, and no data failover.
	c.stop(lead)
	lead2 := c.leader()
	for end := time.Now().Add(3 * c.cfg.Lease); time.Now().Before(end); time.Sleep(c.cfg.HeartbeatInterval) {
		if ra, _ = cl.heartbeatVia(c.peers[lead2].ClientAddr, "a", 20); ra == nil {
			continue
		}
		cl.heartbeatVia(c.peers[lead2].ClientAddr, "b", 20)
	}
	if topo := (&client{c: c, addr: c.peers[lead2].ClientAddr}).topology(); topo.ShardGroups[0].Primary.GetNodeId() != "a" || topo.ShardGroups[0].Epoch != epoch1 {
		t.Fatalf("after the meta leader's death: %v, want a still primary at epoch %d", topo.ShardGroups[0], epoch1)
	}
	// a stops heartbeating: b takes over at a higher epoch, after a's lease.
	deadline = time.Now().Add(10 * time.Second)
	for {
		r, err := cl.heartbeatVia(c.peers[lead2].ClientAddr, "b", 30)
		if err == nil && r.AssignedRole == commonv1.Role_ROLE_PRIMARY {
			if r.Epoch <= epoch1 {
				t.Fatalf("b primary at epoch %d, not above %d", r.Epoch, epoch1)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b never promoted: %v %v", r, err)
		}
		time.Sleep(c.cfg.HeartbeatInterval)
	}
	// The stopped member comes back and catches up; a stale read on it sees b.
	c.start(lead)
	deadline = time.Now().Add(10 * time.Second)
	for {
		cc, _ := grpc.NewClient(c.peers[lead].ClientAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		r, err := metav1.NewMetaClient(cc).GetTopology(context.Background(), &metav1.GetTopologyRequest{Consistency: metav1.ReadConsistency_READ_CONSISTENCY_STALE})
		cc.Close()
		if err == nil && !r.Linearizable && len(r.ShardGroups) == 1 && r.ShardGroups[0].Primary.GetNodeId() == "b" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted member never caught up: %v %v", r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (cl *client) heartbeatVia(addr, id string, off uint64) (*metav1.HeartbeatResponse, error) {
	c2 := &client{c: cl.c, addr: addr}
	return c2.heartbeat(id, off)
}
