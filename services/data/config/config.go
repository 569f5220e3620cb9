// Package config holds lavik-data's settings: their defaults, validation, parsing from a
// Redis-style config file and command line, and the registry CONFIG GET/SET works on.
//
// Names follow Redis where Redis has the setting (port, bind, dir, requirepass, appendfsync,
// maxclients, databases, proto-max-bulk-len, ...), so existing tooling and muscle memory work;
// Lavik's own settings (shards, io-engine, segment-size, ...) use the same style. Each setting's
// doc says what happens when it is too low or too high.
package config

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Config is a snapshot-able set of settings. Get/Set are safe for concurrent use; the server
// reads hot values (limits, password) through the typed accessors.
type Config struct {
	mu     sync.RWMutex
	values map[string]string
	// onChange is called (outside the lock) after a successful Set of a mutable setting.
	onChange func(name, value string)
}

// Param describes one setting.
type Param struct {
	Name    string
	Default string
	// Mutable settings can be changed with CONFIG SET at run time.
	Mutable bool
	// ReadOnly settings exist so tools that query them get an answer (e.g. "save"), but the
	// only value accepted is the fixed one.
	Fixed bool
	Check func(v string) (string, error) // returns the normalised value
	// Merge, when set, combines a checked value with the current one: a setting of several
	// parts (client-output-buffer-limit) changes only the parts given.
	Merge func(old, v string) string
	// Show, when set, is the form CONFIG GET shows of a value where it differs from the value
	// kept (notify-keyspace-events: Redis's display drops n next to A, the setting keeps it).
	Show func(v string) string
	Doc  string
}

