package commands

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lavikdb/lavik/pkg/gcpause"
	"github.com/lavikdb/lavik/services/data/pubsub"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// infoSections lists INFO's sections in order; "default" omits commandstats as Redis does.
var infoSections = []struct {
	name      string
	isDefault bool
	write     func(c *Ctx, b *strings.Builder)
}{
	{"server", true, infoServer},
	{"clients", true, infoClients},
	{"memory", true, infoMemory},
	{"persistence", true, infoPersistence},
	{"stats", true, infoStats},
	{"replication", true, infoReplication},
	{"cpu", true, infoCPU},
	{"modules", true, infoModules},
	{"commandstats", false, infoCommandstats},
	{"errorstats", true, infoErrorstats},
	{"latencystats", false, infoLatencystats},
	{"cluster", true, infoCluster},
	{"keyspace", true, infoKeyspace},
}

func infoCmd(c *Ctx) {
	want := map[string]bool{}
	all, everything := false, false
	for _, a := range c.Args[1:] {
		s := strings.ToLower(string(a))
		switch s {
		case "all":
			all = true
		case "everything":
			everything = true
		case "default":
			for _, sec := range infoSections {
				if sec.isDefault {
					want[sec.name] = true
				}
			}
		default:
			want[s] = true
		}
	}
	if len(c.Args) == 1 {
		for _, sec := range infoSections {
			want[sec.name] = sec.isDefault
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if !(all || everything || want[sec.name]) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + strings.ToUpper(sec.name[:1]) + sec.name[1:] + "\r\n")
		sec.write(c, &b)
	}
	c.W.Verbatim("txt", b.String())
}

func kv(b *strings.Builder, k string, v any) {
	fmt.Fprintf(b, "%s:%v\r\n", k, v)
}

func infoServer(c *Ctx, b *strings.Builder) {
	st := c.Srv.Stats()
	up := time.Since(st.Started)
	var uts syscall.Utsname
	osName := runtime.GOOS
	if syscall.Uname(&uts) == nil {
		osName = fmt.Sprintf("%s %s %s", utsString(uts.Sysname[:]), utsString(uts.Release[:]), utsString(uts.Machine[:]))
	}
	kv(b, "redis_version", RedisVersion)
	kv(b, "lavik_version", Version)
	kv(b, "redis_mode", "standalone")
	kv(b, "os", osName)
	kv(b, "arch_bits", strconv.IntSize)
	kv(b, "go_version", runtime.Version())
	kv(b, "process_id", os.Getpid())
	kv(b, "run_id", st.RunID)
	kv(b, "tcp_port", st.Port)
	kv(b, "server_time_usec", time.Now().UnixMicro())
	kv(b, "uptime_in_seconds", int64(up.Seconds()))
	kv(b, "uptime_in_days", int64(up.Hours()/24))
	kv(b, "hz", c.Srv.Config().Get("hz"))
	kv(b, "configured_hz", c.Srv.Config().Get("hz"))
	kv(b, "executable", st.Executable)
	kv(b, "config_file", st.ConfigFile)
	ks := c.KS.Stats(c.Sess)
	kv(b, "lavik_shards", ks.Shards)
	kv(b, "lavik_io_engine", ks.EngineName)
}

func utsString(a []int8) string {
	var sb strings.Builder
	for _, ch := range a {
		if ch == 0 {
			break
		}
		sb.WriteByte(byte(ch))
	}
	return sb.String()
}

func infoClients(c *Ctx, b *strings.Builder) {
	st := c.Srv.Stats()
	kv(b, "connected_clients", st.ConnectedClients)
	kv(b, "maxclients", c.Srv.Config().Get("maxclients"))
	kv(b, "blocked_clients", st.BlockedClients)
}

func humanBytes(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "K", "M", "G", "T"} {
		if f < 1024 || u == "T" {
			return strconv.FormatFloat(f, 'f', 2, 64) + u
		}
		f /= 1024
	}
	return ""
}

