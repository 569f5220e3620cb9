package keyspace

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// Reclamation gives the space of dead records back: a background collector per keyspace picks,
// in each shard, the sealed segment with the most reclaimable bytes, copies the records that
// still matter to the shard's active segment, makes the copies durable and drops the segment.
// Nothing is scheduled by the operator; reclaim-rate bounds the I/O it spends (see budget: the
// bound gives way as disk use nears twice the live data).
//
// # Accounting
//
// Every segment counts its dead bytes (vlog/reclaim.go). A put record becomes dead when the
// index stops pointing at it: superseded (applyLocked overwrites, reclamation's moves) or
// removed (removeLocked: deletes, lazy and active expiry, FLUSHDB); other records are dead from
// the start. The two causes are counted apart: a superseded put never hides anything (the newer
// record of its key does), a removed one may. The chunks of a large value die with its manifest,
// or when an edit or a move replaces them; they are counted apart again, since they hide
// nothing (chunked.go says when each is marked). After Open the live bytes of each segment are
// recomputed from the index (startReclaim), so the figures are exact after a restart whether the
// index came from a full replay or from a checkpoint and the log tail.
//
// # Choosing a segment
//
// A segment's gain is what collecting it frees. Dead puts always go; a record that hides older
// versions of a key (a tombstone, an expire or flush record, or the put of a key removed by
// expiry, which hides older puts because expiry writes no record) can go only when no older
// segment may still hold a dead put, on disk or after a crash ("blocked" otherwise; see
// blockedLocked). So a blocked segment's gain is its dead puts only, and the oldest segment
// holding dead puts is also credited with the non-put bytes its collection would unblock, so
// that tombstones stuck behind a mostly-live old segment are freed in the end. A segment is
// collected when its gain is at least half its size, or at least a fifth of it while the shard's
// disk bytes exceed 1.5 times its live bytes; among those, the highest ratio first. Greedy by
// ratio keeps the copying per byte freed low; the pressure rule keeps a shard whose garbage is
// spread thin within its space bound. A segment whose collection would kill, in manifests of
// large values moved out of it, half as many bytes elsewhere as it frees is deferred until it
// holds more garbage (errReclaimDeferred, planRelocation in chunked.go), so that collecting
// always makes progress.
//
// # Collecting a segment
//
// The collector reads the segment sequentially (vlog.SegmentScan) and handles its records in
// batches under the shard lock, like any writer:
//
//   - A put whose key's index entry still points at exactly this record (the compare-and-swap)
//     is appended again, same version and type, with the entry's current expire-at, and the
//     entry is moved to the copy. A put the entry no longer points at is dropped if the key
//     is live (a newer record defines it), else it becomes a tombstone of the same version when
//     the segment is blocked (it may be what hides older puts of a key that expired).
//   - A tombstone is kept (appended again, same version) only if the segment is blocked and the
//     key is not live; a flush record only if blocked.
//   - An expire record is kept (with the current expire-at) if its key is live and the key's
//     put lies in an older segment (the put carries an older expire-at), or as a tombstone if
//     the key is not live and the segment is blocked.
//
// A chunk record, and the manifest of a chunked value the index points at, are not copied where
// they are found: the collector notes their keys, and once the whole segment is read it moves,
// per key, the chunks the key's current manifest names in the segment and the manifest itself
// (relocateChunked, chunked.go), by the same compare-and-swap. A dead chunk is dropped: it hides
// nothing. A manifest found live that is no longer the key's newest record once the moves are
// done (the key expired meanwhile, which writes no record) is kept as a tombstone of its
// version when the segment is blocked, like the put of any expired key. The queue of manifests
// of removed chunked values is read first (drainLocked), so that their chunks count as dead, and
// the segment is not dropped while a manifest in it is still queued.
//
// A key found expired is removed on the way, as lazy expiry would; since that may make a put in
// an older segment dead, "blocked" is asked again after it. A segment created since Open whose
// records are all dead and none of which can hide anything (no expire records; and no older
// segment holding dead puts, or only superseded puts and chunks in it) is dropped without being
// read.
//
// Then the log is synced (the
// copies and every record a decision relied on are durable) and, under the shard lock, the
// segment is dropped if its live bytes reached zero. Its file is removed when the last reader
// in flight, or a replication pin (vlog.Log.Pin), lets go of it.
//
// Copies keep their versions, so replay resolves an original and its copy like any two records
// of a key: the newer version wins, and of equal versions the later one, which is the copy.
// A copy carries the expire-at current when it was made, so it also holds every expire record
// that precedes it in the log; replay therefore applies a put that is older than an expire record
// it follows (replayLocked keeps the put's version, not the expire record's, as the entry's),
// and kept expire records are written with the current expire-at too. Flush records are applied
// by version (replayFlushLocked), because a copied flush record lands after newer records of the
// keys it flushed. Records that hide older versions of a key that is not live are all kept as
// tombstones of their own version. A crash after the copies are appended but
// before the sync leaves a prefix of them: the originals are still there. A crash after the
// sync but before the drop, or after the file's removal but before the directory sync, leaves
// originals and copies, which replay resolves. Nothing is lost and nothing resurrected: a
// record that hides a key's older puts is dropped only when none may be replayed.
//
// Index checkpoints (checkpoint.go) need no rule of their own. A checkpoint may hold a key
// whose tombstone reclamation later drops, but only once no older segment holds a dead put,
// and the key's put in the checkpoint's entry was dead, so its segment is gone by then: loading
// drops entries that point into missing segments. Copies made after a checkpoint keep versions
// at or below its version, and tail replay relocates entries to them.
//
// Rejected: per-key liveness checks against a persisted key set per segment (memory per key
// beyond the index's budget), and hole punching inside segments (file systems differ, and the
// records around the holes would still need compaction).
const (
	reclaimInterval    = time.Second // how often an idle collector looks for work
	reclaimDeadRatio   = 0.5         // gain/size at which a segment is collected anyway
	reclaimPressure    = 1.5         // disk/live ratio of a shard above which...
	reclaimPressureMin = 0.2         // ...a segment with this gain/size is collected too
	// reclaimBatch bounds the bytes of records handled under one hold of the shard lock: a
	// reader of the shard waits at most that long for the collector.
	reclaimBatch = 64 << 10
	reclaimBurst = 100 * time.Millisecond
)

