package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

var errInjected = errors.New("injected")

var noErrors = InjectorFunc(func(Op, string) error { return nil })

// With an injector that never fails, ErrorFS must behave exactly like what it wraps.
func TestErrorFSConformance(t *testing.T) {
	t.Run("os", func(t *testing.T) { testFS(t, NewErrorFS(Default, noErrors), t.TempDir()) })
	t.Run("mem", func(t *testing.T) { testFS(t, NewErrorFS(NewMem(), noErrors), "/data") })
}

func TestInjectAfter(t *testing.T) {
	mem := NewMem()
	inj := InjectAfter(OpWrite, 3, errInjected)
	fs := NewErrorFS(mem, inj)
	f, err := fs.Create("/f")
	must(t, err)
	defer f.Close()
	for i := 1; i <= 4; i++ {
		n, err := f.Write([]byte("x"))
		if i < 3 && (n != 1 || err != nil) {
			t.Fatalf("write %d = %d, %v; want success", i, n, err)
		}
		if i >= 3 && (n != 0 || !errors.Is(err, errInjected)) {
			t.Fatalf("write %d = %d, %v; want 0, the injected error", i, n, err)
		}
	}
	if _, err := f.WriteAt([]byte("y"), 0); !errors.Is(err, errInjected) {
		t.Fatalf("WriteAt: %v", err)
	}
	var pe *os.PathError
	if _, err := f.Write(nil); !errors.As(err, &pe) || pe.Op != "write" || pe.Path != "/f" {
		t.Fatalf("error %#v is not a *os.PathError naming the write and the file", err)
	}
	must(t, f.Sync()) // other operations are unaffected
	wantFile(t, mem, "/f", "xx")
	if inj.Count() != 6 {
		t.Fatalf("Count = %d, want 6", inj.Count())
	}

	anyOp := NewErrorFS(mem, InjectAfter(OpAny, 2, errInjected))
	if _, err := anyOp.Stat("/f"); err != nil {
		t.Fatalf("first op: %v", err)
	}
	if _, err := anyOp.List("/"); !errors.Is(err, errInjected) {
		t.Fatalf("second op: %v", err)
	}
	if err := anyOp.Rename("/f", "/g"); !errors.Is(err, errInjected) {
		t.Fatalf("Rename: %v", err)
	}
	wantFile(t, mem, "/f", "xx") // a failed rename does not happen
}

// Each FS and File method reports its own Op, and a failed operation does not reach the base.
func TestErrorFSOps(t *testing.T) {
	mem := NewMem()
	must(t, mem.MkdirAll("/d", 0o755))
	writeFile(t, mem, "/d/f", []byte("abc"))
	var want Op
	var seen []Op
	inj := InjectorFunc(func(op Op, path string) error {
		seen = append(seen, op)
		if op == want {
			return errInjected
		}
		return nil
	})
	fs := NewErrorFS(mem, inj)
	f, err := fs.OpenReadWrite("/d/f")
	must(t, err)
	cases := []struct {
		op  Op
		run func() error
	}{
		{OpCreate, func() error { _, err := fs.Create("/d/g"); return err }},
		{OpOpen, func() error { _, err := fs.Open("/d/f"); return err }},
		{OpOpen, func() error { _, _, err := fs.OpenDirect("/d/f"); return err }},
		{OpRead, func() error { _, err := f.ReadAt(make([]byte, 1), 0); return err }},
		{OpWrite, func() error { _, err := f.Write([]byte("z")); return err }},
		{OpSync, f.Sync},
		{OpTruncate, func() error { return f.Truncate(0) }},
		{OpStat, func() error { _, err := f.Size(); return err }},
		{OpStat, func() error { _, err := fs.Stat("/d/f"); return err }},
		{OpRemove, func() error { return fs.Remove("/d/f") }},
		{OpRename, func() error { return fs.Rename("/d/f", "/d/h") }},
		{OpMkdirAll, func() error { return fs.MkdirAll("/e", 0o755) }},
		{OpList, func() error { _, err := fs.List("/d"); return err }},
		{OpSyncDir, func() error { return fs.SyncDir("/d") }},
		{OpClose, f.Close},
	}
	for _, c := range cases {
		want, seen = c.op, nil
		if err := c.run(); !errors.Is(err, errInjected) {
			t.Errorf("%v: %v, want the injected error", c.op, err)
		}
		if len(seen) != 1 || seen[0] != c.op {
			t.Errorf("%v: injector saw %v", c.op, seen)
		}
	}
	// None of the failed operations changed anything; the failed Close still closed the file.
	wantFile(t, mem, "/d/f", "abc")
	if names, _ := mem.List("/"); len(names) != 1 {
		t.Errorf("List(/) = %q", names)
	}
	if _, err := f.Size(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Size after a failed Close: %v, want os.ErrClosed", err)
	}
	if OpSyncDir.String() != "syncdir" || Op(99).String() != "Op(99)" {
		t.Errorf("Op.String: %q %q", OpSyncDir, Op(99))
	}
}

