package keyspace

// The change stream: what replication ships.
//
// A follower must apply the primary's changes in an order consistent with the order they were
// made in, a change of several keys (MULTI/EXEC, RENAME, MSET) as one unit, and nothing a crash of
// the primary could still take back. The shards' logs cannot give that: each has its own
// positions, a transaction is several records in several logs, and the collector's copies and
// kept tombstones look like writes. So the keyspace hands every committed change to a
// ChangeSink (SetChangeSink) while it still holds the locks of every shard the change touched:
// two changes of one key reach the sink in the order they were made, and a transaction reaches
// it once, whole. What the change is, as commands a follower can run, is the session's effect:
// the command layer states it (Session.Propagate) before it writes, since only it knows that
// SET ... EX 10 means an absolute expiry or that SPOP removed these members. Expiry's removals
// are changes too (a DEL the keyspace states itself), so a follower never decides expiry.
//
// The sink learns what each change depends on in the logs (Change.NoteDeps) and must not ship
// it before a Session noting those deps has waited (the same wait a reply gets). Collector moves
// and checkpoints never reach it.
//
// A command that changes no key but that a follower must run too (PUBLISH: the follower
// delivers the message to its own subscribers, as a Redis replica does) states itself with
// Announce: a keyless change, which depends on nothing, so it is shippable as soon as what came
// before it in the stream is. It reaches the sink after every change the session committed
// before (and inside an EXEC, in its place among the EXEC's commands).

// Effect is one command of a change, as a follower runs it: argv in database DB.
type Effect struct {
	DB   int
	Args [][]byte
}

// Change is one committed change, valid only during ChangeSink.Change.
type Change struct {
	// Now is the clock the change was decided by (unix ms): a follower applies it with the same
	// clock, so that expiry decides alike on both sides.
	Now int64
	// Effects are the change's commands, in order; several are one unit.
	Effects []Effect
	// Expired says the change is expiry's removal of a key (a DEL the keyspace states).
	Expired bool
	// Keyless says the change touches no key (Announce): no clock or database applies to it.
	Keyless bool
	shards  []*shard
}

// NoteDeps makes se's next Wait cover the records of the change.
func (c *Change) NoteDeps(se *Session) {
	tx := len(c.shards) > 1
	for _, s := range c.shards {
		se.noteTx(s.id, s.log.AppendedLSN(), tx)
	}
}

// ChangeSink receives the keyspace's changes in commit order.
type ChangeSink interface {
	// Change is called once per committed change with the locks of the shards it touched
	// held, so changes of different shards come concurrently: it must be safe for that, quick,
	// and must not call into the keyspace. It returns the change's
	// position in the stream (the offset past it), which the session remembers (LastChange).
	Change(c *Change) int64
}

// SetChangeSink starts (sink) or stops (nil) handing changes to sink. It takes every shard's
// lock, so a change is wholly before it or wholly after it; at is called under them (a
// snapshot's starting point is taken there).
func (ks *Keyspace) SetChangeSink(sink ChangeSink, at func()) {
	unlock := ks.lockAll()
	defer unlock()
	if sink == nil {
		ks.sink.Store(nil)
	} else {
		ks.sink.Store(&sink)
	}
	if at != nil {
		at()
	}
}

// ChangeSink returns the sink SetChangeSink started, or nil.
func (ks *Keyspace) ChangeSink() ChangeSink {
	if p := ks.sink.Load(); p != nil {
		return *p
	}
	return nil
}

// Propagate states the effect of the session's current command: the commands that make a
// follower's keyspace change as the primary's does (a relative expiry made absolute, the members
// SPOP chose removed by SREM, a blocking pop as the pop it did). It replaces what the command
// stated before. The next commit logs it (and consumes it); a command that commits nothing
// logs nothing.
func (se *Session) Propagate(db int, cmds ...[][]byte) {
	se.effects = se.effects[:se.kept]
	for _, c := range cmds {
		se.effects = append(se.effects, Effect{DB: db, Args: c})
	}
}

