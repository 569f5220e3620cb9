package keyspace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// ixKey is a key of the index model.
type ixKey struct {
	db  uint8
	key string
}

func (k ixKey) String() string { return fmt.Sprintf("%d/%q", k.db, k.key) }

// ixModel is what the index should hold: every live key with its entry index, hash and the
// value location stored in its entry.
type ixModel struct {
	idx  map[ixKey]uint32
	hash map[ixKey]uint32
	loc  map[ixKey]uint64
}

func newIxModel() *ixModel {
	return &ixModel{idx: map[ixKey]uint32{}, hash: map[ixKey]uint32{}, loc: map[ixKey]uint64{}}
}

// newTestIndex returns an empty index whose memory the test frees at its end.
func newTestIndex(t testing.TB) *index {
	t.Helper()
	ix, err := newIndex()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.release)
	return ix
}

// ixInsert inserts k (absent) as the shard does: insert, then set the entry's fields; loc
// stands for the value's location.
func ixInsert(t testing.TB, ix *index, m *ixModel, k ixKey, h uint32, loc uint64) uint32 {
	t.Helper()
	i, e, err := ix.insert(h, k.db, []byte(k.key))
	if err != nil {
		t.Fatal(err)
	}
	e.setMeta(k.db, TypeString, 0)
	e.seg, e.off = uint32(loc>>32), uint32(loc)
	m.idx[k], m.hash[k], m.loc[k] = i, h, loc
	return i
}

func ixRemove(t testing.TB, ix *index, m *ixModel, k ixKey) {
	t.Helper()
	i, pos, ok := ix.find(m.hash[k], k.db, []byte(k.key))
	if !ok || i != m.idx[k] {
		t.Fatalf("find %v before remove = %d, %v; want %d", k, i, ok, m.idx[k])
	}
	ix.remove(i, pos)
	delete(m.idx, k)
	delete(m.hash, k)
	delete(m.loc, k)
}

// checkIndex verifies the index against the model and its own invariants: every slot's probe
// run is unbroken (linear probing with backward-shift deletion leaves no holes between a key's
// home slot and its slot), slots and live entries correspond one to one, and every modelled key
// is found at its entry with its bytes, database, hash and location.
func checkIndex(t testing.TB, ix *index, m *ixModel) {
	t.Helper()
	checkSlots(t, ix, m)
	var liveBytes int64
	for k, i := range m.idx {
		got, _, ok := ix.find(m.hash[k], k.db, []byte(k.key))
		if !ok || got != i {
			t.Fatalf("find %v = %d, %v; want entry %d", k, got, ok, i)
		}
		e := ix.entry(i)
		if e.db() != k.db || !bytes.Equal(ix.key(e), []byte(k.key)) || e.hash != m.hash[k] || e.loc() != m.loc[k] {
			t.Fatalf("entry %d: db %d key %q hash %#x loc %#x; want %v hash %#x loc %#x",
				i, e.db(), ix.key(e), e.hash, e.loc(), k, m.hash[k], m.loc[k])
		}
		liveBytes += int64(uvarintLen(len(k.key)) + len(k.key))
	}
	if ix.arena.live != liveBytes {
		t.Fatalf("arena live %d, keys hold %d bytes", ix.arena.live, liveBytes)
	}
}

