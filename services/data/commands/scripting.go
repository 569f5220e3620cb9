package commands

import (
	"bytes"
	"strings"
	"time"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/services/data/script"
)

// Scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, FUNCTION, FCALL, FCALL_RO, on the engine
// of package script.
//
// A script runs inside keyspace.Exec, as EXEC runs its commands: with every shard locked, so no
// other client's command runs in between, its writes in an overlay the script's own reads see,
// committed as one transaction when it returns. The commands it ran that write are its effect
// (each stated as EXEC states them), so the change stream carries them as one MULTI ... EXEC and
// a follower never runs Lua. The reply waits for the same durability as any write (Ctx.Writes).
// The command runs detached from its event loop (conn.heavy), and the engine says it runs
// (script.Engine.Running) before it takes the locks, so that the other loops park their
// clients' commands instead of waiting on the locks; past busy-reply-threshold they answer
// -BUSY, and SCRIPT KILL may stop a script that has not written.

// Scripter is implemented by the server that owns the engine.
type Scripter interface{ Scripts() *script.Engine }

// engine returns the server's script engine, or nil where there is none.
func (c *Ctx) engine() *script.Engine {
	if s, ok := c.Srv.(Scripter); ok {
		return s.Scripts()
	}
	return nil
}

func init() {
	sc := []string{"@scripting"}
	evalKeys := func(args [][]byte) ([]int, error) {
		if len(args) < 3 {
			return nil, nil
		}
		n, ok := ParseInt(args[2])
		if !ok || n < 0 || n > int64(len(args)-3) {
			return nil, ErrSyntax
		}
		out := make([]int, n)
		for i := range out {
			out[i] = 3 + i
		}
		return out, nil
	}
	ev := func(name string, flags Flag, since, summary string, h func(*Ctx)) *Command {
		return movableKeys(&Command{Name: name, Arity: -3, Flags: FlagNoScript | FlagStale | flags, Group: "scripting", Since: since,
			Complexity: "Depends on the script that is executed.", Summary: summary, Handler: h, ExtraACL: sc}, 2, evalKeys)
	}
	register(
		ev("eval", 0, "2.6.0", "Executes a server-side Lua script.", func(c *Ctx) { runScript(c, "eval") }),
		ev("evalsha", 0, "2.6.0", "Executes a server-side Lua script by SHA1 digest.", func(c *Ctx) { runScript(c, "evalsha") }),
		ev("eval_ro", FlagReadonly, "7.0.0", "Executes a read-only server-side Lua script.", func(c *Ctx) { runScript(c, "eval_ro") }),
		ev("evalsha_ro", FlagReadonly, "7.0.0", "Executes a read-only server-side Lua script by SHA1 digest.", func(c *Ctx) { runScript(c, "evalsha_ro") }),
		ev("fcall", 0, "7.0.0", "Invokes a function.", func(c *Ctx) { runScript(c, "fcall") }),
		ev("fcall_ro", FlagReadonly, "7.0.0", "Invokes a read-only function.", func(c *Ctx) { runScript(c, "fcall_ro") }),
		&Command{Name: "script", Arity: -2, Group: "scripting", Since: "2.6.0", Summary: "A container for Lua scripts management commands.", Complexity: "Depends on subcommand.",
			Subcommands: map[string]*Command{
				"load": {Arity: 3, Flags: FlagNoScript | FlagStale, Since: "2.6.0", Complexity: "O(N) with N being the length in bytes of the script body.",
					Summary: "Loads a server-side Lua script to the script cache.", Handler: scriptLoadCmd, ExtraACL: sc},
				"exists": {Arity: -3, Flags: FlagNoScript, Since: "2.6.0", Complexity: "O(N) with N being the number of scripts to check.",
					Summary: "Determines whether server-side Lua scripts exist in the script cache.", Handler: scriptExistsCmd, ExtraACL: sc},
				"flush": {Arity: -2, Flags: FlagNoScript, Since: "2.6.0", Complexity: "O(N) with N being the number of scripts in cache",
					Summary: "Removes all server-side Lua scripts from the script cache.", Handler: scriptFlushCmd, ExtraACL: sc},
				"kill": {Arity: 2, Flags: FlagNoScript | FlagAllowBusy, Since: "2.6.0", Complexity: "O(1)",
					Summary: "Terminates a server-side Lua script during execution.", Handler: scriptKillCmd, ExtraACL: sc},
			}},
		&Command{Name: "function", Arity: -2, Group: "scripting", Since: "7.0.0", Summary: "A container for function commands.", Complexity: "Depends on subcommand.",
			Subcommands: map[string]*Command{
				"load": {Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagNoScript, Since: "7.0.0", Complexity: "O(1) (considering compilation time is redundant)",
					Summary: "Creates a library.", Handler: functionLoadCmd, ExtraACL: sc},
				"delete": {Arity: 3, Flags: FlagWrite | FlagNoScript, Since: "7.0.0", Complexity: "O(1)",
					Summary: "Deletes a library and its functions.", Handler: functionDeleteCmd, ExtraACL: sc},
				"flush": {Arity: -2, Flags: FlagWrite | FlagNoScript, Since: "7.0.0", Complexity: "O(N) where N is the number of functions deleted",
					Summary: "Deletes all libraries and functions.", Handler: functionFlushCmd, ExtraACL: sc},
				"list": {Arity: -2, Flags: FlagNoScript, Since: "7.0.0", Complexity: "O(N) where N is the number of functions",
					Summary: "Returns information about all libraries.", Handler: functionListCmd, ExtraACL: sc},
				"kill": {Arity: 2, Flags: FlagNoScript | FlagAllowBusy, Since: "7.0.0", Complexity: "O(1)",
					Summary: "Terminates a function during execution.", Handler: functionKillCmd, ExtraACL: sc},
				"dump": {Arity: 2, Flags: FlagNoScript, Since: "7.0.0", Complexity: "O(N) where N is the number of functions",
					Summary: "Dumps all libraries into a serialized binary payload.", Handler: functionDumpCmd, ExtraACL: sc},
				"restore": {Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagNoScript, Since: "7.0.0", Complexity: "O(N) where N is the number of functions on the payload",
					Summary: "Restores all libraries from a payload.", Handler: functionRestoreCmd, ExtraACL: sc},
				"stats": {Arity: 2, Flags: FlagNoScript | FlagAllowBusy, Since: "7.0.0", Complexity: "O(1)",
					Summary: "Returns information about a function during execution.", Handler: functionStatsCmd, ExtraACL: sc},
			}},
	)
}

