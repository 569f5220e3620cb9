package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// serverProc is a server process the compare harness started: redis-server or lavik-data (or,
// for tests, any command line). Its data directory survives restarts.
//
// Readiness: when the command line has {port}, the harness picks a free loopback port and
// polls PING on it. Otherwise the server chooses its port (lavik-data --port 0) and must print
// a line containing "ready to accept connections" and "addr=HOST:PORT"; the harness then polls
// PING on that address. A restart keeps the chosen port.
type serverProc struct {
	name string
	argv []string // template: {port} and {dir} are filled in at each start
	dir  string
	log  string // file receiving the server's stdout and stderr
	port int    // chosen port, when argv has {port}
	// prefix goes before argv and extra after it at the next start: compare starts lavik-data
	// through taskset for its pinned cells, and with its value cache for the zipf cells.
	prefix, extra []string
	// afterStart, when set, runs right after each start of the process, before the harness waits
	// for it to be ready (capacity moves it into its memory cgroup here); an error kills it.
	afterStart func(pid int) error

	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
	tail   *tailBuffer
}

var readyAddrRE = regexp.MustCompile(`(?i)ready to accept connections.*\baddr=([0-9a-fA-F.:\[\]]+:[0-9]+)`)

func newServerProc(name string, argv []string, dir, log string) *serverProc {
	return &serverProc{name: name, argv: argv, dir: dir, log: log}
}

func (s *serverProc) hasPortTemplate() bool {
	for _, a := range s.argv {
		if strings.Contains(a, "{port}") {
			return true
		}
	}
	return false
}

