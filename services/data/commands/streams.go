package commands

import (
	"math"
	"strings"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

// Streams: a stream and its consumer groups are one record (streamcodec.go), decoded whole,
// changed in memory and written back whole, as the other collections. Ids use the server's
// clock in ms and a sequence, and never go back: the last id is stored in the record.
//
// Trimming with "~" trims exactly (to the limit given with LIMIT, or Redis's default of 100 x
// stream-node-max-entries): Redis trims whole radix-tree nodes only, and so may keep more.

const typeStream = keyspace.TypeStream

func init() {
	stream := func(name string, arity int, flags Flag, since, complexity, summary string, h func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "stream", Since: since, Complexity: complexity, Summary: summary, Handler: h}
	}
	// sub is a subcommand whose key is argument 2 (XINFO, XGROUP).
	sub := func(arity int, flags Flag, since, complexity, summary string, h func(*Ctx)) *Command {
		return &Command{Arity: arity, Flags: flags, FirstKey: 2, LastKey: 2, Step: 1, Since: since,
			Complexity: complexity, Summary: summary, Handler: h}
	}
	register(
		stream("xadd", -5, FlagWrite|FlagDenyOOM|FlagFast, "5.0.0", "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.", "Appends a new message to a stream. Creates the key if it doesn't exist.", xaddCmd),
		stream("xlen", 2, FlagReadonly|FlagFast, "5.0.0", "O(1)", "Return the number of messages in a stream.", xlenCmd),
		stream("xrange", -4, FlagReadonly, "5.0.0", "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).", "Returns the messages from a stream within a range of IDs.", xrangeCmd),
		stream("xrevrange", -4, FlagReadonly, "5.0.0", "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).", "Returns the messages from a stream within a range of IDs in reverse order.", xrevrangeCmd),
		stream("xdel", -3, FlagWrite|FlagFast, "5.0.0", "O(1) for each single item to delete in the stream, regardless of the stream size.", "Returns the number of messages after removing them from a stream.", xdelCmd),
		stream("xtrim", -4, FlagWrite, "5.0.0", "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.", "Deletes messages from the beginning of a stream.", xtrimCmd),
		stream("xsetid", -3, FlagWrite|FlagDenyOOM|FlagFast, "5.0.0", "O(1)", "An internal command for replicating stream values.", xsetidCmd),
		&Command{Name: "xinfo", Arity: -2, Group: "stream", Since: "5.0.0", Complexity: "Depends on subcommand.",
			Summary: "A container for stream introspection commands.",
			Subcommands: map[string]*Command{
				"stream":    sub(-3, FlagReadonly, "5.0.0", "O(1)", "Returns information about a stream.", xinfoStreamCmd),
				"groups":    sub(3, FlagReadonly, "5.0.0", "O(1)", "Returns a list of the consumer groups of a stream.", xinfoGroupsCmd),
				"consumers": sub(4, FlagReadonly, "5.0.0", "O(1)", "Returns a list of the consumers in a consumer group.", xinfoConsumersCmd),
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: xinfoHelpCmd},
			}},
	)
}

// Error lines of the stream commands, as Redis 7.0 words them.
const (
	errStreamID        Error = "ERR Invalid stream ID specified as stream command argument"
	errStreamTopItem   Error = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	errStreamZeroID    Error = "ERR The ID specified in XADD must be greater than 0-0"
	errStreamExhausted Error = "ERR The stream has exhausted the last possible ID, unable to add more items"
)

func readStream(c *Ctx, key []byte) (*streamValue, error) {
	s, _, err := readValue(c, key, typeStream, decodeStream)
	return s, err
}

func updateStream(c *Ctx, key []byte, fn func(s *streamValue, exists bool) (bool, error)) error {
	return updateValue(c, key, typeStream, decodeStream, newStream, fn)
}

