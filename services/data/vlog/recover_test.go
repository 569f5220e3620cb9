package vlog

// Recovery tests: damage to durable data (bit flips, lost sectors) is corruption, reported with
// its place and repaired on request; a torn tail is still cut; data of a newer format is never
// cut. Expectations are computed from where the records are and what they claim (their Synced
// field and flagPrevSealed), following the policy at the top of replay.go.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// recoverSeed is the seed of a randomized recovery test, logged when it fails.
func recoverSeed(t *testing.T, seed uint64) uint64 {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	})
	return seed
}

// recoverSeeds is how many seeds a randomized recovery test runs: def, or LAVIK_RECOVER_SEEDS
// when set (for soak runs).
func recoverSeeds(t *testing.T, def uint64) uint64 {
	t.Helper()
	s := os.Getenv("LAVIK_RECOVER_SEEDS")
	if s == "" {
		return def
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		t.Fatalf("LAVIK_RECOVER_SEEDS=%q: want a positive count", s)
	}
	return n
}

// knownBug skips a test that fails because of a bug not fixed yet, unless LAVIK_KNOWN_BUGS=1 asks
// to see it fail.
func knownBug(t *testing.T, bug string) {
	t.Helper()
	if os.Getenv("LAVIK_KNOWN_BUGS") != "1" {
		t.Skip("known bug (LAVIK_KNOWN_BUGS=1 runs it): " + bug)
	}
}

// recOpts is testOpts with recovery's warnings (torn tails cut, damage moved aside) discarded.
func recOpts(fs vfs.FS, dir string) Options {
	o := testOpts(fs, dir)
	o.Logger = slog.New(slog.DiscardHandler)
	return o
}

// randBytes returns n random bytes.
func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// appendPut appends a put of key k<i> with val and returns it as replay would give it back.
func appendPut(t *testing.T, l *Log, i int, val []byte) (rec, uint64) {
	t.Helper()
	key := fmt.Sprintf("k%04d", i)
	h := Header{Kind: KindPut, Version: uint64(i + 1)}
	loc, lsn, err := l.Append(h, []byte(key), val)
	if err != nil {
		t.Fatalf("append %d: %v", i, err)
	}
	h.KeyLen, h.ValLen = uint32(len(key)), uint32(len(val))
	return rec{loc: loc, h: h, key: key, val: val}, lsn
}

func (r rec) end() int64 { return int64(r.loc.Off) + r.h.Size() }

// fileBytes returns what reads of a file return now.
func fileBytes(t *testing.T, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return b
}

// writeFile replaces a file's contents with b, durably.
func writeFile(t *testing.T, fs vfs.FS, path string, b []byte) {
	t.Helper()
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
}

// snapshot returns every file of dir (not below it) with its contents.
func snapshot(t *testing.T, fs vfs.FS, dir string) map[string][]byte {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if fi, err := fs.Stat(p); err == nil && !fi.IsDir() {
			out[n] = fileBytes(t, fs, p)
		}
	}
	return out
}

