package vlog

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// Fsync is the appendfsync policy.
type Fsync int

// Fsync policies, as Redis's appendfsync.
const (
	// FsyncEverysec writes before replying and fdatasyncs once a second (the default).
	FsyncEverysec Fsync = iota
	// FsyncAlways replies only after a group-committed fdatasync.
	FsyncAlways
	// FsyncNo writes before replying and leaves syncing to the tail limit and the OS.
	FsyncNo
)

// ParseFsync parses an appendfsync value.
func ParseFsync(s string) (Fsync, error) {
	switch strings.ToLower(s) {
	case "everysec":
		return FsyncEverysec, nil
	case "always":
		return FsyncAlways, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("vlog: appendfsync must be always, everysec or no, not %q", s)
}

func (f Fsync) String() string {
	switch f {
	case FsyncAlways:
		return "always"
	case FsyncNo:
		return "no"
	}
	return "everysec"
}

// Loc is where a record lives: segment id and byte offset in it. Records start after the
// segment header, so the zero Loc names no record.
type Loc struct {
	Seg uint32
	Off uint32
}

// Options configure one shard's log.
type Options struct {
	FS  vfs.FS
	Dir string // the shard's directory; created if missing
	// SegmentSize is the size at which the active segment is sealed and a new one started. Too
	// low: many files and frequent rotations; too high: reclamation works in coarser units.
	// Must be at most MaxSegmentSize because offsets are 32 bits.
	SegmentSize int64
	Engine      Engine
	Fsync       Fsync
	// MaxTail bounds the bytes written but not yet synced that are kept in memory for reads;
	// past it the next flush also syncs. Too low: syncs on the write path under "everysec";
	// too high: memory.
	MaxTail int64
	Logger  *slog.Logger
	// Cache, when not nil, keeps hot records in DRAM; one cache serves every shard's log.
	Cache *Cache
	// Repair makes Open and Replay move damaged bytes aside (into the quarantine directory)
	// and go on with the valid records after them, instead of failing with a
	// *CorruptionError. See replay.go.
	Repair bool
	// SealWhenStable makes a full segment count as sealed only once SetStable covers it, not
	// as soon as it is synced: the logs of a keyspace whose transactions span several logs
	// (see SetStable).
	SealWhenStable bool
}

// MaxSegmentSize is the largest allowed SegmentSize (offsets in a Loc are uint32 and one
// record, or one transaction's part, may overflow a segment by up to MaxRecordSize).
const MaxSegmentSize = 2 << 30

// ErrClosed is returned by operations on a closed log.
var ErrClosed = errors.New("vlog: log closed")

// ErrSegmentGone is returned by a read of a location whose segment the log no longer has
// (reclamation or FLUSHALL dropped it). A reader that took the location from an index entry
// that has moved since may simply look again; one whose entry still names it has found
// corruption.
var ErrSegmentGone = errors.New("vlog: segment gone")

// WriteError is a failure to write or sync the log (disk full, I/O error). The records stay in
// memory and the next flush retries them; while the error stands the server refuses writes.
type WriteError struct {
	Op  string // "write", "sync" or "create"
	Err error
	// Peer: the write that failed was another log's part of a transaction this log's later
	// bytes wait for (resolveLocked); this log's own writes work.
	Peer bool
}

func (e *WriteError) Error() string { return "vlog: " + e.Op + " segment: " + e.Err.Error() }

func (e *WriteError) Unwrap() error { return e.Err }

// openSeg is a segment with bytes that are not yet synced: the one being appended to, and
// full ones being sealed (their last bytes written and synced) in the background. Its bytes
// from tailOff on are kept in memory, so reads of them never touch the disk.
type openSeg struct {
	seg *segment
	wf  vfs.File // write side
	// lsnBase is the LSN of the segment's offset 0 (LSNs count bytes across segments, headers
	// included, from where the log stood at Open).
	lsnBase uint64
	// Invariant: tailOff <= syncedOff <= writtenOff <= size, and tail holds bytes
	// [tailOff, size). Bytes below syncedOff are synced (and the file's name too); below
	// writtenOff, written to the OS. tailOff trails syncedOff while a write is in flight (see
	// trimTo).
	size, writtenOff, syncedOff, tailOff int64
	tail                                 []byte
	// trimTo is a trim of the tail that a sync finished while a write was in flight: trimming
	// moves the tail's bytes, under the writer's buffer, so the writer applies it when done.
	trimTo int64
	// rewind: a sync failed while a write was in flight; the writer rewinds writtenOff to
	// syncedOff when done, so the unsynced bytes are written again.
	rewind bool
	// dirSynced: the directory entry naming the file is durable. A segment created by a
	// rotation gets it from the first sync leader that syncs it.
	dirSynced bool
	// full: a rotation moved on; nothing more is appended and the segment leaves the open
	// list once it is wholly synced (sealed).
	full bool
	// prevSealed: the previous segment is wholly synced, so records appended now say so
	// (flagPrevSealed). claimed is the highest Synced value a record here carries, proved
	// says some record carries flagPrevSealed, and lastReal is where the last record that
	// is not a mark ends: Mark appends a proof only when one is missing.
	prevSealed bool
	claimed    int64
	proved     bool
	lastReal   int64
}

// Log is one shard's value log. Append, Read and Flush are safe for concurrent use. Every
// appender of a log holds its shard's lock, so that a transaction can predict where the
// records it appends will end (Reserve).
type Log struct {
	opts Options
	log  *slog.Logger

	mu   sync.Mutex
	cond *sync.Cond
	// removals counts dropped segments' files being removed on goroutines (segment.releaseRead).
	removals sync.WaitGroup
	// exactAcct: the segments' accounting is exact (SetLive), for the invariants build.
	exactAcct bool
	// stable is the LSN below which every record is synced and belongs to no transaction with
	// a part that may still be lost in another log (SetStable). weakEnd is the end of the last
	// barrier resolved with its peers only written (appendfsync everysec or no).
	stable, weakEnd uint64
	// segs holds every segment of the log, open ones included; dropped, the segments dropped
	// whose last reference (a reader, a pin) has not let go yet.
	segs    map[uint32]*segment
	dropped map[uint32]*segment
	// open are the segments with bytes not yet synced, oldest first; the last is the one
	// appended to. Invariant: len(open) >= 1 once Open returns; every open segment but the
	// last is full.
	open []*openSeg
	// writing: a group-commit leader is writing outside mu. syncing: a leader is syncing
	// outside mu. The two run at once, so a reply that needs only a write (everysec) never
	// waits for the once-a-second fdatasync.
	writing, syncing bool
	// reserved is the end of a transaction part Reserve promised: appends until it must land
	// before it in the active segment, so no rotation may happen meanwhile.
	reserved Loc
	// barriers are the ends of transaction parts whose bytes after them are not written yet,
	// in order (AddBarrier); peerSync says whether their peers must be synced or only written.
	barriers []barrier
	peerSync atomic.Bool
	// firstPending mirrors FirstPendingBarrier, for readers that take no lock.
	firstPending atomic.Uint64
	// writeErr is the last write or sync failure; cleared by the next success. While set, the
	// server refuses write commands.
	writeErr error
	failing  atomic.Bool // writeErr != nil, readable without mu
	closed   bool
	// written and synced are the LSNs below which every byte is written to the OS and
	// synced: the durability boundaries, readable without mu.
	written, synced atomic.Uint64
	// ext is the log as recovered by Open (segments and sizes), for the keyspace's
	// transaction checks; replay reads these segments.
	ext Extent
	// tailTx are the runs of transaction records recovery found in the segments that may have
	// had a torn tail (TailTx), until the log takes appends.
	tailTx []TxRecord

	stats struct {
		appends, writes, syncs, bytes, rotations, marks atomic.Uint64
	}
	corrupt  atomic.Uint64 // corrupt records found by replay or reads
	tornCuts atomic.Uint64 // bytes cut off torn tails at open
	repaired atomic.Uint64 // damaged ranges moved aside by a repair
	// cacheID is this log's identity in opts.Cache (0 without a cache).
	cacheID uint32
	// rc is reclamation's state: dropped segments not yet removed, pins (reclaim.go).
	rc reclaimState
}

// Open opens (creating if needed) the log in opts.Dir: it checks every segment's header,
// recovers the tail (cutting a torn tail, refusing or repairing corruption: replay.go) and
// makes the newest segment ready for appends. The caller replays the records (Replay) before it
// appends any.
func Open(opts Options) (*Log, error) {
	if opts.SegmentSize <= 0 || opts.SegmentSize > MaxSegmentSize {
		return nil, fmt.Errorf("vlog: segment size %d out of range (1..%d)", opts.SegmentSize, MaxSegmentSize)
	}
	if opts.MaxTail <= 0 {
		opts.MaxTail = 8 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	l := &Log{opts: opts, log: opts.Logger, segs: map[uint32]*segment{}}
	l.firstPending.Store(math.MaxUint64)
	if opts.Cache != nil {
		l.cacheID = opts.Cache.register()
	}
	l.cond = sync.NewCond(&l.mu)
	if err := opts.FS.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("vlog: %w", err)
	}
	ids, err := listSegments(opts.FS, opts.Dir)
	if err != nil {
		return nil, err
	}
	rec, err := l.recover(ids)
	if err != nil {
		return nil, err
	}
	for _, id := range rec.ids {
		seg, err := l.openSegment(id)
		if err != nil {
			l.closeAll()
			return nil, err
		}
		l.segs[id] = seg
	}
	if len(rec.ids) == 0 {
		id := max(rec.firstID, 1)
		o, err := l.createSeg(id, true, SegExtent{})
		if err != nil {
			return nil, err
		}
		o.prevSealed = true
		l.segs[id], l.open = o.seg, []*openSeg{o}
		rec.ids, rec.sizes = []uint32{id}, []int64{SegmentHeaderSize}
	} else {
		id := rec.ids[len(rec.ids)-1]
		wf, err := opts.FS.OpenReadWrite(filepath.Join(opts.Dir, segName(id)))
		if err != nil {
			l.closeAll()
			return nil, fmt.Errorf("vlog: %w", err)
		}
		size := rec.sizes[len(rec.sizes)-1]
		// recover synced what the newest segments hold, so every byte on disk is durable
		// and the segments before the newest are sealed.
		l.open = []*openSeg{{seg: l.segs[id], wf: wf, size: size, writtenOff: size, syncedOff: size,
			tailOff: size, dirSynced: true, prevSealed: true, claimed: rec.claimed, proved: rec.proved, lastReal: rec.lastReal}}
	}
	for i, id := range rec.ids {
		l.ext.Segs = append(l.ext.Segs, SegExtent{ID: id, Size: rec.sizes[i]})
	}
	l.tailTx = rec.tx
	l.mu.Lock()
	l.updateBoundsLocked()
	l.stable = l.cur().lsnBase + uint64(l.cur().size) // recovery synced it; CutAt lowers it
	l.mu.Unlock()
	return l, nil
}

// listSegments returns the ids of the segment files in dir, ascending.
func listSegments(fsys vfs.FS, dir string) ([]uint32, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("vlog: %w", err)
	}
	var ids []uint32
	for _, n := range names {
		if id, ok := parseSegName(n); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil // List is sorted and names are zero-padded
}

func parseSegName(n string) (uint32, bool) {
	s, ok := strings.CutSuffix(n, segSuffix)
	if !ok || len(s) != 8 {
		return 0, false
	}
	var id uint32
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		id = id*10 + uint32(c-'0')
	}
	return id, id > 0
}

