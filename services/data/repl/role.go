package repl

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/keyspace"
)

// Roles: who a data node is, who may change that and when, and when its data counts as
// complete. Every change of role goes through this file.
//
// A node is a primary (it takes writes, each in its own history) or a follower (it applies its
// primary's stream and refuses clients' writes). Who may change that:
//
//   - A standalone node (no lavik-meta): its clients, as on Redis (REPLICAOF and SLAVEOF,
//     REPLICAOF NO ONE, LAVIK.RESYNC), and the admin API's Rebuild (lavikctl rebuild).
//   - A managed node (under lavik-meta; Manage): meta alone, through Assign, at the epoch of
//     its answer, which the node persists before it acts on it; an answer at an epoch lower
//     than one the node has seen changes nothing. Clients' role commands are refused with
//     ErrManaged, which names lavikctl. The admin API's Rebuild is taken only with the node's
//     current epoch and only from the primary meta made it follow, so an operator's rebuild
//     cannot race a failover (lavikctl reads the epoch from the node's status and passes it).
//   - The node itself, in both modes: a client's write that slipped past the READONLY check
//     while the node stepped down makes it ask its primary for a full resync (tripwire).
//
// Complete data. A node's data is complete when it is a whole copy of a history up to the
// offset its replication state names: a primary's own data, or a follower's once a full resync
// finished (the snapshot is consistent at the offset the stream continues from). A full resync
// destroys the old data before the new has loaded, so before its first destructive step (the
// FLUSHALL) the follower writes a mark into its data directory (the file INCOMPLETE, synced)
// and removes it only once the snapshot is loaded and synced together with the replication
// state that says so. The mark survives restarts and crashes: a start that finds the state the
// mark waited for removes it (the crash came between the two), any other keeps it, and the
// node's next PSYNC, having no state, asks for a full resync. A managed node whose data
// directory is new carries the mark from its first start until its first full resync, since
// empty data is a copy of nothing. While the mark stands the node says so in INFO replication,
// in the admin API's status (lavikctl) and in every heartbeat, and meta never promotes it
// (except as the first primary of a group that has never had one). A node that meta makes
// primary holds, by that decision, the group's data: the mark goes. A standalone node keeps it
// until its operator decides (REPLICAOF NO ONE accepts the data as it is).
//
// Rejected: loading the snapshot beside the old data and switching at the end, as a Redis
// replica does with its RDB: it takes twice the disk on a node whose point is to hold more
// than memory, and a keyspace has no second instance to switch to.

// ErrManaged refuses a client's role command on a node that lavik-meta manages.
var ErrManaged = commands.ErrManaged

// ErrStaleEpoch is Assign's refusal of an answer at an epoch lower than the node has seen.
var ErrStaleEpoch = errors.New("repl: meta answered at an epoch older than one this node has seen")

// incompleteFile is the mark's name in the data directory.
const incompleteFile = "INCOMPLETE"

// incompleteMark is why the node's data is incomplete, and what completes it.
type incompleteMark struct {
	// replid and offset name the snapshot a full resync is loading: a state at that history
	// and at least that offset says it loaded. replid is "-" when no full resync has begun.
	replid string
	offset int64
	reason string
}

func (m incompleteMark) encode() []byte {
	return fmt.Appendf(nil, "1 %s %d %s\n", m.replid, m.offset, m.reason)
}

func decodeMark(b []byte) (incompleteMark, bool) {
	f := strings.SplitN(strings.TrimRight(string(b), "\n"), " ", 4)
	if len(f) != 4 || f[0] != "1" {
		return incompleteMark{}, false
	}
	off, err := strconv.ParseInt(f[2], 10, 64)
	return incompleteMark{replid: f[1], offset: off, reason: f[3]}, err == nil
}

