package server

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/vlog"
)

const (
	// maxBatch is how many pipelined commands one read may parse.
	maxBatch = 128
	// flushAt is the reply size at which a batch's replies are written before the batch ends.
	flushAt = 64 << 10
)

// conn is one client connection. A loop owns it (loop_linux.go): the loop's goroutine runs its
// commands, except while a command runs detached on a goroutine of its own (runDetached), when
// only that goroutine touches it; the handover goes through the loop's inbox.
type conn struct {
	s   *Server
	lp  *loop
	fd  int
	cl  *commands.Client
	rd  *resp.Reader
	w   *resp.Writer
	ctx commands.Ctx
	// sent is how much of w is written: the loop writes what the socket takes and keeps the
	// rest for when it has room.
	sent int
	// spans are the replies in the pending output that depend on the next durability wait (a
	// write's, or a read's of data not yet durable), replaced by an error if it fails.
	spans []replySpan
	// midFlushed says the command running flushed replies before it ended (a long reply): its
	// own reply is then partly sent and can no longer be replaced.
	midFlushed bool
	// broken: nothing more may be sent; the connection closes.
	broken bool
	// unsettled is what a detached command's mid-command flush (flushMid) found and sent
	// nothing for: the durability wait's error, or errLeaseLost. Its Wait forgot what it
	// waited for, so the next waitDurable fails the replies in spans by it.
	unsettled error

	// The loop's state of the connection.
	cmds               []resp.Command // parsed; cmds[next:] not run yet
	next               int
	readable, writable bool // the socket has bytes, room (as far as the loop knows)
	queued, isDirty    bool // listed in the loop's ready / dirty lists
	detached, waiting  bool // a goroutine runs its commands; its GETs are in the batch
	syncing, syncOK    bool // a goroutine waits for its durability (loop.syncRound)
	closed, closeAfter bool
	eof                bool  // the client closed its side (a read returned 0)
	hup                bool  // epoll said the client closed its side: read until EOF
	failed             error // a read failed
	getFrom, getLen    int   // the run of GETs in the batch: its first command, its length
	getDone, getLarge  int   // GETs answered; the first that found a large value (-1: none)
	getSeen            int   // GETs of the run the batch has handed back
	getGets            int   // of the commands answered, the GETs (the others count themselves)
	getMark            int
	getNotes           uint64
	getStart           time.Time
	class              int       // client-output-buffer-limit class (config.ClassNormal, ...)
	softSince          time.Time // since when the unwritten replies exceed the soft limit
	// A parked blocking command (block.go): its arguments, its keys in blockers, its timer.
	// isBlocked and retryPosted are read by other goroutines.
	blocked     bool
	blockArgs   [][]byte
	blockKeys   []string
	blockTimer  *time.Timer
	isBlocked   atomic.Bool
	retryPosted atomic.Bool
	killed      atomic.Bool
	fdMu        sync.Mutex // guards fd against a kill from another goroutine after close
	fdOpen      bool
	// hijacked is closed once the loop closed its descriptor of a connection handed over
	// (hijack).
	hijacked  chan struct{}
	connIntro // MONITOR, CLIENT PAUSE, CLIENT LIST (introspect.go)
	// scriptParked: its next command waits for the running script (scriptwait.go).
	scriptParked bool
}

// replySpan is one command's reply in the pending output.
type replySpan struct {
	from, to int
	write    bool // a write command's reply (else a read's)
	partial  bool // part of it was sent already (midFlushed)
}

func (s *Server) newConn(fd int, cl *commands.Client, lp *loop) *conn {
	c := &conn{s: s, lp: lp, fd: fd, cl: cl, w: resp.NewWriter(), fdOpen: true}
	c.rd = resp.NewReader(nil, *s.limits.Load())
	c.ctx = commands.Ctx{W: c.w, Client: cl, Srv: s, KS: s.ks, Sess: s.ks.NewSession(), Repl: s.repl, PS: s.ps}
	cl.Sub = c.newSubscriber()
	cl.Close = c.kill
	cl.Unblock = c.requestUnblock
	cl.Hijack = c.hijack
	cl.ConnInfo = c.connInfo
	return c
}

