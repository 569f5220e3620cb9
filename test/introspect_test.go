package test

// End-to-end tests of the introspection commands tools and dashboards rely on: SLOWLOG,
// LATENCY, MONITOR, CONFIG GET/SET/REWRITE, CLIENT PAUSE/UNPAUSE/LIST, MEMORY, DEBUG OBJECT,
// OBJECT REFCOUNT, LASTSAVE, ACL WHOAMI, COMMAND GETKEYSANDFLAGS and INFO as exporters read
// it, checked against redis-server 7.0 (LAVIK_TEST_SERVER=redis).

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

// debugArgs lets redis-server run DEBUG (lavik-data always does).
func debugArgs() []string {
	if harness.IsRedis() {
		return []string{"--enable-debug-command", "yes"}
	}
	return nil
}

// configMap turns a CONFIG GET reply into a map.
func configMap(t *testing.T, k checker, args ...any) map[string]string {
	t.Helper()
	a := k.arr(append([]any{"CONFIG", "GET"}, args...)...)
	m := map[string]string{}
	for i := 0; i+1 < len(a); i += 2 {
		m[a[i].(string)] = a[i+1].(string)
	}
	return m
}

func TestSlowlog(t *testing.T) {
	_, c := startServer(t, debugArgs()...)
	k := newChecker(t, c)
	k.ok("CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "128")
	k.ok("CLIENT", "SETNAME", "slowpoke")
	k.ok("SLOWLOG", "RESET")

	long := strings.Repeat("v", 200)
	k.ok("SET", "slowkey", long)
	dels := []any{"DEL"}
	for i := 0; i < 40; i++ {
		dels = append(dels, fmt.Sprintf("k%d", i))
	}
	k.int(dels...)
	k.err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", "AUTH", "secret")

	entries := k.arr("SLOWLOG", "GET", "-1")
	find := func(name string) []any {
		for _, e := range entries {
			ea := e.([]any)
			if args := ea[3].([]any); strings.EqualFold(args[0].(string), name) {
				return ea
			}
		}
		t.Fatalf("no %s entry in %v", name, short(entries))
		return nil
	}
	set := find("set")
	if len(set) != 6 {
		t.Fatalf("entry %v has %d fields, want 6", short(set), len(set))
	}
	if ts := set[1].(int64); ts < time.Now().Add(-time.Minute).Unix() || ts > time.Now().Add(time.Minute).Unix() {
		t.Errorf("entry time %d", ts)
	}
	if d := set[2].(int64); d < 0 {
		t.Errorf("duration %d", d)
	}
	if got := set[3].([]any)[2].(string); got != strings.Repeat("v", 128)+"... (72 more bytes)" {
		t.Errorf("long argument kept as %q", got)
	}
	if !regexp.MustCompile(`^127\.0\.0\.1:\d+$`).MatchString(set[4].(string)) || set[5] != "slowpoke" {
		t.Errorf("client fields %q %q", set[4], set[5])
	}
	del := find("del")[3].([]any)
	if len(del) != 32 || del[31] != "... (10 more arguments)" || del[30] != "k29" {
		t.Errorf("DEL of 40 keys kept as %d arguments ending %q", len(del), del[len(del)-1])
	}
	if auth := find("auth")[3].([]any); len(auth) != 2 || auth[1] != "(redacted)" {
		t.Errorf("AUTH logged as %v", auth)
	}
	// Newest first, ids increasing.
	if a, b := entries[0].([]any)[0].(int64), entries[1].([]any)[0].(int64); a <= b {
		t.Errorf("ids %d then %d", a, b)
	}
	if n := len(k.arr("SLOWLOG", "GET", "2")); n != 2 {
		t.Errorf("SLOWLOG GET 2 gave %d entries", n)
	}
	k.err("ERR count should be greater than or equal to -1", "SLOWLOG", "GET", "-2")
	k.err("ERR count should be greater than or equal to -1", "SLOWLOG", "GET", "x")
	k.err("ERR unknown subcommand 'NOPE'. Try SLOWLOG HELP.", "SLOWLOG", "NOPE")
	if help := k.arr("SLOWLOG", "HELP"); len(help) < 4 {
		t.Errorf("SLOWLOG HELP: %v", help)
	}

	// Off: nothing more is logged; max-len bounds the log.
	k.ok("CONFIG", "SET", "slowlog-log-slower-than", "-1")
	k.ok("SLOWLOG", "RESET")
	k.ok("SET", "a", "1")
	k.eq(0, "SLOWLOG", "LEN")
	k.ok("CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "3")
	for i := 0; i < 10; i++ {
		k.ok("SET", "a", "1")
	}
	k.between(1, 3, "SLOWLOG", "LEN")

	// A slow command under a real threshold.
	k.ok("CONFIG", "SET", "slowlog-log-slower-than", "20000", "slowlog-max-len", "128")
	k.ok("SLOWLOG", "RESET")
	k.ok("DEBUG", "SLEEP", "0.03")
	e := k.arr("SLOWLOG", "GET")
	if len(e) != 1 || e[0].([]any)[2].(int64) < 20000 {
		t.Fatalf("after DEBUG SLEEP 0.03: %v", short(e))
	}
}

func TestLatencyMonitor(t *testing.T) {
	_, c := startServer(t, debugArgs()...)
	k := newChecker(t, c)
	k.eq(0, "LATENCY", "RESET")
	k.ok("CONFIG", "SET", "latency-monitor-threshold", "10")
	k.ok("DEBUG", "SLEEP", "0.05")
	latest := k.arr("LATENCY", "LATEST")
	var cmd []any
	for _, e := range latest {
		if e.([]any)[0] == "command" {
			cmd = e.([]any)
		}
	}
	if len(cmd) != 4 || cmd[2].(int64) < 50 || cmd[3].(int64) < cmd[2].(int64) {
		t.Fatalf("LATENCY LATEST: %v", short(latest))
	}
	hist := k.arr("LATENCY", "HISTORY", "command")
	if len(hist) != 1 || hist[0].([]any)[1].(int64) < 50 {
		t.Fatalf("LATENCY HISTORY command: %v", short(hist))
	}
	k.eq([]any{}, "LATENCY", "HISTORY", "no-such-event")
	if doc := k.str("LATENCY", "DOCTOR"); !strings.Contains(doc, "command") {
		t.Errorf("LATENCY DOCTOR does not name the event: %q", doc)
	}
	k.eq(0, "LATENCY", "RESET", "no-such-event")
	k.eq(1, "LATENCY", "RESET", "command")
	k.eq([]any{}, "LATENCY", "HISTORY", "command")
	k.err("ERR wrong number of arguments for 'latency|history' command", "LATENCY", "HISTORY")
	if help := k.arr("LATENCY", "HELP"); len(help) < 4 {
		t.Errorf("LATENCY HELP: %v", help)
	}
	// Off: a slow command records nothing.
	k.ok("CONFIG", "SET", "latency-monitor-threshold", "0")
	k.ok("DEBUG", "SLEEP", "0.02")
	k.eq([]any{}, "LATENCY", "LATEST")
}

// monitorConn starts MONITOR on a raw connection.
func monitorConn(t *testing.T, s *harness.Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc := s.Conn()
	t.Cleanup(func() { nc.Close() })
	if _, err := nc.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(nc)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if l, err := r.ReadString('\n'); err != nil || l != "+OK\r\n" {
		t.Fatalf("MONITOR: %q %v", l, err)
	}
	return nc, r
}

func TestMonitor(t *testing.T) {
	s, c := startServer(t)
	k := newChecker(t, c)
	_, r1 := monitorConn(t, s)
	_, r2 := monitorConn(t, s)
	cn := s.Client().Conn()
	t.Cleanup(func() { cn.Close() })
	k2 := newChecker(t, cn)

	k.ok("SET", "mkey", "a \"quoted\"\nvalue")
	k2.ok("SELECT", "2")
	k2.null("GET", "other key")
	k2.err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", "AUTH", "hunter2")
	k.ok("CONFIG", "SET", "slowlog-max-len", "128") // admin: not shown
	k.eq("PONG", "PING")

	want := []*regexp.Regexp{
		regexp.MustCompile(`(?i)^\+\d{10}\.\d{6} \[0 127\.0\.0\.1:\d+\] "set" "mkey" "a \\"quoted\\"\\nvalue"\r\n$`),
		regexp.MustCompile(`(?i)^\+\d{10}\.\d{6} \[2 127\.0\.0\.1:\d+\] "select" "2"\r\n$`),
		regexp.MustCompile(`(?i)^\+\d{10}\.\d{6} \[2 127\.0\.0\.1:\d+\] "get" "other key"\r\n$`),
		regexp.MustCompile(`(?i)^\+\d{10}\.\d{6} \[2 127\.0\.0\.1:\d+\] "auth" "\(redacted\)"\r\n$`),
		regexp.MustCompile(`(?i)^\+\d{10}\.\d{6} \[0 127\.0\.0\.1:\d+\] "ping"\r\n$`),
	}
	for _, r := range []*bufio.Reader{r1, r2} {
		var got []string
		for len(got) < len(want) {
			l, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("monitor stream after %q: %v", got, err)
			}
			// Clients' own handshake (go-redis's HELLO, CLIENT SETINFO) is not what we check.
			if ll := strings.ToLower(l); strings.Contains(ll, `] "hello"`) || strings.Contains(ll, `] "client"`) {
				continue
			}
			got = append(got, l)
		}
		for i, re := range want {
			if !re.MatchString(got[i]) {
				t.Errorf("monitor line %d = %q, want %s", i, got[i], re)
			}
		}
	}
	// A monitor is counted and listed as one.
	if list := k.str("CLIENT", "LIST"); !regexp.MustCompile(`flags=O`).MatchString(list) {
		t.Errorf("CLIENT LIST shows no monitor: %s", list)
	}
}

func TestConfigGetSetIntrospect(t *testing.T) {
	_, c := startServer(t)
	k := newChecker(t, c)
	m := configMap(t, k, "maxmemory*", "port")
	for _, n := range []string{"maxmemory", "maxmemory-policy", "maxmemory-samples", "port"} {
		if _, ok := m[n]; !ok {
			t.Errorf("CONFIG GET maxmemory* port lacks %s: %v", n, m)
		}
	}
	k.ok("CONFIG", "SET", "maxmemory", "1mb", "maxmemory-policy", "allkeys-lru")
	k.eq([]any{"maxmemory", "1048576"}, "CONFIG", "GET", "maxmemory")
	// One bad value: nothing changes.
	k.err("ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction",
		"CONFIG", "SET", "maxmemory", "2mb", "slowlog-max-len", "9", "maxmemory-policy", "bogus")
	m = configMap(t, k, "maxmemory", "maxmemory-policy", "slowlog-max-len")
	if m["maxmemory"] != "1048576" || m["maxmemory-policy"] != "allkeys-lru" || m["slowlog-max-len"] != "128" {
		t.Errorf("after a failed CONFIG SET: %v", m)
	}
	k.err("ERR Unknown option or number of arguments for CONFIG SET - 'no-such-setting'", "CONFIG", "SET", "no-such-setting", "1")
	k.err("ERR CONFIG SET failed (possibly related to argument 'maxmemory') - duplicate parameter", "CONFIG", "SET", "maxmemory", "1", "maxmemory", "2")
	k.ok("CONFIG", "SET", "hz", "1000", "lazyfree-lazy-user-del", "yes", "lazyfree-lazy-user-flush", "yes", "latency-monitor-threshold", "5")
	m = configMap(t, k, "hz", "lazyfree-*", "latency-monitor-threshold", "busy-reply-threshold", "lua-time-limit")
	if m["hz"] != "500" || m["lazyfree-lazy-user-del"] != "yes" || m["lazyfree-lazy-eviction"] != "no" || m["latency-monitor-threshold"] != "5" || m["busy-reply-threshold"] == "" {
		t.Errorf("CONFIG GET: %v", m)
	}
	info := infoFields(k.str("INFO", "memory"))
	if info["maxmemory"] != "1048576" || info["maxmemory_policy"] != "allkeys-lru" || info["maxmemory_human"] != "1.00M" {
		t.Errorf("INFO memory: maxmemory %q %q %q", info["maxmemory"], info["maxmemory_human"], info["maxmemory_policy"])
	}
	k.ok("CONFIG", "RESETSTAT")
}

func TestConfigRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.conf")
	orig := "# settings for the test\nslowlog-max-len 5\n\n# end of my settings\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	s := harness.StartWithConfig(t, path)
	k := newChecker(t, s.Client())
	k.eq([]any{"slowlog-max-len", "5"}, "CONFIG", "GET", "slowlog-max-len")
	k.ok("CONFIG", "SET", "slowlog-max-len", "77", "maxmemory", "2mb", "maxmemory-policy", "volatile-ttl")
	k.ok("CONFIG", "REWRITE")
	data, _ := os.ReadFile(path)
	text := string(data)
	for _, want := range []string{"# settings for the test\n", "# end of my settings\n", "slowlog-max-len 77\n", "maxmemory-policy volatile-ttl\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("rewritten file lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "slowlog-max-len") != 1 {
		t.Errorf("slowlog-max-len written more than once:\n%s", text)
	}
	s.Restart()
	k = newChecker(t, s.Client())
	m := configMap(t, k, "slowlog-max-len", "maxmemory", "maxmemory-policy")
	if m["slowlog-max-len"] != "77" || m["maxmemory"] != "2097152" || m["maxmemory-policy"] != "volatile-ttl" {
		t.Errorf("after restart: %v", m)
	}

	// Without a config file.
	_, c := startServer(t)
	newChecker(t, c).err("ERR The server is running without a config file", "CONFIG", "REWRITE")
}

