package test

// Bitmaps: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO through go-redis,
// with Redis's error texts; a seeded model test against an in-memory string; and, on Lavik, a
// large (chunked) string whose bit commands must touch a chunk, not the value.

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/lavikdb/lavik/test/harness"
)

func TestBitmaps(t *testing.T) {
	_, c := startServer(t)
	subtest(t, c, "SetGetBit", func(t *testing.T, k checker) {
		k.eq(0, "SETBIT", "b", 7, 1)
		k.eq("\x01", "GET", "b")
		k.eq(1, "SETBIT", "b", 7, 0)
		k.eq(0, "SETBIT", "b", 100, 1)
		k.eq(13, "STRLEN", "b")
		k.eq(1, "GETBIT", "b", 100)
		k.eq(0, "GETBIT", "b", 99)
		k.eq(0, "GETBIT", "b", 1<<20)
		k.eq(0, "GETBIT", "missing", 5)
		k.eq(0, "SETBIT", "z", 3, 0) // a clear bit still creates the key
		k.eq("\x00", "GET", "z")
		k.ok("SET", "s", "`")
		k.eq(1, "GETBIT", "s", 1)
		k.eq(1, "GETBIT", "s", 2)
		k.eq(0, "SETBIT", "s", 7, 1)
		k.eq("a", "GET", "s")
		k.err("ERR bit offset is not an integer or out of range", "SETBIT", "b", -1, 1)
		k.err("ERR bit offset is not an integer or out of range", "SETBIT", "b", 4294967296, 1)
		k.err("ERR bit offset is not an integer or out of range", "SETBIT", "b", "x", 1)
		k.err("ERR bit offset is not an integer or out of range", "GETBIT", "b", -1)
		k.err("ERR bit is not an integer or out of range", "SETBIT", "b", 1, 2)
		k.err("ERR bit is not an integer or out of range", "SETBIT", "b", 1, "-1")
		k.do("RPUSH", "l", "a")
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "SETBIT", "l", 1, 1)
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "GETBIT", "l", 1)
		k.err("ERR wrong number of arguments for 'setbit' command", "SETBIT", "b", 1)
	})
	subtest(t, c, "Bitcount", func(t *testing.T, k checker) {
		k.ok("SET", "s", "foobar")
		k.eq(26, "BITCOUNT", "s")
		k.eq(4, "BITCOUNT", "s", 0, 0)
		k.eq(6, "BITCOUNT", "s", 1, 1)
		k.eq(12, "BITCOUNT", "s", 1, 2, "BYTE")
		k.eq(17, "BITCOUNT", "s", 5, 30, "BIT")
		k.eq(26, "BITCOUNT", "s", -100, 100)
		k.eq(0, "BITCOUNT", "s", -1, -2)
		k.eq(4, "BITCOUNT", "s", -1, -1)
		k.eq(0, "BITCOUNT", "s", -1, -1, "bit")
		k.eq(1, "BITCOUNT", "s", -2, -2, "bit")
		k.eq(0, "BITCOUNT", "missing")
		k.eq(0, "BITCOUNT", "missing", 0, "x") // Redis 7.0 looks the key up first
		k.err("ERR syntax error", "BITCOUNT", "s", 0)
		k.err("ERR syntax error", "BITCOUNT", "s", 0, 1, "WORD")
		k.err("ERR value is not an integer or out of range", "BITCOUNT", "s", "a", 1)
		k.do("SADD", "set", "a")
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "BITCOUNT", "set")
	})
	subtest(t, c, "Bitpos", func(t *testing.T, k checker) {
		k.ok("SET", "s", "\xff\xf0\x00")
		k.eq(12, "BITPOS", "s", 0)
		k.eq(2, "BITPOS", "s", 1, 2, -1, "BIT")
		k.eq(-1, "BITPOS", "s", 1, 2)
		k.eq(16, "BITPOS", "s", 0, 2)
		k.eq(7, "BITPOS", "s", 1, 7, 15, "BIT")
		k.eq(12, "BITPOS", "s", 0, 7, 15, "BIT")
		k.eq(-1, "BITPOS", "s", 0, 0, 0)
		k.eq(-1, "BITPOS", "s", 0, 0, 11, "BIT")
		k.ok("SET", "ones", "\xff\xff\xff")
		k.eq(24, "BITPOS", "ones", 0)
		k.eq(24, "BITPOS", "ones", 0, 1)
		k.eq(-1, "BITPOS", "ones", 0, 0, -1)
		k.err("ERR value is not an integer or out of range", "BITPOS", "ones", 0, 3, "BIT")
		k.ok("SET", "zeros", "\x00\x00\x00")
		k.eq(-1, "BITPOS", "zeros", 1)
		k.eq(-1, "BITPOS", "zeros", 1, 0, -1, "BIT")
		k.eq(0, "BITPOS", "missing", 0)
		k.eq(-1, "BITPOS", "missing", 1)
		k.ok("SET", "e", "")
		k.eq(-1, "BITPOS", "e", 0)
		k.eq(-1, "BITPOS", "s", 1, 5, 2)
		k.err("ERR The bit argument must be 1 or 0.", "BITPOS", "s", 2)
		k.err("ERR value is not an integer or out of range", "BITPOS", "s", "x")
		k.err("ERR syntax error", "BITPOS", "s", 1, 0, 1, "WORD")
		k.do("SADD", "set", "a")
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "BITPOS", "set", 1)
	})
	subtest(t, c, "Bitop", func(t *testing.T, k checker) {
		k.ok("SET", "a", "\x0f\xf0\xaa")
		k.ok("SET", "b", "\xff\x00")
		k.eq(3, "BITOP", "AND", "d", "a", "b")
		k.eq("\x0f\x00\x00", "GET", "d")
		k.eq(3, "BITOP", "or", "d", "a", "b")
		k.eq("\xff\xf0\xaa", "GET", "d")
		k.eq(3, "BITOP", "XOR", "d", "a", "b", "missing")
		k.eq("\xf0\xf0\xaa", "GET", "d")
		k.eq(3, "BITOP", "AND", "d", "a", "missing")
		k.eq("\x00\x00\x00", "GET", "d")
		k.eq(2, "BITOP", "NOT", "d", "b")
		k.eq("\x00\xff", "GET", "d")
		k.eq(0, "BITOP", "AND", "d", "missing", "missing2")
		k.eq(0, "EXISTS", "d")
		k.err("ERR BITOP NOT must be called with a single source key.", "BITOP", "NOT", "d", "a", "b")
		k.err("ERR syntax error", "BITOP", "NAND", "d", "a")
		k.do("SADD", "set", "a")
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "BITOP", "AND", "d", "a", "set")
		k.ok("SET", "n", "1") // an integer-looking value is a string
		k.eq(1, "BITOP", "NOT", "n", "n")
		k.eq("\xce", "GET", "n")
	})
	subtest(t, c, "Bitfield", func(t *testing.T, k checker) {
		k.eq([]any{int64(1), int64(0)}, "BITFIELD", "f", "INCRBY", "i5", 100, 1, "GET", "u4", 0)
		k.eq([]any{int64(0)}, "BITFIELD", "f2", "SET", "i8", 0, 100)
		k.eq([]any{int64(100)}, "BITFIELD", "f2", "GET", "i8", 0)
		k.eq([]any{int64(0), int64(0)}, "BITFIELD", "m", "SET", "u8", "#1", 200, "GET", "u8", "#0")
		k.eq("\x00\xc8", "GET", "m")
		// Overflow: WRAP, SAT and FAIL, as in Redis's documentation.
		k.eq([]any{int64(1), int64(1)}, "BITFIELD", "o", "INCRBY", "u2", 100, 1, "OVERFLOW", "SAT", "INCRBY", "u2", 102, 1)
		k.eq([]any{int64(2), int64(2)}, "BITFIELD", "o", "INCRBY", "u2", 100, 1, "OVERFLOW", "SAT", "INCRBY", "u2", 102, 1)
		k.eq([]any{int64(3), int64(3)}, "BITFIELD", "o", "INCRBY", "u2", 100, 1, "OVERFLOW", "SAT", "INCRBY", "u2", 102, 1)
		k.eq([]any{int64(0), int64(3)}, "BITFIELD", "o", "INCRBY", "u2", 100, 1, "OVERFLOW", "SAT", "INCRBY", "u2", 102, 1)
		k.eq([]any{nil}, "BITFIELD", "o", "OVERFLOW", "FAIL", "INCRBY", "u2", 102, 1)
		k.eq([]any{int64(127)}, "BITFIELD", "s", "OVERFLOW", "SAT", "INCRBY", "i8", 0, 1000)
		k.eq([]any{int64(-128)}, "BITFIELD", "s", "OVERFLOW", "SAT", "INCRBY", "i8", 0, -1000)
		k.eq([]any{int64(-128)}, "BITFIELD", "s", "SET", "i8", 0, 127)
		k.eq([]any{int64(-128)}, "BITFIELD", "s", "INCRBY", "i8", 0, 1)
		k.eq([]any{int64(0), int64(math.MinInt64)}, "BITFIELD", "w", "SET", "i64", 0, math.MinInt64, "GET", "i64", 0)
		k.eq([]any{int64(math.MaxInt64)}, "BITFIELD", "w", "OVERFLOW", "WRAP", "INCRBY", "i64", 0, -1)
		k.eq([]any{int64(math.MaxInt64)}, "BITFIELD", "w", "GET", "u63", 1)
		k.eq([]any{int64(0), int64(255)}, "BITFIELD", "u", "SET", "u8", 0, -1, "GET", "u8", 0)
		k.eq([]any{}, "BITFIELD", "nothing")
		k.eq(0, "EXISTS", "nothing")
		k.eq([]any{int64(0)}, "BITFIELD_RO", "missing", "GET", "u8", 0)
		k.eq([]any{int64(-56)}, "BITFIELD_RO", "m", "GET", "i8", 8)
		k.err("ERR BITFIELD_RO only supports the GET subcommand", "BITFIELD_RO", "m", "SET", "u8", 0, 1)
		k.err("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.", "BITFIELD", "m", "GET", "u64", 0)
		k.err("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.", "BITFIELD", "m", "GET", "i65", 0)
		k.err("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.", "BITFIELD", "m", "GET", "x8", 0)
		k.err("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.", "BITFIELD", "m", "GET", "u0", 0)
		k.err("ERR bit offset is not an integer or out of range", "BITFIELD", "m", "GET", "u8", -1)
		k.err("ERR bit offset is not an integer or out of range", "BITFIELD", "m", "GET", "u8", "#x")
		k.err("ERR value is not an integer or out of range", "BITFIELD", "m", "SET", "u8", 0, "x")
		k.err("ERR Invalid OVERFLOW type specified", "BITFIELD", "m", "OVERFLOW", "CLAMP")
		k.err("ERR syntax error", "BITFIELD", "m", "GET", "u8")
		k.err("ERR syntax error", "BITFIELD", "m", "DEL", "u8", 0)
		k.do("SADD", "set", "a")
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "BITFIELD", "set", "GET", "u8", 0)
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "BITFIELD_RO", "set", "GET", "u8", 0)
		// A FAIL still grows the string to the farthest bit written, as Redis does.
		k.eq([]any{nil}, "BITFIELD", "g", "OVERFLOW", "FAIL", "SET", "u2", 30, 9)
		k.eq("\x00\x00\x00\x00", "GET", "g")
	})
}

