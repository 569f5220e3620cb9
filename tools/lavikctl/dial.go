package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// peer is what a gRPC connection leads to, for messages: "data node" or "lavik-meta member",
// and the question to ask when it cannot be reached.
type peer struct {
	kind string
	// hint is the next step when the address does not answer; %s is the port.
	hint string
	// wrongPort is the next step when something answers there but not in gRPC; %s is the port.
	wrongPort string
}

var (
	dataPeer = peer{kind: "data node", hint: "is lavik-data running with --admin-port %s?",
		wrongPort: "%s may be lavik-data's RESP port: give its --admin-port instead"}
	metaPeer = peer{kind: "lavik-meta member", hint: "is lavik-meta running, and is %s the port of its client (gRPC) address?",
		wrongPort: "%s may be another service's port: give lavik-meta's client (gRPC) address"}
)

// conn is a gRPC client connection to one address that keeps its last dial error, so that a
// failed call can say why in words an operator acts on ("connection refused", "no such host")
// rather than gRPC's transport message. Rejected: matching gRPC's error strings, which are not
// part of its API.
type conn struct {
	addr string
	peer peer
	cc   *grpc.ClientConn

	mu      sync.Mutex
	dialErr error // the last dial's error; nil after a dial that worked
}

// dial returns a client connection to addr (host:port); nothing is sent before the first call.
func dial(addr string, p peer) (*conn, error) {
	c := &conn{addr: addr, peer: p}
	dialer := func(ctx context.Context, a string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", a)
		c.mu.Lock()
		c.dialErr = err
		c.mu.Unlock()
		return nc, err
	}
	// passthrough: the address goes to the dialer as given, with no resolver in between whose
	// errors would read differently from the dialer's.
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialer))
	if err != nil {
		return nil, usageErrorf("%s %s: %v", p.kind, addr, err)
	}
	c.cc = cc
	return c, nil
}

func (c *conn) Close() { c.cc.Close() }

func (c *conn) lastDialErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dialErr
}

// callError turns the error of a call (what: "Status", "Rebuild") into an exitError whose
// message says what went wrong and what to do next, and whose code is exitTimeout for a call
// that ran out of time and exitFailed otherwise.
func (c *conn) callError(what string, timeout time.Duration, err error) *exitError {
	_, port, _ := net.SplitHostPort(c.addr)
	hint := fmt.Sprintf(c.peer.hint, port)
	st, _ := status.FromError(err)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || st.Code() == codes.DeadlineExceeded:
		if d := c.lastDialErr(); d != nil {
			return &exitError{code: exitTimeout, err: fmt.Errorf("cannot reach %s %s within %v (%s): %s", c.peer.kind, c.addr, timeout, dialReason(d), hint)}
		}
		return &exitError{code: exitTimeout, err: fmt.Errorf("%s %s did not answer %s within %v: is it overloaded or stopped? (raise --timeout to wait longer)", c.peer.kind, c.addr, what, timeout)}
	case errors.Is(err, context.Canceled) || st.Code() == codes.Canceled:
		return &exitError{code: exitFailed, err: fmt.Errorf("%s %s: %s interrupted", c.peer.kind, c.addr, what)}
	case st.Code() == codes.Unavailable:
		if d := c.lastDialErr(); d != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("cannot reach %s %s (%s): %s", c.peer.kind, c.addr, dialReason(d), hint)}
		}
		if strings.Contains(st.Message(), "transport") || strings.Contains(st.Message(), "connection") {
			// Something listens there but does not speak gRPC: most often a RESP port.
			return &exitError{code: exitFailed, err: fmt.Errorf("%s %s does not speak gRPC (%s): %s",
				c.peer.kind, c.addr, st.Message(), fmt.Sprintf(c.peer.wrongPort, port))}
		}
		return &exitError{code: exitFailed, err: fmt.Errorf("%s %s: %s %s: %s", c.peer.kind, c.addr, what, codeName(st.Code()), st.Message())}
	case st.Code() == codes.Unimplemented:
		return &exitError{code: exitFailed, err: fmt.Errorf("%s %s does not implement %s (%s): is %s the right service's port, and its version recent enough?",
			c.peer.kind, c.addr, what, st.Message(), port)}
	default:
		return &exitError{code: exitFailed, err: fmt.Errorf("%s %s refused %s: %s: %s", c.peer.kind, c.addr, what, codeName(st.Code()), st.Message())}
	}
}

// dialReason names a dial error the way an operator searches for it.
func dialReason(err error) string {
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return "cannot resolve " + dns.Name + ": " + dns.Err
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "connect timed out"
	}
	return err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// codeName is a gRPC code as the specification spells it (FAILED_PRECONDITION), the form the
// .proto files' comments and other gRPC tools use.
func codeName(c codes.Code) string {
	var b strings.Builder
	prevLower := false
	for _, r := range c.String() {
		if unicode.IsUpper(r) && prevLower {
			b.WriteByte('_')
		}
		prevLower = unicode.IsLower(r)
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}
