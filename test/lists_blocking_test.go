package test

// End-to-end tests of the blocking list commands (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP), CLIENT
// UNBLOCK and INFO clients blocked_clients, with a connection per client. Every reply and error
// line was checked against redis-server 7.0.15
// (LAVIK_TEST_SERVER=redis go test -run 'TestBlocking' ./...).
//
// No test sleeps to wait for a client to block: each polls blocked_clients until the server
// counts it, and fails at once if the command answered instead of blocking.

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

const (
	errUnblockReason = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
	errUnblockArgs   = "ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP."
	errUnblocked     = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
)

// blockedClients returns INFO clients blocked_clients.
func blockedClients(t testing.TB, k checker) int64 {
	t.Helper()
	return infoInt(t, k, "clients", "blocked_clients")
}

// waitBlocked waits until the server counts n blocked clients.
func waitBlocked(t testing.TB, k checker, n int64) {
	t.Helper()
	harness.Eventually(t, 20*time.Second, fmt.Sprintf("blocked_clients to be %d", n), func() bool {
		return blockedClients(t, k) == n
	})
}

// blockOn opens a connection, sends args (a blocking command) on it and waits until the server
// counts n blocked clients. If the command answers instead of blocking, the test fails at once
// with the reply.
func blockOn(t testing.TB, s *harness.Server, k checker, n int64, args ...string) *respConn {
	t.Helper()
	r := dialRESP(t, s)
	r.send(args...)
	r.waitBlocked(k, n, args)
	return r
}

// waitBlocked waits until the server counts n blocked clients, failing at once if r, which
// has sent args, gets a reply meanwhile.
func (r *respConn) waitBlocked(k checker, n int64, args []string) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for blockedClients(r.t, k) != n {
		r.c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := r.br.Peek(1); err == nil {
			r.t.Fatalf("%q answered %s instead of blocking", args, short(r.read()))
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%q: blocked_clients is %d after 20s; want %d", args, blockedClients(r.t, k), n)
		}
	}
}

// noReplyYet checks that nothing arrives on r for d.
func (r *respConn) noReplyYet(d time.Duration, what string) {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(d))
	_, err := r.br.Peek(1)
	if err == nil {
		r.t.Fatalf("%s: got %s; want no reply yet", what, short(r.read()))
	}
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		r.t.Fatalf("%s: %v; want no reply yet", what, err)
	}
}

// expectRead reads one reply from r and compares it with want.
func (r *respConn) expectRead(want any, what string) {
	r.t.Helper()
	if got := r.read(); !reflect.DeepEqual(got, want) {
		r.t.Fatalf("%s: got %s; want %s", what, short(got), short(want))
	}
}

// clientID returns CLIENT ID of r.
func (r *respConn) clientID() int64 {
	r.t.Helper()
	id, ok := r.do("CLIENT", "ID").(int64)
	if !ok {
		r.t.Fatalf("CLIENT ID did not answer an integer")
	}
	return id
}