func (l *Log) closeAll() {
	for _, s := range l.segs {
		s.release()
	}
	for _, o := range l.open {
		o.wf.Close()
	}
}

// createSeg creates segment id with its header, which records prev: the full segment before it
// and its final size (the zero SegExtent for the first segment of a log). With durable set it
// writes and syncs the header and the directory entry now (the first segment of a new log);
// otherwise the header waits in memory with the records, and the first sync leader that syncs
// the segment syncs the directory first.
func (l *Log) createSeg(id uint32, durable bool, prev SegExtent) (*openSeg, error) {
	p := filepath.Join(l.opts.Dir, segName(id))
	wf, err := l.opts.FS.Create(p)
	if err != nil {
		return nil, &WriteError{Op: "create", Err: err}
	}
	hdr := appendSegHeader(nil, id, time.Now().UnixMilli(), prev)
	fail := func(op string, err error) (*openSeg, error) {
		wf.Close()
		l.opts.FS.Remove(p)
		return nil, &WriteError{Op: op, Err: err}
	}
	o := &openSeg{wf: wf, size: SegmentHeaderSize, lastReal: SegmentHeaderSize}
	if durable {
		if _, err := wf.WriteAt(hdr, 0); err != nil {
			return fail("write", err)
		}
		if err := wf.Sync(); err != nil {
			return fail("sync", err)
		}
		if err := l.opts.FS.SyncDir(l.opts.Dir); err != nil {
			return fail("sync dir of", err)
		}
		o.writtenOff, o.syncedOff, o.tailOff, o.dirSynced = SegmentHeaderSize, SegmentHeaderSize, SegmentHeaderSize, true
	} else {
		o.tail = hdr
	}
	if o.seg, err = l.openSegment(id); err != nil {
		wf.Close()
		l.opts.FS.Remove(p)
		return nil, err
	}
	return o, nil
}

