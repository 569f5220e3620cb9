package repl

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

// Options configure a node's replication.
type Options struct {
	FS  vfs.FS
	Dir string // the node's data directory; the backlog lives in its "repl-backlog"
	// BacklogSize is repl-backlog-size: how much of the stream a primary keeps for partial
	// resyncs. Too small: a follower back from a short outage needs a full resync; too large:
	// disk.
	BacklogSize int64
	// MasterAuth is the password a follower gives its primary.
	MasterAuth func() string
	// ListeningPort is the port a follower tells its primary it serves clients on.
	ListeningPort func() int
	// PingPeriod is how often a primary sends PING down idle links (repl-ping-replica-period);
	// Timeout how long either side waits for the other before dropping the link.
	PingPeriod, Timeout time.Duration
	Logger              *slog.Logger
	// Server is what a follower's applier gives the commands it runs.
	Server commands.Server
	// PubSub is the node's pub/sub registry (nil: none): a follower publishes the keyspace
	// events of the commands it applies, and the messages its primary's PUBLISHes carry, to
	// its own subscribers.
	PubSub *pubsub.Registry
}

// Node is a data node's replication: a primary's stream and the followers it serves, or a
// follower's link to its primary. See doc.go.
type Node struct {
	opts Options
	ks   *keyspace.Keyspace
	log  *slog.Logger

	mu sync.Mutex
	// replid names the history the stream's offsets count in. Guarded by mu.
	replid string
	// stream is the primary's change stream, made when a follower is promoted (so the writes
	// after its promotion continue the history its fellow followers share) or else when the
	// first follower connects (a node nobody has followed keeps none). Guarded by mu.
	stream *Stream
	// offset is the stream position of a node without a stream (a follower's applied
	// offset, carried into the stream when it becomes a primary). Guarded by mu.
	offset int64
	// replid2 is the history this node followed before it was promoted, valid up to offset2
	// (INFO's master_replid2 and second_repl_offset). Guarded by mu.
	replid2   string
	offset2   int64
	followers map[*followerLink]struct{}
	link      *link // the link to the primary, when following

	acks chan struct{} // closed and replaced when a follower acknowledges; guarded by mu

	syncFull, syncPartialOK, syncPartialErr atomic.Uint64
	// staleState: the persisted state no longer matches the data (forgetHistoryLocked failed).
	staleState atomic.Bool
	// following mirrors link != nil for the write path (Writable); lease is the write lease
	// (lease.go).
	following atomic.Bool
	lease     *lease
}

