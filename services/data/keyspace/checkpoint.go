package keyspace

import (
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// Index checkpoints. Without them a restart replays every record of every segment; with them it
// loads each shard's checkpoint (its index entries as of a log position) and replays only the
// records at or after that position.
//
// # Taking a checkpoint
//
// Under the shard's read lock, note the log position P and the shard's version V; every record
// before P has a version <= V, and every record appended later by a writer gets a higher one
// (writers append and take versions under the write lock). Then copy the live entries in chunks
// (ckptChunkEntries entries or a block's worth of bytes per lock hold, so writers wait
// microseconds, not the whole copy), writing each full block to checkpoint.tmp outside the lock.
// When the copy is done, note the log's end E, sync the log up to E, sync the file, rename it
// over "checkpoint" and sync the directory.
//
// The copy is fuzzy: writers run between chunks, so an entry may reflect records after P (up to
// E). That is sound because replay from P applies every later record in log order: a key whose
// copied state is newer than P gets the records that made it newer again (puts, deletes and
// flushes set state; expire changes set an absolute expire-at), ending where the log ends. A key
// deleted and re-added between chunks may be copied twice; loading keeps the later copy, and
// replay fixes either. What must hold is that the log contains everything the copy saw, hence the
// sync up to E before the rename: a crash can cut the log only after E, and only once the
// checkpoint exists. The other shards' logs are synced up to where they ended then too: an entry
// may point at one part of a transaction, and recovery applies no part unless every part is
// there (txcond.go). Expired entries are copied like live ones; Open drops them after replay,
// exactly as a full replay would.
//
// # Loading and replay
//
// Open reads the checkpoint into the index, sets the shard's version to V, and replays the log
// from P. A file that fails any check (header, block or trailer CRC, counts, length,
// written for another shard or shard count) is rejected whole; so is a position the log does not
// reach (vlog.ErrReplayStart). Either way the shard falls back to a full replay, which is always
// correct, and the fact is logged and counted. Only one checkpoint is kept: a previous one would
// only be useful if the current one were damaged after its directory sync, and the full replay
// covers that too.
//
// Entries carry no version (the index keeps none), so tail replay needs one more rule. A record
// after P with a version above V is an ordinary write and is replayed as in a full replay (a
// loaded entry counts as older than any of them). A record after P with a version at most V can
// only be a copy the value-log collector made of an older record (copies keep their original
// version); everything such a record says about its key is already in the checkpoint, so it is
// skipped, except that a put copy of a key whose entry still holds the state the checkpoint gave
// it (flagCkpt) moves the entry to the copy, which is what the collector did at run time. This
// relies on what the collector must guarantee anyway for a full replay to be right: it appends a
// copy only under the shard lock, while the entry still points at the original, and repoints the
// entry in the same critical section.
//
// After replay, an entry that still points into a segment that no longer exists is dropped and
// counted: its key was deleted after the checkpoint and both its old record and the tombstone were
// reclaimed since (a live record is always copied past P before its segment goes, and the
// collector drops a tombstone only once no older segment may hold a dead put, which includes a
// removed segment whose removal is not yet durable). Serving it would fail every read of a key
// that does not exist. Reclamation relies on this instead of keeping tombstones for checkpoints.
//
// # When
//
// A background loop checkpoints a shard once its log has grown, since the shard's last checkpoint,
// by Options.CheckpointInterval bytes and by at least the size of that checkpoint file (so
// checkpoints never write more than the log does, even for tiny values), and Close checkpoints
// every shard that changed, so a clean restart replays almost nothing. A failed checkpoint is
// logged and retried after ckptRetryAfter; the log stays the source of truth throughout.
//
// Rejected: a stop-the-world copy of the whole shard under its lock (a pause of tens of
// milliseconds per million keys for every writer of the shard); a fork-style copy-on-write
// snapshot (Go cannot fork, and the off-heap arrays would need page protection tricks); keeping
// versions in the index so checkpoints could hold them (8 bytes a key over the budget).

const (
	ckptName    = "checkpoint"
	ckptTmpName = "checkpoint.tmp"
	// DefaultCheckpointInterval is Options.CheckpointInterval's default.
	DefaultCheckpointInterval = 64 << 20
	// ckptChunkEntries bounds the entries visited per hold of the shard's read lock.
	ckptChunkEntries = 4096
	ckptTick         = time.Second
	ckptRetryAfter   = time.Minute
	// ckptParallel is how many shards Close checkpoints at once.
	ckptParallel = 4
)

// flagCkpt lives in entry.w0 during Open only; see index.go.

// errCheckpointsOff is returned by Checkpoint when checkpoints are turned off.
var errCheckpointsOff = errors.New("keyspace: checkpoints are off")

// errCheckpointAborted is returned by a background checkpoint cut short by Close.
var errCheckpointAborted = errors.New("keyspace: checkpoint aborted by close")

// shardCheckpoint is a shard's checkpoint state.
type shardCheckpoint struct {
	// mu serialises the shard's checkpoints (background loop, Close, Checkpoint).
	mu  sync.Mutex
	dir string // the shard's directory
	// pos is the position of the latest checkpoint, loaded or written (zero: none), guarded
	// by mu after Open.
	pos vlog.Loc
	// loadVersion, during Open only, is the version of the checkpoint loaded; 0 = none.
	loadVersion uint64
	// baseLSN is the log LSN (this process's numbering) of the latest checkpoint's position:
	// the log past it is what a restart would replay. At Open it is the log's end less the
	// bytes replayed.
	baseLSN atomic.Int64
	// bytes and entries describe the latest checkpoint file (loaded or written).
	bytes, entries atomic.Int64
	// failedAt is when the last checkpoint failed (unix ms), 0 after a success.
	failedAt atomic.Int64
}

// ksCheckpoint holds the keyspace's checkpoint counters.
type ksCheckpoint struct {
	written, failed atomic.Uint64
	lastDone        atomic.Int64 // unix ms of the newest checkpoint written or loaded; 0 = none
	lastDur         atomic.Int64 // its duration, ns
	loadedEntries   atomic.Uint64
	replayedRecords atomic.Uint64
	replayedBytes   atomic.Uint64
	rejected        atomic.Uint64 // checkpoints found unusable at Open
	danglingDropped atomic.Uint64
	// relocated and relocatedSkipped count covered put copies that moved a loaded entry and
	// those that found it redefined (for tests).
	relocated, relocatedSkipped atomic.Uint64
}

// CheckpointStats are the checkpoint and load counters INFO persistence reports.
type CheckpointStats struct {
	Written, Failed uint64
	// LastUnixMs is when the newest checkpoint of any shard was written (by this process or,
	// if it has written none, the one that wrote the checkpoints it loaded; 0: none);
	// LastDuration is how long the last one this process wrote took.
	LastUnixMs   int64
	LastDuration time.Duration
	// Entries is the sum over shards of the entries in each shard's latest checkpoint.
	Entries int64
	// TailBytes is the log written after the shards' latest checkpoints: what a restart would
	// replay now.
	TailBytes int64
	// Set by Open: entries loaded from checkpoints, records (and their bytes) replayed from the
	// log, checkpoints rejected (a full replay instead), entries dropped because their segment
	// was gone.
	LoadedEntries, ReplayedRecords, ReplayedBytes uint64
	Rejected, DanglingDropped                     uint64
}

func (ks *Keyspace) checkpointsOn() bool { return ks.opts.CheckpointInterval > 0 }

// checkpointStats collects the counters.
func (ks *Keyspace) checkpointStats() CheckpointStats {
	c := &ks.ckpt
	st := CheckpointStats{
		Written: c.written.Load(), Failed: c.failed.Load(),
		LastUnixMs: c.lastDone.Load(), LastDuration: time.Duration(c.lastDur.Load()),
		LoadedEntries: c.loadedEntries.Load(), ReplayedRecords: c.replayedRecords.Load(),
		ReplayedBytes: c.replayedBytes.Load(), Rejected: c.rejected.Load(),
		DanglingDropped: c.danglingDropped.Load(),
	}
	for _, s := range ks.shards {
		st.Entries += s.ckpt.entries.Load()
		st.TailBytes += max(int64(s.log.AppendedLSN())-s.ckpt.baseLSN.Load(), 0)
	}
	return st
}

// Checkpoint checkpoints every shard now.
func (ks *Keyspace) Checkpoint() error {
	if !ks.checkpointsOn() {
		return errCheckpointsOff
	}
	var errs []error
	for _, s := range ks.shards {
		errs = append(errs, ks.checkpointShard(s, false))
	}
	return errors.Join(errs...)
}

// checkpointLoop checkpoints shards whose logs have grown enough (see checkpointDue).
func (ks *Keyspace) checkpointLoop() {
	if !ks.checkpointsOn() {
		ks.wg.Done()
		return
	}
	ks.every(ckptTick, nil, func() bool {
		for _, s := range ks.shards {
			if ks.stopping() {
				return false
			}
			if ks.checkpointDue(s) {
				start := ks.latencyStart()
				ks.checkpointShard(s, true) // failures are logged and counted
				ks.latencyEnd("checkpoint", start)
			}
		}
		return true
	})
}

func (ks *Keyspace) stopping() bool {
	select {
	case <-ks.stop:
		return true
	default:
		return false
	}
}

// checkpointDue reports whether s's log has grown, since its last checkpoint, by the interval
// and by the size of that checkpoint, and no failure is recent.
func (ks *Keyspace) checkpointDue(s *shard) bool {
	if f := s.ckpt.failedAt.Load(); f != 0 && time.Since(time.UnixMilli(f)) < ckptRetryAfter {
		return false
	}
	if s.log.WriteErr() != nil {
		return false // the log cannot sync: the checkpoint could not be trusted anyway
	}
	grown := int64(s.log.AppendedLSN()) - s.ckpt.baseLSN.Load()
	return grown >= max(ks.opts.CheckpointInterval, s.ckpt.bytes.Load())
}

// checkpointAtClose checkpoints every shard whose log changed since its last checkpoint, a few
// at a time. Close has stopped the background work; failures are logged and leave the previous
// checkpoint (or none) in place, which costs the next start time, not data.
func (ks *Keyspace) checkpointAtClose() {
	if !ks.checkpointsOn() {
		return
	}
	sem := make(chan struct{}, ckptParallel)
	var wg sync.WaitGroup
	for _, s := range ks.shards {
		if int64(s.log.AppendedLSN()) == s.ckpt.baseLSN.Load() || s.log.WriteErr() != nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ks.checkpointShard(s, false)
		}()
	}
	wg.Wait()
}