var (
	errReclaimStopped = errors.New("keyspace: reclamation stopped by close")
	errReclaimOff     = errors.New("keyspace: reclamation turned off")
	// errReclaimLater: the segment cannot go yet (a manifest of a chunked value removed
	// meanwhile is still to be read); the next round tries again.
	errReclaimLater = errors.New("keyspace: segment not reclaimed yet")
	// errReclaimDeferred: collecting the segment would kill about as many bytes elsewhere as it
	// frees (planRelocation); it waits until it holds more dead bytes.
	errReclaimDeferred = errors.New("keyspace: segment not worth reclaiming yet")
)

// reclaimer is a keyspace's collector state.
type reclaimer struct {
	rate atomic.Int64 // bytes per second read and written; 0 turns the collector off
	wake chan struct{}
	// mu serialises collections (the background loop and tests) and guards next.
	mu   sync.Mutex
	next time.Time // the rate limiter's next free instant
	// skip[shard] holds segments the collector leaves alone: ones holding records of a
	// database beyond Options.Databases (replay keeps those keys out of reach, and a restart
	// with the old setting must still find them), and ones whose live bytes did not reach zero.
	skipMu sync.Mutex
	skip   []map[uint32]bool
	// deferred[shard] maps segments whose collection was deferred (errReclaimDeferred) to
	// the dead bytes they must reach before the policy picks them again; guarded by skipMu.
	deferred []map[uint32]int64
	// fresh[shard] is the first segment id created after Open. Only such segments may be
	// dropped unread when nothing in them is live: older ones may hold records of databases
	// beyond Options.Databases, which the index does not count.
	fresh []uint32

	segments, scanned, moved, freed, kept atomic.Uint64
	// cpu is the CPU time the collector's thread used collecting (ns).
	cpu atomic.Int64
	// pace is the state of budget, guarded by mu.
	pace pacer
	// paced is the last budget computed and appendRate the pacer's rate, for INFO, which must
	// not wait for mu (a collection holds it throughout).
	paced, appendRate atomic.Int64
}

// pacer follows what reclamation's pace depends on: how fast the logs take bytes other than the
// collector's (the garbage of tomorrow, under overwrites), and what collecting costs per byte
// freed. Both are moving averages over the collector's samples.
type pacer struct {
	at       time.Time
	appended uint64  // bytes the logs had written at the last sample
	moved    uint64  // of which the collector's own
	rate     float64 // bytes per second appended by clients
	cost     float64 // bytes read and written per byte freed
}

