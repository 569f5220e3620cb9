package keyspace

import (
	"cmp"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/gcpause"
	"github.com/lavikdb/lavik/pkg/schedpolicy"
)

// TestIndexMemory builds shard indexes of 16-byte keys the way the keyspace does (hash, shard
// by the hash's top bits, insert, fill in the entry; no log: values do not matter to the
// index) and fails if the index takes more than 48 bytes a key beyond the key's own bytes,
// counted from the off-heap allocator: everything it maps, used or not.
//
// By default it builds 200,000 keys and measures nothing else. For the full measurement set
//
//	LAVIK_INDEX_MEASURE=10000000 go test -run TestIndexMemory -v ./services/data/keyspace/
//
// which also reports the resident memory (from /proc/self/statm) and Go heap (runtime/metrics)
// the index added per key, then runs a mixed workload of lookups, inserts and deletes on the
// index for LAVIK_INDEX_MEASURE_SECONDS (default 5), with some per-request garbage and a
// forced collection every half second, and reports the GC pause percentiles from
// /sched/pauses/total/gc:seconds. LAVIK_INDEX_SHARDS sets the shard count (default 16).
func TestIndexMemory(t *testing.T) {
	n, measure := 200_000, false
	if raceEnabled {
		n = 50_000
	}
	if s := os.Getenv("LAVIK_INDEX_MEASURE"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("LAVIK_INDEX_MEASURE=%q: want a key count", s)
		}
		n, measure = v, true
	}
	nshards := envInt(t, "LAVIK_INDEX_SHARDS", 16)
	seconds := envInt(t, "LAVIK_INDEX_MEASURE_SECONDS", 5)
	if nshards <= 0 || nshards&(nshards-1) != 0 {
		t.Fatalf("LAVIK_INDEX_SHARDS=%d: want a power of two", nshards)
	}

	var before memSnapshot
	if measure {
		before = takeMemSnapshot()
	}
	off0 := offheapBytes.Load()
	mi := newMemIndex(t, nshards)
	start := time.Now()
	var peakRSS int64
	for id := 0; id < n; id++ {
		mi.put(id)
		if measure && id%(1<<16) == 0 {
			peakRSS = max(peakRSS, readRSS())
		}
	}
	buildTime := time.Since(start)

	// The structural figures, from the allocator.
	var slotB, entryB, accessB, arenaB, count, slots int64
	for i := range mi.shards {
		ix := mi.shards[i].ix
		slotB += int64(ix.slotMem.size())
		entryB += int64(ix.entryMem.size())
		accessB += int64(ix.accessMem.size())
		arenaB += ix.arena.bytes()
		count += int64(ix.count)
		slots += int64(len(ix.slots))
	}
	offheap := offheapBytes.Load() - off0
	if count != int64(n) || offheap != slotB+entryB+accessB+arenaB {
		t.Fatalf("%d keys indexed of %d; off-heap %d bytes, index arrays %d", count, n, offheap, slotB+entryB+accessB+arenaB)
	}
	perKey := func(b int64) float64 { return float64(b) / float64(n) }
	beyond := perKey(offheap) - 16
	t.Logf("%d keys of 16 bytes in %d shards, built in %v (%.0f ns a key)", n, nshards, buildTime.Round(time.Millisecond), float64(buildTime.Nanoseconds())/float64(n))
	t.Logf("off-heap index: %.2f bytes a key = slots %.2f (load %.3f) + entries %.2f + access words %.2f + key arena %.2f",
		perKey(offheap), perKey(slotB), float64(count)/float64(slots), perKey(entryB), perKey(accessB), perKey(arenaB))
	t.Logf("beyond the key's own 16 bytes: %.2f bytes a key (budget 48)", beyond)

	if measure {
		after := takeMemSnapshot()
		t.Logf("resident memory: +%d MiB, %.2f bytes a key (peak while building %.2f)",
			(after.rss-before.rss)>>20, perKey(after.rss-before.rss), perKey(max(peakRSS, after.rss)-before.rss))
		t.Logf("Go heap objects: %+d KiB, %.3f bytes a key (heap total %d KiB)",
			(after.heap-before.heap)>>10, perKey(after.heap-before.heap), after.heap>>10)
		mi.workload(t, n, time.Duration(seconds)*time.Second, before.rss)
	}
	if beyond > 48 {
		t.Errorf("index takes %.2f bytes a key beyond the key, over the 48-byte budget", beyond)
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

// memIndex is the keyspace's sharding and locking around bare indexes.
type memIndex struct {
	shards []memShard
	bits   int
}

type memShard struct {
	mu sync.RWMutex
	ix *index
}

func newMemIndex(t *testing.T, nshards int) *memIndex {
	mi := &memIndex{shards: make([]memShard, nshards), bits: bits.TrailingZeros(uint(nshards))}
	for i := range mi.shards {
		ix, err := newIndex()
		if err != nil {
			t.Fatal(err)
		}
		mi.shards[i].ix = ix
	}
	t.Cleanup(func() {
		for i := range mi.shards {
			mi.shards[i].ix.release()
		}
	})
	return mi
}

// memKey writes key number id as 16 bytes, "key:" and 12 digits, without allocating.
func memKey(buf *[16]byte, id int) []byte {
	copy(buf[:4], "key:")
	for i := 15; i >= 4; i-- {
		buf[i] = byte('0' + id%10)
		id /= 10
	}
	return buf[:]
}

func (mi *memIndex) count() int {
	n := 0
	for i := range mi.shards {
		mi.shards[i].mu.RLock()
		n += mi.shards[i].ix.count
		mi.shards[i].mu.RUnlock()
	}
	return n
}

func (mi *memIndex) locate(buf *[16]byte, id int) ([]byte, uint64, *memShard) {
	key := memKey(buf, id)
	h := hashKey(0, key)
	if mi.bits == 0 {
		return key, h, &mi.shards[0]
	}
	return key, h, &mi.shards[h>>(64-mi.bits)]
}

// put inserts or overwrites key id with a plausible entry: a 100-byte value in a 64 MiB
// segment.
func (mi *memIndex) put(id int) {
	var buf [16]byte
	key, h, s := mi.locate(&buf, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _, ok := s.ix.find(uint32(h), 0, key)
	var e *entry
	if ok {
		e = s.ix.entry(i)
	} else {
		var err error
		if _, e, err = s.ix.insert(uint32(h), 0, key); err != nil {
			panic(err)
		}
	}
	e.setMeta(0, TypeString, 0)
	e.seg, e.off, e.vlen = uint32(id>>19), uint32(id&(1<<19-1))*128, 100
}

func (mi *memIndex) get(id int) bool {
	var buf [16]byte
	key, h, s := mi.locate(&buf, id)
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, _, ok := s.ix.find(uint32(h), 0, key)
	return ok && s.ix.entry(i).vlen == 100
}

func (mi *memIndex) del(id int) bool {
	var buf [16]byte
	key, h, s := mi.locate(&buf, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, pos, ok := s.ix.find(uint32(h), 0, key)
	if ok {
		s.ix.remove(i, pos)
	}
	return ok
}

// workload runs lookups (80%), inserts of new keys (10%) and deletes (10%) on the index from
// LAVIK_INDEX_WORKERS goroutines (default GOMAXPROCS) for d, each operation allocating a
// request-sized buffer as a server would, with a forced GC every tenth of d, and reports the GC
// pauses of that time. Then it runs the same goroutines for d without touching the index, as a
// control: on a machine where other processes compete for the cores, stopping the world waits
// for descheduled threads, and the control shows how much of the pause that is. The process's
// threads run under the scheduling policy lavik-data uses by default (sched-policy batch), or
// LAVIK_SCHED_POLICY's: under normal, a thread restarting the world after a pause can lose its
// core to the thread it wakes, which the pause figures then include.
func (mi *memIndex) workload(t *testing.T, n int, d time.Duration, rssBase int64) {
	policy := cmp.Or(os.Getenv("LAVIK_SCHED_POLICY"), "batch")
	if err := schedpolicy.Apply(policy); err != nil {
		t.Fatal(err)
	}
	t.Logf("scheduling policy: %s", policy)
	workers := envInt(t, "LAVIK_INDEX_WORKERS", runtime.GOMAXPROCS(0))
	var next atomic.Int64
	next.Store(int64(n))
	var hits atomic.Int64
	r := runLoad(workers, d, func(rng *rand.Rand) {
		switch r := rng.IntN(100); {
		case r < 80:
			if mi.get(rng.IntN(int(next.Load()))) {
				hits.Add(1)
			}
		case r < 90:
			mi.put(int(next.Add(1) - 1))
		default:
			mi.del(rng.IntN(int(next.Load())))
		}
	})
	t.Logf("workload: %d goroutines, %.0f ops/s over %v (%.0f%% of lookups hit), peak resident %.2f bytes a key (%d keys at the end)",
		workers, float64(r.ops)/d.Seconds(), d, 100*float64(hits.Load())/(0.8*float64(r.ops)), float64(r.peakRSS-rssBase)/float64(n), mi.count())
	t.Logf("GC pauses with the index: %s", r.pauses())
	c := runLoad(workers, d, func(*rand.Rand) {})
	t.Logf("GC pauses of the control: %s", c.pauses())
}

type loadResult struct {
	ops     int64
	gc      gcpause.Snapshot // GC pauses and cycles during the run
	peakRSS int64
}

func (r loadResult) pauses() string {
	q := func(h *metrics.Float64Histogram, p float64) string { return fmtDur(gcpause.Quantile(h, p)) }
	t, st := r.gc.Total, r.gc.Stopping
	return fmt.Sprintf("%d cycles, %d pauses: p50 %s, p99 %s, p99.9 %s, max %s (stopping the world: p99 %s, max %s)",
		r.gc.Cycles, gcpause.Count(t), q(t, 0.5), q(t, 0.99), q(t, 0.999), q(t, 1), q(st, 0.99), q(st, 1))
}

// runLoad calls op in a loop on workers goroutines for d, allocating a request buffer per call,
// and forces a GC every d/10.
func runLoad(workers int, d time.Duration, op func(*rand.Rand)) loadResult {
	runtime.GC()
	base := gcpause.Read()
	var res loadResult
	var ops atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var ring [256][]byte // recent requests, so some garbage lives a while
			for n := int64(0); ; n++ {
				if n&1023 == 0 {
					select {
					case <-stop:
						ops.Add(n)
						return
					default:
					}
				}
				ring[n&255] = make([]byte, 64+rng.IntN(192))
				op(rng)
			}
		}()
	}
	tick := time.NewTicker(d / 10)
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		<-tick.C
		res.peakRSS = max(res.peakRSS, readRSS())
		runtime.GC()
	}
	tick.Stop()
	close(stop)
	wg.Wait()
	res.ops = ops.Load()
	res.gc = gcpause.Read().Since(base)
	return res
}

