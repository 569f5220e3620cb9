package repl

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// ErrTrimmed is returned by ReadAt for an offset before First: the bytes are no longer retained
// (trimmed by retention, or dropped after a failed write) and a follower asking for them needs a
// full resync.
var ErrTrimmed = errors.New("repl: offset no longer in the backlog")

// ErrBeyondEnd is returned by ReadAt for an offset past End: the offset was never in this
// history, which means the follower is confused, not merely early.
var ErrBeyondEnd = errors.New("repl: offset beyond the end of the backlog")

// ErrClosed is returned by ReadAt, Wait and Close once the backlog is closed.
var ErrClosed = errors.New("repl: backlog closed")

// segmentSuffix ends the name of every segment file; Open removes only files with it, so a
// backlog directory configured by mistake onto a data directory cannot delete the data.
const segmentSuffix = ".blog"

// Geometry limits. Segments are a quarter of the retention so that at most a quarter more than
// repl-backlog-size sits on disk; smaller segments would mean more files and more removals,
// larger ones more disk beyond the configured size. Buffers are the unit of background writes:
// 1 MiB makes one write() per MiB of stream, and at most maxPendingBuffers of them (plus the
// tail being filled) bound the backlog's memory at 5 MiB whatever the write rate.
const (
	minSegmentSize    = 64 << 10
	maxSegmentSize    = 64 << 20
	maxBufferSize     = 1 << 20
	maxPendingBuffers = 4
)

// geometry is the backlog's unit sizes; tests shrink them to reach segment and buffer edges
// with little data.
type geometry struct {
	segSize    int64 // bytes per segment file; a multiple of bufSize
	bufSize    int   // bytes per in-memory buffer
	maxPending int   // sealed buffers not yet written before Append waits
}

// Backlog is the primary's replication backlog: the most recent bytes of the replication stream
// (at least size of them), in memory while they wait to be written and in segment files after,
// so followers reconnecting with PSYNC can resume from an offset it still retains.
//
// Append is called by one writer at a time (under the caller's mutex); ReadAt, Wait, First,
// End and Stats may be called from any goroutine, concurrently with Append and each other.
type Backlog struct {
	fs    vfs.FS
	dir   string
	size  int64 // bytes before End to retain at least (repl-backlog-size)
	start int64 // offset of the first byte ever appended; segments are aligned to it
	geometry

	kick    chan struct{} // capacity 1: wakes the writer when a buffer is sealed
	done    chan struct{} // closed by Close: the writer stops
	stopped chan struct{} // closed by the writer when it has stopped

	mu sync.Mutex
	// cond is signalled (Broadcast) on mu when the writer pops a buffer or goes idle, and by
	// Close: Append waits on it for room, waitIdle for the writer.
	cond sync.Cond
	// end is the offset just past the last appended byte.
	end int64
	// first is the oldest retained offset.
	// Invariant: start <= first <= end, and first only grows.
	// Invariant: without write errors, end-size < first+segSize, i.e. at most one segment more
	// than size is retained, and first is start or a segment boundary with end-first >= size.
	first int64
	// nextTrim is the segment boundary first advances to once end-size reaches it.
	// Invariant: nextTrim > first, nextTrim-start is a multiple of segSize.
	nextTrim int64
	// mem holds the buffers not yet written, oldest first; all but the last are sealed (full),
	// and they cover [mem[0].start, end) without gaps. The writer pops them from the front.
	mem []*buffer
	// sealed counts the sealed buffers in mem. Invariant: sealed <= maxPending.
	sealed int
	// free holds popped buffers no reader holds, for reuse by the next tail.
	free []*buffer
	// segs holds the segment files that may hold retained bytes, by base offset. Together with
	// mem they cover [first, end): segs cover [first, mem[0].start) (or up to end if mem is
	// empty).
	segs []*segment
	// notify is closed by the next Append and replaced by the next Wait that finds none; nil
	// when nobody waits, so that Append allocates nothing.
	notify chan struct{}
	// writerIdle is set by the writer when it has nothing to write and has removed the trimmed
	// segments; for tests (waitIdle).
	writerIdle bool
	closed     bool

	writeErrors int64 // failed segment writes (and creations)
	lostBytes   int64 // bytes of buffers whose write failed
	lastErr     error // the last write, create, close or remove error
}

