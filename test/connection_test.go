package test

// End-to-end tests of the connection commands (PING ECHO QUIT HELLO AUTH SELECT CLIENT) against
// Redis 7 semantics, checked against redis-server 7.0.15. Per-connection state is tested over bare
// RESP connections, since go-redis pools connections and hides replies that never arrive.

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

const (
	errNoAuth    = "NOAUTH Authentication required."
	errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."
	errBadName   = "ERR Client names cannot contain spaces, newlines or special characters."
	errHelloAuth = "NOAUTH HELLO must be called with the client already authenticated, otherwise " +
		"the HELLO AUTH <user> <pass> option can be used to authenticate the client and select " +
		"the RESP protocol version at the same time"
)

func TestConnection(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "Ping", func(t *testing.T, k checker) {
		k.eq("PONG", "PING")
		k.eq("hello", "PING", "hello")
		k.eq("", "PING", "")
		k.eq("a\x00b\r\n", "PING", "a\x00b\r\n")
		k.err(errArity("ping"), "PING", "a", "b")
		r := dialRESP(t, s)
		r.expect(respStatus("PONG"), "PING")
		r.expect("x", "PING", "x") // with an argument the reply is a bulk string
	})

	subtest(t, c, "Echo", func(t *testing.T, k checker) {
		k.eq("hello", "ECHO", "hello")
		k.eq("", "ECHO", "")
		k.eq("\x00\xff\r\n", "ECHO", "\x00\xff\r\n")
		k.err(errArity("echo"), "ECHO")
		k.err(errArity("echo"), "ECHO", "a", "b")
	})

	subtest(t, c, "Quit", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(respStatus("OK"), "SET", "k", "v")
		r.expect(respStatus("OK"), "QUIT")
		r.expectClosed(5 * time.Second)
		k.eq("v", "GET", "k")
		// Commands pipelined after QUIT are not executed.
		r = dialRESP(t, s)
		r.send("QUIT")
		r.send("SET", "after", "quit")
		if got := r.read(); got != respStatus("OK") {
			t.Fatalf("QUIT: got %s", short(got))
		}
		r.expectClosed(5 * time.Second)
		k.eq(0, "EXISTS", "after")
	})

	subtest(t, c, "Hello2", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		id := r.do("CLIENT", "ID")
		reply, ok := r.do("HELLO", "2").([]any)
		if !ok || len(reply) != 14 {
			t.Fatalf("HELLO 2: got %s; want a 14-element array", short(reply))
		}
		checkHello(t, pairs(t, reply), 2, id)
		// HELLO without a version reports the current protocol.
		checkHello(t, pairs(t, r.do("HELLO")), 2, id)
		if _, ok := r.do("CONFIG", "GET", "maxclients").([]any); !ok {
			t.Fatal("CONFIG GET after HELLO 2 is not an array")
		}
	})

	subtest(t, c, "Hello3", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		id := r.do("CLIENT", "ID")
		reply, ok := r.do("HELLO", "3").(respMap)
		if !ok || len(reply) != 14 {
			t.Fatalf("HELLO 3: got %s; want a map of 7 pairs", short(reply))
		}
		checkHello(t, pairs(t, reply), 3, id)
		checkHello(t, pairs(t, r.do("HELLO")), 3, id)
		if got, ok := r.do("CONFIG", "GET", "maxclients").(respMap); !ok || len(got) != 2 || got[0] != "maxclients" {
			t.Fatalf("CONFIG GET in RESP3: got %s; want a map", short(got))
		}
		if got := r.do("CLIENT", "INFO").(string); !strings.Contains(got, " resp=3") {
			t.Fatalf("CLIENT INFO after HELLO 3: %q", got)
		}
		// And back to RESP2.
		if _, ok := r.do("HELLO", "2").([]any); !ok {
			t.Fatal("HELLO 2 after HELLO 3 did not reply with an array")
		}
		if _, ok := r.do("CONFIG", "GET", "maxclients").([]any); !ok {
			t.Fatal("CONFIG GET after switching back to RESP2 is not an array")
		}
	})

	subtest(t, c, "HelloErrors", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		for _, tc := range []struct {
			err  string
			args []string
		}{
			{"NOPROTO unsupported protocol version", []string{"4"}},
			{"NOPROTO unsupported protocol version", []string{"1"}},
			{"NOPROTO unsupported protocol version", []string{"0"}},
			{"NOPROTO unsupported protocol version", []string{"-1"}},
			{"ERR Protocol version is not an integer or out of range", []string{"abc"}},
			{"ERR Protocol version is not an integer or out of range", []string{"3.0"}},
			{"ERR Syntax error in HELLO option 'auth'", []string{"3", "auth"}},
			{"ERR Syntax error in HELLO option 'AUTH'", []string{"3", "AUTH"}},
			{"ERR Syntax error in HELLO option 'AUTH'", []string{"2", "AUTH", "default"}},
			{"ERR Syntax error in HELLO option 'setname'", []string{"3", "setname"}},
			{"ERR Syntax error in HELLO option 'foo'", []string{"3", "foo"}},
			{errBadName, []string{"3", "SETNAME", "a b"}},
		} {
			r.expect(respError(tc.err), append([]string{"HELLO"}, tc.args...)...)
		}
		// A failed HELLO changes nothing.
		if _, ok := r.do("CONFIG", "GET", "maxclients").([]any); !ok {
			t.Fatal("a failed HELLO switched the protocol")
		}
		r.expect(nil, "CLIENT", "GETNAME")
	})

	subtest(t, c, "HelloSetName", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.do("HELLO", "3", "SETNAME", "first")
		r.expect("first", "CLIENT", "GETNAME")
		r.do("HELLO", "2", "setname", "second")
		r.expect("second", "CLIENT", "GETNAME")
	})

	subtest(t, c, "AuthWithoutPassword", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(respError("ERR AUTH <password> called without any password configured for the "+
			"default user. Are you sure your configuration is correct?"), "AUTH", "x")
		// The default user has no password, so any password authenticates it.
		r.expect(respStatus("OK"), "AUTH", "default", "anything")
		checkHello(t, pairs(t, r.do("HELLO", "2", "AUTH", "default", "anything")), 2, r.do("CLIENT", "ID"))
		r.expect(respError(errWrongPass), "AUTH", "nosuchuser", "x")
		r.expect(respError(errWrongPass), "HELLO", "2", "AUTH", "nosuchuser", "x")
		r.expect(respError(errSyntax), "AUTH", "a", "b", "c")
		r.expect(respError(errArity("auth")), "AUTH")
	})

	subtest(t, c, "Select", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(respStatus("OK"), "SET", "k", "db0")
		r.expect(respStatus("OK"), "SELECT", "1")
		r.expect(nil, "GET", "k")
		r.expect(respStatus("OK"), "SET", "k", "db1")
		r.expect(respStatus("OK"), "SELECT", "15")
		r.expect(nil, "GET", "k")
		r.expect(respStatus("OK"), "SELECT", "0")
		r.expect("db0", "GET", "k")
		r.expect(respError(errDBRange), "SELECT", "16")
		r.expect(respError(errDBRange), "SELECT", "-1")
		// Redis 7.0 parses the index as a C int first (Redis-version dependent text).
		r.expect(respError("ERR value is out of range, value must between -2147483648 and 2147483647"),
			"SELECT", "2147483648")
		r.expect(respError(errNotInt), "SELECT", "x")
		r.expect(respError(errNotInt), "SELECT", "1.0")
		r.expect(respError(errNotInt), "SELECT", "")
		r.expect(respError(errArity("select")), "SELECT")
		r.expect(respError(errArity("select")), "SELECT", "1", "2")
		r.expect("db0", "GET", "k") // a failed SELECT keeps the current db
		r.expect(respStatus("OK"), "SELECT", "1")
		if got := r.do("CLIENT", "INFO").(string); !strings.Contains(got, " db=1 ") {
			t.Fatalf("CLIENT INFO after SELECT 1: %q", got)
		}
	})

	subtest(t, c, "DatabasesIsolated", func(t *testing.T, k checker) {
		dbs := []int{0, 1, 7, 15}
		ks := map[int]checker{}
		for _, db := range dbs {
			ks[db] = newChecker(t, s.ClientOpts(&redis.Options{DB: db}))
		}
		for _, db := range dbs {
			ks[db].ok("SET", "shared", "v"+strconv.Itoa(db))
			for i := 0; i <= db; i++ {
				ks[db].ok("SET", "only"+strconv.Itoa(i), i)
			}
		}
		for _, db := range dbs {
			ks[db].eq("v"+strconv.Itoa(db), "GET", "shared")
			ks[db].eq(db+2, "DBSIZE")
		}
		ks[1].ok("FLUSHDB")
		ks[1].eq(0, "DBSIZE")
		ks[0].eq(2, "DBSIZE")
		ks[7].eq("v7", "GET", "shared")
		ks[15].eq(1, "DEL", "shared")
		ks[0].eq("v0", "GET", "shared")
		got := strings.Join(sortedStrings(t, ks[7].arr("KEYS", "only*")), " ")
		if want := "only0 only1 only2 only3 only4 only5 only6 only7"; got != want {
			t.Fatalf("KEYS only* in db 7: %q; want %q", got, want)
		}
	})

	subtest(t, c, "ClientIDAndName", func(t *testing.T, k checker) {
		a, b := dialRESP(t, s), dialRESP(t, s)
		idA, ok1 := a.do("CLIENT", "ID").(int64)
		idB, ok2 := b.do("CLIENT", "ID").(int64)
		if !ok1 || !ok2 || idA <= 0 || idB <= idA {
			t.Fatalf("CLIENT ID: %d then %d; want positive and increasing", idA, idB)
		}
		a.expect(idA, "CLIENT", "ID")
		a.expect(nil, "CLIENT", "GETNAME")
		a.expect(respStatus("OK"), "CLIENT", "SETNAME", "conn-a_1.x")
		a.expect("conn-a_1.x", "CLIENT", "GETNAME")
		b.expect(nil, "CLIENT", "GETNAME")
		a.expect(respStatus("OK"), "CLIENT", "SETNAME", "")
		a.expect(nil, "CLIENT", "GETNAME") // an empty name removes the name
		for _, bad := range []string{"a b", "a\nb", "tab\there", "\x01", "é"} {
			a.expect(respError(errBadName), "CLIENT", "SETNAME", bad)
		}
		a.expect(respError(errArity("client|setname")), "CLIENT", "SETNAME")
		a.expect(respError(errArity("client|setname")), "CLIENT", "SETNAME", "a", "b")
		a.expect(respError(errArity("client|getname")), "CLIENT", "GETNAME", "x")
		a.expect(respError(errArity("client|id")), "CLIENT", "ID", "x")
		a.expect(respError("ERR unknown subcommand 'foo'. Try CLIENT HELP."), "CLIENT", "foo")
		a.expect(respError(errArity("client")), "CLIENT")
	})

	subtest(t, c, "ClientListInfo", func(t *testing.T, k checker) {
		a, b := dialRESP(t, s), dialRESP(t, s)
		idA := a.do("CLIENT", "ID").(int64)
		idB := b.do("CLIENT", "ID").(int64)
		a.expect(respStatus("OK"), "CLIENT", "SETNAME", "lister")
		a.expect(respStatus("OK"), "SELECT", "2")
		info := a.do("CLIENT", "INFO").(string)
		if !strings.HasSuffix(info, "\n") || strings.Count(info, "\n") != 1 {
			t.Fatalf("CLIENT INFO is not one line ending in a newline: %q", info)
		}
		f := clientFields(info)
		for name, want := range map[string]string{
			"id": strconv.FormatInt(idA, 10), "addr": a.c.LocalAddr().String(),
			"laddr": a.c.RemoteAddr().String(), "name": "lister", "db": "2", "cmd": "client|info",
			"resp": "2", "multi": "-1", "sub": "0", "psub": "0",
		} {
			if f[name] != want {
				t.Errorf("CLIENT INFO %s=%q; want %q (line %q)", name, f[name], want, info)
			}
		}
		for _, name := range []string{"fd", "age", "idle", "flags", "qbuf", "obl", "omem", "tot-mem", "events", "user"} {
			if _, ok := f[name]; !ok {
				t.Errorf("CLIENT INFO has no %s field: %q", name, info)
			}
		}
		list := b.do("CLIENT", "LIST").(string)
		lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
		found := map[string]string{}
		for _, line := range lines {
			lf := clientFields(line)
			found[lf["id"]] = lf["cmd"]
		}
		if found[strconv.FormatInt(idA, 10)] != "client|info" || found[strconv.FormatInt(idB, 10)] != "client|list" {
			t.Fatalf("CLIENT LIST misses a or b (ids %d %d): %q", idA, idB, list)
		}
		if len(lines) < 3 { // a, b and the go-redis client
			t.Fatalf("CLIENT LIST has %d lines: %q", len(lines), list)
		}
		byID := b.do("CLIENT", "LIST", "ID", strconv.FormatInt(idB, 10), strconv.FormatInt(idA, 10), "999999").(string)
		if n := strings.Count(byID, "\n"); n != 2 || !strings.Contains(byID, "name=lister ") {
			t.Fatalf("CLIENT LIST ID a b: %q", byID)
		}
		b.expect("", "CLIENT", "LIST", "ID", "999999")
		if got := b.do("CLIENT", "LIST", "TYPE", "normal").(string); strings.Count(got, "\n") < 2 {
			t.Fatalf("CLIENT LIST TYPE normal: %q", got)
		}
		b.expect(respError("ERR Unknown client type 'foo'"), "CLIENT", "LIST", "TYPE", "foo")
		b.expect(respError("ERR Invalid client ID"), "CLIENT", "LIST", "ID", "abc")
		b.expect(respError(errSyntax), "CLIENT", "LIST", "ID")
		b.expect(respError(errSyntax), "CLIENT", "LIST", "foo")
		b.expect(respError(errArity("client|info")), "CLIENT", "INFO", "x")
	})

	subtest(t, c, "ClientKill", func(t *testing.T, k checker) {
		byID := dialRESP(t, s)
		id := byID.do("CLIENT", "ID").(int64)
		k.eq(1, "CLIENT", "KILL", "ID", id)
		byID.expectClosed(5 * time.Second)

		byAddr := dialRESP(t, s)
		byAddr.expect(respStatus("PONG"), "PING")
		k.eq(1, "CLIENT", "KILL", "ADDR", byAddr.c.LocalAddr().String())
		byAddr.expectClosed(5 * time.Second)

		oldForm := dialRESP(t, s)
		oldForm.expect(respStatus("PONG"), "PING")
		k.ok("CLIENT", "KILL", oldForm.c.LocalAddr().String())
		oldForm.expectClosed(5 * time.Second)

		// SKIPME defaults to yes for the new forms: a client does not kill itself by accident.
		self := dialRESP(t, s)
		selfID := strconv.FormatInt(self.do("CLIENT", "ID").(int64), 10)
		self.expect(int64(0), "CLIENT", "KILL", "ID", selfID)
		self.expect(int64(0), "CLIENT", "KILL", "ADDR", self.c.LocalAddr().String(), "SKIPME", "yes")
		self.expect(int64(1), "CLIENT", "KILL", "ID", selfID, "SKIPME", "no")
		self.expectClosed(5 * time.Second)

		k.eq(0, "CLIENT", "KILL", "ID", 999999)
		k.eq(0, "CLIENT", "KILL", "ADDR", "1.2.3.4:5")
		k.err("ERR No such client", "CLIENT", "KILL", "1.2.3.4:5")
		k.err("ERR client-id should be greater than 0", "CLIENT", "KILL", "ID", "abc")
		k.err("ERR client-id should be greater than 0", "CLIENT", "KILL", "ID", 0)
		k.err(errSyntax, "CLIENT", "KILL", "ID", 1, "SKIPME", "maybe")
		k.err(errSyntax, "CLIENT", "KILL", "foo", "bar")
		k.err("ERR No such client", "CLIENT", "KILL", "ID") // the old form, with "ID" as an address
		k.err(errArity("client|kill"), "CLIENT", "KILL")
		k.eq("PONG", "PING")
	})

	subtest(t, c, "ClientReply", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(respStatus("OK"), "CLIENT", "REPLY", "ON")
		// SKIP suppresses the reply to the next command only.
		r.send("CLIENT", "REPLY", "SKIP")
		r.send("SET", "a", "1")
		r.expect("1", "GET", "a")
		// OFF suppresses every reply, errors included, until ON.
		r.send("CLIENT", "REPLY", "OFF")
		r.send("SET", "b", "2")
		r.send("GET", "b")
		r.send("NOSUCHCOMMAND")
		r.send("INCR", "b")
		r.expect(respStatus("OK"), "CLIENT", "REPLY", "ON")
		r.expect("3", "GET", "b")
		r.expect(respError(errSyntax), "CLIENT", "REPLY", "foo")
		r.expect(respError(errArity("client|reply")), "CLIENT", "REPLY")
		r.expect(respError(errArity("client|reply")), "CLIENT", "REPLY", "ON", "x")
		r.expect(respStatus("PONG"), "PING")
	})

	subtest(t, c, "ClientNoEvict", func(t *testing.T, k checker) {
		k.ok("CLIENT", "NO-EVICT", "ON")
		k.ok("CLIENT", "NO-EVICT", "off")
		k.err(errSyntax, "CLIENT", "NO-EVICT", "foo")
		k.err(errArity("client|no-evict"), "CLIENT", "NO-EVICT")
	})

	subtest(t, c, "RESP3GoRedis", func(t *testing.T, k checker) {
		k3 := newChecker(t, s.ClientOpts(&redis.Options{Protocol: 3}))
		k3.null("GET", "missing")
		k3.eq([]any{nil, nil}, "MGET", "missing", "k3")
		k3.ok("SET", "k3", "v")
		k3.eq([]any{nil, "v"}, "MGET", "missing", "k3")
		k3.eq(int64(1), "INCR", "n")
		k3.eq("1.5", "INCRBYFLOAT", "f", "1.5")
		hello, err := k3.do("HELLO", "3")
		m, ok := hello.(map[any]any)
		if err != nil || !ok {
			t.Fatalf("HELLO 3 over go-redis: %s, %v; want a map", short(hello), err)
		}
		checkHello(t, pairs(t, m), 3, nil)
		cfg, err := k3.do("CONFIG", "GET", "maxclients")
		if cm, ok := cfg.(map[any]any); err != nil || !ok || len(cm) != 1 || cm["maxclients"] == nil {
			t.Fatalf("CONFIG GET maxclients in RESP3: %s, %v; want a one-entry map", short(cfg), err)
		}
		c3 := s.ClientOpts(&redis.Options{Protocol: 3})
		got, err := c3.ConfigGet(k3.ctx, "maxclients").Result()
		if err != nil || got["maxclients"] == "" {
			t.Fatalf("ConfigGet: %v, %v", got, err)
		}
		if info := k3.str("CLIENT", "INFO"); !strings.Contains(info, " resp=3") {
			t.Fatalf("CLIENT INFO over RESP3: %q", info)
		}
	})
}

