package raftnode

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Errors returned by Node. Compare with errors.Is.
var (
	// ErrNotLeader is returned by Propose and the membership calls on a member that is not
	// the leader; the error is a *NotLeaderError naming the leader, if one is known.
	ErrNotLeader = errors.New("raftnode: not the leader")
	// ErrNoLeader is returned by ReadIndex while the member knows no leader.
	ErrNoLeader = errors.New("raftnode: no leader")
	// ErrStopped is returned by calls on a node that has stopped.
	ErrStopped = errors.New("raftnode: stopped")
	// ErrCorrupt marks damaged durable state (a WAL record or snapshot file that fails its
	// checksum where a crash cannot explain it). Start refuses to run over it.
	ErrCorrupt = errors.New("raftnode: corrupt")
	// ErrConfChangePending is returned while an earlier membership change is not yet
	// applied: raft allows one at a time. AddMember and RemoveMember retry it until their
	// context ends.
	ErrConfChangePending = errors.New("raftnode: a membership change is pending")
)

// CorruptError is the ErrCorrupt that names the damaged file and the offset of the bad record
// (-1 for a whole file).
type CorruptError struct {
	Path   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("raftnode: corrupt %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("raftnode: corrupt %s at offset %d: %s", e.Path, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// NotLeaderError is the ErrNotLeader a member returns, naming the leader it knows (0: none).
type NotLeaderError struct{ Leader uint64 }

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("raftnode: not the leader (leader is %d)", e.Leader)
}

// Unwrap makes errors.Is(err, ErrNotLeader) hold.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// LeaderID returns the leader named by an ErrNotLeader error, and whether err is one.
func LeaderID(err error) (uint64, bool) {
	var nl *NotLeaderError
	if errors.As(err, &nl) {
		return nl.Leader, true
	}
	return 0, false
}

// StateMachine is what raftnode applies committed entries to (implemented elsewhere over bbolt).
type StateMachine interface {
	// Apply applies the committed normal entry at index (data as proposed), in index order,
	// exactly once per index it has not applied (Applied() tells where it stands after a
	// restart); it persists index together with the effect (one bbolt transaction). The
	// result goes back to the proposer (Propose's return). An error means the entry could
	// not be applied (an I/O failure) and stops the node: an index cannot be skipped.
	// Rejections that are part of the state machine's logic belong in the result.
	Apply(index uint64, data []byte) (result []byte, err error)
	Applied() uint64
	// Snapshot returns the whole state as of Applied(); Restore replaces the state by one.
	Snapshot() (data []byte, index uint64, err error)
	Restore(data []byte, index uint64) error
}

// Transport carries raft messages between members. Send must not block on the network: it
// queues, and drops what it cannot deliver (raft retries). A transport that drops a MsgSnap
// calls the sender's ReportSnapshot with raft.SnapshotFailure, one that delivers it with
// raft.SnapshotFinish; a peer it cannot reach is reported with ReportUnreachable.
type Transport interface{ Send(msgs []raftpb.Message) }

// Config configures a member.
type Config struct {
	// ID is this member's raft id, not zero.
	ID uint64
	// Peers are the initial voters, used only when the member's log is empty and Join is
	// false. Every founding member must be given the same list in the same order.
	Peers []uint64
	// Join starts a member with an empty log and no peers: it was added by AddMember on the
	// group and learns the membership from the leader. Ignored if the log is not empty.
	Join bool
	// FS and Dir hold the durable state: Dir/wal and Dir/snap.
	FS  vfs.FS
	Dir string
	SM  StateMachine
	// Transport sends this member's messages; inbound ones are passed to Step.
	Transport Transport
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// TickInterval is raft's logical clock (default 100ms). Too low: elections on every
	// scheduling hiccup; too high: slow failover.
	TickInterval time.Duration
	// ElectionTicks (default 10) must exceed HeartbeatTicks (default 1); the election timeout
	// is ElectionTicks*TickInterval.
	ElectionTicks, HeartbeatTicks int
	// SnapshotEntries: take a snapshot and compact every N applied entries (default 10000).
	// Too low: snapshots (the whole state) are written often and lagging followers need one;
	// too high: the WAL and the in-memory log grow and restarts replay more.
	SnapshotEntries uint64
	// WALSegmentBytes is the size past which a new WAL segment is started (default 4 MiB).
	// Only whole segments are deleted after a snapshot, so too high keeps old entries longer.
	WALSegmentBytes int64
	// ConfirmGap is the least time between two proofs of leadership the leader starts (see
	// Confirm): callers that ask within it share the round in flight or wait for the next.
	// Too low: a round (a heartbeat to every peer, and its answer) per caller when many ask
	// at once; too high: callers wait longer for a proof.
	ConfirmGap time.Duration
}

func (c *Config) validate() error {
	switch {
	case c.ID == 0:
		return errors.New("raftnode: config: ID must not be 0")
	case c.FS == nil || c.Dir == "":
		return errors.New("raftnode: config: FS and Dir are required")
	case c.SM == nil:
		return errors.New("raftnode: config: SM is required")
	case c.Transport == nil:
		return errors.New("raftnode: config: Transport is required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TickInterval <= 0 {
		c.TickInterval = 100 * time.Millisecond
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 10
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 1
	}
	if c.ElectionTicks <= c.HeartbeatTicks {
		return fmt.Errorf("raftnode: config: ElectionTicks (%d) must exceed HeartbeatTicks (%d)", c.ElectionTicks, c.HeartbeatTicks)
	}
	if c.SnapshotEntries == 0 {
		c.SnapshotEntries = 10000
	}
	if c.WALSegmentBytes <= 0 {
		c.WALSegmentBytes = 4 << 20
	}
	if c.ConfirmGap < 0 {
		return fmt.Errorf("raftnode: config: ConfirmGap (%v) must not be negative", c.ConfirmGap)
	}
	return nil
}

// Confirmation is a leader's newest proof that it leads: at Term, a quorum of voters answered
// a round this member started as leader at Start (its monotonic clock). Every voter of that
// quorum was at Term, following this member, when it answered, after Start; a leader of any
// later term needs the vote of one of them, given later still. So every later leader was
// elected after Start, whether this member has heard of it or not: what this member grants
// for a span counted from Start ends before a later leader has led for that span.
//
// A confirmation is reported only once the member has applied everything committed when the
// round started, so that state read after it is at least as new as the round.
type Confirmation struct {
	Term  uint64
	Start time.Time
}

// confirmRound is a confirmation round in flight.
type confirmRound struct {
	term  uint64
	start time.Time
	index uint64 // the read index once answered; 0 while waiting for the quorum
}

// maxConfirmRounds bounds the rounds in flight (a leader cut off from its peers starts no more
// than this many; raft repeats the newest with each heartbeat until it steps down).
const maxConfirmRounds = 4

// Status is a member's view of the group.
type Status struct {
	ID, Leader    uint64
	Term          uint64
	Commit        uint64
	Applied       uint64
	Voters        []uint64
	State         string // raft.StateType: StateLeader, StateFollower, ...
	SnapshotIndex uint64 // the newest snapshot taken or received
	LastLogIndex  uint64
	FirstLogIndex uint64
}

// envelopeSize prefixes every proposal: a per-Start nonce and a sequence number, so that the
// member that proposed an entry can hand its result to the waiting caller. Entries proposed
// by another member, or by this one before a restart, match no waiter.
const envelopeSize = 16

type result struct {
	data []byte
	err  error
}

type propReq struct {
	data []byte               // enveloped; nil for a conf change
	cc   *raftpb.ConfChangeV2 // a membership change
	term uint64               // when not 0: refused unless the member leads at this term
	errc chan error           // the loop's answer: accepted (nil) or refused
}

type readReq struct {
	rctx  []byte
	index uint64 // set when the read state arrives; 0 before
	done  chan struct{}
}

// Node is one member of the raft group. Its loop goroutine owns the raft.RawNode, the storage
// and the state machine; the methods talk to it over channels.
type Node struct {
	cfg Config
	log *slog.Logger

	propc chan propReq
	recvc chan raftpb.Message
	readc chan *readReq
	ctlc  chan func(rn *raft.RawNode)
	stopc chan struct{}
	done  chan struct{}
	stop  sync.Once

	// confirmc takes Confirm's requests: a proof started at or after the time sent is wanted.
	confirmc chan time.Time

	nonce uint64
	seq   atomic.Uint64

	mu      sync.Mutex
	waiters map[uint64]chan result // by proposal sequence number; guarded by mu
	status  Status                 // guarded by mu
	err     error                  // the error that stopped the loop; guarded by mu
	// confirmed is the newest Confirmation; confirmedc is closed (and replaced) when it
	// changes. Guarded by mu. Invariant: confirmed.Start never decreases within a term.
	confirmed  Confirmation
	confirmedc chan struct{}

	// Owned by the loop goroutine.
	rn        *raft.RawNode
	ms        *raft.MemoryStorage
	wal       *wal
	snapDir   string
	confState raftpb.ConfState
	// Invariant: snapIndex <= applied <= commit.
	applied     uint64
	snapIndex   uint64
	pendingConf uint64 // a conf change at this index may not be applied yet (leader only)
	reads       map[string]*readReq
	readWait    []*readReq // reads whose index is known, waiting for applied to reach it
	// readsWaiting mirrors len(readWait) for tests, which check that a read with a known
	// index does not return before it is applied.
	readsWaiting atomic.Int64
	ticks        int
	// rounds are the confirmation rounds in flight, by request context (leader only);
	// lastRound is when the newest started; confirmDue fires when a round deferred by
	// ConfirmGap is to start (nil when none is).
	rounds     map[string]*confirmRound
	lastRound  time.Time
	confirmDue <-chan time.Time
}

// Start opens (or creates) the member's durable state in cfg.Dir, rebuilds raft's log from the
// newest valid snapshot and the WAL after it, brings the state machine up to the snapshot, and
// starts the loop. Committed entries after SM.Applied() are applied again as raft re-commits
// them; earlier ones are not.
func Start(cfg Config) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:     cfg,
		log:     cfg.Logger.With("member", cfg.ID),
		propc:   make(chan propReq),
		recvc:   make(chan raftpb.Message, 1024),
		readc:   make(chan *readReq),
		ctlc:    make(chan func(*raft.RawNode), 64),
		stopc:   make(chan struct{}),
		done:    make(chan struct{}),
		waiters: make(map[uint64]chan result),
		reads:   make(map[string]*readReq),
		rounds:  make(map[string]*confirmRound),
		ms:      raft.NewMemoryStorage(),
		snapDir: filepath.Join(cfg.Dir, "snap"),
	}
	n.confirmedc = make(chan struct{})
	n.confirmc = make(chan time.Time)
	var nb [8]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return nil, fmt.Errorf("raftnode: nonce: %w", err)
	}
	n.nonce = binary.LittleEndian.Uint64(nb[:])
	if err := n.open(); err != nil {
		if n.wal != nil {
			n.wal.close()
		}
		return nil, err
	}
	n.updateStatus()
	go n.run()
	return n, nil
}

