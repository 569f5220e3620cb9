package test

// Shared helpers for the command-level end-to-end tests: a checker that runs one command through
// go-redis and compares the exact reply or error line, and a bare RESP connection for the cases
// go-redis hides (replies that must not arrive, connections the server closes, protocol switches).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

// processor is what *redis.Client and *redis.Conn have in common.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// checker runs commands on one client and fails t when a reply is not the expected one.
type checker struct {
	t   testing.TB
	ctx context.Context
	c   processor
}

func newChecker(t testing.TB, c processor) checker {
	return checker{t: t, ctx: harness.Ctx(t), c: c}
}

// startServer starts a server for one top-level test and returns it with a db 0 client.
func startServer(t *testing.T, args ...string) (*harness.Server, *redis.Client) {
	t.Helper()
	s := harness.Start(t, args...)
	return s, s.Client()
}

// subtest runs f as a subtest on a flushed server.
func subtest(t *testing.T, c *redis.Client, name string, f func(t *testing.T, k checker)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		k := newChecker(t, c)
		k.ok("FLUSHALL")
		f(t, k)
	})
}

// do runs one command and returns go-redis's decoding of the reply: int64, string, []any,
// map[any]any (RESP3), or redis.Nil as the error for a null reply.
func (k checker) do(args ...any) (any, error) {
	cmd := redis.NewCmd(k.ctx, args...)
	_ = k.c.Process(k.ctx, cmd)
	return cmd.Result()
}

// eq checks the reply of args against want; want nil means a null reply. Go ints in want are
// compared as int64 and []string as []any, so tables stay readable.
func (k checker) eq(want any, args ...any) {
	k.t.Helper()
	got, err := k.do(args...)
	if want == nil {
		if err != redis.Nil {
			k.t.Fatalf("%s: got %s, %v; want nil", cmdString(args), short(got), err)
		}
		return
	}
	if err != nil {
		k.t.Fatalf("%s: unexpected error %q; want %s", cmdString(args), err, short(want))
	}
	if w := normalize(want); !reflect.DeepEqual(got, w) {
		k.t.Fatalf("%s: got %s; want %s", cmdString(args), short(got), short(w))
	}
}

func (k checker) ok(args ...any) { k.t.Helper(); k.eq("OK", args...) }

// null checks that args gets a null reply.
func (k checker) null(args ...any) { k.t.Helper(); k.eq(nil, args...) }

// err checks that args fails with exactly the error line want (without the leading '-').
func (k checker) err(want string, args ...any) {
	k.t.Helper()
	got, err := k.do(args...)
	if err == nil || err == redis.Nil {
		k.t.Fatalf("%s: got %s, %v; want error %q", cmdString(args), short(got), err, want)
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		k.t.Fatalf("%s: got non-RESP error %v; want %q", cmdString(args), err, want)
	}
	if err.Error() != want {
		k.t.Fatalf("%s: got error %q; want %q", cmdString(args), err.Error(), want)
	}
}

// int runs args and returns its integer reply.
func (k checker) int(args ...any) int64 {
	k.t.Helper()
	got, err := k.do(args...)
	n, ok := got.(int64)
	if err != nil || !ok {
		k.t.Fatalf("%s: got %s, %v; want an integer", cmdString(args), short(got), err)
	}
	return n
}

// str runs args and returns its string reply.
func (k checker) str(args ...any) string {
	k.t.Helper()
	got, err := k.do(args...)
	s, ok := got.(string)
	if err != nil || !ok {
		k.t.Fatalf("%s: got %s, %v; want a string", cmdString(args), short(got), err)
	}
	return s
}

// arr runs args and returns its array reply.
func (k checker) arr(args ...any) []any {
	k.t.Helper()
	got, err := k.do(args...)
	a, ok := got.([]any)
	if err != nil || !ok {
		k.t.Fatalf("%s: got %s, %v; want an array", cmdString(args), short(got), err)
	}
	return a
}

// between checks that the integer reply of args lies in [lo, hi].
func (k checker) between(lo, hi int64, args ...any) int64 {
	k.t.Helper()
	n := k.int(args...)
	if n < lo || n > hi {
		k.t.Fatalf("%s: got %d; want within [%d, %d]", cmdString(args), n, lo, hi)
	}
	return n
}

func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

func cmdString(args []any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		s := fmt.Sprint(a)
		if len(s) > 40 {
			s = s[:40] + fmt.Sprintf("...(%d bytes)", len(s))
		}
		parts[i] = strconv.Quote(s)
	}
	return strings.Join(parts, " ")
}