// TestAuth runs a server with a password.
func TestAuth(t *testing.T) {
	s := harness.Start(t, "--requirepass", "secret")

	t.Run("NoAuth", func(t *testing.T) {
		r := dialRESP(t, s)
		for _, args := range [][]string{{"GET", "k"}, {"SET", "k", "v"}, {"PING"}, {"SELECT", "1"},
			{"CLIENT", "ID"}, {"ECHO", "x"}, {"COMMAND", "COUNT"}} {
			r.expect(respError(errNoAuth), args...)
		}
		// Unknown commands and wrong arity are reported as such even before authentication.
		r.expect(respError(errArity("get")), "GET")
		r.expect(respError("ERR unknown command 'NOSUCHCOMMAND', with args beginning with: 'x' "),
			"NOSUCHCOMMAND", "x")
		r.expect(respError(errHelloAuth), "HELLO", "2")
		r.expect(respError(errHelloAuth), "HELLO")
		r.expect(respError(errWrongPass), "AUTH", "wrong")
		r.expect(respError(errWrongPass), "AUTH", "default", "wrong")
		r.expect(respError(errWrongPass), "AUTH", "nosuchuser", "secret")
		r.expect(respError(errNoAuth), "GET", "k")
		r.expect(respError(errArity("auth")), "AUTH")
		r.expect(respError(errSyntax), "AUTH", "a", "b", "c")
		r.expect(respStatus("OK"), "AUTH", "secret")
		r.expect(nil, "GET", "k")
		r.expect(respStatus("PONG"), "PING")
		// A failed AUTH later does not log the connection out.
		r.expect(respError(errWrongPass), "AUTH", "wrong")
		r.expect(respStatus("OK"), "SET", "k", "v")
		r.expect(respStatus("OK"), "AUTH", "default", "secret")
		r.expect("v", "GET", "k")
	})

	t.Run("QuitWithoutAuth", func(t *testing.T) {
		r := dialRESP(t, s)
		r.expect(respStatus("OK"), "QUIT")
		r.expectClosed(5 * time.Second)
	})

	t.Run("HelloAuth", func(t *testing.T) {
		r := dialRESP(t, s)
		r.expect(respError(errWrongPass), "HELLO", "3", "AUTH", "default", "wrong")
		r.expect(respError(errWrongPass), "HELLO", "2", "AUTH", "nosuchuser", "secret")
		r.expect(respError(errNoAuth), "GET", "k")
		reply, ok := r.do("HELLO", "3", "AUTH", "default", "secret", "SETNAME", "authed").(respMap)
		if !ok {
			t.Fatalf("HELLO 3 AUTH: got %s; want a map", short(reply))
		}
		checkHello(t, pairs(t, reply), 3, r.do("CLIENT", "ID"))
		r.expect("authed", "CLIENT", "GETNAME")
		r.expect(respStatus("OK"), "SET", "h", "1")
		r.expect("1", "GET", "h")
	})

	t.Run("GoRedis", func(t *testing.T) {
		ctx := harness.Ctx(t)
		good := s.ClientOpts(&redis.Options{Password: "secret"})
		if err := good.Set(ctx, "gr", "v", 0).Err(); err != nil {
			t.Fatalf("SET with the right password: %v", err)
		}
		good3 := s.ClientOpts(&redis.Options{Password: "secret", Protocol: 3})
		if v, err := good3.Get(ctx, "gr").Result(); err != nil || v != "v" {
			t.Fatalf("GET over RESP3 with the right password: %q, %v", v, err)
		}
		none := s.ClientOpts(&redis.Options{MaxRetries: -1})
		if err := none.Get(ctx, "gr").Err(); err == nil || err.Error() != errNoAuth {
			t.Fatalf("GET without a password: %v; want %q", err, errNoAuth)
		}
		bad := s.ClientOpts(&redis.Options{Password: "wrong", MaxRetries: -1})
		if err := bad.Get(ctx, "gr").Err(); err == nil || !strings.Contains(err.Error(), errWrongPass) {
			t.Fatalf("GET with a wrong password: %v; want %q", err, errWrongPass)
		}
	})
}

