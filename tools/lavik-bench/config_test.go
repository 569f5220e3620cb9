package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// parseWith runs the real flag set of a command through urfave/cli and returns what the parse
// function made of it.
func parseWith[T any](t *testing.T, cmd string, flags []cli.Flag, parse func(*cli.Context) (T, error), args ...string) (T, error) {
	t.Helper()
	var cfg T
	var perr error
	app := &cli.App{
		Name:           "lavik-bench",
		ExitErrHandler: func(*cli.Context, error) {},
		Writer:         &strings.Builder{},
		ErrWriter:      &strings.Builder{},
		Commands: []*cli.Command{{Name: cmd, Flags: flags, Action: func(c *cli.Context) error {
			cfg, perr = parse(c)
			return nil
		}}},
	}
	if err := app.Run(append([]string{"lavik-bench", cmd}, args...)); err != nil {
		return cfg, err
	}
	return cfg, perr
}

func TestParseRunDefaults(t *testing.T) {
	cfg, err := parseWith(t, "run", runFlags(), parseRunConfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:6379" || cfg.Name != cfg.Addr || cfg.Keys != 1_000_000 || !cfg.Load {
		t.Errorf("defaults: %+v", cfg)
	}
	if cfg.Value != (ValueSpec{1024, 1024}) || cfg.Workload.Name != "get" || cfg.Workload.ReadFrac != 1 {
		t.Errorf("value/workload defaults: %+v %+v", cfg.Value, cfg.Workload)
	}
	if !reflect.DeepEqual(cfg.Conns, []int{50}) || cfg.Pipeline != 1 || cfg.Duration != 10*time.Second || cfg.Warmup != 3*time.Second {
		t.Errorf("run shape defaults: conns %v pipeline %d duration %v warmup %v", cfg.Conns, cfg.Pipeline, cfg.Duration, cfg.Warmup)
	}
	if cfg.Dist.Name != "uniform" || cfg.VerifySample != 0.1 || cfg.HashUpdate != updateAuto {
		t.Errorf("dist/verify defaults: %+v %v %v", cfg.Dist, cfg.VerifySample, cfg.HashUpdate)
	}
}

func TestParseRunFlags(t *testing.T) {
	cfg, err := parseWith(t, "run", runFlags(), parseRunConfig,
		"--addr", "127.0.0.1:7000", "--name", "lavik", "--workload", "mixed", "--ratio", "3:1",
		"--value-min", "1000", "--value-max", "4000", "--dist", "zipf", "--zipf-theta", "0.9",
		"--sweep", "50, 80,160", "--pipeline", "16", "--duration", "2s", "--warmup", "0s",
		"--verify-sample", "1", "--seed", "7", "--load=false", "--json", "-")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Value != (ValueSpec{1000, 4000}) || cfg.Workload.ReadFrac != 0.75 || cfg.Dist.Theta != 0.9 {
		t.Errorf("got %+v %+v %+v", cfg.Value, cfg.Workload, cfg.Dist)
	}
	if !reflect.DeepEqual(cfg.Conns, []int{50, 80, 160}) || cfg.Pipeline != 16 || cfg.Warmup != 0 || cfg.Load {
		t.Errorf("got conns %v pipeline %d warmup %v load %v", cfg.Conns, cfg.Pipeline, cfg.Warmup, cfg.Load)
	}
	if cfg.Seed != 7 || cfg.VerifySample != 1 || cfg.JSONPath != "-" || cfg.Name != "lavik" {
		t.Errorf("got seed %d verify %v json %q name %q", cfg.Seed, cfg.VerifySample, cfg.JSONPath, cfg.Name)
	}
}

