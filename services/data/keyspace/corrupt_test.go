package keyspace

// Keyspace-level recovery tests: damage to durable data refuses to start and is repaired on
// request, each key falling back to its newest intact record; a transaction over several shards
// is all there or all gone after any crash, and what followed an incomplete transaction in a
// shard's log goes with it.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// knownBug skips a test that fails because of a bug not fixed yet, unless LAVIK_KNOWN_BUGS=1 asks
// to see it fail.
func knownBug(t *testing.T, bug string) {
	t.Helper()
	if os.Getenv("LAVIK_KNOWN_BUGS") != "1" {
		t.Skip("known bug (LAVIK_KNOWN_BUGS=1 runs it): " + bug)
	}
}

// putRec is one put of a key as the index placed it in its shard's log.
type putRec struct {
	key      string
	val      string
	shard    int
	seg      uint32
	off, end int64
}

// locate returns where (db 0, key)'s entry points now.
func locate(t *testing.T, ks *Keyspace, key string) (shard int, seg, off uint32) {
	t.Helper()
	h := hashKey(0, []byte(key))
	s := ks.shardOf(h)
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, _, ok := s.ix.find(uint32(h), 0, []byte(key))
	if !ok {
		t.Fatalf("%q not in the index", key)
	}
	e := s.ix.entry(i)
	return s.id, e.seg, e.off
}

// logRecord is a record of a shard's log, marks included.
type logRecord struct {
	seg       uint32
	off, size int64
}

