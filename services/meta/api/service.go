// Package api is lavik-meta's gRPC front: the Meta service data nodes and lavikctl call, the
// Raft service members call each other on, and the member that ties them to the raft node
// (raftnode), the replicated state machine (fsm) and the leader's authority (failover).
//
// Decisions go through raft: a call that changes the topology encodes an fsm command, proposes
// it on the leader and answers with what the state machine's Apply returned, so an OK means a
// quorum committed it. Heartbeats are not decisions: only the leader answers them, from the
// topology it has applied and its in-memory view of liveness and leases; a member that is not
// the leader answers UNAVAILABLE with a NotLeader detail naming the one to ask.
package api

import (
	"context"
	"errors"
	"maps"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonv1 "github.com/lavikdb/lavik/proto/lavik/common/v1"
	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
	"github.com/lavikdb/lavik/services/meta/failover"
	"github.com/lavikdb/lavik/services/meta/fsm"
	"github.com/lavikdb/lavik/services/meta/raftnode"
)

// metaServer implements the Meta service for a member.
type metaServer struct {
	metav1.UnimplementedMetaServer
	m *Member
}

// notLeader is the error of a member asked for what only the leader does.
func (m *Member) notLeader(leader uint64) error {
	st := status.New(codes.Unavailable, "meta: this member is not the leader")
	d := &metav1.NotLeader{LeaderId: leader}
	if leader != 0 {
		if mem, err := m.fsm.Members(); err == nil {
			for _, x := range mem {
				if x.ID == leader {
					d.LeaderAddress = x.ClientAddress
				}
			}
		}
	} else {
		st = status.New(codes.Unavailable, "meta: no leader (an election is going on or there is no quorum); retry")
	}
	if s, err := st.WithDetails(d); err == nil {
		return s.Err()
	}
	return st.Err()
}

// propose proposes c and decodes the state machine's result; the error is a gRPC status. A
// refusal by the state machine comes with its result (not OK); any other error with a zero
// one.
func (m *Member) propose(ctx context.Context, c fsm.Command) (fsm.Result, error) {
	return m.proposeAt(ctx, 0, c)
}

// proposeAt is propose, refused unless this member leads at term (0: any) when the entry is
// appended: the authority of one term decides only for that term.
func (m *Member) proposeAt(ctx context.Context, term uint64, c fsm.Command) (fsm.Result, error) {
	b, err := m.node.ProposeAt(ctx, term, fsm.Encode(c))
	if err != nil {
		return fsm.Result{}, m.raftErr(err)
	}
	r, err := fsm.DecodeResult(b)
	if err != nil {
		return fsm.Result{}, status.Errorf(codes.Internal, "meta: %v", err)
	}
	if !r.OK() {
		return r, status.Error(codes.Code(r.Code), "meta: "+r.Reason)
	}
	return r, nil
}

// raftErr turns a raft layer error into a gRPC status.
func (m *Member) raftErr(err error) error {
	if id, ok := raftnode.LeaderID(err); ok {
		return m.notLeader(id)
	}
	switch {
	case errors.Is(err, raftnode.ErrNoLeader):
		return m.notLeader(0)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return status.Errorf(codes.Unavailable, "meta: not committed in time (no quorum?): %v", err)
	case errors.Is(err, raftnode.ErrConfChangePending):
		return status.Errorf(codes.FailedPrecondition, "meta: %v", err)
	}
	return status.Errorf(codes.Unavailable, "meta: %v", err)
}

func (s *metaServer) RegisterNode(ctx context.Context, req *metav1.RegisterNodeRequest) (*metav1.RegisterNodeResponse, error) {
	r, err := s.m.propose(ctx, fsm.RegisterNode{NodeID: req.NodeId, DataAddress: req.DataAddress, AdminAddress: req.AdminAddress,
		ShardGroup: req.ShardGroup, Epoch: req.Epoch, Version: req.Version})
	if err != nil {
		return nil, err
	}
	resp := &metav1.RegisterNodeResponse{AssignedRole: commonv1.Role(r.Role), Epoch: r.Epoch,
		HeartbeatIntervalMs: uint32(s.m.cfg.Failover.HeartbeatInterval.Milliseconds())}
	if r.PrimaryNodeID != "" && r.PrimaryNodeID != req.NodeId {
		resp.PrimaryNodeId = r.PrimaryNodeID
		if n, err := s.m.fsm.Node(r.PrimaryNodeID); err == nil {
			resp.PrimaryAddress = n.DataAddress
		}
	}
	return resp, nil
}

