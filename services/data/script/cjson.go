package script

import (
	"math"
	"sort"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjson is lua-cjson as Redis bundles it: encode and decode, with cjson.null for JSON null, an
// empty table encoded as {}, numbers with 14 significant digits and "/" escaped.

func openCjson(L *lua.LState) {
	t := L.NewTable()
	null := L.NewUserData()
	t.RawSetString("null", null)
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.ArgError(1, "expected 1 argument")
		}
		var b strings.Builder
		if err := jsonEncode(&b, L.Get(1), null, 0); err != "" {
			L.RaiseError("Cannot serialise %s", err)
		}
		L.Push(lua.LString(b.String()))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		d := &jsonDecoder{L: L, s: s, null: null}
		d.ws()
		v := d.value(0)
		d.ws()
		if d.err == "" && d.i < len(d.s) {
			d.fail("the end")
		}
		if d.err != "" {
			L.RaiseError("%s", d.err)
		}
		L.Push(v)
		return 1
	}))
	L.G.Global.RawSetString("cjson", t)
}

func jsonEncode(b *strings.Builder, v lua.LValue, null *lua.LUserData, depth int) string {
	if depth > 1000 {
		return "table: excessive nesting"
	}
	switch x := v.(type) {
	case lua.LBool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LNumber:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return "number: must not be NaN or Inf"
		}
		b.WriteString(fmtG14(f))
	case lua.LString:
		jsonString(b, string(x))
	case *lua.LUserData:
		if x == null {
			b.WriteString("null")
			return ""
		}
		return "userdata"
	case *lua.LTable:
		n, isArray := tableArrayLen(x)
		if isArray && n > 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if e := jsonEncode(b, x.RawGetInt(i), null, depth+1); e != "" {
					return e
				}
			}
			b.WriteByte(']')
			return ""
		}
		b.WriteByte('{')
		first := true
		var err string
		x.ForEach(func(k, val lua.LValue) {
			if err != "" {
				return
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			switch kk := k.(type) {
			case lua.LString:
				jsonString(b, string(kk))
			case lua.LNumber:
				jsonString(b, fmtG14(float64(kk)))
			default:
				err = "table key must be a number or string"
				return
			}
			b.WriteByte(':')
			err = jsonEncode(b, val, null, depth+1)
		})
		b.WriteByte('}')
		return err
	default:
		return v.Type().String()
	}
	return ""
}

// tableArrayLen reports whether t's keys are exactly 1..n (lua-cjson's test, without its
// sparse-array allowance), and n.
func tableArrayLen(t *lua.LTable) (int, bool) {
	n, count, ok := 0, 0, true
	t.ForEach(func(k, _ lua.LValue) {
		count++
		f, isNum := k.(lua.LNumber)
		if !isNum || float64(f) != math.Floor(float64(f)) || f < 1 {
			ok = false
			return
		}
		if int(f) > n {
			n = int(f)
		}
	})
	return n, ok && n == count
}