func TestClientPause(t *testing.T) {
	s, c := startServer(t)
	k := newChecker(t, c)
	other := newChecker(t, s.Client())
	other.ok("SET", "pk", "1")

	k.err("ERR timeout is not an integer or out of range", "CLIENT", "PAUSE", "abc")
	k.err("ERR timeout is negative", "CLIENT", "PAUSE", "-1")
	k.err("ERR CLIENT PAUSE mode must be WRITE or ALL", "CLIENT", "PAUSE", "10", "SOMETIMES")

	// WRITE: reads go through at once, writes wait for the end of the pause.
	const pause = 300 * time.Millisecond
	start := time.Now()
	k.ok("CLIENT", "PAUSE", pause.Milliseconds(), "WRITE")
	other.eq("1", "GET", "pk")
	if d := time.Since(start); d >= pause {
		t.Errorf("a read took %v under a WRITE pause", d)
	}
	other.ok("SET", "pk", "2")
	if d := time.Since(start); d < pause-50*time.Millisecond {
		t.Errorf("a write ran %v into a %v WRITE pause", d, pause)
	}
	// ALL: every command waits.
	start = time.Now()
	k.ok("CLIENT", "PAUSE", pause.Milliseconds(), "ALL")
	other.eq("PONG", "PING")
	if d := time.Since(start); d < pause-50*time.Millisecond {
		t.Errorf("PING ran %v into a %v ALL pause", d, pause)
	}
	// UNPAUSE releases the waiting clients, which count as blocked meanwhile.
	k.ok("CLIENT", "PAUSE", "100000", "WRITE")
	done := make(chan error, 1)
	go func() { done <- s.Client().Set(harness.Ctx(t), "pk", "3", 0).Err() }()
	harness.Eventually(t, 10*time.Second, "the paused writer to count as blocked", func() bool {
		return infoFields(k.str("INFO", "clients"))["blocked_clients"] == "1"
	})
	k.ok("CLIENT", "UNPAUSE")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the paused SET did not finish after CLIENT UNPAUSE")
	}
	other.eq("3", "GET", "pk")
}

