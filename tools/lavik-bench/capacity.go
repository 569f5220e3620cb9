package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The capacity benchmark: does lavik-data keep its read throughput when the values no longer
// fit in memory? It runs the server in a memory cgroup (cgroup.go) that caps its heap and the
// page cache charged to it together, loads a base dataset and measures GET, then grows the
// dataset well past the limit and measures the same cells again. The index stays in DRAM by
// design; the values must come from the SSD.
//
// The two sizes cannot alternate the way compare alternates servers: the small dataset exists
// only until it is grown. Rounds alternate within each size; drift between the sizes (other
// tenants, the page cache) is not cancelled, which the report says, next to the spread.

// capacityTarget is the requirement the report checks the ratio against: GET throughput with
// all keys at least 90% of the base figure (the larger-than-memory criterion). Missing
// it is reported, not an error: exit statuses are for wrong answers, not for speed.
const capacityTarget = 0.90

// capacityStopTimeout bounds the server's shutdown at the end (it writes index checkpoints).
const capacityStopTimeout = 5 * time.Minute

// capacityMethod explains the schedule in the report.
const capacityMethod = "the server starts empty (inside its cgroup when there is a limit); the base keys are loaded and GET is " +
	"measured in every cell over them, the rounds walking all cells in turn; then the dataset grows to all keys (the base " +
	"keys unchanged) and the same cells are measured over all keys. The sizes cannot alternate (the small dataset is gone " +
	"once grown), so drift between them is not cancelled: read the ratio against the spread"

// memSnapshot is the server's memory and disk at one point of the run.
type memSnapshot struct {
	Point     string       `json:"point"`
	Keys      int          `json:"keys"`
	AtS       float64      `json:"at_s"` // since the server started
	RSS       int64        `json:"rss_bytes"`
	PeakRSS   int64        `json:"peak_rss_bytes"` // VmHWM: the most the server has had resident so far
	Cgroup    *cgroupStats `json:"cgroup,omitempty"`
	DiskBytes int64        `json:"disk_bytes"` // blocks allocated under the data directory
	FileBytes int64        `json:"file_bytes"` // sizes of its files
	// ReadBytes and WriteBytes are what the server has read from and written to storage so far
	// (/proc/PID/io; reads served by the page cache do not count).
	ReadBytes  int64             `json:"disk_read_bytes"`
	WriteBytes int64             `json:"disk_write_bytes"`
	Smaps      map[string]int64  `json:"smaps_rollup,omitempty"`
	Info       map[string]string `json:"info_memory,omitempty"`
}

// CapacityCell is one row of the capacity table: a cell measured over the base keys and over all.
type CapacityCell struct {
	Workload string     `json:"workload"`
	Conns    int        `json:"conns"`
	Pipeline int        `json:"pipeline"`
	Base     SystemCell `json:"base"`
	All      SystemCell `json:"all"`
	QPSRatio float64    `json:"ops_per_sec_ratio_all_base,omitempty"`
	P99Ratio float64    `json:"p99_ratio_all_base,omitempty"`
}

// capacityReport is the JSON document of `capacity`.
type capacityReport struct {
	Command     string `json:"command"`
	Lavik       string `json:"lavik_cmd"`
	MemoryLimit int64  `json:"memory_limit_bytes"`
	Cgroup      string `json:"cgroup,omitempty"`
	BaseKeys    int    `json:"base_keys"`
	roundSettings
	Method      string         `json:"method"`
	Loads       []LoadResult   `json:"loads"`
	Cells       []CapacityCell `json:"cells"`
	MinQPSRatio float64        `json:"min_ops_per_sec_ratio,omitempty"`
	Target      float64        `json:"target_ratio"`
	Memory      []memSnapshot  `json:"memory"`
	Sampled     samplerSummary `json:"sampled"`
	ServerStopS float64        `json:"sigterm_to_exit_s,omitempty"`
	ServerExit  string         `json:"server_exit,omitempty"`
	LogTail     string         `json:"server_log_tail,omitempty"` // when the run failed
	reportOutcome
}

