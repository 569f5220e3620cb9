//go:build linux

package vlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring engine, written against the kernel ABI with golang.org/x/sys/unix (no io_uring
// module is available to us).
//
// Submission: a goroutine with reads to do takes the submit lock, fills one SQE per request
// (IORING_OP_READ_FIXED into a registered buffer when it has one, IORING_OP_READ otherwise),
// publishes the SQ tail and releases the lock. Whoever finds no io_uring_enter in progress calls
// it for everything queued so far, its own requests and any that other goroutines queued while
// it was in the system call, so concurrent GETs share submissions (like group commit).
//
// Completion: the ring signals an eventfd, which a reaper goroutine reads through Go's network
// poller, so waiting for the disk never holds a scheduler P (a blocking pread does, and with 2
// Ps that starves every other connection until sysmon steals the P back, up to 10 ms later).
// The reaper drains every CQE available per wake-up, matches each to its request by the slot
// index in user_data, and wakes each submitting goroutine once, when its whole batch is done.
//
// Rejected: SQPOLL (a kernel thread spinning on the SQ costs a whole core, and there are two);
// one ring per core (one ring already saturates this disk; the submit lock is held for
// nanoseconds).

const (
	sysIOUringSetup    = 425
	sysIOUringEnter    = 426
	sysIOUringRegister = 427

	ioringOffSQRing = 0
	ioringOffCQRing = 0x8000000
	ioringOffSQEs   = 0x10000000

	ioringFeatSingleMmap = 1 << 0

	ioringOpReadFixed = 4
	ioringOpRead      = 22

	ioringEnterGetEvents = 1 << 0

	ioringRegisterBuffers = 0
	ioringRegisterEventfd = 4

	sqeSize = 64
	cqeSize = 16

	// Registered buffers: fixedSlots buffers of fixedSlotSize bytes, enough for any record
	// up to a few values of the typical size; larger reads use ordinary aligned buffers.
	fixedSlots    = 256
	fixedSlotSize = 16 << 10
)

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

// sqe is the 64-byte submission queue entry.
type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	rwFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	pad         uint64
}

// cqe is the 16-byte completion queue entry.
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// uringBatch is one Read call: the reaper closes done when its last request completes.
type uringBatch struct {
	left atomic.Int32
	done chan struct{}
}

type uringSlot struct {
	req   *ReadReq
	batch *uringBatch
}

// uringRings is an io_uring instance: its descriptor and the rings it shares with the kernel.
type uringRings struct {
	fd      int
	ringMem []byte
	cqMem   []byte
	sqeMem  []byte

	sqHead, sqTail, sqMask, sqArray *uint32
	cqHead, cqTail, cqMask          *uint32
	sqes                            []sqe
	cqes                            []cqe
	entries                         uint32
}

// setup creates the instance with room for depth entries (rounded up to a power of two) and maps
// its rings.
func (u *uringRings) setup(depth int) error {
	entries := uint32(1)
	for entries < uint32(depth) {
		entries <<= 1
	}
	var p uringParams
	fd, _, errno := unix.Syscall(sysIOUringSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return fmt.Errorf("vlog: io_uring_setup: %w", errno)
	}
	u.fd, u.entries = int(fd), p.sqEntries
	if err := u.mapRings(&p); err != nil {
		u.unmap()
		unix.Close(u.fd)
		return err
	}
	return nil
}

// registerEventfd makes the instance signal a new eventfd on completions and returns it.
func (u *uringRings) registerEventfd() (int, error) {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("vlog: eventfd: %w", err)
	}
	ev := int32(efd)
	if _, _, errno := unix.Syscall6(sysIOUringRegister, uintptr(u.fd), ioringRegisterEventfd, uintptr(unsafe.Pointer(&ev)), 1, 0, 0); errno != 0 {
		unix.Close(efd)
		return -1, fmt.Errorf("vlog: io_uring register eventfd: %w", errno)
	}
	return efd, nil
}

// close unmaps the rings and closes the instance.
func (u *uringRings) close() {
	unix.Close(u.fd)
	u.unmap()
}

