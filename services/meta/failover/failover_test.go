package failover

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/services/data/repl"
	"github.com/lavikdb/lavik/services/meta/fsm"
)

const ms = time.Millisecond

// group returns shard group "g" at epoch with primary p and followers fs (the topology as the
// fsm would report it).
func group(epoch uint64, p string, fs ...string) fsm.GroupView {
	g := fsm.GroupView{Group: fsm.Group{ID: "g", Epoch: epoch, Primary: p}}
	if p != "" {
		g.PrimaryNode = &fsm.Node{ID: p, Group: "g", DataAddress: p + ":6379", Role: fsm.RolePrimary}
	}
	for _, f := range fs {
		g.Followers = append(g.Followers, fsm.Node{ID: f, Group: "g", DataAddress: f + ":6379", Role: fsm.RoleFollower})
	}
	return g
}

func topo(gs ...fsm.GroupView) fsm.Topology { return fsm.Topology{Version: 1, Groups: gs} }

func hb(id string, off uint64) Heartbeat {
	return Heartbeat{NodeID: id, Epoch: 1, ReplicationID: "r1", Offset: off, Health: HealthOK}
}

// TestFailoverAfterLease: a primary that stops heartbeating is replaced by its follower once
// FailAfter has passed and its lease is over as the leader counts it, not before; the promotion
// names the follower at the group's epoch with its position.
func TestFailoverAfterLease(t *testing.T) {
	cfg := DefaultConfig
	a := New(cfg, 0)
	g := group(1, "a", "b")
	var now time.Duration
	var lastGrant time.Duration
	for now = 0; now < 2*time.Second; now += cfg.HeartbeatInterval {
		a.Confirm(now) // the leader's proof of leadership is current
		if ans := a.Heartbeat(now, hb("a", 100), g); ans.Lease != cfg.Lease || ans.Role != fsm.RolePrimary {
			t.Fatalf("primary's answer %+v", ans)
		}
		lastGrant = now
		if ans := a.Heartbeat(now, hb("b", 90), g); ans.Lease != 0 || ans.Role != fsm.RoleFollower || ans.Primary.ID != "a" {
			t.Fatalf("follower's answer %+v", ans)
		}
		if d := a.Tick(now, topo(g)); len(d) != 0 {
			t.Fatalf("at %v a healthy primary was replaced: %+v", now, d)
		}
	}
	// a dies; b keeps heartbeating.
	for ; ; now += 10 * ms {
		a.Confirm(now)
		a.Heartbeat(now, hb("b", 100), g)
		d := a.Tick(now, topo(g))
		if len(d) == 0 {
			continue
		}
		if now < lastGrant+cfg.Lease {
			t.Fatalf("promoted at %v while a's lease ran until %v", now, lastGrant+cfg.Lease)
		}
		want := fsm.SetPrimary{ShardGroup: "g", NodeID: "b", ExpectedEpoch: 1}
		if len(d) != 1 || d[0] != want {
			t.Fatalf("decision %+v, want %+v", d, want)
		}
		if now-lastGrant > cfg.Lease+20*ms {
			t.Fatalf("promoted only %v after the last grant", now-lastGrant)
		}
		return
	}
}

// TestNewLeaderWaitsOutALease: a leader elected just now promotes nobody before it has led for
// a full lease, even for a primary it never heard from.
func TestNewLeaderWaitsOutALease(t *testing.T) {
	cfg := DefaultConfig
	start := 10 * time.Second
	a := New(cfg, start)
	g := group(3, "a", "b")
	for now := start; now < start+cfg.Lease; now += 10 * ms {
		a.Heartbeat(now, hb("b", 5), g)
		if d := a.Tick(now, topo(g)); len(d) != 0 {
			t.Fatalf("a new leader promoted at %v, %v after it was elected", now, now-start)
		}
	}
	now := start + cfg.Lease
	a.Heartbeat(now, hb("b", 5), g)
	if d := a.Tick(now, topo(g)); len(d) != 1 || d[0].NodeID != "b" {
		t.Fatalf("after a lease of leadership: %+v, want b promoted", d)
	}
}

