package main

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// commonConfig holds the settings `run` and `compare` share.
type commonConfig struct {
	Keys         int
	Value        ValueSpec
	Fields       int
	FieldSize    int
	Dist         DistSpec
	Ratio        string
	Threads      int
	Duration     time.Duration
	Warmup       time.Duration
	Timeout      time.Duration
	VerifySample float64
	Seed         uint64
	LoadConns    int
	LoadPipeline int
	JSONPath     string
	CSVPath      string
	ChartPath    string
	NoProgress   bool
}

// setup applies --threads and returns where the human-readable report goes: stdout, unless
// the JSON or CSV output goes there.
func (c commonConfig) setup(stdout, stderr io.Writer) io.Writer {
	if c.Threads > 0 {
		runtime.GOMAXPROCS(c.Threads)
	}
	if c.JSONPath == "-" || c.CSVPath == "-" {
		return stderr
	}
	return stdout
}

// runConfig is `lavik-bench run`.
type runConfig struct {
	commonConfig
	Addr       string
	Name       string
	Workload   Workload
	Load       bool
	Conns      []int // one point per entry: --conns, or the --sweep list
	Pipeline   int
	HashUpdate string
}

// compareConfig is `lavik-bench compare`.
type compareConfig struct {
	commonConfig
	LavikArgv      []string // template; see serverTemplate
	RedisArgv      []string
	Workloads      []Workload
	Conns          []int
	Pipelines      []int
	Rounds         int
	Full           bool
	Workdir        string
	Keep           bool
	Restart        bool
	StartTimeout   time.Duration
	RestartTimeout time.Duration

	// Pin, when enabled, adds the pinned cells: the matrix again with the servers and the
	// generator on separate CPUs (pin.go).
	Pin pinSpec
	// Overwrites is how many times every key is written again after the load, so that most of
	// lavik-data's log is garbage its collector works on while the cells run.
	Overwrites int
	// ZipfPipelines are the pipeline depths of the zipf GET cells (at every connection count),
	// run with lavik-data's value cache at ZipfCachePct percent of the loaded value bytes, or
	// at ZipfCacheBytes when that is set.
	ZipfPipelines  []int
	ZipfCachePct   float64
	ZipfCacheBytes int64
	LavikCacheArgv []string // the arguments turning the cache on, with {bytes}
	// Disk is the ceiling measurement; DiskSize 0 turns it off.
	DiskSize     int64
	DiskDepth    int
	DiskBatch    int
	DiskDuration time.Duration
	DiskEngine   string
}

// capacityConfig is `lavik-bench capacity`. Keys (from the common flags) is the size the
// dataset grows to; BaseKeys the size it is measured at first.
type capacityConfig struct {
	commonConfig
	LavikArgv    []string // template; see serverArgv
	BaseKeys     int
	MemoryLimit  int64 // bytes; 0 = no cgroup
	Conns        []int
	Pipelines    []int
	Rounds       int
	Workdir      string
	Keep         bool
	StartTimeout time.Duration
}

