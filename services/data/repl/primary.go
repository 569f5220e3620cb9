package repl

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/keyspace"
)

// followerState is where a follower's link stands, as INFO's slaveN state names it.
type followerState int32

const (
	stateWaitBgsave followerState = iota // preparing the snapshot
	stateSendBulk                        // sending the snapshot
	stateOnline                          // streaming changes
)

func (s followerState) String() string {
	return [...]string{"wait_bgsave", "send_bulk", "online"}[s]
}

type atomicState struct{ v atomic.Int32 }

func (a *atomicState) Load() followerState   { return followerState(a.v.Load()) }
func (a *atomicState) Store(s followerState) { a.v.Store(int32(s)) }

// followerLink is one follower a primary serves.
type followerLink struct {
	conn    net.Conn
	ip      string
	port    int
	id      int64
	state   atomicState
	ack     atomic.Int64 // the offset it acknowledged it applied
	ackTime atomic.Int64 // unix ms of its last acknowledgement
	once    sync.Once
	done    chan struct{}

	// The stream's way out (push). rc writes to conn's descriptor without blocking.
	// Lock order: pmu, then conn's write lock (taken by rc.Write).
	rc  syscall.RawConn
	pmu sync.Mutex
	// sent is the stream offset written to the socket so far. Written under pmu; read
	// anywhere. Invariant: sent <= the stream's Shippable.
	sent atomic.Int64
	// blocked says the socket was full: the sender goroutine owns the writing until it
	// has caught up, and push leaves the follower alone. Guarded by pmu.
	blocked bool
	buf     []byte // guarded by pmu
	// wake tells the sender goroutine to take over (blocked was set).
	wake chan struct{}
	err  atomic.Pointer[error] // what broke the link on a push
}

func (f *followerLink) close() {
	f.once.Do(func() {
		close(f.done)
		f.conn.Close()
	})
}

// push writes the stream to f, from what it was sent up to sh, as far as its socket takes it
// without waiting. A full socket hands the rest to the sender goroutine (sendStream); a failed
// write closes the link.
func (f *followerLink) push(s *Stream, sh int64) {
	f.pmu.Lock()
	if f.blocked || f.sent.Load() >= sh {
		f.pmu.Unlock()
		return
	}
	var full bool
	var werr error
	err := f.rc.Write(func(fd uintptr) bool {
		full, werr = f.writeLocked(int(fd), s, sh)
		return true
	})
	if full {
		f.blocked = true
	}
	f.pmu.Unlock()
	if err == nil {
		err = werr
	}
	switch {
	case err != nil:
		f.fail(err)
	case full:
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}

// writeLocked writes the stream's bytes from f.sent up to sh to descriptor fd, which does not
// block: full reports that the socket took only part of them. f.pmu is held.
func (f *followerLink) writeLocked(fd int, s *Stream, sh int64) (full bool, err error) {
	for off := f.sent.Load(); off < sh; off = f.sent.Load() {
		m, err := s.Backlog().ReadAt(f.buf[:min(int64(len(f.buf)), sh-off)], off)
		if err != nil {
			return false, fmt.Errorf("repl: follower needs offset %d: %w", off, err)
		}
		for p := f.buf[:m]; len(p) > 0; {
			w, err := unix.Write(fd, p)
			if w > 0 {
				f.sent.Add(int64(w))
				p = p[w:]
			}
			switch {
			case err == unix.EINTR:
			case err == unix.EAGAIN:
				return true, nil
			case err != nil:
				return false, err
			}
		}
	}
	return false, nil
}

// fail breaks the link after a failed push.
func (f *followerLink) fail(err error) {
	f.err.CompareAndSwap(nil, &err)
	f.close()
}

// sortedFollowersLocked lists the followers by connection id. n.mu is held.
func (n *Node) sortedFollowersLocked() []*followerLink {
	out := make([]*followerLink, 0, len(n.followers))
	for f := range n.followers {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *followerLink) int { return int(a.id - b.id) })
	return out
}

