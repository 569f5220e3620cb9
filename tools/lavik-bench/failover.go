package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lavikdb/lavik/services/meta/failover"
)

// The failover drill: for each system, a primary and a follower under a steady write load, the
// primary killed with SIGKILL, and the time until the survivor takes writes; then the writes
// the killed primary had acknowledged are looked up on the new primary, the killed node is
// restarted on its port and data directory, and the next trial waits until it is a follower in
// sync before it kills the new primary: the nodes take turns.
//
// Lavik: three lavik-meta members and two lavik-data nodes in shard group g; meta places the
// nodes, grants the primary its lease and promotes the follower. Redis: two redis-servers, one
// replicaof the other, and three Sentinels monitoring them as g with quorum 2. Both run on
// loopback with ephemeral ports; each system runs alone, Lavik first.
//
// A write counts as acknowledged when SET answered OK (the plain writer), or when the WAIT 1
// that followed it answered 1 or more (the WAIT writer). Failover time runs from the SIGKILL to
// the first OK to a SET on the survivor, polled every 5 ms: what a client that retries on the
// other node sees, with the client's discovery left out (rejected: timing a Sentinel client,
// whose own polling would add to both systems' figures). A failover counts as spurious when a
// trial saw more than one change of primary: more +switch-master events on a Sentinel port
// (lavik-meta serves one) than one, more than one promotion in the lavik-data logs, or the
// survivor not primary once the killed node is back.

// failoverConfig is `lavik-bench failover`.
type failoverConfig struct {
	Trials                 int
	LavikBin, MetaBin      string
	RedisBin               string
	Systems                []string // the systems, in the order they run
	Load                   time.Duration
	Heartbeat, Lease, Fail time.Duration // lavik-meta's --heartbeat, --lease, --fail-after
	DownAfter, SentinelFT  time.Duration // Sentinel's down-after-milliseconds, failover-timeout
	FailoverLimit          time.Duration // a trial whose survivor takes no write within this failed
	SyncTimeout, StartTime time.Duration
	Workdir, JSONPath      string
	Keep                   bool
	ProbeEvery             time.Duration // the survivor's SET poll
	// RedisKillGap is the least time from a change of primary to the next kill on Redis: twice
	// failover-timeout, Sentinel's vote jitter, and half a second of margin.
	RedisKillGap time.Duration
}

const (
	// failoverGroup is the shard group (Lavik) and the master name (Sentinel).
	failoverGroup = "g"
	// sentinelVoteJitter is SENTINEL_MAX_DESYNC: a Sentinel that votes sets its last failover
	// start up to 1 s into the future.
	sentinelVoteJitter = time.Second
)

func failoverFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "trials", Value: 20, Usage: "kill trials per system"},
		&cli.StringFlag{Name: "lavik-bin", Value: "bin/lavik-data", Usage: "lavik-data binary"},
		&cli.StringFlag{Name: "meta-bin", Value: "bin/lavik-meta", Usage: "lavik-meta binary"},
		&cli.StringFlag{Name: "redis-bin", Value: "redis-server", Usage: "redis-server binary (Sentinels run as redis-server CONF --sentinel)"},
		&cli.BoolFlag{Name: "skip-lavik", Usage: "run the Redis side only"},
		&cli.BoolFlag{Name: "skip-redis", Usage: "run the Lavik side only"},
		&cli.Float64Flag{Name: "load-seconds", Value: 1.5, Usage: "write load on the primary before each kill, in seconds"},
		&cli.DurationFlag{Name: "heartbeat", Value: failover.DefaultConfig.HeartbeatInterval, Usage: "lavik-meta --heartbeat"},
		&cli.DurationFlag{Name: "lease", Value: failover.DefaultConfig.Lease, Usage: "lavik-meta --lease"},
		&cli.DurationFlag{Name: "fail-after", Value: failover.DefaultConfig.FailAfter, Usage: "lavik-meta --fail-after"},
		&cli.DurationFlag{Name: "down-after", Value: time.Second, Usage: "Sentinel down-after-milliseconds"},
		&cli.DurationFlag{Name: "sentinel-failover-timeout", Value: 5 * time.Second,
			Usage: "Sentinel failover-timeout: a Sentinel starts (or votes for) no failover of the same master within twice this of the last, so trials on Redis are spaced that far apart; too high and the drill takes long, too low and a slow promotion is aborted"},
		&cli.DurationFlag{Name: "failover-limit", Value: 30 * time.Second, Usage: "a trial whose survivor takes no write within this after the kill failed"},
		&cli.DurationFlag{Name: "sync-timeout", Value: 2 * time.Minute, Usage: "how long a restarted node may take to be a follower in sync"},
		&cli.DurationFlag{Name: "start-timeout", Value: 30 * time.Second, Usage: "how long a process may take to start"},
		&cli.StringFlag{Name: "workdir", Usage: "parent of the data directories (default: the system temp dir)"},
		&cli.BoolFlag{Name: "keep", Usage: "keep the data directories, configuration files and logs"},
		&cli.StringFlag{Name: "json", Usage: "write results as JSON to `FILE` (- for stdout)"},
	}
}

