package commands

import (
	"net"
	"strconv"
	"strings"
	"time"
)

// Replication's commands: REPLICAOF (SLAVEOF), ROLE, WAIT, and what a follower says to its
// primary (REPLCONF, PSYNC, SYNC). The work is package repl's, behind Replication.

// Replication is what the commands need of the node's replication (package repl).
type Replication interface {
	// ReplicaOf makes the node follow host:port; host "" makes it a primary (REPLICAOF NO ONE).
	ReplicaOf(host string, port int) error
	// Follower reports whether the node follows a primary: clients' writes are refused.
	Follower() bool
	// Writable reports whether the node takes clients' writes now: not a follower, and, under
	// meta, holding a lease. It is asked before every write and again before a write's reply.
	Writable() bool
	// Resync makes a follower copy everything from its primary again (a rebuild): it
	// reconnects and asks for a full resync, whose progress INFO replication shows.
	Resync() error
	// Sync serves the PSYNC or SYNC args of follower cl on conn, which it owns from then on;
	// ready is closed once nothing else reads the connection.
	Sync(conn net.Conn, ready <-chan struct{}, cl *Client, args [][]byte)
	// Wait waits until n followers acknowledged offset, or timeout (0: none) passes, and
	// returns how many did.
	Wait(offset int64, n int, timeout time.Duration) int
	// Role is ROLE's reply.
	Role() RoleInfo
	// Info writes INFO's replication section.
	Info(b *strings.Builder)
	// Stats are INFO stats' replication counters.
	Stats() ReplStats
	// KillLinks closes the links to followers (replicas) or to the primary, which the
	// follower then connects again (CLIENT KILL TYPE replica|master); it returns how many.
	KillLinks(replicas bool) int
}

// RoleInfo is what ROLE says.
type RoleInfo struct {
	// Managed: lavik-meta decides the role; clients' role commands are refused (ErrManaged).
	Managed   bool
	Follower  bool
	Offset    int64
	Followers []FollowerInfo // of a primary
	// Of a follower: its primary and the link's state (connect, connecting, sync, connected).
	Host  string
	Port  int
	State string
}

// FollowerInfo is one follower as its primary sees it.
type FollowerInfo struct {
	IP     string
	Port   int
	Offset int64
}

// ReplStats are counters of INFO stats.
type ReplStats struct {
	SyncFull, SyncPartialOK, SyncPartialErr uint64
}

// ErrReadOnly is a client's write on a follower.
var ErrReadOnly = Error("READONLY You can't write against a read only replica.")

// ErrNoLease is a client's write on a primary that holds no lease from meta (it cannot reach
// meta, or meta is handing over to another node). READONLY, so that clients re-discover the
// primary as they do after a Redis failover.
var ErrNoLease = Error("READONLY lavik: this primary holds no lease from meta (it cannot reach meta, or another node is taking over)")

// ErrManaged refuses a client's role command (REPLICAOF, SLAVEOF, LAVIK.RESYNC) on a node whose
// role lavik-meta manages.
var ErrManaged = Error("ERR this node's role is managed by lavik-meta: use lavikctl promote to change the primary and lavikctl rebuild to copy a follower again")

// ErrLeaseLost replaces the reply of a write whose lease ran out before it was acknowledged.
var ErrLeaseLost = Error("READONLY lavik: this primary's lease ran out before the write was acknowledged; it may or may not have been applied")

