//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMemCgroupLive creates a real memory cgroup, moves a sleeping child into it, reads the
// limit back and removes it. It needs root and a memory cgroup (v2 with the controller, or v1).
func TestMemCgroupLive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root")
	}
	const limit = 64 << 20
	g, err := newMemCgroup("test", limit)
	if errors.Is(err, errNoMemoryCgroup) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		g.remove(time.Second)
		t.Fatal(err)
	}
	defer func() {
		_ = child.Process.Kill()
		_ = child.Wait()
		if err := g.remove(10 * time.Second); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(g.dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there: %v", g.dir, err)
		}
	}()

	limitFile := "memory.limit_in_bytes"
	if g.version == 2 {
		limitFile = "memory.max"
	}
	if n, err := g.readInt(limitFile); err != nil || n != limit || g.limit != limit {
		t.Errorf("%s = %d, %v; recorded %d; want %d", limitFile, n, err, g.limit, limit)
	}
	if err := g.addProc(child.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if procs, err := g.procs(); err != nil || !slices.Contains(procs, child.Process.Pid) {
		t.Errorf("cgroup.procs %v, %v; want %d in it", procs, err, child.Process.Pid)
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(child.Process.Pid) + "/cgroup")
	if !strings.Contains(string(b), "/"+filepath.Base(g.dir)+"\n") {
		t.Errorf("/proc/%d/cgroup does not name %s:\n%s", child.Process.Pid, g.dir, b)
	}
	st, err := g.stats()
	if err != nil || st.Limit != limit || st.OOMKills != 0 {
		t.Errorf("stats %+v, %v", st, err)
	}
	// Not removable while the child is in it.
	if err := g.remove(20 * time.Millisecond); err == nil || !strings.Contains(err.Error(), strconv.Itoa(child.Process.Pid)) {
		t.Errorf("remove with a process inside: %v", err)
	}
}

// testMemoryLimit is the --memory-limit the end-to-end tests use: a real cgroup when this
// process may create one, else none.
func testMemoryLimit(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return "0"
	}
	g, err := newMemCgroup("probe", 64<<20)
	if err != nil {
		t.Logf("running without a cgroup: %v", err)
		return "0"
	}
	if err := g.remove(time.Second); err != nil {
		t.Fatal(err)
	}
	return "256MiB"
}

// capacityArgs runs capacity on tiny sizes: 1,000 keys, grown to 3,000.
func capacityArgs(workdir, limit string, extra ...string) []string {
	return append([]string{"capacity", "--memory-limit", limit, "--base-keys", "1000", "--keys", "3000",
		"--conns", "4", "--pipelines", "1,4", "--rounds", "2", "--duration", "300ms", "--warmup", "100ms",
		"--verify-sample", "1", "--no-progress", "--workdir", workdir}, extra...)
}

// checkCapacityReport checks what every successful capacity run must report.
func checkCapacityReport(t *testing.T, rep capacityReport, limit string) {
	t.Helper()
	if rep.Result != "OK" || len(rep.Cells) != 2 || rep.MinQPSRatio <= 0 {
		t.Fatalf("report: result %s, %d cells, min ratio %v", rep.Result, len(rep.Cells), rep.MinQPSRatio)
	}
	for _, c := range rep.Cells {
		if len(c.Base.Rounds) != 2 || len(c.All.Rounds) != 2 || c.QPSRatio <= 0 || c.P99Ratio <= 0 {
			t.Errorf("cell %d/%d: %+v", c.Conns, c.Pipeline, c)
		}
		for _, r := range append(c.Base.Rounds, c.All.Rounds...) {
			if r.Checked == 0 || r.Verified != r.Checked || r.Errors.Total() != 0 {
				t.Errorf("run %s conns=%d round %d: checked %d verified %d errors %v", r.System, r.Conns, r.Round, r.Checked, r.Verified, r.Errors)
			}
		}
	}
	if len(rep.Loads) != 2 || rep.Loads[0].First != 0 || rep.Loads[0].Keys != 1000 || rep.Loads[1].First != 1000 ||
		rep.Loads[1].Keys != 2000 || rep.Loads[1].DBSize != 3000 {
		t.Errorf("loads %+v", rep.Loads)
	}
	var points []string
	for _, s := range rep.Memory {
		points = append(points, s.Point)
	}
	if want := []string{"empty", "loaded 1k", "measured 1k", "loaded 3k", "measured 3k", "stopped"}; !slices.Equal(points, want) {
		t.Errorf("memory points %q, want %q", points, want)
	}
	loaded := rep.Memory[3]
	if loaded.RSS <= 0 || loaded.PeakRSS < loaded.RSS || loaded.DiskBytes <= 0 || loaded.Keys != 3000 {
		t.Errorf("after loading: %+v", loaded)
	}
	if limit == "0" {
		if rep.Cgroup != "" || loaded.Cgroup != nil {
			t.Errorf("a cgroup without a limit: %q %+v", rep.Cgroup, loaded.Cgroup)
		}
		return
	}
	want, _ := parseBytes(limit)
	if rep.Cgroup == "" || loaded.Cgroup == nil || loaded.Cgroup.Limit != want || loaded.Cgroup.Usage <= 0 || loaded.Cgroup.OOMKills != 0 {
		t.Errorf("cgroup %q: %+v", rep.Cgroup, loaded.Cgroup)
	}
	dir, _, _ := strings.Cut(rep.Cgroup, " ")
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup %s left behind (%v)", dir, err)
	}
}

