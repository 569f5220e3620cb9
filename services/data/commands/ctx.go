package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/services/data/config"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
	"github.com/lavikdb/lavik/services/data/tracking"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// RedisVersion is the Redis version whose commands and replies lavik-data follows; clients read
// it from INFO and HELLO to decide which features they may use.
const RedisVersion = "7.0.15"

// Version is Lavik's own version.
const Version = "0.1.0"

// ReplyMode is CLIENT REPLY's state.
type ReplyMode int32

// Reply modes.
const (
	ReplyOn ReplyMode = iota
	ReplyOff
	ReplySkip // skip the next command's reply
)

// Client is one connection's state. Fields read by other connections (CLIENT LIST, KILL) are
// atomic or behind mu; the rest belong to the connection's goroutine.
type Client struct {
	ID      int64
	Addr    string
	LAddr   string
	Created time.Time
	// Close closes the connection from another goroutine (CLIENT KILL, shutdown).
	Close func()
	// Unblock ends the client's blocking command (CLIENT UNBLOCK), with an error reply or as a
	// timeout; it reports whether the client was blocked.
	Unblock func(withError bool) bool
	// Hijack hands the connection's socket over (a follower's PSYNC): the replies so far are
	// written and the server lets go of it; ready is closed once the server no longer reads it.
	// The command must write no reply. Nil where a connection cannot be handed over.
	Hijack func() (conn net.Conn, ready <-chan struct{}, err error)
	// ConnInfo, set by the server, reports the connection's side of CLIENT LIST (introspect.go).
	ConnInfo func() ConnInfo
	// ReplPort and ReplIP are what a follower said with REPLCONF listening-port / ip-address.
	ReplPort int
	ReplIP   string

	DB        atomic.Int32
	Authed    bool
	Proto     atomic.Int32
	ReplyMode ReplyMode
	// SkipNext is set by CLIENT REPLY SKIP: the next command's reply is dropped.
	SkipNext bool
	NoEvict  atomic.Bool
	NoTouch  atomic.Bool // CLIENT NO-TOUCH
	// CloseAfterReply makes the connection close once the pending replies are written (QUIT).
	CloseAfterReply bool
	// Multi is the transaction being queued (MULTI), nil outside one; Watches are the keys
	// WATCHed (multi.go). The server unwatches them when the connection ends.
	Multi   *Multi
	Watches keyspace.Watches
	// Sub is the connection's pub/sub state (pubsub.go); nil where the connection cannot
	// receive messages (a follower applying its primary's stream).
	Sub *pubsub.Subscriber
	// Tracking is the connection's client-side caching state (CLIENT TRACKING, tracking.go).
	Tracking tracking.State
	multiLen atomic.Int32 // 1 + the number of commands queued, 0 outside MULTI, for CLIENT LIST

	LastActive atomic.Int64 // unix ms of the last command
	QueryBuf   atomic.Int64 // bytes buffered and not yet parsed
	OutBuf     atomic.Int64 // bytes of replies not yet written
	// lastCmd is the last command run, set on every command without a lock.
	lastCmd atomic.Pointer[Command]
	mu      sync.Mutex
	name    string
}

// Name returns the client's name (CLIENT SETNAME).
func (cl *Client) Name() string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.name
}

// SetName sets the client's name.
func (cl *Client) SetName(n string) {
	cl.mu.Lock()
	cl.name = n
	cl.mu.Unlock()
}

// setMulti starts (m) or ends (nil) the client's transaction.
func (cl *Client) setMulti(m *Multi) {
	cl.Multi = m
	cl.NoteMulti()
}

// NoteMulti publishes the number of queued commands for CLIENT LIST.
func (cl *Client) NoteMulti() {
	if cl.Multi == nil {
		cl.multiLen.Store(0)
	} else {
		cl.multiLen.Store(int32(min(cl.Multi.Len(), 1<<30)) + 1)
	}
}

// SetLastCmd records the last command run, for CLIENT LIST.
func (cl *Client) SetLastCmd(c *Command) { cl.lastCmd.Store(c) }

