package commands

import (
	"strings"
	"time"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, with Redis's rules.
//
// After MULTI the server queues each command instead of running it (Multi.Queue) and replies
// +QUEUED. A command refused while queuing (unknown, wrong arity, not allowed inside a
// transaction, refused for lack of authentication or because the log cannot write) marks the
// transaction, and EXEC then discards it with EXECABORT. MULTI, EXEC, DISCARD, WATCH and QUIT
// run at once. EXEC runs the queued commands through keyspace.Exec: atomically with respect to
// every other client, and as one transaction in the log, so that a crash keeps all of it or
// none. A command that fails inside EXEC (WRONGTYPE, a bad argument found while running) gets
// its error in EXEC's reply and the others still apply, as in Redis. WATCHed keys make EXEC
// reply with a null array, running nothing, when any of them changed (or expired) since.

func init() {
	tx := []string{"@transaction"}
	register(
		&Command{Name: "multi", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, Group: "transactions", Since: "1.2.0", Complexity: "O(1)",
			Summary: "Starts a transaction.", Handler: multiCmd, ExtraACL: tx},
		&Command{Name: "exec", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagSkipSlowlog, Group: "transactions", Since: "1.2.0", Complexity: "Depends on commands in the transaction",
			Summary: "Executes all commands in a transaction.", Handler: execCmd, ExtraACL: tx},
		&Command{Name: "discard", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, Group: "transactions", Since: "2.0.0", Complexity: "O(N), when N is the number of queued commands",
			Summary: "Discards a transaction.", Handler: discardCmd, ExtraACL: tx},
		&Command{Name: "watch", Arity: -2, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, FirstKey: 1, LastKey: -1, Step: 1, Group: "transactions", Since: "2.2.0", Complexity: "O(1) for every key.",
			Summary: "Monitors changes to keys to determine the execution of a transaction.", Handler: watchCmd, ExtraACL: tx},
		&Command{Name: "unwatch", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, Group: "transactions", Since: "2.2.0", Complexity: "O(1)",
			Summary: "Forgets about watched keys of a transaction.", Handler: unwatchCmd, ExtraACL: tx},
	)
}

// Multi is a transaction being queued.
type Multi struct {
	cmds  []queued
	flags Flag // every queued command's flags
	bytes int64
	// dirty: a command was refused while queuing; EXEC discards the transaction.
	dirty bool
}

type queued struct {
	cmd  *Command
	args [][]byte
}

// Errors of transactions, with Redis 7's texts.
const (
	ErrNotInMulti    Error = "ERR Command not allowed inside a transaction"
	errMultiNested   Error = "ERR MULTI calls can not be nested"
	errExecNoMulti   Error = "ERR EXEC without MULTI"
	errDiscardNoMult Error = "ERR DISCARD without MULTI"
	errWatchInMulti  Error = "ERR WATCH inside MULTI is not allowed"
	errExecAbort     Error = "EXECABORT Transaction discarded because of previous errors."
)

// RunsInMulti reports whether cmd runs at once inside MULTI instead of being queued.
func (c *Command) RunsInMulti() bool {
	switch c.Name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

// Queue adds a command to the transaction, copying its arguments (the caller's buffers are
// reused for the next commands). It refuses, marking the transaction, a command that may not be
// queued or would take the transaction past limit bytes of arguments (0: no limit).
func (m *Multi) Queue(cmd *Command, args [][]byte, limit int64) error {
	if cmd.Flags&FlagNoMulti != 0 {
		m.dirty = true
		return ErrNotInMulti
	}
	n := 0
	for _, a := range args {
		n += len(a)
	}
	if limit > 0 && m.bytes+int64(n) > limit {
		m.dirty = true
		return Error("ERR lavik: the transaction's queued commands exceed client-query-buffer-limit")
	}
	buf := make([]byte, 0, n)
	own := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		own[i] = buf[len(buf)-len(a):]
	}
	m.cmds = append(m.cmds, queued{cmd: cmd, args: own})
	m.flags |= cmd.Flags
	m.bytes += int64(n)
	return nil
}

// Fail marks the transaction: a command was refused while queuing, and EXEC must discard it.
func (m *Multi) Fail() { m.dirty = true }

// Each calls fn with every queued command, in order.
func (m *Multi) Each(fn func(cmd *Command, args [][]byte)) {
	for _, q := range m.cmds {
		fn(q.cmd, q.args)
	}
}

// RunsScript reports whether a queued command runs a script (EVAL, FCALL, ...).
func (m *Multi) RunsScript() bool {
	for _, q := range m.cmds {
		switch q.cmd.Name {
		case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
			return true
		}
	}
	return false
}

// usesEngine reports whether a queued command takes the script engine: a script, or a FUNCTION
// subcommand that changes the libraries (see Ctx.lockEngine).
func (m *Multi) usesEngine() bool {
	if m.RunsScript() {
		return true
	}
	for _, q := range m.cmds {
		switch q.cmd.Name {
		case "load", "delete", "flush", "restore":
			if strings.EqualFold(string(q.args[0]), "function") {
				return true
			}
		}
	}
	return false
}

// Writes reports whether a queued command may write.
func (m *Multi) Writes() bool { return m.flags&FlagWrite != 0 }

// DenyOOM reports whether a queued command may grow memory use (the maxmemory check of EXEC).
func (m *Multi) DenyOOM() bool { return m.flags&FlagDenyOOM != 0 }

// Len is the number of queued commands.
func (m *Multi) Len() int { return len(m.cmds) }

// ExecAbort is EXEC's reply when the server refuses it (err): the transaction is discarded. As
// in Redis, an error of the generic ERR kind loses its code, others (NOAUTH, MISCONF) keep it.
func ExecAbort(err Error) Error {
	return Error("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(string(err), "ERR "))
}

// Discard ends the client's transaction, if any, and forgets its watched keys.
func (c *Ctx) Discard() {
	c.Client.setMulti(nil)
	c.KS.Unwatch(c.Sess, &c.Client.Watches)
}

func multiCmd(c *Ctx) {
	if c.Client.Multi != nil {
		c.Err(errMultiNested)
		return
	}
	c.Client.setMulti(&Multi{})
	c.OK()
}

func discardCmd(c *Ctx) {
	if c.Client.Multi == nil {
		c.Err(errDiscardNoMult)
		return
	}
	c.Discard()
	c.OK()
}

func watchCmd(c *Ctx) {
	if c.Client.Multi != nil {
		c.Err(errWatchInMulti)
		return
	}
	for _, key := range c.Args[1:] {
		c.KS.Watch(&c.Client.Watches, c.DB(), key)
	}
	c.OK()
}

func unwatchCmd(c *Ctx) {
	c.KS.Unwatch(c.Sess, &c.Client.Watches)
	c.OK()
}

func execCmd(c *Ctx) {
	m := c.Client.Multi
	if m == nil {
		c.Err(errExecNoMulti)
		return
	}
	if m.dirty {
		c.Client.setMulti(nil)
		c.KS.Unwatch(c.Sess, &c.Client.Watches)
		c.Err(errExecAbort)
		return
	}
	// The client is in its transaction until EXEC is done, as CLIENT INFO run by it shows.
	defer c.Client.setMulti(nil)
	// The commands run with every shard locked: nothing may wait for the client meanwhile,
	// so long replies are not flushed as they are made (Flush) but go out with EXEC's.
	mark := c.W.Len()
	args, cmd, flush := c.Args, c.Cmd, c.Flush
	defer func() { c.Args, c.Cmd, c.Flush, c.Broken, c.BrokenErr = args, cmd, flush, false, nil }()
	c.Flush = nil
	failed := 0
	if e := c.engine(); e != nil && m.usesEngine() {
		defer c.lockEngine(e)()
		c.engineHeld = true
		defer func() { c.engineHeld = false }()
	}
	ran, err := c.KS.Exec(c.Sess, &c.Client.Watches, func() {
		c.W.Array(len(m.cmds))
		for _, q := range m.cmds {
			start := time.Now()
			at := c.W.Len()
			c.Args, c.Cmd, c.Failed, c.Broken, c.BrokenErr = q.args, q.cmd, false, false, nil
			if q.cmd.Flags&FlagWrite != 0 {
				c.Propagate(q.args) // the default effect; the EXEC's commit logs them all
			}
			q.cmd.Handler(c)
			c.Sess.KeepEffect()
			if c.Broken {
				// A value failed to read in the middle of its reply; nothing was sent.
				c.W.Truncate(at)
				c.Err(c.BrokenErr)
			}
			q.cmd.Stats.Usec.Add(uint64(time.Since(start).Microseconds()))
			q.cmd.Stats.Calls.Add(1)
			if c.Failed {
				q.cmd.Stats.Failed.Add(1)
				failed++
			}
		}
	})
	c.Failed, c.InnerErrors = false, failed
	switch {
	case err != nil:
		// Nothing of it was applied: say so, in place of replies that said otherwise.
		c.W.Truncate(mark)
		c.InnerErrors = 0
		c.Err(ExecAbort(Error(ErrorLine(err))))
	case !ran:
		c.W.NullArray()
	default:
		c.Writes = c.Writes || m.Writes() // a script sets it when it wrote
	}
}