// checkSlots is the structural part of checkIndex, linear in the table size.
func checkSlots(t testing.TB, ix *index, m *ixModel) {
	t.Helper()
	if ix.count != len(m.idx) {
		t.Fatalf("count %d, model %d", ix.count, len(m.idx))
	}
	if uint64(len(ix.slots)) != uint64(ix.mask)+1 || len(ix.slots)&(len(ix.slots)-1) != 0 {
		t.Fatalf("slots %d, mask %#x", len(ix.slots), ix.mask)
	}
	if ix.idxMask != uint32(uint64(1)<<ix.idxBits-1) || ix.high >= ix.idxMask {
		t.Fatalf("idxBits %d, idxMask %#x, high %d", ix.idxBits, ix.idxMask, ix.high)
	}
	if float64(ix.count) > maxLoad*float64(len(ix.slots)) {
		t.Fatalf("load %d/%d over %v", ix.count, len(ix.slots), maxLoad)
	}
	used := 0
	seen := make(map[uint32]bool, ix.count)
	for pos, s := range ix.slots {
		if s == 0 {
			continue
		}
		used++
		i := s&ix.idxMask - 1
		if i >= ix.high {
			t.Fatalf("slot %d names entry %d >= high %d", pos, i, ix.high)
		}
		if seen[i] {
			t.Fatalf("entry %d in two slots", i)
		}
		seen[i] = true
		e := ix.entry(i)
		if !e.live() {
			t.Fatalf("slot %d names dead entry %d", pos, i)
		}
		k := ixKey{e.db(), string(ix.key(e))}
		if h, ok := m.hash[k]; !ok || h != e.hash {
			t.Fatalf("slot %d: key %v hash %#x not in the model (model hash %#x, %v)", pos, k, e.hash, h, ok)
		}
		if tag := s &^ ix.idxMask; tag != e.hash&^ix.idxMask {
			t.Fatalf("slot %d: tag %#x, entry hash %#x (idxBits %d)", pos, tag, e.hash, ix.idxBits)
		}
	}
	// Walk the slots once from an empty one, tracking where the current run started: a key's
	// home slot must lie within its run, at or after the run's first slot.
	start := -1
	for p, s := range ix.slots {
		if s == 0 {
			start = p
			break
		}
	}
	if start < 0 {
		t.Fatal("no empty slot")
	}
	runStart := uint32(start)
	for n := uint64(1); n <= uint64(ix.mask)+1; n++ {
		pos := uint32(uint64(start)+n) & ix.mask
		s := ix.slots[pos]
		if s == 0 {
			runStart = pos
			continue
		}
		home := ix.entry(s&ix.idxMask-1).hash & ix.mask
		// Cyclic distances from the empty slot before the run.
		if (home-runStart)&ix.mask == 0 || (home-runStart)&ix.mask > (pos-runStart)&ix.mask {
			t.Fatalf("slot %d (home %d) is not reachable from its home: the run starts after slot %d", pos, home, runStart)
		}
	}
	if used != ix.count {
		t.Fatalf("%d slots used, count %d", used, ix.count)
	}
	if int(ix.high) != ix.count+ix.nfree {
		t.Fatalf("high %d != count %d + free %d", ix.high, ix.count, ix.nfree)
	}
	free := freeList(ix)
	if len(free) != ix.nfree {
		t.Fatalf("free list of %d entries, nfree %d", len(free), ix.nfree)
	}
	for _, i := range free {
		if ix.entry(i).live() || seen[i] {
			t.Fatalf("free entry %d is live", i)
		}
	}
}

// freeList returns the free entries in list order.
func freeList(ix *index) []uint32 {
	var out []uint32
	for f := ix.freeHead; f != 0 && len(out) <= int(ix.high); f = ix.entry(f - 1).seg {
		out = append(out, f-1)
	}
	return out
}

func TestEntryMetaPacking(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 32 {
		t.Fatalf("entry is %d bytes, want 32", n)
	}
	for _, c := range []struct {
		off   uint64
		db    uint8
		vtype uint8
	}{{0, 0, 0}, {keyOffMask, 255, 15 | RawHint}, {12345, 7, 3}, {1 << 39, 1, RawHint}} {
		e := entry{w0: c.off}
		e.setMeta(c.db, c.vtype, 0)
		if !e.live() || e.keyOff() != c.off || e.db() != c.db || e.vtype() != c.vtype&0xf || e.raw() != (c.vtype&RawHint != 0) {
			t.Fatalf("pack %+v: live %v off %d db %d vtype %d raw %v", c, e.live(), e.keyOff(), e.db(), e.vtype(), e.raw())
		}
		e.setMeta(c.db^1, 0, 0)
		if !e.live() || e.keyOff() != c.off || e.db() != c.db^1 || e.vtype() != 0 || e.raw() {
			t.Fatalf("repack %+v: live %v off %d db %d vtype %d raw %v", c, e.live(), e.keyOff(), e.db(), e.vtype(), e.raw())
		}
	}
}

