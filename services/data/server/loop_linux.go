package server

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// loop is one event loop: an OS thread that serves its connections in rounds (see doc.go).
type loop struct {
	s    *Server
	id   int
	epfd int
	// wakefd is an eventfd in the epoll set: other goroutines write it to make the loop look at
	// its inbox (a new connection, one coming back from a detached command, a kill, Close).
	wakefd int

	mu    sync.Mutex
	inbox []loopMsg
	// sleeping is set while the loop is in epoll_wait with nothing to do, so that a sender
	// writes the eventfd only when the loop needs waking.
	sleeping atomic.Bool
	stopping atomic.Bool
	done     chan struct{}

	conns map[int32]*conn
	// ready are the connections to serve this round; queued marks them so none is listed twice.
	ready []*conn
	// gets are the GETs of this round's connections, answered together (startGets); reading,
	// the batches in flight on ring, the loop's own io_uring (nil where the kernel refuses one:
	// the batches are then read synchronously).
	gets    []keyspace.GetReq
	getConn []*conn
	ring    *vlog.Ring
	reading []*getBatch
	// dirty are the connections with replies or a durability wait pending at the end of the
	// round; syncs, those whose wait may sync, left to a goroutine.
	dirty []*conn
	syncs []*conn

	events    []unix.EpollEvent
	lastSweep time.Time
}

type loopMsg struct {
	kind int
	c    *conn
}

const (
	msgAdd = iota
	msgReattach
	msgKill
	msgSynced
	msgRetry          // a key the parked connection waits on was written (block.go)
	msgBlockTimeout   // its deadline passed
	msgUnblockTimeout // CLIENT UNBLOCK c TIMEOUT
	msgUnblockError   // CLIENT UNBLOCK c ERROR
	msgMonitor        // lines were fed to the monitor (introspect.go)
	msgUnpause        // the pause that held the connection ended (introspect.go)
	msgScriptIdle     // the script it waited for ended or turned busy (scriptwait.go)
	msgDeliver        // messages were published to the connection (pubsub.go)
)

// Bounds of one round's work for one connection, so that one busy client cannot hold up the
// others of its loop: reads per service, and the bytes a read may bring in.
const (
	maxReadsPerService = 8
	readChunk          = 64 << 10
)

func newLoop(s *Server, id int) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	wfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wfd)}); err != nil {
		unix.Close(wfd)
		unix.Close(epfd)
		return nil, err
	}
	lp := &loop{s: s, id: id, epfd: epfd, wakefd: wfd,
		conns: map[int32]*conn{}, done: make(chan struct{}), events: make([]unix.EpollEvent, 256),
		lastSweep: time.Now()}
	if s.ks.EngineName() == "io_uring" {
		if r, err := vlog.NewRing(256); err == nil {
			// Edge-triggered: each completion signal is one event; the count is never read.
			ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(r.EventFD())}
			if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, r.EventFD(), &ev); err == nil {
				lp.ring = r
				s.ks.RegisterEngine(r)
			} else {
				r.Close()
			}
		}
	}
	return lp, nil
}

// post hands the loop a message and wakes it if it sleeps.
func (lp *loop) post(m loopMsg) {
	lp.mu.Lock()
	lp.inbox = append(lp.inbox, m)
	lp.mu.Unlock()
	lp.wake()
}

func (lp *loop) wake() {
	if lp.sleeping.Load() {
		var one = [8]byte{1}
		unix.Write(lp.wakefd, one[:])
	}
}

// stop asks the loop to close its connections and return.
func (lp *loop) stop() {
	lp.stopping.Store(true)
	var one = [8]byte{1}
	unix.Write(lp.wakefd, one[:])
}

