package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pattern returns n bytes, none of them zero, that differ from one offset to the next.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i%251 + 1)
	}
	return b
}

// wantBytes checks that name reads as want, in fs.
func wantBytes(t *testing.T, fs FS, name string, want []byte) {
	t.Helper()
	got, ok := fileOrAbsent(t, fs, name)
	if !ok {
		t.Fatalf("%s is missing", name)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what was expected:\ngot  %x\nwant %x", name, got, want)
	}
}

func TestFlipBit(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("/d", 0o755))
	f, err := fs.Create("/d/f")
	must(t, err)
	defer f.Close()
	must(t, fs.SyncDir("/d"))
	writeAt(t, f, "hello, world", 0)
	must(t, f.Sync())
	writeAt(t, f, "!!", 12) // not synced

	d, err := fs.FlipBit("/d/f", 4, 0)
	must(t, err)
	if want := (Damage{Path: "/d/f", Off: 4, Len: 1, Kind: BitFlip, Bit: 0}); d != want {
		t.Fatalf("FlipBit = %+v, want %+v", d, want)
	}
	_, err = fs.FlipBit("d/f", 0, 7) // relative names are reported absolute
	must(t, err)
	want := "\xe8elln, world"
	wantFile(t, fs, "/d/f", want+"!!")
	buf := make([]byte, 5)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != want[:5] {
		t.Fatalf("ReadAt through the open handle = %q, %v", buf, err)
	}
	wantFile(t, fs.CrashClone(), "/d/f", want)
	must(t, f.Sync())
	wantFile(t, fs.CrashClone(), "/d/f", want+"!!") // syncing does not repair

	// Flipping a bit twice restores it.
	_, err = fs.FlipBit("/d/f", 4, 0)
	must(t, err)
	wantFile(t, fs.CrashClone(), "/d/f", "\xe8ello, world!!")

	// Damage wins over a change not yet synced, so that reads and a crash agree.
	writeAt(t, f, "X", 1)
	_, err = fs.FlipBit("/d/f", 1, 1)
	must(t, err)
	wantFile(t, fs, "/d/f", "\xe8gllo, world!!")
	must(t, f.Sync())
	wantFile(t, fs.CrashClone(), "/d/f", "\xe8gllo, world!!")

	// Bytes cut off by a truncation not yet synced are damaged on disk only: the file holds
	// zeros there now, and syncing the truncation frees the damaged bytes.
	must(t, f.Truncate(2))
	must(t, f.Truncate(6))
	_, err = fs.FlipBit("/d/f", 4, 0)
	must(t, err)
	wantFile(t, fs, "/d/f", "\xe8g\x00\x00\x00\x00")
	wantFile(t, fs.CrashClone(), "/d/f", "\xe8glln, world!!")
	must(t, f.Sync())
	wantFile(t, fs.CrashClone(), "/d/f", "\xe8g\x00\x00\x00\x00")

	if d.String() != "/d/f: bit 0 of byte 4 flipped" {
		t.Errorf("String = %q", d)
	}
}