// short formats a reply for a failure message without dumping megabytes.
func short(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 200 {
		s = s[:200] + fmt.Sprintf("...(%d chars)", len(s))
	}
	return s
}

// sortedStrings converts an array reply of strings to a sorted []string.
func sortedStrings(t testing.TB, a []any) []string {
	t.Helper()
	out := make([]string, len(a))
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			t.Fatalf("element %d of %s is not a string", i, short(a))
		}
		out[i] = s
	}
	sort.Strings(out)
	return out
}

// infoFields parses an INFO reply into field -> value, skipping section headers.
func infoFields(info string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if name, value, ok := strings.Cut(line, ":"); ok {
			m[name] = value
		}
	}
	return m
}

// infoSections returns the section headers ("# Server" -> "server") of an INFO reply in order.
func infoSections(info string) []string {
	var out []string
	for _, line := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(line, "# ") {
			out = append(out, strings.ToLower(strings.TrimPrefix(line, "# ")))
		}
	}
	return out
}

// RESP reply types of the bare connection; bulk strings are string, integers int64, nulls nil,
// arrays, sets and pushes []any.
type (
	respStatus string // +OK
	respError  string // -ERR ..., without the '-'
	respMap    []any  // RESP3 map as alternating keys and values, in wire order
)

// respConn is a bare RESP connection to a server.
type respConn struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

// dialRESP opens a bare connection that is closed when t ends.
func dialRESP(t testing.TB, s *harness.Server) *respConn {
	c := s.Conn()
	t.Cleanup(func() { c.Close() })
	return &respConn{t: t, c: c, br: bufio.NewReader(c)}
}

// send writes one command as an array of bulk strings without reading a reply.
func (r *respConn) send(args ...string) {
	r.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	r.sendRaw(b.String())
}

func (r *respConn) sendRaw(s string) {
	r.t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// read reads one reply, failing the test on I/O errors.
func (r *respConn) read() any {
	r.t.Helper()
	v, err := r.readErr()
	if err != nil {
		r.t.Fatalf("read reply: %v", err)
	}
	return v
}

// do sends one command and reads its reply.
func (r *respConn) do(args ...string) any {
	r.t.Helper()
	r.send(args...)
	return r.read()
}

// expect sends one command and compares its reply with want.
func (r *respConn) expect(want any, args ...string) {
	r.t.Helper()
	if got := r.do(args...); !reflect.DeepEqual(got, want) {
		r.t.Fatalf("%q: got %s; want %s", args, short(got), short(want))
	}
}

// expectClosed checks that the server closes the connection within d without sending anything.
func (r *respConn) expectClosed(d time.Duration) {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(d))
	b, err := r.br.ReadByte()
	if err == nil {
		r.t.Fatalf("got byte %q; want the connection closed", b)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatalf("connection still open after %v", d)
	}
}

func (r *respConn) readErr() (any, error) {
	r.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := r.br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("bad reply line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+':
		return respStatus(body), nil
	case '-':
		return respError(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '_':
		return nil, nil
	case '#':
		return body == "t", nil
	case ',':
		return strconv.ParseFloat(body, 64)
	case '(':
		return body, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r.br, buf); err != nil {
			return nil, err
		}
		s := string(buf[:n])
		if kind == '=' {
			s = s[4:] // drop the "txt:" format prefix of a verbatim string
		}
		if kind == '!' {
			return respError(s), nil
		}
		return s, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = r.readErr(); err != nil {
				return nil, err
			}
		}
		if kind == '|' { // attributes precede the reply they describe
			return r.readErr()
		}
		if kind == '%' {
			return respMap(out), nil
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown reply type in %q", line)
}

// pairs converts a flat key/value array (RESP2 map) or respMap to a Go map with string keys.
func pairs(t testing.TB, v any) map[string]any {
	t.Helper()
	var flat []any
	switch x := v.(type) {
	case []any:
		flat = x
	case respMap:
		flat = x
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = e
		}
		return m
	default:
		t.Fatalf("not a map or flat array: %s", short(v))
	}
	if len(flat)%2 != 0 {
		t.Fatalf("odd number of elements in %s", short(v))
	}
	m := map[string]any{}
	for i := 0; i < len(flat); i += 2 {
		m[fmt.Sprint(flat[i])] = flat[i+1]
	}
	return m
}
