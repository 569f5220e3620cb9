//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// The disk's own ceiling: how many random reads of the size a GET needs the disk answers per
// second through the engine lavik-data reads values with, at a queue depth that keeps it busy.
// A GET of a value on the SSD costs one such read, so the figure bounds the GETs per second a
// server with a cold cache can answer, whatever its CPU does; the comparison reports Lavik's GET
// throughput as a fraction of it.
//
// The reads are the ones the value log does: a record of RecordSize(key, value) bytes, the file
// seen as records packed back to back as in a segment, widened to the file's direct-I/O
// alignment (vfs.DirectAlign, the device's logical block on most file systems) as prepareRead
// widens it, from a file opened with O_DIRECT (vfs OpenDirect), into buffers of the engine
// (io_uring registered buffers when it has them). With 1,088-byte records and 512-byte blocks
// every read is 1,536 bytes, as in the server; at uniformly random byte offsets a quarter would
// be 2,048. The file is written in full with random bytes first: holes read as zeros without
// any I/O.
//
// Rejected: reading the servers' own data directories (their size and layout depend on what
// was loaded and collected, and the reads would compete with the servers), and fio (not
// installed everywhere, and not the engine the server uses).

// measureDisk writes the file, reads it at random for the warm-up and the window, and removes
// it. A file system that refuses O_DIRECT, or has no room for the file, is reported as skipped
// rather than failed: the comparison itself does not need the figure.
func measureDisk(ctx context.Context, p diskParams) (*DiskCeiling, error) {
	d := &DiskCeiling{FileBytes: p.Size, Depth: p.Depth, Batch: p.Batch, RecordBytes: p.Record, WindowS: p.Duration.Seconds()}
	if p.Depth < 1 || p.Batch < 1 || p.Batch > p.Depth || p.Record < 1 || p.Size < 4*int64(p.Record)+vfs.AlignedBlock {
		return d, fmt.Errorf("disk ceiling: depth %d, batch %d, record %d B, file %d B: want 1 <= batch <= depth and a file of many records",
			p.Depth, p.Batch, p.Record, p.Size)
	}
	avail, tmpfs, err := fsSpace(p.Dir)
	switch {
	case err != nil:
		return d, fmt.Errorf("disk ceiling: %w", err)
	case tmpfs:
		d.Skipped = p.Dir + " is a tmpfs (its files live in memory)"
		return d, nil
	case avail >= 0 && avail < p.Size+p.Size/4:
		d.Skipped = fmt.Sprintf("%s has %s free, the file needs %s and some room to spare", p.Dir, humanBytes(float64(avail)), humanBytes(float64(p.Size)))
		return d, nil
	}
	f, err := os.CreateTemp(p.Dir, "disk-ceiling-")
	if err != nil {
		return d, fmt.Errorf("disk ceiling: %w", err)
	}
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	d.File = name
	t0 := time.Now()
	if err := writeRandomFile(ctx, name, p.Size, p.Seed); err != nil {
		if ctx.Err() != nil {
			return d, errInterrupted
		}
		return d, fmt.Errorf("disk ceiling: writing %s: %w", name, err)
	}
	d.WriteS = time.Since(t0).Seconds()
	rf, direct, err := vfs.Default.OpenDirect(name)
	if err != nil {
		return d, fmt.Errorf("disk ceiling: %w", err)
	}
	defer rf.Close()
	if !direct {
		d.Skipped = "the file system under " + p.Dir + " refuses O_DIRECT, so reads would come from the page cache"
		return d, nil
	}
	eng, err := vlog.NewEngine(p.Engine, p.Depth)
	if err != nil {
		return d, fmt.Errorf("disk ceiling: %w", err)
	}
	defer eng.Close()
	d.Engine, d.Align = eng.Name(), vfs.DirectAlign(rf)
	r, err := randomReads(ctx, eng, rf, p, d.Align)
	if err != nil {
		return d, err
	}
	d.Reads, d.Errors = r.reads, r.errors
	if r.reads > 0 {
		d.ReadsPS = float64(r.reads) / p.Duration.Seconds()
		d.AvgReadB = float64(r.bytes) / float64(r.reads)
		d.MBps = float64(r.bytes) / p.Duration.Seconds() / 1e6
		d.CPUUsPerOp = float64(r.cpu.Microseconds()) / float64(r.reads)
	}
	if d.Errors > 0 {
		return d, fmt.Errorf("disk ceiling: %d of the reads failed: %v", d.Errors, r.firstErr)
	}
	return d, nil
}

