// Package failover is the meta leader's authority over data nodes: who is alive, which primary
// holds a lease, and when a group's primary must be replaced and by whom.
//
// It is deterministic and holds no clock: every call is given the time (the leader's monotonic
// clock, as a duration since some origin), so tests drive it step by step. Nothing here is
// replicated: heartbeats, liveness and leases live only in the current leader's memory, and a
// new leader starts with none. The decisions themselves (a new primary at a new epoch) are fsm
// commands the leader proposes to raft; only a committed SetPrimary changes who is primary.
//
// # Fencing
//
// Two primaries must never take writes at the same time. A primary takes writes only under a
// lease, and the argument is about when leases end and when a new primary's begin.
//
// The node's side. The leader answers a heartbeat it received at T with a lease of d; the node
// counts d from when it sent the heartbeat (before T), less a drift margin
// (repl.LeaseDriftMargin), so its lease ends before T+d, the end the leader records.
//
// A leader grants only under a fresh proof that it leads: before it answers a primary, the member
// makes sure it holds one no older than a quarter heartbeat (raftnode's Confirm: a round started
// at S and answered by a quorum at this leader's term), and Confirm hands S to the Authority. A
// heartbeat received at T gets d = min(Lease, S+Lease-T), none when that is under a heartbeat
// interval, so every grant of this leader, and the node's lease with it, ends by S+Lease. Every
// later leader was elected after S (a voter of its election answered this leader's round after S,
// at this term, before it voted), and it promotes nobody before it has led for a lease: at E+Lease
// at the earliest, E its election. So, for the primary of an earlier leader:
//
//	node's lease end < T+d <= S+Lease < E+Lease <= the new leader's first promotion
//
// and the new primary takes writes only after that promotion commits and its own heartbeat is
// answered. Each span is measured on one clock (the leader's or the node's monotonic clock);
// their rates differ by parts per million, which the node's margin covers many times over.
// Without the proof, a leader cut off from its peers kept granting until raft's CheckQuorum
// deposed it, one to two election timeouts later, while the others had elected a leader which
// waited out one lease and promoted: two writable primaries for up to about 0.9 s.
//
// A new leader therefore waits out every earlier leader's leases: it promotes nobody, and
// trusts no "stopped" report, before it has led for a full lease (New's since, taken after raft
// made it leader, so after S for every earlier leader's newest S; a member that leads again at
// a later term gets a new Authority). Its own grants end where it records them, and it promotes
// only when the primary's last grant is over (LeaseOver).
//
// A grant must not outlive the decision to replace its holder either: from the moment this
// leader decides to move a group on from an epoch (Tick's decisions, or a switchover, through
// Replacing), that epoch's primary gets no lease from it, even while the SetPrimary is still
// uncommitted (a paused primary whose heartbeat arrived in between would otherwise write again
// after the new primary's first lease). A SetPrimary an earlier leader proposed and left
// uncommitted is either in this leader's log, and committed before its first proof (raft serves
// a leader's first ReadIndex only after it has committed an entry of its own term, and a proof
// is reported only once the state machine has applied what was committed when the round
// started), or never committed; and a decision is proposed only by the leader of the term that
// made it (raftnode's ProposeAt).
package failover

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lavikdb/lavik/services/meta/fsm"
)

// Config are the failover timings.
type Config struct {
	// HeartbeatInterval is how often data nodes heartbeat (a fifth of it, at least 10 ms,
	// while a node's role may change any moment: see Heartbeat). A pause of the primary costs
	// it its role when it outlasts Lease less about a heartbeat (one that was about to go when
	// the pause began) and a round trip. Too long: leases must be longer for the same tolerance
	// of pauses, and failover is slower; too short: load on the leader (one small gRPC call a
	// node per interval, and for a primary's a round of raft heartbeats).
	HeartbeatInterval time.Duration
	// Lease is how long a primary may take writes after a heartbeat is answered. A failover
	// (the primary dead) takes about Lease less half a heartbeat, plus one raft commit and the
	// follower's next hurried heartbeat: too long makes failover slow; too short lets a pause
	// of the primary (GC, a slow disk, a stalled network) cost it its lease and the group a
	// failover. At least 3 heartbeat intervals. Every member must have the same Lease: a new
	// leader waits out its own Lease, not the one an earlier leader granted with.
	Lease time.Duration
	// FailAfter is how long a primary may miss heartbeats before it is replaced (once its
	// lease has also run out). Below Lease it changes nothing: the lease decides.
	FailAfter time.Duration
}

