package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The compare harness. Both servers run on this machine at the same time, each on its own
// loopback port and data directory; the generator measures one at a time. Rounds walk the
// whole matrix and alternate which server goes first in each cell (round 1: redis, lavik;
// round 2: lavik, redis; ...), so slow drift of a shared, noisy machine (other tenants, thermal
// state, page cache, the SET cells growing Lavik's log) falls on both. Each reported figure is
// the median over rounds (with two rounds, the mean of the two); the spread column is
// (max - min) / median of the throughput over rounds, a direct reading of the noise.

const (
	sysRedis = 0
	sysLavik = 1
)

var systemNames = [2]string{"redis", "lavik"}

type benchSystem struct {
	name       string
	srv        *serverProc
	ks, hks    *Keyspace // string and hash records, when the matrix uses them
	hashUpdate string
	hashUnsup  string // why the hash workloads cannot run, if they cannot
	mem        MemoryReport
	loads      []LoadResult
}

// cell is one point of the matrix.
type cell struct {
	wl       Workload
	conns    int
	pipeline int
}

// SystemCell is one system's figures in one cell.
type SystemCell struct {
	QPS         float64     `json:"ops_per_sec"`
	P99Ms       float64     `json:"p99_ms"`
	QPSSpread   float64     `json:"ops_per_sec_spread_pct"`
	Errors      ErrorCounts `json:"errors"`
	Unsupported string      `json:"unsupported,omitempty"`
	Rounds      []RunResult `json:"rounds"`
}

// CellSummary is one row of the comparison table.
type CellSummary struct {
	Workload string     `json:"workload"`
	Conns    int        `json:"conns"`
	Pipeline int        `json:"pipeline"`
	Redis    SystemCell `json:"redis"`
	Lavik    SystemCell `json:"lavik"`
	QPSRatio float64    `json:"ops_per_sec_ratio_lavik_redis,omitempty"`
	P99Ratio float64    `json:"p99_ratio_lavik_redis,omitempty"`
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
	Loads   []LoadResult   `json:"loads"`
	Cells   []CellSummary  `json:"cells"`
	Memory  []MemoryReport `json:"memory"`
	Restart *RestartReport `json:"restart,omitempty"`
	reportOutcome
}