// checkHello checks the fields of a HELLO reply; id, when not nil, is the connection's CLIENT ID.
func checkHello(t *testing.T, m map[string]any, proto int64, id any) {
	t.Helper()
	if len(m) != 7 {
		t.Errorf("HELLO has %d fields: %s", len(m), short(m))
	}
	if m["proto"] != proto {
		t.Errorf("HELLO proto = %s; want %d", short(m["proto"]), proto)
	}
	if id != nil && m["id"] != id {
		t.Errorf("HELLO id = %s; CLIENT ID says %s", short(m["id"]), short(id))
	}
	if m["mode"] != "standalone" || m["role"] != "master" {
		t.Errorf("HELLO mode, role = %s, %s; want standalone, master", short(m["mode"]), short(m["role"]))
	}
	if mods, ok := m["modules"].([]any); !ok || len(mods) != 0 {
		t.Errorf("HELLO modules = %s; want an empty array", short(m["modules"]))
	}
	// Clients only display server and version; Lavik may name itself, Redis says "redis".
	if v, _ := m["version"].(string); v == "" {
		t.Errorf("HELLO version = %s; want a version string", short(m["version"]))
	}
	if harness.IsRedis() && m["server"] != "redis" {
		t.Errorf("HELLO server = %s; want redis", short(m["server"]))
	}
	if v, _ := m["server"].(string); v == "" {
		t.Errorf("HELLO server = %s; want a name", short(m["server"]))
	}
}

// clientFields parses one CLIENT LIST / CLIENT INFO line into name -> value.
func clientFields(line string) map[string]string {
	m := map[string]string{}
	for _, field := range strings.Fields(line) {
		if name, value, ok := strings.Cut(field, "="); ok {
			m[name] = value
		}
	}
	return m
}
