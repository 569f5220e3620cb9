package gcpause

import (
	"math"
	"runtime"
	"runtime/metrics"
	"testing"
)

func TestQuantile(t *testing.T) {
	h := &metrics.Float64Histogram{
		Buckets: []float64{math.Inf(-1), 0, 10e-6, 100e-6, 1e-3, math.Inf(1)},
		Counts:  []uint64{0, 90, 9, 1, 0},
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 10e-6}, {0.9, 10e-6}, {0.91, 100e-6}, {0.99, 100e-6}, {1, 1e-3}} {
		if got := Quantile(h, c.q); got != c.want {
			t.Errorf("quantile %v = %v, want %v", c.q, got, c.want)
		}
	}
	h.Counts = []uint64{0, 0, 0, 0, 3} // only the open-ended bucket: its lower bound
	if got := Quantile(h, 0.99); got != 1e-3 {
		t.Errorf("open bucket: %v, want 1e-3", got)
	}
	if got := Quantile(&metrics.Float64Histogram{Buckets: h.Buckets, Counts: make([]uint64, 5)}, 0.99); got != 0 {
		t.Errorf("empty histogram: %v, want 0", got)
	}
	if got := Quantile(nil, 0.5); got != 0 {
		t.Errorf("nil histogram: %v, want 0", got)
	}
}

func TestSince(t *testing.T) {
	base := Read()
	runtime.GC()
	d := Read().Since(base)
	if d.Cycles < 1 || Count(d.Total) < 2 || Count(d.Stopping) < 2 || Quantile(d.Total, 1) <= 0 {
		t.Fatalf("one GC: %d cycles, %d pauses (%d stopping), max %v; want its two pauses",
			d.Cycles, Count(d.Total), Count(d.Stopping), Quantile(d.Total, 1))
	}
}