// TestIndexRandom runs random inserts, finds and removes of 100k keys against a map. A few
// percent of the keys hash to the last slots of the table whatever its size, so their probe
// runs wrap around to slot 0 and backward-shift deletion has to move entries across the wrap.
func TestIndexRandom(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	nkeys := 100_000
	ops := 400_000
	if testing.Short() || raceEnabled {
		ops = 200_000
	}
	ops = scaledOps(ops)
	type poolKey struct {
		k ixKey
		h uint32
	}
	pool := make([]poolKey, nkeys)
	clustered := 0
	for i := range pool {
		b := make([]byte, rng.IntN(24))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		k := ixKey{db: uint8(rng.IntN(4)), key: fmt.Sprintf("%d:%s", i, b)}
		h := uint32(hashKey(k.db, []byte(k.key)))
		if i%50 == 0 {
			// Low bits all ones but for a few: home slot within 64 of the end at any size.
			h = ^uint32(rng.IntN(64)) &^ (uint32(rng.IntN(1<<16)) << 16)
			clustered++
		}
		pool[i] = poolKey{k, h}
	}
	ix := newTestIndex(t)
	m := newIxModel()
	grew := 0
	wrapped := false
	for op := 1; op <= ops; op++ {
		p := pool[rng.IntN(len(pool))]
		if i, ok := m.idx[p.k]; ok {
			if rng.IntN(10) < 6 {
				ixRemove(t, ix, m, p.k)
			} else if got, _, found := ix.find(p.h, p.k.db, []byte(p.k.key)); !found || got != i {
				t.Fatalf("seed %d op %d: find %v = %d, %v; want %d", seed, op, p.k, got, found, i)
			}
		} else {
			if _, _, found := ix.find(p.h, p.k.db, []byte(p.k.key)); found {
				t.Fatalf("seed %d op %d: absent key %v found", seed, op, p.k)
			}
			slots := len(ix.slots)
			ixInsert(t, ix, m, p.k, p.h, uint64(op))
			if len(ix.slots) != slots {
				grew++
			}
		}
		if s := ix.slots[0]; !wrapped && s != 0 && ix.entry(s&ix.idxMask-1).hash&ix.mask > ix.mask/2 {
			wrapped = true
		}
		if op%50_000 == 0 {
			checkIndex(t, ix, m)
		}
	}
	checkIndex(t, ix, m)
	if grew < 5 || !wrapped {
		t.Fatalf("seed %d: table grew %d times, wrapped %v; the test wants growth and wrap-around", seed, grew, wrapped)
	}
	// Drain everything in random order; the table must end empty.
	keys := make([]ixKey, 0, len(m.idx))
	for k := range m.idx {
		keys = append(keys, k)
	}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for n, k := range keys {
		ixRemove(t, ix, m, k)
		if n%20_000 == 0 {
			checkIndex(t, ix, m)
		}
	}
	checkIndex(t, ix, m)
	for pos, s := range ix.slots {
		if s != 0 {
			t.Fatalf("slot %d not empty after removing every key", pos)
		}
	}
}