// kill closes the connection from another goroutine (CLIENT KILL, Close): the socket is shut
// down at once, so that a detached command writing to it stops, and the loop closes it.
func (c *conn) kill() {
	c.killed.Store(true)
	c.fdMu.Lock()
	if c.fdOpen {
		unix.Shutdown(c.fd, unix.SHUT_RDWR)
	}
	c.fdMu.Unlock()
	c.lp.post(loopMsg{kind: msgKill, c: c})
}

// closeFd closes the socket; a kill after it touches nothing.
func (c *conn) closeFd() {
	c.fdMu.Lock()
	c.fdOpen = false
	unix.Close(c.fd)
	c.fdMu.Unlock()
	if c.hijacked != nil {
		close(c.hijacked)
	}
}

// hijack hands the socket to the command running (commands.Client.Hijack: a follower's PSYNC):
// the replies so far are written, the socket leaves the loop's epoll set, and a duplicate of its
// descriptor becomes a net.Conn. The connection then closes as if the client had sent QUIT,
// which closes only the loop's descriptor; ready is closed when it has, so the new owner is the
// only reader from then on.
func (c *conn) hijack() (net.Conn, <-chan struct{}, error) {
	if c.hijacked != nil || c.cl.Multi != nil {
		return nil, nil, errors.New("connection cannot be handed over")
	}
	if !c.writeAll() {
		return nil, nil, errors.New("connection closed")
	}
	unix.EpollCtl(c.lp.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	nfd, err := unix.Dup(c.fd)
	if err != nil {
		return nil, nil, err
	}
	f := os.NewFile(uintptr(nfd), "replication")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, nil, err
	}
	c.hijacked = make(chan struct{})
	c.cl.CloseAfterReply = true
	return nc, c.hijacked, nil
}

// waitDurable waits for the durability the pending replies depend on, then checks that the
// node may still acknowledge writes (its lease: a write acknowledged now could otherwise come
// after another node took over). When the wait fails (the value log cannot write), the replies
// that depended on it become errors that say what happened (DurabilityError); when the lease is
// gone, the writes' replies become ErrLeaseLost. If one of them was partly sent already it
// reports false: the connection must close. flushMid makes the same checks mid-command.
func (c *conn) waitDurable() bool {
	if !c.ctx.Sess.Dirty() && c.unsettled == nil {
		c.spans = c.spans[:0]
		return true
	}
	err := c.settle()
	c.unsettled = nil
	ok := true
	switch {
	case errors.Is(err, errLeaseLost):
		ok = c.failWrites()
	case err != nil:
		c.s.log.Error("replies depend on writes not durable; failing them", "client", c.cl.Addr, "err", err)
		for _, sp := range c.spans {
			ok = ok && !sp.partial
		}
		if ok {
			c.replaceSpans(err)
		}
	}
	c.spans = c.spans[:0]
	return ok
}

// replyShipper is what a primary's replication does before replies leave (repl.Node).
type replyShipper interface{ ShipReplies() }

// shipReplies hands the change stream to the followers before the replies settle lets go: a
// write's bytes leave for them no later than its reply leaves for the client, as Redis fills its
// replicas' buffers before it writes replies, so that a kill -9 of the primary after a reply
// does not take the write with it on failover (repl.Stream.Ship).
func shipReplies(r commands.Replication) {
	if sh, ok := r.(replyShipper); ok {
		sh.ShipReplies()
	}
}

// errLeaseLost says the node may no longer acknowledge writes (settle).
var errLeaseLost = errors.New("server: the write lease ran out")

// settle makes the session's writes durable and checks the lease: nil when the pending
// replies may go, else the durability error (first) or errLeaseLost. A failure met earlier by
// flushMid (unsettled) counts too.
func (c *conn) settle() error {
	err := c.unsettled
	if werr := c.ctx.Sess.Wait(); werr != nil && (err == nil || errors.Is(err, errLeaseLost)) {
		err = werr
	} else if werr == nil {
		shipReplies(c.s.repl)
	}
	if err == nil && !c.s.repl.Writable() {
		err = errLeaseLost
	}
	return err
}