// A disk fills up while a writer runs, then space is freed: the writer sees ENOSPC and then
// succeeds again, with the toggle flipped from another goroutine.
func TestToggleDiskFull(t *testing.T) {
	mem := NewMem()
	full := NewToggle(syscall.ENOSPC, OpWrite, OpSync)
	fs := NewErrorFS(mem, full)
	f, err := fs.Create("/log")
	must(t, err)
	defer f.Close()

	sawFull := make(chan struct{})
	toggled := make(chan struct{})
	go func() {
		full.Enable()
		toggled <- struct{}{}
		<-sawFull
		full.Disable()
		toggled <- struct{}{}
	}()

	<-toggled
	if !full.Enabled() {
		t.Fatal("Enabled = false after Enable")
	}
	if _, err := f.Write([]byte("lost")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write on a full disk: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Sync on a full disk: %v", err)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); err == nil || errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("ReadAt is not in the toggle's ops, got %v", err)
	}
	close(sawFull)
	<-toggled
	_, err = f.Write([]byte("kept"))
	must(t, err)
	must(t, f.Sync())
	must(t, fs.SyncDir("/"))
	wantFile(t, mem.CrashClone(), "/log", "kept")
}

// Run with -race: toggling while writers run.
func TestToggleConcurrent(t *testing.T) {
	tg := NewToggle(errInjected)
	fs := NewErrorFS(NewMem(), tg)
	f, err := fs.Create("/f")
	must(t, err)
	defer f.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			if _, err := f.WriteAt([]byte{byte(i)}, int64(i)); err != nil && !errors.Is(err, errInjected) {
				t.Error(err)
			}
		}
	}()
	for range 100 {
		tg.Enable()
		tg.Disable()
	}
	<-done
}

