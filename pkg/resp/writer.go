package resp

import (
	"strconv"
	"strings"
)

// maxKeptWriterBuf is the largest buffer Reset keeps. A reply bigger than this (a large GET,
// KEYS *) is rare; keeping its buffer would pin that memory for the life of the connection.
const maxKeptWriterBuf = 1 << 20

// smallInts is the number of non-negative integers whose encoded forms are precomputed.
// Integer replies, array counts and bulk lengths are overwhelmingly small.
const smallInts = 512

// Precomputed ":n\r\n", "*n\r\n" and "$n\r\n" for 0 <= n < smallInts; Redis keeps the same
// kind of shared headers (OBJ_SHARED_BULKHDR_LEN).
var (
	intReplies  [smallInts][]byte
	arrayHeads  [smallInts][]byte
	bulkHeads   [smallInts][]byte
	nullBulk2   = []byte("$-1\r\n")
	nullArray2  = []byte("*-1\r\n")
	null3       = []byte("_\r\n")
	true3       = []byte("#t\r\n")
	false3      = []byte("#f\r\n")
	trueAsInt2  = []byte(":1\r\n")
	falseAsInt2 = []byte(":0\r\n")
)

func init() {
	for i := range smallInts {
		intReplies[i] = appendPrefixed(nil, ':', int64(i))
		arrayHeads[i] = appendPrefixed(nil, '*', int64(i))
		bulkHeads[i] = appendPrefixed(nil, '$', int64(i))
	}
}

