package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// readerCase is one case of testdata/reader.txt.
type readerCase struct {
	line  int // where the case starts in the file, for failure messages
	in    []byte
	lim   Limits
	wants []string
}

func loadReaderCases(t *testing.T) []readerCase {
	t.Helper()
	f, err := os.Open("testdata/reader.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		cases []readerCase
		cur   *readerCase
		after bool // past the ---- separator
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			continue
		case line == "":
			cur, after = nil, false
			continue
		case cur == nil:
			cases = append(cases, readerCase{line: n})
			cur = &cases[len(cases)-1]
		}
		switch {
		case after:
			cur.wants = append(cur.wants, line)
		case line == "----":
			after = true
		case strings.HasPrefix(line, "in "):
			s, err := strconv.Unquote(strings.TrimPrefix(line, "in "))
			if err != nil {
				t.Fatalf("reader.txt:%d: %v", n, err)
			}
			cur.in = append(cur.in, s...)
		case strings.HasPrefix(line, "limits "):
			for _, kv := range strings.Fields(strings.TrimPrefix(line, "limits ")) {
				k, v, _ := strings.Cut(kv, "=")
				x, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("reader.txt:%d: %v", n, err)
				}
				switch k {
				case "maxbulk":
					cur.lim.MaxBulkLen = x
				case "maxmultibulk":
					cur.lim.MaxMultibulkLen = x
				case "maxinline":
					cur.lim.MaxInlineLen = int(x)
				case "maxquery":
					cur.lim.MaxQueryBuffer = x
				default:
					t.Fatalf("reader.txt:%d: unknown limit %q", n, k)
				}
			}
		default:
			t.Fatalf("reader.txt:%d: cannot parse %q", n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// describe renders everything a Reader yields from rd, in the notation of reader.txt.
func describe(rd io.Reader, lim Limits, max int) []string {
	r := NewReader(rd, lim)
	var (
		out  []string
		cmds []Command
		err  error
	)
	for {
		cmds, err = r.ReadCommands(cmds, max)
		if max > 0 && len(cmds) > max {
			out = append(out, fmt.Sprintf("BUG: %d commands with max %d", len(cmds), max))
		}
		if len(cmds) > 0 && err != nil {
			out = append(out, fmt.Sprintf("BUG: commands returned with error %v", err))
		}
		for _, c := range cmds {
			out = append(out, describeCommand(c))
		}
		if err != nil {
			break
		}
	}
	var pe *ProtocolError
	switch {
	case err == io.EOF:
		out = append(out, "eof")
	case err == io.ErrUnexpectedEOF:
		out = append(out, "unexpected eof")
	case err == ErrQueryBufferLimit:
		out = append(out, "query buffer limit")
	case errors.As(err, &pe):
		out = append(out, "error "+strconv.Quote(pe.Msg))
	default:
		out = append(out, "unexpected error: "+err.Error())
	}
	return out
}

func describeCommand(c Command) string {
	var b strings.Builder
	if c.Inline {
		b.WriteString("inline")
	} else {
		b.WriteString("multibulk")
	}
	for _, a := range c.Args {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(string(a)))
	}
	return b.String()
}

// chunkReader returns its data in pieces of random size.
type chunkReader struct {
	data []byte
	rng  *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rng.IntN(17))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestReaderCases(t *testing.T) {
	for _, tc := range loadReaderCases(t) {
		t.Run(fmt.Sprintf("line%d", tc.line), func(t *testing.T) {
			want := strings.Join(tc.wants, "\n")
			feeds := map[string]func() io.Reader{
				"whole":    func() io.Reader { return bytes.NewReader(tc.in) },
				"onebyte":  func() io.Reader { return iotest.OneByteReader(bytes.NewReader(tc.in)) },
				"dataerr":  func() io.Reader { return iotest.DataErrReader(bytes.NewReader(tc.in)) },
				"halfread": func() io.Reader { return iotest.HalfReader(bytes.NewReader(tc.in)) },
			}
			for seed := range uint64(4) {
				feeds[fmt.Sprintf("chunks%d", seed)] = func() io.Reader {
					return &chunkReader{data: tc.in, rng: rand.New(rand.NewPCG(seed, 1))}
				}
			}
			for name, feed := range feeds {
				for _, max := range []int{0, 1} {
					got := strings.Join(describe(feed(), tc.lim, max), "\n")
					if got != want {
						t.Errorf("reader.txt:%d fed %s, max %d:\ngot:\n%s\nwant:\n%s", tc.line, name, max, got, want)
					}
				}
			}
		})
	}
}

// scriptReader returns its chunks one per Read, and fails the test if read past them.
type scriptReader struct {
	t      *testing.T
	chunks []string
	reads  int
}

func (s *scriptReader) Read(p []byte) (int, error) {
	if s.reads >= len(s.chunks) {
		s.t.Fatalf("unexpected Read number %d", s.reads+1)
	}
	c := s.chunks[s.reads]
	s.reads++
	if len(c) > len(p) {
		s.t.Fatalf("chunk of %d bytes does not fit a %d-byte read", len(c), len(p))
	}
	return copy(p, c), nil
}

func TestReadCommandsMaxAndNoExtraReads(t *testing.T) {
	var pipeline []byte
	for i := range 5 {
		pipeline = AppendCommandStrings(pipeline, "GET", strconv.Itoa(i))
	}
	sr := &scriptReader{t: t, chunks: []string{string(pipeline) + "*1\r\n$4\r\nPI", "NG\r\n"}}
	r := NewReader(sr, Limits{})
	var cmds []Command
	var got []string
	for _, wantN := range []int{2, 2, 1, 1} {
		var err error
		cmds, err = r.ReadCommands(cmds, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(cmds) != wantN {
			t.Fatalf("got %d commands, want %d", len(cmds), wantN)
		}
		for _, c := range cmds {
			got = append(got, describeCommand(c))
		}
		// The fifth command completes the first chunk; the sixth needs the second Read.
		if len(got) <= 5 && sr.reads != 1 {
			t.Fatalf("after %d commands: %d reads, want 1", len(got), sr.reads)
		}
	}
	want := `multibulk "GET" "0"|multibulk "GET" "1"|multibulk "GET" "2"|multibulk "GET" "3"|multibulk "GET" "4"|multibulk "PING"`
	if g := strings.Join(got, "|"); g != want {
		t.Fatalf("got %s\nwant %s", g, want)
	}
	if r.Buffered() != 0 {
		t.Fatalf("Buffered() = %d after draining", r.Buffered())
	}
}

func TestBuffered(t *testing.T) {
	in := "PING\r\nPING\r\nPI"
	r := NewReader(strings.NewReader(in), Limits{})
	cmds, err := r.ReadCommands(nil, 1)
	if err != nil || len(cmds) != 1 {
		t.Fatalf("ReadCommands: %d commands, %v", len(cmds), err)
	}
	if got, want := r.Buffered(), len(in)-len("PING\r\n"); got != want {
		t.Fatalf("Buffered() = %d, want %d", got, want)
	}
}

func TestArgsDoNotOverlap(t *testing.T) {
	for _, in := range []string{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", "SET k v\r\n"} {
		r := NewReader(strings.NewReader(in), Limits{})
		cmds, err := r.ReadCommands(nil, 0)
		if err != nil || len(cmds) != 1 {
			t.Fatalf("%q: %d commands, %v", in, len(cmds), err)
		}
		args := cmds[0].Args
		if cap(cmds[0].Args) != len(args) {
			t.Errorf("%q: Args has spare capacity %d", in, cap(args)-len(args))
		}
		_ = append(args[1], "XYZ"...)
		if string(args[2]) != "v" {
			t.Errorf("%q: appending to Args[1] changed Args[2] to %q", in, args[2])
		}
	}
}

func TestSetLimitsAtRunTime(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewReader(pr, Limits{})
	go func() {
		pw.Write(AppendCommandStrings(nil, "SET", "k", "0123456789"))
		pw.Write(AppendCommandStrings(nil, "SET", "k", "0123456789"))
		pw.Close()
	}()
	if _, err := r.ReadCommands(nil, 1); err != nil {
		t.Fatal(err)
	}
	r.SetLimits(Limits{MaxBulkLen: 9})
	var cmds []Command
	var err error
	for err == nil {
		cmds, err = r.ReadCommands(cmds, 0)
		if len(cmds) > 0 {
			t.Fatalf("second SET accepted over the new limit")
		}
	}
	if err.Error() != "Protocol error: invalid bulk length" {
		t.Fatalf("got %v", err)
	}
}

// TestSizeDependentErrors covers the errors whose text, as in Redis, depends on how much was
// buffered when a line was examined.
func TestSizeDependentErrors(t *testing.T) {
	lim := Limits{MaxInlineLen: 8}
	for _, tc := range []struct {
		in          string
		whole, byte string
	}{
		// A length line longer than MaxInlineLen: whole, it is seen complete and is not a
		// number; byte by byte, it is refused before its CR arrives.
		{"*1234567890\r\n", "Protocol error: invalid multibulk length", "Protocol error: too big mbulk count string"},
		{"*1\r\n$1234567890\r\n", "Protocol error: invalid bulk length", "Protocol error: too big bulk count string"},
		{"$1234567890\r\n", "<nil>", "Protocol error: too big inline request"},
	} {
		run := func(rd io.Reader) string {
			r := NewReader(rd, lim)
			var err error
			for err == nil {
				_, err = r.ReadCommands(nil, 0)
			}
			if err == io.EOF {
				return "<nil>"
			}
			return err.Error()
		}
		if got := run(strings.NewReader(tc.in)); got != tc.whole {
			t.Errorf("%q whole: got %q, want %q", tc.in, got, tc.whole)
		}
		if got := run(iotest.OneByteReader(strings.NewReader(tc.in))); got != tc.byte {
			t.Errorf("%q byte by byte: got %q, want %q", tc.in, got, tc.byte)
		}
	}
}

func TestErrorIsSticky(t *testing.T) {
	r := NewReader(strings.NewReader("*x\r\n*1\r\n$4\r\nPING\r\n"), Limits{})
	for range 3 {
		cmds, err := r.ReadCommands(nil, 0)
		if len(cmds) != 0 || err == nil || err.Error() != "Protocol error: invalid multibulk length" {
			t.Fatalf("got %d commands, %v", len(cmds), err)
		}
	}
}

func TestReadErrorAfterCommands(t *testing.T) {
	r := NewReader(iotest.TimeoutReader(strings.NewReader("PING\r\nPING\r\n")), Limits{})
	cmds, err := r.ReadCommands(nil, 0)
	if err != nil || len(cmds) != 2 {
		t.Fatalf("got %d commands, %v", len(cmds), err)
	}
	if _, err := r.ReadCommands(nil, 0); err != iotest.ErrTimeout {
		t.Fatalf("got %v, want %v", err, iotest.ErrTimeout)
	}
}

// zeroReader returns (0, nil) forever.
type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestNoProgress(t *testing.T) {
	r := NewReader(zeroReader{}, Limits{})
	if _, err := r.ReadCommands(nil, 0); err != errNoProgress {
		t.Fatalf("got %v", err)
	}
}

func TestLargeArgument(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16) // 3 MiB
	var in []byte
	in = AppendCommandStrings(in, "PING")
	in = AppendCommand(in, []byte("SET"), []byte("k"), big, []byte("EX"), []byte("10"))
	in = AppendCommandStrings(in, "GET", "k")
	for name, rd := range map[string]io.Reader{
		"whole":  bytes.NewReader(in),
		"chunks": &chunkReader{data: in, rng: rand.New(rand.NewPCG(1, 2))},
		"half":   iotest.HalfReader(bytes.NewReader(in)),
	} {
		r := NewReader(rd, Limits{})
		var got []string
		var cmds []Command
		var err error
		for err == nil {
			cmds, err = r.ReadCommands(cmds, 0)
			for _, c := range cmds {
				if len(c.Args) == 5 {
					if !bytes.Equal(c.Args[2], big) {
						t.Fatalf("%s: big argument corrupted", name)
					}
					got = append(got, "SET big")
					if len(r.buf) > 2*len(in) {
						t.Errorf("%s: buffer of %d bytes for a %d-byte request", name, len(r.buf), len(in))
					}
					continue
				}
				got = append(got, describeCommand(c))
			}
		}
		if err != io.EOF {
			t.Fatalf("%s: %v", name, err)
		}
		if g := strings.Join(got, "|"); g != `multibulk "PING"|SET big|multibulk "GET" "k"` {
			t.Fatalf("%s: got %s", name, g)
		}
		if len(r.buf) > maxIdleBufSize {
			t.Errorf("%s: buffer still %d bytes after the large request was consumed", name, len(r.buf))
		}
	}
}

func TestClaimedLengthDoesNotPreallocate(t *testing.T) {
	// A client announces a 500 MB argument and sends 100 bytes of it.
	in := "*2\r\n$3\r\nSET\r\n$500000000\r\n" + strings.Repeat("x", 100)
	r := NewReader(strings.NewReader(in), Limits{})
	if _, err := r.ReadCommands(nil, 0); err != io.ErrUnexpectedEOF {
		t.Fatalf("got %v", err)
	}
	if len(r.buf) > 2*smallBufSize {
		t.Fatalf("buffer grew to %d bytes with %d bytes received", len(r.buf), len(in))
	}
}

func TestQueryBufferLimitBoundsAllocation(t *testing.T) {
	const limit = 100 << 10
	in := AppendCommand(nil, []byte("SET"), []byte("k"), make([]byte, 1<<20))
	r := NewReader(bytes.NewReader(in), Limits{MaxQueryBuffer: limit})
	var err error
	for err == nil {
		_, err = r.ReadCommands(nil, 0)
	}
	if err != ErrQueryBufferLimit {
		t.Fatalf("got %v", err)
	}
	if len(r.buf) > limit+minReadSize+1 {
		t.Fatalf("buffer of %d bytes with a limit of %d", len(r.buf), limit)
	}
}

func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"-1", -1, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false},
		{"", 0, false},
		{"-", 0, false},
		{"-0", 0, false},
		{"00", 0, false},
		{"01", 0, false},
		{"+1", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1a", 0, false},
		{"000000000000000000001", 0, false},
	} {
		n, ok := parseInt([]byte(tc.in))
		if n != tc.n || ok != tc.ok {
			t.Errorf("parseInt(%q) = %d, %t; want %d, %t", tc.in, n, ok, tc.n, tc.ok)
		}
	}
}

func TestSteadyStateAllocations(t *testing.T) {
	var pipeline []byte
	for i := range 8 {
		pipeline = AppendCommandStrings(pipeline, "SET", "key:"+strconv.Itoa(i), "value")
		pipeline = append(pipeline, "GET \"key\"\r\n"...)
	}
	r := NewReader(&loopReader{data: pipeline}, Limits{})
	cmds := make([]Command, 0, 16)
	read := func() {
		r.SetLimits(Limits{MaxBulkLen: 1 << 20})
		for n := 0; n < 16; {
			var err error
			if cmds, err = r.ReadCommands(cmds, 16-n); err != nil {
				t.Fatal(err)
			}
			n += len(cmds)
		}
	}
	read() // warm up: first buffer, argument pool
	if allocs := testing.AllocsPerRun(100, read); allocs != 0 {
		t.Fatalf("%v allocations per pipeline", allocs)
	}
}