func commonFlags(duration, warmup time.Duration) []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "keys", Value: 1_000_000, Usage: "number of keys (records) the workload uses; the load phase writes all of them"},
		&cli.IntFlag{Name: "value-size", Value: 1024, Usage: "fixed value size in bytes (at least 32)"},
		&cli.IntFlag{Name: "value-min", Usage: "with --value-max: value sizes uniform in [min, max] bytes (the published runs use 1000-4000)"},
		&cli.IntFlag{Name: "value-max", Usage: "see --value-min"},
		&cli.IntFlag{Name: "fields", Value: 10, Usage: "ycsb workloads: fields per hash record"},
		&cli.IntFlag{Name: "field-size", Value: 128, Usage: "ycsb workloads: bytes per field value (at least 40)"},
		&cli.StringFlag{Name: "dist", Value: "uniform", Usage: "key distribution: uniform, zipf or gauss"},
		&cli.Float64Flag{Name: "zipf-theta", Value: 0.99, Usage: "zipf exponent, between 0 and 1 (YCSB uses 0.99)"},
		&cli.Float64Flag{Name: "gauss-mean", Value: 0.5, Usage: "gauss centre as a fraction of the keyspace"},
		&cli.Float64Flag{Name: "gauss-stddev", Value: 0.05, Usage: "gauss standard deviation as a fraction of the keyspace"},
		&cli.StringFlag{Name: "ratio", Value: "1:1", Usage: "mixed workload: GETS:SETS"},
		&cli.IntFlag{Name: "threads", Usage: "OS threads running the generator (GOMAXPROCS); connections are goroutines spread over them; 0 = one per CPU"},
		&cli.DurationFlag{Name: "duration", Value: duration, Usage: "measured window per point"},
		&cli.DurationFlag{Name: "warmup", Value: warmup, Usage: "unmeasured load before each window"},
		&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "how long a reply may still take after the window before it counts as an error"},
		&cli.Float64Flag{Name: "verify-sample", Value: 0.1, Usage: "fraction of read replies compared byte for byte (all are checked for key, version and length)"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed for key and operation choice"},
		&cli.IntFlag{Name: "load-conns", Value: 16, Usage: "connections used by the load phase"},
		&cli.IntFlag{Name: "load-pipeline", Value: 64, Usage: "commands per batch in the load phase"},
		&cli.StringFlag{Name: "json", Usage: "write results as JSON to `FILE` (- for stdout)"},
		&cli.StringFlag{Name: "csv", Usage: "write results as CSV to `FILE` (- for stdout)"},
		&cli.StringFlag{Name: "chart", Usage: "write an HTML chart of throughput against p99 to `FILE`"},
		&cli.BoolFlag{Name: "no-progress", Usage: "no progress bar while loading"},
	}
}

func runFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "addr", Value: "127.0.0.1:6379", Usage: "server `HOST:PORT`"},
		&cli.StringFlag{Name: "name", Usage: "system name in reports and the chart (default: the address)"},
		&cli.StringFlag{Name: "workload", Value: "get", Usage: "get, set, mixed, ycsb-a or ycsb-b"},
		&cli.BoolFlag{Name: "load", Value: true, Usage: "fill all keys before measuring (--load=false: use data a previous run loaded)"},
		&cli.IntFlag{Name: "conns", Value: 50, Usage: "connections"},
		&cli.StringFlag{Name: "sweep", Usage: "comma-separated connection counts, one measured point each, e.g. 50,80,160,320,640,1280"},
		&cli.IntFlag{Name: "pipeline", Value: 1, Usage: "commands in flight per connection"},
		&cli.StringFlag{Name: "hash-update", Value: updateAuto, Usage: "ycsb updates: hreplace (LAVIK.HREPLACE), multi (MULTI DEL HSET EXEC) or auto (hreplace if the server knows it)"},
	}, commonFlags(10*time.Second, 3*time.Second)...)
}

func compareFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "lavik-bin", Value: "bin/lavik-data", Usage: "lavik-data binary"},
		&cli.StringFlag{Name: "lavik-args", Usage: "extra arguments for lavik-data, e.g. \"--value-cache-size 0\""},
		&cli.StringFlag{Name: "redis-bin", Value: "redis-server", Usage: "redis-server binary"},
		&cli.StringFlag{Name: "redis-args", Usage: "extra arguments for redis-server"},
		&cli.StringFlag{Name: "lavik-cmd", Hidden: true, Usage: "whole command line for the lavik side, with {port} and {dir}; for testing the harness"},
		&cli.StringFlag{Name: "redis-cmd", Hidden: true, Usage: "whole command line for the redis side, with {port} and {dir}"},
		&cli.StringFlag{Name: "workloads", Value: "get,set", Usage: "comma-separated workloads per cell"},
		&cli.StringFlag{Name: "conns", Value: "50,200", Usage: "comma-separated connection counts"},
		&cli.StringFlag{Name: "pipelines", Value: "1,16", Usage: "comma-separated pipeline depths"},
		&cli.IntFlag{Name: "rounds", Value: 2, Usage: "rounds over the matrix; the order of the two servers alternates each round"},
		&cli.BoolFlag{Name: "full", Usage: "bench-full defaults: workloads get,set,mixed; conns 50,80,160,320,640,1280; pipeline 1; warm-up 3s; window 10s (explicit flags win)"},
		&cli.StringFlag{Name: "workdir", Usage: "parent of the servers' data directories (default: the system temp dir)"},
		&cli.BoolFlag{Name: "keep", Usage: "keep the data directories and server logs"},
		&cli.BoolFlag{Name: "restart", Value: true, Usage: "measure Lavik's restart time on the loaded data"},
		&cli.DurationFlag{Name: "start-timeout", Value: time.Minute, Usage: "how long a server may take to start"},
		&cli.DurationFlag{Name: "restart-timeout", Value: 10 * time.Minute, Usage: "how long Lavik may take to restart with its data"},
		&cli.StringFlag{Name: "pin", Usage: "add pinned cells: the matrix again with both servers on the server CPUs (lavik-data started by taskset) and the generator on the client CPUs, e.g. server=0,client=1"},
		&cli.IntFlag{Name: "overwrites", Usage: "after loading, write every key this many times more, so that lavik-data's collector has garbage to work on during the cells"},
		&cli.StringFlag{Name: "zipf-pipelines", Usage: "add GET cells with zipf keys (--zipf-theta) at these pipeline depths, lavik-data restarted with its value cache (--zipf-cache), e.g. 1,16"},
		&cli.StringFlag{Name: "zipf-cache", Value: "10%", Usage: "lavik-data's value cache in the zipf cells: a percentage of the loaded value bytes, or a size such as 100MiB; 0 = no cache"},
		&cli.StringFlag{Name: "lavik-cache-args", Hidden: true, Value: "--value-cache-size {bytes}", Usage: "arguments turning lavik's value cache on, with {bytes}; for testing the harness"},
		&cli.StringFlag{Name: "disk-ceiling", Value: "0", Usage: "before starting the servers, measure random O_DIRECT reads of a GET's size on a file of this size in --workdir (e.g. 2GiB); 0 = not measured"},
		&cli.IntFlag{Name: "disk-depth", Value: 256, Usage: "reads in flight in the ceiling measurement (256: one lavik-data event loop's io_uring)"},
		&cli.DurationFlag{Name: "disk-duration", Value: 4 * time.Second, Usage: "measured window of the ceiling measurement"},
		&cli.StringFlag{Name: "disk-engine", Value: "auto", Usage: "value-log engine the ceiling measurement reads through: auto, uring or pread"},
	}, commonFlags(6*time.Second, 2*time.Second)...)
}

// capacityFlags are the common flags with a 20M-key default, those of workloads other than GET
// hidden, and the server and cgroup settings.
func capacityFlags() []cli.Flag {
	common := commonFlags(6*time.Second, 2*time.Second)
	for i, f := range common {
		switch f := f.(type) {
		case *cli.IntFlag:
			switch f.Name {
			case "keys":
				common[i] = &cli.IntFlag{Name: "keys", Value: 20_000_000, Usage: "keys the dataset grows to (named as in run, so the --base-keys loaded first stay valid)"}
			case "fields", "field-size":
				f.Hidden = true
			}
		case *cli.StringFlag:
			if f.Name == "ratio" {
				f.Hidden = true
			}
		}
	}
	return append([]cli.Flag{
		&cli.StringFlag{Name: "lavik-bin", Value: "bin/lavik-data", Usage: "lavik-data binary"},
		&cli.StringFlag{Name: "lavik-args", Usage: "extra arguments for lavik-data, e.g. \"--io-engine pread\""},
		&cli.StringFlag{Name: "lavik-cmd", Hidden: true, Usage: "whole command line of the server, with {port} and {dir}; for testing the harness"},
		&cli.StringFlag{Name: "memory-limit", Value: "2GiB", Usage: "memory cgroup limit for the server (heap and page cache), e.g. 2GiB, 512MiB; 0 = no cgroup"},
		&cli.IntFlag{Name: "base-keys", Value: 1_000_000, Usage: "keys loaded and measured first, the figure the larger dataset is compared with"},
		&cli.StringFlag{Name: "conns", Value: "50", Usage: "comma-separated connection counts"},
		&cli.StringFlag{Name: "pipelines", Value: "1,16", Usage: "comma-separated pipeline depths"},
		&cli.IntFlag{Name: "rounds", Value: 2, Usage: "rounds over the cells at each dataset size"},
		&cli.StringFlag{Name: "workdir", Usage: "parent of the server's data directory, on the disk under test (default: the system temp dir; not a tmpfs)"},
		&cli.BoolFlag{Name: "keep", Usage: "keep the data directory and the server log"},
		&cli.DurationFlag{Name: "start-timeout", Value: time.Minute, Usage: "how long the server may take to start"},
	}, common...)
}