func TestClientListFields(t *testing.T) {
	_, c := startServer(t)
	k := newChecker(t, c)
	k.ok("CLIENT", "NO-EVICT", "on")
	k.err("ERR syntax error", "CLIENT", "NO-EVICT", "maybe")
	line := strings.TrimSpace(k.str("CLIENT", "INFO"))
	var names []string
	for _, f := range strings.Fields(line) {
		n, _, _ := strings.Cut(f, "=")
		names = append(names, n)
	}
	want := "id addr laddr fd name age idle flags db sub psub ssub multi qbuf qbuf-free argv-mem multi-mem rbs rbp obl oll omem tot-mem events cmd user redir resp"
	if strings.Join(names, " ") != want {
		t.Errorf("CLIENT INFO fields:\n%s\nwant\n%s", strings.Join(names, " "), want)
	}
	f := map[string]string{}
	for _, kv := range strings.Fields(line) {
		n, v, _ := strings.Cut(kv, "=")
		f[n] = v
	}
	if f["fd"] == "-1" || f["fd"] == "0" || !strings.Contains(f["flags"], "e") || f["cmd"] != "client|info" || f["user"] != "default" {
		t.Errorf("CLIENT INFO values: %s", line)
	}
	if harness.IsRedis() {
		return // CLIENT NO-TOUCH came with Redis 7.2
	}
	k.ok("CLIENT", "NO-TOUCH", "on")
	k.ok("CLIENT", "NO-TOUCH", "off")
	k.err("ERR syntax error", "CLIENT", "NO-TOUCH", "x")
}