// DefaultConfig: a failover in under half a second (a 480 ms lease and a 50 ms heartbeat: a
// 464 ms median, 498 ms at most, in make bench-failover's 20 trials on the 2-core test VM;
// Redis Sentinel's 1352 ms in the same run), and a primary paused for up to about 0.42 s keeps
// its role (no failover in 8 pauses each of 360 to 420 ms; 3 in 8 at 440 ms, 6 in 8 at 460 ms).
// Rejected: a 600 ms lease and a 100 ms heartbeat (a 620 ms median, pauses of about half a
// second survived): Go's GC and this VM pause a process for milliseconds to tens of
// milliseconds, not hundreds; and a 500 ms lease (480-505 ms medians from run to run).
// Heartbeats every 50 ms rather than 100 cost three idle members and two data nodes about 2%
// of a core more on this VM.
var DefaultConfig = Config{HeartbeatInterval: 50 * time.Millisecond, Lease: 480 * time.Millisecond, FailAfter: 300 * time.Millisecond}

// Health is a node's own report (lavik.meta.v1.Health's values).
type Health int32

// Health values.
const (
	HealthUnspecified Health = 0
	HealthOK          Health = 1
	HealthLoading     Health = 2
	HealthSyncing     Health = 3
	HealthDegraded    Health = 4
)

// Heartbeat is what a data node reports.
type Heartbeat struct {
	NodeID        string
	Role          fsm.Role // the role it acts in
	Epoch         uint64
	ReplicationID string
	Offset        uint64
	Health        Health
	// Writable: the node was taking writes when it read Offset (see HeartbeatRequest.writable).
	Writable bool
	// Incomplete: the node's data is not a complete copy (HeartbeatRequest.data_incomplete);
	// Detail says why (HeartbeatRequest.health_detail).
	Incomplete bool
	Detail     string
}

// Answer is what the leader answers a heartbeat with.
type Answer struct {
	Role  fsm.Role
	Epoch uint64
	// Lease is the lease granted (0: none: stop taking writes).
	Lease time.Duration
	// Primary is the group's primary (nil when none or the node is it).
	Primary  *fsm.Node
	Interval time.Duration
}

// node is the leader's view of one data node.
type node struct {
	hb Heartbeat
	at time.Duration // when the last heartbeat arrived
}

// lease is a grant to a group's primary, as the leader counts it.
type lease struct {
	node  string
	epoch uint64
	until time.Duration
}

// Authority is the leader's state. Not safe for concurrent use: the caller serializes.
type Authority struct {
	cfg   Config
	since time.Duration // when this member became leader: no earlier than raft made it leader
	// confirmed is the start of the newest round in which a quorum confirmed this leader
	// (Confirm); valid when isConfirmed. Grants end by confirmed+Lease.
	confirmed   time.Duration
	isConfirmed bool
	nodes       map[string]*node
	// leases are the grants by group. Invariant: a group's lease names its primary at the
	// epoch it was granted at.
	leases map[string]lease
	// blocked says, for each group that needs a new primary and has no follower fit to be
	// one, why each follower is unfit (for the leader's log; see Blocked).
	blocked map[string]string
	// handover holds the groups whose primary gets no new lease (a switchover in progress),
	// with when the hold began.
	handover map[string]time.Duration
	// replacing are the epochs this leader has decided to move groups on from (a SetPrimary
	// proposed at that expected epoch): a group seen at that epoch or an older one gets no
	// lease and no new decision. Entries stay for the Authority's life unless the proposal
	// was refused (ReplaceRefused): a proposal whose fate is unknown may still commit.
	replacing map[string]uint64
}

