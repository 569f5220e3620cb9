package keyspace

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// checkAccounting compares every segment's live bytes with the records the index points at
// (chunks of chunked values included, once the queue of dead manifests is read), and checks that
// no entry points into a segment the log does not have.
func checkAccounting(ks *Keyspace) error {
	for _, s := range ks.shards {
		var live map[uint32]int64
		var segs []vlog.SegmentStat
		for try := 0; ; try++ {
			ks.drainDeadManifests(s)
			s.mu.Lock()
			if len(s.deadMans) > 0 { // a background expiry queued one meanwhile
				s.mu.Unlock()
				if try == 100 {
					return fmt.Errorf("shard %d: dead manifests stay queued", s.id)
				}
				continue
			}
			var err error
			live, err = ks.indexLiveLocked(s)
			segs = s.log.SegmentStats()
			s.mu.Unlock()
			if err != nil {
				return fmt.Errorf("shard %d: %w", s.id, err)
			}
			break
		}
		have := map[uint32]bool{}
		for _, g := range segs {
			if g.Pending {
				continue
			}
			have[g.ID] = true
			if g.Live() != live[g.ID] || g.Stale < 0 || g.Chunks < 0 || g.Stale+g.Chunks > g.Dead || g.Dead > g.Size {
				return fmt.Errorf("shard %d segment %d: %+v, but the index points at %d bytes of it", s.id, g.ID, g, live[g.ID])
			}
		}
		for id, n := range live {
			if !have[id] {
				return fmt.Errorf("shard %d: the index points at %d bytes of segment %d, which the log does not have", s.id, n, id)
			}
		}
	}
	return nil
}

// reclaimNow collects segment id of s, unthrottled and whatever it costs, trying again while a
// chunked value removed in the background (active expiry) keeps it for the next round
// (errReclaimLater).
func reclaimNow(ks *Keyspace, s *shard, id uint32) error { return reclaimRetry(ks, s, id, true) }

func reclaimRetry(ks *Keyspace, s *shard, id uint32, force bool) error {
	for try := 0; ; try++ {
		err := ks.reclaimSegment(s, id, false, force)
		if !errors.Is(err, errReclaimLater) || try == 100 {
			return err
		}
	}
}

// reclaimRandom collects up to n sealed segments with dead bytes, chosen at random whatever the
// policy says, so that segments are collected in every order.
func reclaimRandom(ks *Keyspace, rng *rand.Rand, n int) (int, error) {
	type cand struct {
		s  *shard
		id uint32
	}
	var cands []cand
	for _, s := range ks.shards {
		for _, g := range s.log.SegmentStats() {
			if !g.Active && !g.Pending && g.Dead > 0 {
				cands = append(cands, cand{s, g.ID})
			}
		}
	}
	rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	cands = cands[:min(n, len(cands))]
	for i, c := range cands {
		if err := reclaimNow(ks, c.s, c.id); err != nil {
			return i, err
		}
	}
	return len(cands), nil
}

// reclaimPolicy runs the collector's policy, unthrottled, for up to rounds rounds of one segment
// per shard. It returns the segments collected and whether the policy ran out of work.
func reclaimPolicy(ks *Keyspace, rounds int) (int, bool, error) {
	n := 0
	for r := 0; r < rounds; r++ {
		did := false
		for _, s := range ks.shards {
			id, ok := ks.pickVictim(s)
			if !ok {
				continue
			}
			err := reclaimRetry(ks, s, id, false)
			if errors.Is(err, errReclaimDeferred) {
				continue // as the background loop: not picked again until it holds more garbage
			}
			if err != nil {
				return n, false, err
			}
			did = true
			n++
		}
		if !did {
			return n, true, nil
		}
	}
	return n, false, nil
}