func TestParseRunRejects(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--value-min", "4000", "--value-max", "1000"}, "--value-min 4000 is larger than --value-max 1000"},
		{[]string{"--value-min", "100"}, "go together"},
		{[]string{"--value-size", "8"}, "value size 8 B"},
		{[]string{"--value-size", "100", "--value-min", "100", "--value-max", "200"}, "conflicts"},
		{[]string{"--workload", "scan"}, `workload "scan"`},
		{[]string{"--workload", "mixed", "--ratio", "1-1"}, "--ratio"},
		{[]string{"--dist", "pareto"}, `--dist "pareto"`},
		{[]string{"--dist", "zipf", "--zipf-theta", "1"}, "--zipf-theta 1"},
		{[]string{"--dist", "gauss", "--gauss-stddev", "0"}, "--gauss-stddev 0"},
		{[]string{"--conns", "0"}, "--conns 0"},
		{[]string{"--conns", "10", "--sweep", "1,2"}, "both given"},
		{[]string{"--sweep", "50,x"}, "--sweep"},
		{[]string{"--pipeline", "0"}, "--pipeline 0"},
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--verify-sample", "1.5"}, "--verify-sample 1.5"},
		{[]string{"--keys", "0"}, "--keys 0"},
		{[]string{"--hash-update", "lua"}, "--hash-update"},
		{[]string{"--field-size", "10"}, "--field-size 10"},
		{[]string{"extra"}, "unexpected argument"},
	}
	for _, c := range cases {
		_, err := parseWith(t, "run", runFlags(), parseRunConfig, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error containing %q", c.args, err, c.want)
		}
	}
	// An unknown flag is urfave/cli's error.
	if _, err := parseWith(t, "run", runFlags(), parseRunConfig, "--no-such-flag"); err == nil {
		t.Error("unknown flag accepted")
	}
}

func TestParseCompare(t *testing.T) {
	cfg, err := parseWith(t, "compare", compareFlags(), parseCompareConfig)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Workloads) != 2 || cfg.Workloads[0].Name != "get" || cfg.Workloads[1].Name != "set" {
		t.Errorf("workloads %+v", cfg.Workloads)
	}
	if !reflect.DeepEqual(cfg.Conns, []int{50, 200}) || !reflect.DeepEqual(cfg.Pipelines, []int{1, 16}) || cfg.Rounds != 2 {
		t.Errorf("matrix %v %v %d", cfg.Conns, cfg.Pipelines, cfg.Rounds)
	}
	wantLavik := []string{"bin/lavik-data", "--port", "0", "--bind", "127.0.0.1", "--dir", "{dir}", "--appendfsync", "everysec"}
	if !reflect.DeepEqual(cfg.LavikArgv, wantLavik) {
		t.Errorf("lavik argv %q", cfg.LavikArgv)
	}
	wantRedis := []string{"redis-server", "--port", "{port}", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", "{dir}"}
	if !reflect.DeepEqual(cfg.RedisArgv, wantRedis) {
		t.Errorf("redis argv %q", cfg.RedisArgv)
	}

	cfg, err = parseWith(t, "compare", compareFlags(), parseCompareConfig, "--full", "--conns", "10,20",
		"--lavik-bin", "/x/lavik-data", "--lavik-args", "--value-cache-size 0")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Workloads) != 3 || !reflect.DeepEqual(cfg.Conns, []int{10, 20}) || !reflect.DeepEqual(cfg.Pipelines, []int{1}) ||
		cfg.Duration != 10*time.Second || cfg.Warmup != 3*time.Second {
		t.Errorf("--full: %+v conns %v pipelines %v %v %v", cfg.Workloads, cfg.Conns, cfg.Pipelines, cfg.Duration, cfg.Warmup)
	}
	if got := cfg.LavikArgv; got[0] != "/x/lavik-data" || got[len(got)-2] != "--value-cache-size" || got[len(got)-1] != "0" {
		t.Errorf("lavik argv %q", got)
	}

	cfg, err = parseWith(t, "compare", compareFlags(), parseCompareConfig,
		"--lavik-cmd", `redis-server --port {port} --save '' --dir "{dir}"`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"redis-server", "--port", "{port}", "--save", "", "--dir", "{dir}"}; !reflect.DeepEqual(cfg.LavikArgv, want) {
		t.Errorf("--lavik-cmd argv %q", cfg.LavikArgv)
	}
	for _, args := range [][]string{
		{"--lavik-cmd", "x", "--lavik-bin", "y"},
		{"--rounds", "0"},
		{"--pipelines", ""},
		{"--workloads", "get,nope"},
		{"--lavik-args", "'unterminated"},
	} {
		if _, err := parseWith(t, "compare", compareFlags(), parseCompareConfig, args...); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	cases := map[string][]string{
		``:                          nil,
		`a b  c`:                    {"a", "b", "c"},
		`--save ''`:                 {"--save", ""},
		`"a b" 'c d' e\ f`:          {"a b", "c d", "e f"},
		`x="q \"y\" \\" z`:          {`x=q "y" \`, "z"},
		`--dir {dir} --port {port}`: {"--dir", "{dir}", "--port", "{port}"},
	}
	for in, want := range cases {
		got, err := splitArgs(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`'a`, `"a`} {
		if _, err := splitArgs(bad); err == nil {
			t.Errorf("splitArgs(%q) accepted", bad)
		}
	}
}

func TestReadyLine(t *testing.T) {
	for line, want := range map[string]string{
		`time=2025-01-01T00:00:00Z level=INFO msg="ready to accept connections" addr=127.0.0.1:40123`: "127.0.0.1:40123",
		`level=INFO msg="ready to accept connections" addr=127.0.0.1:7 shards=8`:                      "127.0.0.1:7",
		`msg="listening" addr=127.0.0.1:40123`:                                                        "",
	} {
		m := readyAddrRE.FindStringSubmatch(line)
		got := ""
		if m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", line, got, want)
		}
	}
}

