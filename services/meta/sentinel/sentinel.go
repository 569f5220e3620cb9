// Package sentinel answers, on a RESP port of each lavik-meta member, the Redis Sentinel
// commands that clients use to find the primary and to follow a failover, so that go-redis's
// FailoverClient, redis-py's Sentinel and `redis-cli -p <port>` work against lavik-meta with no
// change: SENTINEL get-master-addr-by-name, masters, master, replicas (slaves), sentinels,
// failover, ckquorum, myid; PING, HELLO-less RESP2, SUBSCRIBE/PSUBSCRIBE and the +switch-master
// message published when a shard group's primary changes. A master name is a shard group id.
//
// The answers come from the topology the member has applied (a stale read: a member behind by
// a decision answers what it knows, as a Sentinel that has not yet seen a failover does);
// SENTINEL failover asks the leader for a switchover through Promote. Rejected: a Sentinel of
// our own with its own voting (meta's raft group already decides).
package sentinel

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/services/meta/fsm"
)

// Source is what the Sentinel port reads and asks of its member.
type Source interface {
	Topology() (fsm.Topology, error)
	Members() ([]fsm.Member, error)
	// Failover asks for a switchover of group (Promote with the best follower).
	Failover(ctx context.Context, group string) error
	// ID is the member's id, as SENTINEL myid reports it (40 hex characters in Redis).
	ID() uint64
}

// Server is a member's Sentinel port.
type Server struct {
	src Source
	log *slog.Logger
	ln  net.Listener

	mu    sync.Mutex
	subs  map[*conn]struct{}
	last  map[string]string // group -> primary data address, as last published
	stop  chan struct{}
	wg    sync.WaitGroup
	conns map[*conn]struct{}
}

type conn struct {
	nc       net.Conn
	wmu      sync.Mutex
	channels map[string]bool // SUBSCRIBE
	patterns map[string]bool // PSUBSCRIBE
}

// Serve listens on addr and serves until Close.
func Serve(addr string, src Source, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sentinel: %w", err)
	}
	s := &Server{src: src, log: log, ln: ln, subs: map[*conn]struct{}{}, last: map[string]string{}, stop: make(chan struct{}),
		conns: map[*conn]struct{}{}}
	if t, err := src.Topology(); err == nil {
		for _, g := range t.Groups {
			if g.PrimaryNode != nil {
				s.last[g.ID] = g.PrimaryNode.DataAddress
			}
		}
	}
	s.wg.Add(2)
	go s.accept()
	go s.watch()
	return s, nil
}

// Addr is where the port listens.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the port.
func (s *Server) Close() {
	close(s.stop)
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		c := &conn{nc: nc, channels: map[string]bool{}, patterns: map[string]bool{}}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// watch publishes +switch-master when a group's primary changes.
func (s *Server) watch() {
	defer s.wg.Done()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		topo, err := s.src.Topology()
		if err != nil {
			continue
		}
		for _, g := range topo.Groups {
			if g.PrimaryNode == nil {
				continue
			}
			s.mu.Lock()
			old := s.last[g.ID]
			s.last[g.ID] = g.PrimaryNode.DataAddress
			s.mu.Unlock()
			if old == g.PrimaryNode.DataAddress || old == "" {
				continue
			}
			oh, op := splitAddr(old)
			nh, np := splitAddr(g.PrimaryNode.DataAddress)
			s.publish("+switch-master", fmt.Sprintf("%s %s %s %s %s", g.ID, oh, op, nh, np))
		}
	}
}

func splitAddr(a string) (string, string) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return a, "0"
	}
	return h, p
}

// publish sends a message to the subscribers of channel (and of matching patterns).
func (s *Server) publish(channel, msg string) {
	s.mu.Lock()
	subs := make([]*conn, 0, len(s.subs))
	for c := range s.subs {
		subs = append(subs, c)
	}
	s.mu.Unlock()
	for _, c := range subs {
		w := resp.NewWriter()
		c.wmu.Lock()
		if c.channels[channel] {
			w.Array(3)
			w.BulkString("message")
			w.BulkString(channel)
			w.BulkString(msg)
		}
		for p := range c.patterns {
			if matchGlob(p, channel) {
				w.Array(4)
				w.BulkString("pmessage")
				w.BulkString(p)
				w.BulkString(channel)
				w.BulkString(msg)
			}
		}
		if w.Len() > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			c.nc.Write(w.Bytes())
		}
		c.wmu.Unlock()
	}
}