// replayAll opens the log in dir of a copy of mem and returns every record, marks included, and
// the segment sizes; mem is left as it was.
func replayAll(t *testing.T, mem *vfs.MemFS, dir string) ([]rec, map[uint32]int64) {
	t.Helper()
	opts := recOpts(mem.CrashClone(), dir)
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var all []rec
	err = l.Replay(Loc{}, func(r *Record) error {
		all = append(all, rec{loc: r.Loc, h: r.Header, key: string(r.Key), val: append([]byte(nil), r.Val...)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[uint32]int64{}
	for _, s := range l.Extent().Segs {
		sizes[s.ID] = s.Size
	}
	return all, sizes
}

// sameRecords fails unless got (marks left out) are exactly want.
func sameRecords(t *testing.T, what string, got, want []rec) {
	t.Helper()
	var real []rec
	for _, r := range want {
		if r.h.Kind != KindMark {
			real = append(real, r)
		}
	}
	if len(got) != len(real) {
		t.Fatalf("%s: %d records replay, want %d\n got: %s\nwant: %s", what, len(got), len(real), recList(got), recList(real))
	}
	for i := range got {
		if got[i].loc != real[i].loc || got[i].key != real[i].key || !bytes.Equal(got[i].val, real[i].val) {
			t.Fatalf("%s: record %d is %s at %v, want %s at %v", what, i, got[i].key, got[i].loc, real[i].key, real[i].loc)
		}
	}
}

func recList(rs []rec) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s@%d:%d ", r.key, r.loc.Seg, r.loc.Off)
	}
	return b.String()
}

// damageRun is a damaged range as recovery reports it: from the first damaged record (or the
// segment header, at 0) up to the next record that verifies (or the end of the segment).
type damageRun struct {
	seg       uint32
	off, next int64
	// replay: found by Replay (a sealed segment), after Open settled the tail.
	replay bool
}

func (d damageRun) String() string {
	return fmt.Sprintf("%s:%d+%d", segName(d.seg), d.off, d.next-d.off)
}

// recoveryModel says what recovery must make of a log whose records were recs (marks included,
// in log order, in segments of the given sizes) once bytes in dmg (by segment) were damaged.
type recoveryModel struct {
	recs  []rec
	sizes map[uint32]int64
	dmg   map[uint32][][2]int64
}

func (m *recoveryModel) damage(seg uint32, off, end int64) {
	if m.dmg == nil {
		m.dmg = map[uint32][][2]int64{}
	}
	m.dmg[seg] = append(m.dmg[seg], [2]int64{off, end})
}

func (m *recoveryModel) hit(seg uint32, off, end int64) bool {
	for _, d := range m.dmg[seg] {
		if d[0] < end && off < d[1] {
			return true
		}
	}
	return false
}

func (m *recoveryModel) damaged(r rec) bool { return m.hit(r.loc.Seg, int64(r.loc.Off), r.end()) }

func (m *recoveryModel) segs() []uint32 {
	var ids []uint32
	for id := range m.sizes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (m *recoveryModel) inSeg(seg uint32) []rec {
	var out []rec
	for _, r := range m.recs {
		if r.loc.Seg == seg {
			out = append(out, r)
		}
	}
	return out
}

// outcome returns the damaged runs recovery must report, in the order it meets them (segment
// headers, then the segments that may end in a torn tail, then the others as Replay reads
// them), and the records that must replay after a repair. A damaged run in a segment that may
// end in a torn tail that no intact record claims synced is a torn tail: it is cut with
// everything after it, and reported as nothing; cut says where (seg ^0: nowhere).
func (m *recoveryModel) outcome() (runs []damageRun, survivors []rec) {
	runs, survivors, _ = m.outcomeCut()
	return runs, survivors
}

func (m *recoveryModel) outcomeCut() (runs []damageRun, survivors []rec, cut damageRun) {
	segs := m.segs()
	for _, id := range segs {
		if m.hit(id, 0, SegmentHeaderSize) {
			runs = append(runs, damageRun{seg: id, next: SegmentHeaderSize})
		}
	}
	// The segments that may end in a torn tail: the newest, and each before one in which no
	// intact record says it was sealed.
	c := len(segs) - 1
	for c > 0 && !slices.ContainsFunc(m.inSeg(segs[c]), func(r rec) bool {
		return r.h.Flags&flagPrevSealed != 0 && !m.damaged(r)
	}) {
		c--
	}
	cut = damageRun{seg: ^uint32(0)}
	runsIn := func(id uint32, tail bool) []damageRun {
		rs := m.inSeg(id)
		var out []damageRun
		var claimed int64
		for j := 0; j < len(rs); {
			if !m.damaged(rs[j]) {
				claimed = max(claimed, int64(rs[j].h.Synced))
				j++
				continue
			}
			k := j
			for k < len(rs) && m.damaged(rs[k]) {
				k++
			}
			next := m.sizes[id]
			var claim int64
			if k < len(rs) {
				next = int64(rs[k].loc.Off)
				for _, r := range rs[k:] {
					if !m.damaged(r) {
						claim = max(claim, int64(r.h.Synced))
					}
				}
			}
			b := int64(rs[j].loc.Off)
			if tail && b >= claimed && claim <= b {
				cut = damageRun{seg: id, off: b, next: b}
				return out
			}
			out = append(out, damageRun{id, b, next, !tail})
			claimed = max(claimed, b)
			j = k
		}
		return out
	}
	for _, id := range segs[c:] {
		runs = append(runs, runsIn(id, true)...)
		if cut.seg == id {
			break
		}
	}
	for _, id := range segs[:c] {
		runs = append(runs, runsIn(id, false)...)
	}
	for _, r := range m.recs {
		if r.h.Kind == KindMark || m.damaged(r) || r.loc.Seg > cut.seg || r.loc.Seg == cut.seg && int64(r.loc.Off) >= cut.off {
			continue
		}
		survivors = append(survivors, r)
	}
	return runs, survivors, cut
}

// checkRecovery opens the damaged log in dir of fs (which the caller may not use afterwards)
// without and then with Repair, and checks both against the model.
func checkRecovery(t *testing.T, fs *vfs.MemFS, dir string, m *recoveryModel) {
	t.Helper()
	runs, survivors, cut := m.outcomeCut()
	before := snapshot(t, fs, dir)
	opts := recOpts(fs, dir)
	l, got, err := openReplay(opts, Loc{})
	if len(runs) == 0 {
		if err != nil {
			t.Fatalf("open: %v; the damage is all in a tail no record claims synced, which is cut", err)
		}
		sameRecords(t, "after a torn tail cut", got, survivors)
		l.Close()
		return
	}
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open of a damaged log: %v, want a CorruptionError at %v", err, runs[0])
	}
	if want := filepath.Join(dir, segName(runs[0].seg)); ce.Segment != want || ce.Offset != runs[0].off || ce.Length != runs[0].next-runs[0].off {
		t.Fatalf("corruption reported at %s:%d+%d, want %v (damaged runs: %v)", ce.Segment, ce.Offset, ce.Length, runs[0], runs)
	}
	if !strings.Contains(err.Error(), "repair-corrupt-log yes") {
		t.Fatalf("the error does not say how to repair: %v", err)
	}
	// A refusing open changes nothing, unless it cut a torn tail before Replay met the damage.
	// Closing the log after the failed Replay may append a mark to the newest segment: a
	// record that claims what recovery synced, which changes no record.
	want := maps.Clone(before)
	if runs[0].replay && cut.seg != ^uint32(0) {
		for name := range want {
			if id, ok := parseSegName(name); ok && id > cut.seg {
				delete(want, name)
			}
		}
		want[segName(cut.seg)] = want[segName(cut.seg)][:cut.off]
	}
	after := snapshot(t, fs, dir)
	if runs[0].replay {
		newest := slices.Max(slices.Collect(maps.Keys(want)))
		if a, w := after[newest], want[newest]; len(a) > len(w) && bytes.Equal(a[:len(w)], w) {
			if r, err := DecodeRecord(a[len(w):]); err == nil && r.Header.Kind == KindMark && r.Size() == int64(len(a)-len(w)) {
				after[newest] = w
			}
		}
	}
	if !maps.EqualFunc(want, after, bytes.Equal) {
		t.Fatalf("an open that refused to start changed the segment files (torn tail cut: %v)", cut)
	}

	opts.Repair = true
	l, got, err = openReplay(opts, Loc{})
	if err != nil {
		t.Fatalf("open with repair: %v", err)
	}
	sameRecords(t, "after the repair", got, survivors)
	if st := l.Stats(); st.Repaired != uint64(len(runs)) {
		t.Fatalf("%d ranges repaired, want %d (%v)", st.Repaired, len(runs), runs)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Each damaged range is kept aside, as the disk returned it.
	q := snapshot(t, fs, filepath.Join(dir, quarantineDir))
	if len(q) != len(runs) {
		t.Fatalf("quarantine holds %d files, want %d: %v", len(q), len(runs), slices.Sorted(maps.Keys(q)))
	}
	for _, r := range runs {
		name := fmt.Sprintf("%s.%d.bad", segName(r.seg), r.off)
		if r.off == 0 {
			name = segName(r.seg) + ".header.bad"
		}
		if want := before[segName(r.seg)][r.off:r.next]; !bytes.Equal(q[name], want) {
			t.Fatalf("quarantine file %s holds %d bytes, want the %d damaged ones", name, len(q[name]), len(want))
		}
	}
	// A repaired log is clean.
	opts.Repair = false
	l, got, err = openReplay(opts, Loc{})
	if err != nil {
		t.Fatalf("open after the repair: %v", err)
	}
	sameRecords(t, "reopened after the repair", got, survivors)
	if st := l.Stats(); st.Corrupt != 0 || st.TornBytesCut != 0 {
		t.Fatalf("a repaired log still finds %d corrupt ranges and cuts %d bytes", st.Corrupt, st.TornBytesCut)
	}
	l.Close()
}

// buildLog writes n records of random sizes (up to maxVal bytes) into a fresh log in /d,
// syncing now and then, closes it cleanly and returns the file system.
func buildLog(t *testing.T, rng *rand.Rand, segSize int64, n, maxVal int) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	opts := recOpts(mem, "/d")
	opts.SegmentSize = segSize
	l, _ := collect(t, opts)
	for i := 0; i < n; i++ {
		_, lsn := appendPut(t, l, i, randBytes(rng, 1+rng.IntN(maxVal)))
		if rng.IntN(4) == 0 {
			if err := l.Flush(lsn, rng.IntN(2) == 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return mem
}

// TestBitFlipInNewestSegment flips one bit in a record in the middle of the newest segment of a
// cleanly closed log: that is damage, not a torn tail, so Open refuses naming exactly that
// record; a repair moves exactly its bytes aside and keeps every other record.
func TestBitFlipInNewestSegment(t *testing.T) {
	mem := vfs.NewMem()
	opts := recOpts(mem, "/d")
	l, _ := collect(t, opts)
	rng := rand.New(rand.NewPCG(3, 3))
	var recs []rec
	for i := 0; i < 12; i++ {
		r, lsn := appendPut(t, l, i, randBytes(rng, 200+i))
		recs = append(recs, r)
		if i%3 == 2 {
			if err := l.Flush(lsn, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	all, sizes := replayAll(t, mem, "/d")
	if len(sizes) != 1 {
		t.Fatalf("%d segments, want 1", len(sizes))
	}
	victim, next := recs[6], recs[7]
	path := filepath.Join("/d", segName(victim.loc.Seg))
	orig := fileBytes(t, mem, path)
	flipAt := int64(victim.loc.Off) + HeaderSize + 5 + 100 // in the value
	if _, err := mem.FlipBit(path, flipAt, 2); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(orig[victim.loc.Off:next.loc.Off])
	want[flipAt-int64(victim.loc.Off)] ^= 1 << 2

	_, _, err := openReplay(opts, Loc{})
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != path || ce.Offset != int64(victim.loc.Off) || ce.Length != int64(next.loc.Off-victim.loc.Off) {
		t.Fatalf("open: %v, want a CorruptionError at %s:%d+%d", err, path, victim.loc.Off, next.loc.Off-victim.loc.Off)
	}

	ropts := opts
	ropts.Repair = true
	l, got, err := openReplay(ropts, Loc{})
	if err != nil {
		t.Fatalf("open with repair: %v", err)
	}
	sameRecords(t, "after the repair", got, slices.Delete(slices.Clone(recs), 6, 7))
	l.Close()
	q := fileBytes(t, mem, fmt.Sprintf("/d/quarantine/%s.%d.bad", segName(victim.loc.Seg), victim.loc.Off))
	if !bytes.Equal(q, want) {
		t.Fatalf("quarantined %d bytes, want the %d damaged bytes as they were on disk", len(q), len(want))
	}
	l, got, err = openReplay(opts, Loc{})
	if err != nil {
		t.Fatalf("open after the repair: %v", err)
	}
	sameRecords(t, "reopened after the repair", got, slices.Delete(slices.Clone(recs), 6, 7))
	if st := l.Stats(); st.Corrupt != 0 {
		t.Fatalf("a repaired log still finds %d corrupt ranges", st.Corrupt)
	}
	l.Close()

	// The same flip checked through the model the other tests use.
	m := &recoveryModel{recs: all, sizes: sizes}
	m.damage(victim.loc.Seg, flipAt, flipAt+1)
	if runs, _ := m.outcome(); len(runs) != 1 || runs[0] != (damageRun{seg: victim.loc.Seg, off: int64(victim.loc.Off), next: int64(next.loc.Off)}) {
		t.Fatalf("model: %v", runs)
	}
}

// TestLostSector loses a 512-byte sector spanning record boundaries, zeroed or filled with
// garbage, in the newest segment and in a sealed one.
func TestLostSector(t *testing.T) {
	base := buildLog(t, rand.New(rand.NewPCG(5, 5)), 4096, 60, 300)
	all, sizes := replayAll(t, base, "/d")
	segs := (&recoveryModel{sizes: sizes}).segs()
	if len(segs) < 3 {
		t.Fatalf("%d segments, want at least 3", len(segs))
	}
	for _, tc := range []struct {
		name string
		seg  uint32
	}{{"newest", segs[len(segs)-1]}, {"sealed", segs[0]}, {"middle", segs[1]}} {
		for _, kind := range []vfs.DamageKind{vfs.SectorZeroed, vfs.SectorGarbage} {
			t.Run(fmt.Sprintf("%s/%v", tc.name, kind), func(t *testing.T) {
				mem := base.CrashClone()
				path := filepath.Join("/d", segName(tc.seg))
				// A sector in the middle of the segment that holds a record boundary.
				sector := (sizes[tc.seg] / 2) &^ 511
				d, err := mem.LoseSector(path, sector, 512, kind, rand.New(rand.NewPCG(1, 1)))
				if err != nil {
					t.Fatal(err)
				}
				m := &recoveryModel{recs: all, sizes: sizes}
				m.damage(tc.seg, d.Off, d.Off+d.Len)
				n := 0
				for _, r := range all {
					if m.damaged(r) {
						n++
					}
				}
				if n < 2 {
					t.Fatalf("the sector holds %d records, want a boundary in it", n)
				}
				if runs, _ := m.outcome(); len(runs) != 1 || runs[0].seg != tc.seg {
					t.Fatalf("model: %v, want one damaged run in %s", runs, segName(tc.seg))
				}
				checkRecovery(t, mem, "/d", m)
			})
		}
	}
}

// TestDamageRandom damages one to three random sectors of a log's segments, over many seeds:
// each case refuses to start, naming a damaged range, unless the damage lies only in a tail no
// record claims synced (then it is cut as a torn tail), and a repair keeps every record that
// does not overlap a damaged range.
func TestDamageRandom(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			recoverSeed(t, seed)
			rng := rand.New(rand.NewPCG(seed, 11))
			base := buildLog(t, rng, 4096, 30+rng.IntN(40), 1+rng.IntN(600))
			all, sizes := replayAll(t, base, "/d")
			mem := base.CrashClone()
			dmg, err := mem.DamageRandom(rng, 1+rng.IntN(3), vfs.DamageOptions{
				Match:      func(p string) bool { return strings.HasSuffix(p, segSuffix) },
				SectorSize: 512,
			})
			if err != nil {
				t.Fatal(err)
			}
			m := &recoveryModel{recs: all, sizes: sizes}
			for _, d := range dmg {
				id, ok := parseSegName(filepath.Base(d.Path))
				if !ok {
					t.Fatalf("damage outside a segment: %v", d)
				}
				m.damage(id, d.Off, d.Off+d.Len)
			}
			runs, _ := m.outcome()
			t.Logf("damage %v: runs %v", dmg, runs)
			checkRecovery(t, mem, "/d", m)
		})
	}
}

// TestDamageBeforeSealProof damages two records: the first record of the newest segment, which
// was appended before the segment before it was sealed (so it carries no proof of the seal),
// and the last record of that sealed segment, which no record of its own claims synced. The
// records after the first damage prove the seal, so the second damage is corruption in a
// sealed segment: reported, and repaired with every other record kept. Recovery that stopped
// looking for the proof at the first bad record cut the sealed segment there as a torn tail and
// removed the newest segment with it, without an error.
func TestDamageBeforeSealProof(t *testing.T) {
	mem := vfs.NewMem()
	opts := recOpts(mem, "/d")
	opts.SegmentSize = 4096
	l, _ := collect(t, opts)
	rng := rand.New(rand.NewPCG(13, 13))
	var recs []rec
	for i := 0; len(recs) == 0 || recs[len(recs)-1].loc.Seg == recs[0].loc.Seg; i++ {
		r, _ := appendPut(t, l, i, randBytes(rng, 300))
		recs = append(recs, r)
	}
	first := recs[len(recs)-1] // the first record of segment 2, appended before segment 1 was synced
	last := recs[len(recs)-2]  // the last record of segment 1
	// Seal segment 1.
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 5; n++ { // these carry the proof, and claim the first record synced
		r, lsn := appendPut(t, l, len(recs), randBytes(rng, 300))
		if r.loc.Seg != first.loc.Seg {
			t.Fatal("test expects these records in segment 2")
		}
		recs = append(recs, r)
		if err := l.Flush(lsn, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	all, sizes := replayAll(t, mem, "/d")
	m := &recoveryModel{recs: all, sizes: sizes}
	for _, r := range []rec{first, last} {
		off := int64(r.loc.Off) + HeaderSize + 20
		if _, err := mem.FlipBit(filepath.Join("/d", segName(r.loc.Seg)), off, 0); err != nil {
			t.Fatal(err)
		}
		m.damage(r.loc.Seg, off, off+1)
	}
	if !slices.ContainsFunc(all, func(r rec) bool {
		return r.loc.Seg == first.loc.Seg && r.loc.Off > first.loc.Off && r.h.Flags&flagPrevSealed != 0
	}) {
		t.Fatal("no record after the first damage proves segment 1 sealed")
	}
	if i := slices.IndexFunc(all, func(r rec) bool { return r.loc == first.loc }); all[i].h.Flags&flagPrevSealed != 0 {
		t.Fatal("the first record of segment 2 carries the seal proof; the test needs it not to")
	}
	runs, _ := m.outcome()
	if len(runs) != 2 || runs[1].seg != last.loc.Seg || !runs[1].replay {
		t.Fatalf("model: %v, want the damage in the newest segment then the one in the sealed segment", runs)
	}
	checkRecovery(t, mem, "/d", m)
}

// TestTornTailCut crashes a log at random points with part of its unsynced tail written back:
// it opens with exactly a prefix of what was appended, holding every synced record.
func TestTornTailCut(t *testing.T) { runTornTail(t, 400, false) }

// TestTornTailCutAfterDirSync is TestTornTailCut with the directory synced just before the crash,
// as a checkpoint or quarantine file written into the shard's directory does (and as ext4 does
// for every pending creation when any file of the file system is fsynced): a segment a
// rotation created then survives with part of its bytes while the full one before it may have
// lost its unsynced tail.
func TestTornTailCutAfterDirSync(t *testing.T) { runTornTail(t, 400, true) }

func runTornTail(t *testing.T, seeds uint64, dirSync bool) {
	seeds = recoverSeeds(t, seeds)
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			recoverSeed(t, seed)
			rng := rand.New(rand.NewPCG(seed, 21))
			mem := vfs.NewMem()
			opts := recOpts(mem, "/d")
			opts.SegmentSize = 4096
			l, _ := collect(t, opts)
			defer l.Close()
			var recs []rec
			synced := 0
			for i := 0; i < 20+rng.IntN(60); i++ {
				r, lsn := appendPut(t, l, i, randBytes(rng, 1+rng.IntN(700)))
				recs = append(recs, r)
				switch rng.IntN(6) {
				case 0:
					if err := l.Flush(lsn, true); err != nil {
						t.Fatal(err)
					}
					synced = len(recs)
				case 1, 2:
					if err := l.Flush(lsn, false); err != nil {
						t.Fatal(err)
					}
				}
			}
			if dirSync {
				if err := mem.SyncDir("/d"); err != nil {
					t.Fatal(err)
				}
			}
			crashed := mem.CrashCloneRandom(rng)
			l2, got := collect(t, recOpts(crashed, "/d"))
			defer l2.Close()
			if len(got) < synced || len(got) > len(recs) {
				t.Fatalf("%d records replay; %d were synced, %d appended", len(got), synced, len(recs))
			}
			sameRecords(t, "after the crash", got, recs[:len(got)])
		})
	}
}

// TestTornTailWithHole crashes with the unsynced tail written back out of order: the later
// unsynced records reached the disk, an earlier one did not (zeros, or half of it). The log
// opens with the records before the hole and none after it, without an error.
func TestTornTailWithHole(t *testing.T) {
	for _, half := range []bool{false, true} {
		t.Run(fmt.Sprintf("half=%v", half), func(t *testing.T) {
			mem := vfs.NewMem()
			opts := recOpts(mem, "/d")
			l, _ := collect(t, opts)
			rng := rand.New(rand.NewPCG(7, 7))
			var recs []rec
			var lsn uint64
			for i := 0; i < 10; i++ {
				var r rec
				r, lsn = appendPut(t, l, i, randBytes(rng, 300))
				recs = append(recs, r)
			}
			if err := l.Flush(lsn, true); err != nil {
				t.Fatal(err)
			}
			for i := 10; i < 16; i++ {
				var r rec
				r, lsn = appendPut(t, l, i, randBytes(rng, 300))
				recs = append(recs, r)
			}
			if err := l.Flush(lsn, false); err != nil { // written, not synced
				t.Fatal(err)
			}
			path := filepath.Join("/d", segName(recs[0].loc.Seg))
			written := fileBytes(t, mem, path)
			crashed := mem.CrashClone()
			l.Close()
			img := fileBytes(t, crashed, path)
			if int64(len(img)) != int64(recs[10].loc.Off) {
				t.Fatalf("the clone holds %d bytes, want the %d synced", len(img), recs[10].loc.Off)
			}
			// Records 11..15 reached the disk, record 10 did not (or only its first half).
			hole := recs[10]
			img = append(img, make([]byte, hole.h.Size())...)
			if half {
				copy(img[hole.loc.Off:], written[hole.loc.Off:int64(hole.loc.Off)+hole.h.Size()/2])
			}
			img = append(img, written[hole.end():]...)
			writeFile(t, crashed, path, img)

			l2, got, err := openReplay(recOpts(crashed, "/d"), Loc{})
			if err != nil {
				t.Fatalf("open: %v; unsynced records after a hole are a torn tail", err)
			}
			defer l2.Close()
			sameRecords(t, "after the crash", got, recs[:10])
			if st := l2.Stats(); st.TornBytesCut != uint64(int64(len(img))-int64(hole.loc.Off)) {
				t.Fatalf("cut %d bytes, want %d", st.TornBytesCut, int64(len(img))-int64(hole.loc.Off))
			}
		})
	}
}

// TestCrashAfterRotation crashes right after a rotation: the full segment's last records were
// written but never synced, and the segment the rotation created holds records that reached the
// disk (its name made durable by a sync of the directory for another file). The records in the
// new segment follow a hole, so recovery cuts the full segment's torn tail and removes the new
// segment. The torn tail is lost either whole (the file ends where the last sync left it) or in
// part (the file ends inside a record).
func TestCrashAfterRotation(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep int64 // bytes of the full segment's unsynced tail that survive
	}{{"tail-lost", 0}, {"tail-torn", 100}, {"one-record-kept", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := recOpts(mem, "/d")
			opts.SegmentSize = 4096
			l, _ := collect(t, opts)
			rng := rand.New(rand.NewPCG(9, 9))
			var recs []rec
			synced := 0
			for i := 0; ; i++ {
				r, lsn := appendPut(t, l, i, randBytes(rng, 250))
				recs = append(recs, r)
				if r.loc.Seg != recs[0].loc.Seg {
					break
				}
				if i == 5 {
					if err := l.Flush(lsn, true); err != nil {
						t.Fatal(err)
					}
					synced = len(recs)
				}
			}
			for i, n := len(recs), len(recs)+3; i < n; i++ {
				r, _ := appendPut(t, l, i, randBytes(rng, 250))
				recs = append(recs, r)
			}
			if err := l.Flush(l.AppendedLSN(), false); err != nil {
				t.Fatal(err)
			}
			full, next := recs[0].loc.Seg, recs[len(recs)-1].loc.Seg
			fullPath, nextPath := filepath.Join("/d", segName(full)), filepath.Join("/d", segName(next))
			fullBytes, nextBytes := fileBytes(t, mem, fullPath), fileBytes(t, mem, nextPath)
			if err := mem.SyncDir("/d"); err != nil {
				t.Fatal(err)
			}
			crashed := mem.CrashClone()
			l.Close()
			syncedEnd := int64(recs[synced].loc.Off)
			if got := int64(len(fileBytes(t, crashed, fullPath))); got != syncedEnd {
				t.Fatalf("the full segment kept %d bytes, want the %d synced", got, syncedEnd)
			}
			keep := tc.keep
			if keep < 0 {
				keep = recs[synced].h.Size()
			}
			writeFile(t, crashed, fullPath, fullBytes[:syncedEnd+keep])
			writeFile(t, crashed, nextPath, nextBytes)

			l2, got, err := openReplay(recOpts(crashed, "/d"), Loc{})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer l2.Close()
			n := synced
			if tc.keep < 0 {
				n++
			}
			sameRecords(t, "after the crash", got, recs[:n])
			if _, err := crashed.Stat(nextPath); err == nil {
				t.Fatalf("the segment after the torn tail is still there: %v", l2.Extent())
			}
		})
	}
}

// newerRecord encodes a record that verifies but that this version cannot read.
func newerRecord(mutate func(b []byte)) []byte {
	b := AppendRecord(nil, Header{Kind: KindPut, Version: 99}, nil, []byte("from-the-future"), []byte("v"))
	mutate(b)
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], castagnoli))
	return b
}