// Info formats the client as one CLIENT LIST / CLIENT INFO line (without the newline).
func (cl *Client) Info(now time.Time) string {
	cl.mu.Lock()
	name := cl.name
	cl.mu.Unlock()
	last := "NULL"
	if c := cl.lastCmd.Load(); c != nil {
		last = c.Name
	}
	flags := ""
	var sub, psub, ssub int
	if cl.Sub != nil {
		sub, psub, ssub = cl.Sub.Count(pubsub.Channel), cl.Sub.Count(pubsub.Pattern), cl.Sub.Count(pubsub.Shard)
		if sub+psub+ssub > 0 {
			flags += "P"
		}
	}
	multi := cl.multiLen.Load() - 1
	if multi >= 0 {
		flags += "x"
	}
	ci := cl.connInfo()
	flags += ci.flags()
	if cl.NoEvict.Load() {
		flags += "e"
	}
	flags += cl.Tracking.ListFlags()
	if cl.NoTouch.Load() {
		flags += "T"
	}
	if flags == "" {
		flags = "N"
	}
	age := int64(now.Sub(cl.Created).Seconds())
	idle := (now.UnixMilli() - cl.LastActive.Load()) / 1000
	qbuf, omem := cl.QueryBuf.Load(), cl.OutBuf.Load()
	obl, events := min(omem, 16384), "r"
	if omem > 0 {
		events = "rw"
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d ssub=%d multi=%d qbuf=%d qbuf-free=%d argv-mem=%d multi-mem=%d rbs=%d rbp=%d obl=%d oll=%d omem=%d tot-mem=%d events=%s cmd=%s user=default redir=%d resp=%d",
		cl.ID, cl.Addr, cl.LAddr, ci.FD, name, age, idle, flags, cl.DB.Load(), sub, psub, ssub, multi, qbuf, ci.QbufFree, ci.ArgvMem, ci.MultiMem,
		qbuf+ci.QbufFree, qbuf, obl, 0, omem, ci.totMem(qbuf, omem), events, last, cl.Tracking.Redirect(), cl.Proto.Load())
}

// ServerStats are the server-level figures INFO reports.
type ServerStats struct {
	Started                   time.Time
	Port                      int
	ConfigFile                string
	Executable                string
	RunID                     string
	ConnectionsReceived       uint64
	CommandsProcessed         uint64
	RejectedConnections       uint64
	NetInputBytes             uint64
	NetOutputBytes            uint64
	OpsPerSec                 int64
	ProtocolErrors            uint64
	ConnectedClients          int64
	BlockedClients            int64
	TotalErrorReplies         uint64
	UnexpectedErrorReplies    uint64
	ClientQueryBufLimitKills  uint64
	ClientOutputBufLimitKills uint64
}

// Server is what handlers need from the server that owns the connections.
type Server interface {
	Config() *config.Config
	// Clients returns a snapshot of the connected clients.
	Clients() []*Client
	Stats() ServerStats
	// ResetStats clears the counters CONFIG RESETSTAT resets.
	ResetStats()
	// Shutdown stops the server once the current reply is written.
	Shutdown()
}

