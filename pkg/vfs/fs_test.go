package vfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The same behaviour tests run against the operating system and against MemFS, so MemFS is
// checked against the real thing rather than against its author's reading of POSIX.
func TestFSConformance(t *testing.T) {
	t.Run("os", func(t *testing.T) { testFS(t, Default, t.TempDir()) })
	t.Run("mem", func(t *testing.T) { testFS(t, NewMem(), "/data") })
	t.Run("mem-relative", func(t *testing.T) { testFS(t, NewMem(), "data") })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, fs FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	must(t, err)
	_, err = f.Write(data)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
}

func readFile(t *testing.T, fs FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	must(t, err)
	defer f.Close()
	size, err := f.Size()
	must(t, err)
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return buf
}

func testFS(t *testing.T, fs FS, root string) {
	must(t, fs.MkdirAll(filepath.Join(root, "sub", "deeper"), 0o755))
	must(t, fs.MkdirAll(root, 0o755)) // idempotent
	name := filepath.Join(root, "a")

	t.Run("create-write-read", func(t *testing.T) {
		f, err := fs.Create(name)
		must(t, err)
		if n, err := f.Write([]byte("hello ")); n != 6 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		if _, err := f.Write([]byte("world")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("W"), 6); err != nil {
			t.Fatal(err)
		}
		must(t, f.Sync())
		if size, err := f.Size(); size != 11 || err != nil {
			t.Fatalf("Size = %d, %v", size, err)
		}
		buf := make([]byte, 5)
		if n, err := f.ReadAt(buf, 6); n != 5 || err != nil || string(buf) != "World" {
			t.Fatalf("ReadAt = %d, %v, %q", n, err, buf)
		}
		// io.ReaderAt: a short read returns io.EOF with the bytes read.
		buf = make([]byte, 8)
		if n, err := f.ReadAt(buf, 6); n != 5 || err != io.EOF || string(buf[:n]) != "World" {
			t.Fatalf("short ReadAt = %d, %v, %q", n, err, buf[:n])
		}
		if n, err := f.ReadAt(buf, 11); n != 0 || err != io.EOF {
			t.Fatalf("ReadAt at EOF = %d, %v", n, err)
		}
		if n, err := f.ReadAt(buf, 100); n != 0 || err != io.EOF {
			t.Fatalf("ReadAt past EOF = %d, %v", n, err)
		}
		if _, err := f.ReadAt(buf, -1); err == nil {
			t.Fatal("ReadAt at a negative offset succeeded")
		}
		if _, err := f.Fd(); err != nil && !errors.Is(err, ErrNoFD) {
			t.Fatalf("Fd: %v", err)
		}
		must(t, f.Close())
		if _, err := f.ReadAt(buf, 0); err == nil {
			t.Fatal("ReadAt after Close succeeded")
		}
	})

	t.Run("write-past-end-zero-fills", func(t *testing.T) {
		p := filepath.Join(root, "sparse")
		f, err := fs.Create(p)
		must(t, err)
		_, err = f.WriteAt([]byte("x"), 4)
		must(t, err)
		must(t, f.Truncate(8))
		must(t, f.Close())
		if got := readFile(t, fs, p); !bytes.Equal(got, []byte("\x00\x00\x00\x00x\x00\x00\x00")) {
			t.Fatalf("got %q", got)
		}
	})

	t.Run("open-read-write-appends", func(t *testing.T) {
		f, err := fs.OpenReadWrite(name)
		must(t, err)
		_, err = f.Write([]byte("!"))
		must(t, err)
		must(t, f.Close())
		if got := string(readFile(t, fs, name)); got != "hello World!" {
			t.Fatalf("got %q", got)
		}
	})

	t.Run("truncate", func(t *testing.T) {
		f, err := fs.OpenReadWrite(name)
		must(t, err)
		must(t, f.Truncate(5))
		// The write position is unchanged by Truncate: the next Write leaves a hole.
		_, err = f.Write([]byte("?"))
		must(t, err)
		must(t, f.Close())
		want := "hello\x00\x00\x00\x00\x00\x00\x00?"
		if got := string(readFile(t, fs, name)); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})

	t.Run("create-truncates", func(t *testing.T) {
		writeFile(t, fs, name, []byte("new"))
		if got := string(readFile(t, fs, name)); got != "new" {
			t.Fatalf("got %q", got)
		}
	})

	t.Run("read-only", func(t *testing.T) {
		f, err := fs.Open(name)
		must(t, err)
		defer f.Close()
		if _, err := f.Write([]byte("x")); err == nil {
			t.Fatal("Write to a read-only file succeeded")
		}
		if _, err := f.WriteAt([]byte("x"), 0); err == nil {
			t.Fatal("WriteAt to a read-only file succeeded")
		}
	})

	t.Run("open-direct", func(t *testing.T) {
		f, _, err := fs.OpenDirect(name)
		must(t, err)
		defer f.Close()
		if size, err := f.Size(); size != 3 || err != nil {
			t.Fatalf("Size = %d, %v", size, err)
		}
	})

	t.Run("missing", func(t *testing.T) {
		missing := filepath.Join(root, "missing")
		if _, err := fs.Open(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Open: %v", err)
		}
		if _, err := fs.OpenReadWrite(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("OpenReadWrite: %v", err)
		}
		if _, _, err := fs.OpenDirect(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("OpenDirect: %v", err)
		}
		if _, err := fs.Stat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Stat: %v", err)
		}
		if err := fs.Remove(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Remove: %v", err)
		}
		if err := fs.Rename(missing, name+"2"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Rename: %v", err)
		}
		if _, err := fs.List(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("List: %v", err)
		}
		if _, err := fs.Create(filepath.Join(missing, "x")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Create in a missing directory: %v", err)
		}
	})

	t.Run("stat", func(t *testing.T) {
		fi, err := fs.Stat(name)
		must(t, err)
		if fi.Name() != "a" || fi.Size() != 3 || fi.IsDir() {
			t.Fatalf("Stat(file) = %q %d %v", fi.Name(), fi.Size(), fi.IsDir())
		}
		fi, err = fs.Stat(filepath.Join(root, "sub"))
		must(t, err)
		if fi.Name() != "sub" || !fi.IsDir() {
			t.Fatalf("Stat(dir) = %q %v", fi.Name(), fi.IsDir())
		}
	})

	t.Run("rename-remove-list", func(t *testing.T) {
		for _, n := range []string{"c", "b", "tmp"} {
			writeFile(t, fs, filepath.Join(root, n), []byte(n))
		}
		must(t, fs.Rename(filepath.Join(root, "tmp"), filepath.Join(root, "b"))) // replaces b
		must(t, fs.Rename(filepath.Join(root, "c"), filepath.Join(root, "sub", "c")))
		must(t, fs.Remove(filepath.Join(root, "sparse")))
		must(t, fs.SyncDir(root))
		must(t, fs.SyncDir(filepath.Join(root, "sub")))
		got, err := fs.List(root)
		must(t, err)
		if want := []string{"a", "b", "sub"}; !slices.Equal(got, want) {
			t.Fatalf("List = %q, want %q", got, want)
		}
		if got := string(readFile(t, fs, filepath.Join(root, "b"))); got != "tmp" {
			t.Fatalf("b holds %q after rename over it", got)
		}
		got, err = fs.List(filepath.Join(root, "sub"))
		must(t, err)
		if want := []string{"c", "deeper"}; !slices.Equal(got, want) {
			t.Fatalf("List(sub) = %q, want %q", got, want)
		}
		if _, err := fs.Create(filepath.Join(root, "sub")); err == nil {
			t.Fatal("Create over a directory succeeded")
		}
		if err := fs.Remove(filepath.Join(root, "sub")); err == nil {
			t.Fatal("Remove of a non-empty directory succeeded")
		}
	})

	t.Run("open-file-survives-remove", func(t *testing.T) {
		p := filepath.Join(root, "unlinked")
		writeFile(t, fs, p, []byte("still here"))
		f, err := fs.Open(p)
		must(t, err)
		defer f.Close()
		must(t, fs.Remove(p))
		buf := make([]byte, 10)
		if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "still here" {
			t.Fatalf("ReadAt after Remove = %v, %q", err, buf)
		}
	})
}

