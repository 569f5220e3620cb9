package script

import (
	"context"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The redis table: call, pcall, error_reply, status_reply, sha1hex, log, setresp,
// register_function and Redis's constants.

const (
	logDebug = iota
	logVerbose
	logNotice
	logWarning
)

func openRedis(e *Engine, L *lua.LState) {
	r := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":  func(L *lua.LState) int { return e.call(L, true) },
		"pcall": func(L *lua.LState) int { return e.call(L, false) },
		"error_reply": func(L *lua.LState) int {
			t := L.CreateTable(0, 1)
			t.RawSetString("err", lua.LString(L.CheckString(1)))
			L.Push(t)
			return 1
		},
		"status_reply": func(L *lua.LState) int {
			t := L.CreateTable(0, 1)
			t.RawSetString("ok", lua.LString(L.CheckString(1)))
			L.Push(t)
			return 1
		},
		"sha1hex": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.RaiseError("wrong number of arguments")
			}
			L.Push(lua.LString(SHA1([]byte(L.ToString(1)))))
			return 1
		},
		"log": func(L *lua.LState) int {
			if L.GetTop() < 2 {
				raiseTable(L, "redis.log() requires two arguments or more.")
			}
			lvl, ok := L.Get(1).(lua.LNumber)
			if !ok {
				raiseTable(L, "First argument must be a number (log level).")
			}
			parts := make([]string, 0, L.GetTop()-1)
			for i := 2; i <= L.GetTop(); i++ {
				parts = append(parts, L.ToString(i))
			}
			msg := strings.Join(parts, " ")
			switch int(lvl) {
			case logDebug:
				e.log.Debug("script", "msg", msg)
			case logVerbose, logNotice:
				e.log.Info("script", "msg", msg)
			case logWarning:
				e.log.Warn("script", "msg", msg)
			default:
				raiseTable(L, "Invalid debug level.")
			}
			return 0
		},
		"setresp": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				raiseTable(L, "redis.setresp() requires one argument.")
			}
			n := L.ToInt(1)
			if n != 2 && n != 3 {
				raiseTable(L, "RESP version must be 2 or 3.")
			}
			if e.cur != nil {
				e.cur.proto = n
			}
			return 0
		},
		"replicate_commands": func(L *lua.LState) int {
			L.Push(lua.LTrue)
			return 1
		},
		"register_function": e.registerFunction,
	}
	for name, fn := range fns {
		r.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]int{"LOG_DEBUG": logDebug, "LOG_VERBOSE": logVerbose, "LOG_NOTICE": logNotice, "LOG_WARNING": logWarning,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		r.RawSetString(name, lua.LNumber(v))
	}
	r.RawSetString("REDIS_VERSION", lua.LString(RedisVersion))
	r.RawSetString("REDIS_VERSION_NUM", lua.LNumber(redisVersionNum))
	L.G.Global.RawSetString("redis", r)
}

// RedisVersion is what redis.REDIS_VERSION says.
const RedisVersion = "7.0.15"

// call is redis.call (raise) and redis.pcall.
func (e *Engine) call(L *lua.LState, raise bool) int {
	n := L.GetTop()
	fail := func(msg string) int {
		t := L.CreateTable(0, 1)
		t.RawSetString("err", lua.LString(msg))
		if raise {
			L.Error(t, 1)
		}
		L.Push(t)
		return 1
	}
	if n == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	if e.cur == nil {
		return fail("ERR redis.call is not allowed here")
	}
	args := make([][]byte, n)
	for i := 1; i <= n; i++ {
		a, ok := argString(L.Get(i))
		if !ok {
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
		args[i-1] = a
	}
	out := e.cur.host.Call(args, e.cur.proto)
	// A kill while the command ran stops the script here rather than at its next instruction.
	if ctx := L.Context(); ctx != nil && ctx.Err() == context.Canceled {
		L.RaiseError("%s", errKilledValue)
	}
	v, err := parseReply(out)
	if err != nil {
		return fail("ERR lavik: malformed reply from a script's command: " + err.Error())
	}
	lv := replyToLua(L, v, e.cur.proto)
	if raise {
		if t, ok := lv.(*lua.LTable); ok && v.Kind == 2 /* resp.Error */ {
			L.Error(t, 1)
		}
	}
	L.Push(lv)
	return 1
}

// raiseTable raises msg as Redis's C functions of the redis table do: an error table, so the
// reply carries no "user_script:N:" prefix.
func raiseTable(L *lua.LState, msg string) {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString("ERR "+msg))
	L.Error(t, 1)
}
