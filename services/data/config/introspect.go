package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Settings applications and tools set at start-up or read back (maxmemory, slowlog-*, the
// lazyfree-* family, ...), kept apart from the storage settings of config.go. Each has the
// meaning Redis gives it where Lavik has the mechanism, and says so where it has not.
var introspectParams = []*Param{
	{Name: "maxmemory", Default: "0", Mutable: true, Check: memRange(0, math.MaxInt64),
		Doc: "bound in bytes (units kb, mb, gb accepted) on the DRAM INFO reports as used_memory (the index, the Go heap's live objects, the value cache); past it maxmemory-policy acts. Too low: keys are evicted (or writes refused) for the process's fixed overhead; 0 = none"},
	{Name: "maxdisk", Default: "0", Mutable: true, Check: memRange(0, math.MaxInt64),
		Doc: "bound in bytes (units kb, mb, gb accepted) on the value log's live records (INFO's lavik_disk_used); past it maxmemory-policy acts as for maxmemory, and noeviction refuses writes with -OOM. The log's files take up to about twice this on disk until the collector reclaims; 0 = none"},
	{Name: "maxmemory-policy", Default: "noeviction", Mutable: true,
		Check: oneOf("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"),
		Doc:   "what a write past maxmemory or maxdisk does, as in Redis: noeviction refuses commands that may grow memory (-OOM), the others evict keys (volatile-*: only keys with a TTL, and refuse when none is left)"},
	{Name: "maxmemory-samples", Default: "5", Mutable: true, Check: intRange(1, 64),
		Doc: "keys sampled per eviction round in one shard: more evicts closer to true LRU/LFU at more CPU a round"},
	{Name: "lfu-log-factor", Default: "10", Mutable: true, Check: intRange(0, math.MaxInt32),
		Doc: "how slowly the LFU counter grows (Redis's): at 10 about a million accesses reach its 255; too low and every key saturates, too high and hot keys are told apart only after very many accesses"},
	{Name: "lfu-decay-time", Default: "1", Mutable: true, Check: intRange(0, math.MaxInt32),
		Doc: "minutes after which an idle key's LFU counter drops by one (0: never); too high and once-hot keys stay long after they cool"},
	{Name: "hz", Default: "10", Mutable: true, Check: clampHz,
		Doc: "Redis's background task frequency (1..500; values outside are clamped as Redis does); INFO server reports it. Lavik's background work runs on its own schedule"},
	{Name: "slowlog-log-slower-than", Default: "10000", Mutable: true, Check: intRange(-1, math.MaxInt64),
		Doc: "microseconds a command must take to be logged in the slow log (SLOWLOG): 0 logs every command, -1 none. Too low fills the log with ordinary commands, too high hides slow ones"},
	{Name: "slowlog-max-len", Default: "128", Mutable: true, Check: intRange(0, math.MaxInt64),
		Doc: "entries the slow log keeps (the oldest go first); each costs a few hundred bytes at most"},
	{Name: "latency-monitor-threshold", Default: "0", Mutable: true, Check: intRange(0, math.MaxInt64),
		Doc: "milliseconds an event (a command, a value-log fsync, an index checkpoint) must take to be recorded by the latency monitor (LATENCY); 0 turns it off"},
	{Name: "tracking-table-max-keys", Default: "1000000", Mutable: true, Check: intRange(0, math.MaxInt64),
		Doc: "keys the client-side caching table (CLIENT TRACKING) remembers; past it, keys are forgotten with an invalidation sent to their clients, as Redis does. 0 = no limit. Too low sends invalidations for keys nobody changed; too high costs memory (a key and its client ids each)"},
	{Name: "latency-tracking", Default: "yes", Mutable: true, Check: yesNo,
		Doc: "keep per-command latency histograms for INFO latencystats (one atomic add per command)"},
	{Name: "latency-tracking-info-percentiles", Default: "50 99 99.9", Mutable: true, Check: percentiles,
		Doc: "the percentiles INFO latencystats reports, 0..100 each, separated by spaces"},
	{Name: "lazyfree-lazy-eviction", Default: "no", Mutable: true, Check: yesNo, Doc: lazyfreeDoc},
	{Name: "lazyfree-lazy-expire", Default: "no", Mutable: true, Check: yesNo, Doc: lazyfreeDoc},
	{Name: "lazyfree-lazy-server-del", Default: "no", Mutable: true, Check: yesNo, Doc: lazyfreeDoc},
	{Name: "lazyfree-lazy-user-del", Default: "no", Mutable: true, Check: yesNo, Doc: lazyfreeDoc},
	{Name: "lazyfree-lazy-user-flush", Default: "no", Mutable: true, Check: yesNo, Doc: lazyfreeDoc},
}

// lazyfreeDoc is the doc of the lazyfree-* settings.
const lazyfreeDoc = "accepted for Redis configurations and reported; Lavik frees lazily whatever it says: a deleted, expired or flushed value leaves the index at once and its disk space is given back by the background collector, never by the command"

func init() {
	for _, p := range introspectParams {
		addParam(p)
	}
}

// addParam adds a setting defined outside the Params literal.
func addParam(p *Param) {
	if byName[p.Name] != nil {
		panic("config: duplicate setting " + p.Name)
	}
	Params = append(Params, p)
	byName[p.Name] = p
}

func yesNo(v string) (string, error) { return oneOf("yes", "no")(v) }

// clampHz clamps as Redis does (1..500).
func clampHz(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return "", fmt.Errorf("argument couldn't be parsed into an integer")
	}
	if n < 0 {
		return "", fmt.Errorf("argument must be between 0 and 2147483647 inclusive")
	}
	return strconv.FormatInt(min(max(n, 1), 500), 10), nil
}

func percentiles(v string) (string, error) {
	var out []string
	for _, f := range strings.Fields(v) {
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || p < 0 || p > 100 {
			return "", fmt.Errorf("latency-tracking-info-percentiles: each percentile must be between 0 and 100")
		}
		out = append(out, strconv.FormatFloat(p, 'f', -1, 64))
	}
	return strings.Join(out, " "), nil
}

// Percentiles returns latency-tracking-info-percentiles.
func (c *Config) Percentiles() []float64 {
	var out []float64
	for _, f := range strings.Fields(c.Get("latency-tracking-info-percentiles")) {
		p, _ := strconv.ParseFloat(f, 64)
		out = append(out, p)
	}
	return out
}