// writeRandomFile writes size bytes of pseudo-random data to name (direct, where the file
// system allows it, so that 2 GB do not push everything else out of the page cache) and syncs
// it.
func writeRandomFile(ctx context.Context, name string, size int64, seed uint64) error {
	f, err := openDirectWrite(name)
	if err != nil {
		return err
	}
	const chunk = 4 << 20
	buf := vfs.AlignedBuffer(chunk)
	rng := rand.NewChaCha8([32]byte{0: byte(seed), 1: byte(seed >> 8), 2: 'd', 3: 'i', 4: 's', 5: 'k'})
	for off := int64(0); off < size; off += chunk {
		if ctx.Err() != nil {
			f.Close()
			return ctx.Err()
		}
		_, _ = rng.Read(buf)
		n := int64(chunk)
		if size-off < n {
			n = size - off // size is a whole number of blocks: see diskFileSize
		}
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// diskReadStats is what the readers did inside the window.
type diskReadStats struct {
	reads, bytes, errors int64
	cpu                  time.Duration
	firstErr             error
}

// randomReads keeps p.Depth reads in flight, in batches of p.Batch from p.Depth/p.Batch
// goroutines, each read a random record of the file (seen as records of p.Record bytes back to
// back) widened to align, as the value log reads it. It counts the reads that complete inside the window and the CPU this
// process used over it (the engine's reaper included).
func randomReads(ctx context.Context, eng vlog.Engine, f vfs.File, p diskParams, align int64) (diskReadStats, error) {
	var st diskReadStats
	var measuring, stop atomic.Bool
	var reads, bytes, errs atomic.Int64
	var errOnce sync.Once
	workers := p.Depth / p.Batch
	records := p.Size / int64(p.Record)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(p.Seed, uint64(w)))
			span := maxDirectSpan(p.Record, align)
			reqs := make([]vlog.ReadReq, p.Batch)
			ptrs := make([]*vlog.ReadReq, p.Batch)
			for i := range reqs {
				buf, fixed := eng.Buffer(span)
				reqs[i] = vlog.ReadReq{File: f, Buf: buf, Fixed: fixed}
				ptrs[i] = &reqs[i]
			}
			defer func() {
				for i := range reqs {
					eng.ReleaseBuffer(reqs[i].Buf, reqs[i].Fixed)
				}
			}()
			for !stop.Load() {
				for i := range reqs {
					start, n := directSpan(rng.Int64N(records)*int64(p.Record), p.Record, align, p.Size)
					r := &reqs[i]
					*r = vlog.ReadReq{File: f, Off: start, Buf: r.Buf, N: n, Fixed: r.Fixed}
				}
				eng.Read(ptrs)
				if !measuring.Load() {
					continue
				}
				for i := range reqs {
					r := &reqs[i]
					if r.Err != nil || r.Done < r.N {
						errs.Add(1)
						err := r.Err
						if err == nil {
							err = fmt.Errorf("short read: %d of %d bytes at %d", r.Done, r.N, r.Off)
						}
						errOnce.Do(func() { st.firstErr = err })
						continue
					}
					reads.Add(1)
					bytes.Add(int64(r.Done))
				}
			}
		}()
	}
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	ok := wait(p.Warmup)
	cpu0 := selfCPU()
	measuring.Store(true)
	ok = ok && wait(p.Duration)
	measuring.Store(false)
	st.cpu = selfCPU() - cpu0
	st.reads, st.bytes, st.errors = reads.Load(), bytes.Load(), errs.Load()
	stop.Store(true)
	wg.Wait()
	if !ok {
		return st, errInterrupted
	}
	return st, nil
}

// recordBytes is the size of the value-log record of a value of valueLen bytes under a key of
// keyLen bytes: what a GET that goes to the disk reads, before alignment.
func recordBytes(keyLen, valueLen int) int { return int(vlog.RecordSize(0, keyLen, valueLen)) }
