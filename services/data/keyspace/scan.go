package keyspace

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// Scan visits keys of db from cursor and returns the next cursor (0 when the iteration is
// complete). The cursor is shard<<32 | entry index: entries never move while their key lives,
// so every key present for the whole iteration is returned at least once, whatever inserts,
// deletes and table growth happen between calls (a key deleted and re-added may show twice).
// It stops after count keys of db, or after visiting a bounded number of entries. fn gets the
// key (valid only during the call) and its metadata; expired keys are skipped.
//
// Any 64-bit cursor is accepted, as Redis accepts any: one naming a shard past the last (not a
// cursor Scan returns, see ValidCursor) ends the iteration with no keys, and an entry index
// past a shard's entries moves on to the next shard.
//
// se (nil: none) is made to wait for everything appended to the shards it looked at (durable.go).
func (ks *Keyspace) Scan(se *Session, db int, cursor uint64, count int, fn func(key []byte, m Meta)) uint64 {
	if count <= 0 {
		count = 10
	}
	if !ks.ValidCursor(cursor) {
		return 0
	}
	b := se.batch()
	if b != nil && !b.whole() {
		return 0
	}
	if b != nil && b.flushed[ks.execMap(b)[db]] { // an EXEC holds every lock
		cursor = uint64(len(ks.shards)) << 32 // no key of the index is left in db
	}
	budget := max(count*8, 1024)
	si, ei := int(cursor>>32), uint32(cursor)
	now := ks.now(se)
	got := 0
	for si < len(ks.shards) {
		s := ks.shards[si]
		s.rlock(se)
		ks.noteShardLocked(se, s)
		pdb := ks.physicalDB(db) // stable while the lock is held
		if b != nil {
			pdb = int(ks.execMap(b)[db])
		}
		for ; ei < s.ix.high && got < count && budget > 0; ei++ {
			budget--
			e := s.ix.entry(ei)
			if !e.live() || int(e.db()) != pdb || e.expired(now) {
				continue
			}
			if b != nil && b.lookup(e.db(), s.ix.key(e)) != nil {
				continue // an EXEC wrote it: it comes at the end, as the EXEC sees it
			}
			got++
			fn(s.ix.key(e), e.metaOf())
		}
		done := ei >= s.ix.high
		s.runlock(se)
		if !done {
			return uint64(si)<<32 | uint64(ei)
		}
		si, ei = si+1, 0
		if got >= count || budget <= 0 {
			break
		}
	}
	if si >= len(ks.shards) {
		if b != nil {
			// The keys the EXEC wrote, with the call that ends the iteration.
			b.each(int(ks.execMap(b)[db]), func(k *txKey) {
				m, _ := k.meta()
				fn(k.key, m)
			})
		}
		return 0
	}
	return uint64(si) << 32
}

// ValidCursor reports whether cursor could have been returned by Scan.
func (ks *Keyspace) ValidCursor(cursor uint64) bool { return cursor>>32 < uint64(len(ks.shards)) }

// Keys calls fn for every live key of db (the key is valid only during the call).
func (ks *Keyspace) Keys(se *Session, db int, fn func(key []byte, m Meta)) {
	var c uint64
	for {
		c = ks.Scan(se, db, c, 4096, fn)
		if c == 0 {
			return
		}
	}
}