func TestDamageErrors(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("/d", 0o755))
	f, err := fs.Create("/d/f")
	must(t, err)
	defer f.Close()
	must(t, fs.SyncDir("/d"))
	writeAt(t, f, "abc", 0)
	must(t, f.Sync())
	writeAt(t, f, "def", 3) // bytes 3 to 5 exist, but are not synced
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		name string
		err  error
		run  func() error
	}{
		{"flip past synced", ErrNotSynced, func() error { _, err := fs.FlipBit("/d/f", 3, 0); return err }},
		{"flip negative", ErrNotSynced, func() error { _, err := fs.FlipBit("/d/f", -1, 0); return err }},
		{"flip bit 8", syscall.EINVAL, func() error { _, err := fs.FlipBit("/d/f", 0, 8); return err }},
		{"flip missing", syscall.ENOENT, func() error { _, err := fs.FlipBit("/d/g", 0, 0); return err }},
		{"flip directory", syscall.EISDIR, func() error { _, err := fs.FlipBit("/d", 0, 0); return err }},
		{"sector past synced", ErrNotSynced, func() error { _, err := fs.LoseSector("/d/f", 4, 512, SectorZeroed, nil); return err }},
		{"sector size 0", syscall.EINVAL, func() error { _, err := fs.LoseSector("/d/f", 0, 0, SectorZeroed, nil); return err }},
		{"sector bit flip", syscall.EINVAL, func() error { _, err := fs.LoseSector("/d/f", 0, 512, BitFlip, rng); return err }},
		{"garbage without rng", syscall.EINVAL, func() error { _, err := fs.LoseSector("/d/f", 0, 512, SectorGarbage, nil); return err }},
		{"random negative n", syscall.EINVAL, func() error { _, err := fs.DamageRandom(rng, -1, DamageOptions{}); return err }},
		{"random bad kind", syscall.EINVAL, func() error {
			_, err := fs.DamageRandom(rng, 1, DamageOptions{Kinds: []DamageKind{0}})
			return err
		}},
		{"random no rng", syscall.EINVAL, func() error { _, err := fs.DamageRandom(nil, 1, DamageOptions{}); return err }},
		{"random sector size", syscall.EINVAL, func() error { _, err := fs.DamageRandom(rng, 1, DamageOptions{SectorSize: -1}); return err }},
	} {
		if err := c.run(); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	var pe *os.PathError
	if _, err := fs.FlipBit("/d/f", 3, 0); !errors.As(err, &pe) || pe.Path != "/d/f" {
		t.Errorf("FlipBit past the synced bytes: %#v is not a *os.PathError naming the file", err)
	}
	wantFile(t, fs, "/d/f", "abcdef") // nothing was damaged
	wantFile(t, fs.CrashClone(), "/d/f", "abc")
}

func TestLoseSector(t *testing.T) {
	const synced, tail = 1300, 100
	cases := []struct {
		off, size      int64
		wantOff, wantN int64
	}{
		{0, 512, 0, 512},
		{511, 512, 0, 512},
		{512, 512, 512, 512},
		{1299, 512, 1024, 276}, // the last sector is cut short at the synced length
		{1100, 4096, 0, 1300},  // one sector larger than the file
		{1050, 1000, 1000, 300},
		{5, 1, 5, 1},
	}
	for _, c := range cases {
		for _, kind := range []DamageKind{SectorZeroed, SectorGarbage} {
			t.Run(fmt.Sprintf("%v-%d-%d", kind, c.off, c.size), func(t *testing.T) {
				fs := NewMem()
				f, err := fs.Create("/seg")
				must(t, err)
				defer f.Close()
				must(t, fs.SyncDir("/"))
				orig := pattern(synced + tail)
				writeAt(t, f, string(orig[:synced]), 0)
				must(t, f.Sync())
				writeAt(t, f, string(orig[synced:]), synced)

				d, err := fs.LoseSector("/seg", c.off, c.size, kind, rand.New(rand.NewPCG(1, 2)))
				must(t, err)
				if want := (Damage{Path: "/seg", Off: c.wantOff, Len: c.wantN, Kind: kind}); d != want {
					t.Fatalf("LoseSector = %+v, want %+v", d, want)
				}
				got := readFile(t, fs, "/seg")
				if len(got) != synced+tail {
					t.Fatalf("size %d after losing a sector, want %d unchanged", len(got), synced+tail)
				}
				checkLost(t, got, orig, d)
				clone := readFile(t, fs.CrashClone(), "/seg")
				if !bytes.Equal(clone, got[:synced]) {
					t.Fatalf("crash clone %x, want the damaged synced bytes %x", clone, got[:synced])
				}

				// The same random state gives the same garbage.
				again := NewMem()
				writeFile(t, again, "/seg", orig[:synced])
				_, err = again.LoseSector("/seg", c.off, c.size, kind, rand.New(rand.NewPCG(1, 2)))
				must(t, err)
				if !bytes.Equal(readFile(t, again, "/seg"), got[:synced]) {
					t.Fatal("the same seed gave different damage")
				}
			})
		}
	}

	// Zeroing a sector that reads as zeros is allowed, and changes nothing.
	fs := NewMem()
	writeFile(t, fs, "/z", make([]byte, 600))
	d, err := fs.LoseSector("/z", 599, 512, SectorZeroed, nil)
	must(t, err)
	if d.Off != 512 || d.Len != 88 {
		t.Fatalf("LoseSector = %+v", d)
	}
	wantBytes(t, fs, "/z", make([]byte, 600))
}

