package commands

import (
	"math"
	"runtime"
	"runtime/metrics"
	"testing"
)

func TestHistQuantileUs(t *testing.T) {
	h := &metrics.Float64Histogram{
		Buckets: []float64{math.Inf(-1), 0, 10e-6, 100e-6, 1e-3, math.Inf(1)},
		Counts:  []uint64{0, 90, 9, 1, 0},
	}
	for _, c := range []struct {
		q    float64
		want int64
	}{{0.5, 10}, {0.9, 10}, {0.91, 100}, {0.99, 100}, {1, 1000}} {
		if got := histQuantileUs(h, c.q); got != c.want {
			t.Errorf("quantile %v = %d us, want %d", c.q, got, c.want)
		}
	}
	h.Counts = []uint64{0, 0, 0, 0, 3} // only the open-ended bucket: its lower bound
	if got := histQuantileUs(h, 0.99); got != 1000 {
		t.Errorf("open bucket: %d us, want 1000", got)
	}
	if got := histQuantileUs(&metrics.Float64Histogram{Buckets: h.Buckets, Counts: make([]uint64, 5)}, 0.99); got != 0 {
		t.Errorf("empty histogram: %d, want 0", got)
	}
}

func TestGCPausesResetByResetstat(t *testing.T) {
	runtime.GC()
	if p := gcPauses(); p.count < 2 || p.max <= 0 {
		t.Fatalf("after a GC: %+v, want at least its two pauses", p)
	}
	resetGCPauses()
	if p := gcPauses(); p.count != 0 {
		t.Fatalf("after a reset: %d pauses, want 0", p.count)
	}
	runtime.GC()
	if p := gcPauses(); p.count < 2 || p.p99 <= 0 || p.stopP99 <= 0 {
		t.Fatalf("one GC after a reset: %+v, want its two pauses", p)
	}
}