// checkpointShard writes a checkpoint of s (see the file comment). background checkpoints give
// up when Close starts.
func (ks *Keyspace) checkpointShard(s *shard, background bool) error {
	s.ckpt.mu.Lock()
	defer s.ckpt.mu.Unlock()
	start := time.Now()
	fsys := ks.opts.FS
	dir := s.ckpt.dir
	tmp, final := filepath.Join(dir, ckptTmpName), filepath.Join(dir, ckptName)

	s.mu.RLock()
	if s.ix.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	pos, posLSN := s.log.Position()
	hdr := ckptHeader{
		shard: uint32(s.id), shards: uint32(len(ks.shards)), databases: uint32(s.dbs), pos: pos, version: s.version,
		created: time.Now().UnixMilli(), hintEntries: uint64(s.ix.count), hintArena: uint64(s.ix.arena.live),
	}
	s.mu.RUnlock()

	f, err := fsys.Create(tmp)
	if err != nil {
		return ks.checkpointFailed(s, "create", err)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			fsys.Remove(tmp)
		}
	}()
	w, err := newCkptWriter(f, &hdr)
	if err != nil {
		return ks.checkpointFailed(s, "write", err)
	}
	chunk := ckptChunkEntries
	if ks.opts.ckptChunk > 0 {
		chunk = ks.opts.ckptChunk
	}
	var endLSN uint64
	var others []uint64 // the other shards' log ends, in order
	var e ckptEntry
	avg := 12
	if hdr.hintEntries > 0 {
		avg += int(hdr.hintArena / hdr.hintEntries)
	}
	run := newCkptRun(uint(bits.TrailingZeros(uint(slotsFor(hdr.hintEntries)))), int(hdr.hintEntries), avg)
	defer run.free()
	for cursor := uint32(0); ; {
		s.mu.RLock()
		if s.ix.closed {
			s.mu.RUnlock()
			return ErrClosed
		}
		for n := 0; n < chunk && cursor < s.ix.high && !run.full(); n, cursor = n+1, cursor+1 {
			ie := s.ix.entry(cursor)
			if !ie.live() {
				continue
			}
			e = ckptEntry{db: ie.db(), vtype: ie.vtype(), tx: ie.tx(), expireAt: ie.expireAt, seg: ie.seg, off: ie.off, vlen: ie.vlen, key: s.ix.key(ie)}
			if ie.raw() {
				e.vtype |= RawHint
			}
			if ie.chunked() {
				e.vtype |= vtChunked
			}
			if err = run.add(ie.hash, &e); err != nil {
				break
			}
		}
		done := cursor >= s.ix.high
		if done {
			_, endLSN = s.log.Position()
			// An entry may point at a part of a transaction whose other parts are in other
			// shards' logs: those must be durable too before the checkpoint is (txcond.go).
			for _, o := range ks.shards {
				if o != s {
					others = append(others, o.log.AppendedLSN())
				}
			}
		}
		s.mu.RUnlock()
		if err != nil {
			return ks.checkpointFailed(s, "copy", err)
		}
		if run.full() || done {
			if err := run.flush(w); err != nil {
				return ks.checkpointFailed(s, "write", err)
			}
		}
		if done {
			break
		}
		if background && ks.stopping() {
			return errCheckpointAborted
		}
		if ks.opts.ckptHook != nil {
			ks.opts.ckptHook(s.id)
		}
	}
	if err := w.finish(); err != nil {
		return ks.checkpointFailed(s, "write", err)
	}
	// Everything the copy saw must be durable before the checkpoint can be.
	if err := s.log.Flush(endLSN, true); err != nil {
		return ks.checkpointFailed(s, "sync log", err)
	}
	i := 0
	for _, o := range ks.shards {
		if o == s {
			continue
		}
		if err := o.log.Flush(others[i], true); err != nil {
			return ks.checkpointFailed(s, fmt.Sprintf("sync the log of shard %d", o.id), err)
		}
		i++
	}
	if err := f.Sync(); err != nil {
		return ks.checkpointFailed(s, "sync", err)
	}
	committed = true // the file is closed below; only its name may still be undone
	if err := f.Close(); err != nil {
		fsys.Remove(tmp)
		return ks.checkpointFailed(s, "close", err)
	}
	if err := fsys.Rename(tmp, final); err != nil {
		fsys.Remove(tmp)
		return ks.checkpointFailed(s, "rename", err)
	}
	// Until the directory is synced a crash may bring back the previous checkpoint, which is
	// as correct, only older.
	if err := fsys.SyncDir(dir); err != nil {
		return ks.checkpointFailed(s, "sync dir", err)
	}
	dur := time.Since(start)
	s.ckpt.pos = pos
	s.ckpt.baseLSN.Store(int64(posLSN))
	s.ckpt.bytes.Store(w.size)
	s.ckpt.entries.Store(int64(w.entries))
	s.ckpt.failedAt.Store(0)
	ks.ckpt.written.Add(1)
	ks.ckpt.lastDone.Store(time.Now().UnixMilli())
	ks.ckpt.lastDur.Store(int64(dur))
	ks.log.Debug("checkpoint written", "shard", s.id, "entries", w.entries, "bytes", w.size,
		"segment", pos.Seg, "offset", pos.Off, "seconds", dur.Seconds())
	return nil
}

