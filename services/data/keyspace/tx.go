package keyspace

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

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
	// opEdit is an in-place edit of a chunked value (WriteAt): chunks that differ from the
	// manifest read, over that manifest.
	opEdit
	// opGroups is a grouped value written by PutGroups (grouped.go).
	opGroups
)

// txKey is the transaction's view of one distinct key.
type txKey struct {
	db    uint8 // physical (dbmap.go)
	ldb   uint8 // logical: the number the caller named
	key   []byte
	hash  uint64
	shard *shard

	// State at the start of this attempt (after lazy expiry); found follows the attempt's
	// Put and Delete, had keeps whether the key was there at the start (Session.TrackKeys).
	found bool
	had   bool
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

	// A chunked value's manifest and chunks of it read by an earlier attempt (chunked.go),
	// valid while the entry's record location is manLoc, like cached.
	man       *manifest
	manLoc    uint64
	parts     map[int][]byte
	wantMan   bool
	wantParts []int
	// dview is a grouped value's directory as Tx.Dir shows it, made of man.
	dview *Directory

	// Pending write.
	op       txOp
	val      []byte
	expireAt int64
	vtype    uint8
	// For opEdit: the chunks that differ from man's (by index), and the new length.
	edits map[int][]byte
	elen  int64
	// plan is the manifest of a chunked value being put, made when the commit sizes it.
	plan *manifest
	// For opGroups: the directory to write; gplan and gnew, made when the commit sizes it, are
	// its manifest and its new groups (groupsPlan). A put of a large value not a string uses
	// them too.
	gview *Directory
	gplan *manifest
	gnew  []int
	// chunkMin is the length above which a string is chunked (Options.chunkMin), groupMin the
	// one above which another type is grouped (Options.GroupThreshold).
	chunkMin, groupMin int
	// dep is the change the key's state depends on (durable.go), as the attempt found it.
	dep uint64
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
	dbm   *dbMap // the map the keys were translated by (setup)
	// ends, while a transaction of several records commits, is where each shard's part ends
	// (an LSN); multiShard says it spans several shards.
	ends       map[*shard]uint64
	multiShard bool
	// noTouch: the keys' access information stays as it is (Session.SetNoTouch).
	noTouch bool
}

// Now is the transaction's clock (unix ms), fixed for one attempt.
func (tx *Tx) Now() int64 { return tx.now }

// Exists reports whether key i exists.
func (tx *Tx) Exists(i int) bool { return tx.keys[i].found }

// Meta returns key i's metadata.
func (tx *Tx) Meta(i int) (Meta, bool) { return tx.keys[i].meta() }