// compareCommand is `lavik-bench compare`.
func compareCommand(ctx context.Context, cfg compareConfig, stdout, stderr io.Writer) (code int, err error) {
	out := cfg.setup(stdout, stderr)
	root, err := os.MkdirTemp(cfg.Workdir, "lavik-bench-")
	if err != nil {
		return exitUsage, usageError(err)
	}
	systems := [2]*benchSystem{
		{name: "redis", hashUpdate: updateMulti},
		{name: "lavik", hashUpdate: updateHReplace},
	}
	for i, argv := range [2][]string{cfg.RedisArgv, cfg.LavikArgv} {
		s := systems[i]
		s.srv = newServerProc(s.name, argv, filepath.Join(root, s.name), logPath(root, s.name))
	}
	defer func() {
		for _, s := range systems {
			if s.srv.running() {
				if _, _, serr := s.srv.stop(30 * time.Second); serr != nil {
					fmt.Fprintf(stderr, "lavik-bench: %v\n", serr)
				}
			}
		}
		if cfg.Keep {
			fmt.Fprintf(stderr, "data directories and server logs kept in %s\n", root)
		} else {
			os.RemoveAll(root)
		}
	}()

	cells := buildCells(cfg)
	perRun := cfg.Warmup + cfg.Duration
	fmt.Fprintf(stderr, "lavik-bench compare: %d cells x 2 servers x %d rounds, about %v of measurement plus loading\n",
		len(cells), cfg.Rounds, time.Duration(len(cells)*2*cfg.Rounds)*perRun)

	// Start, measure the empty servers, load.
	for _, s := range systems {
		d, err := s.srv.start(ctx, cfg.StartTimeout, -1)
		if err != nil {
			return setupFailure(ctx, err)
		}
		fmt.Fprintf(stderr, "started %s (pid %d) on %s in %.2fs: %s\n", s.name, s.srv.pid(), s.srv.addr, d.Seconds(), s.srv.commandLine())
		s.mem.System = s.name
		s.mem.EmptyRSS, _ = rssBytes(s.srv.pid())
	}
	var v verdict
	for _, s := range systems {
		if err := s.loadAll(ctx, cfg, cells, stderr); err != nil {
			if ctx.Err() != nil || errors.Is(err, errInterrupted) {
				return exitInterrupted, errInterrupted
			}
			return exitErrors, &exitError{code: exitErrors, err: err} // a server that fails the load fails the comparison
		}
		s.mem.LoadedRSS, _ = rssBytes(s.srv.pid())
		if s.mem.Keys > 0 {
			s.mem.PerKeyRaw = float64(s.mem.LoadedRSS) / float64(s.mem.Keys)
			s.mem.PerKeyNet = float64(s.mem.LoadedRSS-s.mem.EmptyRSS) / float64(s.mem.Keys)
		}
	}

	// The matrix.
	runs := make([][2][]RunResult, len(cells))
	choosers := map[recordKind]keyChooser{}
matrix:
	for round := 0; round < cfg.Rounds; round++ {
		order := [2]int{sysRedis, sysLavik}
		if round%2 == 1 {
			order = [2]int{sysLavik, sysRedis}
		}
		for ci, c := range cells {
			for _, si := range order {
				s := systems[si]
				ks := s.keyspaceFor(c.wl)
				if ks == nil {
					continue // unsupported: reported in the table
				}
				if choosers[c.wl.Kind] == nil {
					choosers[c.wl.Kind] = newChooser(cfg.Dist, cfg.Keys)
				}
				p := runParams{System: s.name, Addr: s.srv.addr, Workload: c.wl, HashUpdate: s.hashUpdate,
					Conns: c.conns, Pipeline: c.pipeline, Warmup: cfg.Warmup, Duration: cfg.Duration,
					Timeout: cfg.Timeout, VerifySample: cfg.VerifySample, Seed: cfg.Seed, ServerPID: s.srv.pid(), Round: round + 1}
				r, err := runPoint(ctx, p, ks, choosers[c.wl.Kind])
				if ctx.Err() != nil {
					return exitInterrupted, errInterrupted
				}
				if err != nil {
					v.problems = append(v.problems, fmt.Sprintf("%s %s conns=%d: %v", s.name, c.wl.Name, c.conns, err))
					break matrix
				}
				fmt.Fprintf(stderr, "round %d/%d  %-6s conns=%-4d pipeline=%-3d %s  %s ops/s  p99 %s ms  server CPU %.0f%%  errors: %s\n",
					round+1, cfg.Rounds, c.wl.Name, c.conns, c.pipeline, s.name, qps(r.Total.QPS), ms(r.Total.P99Ms), r.ServerCPU, r.Errors)
				runs[ci][si] = append(runs[ci][si], r)
				v.addRun(r)
			}
		}
	}
	for _, s := range systems {
		s.mem.EndRSS, _ = rssBytes(s.srv.pid())
		if s.hashUnsup != "" {
			v.unsupported = append(v.unsupported, s.name+": "+s.hashUnsup)
		}
	}

	rep := compareReport{Command: "compare", Redis: systems[sysRedis].srv.commandLine(), Lavik: systems[sysLavik].srv.commandLine(),
		roundSettings: newRoundSettings(cfg.commonConfig, cfg.Rounds)}
	if cfg.Restart && len(v.problems) == 0 {
		rr := measureRestart(ctx, cfg, systems[sysLavik], stderr)
		if ctx.Err() != nil {
			return exitInterrupted, errInterrupted
		}
		if rr.Error != "" {
			v.problems = append(v.problems, "lavik restart: "+rr.Error)
		}
		rep.Restart = &rr
	}
	for _, s := range systems {
		rep.Loads = append(rep.Loads, s.loads...)
		rep.Memory = append(rep.Memory, s.mem)
	}
	var all []RunResult
	for ci, c := range cells {
		cs := summarizeCell(c, runs[ci], systems)
		rep.Cells = append(rep.Cells, cs)
		all = append(all, runs[ci][sysRedis]...)
		all = append(all, runs[ci][sysLavik]...)
	}

	fmt.Fprintf(out, "\nlavik-bench compare: redis vs lavik, %s\n", cfg.describe(cellsKind(cells)))
	if cfg.Rounds > 1 {
		fmt.Fprintf(out, "%d rounds, the server that runs first in each cell alternating between rounds; figures are medians over rounds; spread = (max-min)/median of ops/s\n", cfg.Rounds)
	} else {
		fmt.Fprintln(out, "1 round, redis first in each cell")
	}
	fmt.Fprintf(out, "redis: %s\nlavik: %s\n\n", rep.Redis, rep.Lavik)
	writeCompareTable(out, rep.Cells)
	fmt.Fprintln(out)
	writeMemory(out, rep.Memory)
	for _, l := range rep.Loads {
		fmt.Fprintln(out, l)
	}
	if rr := rep.Restart; rr != nil {
		writeRestart(out, rr, systems[sysLavik].mem)
	}
	fmt.Fprintln(out)
	v.write(out)
	code = v.exitCode()
	rep.reportOutcome = newReportOutcome(code, v)
	if err := writeOutputs(cfg.commonConfig, stdout, rep, all, compareChart(rep.Cells, cfg),
		cfg.describe(cellsKind(cells))+fmt.Sprintf("; medians over %d rounds", cfg.Rounds)); err != nil {
		return exitErrors, &exitError{code: exitErrors, err: err}
	}
	return code, nil
}

