package raftnode

import (
	"context"
	"testing"
	"time"
)

// TestConfirmLeadership: a leader's confirmations come from rounds a quorum answered. With one
// follower cut off the other still makes a quorum and the proofs go on; with both cut off no
// round started after the cut is ever confirmed, while the other two elect a leader of a later
// term, which confirms its own. A member never reports a confirmation of a term it did not
// lead.
func TestConfirmLeadership(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	c.confirmGap = 5 * time.Millisecond
	c.startAll()
	c.propose("x")
	lead := c.leader()
	term := c.nodes[lead].Status().Term
	var fs []uint64
	for _, id := range c.peers {
		if id != lead {
			fs = append(fs, id)
		}
	}
	// advances waits for a confirmation of member id at term that started after after.
	advances := func(id, term uint64, after time.Time) Confirmation {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := c.nodes[id].Confirm(ctx, term, after)
		if err != nil || got.Term != term || got.Start.Before(after) {
			t.Fatalf("member %d: confirmation %+v (%v), want one at term %d started after %v", id, got, err, term, after)
		}
		return got
	}
	advances(lead, term, time.Now())
	for _, f := range fs {
		if got := c.nodes[f].Confirmed(); got.Term != 0 {
			t.Fatalf("follower %d reports a confirmation %+v", f, got)
		}
	}

	// One follower cut off: the leader and the other are a quorum.
	c.net.setCut(lead, fs[0], true)
	c.net.setCut(fs[0], lead, true)
	advances(lead, term, time.Now())

	// Both cut off: no round started after this is confirmed.
	c.net.setCut(lead, fs[1], true)
	c.net.setCut(fs[1], lead, true)
	cut := time.Now()
	var next uint64
	waitFor(t, 10*time.Second, "a leader among the two left", func() bool {
		for _, f := range fs {
			if st := c.nodes[f].Status(); st.Leader == f && st.Term > term {
				next = f
				return true
			}
		}
		return false
	})
	later := advances(next, c.nodes[next].Status().Term, time.Now())
	if got := c.nodes[lead].Confirmed(); got.Term != term || got.Start.After(cut) {
		t.Fatalf("the cut-off leader reports %+v, started after the cut at %v", got, cut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if got, err := c.nodes[lead].Confirm(ctx, term, cut); err == nil {
		t.Fatalf("the cut-off leader confirmed a round started after the cut: %+v", got)
	}
	if !later.Start.After(cut) {
		t.Fatalf("the new leader's confirmation %+v started before the cut", later)
	}
}