// parseBytes parses a byte count: a number with an optional suffix K, M, G or T, alone or
// followed by B or iB, in any case ("2GiB", "512m", "1048576"). Every suffix is a power of
// 1024, as the kernel reads memory.limit_in_bytes.
func parseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "b"), "i")
	shift := 0
	if n := len(t); n > 0 {
		if i := strings.IndexByte("kmgt", t[n-1]); i >= 0 {
			shift, t = 10*(i+1), t[:n-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("%q is not a byte count (e.g. 2GiB, 512MiB, 1048576)", s)
	}
	return n << shift, nil
}

// parseIntList parses "50,80,160".
func parseIntList(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--%s %q: want comma-separated positive integers", flag, s)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--%s is empty", flag)
	}
	return out, nil
}

func parseCommon(c *cli.Context) (commonConfig, error) {
	cc := commonConfig{
		Keys:      c.Int("keys"),
		Fields:    c.Int("fields"),
		FieldSize: c.Int("field-size"),
		Dist: DistSpec{Name: c.String("dist"), Theta: c.Float64("zipf-theta"),
			Mean: c.Float64("gauss-mean"), StdDev: c.Float64("gauss-stddev")},
		Ratio:        c.String("ratio"),
		Threads:      c.Int("threads"),
		Duration:     c.Duration("duration"),
		Warmup:       c.Duration("warmup"),
		Timeout:      c.Duration("timeout"),
		VerifySample: c.Float64("verify-sample"),
		Seed:         c.Uint64("seed"),
		LoadConns:    c.Int("load-conns"),
		LoadPipeline: c.Int("load-pipeline"),
		JSONPath:     c.String("json"),
		CSVPath:      c.String("csv"),
		ChartPath:    c.String("chart"),
		NoProgress:   c.Bool("no-progress"),
	}
	if cc.Keys < 1 || cc.Keys > maxKeys {
		return cc, fmt.Errorf("--keys %d: want 1 to %d", cc.Keys, maxKeys)
	}
	vmin, vmax := c.Int("value-min"), c.Int("value-max")
	switch {
	case c.IsSet("value-min") != c.IsSet("value-max"):
		return cc, fmt.Errorf("--value-min and --value-max go together (got --value-min %d, --value-max %d)", vmin, vmax)
	case c.IsSet("value-min") && c.IsSet("value-size"):
		return cc, fmt.Errorf("--value-size %d conflicts with --value-min/--value-max", c.Int("value-size"))
	case c.IsSet("value-min"):
		if vmin > vmax {
			return cc, fmt.Errorf("--value-min %d is larger than --value-max %d", vmin, vmax)
		}
		cc.Value = ValueSpec{Min: vmin, Max: vmax}
	default:
		cc.Value = ValueSpec{Min: c.Int("value-size"), Max: c.Int("value-size")}
	}
	if cc.Value.Min < minValueSize || cc.Value.Max > maxValueSize {
		return cc, fmt.Errorf("value size %s: want %d bytes to %d MiB (verification needs a %d-byte header)",
			cc.Value, minValueSize, maxValueSize>>20, minValueSize)
	}
	if cc.Fields < 1 || cc.FieldSize < minFieldSize || cc.FieldSize > maxValueSize {
		return cc, fmt.Errorf("--fields %d --field-size %d: want at least 1 field of at least %d bytes", cc.Fields, cc.FieldSize, minFieldSize)
	}
	if err := cc.Dist.validate(); err != nil {
		return cc, err
	}
	if _, _, err := parseRatio(cc.Ratio); err != nil {
		return cc, err
	}
	switch {
	case cc.Threads < 0:
		return cc, fmt.Errorf("--threads %d: want 0 (one per CPU) or more", cc.Threads)
	case cc.Duration <= 0:
		return cc, fmt.Errorf("--duration %v: want a positive window", cc.Duration)
	case cc.Warmup < 0:
		return cc, fmt.Errorf("--warmup %v: want zero or more", cc.Warmup)
	case cc.Timeout <= 0:
		return cc, fmt.Errorf("--timeout %v: want a positive duration", cc.Timeout)
	case cc.VerifySample < 0 || cc.VerifySample > 1:
		return cc, fmt.Errorf("--verify-sample %g: want a fraction in [0, 1]", cc.VerifySample)
	case cc.LoadConns < 1 || cc.LoadPipeline < 1:
		return cc, fmt.Errorf("--load-conns %d --load-pipeline %d: want 1 or more", cc.LoadConns, cc.LoadPipeline)
	}
	return cc, nil
}

