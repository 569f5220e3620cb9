package keyspace

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// MULTI ... EXEC: a transaction of commands.
//
// Exec runs a connection's queued commands as one transaction. It takes every shard's lock, in
// order, for the whole run, so that no other client's command and no background task sees or
// changes the keyspace in between (Redis serves nobody else during an EXEC either). The commands
// do not append as they go: their keyspace calls see the transaction's writes so far through an
// overlay (execBatch: the Tx state of every key written, and the databases flushed), and once the
// last command is done the overlay commits as one transaction (Tx.commitLocked): one record for
// a single write, else a run of records in each shard it touches, all carrying the transaction's
// commit condition (txcond.go), so that after a crash all of it is there or none of it. A FLUSHDB
// or FLUSHALL among the commands goes first in each shard's part: the overlay dropped the writes
// made before it, and the ones made after it follow it.
//
// While a session runs Exec (Session.exec set), the keyspace's entry points take no lock for it
// (its goroutine holds them all), use the transaction's clock (frozen for the whole EXEC, as
// Redis 7 freezes expiry during one), read values while holding the locks (everyone waits for an
// EXEC anyway) and write into the overlay. A command that fails leaves the overlay as it was.
// Nothing is written if the run panics: the overlay is dropped with the locks.
//
// Rejected: running without the locks and validating at commit, which would need the commands
// run again after their replies were made; a keyspace-wide lock taken by every command, a shared
// counter on every GET of every core for a feature few requests use.
//
// ExecIn is the same over some shards only: it takes their locks alone, so that the rest of the
// keyspace goes on serving (a follower applies its primary's stream so, one unit at a time,
// where an EXEC of every shard stopped every reader for a whole batch). Its commands must stay
// inside those shards: one that reaches a key of another shard, or the whole keyspace (SCAN,
// KEYS, DBSIZE, RANDOMKEY, FLUSHDB, FLUSHALL, SWAPDB), gets ErrExecShards before it looks, and
// the EXEC then applies nothing and returns that error, so that the caller can run it again
// over every shard.

// execBatch is the overlay of an EXEC being run.
type execBatch struct {
	now int64
	// keys are the keys the transaction wrote, as it left them, by batchKey; order lists them
	// in the order they were first written.
	keys  map[string]*txKey
	order []string
	// flushed[db]: a FLUSHDB (or FLUSHALL: flushAll too) ran; the index's keys of db are gone.
	flushed  []bool
	flushAll bool
	// dbm is the database map as the transaction left it (nil: the keyspace's): a FLUSHALL
	// makes it the identity, a SWAPDB swaps two of its entries. The transaction's commands
	// translate through it, and its commit makes it the keyspace's. swaps lists the physical
	// databases each SWAPDB swapped, whose watchers the commit marks dirty.
	dbm     *dbMap
	swaps   [][2]uint8
	scratch []byte
	// held[i] says the EXEC holds shard i's lock (nil: every shard's, Exec); err is
	// ErrExecShards once a command reached beyond them (ExecIn).
	held []bool
	err  error
}

// ErrExecShards is returned by ExecIn when its commands reach beyond the shards it locked.
var ErrExecShards = errors.New("keyspace: EXEC reached beyond the shards it holds")

// holds reports whether the EXEC holds s's lock.
func (b *execBatch) holds(s *shard) bool { return b.held == nil || b.held[s.id] }

// whole reports whether the EXEC holds every shard's lock, as an operation on the whole
// keyspace needs; if not, it fails the EXEC (ErrExecShards).
func (b *execBatch) whole() bool {
	if b.held == nil {
		return true
	}
	b.err = ErrExecShards
	return false
}

// reach checks that the EXEC holds the lock of every shard of tx's keys; if not, it fails the
// EXEC (ErrExecShards).
func (b *execBatch) reach(tx *Tx) error {
	if b.held == nil {
		return nil
	}
	for _, k := range tx.uniq {
		if !b.held[k.shard.id] {
			b.err = ErrExecShards
			return ErrExecShards
		}
	}
	return nil
}