func (n *Node) open() error {
	cfg := &n.cfg
	if err := cfg.FS.MkdirAll(n.snapDir, 0o755); err != nil {
		return fmt.Errorf("raftnode: %w", err)
	}
	snaps, err := listSnaps(cfg.FS, n.snapDir)
	if err != nil {
		return err
	}
	w, recs, err := openWAL(cfg.FS, filepath.Join(cfg.Dir, "wal"), cfg.WALSegmentBytes, n.log)
	if err != nil {
		return err
	}
	n.wal = w
	rc := &raft.Config{
		ID:                        cfg.ID,
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             cfg.HeartbeatTicks,
		Storage:                   n.ms,
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           256,
		MaxUncommittedEntriesSize: 1 << 30,
		CheckQuorum:               true,
		PreVote:                   true,
		ReadOnlyOption:            raft.ReadOnlySafe,
		// Followers refuse proposals (Propose returns ErrNotLeader) instead of forwarding
		// them: a forwarded proposal's result could not reach the caller.
		DisableProposalForwarding: true,
		StepDownOnRemoval:         true,
		Logger:                    raftLogger{n.log.With("component", "raft")},
	}
	if len(recs) == 0 && len(snaps) == 0 {
		rn, err := raft.NewRawNode(rc)
		if err != nil {
			return fmt.Errorf("raftnode: %w", err)
		}
		if !cfg.Join {
			if len(cfg.Peers) == 0 || !slices.Contains(cfg.Peers, cfg.ID) {
				return fmt.Errorf("raftnode: config: a new member that does not Join needs Peers including its ID %d (got %v)", cfg.ID, cfg.Peers)
			}
			peers := make([]raft.Peer, len(cfg.Peers))
			for i, id := range cfg.Peers {
				peers[i] = raft.Peer{ID: id}
			}
			if err := rn.Bootstrap(peers); err != nil {
				return fmt.Errorf("raftnode: bootstrap: %w", err)
			}
		}
		n.rn = rn
		n.log.Info("raft member created", "peers", cfg.Peers, "join", cfg.Join)
		return nil
	}

	// Choose the newest snapshot that verifies and that the WAL continues; no snapshot at all
	// is the last candidate (valid while the WAL still starts at index 1).
	var (
		snap raftpb.Snapshot
		rr   replayResult
		last error
		ok   bool
	)
	for i := 0; i <= len(snaps) && !ok; i++ {
		var cand raftpb.Snapshot
		if i < len(snaps) {
			cand, err = loadSnap(cfg.FS, n.snapDir, snaps[i])
			if err != nil {
				n.log.Warn("snapshot skipped", "file", snaps[i].name, "err", err)
				last = err
				continue
			}
		}
		r, err := replay(recs, cand.Metadata.Index)
		if err != nil {
			if i < len(snaps) {
				n.log.Warn("snapshot skipped", "file", snaps[i].name, "err", err)
			}
			last = err
			continue
		}
		snap, rr, ok = cand, r, true
	}
	if !ok {
		return fmt.Errorf("raftnode: no usable snapshot and wal in %s: %w", cfg.Dir, last)
	}
	if !raft.IsEmptySnap(snap) {
		if err := n.ms.ApplySnapshot(snap); err != nil {
			return fmt.Errorf("raftnode: %w", err)
		}
		if cfg.SM.Applied() < snap.Metadata.Index {
			if err := cfg.SM.Restore(snap.Data, snap.Metadata.Index); err != nil {
				return fmt.Errorf("raftnode: restore snapshot %d: %w", snap.Metadata.Index, err)
			}
		}
		n.confState = snap.Metadata.ConfState
		n.applied, n.snapIndex = snap.Metadata.Index, snap.Metadata.Index
	}
	if err := n.ms.Append(rr.ents); err != nil {
		return fmt.Errorf("raftnode: %w", err)
	}
	if err := n.ms.SetHardState(rr.hs); err != nil {
		return fmt.Errorf("raftnode: %w", err)
	}
	// Applied is left at the snapshot: raft hands every committed entry after it to the loop
	// again, which re-applies conf changes (the membership is not in the state machine) and
	// skips normal entries up to SM.Applied().
	rn, err := raft.NewRawNode(rc)
	if err != nil {
		return fmt.Errorf("raftnode: %w", err)
	}
	n.rn = rn
	n.log.Info("raft member restarted", "snapshot_index", n.snapIndex, "wal_entries", len(rr.ents),
		"term", rr.hs.Term, "commit", rr.hs.Commit, "sm_applied", cfg.SM.Applied())
	return nil
}