// bitModel is the reference: a string and Redis's bit rules on it.
type bitModel map[string][]byte

func (m bitModel) grow(k string, n int) []byte {
	v := m[k]
	if len(v) < n {
		v = append(v, make([]byte, n-len(v))...)
		m[k] = v
	}
	return v
}

func modelGetBits(v []byte, off int64, w int) uint64 {
	var x uint64
	for j := 0; j < w; j++ {
		var b uint64
		if i := (off + int64(j)) >> 3; i < int64(len(v)) {
			b = uint64(v[i]>>(7-(off+int64(j))&7)) & 1
		}
		x = x<<1 | b
	}
	return x
}

func modelSetBits(v []byte, off int64, w int, x uint64) {
	for j := 0; j < w; j++ {
		p := off + int64(j)
		if x>>(w-1-j)&1 == 1 {
			v[p>>3] |= 1 << (7 - p&7)
		} else {
			v[p>>3] &^= 1 << (7 - p&7)
		}
	}
}

// modelFit fits v (the exact result of an operation) into w bits, signed or not, as the overflow
// mode says: the value to store, and whether it overflowed.
func modelFit(v *big, signed bool, w int, mode string) (int64, bool) {
	lo, hi := newBig(0), newBig(0)
	if signed {
		lo.shl1neg(w - 1)
		hi.shl1(w - 1).addInt(-1)
	} else {
		hi.shl1(w).addInt(-1)
	}
	if v.cmp(lo) >= 0 && v.cmp(hi) <= 0 {
		return v.int64(), false
	}
	switch mode {
	case "SAT":
		if v.cmp(lo) < 0 {
			return lo.int64(), true
		}
		return hi.int64(), true
	case "WRAP":
		u := v.low64() & (^uint64(0) >> (64 - w))
		if signed {
			if w < 64 && u&(1<<(w-1)) != 0 {
				u |= ^uint64(0) << w
			}
		}
		return int64(u), true
	}
	return 0, true
}

