//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests start real redis-server processes on ephemeral loopback ports; they are skipped
// when redis-server is not installed, and with -short.

func needRedis(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts redis-server; skipped with -short")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	return bin
}

// startRedis starts redis-server (persistence off) and returns its address.
func startRedis(t *testing.T) string {
	t.Helper()
	bin := needRedis(t)
	dir := t.TempDir()
	s := newServerProc("redis", []string{bin, "--port", "{port}", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", "{dir}"}, dir, filepath.Join(dir, "redis.log"))
	if _, err := s.start(context.Background(), 30*time.Second, -1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.stop(30 * time.Second) })
	return s.addr
}

func TestRunAgainstRedis(t *testing.T) {
	addr := startRedis(t)
	dir := t.TempDir()
	jsonPath, csvPath, chartPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.html")
	code, out, errOut := runCLI(t, "run", "--addr", addr, "--name", "redis", "--keys", "2000", "--value-min", "100",
		"--value-max", "400", "--workload", "mixed", "--dist", "zipf", "--sweep", "4,16", "--pipeline", "4",
		"--duration", "1s", "--warmup", "200ms", "--verify-sample", "1", "--no-progress",
		"--json", jsonPath, "--csv", csvPath, "--chart", chartPath)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"loaded redis: 2000 keys", "p99.9 ms", "get", "set", "total", "result: OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var rep runReport
	b, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Results[1].Conns != 16 || rep.Result != "OK" {
		t.Fatalf("json: %+v", rep)
	}
	for _, r := range rep.Results {
		if r.Total.Count == 0 || r.Total.P99Ms <= 0 || r.Verified == 0 || r.Verified != r.Checked || r.Errors.Total() != 0 {
			t.Errorf("point conns=%d: %+v", r.Conns, r)
		}
		if r.Total.P50Ms > r.Total.P99Ms || r.Total.P99Ms > r.Total.P999Ms || r.Total.P999Ms > r.Total.MaxMs {
			t.Errorf("percentiles out of order: %+v", r.Total)
		}
	}
	if b, _ := os.ReadFile(csvPath); strings.Count(string(b), "\n") != 1+2*3 {
		t.Errorf("csv:\n%s", b)
	}
	if b, _ := os.ReadFile(chartPath); !strings.Contains(string(b), "<polyline") {
		t.Error("chart has no line")
	}
}

func TestYCSBAgainstRedis(t *testing.T) {
	addr := startRedis(t)
	code, out, errOut := runCLI(t, "run", "--addr", addr, "--keys", "500", "--workload", "ycsb-a", "--conns", "4",
		"--pipeline", "2", "--duration", "700ms", "--warmup", "100ms", "--verify-sample", "1", "--no-progress")
	if code != exitOK || !strings.Contains(out, "updates: MULTI DEL HSET EXEC") || !strings.Contains(out, "hgetall") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// syncBuffer is a strings.Builder safe to read while the command writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lavikAsRedis stands in for lavik-data: a redis-server with an append-only file, so the restart
// measurement has data to reload.
const lavikAsRedis = "redis-server --port {port} --bind 127.0.0.1 --dir {dir} --save '' --appendonly yes --appendfsync everysec"

func TestCompareRedisVsRedis(t *testing.T) {
	needRedis(t)
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "c.json")
	code, out, errOut := runCLI(t, "compare", "--lavik-cmd", lavikAsRedis, "--redis-bin", "redis-server",
		"--keys", "1000", "--conns", "4", "--pipelines", "1,8", "--rounds", "2", "--duration", "400ms", "--warmup", "100ms",
		"--no-progress", "--workdir", dir, "--json", jsonPath, "--csv", filepath.Join(dir, "c.csv"),
		"--chart", filepath.Join(dir, "c.html"))
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"lavik/redis", "memory (VmRSS)", "lavik restart: SIGTERM to exit", "result: OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	var rep compareReport
	b, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 4 {
		t.Fatalf("%d cells", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		if len(c.Redis.Rounds) != 2 || len(c.Lavik.Rounds) != 2 || c.QPSRatio <= 0 || c.P99Ratio <= 0 {
			t.Errorf("cell %s/%d/%d: %+v", c.Workload, c.Conns, c.Pipeline, c)
		}
	}
	// Round 1 runs redis first, round 2 lavik first.
	if !regexp.MustCompile(`(?s)round 1/2\s+get\s+conns=4\s+pipeline=1\s+redis.*round 1/2\s+get\s+conns=4\s+pipeline=1\s+lavik`).MatchString(errOut) ||
		!regexp.MustCompile(`(?s)round 2/2\s+get\s+conns=4\s+pipeline=1\s+lavik.*round 2/2\s+get\s+conns=4\s+pipeline=1\s+redis`).MatchString(errOut) {
		t.Error("servers do not alternate between rounds")
	}
	if rr := rep.Restart; rr == nil || rr.Keys != 1000 || rr.Verified != 1000 || rr.StartToReadyS <= 0 || rr.Error != "" {
		t.Errorf("restart %+v", rep.Restart)
	}
	for _, m := range rep.Memory {
		if m.Keys != 1000 || m.EmptyRSS <= 0 || m.LoadedRSS <= 0 || m.PerKeyRaw <= 0 {
			t.Errorf("memory %+v", m)
		}
	}
	// Data directories are removed unless --keep.
	if left, _ := filepath.Glob(filepath.Join(dir, "lavik-bench-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestCompareInterruptStopsServers cancels a comparison midway: both servers must be gone when
// it returns.
func TestCompareInterruptStopsServers(t *testing.T) {
	needRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, []string{"lavik-bench", "compare", "--lavik-cmd", lavikAsRedis, "--keys", "1000",
			"--conns", "2", "--pipelines", "1", "--duration", "30s", "--warmup", "0s", "--no-progress",
			"--workdir", t.TempDir()}, &out, &errOut)
	}()
	pidRE := regexp.MustCompile(`started (redis|lavik) \(pid (\d+)\)`)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errOut.String(), "round 1/2") && !strings.Contains(errOut.String(), "loaded lavik") {
		if time.Now().After(deadline) {
			t.Fatalf("compare did not get going:\n%s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("compare did not stop after cancellation")
	}
	if code != exitInterrupted {
		t.Errorf("exit %d, want %d", code, exitInterrupted)
	}
	ms := pidRE.FindAllStringSubmatch(errOut.String(), -1)
	if len(ms) != 2 {
		t.Fatalf("pids: %v\n%s", ms, errOut.String())
	}
	for _, m := range ms {
		pid, _ := strconv.Atoi(m[2])
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("%s (pid %d) still running", m[1], pid)
		}
	}
}

// TestCompareExtras runs every addition to the matrix with redis-server standing in for Lavik:
// the disk ceiling, overwrites, pinned cells (when this machine has 2 CPUs and taskset) and the
// zipf cells, for which the stand-in is restarted with an argument standing in for the value
// cache.
func TestCompareExtras(t *testing.T) {
	needRedis(t)
	allowed, _ := allowedCPUs()
	_, tasksetErr := exec.LookPath("taskset")
	pin := len(allowed) >= 2 && tasksetErr == nil
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "c.json")
	args := []string{"compare", "--lavik-cmd", lavikAsRedis, "--redis-bin", "redis-server",
		"--keys", "1000", "--conns", "4", "--pipelines", "1,8", "--rounds", "1", "--duration", "500ms", "--warmup", "100ms",
		"--no-progress", "--workdir", dir, "--json", jsonPath,
		"--overwrites", "2", "--zipf-pipelines", "4", "--lavik-cache-args", "--proto-max-bulk-len {bytes}",
		"--disk-ceiling", "64MiB", "--disk-duration", "300ms", "--disk-depth", "16"}
	if pin {
		args = append(args, "--pin", fmt.Sprintf("server=%d,client=%d", allowed[0], allowed[1]))
	}
	code, out, errOut := runCLI(t, args...)
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var rep compareReport
	b, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}

	modes := map[string]int{}
	for _, c := range rep.Cells {
		modes[c.Mode]++
		for _, sc := range []SystemCell{c.Redis, c.Lavik} {
			if len(sc.Rounds) != 1 || sc.CPUUsPerOp <= 0 || sc.P999Ms < sc.P99Ms {
				t.Errorf("cell %s %dx%d: %+v", c.label(), c.Conns, c.Pipeline, sc)
			}
		}
		if c.CPURatio <= 0 || c.P999Ratio <= 0 {
			t.Errorf("cell %s %dx%d: ratios %+v", c.label(), c.Conns, c.Pipeline, c)
		}
		// 4 connections x 8 keep 32 GETs outstanding, 16 reads were in flight in the ceiling.
		// The stand-in reads nothing from storage: none of its GETs count against the ceiling.
		wantDisk := c.Workload == "get" && c.Mode != "zipf" && c.Pipeline == 8 && rep.Disk.ReadsPS > 0
		if c.DiskCell != wantDisk || c.DiskPct > 1 {
			t.Errorf("cell %s %dx%d: disk cell %v, %.1f%% of the disk ceiling", c.label(), c.Conns, c.Pipeline, c.DiskCell, c.DiskPct)
		}
		if c.Mode == "zipf" && (c.Workload != "get" || c.Pipeline != 4 || !strings.HasPrefix(c.Dist, "zipf")) {
			t.Errorf("zipf cell %+v", c)
		}
	}
	wantModes := map[string]int{"": 4, "zipf": 1}
	if pin {
		wantModes["pinned"] = 4
	}
	if !reflect.DeepEqual(modes, wantModes) {
		t.Errorf("cells by mode %v, want %v", modes, wantModes)
	}

	if d := rep.Disk; d == nil || (d.Skipped == "" && (d.Reads == 0 || d.Depth != 16)) {
		t.Errorf("disk ceiling %+v", d)
	}
	passes := 0
	for _, l := range rep.Loads {
		if l.Pass > 0 {
			passes++
		}
	}
	if passes != 4 || !strings.Contains(out, "overwrite 2, lavik") {
		t.Errorf("%d overwrite passes reported, want 2 per server", passes)
	}

	// Restarts: into the pinned cells (when pinned), then with the value cache.
	wantRestarts := []string{"--proto-max-bulk-len 1048576"}
	if pin {
		wantRestarts = append([]string{fmt.Sprintf("taskset -c %d ", allowed[0])}, wantRestarts...)
	}
	if len(rep.Restarts) != len(wantRestarts) || rep.Restart == nil {
		t.Fatalf("restarts %+v", rep.Restarts)
	}
	for i, w := range wantRestarts {
		rr := rep.Restarts[i]
		if !strings.Contains(rr.Command, w) || rr.Error != "" || rr.Keys != 1000 || rr.Verified != 1000 {
			t.Errorf("restart %d: %+v, want a command with %q", i, rr, w)
		}
	}
	if strings.Contains(rep.Restarts[len(rep.Restarts)-1].Command, "taskset") {
		t.Error("the zipf cells ran lavik pinned")
	}

	if pin {
		pr := rep.Pinning
		if pr == nil || len(pr.Problems) != 0 || pr.RedisThreads < 1 || pr.LavikThreads < 1 || pr.GeneratorThreads < 1 || pr.GeneratorProcs != 1 {
			t.Errorf("pinning %+v", pr)
		}
		// The generator is back on every CPU it had.
		if now, err := allowedCPUs(); err != nil || !now.equal(allowed) {
			t.Errorf("after the run this process may use CPUs %s (%v), before %s", now, err, allowed)
		}
	}
	for _, want := range []string{"disk ceiling", "cpu us/op", "p99.9 ms", "key figures", "lavik data directory", "after 2 overwrites", "result: OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestComparePinSkipped asks for pinned cells on a CPU this process may not use: the comparison
// runs without them and says why.
func TestComparePinSkipped(t *testing.T) {
	needRedis(t)
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "c.json")
	code, out, errOut := runCLI(t, "compare", "--lavik-cmd", lavikAsRedis, "--keys", "200", "--conns", "2", "--pipelines", "1",
		"--workloads", "get", "--rounds", "1", "--duration", "200ms", "--warmup", "0s", "--no-progress", "--restart=false",
		"--workdir", dir, "--json", jsonPath, "--pin", "server=0,client=1023")
	if code != exitOK || !strings.Contains(out, "pinned cells skipped: CPU 1023 is not among") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var rep compareReport
	b, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 1 || rep.Cells[0].Mode != "" || rep.PinSkipped == "" || rep.Pinning != nil || len(rep.Restarts) != 0 {
		t.Errorf("%+v", rep)
	}
}