// run is the loop: one event (tick, inbound message, proposal, read, report), then every Ready
// raft has, each handled in the documented order.
func (n *Node) run() {
	defer close(n.done)
	defer func() {
		if err := n.wal.close(); err != nil {
			n.setErr(fmt.Errorf("raftnode: wal: close: %w", err))
		}
		n.failWaiters()
	}()
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	for {
		select {
		case <-n.stopc:
			return
		case after := <-n.confirmc:
			n.wantConfirm(after)
		case <-n.confirmDue:
			n.confirmDue = nil
			n.startConfirm()
		case <-ticker.C:
			n.rn.Tick()
			n.ticks++
			if n.ticks%n.cfg.ElectionTicks == 0 {
				// A read index request or its answer may have been dropped; ask again.
				for _, r := range n.reads {
					n.rn.ReadIndex(r.rctx)
				}
			}
		case m := <-n.recvc:
			if err := n.rn.Step(m); err != nil && !errors.Is(err, raft.ErrStepPeerNotFound) {
				n.log.Debug("step", "type", m.Type, "from", m.From, "err", err)
			}
		case p := <-n.propc:
			p.errc <- n.propose(p)
		case r := <-n.readc:
			n.startRead(r)
		case f := <-n.ctlc:
			f(n.rn)
		}
		for n.rn.HasReady() {
			if err := n.handleReady(); err != nil {
				n.log.Error("raft member stopped", "err", err)
				n.setErr(err)
				return
			}
		}
		n.updateStatus()
	}
}

