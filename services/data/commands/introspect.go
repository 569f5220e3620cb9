package commands

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/services/data/observe"
)

// Introspector is what a server offers the introspection commands (SLOWLOG, LATENCY, MONITOR,
// CLIENT PAUSE, CONFIG REWRITE, INFO errorstats): the server measures every command in its
// dispatcher and keeps the records. A Server without it answers these commands with an error.
type Introspector interface {
	SlowLog() *observe.SlowLog
	Latency() *observe.Latency
	// StartMonitor makes the client's connection a monitor once this reply is written.
	StartMonitor(cl *Client)
	// StopMonitor makes the client's connection an ordinary one again (RESET).
	StopMonitor(cl *Client)
	// Pause holds clients' commands until until: every command (all) or writes only.
	Pause(until time.Time, all bool)
	Unpause()
	PauseState() (active, all bool, until time.Time)
	// ConfigRewrite rewrites the config file the server was started with (CONFIG REWRITE).
	ConfigRewrite() error
	// ErrorStats are the error replies by their first word (INFO errorstats).
	ErrorStats() map[string]uint64
}

// ConnInfo is the connection's side of a CLIENT LIST line, reported by the server.
type ConnInfo struct {
	FD                          int
	QbufFree, ArgvMem, MultiMem int64
	Monitor, Paused             bool
}

// clientBaseMem is what a connection costs beyond its buffers (its structs and reader), for
// tot-mem.
const clientBaseMem = 1024

func (ci ConnInfo) flags() string {
	f := ""
	if ci.Monitor {
		f += "O"
	}
	if ci.Paused {
		f += "b"
	}
	return f
}

func (ci ConnInfo) totMem(qbuf, omem int64) int64 {
	return clientBaseMem + qbuf + ci.QbufFree + ci.ArgvMem + ci.MultiMem + omem
}

func (cl *Client) connInfo() ConnInfo {
	if cl.ConnInfo == nil {
		return ConnInfo{FD: -1}
	}
	return cl.ConnInfo()
}

var errNoIntrospection = Error("ERR lavik: this server keeps no introspection records")

func introspector(c *Ctx) Introspector {
	in, ok := c.Srv.(Introspector)
	if !ok {
		c.Err(errNoIntrospection)
		return nil
	}
	return in
}

func init() {
	register(
		&Command{Name: "slowlog", Arity: -2, Group: "server", Since: "2.2.12", Complexity: "Depends on subcommand.",
			Summary: "A container for slow log commands.",
			Subcommands: map[string]*Command{
				"get": {Arity: -2, Flags: FlagAdmin | FlagLoading | FlagStale, Since: "2.2.12", Complexity: "O(N) where N is the number of entries returned",
					Summary: "Returns the slow log's entries.", Handler: slowlogGetCmd},
				"len": {Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Since: "2.2.12", Complexity: "O(1)",
					Summary: "Returns the number of entries in the slow log.", Handler: slowlogLenCmd},
				"reset": {Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Since: "2.2.12", Complexity: "O(N) where N is the number of entries in the slowlog",
					Summary: "Clears all entries from the slow log.", Handler: slowlogResetCmd},
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "6.2.0", Complexity: "O(1)",
					Summary: "Show helpful text about the different subcommands", Handler: helpCmd},
			}},
		&Command{Name: "latency", Arity: -2, Group: "server", Since: "2.8.13", Complexity: "Depends on subcommand.",
			Summary: "A container for latency diagnostics commands.",
			Subcommands: map[string]*Command{
				"latest": {Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.8.13", Complexity: "O(1)",
					Summary: "Returns the latest latency samples for all events.", Handler: latencyLatestCmd},
				"history": {Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.8.13", Complexity: "O(1)",
					Summary: "Returns timestamp-latency samples for an event.", Handler: latencyHistoryCmd},
				"reset": {Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.8.13", Complexity: "O(1)",
					Summary: "Resets the latency data for one or more events.", Handler: latencyResetCmd},
				"doctor": {Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.8.13", Complexity: "O(1)",
					Summary: "Returns a human-readable latency analysis report.", Handler: latencyDoctorCmd},
				"histogram": {Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "7.0.0", Complexity: "O(N) where N is the number of commands with latency information being retrieved.",
					Summary: "Returns the cumulative distribution of latencies of a subset or all commands.", Handler: latencyHistogramCmd},
				"graph": {Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.8.13", Complexity: "O(1)",
					Summary: "Returns a latency graph for an event.", Handler: latencyGraphCmd},
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "2.8.13", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: helpCmd},
			}},
		&Command{Name: "monitor", Arity: 1, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale | FlagNoMulti, Group: "server", Since: "1.0.0", Complexity: "O(1) to start; then O(N) per command run, N its arguments",
			Summary: "Listens for all requests received by the server in real-time.", Handler: monitorCmd},
		&Command{Name: "lastsave", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, Group: "server", ExtraACL: []string{"@admin", "@dangerous"}, Since: "1.0.0", Complexity: "O(1)",
			Summary: "Returns the Unix timestamp of the last successful save to disk.", Handler: lastsaveCmd},
		&Command{Name: "acl", Arity: -2, Group: "server", Since: "6.0.0", Complexity: "Depends on subcommand.",
			Summary: "A container for Access List Control commands.",
			Subcommands: map[string]*Command{
				"whoami": {Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "6.0.0", Complexity: "O(1)",
					Summary: "Returns the authenticated username of the current connection.", Handler: aclWhoamiCmd},
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "6.0.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: helpCmd},
			}},
		&Command{Name: "memory", Arity: -2, Group: "server", Since: "4.0.0", Complexity: "Depends on subcommand.",
			Summary: "A container for memory diagnostics commands.",
			Subcommands: map[string]*Command{
				"usage": {Arity: -3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, Since: "4.0.0", Complexity: "O(N) where N is the number of samples.",
					Summary: "Estimates the memory usage of a key.", Handler: memoryUsageCmd},
				"stats": {Arity: 2, Since: "4.0.0", Complexity: "O(1)",
					Summary: "Returns details about memory usage.", Handler: memoryStatsCmd},
				"doctor": {Arity: 2, Since: "4.0.0", Complexity: "O(1)",
					Summary: "Outputs a memory problems report.", Handler: memoryDoctorCmd},
				"purge": {Arity: 2, Since: "4.0.0", Complexity: "Depends on how much memory is allocated, could be slow",
					Summary: "Asks the allocator to release memory.", Handler: memoryPurgeCmd},
				"malloc-stats": {Arity: 2, Since: "4.0.0", Complexity: "Depends on how much memory is allocated, could be slow",
					Summary: "Returns the allocator statistics.", Handler: memoryMallocStatsCmd},
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "4.0.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: helpCmd},
			}},
	)
}