// TestBlockingPop checks that each blocking command answers at once when it can, and otherwise
// blocks until another client (or a transaction, a move, a rename, another blocked client
// served) puts an element where it waits, and then answers with what it took.
func TestBlockingPop(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "BLPopWokenByLPush", func(t *testing.T, k checker) {
		r := blockOn(t, s, k, 1, "BLPOP", "q", "0")
		r.noReplyYet(100*time.Millisecond, "BLPOP q 0 on an empty key")
		k.eq(1, "LPUSH", "q", "x") // the length before the blocked client took the element
		r.expectRead([]any{"q", "x"}, "BLPOP q 0 after LPUSH q x")
		checkList(t, k, "q", nil)
		waitBlocked(t, k, 0)
		// With elements there, it answers at once, from the head.
		k.eq(2, "RPUSH", "q", "a", "b")
		r.expect([]any{"q", "a"}, "BLPOP", "q", "0")
		checkList(t, k, "q", []string{"b"})
	})

	subtest(t, c, "BRPopWokenByRPush", func(t *testing.T, k checker) {
		r := blockOn(t, s, k, 1, "BRPOP", "q", "0")
		k.eq(3, "RPUSH", "q", "a", "b", "c")
		r.expectRead([]any{"q", "c"}, "BRPOP q 0 after RPUSH q a b c")
		checkList(t, k, "q", []string{"a", "b"})
		r.expect([]any{"q", "b"}, "BRPOP", "q", "0")
	})

	subtest(t, c, "FirstNonEmptyKey", func(t *testing.T, k checker) {
		k.eq(1, "RPUSH", "k3", "z")
		k.eq(2, "RPUSH", "k2", "x", "y")
		r := dialRESP(t, s)
		r.expect([]any{"k2", "x"}, "BLPOP", "k1", "k2", "k3", "0")
		r.expect([]any{"k2", "y"}, "BRPOP", "k1", "k2", "k3", "0")
		r.expect([]any{"k3", "z"}, "BLPOP", "k1", "k2", "k3", "0")
		k.eq(1, "RPUSH", "k1", "a")
		r.expect([]any{"k1", "a"}, "BLPOP", "k1", "k1", "0") // a key named twice
		// Blocked on several keys, a push to any of them wakes it.
		b := blockOn(t, s, k, 1, "BLPOP", "k1", "k2", "k3", "0")
		k.eq(1, "RPUSH", "k3", "w")
		b.expectRead([]any{"k3", "w"}, "BLPOP k1 k2 k3 after RPUSH k3")
		b = blockOn(t, s, k, 1, "BRPOP", "k1", "k2", "k3", "0")
		k.eq(1, "LPUSH", "k2", "v")
		b.expectRead([]any{"k2", "v"}, "BRPOP k1 k2 k3 after LPUSH k2")
		k.eq(0, "DBSIZE")
	})

	subtest(t, c, "BLMove", func(t *testing.T, k checker) {
		r := blockOn(t, s, k, 1, "BLMOVE", "src", "dst", "LEFT", "RIGHT", "0")
		k.eq(2, "RPUSH", "src", "a", "b")
		r.expectRead("a", "BLMOVE src dst LEFT RIGHT after RPUSH src a b")
		checkList(t, k, "src", []string{"b"})
		checkList(t, k, "dst", []string{"a"})
		// With an element there, at once, in each direction.
		k.eq(3, "RPUSH", "src", "c", "d")
		r.expect("d", "BLMOVE", "src", "dst", "RIGHT", "LEFT", "0")
		r.expect("b", "BLMOVE", "src", "dst", "LEFT", "LEFT", "0")
		r.expect("c", "BLMOVE", "src", "dst", "right", "right", "0")
		checkList(t, k, "src", nil)
		checkList(t, k, "dst", []string{"b", "d", "a", "c"})
		// Blocked with the same key as source and destination.
		r = blockOn(t, s, k, 1, "BLMOVE", "rot", "rot", "RIGHT", "LEFT", "0")
		k.eq(1, "RPUSH", "rot", "x")
		r.expectRead("x", "BLMOVE rot rot after RPUSH rot x")
		checkList(t, k, "rot", []string{"x"})
		k.err(errSyntax, "BLMOVE", "src", "dst", "UP", "LEFT", "0")
	})

	subtest(t, c, "BRPopLPush", func(t *testing.T, k checker) {
		r := blockOn(t, s, k, 1, "BRPOPLPUSH", "src", "dst", "0")
		k.eq(2, "LPUSH", "src", "a", "b")
		r.expectRead("a", "BRPOPLPUSH src dst after LPUSH src a b")
		checkList(t, k, "src", []string{"b"})
		checkList(t, k, "dst", []string{"a"})
		r.expect("b", "BRPOPLPUSH", "src", "dst", "0")
		checkList(t, k, "dst", []string{"b", "a"})
	})

	subtest(t, c, "BLMPop", func(t *testing.T, k checker) {
		r := blockOn(t, s, k, 1, "BLMPOP", "0", "2", "a", "b", "RIGHT", "COUNT", "2")
		k.eq(3, "RPUSH", "b", "1", "2", "3")
		r.expectRead([]any{"b", []any{"3", "2"}}, "BLMPOP 0 2 a b RIGHT COUNT 2 after RPUSH b 1 2 3")
		checkList(t, k, "b", []string{"1"})
		r.expect([]any{"b", []any{"1"}}, "BLMPOP", "0", "2", "a", "b", "LEFT", "COUNT", "5")
		k.eq(0, "EXISTS", "b")
		// Without COUNT, one element.
		r = blockOn(t, s, k, 1, "BLMPOP", "0", "2", "a", "b", "LEFT")
		k.eq(2, "RPUSH", "a", "x", "y")
		r.expectRead([]any{"a", []any{"x"}}, "BLMPOP 0 2 a b LEFT after RPUSH a x y")
		checkList(t, k, "a", []string{"y"})
		for _, bad := range []string{"0", "-1", "x"} {
			k.err(errSetNumkeys, "BLMPOP", 0, bad, "a", "LEFT")
			k.err(errListCount, "BLMPOP", 0, 1, "a", "LEFT", "COUNT", bad)
		}
		k.err(errSetNumkeys, "BLMPOP", 0, "9223372036854775808", "a", "LEFT")
		k.err(errSyntax, "BLMPOP", 0, 2, "a", "LEFT")
		k.err(errSyntax, "BLMPOP", 0, "9223372036854775807", "a", "LEFT")
		k.err(errSyntax, "BLMPOP", 0, "9223372036854775806", "a", "LEFT")
		k.err(errSyntax, "BLMPOP", 0, 1, "a", "UP")
	})

	subtest(t, c, "WokenByMoveAndRename", func(t *testing.T, k checker) {
		// Any command that puts a list under the key wakes the client, not only pushes.
		k.eq(2, "RPUSH", "src", "a", "b")
		r := blockOn(t, s, k, 1, "BLPOP", "q", "0")
		k.eq("a", "LMOVE", "src", "q", "LEFT", "RIGHT")
		r.expectRead([]any{"q", "a"}, "BLPOP q 0 after LMOVE src q")
		r = blockOn(t, s, k, 1, "BLPOP", "q", "0")
		k.eq("b", "RPOPLPUSH", "src", "q")
		r.expectRead([]any{"q", "b"}, "BLPOP q 0 after RPOPLPUSH src q")
		r = blockOn(t, s, k, 1, "BLPOP", "q", "0")
		k.eq(2, "RPUSH", "tmp", "c", "d")
		k.ok("RENAME", "tmp", "q")
		r.expectRead([]any{"q", "c"}, "BLPOP q 0 after RENAME tmp q")
		checkList(t, k, "q", []string{"d"})
	})

	subtest(t, c, "Chain", func(t *testing.T, k checker) {
		// A BLMOVE served by a push pushes in turn, which serves a client blocked on its
		// destination.
		mover := blockOn(t, s, k, 1, "BLMOVE", "q1", "q2", "LEFT", "LEFT", "0")
		popper := blockOn(t, s, k, 2, "BLPOP", "q2", "0")
		k.eq(1, "RPUSH", "q1", "x")
		mover.expectRead("x", "BLMOVE q1 q2 after RPUSH q1 x")
		popper.expectRead([]any{"q2", "x"}, "BLPOP q2 after the BLMOVE into q2")
		k.eq(0, "DBSIZE")
		waitBlocked(t, k, 0)
	})

	subtest(t, c, "OtherDB", func(t *testing.T, k checker) {
		// A client blocked on a key of db 1 is not woken by the same key in db 0.
		r := dialRESP(t, s)
		r.expect(txOK, "SELECT", "1")
		r.send("BLPOP", "q", "0")
		r.waitBlocked(k, 1, []string{"BLPOP", "q", "0"})
		k.eq(1, "RPUSH", "q", "db0")
		r.noReplyYet(100*time.Millisecond, "BLPOP q in db 1 after RPUSH q in db 0")
		newChecker(t, s.ClientOpts(&redis.Options{DB: 1})).eq(1, "RPUSH", "q", "db1")
		r.expectRead([]any{"q", "db1"}, "BLPOP q in db 1 after RPUSH q in db 1")
		checkList(t, k, "q", []string{"db0"})
	})
}

