package keyspace

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// Key names a key in a database.
type Key struct {
	DB  int
	Key []byte
}

// errNeedValue is returned by Tx.Value when the value is on disk and not yet fetched; Update
// drops its locks, reads it and runs the function again.
var errNeedValue = errors.New("keyspace: value not loaded")

func isCorrupt(err error) bool { return errors.Is(err, vlog.ErrCorrupt) }

type txOp uint8

const (
	opNone txOp = iota
	opPut
	opDelete
	opExpire
)

// txKey is the transaction's view of one distinct key.
type txKey struct {
	db    uint8
	key   []byte
	hash  uint64
	shard *shard

	// State at the start of this attempt (after lazy expiry).
	found bool
	entry entry
	idx   uint32

	// Cached value from an earlier attempt, valid while the entry's record location is
	// cachedLoc. Every write of a value appends a new record, and a location is never reused
	// (segment ids only grow), so an unchanged location means an unchanged value; EXPIRE and
	// PERSIST keep the location, and the expire-at comes from the entry, not the cache.
	cached     []byte
	cachedLoc  uint64
	haveCached bool
	wantValue  bool

	// Pending write.
	op       txOp
	val      []byte
	expireAt int64
	vtype    uint8
}

// Tx is a transaction over a fixed set of keys, passed to the function given to Update. Its
// methods take the position of the key in Update's key list. Writes take effect when the
// function returns nil; reads see the transaction's own writes.
type Tx struct {
	ks    *Keyspace
	keys  []*txKey // one per position given to Update (duplicates share a txKey)
	uniq  []*txKey
	now   int64
	store []txKey
}

// Now is the transaction's clock (unix ms), fixed for one attempt.
func (tx *Tx) Now() int64 { return tx.now }

// Exists reports whether key i exists.
func (tx *Tx) Exists(i int) bool { return tx.keys[i].found }

// Meta returns key i's metadata.
func (tx *Tx) Meta(i int) (Meta, bool) {
	k := tx.keys[i]
	if !k.found {
		return Meta{}, false
	}
	if k.op == opPut {
		return Meta{Type: k.vtype &^ RawHint, Raw: k.vtype&RawHint != 0, ExpireAt: k.expireAt, Len: len(k.val)}, true
	}
	m := k.entry.metaOf()
	if k.op == opExpire {
		m.ExpireAt = k.expireAt
	}
	return m, true
}

// Value returns key i's value (nil, false if it does not exist). The bytes must not be
// modified. If the value must come from disk the first call returns an error the function must
// return as is; the function will be called again with the value available.
func (tx *Tx) Value(i int) ([]byte, bool, error) {
	k := tx.keys[i]
	if !k.found {
		return nil, false, nil
	}
	if k.op == opPut {
		return k.val, true, nil
	}
	if k.cacheValid() {
		return k.cached, true, nil
	}
	k.wantValue = true
	return nil, false, errNeedValue
}

// Put sets key i to val (type vtype) with expireAt (0 = none). val must stay unchanged until
// Update returns.
func (tx *Tx) Put(i int, val []byte, expireAt int64, vtype uint8) {
	k := tx.keys[i]
	k.op, k.val, k.expireAt, k.vtype, k.found = opPut, val, expireAt, vtype, true
}

// Delete removes key i and reports whether it existed.
func (tx *Tx) Delete(i int) bool {
	k := tx.keys[i]
	existed := k.found
	if existed || k.op == opPut {
		k.op = opDelete
	}
	k.found = false
	return existed
}

// SetExpire changes key i's expire-at, which must exist; expireAt <= now deletes it.
func (tx *Tx) SetExpire(i int, expireAt int64) {
	k := tx.keys[i]
	if !k.found {
		return
	}
	if expireAt != 0 && expireAt <= tx.now {
		tx.Delete(i)
		return
	}
	switch k.op {
	case opPut:
		k.expireAt = expireAt
	default:
		k.op, k.expireAt = opExpire, expireAt
	}
}

