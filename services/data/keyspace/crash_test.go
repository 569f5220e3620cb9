package keyspace

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// crasher is an Injector that fails nothing: it takes crash clones of mem just before chosen
// mutating operations, which simulates a power loss at that point inside whatever the keyspace
// is doing (an append's write, a group commit's sync, a rotation, a FLUSHALL).
type crasher struct {
	mu  sync.Mutex
	mem *vfs.MemFS
	// rng, when set, makes clones with CrashCloneRandom (torn unsynced tails).
	rng *rand.Rand
	n   int64 // mutating operations seen
	// at: clone before the at-th mutating operation (0: never); the clone waits in clone.
	at    int64
	clone *vfs.MemFS
	// every: clone before every mutating operation, into clones.
	every  bool
	clones []*vfs.MemFS
}

func (c *crasher) MaybeError(op vfs.Op, path string) error {
	switch op {
	case vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpTruncate, vfs.OpRemove, vfs.OpRename, vfs.OpSyncDir:
	default:
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.every {
		c.clones = append(c.clones, c.takeLocked())
	}
	if c.at != 0 && c.n == c.at {
		c.clone = c.takeLocked()
	}
	return nil
}

func (c *crasher) takeLocked() *vfs.MemFS {
	if c.rng != nil {
		return c.mem.CrashCloneRandom(c.rng)
	}
	return c.mem.CrashClone()
}

// arm schedules a clone within the next n mutating operations.
func (c *crasher) arm(rng *rand.Rand, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.n + 1 + rng.Int64N(int64(n))
	c.clone = nil
}

func (c *crasher) disarm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at, c.clone = 0, nil
}

// taken returns the clone taken since arm, if any.
func (c *crasher) taken() *vfs.MemFS {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clone
}

// crashConfig is one kind of crash test.
type crashConfig struct {
	fsync    vlog.Fsync
	waitProb float64 // chance of Session.Wait (the acknowledgement) after an operation
	syncProb float64 // chance of an explicit sync of every shard after an operation
	random   bool    // CrashCloneRandom: unsynced tails survive in part
	midOp    bool    // crash inside operations (before a chosen file-system call)
	// reclaimProb is the chance of a reclamation step after an operation (reclaim_test.go).
	reclaimProb float64
}

// runCrash runs one seeded workload and crashes it several times. Each crash clone is opened,
// checked against the model (every shard holds the state after some prefix of its records, at
// least up to what was synced) and the workload continues on the recovered keyspace, so crashes
// also hit logs whose torn tails were cut by an earlier recovery.
func runCrash(t *testing.T, seed uint64, ops int, cfg crashConfig) {
	rng := rand.New(rand.NewPCG(seed, 0))
	clk := newTestClock()
	mem := vfs.NewMem()
	cr := &crasher{mem: mem}
	if cfg.random {
		cr.rng = rand.New(rand.NewPCG(seed, 1))
	}
	opts := testOpts(vfs.NewErrorFS(mem, cr), clk)
	opts.Shards = []int{1, 2, 4, 8}[rng.IntN(4)]
	opts.SegmentSize = []int64{1 << 10, 4 << 10, 32 << 10}[rng.IntN(3)]
	opts.Fsync = cfg.fsync
	w := newWorkload(t, seed, rng, clk, opts)
	w.waitProb, w.syncProb = cfg.waitProb, cfg.syncProb
	crashes := 0
	rearm := func() {
		if cfg.midOp {
			cr.arm(rng, 80)
		}
	}
	rearm()
	for i := 1; i <= ops; i++ {
		lo := w.durable
		w.step()
		if cfg.reclaimProb > 0 && rng.Float64() < cfg.reclaimProb {
			w.reclaim()
		}
		var clone *vfs.MemFS
		if cfg.midOp {
			clone = cr.taken()
		}
		// Between operations at random, and after the last one if nothing crashed yet.
		if clone == nil && (!cfg.midOp && rng.IntN(40) == 0 || i == ops && crashes == 0) {
			if cfg.random {
				clone = mem.CrashCloneRandom(rng)
			} else {
				clone = mem.CrashClone()
			}
			lo = w.durable
		}
		if clone == nil {
			continue
		}
		crashes++
		w.notef("crash")
		cr.disarm()
		fs := vfs.NewErrorFS(clone, cr)
		ks, st := w.recoverAndCheck(fs, lo)
		if err := w.ks.Close(); err != nil {
			w.fatalf("close the crashed keyspace: %v", err)
		}
		cr.mu.Lock()
		cr.mem, mem = clone, clone
		cr.mu.Unlock()
		w.adopt(fs, ks, st)
		rearm()
	}
	cr.disarm()
	w.restart()
	w.close()
}