// run is the loop's goroutine. Its system calls do not block, except epoll_wait when it has
// nothing to do: then its thread sleeps in the kernel, and the P startLoops added lets the
// rest of the process run meanwhile.
func (lp *loop) run() {
	defer close(lp.done)
	defer func() {
		for _, c := range lp.conns {
			lp.closeConn(c)
		}
		if lp.ring != nil {
			for lp.ring.Inflight() > 0 {
				lp.ring.Submit()
				lp.ring.Wait()
				lp.ring.Poll()
			}
			// The batches not handed on hold buffers and segment references.
			for _, b := range lp.reading {
				b.reads.Abandon()
			}
			lp.reading = nil
			lp.ring.Close()
		}
		unix.Close(lp.epfd)
		unix.Close(lp.wakefd)
	}()
	for {
		n, err := unix.EpollWait(lp.epfd, lp.events, 0)
		if n == 0 && len(lp.ready) == 0 && !lp.hasMail() && !lp.stopping.Load() {
			lp.sleeping.Store(true)
			if !lp.hasMail() {
				n, err = unix.EpollWait(lp.epfd, lp.events, 1000)
			}
			lp.sleeping.Store(false)
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			lp.s.log.Error("epoll_wait failed", "loop", lp.id, "err", err)
			time.Sleep(10 * time.Millisecond)
		}
		for i := 0; i < n; i++ {
			ev := &lp.events[i]
			if ev.Fd == int32(lp.wakefd) {
				var buf [8]byte
				unix.Read(lp.wakefd, buf[:])
				continue
			}
			if lp.ring != nil && ev.Fd == int32(lp.ring.EventFD()) {
				continue // reads completed: round polls the ring
			}
			c := lp.conns[ev.Fd]
			if c == nil {
				continue
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.readable = true
			}
			if ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.hup = true // no edge will follow: read until EOF
			}
			if ev.Events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.writable = true
			}
			lp.queue(c)
		}
		if lp.stopping.Load() {
			return
		}
		lp.drainInbox()
		lp.round()
		if now := time.Now(); now.Sub(lp.lastSweep) >= time.Second {
			lp.lastSweep = now
			lp.sweepIdle(now)
		}
	}
}

// hasMail reports whether the inbox holds messages.
func (lp *loop) hasMail() bool {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return len(lp.inbox) > 0
}

func (lp *loop) queue(c *conn) {
	if !c.queued {
		c.queued = true
		lp.ready = append(lp.ready, c)
	}
}

func (lp *loop) drainInbox() {
	lp.mu.Lock()
	msgs := lp.inbox
	lp.inbox = nil
	lp.mu.Unlock()
	for _, m := range msgs {
		c := m.c
		switch m.kind {
		case msgAdd:
			ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(c.fd)}
			if err := unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
				lp.s.log.Error("epoll_ctl add failed", "client", c.cl.Addr, "err", err)
				lp.conns[int32(c.fd)] = c
				lp.closeConn(c)
				continue
			}
			lp.conns[int32(c.fd)] = c
			// Bytes may have arrived before the registration: the edge is gone.
			c.readable, c.writable = true, true
			lp.queue(c)
		case msgReattach:
			c.detached = false
			if c.broken {
				lp.closeConn(c) // nothing more may be sent
				continue
			}
			// Events that came while the command ran were not acted on.
			c.readable, c.writable = true, true
			lp.queue(c)
		case msgKill:
			if !c.detached && !c.syncing {
				lp.queue(c)
			}
		case msgRetry:
			lp.retryBlocked(c)
		case msgDeliver:
			lp.queue(c) // service takes the mailbox
		case msgBlockTimeout, msgUnblockTimeout:
			lp.endBlocked(c, false)
		case msgUnblockError:
			lp.endBlocked(c, true)
		case msgMonitor:
			lp.queue(c)
		case msgUnpause:
			c.paused = false
			c.pausedFlag.Store(false)
			lp.queue(c)
		case msgScriptIdle:
			c.scriptParked = false
			lp.queue(c)
		case msgSynced:
			c.syncing = false
			if !c.syncOK {
				lp.closeConn(c)
				continue
			}
			lp.finish(c)
			lp.queue(c)
		}
	}
}

// round serves the ready connections: their commands, then the GETs they queued, answered
// together, then everything that makes them wait (durability) and their replies.
func (lp *loop) round() {
	ready := lp.ready
	lp.ready = nil
	for _, c := range ready {
		c.queued = false
		lp.service(c)
	}
	if lp.ring == nil {
		for len(lp.gets) > 0 {
			lp.runGets()
		}
	} else {
		for {
			if len(lp.gets) > 0 {
				lp.startGets()
			}
			if !lp.stepGets() {
				break
			}
		}
		lp.ring.Submit()
	}
	dirty := lp.dirty
	lp.dirty = nil
	for _, c := range dirty {
		c.isDirty = false
		lp.finish(c)
	}
	if len(lp.syncs) > 0 {
		lp.syncRound(lp.syncs)
		lp.syncs = nil
	}
	// ready now holds what service left for later (reads beyond this round's share).
}