// TestOSOpenDirect reads through O_DIRECT with an aligned buffer. Most file systems accept it;
// where the temp dir's does not, OpenDirect must fall back to buffered reads, which also work.
func TestOSOpenDirect(t *testing.T) {
	name := filepath.Join(t.TempDir(), "direct")
	data := make([]byte, 3*AlignedBlock)
	for i := range data {
		data[i] = byte(i * 7)
	}
	writeFile(t, Default, name, data)

	f, direct, err := Default.OpenDirect(name)
	must(t, err)
	defer f.Close()
	t.Logf("direct=%v", direct)
	if _, err := f.Fd(); err != nil {
		t.Fatalf("Fd: %v", err)
	}
	buf := AlignedBuffer(2 * AlignedBlock)
	n, err := f.ReadAt(buf, AlignedBlock)
	if err != nil || n != len(buf) {
		t.Fatalf("aligned ReadAt = %d, %v", n, err)
	}
	if !bytes.Equal(buf, data[AlignedBlock:]) {
		t.Fatal("aligned ReadAt returned the wrong bytes")
	}
	// The last block, read with a buffer longer than what remains: a short read and io.EOF.
	buf = AlignedBuffer(2 * AlignedBlock)
	n, err = f.ReadAt(buf, 2*AlignedBlock)
	if n != AlignedBlock || (err != nil && err != io.EOF) {
		t.Fatalf("ReadAt of the tail = %d, %v", n, err)
	}
	if !bytes.Equal(buf[:n], data[2*AlignedBlock:]) {
		t.Fatal("ReadAt of the tail returned the wrong bytes")
	}
}

// DirectAlign reports the file system's direct-read alignment for a file opened with O_DIRECT,
// a power of two between 512 and AlignedBlock, and a read at that alignment works; a file
// without a descriptor gets AlignedBlock.
func TestDirectAlign(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	data := make([]byte, 3*AlignedBlock)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, direct, err := Default.OpenDirect(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := DirectAlign(f)
	if a < 512 || a > AlignedBlock || a&(a-1) != 0 {
		t.Fatalf("alignment %d", a)
	}
	t.Logf("direct %v, alignment %d", direct, a)
	buf := AlignedBuffer(int(2 * a))[:2*a]
	if n, err := f.ReadAt(buf, 3*a); err != nil || n != len(buf) || !bytes.Equal(buf, data[3*a:5*a]) {
		t.Fatalf("read at %d: %d bytes, %v", 3*a, n, err)
	}
	mem := NewMem()
	mf, err := mem.Create("/m")
	if err != nil {
		t.Fatal(err)
	}
	if a := DirectAlign(mf); a != AlignedBlock {
		t.Fatalf("memory file: alignment %d", a)
	}
}
