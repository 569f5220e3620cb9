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
