package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The helper process: the test binary run again with LAVIK_BENCH_HELPER set, doing what the
// test needs a separate process for.
//
//	threads: print "ready", wait for a line on stdin, then start threads (8 goroutines locked
//	         to OS threads, more than the idle ones a fresh process has), print "spawned" and
//	         wait for stdin to close.
//	procs:   print GOMAXPROCS and exit.
func TestMain(m *testing.M) {
	switch os.Getenv("LAVIK_BENCH_HELPER") {
	case "threads":
		helperThreads()
		os.Exit(0)
	case "procs":
		fmt.Println(runtime.GOMAXPROCS(0))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helperThreads() {
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		return
	}
	spawnThreads(8)
	fmt.Println("spawned")
	_, _ = in.ReadString('\n')
}

// spawnThreads locks n goroutines to OS threads at once, so that the runtime must start new
// threads for those its idle ones cannot serve. The threads stay locked (and so alive) until
// release is called.
func spawnThreads(n int) (release func()) {
	var started sync.WaitGroup
	done := make(chan struct{})
	for i := 0; i < n; i++ {
		started.Add(1)
		go func() {
			runtime.LockOSThread()
			started.Done()
			<-done
		}()
	}
	started.Wait()
	return func() { close(done) }
}

func helperCmd(t *testing.T, mode string, prefix ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append([]string(nil), prefix...), exe, "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "LAVIK_BENCH_HELPER="+mode)
	return cmd
}

// TestSetProcessAffinityChild pins a running child process and checks that every thread it has,
// and every thread it starts afterwards, may run only on the chosen CPU: what compare does to
// redis-server.
func TestSetProcessAffinityChild(t *testing.T) {
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	want := cpuList{allowed[len(allowed)-1]}
	cmd := helperCmd(t, "threads")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	out := bufio.NewReader(stdout)
	expect := func(line string) {
		t.Helper()
		got, err := out.ReadString('\n')
		if err != nil || strings.TrimSpace(got) != line {
			t.Fatalf("helper said %q (%v), want %q", got, err, line)
		}
	}
	expect("ready")
	pid := cmd.Process.Pid
	n, err := setProcessAffinity(pid, want)
	if err != nil || n < 1 {
		t.Fatalf("setProcessAffinity: %d threads, %v", n, err)
	}
	before, err := checkAffinity(pid, want)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, "spawn")
	expect("spawned")
	after, err := checkAffinity(pid, want)
	if err != nil {
		t.Fatalf("after starting threads: %v", err)
	}
	if after <= before {
		t.Errorf("%d threads before, %d after locking 8 goroutines to threads: the check did not see the new ones", before, after)
	}
	if got, err := processCPUs(pid); err != nil || !got.equal(want) {
		t.Errorf("processCPUs = %s, %v; want %s", got, err, want)
	}
}

// TestPinSelf pins the test process itself, as compare pins the generator: every thread, the
// ones started later too, must be on the client CPU, GOMAXPROCS must follow, and restoring must
// put every thread back.
func TestPinSelf(t *testing.T) {
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("needs 2 CPUs, this process may use %s", allowed)
	}
	want := cpuList{allowed[len(allowed)-1]}
	procs := runtime.GOMAXPROCS(0)
	restore, err := pinSelf(want, false)
	if err != nil {
		t.Fatal(err)
	}
	restored := false
	defer func() {
		if !restored {
			_ = restore()
		}
	}()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS %d while pinned to one CPU", got)
	}
	release := spawnThreads(8)
	n, err := checkAffinity(os.Getpid(), want)
	release()
	if err != nil {
		t.Fatalf("pinned: %v", err)
	}
	t.Logf("%d threads on CPU %s", n, want)
	restored = true
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if _, err := checkAffinity(os.Getpid(), allowed); err != nil {
		t.Errorf("after restoring: %v", err)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after restoring, was %d", got, procs)
	}
}

// TestTasksetSizesGOMAXPROCS checks why lavik-data is started through taskset rather than
// pinned once running: a Go program started on one CPU has GOMAXPROCS 1 (lavik-data runs one
// event loop per P), and its threads stay on that CPU.
func TestTasksetSizesGOMAXPROCS(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset not installed")
	}
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := allowed[0]
	out, err := helperCmd(t, "procs", "taskset", "-c", strconv.Itoa(cpu)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "1" {
		t.Errorf("GOMAXPROCS under taskset -c %d: %s, want 1", cpu, got)
	}

	// A server started the way compare starts lavik-data in the pinned cells.
	cmd := helperCmd(t, "threads", "taskset", "-c", strconv.Itoa(cpu))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("helper: %q", sc.Text())
	}
	fmt.Fprintln(stdin, "spawn")
	if !sc.Scan() || sc.Text() != "spawned" {
		t.Fatalf("helper: %q", sc.Text())
	}
	// taskset execs the command: the pid is the server's.
	if _, err := checkAffinity(cmd.Process.Pid, cpuList{cpu}); err != nil {
		t.Error(err)
	}
}
