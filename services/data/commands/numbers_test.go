package commands

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
)

func TestParseInt(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		// The test vectors of Redis's util.c (test_string2ll).
		{"+1", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"01", 0, false},
		{"-1", -1, true},
		{"0", 0, true},
		{"1", 1, true},
		{"99", 99, true},
		{"-99", -99, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"-9223372036854775809", 0, false},
		{"9223372036854775807", math.MaxInt64, true},
		{"9223372036854775808", 0, false},

		// The rest of string2ll's rules.
		{"", 0, false},
		{"-", 0, false},
		{"-0", 0, false},
		{"00", 0, false},
		{"-01", 0, false},
		{"--1", 0, false},
		{"1-", 0, false},
		{"    11", 0, false}, // INCR fails against key with spaces (left)
		{"11    ", 0, false}, // (right)
		{" 11 ", 0, false},   // (both)
		{"\t1", 0, false},
		{"1\n", 0, false},
		{"1\x00", 0, false},
		{"1a", 0, false},
		{"a1", 0, false},
		{"1.0", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"\u0661", 0, false}, // ARABIC-INDIC DIGIT ONE
		{"17179869184", 17179869184, true},
		{"34359738368", 34359738368, true},
		{"1000000000000000000", 1e18, true},
		{"18446744073709551615", 0, false},  // MaxUint64
		{"18446744073709551616", 0, false},  // MaxUint64+1
		{"99999999999999999999", 0, false},  // 20 digits, beyond uint64
		{"-99999999999999999999", 0, false}, // 21 bytes: too long
		{"-18446744073709551616", 0, false}, // would wrap a uint64 to 0
		{"000000000000000000001", 0, false}, // 21 bytes
		{"-9223372036854775807", -math.MaxInt64, true},
	} {
		got, ok := ParseInt([]byte(c.in))
		if ok != c.ok || got != c.want {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// FuzzParseInt checks ParseInt against strconv: it must accept exactly the
// strings strconv.ParseInt accepts and strconv.FormatInt gives back
// unchanged, with the same value.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "+1", "01", "-0", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "18446744073709551616", " 1", "1_000", "0x1f", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := ParseInt(b)
		want, err := strconv.ParseInt(string(b), 10, 64)
		canonical := err == nil && strconv.FormatInt(want, 10) == string(b)
		if ok != canonical {
			t.Fatalf("ParseInt(%q) ok = %v, but strconv says canonical = %v", b, ok, canonical)
		}
		if ok && got != want {
			t.Fatalf("ParseInt(%q) = %d, strconv says %d", b, got, want)
		}
	})
}

