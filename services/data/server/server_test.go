package server_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestPipelineRepliesInOrder sends 600 mixed commands in one write: more than one read's batch
// of 128 and more than the 64 KiB at which a batch's replies are written early. Every reply
// comes back, in order, and the connection goes on.
func TestPipelineRepliesInOrder(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	val := strings.Repeat("v", 1000)
	var cmds []cmd
	var want []string
	for i := 0; i < 150; i++ {
		k := fmt.Sprintf("k%d", i)
		cmds = append(cmds,
			cmd{"SET", k, fmt.Sprintf("%d:%s", i, val)},
			cmd{"GET", k},
			cmd{"INCR", "counter"},
			cmd{"ECHO", fmt.Sprint(i)})
		want = append(want, "+OK", bulk(fmt.Sprintf("%d:%s", i, val)), fmt.Sprintf(":%d", i+1), bulk(fmt.Sprint(i)))
	}
	c.send(cmds...)
	c.expect(want...)
	c.expect() // nothing more was expected
	if got := c.do("PING"); got != "+PONG" {
		t.Fatalf("PING after the pipeline: %s", got)
	}
}

// TestPipelineGetRuns checks the batching of consecutive GETs: a run is read in one batch, but
// never across another command, so each GET sees every write pipelined before it, and a GET
// with the wrong arity inside a run is refused on its own.
func TestPipelineGetRuns(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)

	// Single GETs between SETs of the same key.
	c.send(cmd{"SET", "k", "1"}, cmd{"GET", "k"}, cmd{"SET", "k", "2"}, cmd{"GET", "k"})
	c.expect("+OK", bulk("1"), "+OK", bulk("2"))

	// Runs of GETs between writes of the keys they read.
	c.send(
		cmd{"SET", "a", "a1"},
		cmd{"GET", "a"}, cmd{"GET", "b"}, cmd{"get", "a"},
		cmd{"SET", "b", "b1"},
		cmd{"GET", "a"}, cmd{"GET", "b"}, cmd{"GET", "a"},
		cmd{"SET", "a", "a2"}, cmd{"DEL", "b"},
		cmd{"GET", "a"}, cmd{"GET", "b"},
		cmd{"APPEND", "a", "+"},
		cmd{"GET", "a"}, cmd{"GET", "a", "extra"}, cmd{"GET", "a"},
	)
	c.expect(
		"+OK",
		bulk("a1"), "(nil)", bulk("a1"),
		"+OK",
		bulk("a1"), bulk("b1"), bulk("a1"),
		"+OK", ":1",
		bulk("a2"), "(nil)",
		":3",
		bulk("a2+"), "-ERR wrong number of arguments for 'get' command", bulk("a2+"),
	)

	// A run reads the client's selected database, which a SELECT in the pipeline changes.
	c.send(cmd{"SELECT", "1"}, cmd{"GET", "a"}, cmd{"GET", "a"}, cmd{"SET", "a", "db1"},
		cmd{"GET", "a"}, cmd{"SELECT", "0"}, cmd{"GET", "a"}, cmd{"GET", "a"})
	c.expect("+OK", "(nil)", "(nil)", "+OK", bulk("db1"), "+OK", bulk("a2+"), bulk("a2+"))

	// A run longer than one read's batch.
	var gets []cmd
	var want []string
	for i := 0; i < 300; i++ {
		if i%3 == 0 {
			gets = append(gets, cmd{"GET", "a"})
			want = append(want, bulk("a2+"))
		} else {
			gets = append(gets, cmd{"GET", fmt.Sprintf("missing%d", i)})
			want = append(want, "(nil)")
		}
	}
	c.send(gets...)
	c.expect(want...)
}

// TestCommandErrors: unknown commands, unknown subcommands and wrong arity get Redis's texts
// and leave the connection usable.
func TestCommandErrors(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	long := strings.Repeat("x", 200)
	c.send(
		cmd{"NOSUCH", "a", "b"},
		cmd{"NOSUCH"},
		cmd{"NOSUCH", long, "more"},
		// Client text quoted in an error must not break the reply stream.
		cmd{"NOSUCH", "a\r\n:1"},
		cmd{"GET"},
		cmd{"SET", "k"},
		cmd{"CLIENT", "NOSUCH"},
		cmd{"CLIENT"},
		cmd{"PING"},
	)
	c.expect(
		"-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' ",
		"-ERR unknown command 'NOSUCH', with args beginning with: ",
		"-ERR unknown command 'NOSUCH', with args beginning with: '"+long[:128]+"' ",
		"-ERR unknown command 'NOSUCH', with args beginning with: 'a  :1' ",
		"-ERR wrong number of arguments for 'get' command",
		"-ERR wrong number of arguments for 'set' command",
		"-ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.",
		"-ERR wrong number of arguments for 'client' command",
		"+PONG",
	)
}

