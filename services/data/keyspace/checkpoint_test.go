package keyspace

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// ckptReclaimAll collects every sealed segment with dead bytes in every shard, in random order,
// without the rate limit and whatever the policy says.
func ckptReclaimAll(t testing.TB, ks *Keyspace, rng *rand.Rand) int {
	t.Helper()
	n := 0
	for _, s := range ks.shards {
		var ids []uint32
		for _, g := range s.log.SegmentStats() {
			if !g.Active && !g.Pending && g.Dead > 0 {
				ids = append(ids, g.ID)
			}
		}
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		for _, id := range ids {
			if err := reclaimNow(ks, s, id); err != nil {
				t.Fatalf("reclaim segment %d of shard %d: %v", id, s.id, err)
			}
			n++
		}
	}
	return n
}

// ckptHooks lets a test run code between the chunks of a checkpoint: opts.ckptHook calls
// between() while it is set.
type ckptHooks struct{ between func() }

func (h *ckptHooks) install(opts *Options) {
	opts.ckptHook = func(int) {
		if h.between != nil {
			h.between()
		}
	}
}

// checkpointWithSteps checkpoints every shard while the workload runs up to n operations
// between chunks, so the checkpoint sees writes, deletes and flushes in the middle of its copy.
// stop, when not nil, ends the steps early (a crash clone was taken).
func checkpointWithSteps(w *workload, h *ckptHooks, n int, stop func() bool) {
	w.t.Helper()
	w.notef("checkpoint (up to %d operations during it)", n)
	h.between = func() {
		if n > 0 && (stop == nil || !stop()) {
			n--
			w.step()
		}
	}
	err := w.ks.Checkpoint()
	h.between = nil
	if err != nil {
		w.fatalf("checkpoint: %v", err)
	}
}

func ckptStats(ks *Keyspace) CheckpointStats { return ks.Stats(nil).Checkpoint }

// ckptWaitFor polls cond until it holds, failing the test after ten seconds.
func ckptWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestCheckpointTailReplay: after a checkpoint, overwrites, deletes, expire changes, new keys and
// FLUSHDB are replayed from the log tail on top of it; nothing deleted comes back, nothing
// written is lost, and only the tail is replayed.
func TestCheckpointTailReplay(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	opts.SegmentSize = 4 << 10
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	want := map[dbKey]mval{}
	put := func(db int, k, v string, exp int64) {
		mustPut(t, ks, se, db, k, v, exp)
		want[dbKey{db, k}] = mval{v, exp}
	}
	for i := 0; i < 200; i++ {
		put(0, fmt.Sprintf("k%d", i), fmt.Sprintf("v%d-%s", i, strings.Repeat("x", i%50)), 0)
	}
	for i := 0; i < 20; i++ {
		put(1, fmt.Sprintf("d1-%d", i), "in db 1", 0)
	}
	put(0, "ttl-soon", "goes", clk.After(1000))
	put(0, "ttl-persist", "stays", clk.After(1000))
	put(0, "ttl-later", "moved", clk.After(1000))
	if err := ks.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if n := ckptStats(ks).TailBytes; n != 0 {
		t.Fatalf("tail after a checkpoint: %d bytes", n)
	}
	appendsBefore := ks.Stats(nil).Log.Appends

	put(0, "k1", "overwritten", 0)
	put(0, "k200", "new after the checkpoint", 0)
	for _, k := range []string{"k2", "k3"} {
		if err := ks.Update(se, []Key{{0, []byte(k)}}, func(tx *Tx) error { tx.Delete(0); return nil }); err != nil {
			t.Fatal(err)
		}
		delete(want, dbKey{0, k})
	}
	setExpire := func(k string, exp int64) {
		if err := ks.Update(se, []Key{{0, []byte(k)}}, func(tx *Tx) error { tx.SetExpire(0, exp); return nil }); err != nil {
			t.Fatal(err)
		}
		v := want[dbKey{0, k}]
		v.exp = exp
		want[dbKey{0, k}] = v
	}
	setExpire("ttl-persist", 0)
	setExpire("ttl-later", clk.After(60_000))
	setExpire("k4", clk.After(500))
	if err := ks.FlushDB(se, 1); err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if k.db == 1 {
			delete(want, k)
		}
	}
	put(1, "d1-after", "after the flush", 0)
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	tail := ks.Stats(nil).Log.Appends - appendsBefore
	clk.Advance(2000) // ttl-soon and k4 expire
	delete(want, dbKey{0, "ttl-soon"})
	delete(want, dbKey{0, "k4"})

	check := func(ks *Keyspace, what string) {
		t.Helper()
		got, err := stateOf(ks, opts.Databases)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d keys, want %d", what, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: %v = %v, want %v", what, k, got[k], v)
			}
		}
		if n := ks.DBSize(nil, 0) + ks.DBSize(nil, 1); n != int64(len(want)) {
			t.Fatalf("%s: DBSize %d, want %d", what, n, len(want))
		}
	}
	// A crash: the checkpoint and the synced tail.
	crashed := mustOpen(t, testOpts(mem.CrashClone(), clk))
	check(crashed, "after a crash")
	st := ckptStats(crashed)
	if st.LoadedEntries == 0 || st.ReplayedRecords != tail || st.Rejected != 0 {
		t.Fatalf("after a crash: %+v; want the checkpoint loaded and %d tail records replayed", st, tail)
	}
	mustClose(t, crashed)
	mustClose(t, ks)

	// A clean restart: Close checkpointed, nothing is left to replay.
	ks = mustOpen(t, opts)
	check(ks, "after a clean restart")
	if st := ckptStats(ks); st.ReplayedRecords != 0 || st.LoadedEntries == 0 {
		t.Fatalf("after a clean restart: %+v", st)
	}
	mustClose(t, ks)
}

