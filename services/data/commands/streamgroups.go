package commands

import (
	"math"
	"strconv"

	"github.com/lavikdb/lavik/services/data/pubsub"
)

// Consumer groups: XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM. A group lives in its
// stream's record (streamcodec.go): its last-delivered id, read counter, pending entries (PEL)
// and consumers.

func init() {
	sub := func(arity int, flags Flag, since, complexity, summary string, h func(*Ctx)) *Command {
		return &Command{Arity: arity, Flags: flags, FirstKey: 2, LastKey: 2, Step: 1, Since: since,
			Complexity: complexity, Summary: summary, Handler: h}
	}
	stream := func(name string, arity int, flags Flag, since, complexity, summary string, h func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "stream", Since: since, Complexity: complexity, Summary: summary, Handler: h}
	}
	register(
		&Command{Name: "xgroup", Arity: -2, Group: "stream", Since: "5.0.0", Complexity: "Depends on subcommand.",
			Summary: "A container for consumer groups commands.",
			Subcommands: map[string]*Command{
				"create":         sub(-5, FlagWrite|FlagDenyOOM, "5.0.0", "O(1)", "Creates a consumer group.", xgroupCreateCmd),
				"setid":          sub(-5, FlagWrite, "5.0.0", "O(1)", "Sets the last-delivered ID of a consumer group.", xgroupSetIDCmd),
				"destroy":        sub(4, FlagWrite, "5.0.0", "O(N) where N is the number of entries in the group's pending entries list (PEL).", "Destroys a consumer group.", xgroupDestroyCmd),
				"createconsumer": sub(5, FlagWrite|FlagDenyOOM, "6.2.0", "O(1)", "Creates a consumer in a consumer group.", xgroupCreateConsumerCmd),
				"delconsumer":    sub(5, FlagWrite, "5.0.0", "O(1)", "Deletes a consumer from a consumer group.", xgroupDelConsumerCmd),
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: xgroupHelpCmd},
			}},
		&Command{Name: "xreadgroup", Arity: -7, Flags: FlagWrite | FlagBlocking | FlagMovableKeys, Keys: xreadKeys(true),
			Keyword: "STREAMS", KeywordFrom: 4,
			Group: "stream", Since: "5.0.0", Complexity: "For each stream mentioned: O(M) with M the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
			Summary: "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.", Handler: xreadgroupCmd},
		stream("xack", -4, FlagWrite|FlagFast, "5.0.0", "O(1) for each message ID processed.", "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", xackCmd),
		stream("xpending", -3, FlagReadonly, "5.0.0", "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.", "Returns the information and entries from a stream consumer group's pending entries list.", xpendingCmd),
		stream("xclaim", -6, FlagWrite|FlagFast, "5.0.0", "O(log N) with N being the number of messages in the PEL of the consumer group.", "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", xclaimCmd),
		stream("xautoclaim", -6, FlagWrite|FlagFast, "6.2.0", "O(1) if COUNT is small.", "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", xautoclaimCmd),
	)
}

var xgroupHelp = []string{
	"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
	"HELP",
	"    Prints this help.",
}

func xgroupHelpCmd(c *Ctx) { helpLines(c, xgroupHelp) }

const errXGroupNoKey Error = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."

// xgroupOpts parses CREATE's and SETID's options after the id: MKSTREAM (CREATE only) and
// ENTRIESREAD.
func xgroupOpts(c *Ctx, create bool) (mkstream bool, entriesRead int64, err error) {
	entriesRead = streamInvalidEntriesRead
	for i := 5; i < len(c.Args); {
		switch {
		case create && is(c.Args[i], "MKSTREAM"):
			mkstream = true
			i++
		case len(c.Args)-i >= 2 && is(c.Args[i], "ENTRIESREAD"):
			n, ok := ParseInt(c.Args[i+1])
			if !ok {
				return false, 0, ErrNotInt
			}
			if n < 0 && n != streamInvalidEntriesRead {
				return false, 0, Error("ERR value for ENTRIESREAD must be positive or -1")
			}
			entriesRead = n
			i += 2
		default:
			return false, 0, subSyntaxErr(c)
		}
	}
	return mkstream, entriesRead, nil
}

