package test

// End-to-end tests of the server commands (INFO CONFIG DBSIZE FLUSHDB FLUSHALL TIME COMMAND
// SHUTDOWN) and of the generic unknown-command and arity errors, against Redis 7 semantics
// checked against redis-server 7.0.15.

import (
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

func TestServer(t *testing.T) {
	s, c := startServer(t)
	db1 := s.ClientOpts(&redis.Options{DB: 1})

	subtest(t, c, "InfoSections", func(t *testing.T, k checker) {
		required := []string{"server", "clients", "memory", "persistence", "stats", "replication", "keyspace"}
		def := infoSections(k.str("INFO"))
		checkOrder(t, "INFO", def, required)
		if contains(def, "commandstats") {
			t.Errorf("INFO without arguments includes commandstats: %q", def)
		}
		for _, arg := range []string{"all", "everything"} {
			secs := infoSections(k.str("INFO", arg))
			checkOrder(t, "INFO "+arg, secs, required)
			if !contains(secs, "commandstats") {
				t.Errorf("INFO %s has no commandstats: %q", arg, secs)
			}
		}
		for _, name := range append(required, "commandstats") {
			if got := infoSections(k.str("INFO", name)); len(got) != 1 || got[0] != name {
				t.Errorf("INFO %s returned sections %q", name, got)
			}
		}
		if got := infoSections(k.str("INFO", "SERVER")); len(got) != 1 || got[0] != "server" {
			t.Errorf("INFO SERVER returned sections %q", got)
		}
		// Several sections at once (Redis-version dependent: since 7.0).
		if got := infoSections(k.str("INFO", "server", "clients")); strings.Join(got, ",") != "server,clients" {
			t.Errorf("INFO server clients returned sections %q", got)
		}
		k.eq("", "INFO", "nosuchsection")
		k.eq("# Keyspace\r\n", "INFO", "keyspace") // empty databases are not listed
	})

	subtest(t, c, "InfoServer", func(t *testing.T, k checker) {
		f := infoFields(k.str("INFO", "server"))
		if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(f["redis_version"]) {
			t.Errorf("redis_version = %q", f["redis_version"])
		}
		_, port, _ := net.SplitHostPort(s.Addr)
		want := map[string]string{"redis_mode": "standalone", "tcp_port": port}
		for name, v := range want {
			if f[name] != v {
				t.Errorf("INFO server %s = %q; want %q", name, f[name], v)
			}
		}
		for _, name := range []string{"process_id", "uptime_in_seconds", "uptime_in_days"} {
			if n, err := strconv.ParseInt(f[name], 10, 64); err != nil || n < 0 {
				t.Errorf("INFO server %s = %q; want a non-negative integer", name, f[name])
			}
		}
		if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(f["run_id"]) {
			t.Errorf("run_id = %q; want 40 hex digits", f["run_id"])
		}
	})

	subtest(t, c, "InfoClients", func(t *testing.T, k checker) {
		clients := func() int64 { return infoInt(t, k, "clients", "connected_clients") }
		before := clients()
		if before < 1 {
			t.Fatalf("connected_clients = %d with this client connected", before)
		}
		r := dialRESP(t, s)
		r.expect(respStatus("PONG"), "PING")
		if got := clients(); got != before+1 {
			t.Fatalf("connected_clients = %d after one more connection; want %d", got, before+1)
		}
		r.c.Close()
		harness.Eventually(t, 5*time.Second, "connected_clients to drop after a close", func() bool {
			return clients() == before
		})
		if f := infoFields(k.str("INFO", "clients")); f["blocked_clients"] != "0" {
			t.Errorf("blocked_clients = %q; want 0", f["blocked_clients"])
		}
	})

	subtest(t, c, "InfoMemoryPersistenceReplication", func(t *testing.T, k checker) {
		if infoInt(t, k, "memory", "used_memory") <= 0 {
			t.Error("used_memory is not positive")
		}
		f := infoFields(k.str("INFO", "memory"))
		if f["used_memory_human"] == "" || f["maxmemory"] != "0" || f["maxmemory_policy"] != "noeviction" {
			t.Errorf("INFO memory: used_memory_human=%q maxmemory=%q maxmemory_policy=%q",
				f["used_memory_human"], f["maxmemory"], f["maxmemory_policy"])
		}
		if f := infoFields(k.str("INFO", "persistence")); f["loading"] != "0" {
			t.Errorf("INFO persistence loading = %q; want 0", f["loading"])
		}
		f = infoFields(k.str("INFO", "replication"))
		if f["role"] != "master" || f["connected_slaves"] != "0" {
			t.Errorf("INFO replication role=%q connected_slaves=%q", f["role"], f["connected_slaves"])
		}
	})

	subtest(t, c, "InfoStats", func(t *testing.T, k checker) {
		stat := func(name string) int64 { return infoInt(t, k, "stats", name) }
		k.ok("SET", "k", "v")
		hits, misses := stat("keyspace_hits"), stat("keyspace_misses")
		k.eq("v", "GET", "k")
		k.eq("v", "GET", "k")
		k.null("GET", "missing")
		k.eq([]any{"v", nil}, "MGET", "k", "missing")
		if got := stat("keyspace_hits"); got != hits+3 {
			t.Errorf("keyspace_hits went from %d to %d; want +3", hits, got)
		}
		if got := stat("keyspace_misses"); got != misses+2 {
			t.Errorf("keyspace_misses went from %d to %d; want +2", misses, got)
		}
		conns, cmds := stat("total_connections_received"), stat("total_commands_processed")
		r := dialRESP(t, s)
		r.expect(respStatus("PONG"), "PING")
		if got := stat("total_connections_received"); got != conns+1 {
			t.Errorf("total_connections_received went from %d to %d; want +1", conns, got)
		}
		if got := stat("total_commands_processed"); got < cmds+2 {
			t.Errorf("total_commands_processed went from %d to %d; want at least +2", cmds, got)
		}
		expired := stat("expired_keys")
		k.ok("SET", "short", "v", "PX", 10)
		harness.Eventually(t, 5*time.Second, "expired_keys to count the expired key", func() bool {
			k.do("GET", "short")
			return stat("expired_keys") == expired+1
		})
	})

	subtest(t, c, "InfoKeyspace", func(t *testing.T, k checker) {
		k1 := newChecker(t, db1)
		k.ok("MSET", "a", 1, "b", 2, "c", 3)
		k.eq(1, "EXPIRE", "a", 1000)
		k1.ok("SET", "x", 1)
		info := k.str("INFO", "keyspace")
		lines := strings.Split(strings.TrimSuffix(info, "\r\n"), "\r\n")
		if len(lines) != 3 || lines[0] != "# Keyspace" {
			t.Fatalf("INFO keyspace: %q", info)
		}
		if !regexp.MustCompile(`^db0:keys=3,expires=1,avg_ttl=\d+$`).MatchString(lines[1]) {
			t.Errorf("db0 line %q; want db0:keys=3,expires=1,avg_ttl=N", lines[1])
		}
		if lines[2] != "db1:keys=1,expires=0,avg_ttl=0" {
			t.Errorf("db1 line %q", lines[2])
		}
	})

	subtest(t, c, "CommandStatsAndResetStat", func(t *testing.T, k checker) {
		k.ok("CONFIG", "RESETSTAT")
		stats := infoFields(k.str("INFO", "commandstats"))
		if _, ok := stats["cmdstat_get"]; ok {
			t.Fatalf("cmdstat_get survived CONFIG RESETSTAT: %v", stats)
		}
		if f := infoFields(k.str("INFO", "stats")); f["keyspace_hits"] != "0" || f["keyspace_misses"] != "0" {
			t.Errorf("after RESETSTAT keyspace_hits=%q keyspace_misses=%q", f["keyspace_hits"], f["keyspace_misses"])
		}
		k.null("GET", "a")
		k.null("GET", "b")
		k.ok("SET", "a", 1)
		k.err(errArity("get"), "GET")
		stats = infoFields(k.str("INFO", "commandstats"))
		// rejected_calls and failed_calls are Redis-version dependent: since 7.0.
		if got := stats["cmdstat_get"]; !regexp.MustCompile(
			`^calls=2,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=1,failed_calls=0$`).MatchString(got) {
			t.Errorf("cmdstat_get:%s", got)
		}
		if got := stats["cmdstat_set"]; !strings.HasPrefix(got, "calls=1,usec=") {
			t.Errorf("cmdstat_set:%s", got)
		}
		// Subcommands have their own line.
		if got := stats["cmdstat_config|resetstat"]; !strings.HasPrefix(got, "calls=1,") {
			t.Errorf("cmdstat_config|resetstat:%s", got)
		}
		k.ok("CONFIG", "RESETSTAT")
		if _, ok := infoFields(k.str("INFO", "commandstats"))["cmdstat_get"]; ok {
			t.Fatal("cmdstat_get survived the second CONFIG RESETSTAT")
		}
		k.err(errArity("config|resetstat"), "CONFIG", "RESETSTAT", "x")
	})

	subtest(t, c, "ConfigGet", func(t *testing.T, k checker) {
		m := pairs(t, k.arr("CONFIG", "GET", "maxclients"))
		if n, err := strconv.Atoi(m["maxclients"].(string)); len(m) != 1 || err != nil || n <= 0 {
			t.Fatalf("CONFIG GET maxclients: %v", m)
		}
		_, port, _ := net.SplitHostPort(s.Addr)
		k.eq([]any{"port", port}, "CONFIG", "GET", "port")
		k.eq([]any{}, "CONFIG", "GET", "nosuchparam")
		for _, pattern := range []string{"max*", "*fsync", "maxc?ients", "appendfs[xy]nc"} {
			got := pairs(t, k.arr("CONFIG", "GET", pattern))
			if len(got) == 0 {
				t.Errorf("CONFIG GET %s returned nothing", pattern)
			}
			for name := range got {
				if ok, _ := path.Match(pattern, name); !ok {
					t.Errorf("CONFIG GET %s returned %q", pattern, name)
				}
			}
		}
		if _, ok := pairs(t, k.arr("CONFIG", "GET", "max*"))["maxclients"]; !ok {
			t.Error("CONFIG GET max* misses maxclients")
		}
		// Several parameters and patterns at once (Redis-version dependent: since 7.0); each
		// parameter is returned once, in no particular order.
		got := pairs(t, k.arr("CONFIG", "GET", "maxclients", "appendfsync", "maxclients", "maxc*"))
		if len(got) != 2 || got["maxclients"] == nil || got["appendfsync"] == nil {
			t.Errorf("CONFIG GET maxclients appendfsync: %v", got)
		}
		k.err(errArity("config|get"), "CONFIG", "GET")
		k.err("ERR unknown subcommand 'foo'. Try CONFIG HELP.", "CONFIG", "foo")
		k.err(errArity("config"), "CONFIG")
	})

	subtest(t, c, "ConfigSet", func(t *testing.T, k checker) {
		orig := pairs(t, k.arr("CONFIG", "GET", "maxclients", "appendfsync"))
		t.Cleanup(func() {
			k.ok("CONFIG", "SET", "maxclients", orig["maxclients"], "appendfsync", orig["appendfsync"])
		})
		k.ok("CONFIG", "SET", "maxclients", 100)
		k.eq([]any{"maxclients", "100"}, "CONFIG", "GET", "maxclients")
		for _, v := range []string{"always", "no", "everysec"} {
			k.ok("CONFIG", "SET", "appendfsync", v)
			k.eq([]any{"appendfsync", v}, "CONFIG", "GET", "appendfsync")
		}
		k.ok("CONFIG", "SET", "appendfsync", "ALWAYS") // enum values are case-insensitive
		k.eq([]any{"appendfsync", "always"}, "CONFIG", "GET", "appendfsync")
		k.ok("CONFIG", "SET", "MaxClients", 200) // and so are names
		k.eq([]any{"maxclients", "200"}, "CONFIG", "GET", "maxclients")
		// Several parameters at once (Redis-version dependent: since 7.0).
		k.ok("CONFIG", "SET", "maxclients", 300, "appendfsync", "no")
		got := pairs(t, k.arr("CONFIG", "GET", "maxclients", "appendfsync"))
		if got["maxclients"] != "300" || got["appendfsync"] != "no" {
			t.Errorf("after a two-parameter CONFIG SET: %v", got)
		}
		k.err("ERR Unknown option or number of arguments for CONFIG SET - 'nosuchparam'",
			"CONFIG", "SET", "nosuchparam", "x")
		k.err("ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer",
			"CONFIG", "SET", "maxclients", "abc")
		k.err("ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive",
			"CONFIG", "SET", "maxclients", 0)
		k.err("ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: everysec, always, no",
			"CONFIG", "SET", "appendfsync", "sometimes")
		k.err("ERR CONFIG SET failed (possibly related to argument 'maxclients') - duplicate parameter",
			"CONFIG", "SET", "maxclients", 100, "maxclients", 200)
		k.err(errSyntax, "CONFIG", "SET", "maxclients", 100, "appendfsync")
		k.err(errArity("config|set"), "CONFIG", "SET", "maxclients")
		// A failed CONFIG SET changes nothing, not even the valid parameters in it.
		k.err("ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: everysec, always, no",
			"CONFIG", "SET", "maxclients", 400, "appendfsync", "bad")
		got = pairs(t, k.arr("CONFIG", "GET", "maxclients", "appendfsync"))
		if got["maxclients"] != "300" || got["appendfsync"] != "no" {
			t.Errorf("after a failed CONFIG SET: %v", got)
		}
	})

	subtest(t, c, "DBSize", func(t *testing.T, k checker) {
		k.eq(0, "DBSIZE")
		k.ok("MSET", "a", 1, "b", 2)
		k.ok("SET", "c", 3, "EX", 100)
		k.eq(3, "DBSIZE")
		newChecker(t, db1).eq(0, "DBSIZE")
		k.eq(1, "DEL", "a")
		k.eq(2, "DBSIZE")
		k.err(errArity("dbsize"), "DBSIZE", "x")
	})

	subtest(t, c, "FlushDB", func(t *testing.T, k checker) {
		k1 := newChecker(t, db1)
		for _, args := range [][]any{{"FLUSHDB"}, {"FLUSHDB", "ASYNC"}, {"FLUSHDB", "sync"}} {
			k.ok("MSET", "a", 1, "b", 2)
			k.ok("SET", "t", 1, "EX", 100)
			k1.ok("SET", "x", 1)
			k.ok(args...)
			k.eq(0, "DBSIZE")
			k.null("GET", "a")
			k.eq(-2, "TTL", "t")
			k1.eq(1, "DBSIZE") // other databases are untouched
		}
		k.err(errSyntax, "FLUSHDB", "foo")
		k.err(errSyntax, "FLUSHDB", "ASYNC", "SYNC")
	})

	subtest(t, c, "FlushAll", func(t *testing.T, k checker) {
		k1 := newChecker(t, db1)
		for _, args := range [][]any{{"FLUSHALL"}, {"FLUSHALL", "ASYNC"}, {"flushall", "SYNC"}} {
			k.ok("MSET", "a", 1, "b", 2)
			k1.ok("SET", "x", 1, "EX", 100)
			k.ok(args...)
			k.eq(0, "DBSIZE")
			k1.eq(0, "DBSIZE")
			k1.null("GET", "x")
		}
		k.eq("# Keyspace\r\n", "INFO", "keyspace")
		k.err(errSyntax, "FLUSHALL", "foo")
		k.err(errSyntax, "FLUSHALL", "SYNC", "ASYNC")
	})

	subtest(t, c, "Time", func(t *testing.T, k checker) {
		first := serverTimeMs(t, k)
		tm := k.arr("TIME")
		if len(tm) != 2 {
			t.Fatalf("TIME: %s", short(tm))
		}
		sec, _ := strconv.ParseInt(tm[0].(string), 10, 64)
		usec, err := strconv.ParseInt(tm[1].(string), 10, 64)
		if err != nil || usec < 0 || usec > 999999 {
			t.Fatalf("TIME microseconds %q", tm[1])
		}
		if d := time.Now().Unix() - sec; d < -10 || d > 10 {
			t.Fatalf("TIME is %d s away from this machine's clock", d)
		}
		if second := sec*1000 + usec/1000; second < first {
			t.Fatalf("TIME went back from %d to %d ms", first, second)
		}
		k.err(errArity("time"), "TIME", "x")
	})

	subtest(t, c, "Command", func(t *testing.T, k checker) {
		count := k.int("COMMAND", "COUNT")
		if count < 50 {
			t.Fatalf("COMMAND COUNT = %d", count)
		}
		if all := k.arr("COMMAND"); int64(len(all)) != count {
			t.Errorf("COMMAND returned %d entries; COMMAND COUNT says %d", len(all), count)
		}
		// COMMAND LIST also lists subcommands as "container|sub" (Redis 7.0); the top-level
		// names are exactly what COMMAND COUNT counts.
		list := sortedStrings(t, k.arr("COMMAND", "LIST"))
		var top []string
		for _, name := range list {
			if !strings.Contains(name, "|") {
				top = append(top, name)
			}
		}
		if int64(len(top)) != count {
			t.Errorf("COMMAND LIST has %d top-level names; COMMAND COUNT says %d", len(top), count)
		}
		for _, name := range []string{"get", "set", "getex", "scan", "client", "config|get", "client|kill"} {
			if !contains(list, name) {
				t.Errorf("COMMAND LIST misses %q", name)
			}
		}
		filtered := sortedStrings(t, k.arr("COMMAND", "LIST", "FILTERBY", "PATTERN", "getr*"))
		if strings.Join(filtered, ",") != "getrange" {
			t.Errorf("COMMAND LIST FILTERBY PATTERN getr*: %q", filtered)
		}

		infos := k.arr("COMMAND", "INFO", "get", "SET", "mset", "nosuchcommand")
		if len(infos) != 4 || infos[3] != nil {
			t.Fatalf("COMMAND INFO get SET mset nosuchcommand: %s", short(infos))
		}
		for i, want := range []struct {
			name                     string
			arity, first, last, step int64
			flag                     string
		}{
			{"get", 2, 1, 1, 1, "readonly"},
			{"set", -3, 1, 1, 1, "write"},
			{"mset", -3, 1, -1, 2, "write"},
		} {
			info, ok := infos[i].([]any)
			if !ok || len(info) < 6 {
				t.Fatalf("COMMAND INFO %s: %s", want.name, short(infos[i]))
			}
			got := []any{info[0], info[1], info[3], info[4], info[5]}
			if exp := []any{want.name, want.arity, want.first, want.last, want.step}; !eqAny(got, exp) {
				t.Errorf("COMMAND INFO %s: name, arity, first, last, step = %v; want %v", want.name, got, exp)
			}
			flags, _ := info[2].([]any)
			if !containsAny(flags, want.flag) {
				t.Errorf("COMMAND INFO %s flags %v lack %q", want.name, flags, want.flag)
			}
		}
		if flags, _ := infos[0].([]any)[2].([]any); !containsAny(flags, "fast") || containsAny(flags, "write") {
			t.Errorf("COMMAND INFO get flags = %v; want fast and not write", flags)
		}

		docs := pairs(t, k.arr("COMMAND", "DOCS", "get"))
		doc := pairs(t, docs["get"])
		if doc["group"] != "string" || doc["summary"] == nil || doc["since"] == nil {
			t.Errorf("COMMAND DOCS get: %v", doc)
		}
		k.eq([]any{}, "COMMAND", "DOCS", "nosuchcommand")

		k.err(errArity("command|count"), "COMMAND", "COUNT", "x")
		k.err("ERR unknown subcommand 'foo'. Try COMMAND HELP.", "COMMAND", "foo")
	})

	subtest(t, c, "UnknownCommand", func(t *testing.T, k checker) {
		k.err("ERR unknown command 'foo', with args beginning with: 'a' 'b' ", "foo", "a", "b")
		k.err("ERR unknown command 'foo', with args beginning with: ", "foo")
		k.err("ERR unknown command 'FooBar', with args beginning with: 'x' ", "FooBar", "x")
		// CR and LF in the echoed arguments become spaces; arguments are cut after 128 bytes.
		k.err("ERR unknown command 'foo', with args beginning with: 'a  b' ", "foo", "a\r\nb")
		long := strings.Repeat("a", 200)
		k.err("ERR unknown command 'foo', with args beginning with: '"+long[:128]+"' ", "foo", long)
		k.eq("PONG", "PING")
	})

	subtest(t, c, "WrongArity", func(t *testing.T, k checker) {
		for _, args := range [][]any{
			{"GET"}, {"get", "a", "b"}, {"GeT"}, {"SET", "a"}, {"DEL"}, {"MGET"}, {"INCR"},
			{"EXPIRE", "a"}, {"DBSIZE", "x"}, {"GETRANGE", "a", 0},
		} {
			// The command name in the error is lower case whatever the caller sent.
			k.err(errArity(strings.ToLower(args[0].(string))), args...)
		}
	})
}

// TestShutdown stops the server with SHUTDOWN and checks that the data survives a restart.
func TestShutdown(t *testing.T) {
	s, c := startServer(t)
	k := newChecker(t, c)
	k.err(errSyntax, "SHUTDOWN", "foo")
	k.err(errSyntax, "SHUTDOWN", "SAVE", "NOSAVE")
	k.ok("SET", "k1", "v1")
	k.ok("SET", "ttl", "v", "EX", 1000)
	k.ok("SET", "gone", "v")
	k.eq(1, "DEL", "gone")

	// On success SHUTDOWN does not reply: the connection closes and the process exits with 0.
	shutdown := func(args ...string) {
		t.Helper()
		r := dialRESP(t, s)
		r.send(args...)
		r.expectClosed(60 * time.Second)
		if !s.WaitExit(60 * time.Second) {
			t.Fatalf("%v: the server is still running", args)
		}
		if code := s.ExitCode(); code != 0 {
			t.Fatalf("%v: exit code %d", args, code)
		}
	}
	shutdown("SHUTDOWN")
	s.Restart()
	k = newChecker(t, s.Client())
	k.eq("v1", "GET", "k1")
	k.null("GET", "gone")
	k.between(900, 1000, "TTL", "ttl") // the TTL is kept as an absolute time

	// NOSAVE skips Redis's RDB snapshot; with appendonly (and in Lavik) written data is kept.
	k.ok("SET", "k2", "v2")
	shutdown("SHUTDOWN", "NOSAVE")
	s.Restart()
	k = newChecker(t, s.Client())
	k.eq([]any{"v1", "v2"}, "MGET", "k1", "k2")
	k.eq(3, "DBSIZE")
}

// infoInt returns an integer field of one INFO section.
func infoInt(t testing.TB, k checker, section, name string) int64 {
	t.Helper()
	f := infoFields(k.str("INFO", section))
	n, err := strconv.ParseInt(f[name], 10, 64)
	if err != nil {
		t.Fatalf("INFO %s %s = %q; want an integer", section, name, f[name])
	}
	return n
}

// checkOrder checks that want appears in got in the same relative order.
func checkOrder(t *testing.T, what string, got, want []string) {
	t.Helper()
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i != len(want) {
		t.Errorf("%s sections %q; want %q among them in this order", what, got, want)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func containsAny(list []any, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func eqAny(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