// TestBlockingFIFO: clients blocked on one key are served in the order they blocked.
func TestBlockingFIFO(t *testing.T) {
	s, c := startServer(t)
	k := newChecker(t, c)
	const n = 5
	block := func() []*respConn {
		rs := make([]*respConn, n)
		for i := range rs {
			rs[i] = blockOn(t, s, k, int64(i+1), "BLPOP", "q", "0")
		}
		return rs
	}
	rs := block()
	k.eq(n, setArgs("RPUSH", "q", setNames("e", n))...)
	for i, r := range rs {
		r.expectRead([]any{"q", fmt.Sprint("e", i)}, fmt.Sprintf("client %d of %d after RPUSH of %d", i, n, n))
	}
	checkList(t, k, "q", nil)
	waitBlocked(t, k, 0)

	// Two elements serve the first two; the others stay blocked, first in line.
	rs = block()
	k.eq(2, "RPUSH", "q", "x0", "x1")
	rs[0].expectRead([]any{"q", "x0"}, "client 0 after RPUSH of 2")
	rs[1].expectRead([]any{"q", "x1"}, "client 1 after RPUSH of 2")
	if got := blockedClients(t, k); got != n-2 {
		t.Fatalf("blocked_clients is %d after two of %d clients were served; want %d", got, n, n-2)
	}
	checkList(t, k, "q", nil)
	for _, r := range rs[2:] {
		r.noReplyYet(50*time.Millisecond, "a client blocked behind the two served")
	}
	k.eq(1, "RPUSH", "q", "x2")
	rs[2].expectRead([]any{"q", "x2"}, "client 2")
	k.eq(2, "LPUSH", "q", "x3", "x4") // LPUSH leaves x4 at the head
	rs[3].expectRead([]any{"q", "x4"}, "client 3")
	rs[4].expectRead([]any{"q", "x3"}, "client 4")
	waitBlocked(t, k, 0)
	checkList(t, k, "q", nil)
}