// RandomKey returns a random live key of db, or nil when db is empty. The empty key "" is a
// key like any other: it comes back as a non-nil empty slice, so callers must test for nil,
// not for length 0.
func (ks *Keyspace) RandomKey(se *Session, db int) []byte {
	if b := se.batch(); b != nil {
		return ks.randomKeyBatch(se, b, db)
	}
	if ks.DBSize(se, db) == 0 {
		return nil
	}
	now := ks.readNow()
	for attempt := 0; attempt < 64; attempt++ {
		s := ks.shards[rand.IntN(len(ks.shards))]
		s.mu.RLock()
		pdb := ks.physicalDB(db)
		if s.keys[pdb] > 0 && s.ix.high > 0 {
			for probe := 0; probe < 32; probe++ {
				e := s.ix.entry(uint32(rand.IntN(int(s.ix.high))))
				if e.live() && int(e.db()) == pdb && !e.expired(now) {
					k := append([]byte{}, s.ix.key(e)...)
					s.mu.RUnlock()
					return k
				}
			}
		}
		s.mu.RUnlock()
	}
	// Sparse database: walk from a random shard until a key turns up.
	start := rand.IntN(len(ks.shards))
	for n := range ks.shards {
		s := ks.shards[(start+n)%len(ks.shards)]
		s.mu.RLock()
		empty := s.keys[ks.physicalDB(db)] == 0
		s.mu.RUnlock()
		if empty {
			continue
		}
		var found []byte
		c := uint64((start+n)%len(ks.shards)) << 32
		for found == nil {
			c = ks.Scan(se, db, c, 1, func(key []byte, _ Meta) { found = append([]byte{}, key...) })
			if c == 0 || c>>32 != uint64((start+n)%len(ks.shards)) {
				break
			}
		}
		if found != nil {
			return found
		}
	}
	return nil
}

// DBSize returns the number of keys in db (including expired keys not yet removed, as Redis).
// se (nil: none) is made to wait for everything appended so far.
func (ks *Keyspace) DBSize(se *Session, db int) int64 {
	if b := se.batch(); b != nil {
		return ks.dbSizeBatch(b, int(ks.execMap(b)[db]))
	}
	for {
		// The shards' counts are summed one lock at a time; a swap among them would mix two
		// databases, so the sum is taken again.
		var n int64
		m, pdb := ks.mapOf(db)
		for _, s := range ks.shards {
			s.mu.RLock()
			ks.noteShardLocked(se, s)
			n += s.keys[pdb]
			s.mu.RUnlock()
		}
		if !ks.mapMoved(m) {
			return n
		}
	}
}

// DBInfo is one database's line in INFO keyspace.
type DBInfo struct {
	Keys, Expires int64
	AvgTTLMs      int64
}

// Info returns per-database counts and the avg_ttl estimate (expire.go). se (nil: none) is the
// caller's session; inside an EXEC the counts are those before it.
func (ks *Keyspace) Info(se *Session) []DBInfo {
	for {
		// Physical numbers first; reported by logical ones under the map they were counted by
		// (summed again should a swap come among the shards).
		m := ks.dbm.cur.Load()
		phys := make([]DBInfo, ks.opts.Databases) // a swap stays among these
		ttl := ks.newAvgTTLEstimate()
		for _, s := range ks.shards {
			s.rlock(se)
			for db := range phys {
				phys[db].Keys += s.keys[db]
				phys[db].Expires += s.expires[db]
			}
			ttl.addLocked(s)
			s.runlock(se)
		}
		if ks.mapMoved(m) {
			continue
		}
		out := make([]DBInfo, ks.opts.Databases)
		for db := range out {
			out[db] = phys[m[db]]
			if out[db].Expires > 0 {
				out[db].AvgTTLMs = ttl.avg(int(m[db]))
			}
		}
		return out
	}
}

// FlushDB removes every key of db: a FLUSHDB record in each shard that holds keys of db, one
// transaction when there are several (txcond.go).
func (ks *Keyspace) FlushDB(se *Session, db int) error {
	if b := se.batch(); b != nil {
		b.flush(int(ks.execMap(b)[db]), false)
		return nil
	}
	unlock := ks.lockAll()
	defer unlock()
	db = ks.physicalDB(db) // every lock is held: the map is stable
	var shards []*shard
	for _, s := range ks.shards {
		if s.keys[db] > 0 {
			shards = append(shards, s)
		}
	}
	_, err := ks.appendEachLocked(se, shards, vlog.Header{Kind: vlog.KindFlushDB, DB: uint8(db)}, func(s *shard) {
		if s.expires[db] > 0 {
			// The sweep's average of remaining TTLs includes the keys going now; the next tick
			// starts it again from what is left (as Redis resets avg_ttl).
			s.avgTTLMs.Store(0)
		}
		s.flushDBLocked(uint8(db))
	})
	if err == nil {
		ks.changedLocked(se, ks.sessNow(se), shards...)
	}
	return err
}

