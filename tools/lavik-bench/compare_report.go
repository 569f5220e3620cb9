package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// What compare reports: the figures of each cell (medians over rounds and the ratios), the table
// and the lines under it, and the JSON document.

// SystemCell is one system's figures in one cell: medians over rounds.
type SystemCell struct {
	QPS         float64     `json:"ops_per_sec"`
	P99Ms       float64     `json:"p99_ms"`
	P999Ms      float64     `json:"p99_9_ms"`
	CPUUsPerOp  float64     `json:"server_cpu_us_per_op"`
	ReadPerOp   float64     `json:"server_read_bytes_per_op"`
	QPSSpread   float64     `json:"ops_per_sec_spread_pct"`
	Errors      ErrorCounts `json:"errors"`
	Unsupported string      `json:"unsupported,omitempty"`
	Rounds      []RunResult `json:"rounds"`
}

// CellSummary is one row of the comparison table.
type CellSummary struct {
	Workload  string     `json:"workload"`
	Mode      string     `json:"mode,omitempty"` // "", "pinned" or "zipf"
	Dist      string     `json:"dist"`
	Conns     int        `json:"conns"`
	Pipeline  int        `json:"pipeline"`
	Redis     SystemCell `json:"redis"`
	Lavik     SystemCell `json:"lavik"`
	QPSRatio  float64    `json:"ops_per_sec_ratio_lavik_redis,omitempty"`
	P99Ratio  float64    `json:"p99_ratio_lavik_redis,omitempty"`
	P999Ratio float64    `json:"p99_9_ratio_lavik_redis,omitempty"`
	CPURatio  float64    `json:"cpu_per_op_ratio_lavik_redis,omitempty"`
	// DiskCell says the cell is set against the disk ceiling: GET with uniform keys and at
	// least as many GETs outstanding (conns x pipeline) as the ceiling had reads in flight.
	// DiskFrac is the fraction of Lavik's GETs that read the disk, estimated from the bytes it
	// read from storage per GET over the size of a ceiling read (at most 1: the collector's
	// reads count too); DiskPct is Lavik's GETs that read the disk, per second, as a
	// percentage of the ceiling's reads per second.
	DiskCell bool    `json:"disk_ceiling_cell,omitempty"`
	DiskFrac float64 `json:"lavik_gets_from_disk_frac,omitempty"`
	DiskPct  float64 `json:"lavik_pct_of_disk_ceiling,omitempty"`
}

// label names the row: the workload, and the mode unless unpinned.
func (c CellSummary) label() string {
	if c.Mode == "" {
		return c.Workload
	}
	return c.Workload + " " + c.Mode
}

// MemoryReport is a server's resident memory (VmRSS) at the points the harness reads it.
type MemoryReport struct {
	System       string  `json:"system"`
	Keys         int     `json:"keys"`
	EmptyRSS     int64   `json:"empty_rss_bytes"`
	LoadedRSS    int64   `json:"loaded_rss_bytes"`
	EndRSS       int64   `json:"end_rss_bytes"`
	PerKeyRaw    float64 `json:"loaded_bytes_per_key_raw"`
	PerKeyNet    float64 `json:"loaded_bytes_per_key_net"`
	RestartedRSS int64   `json:"restarted_rss_bytes,omitempty"`
}

// RestartReport is Lavik's restart on its loaded data.
type RestartReport struct {
	Into          string  `json:"into,omitempty"` // how it was started again, when differently
	Command       string  `json:"command,omitempty"`
	RSS           int64   `json:"rss_bytes,omitempty"`
	ShutdownS     float64 `json:"sigterm_to_exit_s"`
	ExitStatus    int     `json:"exit_status"`
	StartToReadyS float64 `json:"start_to_ready_s"`
	Keys          int64   `json:"dbsize"`
	Verified      int     `json:"values_verified"`
	Error         string  `json:"error,omitempty"`
}

// roundSettings are the settings of a report measured in rounds, as its JSON document gives them.
type roundSettings struct {
	Keys         int     `json:"keys"`
	Value        string  `json:"value"`
	Dist         string  `json:"dist"`
	Rounds       int     `json:"rounds"`
	WarmupS      float64 `json:"warmup_s"`
	WindowS      float64 `json:"window_s"`
	VerifySample float64 `json:"verify_sample"`
	Aggregate    string  `json:"aggregate"`
}

func newRoundSettings(c commonConfig, rounds int) roundSettings {
	return roundSettings{Keys: c.Keys, Value: c.Value.String(), Dist: c.Dist.String(), Rounds: rounds,
		WarmupS: c.Warmup.Seconds(), WindowS: c.Duration.Seconds(), VerifySample: c.VerifySample,
		Aggregate: "median over rounds"}
}

