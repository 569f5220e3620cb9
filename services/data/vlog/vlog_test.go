package vlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

func testOpts(fs vfs.FS, dir string) Options {
	e, _ := NewEngine("pread", 16)
	return Options{FS: fs, Dir: dir, SegmentSize: 1 << 16, Engine: e, Fsync: FsyncEverysec}
}

type rec struct {
	loc Loc
	h   Header
	key string
	val []byte
}

func collect(t *testing.T, opts Options) (*Log, []rec) {
	t.Helper()
	l, got, err := openReplay(opts, Loc{})
	if err != nil {
		t.Fatal(err)
	}
	return l, got
}

// openReplay opens a log and replays it from from, returning the records that are not marks.
func openReplay(opts Options, from Loc) (*Log, []rec, error) {
	l, err := Open(opts)
	if err != nil {
		return nil, nil, err
	}
	var got []rec
	err = l.Replay(from, func(r *Record) error {
		if r.Header.Kind != KindMark {
			got = append(got, rec{loc: r.Loc, h: r.Header, key: string(r.Key), val: append([]byte(nil), r.Val...)})
		}
		return nil
	})
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	return l, got, nil
}

func readRecord(t *testing.T, l *Log, loc Loc, n int) ([]byte, error) {
	t.Helper()
	var r Read
	if err := l.PrepareRead(&r, loc, n); err != nil {
		return nil, err
	}
	defer r.Release()
	Submit(l.opts.Engine, []*Read{&r})
	if r.Err != nil {
		return nil, r.Err
	}
	d, err := DecodeRecord(r.Data)
	return append([]byte(nil), d.Val...), err
}

func TestRecordRoundTrip(t *testing.T) {
	h := Header{Kind: KindPut, DB: 3, VType: 2, Flags: FlagRaw | FlagTx, Version: 42, ExpireAt: 1234, Sub: 77, Synced: 9}
	b := AppendRecord(nil, h, []byte("ext"), []byte("key"), []byte("value"))
	if int64(len(b)) != RecordSize(3, 3, 5) {
		t.Fatalf("size %d", len(b))
	}
	r, err := DecodeRecord(b)
	got := r.Header
	if err != nil || string(r.Ext) != "ext" || string(r.Key) != "key" || string(r.Val) != "value" || got.Version != 42 ||
		got.DB != 3 || got.VType != 2 || got.Flags != FlagRaw|FlagTx || got.ExpireAt != 1234 || got.Sub != 77 || got.Synced != 9 {
		t.Fatalf("decode: %+v %v", r, err)
	}
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x10
		if _, err := DecodeRecord(c); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipping byte %d not detected: %v", i, err)
		}
	}
}

// A record that verifies but that this version does not know is refused as newer, never as
// corrupt: recovery must not cut it as a torn tail.
func TestRecordOfNewerFormat(t *testing.T) {
	for name, mutate := range map[string]func(b []byte){
		"kind":     func(b []byte) { b[5] = byte(maxKind + 1) },
		"flag":     func(b []byte) { b[8] |= 1 << 5 },
		"reserved": func(b []byte) { b[9] = 1 },
	} {
		b := AppendRecord(nil, Header{Kind: KindPut, Version: 1}, nil, []byte("k"), []byte("v"))
		mutate(b)
		binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], castagnoli))
		if _, err := DecodeRecord(b); !errors.Is(err, ErrNewerFormat) || errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrNewerFormat only", name, err)
		}
	}
}

