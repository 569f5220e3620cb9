package main

import (
	"math"
	"slices"
	"time"
)

// Replication lag from offset samples. While the SET load runs, a sampler asks the primary for
// master_repl_offset and then the follower for slave_repl_offset, every --lag-sample (100 ms);
// each answer is stamped with the middle of its request. Two lags come out of the samples:
//
//   - in bytes: at each tick, the primary's offset minus the follower's at the same instant
//     (interpolated between the follower's samples around it; never below zero);
//   - in time: for each primary sample (t, P), when the follower's offset first reached P,
//     linearly interpolated between the two follower samples around that crossing, minus t.
//     This is the delay a write made at t waits before the follower has applied it, at the
//     sampling's resolution (a follower that applies within a tick reads as a few ms or 0).
//
// Whether the follower keeps up is read from the time lag's trend: the least-squares slope of
// time lag against sample time over the load. A follower slower than the primary falls behind
// by (1 - its rate / the primary's) seconds every second; one that keeps up has a slope near 0
// whatever its steady lag. Rejected: comparing the byte rates of the two halves of the window,
// which a follower that applies in bursts (Lavik ships bytes once they are durable, every
// second with appendfsync everysec) makes swing by a burst per half.

// keepUpSlope is the largest time-lag slope (seconds of lag gained per second of load) at which
// the follower is said to keep up: it falls behind by less than 50 ms per second.
const keepUpSlope = 0.05

// offsetSample is one tick of the sampler: the primary's offset and the follower's, each with
// the time (since the sampler started) its answer describes.
type offsetSample struct {
	TP time.Duration `json:"primary_t_ns"`
	P  int64         `json:"primary_offset"`
	TF time.Duration `json:"follower_t_ns"`
	F  int64         `json:"follower_offset"`
}

// LagStats summarizes the lag over the samples whose primary reading falls in the load window.
type LagStats struct {
	Samples    int     `json:"samples"`
	Unresolved int     `json:"unresolved"` // primary offsets the follower had not reached by the last sample
	BytesP50   float64 `json:"lag_bytes_p50"`
	BytesP99   float64 `json:"lag_bytes_p99"`
	BytesMax   float64 `json:"lag_bytes_max"`
	MsP50      float64 `json:"lag_ms_p50"`
	MsP99      float64 `json:"lag_ms_p99"`
	MsMax      float64 `json:"lag_ms_max"`
	// PrimaryBps and FollowerBps are the stream's growth on each side over the window: bytes of
	// master_repl_offset and of slave_repl_offset per second, from the first sample in the
	// window to the last.
	PrimaryBps  float64 `json:"primary_stream_bytes_per_sec"`
	FollowerBps float64 `json:"follower_applied_bytes_per_sec"`
	// Slope is the least-squares slope of the time lag against time (s/s).
	Slope   float64 `json:"time_lag_slope"`
	KeepsUp bool    `json:"keeps_up"`
}

// crossing returns when the follower's offset first reached off, interpolated between the
// follower samples around the crossing, and whether it did within the samples.
func crossing(s []offsetSample, off int64) (time.Duration, bool) {
	j, _ := slices.BinarySearchFunc(s, off, func(e offsetSample, t int64) int {
		switch {
		case e.F < t:
			return -1
		case e.F > t:
			return 1
		}
		return 0
	})
	// Offsets only grow, so BinarySearch finds the first sample at or past off. (A follower's
	// offset can go back only through a new full resync, which the window does not contain.)
	if j >= len(s) {
		return 0, false
	}
	if j == 0 || s[j].F == s[j-1].F {
		return s[j].TF, true
	}
	a, b := s[j-1], s[j]
	frac := float64(off-a.F) / float64(b.F-a.F)
	return a.TF + time.Duration(frac*float64(b.TF-a.TF)), true
}

// followerAt is the follower's offset at the time of primary reading i, interpolated between the
// follower samples around it (the follower is read just after the primary, so usually between
// sample i-1 and sample i).
func followerAt(s []offsetSample, i int) int64 {
	t := s[i].TP
	j := i
	for j > 0 && s[j-1].TF >= t {
		j--
	}
	for j < len(s)-1 && s[j].TF < t {
		j++
	}
	if j == 0 || s[j].TF < t || s[j].TF == s[j-1].TF {
		return s[j].F
	}
	a, b := s[j-1], s[j]
	frac := float64(t-a.TF) / float64(b.TF-a.TF)
	return a.F + int64(frac*float64(b.F-a.F))
}

// computeLag computes the lag figures from the samples, for primary readings in [from, to].
// Samples after to (the sampler runs on until the follower has caught up) resolve the crossings
// of the last primary offsets in the window.
func computeLag(s []offsetSample, from, to time.Duration) LagStats {
	var st LagStats
	var bytes, lags []float64
	var ts, ls []float64 // time lag against time, for the slope
	first, last := -1, -1
	for i, x := range s {
		if x.TP < from || x.TP > to {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		st.Samples++
		bytes = append(bytes, float64(max(0, x.P-followerAt(s, i))))
		t, ok := crossing(s, x.P)
		if !ok {
			st.Unresolved++
			continue
		}
		lag := max(0, t-x.TP).Seconds()
		lags = append(lags, lag*1e3)
		ts, ls = append(ts, x.TP.Seconds()), append(ls, lag)
	}
	if st.Samples == 0 {
		return st
	}
	st.BytesP50, st.BytesP99, st.BytesMax = quantile(bytes, 0.5), quantile(bytes, 0.99), quantile(bytes, 1)
	st.MsP50, st.MsP99, st.MsMax = quantile(lags, 0.5), quantile(lags, 0.99), quantile(lags, 1)
	if a, b := s[first], s[last]; b.TP > a.TP {
		st.PrimaryBps = float64(b.P-a.P) / (b.TP - a.TP).Seconds()
	}
	if a, b := s[first], s[last]; b.TF > a.TF {
		st.FollowerBps = float64(b.F-a.F) / (b.TF - a.TF).Seconds()
	}
	st.Slope = slope(ts, ls)
	st.KeepsUp = st.Unresolved == 0 && len(ls) >= 2 && st.Slope < keepUpSlope
	return st
}

// quantile returns the q-quantile of xs by nearest rank (q=1: the maximum); 0 for none. xs is
// sorted in place.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// slope is the least-squares slope of y against x; 0 with fewer than two distinct x.
func slope(x, y []float64) float64 {
	n := float64(len(x))
	if len(x) < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// overlap is how long the intervals [a0, a1] and [b0, b1] share.
func overlap(a0, a1, b0, b1 time.Time) time.Duration {
	lo, hi := a0, a1
	if b0.After(lo) {
		lo = b0
	}
	if b1.Before(hi) {
		hi = b1
	}
	if hi.Before(lo) {
		return 0
	}
	return hi.Sub(lo)
}