// TestCheckpointFuzzyCopy takes checkpoints in chunks of a few entries while random operations
// run between the chunks, then crashes: the checkpoint plus its tail equal the model exactly.
func TestCheckpointFuzzyCopy(t *testing.T) {
	base := testSeed(t)
	for round := 0; round < 4; round++ {
		seed := base + uint64(round)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			clk := newTestClock()
			mem := vfs.NewMem()
			opts := testOpts(mem, clk)
			opts.Shards = []int{1, 2, 4}[rng.IntN(3)]
			opts.SegmentSize = []int64{2 << 10, 16 << 10}[rng.IntN(2)]
			opts.ckptChunk = 1 + rng.IntN(4)
			var h ckptHooks
			h.install(&opts)
			w := newWorkload(t, seed, rng, clk, opts)
			for i := 0; i < 300; i++ {
				w.step()
				if i%60 == 59 {
					checkpointWithSteps(w, &h, 5+rng.IntN(30), nil)
					clone := mem.CrashClone()
					ks, st := w.recoverAndCheck(clone, len(w.changes))
					if ckptStats(ks).Rejected != 0 {
						w.fatalf("checkpoint rejected: %+v", ckptStats(ks))
					}
					w.fullCheck(false)
					mustClose(t, w.ks)
					mem = clone
					w.adopt(clone, ks, st)
				}
			}
			w.restart()
			w.close()
		})
	}
}

// ckptCrashConfig is one kind of crash test with checkpoints.
type ckptCrashConfig struct {
	fsync    vlog.Fsync
	waitProb float64
	syncProb float64
	random   bool // CrashCloneRandom
	reclaim  bool // collect segments now and then
}