// Sync implements commands.Replication: it serves one follower's PSYNC (or SYNC) on conn until
// the link breaks. A PSYNC naming this node's history at an offset the backlog still holds
// continues from there (+CONTINUE); anything else gets the whole keyspace (+FULLRESYNC, the
// snapshot, then the stream from the snapshot's offset).
func (n *Node) Sync(conn net.Conn, ready <-chan struct{}, cl *commands.Client, args [][]byte) {
	<-ready
	ip, _, _ := net.SplitHostPort(conn.RemoteAddr().String())
	if cl.ReplIP != "" {
		ip = cl.ReplIP
	}
	f := &followerLink{conn: conn, ip: ip, port: cl.ReplPort, id: cl.ID, done: make(chan struct{})}
	f.ackTime.Store(time.Now().UnixMilli())
	defer f.close()

	n.mu.Lock()
	if n.link != nil {
		n.mu.Unlock()
		conn.Write([]byte("-ERR this node follows a primary and serves no followers\r\n"))
		return
	}
	s, err := n.streamLocked()
	if err != nil {
		n.mu.Unlock()
		n.log.Error("replication: cannot start the change stream", "err", err)
		fmt.Fprintf(conn, "-ERR %s\r\n", strings.ReplaceAll(err.Error(), "\r\n", " "))
		return
	}
	replid := n.replid
	psync := strings.EqualFold(string(args[0]), "psync")
	from := int64(-1)
	if psync {
		off, err := strconv.ParseInt(string(args[2]), 10, 64)
		// PSYNC names the next byte the follower needs, counting from 1. The history this
		// node followed before its promotion is good up to where it got it.
		if err == nil && (string(args[1]) == replid || n.replid2 != "" && string(args[1]) == n.replid2 && off-1 <= n.offset2) {
			from = off - 1
		}
	}
	bl := s.Backlog()
	partial := from >= 0 && from >= bl.First() && from <= bl.End()
	n.followers[f] = struct{}{}
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.followers, f)
		n.mu.Unlock()
		n.ackNotify()
	}()

	go n.readAcks(f)
	log := n.log.With("follower", conn.RemoteAddr().String(), "port", f.port)
	if partial {
		n.syncPartialOK.Add(1)
		log.Info("replication: partial resync", "from", from, "backlog_first", bl.First(), "end", bl.End())
		if _, err := fmt.Fprintf(conn, "+CONTINUE %s\r\n", replid); err != nil {
			return
		}
		f.ack.Store(from)
	} else {
		if psync && string(args[1]) != "?" {
			n.syncPartialErr.Add(1)
		}
		n.syncFull.Add(1)
		var err error
		if from, err = n.sendSnapshot(f, s, replid, psync, log); err != nil {
			log.Warn("replication: full resync failed", "err", err)
			return
		}
	}
	f.state.Store(stateOnline)
	if err := n.sendStream(f, s, from); err != nil && !errors.Is(err, net.ErrClosed) {
		log.Info("replication: follower link closed", "err", err)
	}
}