// Params lists every setting, in the order --help prints them.
var Params = []*Param{
	{Name: "port", Default: "6379", Check: intRange(0, 65535),
		Doc: "TCP port for RESP clients (0 picks a free port and logs it)"},
	{Name: "bind", Default: "127.0.0.1", Check: nonEmpty,
		Doc: "address to listen on; 0.0.0.0 for every interface (there is no protected mode: set requirepass)"},
	{Name: "dir", Default: "./data", Check: nonEmpty,
		Doc: "data directory holding the value log (one sub-directory per shard)"},
	{Name: "requirepass", Default: "", Mutable: true, Check: anyValue,
		Doc: "password clients must give with AUTH or HELLO; empty means no authentication"},
	{Name: "appendfsync", Default: "everysec", Mutable: true, Check: oneOf("everysec", "always", "no"),
		Doc: "always: reply after a group-committed fdatasync; everysec: write before replying, fsync every second; no: let the OS decide"},
	{Name: "appendonly", Default: "yes", Fixed: true, Check: oneOf("yes"),
		Doc: "always yes: every write goes to the value log"},
	{Name: "save", Default: "", Fixed: true, Check: oneOf(""),
		Doc: "always empty: there are no RDB snapshots; the value log is the data"},
	{Name: "maxclients", Default: "10000", Mutable: true, Check: intRange(1, 4294967295),
		Doc: "connections beyond this get -ERR max number of clients reached; too high risks running out of file descriptors"},
	{Name: "databases", Default: "16", Check: intRange(1, 255),
		Doc: "number of databases (SELECT 0..n-1); at most 255 (the node keeps its own keys in a 256th)"},
	{Name: "proto-max-bulk-len", Default: "536870912", Mutable: true, Check: memRange(1<<20, math.MaxInt64),
		Doc: "largest bulk string a client may send (and so the largest value); too high lets one client use that much memory"},
	{Name: "client-query-buffer-limit", Default: "1073741824", Mutable: true, Check: memRange(1<<20, math.MaxInt64),
		Doc: "most bytes buffered for one incomplete command; a client that exceeds it is disconnected"},
	{Name: "client-output-buffer-limit", Default: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", Mutable: true,
		Check: obufCheck, Merge: obufMerge,
		Doc: "class hard soft seconds, for one class or more (normal, replica or slave, pubsub): a client of the class whose replies not yet written exceed hard bytes, or soft bytes for seconds on end, is disconnected (0 = no limit). A normal client has at most about 64 KiB of unwritten replies plus the reply in progress: Lavik stops running its commands while the socket is full, where Redis goes on and buffers"},
	{Name: "notify-keyspace-events", Default: "", Mutable: true, Check: notifyCheck, Show: notifyShow,
		Doc: "keyspace events published to subscribers, as Redis's flags: K (__keyspace@<db>__ channels) and/or E (__keyevent@<db>__) with the classes g $ l s h z t x e d n m or A; empty (the default) publishes none and costs nothing. Each event is a PUBLISH: enabling many classes on a busy node costs CPU even without subscribers"},
	{Name: "timeout", Default: "0", Mutable: true, Check: intRange(0, 1<<31),
		Doc: "close a client idle for this many seconds (0 = never)"},
	{Name: "loglevel", Default: "notice", Mutable: true, Check: oneOf("debug", "verbose", "notice", "warning"),
		Doc: "debug, verbose, notice or warning"},
	{Name: "logfile", Default: "", Check: anyValue,
		Doc: "log file; empty logs to standard error"},
	{Name: "pidfile", Default: "", Check: anyValue,
		Doc: "write the process id to this file at start-up and remove it at exit"},
	{Name: "shards", Default: "auto", Check: shardsCheck,
		Doc: "keyspace shards, a power of two (auto = 4 per core); too few and writers contend, too many and group commits get smaller. Fixed for a data directory's life: auto reuses the count the directory was created with, and an explicit different count is refused"},
	{Name: "io-engine", Default: "auto", Check: oneOf("auto", "uring", "pread"),
		Doc: "how values are read from the SSD: uring batches reads through io_uring; pread uses a bounded pool of positioned reads (a blocked read holds a scheduler thread); auto is uring where the kernel allows it, else pread"},
	{Name: "io-depth", Default: "128", Check: intRange(1, 4096),
		Doc: "most value reads in flight at once; too low starves a fast SSD, too high only adds queueing"},
	{Name: "value-cache-size", Default: "0", Check: zeroOrMemRange(1<<20, math.MaxInt64),
		Doc: "DRAM for a cache of hot values read from the SSD, for skewed workloads; 0 (the default) turns it off, else at least 1mb. Too low: hot values keep going to the SSD (lavik_value_cache_hits stays low); too high: memory the index, the OS and other processes need (each cached value also costs 30-60 bytes of index). A uniform workload gains little from it"},
	{Name: "segment-size", Default: "67108864", Check: memRange(1<<20, 2<<30),
		Doc: "value-log segment size; too small means many files and rotations, too large means coarser space reclamation (a shard's active segment is never reclaimed, and a segment larger than a shard's live data makes the collector rewrite live records over and over to stay within twice the live data)"},
	{Name: "reclaim-rate", Default: "67108864", Mutable: true, Check: zeroOrMemRange(1<<20, math.MaxInt64),
		Doc: "bytes per second the background collector may read and write to give back the space of overwritten, deleted and expired values (0 turns it off and disk use only grows). While disk use is over 1.5 times the live data the collector may go faster, without limit once it reaches twice: the space bound comes first. Too low: the collector runs at the limit's edge and writes compete with it; too high: reclamation takes SSD bandwidth that reads need"},
	{Name: "group-threshold", Default: "32768", Check: memRange(256, 16<<20),
		Doc: "a hash, set, list, sorted set or stream whose encoding is longer than this many bytes is stored as groups of a few KiB and a directory naming them, so that a command about a few members reads and writes a few records rather than the whole value; a smaller one is one record. Lower: more values pay a directory read; higher: edits of mid-sized values rewrite more"},
	{Name: "sched-policy", Default: "batch", Check: oneOf("batch", "normal"),
		Doc: "Linux scheduling policy of the server's threads: batch (SCHED_BATCH) stops a thread the server wakes from preempting the thread that woke it; the Go runtime wakes threads constantly, and with normal, on a busy machine, the thread that restarts the world after a GC pause could lose its core for milliseconds (GC pause p99 over 1 ms, under 1 ms with batch in the same run). normal keeps the default policy (SCHED_OTHER). Ignored elsewhere than Linux"},
	{Name: "repair-corrupt-log", Default: "no", Check: oneOf("no", "yes"),
		Doc: "what a start does when the value log holds damaged data followed by valid records (a flipped bit, a lost sector: not a torn write, which is always cut): no refuses to start and names the segment and offset; yes moves the damaged bytes into the shard's quarantine directory, keeps every valid record after them, and starts (keys whose newest record was damaged fall back to their previous one). Set it for the one start that repairs, then back to no"},
	{Name: "replicaof", Default: "", Check: replicaofCheck,
		Doc: "\"host port\" of the primary this node follows from start-up (empty: a primary). A follower serves reads, refuses writes with READONLY, and keeps its replication offset with its data, so a restart resumes the stream where it stopped. REPLICAOF changes it at run time"},
	{Name: "masterauth", Default: "", Mutable: true, Check: anyValue,
		Doc: "password a follower gives its primary (the primary's requirepass)"},
	{Name: "repl-backlog-size", Default: "1073741824", Check: memRange(16<<10, math.MaxInt64),
		Doc: "how much of the change stream a primary keeps on disk (in its data directory) for followers that reconnect: a follower back within it continues where it stopped (a partial resync), one that fell further behind copies everything again (a full resync). Too low: a follower down for a few minutes under load needs a full resync; too high: disk. Used once a follower has connected"},
	{Name: "repl-ping-replica-period", Default: "10", Check: intRange(1, 3600),
		Doc: "seconds between the PINGs a primary sends to idle followers, which tell them the link lives; above repl-timeout, idle links break"},
	{Name: "repl-timeout", Default: "60", Check: intRange(1, 3600),
		Doc: "seconds without a byte from the other side after which a primary or a follower drops the link (the follower then reconnects); too low breaks links during long pauses, too high leaves a dead primary unnoticed longer"},
	{Name: "meta", Default: "", Check: anyValue,
		Doc: "client addresses of lavik-meta members, host:port,...: the node registers, heartbeats, and takes the role meta assigns (primary or follower), taking writes only under meta's lease; empty (the default) runs without meta (standalone, or replicaof)"},
	{Name: "node-id", Default: "", Check: anyValue,
		Doc: "this node's id under meta (1 to 64 of [A-Za-z0-9._-]); empty makes one at the first start. Kept in the data directory's NODE file, with the highest epoch seen; a different id for an existing directory is refused"},
	{Name: "shard-group", Default: "default", Check: nonEmpty,
		Doc: "the shard group this node belongs to under meta: its primary and followers hold the same data"},
	{Name: "announce", Default: "", Check: anyValue,
		Doc: "host:port clients and followers dial for this node, as meta tells them; empty uses bind:port (set it when bind is 0.0.0.0)"},
	{Name: "admin-port", Default: "", Check: adminPortCheck,
		Doc: "TCP port of the gRPC admin API (lavik/data/v1 DataAdmin: status and rebuild, for lavikctl and lavik-meta) on the bind address; empty (the default) serves none; 0 picks a free port and logs it"},
	{Name: "replica-read-only", Default: "yes", Fixed: true, Check: oneOf("yes"),
		Doc: "always yes: a follower refuses clients' writes"},
	{Name: "busy-reply-threshold", Default: "5000", Mutable: true, Check: intRange(0, math.MaxInt32),
		Doc: "milliseconds a Lua script (EVAL, FCALL) may run before other clients' commands are answered -BUSY instead of waiting, and SCRIPT KILL may stop it (alias lua-time-limit). Too low: clients see BUSY for scripts that would soon end; too high: they wait that long for a runaway script"},
	{Name: "checkpoint-interval-bytes", Default: "67108864", Check: zeroOrMemRange(1<<20, math.MaxInt64),
		Doc: "a shard checkpoints its index once its value log has grown by this much (and by at least the size of its last checkpoint) since the last one, and every shard checkpoints at shutdown; a start loads the checkpoints and replays only the log after them. 0 turns checkpoints off: every start replays the whole log. Too low: the index is rewritten more often than it needs to be; too high: a start after a crash replays up to this much log per shard"},
}