// ReclaimStats describe reclamation for INFO.
type ReclaimStats struct {
	Rate         int64 // bytes per second; 0 = off
	LiveBytes    int64 // bytes of records the index points at
	DeadBytes    int64 // bytes of records it does not
	PendingBytes int64 // dropped segments whose files readers or pins still hold
	Segments     uint64
	BytesScanned uint64 // segment bytes read by the collector
	BytesMoved   uint64 // bytes of records it wrote again (live puts and kept tombstones)
	BytesFreed   uint64 // bytes of the segments it dropped
	RecordsKept  uint64 // tombstones, expire and flush records written again
	CPU          time.Duration
	Paced        int64 // the pace it keeps now, bytes per second of I/O (-1: unbounded)
	AppendRate   int64 // bytes per second the logs take from clients (moving average)
}

// startReclaim computes every segment's live bytes from the index and starts the collector.
func (ks *Keyspace) startReclaim() {
	ks.rc.wake = make(chan struct{}, 1)
	ks.rc.skip = make([]map[uint32]bool, len(ks.shards))
	ks.rc.deferred = make([]map[uint32]int64, len(ks.shards))
	ks.rc.fresh = make([]uint32, len(ks.shards))
	ks.rc.rate.Store(ks.opts.ReclaimRate)
	var wg sync.WaitGroup
	for _, s := range ks.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.mu.Lock()
			defer s.mu.Unlock()
			live, err := ks.indexLiveLocked(s)
			if err != nil {
				ks.log.Error("manifests of chunked values unreadable; their chunks are not counted live", "shard", s.id, "err", err)
			}
			s.log.SetLive(live, err == nil)
			s.deadMans = nil // counted dead by SetLive already
			if segs := s.log.SegmentStats(); len(segs) > 0 {
				ks.rc.fresh[s.id] = segs[len(segs)-1].ID + 1
			}
		}()
	}
	wg.Wait()
	ks.wg.Add(1)
	go ks.reclaimLoop()
}

// SetReclaimRate changes the collector's budget in bytes per second (0 stops it).
func (ks *Keyspace) SetReclaimRate(n int64) {
	ks.rc.rate.Store(n)
	select {
	case ks.rc.wake <- struct{}{}:
	default:
	}
}

// markDeadLocked records that the index no longer points at e's record because a newer record
// of the key replaces it; markRemovedLocked, because the key is being removed. The manifest of
// a chunked value is queued so that the collector marks its chunks dead (chunked.go).
func (s *shard) markDeadLocked(e *entry) {
	if s.log != nil { // nil during replay: startReclaim recomputes everything after it
		n := s.recSize(e)
		s.log.MarkDead(vlog.Loc{Seg: e.seg, Off: e.off}, n)
		if e.chunked() {
			s.queueDeadLocked(e, n)
		}
	}
}

func (s *shard) markRemovedLocked(e *entry) {
	if s.log != nil {
		n := s.recSize(e)
		s.log.MarkRemoved(vlog.Loc{Seg: e.seg, Off: e.off}, n)
		if e.chunked() {
			s.queueDeadLocked(e, n)
		}
	}
}

// markAllDeadLocked records that the index points at nothing any more, chunks included; the
// caller clears the index (clearLocked), which empties the dead-manifest queue.
func (s *shard) markAllDeadLocked() {
	if s.log != nil {
		s.log.MarkAllDead()
	}
}

// replayFlushLocked applies a FLUSHDB (all false) or FLUSHALL record during recovery: it
// removes the entries older than the record. Reclamation may copy a flush record forward, past
// newer records of the keys it flushed, so "older" is by version, not by position. prev is the
// highest version replayed before this record: when the record is newer than all of them (any
// record never copied), every entry is older and the fast paths apply.
func (s *shard) replayFlushLocked(db uint8, all bool, version, prev uint64) {
	if version > prev {
		if all {
			s.clearLocked()
		} else {
			s.flushDBLocked(db)
		}
		return
	}
	for i := uint32(0); i < s.ix.high; i++ {
		if e := s.ix.entry(i); e.live() && (all || e.db() == db) && s.replayVer.get(i) < version {
			s.removeLocked(i, s.ix.slotOf(i))
		}
	}
}