func TestMemoryDebugMisc(t *testing.T) {
	_, c := startServer(t, debugArgs()...)
	k := newChecker(t, c)
	k.null("MEMORY", "USAGE", "nokey")
	k.ok("SET", "mk", strings.Repeat("x", 1000))
	k.between(1000, 4096, "MEMORY", "USAGE", "mk")
	k.between(1000, 4096, "MEMORY", "USAGE", "mk", "SAMPLES", "0")
	k.err("ERR syntax error", "MEMORY", "USAGE", "mk", "FOO")
	k.err("ERR value is not an integer or out of range", "MEMORY", "USAGE", "mk", "SAMPLES", "x")
	stats := k.arr("MEMORY", "STATS")
	if !contains(anyStrings(stats), "keys.count") || !contains(anyStrings(stats), "peak.allocated") {
		t.Errorf("MEMORY STATS: %v", short(stats))
	}
	if k.str("MEMORY", "DOCTOR") == "" {
		t.Error("MEMORY DOCTOR is empty")
	}
	k.err("ERR no such key", "DEBUG", "OBJECT", "nokey")
	obj := k.str("DEBUG", "OBJECT", "mk")
	if !regexp.MustCompile(`^Value at:0x[0-9a-f]+ refcount:1 encoding:raw serializedlength:\d+ lru:\d+ lru_seconds_idle:\d+$`).MatchString(obj) {
		t.Errorf("DEBUG OBJECT: %q", obj)
	}
	k.eq(1, "OBJECT", "REFCOUNT", "mk")
	k.null("OBJECT", "REFCOUNT", "nokey")
	if ls := k.int("LASTSAVE"); ls > time.Now().Unix()+60 || ls < time.Now().Unix()-3600 {
		t.Errorf("LASTSAVE %d", ls)
	}
	k.eq("default", "ACL", "WHOAMI")
	got := k.arr("COMMAND", "GETKEYSANDFLAGS", "SET", "k1", "v")
	// Redis says OW update (SET overwrites without reading); Lavik's table knows only that SET
	// writes its key (RW).
	if fl := got[0].([]any)[1].([]any)[0]; len(got) != 1 || got[0].([]any)[0] != "k1" || fl != "RW" && fl != "OW" {
		t.Errorf("COMMAND GETKEYSANDFLAGS SET: %v", got)
	}
	got = k.arr("COMMAND", "GETKEYSANDFLAGS", "MGET", "a", "b")
	if len(got) != 2 || got[1].([]any)[0] != "b" || got[1].([]any)[1].([]any)[0] != "RO" {
		t.Errorf("COMMAND GETKEYSANDFLAGS MGET: %v", got)
	}
	k.err("ERR The command has no key arguments", "COMMAND", "GETKEYSANDFLAGS", "PING", "x")
	k.err("ERR Invalid command specified", "COMMAND", "GETKEYSANDFLAGS", "NOPE", "x")
}

