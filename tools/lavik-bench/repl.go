package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
)

// The replication benchmark: for each server kind in turn (redis, then lavik, by default), a
// primary loaded with --keys keys and fresh followers that copy it, measuring
//
//  1. a full resync with the primary idle: from REPLICAOF on an empty follower until its link is
//     up and its offset has reached the primary's; DBSIZE must then equal the keys loaded;
//  2. the primary under GET+SET load (--workload, mixed 1:1 by default) in three windows: before
//     a follower exists, while a second empty follower makes its full resync (REPLICAOF is sent
//     when the window opens; the report says how long the sync overlapped it), and after;
//  3. the lag of that follower, now in sync, under SET load at full speed (--lag-conns: one
//     point, or a ramp of connection counts), from offsets sampled every --lag-sample
//     (repl_lag.go), and whether the follower's applied stream keeps up with the primary's.
//
// Every follower starts as a standalone server with an empty data directory and is attached at
// run time, so both kinds are timed from the same command and neither pays its process start.
// The kinds run one after the other, never at the same time: each has a primary and a follower
// of its own (four servers and a Redis fork would not fit the point of a 2-core machine), so
// drift between them is not cancelled; the ratios are of one run.

// replConfig is `lavik-bench repl`.
type replConfig struct {
	commonConfig
	LavikArgv, RedisArgv []string
	Systems              []string // the kinds, in the order they run
	Workload             Workload // the load of the three windows around a full resync
	Conns, Pipeline      int
	// During is the window measured while the follower syncs; 0 = as long as the idle full
	// resync took (at least 1 s), so that the sync under load, slower, covers it.
	During      time.Duration
	LagDuration time.Duration
	LagConns    []int
	LagSample   time.Duration
	SyncTimeout time.Duration
	Pin         pinSpec
	Digest      bool
	Workdir     string
	Keep        bool
	StartTime   time.Duration
}