func checkNothingLeft(t *testing.T, workdir string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(workdir, "lavik-bench-capacity-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestCapacityRedisStandIn runs capacity end to end with redis-server (append-only file on)
// standing in for lavik-data.
func TestCapacityRedisStandIn(t *testing.T) {
	needRedis(t)
	dir := t.TempDir()
	limit := testMemoryLimit(t)
	jsonPath := filepath.Join(dir, "c.json")
	code, out, errOut := runCLI(t, capacityArgs(dir, limit, "--lavik-cmd", lavikAsRedis, "--json", jsonPath,
		"--csv", filepath.Join(dir, "c.csv"), "--chart", filepath.Join(dir, "c.html"))...)
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"1k keys ops/s", "3k keys ops/s", "ops/s 3k/1k", "loaded 3k", "lowest GET ops/s ratio 3k/1k",
		"disk I/O of lavik-data: loading 1k: wrote", "measuring 3k: read", "SIGTERM to exit",
		"loaded lavik-3k: 2000 keys (1000 to 2999)", "result: OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	var rep capacityReport
	b, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	checkCapacityReport(t, rep, limit)
	if b, _ := os.ReadFile(filepath.Join(dir, "c.csv")); strings.Count(string(b), "\n") != 1+2*2*2*2 { // header; 2 cells x 2 sizes x 2 rounds, get and total rows
		t.Errorf("csv:\n%s", b)
	}
	checkNothingLeft(t, dir)
}

// TestCapacityLavikData runs capacity against the real lavik-data named by LAVIK_DATA_BIN (as
// the end-to-end tests in test/ find it; `make build` puts it in bin/).
func TestCapacityLavikData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts lavik-data; skipped with -short")
	}
	bin := os.Getenv("LAVIK_DATA_BIN")
	if bin == "" {
		t.Skip("LAVIK_DATA_BIN not set")
	}
	dir := t.TempDir()
	limit := testMemoryLimit(t)
	code, out, errOut := runCLI(t, capacityArgs(dir, limit, "--lavik-bin", bin, "--json", "-")...)
	t.Logf("stderr:\n%s", errOut)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var rep capacityReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkCapacityReport(t, rep, limit)
	if _, ok := rep.Memory[3].Info["lavik_index_bytes"]; !ok {
		t.Errorf("INFO memory not recorded: %v", rep.Memory[3].Info)
	}
	checkNothingLeft(t, dir)
}

// TestCapacityOOMKillFailsRun gives the server far less memory than it needs: the OOM killer
// takes it during the load, and the run must fail and say so.
func TestCapacityOOMKillFailsRun(t *testing.T) {
	needRedis(t)
	dir := t.TempDir()
	if testMemoryLimit(t) == "0" {
		t.Skip("needs a memory cgroup (root)")
	}
	// 2,000 values of 64 KiB (125 MiB) into a redis-server without persistence limited to 32 MiB.
	code, out, errOut := runCLI(t, "capacity", "--lavik-cmd", "redis-server --port {port} --bind 127.0.0.1 --dir {dir} --save ''",
		"--memory-limit", "32MiB", "--base-keys", "200", "--keys", "2000", "--value-size", "65536", "--conns", "2",
		"--pipelines", "1", "--rounds", "1", "--duration", "200ms", "--warmup", "0s", "--no-progress", "--workdir", dir)
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != exitErrors {
		t.Fatalf("exit %d, want %d", code, exitErrors)
	}
	for _, want := range []string{"result: ERRORS", "lavik-data exited: signal: killed", "OOM kills: 1", "at failure", "last lines of its log"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	checkNothingLeft(t, dir)
	if m := regexp.MustCompile(`cgroup: (\S+) \(cgroup v`).FindStringSubmatch(out); m == nil {
		t.Error("no cgroup line")
	} else if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup %s left behind", m[1])
	}
}

// TestCapacityInterruptCleansUp cancels a run in its first window: the server, its cgroup and
// its data directory must be gone when capacity returns.
func TestCapacityInterruptCleansUp(t *testing.T) {
	needRedis(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, append([]string{"lavik-bench"}, capacityArgs(dir, testMemoryLimit(t), "--lavik-cmd", lavikAsRedis,
			"--duration", "30s")...), &out, &errOut)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errOut.String(), "loaded lavik-1k") {
		if time.Now().After(deadline) {
			t.Fatalf("capacity did not get going:\n%s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitInterrupted {
			t.Errorf("exit %d, want %d", code, exitInterrupted)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("capacity did not stop after cancellation")
	}
	m := regexp.MustCompile(`started lavik \(pid (\d+)\)`).FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("no pid:\n%s", errOut.String())
	}
	pid, _ := strconv.Atoi(m[1])
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("server (pid %d) still running", pid)
	}
	if m := regexp.MustCompile(`in (\S+) \(cgroup v`).FindStringSubmatch(errOut.String()); m != nil {
		if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s left behind", m[1])
		}
	}
	checkNothingLeft(t, dir)
}
