package keyspace

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// TestWriteErrDiskFull fills the disk (ENOSPC on writes, syncs or both): durability waits fail,
// WriteErr is set, reads keep working, writes that need a new segment fail without effect;
// once space is back the retried flush succeeds, WriteErr clears and nothing acknowledged or
// kept in memory meanwhile is lost, across a reopen and a crash.
func TestWriteErrDiskFull(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ops        []vfs.Op
		background bool
	}{
		{"write", []vfs.Op{vfs.OpWrite}, false},
		{"sync", []vfs.Op{vfs.OpSync}, false},
		{"write and sync", []vfs.Op{vfs.OpWrite, vfs.OpSync}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testWriteErrDiskFull(t, tc.ops, tc.background)
		})
	}
}

// testWriteErrDiskFull: background says to wait for the background sync to clear the error
// before any client write.
func testWriteErrDiskFull(t *testing.T, ops []vfs.Op, background bool) {
	clk := newTestClock()
	mem := vfs.NewMem()
	full := vfs.NewToggle(syscall.ENOSPC, ops...)
	opts := testOpts(vfs.NewErrorFS(mem, full), clk)
	opts.SegmentSize = 4 << 10
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	want := map[string]string{}
	for i := 0; i < 50; i++ {
		k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)
		mustPut(t, ks, se, 0, k, v, 0)
		want[k] = v
	}
	if err := ks.WriteErr(); err != nil {
		t.Fatalf("WriteErr before the disk filled: %v", err)
	}

	full.Enable()
	if err := ks.Put(se, 0, []byte("during"), []byte("x"), 0, TypeString); err != nil {
		t.Fatalf("append to memory failed: %v", err)
	}
	err := se.Wait()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Wait with a full disk = %v, want ENOSPC", err)
	}
	var we *vlog.WriteError
	if !errors.As(err, &we) {
		t.Fatalf("Wait error %v is not a vlog.WriteError", err)
	}
	if err := ks.WriteErr(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteErr with a full disk = %v", err)
	}
	// Reads keep working, from the tail and from disk.
	for k, v := range want {
		wantValue(t, ks, 0, k, v)
	}
	wantValue(t, ks, 0, "during", "x")
	// While the error stands, writes to that shard fail outright and change nothing: the
	// memory of a log that cannot write is not allowed to grow.
	var failed []string
	for i := 0; i < 100; i++ {
		k := fmt.Sprintf("big%d", i)
		if err := ks.Put(se, 0, []byte(k), bytes.Repeat([]byte{'b'}, 1000), 0, TypeString); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("put during the error: %v, want the log's ENOSPC", err)
			}
			failed = append(failed, k)
			wantMissing(t, ks, 0, k)
		} else {
			want[k] = strings.Repeat("b", 1000)
		}
	}
	if len(failed) == 0 {
		t.Fatal("no put was refused while the disk was full")
	}
	if err := se.Wait(); err == nil {
		t.Fatal("Wait succeeded with a full disk")
	}

	full.Disable()
	want["during"] = "x"
	if background {
		// With no client writes, the background sync retries the failed flushes (once a
		// second).
		deadline := time.Now().Add(5 * time.Second)
		for ks.WriteErr() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("WriteErr still %v seconds after the disk has space again", ks.WriteErr())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Asking for the error starts a retry, which succeeds now; then every write succeeds.
	deadline := time.Now().Add(5 * time.Second)
	for ks.WriteErr() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("WriteErr still %v seconds after the disk has space again", ks.WriteErr())
		}
		time.Sleep(time.Millisecond)
	}
	for s := range opts.Shards {
		k := keyInShard(opts.Shards, 0, s, "after")
		mustPut(t, ks, se, 0, k, "y", 0)
		want[k] = "y"
	}
	if err := ks.WriteErr(); err != nil {
		t.Fatalf("WriteErr after a successful write to every shard: %v", err)
	}
	check := func(ks *Keyspace, when string) {
		t.Helper()
		for k, v := range want {
			got, _, ok := getString(t, ks, 0, k)
			if !ok || got != v {
				t.Fatalf("%s: %q = %q, %v; want %q", when, k, got, ok, v)
			}
		}
		for _, k := range failed {
			wantMissing(t, ks, 0, k)
		}
		if n := ks.DBSize(nil, 0); n != int64(len(want)) {
			t.Fatalf("%s: DBSize = %d, want %d", when, n, len(want))
		}
	}
	check(ks, "after recovery")
	crashed := mem.CrashClone()
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	check(ks, "after reopen")
	mustClose(t, ks)
	ks = mustOpen(t, testOpts(crashed, clk))
	check(ks, "after crash")
	mustClose(t, ks)
}