// big is a 128-bit two's complement integer, enough for a 64-bit value plus a 64-bit increment.
type big struct{ hi, lo uint64 }

func newBig(x int64) *big {
	b := &big{lo: uint64(x)}
	if x < 0 {
		b.hi = ^uint64(0)
	}
	return b
}
func (b *big) shl1(n int) *big { *b = big{}; b.set(n); return b }
func (b *big) set(n int) {
	if n >= 64 {
		b.hi = 1 << (n - 64)
	} else {
		b.lo = 1 << n
	}
}
func (b *big) shl1neg(n int) *big { b.shl1(n); b.neg(); return b }
func (b *big) neg() {
	b.hi, b.lo = ^b.hi, ^b.lo
	b.add(&big{lo: 1})
}
func (b *big) add(o *big) *big {
	lo, carry := bits.Add64(b.lo, o.lo, 0)
	b.hi, _ = bits.Add64(b.hi, o.hi, carry)
	b.lo = lo
	return b
}
func (b *big) addInt(x int64) *big { return b.add(newBig(x)) }
func (b *big) cmp(o *big) int {
	if int64(b.hi) != int64(o.hi) {
		if int64(b.hi) < int64(o.hi) {
			return -1
		}
		return 1
	}
	switch {
	case b.lo < o.lo:
		return -1
	case b.lo > o.lo:
		return 1
	}
	return 0
}
func (b *big) int64() int64  { return int64(b.lo) }
func (b *big) low64() uint64 { return b.lo }