// New returns the authority of a member that became leader at now.
func New(cfg Config, now time.Duration) *Authority {
	return &Authority{cfg: cfg, since: now, nodes: map[string]*node{}, leases: map[string]lease{}, handover: map[string]time.Duration{},
		blocked: map[string]string{}, replacing: map[string]uint64{}}
}

// Confirm records that a quorum confirmed this leader in a round started at start (on the
// clock the Authority is given; see raftnode.Confirmation). Only a round of the term this
// Authority leads in may be given. An older start than one already given changes nothing.
func (a *Authority) Confirm(start time.Duration) {
	if !a.isConfirmed || start > a.confirmed {
		a.confirmed, a.isConfirmed = start, true
	}
}

// Confirmed returns the start of the newest confirmed round, and false when there is none.
func (a *Authority) Confirmed() (time.Duration, bool) { return a.confirmed, a.isConfirmed }

// grant is the lease a heartbeat received at now may get: a full lease, cut to end where the
// newest confirmation stops backing it; 0 when that leaves less than a heartbeat interval (the
// leader has gone most of a lease unconfirmed, and is likely cut off: the primary had better
// stop now than write on what is left).
func (a *Authority) grant(now time.Duration) time.Duration {
	if !a.isConfirmed {
		return 0
	}
	d := min(a.cfg.Lease, a.confirmed+a.cfg.Lease-now)
	if d < a.cfg.HeartbeatInterval {
		return 0
	}
	return d
}

// Replacing records that this leader proposes to move group on from epoch (a SetPrimary
// expecting it): from now on the primary at that epoch gets no lease from this leader, and
// Tick decides nothing more for it at that epoch. Tick records its own decisions.
func (a *Authority) Replacing(group string, epoch uint64) {
	a.replacing[group] = max(a.replacing[group], epoch)
}

// ReplaceRefused undoes Replacing(group, epoch) when that proposal was refused (committed and
// rejected by the state machine, or never appended to the log): the group at epoch may be
// leased and decided for again. A proposal whose fate is unknown must not be undone.
func (a *Authority) ReplaceRefused(group string, epoch uint64) {
	if a.replacing[group] == epoch {
		delete(a.replacing, group)
	}
}

// leaving reports whether this leader has decided to move g on from its current epoch.
func (a *Authority) leaving(g fsm.GroupView) bool {
	e, ok := a.replacing[g.ID]
	return ok && g.Epoch <= e
}

// Config is the authority's configuration.
func (a *Authority) Config() Config { return a.cfg }

// Heartbeat records hb, received at now from a node of group g (as the committed topology has
// it), and answers it: its role and epoch, and for the group's primary a lease (see grant)
// unless a handover holds it back or this leader is replacing it. A node reporting a stale
// epoch still gets the current one (it adopts it before acting on the role).
func (a *Authority) Heartbeat(now time.Duration, hb Heartbeat, g fsm.GroupView) Answer {
	a.nodes[hb.NodeID] = &node{hb: hb, at: now}
	ans := Answer{Role: fsm.RoleUnspecified, Epoch: g.Epoch, Interval: a.cfg.HeartbeatInterval}
	_, held := a.handover[g.ID]
	switch {
	case g.Primary == hb.NodeID:
		ans.Role = fsm.RolePrimary
		if held {
			ans.Interval = a.hurry() // its next heartbeat says it stopped: the switchover waits for it
		}
		if held || a.leaving(g) {
			break
		}
		if d := a.grant(now); d > 0 {
			// The record never moves back: a shorter grant after a longer one leaves the
			// longer one running on the node.
			l := a.leases[g.ID]
			a.leases[g.ID] = lease{node: hb.NodeID, epoch: g.Epoch, until: max(l.until, now+d)}
			ans.Lease = d
		}
	default:
		for _, f := range g.Followers {
			if f.ID == hb.NodeID {
				ans.Role = f.Role
			}
		}
		if g.PrimaryNode != nil {
			p := *g.PrimaryNode
			ans.Primary = &p
		}
		if held || a.primarySilent(now, g) {
			ans.Interval = a.hurry()
		}
	}
	return ans
}