func crashRounds(t *testing.T, def int, cfg crashConfig) {
	base := testSeed(t)
	total := scaledOps(def)
	const perSeed = 300
	for round := 0; round*perSeed < total; round++ {
		seed := base + uint64(round)
		ops := min(perSeed, total-round*perSeed)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runCrash(t, seed, ops, cfg) })
	}
}

// TestCrashAlways: with appendfsync always and a Wait after every operation, a crash between
// operations loses nothing: the recovered keyspace equals the model exactly.
func TestCrashAlways(t *testing.T) {
	crashRounds(t, 3000, crashConfig{fsync: vlog.FsyncAlways, waitProb: 1})
}

// TestCrashAlwaysRandomTail: some operations are not waited for (not acknowledged), and the
// crash keeps a random part of the unsynced bytes: acknowledged operations survive, and torn
// records are cut, never served.
func TestCrashAlwaysRandomTail(t *testing.T) {
	crashRounds(t, 3000, crashConfig{fsync: vlog.FsyncAlways, waitProb: 0.6, random: true})
}

// TestCrashAlwaysMidOperation crashes just before a random write, sync, create, remove or
// directory sync, inside appends, group commits, rotations and FLUSHALL.
func TestCrashAlwaysMidOperation(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		crashRounds(t, 2400, crashConfig{fsync: vlog.FsyncAlways, waitProb: 1, midOp: true})
	})
	t.Run("torn", func(t *testing.T) {
		crashRounds(t, 2400, crashConfig{fsync: vlog.FsyncAlways, waitProb: 0.8, midOp: true, random: true})
	})
}

// TestCrashEverysec: Wait only writes to the OS; what an explicit sync (or a rotation, or
// FLUSHALL) covered must survive, and each shard recovers to the state after some prefix of its
// records since then.
func TestCrashEverysec(t *testing.T) {
	for _, cfg := range []struct {
		name string
		cfg  crashConfig
	}{
		{"between", crashConfig{fsync: vlog.FsyncEverysec, waitProb: 1, syncProb: 0.05}},
		{"between-torn", crashConfig{fsync: vlog.FsyncEverysec, waitProb: 1, syncProb: 0.05, random: true}},
		{"mid-torn", crashConfig{fsync: vlog.FsyncEverysec, waitProb: 0.9, syncProb: 0.05, random: true, midOp: true}},
		{"no-torn", crashConfig{fsync: vlog.FsyncNo, waitProb: 0.9, syncProb: 0.05, random: true, midOp: true}},
	} {
		t.Run(cfg.name, func(t *testing.T) { crashRounds(t, 1500, cfg.cfg) })
	}
}