func parseRunConfig(c *cli.Context) (runConfig, error) {
	cc, err := parseCommon(c)
	rc := runConfig{commonConfig: cc, Addr: c.String("addr"), Name: c.String("name"), Load: c.Bool("load"),
		Pipeline: c.Int("pipeline"), HashUpdate: c.String("hash-update")}
	if err != nil {
		return rc, err
	}
	if c.NArg() > 0 {
		return rc, fmt.Errorf("unexpected argument %q (flags go before arguments; run takes none)", c.Args().First())
	}
	if rc.Name == "" {
		rc.Name = rc.Addr
	}
	if rc.Workload, err = parseWorkload(c.String("workload"), cc.Ratio); err != nil {
		return rc, err
	}
	switch {
	case c.IsSet("sweep") && c.IsSet("conns"):
		return rc, fmt.Errorf("--conns %d and --sweep %q both given: a sweep sets the connection counts", c.Int("conns"), c.String("sweep"))
	case c.IsSet("sweep"):
		if rc.Conns, err = parseIntList("sweep", c.String("sweep")); err != nil {
			return rc, err
		}
	default:
		if c.Int("conns") < 1 {
			return rc, fmt.Errorf("--conns %d: want 1 or more", c.Int("conns"))
		}
		rc.Conns = []int{c.Int("conns")}
	}
	if rc.Pipeline < 1 {
		return rc, fmt.Errorf("--pipeline %d: want 1 or more", rc.Pipeline)
	}
	switch rc.HashUpdate {
	case updateAuto, updateHReplace, updateMulti:
	default:
		return rc, fmt.Errorf("--hash-update %q: want auto, hreplace or multi", rc.HashUpdate)
	}
	return rc, nil
}

func parseCapacityConfig(c *cli.Context) (capacityConfig, error) {
	cc, err := parseCommon(c)
	cp := capacityConfig{commonConfig: cc, BaseKeys: c.Int("base-keys"), Rounds: c.Int("rounds"),
		Workdir: c.String("workdir"), Keep: c.Bool("keep"), StartTimeout: c.Duration("start-timeout")}
	if err != nil {
		return cp, err
	}
	if c.NArg() > 0 {
		return cp, fmt.Errorf("unexpected argument %q (flags go before arguments; capacity takes none)", c.Args().First())
	}
	if cp.BaseKeys < 1 || cp.BaseKeys >= cp.Keys {
		return cp, fmt.Errorf("--base-keys %d: want 1 or more and fewer than --keys %d", cp.BaseKeys, cp.Keys)
	}
	if cp.MemoryLimit, err = parseBytes(c.String("memory-limit")); err != nil {
		return cp, fmt.Errorf("--memory-limit: %w", err)
	}
	if cp.MemoryLimit > 0 && cp.MemoryLimit < minMemoryLimit {
		return cp, fmt.Errorf("--memory-limit %s: want 0 (no cgroup) or at least %s", c.String("memory-limit"), humanBytes(minMemoryLimit))
	}
	if cp.Conns, err = parseIntList("conns", c.String("conns")); err != nil {
		return cp, err
	}
	if cp.Pipelines, err = parseIntList("pipelines", c.String("pipelines")); err != nil {
		return cp, err
	}
	if cp.Rounds < 1 {
		return cp, fmt.Errorf("--rounds %d: want 1 or more", cp.Rounds)
	}
	if cp.StartTimeout <= 0 {
		return cp, fmt.Errorf("--start-timeout %v: want a positive duration", cp.StartTimeout)
	}
	if cp.LavikArgv, err = serverArgv(c, "lavik", defaultLavikCmd); err != nil {
		return cp, err
	}
	return cp, nil
}

