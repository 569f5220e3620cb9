package keyspace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"sync/atomic"
	"unsafe"
)

// entry is one key's index record: 32 bytes, no pointers, in an off-heap array (offheap.go).
//
// The entry carries no version. Recovery needs the version of the record that defines each
// entry only while it replays the log, and keeps it in a temporary table (replay.go); a
// transaction validates a value it read earlier by the record's location, which every value
// change moves (see Tx).
type entry struct {
	// w0 packs keyOff | db<<40 | vtype<<48 | flags<<52 | tx<<56. keyOff is where the key
	// starts in the shard's arena: 40 bits, a terabyte of keys per shard. tx says whether the
	// record is part of a transaction and so how long its extension block is (txCode).
	w0       uint64
	expireAt int64  // unix ms; 0 = no expiry
	seg      uint32 // value record location; in a free entry, the next free entry + 1
	off      uint32
	// vlen is the value's length: the record's payload bytes, or for a chunked value
	// (flagChunked) the length its manifest describes (shard.recLen gives the record's).
	vlen uint32
	hash uint32 // the key's index hash: home slot and slot tag derive from it
}

// The entry must stay 32 bytes: the 48-byte budget per key is 32 for the entry, 1 for the
// key's length prefix, and what is left for the slot array (4 bytes a slot at load >= 0.375).
const _ = uint(32-unsafe.Sizeof(entry{})) + uint(unsafe.Sizeof(entry{})-32)

const (
	keyOffBits = 40
	keyOffMask = 1<<keyOffBits - 1
	dbShift    = 40
	vtypeShift = 48
	flagShift  = 52
	txShift    = 56

	flagLive = 1 << flagShift
	// flagRaw remembers that the value was last written by an in-place edit (APPEND,
	// SETRANGE), which Redis reports as the "raw" encoding whatever the length.
	flagRaw = 2 << flagShift
	// flagCkpt, during Open only, marks an entry whose state came from the checkpoint and no
	// later record (see checkpoint.go).
	flagCkpt = 4 << flagShift
	// flagChunked marks a value stored in chunks: the entry points at its manifest
	// (chunked.go).
	flagChunked = 8 << flagShift
)

// packMeta packs everything of w0 but the key offset. vtype may carry RawHint and vtChunked;
// tx is the record's transaction code (txCode).
func packMeta(db uint8, vtype uint8, tx uint8) uint64 {
	m := uint64(db)<<dbShift | uint64(vtype&0xf)<<vtypeShift | flagLive | uint64(tx)<<txShift
	if vtype&RawHint != 0 {
		m |= flagRaw
	}
	if vtype&vtChunked != 0 {
		m |= flagChunked
	}
	return m
}

// setMeta sets the entry's database, value type, raw hint, chunked flag and transaction code,
// keeping its key.
func (e *entry) setMeta(db uint8, vtype uint8, tx uint8) {
	e.w0 = e.w0&keyOffMask | packMeta(db, vtype, tx)
}

// tx is the transaction code of the record the entry points at (txCode).
func (e *entry) tx() uint8 { return uint8(e.w0 >> txShift) }

func (e *entry) keyOff() uint64 { return e.w0 & keyOffMask }
func (e *entry) live() bool     { return e.w0&flagLive != 0 }
func (e *entry) db() uint8      { return uint8(e.w0 >> dbShift) }
func (e *entry) vtype() uint8   { return uint8(e.w0>>vtypeShift) & 0xf }
func (e *entry) raw() bool      { return e.w0&flagRaw != 0 }

// loc is the value record's location as one number. It changes whenever the value does.
func (e *entry) loc() uint64 { return uint64(e.seg)<<32 | uint64(e.off) }

const (
	maxLoad      = 0.75
	minSlots     = 1024
	firstIdxBits = 10
)

var (
	errIndexFull = errors.New("keyspace: index full (2^32-1 entries in a shard)")
	errArenaFull = errors.New("keyspace: key arena full (1 TiB of keys in a shard)")
)

