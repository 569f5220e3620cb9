package test

// lavikctl end to end: the real lavikctl binary against real lavik-data processes serving
// their admin API (--admin-port), checked through its --json output, its exit statuses and
// what the primary's INFO says happened.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

// ctlBinary returns the lavikctl binary: $LAVIK_CTL_BIN (make's e2e targets set it), else
// ../bin/lavikctl as `make build` leaves it.
func ctlBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("LAVIK_CTL_BIN")
	if p == "" {
		p = filepath.Join("..", "bin", "lavikctl")
	}
	p, err := filepath.Abs(p)
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		t.Fatalf("lavikctl binary: %v (run make build, or set LAVIK_CTL_BIN)", err)
	}
	return p
}

// runCtl runs lavikctl with args and returns its stdout, stderr and exit status.
func runCtl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctlBinary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("lavikctl %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// freeAdminPort returns a loopback port nothing listens on (for a node's --admin-port, or for
// an address that refuses connections).
func freeAdminPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ctlNode is the part of `lavikctl status --json`'s node that the test reads.
type ctlNode struct {
	Address           string `json:"address"`
	Reachable         bool   `json:"reachable"`
	Error             string `json:"error"`
	Role              string `json:"role"`
	Writable          bool   `json:"writable"`
	ReplicationID     string `json:"replication_id"`
	ReplicationOffset uint64 `json:"replication_offset"`
	Keys              uint64 `json:"keys"`
	PrimaryLink       *struct {
		PrimaryAddress string `json:"primary_address"`
		State          string `json:"state"`
		PrimaryOffset  uint64 `json:"primary_offset"`
		LagBytes       uint64 `json:"lag_bytes"`
	} `json:"primary_link"`
	Followers []struct {
		State       string `json:"state"`
		AckedOffset uint64 `json:"acked_offset"`
		LagBytes    uint64 `json:"lag_bytes"`
	} `json:"followers"`
}

type ctlStatus struct {
	Nodes []ctlNode `json:"nodes"`
	Meta  struct {
		Configured bool   `json:"configured"`
		Message    string `json:"message"`
	} `json:"meta"`
}

// waitCtlInStep polls `lavikctl status --json` until the primary a and its follower b report
// the same history and offset, the follower's link ONLINE with no lag, the primary's one
// follower acknowledged up to its offset, and keys on both. (The primary's periodic PING moves
// its offset, so one reading may catch them apart.)
func waitCtlInStep(t *testing.T, data string, keys uint64) ctlStatus {
	t.Helper()
	var st ctlStatus
	var out, errOut string
	deadline := time.Now().Add(replSyncWait)
	for {
		var code int
		out, errOut, code = runCtl(t, "status", "--data", data, "--json")
		st = ctlStatus{}
		if code == 0 && json.Unmarshal([]byte(out), &st) == nil && len(st.Nodes) == 2 {
			a, b := st.Nodes[0], st.Nodes[1]
			if a.Reachable && b.Reachable && b.PrimaryLink != nil && b.PrimaryLink.State == "ONLINE" &&
				b.PrimaryLink.LagBytes == 0 && a.ReplicationOffset == b.ReplicationOffset && a.ReplicationID == b.ReplicationID &&
				len(a.Followers) == 1 && a.Followers[0].AckedOffset == a.ReplicationOffset && a.Keys == keys && b.Keys == keys {
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("lavikctl status never showed the pair in step with %d keys:\n%s\nstderr: %s", keys, out, errOut)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLavikctl: status of a primary and its follower (roles, offsets equal once in sync,
// keys), a rebuild of the follower that waits until it is back in step and costs the primary
// exactly one full resync, the refusals an operator can run into (a rebuild of the primary, an
// admin port nobody listens on, a meta command without or with an unreachable --meta), each
// with its documented exit status and message.
func TestLavikctl(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("lavikctl talks to lavik-data's admin API, which redis-server does not have")
	}
	aAdmin, bAdmin := freeAdminPort(t), freeAdminPort(t)
	a := replNode(t, "--admin-port", fmt.Sprint(aAdmin))
	b := replFollower(t, a, "--admin-port", fmt.Sprint(bAdmin))
	pc, fc := a.Client(), b.Client()
	ctx := harness.Ctx(t)
	const keys = 2000
	pipe := pc.Pipeline()
	for i := range keys {
		pipe.Set(ctx, fmt.Sprintf("key:%d", i), strings.Repeat("v", 100+i%300), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	waitInSync(t, pc, fc)

	aAddr, bAddr := fmt.Sprintf("127.0.0.1:%d", aAdmin), fmt.Sprintf("127.0.0.1:%d", bAdmin)
	data := aAddr + "," + bAddr
	st := waitCtlInStep(t, data, keys)
	if pa, fa := st.Nodes[0], st.Nodes[1]; pa.Address != aAddr || pa.Role != "STANDALONE" || !pa.Writable ||
		fa.Address != bAddr || fa.Role != "FOLLOWER" || fa.Writable || fa.PrimaryLink.PrimaryAddress != a.Addr {
		t.Fatalf("status: %+v", st)
	}
	if st.Meta.Configured || st.Meta.Message != "meta: not configured" {
		t.Fatalf("status's meta section without --meta: %+v", st.Meta)
	}
	// The table names both nodes and their roles.
	out, _, code := runCtl(t, "status", "--data", data)
	if code != 0 || !strings.Contains(out, "STANDALONE") || !strings.Contains(out, "FOLLOWER") || !strings.Contains(out, "meta: not configured") {
		t.Fatalf("status table (exit %d):\n%s", code, out)
	}

	t.Run("rebuild", func(t *testing.T) {
		full0, _, _ := syncStats(t, pc)
		out, errOut, code := runCtl(t, "rebuild", "--data", bAddr, "--primary", a.Addr)
		if code != 0 || !strings.Contains(out, "done in") {
			t.Fatalf("rebuild: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		// Not a terminal: plain progress lines, no bar.
		if !strings.Contains(errOut, "rebuild: link ") {
			t.Fatalf("rebuild printed no progress lines on stderr: %q", errOut)
		}
		// Back in step when lavikctl returned: the follower's link was ONLINE at its
		// primary's offset (and the primary has not moved since, but for its PING).
		fs := replInfo(t, fc, "replication")
		if fs["master_link_status"] != "up" || fs["master_sync_in_progress"] == "1" {
			t.Fatalf("follower after rebuild returned: %v", fs)
		}
		if full1, _, _ := syncStats(t, pc); full1 != full0+1 {
			t.Fatalf("primary's sync_full %d -> %d; want one full resync", full0, full1)
		}
		waitCtlInStep(t, data, keys)
		assertSameData(t, pc, fc, 1)
	})

	t.Run("rebuild-json-no-wait", func(t *testing.T) {
		out, errOut, code := runCtl(t, "rebuild", "--data", bAddr, "--primary", a.Addr, "--no-wait", "--json")
		var doc struct {
			Data    string `json:"data"`
			Primary string `json:"primary"`
			Waited  bool   `json:"waited"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Data != bAddr || doc.Primary != a.Addr || doc.Waited {
			t.Fatalf("rebuild --no-wait --json: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		waitCtlInStep(t, data, keys)
	})

	t.Run("rebuild-primary-refused", func(t *testing.T) {
		_, errOut, code := runCtl(t, "rebuild", "--data", aAddr, "--primary", b.Addr)
		if code != 1 || !strings.Contains(errOut, "FAILED_PRECONDITION") || !strings.Contains(errOut, "authoritative") {
			t.Fatalf("rebuild of the primary: exit %d, stderr %q; want 1 and FAILED_PRECONDITION", code, errOut)
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		closed := freeAdminPort(t)
		addr := fmt.Sprintf("127.0.0.1:%d", closed)
		out, errOut, code := runCtl(t, "status", "--data", addr)
		want := fmt.Sprintf("cannot reach data node %s (connection refused): is lavik-data running with --admin-port %d?", addr, closed)
		if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(out, "UNREACHABLE") {
			t.Fatalf("status of a closed port: exit %d\nstdout: %s\nstderr: %s\nwant exit 1 and %q", code, out, errOut, want)
		}
		// One node down among others: its row says so, the others are shown, exit 1.
		out, _, code = runCtl(t, "status", "--data", aAddr+","+addr, "--json")
		var st ctlStatus
		if code != 1 || json.Unmarshal([]byte(out), &st) != nil || len(st.Nodes) != 2 || !st.Nodes[0].Reachable ||
			st.Nodes[1].Reachable || !strings.Contains(st.Nodes[1].Error, "connection refused") {
			t.Fatalf("status with one node down: exit %d\n%s", code, out)
		}
	})

	t.Run("meta-commands", func(t *testing.T) {
		_, errOut, code := runCtl(t, "promote", "data-1")
		if code != 2 || !strings.Contains(errOut, "promote needs lavik-meta (--meta host:port)") {
			t.Fatalf("promote without --meta: exit %d, stderr %q; want 2", code, errOut)
		}
		closed := freeAdminPort(t)
		_, errOut, code = runCtl(t, "--meta", fmt.Sprintf("127.0.0.1:%d", closed), "topology")
		if code != 1 || !strings.Contains(errOut, fmt.Sprintf("cannot reach lavik-meta member 127.0.0.1:%d (connection refused)", closed)) {
			t.Fatalf("topology with an unreachable --meta: exit %d, stderr %q; want 1", code, errOut)
		}
	})
}