// shardRecords lists every record of shard's log in a copy of mem, in log order.
func shardRecords(t *testing.T, mem *vfs.MemFS, opts Options, shard int) []logRecord {
	t.Helper()
	l, err := vlog.Open(vlog.Options{FS: mem.CrashClone(), Dir: filepath.Join(opts.Dir, shardDirName(shard)),
		SegmentSize: opts.SegmentSize, Engine: opts.Engine, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out []logRecord
	if err := l.Replay(vlog.Loc{}, func(r *vlog.Record) error {
		out = append(out, logRecord{seg: r.Loc.Seg, off: int64(r.Loc.Off), size: r.Size()})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCorruptionInShardLog damages synced records of one shard's log after a clean Close, in its
// newest segment and in a sealed one, by a bit flip or a lost sector. Open refuses, naming the
// segment and the first damaged record; with RepairCorruption every key whose newest record is
// intact keeps its value, and a key whose newest record was damaged falls back to its newest
// intact record, or is missing if it has none.
func TestCorruptionInShardLog(t *testing.T) {
	for _, where := range []string{"newest", "sealed"} {
		for _, kind := range []vfs.DamageKind{vfs.BitFlip, vfs.SectorZeroed, vfs.SectorGarbage} {
			t.Run(fmt.Sprintf("%s/%v", where, kind), func(t *testing.T) {
				testCorruptionInShardLog(t, where, kind)
			})
		}
	}
}

func testCorruptionInShardLog(t *testing.T, where string, kind vfs.DamageKind) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	opts.Shards = 2
	opts.SegmentSize = 4 << 10
	// Falling back to an older record is full replay's policy (see TestCorruptRecordNotServed).
	opts.CheckpointInterval = -1
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	rng := rand.New(rand.NewPCG(uint64(kind), 5))
	var puts []putRec
	for round := 0; round < 5; round++ {
		for k := 0; k < 25; k++ {
			// Later rounds skip some keys, so that keys' newest records are spread over the
			// last few segments.
			if round == 4 && k%2 == 0 || round == 3 && k%3 == 0 {
				continue
			}
			key := fmt.Sprintf("key%02d", k)
			if round == 2 && k >= 20 {
				key = fmt.Sprintf("once%02d", k) // keys with a single record
			}
			val := fmt.Sprintf("%s=%d|%s", key, round, strings.Repeat("v", 30+rng.IntN(200)))
			mustPut(t, ks, se, 0, key, val, 0)
			shard, seg, off := locate(t, ks, key)
			puts = append(puts, putRec{key: key, val: val, shard: shard, seg: seg, off: int64(off),
				end: int64(off) + vlog.RecordSize(0, len(key), len(val))})
		}
	}
	mustClose(t, ks)

	// The damaged segment of shard 0.
	var segs []uint32
	for _, p := range puts {
		if p.shard == 0 && !slices.Contains(segs, p.seg) {
			segs = append(segs, p.seg)
		}
	}
	slices.Sort(segs)
	if len(segs) < 2 {
		t.Fatalf("shard 0 has %d segments, want at least 2", len(segs))
	}
	newest, oldest := map[string]putRec{}, map[string]putRec{}
	for _, p := range puts {
		newest[p.key] = p
		if _, ok := oldest[p.key]; !ok {
			oldest[p.key] = p
		}
	}
	recs := shardRecords(t, mem, opts, 0)
	// Damage a record in the middle of the segment that is the newest record of a key with an
	// older one, so that the key has something to fall back to: in the newest segment, or in
	// the latest sealed one that has such a record.
	cands := []uint32{segs[len(segs)-1]}
	if where == "sealed" {
		cands = slices.Clone(segs[:len(segs)-1])
		slices.Reverse(cands)
	}
	var seg uint32
	var inSeg []logRecord
	var victim putRec
	for _, c := range cands {
		inSeg = inSeg[:0]
		for _, r := range recs {
			if r.seg == c {
				inSeg = append(inSeg, r)
			}
		}
		for _, p := range puts {
			if p.shard == 0 && p.seg == c && newest[p.key] == p && oldest[p.key] != p &&
				p.off > inSeg[len(inSeg)/3].off && p.end < inSeg[len(inSeg)-2].off {
				seg, victim = c, p
				break
			}
		}
		if seg != 0 {
			break
		}
	}
	if victim.key == "" {
		t.Fatal("no record to damage in the middle of a segment")
	}
	path := filepath.Join(opts.Dir, shardDirName(0), fmt.Sprintf("%08d.seg", seg))
	var d0, d1 int64
	switch kind {
	case vfs.BitFlip:
		d, err := mem.FlipBit(path, victim.off+vlog.HeaderSize+int64(len(victim.key))+10, 6)
		if err != nil {
			t.Fatal(err)
		}
		d0, d1 = d.Off, d.Off+d.Len
	default:
		// The 512-byte sector holding the victim's start: it spans record boundaries.
		d, err := mem.LoseSector(path, victim.off, 512, kind, rand.New(rand.NewPCG(2, 2)))
		if err != nil {
			t.Fatal(err)
		}
		d0, d1 = d.Off, d.Off+d.Len
	}
	// damaged says whether bytes [off, end) of a segment of shard 0 were damaged.
	damaged := func(seg2 uint32, off, end int64) bool { return seg2 == seg && off < d1 && d0 < end }
	first, next := int64(-1), int64(0)
	for _, r := range inSeg {
		switch {
		case damaged(r.seg, r.off, r.off+r.size) && first < 0:
			first = r.off
		case !damaged(r.seg, r.off, r.off+r.size) && first >= 0 && next == 0:
			next = r.off
		}
	}
	if first < 0 || next == 0 {
		t.Fatalf("damage at [%d, %d) covers no record, or the segment's last one", d0, d1)
	}

	_, err := Open(opts)
	var ce *vlog.CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) ||
		ce.Segment != path || ce.Offset != first || ce.Length != next-first {
		t.Fatalf("open: %v, want a vlog.CorruptionError at %s:%d+%d", err, path, first, next-first)
	}

	// What each key must hold: its newest intact record.
	want := map[string]string{}
	fellBack, lost := 0, 0
	for _, p := range puts {
		if p.shard != 0 || !damaged(p.seg, p.off, p.end) {
			want[p.key] = p.val
		}
	}
	for key, p := range newest {
		if p.shard == 0 && damaged(p.seg, p.off, p.end) {
			if _, ok := want[key]; ok {
				fellBack++
			} else {
				lost++
			}
		}
	}
	if fellBack == 0 {
		t.Fatal("no key falls back to an older record; the test needs one")
	}
	ropts := opts
	ropts.RepairCorruption = true
	for _, o := range []Options{ropts, opts} { // repair, then a clean reopen
		ks = mustOpen(t, o)
		for key := range newest {
			if v, ok := want[key]; ok {
				wantValue(t, ks, 0, key, v)
			} else {
				wantMissing(t, ks, 0, key)
			}
		}
		if n := ks.DBSize(nil, 0); n != int64(len(want)) {
			t.Fatalf("%d keys, want %d", n, len(want))
		}
		wantCorrupt := uint64(0)
		if o.RepairCorruption {
			wantCorrupt = 1
		}
		if st := ks.Stats(nil); st.Log.Corrupt != wantCorrupt {
			t.Fatalf("repair %v: %d corrupt ranges found", o.RepairCorruption, st.Log.Corrupt)
		}
		mustClose(t, ks)
	}
	q := fmt.Sprintf("%s/quarantine/%08d.seg.%d.bad", filepath.Dir(path), seg, first)
	if fi, err := mem.Stat(q); err != nil || fi.Size() != next-first {
		t.Fatalf("quarantine file %s: %v, want %d bytes", q, err, next-first)
	}
	t.Logf("damage [%d, %d): %d keys fell back to an older record, %d are gone", d0, d1, fellBack, lost)
}

// TestRepairWithCheckpoint: the shard's index was checkpointed at Close, and the newest record
// of a key, in the newest segment, goes bad. The repair at Open writes a mark over it; the
// checkpoint's entry for the key points there, so the key must not come from the checkpoint: it
// falls back to its previous record, at the repairing start and at a start after a crash that
// followed it.
func TestRepairWithCheckpoint(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	opts.Shards = 1
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	mustPut(t, ks, se, 0, "k", "old value", 0)
	for i := 0; i < 10; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("other%d", i), strings.Repeat("o", 100), 0)
	}
	newVal := strings.Repeat("new value ", 10)
	mustPut(t, ks, se, 0, "k", newVal, 0)
	mustPut(t, ks, se, 0, "after", "a", 0)
	_, seg, off := locate(t, ks, "k")
	mustClose(t, ks)
	if _, err := mem.Stat(filepath.Join(opts.Dir, shardDirName(0), ckptName)); err != nil {
		t.Fatalf("no checkpoint written at close: %v", err)
	}
	path := filepath.Join(opts.Dir, shardDirName(0), fmt.Sprintf("%08d.seg", seg))
	if _, err := mem.FlipBit(path, int64(off)+vlog.HeaderSize+1+20, 1); err != nil {
		t.Fatal(err)
	}
	var ce *vlog.CorruptionError
	if _, err := Open(opts); !errors.As(err, &ce) || ce.Offset != int64(off) {
		t.Fatalf("open: %v, want a corruption error at offset %d", err, off)
	}
	check := func(ks *Keyspace) {
		t.Helper()
		wantValue(t, ks, 0, "k", "old value")
		wantValue(t, ks, 0, "after", "a")
		wantValue(t, ks, 0, "other9", strings.Repeat("o", 100))
	}
	ropts := opts
	ropts.RepairCorruption = true
	ks = mustOpen(t, ropts)
	check(ks)
	crashed := mem.CrashClone()
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	check(ks)
	mustClose(t, ks)
	copts := testOpts(crashed, clk)
	copts.Shards = 1
	ks = mustOpen(t, copts)
	check(ks)
	mustClose(t, ks)
}

// multiKeyCmd is one multi-key command of TestCrashTxAtomicity and what it does: each key's new
// value, or nil for a removal.
type multiKeyCmd struct {
	name    string
	run     func() error
	effects map[string]*string
}

// TestCrashTxAtomicity crashes before every mutating file-system call (keeping a random part of
// the unsynced bytes) of a few rounds of multi-shard commands: an MSET of fresh values over every
// shard, a RENAME of one of its keys to another shard, a DEL of two others. After recovery each
// command is all there or all gone, and one that follows another in a shard's log is there only
// if that one is; under appendfsync always every command whose Wait returned is there.
func TestCrashTxAtomicity(t *testing.T) {
	for _, fsync := range []vlog.Fsync{vlog.FsyncAlways, vlog.FsyncEverysec} {
		t.Run(fsync.String(), func(t *testing.T) { testCrashTxAtomicity(t, fsync) })
	}
}

func testCrashTxAtomicity(t *testing.T, fsync vlog.Fsync) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 31))
	clk := newTestClock()
	mem := vfs.NewMem()
	cr := &crasher{mem: mem, rng: rand.New(rand.NewPCG(seed, 32))}
	const shards, rounds = 4, 6
	opts := testOpts(vfs.NewErrorFS(mem, cr), clk)
	opts.Shards = shards
	opts.SegmentSize = 2 << 10
	opts.Fsync = fsync
	ks := mustOpen(t, opts)
	defer func() { ks.Close() }()
	se := ks.NewSession()
	for i := 0; i < 40; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("bg%d", i), strings.Repeat("b", 100), 0)
	}
	value := func(what string) string { return what + "|" + strings.Repeat("v", 50+rng.IntN(400)) }
	str := func(s string) *string { return &s }
	done := map[string]string{} // every earlier round's keys, as its commands left them
	var clonesChecked, cuts int
	for round := 0; round < rounds; round++ {
		if err := ks.syncAll(); err != nil { // earlier rounds are durable from here on
			t.Fatal(err)
		}
		k := make([]string, shards)
		for s := range k {
			k[s] = keyInShard(shards, 0, s, fmt.Sprintf("r%d.k%d.", round, s))
		}
		// The destination shares a shard with the DEL (so the DEL's part there follows the
		// RENAME's) or with neither.
		dstShard := []int{1, 3}[rng.IntN(2)]
		dst := keyInShard(shards, 0, dstShard, fmt.Sprintf("r%d.dst.", round))
		vals := make([]string, shards)
		for s := range vals {
			vals[s] = value(fmt.Sprintf("r%d.v%d", round, s))
		}
		ops := []multiKeyCmd{
			{"mset", func() error {
				return ks.Update(se, toKeys([]dbKey{{0, k[0]}, {0, k[1]}, {0, k[2]}, {0, k[3]}}), func(tx *Tx) error {
					for i := range k {
						tx.Put(i, []byte(vals[i]), 0, TypeString)
					}
					return nil
				})
			}, map[string]*string{k[0]: str(vals[0]), k[1]: str(vals[1]), k[2]: str(vals[2]), k[3]: str(vals[3])}},
			{"rename", func() error {
				return ks.Update(se, toKeys([]dbKey{{0, k[0]}, {0, dst}}), func(tx *Tx) error {
					v, _, err := tx.Value(0)
					if err != nil {
						return err
					}
					tx.Delete(0)
					tx.Put(1, v, 0, TypeString)
					return nil
				})
			}, map[string]*string{k[0]: nil, dst: str(vals[0])}},
			{"del", func() error {
				return ks.Update(se, toKeys([]dbKey{{0, k[1]}, {0, k[2]}}), func(tx *Tx) error {
					tx.Delete(0)
					tx.Delete(1)
					return nil
				})
			}, map[string]*string{k[1]: nil, k[2]: nil}},
		}
		// The sets of commands a recovery may keep: the RENAME and the DEL need the MSET, and
		// the DEL needs the RENAME when they share a shard.
		allowed := [][]int{{}, {0}, {0, 1}, {0, 1, 2}}
		if dstShard == 3 {
			allowed = append(allowed, []int{0, 2})
		}
		roundKeys := append(slices.Clone(k), dst)

		cr.mu.Lock()
		cr.every, cr.clones = true, nil
		cr.mu.Unlock()
		ackedAt := make([]int, len(ops))
		for i, op := range ops {
			if err := op.run(); err != nil {
				t.Fatalf("round %d %s: %v", round, op.name, err)
			}
			if err := se.Wait(); err != nil {
				t.Fatalf("round %d %s: wait: %v", round, op.name, err)
			}
			cr.mu.Lock()
			ackedAt[i] = len(cr.clones) // clones from here on were taken after the reply
			cr.mu.Unlock()
		}
		cr.mu.Lock()
		clones := cr.clones
		cr.every, cr.clones = false, nil
		cr.mu.Unlock()
		if len(clones) < 6 {
			t.Fatalf("round %d: only %d crash points", round, len(clones))
		}

		for ci, c := range clones {
			copts := testOpts(c, clk)
			copts.Shards, copts.SegmentSize, copts.Fsync = shards, opts.SegmentSize, fsync
			rks := mustOpen(t, copts)
			cuts += int(min(rks.tx.cut.Load(), 1))
			for key, v := range done {
				wantValue(t, rks, 0, key, v)
			}
			got := map[string]*string{}
			for _, key := range roundKeys {
				if v, _, ok := getString(t, rks, 0, key); ok {
					got[key] = str(v)
				}
			}
			mustClose(t, rks)
			var kept []int
			for _, set := range allowed {
				want := map[string]*string{}
				for _, i := range set {
					for key, v := range ops[i].effects {
						want[key] = v
					}
				}
				if sameState(got, want, roundKeys) {
					kept = set
					break
				}
			}
			if kept == nil {
				t.Fatalf("round %d, crash point %d of %d: %s is no state the commands allow (%v)",
					round, ci+1, len(clones), showState(got, roundKeys), allowed)
			}
			for i := range ops {
				if fsync == vlog.FsyncAlways && ci >= ackedAt[i] && !slices.Contains(kept, i) {
					t.Fatalf("round %d, crash point %d of %d: the acknowledged %s is gone: %s",
						round, ci+1, len(clones), ops[i].name, showState(got, roundKeys))
				}
			}
			clonesChecked++
		}
		for _, op := range ops {
			for key, v := range op.effects {
				if v == nil {
					delete(done, key)
				} else {
					done[key] = *v
				}
			}
		}
	}
	t.Logf("%d crash points checked, %d of them cut an incomplete transaction", clonesChecked, cuts)
}

