package vfs

import (
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"testing"
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