// TestPausesShorterThanTheLeaseCauseNoFailover: 100 pauses of the primary, each shorter than
// the lease less a heartbeat, never replace it.
func TestPausesShorterThanTheLeaseCauseNoFailover(t *testing.T) {
	cfg := DefaultConfig
	a := New(cfg, 0)
	g := group(1, "a", "b")
	rng := rand.New(rand.NewPCG(1, 2))
	var now time.Duration
	for range 100 {
		for range 5 {
			a.Confirm(now)
			a.Heartbeat(now, hb("a", 1), g)
			a.Heartbeat(now, hb("b", 1), g)
			if d := a.Tick(now, topo(g)); len(d) != 0 {
				t.Fatalf("failover at %v: %+v", now, d)
			}
			now += cfg.HeartbeatInterval
		}
		pause := time.Duration(rng.Int64N(int64(cfg.Lease - cfg.HeartbeatInterval)))
		for end := now + pause; now < end; now += 10 * ms {
			a.Confirm(now)
			a.Heartbeat(now, hb("b", 1), g)
			if d := a.Tick(now, topo(g)); len(d) != 0 {
				t.Fatalf("a pause of %v caused a failover: %+v", pause, d)
			}
		}
	}
}

// TestBestFollower: the follower promoted is alive, healthy, in the primary's history, with the
// highest offset; ties go to the lowest id; with none fit, nobody is promoted.
func TestBestFollower(t *testing.T) {
	cfg := DefaultConfig
	a := New(cfg, 0)
	g := group(4, "p", "b", "c", "d", "e", "f")
	now := time.Second
	a.Heartbeat(0, Heartbeat{NodeID: "p", ReplicationID: "r1", Offset: 500, Health: HealthOK}, g)
	a.Heartbeat(now, Heartbeat{NodeID: "b", ReplicationID: "r1", Offset: 400, Health: HealthOK}, g)
	a.Heartbeat(now, Heartbeat{NodeID: "c", ReplicationID: "r1", Offset: 450, Health: HealthOK}, g)
	a.Heartbeat(now, Heartbeat{NodeID: "d", ReplicationID: "r1", Offset: 499, Health: HealthSyncing}, g)
	a.Heartbeat(now, Heartbeat{NodeID: "e", ReplicationID: "r0", Offset: 900, Health: HealthOK}, g)
	a.Heartbeat(0, Heartbeat{NodeID: "f", ReplicationID: "r1", Offset: 499, Health: HealthOK}, g) // silent since
	d := a.Tick(now, topo(g))
	if len(d) != 1 || d[0].NodeID != "c" || d[0].ExpectedEpoch != 4 {
		t.Fatalf("decision %+v, want c at epoch 4", d)
	}
	a.Heartbeat(now, Heartbeat{NodeID: "b", ReplicationID: "r1", Offset: 450, Health: HealthOK}, g)
	a.ReplaceRefused("g", 4) // say the first decision was refused: the group is decided again
	if d := a.Tick(now, topo(g)); d[0].NodeID != "b" {
		t.Fatalf("a tie went to %s, want b (the lower id)", d[0].NodeID)
	}
	a.ReplaceRefused("g", 4)
	h := group(4, "p", "d", "e")
	if d := a.Tick(now, topo(h)); len(d) != 0 {
		t.Fatalf("promoted %+v though no follower is fit", d)
	}
	// A group with no primary (fenced, or new) gets one as soon as a fit node heartbeats.
	n := group(7, "", "b", "c")
	if d := a.Tick(now, topo(n)); len(d) != 1 || d[0].NodeID != "b" || d[0].ExpectedEpoch != 7 { // b and c tie at 450
		t.Fatalf("a group without primary: %+v", d)
	}
}

