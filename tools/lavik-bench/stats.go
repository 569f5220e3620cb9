package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds with 3 significant digits (0.1% resolution) from 1 ns to
// 100 s; a slower reply is recorded as 100 s. One histogram of that range is about 230 KB, so
// connections do not own one each (1,280 connections would need 600 MB): each connection
// buffers a few hundred samples and adds them to one of a few shared shards under a lock. The
// shards are merged when the run ends.
const (
	histLowest  = 1
	histHighest = 100_000_000_000
	histSigFigs = 3
	sampleBuf   = 256
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histSigFigs)
}

// mergeHists returns a new histogram holding the samples of all hs.
func mergeHists(hs ...*hdrhistogram.Histogram) *hdrhistogram.Histogram {
	out := newHist()
	for _, h := range hs {
		if h != nil {
			out.Merge(h)
		}
	}
	return out
}

// opKind is one operation type of a workload; each has its own histogram and error counters.
type opKind int

const (
	opGet opKind = iota
	opSet
	opHGetAll
	opUpdate
	numOps
)

var opNames = [numOps]string{"get", "set", "hgetall", "update"}

func (o opKind) String() string { return opNames[o] }

// errKind classifies errors. Every kind makes a run fail.
type errKind int

const (
	errIO          errKind = iota // connection refused, reset, timed out
	errProto                      // a reply the generator cannot parse or did not expect
	errReply                      // the server answered with an error (other than unknown command)
	errUnsupported                // the server does not know the command
	errMissing                    // nil for a key that was loaded
	errWrong                      // a value that is not one the server may return
	numErrKinds
)

var errNames = [numErrKinds]string{"io", "protocol", "error-reply", "unsupported", "missing", "wrong-value"}

// ErrorCounts counts errors by kind.
type ErrorCounts [numErrKinds]int64

func (e *ErrorCounts) add(o ErrorCounts) {
	for i := range e {
		e[i] += o[i]
	}
}

// Total is the number of errors of all kinds.
func (e ErrorCounts) Total() int64 {
	var t int64
	for _, n := range e {
		t += n
	}
	return t
}