// TestCorruptRecordNotServed flips a byte of a synced record on disk: reads of it fail with
// ErrCorrupt and never return the damaged bytes; after a reopen, replay skips the record in its
// sealed segment and the key falls back to its previous value.
func TestCorruptRecordNotServed(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	opts.Shards = 1
	opts.SegmentSize = 1 << 10
	// Falling back to the older record is full replay's policy; with a checkpoint the entry
	// keeps pointing at the damaged record, which reads go on refusing
	// (TestCheckpointCorruptRecordNotServed).
	opts.CheckpointInterval = -1
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	mustPut(t, ks, se, 0, "k", "old value", 0)
	for i := 0; i < 20; i++ { // move on to a later segment
		mustPut(t, ks, se, 0, fmt.Sprintf("fill%d", i), strings.Repeat("f", 100), 0)
	}
	newVal := strings.Repeat("new value ", 10)
	mustPut(t, ks, se, 0, "k", newVal, 0)
	for i := 0; i < 20; i++ { // fill the segment holding the new value
		mustPut(t, ks, se, 0, fmt.Sprintf("more%d", i), strings.Repeat("m", 100), 0)
	}
	s := ks.shards[0]
	if err := s.log.Sync(); err != nil { // seal it: reads now go to the file
		t.Fatal(err)
	}
	s.mu.RLock()
	i, _, ok := s.ix.find(uint32(hashKey(0, []byte("k"))), 0, []byte("k"))
	e := *s.ix.entry(i)
	s.mu.RUnlock()
	if !ok {
		t.Fatal("key not in the index")
	}
	path := filepath.Join(opts.Dir, "shard-000", fmt.Sprintf("%08d.seg", e.seg))
	f, err := mem.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	// A byte in the middle of the value, as bit rot would change it; synced, so it also
	// survives the reopen below.
	if _, err := f.WriteAt([]byte{'X'}, int64(e.off)+vlog.HeaderSize+1+50); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	served := false
	_, err = ks.getBytes(0, []byte("k"), func([]byte, Meta) { served = true })
	if !errors.Is(err, ErrCorrupt) || served {
		t.Fatalf("Get of a corrupt record: err %v, served %v", err, served)
	}
	ks.mgetBytes(0, [][]byte{[]byte("k"), []byte("fill0")}, true, func(i int, val []byte, _ Meta, ok bool, err error) {
		if i == 0 && (ok || !errors.Is(err, ErrCorrupt)) {
			t.Fatalf("MGet of a corrupt record: %q, %v, %v", val, ok, err)
		}
		if i == 1 && (!ok || err != nil) {
			t.Fatalf("MGet of an intact record: %q, %v, %v", val, ok, err)
		}
	})
	err = ks.Update(se, []Key{{DB: 0, Key: []byte("k")}}, func(tx *Tx) error {
		_, _, err := tx.Value(0)
		return err
	})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Tx.Value of a corrupt record: %v", err)
	}
	if n := ks.Stats(nil).CorruptReads; n < 3 {
		t.Fatalf("CorruptReads = %d after three corrupt reads", n)
	}
	mustClose(t, ks)

	// A restart that replays the damaged segment refuses to start, naming it; repairing moves
	// the damaged record aside, and the key falls back to its previous record.
	var ce *vlog.CorruptionError
	if _, err := Open(opts); !errors.As(err, &ce) || ce.Offset != int64(e.off) || !strings.HasSuffix(ce.Segment, path) {
		t.Fatalf("reopen over a damaged record: %v, want a corruption error at %s:%d", err, path, e.off)
	}
	opts.RepairCorruption = true
	ks = mustOpen(t, opts)
	defer ks.Close()
	wantValue(t, ks, 0, "k", "old value")
	wantValue(t, ks, 0, "fill0", strings.Repeat("f", 100))
	wantValue(t, ks, 0, "more19", strings.Repeat("m", 100))
	if n := ks.Stats(nil).Log.Corrupt; n != 1 {
		t.Fatalf("replay counted %d corrupt records, want 1", n)
	}
}