// cur is the segment being appended to.
func (l *Log) cur() *openSeg { return l.open[len(l.open)-1] }

// openOf returns the open segment with id, or nil.
func (l *Log) openOf(id uint32) *openSeg {
	for _, o := range l.open {
		if o.seg.id == id {
			return o
		}
	}
	return nil
}

// Append adds a record and returns its location and the LSN just past it. The record is
// readable at once (from memory) and durable after Flush(lsn).
func (l *Log) Append(h Header, key, val []byte) (Loc, uint64, error) {
	return l.AppendExt(h, nil, key, val)
}

// AppendExt is Append for a record with an extension block.
func (l *Log) AppendExt(h Header, ext, key, val []byte) (Loc, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Loc{}, 0, ErrClosed
	}
	if l.writeErr != nil && l.reserved == (Loc{}) {
		// The disk refuses what the tail holds already: taking more would only grow memory
		// with writes that cannot become durable. A transaction's reserved part goes in.
		return Loc{}, 0, l.writeErr
	}
	n := RecordSize(len(ext), len(key), len(val))
	if n > MaxRecordSize || len(ext) > math.MaxUint16 {
		return Loc{}, 0, fmt.Errorf("vlog: record of %d bytes over the %d limit", n, MaxRecordSize)
	}
	cur := l.cur()
	// A mark never starts a segment: it proves something about the one it is in.
	if l.reserved == (Loc{}) && h.Kind != KindMark && cur.size > SegmentHeaderSize && cur.size+n > l.opts.SegmentSize {
		if err := l.rotateLocked(); err != nil {
			return Loc{}, 0, err
		}
		cur = l.cur()
	}
	loc := Loc{Seg: cur.seg.id, Off: uint32(cur.size)}
	if r := l.reserved; r != (Loc{}) && (loc.Seg != r.Seg || cur.size+n > int64(r.Off)) {
		return Loc{}, 0, fmt.Errorf("vlog: append of %d bytes at %v past the reserved end %v", n, loc, r)
	}
	h.Synced = uint32(cur.syncedOff)
	h.Flags &^= flagPrevSealed
	if cur.prevSealed {
		h.Flags |= flagPrevSealed
		cur.proved = true
	}
	cur.claimed = max(cur.claimed, cur.syncedOff)
	cur.tail = AppendRecord(cur.tail, h, ext, key, val)
	cur.size += n
	if h.Kind != KindMark {
		cur.lastReal = cur.size
	}
	if l.reserved == (Loc{Seg: loc.Seg, Off: uint32(cur.size)}) {
		l.reserved = Loc{}
	}
	l.stats.appends.Add(1)
	cur.seg.acct.appended(h.Kind, n)
	return loc, cur.lsnBase + uint64(cur.size), nil
}