func (ks *Keyspace) checkpointFailed(s *shard, op string, err error) error {
	s.ckpt.failedAt.Store(time.Now().UnixMilli())
	ks.ckpt.failed.Add(1)
	ks.log.Warn("checkpoint failed; the log still holds everything", "shard", s.id, "op", op, "err", err)
	return fmt.Errorf("keyspace: checkpoint of shard %d: %s: %w", s.id, op, err)
}

// dropDanglingLocked clears flagCkpt from every entry and removes the entries whose segment the
// log no longer has. It returns how many it removed.
func (s *shard) dropDanglingLocked(l *vlog.Log) int {
	ids := l.SegmentIDs()
	var lastSeg uint32
	have, lastOK, n := false, false, 0
	for i := uint32(0); i < s.ix.high; i++ {
		e := s.ix.entry(i)
		if !e.live() {
			continue
		}
		e.w0 &^= flagCkpt
		if !have || e.seg != lastSeg {
			have, lastSeg = true, e.seg
			_, lastOK = slices.BinarySearch(ids, e.seg)
		}
		if !lastOK {
			s.removeLocked(i, s.ix.slotOf(i))
			n++
		}
	}
	return n
}

// loadCheckpoint loads s's checkpoint into its (empty) index. It reports whether it did; a
// checkpoint that cannot be used is logged and leaves the index empty. The error is for failures
// that must fail Open (no memory for a fresh index).
func (ks *Keyspace) loadCheckpoint(s *shard) (bool, error) {
	fsys := ks.opts.FS
	// A temporary file is what a crash in the middle of a checkpoint leaves; never used.
	fsys.Remove(filepath.Join(s.ckpt.dir, ckptTmpName))
	path := filepath.Join(s.ckpt.dir, ckptName)
	if !ks.checkpointsOn() {
		// Off means off: a checkpoint left from an earlier run would only be older and older
		// by the time checkpoints are turned on again (still correct, but a longer replay).
		if fsys.Remove(path) == nil {
			fsys.SyncDir(s.ckpt.dir)
			ks.log.Info("checkpoints are off; old checkpoint removed", "shard", s.id)
		}
		return false, nil
	}
	if s.log.Stats().Repaired > 0 {
		// Opening the log moved damaged records aside and wrote a mark over them (vlog's
		// repair): entries of the checkpoint may point at them, and only a replay of the whole
		// log lets their keys fall back to their previous records. The checkpoint goes, durably,
		// so that a start after a crash does not load it either.
		err := fsys.Remove(path)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err == nil {
			err = fsys.SyncDir(s.ckpt.dir)
		}
		if err != nil {
			return false, fmt.Errorf("keyspace: remove the checkpoint of a repaired log: %w", err)
		}
		ks.ckpt.rejected.Add(1)
		ks.log.Warn("the log was repaired; checkpoint removed, replaying the whole log", "shard", s.id)
		return false, nil
	}
	f, err := fsys.Open(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			ks.ckpt.rejected.Add(1)
			ks.log.Warn("checkpoint unreadable; replaying the whole log", "shard", s.id, "err", err)
		}
		return false, nil
	}
	defer f.Close()
	start := time.Now()
	n, size, err := s.loadCheckpointFile(ks, f)
	if err != nil {
		ks.ckpt.rejected.Add(1)
		ks.log.Warn("checkpoint ignored; replaying the whole log", "shard", s.id, "path", path, "err", err)
		return false, s.resetLocked()
	}
	s.ckpt.bytes.Store(size)
	s.ckpt.entries.Store(int64(n))
	ks.log.Info("checkpoint loaded", "shard", s.id, "entries", n, "segment", s.ckpt.pos.Seg,
		"offset", s.ckpt.pos.Off, "seconds", time.Since(start).Seconds())
	return true, nil
}