// buffer is one in-memory piece of the stream.
type buffer struct {
	start int64
	// data holds the bytes; len grows by Append up to cap (bufSize), then the buffer is sealed.
	// Bytes below len never change until the buffer is recycled, so readers copy them outside
	// the lock while they hold a reference (readers).
	data    []byte
	sealed  bool
	popped  bool // removed from mem; recycled once readers is 0
	readers int  // readers copying from data; protected by Backlog.mu
}

func (t *buffer) endOff() int64 { return t.start + int64(len(t.data)) }

// segment is one segment file. Its byte 0 is stream offset base; it is named by base.
type segment struct {
	base int64
	// end is the offset just past the last byte written successfully; reads never go past
	// it, so the tail of a failed (short) write is never served. Protected by Backlog.mu.
	end  int64
	name string
	f    vfs.File
	refs int  // ReadAt calls reading from f; protected by Backlog.mu
	dead bool // trimmed: removed from segs, closed and removed once refs is 0
}

// OpenBacklog returns an empty backlog whose first byte will be at offset start, retaining at
// least size bytes before End, with its segment files in dir.
//
// dir is created if needed, and segment files left in it by an earlier process are removed: a
// backlog is never reused across processes, because a restarted primary starts a new history.
// Other files in dir are left alone.
func OpenBacklog(fsys vfs.FS, dir string, size, start int64) (*Backlog, error) {
	if size <= 0 {
		return nil, fmt.Errorf("repl: backlog size %d must be positive", size)
	}
	seg := max(min(size/4, maxSegmentSize), minSegmentSize)
	buf := min(int64(maxBufferSize), seg)
	seg = seg / buf * buf
	return openBacklog(fsys, dir, size, start, geometry{segSize: seg, bufSize: int(buf), maxPending: maxPendingBuffers})
}

func openBacklog(fsys vfs.FS, dir string, size, start int64, g geometry) (*Backlog, error) {
	switch {
	case size <= 0:
		return nil, fmt.Errorf("repl: backlog size %d must be positive", size)
	case start < 0:
		return nil, fmt.Errorf("repl: backlog start offset %d must not be negative", start)
	case g.bufSize <= 0 || g.segSize <= 0 || g.segSize%int64(g.bufSize) != 0 || g.maxPending <= 0:
		return nil, fmt.Errorf("repl: backlog segment size %d must be a multiple of buffer size %d", g.segSize, g.bufSize)
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("repl: create backlog directory: %w", err)
	}
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("repl: list backlog directory: %w", err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, segmentSuffix) {
			if err := fsys.Remove(filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("repl: remove old backlog segment: %w", err)
			}
		}
	}
	b := &Backlog{
		fs:       fsys,
		dir:      dir,
		size:     size,
		start:    start,
		geometry: g,
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		stopped:  make(chan struct{}),
		end:      start,
		first:    start,
		nextTrim: start + g.segSize,
	}
	b.cond.L = &b.mu
	go b.run()
	return b, nil
}

// Append adds p at the end of the stream and returns the offset just past it.
//
// It copies p into an in-memory buffer; the background writer puts full buffers into segment
// files, so Append makes no system call. If the writer has fallen behind by maxPending full
// buffers (the disk is slower than the write rate), Append waits for it, holding the caller's
// mutex: the alternative, dropping unwritten bytes, would turn a slow disk into full resyncs of
// every follower. Appends of any size work; a large one fills buffers one after another.
//
// Append must not be called concurrently with itself or with Close, nor after Close (it panics).
func (b *Backlog) Append(p []byte) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		panic("repl: Append on a closed backlog")
	}
	for len(p) > 0 {
		t := b.tailLocked()
		n := copy(t.data[len(t.data):cap(t.data)], p)
		t.data = t.data[:len(t.data)+n]
		b.end += int64(n)
		p = p[n:]
		if len(t.data) == cap(t.data) {
			t.sealed = true
			b.sealed++
			b.kickLocked()
		}
		// Trimmed here, by arithmetic, rather than by the writer: First then never lags End by
		// more than size+segSize however far behind the writer is, and the writer skips
		// buffers trimmed before it reached them. The writer is woken to remove the segment.
		if b.end-b.size >= b.nextTrim {
			for b.end-b.size >= b.nextTrim {
				b.first = b.nextTrim
				b.nextTrim += b.segSize
			}
			b.kickLocked()
		}
	}
	if b.notify != nil {
		close(b.notify)
		b.notify = nil
	}
	return b.end
}