// RSS returns the process's resident set size from /proc/self/statm.
func RSS() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func infoMemory(c *Ctx, b *strings.Builder) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// used_memory is what maxmemory bounds (keyspace.MemoryUsed): the Go heap's live objects,
	// the index's keys and the value cache.
	c.KS.RefreshUse()
	used := c.KS.MemoryUsed()
	rss := RSS()
	ks := c.KS.Stats(c.Sess)
	kv(b, "used_memory", used)
	kv(b, "used_memory_human", humanBytes(used))
	kv(b, "used_memory_rss", rss)
	kv(b, "used_memory_rss_human", humanBytes(rss))
	// The peak is the Go heap's size, which never shrinks below what was once in use.
	peak := max(int64(ms.HeapSys)+ks.IndexBytes, used)
	kv(b, "used_memory_peak", peak)
	kv(b, "used_memory_peak_human", humanBytes(peak))
	kv(b, "total_system_memory", totalMemory())
	kv(b, "total_system_memory_human", humanBytes(totalMemory()))
	maxmem := c.Srv.Config().Int("maxmemory")
	kv(b, "maxmemory", maxmem)
	kv(b, "maxmemory_human", humanBytes(maxmem))
	kv(b, "maxmemory_policy", c.Srv.Config().Get("maxmemory-policy"))
	frag := 0.0
	if used > 0 {
		frag = float64(rss) / float64(used)
	}
	kv(b, "mem_fragmentation_ratio", strconv.FormatFloat(frag, 'f', 2, 64))
	kv(b, "mem_fragmentation_bytes", rss-used)
	kv(b, "mem_allocator", "go")
	kv(b, "lavik_index_bytes", ks.IndexBytes)
	kv(b, "lavik_disk_used", c.KS.DiskUsed())
	kv(b, "lavik_maxdisk", c.Srv.Config().Int("maxdisk"))
	kv(b, "lavik_log_tail_bytes", ks.Log.TailBytes)
	kv(b, "lavik_value_cache_bytes", valueCacheStats().Bytes)
	kv(b, "lavik_dir_cache_bytes", ks.DirCache.Bytes)
	kv(b, "lavik_dir_cache_entries", ks.DirCache.Entries)
	kv(b, "lavik_gc_cycles", ms.NumGC)
	kv(b, "lavik_gc_pause_total_ns", ms.PauseTotalNs)
	p := gcPauses()
	kv(b, "lavik_gc_pauses", p.count)
	kv(b, "lavik_gc_pause_p50_us", p.p50)
	kv(b, "lavik_gc_pause_p99_us", p.p99)
	kv(b, "lavik_gc_pause_max_us", p.max)
	kv(b, "lavik_gc_stopping_p99_us", p.stopP99)
}

// gcPauseSummary is what INFO reports of the collector's stop-the-world pauses since start or
// the last CONFIG RESETSTAT.
type gcPauseSummary struct {
	count         uint64
	p50, p99, max int64 // microseconds, upper bucket bounds
	stopP99       int64
}

// gcPauseBase is the snapshot taken at the last CONFIG RESETSTAT, to subtract.
var gcPauseBase struct {
	sync.Mutex
	snap gcpause.Snapshot
}

// resetGCPauses makes INFO's pause figures start again from now.
func resetGCPauses() {
	snap := gcpause.Read()
	gcPauseBase.Lock()
	gcPauseBase.snap = snap
	gcPauseBase.Unlock()
}

func gcPauses() gcPauseSummary {
	now := gcpause.Read()
	gcPauseBase.Lock()
	d := now.Since(gcPauseBase.snap)
	gcPauseBase.Unlock()
	us := func(h *metrics.Float64Histogram, q float64) int64 {
		return int64(math.Ceil(gcpause.Quantile(h, q) * 1e6))
	}
	return gcPauseSummary{count: gcpause.Count(d.Total), p50: us(d.Total, 0.5), p99: us(d.Total, 0.99),
		max: us(d.Total, 1), stopP99: us(d.Stopping, 0.99)}
}

func totalMemory() int64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