// checkLost checks that got is orig with d done to it and nothing else.
func checkLost(t *testing.T, got, orig []byte, d Damage) {
	t.Helper()
	for i := range got {
		in := int64(i) >= d.Off && int64(i) < d.Off+d.Len
		switch {
		case !in && got[i] != orig[i]:
			t.Fatalf("byte %d outside %v changed: %x, was %x", i, d, got[i], orig[i])
		case in && d.Kind == SectorZeroed && got[i] != 0:
			t.Fatalf("byte %d of %v is %x, want 0", i, d, got[i])
		case in && d.Kind == SectorGarbage && got[i] == orig[i]:
			t.Fatalf("byte %d of %v is unchanged (%x)", i, d, got[i])
		}
	}
}

// damageTestFS returns a file system with segments that DamageRandom should damage, files it
// should leave alone, and an unsynced tail.
func damageTestFS(t *testing.T) *MemFS {
	fs := NewMem()
	must(t, fs.MkdirAll("/data/sub", 0o755))
	rng := rand.New(rand.NewPCG(7, 7))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	writeFile(t, fs, "/data/000001.vlog", random(10000)) // 20 sectors of 512
	writeFile(t, fs, "/data/000002.vlog", random(3000))  // 6
	writeFile(t, fs, "/data/empty.vlog", nil)            // 0
	writeFile(t, fs, "/data/zeros.vlog", make([]byte, 2048))
	writeFile(t, fs, "/data/sub/000003.vlog", random(700)) // 2
	writeFile(t, fs, "/data/index", random(5000))
	f, err := fs.OpenReadWrite("/data/000002.vlog")
	must(t, err)
	_, err = f.Write(random(500)) // unsynced: out of reach of damage
	must(t, err)
	must(t, f.Close())
	must(t, fs.SyncDir("/data"))
	must(t, fs.SyncDir("/data/sub"))
	return fs
}

const damageTestSectors = 20 + 6 + 0 + 4 + 2

func isSegment(path string) bool { return strings.HasSuffix(path, ".vlog") }

// allFiles returns the contents of every file in fs by path.
func allFiles(t *testing.T, fs *MemFS) map[string][]byte {
	t.Helper()
	out := make(map[string][]byte)
	fs.mu.Lock()
	files := fs.filesLocked(nil)
	fs.mu.Unlock()
	for _, f := range files {
		out[f.path] = readFile(t, fs, f.path)
	}
	return out
}