func TestRandomInjector(t *testing.T) {
	run := func(seed uint64, p float64) (fails []int, size int64) {
		mem := NewMem()
		fs := NewErrorFS(mem, NewRandom(rand.New(rand.NewPCG(seed, 1)), p, errInjected, OpWrite))
		f, err := fs.Create("/f")
		must(t, err)
		defer f.Close()
		var want int64
		for i := range 100 {
			n, err := f.Write(make([]byte, 10))
			if err != nil {
				if !errors.Is(err, errInjected) || n < 0 || n >= 10 {
					t.Fatalf("failed write = %d, %v; want a short write and the injected error", n, err)
				}
				fails = append(fails, i)
			} else if n != 10 {
				t.Fatalf("write = %d, nil", n)
			}
			want += int64(n)
		}
		size, _ = f.Size()
		if size != want {
			t.Fatalf("size %d, but writes reported %d bytes", size, want)
		}
		return fails, size
	}
	if fails, _ := run(1, 0); len(fails) != 0 {
		t.Fatalf("p=0 failed writes %v", fails)
	}
	if fails, size := run(1, 1); len(fails) != 100 || size == 0 {
		t.Fatalf("p=1: %d failures, %d bytes of short writes; want 100 failures and some bytes", len(fails), size)
	}
	a, sizeA := run(7, 0.3)
	b, sizeB := run(7, 0.3)
	if len(a) == 0 || len(a) == 100 {
		t.Fatalf("p=0.3 failed %d of 100 writes", len(a))
	}
	if !slices.Equal(a, b) || sizeA != sizeB {
		t.Fatal("the same seed gave different failures")
	}

	// NoShortWrites and an op filter.
	mem := NewMem()
	r := NewRandom(rand.New(rand.NewPCG(1, 1)), 1, errInjected, OpWrite, OpSync).NoShortWrites()
	fs := NewErrorFS(mem, r)
	f, err := fs.Create("/f")
	must(t, err)
	if n, err := f.WriteAt(make([]byte, 10), 0); n != 0 || !errors.Is(err, errInjected) {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if err := f.Sync(); !errors.Is(err, errInjected) {
		t.Fatalf("Sync: %v", err)
	}
	must(t, f.Truncate(3)) // not in the filter
	must(t, f.Close())
	if r.Failed() != 2 {
		t.Fatalf("Failed = %d, want 2", r.Failed())
	}
}

// A sync that fails leaves nothing durable: what a recovery test sees after a crash.
func TestErrorFSFailedSyncIsNotDurable(t *testing.T) {
	mem := NewMem()
	fs := NewErrorFS(mem, InjectAfter(OpSync, 2, errInjected))
	f, err := fs.Create("/f")
	must(t, err)
	defer f.Close()
	must(t, fs.SyncDir("/"))
	_, err = f.Write([]byte("one"))
	must(t, err)
	must(t, f.Sync())
	_, err = f.Write([]byte("two"))
	must(t, err)
	if err := f.Sync(); !errors.Is(err, errInjected) {
		t.Fatalf("second Sync: %v", err)
	}
	wantFile(t, mem.CrashClone(), "/f", "one")
}

// syncFailFS returns an errorFS over mem whose File.Sync fails while *fail is true.
func syncFailFS(mem *MemFS, fail *bool) FS {
	return NewErrorFS(mem, InjectorFunc(func(op Op, path string) error {
		if op == OpSync && *fail {
			return errInjected
		}
		return nil
	}))
}

// syncFailFile creates name, durably named, on an ErrorFS over a new MemFS whose syncs fail
// while *fail is set, and closes it at the end of the test.
func syncFailFile(t *testing.T, name string) (*MemFS, FS, File, *bool) {
	t.Helper()
	mem := NewMem()
	fail := new(bool)
	fs := syncFailFS(mem, fail)
	f, err := fs.Create(name)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	must(t, fs.SyncDir("/"))
	return mem, fs, f, fail
}

// syncFails calls f.Sync and checks that it fails with the injected error.
func syncFails(t *testing.T, f File, fail *bool) {
	t.Helper()
	*fail = true
	defer func() { *fail = false }()
	if err := f.Sync(); !errors.Is(err, errInjected) {
		t.Fatalf("Sync = %v, want the injected error", err)
	}
}

func writeAt(t *testing.T, f File, s string, off int64) {
	t.Helper()
	if n, err := f.WriteAt([]byte(s), off); n != len(s) || err != nil {
		t.Fatalf("WriteAt(%q, %d) = %d, %v", s, off, n, err)
	}
}

// After a failed sync the bytes it covered stay in the page cache but never reach the disk, even
// through a later successful sync, until they are written again.
func TestErrorFSFailedSyncLosesWrites(t *testing.T) {
	mem, fs, f, fail := syncFailFile(t, "/log")

	writeAt(t, f, "AAAA", 0)
	must(t, f.Sync())
	writeAt(t, f, "BBBB", 4)
	syncFails(t, f, fail)
	must(t, f.Sync())
	wantFile(t, fs, "/log", "AAAABBBB") // reads still see B
	// The size reached the disk, B's data did not: a hole of zeros where B was.
	wantFile(t, mem.CrashClone(), "/log", "AAAA\x00\x00\x00\x00")
	must(t, f.Sync())
	wantFile(t, mem.CrashClone(), "/log", "AAAA\x00\x00\x00\x00") // and no later sync helps

	// Writing after the failure is unaffected.
	writeAt(t, f, "CC", 8)
	must(t, f.Sync())
	wantFile(t, mem.CrashClone(), "/log", "AAAA\x00\x00\x00\x00CC")

	// Writing B again heals it.
	writeAt(t, f, "BBBB", 4)
	must(t, f.Sync())
	wantFile(t, mem.CrashClone(), "/log", "AAAABBBBCC")
}

func TestErrorFSFailedSyncPartialRewrite(t *testing.T) {
	mem, fs, f, fail := syncFailFile(t, "/log")
	writeAt(t, f, "AAAA", 0)
	must(t, f.Sync())
	writeAt(t, f, "BBBBBBBB", 4)
	syncFails(t, f, fail)

	writeAt(t, f, "bb", 6) // rewrites only the middle of what was lost
	must(t, f.Sync())
	wantFile(t, fs, "/log", "AAAABBbbBBBB")
	wantFile(t, mem.CrashClone(), "/log", "AAAA\x00\x00bb\x00\x00\x00\x00")

	// A second failure adds to what is lost; the earlier loss is not undone by it.
	writeAt(t, f, "xy", 10)
	syncFails(t, f, fail)
	must(t, f.Sync())
	wantFile(t, mem.CrashClone(), "/log", "AAAA\x00\x00bb\x00\x00\x00\x00")
	writeAt(t, f, "BB", 4)
	writeAt(t, f, "BBBB", 8)
	must(t, f.Sync())
	wantFile(t, mem.CrashClone(), "/log", "AAAABBbbBBBB")
}

// An overwrite of durable bytes that a failed sync loses leaves the old bytes on disk.
func TestErrorFSFailedSyncOverwrite(t *testing.T) {
	mem, fs, f, fail := syncFailFile(t, "/f")
	writeAt(t, f, "abcdef", 0)
	must(t, f.Sync())
	writeAt(t, f, "XY", 2)
	syncFails(t, f, fail)
	writeAt(t, f, "Z", 5) // dirty after the failure: durable with the next sync
	must(t, f.Sync())
	wantFile(t, fs, "/f", "abXYeZ")
	wantFile(t, mem.CrashClone(), "/f", "abcdeZ")
}

// Truncation after a failed sync, as a log does when it drops the tail it could not sync. The
// new size becomes durable with the next sync; lost bytes below it stay lost.
func TestErrorFSFailedSyncThenTruncate(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, f File)
		want string
	}{
		{"back to the synced length, then append", func(t *testing.T, f File) {
			must(t, f.Truncate(4))
			writeAt(t, f, "CC", 4)
		}, "AAAACC"},
		{"into the lost bytes", func(t *testing.T, f File) {
			must(t, f.Truncate(6))
		}, "AAAA\x00\x00"},
		{"into the lost bytes, then grow", func(t *testing.T, f File) {
			must(t, f.Truncate(6))
			must(t, f.Truncate(10))
		}, "AAAA" + string(make([]byte, 6))},
		{"below the synced length", func(t *testing.T, f File) {
			must(t, f.Truncate(2))
		}, "AA"},
		{"to zero, then rewrite", func(t *testing.T, f File) {
			must(t, f.Truncate(0))
			writeAt(t, f, "AAAABBBB", 0)
		}, "AAAABBBB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem, _, f, fail := syncFailFile(t, "/log")
			writeAt(t, f, "AAAA", 0)
			must(t, f.Sync())
			writeAt(t, f, "BBBB", 4)
			syncFails(t, f, fail)
			c.run(t, f)
			must(t, f.Sync())
			wantFile(t, mem.CrashClone(), "/log", c.want)
		})
	}

	// A truncation and regrowth that a failed sync covers: the regrown bytes were holes, which
	// read as zeros once the truncation is durable, not as the old contents.
	mem, _, f, fail := syncFailFile(t, "/f")
	writeAt(t, f, "abcdef", 0)
	must(t, f.Sync())
	must(t, f.Truncate(2))
	must(t, f.Truncate(6))
	syncFails(t, f, fail)
	must(t, f.Sync())
	wantFile(t, mem.CrashClone(), "/f", "ab\x00\x00\x00\x00")
}

