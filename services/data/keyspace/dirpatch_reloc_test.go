package keyspace

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// setPatchMin sets patchMinDir for the test.
func setPatchMin(t *testing.T, v int) {
	old := patchMinDir
	patchMinDir = v
	t.Cleanup(func() { patchMinDir = old })
}

// patternedGroups is n groups of size bytes each.
func patternedGroups(n, size int) [][]byte {
	groups := make([][]byte, n)
	for j := range groups {
		groups[j] = patterned(size, uint64(j))
	}
	return groups
}

// smallSegmentOpts are the options of a one-shard keyspace on fs with 4 KiB segments and the
// collector left to the test.
func smallSegmentOpts(fs vfs.FS, clk *testClock) Options {
	opts := groupTestOpts(fs, clk, 0)
	opts.Shards, opts.SegmentSize, opts.ReclaimRate = 1, 4<<10, 0
	return opts
}

// TestDirPatchCheckpointRelocated: a directory covered by a checkpoint (a patch with splices, or
// a whole one of the size that is a patch now) is relocated by the collector; after a crash the
// checkpoint is loaded and the tail replayed, which moves the key's entry to the copy only if
// the copy has the length the checkpoint recorded: relocation keeps a directory's form and
// length.
func TestDirPatchCheckpointRelocated(t *testing.T) {
	for _, tc := range []struct {
		name         string
		write, after int
	}{
		{"whole directories (control)", 1 << 30, 1 << 30},
		{"patch with splices", 0, 0},
		{"whole directory written before the upgrade", 1 << 30, 0},
	} {
		t.Run(tc.name, func(t *testing.T) { testDirPatchCheckpointRelocated(t, tc.write, tc.after) })
	}
}

