package keyspace

import (
	"bytes"
	"fmt"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// Meta is what the index knows about a key without reading its value.
type Meta struct {
	Type     uint8
	Raw      bool  // written by an in-place edit (see RawHint)
	ExpireAt int64 // unix ms, 0 = none
	Len      int   // value length in bytes
}

func (e *entry) metaOf() Meta {
	return Meta{Type: e.vtype(), Raw: e.raw(), ExpireAt: e.expireAt, Len: int(e.vlen)}
}

func (e *entry) expired(now int64) bool { return e.expireAt != 0 && e.expireAt <= now }

// Lookup returns a key's metadata. An expired key is reported missing (and removed).
func (ks *Keyspace) Lookup(db int, key []byte) (Meta, bool) {
	h := ks.hash(uint8(db), key)
	s := ks.shardOf(h)
	s.mu.RLock()
	i, _, ok := s.ix.find(uint32(h), uint8(db), key)
	if !ok {
		s.mu.RUnlock()
		return Meta{}, false
	}
	e := s.ix.entry(i)
	if e.expired(ks.opts.Now()) {
		s.mu.RUnlock()
		ks.expireKey(s, h, uint8(db), key)
		return Meta{}, false
	}
	m := e.metaOf()
	s.mu.RUnlock()
	return m, true
}

// expireKey removes key if it is (still) expired.
func (ks *Keyspace) expireKey(s *shard, h uint64, db uint8, key []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks.findLiveLocked(s, h, db, key, ks.opts.Now())
}

// findLiveLocked finds the key's index entry. An expired entry is removed on the way, as lazy
// expiry does, and reported as not found with removed set (reclamation must then ask again
// whether an older put of the key matters). The shard's write lock is held.
func (ks *Keyspace) findLiveLocked(s *shard, h uint64, db uint8, key []byte, now int64) (i uint32, ok, removed bool) {
	i, pos, ok := s.ix.find(uint32(h), db, key)
	if ok && s.ix.entry(i).expired(now) {
		s.removeLocked(i, pos)
		ks.stats.expired.Add(1)
		return 0, false, true
	}
	return i, ok, false
}

// pendingRead is one value fetch: prepared under the shard lock, completed outside it.
type pendingRead struct {
	rd      vlog.Read
	db      uint8
	key     []byte
	vlen    int  // the record's payload length
	chunked bool // the record is a chunked value's manifest
	ready   bool // rd was prepared
	err     error
}

// prepareLocked prepares the read of e's record: the value, or a chunked value's manifest. The
// shard lock is held (read or write).
func (s *shard) prepareLocked(p *pendingRead, e *entry, db uint8, key []byte) {
	p.db, p.key, p.vlen, p.chunked = db, key, s.recLen(e), e.chunked()
	p.err = s.log.PrepareRead(&p.rd, vlog.Loc{Seg: e.seg, Off: e.off}, int(s.recSize(e)))
	p.ready = p.err == nil
}

// value verifies the completed read and returns the record's payload (aliasing the read's
// buffer): the value, or the manifest of a chunked one.
func (ks *Keyspace) value(p *pendingRead) ([]byte, error) {
	if p.err != nil {
		return nil, p.err
	}
	if p.rd.Err != nil {
		return nil, ks.readErr(p.rd.Err)
	}
	r, err := vlog.DecodeRecord(p.rd.Data)
	if err != nil {
		return nil, ks.readErr(err)
	}
	if h := r.Header; h.Kind != vlog.KindPut || h.DB != p.db || !bytes.Equal(r.Key, p.key) || len(r.Val) != p.vlen ||
		(h.Flags&vlog.FlagDir != 0) != p.chunked {
		return nil, ks.readErr(fmt.Errorf("%w: index points at a record of another key", vlog.ErrCorrupt))
	}
	return r.Val, nil
}

func (ks *Keyspace) readErr(err error) error {
	if isCorrupt(err) {
		ks.stats.corrupt.Add(1)
		ks.log.Error("corrupt record not served", "err", err)
	}
	return fmt.Errorf("keyspace: %w", err)
}

// Get reads a key's value and calls fn with it; val is valid only during fn. It reports whether
// the key exists. An expired key does not exist.
func (ks *Keyspace) Get(db int, key []byte, fn func(val []byte, m Meta)) (bool, error) {
	h := ks.hash(uint8(db), key)
	s := ks.shardOf(h)
	var p pendingRead
	s.mu.RLock()
	i, _, ok := s.ix.find(uint32(h), uint8(db), key)
	if !ok {
		s.mu.RUnlock()
		ks.stats.misses.Add(1)
		return false, nil
	}
	e := s.ix.entry(i)
	if e.expired(ks.opts.Now()) {
		s.mu.RUnlock()
		ks.expireKey(s, h, uint8(db), key)
		ks.stats.misses.Add(1)
		return false, nil
	}
	if e.chunked() {
		s.mu.RUnlock()
		ks.stats.hits.Add(1)
		return ks.readSlow(s, h, uint8(db), key, nil, fn)
	}
	m := e.metaOf()
	s.prepareLocked(&p, e, uint8(db), key)
	s.mu.RUnlock()
	ks.stats.hits.Add(1)
	if p.ready {
		reads := [1]*vlog.Read{&p.rd}
		vlog.Submit(ks.opts.Engine, reads[:])
		defer p.rd.Release()
	}
	val, err := ks.value(&p)
	if err != nil {
		return true, err
	}
	fn(val, m)
	return true, nil
}

// MGet reads many keys with one batch of disk reads and calls fn for each key in order, with
// ok false for a missing key and err set for a read that failed. val is valid only during fn.
// Chunked values are read after the batch, each in batches of its own.
func (ks *Keyspace) MGet(db int, keys [][]byte, fn func(i int, val []byte, m Meta, ok bool, err error)) {
	ps := make([]pendingRead, len(keys))
	found := make([]bool, len(keys))
	metas := make([]Meta, len(keys))
	var slow []bool
	now := ks.opts.Now()
	for k, key := range keys {
		h := ks.hash(uint8(db), key)
		s := ks.shardOf(h)
		s.mu.RLock()
		i, _, ok := s.ix.find(uint32(h), uint8(db), key)
		if ok {
			e := s.ix.entry(i)
			if e.expired(now) {
				s.mu.RUnlock()
				ks.expireKey(s, h, uint8(db), key)
				ks.stats.misses.Add(1)
				continue
			}
			if e.chunked() {
				if slow == nil {
					slow = make([]bool, len(keys))
				}
				slow[k] = true
			} else {
				s.prepareLocked(&ps[k], e, uint8(db), key)
			}
			found[k] = true
			metas[k] = e.metaOf()
		}
		s.mu.RUnlock()
		if ok {
			ks.stats.hits.Add(1)
		} else {
			ks.stats.misses.Add(1)
		}
	}
	reads := make([]*vlog.Read, 0, len(keys))
	for k := range ps {
		if ps[k].ready {
			reads = append(reads, &ps[k].rd)
		}
	}
	vlog.Submit(ks.opts.Engine, reads)
	for k := range keys {
		if !found[k] {
			fn(k, nil, Meta{}, false, nil)
			continue
		}
		if slow != nil && slow[k] {
			h := ks.hash(uint8(db), keys[k])
			called := false
			_, err := ks.readSlow(ks.shardOf(h), h, uint8(db), keys[k], nil, func(val []byte, m Meta) {
				called = true
				fn(k, val, m, true, nil)
			})
			if !called {
				fn(k, nil, metas[k], false, err) // gone meanwhile (err nil), or failed
			}
			continue
		}
		val, err := ks.value(&ps[k])
		fn(k, val, metas[k], err == nil, err)
		if ps[k].ready {
			ps[k].rd.Release()
		}
	}
}
