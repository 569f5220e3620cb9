package vlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

func newTestCache(t testing.TB, size int64) *Cache {
	t.Helper()
	c, err := NewCache(size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// cacheVal is the content the tests store under k: derived from the key, so any hit can be
// checked without a model of what is cached.
func cacheVal(k cacheKey, n int) []byte {
	b := make([]byte, n)
	x := uint64(k.log)<<48 ^ uint64(k.seg)<<32 ^ uint64(k.off)
	for i := range b {
		x = x*6364136223846793005 + 1442695040888963407
		b[i] = byte(x >> 56)
	}
	return b
}

// checkInvariants walks every shard's ring from head to tail and checks that the ring and the
// index describe the same entries.
func (c *Cache) checkInvariants() error {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		err := s.checkLocked()
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return nil
}

func (s *cacheShard) checkLocked() error {
	size := uint64(len(s.ring))
	if s.head > s.tail || s.tail-s.head > size {
		return fmt.Errorf("head %d tail %d size %d", s.head, s.tail, size)
	}
	seen := 0
	var live int64
	for pos := s.head; pos < s.tail; {
		p := pos % size
		if size-p < cacheHeader {
			pos += size - p
			continue
		}
		lf := binary.LittleEndian.Uint32(s.ring[p+12:])
		if lf&cachePad != 0 {
			pos += uint64(lf & cacheLenMask)
			continue
		}
		n := cacheEntrySize(int(lf & cacheLenMask))
		if p+n > size {
			return fmt.Errorf("entry at %d (%d bytes) crosses the ring end", pos, n)
		}
		k := cacheKey{
			log: binary.LittleEndian.Uint32(s.ring[p:]),
			seg: binary.LittleEndian.Uint32(s.ring[p+4:]),
			off: binary.LittleEndian.Uint32(s.ring[p+8:]),
		}
		if at, ok := s.index[k]; !ok || at != pos {
			return fmt.Errorf("entry %+v at %d: index says %d, %v", k, pos, at, ok)
		}
		seen++
		live += int64(n)
		pos += n
	}
	if seen != len(s.index) || live != s.live {
		return fmt.Errorf("ring holds %d entries of %d bytes, index %d, live %d", seen, live, len(s.index), s.live)
	}
	return nil
}

func TestCacheSizing(t *testing.T) {
	if _, err := NewCache(MinCacheSize - 1); err == nil {
		t.Fatal("a cache below the minimum was accepted")
	}
	for _, size := range []int64{1 << 20, 3 << 20, 64 << 20, 1000 * 1000 * 1000} {
		c := newTestCache(t, size)
		if st := c.Stats(); st.Capacity > size || st.Capacity < size-int64(len(c.shards))*8 {
			t.Fatalf("size %d: capacity %d", size, st.Capacity)
		}
		if per := len(c.shards[0].ring); (per < minShardSize && len(c.shards) > 1) || per > maxShardSize || len(c.shards)&(len(c.shards)-1) != 0 {
			t.Fatalf("size %d: %d shards of %d bytes", size, len(c.shards), per)
		}
	}
}

// TestCacheBudget inserts records of random sizes, far more than fit: the bytes held never
// exceed the capacity, the ring and index always agree and every hit returns what was stored.
func TestCacheBudget(t *testing.T) {
	c := newTestCache(t, 2<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	log := c.register()
	var inserted int64
	for i := 0; i < 20000; i++ {
		k := cacheKey{log: log, seg: uint32(rng.IntN(4)), off: uint32(rng.IntN(5000))}
		n := 1 + rng.IntN(c.maxEntry)
		if rng.IntN(10) < 9 {
			n = 1 + rng.IntN(3000)
		}
		if rng.IntN(3) == 0 {
			// The same location always holds the same record, so its size is its key's.
			n = int(k.off%4000) + 1
			if b, ok := c.get(k, n); ok {
				if !bytes.Equal(b, cacheVal(k, n)) {
					t.Fatalf("op %d: wrong bytes for %+v", i, k)
				}
				putPlain(b)
			}
			continue
		}
		k.seg += 10 // sizes of these locations are random: keep them apart from the above
		k.off = uint32(i)
		c.put(k, cacheVal(k, n))
		inserted += int64(n)
		if st := c.Stats(); st.Bytes > st.Capacity {
			t.Fatalf("op %d: %d bytes held, capacity %d", i, st.Bytes, st.Capacity)
		}
		if i%997 == 0 {
			if err := c.checkInvariants(); err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
		}
	}
	if err := c.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Evictions == 0 || inserted < 5*st.Capacity {
		t.Fatalf("no eviction pressure: %+v, %d bytes inserted", st, inserted)
	}
	// A record larger than an entry may be is not cached.
	big := cacheKey{log: log, seg: 99}
	c.put(big, cacheVal(big, c.maxEntry+1))
	if _, ok := c.get(big, c.maxEntry+1); ok {
		t.Fatal("oversized record cached")
	}
}

// TestCacheClockKeepsHotEntries streams cold records through a small cache while reading a hot
// set: the hot records survive (second chances), the cold ones are evicted.
func TestCacheClockKeepsHotEntries(t *testing.T) {
	c := newTestCache(t, 1<<20)
	log := c.register()
	const n = 1000
	hot := make([]cacheKey, 100) // 100 KB of the 1 MiB
	for i := range hot {
		hot[i] = cacheKey{log: log, seg: 1, off: uint32(i)}
		c.put(hot[i], cacheVal(hot[i], n))
	}
	readHot := func() {
		for _, k := range hot {
			b, ok := c.get(k, n)
			if !ok {
				t.Fatalf("hot record %+v evicted: %+v", k, c.Stats())
			}
			if !bytes.Equal(b, cacheVal(k, n)) {
				t.Fatalf("hot record %+v: wrong bytes", k)
			}
			putPlain(b)
		}
	}
	for i := 0; i < 10000; i++ { // ten times the cache
		if i%200 == 0 {
			readHot()
		}
		k := cacheKey{log: log, seg: 2, off: uint32(i)}
		c.put(k, cacheVal(k, n))
	}
	readHot()
	st := c.Stats()
	if st.Moves == 0 || st.Evictions < 8000 {
		t.Fatalf("stats %+v", st)
	}
	if _, ok := c.get(cacheKey{log: log, seg: 2, off: 0}, n); ok {
		t.Fatal("the first cold record is still cached")
	}
	if err := c.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestCacheDropBefore: records of dropped segments get no second chance, are counted as
// dropped rather than evicted, and are not inserted again.
func TestCacheDropBefore(t *testing.T) {
	c := newTestCache(t, 1<<20)
	a, b := c.register(), c.register()
	const n = 1000
	var old []cacheKey
	for i := 0; i < 200; i++ {
		for _, log := range []uint32{a, b} {
			k := cacheKey{log: log, seg: 1, off: uint32(i)}
			c.put(k, cacheVal(k, n))
			if _, ok := c.get(k, n); !ok { // referenced: would get a second chance
				t.Fatal("just inserted record missing")
			}
			if log == a {
				old = append(old, k)
			}
		}
	}
	c.dropBefore(a, 2)
	c.put(old[0], cacheVal(old[0], n))
	for i := 0; i < 2000; i++ {
		k := cacheKey{log: b, seg: 2, off: uint32(i)}
		c.put(k, cacheVal(k, n))
	}
	st := c.Stats()
	if st.Dropped != uint64(len(old)) {
		t.Fatalf("dropped %d, want %d (%+v)", st.Dropped, len(old), st)
	}
	for _, k := range old {
		if _, ok := c.get(k, n); ok {
			t.Fatalf("record %+v of a dropped segment still cached", k)
		}
	}
	if err := c.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestCacheConcurrent hammers a small cache from many goroutines (run it with -race): every
// hit returns the bytes of its own location.
func TestCacheConcurrent(t *testing.T) {
	c := newTestCache(t, 2<<20)
	logs := []uint32{c.register(), c.register()}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for i := 0; i < 20000; i++ {
				k := cacheKey{log: logs[rng.IntN(2)], seg: uint32(rng.IntN(3)), off: uint32(rng.IntN(3000))}
				n := int(k.off)%2500 + 1
				if b, ok := c.get(k, n); ok {
					if !bytes.Equal(b, cacheVal(k, n)) {
						errs <- fmt.Errorf("wrong bytes for %+v", k)
						return
					}
					putPlain(b)
				} else {
					c.put(k, cacheVal(k, n))
				}
				if i%5000 == 0 && g == 0 {
					c.dropBefore(logs[1], uint32(i/5000))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := c.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Hits == 0 || st.Evictions == 0 {
		t.Fatalf("stats %+v", st)
	}
}

// cachedLog opens a log on a memory file system with a value cache.
func cachedLog(t *testing.T, c *Cache) (*Log, Options) {
	t.Helper()
	opts := testOpts(vfs.NewMem(), "/d")
	opts.Cache = c
	l, _ := collect(t, opts)
	t.Cleanup(func() { l.Close() })
	return l, opts
}

// TestCachedReadsSkipTheEngine: the first read of a synced record goes to the engine, later
// ones are served from the cache with no engine read; records in the tail are not cached.
func TestCachedReadsSkipTheEngine(t *testing.T) {
	c := newTestCache(t, 4<<20)
	l, opts := cachedLog(t, c)
	var recs []rec
	for i := 0; i < 50; i++ {
		key := fmt.Sprintf("key-%d", i)
		val := bytes.Repeat([]byte{byte(i)}, 100+i*30)
		h := Header{Kind: KindPut, Version: uint64(i + 1)}
		loc, _, err := l.Append(h, []byte(key), val)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec{loc: loc, h: h, key: key, val: val})
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	size := func(r rec) int { return int(RecordSize(0, len(r.key), len(r.val))) }
	for round := 0; round < 4; round++ {
		for _, r := range recs {
			v, err := readRecord(t, l, r.loc, size(r))
			if err != nil || !bytes.Equal(v, r.val) {
				t.Fatalf("round %d %s: %v", round, r.key, err)
			}
		}
		if reads := opts.Engine.Stats().Reads; reads != uint64(len(recs)) {
			t.Fatalf("round %d: %d engine reads, want %d", round, reads, len(recs))
		}
	}
	st := c.Stats()
	if st.Misses != 50 || st.Hits != 150 || st.Entries != 50 || st.Inserts != 50 {
		t.Fatalf("stats %+v", st)
	}
	// A record still in the tail is served from it and not cached.
	loc, _, err := l.Append(Header{Kind: KindPut, Version: 99}, []byte("tail"), []byte("in memory"))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := readRecord(t, l, loc, int(RecordSize(0, 4, 9))); err != nil || string(v) != "in memory" {
		t.Fatalf("tail read %q %v", v, err)
	}
	if st2 := c.Stats(); st2.Entries != 50 || st2.Misses != 50 || opts.Engine.Stats().Reads != 50 {
		t.Fatalf("tail read touched the cache or the engine: %+v", st2)
	}
	// A batch mixing cached, tail and disk reads.
	loc2, _, _ := l.Append(Header{Kind: KindPut, Version: 100}, []byte("late"), []byte("disk"))
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	var rs [3]Read
	if err := l.PrepareRead(&rs[0], recs[0].loc, size(recs[0])); err != nil {
		t.Fatal(err)
	}
	if err := l.PrepareRead(&rs[1], loc2, int(RecordSize(0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	if err := l.PrepareRead(&rs[2], recs[1].loc, size(recs[1])); err != nil {
		t.Fatal(err)
	}
	Submit(opts.Engine, []*Read{&rs[0], &rs[1], &rs[2]})
	for i, want := range [][]byte{recs[0].val, []byte("disk"), recs[1].val} {
		v, err := decodeVal(rs[i].Data)
		if rs[i].Err != nil || err != nil || !bytes.Equal(v, want) {
			t.Fatalf("batch read %d: %v %v", i, rs[i].Err, err)
		}
		rs[i].Release()
	}
	if reads := opts.Engine.Stats().Reads; reads != 51 {
		t.Fatalf("batch: %d engine reads, want 51", reads)
	}
}

// TestCacheNeverHoldsCorruptRecord: a record that fails verification when read from disk is
// reported and not cached, so every later read goes back to the disk and fails again rather
// than being served from memory.
func TestCacheNeverHoldsCorruptRecord(t *testing.T) {
	c := newTestCache(t, 4<<20)
	mem := vfs.NewMem()
	opts := testOpts(mem, "/d")
	opts.Cache = c
	l, _ := collect(t, opts)
	defer l.Close()
	loc, _, err := l.Append(Header{Kind: KindPut, Version: 1}, []byte("k"), bytes.Repeat([]byte("v"), 500))
	if err != nil {
		t.Fatal(err)
	}
	good, _, _ := l.Append(Header{Kind: KindPut, Version: 2}, []byte("g"), []byte("fine"))
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	f, err := mem.OpenReadWrite("/d/" + segName(loc.Seg))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{'X'}, int64(loc.Off)+HeaderSize+100)
	f.Close()
	n := int(RecordSize(0, 1, 500))
	for i := 1; i <= 3; i++ {
		if _, err := readRecord(t, l, loc, n); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("read %d of a corrupt record: %v", i, err)
		}
		if reads := opts.Engine.Stats().Reads; reads != uint64(i) {
			t.Fatalf("read %d: %d engine reads: served from the cache", i, reads)
		}
	}
	if st := c.Stats(); st.Entries != 0 || st.Inserts != 0 {
		t.Fatalf("corrupt record cached: %+v", st)
	}
	if v, err := readRecord(t, l, good, int(RecordSize(0, 1, 4))); err != nil || string(v) != "fine" {
		t.Fatalf("%q %v", v, err)
	}
	if st := c.Stats(); st.Entries != 1 {
		t.Fatalf("verified record not cached: %+v", st)
	}
}

// TestCacheLogIdentity: logs sharing a cache, with records at the same locations, never see
// each other's records; a reopened log is a new identity; FLUSHALL's segment drop leaves the
// cache consistent.
func TestCacheLogIdentity(t *testing.T) {
	c := newTestCache(t, 4<<20)
	la, optsA := cachedLog(t, c)
	lb, _ := cachedLog(t, c)
	write := func(l *Log, val string) Loc {
		loc, _, err := l.Append(Header{Kind: KindPut, Version: 1}, []byte("k"), []byte(val))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		return loc
	}
	locA, locB := write(la, "from-a"), write(lb, "from-b")
	if locA != locB {
		t.Fatalf("test expects equal locations, got %+v %+v", locA, locB)
	}
	n := int(RecordSize(0, 1, 6))
	for i := 0; i < 3; i++ {
		for _, x := range []struct {
			l    *Log
			want string
		}{{la, "from-a"}, {lb, "from-b"}} {
			if v, err := readRecord(t, x.l, locA, n); err != nil || string(v) != x.want {
				t.Fatalf("got %q %v, want %q", v, err, x.want)
			}
		}
	}
	if st := c.Stats(); st.Entries != 2 || st.Hits != 4 {
		t.Fatalf("stats %+v", st)
	}
	// FLUSHALL-style: rotate, drop everything older. The old location is gone for readers.
	seg, err := la.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if err := la.Sync(); err != nil { // FLUSHALL syncs its record before it drops
		t.Fatal(err)
	}
	la.DropSegmentsBefore(seg)
	if _, err := readRecord(t, la, locA, n); err == nil {
		t.Fatal("read of a dropped segment succeeded")
	}
	// Reopening gives a new identity: the same location is read from disk again.
	la.Close()
	la2, _ := collect(t, optsA)
	defer la2.Close()
	loc2 := write(la2, "again!")
	before := c.Stats().Misses
	if v, err := readRecord(t, la2, loc2, n); err != nil || string(v) != "again!" {
		t.Fatalf("%q %v", v, err)
	}
	if c.Stats().Misses != before+1 {
		t.Fatal("reopened log read another identity's entry")
	}
}

// TestCacheHitAllocatesNothing: serving a cached record allocates nothing in steady state.
func TestCacheHitAllocatesNothing(t *testing.T) {
	c := newTestCache(t, 4<<20)
	l, opts := cachedLog(t, c)
	loc, _, _ := l.Append(Header{Kind: KindPut, Version: 1}, []byte("k"), make([]byte, 1000))
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	n := int(RecordSize(0, 1, 1000))
	var r Read
	reads := []*Read{&r}
	read := func() {
		if err := l.PrepareRead(&r, loc, n); err != nil {
			t.Fatal(err)
		}
		Submit(opts.Engine, reads)
		if r.Err != nil || len(r.Data) != n {
			t.Fatal(r.Err)
		}
		r.Release()
	}
	read()
	if allocs := testing.AllocsPerRun(1000, read); allocs != 0 {
		t.Fatalf("%v allocations per cached read", allocs)
	}
	if opts.Engine.Stats().Reads != 1 {
		t.Fatal("cached reads went to the engine")
	}
}

func BenchmarkCacheGet(b *testing.B) {
	c := newTestCache(b, 64<<20)
	log := c.register()
	const keys = 10000
	for i := 0; i < keys; i++ {
		k := cacheKey{log: log, seg: 1, off: uint32(i)}
		c.put(k, cacheVal(k, 1024))
	}
	b.SetBytes(1024)
	b.RunParallel(func(pb *testing.PB) {
		i := uint32(0)
		for pb.Next() {
			i = (i + 7919) % keys
			buf, ok := c.get(cacheKey{log: log, seg: 1, off: i}, 1024)
			if !ok {
				b.Fatal("miss")
			}
			putPlain(buf)
		}
	})
}

func BenchmarkCachePut(b *testing.B) {
	c := newTestCache(b, 16<<20)
	log := c.register()
	val := make([]byte, 1024)
	b.SetBytes(1024)
	for i := 0; i < b.N; i++ {
		c.put(cacheKey{log: log, seg: uint32(i >> 20), off: uint32(i)}, val)
	}
}

// TestCacheModel runs seeded random appends, overwrites, syncs, reads and FLUSHALL-style drops
// against a log with a small cache and a map of what each key holds: every read returns the
// key's newest value, cached or not.
func TestCacheModel(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			c := newTestCache(t, 1<<20)
			l, opts := cachedLog(t, c)
			type cur struct {
				loc Loc
				val []byte
			}
			model := map[string]cur{}
			version := uint64(0)
			for op := 0; op < 20000; op++ {
				key := fmt.Sprintf("k%d", rng.IntN(300))
				switch r := rng.IntN(100); {
				case r < 25:
					version++
					val := make([]byte, rng.IntN(4000))
					for i := range val {
						val[i] = byte(rng.Uint32())
					}
					loc, _, err := l.Append(Header{Kind: KindPut, Version: version}, []byte(key), val)
					if err != nil {
						t.Fatalf("seed %d op %d: %v", seed, op, err)
					}
					model[key] = cur{loc, val}
				case r < 30:
					if err := l.Sync(); err != nil {
						t.Fatal(err)
					}
				case r == 30:
					seg, err := l.Rotate()
					if err != nil {
						t.Fatal(err)
					}
					l.DropSegmentsBefore(seg)
					clear(model)
				default:
					m, ok := model[key]
					if !ok {
						continue
					}
					v, err := readRecord(t, l, m.loc, int(RecordSize(0, len(key), len(m.val))))
					if err != nil || !bytes.Equal(v, m.val) {
						t.Fatalf("seed %d op %d: read %s at %+v: %v, value equal %v", seed, op, key, m.loc, err, bytes.Equal(v, m.val))
					}
				}
			}
			if err := c.checkInvariants(); err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			if st.Hits == 0 || st.Evictions+st.Dropped == 0 || opts.Engine.Stats().Reads == 0 {
				t.Fatalf("seed %d: the model did not exercise the cache: %+v", seed, st)
			}
		})
	}
}

// TestCacheNoFill: a bulk read (PrepareReadNoFill, as for every chunk of a large value) takes a
// cached copy but never adds what it reads from disk.
func TestCacheNoFill(t *testing.T) {
	c := newTestCache(t, 4<<20)
	opts := testOpts(vfs.NewMem(), "/d")
	opts.Cache = c
	l, _ := collect(t, opts)
	defer l.Close()
	a, _, _ := l.Append(Header{Kind: KindSub, Version: 1}, []byte("k"), []byte("first"))
	b, _, _ := l.Append(Header{Kind: KindSub, Version: 1}, []byte("k"), []byte("second"))
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	n := int(RecordSize(0, 1, 5))
	read := func(loc Loc, n int, fill bool) string {
		t.Helper()
		var r Read
		prep := l.PrepareReadNoFill
		if fill {
			prep = l.PrepareRead
		}
		if err := prep(&r, loc, n); err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		Submit(opts.Engine, []*Read{&r})
		v, err := decodeVal(r.Data)
		if r.Err != nil || err != nil {
			t.Fatalf("read: %v %v", r.Err, err)
		}
		return string(v)
	}
	if v := read(a, n, false); v != "first" || c.Stats().Entries != 0 {
		t.Fatalf("a bulk read returned %q and left %d entries cached", v, c.Stats().Entries)
	}
	read(b, n+1, true) // an ordinary read fills
	reads := opts.Engine.Stats().Reads
	if v := read(b, n+1, false); v != "second" || opts.Engine.Stats().Reads != reads || c.Stats().Hits != 1 {
		t.Fatalf("a bulk read of a cached record: %q, engine reads %d -> %d, %+v", v, reads, opts.Engine.Stats().Reads, c.Stats())
	}
}