func (s *metaServer) Heartbeat(ctx context.Context, req *metav1.HeartbeatRequest) (*metav1.HeartbeatResponse, error) {
	now := s.m.clock()
	auth, term, leader := s.m.authority()
	if auth == nil {
		return nil, s.m.notLeader(leader)
	}
	n, err := s.m.fsm.Node(req.NodeId)
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "meta: node %q is not registered: call RegisterNode", req.NodeId)
	}
	g, err := s.m.groupView(n.Group)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "meta: %v", err)
	}
	// A grant counted from now can end no later than the newest proof of leadership allows;
	// a proof that arrives after now only makes that bound later than now+Lease.
	s.m.confirm(ctx, auth, term, g.Primary == req.NodeId)
	s.m.authMu.Lock()
	ans := auth.Heartbeat(now, failover.Heartbeat{NodeID: req.NodeId, Role: fsm.Role(req.Role), Epoch: req.Epoch,
		ReplicationID: req.ReplicationId, Offset: req.ReplicationOffset, Health: failover.Health(req.Health), Writable: req.Writable,
		Incomplete: req.DataIncomplete, Detail: req.HealthDetail}, g)
	s.m.authMu.Unlock()
	resp := &metav1.HeartbeatResponse{AssignedRole: commonv1.Role(ans.Role), Epoch: ans.Epoch,
		LeaseDurationMs: uint32(ans.Lease.Milliseconds()), HeartbeatIntervalMs: uint32(ans.Interval.Milliseconds())}
	if ans.Lease > 0 {
		resp.LeaseExpiresUnixMs = time.Now().Add(ans.Lease).UnixMilli()
	}
	if ans.Primary != nil {
		resp.PrimaryNodeId, resp.PrimaryAddress = ans.Primary.ID, ans.Primary.DataAddress
	}
	return resp, nil
}

func (s *metaServer) GetTopology(ctx context.Context, req *metav1.GetTopologyRequest) (*metav1.GetTopologyResponse, error) {
	lin := req.Consistency != metav1.ReadConsistency_READ_CONSISTENCY_STALE
	if lin {
		if err := s.m.node.ReadIndex(ctx); err != nil {
			return nil, s.m.raftErr(err)
		}
	}
	t, err := s.m.fsm.Topology()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "meta: %v", err)
	}
	resp := &metav1.GetTopologyResponse{Version: t.Version, Linearizable: lin, AppliedIndex: s.m.fsm.Applied()}
	auth, _, _ := s.m.authority()
	resp.HeartbeatsKnown = auth != nil
	var blocked map[string]string
	if auth != nil {
		s.m.authMu.Lock()
		blocked = maps.Clone(auth.Blocked())
		s.m.authMu.Unlock()
	}
	for _, g := range t.Groups {
		sg := &metav1.ShardGroup{Id: g.ID, Epoch: g.Epoch, NoPrimaryReason: blocked[g.ID]}
		if g.PrimaryNode != nil {
			sg.Primary = s.m.nodeInfo(auth, *g.PrimaryNode)
		}
		for _, f := range g.Followers {
			sg.Followers = append(sg.Followers, s.m.nodeInfo(auth, f))
		}
		for _, r := range g.Slots {
			sg.Slots = append(sg.Slots, &metav1.SlotRange{Start: r.Start, End: r.End})
		}
		resp.ShardGroups = append(resp.ShardGroups, sg)
	}
	return resp, nil
}

// nodeInfo is n with what the leader's authority (nil on another member) last heard from it.
func (m *Member) nodeInfo(auth *failover.Authority, n fsm.Node) *metav1.NodeInfo {
	ni := &metav1.NodeInfo{NodeId: n.ID, DataAddress: n.DataAddress, AdminAddress: n.AdminAddress,
		Role: commonv1.Role(n.Role), Version: n.Version}
	if auth != nil {
		m.authMu.Lock()
		hb, at, ok := auth.Last(n.ID)
		m.authMu.Unlock()
		if ok {
			ni.Health, ni.HealthDetail, ni.DataIncomplete = metav1.Health(hb.Health), hb.Detail, hb.Incomplete
			ni.ReplicationId, ni.ReplicationOffset = hb.ReplicationID, hb.Offset
			ni.LastHeartbeatUnixMs = time.Now().Add(at - m.clock()).UnixMilli()
		}
	}
	return ni
}