// runCheckpointCrash runs seeded random operations with fuzzy checkpoints (and reclamation)
// among them and crashes before a random file-system call, often one of a checkpoint's: every
// recovery must hold, in each shard, the state after some prefix of its changes that includes
// everything synced, and must never reject a checkpoint.
func runCheckpointCrash(t *testing.T, seed uint64, ops int, cfg ckptCrashConfig) {
	rng := rand.New(rand.NewPCG(seed, 0))
	clk := newTestClock()
	mem := vfs.NewMem()
	cr := &crasher{mem: mem}
	if cfg.random {
		cr.rng = rand.New(rand.NewPCG(seed, 1))
	}
	opts := testOpts(vfs.NewErrorFS(mem, cr), clk)
	opts.Shards = []int{1, 2, 4}[rng.IntN(3)]
	opts.SegmentSize = []int64{1 << 10, 4 << 10, 32 << 10}[rng.IntN(3)]
	opts.Fsync = cfg.fsync
	opts.ckptChunk = 1 + rng.IntN(16)
	var h ckptHooks
	h.install(&opts)
	w := newWorkload(t, seed, rng, clk, opts)
	w.waitProb, w.syncProb = cfg.waitProb, cfg.syncProb
	crashes, ckpts := 0, 0
	cr.arm(rng, 60)
	for i := 1; i <= ops; i++ {
		lo := w.durable
		switch r := rng.IntN(100); {
		case r < 6:
			checkpointWithSteps(w, &h, rng.IntN(10), func() bool { return cr.taken() != nil })
			ckpts++
		case r < 8 && cfg.reclaim:
			w.notef("reclaim")
			ckptReclaimAll(t, w.ks, rng)
		default:
			w.step()
		}
		clone := cr.taken()
		if clone == nil && i == ops && crashes == 0 {
			clone, lo = mem.CrashClone(), w.durable
		}
		if clone == nil {
			continue
		}
		crashes++
		w.notef("crash")
		cr.disarm()
		fs := vfs.NewErrorFS(clone, cr)
		ks, st := w.recoverAndCheck(fs, lo)
		if c := ckptStats(ks); c.Rejected != 0 {
			w.fatalf("a crash left a checkpoint that was rejected: %+v", c)
		}
		if err := w.ks.Close(); err != nil {
			w.fatalf("close the crashed keyspace: %v", err)
		}
		cr.mu.Lock()
		cr.mem, mem = clone, clone
		cr.mu.Unlock()
		w.adopt(fs, ks, st)
		cr.arm(rng, 60)
	}
	cr.disarm()
	w.restart()
	w.close()
	t.Logf("%d crashes, %d checkpoints", crashes, ckpts)
}

// TestCheckpointCrash crashes before random file-system calls while checkpoints are taken among
// the operations (and, in some runs, segments are reclaimed).
func TestCheckpointCrash(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ckptCrashConfig
	}{
		{"always", ckptCrashConfig{fsync: vlog.FsyncAlways, waitProb: 1}},
		{"always-torn", ckptCrashConfig{fsync: vlog.FsyncAlways, waitProb: 0.8, random: true}},
		{"everysec-torn", ckptCrashConfig{fsync: vlog.FsyncEverysec, waitProb: 0.9, syncProb: 0.05, random: true}},
		{"always-reclaim", ckptCrashConfig{fsync: vlog.FsyncAlways, waitProb: 1, reclaim: true}},
		{"no-torn-reclaim", ckptCrashConfig{fsync: vlog.FsyncNo, waitProb: 0.9, syncProb: 0.05, random: true, reclaim: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := testSeed(t)
			total := scaledOps(900)
			const perSeed = 300
			for round := 0; round*perSeed < total; round++ {
				seed := base + uint64(round)
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					runCheckpointCrash(t, seed, min(perSeed, total-round*perSeed), tc.cfg)
				})
			}
		})
	}
}

// TestCheckpointModel runs seeded random operations against the keyspace and the model with
// fuzzy checkpoints, reclamation of every segment with dead bytes, clean restarts and crashes
// interleaved. A clean restart must replay nothing (Close checkpointed), a crash restart only
// what came after the checkpoints, and no checkpoint is ever rejected.
func TestCheckpointModel(t *testing.T) {
	base := testSeed(t)
	total := scaledOps(6000)
	const perSeed = 1500
	for round := 0; round*perSeed < total; round++ {
		seed := base + uint64(round)
		ops := min(perSeed, total-round*perSeed)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			clk := newTestClock()
			mem := vfs.NewMem()
			opts := testOpts(mem, clk)
			modelConfig(rng, &opts)
			opts.ckptChunk = 1 + rng.IntN(64)
			var h ckptHooks
			h.install(&opts)
			w := newWorkload(t, seed, rng, clk, opts)
			var loaded uint64
			for i := 1; i <= ops; i++ {
				switch r := rng.IntN(1000); {
				case r < 25:
					checkpointWithSteps(w, &h, rng.IntN(20), nil)
				case r < 40:
					w.notef("reclaim")
					ckptReclaimAll(t, w.ks, rng)
				case r < 48:
					w.restart()
					st := ckptStats(w.ks)
					if st.ReplayedRecords != 0 || st.Rejected != 0 {
						w.fatalf("clean restart: %+v", st)
					}
					loaded += st.LoadedEntries
				case r < 56:
					w.notef("crash")
					clone := mem.CrashClone()
					ks, st := w.recoverAndCheck(clone, w.durable)
					if c := ckptStats(ks); c.Rejected != 0 {
						w.fatalf("crash restart rejected a checkpoint: %+v", c)
					}
					mustClose(t, w.ks)
					mem = clone
					w.adopt(clone, ks, st)
					w.fullCheck(true)
				default:
					w.step()
				}
				if i%97 == 0 {
					w.fullCheck(false)
				}
			}
			w.restart()
			w.close()
			if loaded == 0 {
				t.Fatalf("no restart loaded a checkpoint entry")
			}
		})
	}
}

