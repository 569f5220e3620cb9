package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
)

func TestMemNoFDAndNoDirect(t *testing.T) {
	fs := NewMem()
	writeFile(t, fs, "/f", []byte("x"))
	f, direct, err := fs.OpenDirect("/f")
	must(t, err)
	defer f.Close()
	if direct {
		t.Error("MemFS.OpenDirect reported direct=true")
	}
	if _, err := f.Fd(); !errors.Is(err, ErrNoFD) {
		t.Errorf("Fd: %v, want ErrNoFD", err)
	}
}

func TestMemPathsAreCleaned(t *testing.T) {
	fs := NewMem()
	must(t, fs.MkdirAll("/d/", 0o755))
	writeFile(t, fs, "/d/../d/./f", []byte("x"))
	for _, p := range []string{"/d/f", "d/f", "//d//f"} {
		if _, err := fs.Stat(p); err != nil {
			t.Errorf("Stat(%q): %v", p, err)
		}
	}
}

func TestMemErrors(t *testing.T) {
	fs := NewMem()
	writeFile(t, fs, "/f", []byte("x"))
	if err := fs.MkdirAll("/f/g", 0o755); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("MkdirAll under a file: %v", err)
	}
	if _, err := fs.Create("/f/g"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("Create under a file: %v", err)
	}
	if _, err := fs.Open("/"); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("Open of a directory: %v", err)
	}
	must(t, fs.MkdirAll("/d/e", 0o755))
	if err := fs.Rename("/d", "/d/e/x"); err == nil {
		t.Error("Rename of a directory below itself succeeded")
	}
	if err := fs.Rename("/f", "/d"); err == nil {
		t.Error("Rename of a file over a directory succeeded")
	}
	must(t, fs.Remove("/d/e"))
	must(t, fs.Rename("/d", "/d2"))
	if names, _ := fs.List("/"); fmt.Sprint(names) != "[d2 f]" {
		t.Errorf("List after directory rename = %q", names)
	}
	f, err := fs.Open("/f")
	must(t, err)
	must(t, f.Close())
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Sync after Close: %v", err)
	}
}

// An open file is an inode: renaming or recreating its name does not redirect it.
func TestMemInodeSemantics(t *testing.T) {
	fs := NewMem()
	f, err := fs.Create("/a")
	must(t, err)
	_, err = f.Write([]byte("one"))
	must(t, err)
	must(t, fs.Rename("/a", "/b"))
	_, err = f.Write([]byte("two"))
	must(t, err)
	if got := string(readFile(t, fs, "/b")); got != "onetwo" {
		t.Fatalf("/b = %q", got)
	}
	writeFile(t, fs, "/a", []byte("fresh"))
	if got := string(readFile(t, fs, "/b")); got != "onetwo" {
		t.Fatalf("/b = %q after /a was recreated", got)
	}
	// Create of an existing name truncates the inode every handle shares.
	g, err := fs.Create("/b")
	must(t, err)
	defer g.Close()
	if size, _ := f.Size(); size != 0 {
		t.Fatalf("Size through the old handle = %d after Create truncated the file", size)
	}
	must(t, f.Close())
}

// Run with -race: ReadAt and WriteAt on one file, and namespace changes, from many goroutines.
func TestMemConcurrent(t *testing.T) {
	fs := NewMem()
	f, err := fs.Create("/f")
	must(t, err)
	defer f.Close()
	const workers, blocks, block = 4, 50, 64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			buf := bytes.Repeat([]byte{byte(w + 1)}, block)
			got := make([]byte, block)
			for i := range blocks {
				off := int64((i*workers + w) * block)
				if _, err := f.WriteAt(buf, off); err != nil {
					t.Error(err)
					return
				}
				if _, err := f.ReadAt(got, off); err != nil || !bytes.Equal(got, buf) {
					t.Errorf("worker %d block %d: read %v, %v", w, i, got[:4], err)
					return
				}
				if i%10 == 0 {
					if err := f.Sync(); err != nil {
						t.Error(err)
					}
					g, err := fs.Create(fmt.Sprintf("/w%d-%d", w, i))
					if err != nil {
						t.Error(err)
						return
					}
					if err := g.Close(); err != nil {
						t.Error(err)
					}
					if err := fs.SyncDir("/"); err != nil {
						t.Error(err)
					}
					if _, err := fs.List("/"); err != nil {
						t.Error(err)
					}
					_ = fs.CrashClone()
				}
			}
		})
	}
	wg.Wait()
	if size, _ := f.Size(); size != workers*blocks*block {
		t.Fatalf("size %d, want %d", size, workers*blocks*block)
	}
}
