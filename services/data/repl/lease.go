package repl

import (
	"sync/atomic"
	"time"
)

// Leases: the fence that keeps two primaries from taking writes at once.
//
// Under lavik-meta a primary takes writes only while it holds a lease: meta grants one in each
// heartbeat's answer, for a duration counted on the node's monotonic clock from the moment the
// node SENT that heartbeat (meta counts it from when it received it, which is later, so the
// node's lease always ends first). The node shortens it by a clock-drift margin
// (LeaseDriftMargin: the two clocks may run at different rates over the lease) and refuses
// writes from that instant on, at dispatch and again before it acknowledges a write whose
// group commit was still in flight (the server checks Writable after its durability wait): a
// write acknowledged by an old primary always happened inside its lease, before meta could let
// another node take writes. A node without meta (standalone, or a plain REPLICAOF pair) needs no
// lease.

// LeaseDriftMargin is how much of a lease a primary gives up for clock drift between it and
// meta: 2% of the lease plus 10 ms (quartz drifts by parts per million; the margin covers
// misbehaving clocks and scheduling delay between the clock read and the check, with room).
func LeaseDriftMargin(d time.Duration) time.Duration { return d/50 + 10*time.Millisecond }

// lease is a node's write lease. Times are monotonic nanoseconds since base.
type lease struct {
	base     time.Time
	now      func() time.Duration // the monotonic clock (tests inject one)
	required atomic.Bool
	until    atomic.Int64
	epoch    atomic.Uint64
}

func newLease() *lease {
	l := &lease{base: time.Now()}
	l.now = func() time.Duration { return time.Since(l.base) }
	return l
}

// valid reports whether writes are allowed now by the lease.
func (l *lease) valid() bool {
	return !l.required.Load() || int64(l.now()) < l.until.Load()
}

// grant extends the lease to sent + d - margin (sent: when the heartbeat was sent, from
// SentAt), at epoch; an older epoch's grant is ignored, and a lease never shrinks by a
// grant (revoke ends it).
func (l *lease) grant(sent time.Duration, d time.Duration, epoch uint64) {
	if epoch < l.epoch.Load() {
		return
	}
	l.epoch.Store(epoch)
	until := int64(sent + d - LeaseDriftMargin(d))
	for {
		cur := l.until.Load()
		if until <= cur || l.until.CompareAndSwap(cur, until) {
			return
		}
	}
}

// RequireLease turns leases on (a node under meta) or off (standalone). On, with no lease
// granted yet, the node takes no writes.
func (n *Node) RequireLease(on bool) {
	n.lease.required.Store(on)
}

// LeaseClock is the clock a heartbeat's send time is read from (for GrantLease).
func (n *Node) LeaseClock() time.Duration { return n.lease.now() }

// GrantLease gives the node the lease meta granted in the answer to a heartbeat sent at sent
// (LeaseClock when it was sent) for d, at epoch.
func (n *Node) GrantLease(sent, d time.Duration, epoch uint64) { n.lease.grant(sent, d, epoch) }

// RevokeLease ends the lease now (meta hands over, or the node lost touch with meta).
func (n *Node) RevokeLease() { n.lease.until.Store(0) }

// Writable implements commands.Replication: a primary (not following anyone) whose lease, if
// it needs one, has not run out.
func (n *Node) Writable() bool {
	return !n.following.Load() && n.lease.valid()
}