func TestParseFloat(t *testing.T) {
	inf, negZero := math.Inf(1), math.Copysign(0, -1)
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		// Decimal forms strtold accepts.
		{"1e3", 1000, true},
		{"-.5", -0.5, true},
		{"5.", 5, true},
		{"+5", 5, true},
		{"+.5e-3", 0.0005, true},
		{"1.5E+2", 150, true},
		{"00012", 12, true},
		{"10.6", 10.6, true},
		{"17179869184", 17179869184, true},
		{"0e5", 0, true},
		{"0e99999999999", 0, true},
		{"-0", negZero, true},
		{"-0.0", negZero, true},
		{"1" + "." + strings.Repeat("0", floatMaxLen-3), 1, true}, // 5 KiB less one byte
		{"4.9e-324", 5e-324, true},                                // float64 subnormal

		// Hexadecimal forms, with and without a binary exponent.
		{"0x10", 16, true},
		{"0x1.8p1", 3, true},
		{"0X1P-2", 0.25, true},
		{"0x.8", 0.5, true},
		{"-0x1p-1074", -5e-324, true},

		// Infinities: valid numbers, for the caller to refuse.
		{"inf", inf, true},
		{"+inf", inf, true},
		{"-inf", -inf, true},
		{"Infinity", inf, true},
		{"INF", inf, true},
		{"-InFiNiTy", -inf, true},

		// In the long double range but not the float64 one.
		{"1e400", inf, true},
		{"-1e400", -inf, true},
		{"1e-400", 0, true},
		{"-1e-400", negZero, true},
		{"1.18e4932", inf, true},
		{"3e-4951", 0, true},

		// Out of every range.
		{"1.19e4932", 0, false},
		{"1e5000", 0, false},
		{"1e-4951", 0, false},
		{"1e-5000", 0, false},
		{"0x1p16384", 0, false},
		{"0x1p-16446", 0, false},
		{"1e99999999999999999999", 0, false},

		// Not numbers for strtold, or not wholly.
		{"", 0, false},
		{".", 0, false},
		{"+", 0, false},
		{"-", 0, false},
		{"+-1", 0, false},
		{"--1", 0, false},
		{"e5", 0, false},
		{".e1", 0, false},
		{"1e", 0, false},
		{"1e+", 0, false},
		{"1e-", 0, false},
		{"1e5.5", 0, false},
		{"1.2.3", 0, false},
		{"1,5", 0, false},
		{"1_0", 0, false},
		{"0x", 0, false},
		{"0x.", 0, false},
		{"0xg", 0, false},
		{"0x1p", 0, false},
		{"0x1p+", 0, false},
		{"0x1_0", 0, false},
		{"0b101", 0, false},
		{"infin", 0, false},
		{"infinityy", 0, false},
		{"nan", 0, false},
		{"-nan", 0, false},
		{"NaN", 0, false},
		{"nan(1)", 0, false},
		{"\u0661", 0, false},
		{"1" + "." + strings.Repeat("0", floatMaxLen-2), 0, false}, // 5 KiB

		// Spaces and NULs (INCRBYFLOAT fails against key with spaces, and
		// "string to double with null terminator").
		{"    11", 0, false},
		{"11    ", 0, false},
		{" 11 ", 0, false},
		{"\t1", 0, false},
		{"\n1", 0, false},
		{"1\n", 0, false},
		{"1\x002", 0, false},
		{"\x001", 0, false},
	} {
		got, ok := ParseFloat([]byte(c.in))
		name := c.in
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		if ok != c.ok || got != c.want || math.Signbit(got) != math.Signbit(c.want) {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v, %v", name, got, ok, c.want, c.ok)
		}
		if _, ldOK := ParseLongDouble([]byte(c.in)); ldOK != c.ok {
			t.Errorf("ParseLongDouble(%q) ok = %v, want %v", name, ldOK, c.ok)
		}
	}
}