var (
	defaultLavikReplCmd = []string{"{bin}", "--port", "0", "--bind", "127.0.0.1", "--dir", "{dir}", "--appendfsync", "everysec"}
	// redis-server: no persistence of its own (as compare), a diskless sync that starts at once
	// (its default waits 5 s for more followers), and DEBUG DIGEST for the final check.
	defaultRedisReplCmd = []string{"{bin}", "--port", "{port}", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--repl-diskless-sync-delay", "0", "--enable-debug-command", "local", "--dir", "{dir}"}
)

func replFlags() []cli.Flag {
	common := commonFlags(5*time.Second, time.Second)
	for i, f := range common {
		if f, ok := f.(*cli.IntFlag); ok && f.Name == "keys" {
			common[i] = &cli.IntFlag{Name: "keys", Value: 200_000, Usage: "keys loaded into each primary (the published figure: 1000000 with --value-size 1024)"}
		}
		if f, ok := f.(*cli.DurationFlag); ok && f.Name == "duration" {
			f.Usage = "measured window before and after the full resync (and the during window unless --during is given)"
		}
	}
	return append([]cli.Flag{
		&cli.StringFlag{Name: "lavik-bin", Value: "bin/lavik-data", Usage: "lavik-data binary"},
		&cli.StringFlag{Name: "lavik-args", Usage: "extra arguments for every lavik-data (primary and followers)"},
		&cli.StringFlag{Name: "redis-bin", Value: "redis-server", Usage: "redis-server binary"},
		&cli.StringFlag{Name: "redis-args", Usage: "extra arguments for every redis-server"},
		&cli.StringFlag{Name: "lavik-cmd", Hidden: true, Usage: "whole command line for the lavik side, with {port} and {dir}; for testing the harness"},
		&cli.StringFlag{Name: "redis-cmd", Hidden: true, Usage: "whole command line for the redis side, with {port} and {dir}"},
		&cli.StringFlag{Name: "systems", Value: "redis,lavik", Usage: "server kinds to measure, in this order"},
		&cli.StringFlag{Name: "workload", Value: "mixed", Usage: "load on the primary around the full resync: get, set or mixed (--ratio)"},
		&cli.IntFlag{Name: "conns", Value: 50, Usage: "connections of the load around the full resync"},
		&cli.IntFlag{Name: "pipeline", Value: 1, Usage: "commands in flight per connection (both loads)"},
		&cli.StringFlag{Name: "during", Value: "auto", Usage: "window measured while the follower syncs: a duration, or auto = the idle full resync's time (at least 1s)"},
		&cli.DurationFlag{Name: "lag-duration", Value: 10 * time.Second, Usage: "SET load of the lag measurement, per point"},
		&cli.StringFlag{Name: "lag-conns", Usage: "connection counts of the lag measurement, one point each (a ramp); default --conns"},
		&cli.DurationFlag{Name: "lag-sample", Value: 100 * time.Millisecond, Usage: "interval between offset samples"},
		&cli.DurationFlag{Name: "sync-timeout", Value: 10 * time.Minute, Usage: "how long a full resync, or a follower catching up, may take"},
		&cli.StringFlag{Name: "pin", Usage: "server=CPUS,client=CPUS: every server (primary and follower) started through taskset on the server CPUs, the generator on the client CPUs"},
		&cli.BoolFlag{Name: "digest", Value: true, Usage: "at the end, compare DEBUG DIGEST of primary and follower"},
		&cli.StringFlag{Name: "workdir", Usage: "parent of the servers' data directories (default: the system temp dir)"},
		&cli.BoolFlag{Name: "keep", Usage: "keep the data directories and server logs"},
		&cli.DurationFlag{Name: "start-timeout", Value: time.Minute, Usage: "how long a server may take to start"},
	}, common...)
}

func parseReplConfig(c *cli.Context) (replConfig, error) {
	cc, err := parseCommon(c)
	rc := replConfig{commonConfig: cc, Conns: c.Int("conns"), Pipeline: c.Int("pipeline"), LagDuration: c.Duration("lag-duration"),
		LagSample: c.Duration("lag-sample"), SyncTimeout: c.Duration("sync-timeout"), Digest: c.Bool("digest"),
		Workdir: c.String("workdir"), Keep: c.Bool("keep"), StartTime: c.Duration("start-timeout")}
	if err != nil {
		return rc, err
	}
	if c.NArg() > 0 {
		return rc, fmt.Errorf("unexpected argument %q (flags go before arguments; repl takes none)", c.Args().First())
	}
	if rc.Workload, err = parseWorkload(c.String("workload"), cc.Ratio); err != nil {
		return rc, err
	}
	if rc.Workload.Kind != kindString {
		return rc, fmt.Errorf("--workload %s: want get, set or mixed", rc.Workload.Name)
	}
	for _, s := range strings.Split(c.String("systems"), ",") {
		s = strings.TrimSpace(s)
		if s != "redis" && s != "lavik" {
			return rc, fmt.Errorf("--systems %q: %q is not redis or lavik", c.String("systems"), s)
		}
		rc.Systems = append(rc.Systems, s)
	}
	switch d := c.String("during"); d {
	case "auto":
	default:
		if rc.During, err = time.ParseDuration(d); err != nil || rc.During <= 0 {
			return rc, fmt.Errorf("--during %q: want auto or a positive duration", d)
		}
	}
	rc.LagConns = []int{rc.Conns}
	if c.IsSet("lag-conns") {
		if rc.LagConns, err = parseIntList("lag-conns", c.String("lag-conns")); err != nil {
			return rc, err
		}
	}
	switch {
	case rc.Conns < 1 || rc.Pipeline < 1:
		return rc, fmt.Errorf("--conns %d --pipeline %d: want 1 or more", rc.Conns, rc.Pipeline)
	case rc.LagDuration <= 0 || rc.LagSample <= 0 || rc.SyncTimeout <= 0 || rc.StartTime <= 0:
		return rc, fmt.Errorf("--lag-duration %v --lag-sample %v --sync-timeout %v --start-timeout %v: want positive durations",
			rc.LagDuration, rc.LagSample, rc.SyncTimeout, rc.StartTime)
	case rc.LagSample > rc.LagDuration:
		return rc, fmt.Errorf("--lag-sample %v is longer than --lag-duration %v", rc.LagSample, rc.LagDuration)
	}
	if rc.Pin, err = parsePin(c.String("pin")); err != nil {
		return rc, err
	}
	if rc.LavikArgv, err = serverArgv(c, "lavik", defaultLavikReplCmd); err != nil {
		return rc, err
	}
	if rc.RedisArgv, err = serverArgv(c, "redis", defaultRedisReplCmd); err != nil {
		return rc, err
	}
	return rc, nil
}

// replRun is the state of one `repl` run.
type replRun struct {
	ctx    context.Context
	cfg    replConfig
	root   string
	stderr io.Writer
	rep    replReport
	v      verdict
}

// replSide is one server kind's primary and current follower.
type replSide struct {
	r        *replRun
	name     string
	argv     []string
	primary  *serverProc
	follower *serverProc
	ks       *Keyspace
	rep      *ReplSystemReport
}

// replCommand is `lavik-bench repl`.
func replCommand(ctx context.Context, cfg replConfig, stdout, stderr io.Writer) (int, error) {
	out := cfg.setup(stdout, stderr)
	if cfg.Pin.enabled() {
		allowed, err := allowedCPUs()
		if err != nil {
			return exitUsage, usageError(err)
		}
		if why := cfg.Pin.unavailable(allowed); why != "" {
			return exitUsage, usageError(fmt.Errorf("--pin %s: %s", cfg.Pin, why))
		}
		if _, err := exec.LookPath("taskset"); err != nil {
			return exitUsage, usageError(fmt.Errorf("--pin: taskset (util-linux) starts the servers on their CPUs: %w", err))
		}
	}
	root, err := os.MkdirTemp(cfg.Workdir, "lavik-bench-repl-")
	if err != nil {
		return exitUsage, usageError(err)
	}
	r := &replRun{ctx: ctx, cfg: cfg, root: root, stderr: stderr}
	r.rep = newReplReport(cfg)
	defer func() {
		if cfg.Keep {
			fmt.Fprintf(stderr, "data directories and server logs kept in %s\n", root)
		} else {
			os.RemoveAll(root)
		}
	}()
	if cfg.Pin.enabled() {
		restore, err := pinSelf(cfg.Pin.Client, cfg.Threads > 0)
		if err != nil {
			return exitUsage, usageError(fmt.Errorf("pinning the generator: %w", err))
		}
		defer func() {
			if err := restore(); err != nil {
				fmt.Fprintf(stderr, "lavik-bench: unpinning the generator: %v\n", err)
			}
		}()
	}
	fmt.Fprintf(stderr, "lavik-bench repl: %s; %s keys x %s each; %s\n", strings.Join(cfg.Systems, " then "),
		commas(int64(cfg.Keys)), cfg.Value, pinNote(cfg.Pin))
	for _, name := range cfg.Systems {
		argv := cfg.LavikArgv
		if name == "redis" {
			argv = cfg.RedisArgv
		}
		r.rep.Systems = append(r.rep.Systems, ReplSystemReport{System: name})
		s := &replSide{r: r, name: name, argv: argv, rep: &r.rep.Systems[len(r.rep.Systems)-1]}
		err := s.run()
		s.stopAll()
		s.scanLogs()
		if ctx.Err() != nil || errors.Is(err, errInterrupted) {
			return exitInterrupted, errInterrupted
		}
		if err != nil {
			msg := fmt.Sprintf("%s: %v", name, err)
			s.rep.Problems = append(s.rep.Problems, msg)
			r.v.problems = append(r.v.problems, msg)
		}
	}
	return r.report(out, stdout)
}

func pinNote(p pinSpec) string {
	if !p.enabled() {
		return "unpinned: servers and generator share every CPU"
	}
	return fmt.Sprintf("pinned: every server on CPU %s (taskset), the generator on CPU %s", p.Server, p.Client)
}

// newServer makes a server process of this kind named role, with its own directory and log.
func (s *replSide) newServer(role string) *serverProc {
	name := s.name + "-" + role
	p := newServerProc(name, s.argv, filepath.Join(s.r.root, name), logPath(s.r.root, name))
	if s.r.cfg.Pin.enabled() {
		p.prefix = []string{"taskset", "-c", s.r.cfg.Pin.Server.String()}
	}
	return p
}

func (s *replSide) start(p *serverProc) error {
	d, err := p.start(s.r.ctx, s.r.cfg.StartTime, -1)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.r.stderr, "started %s (pid %d) on %s in %.2fs: %s\n", p.name, p.pid(), p.addr, d.Seconds(), p.commandLine())
	s.rep.Servers = append(s.rep.Servers, ServerRun{Name: p.name, Command: p.commandLine(), Log: p.log})
	return nil
}