// Reserve prepares the log for a transaction's part of n bytes, appended next and all in one
// segment, and returns where it will end. It rotates first if the part does not fit in the
// active segment; until the part is appended no rotation happens, so a part larger than a
// segment overflows it (n is bounded by MaxRecordSize). The caller holds the shard's lock and
// appends exactly n bytes before it lets go.
func (l *Log) Reserve(n int64) (Loc, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Loc{}, ErrClosed
	}
	if l.reserved != (Loc{}) {
		return Loc{}, fmt.Errorf("vlog: reserve while %v is reserved", l.reserved)
	}
	if l.writeErr != nil {
		return Loc{}, l.writeErr
	}
	if n <= 0 || n > MaxRecordSize {
		return Loc{}, fmt.Errorf("vlog: transaction part of %d bytes over the %d limit", n, MaxRecordSize)
	}
	cur := l.cur()
	if cur.size > SegmentHeaderSize && cur.size+n > l.opts.SegmentSize {
		if err := l.rotateLocked(); err != nil {
			return Loc{}, err
		}
		cur = l.cur()
	}
	l.reserved = Loc{Seg: cur.seg.id, Off: uint32(cur.size + n)}
	return l.reserved, nil
}

// CancelReserve drops a reservation whose part was not appended in full (an append failed).
func (l *Log) CancelReserve() {
	l.mu.Lock()
	l.reserved = Loc{}
	l.mu.Unlock()
}

// rotateLocked makes a new segment the active one. The full segment is sealed (its last bytes
// written and synced) by the next sync leader, outside every lock, and so are the new file's
// header and name: under the caller's lock, rotating costs two open calls (the file's write and
// direct-read handles) and never waits for the disk. Rejected: preparing the next file in the
// background, which saves those two calls but gave segment ids gaps whenever a rotation could
// not wait for it.
//
// Nothing is appended to the full segment after this, so its size is final and the new
// segment's header records it: if a crash leaves the full segment shorter while records of the
// new one survive, recovery knows the full one lost its tail even when it ends cleanly at a
// record boundary (replay.go).
func (l *Log) rotateLocked() error {
	cur := l.cur()
	next, err := l.createSeg(cur.seg.id+1, false, SegExtent{ID: cur.seg.id, Size: cur.size})
	if err != nil {
		return err
	}
	cur.full = true
	next.lsnBase = cur.lsnBase + uint64(cur.size)
	l.segs[next.seg.id] = next.seg
	l.open = append(l.open, next)
	l.stats.rotations.Add(1)
	l.updateBoundsLocked()
	return nil
}

// boundLocked is the LSN below which every byte of the open segments is at least at the state
// off reports (written or synced).
func (l *Log) boundLocked(off func(o *openSeg) int64) uint64 {
	for _, o := range l.open {
		if v := off(o); v < o.size {
			return o.lsnBase + uint64(v)
		}
	}
	c := l.cur()
	return c.lsnBase + uint64(c.size)
}

func writtenOf(o *openSeg) int64 { return o.writtenOff }
func syncedOf(o *openSeg) int64  { return o.syncedOff }

func (l *Log) updateBoundsLocked() {
	l.written.Store(l.boundLocked(writtenOf))
	l.synced.Store(l.boundLocked(syncedOf))
}

// unsyncedLocked is the number of bytes written but not synced.
func (l *Log) unsyncedLocked() int64 {
	var n int64
	for _, o := range l.open {
		n += o.writtenOff - o.syncedOff
	}
	return n
}

// AppendedLSN is the LSN just past the last appended record.
func (l *Log) AppendedLSN() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.cur()
	return c.lsnBase + uint64(c.size)
}

// DurableLSN is the LSN below which every record is as durable as a reply may expose under
// the policy: written to the OS (sync false) or synced (sync true). It takes no lock.
func (l *Log) DurableLSN(sync bool) uint64 {
	if sync {
		return l.synced.Load()
	}
	return l.written.Load()
}

