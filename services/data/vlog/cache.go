package vlog

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Cache is the optional hot-value cache: verified records kept in DRAM by their location, shared
// by every shard log of a process. Log.PrepareRead serves a cached record like a tail hit (no
// I/O) and Submit inserts the records it read from disk.
//
// # Why by location
//
// A record never changes once written, and an overwrite or delete writes a new record at a new
// location. So an entry keyed by (log, segment, offset) can never be stale: the index simply
// stops asking for the old location and the entry ages out. Nothing is invalidated on the write
// path, and writes never touch the cache. A dropped segment (FLUSHALL now, reclamation later)
// only leaves entries nobody can ask for; DropSegmentsBefore records a per-log floor so that the
// clock hand discards them instead of giving them a second chance. Scanning the cache to delete
// them at once was rejected: its cost grows with the cache, and a drop is not the moment to pay
// it. Segment ids only grow and each Log gets a fresh identity when opened, so a location is
// never reused for other bytes.
//
// # Layout
//
// The cache is split into power-of-two shards by a hash of the location, each with its own
// mutex. A shard is one ring of bytes allocated outside the Go heap (mmap), holding entries
// back to back: a 16-byte header (log id, segment, offset, length and a referenced bit) and the
// record, padded to 8 bytes. The shard's index is a map[cacheKey]uint64 from location to the
// entry's position in the ring. Neither holds a pointer, so the garbage collector never scans
// them however many millions of entries there are, and the ring does not count towards the Go
// heap (a multi-gigabyte cache on the heap would let GOGC grow the garbage by as much again).
// A pointer per entry (a list node, a []byte per value) was rejected for the GC cost; fixed
// size-class slabs (memcached) for the fragmentation and the class rebalancing they need.
//
// # Eviction
//
// CLOCK, in its FIFO-with-reinsertion form: new entries go at the ring's tail; to make room the
// hand takes the entry at the head and, if it was hit since it was written, clears its bit and
// moves it to the tail (a memmove within the ring) instead of evicting it. Frequently read
// values therefore stay while one-time reads pass through, which is what a skewed workload
// needs; under a uniform workload the cache costs an insertion per disk read and buys little,
// which is why it is off by default. The bytes one insertion may move are bounded (see
// cacheMaxMove) so that no insertion sweeps a whole shard.
//
// # Correctness
//
// Only records whose CRC verified are inserted, and a reader verifies every record it serves,
// cached or not, so a corrupt record is never served from the cache either.
type Cache struct {
	shards    []cacheShard
	shardBits int
	// maxEntry is the largest record cached: a bigger one would evict too much of its shard.
	maxEntry int
	capacity int64

	nextLog atomic.Uint32
	// floors[log] is the lowest segment id of that log still alive; entries below it belong
	// to dropped segments. Copy-on-write under floorMu, read without a lock by the hand.
	floors  atomic.Pointer[[]uint32]
	floorMu sync.Mutex
}

// cacheKey is a record's location: the log's cache identity, segment and offset.
type cacheKey struct {
	log, seg, off uint32
}

const (
	cacheHeader  = 16
	cacheRef     = 1 << 31 // referenced since written or last moved
	cachePad     = 1 << 30 // filler up to the end of the ring
	cacheLenMask = cachePad - 1
	// cacheMaxMove bounds the bytes of referenced entries one insertion moves before the hand
	// evicts whatever it finds, so an insertion never memmoves more than this. Moves cost at
	// most one per hit over time (each consumes the bit a hit set); the bound only caps the
	// worst single insertion, when a long run of hot entries reaches the head.
	cacheMaxMove = 1 << 20
	// MinCacheSize is the smallest cache NewCache accepts.
	MinCacheSize = 1 << 20
	minShardSize = 4 << 20 // fewer, larger shards: larger records fit (maxEntry)
	maxShardSize = 1 << 29
	maxShards    = 256
	// maxCacheEntry bounds one cached record whatever the cache size.
	maxCacheEntry = 4 << 20
)

type cacheShard struct {
	mu sync.Mutex
	// ring holds the entries; its length is a multiple of 8.
	ring []byte
	// head and tail are positions in an unbounded byte stream mapped onto ring modulo its
	// length. Invariant: head <= tail <= head+len(ring); the entries (and pads) in [head, tail)
	// are the shard's contents, and no entry crosses the end of ring.
	head, tail uint64
	// index maps a location to the stream position of its entry. Invariant: every position is
	// in [head, tail) and the header there carries the same key.
	index map[cacheKey]uint64
	// live is the bytes (headers and padding included) of the entries in index.
	live int64

	hits, misses, inserts, evictions, dropped, moves uint64
	_                                                [64]byte // keep neighbouring shards' locks off this cache line
}