// stop stops p and records how it exited; a non-zero status is a problem of the run.
func (s *replSide) stop(p *serverProc) {
	if p == nil || !p.running() {
		return
	}
	if s.r.cfg.Pin.enabled() {
		if _, err := checkAffinity(p.pid(), s.r.cfg.Pin.Server); err != nil {
			s.problem(fmt.Sprintf("%s not on CPU %s: %v", p.name, s.r.cfg.Pin.Server, err))
		}
	}
	d, status, err := p.stop(2 * time.Minute)
	for i := range s.rep.Servers {
		if s.rep.Servers[i].Name == p.name {
			s.rep.Servers[i].StopS, s.rep.Servers[i].Exit = d.Seconds(), p.exitState()
		}
	}
	switch {
	case err != nil:
		s.problem(err.Error())
	case status != 0:
		s.problem(fmt.Sprintf("%s exited with status %d after SIGTERM", p.name, status))
	}
	if !s.r.cfg.Keep {
		os.RemoveAll(p.dir)
	}
}

func (s *replSide) stopAll() {
	s.stop(s.follower)
	s.stop(s.primary)
}

func (s *replSide) problem(msg string) {
	s.rep.Problems = append(s.rep.Problems, msg)
	s.r.v.problems = append(s.r.v.problems, s.name+": "+msg)
}