// TestNewerFormatIsNotCut puts data of a newer format at the end of the newest segment, where a
// torn tail would be cut: Open refuses with ErrNewerFormat and changes no file.
func TestNewerFormatIsNotCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, fs *vfs.MemFS, path string)
	}{
		{"kind", func(t *testing.T, fs *vfs.MemFS, path string) {
			writeFile(t, fs, path, append(fileBytes(t, fs, path), newerRecord(func(b []byte) { b[5] = byte(maxKind + 1) })...))
		}},
		{"flag", func(t *testing.T, fs *vfs.MemFS, path string) {
			writeFile(t, fs, path, append(fileBytes(t, fs, path), newerRecord(func(b []byte) { b[8] |= 1 << 5 })...))
		}},
		{"reserved", func(t *testing.T, fs *vfs.MemFS, path string) {
			writeFile(t, fs, path, append(fileBytes(t, fs, path), newerRecord(func(b []byte) { b[9] = 1 })...))
		}},
		{"segment-format", func(t *testing.T, fs *vfs.MemFS, path string) {
			b := fileBytes(t, fs, path)
			binary.LittleEndian.PutUint16(b[8:], FormatVersion+1)
			binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
			writeFile(t, fs, path, b)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := recOpts(mem, "/d")
			l, _ := collect(t, opts)
			var recs []rec
			for i := 0; i < 5; i++ {
				r, _ := appendPut(t, l, i, []byte("value"))
				recs = append(recs, r)
			}
			l.Close()
			path := filepath.Join("/d", segName(recs[0].loc.Seg))
			tc.damage(t, mem, path)
			before := snapshot(t, mem, "/d")
			for _, repair := range []bool{false, true} {
				opts.Repair = repair
				_, _, err := openReplay(opts, Loc{})
				if !errors.Is(err, ErrNewerFormat) || errors.Is(err, ErrCorrupt) {
					t.Fatalf("repair=%v: open: %v, want ErrNewerFormat", repair, err)
				}
				if after := snapshot(t, mem, "/d"); !maps.EqualFunc(before, after, bytes.Equal) {
					t.Fatalf("repair=%v: an open that refused to start changed the files", repair)
				}
			}
		})
	}
}