// appendPrefixed appends prefix, n in decimal and CRLF.
func appendPrefixed(dst []byte, prefix byte, n int64) []byte {
	dst = append(dst, prefix)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

// Writer encodes replies by appending to an internal buffer, which the connection writes out
// with Bytes and then clears with Reset. The zero value is not usable; call NewWriter.
//
// The aggregate methods (Array, Map, Set, Push) write only the header; the caller writes the
// elements after it.
type Writer struct {
	buf   []byte
	proto int // 2 or 3
}

// NewWriter returns a Writer that speaks RESP2 until SetProto(3).
func NewWriter() *Writer {
	return &Writer{proto: 2}
}

// SetProto selects the protocol version negotiated with HELLO. Any value other than 3 means
// RESP2, so a bad value degrades to the form every client understands.
func (w *Writer) SetProto(v int) {
	if v == 3 {
		w.proto = 3
	} else {
		w.proto = 2
	}
}

// Proto returns the protocol version in use, 2 or 3.
func (w *Writer) Proto() int { return w.proto }

// Bytes returns the encoded replies. The slice is valid until the next method call.
func (w *Writer) Bytes() []byte { return w.buf }

// Len returns the number of encoded bytes.
func (w *Writer) Len() int { return len(w.buf) }

// Reset empties the buffer, keeping its capacity unless it grew past 1 MiB.
func (w *Writer) Reset() {
	if cap(w.buf) > maxKeptWriterBuf {
		w.buf = nil
		return
	}
	w.buf = w.buf[:0]
}

// Raw appends pre-encoded bytes, such as a reply cached by the caller.
func (w *Writer) Raw(b []byte) { w.buf = append(w.buf, b...) }

// Simple writes a simple string, "+OK". CR and LF in s would end the reply early and
// desynchronize the client, so they are replaced by spaces.
func (w *Writer) Simple(s string) { w.line('+', s) }

// Error writes an error reply: "-" + s. s includes its code, as in "ERR syntax error" or
// "WRONGTYPE Operation against a key holding the wrong kind of value". CR and LF in s are
// replaced by spaces, as Redis does, because error texts often quote client input.
func (w *Writer) Error(s string) { w.line('-', s) }

func (w *Writer) line(prefix byte, s string) {
	w.buf = append(w.buf, prefix)
	start := len(w.buf)
	w.buf = append(w.buf, s...)
	if strings.ContainsAny(s, "\r\n") {
		for i, c := range w.buf[start:] {
			if c == '\r' || c == '\n' {
				w.buf[start+i] = ' '
			}
		}
	}
	w.buf = append(w.buf, '\r', '\n')
}

// Int writes an integer reply.
func (w *Writer) Int(n int64) {
	if n >= 0 && n < smallInts {
		w.buf = append(w.buf, intReplies[n]...)
		return
	}
	w.buf = appendPrefixed(w.buf, ':', n)
}

// header appends an aggregate or bulk header.
func (w *Writer) header(prefix byte, n int) {
	if n >= 0 && n < smallInts {
		switch prefix {
		case '*':
			w.buf = append(w.buf, arrayHeads[n]...)
			return
		case '$':
			w.buf = append(w.buf, bulkHeads[n]...)
			return
		}
	}
	w.buf = appendPrefixed(w.buf, prefix, int64(n))
}

// Bulk writes a bulk string. A nil b is written as an empty string, not a null: a missing
// value must be written with Null explicitly.
func (w *Writer) Bulk(b []byte) {
	w.header('$', len(b))
	w.buf = append(w.buf, b...)
	w.buf = append(w.buf, '\r', '\n')
}

// BulkStart writes the header of a bulk string of n bytes, for a value written in pieces: the
// caller then writes exactly n bytes (Raw) and BulkEnd.
func (w *Writer) BulkStart(n int) { w.header('$', n) }

// BulkEnd ends a bulk string begun with BulkStart.
func (w *Writer) BulkEnd() { w.buf = append(w.buf, '\r', '\n') }

// BulkString writes s as a bulk string.
func (w *Writer) BulkString(s string) {
	w.header('$', len(s))
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// Null writes a missing value: RESP2 "$-1", RESP3 "_".
func (w *Writer) Null() {
	if w.proto == 3 {
		w.buf = append(w.buf, null3...)
	} else {
		w.buf = append(w.buf, nullBulk2...)
	}
}

// NullArray writes a missing aggregate (BLPOP timing out, EXEC aborted by WATCH): RESP2 "*-1",
// RESP3 "_".
func (w *Writer) NullArray() {
	if w.proto == 3 {
		w.buf = append(w.buf, null3...)
	} else {
		w.buf = append(w.buf, nullArray2...)
	}
}

// Array writes the header of an array of n elements.
func (w *Writer) Array(n int) { w.header('*', n) }

// Map writes the header of a map of n key-value pairs; the caller writes 2n elements. RESP2
// has no map, so there it is a flat array of 2n elements, as Redis does.
func (w *Writer) Map(n int) {
	if w.proto == 3 {
		w.header('%', n)
	} else {
		w.header('*', 2*n)
	}
}

// Set writes the header of a set of n elements; an array in RESP2.
func (w *Writer) Set(n int) {
	if w.proto == 3 {
		w.header('~', n)
	} else {
		w.header('*', n)
	}
}

// Push writes the header of an out-of-band push message (pub/sub, client tracking) of n
// elements; an array in RESP2, which is how pub/sub messages have always looked there.
func (w *Writer) Push(n int) {
	if w.proto == 3 {
		w.header('>', n)
	} else {
		w.header('*', n)
	}
}

// Double writes a floating-point reply: RESP3 ",<text>", RESP2 a bulk string of the same
// text. The text is Redis 7.2's: "inf", "-inf", "nan", "-0", integers in plain digits, and
// otherwise the shortest representation that reads back to f.
func (w *Writer) Double(f float64) {
	var scratch [32]byte
	text := appendDouble(scratch[:0], f)
	if w.proto == 3 {
		w.buf = append(w.buf, ',')
	} else {
		w.header('$', len(text))
	}
	w.buf = append(w.buf, text...)
	w.buf = append(w.buf, '\r', '\n')
}

// DoubleText writes a floating-point reply whose text the caller formatted: RESP3
// ",<text>", RESP2 a bulk string.
func (w *Writer) DoubleText(text string) {
	if w.proto == 3 {
		w.buf = append(w.buf, ',')
		w.buf = append(w.buf, text...)
		w.buf = append(w.buf, '\r', '\n')
		return
	}
	w.BulkString(text)
}

// Bool writes a boolean: RESP3 "#t"/"#f", RESP2 the integers 1 and 0.
func (w *Writer) Bool(b bool) {
	switch {
	case w.proto == 3 && b:
		w.buf = append(w.buf, true3...)
	case w.proto == 3:
		w.buf = append(w.buf, false3...)
	case b:
		w.buf = append(w.buf, trueAsInt2...)
	default:
		w.buf = append(w.buf, falseAsInt2...)
	}
}

// Verbatim writes a verbatim string (INFO, LATENCY DOCTOR): RESP3 "=<len>\r\n<format>:<s>",
// RESP2 a plain bulk string of s. format is the three-byte type, "txt" or "mkd"; any other
// length is replaced by "txt" so the reply stays well formed.
func (w *Writer) Verbatim(format, s string) {
	if w.proto != 3 {
		w.BulkString(s)
		return
	}
	if len(format) != 3 {
		format = "txt"
	}
	w.header('=', len(s)+4)
	w.buf = append(w.buf, format...)
	w.buf = append(w.buf, ':')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}
