package script

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack is lua-cmsgpack as Redis bundles it: pack(...) encodes each argument and
// concatenates them, unpack(s) returns every value s holds.

func openCmsgpack(L *lua.LState) {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(func(L *lua.LState) int {
		n := L.GetTop()
		if n == 0 {
			L.ArgError(0, "MessagePack pack needs input.")
		}
		var b []byte
		for i := 1; i <= n; i++ {
			b = mpEncode(b, L.Get(i), 0)
		}
		L.Push(lua.LString(b))
		return 1
	}))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int {
		s := []byte(L.CheckString(1))
		d := &mpDecoder{L: L, b: s}
		n := 0
		for d.i < len(d.b) {
			v := d.value(0)
			if d.bad {
				L.RaiseError("Missing bytes in input.")
			}
			L.Push(v)
			n++
		}
		return n
	}))
	L.G.Global.RawSetString("cmsgpack", t)
}

func mpEncode(b []byte, v lua.LValue, depth int) []byte {
	switch x := v.(type) {
	case lua.LBool:
		if x {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(x)
		if f == math.Trunc(f) && !math.IsInf(f, 0) && math.Abs(f) < 1<<63 {
			return mpInt(b, int64(f))
		}
		if float64(float32(f)) == f || math.IsNaN(f) {
			b = append(b, 0xca)
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(f)))
		}
		b = append(b, 0xcb)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	case lua.LString:
		n := len(x)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = append(b, 0xda)
			b = binary.BigEndian.AppendUint16(b, uint16(n))
		default:
			b = append(b, 0xdb)
			b = binary.BigEndian.AppendUint32(b, uint32(n))
		}
		return append(b, x...)
	case *lua.LTable:
		if depth >= 16 {
			return append(b, 0xc0) // lua-cmsgpack's nesting limit
		}
		if n, ok := tableArrayLen(x); ok {
			switch {
			case n < 16:
				b = append(b, 0x90|byte(n))
			case n <= 0xffff:
				b = append(b, 0xdc)
				b = binary.BigEndian.AppendUint16(b, uint16(n))
			default:
				b = append(b, 0xdd)
				b = binary.BigEndian.AppendUint32(b, uint32(n))
			}
			for i := 1; i <= n; i++ {
				b = mpEncode(b, x.RawGetInt(i), depth+1)
			}
			return b
		}
		n := 0
		x.ForEach(func(_, _ lua.LValue) { n++ })
		switch {
		case n < 16:
			b = append(b, 0x80|byte(n))
		case n <= 0xffff:
			b = append(b, 0xde)
			b = binary.BigEndian.AppendUint16(b, uint16(n))
		default:
			b = append(b, 0xdf)
			b = binary.BigEndian.AppendUint32(b, uint32(n))
		}
		x.ForEach(func(k, val lua.LValue) {
			b = mpEncode(b, k, depth+1)
			b = mpEncode(b, val, depth+1)
		})
		return b
	}
	return append(b, 0xc0)
}

func mpInt(b []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= 127:
		return append(b, byte(n))
	case n >= 0 && n <= 0xff:
		return append(b, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n >= 0 && n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	case n >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(int8(n)))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(n)))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

type mpDecoder struct {
	L   *lua.LState
	b   []byte
	i   int
	bad bool
}

func (d *mpDecoder) take(n int) []byte {
	if d.bad || d.i+n > len(d.b) {
		d.bad = true
		return make([]byte, n)
	}
	p := d.b[d.i : d.i+n]
	d.i += n
	return p
}

func (d *mpDecoder) value(depth int) lua.LValue {
	c := d.take(1)[0]
	if d.bad {
		return lua.LNil
	}
	switch {
	case c <= 0x7f:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return lua.LString(d.take(int(c & 0x1f)))
	case c&0xf0 == 0x90:
		return d.array(int(c&0x0f), depth)
	case c&0xf0 == 0x80:
		return d.mapv(int(c&0x0f), depth)
	}
	be := binary.BigEndian
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xcc:
		return lua.LNumber(d.take(1)[0])
	case 0xcd:
		return lua.LNumber(be.Uint16(d.take(2)))
	case 0xce:
		return lua.LNumber(be.Uint32(d.take(4)))
	case 0xcf:
		return lua.LNumber(be.Uint64(d.take(8)))
	case 0xd0:
		return lua.LNumber(int8(d.take(1)[0]))
	case 0xd1:
		return lua.LNumber(int16(be.Uint16(d.take(2))))
	case 0xd2:
		return lua.LNumber(int32(be.Uint32(d.take(4))))
	case 0xd3:
		return lua.LNumber(int64(be.Uint64(d.take(8))))
	case 0xca:
		return lua.LNumber(math.Float32frombits(be.Uint32(d.take(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(be.Uint64(d.take(8))))
	case 0xd9, 0xc4:
		return lua.LString(d.take(int(d.take(1)[0])))
	case 0xda, 0xc5:
		return lua.LString(d.take(int(be.Uint16(d.take(2)))))
	case 0xdb, 0xc6:
		return lua.LString(d.take(int(be.Uint32(d.take(4)))))
	case 0xdc:
		return d.array(int(be.Uint16(d.take(2))), depth)
	case 0xdd:
		return d.array(int(be.Uint32(d.take(4))), depth)
	case 0xde:
		return d.mapv(int(be.Uint16(d.take(2))), depth)
	case 0xdf:
		return d.mapv(int(be.Uint32(d.take(4))), depth)
	}
	d.bad = true
	return lua.LNil
}

func (d *mpDecoder) array(n, depth int) lua.LValue {
	if n > len(d.b)-d.i || depth > 1000 {
		d.bad = true
		return lua.LNil
	}
	t := d.L.CreateTable(n, 0)
	for i := 1; i <= n && !d.bad; i++ {
		t.RawSetInt(i, d.value(depth+1))
	}
	return t
}

func (d *mpDecoder) mapv(n, depth int) lua.LValue {
	if n > len(d.b)-d.i || depth > 1000 {
		d.bad = true
		return lua.LNil
	}
	t := d.L.CreateTable(0, n)
	for i := 0; i < n && !d.bad; i++ {
		k := d.value(depth + 1)
		v := d.value(depth + 1)
		if k != lua.LNil {
			t.RawSet(k, v)
		}
	}
	return t
}