// capacityRun is the state of one `capacity` run.
type capacityRun struct {
	cfg     capacityConfig
	srv     *serverProc
	cg      *memCgroup
	ks      *Keyspace
	sampler *memSampler
	cells   []cell
	runs    [2][][]RunResult // [base, all][cell][round]
	stderr  io.Writer
	rep     capacityReport
	v       verdict
	oomSaid bool // a problem already names the OOM kills
}

const (
	phaseBase = 0
	phaseAll  = 1
)

// capacityCommand is `lavik-bench capacity`.
func capacityCommand(ctx context.Context, cfg capacityConfig, stdout, stderr io.Writer) (code int, err error) {
	out := cfg.setup(stdout, stderr)
	workdir := cfg.Workdir
	if workdir == "" {
		workdir = os.TempDir()
	}
	if err := checkWorkdir(workdir, cfg); err != nil {
		return exitUsage, usageError(err)
	}
	root, err := os.MkdirTemp(workdir, "lavik-bench-capacity-")
	if err != nil {
		return exitUsage, usageError(err)
	}
	r := &capacityRun{cfg: cfg, stderr: stderr,
		srv: newServerProc("lavik", cfg.LavikArgv, filepath.Join(root, "lavik"), logPath(root, "lavik"))}
	cleaned := false
	cleanup := func() {
		if cleaned {
			return
		}
		cleaned = true
		r.stop()
		if cfg.Keep {
			fmt.Fprintf(stderr, "data directory and server log kept in %s\n", root)
		} else if err := os.RemoveAll(root); err != nil {
			r.v.problems = append(r.v.problems, "removing the data directory: "+err.Error())
		}
	}
	defer cleanup()
	if cfg.MemoryLimit > 0 {
		if r.cg, err = newMemCgroup("lavik", cfg.MemoryLimit); err != nil {
			return exitUsage, usageError(fmt.Errorf("--memory-limit %s needs a memory cgroup (root, and cgroup v2 with the memory "+
				"controller or the v1 memory hierarchy); --memory-limit 0 runs without one: %w", humanBytes(float64(cfg.MemoryLimit)), err))
		}
		r.srv.afterStart = r.cg.addProc
	}

	r.cells = buildCells(compareConfig{Workloads: []Workload{{Name: "get", ReadFrac: 1}}, Conns: cfg.Conns, Pipelines: cfg.Pipelines})
	r.runs = [2][][]RunResult{make([][]RunResult, len(r.cells)), make([][]RunResult, len(r.cells))}
	limit := "no memory limit"
	if r.cg != nil {
		limit = "memory limit " + humanBytes(float64(r.cg.limit)) + " in " + r.cg.String()
	}
	fmt.Fprintf(stderr, "lavik-bench capacity: %s keys then %s keys, %d cells x %d rounds at each, %s; about %v of measurement plus loading\n",
		commas(int64(cfg.BaseKeys)), commas(int64(cfg.Keys)), len(r.cells), cfg.Rounds, limit,
		time.Duration(2*len(r.cells)*cfg.Rounds)*(cfg.Warmup+cfg.Duration))

	d, err := r.srv.start(ctx, cfg.StartTimeout, -1)
	if err != nil {
		return setupFailure(ctx, err)
	}
	fmt.Fprintf(stderr, "started lavik (pid %d) on %s in %.2fs: %s\n", r.srv.pid(), r.srv.addr, d.Seconds(), r.srv.commandLine())
	r.sampler = startSampler(r.srv.pid(), r.cg, time.Second)
	r.rep = capacityReport{Command: "capacity", Lavik: r.srv.commandLine(), MemoryLimit: cfg.MemoryLimit, BaseKeys: cfg.BaseKeys,
		roundSettings: newRoundSettings(cfg.commonConfig, cfg.Rounds), Method: capacityMethod, Target: capacityTarget}
	if r.cg != nil {
		r.rep.Cgroup = r.cg.String()
	}
	r.snapshot("empty", 0, true)
	r.ks = newKeyspace(stringPrefix, kindString, cfg.Keys)
	r.ks.Value = cfg.Value

	if err := r.steps(ctx); err != nil {
		if ctx.Err() != nil || errors.Is(err, errInterrupted) {
			return exitInterrupted, errInterrupted
		}
		r.fail(err)
		r.snapshot("at failure", r.loadedKeys(), true)
	}
	cleanup()
	return r.report(out, stdout)
}