// minMemoryLimit is the smallest --memory-limit: below it a server cannot even start, and the
// failure would say nothing about capacity.
const minMemoryLimit = 16 << 20

// fullDefaults are the settings --full gives compare where the flag was not set explicitly.
var fullDefaults = struct {
	workloads, conns, pipelines string
	warmup, duration            time.Duration
}{"get,set,mixed", "50,80,160,320,640,1280", "1", 3 * time.Second, 10 * time.Second}

func parseCompareConfig(c *cli.Context) (compareConfig, error) {
	cc, err := parseCommon(c)
	cmp := compareConfig{commonConfig: cc, Rounds: c.Int("rounds"), Full: c.Bool("full"), Workdir: c.String("workdir"),
		Keep: c.Bool("keep"), Restart: c.Bool("restart"), StartTimeout: c.Duration("start-timeout"),
		RestartTimeout: c.Duration("restart-timeout")}
	if err != nil {
		return cmp, err
	}
	if c.NArg() > 0 {
		return cmp, fmt.Errorf("unexpected argument %q (flags go before arguments; compare takes none)", c.Args().First())
	}
	pick := func(flag, full string) string {
		if cmp.Full && !c.IsSet(flag) {
			return full
		}
		return c.String(flag)
	}
	if cmp.Full {
		if !c.IsSet("warmup") {
			cmp.Warmup = fullDefaults.warmup
		}
		if !c.IsSet("duration") {
			cmp.Duration = fullDefaults.duration
		}
	}
	for _, name := range strings.Split(pick("workloads", fullDefaults.workloads), ",") {
		w, err := parseWorkload(strings.TrimSpace(name), cc.Ratio)
		if err != nil {
			return cmp, err
		}
		cmp.Workloads = append(cmp.Workloads, w)
	}
	if cmp.Conns, err = parseIntList("conns", pick("conns", fullDefaults.conns)); err != nil {
		return cmp, err
	}
	if cmp.Pipelines, err = parseIntList("pipelines", pick("pipelines", fullDefaults.pipelines)); err != nil {
		return cmp, err
	}
	if cmp.Rounds < 1 {
		return cmp, fmt.Errorf("--rounds %d: want 1 or more", cmp.Rounds)
	}
	if cmp.LavikArgv, err = serverArgv(c, "lavik", defaultLavikCmd); err != nil {
		return cmp, err
	}
	if cmp.RedisArgv, err = serverArgv(c, "redis", defaultRedisCmd); err != nil {
		return cmp, err
	}
	if err := parseCompareExtras(c, &cmp); err != nil {
		return cmp, err
	}
	return cmp, nil
}