// New makes a node's replication for ks: a primary with a new history, until ReplicaOf.
func New(ks *keyspace.Keyspace, opts Options) *Node {
	if opts.PingPeriod <= 0 {
		opts.PingPeriod = 10 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	return &Node{opts: opts, ks: ks, log: opts.Logger, replid: newReplID(), followers: map[*followerLink]struct{}{},
		acks: make(chan struct{}), lease: newLease()}
}

func newReplID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Follower implements commands.Replication.
func (n *Node) Follower() bool { return n.following.Load() }

// ReplicaOf implements commands.Replication.
func (n *Node) ReplicaOf(host string, port int) error { return n.follow(host, port, true) }

// follow makes the node follow host:port (or, with host "", a primary). stepDown says a node
// that is a primary now steps down, recording its history for a PSYNC2-style continuation; at
// start-up a node configured to follow has taken no write and keeps the state it persisted.
func (n *Node) follow(host string, port int, stepDown bool) error {
	n.mu.Lock()
	old := n.link
	n.link = nil
	n.mu.Unlock()
	if old != nil {
		old.stop()
	}
	if host == "" {
		if old != nil {
			n.promote(old)
		}
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if old == nil && stepDown {
		// A primary stepping down: its followers are dropped and its stream ends. Its data
		// stands at its stream's end in its history, which it records as a follower's state:
		// a new primary that was its follower and got all of it continues from there (PSYNC2),
		// any other gets a full resync. A client's write that passed the READONLY check before
		// this and commits after would make the data differ from that state: the tripwire that
		// replaces the stream sees it and asks for a full resync instead.
		n.stopStreamLocked()
		n.offset = max(n.offset, 0)
		st := replState{replid: n.replid, offset: n.offset, db: -1}
		n.writeStateLocked(st)
		n.ks.SetChangeSink(tripwire{n}, nil)
	}
	n.ks.SetFollower(true)
	n.link = newLink(n, host, port)
	n.following.Store(true)
	go n.link.run()
	return nil
}

// tripwire is a follower's change sink: the changes the link applies state no effects and never
// reach it, so a change that does is a client's write that slipped past the READONLY check
// while the node stepped down. The data then no longer matches the recorded state.
type tripwire struct{ n *Node }

func (t tripwire) Change(c *keyspace.Change) int64 {
	if !c.Expired {
		t.n.log.Warn("replication: a write committed after this node became a follower; rebuilding it with a full resync")
		go t.n.Resync()
	}
	return 0
}

// promote makes a follower that was following through l a primary: a new history starting at
// the offset it reached (Redis also keeps the old id as replid2 so its fellow followers can
// continue; Lavik's do a full resync).
func (n *Node) promote(l *link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	// The old history stays valid up to where this node got it: a fellow follower (or the old
	// primary) that stands exactly there continues with a partial resync (Redis's PSYNC2).
	n.replid2, n.offset2 = l.replID(), l.applied.Load()
	n.replid = newReplID()
	n.offset = l.applied.Load()
	// The stream starts now, before the node takes a write: every write from here on is in
	// its history, so a node continuing the old one from offset2 misses none of them.
	n.ks.SetChangeSink(nil, nil)
	if _, err := n.streamLocked(); err != nil {
		// Without a stream the writes to come are in no history: nobody may continue the
		// old one. A follower that connects later gets a full resync.
		n.log.Error("replication: cannot start the change stream of the new primary; its followers will need a full resync", "err", err)
		n.replid2 = ""
	}
	n.following.Store(false)
	n.ks.SetFollower(false)
	n.ks.SetClockFloor(0)
	n.forgetHistoryLocked()
	n.log.Info("replication: now a primary", "replid", n.replid, "offset", n.offset)
}

// Start makes the node follow host:port from start-up, or, with host "", a primary.
func (n *Node) Start(host string, port int) error {
	if host != "" {
		return n.follow(host, port, false)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ks.SetFollower(false) // a primary decides expiry (the keyspace may have opened as a follower's)
	if _, ok := loadState(n.ks); ok {
		n.forgetHistoryLocked()
	}
	return nil
}

// forgetHistoryLocked replaces the persisted replication state by the node's own history, which
// no other node shares: a node that takes writes as a primary has diverged from the primary it
// followed, and if it follows one again its PSYNC must get a full resync, never continue a stream
// its data no longer matches. n.mu is held.
func (n *Node) forgetHistoryLocked() {
	// A history id no stream has: with the node's own, a restarted primary whose data went past
	// the offset recorded here could continue its old history from here after a crash, applying
	// twice what it wrote since. Only a clean step-down (ReplicaOf) records a usable state.
	n.writeStateLocked(replState{replid: newReplID(), offset: n.offset, db: -1})
}

// Follow makes a node that has taken no write since it started follow host:port, keeping the
// state it persisted (a restarted follower continues with a partial resync): lavik-meta's first
// placement of a node. Any later change of role goes through ReplicaOf.
func (n *Node) Follow(host string, port int) error { return n.follow(host, port, false) }

// writeStateLocked records st as the node's replication state. n.mu is held.
func (n *Node) writeStateLocked(st replState) {
	se := n.ks.NewSession()
	err := n.ks.Put(se, keyspace.InternalDB, stateKey, st.encode(), 0, keyspace.TypeString)
	if err == nil {
		err = se.Wait()
	}
	if err != nil {
		// The old state must not be used by this process: its PSYNCs ask for a full resync.
		n.staleState.Store(true)
		n.log.Error("replication: cannot record the node's new history; following a primary later needs a full resync", "err", err)
	}
}

// stopStreamLocked drops the followers and ends the stream. n.mu is held.
func (n *Node) stopStreamLocked() {
	for f := range n.followers {
		f.close()
	}
	if n.stream != nil {
		n.ks.SetChangeSink(nil, nil)
		n.offset = n.stream.End()
		n.stream.Close()
		n.stream.Backlog().Close()
		n.stream = nil
	}
}

// streamLocked returns the change stream, starting it if need be. n.mu is held.
func (n *Node) streamLocked() (*Stream, error) {
	if n.stream != nil {
		return n.stream, nil
	}
	bl, err := OpenBacklog(n.opts.FS, filepath.Join(n.opts.Dir, "repl-backlog"), n.opts.BacklogSize, n.offset)
	if err != nil {
		return nil, err
	}
	s := NewStream(n.ks, bl, n.log)
	n.ks.SetChangeSink(s, nil)
	n.stream = s
	go n.pinger(s)
	return s, nil
}

// pinger sends PING down the stream every PingPeriod while it is the node's, so followers
// know the link lives (Redis's repl-ping-replica-period).
func (n *Node) pinger(s *Stream) {
	t := time.NewTicker(n.opts.PingPeriod)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.stop:
			return
		}
		s.Ping()
	}
}

// Resync implements commands.Replication: the link drops its connection and its state, and
// reconnects for a full resync.
func (n *Node) Resync() error {
	n.mu.Lock()
	l := n.link
	n.mu.Unlock()
	if l == nil {
		return commands.Error("ERR this node follows no primary: LAVIK.RESYNC rebuilds a follower")
	}
	n.staleState.Store(true)
	l.connMu.Lock()
	if l.conn != nil {
		l.conn.Close()
	}
	l.connMu.Unlock()
	n.log.Info("replication: rebuild asked: full resync")
	return nil
}

// KillLinks implements commands.Replication.
func (n *Node) KillLinks(replicas bool) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if replicas {
		for f := range n.followers {
			f.close()
		}
		return len(n.followers)
	}
	if l := n.link; l != nil {
		l.connMu.Lock()
		defer l.connMu.Unlock()
		if l.conn != nil && l.state.Load() != linkConnect {
			l.conn.Close()
			return 1
		}
	}
	return 0
}