// Flush returns once every record up to lsn has been written to the OS and, when sync is true,
// made durable. Concurrent callers group-commit: one leader writes everything appended so far
// while the others wait for it, and one leader syncs everything written so far. A write and a
// sync can be in flight at once: a caller that needs only the write does not wait for a sync.
func (l *Log) Flush(lsn uint64, sync bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.boundLocked(writtenOf) < lsn {
			if l.closed {
				return ErrClosed
			}
			if l.writing {
				l.cond.Wait()
				continue
			}
			if err := l.leadWriteLocked(lsn); err != nil {
				return err
			}
			// Memory bound: bytes written but not synced stay in the tail for reads; past
			// MaxTail this caller syncs too.
			sync = sync || l.unsyncedLocked() > l.opts.MaxTail
			continue
		}
		if !sync || l.boundLocked(syncedOf) >= lsn {
			return nil
		}
		if l.closed {
			return ErrClosed
		}
		if l.syncing {
			l.cond.Wait()
			continue
		}
		if err := l.leadSyncLocked(); err != nil {
			return err
		}
	}
}

// ioJob is one segment's share of a leader's write or sync.
type ioJob struct {
	o          *openSeg
	start, end int64
	buf        []byte
	dir        bool // sync the directory first
}

// leadWriteLocked writes everything appended so far, outside mu. Appends may continue: they add
// bytes past what it writes (or move the tail to a new array), never touching those bytes; a
// sync that ends meanwhile leaves its trim to this writer (trimTo). At a barrier (a transaction's
// part, see AddBarrier) it writes up to the barrier and, if its caller needs bytes past it
// (target), waits for the other parts and goes on; otherwise it stops there, so that a leader
// writing for another log's barrier never waits at a later barrier of its own.
func (l *Log) leadWriteLocked(target uint64) error {
	l.writing = true
	defer func() {
		l.writing = false
		l.cond.Broadcast()
	}()
	// Before writing, let the goroutines that are ready to run (other connections whose
	// commands arrived) append theirs: they find a leader and wait for it, and one write
	// covers them all, as one event-loop pass of a single-threaded server would. With nothing
	// else ready this returns at once.
	l.mu.Unlock()
	runtime.Gosched()
	l.mu.Lock()
	for {
		c := l.cur()
		limit := c.lsnBase + uint64(c.size)
		b, ok := l.pendingBarrierLocked()
		if ok && b.end < limit {
			limit = b.end
		} else {
			ok = false
		}
		if err := l.writeUpToLocked(limit); err != nil {
			return err
		}
		if !ok || b.end >= target {
			return nil
		}
		// Wake the callers what is written now satisfies before waiting for the peers: one of
		// them may be another log's leader, waiting at its own barrier for bytes of this log
		// before this one, and the peers this leader waits for may need it to go on. Waking
		// them only when this leader is done would leave the two leaders waiting for each other.
		l.cond.Broadcast()
		if err := l.resolveLocked(b); err != nil {
			return err
		}
	}
}

// pendingBarrierLocked returns the first barrier not yet resolved, dropping the resolved ones
// before it.
func (l *Log) pendingBarrierLocked() (barrier, bool) {
	for len(l.barriers) > 0 && l.barriers[0].resolved {
		l.barriers = l.barriers[1:]
	}
	if len(l.barriers) == 0 {
		return barrier{}, false
	}
	return l.barriers[0], true
}

// markResolvedLocked records that the barrier ending at end no longer holds anything back.
func (l *Log) markResolvedLocked(end uint64) {
	for i := range l.barriers {
		if l.barriers[i].end == end {
			l.barriers[i].resolved = true
		}
	}
	l.updateFirstPendingLocked()
}

func (l *Log) updateFirstPendingLocked() {
	first := uint64(math.MaxUint64)
	for _, b := range l.barriers {
		if !b.resolved {
			first = b.end
			break
		}
	}
	l.firstPending.Store(first)
}

