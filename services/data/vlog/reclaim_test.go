package vlog

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

func mustAppend(t *testing.T, l *Log, h Header, key, val []byte) Loc {
	t.Helper()
	loc, _, err := l.Append(h, key, val)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func segStat(t *testing.T, l *Log, id uint32) SegmentStat {
	t.Helper()
	st, ok := l.SegmentStat(id)
	if !ok {
		t.Fatalf("no segment %d", id)
	}
	return st
}

// TestSegmentAccounting follows one segment's size, dead and stale bytes through appends of
// every kind, MarkDead, rotation, SetLive and MarkAllDead.
func TestSegmentAccounting(t *testing.T) {
	opts := testOpts(vfs.NewMem(), "/log")
	opts.SegmentSize = 4 << 10
	l, _ := collect(t, opts)
	defer l.Close()
	put := mustAppend(t, l, Header{Kind: KindPut, Version: 1}, []byte("a"), bytes.Repeat([]byte("v"), 100))
	putSize := RecordSize(0, 1, 100)
	del := RecordSize(0, 1, 0)
	mustAppend(t, l, Header{Kind: KindDelete, Version: 2}, []byte("b"), nil)
	mustAppend(t, l, Header{Kind: KindExpire, Version: 3, ExpireAt: 9}, []byte("a"), nil)
	mustAppend(t, l, Header{Kind: KindFlushDB, Version: 4}, nil, nil)
	flush := RecordSize(0, 0, 0)
	st := segStat(t, l, put.Seg)
	hdr := int64(SegmentHeaderSize) // dead from the start, like a record that is no put
	if want := hdr + putSize + 2*del + flush; st.Size != want || st.Dead != hdr+2*del+flush || st.Stale != 0 || st.Expire != del || !st.Active {
		t.Fatalf("after appends: %+v, want size %d, dead %d, stale 0, expire %d", st, want, hdr+2*del+flush, del)
	}
	if l.MayHoldStaleBefore(put.Seg + 1) {
		t.Fatal("no dead put yet, but MayHoldStaleBefore says so")
	}
	l.MarkDead(put, putSize)
	st = segStat(t, l, put.Seg)
	if st.Live() != 0 || st.Stale != putSize || st.Removed != 0 {
		t.Fatalf("after MarkDead: %+v", st)
	}
	removed := mustAppend(t, l, Header{Kind: KindPut, Version: 5}, []byte("r"), []byte("gone"))
	l.MarkRemoved(removed, RecordSize(0, 1, 4))
	st = segStat(t, l, put.Seg)
	if st.Live() != 0 || st.Stale != putSize+RecordSize(0, 1, 4) || st.Removed != RecordSize(0, 1, 4) {
		t.Fatalf("after MarkRemoved: %+v", st)
	}
	if !l.MayHoldStaleBefore(put.Seg+1) || l.MayHoldStaleBefore(put.Seg) {
		t.Fatal("MayHoldStaleBefore wrong after a dead put")
	}
	l.MarkDead(Loc{Seg: 999}, 10) // a segment that does not exist: ignored

	// Fill on past the segment: the sealed one keeps its figures.
	last := put
	for i := 0; last.Seg == put.Seg; i++ {
		last = mustAppend(t, l, Header{Kind: KindPut, Version: uint64(10 + i)}, []byte(fmt.Sprint(i)), bytes.Repeat([]byte("x"), 500))
	}
	if err := l.Sync(); err != nil { // seals the full segment
		t.Fatal(err)
	}
	sealed := segStat(t, l, put.Seg)
	if sealed.Active || sealed.Size <= st.Size || sealed.Dead != st.Dead {
		t.Fatalf("sealed: %+v (before %+v)", sealed, st)
	}
	sp := l.SpaceStats()
	var size int64
	for _, g := range l.SegmentStats() {
		size += g.Size
	}
	if sp.LiveBytes+sp.DeadBytes != size || sp.DeadBytes != st.Dead+hdr { // + the next segment's header
		t.Fatalf("space %+v, segments hold %d bytes", sp, size)
	}

	// SetLive, as the keyspace calls it after Open: dead bytes not known to be non-puts
	// become possible puts.
	l.SetLive(map[uint32]int64{last.Seg: RecordSize(0, len(fmt.Sprint(0)), 500)}, true)
	st = segStat(t, l, put.Seg)
	if st.Dead != st.Size || st.Stale != st.Size-(hdr+2*del+flush) || st.Removed != st.Stale {
		t.Fatalf("after SetLive: %+v", st)
	}
	active := segStat(t, l, last.Seg)
	if active.Live() != RecordSize(0, 1, 500) {
		t.Fatalf("active after SetLive: %+v", active)
	}
	l.MarkAllDead()
	for _, g := range l.SegmentStats() {
		if g.Dead != g.Size {
			t.Fatalf("after MarkAllDead: %+v", g)
		}
	}
}

// TestSegmentScan writes records of many sizes (some over the batch size), then reads a sealed
// segment back in batches and compares every record; the active segment cannot be scanned.
func TestSegmentScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	opts := testOpts(vfs.NewMem(), "/log")
	opts.SegmentSize = 1 << 20
	l, _ := collect(t, opts)
	defer l.Close()
	type want struct {
		loc      Loc
		h        Header
		key, val []byte
	}
	var recs []want
	for i := 0; ; i++ {
		kinds := []Kind{KindPut, KindPut, KindPut, KindDelete, KindExpire, KindFlushDB}
		h := Header{Kind: kinds[rng.IntN(len(kinds))], DB: uint8(rng.IntN(3)), Version: uint64(i + 1), ExpireAt: rng.Int64N(100)}
		key := []byte(fmt.Sprintf("key-%d", i))
		var val []byte
		if h.Kind == KindPut {
			n := rng.IntN(300)
			if rng.IntN(20) == 0 {
				n = 20000 + rng.IntN(100000)
			}
			val = make([]byte, n)
			for j := range val {
				val[j] = byte(rng.Uint32())
			}
		}
		loc := mustAppend(t, l, h, key, val)
		if loc.Seg != 1 {
			break
		}
		h.KeyLen, h.ValLen = uint32(len(key)), uint32(len(val))
		recs = append(recs, want{loc, h, key, val})
	}
	if err := l.Sync(); err != nil { // seals segment 1
		t.Fatal(err)
	}
	if _, err := l.ScanSegment(2); err == nil {
		t.Fatal("scanned the active segment")
	}
	for _, batch := range []int{1, 4096, 64 << 10, 8 << 20} {
		sc, err := l.ScanSegment(1)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			got, err := sc.Next(batch)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				break
			}
			var bytes int64
			for i, r := range got {
				w := recs[n]
				w.h.Synced, w.h.Flags = r.Header.Synced, r.Header.Flags // set by the log
				if r.Loc != w.loc || r.Header != w.h || string(r.Key) != string(w.key) || string(r.Val) != string(w.val) {
					t.Fatalf("batch %d, record %d: %+v %q (%d bytes), want %+v %q (%d bytes)", batch, n, r.Header, r.Key, len(r.Val), w.h, w.key, len(w.val))
				}
				if i > 0 && bytes >= int64(batch) {
					t.Fatalf("batch of %d bytes went on after %d", batch, bytes)
				}
				bytes += r.Size()
				n++
			}
		}
		if n != len(recs) || sc.Corrupt != 0 {
			t.Fatalf("batch %d: %d records (%d corrupt), want %d", batch, n, sc.Corrupt, len(recs))
		}
		sc.Close()
	}
}