type uringEngine struct {
	uringRings

	efd    *os.File
	closed atomic.Bool
	wg     sync.WaitGroup

	// sem bounds the requests in flight to the ring size, so the SQ never overflows and the
	// CQ (twice as large) never drops completions.
	sem chan struct{}

	mu         sync.Mutex // guards the SQ tail, slots, free, queued and submitting
	slots      []uringSlot
	free       []uint32
	queued     uint32 // SQEs published but not yet passed to io_uring_enter
	submitting bool
	// inflight counts reads the kernel accepted and the reaper has not completed. It may
	// undercount for a moment (a completion can be reaped before enter adds its count), the
	// safe side for deferring a submission to the reaper. It overcounts only while failQueued
	// completes SQEs the kernel refused, and the submitter doing that re-checks queued itself.
	inflight int

	fixedBuffers

	stats engineCounters
}

func newUringEngine(depth int) (Engine, error) {
	e := &uringEngine{}
	if err := e.setup(depth); err != nil {
		return nil, err
	}
	efd, err := e.registerEventfd()
	if err != nil {
		e.close()
		return nil, err
	}
	// A non-blocking fd handed to os.NewFile is registered with the runtime's poller.
	e.efd = os.NewFile(uintptr(efd), "io_uring-eventfd")
	e.fixed, e.fixedFree = e.registerBuffers()
	e.sem = make(chan struct{}, e.entries)
	e.slots = make([]uringSlot, e.entries)
	e.free = make([]uint32, e.entries)
	for i := range e.free {
		e.free[i] = uint32(len(e.free) - 1 - i)
	}
	e.wg.Add(1)
	go e.reap()
	return e, nil
}

func (e *uringRings) mapRings(p *uringParams) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*cqeSize)
	if p.features&ioringFeatSingleMmap != 0 {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	e.ringMem, err = unix.Mmap(e.fd, ioringOffSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("vlog: mmap io_uring sq ring: %w", err)
	}
	e.cqMem = e.ringMem
	if p.features&ioringFeatSingleMmap == 0 {
		if e.cqMem, err = unix.Mmap(e.fd, ioringOffCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			return fmt.Errorf("vlog: mmap io_uring cq ring: %w", err)
		}
	}
	if e.sqeMem, err = unix.Mmap(e.fd, ioringOffSQEs, int(p.sqEntries)*sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("vlog: mmap io_uring sqes: %w", err)
	}
	u32 := func(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	e.sqHead, e.sqTail = u32(e.ringMem, p.sqOff.head), u32(e.ringMem, p.sqOff.tail)
	e.sqMask, e.sqArray = u32(e.ringMem, p.sqOff.ringMask), u32(e.ringMem, p.sqOff.array)
	e.cqHead, e.cqTail, e.cqMask = u32(e.cqMem, p.cqOff.head), u32(e.cqMem, p.cqOff.tail), u32(e.cqMem, p.cqOff.ringMask)
	e.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&e.sqeMem[0])), p.sqEntries)
	e.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&e.cqMem[p.cqOff.cqes])), p.cqEntries)
	// The SQ index array maps ring positions to SQEs one to one.
	arr := unsafe.Slice(e.sqArray, p.sqEntries)
	for i := range arr {
		arr[i] = uint32(i)
	}
	return nil
}

func (e *uringRings) unmap() {
	if e.sqeMem != nil {
		unix.Munmap(e.sqeMem)
	}
	if e.cqMem != nil && &e.cqMem[0] != &e.ringMem[0] {
		unix.Munmap(e.cqMem)
	}
	if e.ringMem != nil {
		unix.Munmap(e.ringMem)
	}
}

// registerBuffers maps and registers fixedSlots fixed buffers and returns them with a free list.
// Failure (e.g. a low RLIMIT_MEMLOCK on old kernels) is not fatal: reads then use ordinary
// buffers (nil results).
func (u *uringRings) registerBuffers() ([]byte, chan int) {
	mem, err := unix.Mmap(-1, 0, fixedSlots*fixedSlotSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil
	}
	iov := make([]unix.Iovec, fixedSlots)
	for i := range iov {
		iov[i].Base = &mem[i*fixedSlotSize]
		iov[i].SetLen(fixedSlotSize)
	}
	_, _, errno := unix.Syscall6(sysIOUringRegister, uintptr(u.fd), ioringRegisterBuffers, uintptr(unsafe.Pointer(&iov[0])), fixedSlots, 0, 0)
	runtime.KeepAlive(iov)
	if errno != 0 {
		unix.Munmap(mem)
		return nil, nil
	}
	free := make(chan int, fixedSlots)
	for i := 0; i < fixedSlots; i++ {
		free <- i
	}
	return mem, free
}