// FlushAll removes every key of every database and deletes the old segment files. Each shard
// starts a new segment whose first record is FLUSHALL, all of them one transaction; once every
// shard has synced its record, the older segments go. A crash before that keeps the old data
// (the transaction is incomplete, or complete with the old segments still there to be
// flushed again by replay); nothing waits for the disk under the shard locks.
//
// Inside an EXEC it is a FLUSHALL record in each shard holding keys, part of the EXEC's
// transaction; the old segments go as the collector finds them dead.
func (ks *Keyspace) FlushAll(se *Session) error {
	if b := se.batch(); b != nil {
		b.flush(0, true)
		return nil
	}
	unlock := ks.lockAll()
	firsts := make([]uint32, len(ks.shards))
	for i, s := range ks.shards {
		id, err := s.log.Rotate()
		if err != nil {
			unlock()
			return fmt.Errorf("keyspace: %w", err)
		}
		firsts[i] = id
	}
	lsns, err := ks.appendEachLocked(se, ks.shards, vlog.Header{Kind: vlog.KindFlushAll}, func(s *shard) {
		s.markAllDeadLocked()
		s.clearLocked()
		s.avgTTLMs.Store(0)
	})
	if err == nil {
		ks.resetDBMapLocked() // its keys went with InternalDB's
		ks.changedLocked(se, ks.sessNow(se), ks.shards...)
	}
	unlock()
	if err != nil {
		return err
	}
	for i, s := range ks.shards {
		if err := s.log.Flush(lsns[i], true); err != nil {
			// The old segments stay: the collector frees them once their bytes are all dead,
			// which they are.
			return fmt.Errorf("keyspace: %w", err)
		}
	}
	// The FLUSHALL records, appended under every lock, are a consistent cut, synced: the old
	// segments below it are sealed, and can go.
	ks.publishStable(lsns)
	for i, s := range ks.shards {
		if invariants {
			s.mu.Lock()
			ks.checkDropLocked(s, func(seg uint32) bool { return seg < firsts[i] })
			s.mu.Unlock()
		}
		s.log.DropSegmentsBefore(firsts[i])
	}
	return nil
}

// lockAll takes every shard's lock, in order, and returns the function that lets go.
func (ks *Keyspace) lockAll() func() {
	for _, s := range ks.shards {
		s.mu.Lock()
	}
	return func() { unlockAll(ks.shards) }
}

// appendEachLocked appends a record with header h (the version filled in) to each of shards,
// as one transaction when there are several, and runs apply on each shard after its record. It
// returns each shard's LSN past its record. The locks of shards are held.
func (ks *Keyspace) appendEachLocked(se *Session, shards []*shard, h vlog.Header, apply func(s *shard)) ([]uint64, error) {
	lsns := make([]uint64, len(shards))
	var ext []byte
	if len(shards) > 1 {
		n := txCode(len(shards), len(ks.shards))
		extLen := txExtLen(n, len(ks.shards))
		cond := ks.newTx()
		parts := make([]txPart, 0, len(shards))
		for _, s := range shards {
			end, err := s.log.Reserve(vlog.RecordSize(extLen, 0, 0))
			if err != nil {
				cancelReserves(parts)
				return nil, fmt.Errorf("keyspace: %w", err)
			}
			parts = append(parts, txPart{s: s})
			cond.ends = append(cond.ends, txEnd{shard: uint16(s.id), at: end})
		}
		for i := range ks.shards {
			if n == 255 && !slices.ContainsFunc(cond.ends, func(e txEnd) bool { return int(e.shard) == i }) {
				cond.ends = append(cond.ends, txEnd{shard: uint16(i)})
			}
		}
		ext = cond.encode(make([]byte, 0, extLen))
		h.Flags |= vlog.FlagTx
	}
	for i, s := range shards {
		h.Version = s.version + 1
		_, lsn, err := s.log.AppendExt(h, ext, nil, nil)
		if err != nil {
			if ext != nil {
				for _, t := range shards[i:] {
					t.log.CancelReserve()
				}
				if aerr := ks.tx.abort(ks.opts.FS, ks.opts.Dir, binary.LittleEndian.Uint64(ext)); aerr != nil {
					ks.log.Error("cannot record an aborted transaction", "err", aerr)
				}
			}
			return nil, fmt.Errorf("keyspace: %w", err)
		}
		s.version++
		se.note(s.id, lsn)
		s.changedAllLocked(lsn, ext != nil)
		lsns[i] = lsn
		apply(s)
	}
	if ext != nil {
		ends := make(map[*shard]uint64, len(shards))
		for i, s := range shards {
			ends[s] = lsns[i]
		}
		ks.addBarriersLocked(shards, ends)
	}
	return lsns, nil
}