// commandLine is the command as started, for reports.
func (s *serverProc) commandLine() string {
	parts := make([]string, len(s.expand()))
	for i, a := range s.expand() {
		if a == "" || strings.ContainsAny(a, " \t'\"") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

func (s *serverProc) expand() []string {
	out := append([]string(nil), s.prefix...)
	for _, a := range s.argv {
		a = strings.ReplaceAll(a, "{port}", strconv.Itoa(s.port))
		out = append(out, strings.ReplaceAll(a, "{dir}", s.dir))
	}
	return append(out, s.extra...)
}

func (s *serverProc) pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *serverProc) running() bool {
	if s.exited == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// freePort returns a loopback port nothing listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start starts the process and waits until it answers PING and, when wantKeys >= 0, until
// DBSIZE equals wantKeys. It returns the time from starting the process to that point.
func (s *serverProc) start(ctx context.Context, timeout time.Duration, wantKeys int64) (time.Duration, error) {
	if s.hasPortTemplate() && s.port == 0 {
		p, err := freePort()
		if err != nil {
			return 0, err
		}
		s.port = p
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return 0, err
	}
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	argv := s.expand()
	cmd := exec.Command(argv[0], argv[1:]...)
	setChildAttrs(cmd)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	tail := &tailBuffer{max: 16 << 10}
	s.tail = tail
	addrCh := make(chan string, 1)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return 0, fmt.Errorf("starting %s: %w", s.name, err)
	}
	s.cmd, s.exited, s.addr = cmd, make(chan struct{}), ""
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			tail.add(line)
			if m := readyAddrRE.FindStringSubmatch(line); m != nil {
				select {
				case addrCh <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(logf, pr)
		logf.Close()
	}()
	exited := s.exited
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(exited)
	}()
	if s.afterStart != nil {
		if err := s.afterStart(cmd.Process.Pid); err != nil {
			_ = cmd.Process.Kill()
			<-exited
			return 0, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	fail := func(format string, a ...any) (time.Duration, error) {
		return 0, fmt.Errorf("%s: %s; last output:\n%s", s.name, fmt.Sprintf(format, a...), s.tail.String())
	}
	if s.hasPortTemplate() {
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	} else {
		select {
		case s.addr = <-addrCh:
		case <-exited:
			return fail("exited before it was ready (%v)", cmd.ProcessState)
		case <-deadline.C:
			return fail("printed no \"ready to accept connections ... addr=\" line within %v", timeout)
		case <-ctx.Done():
			return 0, errInterrupted
		}
	}
	var last string
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := probeReady(s.addr, wantKeys)
		if ok {
			return time.Since(t0), nil
		}
		last = state
		select {
		case <-tick.C:
		case <-exited:
			return fail("exited before it was ready (%v)", cmd.ProcessState)
		case <-deadline.C:
			return fail("not ready within %v (%s)", timeout, last)
		case <-ctx.Done():
			return 0, errInterrupted
		}
	}
}

// probeReady reports whether addr answers PING and, when wantKeys >= 0, holds wantKeys keys;
// otherwise it describes what it saw.
func probeReady(addr string, wantKeys int64) (bool, string) {
	a, err := dialAdmin(addr, time.Second)
	if err != nil {
		return false, err.Error()
	}
	defer a.Close()
	p, err := a.do("PING")
	if err != nil {
		return false, err.Error()
	}
	if p.kind != '+' || p.str != "PONG" {
		return false, "PING answered " + p.String()
	}
	if wantKeys < 0 {
		return true, ""
	}
	n, err := a.dbsize()
	if err != nil {
		return false, err.Error()
	}
	if n != wantKeys {
		return false, fmt.Sprintf("DBSIZE %d, waiting for %d", n, wantKeys)
	}
	return true, ""
}

// stop sends SIGTERM and waits up to timeout for the process to exit, then kills it. It returns
// the time to exit and the exit status.
func (s *serverProc) stop(timeout time.Duration) (time.Duration, int, error) {
	if !s.running() {
		return 0, s.exitCode(), nil
	}
	t0 := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, -1, err
	}
	select {
	case <-s.exited:
		return time.Since(t0), s.exitCode(), nil
	case <-time.After(timeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return time.Since(t0), s.exitCode(), fmt.Errorf("%s did not exit within %v of SIGTERM; killed", s.name, timeout)
	}
}

// exitedWithin reports whether the process exits within d (at once when it already has): a
// failed request can come a moment before the exit that caused it.
func (s *serverProc) exitedWithin(d time.Duration) bool {
	if s.exited == nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitState describes how the process ended, e.g. "signal: killed".
func (s *serverProc) exitState() string {
	if s.cmd == nil || s.running() { // running() also orders this read after Wait's write
		return "still running"
	}
	return s.cmd.ProcessState.String()
}

func (s *serverProc) exitCode() int {
	if s.cmd == nil || s.cmd.ProcessState == nil {
		return -1
	}
	return s.cmd.ProcessState.ExitCode()
}

// tailBuffer keeps the last lines of a process's output for error messages.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	lines []string
	size  int
}

func (t *tailBuffer) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	t.size += len(line) + 1
	for t.size > t.max && len(t.lines) > 1 {
		t.size -= len(t.lines[0]) + 1
		t.lines = t.lines[1:]
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// verifySample reads n keys chosen at random and checks each against the versions it may hold,
// byte for byte; used after a restart. It returns how many were checked.
func verifySample(addr string, ks *Keyspace, n int, seed uint64) (int, error) {
	a, err := dialAdmin(addr, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	s := seed
	n = min(n, ks.N)
	for i := 0; i < n; i++ {
		k := int(splitmix64(&s) % uint64(ks.N))
		key := keyString(ks.Prefix, k)
		lo, hi := ks.readFloor(k), ks.readCeil(k)
		if ks.Kind == kindHash {
			p, err := a.do("HGETALL", key)
			if err != nil {
				return i, err
			}
			if p.kind != '*' || len(p.elems) == 0 {
				return i, fmt.Errorf("%s: HGETALL answered %s", key, p)
			}
			if err := ks.checkHash(p.elems, k, lo, hi, true); err != nil {
				return i, err
			}
			continue
		}
		p, err := a.do("GET", key)
		if err != nil {
			return i, err
		}
		if p.kind != '$' || p.null {
			return i, fmt.Errorf("%s: GET answered %s", key, p)
		}
		if err := ks.checkValue([]byte(p.str), k, lo, hi, true); err != nil {
			return i, err
		}
	}
	return n, nil
}

// logPath is where a server's output goes inside the run's directory.
func logPath(root, name string) string { return filepath.Join(root, name+".log") }
