package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The load generator speaks RESP2 itself over a raw net.Conn rather than through a client
// library: a pipeline is one buffer written with one system call, replies are parsed in place,
// and nothing the library would add (connection pools, retries, RESP3 negotiation) sits between
// the measured latency and the server.

// errProtocol marks a reply stream the generator cannot parse; the connection is unusable after.
var errProtocol = errors.New("lavik-bench: protocol error")

func appendArrayHeader(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendBulkHeader(b []byte, n int) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendBulkString(b []byte, s string) []byte {
	b = appendBulkHeader(b, len(s))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// appendBulkKey appends key k as a bulk string.
func appendBulkKey(b []byte, prefix string, k int) []byte {
	b = append(b, "$16\r\n"...)
	b = appendKey(b, prefix, k)
	return append(b, '\r', '\n')
}

// appendCommand appends a command of string arguments.
func appendCommand(b []byte, args ...string) []byte {
	b = appendArrayHeader(b, len(args))
	for _, a := range args {
		b = appendBulkString(b, a)
	}
	return b
}

// respReader reads RESP2 replies from a buffered stream.
type respReader struct {
	br      *bufio.Reader
	scratch []byte
}

func newRespReader(r io.Reader) *respReader {
	return &respReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// readLine returns the type byte of the next reply and the rest of its first line without CRLF.
// The slice is valid until the next read.
func (r *respReader) readLine() (byte, []byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return 0, nil, fmt.Errorf("%w: reply line longer than %d bytes", errProtocol, r.br.Size())
		}
		return 0, nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return 0, nil, fmt.Errorf("%w: malformed line %q", errProtocol, preview(line))
	}
	return line[0], line[1 : len(line)-2], nil
}

// parseLen parses a length or integer line.
func parseLen(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad integer %q", errProtocol, preview(b))
	}
	return n, nil
}

// readBulkBody reads a bulk string body of n bytes and its CRLF into the reader's scratch
// buffer; the slice is valid until the next call.
func (r *respReader) readBulkBody(n int64) ([]byte, error) {
	if n < 0 || n > maxValueSize+64 {
		return nil, fmt.Errorf("%w: bulk length %d", errProtocol, n)
	}
	need := int(n) + 2
	if cap(r.scratch) < need {
		r.scratch = make([]byte, need)
	}
	b := r.scratch[:need]
	if _, err := io.ReadFull(r.br, b); err != nil {
		return nil, err
	}
	if b[n] != '\r' || b[n+1] != '\n' {
		return nil, fmt.Errorf("%w: bulk string not followed by CRLF", errProtocol)
	}
	return b[:n], nil
}

// reply is a parsed RESP2 reply, for the paths where allocation does not matter.
type reply struct {
	kind  byte   // '+', '-', ':', '$', '*'
	str   string // simple string, error text or bulk body
	n     int64  // integer value
	null  bool   // nil bulk string or nil array
	elems []reply
}

func (p reply) isError() bool { return p.kind == '-' }

func (p reply) String() string {
	switch {
	case p.null:
		return "(nil)"
	case p.kind == ':':
		return strconv.FormatInt(p.n, 10)
	case p.kind == '*':
		parts := make([]string, len(p.elems))
		for i, e := range p.elems {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, " ") + "]"
	case p.kind == '-':
		return "-" + p.str
	}
	return p.str
}

// readReply reads one complete reply.
func (r *respReader) readReply() (reply, error) {
	t, line, err := r.readLine()
	if err != nil {
		return reply{}, err
	}
	switch t {
	case '+', '-':
		return reply{kind: t, str: string(line)}, nil
	case ':':
		n, err := parseLen(line)
		return reply{kind: t, n: n}, err
	case '$':
		n, err := parseLen(line)
		if err != nil {
			return reply{}, err
		}
		if n < 0 {
			return reply{kind: t, null: true}, nil
		}
		b, err := r.readBulkBody(n)
		return reply{kind: t, str: string(b)}, err
	case '*':
		n, err := parseLen(line)
		if err != nil {
			return reply{}, err
		}
		if n < 0 {
			return reply{kind: t, null: true}, nil
		}
		if n > 1<<20 {
			return reply{}, fmt.Errorf("%w: array of %d elements", errProtocol, n)
		}
		p := reply{kind: t, elems: make([]reply, n)}
		for i := range p.elems {
			if p.elems[i], err = r.readReply(); err != nil {
				return reply{}, err
			}
		}
		return p, nil
	}
	return reply{}, fmt.Errorf("%w: unexpected reply type %q", errProtocol, t)
}

// isUnsupported reports whether an error reply says the server does not know the command.
func isUnsupported(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "unknown command")
}

// adminClient is a one-connection client for setup and checks (PING, DBSIZE, probes): simple,
// with a deadline on every call, never on a measured path.
type adminClient struct {
	c       net.Conn
	r       *respReader
	timeout time.Duration
}

func dialAdmin(addr string, timeout time.Duration) (*adminClient, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &adminClient{c: c, r: newRespReader(c), timeout: timeout}, nil
}

func (a *adminClient) Close() error { return a.c.Close() }

// do sends one command and returns its reply; an error reply is a reply, not an error.
func (a *adminClient) do(args ...string) (reply, error) {
	if err := a.c.SetDeadline(time.Now().Add(a.timeout)); err != nil {
		return reply{}, err
	}
	if _, err := a.c.Write(appendCommand(nil, args...)); err != nil {
		return reply{}, err
	}
	return a.r.readReply()
}

// dbsize returns DBSIZE.
func (a *adminClient) dbsize() (int64, error) {
	p, err := a.do("DBSIZE")
	if err != nil {
		return 0, err
	}
	if p.kind != ':' {
		return 0, fmt.Errorf("DBSIZE replied %s", p)
	}
	return p.n, nil
}

// adminDo dials addr, runs one command and closes the connection.
func adminDo(addr string, timeout time.Duration, args ...string) (reply, error) {
	a, err := dialAdmin(addr, timeout)
	if err != nil {
		return reply{}, err
	}
	defer a.Close()
	return a.do(args...)
}