func sameState(got, want map[string]*string, keys []string) bool {
	for _, k := range keys {
		g, w := got[k], want[k]
		if (g == nil) != (w == nil) || g != nil && *g != *w {
			return false
		}
	}
	return true
}

func showState(st map[string]*string, keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		if v := st[k]; v != nil {
			fmt.Fprintf(&b, "%s=%.6s ", k, *v)
		} else {
			fmt.Fprintf(&b, "%s=(none) ", k)
		}
	}
	return b.String()
}

// TestCrashCascadeCut: transaction T1 sets a (shard 0) and b (shard 1); then W, a write of
// shard 0 alone, sets a to a value computed from T1's. With barriers that wait only for the
// other parts to be written (appendfsync everysec or no), shard 0 may sync T1's part and W while
// shard 1 has only written T1's part, and a power loss then keeps T1 and W in shard 0 and loses
// T1 in shard 1. Recovery must cut shard 0 at T1: neither T1 nor W is there, nor anything after
// them in shard 0.
//
// In the sealed case shard 0 also rotated after W, and its sync sealed the segment holding T1 and
// W and a later record says so: T1's part is no longer in a segment recovery reads for torn tails.
func TestCrashCascadeCut(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sealed=%v", sealed), func(t *testing.T) {
			clk := newTestClock()
			mem := vfs.NewMem()
			opts := testOpts(mem, clk)
			opts.Shards = 2
			opts.SegmentSize = 4 << 10
			// "no" writes without syncing in the background, so only the test syncs; its barriers
			// are everysec's.
			opts.Fsync = vlog.FsyncNo
			opts.CheckpointInterval = -1
			ks := mustOpen(t, opts)
			se := ks.NewSession()
			a, b := keyInShard(2, 0, 0, "tx-a"), keyInShard(2, 0, 1, "tx-b")
			mustPut(t, ks, se, 0, a, "a0", 0)
			mustPut(t, ks, se, 0, b, "b0", 0)
			if err := ks.syncAll(); err != nil {
				t.Fatal(err)
			}
			err := ks.Update(se, toKeys([]dbKey{{0, a}, {0, b}}), func(tx *Tx) error { // T1
				tx.Put(0, []byte("a1"), 0, TypeString)
				tx.Put(1, []byte("b1"), 0, TypeString)
				return nil
			})
			if err == nil {
				err = se.Wait()
			}
			if err != nil {
				t.Fatal(err)
			}
			err = ks.Update(se, toKeys([]dbKey{{0, a}}), func(tx *Tx) error { // W
				v, _, err := tx.Value(0)
				tx.Put(0, append(slices.Clone(v), "+w"...), 0, TypeString)
				return err
			})
			if err == nil {
				err = se.Wait()
			}
			if err != nil {
				t.Fatal(err)
			}
			wantValue(t, ks, 0, a, "a1+w")
			s0 := ks.shards[0]
			var fill []string
			if sealed {
				_, first, _ := locate(t, ks, a)
				for i := 0; ; i++ {
					key := keyInShard(2, 0, 0, fmt.Sprintf("fill%d.", i))
					mustPut(t, ks, se, 0, key, strings.Repeat("f", 300), 0)
					fill = append(fill, key)
					if _, seg, _ := locate(t, ks, key); seg != first {
						break
					}
				}
				// Synced and marked, but not sealed: shard 1's part of T1 is not synced, so
				// no stable cut covers the segment, and recovery must still look in it.
				if err := ks.syncAndMark(s0); err != nil {
					t.Fatal(err)
				}
			}
			if err := s0.log.Sync(); err != nil { // shard 0's turn; shard 1 has not synced
				t.Fatal(err)
			}
			crashed := mem.CrashClone()
			mustClose(t, ks)

			copts := testOpts(crashed, clk)
			copts.Shards, copts.SegmentSize, copts.CheckpointInterval = 2, opts.SegmentSize, -1
			rks := mustOpen(t, copts)
			defer mustClose(t, rks)
			wantValue(t, rks, 0, b, "b0") // T1's part in shard 1 is lost
			wantValue(t, rks, 0, a, "a0") // so T1 and W are gone from shard 0
			for _, key := range fill {
				wantMissing(t, rks, 0, key)
			}
			if n := rks.tx.cut.Load(); n != 1 {
				t.Fatalf("%d incomplete transactions cut, want 1", n)
			}
		})
	}
}
