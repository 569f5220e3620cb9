package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// keyspace builds the keyspace a workload of kind uses.
func (cc commonConfig) keyspace(kind recordKind) *Keyspace {
	prefix := stringPrefix
	if kind == kindHash {
		prefix = hashPrefix
	}
	ks := newKeyspace(prefix, kind, cc.Keys)
	ks.Value, ks.Fields, ks.FieldSize = cc.Value, cc.Fields, cc.FieldSize
	return ks
}

// describe is the one-line summary of the data and method printed above every table.
func (cc commonConfig) describe(kind recordKind) string {
	data := fmt.Sprintf("values %s", cc.Value)
	if kind == kindHash {
		data = fmt.Sprintf("records of %d fields x %d B", cc.Fields, cc.FieldSize)
	}
	return fmt.Sprintf("%s keys, %s, %s keys; warm-up %v + window %v per point; %s of reads compared byte for byte",
		commas(int64(cc.Keys)), data, cc.Dist, cc.Warmup, cc.Duration, pct(cc.VerifySample))
}

func pct(f float64) string { return strconv.FormatFloat(100*f, 'g', 4, 64) + "%" }

func (cc commonConfig) loadParams(system, addr string, stderr io.Writer) loadParams {
	return loadParams{System: system, Addr: addr, Conns: cc.LoadConns, Pipeline: cc.LoadPipeline,
		Progress: stderr, Bar: !cc.NoProgress && isTerminal(stderr), Timeout: cc.Timeout}
}

// runReport is the JSON document of `run`.
type runReport struct {
	Command      string      `json:"command"`
	Addr         string      `json:"addr"`
	System       string      `json:"system"`
	Workload     string      `json:"workload"`
	Keys         int         `json:"keys"`
	Value        string      `json:"value"`
	Dist         string      `json:"dist"`
	VerifySample float64     `json:"verify_sample"`
	Seed         uint64      `json:"seed"`
	Load         *LoadResult `json:"load,omitempty"`
	Results      []RunResult `json:"results"`
	Result       string      `json:"result"`
	Errors       ErrorCounts `json:"errors"`
}

func resultWord(code int) string {
	switch code {
	case exitOK:
		return "OK"
	case exitUnsupported:
		return "UNSUPPORTED"
	}
	return "ERRORS"
}

// runCommand is `lavik-bench run`. It returns the exit status, and an error only for failures
// that stop the run before it produced results.
func runCommand(ctx context.Context, cfg runConfig, stdout, stderr io.Writer) (int, error) {
	out := cfg.setup(stdout, stderr)
	kind := cfg.Workload.Kind
	ks := cfg.keyspace(kind)
	fmt.Fprintf(out, "lavik-bench run: %s (%s), workload %s\n%s\n", cfg.Name, cfg.Addr, cfg.Workload.Name, cfg.describe(kind))
	rep := runReport{Command: "run", Addr: cfg.Addr, System: cfg.Name, Workload: cfg.Workload.Name, Keys: cfg.Keys,
		Value: cfg.Value.String(), Dist: cfg.Dist.String(), VerifySample: cfg.VerifySample, Seed: cfg.Seed}
	var v verdict
	if cfg.Load {
		lr, err := load(ctx, cfg.loadParams(cfg.Name, cfg.Addr, stderr), ks)
		var ue *unsupportedError
		switch {
		case errors.As(err, &ue):
			v.unsupported = append(v.unsupported, ue.msg)
			v.write(out)
			return exitUnsupported, nil
		case err != nil:
			return exitErrors, &exitError{code: exitErrors, err: err}
		}
		fmt.Fprintln(out, lr)
		rep.Load = &lr
	} else {
		ks.Loaded, ks.Unknown = true, true
	}
	hashUpdate := ""
	if kind == kindHash {
		var err error
		if hashUpdate, err = resolveHashUpdate(cfg.Addr, cfg.HashUpdate); err != nil {
			return exitErrors, &exitError{code: exitErrors, err: err}
		}
		fmt.Fprintf(out, "updates: %s\n", hashUpdateLabel(hashUpdate))
	}
	chooser := newChooser(cfg.Dist, cfg.Keys)
	for _, conns := range cfg.Conns {
		p := runParams{System: cfg.Name, Addr: cfg.Addr, Workload: cfg.Workload, HashUpdate: hashUpdate,
			Conns: conns, Pipeline: cfg.Pipeline, Warmup: cfg.Warmup, Duration: cfg.Duration, Timeout: cfg.Timeout,
			VerifySample: cfg.VerifySample, Seed: cfg.Seed}
		r, err := runPoint(ctx, p, ks, chooser)
		if ctx.Err() != nil {
			return exitInterrupted, errInterrupted
		}
		if err != nil {
			return exitErrors, &exitError{code: exitErrors, err: err}
		}
		if len(cfg.Conns) > 1 {
			fmt.Fprintf(stderr, "%s conns=%d: %s ops/s, p99 %s ms, errors: %s\n", cfg.Name, conns, qps(r.Total.QPS), ms(r.Total.P99Ms), r.Errors)
		}
		v.addRun(r)
		if r.Unsupported != "" {
			v.unsupported = append(v.unsupported, r.Unsupported)
		}
		rep.Results = append(rep.Results, r)
	}
	fmt.Fprintln(out)
	writeRunTable(out, rep.Results)
	fmt.Fprintln(out)
	for _, r := range rep.Results {
		fmt.Fprintf(out, "conns=%d: generator CPU %.0f%% of a core", r.Conns, r.ClientCPU)
		if r.Checked > 0 {
			fmt.Fprintf(out, "; %s read replies checked for key, version and length, %s of them byte for byte",
				commas(r.Checked), commas(r.Verified))
		}
		fmt.Fprintln(out)
	}
	v.write(out)
	code := v.exitCode()
	rep.Result, rep.Errors = resultWord(code), v.errors
	if err := writeOutputs(cfg.commonConfig, stdout, rep, rep.Results, runChart(cfg, rep.Results), cfg.describe(kind)); err != nil {
		return exitErrors, &exitError{code: exitErrors, err: err}
	}
	return code, nil
}

// runChart is the chart of a `run`: one series, a point per connection count.
func runChart(cfg runConfig, results []RunResult) []chartSeries {
	s := chartSeries{Name: cfg.Name + " " + cfg.Workload.Name, Group: cfg.Name}
	for _, r := range results {
		s.Points = append(s.Points, chartPoint{QPS: r.Total.QPS, P99Ms: r.Total.P99Ms, Label: strconv.Itoa(r.Conns)})
	}
	return []chartSeries{s}
}

// writeOutputs writes the --json, --csv and --chart files a command asked for.
func writeOutputs(cc commonConfig, stdout io.Writer, doc any, results []RunResult, series []chartSeries, subtitle string) error {
	if cc.JSONPath != "" {
		if err := writeJSON(cc.JSONPath, stdout, doc); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if cc.CSVPath != "" {
		if err := writeCSV(cc.CSVPath, stdout, results); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}
	if cc.ChartPath != "" {
		var names []string
		for _, s := range series {
			names = append(names, s.Name)
		}
		title := "lavik-bench: throughput against p99 latency"
		sub := strings.Join(names, ", ") + ". " + subtitle
		if err := writeChartFile(cc.ChartPath, stdout, title, sub, series); err != nil {
			return fmt.Errorf("--chart: %w", err)
		}
	}
	return nil
}
