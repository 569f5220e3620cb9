package keyspace

import (
	"errors"
	"fmt"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// Recovery rebuilds a shard's index by replaying its log in order (vlog.Open calls
// replayLocked for every valid record). A record older than the one that defines a key's entry
// (by version) is skipped; the versions live in a table indexed by entry that exists only
// while the shard opens, because nothing after replay needs them and 8 bytes a key would break
// the index's budget.

// dropExpiredLocked removes every entry whose expire-at is at or before now.
func (s *shard) dropExpiredLocked(now int64) {
	for i := uint32(0); i < s.ix.high; i++ {
		if e := s.ix.entry(i); e.live() && e.expired(now) {
			s.removeLocked(i, s.ix.slotOf(i))
		}
	}
}

// replayShard replays s's log into its index, from its checkpoint's position when Open loaded
// one, and drops the keys that expired. See checkpoint.go for the checkpoint rules.
func (ks *Keyspace) replayShard(s *shard) error {
	defer s.replayVer.free()
	var records, bytes uint64
	fn := func(r *vlog.Record) error {
		if r.Header.Kind != vlog.KindMark {
			records++
		}
		bytes += uint64(r.Size())
		if r.Header.Version <= s.ckpt.loadVersion {
			return s.replayCoveredLocked(ks, r)
		}
		return s.replayLocked(ks, r)
	}
	from := vlog.Loc{}
	if s.loaded {
		from = s.ckpt.pos
	}
	err := s.log.Replay(from, fn)
	if s.loaded && errors.Is(err, vlog.ErrReplayStart) {
		ks.ckpt.rejected.Add(1)
		ks.log.Warn("checkpoint ignored: the log does not reach its position; replaying the whole log", "shard", s.id, "err", err)
		if err := s.resetLocked(); err != nil {
			return err
		}
		s.loaded, records, bytes = false, 0, 0
		err = s.log.Replay(vlog.Loc{}, fn)
	}
	if err != nil {
		return fmt.Errorf("keyspace: shard %d: %w", s.id, err)
	}
	s.ckpt.loadVersion = 0
	if s.loaded {
		ks.ckpt.loadedEntries.Add(uint64(s.ckpt.entries.Load()))
		if n := s.dropDanglingLocked(s.log); n > 0 {
			ks.ckpt.danglingDropped.Add(uint64(n))
			ks.log.Info("checkpoint entries of keys deleted and reclaimed since dropped", "shard", s.id, "entries", n)
		}
	}
	s.loaded = false
	_, lsn := s.log.Position()
	s.ckpt.baseLSN.Store(int64(lsn) - int64(bytes))
	ks.ckpt.replayedRecords.Add(records)
	ks.ckpt.replayedBytes.Add(bytes)
	// Expired keys are dropped only once the whole log is replayed: a later EXPIRE or PERSIST
	// record may have moved a key's expire-at past now, and it needs the entry to apply to. A
	// follower's are kept for its primary's DEL (Options.Follower).
	if !ks.follower.Load() {
		s.dropExpiredLocked(ks.opts.Now())
	}
	return nil
}

// recordType is the value type an index entry keeps for a put record: the record's type, with
// RawHint and vtChunked from its flags.
func recordType(h vlog.Header) uint8 {
	t := h.VType
	if h.Flags&vlog.FlagRaw != 0 {
		t |= RawHint
	}
	if h.Flags&vlog.FlagDir != 0 {
		t |= vtChunked
	}
	return t
}

// recordHeader is the header of a record of kind for (db, vtype), the inverse of recordType;
// ext is the record's extension block (a transaction's condition) or nil.
func recordHeader(kind vlog.Kind, db uint8, vtype uint8, expireAt int64, version uint64, ext []byte) vlog.Header {
	h := vlog.Header{Kind: kind, DB: db, VType: vtype & 0xf, ExpireAt: expireAt, Version: version}
	if vtype&RawHint != 0 {
		h.Flags |= vlog.FlagRaw
	}
	if vtype&vtChunked != 0 {
		h.Flags |= vlog.FlagDir
	}
	if ext != nil {
		h.Flags |= vlog.FlagTx
	}
	return h
}

// txOf decides a record's transaction: whether to apply it (a record of no transaction always
// applies) and the transaction code an index entry keeps for it.
func (s *shard) txOf(ks *Keyspace, r *vlog.Record) (apply bool, code uint8, err error) {
	if r.Header.Flags&vlog.FlagTx == 0 {
		return true, 0, nil
	}
	c, err := decodeTxCond(r.Ext)
	if err == nil && txExtLen(txCode(len(c.ends), s.nshards), s.nshards) != len(r.Ext) {
		err = fmt.Errorf("%w: transaction condition for %d of %d shards", vlog.ErrCorrupt, len(c.ends), s.nshards)
	}
	if err != nil {
		return false, 0, fmt.Errorf("keyspace: segment %d offset %d: %w", r.Loc.Seg, r.Loc.Off, err)
	}
	return ks.tx.decide(c), txCode(len(c.ends), s.nshards), nil
}

// replayLocked applies one record during recovery. The payload of a chunked value's manifest
// is read for the length the index keeps.
func (s *shard) replayLocked(ks *Keyspace, r *vlog.Record) error {
	h := r.Header
	prev := s.version
	s.version = max(s.version, h.Version)
	db, key := h.DB, r.Key
	switch {
	case h.Kind == vlog.KindSub || h.Kind == vlog.KindMark:
		return nil // a sub-record is reachable only through its directory (chunked.go)
	case !s.inReach(db):
		// Written with a larger --databases: keep such keys out of reach rather than fail.
		return nil
	case h.Kind == vlog.KindPut && !knownType(h.VType):
		return fmt.Errorf("keyspace: segment %d offset %d: value type %d: %w", r.Loc.Seg, r.Loc.Off, h.VType, vlog.ErrNewerFormat)
	}
	apply, tx, err := s.txOf(ks, r)
	if err != nil || !apply {
		return err
	}
	switch h.Kind {
	case vlog.KindFlushAll, vlog.KindFlushDB:
		s.replayFlushLocked(db, h.Kind == vlog.KindFlushAll, h.Version, prev) // reclaim.go
		return nil
	}
	var vlen uint32
	if h.Kind == vlog.KindPut {
		if vlen, _, err = s.recordValueLen(h, r.Val); err != nil {
			// Its CRC verified, so it was written so: treat it as corrupt, like a record that
			// fails its CRC (the key falls back to an older record).
			ks.stats.corrupt.Add(1)
			ks.log.Error("manifest does not decode; record skipped", "segment", r.Loc.Seg, "offset", r.Loc.Off, "err", err)
			return nil
		}
	}
	hash := ks.hash(db, key)
	i, pos, found := s.ix.find(uint32(hash), db, key)
	if found && s.replayVer.get(i) > h.Version {
		return nil // an older record than what the index holds
	}
	switch h.Kind {
	case vlog.KindPut:
		v := valueRef{vtype: recordType(h), tx: tx, expireAt: h.ExpireAt, seg: r.Loc.Seg, off: r.Loc.Off, vlen: vlen}
		if i, _, err = s.pointLocked(i, found, uint32(hash), db, key, v); err != nil {
			return err
		}
	case vlog.KindDelete:
		if found {
			s.removeLocked(i, pos)
		}
		return nil
	case vlog.KindExpire:
		if !found {
			return nil
		}
		e := s.ix.entry(i)
		s.countLocked(e, -1)
		e.expireAt = h.ExpireAt
		s.countLocked(e, 1)
		// The version table keeps the put's version: a put after this record in the log but
		// older is a copy reclamation made later, which carries the expire-at current then
		// (reclaim.go), and must not be skipped.
		return nil
	default:
		return nil
	}
	return s.replayVer.set(i, h.Version)
}

// replayCoveredLocked applies a tail record whose version the loaded checkpoint covers: a copy
// the collector made of an older record. Only a put copy of a key whose entry still holds the
// checkpoint's state does anything: the entry moves to the copy. For a chunked value the copy
// is a manifest naming chunks the collector moved, of the same value.
func (s *shard) replayCoveredLocked(ks *Keyspace, r *vlog.Record) error {
	h := r.Header
	if h.Kind != vlog.KindPut || !s.inReach(h.DB) {
		return nil
	}
	apply, tx, err := s.txOf(ks, r)
	if err != nil || !apply {
		return err
	}
	i, _, found := s.ix.find(uint32(ks.hash(h.DB, r.Key)), h.DB, r.Key)
	if !found {
		return nil // deleted before the checkpoint: a copy must not bring it back
	}
	e := s.ix.entry(i)
	vlen, chunked, err := s.recordValueLen(h, r.Val)
	if err != nil || e.w0&flagCkpt == 0 || e.vlen != vlen || e.chunked() != chunked || e.tx() != tx {
		ks.ckpt.relocatedSkipped.Add(1)
		return nil // redefined by a later record of the tail
	}
	e.seg, e.off = r.Loc.Seg, r.Loc.Off
	// The copy carries the expire-at the key had when it was made (reclaim.go), which may
	// come from an expire record the collector has since dropped; later expire records of
	// the tail are replayed after it.
	s.countLocked(e, -1)
	e.expireAt = h.ExpireAt
	s.countLocked(e, 1)
	ks.ckpt.relocated.Add(1)
	return nil
}

// versionTable maps entry indexes to the version of the record that defines the entry, during
// replay only. It lives off-heap like the index, so a large replay leaves no garbage behind.
type versionTable struct {
	mem region
	v   []uint64 // view of mem
}

func (t *versionTable) get(i uint32) uint64 {
	if int(i) < len(t.v) {
		return t.v[i]
	}
	return 0
}

func (t *versionTable) set(i uint32, v uint64) error {
	if int(i) >= len(t.v) {
		if err := t.mem.resize(growSize(t.mem.size(), (int(i)+1)*8)); err != nil {
			return err
		}
		t.v = view[uint64](&t.mem, capOf[uint64](&t.mem))
	}
	t.v[i] = v
	return nil
}

func (t *versionTable) free() {
	t.mem.free()
	t.v = nil
}