// Ctx is one command invocation.
type Ctx struct {
	Args   [][]byte
	W      *resp.Writer
	Client *Client
	Srv    Server
	KS     *keyspace.Keyspace
	Sess   *keyspace.Session
	// Repl is the node's replication.
	Repl Replication
	// PS is the node's pub/sub registry (nil: no pub/sub, no keyspace notifications).
	PS *pubsub.Registry
	// Held, when set, holds what the command publishes (keyspace events, PUBLISH) instead of
	// publishing it: a follower publishes its primary's stream's once they are applied.
	Held *pubsub.Held
	Cmd  *Command
	// Failed is set when the command replied with an error (INFO commandstats failed_calls).
	Failed bool
	// Flush, set by the server, waits for the durability of what the replies so far depend on
	// and writes them to the client, so that a long reply (MGET of many values, GET of a large
	// one) goes out as it is made instead of piling up in memory. An error means the command
	// must stop: the wait failed (a *vlog.WriteError) or the client is gone.
	Flush func() error
	// Broken is set by a command that stopped in the middle of a reply it had begun, with why
	// in BrokenErr (a value it was streaming failed to read, or Flush failed). The server
	// replaces the reply with an error if none of it was sent yet, else closes the connection.
	Broken    bool
	BrokenErr error
	// Writes, set by EXEC, says the reply is a write's (its transaction wrote) for the server's
	// durability accounting; InnerErrors counts the error replies of the commands it ran.
	Writes      bool
	InnerErrors int
	// Wrote, set by a script (EVAL, FCALL, also inside EXEC), lists the keys its commands
	// wrote, with the database each was written in, so that the server wakes the clients
	// blocked on them: a script may write keys it did not declare. SWAPDB adds its two
	// databases (AllKeys), wherever it runs. The server empties it before each command.
	Wrote []KeyRef
	// engineHeld says the command runs inside an EXEC that holds the script engine (lockEngine).
	engineHeld bool
	// Block, set by a blocking command that found nothing to take (blockOn), asks the server
	// to park the client until one of its keys is written or its deadline passes, and then to
	// run the command again; the command replied nothing. NoBlock forbids it (the command
	// answers at once, as if timed out), as inside MULTI.
	Block   *BlockRequest
	NoBlock bool
	// Retrying: the server runs a parked blocking command again after a write to one of its
	// keys. A key that now holds another type serves nothing (the client stays parked), as
	// in Redis, where only a key of the awaited type serves a blocked client; XREADGROUP answers
	// as Redis does to a blocked client whose key or group went away.
	Retrying bool
	// Pre, set by the server for a FlagPrefetch command, is its key as the server's batch of
	// reads found it; readValue takes it instead of reading the key again.
	Pre *Prefetched
	// Owed is how many bytes of a value being streamed (writeValue) are still to come: with
	// the replies not yet written, what the client is owed, which Redis would hold in its
	// output buffer (client-output-buffer-limit).
	Owed int64
}

// Prefetched is one key's record as a batch of reads found it: Found false for a missing key,
// Err for a read that failed. Val is valid while the command runs.
type Prefetched struct {
	DB    int
	Key   []byte
	Val   []byte
	Meta  keyspace.Meta
	Found bool
	Err   error
}

// BlockRequest is what a blocked command waits for: a write to one of Keys of database DB, or
// Deadline (zero: none).
type BlockRequest struct {
	DB       int
	Keys     [][]byte
	Deadline time.Time
	// Args, when set, are what the command is run with again after a wake-up, instead of the
	// arguments it was first given: XREAD fixes the id "$" stood for at its first run, so a
	// re-run serves what was added since then, not since the wake-up.
	Args [][]byte
}

// KeyRef is one key of one database.
type KeyRef struct {
	DB  int
	Key []byte
	// AllKeys stands for every key of database DB (Key unset): a SWAPDB changed them all.
	AllKeys bool
}

// flushAt is the size of pending replies at which a command making a long reply flushes them.
const flushAt = 64 << 10

// MaybeFlush flushes the pending replies (Flush) once they reach flushAt. It reports false when
// the command must stop.
func (c *Ctx) MaybeFlush() bool {
	if c.Flush == nil || c.W.Len() < flushAt {
		return true
	}
	if err := c.Flush(); err != nil {
		c.Broken, c.BrokenErr = true, err
		return false
	}
	return true
}

// errStopped stops a value's stream when the connection cannot take more.
var errStopped = errors.New("commands: reply abandoned")

// writeValue writes v as a bulk string, a chunked value piece by piece through MaybeFlush. When
// it cannot finish (a piece failed to read, or the connection broke) it marks the reply broken
// and returns the error.
func writeValue(c *Ctx, v keyspace.Value) error {
	c.W.BulkStart(v.Len)
	c.Owed = int64(v.Len)
	defer func() { c.Owed = 0 }()
	err := v.Each(func(p []byte) error {
		c.W.Raw(p)
		c.Owed -= int64(len(p))
		if !c.MaybeFlush() {
			return errStopped
		}
		return nil
	})
	if err != nil {
		if !c.Broken {
			c.Broken, c.BrokenErr = true, err
		}
		return err
	}
	c.W.BulkEnd()
	return nil
}

// DB is the client's selected database.
func (c *Ctx) DB() int { return int(c.Client.DB.Load()) }

// OK replies +OK.
func (c *Ctx) OK() { c.W.Simple("OK") }