// TestBlockingMultiExec: pushes inside MULTI wake a blocked client when EXEC runs, not while
// they are queued, and the client sees the list as the whole transaction left it.
func TestBlockingMultiExec(t *testing.T) {
	s, c := startServer(t)
	k := newChecker(t, c)
	r := blockOn(t, s, k, 1, "BLPOP", "q", "0")
	w := dialRESP(t, s)
	w.expect(txOK, "MULTI")
	w.expect(txQueued, "RPUSH", "q", "a")
	w.expect(txQueued, "LPUSH", "q", "b")
	w.expect(txQueued, "RPUSH", "q", "c")
	r.noReplyYet(100*time.Millisecond, "BLPOP q while pushes to q are queued")
	w.expect([]any{int64(1), int64(2), int64(3)}, "EXEC")
	r.expectRead([]any{"q", "b"}, "BLPOP q after EXEC of RPUSH a, LPUSH b, RPUSH c")
	checkList(t, k, "q", []string{"a", "c"})
	waitBlocked(t, k, 0)

	// A transaction that pushes and pops the element again leaves nothing to serve: the client
	// stays blocked.
	k.eq(1, "DEL", "q")
	r.send("BLPOP", "q", "0")
	r.waitBlocked(k, 1, []string{"BLPOP", "q", "0"})
	if got := w.txRun(txCmd("RPUSH", "q", "x"), txCmd("LPOP", "q")); !reflect.DeepEqual(got, []any{int64(1), "x"}) {
		t.Fatalf("EXEC of RPUSH q x, LPOP q: %s", short(got))
	}
	r.noReplyYet(100*time.Millisecond, "BLPOP q after a transaction that left q empty")
	if got := blockedClients(t, k); got != 1 {
		t.Fatalf("blocked_clients is %d; want 1", got)
	}
	k.eq(1, "RPUSH", "q", "y")
	r.expectRead([]any{"q", "y"}, "BLPOP q after RPUSH q y")
}

// blockingTimeoutArgs are the five blocking commands with timeout as their timeout, on key q
// (and q as the destination where there is one).
func blockingTimeoutArgs(timeout string) [][]string {
	return [][]string{
		{"BLPOP", "q", timeout},
		{"BRPOP", "q", timeout},
		{"BLMOVE", "q", "q", "LEFT", "RIGHT", timeout},
		{"BRPOPLPUSH", "q", "q", timeout},
		{"BLMPOP", timeout, "1", "q", "LEFT"},
	}
}

// TestBlockingTimeout: a blocking command on an empty key times out with a null after its
// timeout, and refuses a negative timeout or one that is not a number.
func TestBlockingTimeout(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "GoRedis", func(t *testing.T, k checker) {
		// Through Do: go-redis's BLPop and the like round a timeout below 1 s up to 1 s.
		for _, args := range [][]any{
			{"BLPOP", "q", "0.2"},
			{"BRPOP", "q", "q2", "0.2"},
			{"BLMOVE", "q", "d", "LEFT", "RIGHT", "0.2"},
			{"BRPOPLPUSH", "q", "d", "0.2"},
			{"BLMPOP", "0.2", 2, "q", "q2", "LEFT", "COUNT", 2},
		} {
			start := time.Now()
			k.null(args...)
			if elapsed := time.Since(start); elapsed < 200*time.Millisecond || elapsed > time.Second {
				t.Fatalf("%s answered after %v; want between 0.2 s and 1 s", cmdString(args), elapsed)
			}
		}
		// go-redis's own methods, with a whole second.
		start := time.Now()
		if err := c.BLPop(k.ctx, time.Second, "q").Err(); err != redis.Nil {
			t.Fatalf("BLPop with timeout 1s: %v; want redis.Nil", err)
		}
		if elapsed := time.Since(start); elapsed < time.Second || elapsed > 2*time.Second {
			t.Fatalf("BLPop with timeout 1s answered after %v", elapsed)
		}
		waitBlocked(t, k, 0)
		k.eq(0, "DBSIZE")
	})

	subtest(t, c, "Wire", func(t *testing.T, k checker) {
		// In RESP2 every one of them times out with a null array, BLMOVE and BRPOPLPUSH too
		// (where an empty LMOVE answers a null bulk string); in RESP3 with a null.
		r := dialRESP(t, s)
		for _, args := range blockingTimeoutArgs("0.05") {
			if got := r.oneLine(args...); got != "*-1\r\n" {
				t.Fatalf("RESP2 %q timed out with %q; want %q", args, got, "*-1\r\n")
			}
		}
		r.hello3()
		for _, args := range blockingTimeoutArgs("0.05") {
			if got := r.oneLine(args...); got != "_\r\n" {
				t.Fatalf("RESP3 %q timed out with %q; want %q", args, got, "_\r\n")
			}
		}
		r.expect(respStatus("PONG"), "PING") // the connection goes on
		waitBlocked(t, k, 0)
	})

	subtest(t, c, "Errors", func(t *testing.T, k checker) {
		// q has an element, so a timeout wrongly taken would answer at once rather than hang.
		k.eq(1, "RPUSH", "q", "e")
		for _, tc := range []struct {
			timeout, want string
		}{
			{"-1", errTimeoutNeg},
			{"-0.5", errTimeoutNeg},
			{"x", errTimeoutInvalid},
			{"1.5x", errTimeoutInvalid},
			{"", errTimeoutInvalid},
			{"nan", errTimeoutInvalid},
		} {
			for _, args := range blockingTimeoutArgs(tc.timeout) {
				k.err(tc.want, anySlice(args)...)
			}
		}
		checkList(t, k, "q", []string{"e"})
		// Fractions, and an integer, are timeouts.
		k.eq([]any{"q", "e"}, "BLPOP", "q", "0.5")
		k.eq(1, "RPUSH", "q", "e")
		k.eq([]any{"q", "e"}, "BRPOP", "q", "10")
	})
}

