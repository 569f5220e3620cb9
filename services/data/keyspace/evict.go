package keyspace

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Eviction: maxmemory bounds the DRAM the process uses (MemoryUsed), maxdisk the value log's
// live bytes, and when a write would go past either the policy acts as Redis's does. The
// server calls CheckLimits before every command that may grow memory (Redis's denyoom
// commands): under noeviction, or when the policy finds nothing to evict (volatile-* with no key
// with a TTL), it refuses the command (ErrOOM); otherwise it evicts keys until the use is under
// the limits, for at most evictBudget, and lets the command run. A background tick (every
// evictTick) refreshes the sampled figures and evicts too, so a burst of writes that outruns the
// per-command budget is caught up within a tick.
//
// MemoryUsed is what INFO's used_memory reports: the Go heap's live bytes as of the last
// collection (the heap's objects, before the first), the bytes the index uses for its keys
// (index.inUseBytes, exact, read from per-shard atomics) and the value cache's cached bytes.
// The heap and cache figures are sampled each tick (reading them costs a lock each), the index
// figure is read on every check, so evicting a key lowers the figure at once: its entry, access
// word and key bytes leave it. Garbage not yet collected is not counted, as memory a Redis
// allocator got back is not: counting it would make the figure swing by the heap's whole GOGC
// headroom and evict keys for garbage.
//
// Candidates are chosen as Redis's approximated LRU/LFU does: each round samples
// maxmemory-samples random entries of one shard (shards taken in turn, so that every shard is
// sampled) into an eviction pool of the evictPoolSize best candidates seen so far, and evicts the
// best of the pool that still exists. The best is the longest idle (lru), the lowest decayed
// counter (lfu) or the nearest expiry (volatile-ttl); the random policies take a random key of a
// random shard. An eviction is a DEL the keyspace states itself (as expiry's removals are), so a
// follower removes the key too and never evicts on its own.
const (
	evictTick     = 100 * time.Millisecond
	evictBudget   = time.Millisecond      // per command that finds the use over a limit
	evictTickWork = 50 * time.Millisecond // per background tick
	evictPoolSize = 16
	// evictTries bounds the random probes of one sample: sparse arrays (many free entries, or
	// few keys with a TTL under volatile-*) give up after this many times the sample size.
	evictTries = 8
)

// Policy is a maxmemory policy.
type Policy uint8

// The maxmemory policies, as Redis names them (ParsePolicy).
const (
	NoEviction Policy = iota
	AllKeysLRU
	AllKeysLFU
	AllKeysRandom
	VolatileLRU
	VolatileLFU
	VolatileRandom
	VolatileTTL
)