func (n *Node) propose(p propReq) error {
	st := n.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		return &NotLeaderError{Leader: st.Lead}
	}
	if p.term != 0 && p.term != st.Term {
		return &NotLeaderError{Leader: st.Lead} // a leader of another term, with other knowledge
	}
	var err error
	if p.cc != nil {
		if n.applied < n.pendingConf {
			return ErrConfChangePending
		}
		err = n.rn.ProposeConfChange(*p.cc)
	} else {
		err = n.rn.Propose(p.data)
	}
	if errors.Is(err, raft.ErrProposalDropped) {
		// Raft drops proposals while leadership is being transferred or the
		// uncommitted log is over its limit.
		return &NotLeaderError{Leader: n.rn.BasicStatus().Lead}
	}
	return err
}

// wantConfirm sees that a confirmation round started at or after after will run, if this
// member leads: one in flight may cover it; else one starts now, or ConfirmGap after the last
// one started.
func (n *Node) wantConfirm(after time.Time) {
	st := n.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		return
	}
	for _, r := range n.rounds {
		if r.term == st.Term && !r.start.Before(after) {
			return
		}
	}
	if n.confirmDue != nil {
		return // it starts later than after, which is past
	}
	if wait := n.cfg.ConfirmGap - time.Since(n.lastRound); wait > 0 {
		n.confirmDue = time.After(wait)
		return
	}
	n.startConfirm()
}