// String lists the non-zero counts: "3 wrong-value, 1 io".
func (e ErrorCounts) String() string {
	var parts []string
	for i, n := range e {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, errNames[i]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// MarshalJSON writes the counts as an object keyed by kind name.
func (e ErrorCounts) MarshalJSON() ([]byte, error) {
	m := make(map[string]int64, numErrKinds)
	for i, n := range e {
		m[errNames[i]] = n
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes; unknown kinds are ignored.
func (e *ErrorCounts) UnmarshalJSON(b []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for i, name := range errNames {
		e[i] = m[name]
	}
	return nil
}

// recorder collects the samples and errors of one run from all connections.
type recorder struct {
	shards []recShard

	mu        sync.Mutex
	done      [numOps]int64 // operations answered inside the window
	errors    [numOps]ErrorCounts
	samples   []string // first few error descriptions
	checked   int64    // replies checked for key, version and length
	verified  int64    // replies compared byte for byte
	unsupport string   // the first command a server rejected as unknown
}

type recShard struct {
	mu    sync.Mutex
	hists [numOps]*hdrhistogram.Histogram
	sums  [numOps]int64 // exact sum of latencies in ns, for the mean
	_     [64]byte
}

const maxErrorSamples = 5

func newRecorder(shards int) *recorder {
	r := &recorder{shards: make([]recShard, max(shards, 1))}
	for i := range r.shards {
		for o := range r.shards[i].hists {
			r.shards[i].hists[o] = newHist()
		}
	}
	return r
}

// connRecorder is one connection's buffer in front of a recorder; not safe for concurrent use.
type connRecorder struct {
	r        *recorder
	shard    *recShard
	buf      [numOps][]int64
	done     [numOps]int64
	errs     [numOps]ErrorCounts
	checked  int64
	verified int64
}

func (r *recorder) forConn(id int) *connRecorder {
	c := &connRecorder{r: r, shard: &r.shards[id%len(r.shards)]}
	for o := range c.buf {
		c.buf[o] = make([]int64, 0, sampleBuf)
	}
	return c
}

// complete counts one operation answered inside the window (the throughput).
func (c *connRecorder) complete(op opKind) { c.done[op]++ }

// record adds one latency sample in ns.
func (c *connRecorder) record(op opKind, ns int64) {
	c.buf[op] = append(c.buf[op], ns)
	if len(c.buf[op]) == cap(c.buf[op]) {
		c.flushOp(op)
	}
}

func (c *connRecorder) flushOp(op opKind) {
	if len(c.buf[op]) == 0 {
		return
	}
	s := c.shard
	s.mu.Lock()
	for _, ns := range c.buf[op] {
		s.sums[op] += ns
		_ = s.hists[op].RecordValue(min(max(ns, histLowest), histHighest))
	}
	s.mu.Unlock()
	c.buf[op] = c.buf[op][:0]
}

// fail counts one error; desc describes it for the summary (kept for the first few only).
func (c *connRecorder) fail(op opKind, kind errKind, desc string) {
	c.errs[op][kind]++
	if c.errs[op].Total() > maxErrorSamples && kind != errUnsupported {
		return
	}
	c.r.mu.Lock()
	if len(c.r.samples) < maxErrorSamples {
		c.r.samples = append(c.r.samples, fmt.Sprintf("%s: %s: %s", op, errNames[kind], desc))
	}
	if kind == errUnsupported && c.r.unsupport == "" {
		c.r.unsupport = desc
	}
	c.r.mu.Unlock()
}

// flush moves everything buffered into the recorder; call once when the connection is done.
func (c *connRecorder) flush() {
	for o := range c.buf {
		c.flushOp(opKind(o))
	}
	c.r.mu.Lock()
	for o := range c.errs {
		c.r.errors[o].add(c.errs[o])
		c.r.done[o] += c.done[o]
	}
	c.r.checked += c.checked
	c.r.verified += c.verified
	c.r.mu.Unlock()
	c.errs, c.done = [numOps]ErrorCounts{}, [numOps]int64{}
	c.checked, c.verified = 0, 0
}

// OpStats is the summary of one operation type (or of all, Op "total") over one window. Count
// and QPS are the operations answered inside the window; the latency figures are over the
// operations sent inside it (Samples), however late their replies came, so a stall at the end
// of the window shows in the tail instead of being cut off.
type OpStats struct {
	Op      string      `json:"op"`
	Count   int64       `json:"ops"`
	Samples int64       `json:"latency_samples"`
	QPS     float64     `json:"ops_per_sec"`
	AvgMs   float64     `json:"avg_ms"`
	P50Ms   float64     `json:"p50_ms"`
	P95Ms   float64     `json:"p95_ms"`
	P99Ms   float64     `json:"p99_ms"`
	P999Ms  float64     `json:"p99_9_ms"`
	MaxMs   float64     `json:"max_ms"`
	Errors  ErrorCounts `json:"errors"`

	hist  *hdrhistogram.Histogram
	sumNs int64
}

const nsPerMs = 1e6

// opStats summarises done operations and a histogram of latencies (with their exact sum) over a
// window of secs seconds.
func opStats(name string, done int64, h *hdrhistogram.Histogram, sumNs int64, secs float64, errs ErrorCounts) OpStats {
	s := OpStats{Op: name, Count: done, Samples: h.TotalCount(), Errors: errs, hist: h, sumNs: sumNs}
	if secs > 0 {
		s.QPS = float64(s.Count) / secs
	}
	if s.Samples > 0 {
		s.AvgMs = float64(sumNs) / float64(s.Samples) / nsPerMs
		s.P50Ms = float64(h.ValueAtQuantile(50)) / nsPerMs
		s.P95Ms = float64(h.ValueAtQuantile(95)) / nsPerMs
		s.P99Ms = float64(h.ValueAtQuantile(99)) / nsPerMs
		s.P999Ms = float64(h.ValueAtQuantile(99.9)) / nsPerMs
		s.MaxMs = float64(h.Max()) / nsPerMs
	}
	return s
}

// summarize merges the shards into per-operation statistics (only operations that ran or
// failed) and a total over all of them.
func (r *recorder) summarize(secs float64) (ops []OpStats, total OpStats) {
	var all []*hdrhistogram.Histogram
	var allSum, allDone int64
	var allErrs ErrorCounts
	for o := opKind(0); o < numOps; o++ {
		var hs []*hdrhistogram.Histogram
		var sum int64
		for i := range r.shards {
			hs = append(hs, r.shards[i].hists[o])
			sum += r.shards[i].sums[o]
		}
		h := mergeHists(hs...)
		if h.TotalCount() == 0 && r.done[o] == 0 && r.errors[o].Total() == 0 {
			continue
		}
		ops = append(ops, opStats(o.String(), r.done[o], h, sum, secs, r.errors[o]))
		all = append(all, h)
		allSum += sum
		allDone += r.done[o]
		allErrs.add(r.errors[o])
	}
	return ops, opStats("total", allDone, mergeHists(all...), allSum, secs, allErrs)
}

// median returns the median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
