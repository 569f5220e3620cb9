package repl

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/services/data/keyspace"
)

// Stream is a primary's change stream: the keyspace's ChangeSink that writes each change into the
// backlog as the commands of Redis's replication stream, and decides how far followers may be
// sent (Shippable).
//
// Encoding. A change of one command is that command (a keyless one, such as PUBLISH, without
// the SELECT or LAVIK.CLOCK described below, which it does not depend on); of several (an EXEC, expiry's removal
// before a write that found the key expired is a change of its own) they go between MULTI and
// EXEC, so a follower applies them together. A SELECT precedes a command of another database
// than the one before it, as in Redis. LAVIK.CLOCK <unix ms> precedes a change decided by a
// clock other than the previous change's: the follower runs the commands by that clock, so that
// SET ... EX 10, EXPIRE, XADD * and expiry decide exactly as they did on the primary whatever
// the follower's own clock and however late it applies them (Redis rewrites relative times into
// absolute ones command by command instead; one clock covers every command, and the ones yet to
// come). Redis's tools (redis-cli --replica) show it as one more command.
//
// Durability. Change runs under the keyspace's shard locks, before the change's records are
// durable. It notes what the change depends on in a keyspace session; advance swaps that
// session out, waits for it as a client's reply would (the same group commit), and only then
// moves Shippable past the bytes, so no follower ever holds what a crash of the primary could
// still take back.
//
// Shipping before replying. A write's bytes leave for the online followers no later than its
// reply leaves for the client, as Redis fills its replicas' buffers before it writes replies:
// a kill -9 of the primary right after a reply then finds the write in the follower's socket
// (or past it), and a failover keeps it. The server's reply path calls Ship once a reply's own
// wait for durability is done: it advances Shippable to everything appended so far (one group
// commit covers a whole round of replies) and writes the new bytes to each online follower's
// socket without blocking (push). Only a follower whose socket is full misses that: its own
// sender goroutine waits for room and catches up, and until then the write is as exposed as
// it is in Redis's replica output buffer. The shipper goroutine covers the changes that no
// reply waits for (expiry's DELs, GETACK, replies that went nowhere), a moment later
// (shipDelay) so that it does not wake for every change the reply path ships anyway.
// Rejected: replies waiting for the followers' goroutines to send, which costs two goroutine
// hand-offs per round (with one P per process, as pinned benchmarks run, the loop starved the
// shipper for tens of milliseconds at a time); writing to followers inside Change, under the
// keyspace's locks and before the records are durable.
type Stream struct {
	ks  *keyspace.Keyspace
	bl  *Backlog
	log *slog.Logger

	mu sync.Mutex
	// db is the database of the stream's last SELECT (-1: none yet); clock the last
	// LAVIK.CLOCK's value. Both guarded by mu.
	db    int
	clock int64
	buf   []byte
	// deps are what the bytes appended since the shipper last took them depend on; spare is
	// the session the shipper hands back. Guarded by mu.
	deps, spare *keyspace.Session

	// shippable is the offset up to which the stream may go to followers. Invariant:
	// bl.First() <= shippable <= bl.End().
	shippable atomic.Int64
	// shipMu serializes advance. failing (guarded by shipMu) says the last wait failed, and
	// its session forgot what it waited for.
	shipMu   sync.Mutex
	failing  bool
	kick     chan struct{}
	notifyMu sync.Mutex
	notify   chan struct{} // closed when shippable moves
	stop     chan struct{}
	done     chan struct{}
	// followers are the online followers the stream is pushed to, copied on write under fmu.
	fmu       sync.Mutex
	followers atomic.Pointer[[]*followerLink]
}

// shipDelay is how long the shipper lets the reply path ship a change before it ships it
// itself. Too short: the shipper wakes for nearly every round of changes the reply path ships
// anyway; too long: a change no reply waits for (an expiry's DEL, a GETACK) reaches the
// followers that much later.
const shipDelay = time.Millisecond