func testDirPatchCheckpointRelocated(t *testing.T, write, after int) {
	setPatchMin(t, write)
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := smallSegmentOpts(mem, clk)
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	groups := patternedGroups(8, 300)
	r := putDir(t, ks, se, "big", []byte("hdr"), groups, 0, TypeHash)
	data := patterned(300, 99)
	replaceGroup(t, ks, se, "big", 3, data, TypeHash, nil)
	r.groups[3] = data
	checkGroupRef(t, ks, "big", r, "before")
	s := ks.shards[0]
	e := s.ix.entry(func() uint32 { i, _, _ := s.ix.find(uint32(ks.hash(0, []byte("big"))), 0, []byte("big")); return i }())
	t.Logf("directory record: %d bytes", e.vlen)
	if err := ks.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	patchMinDir = after
	for i := 0; i < 20; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("f%d", i), string(patterned(400, uint64(i))), 0)
	}
	for _, g := range s.log.SegmentStats() {
		if !g.Active && !g.Pending {
			if err := reclaimNow(ks, s, g.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	e = s.ix.entry(func() uint32 { i, _, _ := s.ix.find(uint32(ks.hash(0, []byte("big"))), 0, []byte("big")); return i }())
	t.Logf("after relocation: directory record %d bytes, stats %+v", e.vlen, ks.Stats(nil).Checkpoint)
	checkGroupRef(t, ks, "big", r, "after relocation")
	if err := s.log.Sync(); err != nil {
		t.Fatal(err)
	}
	reopen := opts
	reopen.FS = mem.CrashClone()
	ks2 := mustOpen(t, reopen)
	t.Logf("reopened: %+v", ks2.Stats(nil).Checkpoint)
	if err := groupRefErr(t, ks2, "big", r); err != nil {
		t.Errorf("after a crash and restart from the checkpoint: %v", err)
	}
	mustClose(t, ks2)
	mustClose(t, ks)
}

// TestDirPatchMGetSnapshot: MGet with a snapshot reads a grouped value whose directory is a
// patch; the Value it hands over must be the value's.
func TestDirPatchMGetSnapshot(t *testing.T) {
	setPatchMin(t, 0)
	clk := newTestClock()
	opts := groupTestOpts(vfs.NewMem(), clk, 0)
	opts.Shards = 1
	ks := mustOpen(t, opts)
	defer mustClose(t, ks)
	se := ks.NewSession()
	groups := patternedGroups(8, 300)
	r := putDir(t, ks, se, "big", []byte("hdr"), groups, 0, TypeHash)
	data := patterned(300, 99)
	replaceGroup(t, ks, se, "big", 3, data, TypeHash, nil)
	r.groups[3] = data
	want, _, _ := getGrouped(t, ks, 0, "big")
	err := ks.MGet(se, 0, [][]byte{[]byte("big")}, true, func(i int, v Value, m Meta, ok bool, err error) error {
		if err != nil || !ok {
			t.Fatalf("MGet: ok %v err %v", ok, err)
		}
		got, err := v.Bytes()
		if err != nil {
			t.Errorf("MGet snapshot Value.Bytes: %v", err)
			return nil
		}
		if !bytes.Equal(got, want) {
			t.Errorf("MGet snapshot Value.Bytes = %d bytes, Get = %d bytes (Len %d)", len(got), len(want), v.Len)
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

// TestDirPatchCheckpointRelocatedBase: as above, but only the base's segment is collected:
// the patch the checkpoint names survives, and names a base in a dropped segment.
func TestDirPatchCheckpointRelocatedBase(t *testing.T) {
	setPatchMin(t, 0)
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := smallSegmentOpts(mem, clk)
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	groups := patternedGroups(8, 300)
	r := putDir(t, ks, se, "big", []byte("hdr"), groups, 0, TypeHash)
	for i := 0; i < 12; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("f%d", i), string(patterned(400, uint64(i))), 0)
	}
	data := patterned(300, 99)
	replaceGroup(t, ks, se, "big", 3, data, TypeHash, nil)
	r.groups[3] = data
	s := ks.shards[0]
	var man *manifest
	var mloc uint64
	if err := ks.Update(se, []Key{{Key: []byte("big")}}, func(tx *Tx) error {
		if _, err := tx.Dir(0); err != nil {
			return err
		}
		man, mloc = tx.keys[0].man, tx.keys[0].manLoc
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	baseSeg := man.base.loc.loc.Seg
	t.Logf("patch at %x (segment %d), base in segment %d, %d splices", mloc, mloc>>32, baseSeg, len(man.splices))
	if err := ks.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for i := 12; i < 24; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("f%d", i), string(patterned(400, uint64(i))), 0)
	}
	if err := reclaimNow(ks, s, baseSeg); err != nil {
		t.Fatal(err)
	}
	if s.log.HasSegment(baseSeg) {
		t.Fatalf("segment %d not dropped", baseSeg)
	}
	checkGroupRef(t, ks, "big", r, "after collecting the base's segment")
	if err := s.log.Sync(); err != nil {
		t.Fatal(err)
	}
	reopen := opts
	reopen.FS = mem.CrashClone()
	ks2 := mustOpen(t, reopen)
	defer mustClose(t, ks2)
	t.Logf("reopened: %+v", ks2.Stats(nil).Checkpoint)
	if err := checkAccounting(ks2); err != nil {
		t.Errorf("accounting after the restart: %v", err)
	}
	_, err := ks2.Get(nil, 0, []byte("big"), func(v Value, m Meta) error { _, err := v.Bytes(); return err })
	if err != nil {
		t.Errorf("Get after a crash and restart from the checkpoint: %v", err)
	}
	mustClose(t, ks)
}

// TestDirPatchRelocationSettles: a value whose base is about a segment's size, edited at random,
// then collected by the policy until idle: a relocation that rewrites the base counts it in
// what the move kills elsewhere, or two segments hand the base back and forth.
func TestDirPatchRelocationSettles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pmin  int
		segKB int64
	}{{"patches/16KiB", 4 << 10, 16}, {"patches/32KiB", 4 << 10, 32}, {"patches/64KiB", 4 << 10, 64},
		{"whole/16KiB", 1 << 30, 16}, {"whole/32KiB", 1 << 30, 32}, {"whole/64KiB", 1 << 30, 64}} {
		segKB := tc.segKB
		t.Run(tc.name, func(t *testing.T) {
			setPatchMin(t, tc.pmin)
			clk := newTestClock()
			opts := groupTestOpts(vfs.NewMem(), clk, 0)
			opts.Shards, opts.SegmentSize, opts.ReclaimRate = 1, segKB<<10, 0
			ks := mustOpen(t, opts)
			defer mustClose(t, ks)
			se := ks.NewSession()
			groups := patternedGroups(600, 64)
			r := putDir(t, ks, se, "big", []byte("hdr"), groups, 0, TypeHash)
			for i := 0; i < 300; i++ {
				j := (i * 7919) % len(groups)
				data := patterned(64, uint64(1000+i))
				replaceGroup(t, ks, se, "big", j, data, TypeHash, nil)
				r.groups[j] = data
			}
			before := ks.Stats(nil).Reclaim
			n, idle, err := reclaimPolicy(ks, 2000)
			after := ks.Stats(nil).Reclaim
			t.Logf("%d segments collected, idle %v, err %v; moved %d bytes (before %+v)", n, idle, err, after.BytesMoved-before.BytesMoved, before)
			if err != nil || !idle {
				t.Errorf("policy did not settle: %d segments, idle %v, err %v", n, idle, err)
			}
			if err := checkAccounting(ks); err != nil {
				t.Error(err)
			}
			checkGroupRef(t, ks, "big", r, "after collecting")
		})
	}
}