func TestParseCapacity(t *testing.T) {
	cfg, err := parseWith(t, "capacity", capacityFlags(), parseCapacityConfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Keys != 20_000_000 || cfg.BaseKeys != 1_000_000 || cfg.MemoryLimit != 2<<30 || cfg.Value != (ValueSpec{1024, 1024}) {
		t.Errorf("sizes: keys %d base %d limit %d value %v", cfg.Keys, cfg.BaseKeys, cfg.MemoryLimit, cfg.Value)
	}
	if !reflect.DeepEqual(cfg.Conns, []int{50}) || !reflect.DeepEqual(cfg.Pipelines, []int{1, 16}) || cfg.Rounds != 2 ||
		cfg.Warmup != 2*time.Second || cfg.Duration != 6*time.Second || cfg.Dist.Name != "uniform" {
		t.Errorf("cells: conns %v pipelines %v rounds %d warmup %v duration %v dist %v", cfg.Conns, cfg.Pipelines, cfg.Rounds,
			cfg.Warmup, cfg.Duration, cfg.Dist)
	}
	wantLavik := []string{"bin/lavik-data", "--port", "0", "--bind", "127.0.0.1", "--dir", "{dir}", "--appendfsync", "everysec"}
	if !reflect.DeepEqual(cfg.LavikArgv, wantLavik) || cfg.Keep || cfg.Workdir != "" {
		t.Errorf("lavik argv %q keep %v workdir %q", cfg.LavikArgv, cfg.Keep, cfg.Workdir)
	}

	cfg, err = parseWith(t, "capacity", capacityFlags(), parseCapacityConfig, "--memory-limit", "0", "--keys", "5000",
		"--base-keys", "1000", "--conns", "4,8", "--pipelines", "2", "--rounds", "1", "--lavik-bin", "/x/lavik-data",
		"--lavik-args", "--io-engine pread", "--workdir", "/data", "--keep", "--json", "-")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MemoryLimit != 0 || cfg.Keys != 5000 || cfg.BaseKeys != 1000 || !reflect.DeepEqual(cfg.Conns, []int{4, 8}) ||
		!reflect.DeepEqual(cfg.Pipelines, []int{2}) || cfg.Rounds != 1 || !cfg.Keep || cfg.Workdir != "/data" || cfg.JSONPath != "-" {
		t.Errorf("got %+v", cfg)
	}
	if got := cfg.LavikArgv; got[0] != "/x/lavik-data" || !reflect.DeepEqual(got[len(got)-2:], []string{"--io-engine", "pread"}) {
		t.Errorf("lavik argv %q", got)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--base-keys", "0"}, "--base-keys 0"},
		{[]string{"--keys", "1000", "--base-keys", "1000"}, "fewer than --keys 1000"},
		{[]string{"--memory-limit", "lots"}, `--memory-limit: "lots" is not a byte count`},
		{[]string{"--memory-limit", "1MiB"}, "at least 16.00 MiB"},
		{[]string{"--conns", "0"}, "--conns"},
		{[]string{"--pipelines", "x"}, "--pipelines"},
		{[]string{"--rounds", "0"}, "--rounds 0"},
		{[]string{"--lavik-cmd", "x", "--lavik-bin", "y"}, "replaces"},
		{[]string{"--value-size", "8"}, "value size 8 B"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		_, err := parseWith(t, "capacity", capacityFlags(), parseCapacityConfig, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error containing %q", c.args, err, c.want)
		}
	}
	// Flags of other workloads are not offered.
	if _, err := parseWith(t, "capacity", capacityFlags(), parseCapacityConfig, "--workload", "set"); err == nil {
		t.Error("--workload accepted")
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1048576": 1 << 20, "2GiB": 2 << 30, "2G": 2 << 30, "2gb": 2 << 30, "512MiB": 512 << 20, "512m": 512 << 20,
		"64k": 64 << 10, " 1TiB ": 1 << 40,
	} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "GiB", "-1", "1.5G", "2X", "99999999999T"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
}
