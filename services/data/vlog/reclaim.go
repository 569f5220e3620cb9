package vlog

import (
	"fmt"
	"slices"
	"sync"
)

// Reclamation, the log's side: per-segment space accounting, a sequential reader of a sealed
// segment's records, and dropping a segment once nothing uses it. Which segment to rewrite and
// which of its records to keep is decided by package keyspace (keyspace/reclaim.go), which owns
// the index those decisions depend on; the log only provides these mechanisms.
//
// # Accounting
//
// Each segment counts its size, its dead bytes (records no index entry points at) and, of
// those, the bytes of records that are not puts (tombstones, expire and flush records), which
// are dead from the moment they are appended. The keyspace marks a put record dead when the
// index stops pointing at it: superseded (MarkDead: an overwrite, a record moved by
// reclamation) or removed (MarkRemoved: a delete, an expired key removed, a flush). Live bytes
// are size minus dead. A superseded put never hides anything (the newer record of its key
// does); a removed one may be what hides older versions of its key, since expiry writes no
// record, so a segment of superseded puts only can go unread.
//
// Chunk records (KindChunk, the pieces of a large value) are live when appended, like puts,
// and the keyspace marks one dead (MarkChunkDead) when no manifest of its key names it any
// more. Their dead bytes are counted apart again: replay never applies a chunk, so a dead
// chunk can neither hide nor resurrect anything, and it blocks no tombstone.
//
// The split between dead puts and dead non-puts matters because dead puts are what an older
// segment may resurrect: a tombstone can only be dropped when no older segment still holds a
// dead put (see MayHoldStaleBefore). Segments that were on disk when the log opened carry no
// split (replay from a checkpoint does not even read them): after Open the keyspace sets their
// live bytes from the index (SetLive), and all their dead bytes count as possible dead puts,
// dead chunks included, which only makes reclamation keep tombstones longer.
//
// # Dropping
//
// DropSegment removes a segment from the log at once (no new reader can find it), but its file
// goes only when the last reader in flight, and the last Pin, has let go of it: readers that
// took a location just before the move finish their read from the old file. Until the file's
// removal is durable (the directory synced) the segment is pending: it still counts as an older
// segment that may hold dead puts, because a crash before that point brings it back and replay
// reads it.

// segAcct is one segment's space accounting, guarded by the log's mu.
//
// Invariant: 0 <= expire <= nonPut, 0 <= removed, 0 <= chunk, nonPut+chunk+removed <= dead <=
// size, where size is the segment's size (segSizeLocked).
type segAcct struct {
	dead int64 // bytes of records no index entry points at
	// nonPut is the part of dead that is records other than puts and chunks, appended since
	// the log opened. The rest of dead, less chunk, may be puts: older versions of keys.
	nonPut int64
	// chunk is the part of dead known to be chunk records (marked by MarkChunkDead).
	chunk int64
	// expire is the part of nonPut that is expire records. Unlike tombstones, an expire
	// record of a live key may have to be kept whatever older segments hold.
	expire int64
	// removed is the part of dead that is puts of keys removed (deleted, expired, flushed)
	// rather than superseded by a newer record of the key, or of unknown cause. Such a put may
	// be what hides older versions of its key; a superseded one never is.
	removed int64
	// size caches a sealed segment's size; sized says it is set. Sealed segments never change.
	size  int64
	sized bool
}

// appended accounts for a record of kind k and n bytes appended to the segment.
func (a *segAcct) appended(k Kind, n int64) {
	if k != KindPut && k != KindSub {
		a.dead += n
		a.nonPut += n
	}
	if k == KindExpire {
		a.expire += n
	}
}

// reclaimState is a log's reclamation state, guarded by mu (not the log's mu: a segment's last
// reader may drop its reference anywhere). Lock order: the log's mu, then mu.
type reclaimState struct {
	mu sync.Mutex
	// pending holds the segments dropped whose files are not yet removed for good, by id,
	// with their sizes.
	pending map[uint32]int64
	// pins are the segments held by Pin.
	pins map[*pin]struct{}
}

type pin struct{ segs []*segment }