// Update runs fn as a transaction over keys, under the locks of every shard they live in, and
// applies its writes atomically with respect to every other keyspace operation. fn may be run
// more than once and must not have side effects outside the Tx until it returns nil. Writes are
// recorded in se for the connection's durability wait.
func (ks *Keyspace) Update(se *Session, keys []Key, fn func(tx *Tx) error) error {
	tx := &Tx{ks: ks}
	tx.setup(keys)
	shards := make([]*shard, 0, len(tx.uniq))
	for _, k := range tx.uniq {
		shards = append(shards, k.shard)
	}
	shards = sortShards(shards)
	for attempt := 0; ; attempt++ {
		for _, s := range shards {
			s.mu.Lock()
		}
		tx.begin()
		err := fn(tx)
		if err == nil {
			err = tx.commitLocked(se, len(shards) > 1)
			unlockAll(shards)
			return err
		}
		if !errors.Is(err, errNeedValue) {
			unlockAll(shards)
			return err
		}
		// Fetch the wanted values. After a few attempts lost to concurrent writers, read while
		// holding the locks so the transaction cannot starve.
		holding := attempt >= 3
		var pend []*pendingRead
		var want []*txKey
		for _, k := range tx.uniq {
			if !k.wantValue || !k.found || k.cacheValid() {
				continue
			}
			p := &pendingRead{}
			k.shard.prepareLocked(p, &k.entry, k.db, k.key)
			pend = append(pend, p)
			want = append(want, k)
		}
		if !holding {
			unlockAll(shards)
		}
		if err := ks.fetch(pend, want); err != nil {
			if holding {
				unlockAll(shards)
			}
			return err
		}
		if holding {
			unlockAll(shards)
		}
	}
}

func unlockAll(shards []*shard) {
	for i := len(shards) - 1; i >= 0; i-- {
		shards[i].mu.Unlock()
	}
}

// fetch completes the reads and caches copies of the values in their keys.
func (ks *Keyspace) fetch(pend []*pendingRead, want []*txKey) error {
	reads := make([]*vlog.Read, 0, len(pend))
	for _, p := range pend {
		if p.ready {
			reads = append(reads, &p.rd)
		}
	}
	vlog.Submit(ks.opts.Engine, reads)
	var first error
	for j, p := range pend {
		val, err := ks.value(p)
		if err == nil {
			k := want[j]
			k.cached = append(k.cached[:0], val...)
			k.cachedLoc, k.haveCached = k.entry.loc(), true
		} else if first == nil {
			first = err
		}
		if p.ready {
			p.rd.Release()
		}
	}
	return first
}

// cacheValid reports whether the value cached by an earlier attempt is the key's value now.
func (k *txKey) cacheValid() bool { return k.haveCached && k.cachedLoc == k.entry.loc() }

func (tx *Tx) setup(keys []Key) {
	tx.keys = make([]*txKey, len(keys))
	tx.store = make([]txKey, 0, len(keys))
	var seen map[string]*txKey
	if len(keys) > 8 {
		seen = make(map[string]*txKey, len(keys))
	}
	for i, key := range keys {
		db := uint8(key.DB)
		var dup *txKey
		if seen != nil {
			dup = seen[string(append([]byte{db}, key.Key...))]
		} else {
			for _, k := range tx.uniq {
				if k.db == db && bytes.Equal(k.key, key.Key) {
					dup = k
					break
				}
			}
		}
		if dup != nil {
			tx.keys[i] = dup
			continue
		}
		h := tx.ks.hash(db, key.Key)
		tx.store = append(tx.store, txKey{db: db, key: key.Key, hash: h, shard: tx.ks.shardOf(h)})
		k := &tx.store[len(tx.store)-1]
		tx.keys[i] = k
		tx.uniq = append(tx.uniq, k)
		if seen != nil {
			seen[string(append([]byte{db}, key.Key...))] = k
		}
	}
}

// begin loads each key's entry for a new attempt. Shard locks are held.
func (tx *Tx) begin() {
	tx.now = tx.ks.opts.Now()
	for _, k := range tx.uniq {
		k.op, k.val, k.wantValue = opNone, nil, false
		i, pos, ok := k.shard.ix.find(uint32(k.hash), k.db, k.key)
		if ok && k.shard.ix.entry(i).expired(tx.now) {
			k.shard.removeLocked(i, pos)
			tx.ks.stats.expired.Add(1)
			ok = false
		}
		k.found = ok
		if ok {
			k.idx = i
			k.entry = *k.shard.ix.entry(i)
		}
	}
}

