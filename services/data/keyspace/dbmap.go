package keyspace

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
)

// The database map: SWAPDB without rewriting a key.
//
// Keys carry the database number in their hash, their index entry and their records, so
// swapping two databases by rewriting their keys would cost a record per key. Instead the
// numbers stored are physical, and the keyspace keeps a map from the database numbers clients
// use (logical) to physical ones; SWAPDB swaps two of its entries, as Redis swaps two pointers.
//
// The map is durable as an ordinary value: each shard holds one key of InternalDB
// (dbMapKeys: a name chosen to hash to that shard) whose value is the whole map, and SWAPDB
// rewrites all of them as one transaction over every shard, under every shard's lock. So
// replay, checkpoints and the collector keep it with no code of their own, a crash leaves the
// old map or the new one in every shard (txcond.go), and the transaction's barriers keep any
// later record of any shard from being durable before it (vlog's barriers): a key written
// after a swap never survives a crash in a database the swap did not reach. Every slot of every
// shard is marked as changed by the swap (durable.go), so no read answers from the swapped
// state before the swap is as durable as the policy promises. FLUSHALL, which removes every
// key of InternalDB, resets the map to the identity, which is right: nothing is left to find.
// Open reads the map back from the shards' keys and refuses a directory whose shards disagree.
//
// Rejected: a record kind of its own (replay, checkpoints and the collector would each need to
// learn it, and the collector must never reorder two swaps), and swapping the index entries
// in memory (O(keys) under every lock, where Redis is O(1)).
//
// Every operation that takes a database number translates it (logical to physical going in,
// physical to logical for what it reports: expiry's DELs and hooks, eviction's, Info, a
// snapshot's keys), so the numbers in the index, the records and the replication stream never
// mix. The map changes only under every shard's lock, so a caller holding any shard's lock sees
// it stable; one that translated before taking a lock checks, once it holds it, that the map is
// still the one it translated with (the pointer in dbMapState.cur changes with every swap), and
// translates again if not (rlockKey, lockKey, rlockKeys, Update). An operation that takes locks
// one at a time (DBSize, Info) sums again if a swap came among them; SCAN translates per shard,
// so a scan across a swap goes on in the database its number now names, as in Redis, where
// the cursor then walks the other dictionary. An EXEC holds every lock and translates through
// its own map (execBatch.dbm): a FLUSHALL in it makes that the identity and a SWAPDB swaps two
// of its entries (writing the map keys with the EXEC's other writes), so the commands after
// them see what they did, and the commit installs it.
//
// Rejected, now that the operations are written: rewriting the database byte of every index
// entry of the two databases under every lock, with translation only at recovery. The hash,
// and so the shard and slot of a key, depends on its database, so that would move every entry
// between shards and slots (O(keys) under every lock), and the records would still carry the
// old number.

// dbMap maps logical database numbers to physical ones: a permutation that fixes InternalDB.
type dbMap [MaxDatabases]uint8

type dbMapPtr = atomic.Pointer[dbMap]

// dbMapState is the keyspace's current map.
type dbMapState struct {
	// cur is the map (never nil after Open); replaced, never changed, under every shard's lock.
	cur dbMapPtr
	// keys[s] is the InternalDB key of shard s holding the map.
	keys [][]byte
}

// ErrDBRange is returned by SwapDB for a database number outside the configured databases.
var ErrDBRange = errors.New("keyspace: DB index is out of range")

func identityDBMap() *dbMap {
	var m dbMap
	for i := range m {
		m[i] = uint8(i)
	}
	return &m
}

// decodeDBMap checks that b is a permutation of the database numbers fixing InternalDB.
func decodeDBMap(b []byte) (*dbMap, error) {
	if len(b) != MaxDatabases {
		return nil, fmt.Errorf("%w: database map of %d bytes", ErrCorrupt, len(b))
	}
	var m dbMap
	var seen [MaxDatabases]bool
	for i, p := range b {
		if seen[p] {
			return nil, fmt.Errorf("%w: database map is not a permutation", ErrCorrupt)
		}
		seen[p] = true
		m[i] = p
	}
	if m[InternalDB] != InternalDB {
		return nil, fmt.Errorf("%w: database map moves the internal database", ErrCorrupt)
	}
	return &m, nil
}

// initDBMapKeys names each shard's map key: the first "lavik:dbmap:<n>" that hashes to it.
func (ks *Keyspace) initDBMapKeys() {
	ks.dbm.keys = make([][]byte, len(ks.shards))
	left := len(ks.shards)
	for n := 0; left > 0; n++ {
		k := []byte("lavik:dbmap:" + strconv.Itoa(n))
		s := ks.shardOf(ks.hash(InternalDB, k)).id
		if ks.dbm.keys[s] == nil {
			ks.dbm.keys[s] = k
			left--
		}
	}
}

// loadDBMap reads the map back from the shards' keys (during Open).
func (ks *Keyspace) loadDBMap() error {
	ks.initDBMapKeys()
	ks.dbm.cur.Store(identityDBMap()) // InternalDB, which the reads below name, is fixed
	var got *dbMap
	missing := 0
	for s, k := range ks.dbm.keys {
		var raw []byte
		ok, err := ks.Get(nil, InternalDB, k, func(v Value, _ Meta) error {
			b, err := v.Bytes()
			raw = append([]byte(nil), b...)
			return err
		})
		if err != nil {
			return fmt.Errorf("keyspace: reading the database map of shard %d: %w", s, err)
		}
		if !ok {
			missing++
			continue
		}
		m, err := decodeDBMap(raw)
		if err != nil {
			return fmt.Errorf("keyspace: shard %d: %w", s, err)
		}
		if got != nil && *got != *m {
			return fmt.Errorf("keyspace: %w: shards hold different database maps", ErrCorrupt)
		}
		got = m
	}
	switch {
	case got == nil:
		got = identityDBMap()
	case missing > 0:
		return fmt.Errorf("keyspace: %w: %d shards lack the database map", ErrCorrupt, missing)
	}
	ks.dbm.cur.Store(got)
	return nil
}