func fmtDur(sec float64) string { return time.Duration(sec * 1e9).String() }

type memSnapshot struct{ rss, heap int64 }

// takeMemSnapshot collects garbage, returns freed memory to the OS and reads the resident
// size and the Go heap's live objects.
func takeMemSnapshot() memSnapshot {
	runtime.GC()
	debug.FreeOSMemory()
	snap := memSnapshot{rss: readRSS()}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	snap.heap = int64(s[0].Value.Uint64())
	return snap
}

// readRSS returns the process's resident size from /proc/self/statm (0 where there is none).
func readRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// benchIndex is one shard's index of n 16-byte keys, built once per benchmark.
func benchIndex(b *testing.B, n int) *memIndex {
	b.Helper()
	mi := &memIndex{shards: make([]memShard, 1)}
	ix, err := newIndex()
	if err != nil {
		b.Fatal(err)
	}
	mi.shards[0].ix = ix
	b.Cleanup(ix.release)
	for id := 0; id < n; id++ {
		mi.put(id)
	}
	return mi
}

// BenchmarkIndexFind looks up present keys (hit) and absent ones (miss) in a shard of 1M keys,
// in random order, so most probes miss the CPU caches as they would in a large keyspace.
func BenchmarkIndexFind(b *testing.B) {
	const n = 1 << 20
	mi := benchIndex(b, n)
	ix := mi.shards[0].ix
	for _, c := range []struct {
		name string
		base int
	}{{"hit", 0}, {"miss", n}} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			var buf [16]byte
			found := 0
			for b.Loop() {
				key := memKey(&buf, c.base+rng.IntN(n))
				if _, _, ok := ix.find(uint32(hashKey(0, key)), 0, key); ok {
					found++
				}
			}
			if (found > 0) != (c.base == 0) {
				b.Fatalf("%s: %d found", c.name, found)
			}
		})
	}
}

// BenchmarkIndexInsert inserts new keys into a shard, growth included.
func BenchmarkIndexInsert(b *testing.B) {
	mi := benchIndex(b, 0)
	id := 0
	for b.Loop() {
		mi.put(id)
		id++
	}
}