// fmtG14 is C's "%.14g".
func fmtG14(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e14 {
		return strconv.FormatInt(int64(f), 10)
	}
	s := strconv.FormatFloat(f, 'g', 14, 64)
	// C's %g drops trailing zeros of the mantissa and writes at least two exponent digits.
	if i := strings.IndexAny(s, "e"); i >= 0 {
		mant, exp := s[:i], s[i+1:]
		if strings.Contains(mant, ".") {
			mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
		}
		sign := exp[0]
		digits := exp[1:]
		if len(digits) < 2 {
			digits = "0" + digits
		}
		return mant + "e" + string(sign) + digits
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func jsonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[c>>4])
				b.WriteByte("0123456789abcdef"[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

type jsonDecoder struct {
	L    *lua.LState
	s    string
	i    int
	null *lua.LUserData
	err  string
}

func (d *jsonDecoder) fail(expected string) {
	if d.err == "" {
		tok := "end of input"
		if d.i < len(d.s) {
			tok = "'" + string(d.s[d.i]) + "'"
		}
		d.err = "Expected " + expected + " but found invalid token at character " + strconv.Itoa(d.i+1) + " (" + tok + ")"
	}
}

func (d *jsonDecoder) ws() {
	for d.i < len(d.s) && strings.IndexByte(" \t\r\n", d.s[d.i]) >= 0 {
		d.i++
	}
}

func (d *jsonDecoder) value(depth int) lua.LValue {
	if d.err != "" {
		return lua.LNil
	}
	if depth > 1000 {
		d.err = "Found too many nested data structures (1001) at character " + strconv.Itoa(d.i+1)
		return lua.LNil
	}
	if d.i >= len(d.s) {
		d.fail("value")
		return lua.LNil
	}
	switch c := d.s[d.i]; {
	case c == '{':
		d.i++
		t := d.L.NewTable()
		d.ws()
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			return t
		}
		for d.err == "" {
			d.ws()
			if d.i >= len(d.s) || d.s[d.i] != '"' {
				d.fail("object key string")
				return lua.LNil
			}
			k := d.str()
			d.ws()
			if d.i >= len(d.s) || d.s[d.i] != ':' {
				d.fail("colon")
				return lua.LNil
			}
			d.i++
			d.ws()
			v := d.value(depth + 1)
			t.RawSetString(k, v)
			d.ws()
			if d.i < len(d.s) && d.s[d.i] == ',' {
				d.i++
				continue
			}
			if d.i < len(d.s) && d.s[d.i] == '}' {
				d.i++
				return t
			}
			d.fail("comma or object end")
		}
		return lua.LNil
	case c == '[':
		d.i++
		t := d.L.NewTable()
		d.ws()
		if d.i < len(d.s) && d.s[d.i] == ']' {
			d.i++
			return t
		}
		for n := 1; d.err == ""; n++ {
			d.ws()
			t.RawSetInt(n, d.value(depth+1))
			d.ws()
			if d.i < len(d.s) && d.s[d.i] == ',' {
				d.i++
				continue
			}
			if d.i < len(d.s) && d.s[d.i] == ']' {
				d.i++
				return t
			}
			d.fail("comma or array end")
		}
		return lua.LNil
	case c == '"':
		return lua.LString(d.str())
	case strings.HasPrefix(d.s[d.i:], "true"):
		d.i += 4
		return lua.LTrue
	case strings.HasPrefix(d.s[d.i:], "false"):
		d.i += 5
		return lua.LFalse
	case strings.HasPrefix(d.s[d.i:], "null"):
		d.i += 4
		return d.null
	case c == '-' || c >= '0' && c <= '9':
		j := d.i
		for j < len(d.s) && strings.IndexByte("+-0123456789.eE", d.s[j]) >= 0 {
			j++
		}
		f, err := strconv.ParseFloat(d.s[d.i:j], 64)
		if err != nil {
			d.fail("value")
			return lua.LNil
		}
		d.i = j
		return lua.LNumber(f)
	}
	d.fail("value")
	return lua.LNil
}

func (d *jsonDecoder) str() string {
	d.i++ // the quote
	var b strings.Builder
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return b.String()
		case c == '\\' && d.i+1 < len(d.s):
			d.i++
			switch e := d.s[d.i]; e {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				if d.i+4 >= len(d.s) {
					d.fail("string")
					return ""
				}
				r, err := strconv.ParseUint(d.s[d.i+1:d.i+5], 16, 32)
				if err != nil {
					d.fail("string")
					return ""
				}
				d.i += 4
				if r >= 0xD800 && r < 0xDC00 && d.i+6 < len(d.s) && d.s[d.i+1] == '\\' && d.s[d.i+2] == 'u' {
					if lo, err := strconv.ParseUint(d.s[d.i+3:d.i+7], 16, 32); err == nil && lo >= 0xDC00 && lo < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
						d.i += 6
					}
				}
				b.WriteRune(rune(r))
			default:
				b.WriteByte(e)
			}
			d.i++
		default:
			b.WriteByte(c)
			d.i++
		}
	}
	d.fail("string end")
	return ""
}

var _ = sort.Strings
