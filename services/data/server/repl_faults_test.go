package server_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/pkg/testseed"
	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// diskFaults is a follower's disk going bad and recovering: while failing, every write and sync
// fails; while slow, every sync takes syncDelay first.
type diskFaults struct {
	failing, slow atomic.Bool
	syncDelay     time.Duration
	failed        atomic.Int64
}

func (f *diskFaults) MaybeError(op vfs.Op, path string) error {
	if op != vfs.OpWrite && op != vfs.OpSync {
		return nil
	}
	if op == vfs.OpSync && f.slow.Load() {
		time.Sleep(f.syncDelay)
	}
	if f.failing.Load() {
		f.failed.Add(1)
		return syscall.EIO
	}
	return nil
}

// TestReplFollowerDiskFaultsApplyOnce: a follower whose disk fails writes and syncs, and is slow
// to sync, in bursts, while clients run INCR, LPUSH and MULTI ... EXEC on its primary, applies
// every batch of the stream exactly once: after the faults it holds what the primary holds
// (LAVIK.DIGEST), every counter equals the acknowledged INCRs, every list the acknowledged
// pushes. A follower that ran a batch again after a failed durability wait would count twice.
func TestReplFollowerDiskFaultsApplyOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t, "LAVIK_REPL_FAULTS_SEED"), 1))
	engine := func() vlog.Engine {
		e, err := vlog.NewEngine("pread", 16)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	primary := startServerRepl(t, vfs.NewMem(), "/data", engine(), true, "appendfsync", "everysec")
	faults := &diskFaults{syncDelay: 30 * time.Millisecond}
	follower := startServerRepl(t, vfs.NewErrorFS(vfs.NewMem(), faults), "/data", engine(), true, "appendfsync", "always")
	host, port, _ := net.SplitHostPort(primary.addr)
	var p int
	fmt.Sscan(port, &p)
	if err := follower.node.ReplicaOf(host, p); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the follower's link is up", func() bool { return follower.node.Status().LinkState == "connected" })

	const counters, lists = 8, 4
	var (
		incrs  [counters]atomic.Int64 // acknowledged INCRs by counter (in MULTI too)
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

	// The faults, in a seeded order of bursts: failing writes and syncs, slow syncs, both.
	start := time.Now()
	var bursts []string
	for time.Since(start) < 2*time.Second {
		kind := rng.IntN(3)
		faults.failing.Store(kind != 1)
		faults.slow.Store(kind != 0)
		bursts = append(bursts, [...]string{"fail", "slow", "fail+slow"}[kind])
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		faults.failing.Store(false)
		faults.slow.Store(false)
		time.Sleep(time.Duration(50+rng.IntN(150)) * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if faults.failed.Load() == 0 {
		t.Fatalf("no write or sync of the follower failed (bursts %v): the test injected nothing", bursts)
	}
	t.Logf("bursts %v; %d writes and syncs failed on the follower", bursts, faults.failed.Load())

	deadline := time.Now().Add(waitFor)
	for follower.node.Status().Offset != primary.node.Offset() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<22)
			t.Logf("%s", buf[:runtime.Stack(buf, true)])
			t.Fatalf("the follower did not catch up in %v: its status %+v, the primary's offset %d", waitFor, follower.node.Status(), primary.node.Offset())
		}
		time.Sleep(2 * time.Millisecond)
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

// faultLoad runs INCR, LPUSH and MULTI ... EXEC of both on addr until stop, counting what was
// acknowledged.
func faultLoad(addr string, rng *rand.Rand, stop *atomic.Bool, incrs, pushes []atomic.Int64) error {
	nc, err := net.DialTimeout("tcp", addr, waitFor)
	if err != nil {
		return err
	}
	defer nc.Close()
	rd := resp.NewReplyReader(nc)
	do := func(cmds ...cmd) ([]resp.Value, error) {
		nc.SetDeadline(time.Now().Add(waitFor))
		if _, err := nc.Write(encode(nil, cmds...)); err != nil {
			return nil, err
		}
		out := make([]resp.Value, len(cmds))
		for i := range cmds {
			v, err := rd.Read()
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	for !stop.Load() {
		c, l := rng.IntN(len(incrs)), rng.IntN(len(pushes))
		ck, lk := fmt.Sprintf("c%d", c), fmt.Sprintf("l%d", l)
		switch rng.IntN(3) {
		case 0:
			v, err := do(cmd{"INCR", ck})
			if err != nil {
				return err
			}
			if v[0].Kind != resp.Integer {
				return fmt.Errorf("INCR %s: %s", ck, show(v[0]))
			}
			incrs[c].Add(1)
		case 1:
			v, err := do(cmd{"LPUSH", lk, "x"})
			if err != nil {
				return err
			}
			if v[0].Kind != resp.Integer {
				return fmt.Errorf("LPUSH %s: %s", lk, show(v[0]))
			}
			pushes[l].Add(1)
		default:
			v, err := do(cmd{"MULTI"}, cmd{"INCR", ck}, cmd{"LPUSH", lk, "m"}, cmd{"EXEC"})
			if err != nil {
				return err
			}
			if got := show(v[3]); v[3].Kind != resp.Array || len(v[3].Elems) != 2 {
				return fmt.Errorf("EXEC: %s", got)
			}
			incrs[c].Add(1)
			pushes[l].Add(1)
		}
	}
	return nil
}