// wantCorruptAt opens the log in /d of fs and wants a CorruptionError naming the record r.
func wantCorruptAt(t *testing.T, fs vfs.FS, r rec) {
	t.Helper()
	_, _, err := openReplay(recOpts(fs, "/d"), Loc{})
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != filepath.Join("/d", segName(r.loc.Seg)) || ce.Offset != int64(r.loc.Off) {
		t.Fatalf("open: %v, want a CorruptionError at %s:%d", err, segName(r.loc.Seg), r.loc.Off)
	}
}

// flipIn flips a bit in the middle of record r's value in fs.
func flipIn(t *testing.T, fs *vfs.MemFS, r rec) {
	t.Helper()
	if _, err := fs.FlipBit(filepath.Join("/d", segName(r.loc.Seg)), int64(r.loc.Off)+HeaderSize+int64(len(r.key))+int64(len(r.val))/2, 4); err != nil {
		t.Fatal(err)
	}
}

// TestMarkProvesSyncedRecords: after a sync with nothing appended since, the last records claim
// only what was synced before them, so damage to them would look like a torn tail. Mark appends
// one record that claims them (and a second Mark nothing); once it is durable, damage to the last
// record is found as corruption. A clean Close leaves the same proof.
func TestMarkProvesSyncedRecords(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := collect(t, recOpts(mem, "/d"))
	var recs []rec
	for i := 0; i < 5; i++ {
		r, _ := appendPut(t, l, i, bytes.Repeat([]byte{byte('a' + i)}, 200))
		recs = append(recs, r)
	}
	last := recs[len(recs)-1]
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	beforeMark := mem.CrashClone()

	end := l.AppendedLSN()
	lsn, marked, err := l.Mark()
	if err != nil || !marked || lsn != end+HeaderSize || l.AppendedLSN() != lsn || l.Stats().Marks != 1 {
		t.Fatalf("Mark after a sync: lsn %d (log ended at %d), marked %v, %v, %d marks", lsn, end, marked, err, l.Stats().Marks)
	}
	if _, marked, err := l.Mark(); err != nil || marked || l.AppendedLSN() != lsn {
		t.Fatalf("second Mark: marked %v, %v; the first one proves everything already", marked, err)
	}
	if err := l.Flush(lsn, true); err != nil {
		t.Fatal(err)
	}
	afterMark := mem.CrashClone()

	// The crash clone opens with nothing cut, and damage to the last record is corruption.
	l2, got := collect(t, recOpts(afterMark.CrashClone(), "/d"))
	sameRecords(t, "after a crash", got, recs)
	if st := l2.Stats(); st.TornBytesCut != 0 {
		t.Fatalf("%d bytes of synced data cut as a torn tail", st.TornBytesCut)
	}
	l2.Close()
	flipIn(t, afterMark, last)
	wantCorruptAt(t, afterMark, last)

	// Without the mark nothing claims the last record: the same damage is a torn tail. This is
	// the window Mark closes (the keyspace calls it once a second).
	flipIn(t, beforeMark, last)
	l3, got, err := openReplay(recOpts(beforeMark, "/d"), Loc{})
	if err != nil {
		t.Fatalf("open without the mark: %v", err)
	}
	sameRecords(t, "without the mark", got, recs[:len(recs)-1])
	l3.Close()

	// A clean Close leaves the proof by itself.
	r, _ := appendPut(t, l, 5, bytes.Repeat([]byte{'z'}, 200))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	closed := mem.CrashClone()
	flipIn(t, closed, r)
	wantCorruptAt(t, closed, r)
}