// TestHandover: a held group's primary gets no lease; the leader knows when its last one is
// over; Tick leaves the group to the switchover; released, leases resume.
func TestHandover(t *testing.T) {
	cfg := DefaultConfig
	a := New(cfg, 0)
	g := group(2, "a", "b")
	now := time.Second
	a.Confirm(now)
	a.Heartbeat(now, hb("a", 10), g)
	a.Hold(now, "g", true)
	writing := hb("a", 10)
	writing.Writable = true
	if ans := a.Heartbeat(now+cfg.HeartbeatInterval, writing, g); ans.Lease != 0 || ans.Role != fsm.RolePrimary {
		t.Fatalf("held primary's answer %+v, want no lease", ans)
	}
	// That heartbeat said the primary was still writable: not stopped yet. The next one, sent
	// after the answer without a lease, says it is not.
	if a.Stopped(now+cfg.HeartbeatInterval, "g", "a") {
		t.Fatal("Stopped on a heartbeat that reports the primary writable")
	}
	stopped := hb("a", 12)
	stopped.Writable = false
	a.Heartbeat(now+2*cfg.HeartbeatInterval, stopped, g)
	if !a.Stopped(now+2*cfg.HeartbeatInterval, "g", "a") {
		t.Fatal("not Stopped after the primary reported it takes no writes")
	}
	// A leader that has not led for a full lease cannot trust it: an earlier leader's grant
	// may still restart the primary's writes.
	b := New(cfg, now)
	b.Hold(now, "g", true)
	b.Heartbeat(now+cfg.HeartbeatInterval, stopped, g)
	if b.Stopped(now+cfg.HeartbeatInterval, "g", "a") || !b.Stopped(now+cfg.Lease, "g", "a") {
		t.Fatal("Stopped before the new leader has led for a full lease, or not after")
	}
	// A heartbeat from before the hold says nothing about it.
	c := New(cfg, 0)
	c.Heartbeat(now, stopped, g)
	c.Hold(now, "g", true)
	if c.Stopped(now+cfg.Lease, "g", "a") {
		t.Fatal("Stopped on a heartbeat that arrived before the hold")
	}
	if a.LeaseOver(now+cfg.Lease-ms, "g") || !a.LeaseOver(now+cfg.Lease, "g") {
		t.Fatal("LeaseOver wrong around the last grant's end")
	}
	a.Heartbeat(now+2*cfg.Lease, hb("b", 10), g)
	if d := a.Tick(now+2*cfg.Lease, topo(g)); len(d) != 0 {
		t.Fatalf("Tick decided for a held group: %+v", d)
	}
	a.Hold(now+2*cfg.Lease, "g", false)
	a.Confirm(now + 2*cfg.Lease)
	if ans := a.Heartbeat(now+2*cfg.Lease, hb("a", 10), g); ans.Lease != cfg.Lease {
		t.Fatalf("released primary's answer %+v", ans)
	}
}

// TestNoOverlappingPrimaries: under random heartbeat delays, losses and pauses, every promotion
// the leader decides comes after the old primary's lease has ended as the primary itself
// counts it: from when it sent the heartbeat (before the leader got it), less its drift margin.
func TestNoOverlappingPrimaries(t *testing.T) {
	cfg := DefaultConfig
	promotions := 0
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 9))
		a := New(cfg, 0)
		g := group(1, "a", "b")
		var nodeLeaseEnd time.Duration // the primary's own view of its lease
		var now time.Duration
		for step := 0; step < 400; step++ {
			now += 10 * ms
			// The newest proof of leadership started up to 30 ms ago.
			a.Confirm(now - time.Duration(rng.Int64N(int64(30*ms))))
			if step%10 == 0 && rng.IntN(10) > 0 { // the primary heartbeats unless this one is lost
				sent := now - time.Duration(rng.Int64N(int64(50*ms))) // it was sent up to 50 ms earlier
				if ans := a.Heartbeat(now, hb(g.Primary, 1), g); ans.Lease > 0 {
					nodeLeaseEnd = max(nodeLeaseEnd, sent+ans.Lease-repl.LeaseDriftMargin(ans.Lease))
				}
			}
			for _, f := range g.Followers {
				a.Heartbeat(now, hb(f.ID, 1), g)
			}
			if rng.IntN(50) == 0 { // the primary stalls for up to two leases
				now += time.Duration(rng.Int64N(int64(2 * cfg.Lease)))
			}
			for _, d := range a.Tick(now, topo(g)) {
				if now < nodeLeaseEnd {
					t.Fatalf("seed %d: %s promoted at %v while %s may write until %v", seed, d.NodeID, now, g.Primary, nodeLeaseEnd)
				}
				old := g.Primary
				g = group(g.Epoch+1, d.NodeID, old)
				nodeLeaseEnd = 0
				promotions++
			}
		}
	}
	if promotions < 20 {
		t.Fatalf("only %d promotions in 50 runs: the schedule does not exercise failover", promotions)
	}
}