// CacheStats are a cache's counters and sizes.
type CacheStats struct {
	Capacity  int64  // bytes of DRAM for entries
	Bytes     int64  // bytes held by cached records (with their 16-byte headers)
	Entries   int64  // records cached
	Hits      uint64 // reads served from the cache
	Misses    uint64 // reads of synced records that went to the disk
	Inserts   uint64 // records added
	Evictions uint64 // records removed to make room
	Dropped   uint64 // records of dropped segments discarded by the hand
	Moves     uint64 // second chances: referenced records moved instead of evicted
}

// NewCache returns a cache holding up to size bytes of records (see CacheStats.Capacity; the
// index adds 30 to 60 bytes per record on the Go heap). size is at least MinCacheSize.
func NewCache(size int64) (*Cache, error) {
	if size < MinCacheSize {
		return nil, fmt.Errorf("vlog: value cache size %d below the minimum %d", size, MinCacheSize)
	}
	shards := 1
	for shards < maxShards && size/int64(shards*2) >= minShardSize {
		shards *= 2
	}
	// A shard's length (and so a pad's) must fit the header's 30-bit length field.
	for size/int64(shards) > maxShardSize {
		shards *= 2
	}
	per := (size / int64(shards)) &^ 7
	c := &Cache{shards: make([]cacheShard, shards), shardBits: bits.TrailingZeros(uint(shards))}
	c.capacity = per * int64(shards)
	c.maxEntry = int(min(per/8, maxCacheEntry))
	for i := range c.shards {
		ring, err := unix.Mmap(-1, 0, int(per), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("vlog: value cache of %d bytes: mmap: %w", size, err)
		}
		c.shards[i].ring = ring
		c.shards[i].index = map[cacheKey]uint64{}
	}
	floors := []uint32{0}
	c.floors.Store(&floors)
	return c, nil
}

// Close releases the cache's memory. Logs using it must be closed first.
func (c *Cache) Close() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		if s.ring != nil {
			unix.Munmap(s.ring)
		}
		s.ring, s.index = nil, map[cacheKey]uint64{}
		s.head, s.tail, s.live = 0, 0, 0
		s.mu.Unlock()
	}
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	st := CacheStats{Capacity: c.capacity}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Bytes += s.live
		st.Entries += int64(len(s.index))
		st.Hits += s.hits
		st.Misses += s.misses
		st.Inserts += s.inserts
		st.Evictions += s.evictions
		st.Dropped += s.dropped
		st.Moves += s.moves
		s.mu.Unlock()
	}
	return st
}

// register returns a new log identity (never 0, never reused).
func (c *Cache) register() uint32 {
	id := c.nextLog.Add(1)
	c.setFloor(id, 0)
	return id
}

// dropBefore marks every record of log in a segment below seg as unreachable.
func (c *Cache) dropBefore(log, seg uint32) { c.setFloor(log, seg) }

func (c *Cache) setFloor(log, seg uint32) {
	c.floorMu.Lock()
	defer c.floorMu.Unlock()
	old := *c.floors.Load()
	n := max(len(old), int(log)+1)
	f := make([]uint32, n)
	copy(f, old)
	f[log] = max(f[log], seg)
	c.floors.Store(&f)
}

func (c *Cache) dead(k cacheKey) bool {
	f := *c.floors.Load()
	return int(k.log) < len(f) && k.seg < f[k.log]
}

func (c *Cache) shardOf(k cacheKey) *cacheShard {
	h := (uint64(k.log)<<32 | uint64(k.seg)) * 0x9E3779B97F4A7C15
	h ^= uint64(k.off) * 0xC2B2AE3D27D4EB4F
	h ^= h >> 29
	return &c.shards[(h*0x94D049BB133111EB)>>(64-c.shardBits)]
}

// get returns a pooled copy (see getPlain) of the n-byte record at k and marks it referenced,
// or ok false.
func (c *Cache) get(k cacheKey, n int) (b []byte, ok bool) {
	s := c.shardOf(k)
	s.mu.Lock()
	pos, ok := s.index[k]
	if !ok || s.ring == nil {
		s.misses++
		s.mu.Unlock()
		return nil, false
	}
	p := pos % uint64(len(s.ring))
	lf := binary.LittleEndian.Uint32(s.ring[p+12:])
	if int(lf&cacheLenMask) != n {
		// The caller's idea of the record's size disagrees with what was read from that
		// location; let the disk read and the verification that follows it decide.
		s.misses++
		s.mu.Unlock()
		return nil, false
	}
	binary.LittleEndian.PutUint32(s.ring[p+12:], lf|cacheRef)
	b = append(getPlain(n), s.ring[p+cacheHeader:p+cacheHeader+uint64(n)]...)
	s.hits++
	s.mu.Unlock()
	return b, true
}

