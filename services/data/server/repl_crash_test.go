package server_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/testseed"
	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// TestReplFollowerCrashResumesOnce: a follower that loses power while it applies INCR, LPUSH and
// MULTI ... EXEC (its file system keeps what it synced and a random part of the rest, file by
// file, so its shards come back standing at different stream offsets) resumes each time with a
// partial resync and applies every unit exactly once: in the end it holds what the primary holds,
// every counter equals the acknowledged INCRs, every list the acknowledged pushes. A follower that
// resumed past a shard's offset would miss writes; one that ran again what a shard held would
// count twice.
func TestReplFollowerCrashResumesOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t, "LAVIK_REPL_CRASH_SEED"), 1))
	engine := func() vlog.Engine {
		e, err := vlog.NewEngine("pread", 16)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	primary := startServerRepl(t, vfs.NewMem(), "/data", engine(), true, "appendfsync", "everysec")
	host, port, _ := net.SplitHostPort(primary.addr)
	var p int
	fmt.Sscan(port, &p)
	fs := vfs.NewMem()
	follow := func(fs vfs.FS) *testServer {
		f := startServerRepl(t, fs, "/data", engine(), true, "appendfsync", "everysec")
		// As lavik-meta places a node: it keeps the state it persisted.
		if err := f.node.Start(host, p); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the follower's link is up", func() bool { return f.node.Status().LinkState == "connected" })
		return f
	}
	follower := follow(fs)

	const counters, lists = 8, 4
	var (
		incrs  [counters]atomic.Int64
		pushes [lists]atomic.Int64
		stop   atomic.Bool
		wg     sync.WaitGroup
		errs   = make(chan error, 8)
	)
	for w := 0; w < 4; w++ {
		wseed := rng.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := faultLoad(primary.addr, rand.New(rand.NewPCG(wseed, 2)), &stop, incrs[:], pushes[:]); err != nil {
				errs <- err
			}
		}()
	}
	// The full resync's state must be synced before the first crash, or the follower rightly
	// starts over (the background sync runs every second under everysec).
	time.Sleep(1500 * time.Millisecond)
	const crashes = 6
	for i := 0; i < crashes; i++ {
		time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
		clone := fs.CrashCloneRandom(rng)
		follower.stop(t)
		fs = clone
		follower = follow(fs)
	}
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	eventually(t, "the follower caught up", func() bool { return follower.node.Status().Offset == primary.node.Offset() })
	if st := primary.node.Stats(); st.SyncFull != 1 || st.SyncPartialOK != crashes {
		t.Errorf("primary's syncs: %d full, %d partial; want 1 full (the first), %d partial (one a crash)", st.SyncFull, st.SyncPartialOK, crashes)
	}
	pc, fc := primary.dial(t), follower.dial(t)
	if pd, fd := pc.do("LAVIK.DIGEST"), fc.do("LAVIK.DIGEST"); pd != fd {
		t.Errorf("digests differ: primary %s, follower %s", pd, fd)
	}
	for i := range incrs {
		want := bulk(fmt.Sprint(incrs[i].Load()))
		if incrs[i].Load() == 0 {
			want = "(nil)"
		}
		for name, c := range map[string]*client{"primary": pc, "follower": fc} {
			if got := c.do("GET", fmt.Sprintf("c%d", i)); got != want {
				t.Errorf("%s: counter c%d is %s, acknowledged INCRs %d", name, i, got, incrs[i].Load())
			}
		}
	}
	for i := range pushes {
		want := fmt.Sprintf(":%d", pushes[i].Load())
		for name, c := range map[string]*client{"primary": pc, "follower": fc} {
			if got := c.do("LLEN", fmt.Sprintf("l%d", i)); got != want {
				t.Errorf("%s: list l%d has %s elements, acknowledged pushes %d", name, i, got, pushes[i].Load())
			}
		}
	}
}