// failWrites replaces the replies of the writes waiting for their acknowledgement by
// ErrLeaseLost: the node's lease ran out (or it became a follower) while their group commit was
// in flight, and an acknowledgement now could come after another node took over. It reports
// false when one of them was partly sent already (the connection must close).
func (c *conn) failWrites() bool {
	writes := c.spans[:0:0]
	for _, sp := range c.spans {
		if sp.write {
			if sp.partial {
				return false
			}
			writes = append(writes, sp)
		}
	}
	c.replaceReplies(writes, func(replySpan) string { return string(commands.ErrLeaseLost) })
	return true
}

// flushLoop is the loop's end of a connection's round: the durability wait, then as much of the
// replies as the socket takes now. It reports false when the connection must close.
func (c *conn) flushLoop() bool {
	if !c.waitDurable() {
		return false
	}
	if c.sent == c.w.Len() {
		return true
	}
	n, err := fdWrite(c.fd, c.w.Bytes()[c.sent:])
	c.s.stats.netOut.Add(uint64(n))
	c.sent += n
	if err != nil {
		return false
	}
	if c.sent == c.w.Len() {
		c.w.Reset()
		c.sent = 0
		c.overOutputLimit(0, time.Time{})
	} else {
		c.writable = false // EPOLLOUT says when there is room
		if c.overOutputLimit(int64(c.w.Len()-c.sent), time.Now()) {
			return false
		}
	}
	return true
}

// flushBlocking is flushLoop for a detached command's goroutine: it writes everything, waiting
// for the client as long as it takes.
func (c *conn) flushBlocking() bool {
	if !c.waitDurable() {
		return false
	}
	return c.writeAll()
}

// writeAll writes the pending output, waiting for room in the socket.
func (c *conn) writeAll() bool {
	if c.sent == c.w.Len() {
		return true
	}
	// As Redis counts a reply against the limit when it is made, not when it fails to go out.
	if c.overOutputLimit(int64(c.w.Len()-c.sent)+c.ctx.Owed, time.Now()) {
		return false
	}
	n, err := fdWriteAll(c.fd, c.w.Bytes()[c.sent:], func(pending int) bool {
		return c.overOutputLimit(int64(pending)+c.ctx.Owed, time.Now())
	})
	c.s.stats.netOut.Add(uint64(n))
	c.w.Reset()
	c.sent = 0
	c.overOutputLimit(0, time.Time{})
	return err == nil
}

// runDetached runs the connection's parsed commands from c.next on, on a goroutine of its own
// (loop.detach): long replies stream to the client as they are made (Ctx.Flush), waiting for it
// as long as it takes, and commands that wait for the disk hold up nobody else. It ends with
// every reply written.
func (c *conn) runDetached() {
	c.ctx.Flush = c.flushMid
	defer func() { c.ctx.Flush = nil }()
	for c.next < len(c.cmds) && !c.broken && !c.cl.CloseAfterReply && !c.killed.Load() {
		cmds := c.cmds[c.next:]
		if blockingCmd(cmds[0].Args) || c.pausedCmd(cmds[0].Args) {
			break // it parks on the loop
		}
		if n := c.getRun(cmds, false); n > 1 {
			c.dispatchGets(cmds[:n])
			c.next += n
		} else {
			c.next++
			c.dispatch(cmds[0].Args)
		}
		if c.w.Len()-c.sent >= flushAt && !c.flushBlocking() {
			c.broken = true
		}
	}
	if c.broken || c.cl.CloseAfterReply || c.killed.Load() {
		c.closeAfter = true
		c.next = len(c.cmds)
	}
	if !c.broken && !c.flushBlocking() {
		c.closeAfter = true
	}
}

// heavyValue is the value length past which a command that returns the value runs detached.
const heavyValue = flushAt