// checkWorkdir refuses a data directory in memory (a tmpfs would hold the values in RAM and
// charge them to the cgroup) or on a file system without room for them.
func checkWorkdir(dir string, cfg capacityConfig) error {
	avail, tmpfs, err := fsSpace(dir)
	if err != nil {
		return fmt.Errorf("--workdir %s: %w", dir, err)
	}
	if tmpfs {
		return fmt.Errorf("--workdir %s is a tmpfs: the values would live in memory; give a directory on the disk under test", dir)
	}
	// Per record: the value, the key and some framing; an estimate, to fail before loading.
	need := int64(float64(cfg.Keys) * (cfg.Value.mean() + keyLen + 64))
	if avail >= 0 && avail < need {
		return fmt.Errorf("--workdir %s: %s keys of %s need about %s; %s available", dir, commas(int64(cfg.Keys)), cfg.Value,
			humanBytes(float64(need)), humanBytes(float64(avail)))
	}
	return nil
}

// steps loads and measures the two dataset sizes.
func (r *capacityRun) steps(ctx context.Context) error {
	sizes := [2][2]int{{0, r.cfg.BaseKeys}, {r.cfg.BaseKeys, r.cfg.Keys}}
	for phase, rng := range sizes {
		lr, err := loadRange(ctx, r.cfg.loadParams(phaseSystem(rng[1]), r.srv.addr, r.stderr), r.ks, rng[0], rng[1])
		if err != nil {
			return err
		}
		fmt.Fprintln(r.stderr, lr)
		r.rep.Loads = append(r.rep.Loads, lr)
		r.snapshot("loaded "+shortCount(rng[1]), rng[1], true)
		if err := r.measure(ctx, phase, rng[1]); err != nil {
			return err
		}
		r.snapshot("measured "+shortCount(rng[1]), rng[1], true)
	}
	return nil
}

// measure runs every cell --rounds times with GET uniform (or --dist) over the first n keys.
func (r *capacityRun) measure(ctx context.Context, phase, n int) error {
	chooser := newChooser(r.cfg.Dist, n)
	get := r.cells[0].wl
	for round := 0; round < r.cfg.Rounds; round++ {
		for ci, c := range r.cells {
			p := runParams{System: phaseSystem(n), Addr: r.srv.addr, Workload: get, Conns: c.conns, Pipeline: c.pipeline,
				Warmup: r.cfg.Warmup, Duration: r.cfg.Duration, Timeout: r.cfg.Timeout, VerifySample: r.cfg.VerifySample,
				Seed: r.cfg.Seed, ServerPID: r.srv.pid(), Round: round + 1}
			res, err := runPoint(ctx, p, r.ks, chooser)
			if ctx.Err() != nil {
				return errInterrupted
			}
			if err != nil {
				return fmt.Errorf("%s conns=%d pipeline=%d: %w", p.System, c.conns, c.pipeline, err)
			}
			fmt.Fprintf(r.stderr, "round %d/%d  %-9s conns=%-4d pipeline=%-3d %s ops/s  p99 %s ms  server CPU %.0f%%  errors: %s\n",
				round+1, r.cfg.Rounds, p.System, c.conns, c.pipeline, qps(res.Total.QPS), ms(res.Total.P99Ms), res.ServerCPU, res.Errors)
			r.runs[phase][ci] = append(r.runs[phase][ci], res)
			r.v.addRun(res)
			if !r.srv.running() {
				return fmt.Errorf("%s conns=%d pipeline=%d: the server is gone", p.System, c.conns, c.pipeline)
			}
		}
	}
	return nil
}

// fail records what stopped the run, and how the server ended if that is why.
func (r *capacityRun) fail(err error) {
	msg := err.Error()
	if r.srv.exitedWithin(2 * time.Second) {
		msg += "; lavik-data exited: " + r.srv.exitState()
		if st, err := r.cgStats(); err == nil && st.OOMKills > 0 {
			msg += fmt.Sprintf(" (cgroup OOM kills: %d)", st.OOMKills)
			r.oomSaid = true
		}
	}
	r.v.problems = append(r.v.problems, msg)
}

