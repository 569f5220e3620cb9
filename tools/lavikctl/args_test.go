package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

func TestParseAddrList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // joined addresses, or "error: <substring>"
	}{
		{"127.0.0.1:7000", "127.0.0.1:7000"},
		{"a:1, b:2", "a:1,b:2"},
		{"[::1]:7000", "[::1]:7000"},
		{"", "error: want host:port"},
		{"7000", "error: want host:port"},
		{":7000", "error: the host is missing"},
		{"a:0", "error: not a number in 1..65535"},
		{"a:65536", "error: not a number in 1..65535"},
		{"a:x", "error: not a number"},
		{"a:1,a:1", "error: listed twice"},
		{"a:1,", "error: want host:port"},
	} {
		got, err := parseAddrList("--data", tc.in)
		if strings.HasPrefix(tc.want, "error: ") {
			if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(tc.want, "error: ")) || asExit(err).code != exitUsage {
				t.Errorf("parseAddrList(%q) = %v, %v; want a usage error with %q", tc.in, got, err, tc.want)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("parseAddrList(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestParsePromoteAndMembers(t *testing.T) {
	if _, err := parsePromote(nil, "", time.Second, false, 0); err == nil {
		t.Error("promote with neither NODE nor --shard-group")
	}
	if _, err := parsePromote([]string{"a", "b"}, "", time.Second, false, 0); err == nil {
		t.Error("promote with two nodes")
	}
	r, err := parsePromote([]string{"data-2"}, "g1", 1500*time.Millisecond, true, 7)
	if err != nil || r.TargetNodeId != "data-2" || r.ShardGroup != "g1" || r.CatchUpTimeoutMs != 1500 || !r.Force || r.ExpectedEpoch != 7 {
		t.Errorf("parsePromote: %v, %v", r, err)
	}
	if id, err := parseMemberID([]string{"3"}); err != nil || id != 3 {
		t.Errorf("parseMemberID: %d, %v", id, err)
	}
	for _, args := range [][]string{nil, {"0"}, {"x"}, {"1", "2"}} {
		if _, err := parseMemberID(args); err == nil {
			t.Errorf("parseMemberID(%q) accepted", args)
		}
	}
	if _, err := parseAddMember("m4", "h:1", "h:1"); err == nil {
		t.Error("meta add with the same peer and client address")
	}
	if r, err := parseAddMember("m4", "h:1", "h:2"); err != nil || r.PeerAddress != "h:1" || r.ClientAddress != "h:2" {
		t.Errorf("parseAddMember: %v, %v", r, err)
	}
}

func TestCodeName(t *testing.T) {
	for c, want := range map[string]string{"FailedPrecondition": "FAILED_PRECONDITION", "OK": "OK", "Unavailable": "UNAVAILABLE"} {
		var got string
		for code := range 17 {
			if cc := codeOf(code); cc.String() == c {
				got = codeName(cc)
			}
		}
		if got != want {
			t.Errorf("codeName(%s) = %q, want %q", c, got, want)
		}
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

func run(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = runMain(context.Background(), append([]string{"lavikctl"}, args...), &o, &e)
	return o.String(), e.String(), code
}

// TestRunMainExitStatuses runs the command line: usage errors exit 2 before anything is
// dialled; global flags work before and after the command; a refused connection exits 1 with
// the next step in the message.
func TestRunMainExitStatuses(t *testing.T) {
	closed := closedAddr(t)
	_, port, _ := net.SplitHostPort(closed)
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
		stdout string
	}{
		{[]string{"status"}, exitUsage, "status needs --data", ""},
		{[]string{"status", "--data", "7000"}, exitUsage, `"7000": want host:port`, ""},
		{[]string{"status", "--data", closed, "extra"}, exitUsage, "takes no arguments", ""},
		{[]string{"status", "--nope"}, exitUsage, "flag provided but not defined", ""},
		{[]string{"--timeout", "0s", "status", "--data", closed}, exitUsage, "--timeout", ""},
		{[]string{"--meta", "nohost", "status", "--data", closed}, exitUsage, "--meta", ""},
		{[]string{"frob"}, exitUsage, `unknown command "frob"`, ""},
		{[]string{"rebuild", "--data", closed}, exitUsage, "needs --data", ""},
		{[]string{"rebuild", "--data", closed, "--primary", "h:1", "--no-wait", "--wait-timeout", "1s"}, exitUsage, "conflict", ""},
		{[]string{"promote", "data-1"}, exitUsage, "promote needs lavik-meta (--meta host:port)", ""},
		{[]string{"topology"}, exitUsage, "topology needs lavik-meta", ""},
		{[]string{"meta", "list"}, exitUsage, "meta list needs lavik-meta", ""},
		{[]string{"meta", "add", "--meta", closed}, exitUsage, "meta add needs --name", ""},
		{[]string{"meta", "remove", "--meta", closed, "x"}, exitUsage, "want a positive integer", ""},
		{[]string{"status", "--data", closed}, exitFailed,
			fmt.Sprintf("cannot reach data node %s (connection refused): is lavik-data running with --admin-port %s?", closed, port), "UNREACHABLE"},
		{[]string{"status", "--data", closed, "--json"}, exitFailed, "connection refused", `"reachable": false`},
		{[]string{"--json", "status", "--data", closed}, exitFailed, "connection refused", `"reachable": false`},
		{[]string{"rebuild", "--data", closed, "--primary", "127.0.0.1:6379"}, exitFailed, "cannot reach data node", ""},
		{[]string{"--meta", closed, "topology"}, exitFailed, "cannot reach lavik-meta member " + closed + " (connection refused)", ""},
		{[]string{"meta", "list", "--meta", closed + "," + closedAddr(t)}, exitFailed, "no lavik-meta member of --meta could be reached", ""},
		{[]string{"--meta", closed, "promote", "--shard-group", "g", "n1"}, exitFailed, "cannot reach lavik-meta member", ""},
		{[]string{"--meta", closed, "promote", "n1", "--force"}, exitUsage, "put the flags before it", ""},
		{[]string{"--meta", closed, "status", "--data", closed}, exitFailed, "2 of 2 calls failed", "meta: unavailable"},
	} {
		stdout, stderr, code := run(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) || !strings.Contains(stdout, tc.stdout) {
			t.Errorf("lavikctl %q: exit %d, want %d\nstderr: %s\nwant in stderr: %s\nstdout: %s\nwant in stdout: %s",
				tc.args, code, tc.code, stderr, tc.stderr, stdout, tc.stdout)
		}
	}
}

// TestHelpDocumentsExitStatuses: the exit statuses are in the help of the app and of a command.
func TestHelpDocumentsExitStatuses(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"status", "--help"}, {"rebuild", "--help"}} {
		out, _, code := run(args...)
		if code != exitOK || !strings.Contains(out, "EXIT STATUS") || !strings.Contains(out, "3  timeout") {
			t.Errorf("lavikctl %q: exit %d\n%s", args, code, out)
		}
	}
}

func codeOf(i int) codes.Code { return codes.Code(i) }
