package test

// TestRedisBenchmarkGetSet runs the stock Redis tools against the server: redis-benchmark must
// finish without errors (plain and pipelined) and redis-cli must work for one-off commands and
// --scan. It checks compatibility, not speed: no assertion on the numbers.

import (
	"context"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

// lookTool finds a Redis tool; .ci/run installs redis-tools, so a missing one is a failure.
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not on PATH (install redis-tools): %v", name, err)
	}
	return p
}

// runTool runs a tool with a deadline and returns its combined output; a non-zero exit fails t.
func runTool(t *testing.T, path string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", path, strings.Join(args, " "), err, out)
	}
	return string(out)
}

var (
	benchErrRE = regexp.MustCompile(`(?i)\berr(or)?\b`)
	benchRPSRE = regexp.MustCompile(`(?m)^(SET|GET): [0-9.]+ requests per second`)
)

func TestRedisBenchmarkGetSet(t *testing.T) {
	bench := lookTool(t, "redis-benchmark")
	cli := lookTool(t, "redis-cli")
	s := harness.Start(t)
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		t.Fatal(err)
	}

	for _, extra := range [][]string{nil, {"-P", "16"}} {
		args := append([]string{"-h", host, "-p", port, "-t", "get,set", "-n", "20000", "-c", "20",
			"-d", "100", "-r", "10000", "-q"}, extra...)
		out := runTool(t, bench, args...)
		// -q redraws a progress line with \r; the final figures follow the last \r.
		out = strings.ReplaceAll(out, "\r", "\n")
		if m := benchErrRE.FindString(out); m != "" {
			t.Fatalf("redis-benchmark %s printed %q:\n%s", strings.Join(extra, " "), m, out)
		}
		var seen []string
		for _, m := range benchRPSRE.FindAllStringSubmatch(out, -1) {
			seen = append(seen, m[1])
		}
		slices.Sort(seen)
		if !slices.Equal(seen, []string{"GET", "SET"}) {
			t.Fatalf("redis-benchmark %s: want one requests-per-second line each for SET and GET, got %v:\n%s",
				strings.Join(extra, " "), seen, out)
		}
		t.Logf("redis-benchmark %s:\n%s", strings.Join(extra, " "),
			strings.Join(benchRPSRE.FindAllString(out, -1), "\n"))
	}

	cliArgs := []string{"-h", host, "-p", port}
	if got := runTool(t, cli, append(cliArgs, "SET", "a", "b")...); got != "OK\n" {
		t.Fatalf("redis-cli SET a b: %q", got)
	}
	if got := runTool(t, cli, append(cliArgs, "GET", "a")...); got != "b\n" {
		t.Fatalf("redis-cli GET a: %q", got)
	}
	if got := runTool(t, cli, append(cliArgs, "GET", "nosuchkey")...); got != "\n" {
		t.Fatalf("redis-cli GET nosuchkey: %q", got)
	}
	dbsize := strings.TrimSpace(runTool(t, cli, append(cliArgs, "DBSIZE")...))

	// redis-benchmark -r writes keys named key:000000001234; SCAN may repeat a key, so count
	// distinct names.
	keys := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(runTool(t, cli, append(cliArgs, "--scan")...)), "\n") {
		keys[line] = true
	}
	if !keys["a"] {
		t.Fatalf("redis-cli --scan does not list a")
	}
	bench1 := ""
	for k := range keys {
		if strings.HasPrefix(k, "key:") {
			bench1 = k
			break
		}
	}
	if bench1 == "" {
		t.Fatalf("redis-cli --scan lists none of redis-benchmark's keys")
	}
	if got := len(keys); dbsize != strconv.Itoa(got) {
		t.Fatalf("redis-cli --scan listed %d distinct keys, DBSIZE says %s", got, dbsize)
	}
	if got := runTool(t, cli, append(cliArgs, "--scan", "--pattern", "a*")...); got != "a\n" {
		t.Fatalf("redis-cli --scan --pattern 'a*': %q", got)
	}
	if got := runTool(t, cli, append(cliArgs, "STRLEN", bench1)...); got != "100\n" {
		t.Fatalf("redis-cli STRLEN %s: %q (redis-benchmark -d 100 writes 100-byte values)", bench1, got)
	}
}
