//go:build linux

package vlog

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Ring is an io_uring instance owned by one event loop. Unlike the shared engine it has no
// goroutine and no lock: the loop queues reads (Start), submits them with the rest of its round
// in one io_uring_enter, and reaps completions from the completion ring in memory (Poll) without
// a system call while it is busy; when it would sleep it waits for EventFD in its epoll set. It is
// not safe for concurrent use. As an Engine (for PrepareReadOn) it lends its registered buffers;
// its Read reads synchronously, for callers that cannot wait for the loop.
type Ring struct {
	uringRings
	efd int
	fixedBuffers
	// slots holds the request of each SQE in flight, by user_data; free lists the others.
	slots    []*ReadReq
	free     []uint32
	queued   uint32 // SQEs written and not yet passed to io_uring_enter
	inflight int
	early    []uint32 // slots of requests completed without the kernel (Start, failQueued)
	stats    engineCounters
	closed   bool
}

// NewRing returns a ring with room for depth reads in flight.
func NewRing(depth int) (*Ring, error) {
	r := &Ring{}
	if err := r.setup(depth); err != nil {
		return nil, err
	}
	efd, err := r.registerEventfd()
	if err != nil {
		r.close()
		return nil, err
	}
	r.efd = efd
	r.fixed, r.fixedFree = r.registerBuffers()
	r.slots = make([]*ReadReq, r.entries)
	r.free = make([]uint32, r.entries)
	for i := range r.free {
		r.free[i] = uint32(len(r.free) - 1 - i)
	}
	return r, nil
}

// EventFD is signalled when reads complete: an event loop waits for it in its epoll set.
func (r *Ring) EventFD() int { return r.efd }

// Room is how many more reads Start can take now.
func (r *Ring) Room() int { return len(r.free) }

// Inflight is how many reads were started and not yet completed by Poll.
func (r *Ring) Inflight() int { return r.inflight }

// Start queues reqs (at most Room of them); Submit passes them to the kernel. A request whose
// file has no descriptor (an in-memory file system) is read at once and completes at the next
// Poll like the others. Each request's Done and Err are set, and done is called with it, when it
// completes.
func (r *Ring) Start(reqs []*ReadReq) {
	for _, q := range reqs {
		r.StartOne(q)
	}
}

// StartOne is Start of one request.
func (r *Ring) StartOne(q *ReadReq) {
	{
		q.completed = false
		slot := r.free[len(r.free)-1]
		r.free = r.free[:len(r.free)-1]
		r.slots[slot] = q
		r.inflight++
		fd, err := q.File.Fd()
		if err != nil {
			n, err := q.File.ReadAt(q.Buf[:q.N], q.Off)
			if errors.Is(err, io.EOF) {
				err = nil
			}
			q.Done, q.Err, q.completed = n, err, true
			r.stats.reads.Add(1)
			r.early = append(r.early, slot)
			return
		}
		fixed := q.Fixed > 0 && r.fixed != nil
		r.pushRead(slot, q, int32(fd), fixed)
		if fixed {
			r.stats.fixedReads.Add(1)
		}
		r.queued++
	}
}

// Submit passes the queued reads to the kernel in one system call.
func (r *Ring) Submit() {
	for r.queued > 0 {
		r.stats.enters.Add(1)
		r.stats.batches.Add(1)
		done, _, errno := unix.Syscall6(sysIOUringEnter, uintptr(r.fd), uintptr(r.queued), 0, 0, 0, 0)
		switch {
		case errno == unix.EINTR || errno == unix.EAGAIN || errno == unix.EBUSY:
			continue
		case errno != 0:
			r.failQueued(errno)
			return
		}
		r.queued -= uint32(done)
	}
}

// failQueued completes the queued SQEs the kernel refused with err.
func (r *Ring) failQueued(err unix.Errno) {
	head := atomic.LoadUint32(r.sqHead)
	for i := uint32(0); i < r.queued; i++ {
		slot := uint32(r.sqes[(head+i)&*r.sqMask].userData)
		q := r.slots[slot]
		q.Err, q.completed = fmt.Errorf("vlog: io_uring read: %w", err), true
		r.early = append(r.early, slot)
	}
	atomic.StoreUint32(r.sqHead, head+r.queued)
	r.queued = 0
}

// Poll completes the reads the kernel finished (reading the completion ring, no system call) and
// those completed at Start, and returns how many it completed.
func (r *Ring) Poll() int {
	n := 0
	head, tail := atomic.LoadUint32(r.cqHead), atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := r.cqes[head&*r.cqMask]
		q := r.slots[c.userData]
		if c.res < 0 {
			q.Err = fmt.Errorf("vlog: io_uring read: %w", unix.Errno(-c.res))
			r.stats.errors.Add(1)
		} else {
			q.Done = int(c.res)
			r.stats.bytes.Add(uint64(c.res))
		}
		q.completed = true
		r.stats.reads.Add(1)
		r.release(uint32(c.userData))
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	for _, slot := range r.early {
		r.release(slot)
		n++
	}
	r.early = r.early[:0]
	return n
}

func (r *Ring) release(slot uint32) {
	r.slots[slot] = nil
	r.free = append(r.free, slot)
	r.inflight--
}

// Wait blocks until at least one read in flight completes (io_uring_enter with GETEVENTS), for a
// caller with nothing else to do.
func (r *Ring) Wait() {
	if r.inflight == 0 {
		return
	}
	for {
		_, _, errno := unix.Syscall6(sysIOUringEnter, uintptr(r.fd), 0, 1, ioringEnterGetEvents, 0, 0)
		if errno != unix.EINTR {
			return
		}
	}
}

// Read reads reqs synchronously: Start, Submit, and Wait and Poll until they complete. It is
// not safe to use while the ring's owner has reads of its own in flight.
func (r *Ring) Read(reqs []*ReadReq) {
	for start := 0; start < len(reqs); {
		n := min(len(reqs)-start, r.Room())
		r.Start(reqs[start : start+n])
		r.Submit()
		for _, q := range reqs[start : start+n] {
			for !q.completed {
				r.Poll()
				if !q.completed {
					r.Wait()
				}
			}
		}
		start += n
	}
}

func (r *Ring) Name() string       { return "io_uring (event loop)" }
func (r *Ring) Stats() EngineStats { return r.stats.snapshot() }

// Close releases the ring. Reads in flight must have completed.
func (r *Ring) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	unix.Close(r.efd)
	r.close()
	if r.fixed != nil {
		unix.Munmap(r.fixed)
	}
	return nil
}
