package sentinel

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lavikdb/lavik/services/meta/fsm"
)

// topoSource is a Source whose topology the test changes (the subject here is the Sentinel
// port's protocol; the real member's topology is exercised end to end in test/meta_test.go).
type topoSource struct {
	mu      sync.Mutex
	primary string
}

func (s *topoSource) Topology() (fsm.Topology, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := fsm.GroupView{Group: fsm.Group{ID: "g", Epoch: 3, Primary: "a"},
		PrimaryNode: &fsm.Node{ID: "a", DataAddress: s.primary, Role: fsm.RolePrimary},
		Followers:   []fsm.Node{{ID: "b", DataAddress: "10.0.0.2:6379", Role: fsm.RoleFollower}}}
	return fsm.Topology{Version: 1, Groups: []fsm.GroupView{g}}, nil
}
func (s *topoSource) Members() ([]fsm.Member, error) {
	return []fsm.Member{{ID: 1, Name: "meta-1", ClientAddress: "10.0.0.1:7481"}, {ID: 2, Name: "meta-2", ClientAddress: "10.0.0.2:7481"}}, nil
}
func (s *topoSource) ID() uint64 { return 1 }
func (s *topoSource) Failover(ctx context.Context, group string) error {
	if group != "g" {
		return errors.New("no such group")
	}
	return nil
}

func (s *topoSource) set(addr string) {
	s.mu.Lock()
	s.primary = addr
	s.mu.Unlock()
}

type rc struct {
	c  net.Conn
	br *bufio.Reader
}

func (r *rc) send(args ...string) {
	var b strings.Builder
	b.WriteString("*" + itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	r.c.Write([]byte(b.String()))
}

func itoa(n int) string { return strconv.Itoa(n) }

// read returns one reply flattened to its lines' contents.
func (r *rc) read(t *testing.T) []string {
	t.Helper()
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := r.br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	line = strings.TrimRight(line, "\r\n")
	switch line[0] {
	case '*':
		n := 0
		for _, ch := range line[1:] {
			if ch == '-' {
				return []string{"(nil)"}
			}
			n = n*10 + int(ch-'0')
		}
		var out []string
		for range n {
			out = append(out, r.read(t)...)
		}
		return out
	case '$':
		n := 0
		for _, ch := range line[1:] {
			n = n*10 + int(ch-'0')
		}
		b := make([]byte, n+2)
		io.ReadFull(r.br, b)
		return []string{string(b[:n])}
	}
	if line[0] == ':' {
		return []string{line[1:]}
	}
	return []string{line}
}

// TestSentinelPort: the commands Sentinel clients send, and +switch-master to subscribers (by
// channel and by pattern) when the group's primary changes.
func TestSentinelPort(t *testing.T) {
	src := &topoSource{primary: "10.0.0.1:6379"}
	s, err := Serve("127.0.0.1:0", src, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dial := func() *rc {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return &rc{c: c, br: bufio.NewReader(c)}
	}
	c := dial()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "+PONG"},
		{[]string{"SENTINEL", "get-master-addr-by-name", "g"}, "10.0.0.1 6379"},
		{[]string{"SENTINEL", "get-master-addr-by-name", "nope"}, "(nil)"},
		{[]string{"SENTINEL", "master", "nope"}, "-ERR No such master with that name"},
		{[]string{"SENTINEL", "failover", "g"}, "+OK"},
		{[]string{"SENTINEL", "myid"}, "0000000000000000000000000000000000000001"},
		{[]string{"SENTINEL", "bogus"}, "-ERR Unknown sentinel subcommand 'bogus'"},
	} {
		c.send(tc.args...)
		if got := strings.Join(c.read(t), " "); got != tc.want {
			t.Fatalf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
	c.send("SENTINEL", "replicas", "g")
	if got := strings.Join(c.read(t), " "); !strings.Contains(got, "ip 10.0.0.2 port 6379") || !strings.Contains(got, "master-host 10.0.0.1") {
		t.Fatalf("replicas: %q", got)
	}
	c.send("SENTINEL", "sentinels", "g")
	if got := strings.Join(c.read(t), " "); !strings.Contains(got, "ip 10.0.0.2 port 7481") || strings.Contains(got, "10.0.0.1:7481") {
		t.Fatalf("sentinels (the others only): %q", got)
	}
	sub, psub := dial(), dial()
	sub.send("SUBSCRIBE", "+switch-master")
	if got := strings.Join(sub.read(t), " "); got != "subscribe +switch-master 1" {
		t.Fatalf("subscribe: %q", got)
	}
	psub.send("PSUBSCRIBE", "*")
	psub.read(t)
	src.set("10.0.0.2:6379")
	if got := strings.Join(sub.read(t), " "); got != "message +switch-master g 10.0.0.1 6379 10.0.0.2 6379" {
		t.Fatalf("switch-master message: %q", got)
	}
	if got := strings.Join(psub.read(t), " "); got != "pmessage * +switch-master g 10.0.0.1 6379 10.0.0.2 6379" {
		t.Fatalf("switch-master pmessage: %q", got)
	}
	if !matchGlob("+switch-*", "+switch-master") || matchGlob("+sdown", "+switch-master") || !matchGlob("?x*", "ax") {
		t.Fatal("glob")
	}
}
