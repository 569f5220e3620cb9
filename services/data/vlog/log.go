package vlog

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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

// Loc is where a record lives: segment id and byte offset in it.
type Loc struct {
	Seg uint32
	Off uint32
}

// Options configure one shard's log.
type Options struct {
	FS  vfs.FS
	Dir string // the shard's directory; created if missing
	// SegmentSize is the size at which the active segment is sealed and a new one started. Too
	// low: many files and frequent rotation syncs; too high: reclamation (later) works in
	// coarser units. Must be at most MaxSegmentSize because offsets are 32 bits.
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
	// ReplayFrom, when not zero, is where Open starts replaying: the position a checkpoint of
	// the index covers (see position.go). Segments before it are opened but not replayed.
	ReplayFrom Loc
}

// MaxSegmentSize is the largest allowed SegmentSize (offsets in a Loc are uint32 and one
// record may overflow a segment by up to MaxRecordSize).
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
	Op  string // "write" or "sync"
	Err error
}

func (e *WriteError) Error() string { return "vlog: " + e.Op + " segment: " + e.Err.Error() }

func (e *WriteError) Unwrap() error { return e.Err }

type segment struct {
	id     uint32
	path   string
	rf     vfs.File // read side, O_DIRECT where supported
	direct bool
	align  int64        // offset and length alignment of direct reads (vfs.DirectAlign)
	refs   atomic.Int32 // readers in flight plus one for being listed
	fs     vfs.FS
	remove bool // set when dropped; the last reference closes and removes the file
	// acct is the segment's space accounting (reclaim.go), guarded by the log's mu.
	acct segAcct
	// gone, when set, is called once the dropped segment's file is removed and the removal
	// is durable (reclaim.go).
	gone func()
}

func (s *segment) acquire() { s.refs.Add(1) }

func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.rf.Close()
		if s.remove {
			// Removal only reclaims space (whatever dropped the segment made it irrelevant
			// first), so failures are not fatal; the directory sync keeps a crash from
			// bringing the file back to be replayed again.
			if s.fs.Remove(s.path) == nil && s.fs.SyncDir(filepath.Dir(s.path)) == nil && s.gone != nil {
				s.gone()
			}
		}
	}
}

// Log is one shard's value log. Append, Read and Flush are safe for concurrent use.
type Log struct {
	opts Options
	log  *slog.Logger

	mu   sync.Mutex
	cond *sync.Cond
	segs map[uint32]*segment
	// active is the segment being appended to; wf its write handle.
	active *segment
	wf     vfs.File
	// Invariant: tailOff <= syncedOff <= writtenOff <= size, and tail holds bytes
	// [tailOff, size) of the active segment. Bytes below syncedOff are synced; below writtenOff,
	// written to the OS. tailOff trails syncedOff while a write is in flight (see trimTo).
	size       int64
	writtenOff int64
	syncedOff  int64
	tailOff    int64
	tail       []byte
	// lsnBase is the LSN of offset 0 of the active segment; LSNs count bytes across segments.
	lsnBase uint64
	// writing: a group-commit leader is writing the tail outside mu. syncing: a leader is
	// syncing outside mu. The two run at once, so a reply that needs only a write (everysec)
	// never waits for the once-a-second fdatasync.
	writing, syncing bool
	// trimTo is a trim of the tail that a sync finished while a write was in flight: trimming
	// moves the tail's bytes, under the writer's buffer, so the writer applies it when done.
	trimTo int64
	// rewind: a sync failed while a write was in flight; the writer rewinds writtenOff to
	// syncedOff when done, so the unsynced bytes are written again.
	rewind bool
	// writeErr is the last write or sync failure; cleared by the next success. While set, the
	// server refuses write commands.
	writeErr error
	failing  atomic.Bool // writeErr != nil, readable without mu
	closed   bool

	stats struct {
		appends, writes, syncs, bytes atomic.Uint64
	}
	corrupt  atomic.Uint64 // corrupt records found by replay or reads
	tornCuts atomic.Uint64 // bytes cut off torn tails at open
	// cacheID is this log's identity in opts.Cache (0 without a cache).
	cacheID uint32
	// rc is reclamation's state: dropped segments not yet removed, pins (reclaim.go).
	rc reclaimState
}

// ReplayFunc is called by Open for every verified record in log order. key and val alias
// replay's buffer and are valid only during the call.
type ReplayFunc func(loc Loc, h Header, key, val []byte) error

