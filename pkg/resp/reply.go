package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Kind is the type of a reply.
type Kind byte

// Reply kinds. RESP2 replies use the first five and Null; the rest are RESP3.
const (
	SimpleString Kind = iota + 1 // +
	Error                        // - and the RESP3 blob error !
	Integer                      // :
	BulkString                   // $
	Array                        // *
	Null                         // RESP3 _, and RESP2's $-1 and *-1
	Map                          // %
	Set                          // ~
	Double                       // ,
	Boolean                      // #
	Verbatim                     // =
	BigNumber                    // (
	Push                         // >
	// Attribute (|) is a map of metadata sent ahead of a reply. The ReplyReader reads and
	// discards attributes, so no Value it returns has this kind; the constant exists for
	// callers that build Values.
	Attribute
)

var kindNames = [...]string{
	SimpleString: "SimpleString",
	Error:        "Error",
	Integer:      "Integer",
	BulkString:   "BulkString",
	Array:        "Array",
	Null:         "Null",
	Map:          "Map",
	Set:          "Set",
	Double:       "Double",
	Boolean:      "Boolean",
	Verbatim:     "Verbatim",
	BigNumber:    "BigNumber",
	Push:         "Push",
	Attribute:    "Attribute",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one reply. Which fields are set depends on Kind.
type Value struct {
	Kind Kind
	// Str is the text of a SimpleString, Error, BulkString, BigNumber or Double, and the
	// text of a Verbatim string without its "txt:" format prefix.
	Str   []byte
	Int   int64   // Integer
	Float float64 // Double
	Bool  bool    // Boolean
	// Elems holds the elements of an Array, Set or Push, and the keys and values of a Map,
	// alternating: key, value, key, value.
	Elems []Value
}

// String renders v for test failures and debugging, e.g. Array[BulkString("a") Integer(1)].
func (v Value) String() string {
	var b strings.Builder
	v.format(&b)
	return b.String()
}

func (v Value) format(b *strings.Builder) {
	b.WriteString(v.Kind.String())
	switch v.Kind {
	case Null:
	case Integer:
		fmt.Fprintf(b, "(%d)", v.Int)
	case Boolean:
		fmt.Fprintf(b, "(%t)", v.Bool)
	case Array, Set, Push, Map, Attribute:
		b.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteByte(' ')
			}
			e.format(b)
		}
		b.WriteByte(']')
	default:
		fmt.Fprintf(b, "(%q)", v.Str)
	}
}

// ErrMalformedReply is wrapped by every error the ReplyReader returns for bytes that are not
// a valid reply.
var ErrMalformedReply = errors.New("resp: malformed reply")

// Bounds on what the ReplyReader accepts. They protect the client side (the benchmark tool,
// a replica) from a misbehaving peer; a real Redis-compatible server stays far below them.
const (
	maxReplyBulk  = 512 << 20 // one string; Redis's proto-max-bulk-len
	maxReplyLine  = 512 << 20 // one simple string or error line
	maxReplyElems = 1 << 31   // elements in one aggregate
	maxReplyDepth = 1000      // aggregates nested in one another
	// preallocElems caps the elements reserved from an aggregate's announced count, so a
	// header claiming a billion elements costs nothing until they arrive.
	preallocElems = 1024
	// preallocBulk is the most reserved from a bulk string's announced length; longer ones
	// grow as the bytes arrive.
	preallocBulk = 1 << 20
	// maxKeptLine is the largest scratch line buffer kept between reads.
	maxKeptLine = 64 << 10
)

// ReplyReader reads replies, RESP2 or RESP3, from a server. It is not safe for concurrent
// use. RESP3 streamed strings and aggregates ("$?", "*?"), which Redis never sends, are
// reported as malformed.
type ReplyReader struct {
	br   *bufio.Reader
	line []byte // scratch for lines longer than br's buffer
}

// NewReplyReader returns a ReplyReader reading from r through its own buffer.
func NewReplyReader(r io.Reader) *ReplyReader {
	return &ReplyReader{br: bufio.NewReaderSize(r, 16<<10)}
}