// loadCheckpointFile reads a checkpoint into the index, returning its entry count and size.
func (s *shard) loadCheckpointFile(ks *Keyspace, f vfs.File) (uint64, int64, error) {
	size, err := f.Size()
	if err != nil {
		return 0, 0, err
	}
	r, hdr, err := newCkptReader(f, size)
	if err != nil {
		return 0, 0, err
	}
	if hdr.shard != uint32(s.id) || hdr.shards != uint32(len(ks.shards)) {
		return 0, 0, fmt.Errorf("keyspace: checkpoint of shard %d of %d, not of shard %d of %d",
			hdr.shard, hdr.shards, s.id, len(ks.shards))
	}
	if hdr.databases < uint32(s.dbs) {
		// Written while fewer databases were set: the keys of the others were out of reach
		// then and are not in it, though the log still holds them (as replay leaves them).
		return 0, 0, fmt.Errorf("keyspace: checkpoint written with %d databases, now %d",
			hdr.databases, s.dbs)
	}
	// Sizing is only an optimisation: without it the index grows as it always does.
	s.ix.presize(hdr.hintEntries, hdr.hintArena)
	var e ckptEntry
	var n uint64
	for {
		payload, count, ok, err := r.next()
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			break
		}
		for off := 0; off < len(payload); count-- {
			w, err := decodeCkptEntry(payload[off:], &e)
			if err != nil {
				return 0, 0, err
			}
			off += w
			if err := s.loadEntryLocked(ks, &e); err != nil {
				return 0, 0, err
			}
			n++
		}
		if count != 0 {
			return 0, 0, ckptCorrupt("block entry count off by %d", count)
		}
	}
	s.version = hdr.version
	s.ckpt.loadVersion = hdr.version
	for last := ks.ckpt.lastDone.Load(); hdr.created > last; last = ks.ckpt.lastDone.Load() {
		if ks.ckpt.lastDone.CompareAndSwap(last, hdr.created) {
			break
		}
	}
	s.ckpt.pos = hdr.pos
	return n, size, nil
}