// segSizeLocked returns the bytes of records in s.
func (l *Log) segSizeLocked(s *segment) int64 {
	if o := l.openOf(s.id); o != nil {
		return o.size
	}
	if !s.acct.sized {
		n, err := s.rf.Size()
		if err != nil {
			// Unknown for now (asked again next time); the dead bytes keep the invariant.
			return s.acct.dead
		}
		s.acct.size, s.acct.sized = n, true
	}
	return s.acct.size
}

// MarkDead records that the index no longer points at the n-byte put record at loc because a
// newer record of the key superseded it. Every record must be marked at most once (by MarkDead
// or MarkRemoved); a location in a segment that is gone is ignored.
func (l *Log) MarkDead(loc Loc, n int64) { l.markDead(loc, n, deadSuperseded) }

// MarkRemoved is MarkDead for a put whose key was removed (deleted, expired, flushed): the
// record is the key's newest.
func (l *Log) MarkRemoved(loc Loc, n int64) { l.markDead(loc, n, deadRemoved) }

// MarkChunkDead records that no manifest of its key names the n-byte chunk record at loc any
// more. Like MarkDead, at most once per record; a location in a segment that is gone is ignored.
func (l *Log) MarkChunkDead(loc Loc, n int64) { l.markDead(loc, n, deadChunk) }

// Why a record died, for markDead.
const (
	deadSuperseded = iota
	deadRemoved
	deadChunk
)

func (l *Log) markDead(loc Loc, n int64, why int) {
	l.mu.Lock()
	if s := l.segs[loc.Seg]; s != nil {
		if invariants && l.exactAcct && (loc.Off < SegmentHeaderSize || int64(loc.Off)+n > l.segSizeLocked(s) || n > l.segSizeLocked(s)-s.acct.dead) {
			// A record marked dead twice, or one that is not there: the keyspace's
			// accounting is wrong, and the collector would trust it.
			l.mu.Unlock()
			panic(fmt.Sprintf("vlog invariant: %s: %d bytes at %v marked dead, segment of %d bytes with %d dead",
				l.opts.Dir, n, loc, l.segSizeLocked(s), s.acct.dead))
		}
		n = min(n, l.segSizeLocked(s)-s.acct.dead)
		s.acct.dead += n
		switch why {
		case deadRemoved:
			s.acct.removed += n
		case deadChunk:
			s.acct.chunk += n
		}
	}
	l.mu.Unlock()
}

// MarkAllDead records that every key was removed: the index points at no record at all.
func (l *Log) MarkAllDead() {
	l.mu.Lock()
	for _, s := range l.segs {
		size := l.segSizeLocked(s)
		s.acct.removed += size - s.acct.dead
		s.acct.dead = size
	}
	l.mu.Unlock()
}

// SetLive sets every segment's live bytes, live[id] (absent: none), as the keyspace computes
// them from its index after Open. Dead bytes not known to be non-puts count as possible puts.
// exact says live is exact (every manifest could be read): the invariants build then checks
// that no record is marked dead twice from now on.
func (l *Log) SetLive(live map[uint32]int64, exact bool) {
	l.mu.Lock()
	l.exactAcct = exact
	for id, s := range l.segs {
		size := l.segSizeLocked(s)
		s.acct.dead = max(0, size-live[id])
		s.acct.nonPut = min(s.acct.nonPut, s.acct.dead)
		s.acct.expire = min(s.acct.expire, s.acct.nonPut)
		s.acct.chunk = min(s.acct.chunk, s.acct.dead-s.acct.nonPut)
		s.acct.removed = s.acct.dead - s.acct.nonPut - s.acct.chunk // causes unknown
	}
	l.mu.Unlock()
}

