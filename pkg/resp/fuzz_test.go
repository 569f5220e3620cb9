package resp

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

var readerSeeds = []string{
	"",
	"*1\r\n$4\r\nPING\r\n",
	"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
	"*2\r\n$4\r\nECHO\r\n$7\r\na\r\nb\x00c\n\r\n",
	"*0\r\n*-1\r\n*1\r\n$0\r\n\r\n",
	"*2\rx$4\ryECHO..$2\r\nhi\r\n",
	"PING\r\nset k v\nGET   k  \r\n\r\n\n",
	"ECHO \"\\x41\\x4a\\n\\r\\t\\b\\a\\\\\\\"\\z\" 'it\\'s' a\"b c\" \"\" ''\r\n",
	"ECHO \"a\"\tb \"c\"\vd e\vf\r\n",
	"SET \"a\r\n",
	"ECHO \"a\"b\r\n",
	"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
	"*1\r\n$-1\r\n",
	"*1\r\n$01\r\na\r\n",
	"*20000000\r\n",
	"*1\r\n\r\n",
	"*2\r\n$3\r\nGET\r\n$1\r\nk\r",
	"PING\r\n*1\r\n$4\r\nPING\r\nECHO x\r\n*x\r\n",
	"*2\r\n$3\r\nGET\r\n$17\r\n0123456789abcdefg\r\n",
	"*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n",
}

// readAll returns copies of every command a Reader yields from rd and how reading ended.
func readAll(rd io.Reader, lim Limits, max int) ([]Command, string) {
	r := NewReader(rd, lim)
	var (
		all  []Command
		cmds []Command
		err  error
	)
	for err == nil {
		cmds, err = r.ReadCommands(cmds, max)
		for _, c := range cmds {
			cp := Command{Inline: c.Inline}
			for _, a := range c.Args {
				cp.Args = append(cp.Args, bytes.Clone(a))
			}
			all = append(all, cp)
		}
	}
	return all, err.Error()
}

// fillAll reads data the way an event loop does: Fill with chunks of random sizes (a read that
// returns what the socket had), Parse whatever is complete after each, until the data is gone.
// The end is the error Parse returned, or what ReadCommands would say at the end of the data.
func fillAll(data []byte, lim Limits, seed uint64) ([]Command, string) {
	r := NewReader(nil, lim)
	rng := rand.New(rand.NewPCG(seed, 9))
	var all, cmds []Command
	var err error
	for {
		cmds, err = r.Parse(cmds, 1+rng.IntN(4))
		for _, c := range cmds {
			cp := Command{Inline: c.Inline}
			for _, a := range c.Args {
				cp.Args = append(cp.Args, bytes.Clone(a))
			}
			all = append(all, cp)
		}
		if err != nil {
			return all, err.Error()
		}
		if len(cmds) > 0 {
			continue
		}
		if len(data) == 0 {
			if r.Buffered() > 0 {
				return all, io.ErrUnexpectedEOF.Error()
			}
			return all, io.EOF.Error()
		}
		if _, err := r.Fill(func(p []byte) (int, error) {
			n := min(len(p), len(data), 1+rng.IntN(64))
			copy(p, data[:n])
			data = data[n:]
			return n, nil
		}); err != nil {
			return all, err.Error()
		}
	}
}

func sameCommands(a, b []Command, compareInline bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if (compareInline && a[i].Inline != b[i].Inline) || len(a[i].Args) != len(b[i].Args) {
			return false
		}
		for j := range a[i].Args {
			if !bytes.Equal(a[i].Args[j], b[i].Args[j]) {
				return false
			}
		}
	}
	return true
}

func FuzzReader(f *testing.F) {
	for _, s := range readerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkReaderInput)
}