var byName = func() map[string]*Param {
	m := map[string]*Param{}
	for _, p := range Params {
		m[p.Name] = p
	}
	return m
}()

// aliases are other names Redis gives a setting.
var aliases = map[string]string{"lua-time-limit": "busy-reply-threshold"}

// Lookup returns the parameter called name (case-insensitive), or the one it is an alias of.
func Lookup(name string) *Param {
	n := strings.ToLower(name)
	if a, ok := aliases[n]; ok {
		n = a
	}
	return byName[n]
}

// New returns a Config holding every default.
func New() *Config {
	c := &Config{values: map[string]string{}}
	for _, p := range Params {
		c.values[p.Name] = p.Default
	}
	return c
}

// OnChange registers the function called after a run-time change.
func (c *Config) OnChange(fn func(name, value string)) { c.onChange = fn }

// Get returns a setting's current value.
func (c *Config) Get(name string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.values[name]
}

// Show returns a setting's value as CONFIG GET shows it (Param.Show).
func (c *Config) Show(name string) string {
	v := c.Get(name)
	for _, p := range Params {
		if p.Name == name && p.Show != nil {
			return p.Show(v)
		}
	}
	return v
}

// Int returns an integer setting.
func (c *Config) Int(name string) int64 {
	n, _ := strconv.ParseInt(c.Get(name), 10, 64)
	return n
}