func (lp *loop) markDirty(c *conn) {
	if !c.isDirty {
		c.isDirty = true
		lp.dirty = append(lp.dirty, c)
	}
}

// service runs what a connection has: commands parsed earlier, then commands read now, until it
// has nothing left, waits (for its GETs, for room in its socket), or was handed to a goroutine.
func (lp *loop) service(c *conn) {
	if c.closed || c.detached || c.syncing || c.waiting {
		return
	}
	lp.takeMail(c)
	if c.monitor.Load() {
		c.drainMonitor()
	}
	if c.scriptParked {
		if c.hup || c.killed.Load() {
			lp.closeConn(c)
		}
		return
	}
	if c.blocked || c.paused {
		// Parked (block.go): it runs nothing until woken, but a client that went away is
		// closed now, not at its timeout.
		if c.hup || c.killed.Load() {
			lp.closeConn(c)
		}
		return
	}
	if c.killed.Load() {
		lp.closeConn(c)
		return
	}
	if c.writable && c.sent < c.w.Len() {
		lp.markDirty(c) // finish writes what is pending
	}
	for reads := 0; ; {
		if c.next < len(c.cmds) {
			if !lp.runCmds(c) {
				return
			}
			continue
		}
		// Commands read already (a batch is at most maxBatch of them) come before a read,
		// and so does a protocol error found after the last batch.
		if !lp.parseCommands(c) {
			return
		}
		if c.next < len(c.cmds) {
			continue
		}
		if c.eof || c.failed != nil {
			c.closeAfter = true
			lp.markDirty(c)
			return
		}
		if !c.readable {
			return
		}
		if reads == maxReadsPerService {
			lp.queue(c) // the rest next round
			return
		}
		reads++
		lp.fill(c)
	}
}

// parseCommands parses the next batch of commands from what was read. It reports false when
// the connection is to be closed (a protocol or limit error, answered).
func (lp *loop) parseCommands(c *conn) bool {
	s := lp.s
	batch := maxBatch
	if !c.cl.Authed && s.authRequired.Load() {
		c.rd.SetLimits(unauthLimits)
		// One command at a time until AUTH succeeds, so that the command after an AUTH is
		// parsed under the limits the AUTH lifted, even in the same pipeline: Redis parses
		// each command after the one before it ran.
		batch = 1
	} else {
		c.rd.SetLimits(*s.limits.Load())
	}
	cmds, err := c.rd.Parse(c.cmds[:0], batch)
	c.cmds, c.next = cmds, 0
	var argv int64
	for _, cmd := range cmds {
		for _, a := range cmd.Args {
			argv += int64(len(a))
		}
	}
	c.argvMem.Store(argv)
	if err != nil {
		c.protocolError(err)
		return false
	}
	return true
}

// fill reads what the socket has, up to readChunk.
func (lp *loop) fill(c *conn) {
	short := false
	n, err := c.rd.Fill(func(p []byte) (int, error) {
		if len(p) > readChunk {
			p = p[:readChunk]
		}
		n, err := unix.Read(c.fd, p)
		if n < 0 {
			n = 0
		}
		// A read that did not fill the buffer took everything the socket had: the next
		// bytes come with a new edge, and no read is wasted on EAGAIN.
		short = n > 0 && n < len(p)
		return n, err
	})
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		c.readable = false
	case err != nil:
		c.failed = err
	case n == 0:
		c.eof = true
	case short && !c.hup:
		c.readable = false
	}
	lp.s.stats.netIn.Add(uint64(n))
	c.cl.QueryBuf.Store(int64(c.rd.Buffered()))
	c.qbufFree.Store(int64(c.rd.Free()))
}