// startConfirm starts a confirmation round if this member leads and fewer than
// maxConfirmRounds are in flight. The start time is read before the round's heartbeats can
// leave (they go out with the next Ready).
func (n *Node) startConfirm() {
	st := n.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		clear(n.rounds)
		return
	}
	waiting := 0
	for ctx, r := range n.rounds {
		switch {
		case r.term != st.Term:
			delete(n.rounds, ctx) // raft dropped it with the term
		case r.index == 0:
			waiting++
		}
	}
	if waiting >= maxConfirmRounds {
		return
	}
	rctx := make([]byte, 17)
	rctx[0] = 'c' // never equal to a read's 16-byte context
	binary.LittleEndian.PutUint64(rctx[1:9], n.nonce)
	binary.LittleEndian.PutUint64(rctx[9:], n.seq.Add(1))
	n.lastRound = time.Now()
	n.rounds[string(rctx)] = &confirmRound{term: st.Term, start: n.lastRound}
	n.rn.ReadIndex(rctx)
}

// confirmRounds records the rounds a quorum answered whose read index is applied, if this
// member still leads at their term.
func (n *Node) confirmRounds() {
	st := n.rn.BasicStatus()
	var best *confirmRound
	for ctx, r := range n.rounds {
		if r.index == 0 || r.index > n.applied {
			continue
		}
		delete(n.rounds, ctx)
		if st.RaftState == raft.StateLeader && r.term == st.Term && (best == nil || r.start.After(best.start)) {
			best = r
		}
	}
	if best == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if best.term < n.confirmed.Term || best.term == n.confirmed.Term && !best.start.After(n.confirmed.Start) {
		return
	}
	n.confirmed = Confirmation{Term: best.term, Start: best.start}
	close(n.confirmedc)
	n.confirmedc = make(chan struct{})
	n.confirmc = make(chan time.Time)
}

func (n *Node) startRead(r *readReq) {
	st := n.rn.BasicStatus()
	if st.Lead == raft.None {
		close(r.done) // index 0: the caller sees ErrNoLeader
		return
	}
	n.reads[string(r.rctx)] = r
	n.rn.ReadIndex(r.rctx)
}

// handleReady handles one Ready in the order the raft README prescribes: persist the hard
// state, entries and snapshot (synced), then send messages, then apply the snapshot and the
// committed entries, then Advance. Persisting before sending is the simple safe order: a
// message may promise (a vote, an acknowledged append) only what is durable.
func (n *Node) handleReady() error {
	rd := n.rn.Ready()
	becameLeader := rd.SoftState != nil && rd.SoftState.RaftState == raft.StateLeader

	// 1. Persist: the snapshot file first, then the WAL records that refer to it.
	var snapMeta *raftpb.SnapshotMetadata
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := saveSnap(n.cfg.FS, n.snapDir, rd.Snapshot); err != nil {
			return err
		}
		snapMeta = &rd.Snapshot.Metadata
	}
	if err := n.wal.save(rd.HardState, rd.Entries, snapMeta); err != nil {
		return err
	}
	if snapMeta != nil {
		if err := n.ms.ApplySnapshot(rd.Snapshot); err != nil {
			return fmt.Errorf("raftnode: %w", err)
		}
	}
	if err := n.ms.Append(rd.Entries); err != nil {
		return fmt.Errorf("raftnode: %w", err)
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := n.ms.SetHardState(rd.HardState); err != nil {
			return fmt.Errorf("raftnode: %w", err)
		}
	}
	for _, e := range rd.Entries {
		if e.Type == raftpb.EntryConfChange || e.Type == raftpb.EntryConfChangeV2 {
			n.pendingConf = max(n.pendingConf, e.Index)
		}
	}
	if becameLeader {
		// Raft refuses a conf change until everything in the log when it won is applied.
		last, _ := n.ms.LastIndex()
		n.pendingConf = max(n.pendingConf, last)
	}

	// 2. Send.
	if len(rd.Messages) > 0 {
		n.cfg.Transport.Send(rd.Messages)
	}

	// 3. Apply the snapshot, then the committed entries.
	if snapMeta != nil {
		idx := snapMeta.Index
		if n.cfg.SM.Applied() < idx {
			if err := n.cfg.SM.Restore(rd.Snapshot.Data, idx); err != nil {
				return fmt.Errorf("raftnode: restore snapshot %d: %w", idx, err)
			}
		}
		n.confState = snapMeta.ConfState
		n.applied, n.snapIndex = idx, idx
		n.log.Info("snapshot received", "index", idx, "term", snapMeta.Term)
		if err := n.purge(); err != nil {
			return err
		}
	}
	for i := range rd.CommittedEntries {
		if err := n.apply(&rd.CommittedEntries[i]); err != nil {
			return err
		}
	}
	for _, rs := range rd.ReadStates {
		if r, ok := n.rounds[string(rs.RequestCtx)]; ok {
			r.index = max(rs.Index, 1)
			continue
		}
		if r, ok := n.reads[string(rs.RequestCtx)]; ok {
			delete(n.reads, string(rs.RequestCtx))
			r.index = max(rs.Index, 1)
			n.readWait = append(n.readWait, r)
		}
	}
	n.releaseReads()
	n.confirmRounds()
	if err := n.maybeSnapshot(); err != nil {
		return err
	}

	// 4. Advance.
	n.rn.Advance(rd)
	return nil
}