// TestMarkProvesSeal: records appended to a new segment before the full one was synced cannot
// say it was sealed. After the sync that seals it, Mark appends a record that does (flagged
// flagPrevSealed), so damage to the sealed segment's last records, which no record of its own
// claims synced, is corruption rather than a torn tail that would take the new segment with it.
func TestMarkProvesSeal(t *testing.T) {
	mem := vfs.NewMem()
	opts := recOpts(mem, "/d")
	opts.SegmentSize = 4096
	l, _ := collect(t, opts)
	var recs []rec
	for i := 0; len(recs) == 0 || recs[len(recs)-1].loc.Seg == recs[0].loc.Seg; i++ {
		r, _ := appendPut(t, l, i, bytes.Repeat([]byte{byte(i)}, 300))
		recs = append(recs, r)
	}
	lastSealed := recs[len(recs)-2]
	if err := l.Sync(); err != nil { // seals segment 1; nothing in segment 2 says so yet
		t.Fatal(err)
	}
	lsn, marked, err := l.Mark()
	if err != nil || !marked {
		t.Fatalf("Mark after the seal: %v, %v", marked, err)
	}
	if err := l.Flush(lsn, true); err != nil {
		t.Fatal(err)
	}
	if _, marked, _ := l.Mark(); marked {
		t.Fatal("a second Mark appended another record")
	}
	crashed := mem.CrashClone()
	l.Close()
	all, _ := replayAll(t, crashed, "/d")
	if m := all[len(all)-1]; m.h.Kind != KindMark || m.h.Flags&flagPrevSealed == 0 || m.loc.Seg != recs[len(recs)-1].loc.Seg {
		t.Fatalf("the last record is %v with flags %#x in segment %d, want a mark proving segment %d sealed",
			m.h.Kind, m.h.Flags, m.loc.Seg, recs[0].loc.Seg)
	}
	flipIn(t, crashed, lastSealed)
	wantCorruptAt(t, crashed, lastSealed)
}

