package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The compare harness. Both servers run on this machine at the same time, each on its own
// loopback port and data directory; the generator measures one at a time. Rounds walk the
// whole matrix and alternate which server goes first in each cell (round 1: redis, lavik;
// round 2: lavik, redis; ...), so slow drift of a shared, noisy machine (other tenants, thermal
// state, page cache, the SET cells growing Lavik's log) falls on both. Each reported figure is
// the median over rounds (with two rounds, the mean of the two); the spread column is
// (max - min) / median of the throughput over rounds, a direct reading of the noise.
//
// The cells come in groups (cellMode), each run in its own rounds: the matrix; the matrix again
// pinned, servers and generator on separate cores (pin.go); GET with zipf keys and Lavik's value
// cache. A group that needs lavik-data started differently (through taskset, with the cache)
// begins with a restart of it on its data, which is also the restart the report measures;
// redis-server keeps running throughout (it is pinned while it runs), so its data is loaded
// once. Rejected: a second lavik-data for the other groups (a second 1M-key load, and two
// servers' background work on a 2-core machine), and alternating groups within a round (a
// restart per group per round).

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

// cellMode is how the servers and the generator run in a cell.
type cellMode int

const (
	modeUnpinned cellMode = iota // every process may use every CPU; the matrix's own key distribution
	modePinned                   // servers on --pin's server CPUs, the generator on its client CPUs
	modeZipf                     // GET with zipf keys, lavik-data with its value cache
)

func (m cellMode) String() string {
	switch m {
	case modePinned:
		return "pinned"
	case modeZipf:
		return "zipf"
	}
	return ""
}

// cell is one point of the matrix.
type cell struct {
	wl       Workload
	conns    int
	pipeline int
	mode     cellMode
	dist     DistSpec
}

// label names the cell in the table: the workload, and the mode unless unpinned.
func (c cell) label() string {
	if c.mode == modeUnpinned {
		return c.wl.Name
	}
	return c.wl.Name + " " + c.mode.String()
}

