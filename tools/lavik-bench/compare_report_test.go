package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseCompareExtras(t *testing.T) {
	cfg, err := parseWith(t, "compare", compareFlags(), parseCompareConfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Pin.enabled() || cfg.Overwrites != 0 || cfg.ZipfPipelines != nil || cfg.DiskSize != 0 {
		t.Errorf("the extras are on by default: %+v", cfg)
	}
	cfg, err = parseWith(t, "compare", compareFlags(), parseCompareConfig, "--pin", "server=0,client=1", "--overwrites", "2",
		"--zipf-pipelines", "1,16", "--zipf-cache", "10%", "--disk-ceiling", "2GiB", "--disk-depth", "128", "--disk-duration", "3s")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Pin.String() != "server=0,client=1" || cfg.Overwrites != 2 || !reflect.DeepEqual(cfg.ZipfPipelines, []int{1, 16}) {
		t.Errorf("%+v", cfg)
	}
	if cfg.DiskSize != 2<<30 || cfg.DiskDepth != 128 || cfg.DiskBatch != 16 || cfg.DiskDuration != 3*time.Second || cfg.DiskEngine != "auto" {
		t.Errorf("disk: %d %d %d %v %s", cfg.DiskSize, cfg.DiskDepth, cfg.DiskBatch, cfg.DiskDuration, cfg.DiskEngine)
	}
	// 10% of 1,000,000 values of 1,024 bytes.
	if got := cfg.zipfCacheBytes(); got != 102_400_000 {
		t.Errorf("zipf cache %d bytes", got)
	}
	cfg, _ = parseWith(t, "compare", compareFlags(), parseCompareConfig, "--keys", "1000", "--zipf-cache", "10%")
	if got := cfg.zipfCacheBytes(); got != 1<<20 {
		t.Errorf("zipf cache of 10%% of 1 MB: %d bytes, want lavik-data's smallest, 1 MiB", got)
	}
	cfg, _ = parseWith(t, "compare", compareFlags(), parseCompareConfig, "--zipf-cache", "64MiB")
	if got := cfg.zipfCacheBytes(); got != 64<<20 {
		t.Errorf("zipf cache 64MiB: %d bytes", got)
	}
	cfg, _ = parseWith(t, "compare", compareFlags(), parseCompareConfig, "--zipf-cache", "0")
	if got := cfg.zipfCacheBytes(); got != 0 {
		t.Errorf("zipf cache 0: %d bytes", got)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pin", "server=0"}, "no client CPUs"},
		{[]string{"--overwrites", "-1"}, "--overwrites -1"},
		{[]string{"--zipf-pipelines", "0"}, "--zipf-pipelines"},
		{[]string{"--zipf-cache", "120%"}, "--zipf-cache"},
		{[]string{"--zipf-cache", "lots"}, "--zipf-cache"},
		{[]string{"--disk-ceiling", "1MiB"}, "at least 64.00 MiB"},
		{[]string{"--disk-ceiling", "2GiB", "--disk-depth", "0"}, "--disk-depth 0"},
		{[]string{"--disk-engine", "aio"}, "--disk-engine"},
	} {
		if _, err := parseWith(t, "compare", compareFlags(), parseCompareConfig, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestCompareCells checks the groups of cells and their order: the matrix, the same pinned,
// then zipf GET at each zipf pipeline depth and connection count.
func TestCompareCells(t *testing.T) {
	cfg, err := parseWith(t, "compare", compareFlags(), parseCompareConfig, "--conns", "50", "--zipf-pipelines", "1,16")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range compareCells(cfg, true) {
		got = append(got, c.label()+" "+c.dist.Name+" "+strings.Repeat("|", c.pipeline))
	}
	want := []string{"get uniform |", "get uniform ||||||||||||||||", "set uniform |", "set uniform ||||||||||||||||",
		"get pinned uniform |", "get pinned uniform ||||||||||||||||", "set pinned uniform |", "set pinned uniform ||||||||||||||||",
		"get zipf zipf |", "get zipf zipf ||||||||||||||||"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cells\n%q\nwant\n%q", got, want)
	}
	if n := len(compareCells(cfg, false)); n != 6 {
		t.Errorf("%d cells unpinned, want 6", n)
	}
}

// cellRun makes a RunResult with the figures summarizeCell uses.
func cellRun(qps, p99, p999, cpuUs float64, readBytes int64) RunResult {
	ops := int64(qps * 6)
	return RunResult{Total: OpStats{Count: ops, QPS: qps, P99Ms: p99, P999Ms: p999}, ServerUsPerOp: cpuUs, ServerReadBytes: readBytes * ops}
}

func TestSummarizeCell(t *testing.T) {
	systems := [2]*benchSystem{{name: "redis", ks: &Keyspace{}}, {name: "lavik", ks: &Keyspace{}}}
	disk := &DiskCeiling{ReadsPS: 100_000, AvgReadB: 1536, Depth: 256}
	get := Workload{Name: "get", ReadFrac: 1}
	uniform := DistSpec{Name: "uniform"}
	runs := [2][]RunResult{
		{cellRun(400_000, 3, 5, 2, 0), cellRun(500_000, 4, 7, 2.5, 0)},
		{cellRun(90_000, 16, 20, 5, 1536), cellRun(96_000, 18, 30, 6, 1540)},
	}
	cs := summarizeCell(cell{wl: get, conns: 50, pipeline: 16, dist: uniform}, runs, systems, disk)
	if cs.Redis.QPS != 450_000 || cs.Lavik.QPS != 93_000 || cs.Lavik.P999Ms != 25 || cs.Lavik.CPUUsPerOp != 5.5 || cs.Redis.CPUUsPerOp != 2.25 {
		t.Errorf("medians: %+v / %+v", cs.Redis, cs.Lavik)
	}
	if cs.CPURatio != 5.5/2.25 || cs.P999Ratio != 25.0/6 || cs.QPSRatio != 93_000.0/450_000 {
		t.Errorf("ratios: cpu %v p99.9 %v ops %v", cs.CPURatio, cs.P999Ratio, cs.QPSRatio)
	}
	// Every GET read a whole record (the collector's reads push it over 1: capped).
	if !cs.DiskCell || cs.DiskFrac != 1 || cs.DiskPct != 93 {
		t.Errorf("disk: cell %v frac %v pct %v", cs.DiskCell, cs.DiskFrac, cs.DiskPct)
	}

	// Half the GETs from a cache: half count against the disk.
	half := [2][]RunResult{{cellRun(400_000, 3, 5, 2, 0)}, {cellRun(100_000, 16, 20, 5, 768)}}
	if cs := summarizeCell(cell{wl: get, conns: 50, pipeline: 16, dist: uniform}, half, systems, disk); cs.DiskFrac != 0.5 || cs.DiskPct != 50 {
		t.Errorf("half from disk: frac %v pct %v", cs.DiskFrac, cs.DiskPct)
	}
	// Not set against the disk: too few GETs outstanding, zipf keys, SET.
	for _, c := range []cell{
		{wl: get, conns: 50, pipeline: 1, dist: uniform},
		{wl: get, conns: 50, pipeline: 16, dist: DistSpec{Name: "zipf", Theta: 0.99}, mode: modeZipf},
		{wl: Workload{Name: "set"}, conns: 50, pipeline: 16, dist: uniform},
	} {
		if cs := summarizeCell(c, runs, systems, disk); cs.DiskCell || cs.DiskPct != 0 {
			t.Errorf("%s %dx%d set against the disk", c.label(), c.conns, c.pipeline)
		}
	}
	if cs := summarizeCell(cell{wl: get, conns: 50, pipeline: 16, dist: uniform}, runs, systems, nil); cs.DiskCell {
		t.Error("set against a disk ceiling that was not measured")
	}

	var b strings.Builder
	writeCompareTable(&b, []CellSummary{cs}, true)
	for _, want := range []string{"p99.9 ms", "cpu us/op", "cpu/op ratio", "lavik % of disk", "93.0%", "2.44x"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
