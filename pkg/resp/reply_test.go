package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReplyReader(t *testing.T) {
	bulk := func(s string) Value { return Value{Kind: BulkString, Str: []byte(s)} }
	for _, tc := range []struct {
		in   string
		want Value
	}{
		{"+OK\r\n", Value{Kind: SimpleString, Str: []byte("OK")}},
		{"-ERR unknown command\r\n", Value{Kind: Error, Str: []byte("ERR unknown command")}},
		{":0\r\n", Value{Kind: Integer}},
		{":-9223372036854775808\r\n", Value{Kind: Integer, Int: math.MinInt64}},
		{":+7\r\n", Value{Kind: Integer, Int: 7}},
		{"$5\r\nhello\r\n", bulk("hello")},
		{"$0\r\n\r\n", bulk("")},
		{"$4\r\na\r\nb\r\n", bulk("a\r\nb")},
		{"$-1\r\n", Value{Kind: Null}},
		{"*-1\r\n", Value{Kind: Null}},
		{"_\r\n", Value{Kind: Null}},
		{"*0\r\n", Value{Kind: Array}},
		{"*2\r\n$1\r\na\r\n*1\r\n:1\r\n", Value{Kind: Array, Elems: []Value{bulk("a"), {Kind: Array, Elems: []Value{{Kind: Integer, Int: 1}}}}}},
		{"%1\r\n+k\r\n:1\r\n", Value{Kind: Map, Elems: []Value{{Kind: SimpleString, Str: []byte("k")}, {Kind: Integer, Int: 1}}}},
		{"~2\r\n$1\r\na\r\n$1\r\nb\r\n", Value{Kind: Set, Elems: []Value{bulk("a"), bulk("b")}}},
		{">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n", Value{Kind: Push, Elems: []Value{bulk("message"), bulk("x")}}},
		{",1.5\r\n", Value{Kind: Double, Str: []byte("1.5"), Float: 1.5}},
		{",inf\r\n", Value{Kind: Double, Str: []byte("inf"), Float: math.Inf(1)}},
		{",-inf\r\n", Value{Kind: Double, Str: []byte("-inf"), Float: math.Inf(-1)}},
		{",nan\r\n", Value{Kind: Double, Str: []byte("nan"), Float: math.NaN()}},
		{",1e+300\r\n", Value{Kind: Double, Str: []byte("1e+300"), Float: 1e300}},
		{"#t\r\n", Value{Kind: Boolean, Bool: true}},
		{"#f\r\n", Value{Kind: Boolean}},
		{"=9\r\ntxt:hello\r\n", Value{Kind: Verbatim, Str: []byte("hello")}},
		{"=4\r\nmkd:\r\n", Value{Kind: Verbatim, Str: []byte("")}},
		{"(3492890328409238509324850943850943825024385\r\n", Value{Kind: BigNumber, Str: []byte("3492890328409238509324850943850943825024385")}},
		{"(-1\r\n", Value{Kind: BigNumber, Str: []byte("-1")}},
		{"!21\r\nSYNTAX invalid syntax\r\n", Value{Kind: Error, Str: []byte("SYNTAX invalid syntax")}},
		// Attributes are dropped, wherever they appear.
		{"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.1923\r\n*2\r\n:2039123\r\n:9543892\r\n",
			Value{Kind: Array, Elems: []Value{{Kind: Integer, Int: 2039123}, {Kind: Integer, Int: 9543892}}}},
		{"*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", Value{Kind: Array, Elems: []Value{{Kind: Integer, Int: 1}}}},
		{"|0\r\n|0\r\n+OK\r\n", Value{Kind: SimpleString, Str: []byte("OK")}},
	} {
		for name, rd := range map[string]io.Reader{
			"whole":   strings.NewReader(tc.in),
			"onebyte": iotest.OneByteReader(strings.NewReader(tc.in)),
		} {
			rr := NewReplyReader(rd)
			got, err := rr.Read()
			if err != nil {
				t.Errorf("%q %s: %v", tc.in, name, err)
				continue
			}
			if !equalValues(got, tc.want) {
				t.Errorf("%q %s: got %v, want %v", tc.in, name, got, tc.want)
			}
			if _, err := rr.Read(); err != io.EOF {
				t.Errorf("%q %s: after the reply: %v, want EOF", tc.in, name, err)
			}
			kind, err := NewReplyReader(strings.NewReader(tc.in)).Skip()
			if err != nil || kind != tc.want.Kind {
				t.Errorf("%q: Skip() = %v, %v; want %v", tc.in, kind, err, tc.want.Kind)
			}
		}
	}
}

