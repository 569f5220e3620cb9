package main

import (
	"errors"
	"strings"
	"testing"
)

func TestReadReply(t *testing.T) {
	in := "+OK\r\n-ERR unknown command 'X'\r\n:42\r\n$5\r\nhello\r\n$-1\r\n*2\r\n$1\r\na\r\n*1\r\n:1\r\n*-1\r\n"
	r := newRespReader(strings.NewReader(in))
	want := []string{"OK", "-ERR unknown command 'X'", "42", "hello", "(nil)", "[a [1]]", "(nil)"}
	for _, w := range want {
		p, err := r.readReply()
		if err != nil {
			t.Fatal(err)
		}
		if p.String() != w {
			t.Errorf("got %s, want %s", p, w)
		}
	}
	p, _ := newRespReader(strings.NewReader("-ERR unknown command 'LAVIK.HREPLACE'\r\n")).readReply()
	if !p.isError() || classifyErrorReply(p.str) != errUnsupported || classifyErrorReply("WRONGTYPE x") != errReply {
		t.Error("error classification")
	}
}

func TestReadReplyRejectsGarbage(t *testing.T) {
	for _, in := range []string{"?x\r\n", "$5\r\nhelloXX", ":x\r\n", "+OK\n", "$-7\r\n"} {
		p, err := newRespReader(strings.NewReader(in)).readReply()
		if in == "$-7\r\n" && err == nil && p.null {
			continue // any negative length is nil, as Redis clients read it
		}
		if !errors.Is(err, errProtocol) {
			t.Errorf("%q: got %v, %v; want a protocol error", in, p, err)
		}
	}
}

func TestAppendCommand(t *testing.T) {
	got := string(appendCommand(nil, "SET", "k", ""))
	if got != "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n" {
		t.Errorf("%q", got)
	}
	ks := testKeyspace(10, ValueSpec{40, 40})
	set := ks.appendSet(nil, 3, 1)
	p, err := newRespReader(strings.NewReader(string(set))).readReply()
	if err != nil || len(p.elems) != 3 || p.elems[1].str != "key:000000000003" || len(p.elems[2].str) != 40 {
		t.Errorf("SET encodes as %q (%v)", set, err)
	}
}