// parseStreamUint is Redis's string2ull: a decimal number, or what strtoull accepts in full
// (leading blanks, a sign), never a negative written as such.
func parseStreamUint(b []byte) (uint64, bool) {
	if n, ok := ParseInt(b); ok {
		return uint64(n), n >= 0
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] >= '\t' && b[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var n uint64
	for ; i < len(b); i++ {
		d := b[i] - '0'
		if d > 9 || n > (math.MaxUint64-uint64(d))/10 {
			return 0, false
		}
		n = n*10 + uint64(d)
	}
	if neg {
		n = -n
	}
	return n, true
}

// parseStreamID is Redis's streamGenericParseIDOrReply: "-" and "+" (unless strict), "ms" with
// missingSeq as the sequence, "ms-seq", and with seqGiven non-nil "ms-*" (seqGiven false).
func parseStreamID(b []byte, missingSeq uint64, strict bool, seqGiven *bool) (streamID, error) {
	if len(b) > 127 {
		return streamID{}, errStreamID
	}
	if strict && len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		return streamID{}, errStreamID
	}
	if seqGiven != nil {
		*seqGiven = true
	}
	switch string(b) {
	case "-":
		return streamID{}, nil
	case "+":
		return maxStreamID, nil
	}
	msPart, seqPart, dash := b, []byte(nil), false
	for i, ch := range b {
		if ch == '-' {
			msPart, seqPart, dash = b[:i], b[i+1:], true
			break
		}
	}
	ms, ok := parseStreamUint(msPart)
	if !ok {
		return streamID{}, errStreamID
	}
	seq := missingSeq
	if dash {
		if seqGiven != nil && string(seqPart) == "*" {
			seq, *seqGiven = 0, false
		} else if seq, ok = parseStreamUint(seqPart); !ok {
			return streamID{}, errStreamID
		}
	}
	return streamID{ms, seq}, nil
}

// parseIntervalID parses a range end of XRANGE: "(" makes it exclusive.
func parseIntervalID(b []byte, missingSeq uint64) (id streamID, exclusive bool, err error) {
	if len(b) > 1 && b[0] == '(' {
		id, err = parseStreamID(b[1:], missingSeq, true, nil)
		return id, true, err
	}
	id, err = parseStreamID(b, missingSeq, false, nil)
	return id, false, err
}

// streamTrimArgs are XADD's and XTRIM's trimming options.
type streamTrimArgs struct {
	strategy   int // 0 none, 1 MAXLEN, 2 MINID
	approx     bool
	maxlen     int64
	minid      streamID
	limit      int64
	id         streamID
	idGiven    bool
	seqGiven   bool
	noMkStream bool
}

const (
	trimNone = iota
	trimMaxLen
	trimMinID
)

// parseTrimArgs is Redis's streamParseAddOrTrimArgsOrReply: it returns the position of the id
// (XADD) or of the end of the options.
func parseTrimArgs(args [][]byte, xadd bool) (a streamTrimArgs, at int, err error) {
	a.seqGiven = true
	limitGiven := false
	i := 2
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && string(opt) == "*":
			goto done
		case (is(opt, "MAXLEN") || is(opt, "MINID")) && more > 0:
			if a.strategy != trimNone {
				return a, 0, Error("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
			}
			a.approx = false
			if next := args[i+1]; more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				a.approx = next[0] == '~'
				i++
			}
			if is(opt, "MAXLEN") {
				n, ok := ParseInt(args[i+1])
				if !ok {
					return a, 0, ErrNotInt
				}
				if n < 0 {
					return a, 0, Error("ERR The MAXLEN argument must be >= 0.")
				}
				a.maxlen, a.strategy = n, trimMaxLen
			} else {
				id, err := parseStreamID(args[i+1], 0, true, nil)
				if err != nil {
					return a, 0, err
				}
				a.minid, a.strategy = id, trimMinID
			}
			i++
		case is(opt, "LIMIT") && more > 0:
			n, ok := ParseInt(args[i+1])
			if !ok {
				return a, 0, ErrNotInt
			}
			if n < 0 {
				return a, 0, Error("ERR The LIMIT argument must be >= 0.")
			}
			a.limit, limitGiven = n, true
			i++
		case xadd && is(opt, "NOMKSTREAM"):
			a.noMkStream = true
		case xadd:
			id, err := parseStreamID(opt, 0, true, &a.seqGiven)
			if err != nil {
				return a, 0, err
			}
			a.id, a.idGiven = id, true
			goto done
		default:
			return a, 0, ErrSyntax
		}
	}
