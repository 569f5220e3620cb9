package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"sync/atomic"
)

// Default limits, matching Redis 7's defaults.
const (
	// DefaultMaxBulkLen is Redis's proto-max-bulk-len.
	DefaultMaxBulkLen = 512 << 20
	// DefaultMaxMultibulkLen bounds the argument count of one request. Redis 7 allows up to
	// INT_MAX; older versions refused more than 1024*1024, which is also the most any real
	// client sends, and a smaller bound keeps the per-command argument table small.
	DefaultMaxMultibulkLen = 1024 * 1024
	// DefaultMaxInlineLen is Redis's PROTO_INLINE_MAX_SIZE.
	DefaultMaxInlineLen = 64 << 10
	// DefaultMaxQueryBuffer is Redis's client-query-buffer-limit.
	DefaultMaxQueryBuffer = 1 << 30
)

// Buffer sizing. The defaults suit pipelines of small commands; a larger buffer exists only
// while a request bigger than it is being read.
const (
	// smallBufSize is the read buffer a connection starts with and returns to: Redis reads
	// PROTO_IOBUF_LEN (16 KiB) at a time, and a pipeline of small commands fits.
	smallBufSize = 16 << 10
	// maxIdleBufSize is the largest buffer kept once drained. Anything bigger was grown for one
	// large request; keeping it would pin that memory for the life of an idle connection. A
	// client that keeps sending large values pays one allocation per such request, which is
	// small next to moving the value itself.
	maxIdleBufSize = 64 << 10
	// minReadSize is the least free space worth handing to a Read; with less, the reader
	// compacts or grows first so a pipeline does not trickle in a few bytes per system call.
	minReadSize = 4 << 10
	// maxEmptyReads bounds consecutive (0, nil) results from the underlying reader, as bufio
	// does, so a broken reader cannot spin ReadCommands forever.
	maxEmptyReads = 100
)

// Limits bounds what a client may send. Zero (or negative) fields mean the defaults. Setting a
// limit too low makes ordinary requests fail (a MaxBulkLen below a value's size makes SET of
// that value a protocol error, a MaxQueryBuffer below MaxBulkLen closes connections that send
// large values); setting one too high lets a single client make the server buffer that much
// memory.
type Limits struct {
	// MaxBulkLen is the largest bulk argument accepted ("Protocol error: invalid bulk length"
	// above it). Redis's proto-max-bulk-len; default 512 MiB.
	MaxBulkLen int64
	// MaxMultibulkLen is the largest argument count accepted in one request ("Protocol error:
	// invalid multibulk length" above it). Default 1024*1024.
	MaxMultibulkLen int64
	// MaxInlineLen is the longest inline request line, and the longest "*N" or "$N" length
	// line, the reader waits for before giving up. Redis's PROTO_INLINE_MAX_SIZE; default
	// 64 KiB.
	MaxInlineLen int
	// MaxQueryBuffer is the most bytes buffered for one incomplete command before the reader
	// returns ErrQueryBufferLimit. Redis's client-query-buffer-limit; default 1 GiB.
	MaxQueryBuffer int64
}

// withDefaults fills zero fields and clamps the rest so that offset arithmetic on a limit
// cannot overflow an int.
func (l Limits) withDefaults() Limits {
	const maxLen = math.MaxInt / 4
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = DefaultMaxBulkLen
	}
	l.MaxBulkLen = min(l.MaxBulkLen, maxLen)
	if l.MaxMultibulkLen <= 0 {
		l.MaxMultibulkLen = DefaultMaxMultibulkLen
	}
	if l.MaxInlineLen <= 0 {
		l.MaxInlineLen = DefaultMaxInlineLen
	}
	l.MaxInlineLen = min(l.MaxInlineLen, maxLen)
	if l.MaxQueryBuffer <= 0 {
		l.MaxQueryBuffer = DefaultMaxQueryBuffer
	}
	l.MaxQueryBuffer = min(l.MaxQueryBuffer, maxLen)
	return l
}

// ErrQueryBufferLimit is returned when one incomplete command holds more than
// Limits.MaxQueryBuffer bytes. Redis logs this and closes the connection without a reply.
var ErrQueryBufferLimit = errors.New("resp: query buffer limit exceeded")