// heavy reports whether the command of args should run detached (runDetached) rather than on
// the loop: it may make a reply too long to buffer (a value longer than heavyValue, many keys),
// or wait long (KEYS, SCAN, FLUSHALL, a RENAME or COPY that moves a large value, WAIT).
// A command the dispatcher will refuse or queue (MULTI) runs on the loop.
func (c *conn) heavy(args [][]byte) bool {
	cmd := commands.Lookup(args[0])
	if cmd == nil || c.cl.Multi != nil && !cmd.RunsInMulti() || !c.cl.Authed && c.s.authRequired.Load() {
		return false
	}
	switch cmd.Name {
	case "get", "getdel", "getex", "getset", "getrange", "substr":
		return len(args) > 1 && c.longValue(args[1])
	case "set":
		return len(args) > 3 && c.longValue(args[1])
	case "mget":
		if len(args) > 33 {
			return true
		}
		var total int
		for _, k := range args[1:] {
			if m, ok := c.s.ks.Lookup(nil, c.ctx.DB(), k); ok {
				total += m.Len
			}
		}
		return total > heavyValue
	case "keys", "scan", "randomkey", "flushdb", "flushall", "rename", "renamenx", "copy", "move", "lavik.digest", "debug":
		return true
	case "wait":
		return true // waits for followers' acknowledgements, holding up only its client
	case "exec":
		return c.cl.Multi != nil && c.cl.Multi.RunsScript() // as a script alone
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true // a script holds every shard's lock while it runs (commands/scripting.go)
	}
	if cmd.Flags&commands.FlagBlocking != 0 {
		return false // parks on the loop (see loop.block)
	}
	switch cmd.Group {
	case "hash", "set", "list", "sorted-set", "stream":
		// A collection is one record: a long one is read, and maybe written, whole. So is a
		// random pick of many fields or members, which may repeat without end.
		if (cmd.Name == "hrandfield" || cmd.Name == "srandmember" || cmd.Name == "zrandmember") && len(args) > 2 {
			if n, ok := commands.ParseInt(args[2]); !ok || n > 1000 || n < -1000 {
				return true
			}
		}
		for _, i := range cmd.KeyIndexes(len(args)) {
			if c.longValue(args[i]) {
				return true
			}
		}
	}
	return false
}

// longValue reports whether key's value is longer than heavyValue, or grouped: a command on a
// grouped collection reads its directory and groups from the disk, which the loop does not wait
// for.
func (c *conn) longValue(key []byte) bool {
	m, ok := c.s.ks.Lookup(nil, c.ctx.DB(), key)
	return ok && (m.Len > heavyValue || m.Grouped)
}

// flushMid is commands.Ctx.Flush for a detached command: a long reply goes to the client once
// what it depends on is durable and the node may still acknowledge the writes before it (the
// checks waitDurable makes). A failure stops the command with nothing sent; the replies before
// it are failed by the final flush.
func (c *conn) flushMid() error {
	if c.unsettled != nil {
		return c.unsettled
	}
	if c.ctx.Sess.Dirty() {
		if err := c.settle(); err != nil {
			// Nothing goes: the final flush (waitDurable) fails the replies it concerns.
			c.unsettled = err
			if errors.Is(err, errLeaseLost) {
				return commands.ErrLeaseLost
			}
			c.s.log.Error("a long reply depends on writes not durable; abandoning it", "client", c.cl.Addr, "err", err)
			return err
		}
	}
	c.spans = c.spans[:0]
	c.midFlushed = true
	if !c.writeAll() {
		c.broken = true
		return errClientGone
	}
	return nil
}

var errClientGone = errors.New("server: the client is gone")

