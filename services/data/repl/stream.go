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
// durable. It notes what the change depends on in a keyspace session; the shipper goroutine
// swaps that session out, waits for it as a client's reply would (the same group commit), and
// only then moves Shippable past the bytes, so no follower ever holds what a crash of the
// primary could still take back.
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
	kick      chan struct{}
	notifyMu  sync.Mutex
	notify    chan struct{} // closed when shippable moves
	stop      chan struct{}
	done      chan struct{}
}

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

// ship moves Shippable forward as the keyspace makes the stream's changes durable.
func (s *Stream) ship() {
	defer close(s.done)
	var failing bool
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			return
		}
		s.mu.Lock()
		end := s.bl.End()
		se := s.deps
		s.deps, s.spare = s.spare, nil
		s.mu.Unlock()
		err := se.Wait()
		if err == nil && failing {
			// A wait failed before, and its session forgot what it waited for: make sure
			// everything appended so far is durable before moving on.
			err = s.ks.WaitAll()
		}
		s.mu.Lock()
		s.spare = se
		s.mu.Unlock()
		if err != nil {
			if !failing {
				s.log.Warn("change stream waits for the value log", "err", err)
			}
			failing = true
			select {
			case <-time.After(100 * time.Millisecond):
			case <-s.stop:
				return
			}
			s.wake()
			continue
		}
		failing = false
		if end > s.shippable.Load() {
			s.shippable.Store(end)
			s.notifyMu.Lock()
			close(s.notify)
			s.notify = make(chan struct{})
			s.notifyMu.Unlock()
		}
	}
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