// TestSealedSegmentLostTail: a segment proven sealed (its successor holds a record saying so)
// that is shorter than the size its successor's header recorded lost synced data. That is
// corruption, not a torn tail: Open refuses, naming where the segment's valid records end, and
// changes nothing. A repair has nothing to move aside but what is left of a record cut short; it
// fills the lost range with marks, so the segment has its recorded size again, every other
// record is kept and the next open finds nothing to repair. Without a recorded size (a header
// written before the field existed), or with the sealed segment dropped, nothing is checked.
func TestSealedSegmentLostTail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		segSize int64
		val     int
		lose    int   // records lost from the sealed segment's end
		keep    int64 // bytes of the first of them left
	}{
		{"record-boundary", 4096, 300, 1, 0},
		{"inside-a-record", 4096, 300, 1, 100},
		// More than markLostChunk is lost: the repair writes several marks.
		{"large", 4 << 20, 1200 << 10, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, recs := sealedLog(t, tc.segSize, tc.val)
			sealed, next := recs[0].loc.Seg, recs[len(recs)-1].loc.Seg
			sealedPath := filepath.Join("/d", segName(sealed))
			full := fileBytes(t, mem, sealedPath)
			firstNext := slices.IndexFunc(recs, func(r rec) bool { return r.loc.Seg == next })
			lost := recs[firstNext-tc.lose : firstNext]
			survivors := slices.Delete(slices.Clone(recs), firstNext-tc.lose, firstNext)
			end := int64(lost[0].loc.Off)
			if lost[len(lost)-1].end() != int64(len(full)) {
				t.Fatalf("the last record of segment %d ends at %d, the segment at %d", sealed, lost[len(lost)-1].end(), len(full))
			}
			if tc.segSize > 4096 && int64(len(full))-end <= markLostChunk {
				t.Fatalf("%d bytes lost, want more than %d", int64(len(full))-end, markLostChunk)
			}
			writeFile(t, mem, sealedPath, full[:end+tc.keep])
			before := snapshot(t, mem, "/d")

			_, _, err := openReplay(recOpts(mem, "/d"), Loc{})
			var ce *CorruptionError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.Segment != sealedPath ||
				ce.Offset != end || ce.Length != int64(len(full))-end {
				t.Fatalf("open: %v, want a CorruptionError at %s:%d+%d", err, sealedPath, end, int64(len(full))-end)
			}
			if after := snapshot(t, mem, "/d"); !maps.EqualFunc(before, after, bytes.Equal) {
				t.Fatal("an open that refused to start changed the segment files")
			}

			ropts := recOpts(mem, "/d")
			ropts.Repair = true
			l, got, err := openReplay(ropts, Loc{})
			if err != nil {
				t.Fatalf("open with repair: %v", err)
			}
			sameRecords(t, "after the repair", got, survivors)
			if st := l.Stats(); st.Corrupt != 1 || st.Repaired != 1 || st.TornBytesCut != 0 {
				t.Fatalf("corrupt %d, repaired %d, torn bytes cut %d; want 1, 1, 0", st.Corrupt, st.Repaired, st.TornBytesCut)
			}
			// A read of a lost record finds a mark where it was.
			var rd Read
			if err := l.PrepareRead(&rd, lost[0].loc, int(lost[0].h.Size())); err != nil {
				t.Fatal(err)
			}
			Submit(ropts.Engine, []*Read{&rd})
			if r, err := DecodeRecord(rd.Data); rd.Err != nil || err != nil || r.Header.Kind != KindMark {
				t.Fatalf("a read of the lost record: %v, %v, kind %v; want a mark", rd.Err, err, r.Header.Kind)
			}
			rd.Release()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := int64(len(fileBytes(t, mem, sealedPath))); got != int64(len(full)) {
				t.Fatalf("the repaired segment holds %d bytes, want the %d recorded", got, len(full))
			}
			if tc.keep == 0 {
				if _, err := mem.Stat(filepath.Join("/d", quarantineDir)); err == nil {
					t.Fatal("a quarantine directory was made; nothing was left to move aside")
				}
			} else {
				q := snapshot(t, mem, filepath.Join("/d", quarantineDir))
				name := fmt.Sprintf("%s.%d.bad", segName(sealed), end)
				if len(q) != 1 || !bytes.Equal(q[name], full[end:end+tc.keep]) {
					t.Fatalf("quarantine holds %v, want %s with the %d bytes left of the cut record", slices.Sorted(maps.Keys(q)), name, tc.keep)
				}
			}

			l, got, err = openReplay(recOpts(mem, "/d"), Loc{})
			if err != nil {
				t.Fatalf("open after the repair: %v", err)
			}
			sameRecords(t, "reopened after the repair", got, survivors)
			if st := l.Stats(); st.Corrupt != 0 || st.Repaired != 0 {
				t.Fatalf("a repaired log still finds %d corrupt ranges", st.Corrupt)
			}
			l.Close()
		})
	}

	t.Run("size-unknown", func(t *testing.T) {
		mem, recs := sealedLog(t, 4096, 300)
		sealed, next := recs[0].loc.Seg, recs[len(recs)-1].loc.Seg
		firstNext := slices.IndexFunc(recs, func(r rec) bool { return r.loc.Seg == next })
		sealedPath, nextPath := filepath.Join("/d", segName(sealed)), filepath.Join("/d", segName(next))
		writeFile(t, mem, sealedPath, fileBytes(t, mem, sealedPath)[:recs[firstNext-1].loc.Off])
		b := fileBytes(t, mem, nextPath)
		copy(b, appendSegHeader(nil, next, 0, SegExtent{ID: sealed}))
		writeFile(t, mem, nextPath, b)
		l, got, err := openReplay(recOpts(mem, "/d"), Loc{})
		if err != nil {
			t.Fatalf("open: %v; a header with no recorded size says nothing", err)
		}
		defer l.Close()
		sameRecords(t, "without a recorded size", got, slices.Delete(recs, firstNext-1, firstNext))
	})

	t.Run("predecessor-dropped", func(t *testing.T) {
		mem, recs := sealedLog(t, 4096, 300)
		sealed, next := recs[0].loc.Seg, recs[len(recs)-1].loc.Seg
		if err := mem.Remove(filepath.Join("/d", segName(sealed))); err != nil {
			t.Fatal(err)
		}
		if err := mem.SyncDir("/d"); err != nil {
			t.Fatal(err)
		}
		l, got, err := openReplay(recOpts(mem, "/d"), Loc{})
		if err != nil {
			t.Fatalf("open: %v; a segment dropped once sealed is not checked", err)
		}
		defer l.Close()
		sameRecords(t, "with the sealed segment dropped", got, recs[slices.IndexFunc(recs, func(r rec) bool { return r.loc.Seg == next }):])
	})
}