// loadMark reads the mark of the data directory (nil: none). A mark that cannot be read
// counts as one: the data is not known to be complete.
func (n *Node) loadMark() *incompleteMark {
	path := filepath.Join(n.opts.Dir, incompleteFile)
	f, err := n.opts.FS.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	bad := func(err error) *incompleteMark {
		n.log.Error("replication: cannot read the data-completeness mark; the data counts as incomplete", "path", path, "err", err)
		return &incompleteMark{replid: "-", reason: fmt.Sprintf("the mark %s cannot be read: %v", path, err)}
	}
	if err != nil {
		return bad(err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return bad(err)
	}
	b := make([]byte, min(size, 4096))
	if _, err := f.ReadAt(b, 0); err != nil {
		return bad(err)
	}
	m, ok := decodeMark(b)
	if !ok {
		return bad(fmt.Errorf("damaged (%q)", b))
	}
	return &m
}

// openMark loads the mark at start-up and removes it if the replication state shows that
// what it waited for happened: a crash between the two.
func (n *Node) openMark() {
	m := n.loadMark()
	if m != nil && m.replid != "-" {
		if st, ok := loadState(n.ks); ok && st.replid == m.replid && st.offset >= m.offset {
			n.mark = m
			n.clearMarkLocked()
			return
		}
	}
	n.mark = m
	if m != nil {
		n.log.Warn("replication: the node's data is incomplete", "why", m.reason)
	}
}

// markIncomplete records, durably before it returns nil, that the data is about to be
// incomplete. The caller does nothing destructive unless it returns nil.
func (n *Node) markIncomplete(m incompleteMark) error {
	if err := vfs.WriteFileAtomic(n.opts.FS, n.opts.Dir, incompleteFile, m.encode()); err != nil {
		return fmt.Errorf("repl: cannot mark the data incomplete: %w", err)
	}
	n.mu.Lock()
	n.mark = &m
	n.mu.Unlock()
	return nil
}

// clearMarkLocked removes the mark: the data is complete. If the file cannot be removed the
// node stays incomplete (the safe side), and says why. n.mu is held (or the node is opening).
func (n *Node) clearMarkLocked() {
	if n.mark == nil {
		return
	}
	path := filepath.Join(n.opts.Dir, incompleteFile)
	err := n.opts.FS.Remove(path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		err = n.opts.FS.SyncDir(n.opts.Dir)
	}
	if err != nil {
		n.log.Error("replication: cannot remove the data-completeness mark; the node stays incomplete", "err", err)
		n.mark.reason = fmt.Sprintf("%s (the data is complete but the mark cannot be removed: %v)", n.mark.reason, err)
		return
	}
	n.mark = nil
	n.log.Info("replication: the node's data is complete")
}

// Incomplete reports whether the node's data is incomplete, and why.
func (n *Node) Incomplete() (bool, string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mark == nil {
		return false, ""
	}
	return true, n.mark.reason
}

// Manage puts the node under lavik-meta, whose answers (Assign) alone change its role from now
// on; ident is the node's identity (its epoch). A node whose data directory ident was just
// made for carries the incomplete mark until its first full resync. Called before the node
// takes any role; later calls change nothing.
func (n *Node) Manage(ident *Identity) {
	n.roleMu.Lock()
	defer n.roleMu.Unlock()
	if n.managed.Load() {
		return
	}
	n.ident = ident
	n.managed.Store(true)
	n.RequireLease(true)
	if ident.Created() {
		if inc, _ := n.Incomplete(); !inc {
			if err := n.markIncomplete(incompleteMark{replid: "-", reason: "new data directory: no full resync has completed"}); err != nil {
				n.log.Error("replication: cannot mark a new node's data incomplete", "err", err)
				n.mu.Lock()
				n.mark = &incompleteMark{replid: "-", reason: "new data directory: no full resync has completed"}
				n.mu.Unlock()
			}
		}
	}
}

// Managed reports whether lavik-meta manages the node's role.
func (n *Node) Managed() bool { return n.managed.Load() }

// Assignment is the role meta assigns in a heartbeat's answer.
type Assignment struct {
	Epoch uint64
	// Primary: the node is its group's primary. Else it follows PrimaryAddr (host:port; ""
	// while the group has no primary, when the node keeps what it does).
	Primary     bool
	PrimaryAddr string
}

// Assign takes the role meta assigned, once the answer's epoch is persisted (an answer at an
// older epoch than the node has seen changes nothing: ErrStaleEpoch). The first assignment
// since the node started keeps what it persisted: a primary continues from its data with a
// history of its own, a follower resumes its stream where its data stands. Later ones change
// role as REPLICAOF would.
func (n *Node) Assign(a Assignment) error {
	n.roleMu.Lock()
	defer n.roleMu.Unlock()
	if !n.managed.Load() {
		return errors.New("repl: Assign on a node lavik-meta does not manage")
	}
	if seen := n.ident.Epoch(); a.Epoch < seen {
		return fmt.Errorf("%w (answer at %d, seen %d)", ErrStaleEpoch, a.Epoch, seen)
	}
	if err := n.ident.SeeEpoch(a.Epoch); err != nil {
		return err
	}
	following := n.following.Load()
	switch {
	case a.Primary && !n.placed:
		n.placed = true
		n.log.Info("meta: primary", "epoch", a.Epoch)
		n.startPrimary(true)
	case a.Primary && following:
		n.log.Info("meta: promoted to primary", "epoch", a.Epoch)
		n.follow("", 0, true)
	case a.Primary, a.PrimaryAddr == "":
	default:
		host, portStr, err := net.SplitHostPort(a.PrimaryAddr)
		port, perr := strconv.Atoi(portStr)
		if err != nil || perr != nil || port <= 0 {
			return fmt.Errorf("repl: meta named primary address %q", a.PrimaryAddr)
		}
		if following && n.primaryAddr() == net.JoinHostPort(host, portStr) {
			return nil
		}
		n.log.Info("meta: following", "primary", a.PrimaryAddr, "epoch", a.Epoch)
		stepDown := n.placed
		n.placed = true
		return n.follow(host, port, stepDown)
	}
	return nil
}

// primaryAddr is the address the node follows ("" when it follows none).
func (n *Node) primaryAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.link == nil {
		return ""
	}
	return net.JoinHostPort(n.link.host, strconv.Itoa(n.link.port))
}

