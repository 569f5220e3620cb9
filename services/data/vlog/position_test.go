package vlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// fillLog appends n puts to a fresh log with small segments, syncs and closes it, and returns
// every record's location and the position after each (positions[i] is where record i starts).
func fillLog(t *testing.T, fs vfs.FS, n int) ([]Loc, Loc) {
	t.Helper()
	opts := testOpts(fs, "/log")
	opts.SegmentSize = 1 << 10
	l, _ := collect(t, opts)
	var locs []Loc
	for i := 0; i < n; i++ {
		loc, _, err := l.Append(Header{Kind: KindPut, Version: uint64(i + 1)}, []byte(fmt.Sprintf("k%d", i)), make([]byte, 100))
		if err != nil {
			t.Fatal(err)
		}
		locs = append(locs, loc)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Where the log ends once closed (a clean close may add a mark).
	l, _ = collect(t, opts)
	end, _ := l.Position()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return locs, end
}

func collectFrom(t *testing.T, opts Options, from Loc) (*Log, []rec) {
	t.Helper()
	l, got, err := openReplay(opts, from)
	if err != nil {
		t.Fatal(err)
	}
	return l, got
}

// TestReplayFrom: Replay hands on exactly the records at or after its position, from any
// record boundary and from the end, and the log appends after them as usual.
func TestReplayFrom(t *testing.T) {
	fs := vfs.NewMem()
	locs, end := fillLog(t, fs, 60)
	if locs[len(locs)-1].Seg < 4 {
		t.Fatalf("only %d segments", locs[len(locs)-1].Seg)
	}
	starts := append([]Loc{end}, locs...)
	for _, from := range starts {
		opts := testOpts(fs, "/log")
		opts.SegmentSize = 1 << 10
		l, got := collectFrom(t, opts, from)
		want := 0
		for _, loc := range locs {
			if loc.Seg > from.Seg || loc.Seg == from.Seg && loc.Off >= from.Off {
				want++
			}
		}
		if len(got) != want {
			t.Fatalf("from %v: replayed %d records, want %d", from, len(got), want)
		}
		if want > 0 && got[0].loc != locs[len(locs)-want] {
			t.Fatalf("from %v: first record replayed at %v, want %v", from, got[0].loc, locs[len(locs)-want])
		}
		// Records before the position stay readable.
		if v, err := readRecord(t, l, locs[0], int(RecordSize(0, 2, 100))); err != nil || len(v) != 100 {
			t.Fatalf("from %v: reading the first record: %v", from, err)
		}
		if pos, _ := l.Position(); pos != end {
			t.Fatalf("from %v: log ends at %v, want %v", from, pos, end)
		}
		l.Close()
	}
}

// TestReplayFromTornTail: replay from a position in the newest segment still cuts a torn tail.
func TestReplayFromTornTail(t *testing.T) {
	fs := vfs.NewMem()
	locs, end := fillLog(t, fs, 30)
	path := filepath.Join("/log", segName(end.Seg))
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	last := locs[len(locs)-1]
	if err := f.Truncate(int64(last.Off) + 10); err != nil { // the last record torn
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
	opts := testOpts(fs, "/log")
	opts.SegmentSize = 1 << 10
	l, got := collectFrom(t, opts, locs[len(locs)-2])
	defer l.Close()
	if len(got) != 1 || got[0].loc != locs[len(locs)-2] {
		t.Fatalf("replayed %+v, want only the record at %v", got, locs[len(locs)-2])
	}
	if st := l.Stats(); st.TornBytesCut != 10 {
		t.Fatalf("cut %d torn bytes, want 10", st.TornBytesCut)
	}
	if pos, _ := l.Position(); pos != last {
		t.Fatalf("log ends at %v, want %v (where the torn record started)", pos, last)
	}
}

// TestReplayFromBeyondLog: a position the log does not reach is refused before anything is
// replayed, so the caller can replay from the start instead.
func TestReplayFromBeyondLog(t *testing.T) {
	fs := vfs.NewMem()
	_, end := fillLog(t, fs, 30)
	for _, from := range []Loc{
		{Seg: end.Seg, Off: end.Off + 1},
		{Seg: end.Seg + 1, Off: SegmentHeaderSize},
		{Seg: end.Seg + 5, Off: 7},
	} {
		opts := testOpts(fs, "/log")
		opts.SegmentSize = 1 << 10
		called := false
		l, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		err = l.Replay(from, func(*Record) error { called = true; return nil })
		l.Close()
		if !errors.Is(err, ErrReplayStart) || called {
			t.Fatalf("from %v (log end %v): err %v, replayed %v", from, end, err, called)
		}
	}
	// A position in a segment that was dropped since: replay starts at the next one.
	opts := testOpts(fs, "/log")
	opts.SegmentSize = 1 << 10
	if err := fs.Remove(filepath.Join("/log", segName(2))); err != nil {
		t.Fatal(err)
	}
	l, got := collectFrom(t, opts, Loc{Seg: 2, Off: 500})
	defer l.Close()
	if len(got) == 0 || got[0].loc != (Loc{Seg: 3, Off: SegmentHeaderSize}) {
		t.Fatalf("from a dropped segment: first replayed %+v", got[:min(1, len(got))])
	}
}
