package keyspace

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// Meta is what the index knows about a key without reading its value.
type Meta struct {
	Type     uint8
	Raw      bool  // written by an in-place edit (see RawHint)
	ExpireAt int64 // unix ms, 0 = none
	// Len is the value's length in bytes; of a grouped value (Grouped), its directory's size.
	Len int
	// Grouped says the value is stored as groups and a directory (grouped.go): it is large.
	Grouped bool
}

func (e *entry) metaOf() Meta {
	return Meta{Type: e.vtype(), Raw: e.raw(), ExpireAt: e.expireAt, Len: int(e.vlen),
		Grouped: e.chunked() && e.vtype() != TypeString}
}

func (e *entry) expired(now int64) bool { return e.expireAt != 0 && e.expireAt <= now }

// Lookup returns a key's metadata. An expired key is reported missing (and removed). se (nil:
// none) is made to wait for what the answer depends on (durable.go).
func (ks *Keyspace) Lookup(se *Session, db int, key []byte) (Meta, bool) {
	if se.batch() != nil {
		return ks.lookupBatch(se, db, key)
	}
	pdb, h, s := ks.rlockKey(db, key)
	dep := s.depLocked(h)
	i, _, ok := s.ix.find(uint32(h), pdb, key)
	if !ok {
		s.mu.RUnlock()
		ks.noteDep(se, s, dep)
		return Meta{}, false
	}
	e := s.ix.entry(i)
	if e.expired(ks.readNow()) {
		s.mu.RUnlock()
		ks.expireKey(s, h, pdb, key)
		ks.noteDep(se, s, dep)
		return Meta{}, false
	}
	m := e.metaOf()
	s.mu.RUnlock()
	ks.noteDep(se, s, dep)
	return m, true
}

// Exists counts the keys that exist (a key named twice counts twice), looked up at one instant
// under the read locks of all their shards, so that a concurrent write of several of them is
// seen whole or not at all. missed (nil: none) is called, in order and once the locks are
// released, with the position of each key that does not exist (EXISTS states keymiss for them).
func (ks *Keyspace) Exists(se *Session, db int, keys [][]byte, missed func(i int)) int {
	n := 0
	var miss []int
	if se.batch() != nil {
		for i, key := range keys {
			if _, ok := ks.lookupBatch(se, db, key); ok {
				n++
			} else if missed != nil {
				miss = append(miss, i)
			}
		}
	} else {
		pdb, hs, shards := ks.rlockKeys(db, keys)
		now := ks.readNow()
		for i, key := range keys {
			s := ks.shardOf(hs[i])
			ks.noteDep(se, s, s.depLocked(hs[i]))
			if idx, _, ok := s.ix.find(uint32(hs[i]), pdb, key); ok && !s.ix.entry(idx).expired(now) {
				n++
			} else if missed != nil {
				miss = append(miss, i)
			}
		}
		unlockReadAll(shards)
	}
	for _, i := range miss {
		missed(i)
	}
	return n
}