done:
	if a.limit != 0 && a.strategy == trimNone {
		return a, 0, Error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
	}
	if !xadd && a.strategy == trimNone {
		return a, 0, Error("ERR syntax error, XTRIM must be called with a trimming strategy")
	}
	switch {
	case limitGiven && !a.approx:
		return a, 0, Error("ERR syntax error, LIMIT cannot be used without the special ~ option")
	case !limitGiven && a.approx:
		a.limit = 100 * 100 // 100 x stream-node-max-entries
	case !limitGiven:
		a.limit = 0
	}
	return a, i, nil
}

// trim applies a's trimming to s and returns how many entries it removed.
func (a *streamTrimArgs) trim(s *streamValue) int64 {
	switch a.strategy {
	case trimMaxLen:
		return s.trimMaxLen(a.maxlen, a.limit)
	case trimMinID:
		return s.trimMinID(a.minid, a.limit)
	}
	return 0
}

// nextStreamID is the id XADD gives a new entry: a's, or one made from the clock (now, unix ms).
func nextStreamID(s *streamValue, a *streamTrimArgs, now int64) (streamID, error) {
	var id streamID
	switch {
	case a.idGiven && a.seqGiven:
		id = a.id
	case a.idGiven:
		if s.lastID.ms == a.id.ms {
			if s.lastID.seq == math.MaxUint64 {
				return id, errStreamTopItem
			}
			id = streamID{s.lastID.ms, s.lastID.seq + 1}
		} else {
			id = a.id
		}
	default:
		if ms := uint64(now); ms > s.lastID.ms {
			id = streamID{ms, 0}
		} else {
			id, _ = s.lastID.next()
		}
	}
	if id.cmp(s.lastID) <= 0 {
		return id, errStreamTopItem
	}
	return id, nil
}

func xaddCmd(c *Ctx) {
	a, at, err := parseTrimArgs(c.Args, true)
	if err != nil {
		c.Err(err)
		return
	}
	// at is the id's position: field/value pairs follow it.
	if n := len(c.Args) - at - 1; n < 2 || n%2 == 1 {
		c.Err(ArityError(c.Cmd))
		return
	}
	if a.idGiven && a.seqGiven && a.id.isZero() {
		c.Err(errStreamZeroID)
		return
	}
	var id streamID
	created, trimmed := false, false
	err = updateS(c, c.Args[1], func(v *sview) (bool, error) {
		trimmed = false
		created = v.exists || !a.noMkStream
		if !created {
			return false, nil
		}
		h := v.header()
		if h.lastID == maxStreamID {
			return false, errStreamExhausted
		}
		var err error
		if id, err = nextStreamID(h, &a, c.Now()); err != nil {
			return false, err
		}
		fields := make([][]byte, len(c.Args)-at-1)
		copy(fields, c.Args[at+1:])
		if err := v.appendEntry(id, fields); err != nil {
			return false, err
		}
		n := v.n
		err = v.trim(&a)
		trimmed = v.n < n
		return true, err
	})
	if err == nil && created {
		c.Notify(pubsub.Stream, "xadd", c.Args[1])
		if trimmed {
			c.Notify(pubsub.Stream, "xtrim", c.Args[1])
		}
	}
	switch {
	case err != nil:
		c.Err(err)
	case !created:
		c.W.Null()
	default:
		c.W.BulkString(id.String())
	}
}