// SLOWLOG

func slowlogGetCmd(c *Ctx) {
	in := introspector(c)
	if in == nil {
		return
	}
	n := int64(10)
	if len(c.Args) > 3 {
		c.Err(ErrSyntax)
		return
	}
	if len(c.Args) == 3 {
		v, ok := ParseInt(c.Args[2])
		if !ok || v < -1 {
			c.Err(Error("ERR count should be greater than or equal to -1"))
			return
		}
		n = v
	}
	if n > math.MaxInt32 {
		n = -1
	}
	entries := in.SlowLog().Get(int(n))
	c.W.Array(len(entries))
	for _, e := range entries {
		c.W.Array(6)
		c.W.Int(e.ID)
		c.W.Int(e.Time)
		c.W.Int(e.Duration)
		c.W.Array(len(e.Args))
		for _, a := range e.Args {
			c.W.BulkString(a)
		}
		c.W.BulkString(e.Addr)
		c.W.BulkString(e.Name)
	}
}

func slowlogLenCmd(c *Ctx) {
	if in := introspector(c); in != nil {
		c.W.Int(int64(in.SlowLog().Len()))
	}
}

func slowlogResetCmd(c *Ctx) {
	if in := introspector(c); in != nil {
		in.SlowLog().Reset()
		c.OK()
	}
}

// LATENCY

func latencyLatestCmd(c *Ctx) {
	in := introspector(c)
	if in == nil {
		return
	}
	evs := in.Latency().Events()
	c.W.Array(len(evs))
	for _, e := range evs {
		l := e.Latest()
		c.W.Array(4)
		c.W.BulkString(e.Name)
		c.W.Int(l.Time)
		c.W.Int(l.Latency)
		c.W.Int(e.Max)
	}
}

func latencyHistoryCmd(c *Ctx) {
	in := introspector(c)
	if in == nil {
		return
	}
	e, _ := in.Latency().Event(string(c.Args[2]))
	c.W.Array(len(e.Samples))
	for _, s := range e.Samples {
		c.W.Array(2)
		c.W.Int(s.Time)
		c.W.Int(s.Latency)
	}
}

func latencyResetCmd(c *Ctx) {
	in := introspector(c)
	if in == nil {
		return
	}
	var names []string
	for _, a := range c.Args[2:] {
		names = append(names, string(a))
	}
	c.W.Int(int64(in.Latency().Reset(names...)))
}