// errNoProgress is returned when the underlying reader keeps returning no data and no error.
var errNoProgress = errors.New("resp: reader made no progress")

// errBadReadCount is returned when the underlying reader reports an impossible byte count.
var errBadReadCount = errors.New("resp: reader returned an invalid count")

// ProtocolError is a malformed request. Msg is exactly the text Redis 7 replies with, without
// the leading "ERR ", so the server writes "-ERR " + Msg and closes the connection. Unlike
// other errors in Lavik it carries no "resp:" prefix, because the text is visible to clients
// and they match on it.
type ProtocolError struct {
	Msg string
}

func (e *ProtocolError) Error() string { return e.Msg }

// The fixed protocol errors. Each connection that hits one is closed, so sharing them is safe
// and saves nothing but an allocation; they are values so tests can compare texts.
var (
	errInvalidMultibulkLen = &ProtocolError{"Protocol error: invalid multibulk length"}
	errInvalidBulkLen      = &ProtocolError{"Protocol error: invalid bulk length"}
	errTooBigInline        = &ProtocolError{"Protocol error: too big inline request"}
	errTooBigMbulkCount    = &ProtocolError{"Protocol error: too big mbulk count string"}
	errTooBigBulkCount     = &ProtocolError{"Protocol error: too big bulk count string"}
	errUnbalancedQuotes    = &ProtocolError{"Protocol error: unbalanced quotes in request"}
)

func errExpectedDollar(got byte) error {
	return &ProtocolError{"Protocol error: expected '$', got '" + string([]byte{got}) + "'"}
}

// Command is one parsed request.
type Command struct {
	// Args holds the arguments; Args[0] is the command name as sent (not case-folded). Never
	// empty. The slices alias the Reader's buffer and have their capacity clipped to their
	// length, so appending to one copies instead of overwriting the next argument.
	Args [][]byte
	// Inline reports that the command came as a text line rather than a multibulk array.
	Inline bool
	// Size is how many bytes of the stream the command took, with any empty lines before it:
	// a replication stream's offsets count them.
	Size int
}

// span is an argument's position relative to Reader.start.
type span struct{ from, to int }

// step is the outcome of parsing at the front of the buffer.
type step uint8

const (
	needMore step = iota // the front command is incomplete
	skipped              // an empty command ("*0", "*-1", a blank line) was consumed
	parsed               // a command was consumed and returned
)

// Reader reads requests from a client connection. It is not safe for concurrent use, except
// that SetLimits may be called from any goroutine.
type Reader struct {
	rd  io.Reader
	lim atomic.Pointer[Limits] // always holds limits with defaults applied

	// buf[start:end] holds bytes read but not consumed; len(buf) is the usable capacity.
	// Invariant: 0 <= start <= end <= len(buf).
	buf        []byte
	start, end int

	// State of the multibulk command being parsed at buf[start:]. It survives between reads
	// so a command arriving in pieces is scanned once. Offsets are relative to start, so
	// moving the bytes (compaction, growth) does not touch them.
	// Invariant: while inMulti, len(spans)+remaining is the count in the command's "*N" line.
	inMulti   bool
	remaining int64 // bulk arguments not yet parsed
	bulkLen   int64 // length of the bulk at pos, or -1 while its "$N" line is unparsed
	pos       int   // start of the next "$N" line or bulk body
	spans     []span
	// skipped counts bytes consumed (empty lines) since the last command returned, which the
	// next one's Size includes.
	skipped int

	// scan is where the search for the current line's terminator resumes; the bytes between
	// the line's start and scan hold none. Relative to start; reset whenever a line is
	// consumed. Without it, a long line read one byte at a time would be rescanned from its
	// start on every read.
	scan int

	args [][]byte // backing store for the Args of the commands returned by the last call
	err  error    // sticky protocol or limit error; the connection is finished
	rerr error    // error from rd, returned once no complete command is buffered
}

// NewReader returns a Reader that reads requests from r under the limits lim.
func NewReader(r io.Reader, lim Limits) *Reader {
	rd := &Reader{rd: r, bulkLen: -1}
	rd.SetLimits(lim)
	return rd
}