// hurry is the heartbeat interval asked of a node whose role may change any moment: a fifth of
// the usual (at least 10 ms). A follower told it is primary only in the answer to its next
// heartbeat takes writes that much sooner after the promotion commits.
func (a *Authority) hurry() time.Duration {
	return max(a.cfg.HeartbeatInterval/5, 10*time.Millisecond)
}

// primarySilent reports whether group g has no primary, or one this leader has not heard from
// for one and a half heartbeat intervals: its followers are asked to hurry, since one of them
// may be promoted.
func (a *Authority) primarySilent(now time.Duration, g fsm.GroupView) bool {
	if g.Primary == "" {
		return true
	}
	last := a.since
	if n := a.nodes[g.Primary]; n != nil {
		last = max(last, n.at)
	}
	return now-last > a.cfg.HeartbeatInterval*3/2
}

// LeaseOver reports whether no lease granted to group g's primary can still be running at now,
// as the leader counts it: the last grant's end has passed, and this leader has led for a full
// lease (an earlier leader's grants are over).
func (a *Authority) LeaseOver(now time.Duration, group string) bool {
	return now >= a.since+a.cfg.Lease && now >= a.leases[group].until
}

// Hold stops (on, at now) or resumes granting leases to group's primary: a switchover holds
// them, waits for Stopped or LeaseOver, then names the new primary.
func (a *Authority) Hold(now time.Duration, group string, on bool) {
	if on {
		a.handover[group] = now
	} else {
		delete(a.handover, group)
	}
}

// Stopped reports whether group's primary, held since a Hold, has said it stopped taking
// writes: a heartbeat that arrived after the hold began reports it not writable, and this
// leader has led for a full lease (no earlier leader's grant can restart it). A node sends
// its heartbeats one at a time, so it sent that one after every answer given before the
// hold; the answers since grant nothing. Its offset is then final: it holds every write the
// primary acknowledged.
func (a *Authority) Stopped(now time.Duration, group, primary string) bool {
	held, ok := a.handover[group]
	n := a.nodes[primary]
	return ok && n != nil && n.at > held && !n.hb.Writable && now >= a.since+a.cfg.Lease
}

// alive reports whether node id heartbeated within FailAfter of now.
func (a *Authority) alive(now time.Duration, id string) bool {
	n := a.nodes[id]
	return n != nil && now-n.at < a.cfg.FailAfter
}

// Last returns the node's last heartbeat and when it came.
func (a *Authority) Last(id string) (Heartbeat, time.Duration, bool) {
	n := a.nodes[id]
	if n == nil {
		return Heartbeat{}, 0, false
	}
	return n.hb, n.at, true
}

// Best is the follower of g to promote at now: alive, healthy, with complete data, in the
// primary's replication history when the leader knows it, with the highest offset (ties: the
// lowest node id); ok false when there is none. A group that has never had a primary (epoch 0:
// its nodes hold no group's data yet) takes any live node, complete or not, since none is.
func (a *Authority) Best(now time.Duration, g fsm.GroupView) (fsm.Node, Heartbeat, bool) {
	history := ""
	if g.Primary != "" {
		if p := a.nodes[g.Primary]; p != nil {
			history = p.hb.ReplicationID
		}
	}
	first := g.Epoch == 0 && g.Primary == ""
	var best fsm.Node
	var bestHB Heartbeat
	found := false
	for _, f := range g.Followers {
		n := a.nodes[f.ID]
		if n == nil || !a.alive(now, f.ID) || history != "" && n.hb.ReplicationID != history {
			continue
		}
		if !first && (n.hb.Health != HealthOK || n.hb.Incomplete) {
			continue
		}
		if !found || n.hb.Offset > bestHB.Offset || n.hb.Offset == bestHB.Offset && f.ID < best.ID {
			best, bestHB, found = f, n.hb, true
		}
	}
	return best, bestHB, found
}