// TestBlockingInMulti: inside MULTI a blocking command does not block: on an empty key EXEC
// gives a null for it at once, on a non-empty one the element.
func TestBlockingInMulti(t *testing.T) {
	s, c := startServer(t)
	k := newChecker(t, c)
	k.eq(1, "RPUSH", "full", "x")
	cmds := [][]string{
		{"BLPOP", "q", "0"},
		{"BRPOP", "q", "0"},
		{"BLMOVE", "q", "d", "LEFT", "RIGHT", "0"},
		{"BRPOPLPUSH", "q", "d", "0"},
		{"BLMPOP", "0", "1", "q", "LEFT"},
		{"BLPOP", "q", "full", "0"},
	}
	r := dialRESP(t, s)
	r.expect(txOK, "MULTI")
	for _, cmd := range cmds {
		r.expect(txQueued, cmd...)
	}
	// RESP2: null arrays, but null bulk strings for BLMOVE and BRPOPLPUSH, as LMOVE answers.
	start := time.Now()
	r.expectLines([]string{"*6\r\n", "*-1\r\n", "*-1\r\n", "$-1\r\n", "$-1\r\n", "*-1\r\n",
		"*2\r\n", "$4\r\n", "full\r\n", "$1\r\n", "x\r\n"}, "EXEC")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("EXEC of blocking commands on empty keys took %v", d)
	}
	if got := blockedClients(t, k); got != 0 {
		t.Fatalf("blocked_clients is %d after EXEC; want 0", got)
	}
	checkList(t, k, "full", nil)
	k.eq(0, "DBSIZE")

	r.hello3()
	r.expect(txOK, "MULTI")
	for _, cmd := range cmds[:5] {
		r.expect(txQueued, cmd...)
	}
	r.expectLines([]string{"*5\r\n", "_\r\n", "_\r\n", "_\r\n", "_\r\n", "_\r\n"}, "EXEC")

	// The same through go-redis: BLPOP in a transaction pipeline gets redis.Nil, not a wait.
	var pop *redis.StringSliceCmd
	_, err := c.TxPipelined(harness.Ctx(t), func(p redis.Pipeliner) error {
		pop = p.BLPop(harness.Ctx(t), 0, "q")
		return nil
	})
	if err != redis.Nil || pop.Err() != redis.Nil {
		t.Fatalf("TxPipelined BLPOP q 0: %v, %v; want redis.Nil", err, pop.Err())
	}
}