func init() {
	register(
		&Command{Name: "replicaof", Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagStale, Group: "server",
			Since: "5.0.0", Complexity: "O(1)", Summary: "Configures a server as replica of another, or promotes it to a master.", Handler: replicaofCmd},
		&Command{Name: "slaveof", Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagStale, Group: "server",
			Since: "1.0.0", Complexity: "O(1)", Summary: "Sets a Redis server as a replica of another, or promotes it to being a master.", Handler: replicaofCmd},
		&Command{Name: "lavik.resync", Arity: 1, Flags: FlagAdmin | FlagNoScript | FlagStale, Group: "server",
			Since: "0.3.0", Complexity: "O(N) in the size of the data, in the background", Summary: "Rebuilds a follower: it copies everything from its primary again (a full resync); INFO replication shows the progress.", Handler: resyncCmd},
		&Command{Name: "role", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast, Group: "server",
			Since: "2.8.12", Complexity: "O(1)", Summary: "Returns the replication role.", Handler: roleCmd},
		&Command{Name: "wait", Arity: 3, Flags: FlagNoScript, Group: "generic",
			Since: "3.0.0", Complexity: "O(1)", Summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", Handler: waitCmd},
		&Command{Name: "replconf", Arity: -1, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Group: "server",
			Since: "3.0.0", Complexity: "O(1)", Summary: "An internal command for configuring the replication stream.", Handler: replconfCmd},
		&Command{Name: "psync", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagNoMulti, Group: "server",
			Since: "2.8.0", Complexity: "O(N) for a full resync, N the size of the data", Summary: "An internal command used in replication.", Handler: syncCmd},
		&Command{Name: "sync", Arity: 1, Flags: FlagAdmin | FlagNoScript | FlagNoMulti, Group: "server",
			Since: "1.0.0", Complexity: "O(N), N the size of the data", Summary: "An internal command used in replication.", Handler: syncCmd},
	)
}

func replicaofCmd(c *Ctx) {
	host, portArg := string(c.Args[1]), c.Args[2]
	if strings.EqualFold(host, "no") && strings.EqualFold(string(portArg), "one") {
		if err := c.Repl.ReplicaOf("", 0); err != nil {
			c.Err(err)
			return
		}
		c.OK()
		return
	}
	port, ok := ParseInt(portArg)
	if !ok || port < 0 || port > 65535 {
		c.Err(Error("ERR Invalid master port"))
		return
	}
	if r := c.Repl.Role(); r.Managed {
		c.Err(ErrManaged)
		return
	} else if r.Follower && r.Host == host && r.Port == int(port) {
		c.W.Simple("OK Already connected to specified master")
		return
	}
	if err := c.Repl.ReplicaOf(host, int(port)); err != nil {
		c.Err(err)
		return
	}
	c.OK()
}

func resyncCmd(c *Ctx) {
	if err := c.Repl.Resync(); err != nil {
		c.Err(err)
		return
	}
	c.OK()
}

func roleCmd(c *Ctx) {
	r := c.Repl.Role()
	if r.Follower {
		c.W.Array(5)
		c.W.BulkString("slave")
		c.W.BulkString(r.Host)
		c.W.Int(int64(r.Port))
		c.W.BulkString(r.State)
		c.W.Int(r.Offset)
		return
	}
	c.W.Array(3)
	c.W.BulkString("master")
	c.W.Int(r.Offset)
	c.W.Array(len(r.Followers))
	for _, f := range r.Followers {
		c.W.Array(3)
		c.W.BulkString(f.IP)
		c.W.BulkString(strconv.Itoa(f.Port))
		c.W.BulkString(strconv.FormatInt(f.Offset, 10))
	}
}

func waitCmd(c *Ctx) {
	n, ok := ParseInt(c.Args[1])
	if !ok {
		c.Err(ErrNotInt)
		return
	}
	ms, ok := ParseInt(c.Args[2])
	if !ok {
		c.Err(Error("ERR timeout is not an integer or out of range"))
		return
	}
	if ms < 0 {
		c.Err(Error("ERR timeout is negative"))
		return
	}
	if c.Repl.Follower() {
		c.Err(Error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."))
		return
	}
	c.W.Int(int64(c.Repl.Wait(c.Sess.LastChange(), int(min(max(n, 0), 1<<20)), time.Duration(ms)*time.Millisecond)))
}

func replconfCmd(c *Ctx) {
	if len(c.Args)%2 == 0 {
		c.Err(ErrSyntax)
		return
	}
	for i := 1; i < len(c.Args); i += 2 {
		opt, val := strings.ToLower(string(c.Args[i])), c.Args[i+1]
		switch opt {
		case "listening-port":
			p, ok := ParseInt(val)
			if !ok || p < 0 || p > 65535 {
				c.Err(Error("ERR Invalid listening port"))
				return
			}
			c.Client.ReplPort = int(p)
		case "ip-address":
			c.Client.ReplIP = string(val)
		case "capa", "rdb-only", "rdb-filter-only":
		case "ack", "fack", "getack":
			// A follower's acknowledgements arrive on its replication link (package repl),
			// never here; Redis ignores them from a client too.
			return
		default:
			c.Err(Error("ERR Unrecognized REPLCONF option: " + string(c.Args[i])))
			return
		}
	}
	c.OK()
}

// errNoHijack is a connection that cannot be handed to replication.
const errNoHijack Error = "ERR this connection cannot serve a replication stream"

func syncCmd(c *Ctx) {
	if c.Repl.Follower() {
		// Lavik serves no chained followers yet.
		c.Err(Error("ERR Replica can't serve replicas: this node follows a primary (REPLICAOF NO ONE first)"))
		return
	}
	if c.Client.Hijack == nil {
		c.Err(errNoHijack)
		return
	}
	args := make([][]byte, len(c.Args))
	for i, a := range c.Args {
		args[i] = append([]byte(nil), a...)
	}
	conn, ready, err := c.Client.Hijack()
	if err != nil {
		c.Err(Error("ERR " + err.Error()))
		return
	}
	go c.Repl.Sync(conn, ready, c.Client, args)
}

// Standalone is the Replication of a server run without package repl (the server's own tests):
// a primary nobody follows.
type Standalone struct{}

func (Standalone) ReplicaOf(string, int) error {
	return Error("ERR replication is not available in this server")
}
func (Standalone) Follower() bool { return false }
func (Standalone) Writable() bool { return true }
func (Standalone) Resync() error  { return Error("ERR this node follows no primary") }
func (Standalone) Sync(conn net.Conn, _ <-chan struct{}, _ *Client, _ [][]byte) {
	conn.Write([]byte("-ERR replication is not available in this server\r\n"))
	conn.Close()
}
func (Standalone) Wait(int64, int, time.Duration) int { return 0 }
func (Standalone) Role() RoleInfo                     { return RoleInfo{} }
func (Standalone) Stats() ReplStats                   { return ReplStats{} }
func (Standalone) KillLinks(bool) int                 { return 0 }
func (Standalone) Info(b *strings.Builder) {
	b.WriteString("role:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n" +
		"master_replid:" + strings.Repeat("0", 40) + "\r\nmaster_replid2:" + strings.Repeat("0", 40) + "\r\n" +
		"master_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\n")
}