// TestCheckpointRelocated: records the collector moves after a checkpoint keep their versions,
// which the checkpoint covers; the tail replay moves the checkpoint's entries to the copies,
// so a key is found after its old segment is gone, and a deleted key whose record and tombstone
// were both reclaimed stays deleted.
func TestCheckpointRelocated(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	opts.Shards = 1
	opts.SegmentSize = 1 << 10
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	want := map[string]string{}
	for i := 0; i < 60; i++ {
		k := fmt.Sprintf("k%d", i)
		want[k] = fmt.Sprintf("value %d %s", i, strings.Repeat("v", 40))
		mustPut(t, ks, se, 0, k, want[k], 0)
	}
	if err := ks.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// Make every old segment worth collecting: overwrite half the keys, delete a few.
	for i := 0; i < 60; i += 2 {
		k := fmt.Sprintf("k%d", i)
		want[k] = "new " + k
		mustPut(t, ks, se, 0, k, want[k], 0)
	}
	for i := 1; i < 60; i += 10 {
		k := fmt.Sprintf("k%d", i)
		if err := ks.Update(se, []Key{{0, []byte(k)}}, func(tx *Tx) error { tx.Delete(0); return nil }); err != nil {
			t.Fatal(err)
		}
		delete(want, k)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for round := 0; round < 4; round++ {
		ckptReclaimAll(t, ks, rng)
	}
	if err := ks.shards[0].log.Sync(); err != nil {
		t.Fatal(err)
	}
	reopen := opts
	reopen.FS = mem.CrashClone()
	ks2 := mustOpen(t, reopen)
	got, err := stateOf(ks2, opts.Databases)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d keys after reclamation and restart, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[dbKey{0, k}].val != v {
			t.Fatalf("%s = %v, want %q", k, got[dbKey{0, k}], v)
		}
	}
	st := ckptStats(ks2)
	if st.LoadedEntries != 60 || st.Rejected != 0 {
		t.Fatalf("checkpoint stats %+v", st)
	}
	t.Logf("after reclamation: %+v, %d segments", st, len(ks.shards[0].log.SegmentIDs()))
	mustClose(t, ks2)
	mustClose(t, ks)
}

