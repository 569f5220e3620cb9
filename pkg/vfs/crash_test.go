package vfs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"
)

// fileOrAbsent returns the contents of name in fs, or nil and false if it does not exist.
func fileOrAbsent(t *testing.T, fs FS, name string) ([]byte, bool) {
	t.Helper()
	if _, err := fs.Stat(name); errors.Is(err, os.ErrNotExist) {
		return nil, false
	} else if err != nil {
		t.Fatal(err)
	}
	return readFile(t, fs, name), true
}

func wantFile(t *testing.T, fs FS, name, want string) {
	t.Helper()
	got, ok := fileOrAbsent(t, fs, name)
	if !ok {
		t.Fatalf("%s is missing, want %q", name, want)
	}
	if string(got) != want {
		t.Fatalf("%s = %q, want %q", name, got, want)
	}
}

func wantAbsent(t *testing.T, fs FS, name string) {
	t.Helper()
	if got, ok := fileOrAbsent(t, fs, name); ok {
		t.Fatalf("%s exists with %q, want it absent", name, got)
	}
}

func TestCrashCloneKeepsSyncedBytes(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("/d", 0o755))
	f, err := fs.Create("/d/f")
	must(t, err)
	defer f.Close()
	must(t, fs.SyncDir("/d"))
	wantFile(t, fs.CrashClone(), "/d/f", "") // durable name, nothing synced

	_, err = f.Write([]byte("abc"))
	must(t, err)
	must(t, f.Sync())
	_, err = f.Write([]byte("def"))
	must(t, err)
	_, err = f.WriteAt([]byte("X"), 0)
	must(t, err)
	wantFile(t, fs.CrashClone(), "/d/f", "abc")
	wantFile(t, fs, "/d/f", "Xbcdef") // the original is untouched by cloning

	must(t, f.Sync())
	wantFile(t, fs.CrashClone(), "/d/f", "Xbcdef")

	must(t, f.Truncate(2))
	wantFile(t, fs.CrashClone(), "/d/f", "Xbcdef")
	must(t, f.Sync())
	wantFile(t, fs.CrashClone(), "/d/f", "Xb")

	// Create's truncation, too, is only durable once synced.
	g, err := fs.Create("/d/f")
	must(t, err)
	defer g.Close()
	wantFile(t, fs.CrashClone(), "/d/f", "Xb")
	must(t, g.Sync())
	wantFile(t, fs.CrashClone(), "/d/f", "")
}

func TestCrashCloneDurableNames(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("/d/sub", 0o755))
	writeFile(t, fs, "/d/f", []byte("synced, directory not"))
	c := fs.CrashClone()
	wantAbsent(t, c, "/d/f")
	// Directories made by MkdirAll are durable at once.
	if names, err := c.List("/d"); err != nil || !slices.Equal(names, []string{"sub"}) {
		t.Fatalf("List(/d) after crash = %q, %v", names, err)
	}

	must(t, fs.SyncDir("/d"))
	wantFile(t, fs.CrashClone(), "/d/f", "synced, directory not")

	// SyncDir of another directory does not help.
	writeFile(t, fs, "/d/g", []byte("g"))
	must(t, fs.SyncDir("/d/sub"))
	wantAbsent(t, fs.CrashClone(), "/d/g")

	// A removal is undone by a crash until its directory is synced.
	must(t, fs.Remove("/d/f"))
	wantFile(t, fs.CrashClone(), "/d/f", "synced, directory not")
	must(t, fs.SyncDir("/d"))
	wantAbsent(t, fs.CrashClone(), "/d/f")
	wantFile(t, fs.CrashClone(), "/d/g", "g")
}

func TestCrashCloneRename(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("/d", 0o755))
	writeFile(t, fs, "/d/CURRENT", []byte("v1"))
	must(t, fs.SyncDir("/d"))

	// The checkpoint pattern: write a temporary, sync it, rename over, sync the directory.
	writeFile(t, fs, "/d/CURRENT.tmp", []byte("v2"))
	must(t, fs.SyncDir("/d"))
	must(t, fs.Rename("/d/CURRENT.tmp", "/d/CURRENT"))
	c := fs.CrashClone()
	wantFile(t, c, "/d/CURRENT", "v1")
	wantFile(t, c, "/d/CURRENT.tmp", "v2")

	must(t, fs.SyncDir("/d"))
	c = fs.CrashClone()
	wantFile(t, c, "/d/CURRENT", "v2")
	wantAbsent(t, c, "/d/CURRENT.tmp")

	// Across directories each side is durable on its own.
	must(t, fs.MkdirAll("/e", 0o755))
	must(t, fs.Rename("/d/CURRENT", "/e/moved"))
	must(t, fs.SyncDir("/e"))
	c = fs.CrashClone()
	wantFile(t, c, "/d/CURRENT", "v2")
	wantFile(t, c, "/e/moved", "v2")
	// ... and the two surviving names are one file.
	h, err := c.OpenReadWrite("/e/moved")
	must(t, err)
	_, err = h.Write([]byte("+"))
	must(t, err)
	must(t, h.Close())
	wantFile(t, c, "/d/CURRENT", "v2+")
	// Renaming one name of a file onto another of its names does nothing, as in POSIX.
	must(t, c.Rename("/d/CURRENT", "/e/moved"))
	wantFile(t, c, "/d/CURRENT", "v2+")
	wantFile(t, c, "/e/moved", "v2+")

	must(t, fs.SyncDir("/d"))
	c = fs.CrashClone()
	wantAbsent(t, c, "/d/CURRENT")
	wantFile(t, c, "/e/moved", "v2")
}