// execMap is the map the commands of an EXEC translate through (the keyspace's, or the one
// the EXEC changed). Every shard's lock is held.
func (ks *Keyspace) execMap(b *execBatch) *dbMap {
	if b.dbm != nil {
		return b.dbm
	}
	return ks.dbm.cur.Load()
}

func batchKey(db uint8, key []byte) string { return string(append([]byte{db}, key...)) }

// lookup returns the overlay's state of (db, key), or nil when the transaction did not write it.
func (b *execBatch) lookup(db uint8, key []byte) *txKey {
	if len(b.keys) == 0 {
		return nil
	}
	b.scratch = append(append(b.scratch[:0], db), key...)
	return b.keys[string(b.scratch)]
}

// batch returns the EXEC the session is running, or nil.
func (se *Session) batch() *execBatch {
	if se == nil {
		return nil
	}
	return se.exec
}

// InExec reports whether se is running an EXEC (its goroutine holds every shard's lock).
func (se *Session) InExec() bool { return se.batch() != nil }

// lock and the others take the shard's lock unless se runs an EXEC whose goroutine holds it.
func (s *shard) lock(se *Session) {
	if b := se.batch(); b == nil || !b.holds(s) {
		s.mu.Lock()
	}
}

func (s *shard) unlock(se *Session) {
	if b := se.batch(); b == nil || !b.holds(s) {
		s.mu.Unlock()
	}
}

func (s *shard) rlock(se *Session) {
	if b := se.batch(); b == nil || !b.holds(s) {
		s.mu.RLock()
	}
}

func (s *shard) runlock(se *Session) {
	if b := se.batch(); b == nil || !b.holds(s) {
		s.mu.RUnlock()
	}
}

// now is the clock of se's commands: the EXEC's, or the current time.
func (ks *Keyspace) now(se *Session) int64 {
	if b := se.batch(); b != nil {
		return b.now
	}
	return ks.sessNow(se)
}

// ErrExecNested is returned by Exec for a session that is running one already.
var ErrExecNested = errors.New("keyspace: EXEC inside EXEC")

// Exec runs a transaction of commands: run makes the commands' keyspace calls, with se, and
// they apply together, atomically and as one unit in the log, when it returns. If w (nil: none)
// has a key that changed since it was watched, nothing runs and Exec reports false. Either way
// w's keys are unwatched. The error is the commit's: when it is set nothing the commands did
// was applied.
func (ks *Keyspace) Exec(se *Session, w *Watches, run func()) (ran bool, err error) {
	return ks.exec(se, w, nil, run)
}

// ExecIn is Exec over the shards listed (ShardOf numbers, each once), holding their locks only
// (see above). If a command reached beyond them, nothing is applied and the error is
// ErrExecShards.
func (ks *Keyspace) ExecIn(se *Session, shards []int, run func()) error {
	held := make([]bool, len(ks.shards))
	for _, i := range shards {
		held[i] = true
	}
	_, err := ks.exec(se, nil, held, run)
	return err
}

// ShardOf is the shard that holds (db, key), for ExecIn. The answer holds until a SWAPDB.
func (ks *Keyspace) ShardOf(db int, key []byte) int {
	return ks.shardOf(ks.hash(ks.dbm.cur.Load()[uint8(db)], key)).id
}

// NumShards is the number of shards.
func (ks *Keyspace) NumShards() int { return len(ks.shards) }