func (ks *Keyspace) reclaimLoop() {
	// The collector keeps its thread, so that the thread's CPU clock measures what collecting
	// costs (INFO's lavik_reclaim_cpu_us).
	runtime.LockOSThread()
	ks.every(reclaimInterval, ks.rc.wake, func() bool {
		// The dead chunks of removed large values are counted even while the collector is off,
		// so that the figures INFO shows stay exact and the queue stays short.
		defer ks.latencyEnd("reclaim-cycle", ks.latencyStart())
		for _, s := range ks.shards {
			ks.drainDeadManifests(s)
		}
		// Go on while there is work: one segment per shard per round, so shards take turns.
		for ks.rc.rate.Load() > 0 {
			done := 0
			for _, s := range ks.shards {
				if s.log.WriteErr() != nil {
					continue // the disk refuses writes; Retry in syncLoop clears it
				}
				id, ok := ks.pickVictim(s)
				if !ok {
					continue
				}
				t0 := threadCPU()
				err := ks.reclaimSegment(s, id, true, false)
				ks.rc.cpu.Add(int64(threadCPU() - t0))
				switch {
				case errors.Is(err, errReclaimStopped):
					return false
				case errors.Is(err, errReclaimOff), errors.Is(err, errReclaimLater), errors.Is(err, errReclaimDeferred):
				case err != nil:
					ks.log.Warn("reclamation failed", "shard", s.id, "segment", id, "err", err)
				default:
					done++
				}
			}
			if done == 0 {
				break
			}
		}
		return true
	})
}

// pickVictim chooses the segment of s to collect next (see the policy above).
func (ks *Keyspace) pickVictim(s *shard) (uint32, bool) {
	ks.drainDeadManifests(s)
	segs := s.log.SegmentStats()
	ks.rc.skipMu.Lock()
	skip := maps.Clone(ks.rc.skip[s.id])
	deferred := ks.rc.deferred[s.id]
	for id, need := range deferred {
		i, found := slices.BinarySearchFunc(segs, id, func(g vlog.SegmentStat, id uint32) int { return cmp.Compare(g.ID, id) })
		switch {
		case !found || segs[i].Pending:
			delete(deferred, id)
		case segs[i].Dead < need:
			if skip == nil {
				skip = map[uint32]bool{}
			}
			skip[id] = true
		}
	}
	ks.rc.skipMu.Unlock()
	var live, disk int64
	blockers := make([]int, 0, 2) // indexes of the first two segments that may hold dead puts
	for i, g := range segs {
		if !g.Pending {
			live += g.Live()
		}
		disk += g.Size
		if (g.Pending || g.Stale > 0) && len(blockers) < 2 {
			blockers = append(blockers, i)
		}
	}
	pressure := float64(disk) > reclaimPressure*float64(live)
	best, bestRatio := uint32(0), 0.0
	for i, g := range segs {
		if g.Active || g.Pending || skip[g.ID] {
			continue
		}
		gain := g.Dead
		if len(blockers) > 0 && i > blockers[0] {
			gain = g.Stale + g.Chunks
		}
		if len(blockers) > 0 && i == blockers[0] {
			// Credit the non-put bytes that collecting this segment would unblock.
			end := len(segs) - 1
			if len(blockers) > 1 {
				end = blockers[1]
			}
			for _, t := range segs[i+1 : end+1] {
				if !t.Active && !t.Pending {
					gain += t.Dead - t.Stale - t.Chunks
				}
			}
		}
		ratio := 1.0
		if g.Size > 0 {
			ratio = float64(gain) / float64(g.Size)
		}
		if ratio < reclaimDeadRatio && !(pressure && ratio >= reclaimPressureMin) {
			continue
		}
		if ratio > bestRatio {
			best, bestRatio = g.ID, ratio
		}
	}
	return best, bestRatio > 0
}

// budget returns the bytes per second of I/O the collector may spend now. The pace follows the
// garbage clients make: under overwrites every byte appended makes an older one dead, so the
// collector keeps up by freeing as fast as clients append, at the I/O each freed byte has cost
// (the segment read, the live records written again). With little garbage on disk (at most 1.25
// times the live bytes) it goes at half that, and with none being made it still frees what is
// left, at reclaimFloor. Reads never have to share the disk with a collector working ahead of
// the garbage. The configured rate caps the pace while the keyspace's segments take at most 1.5
// times its live bytes; past that the cap rises without bound as they approach twice (0.5/(2-r)
// times at a ratio r), and at twice the pace is unbounded (-1): the space bound is what
// reclamation promises, the pace a courtesy to reads.
func (ks *Keyspace) budget(rate int64) int64 {
	var disk, live int64
	for _, s := range ks.shards {
		st := s.log.SpaceStats()
		disk += st.LiveBytes + st.DeadBytes
		live += st.LiveBytes
	}
	r := float64(disk) / float64(max(live, 1))
	if r >= 2 {
		ks.rc.paced.Store(-1)
		return -1
	}
	p := ks.samplePace()
	out := paceFor(p.rate, p.cost, r, rate)
	ks.rc.paced.Store(out)
	return out
}