// TestIndexWrapAround keeps a few hundred keys whose home slots are the last and first slots of
// a table that never grows, and checks the invariants after every insert and remove.
func TestIndexWrapAround(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	ix := newTestIndex(t)
	m := newIxModel()
	size := uint32(len(ix.slots))
	var pool []ixKey
	hashes := map[ixKey]uint32{}
	for i := 0; i < 700; i++ {
		k := ixKey{db: uint8(i % 3), key: fmt.Sprintf("w%d", i)}
		var home uint32
		switch r := rng.IntN(10); {
		case r < 7:
			home = size - 1 - uint32(rng.IntN(16)) // the last 16 slots
		case r < 9:
			home = uint32(rng.IntN(8)) // the first slots, inside the wrapped run
		default:
			home = uint32(rng.IntN(int(size)))
		}
		// Several keys share a full hash, so comparisons fall through to key bytes.
		hashes[k] = uint32(rng.IntN(4))<<24 | home
		pool = append(pool, k)
	}
	ops := 30_000
	if testing.Short() || raceEnabled {
		ops = 8_000
	}
	maxWrap := 0
	for op := 0; op < ops; op++ {
		k := pool[rng.IntN(len(pool))]
		if _, ok := m.idx[k]; ok {
			ixRemove(t, ix, m, k)
		} else if ix.count < 700 {
			ixInsert(t, ix, m, k, hashes[k], uint64(op+1))
		}
		if len(ix.slots) != int(size) {
			t.Fatal("table grew; the test wants a fixed size")
		}
		// How far the run starting in the last slots reaches past slot 0.
		wrap := 0
		for wrap < len(ix.slots) && ix.slots[wrap] != 0 {
			wrap++
		}
		maxWrap = max(maxWrap, wrap)
		if op%50 == 0 {
			checkIndex(t, ix, m)
		} else {
			checkSlots(t, ix, m)
		}
	}
	checkIndex(t, ix, m)
	if maxWrap < 100 {
		t.Fatalf("seed %d: probe runs reached only %d slots past the wrap", seed, maxWrap)
	}
}

func TestIndexGrowKeepsEntryIndexes(t *testing.T) {
	ix := newTestIndex(t)
	m := newIxModel()
	for i := 0; i < 20_000; i++ {
		k := ixKey{db: 0, key: fmt.Sprintf("g%d", i)}
		ixInsert(t, ix, m, k, uint32(hashKey(0, []byte(k.key))), 1)
		if i%5000 == 0 {
			checkIndex(t, ix, m)
		}
	}
	if len(ix.slots) < 20_000*4/3 {
		t.Fatalf("%d slots for 20000 keys", len(ix.slots))
	}
	checkIndex(t, ix, m) // find returns the entry index recorded at insert
}

func TestIndexEntryReuse(t *testing.T) {
	ix := newTestIndex(t)
	m := newIxModel()
	h := func(k ixKey) uint32 { return uint32(hashKey(k.db, []byte(k.key))) }
	a, b, c := ixKey{0, "a"}, ixKey{0, "b"}, ixKey{0, "c"}
	ia := ixInsert(t, ix, m, a, h(a), 1)
	ib := ixInsert(t, ix, m, b, h(b), 2)
	ic := ixInsert(t, ix, m, c, h(c), 3)
	if ia != 0 || ib != 1 || ic != 2 {
		t.Fatalf("first entries %d %d %d", ia, ib, ic)
	}
	ixRemove(t, ix, m, b)
	if ix.entry(ib).live() {
		t.Fatal("removed entry still live")
	}
	d := ixKey{1, "d"}
	if id := ixInsert(t, ix, m, d, h(d), 4); id != ib {
		t.Fatalf("insert after remove took entry %d, want the freed %d", id, ib)
	}
	ixRemove(t, ix, m, a)
	ixRemove(t, ix, m, c)
	e1, e2 := ixKey{0, "e"}, ixKey{2, "f"}
	got := map[uint32]bool{ixInsert(t, ix, m, e1, h(e1), 5): true, ixInsert(t, ix, m, e2, h(e2), 6): true}
	if !got[ia] || !got[ic] || ix.high != 3 {
		t.Fatalf("reinserts took entries %v (high %d), want the freed %d and %d", got, ix.high, ia, ic)
	}
	checkIndex(t, ix, m)
	// A fresh entry carries nothing of the dead key it replaces (nor the free-list link).
	ix.entry(m.idx[e1]).expireAt, ix.entry(m.idx[e1]).vlen = 99, 99
	ixRemove(t, ix, m, e1)
	i, e, err := ix.insert(h(e1), e1.db, []byte(e1.key))
	if err != nil {
		t.Fatal(err)
	}
	if want := (entry{w0: e.keyOff() | packMeta(e1.db, 0, 0), hash: h(e1)}); *e != want {
		t.Fatalf("reused entry %d: %+v, want %+v", i, *e, want)
	}
	e.seg, e.off = 0, 5
	m.idx[e1], m.hash[e1], m.loc[e1] = i, h(e1), 5
	ix.clear()
	m = newIxModel()
	checkIndex(t, ix, m)
	if ix.high != 0 || ix.nfree != 0 || ix.bytes() != minSlots*4 {
		t.Fatalf("clear left high %d, %d free, %d bytes", ix.high, ix.nfree, ix.bytes())
	}
}