// TestBlockingClientUnblock checks CLIENT UNBLOCK id [TIMEOUT|ERROR] on blocked clients and on
// others.
func TestBlockingClientUnblock(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "Timeout", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		id := r.clientID()
		for _, args := range [][]any{{"CLIENT", "UNBLOCK", id}, {"CLIENT", "UNBLOCK", id, "TIMEOUT"}, {"client", "unblock", id, "timeout"}} {
			r.send("BLPOP", "q", "0")
			r.waitBlocked(k, 1, []string{"BLPOP", "q", "0"})
			k.eq(1, args...)
			// The blocked client gets what a timeout gives.
			if got := r.rawLine(); got != "*-1\r\n" {
				t.Fatalf("BLPOP unblocked by %s: %q; want %q", cmdString(args), got, "*-1\r\n")
			}
			waitBlocked(t, k, 0)
		}
		// Each blocking command, in RESP2 and RESP3.
		for _, proto := range []string{"*-1\r\n", "_\r\n"} {
			if proto == "_\r\n" {
				r.hello3()
			}
			for _, args := range blockingTimeoutArgs("0") {
				r.send(args...)
				r.waitBlocked(k, 1, args)
				k.eq(1, "CLIENT", "UNBLOCK", id)
				if got := r.rawLine(); got != proto {
					t.Fatalf("%q unblocked: %q; want %q", args, got, proto)
				}
			}
		}
		// The connection goes on, and a later push is not taken by it.
		r.expect(respStatus("PONG"), "PING")
		k.eq(1, "LPUSH", "q", "x")
		checkList(t, k, "q", []string{"x"})
		waitBlocked(t, k, 0)
	})

	subtest(t, c, "Error", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		id := r.clientID()
		for _, args := range blockingTimeoutArgs("0") {
			r.send(args...)
			r.waitBlocked(k, 1, args)
			k.eq(1, "CLIENT", "UNBLOCK", id, "ERROR")
			r.expectRead(respError(errUnblocked), fmt.Sprintf("%q unblocked with ERROR", args))
		}
		r.send("BLPOP", "q", "0")
		r.waitBlocked(k, 1, []string{"BLPOP", "q", "0"})
		k.eq(1, "CLIENT", "UNBLOCK", id, "error")
		r.expectRead(respError(errUnblocked), "BLPOP unblocked with error")
		r.expect(respStatus("PONG"), "PING")
		waitBlocked(t, k, 0)
		k.eq(0, "DBSIZE")
	})

	subtest(t, c, "NotBlocked", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		id := r.clientID()
		k.eq(0, "CLIENT", "UNBLOCK", id)
		k.eq(0, "CLIENT", "UNBLOCK", id, "ERROR")
		k.eq(0, "CLIENT", "UNBLOCK", id, "TIMEOUT")
		k.eq(0, "CLIENT", "UNBLOCK", 999999999)
		k.eq(0, "CLIENT", "UNBLOCK", -1)
		r.expect(respStatus("PONG"), "PING") // nothing was sent to it
		// Unblocking one client leaves the others blocked.
		b := dialRESP(t, s)
		bid := b.clientID()
		b.send("BLPOP", "q", "0")
		b.waitBlocked(k, 1, []string{"BLPOP", "q", "0"})
		b2 := blockOn(t, s, k, 2, "BLPOP", "q", "0")
		k.eq(1, "CLIENT", "UNBLOCK", bid)
		b.expectRead(nil, "the unblocked client")
		waitBlocked(t, k, 1)
		k.eq(1, "RPUSH", "q", "x")
		b2.expectRead([]any{"q", "x"}, "the client still blocked")
	})

	subtest(t, c, "Errors", func(t *testing.T, k checker) {
		k.err(errNotInt, "CLIENT", "UNBLOCK", "x")
		k.err(errNotInt, "CLIENT", "UNBLOCK", "1.5")
		k.err(errUnblockReason, "CLIENT", "UNBLOCK", 1, "foo")
		k.err(errUnblockReason, "CLIENT", "UNBLOCK", 999999999, "")
		k.err(errArity("client|unblock"), "CLIENT", "UNBLOCK")
		k.err(errUnblockArgs, "client", "unblock", 1, "ERROR", "x") // Redis names the subcommand as sent
	})
}

// TestBlockingDisconnect: a blocked client that disconnects is forgotten: it no longer counts
// as blocked, and a later push neither goes to it nor is lost.
func TestBlockingDisconnect(t *testing.T) {
	s, c := startServer(t)
	k := newChecker(t, c)
	for _, args := range blockingTimeoutArgs("0") {
		r := blockOn(t, s, k, 1, args...)
		r.c.Close()
		waitBlocked(t, k, 0)
		k.eq(1, "LPUSH", "q", "x")
		checkList(t, k, "q", []string{"x"})
		k.eq(1, "DEL", "q")
	}
	// The first of two clients blocked on a key goes away: the push goes to the second.
	r1 := blockOn(t, s, k, 1, "BLPOP", "q", "0")
	r2 := blockOn(t, s, k, 2, "BLPOP", "q", "0")
	r1.c.Close()
	waitBlocked(t, k, 1)
	k.eq(1, "RPUSH", "q", "y")
	r2.expectRead([]any{"q", "y"}, "the remaining blocked client")
	checkList(t, k, "q", nil)
	waitBlocked(t, k, 0)
}