// TestCrashRenameAcrossShards crashes a RENAME (or MOVE) before every file-system call it and
// its durability wait make: the value must be at the source, the destination or both, never
// lost and never the destination's old value alone. With the keys in different shards, commit
// makes the put durable before it appends the delete.
func TestCrashRenameAcrossShards(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sameShard bool
		move      bool // same key name, another database
		dstExists bool
	}{
		{name: "cross-shard"},
		{name: "cross-shard-overwrite", dstExists: true},
		{name: "same-shard", sameShard: true},
		{name: "same-shard-overwrite", sameShard: true, dstExists: true},
		{name: "move-cross-shard", move: true},
	} {
		for _, random := range []bool{false, true} {
			name := tc.name
			if random {
				name += "-torn"
			}
			t.Run(name, func(t *testing.T) {
				seed := testSeed(t)
				clk := newTestClock()
				mem := vfs.NewMem()
				cr := &crasher{mem: mem}
				if random {
					cr.rng = rand.New(rand.NewPCG(seed, 7))
				}
				opts := testOpts(vfs.NewErrorFS(mem, cr), clk)
				const shards = 4
				opts.Shards = shards
				src := dbKey{0, keyInShard(shards, 0, 1, "src")}
				dst := dbKey{0, keyInShard(shards, 0, 2, "dst")}
				switch {
				case tc.sameShard:
					dst.key = keyInShard(shards, 0, 1, "dst")
				case tc.move:
					for i := 0; ; i++ {
						k := fmt.Sprintf("mv%d", i)
						if shardFor(shards, 0, k) != shardFor(shards, 1, k) {
							src, dst = dbKey{0, k}, dbKey{1, k}
							break
						}
					}
				}
				if (shardFor(shards, src.db, src.key) == shardFor(shards, dst.db, dst.key)) != tc.sameShard {
					t.Fatal("keys not placed as the case wants")
				}
				ks := mustOpen(t, opts)
				se := ks.NewSession()
				for i := 0; i < 20; i++ { // other records around, in every shard
					mustPut(t, ks, se, 0, fmt.Sprintf("other%d", i), "x", 0)
				}
				const val, old = "the value", "old value"
				mustPut(t, ks, se, src.db, src.key, val, 0)
				if tc.dstExists {
					mustPut(t, ks, se, dst.db, dst.key, old, 0)
				}

				// A pipelined write to the source's shard earlier in the same batch: the
				// batch's Wait flushes that shard first, so only commit's own ordering keeps
				// the delete from becoming durable before the put.
				if err := ks.Put(se, src.db, []byte(keyInShard(shards, src.db, shardFor(shards, src.db, src.key), "pipelined")), []byte("p"), 0, TypeString); err != nil {
					t.Fatal(err)
				}

				cr.mu.Lock()
				cr.every = true
				cr.mu.Unlock()
				err := ks.Update(se, toKeys([]dbKey{src, dst}), func(tx *Tx) error {
					m, _ := tx.Meta(0)
					v, _, err := tx.Value(0)
					if err != nil {
						return err
					}
					tx.Delete(0)
					tx.Put(1, v, m.ExpireAt, m.Type)
					return nil
				})
				if err == nil {
					err = se.Wait()
				}
				cr.mu.Lock()
				cr.every = false
				clones := append(cr.clones, mem.CrashClone())
				cr.mu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
				mustClose(t, ks)
				if len(clones) < 3 {
					t.Fatalf("only %d crash points", len(clones))
				}

				states := map[string]int{}
				for i, c := range clones {
					ks := mustOpen(t, testOpts(c, clk))
					sv, _, sok := getString(t, ks, src.db, src.key)
					dv, _, dok := getString(t, ks, dst.db, dst.key)
					mustClose(t, ks)
					srcState, dstState := "gone", "gone"
					if sok {
						srcState = sv
					}
					if dok {
						dstState = dv
					}
					state := fmt.Sprintf("src=%s dst=%s", srcState, dstState)
					states[state]++
					dstBefore := "gone"
					if tc.dstExists {
						dstBefore = old
					}
					switch {
					case srcState == val && dstState == dstBefore: // nothing durable yet
					case srcState == val && dstState == val: // the put is, the delete not yet
					case srcState == "gone" && dstState == val: // both
					default:
						t.Fatalf("crash point %d of %d: %s", i+1, len(clones), state)
					}
					if i == len(clones)-1 && state != "src=gone dst="+val {
						t.Fatalf("after the acknowledged rename: %s", state)
					}
				}
				t.Logf("%d crash points: %v", len(clones), states)
			})
		}
	}
}