// expireKey removes key if it is (still) expired.
func (ks *Keyspace) expireKey(s *shard, h uint64, db uint8, key []byte) {
	if ks.follower.Load() {
		return // the primary's DEL removes it
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ks.findLiveLocked(s, h, db, key, ks.opts.Now())
}

// findLiveLocked finds the key's index entry. An expired entry is removed on the way, as lazy
// expiry does, and reported as not found with removed set (reclamation must then ask again
// whether an older put of the key matters). A follower's entry is found as it is: only the
// primary's DEL removes a key there (SetFollower), and the DEL must find it, as Redis's replica
// lets its primary's commands see expired keys, so that the follower's keyspace event is the
// primary's "del" and not an "expired" of its own. The shard's write lock is held.
func (ks *Keyspace) findLiveLocked(s *shard, h uint64, db uint8, key []byte, now int64) (i uint32, ok, removed bool) {
	i, pos, ok := s.ix.find(uint32(h), db, key)
	if ok && s.ix.entry(i).expired(now) && !ks.follower.Load() {
		s.removeLocked(i, pos)
		ks.stats.expired.Add(1)
		ks.expiredLocked(s, db, key, now)
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

// Value is a key's value as a reader's callback gets it: Len bytes, in one piece or, for a
// large (chunked) value, read from the SSD piece by piece as the callback asks (Each), so that
// a reply can stream it without holding it whole. It is valid only during the callback.
type Value struct {
	Len   int
	whole []byte
	// A chunked value: bytes [from, to) of what man describes, its chunks' segments pinned.
	ks       *Keyspace
	man      *manifest
	from, to int64
	// A grouped value (grouped.go; man is its directory, Len its size): read and joined whole.
	vtype uint8
}

// Bytes returns the whole value; a chunked one is read into a new buffer.
func (v Value) Bytes() ([]byte, error) {
	if v.man == nil {
		return v.whole, nil
	}
	if v.man.g != nil {
		return v.ks.readGrouped(v.man, v.vtype)
	}
	buf := make([]byte, v.to-v.from)
	if err := v.ks.readValueRange(v.man, v.from, v.to, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// Each calls part with the value's bytes in order, in consecutive pieces (each valid during
// its call), until the end or until part returns an error, which Each returns. A chunked value
// is read readBatch chunks at a time, so a reader holds at most that much of it. An error after
// some pieces were handed on (a chunk failed verification) leaves the caller with part of the
// value: a reply must then be abandoned, not finished.
func (v Value) Each(part func([]byte) error) error {
	if v.man == nil {
		if len(v.whole) == 0 {
			return nil
		}
		return part(v.whole)
	}
	if v.man.g != nil {
		b, err := v.Bytes()
		if err != nil {
			return err
		}
		return part(b)
	}
	js := v.man.chunkRange(v.from, v.to)
	for start := 0; start < len(js); start += readBatch {
		batch := js[start:min(start+readBatch, len(js))]
		var perr error
		err := v.ks.readChunks(v.man, batch, func(i int, b []byte) {
			if perr != nil {
				return
			}
			cf, _ := v.man.span(batch[i])
			lo, hi := max(v.from, cf), min(v.to, cf+int64(len(b)))
			perr = part(b[lo-cf : hi-cf])
		})
		if perr != nil {
			return perr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Get reads a key's value and calls fn with it. It reports whether the key exists (an expired
// key does not) and returns the error of the read, or fn's. se (nil: none) is made to wait for
// what the reply depends on (durable.go).
func (ks *Keyspace) Get(se *Session, db int, key []byte, fn func(v Value, m Meta) error) (bool, error) {
	if se.batch() != nil {
		return ks.getBatch(se, db, key, nil, fn)
	}
	var p pendingRead
	pdb, h, s := ks.rlockKey(db, key)
	dep := s.depLocked(h)
	i, _, ok := s.ix.find(uint32(h), pdb, key)
	if !ok {
		s.mu.RUnlock()
		ks.noteDep(se, s, dep)
		ks.stats.misses.Add(1)
		return false, nil
	}
	e := s.ix.entry(i)
	if e.expired(ks.readNow()) {
		s.mu.RUnlock()
		ks.expireKey(s, h, pdb, key)
		ks.noteDep(se, s, dep)
		ks.stats.misses.Add(1)
		return false, nil
	}
	ks.accessedBy(se, s, i)
	if e.chunked() {
		s.mu.RUnlock()
		ks.stats.hits.Add(1)
		return ks.readValue(se, db, key, nil, fn)
	}
	m := e.metaOf()
	s.prepareLocked(&p, e, pdb, key)
	s.mu.RUnlock()
	ks.noteDep(se, s, dep)
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
	return true, fn(Value{Len: len(val), whole: val}, m)
}

// Bounds of one MGet batch: the keys whose records are read from the SSD together, and the
// bytes of those records. What a batch reads is handed on, and its buffers given back, before
// the next is read, so MGET of many keys or large values holds about mgetBytes of values,
// whatever the client asked for.
const (
	mgetBatch = 128
	mgetBytes = 4 << 20
)

// MGet reads many keys, a batch of disk reads at a time, and calls fn for each key in order,
// with ok false for a missing key and err set for a read that failed; a chunked value comes as a
// Value to stream (its chunks are read as fn asks for them). After each key it calls flush (when
// not nil), which may hand the replies written so far to the client, and stops when flush
// returns false. It returns the first error fn returned. se (nil: none) is made to wait for what
// the replies depend on.
//
// With snapshot, the keys are looked up at one instant, under the read locks of all their shards
// at once, so that the answers are those of one state of the keyspace: a concurrent MSET, EXEC or
// RENAME is wholly before it or wholly after it, as Redis's MGET sees it. The records found stay
// readable (their segments pinned) until the last is read, whatever writes and collections happen
// meanwhile. Without it (a pipeline of GETs) each key is looked up as its batch is read.
func (ks *Keyspace) MGet(se *Session, db int, keys [][]byte, snapshot bool, fn func(i int, v Value, m Meta, ok bool, err error) error, flush func() bool) error {
	if se.batch() != nil {
		return ks.mgetBatch(se, db, keys, fn)
	}
	var snaps []keySnap
	if snapshot {
		var release func()
		snaps, release = ks.snapshotKeys(se, db, keys)
		defer release()
	}
	at := func(int) (*Session, int) { return se, db }
	chunked := ks.readNowChunked
	if snapshot {
		chunked = ks.readSnapChunked
	}
	return ks.readKeys(keys, at, snaps, chunked, fn, flush)
}

// GetReq is one GET of ReadMany: a key of a database, for a session.
type GetReq struct {
	Se  *Session
	DB  int
	Key []byte
}

// ErrLarge is what ReadMany reports for a value stored in chunks (longer than ChunkThreshold),
// of which it reads nothing: its reader streams it with Get.
var ErrLarge = errors.New("keyspace: a large value, to be streamed")

// ReadMany answers many GETs, of any sessions and databases, a batch of disk reads at a time as
// MGet does: the read path of an event loop that answers the GETs of all its ready connections
// together. fn is called for each request in order; a chunked value comes with ok and ErrLarge
// (its metadata in m) and is not read.
func (ks *Keyspace) ReadMany(reqs []GetReq, fn func(i int, v Value, m Meta, ok bool, err error)) {
	keys := make([][]byte, len(reqs))
	for i := range reqs {
		keys[i] = reqs[i].Key
	}
	at := func(i int) (*Session, int) { return reqs[i].Se, reqs[i].DB }
	large := func(_ *Session, sn *keySnap, _ int, _ []byte, fn func(v Value, m Meta, ok bool, err error) error) error {
		return fn(Value{}, sn.meta, true, ErrLarge)
	}
	ks.readKeys(keys, at, nil, large, func(i int, v Value, m Meta, ok bool, err error) error {
		fn(i, v, m, ok, err)
		return nil
	}, nil)
}

// readKeys is the body of MGet and ReadMany: keys[i] of the session and database at(i) gives,
// looked up a batch at a time (or as snaps found them, when not nil), read with one engine batch
// per mgetBatch keys or mgetBytes, and handed to fn in order; chunked reads a chunked value.
func (ks *Keyspace) readKeys(keys [][]byte, at func(i int) (*Session, int), snaps []keySnap,
	chunked func(se *Session, sn *keySnap, db int, key []byte, fn func(v Value, m Meta, ok bool, err error) error) error,
	fn func(i int, v Value, m Meta, ok bool, err error) error, flush func() bool) error {
	lookup := snaps == nil
	if lookup {
		snaps = make([]keySnap, len(keys))
	}
	n := min(len(keys), mgetBatch)
	ps := make([]pendingRead, n)
	reads := make([]*vlog.Read, 0, n)
	for start := 0; start < len(keys); {
		end, bytes := start, int64(0)
		for end < len(keys) && end-start < mgetBatch && bytes < mgetBytes {
			p, sn := &ps[end-start], &snaps[end]
			se, db := at(end)
			if lookup {
				ks.lookupKey(se, db, keys[end], sn)
			}
			*p = pendingRead{}
			switch {
			case !sn.ok:
				ks.stats.misses.Add(1)
			case sn.chunked:
				ks.stats.hits.Add(1)
			default:
				ks.stats.hits.Add(1)
				p.db, p.key, p.vlen = sn.db, keys[end], sn.vlen
				p.err = sn.s.log.PrepareRead(&p.rd, sn.loc, sn.size)
				p.ready = p.err == nil
				bytes += int64(sn.vlen)
			}
			end++
		}
		reads = reads[:0]
		for k := range end - start {
			if ps[k].ready {
				reads = append(reads, &ps[k].rd)
			}
		}
		vlog.Submit(ks.opts.Engine, reads)
		var ferr error
		stopped := false
		for k := range end - start {
			i, sn := start+k, &snaps[start+k]
			if ferr == nil && !stopped {
				switch {
				case !sn.ok:
					ferr = fn(i, Value{}, Meta{}, false, nil)
				case sn.chunked:
					se, db := at(i)
					ferr = chunked(se, sn, db, keys[i], func(v Value, m Meta, ok bool, err error) error {
						return fn(i, v, m, ok, err)
					})
				default:
					val, err := ks.value(&ps[k])
					ferr = fn(i, Value{Len: len(val), whole: val}, sn.meta, err == nil, err)
				}
				if ferr == nil && flush != nil && !flush() {
					stopped = true
				}
			}
			if ps[k].ready {
				ps[k].rd.Release()
			}
		}
		if ferr != nil || stopped {
			return ferr
		}
		start = end
	}
	return nil
}

// lookupKey fills sn with what the index has of key now (an expired key is removed on the way).
func (ks *Keyspace) lookupKey(se *Session, db int, key []byte, sn *keySnap) {
	pdb, h, s := ks.rlockKey(db, key)
	*sn = keySnap{h: h, s: s, db: pdb}
	dep := s.depLocked(sn.h)
	if i, _, ok := s.ix.find(uint32(sn.h), pdb, key); ok {
		if e := s.ix.entry(i); e.expired(ks.readNow()) {
			s.mu.RUnlock()
			ks.expireKey(s, sn.h, pdb, key)
			s.mu.RLock()
		} else {
			sn.fillLocked(s, e)
			ks.accessedBy(se, s, i)
		}
	}
	s.mu.RUnlock()
	ks.noteDep(se, s, dep)
}

// fillLocked records e, the key's entry, in sn. The shard's lock is held.
func (sn *keySnap) fillLocked(s *shard, e *entry) {
	sn.ok, sn.meta, sn.loc, sn.chunked = true, e.metaOf(), vlog.Loc{Seg: e.seg, Off: e.off}, e.chunked()
	sn.size, sn.vlen = int(s.recSize(e)), s.recLen(e)
}

// readNowChunked reads the chunked value of key as it is now (the entry sn found may have moved
// since: a pipeline of GETs asks for no snapshot).
// A key removed meanwhile is reported missing.
func (ks *Keyspace) readNowChunked(se *Session, sn *keySnap, db int, key []byte, fn func(v Value, m Meta, ok bool, err error) error) error {
	called := false
	_, err := ks.readValue(se, db, key, nil, func(v Value, m Meta) error {
		called = true
		return fn(v, m, true, nil)
	})
	if called {
		return err
	}
	return fn(Value{}, Meta{}, false, err)
}

// keySnap is what a lookup found of one key (snapshotKeys, lookupKey).
type keySnap struct {
	s       *shard
	h       uint64
	db      uint8 // the key's physical database
	ok      bool
	meta    Meta
	loc     vlog.Loc
	size    int // the record's size
	vlen    int // its payload's length
	chunked bool
}

// snapshotKeys looks keys up under the read locks of all their shards at once and pins the
// segments of the records found; release lets them go. An expired key is reported missing (and
// left for expiry to remove).
func (ks *Keyspace) snapshotKeys(se *Session, db int, keys [][]byte) ([]keySnap, func()) {
	snaps := make([]keySnap, len(keys))
	pdb, hs, shards := ks.rlockKeys(db, keys)
	for i, h := range hs {
		snaps[i].h, snaps[i].s, snaps[i].db = h, ks.shardOf(h), pdb
	}
	now := ks.readNow()
	segs := map[*shard][]uint32{}
	for i, key := range keys {
		sn := &snaps[i]
		s := sn.s
		ks.noteDep(se, s, s.depLocked(sn.h))
		idx, _, ok := s.ix.find(uint32(sn.h), pdb, key)
		if !ok {
			continue
		}
		e := s.ix.entry(idx)
		if e.expired(now) {
			continue
		}
		sn.fillLocked(s, e)
		ks.accessedBy(se, s, idx)
		segs[s] = append(segs[s], e.seg)
	}
	var unpins []func()
	for s, ids := range segs {
		slices.Sort(ids)
		// Under the lock every segment an entry points into is there.
		if u, ok := s.log.PinSegments(slices.Compact(ids)); ok {
			unpins = append(unpins, u)
		}
	}
	unlockReadAll(shards)
	return snaps, func() {
		for _, u := range unpins {
			u()
		}
	}
}

// rlockKeys takes the read locks of the shards of keys of logical database db, in order, under a
// map that cannot change while they are held, and returns the physical database, the keys'
// hashes and the shards locked, for unlockReadAll.
func (ks *Keyspace) rlockKeys(db int, keys [][]byte) (uint8, []uint64, []*shard) {
	hs := make([]uint64, len(keys))
	for {
		m, pdb := ks.mapOf(db)
		shards := make([]*shard, 0, min(len(keys), len(ks.shards)))
		for i, key := range keys {
			hs[i] = ks.hash(pdb, key)
			shards = append(shards, ks.shardOf(hs[i]))
		}
		shards = sortShards(shards)
		for _, s := range shards {
			s.mu.RLock()
		}
		if !ks.mapMoved(m) {
			return pdb, hs, shards
		}
		unlockReadAll(shards)
	}
}

func unlockReadAll(shards []*shard) {
	for i := len(shards) - 1; i >= 0; i-- {
		shards[i].mu.RUnlock()
	}
}

// readSnapChunked reads the chunked value a snapshot found: its manifest where the snapshot saw
// it, then its chunks, pinned while fn streams them. Should a collection have moved the chunks
// and dropped their segment since the snapshot (a window of one manifest read), the key's value
// now is served instead.
func (ks *Keyspace) readSnapChunked(se *Session, sn *keySnap, db int, key []byte, fn func(v Value, m Meta, ok bool, err error) error) error {
	s := sn.s
	var man *manifest
	err := ks.readRecords([]recRead{{log: s.log, loc: sn.loc, n: sn.size}}, false, func(_ int, rec []byte, err error) error {
		if err == nil {
			man, _, err = s.manifestOf(rec, sn.db, key, int64(sn.meta.Len))
		}
		return err
	})
	if err != nil {
		return fn(Value{}, sn.meta, false, ks.readErr(err))
	}
	if err := ks.resolveDir(man); errors.Is(err, vlog.ErrSegmentGone) {
		ks.stats.moved.Add(1)
		return ks.readNowChunked(se, sn, db, key, fn)
	} else if err != nil {
		return fn(Value{}, sn.meta, false, err)
	}
	unpin, ok := ks.pinChunks(man)
	if !ok {
		ks.stats.moved.Add(1)
		return ks.readNowChunked(se, sn, db, key, fn)
	}
	defer unpin()
	if man.g != nil {
		return fn(Value{Len: sn.meta.Len, ks: ks, man: man, vtype: sn.meta.Type}, sn.meta, true, nil)
	}
	return fn(Value{Len: int(man.length), ks: ks, man: man, from: 0, to: man.length}, sn.meta, true, nil)
}

// Reads is a ReadMany an event loop drives without waiting (StartReads): the lookups and disk
// reads go on a bounded window at a time on the loop's own engine, and each answer is handed
// on, in request order, as soon as it and those before it are complete (Step).
type Reads struct {
	ks    *Keyspace
	eng   vlog.AsyncEngine
	reqs  []GetReq
	snaps []keySnap
	ps    []pendingRead
	// reqs[:prepared] are looked up and their reads started; reqs[:delivered] handed on.
	prepared, delivered int
	// pending is the bytes of the reads started and not handed on, bounded by readsWindow.
	pending int64
}

// readsWindow bounds the bytes of values a Reads holds at once (see mgetBytes).
const readsWindow = mgetBytes

// StartReads starts answering reqs on eng: the first window of them is looked up and its disk
// reads queued on eng, for the caller to submit. Each key is looked up when its read is
// prepared, as MGet without snapshot does.
func (ks *Keyspace) StartReads(reqs []GetReq, eng vlog.AsyncEngine) *Reads {
	r := &Reads{ks: ks, eng: eng, reqs: reqs, snaps: make([]keySnap, len(reqs)), ps: make([]pendingRead, len(reqs))}
	r.fill()
	return r
}

// fill prepares the next requests while the window and the engine have room.
func (r *Reads) fill() {
	for r.prepared < len(r.reqs) {
		if r.eng.Room() == 0 || r.pending >= readsWindow && r.prepared > r.delivered {
			return
		}
		i := r.prepared
		q, sn, p := &r.reqs[i], &r.snaps[i], &r.ps[i]
		r.ks.lookupKey(q.Se, q.DB, q.Key, sn)
		switch {
		case !sn.ok:
			r.ks.stats.misses.Add(1)
		case sn.chunked:
			r.ks.stats.hits.Add(1)
		default:
			r.ks.stats.hits.Add(1)
			p.db, p.key, p.vlen = sn.db, q.Key, sn.vlen
			p.err = sn.s.log.PrepareReadOn(&p.rd, sn.loc, sn.size, r.eng)
			p.ready = p.err == nil
			if p.ready && p.rd.NeedsIO() {
				r.eng.StartOne(p.rd.Req())
			}
			r.pending += int64(sn.size)
		}
		r.prepared++
	}
}

// Step hands on, in order, the answers whose reads completed (the caller polled the engine
// first), then looks up and starts more. fn gets what ReadMany's does. It reports whether every
// request is answered.
func (r *Reads) Step(fn func(i int, v Value, m Meta, ok bool, err error)) bool {
	for {
		r.deliver(fn)
		prepared := r.prepared
		r.fill()
		// Requests looked up now may need no read (a missing key, a value in memory): no
		// completion will call for another Step, so they are handed on now.
		if r.prepared == prepared || !r.deliverable() {
			return r.delivered == len(r.reqs)
		}
	}
}

// Abandon gives back what the requests not handed on hold (their reads' buffers and segment
// references), for a caller that stops before the end, such as an event loop closing. The
// engine must have completed the reads it was given.
func (r *Reads) Abandon() {
	for i := r.delivered; i < r.prepared; i++ {
		if p := &r.ps[i]; p.ready {
			p.rd.Release()
		}
	}
	r.delivered, r.prepared = len(r.reqs), len(r.reqs)
}

// deliverable reports whether the next request to hand on is complete.
func (r *Reads) deliverable() bool {
	if r.delivered == r.prepared {
		return false
	}
	p := &r.ps[r.delivered]
	return !(p.ready && p.rd.NeedsIO() && !p.rd.Req().Completed())
}

// deliver hands on, in order, the answers that are complete.
func (r *Reads) deliver(fn func(i int, v Value, m Meta, ok bool, err error)) {
	for r.deliverable() {
		i := r.delivered
		p, sn := &r.ps[i], &r.snaps[i]
		switch {
		case !sn.ok:
			fn(i, Value{}, Meta{}, false, nil)
		case sn.chunked:
			fn(i, Value{}, sn.meta, true, ErrLarge)
		default:
			p.rd.Finish()
			val, err := r.ks.value(p)
			fn(i, Value{Len: len(val), whole: val}, sn.meta, err == nil, err)
			if p.ready {
				p.rd.Release()
			}
			r.pending -= int64(sn.size)
		}
		r.delivered++
	}
}