// checkDamage checks that after is before with exactly the damage ds done to it, in the synced
// bytes (synced gives their length per file) of segments, each damage in its own sector.
func checkDamage(t *testing.T, ds []Damage, before, after map[string][]byte, synced map[string]int, sector int64) {
	t.Helper()
	if !slices.IsSortedFunc(ds, func(a, b Damage) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return int(a.Off - b.Off)
	}) {
		t.Fatalf("damage not sorted by path and offset: %v", ds)
	}
	sectors := make(map[string]bool)
	byPath := make(map[string][]Damage)
	for _, d := range ds {
		if !isSegment(d.Path) {
			t.Fatalf("%v: not a selected file", d)
		}
		key := fmt.Sprint(d.Path, d.Off/sector)
		if sectors[key] {
			t.Fatalf("%v: a second damage in one sector", d)
		}
		sectors[key] = true
		n := int64(synced[d.Path])
		switch d.Kind {
		case BitFlip:
			if d.Len != 1 || d.Bit < 0 || d.Bit > 7 || d.Off >= n {
				t.Fatalf("%v: bad bit flip (synced length %d)", d, n)
			}
		case SectorZeroed, SectorGarbage:
			if d.Off%sector != 0 || d.Len != min(sector, n-d.Off) || d.Bit != 0 {
				t.Fatalf("%v: not an aligned sector of %d cut at the synced length %d", d, sector, n)
			}
		default:
			t.Fatalf("%v: unknown kind", d)
		}
		byPath[d.Path] = append(byPath[d.Path], d)
	}
	for path, was := range before {
		got := after[path]
		if len(got) != len(was) {
			t.Fatalf("%s: %d bytes after damage, %d before", path, len(got), len(was))
		}
		damaged := make([]bool, len(was))
		for _, d := range byPath[path] {
			for i := d.Off; i < d.Off+d.Len; i++ {
				damaged[i] = true
			}
			switch d.Kind {
			case BitFlip:
				if got[d.Off]^was[d.Off] != 1<<d.Bit {
					t.Fatalf("%v: byte went from %x to %x", d, was[d.Off], got[d.Off])
				}
			case SectorZeroed:
				if !bytes.Equal(got[d.Off:d.Off+d.Len], make([]byte, d.Len)) {
					t.Fatalf("%v: not zeros", d)
				}
				if bytes.Equal(was[d.Off:d.Off+d.Len], make([]byte, d.Len)) {
					t.Fatalf("%v: the sector was zeros already, so nothing changed", d)
				}
			case SectorGarbage:
				for i := d.Off; i < d.Off+d.Len; i++ {
					if got[i] == was[i] {
						t.Fatalf("%v: byte %d unchanged", d, i)
					}
				}
			}
		}
		for i := range was {
			if !damaged[i] && got[i] != was[i] {
				t.Fatalf("%s: byte %d changed from %x to %x, outside any damage", path, i, was[i], got[i])
			}
		}
	}
}

// TestDamageRandom damages crash clones with random seeds and checks what was reported against
// the files, before and after.
func TestDamageRandom(t *testing.T) {
	fs := damageTestFS(t)
	synced := make(map[string]int)
	for path, b := range allFiles(t, fs.CrashClone()) {
		synced[path] = len(b)
	}
	seed := uint64(time.Now().UnixNano())
	var s uint64
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", s)
		}
	}()
	for round := range uint64(50) {
		s = seed + round
		rng := rand.New(rand.NewPCG(s, 0))
		n := rng.IntN(damageTestSectors + 1)
		opts := DamageOptions{Match: isSegment, SectorSize: 512}
		clone := fs.CrashClone()
		before := allFiles(t, clone)
		ds, err := clone.DamageRandom(rng, n, opts)
		if err != nil {
			t.Fatalf("seed %d: %v", s, err)
		}
		if len(ds) != n {
			t.Fatalf("seed %d: %d damages, asked for %d", s, len(ds), n)
		}
		after := allFiles(t, clone)
		checkDamage(t, ds, before, after, synced, 512)
		// The damage is durable, and the same state gives the same damage.
		for path, b := range allFiles(t, clone.CrashClone()) {
			if !bytes.Equal(b, after[path]) {
				t.Fatalf("seed %d: %s lost its damage in a crash", s, path)
			}
		}
		again := fs.CrashClone()
		rng2 := rand.New(rand.NewPCG(s, 0))
		rng2.IntN(damageTestSectors + 1)
		ds2, err := again.DamageRandom(rng2, n, opts)
		if err != nil || !slices.Equal(ds, ds2) {
			t.Fatalf("seed %d: damage %v, then %v, %v from the same state", s, ds, ds2, err)
		}
		for path, b := range allFiles(t, again) {
			if !bytes.Equal(b, after[path]) {
				t.Fatalf("seed %d: %s damaged differently from the same state", s, path)
			}
		}
	}

	// Different seeds damage differently.
	a, err := fs.CrashClone().DamageRandom(rand.New(rand.NewPCG(1, 0)), 5, DamageOptions{Match: isSegment})
	must(t, err)
	b, err := fs.CrashClone().DamageRandom(rand.New(rand.NewPCG(2, 0)), 5, DamageOptions{Match: isSegment})
	must(t, err)
	if slices.Equal(a, b) {
		t.Fatalf("seeds 1 and 2 gave the same damage %v", a)
	}
}

