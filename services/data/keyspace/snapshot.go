package keyspace

import (
	"fmt"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// Snapshot is the keyspace as it was at one instant, for a follower's full resync: every key of
// every client database with its value, while writes go on.
//
// Records never change where they lie, so the keyspace at an instant is its index at that
// instant plus the records the index points at. Snapshot copies the index's live entries and
// their keys under every shard's read lock (a commit holds the write locks of all the shards it
// touches, so a transaction is wholly in the copy or wholly out of it) and pins every segment
// file that exists, so that neither the collector nor FLUSHALL deletes a record the copy points
// at; the values are then read from the copy at the reader's pace. The cost under the locks is
// a copy of 32 bytes and the key per key (34-78 ms for a million 16-byte keys here: the
// primary logs it as "replication: full resync ... copy="); writers wait that long once. Rejected: reading the values under the locks (the primary would stop for the whole
// transfer), and fuzzy copies that a follower reconciles by replaying the change stream over
// them, which is wrong for changes that are not idempotent (INCR, LPUSH) or touch a key copied
// before and one copied after.
type Snapshot struct {
	ks     *Keyspace
	now    int64
	dbm    *dbMap // the database map at the snapshot's instant: Each speaks logical numbers
	parts  []snapPart
	unpins []func()
	keys   int
}

// snapPart is one shard's copy: its entries, with keyOff rewritten to point into keys.
type snapPart struct {
	s    *shard
	ents []entry
	keys []byte
}

// Snapshot copies the keyspace as it is now; at is called at that instant (under every shard's
// lock, where no change can commit: the change stream's position that matches). Close releases
// it.
func (ks *Keyspace) Snapshot(at func()) *Snapshot {
	for _, s := range ks.shards {
		s.mu.RLock()
	}
	sn := &Snapshot{ks: ks, now: ks.opts.Now(), dbm: ks.dbm.cur.Load()}
	if at != nil {
		at()
	}
	for _, s := range ks.shards {
		p := snapPart{s: s}
		for i := uint32(0); i < s.ix.high; i++ {
			e := s.ix.entries[i]
			if !e.live() || int(e.db()) >= s.dbs || e.expired(sn.now) {
				continue
			}
			key := s.ix.key(&e)
			e.w0 = e.w0&^keyOffMask | uint64(len(p.keys))
			p.keys = append(p.keys, key...)
			p.ents = append(p.ents, e)
		}
		sn.keys += len(p.ents)
		sn.parts = append(sn.parts, p)
		sn.unpins = append(sn.unpins, s.log.Pin(0))
	}
	unlockReadAll(ks.shards)
	return sn
}

// Keys is the number of keys in the snapshot.
func (sn *Snapshot) Keys() int { return sn.keys }

// Close lets the snapshot's segments go.
func (sn *Snapshot) Close() {
	for _, u := range sn.unpins {
		u()
	}
	sn.unpins, sn.parts = nil, nil
}

// key is the key of entry j of the part.
func (p *snapPart) key(j int) []byte {
	from := p.ents[j].keyOff()
	to := uint64(len(p.keys))
	if j+1 < len(p.ents) {
		to = p.ents[j+1].keyOff()
	}
	return p.keys[from:to:to]
}

// Each calls fn with every key of the snapshot and its value as it was, shard by shard, until
// fn returns an error, which Each returns; a value that fails to read stops it with that error.
func (sn *Snapshot) Each(fn func(db int, key []byte, v Value, m Meta) error) error {
	ks := sn.ks
	for pi := range sn.parts {
		p := &sn.parts[pi]
		s := p.s
		for start := 0; start < len(p.ents); start += readBatch {
			end := min(start+readBatch, len(p.ents))
			pend := make([]pendingRead, end-start)
			var reads []*vlog.Read
			for j := start; j < end; j++ {
				e := &p.ents[j]
				if e.chunked() {
					continue
				}
				pr := &pend[j-start]
				key := p.key(j)
				pr.db, pr.key, pr.vlen = e.db(), key, s.recLen(e)
				size := vlog.RecordSize(txExtLen(e.tx(), s.nshards), len(key), pr.vlen)
				pr.err = s.log.PrepareRead(&pr.rd, vlog.Loc{Seg: e.seg, Off: e.off}, int(size))
				pr.ready = pr.err == nil
				if pr.ready {
					reads = append(reads, &pr.rd)
				}
			}
			vlog.Submit(ks.opts.Engine, reads)
			var err error
			for j := start; j < end && err == nil; j++ {
				e := &p.ents[j]
				key := p.key(j)
				m := e.metaOf()
				ldb := sn.logical(e.db())
				if e.chunked() {
					sk := keySnap{s: s, db: e.db(), ok: true, meta: m, loc: vlog.Loc{Seg: e.seg, Off: e.off}, chunked: true, vlen: s.recLen(e)}
					sk.size = int(vlog.RecordSize(txExtLen(e.tx(), s.nshards), len(key), sk.vlen))
					err = ks.readSnapChunked(nil, &sk, ldb, key, func(v Value, m Meta, ok bool, rerr error) error {
						if rerr != nil {
							return rerr
						}
						if !ok {
							// The segments are pinned: the value can only be missing if a bug
							// let one go. Never send a snapshot without it.
							return fmt.Errorf("keyspace: snapshot: chunked value of %q no longer readable", key)
						}
						return fn(ldb, key, v, m)
					})
					continue
				}
				var val []byte
				val, err = ks.value(&pend[j-start])
				if err == nil {
					err = fn(ldb, key, Value{Len: len(val), whole: val}, m)
				}
			}
			for j := range pend {
				if pend[j].ready {
					pend[j].rd.Release()
				}
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// logical is the logical number of physical database p at the snapshot's instant.
func (sn *Snapshot) logical(p uint8) int {
	for l, q := range sn.dbm {
		if q == p {
			return l
		}
	}
	return int(p)
}