// Create truncates: after it, nothing of the old file or of what a failed sync lost survives
// the next sync.
func TestErrorFSFailedSyncThenCreate(t *testing.T) {
	mem, fs, f, fail := syncFailFile(t, "/f")
	writeAt(t, f, "abcdef", 0)
	syncFails(t, f, fail)
	g, err := fs.Create("/f")
	must(t, err)
	defer g.Close()
	writeAt(t, g, "xyz", 0)
	must(t, g.Sync())
	wantFile(t, mem.CrashClone(), "/f", "xyz")
}

// The loss reaches MemFS through nested wrappers; a closed file and a failure on an OS file are
// harmless.
func TestErrorFSFailedSyncNestedAndOS(t *testing.T) {
	mem := NewMem()
	fail := new(bool)
	fs := NewErrorFS(syncFailFS(mem, fail), noErrors)
	f, err := fs.Create("/f")
	must(t, err)
	defer f.Close()
	must(t, fs.SyncDir("/"))
	writeAt(t, f, "ab", 0)
	syncFails(t, f, fail)
	must(t, f.Sync())
	wantFile(t, mem.CrashClone(), "/f", "\x00\x00")

	g, err := mem.Create("/g")
	must(t, err)
	writeAt(t, g, "ab", 0)
	must(t, g.Close())
	g.(SyncFailer).SyncFailed() // a no-op on a closed file
	h, err := mem.OpenReadWrite("/g")
	must(t, err)
	must(t, h.Sync())
	must(t, h.Close())
	must(t, mem.SyncDir("/"))
	wantFile(t, mem.CrashClone(), "/g", "ab")

	dir := t.TempDir()
	osFS := syncFailFS(nil, fail)
	osFS.(*errorFS).base = Default
	o, err := osFS.Create(dir + "/f")
	must(t, err)
	defer o.Close()
	writeAt(t, o, "ab", 0)
	syncFails(t, o, fail)
	must(t, o.Sync())
	wantFile(t, osFS, dir+"/f", "ab")
}

