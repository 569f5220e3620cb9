package keyspace

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// TestChunksDoNotRepeatTheKey: a large value's chunks carry an 8-byte object id, not the key, so
// a 64 KiB key with a 1 MiB value appends about 1 MiB (format 1 appended the key with every 8 KiB
// chunk: 9.5 MB).
func TestChunksDoNotRepeatTheKey(t *testing.T) {
	opts := testOpts(vfs.NewMem(), newTestClock())
	opts.Shards, opts.SegmentSize = 1, 8<<20
	ks := mustOpen(t, opts)
	defer mustClose(t, ks)
	key := bytes.Repeat([]byte("k"), 64<<10)
	val := bytes.Repeat([]byte("v"), 1<<20)
	before := ks.shards[0].log.AppendedLSN()
	se := ks.NewSession()
	if err := ks.Put(se, 0, key, val, 0, TypeString); err != nil {
		t.Fatal(err)
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	appended := ks.shards[0].log.AppendedLSN() - before
	t.Logf("a %d-byte key with a %d-byte value appended %d bytes", len(key), len(val), appended)
	if limit := uint64(len(val) + len(key) + len(val)/20); appended > limit {
		t.Fatalf("appended %d bytes, want at most %d (the value, the key once, and 5%%)", appended, limit)
	}
	got, _, ok := getString(t, ks, 0, string(key))
	if !ok || got != string(val) {
		t.Fatal("the value did not read back")
	}
}

// TestSlowSyncBlocksNoShard: while a shard's fdatasync hangs (a slow disk), reads and writes of
// that shard go on under everysec, whose replies need their writes only, across rotations of
// segments and multi-key transactions; nothing waits for the sync but what asks for it.
func TestSlowSyncBlocksNoShard(t *testing.T) {
	var held atomic.Bool
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	gate := vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && held.Load() && strings.Contains(path, ".seg") {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
		}
		return nil
	})
	opts := testOpts(vfs.NewErrorFS(vfs.NewMem(), gate), newTestClock())
	opts.Shards, opts.SegmentSize, opts.Fsync = 2, 4<<10, vlog.FsyncEverysec
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	mustPut(t, ks, se, 0, "before", "synced", 0)

	held.Store(true)
	syncDone := make(chan error, 1)
	go func() { syncDone <- ks.shards[0].log.Sync() }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the sync never started")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 { // 200 x ~300 bytes: many rotations of 4 KiB segments
			k := fmt.Sprintf("k%d", i)
			mustPut(t, ks, se, 0, k, strings.Repeat("x", 250), 0)
			wantValue(t, ks, 0, k, strings.Repeat("x", 250))
			if i%20 == 0 { // a transaction over both shards
				err := ks.Update(se, []Key{{DB: 0, Key: []byte(k)}, {DB: 0, Key: []byte("m" + k)}}, func(tx *Tx) error {
					tx.Put(0, []byte("a"), 0, TypeString)
					tx.Put(1, []byte("b"), 0, TypeString)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				if err := se.Wait(); err != nil {
					t.Error(err)
					return
				}
			}
		}
		wantValue(t, ks, 0, "before", "synced")
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("reads and writes waited for a sync in progress")
	}
	if st := ks.shards[0].log.Stats(); st.Rotations == 0 {
		t.Fatal("no rotation happened while the sync was held; the test wants some")
	}
	select {
	case err := <-syncDone:
		t.Fatalf("the held sync returned (%v) before it was released", err)
	default:
	}
	held.Store(false)
	close(release)
	if err := <-syncDone; err != nil {
		t.Fatal(err)
	}
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	defer mustClose(t, ks)
	for i := range 200 {
		want := strings.Repeat("x", 250)
		if i%20 == 0 {
			want = "a"
		}
		wantValue(t, ks, 0, fmt.Sprintf("k%d", i), want)
	}
}

// TestSegmentsSealOnStableCuts: a full segment is sealed once a stable cut covers it (every
// shard synced past a consistent cut), which the background sync publishes every second, so
// recovery reads only the newest segments for torn tails and incomplete transactions; before
// that, it stays open, however long ago it was synced.
func TestSegmentsSealOnStableCuts(t *testing.T) {
	opts := testOpts(vfs.NewMem(), newTestClock())
	opts.Shards, opts.SegmentSize, opts.Fsync = 2, 4<<10, vlog.FsyncEverysec
	ks := mustOpen(t, opts)
	defer ks.Close()
	opened := time.Now()
	se := ks.NewSession()
	for i := 0; i < 200; i++ {
		k := []Key{{Key: []byte(keyInShard(2, 0, 0, fmt.Sprintf("a%d.", i)))}, {Key: []byte(keyInShard(2, 0, 1, fmt.Sprintf("b%d.", i)))}}
		if err := ks.Update(se, k, func(tx *Tx) error {
			tx.Put(0, bytes.Repeat([]byte("x"), 100), 0, TypeString)
			tx.Put(1, bytes.Repeat([]byte("y"), 100), 0, TypeString)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	active := func(s *shard) int {
		n := 0
		for _, st := range s.log.SegmentStats() {
			if st.Active {
				n++
			}
		}
		return n
	}
	s0 := ks.shards[0]
	if err := s0.log.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := active(s0); n < 2 && time.Since(opened) < 900*time.Millisecond { // before the first tick
		t.Fatalf("shard 0 synced alone: %d open segments, want its full ones still open (no stable cut yet)", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for active(s0) > 1 || active(ks.shards[1]) > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("open segments %d and %d after 5 s: the sync loop published no stable cut", active(s0), active(ks.shards[1]))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