// resetDBMapLocked makes the map the identity: FLUSHALL removed its keys. Every shard's lock is
// held.
func (ks *Keyspace) resetDBMapLocked() { ks.dbm.cur.Store(identityDBMap()) }

// physicalDB is the physical database that logical database db is stored as. The caller holds
// a shard's lock, or re-checks the map once it does.
func (ks *Keyspace) physicalDB(db int) int { return int(ks.dbm.cur.Load()[uint8(db)]) }

// mapOf returns the current map and the physical number of logical database db under it. A
// caller that takes a shard's lock after it must check mapMoved once it holds it.
func (ks *Keyspace) mapOf(db int) (*dbMap, uint8) {
	m := ks.dbm.cur.Load()
	return m, m[uint8(db)]
}

// mapMoved reports whether a swap replaced m. The caller holds a shard's lock, so the answer
// stays true while it does.
func (ks *Keyspace) mapMoved(m *dbMap) bool { return ks.dbm.cur.Load() != m }

// rlockKey read-locks the shard of key of logical database db, under a map that cannot change
// while the lock is held, and returns the key's physical database, hash and shard.
func (ks *Keyspace) rlockKey(db int, key []byte) (p uint8, h uint64, s *shard) {
	for {
		m, p := ks.mapOf(db)
		h = ks.hash(p, key)
		s = ks.shardOf(h)
		s.mu.RLock()
		if !ks.mapMoved(m) {
			return p, h, s
		}
		s.mu.RUnlock()
	}
}

// lockKey is rlockKey with the write lock.
func (ks *Keyspace) lockKey(db int, key []byte) (p uint8, h uint64, s *shard) {
	for {
		m, p := ks.mapOf(db)
		h = ks.hash(p, key)
		s = ks.shardOf(h)
		s.mu.Lock()
		if !ks.mapMoved(m) {
			return p, h, s
		}
		s.mu.Unlock()
	}
}

// logicalDB is the logical database that physical database p is seen as.
func (ks *Keyspace) logicalDB(p int) int {
	m := ks.dbm.cur.Load()
	for l, q := range m {
		if int(q) == p {
			return l
		}
	}
	return p
}

// SwapDB swaps logical databases a and b in the map: SWAPDB. It is atomic with respect to
// every keyspace operation (it holds every shard's lock) and durable as one transaction;
// watchers of keys of either database that exist in either are marked dirty. Inside an EXEC it
// joins the EXEC's transaction. Swapping a database with itself changes nothing.
func (ks *Keyspace) SwapDB(se *Session, a, b int) error {
	if a < 0 || b < 0 || a >= ks.opts.Databases || b >= ks.opts.Databases {
		return ErrDBRange
	}
	if a == b {
		return nil
	}
	keys := make([]Key, len(ks.dbm.keys))
	for i, k := range ks.dbm.keys {
		keys[i] = Key{DB: InternalDB, Key: k}
	}
	if eb := se.batch(); eb != nil {
		if !eb.whole() {
			return ErrExecShards
		}
		// Inside an EXEC (every lock held): the new map is written with the EXEC's other
		// writes, its commands from here on translate through it, and its commit installs it.
		m := *ks.execMap(eb)
		pa, pb := m[a], m[b]
		m[a], m[b] = pb, pa
		err := ks.updateBatch(se, eb, keys, func(tx *Tx) error {
			for i := range keys {
				tx.Put(i, m[:], 0, TypeString)
			}
			return nil
		})
		if err != nil {
			return err
		}
		eb.dbm = &m
		eb.swaps = append(eb.swaps, [2]uint8{pa, pb})
		return nil
	}
	unlock := ks.lockAll()
	defer unlock()
	m := *ks.dbm.cur.Load()
	pa, pb := m[a], m[b]
	m[a], m[b] = pb, pa
	tx := &Tx{ks: ks}
	tx.setup(keys)
	now := ks.sessNow(se)
	tx.begin(now)
	val := m[:]
	for i := range keys {
		tx.Put(i, val, 0, TypeString)
	}
	if _, err := tx.commitRecordsLocked(se, nil); err != nil {
		return err
	}
	ks.dbm.cur.Store(&m)
	for _, s := range ks.shards {
		// Every key now answers from the swapped state: reads depend on the swap.
		s.changedAllLocked(s.log.AppendedLSN(), len(ks.shards) > 1)
		ks.touchDBsLocked(s, pa, pb)
	}
	ks.changedLocked(se, now, ks.shards...)
	return nil
}

// touchDBsLocked marks dirty the watchers in the shard of keys of physical databases a and b
// that exist in either (Redis's touchAllWatchedKeysInDb: a key in neither reads the same after
// the swap). Every shard's lock is held.
func (ks *Keyspace) touchDBsLocked(s *shard, a, b uint8) {
	for _, regs := range s.watched {
		for _, r := range regs {
			if r.db != a && r.db != b {
				continue
			}
			other := a
			if r.db == a {
				other = b
			}
			if ks.inIndexLocked(r.db, r.key) || ks.inIndexLocked(other, r.key) {
				r.w.dirty.Store(true)
			}
		}
	}
}

// inIndexLocked reports whether physical database db has an entry of key (expired or not, as
// Redis's dictFind). The key's shard lock is held.
func (ks *Keyspace) inIndexLocked(db uint8, key []byte) bool {
	h := ks.hash(db, key)
	_, _, ok := ks.shardOf(h).ix.find(uint32(h), db, key)
	return ok
}
