package server_test

import (
	"strings"
	"testing"
	"time"
)

// infoField returns one field of INFO's text.
func infoField(t *testing.T, c *client, section, name string) string {
	t.Helper()
	info := c.do("INFO", section)
	for _, line := range strings.Split(strings.Trim(info, `"`), `\r\n`) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s: %s", section, name, info)
	return ""
}

// drainUntilClosed reads what c's connection has until the server closes it or d passes; it
// returns the bytes read and whether the connection was closed.
func drainUntilClosed(c *client, d time.Duration) (int, bool) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 1<<20)
	total := 0
	for {
		n, err := c.nc.Read(buf)
		total += n
		if err != nil {
			ne, ok := err.(interface{ Timeout() bool })
			return total, !(ok && ne.Timeout())
		}
	}
}

// TestOutputBufferHardLimit: a client that asks for a value far larger than the socket buffers
// and reads nothing is disconnected once its unwritten replies pass the normal class's hard
// limit, and counted; with the default (no limit for normal clients) a client that reads
// nothing for a while is not disconnected, and one that reads gets the value whole.
func TestOutputBufferHardLimit(t *testing.T) {
	ts := startServer(t, nil)
	admin := ts.dial(t)
	big := strings.Repeat("v", 24<<20)
	admin.send(cmd{"SET", "big", big})
	admin.expect("+OK")

	// The default: no limit.
	patient := ts.dial(t)
	patient.send(cmd{"GET", "big"})
	time.Sleep(1500 * time.Millisecond)
	if got := patient.read(); got != bulk(big) {
		t.Fatalf("GET big after a pause: %.40s", got)
	}

	admin.send(cmd{"CONFIG", "SET", "client-output-buffer-limit", "normal 256kb 0 0"})
	admin.expect("+OK")
	if got := admin.do("CONFIG", "GET", "client-output-buffer-limit"); !strings.Contains(got, "normal 262144 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60") {
		t.Fatalf("CONFIG GET client-output-buffer-limit: %s", got)
	}
	slow := ts.dial(t)
	slow.send(cmd{"GET", "big"})
	// It reads nothing: the connection must end within a few seconds, unread bytes and all.
	time.Sleep(time.Second)
	total, closed := drainUntilClosed(slow, 10*time.Second)
	if !closed {
		t.Fatalf("the slow client was not disconnected (read %d bytes)", total)
	}
	if total >= len(big) {
		t.Fatalf("the slow client got the whole value (%d bytes) before it was disconnected", total)
	}
	if got := infoField(t, admin, "stats", "client_output_buffer_limit_disconnections"); got != "1" {
		t.Fatalf("client_output_buffer_limit_disconnections %s, want 1", got)
	}
	// As in Redis, a reply larger than the hard limit ends the connection even of a client that
	// reads at once: the value owed counts, not only what waits in the server's buffer.
	fast := ts.dial(t)
	fast.send(cmd{"GET", "big"})
	if n, closed := drainUntilClosed(fast, 10*time.Second); !closed || n >= len(big) {
		t.Fatalf("a client reading a reply over the hard limit read %d bytes (closed: %v)", n, closed)
	}
	admin.send(cmd{"CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0"})
	admin.expect("+OK")
	fast = ts.dial(t)
	if got := fast.do("GET", "big"); got != bulk(big) {
		t.Fatalf("GET big by a client that reads, no limit: %.40s", got)
	}
	if got := admin.do("DBSIZE"); got != ":1" {
		t.Fatalf("DBSIZE %s", got)
	}
}

// TestOutputBufferSoftLimit: over the soft limit for its seconds, a client is disconnected even
// though the server hears nothing more from it; a reply that drains in time is not.
func TestOutputBufferSoftLimit(t *testing.T) {
	ts := startServer(t, nil)
	admin := ts.dial(t)
	big := strings.Repeat("s", 24<<20)
	admin.send(cmd{"SET", "big", big}, cmd{"CONFIG", "SET", "client-output-buffer-limit", "normal 0 128kb 2"})
	admin.expect("+OK", "+OK")

	quick := ts.dial(t)
	quick.send(cmd{"GET", "big"})
	time.Sleep(500 * time.Millisecond)
	if got := quick.read(); got != bulk(big) {
		t.Fatalf("GET big read after 0.5s: %.40s", got)
	}

	slow := ts.dial(t)
	start := time.Now()
	slow.send(cmd{"GET", "big"})
	time.Sleep(4 * time.Second)
	if total, closed := drainUntilClosed(slow, 10*time.Second); !closed || total >= len(big) {
		t.Fatalf("the client over the soft limit for %v got the whole value", time.Since(start))
	}
	if got := infoField(t, admin, "stats", "client_output_buffer_limit_disconnections"); got != "1" {
		t.Fatalf("client_output_buffer_limit_disconnections %s, want 1", got)
	}
}

// TestOutputBufferLimitErrors: CONFIG SET refuses malformed limits with Redis's errors and
// keeps the old value; a class given alone changes only that class.
func TestOutputBufferLimitErrors(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	for _, bad := range []string{"normal 0 0", "nosuch 0 0 0", "normal x 0 0", "normal 0 0 -1", ""} {
		if got := c.do("CONFIG", "SET", "client-output-buffer-limit", bad); !strings.HasPrefix(got, "-ERR") {
			t.Fatalf("CONFIG SET client-output-buffer-limit %q: %s", bad, got)
		}
	}
	c.send(cmd{"CONFIG", "SET", "client-output-buffer-limit", "replica 1mb 512kb 30"})
	c.expect("+OK")
	want := `"normal 0 0 0 slave 1048576 524288 30 pubsub 33554432 8388608 60"`
	if got := c.do("CONFIG", "GET", "client-output-buffer-limit"); !strings.Contains(got, want) {
		t.Fatalf("CONFIG GET client-output-buffer-limit: %s, want %s", got, want)
	}
}