const segSuffix = ".seg"

func segName(id uint32) string { return fmt.Sprintf("%08d%s", id, segSuffix) }

// Open opens (creating if needed) the log in opts.Dir, replays every record through fn and
// leaves the log ready for appends.
func Open(opts Options, fn ReplayFunc) (*Log, error) {
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
	if opts.Cache != nil {
		l.cacheID = opts.Cache.register()
	}
	l.cond = sync.NewCond(&l.mu)
	if err := opts.FS.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("vlog: %w", err)
	}
	names, err := opts.FS.List(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("vlog: %w", err)
	}
	var ids []uint32
	for _, n := range names {
		if !strings.HasSuffix(n, segSuffix) {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSuffix(n, segSuffix), 10, 32)
		if err != nil {
			continue
		}
		ids = append(ids, uint32(id))
	}
	if err := l.checkReplayFrom(ids); err != nil {
		return nil, err
	}
	for i, id := range ids {
		last := i == len(ids)-1
		var good int64
		if from, ok := l.replayStart(id); ok {
			if good, err = l.replaySegment(id, from, last, fn); err != nil {
				l.closeAll()
				return nil, err
			}
		}
		seg, err := l.openSegment(id)
		if err != nil {
			l.closeAll()
			return nil, err
		}
		l.segs[id] = seg
		if last {
			wf, err := opts.FS.OpenReadWrite(seg.path)
			if err != nil {
				l.closeAll()
				return nil, fmt.Errorf("vlog: %w", err)
			}
			l.active, l.wf = seg, wf
			l.size, l.writtenOff, l.syncedOff, l.tailOff = good, good, good, good
		}
	}
	if l.active == nil {
		if err := l.newSegmentLocked(1); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *Log) openSegment(id uint32) (*segment, error) {
	p := filepath.Join(l.opts.Dir, segName(id))
	rf, direct, err := l.opts.FS.OpenDirect(p)
	if err != nil {
		return nil, fmt.Errorf("vlog: %w", err)
	}
	s := &segment{id: id, path: p, rf: rf, direct: direct, fs: l.opts.FS, align: vfs.AlignedBlock}
	if direct {
		s.align = vfs.DirectAlign(rf)
	}
	s.refs.Store(1)
	return s, nil
}

func (l *Log) closeAll() {
	for _, s := range l.segs {
		s.release()
	}
	if l.wf != nil {
		l.wf.Close()
	}
}

// newSegmentLocked creates segment id, makes its name durable and makes it active. The caller
// has synced the previous active segment.
func (l *Log) newSegmentLocked(id uint32) error {
	p := filepath.Join(l.opts.Dir, segName(id))
	// Failures here are write failures like any other (a full disk refuses new files too):
	// they put the log in its write-error state so writes are refused until one succeeds.
	wf, err := l.opts.FS.Create(p)
	if err != nil {
		l.setWriteErrLocked(&WriteError{Op: "create", Err: err})
		return l.writeErr
	}
	if err := l.opts.FS.SyncDir(l.opts.Dir); err != nil {
		wf.Close()
		l.opts.FS.Remove(p)
		l.setWriteErrLocked(&WriteError{Op: "sync dir of", Err: err})
		return l.writeErr
	}
	seg, err := l.openSegment(id)
	if err != nil {
		wf.Close()
		return err
	}
	if l.wf != nil {
		l.wf.Close()
		l.lsnBase += uint64(l.size)
	}
	l.segs[id] = seg
	l.active, l.wf = seg, wf
	l.size, l.writtenOff, l.syncedOff, l.tailOff, l.trimTo, l.rewind = 0, 0, 0, 0, 0, false
	l.tail = l.tail[:0]
	return nil
}

// Append adds a record and returns its location and the LSN just past it. The record is
// readable at once (from the tail) and durable after Flush(lsn).
func (l *Log) Append(h Header, key, val []byte) (Loc, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Loc{}, 0, ErrClosed
	}
	n := RecordSize(len(key), len(val))
	if n > MaxRecordSize {
		return Loc{}, 0, fmt.Errorf("vlog: record of %d bytes over the %d limit", n, MaxRecordSize)
	}
	if l.size > 0 && l.size+n > l.opts.SegmentSize {
		if err := l.rotateLocked(); err != nil {
			return Loc{}, 0, err
		}
	}
	loc := Loc{Seg: l.active.id, Off: uint32(l.size)}
	l.tail = AppendRecord(l.tail, h, key, val)
	l.size += n
	l.stats.appends.Add(1)
	l.active.acct.appended(h.Kind, n)
	return loc, l.lsnBase + uint64(l.size), nil
}