// run measures one kind: load, the idle full resync, the three windows, the lag.
func (s *replSide) run() error {
	r, cfg := s.r, s.r.cfg
	s.primary = s.newServer("primary")
	if err := s.start(s.primary); err != nil {
		return err
	}
	s.ks = cfg.keyspace(kindString)
	lr, err := load(r.ctx, cfg.loadParams(s.name, s.primary.addr, r.stderr), s.ks)
	if err != nil {
		return err
	}
	fmt.Fprintln(r.stderr, lr)
	s.rep.Load = lr

	// 1. The full resync with the primary idle.
	s.follower = s.newServer("follower1")
	if err := s.start(s.follower); err != nil {
		return err
	}
	sr, err := s.fullSync()
	s.rep.FullSync = sr
	if err != nil {
		return fmt.Errorf("full resync: %w", err)
	}
	fmt.Fprintf(r.stderr, "%s full resync: %s\n", s.name, sr)
	s.stop(s.follower)

	// 2. The primary under load before, during and after a second follower's full resync.
	s.follower = s.newServer("follower2")
	if err := s.start(s.follower); err != nil {
		return err
	}
	during := cfg.During
	if during == 0 {
		during = max(time.Second, time.Duration(sr.Seconds*float64(time.Second)).Round(100*time.Millisecond))
	}
	for _, ph := range []string{phaseBefore, phaseDuring, phaseAfter} {
		pr, err := s.loadPhase(ph, during)
		s.rep.Phases = append(s.rep.Phases, pr)
		if err != nil {
			return fmt.Errorf("%s the full resync: %w", ph, err)
		}
	}

	// 3. Lag under SET load, one point per --lag-conns.
	if _, err := s.waitCaughtUp(time.Now()); err != nil {
		return fmt.Errorf("follower catching up after the load: %w", err)
	}
	for _, n := range cfg.LagConns {
		lr, err := s.lagPoint(n)
		s.rep.Lag = append(s.rep.Lag, lr)
		if err != nil {
			return fmt.Errorf("lag with %d connections: %w", n, err)
		}
	}
	return s.finalChecks()
}