// apply applies one committed entry: a normal one to the state machine (unless it already
// holds it, after a restart), a conf change to raft.
func (n *Node) apply(e *raftpb.Entry) error {
	if e.Index <= n.applied {
		return nil
	}
	switch e.Type {
	case raftpb.EntryNormal:
		if len(e.Data) == 0 {
			break // a new leader's empty entry
		}
		if len(e.Data) < envelopeSize {
			return fmt.Errorf("raftnode: entry %d: %w: %d bytes, shorter than the envelope", e.Index, ErrCorrupt, len(e.Data))
		}
		if e.Index <= n.cfg.SM.Applied() {
			break
		}
		res, err := n.cfg.SM.Apply(e.Index, e.Data[envelopeSize:])
		if err != nil {
			return fmt.Errorf("raftnode: apply entry %d: %w", e.Index, err)
		}
		n.deliver(e.Data[:envelopeSize], result{data: res})
	case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
		var cc raftpb.ConfChangeI
		var ctx []byte
		if e.Type == raftpb.EntryConfChange {
			var c raftpb.ConfChange
			if err := c.Unmarshal(e.Data); err != nil {
				return fmt.Errorf("raftnode: entry %d: %w: %v", e.Index, ErrCorrupt, err)
			}
			cc, ctx = c, c.Context
		} else {
			var c raftpb.ConfChangeV2
			if err := c.Unmarshal(e.Data); err != nil {
				return fmt.Errorf("raftnode: entry %d: %w: %v", e.Index, ErrCorrupt, err)
			}
			cc, ctx = c, c.Context
		}
		n.confState = *n.rn.ApplyConfChange(cc)
		n.log.Info("membership changed", "index", e.Index, "voters", n.confState.Voters)
		if len(ctx) == envelopeSize {
			n.deliver(ctx, result{})
		}
	}
	n.applied = e.Index
	return nil
}

// deliver hands a result to the caller waiting for the proposal env names, if it is ours.
func (n *Node) deliver(env []byte, r result) {
	if binary.LittleEndian.Uint64(env[:8]) != n.nonce {
		return
	}
	seq := binary.LittleEndian.Uint64(env[8:16])
	n.mu.Lock()
	ch, ok := n.waiters[seq]
	delete(n.waiters, seq)
	n.mu.Unlock()
	if ok {
		ch <- r // buffered
	}
}

func (n *Node) releaseReads() {
	kept := n.readWait[:0]
	for _, r := range n.readWait {
		if r.index <= n.applied {
			close(r.done)
		} else {
			kept = append(kept, r)
		}
	}
	clear(n.readWait[len(kept):])
	n.readWait = kept
	n.readsWaiting.Store(int64(len(kept)))
}