func parseFailoverConfig(c *cli.Context) (failoverConfig, error) {
	fc := failoverConfig{Trials: c.Int("trials"), LavikBin: c.String("lavik-bin"), MetaBin: c.String("meta-bin"),
		RedisBin: c.String("redis-bin"), Load: time.Duration(c.Float64("load-seconds") * float64(time.Second)),
		Heartbeat: c.Duration("heartbeat"), Lease: c.Duration("lease"), Fail: c.Duration("fail-after"),
		DownAfter: c.Duration("down-after"), SentinelFT: c.Duration("sentinel-failover-timeout"),
		FailoverLimit: c.Duration("failover-limit"), SyncTimeout: c.Duration("sync-timeout"), StartTime: c.Duration("start-timeout"),
		Workdir: c.String("workdir"), JSONPath: c.String("json"), Keep: c.Bool("keep"),
		ProbeEvery: 5 * time.Millisecond}
	if c.NArg() > 0 {
		return fc, fmt.Errorf("unexpected argument %q (failover takes none)", c.Args().First())
	}
	if !c.Bool("skip-lavik") {
		fc.Systems = append(fc.Systems, "lavik")
	}
	if !c.Bool("skip-redis") {
		fc.Systems = append(fc.Systems, "redis")
	}
	switch {
	case len(fc.Systems) == 0:
		return fc, errors.New("--skip-lavik and --skip-redis: nothing to run")
	case fc.Trials < 1:
		return fc, fmt.Errorf("--trials %d: want 1 or more", fc.Trials)
	case fc.Load <= 0:
		return fc, fmt.Errorf("--load-seconds %g: want a positive number", c.Float64("load-seconds"))
	case fc.Heartbeat <= 0 || fc.Lease <= 0 || fc.Fail <= 0 || fc.DownAfter <= 0 || fc.SentinelFT <= 0:
		return fc, fmt.Errorf("--heartbeat %v --lease %v --fail-after %v --down-after %v --sentinel-failover-timeout %v: want positive durations",
			fc.Heartbeat, fc.Lease, fc.Fail, fc.DownAfter, fc.SentinelFT)
	case fc.DownAfter%time.Millisecond != 0 || fc.SentinelFT%time.Millisecond != 0:
		return fc, fmt.Errorf("--down-after %v --sentinel-failover-timeout %v: Sentinel takes whole milliseconds", fc.DownAfter, fc.SentinelFT)
	case fc.FailoverLimit <= 0 || fc.SyncTimeout <= 0 || fc.StartTime <= 0:
		return fc, fmt.Errorf("--failover-limit %v --sync-timeout %v --start-timeout %v: want positive durations", fc.FailoverLimit, fc.SyncTimeout, fc.StartTime)
	}
	fc.RedisKillGap = 2*fc.SentinelFT + sentinelVoteJitter + 500*time.Millisecond
	return fc, nil
}

// failoverRun is the state of one `failover` run.
type failoverRun struct {
	ctx    context.Context
	cfg    failoverConfig
	root   string
	stderr io.Writer
	rep    failoverReport
	v      verdict
}

// failoverSide is one system's processes: the two data nodes that take turns as primary, and
// the processes that decide (lavik-meta members or Sentinels), which are never killed.
type failoverSide struct {
	r         *failoverRun
	name      string
	nodes     [2]*serverProc
	deciders  []*serverProc
	sentinels []string // Sentinel ports: lavik-meta's or Redis's
	subs      []*switchWatch
	// promotions counts the promotions the data nodes logged so far; nil where they log none.
	promotions func() int
	// extraSteady checks more than ROLE and INFO before a kill (the Sentinels' view on Redis).
	extraSteady func(primary, follower *serverProc) (bool, string)
	// cooldown is how long after a change of primary the next kill may come at the earliest.
	cooldown   time.Duration
	lastSwitch time.Time
	rep        *FailoverSystemReport
}