// Phase names.
const (
	phaseBefore = "before"
	phaseDuring = "during"
	phaseAfter  = "after"
)

// fullSync sends REPLICAOF to the follower and waits until its link is up and its offset has
// reached the primary's at that moment.
func (s *replSide) fullSync() (SyncResult, error) {
	var sr SyncResult
	host, port, err := net.SplitHostPort(s.primary.addr)
	if err != nil {
		return sr, err
	}
	t0 := time.Now()
	rep, err := adminDo(s.follower.addr, 10*time.Second, "REPLICAOF", host, port)
	if err != nil {
		return sr, err
	}
	if rep.isError() {
		return sr, fmt.Errorf("REPLICAOF answered %s", rep)
	}
	st, err := s.waitSynced(t0)
	sr.LinkUpS, sr.Seconds, sr.Offset = st.linkUp.Seconds(), st.caughtUp.Seconds(), st.offset
	sr.Start, sr.End = t0, t0.Add(st.caughtUp)
	if err != nil {
		return sr, err
	}
	sr.Done = true
	sr.ValueBytes = s.rep.Load.Bytes
	if sr.Seconds > 0 {
		sr.MBps = float64(sr.ValueBytes) / 1e6 / sr.Seconds
	}
	a, err := dialAdmin(s.follower.addr, 10*time.Second)
	if err != nil {
		return sr, err
	}
	defer a.Close()
	if sr.DBSize, err = a.dbsize(); err != nil {
		return sr, err
	}
	if sr.DBSize != int64(s.ks.N) {
		return sr, fmt.Errorf("follower DBSIZE %d after the full resync, want %d", sr.DBSize, s.ks.N)
	}
	if info, err := infoSection(s.primary.addr, "stats"); err == nil {
		sr.PrimaryFullSyncs, _ = strconv.ParseInt(info["sync_full"], 10, 64)
	}
	return sr, nil
}

type syncTiming struct {
	linkUp, caughtUp time.Duration // since t0
	offset           int64         // the primary offset the follower reached
}

// waitSynced polls the follower every 10 ms until its link is up with no sync in progress, then
// reads the primary's offset and polls until the follower's reaches it.
func (s *replSide) waitSynced(t0 time.Time) (syncTiming, error) {
	var st syncTiming
	deadline := t0.Add(s.r.cfg.SyncTimeout)
	var last string
	for {
		f, err := infoSection(s.follower.addr, "replication")
		if err == nil && f["master_link_status"] == "up" && f["master_sync_in_progress"] == "0" {
			st.linkUp = time.Since(t0)
			break
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("master_link_status:%s master_sync_in_progress:%s", f["master_link_status"], f["master_sync_in_progress"])
		}
		if err := s.pollWait(deadline, last); err != nil {
			return st, err
		}
	}
	c, err := s.waitCaughtUp(t0)
	st.caughtUp, st.offset = c.caughtUp, c.offset
	return st, err
}