// SetLimits replaces the limits. It may be called concurrently with ReadCommands (CONFIG SET
// runs on another connection); the new limits apply from the next ReadCommands call, including
// to a command already partly read. Setting the limits already in force allocates nothing, so
// a server may simply call SetLimits before every ReadCommands.
func (r *Reader) SetLimits(lim Limits) {
	l := lim.withDefaults()
	if cur := r.lim.Load(); cur != nil && *cur == l {
		return
	}
	p := new(Limits)
	*p = l
	r.lim.Store(p)
}

// Buffered returns the number of bytes read from the connection but not yet consumed.
func (r *Reader) Buffered() int { return r.end - r.start }

// ReadCommands returns up to max complete commands (max <= 0 means no limit), reusing dst's
// backing array; dst's previous contents are overwritten. It blocks on the underlying reader
// only while no complete command is buffered; once it has one, it returns what is already
// buffered without another read. The returned commands and their arguments are valid only
// until the next call.
//
// Commands parsed before a protocol error are returned first with a nil error; the error
// comes on the next call and on every call after it. Errors are a *ProtocolError,
// ErrQueryBufferLimit, io.EOF when the client closed between commands, io.ErrUnexpectedEOF
// when it closed in the middle of one, or the underlying reader's error.
func (r *Reader) ReadCommands(dst []Command, max int) ([]Command, error) {
	dst = dst[:0]
	r.args = r.args[:0]
	if r.err != nil {
		return dst, r.err
	}
	lim := r.lim.Load()
	for empty := 0; ; {
		var err error
		dst, err = r.parse(dst, max, lim)
		if err != nil {
			r.err = err
			if len(dst) > 0 {
				return dst, nil
			}
			return dst, err
		}
		if len(dst) > 0 {
			return dst, nil
		}
		// The limit comes before a read error so that the outcome does not depend on
		// whether the connection closed in the same read that crossed it.
		if int64(r.end-r.start) > lim.MaxQueryBuffer {
			r.err = ErrQueryBufferLimit
			return dst, r.err
		}
		if r.rerr != nil {
			if r.rerr == io.EOF && r.start < r.end {
				return dst, io.ErrUnexpectedEOF
			}
			return dst, r.rerr
		}
		r.makeRoom(lim)
		n, err := r.rd.Read(r.buf[r.end:])
		if n < 0 || n > len(r.buf)-r.end {
			r.err = errBadReadCount
			return dst, r.err
		}
		r.end += n
		if err != nil {
			r.rerr = err
		} else if n == 0 {
			if empty++; empty >= maxEmptyReads {
				r.rerr = errNoProgress
			}
		} else {
			empty = 0
		}
	}
}

// Fill reads once from read into the buffer, making room first as ReadCommands does, for a
// caller that reads a non-blocking socket itself (an event loop). It returns what read returned;
// the arguments of the commands Parse returned before become invalid (the buffer may move).
// Nothing is read once the reader has failed (a protocol or limit error): that error is returned.
func (r *Reader) Fill(read func(p []byte) (int, error)) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	r.makeRoom(r.lim.Load())
	n, err := read(r.buf[r.end:])
	if n < 0 || n > len(r.buf)-r.end {
		r.err = errBadReadCount
		return 0, r.err
	}
	r.end += n
	return n, err
}

// Parse returns up to max complete commands (max <= 0: no limit) from what Fill buffered,
// reading nothing, with ReadCommands's errors but for those of the underlying reader: a protocol
// error (after the commands parsed before it), or ErrQueryBufferLimit when no complete command
// is buffered and more than the limit is. An empty result with a nil error means more bytes are
// needed. The commands are valid until the next Fill or Parse.
func (r *Reader) Parse(dst []Command, max int) ([]Command, error) {
	dst = dst[:0]
	r.args = r.args[:0]
	if r.err != nil {
		return dst, r.err
	}
	lim := r.lim.Load()
	dst, err := r.parse(dst, max, lim)
	if err != nil {
		r.err = err
		if len(dst) > 0 {
			return dst, nil
		}
		return dst, err
	}
	if len(dst) == 0 && int64(r.end-r.start) > lim.MaxQueryBuffer {
		r.err = ErrQueryBufferLimit
		return dst, r.err
	}
	return dst, nil
}