func xlenCmd(c *Ctx) {
	n := 0
	err := readS(c, c.Args[1], func(v *sview) error {
		n = v.n
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Int(int64(n))
}

// writeEntry replies with one entry: its id and its fields and values.
func writeEntry(c *Ctx, e *streamEntry) {
	c.W.Array(2)
	c.W.BulkString(e.id.String())
	c.W.Array(len(e.fields))
	for _, f := range e.fields {
		c.W.Bulk(f)
	}
}

// streamRange returns the entries from start to end (inclusive), at most count of them when
// count > 0, from the end when rev.
func (s *streamValue) streamRange(start, end streamID, count int64, rev bool) []*streamEntry {
	var out []*streamEntry
	if end.less(start) {
		return nil
	}
	if !rev {
		for i := s.search(start); i < len(s.entries) && s.entries[i].id.cmp(end) <= 0; i++ {
			if count > 0 && int64(len(out)) >= count {
				break
			}
			out = append(out, &s.entries[i])
		}
		return out
	}
	for i := s.search(end); i >= 0; i-- {
		if i == len(s.entries) || s.entries[i].id.cmp(end) > 0 {
			continue
		}
		if s.entries[i].id.less(start) || count > 0 && int64(len(out)) >= count {
			break
		}
		out = append(out, &s.entries[i])
	}
	return out
}

func xrangeGeneric(c *Ctx, rev bool) {
	startArg, endArg := c.Args[2], c.Args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, ex, err := parseIntervalID(startArg, 0)
	if err != nil {
		c.Err(err)
		return
	}
	if ex {
		var ok bool
		if start, ok = start.next(); !ok {
			c.Err(Error("ERR invalid start ID for the interval"))
			return
		}
	}
	end, ex, err := parseIntervalID(endArg, math.MaxUint64)
	if err != nil {
		c.Err(err)
		return
	}
	if ex {
		var ok bool
		if end, ok = end.prev(); !ok {
			c.Err(Error("ERR invalid end ID for the interval"))
			return
		}
	}
	count := int64(-1)
	for j := 4; j < len(c.Args); j++ {
		if is(c.Args[j], "COUNT") && j+1 < len(c.Args) {
			n, ok := ParseInt(c.Args[j+1])
			if !ok {
				c.Err(ErrNotInt)
				return
			}
			count = max(n, 0)
			j++
		} else {
			c.Err(ErrSyntax)
			return
		}
	}
	var es []*streamEntry
	exists := false
	err = readS(c, c.Args[1], func(v *sview) error {
		exists = v.exists
		if !exists || count == 0 {
			return nil
		}
		var err error
		es, err = v.rangeEntries(start, end, max(count, 0), rev)
		return err
	})
	switch {
	case err != nil:
		c.Err(err)
		return
	case !exists:
		c.W.Array(0)
		return
	case count == 0:
		c.W.NullArray()
		return
	}
	c.W.Array(len(es))
	for _, e := range es {
		writeEntry(c, e)
	}
}

func xrangeCmd(c *Ctx)    { xrangeGeneric(c, false) }
func xrevrangeCmd(c *Ctx) { xrangeGeneric(c, true) }

func xdelCmd(c *Ctx) {
	n := 0
	err := updateStream(c, c.Args[1], func(s *streamValue, exists bool) (bool, error) {
		n = 0
		if !exists {
			return false, nil
		}
		ids := make([]streamID, 0, len(c.Args)-2)
		for _, a := range c.Args[2:] {
			id, err := parseStreamID(a, 0, true, nil)
			if err != nil {
				return false, err
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			if s.del(id) {
				n++
			}
		}
		return n > 0, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if n > 0 {
		c.Notify(pubsub.Stream, "xdel", c.Args[1])
	}
	c.W.Int(int64(n))
}

func xtrimCmd(c *Ctx) {
	a, _, err := parseTrimArgs(c.Args, false)
	if err != nil {
		c.Err(err)
		return
	}
	var n int64
	err = updateStream(c, c.Args[1], func(s *streamValue, exists bool) (bool, error) {
		n = 0
		if !exists {
			return false, nil
		}
		n = a.trim(s)
		return n > 0, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if n > 0 {
		c.Notify(pubsub.Stream, "xtrim", c.Args[1])
	}
	c.W.Int(n)
}

func xsetidCmd(c *Ctx) {
	id, err := parseStreamID(c.Args[2], 0, true, nil)
	if err != nil {
		c.Err(err)
		return
	}
	entriesAdded := int64(-1)
	var maxDel streamID
	for i := 3; i < len(c.Args); i += 2 {
		more := i+1 < len(c.Args)
		switch {
		case is(c.Args[i], "ENTRIESADDED") && more:
			n, ok := ParseInt(c.Args[i+1])
			if !ok {
				c.Err(ErrNotInt)
				return
			}
			if n < 0 {
				c.Err(Error("ERR entries_added must be positive"))
				return
			}
			entriesAdded = n
		case is(c.Args[i], "MAXDELETEDID") && more:
			if maxDel, err = parseStreamID(c.Args[i+1], 0, true, nil); err != nil {
				c.Err(err)
				return
			}
			if id.less(maxDel) {
				c.Err(Error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"))
				return
			}
		default:
			c.Err(ErrSyntax)
			return
		}
	}
	err = updateStream(c, c.Args[1], func(s *streamValue, exists bool) (bool, error) {
		if !exists {
			return false, ErrNoSuchKey
		}
		// Redis 7.0 checks the id against the last entry only, not against the last id or
		// the largest deleted one.
		if n := len(s.entries); n > 0 {
			if id.less(s.entries[n-1].id) {
				return false, Error("ERR The ID specified in XSETID is smaller than the target stream top item")
			}
			if entriesAdded != -1 && int64(n) > entriesAdded {
				return false, Error("ERR The entries_added specified in XSETID is smaller than the target stream length")
			}
		}
		s.lastID = id
		if entriesAdded != -1 {
			s.entriesAdded = uint64(entriesAdded)
		}
		if !maxDel.isZero() {
			s.maxDeleted = maxDel
		}
		return true, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.Notify(pubsub.Stream, "xsetid", c.Args[1])
	c.OK()
}

// subSyntaxErr is Redis's addReplySubcommandSyntaxError.
func subSyntaxErr(c *Ctx) Error {
	return Error("ERR unknown subcommand or wrong number of arguments for '" + string(c.Args[1]) + "'. Try " + strings.ToUpper(c.Cmd.Parent.Name) + " HELP.")
}

// helpLines replies with a container's HELP text, Redis's lines.
func helpLines(c *Ctx, lines []string) {
	c.W.Array(len(lines))
	for _, l := range lines {
		c.W.Simple(l)
	}
}

var xinfoHelp = []string{
	"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
	"HELP",
	"    Prints this help.",
}

func xinfoHelpCmd(c *Ctx) { helpLines(c, xinfoHelp) }

// readStreamOrNoKey reads a stream that must exist ("ERR no such key").
func readStreamOrNoKey(c *Ctx, key []byte) (*streamValue, bool) {
	s, err := readStream(c, key)
	if err == nil && s == nil {
		err = ErrNoSuchKey
	}
	if err != nil {
		c.Err(err)
		return nil, false
	}
	return s, true
}

// writeEntriesReadAndLag writes a group's entries-read and lag fields.
func writeEntriesReadAndLag(c *Ctx, s *streamValue, g *streamGroup) {
	c.W.BulkString("entries-read")
	if g.entriesRead != streamInvalidEntriesRead {
		c.W.Int(g.entriesRead)
	} else {
		c.W.Null()
	}
	c.W.BulkString("lag")
	if lag, ok := s.lag(g); ok {
		c.W.Int(lag)
	} else {
		c.W.Null()
	}
}

func xinfoStreamCmd(c *Ctx) {
	full, count := false, int64(10)
	switch opts := c.Args[3:]; {
	case len(opts) == 0:
	case len(opts) != 1 && len(opts) != 3 || !is(opts[0], "FULL") || len(opts) == 3 && !is(opts[1], "COUNT"):
		c.Err(subSyntaxErr(c))
		return
	default:
		full = true
		if len(opts) == 3 {
			n, ok := ParseInt(opts[2])
			if !ok {
				c.Err(ErrNotInt)
				return
			}
			if n >= 0 {
				count = n
			}
		}
	}
	s, ok := readStreamOrNoKey(c, c.Args[2])
	if !ok {
		return
	}
	if full {
		c.W.Map(9)
	} else {
		c.W.Map(10)
	}
	// Redis keeps up to 100 entries per radix-tree node; Lavik reports what Redis would for
	// entries added in order.
	nodes := (len(s.entries) + 99) / 100
	c.W.BulkString("length")
	c.W.Int(int64(len(s.entries)))
	c.W.BulkString("radix-tree-keys")
	c.W.Int(int64(nodes))
	c.W.BulkString("radix-tree-nodes")
	c.W.Int(int64(nodes + 1))
	c.W.BulkString("last-generated-id")
	c.W.BulkString(s.lastID.String())
	c.W.BulkString("max-deleted-entry-id")
	c.W.BulkString(s.maxDeleted.String())
	c.W.BulkString("entries-added")
	c.W.Int(int64(s.entriesAdded))
	c.W.BulkString("recorded-first-entry-id")
	c.W.BulkString(s.firstID().String())
	if !full {
		c.W.BulkString("groups")
		c.W.Int(int64(len(s.groups)))
		for _, name := range []string{"first-entry", "last-entry"} {
			c.W.BulkString(name)
			if len(s.entries) == 0 {
				c.W.Null()
			} else if name == "first-entry" {
				writeEntry(c, &s.entries[0])
			} else {
				writeEntry(c, &s.entries[len(s.entries)-1])
			}
		}
		return
	}
	c.W.BulkString("entries")
	es := s.streamRange(streamID{}, maxStreamID, count, false)
	c.W.Array(len(es))
	for _, e := range es {
		writeEntry(c, e)
	}
	limit := func(n int) int {
		if count > 0 && int64(n) > count {
			return int(count)
		}
		return n
	}
	c.W.BulkString("groups")
	c.W.Array(len(s.groups))
	for _, g := range s.groups {
		c.W.Map(7)
		c.W.BulkString("name")
		c.W.BulkString(g.name)
		c.W.BulkString("last-delivered-id")
		c.W.BulkString(g.lastID.String())
		writeEntriesReadAndLag(c, s, g)
		c.W.BulkString("pel-count")
		c.W.Int(int64(len(g.pel)))
		c.W.BulkString("pending")
		c.W.Array(limit(len(g.pel)))
		for _, p := range g.pel[:limit(len(g.pel))] {
			c.W.Array(4)
			c.W.BulkString(p.id.String())
			c.W.BulkString(p.consumer)
			c.W.Int(p.deliveryTime)
			c.W.Int(int64(p.deliveryCount))
		}
		c.W.BulkString("consumers")
		c.W.Array(len(g.consumers))
		for _, cons := range g.consumers {
			var mine []*streamPending
			for i := range g.pel {
				if g.pel[i].consumer == cons.name {
					mine = append(mine, &g.pel[i])
				}
			}
			c.W.Map(4)
			c.W.BulkString("name")
			c.W.BulkString(cons.name)
			c.W.BulkString("seen-time")
			c.W.Int(cons.seenTime)
			c.W.BulkString("pel-count")
			c.W.Int(int64(len(mine)))
			c.W.BulkString("pending")
			c.W.Array(limit(len(mine)))
			for _, p := range mine[:limit(len(mine))] {
				c.W.Array(3)
				c.W.BulkString(p.id.String())
				c.W.Int(p.deliveryTime)
				c.W.Int(int64(p.deliveryCount))
			}
		}
	}
}

func xinfoGroupsCmd(c *Ctx) {
	s, ok := readStreamOrNoKey(c, c.Args[2])
	if !ok {
		return
	}
	c.W.Array(len(s.groups))
	for _, g := range s.groups {
		c.W.Map(6)
		c.W.BulkString("name")
		c.W.BulkString(g.name)
		c.W.BulkString("consumers")
		c.W.Int(int64(len(g.consumers)))
		c.W.BulkString("pending")
		c.W.Int(int64(len(g.pel)))
		c.W.BulkString("last-delivered-id")
		c.W.BulkString(g.lastID.String())
		writeEntriesReadAndLag(c, s, g)
	}
}

// errNoGroup is "-NOGROUP No such consumer group '<group>' for key name '<key>'".
func errNoGroup(key, group []byte) Error {
	return Error("NOGROUP No such consumer group '" + string(group) + "' for key name '" + string(key) + "'")
}

func xinfoConsumersCmd(c *Ctx) {
	s, ok := readStreamOrNoKey(c, c.Args[2])
	if !ok {
		return
	}
	g := s.group(c.Args[3])
	if g == nil {
		c.Err(errNoGroup(c.Args[2], c.Args[3]))
		return
	}
	now := c.Now()
	c.W.Array(len(g.consumers))
	for _, cons := range g.consumers {
		c.W.Map(3)
		c.W.BulkString("name")
		c.W.BulkString(cons.name)
		c.W.BulkString("pending")
		c.W.Int(int64(g.pendingOf(cons.name)))
		c.W.BulkString("idle")
		c.W.Int(max(now-cons.seenTime, 0))
	}
}