// TestSegmentScanSkipsCorrupt damages one record of a sealed segment: the scan skips it, as
// replay does, and yields every other record.
func TestSegmentScanSkipsCorrupt(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOpts(mem, "/log")
	opts.SegmentSize = 8 << 10
	l, _ := collect(t, opts)
	defer l.Close()
	var locs []Loc
	for i := 0; ; i++ {
		loc := mustAppend(t, l, Header{Kind: KindPut, Version: uint64(i + 1)}, []byte(fmt.Sprint("k", i)), bytes.Repeat([]byte{'v'}, 200))
		if loc.Seg != 1 {
			break
		}
		locs = append(locs, loc)
	}
	if err := l.Sync(); err != nil { // seals segment 1
		t.Fatal(err)
	}
	f, err := mem.OpenReadWrite(filepath.Join("/log", segName(1)))
	if err != nil {
		t.Fatal(err)
	}
	bad := locs[len(locs)/2]
	if _, err := f.WriteAt([]byte{'X'}, int64(bad.Off)+HeaderSize+10); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
	sc, err := l.ScanSegment(1)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	n := 0
	for {
		got, err := sc.Next(1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, r := range got {
			if r.Loc == bad {
				t.Fatal("the corrupt record was yielded")
			}
			n++
		}
	}
	if n != len(locs)-1 || sc.Corrupt != 1 {
		t.Fatalf("%d records, %d corrupt; want %d and 1", n, sc.Corrupt, len(locs)-1)
	}
}

// TestDropSegmentWaitsForReaders drops a segment while a read of it is in flight and while a
// pin holds it: the file stays, and counts as pending (an older segment that may hold dead
// puts), until the last of them lets go.
func TestDropSegmentWaitsForReaders(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOpts(mem, "/log")
	opts.SegmentSize = 4 << 10
	l, _ := collect(t, opts)
	defer l.Close()
	val := bytes.Repeat([]byte("r"), 1000)
	first := mustAppend(t, l, Header{Kind: KindPut, Version: 1}, []byte("k"), val)
	for i := 0; ; i++ {
		if loc := mustAppend(t, l, Header{Kind: KindPut, Version: uint64(i + 2)}, []byte("f"), val); loc.Seg == 3 {
			break
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	path1, path2 := filepath.Join("/log", segName(1)), filepath.Join("/log", segName(2))
	exists := func(p string) bool { _, err := mem.Stat(p); return err == nil }

	var r Read
	if err := l.PrepareRead(&r, first, int(RecordSize(0, 1, len(val)))); err != nil {
		t.Fatal(err)
	}
	unpin := l.Pin(2)
	if err := l.DropSegment(3); err == nil {
		t.Fatal("dropped the active segment")
	}
	for _, id := range []uint32{1, 2} {
		if err := l.DropSegment(id); err != nil {
			t.Fatal(err)
		}
	}
	if l.HasSegment(1) || !exists(path1) || !exists(path2) {
		t.Fatal("a dropped segment's file went while a reader and a pin held it")
	}
	if !l.MayHoldStaleBefore(3) || l.MayHoldStaleBefore(1) {
		t.Fatal("pending segments do not count as possibly stale")
	}
	if sp := l.SpaceStats(); sp.PendingSegments != 2 || sp.PendingBytes == 0 {
		t.Fatalf("space stats %+v, want 2 pending segments", sp)
	}
	Submit(opts.Engine, []*Read{&r})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if got, err := decodeVal(r.Data); err != nil || !bytes.Equal(got, val) {
		t.Fatalf("read of a dropped segment: %v", err)
	}
	r.Release()
	// A read's release leaves the removal to a goroutine (the request path does not unlink
	// and sync the directory).
	l.removals.Wait()
	if exists(path1) || !exists(path2) {
		t.Fatal("the last reader's release did not remove the file, or removed the pinned one")
	}
	unpin()
	unpin()
	if exists(path2) || l.MayHoldStaleBefore(3) {
		t.Fatal("unpinning did not remove the file")
	}
	// The removals are durable: a crash now does not bring the files back.
	c := mem.CrashClone()
	if _, err := c.Stat(path1); err == nil {
		t.Fatal("dropped segment survives a crash")
	}
}

// TestChunkAccounting follows chunk records through the accounting: live when appended, like a
// put; dead through MarkChunkDead, counted in Chunks and not in Stale, so that dead chunks never
// keep a tombstone alive (MayHoldStaleBefore); SetLive keeps the known split.
func TestChunkAccounting(t *testing.T) {
	opts := testOpts(vfs.NewMem(), "/log")
	opts.SegmentSize = 4 << 10
	l, _ := collect(t, opts)
	defer l.Close()
	chunk := func(off int64) Loc {
		return mustAppend(t, l, Header{Kind: KindSub, Version: 1, ExpireAt: off}, []byte("k"), bytes.Repeat([]byte("c"), 64))
	}
	c0, c1 := chunk(0), chunk(64)
	n := RecordSize(0, 1, 64)
	man := mustAppend(t, l, Header{Kind: KindPut, Version: 1, VType: 0x20}, []byte("k"), make([]byte, 32))
	st := segStat(t, l, c0.Seg)
	hdr := int64(SegmentHeaderSize)
	if st.Dead != hdr || st.Chunks != 0 || st.Size != hdr+2*n+RecordSize(0, 1, 32) {
		t.Fatalf("after appending chunks and a manifest: %+v", st)
	}
	l.MarkChunkDead(c0, n)
	st = segStat(t, l, c0.Seg)
	if st.Dead != hdr+n || st.Chunks != n || st.Stale != 0 || st.Removed != 0 {
		t.Fatalf("after MarkChunkDead: %+v", st)
	}
	if l.MayHoldStaleBefore(c0.Seg + 1) {
		t.Fatal("a dead chunk makes MayHoldStaleBefore true: it would keep tombstones alive")
	}
	l.MarkDead(man, RecordSize(0, 1, 32)) // the manifest is a put: stale once dead
	if !l.MayHoldStaleBefore(c0.Seg + 1) {
		t.Fatal("a dead manifest must count as a dead put")
	}
	l.MarkChunkDead(c1, n)
	st = segStat(t, l, c0.Seg)
	if st.Live() != 0 || st.Chunks != 2*n || st.Stale != RecordSize(0, 1, 32) {
		t.Fatalf("all dead: %+v", st)
	}
	// SetLive after a restart: known chunk bytes stay chunks, the rest of unknown cause.
	l.SetLive(map[uint32]int64{}, true)
	st = segStat(t, l, c0.Seg)
	if st.Dead != st.Size || st.Chunks != 2*n || st.Stale != st.Size-hdr-2*n {
		t.Fatalf("after SetLive: %+v", st)
	}
	l.MarkChunkDead(Loc{Seg: 999}, 10) // a segment that does not exist: ignored
}

// TestChunkReplayAndReads: replay hands chunk records on with their payload like any record,
// and a read of a location whose segment was dropped fails with ErrSegmentGone.
func TestChunkReplayAndReads(t *testing.T) {
	opts := testOpts(vfs.NewMem(), "/log")
	opts.SegmentSize = 512
	l, _ := collect(t, opts)
	c := mustAppend(t, l, Header{Kind: KindSub, DB: 2, Version: 7, ExpireAt: 8192}, []byte("key"), []byte("chunk bytes"))
	for l.Stats().Segments < 3 {
		mustAppend(t, l, Header{Kind: KindPut, Version: 8}, []byte("fill"), make([]byte, 200))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, recs := collect(t, opts)
	defer l.Close()
	if r := recs[0]; r.loc != c || r.h.Kind != KindSub || r.h.DB != 2 || r.h.ExpireAt != 8192 || r.key != "key" || string(r.val) != "chunk bytes" {
		t.Fatalf("replayed %+v", r)
	}
	if v, err := readRecord(t, l, c, int(RecordSize(0, 3, 11))); err != nil || string(v) != "chunk bytes" {
		t.Fatalf("read: %q %v", v, err)
	}
	if err := l.DropSegment(c.Seg); err != nil {
		t.Fatal(err)
	}
	if _, err := readRecord(t, l, c, int(RecordSize(0, 3, 11))); !errors.Is(err, ErrSegmentGone) {
		t.Fatalf("read of a dropped segment: %v, want ErrSegmentGone", err)
	}
}