// waitCaughtUp reads the primary's master_repl_offset and polls until the follower's
// slave_repl_offset reaches it; the times are since t0.
func (s *replSide) waitCaughtUp(t0 time.Time) (syncTiming, error) {
	var st syncTiming
	p, err := infoSection(s.primary.addr, "replication")
	if err != nil {
		return st, fmt.Errorf("primary INFO: %w", err)
	}
	target, err := strconv.ParseInt(p["master_repl_offset"], 10, 64)
	if err != nil {
		return st, fmt.Errorf("primary master_repl_offset %q", p["master_repl_offset"])
	}
	st.offset = target
	deadline := time.Now().Add(s.r.cfg.SyncTimeout)
	for {
		f, err := infoSection(s.follower.addr, "replication")
		var last string
		if err == nil {
			off, perr := strconv.ParseInt(f["slave_repl_offset"], 10, 64)
			if perr == nil && off >= target && f["master_link_status"] == "up" {
				st.caughtUp = time.Since(t0)
				return st, nil
			}
			last = fmt.Sprintf("slave_repl_offset %s, waiting for %d; master_link_status:%s", f["slave_repl_offset"], target, f["master_link_status"])
		} else {
			last = err.Error()
		}
		if err := s.pollWait(deadline, last); err != nil {
			return st, err
		}
	}
}

// pollWait sleeps 10 ms, or fails when the deadline passed, a server exited or the run was
// interrupted.
func (s *replSide) pollWait(deadline time.Time, last string) error {
	switch {
	case s.r.ctx.Err() != nil:
		return errInterrupted
	case !s.primary.running():
		return fmt.Errorf("the primary exited (%s)", s.primary.exitState())
	case !s.follower.running():
		return fmt.Errorf("the follower exited (%s)", s.follower.exitState())
	case time.Now().After(deadline):
		return fmt.Errorf("not done within --sync-timeout %v (%s)", s.r.cfg.SyncTimeout, last)
	}
	time.Sleep(10 * time.Millisecond)
	return nil
}

// loadPhase runs the workload on the primary for one window; the during window starts the
// follower's full resync as it opens.
func (s *replSide) loadPhase(phase string, during time.Duration) (PhaseResult, error) {
	r, cfg := s.r, s.r.cfg
	pr := PhaseResult{Phase: phase}
	p := runParams{System: s.name, Addr: s.primary.addr, Workload: cfg.Workload, Conns: cfg.Conns, Pipeline: cfg.Pipeline,
		Warmup: cfg.Warmup, Duration: cfg.Duration, Timeout: cfg.Timeout, VerifySample: cfg.VerifySample, Seed: cfg.Seed,
		ServerPID: s.primary.pid(), OtherPID: s.follower.pid()}
	var wg sync.WaitGroup
	var sr SyncResult
	var serr error
	var windowAt time.Time
	if phase == phaseDuring {
		p.Duration = during
		p.WindowOpens = func(at time.Time) {
			windowAt = at
			wg.Add(1) // before runPoint returns, so before wg.Wait
			go func() {
				defer wg.Done()
				time.Sleep(time.Until(at))
				sr, serr = s.fullSync()
			}()
		}
	}
	res, err := runPoint(r.ctx, p, s.ks, newChooser(cfg.Dist, cfg.Keys))
	loadEnd := time.Now()
	wg.Wait() // the sync, which may outlast the load
	if r.ctx.Err() != nil {
		return pr, errInterrupted
	}
	if err != nil {
		return pr, err
	}
	res.Mode = phase
	pr.Run = res
	r.v.addRun(res)
	if phase == phaseDuring {
		if windowAt.IsZero() {
			return pr, errors.New("the load never opened its window")
		}
		pr.Sync = &sr
		if serr != nil {
			return pr, fmt.Errorf("full resync under load: %w", serr)
		}
		winEnd := windowAt.Add(during)
		pr.OverlapS = overlap(windowAt, winEnd, sr.Start, sr.End).Seconds()
		pr.OverlapFrac = pr.OverlapS / during.Seconds()
		pr.SyncAfterLoad = sr.End.After(loadEnd)
	}
	fmt.Fprintf(r.stderr, "%s %-6s %s\n", s.name, phase, phaseLine(pr))
	return pr, nil
}