// protocolError answers a protocol or limit error and closes the connection after the replies.
func (c *conn) protocolError(err error) {
	s := c.s
	var pe *resp.ProtocolError
	switch {
	case errors.As(err, &pe):
		s.stats.protoErrs.Add(1)
		s.log.Debug("protocol error", "client", c.cl.Addr, "err", pe.Msg)
		c.w.Error("ERR " + pe.Msg)
	case errors.Is(err, resp.ErrQueryBufferLimit):
		s.stats.qbufKills.Add(1)
		s.log.Warn("client closed for exceeding the query buffer limit", "client", c.cl.Addr,
			"limit", s.cfg.Get("client-query-buffer-limit"))
	}
	c.closeAfter = true
	c.lp.markDirty(c)
}

// runCmds runs the parsed commands from c.next on. It reports false when the connection must
// wait: its GETs are queued for the round's batch, it was handed to a goroutine, its output
// waits for room in the socket, or it is closing.
func (lp *loop) runCmds(c *conn) bool {
	for c.next < len(c.cmds) {
		if c.closeAfter || c.cl.CloseAfterReply {
			c.closeAfter = true
			c.next = len(c.cmds)
			lp.markDirty(c)
			return false
		}
		if c.w.Len()-c.sent >= flushAt {
			// A pipeline with long replies: write them before running more.
			lp.finish(c)
			if c.closed || c.syncing || c.w.Len()-c.sent >= flushAt {
				return false
			}
		}
		cmds := c.cmds[c.next:]
		if c.pausedCmd(cmds[0].Args) && lp.parkPaused(c) {
			return false
		}
		if lp.parkForScript(c, cmds[0].Args) {
			return false
		}
		// While a script runs, what reaches here is answered BUSY or allowed while busy:
		// dispatch does either without touching the keyspace.
		if !lp.s.scripts.Running() {
			if n := c.getRun(cmds, true); n > 0 {
				lp.queueGets(c, cmds[:n])
				return false
			}
			if c.heavy(cmds[0].Args) {
				lp.detach(c)
				return false
			}
		}
		c.next++
		c.dispatch(cmds[0].Args)
		if c.ctx.Block != nil {
			lp.block(c, cmds[0].Args)
			return false
		}
		lp.markDirty(c)
		if c.broken || c.cl.CloseAfterReply {
			c.closeAfter = true
			c.next = len(c.cmds)
			return false
		}
	}
	return true
}

// queueGets adds a run of GETs of c to the round's batch.
func (lp *loop) queueGets(c *conn, run []resp.Command) {
	c.getFrom, c.getLen, c.getDone, c.getLarge, c.getSeen, c.getGets = c.next, len(run), 0, -1, 0, 0
	c.getStart = time.Now()
	db := c.ctx.DB()
	for _, cmd := range run {
		lp.gets = append(lp.gets, keyspace.GetReq{Se: c.ctx.Sess, DB: db, Key: cmd.Args[1]})
		lp.getConn = append(lp.getConn, c)
	}
	c.waiting = true
	c.getMark, c.getNotes = c.w.Len(), c.ctx.Sess.Notes()
}

// runGets answers the batch of GETs: one ReadMany for every connection's, each reply written
// in its connection's order. A connection whose GET finds a large value is handed to a goroutine
// from that GET on, which streams it; its later GETs' answers are dropped.
func (lp *loop) runGets() {
	reqs, conns := lp.gets, lp.getConn
	lp.gets, lp.getConn = nil, nil
	lp.s.stats.cmds.Add(uint64(len(reqs)))
	lp.s.ks.ReadMany(reqs, func(i int, v keyspace.Value, m keyspace.Meta, ok bool, err error) {
		c := conns[i]
		if c.getLarge >= 0 || c.closed {
			return
		}
		if errors.Is(err, keyspace.ErrLarge) {
			c.getLarge = c.getDone
			return
		}
		c.batchReply(v, m, ok, err)
	})
	seen := map[*conn]bool{}
	for _, c := range conns {
		if !seen[c] {
			seen[c] = true
			lp.resumeAfterGets(c)
		}
	}
}

// getBatch is a batch of GETs in flight on the loop's ring.
type getBatch struct {
	reads *keyspace.Reads
	conns []*conn
}