// checkReaderInput is FuzzReader's body.
func checkReaderInput(t *testing.T, data []byte) {
	{
		// Limits whose errors do not depend on how the input is split: every feed must agree.
		for _, lim := range []Limits{{}, {MaxBulkLen: 16, MaxMultibulkLen: 4}} {
			want, wantEnd := readAll(bytes.NewReader(data), lim, 0)
			total := 0
			for _, c := range want {
				if len(c.Args) == 0 {
					t.Fatalf("command without arguments")
				}
				for _, a := range c.Args {
					total += len(a)
					if !c.Inline && !bytes.Contains(data, a) {
						t.Fatalf("argument %q is not in the input", a)
					}
					if int64(len(a)) > lim.withDefaults().MaxBulkLen && !c.Inline {
						t.Fatalf("argument of %d bytes over MaxBulkLen", len(a))
					}
				}
			}
			if total > len(data) {
				t.Fatalf("%d argument bytes from %d input bytes", total, len(data))
			}
			feeds := []io.Reader{
				iotest.OneByteReader(bytes.NewReader(data)),
				&chunkReader{data: data, rng: rand.New(rand.NewPCG(uint64(len(data)), 3))},
			}
			for i, rd := range feeds {
				got, gotEnd := readAll(rd, lim, 1+i)
				if !sameCommands(got, want, true) || gotEnd != wantEnd {
					t.Fatalf("feed %d disagrees with whole input:\n%s %q\nvs\n%s %q", i, fmtCommands(got), gotEnd, fmtCommands(want), wantEnd)
				}
			}
			// Fill and Parse, as an event loop reads a non-blocking socket, agree too.
			if got, gotEnd := fillAll(data, lim, uint64(len(data))); !sameCommands(got, want, true) || gotEnd != wantEnd {
				t.Fatalf("Fill/Parse disagree with whole input:\n%s %q\nvs\n%s %q", fmtCommands(got), gotEnd, fmtCommands(want), wantEnd)
			}
			// Re-encoded as multibulk, the commands parse back to themselves.
			var enc []byte
			for _, c := range want {
				enc = AppendCommand(enc, c.Args...)
			}
			again, end := readAll(bytes.NewReader(enc), Limits{}, 0)
			if end != io.EOF.Error() || !sameCommands(again, want, false) {
				t.Fatalf("re-encoded commands read back as %s (%s), want %s", fmtCommands(again), end, fmtCommands(want))
			}
		}
		// Size-dependent limits: only invariants, since the outcome may depend on splitting.
		cmds, _ := readAll(bytes.NewReader(data), Limits{MaxInlineLen: 16, MaxQueryBuffer: 64}, 0)
		for _, c := range cmds {
			for _, a := range c.Args {
				if !c.Inline && !bytes.Contains(data, a) {
					t.Fatalf("argument %q is not in the input", a)
				}
			}
		}
	}
}

func fmtCommands(cmds []Command) string {
	var b bytes.Buffer
	for _, c := range cmds {
		fmt.Fprintf(&b, "%s; ", describeCommand(c))
	}
	return b.String()
}

// encodeValue encodes v in RESP3, the inverse of ReplyReader.Read up to representation
// (blob and simple errors, for example, read back alike).
func encodeValue(dst []byte, v Value) []byte {
	switch v.Kind {
	case SimpleString:
		dst = append(dst, '+')
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case Error:
		dst = appendPrefixed(dst, '!', int64(len(v.Str)))
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case Integer:
		return appendPrefixed(dst, ':', v.Int)
	case BulkString:
		dst = appendPrefixed(dst, '$', int64(len(v.Str)))
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case Verbatim:
		dst = appendPrefixed(dst, '=', int64(len(v.Str)+4))
		dst = append(dst, "txt:"...)
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case Null:
		return append(dst, "_\r\n"...)
	case Double:
		dst = append(dst, ',')
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case BigNumber:
		dst = append(dst, '(')
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case Boolean:
		if v.Bool {
			return append(dst, "#t\r\n"...)
		}
		return append(dst, "#f\r\n"...)
	case Array, Set, Push, Map:
		n := len(v.Elems)
		prefix := map[Kind]byte{Array: '*', Set: '~', Push: '>', Map: '%'}[v.Kind]
		if v.Kind == Map {
			n /= 2
		}
		dst = appendPrefixed(dst, prefix, int64(n))
		for _, e := range v.Elems {
			dst = encodeValue(dst, e)
		}
		return dst
	}
	panic("encodeValue: kind " + v.Kind.String())
}

var replySeeds = []string{
	"+OK\r\n",
	"-ERR unknown command\r\n",
	":-42\r\n",
	"$5\r\nhello\r\n$-1\r\n*-1\r\n",
	"*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
	"%1\r\n+k\r\n:1\r\n~1\r\n#t\r\n>2\r\n+message\r\n_\r\n",
	",1.5\r\n,inf\r\n,-inf\r\n,nan\r\n",
	"=9\r\ntxt:hello\r\n(12345678901234567890\r\n!3\r\nERR\r\n",
	"|1\r\n+a\r\n+b\r\n:1\r\n",
	"*1\r\n*1\r\n*1\r\n:1\r\n",
	"$500000000\r\nabc",
	"*100000000\r\n:1\r\n",
	"=7\r\n0000", // Read and Skip once disagreed on which error to report
}

func FuzzReplyReader(f *testing.F) {
	for _, s := range replySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rr := NewReplyReader(bytes.NewReader(data))
		sk := NewReplyReader(iotest.OneByteReader(bytes.NewReader(data)))
		for {
			v, err := rr.Read()
			kind, skErr := sk.Skip()
			if fmt.Sprint(err) != fmt.Sprint(skErr) || (err == nil && kind != v.Kind) {
				t.Fatalf("Read gave %v, %v; Skip gave %v, %v", v.Kind, err, kind, skErr)
			}
			if err != nil {
				return
			}
			enc := encodeValue(nil, v)
			back, err := NewReplyReader(bytes.NewReader(enc)).Read()
			if err != nil || !equalValues(back, v) {
				t.Fatalf("%v re-encoded as %q reads back as %v, %v", v, enc, back, err)
			}
		}
	})
}
