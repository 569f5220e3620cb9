package main

import (
	"encoding/json"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

type hdrHist = hdrhistogram.Histogram

func TestMergeHists(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	whole := newHist()
	parts := []*hdrHist{newHist(), newHist(), newHist()}
	for i := 0; i < 100_000; i++ {
		v := int64(r.ExpFloat64()*200_000) + 1000 // ns, a long tail
		_ = whole.RecordValue(v)
		_ = parts[i%len(parts)].RecordValue(v)
	}
	merged := mergeHists(parts...)
	if !merged.Equals(whole) {
		t.Fatal("merged histogram differs from the one that saw every sample")
	}
	for _, q := range []float64{50, 95, 99, 99.9, 100} {
		if a, b := merged.ValueAtQuantile(q), whole.ValueAtQuantile(q); a != b {
			t.Errorf("p%v: merged %d, whole %d", q, a, b)
		}
	}
	if merged.TotalCount() != 100_000 || merged.Max() != whole.Max() {
		t.Errorf("count %d max %d", merged.TotalCount(), merged.Max())
	}
	if mergeHists(nil, newHist()).TotalCount() != 0 {
		t.Error("merging empty histograms")
	}
}

// TestRecorderShards records from many connections at once (buffers, shards, flushes) and
// checks the merged summary against a single histogram of the same samples.
func TestRecorderShards(t *testing.T) {
	rec := newRecorder(3)
	whole := newHist()
	var sum int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := 0; c < 10; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cr := rec.forConn(c)
			r := rand.New(rand.NewPCG(uint64(c), 0))
			for i := 0; i < 1000+c*37; i++ { // not a multiple of the buffer size
				v := int64(r.IntN(5_000_000)) + 1
				op := opGet
				if i%3 == 0 {
					op = opSet
				}
				cr.record(op, v)
				cr.complete(op)
				mu.Lock()
				_ = whole.RecordValue(v)
				sum += v
				mu.Unlock()
			}
			cr.fail(opSet, errWrong, "x")
			cr.flush()
		}()
	}
	wg.Wait()
	ops, total := rec.summarize(2)
	if len(ops) != 2 || ops[0].Op != "get" || ops[1].Op != "set" {
		t.Fatalf("ops %+v", ops)
	}
	if total.Count != whole.TotalCount() || ops[0].Count+ops[1].Count != total.Count {
		t.Errorf("counts: total %d, whole %d, get %d set %d", total.Count, whole.TotalCount(), ops[0].Count, ops[1].Count)
	}
	if !total.hist.Equals(whole) {
		t.Error("merged shards differ from a single histogram of the same samples")
	}
	if want := float64(sum) / float64(whole.TotalCount()) / nsPerMs; total.AvgMs != want {
		t.Errorf("avg %v, want exact %v", total.AvgMs, want)
	}
	if total.QPS != float64(total.Count)/2 {
		t.Errorf("qps %v", total.QPS)
	}
	if total.Errors[errWrong] != 10 || ops[1].Errors[errWrong] != 10 || ops[0].Errors.Total() != 0 {
		t.Errorf("errors: total %v get %v set %v", total.Errors, ops[0].Errors, ops[1].Errors)
	}
	if len(rec.samples) == 0 || len(rec.samples) > maxErrorSamples {
		t.Errorf("samples %q", rec.samples)
	}
}

func TestRecordClampsOutOfRange(t *testing.T) {
	rec := newRecorder(1)
	cr := rec.forConn(0)
	cr.record(opGet, 0)
	cr.record(opGet, 3*histHighest)
	cr.flush()
	_, total := rec.summarize(1)
	if total.Samples != 2 || total.Count != 0 || total.MaxMs < float64(histHighest)/nsPerMs*0.99 {
		t.Errorf("count %d max %v", total.Count, total.MaxMs)
	}
}

func TestErrorCounts(t *testing.T) {
	var e ErrorCounts
	if e.String() != "none" || e.Total() != 0 {
		t.Error(e.String())
	}
	e[errWrong], e[errIO] = 3, 1
	if e.String() != "1 io, 3 wrong-value" || e.Total() != 4 {
		t.Error(e.String())
	}
	b, _ := json.Marshal(e)
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil || m["wrong-value"] != 3 || m["missing"] != 0 {
		t.Errorf("%s %v", b, err)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{4, 2}, 3}, {[]float64{5, 1, 3}, 3}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v", c.in, got)
		}
	}
}

func TestVerdictExitCodes(t *testing.T) {
	var v verdict
	if v.exitCode() != exitOK {
		t.Error("empty verdict")
	}
	v.unsupported = []string{"HSET"}
	if v.exitCode() != exitUnsupported {
		t.Error("unsupported")
	}
	v.errors[errMissing] = 1
	if v.exitCode() != exitErrors {
		t.Error("errors")
	}
	v = verdict{problems: []string{"restart"}}
	if v.exitCode() != exitErrors {
		t.Error("problems")
	}
}