// exec is Exec, over the shards held says (nil: every one).
func (ks *Keyspace) exec(se *Session, w *Watches, held []bool, run func()) (ran bool, err error) {
	if se.exec != nil {
		return false, ErrExecNested
	}
	var unlock func()
	if held == nil {
		unlock = ks.lockAll()
	} else {
		var shards []*shard
		for i, h := range held {
			if h {
				shards = append(shards, ks.shards[i])
			}
		}
		for _, s := range shards { // in order, as lockAll
			s.mu.Lock()
		}
		unlock = func() { unlockAll(shards) }
	}
	b := &execBatch{now: ks.sessNow(se), keys: map[string]*txKey{}, flushed: make([]bool, MaxDatabases), held: held}
	defer func() {
		se.exec = nil
		unlock()
		if w != nil {
			ks.Unwatch(se, w)
		}
	}()
	if w != nil && w.changedLocked(b.now) {
		return false, nil
	}
	se.exec = b
	run()
	if b.err != nil {
		se.DropEffects()
		return true, b.err
	}
	tx := &Tx{ks: ks, now: b.now}
	for _, bk := range b.order {
		tx.uniq = append(tx.uniq, b.keys[bk])
	}
	err = tx.commitLocked(se, b)
	if err == nil && b.dbm != nil {
		// A FLUSHALL (its keys went with InternalDB's) or a SWAPDB (its keys are among the
		// transaction's writes) changed the map: it changes with the commit (dbmap.go).
		ks.dbm.cur.Store(b.dbm)
		if len(b.swaps) > 0 {
			for _, s := range ks.shards {
				s.changedAllLocked(s.log.AppendedLSN(), len(ks.shards) > 1)
				for _, sw := range b.swaps {
					ks.touchDBsLocked(s, sw[0], sw[1])
				}
			}
		}
	}
	if err == nil && se.announced && len(se.effects) > 0 {
		// Nothing written logged the effect: the EXEC's announced commands go alone (with
		// the effects of its writes that wrote nothing, which a follower runs to the same
		// nothing).
		ks.changedLocked(se, b.now)
	}
	return true, err
}

// updateBatch is Update inside an EXEC: keys start as the overlay has them, values are read
// while holding the locks, and what fn did goes into the overlay when it returns nil.
func (ks *Keyspace) updateBatch(se *Session, b *execBatch, keys []Key, fn func(tx *Tx) error) error {
	if se.clock != 0 {
		b.now = se.clock // a follower's batch: each command by its primary's clock (SetClock)
	}
	tx := &Tx{ks: ks}
	tx.setupMap(keys, ks.execMap(b))
	if err := b.reach(tx); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		tx.beginBatch(b)
		err := fn(tx)
		if err == nil {
			b.keep(tx)
			tx.noteDeps(se)
			tx.noteKeys(se)
			return nil
		}
		if !errors.Is(err, errNeedValue) {
			tx.noteDeps(se)
			return err
		}
		if attempt > 8 {
			// Nothing changes under the locks: each attempt gets what it asked for.
			return fmt.Errorf("keyspace: internal error: a transaction of EXEC made no progress")
		}
		pend, want, chunked := tx.wantedLocked()
		if err := ks.fetch(pend, want, chunked, true); err != nil {
			return err
		}
		b.keepCache(tx)
	}
}

// beginBatch starts an attempt of a transaction inside an EXEC: each key as the overlay has it,
// else as the index has it (nothing, in a database the EXEC flushed).
func (tx *Tx) beginBatch(b *execBatch) {
	tx.now = b.now
	for _, k := range tx.uniq {
		if ov := b.lookup(k.db, k.key); ov != nil {
			*k = *ov
			k.edits = maps.Clone(ov.edits)
			k.wantValue, k.wantMan, k.wantParts, k.plan = false, false, nil, nil
			k.gplan, k.gnew = nil, nil
			k.had = k.found
			continue
		}
		k.resetOps()
		k.dep = k.shard.depLocked(k.hash)
		k.found, k.had = false, false
		if b.flushed[k.db] {
			continue
		}
		if i, ok, _ := tx.ks.findLiveLocked(k.shard, k.hash, k.db, k.key, tx.now); ok {
			k.found, k.had, k.idx, k.entry = true, true, i, *k.shard.ix.entry(i)
			if !tx.noTouch {
				tx.ks.accessed(k.shard, i)
			}
		}
	}
}