// Error is a Redis error reply: the full line without the leading '-', starting with its code
// (ERR, WRONGTYPE, NOAUTH, ...).
type Error string

func (e Error) Error() string { return string(e) }

// Errors replied by several commands, with Redis 7's exact texts.
const (
	ErrSyntax        Error = "ERR syntax error"
	ErrNotInt        Error = "ERR value is not an integer or out of range"
	ErrNotFloat      Error = "ERR value is not a valid float"
	ErrWrongType     Error = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrNoSuchKey     Error = "ERR no such key"
	ErrOverflow      Error = "ERR increment or decrement would overflow"
	ErrDBIndex       Error = "ERR DB index is out of range"
	ErrSameObject    Error = "ERR source and destination objects are the same"
	ErrNoAuth        Error = "NOAUTH Authentication required."
	ErrWrongPass     Error = "WRONGPASS invalid username-password pair or user is disabled."
	ErrStringTooLong Error = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	ErrOffset        Error = "ERR offset is out of range"
	ErrInvalidCursor Error = "ERR invalid cursor"
)

// ErrInvalidExpire is "invalid expire time in '<cmd>' command".
func ErrInvalidExpire(cmd string) Error {
	return Error("ERR invalid expire time in '" + cmd + "' command")
}

// Err replies with err translated to a RESP error line. This is the one place where Go errors
// become protocol errors.
func (c *Ctx) Err(err error) {
	c.Failed = true
	c.W.Error(ErrorLine(err))
}

// ErrorLine translates an error to the text of a RESP error reply.
func ErrorLine(err error) string {
	var re Error
	switch {
	case errors.As(err, &re):
		return string(re)
	case errors.Is(err, vlog.ErrCorrupt):
		return "ERR lavik: the value's record on disk failed verification and was not served (see the server log)"
	}
	var le *vlog.WriteError
	if errors.As(err, &le) {
		// The cause without its file path: clients need "no space left on device", not the
		// server's directory layout.
		cause := le.Unwrap()
		var pe *fs.PathError
		if errors.As(cause, &pe) {
			cause = pe.Err
		}
		return "MISCONF lavik: writing the value log failed: " + cause.Error()
	}
	return "ERR lavik: " + strings.TrimPrefix(err.Error(), "keyspace: ")
}

// DurabilityError is the reply that replaces a reply whose durability wait failed: the value
// log could not write or sync what the reply depended on (err). A write says what is true of it:
// it took effect in memory and stays (reads that depend on it wait until it is written), it is
// lost if the server stops before the disk takes writes again, and it must not be repeated
// blindly (an INCR would count twice once the disk recovers); write commands are refused until
// then. A read says its answer depended on such a write.
func DurabilityError(err error, write bool) string {
	cause := err.Error()
	var le *vlog.WriteError
	if errors.As(err, &le) {
		c := le.Unwrap()
		var pe *fs.PathError
		if errors.As(c, &pe) {
			c = pe.Err
		}
		cause = c.Error()
	}
	if write {
		return "MISCONF lavik: the write took effect in memory but the value log could not store it (" + cause +
			"): it is kept and written once the disk accepts writes again, lost if the server stops first; " +
			"do not repeat it blindly; write commands are refused until then"
	}
	return "MISCONF lavik: this reply depends on a write the value log could not store yet (" + cause +
		"); retry once the disk accepts writes again"
}

// argErr builds a reply error naming the command (wrong arity and friends).
func arityErr(name string) Error {
	return Error("ERR wrong number of arguments for '" + name + "' command")
}

// ArityError is the error for a wrong argument count.
func ArityError(cmd *Command) Error { return arityErr(cmd.Name) }

// Now is the clock the command decides by (unix ms): its session's (a follower applying its
// primary's changes decides by the primary's clock), else the process's.
func (c *Ctx) Now() int64 { return c.Sess.Now() }

// Propagate states what the command did as the commands a follower runs to do the same (see
// keyspace.Session.Propagate): by default a write command's own arguments; a command whose
// effect its arguments do not fix (SPOP chooses members at random) states it before it writes.
func (c *Ctx) Propagate(cmds ...[][]byte) { c.Sess.Propagate(c.DB(), cmds...) }
