package test

// RESET: the connection is back to how it started (Redis 7.0), checked over bare connections
// against lavik-data and redis-server 7.0.

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lavikdb/lavik/test/harness"
)

func TestReset(t *testing.T) {
	s := harness.Start(t)
	r := dialRESP(t, s)
	other := dialRESP(t, s)
	r.expect(respStatus("OK"), "SET", "w", "1")

	// Name, database, RESP3, a WATCH and an open transaction with a queued command.
	r.expect(respStatus("OK"), "CLIENT", "SETNAME", "before")
	r.expect(respStatus("OK"), "SELECT", "5")
	if _, ok := r.do("HELLO", "3").(respMap); !ok {
		t.Fatalf("HELLO 3: not a map")
	}
	r.expect(respStatus("OK"), "WATCH", "w")
	r.expect(respStatus("OK"), "MULTI")
	r.expect(respStatus("QUEUED"), "SET", "queued", "1")
	r.expect(respStatus("RESET"), "RESET") // runs at once inside MULTI, not queued
	r.expect(respError("ERR EXEC without MULTI"), "EXEC")
	r.expect(nil, "GET", "queued")
	r.expect(nil, "CLIENT", "GETNAME")
	info, _ := r.do("CLIENT", "INFO").(string)
	if f := clientFields(strings.TrimSpace(info)); f["db"] != "0" || f["resp"] != "2" || f["name"] != "" || f["flags"] != "N" || f["multi"] != "-1" {
		t.Errorf("CLIENT INFO after RESET: %s", info)
	}
	r.expect([]any{"maxmemory", "0"}, "CONFIG", "GET", "maxmemory") // RESP2: an array, not a map

	// The WATCH is gone: a transaction after another client's write of w commits.
	other.expect(respStatus("OK"), "SET", "w", "2")
	r.expect(respStatus("OK"), "MULTI")
	r.expect(respStatus("QUEUED"), "SET", "after", "1")
	r.expect([]any{respStatus("OK")}, "EXEC")

	// Under CLIENT REPLY OFF, RESET's own reply is sent and replies are on again.
	r.send("CLIENT", "REPLY", "OFF")
	r.send("SET", "silent", "1")
	r.expect(respStatus("RESET"), "RESET")
	r.expect("1", "GET", "silent")

	// A monitor stops being one: a command from another client is not fed to it any more.
	r.expect(respStatus("OK"), "MONITOR")
	other.expect(respStatus("OK"), "SET", "seen", "1")
	if line, _ := r.read().(respStatus); !strings.Contains(string(line), `"seen"`) {
		t.Fatalf("MONITOR: got %q", line)
	}
	r.expect(respStatus("RESET"), "RESET")
	other.expect(respStatus("OK"), "SET", "unseen", "1")
	r.expect(respStatus("PONG"), "PING") // the next thing read is PING's reply, not a monitor line
	if got := r.do("CLIENT", "INFO").(string); strings.Contains(got, "cmd=monitor") || clientFields(strings.TrimSpace(got))["flags"] != "N" {
		t.Errorf("CLIENT INFO after a monitor's RESET: %s", got)
	}
}

func TestResetAuth(t *testing.T) {
	s := harness.Start(t, "--requirepass", "secret")
	r := dialRESP(t, s)
	r.expect(respStatus("RESET"), "RESET") // allowed before AUTH
	r.expect(respStatus("OK"), "AUTH", "secret")
	r.expect(respStatus("OK"), "SET", "k", "v")
	// The default user needs a password: RESET leaves the connection unauthenticated.
	r.expect(respStatus("RESET"), "RESET")
	if got := r.do("GET", "k"); !reflect.DeepEqual(got, respError(errNoAuth)) {
		t.Fatalf("GET after RESET: got %s; want %s", short(got), errNoAuth)
	}
}