// Read reads one complete reply. Every byte slice in the returned Value is a copy, so the
// Value stays valid after later reads. Attributes are read and discarded. A reply that is
// not valid RESP yields an error wrapping ErrMalformedReply; the stream cannot be resumed
// after one.
func (r *ReplyReader) Read() (Value, error) {
	return r.read(0, true)
}

// Skip reads one complete reply and discards it, returning only its kind; it allocates
// nothing for replies that fit the read buffer, which suits a load generator that only
// counts replies and errors.
func (r *ReplyReader) Skip() (Kind, error) {
	v, err := r.read(0, false)
	return v.Kind, err
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformedReply}, args...)...)
}

// readLine returns the next line without its CRLF. The slice is valid until the next read.
func (r *ReplyReader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.line = append(r.line[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(r.line) > maxReplyLine {
				return nil, malformed("line longer than %d bytes", maxReplyLine)
			}
			line, err = r.br.ReadSlice('\n')
			r.line = append(r.line, line...)
		}
		line = r.line
		if cap(r.line) > maxKeptLine {
			r.line = nil
		}
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, malformed("line %q is not a type byte and CRLF-terminated text", line)
	}
	return line[:len(line)-2], nil
}

// read reads one reply. When keep is false it builds nothing and returns only the kind.
func (r *ReplyReader) read(depth int, keep bool) (Value, error) {
	if depth > maxReplyDepth {
		return Value{}, malformed("aggregates nested deeper than %d", maxReplyDepth)
	}
	for sawAttribute := false; ; sawAttribute = true {
		line, err := r.readLine()
		if err != nil {
			if depth > 0 || sawAttribute {
				err = noEOF(err)
			}
			return Value{}, err
		}
		typ, body := line[0], line[1:]
		switch typ {
		case '+':
			return Value{Kind: SimpleString, Str: clone(body, keep)}, nil
		case '-':
			return Value{Kind: Error, Str: clone(body, keep)}, nil
		case ':':
			n, ok := parseInteger(body)
			if !ok {
				return Value{}, malformed("bad integer %q", body)
			}
			return Value{Kind: Integer, Int: n}, nil
		case '$', '!', '=':
			return r.readBlob(typ, body, keep)
		case '*', '~', '>', '%', '|':
			n, ok := parseInteger(body)
			if typ == '*' && ok && n == -1 {
				return Value{Kind: Null}, nil
			}
			if !ok || n < 0 || n > maxReplyElems {
				return Value{}, malformed("bad aggregate length %q", body)
			}
			if typ == '%' || typ == '|' {
				n *= 2
			}
			if typ == '|' {
				// An attribute precedes the reply it describes; drop it and read on.
				for range n {
					if _, err := r.read(depth+1, false); err != nil {
						return Value{}, noEOF(err)
					}
				}
				continue
			}
			return r.readAggregate(typ, n, depth, keep)
		case '_':
			if len(body) != 0 {
				return Value{}, malformed("null with text %q", body)
			}
			return Value{Kind: Null}, nil
		case ',':
			f, err := strconv.ParseFloat(string(body), 64)
			if err != nil {
				return Value{}, malformed("bad double %q", body)
			}
			return Value{Kind: Double, Float: f, Str: clone(body, keep)}, nil
		case '#':
			if len(body) != 1 || (body[0] != 't' && body[0] != 'f') {
				return Value{}, malformed("bad boolean %q", body)
			}
			return Value{Kind: Boolean, Bool: body[0] == 't'}, nil
		case '(':
			if !isBigNumber(body) {
				return Value{}, malformed("bad big number %q", body)
			}
			return Value{Kind: BigNumber, Str: clone(body, keep)}, nil
		default:
			return Value{}, malformed("unknown reply type %q", typ)
		}
	}
}