// TestIncompleteNeverPromoted: a follower whose data is incomplete (a full resync emptied it and
// did not finish) is never promoted, however far its offset, even when it is the only follower
// left: the group stays without a primary, and Blocked says why. Only a group that has never had
// a primary (epoch 0, nobody holds its data yet) takes such a node as its first.
func TestIncompleteNeverPromoted(t *testing.T) {
	cfg := DefaultConfig
	a := New(cfg, 0)
	now := time.Second
	g := group(3, "p", "b", "c")
	a.Heartbeat(0, hb("p", 500), g) // then silent
	inc := Heartbeat{NodeID: "b", Epoch: 3, ReplicationID: "r1", Offset: 900, Health: HealthSyncing, Incomplete: true,
		Detail: "data incomplete: full resync from p:6379 not finished"}
	a.Heartbeat(now, inc, g)
	a.Heartbeat(now, hb("c", 400), g)
	if d := a.Tick(now, topo(g)); len(d) != 1 || d[0].NodeID != "c" {
		t.Fatalf("decision %+v, want c (b's data is incomplete)", d)
	}
	// The same with b alone (another leader: this one is replacing p by c now): nobody, and
	// the reason names b's state.
	a = New(cfg, 0)
	lone := group(3, "p", "b")
	a.Heartbeat(0, hb("p", 500), lone)
	a.Heartbeat(now, inc, lone)
	if d := a.Tick(now, topo(lone)); len(d) != 0 {
		t.Fatalf("promoted %+v: b's data is incomplete", d)
	}
	if why := a.Blocked()["g"]; !strings.Contains(why, "b: data incomplete") || !strings.Contains(why, "resync from p:6379") {
		t.Fatalf("Blocked: %q", why)
	}
	// Reported healthy but incomplete (a node that has never finished a resync) counts as
	// incomplete too.
	a.Heartbeat(now, Heartbeat{NodeID: "b", Epoch: 3, ReplicationID: "r1", Offset: 900, Health: HealthOK, Incomplete: true}, lone)
	if d := a.Tick(now, topo(lone)); len(d) != 0 {
		t.Fatalf("promoted %+v: b's data is incomplete", d)
	}
	// A new group: its nodes are all incomplete (new data directories), and one becomes its
	// first primary.
	fresh := group(0, "", "b")
	if d := a.Tick(now, topo(fresh)); len(d) != 1 || d[0].NodeID != "b" || d[0].ExpectedEpoch != 0 {
		t.Fatalf("a new group's first primary: %+v", d)
	}
}