// Names returns every setting name, sorted.
func Names() []string {
	out := make([]string, 0, len(Params))
	for _, p := range Params {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// ErrUnknown reports a setting that does not exist.
type ErrUnknown struct{ Name string }

func (e *ErrUnknown) Error() string { return fmt.Sprintf("config: unknown option %q", e.Name) }

// ErrBadValue reports a value a setting does not accept.
type ErrBadValue struct {
	Name, Value string
	Reason      string
}

func (e *ErrBadValue) Error() string {
	return fmt.Sprintf("config: bad value %q for %s: %s", e.Value, e.Name, e.Reason)
}

// ErrImmutable reports a run-time change to a start-up-only setting.
type ErrImmutable struct{ Name string }

func (e *ErrImmutable) Error() string {
	return fmt.Sprintf("config: %s can't be changed at run time", e.Name)
}

// Validate checks and normalises one value for the named setting.
func Validate(name, value string) (*Param, string, error) {
	p := Lookup(name)
	if p == nil {
		return nil, "", &ErrUnknown{Name: name}
	}
	v, err := p.Check(value)
	if err != nil {
		return p, "", &ErrBadValue{Name: p.Name, Value: value, Reason: err.Error()}
	}
	return p, v, nil
}

// SetStartup sets a value at start-up (from the file or the command line).
func (c *Config) SetStartup(name, value string) error {
	p, v, err := Validate(name, value)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if p.Merge != nil {
		v = p.Merge(c.values[p.Name], v)
	}
	c.values[p.Name] = v
	c.mu.Unlock()
	return nil
}

// SetRuntime applies CONFIG SET name value pairs atomically: all are validated first and none
// is applied if any fails.
func (c *Config) SetRuntime(pairs [][2]string) error {
	type change struct{ name, value string }
	var changes []change
	for _, kv := range pairs {
		p, v, err := Validate(kv[0], kv[1])
		if err != nil {
			return err
		}
		if !p.Mutable {
			if p.Fixed && v == p.Default {
				continue // setting a fixed value to itself is harmless
			}
			return &ErrImmutable{Name: p.Name}
		}
		changes = append(changes, change{p.Name, v})
	}
	c.mu.Lock()
	for i, ch := range changes {
		if p := Lookup(ch.name); p.Merge != nil {
			changes[i].value = p.Merge(c.values[ch.name], ch.value)
		}
		c.values[ch.name] = changes[i].value
	}
	c.mu.Unlock()
	if c.onChange != nil {
		for _, ch := range changes {
			c.onChange(ch.name, ch.value)
		}
	}
	return nil
}

// Shards resolves the shards setting ("auto" = 4 per core, rounded up to a power of two).
func (c *Config) Shards() int {
	v := c.Get("shards")
	if v == "auto" {
		n := 1
		for n < 4*runtime.GOMAXPROCS(0) {
			n <<= 1
		}
		return n
	}
	n, _ := strconv.Atoi(v)
	return n
}

// Checks.

func anyValue(v string) (string, error) { return v, nil }

// adminPortCheck accepts "" (no admin API) or a port 0..65535.
func adminPortCheck(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	p, err := strconv.Atoi(v)
	if err != nil || p < 0 || p > 65535 {
		return "", fmt.Errorf("must be empty or a port 0..65535, not %q", v)
	}
	return strconv.Itoa(p), nil
}

// replicaofCheck accepts "" or "host port" (Redis's "no one" is "").
func replicaofCheck(v string) (string, error) {
	f := strings.Fields(v)
	if len(f) == 0 || len(f) == 2 && strings.EqualFold(f[0], "no") && strings.EqualFold(f[1], "one") {
		return "", nil
	}
	if len(f) != 2 {
		return "", fmt.Errorf("must be \"host port\", not %q", v)
	}
	if p, err := strconv.Atoi(f[1]); err != nil || p <= 0 || p > 65535 {
		return "", fmt.Errorf("port must be 1..65535, not %q", f[1])
	}
	return f[0] + " " + f[1], nil
}

// Replicaof returns the primary replicaof names ("" and 0 for none).
func (c *Config) Replicaof() (string, int) {
	f := strings.Fields(c.Get("replicaof"))
	if len(f) != 2 {
		return "", 0
	}
	p, _ := strconv.Atoi(f[1])
	return f[0], p
}

func nonEmpty(v string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("must not be empty")
	}
	return v, nil
}

func oneOf(vals ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		lv := strings.ToLower(v)
		for _, ok := range vals {
			if lv == ok {
				return ok, nil
			}
		}
		return "", fmt.Errorf("argument(s) must be one of the following: %s", strings.Join(vals, ", "))
	}
}

func intRange(lo, hi int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", fmt.Errorf("argument couldn't be parsed into an integer")
		}
		if n < lo || n > hi {
			return "", fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

func memRange(lo, hi int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := ParseMemory(v)
		if err != nil {
			return "", err
		}
		if n < lo || n > hi {
			return "", fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

// zeroOrMemRange accepts 0 (off) or a memory value in [lo, hi].
func zeroOrMemRange(lo, hi int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := ParseMemory(v)
		if err != nil {
			return "", err
		}
		if n != 0 && (n < lo || n > hi) {
			return "", fmt.Errorf("argument must be 0 or between %d and %d inclusive", lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

func shardsCheck(v string) (string, error) {
	if strings.ToLower(v) == "auto" {
		return "auto", nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1024 || n&(n-1) != 0 {
		return "", fmt.Errorf("must be auto or a power of two from 1 to 1024")
	}
	return strconv.Itoa(n), nil
}

// ParseMemory parses a Redis memory value: a number with an optional unit k, kb, m, mb, g, gb
// (k = 1000, kb = 1024, ...), case-insensitive.
func ParseMemory(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}, {"b", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("argument must be a memory value")
	}
	return n * mul, nil
}