// parseCompareExtras parses the settings of the pinned, zipf and disk-ceiling measurements.
func parseCompareExtras(c *cli.Context, cmp *compareConfig) error {
	var err error
	if cmp.Pin, err = parsePin(c.String("pin")); err != nil {
		return err
	}
	if cmp.Overwrites = c.Int("overwrites"); cmp.Overwrites < 0 {
		return fmt.Errorf("--overwrites %d: want 0 or more", cmp.Overwrites)
	}
	if c.String("zipf-pipelines") != "" {
		if cmp.ZipfPipelines, err = parseIntList("zipf-pipelines", c.String("zipf-pipelines")); err != nil {
			return err
		}
	}
	zc := strings.TrimSpace(c.String("zipf-cache"))
	if p, ok := strings.CutSuffix(zc, "%"); ok {
		cmp.ZipfCachePct, err = strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || cmp.ZipfCachePct < 0 || cmp.ZipfCachePct > 100 {
			return fmt.Errorf("--zipf-cache %q: want a percentage from 0%% to 100%% or a size", zc)
		}
	} else if cmp.ZipfCacheBytes, err = parseBytes(zc); err != nil {
		return fmt.Errorf("--zipf-cache: %w", err)
	}
	if cmp.LavikCacheArgv, err = splitArgs(c.String("lavik-cache-args")); err != nil {
		return fmt.Errorf("--lavik-cache-args: %w", err)
	}
	if cmp.DiskSize, err = parseBytes(c.String("disk-ceiling")); err != nil {
		return fmt.Errorf("--disk-ceiling: %w", err)
	}
	cmp.DiskSize = diskFileSize(cmp.DiskSize)
	if c.String("disk-ceiling") != "0" && cmp.DiskSize < minDiskFile {
		return fmt.Errorf("--disk-ceiling %s: want 0 (not measured) or at least %s, so that the reads spread", c.String("disk-ceiling"), humanBytes(minDiskFile))
	}
	cmp.DiskDepth, cmp.DiskDuration, cmp.DiskEngine = c.Int("disk-depth"), c.Duration("disk-duration"), c.String("disk-engine")
	cmp.DiskBatch = min(16, max(cmp.DiskDepth, 1))
	switch {
	case cmp.DiskDepth < 1 || cmp.DiskDepth > 4096:
		return fmt.Errorf("--disk-depth %d: want 1 to 4096", cmp.DiskDepth)
	case cmp.DiskDuration <= 0:
		return fmt.Errorf("--disk-duration %v: want a positive window", cmp.DiskDuration)
	}
	switch cmp.DiskEngine {
	case "auto", "uring", "pread":
	default:
		return fmt.Errorf("--disk-engine %q: want auto, uring or pread", cmp.DiskEngine)
	}
	return nil
}

// minDiskFile is the smallest ceiling file: 64 MiB, so that a test can measure quickly; make
// bench uses 2 GiB, for reads spread over the device.
const minDiskFile = 64 << 20

// zipfCacheBytes is lavik-data's value cache for the zipf cells given the value bytes loaded:
// at least 1 MiB (lavik-data's smallest) unless it is off.
func (c compareConfig) zipfCacheBytes() int64 {
	n := c.ZipfCacheBytes
	if c.ZipfCachePct > 0 {
		n = int64(c.ZipfCachePct / 100 * float64(c.Keys) * c.Value.mean())
	}
	if n > 0 && n < 1<<20 {
		n = 1 << 20
	}
	return n
}

// Default command lines; {bin}, {port} and {dir} are filled in when a server starts. Without
// {port} the server is started with its own choice of port and must print
// "ready to accept connections ... addr=HOST:PORT", as lavik-data does with --port 0.
var (
	defaultLavikCmd = []string{"{bin}", "--port", "0", "--bind", "127.0.0.1", "--dir", "{dir}", "--appendfsync", "everysec"}
	defaultRedisCmd = []string{"{bin}", "--port", "{port}", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", "{dir}"}
)

// serverArgv builds one side's command line from --NAME-cmd, or from the default with --NAME-bin
// and --NAME-args.
func serverArgv(c *cli.Context, name string, def []string) ([]string, error) {
	if c.IsSet(name + "-cmd") {
		if c.IsSet(name+"-bin") || c.IsSet(name+"-args") {
			return nil, fmt.Errorf("--%s-cmd replaces --%s-bin and --%s-args; give one or the other", name, name, name)
		}
		argv, err := splitArgs(c.String(name + "-cmd"))
		if err == nil && len(argv) == 0 {
			err = fmt.Errorf("--%s-cmd is empty", name)
		}
		return argv, err
	}
	extra, err := splitArgs(c.String(name + "-args"))
	if err != nil {
		return nil, fmt.Errorf("--%s-args: %w", name, err)
	}
	argv := make([]string, 0, len(def)+len(extra))
	for _, a := range def {
		argv = append(argv, strings.ReplaceAll(a, "{bin}", c.String(name+"-bin")))
	}
	return append(argv, extra...), nil
}

// splitArgs splits a command line as a POSIX shell would for words: whitespace separates,
// single quotes keep everything, double quotes keep all but \" and \\, a backslash outside
// quotes escapes the next character. No expansion of any kind.
func splitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
			inWord = true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