// Stats are keyspace-wide counters for INFO.
type Stats struct {
	Hits, Misses, ExpiredKeys, CorruptReads uint64
	Keys                                    int64
	IndexBytes                              int64 // off-heap slots, entries and key arenas
	Log                                     vlog.LogStats
	Engine                                  vlog.EngineStats
	EngineName                              string
	Shards                                  int
	LoadTime                                float64
	Checkpoint                              CheckpointStats
	Reclaim                                 ReclaimStats
	// DirCache is the cache of grouped values' decoded directories (dirpatch.go).
	DirCache DirCacheStats
}

// DirCacheStats are the directory cache's counters.
type DirCacheStats struct {
	Entries, Bytes int64
	Hits, Misses   uint64
}

// Stats collects counters from every shard. se (nil: none) is the caller's session.
func (ks *Keyspace) Stats(se *Session) Stats {
	st := Stats{
		Hits: ks.stats.hits.Load(), Misses: ks.stats.misses.Load(),
		ExpiredKeys: ks.stats.expired.Load(), CorruptReads: ks.stats.corrupt.Load(),
		Engine: ks.engineStats(), EngineName: ks.opts.Engine.Name(),
		Shards: len(ks.shards), LoadTime: ks.loadTime.Seconds(),
	}
	st.Checkpoint = ks.checkpointStats()
	st.Reclaim = ks.reclaimStats()
	st.DirCache = ks.dirs.stats()
	for _, s := range ks.shards {
		s.rlock(se)
		st.Keys += int64(s.ix.count) - s.keys[InternalDB] // clients' keys only
		st.IndexBytes += s.ix.bytes()
		s.runlock(se)
		ls := s.log.Stats()
		st.Log.Segments += ls.Segments
		st.Log.DiskBytes += ls.DiskBytes
		st.Log.TailBytes += ls.TailBytes
		st.Log.Appends += ls.Appends
		st.Log.Writes += ls.Writes
		st.Log.Syncs += ls.Syncs
		st.Log.BytesWritten += ls.BytesWritten
		st.Log.Corrupt += ls.Corrupt
		st.Log.TornBytesCut += ls.TornBytesCut
		st.Log.Repaired += ls.Repaired
	}
	return st
}

// RegisterEngine adds an engine that reads for the keyspace besides its own (an event loop's
// ring) to the figures Stats reports.
func (ks *Keyspace) RegisterEngine(e vlog.Engine) {
	ks.enginesMu.Lock()
	ks.engines = append(ks.engines, e)
	ks.enginesMu.Unlock()
}

// engineStats sums the counters of every engine that reads for the keyspace.
func (ks *Keyspace) engineStats() vlog.EngineStats {
	st := ks.opts.Engine.Stats()
	ks.enginesMu.Lock()
	defer ks.enginesMu.Unlock()
	for _, e := range ks.engines {
		o := e.Stats()
		st.Reads += o.Reads
		st.Bytes += o.Bytes
		st.Batches += o.Batches
		st.Errors += o.Errors
		st.Submits += o.Submits
		st.Wakeups += o.Wakeups
		st.FixedReads += o.FixedReads
		st.Deferred += o.Deferred
	}
	return st
}