// lagPoint runs SET at full speed with n connections while sampling both offsets, then samples
// on until the follower has reached the primary's last offset.
func (s *replSide) lagPoint(n int) (LagResult, error) {
	r, cfg := s.r, s.r.cfg
	lr := LagResult{Conns: n, Pipeline: cfg.Pipeline, SampleMs: float64(cfg.LagSample) / 1e6}
	set, _ := parseWorkload("set", cfg.Ratio)
	sm, err := startOffsetSampler(s.primary.addr, s.follower.addr, cfg.LagSample)
	if err != nil {
		return lr, err
	}
	defer sm.stop()
	loadStart := sm.since()
	p := runParams{System: s.name, Addr: s.primary.addr, Workload: set, Conns: n, Pipeline: cfg.Pipeline,
		Warmup: 0, Duration: cfg.LagDuration, Timeout: cfg.Timeout, Seed: cfg.Seed + uint64(n),
		ServerPID: s.primary.pid(), OtherPID: s.follower.pid()}
	res, err := runPoint(r.ctx, p, s.ks, newChooser(cfg.Dist, cfg.Keys))
	loadEnd := sm.since()
	if r.ctx.Err() != nil {
		return lr, errInterrupted
	}
	if err != nil {
		return lr, err
	}
	res.Mode = "lag"
	lr.Run = res
	r.v.addRun(res)
	t0 := time.Now()
	c, err := s.waitCaughtUp(t0)
	lr.CatchUpS = c.caughtUp.Seconds()
	time.Sleep(2 * cfg.LagSample) // a sample past the catch-up, so the last crossings resolve
	samples, serr := sm.stop()
	if err == nil {
		err = serr
	}
	lr.LoadS = (loadEnd - loadStart).Seconds()
	lr.Stats = computeLag(samples, loadStart, loadEnd)
	lr.Samples = samples
	lr.SetPerSec = res.Total.QPS
	fmt.Fprintf(r.stderr, "%s lag    %s\n", s.name, lagLine(lr))
	return lr, err
}

// finalChecks compares the follower with the primary after everything: same DBSIZE, every key
// sampled holding a version the generator may have written, and the same DEBUG DIGEST.
func (s *replSide) finalChecks() error {
	if _, err := s.waitCaughtUp(time.Now()); err != nil {
		return fmt.Errorf("final catch-up: %w", err)
	}
	fc := &s.rep.Final
	a, err := dialAdmin(s.follower.addr, 5*time.Minute)
	if err != nil {
		return err
	}
	defer a.Close()
	if fc.FollowerDBSize, err = a.dbsize(); err != nil {
		return err
	}
	if fc.FollowerDBSize != int64(s.ks.N) {
		return fmt.Errorf("follower DBSIZE %d at the end, want %d", fc.FollowerDBSize, s.ks.N)
	}
	if fc.Verified, err = verifySample(s.follower.addr, s.ks, 1000, s.r.cfg.Seed+7); err != nil {
		return fmt.Errorf("follower's values: %w", err)
	}
	if !s.r.cfg.Digest {
		return nil
	}
	t0 := time.Now()
	pd, err := adminDo(s.primary.addr, 5*time.Minute, "DEBUG", "DIGEST")
	if err != nil {
		return fmt.Errorf("primary DEBUG DIGEST: %w", err)
	}
	t1 := time.Now()
	fd, err := a.do("DEBUG", "DIGEST")
	if err != nil {
		return fmt.Errorf("follower DEBUG DIGEST: %w", err)
	}
	fc.DigestS = [2]float64{t1.Sub(t0).Seconds(), time.Since(t1).Seconds()}
	switch {
	case pd.isError() || fd.isError():
		fc.Digest = "not compared: " + pd.String() + " / " + fd.String()
	case pd.str != fd.str:
		fc.Digest = "DIFFERENT: primary " + pd.str + ", follower " + fd.str
		return fmt.Errorf("DEBUG DIGEST differs: primary %s, follower %s", pd.str, fd.str)
	default:
		fc.Digest = "equal (" + pd.str + ")"
	}
	return nil
}