func anyStrings(a []any) []string {
	var out []string
	for _, v := range a {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestInfoForExporters(t *testing.T) {
	_, c := startServer(t)
	k := newChecker(t, c)
	k.ok("SET", "s", "v")
	k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "LPUSH", "s", "x")
	k.null("GET", "missing")

	def := infoSections(k.str("INFO"))
	want := []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules", "errorstats", "cluster", "keyspace"}
	if strings.Join(def, ",") != strings.Join(want, ",") {
		t.Errorf("INFO sections %v, want %v", def, want)
	}
	for _, arg := range []string{"all", "everything"} {
		secs := infoSections(k.str("INFO", arg))
		if !contains(secs, "commandstats") || !contains(secs, "latencystats") {
			t.Errorf("INFO %s sections %v", arg, secs)
		}
	}
	all := k.str("INFO", "all")
	f := infoFields(all)
	for _, n := range []string{"used_memory", "used_memory_human", "used_memory_peak", "used_memory_peak_human", "used_memory_rss",
		"used_memory_rss_human", "mem_fragmentation_ratio", "maxmemory", "maxmemory_human", "maxmemory_policy",
		"rdb_changes_since_last_save", "rdb_last_save_time", "rdb_bgsave_in_progress", "aof_enabled",
		"used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children",
		"used_cpu_sys_main_thread", "used_cpu_user_main_thread", "total_error_replies", "keyspace_hits",
		"keyspace_misses", "expired_keys", "evicted_keys", "instantaneous_ops_per_sec", "total_net_input_bytes",
		"total_net_output_bytes", "connected_clients", "blocked_clients", "total_commands_processed", "cluster_enabled"} {
		if _, ok := f[n]; !ok {
			t.Errorf("INFO all lacks %s", n)
		}
	}
	if f["errorstat_WRONGTYPE"] != "count=1" || f["cluster_enabled"] != "0" || f["aof_enabled"] != "1" {
		t.Errorf("errorstat_WRONGTYPE=%q cluster_enabled=%q aof_enabled=%q", f["errorstat_WRONGTYPE"], f["cluster_enabled"], f["aof_enabled"])
	}
	if f["rdb_changes_since_last_save"] == "0" {
		t.Error("rdb_changes_since_last_save is 0 after a SET")
	}
	if !regexp.MustCompile(`^calls=\d+,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=\d+,failed_calls=1$`).MatchString(f["cmdstat_lpush"]) {
		t.Errorf("cmdstat_lpush:%s", f["cmdstat_lpush"])
	}
	if !regexp.MustCompile(`^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$`).MatchString(f["latency_percentiles_usec_set"]) {
		t.Errorf("latency_percentiles_usec_set:%s", f["latency_percentiles_usec_set"])
	}
	k.ok("CONFIG", "SET", "latency-tracking-info-percentiles", "50 90")
	f = infoFields(k.str("INFO", "latencystats"))
	if !regexp.MustCompile(`^p50=\d+\.\d{3},p90=\d+\.\d{3}$`).MatchString(f["latency_percentiles_usec_set"]) {
		t.Errorf("with percentiles 50 90: latency_percentiles_usec_set:%s", f["latency_percentiles_usec_set"])
	}
	k.ok("CONFIG", "RESETSTAT")
	f = infoFields(k.str("INFO", "errorstats"))
	if _, ok := f["errorstat_WRONGTYPE"]; ok {
		t.Error("errorstats survive CONFIG RESETSTAT")
	}
}