// keep records in the overlay the keys tx wrote, and the new state of those it had already.
func (b *execBatch) keep(tx *Tx) {
	for _, k := range tx.uniq {
		ov := b.lookup(k.db, k.key)
		if ov == nil {
			if k.op == opNone {
				continue
			}
			ov = &txKey{}
			bk := batchKey(k.db, k.key)
			b.keys[bk] = ov
			b.order = append(b.order, bk)
			*ov = *k
			ov.key = bytes.Clone(k.key)
			continue
		}
		*ov = *k
	}
}

// keepCache copies into the overlay what an attempt read of keys the overlay has.
func (b *execBatch) keepCache(tx *Tx) {
	for _, k := range tx.uniq {
		if ov := b.lookup(k.db, k.key); ov != nil {
			ov.cached, ov.cachedLoc, ov.haveCached = k.cached, k.cachedLoc, k.haveCached
			ov.man, ov.manLoc, ov.parts, ov.dview = k.man, k.manLoc, k.parts, k.dview
		}
	}
}

// flush drops the overlay's keys of db (all: of every database) and hides the index's.
func (b *execBatch) flush(db int, all bool) {
	if !b.whole() {
		return
	}
	if all {
		b.flushAll = true
		b.dbm = identityDBMap()
	}
	order := b.order[:0]
	for _, bk := range b.order {
		if all || bk[0] == byte(db) {
			delete(b.keys, bk)
		} else {
			order = append(order, bk)
		}
	}
	b.order = order
	for i := range b.flushed {
		if all || i == db {
			b.flushed[i] = true
		}
	}
}

// each calls fn with every key of db the overlay has that exists, in the order written.
func (b *execBatch) each(db int, fn func(k *txKey)) {
	for _, bk := range b.order {
		if k := b.keys[bk]; k.db == uint8(db) && k.found {
			fn(k)
		}
	}
}

// inIndexLocked reports whether the index has an entry of k that the transaction still sees,
// that is outside a database it flushed. A lock of k's shard is held.
func (k *txKey) inIndexLocked(b *execBatch) bool {
	if b != nil && b.flushed[k.db] {
		return false
	}
	_, _, found := k.shard.ix.find(uint32(k.hash), k.db, k.key)
	return found
}

// flushRec is a FLUSHDB (all false) or FLUSHALL record an EXEC appends to a shard.
type flushRec struct {
	s   *shard
	db  uint8
	all bool
}

// flushesLocked lists the flush records b's commit appends: FLUSHALL in each shard holding
// keys, or FLUSHDB of each flushed database in each shard holding keys of it. The locks of
// every shard are held.
func (b *execBatch) flushesLocked(ks *Keyspace) []flushRec {
	if b == nil {
		return nil
	}
	var out []flushRec
	for _, s := range ks.shards {
		if b.flushAll {
			if s.ix.count > 0 {
				out = append(out, flushRec{s: s, all: true})
			}
			continue
		}
		for db, f := range b.flushed {
			if f && s.keys[db] > 0 {
				out = append(out, flushRec{s: s, db: uint8(db)})
			}
		}
	}
	return out
}

func (f flushRec) header() vlog.Header {
	if f.all {
		return vlog.Header{Kind: vlog.KindFlushAll}
	}
	return vlog.Header{Kind: vlog.KindFlushDB, DB: f.db}
}

// applyLocked empties what the record flushes from its shard's index.
func (f flushRec) applyLocked(s *shard) {
	if f.all {
		s.markAllDeadLocked()
		s.clearLocked()
		s.avgTTLMs.Store(0)
		return
	}
	if s.expires[f.db] > 0 {
		s.avgTTLMs.Store(0)
	}
	s.flushDBLocked(f.db)
}

// flushLocked appends flush record f, part of the transaction with extension ext, and applies
// it.
func (tx *Tx) flushLocked(se *Session, f flushRec, ext []byte) error {
	s := f.s
	h := f.header()
	h.Flags |= vlog.FlagTx
	h.Version = s.version + 1
	_, lsn, err := s.log.AppendExt(h, ext, nil, nil)
	if err != nil {
		return fmt.Errorf("keyspace: %w", err)
	}
	s.version++
	se.note(s.id, lsn)
	s.changedAllLocked(lsn, tx.multiShard)
	tx.ends[s] = max(tx.ends[s], lsn)
	f.applyLocked(s)
	return nil
}