// failoverCommand is `lavik-bench failover`.
func failoverCommand(ctx context.Context, cfg failoverConfig, stdout, stderr io.Writer) (int, error) {
	out := stdout
	if cfg.JSONPath == "-" {
		out = stderr
	}
	root, err := os.MkdirTemp(cfg.Workdir, "lavik-bench-failover-")
	if err != nil {
		return exitUsage, usageError(err)
	}
	defer func() {
		if cfg.Keep {
			fmt.Fprintf(stderr, "data directories, configuration files and logs kept in %s\n", root)
		} else {
			os.RemoveAll(root)
		}
	}()
	r := &failoverRun{ctx: ctx, cfg: cfg, root: root, stderr: stderr, rep: newFailoverReport(cfg)}
	fmt.Fprintf(stderr, "lavik-bench failover: %s; %d trials each, %v of writes before each kill\n",
		strings.Join(cfg.Systems, " then "), cfg.Trials, cfg.Load)
	for _, name := range cfg.Systems {
		r.rep.Systems = append(r.rep.Systems, FailoverSystemReport{System: name})
		s := &failoverSide{r: r, name: name, rep: &r.rep.Systems[len(r.rep.Systems)-1]}
		err := s.run()
		s.stopAll()
		if ctx.Err() != nil || errors.Is(err, errInterrupted) {
			return exitInterrupted, errInterrupted
		}
		if err != nil {
			s.problem(err.Error())
		}
	}
	return r.report(out, stdout)
}

func (s *failoverSide) problem(msg string) {
	s.rep.Problems = append(s.rep.Problems, msg)
	s.r.v.problems = append(s.r.v.problems, s.name+": "+msg)
}

func (s *failoverSide) logf(format string, a ...any) {
	fmt.Fprintf(s.r.stderr, s.name+": "+format+"\n", a...)
}

// run sets the system up and runs its trials.
func (s *failoverSide) run() error {
	var err error
	if s.name == "lavik" {
		err = s.setupLavik()
	} else {
		err = s.setupRedis()
	}
	if err != nil {
		return fmt.Errorf("setting up: %w", err)
	}
	for _, addr := range s.sentinels {
		w, err := watchSwitches(addr)
		if err != nil {
			return fmt.Errorf("subscribing to +switch-master on %s: %w", addr, err)
		}
		s.subs = append(s.subs, w)
	}
	t0 := time.Now()
	p, f, err := s.waitSteady(t0)
	if err != nil {
		return fmt.Errorf("waiting for a primary and a follower in sync: %w", err)
	}
	s.logf("primary %s, follower %s in sync after %.2fs", s.nodes[p].addr, s.nodes[f].addr, time.Since(t0).Seconds())
	for t := 1; t <= s.r.cfg.Trials; t++ {
		tr, np, nf, err := s.trial(t, p, f)
		s.rep.Trials = append(s.rep.Trials, tr)
		if tr.WaitLost > 0 {
			s.problem(fmt.Sprintf("trial %d: %d writes acknowledged by WAIT 1 missing on the new primary (%s)", t, tr.WaitLost, strings.Join(tr.LostSample, " ")))
		}
		if err != nil {
			return fmt.Errorf("trial %d: %w", t, err)
		}
		s.logf("trial %2d: killed %s, survivor took writes after %.1f ms; lost plain %d/%d, WAIT %d/%d; switches %d, promotions %s; rejoined in %.2fs",
			t, tr.Killed, tr.FailoverMs, tr.PlainLost, tr.PlainAcked, tr.WaitLost, tr.WaitAcked, tr.Switches, promotionsText(tr.Promotions), tr.RejoinS)
		p, f = np, nf
	}
	return nil
}

// stopAll stops every process of the system: data nodes first, then the deciders.
func (s *failoverSide) stopAll() {
	for _, w := range s.subs {
		w.close()
	}
	for _, p := range append(s.nodes[:], s.deciders...) {
		if p == nil || !p.running() {
			continue
		}
		if _, _, err := p.stop(10 * time.Second); err != nil {
			s.problem(err.Error())
		}
	}
}