// TestBitmapModel runs seeded random SETBIT, GETBIT, BITFIELD, BITOP, BITCOUNT and BITPOS
// against a model of Redis's rules; the seed is printed on failure.
func TestBitmapModel(t *testing.T) {
	_, c := startServer(t)
	k := newChecker(t, c)
	seed := uint64(20240611)
	rng := rand.New(rand.NewPCG(seed, 1))
	keys := []string{"a", "b", "c"}
	m := bitModel{}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: "+format, append([]any{seed}, args...)...)
	}
	for i := 0; i < 1500; i++ {
		key := keys[rng.IntN(len(keys))]
		switch rng.IntN(6) {
		case 0:
			off := rng.Int64N(600)
			bit := rng.IntN(2)
			want := modelGetBits(m[key], off, 1)
			v := m.grow(key, int(off>>3)+1)
			modelSetBits(v, off, 1, uint64(bit))
			if got := k.int("SETBIT", key, off, bit); uint64(got) != want {
				fail("SETBIT %s %d %d = %d; want %d", key, off, bit, got, want)
			}
		case 1:
			off := rng.Int64N(700)
			if got := k.int("GETBIT", key, off); uint64(got) != modelGetBits(m[key], off, 1) {
				fail("GETBIT %s %d = %d", key, off, got)
			}
		case 2:
			args := []any{"BITFIELD", key}
			var want []any
			mode := "WRAP"
			grow := int64(-1)
			type pend struct {
				off int64
				w   int
				val uint64
			}
			var sets []pend
			for n := 1 + rng.IntN(3); n > 0; n-- {
				if rng.IntN(4) == 0 {
					mode = []string{"WRAP", "SAT", "FAIL"}[rng.IntN(3)]
					args = append(args, "OVERFLOW", mode)
				}
				signed := rng.IntN(2) == 0
				w := 1 + rng.IntN(63)
				if signed {
					w = 1 + rng.IntN(64)
				}
				typ := "u" + strconv.Itoa(w)
				if signed {
					typ = "i" + strconv.Itoa(w)
				}
				off := rng.Int64N(300)
				offArg := strconv.FormatInt(off, 10)
				if rng.IntN(4) == 0 {
					off = int64(rng.IntN(5)) * int64(w)
					offArg = "#" + strconv.FormatInt(off/int64(w), 10)
				}
				// What the field holds now: the model plus the pending writes of this call.
				cur := func() uint64 {
					v := append([]byte(nil), m[key]...)
					for _, s := range sets {
						for len(v) < int((s.off+int64(s.w)-1)>>3)+1 {
							v = append(v, 0)
						}
						modelSetBits(v, s.off, s.w, s.val)
					}
					return modelGetBits(v, off, w)
				}
				old := cur()
				oldV := newBig(int64(old))
				if signed && w < 64 && old&(1<<(w-1)) != 0 {
					oldV = newBig(int64(old | ^uint64(0)<<w))
				}
				switch rng.IntN(3) {
				case 0:
					args = append(args, "GET", typ, offArg)
					want = append(want, oldV.int64())
				case 1:
					x := rng.Int64() >> rng.IntN(64)
					if rng.IntN(2) == 0 {
						x = -x
					}
					args = append(args, "SET", typ, offArg, x)
					grow = max(grow, off+int64(w)-1)
					var val *big
					if signed {
						val = newBig(x)
					} else {
						val = &big{lo: uint64(x)} // Redis casts the argument to unsigned
					}
					nv, over := modelFit(val, signed, w, mode)
					if over && mode == "FAIL" {
						want = append(want, nil)
					} else {
						want = append(want, oldV.int64())
						sets = append(sets, pend{off, w, uint64(nv)})
					}
				default:
					x := rng.Int64() >> rng.IntN(64)
					if rng.IntN(2) == 0 {
						x = -x
					}
					args = append(args, "INCRBY", typ, offArg, x)
					grow = max(grow, off+int64(w)-1)
					nv, over := modelFit(newBig(x).add(oldV), signed, w, mode)
					if over && mode == "FAIL" {
						want = append(want, nil)
					} else {
						want = append(want, nv)
						sets = append(sets, pend{off, w, uint64(nv)})
					}
				}
			}
			if grow >= 0 {
				m.grow(key, int(grow>>3)+1)
			}
			for _, s := range sets {
				modelSetBits(m[key], s.off, s.w, s.val)
			}
			got, err := k.do(args...)
			if err != nil {
				fail("%v: %v", args, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				fail("%v = %v; want %v", args, got, want)
			}
		case 3:
			op := []string{"AND", "OR", "XOR", "NOT"}[rng.IntN(4)]
			dst := keys[rng.IntN(len(keys))]
			srcs := []string{keys[rng.IntN(len(keys))]}
			if op != "NOT" {
				srcs = append(srcs, keys[rng.IntN(len(keys))])
			}
			n := 0
			for _, s := range srcs {
				n = max(n, len(m[s]))
			}
			out := make([]byte, n)
			for j := range out {
				at := func(s string) byte {
					if j < len(m[s]) {
						return m[s][j]
					}
					return 0
				}
				x := at(srcs[0])
				for _, s := range srcs[1:] {
					switch op {
					case "AND":
						x &= at(s)
					case "OR":
						x |= at(s)
					case "XOR":
						x ^= at(s)
					}
				}
				if op == "NOT" {
					x = ^x
				}
				out[j] = x
			}
			args := append([]any{"BITOP", op, dst}, anys(srcs)...)
			if got := k.int(args...); got != int64(n) {
				fail("%v = %d; want %d", args, got, n)
			}
			if n == 0 {
				delete(m, dst)
			} else {
				m[dst] = out
			}
		case 4:
			v := m[key]
			start, end := rng.Int64N(100)-50, rng.Int64N(100)-50
			unit := []string{"BYTE", "BIT"}[rng.IntN(2)]
			want := int64(0)
			if len(v) > 0 {
				lo, hi := modelRange(int64(len(v)), start, end, unit == "BIT")
				for p := lo; p <= hi; p++ {
					want += int64(modelGetBits(v, p, 1))
				}
			}
			if got := k.int("BITCOUNT", key, start, end, unit); got != want {
				fail("BITCOUNT %s %d %d %s = %d; want %d (value %x)", key, start, end, unit, got, want, v)
			}
		default:
			v, ok := m[key]
			bit := rng.IntN(2)
			start, end := rng.Int64N(100)-50, rng.Int64N(100)-50
			unit := []string{"BYTE", "BIT"}[rng.IntN(2)]
			want := int64(-1)
			if !ok {
				if bit == 0 {
					want = 0
				}
			} else {
				lo, hi := modelRange(int64(len(v)), start, end, unit == "BIT")
				for p := lo; p <= hi; p++ {
					if int(modelGetBits(v, p, 1)) == bit {
						want = p
						break
					}
				}
			}
			if got := k.int("BITPOS", key, bit, start, end, unit); got != want {
				fail("BITPOS %s %d %d %d %s = %d; want %d (value %x)", key, bit, start, end, unit, got, want, v)
			}
		}
	}
	for _, key := range keys {
		got, _ := k.do("GET", key)
		want, ok := m[key]
		if (got == nil) != !ok || ok && got.(string) != string(want) {
			t.Fatalf("seed %d: %s = %q; want %q", seed, key, got, want)
		}
	}
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// modelRange resolves a BITCOUNT/BITPOS range on n bytes to inclusive bit positions.
func modelRange(n, start, end int64, isBit bool) (int64, int64) {
	total := n
	if isBit {
		total *= 8
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, total-1)
	if start > end {
		return 0, -1
	}
	if isBit {
		return start, end
	}
	return start * 8, end*8 + 7
}

// TestBitmapsLargeString runs the bit commands on an 8 MB string, stored chunked by Lavik (8 KiB
// chunks above 64 KiB): on Lavik, INFO's I/O counters must show that SETBIT, GETBIT and
// BITFIELD near the end, and BITCOUNT of a few bytes, read and write a chunk or two and the
// manifest, not the value.
func TestBitmapsLargeString(t *testing.T) {
	args := []string{"--appendfsync", "always"}
	if !harness.IsRedis() {
		args = append(args, "--reclaim-rate", "0")
	}
	s := harness.Start(t, args...)
	c := s.Client()
	k := newChecker(t, c)
	const n = 8 << 20
	model := bytes.Repeat([]byte{0x5a}, n)
	k.ok("SET", "big", string(model))
	touch := func(what string, run func()) {
		t.Helper()
		if harness.IsRedis() {
			run()
			return
		}
		before := readIOFigures(t, k)
		run()
		after := readIOFigures(t, k)
		const limit = 48 << 10 // manifest (8 KiB for 1024 chunks) + 2 chunks + alignment
		if d := after.readBytes - before.readBytes; d > limit {
			t.Fatalf("%s on an %d-byte string read %d bytes; want at most %d", what, n, d, limit)
		}
		if d := after.written - before.written; d > limit {
			t.Fatalf("%s on an %d-byte string wrote %d bytes; want at most %d", what, n, d, limit)
		}
	}
	last := int64(n*8 - 2)
	touch("SETBIT", func() { k.eq(1, "SETBIT", "big", last, 0) })
	model[n-1] &^= 1 << 1
	touch("GETBIT", func() { k.eq(0, "GETBIT", "big", last) })
	touch("BITFIELD", func() {
		k.eq([]any{int64(0x5a), int64(0x5a)}, "BITFIELD", "big", "SET", "u8", 8*(n/2), 0xff, "GET", "u8", 8*(n/2+1))
	})
	model[n/2] = 0xff
	touch("BITCOUNT", func() { k.eq(8+4, "BITCOUNT", "big", n/2, n/2+1) })
	touch("BITPOS", func() { k.eq(8*(n/2+1)+1, "BITPOS", "big", 1, n/2+1, n/2+2) })
	k.eq(8*(n/2+1)+1, "BITPOS", "big", 1, n/2+1)
	// Growing past the end writes the new chunks, not the old ones.
	touch("SETBIT past the end", func() { k.eq(0, "SETBIT", "big", 8*n+100, 1) })
	model = append(model, make([]byte, 13)...)
	model[n+12] = 0x08
	ones := 0
	for _, b := range model {
		ones += bits.OnesCount8(b)
	}
	k.eq(ones, "BITCOUNT", "big")
	k.eq(int64(len(model)), "STRLEN", "big")
	got, err := c.Get(harness.Ctx(t), "big").Bytes()
	if err != nil || !bytes.Equal(got, model) {
		t.Fatalf("GET big: %d bytes, %v; differs from the model at %d", len(got), err, firstDiff(got, model))
	}
	k.eq(int64(len(model)), "BITOP", "NOT", "inv", "big")
	k.eq(len(model)*8-ones, "BITCOUNT", "inv")
}