// Errors of scripting, with Redis 7's texts.
const (
	errNegativeKeys  Error = "ERR Number of keys can't be negative"
	errTooManyKeys   Error = "ERR Number of keys can't be greater than number of args"
	errFuncNotFound  Error = "ERR Function not found"
	errROFunction    Error = "ERR Can not execute a script with write flag using *_ro command."
	errScriptUnknown Error = "ERR Unknown Redis command called from script"
	errScriptArity   Error = "ERR Wrong number of args calling Redis command from script"
	errScriptDenied  Error = "ERR This Redis command is not allowed from script"
	errScriptWriteRO Error = "ERR Write commands are not allowed from read-only scripts."
	errNoEngine      Error = "ERR lavik: scripting is not available here"
)

// ErrBusy is the reply to other clients' commands while a script runs past the threshold.
const ErrBusy Error = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."

// runScript runs EVAL and friends (kind is the command's name).
func runScript(c *Ctx, kind string) {
	e := c.engine()
	if e == nil {
		c.Err(errNoEngine)
		return
	}
	n, ok := ParseInt(c.Args[2])
	switch {
	case !ok:
		c.Err(ErrNotInt)
		return
	case n < 0:
		c.Err(errNegativeKeys)
		return
	case n > int64(len(c.Args)-3):
		c.Err(errTooManyKeys)
		return
	}
	keys, argv := c.Args[3:3+n], c.Args[3+n:]
	defer c.lockEngine(e)()
	var s *script.Script
	ro := strings.HasSuffix(kind, "_ro")
	switch kind {
	case "eval", "eval_ro":
		var err error
		if s, err = e.LoadLocked(c.Args[1]); err != nil {
			c.Err(Error(err.Error()))
			return
		}
	case "evalsha", "evalsha_ro":
		if s = e.FindLocked(string(c.Args[1])); s == nil {
			c.Err(Error(script.ErrNoScript.Error()))
			return
		}
	default:
		f := e.FunctionLocked(string(c.Args[1]))
		if f == nil {
			c.Err(errFuncNotFound)
			return
		}
		if ro && !f.NoWrites() {
			c.Err(errROFunction)
			return
		}
		ro = ro || f.NoWrites()
		s = f.Script()
	}
	h := &scriptHost{c: c, ro: ro, e: e, w: resp.NewWriter()}
	wroteMark := len(c.Wrote)
	out := c.W
	mark := out.Len()
	args, cmd, flush, db := c.Args, c.Cmd, c.Flush, c.Client.DB.Load()
	defer func() {
		c.Args, c.Cmd, c.Flush, c.W, c.Broken, c.BrokenErr, c.NoBlock = args, cmd, flush, out, false, nil, false
		c.Client.DB.Store(db) // SELECT inside a script is the script's own
	}()
	// The script runs with every shard locked: nothing may wait for the client meanwhile.
	c.Flush = nil
	e.SetBusyThreshold(c.Srv.Config().Int("busy-reply-threshold"))
	info := script.RunInfo{Function: !strings.HasPrefix(kind, "eval"), Name: s.Name}
	for _, a := range c.Args {
		info.Command = append(info.Command, string(a))
	}
	ctx := e.Begin(info)
	defer e.End()
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r != script.ErrAborted {
					panic(r)
				}
				err = Error("ERR lavik: the script was stopped because the server is shutting down; none of its writes were applied")
			}
		}()
		run := func() { e.RunLocked(ctx, s, keys, argv, h, out) }
		if c.Sess.InExec() {
			run() // inside MULTI ... EXEC, whose transaction it joins
			return nil
		}
		_, err = c.KS.Exec(c.Sess, nil, run)
		return err
	}()
	c.Failed, c.InnerErrors = false, h.failed
	switch {
	case err != nil:
		c.Wrote = c.Wrote[:wroteMark] // nothing it ran was applied
		out.Truncate(mark)
		c.InnerErrors = 0
		c.Err(err)
	default:
		c.Writes = h.wrote
		if b := out.Bytes(); len(b) > mark && b[mark] == '-' {
			c.Failed = true
		}
	}
}