// setupFailure turns a failure before the matrix into the exit status.
func setupFailure(ctx context.Context, err error) (int, error) {
	if ctx.Err() != nil || errors.Is(err, errInterrupted) {
		return exitInterrupted, errInterrupted
	}
	return exitUsage, usageError(err)
}

// buildCells lists the matrix: for each workload, each pipeline depth, each connection count.
func buildCells(cfg compareConfig) []cell {
	var cells []cell
	for _, w := range cfg.Workloads {
		for _, p := range cfg.Pipelines {
			for _, c := range cfg.Conns {
				cells = append(cells, cell{wl: w, conns: c, pipeline: p})
			}
		}
	}
	return cells
}

func cellsKind(cells []cell) recordKind {
	for _, c := range cells {
		if c.wl.Kind == kindString {
			return kindString
		}
	}
	return kindHash
}

// loadAll loads the records the matrix needs. A server that rejects HSET as unknown has its hash
// workloads reported as unsupported; any other failure stops the comparison.
func (s *benchSystem) loadAll(ctx context.Context, cfg compareConfig, cells []cell, stderr io.Writer) error {
	var needString, needHash bool
	for _, c := range cells {
		needString = needString || c.wl.Kind == kindString
		needHash = needHash || c.wl.Kind == kindHash
	}
	lp := cfg.loadParams(s.name, s.srv.addr, stderr)
	if needString {
		ks := cfg.keyspace(kindString)
		lr, err := load(ctx, lp, ks)
		if err != nil {
			return fmt.Errorf("loading %s: %w", s.name, err)
		}
		fmt.Fprintln(stderr, lr)
		s.ks, s.loads, s.mem.Keys = ks, append(s.loads, lr), s.mem.Keys+ks.N
	}
	if needHash {
		ks := cfg.keyspace(kindHash)
		lr, err := load(ctx, lp, ks)
		var ue *unsupportedError
		switch {
		case errors.As(err, &ue):
			s.hashUnsup = "hash records: " + ue.msg
			fmt.Fprintf(stderr, "%s does not support the hash workloads: %s\n", s.name, ue.msg)
			return nil
		case err != nil:
			return fmt.Errorf("loading %s: %w", s.name, err)
		}
		fmt.Fprintln(stderr, lr)
		s.hks, s.loads, s.mem.Keys = ks, append(s.loads, lr), s.mem.Keys+ks.N
	}
	return nil
}

func (s *benchSystem) keyspaceFor(w Workload) *Keyspace {
	if w.Kind == kindHash {
		return s.hks
	}
	return s.ks
}

// summarizeCell reduces the rounds of one cell to medians.
func summarizeCell(c cell, runs [2][]RunResult, systems [2]*benchSystem) CellSummary {
	cs := CellSummary{Workload: c.wl.Name, Conns: c.conns, Pipeline: c.pipeline}
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
	if cs.Redis.QPS > 0 && cs.Lavik.QPS > 0 {
		cs.QPSRatio = cs.Lavik.QPS / cs.Redis.QPS
	}
	if cs.Redis.P99Ms > 0 && cs.Lavik.P99Ms > 0 {
		cs.P99Ratio = cs.Lavik.P99Ms / cs.Redis.P99Ms
	}
	return cs
}