// paceFor is budget's rule: the pace for clients appending rate bytes/s, collections costing
// cost bytes of I/O per byte freed, segments taking r times the live bytes, and the configured
// cap.
func paceFor(rate, cost, r float64, cap int64) int64 {
	if r >= 2 {
		return -1
	}
	pace := rate * cost
	if r <= 1.25 {
		pace /= 2
	}
	pace = max(pace, reclaimFloor)
	limit := float64(cap)
	if r > reclaimPressure {
		limit *= (2 - reclaimPressure) / (2 - r)
		pace = max(pace, limit) // behind: all the cap allows
	}
	return int64(min(pace, limit))
}

// reclaimFloor is the pace of a collector with no new garbage to keep up with: what is left
// goes, slowly.
const reclaimFloor = 4 << 20

// samplePace updates the moving averages of the pacer, at most every 100 ms. ks.rc.mu is held.
func (ks *Keyspace) samplePace() pacer {
	p := &ks.rc.pace
	now := time.Now()
	var appended uint64
	for _, s := range ks.shards {
		appended += s.log.Stats().BytesWritten
	}
	moved := ks.rc.moved.Load()
	if p.at.IsZero() {
		p.at, p.appended, p.moved, p.cost = now, appended, moved, 3
		return *p
	}
	dt := now.Sub(p.at).Seconds()
	if dt < 0.1 {
		return *p
	}
	clients := float64(appended-p.appended) - float64(moved-p.moved)
	// A second's worth of samples weighs as much as the past.
	w := min(dt, 1)
	p.rate = (1-w)*p.rate + w*max(clients, 0)/dt
	if freed := ks.rc.freed.Load(); freed > 0 {
		p.cost = float64(ks.rc.scanned.Load()+moved) / float64(freed)
	}
	p.at, p.appended, p.moved = now, appended, moved
	ks.rc.appendRate.Store(int64(p.rate))
	return *p
}

// blockedLocked reports whether records of segment id that hide older versions of keys must be
// kept: an older segment may still hold a dead put (in the log, or dropped but with its file
// not yet removed for good).
func (ks *Keyspace) blockedLocked(s *shard, id uint32) bool {
	return s.log.MayHoldStaleBefore(id)
}

func (ks *Keyspace) skipSegment(s *shard, id uint32) {
	ks.rc.skipMu.Lock()
	if ks.rc.skip[s.id] == nil {
		ks.rc.skip[s.id] = map[uint32]bool{}
	}
	ks.rc.skip[s.id][id] = true
	ks.rc.skipMu.Unlock()
}

func (ks *Keyspace) skipped(s *shard, id uint32) bool {
	ks.rc.skipMu.Lock()
	defer ks.rc.skipMu.Unlock()
	return ks.rc.skip[s.id][id]
}

