// Package harness starts real server processes for end-to-end tests: lavik-data built from this
// repository, or redis-server as the reference (LAVIK_TEST_SERVER=redis), each on an ephemeral
// loopback port with its own data directory. Tests drive them with go-redis or raw RESP.
package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// IsRedis reports whether the suite runs against redis-server instead of lavik-data. Tests of
// Lavik-only behaviour skip themselves when it is true.
func IsRedis() bool { return os.Getenv("LAVIK_TEST_SERVER") == "redis" }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// DataBinary returns the path of the lavik-data binary: $LAVIK_DATA_BIN when set (make test sets
// it to bin/lavik-data), otherwise one built once per test process from this repository.
func DataBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("LAVIK_DATA_BIN"); p != "" {
			binPath, buildErr = filepath.Abs(p)
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "lavik-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "lavik-data")
		cmd := exec.Command("go", "build", "-o", binPath, "./services/data/cmd/lavik-data")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build lavik-data: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Server is one running server process.
type Server struct {
	t    testing.TB
	Dir  string   // data directory; kept across Restart
	Args []string // extra arguments given at start
	// ConfigFile, when set (StartWithConfig), is the config file the server is started with,
	// given before the other arguments.
	ConfigFile string
	Addr       string // 127.0.0.1:port once ready

	cmd    *exec.Cmd
	logMu  sync.Mutex
	log    strings.Builder
	exited chan struct{}
	port   int
	redis  bool // redis-server whatever the suite runs against (StartRedis)
}

// Start starts lavik-data (or redis-server when IsRedis) with a fresh data directory and the
// extra command-line arguments args (Redis-style "--name value" pairs), waits until it accepts
// connections and registers a cleanup that stops it.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	s := &Server{t: t, Dir: t.TempDir(), Args: args}
	s.start()
	t.Cleanup(func() { s.Stop() })
	return s
}

// StartRedis is Start for redis-server, whatever the suite runs against: for tests that
// compare lavik-data's answers with Redis's side by side.
func StartRedis(t testing.TB, args ...string) *Server {
	t.Helper()
	s := &Server{t: t, Dir: t.TempDir(), Args: args, redis: true}
	s.start()
	t.Cleanup(func() { s.Stop() })
	return s
}

var readyRE = regexp.MustCompile(`ready to accept connections.*addr=([0-9.]+:[0-9]+)`)

// StartWithConfig is Start with the config file path given first, as redis-server takes it.
func StartWithConfig(t testing.TB, path string, args ...string) *Server {
	t.Helper()
	s := &Server{t: t, Dir: t.TempDir(), Args: args, ConfigFile: path}
	s.start()
	t.Cleanup(func() { s.Stop() })
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *Server) start() {
	t := s.t
	t.Helper()
	var cmd *exec.Cmd
	if IsRedis() || s.redis {
		if s.port == 0 {
			s.port = freePort(t)
		}
		args := []string{"--port", fmt.Sprint(s.port), "--bind", "127.0.0.1", "--dir", s.Dir,
			"--save", "", "--appendonly", "yes", "--daemonize", "no"}
		if s.ConfigFile != "" {
			args = append([]string{s.ConfigFile}, args...)
		}
		cmd = exec.Command("redis-server", append(args, s.Args...)...)
	} else {
		port := "0"
		if s.port != 0 {
			port = fmt.Sprint(s.port)
		}
		args := []string{"--port", port, "--bind", "127.0.0.1", "--dir", s.Dir}
		if s.ConfigFile != "" {
			args = append([]string{s.ConfigFile}, args...)
		}
		cmd = exec.Command(DataBinary(t), append(args, s.Args...)...)
	}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("start server: %v", err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.logMu.Lock()
			s.log.WriteString(line + "\n")
			s.logMu.Unlock()
			if m := readyRE.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			} else if (IsRedis() || s.redis) && strings.Contains(line, "Ready to accept connections") {
				select {
				case ready <- fmt.Sprintf("127.0.0.1:%d", s.port):
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	go func() {
		cmd.Wait()
		pw.Close()
		close(s.exited)
	}()
	select {
	case addr := <-ready:
		s.Addr = addr
		if s.port == 0 {
			_, p, _ := net.SplitHostPort(addr)
			fmt.Sscan(p, &s.port)
		}
	case <-s.exited:
		t.Fatalf("server exited before it was ready:\n%s", s.Log())
	case <-time.After(120 * time.Second):
		t.Fatalf("server not ready after 120s:\n%s", s.Log())
	}
}

// Log returns everything the process printed so far.
func (s *Server) Log() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.String()
}

// Client returns a go-redis client for db 0, closed at test cleanup.
func (s *Server) Client() *redis.Client { return s.ClientOpts(&redis.Options{}) }

// ClientOpts returns a go-redis client with the given options (Addr is filled in).
func (s *Server) ClientOpts(o *redis.Options) *redis.Client {
	o.Addr = s.Addr
	if o.Protocol == 0 {
		o.Protocol = 2
	}
	c := redis.NewClient(o)
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Conn opens a raw TCP connection, closed at test cleanup.
func (s *Server) Conn() net.Conn {
	c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Running reports whether the process is still alive.
func (s *Server) Running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// WaitExit waits up to d for the process to exit by itself and reports whether it did.
func (s *Server) WaitExit(d time.Duration) bool {
	select {
	case <-s.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// Stop sends SIGTERM and waits for a clean exit (SIGKILL after 60s). Safe to call twice.
func (s *Server) Stop() {
	if s.cmd == nil || !s.Running() {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	if !s.WaitExit(60 * time.Second) {
		s.t.Errorf("server did not stop within 60s after SIGTERM; killing")
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// Kill sends SIGKILL (kill -9) and waits for the process to go.
func (s *Server) Kill() {
	if s.cmd == nil || !s.Running() {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
}

// ExitCode returns the process exit code once it has exited.
func (s *Server) ExitCode() int {
	<-s.exited
	return s.cmd.ProcessState.ExitCode()
}

// Restart stops the server (SIGTERM) if running and starts it again on the same port and
// data directory with the same arguments.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// KillRestart kills the server with SIGKILL and starts it again on the same data directory.
func (s *Server) KillRestart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

// Eventually polls cond every 10ms until it is true or the deadline passes.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Ctx is a background context with a generous deadline for test calls.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// ReplicaOfArgs returns the command-line arguments that make a server a follower of primary:
// "--replicaof 127.0.0.1 <port>". redis-server joins the words after an option into its value
// and lavik-data does the same, so one spelling serves both.
func ReplicaOfArgs(primary *Server) []string {
	return []string{"--replicaof", "127.0.0.1", fmt.Sprint(primary.port)}
}

// Pause stops the process with SIGSTOP, as a hung or descheduled machine would, until Resume.
// A cleanup resumes it, so that Stop's SIGTERM can take effect.
func (s *Server) Pause() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("SIGSTOP: %v", err)
	}
	s.t.Cleanup(func() {
		if s.Running() {
			s.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
}

// Resume continues a process stopped by Pause (SIGCONT).
func (s *Server) Resume() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatalf("SIGCONT: %v", err)
	}
}
