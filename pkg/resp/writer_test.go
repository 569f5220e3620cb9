package resp

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestWriter(t *testing.T) {
	for _, tc := range []struct {
		name         string
		write        func(w *Writer)
		resp2, resp3 string
	}{
		{"Simple", func(w *Writer) { w.Simple("OK") }, "+OK\r\n", "+OK\r\n"},
		{"SimpleNewlines", func(w *Writer) { w.Simple("a\r\nb") }, "+a  b\r\n", "+a  b\r\n"},
		{"Error", func(w *Writer) { w.Error("ERR syntax error") }, "-ERR syntax error\r\n", "-ERR syntax error\r\n"},
		{"ErrorNewlines", func(w *Writer) { w.Error("ERR bad\r\narg\n") }, "-ERR bad  arg \r\n", "-ERR bad  arg \r\n"},
		{"IntZero", func(w *Writer) { w.Int(0) }, ":0\r\n", ":0\r\n"},
		{"IntSmall", func(w *Writer) { w.Int(511) }, ":511\r\n", ":511\r\n"},
		{"IntLarge", func(w *Writer) { w.Int(512) }, ":512\r\n", ":512\r\n"},
		{"IntNegative", func(w *Writer) { w.Int(-1) }, ":-1\r\n", ":-1\r\n"},
		{"IntMin", func(w *Writer) { w.Int(math.MinInt64) }, ":-9223372036854775808\r\n", ":-9223372036854775808\r\n"},
		{"Bulk", func(w *Writer) { w.Bulk([]byte("a\r\nb")) }, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
		{"BulkNil", func(w *Writer) { w.Bulk(nil) }, "$0\r\n\r\n", "$0\r\n\r\n"},
		{"BulkLong", func(w *Writer) { w.Bulk(make([]byte, 1000)) }, "$1000\r\n" + strings.Repeat("\x00", 1000) + "\r\n", "$1000\r\n" + strings.Repeat("\x00", 1000) + "\r\n"},
		{"BulkString", func(w *Writer) { w.BulkString("hello") }, "$5\r\nhello\r\n", "$5\r\nhello\r\n"},
		{"Null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"NullArray", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
		{"Array", func(w *Writer) { w.Array(2); w.Int(1); w.BulkString("x") }, "*2\r\n:1\r\n$1\r\nx\r\n", "*2\r\n:1\r\n$1\r\nx\r\n"},
		{"ArrayEmpty", func(w *Writer) { w.Array(0) }, "*0\r\n", "*0\r\n"},
		{"ArrayLarge", func(w *Writer) { w.Array(100000) }, "*100000\r\n", "*100000\r\n"},
		{"Map", func(w *Writer) { w.Map(1); w.BulkString("k"); w.Int(1) }, "*2\r\n$1\r\nk\r\n:1\r\n", "%1\r\n$1\r\nk\r\n:1\r\n"},
		{"MapLarge", func(w *Writer) { w.Map(300) }, "*600\r\n", "%300\r\n"},
		{"Set", func(w *Writer) { w.Set(3) }, "*3\r\n", "~3\r\n"},
		{"Push", func(w *Writer) { w.Push(3) }, "*3\r\n", ">3\r\n"},
		{"Double", func(w *Writer) { w.Double(3.5) }, "$3\r\n3.5\r\n", ",3.5\r\n"},
		{"DoubleInf", func(w *Writer) { w.Double(math.Inf(1)) }, "$3\r\ninf\r\n", ",inf\r\n"},
		{"DoubleNegInf", func(w *Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"DoubleNaN", func(w *Writer) { w.Double(math.NaN()) }, "$3\r\nnan\r\n", ",nan\r\n"},
		{"DoubleExp", func(w *Writer) { w.Double(1e300) }, "$6\r\n1e+300\r\n", ",1e+300\r\n"},
		{"DoubleInteger", func(w *Writer) { w.Double(10) }, "$2\r\n10\r\n", ",10\r\n"},
		{"BoolTrue", func(w *Writer) { w.Bool(true) }, ":1\r\n", "#t\r\n"},
		{"BoolFalse", func(w *Writer) { w.Bool(false) }, ":0\r\n", "#f\r\n"},
		{"Verbatim", func(w *Writer) { w.Verbatim("txt", "a\r\nb") }, "$4\r\na\r\nb\r\n", "=8\r\ntxt:a\r\nb\r\n"},
		{"VerbatimMarkdown", func(w *Writer) { w.Verbatim("mkd", "# x") }, "$3\r\n# x\r\n", "=7\r\nmkd:# x\r\n"},
		{"VerbatimBadFormat", func(w *Writer) { w.Verbatim("text", "x") }, "$1\r\nx\r\n", "=5\r\ntxt:x\r\n"},
		{"Raw", func(w *Writer) { w.Raw([]byte("+PONG\r\n")) }, "+PONG\r\n", "+PONG\r\n"},
	} {
		for _, proto := range []int{2, 3} {
			w := NewWriter()
			w.SetProto(proto)
			tc.write(w)
			want := tc.resp2
			if proto == 3 {
				want = tc.resp3
			}
			if got := string(w.Bytes()); got != want {
				t.Errorf("%s RESP%d: got %q, want %q", tc.name, proto, got, want)
			}
			if w.Len() != len(want) {
				t.Errorf("%s RESP%d: Len() = %d, want %d", tc.name, proto, w.Len(), len(want))
			}
		}
	}
}

func TestWriterProto(t *testing.T) {
	w := NewWriter()
	if w.Proto() != 2 {
		t.Fatalf("default proto %d", w.Proto())
	}
	for _, tc := range []struct{ set, want int }{{3, 3}, {2, 2}, {3, 3}, {4, 2}, {0, 2}} {
		w.SetProto(tc.set)
		if w.Proto() != tc.want {
			t.Errorf("SetProto(%d): Proto() = %d, want %d", tc.set, w.Proto(), tc.want)
		}
	}
}

func TestWriterReset(t *testing.T) {
	w := NewWriter()
	w.BulkString("hello")
	c := cap(w.Bytes())
	w.Reset()
	if w.Len() != 0 {
		t.Fatalf("Len() = %d after Reset", w.Len())
	}
	w.Simple("OK")
	if cap(w.Bytes()) != c {
		t.Errorf("Reset dropped a small buffer")
	}
	w.Bulk(make([]byte, 2<<20))
	w.Reset()
	if cap(w.Bytes()) > maxKeptWriterBuf {
		t.Errorf("Reset kept a %d-byte buffer", cap(w.Bytes()))
	}
	w.Simple("OK")
	if string(w.Bytes()) != "+OK\r\n" {
		t.Errorf("after Reset: %q", w.Bytes())
	}
}

func TestAppendDouble(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{3.5, "3.5"},
		{-2.5, "-2.5"},
		{0.1, "0.1"},
		{0.3, "0.3"},
		{1.0 / 3, "0.3333333333333333"},
		{100.5, "100.5"},
		{123456.789, "123456.789"},
		{10000000.5, "10000000.5"},
		{0, "0"},
		{math.Copysign(0, -1), "-0"},
		{10, "10"},
		{-10, "-10"},
		{1e15, "1000000000000000"},
		{1e18, "1000000000000000000"},
		{1 << 62, "4611686018427387904"},
		{-(1 << 62), "-4611686018427387904"},
		{5e18, "5e+18"},
		{1 << 63, "9223372036854776000"},
		{1e20, "1e+20"},
		{1e21, "1e+21"},
		{1.2345e20, "1.2345e+20"},
		{1e300, "1e+300"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{-math.MaxFloat64, "-1.7976931348623157e+308"},
		{0.001, "0.001"},
		{0.00125, "0.00125"},
		{1e-5, "0.00001"},
		{1e-6, "0.000001"},
		{1.5e-6, "1.5e-6"}, // K = -7: fpconv switches to exponent form
		{1e-7, "1e-7"},
		{1.5e-7, "1.5e-7"},
		{-1e-10, "-1e-10"},
		{1.23e-18, "1.23e-18"},
		{5e-324, "5e-324"},
		{12345678901.234568, "12345678901.234568"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{math.NaN(), "nan"},
	} {
		if got := string(appendDouble(nil, tc.f)); got != tc.want {
			t.Errorf("appendDouble(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestAppendDoubleRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 100000 {
		var f float64
		switch rng.IntN(3) {
		case 0:
			f = math.Float64frombits(rng.Uint64())
		case 1:
			f = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		default:
			f = float64(rng.Int64N(1<<40)) / float64(int64(1)<<rng.IntN(20))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := string(appendDouble(nil, f))
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != f {
			t.Fatalf("appendDouble(%v) = %q, reads back as %v, %v", f, s, back, err)
		}
	}
}

// TestRoundTrip writes replies with the Writer and reads them back with the ReplyReader.
func TestRoundTrip(t *testing.T) {
	bulk := func(s string) Value { return Value{Kind: BulkString, Str: []byte(s)} }
	integer := func(n int64) Value { return Value{Kind: Integer, Int: n} }
	for _, tc := range []struct {
		name         string
		write        func(w *Writer)
		resp2, resp3 Value
	}{
		{"Simple", func(w *Writer) { w.Simple("OK") }, Value{Kind: SimpleString, Str: []byte("OK")}, Value{Kind: SimpleString, Str: []byte("OK")}},
		{"Error", func(w *Writer) { w.Error("ERR x") }, Value{Kind: Error, Str: []byte("ERR x")}, Value{Kind: Error, Str: []byte("ERR x")}},
		{"Int", func(w *Writer) { w.Int(-42) }, integer(-42), integer(-42)},
		{"Bulk", func(w *Writer) { w.Bulk([]byte("a\r\nb")) }, bulk("a\r\nb"), bulk("a\r\nb")},
		{"EmptyBulk", func(w *Writer) { w.BulkString("") }, bulk(""), bulk("")},
		{"Null", func(w *Writer) { w.Null() }, Value{Kind: Null}, Value{Kind: Null}},
		{"NullArray", func(w *Writer) { w.NullArray() }, Value{Kind: Null}, Value{Kind: Null}},
		{"Array", func(w *Writer) { w.Array(2); w.BulkString("a"); w.Int(1) },
			Value{Kind: Array, Elems: []Value{bulk("a"), integer(1)}},
			Value{Kind: Array, Elems: []Value{bulk("a"), integer(1)}}},
		{"Nested", func(w *Writer) { w.Array(1); w.Array(1); w.Null() },
			Value{Kind: Array, Elems: []Value{{Kind: Array, Elems: []Value{{Kind: Null}}}}},
			Value{Kind: Array, Elems: []Value{{Kind: Array, Elems: []Value{{Kind: Null}}}}}},
		{"Map", func(w *Writer) { w.Map(1); w.BulkString("k"); w.Int(2) },
			Value{Kind: Array, Elems: []Value{bulk("k"), integer(2)}},
			Value{Kind: Map, Elems: []Value{bulk("k"), integer(2)}}},
		{"Set", func(w *Writer) { w.Set(1); w.BulkString("m") },
			Value{Kind: Array, Elems: []Value{bulk("m")}},
			Value{Kind: Set, Elems: []Value{bulk("m")}}},
		{"Push", func(w *Writer) { w.Push(1); w.BulkString("message") },
			Value{Kind: Array, Elems: []Value{bulk("message")}},
			Value{Kind: Push, Elems: []Value{bulk("message")}}},
		{"Double", func(w *Writer) { w.Double(1.5) }, bulk("1.5"), Value{Kind: Double, Str: []byte("1.5"), Float: 1.5}},
		{"DoubleInf", func(w *Writer) { w.Double(math.Inf(-1)) }, bulk("-inf"), Value{Kind: Double, Str: []byte("-inf"), Float: math.Inf(-1)}},
		{"Bool", func(w *Writer) { w.Bool(true) }, integer(1), Value{Kind: Boolean, Bool: true}},
		{"Verbatim", func(w *Writer) { w.Verbatim("txt", "a\nb") }, bulk("a\nb"), Value{Kind: Verbatim, Str: []byte("a\nb")}},
	} {
		for _, proto := range []int{2, 3} {
			w := NewWriter()
			w.SetProto(proto)
			tc.write(w)
			w.Simple("END") // the reader must stop exactly at the end of the reply
			want := tc.resp2
			if proto == 3 {
				want = tc.resp3
			}
			rr := NewReplyReader(bytes.NewReader(w.Bytes()))
			got, err := rr.Read()
			if err != nil {
				t.Errorf("%s RESP%d: %v", tc.name, proto, err)
				continue
			}
			if !equalValues(got, want) {
				t.Errorf("%s RESP%d: got %v, want %v", tc.name, proto, got, want)
			}
			if end, err := rr.Read(); err != nil || string(end.Str) != "END" {
				t.Errorf("%s RESP%d: after the reply: %v, %v", tc.name, proto, end, err)
			}
		}
	}
}

// equalValues compares Values field by field, treating NaNs as equal and nil and empty
// slices alike.
func equalValues(a, b Value) bool {
	if a.Kind != b.Kind || !bytes.Equal(a.Str, b.Str) || a.Int != b.Int || a.Bool != b.Bool {
		return false
	}
	if a.Float != b.Float && !(math.IsNaN(a.Float) && math.IsNaN(b.Float)) {
		return false
	}
	if len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := range a.Elems {
		if !equalValues(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	return true
}

func TestWriterTruncate(t *testing.T) {
	w := NewWriter()
	w.Simple("OK")
	mark := w.Len()
	w.BulkString("discarded")
	w.Truncate(mark)
	w.Int(1)
	if got := string(w.Bytes()); got != "+OK\r\n:1\r\n" {
		t.Fatalf("got %q", got)
	}
	w.Truncate(100) // past the end: no change
	w.Truncate(-1)
	if w.Len() != len("+OK\r\n:1\r\n") {
		t.Fatalf("Len() = %d", w.Len())
	}
}

func TestWriterSteadyStateAllocations(t *testing.T) {
	w := NewWriter()
	w.SetProto(3)
	value := []byte("value")
	write := func() {
		w.Reset()
		w.Simple("OK")
		w.Error("ERR x")
		w.Int(7)
		w.Int(-123456)
		w.Bulk(value)
		w.BulkString("s")
		w.Null()
		w.NullArray()
		w.Array(2)
		w.Map(1)
		w.Set(1)
		w.Push(1)
		w.Double(2.5)
		w.Bool(true)
		w.Verbatim("txt", "v")
	}
	write()
	if allocs := testing.AllocsPerRun(100, write); allocs != 0 {
		t.Fatalf("%v allocations per batch of replies", allocs)
	}
}