// TestIndexSameBytesDifferentDB: a key's database is part of its identity even when the hash
// collides completely.
func TestIndexSameBytesDifferentDB(t *testing.T) {
	ix := newTestIndex(t)
	m := newIxModel()
	const h = 0xdeadbeef
	var keys []ixKey
	for db := 0; db < 16; db++ {
		k := ixKey{uint8(db), "same"}
		keys = append(keys, k)
		ixInsert(t, ix, m, k, h, uint64(db+1))
	}
	checkIndex(t, ix, m)
	if _, _, ok := ix.find(h, 16, []byte("same")); ok {
		t.Fatal("found the key in a database it was never put in")
	}
	if _, _, ok := ix.find(h, 0, []byte("samE")); ok {
		t.Fatal("found a key with other bytes")
	}
	for _, i := range []int{5, 0, 15, 7} {
		ixRemove(t, ix, m, keys[i])
		checkIndex(t, ix, m)
	}
	// The real hash mixes in the database too.
	if hashKey(0, []byte("same")) == hashKey(1, []byte("same")) {
		t.Fatal("hashKey ignores the database")
	}
}

// TestIndexArenaCompaction deletes most keys of an arena of many megabytes and checks that the
// arena shrinks and every remaining key still resolves to its bytes.
func TestIndexArenaCompaction(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	ix := newTestIndex(t)
	m := newIxModel()
	const n = 60_000 // 15 MiB of keys: compaction needs more than 8 MiB dead
	keys := make([]ixKey, 0, n+1)
	for i := 0; i < n; i++ {
		b := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, 200+rng.IntN(112))
		copy(b, fmt.Sprintf("%d:", i))
		keys = append(keys, ixKey{uint8(i % 2), string(b)})
	}
	// One key of over a megabyte, with a three-byte length prefix.
	keys = append(keys, ixKey{0, string(bytes.Repeat([]byte("L"), 1<<20+100))})
	for i, k := range keys {
		ixInsert(t, ix, m, k, uint32(hashKey(k.db, []byte(k.key))), uint64(i+1))
	}
	before := ix.arena.bytes()
	if before < 16<<20 {
		t.Fatalf("arena of %d bytes; the test wants more than the compaction threshold", before)
	}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	compactions := 0
	lastDead := ix.arena.dead
	for _, k := range keys[:len(keys)*9/10] {
		ixRemove(t, ix, m, k)
		if ix.arena.dead < lastDead {
			compactions++
			if ix.arena.dead != 0 || ix.arena.bytes() > ix.arena.live+ix.arena.live/16+int64(pageSize) {
				t.Fatalf("after compaction: live %d dead %d allocated %d", ix.arena.live, ix.arena.dead, ix.arena.bytes())
			}
		}
		lastDead = ix.arena.dead
	}
	if compactions == 0 {
		t.Fatal("deleting 90% of the keys never compacted the arena")
	}
	// Compaction runs once dead bytes pass 8 MiB and the live ones, so the arena ends near the
	// live size at that moment: about half here.
	after := ix.arena.bytes()
	if after > before*3/5 {
		t.Fatalf("arena %d bytes after deleting 90%% of %d", after, before)
	}
	checkIndex(t, ix, m)
	// The arena keeps working after compaction: insert, find and remove more.
	for i := 0; i < 1000; i++ {
		k := ixKey{3, fmt.Sprintf("post%d", i)}
		ixInsert(t, ix, m, k, uint32(hashKey(k.db, []byte(k.key))), 1)
	}
	for _, k := range keys[len(keys)*9/10:][:100] {
		ixRemove(t, ix, m, k)
	}
	checkIndex(t, ix, m)
	t.Logf("arena %d -> %d bytes, %d compactions", before, after, compactions)
}