// index is one shard's open-addressing hash table. Three off-heap arrays hold it:
//
//   - entries, 32 bytes each, stored densely; an entry's index never changes while its key
//     lives, which gives SCAN a stable cursor. Dead entries form a free list, reused first.
//   - slots, uint32 each: entry index + 1 in the low idxBits bits (0 is an empty slot) and the
//     top bits of the key's hash above them, as a tag. A probe compares the tag before it
//     touches the entry, and the entry's full 32-bit hash before it touches the key, so a
//     miss rarely leaves the slot array. idxBits widens as the entry count grows, shrinking
//     the tag; slots keep their positions.
//   - the key arena: each key as a uvarint length and its bytes, back to back.
//
// Linear probing with backward-shift deletion keeps the table free of tombstones.
//
// Rejected: Go maps keyed by string (a heap object and pointer per key, tens of bytes of
// overhead, GC scanning); keys inline in entries (variable size); 64-bit slots holding the
// full hash (8 bytes a slot is 11-21 bytes a key at our load factors, over the budget once
// the entry is 32 bytes).
type index struct {
	slots   []uint32 // view of slotMem; len is a power of two
	mask    uint32   // len(slots) - 1
	idxBits uint     // low bits of a slot holding entry index + 1
	idxMask uint32   // 1<<idxBits - 1
	count   int      // live entries
	entries []entry  // view of entryMem, all of it
	// high is the number of entries ever handed out. Invariant: high == count + nfree.
	high     uint32
	freeHead uint32 // first free entry + 1; 0 = none
	nfree    int
	arena    arena

	// access holds, parallel to entries, each key's 16-bit access word, two to a uint32
	// (access.go).
	access []uint32
	// now is the clock the access information is kept by (unix ms); nil: the wall clock. lfuOn
	// (nil: off) says the words are LFU words.
	now   func() int64
	lfuOn *atomic.Bool
	// inUse is the memory the index uses for its keys (inUseBytes), published for readers
	// that hold no lock (the maxmemory check, evict.go).
	inUse atomic.Int64

	slotMem, entryMem, accessMem region
	// closed: the index was released (Keyspace.Close) and must not allocate again.
	closed bool
}

func newIndex() (*index, error) {
	ix := &index{idxBits: firstIdxBits, idxMask: 1<<firstIdxBits - 1}
	if err := ix.slotMem.resize(minSlots * 4); err != nil {
		return nil, err
	}
	ix.slots = view[uint32](&ix.slotMem, minSlots)
	ix.mask = minSlots - 1
	return ix, nil
}

// closedIndex is the empty index a shard keeps after Close: lookups find nothing and inserts
// fail, without any off-heap memory.
func closedIndex() *index {
	return &index{slots: make([]uint32, 1), idxBits: firstIdxBits, idxMask: 1<<firstIdxBits - 1, closed: true}
}

func (ix *index) entry(i uint32) *entry { return &ix.entries[i] }

// key returns e's key bytes, aliasing the arena: valid until the index next changes.
func (ix *index) key(e *entry) []byte { return ix.arena.get(e.keyOff()) }

// find returns the entry index of (db, key) with hash h and its slot position.
func (ix *index) find(h uint32, db uint8, key []byte) (uint32, uint32, bool) {
	tag := h &^ ix.idxMask
	pos := h & ix.mask
	for {
		s := ix.slots[pos]
		if s == 0 {
			return 0, pos, false
		}
		if s&^ix.idxMask == tag {
			i := s&ix.idxMask - 1
			e := &ix.entries[i]
			if e.hash == h && e.db() == db && bytes.Equal(ix.key(e), key) {
				return i, pos, true
			}
		}
		pos = (pos + 1) & ix.mask
	}
}

// slotOf returns the slot position of live entry i, found by probing from its home slot
// without comparing keys.
func (ix *index) slotOf(i uint32) uint32 {
	want := ix.entries[i].hash&^ix.idxMask | (i + 1)
	pos := ix.entries[i].hash & ix.mask
	for ix.slots[pos] != want {
		pos = (pos + 1) & ix.mask
	}
	return pos
}

// reserve makes room for one more entry with a key of keyLen bytes, so that the insert that
// follows cannot fail. Writers call it before they append a record: an index that cannot
// grow must refuse the write, not leave a record on disk that the index lacks.
func (ix *index) reserve(keyLen int) error { return ix.reserveN(1, arenaSize(keyLen)) }

// reserveN makes room for n more entries whose keys take arenaBytes of the arena in all
// (arenaSize of each), so that the n inserts that follow cannot fail.
func (ix *index) reserveN(n, arenaBytes int) error {
	if ix.closed {
		return ErrClosed
	}
	for float64(ix.count+n) > maxLoad*float64(len(ix.slots)) {
		if err := ix.grow(); err != nil {
			return err
		}
	}
	if need := n - ix.nfree; need > 0 {
		if uint64(ix.high)+uint64(need) > math.MaxUint32 {
			return errIndexFull
		}
		if int(ix.high)+need > len(ix.entries) {
			if err := ix.entryMem.resize(growSize(ix.entryMem.size(), (int(ix.high)+need)*32)); err != nil {
				return err
			}
			ix.entries = view[entry](&ix.entryMem, capOf[entry](&ix.entryMem))
		}
		// The access words follow the entries (however the entry array grew: a checkpoint's
		// load presizes it too).
		if words := (len(ix.entries) + 1) / 2; len(ix.access) < words {
			if err := ix.accessMem.resize(words * 4); err != nil {
				return err
			}
			ix.access = view[uint32](&ix.accessMem, words)
		}
		for uint64(ix.high)+uint64(need) > uint64(ix.idxMask) {
			ix.widen()
		}
	}
	return ix.arena.reserve(arenaBytes)
}