func (s *metaServer) Promote(ctx context.Context, req *metav1.PromoteRequest) (*metav1.PromoteResponse, error) {
	return s.m.switchover(ctx, req)
}

func (s *metaServer) AddMember(ctx context.Context, req *metav1.AddMemberRequest) (*metav1.AddMemberResponse, error) {
	if req.Name == "" || req.PeerAddress == "" || req.ClientAddress == "" {
		return nil, status.Error(codes.InvalidArgument, "meta: name, peer_address and client_address are required")
	}
	mem, err := s.m.fsm.Members()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "meta: %v", err)
	}
	id := uint64(1)
	for _, x := range mem {
		if x.Name == req.Name || x.PeerAddress == req.PeerAddress {
			return nil, status.Errorf(codes.FailedPrecondition, "meta: a member named %q or at %s exists (id %d)", x.Name, x.PeerAddress, x.ID)
		}
		id = max(id, x.ID+1)
	}
	// The bookkeeping first (names and addresses), then the raft change: a member the raft
	// group has is always one the state machine can name.
	if _, err := s.m.propose(ctx, fsm.AddMember{ID: id, Name: req.Name, PeerAddress: req.PeerAddress, ClientAddress: req.ClientAddress}); err != nil {
		return nil, err
	}
	s.m.transport.SetPeer(id, req.PeerAddress)
	if err := s.m.node.AddMember(ctx, id); err != nil {
		return nil, s.m.raftErr(err)
	}
	out := &metav1.AddMemberResponse{Member: &metav1.Member{Id: id, Name: req.Name, PeerAddress: req.PeerAddress, ClientAddress: req.ClientAddress}}
	out.Members, _ = s.m.members()
	return out, nil
}

func (s *metaServer) RemoveMember(ctx context.Context, req *metav1.RemoveMemberRequest) (*metav1.RemoveMemberResponse, error) {
	st := s.m.node.Status()
	found := false
	for _, v := range st.Voters {
		found = found || v == req.Id
	}
	if !found {
		return nil, status.Errorf(codes.NotFound, "meta: no member %d", req.Id)
	}
	if len(st.Voters) <= 1 {
		return nil, status.Error(codes.FailedPrecondition, "meta: cannot remove the last voter")
	}
	if err := s.m.node.RemoveMember(ctx, req.Id); err != nil {
		return nil, s.m.raftErr(err)
	}
	if _, err := s.m.propose(ctx, fsm.RemoveMember{ID: req.Id}); err != nil && status.Code(err) != codes.NotFound {
		return nil, err
	}
	out := &metav1.RemoveMemberResponse{}
	out.Members, _ = s.m.members()
	return out, nil
}

func (s *metaServer) ListMembers(ctx context.Context, req *metav1.ListMembersRequest) (*metav1.ListMembersResponse, error) {
	lin := req.Consistency != metav1.ReadConsistency_READ_CONSISTENCY_STALE
	if lin {
		if err := s.m.node.ReadIndex(ctx); err != nil {
			return nil, s.m.raftErr(err)
		}
	}
	mem, err := s.m.members()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "meta: %v", err)
	}
	return &metav1.ListMembersResponse{Members: mem, Linearizable: lin}, nil
}

// members lists the raft voters with their bookkeeping.
func (m *Member) members() ([]*metav1.Member, error) {
	st := m.node.Status()
	mem, err := m.fsm.Members()
	if err != nil {
		return nil, err
	}
	byID := map[uint64]fsm.Member{}
	for _, x := range mem {
		byID[x.ID] = x
	}
	var out []*metav1.Member
	for _, v := range st.Voters {
		x := byID[v]
		out = append(out, &metav1.Member{Id: v, Name: x.Name, PeerAddress: x.PeerAddress, ClientAddress: x.ClientAddress, IsLeader: v == st.Leader})
	}
	return out, nil
}