// reclaimSegment collects sealed segment id of s; limit applies the rate limit. It returns nil
// without doing anything when the segment is gone (FLUSHALL) or left alone. Unless force is
// set, it gives up on a segment whose collection would not make progress (errReclaimDeferred,
// see planRelocation): the policy's collections must, or it could go on for ever.
func (ks *Keyspace) reclaimSegment(s *shard, id uint32, limit, force bool) error {
	ks.rc.mu.Lock()
	defer ks.rc.mu.Unlock()
	if ks.skipped(s, id) {
		return nil
	}
	ks.drainLocked(s)
	s.mu.Lock()
	st, ok := s.log.SegmentStat(id)
	if !ok || st.Active {
		s.mu.Unlock()
		return nil
	}
	// Nothing live and nothing to keep: no need to read it. That is, no expire record that may
	// belong to a live key, and either no older segment that may hold dead puts, or nothing
	// here that may hide older versions (no tombstones, expire or flush records, no puts of
	// removed keys: every record was superseded by a newer one of its key, or is a chunk).
	// Only segments created since Open have exact figures.
	readless := st.Live() == 0 && st.Expire == 0 && id >= ks.rc.fresh[s.id] &&
		(st.Dead == st.Stale+st.Chunks && st.Removed == 0 || !ks.blockedLocked(s, id))
	s.mu.Unlock()
	if !readless {
		gain := st.Dead
		if force {
			gain = -1
		}
		if err := ks.rewriteSegment(s, id, limit, gain); err != nil {
			return err
		}
	}
	// The copies, and every record that made a dropped one dead, must be durable before the
	// segment goes; so must the other parts of such a record's transaction, in every shard,
	// or a recovery could find the transaction incomplete and want the dropped records back.
	if err := ks.syncAll(); err != nil {
		return fmt.Errorf("keyspace: reclaim segment %d of shard %d: %w", id, s.id, err)
	}
	ks.drainLocked(s) // chunked values removed while the segment was read
	release, err := ks.detachSegment(s, id)
	if release != nil {
		// The file goes after the shard's lock: its unlink and the directory's sync took up
		// to a tenth of a second here, and every writer of the shard (a follower's applier,
		// which locks every shard, stopped whole) waited for it.
		release()
	}
	return err
}

// detachSegment drops segment id from shard s's log once reclamation has emptied it, under the
// shard's lock; release (nil when nothing was dropped) removes its file, after the lock.
func (ks *Keyspace) detachSegment(s *shard, id uint32) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.log.SegmentStat(id)
	if !ok {
		return nil, nil // FLUSHALL dropped it meanwhile
	}
	if s.queuedInLocked(id) || st.Live() != 0 && len(s.deadMans) > 0 {
		// A chunked value removed since the drain: its manifest in this segment must be read
		// before the segment goes, and its chunks may be what is live here. Next round.
		return nil, errReclaimLater
	}
	if st.Live() != 0 {
		ks.skipSegment(s, id)
		ks.log.Error("segment still holds live records after reclamation; left alone", "shard", s.id, "segment", id, "live_bytes", st.Live())
		return nil, nil
	}
	if invariants {
		ks.checkDropLocked(s, func(seg uint32) bool { return seg == id })
	}
	release, err = s.log.DetachSegment(id)
	if err != nil {
		return nil, err
	}
	ks.rc.segments.Add(1)
	ks.rc.freed.Add(uint64(st.Size))
	ks.log.Debug("segment reclaimed", "shard", s.id, "segment", id, "bytes", st.Size)
	return release, nil
}

// rewriteSegment copies what still matters of segment id to the active segment. gain is the
// segment's dead bytes when its collection began (negative: collect whatever it costs).
func (ks *Keyspace) rewriteSegment(s *shard, id uint32, limit bool, gain int64) error {
	scan, err := s.log.ScanSegment(id)
	if err != nil {
		return err
	}
	defer scan.Close()
	// The keys of chunked values with chunks, or a live manifest, in the segment: moved once
	// it is read (chunked.go), by database byte and key, with the version of the live
	// manifest found in the segment (0: chunks only).
	chunked := map[string]uint64{}
	for {
		start := scan.Offset()
		recs, err := scan.Next(reclaimBatch)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			break
		}
		for i := range recs {
			if !s.inReach(recs[i].Header.DB) {
				ks.skipSegment(s, id)
				ks.log.Warn("segment holds keys of a database beyond the databases setting; not reclaimed", "shard", s.id, "segment", id, "db", recs[i].Header.DB)
				return nil
			}
		}
		s.mu.Lock()
		if !s.log.HasSegment(id) {
			s.mu.Unlock()
			return nil // FLUSHALL dropped it
		}
		written, lsn, err := ks.rewriteBatchLocked(s, id, recs, chunked)
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if lsn != 0 {
			// Hand the copies to the OS now rather than hold them in the tail.
			if err := s.log.Flush(lsn, false); err != nil {
				return err
			}
		}
		read := scan.Offset() - start
		ks.rc.scanned.Add(uint64(read))
		if limit {
			if err := ks.throttle(read + written); err != nil {
				return err
			}
		}
	}
	if f := ks.opts.afterScan; f != nil {
		f()
	}
	if len(chunked) == 0 {
		return nil
	}
	s.mu.Lock()
	gone := !s.log.HasSegment(id)
	s.mu.Unlock()
	if gone {
		return nil // FLUSHALL dropped it
	}
	move, spill := ks.planRelocation(s, id, chunked)
	if gain >= 0 && 2*spill > gain {
		// Wait until the segment's garbage outweighs the manifests moving its chunks would
		// kill: then every collection frees more than it makes dead. A segment all dead
		// needs no move, so the wait never exceeds its size.
		st, _ := s.log.SegmentStat(id)
		ks.rc.skipMu.Lock()
		if ks.rc.deferred[s.id] == nil {
			ks.rc.deferred[s.id] = map[uint32]int64{}
		}
		ks.rc.deferred[s.id][id] = min(st.Dead+2*spill-gain, st.Size)
		ks.rc.skipMu.Unlock()
		ks.log.Debug("segment collection deferred", "shard", s.id, "segment", id, "dead_bytes", gain, "manifest_bytes", spill)
		return errReclaimDeferred
	}
	for _, k := range move {
		if err := ks.relocateChunked(s, id, k[0], []byte(k[1:]), limit); err != nil {
			return err
		}
	}
	return ks.keepExpiredManifests(s, id, chunked)
}

