package keyspace

import "github.com/lavikdb/lavik/services/data/vlog"

// Durable reads: no reply exposes what a crash could still take back.
//
// A write is in the index as soon as its record is appended, before the record is written or
// synced: that is what lets the next command of the same connection see it, and what keeps the
// shard lock short. Redis has the same window and closes it the same way for everyone: it sends
// no reply of an event-loop pass before the pass's AOF write (and, under appendfsync always, its
// fsync). Here a reply is held until what it depends on is as durable as the policy promises:
// written to the OS under everysec and no, synced under always. A writer's session waits for
// its own records (Session.note); a reader's waits for the records of the keys it looked at.
//
// Each shard remembers, per slot of a small table indexed by key hash (recentSlots slots, 32
// KB), the LSN just past the newest record that changed a key of that slot: puts, deletes,
// expire changes, flushes (which set every slot). A read of a key whose slot is past the log's
// durable boundary notes that LSN in its session (noteDep), and the connection's durability wait
// flushes up to it. A slot shared with another key only makes a read wait for a record it did
// not need, never the other way round; a key removed by expiry keeps the slot of the record that
// set its expiry. Enumerations (SCAN, KEYS, DBSIZE, RANDOMKEY) depend on whole shards: they wait
// for everything appended to the shards they looked at.
//
// A record of a transaction over several shards is only as durable as the transaction: its
// slot carries txDep, and the wait also flushes the transaction's other parts (vlog.Log.FlushTx)
// unless the log says none is pending (vlog.Log.FirstPendingBarrier).
//
// The reader's cost is one table load and one atomic load of the durable boundary per key; the
// writer's, one store under the lock it holds anyway. Rejected: waiting for every shard a read
// touched to be wholly durable (under appendfsync always every GET would wait for an fdatasync
// whenever anyone writes), and a per-entry LSN (8 bytes a key over the index's budget).
const (
	recentSlots = 4096
	// txDep marks a slot whose newest record is part of a transaction over several shards.
	txDep = uint64(1) << 63
)

// changedLocked records that the key with hash h changed at lsn (tx: in a transaction over
// several shards). The shard's write lock is held.
func (s *shard) changedLocked(h uint64, lsn uint64, tx bool) {
	if tx {
		lsn |= txDep
	}
	s.recent[h&(recentSlots-1)] = lsn
}

// changedAllLocked records a change of every key of the shard (a flush).
func (s *shard) changedAllLocked(lsn uint64, tx bool) {
	if tx {
		lsn |= txDep
	}
	for i := range s.recent {
		s.recent[i] = lsn
	}
}

// depLocked is the change a read of the key with hash h depends on. The shard's lock is held.
func (s *shard) depLocked(h uint64) uint64 { return s.recent[h&(recentSlots-1)] }

// durableFor reports whether the change dep of shard s is as durable as the policy promises.
func (ks *Keyspace) durableFor(s *shard, dep uint64) bool {
	lsn := dep &^ txDep
	if lsn == 0 {
		return true
	}
	if lsn > s.log.DurableLSN(ks.Fsync() == vlog.FsyncAlways) {
		return false
	}
	return dep&txDep == 0 || lsn < s.log.FirstPendingBarrier()
}

// noteDep makes se's durability wait cover the change dep of shard s, unless it is durable
// already. se may be nil (a caller that replies to no client).
func (ks *Keyspace) noteDep(se *Session, s *shard, dep uint64) {
	if se == nil || ks.durableFor(s, dep) {
		return
	}
	se.noteTx(s.id, dep&^txDep, dep&txDep != 0)
}

// noteShard makes se's durability wait cover everything appended to shard s so far: the
// dependency of a reply that enumerates the shard. The shard's lock is held.
func (ks *Keyspace) noteShardLocked(se *Session, s *shard) {
	if se == nil {
		return
	}
	lsn := s.log.AppendedLSN()
	if lsn > s.log.DurableLSN(ks.Fsync() == vlog.FsyncAlways) || lsn >= s.log.FirstPendingBarrier() {
		se.noteTx(s.id, lsn, true)
	}
}