// arenaSize is what a key of keyLen bytes takes in the arena: its length prefix and its bytes.
func arenaSize(keyLen int) int { return uvarintLen(keyLen) + keyLen }

// insert adds a live entry for (db, key), which must not be present, and returns it with its
// database set and value type 0; the caller fills in the rest.
func (ix *index) insert(h uint32, db uint8, key []byte) (uint32, *entry, error) {
	if err := ix.reserve(len(key)); err != nil {
		return 0, nil, err
	}
	var i uint32
	if ix.freeHead != 0 {
		i = ix.freeHead - 1
		ix.freeHead = ix.entries[i].seg
		ix.nfree--
	} else {
		i = ix.high
		ix.high++
	}
	e := &ix.entries[i]
	*e = entry{w0: ix.arena.add(key) | packMeta(db, 0, 0), hash: h}
	ix.initAccess(i)
	ix.put(h, i)
	ix.count++
	ix.publishUse()
	return i, e, nil
}

// put stores entry i with hash h in the first empty slot of its probe run.
func (ix *index) put(h, i uint32) {
	pos := h & ix.mask
	for ix.slots[pos] != 0 {
		pos = (pos + 1) & ix.mask
	}
	ix.slots[pos] = h&^ix.idxMask | (i + 1)
}

// remove deletes entry i at slot pos (from find or slotOf).
func (ix *index) remove(i uint32, pos uint32) {
	e := &ix.entries[i]
	ix.arena.free(e.keyOff())
	*e = entry{seg: ix.freeHead}
	ix.freeHead = i + 1
	ix.nfree++
	ix.count--
	// Backward-shift: pull later members of the probe run into the hole when their home slot
	// does not lie cyclically in (hole, j].
	hole := pos
	ix.slots[hole] = 0
	for j := (hole + 1) & ix.mask; ix.slots[j] != 0; j = (j + 1) & ix.mask {
		home := ix.entries[ix.slots[j]&ix.idxMask-1].hash & ix.mask
		if (j > hole && (home <= hole || home > j)) || (j < hole && home <= hole && home > j) {
			ix.slots[hole] = ix.slots[j]
			ix.slots[j] = 0
			hole = j
		}
	}
	if ix.arena.needsCompaction() {
		ix.compactArena()
	}
	ix.publishUse()
}

// grow doubles the slot array and re-inserts every live entry, walking the entries in order.
func (ix *index) grow() error {
	n := len(ix.slots) * 2
	if n > 1<<32 {
		return errIndexFull
	}
	var mem region
	if err := mem.resize(n * 4); err != nil {
		return err
	}
	old := ix.slotMem
	ix.slotMem = mem
	ix.slots = view[uint32](&ix.slotMem, n)
	ix.mask = uint32(n - 1)
	for i := uint32(0); i < ix.high; i++ {
		if e := &ix.entries[i]; e.live() {
			ix.put(e.hash, i)
		}
	}
	old.free()
	ix.publishUse()
	return nil
}

// widen gives entry indexes one more bit of every slot, taking it from the tag. Slots stay
// where they are: the tag is the hash's top bits in place, so dropping its lowest bit leaves
// the tag of the narrower field.
func (ix *index) widen() {
	ix.idxBits++
	old := ix.idxMask
	ix.idxMask = uint32(uint64(1)<<ix.idxBits - 1)
	for p, s := range ix.slots {
		if s != 0 {
			ix.slots[p] = s&^ix.idxMask | s&old
		}
	}
}

// compactArena copies every live key into a fresh arena, dropping the holes deleted keys left.
// If the memory for it is refused, the arena stays as it is until the dead bytes double.
func (ix *index) compactArena() {
	var na arena
	if err := na.mem.resize(int(ix.arena.live) + int(ix.arena.live)/16); err != nil {
		ix.arena.compactAt = 2 * ix.arena.dead
		return
	}
	na.b = na.mem.b
	for i := uint32(0); i < ix.high; i++ {
		e := &ix.entries[i]
		if e.live() {
			e.w0 = e.w0&^keyOffMask | na.add(ix.key(e))
		}
	}
	ix.arena.mem.free()
	ix.arena = na
}