// scanLogs records the warnings and errors the servers of this kind logged.
func (s *replSide) scanLogs() {
	for i := range s.rep.Servers {
		sv := &s.rep.Servers[i]
		b, err := os.ReadFile(sv.Log)
		if err != nil {
			continue
		}
		sv.LogIssues, sv.LogIssueCount = logIssues(string(b), 8)
	}
}

// redisRoutine are lines redis-server logs at its warning level ('#') on every start and
// shutdown, and the environment's overcommit setting, which it repeats at each start: not
// worth a reader's attention in a report about replication.
var redisRoutine = []string{"Redis is starting", "Redis version=", "Configuration loaded", "Server initialized",
	"User requested shutdown", "ready to exit", "WARNING Memory overcommit"}

// logIssues returns up to n lines of log that report a warning or an error (lavik-data's
// slog levels, redis-server's '#' warning marker but for redisRoutine), and how many there are.
func logIssues(log string, n int) ([]string, int) {
	var out []string
	count := 0
	for _, line := range strings.Split(log, "\n") {
		l := strings.ToLower(line)
		redisWarn := strings.Contains(line, " # ") && !slices.ContainsFunc(redisRoutine, func(r string) bool { return strings.Contains(line, r) })
		if strings.Contains(l, "level=warn") || strings.Contains(l, "level=error") || redisWarn ||
			strings.Contains(l, "panic") || strings.Contains(l, "fatal") {
			count++
			if len(out) < n {
				out = append(out, line)
			}
		}
	}
	return out, count
}

// offsetSampler reads both offsets every interval, on connections of its own.
type offsetSampler struct {
	t0      time.Time
	pa, fa  *adminClient
	done    chan struct{}
	result  chan samplerOut
	stopped bool
	out     samplerOut
}

type samplerOut struct {
	samples []offsetSample
	err     error
}

func startOffsetSampler(primary, follower string, every time.Duration) (*offsetSampler, error) {
	pa, err := dialAdmin(primary, 10*time.Second)
	if err != nil {
		return nil, err
	}
	fa, err := dialAdmin(follower, 10*time.Second)
	if err != nil {
		pa.Close()
		return nil, err
	}
	sm := &offsetSampler{t0: time.Now(), pa: pa, fa: fa, done: make(chan struct{}), result: make(chan samplerOut, 1)}
	go sm.loop(every)
	return sm, nil
}

func (sm *offsetSampler) since() time.Duration { return time.Since(sm.t0) }

func (sm *offsetSampler) loop(every time.Duration) {
	var out samplerOut
	defer func() { sm.result <- out }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	read := func(a *adminClient, field string) (int64, time.Duration, error) {
		t1 := sm.since()
		p, err := a.do("INFO", "replication")
		t2 := sm.since()
		if err != nil {
			return 0, 0, err
		}
		for _, line := range strings.Split(p.str, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				return n, (t1 + t2) / 2, err
			}
		}
		return 0, 0, fmt.Errorf("INFO replication has no %s", field)
	}
	for {
		var x offsetSample
		var err error
		if x.P, x.TP, err = read(sm.pa, "master_repl_offset"); err == nil {
			x.F, x.TF, err = read(sm.fa, "slave_repl_offset")
		}
		if err != nil {
			out.err = fmt.Errorf("sampling offsets: %w", err)
			return
		}
		out.samples = append(out.samples, x)
		select {
		case <-sm.done:
			return
		case <-tick.C:
		}
	}
}

// stop ends the sampling and returns the samples; it may be called again.
func (sm *offsetSampler) stop() ([]offsetSample, error) {
	if !sm.stopped {
		sm.stopped = true
		close(sm.done)
		sm.out = <-sm.result
		sm.pa.Close()
		sm.fa.Close()
	}
	return sm.out.samples, sm.out.err
}
