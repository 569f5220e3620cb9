package vlog

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// ReadReq is one read submitted to an Engine: N bytes of File at Off into Buf[:N]. The engine
// fills Done with the bytes read and Err with the request's own error; one failed request does
// not fail the others of its batch.
type ReadReq struct {
	File vfs.File
	Off  int64
	Buf  []byte
	N    int
	// Fixed is the index+1 of the engine's registered buffer that Buf is (0: an ordinary
	// buffer), as returned by Engine.Buffer.
	Fixed int

	Done int
	Err  error

	fd        int  // set by engines that need the descriptor
	completed bool // a Ring completed it
}

// Engine reads value-log records. Read submits a batch and returns when every request of it has
// completed. Implementations bound the reads in flight and are safe for concurrent use.
//
// The interface is a batch, not a single read, so that an engine that can submit many reads in
// one system call (io_uring) gets them together; the pread engine simply runs them.
type Engine interface {
	Read(reqs []*ReadReq)
	// Buffer returns a buffer of n bytes suitable for direct reads, and the value for
	// ReadReq.Fixed; ReleaseBuffer gives it back.
	Buffer(n int) (buf []byte, fixed int)
	ReleaseBuffer(buf []byte, fixed int)
	Name() string
	Stats() EngineStats
	Close() error
}

// AsyncEngine is an engine whose owner drives it (an event loop's Ring): it starts reads, passes
// them to the kernel when it chooses, and polls for their completion, waiting for none.
type AsyncEngine interface {
	Engine
	// Room is how many more reads StartOne can take now.
	Room() int
	// StartOne queues a read; Submit passes the queued ones to the kernel.
	StartOne(q *ReadReq)
	Submit()
	// Poll completes what finished; ReadReq.Completed then says which.
	Poll() int
}

// Completed reports whether q, started on an AsyncEngine, has completed (after a Poll).
func (q *ReadReq) Completed() bool { return q.completed }

// MarkCompleted marks a request an AsyncEngine completed (ReadReq.Completed then says so).
func (q *ReadReq) MarkCompleted() { q.completed = true }

// EngineStats are an engine's cumulative counters.
type EngineStats struct {
	Reads   uint64 // requests completed
	Bytes   uint64 // bytes read
	Batches uint64 // calls to Read
	Errors  uint64 // requests that failed
	// io_uring only:
	Submits    uint64 // io_uring_enter calls that submitted reads
	Wakeups    uint64 // completion wake-ups (each may complete many reads)
	FixedReads uint64 // reads into registered buffers
	Deferred   uint64 // Read calls that left their submission to the reaper (piggybackMin)
}

// engineCounters are the counters every engine keeps; snapshot turns them into EngineStats.
type engineCounters struct {
	reads, bytes, batches, errors, enters, wakeups, fixedReads, deferred atomic.Uint64
}

func (c *engineCounters) snapshot() EngineStats {
	return EngineStats{
		Reads:      c.reads.Load(),
		Bytes:      c.bytes.Load(),
		Batches:    c.batches.Load(),
		Errors:     c.errors.Load(),
		Submits:    c.enters.Load(),
		Wakeups:    c.wakeups.Load(),
		FixedReads: c.fixedReads.Load(),
		Deferred:   c.deferred.Load(),
	}
}

// NewEngine returns the engine named by kind with at most depth reads in flight: "uring"
// (io_uring, an error where the kernel refuses it), "pread", or "auto", which is io_uring where
// available and pread otherwise (the returned error is then nil and the fallback reason is
// reported by Fallback).
func NewEngine(kind string, depth int) (Engine, error) {
	if depth <= 0 {
		depth = 64
	}
	switch kind {
	case "uring":
		return newUringEngine(depth)
	case "", "auto":
		e, err := newUringEngine(depth)
		if err == nil {
			return e, nil
		}
		lastFallback.Store(err.Error())
		return newPreadEngine(depth), nil
	case "pread":
		return newPreadEngine(depth), nil
	}
	return nil, fmt.Errorf("vlog: unknown io engine %q (want auto, uring or pread)", kind)
}

var lastFallback atomic.Value

// Fallback reports why "auto" last chose pread over io_uring ("" if it did not).
func Fallback() string {
	s, _ := lastFallback.Load().(string)
	return s
}

// preadEngine runs each read as a positioned read on the calling goroutine (or, for batches, on
// one goroutine per request), with a semaphore bounding how many are in flight. Go parks a
// goroutine blocked in pread on its own OS thread, so the bound also caps thread growth.
type preadEngine struct {
	sem   chan struct{}
	stats engineCounters
}

func newPreadEngine(depth int) *preadEngine {
	return &preadEngine{sem: make(chan struct{}, depth)}
}

func (e *preadEngine) Name() string { return "pread" }

func (e *preadEngine) Buffer(n int) ([]byte, int) { return getAligned(n), 0 }

func (e *preadEngine) ReleaseBuffer(b []byte, _ int) { putAligned(b) }

func (e *preadEngine) Read(reqs []*ReadReq) {
	e.stats.batches.Add(1)
	if len(reqs) == 1 {
		e.one(reqs[0])
		return
	}
	var wg sync.WaitGroup
	for _, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.one(r)
		}()
	}
	wg.Wait()
}

func (e *preadEngine) one(r *ReadReq) {
	e.sem <- struct{}{}
	n, err := r.File.ReadAt(r.Buf[:r.N], r.Off)
	<-e.sem
	r.Done = n
	if errors.Is(err, io.EOF) {
		// A direct read rounds its length up to whole blocks and may run past the end of the
		// file; Done says how much arrived and the caller checks it covers the record.
		err = nil
	}
	r.Err = err
	e.stats.reads.Add(1)
	e.stats.bytes.Add(uint64(n))
	if err != nil {
		e.stats.errors.Add(1)
	}
}

func (e *preadEngine) Stats() EngineStats { return e.stats.snapshot() }

func (e *preadEngine) Close() error { return nil }