// Close stops following and serving followers.
func (n *Node) Close() {
	n.mu.Lock()
	l := n.link
	n.link = nil
	n.mu.Unlock()
	if l != nil {
		l.stop()
	}
	n.mu.Lock()
	n.stopStreamLocked()
	n.mu.Unlock()
}

// Offset is the node's replication offset: its stream's end as a primary, what it applied as
// a follower.
func (n *Node) Offset() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.offsetLocked()
}

func (n *Node) offsetLocked() int64 {
	switch {
	case n.link != nil:
		return n.link.applied.Load()
	case n.stream != nil:
		return n.stream.End()
	}
	return n.offset
}

// Role implements commands.Replication.
func (n *Node) Role() commands.RoleInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l := n.link; l != nil {
		return commands.RoleInfo{Follower: true, Offset: l.applied.Load(), Host: l.host, Port: l.port, State: l.roleState()}
	}
	r := commands.RoleInfo{Offset: n.offsetLocked()}
	for _, f := range n.sortedFollowersLocked() {
		if f.state.Load() == stateOnline {
			r.Followers = append(r.Followers, commands.FollowerInfo{IP: f.ip, Port: f.port, Offset: f.ack.Load()})
		}
	}
	return r
}

// Stats implements commands.Replication.
func (n *Node) Stats() commands.ReplStats {
	return commands.ReplStats{SyncFull: n.syncFull.Load(), SyncPartialOK: n.syncPartialOK.Load(), SyncPartialErr: n.syncPartialErr.Load()}
}

