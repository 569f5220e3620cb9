package keyspace

import (
	"math"
	"math/rand/v2"
	"time"
)

// Active expiry. Every tick (10 per second) each shard sweeps the next expireBatch entries of
// its entry array from a cursor, removing expired keys; if more than a quarter of the keys with
// a TTL it saw had expired, it sweeps another batch, up to expireBudget per shard per tick, so
// a burst of expirations is cleared quickly without stalling writers. Lazy expiry on access
// guarantees correctness; this cycle only bounds the memory expired keys hold.
//
// Rejected: Redis's random sampling of the volatile-key dictionary, which needs a second
// per-key structure (the "expires" dict) that the 48-byte budget has no room for.
//
// INFO keyspace's avg_ttl is, as in Redis, an estimate of the mean remaining TTL of a database's
// keys that have one, from samples, and 0 when the database has none. Redis keeps a moving
// average of the samples its expire cycle takes from the volatile-key dictionary, so it follows
// changes within seconds. A sweep here can take minutes to come round to a key just given a
// TTL, and keeps one average per shard over all its databases, so INFO takes its own sample
// instead (sampleTTLsLocked: avgTTLProbes entries spread over the shards, each shard's a run
// of consecutive entries from a random place) and falls back on the shard's moving average of
// what the sweep saw (avgTTLMs) only for a database none of whose keys with a TTL was in the
// sample, which happens when they are a tiny share of the entries. Each shard's estimate is
// weighted by its count of the database's keys with a TTL.
//
// Rejected: an exact average from a per-database sum of expire times kept on every write; it
// costs every write with a TTL for a field that is an estimate in Redis too.
const (
	expireTick   = 100 * time.Millisecond
	expireBatch  = 1024
	expireBudget = time.Millisecond

	// avgTTLProbes is how many entries INFO looks at, over all shards, to estimate avg_ttl;
	// every shard gets at least avgTTLMinProbes. Too low: a noisy estimate; too high: INFO
	// holds each shard's read lock longer.
	avgTTLProbes    = 8192
	avgTTLMinProbes = 32
)

func (ks *Keyspace) expireLoop() {
	ks.every(expireTick, nil, func() bool {
		start := ks.latencyStart()
		for _, s := range ks.shards {
			ks.expireShard(s)
		}
		ks.latencyEnd("expire-cycle", start)
		return true
	})
}

// expireShard runs one tick of active expiry on s and returns the keys it removed.
func (ks *Keyspace) expireShard(s *shard) int {
	start := time.Now()
	removed := 0
	for {
		seen, gone := ks.expireBatchOf(s)
		removed += gone
		if seen == 0 || gone*4 <= seen || time.Since(start) > expireBudget {
			return removed
		}
	}
}

// expireBatchOf sweeps one batch of at most expireBatch entries, each entry at most once; it
// returns how many keys with a TTL it saw and removed.
func (ks *Keyspace) expireBatchOf(s *shard) (seen, removed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := ks.opts.Now()
	var ttlSum float64 // a float: a few TTLs near the largest time overflow an int64
	for n := min(expireBatch, int(s.ix.high)); n > 0; n-- {
		if s.expPos >= s.ix.high {
			s.expPos = 0
		}
		i := s.expPos
		s.expPos++
		e := s.ix.entry(i)
		if !e.live() || e.expireAt == 0 {
			continue
		}
		seen++
		if e.expireAt > now {
			ttlSum += float64(e.expireAt - now)
			continue
		}
		if ks.follower.Load() {
			continue // the primary's DEL removes it
		}
		ks.expiredLocked(s, e.db(), s.ix.key(e), now)
		s.removeLocked(i, s.ix.slotOf(i))
		removed++
	}
	s.noteTTLsLocked(seen-removed, ttlSum)
	ks.stats.expired.Add(uint64(removed))
	return seen, removed
}

// noteTTLsLocked folds a sweep's sample (live keys with a TTL, and the sum of their remaining
// TTLs in ms) into the shard's moving average avgTTLMs, the fallback of INFO's avg_ttl. A sample
// of the whole shard replaces the average; a smaller one weighs its share of the shard's keys
// with a TTL, so that the average follows one full sweep. With no key with a TTL left the
// average is 0, as Redis resets a database's. The caller holds s.mu.
func (s *shard) noteTTLsLocked(live int, ttlSum float64) {
	var total int64
	for _, n := range s.expires {
		total += n
	}
	if total == 0 {
		s.avgTTLMs.Store(0)
		return
	}
	if live == 0 {
		return
	}
	avg := ttlSum / float64(live)
	old := float64(s.avgTTLMs.Load())
	w := 1.0
	if old > 0 {
		w = min(1, float64(live)/float64(total))
	}
	s.avgTTLMs.Store(msOf(old + (avg-old)*w))
}

// ttlSample is the sum and count of remaining TTLs (ms) INFO's sample found in one database.
type ttlSample struct {
	sum float64
	n   int64
}

// sampleTTLsLocked looks at up to probes entries of s from a random place and adds the remaining
// TTL of every live key with one to its database's sample. The caller holds s.mu (read).
func (s *shard) sampleTTLsLocked(now int64, probes int, out []ttlSample) {
	high := int(s.ix.high)
	if high == 0 {
		return
	}
	i := rand.IntN(high)
	for n := min(probes, high); n > 0; n-- {
		e := s.ix.entry(uint32(i))
		if e.live() && e.expireAt > now {
			out[e.db()].sum += float64(e.expireAt - now)
			out[e.db()].n++
		}
		if i++; i == high {
			i = 0
		}
	}
}

// avgTTLEstimate gathers INFO's avg_ttl estimate (see the top of this file) one shard at a time.
type avgTTLEstimate struct {
	now    int64
	probes int
	sample []ttlSample // one shard's, reused
	// sum and weight are, per database, the shards' estimates weighted by their count of the
	// database's keys with a TTL, and the sum of those counts.
	sum, weight []float64
}

func (ks *Keyspace) newAvgTTLEstimate() *avgTTLEstimate {
	dbs := ks.opts.Databases
	return &avgTTLEstimate{
		now:    ks.opts.Now(),
		probes: max(avgTTLMinProbes, avgTTLProbes/len(ks.shards)),
		sample: make([]ttlSample, dbs),
		sum:    make([]float64, dbs),
		weight: make([]float64, dbs),
	}
}

// addLocked adds shard s's estimates. The caller holds s.mu (read).
func (a *avgTTLEstimate) addLocked(s *shard) {
	var total int64
	for _, n := range s.expires {
		total += n
	}
	if total == 0 {
		return
	}
	clear(a.sample)
	s.sampleTTLsLocked(a.now, a.probes, a.sample)
	for db, smp := range a.sample {
		n := s.expires[db]
		if n == 0 {
			continue
		}
		var est float64
		if smp.n > 0 {
			est = smp.sum / float64(smp.n)
		} else if avg := s.avgTTLMs.Load(); avg > 0 {
			est = float64(avg)
		} else {
			continue // neither sample nor sweep has seen one of them yet
		}
		a.sum[db] += est * float64(n)
		a.weight[db] += float64(n)
	}
}

// avg returns the estimate for db, 0 when no shard had one.
func (a *avgTTLEstimate) avg(db int) int64 {
	if a.weight[db] == 0 {
		return 0
	}
	return msOf(a.sum[db] / a.weight[db])
}

// msOf converts a non-negative float of milliseconds to int64, saturating at the largest value
// (a float64 rounds math.MaxInt64 up to 2^63, which does not convert).
func msOf(f float64) int64 {
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(f)
}