// reportOutcome is how a report ends: its result word, the error counts and the problems.
type reportOutcome struct {
	Result   string      `json:"result"`
	Errors   ErrorCounts `json:"errors"`
	Problems []string    `json:"problems,omitempty"`
}

func newReportOutcome(code int, v verdict) reportOutcome {
	return reportOutcome{Result: resultWord(code), Errors: v.errors, Problems: v.problems}
}

// compareReport is the JSON document of `compare`.
type compareReport struct {
	Command string `json:"command"`
	Redis   string `json:"redis_cmd"`
	Lavik   string `json:"lavik_cmd"`
	roundSettings
	Disk           *DiskCeiling   `json:"disk_ceiling,omitempty"`
	Pinning        *PinReport     `json:"pinning,omitempty"`
	PinSkipped     string         `json:"pinned_cells_skipped,omitempty"`
	ZipfCacheBytes int64          `json:"zipf_value_cache_bytes,omitempty"`
	Loads          []LoadResult   `json:"loads"`
	Cells          []CellSummary  `json:"cells"`
	Memory         []MemoryReport `json:"memory"`
	LavikDir       []DirUsage     `json:"lavik_data_dir,omitempty"`
	// Restart is the first of Restarts: compare restarts lavik-data to run it pinned and with
	// its value cache, and otherwise once after the cells.
	Restart  *RestartReport  `json:"restart,omitempty"`
	Restarts []RestartReport `json:"restarts,omitempty"`
	reportOutcome
}

// PinReport is how the pinned cells ran: the CPUs, and the threads found on them at the end.
type PinReport struct {
	Server           string   `json:"server_cpus"`
	Client           string   `json:"client_cpus"`
	Lavik            string   `json:"lavik_cmd"`
	RedisThreads     int      `json:"redis_threads"`
	LavikThreads     int      `json:"lavik_threads"`
	GeneratorThreads int      `json:"generator_threads"`
	GeneratorProcs   int      `json:"generator_gomaxprocs"`
	Problems         []string `json:"problems,omitempty"`
}

// DirUsage is the disk space a data directory occupies at one point of the run.
type DirUsage struct {
	When  string `json:"when"`
	Bytes int64  `json:"bytes"`
}

// report prints the table and everything below it, and writes the output files.
func (c *comparison) report(out, stdout io.Writer) (int, error) {
	cfg, systems, rep := c.cfg, c.systems, &c.rep
	rep.Command = "compare"
	rep.roundSettings = newRoundSettings(cfg.commonConfig, cfg.Rounds)
	if len(rep.Restarts) > 0 {
		rep.Restart = &rep.Restarts[0]
	}
	rep.PinSkipped = c.pinSkip
	if len(cfg.ZipfPipelines) > 0 {
		rep.ZipfCacheBytes = cfg.zipfCacheBytes()
	}
	for _, s := range systems {
		rep.Loads = append(rep.Loads, s.loads...)
		rep.Memory = append(rep.Memory, s.mem)
	}
	var all []RunResult
	for ci, cl := range c.cells {
		cs := summarizeCell(cl, c.runs[ci], systems, rep.Disk)
		rep.Cells = append(rep.Cells, cs)
		all = append(all, c.runs[ci][sysRedis]...)
		all = append(all, c.runs[ci][sysLavik]...)
	}

	kind := cellsKind(c.cells)
	fmt.Fprintf(out, "\nlavik-bench compare: redis vs lavik, %s\n", cfg.describe(kind))
	if cfg.Rounds > 1 {
		fmt.Fprintf(out, "%d rounds, the server that runs first in each cell alternating between rounds; figures are medians over rounds; spread = (max-min)/median of ops/s\n", cfg.Rounds)
	} else {
		fmt.Fprintln(out, "1 round, redis first in each cell")
	}
	fmt.Fprintf(out, "redis: %s\nlavik: %s\n", rep.Redis, rep.Lavik)
	c.writeSetup(out)
	fmt.Fprintln(out)
	writeCompareTable(out, rep.Cells, rep.Disk != nil && rep.Disk.ReadsPS > 0)
	fmt.Fprintln(out)
	writeKeyFigures(out, rep)
	writeMemory(out, rep.Memory)
	for _, l := range rep.Loads {
		fmt.Fprintln(out, l)
	}
	writeLavikDir(out, rep.LavikDir, cfg)
	for i := range rep.Restarts {
		writeRestart(out, &rep.Restarts[i])
	}
	fmt.Fprintln(out)
	c.v.write(out)
	code := c.v.exitCode()
	rep.reportOutcome = newReportOutcome(code, c.v)
	if err := writeOutputs(cfg.commonConfig, stdout, rep, all, compareChart(rep.Cells, cfg),
		cfg.describe(kind)+fmt.Sprintf("; medians over %d rounds", cfg.Rounds)); err != nil {
		return exitErrors, &exitError{code: exitErrors, err: err}
	}
	return code, nil
}