// TestSegmentHeaderPrev: a segment header records the segment before it and that segment's
// final size, under the header's CRC; reserved bytes are still ignored. A log's rotations and
// the upgrade's SegmentWriter both fill it in, and the first segment records none.
func TestSegmentHeaderPrev(t *testing.T) {
	for _, prev := range []SegExtent{{}, {ID: 7, Size: 4096}, {ID: math.MaxUint32 - 1, Size: MaxSegmentSize + MaxRecordSize}} {
		b := appendSegHeader(nil, 8, 1234, prev)
		h, err := decodeSegHeader(b, 8)
		if err != nil || h.prev != prev || h.id != 8 || h.created != 1234 || h.format != FormatVersion {
			t.Fatalf("prev %v: decoded %+v, %v", prev, h, err)
		}
		for _, i := range []int{20, 23, 32, 39} {
			c := slices.Clone(b)
			c[i] ^= 0x10
			if _, err := decodeSegHeader(c, 8); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("prev %v: flipping header byte %d not detected: %v", prev, i, err)
			}
		}
		// Reserved bytes that are not zero, under a CRC that verifies, are ignored.
		c := slices.Clone(b)
		for i := 40; i < 60; i++ {
			c[i] = byte(i)
		}
		binary.LittleEndian.PutUint32(c[60:], crc32.Checksum(c[:60], castagnoli))
		if h2, err := decodeSegHeader(c, 8); err != nil || h2 != h {
			t.Fatalf("prev %v: with reserved bytes set: %+v, %v; want %+v", prev, h2, err, h)
		}
	}

	mem := vfs.NewMem()
	opts := recOpts(mem, "/d")
	opts.SegmentSize = 4096
	l, _ := collect(t, opts)
	rng := rand.New(rand.NewPCG(17, 17))
	for i := 0; l.cur().seg.id < 4; i++ {
		appendPut(t, l, i, randBytes(rng, 1+rng.IntN(900)))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, sizes := replayAll(t, mem, "/d")
	checkPrevs := func(dir string, sizes map[uint32]int64) {
		t.Helper()
		ids := slices.Sorted(maps.Keys(sizes))
		for i, id := range ids {
			h, err := decodeSegHeader(fileBytes(t, mem, filepath.Join(dir, segName(id))), id)
			want := SegExtent{}
			if i > 0 {
				want = SegExtent{ID: ids[i-1], Size: sizes[ids[i-1]]}
			}
			if err != nil || h.prev != want {
				t.Fatalf("%s: header records %v before it (%v), want %v", segName(id), h.prev, err, want)
			}
		}
	}
	if len(sizes) != 4 {
		t.Fatalf("%d segments, want 4", len(sizes))
	}
	checkPrevs("/d", sizes)

	// The upgrade writes segments with gaps between their ids (format 1 reclaimed some).
	if err := mem.MkdirAll("/u", 0o755); err != nil {
		t.Fatal(err)
	}
	var prev SegExtent
	want := map[uint32]int64{}
	for _, id := range []uint32{3, 4, 9} {
		w, err := NewSegmentWriter(mem, "/u", id, prev)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := w.Append(Header{Kind: KindPut, Version: 1}, nil, []byte(fmt.Sprint("k", id, i)), randBytes(rng, 100)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		prev = w.Extent()
		want[id] = prev.Size
	}
	if err := mem.SyncDir("/u"); err != nil {
		t.Fatal(err)
	}
	checkPrevs("/u", want)
	ul, got := collect(t, recOpts(mem, "/u"))
	defer ul.Close()
	if len(got) != 9 {
		t.Fatalf("the written segments replay %d records, want 9", len(got))
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(AppendRecord(nil, Header{Kind: KindPut, Version: 1}, nil, []byte("k"), []byte("v")))
	f.Add(AppendRecord(nil, Header{Kind: KindFlushAll, Version: 9}, nil, nil, nil))
	f.Add(AppendRecord(nil, Header{Kind: KindSub, Version: 3, Sub: 1}, nil, []byte("objectid"), []byte("chunk")))
	f.Add(AppendRecord(nil, Header{Kind: KindPut, Flags: FlagTx, Version: 3}, []byte("condition"), []byte("k"), []byte("v")))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNewerFormat) {
				t.Fatalf("error of no known class: %v", err)
			}
			return
		}
		again := AppendRecord(nil, r.Header, r.Ext, r.Key, r.Val)
		if !bytes.Equal(again, b[:len(again)]) {
			t.Fatalf("re-encoding differs")
		}
	})
}

