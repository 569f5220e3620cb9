package script

import (
	"encoding/binary"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// struct is Roberto Ierusalimschy's struct library as Redis bundles it: pack(fmt, ...),
// unpack(fmt, s [, pos]) and size(fmt). Formats: < > = ! (endianness, alignment), x (a pad
// byte), b B h H l L T i[n] I[n] (integers), f d (floats), s (zero-terminated string), c[n]
// (n chars; c0 takes its length from the value before it on unpack).

type structFmt struct {
	big   bool
	align int
}

func structNum(f string, i *int) (int, bool) {
	if *i >= len(f) || f[*i] < '0' || f[*i] > '9' {
		return 0, false
	}
	n := 0
	for *i < len(f) && f[*i] >= '0' && f[*i] <= '9' {
		n = n*10 + int(f[*i]-'0')
		*i++
	}
	return n, true
}

// structSize is the size of option opt (its count read from f at i).
func structSize(L *lua.LState, opt byte, f string, i *int) int {
	switch opt {
	case 'B', 'b', 'x':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T':
		return 8
	case 'f':
		return 4
	case 'd':
		return 8
	case 'c':
		n, _ := structNum(f, i)
		if n == 0 {
			n = 1 // as in struct.c when unspecified
		}
		return n
	case 'i', 'I':
		n, ok := structNum(f, i)
		if !ok {
			n = 4
		}
		if n > 8 {
			L.RaiseError("integral size %d is larger than limit of 8", n)
		}
		return n
	}
	return 0
}

func (sf *structFmt) control(L *lua.LState, c byte, f string, i *int) bool {
	switch c {
	case ' ':
	case '>':
		sf.big = true
	case '<', '=':
		sf.big = c == '>'
	case '!':
		n, ok := structNum(f, i)
		if !ok {
			n = 8
		}
		sf.align = n
	default:
		return false
	}
	return true
}

func (sf *structFmt) padding(size, total int) int {
	a := min(size, sf.align)
	if a <= 1 || a&(a-1) != 0 {
		return 0
	}
	return (a - total&(a-1)) & (a - 1)
}

func putInt(b []byte, v uint64, size int, big bool) []byte {
	for k := 0; k < size; k++ {
		shift := k * 8
		if big {
			shift = (size - 1 - k) * 8
		}
		if shift < 64 {
			b = append(b, byte(v>>shift))
		} else if int64(v) < 0 {
			b = append(b, 0xff)
		} else {
			b = append(b, 0)
		}
	}
	return b
}

func openStruct(L *lua.LState) {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(func(L *lua.LState) int {
		f := L.CheckString(1)
		sf := &structFmt{align: 1}
		var b []byte
		arg := 2
		for i := 0; i < len(f); {
			c := f[i]
			i++
			if sf.control(L, c, f, &i) {
				continue
			}
			size := structSize(L, c, f, &i)
			for p := sf.padding(size, len(b)); p > 0; p-- {
				b = append(b, 0)
			}
			switch c {
			case 'x':
				b = append(b, 0)
			case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
				n := float64(L.CheckNumber(arg))
				arg++
				var v uint64
				if n < 0 {
					v = uint64(int64(n))
				} else {
					v = uint64(n)
				}
				b = putInt(b, v, size, sf.big)
			case 'f':
				v := math.Float32bits(float32(L.CheckNumber(arg)))
				arg++
				b = putInt(b, uint64(v), 4, sf.big)
			case 'd':
				v := math.Float64bits(float64(L.CheckNumber(arg)))
				arg++
				b = putInt(b, v, 8, sf.big)
			case 'c', 's':
				s := L.CheckString(arg)
				arg++
				l := len(s)
				if c == 'c' {
					j := i - 1
					if j >= 0 && f[j] >= '0' && f[j] <= '9' {
						if size > l {
							L.ArgError(arg-1, "string too short")
						}
						l = size
					}
				}
				b = append(b, s[:l]...)
				if c == 's' {
					b = append(b, 0)
				}
			default:
				L.RaiseError("invalid format option '%c'", c)
			}
		}
		L.Push(lua.LString(b))
		return 1
	}))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int {
		f := L.CheckString(1)
		data := L.CheckString(2)
		pos := L.OptInt(3, 1) - 1
		if pos < 0 || pos > len(data) {
			L.ArgError(3, "offset must be 1 or greater")
		}
		sf := &structFmt{align: 1}
		n := 0
		var prev lua.LValue = lua.LNil
		for i := 0; i < len(f); {
			c := f[i]
			i++
			if sf.control(L, c, f, &i) {
				continue
			}
			start := i
			size := structSize(L, c, f, &i)
			pos += sf.padding(size, pos)
			if c != 's' && (c != 'c' || size > 0) && pos+size > len(data) {
				L.ArgError(2, "data string too short")
			}
			switch c {
			case 'x':
				pos++
				continue
			case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
				var v uint64
				for k := 0; k < size; k++ {
					by := data[pos+k]
					if sf.big {
						v = v<<8 | uint64(by)
					} else {
						v |= uint64(by) << (8 * k)
					}
				}
				var out float64
				if c >= 'a' && c <= 'z' && size < 8 && v&(1<<(size*8-1)) != 0 {
					out = float64(int64(v) - int64(1)<<(size*8))
				} else if c >= 'a' && c <= 'z' {
					out = float64(int64(v))
				} else {
					out = float64(v)
				}
				prev = lua.LNumber(out)
			case 'f':
				var v uint32
				if sf.big {
					v = binary.BigEndian.Uint32([]byte(data[pos:]))
				} else {
					v = binary.LittleEndian.Uint32([]byte(data[pos:]))
				}
				prev = lua.LNumber(math.Float32frombits(v))
			case 'd':
				var v uint64
				if sf.big {
					v = binary.BigEndian.Uint64([]byte(data[pos:]))
				} else {
					v = binary.LittleEndian.Uint64([]byte(data[pos:]))
				}
				prev = lua.LNumber(math.Float64frombits(v))
			case 'c':
				if start == i || f[start] == '0' && i == start+1 {
					if f[start:i] == "0" {
						// c0: the length is the value unpacked before it.
						l, ok := prev.(lua.LNumber)
						if !ok || n == 0 {
							L.RaiseError("format 'c0' needs a previous size")
						}
						size = int(l)
						n-- // the size is replaced by the string
						L.Pop(1)
						if pos+size > len(data) {
							L.ArgError(2, "data string too short")
						}
					}
				}
				prev = lua.LString(data[pos : pos+size])
			case 's':
				e := strings.IndexByte(data[pos:], 0)
				if e < 0 {
					L.RaiseError("unfinished string in data")
				}
				size = e + 1
				prev = lua.LString(data[pos : pos+e])
			default:
				L.RaiseError("invalid format option '%c'", c)
			}
			L.Push(prev)
			n++
			pos += size
		}
		L.Push(lua.LNumber(pos + 1))
		return n + 1
	}))
	t.RawSetString("size", L.NewFunction(func(L *lua.LState) int {
		f := L.CheckString(1)
		sf := &structFmt{align: 1}
		total := 0
		for i := 0; i < len(f); {
			c := f[i]
			i++
			if sf.control(L, c, f, &i) {
				continue
			}
			size := structSize(L, c, f, &i)
			if c == 's' {
				L.ArgError(1, "options 'c0' - 's' have undefined sizes")
			}
			total += sf.padding(size, total) + size
		}
		L.Push(lua.LNumber(total))
		return 1
	}))
	L.G.Global.RawSetString("struct", t)
}
