package metav1_test

import (
	"context"
	"errors"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
)

func TestHeartbeatRoundTrip(t *testing.T) {
	in := &metav1.HeartbeatRequest{
		NodeId:            "data-1",
		Role:              metav1.Role_ROLE_PRIMARY,
		Epoch:             7,
		ReplicationId:     "8f1c0e3a9b2d4c5e6f708192a3b4c5d6e7f80912",
		ReplicationOffset: 1 << 40,
		Health:            metav1.Health_HEALTH_DEGRADED,
		HealthDetail:      "disk full",
	}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	out := &metav1.HeartbeatRequest{}
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if !proto.Equal(in, out) {
		t.Fatalf("round trip changed the message:\n in: %v\nout: %v", in, out)
	}

	resp := &metav1.HeartbeatResponse{
		AssignedRole:        metav1.Role_ROLE_PRIMARY,
		Epoch:               7,
		LeaseDurationMs:     3000,
		LeaseExpiresUnixMs:  1_700_000_000_000,
		HeartbeatIntervalMs: 500,
	}
	b, err = proto.Marshal(resp)
	if err != nil {
		t.Fatalf("marshal response: %v", err)
	}
	got := &metav1.HeartbeatResponse{}
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatalf("unmarshal response: %v", err)
	}
	if !proto.Equal(resp, got) {
		t.Fatalf("response round trip changed the message:\n in: %v\nout: %v", resp, got)
	}
}

// fakeMeta is a minimal in-memory Meta: one shard group, the first node registered becomes
// its primary at epoch 1, and Promote moves the primary to the target at the next epoch.
type fakeMeta struct {
	metav1.UnimplementedMetaServer

	mu      sync.Mutex
	epoch   uint64
	primary string
	nodes   map[string]*metav1.NodeInfo
}

func (m *fakeMeta) RegisterNode(_ context.Context, req *metav1.RegisterNodeRequest) (*metav1.RegisterNodeResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if req.GetNodeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "meta: node_id is empty")
	}
	role := metav1.Role_ROLE_FOLLOWER
	if m.primary == "" {
		m.primary, m.epoch, role = req.GetNodeId(), 1, metav1.Role_ROLE_PRIMARY
	}
	m.nodes[req.GetNodeId()] = &metav1.NodeInfo{
		NodeId: req.GetNodeId(), DataAddress: req.GetDataAddress(),
		AdminAddress: req.GetAdminAddress(), Role: role, Version: req.GetVersion(),
	}
	return &metav1.RegisterNodeResponse{
		AssignedRole: role, Epoch: m.epoch, HeartbeatIntervalMs: 500,
		PrimaryNodeId: m.primaryIDLocked(req.GetNodeId()), PrimaryAddress: m.primaryAddrLocked(req.GetNodeId()),
	}, nil
}

func (m *fakeMeta) Heartbeat(_ context.Context, req *metav1.HeartbeatRequest) (*metav1.HeartbeatResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[req.GetNodeId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "meta: node %q is not registered", req.GetNodeId())
	}
	n.Health, n.ReplicationId, n.ReplicationOffset = req.GetHealth(), req.GetReplicationId(), req.GetReplicationOffset()
	resp := &metav1.HeartbeatResponse{
		AssignedRole: n.GetRole(), Epoch: m.epoch, HeartbeatIntervalMs: 500,
		PrimaryNodeId: m.primaryIDLocked(n.GetNodeId()), PrimaryAddress: m.primaryAddrLocked(n.GetNodeId()),
	}
	if n.GetRole() == metav1.Role_ROLE_PRIMARY {
		resp.LeaseDurationMs = 3000
	}
	return resp, nil
}

func (m *fakeMeta) GetTopology(context.Context, *metav1.GetTopologyRequest) (*metav1.GetTopologyResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := &metav1.ShardGroup{Id: "g0", Epoch: m.epoch, Slots: []*metav1.SlotRange{{Start: 0, End: 16383}}}
	for _, id := range slices.Sorted(maps.Keys(m.nodes)) {
		if id == m.primary {
			g.Primary = m.nodes[id]
		} else {
			g.Followers = append(g.Followers, m.nodes[id])
		}
	}
	return &metav1.GetTopologyResponse{ShardGroups: []*metav1.ShardGroup{g}, Version: m.epoch}, nil
}

func (m *fakeMeta) Promote(_ context.Context, req *metav1.PromoteRequest) (*metav1.PromoteResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := req.GetExpectedEpoch(); e != 0 && e != m.epoch {
		return nil, status.Errorf(codes.FailedPrecondition, "meta: shard group is at epoch %d, not %d", m.epoch, e)
	}
	target, ok := m.nodes[req.GetTargetNodeId()]
	if !ok || target.GetRole() != metav1.Role_ROLE_FOLLOWER {
		return nil, status.Errorf(codes.FailedPrecondition, "meta: %q is not a follower", req.GetTargetNodeId())
	}
	old := m.nodes[m.primary]
	old.Role, target.Role = metav1.Role_ROLE_FOLLOWER, metav1.Role_ROLE_PRIMARY
	var lag uint64
	if old.GetReplicationOffset() > target.GetReplicationOffset() {
		lag = old.GetReplicationOffset() - target.GetReplicationOffset()
	}
	m.primary = target.GetNodeId()
	m.epoch++
	return &metav1.PromoteResponse{Epoch: m.epoch, PrimaryNodeId: m.primary, CaughtUp: lag == 0, LagBytes: lag}, nil
}