// latencyAdvice says what each event Lavik records means and what to look at.
var latencyAdvice = map[string]string{
	"command":          "Slow commands: check SLOWLOG GET for which ones, and avoid O(N) commands on large values (KEYS, SMEMBERS of big sets, ...).",
	"fast-command":     "Commands flagged O(1) or O(log N) were slow: the process may have been descheduled (a busy machine, swap) or the disk slow to answer.",
	"aof-fsync-always": "Value-log fsyncs were slow: the disk is slow to make writes durable; appendfsync everysec trades a second of writes for shorter waits.",
	"aof-fsync":        "Value-log fsyncs were slow: the disk is slow to make writes durable.",
	"checkpoint":       "Index checkpoints were slow: a large index, or a disk busy with other writes.",
}

func latencyDoctorCmd(c *Ctx) {
	in := introspector(c)
	if in == nil {
		return
	}
	evs := in.Latency().Events()
	var b strings.Builder
	threshold := c.Srv.Config().Get("latency-monitor-threshold")
	switch {
	case threshold == "0" && len(evs) == 0:
		b.WriteString("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Lavik instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it.\n")
	case len(evs) == 0:
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Lavik instance, not in the slightest bit. I honestly think you ought to sleep a bit.\n")
	default:
		b.WriteString("Dave, I have observed latency spikes in this Lavik instance. You don't mind talking about it, do you Dave?\n\n")
		for i, e := range evs {
			avg := e.Sum / max(e.Count, 1)
			first := e.Samples[0].Time
			fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %d sec). Worst all time event %dms.\n",
				i+1, e.Name, e.Count, avg, meanDeviation(e.Samples, avg), max(e.Latest().Time-first, 0)/max(int64(len(e.Samples)), 1), e.Max)
		}
		b.WriteString("\nI have a few pieces of advice for you:\n\n")
		for _, e := range evs {
			if a, ok := latencyAdvice[e.Name]; ok {
				b.WriteString("- " + a + "\n")
			}
		}
	}
	c.W.Verbatim("txt", b.String())
}

func meanDeviation(s []observe.LatencySample, avg int64) int64 {
	var d int64
	for _, x := range s {
		d += abs64(x.Latency - avg)
	}
	return d / max(int64(len(s)), 1)
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// MONITOR

func monitorCmd(c *Ctx) {
	in := introspector(c)
	if in == nil {
		return
	}
	c.OK()
	in.StartMonitor(c.Client)
}

// CLIENT PAUSE, UNPAUSE, NO-TOUCH

func clientPauseCmd(c *Ctx) {
	in := introspector(c)
	if in == nil {
		return
	}
	ms, ok := ParseInt(c.Args[2])
	if !ok {
		c.Err(Error("ERR timeout is not an integer or out of range"))
		return
	}
	if ms < 0 {
		c.Err(Error("ERR timeout is negative"))
		return
	}
	all := true
	switch {
	case len(c.Args) == 3:
	case len(c.Args) == 4 && is(c.Args[3], "ALL"):
	case len(c.Args) == 4 && is(c.Args[3], "WRITE"):
		all = false
	case len(c.Args) == 4:
		c.Err(Error("ERR CLIENT PAUSE mode must be WRITE or ALL"))
		return
	default:
		c.Err(ErrSyntax)
		return
	}
	in.Pause(time.Now().Add(time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond)))*time.Millisecond), all)
	c.OK()
}

func clientUnpauseCmd(c *Ctx) {
	if in := introspector(c); in != nil {
		in.Unpause()
		c.OK()
	}
}

func clientNoTouchCmd(c *Ctx) {
	switch {
	case is(c.Args[2], "ON"):
		c.Client.NoTouch.Store(true)
		c.Sess.SetNoTouch(true)
	case is(c.Args[2], "OFF"):
		c.Client.NoTouch.Store(false)
		c.Sess.SetNoTouch(false)
	default:
		c.Err(ErrSyntax)
		return
	}
	c.OK()
}

// CONFIG REWRITE

func configRewriteCmd(c *Ctx) {
	in := introspector(c)
	if in == nil {
		return
	}
	if err := in.ConfigRewrite(); err != nil {
		c.Err(err)
		return
	}
	c.OK()
}

// LASTSAVE: Lavik never saves a snapshot (the value log is the data); like a Redis server that
// never saved, it reports its start.
func lastsaveCmd(c *Ctx) { c.W.Int(c.Srv.Stats().Started.Unix()) }

func aclWhoamiCmd(c *Ctx) { c.W.BulkString("default") }

// MEMORY

// indexEntryBytes is what a key costs in the DRAM index beyond its own bytes (DESIGN.md's
// budget for a plain string).
const indexEntryBytes = 48