// TestGrantsEndWithTheirProof: a leader grants nothing before a quorum has confirmed it; a
// grant ends no later than the newest confirmation's start plus a lease, and the leader's
// record of it (LeaseOver) ends there too; what is left under a heartbeat interval is not
// granted; an older confirmation changes nothing.
func TestGrantsEndWithTheirProof(t *testing.T) {
	cfg := DefaultConfig
	a := New(cfg, 0)
	g := group(1, "a", "b")
	if ans := a.Heartbeat(50*ms, hb("a", 1), g); ans.Lease != 0 || ans.Role != fsm.RolePrimary {
		t.Fatalf("answer before any confirmation %+v, want the role and no lease", ans)
	}
	a.Confirm(100 * ms)
	if ans := a.Heartbeat(100*ms, hb("a", 1), g); ans.Lease != cfg.Lease {
		t.Fatalf("answer at the confirmation's start: lease %v, want %v", ans.Lease, cfg.Lease)
	}
	if ans := a.Heartbeat(300*ms, hb("a", 1), g); ans.Lease != 100*ms+cfg.Lease-300*ms {
		t.Fatalf("200 ms after the newest confirmation: lease %v, want %v", ans.Lease, cfg.Lease-200*ms)
	}
	end := 100*ms + cfg.Lease
	if a.LeaseOver(end-ms, "g") || !a.LeaseOver(end, "g") {
		t.Fatalf("LeaseOver wrong around %v, where the proof stops backing the grants", end)
	}
	if ans := a.Heartbeat(end-cfg.HeartbeatInterval+ms, hb("a", 1), g); ans.Lease != 0 {
		t.Fatalf("%v left of the proof was granted as %v", cfg.HeartbeatInterval-ms, ans.Lease)
	}
	a.Confirm(50 * ms)
	if c, ok := a.Confirmed(); !ok || c != 100*ms {
		t.Fatalf("an older confirmation replaced the newer: %v", c)
	}
	if !a.LeaseOver(end, "g") {
		t.Fatal("a refused grant moved the lease's end")
	}

	// Random confirmations and heartbeats: no grant ends past its proof, and the leader's
	// record is the furthest end granted.
	rng := rand.New(rand.NewPCG(7, 7))
	b := New(cfg, 0)
	var now, conf, furthest time.Duration
	confirmed := false
	for range 5000 {
		now += time.Duration(rng.Int64N(int64(40 * ms)))
		if rng.IntN(3) > 0 {
			conf = now - time.Duration(rng.Int64N(int64(cfg.Lease)))
			b.Confirm(conf)
			conf, confirmed = b.Confirmed()
		}
		ans := b.Heartbeat(now, hb("a", 1), g)
		switch {
		case ans.Lease > 0 && (!confirmed || now+ans.Lease > conf+cfg.Lease):
			t.Fatalf("at %v granted %v, past the proof of %v", now, ans.Lease, conf)
		case ans.Lease > 0:
			furthest = max(furthest, now+ans.Lease)
		}
		if furthest > 0 && (b.LeaseOver(furthest-1, "g") || !b.LeaseOver(max(furthest, cfg.Lease), "g")) {
			t.Fatalf("at %v the leader's record does not end at the furthest grant, %v", now, furthest)
		}
	}
}

// TestNoLeaseWhileReplacing: once the leader has decided to replace a primary, that primary
// gets no lease from it, though the SetPrimary is not applied yet (a heartbeat arriving
// between the decision and the commit would otherwise restart its writes just before the new
// primary's begin), and nothing more is decided for the group at that epoch. A refused
// proposal lifts that; the new primary at the next epoch is leased as usual.
func TestNoLeaseWhileReplacing(t *testing.T) {
	cfg := DefaultConfig
	a := New(cfg, 0)
	g := group(1, "a", "b")
	var now time.Duration
	for ; now < time.Second; now += cfg.HeartbeatInterval {
		a.Confirm(now)
		a.Heartbeat(now, hb("a", 5), g)
		a.Heartbeat(now, hb("b", 5), g)
	}
	last := now - cfg.HeartbeatInterval
	var d []fsm.SetPrimary
	for ; len(d) == 0; now += 10 * ms {
		a.Confirm(now)
		a.Heartbeat(now, hb("b", 5), g)
		d = a.Tick(now, topo(g))
	}
	if now < last+cfg.Lease || d[0].NodeID != "b" {
		t.Fatalf("decision %+v at %v, last grant at %v", d, now, last)
	}
	// The primary was only paused: its heartbeat arrives before the promotion commits.
	if ans := a.Heartbeat(now, hb("a", 5), g); ans.Lease != 0 || ans.Role != fsm.RolePrimary {
		t.Fatalf("the primary being replaced got %+v", ans)
	}
	if again := a.Tick(now+10*ms, topo(g)); len(again) != 0 {
		t.Fatalf("decided again for an epoch being left: %+v", again)
	}
	// The promotion commits: the group is at epoch 2 with b primary.
	g2 := group(2, "b", "a")
	a.Confirm(now + 20*ms)
	if ans := a.Heartbeat(now+20*ms, hb("b", 5), g2); ans.Lease != cfg.Lease {
		t.Fatalf("the new primary's answer %+v", ans)
	}
	// A switchover from b is proposed, then refused: b is leased again.
	a.Replacing("g", 2)
	if ans := a.Heartbeat(now+30*ms, hb("b", 5), g2); ans.Lease != 0 {
		t.Fatalf("a primary being switched away from got %+v", ans)
	}
	a.ReplaceRefused("g", 2)
	a.Confirm(now + 40*ms)
	if ans := a.Heartbeat(now+40*ms, hb("b", 5), g2); ans.Lease != cfg.Lease {
		t.Fatalf("after the refusal: %+v", ans)
	}
}