// parse appends to dst the complete commands at the front of the buffer, up to max in all.
func (r *Reader) parse(dst []Command, max int, lim *Limits) ([]Command, error) {
	for r.start < r.end && (max <= 0 || len(dst) < max) {
		var (
			cmd Command
			st  step
			err error
		)
		// Redis decides the request type from the first byte of each command.
		before := r.start
		if r.inMulti || r.buf[r.start] == '*' {
			cmd, st, err = r.parseMultibulk(lim)
		} else {
			cmd, st, err = r.parseInline(lim)
		}
		if err != nil {
			return dst, err
		}
		r.skipped += r.start - before
		switch st {
		case needMore:
			return dst, nil
		case parsed:
			cmd.Size, r.skipped = r.skipped, 0
			dst = append(dst, cmd)
		}
	}
	return dst, nil
}

// consume drops the first n unconsumed bytes, which held one whole command.
func (r *Reader) consume(n int) {
	r.start += n
	r.pos = 0
	r.scan = 0
}

// indexCR returns the index of the first '\r' in b at or after from, or -1.
func indexCR(b []byte, from int) int {
	// Length lines are a few bytes long; looking at the first bytes directly beats the call
	// into the vectorized search, which pays off only for long stretches without a CR.
	for i := from; i < min(len(b), from+8); i++ {
		if b[i] == '\r' {
			return i
		}
	}
	if from+8 >= len(b) {
		return -1
	}
	if i := bytes.IndexByte(b[from+8:], '\r'); i >= 0 {
		return from + 8 + i
	}
	return -1
}

// parseMultibulk parses "*N\r\n" followed by N "$len\r\n<bytes>\r\n" arguments, resuming
// where the previous call stopped. Like Redis, it requires one byte after each length
// line's '\r' and two after each bulk, but does not look at them.
func (r *Reader) parseMultibulk(lim *Limits) (Command, step, error) {
	b := r.buf[r.start:r.end]
	if !r.inMulti {
		cr := indexCR(b, r.scan)
		if cr < 0 {
			r.scan = len(b)
			if len(b) > lim.MaxInlineLen {
				return Command{}, needMore, errTooBigMbulkCount
			}
			return Command{}, needMore, nil
		}
		if cr+1 >= len(b) {
			r.scan = cr
			return Command{}, needMore, nil
		}
		n, ok := parseInt(b[1:cr])
		if !ok || n > lim.MaxMultibulkLen {
			return Command{}, needMore, errInvalidMultibulkLen
		}
		if n <= 0 {
			r.consume(cr + 2)
			return Command{}, skipped, nil
		}
		r.inMulti = true
		r.remaining = n
		r.bulkLen = -1
		r.pos = cr + 2
		r.scan = r.pos
		r.spans = r.spans[:0]
	}
	// The loop works on copies of the state, saved back only when it stops for more bytes;
	// this is the hottest loop of the server.
	pos, scan, remaining, bulkLen := r.pos, r.scan, r.remaining, r.bulkLen
	for remaining > 0 {
		if bulkLen < 0 {
			cr := indexCR(b, scan)
			if cr < 0 || cr+1 >= len(b) {
				if cr < 0 {
					scan = len(b)
					if len(b)-pos > lim.MaxInlineLen {
						return Command{}, needMore, errTooBigBulkCount
					}
				} else {
					scan = cr
				}
				r.pos, r.scan, r.remaining, r.bulkLen = pos, scan, remaining, bulkLen
				return Command{}, needMore, nil
			}
			if b[pos] != '$' {
				return Command{}, needMore, errExpectedDollar(b[pos])
			}
			n, ok := parseInt(b[pos+1 : cr])
			if !ok || n < 0 || n > lim.MaxBulkLen {
				return Command{}, needMore, errInvalidBulkLen
			}
			pos = cr + 2
			bulkLen = n
		}
		if int64(len(b)-pos) < bulkLen+2 {
			r.pos, r.scan, r.remaining, r.bulkLen = pos, scan, remaining, bulkLen
			return Command{}, needMore, nil
		}
		end := pos + int(bulkLen)
		r.spans = append(r.spans, span{pos, end})
		pos = end + 2
		scan = pos
		bulkLen = -1
		remaining--
	}
	base := len(r.args)
	for _, s := range r.spans {
		r.args = append(r.args, b[s.from:s.to:s.to])
	}
	r.inMulti = false
	r.remaining, r.bulkLen = 0, -1
	r.consume(pos)
	return Command{Args: r.args[base:len(r.args):len(r.args)]}, parsed, nil
}

