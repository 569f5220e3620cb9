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

	// roleMu serializes changes of role (role.go); taken before mu.
	roleMu sync.Mutex
	// managed: lavik-meta decides the node's role (Manage); ident is then its identity, set
	// once before managed.
	managed atomic.Bool
	ident   *Identity
	// placed: meta has assigned the node a role since it started (Assign). Guarded by roleMu.
	placed bool
	// mark says the data is incomplete, and why (role.go); nil when it is complete. Guarded
	// by mu.
	mark *incompleteMark
}

// New makes a node's replication for ks: a primary with a new history, until ReplicaOf.
func New(ks *keyspace.Keyspace, opts Options) *Node {
	if opts.PingPeriod <= 0 {
		opts.PingPeriod = 10 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	n := &Node{opts: opts, ks: ks, log: opts.Logger, replid: newReplID(), followers: map[*followerLink]struct{}{},
		acks: make(chan struct{}), lease: newLease()}
	n.openMark()
	return n
}

func newReplID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Follower implements commands.Replication.
func (n *Node) Follower() bool { return n.following.Load() }

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
		return commands.RoleInfo{Managed: n.managed.Load(), Follower: true, Offset: l.applied.Load(), Host: l.host, Port: l.port, State: l.roleState()}
	}
	r := commands.RoleInfo{Managed: n.managed.Load(), Offset: n.offsetLocked()}
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
	// Lavik's own: whether the data is a complete copy (role.go), and who decides the role.
	kv("lavik_data_complete", b2i(n.mark == nil))
	if n.mark != nil {
		kv("lavik_data_incomplete_reason", strings.NewReplacer("\r", " ", "\n", " ").Replace(n.mark.reason))
	}
	kv("lavik_role_managed", b2i(n.managed.Load()))
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
	// Incomplete: the node's data is not a complete copy (role.go), for IncompleteReason.
	Incomplete       bool
	IncompleteReason string
	// Managed: lavik-meta decides the node's role.
	Managed bool
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
	st := Status{ReplID: n.replidLocked(), Offset: n.offsetLocked(), Managed: n.managed.Load()}
	if n.mark != nil {
		st.Incomplete, st.IncompleteReason = true, n.mark.reason
	}
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