// compareCommand is `lavik-bench compare`.
func compareCommand(ctx context.Context, cfg compareConfig, stdout, stderr io.Writer) (code int, err error) {
	out := cfg.setup(stdout, stderr)
	root, err := os.MkdirTemp(cfg.Workdir, "lavik-bench-")
	if err != nil {
		return exitUsage, usageError(err)
	}
	c := &comparison{ctx: ctx, cfg: cfg, stderr: stderr, choosers: map[string]keyChooser{}}
	c.systems = [2]*benchSystem{
		{name: "redis", hashUpdate: updateMulti},
		{name: "lavik", hashUpdate: updateHReplace},
	}
	for i, argv := range [2][]string{cfg.RedisArgv, cfg.LavikArgv} {
		s := c.systems[i]
		s.srv = newServerProc(s.name, argv, filepath.Join(root, s.name), logPath(root, s.name))
	}
	defer func() {
		for _, s := range c.systems {
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

	pinned, err := c.pinningPossible()
	if err != nil {
		return exitUsage, usageError(err)
	}
	c.cells = compareCells(cfg, pinned)
	c.runs = make([][2][]RunResult, len(c.cells))
	perRun := cfg.Warmup + cfg.Duration
	fmt.Fprintf(stderr, "lavik-bench compare: %d cells x 2 servers x %d rounds, about %v of measurement plus loading\n",
		len(c.cells), cfg.Rounds, time.Duration(len(c.cells)*2*cfg.Rounds)*perRun)

	if cfg.DiskSize > 0 {
		if err := c.measureDisk(root); err != nil {
			return setupFailure(ctx, err)
		}
	}

	// Start, measure the empty servers, load, overwrite.
	for _, s := range c.systems {
		d, err := s.srv.start(ctx, cfg.StartTimeout, -1)
		if err != nil {
			return setupFailure(ctx, err)
		}
		fmt.Fprintf(stderr, "started %s (pid %d) on %s in %.2fs: %s\n", s.name, s.srv.pid(), s.srv.addr, d.Seconds(), s.srv.commandLine())
		s.mem.System = s.name
		s.mem.EmptyRSS, _ = rssBytes(s.srv.pid())
	}
	c.rep.Redis, c.rep.Lavik = c.systems[sysRedis].srv.commandLine(), c.systems[sysLavik].srv.commandLine()
	if err := c.load(); err != nil {
		if ctx.Err() != nil || errors.Is(err, errInterrupted) {
			return exitInterrupted, errInterrupted
		}
		return exitErrors, &exitError{code: exitErrors, err: err} // a server that fails the load fails the comparison
	}

	// The cells, one group (mode) after another; lavik-data is restarted between groups that
	// need it started differently.
	for _, m := range []cellMode{modeUnpinned, modePinned, modeZipf} {
		err := c.runMode(m)
		if ctx.Err() != nil || errors.Is(err, errInterrupted) {
			return exitInterrupted, errInterrupted
		}
		if err != nil {
			break // recorded as a problem
		}
		if m == modeUnpinned {
			for _, s := range c.systems {
				s.mem.EndRSS, _ = rssBytes(s.srv.pid())
			}
			c.noteLavikDir("after the unpinned cells")
		}
	}
	for _, s := range c.systems {
		if s.hashUnsup != "" {
			c.v.unsupported = append(c.v.unsupported, s.name+": "+s.hashUnsup)
		}
	}
	if cfg.Restart && len(c.rep.Restarts) == 0 && len(c.v.problems) == 0 {
		c.restartLavik(nil, nil, "")
		if ctx.Err() != nil {
			return exitInterrupted, errInterrupted
		}
	}
	c.noteLavikDir("at the end")
	return c.report(out, stdout)
}

// comparison is one run of `compare`.
type comparison struct {
	ctx      context.Context
	cfg      compareConfig
	stderr   io.Writer
	systems  [2]*benchSystem
	cells    []cell
	runs     [][2][]RunResult // per cell, per system: one per round
	choosers map[string]keyChooser
	v        verdict
	rep      compareReport
	pinSkip  string // why the pinned cells do not run, when --pin asked for them
}

// pinningPossible reports whether the pinned cells run: --pin is given and this process may
// use its CPUs. Otherwise the reason is noted for the report. It is an error for --pin to be
// given without taskset, which lavik-data must be started through.
func (c *comparison) pinningPossible() (bool, error) {
	if !c.cfg.Pin.enabled() {
		return false, nil
	}
	allowed, err := allowedCPUs()
	if err == nil {
		c.pinSkip = c.cfg.Pin.unavailable(allowed)
	} else {
		c.pinSkip = err.Error()
	}
	if c.pinSkip != "" {
		fmt.Fprintf(c.stderr, "pinned cells skipped: %s\n", c.pinSkip)
		return false, nil
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return false, fmt.Errorf("--pin: taskset (util-linux) is needed to start lavik-data on CPUs %s: lavik-data sizes its "+
			"event loops by GOMAXPROCS, which Go takes from the CPUs a process may use when it starts: %w", c.cfg.Pin.Server, err)
	}
	return true, nil
}

// measureDisk measures the disk's ceiling in root, before the servers start.
func (c *comparison) measureDisk(root string) error {
	cfg := c.cfg
	p := diskParams{Dir: root, Size: cfg.DiskSize, Record: recordBytes(keyLen, int(math.Round(cfg.Value.mean()))),
		Engine: cfg.DiskEngine, Depth: cfg.DiskDepth, Batch: cfg.DiskBatch, Warmup: 500 * time.Millisecond,
		Duration: cfg.DiskDuration, Seed: cfg.Seed}
	fmt.Fprintf(c.stderr, "disk ceiling: writing a %s file of random bytes in %s, then reading it at random for %v\n",
		humanBytes(float64(p.Size)), root, p.Duration)
	d, err := measureDisk(c.ctx, p)
	if err != nil {
		if errors.Is(err, errInterrupted) || c.ctx.Err() != nil {
			return errInterrupted
		}
		if d == nil || d.Reads == 0 {
			return err
		}
		c.v.problems = append(c.v.problems, err.Error())
	}
	c.rep.Disk = d
	fmt.Fprintf(c.stderr, "%s (file written in %.1fs)\n", d, d.WriteS)
	return nil
}

// load loads every system, then writes every key again --overwrites times, each pass over both
// systems before the next.
func (c *comparison) load() error {
	for _, s := range c.systems {
		if err := s.loadAll(c.ctx, c.cfg, c.cells, c.stderr); err != nil {
			return err
		}
		s.mem.LoadedRSS, _ = rssBytes(s.srv.pid())
		if s.mem.Keys > 0 {
			s.mem.PerKeyRaw = float64(s.mem.LoadedRSS) / float64(s.mem.Keys)
			s.mem.PerKeyNet = float64(s.mem.LoadedRSS-s.mem.EmptyRSS) / float64(s.mem.Keys)
		}
	}
	c.noteLavikDir("after loading")
	for pass := 1; pass <= c.cfg.Overwrites; pass++ {
		for _, s := range c.systems {
			for _, ks := range []*Keyspace{s.ks, s.hks} {
				if ks == nil {
					continue
				}
				lr, err := load(c.ctx, c.cfg.loadParams(s.name, s.srv.addr, c.stderr), ks)
				if err != nil {
					return fmt.Errorf("overwriting %s: %w", s.name, err)
				}
				lr.Pass = pass
				fmt.Fprintln(c.stderr, lr)
				s.loads = append(s.loads, lr)
			}
		}
	}
	if c.cfg.Overwrites > 0 {
		c.noteLavikDir(fmt.Sprintf("after %d overwrites", c.cfg.Overwrites))
	}
	return nil
}

// noteLavikDir records how much disk lavik-data's data directory occupies now.
func (c *comparison) noteLavikDir(when string) {
	s := c.systems[sysLavik]
	_, alloc, err := diskUsage(s.srv.dir)
	if err != nil {
		return
	}
	c.rep.LavikDir = append(c.rep.LavikDir, DirUsage{When: when, Bytes: alloc})
}

// errStop ends the cells after a problem that is already recorded.
var errStop = errors.New("stopped")

// lavikSetup is how lavik-data must be started for the cells of mode m: a command prefix and
// extra arguments, and what the restart into it is called.
func (c *comparison) lavikSetup(m cellMode) (prefix, extra []string, into string) {
	switch m {
	case modePinned:
		prefix = []string{"taskset", "-c", c.cfg.Pin.Server.String()}
		return prefix, nil, "pinned: taskset -c " + c.cfg.Pin.Server.String()
	case modeZipf:
		if n := c.cfg.zipfCacheBytes(); n > 0 {
			for _, a := range c.cfg.LavikCacheArgv {
				extra = append(extra, strings.ReplaceAll(a, "{bytes}", strconv.FormatInt(n, 10)))
			}
			return nil, extra, "value cache " + humanBytes(float64(n))
		}
	}
	return nil, nil, "unpinned, no value cache"
}

// runMode runs the cells of mode m, --rounds times over, alternating which server goes first.
func (c *comparison) runMode(m cellMode) error {
	var idx []int
	for i, cl := range c.cells {
		if cl.mode == m {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	lv := c.systems[sysLavik].srv
	prefix, extra, into := c.lavikSetup(m)
	if !slices.Equal(prefix, lv.prefix) || !slices.Equal(extra, lv.extra) {
		if !c.restartLavik(prefix, extra, into) {
			return errStop
		}
	}
	if m == modePinned {
		unpin, err := c.pin()
		if err != nil {
			c.v.problems = append(c.v.problems, "pinning: "+err.Error())
			return errStop
		}
		defer unpin()
	}
	cfg := c.cfg
	for round := 0; round < cfg.Rounds; round++ {
		order := [2]int{sysRedis, sysLavik}
		if round%2 == 1 {
			order = [2]int{sysLavik, sysRedis}
		}
		for _, ci := range idx {
			cl := c.cells[ci]
			for _, si := range order {
				s := c.systems[si]
				ks := s.keyspaceFor(cl.wl)
				if ks == nil {
					continue // unsupported: reported in the table
				}
				p := runParams{System: s.name, Addr: s.srv.addr, Workload: cl.wl, HashUpdate: s.hashUpdate,
					Conns: cl.conns, Pipeline: cl.pipeline, Warmup: cfg.Warmup, Duration: cfg.Duration,
					Timeout: cfg.Timeout, VerifySample: cfg.VerifySample, Seed: cfg.Seed, ServerPID: s.srv.pid(),
					OtherPID: c.systems[1-si].srv.pid(), Round: round + 1}
				r, err := runPoint(c.ctx, p, ks, c.chooser(cl))
				if c.ctx.Err() != nil {
					return errInterrupted
				}
				if err != nil {
					c.v.problems = append(c.v.problems, fmt.Sprintf("%s %s conns=%d: %v", s.name, cl.label(), cl.conns, err))
					return errStop
				}
				r.Mode = m.String()
				fmt.Fprintf(c.stderr, "round %d/%d  %-10s conns=%-4d pipeline=%-3d %s  %s ops/s  p99 %s ms  p99.9 %s ms  server CPU %.0f%% (%.1f us/op, %s B read/op)  idle %s CPU %.0f%%  errors: %s\n",
					round+1, cfg.Rounds, cl.label(), cl.conns, cl.pipeline, s.name, qps(r.Total.QPS), ms(r.Total.P99Ms), ms(r.Total.P999Ms),
					r.ServerCPU, r.ServerUsPerOp, commas(int64(math.Round(readPerOp(r)))), c.systems[1-si].name, r.OtherCPU, r.Errors)
				c.runs[ci][si] = append(c.runs[ci][si], r)
				c.v.addRun(r)
			}
		}
	}
	if m == modePinned {
		c.checkPinned()
	}
	return nil
}

// chooser returns the key chooser of a cell's distribution (one per distribution: the zipf one
// costs a pass over the keyspace to build).
func (c *comparison) chooser(cl cell) keyChooser {
	k := cl.dist.String() + "/" + strconv.Itoa(int(cl.wl.Kind))
	if c.choosers[k] == nil {
		c.choosers[k] = newChooser(cl.dist, c.cfg.Keys)
	}
	return c.choosers[k]
}

// pin moves redis-server (while it runs) and the generator onto their CPUs; lavik-data was
// started on its own through taskset. The returned function moves redis-server and the
// generator back.
func (c *comparison) pin() (unpin func(), err error) {
	pin := c.cfg.Pin
	rd := c.systems[sysRedis].srv
	prevRedis, err := processCPUs(rd.pid())
	if err != nil {
		return nil, err
	}
	if _, err := setProcessAffinity(rd.pid(), pin.Server); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	restoreSelf, err := pinSelf(pin.Client, c.cfg.Threads > 0)
	if err != nil {
		_, _ = setProcessAffinity(rd.pid(), prevRedis)
		return nil, fmt.Errorf("generator: %w", err)
	}
	c.rep.Pinning = &PinReport{Server: pin.Server.String(), Client: pin.Client.String(), GeneratorProcs: runtime.GOMAXPROCS(0),
		Lavik: c.systems[sysLavik].srv.commandLine()}
	fmt.Fprintf(c.stderr, "pinned: redis (pid %d) and lavik (pid %d) on CPU %s, the generator on CPU %s (GOMAXPROCS %d)\n",
		rd.pid(), c.systems[sysLavik].srv.pid(), pin.Server, pin.Client, runtime.GOMAXPROCS(0))
	return func() {
		if err := restoreSelf(); err != nil {
			c.v.problems = append(c.v.problems, "unpinning the generator: "+err.Error())
		}
		if rd.running() {
			if _, err := setProcessAffinity(rd.pid(), prevRedis); err != nil {
				c.v.problems = append(c.v.problems, "unpinning redis: "+err.Error())
			}
		}
	}, nil
}

// checkPinned reads the affinity of every thread of the servers and of the generator at the end
// of the pinned cells: threads created during the cells must have inherited it. A thread
// elsewhere makes the pinned figures meaningless, so it is a problem of the run.
func (c *comparison) checkPinned() {
	pr := c.rep.Pinning
	var err error
	check := func(name string, pid int, want cpuList, n *int) {
		if *n, err = checkAffinity(pid, want); err != nil {
			pr.Problems = append(pr.Problems, name+": "+err.Error())
			c.v.problems = append(c.v.problems, "pinned cells: "+name+": "+err.Error())
		}
	}
	check("redis", c.systems[sysRedis].srv.pid(), c.cfg.Pin.Server, &pr.RedisThreads)
	check("lavik", c.systems[sysLavik].srv.pid(), c.cfg.Pin.Server, &pr.LavikThreads)
	check("generator", os.Getpid(), c.cfg.Pin.Client, &pr.GeneratorThreads)
}

// restartLavik stops lavik-data and starts it again on its data, with prefix and extra around
// its command line, measuring the restart (measureRestart). It reports whether it is up again.
func (c *comparison) restartLavik(prefix, extra []string, into string) bool {
	s := c.systems[sysLavik]
	rr := measureRestart(c.ctx, c.cfg, s, c.stderr, func() { s.srv.prefix, s.srv.extra = prefix, extra })
	if c.ctx.Err() != nil {
		return false
	}
	rr.Into, rr.Command = into, s.srv.commandLine()
	c.rep.Restarts = append(c.rep.Restarts, rr)
	if rr.Error != "" {
		c.v.problems = append(c.v.problems, "lavik restart: "+rr.Error)
		return false
	}
	fmt.Fprintf(c.stderr, "restarted lavik (pid %d) in %.2fs: %s\n", s.srv.pid(), rr.StartToReadyS, rr.Command)
	return true
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
				cells = append(cells, cell{wl: w, conns: c, pipeline: p, dist: cfg.Dist})
			}
		}
	}
	return cells
}

// compareCells lists every cell of a comparison in the order the groups run: the matrix; the
// matrix again pinned (when pinned); GET with zipf keys at each --zipf-pipelines depth and
// connection count.
func compareCells(cfg compareConfig, pinned bool) []cell {
	cells := buildCells(cfg)
	if pinned {
		for _, c := range buildCells(cfg) {
			c.mode = modePinned
			cells = append(cells, c)
		}
	}
	zipf := DistSpec{Name: "zipf", Theta: cfg.Dist.Theta}
	for _, p := range cfg.ZipfPipelines {
		for _, c := range cfg.Conns {
			cells = append(cells, cell{wl: Workload{Name: "get", ReadFrac: 1}, conns: c, pipeline: p, mode: modeZipf, dist: zipf})
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

// measureRestart stops Lavik with SIGTERM, calls reconfigure (which may change how it is
// started), starts it on the same directory and times how long it takes to answer PING with
// every key back, then checks a sample of values.
func measureRestart(ctx context.Context, cfg compareConfig, s *benchSystem, stderr io.Writer, reconfigure func()) RestartReport {
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
	reconfigure()
	d, err = s.srv.start(ctx, cfg.RestartTimeout, rr.Keys)
	if err != nil {
		rr.Error = err.Error()
		return rr
	}
	rr.StartToReadyS = d.Seconds()
	rr.RSS, _ = rssBytes(s.srv.pid())
	if s.mem.RestartedRSS == 0 {
		s.mem.RestartedRSS = rr.RSS
	}
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
	return rr
}
