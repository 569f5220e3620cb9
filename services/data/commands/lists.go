package commands

import (
	"math"
	"math/big"
	"time"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

const typeList = keyspace.TypeList

func init() {
	list := func(name string, arity int, flags Flag, since, complexity, summary string, h func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "list", Since: since, Complexity: complexity, Summary: summary, Handler: h}
	}
	keys := func(c *Command, last int) *Command { c.LastKey = last; return c }
	w, r := FlagWrite|FlagDenyOOM|FlagFast, FlagReadonly
	register(
		list("lpush", -3, w, "1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.", "Prepends one or more elements to a list. Creates the key if it doesn't exist.", lpushCmd),
		list("rpush", -3, w, "1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.", "Appends one or more elements to a list. Creates the key if it doesn't exist.", rpushCmd),
		list("lpushx", -3, w, "2.2.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.", "Prepends one or more elements to a list only when the list exists.", lpushxCmd),
		list("rpushx", -3, w, "2.2.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.", "Appends an element to a list only when the list exists.", rpushxCmd),
		list("lpop", -2, FlagWrite|FlagFast, "1.0.0", "O(N) where N is the number of elements returned", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", lpopCmd),
		list("rpop", -2, FlagWrite|FlagFast, "1.0.0", "O(N) where N is the number of elements returned", "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", rpopCmd),
		list("llen", 2, r|FlagFast, "1.0.0", "O(1)", "Returns the length of a list.", llenCmd),
		list("lrange", 4, r, "1.0.0", "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.", "Returns a range of elements from a list.", lrangeCmd),
		list("lindex", 3, r, "1.0.0", "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).", "Returns an element from a list by its index.", lindexCmd),
		list("lset", 4, FlagWrite|FlagDenyOOM, "1.0.0", "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).", "Sets the value of an element in a list by its index.", lsetCmd),
		list("linsert", 5, FlagWrite|FlagDenyOOM, "2.2.0", "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).", "Inserts an element before or after another element in a list.", linsertCmd),
		list("lrem", 4, FlagWrite, "1.0.0", "O(N+M) where N is the length of the list and M is the number of elements removed.", "Removes elements from a list. Deletes the list if the last element was removed.", lremCmd),
		list("ltrim", 4, FlagWrite, "1.0.0", "O(N) where N is the number of elements to be removed by the operation.", "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", ltrimCmd),
		list("lpos", -3, r, "6.0.6", "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.", "Returns the index of matching elements in a list.", lposCmd),
		keys(list("lmove", 5, FlagWrite|FlagDenyOOM, "6.2.0", "O(1)", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", lmoveCmd), 2),
		keys(list("rpoplpush", 3, FlagWrite|FlagDenyOOM, "1.2.0", "O(1)", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", rpoplpushCmd), 2),
		movableKeys(list("lmpop", -4, FlagWrite, "7.0.0", "O(N+M) where N is the number of provided keys and M is the number of elements returned.", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", lmpopCmd), 1, lmpopKeys(1)),
		keys(list("blpop", -3, FlagWrite|FlagBlocking, "2.0.0", "O(N) where N is the number of provided keys.", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", blpopCmd), -2),
		keys(list("brpop", -3, FlagWrite|FlagBlocking, "2.0.0", "O(N) where N is the number of provided keys.", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", brpopCmd), -2),
		keys(list("blmove", 6, FlagWrite|FlagDenyOOM|FlagBlocking, "6.2.0", "O(1)", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", blmoveCmd), 2),
		keys(list("brpoplpush", 4, FlagWrite|FlagDenyOOM|FlagBlocking, "2.2.0", "O(1)", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", brpoplpushCmd), 2),
		movableKeys(list("blmpop", -5, FlagWrite|FlagBlocking, "7.0.0", "O(N+M) where N is the number of provided keys and M is the number of elements returned.", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", blmpopCmd), 2, lmpopKeys(2)),
	)
}

func newList() *listValue { return &listValue{} }

func readList(c *Ctx, key []byte) (*listValue, error) {
	l, _, err := readValue(c, key, typeList, decodeList)
	return l, err
}

func updateList(c *Ctx, key []byte, fn func(l *listValue, exists bool) (bool, error)) error {
	return updateValue(c, key, typeList, decodeList, newList, fn)
}

func pushCmd(c *Ctx, left, onlyIfExists bool) {
	var n int
	err := c.KS.Update(c.Sess, []kspKey{{DB: c.DB(), Key: c.Args[1]}}, func(tx *keyspace.Tx) error {
		n = 0
		v, err := openList(tx, 0)
		if err != nil || onlyIfExists && !v.exists {
			return err
		}
		n, err = pushEnd(c, tx, 0, v, left, c.Args[2:]...)
		return err
	})
	if err != nil {
		c.Err(err)
		return
	}
	if n > 0 {
		c.Notify(pubsub.List, pushEvent(left), c.Args[1])
	}
	c.W.Int(int64(n))
}

func lpushCmd(c *Ctx)  { pushCmd(c, true, false) }
func rpushCmd(c *Ctx)  { pushCmd(c, false, false) }
func lpushxCmd(c *Ctx) { pushCmd(c, true, true) }
func rpushxCmd(c *Ctx) { pushCmd(c, false, true) }

// popCmd is LPOP and RPOP, as Redis's popGenericCommand.
func popCmd(c *Ctx, left bool) {
	if len(c.Args) > 3 {
		c.Err(ArityError(c.Cmd))
		return
	}
	count := int64(-1)
	if len(c.Args) == 3 {
		n, ok := ParseInt(c.Args[2])
		if !ok || n < 0 {
			c.Err(errPositive)
			return
		}
		count = n
	}
	var popped [][]byte
	found := false
	err := c.KS.Update(c.Sess, []kspKey{{DB: c.DB(), Key: c.Args[1]}}, func(tx *keyspace.Tx) error {
		popped, found = nil, false
		v, err := openList(tx, 0)
		if err != nil {
			return err
		}
		found = v.exists
		if !v.exists || count == 0 {
			return nil
		}
		popped, err = popEnd(c, tx, 0, v, left, int(min(count, math.MaxInt32)))
		return err
	})
	if err == nil && len(popped) > 0 {
		c.Notify(pubsub.List, popEvent(left), c.Args[1])
	}
	switch {
	case err != nil:
		c.Err(err)
	case !found && count >= 0:
		c.W.NullArray()
	case !found:
		c.W.Null()
	case count < 0:
		c.W.Bulk(popped[0])
	default:
		c.W.Array(len(popped))
		for _, e := range popped {
			c.W.Bulk(e)
		}
	}
}

func lpopCmd(c *Ctx) { popCmd(c, true) }
func rpopCmd(c *Ctx) { popCmd(c, false) }

func llenCmd(c *Ctx) {
	n := 0
	err := readListView(c, c.Args[1], func(v *listView, _ func(int, int) error) error {
		n = v.n
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Int(int64(n))
}

func lrangeCmd(c *Ctx) {
	start, ok1 := ParseInt(c.Args[2])
	stop, ok2 := ParseInt(c.Args[3])
	if !ok1 || !ok2 {
		c.Err(ErrNotInt)
		return
	}
	var out [][]byte
	err := readListView(c, c.Args[1], func(v *listView, load func(int, int) error) error {
		out = nil
		from, to := spanIn(v.n, start, stop)
		if from >= to {
			return nil
		}
		if err := load(from, to); err != nil {
			return err
		}
		out = v.l.elems[from-v.base : to-v.base]
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Array(len(out))
	for _, e := range out {
		c.W.Bulk(e)
	}
}

func lindexCmd(c *Ctx) {
	i, ok := ParseInt(c.Args[2])
	if !ok {
		c.Err(ErrNotInt)
		return
	}
	var e []byte
	err := readListView(c, c.Args[1], func(v *listView, load func(int, int) error) error {
		e = nil
		p, ok := indexIn(v.n, i)
		if !ok {
			return nil
		}
		if err := load(p, p+1); err != nil {
			return err
		}
		e = v.at(p)
		return nil
	})
	switch {
	case err != nil:
		c.Err(err)
	case e == nil:
		c.W.Null()
	default:
		c.W.Bulk(e)
	}
}

func lsetCmd(c *Ctx) {
	err := updateListView(c, c.Args[1], func(tx *keyspace.Tx, v *listView) (bool, error) {
		if !v.exists {
			return false, ErrNoSuchKey
		}
		i, ok := ParseInt(c.Args[2])
		if !ok {
			return false, ErrNotInt
		}
		p, ok := indexIn(v.n, i)
		if !ok {
			return false, Error("ERR index out of range")
		}
		if err := v.load(tx, 0, p, p+1); err != nil {
			return false, err
		}
		v.l.elems[p-v.base] = c.Args[3]
		return true, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.Notify(pubsub.List, "lset", c.Args[1])
	c.OK()
}

func linsertCmd(c *Ctx) {
	var after bool
	switch {
	case is(c.Args[2], "AFTER"):
		after = true
	case is(c.Args[2], "BEFORE"):
	default:
		c.Err(ErrSyntax)
		return
	}
	var n int64
	err := updateList(c, c.Args[1], func(l *listValue, exists bool) (bool, error) {
		n = 0
		if !exists {
			return false, nil
		}
		for i, e := range l.elems {
			if string(e) == string(c.Args[3]) {
				if after {
					i++
				}
				l.elems = append(l.elems, nil)
				copy(l.elems[i+1:], l.elems[i:])
				l.elems[i] = c.Args[4]
				n = int64(l.len())
				return true, nil
			}
		}
		n = -1
		return false, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if n > 0 {
		c.Notify(pubsub.List, "linsert", c.Args[1])
	}
	c.W.Int(n)
}

func lremCmd(c *Ctx) {
	count, ok := ParseInt(c.Args[2])
	if !ok {
		c.Err(ErrNotInt)
		return
	}
	var removed int64
	err := updateList(c, c.Args[1], func(l *listValue, exists bool) (bool, error) {
		removed = 0
		if !exists {
			return false, nil
		}
		limit := count
		if limit < 0 {
			limit = -limit
		}
		keep := make([]bool, l.len())
		for k := range keep {
			keep[k] = true
		}
		for k := range l.elems {
			i := k
			if count < 0 {
				i = l.len() - 1 - k
			}
			if string(l.elems[i]) == string(c.Args[3]) && (limit == 0 || removed < limit) {
				keep[i] = false
				removed++
			}
		}
		out := l.elems[:0]
		for i, e := range l.elems {
			if keep[i] {
				out = append(out, e)
			}
		}
		l.elems = out
		return removed > 0, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if removed > 0 {
		c.Notify(pubsub.List, "lrem", c.Args[1])
	}
	c.W.Int(removed)
}

func ltrimCmd(c *Ctx) {
	start, ok1 := ParseInt(c.Args[2])
	stop, ok2 := ParseInt(c.Args[3])
	if !ok1 || !ok2 {
		c.Err(ErrNotInt)
		return
	}
	trimmed := false
	err := updateListView(c, c.Args[1], func(tx *keyspace.Tx, v *listView) (bool, error) {
		trimmed = v.exists
		if !v.exists {
			return false, nil
		}
		from, to := spanIn(v.n, start, stop)
		if from == 0 && to == v.n {
			return false, nil
		}
		if from >= to {
			v.l, v.grouped = newList(), false // all of it goes
			return true, nil
		}
		if err := v.load(tx, 0, from, to); err != nil {
			return false, err
		}
		v.l.elems = v.l.elems[from-v.base : to-v.base]
		v.keepOut = true
		return true, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if trimmed {
		// Redis states ltrim for a list that exists, even when nothing went.
		c.Notify(pubsub.List, "ltrim", c.Args[1])
	}
	c.OK()
}

// lposCmd follows Redis's lposCommand: options first, then the key.
func lposCmd(c *Ctx) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(c.Args); j++ {
		more := j+1 < len(c.Args)
		switch {
		case is(c.Args[j], "RANK") && more:
			j++
			n, ok := ParseInt(c.Args[j])
			if !ok {
				c.Err(ErrNotInt)
				return
			}
			if n == math.MinInt64 {
				c.Err(Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"))
				return
			}
			if n == 0 {
				c.Err(Error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"))
				return
			}
			rank = n
		case is(c.Args[j], "COUNT") && more:
			j++
			n, ok := ParseInt(c.Args[j])
			if !ok || n < 0 {
				c.Err(Error("ERR COUNT can't be negative"))
				return
			}
			count = n
		case is(c.Args[j], "MAXLEN") && more:
			j++
			n, ok := ParseInt(c.Args[j])
			if !ok || n < 0 {
				c.Err(Error("ERR MAXLEN can't be negative"))
				return
			}
			maxlen = n
		default:
			c.Err(ErrSyntax)
			return
		}
	}
	l, err := readList(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	if l == nil {
		if count >= 0 {
			c.W.Array(0)
		} else {
			c.W.Null()
		}
		return
	}
	fromTail := rank < 0
	if fromTail {
		rank = -rank
	}
	var found []int64
	matches := int64(0)
	for k := 0; k < l.len() && (maxlen == 0 || int64(k) < maxlen); k++ {
		i := k
		if fromTail {
			i = l.len() - 1 - k
		}
		if string(l.elems[i]) != string(c.Args[2]) {
			continue
		}
		matches++
		if matches < rank {
			continue
		}
		found = append(found, int64(i))
		if count < 0 || count > 0 && int64(len(found)) >= count {
			break
		}
	}
	if count >= 0 {
		c.W.Array(len(found))
		for _, i := range found {
			c.W.Int(i)
		}
		return
	}
	if len(found) == 0 {
		c.W.Null()
		return
	}
	c.W.Int(found[0])
}

// listSide parses LEFT or RIGHT (true for LEFT).
func listSide(b []byte) (bool, bool) {
	switch {
	case is(b, "LEFT"):
		return true, true
	case is(b, "RIGHT"):
		return false, true
	}
	return false, false
}

// move pops from src's side and pushes to dst's, as LMOVE: moved is nil when src is empty or
// missing. The source is looked at first: a missing source moves nothing whatever dst holds.
func move(c *Ctx, src, dst []byte, fromLeft, toLeft bool) (moved []byte, err error) {
	keys := []kspKey{{DB: c.DB(), Key: src}, {DB: c.DB(), Key: dst}}
	err = c.KS.Update(c.Sess, keys, func(tx *keyspace.Tx) error {
		moved = nil
		if m, ok := tx.Meta(0); !ok || c.Retrying && m.Type != typeList {
			return nil
		}
		sv, err := openList(tx, 0)
		if err != nil {
			return err
		}
		if string(src) != string(dst) {
			// WRONGTYPE for the destination before anything changes, as Redis checks it.
			if dm, ok := tx.Meta(1); ok && dm.Type != typeList {
				return ErrWrongType
			}
		}
		if string(src) == string(dst) && sv.n == 1 {
			// The one element moves onto itself: the list stays (with its TTL), rewritten as
			// Redis touches it.
			if err := sv.load(tx, 0, 0, 1); err != nil {
				return err
			}
			moved = sv.l.elems[0]
			return sv.store(c, tx, 0)
		}
		popped, err := popEnd(c, tx, 0, sv, fromLeft, 1)
		if err != nil {
			return err
		}
		moved = popped[0]
		// The destination opened after the source was stored: the same list sees the pop.
		dv, err := openList(tx, 1)
		if err != nil {
			return err
		}
		_, err = pushEnd(c, tx, 1, dv, toLeft, moved)
		return err
	})
	return moved, err
}

func lmoveCmd(c *Ctx) {
	from, ok1 := listSide(c.Args[3])
	to, ok2 := listSide(c.Args[4])
	if !ok1 || !ok2 {
		c.Err(ErrSyntax)
		return
	}
	moveReply(c, c.Args[1], c.Args[2], from, to, time.Time{}, false)
}

func rpoplpushCmd(c *Ctx) { moveReply(c, c.Args[1], c.Args[2], false, true, time.Time{}, false) }

// moveReply runs a move and replies; when it finds nothing and block is set, it blocks instead
// (see blockOn).
func moveReply(c *Ctx, src, dst []byte, from, to bool, deadline time.Time, block bool) {
	e, err := move(c, src, dst, from, to)
	if err == nil && e != nil {
		// Redis's lmoveHandlePush states the push, then the pop (and the source's del).
		c.Notify(pubsub.List, pushEvent(to), dst)
		c.Notify(pubsub.List, popEvent(from), src)
	}
	switch {
	case err != nil:
		c.Err(err)
	case e != nil:
		c.W.Bulk(e)
	case block && blockOn(c, [][]byte{src}, deadline):
	default:
		// Inside MULTI a blocking move answers as LMOVE does; its timeout (the server's) is
		// a null array.
		c.W.Null()
	}
}

// lmpopArgs parses [B]LMPOP's numkeys keys LEFT|RIGHT [COUNT count] from position at (the
// numkeys), as Redis's lmpopGenericCommand.
func lmpopArgs(args [][]byte, at int) (keys [][]byte, left bool, count int64, err error) {
	numkeys, ok := ParseInt(args[at])
	if !ok || numkeys < 1 {
		return nil, false, 0, Error("ERR numkeys should be greater than 0")
	}
	if numkeys >= int64(len(args)) {
		return nil, false, 0, ErrSyntax
	}
	where := int64(at) + numkeys + 1
	if where >= int64(len(args)) {
		return nil, false, 0, ErrSyntax
	}
	if left, ok = listSide(args[where]); !ok {
		return nil, false, 0, ErrSyntax
	}
	count = -1
	for j := int(where) + 1; j < len(args); j++ {
		if count == -1 && is(args[j], "COUNT") && j+1 < len(args) {
			j++
			if count, ok = ParseInt(args[j]); !ok || count < 1 {
				return nil, false, 0, Error("ERR count should be greater than 0")
			}
		} else {
			return nil, false, 0, ErrSyntax
		}
	}
	return args[at+1 : where], left, max(count, 1), nil
}

// lmpopKeys is [B]LMPOP's key finder, numkeys at position at.
func lmpopKeys(at int) func([][]byte) ([]int, error) {
	return func(args [][]byte) ([]int, error) {
		keys, _, _, err := lmpopArgs(args, at)
		if err != nil {
			return nil, err
		}
		out := make([]int, len(keys))
		for i := range out {
			out[i] = at + 1 + i
		}
		return out, nil
	}
}

// mpop pops up to count elements from the first non-empty list of keys: its name and the
// elements, or a nil key when every list is missing (popFirst). counted says the command takes
// a count (LMPOP, BLMPOP), which its effect states.
func mpop(c *Ctx, keys [][]byte, left bool, count int64, counted bool) (key []byte, popped [][]byte, err error) {
	key, err = popFirstKey(c, keys, typeList, func(tx *keyspace.Tx, i int) error {
		v, err := openList(tx, i)
		if err != nil {
			return err
		}
		if popped, err = popEnd(c, tx, i, v, left, int(min(count, math.MaxInt32))); err != nil {
			return err
		}
		name := "RPOP"
		if left {
			name = "LPOP"
		}
		c.Propagate(popEffect(name, keys[i], len(popped), counted))
		return nil
	})
	return key, popped, err
}

func lmpopCmd(c *Ctx) {
	keys, left, count, err := lmpopArgs(c.Args, 1)
	if err != nil {
		c.Err(err)
		return
	}
	mpopReply(c, keys, left, count, time.Time{}, false)
}

func mpopReply(c *Ctx, keys [][]byte, left bool, count int64, deadline time.Time, block bool) {
	key, popped, err := mpop(c, keys, left, count, true)
	if err == nil && key != nil {
		c.Notify(pubsub.List, popEvent(left), key)
	}
	switch {
	case err != nil:
		c.Err(err)
	case key == nil && block && blockOn(c, keys, deadline):
	case key == nil:
		c.W.NullArray()
	default:
		c.W.Array(2)
		c.W.Bulk(key)
		c.W.Array(len(popped))
		for _, e := range popped {
			c.W.Bulk(e)
		}
	}
}

// parseTimeout parses a blocking command's timeout in seconds (0: none), as Redis's
// getTimeoutFromObjectOrReply: the deadline, zero for none.
func parseTimeout(c *Ctx, arg []byte) (time.Time, error) {
	f, ok := ParseLongDouble(arg)
	if !ok {
		return time.Time{}, Error("ERR timeout is not a float or out of range")
	}
	// Redis takes (long long)ceill(timeout * 1000); past a long long's range (inf too) the
	// conversion gives its minimum, a negative timeout.
	negative := Error("ERR timeout is negative")
	if f.IsInf() {
		return time.Time{}, negative
	}
	msf := new(big.Float).Mul(f, big.NewFloat(1000))
	if msf.Cmp(new(big.Float).SetFloat64(math.MaxInt64)) >= 0 || msf.Cmp(new(big.Float).SetFloat64(math.MinInt64)) < 0 {
		return time.Time{}, negative
	}
	// Rounded up to the millisecond (ceill), so 0.0001 waits a millisecond and -0.0001 for
	// ever.
	ms, acc := msf.Int64()
	if acc == big.Below {
		ms++
	}
	switch {
	case ms < 0:
		return time.Time{}, negative
	case ms == 0, ms > maxTimeoutMs:
		return time.Time{}, nil // none, or beyond any wait that could end
	}
	return time.Now().Add(time.Duration(ms) * time.Millisecond), nil
}

// maxTimeoutMs is the longest timeout kept as a deadline (a century); a longer one waits
// without limit, as it would in practice.
const maxTimeoutMs = 100 * 365 * 24 * 3600 * 1000

// blockOn asks the server to block the client on keys until deadline (zero: no limit), and
// reports whether it will: not inside MULTI, where a blocking command answers at once as if
// it had timed out. A blocked command is run again when one of the keys is written.
func blockOn(c *Ctx, keys [][]byte, deadline time.Time) bool {
	if c.Client.Multi != nil || c.NoBlock {
		return false
	}
	c.Block = &BlockRequest{DB: c.DB(), Keys: keys, Deadline: deadline}
	return true
}

// bpopCmd is BLPOP and BRPOP.
func bpopCmd(c *Ctx, left bool) {
	deadline, err := parseTimeout(c, c.Args[len(c.Args)-1])
	if err != nil {
		c.Err(err)
		return
	}
	keys := c.Args[1 : len(c.Args)-1]
	key, popped, err := mpop(c, keys, left, 1, false)
	if err == nil && key != nil {
		c.Notify(pubsub.List, popEvent(left), key)
	}
	switch {
	case err != nil:
		c.Err(err)
	case key == nil && blockOn(c, keys, deadline):
	case key == nil:
		c.W.NullArray()
	default:
		c.W.Array(2)
		c.W.Bulk(key)
		c.W.Bulk(popped[0])
	}
}

func blpopCmd(c *Ctx) { bpopCmd(c, true) }
func brpopCmd(c *Ctx) { bpopCmd(c, false) }

func blmoveCmd(c *Ctx) {
	from, ok1 := listSide(c.Args[3])
	to, ok2 := listSide(c.Args[4])
	if !ok1 || !ok2 {
		c.Err(ErrSyntax)
		return
	}
	deadline, err := parseTimeout(c, c.Args[5])
	if err != nil {
		c.Err(err)
		return
	}
	moveReply(c, c.Args[1], c.Args[2], from, to, deadline, true)
}

func brpoplpushCmd(c *Ctx) {
	deadline, err := parseTimeout(c, c.Args[3])
	if err != nil {
		c.Err(err)
		return
	}
	moveReply(c, c.Args[1], c.Args[2], false, true, deadline, true)
}

func blmpopCmd(c *Ctx) {
	deadline, err := parseTimeout(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	keys, left, count, err := lmpopArgs(c.Args, 2)
	if err != nil {
		c.Err(err)
		return
	}
	mpopReply(c, keys, left, count, deadline, true)
}

// pushEvent and popEvent are the keyspace events of a push and a pop at the left or right end.
func pushEvent(left bool) string {
	if left {
		return "lpush"
	}
	return "rpush"
}

func popEvent(left bool) string {
	if left {
		return "lpop"
	}
	return "rpop"
}