func (e *uringEngine) Name() string { return "io_uring" }

// fixedBuffers are a ring's registered buffers, fixedSlots x fixedSlotSize, off the Go heap
// (nil when registering failed), and the free slots. Buffer and ReleaseBuffer lend them (see
// Engine).
type fixedBuffers struct {
	fixed     []byte
	fixedFree chan int
}

// Buffer hands out a registered buffer when one is free and large enough, else an aligned one
// from the pool; its second result is the slot plus one, or 0.
func (f *fixedBuffers) Buffer(n int) ([]byte, int) {
	if f.fixed != nil && n <= fixedSlotSize {
		select {
		case i := <-f.fixedFree:
			return f.fixed[i*fixedSlotSize : i*fixedSlotSize+n : (i+1)*fixedSlotSize], i + 1
		default:
		}
	}
	return getAligned(n), 0
}

// ReleaseBuffer returns a buffer from Buffer.
func (f *fixedBuffers) ReleaseBuffer(b []byte, fixed int) {
	if fixed > 0 {
		f.fixedFree <- fixed - 1
		return
	}
	putAligned(b)
}

func (e *uringEngine) Read(reqs []*ReadReq) {
	if len(reqs) == 0 {
		return
	}
	e.stats.batches.Add(1)
	if e.closed.Load() {
		for _, r := range reqs {
			r.Err = ErrClosed
		}
		return
	}
	// Files without a descriptor (in-memory file systems in tests) are read directly.
	ring := reqs[:0:0]
	for _, r := range reqs {
		fd, err := r.File.Fd()
		if err != nil {
			n, err := r.File.ReadAt(r.Buf[:r.N], r.Off)
			r.Done, r.Err = n, err
			if errors.Is(err, io.EOF) {
				r.Err = nil
			}
			e.stats.reads.Add(1)
			continue
		}
		r.fd = int(fd)
		ring = append(ring, r)
	}
	if len(ring) == 0 {
		return
	}
	b := &uringBatch{done: make(chan struct{})}
	b.left.Store(int32(len(ring)))
	deferred := false
	for _, r := range ring {
		select {
		case e.sem <- struct{}{}:
		default:
			// The ring is full: submit what is queued (ours included) before waiting for
			// room, or a batch larger than the ring would wait for itself.
			e.submit()
			e.sem <- struct{}{}
		}
		e.mu.Lock()
		slot := e.free[len(e.free)-1]
		e.free = e.free[:len(e.free)-1]
		e.slots[slot] = uringSlot{req: r, batch: b}
		e.prepLocked(slot, r)
		// Leave the submission to the reaper when enough reads are in flight (piggybackMin);
		// decided under the lock the last SQE was queued under.
		deferred = e.inflight >= piggybackMin
		e.mu.Unlock()
	}
	if deferred {
		e.stats.deferred.Add(1)
	} else {
		e.submit()
	}
	<-b.done
}

// piggybackMin is how many reads must be in flight for a new one to leave its submission to the
// reaper: at least one of them completes soon, and the reaper, woken by it, passes every SQE
// queued by then to the kernel in one io_uring_enter. Under load this turns one system call
// (and one virtio notification) per GET into one per completion wake-up; with fewer reads in
// flight the wait for the next completion could be a whole disk latency, so the reader submits.
const piggybackMin = 4

// prepLocked fills the next SQE for r and publishes it.
func (e *uringEngine) prepLocked(slot uint32, r *ReadReq) {
	fixed := r.Fixed > 0 && e.fixed != nil
	e.pushRead(slot, r, int32(r.fd), fixed)
	if fixed {
		e.stats.fixedReads.Add(1)
	}
	e.queued++
}

// pushRead writes the SQE of read q (on fd, its user_data slot) at the SQ tail and publishes
// it; with fixed it reads into registered buffer q.Fixed-1. The caller owns the SQ tail.
func (u *uringRings) pushRead(slot uint32, q *ReadReq, fd int32, fixed bool) {
	tail := atomic.LoadUint32(u.sqTail)
	s := &u.sqes[tail&*u.sqMask]
	*s = sqe{off: uint64(q.Off), len: uint32(q.N), userData: uint64(slot), opcode: ioringOpRead, fd: fd}
	if q.N > 0 {
		s.addr = uint64(uintptr(unsafe.Pointer(&q.Buf[0])))
	}
	if fixed {
		s.opcode = ioringOpReadFixed
		s.bufIndex = uint16(q.Fixed - 1)
	}
	atomic.StoreUint32(u.sqTail, tail+1)
}