// lockEngine holds e for the command and returns what lets it go. The engine is taken before
// the keyspace's locks, by a script (runScript) as by an EXEC that runs one or changes the
// libraries (execCmd, which holds it for its commands): taken the other way round, a script
// waiting for the keyspace's locks and an EXEC waiting for the engine would wait forever.
func (c *Ctx) lockEngine(e *script.Engine) (unlock func()) {
	if c.engineHeld {
		return func() {}
	}
	e.Lock()
	return e.Unlock
}

// scriptHost runs a script's redis.call and redis.pcall.
type scriptHost struct {
	c      *Ctx
	e      *script.Engine
	w      *resp.Writer
	ro     bool
	wrote  bool
	failed int
}

func (h *scriptHost) refuse(err Error) []byte {
	h.w.Reset()
	h.w.Error(string(err))
	return h.w.Bytes()
}

// Call runs one command for the script, as the dispatcher would, with the script's own rules.
func (h *scriptHost) Call(args [][]byte, proto int) []byte {
	c := h.c
	cmd := Lookup(args[0])
	if cmd == nil {
		return h.refuse(errScriptUnknown)
	}
	if cmd.Subcommands != nil && len(args) >= 2 {
		if sub := cmd.LookupSub(args[1]); sub != nil {
			cmd = sub
		} else if cmd.Handler == nil {
			return h.refuse(errScriptUnknown)
		}
	}
	if !cmd.CheckArity(len(args)) || cmd.Handler == nil {
		return h.refuse(errScriptArity)
	}
	if cmd.Flags&FlagNoScript != 0 {
		return h.refuse(errScriptDenied)
	}
	// Redis 7.0 flags its blocking commands noscript, except XREAD and XREADGROUP, which a
	// script may run without BLOCK.
	if cmd.Flags&FlagBlocking != 0 && cmd.Name != "xread" && cmd.Name != "xreadgroup" {
		return h.refuse(errScriptDenied)
	}
	if cmd.Flags&FlagBlocking != 0 {
		for _, a := range args[1:] {
			if strings.EqualFold(string(a), "block") {
				return h.refuse(Error("ERR " + cmd.Name + " command is not allowed with BLOCK option from scripts"))
			}
		}
	}
	write := cmd.Flags&FlagWrite != 0
	if write {
		switch {
		case h.ro:
			return h.refuse(errScriptWriteRO)
		case !c.Repl.Writable():
			if c.Repl.Follower() {
				return h.refuse(ErrReadOnly)
			}
			return h.refuse(ErrNoLease)
		}
		if err := c.KS.WriteErr(); err != nil {
			return h.refuse(Error(ErrorLine(err)))
		}
		h.wrote = true
		h.e.NoteWrite()
	}
	h.w.Reset()
	h.w.SetProto(proto)
	start := time.Now()
	c.W, c.Args, c.Cmd, c.Failed, c.Broken, c.BrokenErr, c.NoBlock, c.Block = h.w, args, cmd, false, false, nil, true, nil
	if write {
		c.Propagate(args)
	}
	cmd.Handler(c)
	if c.Failed {
		c.Propagate() // a failed command changed nothing: no effect of it
	} else if write {
		h.noteWrote(cmd, args)
	}
	c.Sess.KeepEffect()
	if c.Broken {
		h.w.Reset()
		h.w.Error(ErrorLine(c.BrokenErr))
		c.Failed = true
	}
	cmd.Stats.Usec.Add(uint64(time.Since(start).Microseconds()))
	cmd.Stats.Calls.Add(1)
	if c.Failed {
		cmd.Stats.Failed.Add(1)
		h.failed++
	}
	return h.w.Bytes()
}