// maybeSnapshot takes a snapshot once SnapshotEntries entries were applied since the last one:
// the state machine's state, labelled with the applied index (entries between SM.Applied() and
// it are empty or conf changes, which the state machine does not see), written durably, then
// raft's log compacted and old WAL segments and snapshots deleted.
func (n *Node) maybeSnapshot() error {
	if n.applied-n.snapIndex < n.cfg.SnapshotEntries {
		return nil
	}
	data, smIndex, err := n.cfg.SM.Snapshot()
	if err != nil {
		return fmt.Errorf("raftnode: state machine snapshot: %w", err)
	}
	if smIndex > n.applied {
		// Replaying after a restart: the state machine is ahead of raft's applied index, and
		// its state labelled with the lower index would make a follower apply entries twice.
		return nil
	}
	snap, err := n.ms.CreateSnapshot(n.applied, &n.confState, data)
	if err != nil {
		return fmt.Errorf("raftnode: %w", err)
	}
	if err := saveSnap(n.cfg.FS, n.snapDir, snap); err != nil {
		return err
	}
	if err := n.ms.Compact(n.applied); err != nil {
		return fmt.Errorf("raftnode: compact: %w", err)
	}
	n.snapIndex = n.applied
	n.log.Debug("snapshot taken", "index", n.applied, "term", snap.Metadata.Term, "bytes", len(data))
	return n.purge()
}

func (n *Node) purge() error {
	idx, err := purgeSnaps(n.cfg.FS, n.snapDir)
	if err != nil {
		return err
	}
	return n.wal.purge(idx)
}

func (n *Node) updateStatus() {
	bs := n.rn.BasicStatus()
	first, _ := n.ms.FirstIndex()
	last, _ := n.ms.LastIndex()
	st := Status{
		ID: n.cfg.ID, Leader: bs.Lead, Term: bs.Term, Commit: bs.Commit, Applied: n.applied,
		Voters: slices.Sorted(slices.Values(n.confState.Voters)), State: bs.RaftState.String(),
		SnapshotIndex: n.snapIndex, FirstLogIndex: first, LastLogIndex: last,
	}
	n.mu.Lock()
	n.status = st
	n.mu.Unlock()
}

func (n *Node) setErr(err error) {
	n.mu.Lock()
	if n.err == nil {
		n.err = err
	}
	n.mu.Unlock()
}

func (n *Node) failWaiters() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for seq, ch := range n.waiters {
		ch <- result{err: ErrStopped}
		delete(n.waiters, seq)
	}
}

// Err returns the error that stopped the node (a persistence or apply failure), or nil.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

func (n *Node) stoppedErr() error {
	if err := n.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStopped, err)
	}
	return ErrStopped
}

func (n *Node) envelope() ([]byte, uint64, chan result) {
	seq := n.seq.Add(1)
	env := make([]byte, envelopeSize)
	binary.LittleEndian.PutUint64(env[:8], n.nonce)
	binary.LittleEndian.PutUint64(env[8:], seq)
	ch := make(chan result, 1)
	n.mu.Lock()
	n.waiters[seq] = ch
	n.mu.Unlock()
	return env, seq, ch
}

func (n *Node) dropWaiter(seq uint64) {
	n.mu.Lock()
	delete(n.waiters, seq)
	n.mu.Unlock()
}

// submit hands p to the loop and waits for the applied result. If leadership is lost after
// the loop accepted the proposal, it may or may not commit; the caller learns neither and
// its ctx ends the wait (as in etcd).
func (n *Node) submit(ctx context.Context, p propReq, seq uint64, ch chan result) ([]byte, error) {
	defer n.dropWaiter(seq)
	p.errc = make(chan error, 1)
	select {
	case n.propc <- p:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-n.done:
		return nil, n.stoppedErr()
	}
	if err := <-p.errc; err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, n.stoppedErr()
		}
		return r.data, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-n.done:
		return nil, n.stoppedErr()
	}
}

// Propose replicates data and returns the state machine's result once the entry is applied on
// this member. On a member that is not the leader it returns a *NotLeaderError (ErrNotLeader).
func (n *Node) Propose(ctx context.Context, data []byte) ([]byte, error) {
	env, seq, ch := n.envelope()
	return n.submit(ctx, propReq{data: append(env, data...)}, seq, ch)
}

// ProposeAt is Propose, refused (ErrNotLeader) unless the member leads at term when the entry
// is appended: a decision made by the leader of one term is not proposed by the leader of
// another, which may know what the first did not.
func (n *Node) ProposeAt(ctx context.Context, term uint64, data []byte) ([]byte, error) {
	env, seq, ch := n.envelope()
	return n.submit(ctx, propReq{data: append(env, data...), term: term}, seq, ch)
}

