package script

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// bit is LuaBitOp: operations on 32-bit signed integers, results normalized by tobit.

func tobit(L *lua.LState, i int) int32 {
	f := float64(L.CheckNumber(i))
	// LuaBitOp adds 2^52+2^51 to take the low 32 bits of the integer part, rounding.
	f += 6755399441055744.0
	return int32(uint32(uint64(int64(f))))
}

func openBit(L *lua.LState) {
	t := L.NewTable()
	push := func(L *lua.LState, v int32) int { L.Push(lua.LNumber(v)); return 1 }
	fold := func(op func(a, b int32) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			r := tobit(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				r = op(r, tobit(L, i))
			}
			return push(L, r)
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return push(L, tobit(L, 1)) },
		"bnot":  func(L *lua.LState) int { return push(L, ^tobit(L, 1)) },
		"band":  fold(func(a, b int32) int32 { return a & b }),
		"bor":   fold(func(a, b int32) int32 { return a | b }),
		"bxor":  fold(func(a, b int32) int32 { return a ^ b }),
		"lshift": func(L *lua.LState) int {
			return push(L, int32(uint32(tobit(L, 1))<<(uint32(tobit(L, 2))&31)))
		},
		"rshift": func(L *lua.LState) int {
			return push(L, int32(uint32(tobit(L, 1))>>(uint32(tobit(L, 2))&31)))
		},
		"arshift": func(L *lua.LState) int {
			return push(L, tobit(L, 1)>>(uint32(tobit(L, 2))&31))
		},
		"rol": func(L *lua.LState) int {
			x, n := uint32(tobit(L, 1)), uint32(tobit(L, 2))&31
			return push(L, int32(x<<n|x>>(32-n)))
		},
		"ror": func(L *lua.LState) int {
			x, n := uint32(tobit(L, 1)), uint32(tobit(L, 2))&31
			return push(L, int32(x>>n|x<<(32-n)))
		},
		"bswap": func(L *lua.LState) int {
			x := uint32(tobit(L, 1))
			return push(L, int32(x>>24|(x>>8)&0xff00|(x&0xff00)<<8|x<<24))
		},
		"tohex": func(L *lua.LState) int {
			x := uint32(tobit(L, 1))
			n := int32(8)
			if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
				n = tobit(L, 2)
			}
			upper := n < 0
			if upper {
				n = -n
			}
			if n > 8 {
				n = 8
			}
			s := fmt.Sprintf("%08x", x)
			s = s[8-n:]
			if upper {
				s = strings.ToUpper(s)
			}
			L.Push(lua.LString(s))
			return 1
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	L.G.Global.RawSetString("bit", t)
}