func (m *fakeMeta) primaryIDLocked(self string) string {
	if m.primary == self {
		return ""
	}
	return m.primary
}

func (m *fakeMeta) primaryAddrLocked(self string) string {
	if m.primary == self || m.primary == "" {
		return ""
	}
	return m.nodes[m.primary].GetDataAddress()
}

// TestMetaOverGRPC serves the generated Meta service on a real listener and drives every RPC
// through the generated client, the way lavik-data and lavikctl will.
func TestMetaOverGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := grpc.NewServer()
	metav1.RegisterMetaServer(srv, &fakeMeta{nodes: map[string]*metav1.NodeInfo{}})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve: %v", err)
		}
	})

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	c := metav1.NewMetaClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for _, n := range []struct{ id, data string }{{"data-1", "10.0.0.1:6379"}, {"data-2", "10.0.0.2:6379"}} {
		if _, err := c.RegisterNode(ctx, &metav1.RegisterNodeRequest{
			NodeId: n.id, DataAddress: n.data, AdminAddress: "127.0.0.1:7379", ShardGroup: "g0", Version: "test",
		}); err != nil {
			t.Fatalf("RegisterNode %s: %v", n.id, err)
		}
	}

	hb, err := c.Heartbeat(ctx, &metav1.HeartbeatRequest{
		NodeId: "data-1", Role: metav1.Role_ROLE_PRIMARY, Epoch: 1,
		ReplicationId: "r1", ReplicationOffset: 100, Health: metav1.Health_HEALTH_OK,
	})
	if err != nil {
		t.Fatalf("Heartbeat data-1: %v", err)
	}
	if hb.GetAssignedRole() != metav1.Role_ROLE_PRIMARY || hb.GetEpoch() != 1 || hb.GetLeaseDurationMs() == 0 {
		t.Fatalf("Heartbeat data-1 = %v, want primary at epoch 1 with a lease", hb)
	}
	hb, err = c.Heartbeat(ctx, &metav1.HeartbeatRequest{
		NodeId: "data-2", Role: metav1.Role_ROLE_FOLLOWER, Epoch: 1,
		ReplicationId: "r1", ReplicationOffset: 100, Health: metav1.Health_HEALTH_OK,
	})
	if err != nil {
		t.Fatalf("Heartbeat data-2: %v", err)
	}
	if hb.GetAssignedRole() != metav1.Role_ROLE_FOLLOWER || hb.GetPrimaryAddress() != "10.0.0.1:6379" || hb.GetLeaseDurationMs() != 0 {
		t.Fatalf("Heartbeat data-2 = %v, want a follower of 10.0.0.1:6379 without a lease", hb)
	}

	// Errors travel as gRPC status codes.
	_, err = c.Heartbeat(ctx, &metav1.HeartbeatRequest{NodeId: "nobody"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("Heartbeat of an unregistered node: err = %v, want NotFound", err)
	}

	topo, err := c.GetTopology(ctx, &metav1.GetTopologyRequest{})
	if err != nil {
		t.Fatalf("GetTopology: %v", err)
	}
	if len(topo.GetShardGroups()) != 1 {
		t.Fatalf("GetTopology: %d shard groups, want 1", len(topo.GetShardGroups()))
	}
	g := topo.GetShardGroups()[0]
	if g.GetPrimary().GetNodeId() != "data-1" || len(g.GetFollowers()) != 1 || g.GetFollowers()[0].GetNodeId() != "data-2" {
		t.Fatalf("GetTopology: group = %v, want data-1 primary and data-2 follower", g)
	}
	if r := g.GetSlots(); len(r) != 1 || r[0].GetStart() != 0 || r[0].GetEnd() != 16383 {
		t.Fatalf("GetTopology: slots = %v, want 0-16383", r)
	}

	_, err = c.Promote(ctx, &metav1.PromoteRequest{ShardGroup: "g0", TargetNodeId: "data-2", ExpectedEpoch: 5})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("Promote at a stale expected epoch: err = %v, want FailedPrecondition", err)
	}
	pr, err := c.Promote(ctx, &metav1.PromoteRequest{
		ShardGroup: "g0", TargetNodeId: "data-2", CatchUpTimeoutMs: 5000, ExpectedEpoch: 1,
	})
	if err != nil {
		t.Fatalf("Promote: %v", err)
	}
	if pr.GetEpoch() != 2 || pr.GetPrimaryNodeId() != "data-2" || !pr.GetCaughtUp() || pr.GetLagBytes() != 0 {
		t.Fatalf("Promote = %v, want data-2 primary at epoch 2, caught up", pr)
	}

	// The old primary learns of its demotion from its next heartbeat.
	hb, err = c.Heartbeat(ctx, &metav1.HeartbeatRequest{NodeId: "data-1", Role: metav1.Role_ROLE_PRIMARY, Epoch: 1})
	if err != nil {
		t.Fatalf("Heartbeat data-1 after promotion: %v", err)
	}
	if hb.GetAssignedRole() != metav1.Role_ROLE_FOLLOWER || hb.GetEpoch() != 2 || hb.GetLeaseDurationMs() != 0 ||
		hb.GetPrimaryAddress() != "10.0.0.2:6379" {
		t.Fatalf("Heartbeat data-1 after promotion = %v, want a follower of 10.0.0.2:6379 at epoch 2, no lease", hb)
	}
}