// overOutputLimit reports whether pending bytes of unwritten replies break the connection's
// client-output-buffer-limit at now: over the hard limit, or over the soft limit for its
// seconds on end. A connection that breaks it is to be closed; it is counted and logged here.
func (c *conn) overOutputLimit(pending int64, now time.Time) bool {
	c.cl.OutBuf.Store(pending)
	l := c.s.outLimits.Load()[c.outputClass()]
	over := l.Hard > 0 && pending > l.Hard
	if l.Soft > 0 && pending > l.Soft {
		if c.softSince.IsZero() {
			c.softSince = now
		} else if now.Sub(c.softSince) >= time.Duration(l.SoftSeconds)*time.Second {
			over = true
		}
	} else {
		c.softSince = time.Time{}
	}
	if over {
		c.s.stats.obufKills.Add(1)
		c.s.log.Warn("client closed for overcoming of output buffer limits", "client", c.cl.Addr,
			"id", c.cl.ID, "pending", pending, "limit", c.s.cfg.Get("client-output-buffer-limit"))
	}
	return over
}

// replaceSpans rewrites the pending output with the durability error in place of every reply
// that depended on the failed wait.
func (c *conn) replaceSpans(err error) {
	c.replaceReplies(c.spans, func(sp replySpan) string { return commands.DurabilityError(err, sp.write) })
}

// replaceReplies rewrites the pending output with the error msg gives in place of each of
// spans (in output order).
func (c *conn) replaceReplies(spans []replySpan, msg func(replySpan) string) {
	if len(spans) == 0 {
		return
	}
	out := append([]byte(nil), c.w.Bytes()...)
	c.w.Truncate(0)
	prev := 0
	for _, sp := range spans {
		c.w.Raw(out[prev:sp.from])
		c.w.Error(msg(sp))
		prev = sp.to
	}
	c.w.Raw(out[prev:])
}

// abandon ends a command that stopped in the middle of its reply (ctx.Broken): if none of the
// reply was sent, what it wrote is replaced by the error that stopped it; if part was, nothing
// more can be sent that the client could make sense of, and the connection closes.
func (c *conn) abandon(mark int, write bool) {
	if c.midFlushed {
		c.broken = true
		return
	}
	c.dropReply(mark)
	err := c.ctx.BrokenErr
	var we *vlog.WriteError
	if errors.As(err, &we) {
		c.w.Error(commands.DurabilityError(err, write))
	} else {
		c.w.Error(commands.ErrorLine(err))
	}
	c.s.stats.errReplies.Add(1)
}

// noteSpan records the reply the command that started at mark made, if it depends on the next
// durability wait (its session was given something to wait for since notes).
func (c *conn) noteSpan(mark int, notes uint64, write bool) {
	if c.ctx.Sess.Notes() == notes {
		return
	}
	if c.midFlushed {
		mark = 0
	}
	if c.w.Len() > mark || c.midFlushed {
		c.spans = append(c.spans, replySpan{from: mark, to: c.w.Len(), write: write, partial: c.midFlushed})
	}
}