func infoPersistence(c *Ctx, b *strings.Builder) {
	ks := c.KS.Stats(c.Sess)
	status := "ok"
	if c.KS.WriteErr() != nil {
		status = "err"
	}
	kv(b, "loading", 0)
	kv(b, "async_loading", 0)
	// There are no RDB snapshots: as a Redis server that never saved, the changes since the
	// start (write commands that succeeded) and the start as the last save.
	kv(b, "rdb_changes_since_last_save", writesSinceStart())
	kv(b, "rdb_bgsave_in_progress", 0)
	kv(b, "rdb_last_save_time", c.Srv.Stats().Started.Unix())
	kv(b, "rdb_last_bgsave_status", "ok")
	kv(b, "rdb_last_bgsave_time_sec", -1)
	kv(b, "rdb_current_bgsave_time_sec", -1)
	kv(b, "aof_enabled", 1)
	kv(b, "aof_rewrite_in_progress", 0)
	kv(b, "aof_last_write_status", status)
	kv(b, "appendfsync", c.Srv.Config().Get("appendfsync"))
	kv(b, "lavik_load_time_sec", strconv.FormatFloat(ks.LoadTime, 'f', 3, 64))
	kv(b, "lavik_segments", ks.Log.Segments)
	kv(b, "lavik_disk_bytes", ks.Log.DiskBytes)
	// Reclamation (keyspace/reclaim.go): live and dead bytes of the segments, and what the
	// background collector did; pending bytes are dropped segments that readers still hold.
	kv(b, "lavik_live_bytes", ks.Reclaim.LiveBytes)
	kv(b, "lavik_dead_bytes", ks.Reclaim.DeadBytes)
	kv(b, "lavik_reclaim_rate", ks.Reclaim.Rate)
	kv(b, "lavik_reclaim_segments_total", ks.Reclaim.Segments)
	kv(b, "lavik_reclaim_bytes_scanned", ks.Reclaim.BytesScanned)
	kv(b, "lavik_reclaim_bytes_moved", ks.Reclaim.BytesMoved)
	kv(b, "lavik_reclaim_bytes_freed", ks.Reclaim.BytesFreed)
	kv(b, "lavik_reclaim_records_kept", ks.Reclaim.RecordsKept)
	kv(b, "lavik_reclaim_pending_bytes", ks.Reclaim.PendingBytes)
	// What collecting costs: CPU, and I/O (segments read plus records written again), per MB
	// freed; the pace it keeps (bytes/s of I/O, -1 unbounded) and the client append rate it follows.
	rc := ks.Reclaim
	kv(b, "lavik_reclaim_cpu_us", rc.CPU.Microseconds())
	perMB := func(v float64) string {
		if rc.BytesFreed == 0 {
			return "0"
		}
		return strconv.FormatFloat(v/(float64(rc.BytesFreed)/(1<<20)), 'f', 2, 64)
	}
	kv(b, "lavik_reclaim_cpu_us_per_mb_freed", perMB(float64(rc.CPU.Microseconds())))
	kv(b, "lavik_reclaim_io_mb_per_mb_freed", perMB(float64(rc.BytesScanned+rc.BytesMoved)/(1<<20)))
	kv(b, "lavik_reclaim_pace", rc.Paced)
	kv(b, "lavik_reclaim_client_append_rate", rc.AppendRate)
	kv(b, "lavik_log_appends", ks.Log.Appends)
	kv(b, "lavik_log_writes", ks.Log.Writes)
	kv(b, "lavik_log_syncs", ks.Log.Syncs)
	kv(b, "lavik_log_bytes_written", ks.Log.BytesWritten)
	kv(b, "lavik_corrupt_records", ks.Log.Corrupt+ks.CorruptReads)
	kv(b, "lavik_torn_tail_bytes_cut", ks.Log.TornBytesCut)
	kv(b, "lavik_corrupt_ranges_repaired", ks.Log.Repaired)
	// Index checkpoints (keyspace/checkpoint.go), and what the last start loaded and replayed.
	ck := ks.Checkpoint
	lastAgo := int64(-1) // no checkpoint
	if ck.LastUnixMs > 0 {
		lastAgo = (time.Now().UnixMilli() - ck.LastUnixMs) / 1000
	}
	kv(b, "lavik_checkpoints_total", ck.Written)
	kv(b, "lavik_checkpoint_failures", ck.Failed)
	kv(b, "lavik_checkpoint_last_seconds_ago", lastAgo)
	kv(b, "lavik_checkpoint_last_duration_sec", strconv.FormatFloat(ck.LastDuration.Seconds(), 'f', 3, 64))
	kv(b, "lavik_checkpoint_entries", ck.Entries)
	kv(b, "lavik_checkpoint_tail_bytes", ck.TailBytes)
	kv(b, "lavik_load_checkpoint_entries", ck.LoadedEntries)
	kv(b, "lavik_load_replayed_records", ck.ReplayedRecords)
	kv(b, "lavik_load_replayed_bytes", ck.ReplayedBytes)
	kv(b, "lavik_load_checkpoints_rejected", ck.Rejected)
	kv(b, "lavik_load_dangling_entries_dropped", ck.DanglingDropped)
}