// kickLocked wakes the writer. It happens once per buffer or segment, not per Append: waking a
// parked goroutine may cost a system call.
func (b *Backlog) kickLocked() {
	b.writerIdle = false
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// tailLocked returns the buffer Append fills, with room in it, starting a new one (and waiting
// for the writer if maxPending buffers are sealed) when the last is full. b.mu is held.
func (b *Backlog) tailLocked() *buffer {
	if n := len(b.mem); n > 0 && !b.mem[n-1].sealed {
		return b.mem[n-1]
	}
	for b.sealed >= b.maxPending {
		if b.closed {
			panic("repl: Append on a closed backlog")
		}
		b.cond.Wait()
	}
	var t *buffer
	if n := len(b.free); n > 0 {
		t = b.free[n-1]
		b.free = b.free[:n-1]
		*t = buffer{data: t.data[:0]}
	} else {
		t = &buffer{data: make([]byte, 0, b.bufSize)}
	}
	t.start = b.end
	b.mem = append(b.mem, t)
	return t
}

// popLocked removes mem[0], which the writer has written (or dropped), and wakes Append.
func (b *Backlog) popLocked() {
	t := b.mem[0]
	copy(b.mem, b.mem[1:])
	b.mem[len(b.mem)-1] = nil
	b.mem = b.mem[:len(b.mem)-1]
	if t.sealed {
		b.sealed--
	}
	t.popped = true
	b.recycleLocked(t)
	b.cond.Broadcast()
}

// recycleLocked keeps t for reuse if no reader holds it, which saves allocating (and zeroing)
// 1 MiB per MiB of stream. The free list holds at most maxPending+1 buffers, as many as mem
// can, so the backlog's buffers never number more than that in all.
func (b *Backlog) recycleLocked(t *buffer) {
	if t.popped && t.readers == 0 && len(b.free) <= b.maxPending {
		b.free = append(b.free, t)
	}
}

// First returns the oldest retained offset.
func (b *Backlog) First() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.first
}

// End returns the offset just past the last appended byte.
func (b *Backlog) End() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.end
}

// Err returns the last error of the background writer (a failed segment write, creation,
// close or removal), or nil. It stays set after the disk recovers: the bytes it cost are gone.
func (b *Backlog) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastErr
}

// Wait blocks until End() > off, ctx is done (it returns ctx.Err()) or the backlog is closed
// (ErrClosed). A follower's sender calls it when it has read everything up to End.
func (b *Backlog) Wait(ctx context.Context, off int64) error {
	b.mu.Lock()
	for {
		if b.closed {
			b.mu.Unlock()
			return ErrClosed
		}
		if b.end > off {
			b.mu.Unlock()
			return nil
		}
		if b.notify == nil {
			b.notify = make(chan struct{})
		}
		ch := b.notify
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		b.mu.Lock()
	}
}

// ReadAt reads retained bytes starting at offset off into p. It returns as many as exist, up to
// len(p): n < len(p) with a nil error means End was reached, and n == 0 with a nil error that
// off == End. An offset before First gives ErrTrimmed, one past End ErrBeyondEnd.
//
// Bytes still in memory are copied from there, older ones read from the segment files. A
// segment trimmed while a read is in flight stays open until the read ends, so the read gets
// the appended bytes; if First passes the rest of the range meanwhile, ReadAt returns the bytes
// it has.
func (b *Backlog) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		k, err := b.readPiece(p[n:], off+int64(n))
		n += k
		if err != nil {
			if n > 0 && errors.Is(err, ErrTrimmed) {
				err = nil
			}
			return n, err
		}
		if k == 0 {
			break
		}
	}
	return n, nil
}