func TestReplyReaderMalformed(t *testing.T) {
	for _, in := range []string{
		"\r\n",
		"+OK\n",
		"?x\r\n",
		":abc\r\n",
		":\r\n",
		":9223372036854775808\r\n",
		"$-2\r\n",
		"$x\r\n",
		"$3\r\nabcde\r\n",
		"$600000000\r\n",
		"*-2\r\n",
		"%-1\r\n",
		"~x\r\n",
		",abc\r\n",
		"#x\r\n",
		"#\r\n",
		"_x\r\n",
		"(12a\r\n",
		"(\r\n",
		"=3\r\ntxt\r\n",
		"=5\r\ntxtxx\r\n",
		"!-1\r\n",
		"$?\r\n",
		"*?\r\n",
		strings.Repeat("*1\r\n", maxReplyDepth+2) + ":1\r\n",
	} {
		_, err := NewReplyReader(strings.NewReader(in)).Read()
		if !errors.Is(err, ErrMalformedReply) {
			t.Errorf("Read(%.40q) = %v, want ErrMalformedReply", in, err)
		}
		_, err = NewReplyReader(strings.NewReader(in)).Skip()
		if !errors.Is(err, ErrMalformedReply) {
			t.Errorf("Skip(%.40q) = %v, want ErrMalformedReply", in, err)
		}
	}
}

func TestReplyReaderTruncated(t *testing.T) {
	for _, in := range []string{"+OK", "+OK\r", "$5\r\nhel", "$5\r\nhello", "*2\r\n:1\r\n", "|1\r\n+a\r\n+b\r\n", "%1\r\n+k\r\n"} {
		for _, skip := range []bool{false, true} {
			rr := NewReplyReader(strings.NewReader(in))
			var err error
			if skip {
				_, err = rr.Skip()
			} else {
				_, err = rr.Read()
			}
			if err != io.ErrUnexpectedEOF {
				t.Errorf("%q (skip %t): got %v, want io.ErrUnexpectedEOF", in, skip, err)
			}
		}
	}
	if _, err := NewReplyReader(strings.NewReader("")).Read(); err != io.EOF {
		t.Errorf("empty stream: got %v, want io.EOF", err)
	}
}

func TestReplyReaderCopies(t *testing.T) {
	rr := NewReplyReader(strings.NewReader("$5\r\nfirst\r\n+OK\r\n$6\r\nsecond\r\n"))
	var vals []Value
	for {
		v, err := rr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	if string(vals[0].Str) != "first" || string(vals[1].Str) != "OK" || string(vals[2].Str) != "second" {
		t.Fatalf("values changed by later reads: %v", vals)
	}
}

func TestReplyReaderLongLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than the read buffer
	big := strings.Repeat("y", 3<<20)    // longer than preallocBulk
	in := "+" + long + "\r\n$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n-" + long + "\r\n"
	rr := NewReplyReader(strings.NewReader(in))
	for _, want := range []Value{
		{Kind: SimpleString, Str: []byte(long)},
		{Kind: BulkString, Str: []byte(big)},
		{Kind: Error, Str: []byte(long)},
	} {
		got, err := rr.Read()
		if err != nil {
			t.Fatal(err)
		}
		if !equalValues(got, want) {
			t.Fatalf("got %v of %d bytes, want %v of %d", got.Kind, len(got.Str), want.Kind, len(want.Str))
		}
	}
}

func TestSkipDoesNotAllocate(t *testing.T) {
	in := []byte("+OK\r\n$5\r\nhello\r\n*2\r\n:1\r\n$1\r\nx\r\n%1\r\n+k\r\n:2\r\n#t\r\n=7\r\ntxt:abc\r\n")
	br := bytes.NewReader(in)
	rr := NewReplyReader(br)
	allocs := testing.AllocsPerRun(100, func() {
		br.Reset(in)
		rr.br.Reset(br)
		for range 6 {
			if _, err := rr.Skip(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("Skip: %v allocations per run", allocs)
	}
}

func TestAppendCommand(t *testing.T) {
	got := string(AppendCommand([]byte("x"), []byte("SET"), []byte("k"), nil, []byte("a\r\nb")))
	want := "x*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n$4\r\na\r\nb\r\n"
	if got != want {
		t.Errorf("AppendCommand: got %q, want %q", got, want)
	}
	if got := string(AppendCommandStrings(nil, "GET", "k")); got != "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" {
		t.Errorf("AppendCommandStrings: got %q", got)
	}
	if got := string(AppendCommandStrings(nil)); got != "*0\r\n" {
		t.Errorf("AppendCommandStrings(): got %q", got)
	}
}

func TestKindString(t *testing.T) {
	if Map.String() != "Map" || Attribute.String() != "Attribute" || Kind(0).String() != "Kind(0)" || Kind(200).String() != "Kind(200)" {
		t.Fatal("Kind.String")
	}
	v := Value{Kind: Array, Elems: []Value{{Kind: BulkString, Str: []byte("a")}, {Kind: Integer, Int: 1}, {Kind: Null}}}
	if got := v.String(); got != `Array[BulkString("a") Integer(1) Null]` {
		t.Fatalf("Value.String() = %s", got)
	}
}