// sendSnapshot sends +FULLRESYNC and the snapshot; it returns the stream offset the snapshot
// stands at.
func (n *Node) sendSnapshot(f *followerLink, s *Stream, replid string, psync bool, log interface {
	Info(string, ...any)
}) (int64, error) {
	f.state.Store(stateWaitBgsave)
	var off int64
	var funcs []byte
	start := time.Now()
	sn := n.ks.Snapshot(func() {
		// The libraries as of the snapshot: a change after it comes down the stream (a change
		// both in it and in the stream is applied twice, which leaves the same libraries).
		funcs = commands.FunctionsPayload(n.opts.Server)
		s.mu.Lock()
		off = s.bl.End()
		// The follower starts from the snapshot: the next change must say its database
		// and clock again.
		s.db, s.clock = -1, 0
		s.mu.Unlock()
	})
	defer sn.Close()
	log.Info("replication: full resync", "offset", off, "keys", sn.Keys(), "copy", time.Since(start))
	if psync {
		if _, err := fmt.Fprintf(f.conn, "+FULLRESYNC %s %d\r\n", replid, off); err != nil {
			return 0, err
		}
	}
	// Every record the snapshot holds is durable before a byte of it leaves.
	ctx, cancel := context.WithTimeout(context.Background(), n.opts.Timeout)
	sh := s.WaitShippable(ctx, off-1)
	cancel()
	if sh < off {
		return 0, errors.New("repl: the value log did not make the snapshot durable in time")
	}
	f.state.Store(stateSendBulk)
	var mark [20]byte
	rand.Read(mark[:])
	eof := hex.EncodeToString(mark[:])
	bw := bufio.NewWriterSize(&deadlineWriter{c: f.conn, d: n.opts.Timeout}, 256<<10)
	fmt.Fprintf(bw, "$EOF:%s\r\n", eof)
	sw := newSnapWriter(bw)
	var err error
	if funcs != nil {
		err = sw.functions(funcs)
	}
	if err == nil {
		err = sn.Each(func(db int, key []byte, v keyspace.Value, m keyspace.Meta) error {
			b, err := v.Bytes()
			if err != nil {
				return err
			}
			return sw.key(db, m.Type, m.ExpireAt, key, b)
		})
	}
	if err == nil {
		err = sw.end()
	}
	if err == nil {
		_, err = bw.WriteString(eof)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return 0, err
	}
	log.Info("replication: snapshot sent", "keys", sn.Keys(), "took", time.Since(start))
	return off, nil
}

// deadlineWriter writes to a connection, each write within d.
type deadlineWriter struct {
	c net.Conn
	d time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.c.SetWriteDeadline(time.Now().Add(w.d))
	return w.c.Write(p)
}

