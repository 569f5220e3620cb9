package commands

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
)

// The number rules of Redis 7's util.c, byte for byte where a client can see
// the difference: which strings INCR and INCRBYFLOAT accept, and the text
// INCRBYFLOAT stores.

const (
	// intMaxLen is LONG_STR_SIZE: string2ll rejects strings this long or
	// longer before looking at them. The longest valid input,
	// "-9223372036854775808", is 20 bytes.
	intMaxLen = 21

	// floatMaxLen is MAX_LONG_DOUBLE_CHARS: string2ld rejects strings this
	// long or longer.
	floatMaxLen = 5 * 1024

	// humanFracDigits is the precision of the "%.17Lf" that ld2string uses
	// in its human-friendly mode, the mode INCRBYFLOAT and HINCRBYFLOAT
	// store their results in.
	humanFracDigits = 17
)

// ParseInt parses b as a signed 64-bit decimal integer with exactly the rules
// of Redis's string2ll, which INCR, DECR, INCRBY and every integer argument
// use: an optional '-', then "0" alone or a digit 1-9 followed by digits.
// There is no '+', no space before or after, no leading zero, no "-0", and no
// value outside the int64 range. Because of that strictness, an accepted
// string is exactly what strconv.FormatInt prints for the value.
func ParseInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n >= intMaxLen {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	i := 0
	neg := b[0] == '-'
	if neg {
		i = 1
		if n == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(-v), true // -(1<<63) wraps to math.MinInt64, as wanted
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ParseFloat parses b the way Redis's string2ld (INCRBYFLOAT, HINCRBYFLOAT)
// reads a number, but into a float64. It accepts exactly the strings glibc's
// strtold consumes in full: an optional sign, then decimal digits with an
// optional '.' and e/E exponent ("1e3", "-.5", "5.", "+1.5E+2", "00012"),
// hexadecimal ones with an optional p/P exponent ("0x10", "0x1.8p1"), or
// "inf" or "infinity" in any case, which come back as ±Inf for the caller to
// reject ("increment would produce NaN or Infinity"). It rejects the empty
// string, any space or other byte before or after the number (an embedded
// NUL included), NaN, and strings of 5 KiB or more.
//
// ok is exactly Redis's verdict, and Redis reads into an x87 long double,
// whose range is far wider than float64's: "1e400" and "1e-400" are valid
// there. For such values f is what float64 can hold of them, ±Inf or ±0, so
// a caller that rejects infinite results rejects "1e400" where Redis would
// have stored it. ParseLongDouble keeps the whole range.
func ParseFloat(b []byte) (f float64, ok bool) {
	lit, ok := scanFloat(b)
	switch {
	case !ok:
		return 0, false
	case lit.inf:
		if lit.neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case !lit.nonzero:
		if lit.neg {
			return math.Copysign(0, -1), true
		}
		return 0, true
	}
	var err error
	if lit.hex && !lit.hasExp {
		// strtold takes "0x10"; strconv wants the binary exponent spelt out.
		f, err = strconv.ParseFloat(string(b)+"p0", 64)
	} else {
		f, err = strconv.ParseFloat(string(b), 64)
	}
	if err != nil || f == 0 {
		// The grammar was checked above, so what is left is overflow
		// (strconv returns ±Inf and ErrRange) or underflow to zero (which
		// strconv does not report). Whether Redis accepts the value depends
		// on the long double range; this path is rare enough to ask big.Float.
		if _, ok := ParseLongDouble(b); !ok {
			return 0, false
		}
		if f == 0 && lit.neg {
			f = math.Copysign(0, -1)
		}
	}
	return f, true
}

// FormatFloat returns the text INCRBYFLOAT and HINCRBYFLOAT store and reply
// with for f; see AppendFloat.
func FormatFloat(f float64) string {
	var buf [32]byte
	return string(AppendFloat(buf[:0], f))
}

// AppendFloat appends to dst the human-friendly form Redis's ld2string gives
// f: plain notation, never an exponent, no trailing zeros after the point and
// no point after a whole number, so 10.6 is "10.6", 5200.0 is "5200", 3e5 is
// "300000", 1.5e-5 is "0.000015" and 1e300 is a 1 followed by 300 zeros.
// Infinities are "inf" and "-inf", NaN is "nan".
//
// Redis prints a long double with "%.17Lf" and trims the zeros. The extra
// precision of long double is what makes 17 digits come out clean there; a
// float64 printed the same way would show binary noise ("10.59999999999999964"),
// so this prints the shortest decimal that reads back as f instead, and
// only falls back to rounding at 17 places past the point when that decimal
// is longer. Values below about 5e-18 thus print as "0", as in Redis.
//
// Negative zero, and any negative value that rounds to zero at 17 places,
// prints as "0": ld2string rewrites a trimmed "-0" to "0", which Redis's
// "No negative zero" INCRBYFLOAT test checks.
//
// Because the sum behind f was computed in float64, the digits can still
// differ from Redis's in the last places: 0.1+0.2 gives "0.30000000000000004"
// here and "0.3" in Redis, while Redis prints 1e300 with the binary noise of
// its long double in the low digits. ParseLongDouble, AddLongDouble and
// AppendLongDouble reproduce Redis exactly.
func AppendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case f == 0:
		return append(dst, '0')
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
	dot := bytes.IndexByte(dst[start:], '.')
	if dot < 0 || len(dst)-start-dot-1 <= humanFracDigits {
		return dst
	}
	dst = strconv.AppendFloat(dst[:start], f, 'f', humanFracDigits, 64)
	return trimHumanFloat(dst, start)
}

// Long double emulation. Redis keeps INCRBYFLOAT operands in an x87 80-bit
// long double: a 64-bit significand, exponents up to 16383, one rounding to
// nearest-even per operation. A big.Float with 64 bits of precision and the
// default rounding mode does the same arithmetic, and its exact decimal
// conversion rounds half-to-even as glibc's printf does, so these functions
// give the very bytes Redis stores: "0.3" for 0.1+0.2, 1e400 accepted, and
// the binary noise in the low digits of 1e300. They allocate, which is fine
// for INCRBYFLOAT and HINCRBYFLOAT but would not be for a hot path. Rejected
// alternative: float64 alone (ParseFloat, AppendFloat) differs from Redis in
// the last digit of many everyday sums.
const (
	// longDoublePrec is the significand width of an x87 long double.
	longDoublePrec = 64
	// longDoubleMaxExp bounds big.Float.MantExp for a finite long double:
	// LDBL_MAX is just below 2^16384.
	longDoubleMaxExp = 16384
)

// longDoubleUnderflow is half the smallest subnormal long double, 2^-16446.
// strtold rounds a nonzero value no bigger than this to zero and reports
// ERANGE, which string2ld treats as invalid.
var longDoubleUnderflow = new(big.Float).SetMantExp(big.NewFloat(0.5), -16445)

// ParseLongDouble parses b exactly as Redis's string2ld does on x86-64: the
// grammar of ParseFloat, the range of a long double (magnitudes up to about
// 1.19e4932 are accepted; overflow and underflow to zero are not), and the
// value rounded to a 64-bit significand. "inf" and "infinity" give an
// infinite big.Float for the caller to reject. The result has precision 64.
func ParseLongDouble(b []byte) (*big.Float, bool) {
	lit, ok := scanFloat(b)
	switch {
	case !ok:
		return nil, false
	case lit.inf:
		return new(big.Float).SetPrec(longDoublePrec).SetInf(lit.neg), true
	case !lit.nonzero:
		z := new(big.Float).SetPrec(longDoublePrec)
		if lit.neg {
			z.Neg(z)
		}
		return z, true
	case lit.mag > lit.magMax:
		return nil, false // far beyond LDBL_MAX
	case lit.mag < lit.magMin:
		return nil, false // far below the smallest subnormal
	}
	z := new(big.Float).SetPrec(longDoublePrec)
	base := 10
	if lit.hex {
		base = 0 // lets big.Float take the "0x" prefix and a 'p' exponent
	}
	if _, _, err := z.Parse(string(b), base); err != nil {
		return nil, false
	}
	if z.IsInf() || z.MantExp(nil) > longDoubleMaxExp {
		return nil, false
	}
	if new(big.Float).Abs(z).Cmp(longDoubleUnderflow) <= 0 {
		return nil, false
	}
	return z, true
}

// AddLongDouble returns x+y rounded as an x87 long double addition would be.
// ok is false when Redis would answer "increment would produce NaN or
// Infinity": either operand is infinite, or the sum overflows.
func AddLongDouble(x, y *big.Float) (sum *big.Float, ok bool) {
	if x.IsInf() || y.IsInf() {
		return nil, false
	}
	sum = new(big.Float).SetPrec(longDoublePrec).Add(x, y)
	if sum.MantExp(nil) > longDoubleMaxExp {
		return nil, false
	}
	return sum, true
}

// AppendLongDouble appends to dst what Redis's ld2string prints for x in its
// human-friendly mode: "%.17Lf" with the trailing zeros and a trailing point
// removed, "-0" rewritten to "0", and "inf" or "-inf" for infinities. x
// should come from ParseLongDouble or AddLongDouble so that it carries the
// long double's rounding.
func AppendLongDouble(dst []byte, x *big.Float) []byte {
	if x.IsInf() {
		if x.Signbit() {
			return append(dst, "-inf"...)
		}
		return append(dst, "inf"...)
	}
	start := len(dst)
	dst = x.Append(dst, 'f', humanFracDigits)
	return trimHumanFloat(dst, start)
}

// trimHumanFloat finishes the "%.17f" text in dst[start:] the way ld2string
// does: drop the trailing zeros after the point, then the point if nothing
// follows it, then turn "-0" into "0".
func trimHumanFloat(dst []byte, start int) []byte {
	if bytes.IndexByte(dst[start:], '.') >= 0 {
		for dst[len(dst)-1] == '0' {
			dst = dst[:len(dst)-1]
		}
		if dst[len(dst)-1] == '.' {
			dst = dst[:len(dst)-1]
		}
	}
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}

// floatLit describes a string that scanFloat accepted.
type floatLit struct {
	neg     bool // a leading '-'
	inf     bool // "inf" or "infinity"
	hex     bool // a "0x" significand
	hasExp  bool // an exponent part is present
	nonzero bool // the significand has a nonzero digit

	// mag is roughly the exponent of the value's leading digit, in the
	// literal's radix (powers of 10, or of 2 for hex), with the exponent
	// part saturated so that it cannot overflow. magMax and magMin bound
	// it for values that may fit a long double; outside them the value
	// certainly does not, and ParseLongDouble need not ask big.Float.
	mag, magMax, magMin int
}

// floatExpLimit saturates exponent parts: with at most floatMaxLen digits,
// any exponent beyond it puts a nonzero value out of every range here.
const floatExpLimit = 1 << 20

// scanFloat checks that all of b is a number glibc's strtold would consume in
// the C locale, except NaN, which string2ld rejects anyway. Leading spaces
// are refused: strtold would skip them, but string2ld tests isspace on the
// first byte.
func scanFloat(b []byte) (lit floatLit, ok bool) {
	if len(b) == 0 || len(b) >= floatMaxLen {
		return lit, false
	}
	i := 0
	if b[0] == '+' || b[0] == '-' {
		lit.neg = b[0] == '-'
		i++
	}
	if isInfWord(b[i:]) {
		lit.inf = true
		return lit, true
	}

	isDigit, expChar, bitsPerDigit := isDecDigit, byte('e'), 1
	lit.magMax, lit.magMin = 4934, -4953 // 1.19e4932, 3.6e-4951, with slack
	if len(b)-i >= 2 && b[i] == '0' && b[i+1]|0x20 == 'x' {
		lit.hex = true
		isDigit, expChar, bitsPerDigit = isHexDigit, 'p', 4
		lit.magMax, lit.magMin = 16386, -16448 // 2^16384, 2^-16446, with slack
		i += 2
	}

	// Significand: digits, optionally a point and more digits; at least one
	// digit in all. lead is the position of the first nonzero digit
	// relative to the point, in digits.
	digits, lead, point := 0, 0, -1
	for ; i < len(b); i++ {
		c := b[i]
		if c == '.' && point < 0 {
			point = digits
			continue
		}
		if !isDigit(c) {
			break
		}
		if c != '0' && !lit.nonzero {
			lit.nonzero = true
			lead = digits
		}
		digits++
	}
	if digits == 0 {
		return lit, false
	}
	if point < 0 {
		point = digits
	}

	exp := 0
	if i < len(b) && b[i]|0x20 == expChar {
		i++
		expNeg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			expNeg = b[i] == '-'
			i++
		}
		start := i
		for ; i < len(b) && isDecDigit(b[i]); i++ {
			if exp < floatExpLimit {
				exp = exp*10 + int(b[i]-'0')
			}
		}
		if i == start {
			return lit, false
		}
		if expNeg {
			exp = -exp
		}
		lit.hasExp = true
	}
	if i != len(b) {
		return lit, false
	}
	lit.mag = (point-lead-1)*bitsPerDigit + exp
	return lit, true
}

// isInfWord reports whether b is "inf" or "infinity", in any case.
func isInfWord(b []byte) bool {
	return bytes.EqualFold(b, []byte("inf")) || bytes.EqualFold(b, []byte("infinity"))
}

func isDecDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHexDigit(c byte) bool {
	return isDecDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'f')
}