// loadEntryLocked puts one checkpoint entry into the index. A key already there (copied twice
// by a fuzzy checkpoint) takes the later copy.
func (s *shard) loadEntryLocked(ks *Keyspace, ce *ckptEntry) error {
	if !s.inReach(ce.db) {
		return nil // written with a larger --databases: out of reach, as in replay
	}
	h := uint32(ks.hash(ce.db, ce.key))
	i, _, found := s.ix.find(h, ce.db, ce.key)
	v := valueRef{vtype: ce.vtype, tx: ce.tx, expireAt: ce.expireAt, seg: ce.seg, off: ce.off, vlen: ce.vlen}
	_, e, err := s.pointLocked(i, found, h, ce.db, ce.key, v)
	if err != nil {
		return err
	}
	e.w0 |= flagCkpt
	return nil
}

// resetLocked empties the shard before a full replay replaces what a rejected checkpoint
// loaded.
func (s *shard) resetLocked() error {
	now, lfuOn := s.ix.now, s.ix.lfuOn
	s.ix.release()
	ix, err := newIndex()
	if err != nil {
		return fmt.Errorf("keyspace: shard %d: %w", s.id, err)
	}
	ix.now, ix.lfuOn = now, lfuOn
	s.ix = ix
	clear(s.keys)
	clear(s.expires)
	s.version = 0
	s.replayVer.free()
	s.ckpt.loadVersion = 0
	s.ckpt.pos = vlog.Loc{}
	s.ckpt.bytes.Store(0)
	s.ckpt.entries.Store(0)
	return nil
}