// submit passes every queued SQE to the kernel; a goroutine that finds another already in
// io_uring_enter leaves its SQEs for that one to pick up on its next round.
func (e *uringEngine) submit() {
	e.mu.Lock()
	if e.submitting {
		e.mu.Unlock()
		return
	}
	e.submitting = true
	for e.queued > 0 {
		n := e.queued
		e.queued = 0
		e.mu.Unlock()
		e.enter(n)
		e.mu.Lock()
	}
	e.submitting = false
	e.mu.Unlock()
}

func (e *uringEngine) enter(n uint32) {
	for n > 0 {
		e.stats.enters.Add(1)
		done, _, errno := unix.Syscall6(sysIOUringEnter, uintptr(e.fd), uintptr(n), 0, 0, 0, 0)
		switch {
		case errno == unix.EINTR || errno == unix.EAGAIN || errno == unix.EBUSY:
			runtime.Gosched()
			continue
		case errno != 0:
			// The kernel consumed none of them: fail them all so no caller waits forever.
			e.failQueued(n, errno)
			return
		}
		n -= uint32(done)
		e.mu.Lock()
		e.inflight += int(done)
		e.mu.Unlock()
	}
}

// failQueued completes the n SQEs the kernel refused with err.
func (e *uringEngine) failQueued(n uint32, err error) {
	e.mu.Lock()
	head := atomic.LoadUint32(e.sqHead)
	var done []uint32
	for i := uint32(0); i < n; i++ {
		s := &e.sqes[(head+i)&*e.sqMask]
		done = append(done, uint32(s.userData))
	}
	// Give the refused entries back by moving the head as the kernel would have; complete
	// counts them out of inflight, so count them in.
	atomic.StoreUint32(e.sqHead, head+n)
	e.inflight += int(n)
	e.mu.Unlock()
	for _, slot := range done {
		e.complete(slot, -int32(err.(unix.Errno)))
	}
}

// reap waits on the eventfd through the poller and drains the completion queue.
func (e *uringEngine) reap() {
	defer e.wg.Done()
	var buf [8]byte
	for {
		e.drain()
		if _, err := e.efd.Read(buf[:]); err != nil {
			if e.closed.Load() || errors.Is(err, os.ErrClosed) {
				e.drain()
				return
			}
			continue
		}
		e.stats.wakeups.Add(1)
	}
}

// drain completes every CQE available, then submits what readers left queued for it (see
// piggybackMin): a deferred SQE waits only for a drain that completes a read, and there was one
// in flight when it was deferred.
func (e *uringEngine) drain() {
	for {
		head := atomic.LoadUint32(e.cqHead)
		tail := atomic.LoadUint32(e.cqTail)
		if head == tail {
			e.submit()
			return
		}
		// Consume the entries before completing them: complete frees a semaphore slot, and
		// the CQ must have room for every read that slot lets in.
		var batch [64]cqe
		n := 0
		for ; head != tail && n < len(batch); head++ {
			batch[n] = e.cqes[head&*e.cqMask]
			n++
		}
		atomic.StoreUint32(e.cqHead, head)
		for _, c := range batch[:n] {
			e.complete(uint32(c.userData), c.res)
		}
	}
}

func (e *uringEngine) complete(slot uint32, res int32) {
	e.mu.Lock()
	s := e.slots[slot]
	e.slots[slot] = uringSlot{}
	e.free = append(e.free, slot)
	e.inflight--
	e.mu.Unlock()
	<-e.sem
	r := s.req
	if res < 0 {
		r.Err = fmt.Errorf("vlog: io_uring read: %w", unix.Errno(-res))
		e.stats.errors.Add(1)
	} else {
		r.Done = int(res)
		e.stats.bytes.Add(uint64(res))
	}
	e.stats.reads.Add(1)
	if s.batch.left.Add(-1) == 0 {
		close(s.batch.done)
	}
}

func (e *uringEngine) Stats() EngineStats { return e.stats.snapshot() }

func (e *uringEngine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	// Wait for reads in flight: take every semaphore slot.
	for i := 0; i < cap(e.sem); i++ {
		e.sem <- struct{}{}
	}
	e.efd.Close()
	e.wg.Wait()
	e.close()
	if e.fixed != nil {
		unix.Munmap(e.fixed)
	}
	return nil
}