// dispatch admits one command through the table and runs it.
func (c *conn) dispatch(args [][]byte) {
	s := c.s
	s.stats.cmds.Add(1)
	start := time.Now()
	c.cl.LastActive.Store(start.UnixMilli())
	mark := c.w.Len()
	cmd := commands.Lookup(args[0])
	if cmd == nil {
		c.reject(nil, unknownCommand(args))
		return
	}
	if cmd.Subcommands != nil && len(args) >= 2 {
		if sub := cmd.LookupSub(args[1]); sub != nil {
			cmd = sub
		} else if cmd.Handler == nil || cmd.Name == "command" {
			c.reject(cmd, commands.UnknownSubcommand(cmd, args[1]))
			return
		}
	}
	if !cmd.CheckArity(len(args)) {
		c.reject(cmd, commands.ArityError(cmd))
		return
	}
	if !c.cl.Authed && cmd.Flags&commands.FlagNoAuth == 0 && s.authRequired.Load() {
		c.reject(cmd, commands.ErrNoAuth)
		return
	}
	if c.busyReject(cmd) {
		return
	}
	if err := commands.SubscribeModeErr(c.cl, cmd); err != nil {
		c.reject(cmd, err.(commands.Error))
		return
	}
	multi := c.cl.Multi
	if (cmd.Flags&commands.FlagWrite != 0 || cmd.Name == "exec" && multi != nil && multi.Writes()) && !s.repl.Writable() {
		if s.repl.Follower() {
			c.reject(cmd, commands.ErrReadOnly)
		} else {
			c.reject(cmd, commands.ErrNoLease)
		}
		return
	}
	if cmd.Flags&commands.FlagWrite != 0 || cmd.Name == "exec" && multi != nil && multi.Writes() {
		if err := s.ks.WriteErr(); err != nil {
			c.reject(cmd, commands.Error(commands.ErrorLine(err)+"; write commands are refused until it succeeds"))
			return
		}
	}
	if cmd.Handler == nil {
		c.reject(cmd, commands.ArityError(cmd))
		return
	}
	if cmd.Flags&commands.FlagDenyOOM != 0 || cmd.Name == "exec" && multi != nil && multi.DenyOOM() {
		if err := s.ks.CheckLimits(); err != nil {
			c.reject(cmd, commands.Error(err.Error()))
			return
		}
	}
	if multi != nil && !cmd.RunsInMulti() {
		if err := multi.Queue(cmd, args, s.cfg.Int("client-query-buffer-limit")); err != nil {
			c.reject(cmd, err.(commands.Error))
			return
		}
		c.cl.NoteMulti()
		c.cl.SetLastCmd(cmd)
		c.w.Simple("QUEUED")
		c.silence(mark)
		return
	}
	c.cl.SetLastCmd(cmd)
	ctx := &c.ctx
	ctx.Args, ctx.Cmd, ctx.Failed, ctx.Broken, ctx.BrokenErr = args, cmd, false, false, nil
	ctx.Writes, ctx.InnerErrors, ctx.Block, ctx.Wrote = false, 0, nil, ctx.Wrote[:0]
	c.midFlushed = false
	notes := ctx.Sess.Notes()
	before := c.cl.ReplyMode
	if !c.run(cmd, ctx, mark) {
		return
	}
	if ctx.Block != nil {
		if s.intro.nmon.Load() > 0 && !ctx.Retrying {
			s.feedMonitors(c, cmd, args)
		}
		return // parked, with no reply yet (loop.block)
	}
	write := cmd.Flags&commands.FlagWrite != 0 || ctx.Writes
	// A script that failed may have written before it failed: its writes stand (ctx.Wrote).
	if write && (!ctx.Failed || len(ctx.Wrote) > 0) {
		s.signalWrites(ctx.DB(), cmd, args, multi, ctx.Wrote)
	}
	if s.track.Active() {
		s.trackCommand(c, cmd, args, multi, write && (!ctx.Failed || len(ctx.Wrote) > 0))
	}
	if ctx.Broken {
		c.abandon(mark, write)
		return
	}
	took := time.Since(start)
	cmd.Stats.Usec.Add(uint64(took.Microseconds()))
	cmd.Stats.Calls.Add(1)
	if ctx.Failed {
		cmd.Stats.Failed.Add(1)
		s.stats.errReplies.Add(1)
		c.countErrorAt(mark)
	}
	s.observe(c, cmd, args, multi, took)
	s.stats.errReplies.Add(uint64(ctx.InnerErrors))
	c.noteSpan(mark, notes, write)
	c.applyReplyMode(cmd, before, mark)
}

// getRun returns how many commands from the start of cmds are plain GETs that may run as one
// batch of disk reads: consecutive, so no other command of this connection sits between them
// and the batch reads what the GETs one by one could have read; from an authenticated client
// whose replies are on. With reads, the run may also hold commands that read one key whole
// (commands.FlagPrefetch: HGETALL, LRANGE, ZSCORE, ...), which the event loop runs on what the
// batch read.
func (c *conn) getRun(cmds []resp.Command, reads bool) int {
	if c.cl.Multi != nil || c.cl.ReplyMode != commands.ReplyOn || c.cl.SkipNext || (!c.cl.Authed && c.s.authRequired.Load()) ||
		c.cl.Sub.Subscribed() {
		return 0
	}
	n := 0
	for n < len(cmds) && n < maxBatch {
		args := cmds[n].Args
		switch {
		case len(args) == 2 && isGet(args[0]):
		case reads && prefetchable(args):
		default:
			return n
		}
		n++
	}
	return n
}