// putVerified inserts rec, the record at k read from disk, if its CRC verifies. A record that
// does not verify is left for the reader to report.
func (c *Cache) putVerified(k cacheKey, rec []byte) {
	if len(rec) > c.maxEntry {
		return
	}
	if _, err := DecodeRecord(rec); err != nil {
		return
	}
	c.put(k, rec)
}

func cacheEntrySize(n int) uint64 { return uint64(cacheHeader + (n+7)&^7) }

// put inserts rec at k unless it is there already or too large.
func (c *Cache) put(k cacheKey, rec []byte) {
	if len(rec) > c.maxEntry || c.dead(k) {
		return
	}
	s := c.shardOf(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring == nil {
		return
	}
	if _, ok := s.index[k]; ok {
		return // a concurrent read of the same record got there first
	}
	need := cacheEntrySize(len(rec))
	s.makeRoomLocked(c, need)
	p := s.tail % uint64(len(s.ring))
	e := s.ring[p : p+need]
	binary.LittleEndian.PutUint32(e[0:], k.log)
	binary.LittleEndian.PutUint32(e[4:], k.seg)
	binary.LittleEndian.PutUint32(e[8:], k.off)
	binary.LittleEndian.PutUint32(e[12:], uint32(len(rec)))
	copy(e[cacheHeader:], rec)
	s.index[k] = s.tail
	s.tail += need
	s.live += int64(need)
	s.inserts++
}

// makeRoomLocked advances the hand until need contiguous bytes are free at the tail.
func (s *cacheShard) makeRoomLocked(c *Cache, need uint64) {
	size := uint64(len(s.ring))
	moved := uint64(0)
	for {
		p := s.tail % size
		if size-p < need {
			// The entry would cross the end: fill up to it, once that space is free.
			if s.tail+(size-p)-s.head <= size {
				s.padLocked(p, size-p)
				continue
			}
		} else if s.tail+need-s.head <= size {
			return
		}
		s.advanceLocked(c, &moved)
	}
}

// padLocked fills n bytes at ring offset p (the end of the ring) with filler the hand skips.
func (s *cacheShard) padLocked(p, n uint64) {
	if n >= cacheHeader {
		binary.LittleEndian.PutUint32(s.ring[p+12:], cachePad|uint32(n))
	}
	// Shorter filler needs no header: the hand skips any remainder smaller than one.
	s.tail += n
}

// advanceLocked moves the hand past the entry at the head: a referenced entry of a live
// segment gets a second chance at the tail (within the move budget), any other is removed.
func (s *cacheShard) advanceLocked(c *Cache, moved *uint64) {
	size := uint64(len(s.ring))
	hp := s.head % size
	if size-hp < cacheHeader {
		s.head += size - hp
		return
	}
	h := s.ring[hp:]
	lf := binary.LittleEndian.Uint32(h[12:])
	if lf&cachePad != 0 {
		s.head += uint64(lf & cacheLenMask)
		return
	}
	k := cacheKey{
		log: binary.LittleEndian.Uint32(h[0:]),
		seg: binary.LittleEndian.Uint32(h[4:]),
		off: binary.LittleEndian.Uint32(h[8:]),
	}
	n := cacheEntrySize(int(lf & cacheLenMask))
	dead := c.dead(k)
	if lf&cacheRef != 0 && !dead && *moved+n <= cacheMaxMove && s.moveHeadLocked(k, hp, n, lf) {
		*moved += n
		s.moves++
		return
	}
	delete(s.index, k)
	s.live -= int64(n)
	s.head += n
	if dead {
		s.dropped++
	} else {
		s.evictions++
	}
}

// moveHeadLocked moves the n-byte entry at the head (ring offset hp) to the tail with its
// referenced bit cleared. The destination may overlap the entry itself (copy is a memmove).
func (s *cacheShard) moveHeadLocked(k cacheKey, hp, n uint64, lf uint32) bool {
	size := uint64(len(s.ring))
	tp := s.tail % size
	if size-tp < n {
		// Pad to the end first; legal only if that space is free.
		if s.tail+(size-tp)-s.head > size {
			return false
		}
		s.padLocked(tp, size-tp)
		tp = 0
	}
	copy(s.ring[tp:tp+n], s.ring[hp:hp+n])
	binary.LittleEndian.PutUint32(s.ring[tp+12:], lf&^cacheRef)
	s.index[k] = s.tail
	s.tail += n
	s.head += n
	return true
}