func infoStats(c *Ctx, b *strings.Builder) {
	st := c.Srv.Stats()
	ks := c.KS.Stats(c.Sess)
	kv(b, "total_connections_received", st.ConnectionsReceived)
	kv(b, "total_commands_processed", st.CommandsProcessed)
	kv(b, "instantaneous_ops_per_sec", st.OpsPerSec)
	kv(b, "total_net_input_bytes", st.NetInputBytes)
	kv(b, "total_net_output_bytes", st.NetOutputBytes)
	kv(b, "rejected_connections", st.RejectedConnections)
	kv(b, "expired_keys", ks.ExpiredKeys)
	kv(b, "evicted_keys", c.KS.EvictedKeys())
	kv(b, "keyspace_hits", ks.Hits)
	kv(b, "keyspace_misses", ks.Misses)
	kv(b, "pubsub_channels", c.PS.Len(pubsub.Channel))
	kv(b, "pubsub_patterns", c.PS.Len(pubsub.Pattern))
	kv(b, "pubsubshard_channels", c.PS.Len(pubsub.Shard))
	rs := c.Repl.Stats()
	kv(b, "sync_full", rs.SyncFull)
	kv(b, "sync_partial_ok", rs.SyncPartialOK)
	kv(b, "sync_partial_err", rs.SyncPartialErr)
	kv(b, "total_error_replies", st.TotalErrorReplies)
	kv(b, "client_query_buffer_limit_disconnections", st.ClientQueryBufLimitKills)
	kv(b, "client_output_buffer_limit_disconnections", st.ClientOutputBufLimitKills)
	kv(b, "lavik_protocol_errors", st.ProtocolErrors)
	kv(b, "lavik_engine_reads", ks.Engine.Reads)
	kv(b, "lavik_engine_read_bytes", ks.Engine.Bytes)
	kv(b, "lavik_engine_batches", ks.Engine.Batches)
	kv(b, "lavik_engine_errors", ks.Engine.Errors)
	kv(b, "lavik_engine_submits", ks.Engine.Submits)
	kv(b, "lavik_engine_wakeups", ks.Engine.Wakeups)
	kv(b, "lavik_engine_fixed_buffer_reads", ks.Engine.FixedReads)
	kv(b, "lavik_engine_deferred_submits", ks.Engine.Deferred)
	vc := valueCacheStats()
	kv(b, "lavik_value_cache_hits", vc.Hits)
	kv(b, "lavik_value_cache_misses", vc.Misses)
	kv(b, "lavik_value_cache_evictions", vc.Evictions)
	kv(b, "lavik_dir_cache_hits", ks.DirCache.Hits)
	kv(b, "lavik_dir_cache_misses", ks.DirCache.Misses)
}

// valueCache is the process's hot-value cache (nil when off), set once by main. It is reached
// here rather than through keyspace.Stats because the cache is one object shared by every
// shard's log, not a per-shard figure to sum.
var valueCache atomic.Pointer[vlog.Cache]

// SetValueCache tells INFO which value cache to report.
func SetValueCache(c *vlog.Cache) { valueCache.Store(c) }

func valueCacheStats() vlog.CacheStats {
	if c := valueCache.Load(); c != nil {
		return c.Stats()
	}
	return vlog.CacheStats{}
}

func infoReplication(c *Ctx, b *strings.Builder) { c.Repl.Info(b) }

func infoCPU(c *Ctx, b *strings.Builder) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) string {
		return strconv.FormatFloat(float64(t.Sec)+float64(t.Usec)/1e6, 'f', 6, 64)
	}
	kv(b, "used_cpu_sys", tv(ru.Stime))
	kv(b, "used_cpu_user", tv(ru.Utime))
	var ch syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ch)
	kv(b, "used_cpu_sys_children", tv(ch.Stime))
	kv(b, "used_cpu_user_children", tv(ch.Utime))
	// Lavik has no main thread: its event loops and background work share the process's
	// threads, so the main thread's figures are the process's.
	kv(b, "used_cpu_sys_main_thread", tv(ru.Stime))
	kv(b, "used_cpu_user_main_thread", tv(ru.Utime))
}

func infoCommandstats(c *Ctx, b *strings.Builder) {
	for _, cmd := range AllWithSubcommands() {
		calls := cmd.Stats.Calls.Load()
		rej := cmd.Stats.Rejected.Load()
		failed := cmd.Stats.Failed.Load()
		if calls == 0 && rej == 0 && failed == 0 {
			continue
		}
		usec := cmd.Stats.Usec.Load()
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			cmd.Name, calls, usec, per, rej, failed)
	}
}

func infoKeyspace(c *Ctx, b *strings.Builder) {
	for db, d := range c.KS.Info(c.Sess) {
		if d.Keys == 0 {
			continue
		}
		fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=%d\r\n", db, d.Keys, d.Expires, d.AvgTTLMs)
	}
}