// KeepEffect ends one command of an EXEC: its effect stays for the EXEC's commit and the next
// command's Propagate adds to it instead of replacing it.
func (se *Session) KeepEffect() { se.kept = len(se.effects) }

// DropEffects forgets effects not logged (a command that ended without committing).
func (se *Session) DropEffects() { se.effects, se.kept, se.announced = se.effects[:0], 0, false }

// Announce hands the change sink, if any, a command that changes no key but that a follower
// must run too (PUBLISH; FUNCTION LOAD, whose libraries live beside the keyspace), with args as the follower runs it in database db; args need stay
// valid only during the call, or, inside an EXEC, until the EXEC ends. Outside an EXEC it
// reaches the sink at once, after whatever the session committed before. Inside one it joins
// the EXEC's effect in its place (after the command's own Propagate) and goes with the EXEC's
// commit, or alone if the EXEC writes nothing.
func (ks *Keyspace) Announce(se *Session, db int, args [][]byte) {
	if se.batch() != nil {
		se.effects = append(se.effects, Effect{DB: db, Args: args})
		se.announced = true
		return
	}
	p := ks.sink.Load()
	if p == nil {
		return
	}
	c := Change{Now: ks.sessNow(se), Effects: []Effect{{DB: db, Args: args}}, Keyless: true}
	se.lastChange = (*p).Change(&c)
}

// SetClock makes the session's EXECs (Keyspace.Exec) decide by the clock now (unix ms) instead
// of the process's, until it is set back to 0: a follower applies its primary's changes by the
// primary's clock.
func (se *Session) SetClock(now int64) { se.clock = now }

// changedLocked hands the change the session just committed in shards to the sink, if any.
// The locks of shards are held.
func (ks *Keyspace) changedLocked(se *Session, now int64, shards ...*shard) {
	p := ks.sink.Load()
	if p == nil || se == nil || len(se.effects) == 0 {
		if se != nil {
			se.DropEffects()
		}
		return
	}
	// The session's own Change: the sink gets a pointer, which would otherwise move a new one
	// to the heap on every write.
	se.change = Change{Now: now, Effects: se.effects, shards: shards}
	se.lastChange = (*p).Change(&se.change)
	se.change = Change{}
	se.DropEffects()
}

// expiredLocked hands the removal of an expired key to the sink, as a DEL. The shard's write
// lock is held.
func (ks *Keyspace) expiredLocked(s *shard, pdb uint8, key []byte, now int64) {
	db := ks.logicalDB(int(pdb)) // hooks and followers speak logical numbers
	if h := ks.expireHook.Load(); h != nil {
		(*h)(db, key)
	}
	p := ks.sink.Load()
	if p == nil {
		return
	}
	args := [][]byte{[]byte("DEL"), key}
	c := Change{Now: now, Effects: []Effect{{DB: db, Args: args}}, Expired: true, shards: []*shard{s}}
	(*p).Change(&c)
}

// SetEvictHook makes the keyspace call hook with every key it evicts for maxmemory or maxdisk,
// once the eviction is committed, holding no lock. The server publishes the "evicted"
// keyspace event from it.
func (ks *Keyspace) SetEvictHook(hook func(db int, key []byte)) { ks.evictHook.Store(&hook) }

// SetExpireHook makes the keyspace call hook with every key it removes because it expired
// (lazy and active expiry alike), under the key's shard lock: it must be quick and must not
// call into the keyspace. The server publishes the "expired" keyspace event from it.
func (ks *Keyspace) SetExpireHook(hook func(db int, key []byte)) { ks.expireHook.Store(&hook) }

// SetFollower makes the keyspace a follower's (on) or a primary's: a follower's reads still
// hide expired keys, but only the primary removes them (its DELs arrive in the change stream),
// so that both sides agree on every key whatever their clocks say.
func (ks *Keyspace) SetFollower(on bool) { ks.follower.Store(on) }

// SetClockFloor makes reads treat keys as expired by the clock floor (unix ms) when it is
// ahead of the process's: a follower's reads go by its primary's clock as the stream last said
// it, so that a follower whose clock is behind never serves a key its primary considers
// expired.
func (ks *Keyspace) SetClockFloor(floor int64) { ks.floor.Store(floor) }