// memoryUsageCmd estimates a key's footprint: its index entry (the budget per key plus the
// key's bytes) and its value's bytes as stored (on the SSD or in the log's write buffer; for a
// grouped collection, its directory and groups as the directory gives their length). SAMPLES
// is accepted and ignored: the stored length is known without sampling.
func memoryUsageCmd(c *Ctx) {
	for i := 3; i < len(c.Args); i++ {
		if !is(c.Args[i], "SAMPLES") || i+1 >= len(c.Args) {
			c.Err(ErrSyntax)
			return
		}
		if n, ok := ParseInt(c.Args[i+1]); !ok || n < 0 {
			c.Err(ErrNotInt)
			return
		}
		i++
	}
	m, ok := c.KS.Lookup(c.Sess, c.DB(), c.Args[2])
	if !ok {
		c.W.Null()
		return
	}
	c.W.Int(int64(indexEntryBytes + len(c.Args[2]) + m.Len))
}

func memoryStatsCmd(c *Ctx) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	ks := c.KS.Stats(c.Sess)
	var keys int64
	for _, d := range c.KS.Info(c.Sess) {
		keys += d.Keys
	}
	used := int64(ms.HeapAlloc)
	rss := RSS()
	perKey := int64(0)
	if keys > 0 {
		perKey = ks.IndexBytes / keys
	}
	frag := 0.0
	if used > 0 {
		frag = float64(rss) / float64(used)
	}
	st := c.Srv.Stats()
	fields := []any{
		"peak.allocated", int64(ms.HeapSys),
		"total.allocated", used,
		"startup.allocated", int64(0),
		"replication.backlog", int64(0),
		"clients.slaves", int64(0),
		"clients.normal", st.ConnectedClients * clientBaseMem,
		"aof.buffer", ks.Log.TailBytes,
		"keys.count", keys,
		"keys.bytes-per-key", perKey,
		"dataset.bytes", ks.Log.DiskBytes,
		"overhead.total", ks.IndexBytes,
		"allocator.allocated", used,
		"allocator.resident", rss,
		"fragmentation", frag,
		"fragmentation.bytes", rss - used,
		"lavik.index.bytes", ks.IndexBytes,
		"lavik.disk.bytes", ks.Log.DiskBytes,
		"lavik.value-cache.bytes", valueCacheStats().Bytes,
	}
	c.W.Map(len(fields) / 2)
	for i := 0; i < len(fields); i += 2 {
		c.W.BulkString(fields[i].(string))
		switch v := fields[i+1].(type) {
		case int64:
			c.W.Int(v)
		case float64:
			c.W.Double(v)
		}
	}
}

func memoryDoctorCmd(c *Ctx) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := RSS()
	var b strings.Builder
	used := int64(ms.HeapAlloc)
	switch {
	case used < 5<<20:
		b.WriteString("Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n")
	case rss > 0 && float64(rss)/float64(used) > 1.4:
		fmt.Fprintf(&b, "Sam, I detected a few issues in this Lavik instance memory implants:\n\n * High fragmentation: the process's resident memory (%s) is %.2f times the Go heap in use (%s); the Go runtime gives freed memory back to the system over minutes (MEMORY PURGE does it now).\n",
			humanBytes(rss), float64(rss)/float64(used), humanBytes(used))
	default:
		b.WriteString("Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n")
	}
	c.W.Verbatim("txt", b.String())
}

func memoryPurgeCmd(c *Ctx) {
	debug.FreeOSMemory()
	c.OK()
}

func memoryMallocStatsCmd(c *Ctx) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.W.Verbatim("txt", fmt.Sprintf("Go runtime: heap_alloc=%d heap_sys=%d heap_idle=%d heap_released=%d stack_sys=%d gc_cycles=%d\n",
		ms.HeapAlloc, ms.HeapSys, ms.HeapIdle, ms.HeapReleased, ms.StackSys, ms.NumGC))
}

// DEBUG SLEEP, DEBUG OBJECT, OBJECT REFCOUNT

// debugSleepCmd sleeps. Unlike Redis, where it stops the whole server, it holds only its own
// client: DEBUG runs on a goroutine of its own (server.conn.heavy).
func debugSleepCmd(c *Ctx) {
	f, ok := ParseFloat(c.Args[2])
	if !ok {
		c.Err(ErrNotFloat)
		return
	}
	if f > 0 {
		time.Sleep(time.Duration(f * float64(time.Second)))
	}
	c.OK()
}