// sealedLog writes a log in /d of two segments: the first full of values of val random bytes and
// sealed, the second holding records that prove it sealed. It closes the log cleanly and
// returns the records.
func sealedLog(t *testing.T, segSize int64, val int) (*vfs.MemFS, []rec) {
	t.Helper()
	mem := vfs.NewMem()
	opts := recOpts(mem, "/d")
	opts.SegmentSize = segSize
	l, _ := collect(t, opts)
	rng := rand.New(rand.NewPCG(19, 19))
	var recs []rec
	for i := 0; len(recs) == 0 || recs[len(recs)-1].loc.Seg == recs[0].loc.Seg; i++ {
		r, _ := appendPut(t, l, i, randBytes(rng, val))
		recs = append(recs, r)
	}
	if err := l.Sync(); err != nil { // seals the first segment
		t.Fatal(err)
	}
	for range 3 { // these carry the proof of the seal
		r, lsn := appendPut(t, l, len(recs), randBytes(rng, 100))
		recs = append(recs, r)
		if err := l.Flush(lsn, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	sealed, next := recs[0].loc.Seg, recs[len(recs)-1].loc.Seg
	all, _ := replayAll(t, mem, "/d")
	if next != sealed+1 || !slices.ContainsFunc(all, func(r rec) bool { return r.loc.Seg == next && r.h.Flags&flagPrevSealed != 0 }) {
		t.Fatal("no record of the second segment proves the first sealed")
	}
	return mem, recs
}
