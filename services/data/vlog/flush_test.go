package vlog

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// A reply that needs only its write must not wait for a sync in progress (the once-a-second
// fdatasync of appendfsync everysec can take long on a busy disk), and the sync must still
// cover what was written before it started.
func TestFlushWriteDoesNotWaitForSync(t *testing.T) {
	mem := vfs.NewMem()
	var block atomic.Bool
	inSync := make(chan struct{}, 1)
	release := make(chan struct{})
	fs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && block.Load() {
			inSync <- struct{}{}
			<-release
		}
		return nil
	}))
	opts := testOpts(fs, "/d")
	opts.SegmentSize = 1 << 20
	l, _ := collect(t, opts)
	put := func(i int) (Loc, uint64) {
		loc, lsn, err := l.Append(Header{Kind: KindPut, Version: uint64(i + 1)}, []byte(fmt.Sprint("k", i)), bytes.Repeat([]byte{byte(i)}, 100))
		if err != nil {
			t.Fatal(err)
		}
		return loc, lsn
	}

	_, lsn0 := put(0)
	block.Store(true)
	syncDone := make(chan error, 1)
	go func() { syncDone <- l.Flush(lsn0, true) }()
	<-inSync // the sync leader is inside fdatasync

	locs := make([]Loc, 0, 20)
	for i := 1; i <= 20; i++ {
		loc, lsn := put(i)
		locs = append(locs, loc)
		done := make(chan error, 1)
		go func() { done <- l.Flush(lsn, false) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("write-only flush %d waited for the sync in progress", i)
		}
	}
	select {
	case err := <-syncDone:
		t.Fatalf("sync returned (%v) before fdatasync did", err)
	default:
	}
	block.Store(false)
	close(release)
	if err := <-syncDone; err != nil {
		t.Fatal(err)
	}
	// Everything written is still readable (the tail trimmed after the sync must not have
	// disturbed bytes a concurrent write was using), and a final sync makes all of it durable.
	for i, loc := range locs {
		got, err := readRecord(t, l, loc, int(RecordSize(0, len(fmt.Sprint("k", i+1)), 100)))
		if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(i + 1)}, 100)) {
			t.Fatalf("record %d: %v %q", i+1, err, got)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	l.Close()
	_, recs := collect(t, testOpts(crashed, "/d"))
	if len(recs) != 21 {
		t.Fatalf("after a crash %d records, want 21", len(recs))
	}
}

// After a failed fdatasync the kernel may have dropped the dirty pages it could not write, so
// the bytes since the last good sync are written again before the next sync may succeed.
func TestSyncFailureRewritesUnsyncedBytes(t *testing.T) {
	mem := vfs.NewMem()
	var failSync atomic.Bool
	var writes atomic.Int64
	fs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		switch {
		case op == vfs.OpSync && failSync.Load():
			return fmt.Errorf("injected: %w", syscall.EIO)
		case op == vfs.OpWrite:
			writes.Add(1)
		}
		return nil
	}))
	l, _ := collect(t, testOpts(fs, "/d"))
	defer l.Close()
	_, lsn, err := l.Append(Header{Kind: KindPut, Version: 1}, []byte("k"), []byte("value"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(lsn, false); err != nil {
		t.Fatal(err)
	}
	failSync.Store(true)
	if err := l.Flush(lsn, true); err == nil {
		t.Fatal("sync succeeded with a failing fdatasync")
	}
	failSync.Store(false)
	before := writes.Load()
	if err := l.Flush(lsn, true); err != nil {
		t.Fatal(err)
	}
	if writes.Load() == before {
		t.Fatal("the bytes of the failed sync were not written again before the next sync")
	}
	if err := l.WriteErr(); err != nil {
		t.Fatalf("error still standing after a good sync: %v", err)
	}
	// The failed sync lost the unsynced bytes (ErrorFS drops them, as the kernel may); the
	// record is on disk only if it was written again, byte for byte.
	_, recs := collect(t, testOpts(mem.CrashClone(), "/d"))
	if len(recs) != 1 || string(recs[0].key) != "k" || string(recs[0].val) != "value" {
		t.Fatalf("after the retried sync and a crash: %d records %v, want k=value", len(recs), recs)
	}
}
