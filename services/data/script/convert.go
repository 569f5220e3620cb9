package script

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/lavikdb/lavik/pkg/resp"
)

// Conversion between Redis replies and Lua values, as Redis 7 documents it.
//
// Reply to Lua (redis.call's result): integer -> number, bulk -> string, null bulk and null
// array -> false, array -> table, status -> {ok=...}, error -> {err=...}. After
// redis.setresp(3) also: map -> {map={...}}, set -> {set={member=true}}, null -> nil, boolean
// -> boolean, double -> {double=number}, big number -> {big_number=text}, verbatim ->
// {verbatim_string={format=..., string=...}}.
//
// Lua to reply (the script's result): number -> integer (truncated), string -> bulk, true -> 1,
// false and nil -> null (after redis.setresp(3), booleans are booleans: #t/#f, or 1/0 to a RESP2
// client), {ok=} -> status, {err=} -> error,
// {double=} -> double, {map=} -> map, {set=} -> set, {big_number=} -> big number, other tables
// -> array up to the first nil.

// replyToLua converts one reply to the Lua value redis.call returns.
func replyToLua(L *lua.LState, v resp.Value, proto int) lua.LValue {
	switch v.Kind {
	case resp.Integer:
		return lua.LNumber(v.Int)
	case resp.BulkString:
		return lua.LString(v.Str)
	case resp.SimpleString:
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(v.Str))
		return t
	case resp.Error:
		t := L.CreateTable(0, 1)
		t.RawSetString("err", lua.LString(v.Str))
		return t
	case resp.Null:
		if proto == 3 {
			return lua.LNil
		}
		return lua.LFalse
	case resp.Array, resp.Push:
		t := L.CreateTable(len(v.Elems), 0)
		for i, e := range v.Elems {
			t.RawSetInt(i+1, replyToLua(L, e, proto))
		}
		return t
	case resp.Map:
		m := L.CreateTable(0, len(v.Elems)/2)
		for i := 0; i+1 < len(v.Elems); i += 2 {
			m.RawSet(replyToLua(L, v.Elems[i], proto), replyToLua(L, v.Elems[i+1], proto))
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("map", m)
		return t
	case resp.Set:
		s := L.CreateTable(0, len(v.Elems))
		for _, e := range v.Elems {
			s.RawSet(replyToLua(L, e, proto), lua.LTrue)
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("set", s)
		return t
	case resp.Boolean:
		return lua.LBool(v.Bool)
	case resp.Double:
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(v.Float))
		return t
	case resp.BigNumber:
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(v.Str))
		return t
	case resp.Verbatim:
		vs := L.CreateTable(0, 2)
		vs.RawSetString("format", lua.LString("txt"))
		vs.RawSetString("string", lua.LString(v.Str))
		t := L.CreateTable(0, 1)
		t.RawSetString("verbatim_string", vs)
		return t
	}
	return lua.LFalse
}

// parseReply reads the one reply in b.
func parseReply(b []byte) (resp.Value, error) {
	return resp.NewReplyReader(bytes.NewReader(b)).Read()
}

// luaToReply writes the script's result v to w.
// proto is the script's (redis.setresp): booleans are RESP3 booleans only after setresp(3), as
// in Redis 7.0.
func luaToReply(L *lua.LState, v lua.LValue, w *resp.Writer, proto int) {
	luaToReplyDepth(L, v, w, 0, proto)
}

func luaToReplyDepth(L *lua.LState, v lua.LValue, w *resp.Writer, depth, proto int) {
	if depth > 1000 {
		w.Error("ERR reached lua stack limit")
		return
	}
	switch x := v.(type) {
	case lua.LString:
		w.Bulk([]byte(x))
	case lua.LNumber:
		w.Int(int64(float64(x)))
	case lua.LBool:
		if proto == 3 {
			w.Bool(bool(x))
		} else if x {
			w.Int(1)
		} else {
			w.Null()
		}
	case *lua.LTable:
		if e := x.RawGetString("err"); e.Type() == lua.LTString {
			msg := strings.NewReplacer("\r", " ", "\n", " ").Replace(e.String())
			w.Error(strings.TrimPrefix(msg, "-"))
			return
		}
		if s := x.RawGetString("ok"); s.Type() == lua.LTString {
			w.Simple(strings.NewReplacer("\r", " ", "\n", " ").Replace(s.String()))
			return
		}
		if d := x.RawGetString("double"); d.Type() == lua.LTNumber {
			w.Double(float64(d.(lua.LNumber)))
			return
		}
		if b := x.RawGetString("big_number"); b.Type() == lua.LTString {
			if w.Proto() == 3 {
				w.Raw([]byte("(" + b.String() + "\r\n"))
			} else {
				w.BulkString(b.String())
			}
			return
		}
		if m, ok := x.RawGetString("map").(*lua.LTable); ok {
			var keys, vals []lua.LValue
			m.ForEach(func(k, v lua.LValue) { keys, vals = append(keys, k), append(vals, v) })
			if w.Proto() == 3 {
				w.Map(len(keys))
			} else {
				w.Array(2 * len(keys))
			}
			for i := range keys {
				luaToReplyDepth(L, keys[i], w, depth+1, proto)
				luaToReplyDepth(L, vals[i], w, depth+1, proto)
			}
			return
		}
		if s, ok := x.RawGetString("set").(*lua.LTable); ok {
			var keys []lua.LValue
			s.ForEach(func(k, _ lua.LValue) { keys = append(keys, k) })
			w.Set(len(keys))
			for _, k := range keys {
				luaToReplyDepth(L, k, w, depth+1, proto)
			}
			return
		}
		if vs, ok := x.RawGetString("verbatim_string").(*lua.LTable); ok {
			w.Verbatim(lua.LVAsString(vs.RawGetString("format")), lua.LVAsString(vs.RawGetString("string")))
			return
		}
		n := 0
		for x.RawGetInt(n+1) != lua.LNil {
			n++
		}
		w.Array(n)
		for i := 1; i <= n; i++ {
			luaToReplyDepth(L, x.RawGetInt(i), w, depth+1, proto)
		}
	default:
		w.Null()
	}
}

// argString converts one redis.call argument as Redis does: strings as they are, numbers as
// integers when integral, else with 17 significant digits.
func argString(v lua.LValue) ([]byte, bool) {
	switch x := v.(type) {
	case lua.LString:
		return []byte(x), true
	case lua.LNumber:
		f := float64(x)
		if f == math.Trunc(f) && math.Abs(f) < 1e18 {
			return strconv.AppendInt(nil, int64(f), 10), true
		}
		return strconv.AppendFloat(nil, f, 'g', 17, 64), true
	}
	return nil, false
}
