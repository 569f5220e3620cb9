// Package failover is the meta leader's authority over data nodes: who is alive, which primary
// holds a lease, and when a group's primary must be replaced and by whom.
//
// It is deterministic and holds no clock: every call is given the time (the leader's monotonic
// clock, as a duration since some origin), so tests drive it step by step. Nothing here is
// replicated: heartbeats, liveness and leases live only in the current leader's memory, and a
// new leader starts with none, which is why it waits out a full lease before it promotes
// anyone (Authority.New's since): a lease granted by the old leader has ended by then, as the
// old leader counted it and, with the node's margin, as the node counts it too. The decisions
// themselves (a new primary at a new epoch) are fsm commands the leader proposes to raft;
// only a committed SetPrimary changes who is primary.
//
// Fencing. A primary's lease runs, as the leader counts it, from the leader's receipt of the
// heartbeat it answers for Config.Lease; the node counts it from when it sent that heartbeat,
// which is earlier, less a drift margin (repl.LeaseDriftMargin), so it stops taking writes
// before the leader considers the lease over. The leader names another primary only after
// that: two primaries never take writes at the same time.
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
	// HeartbeatInterval is how often data nodes heartbeat. Too long: failures are seen late and
	// leases must be long; too short: load on the leader.
	HeartbeatInterval time.Duration
	// Lease is how long a primary may take writes after a heartbeat is answered. The failover
	// time is about Lease plus a heartbeat: too long makes failover slow; too short lets a
	// pause of the primary (GC, a slow disk, a stalled network) cost it its lease and the
	// group a failover. At least 3 heartbeat intervals.
	Lease time.Duration
	// FailAfter is how long a primary may miss heartbeats before it is replaced (once its
	// lease has also run out). Below Lease it changes nothing: the lease decides.
	FailAfter time.Duration
}

// DefaultConfig: a failover in about 0.7 s (a 600 ms lease and a 100 ms heartbeat), and a
// primary paused for less than about half a second keeps its role.
var DefaultConfig = Config{HeartbeatInterval: 100 * time.Millisecond, Lease: 600 * time.Millisecond, FailAfter: 300 * time.Millisecond}

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
	since time.Duration // when this member became leader
	nodes map[string]*node
	// leases are the grants by group. Invariant: a group's lease names its primary at the
	// epoch it was granted at.
	leases map[string]lease
	// blocked says, for each group that needs a new primary and has no follower fit to be
	// one, why each follower is unfit (for the leader's log; see Blocked).
	blocked map[string]string
	// handover holds the groups whose primary gets no new lease (a switchover in progress),
	// with when the hold began.
	handover map[string]time.Duration
}

// New returns the authority of a member that became leader at now.
func New(cfg Config, now time.Duration) *Authority {
	return &Authority{cfg: cfg, since: now, nodes: map[string]*node{}, leases: map[string]lease{}, handover: map[string]time.Duration{}, blocked: map[string]string{}}
}

// Config is the authority's configuration.
func (a *Authority) Config() Config { return a.cfg }

// Heartbeat records hb, received at now from a node of group g (as the committed topology has
// it), and answers it: its role and epoch, and for the group's primary a lease unless a
// handover holds it back. A node reporting a stale epoch still gets the current one (it adopts
// it before acting on the role).
func (a *Authority) Heartbeat(now time.Duration, hb Heartbeat, g fsm.GroupView) Answer {
	a.nodes[hb.NodeID] = &node{hb: hb, at: now}
	ans := Answer{Role: fsm.RoleUnspecified, Epoch: g.Epoch, Interval: a.cfg.HeartbeatInterval}
	switch {
	case g.Primary == hb.NodeID:
		ans.Role = fsm.RolePrimary
		if _, held := a.handover[g.ID]; !held {
			a.leases[g.ID] = lease{node: hb.NodeID, epoch: g.Epoch, until: now + a.cfg.Lease}
			ans.Lease = a.cfg.Lease
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
	}
	return ans
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

// Tick decides, at now, the promotions the topology needs: a group whose primary has been
// silent for FailAfter and whose lease is over, or a group with no primary, gets its best
// follower as primary (an fsm.SetPrimary to propose at the group's epoch). A group in a
// handover is the switchover's business. Nothing is decided before this leader has led for a
// full lease.
func (a *Authority) Tick(now time.Duration, topo fsm.Topology) []fsm.SetPrimary {
	if now < a.since+a.cfg.Lease {
		return nil
	}
	var out []fsm.SetPrimary
	for _, g := range topo.Groups {
		if _, held := a.handover[g.ID]; held {
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