var policyNames = [...]string{"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
	"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}

// ParsePolicy returns the policy named s (maxmemory-policy's values).
func ParsePolicy(s string) (Policy, bool) {
	for i, n := range policyNames {
		if n == s {
			return Policy(i), true
		}
	}
	return NoEviction, false
}

func (p Policy) String() string { return policyNames[p] }

// LFU reports whether the policy evicts by access frequency.
func (p Policy) LFU() bool { return p == AllKeysLFU || p == VolatileLFU }

func (p Policy) volatile() bool { return p >= VolatileLRU }

// Limits are the bounds CheckLimits keeps.
type Limits struct {
	MaxMemory int64 // bytes of MemoryUsed; 0 = none
	MaxDisk   int64 // bytes of the value log's live records; 0 = none
	Policy    Policy
	Samples   int // keys sampled per round (maxmemory-samples)
}

// Errors of CheckLimits, with Redis's text for memory.
var (
	ErrOOM     = errors.New("OOM command not allowed when used memory > 'maxmemory'.")
	ErrDiskOOM = errors.New("OOM command not allowed when used disk > 'maxdisk'.")
)

// evictor is eviction's state.
type evictor struct {
	limits atomic.Pointer[Limits]
	// heap, cache and disk are the sampled figures (sampleUse); diskFreed is what evictions
	// took from disk since disk was sampled (an estimate: the records' lengths).
	heap, cache, disk, diskFreed atomic.Int64
	evicted                      atomic.Uint64
	wake                         chan struct{}

	mu sync.Mutex // one evictor at a time; guards what follows
	// pool holds the best candidates found, ascending by score: the last is evicted first.
	pool []evictCand
	next int // the shard the next round samples
	se   *Session
	// sample is runtime/metrics' buffer.
	sample []metrics.Sample
}

type evictCand struct {
	score uint64
	db    uint8
	key   []byte
}

// SetLimits sets what CheckLimits bounds; a limit lowered below the use is enforced by the next
// write or tick.
func (ks *Keyspace) SetLimits(l Limits) {
	l.Samples = max(l.Samples, 1)
	ks.ev.limits.Store(&l)
	ks.access.lfu.Store(l.Policy.LFU())
	select {
	case ks.ev.wake <- struct{}{}:
	default:
	}
}

// EvictedKeys is the number of keys evicted since start (INFO's evicted_keys).
func (ks *Keyspace) EvictedKeys() uint64 { return ks.ev.evicted.Load() }

// MemoryUsed is the DRAM the process uses as maxmemory counts it (see the top of this file).
func (ks *Keyspace) MemoryUsed() int64 {
	n := ks.ev.heap.Load() + ks.ev.cache.Load()
	for _, s := range ks.shards {
		n += s.ix.inUse.Load()
	}
	return n
}

// DiskUsed is the value log's live bytes as the limit counts them: as sampled, less what
// evictions freed since.
func (ks *Keyspace) DiskUsed() int64 { return max(0, ks.ev.disk.Load()-ks.ev.diskFreed.Load()) }

// RefreshUse samples the figures MemoryUsed and DiskUsed read (INFO calls it).
func (ks *Keyspace) RefreshUse() {
	ks.ev.mu.Lock()
	ks.sampleUseLocked()
	ks.ev.mu.Unlock()
}

// sampleUseLocked reads the heap, cache and disk figures. ev.mu is held.
func (ks *Keyspace) sampleUseLocked() {
	ev := &ks.ev
	if ev.sample == nil {
		ev.sample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	}
	metrics.Read(ev.sample)
	heap := int64(ev.sample[0].Value.Uint64())
	if heap == 0 { // no collection yet
		heap = int64(ev.sample[1].Value.Uint64())
	}
	ev.heap.Store(heap)
	if c := ks.opts.Cache; c != nil {
		ev.cache.Store(c.Stats().Bytes)
	}
	var disk int64
	for _, s := range ks.shards {
		disk += s.log.SpaceStats().LiveBytes
	}
	ev.disk.Store(disk)
	ev.diskFreed.Store(0)
}

// over reports which limit the use is past: ErrOOM, ErrDiskOOM or nil.
func (ks *Keyspace) over(l *Limits) error {
	switch {
	case l.MaxMemory > 0 && ks.MemoryUsed() > l.MaxMemory:
		return ErrOOM
	case l.MaxDisk > 0 && ks.DiskUsed() > l.MaxDisk:
		return ErrDiskOOM
	}
	return nil
}

// CheckLimits is called before a command that may grow memory or disk use. Under the limits it
// returns nil at once (a few atomic loads). Over one it evicts as the policy says and returns
// nil, or ErrOOM / ErrDiskOOM when the policy is noeviction or found nothing to evict. A
// follower never refuses or evicts: its primary's stream decides.
func (ks *Keyspace) CheckLimits() error {
	l := ks.ev.limits.Load()
	if l == nil || l.MaxMemory == 0 && l.MaxDisk == 0 || ks.follower.Load() {
		return nil
	}
	err := ks.over(l)
	if err == nil {
		return nil
	}
	if l.Policy == NoEviction {
		return err
	}
	ks.ev.mu.Lock()
	defer ks.ev.mu.Unlock()
	switch ks.evictLocked(l, time.Now().Add(evictBudget)) {
	case evictFail:
		return err
	case evictRunning:
		select {
		case ks.ev.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

type evictResult int

const (
	evictOK      evictResult = iota // under the limits
	evictRunning                    // still over when the time ran out
	evictFail                       // still over, nothing left to evict
)

// evictLocked evicts keys until the use is under l or the deadline passes. ev.mu is held.
func (ks *Keyspace) evictLocked(l *Limits, deadline time.Time) evictResult {
	for n := 0; ks.over(l) != nil; n++ {
		if n > 0 && n%16 == 0 && time.Now().After(deadline) {
			return evictRunning
		}
		if ks.follower.Load() || !ks.evictOneLocked(l) {
			return evictFail
		}
	}
	return evictOK
}

// evictLoop is the background tick.
func (ks *Keyspace) evictLoop() {
	ks.every(evictTick, ks.ev.wake, func() bool {
		ks.ev.mu.Lock()
		defer ks.ev.mu.Unlock()
		ks.sampleUseLocked()
		if l := ks.ev.limits.Load(); l != nil && l.Policy != NoEviction && !ks.follower.Load() {
			ks.evictLocked(l, time.Now().Add(evictTickWork))
		}
		return true
	})
}

// evictOneLocked evicts one key chosen by l's policy and reports whether it found one. ev.mu
// is held.
func (ks *Keyspace) evictOneLocked(l *Limits) bool {
	ev := &ks.ev
	if ev.se == nil {
		ev.se = ks.NewSession()
	}
	random := l.Policy == AllKeysRandom || l.Policy == VolatileRandom
	// Every shard may be empty of candidates: give up after two full turns without one.
	for miss := 0; miss < 2*len(ks.shards); {
		s := ks.shards[ev.next]
		ev.next = (ev.next + 1) % len(ks.shards)
		if random {
			c, ok := ks.randomCand(s, l.Policy.volatile())
			if !ok {
				miss++
				continue
			}
			if ks.evictKey(c) {
				return true
			}
			continue
		}
		ks.populate(s, l)
		if len(ev.pool) == 0 {
			miss++
			continue
		}
		for len(ev.pool) > 0 {
			c := ev.pool[len(ev.pool)-1]
			ev.pool = ev.pool[:len(ev.pool)-1]
			if ks.evictKey(c) {
				return true
			}
		}
	}
	return false
}

// evictable reports whether entry e may be evicted under the policy: a client's live key (with
// a TTL for volatile-*).
func (s *shard) evictable(e *entry, volatile bool) bool {
	return e.live() && e.db() != InternalDB && int(e.db()) < s.dbs && (!volatile || e.expireAt != 0)
}

// populate samples l.Samples entries of s into the pool (Redis's evictionPoolPopulate).
func (ks *Keyspace) populate(s *shard, l *Limits) {
	ev := &ks.ev
	now := ks.opts.Now()
	decay := ks.access.decayMin.Load()
	s.mu.RLock()
	defer s.mu.RUnlock()
	high := int(s.ix.high)
	if s.ix.count == 0 || high == 0 {
		return
	}
	for got, tries := 0, 0; got < l.Samples && tries < evictTries*l.Samples; tries++ {
		i := uint32(rand.IntN(high))
		e := s.ix.entry(i)
		if !s.evictable(e, l.Policy.volatile()) {
			continue
		}
		got++
		var score uint64
		w := s.ix.word(i)
		switch l.Policy {
		case AllKeysLRU, VolatileLRU:
			score = uint64(idleMs(w, now))
		case AllKeysLFU, VolatileLFU:
			score = 255 - uint64(lfuDecayed(w, now, decay))
		case VolatileTTL:
			score = math.MaxUint64 - uint64(e.expireAt)
		}
		key := s.ix.key(e)
		// Already in the pool (sampled twice): keep the newer score.
		if j := slices.IndexFunc(ev.pool, func(c evictCand) bool { return c.db == e.db() && string(c.key) == string(key) }); j >= 0 {
			ev.pool = slices.Delete(ev.pool, j, j+1)
		}
		if len(ev.pool) == evictPoolSize {
			if score <= ev.pool[0].score {
				continue
			}
			ev.pool = ev.pool[1:]
		}
		j, _ := slices.BinarySearchFunc(ev.pool, score, func(c evictCand, sc uint64) int {
			switch {
			case c.score < sc:
				return -1
			case c.score > sc:
				return 1
			}
			return 0
		})
		ev.pool = slices.Insert(ev.pool, j, evictCand{score: score, db: e.db(), key: slices.Clone(key)})
	}
}

// randomCand picks a random evictable key of s.
func (ks *Keyspace) randomCand(s *shard, volatile bool) (evictCand, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	high := int(s.ix.high)
	if s.ix.count == 0 {
		return evictCand{}, false
	}
	// Probe at random, then walk from a random place if the array is sparse.
	for range 16 {
		if e := s.ix.entry(uint32(rand.IntN(high))); s.evictable(e, volatile) {
			return evictCand{db: e.db(), key: slices.Clone(s.ix.key(e))}, true
		}
	}
	start := rand.IntN(high)
	for k := range high {
		if e := s.ix.entry(uint32((start + k) % high)); s.evictable(e, volatile) {
			return evictCand{db: e.db(), key: slices.Clone(s.ix.key(e))}, true
		}
	}
	return evictCand{}, false
}

// evictKey deletes c's key as a DEL the keyspace states, and reports whether it existed.
func (ks *Keyspace) evictKey(c evictCand) bool {
	se := ks.ev.se
	se.SetNoTouch(true)
	var size int64
	// c.db is physical; the DEL and the hook speak the logical number, which a swap after the
	// translation would make another: then the key is left for another round.
	db := ks.logicalDB(int(c.db))
	se.Propagate(db, [][]byte{[]byte("DEL"), c.key})
	existed := false
	err := ks.Update(se, []Key{{DB: db, Key: c.key}}, func(tx *Tx) error {
		if tx.keys[0].db != c.db {
			return nil
		}
		if m, ok := tx.Meta(0); ok {
			size = int64(m.Len + len(c.key))
		}
		existed = tx.Delete(0)
		return nil
	})
	se.DropEffects()
	if err != nil {
		ks.log.Warn("cannot evict a key", "err", err)
		return false
	}
	if existed {
		ks.ev.evicted.Add(1)
		ks.ev.diskFreed.Add(size)
		if h := ks.evictHook.Load(); h != nil {
			(*h)(db, c.key)
		}
	}
	return existed
}