// writeSetup prints how the extra groups of cells were run.
func (c *comparison) writeSetup(w io.Writer) {
	rep := &c.rep
	if rep.Disk != nil {
		fmt.Fprintln(w, rep.Disk)
	}
	if c.cfg.Overwrites > 0 {
		fmt.Fprintf(w, "collector at work: after loading, every key was written %d more times on both servers, before any cell\n", c.cfg.Overwrites)
	}
	switch pr := rep.Pinning; {
	case c.pinSkip != "":
		fmt.Fprintf(w, "pinned cells skipped: %s\n", c.pinSkip)
	case pr != nil:
		state := "every thread checked in /proc/PID/task/*/status at the end of the pinned cells"
		if len(pr.Problems) > 0 {
			state = "NOT PINNED: " + strings.Join(pr.Problems, "; ")
		}
		fmt.Fprintf(w, "pinned cells: redis (%d threads, pinned while running) and lavik (%d threads, started by taskset -c %s) on CPU %s, the generator (%d threads, GOMAXPROCS %d) on CPU %s; %s\n",
			pr.RedisThreads, pr.LavikThreads, pr.Server, pr.Server, pr.GeneratorThreads, pr.GeneratorProcs, pr.Client, state)
	}
	if len(c.cfg.ZipfPipelines) > 0 {
		fmt.Fprintf(w, "zipf cells: GET with %s keys on both servers; lavik restarted with a value cache of %s",
			DistSpec{Name: "zipf", Theta: c.cfg.Dist.Theta}, humanBytes(float64(c.cfg.zipfCacheBytes())))
		if c.cfg.ZipfCachePct > 0 {
			fmt.Fprintf(w, " (%g%% of the value bytes)", c.cfg.ZipfCachePct)
		}
		fmt.Fprintln(w)
	}
}

// summarizeCell reduces the rounds of one cell to medians; with a disk ceiling, Lavik's GET
// throughput is set against it where the cell keeps enough GETs outstanding.
func summarizeCell(c cell, runs [2][]RunResult, systems [2]*benchSystem, disk *DiskCeiling) CellSummary {
	cs := CellSummary{Workload: c.wl.Name, Mode: c.mode.String(), Dist: c.dist.String(), Conns: c.conns, Pipeline: c.pipeline}
	for si, rs := range runs {
		sc := summarizeRuns(rs)
		if systems[si].keyspaceFor(c.wl) == nil {
			sc.Unsupported = systems[si].hashUnsup
		}
		if si == sysRedis {
			cs.Redis = sc
		} else {
			cs.Lavik = sc
		}
	}
	r, l := cs.Redis, cs.Lavik
	cs.QPSRatio, cs.P99Ratio, cs.P999Ratio, cs.CPURatio = quot(l.QPS, r.QPS), quot(l.P99Ms, r.P99Ms), quot(l.P999Ms, r.P999Ms),
		quot(l.CPUUsPerOp, r.CPUUsPerOp)
	if disk != nil && disk.ReadsPS > 0 && c.wl.Name == "get" && c.dist.Name == "uniform" && c.conns*c.pipeline >= disk.Depth {
		cs.DiskCell = true
		cs.DiskFrac = min(1, l.ReadPerOp/disk.AvgReadB)
		cs.DiskPct = 100 * l.QPS * cs.DiskFrac / disk.ReadsPS
	}
	return cs
}

// quot is a/b, or 0 when either is 0 (not measured).
func quot(a, b float64) float64 {
	if a == 0 || b == 0 {
		return 0
	}
	return a / b
}

// readPerOp is the bytes the server read from storage per operation answered in the window.
func readPerOp(r RunResult) float64 {
	if r.Total.Count == 0 {
		return 0
	}
	return float64(r.ServerReadBytes) / float64(r.Total.Count)
}