func (r *capacityRun) cgStats() (cgroupStats, error) {
	if r.cg == nil {
		return cgroupStats{}, errors.New("no cgroup")
	}
	return r.cg.stats()
}

// loadedKeys is the number of keys the loads so far wrote (they start from 0).
func (r *capacityRun) loadedKeys() int {
	if n := len(r.rep.Loads); n > 0 {
		return r.rep.Loads[n-1].First + r.rep.Loads[n-1].Keys
	}
	return 0
}

// snapshot records the server's memory and disk; detail adds smaps_rollup and INFO memory (not
// taken inside a measured window: INFO memory stops the server's world to read its heap).
func (r *capacityRun) snapshot(point string, keys int, detail bool) {
	s := memSnapshot{Point: point, Keys: keys, AtS: r.sampler.since()}
	pid := r.srv.pid()
	if r.srv.running() {
		s.RSS, _ = rssBytes(pid)
		s.PeakRSS, _ = peakRSSBytes(pid)
		s.ReadBytes, s.WriteBytes, _ = procIO(pid)
		if detail {
			s.Smaps, _ = smapsRollup(pid)
			s.Info, _ = infoSection(r.srv.addr, "memory")
		}
	}
	if st, err := r.cgStats(); err == nil {
		s.Cgroup = &st
	}
	s.FileBytes, s.DiskBytes, _ = diskUsage(r.srv.dir)
	r.rep.Memory = append(r.rep.Memory, s)
}

// stop ends the server, then removes its cgroup; failures are problems of the run.
func (r *capacityRun) stop() {
	if r.srv.running() {
		d, status, err := r.srv.stop(capacityStopTimeout)
		r.rep.ServerStopS = d.Seconds()
		switch {
		case err != nil:
			r.v.problems = append(r.v.problems, err.Error())
		case status != 0:
			r.v.problems = append(r.v.problems, fmt.Sprintf("lavik-data exited with status %d after SIGTERM", status))
		}
	}
	if r.sampler != nil {
		r.rep.Sampled = r.sampler.finish()
	}
	if r.srv.cmd != nil {
		r.rep.ServerExit = r.srv.exitState()
		r.snapshot("stopped", r.loadedKeys(), false) // the cgroup's peak now covers the shutdown
	}
	if r.cg != nil {
		if st, err := r.cg.stats(); err == nil && st.OOMKills > 0 && !r.oomSaid {
			r.v.problems = append(r.v.problems, fmt.Sprintf("the OOM killer killed %d process(es) in the server's cgroup", st.OOMKills))
		}
		if err := r.cg.remove(30 * time.Second); err != nil {
			r.v.problems = append(r.v.problems, err.Error())
		}
		r.cg = nil
	}
}