func TestCrashCloneIsIndependent(t *testing.T) {
	fs := NewMem()
	f, err := fs.Create("/f")
	must(t, err)
	defer f.Close()
	_, err = f.Write([]byte("abc"))
	must(t, err)
	must(t, f.Sync())
	must(t, fs.SyncDir("/"))
	c := fs.CrashClone()

	_, err = f.WriteAt([]byte("Z"), 0)
	must(t, err)
	must(t, f.Sync())
	wantFile(t, c, "/f", "abc")

	g, err := c.OpenReadWrite("/f")
	must(t, err)
	_, err = g.Write([]byte("def"))
	must(t, err)
	must(t, g.Close())
	wantFile(t, fs, "/f", "Zbc")

	// Everything in a clone is durable: crashing it again loses nothing but new writes.
	wantFile(t, c.CrashClone(), "/f", "abc")
}

func TestCrashCloneRandomTornTail(t *testing.T) {
	fs := NewMem()
	f, err := fs.Create("/log")
	must(t, err)
	defer f.Close()
	_, err = f.Write([]byte("abc"))
	must(t, err)
	must(t, f.Sync())
	must(t, fs.SyncDir("/"))
	_, err = f.Write([]byte("defghij"))
	must(t, err)
	_, err = f.WriteAt([]byte("X"), 1) // overwrites of synced bytes are never kept
	must(t, err)
	writeFile(t, fs, "/unnamed", []byte("never in a synced directory"))

	full := "abcdefghij"
	lengths := make(map[int]bool)
	for seed := range uint64(64) {
		c := fs.CrashCloneRandom(rand.New(rand.NewPCG(seed, seed)))
		got, ok := fileOrAbsent(t, c, "/log")
		if !ok || len(got) < 3 || !bytes.HasPrefix([]byte(full), got) {
			t.Fatalf("seed %d: /log = %q, want a prefix of %q at least 3 bytes long", seed, got, full)
		}
		wantAbsent(t, c, "/unnamed")
		lengths[len(got)] = true

		again, _ := fileOrAbsent(t, fs.CrashCloneRandom(rand.New(rand.NewPCG(seed, seed))), "/log")
		if !bytes.Equal(got, again) {
			t.Fatalf("seed %d: %q then %q from the same seed", seed, got, again)
		}
	}
	if !lengths[3] || !lengths[len(full)] || len(lengths) < 4 {
		t.Fatalf("kept lengths %v: want the synced length, the full length and some in between", lengths)
	}
}

// TestMemSyncModel checks MemFS's incremental Sync against a model that copies everything, over
// random appends, overwrites, truncations and syncs.
func TestMemSyncModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	fs := NewMem()
	f, err := fs.Create("/f")
	must(t, err)
	defer f.Close()
	must(t, fs.SyncDir("/"))
	var data, synced []byte
	writePos := 0 // Write appends at the handle's position, which only Write moves
	for i := range 400 {
		switch op := rng.IntN(10); {
		case op < 4:
			p := make([]byte, rng.IntN(20))
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			_, err = f.Write(p)
			must(t, err)
			data = modelWriteAt(data, p, int64(writePos))
			writePos += len(p)
		case op < 6:
			p := []byte{byte(rng.Uint32()), byte(rng.Uint32())}
			off := rng.Int64N(int64(len(data)) + 5)
			_, err = f.WriteAt(p, off)
			must(t, err)
			data = modelWriteAt(data, p, off)
		case op < 7:
			size := rng.Int64N(int64(len(data)) + 5)
			must(t, f.Truncate(size))
			data = modelTruncate(data, size)
		default:
			must(t, f.Sync())
			synced = slices.Clone(data)
		}
		if got := readFile(t, fs, "/f"); !bytes.Equal(got, data) {
			t.Fatalf("seed %d op %d: contents %x, model %x", seed, i, got, data)
		}
		if got, _ := fileOrAbsent(t, fs.CrashClone(), "/f"); !bytes.Equal(got, synced) {
			t.Fatalf("seed %d op %d: after crash %x, model %x", seed, i, got, synced)
		}
	}
}

func modelWriteAt(data, p []byte, off int64) []byte {
	if end := off + int64(len(p)); end > int64(len(data)) {
		data = append(data, make([]byte, end-int64(len(data)))...)
	}
	copy(data[off:], p)
	return data
}

func modelTruncate(data []byte, size int64) []byte {
	if size <= int64(len(data)) {
		return data[:size]
	}
	return append(data, make([]byte, size-int64(len(data)))...)
}
