package server

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/services/data/commands"
)

// Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, XREAD, XREADGROUP). A command that
// finds nothing to take sets Ctx.Block instead of replying; its loop parks the connection
// (loop.block): the connection reads and runs nothing more, and the loop is free for the others.
// blockers lists the parked connections by key, in arrival order. A write to a key (signalWrites,
// after every command that may write) wakes the first connection parked on it, on its own loop,
// which runs its command again (msgRetry): it takes what it finds, replies, and goes on with its
// pipeline; its own write wakes the next one parked on the key, so a push of n elements serves up
// to n clients in arrival order. Finding nothing again, it stays parked, first in line. A deadline
// (a timer posting msgBlockTimeout), CLIENT UNBLOCK (msgUnblock) or the client going away end the
// wait; the first two reply as Redis does.
//
// A parked connection costs its entry in blockers and, with a timeout, one timer: 10,000 of
// them cost memory, and no CPU until a key is written.
type blockers struct {
	mu    sync.Mutex
	byKey map[string][]*conn
	n     atomic.Int64
}

func blockKey(db int, key []byte) string { return string(append([]byte{byte(db)}, key...)) }

func (b *blockers) add(c *conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byKey == nil {
		b.byKey = map[string][]*conn{}
	}
	for _, k := range c.blockKeys {
		b.byKey[k] = append(b.byKey[k], c)
	}
	b.n.Add(1)
}

func (b *blockers) remove(c *conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range c.blockKeys {
		q := b.byKey[k]
		for i, w := range q {
			if w == c {
				q = append(q[:i], q[i+1:]...)
				break
			}
		}
		if len(q) == 0 {
			delete(b.byKey, k)
		} else {
			b.byKey[k] = q
		}
	}
	b.n.Add(-1)
}

// wake asks the first connection parked on each of keys (blockKey form) to run its command
// again.
func (b *blockers) wake(keys []string) {
	var first []*conn
	b.mu.Lock()
	for _, k := range keys {
		if q := b.byKey[k]; len(q) > 0 {
			first = append(first, q[0])
		}
	}
	b.mu.Unlock()
	for _, c := range first {
		if c.retryPosted.CompareAndSwap(false, true) {
			c.lp.post(loopMsg{kind: msgRetry, c: c})
		}
	}
}

// signalWrites wakes the connections parked on the keys cmd (args) wrote, when any is parked:
// for EXEC, the keys of every command of the transaction (multi, taken before it ran); for a
// script (EVAL, FCALL, or one inside EXEC), also the keys its commands wrote (wrote, from
// Ctx.Wrote), which it need not have declared. As in Redis, the clients it serves run after it.
func (s *Server) signalWrites(db int, cmd *commands.Command, args [][]byte, multi *commands.Multi, wrote []commands.KeyRef) {
	if s.blockers.n.Load() == 0 {
		return
	}
	var keys []string
	var swapped []int
	add := func(cmd *commands.Command, args [][]byte) {
		var pos []int
		if cmd.Keys != nil {
			pos, _ = cmd.Keys(args)
		} else {
			pos = cmd.KeyIndexes(len(args))
		}
		for _, p := range pos {
			keys = append(keys, blockKey(db, args[p]))
		}
	}
	if cmd.Name == "exec" && multi != nil {
		multi.Each(add)
	} else {
		add(cmd, args)
	}
	for _, k := range wrote {
		if k.AllKeys {
			swapped = append(swapped, k.DB) // a SWAPDB: a parked command that finds nothing parks again
			continue
		}
		keys = append(keys, blockKey(k.DB, k.Key))
	}
	if len(swapped) > 0 {
		keys = append(keys, s.blockers.keysOf(swapped)...)
	}
	s.blockers.wake(keys)
}

// keysOf lists the keys (blockKey form) connections are parked on in databases dbs.
func (b *blockers) keysOf(dbs []int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for k := range b.byKey {
		if slices.Contains(dbs, int(k[0])) {
			keys = append(keys, k)
		}
	}
	return keys
}

// block parks c, whose command args asked for it (Ctx.Block).
func (lp *loop) block(c *conn, args [][]byte) {
	req := c.ctx.Block
	c.ctx.Block = nil
	if req.Args != nil {
		args = req.Args
	}
	c.blocked = true
	c.blockArgs = make([][]byte, len(args))
	for i, a := range args {
		c.blockArgs[i] = append([]byte(nil), a...)
	}
	c.blockKeys = c.blockKeys[:0]
	for _, k := range req.Keys {
		c.blockKeys = append(c.blockKeys, blockKey(req.DB, k))
	}
	lp.s.blockers.add(c)
	c.isBlocked.Store(true)
	// A push between the command finding nothing and this registration woke nobody: look once
	// more, now that any later push will wake c.
	if c.retryPosted.CompareAndSwap(false, true) {
		lp.post(loopMsg{kind: msgRetry, c: c})
	}
	if !req.Deadline.IsZero() {
		c.blockTimer = time.AfterFunc(time.Until(req.Deadline), func() {
			lp.post(loopMsg{kind: msgBlockTimeout, c: c})
		})
	}
	lp.markDirty(c) // the replies of the commands before it go out
}

// unblock ends c's wait, and wakes the first connection parked after it on its keys: served,
// c's own write woke c itself; not served, a wake-up meant for c may be lost with it.
func (lp *loop) unblock(c *conn) {
	if !c.blocked {
		return
	}
	c.blocked = false
	c.isBlocked.Store(false)
	if c.blockTimer != nil {
		c.blockTimer.Stop()
		c.blockTimer = nil
	}
	lp.s.blockers.remove(c)
	lp.s.blockers.wake(c.blockKeys)
	c.blockArgs = nil
}

// retryBlocked runs a parked connection's command again after a write to one of its keys.
func (lp *loop) retryBlocked(c *conn) {
	c.retryPosted.Store(false)
	if !c.blocked || c.closed {
		return
	}
	c.ctx.Retrying = true
	c.dispatch(c.blockArgs)
	c.ctx.Retrying = false
	if c.ctx.Block != nil {
		c.ctx.Block = nil // nothing there after all: still parked, still first in line
		return
	}
	lp.unblock(c)
	lp.markDirty(c)
	lp.queue(c) // on with its pipeline
}

// endBlocked ends a parked connection's wait with a reply of its own: null, as at a timeout,
// or CLIENT UNBLOCK's error.
func (lp *loop) endBlocked(c *conn, withError bool) {
	if !c.blocked || c.closed {
		return
	}
	lp.unblock(c)
	if withError {
		c.w.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
	} else {
		c.w.NullArray()
	}
	lp.markDirty(c)
	lp.queue(c)
}

// requestUnblock is the client's Unblock (CLIENT UNBLOCK): it reports whether the client was
// parked; its loop ends the wait.
func (c *conn) requestUnblock(withError bool) bool {
	if !c.isBlocked.Load() {
		return false
	}
	kind := msgUnblockTimeout
	if withError {
		kind = msgUnblockError
	}
	c.lp.post(loopMsg{kind: kind, c: c})
	return true
}

// blockingCmd reports whether args name a command that may block (it runs on the loop).
func blockingCmd(args [][]byte) bool {
	cmd := commands.Lookup(args[0])
	return cmd != nil && cmd.Flags&commands.FlagBlocking != 0
}