// getBatch is Get inside an EXEC: the value as the transaction sees it, read whole.
func (ks *Keyspace) getBatch(se *Session, db int, key []byte, span func(n int) (int, int), fn func(v Value, m Meta) error) (bool, error) {
	found := false
	err := ks.updateBatch(se, se.exec, []Key{{DB: db, Key: key}}, func(tx *Tx) error {
		v, ok, err := tx.Value(0)
		if err != nil || !ok {
			return err
		}
		m, _ := tx.Meta(0)
		found = true
		if span != nil {
			from, to := span(len(v))
			v = v[from:to]
		}
		return fn(Value{Len: len(v), whole: v}, m)
	})
	if found {
		ks.stats.hits.Add(1)
	} else {
		ks.stats.misses.Add(1)
	}
	return found, err
}

// lookupBatch is Lookup inside an EXEC.
func (ks *Keyspace) lookupBatch(se *Session, db int, key []byte) (m Meta, ok bool) {
	ks.updateBatch(se, se.exec, []Key{{DB: db, Key: key}}, func(tx *Tx) error {
		m, ok = tx.Meta(0)
		return nil
	})
	return m, ok
}

// mgetBatch is MGet inside an EXEC.
func (ks *Keyspace) mgetBatch(se *Session, db int, keys [][]byte, fn func(i int, v Value, m Meta, ok bool, err error) error) error {
	for i, key := range keys {
		called := false
		var ferr error
		_, err := ks.getBatch(se, db, key, nil, func(v Value, m Meta) error {
			called = true
			ferr = fn(i, v, m, true, nil)
			return ferr
		})
		if !called {
			ferr = fn(i, Value{}, Meta{}, false, err) // missing (err nil), or failed
		}
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// dbSizeBatch is DBSize inside an EXEC of physical database db: the index's count, corrected
// by the overlay.
func (ks *Keyspace) dbSizeBatch(b *execBatch, db int) int64 {
	if !b.whole() {
		return 0
	}
	var n int64
	if !b.flushed[db] {
		for _, s := range ks.shards {
			n += s.keys[db]
		}
	}
	for _, bk := range b.order {
		k := b.keys[bk]
		if k.db != uint8(db) {
			continue
		}
		switch in := k.inIndexLocked(b); {
		case k.found && !in:
			n++
		case !k.found && in:
			n--
		}
	}
	return n
}

// randomKeyBatch is RandomKey inside an EXEC.
func (ks *Keyspace) randomKeyBatch(se *Session, b *execBatch, ldb int) []byte {
	if !b.whole() {
		return nil
	}
	db := int(ks.execMap(b)[ldb])
	total := ks.dbSizeBatch(b, db)
	if total <= 0 {
		return nil
	}
	var mine [][]byte
	b.each(db, func(k *txKey) { mine = append(mine, k.key) })
	if len(mine) > 0 && rand.Int64N(total) < int64(len(mine)) {
		return bytes.Clone(mine[rand.IntN(len(mine))])
	}
	if !b.flushed[db] {
		for attempt := 0; attempt < 64; attempt++ {
			s := ks.shards[rand.IntN(len(ks.shards))]
			if s.keys[db] == 0 || s.ix.high == 0 {
				continue
			}
			e := s.ix.entry(uint32(rand.IntN(int(s.ix.high))))
			if e.live() && int(e.db()) == db && !e.expired(b.now) && b.lookup(e.db(), s.ix.key(e)) == nil {
				return bytes.Clone(s.ix.key(e))
			}
		}
	}
	var all [][]byte
	ks.Keys(se, ldb, func(key []byte, _ Meta) { all = append(all, bytes.Clone(key)) })
	if len(all) == 0 {
		return nil
	}
	return all[rand.IntN(len(all))]
}
