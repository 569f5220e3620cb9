package server

import (
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/script"
)

// While a script runs (EVAL, FCALL: detached, holding every shard's lock), the loops must not
// hand other clients' commands to the keyspace: a loop would wait on the locks and stop
// answering its other clients. So a connection whose next command would wait is parked
// (conn.scriptParked) until the script ends or passes busy-reply-threshold (the engine calls
// back), and then goes on: its commands run, or are answered -BUSY by dispatch while the
// script is still running. Commands flagged allow_busy (SCRIPT KILL, SHUTDOWN, ...) never
// wait.
//
// A command the loop admitted just before the script took the locks still waits for them
// (the loop checks, then the command locks): the engine says it runs before it locks, so that
// window is the time one command takes, not the script's. Such a command, once it waits on a
// shard's lock, waits for the whole script, and so does its loop. Closing it would take a
// handshake between the loops' admission and the script's start (a count of admitted commands
// that the script waits to drain before it locks, raised by the loop only while no script is
// starting): rejected for now, since every command on the loop would pay two atomic operations
// for a window one command long, and a command that waits on a lock inside its own handler
// (a value read, a durability wait) would have to leave the count first or deadlock the start.
// The script's writes wake the clients blocked on its keys once it is done (signalWrites).

// Scripts returns the server's Lua engine (commands.Scripter).
func (s *Server) Scripts() *script.Engine { return s.scripts }

// allowBusy reports whether the command of args may run while a script is busy.
func allowBusy(args [][]byte) bool {
	cmd := commands.Lookup(args[0])
	if cmd == nil {
		return false
	}
	if cmd.Subcommands != nil && len(args) >= 2 {
		if sub := cmd.LookupSub(args[1]); sub != nil {
			cmd = sub
		}
	}
	return cmd.Flags&commands.FlagAllowBusy != 0
}

// parkForScript parks c, whose next command is args, while a script runs and is not yet busy.
// It reports whether it did.
func (lp *loop) parkForScript(c *conn, args [][]byte) bool {
	e := lp.s.scripts
	if !e.Running() || e.Busy() || allowBusy(args) {
		return false
	}
	c.scriptParked = true
	if !e.NotifyIdle(func() { lp.post(loopMsg{kind: msgScriptIdle, c: c}) }) {
		c.scriptParked = false // it ended or turned busy meanwhile
		return false
	}
	return true
}

// busyReject answers -BUSY for a command that may not run while a script is busy. It reports
// whether it did.
func (c *conn) busyReject(cmd *commands.Command) bool {
	if cmd.Flags&commands.FlagAllowBusy != 0 || !c.s.scripts.Busy() {
		return false
	}
	c.reject(cmd, commands.BusyError(c.s.scripts))
	return true
}
