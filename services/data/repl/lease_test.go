package repl

import (
	"testing"
	"time"
)

// TestLease: a node under meta takes writes only inside its lease, which runs from the
// heartbeat's send time for its duration less the drift margin; grants of an older epoch do not
// extend it, a grant never shrinks it, revoking ends it, and a node without meta needs none.
func TestLease(t *testing.T) {
	var clock time.Duration
	l := newLease()
	l.now = func() time.Duration { return clock }
	if !l.valid() {
		t.Fatal("a node without meta refused writes")
	}
	l.required.Store(true)
	if l.valid() {
		t.Fatal("writable under meta before any lease")
	}
	d := 2 * time.Second
	sent := clock
	clock += 300 * time.Millisecond // the answer arrives later; the lease still counts from sent
	l.grant(sent, d, 5)
	end := sent + d - LeaseDriftMargin(d)
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{clock, true}, {end - time.Nanosecond, true}, {end, false}, {sent + d, false}} {
		clock = c.at
		if got := l.valid(); got != c.want {
			t.Fatalf("at %v (lease ends %v): valid %v, want %v", c.at, end, got, c.want)
		}
	}
	if LeaseDriftMargin(d) != 50*time.Millisecond {
		t.Fatalf("margin of a 2 s lease %v, want 50ms", LeaseDriftMargin(d))
	}
	clock = 10 * time.Second
	l.grant(clock, d, 4) // an older epoch's grant
	if l.valid() {
		t.Fatal("a grant of an older epoch renewed the lease")
	}
	l.grant(clock, d, 5)
	if !l.valid() {
		t.Fatal("a renewal did not renew")
	}
	l.grant(clock-time.Second, d, 5) // an answer to an older heartbeat arriving late
	if l.until.Load() != int64(clock+d-LeaseDriftMargin(d)) {
		t.Fatal("a late grant shortened the lease")
	}
	l.until.Store(0)
	if l.valid() {
		t.Fatal("revoked lease still valid")
	}
}