// Info implements commands.Replication: INFO replication, with Redis's field names.
func (n *Node) Info(b *strings.Builder) {
	n.mu.Lock()
	defer n.mu.Unlock()
	kv := func(k string, v any) { fmt.Fprintf(b, "%s:%v\r\n", k, v) }
	now := time.Now()
	if l := n.link; l != nil {
		kv("role", "slave")
		kv("master_host", l.host)
		kv("master_port", l.port)
		up := l.state.Load() == linkConnected
		kv("master_link_status", map[bool]string{true: "up", false: "down"}[up])
		if last := l.lastIO.Load(); last > 0 {
			kv("master_last_io_seconds_ago", int64(now.Sub(time.UnixMilli(last)).Seconds()))
		} else {
			kv("master_last_io_seconds_ago", -1)
		}
		syncing := l.state.Load() == linkSync
		kv("master_sync_in_progress", b2i(syncing))
		if syncing {
			kv("master_sync_total_bytes", -1)
			kv("master_sync_read_bytes", l.syncBytes.Load())
			kv("master_sync_left_bytes", -1)
			kv("master_sync_loaded_keys", l.syncKeys.Load())
			kv("master_sync_last_io_seconds_ago", int64(now.Sub(time.UnixMilli(l.lastIO.Load())).Seconds()))
		}
		kv("slave_read_repl_offset", l.read.Load())
		kv("slave_repl_offset", l.applied.Load())
		kv("slave_priority", 100)
		kv("slave_read_only", 1)
		kv("replica_announced", 1)
		if !up {
			kv("master_link_down_since_seconds", int64(now.Sub(l.downSince()).Seconds()))
		}
	} else {
		kv("role", "master")
	}
	fs := n.sortedFollowersLocked()
	kv("connected_slaves", len(fs))
	for i, f := range fs {
		lag := int64(now.Sub(time.UnixMilli(f.ackTime.Load())).Seconds())
		fmt.Fprintf(b, "slave%d:ip=%s,port=%d,state=%s,offset=%d,lag=%d\r\n", i, f.ip, f.port, f.state.Load().String(), f.ack.Load(), lag)
	}
	kv("master_failover_state", "no-failover")
	kv("master_replid", n.replidLocked())
	if n.replid2 != "" && n.link == nil {
		kv("master_replid2", n.replid2)
		kv("master_repl_offset", n.offsetLocked())
		kv("second_repl_offset", n.offset2+1)
	} else {
		kv("master_replid2", strings.Repeat("0", 40))
		kv("master_repl_offset", n.offsetLocked())
		kv("second_repl_offset", -1)
	}
	if s := n.stream; s != nil {
		st := s.Backlog().Stats()
		kv("repl_backlog_active", 1)
		kv("repl_backlog_size", n.opts.BacklogSize)
		kv("repl_backlog_first_byte_offset", st.First+1)
		kv("repl_backlog_histlen", st.End-st.First)
	} else {
		kv("repl_backlog_active", 0)
		kv("repl_backlog_size", n.opts.BacklogSize)
		kv("repl_backlog_first_byte_offset", 0)
		kv("repl_backlog_histlen", 0)
	}
}

func (n *Node) replidLocked() string {
	if n.link != nil {
		if id := n.link.replID(); id != "" {
			return id
		}
	}
	return n.replid
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Status is the node's replication state for its admin API (lavikctl, meta).
type Status struct {
	Follower bool
	ReplID   string
	Offset   int64
	// Of a primary: its followers, by connection order.
	Followers []FollowerStatus
	// Of a follower: its primary and the link.
	PrimaryAddr    string
	LinkState      string // connect, connecting, sync, connected
	PrimaryOffset  int64  // the stream offset read from the primary so far
	LastIOAge      time.Duration
	SyncBytes      int64 // snapshot bytes loaded in a full resync running now
	SyncInProgress bool
}

// FollowerStatus is one follower as its primary sees it.
type FollowerStatus struct {
	Addr   string
	State  string // wait_bgsave, send_bulk, online
	Acked  int64
	AckAge time.Duration
}

// Status reports the node's replication state.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := Status{ReplID: n.replidLocked(), Offset: n.offsetLocked()}
	now := time.Now()
	if l := n.link; l != nil {
		st.Follower = true
		st.PrimaryAddr = net.JoinHostPort(l.host, strconv.Itoa(l.port))
		st.LinkState = l.roleState()
		st.PrimaryOffset = l.read.Load()
		if last := l.lastIO.Load(); last > 0 {
			st.LastIOAge = now.Sub(time.UnixMilli(last))
		}
		st.SyncInProgress = l.state.Load() == linkSync
		if st.SyncInProgress {
			st.SyncBytes = l.syncBytes.Load()
		}
	}
	for _, f := range n.sortedFollowersLocked() {
		st.Followers = append(st.Followers, FollowerStatus{Addr: net.JoinHostPort(f.ip, strconv.Itoa(f.port)),
			State: f.state.Load().String(), Acked: f.ack.Load(), AckAge: now.Sub(time.UnixMilli(f.ackTime.Load()))})
	}
	return st
}

// Rebuild makes a follower copy everything again from the primary at host:port (switching to
// it if it followed another); already reports that a full resync from that primary was running.
// A node that follows no primary holds the authoritative copy and is not rebuilt.
func (n *Node) Rebuild(host string, port int) (already bool, err error) {
	n.mu.Lock()
	l := n.link
	n.mu.Unlock()
	if l == nil {
		return false, commands.Error("ERR this node follows no primary: its data is the authoritative copy (demote it first)")
	}
	if l.host == host && l.port == port {
		if l.state.Load() == linkSync {
			return true, nil
		}
		return false, n.Resync()
	}
	n.staleState.Store(true)
	return false, n.ReplicaOf(host, port)
}