func TestFormatFloat(t *testing.T) {
	tenth, fifth := 0.1, 0.2 // variables, so that the sum is rounded to float64
	for _, c := range []struct {
		in   float64
		want string
	}{
		{10.6, "10.6"},
		{5200, "5200"},
		{3.0e5, "300000"},
		{1.5e-5, "0.000015"},
		{1e-5, "0.00001"},
		{-2.5, "-2.5"},
		{-0.1, "-0.1"},
		{3, "3"},
		{1.25, "1.25"},
		{17179869185.5, "17179869185.5"},
		{34359738368, "34359738368"},
		{123456789.125, "123456789.125"},
		{1e21, "1000000000000000000000"},
		{1e300, "1" + strings.Repeat("0", 300)},
		{math.MaxFloat64, "17976931348623157" + strings.Repeat("0", 292)},
		{-1e22, "-1" + strings.Repeat("0", 22)},

		// Zero, whatever its sign, and what rounds to it at 17 places.
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1e-18, "0"},
		{-1e-20, "0"},
		{5e-324, "0"},
		{1e-17, "0.00000000000000001"},
		{0.012345678901234567, "0.01234567890123457"},

		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{math.NaN(), "nan"},

		// Where float64 arithmetic shows through. Redis, in long double,
		// says "0.3" and "9223372036854775808"; AppendLongDouble does too.
		{tenth + fifth, "0.30000000000000004"},
		{1 << 63, "9223372036854776000"},
	} {
		if got := FormatFloat(c.in); got != c.want {
			t.Errorf("FormatFloat(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := string(AppendFloat([]byte("x="), 10.6)); got != "x=10.6" {
		t.Errorf("AppendFloat kept %q, want %q", got, "x=10.6")
	}
	if got := string(AppendFloat([]byte("x="), -1e-20)); got != "x=0" {
		t.Errorf("AppendFloat kept %q, want %q", got, "x=0")
	}
}

// TestLongDouble replays INCRBYFLOAT against a Redis 7.0 x86-64 server: SET
// the key to cur, INCRBYFLOAT it by incr, and compare the reply.
func TestLongDouble(t *testing.T) {
	const (
		notFloat = "ERR value is not a valid float"
		nanOrInf = "ERR increment would produce NaN or Infinity"
	)
	for _, c := range []struct{ cur, incr, want string }{
		// From Redis's incr.tcl.
		{"0", "1", "1"},
		{"1", "0.25", "1.25"},
		{"1.5", "1.5", "3"},
		{"17179869184", "1.5", "17179869185.5"},
		{"17179869184", "17179869184", "34359738368"},
		{"    11", "1.0", notFloat},
		{"11    ", "1.0", notFloat},
		{" 11 ", "1.0", notFloat},
		{"0", "+inf", nanOrInf},
		{"1", "-1.1", "-0.1"},
		{"1\x002", "1", notFloat},
		{"0.024390243902439025", "-0.024390243902439025", "0"},

		// Decimal sums that float64 would get wrong in the last digit.
		{"0.1", "0.2", "0.3"},
		{"1.1", "2.2", "3.3"},
		{"0.3", "0.1", "0.4"},
		{"10.5", "0.1", "10.6"},
		{"-5", "0.0001", "-4.9999"},
		{"0", "0.024390243902439025", "0.02439024390243902"},
		{"0", "3.14159265358979323846264338327950288", "3.14159265358979324"},
		// The long double's own noise, which Redis prints too.
		{"559.7", "0", "559.70000000000000001"},
		{"1", "1e-16", "1.0000000000000001"},
		{"1", "1e-17", "1.00000000000000001"},
		{"1", "1e-18", "1"},
		{"0", "9007199254740993", "9007199254740993"},
		{"0", "9223372036854775808", "9223372036854775808"},
		{"0", "18446744073709551616", "18446744073709551616"},
		{"99999999999999999999", "1", "100000000000000000000"},
		{"0", "123456789012345678901234567890", "123456789012345678899921813504"},
		{"0", "1e300", "1000000000000000000008997324079559193870523944273290747938260082321265646596180935755849152083750497190350372508614274835903592556184672983913096260520748646287327135641843653294084255107606016789726652932370030551382947620994540294772781889620606179267611627097410650567187386105690089424915104006144"},
		{"0", "1e400", "10000000000000000000281880683947586514586453433629052038625910693539685534008629862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971723778943824391593338047470675026246684401359237513603830343735485505244955964979021825038280091068414947402456898653040951017512658092615827588920183472511643316591362664138176309734806343732497430221946880"},

		// Rounding at 17 places and negative zero.
		{"0", "1e-17", "0.00000000000000001"},
		{"0", "5e-18", "0"},
		{"0", "6e-18", "0.00000000000000001"},
		{"0", "-1e-20", "0"},
		{"-0", "0", "0"},
		{"-1", "1", "0"},
		{"0", "-0.1", "-0.1"},
		{"0", "0.012345678901234567", "0.01234567890123457"},
		{"0", "1e23", "100000000000000000000000"},
		{"0", "-9223372036854775808", "-9223372036854775808"},

		// Hexadecimal, and the edges of the long double range.
		{"0", "0x10", "16"},
		{"0", "0x1.8p1", "3"},
		{"0", "1e-400", "0"},
		{"0", "1e-4950", "0"},
		{"0", "2e-4951", "0"},
		{"0", "1e-4951", notFloat},
		{"0", "0x1p-16445", "0"},
		{"0", "0x1.8p-16446", "0"},
		{"0", "0x1p-16446", notFloat},
		{"0", "0x1p16384", notFloat},
		{"0", "0x1ffffffffffffffffp16319", notFloat},
		{"0", "1.1897314953572317651e4932", notFloat},
		{"0", "1.18973149535723176509e4932", notFloat},
		{"1.19e4932", "0", notFloat},
		{"1e4932", "1e4932", nanOrInf},
		{"0", "-inf", nanOrInf},
		{"0", "nan", notFloat},
	} {
		if got := incrByFloat(c.cur, c.incr); got != c.want {
			t.Errorf("%q INCRBYFLOAT %q = %.80q, want %.80q", c.cur, c.incr, got, c.want)
		}
	}

	// LDBL_MAX, from an exact hexadecimal form and from two decimal ones
	// that round to it.
	const ldblMaxPrefix = "118973149535723176502126385303097020516906332229462420044032"
	for _, incr := range []string{"0xffffffffffffffffp16320", "1.18973149535723176502e4932", "1.18973149535723176503e4932"} {
		got := incrByFloat("0", incr)
		if !strings.HasPrefix(got, ldblMaxPrefix) || len(got) != 4933 {
			t.Errorf("0 INCRBYFLOAT %s = %.70s... (%d bytes), want LDBL_MAX", incr, got, len(got))
		}
	}
}

// incrByFloat is INCRBYFLOAT on a string value, Redis's way.
func incrByFloat(cur, incr string) string {
	x, ok := ParseLongDouble([]byte(cur))
	if !ok {
		return "ERR value is not a valid float"
	}
	y, ok := ParseLongDouble([]byte(incr))
	if !ok {
		return "ERR value is not a valid float"
	}
	sum, ok := AddLongDouble(x, y)
	if !ok {
		return "ERR increment would produce NaN or Infinity"
	}
	return string(AppendLongDouble(nil, sum))
}

func TestAppendLongDouble(t *testing.T) {
	for _, c := range []struct {
		in   *big.Float
		want string
	}{
		{new(big.Float).SetInf(false), "inf"},
		{new(big.Float).SetInf(true), "-inf"},
		{new(big.Float).Neg(new(big.Float)), "0"},
		{big.NewFloat(-2.5), "-2.5"},
	} {
		if got := string(AppendLongDouble([]byte("v="), c.in)); got != "v="+c.want {
			t.Errorf("AppendLongDouble(%v) = %q, want %q", c.in, got, "v="+c.want)
		}
	}
}

// FuzzParseFloat checks ParseFloat against ParseLongDouble and strconv, and
// that what AppendFloat and AppendLongDouble print reads back.
func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"1e3", "-.5", "5.", "0x1.8p1", "0x10", "inf", "-Infinity", "nan", "1e400",
		"1e-400", "1e-4951", " 1", "1 ", "0.1", "-0", "1e", "0x", "00012", "3.14159265358979323846"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64 {
			return // keep big.Float work small; the grammar has no long-range state
		}
		v, ok := ParseFloat(b)
		ld, ldOK := ParseLongDouble(b)
		if ok != ldOK {
			t.Fatalf("ParseFloat(%q) ok = %v but ParseLongDouble ok = %v", b, ok, ldOK)
		}
		if !ok {
			return
		}
		if math.IsNaN(v) {
			t.Fatalf("ParseFloat(%q) = NaN", b)
		}
		// Decimal forms mean the same to strconv, when it can hold them.
		if sv, err := strconv.ParseFloat(string(b), 64); err == nil && !math.IsInf(v, 0) && v != 0 && sv != v {
			t.Fatalf("ParseFloat(%q) = %v, strconv says %v", b, v, sv)
		}
		if !math.IsInf(v, 0) {
			// Exact, unless the shortest form was cut at 17 places; that
			// happens only below 0.1, where cutting costs at most 5e-18 and
			// reading back half an ulp, under 7e-18.
			text := AppendFloat(nil, v)
			back, ok := ParseFloat(text)
			if !ok || (back != v && math.Abs(back-v) > 1.2e-17) {
				t.Fatalf("AppendFloat(%v) = %q, which reads back as %v, %v", v, text, back, ok)
			}
		}
		if !ld.IsInf() {
			text := AppendLongDouble(nil, ld)
			if _, ok := ParseLongDouble(text); !ok {
				t.Fatalf("AppendLongDouble(%q) = %q, which does not read back", b, text)
			}
		}
	})
}
