package api

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lavikdb/lavik/pkg/vfs"
	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
	"github.com/lavikdb/lavik/services/meta/failover"
	"github.com/lavikdb/lavik/services/meta/fsm"
	"github.com/lavikdb/lavik/services/meta/raftnode"
	"github.com/lavikdb/lavik/services/meta/sentinel"
)

// Config configures a lavik-meta member.
type Config struct {
	ID   uint64
	Name string
	Dir  string
	// ClientAddr serves Meta (data nodes, lavikctl); PeerAddr serves Raft (the other members);
	// SentinelAddr, when set, the Redis Sentinel commands clients use (package sentinel).
	// Port 0 picks a free one (see Member.ClientAddr, PeerAddr, SentinelAddr).
	ClientAddr, PeerAddr, SentinelAddr string
	// Peers are the founding members (this one included) when the group is new (Join false):
	// the leader records them in the state machine, so that every member can name them.
	Peers map[uint64]Peer
	// Join: this member was added by AddMember and starts with an empty log.
	Join     bool
	Failover failover.Config
	// TickInterval and ElectionTicks are raft's (see raftnode.Config).
	TickInterval  time.Duration
	ElectionTicks int
	Logger        *slog.Logger
	// RaftFault, when set, is applied to every raft message this member sends (see Fault):
	// for tests that cut or slow links between members. Production sets none.
	RaftFault Fault
}

// Peer is a founding member's name and addresses.
type Peer struct {
	Name, PeerAddr, ClientAddr string
}

// Member is one running lavik-meta member.
type Member struct {
	cfg       Config
	log       *slog.Logger
	fsm       *fsm.FSM
	node      *raftnode.Node
	transport *Transport
	grpcMeta  *grpc.Server
	grpcPeer  *grpc.Server
	sentinel  *sentinel.Server
	clientLis net.Listener
	peerLis   net.Listener
	start     time.Time

	// auth is the leader's authority, nil while this member does not lead; authTerm is the
	// raft term it leads in (a member that leads again at a later term gets a new one, which
	// waits out the leases of the leaders in between). authMu guards both and the calls into
	// auth.
	authMu   sync.Mutex
	auth     *failover.Authority
	authTerm uint64
	stop     chan struct{}
	done     chan struct{}
}