// TestErrorFSFailedSyncModel checks failed syncs against a byte-by-byte model of what Linux
// keeps, over random writes, truncations, damage and syncs that succeed or fail.
func TestErrorFSFailedSyncModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	for round := range 20 {
		testFailedSyncModel(t, seed+uint64(round))
		if t.Failed() {
			return
		}
	}
}

func testFailedSyncModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	mem, _, f, fail := syncFailFile(t, "/f")
	var err error

	// The model: per byte, whether it was written since the last sync attempt and whether a
	// failed sync lost it; truncatedTo as in memNode.
	var data, synced []byte
	var written, lost []bool
	truncatedTo := math.MaxInt
	resize := func(size int) {
		if size < len(data) {
			data, written, lost = data[:size], written[:size], lost[:size]
			truncatedTo = min(truncatedTo, size)
			return
		}
		for len(data) < size {
			data, written, lost = append(data, 0), append(written, true), append(lost, false)
		}
	}
	write := func(p []byte, off int) {
		resize(max(len(data), off+len(p)))
		for i, b := range p {
			data[off+i], written[off+i], lost[off+i] = b, true, false
		}
	}
	writePos := 0
	var ops []string
	for i := range 300 {
		switch op := rng.IntN(13); {
		case op < 4:
			p := make([]byte, 1+rng.IntN(12))
			for j := range p {
				p[j] = byte(1 + rng.IntN(255))
			}
			off := writePos
			if op < 2 {
				off = rng.IntN(len(data) + 4)
				_, err = f.WriteAt(p, int64(off))
			} else {
				_, err = f.Write(p)
				writePos += len(p)
			}
			must(t, err)
			write(p, off)
			ops = append(ops, fmt.Sprintf("write %d@%d", len(p), off))
		case op < 5:
			size := rng.IntN(len(data) + 6)
			must(t, f.Truncate(int64(size)))
			resize(size)
			ops = append(ops, fmt.Sprintf("truncate %d", size))
		case op < 7 && len(synced) > 0:
			// Damage to durable bytes shows in reads too; as the byte reads as it is on disk,
			// whether it was lost no longer matters ...
			off := rng.IntN(len(synced))
			end := off + 1
			if op == 5 {
				_, err = mem.LoseSector("/f", int64(off), 4, SectorZeroed, nil)
				off -= off % 4
				end = min(off+4, len(synced))
				clear(synced[off:end])
			} else {
				bit := rng.IntN(8)
				_, err = mem.FlipBit("/f", int64(off), bit)
				synced[off] ^= 1 << bit
			}
			must(t, err)
			// ... except where the file was truncated below them since the last sync.
			for j := off; j < min(end, len(data), truncatedTo); j++ {
				data[j], lost[j] = synced[j], false
			}
			ops = append(ops, fmt.Sprintf("damage %d-%d", off, end))
		case op < 9:
			syncFails(t, f, fail)
			for j := range written {
				lost[j] = lost[j] || written[j]
				written[j] = false
			}
			ops = append(ops, "sync fails")
		default:
			must(t, f.Sync())
			next := make([]byte, len(data))
			for j := range next {
				switch {
				case !lost[j]:
					next[j] = data[j]
				case j < len(synced) && j < truncatedTo:
					next[j] = synced[j]
				}
				written[j] = false
			}
			synced, truncatedTo = next, math.MaxInt
			ops = append(ops, "sync")
		}
		if got := readFile(t, mem, "/f"); !bytes.Equal(got, data) {
			t.Fatalf("seed %d op %d (%s): contents %x, model %x", seed, i, ops[i], got, data)
		}
		if got, _ := fileOrAbsent(t, mem.CrashClone(), "/f"); !bytes.Equal(got, synced) {
			t.Fatalf("seed %d op %d: after crash %x, model %x\nops: %q", seed, i, got, synced, ops)
		}
		// A torn writeback keeps the synced bytes and a prefix of the rest, lost bytes zeroed.
		got, _ := fileOrAbsent(t, mem.CrashCloneRandom(rng), "/f")
		if !bytes.HasPrefix(got, synced) || len(got) > max(len(synced), len(data)) {
			t.Fatalf("seed %d op %d: torn crash %x, synced %x, data %x", seed, i, got, synced, data)
		}
		for j := len(synced); j < len(got); j++ {
			if want := data[j]; lost[j] && got[j] != 0 || !lost[j] && got[j] != want {
				t.Fatalf("seed %d op %d: torn crash byte %d = %x, data %x, lost %v", seed, i, j, got[j], want, lost[j])
			}
		}
	}
}

// Run with -race: syncs failing at random while writers write and a crash clone is taken.
func TestErrorFSFailedSyncConcurrent(t *testing.T) {
	const seed = 1
	mem := NewMem()
	fs := NewErrorFS(mem, NewRandom(rand.New(rand.NewPCG(seed, 0)), 0.5, errInjected, OpSync))
	f, err := fs.Create("/f")
	must(t, err)
	defer f.Close()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				if _, err := f.WriteAt([]byte{byte(w), byte(i)}, int64(8*i+2*w)); err != nil {
					t.Error(err)
					return
				}
				if err := f.Sync(); err != nil && !errors.Is(err, errInjected) {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					_ = mem.CrashCloneRandom(rand.New(rand.NewPCG(seed, uint64(i))))
				}
			}
		})
	}
	wg.Wait()
	// Rewriting everything until a sync succeeds makes the whole file durable, whatever was
	// lost; a sync that fails loses the rewrite too, so it has to be repeated.
	want := readFile(t, mem, "/f")
	for {
		writeAt(t, f, string(want), 0)
		if err := f.Sync(); err == nil {
			break
		}
	}
	must(t, mem.SyncDir("/"))
	wantFile(t, mem.CrashClone(), "/f", string(want))
}