// start starts p and records its command line.
func (s *failoverSide) start(p *serverProc) error {
	d, err := p.start(s.r.ctx, s.r.cfg.StartTime, -1)
	if err != nil {
		return err
	}
	if c := p.commandLine(); !slices.Contains(s.rep.Commands, c) {
		s.rep.Commands = append(s.rep.Commands, c)
	}
	s.logf("started %s (pid %d) on %s in %.2fs", p.name, p.pid(), p.addr, d.Seconds())
	return nil
}

// startAll starts the processes at once (lavik-meta members wait for each other).
func (s *failoverSide) startAll(ps []*serverProc) error {
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = p.start(s.r.ctx, s.r.cfg.StartTime, -1)
		}()
	}
	wg.Wait()
	for i, p := range ps {
		if errs[i] != nil {
			return errs[i]
		}
		s.rep.Commands = append(s.rep.Commands, p.commandLine())
		s.logf("started %s (pid %d) on %s", p.name, p.pid(), p.addr)
	}
	return nil
}

// freePorts returns n distinct loopback ports nothing listens on right now.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// setupLavik starts three lavik-meta members and two lavik-data nodes under them.
func (s *failoverSide) setupLavik() error {
	cfg := s.r.cfg
	ports, err := freePorts(3*3 + 2)
	if err != nil {
		return err
	}
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("%d=meta-%d@%s@%s", i+1, i+1, loopback(ports[3*i+1]), loopback(ports[3*i])))
	}
	var clients []string
	for i := range 3 {
		name := fmt.Sprintf("lavik-meta-%d", i+1)
		client, peer := loopback(ports[3*i]), loopback(ports[3*i+1])
		clients = append(clients, client)
		// The Sentinel port answers PING: the harness's readiness probe.
		argv := []string{cfg.MetaBin, "--id", strconv.Itoa(i + 1), "--dir", "{dir}", "--listen", client, "--peer-listen", peer,
			"--sentinel-listen", "127.0.0.1:{port}", "--peers", strings.Join(peers, ","),
			"--heartbeat", cfg.Heartbeat.String(), "--lease", cfg.Lease.String(), "--fail-after", cfg.Fail.String()}
		p := newServerProc(name, argv, filepath.Join(s.r.root, name), logPath(s.r.root, name))
		p.port = ports[3*i+2]
		s.deciders = append(s.deciders, p)
		s.sentinels = append(s.sentinels, loopback(p.port))
	}
	if err := s.startAll(s.deciders); err != nil {
		return err
	}
	for i, id := range []string{"data-a", "data-b"} {
		name := "lavik-" + id
		argv := []string{cfg.LavikBin, "--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}",
			"--meta", strings.Join(clients, ","), "--node-id", id, "--shard-group", failoverGroup}
		p := newServerProc(name, argv, filepath.Join(s.r.root, name), logPath(s.r.root, name))
		p.port = ports[9+i]
		s.nodes[i] = p
		if err := s.start(p); err != nil {
			return err
		}
	}
	s.promotions = func() int {
		n := 0
		for _, p := range s.nodes {
			b, _ := os.ReadFile(p.log)
			n += strings.Count(string(b), "promoted to primary")
		}
		return n
	}
	return nil
}

// setupRedis starts a redis-server, a second one replicaof it, and three Sentinels.
func (s *failoverSide) setupRedis() error {
	cfg := s.r.cfg
	ports, err := freePorts(2 + 3)
	if err != nil {
		return err
	}
	for i, role := range []string{"a", "b"} {
		name := "redis-" + role
		// No persistence, as in compare: an in-memory comparison. A diskless sync that starts at
		// once (the default waits 5 s for more followers).
		argv := []string{cfg.RedisBin, "--port", "{port}", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--repl-diskless-sync-delay", "0", "--dir", "{dir}"}
		p := newServerProc(name, argv, filepath.Join(s.r.root, name), logPath(s.r.root, name))
		p.port = ports[i]
		if i == 1 {
			p.extra = []string{"--replicaof", "127.0.0.1", strconv.Itoa(ports[0])}
		}
		s.nodes[i] = p
		if err := s.start(p); err != nil {
			return err
		}
		p.extra = nil // a restart is plain: the Sentinels make it a follower
	}
	for i := range 3 {
		name := fmt.Sprintf("redis-sentinel-%d", i+1)
		dir := filepath.Join(s.r.root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		conf := filepath.Join(dir, "sentinel.conf")
		// Sentinel rewrites its configuration file: it must be writable.
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel resolve-hostnames no\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %s %d\n"+
			"sentinel failover-timeout %s %d\nsentinel parallel-syncs %s 1\n",
			ports[2+i], dir, failoverGroup, ports[0], failoverGroup, cfg.DownAfter.Milliseconds(),
			failoverGroup, cfg.SentinelFT.Milliseconds(), failoverGroup)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return err
		}
		p := newServerProc(name, []string{cfg.RedisBin, conf, "--sentinel", "--port", "{port}"}, dir, logPath(s.r.root, name))
		p.port = ports[2+i]
		s.deciders = append(s.deciders, p)
		s.sentinels = append(s.sentinels, loopback(p.port))
	}
	if err := s.startAll(s.deciders); err != nil {
		return err
	}
	if info, err := infoSection(s.nodes[0].addr, "server"); err == nil {
		s.rep.Version = "redis-server " + info["redis_version"]
	}
	s.cooldown = cfg.RedisKillGap
	s.extraSteady = s.sentinelsAgree
	return nil
}