// switchover is Promote: hold the group's leases, wait for the primary's to end, wait for the
// target to reach the primary's last offset, then name it primary at a new epoch.
func (m *Member) switchover(ctx context.Context, req *metav1.PromoteRequest) (*metav1.PromoteResponse, error) {
	auth, term, leader := m.authority()
	if auth == nil {
		return nil, m.notLeader(leader)
	}
	g, err := m.groupView(req.ShardGroup)
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "meta: %v", err)
	}
	if req.ExpectedEpoch != 0 && g.Epoch != req.ExpectedEpoch {
		return nil, status.Errorf(codes.FailedPrecondition, "meta: group %s is at epoch %d, not %d", g.ID, g.Epoch, req.ExpectedEpoch)
	}
	target := req.TargetNodeId
	if target == "" {
		m.authMu.Lock()
		best, _, ok := auth.Best(m.clock(), g)
		m.authMu.Unlock()
		if !ok {
			return nil, status.Errorf(codes.FailedPrecondition, "meta: group %s has no healthy follower to promote", g.ID)
		}
		target = best.ID
	}
	isFollower := false
	for _, f := range g.Followers {
		isFollower = isFollower || f.ID == target
	}
	if !isFollower {
		return nil, status.Errorf(codes.FailedPrecondition, "meta: %s is not a follower of group %s", target, g.ID)
	}
	// Not even with force: a node whose data is incomplete holds a part of nothing.
	m.authMu.Lock()
	thb, _, known := auth.Last(target)
	m.authMu.Unlock()
	if known && thb.Incomplete {
		return nil, status.Errorf(codes.FailedPrecondition, "meta: %s's data is incomplete (%s): it cannot be promoted", target, thb.Detail)
	}
	m.authMu.Lock()
	auth.Hold(m.clock(), g.ID, true)
	m.authMu.Unlock()
	held := time.Now()
	defer func() {
		m.authMu.Lock()
		auth.Hold(m.clock(), g.ID, false)
		m.authMu.Unlock()
	}()
	// The primary stops writing at its next heartbeat's answer (it gets no lease) and says so
	// in the heartbeat after; if it does not (it is unreachable), when its lease ends. From
	// then on its offset is final.
	for {
		m.authMu.Lock()
		now := m.clock()
		over := auth.Stopped(now, g.ID, g.Primary) || auth.LeaseOver(now, g.ID)
		m.authMu.Unlock()
		if over {
			break
		}
		select {
		case <-ctx.Done():
			return nil, status.Error(codes.DeadlineExceeded, "meta: the primary's lease did not end in time")
		case <-time.After(10 * time.Millisecond):
		}
	}
	deadline := time.Now().Add(time.Duration(req.CatchUpTimeoutMs) * time.Millisecond)
	var want, have uint64
	var th failover.Heartbeat
	for {
		m.authMu.Lock()
		ph, _, _ := auth.Last(g.Primary)
		th, _, _ = auth.Last(target)
		m.authMu.Unlock()
		want, have = ph.Offset, th.Offset
		if have >= want || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, status.Error(codes.DeadlineExceeded, "meta: the target did not catch up in time")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if th.Incomplete {
		return nil, status.Errorf(codes.FailedPrecondition, "meta: %s's data became incomplete (%s): it cannot be promoted", target, th.Detail)
	}
	caught := have >= want
	if !caught && !req.Force {
		return nil, status.Errorf(codes.DeadlineExceeded, "meta: %s reached offset %d of the primary's %d; use force to promote it anyway (losing %d bytes of acknowledged writes)", target, have, want, want-have)
	}
	// From here until the authority's end the primary at g.Epoch gets no lease, even after
	// the hold is lifted: a proposal that timed out may still commit. Proposed at this
	// authority's term only: a member that leads again at a later term has a new authority,
	// which may have leased the primary since.
	m.authMu.Lock()
	auth.Replacing(g.ID, g.Epoch)
	m.authMu.Unlock()
	r, err := m.proposeAt(ctx, term, fsm.SetPrimary{ShardGroup: g.ID, NodeID: target, ExpectedEpoch: g.Epoch})
	if err != nil {
		if !r.OK() {
			m.authMu.Lock()
			auth.ReplaceRefused(g.ID, g.Epoch)
			m.authMu.Unlock()
		}
		return nil, err
	}
	resp := &metav1.PromoteResponse{Epoch: r.Epoch, PrimaryNodeId: target, CaughtUp: caught,
		WritesPausedMs: uint32(time.Since(held).Milliseconds())}
	if !caught {
		resp.LagBytes = want - have
	}
	return resp, nil
}

// groupView returns group id as the state machine has applied it.
func (m *Member) groupView(id string) (fsm.GroupView, error) { return m.fsm.Group(id) }