// startGets starts the round's GETs on the ring: their lookups and disk reads go on while the
// loop serves other connections, and stepGets hands their answers on as they complete.
func (lp *loop) startGets() {
	reqs, conns := lp.gets, lp.getConn
	lp.gets, lp.getConn = nil, nil
	lp.s.stats.cmds.Add(uint64(len(reqs)))
	lp.reading = append(lp.reading, &getBatch{reads: lp.s.ks.StartReads(reqs, lp.ring), conns: conns})
}

// stepGets polls the ring, writes the answers that completed and resumes the connections whose
// GETs are all answered. It reports whether it resumed any (which may have queued more GETs).
func (lp *loop) stepGets() bool {
	if len(lp.reading) == 0 {
		return false
	}
	lp.ring.Poll()
	var resumed []*conn
	kept := lp.reading[:0]
	for _, b := range lp.reading {
		done := b.reads.Step(func(i int, v keyspace.Value, m keyspace.Meta, ok bool, err error) {
			c := b.conns[i]
			if !c.closed && c.getLarge < 0 {
				if errors.Is(err, keyspace.ErrLarge) {
					c.getLarge = c.getDone
				} else {
					c.batchReply(v, m, ok, err)
				}
			}
			c.getSeen++
			if c.getSeen == c.getLen {
				resumed = append(resumed, c)
			}
		})
		if !done {
			kept = append(kept, b)
		}
	}
	lp.reading = kept
	for _, c := range resumed {
		lp.resumeAfterGets(c)
	}
	return len(resumed) > 0
}

// resumeAfterGets goes on with a connection whose GETs are answered.
func (lp *loop) resumeAfterGets(c *conn) {
	c.waiting = false
	getCommand.Stats.Usec.Add(uint64(time.Since(c.getStart).Microseconds()))
	getCommand.Stats.Calls.Add(uint64(c.getGets))
	c.cl.LastActive.Store(time.Now().UnixMilli())
	c.cl.SetLastCmd(getCommand)
	lp.markDirty(c)
	if c.closed {
		return
	}
	if c.getLarge >= 0 {
		c.next = c.getFrom + c.getLarge
		lp.detach(c)
		return
	}
	c.next = c.getFrom + c.getLen
	lp.service(c)
}

// batchReply answers the next command of the batch's run: a GET, or a command that reads one
// key whole (prefetchReply).
func (c *conn) batchReply(v keyspace.Value, m keyspace.Meta, ok bool, err error) {
	args := c.cmds[c.getFrom+c.getDone].Args
	if isGet(args[0]) {
		c.getGets++
		c.writeGetReply(v, m, ok, err)
		return
	}
	c.prefetchReply(args, v, m, ok, err)
}

// writeGetReply writes one GET's reply of the batch, with its span for the durability wait.
func (c *conn) writeGetReply(v keyspace.Value, m keyspace.Meta, ok bool, err error) {
	mark := c.w.Len()
	if bad, _ := commands.WriteGetReply(&c.ctx, c.cmds[c.getFrom+c.getDone].Args[1], v, m, ok, err); bad {
		getCommand.Stats.Failed.Add(1)
		c.s.stats.errReplies.Add(1)
		c.countErrorAt(mark)
	}
	// A GET of a batch took from the batch's start to its reply.
	c.s.observe(c, getCommand, c.cmds[c.getFrom+c.getDone].Args, nil, time.Since(c.getStart))
	if c.s.track.Active() {
		c.s.trackGets(c, c.cmds[c.getFrom+c.getDone].Args[1:2])
	}
	c.noteSpan(c.getMark, c.getNotes, false)
	c.getMark, c.getNotes = c.w.Len(), c.ctx.Sess.Notes()
	c.getDone++
}

// finish ends a connection's round: it waits for the durability its replies depend on and
// writes them, as far as the socket takes them; closes it when it is done. A wait that may sync
// (appendfsync always) is left to a goroutine (syncRound), so that a slow disk holds up only the
// connections whose replies depend on it.
func (lp *loop) finish(c *conn) {
	if c.closed || c.detached || c.syncing {
		return
	}
	if c.ctx.Sess.Syncs() {
		if c.waiting {
			// Its GETs in flight look keys up through its session and note their spans: the
			// wait starts once they are answered (resumeAfterGets), so that the goroutine of
			// syncRound is the only one touching them.
			return
		}
		c.syncing = true
		lp.syncs = append(lp.syncs, c)
		return
	}
	if !c.flushLoop() {
		lp.closeConn(c)
		return
	}
	if c.closeAfter && c.sent == c.w.Len() {
		lp.closeConn(c)
	}
}