// report prints the table and writes the output files.
func (r *capacityRun) report(out, stdout io.Writer) (int, error) {
	cfg, rep := r.cfg, &r.rep
	var all []RunResult
	for ci, c := range r.cells {
		cc := CapacityCell{Workload: c.wl.Name, Conns: c.conns, Pipeline: c.pipeline,
			Base: summarizeRuns(r.runs[phaseBase][ci]), All: summarizeRuns(r.runs[phaseAll][ci])}
		if cc.Base.QPS > 0 && cc.All.QPS > 0 {
			cc.QPSRatio = cc.All.QPS / cc.Base.QPS
			if rep.MinQPSRatio == 0 || cc.QPSRatio < rep.MinQPSRatio {
				rep.MinQPSRatio = cc.QPSRatio
			}
		}
		if cc.Base.P99Ms > 0 && cc.All.P99Ms > 0 {
			cc.P99Ratio = cc.All.P99Ms / cc.Base.P99Ms
		}
		rep.Cells = append(rep.Cells, cc)
		all = append(all, r.runs[phaseBase][ci]...)
		all = append(all, r.runs[phaseAll][ci]...)
	}
	if r.v.failed() {
		rep.LogTail = lastLines(r.srv.tail.String(), 30)
	}
	base, full := shortCount(cfg.BaseKeys), shortCount(cfg.Keys)
	limit := "no memory limit"
	if rep.Cgroup != "" {
		limit = "a " + humanBytes(float64(cfg.MemoryLimit)) + " memory cgroup"
	}
	fmt.Fprintf(out, "\nlavik-bench capacity: GET on lavik-data in %s, %s keys then %s keys\n", limit, base, full)
	fmt.Fprintf(out, "%s keys, values %s, %s keys; warm-up %v + window %v per point; %s of reads compared byte for byte\n",
		commas(int64(cfg.Keys)), cfg.Value, cfg.Dist, cfg.Warmup, cfg.Duration, pct(cfg.VerifySample))
	fmt.Fprintf(out, "lavik: %s\n", rep.Lavik)
	if rep.Cgroup != "" {
		fmt.Fprintf(out, "cgroup: %s, limit %s (heap and page cache together; removed at the end)\n", rep.Cgroup, humanBytes(float64(cfg.MemoryLimit)))
	}
	agg := fmt.Sprintf("Figures are medians over %d rounds; spread = (max-min)/median of ops/s.", cfg.Rounds)
	if cfg.Rounds == 1 {
		agg = "Figures are from 1 round."
	}
	fmt.Fprintf(out, "%s\n\n", wrapText("method: "+capacityMethod+". "+agg, 100))
	writeCapacityTable(out, rep.Cells, base, full)
	fmt.Fprintln(out)
	writeCapacityMemory(out, rep.Memory)
	fmt.Fprintln(out)
	for _, l := range rep.Loads {
		fmt.Fprintln(out, l)
	}
	for _, s := range rep.Memory {
		if s.Info != nil || s.Smaps != nil {
			fmt.Fprintf(out, "%s: %s\n", s.Point, memoryDetail(s))
		}
	}
	if io := phaseIO(rep.Memory); io != "" {
		fmt.Fprintf(out, "disk I/O of lavik-data: %s\n", io)
	}
	if rep.ServerStopS > 0 {
		fmt.Fprintf(out, "SIGTERM to exit: %.1fs (%s)\n", rep.ServerStopS, rep.ServerExit)
	}
	if sm := rep.Sampled; sm.Samples > 0 {
		fmt.Fprintf(out, "sampled every %v over the whole run, shutdown included (%d samples): highest RSS %s, highest cgroup anon %s; last sample at %.1fs: RSS %s%s\n",
			sm.Interval, sm.Samples, humanBytes(float64(sm.MaxRSS)), humanBytes(float64(sm.MaxAnon)), sm.Last.AtS,
			humanBytes(float64(sm.Last.RSS)), cgroupBrief(sm.Last.Cgroup))
	}
	if rep.MinQPSRatio > 0 && len(rep.Cells) > 0 && len(rep.Cells[0].All.Rounds) > 0 {
		verdict := "met"
		if rep.MinQPSRatio < capacityTarget {
			verdict = "NOT met"
		}
		fmt.Fprintf(out, "lowest GET ops/s ratio %s/%s: %.2fx (target %.2fx: %s)\n", full, base, rep.MinQPSRatio, capacityTarget, verdict)
	}
	if rep.LogTail != "" {
		fmt.Fprintf(out, "lavik-data exit: %s; last lines of its log:\n%s\n", rep.ServerExit, indent(rep.LogTail, "  "))
	}
	fmt.Fprintln(out)
	r.v.write(out)
	code := r.v.exitCode()
	rep.reportOutcome = newReportOutcome(code, r.v)
	if err := writeOutputs(cfg.commonConfig, stdout, rep, all, capacityChart(rep.Cells, base, full, len(cfg.Pipelines) > 1),
		fmt.Sprintf("GET, %s then %s keys in %s; medians over %d rounds", base, full, limit, cfg.Rounds)); err != nil {
		return exitErrors, &exitError{code: exitErrors, err: err}
	}
	return code, nil
}

func writeCapacityTable(w io.Writer, cells []CapacityCell, base, full string) {
	t := &table{left: 0}
	t.add("conns", "pipe", "|", base+" keys ops/s", "spread", "p99 ms", "|", full+" keys ops/s", "spread", "p99 ms",
		"|", "ops/s "+full+"/"+base, "p99 "+full+"/"+base)
	for _, c := range cells {
		row := []string{strconv.Itoa(c.Conns), strconv.Itoa(c.Pipeline), "|"}
		row = append(row, systemCellColumns(c.Base)...)
		row = append(row, "|")
		row = append(row, systemCellColumns(c.All)...)
		row = append(row, "|", ratio(c.All.QPS, c.Base.QPS), ratio(c.All.P99Ms, c.Base.P99Ms))
		t.add(row...)
	}
	t.write(w)
}