// readNow is the clock reads decide expiry by.
func (ks *Keyspace) readNow() int64 {
	n := ks.opts.Now()
	if f := ks.floor.Load(); f > n {
		return f
	}
	return n
}

// Follower reports SetFollower's state.
func (ks *Keyspace) Follower() bool { return ks.follower.Load() }

// Now is the clock the session's command decides by: SetClock's, else the instant its command
// started (StartCommand), else the process's clock. A command reads one clock throughout (as
// Redis's command time snapshot): the expiry SET ... EX computes and the one its write records
// and replicates are the same.
func (se *Session) Now() int64 {
	switch {
	case se.clock != 0:
		return se.clock
	case se.cmdClock != 0:
		return se.cmdClock
	}
	return se.ks.opts.Now()
}

// sessNow is se.Now for a session that may be nil.
func (ks *Keyspace) sessNow(se *Session) int64 {
	if se == nil {
		return ks.opts.Now()
	}
	return se.Now()
}

// StartCommand fixes the clock of the session's next command (Now) at the current time.
func (se *Session) StartCommand() { se.cmdClock = se.ks.opts.Now() }

// EndCommand ends the command: its clock, and its effect if nothing logged it.
func (se *Session) EndCommand() {
	se.cmdClock = 0
	se.DropEffects()
}

// WaitAll makes everything appended to the logs so far as durable as the policy promises.
func (ks *Keyspace) WaitAll() error {
	se := ks.NewSession()
	for _, s := range ks.shards {
		s.mu.RLock()
		ks.noteShardLocked(se, s)
		s.mu.RUnlock()
	}
	return se.Wait()
}

// SyncAll makes everything appended to the logs so far synced to the disk, whatever the
// appendfsync policy: for a caller about to record, outside the logs, a fact about the data
// that must not outlive a power loss of it (a follower's full resync that finished).
func (ks *Keyspace) SyncAll() error {
	for _, s := range ks.shards {
		if err := s.log.FlushTx(s.log.AppendedLSN(), true); err != nil {
			return err
		}
	}
	return nil
}

// LastChange is the stream position a ChangeSink gave the session's last logged change (0:
// none): what WAIT waits for followers to have.
func (se *Session) LastChange() int64 { return se.lastChange }

// keyChange is a key a tracked session's command created or removed (TrackKeys).
type keyChange struct {
	db      int
	key     []byte
	created bool
}

// TrackKeys starts (on) or stops listing the keys the session's commits create or remove, and
// forgets those listed: the command layer's keyspace events "new" (a key created, Redis's
// dbAdd) and "del" (a collection left empty and removed) come from it. The server turns it on
// for a command while the n class of notify-keyspace-events is on, or while events that may
// need a "del" are: it costs nothing while off.
func (se *Session) TrackKeys(on bool) {
	se.track = on
	se.keys = se.keys[:0]
}

// TakeKey reports whether a commit of the session created (created) or removed (!created) key
// of database db since TrackKeys, and forgets it: the first event about the key says it once.
func (se *Session) TakeKey(db int, key []byte, created bool) bool {
	if se == nil {
		return false
	}
	for i, k := range se.keys {
		if k.db == db && k.created == created && string(k.key) == string(key) {
			se.keys = append(se.keys[:i], se.keys[i+1:]...)
			return true
		}
	}
	return false
}

// noteKeys lists the keys the transaction created or removed, for a tracking session.
func (tx *Tx) noteKeys(se *Session) {
	if se == nil || !se.track {
		return
	}
	for _, k := range tx.uniq {
		noteKey(se, k)
	}
}

func noteKey(se *Session, k *txKey) {
	if k.had == k.found {
		return
	}
	for i, c := range se.keys {
		if c.db == int(k.ldb) && string(c.key) == string(k.key) {
			// Created then removed (or the reverse) by one command: the later state is news.
			se.keys = append(se.keys[:i], se.keys[i+1:]...)
			break
		}
	}
	se.keys = append(se.keys, keyChange{db: int(k.ldb), key: append([]byte(nil), k.key...), created: k.found})
}