// TestHurry: followers are asked to heartbeat faster while their primary is silent (so that
// the one promoted hears of it soon after the commit), and both sides while a switchover
// holds the group; otherwise every node heartbeats at the usual interval.
func TestHurry(t *testing.T) {
	cfg := DefaultConfig
	hurry := max(cfg.HeartbeatInterval/5, 10*ms)
	a := New(cfg, 0)
	g := group(1, "a", "b")
	now := time.Second
	a.Confirm(now)
	if ans := a.Heartbeat(now, hb("a", 1), g); ans.Interval != cfg.HeartbeatInterval {
		t.Fatalf("primary's interval %v", ans.Interval)
	}
	if ans := a.Heartbeat(now+cfg.HeartbeatInterval, hb("b", 1), g); ans.Interval != cfg.HeartbeatInterval {
		t.Fatalf("follower's interval with its primary heard a heartbeat ago: %v", ans.Interval)
	}
	if ans := a.Heartbeat(now+2*cfg.HeartbeatInterval, hb("b", 1), g); ans.Interval != hurry {
		t.Fatalf("follower's interval with its primary silent for two heartbeats: %v, want %v", ans.Interval, hurry)
	}
	if ans := a.Heartbeat(now, hb("b", 1), group(1, "", "b")); ans.Interval != hurry {
		t.Fatalf("interval of a node in a group without a primary: %v, want %v", ans.Interval, hurry)
	}
	now += 2 * cfg.HeartbeatInterval
	a.Heartbeat(now, hb("a", 1), g)
	a.Hold(now, "g", true)
	if ans := a.Heartbeat(now, hb("a", 1), g); ans.Interval != hurry {
		t.Fatalf("held primary's interval %v, want %v", ans.Interval, hurry)
	}
	if ans := a.Heartbeat(now, hb("b", 1), g); ans.Interval != hurry {
		t.Fatalf("follower's interval in a switchover %v, want %v", ans.Interval, hurry)
	}
}

// TestDue: the leader knows when its next decision may fall due, and Tick decides then, not
// later: at the end of its first lease of leadership, then when the silent primary's lease
// ends.
func TestDue(t *testing.T) {
	cfg := DefaultConfig
	a := New(cfg, time.Second)
	g := group(1, "a", "b")
	now := time.Second
	if due, ok := a.Due(now, topo(g)); !ok || due != now+cfg.Lease {
		t.Fatalf("a new leader's first due time %v (%v), want %v", due, ok, now+cfg.Lease)
	}
	now += cfg.Lease
	a.Confirm(now)
	a.Heartbeat(now, hb("a", 1), g)
	a.Heartbeat(now, hb("b", 1), g)
	due, ok := a.Due(now, topo(g))
	if !ok || due != now+cfg.Lease {
		t.Fatalf("due %v (%v) after a grant at %v, want the lease's end %v", due, ok, now, now+cfg.Lease)
	}
	a.Heartbeat(due-ms, hb("b", 1), g)
	if d := a.Tick(due-ms, topo(g)); len(d) != 0 {
		t.Fatalf("decided before the due time: %+v", d)
	}
	if d := a.Tick(due, topo(g)); len(d) != 1 || d[0].NodeID != "b" {
		t.Fatalf("at the due time: %+v, want b promoted", d)
	}
	if due, ok := a.Due(due, topo(g)); ok {
		t.Fatalf("a due time %v for a group being replaced", due)
	}
}
