// Package gcpause reads the Go runtime's garbage-collector pause histograms (runtime/metrics)
// and their quantiles: what lavik-data reports in INFO and what the index memory test measures.
//
// A pause runs from deciding to stop the world until the thread that restarts it reads the
// clock. On a machine with more runnable threads than cores that thread may be descheduled right
// after it wakes the others, so a pause can read milliseconds while the world ran again after
// microseconds (an execution trace shows it). The stopping part (waiting for every running
// goroutine to stop) is not inflated that way.
package gcpause

import (
	"math"
	"runtime/metrics"
	"slices"
)

// Snapshot is the pause histograms and the GC cycle count at one moment, or, from Since, over
// an interval. A histogram the runtime does not provide is nil.
type Snapshot struct {
	Total    *metrics.Float64Histogram // /sched/pauses/total/gc, in seconds
	Stopping *metrics.Float64Histogram // /sched/pauses/stopping/gc, in seconds
	Cycles   uint64                    // /gc/cycles/total
}

// Read takes a snapshot; its histograms are copies the caller owns.
func Read() Snapshot {
	s := []metrics.Sample{
		{Name: "/sched/pauses/total/gc:seconds"},
		{Name: "/sched/pauses/stopping/gc:seconds"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}
	metrics.Read(s)
	hist := func(v metrics.Value) *metrics.Float64Histogram {
		if v.Kind() != metrics.KindFloat64Histogram {
			return nil
		}
		h := v.Float64Histogram()
		return &metrics.Float64Histogram{Counts: slices.Clone(h.Counts), Buckets: h.Buckets}
	}
	snap := Snapshot{Total: hist(s[0].Value), Stopping: hist(s[1].Value)}
	if s[2].Value.Kind() == metrics.KindUint64 {
		snap.Cycles = s[2].Value.Uint64()
	}
	return snap
}

// Since returns what happened between base (an earlier snapshot) and s.
func (s Snapshot) Since(base Snapshot) Snapshot {
	sub := func(h, b *metrics.Float64Histogram) *metrics.Float64Histogram {
		if h == nil || b == nil || len(b.Counts) != len(h.Counts) {
			return h
		}
		d := &metrics.Float64Histogram{Counts: slices.Clone(h.Counts), Buckets: h.Buckets}
		for i, c := range b.Counts {
			d.Counts[i] -= c
		}
		return d
	}
	return Snapshot{Total: sub(s.Total, base.Total), Stopping: sub(s.Stopping, base.Stopping), Cycles: s.Cycles - base.Cycles}
}

// Count is the number of samples in h (0 for nil).
func Count(h *metrics.Float64Histogram) uint64 {
	var n uint64
	if h != nil {
		for _, c := range h.Counts {
			n += c
		}
	}
	return n
}

// Quantile returns the upper bound of the bucket holding quantile q of h (its lower bound for
// the open-ended last bucket), or 0 when h is nil or empty.
func Quantile(h *metrics.Float64Histogram, q float64) float64 {
	n := Count(h)
	if n == 0 {
		return 0
	}
	want := max(uint64(math.Ceil(q*float64(n))), 1)
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen >= want {
			if hi := h.Buckets[i+1]; !math.IsInf(hi, 1) {
				return hi
			}
			return h.Buckets[i]
		}
	}
	return h.Buckets[len(h.Buckets)-1]
}
