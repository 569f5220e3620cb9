package keyspace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// The data directory in testdata/format1 was written by lavik-data 0.1.0 (format 1) with two
// shards, 1 MiB segments and checkpoints, by fill.py beside it, then shut down cleanly. These
// tests open it with this version.

// loadFormat1 copies testdata/format1/data into a new MemFS under /data.
func loadFormat1(t *testing.T) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	root := filepath.Join("testdata", "format1", "data")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		dst := filepath.Join("/data", rel)
		if d.IsDir() {
			return mem.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := mem.Create(dst)
		if err != nil {
			return err
		}
		if _, err := f.Write(b); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		return f.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/data", "/data/shard-000", "/data/shard-001"} {
		if err := mem.SyncDir(d); err != nil {
			t.Fatal(err)
		}
	}
	return mem
}

func format1Opts(fs vfs.FS) Options {
	opts := testOpts(fs, newTestClock())
	opts.Shards, opts.SegmentSize = 2, 1<<20
	opts.Now = func() int64 { return 1798761600000 } // 2027-01-01: ttl:past expired, ttl:far (2100) not
	return opts
}

// format1Big is the chunked value fill.py wrote to "big".
func format1Big() []byte {
	b := make([]byte, 200*1024)
	for i := range b {
		b[i] = byte((i*7 + 3) % 251)
	}
	return b
}

