package commands

import (
	"math"
	"time"
)

// XREAD and XREADGROUP. Each key is read (XREAD) or updated (XREADGROUP) on its own: a read
// of several streams is not one snapshot of all of them, as it is in Redis.

func init() {
	register(
		&Command{Name: "xread", Arity: -4, Flags: FlagReadonly | FlagBlocking | FlagMovableKeys, Keys: xreadKeys(false),
			Keyword: "STREAMS", KeywordFrom: 1,
			Group: "stream", Since: "5.0.0", Complexity: "For each stream mentioned: O(M) with M the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREAD blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
			Summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.", Handler: xreadCmd},
	)
}

// xreadArgs are XREAD's and XREADGROUP's arguments.
type xreadArgs struct {
	count     int64 // 0: no limit
	block     bool
	deadline  time.Time
	group     []byte
	consumer  []byte
	noack     bool
	streamsAt int // position of the first key
	keys, ids [][]byte
}

// parseXRead parses XREAD's or XREADGROUP's options, as Redis's xreadCommand.
func parseXRead(args [][]byte, xreadgroup bool) (a xreadArgs, err error) {
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		o := args[i]
		switch {
		case is(o, "BLOCK") && more > 0:
			i++
			ms, ok := ParseInt(args[i])
			if !ok {
				return a, Error("ERR timeout is not an integer or out of range")
			}
			if ms < 0 {
				return a, Error("ERR timeout is negative")
			}
			now := time.Now()
			if ms > math.MaxInt64-now.UnixMilli() {
				return a, Error("ERR timeout is out of range")
			}
			a.block = true
			a.deadline = time.Time{}
			if ms > 0 {
				a.deadline = now.Add(time.Duration(ms) * time.Millisecond)
			}
		case is(o, "COUNT") && more > 0:
			i++
			n, ok := ParseInt(args[i])
			if !ok {
				return a, ErrNotInt
			}
			a.count = max(n, 0)
		case is(o, "STREAMS") && more > 0:
			a.streamsAt = i + 1
			n := len(args) - a.streamsAt
			if n%2 != 0 {
				// Redis 7.0 says XREAD and '$' for XREADGROUP too.
				return a, Error("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
			}
			a.keys = args[a.streamsAt : a.streamsAt+n/2]
			a.ids = args[a.streamsAt+n/2:]
			i = len(args)
		case is(o, "GROUP") && more >= 2:
			if !xreadgroup {
				return a, Error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
			}
			a.group, a.consumer = args[i+1], args[i+2]
			i += 2
		case is(o, "NOACK"):
			if !xreadgroup {
				return a, Error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
			}
			a.noack = true
		default:
			return a, ErrSyntax
		}
	}
	if a.streamsAt == 0 {
		return a, ErrSyntax
	}
	if xreadgroup && a.group == nil {
		return a, Error("ERR Missing GROUP option for XREADGROUP")
	}
	return a, nil
}

func xreadKeys(xreadgroup bool) func([][]byte) ([]int, error) {
	return func(args [][]byte) ([]int, error) {
		a, err := parseXRead(args, xreadgroup)
		if err != nil {
			return nil, err
		}
		out := make([]int, len(a.keys))
		for i := range out {
			out[i] = a.streamsAt + i
		}
		return out, nil
	}
}

// streamResult is what a read found in one stream: entries, or for XREADGROUP's history ids
// and nil entries for ids no longer in the stream.
type streamResult struct {
	key     []byte
	entries []*streamEntry
	ids     []streamID // history: the ids, with entries[i] nil when the entry is gone
	history bool
}

// writeStreamResults replies with what a read found: an array of [key, entries] pairs, a map
// in RESP3.
func writeStreamResults(c *Ctx, rs []streamResult) {
	if c.W.Proto() == 3 {
		c.W.Map(len(rs))
	} else {
		c.W.Array(len(rs))
	}
	for _, r := range rs {
		if c.W.Proto() != 3 {
			c.W.Array(2)
		}
		c.W.Bulk(r.key)
		if r.history {
			c.W.Array(len(r.ids))
			for i, id := range r.ids {
				if r.entries[i] == nil {
					c.W.Array(2)
					c.W.BulkString(id.String())
					c.W.NullArray()
				} else {
					writeEntry(c, r.entries[i])
				}
			}
			continue
		}
		c.W.Array(len(r.entries))
		for _, e := range r.entries {
			writeEntry(c, e)
		}
	}
}

func xreadCmd(c *Ctx) {
	a, err := parseXRead(c.Args, false)
	if err != nil {
		c.Err(err)
		return
	}
	after := make([]streamID, len(a.keys))
	dollar := false
	var rs []streamResult
	var missing [][]byte
	for i, key := range a.keys {
		var es []*streamEntry
		id := a.ids[i]
		// after resolves the key's id: the stream's last id for "$" (exists false: none).
		resolve := func(last streamID, exists bool) error {
			switch {
			case string(id) == "$":
				dollar = true
				if exists {
					after[i] = last
				}
			case string(id) == ">":
				return Error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
			default:
				var err error
				if after[i], err = parseStreamID(id, 0, true, nil); err != nil {
					return err
				}
			}
			return nil
		}
		exists := true
		err := readS(c, key, func(v *sview) error {
			es, exists = nil, v.exists
			if err := resolve(v.header().lastID, v.exists); err != nil || !v.exists {
				return err
			}
			start, ok := after[i].next()
			if !ok {
				return nil
			}
			var err error
			es, err = v.rangeEntries(start, maxStreamID, a.count, false)
			return err
		})
		if c.Retrying && err == ErrWrongType {
			// A blocked XREAD keeps waiting on a key that now holds another type, as Redis's
			// does.
			err = resolve(streamID{}, false)
		}
		if err != nil {
			c.Err(err)
			return
		}
		if !exists {
			missing = append(missing, key)
		}
		if len(es) > 0 {
			rs = append(rs, streamResult{key: key, entries: es})
		}
	}
	// Redis's XREAD looks every key up twice, to check the ids and then to serve them (both
	// lookupKeyRead): a missing key states keymiss in each pass (readS stated the first).
	for _, key := range missing {
		c.KeyMiss(key)
	}
	if len(rs) > 0 {
		writeStreamResults(c, rs)
		return
	}
	if a.block && blockOn(c, a.keys, a.deadline) {
		if dollar {
			// Run again with "$" replaced by the last id it stood for now.
			args := make([][]byte, len(c.Args))
			copy(args, c.Args)
			for i := range a.ids {
				if string(a.ids[i]) == "$" {
					args[a.streamsAt+len(a.keys)+i] = []byte(after[i].String())
				}
			}
			c.Block.Args = args
		}
		return
	}
	c.W.NullArray()
}
