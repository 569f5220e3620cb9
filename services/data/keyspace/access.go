package keyspace

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Access information, for OBJECT IDLETIME / FREQ and the LRU and LFU eviction policies
// (evict.go). Each key has a 16-bit access word in an array parallel to the index's entries
// (index.access, two words to a uint32), 2 bytes a key, whose meaning follows the policy as
// Redis's 24 lru bits do: under an LFU policy the top 8 bits are the minute of the last access
// (modulo 256) and the low 8 bits Redis's logarithmic counter; otherwise the word is the access
// clock, unix seconds modulo 2^16. So, as in Redis, switching between LRU and LFU policies at run
// time leaves the words of the other meaning until the keys are accessed again.
//
// A word is written on access (a read or a write of the value: Get, MGet, the reads and writes
// of a transaction) unless the session asked for no touching (CLIENT NO-TOUCH), and never by the
// lookups of introspection (Lookup, Exists: TYPE, TTL, OBJECT, EXISTS, as Redis's
// LOOKUP_NOTOUCH). Readers hold only the shard's read lock, so a word is read with an atomic load
// and written with a compare-and-swap of its uint32; two readers of one key racing may lose an
// increment, as Redis's counter is an approximation too.
//
// Redis's clock is 24 bits of seconds (194 days before it wraps) and its LFU time 16 bits of
// minutes (45 days). Here the clock wraps after 18.2 hours and the LFU minute after 4.3 hours:
// a key idle longer looks idle for the remainder (OBJECT IDLETIME too), which only makes the
// eviction of keys idle that long less exact. The measured cost of the word is 2.3 bytes a key
// (TestIndexMemory).
//
// Rejected: 32 bits a key holding both the clock and the counter at full width (measured 4.3
// bytes a key, which takes the index past its 48-byte budget at a fresh slot array's load);
// room in the 32-byte entry (every one of its bits is taken).
const (
	lruMask = 1<<16 - 1
	lfuInit = 5 // a new key's counter (Redis's LFU_INIT_VAL), so it is not evicted at once
)

// accessClock is the LRU access clock at unix ms now.
func accessClock(now int64) uint16 { return uint16(now / 1000) }

// lfuMinute is the LFU time at unix ms now.
func lfuMinute(now int64) uint8 { return uint8(now / 60000) }

// idleMs is how long ago, in ms, clock was the access clock, with now in unix ms (Redis's
// estimateObjectIdleTime: a clock ahead of now has wrapped).
func idleMs(clock uint16, now int64) int64 { return int64(accessClock(now)-clock) * 1000 }

// lfuWord and lfuOf pack and unpack an LFU access word.
func lfuWord(minute, counter uint8) uint16 { return uint16(minute)<<8 | uint16(counter) }

func lfuOf(w uint16) (minute, counter uint8) { return uint8(w >> 8), uint8(w) }

// lfuDecayed is the counter of LFU word w decayed to unix ms now (Redis's LFUDecrAndReturn).
func lfuDecayed(w uint16, now int64, decayMin int64) uint8 {
	m, c := lfuOf(w)
	return lfuDecay(c, int64(lfuMinute(now)-m), decayMin)
}

// lfuDecay is counter after idle minutes: one less per decayMin minutes (0 never decays).
func lfuDecay(counter uint8, idleMin int64, decayMin int64) uint8 {
	if decayMin <= 0 {
		return counter
	}
	periods := idleMin / decayMin
	if periods >= int64(counter) {
		return 0
	}
	return counter - uint8(periods)
}

// accessTuning is the LFU's configuration (lfu-log-factor, lfu-decay-time).
type accessTuning struct {
	logFactor atomic.Int64
	decayMin  atomic.Int64
	lfu       atomic.Bool // an LFU policy is set: the words are LFU words
}

// lfu says the index keeps LFU words (an LFU policy is set); see the top of this file.
func (ix *index) lfu() bool { return ix.lfuOn != nil && ix.lfuOn.Load() }

// word and setWord read and write entry i's access word atomically.
func (ix *index) word(i uint32) uint16 {
	return uint16(atomic.LoadUint32(&ix.access[i/2]) >> (16 * (i & 1)))
}

func (ix *index) setWord(i uint32, w uint16) {
	p, sh := &ix.access[i/2], 16*(i&1)
	for {
		old := atomic.LoadUint32(p)
		if atomic.CompareAndSwapUint32(p, old, old&^(0xffff<<sh)|uint32(w)<<sh) {
			return
		}
	}
}

// initAccess gives new entry i the access word of a key just created: accessed now, with the
// initial LFU counter.
func (ix *index) initAccess(i uint32) {
	now := ix.clock()
	if ix.lfu() {
		ix.setWord(i, lfuWord(lfuMinute(now), lfuInit))
	} else {
		ix.setWord(i, accessClock(now))
	}
}