// matchGlob matches Redis's glob subset clients use for Sentinel channels: * and ?.
func matchGlob(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for i := len(s); i >= 0; i-- {
				if matchGlob(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return s == ""
}

func (s *Server) serve(c *conn) {
	defer s.wg.Done()
	defer func() {
		c.nc.Close()
		s.mu.Lock()
		delete(s.conns, c)
		delete(s.subs, c)
		s.mu.Unlock()
	}()
	rd := resp.NewReader(c.nc, resp.Limits{MaxBulkLen: 1 << 20, MaxQueryBuffer: 4 << 20})
	var cmds []resp.Command
	w := resp.NewWriter()
	for {
		var err error
		cmds, err = rd.ReadCommands(cmds, 64)
		if err != nil {
			if err != io.EOF {
				s.log.Debug("sentinel: connection closed", "err", err)
			}
			return
		}
		w.Reset()
		for _, cmd := range cmds {
			s.do(c, w, cmd.Args)
		}
		c.wmu.Lock()
		_, err = c.nc.Write(w.Bytes())
		c.wmu.Unlock()
		if err != nil {
			return
		}
	}
}

func (s *Server) do(c *conn, w *resp.Writer, args [][]byte) {
	name := strings.ToLower(string(args[0]))
	switch name {
	case "ping":
		if len(c.channels)+len(c.patterns) > 0 {
			w.Array(2)
			w.BulkString("pong")
			w.BulkString("")
			return
		}
		w.Simple("PONG")
	case "client", "auth", "select":
		// go-redis and redis-py send CLIENT SETNAME / SETINFO; there is no password.
		w.Simple("OK")
	case "hello":
		w.Error("NOPROTO this Sentinel port speaks RESP2")
	case "info":
		s.info(w)
	case "role":
		w.Array(2)
		w.BulkString("sentinel")
		t, _ := s.src.Topology()
		w.Array(len(t.Groups))
		for _, g := range t.Groups {
			w.BulkString(g.ID)
		}
	case "subscribe", "psubscribe":
		s.subscribe(c, w, name == "psubscribe", args[1:])
	case "unsubscribe", "punsubscribe":
		s.unsubscribe(c, w, name == "punsubscribe", args[1:])
	case "sentinel":
		if len(args) < 2 {
			w.Error("ERR wrong number of arguments for 'sentinel' command")
			return
		}
		s.sentinel(w, strings.ToLower(string(args[1])), args[2:])
	default:
		w.Error(fmt.Sprintf("ERR unknown command '%s' (this is lavik-meta's Sentinel port)", args[0]))
	}
}

func (s *Server) subscribe(c *conn, w *resp.Writer, pattern bool, names [][]byte) {
	s.mu.Lock()
	s.subs[c] = struct{}{}
	s.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for _, n := range names {
		kind := "subscribe"
		if pattern {
			c.patterns[string(n)] = true
			kind = "psubscribe"
		} else {
			c.channels[string(n)] = true
		}
		w.Array(3)
		w.BulkString(kind)
		w.Bulk(n)
		w.Int(int64(len(c.channels) + len(c.patterns)))
	}
}

func (s *Server) unsubscribe(c *conn, w *resp.Writer, pattern bool, names [][]byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	set := c.channels
	kind := "unsubscribe"
	if pattern {
		set, kind = c.patterns, "punsubscribe"
	}
	if len(names) == 0 {
		for n := range set {
			names = append(names, []byte(n))
		}
	}
	for _, n := range names {
		delete(set, string(n))
		w.Array(3)
		w.BulkString(kind)
		w.Bulk(n)
		w.Int(int64(len(c.channels) + len(c.patterns)))
	}
}

// group finds a master (shard group) by name.
func (s *Server) group(name string) (fsm.GroupView, bool) {
	t, err := s.src.Topology()
	if err != nil {
		return fsm.GroupView{}, false
	}
	for _, g := range t.Groups {
		if g.ID == name {
			return g, true
		}
	}
	return fsm.GroupView{}, false
}

func (s *Server) sentinel(w *resp.Writer, sub string, args [][]byte) {
	needName := func() (fsm.GroupView, bool) {
		if len(args) < 1 {
			w.Error("ERR wrong number of arguments for 'sentinel|" + sub + "' command")
			return fsm.GroupView{}, false
		}
		g, ok := s.group(string(args[0]))
		if !ok {
			w.Error("ERR No such master with that name")
		}
		return g, ok
	}
	switch sub {
	case "get-master-addr-by-name":
		if len(args) < 1 {
			w.Error("ERR wrong number of arguments for 'sentinel|get-master-addr-by-name' command")
			return
		}
		g, ok := s.group(string(args[0]))
		if !ok || g.PrimaryNode == nil {
			w.NullArray()
			return
		}
		h, p := splitAddr(g.PrimaryNode.DataAddress)
		w.Array(2)
		w.BulkString(h)
		w.BulkString(p)
	case "masters":
		t, _ := s.src.Topology()
		w.Array(len(t.Groups))
		for _, g := range t.Groups {
			writeMaster(w, g, s.memberCount())
		}
	case "master":
		if g, ok := needName(); ok {
			writeMaster(w, g, s.memberCount())
		}
	case "replicas", "slaves":
		if g, ok := needName(); ok {
			var fs []fsm.Node
			for _, f := range g.Followers {
				if f.Role == fsm.RoleFollower {
					fs = append(fs, f)
				}
			}
			w.Array(len(fs))
			for _, f := range fs {
				h, p := splitAddr(f.DataAddress)
				flags := "slave"
				kvs := [][2]string{{"name", f.DataAddress}, {"ip", h}, {"port", p}, {"runid", f.ID}, {"flags", flags}}
				kvs = append(kvs, linkFields...)
				kvs = append(kvs, [2]string{"role-reported", "slave"}, [2]string{"master-link-down-time", "0"},
					[2]string{"master-link-status", "ok"}, [2]string{"slave-priority", "100"}, [2]string{"slave-repl-offset", "0"})
				if g.PrimaryNode != nil {
					mh, mp := splitAddr(g.PrimaryNode.DataAddress)
					kvs = append(kvs, [2]string{"master-host", mh}, [2]string{"master-port", mp})
				}
				writeKVs(w, kvs)
			}
		}
	case "sentinels":
		if _, ok := needName(); ok {
			mem, _ := s.src.Members()
			var others []fsm.Member
			for _, m := range mem {
				if m.ID != s.src.ID() {
					others = append(others, m)
				}
			}
			w.Array(len(others))
			for _, m := range others {
				h, p := splitAddr(m.ClientAddress)
				writeKVs(w, [][2]string{{"name", m.Name}, {"ip", h}, {"port", p}, {"runid", runID(m.ID)}, {"flags", "sentinel"}})
			}
		}
	case "failover":
		if g, ok := needName(); ok {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.src.Failover(ctx, g.ID); err != nil {
				w.Error("NOGOODSLAVE " + strings.ReplaceAll(err.Error(), "\n", " "))
				return
			}
			w.Simple("OK")
		}
	case "ckquorum":
		if _, ok := needName(); ok {
			mem, _ := s.src.Members()
			w.Simple(fmt.Sprintf("OK %d usable Sentinels. Quorum and failover authorization can be reached", len(mem)))
		}
	case "myid":
		w.BulkString(runID(s.src.ID()))
	default:
		w.Error("ERR Unknown sentinel subcommand '" + sub + "'")
	}
}

func runID(id uint64) string { return fmt.Sprintf("%040x", id) }

// memberCount is how many meta members there are (at least this one).
func (s *Server) memberCount() int {
	mem, _ := s.src.Members()
	return max(len(mem), 1)
}

// linkFields are the fields of Redis Sentinel's per-instance state that describe its own
// link to the instance (pings, pending commands). lavik-meta has no such link: it hears
// heartbeats instead. Clients parse these fields (redis-py converts them to integers), so
// they are there, at their idle values.
var linkFields = [][2]string{{"link-pending-commands", "0"}, {"link-refcount", "1"}, {"last-ping-sent", "0"},
	{"last-ok-ping-reply", "0"}, {"last-ping-reply", "0"}, {"info-refresh", "0"}, {"role-reported-time", "0"}}

// writeMaster writes a group as SENTINEL MASTER does, with every field Redis Sentinel gives;
// members is the meta group's size (a Sentinel's other Sentinels are the other members).
func writeMaster(w *resp.Writer, g fsm.GroupView, members int) {
	kvs := [][2]string{{"name", g.ID}}
	if g.PrimaryNode != nil {
		h, p := splitAddr(g.PrimaryNode.DataAddress)
		kvs = append(kvs, [2]string{"ip", h}, [2]string{"port", p}, [2]string{"runid", g.PrimaryNode.ID}, [2]string{"flags", "master"})
	} else {
		kvs = append(kvs, [2]string{"ip", ""}, [2]string{"port", "0"}, [2]string{"runid", ""}, [2]string{"flags", "master,o_down"})
	}
	kvs = append(kvs, linkFields...)
	kvs = append(kvs, [2]string{"role-reported", "master"}, [2]string{"config-epoch", strconv.FormatUint(g.Epoch, 10)},
		[2]string{"num-slaves", strconv.Itoa(len(g.Followers))}, [2]string{"num-other-sentinels", strconv.Itoa(members - 1)},
		[2]string{"quorum", strconv.Itoa(members/2 + 1)}, [2]string{"failover-timeout", "0"}, [2]string{"parallel-syncs", "1"})
	writeKVs(w, kvs)
}

func writeKVs(w *resp.Writer, kvs [][2]string) {
	w.Array(2 * len(kvs))
	for _, kv := range kvs {
		w.BulkString(kv[0])
		w.BulkString(kv[1])
	}
}

func (s *Server) info(w *resp.Writer) {
	t, _ := s.src.Topology()
	var b strings.Builder
	b.WriteString("# Server\r\nredis_version:7.0.15\r\nredis_mode:sentinel\r\n\r\n# Sentinel\r\n")
	fmt.Fprintf(&b, "sentinel_masters:%d\r\n", len(t.Groups))
	for i, g := range t.Groups {
		addr, status := "", "odown"
		if g.PrimaryNode != nil {
			addr, status = g.PrimaryNode.DataAddress, "ok"
		}
		fmt.Fprintf(&b, "master%d:name=%s,status=%s,address=%s,slaves=%d,sentinels=3\r\n", i, g.ID, status, addr, len(g.Followers))
	}
	w.BulkString(b.String())
}
