package keyspace

import "bytes"

// entry is one key's index record. It holds no pointers, so a shard's entries live in a few
// large arrays the garbage collector never scans element by element.
type entry struct {
	// keyRef locates the key bytes in the shard's arena: chunk<<32 | offset.
	keyRef uint64
	// meta packs version<<16 | db<<8 | vtype<<4 | flags. Version is 48 bits, ample for one
	// shard's lifetime of writes (2.8e14).
	meta     uint64
	expireAt int64 // unix ms; 0 = no expiry
	seg      uint32
	off      uint32
	vlen     uint32 // value length (payload bytes of the record)
	keyLen   uint32
}

const (
	flagLive = 1
	// flagRaw remembers that the value was last written by an in-place edit (APPEND,
	// SETRANGE), which Redis reports as the "raw" encoding whatever the length.
	flagRaw = 2

	versionShift = 16
	dbShift      = 8
	vtypeShift   = 4
)

func packMeta(version uint64, db uint8, vtype uint8) uint64 {
	m := version<<versionShift | uint64(db)<<dbShift | uint64(vtype&0xf)<<vtypeShift | flagLive
	if vtype&RawHint != 0 {
		m |= flagRaw
	}
	return m
}

func (e *entry) live() bool      { return e.meta&flagLive != 0 }
func (e *entry) version() uint64 { return e.meta >> versionShift }
func (e *entry) db() uint8       { return uint8(e.meta >> dbShift) }
func (e *entry) vtype() uint8    { return uint8(e.meta>>vtypeShift) & 0xf }
func (e *entry) raw() bool       { return e.meta&flagRaw != 0 }
func (e *entry) setVersion(v uint64) {
	e.meta = e.meta&(1<<versionShift-1) | v<<versionShift
}

// recordSize is the on-disk size of the entry's value record.
func (e *entry) recordSize() int { return 32 + int(e.keyLen) + int(e.vlen) }

const (
	entryChunkBits = 12
	entryChunk     = 1 << entryChunkBits
	maxLoad        = 0.75
)

// index is one shard's open-addressing hash table. slots hold hash<<32 | entryIndex+1 (0 is
// empty) so probing compares hashes without touching entries or keys; linear probing with
// backward-shift deletion keeps it free of tombstones. Entries are stored densely in fixed-size
// chunks and their indexes never change while the key lives, which gives SCAN a stable cursor.
//
// Rejected: Go maps keyed by string (a heap object and pointer per key, tens of bytes of
// overhead, GC scanning), and storing keys inline in entries (variable size).
type index struct {
	slots  []uint64
	mask   uint64
	count  int
	chunks [][]entry
	free   []uint32 // indexes of dead entries, reused first
	high   uint32   // entries ever allocated
	arena  arena
}

func newIndex() *index {
	ix := &index{}
	ix.slots = make([]uint64, 1024)
	ix.mask = uint64(len(ix.slots) - 1)
	return ix
}

func (ix *index) entry(i uint32) *entry {
	return &ix.chunks[i>>entryChunkBits][i&(entryChunk-1)]
}

func (ix *index) key(e *entry) []byte { return ix.arena.get(e.keyRef, e.keyLen) }

// find returns the entry index of (db, key) with hash h and its slot position.
func (ix *index) find(h uint32, db uint8, key []byte) (uint32, uint64, bool) {
	pos := uint64(h) & ix.mask
	for {
		s := ix.slots[pos]
		if s == 0 {
			return 0, pos, false
		}
		if uint32(s>>32) == h {
			i := uint32(s) - 1
			e := ix.entry(i)
			if e.db() == db && int(e.keyLen) == len(key) && bytes.Equal(ix.key(e), key) {
				return i, pos, true
			}
		}
		pos = (pos + 1) & ix.mask
	}
}

// insert adds a new entry for (db, key), which must not be present, and returns it.
func (ix *index) insert(h uint32, db uint8, key []byte) (uint32, *entry) {
	if float64(ix.count+1) > maxLoad*float64(len(ix.slots)) {
		ix.grow()
	}
	var i uint32
	if n := len(ix.free); n > 0 {
		i = ix.free[n-1]
		ix.free = ix.free[:n-1]
	} else {
		if ix.high>>entryChunkBits == uint32(len(ix.chunks)) {
			ix.chunks = append(ix.chunks, make([]entry, entryChunk))
		}
		i = ix.high
		ix.high++
	}
	e := ix.entry(i)
	*e = entry{keyRef: ix.arena.add(key), keyLen: uint32(len(key))}
	pos := uint64(h) & ix.mask
	for ix.slots[pos] != 0 {
		pos = (pos + 1) & ix.mask
	}
	ix.slots[pos] = uint64(h)<<32 | uint64(i+1)
	ix.count++
	return i, e
}

// remove deletes the entry at slot pos (from find).
func (ix *index) remove(i uint32, pos uint64) {
	e := ix.entry(i)
	ix.arena.free(e.keyLen)
	*e = entry{}
	ix.free = append(ix.free, i)
	ix.count--
	// Backward-shift: pull later members of the probe run into the hole when their home slot
	// does not lie cyclically in (hole, j].
	hole := pos
	ix.slots[hole] = 0
	for j := (hole + 1) & ix.mask; ix.slots[j] != 0; j = (j + 1) & ix.mask {
		home := uint64(uint32(ix.slots[j]>>32)) & ix.mask
		if (j > hole && (home <= hole || home > j)) || (j < hole && home <= hole && home > j) {
			ix.slots[hole] = ix.slots[j]
			ix.slots[j] = 0
			hole = j
		}
	}
	if ix.arena.needsCompaction() {
		ix.compactArena()
	}
}

func (ix *index) grow() {
	old := ix.slots
	ix.slots = make([]uint64, len(old)*2)
	ix.mask = uint64(len(ix.slots) - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		pos := uint64(uint32(s>>32)) & ix.mask
		for ix.slots[pos] != 0 {
			pos = (pos + 1) & ix.mask
		}
		ix.slots[pos] = s
	}
}

// compactArena copies every live key into a fresh arena, dropping the holes deleted keys left.
func (ix *index) compactArena() {
	var na arena
	for i := uint32(0); i < ix.high; i++ {
		e := ix.entry(i)
		if e.live() {
			e.keyRef = na.add(ix.key(e))
		}
	}
	ix.arena = na
}

// clear drops every entry.
func (ix *index) clear() {
	*ix = *newIndex()
}

// arena stores keys back to back in large chunks.
type arena struct {
	chunks     [][]byte
	live, dead int64
}

const arenaChunk = 1 << 20

func (a *arena) add(key []byte) uint64 {
	a.live += int64(len(key))
	n := len(a.chunks)
	if n == 0 || cap(a.chunks[n-1])-len(a.chunks[n-1]) < len(key) {
		a.chunks = append(a.chunks, make([]byte, 0, max(arenaChunk, len(key))))
		n++
	}
	c := a.chunks[n-1]
	off := len(c)
	a.chunks[n-1] = append(c, key...)
	return uint64(n-1)<<32 | uint64(off)
}

func (a *arena) get(ref uint64, n uint32) []byte {
	c, off := ref>>32, uint32(ref)
	return a.chunks[c][off : off+n : off+n]
}

func (a *arena) free(n uint32) {
	a.live -= int64(n)
	a.dead += int64(n)
}

func (a *arena) needsCompaction() bool { return a.dead > 8<<20 && a.dead > a.live }

// bytes reports the arena's allocated size.
func (a *arena) bytes() int64 {
	var n int64
	for _, c := range a.chunks {
		n += int64(cap(c))
	}
	return n
}