// writeUpToLocked writes the appended bytes below LSN limit, outside mu.
func (l *Log) writeUpToLocked(limit uint64) error {
	var arr [4]ioJob
	jobs := arr[:0]
	for _, o := range l.open {
		end := min(o.size, int64(limit)-int64(o.lsnBase))
		if o.writtenOff < end {
			jobs = append(jobs, ioJob{o: o, start: o.writtenOff, end: end, buf: o.tail[o.writtenOff-o.tailOff : end-o.tailOff]})
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	l.mu.Unlock()
	var werr error
	done := 0
	for _, j := range jobs {
		_, werr = j.o.wf.WriteAt(j.buf, j.start)
		l.stats.writes.Add(1)
		l.stats.bytes.Add(uint64(len(j.buf)))
		if werr != nil {
			break
		}
		done++
	}
	l.mu.Lock()
	for i, j := range jobs {
		o := j.o
		if i < done {
			o.writtenOff = j.end
		}
		if o.rewind { // a sync failed meanwhile (see leadSyncLocked)
			o.writtenOff, o.rewind = o.syncedOff, false
		}
		if o.trimTo > o.tailOff {
			trimLocked(o, o.trimTo, l.opts.MaxTail)
		}
	}
	l.updateBoundsLocked()
	if werr != nil {
		err := &WriteError{Op: "write", Err: werr}
		l.setWriteErrLocked(err)
		return err
	}
	l.clearWriteErrLocked("write")
	return nil
}

// barrier is the end of a transaction's part in this log: the bytes after it may be written
// only once every other part of the transaction is written to the OS (synced, under
// appendfsync always) in its own log. So a crash never keeps what followed a transaction in one
// log while it loses a part of that transaction in another (under always, never anything
// synced; see AddBarrier).
type barrier struct {
	end      uint64 // LSN just past this log's part
	peers    []Peer
	resolved bool // every peer was written (synced) up to its LSN
}

// Peer is another log's part of a transaction: the LSN just past it.
type Peer struct {
	Log *Log
	LSN uint64
}

// AddBarrier records that the records appended up to LSN end are a part of a transaction whose
// other parts end at peers. Bytes after end are written only once every peer is written (or
// synced under appendfsync always) up to its LSN. Recovery relies on it: a part a crash kept
// is followed by nothing the transaction's lost parts could make wrong, and cutting the log at
// an incomplete transaction (the keyspace's recovery) never cuts what was acknowledged as
// durable.
//
// A leader that waits at a barrier has written everything before it, and a transaction's parts
// are appended under the locks of every shard it spans, so the barriers of any two logs come in
// the same order: a peer waiting for this log only ever needs bytes before the barrier this
// log waits at, and no two leaders wait for each other. The caller holds the shard's lock and
// adds barriers in the order of their ends.
func (l *Log) AddBarrier(end uint64, peers []Peer) {
	l.mu.Lock()
	l.barriers = append(l.barriers, barrier{end: end, peers: peers})
	l.updateFirstPendingLocked()
	l.mu.Unlock()
}

// FirstPendingBarrier is the end of the first barrier whose peers may not be written (synced)
// yet, or the largest LSN when there is none. A record up to LSN x of a transaction's part is as
// durable as its whole transaction once x is durable here and x is below this. It takes no lock.
func (l *Log) FirstPendingBarrier() uint64 { return l.firstPending.Load() }

// FlushTx is Flush for a reader that saw a transaction's part ending at lsn: besides this log up
// to lsn, every other part of every transaction whose part here ends at or before lsn is
// flushed too.
func (l *Log) FlushTx(lsn uint64, sync bool) error {
	if err := l.Flush(lsn, sync); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		var b barrier
		found := false
		for _, x := range l.barriers {
			if !x.resolved && x.end <= lsn {
				b, found = x, true
				break
			}
		}
		if !found {
			return nil
		}
		if err := l.resolveLocked(b); err != nil {
			return err
		}
	}
}

// SetPeerSync says whether barriers wait for their peers to be synced (appendfsync always) or
// only written.
func (l *Log) SetPeerSync(sync bool) { l.peerSync.Store(sync) }

// resolveLocked waits, outside mu, until every peer of b is written (or synced), and marks b
// resolved.
func (l *Log) resolveLocked(b barrier) error {
	sync := l.peerSync.Load()
	l.mu.Unlock()
	var err error
	for _, p := range b.peers {
		if err = p.Log.Flush(p.LSN, sync); err != nil {
			break
		}
	}
	l.mu.Lock()
	if !sync {
		l.weakEnd = max(l.weakEnd, b.end)
	}
	if err != nil {
		// This log cannot go on until the other part is written: its writes fail, and refuse,
		// until a retry finds the other log writing again.
		werr := &WriteError{Op: "write", Peer: true, Err: fmt.Errorf("a transaction's part in another shard: %w", err)}
		l.setWriteErrLocked(werr)
		return werr
	}
	l.markResolvedLocked(b.end)
	l.clearPeerErrLocked()
	return nil
}

// clearPeerErrLocked clears the standing error if it was another log's (resolveLocked) and no
// barrier of this log waits for a peer any more: whoever resolved the barrier (this leader, or
// another caller's) cleared what held the log back, and nothing else would, since a log with
// nothing more to write never tries the peer again.
func (l *Log) clearPeerErrLocked() {
	var we *WriteError
	if !errors.As(l.writeErr, &we) || !we.Peer {
		return
	}
	if b, ok := l.pendingBarrierLocked(); ok && b.end <= l.boundLocked(writtenOf) {
		return
	}
	l.setWriteErrLocked(nil)
}

// leadSyncLocked syncs everything written so far, in order, outside mu, trims the synced bytes
// from the tails and seals the full segments that are now wholly synced.
func (l *Log) leadSyncLocked() error {
	l.syncing = true
	var arr [4]ioJob
	jobs := arr[:0]
	for _, o := range l.open {
		if o.syncedOff < o.writtenOff || !o.dirSynced && o.writtenOff > 0 {
			jobs = append(jobs, ioJob{o: o, end: o.writtenOff, dir: !o.dirSynced})
		}
		if o.writtenOff < o.size {
			break // what follows cannot be durable before this is
		}
	}
	l.mu.Unlock()
	var serr error
	done := 0
	for _, j := range jobs {
		if j.dir {
			if serr = l.opts.FS.SyncDir(l.opts.Dir); serr != nil {
				break
			}
		}
		serr = j.o.wf.Sync()
		l.stats.syncs.Add(1)
		if serr != nil {
			break
		}
		done++
	}
	l.mu.Lock()
	l.syncing = false
	l.cond.Broadcast()
	for _, j := range jobs[:done] {
		o := j.o
		o.dirSynced = true
		o.syncedOff = max(o.syncedOff, j.end)
		if l.writing {
			o.trimTo = max(o.trimTo, j.end)
		} else {
			trimLocked(o, j.end, l.opts.MaxTail)
		}
	}
	if serr != nil {
		// The kernel may have dropped the pages it failed to write and marked them clean, so
		// a later sync would report success for bytes that never reached the disk: write
		// them again from the tail (which still holds them) before the next sync.
		o := jobs[done].o
		if l.writing {
			o.rewind = true
		} else {
			o.writtenOff = o.syncedOff
		}
		l.updateBoundsLocked()
		err := &WriteError{Op: "sync", Err: serr}
		l.setWriteErrLocked(err)
		return err
	}
	l.clearWriteErrLocked("sync")
	l.sealLocked()
	l.updateBoundsLocked()
	return nil
}

// sealLocked closes the write side of full segments that are wholly synced (and whose
// transactions are complete on disk, with SealWhenStable: see stableLocked): from now on they are
// read from their files only, and records appended to the next segment say it is sealed.
func (l *Log) sealLocked() {
	for len(l.open) > 1 {
		o := l.open[0]
		if !o.full || o.syncedOff < o.size || l.opts.SealWhenStable && !l.stableLocked(o.lsnBase+uint64(o.size)) {
			return
		}
		if err := o.wf.Close(); err != nil {
			l.log.Warn("closing a sealed segment failed", "segment", o.seg.path, "err", err)
		}
		o.tail = nil
		l.open = l.open[1:]
		l.open[0].prevSealed = true
	}
}

func trimLocked(o *openSeg, upTo, maxTail int64) {
	n := int(upTo - o.tailOff)
	if n <= 0 {
		return
	}
	if o.full && upTo >= o.size {
		// Nothing more will be appended here: the buffer goes now, not when the segment is
		// sealed, which may wait for a stable cut (SetStable).
		o.tail, o.tailOff = nil, upTo
		return
	}
	rest := copy(o.tail, o.tail[n:])
	o.tail = o.tail[:rest]
	o.tailOff = upTo
	// A tail that once held a burst should not pin its peak size for ever.
	if cap(o.tail) > 4*int(maxTail) && rest < int(maxTail) {
		o.tail = append(make([]byte, 0, rest), o.tail...)
	}
}

// waitIdleLocked waits until no leader writes or syncs outside mu.
func (l *Log) waitIdleLocked() {
	for l.writing || l.syncing {
		l.cond.Wait()
	}
}

// SetStable records that every record below lsn is synced and that every transaction with a
// part below lsn has all its other parts synced in their logs: no recovery can find one of them
// incomplete, so none can cut this log below lsn. The keyspace establishes it for a consistent
// cut of all its logs (the LSNs of every log at one instant, under all the shard locks) once each
// log has synced past its LSN of the cut.
//
// With SealWhenStable, a full segment is sealed only once it lies below the stable LSN. That is
// what makes a segment's seal (flagPrevSealed, which recovery trusts to stop looking for a torn
// tail) also say that no transaction part in it can be incomplete: recovery looks for
// incomplete transactions in the segments that are not proven sealed (TailTx), and under
// appendfsync everysec or no a transaction's part may be synced here while another part is only
// written to the OS in its own log, where a power loss takes it.
func (l *Log) SetStable(lsn uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lsn > l.stable {
		l.stable = lsn
		l.sealLocked()
	}
}

// stableLocked reports whether no transaction with a part below lsn can be found incomplete by a
// recovery: a stable cut covers lsn, or every barrier below it was resolved with its peers synced
// (appendfsync always) and none before lsn waits, once the barriers resolved with peers only
// written are all below a stable cut.
func (l *Log) stableLocked(lsn uint64) bool {
	if lsn <= l.stable {
		return true
	}
	if l.weakEnd > l.stable {
		return false
	}
	b, pending := l.pendingBarrierLocked()
	return !pending || b.end > lsn
}

// Sync makes everything appended so far durable.
func (l *Log) Sync() error { return l.Flush(l.AppendedLSN(), true) }

// Retry writes and syncs whatever the last failure left unwritten, clearing the write error
// when that works. The keyspace calls it every second while an error stands, so writing
// resumes by itself once the disk has room again.
func (l *Log) Retry() error {
	if err := l.resolveWritten(); err != nil {
		return err
	}
	return l.Sync()
}

// resolveWritten resolves, as the write leader, the barriers whose part of this log is
// written: after another log's part failed to write (resolveLocked), a log that has nothing
// more to write never asks that log again, so its Retry does, and clears the error once
// every barrier is resolved.
func (l *Log) resolveWritten() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.writing && !l.closed {
		l.cond.Wait()
	}
	if l.closed {
		return ErrClosed
	}
	l.writing = true
	defer func() {
		l.writing = false
		l.cond.Broadcast()
	}()
	for {
		b, ok := l.pendingBarrierLocked()
		if !ok || b.end > l.boundLocked(writtenOf) {
			break
		}
		if err := l.resolveLocked(b); err != nil {
			return err
		}
	}
	l.clearPeerErrLocked()
	return nil
}

