package observe

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Redis's bounds on what one slow-log entry keeps of a command line.
const (
	slowlogMaxArgc   = 32
	slowlogMaxString = 128
)

// SlowEntry is one slow-log entry, as SLOWLOG GET reports it.
type SlowEntry struct {
	ID       int64
	Time     int64 // unix seconds
	Duration int64 // microseconds
	Args     []string
	Addr     string
	Name     string
}

// SlowLog is the slow log: the newest MaxLen commands that took at least Threshold
// microseconds, newest first.
type SlowLog struct {
	// threshold is slowlog-log-slower-than in microseconds; negative: off, 0: every command.
	threshold atomic.Int64
	maxLen    atomic.Int64

	mu      sync.Mutex
	nextID  int64
	entries []SlowEntry // newest first; len <= maxLen
}

// NewSlowLog returns a slow log with Redis's defaults (10000 us, 128 entries).
func NewSlowLog() *SlowLog {
	l := &SlowLog{}
	l.threshold.Store(10000)
	l.maxLen.Store(128)
	return l
}

// SetThreshold sets slowlog-log-slower-than (microseconds; negative turns the log off).
func (l *SlowLog) SetThreshold(us int64) { l.threshold.Store(us) }

// SetMaxLen sets slowlog-max-len, dropping the oldest entries beyond it.
func (l *SlowLog) SetMaxLen(n int64) {
	l.maxLen.Store(n)
	l.mu.Lock()
	if int64(len(l.entries)) > n {
		l.entries = l.entries[:n]
	}
	l.mu.Unlock()
}

// Slow reports whether a command that took d is to be logged.
func (l *SlowLog) Slow(d time.Duration) bool {
	t := l.threshold.Load()
	return t >= 0 && d.Microseconds() >= t
}

// Add logs a command line (args, redacted as the caller wants) that took d. Arguments are
// trimmed as Redis trims them: at most 32, the last standing for the rest ("... (N more
// arguments)"), and each at most 128 bytes ("... (N more bytes)").
func (l *SlowLog) Add(now time.Time, d time.Duration, args [][]byte, redact func(i int) bool, addr, name string) {
	argc := min(len(args), slowlogMaxArgc)
	kept := make([]string, argc)
	for j := 0; j < argc; j++ {
		switch {
		case argc != len(args) && j == argc-1:
			kept[j] = "... (" + strconv.Itoa(len(args)-argc+1) + " more arguments)"
		case redact != nil && redact(j):
			kept[j] = "(redacted)"
		case len(args[j]) > slowlogMaxString:
			kept[j] = string(args[j][:slowlogMaxString]) + "... (" + strconv.Itoa(len(args[j])-slowlogMaxString) + " more bytes)"
		default:
			kept[j] = string(args[j])
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	max := l.maxLen.Load()
	e := SlowEntry{ID: l.nextID, Time: now.Unix(), Duration: d.Microseconds(), Args: kept, Addr: addr, Name: name}
	l.nextID++
	if max <= 0 {
		return
	}
	if int64(len(l.entries)) >= max {
		l.entries = l.entries[:max-1]
	}
	l.entries = append(l.entries, SlowEntry{})
	copy(l.entries[1:], l.entries)
	l.entries[0] = e
}

// Get returns up to n of the newest entries (n < 0: all).
func (l *SlowLog) Get(n int) []SlowEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n > len(l.entries) {
		n = len(l.entries)
	}
	return append([]SlowEntry(nil), l.entries[:n]...)
}

// Len is the number of entries.
func (l *SlowLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Reset drops every entry (the ids go on).
func (l *SlowLog) Reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}