// roleOf returns the first element of ROLE on addr: master or slave.
func roleOf(addr string) (string, error) {
	p, err := adminDo(addr, time.Second, "ROLE")
	if err != nil {
		return "", err
	}
	if p.kind != '*' || len(p.elems) == 0 {
		return "", fmt.Errorf("ROLE answered %s", p)
	}
	return p.elems[0].str, nil
}

// waitSteady waits until one node is primary and takes writes, and the other is its follower
// with its link up and its offset at the primary's; it returns their indexes.
func (s *failoverSide) waitSteady(since time.Time) (int, int, error) {
	deadline := since.Add(s.r.cfg.SyncTimeout)
	var last string
	for {
		p, f, why := s.steady()
		if why == "" {
			return p, f, nil
		}
		last = why
		if s.r.ctx.Err() != nil {
			return 0, 0, errInterrupted
		}
		for _, n := range s.nodes {
			if !n.running() {
				return 0, 0, fmt.Errorf("%s exited (%s); last output:\n%s", n.name, n.exitState(), n.tail)
			}
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("not in sync within --sync-timeout %v: %s", s.r.cfg.SyncTimeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// steady is one look at the pair: the primary's and follower's indexes, or why not yet.
func (s *failoverSide) steady() (int, int, string) {
	var roles [2]string
	for i, n := range s.nodes {
		r, err := roleOf(n.addr)
		if err != nil {
			return 0, 0, fmt.Sprintf("%s: %v", n.name, err)
		}
		roles[i] = r
	}
	var p, f int
	switch {
	case roles[0] == "master" && roles[1] == "slave":
		p, f = 0, 1
	case roles[1] == "master" && roles[0] == "slave":
		p, f = 1, 0
	default:
		return 0, 0, fmt.Sprintf("roles %s %s", roles[0], roles[1])
	}
	pi, err := infoSection(s.nodes[p].addr, "replication")
	if err != nil {
		return 0, 0, err.Error()
	}
	fi, err := infoSection(s.nodes[f].addr, "replication")
	if err != nil {
		return 0, 0, err.Error()
	}
	if fi["master_link_status"] != "up" || fi["master_sync_in_progress"] != "0" || fi["master_port"] != strconv.Itoa(s.nodes[p].port) {
		return 0, 0, fmt.Sprintf("follower %s: master_port:%s master_link_status:%s master_sync_in_progress:%s", s.nodes[f].name,
			fi["master_port"], fi["master_link_status"], fi["master_sync_in_progress"])
	}
	po, err1 := strconv.ParseInt(pi["master_repl_offset"], 10, 64)
	fo, err2 := strconv.ParseInt(fi["slave_repl_offset"], 10, 64)
	if err1 != nil || err2 != nil || fo < po {
		return 0, 0, fmt.Sprintf("follower offset %s, primary %s", fi["slave_repl_offset"], pi["master_repl_offset"])
	}
	if rep, err := adminDo(s.nodes[p].addr, time.Second, "SET", "probe", "steady"); err != nil || rep.str != "OK" {
		return 0, 0, fmt.Sprintf("SET on the primary %s: %v %v", s.nodes[p].name, rep, err)
	}
	if s.extraSteady != nil {
		if ok, why := s.extraSteady(s.nodes[p], s.nodes[f]); !ok {
			return 0, 0, why
		}
	}
	return p, f, ""
}

// sentinelsAgree reports whether every Sentinel names the primary, knows the other two, and
// sees the follower as a healthy replica it could promote.
func (s *failoverSide) sentinelsAgree(primary, follower *serverProc) (bool, string) {
	for _, addr := range s.sentinels {
		a, err := dialAdmin(addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		why := func() string {
			m, err := a.do("SENTINEL", "get-master-addr-by-name", failoverGroup)
			if err != nil || len(m.elems) != 2 || m.elems[1].str != strconv.Itoa(primary.port) {
				return fmt.Sprintf("Sentinel %s names master %s (%v)", addr, m, err)
			}
			mf, err := a.do("SENTINEL", "master", failoverGroup)
			if err != nil {
				return err.Error()
			}
			fields := pairs(mf)
			if fields["flags"] != "master" || fields["num-other-sentinels"] != "2" {
				return fmt.Sprintf("Sentinel %s: master flags %s, other sentinels %s", addr, fields["flags"], fields["num-other-sentinels"])
			}
			rs, err := a.do("SENTINEL", "replicas", failoverGroup)
			if err != nil {
				return err.Error()
			}
			for _, r := range rs.elems {
				rf := pairs(r)
				if rf["port"] == strconv.Itoa(follower.port) {
					if rf["flags"] == "slave" && rf["master-link-status"] == "ok" {
						return ""
					}
					return fmt.Sprintf("Sentinel %s: replica flags %s, link %s", addr, rf["flags"], rf["master-link-status"])
				}
			}
			return fmt.Sprintf("Sentinel %s does not list the replica %s", addr, follower.addr)
		}()
		a.Close()
		if why != "" {
			return false, why
		}
	}
	return true, ""
}

// waitNamed waits until every Sentinel port answers get-master-addr-by-name with p, and
// returns when.
func (s *failoverSide) waitNamed(p *serverProc, deadline time.Time) (time.Time, error) {
	want := strconv.Itoa(p.port)
	var last string
	for {
		all := true
		for _, addr := range s.sentinels {
			m, err := adminDo(addr, time.Second, "SENTINEL", "get-master-addr-by-name", failoverGroup)
			if err != nil || len(m.elems) != 2 || m.elems[1].str != want {
				all, last = false, fmt.Sprintf("Sentinel port %s names %s (%v)", addr, m, err)
				break
			}
		}
		switch {
		case all:
			return time.Now(), nil
		case s.r.ctx.Err() != nil:
			return time.Time{}, errInterrupted
		case time.Now().After(deadline):
			return time.Time{}, fmt.Errorf("the Sentinel ports did not all name %s as primary within --failover-limit: %s", p.name, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pairs reads a flat array of field/value pairs.
func pairs(p reply) map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(p.elems); i += 2 {
		out[p.elems[i].str] = p.elems[i+1].str
	}
	return out
}

// trial runs one kill of primary p with follower f, and returns the new primary's and
// follower's indexes once the killed node is back in sync.
func (s *failoverSide) trial(t, p, f int) (FailoverTrial, int, int, error) {
	cfg := s.r.cfg
	primary, survivor := s.nodes[p], s.nodes[f]
	tr := FailoverTrial{Trial: t, Killed: primary.name, Survivor: survivor.name, Promotions: -1}
	// Space the kills as the Sentinels need (the load runs inside the wait's end).
	if s.cooldown > 0 && !s.lastSwitch.IsZero() {
		if d := time.Until(s.lastSwitch.Add(s.cooldown - cfg.Load)); d > 0 {
			select {
			case <-time.After(d):
			case <-s.r.ctx.Done():
				return tr, 0, 0, errInterrupted
			}
		}
	}
	switches := s.switchCounts()
	promotions := 0
	if s.promotions != nil {
		promotions = s.promotions()
	}

	prefix := fmt.Sprintf("trial%d", t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var plain, waited writerResult
	wg.Add(2)
	go func() { defer wg.Done(); plain = runWriter(primary.addr, prefix+":plain:", false, stop) }()
	go func() { defer wg.Done(); waited = runWriter(primary.addr, prefix+":wait:", true, stop) }()
	select {
	case <-time.After(cfg.Load):
	case <-s.r.ctx.Done():
		close(stop)
		wg.Wait()
		return tr, 0, 0, errInterrupted
	}

	probe := startProbe(s.r.ctx, survivor.addr, cfg.ProbeEvery, cfg.FailoverLimit)
	killAt := time.Now()
	if err := primary.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		close(stop)
		wg.Wait()
		probe.cancel()
		return tr, 0, 0, fmt.Errorf("kill -9 %s: %w", primary.name, err)
	}
	<-primary.exited
	pr := probe.wait()
	close(stop) // the writers have seen their connections break by now; stop any that has not
	wg.Wait()
	if s.r.ctx.Err() != nil {
		return tr, 0, 0, errInterrupted
	}
	tr.ProbeErrors = pr.errors
	tr.PlainAcked, tr.WaitAcked, tr.WaitUnacked = len(plain.acked), len(waited.acked), waited.unacked
	if pr.ok.IsZero() {
		return tr, 0, 0, fmt.Errorf("%s took no write within --failover-limit %v of %s's kill -9 (its answers: %s)",
			survivor.name, cfg.FailoverLimit, primary.name, strings.Join(pr.errors, "; "))
	}
	tr.FailoverMs = float64(pr.ok.Sub(killAt)) / 1e6
	tr.Probes = pr.attempts
	s.lastSwitch = pr.ok

	// The acknowledged writes, looked up on the new primary.
	var sample []string
	var err error
	if tr.PlainLost, sample, err = missingKeys(survivor.addr, prefix+":plain:", plain.acked); err != nil {
		return tr, 0, 0, fmt.Errorf("looking up the plain writes on %s: %w", survivor.name, err)
	}
	tr.LostSample = append(tr.LostSample, sample...)
	if tr.WaitLost, sample, err = missingKeys(survivor.addr, prefix+":wait:", waited.acked); err != nil {
		return tr, 0, 0, fmt.Errorf("looking up the WAIT writes on %s: %w", survivor.name, err)
	}
	if tr.WaitLost > 0 {
		tr.LostSample = sample // these are the ones that matter
	}

	// The killed node comes back only once every Sentinel port names the new primary: a node
	// back while the deciders are still failing over would race them.
	named, err := s.waitNamed(survivor, killAt.Add(cfg.FailoverLimit))
	if err != nil {
		return tr, 0, 0, err
	}
	tr.AllNamedMs = float64(named.Sub(killAt)) / 1e6

	// The killed node back on its port and directory, and in sync.
	restartAt := time.Now()
	if err := s.start(primary); err != nil {
		return tr, 0, 0, fmt.Errorf("restarting %s: %w", primary.name, err)
	}
	np, nf, err := s.waitSteady(restartAt)
	if err != nil {
		return tr, 0, 0, fmt.Errorf("after restarting %s: %w", primary.name, err)
	}
	tr.RejoinS = time.Since(restartAt).Seconds()
	tr.Switches = maxDelta(switches, s.switchCounts())
	if s.promotions != nil {
		tr.Promotions = s.promotions() - promotions
	}
	tr.SurvivorPrimary = np == f
	tr.Spurious = spuriousFailovers(tr.Switches, tr.Promotions, tr.SurvivorPrimary)
	return tr, np, nf, nil
}

func promotionsText(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// writerResult is what one writer connection had acknowledged when its primary died.
type writerResult struct {
	acked   []int // key numbers
	unacked int   // SET answered OK but WAIT answered 0: not counted as acknowledged
	err     error // what ended it
}

// runWriter writes prefix+i for i = 0, 1, ... on one connection until the connection fails or
// stop closes; with wait, each SET is followed by WAIT 1 1000.
func runWriter(addr, prefix string, wait bool, stop <-chan struct{}) writerResult {
	var res writerResult
	a, err := dialAdmin(addr, 2*time.Second)
	if err != nil {
		res.err = err
		return res
	}
	defer a.Close()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return res
		default:
		}
		key := prefix + strconv.Itoa(i)
		p, err := a.do("SET", key, "v-"+key)
		if err != nil {
			res.err = err
			return res
		}
		if p.kind != '+' || p.str != "OK" {
			continue // refused (a lease not yet granted, READONLY): not acknowledged
		}
		if !wait {
			res.acked = append(res.acked, i)
			continue
		}
		w, err := a.do("WAIT", "1", "1000")
		if err != nil {
			res.err = err
			return res
		}
		if w.kind == ':' && w.n >= 1 {
			res.acked = append(res.acked, i)
		} else {
			res.unacked++
		}
	}
}

// probeResult is when the survivor first took a write, and how it refused before.
type probeResult struct {
	ok       time.Time // zero: never within the limit
	attempts int
	errors   []string // distinct refusals and connection errors, in order
}

type probe struct {
	done   chan probeResult
	quit   chan struct{}
	cancel func()
}

// startProbe sends SET probe x to addr every `every` until it answers OK, limit passes or ctx
// ends.
func startProbe(ctx context.Context, addr string, every, limit time.Duration) *probe {
	pb := &probe{done: make(chan probeResult, 1), quit: make(chan struct{})}
	var once sync.Once
	pb.cancel = func() { once.Do(func() { close(pb.quit) }) }
	go func() {
		var res probeResult
		defer func() { pb.done <- res }()
		seen := map[string]bool{}
		note := func(s string) {
			if i := strings.IndexAny(s, " \r\n"); i > 0 && strings.HasPrefix(s, "-") {
				s = s[:i] // the error code: -READONLY, -NOLEASE, ...
			} else if i := strings.LastIndex(s, ": "); i >= 0 {
				s = s[i+2:] // "read tcp A->B: read: connection reset by peer": the cause
			}
			if !seen[s] && len(res.errors) < 8 {
				seen[s] = true
				res.errors = append(res.errors, s)
			}
		}
		end := time.Now().Add(limit)
		var a *adminClient
		defer func() {
			if a != nil {
				a.Close()
			}
		}()
		for time.Now().Before(end) {
			res.attempts++
			if a == nil {
				c, err := dialAdmin(addr, 500*time.Millisecond)
				if err != nil {
					note(err.Error())
				}
				a = c
			}
			if a != nil {
				p, err := a.do("SET", "probe", "x")
				switch {
				case err != nil:
					note(err.Error())
					a.Close()
					a = nil
				case p.kind == '+' && p.str == "OK":
					res.ok = time.Now()
					return
				default:
					note(p.String())
				}
			}
			select {
			case <-pb.quit:
				return
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
		}
	}()
	return pb
}

func (pb *probe) wait() probeResult { return <-pb.done }

// missingKeys looks up prefix+i for each i on addr with pipelined EXISTS and returns how many
// are missing, with up to five of their names.
func missingKeys(addr, prefix string, ids []int) (int, []string, error) {
	a, err := dialAdmin(addr, 10*time.Second)
	if err != nil {
		return 0, nil, err
	}
	defer a.Close()
	missing := 0
	var sample []string
	const batch = 1000
	for lo := 0; lo < len(ids); lo += batch {
		hi := min(lo+batch, len(ids))
		var buf []byte
		for _, i := range ids[lo:hi] {
			buf = appendCommand(buf, "EXISTS", prefix+strconv.Itoa(i))
		}
		if err := a.c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			return 0, nil, err
		}
		if _, err := a.c.Write(buf); err != nil {
			return 0, nil, err
		}
		for _, i := range ids[lo:hi] {
			p, err := a.r.readReply()
			if err != nil {
				return 0, nil, err
			}
			if p.kind != ':' {
				return 0, nil, fmt.Errorf("EXISTS %s%d answered %s", prefix, i, p)
			}
			if p.n == 0 {
				missing++
				if len(sample) < 5 {
					sample = append(sample, prefix+strconv.Itoa(i))
				}
			}
		}
	}
	return missing, sample, nil
}

// switchWatch counts the +switch-master messages one Sentinel port publishes.
type switchWatch struct {
	a     *adminClient
	count atomic.Int64
	done  chan struct{}
}

func watchSwitches(addr string) (*switchWatch, error) {
	a, err := dialAdmin(addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	p, err := a.do("SUBSCRIBE", "+switch-master")
	if err != nil || p.kind != '*' {
		a.Close()
		return nil, fmt.Errorf("SUBSCRIBE answered %v, %v", p, err)
	}
	if err := a.c.SetDeadline(time.Time{}); err != nil {
		a.Close()
		return nil, err
	}
	w := &switchWatch{a: a, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			m, err := a.r.readReply()
			if err != nil {
				return
			}
			if len(m.elems) == 3 && m.elems[0].str == "message" && m.elems[1].str == "+switch-master" {
				w.count.Add(1)
			}
		}
	}()
	return w, nil
}

func (w *switchWatch) close() {
	w.a.Close()
	<-w.done
}

func (s *failoverSide) switchCounts() []int64 {
	out := make([]int64, len(s.subs))
	for i, w := range s.subs {
		out[i] = w.count.Load()
	}
	return out
}