// Mark appends a mark record when the active segment's records do not prove what is durable:
// its synced records, or the seal of the previous segment, which recovery needs to tell a torn
// tail from corruption (replay.go). It reports whether it appended one, with the LSN to flush.
// The keyspace calls it once a second, under its shard's lock like every append, after a sync.
func (l *Log) Mark() (uint64, bool, error) {
	l.mu.Lock()
	c := l.cur()
	need := c.claimed < c.lastReal && c.syncedOff >= c.lastReal || c.prevSealed && !c.proved
	l.mu.Unlock()
	if !need {
		return 0, false, nil
	}
	_, lsn, err := l.Append(Header{Kind: KindMark}, nil, nil)
	if err == nil {
		l.stats.marks.Add(1)
	}
	return lsn, err == nil, err
}

// setWriteErrLocked records the outcome of a write or sync: err, or nil after a success.
func (l *Log) setWriteErrLocked(err error) {
	l.writeErr = err
	l.failing.Store(err != nil)
}

// clearWriteErrLocked clears the standing error if a write or sync (op) failed it: a write that
// works says nothing of a failed sync, and the other way round.
func (l *Log) clearWriteErrLocked(op string) {
	var we *WriteError
	if l.writeErr != nil && (!errors.As(l.writeErr, &we) || we.Op == op) {
		l.setWriteErrLocked(nil)
	}
}