// keepExpiredManifests appends a tombstone for each manifest the scan of segment seg found
// live whose key is no longer live now that the moves are done, when the segment is blocked:
// the key expired (lazily, actively or during the moves), which writes no record, and the
// manifest may be what hides an older put of the key in an older segment. A key removed any
// other way has a newer record of its own (a tombstone or flush record), and one overwritten
// has a newer put; a tombstone of the older version is harmless then too.
func (ks *Keyspace) keepExpiredManifests(s *shard, seg uint32, chunked map[string]uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.log.HasSegment(seg) {
		return nil
	}
	now := ks.opts.Now()
	var lsn uint64
	for k, v := range chunked {
		if v == 0 {
			continue
		}
		db, key := k[0], []byte(k[1:])
		if _, ok, _ := ks.findLiveLocked(s, ks.hash(db, key), db, key, now); ok {
			continue
		}
		if !ks.blockedLocked(s, seg) {
			continue
		}
		_, n, err := s.log.Append(vlog.Header{Kind: vlog.KindDelete, DB: db, Version: v}, key, nil)
		if err != nil {
			return fmt.Errorf("keyspace: %w", err)
		}
		lsn = n
	}
	if lsn != 0 {
		// Hand it to the OS now; reclaimSegment syncs before the segment goes.
		s.mu.Unlock()
		err := s.log.Flush(lsn, false)
		s.mu.Lock()
		return err
	}
	return nil
}