// On a live file system, damage stays within the synced bytes: the unsynced tail reads as
// written and a crash drops it as usual.
func TestDamageRandomLive(t *testing.T) {
	fs := damageTestFS(t)
	before := allFiles(t, fs)
	ds, err := fs.DamageRandom(rand.New(rand.NewPCG(3, 3)), damageTestSectors, DamageOptions{Match: isSegment, SectorSize: 512})
	must(t, err)
	synced := map[string]int{"/data/000001.vlog": 10000, "/data/000002.vlog": 3000, "/data/zeros.vlog": 2048, "/data/sub/000003.vlog": 700}
	checkDamage(t, ds, before, allFiles(t, fs), synced, 512)
	// Every sector was damaged once.
	counts := make(map[string]int)
	for _, d := range ds {
		counts[d.Path]++
	}
	if want := map[string]int{"/data/000001.vlog": 20, "/data/000002.vlog": 6, "/data/zeros.vlog": 4, "/data/sub/000003.vlog": 2}; !maps.Equal(counts, want) {
		t.Fatalf("damage per file %v, want %v", counts, want)
	}
	if got := readFile(t, fs.CrashClone(), "/data/000002.vlog"); len(got) != 3000 {
		t.Fatalf("000002 is %d bytes after a crash, want its 3000 synced", len(got))
	}

	// One sector more than there are fails and damages nothing.
	fs = damageTestFS(t)
	before = allFiles(t, fs)
	if ds, err := fs.DamageRandom(rand.New(rand.NewPCG(3, 3)), damageTestSectors+1, DamageOptions{Match: isSegment, SectorSize: 512}); err == nil {
		t.Fatalf("DamageRandom of more sectors than there are = %v", ds)
	}
	if !maps.EqualFunc(before, allFiles(t, fs), bytes.Equal) {
		t.Fatal("a failed DamageRandom changed files")
	}
	if ds, err := fs.DamageRandom(rand.New(rand.NewPCG(3, 3)), 0, DamageOptions{}); err != nil || len(ds) != 0 {
		t.Fatalf("DamageRandom of 0 = %v, %v", ds, err)
	}
}

func TestDamageRandomKinds(t *testing.T) {
	fs := damageTestFS(t)
	ds, err := fs.DamageRandom(rand.New(rand.NewPCG(4, 4)), 10, DamageOptions{Match: isSegment, Kinds: []DamageKind{BitFlip}, SectorSize: 512})
	must(t, err)
	for _, d := range ds {
		if d.Kind != BitFlip {
			t.Fatalf("%v: asked for bit flips only", d)
		}
	}

	// Zeroing a sector of zeros would change nothing: it gets garbage instead.
	fs = damageTestFS(t)
	before := allFiles(t, fs)
	zeros := func(p string) bool { return p == "/data/zeros.vlog" }
	ds, err = fs.DamageRandom(rand.New(rand.NewPCG(4, 4)), 4, DamageOptions{Match: zeros, Kinds: []DamageKind{SectorZeroed}, SectorSize: 512})
	must(t, err)
	for _, d := range ds {
		if d.Kind != SectorGarbage {
			t.Fatalf("%v: want garbage in place of zeros over zeros", d)
		}
	}
	checkDamage(t, ds, map[string][]byte{"/data/zeros.vlog": before["/data/zeros.vlog"]},
		allFiles(t, fs), map[string]int{"/data/zeros.vlog": 2048}, 512)

	// The default sector is 4096 bytes: 000001.vlog, of 10000 bytes, has three.
	one := func(p string) bool { return p == "/data/000001.vlog" }
	ds, err = fs.DamageRandom(rand.New(rand.NewPCG(4, 4)), 3, DamageOptions{Match: one, Kinds: []DamageKind{SectorZeroed}})
	must(t, err)
	if len(ds) != 3 || ds[0].Off != 0 || ds[1].Off != 4096 || ds[2].Off != 8192 || ds[2].Len != 10000-8192 {
		t.Fatalf("damage with the default sector size: %v", ds)
	}
	if _, err := fs.DamageRandom(rand.New(rand.NewPCG(4, 4)), 4, DamageOptions{Match: one}); err == nil {
		t.Fatal("four places in three sectors")
	}
}

