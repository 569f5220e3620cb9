package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	commonv1 "github.com/lavikdb/lavik/proto/lavik/common/v1"
	datav1 "github.com/lavikdb/lavik/proto/lavik/data/v1"
)

func follower(state datav1.LinkState, primary string, off, primaryOff, syncBytes uint64) *datav1.StatusResponse {
	return &datav1.StatusResponse{Role: commonv1.Role_ROLE_FOLLOWER, ReplicationId: "r1", ReplicationOffset: off,
		PrimaryLink: &datav1.PrimaryLink{PrimaryAddress: primary, State: state, PrimaryOffset: primaryOff, FullSyncBytesReceived: syncBytes}}
}

// TestRebuildWatch: the link that was ONLINE before the call does not count as rebuilt; done
// is the first ONLINE at the primary's offset after the link was seen down.
func TestRebuildWatch(t *testing.T) {
	const p = "10.0.0.1:6379"
	on, hs, fs := datav1.LinkState_LINK_STATE_ONLINE, datav1.LinkState_LINK_STATE_HANDSHAKE, datav1.LinkState_LINK_STATE_FULL_SYNC
	w := rebuildWatch{primary: p, before: follower(on, p, 100, 100, 0)}
	for i, step := range []struct {
		st   *datav1.StatusResponse
		done bool
	}{
		{follower(on, p, 100, 100, 0), false}, // the old link, not dropped yet
		{follower(hs, p, 100, 100, 0), false},
		{follower(fs, p, 0, 100, 5000), false},
		{follower(on, p, 90, 120, 0), false}, // online, not caught up
		{follower(on, p, 120, 120, 0), true},
	} {
		done, err := w.observe(step.st)
		if err != nil || done != step.done {
			t.Fatalf("step %d: done %v, %v; want %v", i, done, err, step.done)
		}
	}
	if w.bytes != 5000 {
		t.Fatalf("bytes %d, want the most seen, 5000", w.bytes)
	}

	// A switch of primary counts as restarted at once; a node that stops following fails.
	w = rebuildWatch{primary: p, before: follower(on, "10.0.0.9:6379", 100, 100, 0)}
	if done, err := w.observe(follower(on, p, 7, 7, 0)); !done || err != nil {
		t.Fatalf("new primary in step: %v, %v", done, err)
	}
	if _, err := w.observe(&datav1.StatusResponse{Role: commonv1.Role_ROLE_STANDALONE}); err == nil || !strings.Contains(err.Error(), "no longer follows") {
		t.Fatalf("promoted node: %v", err)
	}
	if _, err := w.observe(follower(on, "10.0.0.9:6379", 7, 7, 0)); err == nil || !strings.Contains(err.Error(), "overtook") {
		t.Fatalf("other primary: %v", err)
	}
}

// TestLineProgress: without a terminal, at most one line per interval.
func TestLineProgress(t *testing.T) {
	var b bytes.Buffer
	p := &lineProgress{w: &b, every: time.Hour}
	st := follower(datav1.LinkState_LINK_STATE_FULL_SYNC, "h:1", 0, 10, 2048)
	p.update(st, 2048)
	p.update(st, 4096)
	if b.String() != "rebuild: link FULL_SYNC, 2.0 KiB received, offset 0 of 10\n" {
		t.Fatalf("%q", b.String())
	}
}