func (ix *index) clock() int64 {
	if ix.now != nil {
		return ix.now()
	}
	return time.Now().UnixMilli()
}

// accessed notes an access to entry i now: the clock, and the LFU counter decayed and
// incremented. The shard's lock (read or write) is held.
func (ks *Keyspace) accessed(s *shard, i uint32) {
	now := ks.opts.Now()
	if !ks.access.lfu.Load() {
		if c := accessClock(now); s.ix.word(i) != c {
			s.ix.setWord(i, c)
		}
		return
	}
	c := lfuDecayed(s.ix.word(i), now, ks.access.decayMin.Load())
	c = lfuIncr(c, ks.access.logFactor.Load(), rand.Float64())
	s.ix.setWord(i, lfuWord(lfuMinute(now), c))
}

// accessedBy is accessed unless se asked for no touching. The shard's lock is held.
func (ks *Keyspace) accessedBy(se *Session, s *shard, i uint32) {
	if se != nil && se.noTouch {
		return
	}
	ks.accessed(s, i)
}

// SetNoTouch makes the session's reads and writes leave the keys' access information alone
// (on: CLIENT NO-TOUCH) or update it.
func (se *Session) SetNoTouch(on bool) { se.noTouch = on }

// SetLFU sets the LFU counter's log factor and decay time in minutes (lfu-log-factor,
// lfu-decay-time).
func (ks *Keyspace) SetLFU(logFactor, decayMinutes int64) {
	ks.access.logFactor.Store(logFactor)
	ks.access.decayMin.Store(decayMinutes)
}

// Touch notes an access to each of keys that exists (TOUCH, which touches even under
// CLIENT NO-TOUCH, as in Redis) and returns how many exist. missed (nil: none) is called, in
// order, with the position of each key that does not exist, outside any lock.
func (ks *Keyspace) Touch(se *Session, db int, keys [][]byte, missed func(i int)) int {
	if se.batch() != nil {
		return ks.Exists(se, db, keys, missed)
	}
	n := 0
	now := ks.readNow()
	for j, key := range keys {
		pdb, h, s := ks.rlockKey(db, key)
		dep := s.depLocked(h)
		found := false
		if i, _, ok := s.ix.find(uint32(h), pdb, key); ok && !s.ix.entry(i).expired(now) {
			ks.accessed(s, i)
			n++
			found = true
		}
		s.mu.RUnlock()
		ks.noteDep(se, s, dep)
		if !found && missed != nil {
			missed(j)
		}
	}
	return n
}

// Access is a key's access information as OBJECT IDLETIME and FREQ report it.
type Access struct {
	LFU    bool  // the word is an LFU word: Freq is set, else IdleMs
	IdleMs int64 // since the last access
	Freq   uint8 // the LFU counter, decayed to now
}

// AccessOf returns key's access information without changing it; ok is false for a missing
// (or expired) key.
func (ks *Keyspace) AccessOf(se *Session, db int, key []byte) (a Access, ok bool) {
	var pdb uint8
	var h uint64
	var s *shard
	b := se.batch()
	if b != nil {
		// Inside an EXEC, which holds every lock: the index as it was before the EXEC.
		pdb = ks.execMap(b)[uint8(db)]
		h = ks.hash(pdb, key)
		s = ks.shardOf(h)
		if !b.holds(s) {
			b.err = ErrExecShards
			return Access{}, false
		}
	} else {
		pdb, h, s = ks.rlockKey(db, key)
	}
	dep := s.depLocked(h)
	defer func() { ks.noteDep(se, s, dep) }()
	if b == nil {
		defer s.mu.RUnlock()
	}
	i, _, ok := s.ix.find(uint32(h), pdb, key)
	if !ok || s.ix.entry(i).expired(ks.readNow()) {
		return Access{}, false
	}
	w, now := s.ix.word(i), ks.opts.Now()
	if a.LFU = ks.access.lfu.Load(); a.LFU {
		a.Freq = lfuDecayed(w, now, ks.access.decayMin.Load())
	} else {
		a.IdleMs = idleMs(w, now)
	}
	return a, true
}

// lfuIncr is Redis's LFULogIncr: the counter grows by one with probability 1/((counter - init)
// * factor + 1), so that it takes about a million accesses to reach 255 at factor 10. r is a
// uniform random number in [0, 1).
func lfuIncr(counter uint8, factor int64, r float64) uint8 {
	if counter == 255 {
		return 255
	}
	base := max(float64(counter)-lfuInit, 0)
	if r < 1/(base*float64(factor)+1) {
		counter++
	}
	return counter
}