// SegmentStat is one segment's space accounting.
type SegmentStat struct {
	ID   uint32
	Size int64 // bytes of records
	Dead int64 // bytes of records the index does not point at
	// Stale is the part of Dead that may be put records: older versions of keys, which a
	// tombstone in a later segment may still have to hide.
	Stale int64
	// Chunks is the part of Dead known to be chunk records: they hide nothing and nothing can
	// resurrect them, so they always go. Dead-Stale-Chunks are tombstones, expire and flush
	// records.
	Chunks int64
	// Expire is the part of Dead known to be expire records, and Removed the part of Stale
	// that may be puts of removed keys (not superseded): exact for segments created since
	// the log opened, which are the only ones whose appends it saw.
	Expire, Removed int64
	// Active marks a segment with bytes not yet synced: the one being appended to, or a full
	// one not yet sealed. Never reclaimed.
	Active bool
	// Pending marks a dropped segment whose file is not yet removed for good (Size is its
	// size; it counts as stale).
	Pending bool
}

// Live is the segment's live bytes.
func (s SegmentStat) Live() int64 { return s.Size - s.Dead }

// SegmentStats returns every segment's accounting, pending ones included, by ascending id.
func (l *Log) SegmentStats() []SegmentStat {
	l.mu.Lock()
	out := make([]SegmentStat, 0, len(l.segs))
	for id, s := range l.segs {
		out = append(out, l.statLocked(id, s))
	}
	l.rc.mu.Lock()
	for id, n := range l.rc.pending {
		out = append(out, SegmentStat{ID: id, Size: n, Dead: n, Stale: n, Pending: true})
	}
	l.rc.mu.Unlock()
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b SegmentStat) int { return int(int64(a.ID) - int64(b.ID)) })
	return out
}

func (l *Log) statLocked(id uint32, s *segment) SegmentStat {
	return SegmentStat{
		ID: id, Size: l.segSizeLocked(s), Dead: s.acct.dead,
		Stale: s.acct.dead - s.acct.nonPut - s.acct.chunk, Chunks: s.acct.chunk,
		Expire: s.acct.expire, Removed: s.acct.removed,
		Active: l.openOf(id) != nil,
	}
}

// SegmentStat returns segment id's accounting, or false when the log has no such segment.
func (l *Log) SegmentStat(id uint32) (SegmentStat, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.segs[id]
	if s == nil {
		return SegmentStat{}, false
	}
	return l.statLocked(id, s), true
}

// SpaceStats are a log's space figures.
type SpaceStats struct {
	LiveBytes int64 // bytes of records the index points at
	DeadBytes int64 // bytes of records it does not (reclamation's work)
	// PendingBytes are the bytes of dropped segments whose files readers or pins still hold.
	PendingBytes    int64
	PendingSegments int
}

// SpaceStats returns the log's live, dead and pending bytes.
func (l *Log) SpaceStats() SpaceStats {
	var st SpaceStats
	l.mu.Lock()
	for _, s := range l.segs {
		size := l.segSizeLocked(s)
		st.LiveBytes += size - s.acct.dead
		st.DeadBytes += s.acct.dead
	}
	l.rc.mu.Lock()
	for _, n := range l.rc.pending {
		st.PendingBytes += n
	}
	st.PendingSegments = len(l.rc.pending)
	l.rc.mu.Unlock()
	l.mu.Unlock()
	return st
}

// HasSegment reports whether segment id is part of the log (not dropped).
func (l *Log) HasSegment(id uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.segs[id] != nil
}

// MayHoldStaleBefore reports whether a segment older than id may still hold a dead put record,
// on disk or after a crash: a segment of the log with dead bytes that may be puts, or a dropped
// segment whose file is not yet removed for good. While it is true, a record that hides older
// versions of a key (a tombstone, an expire or flush record) in segment id must be kept.
func (l *Log) MayHoldStaleBefore(id uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for sid, s := range l.segs {
		if sid < id && s.acct.dead > s.acct.nonPut+s.acct.chunk {
			return true
		}
	}
	l.rc.mu.Lock()
	defer l.rc.mu.Unlock()
	for sid := range l.rc.pending {
		if sid < id {
			return true
		}
	}
	return false
}