// prefetchable reports whether args are a FlagPrefetch command with the arguments its arity
// asks for.
func prefetchable(args [][]byte) bool {
	if len(args) < 2 {
		return false
	}
	cmd := commands.Lookup(args[0])
	return cmd != nil && cmd.Flags&commands.FlagPrefetch != 0 && cmd.CheckArity(len(args))
}

// prefetchReply runs a FlagPrefetch command of the batch on what the batch read of its key
// (see writeGetReply).
func (c *conn) prefetchReply(args [][]byte, v keyspace.Value, m keyspace.Meta, ok bool, err error) {
	p := &commands.Prefetched{DB: c.ctx.DB(), Key: args[1], Meta: m, Found: ok, Err: err}
	if ok && err == nil {
		p.Val, p.Err = v.Bytes()
	}
	c.ctx.Pre = p
	c.dispatch(args)
	c.ctx.Pre = nil
	c.noteSpan(c.getMark, c.getNotes, false)
	c.getMark, c.getNotes = c.w.Len(), c.ctx.Sess.Notes()
	c.getDone++
}

// isGet reports whether a command name is GET, without the table lookup dispatch does anyway.
func isGet(name []byte) bool { return len(name) == 3 && bytes.EqualFold(name, []byte("get")) }

var getCommand = commands.Lookup([]byte("get"))

// dispatchGets runs a run of GETs with one batch of SSD reads (see getRun).
func (c *conn) dispatchGets(cmds []resp.Command) {
	s := c.s
	n := len(cmds)
	s.stats.cmds.Add(uint64(n))
	start := time.Now()
	c.cl.LastActive.Store(start.UnixMilli())
	c.cl.SetLastCmd(getCommand)
	keys := make([][]byte, n)
	for i := range cmds {
		keys[i] = cmds[i].Args[1]
	}
	mark, notes := c.w.Len(), c.ctx.Sess.Notes()
	c.ctx.Broken, c.ctx.BrokenErr, c.midFlushed = false, nil, false
	// Each GET's reply is its own span: one whose durability wait fails becomes an error, the
	// others stand.
	done := 0
	failed, ok := c.runGets(keys, func(i int) {
		s.observe(c, getCommand, cmds[i].Args, nil, time.Since(start))
		c.noteSpan(mark, notes, false)
		mark, notes, c.midFlushed = c.w.Len(), c.ctx.Sess.Notes(), false
		done++
	}, mark)
	if !ok {
		return
	}
	if s.track.Active() {
		s.trackGets(c, keys)
	}
	if c.ctx.Broken {
		// The GET that broke gets the error; the ones after it in the run, which were not
		// read, run one by one.
		c.abandon(mark, false)
		for i := done + 1; i < n && !c.broken; i++ {
			c.dispatch(cmds[i].Args)
		}
		return
	}
	getCommand.Stats.Usec.Add(uint64(time.Since(start).Microseconds()))
	getCommand.Stats.Calls.Add(uint64(n))
	if failed > 0 {
		getCommand.Stats.Failed.Add(uint64(failed))
		s.stats.errReplies.Add(uint64(failed))
	}
}

// runGets writes the replies of a run of GETs, recovering from a panic as run does: the GET
// being answered gets the error (its reply starts at the mark after writes reports) and the
// connection closes.
func (c *conn) runGets(keys [][]byte, after func(int), mark int) (failed int, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("command panicked", "cmd", "get", "client", c.cl.Addr, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.w.Truncate(mark)
			c.w.Error("ERR lavik: internal error while running 'get' (logged); closing the connection")
			getCommand.Stats.Failed.Add(1)
			c.cl.CloseAfterReply = true
			ok = false
		}
	}()
	return commands.WriteGetReplies(&c.ctx, keys, func(i int) {
		after(i)
		mark = c.w.Len()
	}), true
}