// summarizeRuns reduces the rounds of one system in one cell to medians and the spread.
func summarizeRuns(rs []RunResult) SystemCell {
	sc := SystemCell{Rounds: rs}
	var q, p []float64
	for _, r := range rs {
		q = append(q, r.Total.QPS)
		p = append(p, r.Total.P99Ms)
		sc.Errors.add(r.Errors)
	}
	sc.QPS, sc.P99Ms = median(q), median(p)
	if len(q) > 1 && sc.QPS > 0 {
		lo, hi := q[0], q[0]
		for _, x := range q {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		sc.QPSSpread = 100 * (hi - lo) / sc.QPS
	}
	return sc
}

func writeCompareTable(w io.Writer, cells []CellSummary) {
	t := &table{left: 1}
	t.add("workload", "conns", "pipe", "|", "redis ops/s", "spread", "p99 ms", "|", "lavik ops/s", "spread", "p99 ms",
		"|", "ops/s lavik/redis", "p99 lavik/redis")
	for _, c := range cells {
		row := []string{c.Workload, strconv.Itoa(c.Conns), strconv.Itoa(c.Pipeline), "|"}
		row = append(row, systemCellColumns(c.Redis)...)
		row = append(row, "|")
		row = append(row, systemCellColumns(c.Lavik)...)
		row = append(row, "|", ratio(c.Lavik.QPS, c.Redis.QPS), ratio(c.Lavik.P99Ms, c.Redis.P99Ms))
		t.add(row...)
	}
	t.write(w)
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

func writeMemory(w io.Writer, mem []MemoryReport) {
	t := &table{left: 1}
	t.add("memory (VmRSS)", "empty", "loaded", "end of run", "per key raw", "per key net")
	for _, m := range mem {
		t.add(m.System, humanBytes(float64(m.EmptyRSS)), humanBytes(float64(m.LoadedRSS)), humanBytes(float64(m.EndRSS)),
			fmt.Sprintf("%.0f B", m.PerKeyRaw), fmt.Sprintf("%.0f B", m.PerKeyNet))
	}
	t.write(w)
	fmt.Fprintln(w, "per key: RSS after loading / keys loaded (raw), and (RSS after loading - RSS when empty) / keys (net)")
}

func writeRestart(w io.Writer, rr *RestartReport, mem MemoryReport) {
	if rr.Error != "" {
		fmt.Fprintf(w, "lavik restart FAILED: %s\n", rr.Error)
		return
	}
	fmt.Fprintf(w, "lavik restart: SIGTERM to exit %.2fs (status %d); start to ready %.2fs (answers PING, DBSIZE %s); %s values verified; RSS after restart %s\n",
		rr.ShutdownS, rr.ExitStatus, rr.StartToReadyS, commas(rr.Keys), commas(int64(rr.Verified)), humanBytes(float64(mem.RestartedRSS)))
}

// measureRestart stops Lavik with SIGTERM, starts it on the same directory and times how long it
// takes to answer PING with every key back, then checks a sample of values.
func measureRestart(ctx context.Context, cfg compareConfig, s *benchSystem, stderr io.Writer) RestartReport {
	var rr RestartReport
	a, err := dialAdmin(s.srv.addr, 10*time.Second)
	if err == nil {
		rr.Keys, err = a.dbsize()
		a.Close()
	}
	if err != nil {
		rr.Error = "DBSIZE before restart: " + err.Error()
		return rr
	}
	d, status, err := s.srv.stop(cfg.RestartTimeout)
	rr.ShutdownS, rr.ExitStatus = d.Seconds(), status
	if err != nil {
		rr.Error = err.Error()
		return rr
	}
	if status != 0 {
		fmt.Fprintf(stderr, "warning: lavik exited with status %d after SIGTERM\n", status)
	}
	d, err = s.srv.start(ctx, cfg.RestartTimeout, rr.Keys)
	if err != nil {
		rr.Error = err.Error()
		return rr
	}
	rr.StartToReadyS = d.Seconds()
	s.mem.RestartedRSS, _ = rssBytes(s.srv.pid())
	for _, ks := range []*Keyspace{s.ks, s.hks} {
		if ks == nil {
			continue
		}
		n, err := verifySample(s.srv.addr, ks, 1000, cfg.Seed)
		rr.Verified += n
		if err != nil {
			rr.Error = "after restart: " + err.Error()
			return rr
		}
	}
	fmt.Fprintf(stderr, "lavik restarted in %.2fs with %d keys\n", rr.StartToReadyS, rr.Keys)
	return rr
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
			key := fmt.Sprintf("%s %s", name, c.Workload)
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