func writeCapacityMemory(w io.Writer, snaps []memSnapshot) {
	t := &table{left: 1}
	t.add("lavik-data", "keys", "RSS", "peak RSS", "|", "cgroup usage", "peak", "anon", "page cache", "limit hits", "OOM kills", "|", "data dir")
	for _, s := range snaps {
		row := []string{s.Point, commas(int64(s.Keys)), bytesOrDash(s.RSS), bytesOrDash(s.PeakRSS), "|"}
		if c := s.Cgroup; c != nil {
			row = append(row, humanBytes(float64(c.Usage)), bytesOrDash(c.Peak), humanBytes(float64(c.Anon)), humanBytes(float64(c.File)),
				commas(c.LimitHits), commas(c.OOMKills))
		} else {
			row = append(row, "-", "-", "-", "-", "-", "-")
		}
		row = append(row, "|", humanBytes(float64(s.DiskBytes)))
		t.add(row...)
	}
	t.write(w)
	fmt.Fprintln(w, "RSS and peak RSS (VmRSS, VmHWM) of the server process; cgroup figures include the page cache charged to it, and")
	fmt.Fprintln(w, "its peak after \"stopped\" covers the shutdown; limit hits: memory.failcnt (v1) or \"max\" events (v2), times usage")
	fmt.Fprintln(w, "reached the limit and the kernel had to reclaim (some v1 kernels leave failcnt at 0); data dir: blocks on disk")
}

// phaseIO describes what the server read from and wrote to storage while loading and while
// measuring each size: with the values out of memory, measuring reads from the disk.
func phaseIO(snaps []memSnapshot) string {
	var parts []string
	for i := 1; i < len(snaps); i++ {
		a, b := snaps[i-1], snaps[i]
		if b.RSS == 0 || a.RSS == 0 { // a point without the process
			continue
		}
		secs := b.AtS - a.AtS
		read, written := b.ReadBytes-a.ReadBytes, b.WriteBytes-a.WriteBytes
		switch {
		case strings.HasPrefix(b.Point, "loaded "):
			parts = append(parts, fmt.Sprintf("%s: wrote %s, read %s in %.0fs", strings.Replace(b.Point, "loaded", "loading", 1),
				humanBytes(float64(written)), humanBytes(float64(read)), secs))
		case strings.HasPrefix(b.Point, "measured "):
			parts = append(parts, fmt.Sprintf("%s: read %s in %.0fs (%s/s)", strings.Replace(b.Point, "measured", "measuring", 1),
				humanBytes(float64(read)), secs, humanBytes(float64(read)/max(secs, 1e-9))))
		}
	}
	return strings.Join(parts, "; ")
}

func bytesOrDash(n int64) string {
	if n <= 0 {
		return "-"
	}
	return humanBytes(float64(n))
}

// memoryDetail summarizes where the server's memory is: its INFO memory and smaps_rollup.
func memoryDetail(s memSnapshot) string {
	var parts []string
	for _, f := range []struct{ key, label string }{
		{"used_memory", "heap in use"}, {"used_memory_peak", "heap reserved"}, {"lavik_index_bytes", "index"},
		{"lavik_log_tail_bytes", "log tail"}, {"lavik_value_cache_bytes", "value cache"},
	} {
		if v, ok := s.Info[f.key]; ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				parts = append(parts, f.label+" "+humanBytes(float64(n)))
			}
		}
	}
	if v, ok := s.Info["lavik_gc_cycles"]; ok {
		parts = append(parts, "GC cycles "+v)
	}
	if s.Smaps != nil {
		parts = append(parts, fmt.Sprintf("smaps_rollup Rss %s (anonymous %s, file %s)", humanBytes(float64(s.Smaps["Rss"])),
			humanBytes(float64(s.Smaps["Anonymous"])), humanBytes(float64(s.Smaps["Rss"]-s.Smaps["Anonymous"]))))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func cgroupBrief(c *cgroupStats) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(", cgroup usage %s (anon %s, page cache %s), limit hits %s, OOM kills %d",
		humanBytes(float64(c.Usage)), humanBytes(float64(c.Anon)), humanBytes(float64(c.File)), commas(c.LimitHits), c.OOMKills)
}

