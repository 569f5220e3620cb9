package keyspace

import "github.com/lavikdb/lavik/services/data/vlog"

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

// replayLocked applies one record during recovery. val is the record's payload (a chunked
// value's manifest is read for the length the index keeps).
func (s *shard) replayLocked(ks *Keyspace, loc vlog.Loc, h vlog.Header, key, val []byte) error {
	prev := s.version
	s.version = max(s.version, h.Version)
	db := h.DB
	if int(db) >= len(s.keys) {
		// Written with a larger --databases: keep such keys out of reach rather than fail.
		return nil
	}
	switch h.Kind {
	case vlog.KindFlushAll, vlog.KindFlushDB:
		s.replayFlushLocked(db, h.Kind == vlog.KindFlushAll, h.Version, prev) // reclaim.go
		return nil
	case vlog.KindChunk:
		return nil // reachable only through its manifest (chunked.go)
	}
	var vlen uint32
	if h.Kind == vlog.KindPut {
		var err error
		if vlen, _, err = s.recordValueLen(h, val); err != nil {
			// Its CRC verified, so it was written so: treat it as corrupt, like a record that
			// fails its CRC (the key falls back to an older record).
			ks.stats.corrupt.Add(1)
			ks.log.Error("manifest does not decode; record skipped", "segment", loc.Seg, "offset", loc.Off, "err", err)
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
		var err error
		v := valueRef{vtype: h.VType, expireAt: h.ExpireAt, seg: loc.Seg, off: loc.Off, vlen: vlen}
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