// TestProtocolErrorClosesOnlyThatConnection: a malformed request gets the replies of the
// commands before it, then Redis's protocol error text, then the connection is closed; other
// connections, open or new, are served.
func TestProtocolErrorClosesOnlyThatConnection(t *testing.T) {
	ts := startServer(t, nil)
	other := ts.dial(t)
	if got := other.do("SET", "k", "v"); got != "+OK" {
		t.Fatalf("SET: %s", got)
	}
	for _, tc := range []struct{ name, raw, want string }{
		{"multibulk length", "*abc\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"bulk length", "*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length"},
		{"no dollar", "*2\r\n$3\r\nGET\r\nk\r\n", "-ERR Protocol error: expected '$', got 'k'"},
		{"unbalanced quotes", "GET \"k\r\n", "-ERR Protocol error: unbalanced quotes in request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ts.dial(t)
			c.writeRaw(append(encode(nil, cmd{"SET", "before", tc.name}, cmd{"GET", "k"}), tc.raw...))
			c.expect("+OK", bulk("v"), tc.want)
			c.expectClosed()
			other.send(cmd{"GET", "before"}, cmd{"PING"})
			other.expect(bulk(tc.name), "+PONG")
			if got := ts.dial(t).do("GET", "k"); got != bulk("v") {
				t.Fatalf("GET on a new connection: %s", got)
			}
		})
	}
}

// TestClientReply covers CLIENT REPLY OFF, SKIP and ON, including for commands refused before
// they run and for runs of GETs. A PING that must answer closes each step, so a reply that
// should have been dropped shows up as a mismatch.
func TestClientReply(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)

	// OFF drops every reply, errors and GET runs included, until ON, which replies +OK.
	c.send(
		cmd{"CLIENT", "REPLY", "OFF"},
		cmd{"SET", "a", "1"}, cmd{"GET", "a"}, cmd{"GET", "a"}, cmd{"GET", "a"},
		cmd{"NOSUCH"}, cmd{"GET"}, cmd{"INCR", "a"},
		cmd{"CLIENT", "REPLY", "ON"},
		cmd{"GET", "a"},
	)
	c.expect("+OK", bulk("2"))
	// OFF's own reply is dropped too, even when it is the last command of a read.
	c.send(cmd{"CLIENT", "REPLY", "OFF"})
	c.send(cmd{"SET", "off", "x"})
	c.send(cmd{"CLIENT", "REPLY", "ON"}, cmd{"GET", "off"})
	c.expect("+OK", bulk("x"))

	// SKIP drops its own reply and the next command's, whatever that command is.
	c.send(cmd{"CLIENT", "REPLY", "SKIP"}, cmd{"SET", "b", "1"}, cmd{"GET", "b"})
	c.expect(bulk("1"))
	c.send(cmd{"CLIENT", "REPLY", "SKIP"}, cmd{"NOSUCH"}, cmd{"PING"})
	c.expect("+PONG")
	c.send(cmd{"CLIENT", "REPLY", "SKIP"}, cmd{"GET"}, cmd{"PING"})
	c.expect("+PONG")
	c.send(cmd{"CLIENT", "REPLY", "SKIP"}, cmd{"GET", "b"}, cmd{"GET", "b"}, cmd{"GET", "nob"}, cmd{"PING"})
	c.expect(bulk("1"), "(nil)", "+PONG")
	// Two SKIPs in a row: the second is the command the first skips.
	c.send(cmd{"CLIENT", "REPLY", "SKIP"}, cmd{"CLIENT", "REPLY", "SKIP"}, cmd{"ECHO", "skipped"}, cmd{"ECHO", "kept"})
	c.expect(bulk("kept"))
	c.send(cmd{"CLIENT", "REPLY", "MAYBE"}, cmd{"PING"})
	c.expect("-ERR syntax error", "+PONG")
	// A CLIENT REPLY that fails is skipped like any command.
	c.send(cmd{"CLIENT", "REPLY", "SKIP"}, cmd{"CLIENT", "REPLY", "MAYBE"}, cmd{"PING"})
	c.expect("+PONG")
}

// TestClientReplyOnEndsSkip: as in Redis, ON cancels a pending SKIP as well as OFF, and SKIP
// while replies are off does nothing, so the first reply after ON is sent.
func TestClientReplyOnEndsSkip(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	// ON is the command SKIP skips, but its +OK is sent: Redis clears both flags before
	// replying.
	c.send(cmd{"CLIENT", "REPLY", "SKIP"}, cmd{"CLIENT", "REPLY", "ON"}, cmd{"PING"})
	c.expect("+OK", "+PONG")
	c.send(cmd{"CLIENT", "REPLY", "OFF"}, cmd{"CLIENT", "REPLY", "SKIP"}, cmd{"PING"}, cmd{"PING"},
		cmd{"CLIENT", "REPLY", "ON"}, cmd{"ECHO", "on"})
	c.expect("+OK", bulk("on"))
	c.send(cmd{"CLIENT", "REPLY", "SKIP"}, cmd{"CLIENT", "REPLY", "OFF"}, cmd{"PING"},
		cmd{"CLIENT", "REPLY", "ON"}, cmd{"ECHO", "on"})
	c.expect("+OK", bulk("on"))
}

// TestQuit: QUIT replies +OK and closes the connection; commands pipelined after it are not
// run.
func TestQuit(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	c.send(cmd{"SET", "k", "before"}, cmd{"QUIT"}, cmd{"SET", "k", "after"}, cmd{"PING"})
	c.expect("+OK", "+OK")
	c.expectClosed()
	if got := ts.dial(t).do("GET", "k"); got != bulk("before") {
		t.Fatalf("GET k = %s; the SET after QUIT ran", got)
	}
}
