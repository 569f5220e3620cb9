package observe

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// LatencyHistoryLen is how many samples the latency monitor keeps per event, as Redis.
const LatencyHistoryLen = 160

// LatencySample is one second's worst latency of an event.
type LatencySample struct {
	Time    int64 // unix seconds
	Latency int64 // milliseconds
}

// LatencyEvent is one event's history and extremes.
type LatencyEvent struct {
	Name    string
	Samples []LatencySample // oldest first
	Max     int64
	MaxTime int64
	// sum and count of the samples ever added, for LATENCY DOCTOR's average.
	Sum, Count int64
}

// Latest is the newest sample.
func (e *LatencyEvent) Latest() LatencySample { return e.Samples[len(e.Samples)-1] }

// Latency is the latency monitor: events that took at least the threshold (milliseconds;
// latency-monitor-threshold, 0 off), each with its last 160 samples, one per second at most
// (a second's worst).
type Latency struct {
	threshold atomic.Int64
	mu        sync.Mutex
	events    map[string]*LatencyEvent
}

// NewLatency returns a latency monitor, off.
func NewLatency() *Latency { return &Latency{events: map[string]*LatencyEvent{}} }

// SetThreshold sets latency-monitor-threshold in milliseconds (0: off).
func (l *Latency) SetThreshold(ms int64) { l.threshold.Store(ms) }

// On reports whether the monitor is on (a threshold is set), so that a caller measures only then.
func (l *Latency) On() bool { return l.threshold.Load() > 0 }

// Note records event if it took at least the threshold (the monitor is on).
func (l *Latency) Note(event string, d time.Duration) {
	t := l.threshold.Load()
	if t <= 0 || d.Milliseconds() < t {
		return
	}
	l.Add(event, time.Now(), d.Milliseconds())
}

// Add records a sample of event at now, whatever the threshold.
func (l *Latency) Add(event string, now time.Time, ms int64) {
	sec := now.Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.events[event]
	if e == nil {
		e = &LatencyEvent{Name: event}
		l.events[event] = e
	}
	e.Sum += ms
	e.Count++
	if ms > e.Max {
		e.Max, e.MaxTime = ms, sec
	}
	// One sample per second: the second's worst.
	if n := len(e.Samples); n > 0 && e.Samples[n-1].Time == sec {
		if ms > e.Samples[n-1].Latency {
			e.Samples[n-1].Latency = ms
		}
		return
	}
	if len(e.Samples) == LatencyHistoryLen {
		copy(e.Samples, e.Samples[1:])
		e.Samples = e.Samples[:LatencyHistoryLen-1]
	}
	e.Samples = append(e.Samples, LatencySample{Time: sec, Latency: ms})
}

// Events returns a copy of every event, sorted by name.
func (l *Latency) Events() []LatencyEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LatencyEvent, 0, len(l.events))
	for _, e := range l.events {
		c := *e
		c.Samples = append([]LatencySample(nil), e.Samples...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Event returns a copy of one event's history (false if it has none).
func (l *Latency) Event(name string) (LatencyEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.events[name]
	if e == nil {
		return LatencyEvent{}, false
	}
	c := *e
	c.Samples = append([]LatencySample(nil), e.Samples...)
	return c, true
}

// Reset drops the named events' histories (all of them when names is empty) and returns how
// many it dropped.
func (l *Latency) Reset(names ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(names) == 0 {
		n := len(l.events)
		l.events = map[string]*LatencyEvent{}
		return n
	}
	n := 0
	for _, name := range names {
		if _, ok := l.events[name]; ok {
			delete(l.events, name)
			n++
		}
	}
	return n
}