// A file with two durable names is damaged once, under its first name.
func TestDamageRandomTwoNames(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("/d", 0o755))
	must(t, fs.MkdirAll("/e", 0o755))
	writeFile(t, fs, "/d/f", pattern(1000))
	must(t, fs.SyncDir("/d"))
	must(t, fs.Rename("/d/f", "/e/f"))
	must(t, fs.SyncDir("/e"))
	c := fs.CrashClone() // /d/f and /e/f are one file
	if _, err := c.DamageRandom(rand.New(rand.NewPCG(5, 5)), 3, DamageOptions{SectorSize: 512}); err == nil {
		t.Fatal("DamageRandom counted the sectors of one file twice")
	}
	ds, err := c.DamageRandom(rand.New(rand.NewPCG(5, 5)), 2, DamageOptions{SectorSize: 512})
	must(t, err)
	if len(ds) != 2 || ds[0].Path != "/d/f" || ds[1].Path != "/d/f" {
		t.Fatalf("damage %v, want both sectors of /d/f", ds)
	}
	// Unless Match leaves out the first name.
	onlyE := func(p string) bool { return strings.HasPrefix(p, "/e/") }
	ds, err = c.DamageRandom(rand.New(rand.NewPCG(5, 5)), 1, DamageOptions{Match: onlyE, SectorSize: 512})
	must(t, err)
	if ds[0].Path != "/e/f" {
		t.Fatalf("damage %v, want it reported under /e/f", ds)
	}
}

// Run with -race: damage while writers append and sync, and crash clones are taken. Damage and
// writes may interleave in any order, but reads and a crash must agree once all is synced.
func TestDamageConcurrent(t *testing.T) {
	const seed = 9
	fs := NewMem()
	f, err := fs.Create("/log")
	must(t, err)
	defer f.Close()
	must(t, fs.SyncDir("/"))
	writeAt(t, f, string(pattern(4096)), 0)
	must(t, f.Sync())
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range 100 {
				if _, err := f.WriteAt(pattern(64), int64(4096+(2*i+w)*64)); err != nil {
					t.Error(err)
					return
				}
				if err := f.Sync(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 0))
		for i := range 100 {
			var err error
			switch i % 4 {
			case 0:
				_, err = fs.FlipBit("/log", rng.Int64N(4096), rng.IntN(8))
			case 1:
				_, err = fs.LoseSector("/log", rng.Int64N(4096), 512, SectorGarbage, rng)
			case 2:
				_, err = fs.DamageRandom(rng, 2, DamageOptions{SectorSize: 512})
			default:
				_ = fs.CrashCloneRandom(rng)
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	must(t, f.Sync())
	wantBytes(t, fs.CrashClone(), "/log", readFile(t, fs, "/log"))
}

func TestDamageKindString(t *testing.T) {
	d := Damage{Path: "/s", Off: 512, Len: 88, Kind: SectorZeroed}
	if d.String() != "/s: zeroed sector at 512, 88 bytes" || DamageKind(9).String() != "DamageKind(9)" {
		t.Errorf("String: %q %q", d, DamageKind(9))
	}
}