// rotateLocked writes and syncs the active segment, then starts the next one.
func (l *Log) rotateLocked() error {
	l.waitIdleLocked()
	if err := l.writeTailLocked(true); err != nil {
		return err
	}
	return l.newSegmentLocked(l.active.id + 1)
}

// writeTailLocked writes the unwritten tail and optionally syncs, holding mu throughout.
func (l *Log) writeTailLocked(sync bool) error {
	buf := l.tail[l.writtenOff-l.tailOff:]
	if len(buf) > 0 {
		if _, err := l.wf.WriteAt(buf, l.writtenOff); err != nil {
			l.setWriteErrLocked(&WriteError{Op: "write", Err: err})
			return l.writeErr
		}
		l.stats.writes.Add(1)
		l.stats.bytes.Add(uint64(len(buf)))
		l.writtenOff = l.size
	}
	if sync && l.syncedOff < l.size {
		if err := l.wf.Sync(); err != nil {
			l.setWriteErrLocked(&WriteError{Op: "sync", Err: err})
			return l.writeErr
		}
		l.stats.syncs.Add(1)
		l.syncedOff = l.size
	}
	if sync {
		l.trimTailLocked(l.syncedOff)
	}
	l.setWriteErrLocked(nil)
	return nil
}

// waitIdleLocked waits until no leader writes or syncs outside mu.
func (l *Log) waitIdleLocked() {
	for l.writing || l.syncing {
		l.cond.Wait()
	}
}

func (l *Log) trimTailLocked(upTo int64) {
	n := int(upTo - l.tailOff)
	if n <= 0 {
		return
	}
	rest := copy(l.tail, l.tail[n:])
	l.tail = l.tail[:rest]
	l.tailOff = upTo
	// A tail that once held a burst should not pin its peak size for ever.
	if cap(l.tail) > 4*int(l.opts.MaxTail) && rest < int(l.opts.MaxTail) {
		l.tail = append(make([]byte, 0, rest), l.tail...)
	}
}

// AppendedLSN is the LSN just past the last appended record.
func (l *Log) AppendedLSN() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lsnBase + uint64(l.size)
}