// TestCheckpointRejected: a damaged checkpoint, one of another shard layout, or one whose
// position the log does not reach is never used; the shard replays its whole log instead.
func TestCheckpointRejected(t *testing.T) {
	for _, tc := range []struct {
		name      string
		damage    func(t *testing.T, fs *vfs.MemFS, path string)
		shards    int
		databases int
	}{
		{name: "bit-flip", damage: func(t *testing.T, fs *vfs.MemFS, path string) {
			f, _ := fs.OpenReadWrite(path)
			defer f.Close()
			size, _ := f.Size()
			b := make([]byte, 1)
			f.ReadAt(b, size/2)
			b[0] ^= 0x20
			f.WriteAt(b, size/2)
			f.Sync()
		}},
		{name: "truncated", damage: func(t *testing.T, fs *vfs.MemFS, path string) {
			f, _ := fs.OpenReadWrite(path)
			defer f.Close()
			size, _ := f.Size()
			f.Truncate(size - 30)
			f.Sync()
		}},
		{name: "empty", damage: func(t *testing.T, fs *vfs.MemFS, path string) {
			f, _ := fs.Create(path)
			f.Sync()
			f.Close()
		}},
		{name: "position-beyond-log", damage: func(t *testing.T, fs *vfs.MemFS, path string) {
			// The log lost its newest segment after the checkpoint was written.
			dir := filepath.Dir(path)
			names, _ := fs.List(dir)
			var last string
			for _, n := range names {
				if strings.HasSuffix(n, ".seg") {
					last = n
				}
			}
			if err := fs.Remove(filepath.Join(dir, last)); err != nil {
				t.Fatal(err)
			}
			fs.SyncDir(dir)
		}},
		{name: "other-shard-count", shards: 2},
		{name: "more-databases", databases: 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newTestClock()
			mem := vfs.NewMem()
			opts := testOpts(mem, clk)
			opts.Shards = 1
			opts.SegmentSize = 2 << 10
			ks := mustOpen(t, opts)
			se := ks.NewSession()
			for i := 0; i < 100; i++ {
				mustPut(t, ks, se, 0, fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i), 0)
			}
			mustClose(t, ks) // checkpoints
			if tc.damage != nil {
				tc.damage(t, mem, filepath.Join(opts.Dir, "shard-000", ckptName))
			}
			if tc.shards != 0 {
				// shard-000 is now shard 0 of 2, and its checkpoint says 1 shard. Open refuses
				// a changed shard count through the format file; change it to check that the
				// checkpoint's own check holds too.
				opts.Shards = tc.shards
				if err := vfs.WriteFileAtomic(mem, opts.Dir, formatFile, dirFormat{version: formatVersion, shards: tc.shards}.encode()); err != nil {
					t.Fatal(err)
				}
			}
			if tc.databases != 0 {
				opts.Databases = tc.databases
			}
			ks = mustOpen(t, opts)
			defer mustClose(t, ks)
			st := ckptStats(ks)
			if st.Rejected != 1 || st.LoadedEntries != 0 || st.ReplayedRecords == 0 {
				t.Fatalf("stats %+v: want the checkpoint rejected and the log replayed", st)
			}
			if tc.shards != 0 {
				return // keys hash to other shards now; re-sharding is not this test's business
			}
			// The lost segment's keys are gone with it; every other key is intact.
			lostOK := tc.name == "position-beyond-log"
			for i := 0; i < 100; i++ {
				v, _, ok := getString(t, ks, 0, fmt.Sprintf("k%d", i))
				if ok && v != fmt.Sprintf("v%d", i) || !ok && !lostOK {
					t.Fatalf("k%d = %q, %v", i, v, ok)
				}
			}
		})
	}
}

// TestCheckpointWriteFailures fails each file-system call a checkpoint makes: Checkpoint reports
// the error, writes go on, no temporary file is left, and a restart (clean or after a crash)
// finds every key, from the previous checkpoint or the log.
func TestCheckpointWriteFailures(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpClose, vfs.OpRename, vfs.OpSyncDir} {
		t.Run(op.String(), func(t *testing.T) {
			clk := newTestClock()
			mem := vfs.NewMem()
			fail := vfs.NewToggle(syscall.EIO)
			inj := vfs.InjectorFunc(func(o vfs.Op, path string) error {
				if o == op && (strings.Contains(path, "checkpoint") || o == vfs.OpSyncDir) {
					return fail.MaybeError(o, path)
				}
				return nil
			})
			opts := testOpts(vfs.NewErrorFS(mem, inj), clk)
			opts.Shards = 2
			ks := mustOpen(t, opts)
			se := ks.NewSession()
			want := map[string]string{}
			put := func(k, v string) {
				mustPut(t, ks, se, 0, k, v, 0)
				want[k] = v
			}
			for i := 0; i < 50; i++ {
				put(fmt.Sprintf("k%d", i), "first")
			}
			if err := ks.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			for i := 25; i < 75; i++ {
				put(fmt.Sprintf("k%d", i), "second")
			}
			fail.Enable()
			if err := ks.Checkpoint(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("checkpoint with %v failing: %v", op, err)
			}
			fail.Disable()
			if st := ckptStats(ks); st.Failed == 0 {
				t.Fatalf("failure not counted: %+v", st)
			}
			put("k0", "after the failure")
			for _, s := range ks.shards {
				names, _ := mem.List(s.ckpt.dir)
				for _, n := range names {
					if n == ckptTmpName {
						t.Fatalf("%s left in %s", n, s.ckpt.dir)
					}
				}
			}
			check := func(ks *Keyspace, what string) {
				t.Helper()
				for k, v := range want {
					got, _, ok := getString(t, ks, 0, k)
					if !ok || got != v {
						t.Fatalf("%s: %s = %q, %v; want %q", what, k, got, ok, v)
					}
				}
				if st := ckptStats(ks); st.Rejected != 0 {
					t.Fatalf("%s: %+v", what, st)
				}
			}
			reopen := opts
			reopen.FS = mem.CrashClone()
			crashed := mustOpen(t, reopen)
			check(crashed, "after a crash")
			mustClose(t, crashed)
			mustClose(t, ks)
			reopen.FS = mem
			ks = mustOpen(t, reopen)
			check(ks, "after a clean restart")
			mustClose(t, ks)
		})
	}
}