// AddMember adds a voter through a raft conf change and returns once it is applied here. Start
// the new member with Join afterwards (or before: it waits for the leader).
func (n *Node) AddMember(ctx context.Context, id uint64) error {
	return n.changeMember(ctx, raftpb.ConfChangeAddNode, id)
}

// RemoveMember removes a member through a raft conf change and returns once it is applied here.
func (n *Node) RemoveMember(ctx context.Context, id uint64) error {
	return n.changeMember(ctx, raftpb.ConfChangeRemoveNode, id)
}

func (n *Node) changeMember(ctx context.Context, typ raftpb.ConfChangeType, id uint64) error {
	for {
		env, seq, ch := n.envelope()
		cc := raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{{Type: typ, NodeID: id}}, Context: env}
		_, err := n.submit(ctx, propReq{cc: &cc}, seq, ch)
		if !errors.Is(err, ErrConfChangePending) {
			return err
		}
		// The earlier change applies within a few ticks; poll, bounded by ctx.
		t := time.NewTimer(n.cfg.TickInterval)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// ReadIndex is a linearizable read barrier: it returns once this member has applied everything
// that was committed when the call started (raft's ReadIndex, confirmed by a leader quorum
// round). It works on followers. ErrNoLeader while no leader is known.
func (n *Node) ReadIndex(ctx context.Context) error {
	rctx := make([]byte, 16)
	binary.LittleEndian.PutUint64(rctx[:8], n.nonce)
	binary.LittleEndian.PutUint64(rctx[8:], n.seq.Add(1))
	r := &readReq{rctx: rctx, done: make(chan struct{})}
	select {
	case n.readc <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return n.stoppedErr()
	}
	select {
	case <-r.done:
		if r.index == 0 {
			return ErrNoLeader
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return n.stoppedErr()
	}
}

// Confirmed returns the newest confirmation of this member's leadership (zero when it has
// never been confirmed). It may be of an earlier term than the member's current one: compare
// Term.
func (n *Node) Confirmed() Confirmation {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.confirmed
}

// Confirm asks for a proof of this member's leadership started at or after after (after no
// later than now), and waits for it: it returns the newest confirmation once it is of a later
// term than term, or of term and started at or after after; when ctx ends first, the newest
// with ctx's error. A round is started for it unless one in flight covers it, no sooner than
// ConfirmGap after the last; a member that does not lead starts none.
func (n *Node) Confirm(ctx context.Context, term uint64, after time.Time) (Confirmation, error) {
	if c := n.Confirmed(); c.Term > term || c.Term == term && !c.Start.Before(after) {
		return c, nil
	}
	select {
	case n.confirmc <- after:
	case <-ctx.Done():
		return n.Confirmed(), ctx.Err()
	case <-n.done:
		return n.Confirmed(), n.stoppedErr()
	}
	return n.waitConfirmed(ctx, term, after)
}

// waitConfirmed waits until the newest confirmation is of a later term than term, or of term
// and started at or after after, and returns it; when ctx ends first, it returns the newest
// with ctx's error.
func (n *Node) waitConfirmed(ctx context.Context, term uint64, after time.Time) (Confirmation, error) {
	for {
		n.mu.Lock()
		c, ch := n.confirmed, n.confirmedc
		n.mu.Unlock()
		if c.Term > term || c.Term == term && !c.Start.Before(after) {
			return c, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return c, ctx.Err()
		case <-n.done:
			return c, n.stoppedErr()
		}
	}
}

// Step passes a message received from another member to raft.
func (n *Node) Step(ctx context.Context, m raftpb.Message) error {
	select {
	case n.recvc <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return n.stoppedErr()
	}
}

func (n *Node) control(f func(*raft.RawNode)) {
	select {
	case n.ctlc <- f:
	case <-n.done:
	}
}

// ReportUnreachable tells raft that the last message to id could not be delivered, so that
// it probes instead of streaming.
func (n *Node) ReportUnreachable(id uint64) {
	n.control(func(rn *raft.RawNode) { rn.ReportUnreachable(id) })
}

// ReportSnapshot tells raft whether a MsgSnap to id was delivered; until it is told, the leader
// sends id nothing else.
func (n *Node) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	n.control(func(rn *raft.RawNode) { rn.ReportSnapshot(id, status) })
}

// Status returns the member's view as of its last loop iteration.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.status
	st.Voters = slices.Clone(st.Voters)
	return st
}

// Stop stops the loop and closes the WAL. It returns the error that had stopped the node, if
// any. Calling it again returns the same.
func (n *Node) Stop() error {
	n.stop.Do(func() { close(n.stopc) })
	<-n.done
	return n.Err()
}