// WriteErr returns the last write or sync failure, or nil once writing works again. The
// server asks before every write command, so the common answer takes no lock.
func (l *Log) WriteErr() error {
	if !l.failing.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeErr
}

// Close syncs and closes the log. A clean close leaves a log whose last record proves that
// everything before it is durable.
func (l *Log) Close() error {
	err := l.Sync()
	if err == nil {
		if _, marked, merr := l.Mark(); merr != nil {
			err = merr
		} else if marked {
			err = l.Sync()
		}
	}
	l.mu.Lock()
	l.waitIdleLocked()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.cond.Broadcast()
	defer l.mu.Unlock()
	l.closeAll()
	l.removals.Wait()
	if l.opts.Cache != nil {
		// Nothing can ask for this log's records any more; let the hand discard them.
		l.opts.Cache.dropBefore(l.cacheID, math.MaxUint32)
	}
	return err
}

// Rotate starts a new segment and returns its id; the previous one is sealed by the next sync.
// FLUSHALL uses it: the FLUSHALL record goes first in the new segment and, once it is synced,
// DropSegmentsBefore removes everything older, which can no longer matter.
func (l *Log) Rotate() (uint32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if err := l.rotateLocked(); err != nil {
		return 0, err
	}
	return l.cur().seg.id, nil
}

// DropSegmentsBefore removes every sealed segment older than id. Files are removed once the
// last reader using them is done; cached records of those segments are discarded as the
// cache's hand reaches them. The caller has synced a record (FLUSHALL's) that makes every
// record of them irrelevant.
func (l *Log) DropSegmentsBefore(id uint32) {
	if l.opts.Cache != nil {
		l.opts.Cache.dropBefore(l.cacheID, id)
	}
	l.mu.Lock()
	var drop []*segment
	for sid, s := range l.segs {
		if sid < id && l.openOf(sid) == nil {
			drop = append(drop, l.dropLocked(s))
		}
	}
	l.mu.Unlock()
	for _, s := range drop {
		s.release()
	}
}

// LogStats are a log's counters and sizes.
type LogStats struct {
	Segments     int
	DiskBytes    int64 // bytes in segment files, including the open segments' appended bytes
	TailBytes    int64 // unsynced bytes held in memory
	Appends      uint64
	Writes       uint64
	Syncs        uint64
	BytesWritten uint64
	Rotations    uint64
	Marks        uint64
	Corrupt      uint64
	TornBytesCut uint64
	Repaired     uint64
}

// Stats returns the log's counters.
func (l *Log) Stats() LogStats {
	l.mu.Lock()
	st := LogStats{Segments: len(l.segs)}
	for id, s := range l.segs {
		if o := l.openOf(id); o != nil {
			st.DiskBytes += o.size
			st.TailBytes += int64(len(o.tail))
		} else if sz, err := s.rf.Size(); err == nil {
			st.DiskBytes += sz
		}
	}
	l.mu.Unlock()
	st.Appends = l.stats.appends.Load()
	st.Writes = l.stats.writes.Load()
	st.Syncs = l.stats.syncs.Load()
	st.BytesWritten = l.stats.bytes.Load()
	st.Rotations = l.stats.rotations.Load()
	st.Marks = l.stats.marks.Load()
	st.Corrupt = l.corrupt.Load()
	st.TornBytesCut = l.tornCuts.Load()
	st.Repaired = l.repaired.Load()
	return st
}
