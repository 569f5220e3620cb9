package vlog

import (
	"fmt"
	"sync"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// Read is one record read, prepared by Log.PrepareRead and completed by Submit. After Submit,
// Data holds exactly the record's bytes (or Err is set). Release returns its buffer.
type Read struct {
	Data []byte
	Err  error

	req  ReadReq
	seg  *segment
	skip int
	n    int
	buf  []byte // pooled buffer for the disk read, or nil
	// aligned says buf came from engine.Buffer (the segment is read with O_DIRECT).
	aligned bool
	engine  Engine
	fixed   int
	mem     []byte // copy of an in-memory record
	// cache, when set, receives the record once the disk read completes, under ckey.
	cache *Cache
	ckey  cacheKey
}

// PrepareRead sets r up to read the n-byte record at loc. A record still in memory (not yet
// synced) or in the value cache is copied now and needs no I/O; otherwise the segment is pinned
// until Release. Records in memory are never cached: they are there already.
func (l *Log) PrepareRead(r *Read, loc Loc, n int) error { return l.prepareRead(r, loc, n, true) }

// PrepareReadNoFill is PrepareRead for a bulk read, such as every chunk of a large value: a
// cached copy is used, but a record read from disk is not added to the value cache, where a
// single GET of a 100 MB value would push out every hot record.
func (l *Log) PrepareReadNoFill(r *Read, loc Loc, n int) error {
	return l.prepareRead(r, loc, n, false)
}

// PrepareReadOn is PrepareRead for a read that engine e will do (its buffers come from e): an
// event loop's Ring.
func (l *Log) PrepareReadOn(r *Read, loc Loc, n int, e Engine) error {
	return l.prepareReadOn(r, loc, n, true, e)
}

func (l *Log) prepareRead(r *Read, loc Loc, n int, fill bool) error {
	return l.prepareReadOn(r, loc, n, fill, l.opts.Engine)
}

func (l *Log) prepareReadOn(r *Read, loc Loc, n int, fill bool, eng Engine) error {
	*r = Read{n: n}
	l.mu.Lock()
	if o := l.openOf(loc.Seg); o != nil && int64(loc.Off) >= o.tailOff {
		start := int64(loc.Off) - o.tailOff
		if start+int64(n) > int64(len(o.tail)) {
			l.mu.Unlock()
			return fmt.Errorf("%w: record at %d:%d beyond the log end", ErrCorrupt, loc.Seg, loc.Off)
		}
		r.mem = append(getPlain(n), o.tail[start:start+int64(n)]...)
		r.Data = r.mem
		l.mu.Unlock()
		return nil
	}
	seg := l.segs[loc.Seg]
	if seg == nil {
		// Dropped, but still readable while a reader or a pin holds it.
		if seg = l.dropped[loc.Seg]; seg == nil || !seg.tryAcquire() {
			l.mu.Unlock()
			return fmt.Errorf("%w: segment %d of shard log %s", ErrSegmentGone, loc.Seg, l.opts.Dir)
		}
	} else {
		seg.acquire()
	}
	l.mu.Unlock()
	if c := l.opts.Cache; c != nil {
		k := cacheKey{log: l.cacheID, seg: loc.Seg, off: loc.Off}
		if b, ok := c.get(k, n); ok {
			seg.releaseRead()
			r.mem, r.Data = b, b
			return nil
		}
		if fill {
			r.cache, r.ckey = c, k
		}
	}
	r.seg = seg
	off := int64(loc.Off)
	if seg.direct {
		start := off &^ (seg.align - 1)
		end := (off + int64(n) + seg.align - 1) &^ (seg.align - 1)
		r.engine = eng
		r.buf, r.fixed = r.engine.Buffer(int(end - start))
		r.aligned = true
		r.skip = int(off - start)
		r.req = ReadReq{File: seg.rf, Off: start, Buf: r.buf, N: int(end - start), Fixed: r.fixed}
	} else {
		r.buf = getPlain(n)[:n]
		r.req = ReadReq{File: seg.rf, Off: off, Buf: r.buf, N: n}
	}
	return nil
}

// Submit completes prepared reads with one engine batch.
func Submit(e Engine, reads []*Read) {
	pending := false
	for _, r := range reads {
		pending = pending || r.Data == nil && r.Err == nil && r.seg != nil
	}
	if !pending {
		return // all served from memory; return before one (below) is heap-allocated
	}
	var reqs []*ReadReq
	var one [1]*ReadReq
	for _, r := range reads {
		if r.Data == nil && r.Err == nil && r.seg != nil {
			if len(reads) == 1 {
				one[0] = &r.req
				reqs = one[:]
			} else {
				reqs = append(reqs, &r.req)
			}
		}
	}
	if len(reqs) > 0 {
		e.Read(reqs)
	}
	for _, r := range reads {
		r.Finish()
	}
}

// NeedsIO reports whether the prepared read must go to the disk (its request, Req, submitted to
// an engine): it was not served from memory or the cache, and did not fail already.
func (r *Read) NeedsIO() bool { return r.Data == nil && r.Err == nil && r.seg != nil }

// Req is the engine request of a read that NeedsIO, for a caller that submits it itself (an
// event loop's Ring) and then calls Finish.
func (r *Read) Req() *ReadReq { return &r.req }

// Finish completes a read whose request the engine completed: Data or Err is set. It does
// nothing to a read served from memory.
func (r *Read) Finish() {
	if r.seg == nil || r.Data != nil || r.Err != nil {
		return
	}
	r.seg.releaseRead()
	r.seg = nil
	switch {
	case r.req.Err != nil && r.req.Done < r.skip+r.n:
		r.Err = fmt.Errorf("vlog: read: %w", r.req.Err)
	case r.req.Done < r.skip+r.n:
		r.Err = fmt.Errorf("%w: short read (%d of %d bytes)", ErrCorrupt, r.req.Done, r.skip+r.n)
	default:
		r.Data = r.buf[r.skip : r.skip+r.n]
		if r.cache != nil {
			r.cache.putVerified(r.ckey, r.Data)
		}
	}
}

// Release returns the read's buffers; Data must not be used afterwards.
func (r *Read) Release() {
	if r.seg != nil {
		r.seg.releaseRead()
		r.seg = nil
	}
	if r.buf != nil {
		if r.aligned {
			r.engine.ReleaseBuffer(r.buf, r.fixed)
		} else {
			putPlain(r.buf)
		}
	}
	if r.mem != nil {
		putPlain(r.mem)
	}
	*r = Read{}
}

// Buffer pools by power-of-two size class, 4 KiB to 1 MiB. Larger buffers are not pooled.
const (
	minClass = 12
	maxClass = 20
)

var (
	alignedPools [maxClass + 1]sync.Pool
	plainPools   [maxClass + 1]sync.Pool
)

func sizeClass(n int) int {
	c := minClass
	for 1<<c < n {
		c++
	}
	return c
}

func getAligned(n int) []byte {
	c := sizeClass(n)
	if c > maxClass {
		return vfs.AlignedBuffer(n)
	}
	if b, ok := alignedPools[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return vfs.AlignedBuffer(1 << c)[:n]
}

func putAligned(b []byte) {
	c := sizeClass(cap(b))
	if c > maxClass || 1<<c != cap(b) {
		return
	}
	b = b[:cap(b)]
	alignedPools[c].Put(&b)
}

// plainBoxes recycles the *[]byte holders plainPools store, so that putPlain does not allocate
// one per call: copies of tail and cached records are made on every such read.
var plainBoxes sync.Pool

func getPlain(n int) []byte {
	c := sizeClass(n)
	if c > maxClass {
		return make([]byte, 0, n)
	}
	if p, ok := plainPools[c].Get().(*[]byte); ok {
		b := (*p)[:0]
		*p = nil
		plainBoxes.Put(p)
		return b
	}
	return make([]byte, 0, 1<<c)
}

func putPlain(b []byte) {
	c := sizeClass(cap(b))
	if c > maxClass || 1<<c != cap(b) {
		return
	}
	p, _ := plainBoxes.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	*p = b[:0]
	plainPools[c].Put(p)
}
