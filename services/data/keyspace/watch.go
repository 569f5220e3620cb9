package keyspace

import (
	"bytes"
	"slices"
	"sync/atomic"
)

// WATCH: optimistic locking for MULTI ... EXEC (exec.go).
//
// A connection's watched keys are registered in the shards that own them (shard.watched, by
// index hash). Every change of a registered key marks its watchers dirty, under the shard lock
// the change holds anyway: a write (applyLocked, which every put, delete and expire change goes
// through), a removal (removeLocked: DEL, lazy and active expiry, FLUSHDB of some keys) and a
// flush that empties the shard (clearLocked) for the registered keys it removes. A write marks
// watchers whatever it writes (SET of the same value too), as Redis does; a command that writes
// nothing (SETNX of an existing key, PERSIST of a key without TTL) marks none, and neither does a
// collection moving a record, which changes no key. The cost for a shard nobody watches is one
// map length test per write.
//
// Expiry follows Redis 7: a key that was live when watched and is expired when EXEC runs aborts
// the transaction, whether or not anything removed it yet; a key already expired when watched
// does not, and its removal by expiry is no change either.

// Watches is one connection's watched keys. Its methods are for the connection's goroutine; the
// dirty flag is set by whichever goroutine changes a watched key.
type Watches struct {
	dirty atomic.Bool
	regs  []*watchReg
}

// watchReg is one watched key, registered in its shard.
type watchReg struct {
	w   *Watches
	s   *shard
	h   uint64
	db  uint8
	key []byte
	// expired: the key was expired when watched (guarded by the shard's lock).
	expired bool
}

// Len is the number of keys watched.
func (w *Watches) Len() int { return len(w.regs) }

// Watch adds (db, key) to w's watched keys.
func (ks *Keyspace) Watch(w *Watches, db int, key []byte) {
	pdb, h, s := ks.lockKey(db, key)
	for _, r := range w.regs {
		if r.s == s && r.db == pdb && bytes.Equal(r.key, key) {
			s.mu.Unlock()
			return
		}
	}
	r := &watchReg{w: w, s: s, h: h, db: pdb, key: bytes.Clone(key)}
	if i, _, ok := s.ix.find(uint32(h), r.db, key); ok && s.ix.entry(i).expired(ks.opts.Now()) {
		r.expired = true
	}
	if s.watched == nil {
		s.watched = map[uint32][]*watchReg{}
	}
	s.watched[uint32(h)] = append(s.watched[uint32(h)], r)
	s.mu.Unlock()
	w.regs = append(w.regs, r)
}

// Unwatch forgets all of w's watched keys and clears its dirty flag. se is the session of the
// connection, which may be running EXEC (and so hold every shard's lock already).
func (ks *Keyspace) Unwatch(se *Session, w *Watches) {
	for _, r := range w.regs {
		s := r.s
		s.lock(se)
		regs := slices.DeleteFunc(s.watched[uint32(r.h)], func(o *watchReg) bool { return o == r })
		if len(regs) == 0 {
			delete(s.watched, uint32(r.h))
		} else {
			s.watched[uint32(r.h)] = regs
		}
		s.unlock(se)
	}
	w.regs = nil
	w.dirty.Store(false)
}

// changedLocked reports whether a watched key changed since it was watched: a write marked w
// dirty, or a key live then is expired at now. Every shard's lock is held.
func (w *Watches) changedLocked(now int64) bool {
	if w.dirty.Load() {
		return true
	}
	for _, r := range w.regs {
		if r.expired {
			continue
		}
		if i, _, ok := r.s.ix.find(uint32(r.h), r.db, r.key); ok && r.s.ix.entry(i).expired(now) {
			return true
		}
	}
	return false
}

// touchLocked marks the watchers of (db, key) dirty: the key is being written. The shard's
// write lock is held.
func (s *shard) touchLocked(h uint64, db uint8, key []byte) {
	if len(s.watched) == 0 {
		return
	}
	for _, r := range s.watched[uint32(h)] {
		if r.db == db && bytes.Equal(r.key, key) {
			r.w.dirty.Store(true)
		}
	}
}

// touchRemovedLocked marks the watchers of e's key dirty: the key is being removed. A key that
// was expired already when watched is left alone: its removal is expiry taking it, no change
// (a write of it marks its watchers through touchLocked). The shard's write lock is held.
func (s *shard) touchRemovedLocked(e *entry) {
	if len(s.watched) == 0 {
		return
	}
	regs := s.watched[e.hash]
	if len(regs) == 0 {
		return
	}
	key := s.ix.key(e)
	for _, r := range regs {
		if r.db != e.db() || !bytes.Equal(r.key, key) {
			continue
		}
		if r.expired {
			r.expired = false
			continue
		}
		r.w.dirty.Store(true)
	}
}

// touchAllLocked marks dirty the watchers of every key the shard holds: it is being emptied. The
// shard's write lock is held.
func (s *shard) touchAllLocked() {
	for h, regs := range s.watched {
		for _, r := range regs {
			if _, _, ok := s.ix.find(h, r.db, r.key); !ok {
				continue
			}
			if r.expired {
				r.expired = false
				continue
			}
			r.w.dirty.Store(true)
		}
	}
}