// TestBlockingPipelined: commands pipelined behind a blocking one wait for it and then run in
// order.
func TestBlockingPipelined(t *testing.T) {
	s, c := startServer(t)
	k := newChecker(t, c)
	r := dialRESP(t, s)
	r.sendRaw(string(wireCmd("BLPOP", "q", "0")) + string(wireCmd("PING")))
	r.waitBlocked(k, 1, []string{"BLPOP", "q", "0"})
	r.noReplyYet(200*time.Millisecond, "BLPOP q 0 and PING pipelined on an empty key")
	k.eq(1, "LPUSH", "q", "v")
	r.expectRead([]any{"q", "v"}, "the pipelined BLPOP")
	r.expectRead(respStatus("PONG"), "the PING pipelined after BLPOP")
	waitBlocked(t, k, 0)

	// Two BLPOPs and a PING: one push of two elements serves the first, and the second finds
	// the other element at once.
	r.sendRaw(string(wireCmd("BLPOP", "q", "0")) + string(wireCmd("BLPOP", "q", "0")) + string(wireCmd("PING")))
	r.waitBlocked(k, 1, []string{"BLPOP", "q", "0"})
	r.noReplyYet(100*time.Millisecond, "two pipelined BLPOPs on an empty key")
	k.eq(2, "RPUSH", "q", "a", "b")
	r.expectRead([]any{"q", "a"}, "the first pipelined BLPOP")
	r.expectRead([]any{"q", "b"}, "the second pipelined BLPOP")
	r.expectRead(respStatus("PONG"), "the PING after them")
	checkList(t, k, "q", nil)
	waitBlocked(t, k, 0)
}

// TestBlockingOthersNotHeldUp: while 50 clients are blocked, another client's SET/GET round
// trips go on as usual. The bound of 5 s for 1,000 round trips is loose on purpose: it fails
// a server that stalls behind its blocked clients (waiting for their timeouts, or polling),
// not a slow machine.
func TestBlockingOthersNotHeldUp(t *testing.T) {
	s, c := startServer(t)
	k := newChecker(t, c)
	const n = 50
	rs := make([]*respConn, n)
	for i := range rs {
		rs[i] = dialRESP(t, s)
		rs[i].send("BLPOP", fmt.Sprint("wait:", i), "0")
	}
	waitBlocked(t, k, n)
	ctx := harness.Ctx(t)
	start := time.Now()
	for i := 0; i < 1000; i++ {
		key, val := fmt.Sprint("k", i%10), strconv.Itoa(i)
		if err := c.Set(ctx, key, val, 0).Err(); err != nil {
			t.Fatalf("SET %s %s: %v", key, val, err)
		}
		if got, err := c.Get(ctx, key).Result(); err != nil || got != val {
			t.Fatalf("GET %s: %q, %v; want %q", key, got, err, val)
		}
	}
	elapsed := time.Since(start)
	t.Logf("1,000 SET/GET round trips with %d clients blocked: %v", n, elapsed)
	if elapsed > 5*time.Second {
		t.Fatalf("1,000 SET/GET round trips took %v with %d clients blocked", elapsed, n)
	}
	if got := blockedClients(t, k); got != n {
		t.Fatalf("blocked_clients is %d; want %d", got, n)
	}
	for i, r := range rs {
		key := fmt.Sprint("wait:", i)
		k.eq(1, "RPUSH", key, "x")
		r.expectRead([]any{key, "x"}, "BLPOP "+key)
	}
	waitBlocked(t, k, 0)
}