// run calls the handler. A panic is a bug in Lavik, never the client's fault: it is logged
// with its stack, the command gets an error reply, and the connection is closed; the server
// and every other client go on.
func (c *conn) run(cmd *commands.Command, ctx *commands.Ctx, mark int) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("command panicked", "cmd", cmd.Name, "client", c.cl.Addr, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.w.Truncate(mark)
			c.w.Error("ERR lavik: internal error while running '" + cmd.Name + "' (logged); closing the connection")
			cmd.Stats.Failed.Add(1)
			c.cl.CloseAfterReply = true
			ok = false
		}
	}()
	// A write's effect, for the change stream, is its own arguments unless the handler says
	// otherwise (keyspace.Session.Propagate); whatever it did not commit is forgotten.
	ctx.Sess.StartCommand()
	ctx.Sess.TrackKeys(ctx.TrackingKeys())
	if cmd.Flags&commands.FlagWrite != 0 {
		ctx.Propagate(ctx.Args)
	}
	defer ctx.Sess.EndCommand()
	cmd.Handler(ctx)
	return true
}

// applyReplyMode drops replies as CLIENT REPLY OFF|SKIP asks. As in Redis, a successful
// CLIENT REPLY ends a pending skip (ON still sends its +OK), SKIP does nothing while replies
// are off, and a CLIENT REPLY that failed is dropped or skipped like any other command.
func (c *conn) applyReplyMode(cmd *commands.Command, before commands.ReplyMode, mark int) {
	cl := c.cl
	if cmd.Name == "client|reply" && !c.ctx.Failed {
		switch cl.ReplyMode {
		case commands.ReplyOn:
			cl.SkipNext = false
		case commands.ReplyOff:
			c.dropReply(mark)
			cl.SkipNext = false
		case commands.ReplySkip:
			// SKIP is not a mode: the client keeps the one it had.
			c.dropReply(mark)
			cl.ReplyMode, cl.SkipNext = before, before != commands.ReplyOff
		}
		return
	}
	if before == commands.ReplyOff && cmd.Name != "reset" {
		c.dropReply(mark)
		return
	}
	c.silence(mark)
}

// silence drops the reply written from mark if the client asked for no reply to it (CLIENT
// REPLY OFF or SKIP).
func (c *conn) silence(mark int) {
	switch {
	case c.cl.ReplyMode == commands.ReplyOff:
		c.dropReply(mark)
	case c.cl.SkipNext:
		c.dropReply(mark)
		c.cl.SkipNext = false
	}
}

func (c *conn) dropReply(mark int) {
	c.w.Truncate(mark)
	for len(c.spans) > 0 && c.spans[len(c.spans)-1].from >= mark && !c.spans[len(c.spans)-1].partial {
		c.spans = c.spans[:len(c.spans)-1]
	}
}

// reject replies with err for a command that was not run, counting it as Redis does
// (rejected_calls for known commands).
//
// Inside MULTI a refused command marks the transaction, which EXEC then discards; a refused EXEC
// discards it (and the watched keys) at once, saying why (EXECABORT).
func (c *conn) reject(cmd *commands.Command, err commands.Error) {
	if cmd != nil {
		cmd.Stats.Rejected.Add(1)
	}
	c.s.stats.errReplies.Add(1)
	c.s.countError(string(err))
	switch {
	case cmd != nil && cmd.Name == "exec":
		// Inside MULTI or not, as Redis does.
		c.ctx.Discard()
		err = commands.ExecAbort(err)
	case c.cl.Multi != nil:
		c.cl.Multi.Fail()
	}
	mark := c.w.Len()
	c.w.Error(string(err))
	c.silence(mark)
}

// unknownCommand formats Redis 7's unknown-command error.
func unknownCommand(args [][]byte) commands.Error {
	name := args[0]
	if len(name) > 128 {
		name = name[:128]
	}
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		room := 128 - b.Len()
		if len(a) > room {
			a = a[:room]
		}
		b.WriteString("'" + string(a) + "' ")
	}
	return commands.Error("ERR unknown command '" + string(name) + "', with args beginning with: " + b.String())
}