// summarizeRuns reduces the rounds of one system in one cell to medians and the spread.
func summarizeRuns(rs []RunResult) SystemCell {
	sc := SystemCell{Rounds: rs}
	var q, p, p9, cpu, rd []float64
	for _, r := range rs {
		q = append(q, r.Total.QPS)
		p = append(p, r.Total.P99Ms)
		p9 = append(p9, r.Total.P999Ms)
		cpu = append(cpu, r.ServerUsPerOp)
		rd = append(rd, readPerOp(r))
		sc.Errors.add(r.Errors)
	}
	sc.QPS, sc.P99Ms, sc.P999Ms, sc.CPUUsPerOp, sc.ReadPerOp = median(q), median(p), median(p9), median(cpu), median(rd)
	if len(q) > 1 && sc.QPS > 0 {
		lo, hi := q[0], q[0]
		for _, x := range q {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		sc.QPSSpread = 100 * (hi - lo) / sc.QPS
	}
	return sc
}

// writeCompareTable prints one row per cell: each system's figures, the ratios, and Lavik's GET
// throughput against the disk ceiling when there is one.
func writeCompareTable(w io.Writer, cells []CellSummary, disk bool) {
	t := &table{left: 1}
	head := []string{"cell", "conns", "pipe", "|", "redis ops/s", "spread", "p99 ms", "p99.9 ms", "cpu us/op", "|",
		"lavik ops/s", "spread", "p99 ms", "p99.9 ms", "cpu us/op", "|", "ops/s ratio", "p99 ratio", "p99.9 ratio", "cpu/op ratio"}
	if disk {
		head = append(head, "|", "lavik % of disk")
	}
	t.add(head...)
	for _, c := range cells {
		row := []string{c.label(), strconv.Itoa(c.Conns), strconv.Itoa(c.Pipeline), "|"}
		row = append(row, compareColumns(c.Redis)...)
		row = append(row, "|")
		row = append(row, compareColumns(c.Lavik)...)
		row = append(row, "|", ratio(c.Lavik.QPS, c.Redis.QPS), ratio(c.Lavik.P99Ms, c.Redis.P99Ms),
			ratio(c.Lavik.P999Ms, c.Redis.P999Ms), ratio(c.Lavik.CPUUsPerOp, c.Redis.CPUUsPerOp))
		if disk {
			d := ""
			if c.DiskCell {
				d = fmt.Sprintf("%.1f%%", c.DiskPct)
			}
			row = append(row, "|", d)
		}
		t.add(row...)
	}
	t.write(w)
	fmt.Fprintln(w, "ratios are lavik/redis: above 1x lavik serves more ops/s; below 1x its latency and its CPU per operation are lower")
	fmt.Fprintln(w, "cpu us/op: the server's user+system CPU time over the window (all its threads) / operations answered in the window")
	if disk {
		fmt.Fprintln(w, "lavik % of disk: lavik GETs that read the disk per second / the disk ceiling's reads per second, in uniform GET cells with at least as many GETs outstanding (conns x pipe) as the ceiling had reads in flight")
	}
}

// compareColumns formats one system's figures in a cell: ops/s, spread, p99, p99.9, CPU/op.
func compareColumns(s SystemCell) []string {
	c := systemCellColumns(s)
	switch {
	case s.Unsupported != "":
		return append(c, "", "")
	case len(s.Rounds) == 0:
		return append(c, "-", "-")
	}
	cpu := "-"
	if s.CPUUsPerOp > 0 {
		cpu = strconv.FormatFloat(s.CPUUsPerOp, 'f', 1, 64)
	}
	return append(c, ms(s.P999Ms), cpu)
}

// systemCellColumns formats one system's figures in a cell as ops/s, spread and p99.
func systemCellColumns(s SystemCell) []string {
	switch {
	case s.Unsupported != "":
		return []string{"unsupported", "", ""}
	case len(s.Rounds) == 0:
		return []string{"-", "", "-"}
	}
	spread := ""
	if len(s.Rounds) > 1 {
		spread = fmt.Sprintf("%.1f%%", s.QPSSpread)
	}
	p99 := ms(s.P99Ms)
	if s.Errors.Total() > 0 {
		p99 += " ERR"
	}
	return []string{qps(s.QPS), spread, p99}
}

// writeKeyFigures prints the figures the comparison exists for, taken from the table: Lavik's
// GET against the disk ceiling, CPU per operation, the SET tail and the GET tail at pipeline 1.
func writeKeyFigures(w io.Writer, rep *compareReport) {
	var disk, cpu, setTail, getTail []string
	for _, c := range rep.Cells {
		name := fmt.Sprintf("%s %dx%d", c.label(), c.Conns, c.Pipeline)
		if c.DiskCell {
			disk = append(disk, fmt.Sprintf("%s %.1f%% (%s B read from storage per GET: %.0f%% of GETs from disk)", name, c.DiskPct,
				commas(int64(math.Round(c.Lavik.ReadPerOp))), 100*c.DiskFrac))
		}
		if c.CPURatio > 0 {
			cpu = append(cpu, fmt.Sprintf("%s %.2fx", name, c.CPURatio))
		}
		if c.Workload == "set" && c.P999Ratio > 0 {
			setTail = append(setTail, fmt.Sprintf("%s %.2fx (%s vs %s ms)", name, c.P999Ratio, ms(c.Lavik.P999Ms), ms(c.Redis.P999Ms)))
		}
		if c.Workload == "get" && c.Pipeline == 1 && c.P99Ratio > 0 {
			getTail = append(getTail, fmt.Sprintf("%s %.2fx (%s vs %s ms)", name, c.P99Ratio, ms(c.Lavik.P99Ms), ms(c.Redis.P99Ms)))
		}
	}
	if len(disk)+len(cpu)+len(setTail)+len(getTail) == 0 {
		return
	}
	fmt.Fprintln(w, "key figures (cell conns x pipe):")
	line := func(what string, items []string) {
		if len(items) > 0 {
			fmt.Fprintf(w, "  %-34s %s\n", what, strings.Join(items, ";  "))
		}
	}
	if len(disk) > 0 {
		avg := ""
		if d := rep.Disk; d != nil {
			avg = fmt.Sprintf(", a ceiling read %.0f B", d.AvgReadB)
		}
		line("lavik GET / disk ceiling (target 90%"+avg+"):", disk)
	}
	line("server CPU per op, lavik/redis:", cpu)
	line("SET p99.9, lavik/redis:", setTail)
	line("GET p99 at pipeline 1, lavik/redis:", getTail)
	fmt.Fprintln(w)
}

func writeMemory(w io.Writer, mem []MemoryReport) {
	t := &table{left: 1}
	t.add("memory (VmRSS)", "empty", "loaded", "after matrix", "per key raw", "per key net")
	for _, m := range mem {
		t.add(m.System, humanBytes(float64(m.EmptyRSS)), humanBytes(float64(m.LoadedRSS)), humanBytes(float64(m.EndRSS)),
			fmt.Sprintf("%.0f B", m.PerKeyRaw), fmt.Sprintf("%.0f B", m.PerKeyNet))
	}
	t.write(w)
	fmt.Fprintln(w, "per key: RSS after loading / keys loaded (raw), and (RSS after loading - RSS when empty) / keys (net); after matrix: at the end of the unpinned cells")
}

// writeLavikDir prints the disk lavik-data's data directory occupied along the run.
func writeLavikDir(w io.Writer, pts []DirUsage, cfg compareConfig) {
	if len(pts) == 0 {
		return
	}
	var parts []string
	for _, p := range pts {
		parts = append(parts, humanBytes(float64(p.Bytes))+" "+p.When)
	}
	fmt.Fprintf(w, "lavik data directory: %s (values loaded: %s)\n", strings.Join(parts, ", "),
		humanBytes(float64(cfg.Keys)*cfg.Value.mean()))
}

func writeRestart(w io.Writer, rr *RestartReport) {
	into := ""
	if rr.Into != "" {
		into = " (into " + rr.Into + ")"
	}
	if rr.Error != "" {
		fmt.Fprintf(w, "lavik restart%s FAILED: %s\n", into, rr.Error)
		return
	}
	fmt.Fprintf(w, "lavik restart%s: SIGTERM to exit %.2fs (status %d); start to ready %.2fs (answers PING, DBSIZE %s); %s values verified; RSS after restart %s\n",
		into, rr.ShutdownS, rr.ExitStatus, rr.StartToReadyS, commas(rr.Keys), commas(int64(rr.Verified)), humanBytes(float64(rr.RSS)))
}

// compareChart has one series per system, workload and pipeline depth, a point per connection
// count.
func compareChart(cells []CellSummary, cfg compareConfig) []chartSeries {
	var series []chartSeries
	index := map[string]int{}
	for si, name := range systemNames {
		for _, c := range cells {
			sc := c.Redis
			if si == sysLavik {
				sc = c.Lavik
			}
			if len(sc.Rounds) == 0 {
				continue
			}
			key := fmt.Sprintf("%s %s", name, c.label())
			if len(cfg.Pipelines) > 1 {
				key += fmt.Sprintf(" pipeline %d", c.Pipeline)
			}
			i, ok := index[key]
			if !ok {
				i = len(series)
				index[key] = i
				series = append(series, chartSeries{Name: key, Group: name})
			}
			series[i].Points = append(series[i].Points, chartPoint{QPS: sc.QPS, P99Ms: sc.P99Ms, Label: strconv.Itoa(c.Conns)})
		}
	}
	return series
}
