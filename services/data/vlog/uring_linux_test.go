//go:build linux

package vlog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"golang.org/x/sys/unix"
)

func newTestUring(t *testing.T, depth int) Engine {
	t.Helper()
	e, err := NewEngine("uring", depth)
	if err != nil {
		t.Skipf("io_uring not available here: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// writeBlocks creates a file of n 4 KiB blocks, block i filled with byte i.
func writeBlocks(t *testing.T, n int) (vfs.File, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "blocks")
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		b.Write(bytes.Repeat([]byte{byte(i)}, vfs.AlignedBlock))
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, direct, err := vfs.Default.OpenDirect(p)
	if err != nil || !direct {
		t.Fatalf("open direct: %v %v", direct, err)
	}
	t.Cleanup(func() { f.Close() })
	return f, p
}

func TestUringReadsBatchesAndErrors(t *testing.T) {
	e := newTestUring(t, 8) // a small ring, so batches overflow it
	f, _ := writeBlocks(t, 64)
	var reqs []*ReadReq
	var bufs [][]byte
	var fixed []int
	for i := 0; i < 40; i++ {
		buf, fx := e.Buffer(vfs.AlignedBlock)
		bufs, fixed = append(bufs, buf), append(fixed, fx)
		reqs = append(reqs, &ReadReq{File: f, Off: int64(i) * vfs.AlignedBlock, Buf: buf, N: vfs.AlignedBlock, Fixed: fx})
	}
	// One request past the end of the file: a short read, not an error.
	tailBuf, tailFixed := e.Buffer(2 * vfs.AlignedBlock)
	reqs = append(reqs, &ReadReq{File: f, Off: 63 * vfs.AlignedBlock, Buf: tailBuf, N: 2 * vfs.AlignedBlock, Fixed: tailFixed})
	// One misaligned request: O_DIRECT refuses it with EINVAL, for that request only.
	badBuf, badFixed := e.Buffer(vfs.AlignedBlock)
	reqs = append(reqs, &ReadReq{File: f, Off: 100, Buf: badBuf, N: vfs.AlignedBlock, Fixed: badFixed})
	e.Read(reqs)
	for i := 0; i < 40; i++ {
		if reqs[i].Err != nil || reqs[i].Done != vfs.AlignedBlock || reqs[i].Buf[0] != byte(i) || reqs[i].Buf[vfs.AlignedBlock-1] != byte(i) {
			t.Fatalf("request %d: done %d err %v first byte %d", i, reqs[i].Done, reqs[i].Err, reqs[i].Buf[0])
		}
	}
	if r := reqs[40]; r.Err != nil || r.Done != vfs.AlignedBlock {
		t.Fatalf("read past EOF: done %d err %v", r.Done, r.Err)
	}
	if r := reqs[41]; r.Err == nil {
		t.Fatal("misaligned direct read did not fail")
	}
	st := e.Stats()
	if st.Reads != 42 || st.Errors != 1 || st.FixedReads == 0 {
		t.Fatalf("stats %+v", st)
	}
	for i := range bufs {
		e.ReleaseBuffer(bufs[i], fixed[i])
	}
	e.ReleaseBuffer(tailBuf, tailFixed)
	e.ReleaseBuffer(badBuf, badFixed)
}

// TestUringConcurrentReaders runs many goroutines' batches at once: every read completes with
// the right data, and completions are delivered in fewer wake-ups than reads.
func TestUringConcurrentReaders(t *testing.T) {
	e := newTestUring(t, 32)
	f, _ := writeBlocks(t, 256)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 50; round++ {
				n := 1 + (g+round)%4
				reqs := make([]*ReadReq, n)
				for i := range reqs {
					blk := (g*7 + round*3 + i) % 256
					buf, fx := e.Buffer(vfs.AlignedBlock)
					reqs[i] = &ReadReq{File: f, Off: int64(blk) * vfs.AlignedBlock, Buf: buf, N: vfs.AlignedBlock, Fixed: fx}
				}
				e.Read(reqs)
				for i, r := range reqs {
					blk := (g*7 + round*3 + i) % 256
					if r.Err != nil || r.Done != vfs.AlignedBlock || r.Buf[17] != byte(blk) {
						errs <- fmt.Errorf("goroutine %d round %d: block %d: %v", g, round, blk, r.Err)
						return
					}
					e.ReleaseBuffer(r.Buf, r.Fixed)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := e.Stats()
	if st.Reads == 0 || st.Submits == 0 || st.Submits > st.Reads {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("reads %d, io_uring_enter calls %d, wake-ups %d, fixed-buffer reads %d", st.Reads, st.Submits, st.Wakeups, st.FixedReads)
}

// TestLogReadsThroughUring runs the log's read path on io_uring: synced records are read with
// O_DIRECT through the engine, and the same bytes come back.
func TestLogReadsThroughUring(t *testing.T) {
	e := newTestUring(t, 64)
	opts := testOpts(vfs.Default, filepath.Join(t.TempDir(), "s"))
	opts.Engine = e
	l, _ := collect(t, opts)
	defer l.Close()
	var locs []Loc
	var vals [][]byte
	for i := 0; i < 200; i++ {
		v := bytes.Repeat([]byte{byte(i)}, 100+i*37)
		loc, lsn, err := l.Append(Header{Kind: KindPut, Version: uint64(i + 1)}, []byte(fmt.Sprint(i)), v)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Flush(lsn, true); err != nil {
			t.Fatal(err)
		}
		locs, vals = append(locs, loc), append(vals, v)
	}
	before, beforeBytes := e.Stats().Reads, e.Stats().Bytes
	reads := make([]*Read, len(locs))
	// Bytes the reads cover at the segment's alignment, and at 4 KiB; the records' own bytes.
	var want, want4k, recBytes uint64
	align := uint64(vfs.AlignedBlock)
	for i, loc := range locs {
		reads[i] = &Read{}
		n := uint64(RecordSize(0, len(fmt.Sprint(i)), len(vals[i])))
		if err := l.PrepareRead(reads[i], loc, int(n)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			align = uint64(l.segs[loc.Seg].align)
		}
		off := uint64(loc.Off)
		want += (off+n+align-1)&^(align-1) - off&^(align-1)
		want4k += (off+n+4095)&^4095 - off&^4095
		recBytes += n
	}
	Submit(e, reads)
	for i, r := range reads {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		v, err := decodeVal(r.Data)
		if err != nil || !bytes.Equal(v, vals[i]) {
			t.Fatalf("record %d: %v", i, err)
		}
		r.Release()
	}
	if got := e.Stats().Reads - before; got != uint64(len(locs)) {
		t.Fatalf("%d engine reads for %d records", got, len(locs))
	}
	// Each read covers its record's aligned span and no more (512-byte units where the file
	// system allows them, not 4 KiB); the span of the last records may end past the end of the
	// file, which a read does not return.
	got := e.Stats().Bytes - beforeBytes
	if got < recBytes || got > want || align < 4096 && got >= want4k {
		t.Fatalf("engine read %d bytes for %d bytes of records: want at most %d at alignment %d (%d at 4 KiB)", got, recBytes, want, align, want4k)
	}
	t.Logf("direct-read alignment %d: %d bytes read for %d bytes of records (%d at 4 KiB)", align, got, recBytes, want4k)
}

// fdFile is a vfs.File that only has a descriptor: enough for the io_uring engine.
type fdFile struct {
	vfs.File
	fd int
}

func (f fdFile) Fd() (uintptr, error) { return uintptr(f.fd), nil }

// With enough reads in flight, a new read leaves its submission to the reaper, which submits it
// when a read in flight completes. Reads of an empty pipe stay in flight until the test writes
// to it, which makes the order observable.
func TestUringDefersSubmissionToReaper(t *testing.T) {
	e := newTestUring(t, 32)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil { // blocking: io_uring waits on it
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	pipe := fdFile{fd: p[0]}

	var wg sync.WaitGroup
	pipeReqs := make([]*ReadReq, piggybackMin)
	for i := range pipeReqs {
		pipeReqs[i] = &ReadReq{File: pipe, Buf: make([]byte, 1), N: 1}
		wg.Add(1)
		go func(r *ReadReq) { defer wg.Done(); e.Read([]*ReadReq{r}) }(pipeReqs[i])
	}
	ue := e.(*uringEngine)
	waitFor(t, func() bool { ue.mu.Lock(); defer ue.mu.Unlock(); return ue.inflight >= piggybackMin })

	f, _ := writeBlocks(t, 4)
	buf, fx := e.Buffer(vfs.AlignedBlock)
	disk := &ReadReq{File: f, Off: 2 * vfs.AlignedBlock, Buf: buf, N: vfs.AlignedBlock, Fixed: fx}
	diskDone := make(chan struct{})
	go func() { e.Read([]*ReadReq{disk}); close(diskDone) }()
	waitFor(t, func() bool { return e.Stats().Deferred == 1 })
	select {
	case <-diskDone:
		t.Fatal("the deferred read completed before any read in flight did")
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := unix.Write(p[1], []byte{7}); err != nil { // completes one pipe read
		t.Fatal(err)
	}
	select {
	case <-diskDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the reaper did not submit the deferred read")
	}
	if disk.Err != nil || disk.Done != vfs.AlignedBlock || disk.Buf[0] != 2 {
		t.Fatalf("deferred read: %d bytes, %v, block byte %d", disk.Done, disk.Err, disk.Buf[0])
	}
	e.ReleaseBuffer(disk.Buf, disk.Fixed)
	if _, err := unix.Write(p[1], []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, r := range pipeReqs {
		if r.Err != nil || r.Done != 1 {
			t.Fatalf("pipe read: %d bytes, %v", r.Done, r.Err)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for a condition")
		}
	}
}