// rewriteBatchLocked handles one batch of records of segment seg (see "Collecting a segment"),
// adding to chunked the keys of chunked values it leaves to relocateChunked. It returns the
// bytes appended and the LSN past the last of them (0: none).
func (ks *Keyspace) rewriteBatchLocked(s *shard, seg uint32, recs []vlog.Record, chunked map[string]uint64) (int64, uint64, error) {
	blocked := ks.blockedLocked(s, seg)
	now := ks.opts.Now()
	var written int64
	var lsn uint64
	var ck []byte
	// noteChunked notes a key for relocation, with version the live manifest's (0: a chunk).
	noteChunked := func(db uint8, key []byte, version uint64) {
		ck = append(append(ck[:0], db), key...)
		if v, ok := chunked[string(ck)]; !ok || version > v {
			chunked[string(ck)] = version
		}
	}
	// liveEntry finds the key's entry, removing it if it has expired. A removal makes the
	// key's put dead, maybe in an older segment: blocked must then be asked again.
	liveEntry := func(db uint8, key []byte) (*entry, bool) {
		i, ok, removed := ks.findLiveLocked(s, ks.hash(db, key), db, key, now)
		if removed {
			blocked = blocked || ks.blockedLocked(s, seg)
		}
		if !ok {
			return nil, false
		}
		return s.ix.entry(i), true
	}
	for i := range recs {
		r := &recs[i]
		h := r.Header
		keep := false
		switch h.Kind {
		case vlog.KindSub:
			// Live only if the manifest of its object's key names it, which takes reading the
			// manifest. The shard's object table says which key that is (chunked.go).
			if len(r.Key) != oidSize {
				continue
			}
			for _, o := range s.objs[binary.LittleEndian.Uint64(r.Key)] {
				if e, live := liveEntry(o.db, []byte(o.key)); live && e.chunked() {
					noteChunked(o.db, []byte(o.key), 0)
				}
			}
			continue
		case vlog.KindMark:
			continue
		case vlog.KindPut:
			e, live := liveEntry(h.DB, r.Key)
			if live {
				if e.seg != r.Loc.Seg || e.off != r.Loc.Off {
					continue // a newer record defines the key
				}
				if int64(s.recLen(e)) != int64(h.ValLen) || e.chunked() != (h.Flags&vlog.FlagDir != 0) {
					return written, lsn, fmt.Errorf("keyspace: %w: index entry of %d bytes points at a record of %d", vlog.ErrCorrupt, s.recLen(e), h.ValLen)
				}
				if e.chunked() {
					noteChunked(h.DB, r.Key, h.Version)
					continue
				}
				c := h
				c.ExpireAt = e.expireAt
				// A part of a transaction keeps its commit condition: the transaction may not
				// be durable everywhere yet, and the copy must not apply without it.
				loc, n, err := s.log.AppendExt(c, r.Ext, r.Key, r.Val)
				if err != nil {
					return written, lsn, fmt.Errorf("keyspace: %w", err)
				}
				s.log.MarkDead(r.Loc, r.Size())
				e.seg, e.off = loc.Seg, loc.Off
				if invariants {
					ks.checkKeyLocked(s, h.DB, r.Key)
				}
				written += r.Size()
				lsn = n
				continue
			}
			if !blocked {
				continue
			}
			// The put may be what hides older puts of a key removed by expiry: a tombstone
			// of the same version (and transaction) does that without the value.
			h = vlog.Header{Kind: vlog.KindDelete, DB: h.DB, Version: h.Version, Flags: h.Flags & vlog.FlagTx}
			keep = true
		case vlog.KindDelete:
			_, live := liveEntry(h.DB, r.Key)
			keep = blocked && !live
		case vlog.KindExpire:
			if e, live := liveEntry(h.DB, r.Key); live {
				// Kept with the expire-at current now, like a moved put: replay applies
				// it whatever expire records precede it (see replayLocked).
				keep = e.seg < seg
				h.ExpireAt = e.expireAt
			} else if keep = blocked; keep {
				h = vlog.Header{Kind: vlog.KindDelete, DB: h.DB, Version: h.Version, Flags: h.Flags & vlog.FlagTx}
			}
		case vlog.KindFlushDB, vlog.KindFlushAll:
			keep = blocked
		}
		if !keep {
			continue
		}
		_, n, err := s.log.AppendExt(h, r.Ext, r.Key, nil)
		if err != nil {
			return written, lsn, fmt.Errorf("keyspace: %w", err)
		}
		written += vlog.RecordSize(len(r.Ext), len(r.Key), 0)
		lsn = n
		ks.rc.kept.Add(1)
	}
	ks.rc.moved.Add(uint64(written))
	return written, lsn, nil
}

// throttle waits until n more bytes fit the rate, allowing a short burst.
func (ks *Keyspace) throttle(n int64) error {
	rate := ks.rc.rate.Load()
	if rate <= 0 {
		return errReclaimOff
	}
	now := time.Now()
	if rate = ks.budget(rate); rate < 0 {
		ks.rc.next = now
		return nil
	}
	if ks.rc.next.Before(now.Add(-reclaimBurst)) {
		ks.rc.next = now.Add(-reclaimBurst)
	}
	ks.rc.next = ks.rc.next.Add(time.Duration(float64(n) / float64(rate) * float64(time.Second)))
	d := ks.rc.next.Sub(now)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ks.stop:
		return errReclaimStopped
	case <-t.C:
		return nil
	}
}

// reclaimStats sums reclamation's figures over the shards.
func (ks *Keyspace) reclaimStats() ReclaimStats {
	st := ReclaimStats{
		Rate:         ks.rc.rate.Load(),
		Segments:     ks.rc.segments.Load(),
		BytesScanned: ks.rc.scanned.Load(),
		BytesMoved:   ks.rc.moved.Load(),
		BytesFreed:   ks.rc.freed.Load(),
		RecordsKept:  ks.rc.kept.Load(),
		CPU:          time.Duration(ks.rc.cpu.Load()),
		Paced:        ks.rc.paced.Load(),
	}
	st.AppendRate = ks.rc.appendRate.Load()
	for _, s := range ks.shards {
		sp := s.log.SpaceStats()
		st.LiveBytes += sp.LiveBytes
		st.DeadBytes += sp.DeadBytes
		st.PendingBytes += sp.PendingBytes
	}
	return st
}