// readPiece reads from the one buffer or segment holding off.
func (b *Backlog) readPiece(p []byte, off int64) (int, error) {
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		return 0, ErrClosed
	case off < b.first:
		first := b.first
		b.mu.Unlock()
		return 0, fmt.Errorf("%w: offset %d, first retained %d", ErrTrimmed, off, first)
	case off > b.end:
		end := b.end
		b.mu.Unlock()
		return 0, fmt.Errorf("%w: offset %d, end %d", ErrBeyondEnd, off, end)
	case off == b.end:
		b.mu.Unlock()
		return 0, nil
	}
	if len(b.mem) > 0 && off >= b.mem[0].start {
		// All buffers but the last are full, so the index is arithmetic.
		t := b.mem[(off-b.mem[0].start)/int64(b.bufSize)]
		src := t.data[off-t.start:]
		t.readers++
		b.mu.Unlock()
		n := copy(p, src)
		b.mu.Lock()
		t.readers--
		b.recycleLocked(t)
		b.mu.Unlock()
		return n, nil
	}
	i := sort.Search(len(b.segs), func(i int) bool { return b.segs[i].base > off }) - 1
	if i < 0 || off >= b.segs[i].end {
		b.mu.Unlock()
		return 0, fmt.Errorf("repl: internal error: offset %d is retained but neither in memory nor on disk", off)
	}
	s := b.segs[i]
	k := min(int64(len(p)), s.end-off)
	s.refs++
	b.mu.Unlock()
	n, err := s.f.ReadAt(p[:k], off-s.base)
	if n == int(k) {
		err = nil // io.EOF at the end of the file
	}
	b.mu.Lock()
	s.refs--
	last := s.dead && s.refs == 0
	b.mu.Unlock()
	if last {
		b.noteErr(b.removeSegments([]*segment{s}))
	}
	if err != nil {
		return n, fmt.Errorf("repl: read backlog segment %s: %w", s.name, err)
	}
	return n, nil
}

// Stats describes the backlog for INFO's repl_backlog_* fields and for metrics.
type Stats struct {
	First int64 // oldest retained offset (repl_backlog_first_byte_offset)
	End   int64 // offset just past the last byte (master_repl_offset)
	// MemBytes and DiskBytes are the retained bytes in memory and in segment files; they add up
	// to End-First (repl_backlog_histlen).
	MemBytes  int64
	DiskBytes int64
	Segments  int   // segment files holding retained bytes
	Size      int64 // the configured retention (repl_backlog_size)
	// WriteErrors counts failed segment writes; LostBytes the bytes they dropped, which moved
	// First past them.
	WriteErrors int64
	LostBytes   int64
	Err         error // as Err
}

// Stats returns the backlog's current figures.
func (b *Backlog) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := Stats{
		First:       b.first,
		End:         b.end,
		Size:        b.size,
		WriteErrors: b.writeErrors,
		LostBytes:   b.lostBytes,
		Err:         b.lastErr,
	}
	for _, t := range b.mem {
		st.MemBytes += max(0, t.endOff()-max(t.start, b.first))
	}
	for _, s := range b.segs {
		if d := s.end - max(s.base, b.first); d > 0 {
			st.DiskBytes += d
			st.Segments++
		}
	}
	return st
}

// Close stops the writer and closes and removes the segment files. A read in flight finishes
// with the bytes it asked for; its segment is removed when it ends. Close must not be called
// concurrently with Append.
func (b *Backlog) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	b.closed = true
	if b.notify != nil {
		close(b.notify)
		b.notify = nil
	}
	b.cond.Broadcast()
	b.mu.Unlock()
	close(b.done)
	<-b.stopped

	b.mu.Lock()
	var idle []*segment
	for _, s := range b.segs {
		s.dead = true
		if s.refs == 0 {
			idle = append(idle, s)
		}
	}
	b.segs = nil
	b.mem, b.free = nil, nil
	b.mu.Unlock()
	return b.removeSegments(idle)
}

// run is the background writer: it writes sealed buffers to segment files in order and
// removes the segments retention has trimmed.
func (b *Backlog) run() {
	defer close(b.stopped)
	var cur *segment // the segment being appended to; owned by run
	for {
		b.mu.Lock()
		for len(b.mem) > 0 && b.mem[0].sealed && b.mem[0].endOff() <= b.first {
			b.popLocked() // trimmed before it was written: nobody can ask for it
		}
		var buf *buffer
		if len(b.mem) > 0 && b.mem[0].sealed {
			buf = b.mem[0]
		}
		if cur != nil && cur.end <= b.first {
			cur = nil // everything in it is trimmed; the next buffer starts a new file
		}
		dead := b.reapLocked(cur)
		b.mu.Unlock()
		b.noteErr(b.removeSegments(dead))

		if buf == nil {
			b.mu.Lock()
			// A kick still in the channel means an Append sealed or trimmed since the top of
			// this loop: not idle yet.
			if b.sealed == 0 && len(b.kick) == 0 {
				b.writerIdle = true
				b.cond.Broadcast()
			}
			b.mu.Unlock()
			select {
			case <-b.kick:
			case <-b.done:
				return
			}
			b.mu.Lock()
			b.writerIdle = false
			b.mu.Unlock()
			continue
		}
		select {
		case <-b.done:
			return
		default:
		}
		cur = b.write(cur, buf)
	}
}