// ReplicaOf implements commands.Replication: REPLICAOF host port, or with host "" REPLICAOF NO
// ONE, which also accepts the node's data as complete (the operator's decision). Refused on a
// managed node.
func (n *Node) ReplicaOf(host string, port int) error {
	if n.managed.Load() {
		return ErrManaged
	}
	n.roleMu.Lock()
	defer n.roleMu.Unlock()
	return n.follow(host, port, true)
}

// Start makes a standalone node follow host:port from start-up, or, with host "", a primary.
// A primary with an incomplete mark keeps it (and says so) until its operator decides.
func (n *Node) Start(host string, port int) error {
	n.roleMu.Lock()
	defer n.roleMu.Unlock()
	if host != "" {
		return n.follow(host, port, false)
	}
	n.startPrimary(false)
	return nil
}

// startPrimary makes a node that has taken no write since it started a primary, continuing
// from its data under a history of its own. byMeta: meta's decision, which makes the data the
// group's: the incomplete mark goes.
func (n *Node) startPrimary(byMeta bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ks.SetFollower(false) // a primary decides expiry (the keyspace may have opened as a follower's)
	if _, ok := loadState(n.ks); ok {
		n.forgetHistoryLocked()
	}
	if byMeta {
		n.clearMarkLocked()
	}
}

// follow makes the node follow host:port (or, with host "", a primary). stepDown says a node
// that is a primary now steps down, recording its history for a PSYNC2-style continuation; at
// start-up a node configured to follow has taken no write and keeps the state it persisted.
// n.roleMu is held.
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
		} else {
			n.mu.Lock()
			n.clearMarkLocked()
			n.mu.Unlock()
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
		go t.n.resync()
	}
	return 0
}

// promote makes a follower that was following through l a primary: a new history starting at
// the offset it reached (Redis also keeps the old id as replid2 so its fellow followers can
// continue). Whoever promotes it makes its data the authoritative copy: the incomplete mark
// goes. n.roleMu is held.
func (n *Node) promote(l *link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mark != nil {
		n.log.Warn("replication: promoted with incomplete data", "why", n.mark.reason)
	}
	n.clearMarkLocked()
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

// Resync implements commands.Replication (LAVIK.RESYNC): refused on a managed node, whose
// rebuilds go through lavikctl (Rebuild).
func (n *Node) Resync() error {
	if n.managed.Load() {
		return ErrManaged
	}
	return n.resync()
}

// resync makes the link drop its connection and its state, and reconnect for a full resync.
func (n *Node) resync() error {
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

// Rebuild makes a follower copy everything again from the primary at host:port; already
// reports that a full resync from that primary was running. A node that follows no primary
// holds the authoritative copy and is not rebuilt. A standalone follower may be switched to
// another primary by it; a managed one only rebuilds from the primary meta made it follow, and
// only at epoch, its current one (0 is refused: the caller must say which state it saw).
func (n *Node) Rebuild(host string, port int, epoch uint64) (already bool, err error) {
	n.roleMu.Lock()
	defer n.roleMu.Unlock()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if n.managed.Load() {
		switch seen := n.ident.Epoch(); {
		case epoch == 0:
			return false, fmt.Errorf("repl: under lavik-meta a rebuild must name the node's current epoch (%d)", seen)
		case epoch != seen:
			return false, fmt.Errorf("repl: the node is at epoch %d, not %d", seen, epoch)
		}
	} else if epoch != 0 {
		return false, fmt.Errorf("repl: the node is at epoch 0 (it runs without lavik-meta), not %d", epoch)
	}
	cur := n.primaryAddr()
	switch {
	case cur == "":
		return false, commands.Error("ERR this node follows no primary: its data is the authoritative copy (demote it first)")
	case cur == addr:
		n.mu.Lock()
		syncing := n.link.state.Load() == linkSync
		n.mu.Unlock()
		if syncing {
			return true, nil
		}
		return false, n.resync()
	case n.managed.Load():
		return false, fmt.Errorf("repl: the node follows %s, as lavik-meta assigned; a rebuild copies from it, not from %s", cur, addr)
	}
	n.staleState.Store(true)
	return false, n.follow(host, port, true)
}