// TestCrashConcurrentSessions crashes while several connections write their own keys and
// group-commit concurrently (appendfsync always): for every key, the recovered state is one the
// key had at or after its last acknowledged write.
func TestCrashConcurrentSessions(t *testing.T) {
	seed := testSeed(t)
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	opts.SegmentSize = 4 << 10
	ks := mustOpen(t, opts)
	const workers, keysPer = 4, 16
	perWorker := scaledOps(workers*600) / workers
	if testing.Short() {
		perWorker = 200
	}

	// history[key][j] is the key's state after its j-th write (j = 0: absent); acked[key] is
	// how many of its writes were acknowledged (Wait returned).
	type state struct {
		val     string
		present bool
	}
	var mu sync.Mutex
	history := map[string][]state{}
	acked := map[string]int{}
	for g := 0; g < workers; g++ {
		for k := 0; k < keysPer; k++ {
			history[fmt.Sprintf("w%d:%d", g, k)] = []state{{}}
		}
	}
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	tick := make(chan struct{}) // a worker asks for a crash every tickEvery operations
	var opsDone atomic.Int64
	tickEvery := int64(max(workers*perWorker/30, 1))
	for g := 0; g < workers; g++ {
		wrng := rand.New(rand.NewPCG(seed, uint64(10+g)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			se := ks.NewSession()
			for i := 0; i < perWorker; i++ {
				key := fmt.Sprintf("w%d:%d", g, wrng.IntN(keysPer))
				st := state{val: fmt.Sprintf("%s=%d|%s", key, i, strings.Repeat("v", wrng.IntN(300))), present: wrng.IntN(5) != 0}
				if !st.present {
					st.val = ""
				}
				mu.Lock()
				history[key] = append(history[key], st)
				mu.Unlock()
				var err error
				if st.present {
					err = ks.Put(se, 0, []byte(key), []byte(st.val), 0, TypeString)
				} else {
					err = ks.Update(se, []Key{{DB: 0, Key: []byte(key)}}, func(tx *Tx) error { tx.Delete(0); return nil })
				}
				if err == nil && (wrng.IntN(3) != 0 || i == perWorker-1) {
					if err = se.Wait(); err == nil {
						mu.Lock()
						// Wait covers every earlier write of this session, which alone
						// writes these keys.
						for k := range keysPer {
							kk := fmt.Sprintf("w%d:%d", g, k)
							acked[kk] = len(history[kk]) - 1
						}
						mu.Unlock()
					}
				}
				if err != nil {
					errc <- err
					return
				}
				if opsDone.Add(1)%tickEvery == 0 {
					tick <- struct{}{} // this worker waits for the crash; the others go on
				}
			}
		}()
	}
	// Crash about 30 times while the workers run, and once after; check each clone at once so
	// only one is held at a time.
	crashes := 0
	check := func() {
		mu.Lock()
		ackedNow := maps.Clone(acked)
		mu.Unlock()
		// Everything acknowledged before this point is synced, so it is in the clone; every
		// write the clone may hold is in history by the time the clone is taken.
		c := mem.CrashClone()
		mu.Lock()
		hist := maps.Clone(history) // slices only grow, so their prefixes are stable
		mu.Unlock()
		crashes++
		ks := mustOpen(t, testOpts(c, clk))
		defer mustClose(t, ks)
		for key, h := range hist {
			val, _, ok := getString(t, ks, 0, key)
			got := state{val: val, present: ok}
			match := false
			for j := ackedNow[key]; j < len(h) && !match; j++ {
				match = h[j] == got
			}
			if !match {
				t.Fatalf("crash %d: %s recovered as %+v, which is no state at or after its acknowledged write %d (%+v)",
					crashes, key, got, ackedNow[key], h[ackedNow[key]])
			}
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick:
			check()
		}
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	check()
	mustClose(t, ks)
	t.Logf("%d crash points checked", crashes)
}