func xgroupCreateCmd(c *Ctx) {
	mkstream, entriesRead, err := xgroupOpts(c, true)
	if err != nil {
		c.Err(err)
		return
	}
	key, name := c.Args[2], c.Args[3]
	err = updateStream(c, key, func(s *streamValue, exists bool) (bool, error) {
		// Redis checks the key before the argument count.
		if !exists && !mkstream {
			return false, errXGroupNoKey
		}
		if len(c.Args) > 8 {
			return false, subSyntaxErr(c)
		}
		var id streamID
		if string(c.Args[4]) == "$" {
			id = s.lastID
		} else {
			var err error
			if id, err = parseStreamID(c.Args[4], 0, true, nil); err != nil {
				return false, err
			}
		}
		if s.group(name) != nil {
			return false, Error("BUSYGROUP Consumer Group name already exists")
		}
		s.addGroup(&streamGroup{name: string(name), lastID: id, entriesRead: entriesRead})
		return true, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.Notify(pubsub.Stream, "xgroup-create", key)
	c.OK()
}

// updateGroup runs fn on the group named by argument 3 of the stream at argument 2 (XGROUP
// SETID, DESTROY, CREATECONSUMER, DELCONSUMER): an error when the key does not exist, g nil when
// the group does not.
func updateGroup(c *Ctx, needGroup bool, fn func(s *streamValue, g *streamGroup) (bool, error)) error {
	key, name := c.Args[2], c.Args[3]
	return updateStream(c, key, func(s *streamValue, exists bool) (bool, error) {
		if !exists {
			return false, errXGroupNoKey
		}
		g := s.group(name)
		if g == nil && needGroup {
			return false, errNoGroup(key, name)
		}
		return fn(s, g)
	})
}

func xgroupSetIDCmd(c *Ctx) {
	_, entriesRead, err := xgroupOpts(c, false)
	if err != nil {
		c.Err(err)
		return
	}
	err = updateGroup(c, true, func(s *streamValue, g *streamGroup) (bool, error) {
		// Redis checks the key and the group before the argument count.
		if len(c.Args) != 5 && len(c.Args) != 7 {
			return false, subSyntaxErr(c)
		}
		id := s.lastID
		if string(c.Args[4]) != "$" {
			var err error
			if id, err = parseStreamID(c.Args[4], 0, false, nil); err != nil {
				return false, err
			}
		}
		g.lastID, g.entriesRead = id, entriesRead
		return true, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.Notify(pubsub.Stream, "xgroup-setid", c.Args[2])
	c.OK()
}

func xgroupDestroyCmd(c *Ctx) {
	n := 0
	err := updateGroup(c, false, func(s *streamValue, g *streamGroup) (bool, error) {
		n = 0
		if g == nil {
			return false, nil
		}
		n = 1
		return s.delGroup(c.Args[3]), nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if n > 0 {
		c.Notify(pubsub.Stream, "xgroup-destroy", c.Args[2])
	}
	c.W.Int(int64(n))
}

func xgroupCreateConsumerCmd(c *Ctx) {
	created := false
	err := updateGroup(c, true, func(s *streamValue, g *streamGroup) (bool, error) {
		_, created = g.addConsumer(string(c.Args[4]), c.Now())
		return created, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if created {
		c.Notify(pubsub.Stream, "xgroup-createconsumer", c.Args[2])
		c.W.Int(1)
	} else {
		c.W.Int(0)
	}
}

func xgroupDelConsumerCmd(c *Ctx) {
	n := 0
	deleted := false
	err := updateGroup(c, true, func(s *streamValue, g *streamGroup) (bool, error) {
		n = g.delConsumer(string(c.Args[4]))
		deleted = n >= 0
		if n < 0 {
			n = 0
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if deleted {
		c.Notify(pubsub.Stream, "xgroup-delconsumer", c.Args[2])
	}
	c.W.Int(int64(n))
}

// errNoKeyOrGroup is XPENDING's, XCLAIM's and XAUTOCLAIM's error for a missing key or group.
func errNoKeyOrGroup(key, group []byte) Error {
	return Error("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(group) + "'")
}

const errDollarGroup Error = "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."

// effectOf is the effect of XREADGROUP serving its i-th key: the same read of that key alone
// (without BLOCK: a follower never waits).
func (a *xreadArgs) effectOf(i int) [][]byte {
	eff := [][]byte{[]byte("XREADGROUP"), []byte("GROUP"), a.group, a.consumer}
	if a.count > 0 {
		eff = append(eff, []byte("COUNT"), strconv.AppendInt(nil, a.count, 10))
	}
	if a.noack {
		eff = append(eff, []byte("NOACK"))
	}
	return append(eff, []byte("STREAMS"), a.keys[i], a.ids[i])
}

func xreadgroupCmd(c *Ctx) {
	a, err := parseXRead(c.Args, true)
	if err != nil {
		c.Err(err)
		return
	}
	// Check every key, group and id before serving any. One key is checked by the transaction
	// that serves it, which changes nothing when a check fails.
	after := make([]streamID, len(a.keys))
	history := make([]bool, len(a.keys))
	serve := make([]bool, len(a.keys))
	single := len(a.keys) == 1
	for i, key := range a.keys {
		if single {
			switch id := a.ids[i]; string(id) {
			case "$":
				c.Err(errDollarGroup)
				return
			case ">":
			default:
				if after[i], err = parseStreamID(id, 0, true, nil); err != nil {
					c.Err(err)
					return
				}
				history[i] = true
			}
			serve[i] = true
			break
		}
		var g *streamGroup
		var last streamID
		exists := false
		err := readS(c, key, func(v *sview) error {
			g, exists = nil, v.exists
			if !v.exists {
				return nil
			}
			if err := v.groups(); err != nil {
				return err
			}
			if g = v.value(nil).group(a.group); g == nil || string(a.ids[i]) != ">" {
				return nil
			}
			var err error
			last, err = v.lastEntry()
			return err
		})
		switch {
		case c.Retrying && (!exists || err == ErrWrongType):
			c.Err(Error("UNBLOCKED the stream key no longer exists"))
			return
		case err != nil:
			c.Err(err)
			return
		}
		switch {
		case g == nil && c.Retrying:
			c.Err(Error("NOGROUP the consumer group this client was blocked on no longer exists"))
			return
		case g == nil:
			c.Err(Error("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(a.group) + "' in XREADGROUP with GROUP option"))
			return
		}
		switch id := a.ids[i]; string(id) {
		case "$":
			c.Err(errDollarGroup)
			return
		case ">":
			// Served now when the stream has entries after the group's last delivered one.
			serve[i] = !last.isZero() && g.lastID.less(last)
		default:
			if after[i], err = parseStreamID(id, 0, true, nil); err != nil {
				c.Err(err)
				return
			}
			history[i], serve[i] = true, true
		}
	}
	var rs []streamResult
	for i, key := range a.keys {
		if !serve[i] {
			continue
		}
		r := streamResult{key: key, history: history[i]}
		empty := false
		newConsumer := false
		err := updateS(c, key, func(v *sview) (bool, error) {
			if !single {
				// Each key is served by a transaction of its own: each states what it did.
				c.Propagate(a.effectOf(i))
			}
			newConsumer = false
			r.entries, r.ids, empty = r.entries[:0], r.ids[:0], false
			var g *streamGroup
			if v.exists {
				if err := v.groups(); err != nil {
					return false, err
				}
				g = v.value(nil).group(a.group)
			}
			switch {
			case single && c.Retrying && !v.exists:
				return false, Error("UNBLOCKED the stream key no longer exists")
			case single && c.Retrying && g == nil:
				return false, Error("NOGROUP the consumer group this client was blocked on no longer exists")
			case g == nil:
				return false, Error("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(a.group) + "' in XREADGROUP with GROUP option")
			}
			if single && !r.history {
				// Served only when the stream has entries after the group's last delivered one.
				last, err := v.lastEntry()
				if err != nil {
					return false, err
				}
				if last.isZero() || !g.lastID.less(last) {
					empty = true
					return false, nil
				}
			}
			now := c.Now()
			cons, created := g.addConsumer(string(a.consumer), now)
			cons.seenTime = now
			newConsumer = created
			if r.history {
				start, ok := after[i].next()
				if !ok {
					return true, nil
				}
				i0, _ := g.pendingAt(start)
				for j := i0; j < len(g.pel) && (a.count == 0 || int64(len(r.ids)) < a.count); j++ {
					p := &g.pel[j]
					if p.consumer != cons.name {
						continue
					}
					e, err := v.entry(p.id)
					if err != nil {
						return false, err
					}
					if e != nil {
						p.deliveryTime = now
						p.deliveryCount++
					}
					r.ids = append(r.ids, p.id)
					r.entries = append(r.entries, e)
				}
				v.cgDirty = true
				return true, nil
			}
			v.cgDirty = true
			start, ok := g.lastID.next()
			if !ok {
				return true, nil
			}
			var err error
			if r.entries, err = v.rangeEntries(start, maxStreamID, a.count, false); err != nil {
				return false, err
			}
			s := v.value(nil)
			for _, e := range r.entries {
				s.delivered(g, e.id)
				if !a.noack {
					g.addPending(e.id, cons.name, now)
				}
			}
			return true, nil
		})
		if single && c.Retrying && err == ErrWrongType {
			err = Error("UNBLOCKED the stream key no longer exists")
		}
		if err != nil {
			c.Err(err)
			return
		}
		if newConsumer {
			c.Notify(pubsub.Stream, "xgroup-createconsumer", key)
		}
		if !empty {
			rs = append(rs, r)
		}
	}
	if len(rs) > 0 {
		writeStreamResults(c, rs)
		return
	}
	if a.block && blockOn(c, a.keys, a.deadline) {
		return
	}
	c.W.NullArray()
}

// lookupGroupForUpdate finds the group of a stream for XACK, XCLAIM and XAUTOCLAIM.
func lookupGroup(s *streamValue, exists bool, name []byte) *streamGroup {
	if !exists {
		return nil
	}
	return s.group(name)
}

func xackCmd(c *Ctx) {
	n := 0
	err := updateS(c, c.Args[1], func(v *sview) (bool, error) {
		n = 0
		if !v.exists {
			return false, nil
		}
		if err := v.groups(); err != nil {
			return false, err
		}
		g := v.value(nil).group(c.Args[2])
		if g == nil {
			return false, nil
		}
		ids := make([]streamID, 0, len(c.Args)-3)
		for _, a := range c.Args[3:] {
			id, err := parseStreamID(a, 0, true, nil)
			if err != nil {
				return false, err
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			if g.ack(id) {
				n++
			}
		}
		v.cgDirty = n > 0
		return n > 0, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Int(int64(n))
}

func xpendingCmd(c *Ctx) {
	argc := len(c.Args)
	if argc != 3 && (argc < 6 || argc > 9) {
		c.Err(ErrSyntax)
		return
	}
	var start, end streamID
	var count, minIdle int64
	var consumer []byte
	if argc >= 6 {
		at := 3
		if is(c.Args[3], "IDLE") {
			n, ok := ParseInt(c.Args[4])
			if !ok {
				c.Err(ErrNotInt)
				return
			}
			if argc < 8 {
				c.Err(ErrSyntax)
				return
			}
			minIdle = n
			at += 2
		}
		n, ok := ParseInt(c.Args[at+2])
		if !ok {
			c.Err(ErrNotInt)
			return
		}
		count = max(n, 0)
		var ex bool
		var err error
		if start, ex, err = parseIntervalID(c.Args[at], 0); err != nil {
			c.Err(err)
			return
		}
		if ex {
			if start, ok = start.next(); !ok {
				c.Err(Error("ERR invalid start ID for the interval"))
				return
			}
		}
		if end, ex, err = parseIntervalID(c.Args[at+1], math.MaxUint64); err != nil {
			c.Err(err)
			return
		}
		if ex {
			if end, ok = end.prev(); !ok {
				c.Err(Error("ERR invalid end ID for the interval"))
				return
			}
		}
		if at+3 < argc {
			consumer = c.Args[at+3]
		}
	}
	s, err := readStream(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	var g *streamGroup
	if s != nil {
		g = s.group(c.Args[2])
	}
	if g == nil {
		c.Err(errNoKeyOrGroup(c.Args[1], c.Args[2]))
		return
	}
	if argc == 3 {
		c.W.Array(4)
		c.W.Int(int64(len(g.pel)))
		if len(g.pel) == 0 {
			c.W.Null()
			c.W.Null()
			c.W.NullArray()
			return
		}
		c.W.BulkString(g.pel[0].id.String())
		c.W.BulkString(g.pel[len(g.pel)-1].id.String())
		n := 0
		for _, cons := range g.consumers {
			if g.pendingOf(cons.name) > 0 {
				n++
			}
		}
		c.W.Array(n)
		for _, cons := range g.consumers {
			if p := g.pendingOf(cons.name); p > 0 {
				c.W.Array(2)
				c.W.BulkString(cons.name)
				c.W.BulkString(strconv.Itoa(p))
			}
		}
		return
	}
	if consumer != nil && g.consumer(string(consumer)) == nil {
		c.W.Array(0)
		return
	}
	now := c.Now()
	var out []*streamPending
	i0, _ := g.pendingAt(start)
	for j := i0; j < len(g.pel) && count > 0 && g.pel[j].id.cmp(end) <= 0; j++ {
		p := &g.pel[j]
		if consumer != nil && p.consumer != string(consumer) {
			continue
		}
		if minIdle != 0 && now-p.deliveryTime < minIdle {
			continue
		}
		out = append(out, p)
		count--
	}
	c.W.Array(len(out))
	for _, p := range out {
		c.W.Array(4)
		c.W.BulkString(p.id.String())
		c.W.BulkString(p.consumer)
		c.W.Int(max(now-p.deliveryTime, 0))
		c.W.Int(int64(p.deliveryCount))
	}
}

// claimed is one entry XCLAIM or XAUTOCLAIM gave the consumer: nil e when the entry is gone.
type claimed struct {
	id streamID
	e  *streamEntry
}

// writeClaimed replies with claimed entries, or their ids only (JUSTID).
func writeClaimed(c *Ctx, cl []claimed, justID bool) {
	c.W.Array(len(cl))
	for _, x := range cl {
		switch {
		case justID:
			c.W.BulkString(x.id.String())
		case x.e == nil:
			c.W.Null()
		default:
			writeEntry(c, x.e)
		}
	}
}

// entry returns the entry id of s, or nil.
func (s *streamValue) entry(id streamID) *streamEntry {
	if i := s.search(id); i < len(s.entries) && s.entries[i].id == id {
		return &s.entries[i]
	}
	return nil
}

// claim gives the pending entry at PEL position i to consumer, as XCLAIM and XAUTOCLAIM do,
// and reports whether it created the consumer.
func (g *streamGroup) claim(i int, consumer string, deliveryTime, retryCount int64, justID bool, now int64) bool {
	c, created := g.addConsumer(consumer, now)
	c.seenTime = now
	p := &g.pel[i]
	p.consumer = consumer
	p.deliveryTime = deliveryTime
	switch {
	case retryCount >= 0:
		p.deliveryCount = uint64(retryCount)
	case !justID:
		p.deliveryCount++
	}
	return created
}

func xclaimCmd(c *Ctx) {
	minIdle, ok := ParseInt(c.Args[4])
	var cl []claimed
	justID, newConsumer := false, false
	err := updateStream(c, c.Args[1], func(s *streamValue, exists bool) (bool, error) {
		cl, newConsumer = cl[:0], false
		g := lookupGroup(s, exists, c.Args[2])
		if g == nil {
			return false, errNoKeyOrGroup(c.Args[1], c.Args[2])
		}
		if !ok {
			return false, Error("ERR Invalid min-idle-time argument for XCLAIM")
		}
		minIdle = max(minIdle, 0)
		var ids []streamID
		j := 5
		for ; j < len(c.Args); j++ {
			id, err := parseStreamID(c.Args[j], 0, true, nil)
			if err != nil {
				break
			}
			ids = append(ids, id)
		}
		now := c.Now()
		deliveryTime, retryCount := int64(-1), int64(-1)
		force := false
		var lastID streamID
		for ; j < len(c.Args); j++ {
			more := j+1 < len(c.Args)
			opt := c.Args[j]
			switch {
			case is(opt, "FORCE"):
				force = true
			case is(opt, "JUSTID"):
				justID = true
			case is(opt, "IDLE") && more:
				j++
				n, ok := ParseInt(c.Args[j])
				if !ok {
					return false, Error("ERR Invalid IDLE option argument for XCLAIM")
				}
				deliveryTime = now - n
			case is(opt, "TIME") && more:
				j++
				n, ok := ParseInt(c.Args[j])
				if !ok {
					return false, Error("ERR Invalid TIME option argument for XCLAIM")
				}
				deliveryTime = n
			case is(opt, "RETRYCOUNT") && more:
				j++
				n, ok := ParseInt(c.Args[j])
				if !ok {
					return false, Error("ERR Invalid RETRYCOUNT option argument for XCLAIM")
				}
				retryCount = n
			case is(opt, "LASTID") && more:
				j++
				id, err := parseStreamID(c.Args[j], 0, true, nil)
				if err != nil {
					return false, err
				}
				lastID = id
			default:
				return false, Error("ERR Unrecognized XCLAIM option '" + string(opt) + "'")
			}
		}
		changed := false
		if g.lastID.less(lastID) {
			g.lastID, changed = lastID, true
		}
		if deliveryTime < 0 || deliveryTime > now {
			deliveryTime = now
		}
		for _, id := range ids {
			i, pending := g.pendingAt(id)
			e := s.entry(id)
			if e == nil {
				if pending {
					g.pel = append(g.pel[:i], g.pel[i+1:]...)
					changed = true
				}
				continue
			}
			if !pending {
				if !force {
					continue
				}
				// A new PEL entry, delivered once, whatever the idle time.
				g.pel = append(g.pel, streamPending{})
				copy(g.pel[i+1:], g.pel[i:])
				g.pel[i] = streamPending{id: id, deliveryTime: now, deliveryCount: 1}
			} else if minIdle > 0 && now-g.pel[i].deliveryTime < minIdle {
				continue
			}
			newConsumer = g.claim(i, string(c.Args[3]), deliveryTime, retryCount, justID, now) || newConsumer
			cl = append(cl, claimed{id: id, e: e})
			changed = true
		}
		return changed, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if newConsumer {
		c.Notify(pubsub.Stream, "xgroup-createconsumer", c.Args[1])
	}
	writeClaimed(c, cl, justID)
}

func xautoclaimCmd(c *Ctx) {
	minIdle, ok := ParseInt(c.Args[4])
	if !ok {
		c.Err(Error("ERR Invalid min-idle-time argument for XAUTOCLAIM"))
		return
	}
	minIdle = max(minIdle, 0)
	start, ex, err := parseIntervalID(c.Args[5], 0)
	if err != nil {
		c.Err(err)
		return
	}
	if ex {
		if start, ok = start.next(); !ok {
			c.Err(Error("ERR invalid start ID for the interval"))
			return
		}
	}
	count, justID := int64(100), false
	for j := 6; j < len(c.Args); j++ {
		switch {
		case is(c.Args[j], "COUNT") && j+1 < len(c.Args):
			n, ok := ParseInt(c.Args[j+1])
			if !ok || n < 1 || n > math.MaxInt64/16 {
				c.Err(Error("ERR COUNT must be > 0"))
				return
			}
			count = n
			j++
		case is(c.Args[j], "JUSTID"):
			justID = true
		default:
			c.Err(ErrSyntax)
			return
		}
	}
	var cl []claimed
	var deleted []streamID
	var cursor streamID
	newConsumer := false
	err = updateStream(c, c.Args[1], func(s *streamValue, exists bool) (bool, error) {
		cl, deleted, cursor, newConsumer = cl[:0], deleted[:0], streamID{}, false
		g := lookupGroup(s, exists, c.Args[2])
		if g == nil {
			return false, errNoKeyOrGroup(c.Args[1], c.Args[2])
		}
		now := c.Now()
		attempts, left := count*10, count
		i, _ := g.pendingAt(start)
		for attempts > 0 && left > 0 && i < len(g.pel) {
			attempts--
			p := &g.pel[i]
			e := s.entry(p.id)
			if e == nil {
				deleted = append(deleted, p.id)
				g.pel = append(g.pel[:i], g.pel[i+1:]...)
				left--
				continue
			}
			if minIdle > 0 && now-p.deliveryTime < minIdle {
				i++
				continue
			}
			newConsumer = g.claim(i, string(c.Args[3]), now, -1, justID, now) || newConsumer
			cl = append(cl, claimed{id: p.id, e: e})
			left--
			i++
		}
		if i < len(g.pel) {
			cursor = g.pel[i].id
		}
		return len(cl)+len(deleted) > 0, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if newConsumer {
		c.Notify(pubsub.Stream, "xgroup-createconsumer", c.Args[1])
	}
	c.W.Array(3)
	c.W.BulkString(cursor.String())
	writeClaimed(c, cl, justID)
	c.W.Array(len(deleted))
	for _, id := range deleted {
		c.W.BulkString(id.String())
	}
}