// sendStream sends the stream to f from offset off until the link breaks or the backlog no
// longer holds what f needs (it then reconnects for a full resync). The stream is pushed to f
// by the reply path and the shipper (Stream.Ship, push) while its socket takes it; this
// goroutine writes only what they could not: the catch-up from off, and whatever piles up
// while the socket is full, waiting for room within the timeout.
func (n *Node) sendStream(f *followerLink, s *Stream, off int64) error {
	sc, ok := f.conn.(syscall.Conn)
	if !ok {
		return fmt.Errorf("repl: follower connection %T has no descriptor", f.conn)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	f.rc = rc
	f.buf = make([]byte, 256<<10)
	f.wake = make(chan struct{}, 1)
	f.sent.Store(off)
	f.blocked = true // the catch-up is this goroutine's
	f.wake <- struct{}{}
	s.addFollower(f)
	defer s.removeFollower(f)
	for {
		select {
		case <-f.wake:
		case <-f.done:
			if p := f.err.Load(); p != nil {
				return *p
			}
			return net.ErrClosed
		}
		f.conn.SetWriteDeadline(time.Now().Add(n.opts.Timeout))
		var werr error
		err := rc.Write(func(fd uintptr) bool {
			f.pmu.Lock()
			defer f.pmu.Unlock()
			full, err := f.writeLocked(int(fd), s, s.Shippable())
			if err != nil {
				werr = err
				return true
			}
			if full {
				return false // wait for room
			}
			// Caught up with Shippable as it stands under pmu: a push that found the
			// link blocked moved Shippable before it looked, so nothing is left behind.
			f.blocked = false
			return true
		})
		f.conn.SetWriteDeadline(time.Time{})
		if err == nil {
			err = werr
		}
		if err != nil {
			return err
		}
	}
}

// readAcks reads what the follower sends on its link: REPLCONF ACK <offset> (once a second and
// when asked). An online link silent for longer than the timeout is dropped; a follower loading
// a snapshot says nothing until it is done, however long that takes.
func (n *Node) readAcks(f *followerLink) {
	defer f.close()
	rd := resp.NewReader(&ackReader{f: f, d: n.opts.Timeout}, resp.Limits{})
	var cmds []resp.Command
	for {
		var err error
		cmds, err = rd.ReadCommands(cmds, 0)
		if err != nil {
			return
		}
		for _, c := range cmds {
			if len(c.Args) >= 3 && strings.EqualFold(string(c.Args[0]), "replconf") && strings.EqualFold(string(c.Args[1]), "ack") {
				if off, err := strconv.ParseInt(string(c.Args[2]), 10, 64); err == nil {
					f.ack.Store(off)
					f.ackTime.Store(time.Now().UnixMilli())
					n.ackNotify()
				}
			}
		}
	}
}

type deadlineReader struct {
	c net.Conn
	d time.Duration
}

func (r *deadlineReader) Read(p []byte) (int, error) {
	r.c.SetReadDeadline(time.Now().Add(r.d))
	return r.c.Read(p)
}

var _ io.Reader = (*deadlineReader)(nil)

// ackReader reads a follower's link, within d once the follower is online.
type ackReader struct {
	f *followerLink
	d time.Duration
}

func (r *ackReader) Read(p []byte) (int, error) {
	for {
		// Not online yet: wake up now and then to see whether it is.
		waiting := r.f.state.Load() != stateOnline
		d := r.d
		if waiting {
			d = time.Second
		}
		r.f.conn.SetReadDeadline(time.Now().Add(d))
		n, err := r.f.conn.Read(p)
		var ne net.Error
		if n == 0 && waiting && errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		return n, err
	}
}

// ackNotify wakes WAITs.
func (n *Node) ackNotify() {
	n.mu.Lock()
	close(n.acks)
	n.acks = make(chan struct{})
	n.mu.Unlock()
}

// Wait implements commands.Replication: WAIT numreplicas timeout. A Lavik follower
// acknowledges what it applied as soon as it is durable (link.go), so WAIT only waits for the
// acknowledgements. Redis asks its replicas with REPLCONF GETACK at once; here a follower that
// has not answered within getAckDelay is asked so (one that acknowledges only once a second, or
// when asked). Rejected: GETACK with every WAIT, as before, which put a command in the stream
// for every WAIT, and had the follower apply, make durable and acknowledge it after the write it
// followed, a second round for nothing.
func (n *Node) Wait(offset int64, want int, timeout time.Duration) int {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	var ask <-chan time.Time
	asked := false
	for {
		n.mu.Lock()
		count := 0
		for f := range n.followers {
			if f.state.Load() == stateOnline && f.ack.Load() >= offset {
				count++
			}
		}
		ch, s := n.acks, n.stream
		n.mu.Unlock()
		if count >= want {
			return count
		}
		if ask == nil && !asked && s != nil {
			t := time.NewTimer(getAckDelay)
			defer t.Stop()
			ask = t.C
		}
		select {
		case <-ch:
		case <-ask:
			ask, asked = nil, true
			s.Append("REPLCONF", "GETACK", "*")
		case <-deadline:
			return count
		}
	}
}

// getAckDelay is how long WAIT waits for followers' own acknowledgements before it asks for
// them (REPLCONF GETACK). Too short: a GETACK in the stream for WAITs that a follower was about
// to answer anyway; too long: a follower that acknowledges only when asked holds WAIT that long.
const getAckDelay = 20 * time.Millisecond

// ShipReplies hands the primary's change stream, up to every change made so far, to the online
// followers' sockets once it is durable (Stream.Ship): the server calls it before it lets a
// reply go, so that a write's bytes leave for the followers no later than its reply leaves for
// the client. A follower's node has no stream and does nothing.
func (n *Node) ShipReplies() {
	if s, ok := n.ks.ChangeSink().(*Stream); ok {
		s.Ship()
	}
}