// TestCheckpointBackground: the background loop checkpoints a shard once its log has grown by
// the interval.
func TestCheckpointBackground(t *testing.T) {
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	opts.Shards = 1
	opts.CheckpointInterval = 8 << 10
	ks := mustOpen(t, opts)
	defer mustClose(t, ks)
	se := ks.NewSession()
	for i := 0; i < 100; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("k%d", i), strings.Repeat("v", 100), 0)
	}
	ckptWaitFor(t, "a background checkpoint", func() bool { return ckptStats(ks).Written > 0 })
	st := ckptStats(ks)
	if st.Entries != 100 || st.TailBytes >= 8<<10 || st.LastUnixMs == 0 {
		t.Fatalf("after a background checkpoint: %+v", st)
	}
}

// TestCheckpointOff: with checkpoints off nothing is written, an old checkpoint is removed, and
// every start replays the whole log.
func TestCheckpointOff(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	for i := 0; i < 40; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("k%d", i), "v", 0)
	}
	mustClose(t, ks) // with a checkpoint
	opts.CheckpointInterval = -1
	ks = mustOpen(t, opts)
	if err := ks.Checkpoint(); !errors.Is(err, errCheckpointsOff) {
		t.Fatalf("Checkpoint with checkpoints off: %v", err)
	}
	mustPut(t, ks, ks.NewSession(), 0, "k0", "w", 0)
	st := ckptStats(ks)
	mustClose(t, ks)
	if st.LoadedEntries != 0 || st.ReplayedRecords != 40 {
		t.Fatalf("with checkpoints off: %+v", st)
	}
	for i := 0; i < opts.Shards; i++ {
		if _, err := mem.Stat(filepath.Join(opts.Dir, fmt.Sprintf("shard-%03d", i), ckptName)); err == nil {
			t.Fatalf("shard %d still has a checkpoint", i)
		}
	}
	ks = mustOpen(t, opts)
	defer mustClose(t, ks)
	wantValue(t, ks, 0, "k0", "w")
	if st := ckptStats(ks); st.ReplayedRecords != 41 {
		t.Fatalf("second start with checkpoints off: %+v", st)
	}
}

// TestCheckpointCorruptRecordNotServed: a record the checkpoint points at is damaged on disk
// afterwards. Unlike a full replay, loading does not read it, so the key keeps pointing at it;
// every read refuses it as corrupt instead of serving its bytes.
func TestCheckpointCorruptRecordNotServed(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	opts.Shards = 1
	opts.SegmentSize = 1 << 10
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	mustPut(t, ks, se, 0, "k", strings.Repeat("value ", 10), 0)
	for i := 0; i < 20; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("fill%d", i), strings.Repeat("f", 100), 0)
	}
	s := ks.shards[0]
	s.mu.RLock()
	i, _, _ := s.ix.find(uint32(hashKey(0, []byte("k"))), 0, []byte("k"))
	e := *s.ix.entry(i)
	s.mu.RUnlock()
	mustClose(t, ks)
	f, err := mem.OpenReadWrite(filepath.Join(opts.Dir, "shard-000", fmt.Sprintf("%08d.seg", e.seg)))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{'X'}, int64(e.off)+vlog.HeaderSize+1+20)
	f.Sync()
	f.Close()
	ks = mustOpen(t, opts)
	defer mustClose(t, ks)
	if st := ckptStats(ks); st.LoadedEntries == 0 {
		t.Fatalf("checkpoint not loaded: %+v", st)
	}
	served := false
	if _, err := ks.getBytes(0, []byte("k"), func([]byte, Meta) { served = true }); !errors.Is(err, ErrCorrupt) || served {
		t.Fatalf("Get of a corrupt record: err %v, served %v", err, served)
	}
	wantValue(t, ks, 0, "fill0", strings.Repeat("f", 100))
}