// dropLocked takes s out of the log and marks it pending until its file is removed for good;
// the caller releases the returned segment (the log's own reference) outside mu.
func (l *Log) dropLocked(s *segment) *segment {
	size := l.segSizeLocked(s)
	delete(l.segs, s.id)
	s.remove = true
	s.removals = &l.removals
	l.rc.mu.Lock()
	if l.rc.pending == nil {
		l.rc.pending = map[uint32]int64{}
	}
	l.rc.pending[s.id] = size
	l.rc.mu.Unlock()
	id := s.id
	// Until its last reader lets go, a dropped segment can still be read by one that took a
	// location in it before the drop, or pinned it (PinSegments).
	if l.dropped == nil {
		l.dropped = map[uint32]*segment{}
	}
	l.dropped[id] = s
	s.unlist = func() {
		l.mu.Lock()
		if l.dropped[id] == s {
			delete(l.dropped, id)
		}
		l.mu.Unlock()
	}
	s.gone = func() {
		l.rc.mu.Lock()
		delete(l.rc.pending, id)
		l.rc.mu.Unlock()
	}
	return s
}

// DropSegment removes sealed segment id from the log. Its file is removed once the readers in
// flight and the pins holding it let go. The caller has made durable whatever replaces the
// segment's records (copies, and every record that made the others dead).
func (l *Log) DropSegment(id uint32) error {
	release, err := l.DetachSegment(id)
	if err != nil {
		return err
	}
	release()
	return nil
}

// DetachSegment is DropSegment in two steps: the segment leaves the log now (no new reader
// finds it), and release lets go of the log's own reference, which removes the file when no
// reader or pin holds it. Removing the file is an unlink and a directory sync, tens of
// milliseconds on a busy disk: a caller that detaches under a lock writers wait for (the
// keyspace's collector holds the shard's) calls release after letting go of it. release must be
// called exactly once.
func (l *Log) DetachSegment(id uint32) (release func(), err error) {
	l.mu.Lock()
	s := l.segs[id]
	if s == nil || l.openOf(id) != nil {
		l.mu.Unlock()
		return nil, fmt.Errorf("vlog: cannot drop segment %d: not a sealed segment of %s", id, l.opts.Dir)
	}
	l.dropLocked(s)
	oldest := uint32(0)
	for sid := range l.segs {
		if oldest == 0 || sid < oldest {
			oldest = sid
		}
	}
	l.mu.Unlock()
	if c := l.opts.Cache; c != nil && oldest > id {
		// Cached records of segments before the oldest left are useless: discard them early.
		c.dropBefore(l.cacheID, oldest)
	}
	return s.release, nil
}

// Pin keeps the files of the segments that exist now with ids from from on, so that a
// replication stream (or a follower's full resync) can read them to their end even if
// reclamation or FLUSHALL drops them meanwhile; the returned function releases the pin. A
// dropped segment whose file a pin keeps stays pending (see MayHoldStaleBefore). A stream that
// moves on to segments created later pins those too.
func (l *Log) Pin(from uint32) (unpin func()) {
	p := &pin{}
	l.mu.Lock()
	for id, s := range l.segs {
		if id >= from {
			s.acquire()
			p.segs = append(p.segs, s)
		}
	}
	l.rc.mu.Lock()
	if l.rc.pins == nil {
		l.rc.pins = map[*pin]struct{}{}
	}
	l.rc.pins[p] = struct{}{}
	l.rc.mu.Unlock()
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.rc.mu.Lock()
			delete(l.rc.pins, p)
			l.rc.mu.Unlock()
			for _, s := range p.segs {
				s.release()
			}
		})
	}
}

// PinSegments keeps the files of segments ids while a reader uses them, as a read in flight
// does, even if reclamation drops them meanwhile; the returned function lets go. It reports
// false, pinning nothing, when one of them is gone already (dropped, with no reader or Pin
// keeping its file).
func (l *Log) PinSegments(ids []uint32) (unpin func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	segs := make([]*segment, 0, len(ids))
	for _, id := range ids {
		s := l.segs[id]
		if s != nil {
			s.acquire()
		} else if s = l.dropped[id]; s == nil || !s.tryAcquire() {
			// Gone, unless a reader or a pin (a snapshot's) still holds its file.
			for _, p := range segs {
				p.release()
			}
			return nil, false
		}
		segs = append(segs, s)
	}
	return func() {
		for _, s := range segs {
			s.release()
		}
	}, true
}