// checkFormat1Data checks a keyspace against what fill.py wrote.
func checkFormat1Data(t *testing.T, ks *Keyspace) {
	t.Helper()
	n := 0
	for i := 0; i < 2000; i++ {
		k := fmt.Sprintf("k:%d", i)
		switch {
		case i%5 == 0:
			wantMissing(t, ks, 0, k)
		case i%2 == 0:
			wantValue(t, ks, 0, k, fmt.Sprintf("v1:%d:", i)+strings.Repeat("x", i%300))
			n++
		default:
			wantValue(t, ks, 0, k, fmt.Sprintf("v0:%d", i))
			n++
		}
	}
	wantValue(t, ks, 0, "", "empty-key")
	wantValue(t, ks, 0, "ttl:far", "lives")
	if m, ok := ks.Lookup(nil, 0, []byte("ttl:far")); !ok || m.ExpireAt != 4102444800000 {
		t.Fatalf("ttl:far expires at %d, want 4102444800000", m.ExpireAt)
	}
	wantValue(t, ks, 0, "ttl:persisted", "p")
	if m, _ := ks.Lookup(nil, 0, []byte("ttl:persisted")); m.ExpireAt != 0 {
		t.Fatalf("ttl:persisted has an expiry again: %d", m.ExpireAt)
	}
	wantMissing(t, ks, 0, "ttl:past")
	wantValue(t, ks, 0, "counter", "42")
	wantValue(t, ks, 0, "appended", "abcdef")
	if m, _ := ks.Lookup(nil, 0, []byte("appended")); !m.Raw {
		t.Fatal("appended lost its raw encoding")
	}
	big := format1Big()
	copy(big[100000:], "EDITED")
	wantValue(t, ks, 0, "big", string(big))
	if got, _ := getRange(t, ks, 0, "big", 99990, 100010); string(got) != string(big[99990:100010]) {
		t.Fatalf("GETRANGE across the edit: %q", got)
	}
	wantValue(t, ks, 0, "big2:renamed", string(format1Big()[:70000]))
	wantMissing(t, ks, 0, "big2")
	n += 7 // "", ttl:far, ttl:persisted, counter, appended, big, big2:renamed
	for i := 0; i < 100; i++ {
		wantValue(t, ks, 3, fmt.Sprintf("db3:%d", i), fmt.Sprintf("three:%d", i))
		wantMissing(t, ks, 5, fmt.Sprintf("db5:%d", i))
	}
	wantValue(t, ks, 5, "db5:after", "after-flush")
	if got := ks.DBSize(nil, 0); got != int64(n) {
		t.Fatalf("DBSIZE 0 = %d, want %d", got, n)
	}
	if got := ks.DBSize(nil, 3); got != 100 {
		t.Fatalf("DBSIZE 3 = %d, want 100", got)
	}
	if err := checkAccounting(ks); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFormat1 opens a directory Lavik 0.1 wrote: it is upgraded to the current format,
// every key, value, expiry and encoding is there, and it opens again as format 2.
func TestUpgradeFormat1(t *testing.T) {
	mem := loadFormat1(t)
	if n, ok, err := StoredShards(mem, "/data"); err != nil || !ok || n != 2 {
		t.Fatalf("StoredShards of a format-1 directory: %d %v %v", n, ok, err)
	}
	opts := format1Opts(mem)
	ks := mustOpen(t, opts)
	checkFormat1Data(t, ks)
	// The upgrade leaves a format-2 directory and nothing of its work.
	if f, ok, err := readFormat(mem, "/data"); err != nil || !ok || f.version != formatVersion || f.shards != 2 {
		t.Fatalf("format after the upgrade: %+v %v %v", f, ok, err)
	}
	for _, p := range []string{"/data/" + layoutFileV1, "/data/" + upgradeMarker, "/data/shard-000/" + upgradeDir,
		"/data/shard-001/" + upgradeDir, "/data/shard-001/00000002" + oldSuffix} {
		if _, err := mem.Stat(p); err == nil {
			t.Fatalf("%s left after the upgrade", p)
		}
	}
	// It keeps working: writes, a restart, a crash.
	se := ks.NewSession()
	mustPut(t, ks, se, 0, "after-upgrade", "yes", 0)
	writeAt(t, ks, se, 0, "big", 0, []byte("HEAD"))
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	defer mustClose(t, ks)
	wantValue(t, ks, 0, "after-upgrade", "yes")
	if got, _ := getRange(t, ks, 0, "big", 0, 6); string(got) != "HEAD"+string(format1Big()[4:6]) {
		t.Fatalf("big after an edit and a restart starts %q", got)
	}
}

// TestUpgradeFormat1Crash crashes before every file-system change the upgrade makes: each crash
// leaves a directory the next start opens, finishing or redoing the upgrade, with all the data.
func TestUpgradeFormat1Crash(t *testing.T) {
	mem := loadFormat1(t)
	cr := &crasher{mem: mem, every: true}
	ks := mustOpen(t, format1Opts(vfs.NewErrorFS(mem, cr)))
	mustClose(t, ks)
	cr.mu.Lock()
	clones := cr.clones
	cr.mu.Unlock()
	if len(clones) < 10 {
		t.Fatalf("only %d crash points", len(clones))
	}
	for i, c := range clones {
		ks, err := Open(format1Opts(c))
		if err != nil {
			t.Fatalf("crash %d of %d: %v", i+1, len(clones), err)
		}
		checkFormat1Data(t, ks)
		mustClose(t, ks)
		if f, ok, err := readFormat(c, "/data"); err != nil || !ok || f.version != formatVersion {
			t.Fatalf("crash %d: format after the next start: %+v %v %v", i+1, f, ok, err)
		}
	}
}

// TestNewerFormatRefused: a directory of a later format, or using a feature this version does
// not know, is refused with an error that says a newer version wrote it; so is a segment of a
// later format. Nothing is changed.
func TestNewerFormatRefused(t *testing.T) {
	for name, damage := range map[string]func(fs vfs.FS) error{
		"format": func(fs vfs.FS) error {
			return vfs.WriteFileAtomic(fs, "/data", formatFile, []byte("format 3\nshards 4\nfeatures\n"))
		},
		"feature": func(fs vfs.FS) error {
			return vfs.WriteFileAtomic(fs, "/data", formatFile, []byte("format 2\nshards 4\nfeatures grouped-hashes\n"))
		},
		"segment": func(fs vfs.FS) error {
			f, err := fs.OpenReadWrite("/data/shard-000/" + vlog.SegmentName(1))
			if err != nil {
				return err
			}
			defer f.Close()
			// Format 3 in the header, with a CRC that verifies.
			b := make([]byte, vlog.SegmentHeaderSize)
			f.ReadAt(b, 0)
			b[8] = 3
			binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], crc32.MakeTable(crc32.Castagnoli)))
			_, err = f.WriteAt(b, 0)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := testOpts(mem, newTestClock())
			ks := mustOpen(t, opts)
			mustPut(t, ks, ks.NewSession(), 0, "k", "v", 0)
			mustClose(t, ks)
			if err := damage(mem); err != nil {
				t.Fatal(err)
			}
			_, err := Open(opts)
			if !errors.Is(err, vlog.ErrNewerFormat) || !strings.Contains(err.Error(), "newer version") {
				t.Fatalf("open: %v, want a newer-format error", err)
			}
		})
	}
}
