package server_test

import (
	"strings"
	"testing"
)

const (
	errNoAuth    = "-NOAUTH Authentication required."
	errWrongPass = "-WRONGPASS invalid username-password pair or user is disabled."
)

// TestAuth: with requirepass, every command but AUTH, HELLO and QUIT is refused with NOAUTH
// until AUTH succeeds, pipelined GETs included (they skip the batched path, which does no
// checks of its own); unknown commands and wrong arity are reported as such; authentication
// belongs to one connection.
func TestAuth(t *testing.T) {
	ts := startServer(t, nil, "requirepass", "secret")
	c := ts.dial(t)
	c.send(
		cmd{"GET", "k"}, cmd{"GET", "k"}, cmd{"GET", "k"},
		cmd{"SET", "k", "v"}, cmd{"PING"}, cmd{"CLIENT", "ID"},
		cmd{"NOSUCH", "x"}, cmd{"GET"},
		cmd{"AUTH", "wrong"}, cmd{"AUTH", "default", "wrong"},
		cmd{"GET", "k"},
	)
	c.expect(
		errNoAuth, errNoAuth, errNoAuth,
		errNoAuth, errNoAuth, errNoAuth,
		"-ERR unknown command 'NOSUCH', with args beginning with: 'x' ", "-ERR wrong number of arguments for 'get' command",
		errWrongPass, errWrongPass,
		errNoAuth,
	)
	// Nothing was written by the refused SET.
	c.send(cmd{"AUTH", "secret"}, cmd{"GET", "k"}, cmd{"SET", "k", "v"}, cmd{"GET", "k"}, cmd{"GET", "k"}, cmd{"GET", "k"})
	c.expect("+OK", "(nil)", "+OK", bulk("v"), bulk("v"), bulk("v"))
	// A failed AUTH later does not log the connection out.
	c.send(cmd{"AUTH", "wrong"}, cmd{"GET", "k"})
	c.expect(errWrongPass, bulk("v"))

	d := ts.dial(t)
	d.send(cmd{"GET", "k"}, cmd{"GET", "k"}, cmd{"AUTH", "default", "secret"}, cmd{"GET", "k"}, cmd{"GET", "k"})
	d.expect(errNoAuth, errNoAuth, "+OK", bulk("v"), bulk("v"))

	q := ts.dial(t)
	q.send(cmd{"QUIT"})
	q.expect("+OK")
	q.expectClosed()
}

// TestUnauthenticatedLimits: before AUTH a request may have at most 10 arguments of at most
// 16 KiB each; more is a protocol error that closes the connection, and other connections
// are served. After AUTH the configured limits apply.
func TestUnauthenticatedLimits(t *testing.T) {
	ts := startServer(t, nil, "requirepass", "secret")
	other := ts.dial(t)
	other.send(cmd{"AUTH", "secret"}, cmd{"SET", "k", "v"})
	other.expect("+OK", "+OK")

	tenArgs := cmd{"MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e"}
	elevenArgs := append(append(cmd{}, tenArgs...), "5")
	big := strings.Repeat("p", 16384)

	c := ts.dial(t)
	c.send(tenArgs, cmd{"AUTH", big}, cmd{"PING"})
	c.expect(errNoAuth, errWrongPass, errNoAuth)

	for _, tc := range []struct {
		name string
		req  cmd
	}{
		{"more than 10 arguments", elevenArgs},
		{"argument over 16 KiB", cmd{"AUTH", big + "p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ts.dial(t)
			c.send(cmd{"PING"}, tc.req)
			c.expect(errNoAuth)
			if got := c.read(); !strings.HasPrefix(got, "-ERR Protocol error: ") {
				t.Fatalf("got %s; want a protocol error", got)
			}
			c.expectClosed()
			other.send(cmd{"GET", "k"})
			other.expect(bulk("v"))
		})
	}

	// After AUTH, on its own connection, the limits are the configured ones.
	c = ts.dial(t)
	c.send(cmd{"AUTH", "secret"})
	c.expect("+OK")
	c.send(elevenArgs, cmd{"SET", "big", big + big}, cmd{"STRLEN", "big"}, cmd{"GET", "e"})
	c.expect("+OK", "+OK", ":32768", bulk("5"))
}