// noteWrote adds the keys of a write the script ran to Ctx.Wrote, in the database the script
// has selected, for the server to wake the clients blocked on them.
func (h *scriptHost) noteWrote(cmd *Command, args [][]byte) {
	var pos []int
	if cmd.Keys != nil {
		pos, _ = cmd.Keys(args)
	} else {
		pos = cmd.KeyIndexes(len(args))
	}
	db := int(h.c.Client.DB.Load())
	for _, p := range pos {
		h.c.Wrote = append(h.c.Wrote, KeyRef{DB: db, Key: bytes.Clone(args[p])})
	}
}

func scriptLoadCmd(c *Ctx) {
	e := c.engine()
	if e == nil {
		c.Err(errNoEngine)
		return
	}
	e.Lock()
	s, err := e.LoadLocked(c.Args[2])
	e.Unlock()
	if err != nil {
		c.Err(Error(err.Error()))
		return
	}
	c.W.BulkString(s.Name)
}

func scriptExistsCmd(c *Ctx) {
	e := c.engine()
	c.W.Array(len(c.Args) - 2)
	for _, a := range c.Args[2:] {
		if e != nil && e.Exists(string(a)) {
			c.W.Int(1)
		} else {
			c.W.Int(0)
		}
	}
}

func scriptFlushCmd(c *Ctx) {
	if len(c.Args) > 3 || len(c.Args) == 3 && !strings.EqualFold(string(c.Args[2]), "async") && !strings.EqualFold(string(c.Args[2]), "sync") {
		c.Err(Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option"))
		return
	}
	if e := c.engine(); e != nil {
		e.Flush()
	}
	c.OK()
}

func functionLoadCmd(c *Ctx) {
	e := c.engine()
	if e == nil {
		c.Err(errNoEngine)
		return
	}
	replace := false
	for _, a := range c.Args[2 : len(c.Args)-1] {
		if !strings.EqualFold(string(a), "replace") {
			c.Err(Error("ERR Unknown option given: " + string(a)))
			return
		}
		replace = true
	}
	defer c.lockEngine(e)()
	name, err := e.LoadLibraryLocked(string(c.Args[len(c.Args)-1]), replace)
	if err != nil {
		c.Err(Error(err.Error()))
		return
	}
	if functionsChangedLocked(c, e) {
		c.W.BulkString(name)
	}
}

func functionDeleteCmd(c *Ctx) {
	e := c.engine()
	if e == nil {
		c.Err(errNoEngine)
		return
	}
	defer c.lockEngine(e)()
	if err := e.DeleteLibraryLocked(string(c.Args[2])); err != nil {
		c.Err(Error(err.Error()))
		return
	}
	if functionsChangedLocked(c, e) {
		c.OK()
	}
}

func functionFlushCmd(c *Ctx) {
	if len(c.Args) > 3 || len(c.Args) == 3 && !strings.EqualFold(string(c.Args[2]), "async") && !strings.EqualFold(string(c.Args[2]), "sync") {
		c.Err(Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"))
		return
	}
	e := c.engine()
	if e == nil {
		c.Err(errNoEngine)
		return
	}
	defer c.lockEngine(e)()
	e.FlushLibrariesLocked()
	if functionsChangedLocked(c, e) {
		c.OK()
	}
}

func functionListCmd(c *Ctx) {
	e := c.engine()
	pattern, withCode := "", false
	for i := 2; i < len(c.Args); i++ {
		switch a := strings.ToLower(string(c.Args[i])); {
		case a == "withcode":
			withCode = true
		case a == "libraryname" && i+1 < len(c.Args):
			pattern = string(c.Args[i+1])
			i++
		default:
			c.Err(Error("ERR Unknown argument " + string(c.Args[i])))
			return
		}
	}
	var libs []*script.Library
	if e != nil {
		for _, l := range e.Libraries() {
			if pattern == "" || GlobMatch([]byte(pattern), []byte(l.Name), false) {
				libs = append(libs, l)
			}
		}
	}
	c.W.Array(len(libs))
	for _, l := range libs {
		n := 3
		if withCode {
			n = 4
		}
		c.W.Map(n)
		c.W.BulkString("library_name")
		c.W.BulkString(l.Name)
		c.W.BulkString("engine")
		c.W.BulkString("LUA")
		c.W.BulkString("functions")
		c.W.Array(len(l.Funcs))
		for _, f := range l.Funcs {
			c.W.Map(3)
			c.W.BulkString("name")
			c.W.BulkString(f.Name)
			c.W.BulkString("description")
			if f.Desc == "" {
				c.W.Null()
			} else {
				c.W.BulkString(f.Desc)
			}
			c.W.BulkString("flags")
			c.W.Set(len(f.Flags))
			for _, fl := range f.Flags {
				c.W.BulkString(fl)
			}
		}
		if withCode {
			c.W.BulkString("library_code")
			c.W.BulkString(l.Code)
		}
	}
}