// reclaimUntilIdle runs the policy until it finds nothing to do; a policy that never settles
// (collecting without freeing) fails the test.
func reclaimUntilIdle(t testing.TB, ks *Keyspace) int {
	t.Helper()
	n, idle, err := reclaimPolicy(ks, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if !idle {
		t.Fatalf("reclamation did not settle after %d segments", n)
	}
	if err := checkAccounting(ks); err != nil {
		t.Fatal(err)
	}
	return n
}

// reclaim is one reclamation step of a model workload: a few segments at random, or the policy.
func (w *workload) reclaim() {
	w.t.Helper()
	var n int
	var err error
	if w.rng.IntN(2) == 0 {
		n, err = reclaimRandom(w.ks, w.rng, 1+w.rng.IntN(4))
		w.notef("reclaim %d random segments", n)
	} else {
		n, _, err = reclaimPolicy(w.ks, 2)
		w.notef("reclaim %d segments by policy", n)
	}
	if err != nil {
		w.fatalf("reclaim: %v", err)
	}
	if err := checkAccounting(w.ks); err != nil {
		w.fatalf("after reclaim: %v", err)
	}
	// Sometimes an index checkpoint too, so that recoveries load one and replay copies made
	// after it.
	if w.rng.IntN(3) == 0 {
		w.notef("checkpoint")
		if err := w.ks.Checkpoint(); err != nil && !errors.Is(err, errCheckpointsOff) {
			w.fatalf("checkpoint: %v", err)
		}
	}
}

func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReclaimOverwriteBackground overwrites the same keys many times with the background
// collector on: once it has caught up, disk use is within twice the live data, and every value
// (moved or not) reads back, before and after a restart.
func TestReclaimOverwriteBackground(t *testing.T) {
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	opts.SegmentSize = 16 << 10
	opts.Fsync = vlog.FsyncEverysec
	opts.ReclaimRate = 1 << 30
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	const keys, rounds = 2000, 10
	val := func(r, k int) string { return fmt.Sprintf("%d:%d:%s", r, k, strings.Repeat("v", 150+k%100)) }
	for r := 0; r < rounds; r++ {
		for k := 0; k < keys; k++ {
			if err := ks.Put(se, 0, []byte(fmt.Sprint("key", k)), []byte(val(r, k)), 0, TypeString); err != nil {
				t.Fatal(err)
			}
		}
		if err := se.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	ks.SetReclaimRate(1 << 30) // wake the collector instead of waiting for its tick
	var st Stats
	eventually(t, 60*time.Second, "disk use within twice the live data", func() bool {
		st = ks.Stats(nil)
		return st.Log.DiskBytes <= 2*st.Reclaim.LiveBytes
	})
	t.Logf("disk %d bytes, live %d, dead %d; reclaimed %d segments, moved %d bytes, freed %d",
		st.Log.DiskBytes, st.Reclaim.LiveBytes, st.Reclaim.DeadBytes, st.Reclaim.Segments, st.Reclaim.BytesMoved, st.Reclaim.BytesFreed)
	if st.Reclaim.Segments == 0 || st.Reclaim.BytesFreed == 0 {
		t.Fatalf("nothing reclaimed: %+v", st.Reclaim)
	}
	check := func(ks *Keyspace) {
		t.Helper()
		for k := 0; k < keys; k++ {
			wantValue(t, ks, 0, fmt.Sprint("key", k), val(rounds-1, k))
		}
		if n := ks.DBSize(nil, 0); n != keys {
			t.Fatalf("DBSize %d, want %d", n, keys)
		}
	}
	check(ks)
	// The collector may still be moving records (a move in flight counts its copy before the
	// original is dropped): compare with its accounting once it is at rest.
	var before Stats
	eventually(t, 60*time.Second, "the collector at rest", func() bool {
		a := ks.Stats(nil)
		time.Sleep(200 * time.Millisecond)
		before = ks.Stats(nil)
		return a.Reclaim.Segments == before.Reclaim.Segments && a.Reclaim.BytesMoved == before.Reclaim.BytesMoved &&
			a.Reclaim.LiveBytes == before.Reclaim.LiveBytes
	})
	mustClose(t, ks)
	opts.ReclaimRate = 0
	ks = mustOpen(t, opts)
	defer mustClose(t, ks)
	check(ks)
	if err := checkAccounting(ks); err != nil {
		t.Fatal(err)
	}
	if st2 := ks.Stats(nil); st2.Reclaim.LiveBytes != before.Reclaim.LiveBytes {
		t.Fatalf("live bytes %d after the restart, %d before", st2.Reclaim.LiveBytes, before.Reclaim.LiveBytes)
	}
}

// TestReclaimDeletedAndExpired deletes half the keys and lets the other half expire: their
// space comes back, down to about one segment a shard, and none of them returns on restart.
func TestReclaimDeletedAndExpired(t *testing.T) {
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	opts.SegmentSize = 8 << 10
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	const keys = 3000
	for k := 0; k < keys; k++ {
		var exp int64
		if k%2 == 1 {
			exp = clk.After(1000)
		}
		mustPut(t, ks, se, 0, fmt.Sprint("key", k), strings.Repeat("x", 200), exp)
	}
	before := ks.Stats(nil).Log.DiskBytes
	for k := 0; k < keys; k += 2 {
		err := ks.Update(se, []Key{{DB: 0, Key: []byte(fmt.Sprint("key", k))}}, func(tx *Tx) error {
			tx.Delete(0)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2000)
	for _, s := range ks.shards { // the active expiry cycle, run to the end
		for ks.expireShard(s) > 0 {
		}
	}
	if n := ks.DBSize(nil, 0); n != 0 {
		t.Fatalf("%d keys left", n)
	}
	n := reclaimUntilIdle(t, ks)
	st := ks.Stats(nil)
	t.Logf("disk %d bytes before, %d after reclaiming %d segments (%d segment files); live %d, dead %d, records kept %d",
		before, st.Log.DiskBytes, n, st.Log.Segments, st.Reclaim.LiveBytes, st.Reclaim.DeadBytes, st.Reclaim.RecordsKept)
	if st.Reclaim.LiveBytes != 0 || st.Log.DiskBytes > int64(opts.Shards)*opts.SegmentSize {
		t.Fatalf("disk %d bytes (live %d) after deleting and expiring everything; want at most a segment a shard", st.Log.DiskBytes, st.Reclaim.LiveBytes)
	}
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	defer mustClose(t, ks)
	if n := ks.DBSize(nil, 0); n != 0 {
		t.Fatalf("%d keys came back after the restart: %v", n, keysOf(ks, 0)[:min(5, int(n))])
	}
}

// reclaimScenario drives one shard through writes and collections, crashing at every step of
// each collection and comparing each recovered keyspace with the model.
type reclaimScenario struct {
	t     *testing.T
	clk   *testClock
	mem   *vfs.MemFS
	cr    *crasher
	opts  Options
	ks    *Keyspace
	se    *Session
	model map[dbKey]mval
	fills int
}

// newReclaimScenarioOpts starts a scenario on one shard with tiny segments, its options then
// changed by set (nil: none).
func newReclaimScenarioOpts(t *testing.T, checkpoints bool, set func(*Options)) *reclaimScenario {
	c := &reclaimScenario{t: t, clk: newTestClock(), mem: vfs.NewMem(), model: map[dbKey]mval{}}
	c.cr = &crasher{mem: c.mem}
	c.opts = testOpts(vfs.NewErrorFS(c.mem, c.cr), c.clk)
	c.opts.Shards = 1
	c.opts.SegmentSize = 1 << 10
	if !checkpoints {
		c.opts.CheckpointInterval = -1
	}
	if set != nil {
		set(&c.opts)
	}
	c.ks = mustOpen(t, c.opts)
	c.se = c.ks.NewSession()
	return c
}

func (c *reclaimScenario) shard() *shard { return c.ks.shards[0] }

func (c *reclaimScenario) put(db int, key, val string, exp int64) {
	mustPut(c.t, c.ks, c.se, db, key, val, exp)
	c.model[dbKey{db, key}] = mval{val, exp}
}

func (c *reclaimScenario) update(db int, key string, fn func(tx *Tx)) {
	c.t.Helper()
	err := c.ks.Update(c.se, []Key{{DB: db, Key: []byte(key)}}, func(tx *Tx) error { fn(tx); return nil })
	if err == nil {
		err = c.se.Wait()
	}
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c *reclaimScenario) del(db int, key string) {
	c.update(db, key, func(tx *Tx) { tx.Delete(0) })
	delete(c.model, dbKey{db, key})
}

func (c *reclaimScenario) expire(db int, key string, at int64) {
	c.update(db, key, func(tx *Tx) { tx.SetExpire(0, at) })
	v := c.model[dbKey{db, key}]
	v.exp = at
	c.model[dbKey{db, key}] = v
}

func (c *reclaimScenario) flushDB(db int) {
	if err := c.ks.FlushDB(c.se, db); err != nil {
		c.t.Fatal(err)
	}
	if err := c.se.Wait(); err != nil {
		c.t.Fatal(err)
	}
	for k := range c.model {
		if k.db == db {
			delete(c.model, k)
		}
	}
}

func (c *reclaimScenario) active() uint32 {
	segs := c.shard().log.SegmentStats()
	return segs[len(segs)-1].ID
}

// seal writes filler keys (in database 2) until the active segment is sealed, and returns it.
func (c *reclaimScenario) seal() uint32 {
	id := c.active()
	for c.active() == id {
		c.fills++
		c.put(2, fmt.Sprint("fill", c.fills), strings.Repeat("f", 100), 0)
	}
	return id
}

func (c *reclaimScenario) checkpoint() {
	if err := c.ks.Checkpoint(); err != nil {
		c.t.Fatal(err)
	}
}

// check compares ks with the model, as visible now.
func (c *reclaimScenario) check(ks *Keyspace, when string) {
	c.t.Helper()
	got, err := stateOf(ks, c.opts.Databases)
	if err != nil {
		c.t.Fatalf("%s: %v", when, err)
	}
	now := c.clk.Now()
	for k, v := range c.model {
		if g, ok := got[k]; v.visible(now) && (!ok || g != v) {
			c.t.Fatalf("%s: %v = %v (present %v), want %v", when, k, g, ok, v)
		}
	}
	for k, g := range got {
		if v, ok := c.model[k]; !ok || !v.visible(now) {
			c.t.Fatalf("%s: %v = %v is back; the model has %v (present %v)", when, k, g, v, ok)
		}
	}
	if err := checkAccounting(ks); err != nil {
		c.t.Fatalf("%s: %v", when, err)
	}
}

// collect collects segment id, taking a crash clone before every file-system change it makes
// and one after it, and checks the keyspace each clone recovers to.
func (c *reclaimScenario) collect(id uint32) {
	c.t.Helper()
	c.cr.mu.Lock()
	c.cr.every, c.cr.clones = true, nil
	c.cr.mu.Unlock()
	err := reclaimNow(c.ks, c.shard(), id)
	c.cr.mu.Lock()
	c.cr.every = false
	clones := append(c.cr.clones, c.mem.CrashClone())
	c.cr.clones = nil
	c.cr.mu.Unlock()
	if err != nil {
		c.t.Fatalf("reclaim segment %d: %v", id, err)
	}
	if c.shard().log.HasSegment(id) {
		c.t.Fatalf("segment %d still there after its collection", id)
	}
	c.check(c.ks, fmt.Sprintf("after collecting segment %d", id))
	for i, clone := range clones {
		opts := c.opts
		opts.FS = clone
		ks := mustOpen(c.t, opts)
		c.check(ks, fmt.Sprintf("crash %d of %d while collecting segment %d", i+1, len(clones), id))
		mustClose(c.t, ks)
	}
}

// finish collects everything the policy wants, then restarts and checks.
func (c *reclaimScenario) finish() {
	c.t.Helper()
	reclaimUntilIdle(c.t, c.ks)
	c.check(c.ks, "after reclaiming everything")
	c.restart()
	mustClose(c.t, c.ks)
}

func (c *reclaimScenario) restart() {
	c.t.Helper()
	mustClose(c.t, c.ks)
	c.ks = mustOpen(c.t, c.opts)
	c.se = c.ks.NewSession()
	c.check(c.ks, "after a restart")
}

// TestReclaimCrashEachStep collects segments in the orders that could resurrect a key or lose
// one, with a crash before every file-system change of each collection: a deleted key whose
// put lives in an older segment, a key removed by expiry (which writes no record), an expire
// record whose put lives in an older segment, and a flush record copied past a newer put.
// Each case runs with a full replay and from an index checkpoint.
func TestReclaimCrashEachStep(t *testing.T) {
	runReclaimCases(t, nil, []reclaimCase{
		{"deleted", func(c *reclaimScenario, ckpt bool) {
			c.put(0, "victim", "v1", 0)
			s1 := c.seal()
			if ckpt {
				c.checkpoint()
			}
			c.del(0, "victim")
			s2 := c.seal()
			kept := c.ks.rc.kept.Load()
			c.collect(s2) // the tombstone must stay: s1 holds the dead put
			if c.ks.rc.kept.Load() == kept {
				c.t.Fatal("the tombstone was not kept")
			}
			c.collect(s1)
			c.finish()
		}},
		{"expired", func(c *reclaimScenario, ckpt bool) {
			c.put(0, "victim", "old", 0)
			s1 := c.seal()
			if ckpt {
				c.checkpoint()
			}
			c.put(0, "victim", "new", c.clk.After(100))
			s2 := c.seal()
			c.clk.Advance(200)
			c.collect(s2) // the expired put hides the old one: a tombstone replaces it
			c.collect(s1)
			c.finish()
		}},
		{"expire-record", func(c *reclaimScenario, ckpt bool) {
			c.put(0, "victim", "v", 0)
			s1 := c.seal()
			if ckpt {
				c.checkpoint()
			}
			c.expire(0, "victim", c.clk.After(1000))
			s2 := c.seal()
			c.collect(s2) // the key's put is in s1: the expire record stays
			c.restart()
			c.collect(s1)
			c.collect(c.seal())
			c.restart()
			c.clk.Advance(2000)
			c.check(c.ks, "after the key expired")
			c.finish()
		}},
		{"expire-then-move", func(c *reclaimScenario, ckpt bool) {
			c.put(0, "victim", "v", 0)
			s1 := c.seal()
			if ckpt {
				c.checkpoint()
			}
			c.expire(0, "victim", c.clk.After(1000))
			s2 := c.seal()
			c.collect(s1) // the copy carries the new expire-at...
			c.collect(s2) // ...so the expire record can go
			c.restart()
			c.finish()
		}},
		{"flushdb", func(c *reclaimScenario, ckpt bool) {
			c.put(0, "victim", "old", 0)
			c.put(1, "other", "kept", 0)
			s1 := c.seal()
			if ckpt {
				c.checkpoint()
			}
			c.flushDB(0)
			s2 := c.seal()
			c.put(0, "victim", "new", 0)
			c.collect(s2) // the flush record is copied past the new put
			c.restart()
			c.collect(s1)
			c.finish()
		}},
	})
}

// reclaimCase is a reclamation scenario, run with and without checkpoints by runReclaimCases.
type reclaimCase struct {
	name string
	run  func(c *reclaimScenario, ckpt bool)
}

// runReclaimCases runs each case as a subtest twice, without and with checkpoints, on a fresh
// scenario whose options set adjusts (nil: the defaults).
func runReclaimCases(t *testing.T, set func(*Options), cases []reclaimCase) {
	for _, tc := range cases {
		for _, ckpt := range []bool{false, true} {
			name := tc.name
			if ckpt {
				name += "-checkpoint"
			}
			t.Run(name, func(t *testing.T) { tc.run(newReclaimScenarioOpts(t, ckpt, set), ckpt) })
		}
	}
}

// TestModelReclaim is TestModel with reclamation steps (random segments, or the policy) between
// operations, and the segment accounting checked after each.
func TestModelReclaim(t *testing.T) {
	base := testSeed(t)
	total := scaledOps(6000)
	const perSeed = 1500
	for round := 0; round*perSeed < total; round++ {
		seed := base + uint64(round)
		ops := min(perSeed, total-round*perSeed)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			clk := newTestClock()
			opts := testOpts(vfs.NewMem(), clk)
			modelConfig(rng, &opts)
			if rng.IntN(2) == 0 {
				opts.CheckpointInterval = -1
			}
			w := newWorkload(t, seed, rng, clk, opts)
			restartEvery := 100 + rng.IntN(400)
			for i := 1; i <= ops; i++ {
				w.step()
				if rng.IntN(8) == 0 {
					w.reclaim()
				}
				if i%restartEvery == 0 {
					w.restart()
				}
				if i%97 == 0 {
					w.fullCheck(false)
				}
			}
			w.restart()
			if err := checkAccounting(w.ks); err != nil {
				w.fatalf("after the last restart: %v", err)
			}
			w.close()
		})
	}
}

// TestCrashReclaim crashes at random points, inside reclamation steps too, and checks every
// shard recovers to a prefix of its changes (crash_test.go).
func TestCrashReclaim(t *testing.T) {
	for _, cfg := range []struct {
		name string
		cfg  crashConfig
	}{
		{"always-mid", crashConfig{fsync: vlog.FsyncAlways, waitProb: 1, midOp: true, reclaimProb: 0.2}},
		{"always-mid-torn", crashConfig{fsync: vlog.FsyncAlways, waitProb: 0.8, midOp: true, random: true, reclaimProb: 0.2}},
		{"everysec-mid-torn", crashConfig{fsync: vlog.FsyncEverysec, waitProb: 0.9, syncProb: 0.05, random: true, midOp: true, reclaimProb: 0.2}},
	} {
		t.Run(cfg.name, func(t *testing.T) { crashRounds(t, 1200, cfg.cfg) })
	}
}

// TestCrashReclaimBackground runs writers on a few keys while the background collector works
// flat out, and takes crash clones as they go: every key recovers to a state at or after its
// last acknowledged write (appendfsync always), whatever the collector was doing.
func TestCrashReclaimBackground(t *testing.T) {
	seed := testSeed(t)
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	opts.SegmentSize = 2 << 10
	opts.ReclaimRate = 1 << 30
	ks := mustOpen(t, opts)
	const workers, keysPer = 3, 12
	perWorker := 1500
	if testing.Short() {
		perWorker = 400
	}
	type state struct {
		val     string
		present bool
	}
	var mu sync.Mutex
	history := map[string][]state{} // each key's states, in order; [0] is absent
	acked := map[string]int{}       // index of each key's last acknowledged state
	for g := 0; g < workers; g++ {
		for k := 0; k < keysPer; k++ {
			history[fmt.Sprintf("w%d:%d", g, k)] = []state{{}}
		}
	}
	check := func() {
		mu.Lock()
		ackedNow := maps.Clone(acked)
		mu.Unlock()
		c := mem.CrashClone()
		mu.Lock()
		hist := maps.Clone(history)
		mu.Unlock()
		o := opts
		o.FS, o.ReclaimRate = c, 0
		rks := mustOpen(t, o)
		defer mustClose(t, rks)
		for key, h := range hist {
			val, _, ok := getString(t, rks, 0, key)
			got := state{val, ok}
			if !slices.Contains(h[ackedNow[key]:], got) {
				t.Fatalf("%s recovered as %+v, no state at or after its acknowledged write %d (%+v)", key, got, ackedNow[key], h[ackedNow[key]])
			}
		}
		if err := checkAccounting(rks); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	tick := make(chan struct{})
	for g := 0; g < workers; g++ {
		wrng := rand.New(rand.NewPCG(seed, uint64(g)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			se := ks.NewSession()
			for i := 0; i < perWorker; i++ {
				key := fmt.Sprintf("w%d:%d", g, wrng.IntN(keysPer))
				st := state{fmt.Sprintf("%s=%d|%s", key, i, strings.Repeat("v", wrng.IntN(400))), wrng.IntN(5) != 0}
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
				if err == nil {
					err = se.Wait()
				}
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				acked[key] = len(history[key]) - 1
				mu.Unlock()
				if i%50 == 49 {
					tick <- struct{}{} // this worker waits for a crash check; the others go on
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	crashes := 0
	for running := true; running; {
		ks.SetReclaimRate(opts.ReclaimRate) // wake the collector rather than wait for its tick
		select {
		case <-done:
			running = false
		case <-tick:
			check()
			crashes++
		}
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	check()
	st := ks.Stats(nil).Reclaim
	mustClose(t, ks)
	t.Logf("%d crash points; the collector reclaimed %d segments, moved %d bytes", crashes+1, st.Segments, st.BytesMoved)
	if st.Segments == 0 {
		t.Fatal("the collector reclaimed nothing")
	}
}

// TestReplayFlushByVersion replays flush records after newer puts, as reclamation leaves them
// when it copies a flush record forward: only the entries older than the record go.
func TestReplayFlushByVersion(t *testing.T) {
	s := &shard{ix: newTestIndex(t), dbs: 16, keys: make([]int64, MaxDatabases), expires: make([]int64, MaxDatabases)}
	defer s.replayVer.free()
	ks := &Keyspace{}
	replay := func(kind vlog.Kind, db uint8, key string, version uint64) {
		t.Helper()
		h := vlog.Header{Kind: kind, DB: db, Version: version, ValLen: 3}
		if err := s.replayLocked(ks, &vlog.Record{Loc: vlog.Loc{Seg: 1, Off: uint32(version)}, Header: h, Key: []byte(key)}); err != nil {
			t.Fatal(err)
		}
	}
	has := func(db uint8, key string) bool {
		_, _, ok := s.ix.find(uint32(hashKey(db, []byte(key))), db, []byte(key))
		return ok
	}
	replay(vlog.KindPut, 0, "old", 1)
	replay(vlog.KindPut, 1, "other", 2)
	replay(vlog.KindPut, 0, "new", 5)
	replay(vlog.KindFlushDB, 0, "", 3) // a copy of a FLUSHDB made between "other" and "new"
	if has(0, "old") || !has(0, "new") || !has(1, "other") {
		t.Fatalf("after the copied FLUSHDB: old %v new %v other %v", has(0, "old"), has(0, "new"), has(1, "other"))
	}
	replay(vlog.KindPut, 1, "later", 7)
	replay(vlog.KindFlushAll, 0, "", 6) // a copied FLUSHALL
	if has(0, "new") || has(1, "other") || !has(1, "later") {
		t.Fatalf("after the copied FLUSHALL: new %v other %v later %v", has(0, "new"), has(1, "other"), has(1, "later"))
	}
	replay(vlog.KindFlushAll, 0, "", 8) // the usual case: newer than everything
	if s.ix.count != 0 || s.keys[1] != 0 {
		t.Fatalf("%d entries after FLUSHALL", s.ix.count)
	}
}

// TestReclaimConcurrentFlushes runs writers, FLUSHALL, FLUSHDB and rate changes (off and on
// again) while the background collector works flat out; afterwards the keyspace holds exactly
// the last values written, before and after a restart, and the accounting matches the index.
func TestReclaimConcurrentFlushes(t *testing.T) {
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	opts.SegmentSize = 2 << 10
	opts.Fsync = vlog.FsyncEverysec
	opts.ReclaimRate = 1 << 30
	ks := mustOpen(t, opts)
	const workers, keysPer = 3, 20
	ops := 3000
	if testing.Short() {
		ops = 800
	}
	val := func(g, k, i int) string { return fmt.Sprintf("w%d:%d:%d:%s", g, k, i, strings.Repeat("x", (i*7)%300)) }
	var wg sync.WaitGroup
	errc := make(chan error, workers+1)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			se := ks.NewSession()
			for i := 0; i < ops; i++ {
				k := (i * 13) % keysPer
				var err error
				if i%7 == 3 {
					err = ks.Update(se, []Key{{DB: g % 2, Key: []byte(fmt.Sprint("k", k))}}, func(tx *Tx) error { tx.Delete(0); return nil })
				} else {
					err = ks.Put(se, g%2, []byte(fmt.Sprintf("w%d:%d", g, k)), []byte(val(g, k, i)), 0, TypeString)
				}
				if err == nil {
					err = se.Wait()
				}
				if err != nil {
					errc <- err
					return
				}
				if i%20 == 0 {
					ks.SetReclaimRate(opts.ReclaimRate) // wake the collector rather than wait for its tick
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		se := ks.NewSession()
		for j := 0; j < 30; j++ {
			var err error
			switch j % 3 {
			case 0:
				err = ks.FlushAll(se)
			case 1:
				err = ks.FlushDB(se, 1)
			default:
				ks.SetReclaimRate(0)
				ks.SetReclaimRate(opts.ReclaimRate)
			}
			if err == nil {
				err = se.Wait()
			}
			if err != nil {
				errc <- err
				return
			}
			ks.SetReclaimRate(opts.ReclaimRate)
			ks.Lookup(nil, 0, []byte("w0:0")) // let the writers run between flushes
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	// The last word: every key written once more, in a known order.
	se := ks.NewSession()
	for g := 0; g < workers; g++ {
		for k := 0; k < keysPer; k++ {
			mustPut(t, ks, se, g%2, fmt.Sprintf("w%d:%d", g, k), val(g, k, ops), 0)
		}
	}
	check := func(ks *Keyspace) {
		t.Helper()
		for g := 0; g < workers; g++ {
			for k := 0; k < keysPer; k++ {
				wantValue(t, ks, g%2, fmt.Sprintf("w%d:%d", g, k), val(g, k, ops))
			}
		}
		if err := checkAccounting(ks); err != nil {
			t.Fatal(err)
		}
	}
	check(ks)
	st := ks.Stats(nil).Reclaim
	mustClose(t, ks)
	t.Logf("reclaimed %d segments, moved %d bytes", st.Segments, st.BytesMoved)
	ks = mustOpen(t, opts)
	defer mustClose(t, ks)
	check(ks)
	reclaimUntilIdle(t, ks)
	check(ks)
}

// TestPaceFor: the collector keeps up with the garbage clients make, at what a byte freed
// costs; goes at half that with little garbage on disk, at the floor with none being made;
// the configured rate caps it until the space bound nears, and past twice the live bytes
// nothing does.
func TestPaceFor(t *testing.T) {
	const mb = 1 << 20
	capRate := int64(64 * mb)
	for _, c := range []struct {
		name       string
		rate, cost float64
		r          float64
		want       int64
	}{
		{"keeps up with overwrites", 10 * mb, 3, 1.4, 30 * mb},
		{"little garbage: half", 10 * mb, 3, 1.2, 15 * mb},
		{"no new garbage: the floor", 0, 3, 1.4, reclaimFloor},
		{"capped", 100 * mb, 3, 1.4, capRate},
		{"pressure lifts the cap", 100 * mb, 3, 1.75, int64(float64(capRate) * 0.5 / 0.25)},
		{"behind: all the raised cap allows", 0, 3, 1.875, 4 * capRate},
		{"at twice: unbounded", 0, 3, 2, -1},
	} {
		if got := paceFor(c.rate, c.cost, c.r, capRate); got != c.want {
			t.Errorf("%s: paceFor(%v, %v, %v) = %d, want %d", c.name, c.rate, c.cost, c.r, got, c.want)
		}
	}
}

// blockRemove holds every removal of a segment file until release is closed, and says when the
// first one began.
type blockRemove struct {
	began   chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockRemove) MaybeError(op vfs.Op, path string) error {
	if op == vfs.OpRemove && strings.HasSuffix(path, ".seg") {
		b.once.Do(func() { close(b.began) })
		<-b.release
	}
	return nil
}

// TestReclaimRemovesFileOutsideShardLock: the collector removes an emptied segment's file after it
// lets go of the shard's lock, so writers of the shard do not wait for the unlink and the
// directory's sync (tens of milliseconds on a busy disk; a follower's applier stopped with them).
// Here the removal waits until the write is done: a collector that removed under the lock would
// never let the write finish.
func TestReclaimRemovesFileOutsideShardLock(t *testing.T) {
	clk := newTestClock()
	block := &blockRemove{began: make(chan struct{}), release: make(chan struct{})}
	opts := testOpts(vfs.NewErrorFS(vfs.NewMem(), block), clk)
	opts.Shards = 1
	opts.SegmentSize = 8 << 10
	opts.CheckpointInterval = -1
	ks := mustOpen(t, opts)
	released := false
	defer func() {
		if !released {
			close(block.release)
		}
	}()
	se := ks.NewSession()
	for round := 0; round < 2; round++ {
		for k := 0; k < 100; k++ {
			mustPut(t, ks, se, 0, fmt.Sprint("key", k), strings.Repeat("x", 200), 0)
		}
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	s := ks.shards[0]
	var victim uint32
	for _, g := range s.log.SegmentStats() {
		if !g.Active && g.Dead > 0 {
			victim = g.ID
			break
		}
	}
	if victim == 0 {
		t.Fatal("no sealed segment with dead records")
	}
	reclaimed := make(chan error, 1)
	go func() { reclaimed <- reclaimNow(ks, s, victim) }()
	select {
	case <-block.began:
	case err := <-reclaimed:
		t.Fatalf("segment %d reclaimed without removing a file: %v", victim, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the collector did not come to removing the segment's file")
	}
	wrote := make(chan error, 1)
	go func() { wrote <- ks.Put(ks.NewSession(), 0, []byte("during"), []byte("removal"), 0, TypeString) }()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write to the shard waited for the removal of a segment file")
	}
	released = true
	close(block.release)
	if err := <-reclaimed; err != nil {
		t.Fatal(err)
	}
	mustClose(t, ks)
}
