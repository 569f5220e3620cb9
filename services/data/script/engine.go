package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/lavikdb/lavik/pkg/resp"
)

// Host runs the commands a script calls (redis.call, redis.pcall).
type Host interface {
	// Call runs args and returns the command's RESP reply in protocol proto (2 or 3): an error
	// reply for a command the script may not run.
	Call(args [][]byte, proto int) []byte
}

// Errors of the engine, as Redis 7 words them (the command layer makes them replies).
var (
	ErrNoScript    = errors.New("NOSCRIPT No matching script. Please use EVAL.")
	ErrNotBusy     = errors.New("NOTBUSY No scripts in execution right now.")
	ErrUnkillable  = errors.New("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
	errKilledValue = "Script killed by user with SCRIPT KILL..."
	// ErrBusyScript and ErrBusyFunction are the BUSY replies while an EVAL script, or a
	// function, runs past the threshold (and a KILL of the other kind's).
	ErrBusyScript   = errors.New("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
	ErrBusyFunction = errors.New("BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
)

// Engine is a server's Lua state, its cached scripts and functions, and the state of the script
// running, if any.
type Engine struct {
	// mu is held while a script compiles or runs: the Lua state belongs to its holder.
	mu      sync.Mutex
	L       *lua.LState
	env     *lua.LTable // the scripts' environment: a guard in front of globals
	scripts map[string]*lua.LFunction
	bodies  map[string]string
	rand    uint64 // lrand48's state
	log     *slog.Logger
	lib     *libraries
	// libsView is the libraries as of their last change (LibrariesPayload, LibraryCounts).
	libsView atomic.Pointer[libsView]
	cur      *runCtx // the run in progress (engine held)

	// The running script (guarded by run.mu; running and busy also read without it).
	run struct {
		mu      sync.Mutex
		cancel  context.CancelFunc
		wrote   bool
		killed  bool
		aborted bool
		// info is what runs (FUNCTION STATS, and which KILL may stop it).
		info    RunInfo
		timer   *time.Timer
		waiters []func()
	}
	running atomic.Bool
	busy    atomic.Bool
	// threshold is busy-reply-threshold in ms.
	threshold atomic.Int64
}

// New makes an engine that logs redis.log's lines to log.
func New(log *slog.Logger) *Engine {
	e := &Engine{scripts: map[string]*lua.LFunction{}, bodies: map[string]string{}, log: log}
	e.threshold.Store(5000)
	e.newState()
	e.lib = &libraries{libs: map[string]*Library{}, funcs: map[string]*Function{}}
	return e
}

// SetBusyThreshold sets after how long a running script makes other clients' commands answer
// -BUSY (busy-reply-threshold).
func (e *Engine) SetBusyThreshold(ms int64) { e.threshold.Store(ms) }

// newState makes a fresh Lua state with Redis's libraries and sandbox.
func (e *Engine) newState() {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	// What Redis removes from the base library: no file system, no modules, no output, no
	// environment games.
	for _, name := range []string{"dofile", "loadfile", "require", "module", "print", "setfenv", "getfenv", "newproxy", "gcinfo", "collectgarbage", "_printregs"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("_VERSION", lua.LString("Lua 5.1"))
	math := g.RawGetString("math").(*lua.LTable)
	math.RawSetString("random", L.NewFunction(e.mathRandom))
	math.RawSetString("randomseed", L.NewFunction(e.mathRandomseed))
	e.rand = 0x1234ABCD330E // rand.c's initial state: Redis 7 never seeds it
	openRedis(e, L)
	openCjson(L)
	openCmsgpack(L)
	openBit(L)
	openStruct(L)
	e.L = L
	e.env = guardEnv(L, g)
}

// guardEnv returns the environment scripts run in: reads go to g and a missing name is an
// error; every assignment is refused, as Redis 7 makes the globals table read-only.
func guardEnv(L *lua.LState, g *lua.LTable) *lua.LTable {
	env := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		k := L.Get(2)
		v := g.RawGet(k)
		if v == lua.LNil {
			L.RaiseError("Script attempted to access nonexistent global variable '%s'", lua.LVAsString(k))
		}
		L.Push(v)
		return 1
	}))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(env, mt)
	return env
}

// SHA1 is the hex SHA1 of body, a script's name in the cache.
func SHA1(body []byte) string {
	s := sha1.Sum(body)
	return hex.EncodeToString(s[:])
}

// Lock takes the engine for a compile or a run; Unlock gives it back.
func (e *Engine) Lock()   { e.mu.Lock() }
func (e *Engine) Unlock() { e.mu.Unlock() }

// Script is a compiled script ready to run.
type Script struct {
	fn   *lua.LFunction
	Name string // the SHA1, or the function's name
	// Flags of a function (no-writes, allow-oom, ...).
	Flags []string
	// Library is the function's library (nil for an EVAL script).
	Library *Library
}

// LoadLocked compiles body (or finds it in the cache) and caches it. The engine is held.
func (e *Engine) LoadLocked(body []byte) (*Script, error) {
	sha := SHA1(body)
	if fn, ok := e.scripts[sha]; ok {
		return &Script{fn: fn, Name: sha}, nil
	}
	fn, err := e.L.Load(strings.NewReader(string(body)), "user_script")
	if err != nil {
		return nil, fmt.Errorf("ERR Error compiling script (new function): %s", compileMsg(err))
	}
	fn.Env = e.env
	e.scripts[sha] = fn
	e.bodies[sha] = string(body)
	return &Script{fn: fn, Name: sha}, nil
}

// compileMsg is a compile error's text without gopher-lua's decorations.
func compileMsg(err error) string {
	var ae *lua.ApiError
	if errors.As(err, &ae) && ae.Object != nil {
		return strings.TrimSpace(strings.ReplaceAll(ae.Object.String(), "\n", " "))
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// FindLocked returns the cached script sha (lower or upper case), or nil.
func (e *Engine) FindLocked(sha string) *Script {
	if fn, ok := e.scripts[strings.ToLower(sha)]; ok {
		return &Script{fn: fn, Name: strings.ToLower(sha)}
	}
	return nil
}

// Exists reports whether sha is cached.
func (e *Engine) Exists(sha string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.scripts[strings.ToLower(sha)]
	return ok
}

// Flush drops every cached script.
func (e *Engine) Flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	// The cached functions go; the state stays, with the functions' libraries. Scripts
	// cannot create globals, so nothing else of them survives.
	e.scripts = map[string]*lua.LFunction{}
	e.bodies = map[string]string{}
}

// Running reports whether a script runs now.
func (e *Engine) Running() bool { return e.running.Load() }

// Busy reports whether a script has run past the busy threshold: other clients get -BUSY.
func (e *Engine) Busy() bool { return e.busy.Load() }

// NotifyIdle registers fn to be called once when the running script ends or turns busy, and
// reports true; it reports false, registering nothing, when no script runs or it is busy
// already.
func (e *Engine) NotifyIdle(fn func()) bool {
	e.run.mu.Lock()
	defer e.run.mu.Unlock()
	if !e.running.Load() || e.busy.Load() {
		return false
	}
	e.run.waiters = append(e.run.waiters, fn)
	return true
}

func (e *Engine) wakeLocked() {
	ws := e.run.waiters
	e.run.waiters = nil
	for _, fn := range ws {
		fn()
	}
}

// RunInfo describes a run: Function says it is FCALL's (FUNCTION KILL stops it, SCRIPT KILL
// does not, and the reverse for EVAL's), Name the function's, Command the command that runs
// it, Start when it began.
type RunInfo struct {
	Function bool
	Name     string
	Command  []string
	Start    time.Time
}

// RunningInfo returns what runs now, and whether anything does.
func (e *Engine) RunningInfo() (RunInfo, bool) {
	e.run.mu.Lock()
	defer e.run.mu.Unlock()
	return e.run.info, e.running.Load()
}

// Begin marks a script (what info says) as running, before its caller takes the keyspace's
// locks, so that the event loops stop handing other clients' commands to the keyspace.
func (e *Engine) Begin(info RunInfo) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	e.run.mu.Lock()
	defer e.run.mu.Unlock()
	if info.Start.IsZero() {
		info.Start = time.Now()
	}
	e.run.cancel, e.run.wrote, e.run.killed, e.run.aborted, e.run.info = cancel, false, false, false, info
	e.running.Store(true)
	ms := e.threshold.Load()
	e.run.timer = time.AfterFunc(time.Duration(ms)*time.Millisecond, func() {
		e.run.mu.Lock()
		defer e.run.mu.Unlock()
		if e.running.Load() {
			e.busy.Store(true)
			e.log.Warn("slow script: other clients get BUSY until it ends", "threshold_ms", ms)
			e.wakeLocked()
		}
	})
	return ctx
}

// End marks the script as done and lets the parked clients go on.
func (e *Engine) End() {
	e.run.mu.Lock()
	defer e.run.mu.Unlock()
	e.run.timer.Stop()
	e.run.cancel()
	e.running.Store(false)
	e.busy.Store(false)
	e.wakeLocked()
}

// NoteWrite records that the running script wrote: it can no longer be killed.
func (e *Engine) NoteWrite() {
	e.run.mu.Lock()
	e.run.wrote = true
	e.run.mu.Unlock()
}

// Kill stops the running script (SCRIPT KILL) or function (FUNCTION KILL, function set): as in
// Redis, each stops only its own kind.
func (e *Engine) Kill(function bool) error {
	e.run.mu.Lock()
	defer e.run.mu.Unlock()
	switch {
	case !e.running.Load():
		return ErrNotBusy
	case e.run.wrote:
		return ErrUnkillable
	case !function && e.run.info.Function:
		return ErrBusyFunction
	case function && !e.run.info.Function:
		return ErrBusyScript
	}
	e.run.killed = true
	e.run.cancel()
	return nil
}

// Abort stops the running script, if any, whatever it did (the server is closing): its run
// panics with ErrAborted once Lua stops, so that keyspace.Exec drops its writes.
func (e *Engine) Abort() {
	e.run.mu.Lock()
	defer e.run.mu.Unlock()
	if e.running.Load() {
		e.run.killed, e.run.aborted = true, true
		e.run.cancel()
	}
}

// ErrAborted is the panic of a run that Abort stopped.
var ErrAborted = errors.New("script: aborted: the server is closing")

// Run runs s with keys and args, calling host for redis.call, and writes its reply (or error)
// to w, in w's protocol. The engine is held (LockLocked) and Begin was called with ctx.
func (e *Engine) RunLocked(ctx context.Context, s *Script, keys, args [][]byte, host Host, w *resp.Writer) {
	L := e.L
	rs := &runCtx{host: host, proto: 2}
	e.cur = rs
	defer func() { e.cur = nil }()
	L.SetContext(ctx)
	defer L.RemoveContext()
	var err error
	if s.Library == nil {
		g := L.G.Global
		g.RawSetString("KEYS", bytesTable(L, keys))
		g.RawSetString("ARGV", bytesTable(L, args))
		L.Push(s.fn)
		err = L.PCall(0, 1, L.NewFunction(errHandler))
	} else {
		L.Push(s.fn)
		L.Push(bytesTable(L, keys))
		L.Push(bytesTable(L, args))
		err = L.PCall(2, 1, L.NewFunction(errHandler))
	}
	e.run.mu.Lock()
	killed, aborted := e.run.killed, e.run.aborted
	e.run.mu.Unlock()
	if aborted {
		L.SetTop(0)
		panic(ErrAborted)
	}
	if err != nil {
		w.Error(e.errorLine(err, s, killed))
		L.SetTop(0)
		return
	}
	v := L.Get(-1)
	L.Pop(1)
	luaToReply(L, v, w, rs.proto)
}

// runCtx is the state of one run: the host and the protocol redis.setresp chose.
type runCtx struct {
	host  Host
	proto int
}

// errHandler adds where the error was raised to a table error ({err=...}), as Redis's error
// handler does, so that the reply can say "on @user_script:N".
func errHandler(L *lua.LState) int {
	v := L.Get(1)
	if t, ok := v.(*lua.LTable); ok {
		if t.RawGetString("line") == lua.LNil {
			for lvl := 1; lvl < 4; lvl++ {
				if line := lineOf(L.Where(lvl)); line != "" {
					t.RawSetString("line", lua.LString(line))
					break
				}
			}
		}
	} else if s, ok := v.(lua.LString); ok {
		t := L.NewTable()
		t.RawSetString("msg", s)
		for lvl := 1; lvl < 4; lvl++ {
			if line := lineOf(L.Where(lvl)); line != "" {
				t.RawSetString("line", lua.LString(line))
				break
			}
		}
		v = t
	}
	L.Push(v)
	return 1
}

var whereRe = regexp.MustCompile(`^user_(?:script|function):(\d+):`)

func lineOf(where string) string {
	if m := whereRe.FindStringSubmatch(where); m != nil {
		return m[1]
	}
	return ""
}

// errorLine formats a script's error as Redis 7 replies it: "<msg> script: <name>, on
// @user_script:<line>.", with ERR before a message raised as a string.
func (e *Engine) errorLine(err error, s *Script, killed bool) string {
	src := "@user_script"
	if s.Library != nil {
		src = "@user_function"
	}
	msg, line := "", "0"
	var ae *lua.ApiError
	if errors.As(err, &ae) {
		if t, ok := ae.Object.(*lua.LTable); ok {
			if l := t.RawGetString("line"); l != lua.LNil {
				line = l.String()
			}
			if m := t.RawGetString("err"); m != lua.LNil {
				msg = strings.TrimPrefix(lua.LVAsString(m), "-")
			} else if m := t.RawGetString("msg"); m != lua.LNil {
				msg = "ERR " + lua.LVAsString(m)
			} else {
				msg = "ERR " + t.String()
			}
		} else if ae.Object != nil {
			msg = "ERR " + ae.Object.String()
		} else {
			msg = "ERR " + err.Error()
		}
	} else {
		msg = "ERR " + err.Error()
	}
	if killed || strings.Contains(msg, "context canceled") {
		msg = "ERR " + errKilledValue
	}
	msg = strings.NewReplacer("\r", " ", "\n", " ").Replace(msg)
	return msg + " script: " + s.Name + ", on " + src + ":" + line + "."
}

// bytesTable makes a Lua array of strings.
func bytesTable(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, it := range items {
		t.RawSetInt(i+1, lua.LString(it))
	}
	return t
}

// srand48 and lrand48 are Redis's rand.c: math.random is deterministic from the engine's start.
func (e *Engine) srand48(seed int32) { e.rand = uint64(uint32(seed))<<16 | 0x330E }

func (e *Engine) lrand48() int32 {
	e.rand = (0x5DEECE66D*e.rand + 0xB) & (1<<48 - 1)
	return int32(e.rand >> 17)
}

// mathRandom is Redis's math_random over lrand48.
func (e *Engine) mathRandom(L *lua.LState) int {
	const max = 2147483647
	r := float64(e.lrand48()%max) / float64(max)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := int(L.CheckNumber(1))
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(float64(int(r*float64(u))) + 1))
	case 2:
		l, u := int(L.CheckNumber(1)), int(L.CheckNumber(2))
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(float64(int(r*float64(u-l+1))) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (e *Engine) mathRandomseed(L *lua.LState) int {
	e.srand48(int32(L.CheckInt(1)))
	return 0
}

// redisVersionNum is REDIS_VERSION_NUM for 7.0.15.
const redisVersionNum = 7<<16 | 0<<8 | 15

var _ = strconv.Itoa