// meta is the key's metadata as the transaction sees it.
func (k *txKey) meta() (Meta, bool) {
	if !k.found {
		return Meta{}, false
	}
	switch k.op {
	case opPut:
		return Meta{Type: k.vtype &^ RawHint, Raw: k.vtype&RawHint != 0, ExpireAt: k.expireAt, Len: len(k.val)}, true
	case opEdit:
		return Meta{Type: k.vtype &^ RawHint, Raw: k.vtype&RawHint != 0, ExpireAt: k.expireAt, Len: int(k.elen)}, true
	case opGroups:
		return Meta{Type: k.vtype &^ RawHint, ExpireAt: k.expireAt, Len: k.plannedDirSize(), Grouped: true}, true
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
	if k.op == opGroups {
		v, err := tx.groupedValue(i)
		return v, err == nil, err
	}
	if k.cacheValid() {
		if k.op == opEdit {
			v := make([]byte, k.elen)
			copy(v, k.cached)
			for j, c := range k.edits {
				copy(v[j*k.man.chunk:], c)
			}
			return v, true, nil
		}
		return k.cached, true, nil
	}
	k.wantValue = true
	return nil, false, errNeedValue
}

// Put sets key i to val (type vtype) with expireAt (0 = none). val must stay unchanged until
// Update returns.
func (tx *Tx) Put(i int, val []byte, expireAt int64, vtype uint8) {
	k := tx.keys[i]
	k.op, k.val, k.expireAt, k.vtype, k.found = opPut, val, expireAt, vtype&^vtChunked, true
	k.edits, k.gview, k.gplan = nil, nil, nil
}

// WriteAt overwrites key i's value from byte off with patch, as SETRANGE and APPEND do: the
// value grows, zero-filled, when off+len(patch) passes its end; a missing key is created
// without expiry, an existing one keeps its expire-at; the key's type becomes vtype (RawHint
// included). An empty patch within the value changes only the type. Of a chunked value only
// the chunks the patch overwrites in part are read, and only the chunks it changes are written
// again, with a new manifest (chunked.go); a small value is read whole. Like Value, it may
// return an error the function must return as is, and is called again with the data it needs.
func (tx *Tx) WriteAt(i int, off int64, patch []byte, vtype uint8) error {
	k := tx.keys[i]
	vtype &^= vtChunked
	end := off + int64(len(patch))
	if off < 0 || end > MaxValueLen {
		return errValueTooLong
	}
	if !k.found {
		nv := make([]byte, end)
		copy(nv[off:], patch)
		tx.Put(i, nv, 0, vtype)
		return nil
	}
	exp := k.entry.expireAt
	if k.op != opNone {
		exp = k.expireAt // opPut, opExpire, opEdit
	}
	if k.op == opPut || k.op != opEdit && !k.entry.chunked() {
		cur := k.val
		if k.op != opPut {
			v, _, err := tx.Value(i)
			if err != nil {
				return err
			}
			cur = v
		}
		nv := make([]byte, max(int64(len(cur)), end))
		copy(nv, cur)
		copy(nv[off:], patch)
		tx.Put(i, nv, exp, vtype)
		return nil
	}
	if !k.manValid() {
		k.wantMan = true
		return errNeedValue
	}
	cur := k.man.length
	if k.op == opEdit {
		cur = k.elen
	}
	if len(patch) == 0 && off <= cur {
		// A chunked value is reported "raw" whatever its type byte says: nothing to write.
		if k.op == opEdit {
			k.vtype = vtype
		}
		return nil
	}
	cs := int64(k.man.chunk)
	newLen := max(cur, end)
	// The chunks that change: those the patch overlaps, and when the value grows, every one
	// from the chunk holding its old end on (its extent changes, or it is new).
	lo, hi := off/cs, (end-1)/cs
	if end > cur {
		lo = min(lo, cur/cs)
	}
	var need []int
	for j := lo; j <= hi; j++ {
		from, to := j*cs, min((j+1)*cs, cur)
		if from < to && (off > from || end < to) { // holds bytes the patch leaves
			if _, ok := k.chunkNow(int(j)); !ok {
				need = append(need, int(j))
			}
		}
	}
	if len(need) > 0 {
		k.wantParts = need
		return errNeedValue
	}
	if k.op != opEdit {
		k.op, k.edits, k.elen, k.expireAt = opEdit, map[int][]byte{}, cur, exp
	}
	var zeros []byte
	for j := lo; j <= hi; j++ {
		from, curTo, newTo := j*cs, min((j+1)*cs, cur), min((j+1)*cs, newLen)
		ps, pe := max(off, from), min(end, newTo)
		if from >= curTo && ps >= pe {
			// A chunk of the gap SETRANGE leaves past the old end: zeros, shared (every
			// write to a chunk makes a new one).
			if zeros == nil {
				zeros = make([]byte, cs)
			}
			k.edits[int(j)] = zeros[:newTo-from]
			continue
		}
		c := make([]byte, newTo-from)
		if from < curTo {
			old, _ := k.chunkNow(int(j))
			copy(c, old)
		}
		if ps < pe {
			copy(c[ps-from:], patch[ps-off:pe-off])
		}
		k.edits[int(j)] = c
	}
	k.elen, k.vtype = newLen, vtype
	return nil
}

// manValid reports whether the manifest read earlier is the one the key's entry points at.
func (k *txKey) manValid() bool { return k.man != nil && k.manLoc == k.entry.loc() }

// chunkNow returns chunk j of the key's chunked value as the transaction sees it: edited, or
// read earlier.
func (k *txKey) chunkNow(j int) ([]byte, bool) {
	if c, ok := k.edits[j]; ok {
		return c, true
	}
	c, ok := k.parts[j]
	return c, ok
}

// Delete removes key i and reports whether it existed.
func (tx *Tx) Delete(i int) bool {
	k := tx.keys[i]
	existed := k.found
	if existed || k.op == opPut {
		k.op = opDelete
	}
	k.found, k.edits = false, nil
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
	case opPut, opEdit, opGroups:
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
	if b := se.batch(); b != nil {
		return ks.updateBatch(se, b, keys, fn)
	}
	tx := &Tx{ks: ks, noTouch: se != nil && se.noTouch}
	var shards []*shard
	for {
		m := tx.setup(keys)
		shards = make([]*shard, 0, len(tx.uniq))
		for _, k := range tx.uniq {
			shards = append(shards, k.shard)
		}
		shards = sortShards(shards)
		for _, s := range shards {
			s.mu.Lock()
		}
		if !ks.mapMoved(m) {
			break
		}
		unlockAll(shards) // a swap came between: the keys' databases are others now
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			for {
				for _, s := range shards {
					s.mu.Lock()
				}
				if !ks.mapMoved(tx.dbm) {
					break
				}
				// A swap came while the locks were down: translate again (the values fetched
				// were of other keys, so they are dropped).
				unlockAll(shards)
				tx.setup(keys)
				shards = shards[:0]
				for _, k := range tx.uniq {
					shards = append(shards, k.shard)
				}
				shards = sortShards(shards)
			}
		}
		tx.begin(ks.sessNow(se))
		err := fn(tx)
		if err == nil {
			err = tx.commitLocked(se, nil)
			unlockAll(shards)
			tx.noteDeps(se)
			if err == nil {
				tx.noteKeys(se)
			}
			return err
		}
		if !errors.Is(err, errNeedValue) {
			unlockAll(shards)
			tx.noteDeps(se) // an error reply may tell of the keys too (WRONGTYPE)
			return err
		}
		// Fetch the wanted values. After a few attempts lost to concurrent writers, read while
		// holding the locks so the transaction cannot starve.
		holding := attempt >= 3
		pend, want, chunked := tx.wantedLocked()
		if !holding {
			unlockAll(shards)
		}
		if err := ks.fetch(pend, want, chunked, holding); err != nil {
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

// wantedLocked prepares the reads of what the attempt asked for and did not have: the records
// of pend (values, or chunked values' manifests) for the keys of want, and the chunked keys,
// whose chunks are read after their manifests. The keys' shard locks are held.
func (tx *Tx) wantedLocked() (pend []*pendingRead, want, chunked []*txKey) {
	for _, k := range tx.uniq {
		if k.found && k.wants() && k.entry.chunked() && !k.manValid() && k.entry.vtype() != TypeString {
			if m := tx.ks.dirs.get(headLoc(k.shard, &k.entry)); m != nil {
				k.man, k.manLoc, k.parts, k.dview = m, k.entry.loc(), nil, nil
			}
		}
		if !k.found || !k.wants() || k.entry.chunked() && k.manValid() {
			continue // a chunked value's chunks are read after its manifest (fetch)
		}
		p := &pendingRead{}
		k.shard.prepareLocked(p, &k.entry, k.db, k.key)
		pend = append(pend, p)
		want = append(want, k)
	}
	for _, k := range tx.uniq {
		if k.found && k.wants() && k.entry.chunked() {
			chunked = append(chunked, k)
		}
	}
	return pend, want, chunked
}

// noteDeps makes se wait for the changes the keys the transaction looked at depend on.
func (tx *Tx) noteDeps(se *Session) {
	for _, k := range tx.uniq {
		tx.ks.noteDep(se, k.shard, k.dep)
	}
}

func unlockAll(shards []*shard) {
	for i := len(shards) - 1; i >= 0; i-- {
		shards[i].mu.Unlock()
	}
}

// fetch completes the reads and caches copies of the values in their keys: the records of
// pend (values, or chunked values' manifests) for want, then what the chunked keys want of
// their chunks. Without the locks (holding false) a chunk whose segment a collection dropped
// meanwhile is left out: the next attempt finds the key's entry moved and asks again.
func (ks *Keyspace) fetch(pend []*pendingRead, want, chunked []*txKey, holding bool) error {
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
		k := want[j]
		switch {
		case err != nil:
		case p.chunked:
			var m *manifest
			if m, err = decodeManifestOf(val, k.entry.vtype(), k.shard.cs); err == nil && m.length != int64(k.entry.vlen) {
				err = fmt.Errorf("%w: manifest of %d bytes, the index says %d", vlog.ErrCorrupt, m.length, k.entry.vlen)
			}
			if err != nil {
				err = ks.readErr(err)
			} else if err = ks.resolveDir(m); err == nil {
				k.man, k.manLoc, k.parts, k.dview = m, k.entry.loc(), nil, nil
				if m.g != nil {
					ks.dirs.put(headLoc(k.shard, &k.entry), m)
				}
			} else if !holding && errors.Is(err, vlog.ErrSegmentGone) {
				// A collection moved the directory's base: the next attempt finds the entry
				// moved, or holds the locks.
				ks.stats.moved.Add(1)
				err = nil
			}
		default:
			// A new buffer each time: a value put from this one (COPY, RENAME) may still use
			// the old one.
			k.cached = bytes.Clone(val)
			k.cachedLoc, k.haveCached = k.entry.loc(), true
		}
		if err != nil && first == nil {
			first = err
		}
		if p.ready {
			p.rd.Release()
		}
	}
	if first != nil {
		return first
	}
	for _, k := range chunked {
		if err := ks.fetchChunks(k); err != nil {
			if !holding && errors.Is(err, vlog.ErrSegmentGone) {
				ks.stats.moved.Add(1)
				continue // the next attempt finds the entry moved, or holds the locks
			}
			return err
		}
	}
	return nil
}

// fetchChunks reads what k wants of its chunked value, whose manifest is read: the whole value
// (into cached), or the chunks WriteAt asked for (into parts).
func (ks *Keyspace) fetchChunks(k *txKey) error {
	if !k.manValid() {
		return nil
	}
	m := k.man
	if k.wantValue && !k.cacheValid() && m.g != nil {
		v, err := ks.readGrouped(m, k.entry.vtype())
		if err != nil {
			return err
		}
		k.cached, k.cachedLoc, k.haveCached = v, k.manLoc, true
	} else if k.wantValue && !k.cacheValid() {
		buf := make([]byte, m.length)
		if err := ks.readValueRange(m, 0, m.length, buf); err != nil {
			return err
		}
		k.cached, k.cachedLoc, k.haveCached = buf, k.manLoc, true
	}
	var js []int
	for _, j := range k.wantParts {
		if _, ok := k.parts[j]; !ok {
			js = append(js, j)
		}
	}
	if len(js) == 0 {
		return nil
	}
	if k.parts == nil {
		k.parts = map[int][]byte{}
	}
	return ks.readChunks(m, js, func(i int, b []byte) {
		k.parts[js[i]] = append([]byte(nil), b...)
	})
}

// cacheValid reports whether the value cached by an earlier attempt is the key's value now.
func (k *txKey) cacheValid() bool { return k.haveCached && k.cachedLoc == k.entry.loc() }

// wants reports whether the attempt asked for data of the key it did not have.
func (k *txKey) wants() bool {
	return k.wantValue && !k.cacheValid() || k.wantMan || len(k.wantParts) > 0
}

// setup lists the transaction's keys, their databases translated through the current map,
// which it returns: the caller that takes the keys' locks after it checks that the map is still
// that one once it holds them (mapMoved), or holds every lock already (an EXEC).
func (tx *Tx) setup(keys []Key) *dbMap { return tx.setupMap(keys, tx.ks.dbm.cur.Load()) }

// setupMap is setup with the map m.
func (tx *Tx) setupMap(keys []Key, m *dbMap) *dbMap {
	tx.dbm = m
	tx.uniq = tx.uniq[:0]
	tx.keys = make([]*txKey, len(keys))
	tx.store = make([]txKey, 0, len(keys))
	var seen map[string]*txKey
	if len(keys) > 8 {
		seen = make(map[string]*txKey, len(keys))
	}
	for i, key := range keys {
		db := m[uint8(key.DB)]
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
		tx.store = append(tx.store, txKey{db: db, ldb: uint8(key.DB), key: key.Key, hash: h, shard: tx.ks.shardOf(h), chunkMin: tx.ks.opts.chunkMin, groupMin: tx.ks.opts.GroupThreshold})
		k := &tx.store[len(tx.store)-1]
		tx.keys[i] = k
		tx.uniq = append(tx.uniq, k)
		if seen != nil {
			seen[string(append([]byte{db}, key.Key...))] = k
		}
	}
	return m
}

// begin loads each key's entry for a new attempt. Shard locks are held.
func (tx *Tx) begin(now int64) {
	tx.now = now
	for _, k := range tx.uniq {
		k.resetOps()
		i, ok, _ := tx.ks.findLiveLocked(k.shard, k.hash, k.db, k.key, tx.now)
		k.dep = k.shard.depLocked(k.hash)
		k.found, k.had = ok, ok
		if ok {
			k.idx = i
			k.entry = *k.shard.ix.entry(i)
			if !tx.noTouch {
				tx.ks.accessed(k.shard, i)
			}
		}
	}
}

// resetOps forgets what an attempt did to the key and asked of it.
func (k *txKey) resetOps() {
	k.op, k.val, k.wantValue = opNone, nil, false
	k.wantMan, k.wantParts, k.edits, k.elen, k.plan = false, nil, nil, 0, nil
	k.gview, k.gplan, k.gnew = nil, nil, nil
}

// commitLocked appends the transaction's records and updates the index. A transaction that
// writes one record (or one chunked value: its chunks and manifest) appends it as it is; one
// that writes more makes every shard's part one run of records, all carrying the transaction's
// commit condition, so that a crash leaves all of it or none (txcond.go). b, for the commit of
// an EXEC, adds its flush records, first in each shard's part. Nothing here waits for the disk:
// the session's durability wait does, after the locks are gone.
func (tx *Tx) commitLocked(se *Session, b *execBatch) error {
	shards, err := tx.commitRecordsLocked(se, b)
	if err == nil && len(shards) > 0 {
		tx.ks.changedLocked(se, tx.now, shards...)
	}
	return err
}

// commitRecordsLocked appends the records of commitLocked and applies them; it returns the
// shards it wrote to.
func (tx *Tx) commitRecordsLocked(se *Session, b *execBatch) ([]*shard, error) {
	var writers []*txKey
	for _, k := range tx.uniq {
		if k.writesLocked(b) {
			writers = append(writers, k)
		}
	}
	flushes := b.flushesLocked(tx.ks)
	switch {
	case len(writers)+len(flushes) == 0:
		return nil, nil
	case len(writers) == 1 && len(flushes) == 0:
		return []*shard{writers[0].shard}, tx.applyLocked(se, writers[0], nil)
	case len(writers) == 0 && len(flushes) == 1:
		f := flushes[0]
		_, err := tx.ks.appendEachLocked(se, []*shard{f.s}, f.header(), f.applyLocked)
		return []*shard{f.s}, err
	}
	// Puts first: a removal may compact the index's key arena, which the room reserved for
	// new keys must not depend on. (Flushes go before both: the puts after them reserve their
	// room again as they apply, and find it, the flush having just freed memory.)
	slices.SortStableFunc(writers, func(a, b *txKey) int { return cmp.Compare(a.removeRank(), b.removeRank()) })
	var shards []*shard
	for _, k := range writers {
		shards = append(shards, k.shard)
	}
	for _, f := range flushes {
		shards = append(shards, f.s)
	}
	shards = sortShards(shards)
	extLen := txExtLen(txCode(len(shards), len(tx.ks.shards)), len(tx.ks.shards))
	// Room in the index for every new key, and each part's place in its log, before anything
	// is appended: once the first record is in, the rest must follow.
	parts := make([]txPart, len(shards))
	for i, s := range shards {
		parts[i].s = s
	}
	for _, f := range flushes {
		parts[slices.Index(shards, f.s)].bytes += vlog.RecordSize(extLen, 0, 0)
	}
	for _, k := range writers {
		p := &parts[slices.Index(shards, k.shard)]
		n, err := k.recordBytes(extLen)
		if err != nil {
			return nil, err
		}
		p.bytes += n
		if (k.op == opPut || k.op == opEdit || k.op == opGroups) && !k.inIndexLocked(b) {
			p.news++
			p.arena += arenaSize(len(k.key))
		}
	}
	cond := tx.ks.newTx()
	for i := range parts {
		p := &parts[i]
		if err := p.s.ix.reserveN(p.news, p.arena); err != nil {
			cancelReserves(parts[:i])
			return nil, err
		}
		end, err := p.s.log.Reserve(p.bytes)
		if err != nil {
			cancelReserves(parts[:i])
			return nil, fmt.Errorf("keyspace: %w", err)
		}
		cond.ends = append(cond.ends, txEnd{shard: uint16(p.s.id), at: end})
	}
	if len(shards) >= 255 {
		// Past 254 shards the entries cannot say how many took part: list them all (txCode).
		for i := range tx.ks.shards {
			if !slices.ContainsFunc(cond.ends, func(e txEnd) bool { return int(e.shard) == i }) {
				cond.ends = append(cond.ends, txEnd{shard: uint16(i)})
			}
		}
	}
	ext := cond.encode(make([]byte, 0, extLen))
	tx.ends, tx.multiShard = make(map[*shard]uint64, len(shards)), len(shards) > 1
	defer func() { tx.ends, tx.multiShard = nil, false }()
	fail := func(err error) error {
		// Only a bug, a closed log or an index refused memory gets here: the room was
		// reserved. The parts already appended must never apply, whatever the logs reach
		// later.
		cancelReserves(parts)
		if aerr := tx.ks.tx.abort(tx.ks.opts.FS, tx.ks.opts.Dir, cond.id); aerr != nil {
			tx.ks.log.Error("cannot record an aborted transaction", "err", aerr)
		}
		return err
	}
	for _, f := range flushes {
		if err := tx.flushLocked(se, f, ext); err != nil {
			return nil, fail(err)
		}
	}
	for _, k := range writers {
		if err := tx.applyLocked(se, k, ext); err != nil {
			return nil, fail(err)
		}
	}
	tx.ks.addBarriersLocked(shards, tx.ends)
	return shards, nil
}

// addBarriersLocked makes each shard's log wait, after its part of a transaction (which ends at
// ends[s]), for the other parts (vlog.Log.AddBarrier). The shards' locks are held.
func (ks *Keyspace) addBarriersLocked(shards []*shard, ends map[*shard]uint64) {
	if len(shards) < 2 {
		return // one log is durable as a prefix by itself
	}
	for _, s := range shards {
		peers := make([]vlog.Peer, 0, len(shards)-1)
		for _, o := range shards {
			if o != s {
				peers = append(peers, vlog.Peer{Log: o.log, LSN: ends[o]})
			}
		}
		s.log.AddBarrier(ends[s], peers)
	}
}

// txPart is one shard's part of a transaction being committed: its bytes in the log, and the
// new keys it adds to the index with the arena bytes they take.
type txPart struct {
	s     *shard
	bytes int64
	news  int
	arena int
}

// cancelReserves drops the log reservations of parts of a transaction that failed.
func cancelReserves(parts []txPart) {
	for _, p := range parts {
		p.s.log.CancelReserve()
	}
}

// writesLocked reports whether k's pending operation writes a record: a delete of a key that
// is no longer there (lazy expiry removed it within the attempt, or b flushed it) writes none.
func (k *txKey) writesLocked(b *execBatch) bool {
	switch k.op {
	case opPut, opEdit, opExpire, opGroups:
		return true
	case opDelete:
		return k.inIndexLocked(b)
	}
	return false
}

// removeRank orders a transaction's writes: puts and edits (0) before removals (1).
func (k *txKey) removeRank() int {
	if k.op == opDelete {
		return 1
	}
	return 0
}

// recordBytes is the size of the records applyLocked appends for k, each effective record with
// an extension block of extLen bytes.
func (k *txKey) recordBytes(extLen int) (int64, error) {
	switch k.op {
	case opPut:
		if int64(len(k.val)) > MaxValueLen {
			return 0, errValueTooLong
		}
		if k.grouping() {
			m, js := k.groupsPlan()
			return chunkedBytes(m, js, len(k.key), extLen), nil
		}
		if len(k.val) > k.chunkMin {
			m := k.newManifest(k.shard)
			js := make([]int, len(m.locs))
			for j := range js {
				js[j] = j
			}
			return chunkedBytes(m, js, len(k.key), extLen), nil
		}
		return vlog.RecordSize(extLen, len(k.key), len(k.val)), nil
	case opEdit:
		m, js := k.editManifest()
		return chunkedBytes(m, js, len(k.key), extLen), nil
	case opGroups:
		m, js := k.groupsPlan()
		return chunkedBytes(m, js, len(k.key), extLen), nil
	}
	return vlog.RecordSize(extLen, len(k.key), 0), nil
}

// grouping reports whether k's put is of a value that is grouped rather than one record: longer
// than groupMin and not a string (strings are chunked, past chunkMin).
func (k *txKey) grouping() bool {
	return k.op == opPut && k.vtype&0xf != TypeString && len(k.val) > k.groupMin
}

// noteLocked records that k changed at lsn: the session waits for it before it replies, and a
// transaction of several records learns where its part in k's shard ends.
func (tx *Tx) noteLocked(se *Session, k *txKey, lsn uint64) {
	se.note(k.shard.id, lsn)
	k.shard.changedLocked(k.hash, lsn, tx.multiShard)
	if tx.ends != nil {
		tx.ends[k.shard] = max(tx.ends[k.shard], lsn)
	}
}

// applyLocked appends k's record (or chunked value) with extension ext (nil: none) and
// updates the index.
func (tx *Tx) applyLocked(se *Session, k *txKey, ext []byte) error {
	s := k.shard
	code := uint8(0)
	if ext != nil {
		code = txCode(int(binary.LittleEndian.Uint16(ext[8:])), len(tx.ks.shards))
	}
	i, pos, found := s.ix.find(uint32(k.hash), k.db, k.key)
	if k.op == opDelete && !found {
		return nil // deleted by lazy expiry within this transaction: nothing on disk to undo
	}
	s.touchLocked(k.hash, k.db, k.key)
	if (k.op == opPut || k.op == opGroups) && !found {
		// Room in the index first: a record the index cannot take must not reach the log.
		if err := s.ix.reserve(len(k.key)); err != nil {
			return err
		}
	}
	var h vlog.Header
	var val []byte
	switch k.op {
	case opPut:
		switch {
		case int64(len(k.val)) > MaxValueLen:
			return errValueTooLong
		case k.grouping():
			return tx.groupsLocked(se, k, i, found, ext, code) // grouped.go
		case k.vtype&0xf == TypeString && len(k.val) > k.chunkMin:
			return tx.putChunkedLocked(se, k, i, found, ext, code) // chunked.go
		}
		h, val = recordHeader(vlog.KindPut, k.db, k.vtype, k.expireAt, s.version+1, ext), k.val
	case opEdit:
		return tx.editChunkedLocked(se, k, i, found, ext, code)
	case opGroups:
		return tx.groupsLocked(se, k, i, found, ext, code)
	case opDelete:
		h = recordHeader(vlog.KindDelete, k.db, 0, 0, s.version+1, ext)
	case opExpire:
		h = recordHeader(vlog.KindExpire, k.db, 0, k.expireAt, s.version+1, ext)
	}
	loc, lsn, err := s.log.AppendExt(h, ext, k.key, val)
	if err != nil {
		return fmt.Errorf("keyspace: %w", err)
	}
	s.version++
	tx.noteLocked(se, k, lsn)
	switch k.op {
	case opPut:
		if found {
			s.markDeadLocked(s.ix.entry(i))
		}
		v := valueRef{vtype: k.vtype, tx: code, expireAt: k.expireAt, seg: loc.Seg, off: loc.Off, vlen: uint32(len(val))}
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
	if invariants {
		tx.ks.checkKeyLocked(s, k.db, k.key)
	}
	return nil
}

// Put sets (db, key) to val of type vtype with expireAt (0 = none), replacing any value: the
// fast path of a plain SET, with no transaction set-up. An expireAt already past deletes the key.
func (ks *Keyspace) Put(se *Session, db int, key, val []byte, expireAt int64, vtype uint8) error {
	if b := se.batch(); b != nil {
		return ks.updateBatch(se, b, []Key{{DB: db, Key: key}}, func(tx *Tx) error {
			if expireAt != 0 && expireAt <= tx.now {
				tx.Delete(0)
			} else {
				tx.Put(0, val, expireAt, vtype)
			}
			return nil
		})
	}
	pdb, h, s := ks.lockKey(db, key)
	defer s.mu.Unlock()
	k := txKey{db: pdb, ldb: uint8(db), key: key, hash: h, shard: s, op: opPut, val: val, expireAt: expireAt, vtype: vtype &^ vtChunked, chunkMin: ks.opts.chunkMin, groupMin: ks.opts.GroupThreshold}
	now := ks.sessNow(se)
	if expireAt != 0 && expireAt <= now {
		k.op = opDelete
	}
	if se != nil && se.track {
		// Only for the events "new" and "del": whether the key is there (and not expired).
		if i, _, found := s.ix.find(uint32(h), k.db, key); found {
			e := s.ix.entry(i)
			k.had = e.expireAt == 0 || e.expireAt > now
		}
		k.found = k.op == opPut
	}
	tx := Tx{ks: ks}
	if err := tx.applyLocked(se, &k, nil); err != nil {
		return err
	}
	ks.changedLocked(se, now, s)
	if se != nil && se.track {
		noteKey(se, &k)
	}
	return nil
}
