package resp

import (
	"math"
	"strconv"
)

// appendDouble appends f formatted as Redis 7.2's d2string does, which is how ZSCORE, ZINCRBY,
// GEODIST and every other double reply look on the wire:
//
//   - NaN, infinities and zeros are "nan", "inf", "-inf", "0" and "-0";
//   - integral values within ±LLONG_MAX/2 are plain integers (Redis's double2ll fast path);
//   - anything else is the shortest decimal that reads back to f, laid out by the rules of
//     the fpconv library Redis uses (its emit_digits): plain digits for integers shorter than
//     the digit count plus seven zeros, a decimal point for exponents down to -6 (or small
//     magnitudes), and otherwise scientific notation with an unpadded exponent, "1e+300",
//     "1.5e-7".
//
// fpconv computes digits with Grisu2, which in rare cases yields a longer (still exact) digit
// string than the shortest; strconv always yields the shortest, so such values may print with
// fewer digits than Redis prints. Both read back to the same double.
func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	}
	const llHalf = float64(math.MaxInt64 / 2)
	if f >= -llHalf && f <= llHalf && f == math.Trunc(f) {
		return strconv.AppendInt(dst, int64(f), 10)
	}

	// Shortest digits via strconv's 'e' form: [-]d[.ddd]e±XX.
	var scratch [32]byte
	e := strconv.AppendFloat(scratch[:0], f, 'e', -1, 64)
	if e[0] == '-' {
		dst = append(dst, '-')
		e = e[1:]
	}
	var digitBuf [20]byte
	digits := append(digitBuf[:0], e[0])
	i := 1
	if i < len(e) && e[i] == '.' {
		i++
		for e[i] != 'e' {
			digits = append(digits, e[i])
			i++
		}
	}
	// e[i] is 'e', then a sign and at least two exponent digits.
	exp10 := 0
	for _, c := range e[i+2:] {
		exp10 = exp10*10 + int(c-'0')
	}
	if e[i+1] == '-' {
		exp10 = -exp10
	}
	nd := len(digits)
	// fpconv's K: the value is digits × 10^K.
	k := exp10 - (nd - 1)
	absExp := exp10
	if absExp < 0 {
		absExp = -absExp
	}

	switch {
	case k >= 0 && absExp < nd+7:
		// Plain integer: digits followed by K zeros.
		dst = append(dst, digits...)
		for range k {
			dst = append(dst, '0')
		}
		return dst
	case k < 0 && (k > -7 || absExp < 4):
		offset := nd + k // digits before the decimal point
		if offset <= 0 {
			dst = append(dst, '0', '.')
			for range -offset {
				dst = append(dst, '0')
			}
			return append(dst, digits...)
		}
		dst = append(dst, digits[:offset]...)
		dst = append(dst, '.')
		return append(dst, digits[offset:]...)
	}
	dst = append(dst, digits[0])
	if nd > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	if exp10 < 0 {
		dst = append(dst, '-')
	} else {
		dst = append(dst, '+')
	}
	return strconv.AppendInt(dst, int64(absExp), 10)
}