// parseInline parses one text line, ended by "\n" or "\r\n", split by Redis's sdssplitargs
// rules.
func (r *Reader) parseInline(lim *Limits) (Command, step, error) {
	b := r.buf[r.start:r.end]
	i := bytes.IndexByte(b[r.scan:], '\n')
	if i < 0 {
		r.scan = len(b)
		if len(b) > lim.MaxInlineLen {
			return Command{}, needMore, errTooBigInline
		}
		return Command{}, needMore, nil
	}
	nl := r.scan + i
	line := b[:nl]
	if nl > 0 && line[nl-1] == '\r' {
		line = line[:nl-1]
	}
	base := len(r.args)
	var ok bool
	if r.args, ok = splitInline(r.args, line); !ok {
		return Command{}, needMore, errUnbalancedQuotes
	}
	r.consume(nl + 1)
	if len(r.args) == base {
		return Command{}, skipped, nil
	}
	return Command{Args: r.args[base:len(r.args):len(r.args)], Inline: true}, parsed, nil
}

// want returns how many bytes, counted from start, the command being parsed is known to need,
// or 0 when that is not known yet.
func (r *Reader) want() int {
	if r.inMulti && r.bulkLen >= 0 {
		return r.pos + int(r.bulkLen) + 2
	}
	return 0
}

// makeRoom makes sure buf has free space after end for the next Read: it drops an oversized
// buffer once drained, compacts, or grows. It grows at most by doubling, and not past what
// the current command is known to need, so a client that announces a huge argument makes the
// buffer grow only as fast as it actually sends bytes.
func (r *Reader) makeRoom(lim *Limits) {
	unread := r.end - r.start
	want := r.want()
	if r.buf == nil {
		r.buf = make([]byte, smallBufSize)
	}
	if len(r.buf) > maxIdleBufSize && unread <= smallBufSize/2 && want <= smallBufSize/2 {
		nb := make([]byte, smallBufSize)
		copy(nb, r.buf[r.start:r.end])
		r.buf, r.start, r.end = nb, 0, unread
	}
	need := minReadSize
	if want > unread && want-unread < need {
		need = want - unread
	}
	if len(r.buf)-r.end >= need {
		return
	}
	if r.start > 0 {
		copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, unread
		if len(r.buf)-r.end >= need {
			return
		}
	}
	size := 2 * len(r.buf)
	if want > unread {
		// The slack leaves room for the arguments that usually follow a big value
		// (SET k v EX 10) without doubling a buffer that is already huge.
		size = min(size, want+smallBufSize)
	}
	// One byte past the limit is enough to notice the limit was crossed.
	size = min(size, int(lim.MaxQueryBuffer)+1)
	size = max(size, unread+need)
	nb := make([]byte, size)
	copy(nb, r.buf[r.start:r.end])
	r.buf, r.start, r.end = nb, 0, unread
}

// parseInt parses a length the way Redis's string2ll does: an optional '-', no '+', no
// leading zeros, no spaces, at most 20 bytes.
func parseInt(b []byte) (int64, bool) {
	// Fast path: up to 18 digits cannot overflow, so no per-digit range check is needed.
	if len(b) > 0 && len(b) <= 18 && b[0] >= '1' && b[0] <= '9' {
		var v int64
		for _, c := range b {
			d := c - '0'
			if d > 9 {
				return 0, false
			}
			v = v*10 + int64(d)
		}
		return v, true
	}
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 || v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(-v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}