func TestAppendReadAcrossSyncAndRotation(t *testing.T) {
	for _, name := range []string{"os", "mem"} {
		t.Run(name, func(t *testing.T) {
			var fs vfs.FS = vfs.NewMem()
			dir := "/data/shard"
			if name == "os" {
				fs, dir = vfs.Default, filepath.Join(t.TempDir(), "shard")
			}
			opts := testOpts(fs, dir)
			l, _ := collect(t, opts)
			rng := rand.New(rand.NewPCG(1, 2))
			var recs []rec
			for i := 0; i < 500; i++ {
				val := make([]byte, rng.IntN(3000))
				for j := range val {
					val[j] = byte(rng.IntN(256))
				}
				key := fmt.Sprintf("key-%d", i)
				h := Header{Kind: KindPut, Version: uint64(i + 1)}
				loc, lsn, err := l.Append(h, []byte(key), val)
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, rec{loc: loc, h: h, key: key, val: val})
				if i%7 == 0 {
					if err := l.Flush(lsn, i%14 == 0); err != nil {
						t.Fatal(err)
					}
				}
				// Every record is readable at once, from the tail or the file.
				j := rng.IntN(len(recs))
				got, err := readRecord(t, l, recs[j].loc, int(RecordSize(0, len(recs[j].key), len(recs[j].val))))
				if err != nil || !bytes.Equal(got, recs[j].val) {
					t.Fatalf("record %d: %v", j, err)
				}
			}
			if st := l.Stats(); st.Segments < 2 {
				t.Fatalf("expected rotation, got %d segments", st.Segments)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, got := collect(t, opts)
			defer l2.Close()
			if len(got) != len(recs) {
				t.Fatalf("replayed %d records, want %d", len(got), len(recs))
			}
			for i := range recs {
				if got[i].key != recs[i].key || got[i].loc != recs[i].loc {
					t.Fatalf("record %d: got %+v want %+v", i, got[i], recs[i])
				}
				v, err := readRecord(t, l2, recs[i].loc, int(RecordSize(0, len(recs[i].key), len(recs[i].val))))
				if err != nil || !bytes.Equal(v, recs[i].val) {
					t.Fatalf("reread %d: %v", i, err)
				}
			}
		})
	}
}