// unfit says why no follower of g is fit to be promoted at now (see Best).
func (a *Authority) unfit(now time.Duration, g fsm.GroupView) string {
	history := ""
	if p := a.nodes[g.Primary]; g.Primary != "" && p != nil {
		history = p.hb.ReplicationID
	}
	var why []string
	for _, f := range g.Followers {
		n := a.nodes[f.ID]
		switch {
		case n == nil:
			why = append(why, f.ID+": no heartbeat since this member leads")
		case !a.alive(now, f.ID):
			why = append(why, fmt.Sprintf("%s: silent (no heartbeat in %v)", f.ID, a.cfg.FailAfter))
		case n.hb.Incomplete:
			why = append(why, fmt.Sprintf("%s: data incomplete (%s)", f.ID, n.hb.Detail))
		case n.hb.Health != HealthOK:
			why = append(why, fmt.Sprintf("%s: health %d (%s)", f.ID, n.hb.Health, n.hb.Detail))
		case history != "" && n.hb.ReplicationID != history:
			why = append(why, fmt.Sprintf("%s: replication id %s, not the primary's %s", f.ID, n.hb.ReplicationID, history))
		}
	}
	if len(why) == 0 {
		return "no followers"
	}
	return strings.Join(why, "; ")
}

// Blocked returns, for each group that needs a new primary but has no fit follower, why each
// follower is unfit, as of the last Tick.
func (a *Authority) Blocked() map[string]string { return a.blocked }

// Due returns the earliest time after now at which Tick may decide for topo what it does not
// decide at now (a lease running out, a primary's silence reaching FailAfter, this leader's
// first lease of leadership ending), and false when no such time is known: a decision may
// still come of a heartbeat (a follower fit again), which the caller's regular ticks catch.
func (a *Authority) Due(now time.Duration, topo fsm.Topology) (time.Duration, bool) {
	var due time.Duration
	found := false
	note := func(t time.Duration) {
		if t > now && (!found || t < due) {
			due, found = t, true
		}
	}
	note(a.since + a.cfg.Lease)
	for _, g := range topo.Groups {
		if _, held := a.handover[g.ID]; held || a.leaving(g) || g.Primary == "" {
			continue
		}
		last := a.since
		if n := a.nodes[g.Primary]; n != nil {
			last = max(last, n.at)
		}
		note(max(last+a.cfg.FailAfter, a.leases[g.ID].until, a.since+a.cfg.Lease))
	}
	return due, found
}

// Tick decides, at now, the promotions the topology needs: a group whose primary has been
// silent for FailAfter and whose lease is over, or a group with no primary, gets its best
// follower as primary (an fsm.SetPrimary to propose at the group's epoch, recorded as
// Replacing). A group in a handover is the switchover's business. Nothing is decided before
// this leader has led for a full lease.
func (a *Authority) Tick(now time.Duration, topo fsm.Topology) []fsm.SetPrimary {
	if now < a.since+a.cfg.Lease {
		return nil
	}
	var out []fsm.SetPrimary
	for _, g := range topo.Groups {
		if _, held := a.handover[g.ID]; held || a.leaving(g) {
			continue
		}
		if g.Primary != "" {
			last := a.since // never heard from since this member leads: silent since then
			if n := a.nodes[g.Primary]; n != nil {
				last = max(last, n.at)
			}
			if now-last < a.cfg.FailAfter || !a.LeaseOver(now, g.ID) {
				delete(a.blocked, g.ID) // it has a primary (or may still)
				continue
			}
		}
		f, _, ok := a.Best(now, g)
		if !ok {
			a.blocked[g.ID] = a.unfit(now, g)
			continue
		}
		delete(a.blocked, g.ID)
		out = append(out, fsm.SetPrimary{ShardGroup: g.ID, NodeID: f.ID, ExpectedEpoch: g.Epoch})
	}
	for _, d := range out {
		a.Replacing(d.ShardGroup, d.ExpectedEpoch)
	}
	slices.SortFunc(out, func(x, y fsm.SetPrimary) int {
		switch {
		case x.ShardGroup < y.ShardGroup:
			return -1
		case x.ShardGroup > y.ShardGroup:
			return 1
		}
		return 0
	})
	return out
}