func (r *ReplyReader) readAggregate(typ byte, n int64, depth int, keep bool) (Value, error) {
	var v Value
	switch typ {
	case '*':
		v.Kind = Array
	case '~':
		v.Kind = Set
	case '>':
		v.Kind = Push
	case '%':
		v.Kind = Map
	}
	if keep {
		v.Elems = make([]Value, 0, min(n, preallocElems))
	}
	for range n {
		e, err := r.read(depth+1, keep)
		if err != nil {
			return Value{}, noEOF(err)
		}
		if keep {
			v.Elems = append(v.Elems, e)
		}
	}
	return v, nil
}

// readBlob reads the body of a bulk string ($), blob error (!) or verbatim string (=) whose
// length line has been read.
func (r *ReplyReader) readBlob(typ byte, lenText []byte, keep bool) (Value, error) {
	n, ok := parseInteger(lenText)
	if typ == '$' && ok && n == -1 {
		return Value{Kind: Null}, nil
	}
	if !ok || n < 0 || n > maxReplyBulk {
		return Value{}, malformed("bad string length %q", lenText)
	}
	if typ == '=' {
		// A verbatim string starts with its three-byte format and a colon, "txt:".
		if n < 4 {
			return Value{}, malformed("verbatim string without a format prefix")
		}
		p, err := r.br.Peek(4)
		if err != nil {
			return Value{}, noEOF(err)
		}
		if p[3] != ':' {
			return Value{}, malformed("verbatim string without a format prefix")
		}
	}
	var b []byte
	if keep {
		var err error
		if b, err = r.readFull(int(n)); err != nil {
			return Value{}, err
		}
	} else if _, err := r.br.Discard(int(n)); err != nil {
		return Value{}, noEOF(err)
	}
	end, err := r.br.Peek(2)
	if err != nil {
		return Value{}, noEOF(err)
	}
	if end[0] != '\r' || end[1] != '\n' {
		return Value{}, malformed("string of length %d not followed by CRLF", n)
	}
	r.br.Discard(2) // cannot fail: Peek returned the two bytes
	switch typ {
	case '!':
		return Value{Kind: Error, Str: b}, nil
	case '=':
		if !keep {
			return Value{Kind: Verbatim}, nil
		}
		return Value{Kind: Verbatim, Str: b[4:]}, nil
	}
	return Value{Kind: BulkString, Str: b}, nil
}

// readFull reads n bytes into a new slice. Beyond preallocBulk the slice grows as bytes
// arrive, so a peer that announces a huge string and stalls cannot make the reader allocate
// it all up front.
func (r *ReplyReader) readFull(n int) ([]byte, error) {
	b := make([]byte, min(n, preallocBulk))
	if _, err := io.ReadFull(r.br, b); err != nil {
		return nil, noEOF(err)
	}
	for len(b) < n {
		have := len(b)
		b = append(b, make([]byte, min(n-have, have))...)
		if _, err := io.ReadFull(r.br, b[have:]); err != nil {
			return nil, noEOF(err)
		}
	}
	return b, nil
}

// noEOF turns io.EOF inside a reply into io.ErrUnexpectedEOF: only a stream that ends between
// replies ends cleanly.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func clone(b []byte, keep bool) []byte {
	if !keep {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// parseInteger parses a signed decimal integer, accepting what any server might send: an
// optional sign and leading zeros.
func parseInteger(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 || v > (1<<63-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		return int64(-v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

func isBigNumber(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// AppendCommand appends args to dst encoded as a request (a multibulk array of bulk strings)
// and returns the extended slice.
func AppendCommand(dst []byte, args ...[]byte) []byte {
	dst = appendPrefixed(dst, '*', int64(len(args)))
	for _, a := range args {
		dst = appendPrefixed(dst, '$', int64(len(a)))
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// AppendCommandStrings is AppendCommand for string arguments.
func AppendCommandStrings(dst []byte, args ...string) []byte {
	dst = appendPrefixed(dst, '*', int64(len(args)))
	for _, a := range args {
		dst = appendPrefixed(dst, '$', int64(len(a)))
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}