// syncRound waits, on a goroutine, for the durability the replies of conns depend on (one group
// commit covers them all), and gives each back to the loop to write its replies. Meanwhile the
// loop leaves them alone.
func (lp *loop) syncRound(conns []*conn) {
	lp.s.wg.Add(1)
	go func() {
		defer lp.s.wg.Done()
		for _, c := range conns {
			c.syncOK = c.waitDurable()
		}
		lp.mu.Lock()
		for _, c := range conns {
			lp.inbox = append(lp.inbox, loopMsg{kind: msgSynced, c: c})
		}
		lp.mu.Unlock()
		lp.wake()
	}()
}

// detach hands c to a goroutine for the commands from c.next on (see conn.heavy): they may
// stream long replies or wait for the disk, and only that goroutine waits for the client.
func (lp *loop) detach(c *conn) {
	c.detached = true
	lp.s.wg.Add(1)
	go func() {
		defer lp.s.wg.Done()
		c.runDetached()
		lp.post(loopMsg{kind: msgReattach, c: c})
	}()
}

// closeConn closes a connection the loop owns.
func (lp *loop) closeConn(c *conn) {
	if c.closed {
		return
	}
	lp.unblock(c)
	lp.s.unpark(c)
	lp.s.stopMonitor(c)
	c.closed = true
	unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	delete(lp.conns, int32(c.fd))
	c.closeFd()
	lp.s.forget(c)
}

// sweepIdle closes the connections idle for longer than the timeout setting.
func (lp *loop) sweepIdle(now time.Time) {
	for _, c := range lp.conns {
		// A client that reads nothing gives the loop no event: its soft limit's time runs out
		// here.
		if !c.detached && !c.syncing && c.sent < c.w.Len() && c.overOutputLimit(int64(c.w.Len()-c.sent), now) {
			lp.closeConn(c)
		}
	}
	t := lp.s.cfg.Int("timeout")
	if t <= 0 {
		return
	}
	limit := now.UnixMilli() - t*1000
	for _, c := range lp.conns {
		// As Redis's clientsCronHandleTimeout, which spares replicas, blocked and Pub/Sub
		// clients, but not one inside MULTI: a connection with a command under way (its GETs,
		// a detached command, a durability wait) is not idle either.
		if !c.detached && !c.waiting && !c.syncing && !c.blocked && !c.paused && !c.monitor.Load() && !c.cl.Sub.Subscribed() && c.cl.LastActive.Load() < limit {
			lp.closeConn(c)
		}
	}
}

var errOutputLimit = errors.New("server: client-output-buffer-limit reached")

// fdWrite writes b to a non-blocking socket, as much as it takes now.
func fdWrite(fd int, b []byte) (int, error) {
	n, err := unix.Write(fd, b)
	if n < 0 {
		n = 0
	}
	if err == unix.EAGAIN || err == unix.EINTR {
		err = nil
	}
	return n, err
}

// fdWriteAll writes all of b, waiting for room when the socket is full: the writes of a
// detached command's goroutine, which may wait for the client. While it waits, over is asked
// about the bytes not written yet (at once, then every second); when it says so, the write
// gives up with errOutputLimit.
func fdWriteAll(fd int, b []byte, over func(pending int) bool) (int, error) {
	done := 0
	for done < len(b) {
		n, err := unix.Write(fd, b[done:])
		if n > 0 {
			done += n
		}
		switch {
		case err == unix.EAGAIN:
			if over(len(b) - done) {
				return done, errOutputLimit
			}
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			if _, err := unix.Poll(pfd, 1000); err != nil && err != unix.EINTR {
				return done, err
			}
			if pfd[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
				return done, unix.EPIPE
			}
		case err == unix.EINTR:
		case err != nil:
			return done, err
		}
	}
	return done, nil
}