// Start starts a member: its state machine, raft node, gRPC servers and leader loop.
func Start(cfg Config) (*Member, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Failover == (failover.Config{}) {
		cfg.Failover = failover.DefaultConfig
	}
	m := &Member{cfg: cfg, log: cfg.Logger.With("member", cfg.ID), start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	var err error
	if err = vfs.Default.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	if m.fsm, err = fsm.Open(filepath.Join(cfg.Dir, "state.db"), fsm.Options{LockTimeout: 5 * time.Second}); err != nil {
		return nil, err
	}
	if m.clientLis, err = net.Listen("tcp", cfg.ClientAddr); err != nil {
		m.fsm.Close()
		return nil, fmt.Errorf("meta: %w", err)
	}
	if m.peerLis, err = net.Listen("tcp", cfg.PeerAddr); err != nil {
		m.clientLis.Close()
		m.fsm.Close()
		return nil, fmt.Errorf("meta: %w", err)
	}
	m.transport = NewTransport(m.log)
	m.transport.SetFault(cfg.RaftFault)
	if p, ok := cfg.Peers[cfg.ID]; ok {
		m.transport.SetSelf(p.PeerAddr)
	} else {
		m.transport.SetSelf(m.peerLis.Addr().String())
	}
	var peers []uint64
	for id, p := range cfg.Peers {
		peers = append(peers, id)
		if id != cfg.ID {
			m.transport.SetPeer(id, p.PeerAddr)
		}
	}
	slices.Sort(peers) // every founding member gives raft the same list in the same order
	m.syncPeers()
	// Proofs of leadership (see confirm) are at most four a heartbeat interval, however many
	// primaries heartbeat.
	m.node, err = raftnode.Start(raftnode.Config{ID: cfg.ID, Peers: peers, Join: cfg.Join, FS: vfs.Default,
		Dir: filepath.Join(cfg.Dir, "raft"), SM: m.fsm, Transport: m.transport, Logger: m.log,
		TickInterval: cfg.TickInterval, ElectionTicks: cfg.ElectionTicks, ConfirmGap: m.confirmSlack()})
	if err != nil {
		m.clientLis.Close()
		m.peerLis.Close()
		m.fsm.Close()
		return nil, err
	}
	m.transport.SetNode(m.node)
	m.grpcPeer = grpc.NewServer()
	RegisterRaft(m.grpcPeer, m.transport)
	go m.grpcPeer.Serve(m.peerLis)
	m.grpcMeta = grpc.NewServer()
	metav1.RegisterMetaServer(m.grpcMeta, &metaServer{m: m})
	go m.grpcMeta.Serve(m.clientLis)
	if cfg.SentinelAddr != "" {
		if m.sentinel, err = sentinel.Serve(cfg.SentinelAddr, sentinelSource{m}, m.log); err != nil {
			m.grpcMeta.Stop()
			m.grpcPeer.Stop()
			m.node.Stop()
			m.fsm.Close()
			return nil, err
		}
	}
	go m.loop()
	return m, nil
}

// SentinelAddr is where the Sentinel port listens ("" when none).
func (m *Member) SentinelAddr() string {
	if m.sentinel == nil {
		return ""
	}
	return m.sentinel.Addr()
}

// sentinelSource gives the Sentinel port the member's state.
type sentinelSource struct{ m *Member }

func (s sentinelSource) Topology() (fsm.Topology, error) { return s.m.fsm.Topology() }
func (s sentinelSource) Members() ([]fsm.Member, error)  { return s.m.fsm.Members() }
func (s sentinelSource) ID() uint64                      { return s.m.cfg.ID }

// Failover is SENTINEL FAILOVER: a switchover to the best follower, asked of the leader.
func (s sentinelSource) Failover(ctx context.Context, group string) error {
	req := &metav1.PromoteRequest{ShardGroup: group, CatchUpTimeoutMs: 5000}
	if auth, _, leader := s.m.authority(); auth == nil {
		addr := ""
		if mem, err := s.m.fsm.Members(); err == nil {
			for _, x := range mem {
				if x.ID == leader {
					addr = x.ClientAddress
				}
			}
		}
		if addr == "" {
			return fmt.Errorf("no meta leader now; retry")
		}
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer cc.Close()
		_, err = metav1.NewMetaClient(cc).Promote(ctx, req)
		return err
	}
	_, err := s.m.switchover(ctx, req)
	return err
}

// ClientAddr and PeerAddr are where the member listens.
func (m *Member) ClientAddr() string { return m.clientLis.Addr().String() }
func (m *Member) PeerAddr() string   { return m.peerLis.Addr().String() }

// Status is the member's raft status.
func (m *Member) Status() raftnode.Status { return m.node.Status() }

// clock is the member's monotonic clock, as failover wants it.
func (m *Member) clock() time.Duration { return time.Since(m.start) }

// authority returns the leader's authority and the term it leads in, or nil and the leader
// this member knows of. A new authority's clock starts after raft made this member leader
// (the status it reads says so), as failover.New requires.
func (m *Member) authority() (auth *failover.Authority, term, leader uint64) {
	st := m.node.Status()
	m.authMu.Lock()
	defer m.authMu.Unlock()
	if st.Leader != m.cfg.ID {
		m.auth = nil
		return nil, 0, st.Leader
	}
	if m.auth == nil || m.authTerm != st.Term {
		m.auth, m.authTerm = failover.New(m.cfg.Failover, m.clock()), st.Term
		m.log.Info("meta: leading; promotions wait out a lease", "term", st.Term, "lease", m.cfg.Failover.Lease)
	}
	return m.auth, m.authTerm, st.Leader
}

// confirmSlack is how old a proof of leadership may be for a grant (a quarter heartbeat): a
// grant is cut by the proof's age, and heartbeats of several primaries that arrive within it
// share one round.
func (m *Member) confirmSlack() time.Duration { return m.cfg.Failover.HeartbeatInterval / 4 }

// confirm gives auth, leading at term, the newest confirmation of this member's leadership at
// term (raftnode.Confirmation), which bounds the leases it grants. With forGrant (a primary's
// heartbeat), a confirmation older than confirmSlack is first renewed: a round started now, or
// one a little earlier shared with other heartbeats, waited for up to a heartbeat interval (a
// leader cut off from its peers then grants from its last proof, shorter and shorter, then not
// at all).
func (m *Member) confirm(ctx context.Context, auth *failover.Authority, term uint64, forGrant bool) {
	c := m.node.Confirmed()
	if slack := m.confirmSlack(); forGrant && (c.Term != term || time.Since(c.Start) > slack) {
		wctx, cancel := context.WithTimeout(ctx, m.cfg.Failover.HeartbeatInterval)
		c, _ = m.node.Confirm(wctx, term, time.Now().Add(-slack))
		cancel()
	}
	if c.Term != term {
		return
	}
	m.authMu.Lock()
	auth.Confirm(c.Start.Sub(m.start))
	m.authMu.Unlock()
}

// loop records the member itself once it leads (so its addresses are known), and, while it
// leads, proposes the promotions the authority decides. It runs every heartbeat interval, and
// also when the authority says a decision falls due (a lease ending), so that a promotion is
// not left waiting for the next round. (Every quarter heartbeat, it cost three idle members
// about 2.5% of a core on the 2-core test VM, for decisions the due times catch anyway.)
func (m *Member) loop() {
	defer close(m.done)
	every := m.cfg.Failover.HeartbeatInterval
	t := time.NewTimer(every)
	defer t.Stop()
	recorded := false
	var loggedBlocked map[string]string
	for tick := 0; ; tick++ {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		if tick%2 == 0 { // membership changes rarely: every two heartbeat intervals is soon enough
			m.syncPeers()
		}
		t.Reset(m.lead(every, &recorded, &loggedBlocked))
	}
}

// lead is one round of loop on the leader (nothing on another member); it returns when the
// next round is due, at most next from now.
func (m *Member) lead(next time.Duration, recorded *bool, loggedBlocked *map[string]string) time.Duration {
	auth, term, _ := m.authority()
	if auth == nil {
		return next
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if !*recorded {
		if err := m.recordMembers(ctx); err == nil {
			*recorded = true
		}
	}
	topo, err := m.fsm.Topology()
	if err != nil {
		return next
	}
	m.authMu.Lock()
	now := m.clock()
	decisions := auth.Tick(now, topo)
	for g, why := range auth.Blocked() {
		if (*loggedBlocked)[g] != why {
			m.log.Warn("meta: a group needs a new primary and no follower is fit", "group", g, "why", why)
		}
	}
	*loggedBlocked = maps.Clone(auth.Blocked())
	if due, ok := auth.Due(now, topo); ok {
		next = min(next, due-now)
	}
	m.authMu.Unlock()
	for _, d := range decisions {
		r, err := m.proposeAt(ctx, term, d)
		if err != nil {
			if !r.OK() { // the state machine refused it: the group may be decided again
				m.authMu.Lock()
				auth.ReplaceRefused(d.ShardGroup, d.ExpectedEpoch)
				m.authMu.Unlock()
			}
			m.log.Warn("meta: promotion refused", "group", d.ShardGroup, "node", d.NodeID, "err", err)
			continue
		}
		m.log.Info("meta: promoted", "group", d.ShardGroup, "node", d.NodeID, "epoch", r.Epoch)
	}
	if len(decisions) > 0 {
		return 0 // the time spent proposing may have brought another decision due
	}
	return max(next, 0)
}

// syncPeers gives the transport every member the state machine knows (members added by
// AddMember on another member, or recorded by an earlier leader).
func (m *Member) syncPeers() {
	known, err := m.fsm.Members()
	if err != nil {
		return
	}
	for _, x := range known {
		if x.ID != m.cfg.ID {
			m.transport.SetPeer(x.ID, x.PeerAddress)
		}
	}
}

// recordMembers records the founding members' names and addresses (this one's as it listens)
// in the state machine, once: a known member is left as it is.
func (m *Member) recordMembers(ctx context.Context) error {
	known, err := m.fsm.Members()
	if err != nil {
		return err
	}
	have := map[uint64]bool{}
	for _, x := range known {
		have[x.ID] = true
	}
	if !have[m.cfg.ID] {
		// The addresses --peers gives for this member are the ones to advertise (a member
		// listening on 0.0.0.0 is reached at its host's address); the listeners' own only
		// when it has none.
		peer, client := m.PeerAddr(), m.ClientAddr()
		if p, ok := m.cfg.Peers[m.cfg.ID]; ok {
			peer, client = p.PeerAddr, p.ClientAddr
		}
		if _, err := m.propose(ctx, fsm.AddMember{ID: m.cfg.ID, Name: m.cfg.Name, PeerAddress: peer, ClientAddress: client}); err != nil {
			return err
		}
	}
	for id, p := range m.cfg.Peers {
		if id == m.cfg.ID || have[id] {
			continue
		}
		if _, err := m.propose(ctx, fsm.AddMember{ID: id, Name: p.Name, PeerAddress: p.PeerAddr, ClientAddress: p.ClientAddr}); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the member.
func (m *Member) Close() error {
	close(m.stop)
	<-m.done
	if m.sentinel != nil {
		m.sentinel.Close()
	}
	m.grpcMeta.Stop()
	m.grpcPeer.Stop()
	m.transport.Close()
	err := m.node.Stop()
	if cerr := m.fsm.Close(); err == nil {
		err = cerr
	}
	return err
}
