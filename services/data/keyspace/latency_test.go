package keyspace

import (
	"sync"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// fakeLatency records every event noted while on.
type fakeLatency struct {
	mu     sync.Mutex
	on     bool
	events map[string]int
}

func (f *fakeLatency) On() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.on }
func (f *fakeLatency) Note(event string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d < 0 {
		panic("negative duration")
	}
	f.events[event]++
}
func (f *fakeLatency) count(event string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.events[event]
}

// TestLatencyEvents: the expire cycle, the background syncs and the syncs of appendfsync always
// report to the latency sink while it is on, and nothing is measured while it is off.
func TestLatencyEvents(t *testing.T) {
	ks := mustOpen(t, testOpts(vfs.NewMem(), newTestClock()))
	defer ks.Close()
	lat := &fakeLatency{events: map[string]int{}}
	ks.SetLatency(lat)
	se := ks.NewSession()
	put := func() {
		if err := ks.Put(se, 0, []byte("k"), []byte("v"), 0, TypeString); err != nil {
			t.Fatal(err)
		}
		if err := se.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	ks.SetFsync(vlog.FsyncAlways)
	put()
	time.Sleep(300 * time.Millisecond) // expiry ticks while off
	if n := len(lat.events); n != 0 {
		t.Fatalf("events noted while the monitor is off: %v", lat.events)
	}
	lat.mu.Lock()
	lat.on = true
	lat.mu.Unlock()
	put()
	if lat.count("vlog-fsync-always") == 0 {
		t.Errorf("no vlog-fsync-always event: %v", lat.events)
	}
	deadline := time.Now().Add(10 * time.Second)
	for lat.count("expire-cycle") == 0 || lat.count("vlog-fsync") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("events after 10 s: %v", lat.events)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