// write writes buf, which is mem[0] and sealed, after cur (or to a new segment file) and pops
// it. It returns the segment to append the next buffer to, nil after a failure.
//
// A failed write (or creation) drops buf's bytes: First moves past them, so no reader is told
// they are retained, and cur is abandoned, because a short write left its file position where
// the next bytes do not belong. Rejected: retrying, which would hold the write path (through
// Append's wait) hostage to a full disk.
func (b *Backlog) write(cur *segment, buf *buffer) *segment {
	var err error
	created := false
	// A new file at each segment boundary, and whenever buf does not follow cur's last byte.
	// The latter cannot happen today (run drops cur once it is trimmed, write after a failure)
	// but is checked so that no gap in the stream can ever put bytes at the wrong file offset.
	if cur == nil || cur.end != buf.start || (buf.start-b.start)%b.segSize == 0 {
		name := filepath.Join(b.dir, fmt.Sprintf("%020d%s", buf.start, segmentSuffix))
		var f vfs.File
		f, err = b.fs.Create(name)
		if err != nil {
			err = fmt.Errorf("repl: create backlog segment: %w", err)
			cur = nil
		} else {
			cur = &segment{base: buf.start, end: buf.start, name: name, f: f}
			created = true
		}
	}
	if err == nil {
		if _, werr := cur.f.Write(buf.data); werr != nil {
			err = fmt.Errorf("repl: write backlog segment %s: %w", cur.name, werr)
		}
	}

	b.mu.Lock()
	if err == nil {
		cur.end = buf.endOff()
		if created {
			b.segs = append(b.segs, cur)
		}
	} else {
		b.writeErrors++
		b.lostBytes += int64(len(buf.data))
		b.lastErr = err
		if e := buf.endOff(); e > b.first {
			b.first = e
			for b.nextTrim <= b.first {
				b.nextTrim += b.segSize
			}
		}
	}
	b.popLocked()
	b.mu.Unlock()
	if err != nil {
		if created {
			b.noteErr(b.removeSegments([]*segment{cur})) // never in segs: nobody reads it
		}
		return nil
	}
	return cur
}

// reapLocked takes the segments whose bytes are all trimmed out of segs, except keep, and
// returns those no reader holds; the others are removed by their last reader.
func (b *Backlog) reapLocked(keep *segment) []*segment {
	var idle []*segment
	kept := b.segs[:0]
	for _, s := range b.segs {
		if s != keep && s.end <= b.first {
			s.dead = true
			if s.refs == 0 {
				idle = append(idle, s)
			}
			continue
		}
		kept = append(kept, s)
	}
	clear(b.segs[len(kept):])
	b.segs = kept
	return idle
}

// removeSegments closes and removes dead segments. It returns the failures, which the writer
// records (Err): a segment left behind is disk space the backlog no longer accounts for.
func (b *Backlog) removeSegments(segs []*segment) error {
	var errs []error
	for _, s := range segs {
		err := s.f.Close()
		if rerr := b.fs.Remove(s.name); err == nil {
			err = rerr
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("repl: remove backlog segment %s: %w", s.name, err))
		}
	}
	return errors.Join(errs...)
}

// noteErr records err, if not nil, as the last error (Err).
func (b *Backlog) noteErr(err error) {
	if err == nil {
		return
	}
	b.mu.Lock()
	b.lastErr = err
	b.mu.Unlock()
}

// waitIdle waits until the writer has written every sealed buffer and removed the trimmed
// segments. For tests: it returns at once if the backlog is closed.
func (b *Backlog) waitIdle() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.closed && !(b.sealed == 0 && b.writerIdle) {
		b.cond.Wait()
	}
}