// SegmentScan reads a sealed segment's records in order, verifying each, for reclamation. It
// reads through the page cache, not with O_DIRECT: a segment is scanned once, sequentially, and
// removed right after, which frees its cached pages too.
type SegmentScan struct {
	l    *Log
	seg  *segment
	sc   scanner
	off  int64
	recs []Record
	// Corrupt counts records that failed verification and were skipped, as replay skips them
	// in a sealed segment: the index never points into them.
	Corrupt int
}

// ScanSegment starts reading sealed segment id. The segment's file stays while the scan is open.
func (l *Log) ScanSegment(id uint32) (*SegmentScan, error) {
	l.mu.Lock()
	s := l.segs[id]
	if s == nil || l.openOf(id) != nil {
		l.mu.Unlock()
		return nil, fmt.Errorf("vlog: cannot scan segment %d: not a sealed segment of %s", id, l.opts.Dir)
	}
	s.acquire()
	l.mu.Unlock()
	f, err := l.opts.FS.Open(s.path)
	if err != nil {
		s.release()
		return nil, fmt.Errorf("vlog: %w", err)
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		s.release()
		return nil, fmt.Errorf("vlog: %w", err)
	}
	return &SegmentScan{l: l, seg: s, sc: scanner{f: f, size: size}, off: SegmentHeaderSize}, nil
}

// Offset is how far the scan has read.
func (sc *SegmentScan) Offset() int64 { return sc.off }

// Next returns the next records, about maxBytes of them (at least one unless the segment is
// done, when it returns none). They stay valid until the next call.
func (sc *SegmentScan) Next(maxBytes int) ([]Record, error) {
	sc.recs = sc.recs[:0]
	var used int64
	for sc.off < sc.sc.size && used < int64(maxBytes) {
		first := len(sc.recs) == 0
		r, ok, err := sc.peek(sc.off, first, maxBytes)
		if err != nil {
			return nil, err
		}
		if !ok {
			if first {
				// A bad record: skip to the next offset where a whole record verifies, as
				// replay does in a sealed segment.
				next := sc.sc.resync(sc.off + 1)
				sc.Corrupt++
				sc.l.log.Error("reclamation skipped a corrupt record", "segment", sc.seg.path, "offset", sc.off, "skipped_bytes", next-sc.off)
				sc.off = next
				continue
			}
			break // needs another window: the records so far must stay valid
		}
		sc.recs = append(sc.recs, r)
		sc.off += r.Size()
		used += r.Size()
	}
	return sc.recs, nil
}

// peek decodes the record at off from the current window. It reads a new window only when
// mayLoad is set; ok is false when the record needs one and mayLoad is not, or (with mayLoad)
// when the record does not verify.
func (sc *SegmentScan) peek(off int64, mayLoad bool, chunk int) (Record, bool, error) {
	s := &sc.sc
	inWindow := func(n int64) bool { return off >= s.start && off+n <= s.start+int64(len(s.buf)) }
	if !inWindow(HeaderSize) {
		if !mayLoad {
			return Record{}, false, nil
		}
		if _, err := s.window(off, max(chunk, HeaderSize)); err != nil {
			return Record{}, false, fmt.Errorf("vlog: reclaim %s: %w", sc.seg.path, err)
		}
	}
	h, err := DecodeHeader(s.buf[off-s.start:])
	if err != nil || off+h.Size() > s.size {
		return Record{}, false, nil
	}
	if !inWindow(h.Size()) {
		if !mayLoad {
			return Record{}, false, nil
		}
		if _, err := s.window(off, int(h.Size())); err != nil {
			return Record{}, false, fmt.Errorf("vlog: reclaim %s: %w", sc.seg.path, err)
		}
		if !inWindow(h.Size()) {
			return Record{}, false, nil
		}
	}
	r, err := DecodeRecord(s.buf[off-s.start:])
	if err != nil {
		return Record{}, false, nil
	}
	r.Loc = Loc{Seg: sc.seg.id, Off: uint32(off)}
	return r, true, nil
}

// Close ends the scan and lets go of the segment.
func (sc *SegmentScan) Close() {
	if sc.seg == nil {
		return
	}
	sc.sc.f.Close()
	sc.seg.release()
	sc.seg = nil
}