// capacityChart has one series per dataset size and pipeline depth, a point per connection count.
func capacityChart(cells []CapacityCell, base, full string, perPipeline bool) []chartSeries {
	var series []chartSeries
	index := map[string]int{}
	for phase, size := range []string{base, full} {
		for _, c := range cells {
			sc := c.Base
			if phase == phaseAll {
				sc = c.All
			}
			if len(sc.Rounds) == 0 {
				continue
			}
			key := "lavik " + size + " keys get"
			if perPipeline {
				key += fmt.Sprintf(" pipeline %d", c.Pipeline)
			}
			i, ok := index[key]
			if !ok {
				i = len(series)
				index[key] = i
				series = append(series, chartSeries{Name: key, Group: "lavik " + size})
			}
			series[i].Points = append(series[i].Points, chartPoint{QPS: sc.QPS, P99Ms: sc.P99Ms, Label: strconv.Itoa(c.Conns)})
		}
	}
	return series
}

// phaseSystem names the server at a dataset size in per-run lines, the JSON and the CSV.
func phaseSystem(keys int) string { return "lavik-" + shortCount(keys) }

// shortCount writes a key count compactly: 1M, 20M, 2500k, 1234.
func shortCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// infoSection returns the fields of INFO <section>.
func infoSection(addr, section string) (map[string]string, error) {
	p, err := adminDo(addr, 10*time.Second, "INFO", section)
	if err != nil {
		return nil, err
	}
	if p.kind != '$' || p.null {
		return nil, fmt.Errorf("INFO %s answered %s", section, p)
	}
	out := map[string]string{}
	for _, line := range strings.Split(p.str, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out, nil
}

// wrapText breaks s into lines of at most width bytes at spaces.
func wrapText(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		if n > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// memSample is one reading of the sampler.
type memSample struct {
	AtS    float64      `json:"at_s"`
	RSS    int64        `json:"rss_bytes"`
	Cgroup *cgroupStats `json:"cgroup,omitempty"`
}

// samplerSummary is what the sampler saw over the whole run.
type samplerSummary struct {
	Interval time.Duration `json:"-"`
	Samples  int           `json:"samples"`
	MaxRSS   int64         `json:"max_rss_bytes"`
	MaxAnon  int64         `json:"max_cgroup_anon_bytes"`
	Last     memSample     `json:"last"`
}

// memSampler reads the server's RSS and its cgroup at a fixed interval, so that a server the
// OOM killer takes leaves its last figures behind, and the highest anonymous memory (the
// server's own, without page cache) is known; VmHWM has the peak RSS only while it lives.
type memSampler struct {
	pid   int
	cg    *memCgroup
	start time.Time
	stop  chan struct{}
	done  chan struct{}

	mu  sync.Mutex
	sum samplerSummary
}

func startSampler(pid int, cg *memCgroup, every time.Duration) *memSampler {
	s := &memSampler{pid: pid, cg: cg, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	s.sum.Interval = every
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-t.C:
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

func (s *memSampler) sample() {
	rss, err := rssBytes(s.pid)
	if err != nil {
		return // the process is gone: keep the last sample
	}
	m := memSample{AtS: s.since(), RSS: rss}
	if s.cg != nil {
		if st, err := s.cg.stats(); err == nil {
			m.Cgroup = &st
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sum.Samples++
	s.sum.Last = m
	s.sum.MaxRSS = max(s.sum.MaxRSS, rss)
	if m.Cgroup != nil {
		s.sum.MaxAnon = max(s.sum.MaxAnon, m.Cgroup.Anon)
	}
}

// since is the time since the server started (about when the sampler did), in seconds.
func (s *memSampler) since() float64 {
	if s == nil {
		return 0
	}
	return time.Since(s.start).Seconds()
}

// finish stops the sampler and returns what it saw.
func (s *memSampler) finish() samplerSummary {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sum
}