// debugObjectCmd answers in Redis's format. Lavik has no objects in memory: the address is
// the key's index slot hash, refcount is always 1, serializedlength is the value's length as
// stored, and lru is the access clock of keyspace/access.go.
func debugObjectCmd(c *Ctx) {
	m, ok := c.KS.Lookup(c.Sess, c.DB(), c.Args[2])
	if !ok {
		c.Err(ErrNoSuchKey)
		return
	}
	enc, err := encodingOf(c, c.Args[2])
	if err != nil {
		c.Err(err)
		return
	}
	// lru is Redis's 24-bit clock of the last access (seconds); under an LFU policy the idle
	// time is not tracked and reads 0 seconds, as the LFU word does not hold it.
	a, _ := c.KS.AccessOf(c.Sess, c.DB(), c.Args[2])
	now := time.Now().UnixMilli()
	lru := ((now - a.IdleMs) / 1000) & (1<<24 - 1)
	c.W.Simple(fmt.Sprintf("Value at:0x%x refcount:1 encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d",
		keyHash(c.Args[2]), enc, m.Len, lru, a.IdleMs/1000))
}

func keyHash(k []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, b := range k {
		h ^= uint64(b)
		h *= 1099511628211
	}
	return h &^ 0xf
}

// encodingOf returns OBJECT ENCODING's answer for key.
func encodingOf(c *Ctx, key []byte) (string, error) {
	w := resp.NewWriter()
	sub := *c
	sub.W = w
	sub.Args = [][]byte{[]byte("object"), []byte("encoding"), key}
	sub.Failed = false
	objectEncodingCmd(&sub)
	out := string(w.Bytes())
	if sub.Failed || !strings.HasPrefix(out, "$") {
		return "", Error(strings.TrimSpace(strings.TrimPrefix(out, "-")))
	}
	_, body, _ := strings.Cut(out, "\r\n")
	return strings.TrimSuffix(body, "\r\n"), nil
}

func objectRefcountCmd(c *Ctx) {
	if _, ok := c.KS.Lookup(c.Sess, c.DB(), c.Args[2]); !ok {
		c.W.Null()
		return
	}
	c.W.Int(1)
}

// COMMAND GETKEYSANDFLAGS: the keys of a command line with the flags of the key spec each
// comes from (RW, RO or OW for a destination).
func commandGetkeysandflagsCmd(c *Ctx) {
	args, cmd, pos, ok := commandKeys(c)
	if !ok {
		return
	}
	c.W.Array(len(pos))
	for i, p := range pos {
		c.W.Array(2)
		c.W.Bulk(args[p])
		if flags, ok := keyFlags(cmd, args, p); ok {
			// The flags of Redis's key spec naming the key (RW access update, OW update, ...).
			c.W.Set(len(flags))
			for _, f := range flags {
				c.W.Simple(f)
			}
			continue
		}
		flag := "RO"
		switch {
		case cmd.StoreKey && i == 0:
			flag = "OW"
		case cmd.Flags&FlagWrite != 0 && !cmd.StoreKey:
			flag = "RW"
		}
		c.W.Set(1)
		c.W.Simple(flag)
	}
}

// latencyStats writes INFO latencystats: each command's percentiles
// (latency-tracking-info-percentiles) in microseconds, as Redis does.
func infoLatencystats(c *Ctx, b *strings.Builder) {
	ps := c.Srv.Config().Percentiles()
	for _, cmd := range AllWithSubcommands() {
		h := cmd.Stats.Hist.Load()
		if h == nil || h.Count() == 0 {
			continue
		}
		b.WriteString("latency_percentiles_usec_" + cmd.Name + ":")
		for i, p := range ps {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("p" + strconv.FormatFloat(p, 'f', -1, 64) + "=")
			b.WriteString(strconv.FormatFloat(float64(h.Quantile(p/100)), 'f', 3, 64))
		}
		b.WriteString("\r\n")
	}
}

func infoErrorstats(c *Ctx, b *strings.Builder) {
	in, ok := c.Srv.(Introspector)
	if !ok {
		return
	}
	st := in.ErrorStats()
	kinds := make([]string, 0, len(st))
	for k := range st {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", k, st[k])
	}
}

func infoModules(c *Ctx, b *strings.Builder) {}

func infoCluster(c *Ctx, b *strings.Builder) { kv(b, "cluster_enabled", 0) }

// writesSinceStart counts the write commands that succeeded (rdb_changes_since_last_save).
func writesSinceStart() uint64 {
	var n uint64
	for _, cmd := range AllWithSubcommands() {
		if cmd.Flags&FlagWrite != 0 {
			n += cmd.Stats.Calls.Load() - min(cmd.Stats.Failed.Load(), cmd.Stats.Calls.Load())
		}
	}
	return n
}