// NewStream starts a change stream into bl (its offsets continue bl's) for ks. It does not
// register itself: see Keyspace.SetChangeSink.
func NewStream(ks *keyspace.Keyspace, bl *Backlog, log *slog.Logger) *Stream {
	s := &Stream{ks: ks, bl: bl, log: log, db: -1, deps: ks.NewSession(), spare: ks.NewSession(),
		kick: make(chan struct{}, 1), notify: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	s.shippable.Store(bl.End())
	go s.ship()
	return s
}

// Change implements keyspace.ChangeSink.
func (s *Stream) Change(c *keyspace.Change) int64 {
	s.mu.Lock()
	b := s.buf[:0]
	if c.Now != s.clock && !c.Keyless {
		b = appendCommand(b, "LAVIK.CLOCK", strconv.FormatInt(c.Now, 10))
		s.clock = c.Now
	}
	multi := len(c.Effects) > 1
	if multi {
		b = appendCommand(b, "MULTI")
	}
	for _, e := range c.Effects {
		if e.DB != s.db && !c.Keyless {
			b = appendCommand(b, "SELECT", strconv.Itoa(e.DB))
			s.db = e.DB
		}
		b = appendArgs(b, e.Args)
	}
	if multi {
		b = appendCommand(b, "EXEC")
	}
	end := s.bl.Append(b)
	c.NoteDeps(s.deps)
	s.buf = b
	s.mu.Unlock()
	s.wake()
	return end
}

// Append adds commands of the stream's own (PING, REPLCONF GETACK) and returns the offset past
// them. They depend on nothing.
func (s *Stream) Append(args ...string) int64 {
	s.mu.Lock()
	s.buf = appendCommand(s.buf[:0], args...)
	end := s.bl.Append(s.buf)
	s.mu.Unlock()
	s.wake()
	return end
}

// Ping sends PING down the stream, after the primary's clock: an idle link still tells the
// follower the time, by which its reads hide expired keys.
func (s *Stream) Ping() {
	s.mu.Lock()
	b := s.buf[:0]
	if now := s.ks.Now(); now != s.clock {
		b = appendCommand(b, "LAVIK.CLOCK", strconv.FormatInt(now, 10))
		s.clock = now
	}
	s.buf = appendCommand(b, "PING")
	s.bl.Append(s.buf)
	s.mu.Unlock()
	s.wake()
}

// wake tells the shipper there are new bytes.
func (s *Stream) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// End is the offset past the last byte of the stream.
func (s *Stream) End() int64 { return s.bl.End() }

// Shippable is the offset up to which the stream may be sent.
func (s *Stream) Shippable() int64 { return s.shippable.Load() }

// Backlog is the stream's backlog.
func (s *Stream) Backlog() *Backlog { return s.bl }

// WaitShippable waits until Shippable passes off or ctx ends; it returns Shippable.
func (s *Stream) WaitShippable(ctx context.Context, off int64) int64 {
	for {
		s.notifyMu.Lock()
		ch := s.notify
		s.notifyMu.Unlock()
		if sh := s.shippable.Load(); sh > off {
			return sh
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return s.shippable.Load()
		}
	}
}

// ship moves Shippable forward, and the online followers' streams with it, for the changes the
// reply path has not shipped (see Ship).
func (s *Stream) ship() {
	defer close(s.done)
	delay := time.NewTimer(time.Hour)
	delay.Stop()
	defer delay.Stop()
	var logged bool
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			return
		}
		delay.Reset(shipDelay)
		select {
		case <-delay.C:
		case <-s.stop:
			return
		}
		if err := s.advance(); err != nil {
			if !logged {
				s.log.Warn("change stream waits for the value log", "err", err)
				logged = true
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-s.stop:
				return
			}
			s.wake()
			continue
		}
		logged = false
		s.pushAll()
	}
}

// advance moves Shippable to the end of the stream once everything appended so far is as
// durable as the appendfsync policy promises. Concurrent callers wait for one another; the one
// that finds the work done returns at once.
func (s *Stream) advance() error {
	s.shipMu.Lock()
	defer s.shipMu.Unlock()
	if s.shippable.Load() >= s.bl.End() {
		return nil
	}
	s.mu.Lock()
	end := s.bl.End()
	se := s.deps
	s.deps, s.spare = s.spare, nil
	s.mu.Unlock()
	err := se.Wait()
	if err == nil && s.failing {
		// A wait failed before, and its session forgot what it waited for: make sure
		// everything appended so far is durable before moving on.
		err = s.ks.WaitAll()
	}
	s.mu.Lock()
	s.spare = se
	s.mu.Unlock()
	if err != nil {
		s.failing = true
		return err
	}
	s.failing = false
	if end > s.shippable.Load() {
		s.shippable.Store(end)
		s.notifyMu.Lock()
		close(s.notify)
		s.notify = make(chan struct{})
		s.notifyMu.Unlock()
	}
	return nil
}

// Ship hands the stream, up to everything appended so far, to the online followers' sockets
// once it is durable: the server calls it after a reply's own durability wait and before the
// reply leaves (see Durability above). It does not block on a follower: one whose socket is full
// is left to its sender. A failed durability wait leaves the stream to the shipper, which
// retries.
func (s *Stream) Ship() {
	fs := s.followers.Load()
	if fs == nil || len(*fs) == 0 {
		return
	}
	if s.shippable.Load() < s.bl.End() && s.advance() != nil {
		return
	}
	sh := s.shippable.Load()
	for _, f := range *fs {
		if f.sent.Load() < sh {
			f.push(s, sh)
		}
	}
}

// pushAll pushes Shippable to every online follower.
func (s *Stream) pushAll() {
	fs := s.followers.Load()
	if fs == nil {
		return
	}
	sh := s.shippable.Load()
	for _, f := range *fs {
		if f.sent.Load() < sh {
			f.push(s, sh)
		}
	}
}

// addFollower makes f one of the followers the stream is pushed to.
func (s *Stream) addFollower(f *followerLink) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	var fs []*followerLink
	if p := s.followers.Load(); p != nil {
		fs = append(fs, *p...)
	}
	fs = append(fs, f)
	s.followers.Store(&fs)
}

// removeFollower undoes addFollower.
func (s *Stream) removeFollower(f *followerLink) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	p := s.followers.Load()
	if p == nil {
		return
	}
	var fs []*followerLink
	for _, x := range *p {
		if x != f {
			fs = append(fs, x)
		}
	}
	s.followers.Store(&fs)
}

// Close stops the shipper. The keyspace must no longer hand it changes.
func (s *Stream) Close() {
	close(s.stop)
	<-s.done
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte { return appendArgs(b, args) }

// appendArgs is appendCommand for arguments of either kind.
func appendArgs[T string | []byte](b []byte, args []T) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