// slotsFor is the slot count presize gives an index for n entries. Checkpoints sort their
// entries by home slot in a table of this size (ckptRun).
func slotsFor(n uint64) int {
	slots := minSlots
	for float64(n) > maxLoad*float64(slots) {
		slots *= 2
	}
	return slots
}

// presize makes an empty index ready for n entries and arenaBytes of keys, so that loading a
// checkpoint does not rehash the table at every doubling. Failures are ignored: growth on
// demand still works, or reports the shortage itself.
func (ix *index) presize(n uint64, arenaBytes uint64) {
	if ix.high != 0 || n == 0 || n > 1<<31 || arenaBytes > 1<<keyOffBits {
		return
	}
	if slots := slotsFor(n); slots > len(ix.slots) {
		var mem region
		if mem.resize(slots*4) != nil {
			return
		}
		ix.slotMem.free()
		ix.slotMem = mem
		ix.slots = view[uint32](&ix.slotMem, slots)
		ix.mask = uint32(slots - 1)
	}
	if need := int(n) * 32; need > ix.entryMem.size() && ix.entryMem.resize(need) == nil {
		ix.entries = view[entry](&ix.entryMem, capOf[entry](&ix.entryMem))
	}
	for uint32(n)+1 > ix.idxMask {
		ix.widen()
	}
	if need := int(arenaBytes); need > len(ix.arena.b) && ix.arena.mem.resize(need) == nil {
		ix.arena.b = ix.arena.mem.b
	}
}
