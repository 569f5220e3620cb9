package keyspace

import "time"

// Active expiry. Every tick (10 per second) each shard sweeps the next expireBatch entries of
// its entry array from a cursor, removing expired keys; if more than a quarter of the keys with
// a TTL it saw had expired, it sweeps another batch, up to expireBudget per shard per tick, so
// a burst of expirations is cleared quickly without stalling writers. Lazy expiry on access
// guarantees correctness; this cycle only bounds the memory expired keys hold.
//
// Rejected: Redis's random sampling of the volatile-key dictionary, which needs a second
// per-key structure (the "expires" dict) that the 48-byte budget has no room for.
const (
	expireTick   = 100 * time.Millisecond
	expireBatch  = 1024
	expireBudget = time.Millisecond
)

func (ks *Keyspace) expireLoop() {
	ks.every(expireTick, nil, func() bool {
		for _, s := range ks.shards {
			ks.expireShard(s)
		}
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

// expireBatchOf sweeps one batch; it returns how many keys with a TTL it saw and removed.
func (ks *Keyspace) expireBatchOf(s *shard) (seen, removed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := ks.opts.Now()
	var ttlSum int64
	for n := 0; n < expireBatch && s.ix.high > 0; n++ {
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
			ttlSum += e.expireAt - now
			continue
		}
		s.removeLocked(i, s.ix.slotOf(i))
		removed++
	}
	if live := seen - removed; live > 0 {
		// Exponential moving average of the remaining TTL, for INFO keyspace avg_ttl.
		avg := ttlSum / int64(live)
		old := s.avgTTLMs.Load()
		if old == 0 {
			s.avgTTLMs.Store(avg)
		} else {
			s.avgTTLMs.Store((old*3 + avg) / 4)
		}
	}
	ks.stats.expired.Add(uint64(removed))
	return seen, removed
}