// procCPU returns the user plus system CPU time pid has used, from /proc/<pid>/stat (in clock
// ticks of 1/100 s, the USER_HZ Linux exports there on every architecture).
func procCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name (field 2) may hold spaces; the fields after its ")" are plain.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// infoCPU returns INFO cpu used_cpu_user + used_cpu_sys, or 0 when the server has no such
// fields.
func infoCPU(t testing.TB, k checker) time.Duration {
	t.Helper()
	f := infoFields(k.str("INFO", "cpu"))
	user, err1 := strconv.ParseFloat(f["used_cpu_user"], 64)
	sys, err2 := strconv.ParseFloat(f["used_cpu_sys"], 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration((user + sys) * float64(time.Second))
}

// TestBlocking10kClients blocks 10,000 clients (half on keys of their own, half 100 to a key),
// checks that the server uses next to no CPU while they wait, reports its memory, wakes some
// and lets the rest go by closing their connections.
func TestBlocking10kClients(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 10,000 connections; skipped with -short")
	}
	const n = 10000
	const shared = 50 // keys the odd clients share, n/2/shared clients to a key
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < lim.Max {
		// Raised in this process, the limit is also the server's: it inherits it.
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatalf("raise the file descriptor limit to %d: %v", lim.Max, err)
		}
	}
	if lim.Cur < n+200 {
		t.Skipf("needs 10,200 file descriptors in this process and in the server; the limit is %d", lim.Cur)
	}
	s, c := startServer(t, "--maxclients", "10100")
	k := newChecker(t, c)
	rssBefore, err := rssBytes(s.Pid())
	if err != nil {
		t.Fatal(err)
	}

	keyOf := func(i int) string {
		if i%2 == 0 {
			return fmt.Sprint("own:", i)
		}
		return fmt.Sprint("shared:", (i/2)%shared)
	}
	conns := make([]net.Conn, n)
	defer func() {
		for _, cn := range conns {
			if cn != nil {
				cn.Close()
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var dialErr error
	const dialers = 32
	for d := 0; d < dialers; d++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := d; i < n; i += dialers {
				cn, err := net.DialTimeout("tcp", s.Addr, 10*time.Second)
				if err == nil {
					conns[i] = cn
					cn.SetWriteDeadline(time.Now().Add(10 * time.Second))
					_, err = cn.Write(wireCmd("BLPOP", keyOf(i), "0"))
				}
				if err != nil {
					mu.Lock()
					dialErr = fmt.Errorf("client %d: %w", i, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if dialErr != nil {
		t.Fatal(dialErr)
	}
	harness.Eventually(t, 30*time.Second, "10,000 blocked clients", func() bool {
		return blockedClients(t, k) == n
	})
	t.Logf("10,000 clients connected and blocked in %v", time.Since(start))

	// Idle CPU over 2 s with every client blocked: a server that polls or scans its blocked
	// clients shows here.
	cpu0, info0 := procCPU(t, s.Pid()), infoCPU(t, k)
	time.Sleep(2 * time.Second)
	cpu := procCPU(t, s.Pid()) - cpu0
	rss, err := rssBytes(s.Pid())
	if err != nil {
		t.Fatal(err)
	}
	server := "lavik-data"
	if harness.IsRedis() {
		server = "redis-server"
	}
	t.Logf("%s with 10,000 blocked clients: %v CPU in 2 s idle (INFO cpu says %v); VmRSS %.1f MiB (%.1f MiB before they connected, %.0f bytes a client)",
		server, cpu, infoCPU(t, k)-info0, float64(rss)/(1<<20), float64(rssBefore)/(1<<20), float64(rss-rssBefore)/n)
	if cpu >= 200*time.Millisecond {
		t.Errorf("the server used %v of CPU in 2 s with 10,000 clients blocked and nothing to do; want less than 200ms", cpu)
	}

	// Wake some: 100 clients with keys of their own, and every client of one shared key.
	var woken []int
	for i := 0; i < 200; i += 2 {
		k.eq(1, "RPUSH", keyOf(i), fmt.Sprint("for:", i))
		woken = append(woken, i)
	}
	var sharing []int
	for i := 1; i < n; i += 2 {
		if keyOf(i) == "shared:7" {
			sharing = append(sharing, i)
		}
	}
	k.eq(len(sharing), setArgs("RPUSH", "shared:7", setNames("s", len(sharing)))...)
	for _, i := range woken {
		r := &respConn{t: t, c: conns[i], br: bufio.NewReader(conns[i])}
		r.expectRead([]any{keyOf(i), fmt.Sprint("for:", i)}, fmt.Sprintf("client %d", i))
	}
	var got []string
	for _, i := range sharing {
		r := &respConn{t: t, c: conns[i], br: bufio.NewReader(conns[i])}
		reply, ok := r.read().([]any)
		if !ok || len(reply) != 2 || reply[0] != "shared:7" {
			t.Fatalf("client %d blocked on shared:7 got %s", i, short(reply))
		}
		got = append(got, reply[1].(string))
	}
	if w := setNames("s", len(sharing)); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(w))) {
		t.Fatalf("the clients of shared:7 got %q; want each of %q once", got, w)
	}
	waitBlocked(t, k, int64(n-len(woken)-len(sharing)))
	k.eq(0, "DBSIZE")

	// Let the rest go.
	for i, cn := range conns {
		cn.Close()
		conns[i] = nil
	}
	waitBlocked(t, k, 0)
	harness.Eventually(t, 30*time.Second, "connected_clients to drop to 1", func() bool {
		return infoInt(t, k, "clients", "connected_clients") == 1
	})
}