// clear drops every entry, returning the memory of all but a minimal slot array.
func (ix *index) clear() {
	if ix.closed {
		return
	}
	ix.entryMem.free()
	ix.accessMem.free()
	ix.arena.mem.free()
	slots := ix.slotMem
	var small region
	if len(ix.slots) > minSlots && small.resize(minSlots*4) == nil {
		slots.free()
		slots = small
	} else {
		clear(ix.slots) // kept as it is if even a small array is refused
	}
	now, lfuOn := ix.now, ix.lfuOn
	ix.inUse.Store(0)
	*ix = index{slotMem: slots, idxBits: firstIdxBits, idxMask: 1<<firstIdxBits - 1, now: now, lfuOn: lfuOn}
	ix.slots = view[uint32](&ix.slotMem, capOf[uint32](&ix.slotMem))
	ix.mask = uint32(len(ix.slots) - 1)
	ix.publishUse()
}

// release frees the index's memory and leaves it closed: empty, and refusing inserts.
func (ix *index) release() {
	ix.slotMem.free()
	ix.entryMem.free()
	ix.accessMem.free()
	ix.arena.mem.free()
	ix.inUse.Store(0)
	c := closedIndex()
	ix.slots, ix.mask, ix.idxBits, ix.idxMask, ix.count = c.slots, c.mask, c.idxBits, c.idxMask, 0
	ix.entries, ix.high, ix.freeHead, ix.nfree, ix.arena, ix.access = nil, 0, 0, 0, arena{}, nil
	ix.slotMem, ix.entryMem, ix.accessMem, ix.closed = region{}, region{}, region{}, true
}

// bytes is the off-heap memory the index holds.
func (ix *index) bytes() int64 {
	return int64(ix.slotMem.size()+ix.entryMem.size()+ix.accessMem.size()) + ix.arena.bytes()
}

// inUseBytes is the memory the index uses for its keys, the figure maxmemory bounds: the slot
// array, an entry and its access word for each live key, and the live keys' bytes in the arena.
// Free entries and the arena's dead bytes are not counted: like memory a Redis allocator got
// back from a freed object, the next inserts reuse them (INFO's lavik_index_bytes reports
// everything mapped).
func (ix *index) inUseBytes() int64 {
	return int64(ix.slotMem.size()) + int64(ix.count)*(entrySize+2) + ix.arena.live
}

// publishUse stores inUseBytes for readers without the lock. The shard's write lock is held.
func (ix *index) publishUse() { ix.inUse.Store(ix.inUseBytes()) }

const entrySize = int64(unsafe.Sizeof(entry{}))

// arena stores keys back to back, each as a uvarint length and its bytes, in one region.
// Offsets, not pointers, name keys, so the region may move when it grows.
type arena struct {
	mem  region
	b    []byte // mem's bytes
	used uint64 // bytes handed out
	// live and dead count the bytes (prefix and key) of live keys and of removed ones.
	live, dead int64
	// compactAt, when set, is the dead size at which to retry a compaction that failed.
	compactAt int64
}

// reserve makes room to add n more bytes (arenaSize of each key).
func (a *arena) reserve(n int) error {
	need := a.used + uint64(n)
	if need > 1<<keyOffBits {
		return errArenaFull
	}
	if need > uint64(len(a.b)) {
		if err := a.mem.resize(growSize(len(a.b), int(need))); err != nil {
			return err
		}
		a.b = a.mem.b
	}
	return nil
}

// add appends key (room reserved) and returns its offset.
func (a *arena) add(key []byte) uint64 {
	off := a.used
	n := binary.PutUvarint(a.b[off:], uint64(len(key)))
	n += copy(a.b[off+uint64(n):], key)
	a.used += uint64(n)
	a.live += int64(n)
	return off
}

// get returns the key at off.
func (a *arena) get(off uint64) []byte {
	b := a.b[off:]
	if c := int(b[0]); c < 0x80 {
		return b[1 : 1+c : 1+c]
	}
	n, w := binary.Uvarint(b)
	end := w + int(n)
	return b[w:end:end]
}

// free accounts for the key at off being removed.
func (a *arena) free(off uint64) {
	n := int64(len(a.get(off)))
	n += int64(uvarintLen(int(n)))
	a.live -= n
	a.dead += n
}

// bytes is the arena's mapped size.
func (a *arena) bytes() int64 { return int64(a.mem.size()) }

func (a *arena) needsCompaction() bool {
	return a.dead > 8<<20 && a.dead > a.live && a.dead >= a.compactAt
}

func uvarintLen(n int) int {
	w := 1
	for n >= 0x80 {
		n >>= 7
		w++
	}
	return w
}