// Flush returns once every record up to lsn has been written to the OS and, when sync is true,
// made durable. Concurrent callers group-commit: one leader writes everything appended so far
// while the others wait for it, and one leader syncs everything written so far. A write and a
// sync can be in flight at once: a caller that needs only the write does not wait for a sync.
func (l *Log) Flush(lsn uint64, sync bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.lsnBase+uint64(l.writtenOff) < lsn {
			if l.closed {
				return ErrClosed
			}
			if l.writing {
				l.cond.Wait()
				continue
			}
			if err := l.leadWriteLocked(); err != nil {
				return err
			}
			// Memory bound: bytes written but not synced stay in the tail for reads; past
			// MaxTail this caller syncs too.
			sync = sync || l.writtenOff-l.syncedOff > l.opts.MaxTail
			continue
		}
		if !sync || l.lsnBase+uint64(l.syncedOff) >= lsn {
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

// leadWriteLocked writes everything appended so far, outside mu. Appends may continue: they add
// bytes past buf (or move the tail to a new array), never touching buf's bytes; a sync that
// ends meanwhile leaves its trim to this writer (trimTo).
func (l *Log) leadWriteLocked() error {
	l.writing = true
	// Before writing, let the goroutines that are ready to run (other connections whose
	// commands arrived) append theirs: they find a leader and wait for it, and one write
	// covers them all, as one event-loop pass of a single-threaded server would. With nothing
	// else ready this returns at once.
	l.mu.Unlock()
	runtime.Gosched()
	l.mu.Lock()
	wf, start, end := l.wf, l.writtenOff, l.size
	buf := l.tail[start-l.tailOff : end-l.tailOff]
	l.mu.Unlock()
	_, werr := wf.WriteAt(buf, start)
	l.stats.writes.Add(1)
	l.stats.bytes.Add(uint64(len(buf)))
	l.mu.Lock()
	l.writing = false
	l.cond.Broadcast()
	if l.trimTo > l.tailOff {
		l.trimTailLocked(l.trimTo)
	}
	if werr != nil {
		err := &WriteError{Op: "write", Err: werr}
		l.setWriteErrLocked(err)
		return err
	}
	l.clearWriteErrLocked("write")
	l.writtenOff = end
	if l.rewind { // a sync failed meanwhile (see leadSyncLocked)
		l.writtenOff, l.rewind = l.syncedOff, false
	}
	return nil
}

// leadSyncLocked syncs everything written so far, outside mu, and trims the synced bytes from
// the tail.
func (l *Log) leadSyncLocked() error {
	l.syncing = true
	wf, end := l.wf, l.writtenOff
	l.mu.Unlock()
	serr := wf.Sync()
	l.stats.syncs.Add(1)
	l.mu.Lock()
	l.syncing = false
	l.cond.Broadcast()
	if serr != nil {
		// The kernel may have dropped the pages it failed to write and marked them clean, so
		// a later sync would report success for bytes that never reached the disk: write
		// them again from the tail (which still holds them) before the next sync.
		if l.writing {
			l.rewind = true
		} else {
			l.writtenOff = l.syncedOff
		}
		err := &WriteError{Op: "sync", Err: serr}
		l.setWriteErrLocked(err)
		return err
	}
	l.clearWriteErrLocked("sync")
	l.syncedOff = max(l.syncedOff, end)
	if l.writing {
		l.trimTo = max(l.trimTo, end)
	} else {
		l.trimTailLocked(end)
	}
	return nil
}

// Sync makes everything appended so far durable.
func (l *Log) Sync() error { return l.Flush(l.AppendedLSN(), true) }

// Retry writes and syncs whatever the last failure left unwritten, clearing the write error
// when that works. The keyspace calls it every second while an error stands, so writing
// resumes by itself once the disk has room again.
func (l *Log) Retry() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitIdleLocked()
	if l.closed {
		return ErrClosed
	}
	return l.writeTailLocked(true)
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

// Close syncs and closes the log.
func (l *Log) Close() error {
	err := l.Sync()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitIdleLocked()
	if l.closed {
		return nil
	}
	l.closed = true
	l.cond.Broadcast()
	l.closeAll()
	if l.opts.Cache != nil {
		// Nothing can ask for this log's records any more; let the hand discard them.
		l.opts.Cache.dropBefore(l.cacheID, math.MaxUint32)
	}
	return err
}

// Rotate syncs the active segment, starts a new one and returns its id. FLUSHALL uses it: the
// FLUSHALL record goes first in the new segment and, once it is synced, DropSegmentsBefore
// removes everything older, which can no longer matter.
func (l *Log) Rotate() (uint32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.rotateLocked(); err != nil {
		return 0, err
	}
	return l.active.id, nil
}

// DropSegmentsBefore removes every segment older than id. Files are removed once the last
// reader using them is done; cached records of those segments are discarded as the cache's
// hand reaches them.
func (l *Log) DropSegmentsBefore(id uint32) {
	if l.opts.Cache != nil {
		l.opts.Cache.dropBefore(l.cacheID, id)
	}
	l.mu.Lock()
	var drop []*segment
	for sid, s := range l.segs {
		if sid < id {
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
	DiskBytes    int64 // bytes in segment files, including the active segment's appended bytes
	TailBytes    int64 // unsynced bytes held in memory
	Appends      uint64
	Writes       uint64
	Syncs        uint64
	BytesWritten uint64
	Corrupt      uint64
	TornBytesCut uint64
}

// Stats returns the log's counters.
func (l *Log) Stats() LogStats {
	l.mu.Lock()
	st := LogStats{Segments: len(l.segs), TailBytes: int64(len(l.tail))}
	for _, s := range l.segs {
		if s == l.active {
			st.DiskBytes += l.size
		} else if sz, err := s.rf.Size(); err == nil {
			st.DiskBytes += sz
		}
	}
	l.mu.Unlock()
	st.Appends = l.stats.appends.Load()
	st.Writes = l.stats.writes.Load()
	st.Syncs = l.stats.syncs.Load()
	st.BytesWritten = l.stats.bytes.Load()
	st.Corrupt = l.corrupt.Load()
	st.TornBytesCut = l.tornCuts.Load()
	return st
}
