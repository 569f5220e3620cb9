package observe

import (
	"math/bits"
	"sync/atomic"
)

// Hist is a latency histogram in microseconds for INFO latencystats: log-linear buckets with
// 8 sub-buckets per power of two (a quantile is off by at most 12.5%), updated with one atomic
// add. Rejected: an HDR histogram at Redis's precision (3 significant digits), which costs tens
// of KiB per command for a figure read by dashboards with two significant digits.
type Hist struct {
	counts [histBuckets]atomic.Uint64
	total  atomic.Uint64
}

const histBuckets = 16 + 60*8

func histIndex(v uint64) int {
	if v < 16 {
		return int(v)
	}
	e := bits.Len64(v) // >= 5
	sub := int(v>>(e-4)) - 8
	return 16 + (e-5)*8 + sub
}

// histUpper is the largest value of bucket i.
func histUpper(i int) uint64 {
	if i < 16 {
		return uint64(i)
	}
	i -= 16
	e := i/8 + 5
	sub := uint64(i%8) + 8
	return (sub+1)<<(e-4) - 1
}

// Record adds one sample of us microseconds.
func (h *Hist) Record(us uint64) {
	h.counts[histIndex(us)].Add(1)
	h.total.Add(1)
}

// Count is the number of samples.
func (h *Hist) Count() uint64 { return h.total.Load() }

// Quantile returns the upper bound of the bucket holding quantile q (0..1) of the samples, in
// microseconds; 0 with no samples.
func (h *Hist) Quantile(q float64) uint64 {
	total := h.total.Load()
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return histUpper(i)
		}
	}
	return histUpper(histBuckets - 1)
}

// Reset clears the histogram (CONFIG RESETSTAT).
func (h *Hist) Reset() {
	for i := range h.counts {
		h.counts[i].Store(0)
	}
	h.total.Store(0)
}

// EachPowerOfTwo calls fn with the cumulative count of the samples up to each power-of-two
// bound, as Redis's LATENCY HISTOGRAM reports its histograms (an HDR histogram iterated by
// powers of two from 1024 ns, each bound shown in whole microseconds: 1, 2, 4, 8, 16, 32, 65,
// 131, ...), for the bounds where the count grows, until every sample is counted. A sample
// counts under the first bound its bucket's upper end does not pass, so counts are as exact as
// the buckets (12.5%).
func (h *Hist) EachPowerOfTwo(fn func(boundUs, cumulative uint64)) {
	total := h.total.Load()
	var seen, prev uint64
	i := 0
	for k := 0; k < 64 && seen < total; k++ {
		bound := (uint64(1024) << k) / 1000 // the bound in whole microseconds
		for i < histBuckets && histUpper(i) <= bound {
			seen += h.counts[i].Load()
			i++
		}
		if i == histBuckets {
			seen = total
		}
		if seen > prev {
			fn(bound, seen)
			prev = seen
		}
	}
}