// TestCrashKeepsSyncedPrefix crashes a file system at random points: every record that was
// synced before the crash must replay, no partial record may replay, and the torn tail is cut.
func TestCrashKeepsSyncedPrefix(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		mem := vfs.NewMem()
		opts := testOpts(mem, "/d")
		l, _ := collect(t, opts)
		synced := 0
		n := 0
		for i := 0; i < 200; i++ {
			_, lsn, err := l.Append(Header{Kind: KindPut, Version: uint64(i + 1)}, []byte(fmt.Sprint(i)), make([]byte, rng.IntN(2000)))
			if err != nil {
				t.Fatal(err)
			}
			n++
			if rng.IntN(5) == 0 {
				if err := l.Flush(lsn, true); err != nil {
					t.Fatal(err)
				}
				synced = n
			} else if rng.IntN(3) == 0 {
				l.Flush(lsn, false)
			}
		}
		crashed := mem.CrashCloneRandom(rand.New(rand.NewPCG(seed, 9)))
		l2, got := collect(t, testOpts(crashed, "/d"))
		if len(got) < synced {
			t.Fatalf("seed %d: replayed %d records, %d were synced", seed, len(got), synced)
		}
		for i, r := range got {
			if r.h.Version != uint64(i+1) {
				t.Fatalf("seed %d: record %d has version %d", seed, i, r.h.Version)
			}
		}
		// The log accepts appends after the cut and they replay.
		_, lsn, err := l2.Append(Header{Kind: KindDelete, Version: 1000}, []byte("after"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := l2.Flush(lsn, true); err != nil {
			t.Fatal(err)
		}
		l2.Close()
		l3, again := collect(t, testOpts(crashed, "/d"))
		if len(again) != len(got)+1 || again[len(again)-1].key != "after" {
			t.Fatalf("seed %d: after reopen %d records, want %d", seed, len(again), len(got)+1)
		}
		l3.Close()
		l.Close()
	}
}

// TestCorruptSealedRecord flips a byte in a sealed segment: Open refuses with an error that
// names the segment and offset; with Repair the damaged record is moved aside into the
// quarantine directory and every other record is kept.
func TestCorruptSealedRecord(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOpts(mem, "/d")
	opts.SegmentSize = 4096
	l, _ := collect(t, opts)
	var locs []Loc
	for i := 0; i < 40; i++ {
		loc, _, err := l.Append(Header{Kind: KindPut, Version: uint64(i + 1)}, []byte(fmt.Sprintf("k%02d", i)), bytes.Repeat([]byte{byte(i)}, 500))
		if err != nil {
			t.Fatal(err)
		}
		locs = append(locs, loc)
	}
	l.Close()
	victim := locs[3]
	if victim.Seg != locs[0].Seg || locs[len(locs)-1].Seg == victim.Seg {
		t.Fatal("test expects record 3 in the first segment, a sealed one")
	}
	path := fmt.Sprintf("/d/%s", segName(victim.Seg))
	if err := flipBit(mem, path, int64(victim.Off)+HeaderSize+5, 3); err != nil {
		t.Fatal(err)
	}
	_, _, err := openReplay(opts, Loc{})
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.Segment != path || ce.Offset != int64(victim.Off) ||
		ce.Length != int64(locs[4].Off-victim.Off) {
		t.Fatalf("open of a damaged log: %v, want a CorruptionError at %s:%d", err, path, victim.Off)
	}

	opts.Repair = true
	l2, got := collect(t, opts)
	defer l2.Close()
	if len(got) != 39 {
		t.Fatalf("replayed %d records, want 39", len(got))
	}
	for _, r := range got {
		if r.key == "k03" {
			t.Fatal("corrupt record replayed")
		}
	}
	if st := l2.Stats(); st.Corrupt != 1 || st.Repaired != 1 {
		t.Fatalf("corrupt %d, repaired %d", st.Corrupt, st.Repaired)
	}
	// The damaged bytes are kept aside, as they were on disk.
	q, err := mem.Open(fmt.Sprintf("/d/quarantine/%s.%d.bad", segName(victim.Seg), victim.Off))
	if err != nil {
		t.Fatal(err)
	}
	size, _ := q.Size()
	saved := make([]byte, size)
	q.ReadAt(saved, 0)
	q.Close()
	orig := AppendRecord(nil, Header{Kind: KindPut, Version: 4}, nil, []byte("k03"), bytes.Repeat([]byte{3}, 500))
	if len(saved) != len(orig) || bytes.Equal(saved, orig) {
		t.Fatalf("quarantined %d bytes, want the %d damaged ones", len(saved), len(orig))
	}
	// A later open finds nothing to repair.
	l2.Close()
	opts.Repair = false
	l3, again := collect(t, opts)
	l3.Close()
	if len(again) != 39 {
		t.Fatalf("after the repair %d records replay, want 39", len(again))
	}
}

func TestDirectReadsOnOSFiles(t *testing.T) {
	opts := testOpts(vfs.Default, filepath.Join(t.TempDir(), "s"))
	l, _ := collect(t, opts)
	defer l.Close()
	loc, lsn, err := l.Append(Header{Kind: KindPut, Version: 1}, []byte("k"), []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(lsn, true); err != nil {
		t.Fatal(err)
	}
	before := opts.Engine.Stats().Reads
	v, err := readRecord(t, l, loc, int(RecordSize(0, 1, 5)))
	if err != nil || string(v) != "hello" {
		t.Fatalf("%q %v", v, err)
	}
	if opts.Engine.Stats().Reads != before+1 {
		t.Fatal("synced record not read through the engine")
	}
	if !l.segs[loc.Seg].direct {
		t.Fatal("segment not opened with O_DIRECT on the OS file system")
	}
}

func TestWriteErrorIsStickyUntilSuccess(t *testing.T) {
	toggle := vfs.NewToggle(fmt.Errorf("no space left on device"), vfs.OpWrite, vfs.OpSync)
	fs := vfs.NewErrorFS(vfs.NewMem(), toggle)
	opts := testOpts(fs, "/d")
	l, _ := collect(t, opts)
	defer l.Close()
	loc, lsn, _ := l.Append(Header{Kind: KindPut, Version: 1}, []byte("k"), []byte("v"))
	toggle.Enable()
	var we *WriteError
	if err := l.Flush(lsn, true); !errors.As(err, &we) {
		t.Fatalf("flush error %v", err)
	}
	if l.WriteErr() == nil {
		t.Fatal("write error not recorded")
	}
	// Still readable from the tail while the disk refuses writes.
	if v, err := readRecord(t, l, loc, int(RecordSize(0, 1, 1))); err != nil || string(v) != "v" {
		t.Fatalf("read during failure: %q %v", v, err)
	}
	toggle.Disable()
	if err := l.Flush(lsn, true); err != nil {
		t.Fatal(err)
	}
	if l.WriteErr() != nil {
		t.Fatal("write error not cleared")
	}
}

// decodeVal verifies a record and returns its value.
func decodeVal(b []byte) ([]byte, error) {
	r, err := DecodeRecord(b)
	return r.Val, err
}

// flipBit flips one bit of a file's durable contents.
func flipBit(fs vfs.FS, path string, off int64, bit uint) error {
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		return err
	}
	b[0] ^= 1 << bit
	if _, err := f.WriteAt(b, off); err != nil {
		return err
	}
	return f.Sync()
}
