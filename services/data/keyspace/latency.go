package keyspace

import "time"

// The latency monitor's events of the keyspace's own slow points (LATENCY LATEST, HISTORY,
// GRAPH, DOCTOR), named as Redis names its nearest ones:
//
//   - "expire-cycle": one tick of active expiry over every shard (Redis's own name).
//   - "vlog-fsync": one background round of the value logs' syncs (appendfsync everysec), the
//     analogue of Redis's "aof-fsync-always"/"aof-write" for the append-only file.
//   - "vlog-fsync-always": the syncs a reply waits for under appendfsync always.
//   - "checkpoint": writing one shard's index checkpoint (Redis's nearest is "rdb-unlink-temp-file"
//     and the fork of a BGSAVE).
//   - "reclaim-cycle": one round of the collector, which holds a shard's lock while it moves
//     index entries.
//
// Measuring costs nothing while the monitor is off (latency-monitor-threshold 0): the clock is
// read only when the sink says it is on.

// LatencySink receives the keyspace's latency events; observe.Latency is one.
type LatencySink interface {
	// On reports whether events are being recorded (a threshold is set).
	On() bool
	// Note records event if d reaches the threshold.
	Note(event string, d time.Duration)
}

// SetLatency makes the keyspace report its slow points to l (nil: to no one).
func (ks *Keyspace) SetLatency(l LatencySink) {
	if l == nil {
		ks.latency.Store(nil)
		return
	}
	ks.latency.Store(&l)
}

// latencyStart returns the time a measured section starts, or the zero time if the monitor is
// off.
func (ks *Keyspace) latencyStart() time.Time {
	if l := ks.latency.Load(); l != nil && (*l).On() {
		return time.Now()
	}
	return time.Time{}
}

// latencyEnd notes event as having taken since start (a no-op for the zero start).
func (ks *Keyspace) latencyEnd(event string, start time.Time) {
	if start.IsZero() {
		return
	}
	if l := ks.latency.Load(); l != nil {
		(*l).Note(event, time.Since(start))
	}
}
