package keyspace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// randomDir is a whole directory of n groups with random locations, ids from 1, lengths and
// summaries.
func randomDir(rng *rand.Rand, n int) *manifest {
	m := &manifest{oid: 77, g: &groupDir{meta: []byte("meta"), next: uint64(n + 1)}}
	for j := range n {
		m.locs = append(m.locs, chunkLoc{shard: uint16(rng.IntN(3)), loc: vlog.Loc{Seg: rng.Uint32(), Off: rng.Uint32()}})
		m.g.ids = append(m.g.ids, uint64(j+1))
		m.g.lens = append(m.g.lens, rng.IntN(9000))
		m.g.sums = append(m.g.sums, []byte(fmt.Sprint("s", rng.IntN(1000))))
	}
	m.length = int64(dirSize(m.g))
	return m
}

// editDir returns a copy of m with edits a command makes: groups replaced, inserted, removed,
// resummarised, in runs anywhere; new groups get new ids.
func editDir(rng *rand.Rand, m *manifest, edits int) *manifest {
	c := &manifest{oid: m.oid, locs: slices.Clone(m.locs), g: &groupDir{meta: m.g.meta, next: m.g.next,
		ids: slices.Clone(m.g.ids), lens: slices.Clone(m.g.lens), sums: slices.Clone(m.g.sums)}}
	newGroup := func() (chunkLoc, uint64, int, []byte) {
		c.g.next++
		return chunkLoc{loc: vlog.Loc{Seg: rng.Uint32(), Off: rng.Uint32()}}, c.g.next - 1, rng.IntN(9000), []byte(fmt.Sprint("n", rng.IntN(1000)))
	}
	for range edits {
		n := len(c.g.ids)
		at := rng.IntN(n + 1)
		switch rng.IntN(4) {
		case 0: // replace
			if at < n {
				c.locs[at], c.g.ids[at], c.g.lens[at], c.g.sums[at] = newGroup()
			}
		case 1: // insert a run
			for range 1 + rng.IntN(3) {
				l, id, ln, s := newGroup()
				c.locs, c.g.ids = slices.Insert(c.locs, at, l), slices.Insert(c.g.ids, at, id)
				c.g.lens, c.g.sums = slices.Insert(c.g.lens, at, ln), slices.Insert(c.g.sums, at, s)
			}
		case 2: // remove a run
			if n > 1 && at < n {
				to := min(n-1, at+1+rng.IntN(3))
				c.locs, c.g.ids = slices.Delete(c.locs, at, to), slices.Delete(c.g.ids, at, to)
				c.g.lens, c.g.sums = slices.Delete(c.g.lens, at, to), slices.Delete(c.g.sums, at, to)
			}
		case 3: // a kept group's summary changes
			if at < n {
				c.g.sums[at] = []byte(fmt.Sprint("r", rng.IntN(1000)))
			}
		}
	}
	return c
}

func sameGroups(a, b *manifest) error {
	if a.oid != b.oid || a.g.next != b.g.next || !bytes.Equal(a.g.meta, b.g.meta) || len(a.g.ids) != len(b.g.ids) {
		return fmt.Errorf("oid %d/%d next %d/%d meta %q/%q groups %d/%d", a.oid, b.oid, a.g.next, b.g.next, a.g.meta, b.g.meta, len(a.g.ids), len(b.g.ids))
	}
	for j := range a.g.ids {
		if a.locs[j] != b.locs[j] || a.g.ids[j] != b.g.ids[j] || a.g.lens[j] != b.g.lens[j] || !bytes.Equal(a.g.sums[j], b.g.sums[j]) {
			return fmt.Errorf("group %d: %v %d %d %q, want %v %d %d %q", j, a.locs[j], a.g.ids[j], a.g.lens[j], a.g.sums[j], b.locs[j], b.g.ids[j], b.g.lens[j], b.g.sums[j])
		}
	}
	return nil
}

// TestDirPatchRoundTrip: for random directories and random edits of them, the patch diffDir
// makes, encoded and decoded, applied to the base, gives the edited directory exactly, and no
// larger than the groups it changed need.
func TestDirPatchRoundTrip(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 5))
	for iter := range 2000 {
		base := randomDir(rng, rng.IntN(200))
		if len(base.g.ids) == 0 {
			base = randomDir(rng, 1)
		}
		want := editDir(rng, base, rng.IntN(6))
		m := &manifest{oid: want.oid, locs: want.locs, g: want.g, base: &dirBase{loc: chunkLoc{shard: 1, loc: vlog.Loc{Seg: 9, Off: 4}}, sub: 0, n: int(base.length)}}
		m.splices = diffDir(base, m)
		changed := 0
		for _, s := range m.splices {
			changed += s.ins
		}
		b := m.encodePatch(nil)
		if len(b) != patchSize(m, m.splices) {
			t.Fatalf("seed %d iter %d: patch of %d bytes, patchSize says %d", seed, iter, len(b), patchSize(m, m.splices))
		}
		got, err := decodeDir(b)
		if err != nil {
			t.Fatalf("seed %d iter %d: decode: %v", seed, iter, err)
		}
		if got.resolved() || got.count != len(want.g.ids) {
			t.Fatalf("seed %d iter %d: decoded patch resolved %v, count %d", seed, iter, got.resolved(), got.count)
		}
		if err := got.applyPatch(base); err != nil {
			t.Fatalf("seed %d iter %d: apply: %v", seed, iter, err)
		}
		if err := sameGroups(got, want); err != nil {
			t.Fatalf("seed %d iter %d: %v", seed, iter, err)
		}
		// A patch names only groups that are not the base's at their place: at most the
		// groups the edits made or touched.
		if limit := 6 * 3; changed > limit {
			t.Fatalf("seed %d iter %d: a patch of %d groups for at most %d edited", seed, iter, changed, limit)
		}
	}
}