// commitLocked appends the transaction's records and updates the index. When the transaction
// spans shards and deletes keys, puts are written (and, unless appendfsync is "no", synced)
// before any delete is appended, so a crash between the two can lose the delete (the old key
// survives) but never both copies (RENAME, MOVE). Other multi-shard writes (MSET across
// shards) may be partly applied after a crash that hits before they were acknowledged.
func (tx *Tx) commitLocked(se *Session, multiShard bool) error {
	var putShards []*shard
	hasDelete := false
	for _, k := range tx.uniq {
		switch k.op {
		case opPut:
			if err := tx.applyLocked(se, k); err != nil {
				return err
			}
			putShards = append(putShards, k.shard)
		case opDelete:
			hasDelete = true
		}
	}
	if multiShard && hasDelete && len(putShards) > 0 {
		// Under everysec too: the background sync visits shards in turn, and a power loss
		// between the source's sync and the destination's must not lose both copies.
		sync := tx.ks.Fsync() != vlog.FsyncNo
		for _, s := range sortShards(putShards) {
			if err := s.log.Flush(s.log.AppendedLSN(), sync); err != nil {
				return err
			}
		}
	}
	for _, k := range tx.uniq {
		if k.op == opDelete || k.op == opExpire {
			if err := tx.applyLocked(se, k); err != nil {
				return err
			}
		}
	}
	return nil
}

func (tx *Tx) applyLocked(se *Session, k *txKey) error {
	s := k.shard
	h := vlog.Header{DB: k.db, Version: s.version + 1}
	var val []byte
	switch k.op {
	case opPut:
		h.Kind, h.VType, h.ExpireAt, val = vlog.KindPut, k.vtype, k.expireAt, k.val
	case opDelete:
		h.Kind = vlog.KindDelete
	case opExpire:
		h.Kind, h.ExpireAt = vlog.KindExpire, k.expireAt
	}
	i, pos, found := s.ix.find(uint32(k.hash), k.db, k.key)
	if k.op == opDelete && !found {
		return nil // deleted by lazy expiry within this transaction: nothing on disk to undo
	}
	if k.op == opPut && !found {
		// Room in the index first: a record the index cannot take must not reach the log.
		if err := s.ix.reserve(len(k.key)); err != nil {
			return err
		}
	}
	loc, lsn, err := s.log.Append(h, k.key, val)
	if err != nil {
		return fmt.Errorf("keyspace: %w", err)
	}
	s.version++
	se.note(s.id, lsn)
	switch k.op {
	case opPut:
		if found {
			s.markDeadLocked(s.ix.entry(i))
		}
		v := valueRef{vtype: k.vtype, expireAt: k.expireAt, seg: loc.Seg, off: loc.Off, vlen: uint32(len(val))}
		if _, _, err := s.pointLocked(i, found, uint32(k.hash), k.db, k.key, v); err != nil {
			return err // cannot happen after reserve
		}
	case opDelete:
		s.removeLocked(i, pos)
	case opExpire:
		e := s.ix.entry(i)
		s.countLocked(e, -1)
		e.expireAt = k.expireAt
		s.countLocked(e, 1)
	}
	return nil
}

// Put sets (db, key) to val of type vtype with expireAt (0 = none), replacing any value: the
// fast path of a plain SET, with no transaction set-up. An expireAt already past deletes the key.
func (ks *Keyspace) Put(se *Session, db int, key, val []byte, expireAt int64, vtype uint8) error {
	h := ks.hash(uint8(db), key)
	s := ks.shardOf(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := txKey{db: uint8(db), key: key, hash: h, shard: s, op: opPut, val: val, expireAt: expireAt, vtype: vtype}
	if expireAt != 0 && expireAt <= ks.opts.Now() {
		k.op = opDelete
	}
	tx := Tx{ks: ks}
	return tx.applyLocked(se, &k)
}
