package keyspace

import (
	"bytes"
	"fmt"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// Damaged media (a record failing its CRC) is not a broken invariant: reads report it, and the
// checks pass over it.
//
// Self-checks too costly for production, built in with the invariants build tag (make test runs
// the keyspace and vlog tests once with it). Each reads records back from the log, under the
// shard's lock, and panics when the index and the log disagree:
//
//   - every index entry's record is a put of the entry's database and key, of the length and
//     kind (plain or chunked) the entry says; a chunked value's manifest describes that length,
//     and each chunk it names is that object's chunk, in a segment the log still has
//     (checkEntryLocked, after every write, move and load, and for the whole index at Open and
//     Close: checkShardLocked);
//   - a segment is dropped only if no index entry and no manifest points into it
//     (checkDropLocked, before reclamation and FLUSHALL drop segments).
//
// Calls are guarded by the invariants constant, so without the tag they compile to nothing.

// checkEntryLocked verifies entry i of s. The shard's lock is held.
func (ks *Keyspace) checkEntryLocked(s *shard, i uint32) {
	ks.checkEntriesLocked(s, []uint32{i})
}

// checkKeyLocked verifies the entry of (db, key), if it has one. The shard's lock is held.
func (ks *Keyspace) checkKeyLocked(s *shard, db uint8, key []byte) {
	if i, _, ok := s.ix.find(uint32(ks.hash(db, key)), db, key); ok {
		ks.checkEntryLocked(s, i)
	}
}

// checkShardLocked verifies every entry of s. The shard's lock is held.
func (ks *Keyspace) checkShardLocked(s *shard) {
	var all []uint32
	for i := uint32(0); i < s.ix.high; i++ {
		if s.ix.entry(i).live() {
			all = append(all, i)
		}
	}
	ks.checkEntriesLocked(s, all)
}

func (ks *Keyspace) checkEntriesLocked(s *shard, idx []uint32) {
	rs := make([]recRead, len(idx))
	for n, i := range idx {
		e := s.ix.entry(i)
		rs[n] = recRead{log: s.log, loc: vlog.Loc{Seg: e.seg, Off: e.off}, n: int(s.recSize(e))}
	}
	var mans []*manifest
	err := ks.readRecords(rs, false, func(n int, rec []byte, err error) error {
		e := s.ix.entry(idx[n])
		key := s.ix.key(e)
		var r vlog.Record
		if err == nil {
			r, err = vlog.DecodeRecord(rec)
		}
		if isCorrupt(err) {
			return nil // damaged media, which reads report; not a broken invariant
		}
		if err != nil {
			return fmt.Errorf("entry of %d/%q at %d/%d: %w", e.db(), key, e.seg, e.off, err)
		}
		h := r.Header
		if h.Kind != vlog.KindPut || h.DB != e.db() || !bytes.Equal(r.Key, key) || len(r.Val) != s.recLen(e) ||
			(h.Flags&vlog.FlagDir != 0) != e.chunked() {
			return fmt.Errorf("entry of %d/%q (chunked %v, %d bytes) points at a %v record of %d/%q with %d bytes (flags %#x)",
				e.db(), key, e.chunked(), e.vlen, h.Kind, h.DB, r.Key, len(r.Val), h.Flags)
		}
		if e.chunked() {
			m, err := decodeManifestOf(r.Val, r.Header.VType, s.cs)
			if err == nil && m.length != int64(e.vlen) {
				err = fmt.Errorf("manifest of %d bytes, the entry says %d", m.length, e.vlen)
			}
			if err != nil {
				return fmt.Errorf("entry of %d/%q: %w", e.db(), key, err)
			}
			mans = append(mans, m)
		}
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("keyspace invariant: shard %d: %v", s.id, err))
	}
	for _, m := range mans {
		if err := ks.resolveDir(m); err != nil {
			if isCorrupt(err) {
				continue
			}
			panic(fmt.Sprintf("keyspace invariant: shard %d: base of object %x: %v", s.id, m.oid, err))
		}
		js := make([]int, len(m.locs))
		for j, cl := range m.locs {
			js[j] = j
			if int(cl.shard) != s.id {
				panic(fmt.Sprintf("keyspace invariant: shard %d: a manifest names chunk %d in shard %d", s.id, j, cl.shard))
			}
			if !s.log.HasSegment(cl.loc.Seg) {
				panic(fmt.Sprintf("keyspace invariant: shard %d: a manifest names chunk %d in segment %d, which was dropped", s.id, j, cl.loc.Seg))
			}
		}
		if err := ks.readChunks(m, js, func(int, []byte) {}); err != nil && !isCorrupt(err) {
			panic(fmt.Sprintf("keyspace invariant: shard %d: chunks of object %x: %v", s.id, m.oid, err))
		}
	}
}

// checkDropLocked verifies that no entry of s and no chunk its manifests name lies in a segment
// gone says is about to be dropped. The shard's lock is held.
func (ks *Keyspace) checkDropLocked(s *shard, gone func(seg uint32) bool) {
	var rs []recRead
	for i := uint32(0); i < s.ix.high; i++ {
		e := s.ix.entry(i)
		if !e.live() {
			continue
		}
		if gone(e.seg) {
			panic(fmt.Sprintf("keyspace invariant: shard %d: segment %d dropped while the entry of %d/%q points into it",
				s.id, e.seg, e.db(), s.ix.key(e)))
		}
		if e.chunked() {
			rs = append(rs, recRead{log: s.log, loc: vlog.Loc{Seg: e.seg, Off: e.off}, n: int(s.recSize(e))})
		}
	}
	err := ks.readRecords(rs, false, func(n int, rec []byte, err error) error {
		var m *manifest
		if err == nil {
			m, _, err = s.manifestOf(rec, 0, nil, -1)
		}
		if isCorrupt(err) {
			return nil // damaged media: its chunks cannot be found
		}
		if err != nil {
			return err
		}
		if b := m.base; b != nil && int(b.loc.shard) == s.id && gone(b.loc.loc.Seg) {
			return fmt.Errorf("segment %d dropped while a patch directory (object %x) names its base there", b.loc.loc.Seg, m.oid)
		}
		if err := ks.resolveDir(m); err != nil {
			if isCorrupt(err) {
				return nil
			}
			return err
		}
		for j, cl := range m.locs {
			if int(cl.shard) == s.id && gone(cl.loc.Seg) {
				return fmt.Errorf("segment %d dropped while a manifest (object %x) names its chunk %d", cl.loc.Seg, m.oid, j)
			}
		}
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("keyspace invariant: shard %d: %v", s.id, err))
	}
}