// TestDirPatchCorrupt: a patch whose splices do not fit its base is refused as corrupt, never
// applied in part or with a panic.
func TestDirPatchCorrupt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := randomDir(rng, 10)
	for _, tc := range []struct {
		name  string
		spl   []dirSplice
		count int
	}{
		{"past the end", []dirSplice{{at: 8, del: 5}}, 10},
		{"count", nil, 11},
		{"overlapping", []dirSplice{{at: 3, del: 4}, {at: 5, del: 1}}, 5},
	} {
		m := &manifest{oid: base.oid, g: &groupDir{next: base.g.next}, base: &dirBase{n: int(base.length)}, splices: tc.spl, count: tc.count}
		if err := m.applyPatch(base); !isCorrupt(err) {
			t.Errorf("%s: applyPatch = %v, want corrupt", tc.name, err)
		}
	}
	other := randomDir(rng, 10)
	other.oid = 5
	m := &manifest{oid: base.oid, g: &groupDir{next: base.g.next}, base: &dirBase{n: 1}, count: 10}
	if err := m.applyPatch(other); !isCorrupt(err) {
		t.Errorf("another object's base: applyPatch = %v, want corrupt", err)
	}
}

// FuzzDecodeDir: any bytes decode as a directory or a patch, or fail as corrupt; a decoded patch
// applied to a base fails as corrupt or gives its count of groups.
func FuzzDecodeDir(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := randomDir(rng, 20)
	f.Add(base.encodeDir(nil))
	for range 8 {
		want := editDir(rng, base, 3)
		m := &manifest{oid: want.oid, locs: want.locs, g: want.g, base: &dirBase{n: int(base.length)}}
		m.splices = diffDir(base, m)
		f.Add(m.encodePatch(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeDir(b)
		if err != nil {
			if !isCorrupt(err) {
				t.Fatalf("decode error %v is not corrupt", err)
			}
			return
		}
		if m.resolved() {
			return
		}
		if err := m.applyPatch(base); err != nil {
			if !isCorrupt(err) {
				t.Fatalf("apply error %v is not corrupt", err)
			}
			return
		}
		if len(m.g.ids) != m.count || len(m.locs) != m.count {
			t.Fatalf("applied patch of count %d has %d groups", m.count, len(m.g.ids))
		}
	})
}

// TestDirPatchEditCost: on a value of 4000 groups (a directory of about 70 KB), focused edits
// append the group and a patch of a few hundred bytes, plus now and then a new base: on average
// a tenth of the directory or less; they read the group alone (the directory the last one wrote
// is cached), after a restart the patch and the group (the count of live bytes at start caches
// the base), and with the cache empty the patch, the base and the group. The value stays what the model says,
// through the restart and a collection that moves everything.
func TestDirPatchEditCost(t *testing.T) {
	if invariants {
		t.Skip("counts reads, and the invariants build reads records back")
	}
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 9))
	clk := newTestClock()
	opts := groupTestOpts(vfs.NewMem(), clk, 0)
	opts.Shards, opts.SegmentSize, opts.ReclaimRate = 1, 4<<20, 0
	ks := mustOpen(t, opts)
	defer func() { mustClose(t, ks) }()
	se := ks.NewSession()
	const n, size = 4000, 64
	groups := patternedGroups(n, size)
	const key = "big"
	r := putDir(t, ks, se, key, []byte("hdr"), groups, 0, TypeHash)
	full := dirSize(readDirManifest(t, ks, key).g)
	edit := func(j int) (reads, appended uint64) {
		t.Helper()
		data := patterned(size+rng.IntN(20), rng.Uint64())
		reads, _, appended = engineDelta(ks, func() { replaceGroup(t, ks, se, key, j, data, TypeHash, nil) })
		r.groups[j] = data
		return reads, appended
	}
	const edits = 400
	var total uint64
	for range edits {
		reads, appended := edit(rng.IntN(n))
		if reads != 1 {
			t.Fatalf("seed %d: a focused edit read %d records, want 1 (the group; the directory the last edit wrote is cached)", seed, reads)
		}
		total += appended
	}
	per := total / edits
	t.Logf("seed %d: %d focused edits of a %d-group value (directory %d bytes): %d bytes appended each on average", seed, edits, n, full, per)
	if per > uint64(full/10) {
		t.Fatalf("seed %d: %d bytes appended per edit, want at most a tenth of the %d-byte directory", seed, per, full)
	}
	checkGroupRef(t, ks, key, r, "after the edits")
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	se = ks.NewSession()
	checkGroupRef(t, ks, key, r, "after a restart")
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	se = ks.NewSession()
	if reads, _ := edit(6); reads != 2 {
		t.Fatalf("seed %d: the first edit after a restart read %d records, want 2", seed, reads)
	}
	ks.dirs = dirCache{}
	if reads, _ := edit(7); reads != 3 {
		t.Fatalf("seed %d: the first edit with no base cached read %d records, want 3 (patch, base, group)", seed, reads)
	}
	if reads, _ := edit(8); reads != 1 {
		t.Fatalf("seed %d: the next edit read %d records, want 1", seed, reads)
	}
	ks.SetReclaimRate(1 << 40)
	reclaimUntilIdle(t, ks)
	checkGroupRef(t, ks, key, r, "after collecting")
}