// TestAuthLiftsLimitsForTheNextCommand: the limits of an unauthenticated client stop applying
// at the command right after a successful AUTH, even one sent in the same write, as in Redis,
// which parses each command only after the one before it ran. A client may pipeline its AUTH
// with what follows.
func TestAuthLiftsLimitsForTheNextCommand(t *testing.T) {
	ts := startServer(t, nil, "requirepass", "secret")
	c := ts.dial(t)
	big := strings.Repeat("b", 20000)
	c.send(
		cmd{"AUTH", "secret"},
		cmd{"MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"},
		cmd{"SET", "big", big},
		cmd{"GET", "e"}, cmd{"STRLEN", "big"},
	)
	c.expect("+OK", "+OK", "+OK", bulk("5"), ":20000")

	// Before AUTH the limits still hold within one write: the AUTH fails.
	d := ts.dial(t)
	d.send(cmd{"AUTH", "wrong"}, cmd{"MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"})
	d.expect(errWrongPass)
	if got := d.read(); !strings.HasPrefix(got, "-ERR Protocol error: ") {
		t.Fatalf("11 arguments after a failed AUTH: %s; want a protocol error", got)
	}
	d.expectClosed()
}

// TestRequirepassSetAtRunTime: as in Redis, a connection opened while no password was required
// is authenticated, and stays so when CONFIG SET requirepass adds one, the connection that set
// it included; new connections must AUTH.
func TestRequirepassSetAtRunTime(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	c.send(cmd{"CONFIG", "SET", "requirepass", "secret"}, cmd{"SET", "k", "v"}, cmd{"GET", "k"}, cmd{"GET", "k"})
	c.expect("+OK", "+OK", bulk("v"), bulk("v"))
	n := ts.dial(t)
	n.send(cmd{"GET", "k"}, cmd{"AUTH", "secret"}, cmd{"GET", "k"})
	n.expect(errNoAuth, "+OK", bulk("v"))
	// Removing the password lets everyone in; setting it again shuts out the connections that
	// never authenticated, as Redis does.
	u := ts.dial(t)
	u.send(cmd{"PING"})
	u.expect(errNoAuth)
	c.send(cmd{"CONFIG", "SET", "requirepass", ""})
	c.expect("+OK")
	u.send(cmd{"PING"})
	u.expect("+PONG")
	c.send(cmd{"CONFIG", "SET", "requirepass", "again"})
	c.expect("+OK")
	u.send(cmd{"PING"})
	u.expect(errNoAuth)
	c.send(cmd{"PING"})
	c.expect("+PONG")
}

// TestUnauthenticatedLimitErrorTexts: Redis names the unauthenticated limits in its protocol
// errors, and clients and tests match on the texts.
func TestUnauthenticatedLimitErrorTexts(t *testing.T) {
	t.Skip("bug: pkg/resp has one set of limits and no notion of authentication, so a request " +
		"over the unauthenticated limits gets \"invalid multibulk length\" or \"invalid bulk length\" " +
		"where Redis answers \"unauthenticated multibulk length\" or \"unauthenticated bulk length\"; " +
		"the fix belongs in pkg/resp (Limits and the errors it returns)")
	ts := startServer(t, nil, "requirepass", "secret")
	for _, tc := range []struct{ raw, want string }{
		{"*11\r\n", "-ERR Protocol error: unauthenticated multibulk length"},
		{"*1\r\n$16385\r\n", "-ERR Protocol error: unauthenticated bulk length"},
		// Beyond every limit, the text is the general one.
		{"*abc\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"*1\r\n$-2\r\n", "-ERR Protocol error: invalid bulk length"},
	} {
		c := ts.dial(t)
		c.writeRaw([]byte(tc.raw))
		c.expect(tc.want)
		c.expectClosed()
	}
}