// TestCheckpointConcurrentWriters takes checkpoints in a loop, in chunks of one entry, while
// writers put and delete their own keys; every write acknowledged before the crash is in the
// recovered keyspace.
func TestCheckpointConcurrentWriters(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	opts.ckptChunk = 1
	opts.SegmentSize = 4 << 10
	ks := mustOpen(t, opts)
	const workers, keysPer = 4, 50
	ops := 1500
	if testing.Short() {
		ops = 400
	}
	final := make([]map[string]string, workers)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	ckptDone := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				ckptDone <- n
				return
			default:
			}
			if err := ks.Checkpoint(); err != nil {
				t.Error(err)
			}
			n++
		}
	}()
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			se := ks.NewSession()
			m := map[string]string{}
			for i := 0; i < ops; i++ {
				k := fmt.Sprintf("w%d:%d", g, rng.IntN(keysPer))
				if rng.IntN(4) == 0 {
					if err := ks.Update(se, []Key{{0, []byte(k)}}, func(tx *Tx) error { tx.Delete(0); return nil }); err != nil {
						t.Error(err)
						return
					}
					delete(m, k)
				} else {
					v := fmt.Sprintf("%s=%d", k, i)
					if err := ks.Put(se, 0, []byte(k), []byte(v), 0, TypeString); err != nil {
						t.Error(err)
						return
					}
					m[k] = v
				}
				if err := se.Wait(); err != nil {
					t.Error(err)
					return
				}
			}
			final[g] = m
		}()
	}
	wg.Wait()
	close(stop)
	n := <-ckptDone
	crashed := mustOpen(t, testOpts(mem.CrashClone(), clk))
	defer mustClose(t, crashed)
	defer mustClose(t, ks)
	got, err := stateOf(crashed, opts.Databases)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for g := 0; g < workers; g++ {
		total += len(final[g])
		for k, v := range final[g] {
			if got[dbKey{0, k}].val != v {
				t.Fatalf("%s = %v, want %q", k, got[dbKey{0, k}], v)
			}
		}
	}
	if len(got) != total {
		t.Fatalf("%d keys recovered, %d written", len(got), total)
	}
	t.Logf("%d checkpoints during %d writes; recovery %+v", n, workers*ops, ckptStats(crashed))
}

// TestCheckpointKeyCopiedTwice: between two chunks of a checkpoint a key already copied is
// deleted and put again into a later entry (the one another deleted key freed), so the copy
// holds the key twice; loading keeps one entry, the later copy.
func TestCheckpointKeyCopiedTwice(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	opts.Shards = 1
	opts.ckptChunk = 1
	var h ckptHooks
	h.install(&opts)
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	for i := 0; i < 10; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("k%d", i), "old", 0)
	}
	del := func(k string) {
		if err := ks.Update(se, []Key{{0, []byte(k)}}, func(tx *Tx) error { tx.Delete(0); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	chunks := 0
	h.between = func() {
		if chunks++; chunks == 2 { // k0 (entry 0) and k1 are copied
			del("k0")
			del("k8") // frees entry 8, which the next insert takes
			mustPut(t, ks, se, 0, "k0", "new", 0)
		}
	}
	if err := ks.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	h.between = nil
	if n := ckptStats(ks).Entries; n != 10 {
		t.Fatalf("checkpoint holds %d entries, want 10 (9 keys, k0 twice)", n)
	}
	reopen := opts
	reopen.FS = mem.CrashClone()
	ks2 := mustOpen(t, reopen)
	got, err := stateOf(ks2, opts.Databases)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 9 || got[dbKey{0, "k0"}].val != "new" || ks2.DBSize(nil, 0) != 9 {
		t.Fatalf("recovered %v, DBSize %d", got, ks2.DBSize(nil, 0))
	}
	mustClose(t, ks2)

	// The loader alone: of two copies of a key, the later one defines the entry.
	s := ks2.shards[0]
	s.ix, _ = newIndex()
	defer s.ix.release()
	for _, seg := range []uint32{7, 9} {
		if err := s.loadEntryLocked(ks2, &ckptEntry{seg: seg, vlen: 3, key: []byte("dup")}); err != nil {
			t.Fatal(err)
		}
	}
	i, _, ok := s.ix.find(uint32(hashKey(0, []byte("dup"))), 0, []byte("dup"))
	if !ok || s.ix.count != 1 || s.ix.entry(i).seg != 9 || s.keys[0] != 1 {
		t.Fatalf("after loading a key twice: found %v, count %d, seg %d, keys %d", ok, s.ix.count, s.ix.entry(i).seg, s.keys[0])
	}
	mustClose(t, ks)
}
