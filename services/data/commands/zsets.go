package commands

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

const typeZSet = keyspace.TypeZSet

func init() {
	z := func(name string, arity int, flags Flag, since, summary string, h func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "sorted-set", Since: since, Complexity: "O(log(N)) for a member, O(N) for the whole set (Lavik keeps a sorted set in one record: every change rewrites it)",
			Summary: summary, Handler: h}
	}
	keys := func(c *Command, last int) *Command { c.LastKey = last; return c }
	w, r := FlagWrite|FlagDenyOOM|FlagFast, FlagReadonly
	register(
		z("zadd", -4, w, "1.2.0", "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", zaddCmd),
		z("zincrby", 4, w, "1.2.0", "Increments the score of a member in a sorted set.", zincrbyCmd),
		z("zrem", -3, FlagWrite|FlagFast, "1.2.0", "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", zremCmd),
		z("zscore", 3, r|FlagFast, "1.2.0", "Returns the score of a member in a sorted set.", zscoreCmd),
		z("zmscore", -3, r|FlagFast, "6.2.0", "Returns the score of one or more members in a sorted set.", zmscoreCmd),
		z("zcard", 2, r|FlagFast, "1.2.0", "Returns the number of members in a sorted set.", zcardCmd),
		z("zcount", 4, r|FlagFast, "2.0.0", "Returns the count of members in a sorted set that have scores within a range.", zcountCmd),
		z("zlexcount", 4, r|FlagFast, "2.8.9", "Returns the number of members in a sorted set within a lexicographical range.", zlexcountCmd),
		z("zrank", 3, r|FlagFast, "2.0.0", "Returns the index of a member in a sorted set ordered by ascending scores.", zrankCmd),
		z("zrevrank", 3, r|FlagFast, "2.0.0", "Returns the index of a member in a sorted set ordered by descending scores.", zrevrankCmd),
		z("zrange", -4, r, "1.2.0", "Returns members in a sorted set within a range of indexes.", zrangeCmd),
		z("zrevrange", -4, r, "1.2.0", "Returns members in a sorted set within a range of indexes in reverse order.", zrevrangeCmd),
		z("zrangebyscore", -4, r, "1.0.5", "Returns members in a sorted set within a range of scores.", zrangebyscoreCmd),
		z("zrevrangebyscore", -4, r, "2.2.0", "Returns members in a sorted set within a range of scores in reverse order.", zrevrangebyscoreCmd),
		z("zrangebylex", -4, r, "2.8.9", "Returns members in a sorted set within a lexicographical range.", zrangebylexCmd),
		z("zrevrangebylex", -4, r, "2.8.9", "Returns members in a sorted set within a lexicographical range in reverse order.", zrevrangebylexCmd),
		keys(z("zrangestore", -5, FlagWrite|FlagDenyOOM, "6.2.0", "Stores a range of members from sorted set in a key.", zrangestoreCmd), 2),
		z("zremrangebyrank", 4, FlagWrite, "2.0.0", "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", zremrangebyrankCmd),
		z("zremrangebyscore", 4, FlagWrite, "1.2.0", "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", zremrangebyscoreCmd),
		z("zremrangebylex", 4, FlagWrite, "2.8.9", "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", zremrangebylexCmd),
		z("zpopmin", -2, FlagWrite|FlagFast, "5.0.0", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zpopminCmd),
		z("zpopmax", -2, FlagWrite|FlagFast, "5.0.0", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zpopmaxCmd),
		keys(z("bzpopmin", -3, FlagWrite|FlagFast|FlagBlocking, "5.0.0", "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", bzpopminCmd), -2),
		keys(z("bzpopmax", -3, FlagWrite|FlagFast|FlagBlocking, "5.0.0", "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", bzpopmaxCmd), -2),
		movableKeys(z("zmpop", -4, FlagWrite, "7.0.0", "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", zmpopCmd), 1, zmpopKeys(1)),
		movableKeys(z("bzmpop", -5, FlagWrite|FlagBlocking, "7.0.0", "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", bzmpopCmd), 2, zmpopKeys(2)),
		z("zrandmember", -2, r, "6.2.0", "Returns one or more random members from a sorted set.", zrandmemberCmd),
		movableKeys(z("zunion", -3, r, "6.2.0", "Returns the union of multiple sorted sets.", zunionCmd), 1, numkeysKeys(1)),
		movableKeys(z("zinter", -3, r, "6.2.0", "Returns the intersect of multiple sorted sets.", zinterCmd), 1, numkeysKeys(1)),
		movableKeys(z("zdiff", -3, r, "6.2.0", "Returns the difference between multiple sorted sets.", zdiffCmd), 1, numkeysKeys(1)),
		storeCommand(z("zunionstore", -4, FlagWrite|FlagDenyOOM, "2.0.0", "Stores the union of multiple sorted sets in a key.", zunionstoreCmd)),
		storeCommand(z("zinterstore", -4, FlagWrite|FlagDenyOOM, "2.0.0", "Stores the intersect of multiple sorted sets in a key.", zinterstoreCmd)),
		storeCommand(z("zdiffstore", -4, FlagWrite|FlagDenyOOM, "6.2.0", "Stores the difference of multiple sorted sets in a key.", zdiffstoreCmd)),
		movableKeys(z("zintercard", -3, r, "7.0.0", "Returns the number of members of the intersect of multiple sorted sets.", zintercardCmd), 1, numkeysKeys(1)),
		z("zscan", -3, r, "2.8.0", "Iterates over members and scores of a sorted set.", zscanCmd),
	)
}

func newZSet() *zsetValue { return &zsetValue{} }

func readZSet(c *Ctx, key []byte) (*zsetValue, error) {
	z, _, err := readValue(c, key, typeZSet, decodeZSet)
	return z, err
}

func updateZSet(c *Ctx, key []byte, fn func(z *zsetValue, exists bool) (bool, error)) error {
	return updateValue(c, key, typeZSet, decodeZSet, newZSet, fn)
}

// parseScore parses a score as Redis's strtod-based getDoubleFromObject: NaN is refused, and
// so is a literal too large for a double (only "inf" itself is infinite).
func parseScore(b []byte) (float64, bool) {
	f, ok := ParseFloat(b)
	if !ok || math.IsNaN(f) {
		return 0, false
	}
	if lit, _ := scanFloat(b); f == 0 && lit.nonzero {
		return 0, false // underflow: strtod's ERANGE with a zero result
	}
	if math.IsInf(f, 0) {
		t := b
		if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
			t = t[1:]
		}
		if !isInfWord(t) {
			return 0, false
		}
	}
	return f, true
}

var errNaNScore = Error("ERR resulting score is not a number (NaN)")

func (c *Ctx) score(f float64) { c.W.DoubleText(formatScore(f)) }

func zaddCmd(c *Ctx) {
	var nx, xx, gt, lt, ch, incr bool
	i := 2
	for ; i < len(c.Args); i++ {
		switch {
		case is(c.Args[i], "NX"):
			nx = true
		case is(c.Args[i], "XX"):
			xx = true
		case is(c.Args[i], "GT"):
			gt = true
		case is(c.Args[i], "LT"):
			lt = true
		case is(c.Args[i], "CH"):
			ch = true
		case is(c.Args[i], "INCR"):
			incr = true
		default:
			goto pairs
		}
	}
pairs:
	n := len(c.Args) - i
	if n == 0 || n%2 != 0 {
		c.Err(ErrSyntax)
		return
	}
	if nx && xx {
		c.Err(Error("ERR XX and NX options at the same time are not compatible"))
		return
	}
	if gt && lt || gt && nx || lt && nx {
		c.Err(Error("ERR GT, LT, and/or NX options at the same time are not compatible"))
		return
	}
	if incr && n > 2 {
		c.Err(Error("ERR INCR option supports a single increment-element pair"))
		return
	}
	scores := make([]float64, 0, n/2)
	for j := i; j < len(c.Args); j += 2 {
		s, ok := parseScore(c.Args[j])
		if !ok {
			c.Err(ErrNotFloat)
			return
		}
		scores = append(scores, s)
	}
	var count int64
	var result float64
	aborted := false
	members := make([][]byte, 0, len(scores))
	for k := range scores {
		members = append(members, c.Args[i+2*k+1])
	}
	var changed bool
	err := updateZMembers(c, c.Args[1], members, func(z *zsetValue, exists bool) (bool, error) {
		count, aborted = 0, false
		changed = false
		for k, s := range scores {
			m := c.Args[i+2*k+1]
			cur, had := z.score(m)
			switch {
			case had && nx, !had && xx:
				aborted = true
				continue
			}
			if incr {
				if had {
					s += cur
				}
				if math.IsNaN(s) {
					return false, errNaNScore
				}
			}
			if had && (gt && s <= cur || lt && s >= cur) {
				aborted = true
				continue
			}
			result = s
			switch {
			case !had:
				z.set(m, s)
				count++
				changed = true
			case s != cur:
				z.set(m, s)
				if ch {
					count++
				}
				changed = true
			}
		}
		return changed, nil
	})
	if err == nil && changed {
		c.Notify(pubsub.ZSet, map[bool]string{true: "zincr", false: "zadd"}[incr], c.Args[1])
	}
	switch {
	case err != nil:
		c.Err(err)
	case incr && aborted:
		c.W.Null()
	case incr:
		c.score(result)
	default:
		c.W.Int(count)
	}
}

func zincrbyCmd(c *Ctx) {
	incr, ok := parseScore(c.Args[2])
	if !ok {
		c.Err(ErrNotFloat)
		return
	}
	var out float64
	var changed bool
	err := updateZMembers(c, c.Args[1], c.Args[3:4], func(z *zsetValue, _ bool) (bool, error) {
		changed = false
		cur, had := z.score(c.Args[3])
		out = incr // a new member's score is the increment itself: -0 stays -0
		if had {
			out = cur + incr
		}
		if math.IsNaN(out) {
			return false, errNaNScore
		}
		if had && out == cur {
			return false, nil // an unchanged score touches nothing (WATCH holds)
		}
		z.set(c.Args[3], out) // a listpack stores -0 as 0; the reply is the sum, as Redis's
		changed = true
		return true, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if changed {
		c.Notify(pubsub.ZSet, "zincr", c.Args[1])
	}
	c.score(out)
}

func zremCmd(c *Ctx) {
	changeEach(c, updateZMembers, (*zsetValue).remove)
}

// zscores reads the scores of members of the sorted set at key (only their groups of a grouped
// one).
func zscores(c *Ctx, key []byte, members [][]byte) (map[string]float64, error) {
	var sc map[string]float64
	err := readZ(c, key, func(v *zview) error {
		var err error
		sc, err = v.scores(members)
		return err
	})
	return sc, err
}

func zscoreCmd(c *Ctx) {
	sc, err := zscores(c, c.Args[1], c.Args[2:3])
	if err != nil {
		c.Err(err)
		return
	}
	if s, ok := sc[string(c.Args[2])]; ok {
		c.score(s)
		return
	}
	c.W.Null()
}

func zmscoreCmd(c *Ctx) {
	sc, err := zscores(c, c.Args[1], c.Args[2:])
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Array(len(c.Args) - 2)
	for _, m := range c.Args[2:] {
		if s, ok := sc[string(m)]; ok {
			c.score(s)
			continue
		}
		c.W.Null()
	}
}

func zcardCmd(c *Ctx) {
	n := 0
	err := readZ(c, c.Args[1], func(v *zview) error {
		n = v.n
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Int(int64(n))
}

// zcountGeneric is ZCOUNT (a score range) and ZLEXCOUNT: the members within the range.
func zcountGeneric(c *Ctx, kind int) {
	sp, err := parseZRange(c.Args[2:4], kind, false, true)
	if err != nil {
		c.Err(err)
		return
	}
	n := 0
	err = readZ(c, c.Args[1], func(v *zview) error {
		items, err := v.selectRange(sp)
		n = len(items)
		return err
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Int(int64(n))
}

func zrankGeneric(c *Ctx, rev bool) {
	r, found := 0, false
	err := readZ(c, c.Args[1], func(v *zview) error {
		var err error
		r, found, err = v.rankOf(c.Args[2])
		if rev {
			r = v.n - 1 - r
		}
		return err
	})
	switch {
	case err != nil:
		c.Err(err)
	case found:
		c.W.Int(int64(r))
	default:
		c.W.Null()
	}
}

func zrankCmd(c *Ctx)    { zrankGeneric(c, false) }
func zrevrankCmd(c *Ctx) { zrankGeneric(c, true) }

// zrangeSpec is a parsed ZRANGE family request.
type zrangeSpec struct {
	kind          int // rangeRank, rangeScore, rangeLex
	rev           bool
	withScores    bool
	limit         bool
	offset, count int64
	start, stop   int64
	score         scoreRange
	lex           lexRange
}

const (
	rangeRank = iota
	rangeScore
	rangeLex
)

// parseZRange parses what follows the key in ZRANGE (and its older forms, which fix kind and
// rev and allow only some options): min max and the options from args[0] on. It follows
// Redis's zrangeGenericCommand, errors included.
func parseZRange(args [][]byte, kind int, rev, store bool) (zrangeSpec, error) {
	sp := zrangeSpec{kind: kind, rev: rev, count: -1}
	// ZRANGE takes BYSCORE or BYLEX once and REV once; the older forms (ZRANGEBYSCORE,
	// ZREVRANGE, ...) have them fixed and take neither.
	fixed := kind != rangeRank || rev
	kindAuto, revAuto := !fixed, !fixed
	for j := 2; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case !store && is(args[j], "WITHSCORES"):
			sp.withScores = true
		case is(args[j], "LIMIT") && more >= 2:
			o, ok1 := ParseInt(args[j+1])
			n, ok2 := ParseInt(args[j+2])
			if !ok1 || !ok2 {
				return sp, ErrNotInt
			}
			sp.limit, sp.offset, sp.count = true, o, n
			j += 2
		case kindAuto && is(args[j], "BYSCORE"):
			sp.kind, kindAuto = rangeScore, false
		case kindAuto && is(args[j], "BYLEX"):
			sp.kind, kindAuto = rangeLex, false
		case revAuto && is(args[j], "REV"):
			sp.rev, revAuto = true, false
		default:
			return sp, ErrSyntax
		}
	}
	if sp.limit && sp.kind == rangeRank {
		return sp, Error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
	}
	if sp.withScores && sp.kind == rangeLex {
		return sp, Error("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
	}
	lo, hi := args[0], args[1]
	if sp.rev && sp.kind != rangeRank {
		lo, hi = hi, lo // ZREVRANGEBYSCORE key max min
	}
	var err error
	switch sp.kind {
	case rangeRank:
		var ok1, ok2 bool
		sp.start, ok1 = ParseInt(args[0])
		sp.stop, ok2 = ParseInt(args[1])
		if !ok1 || !ok2 {
			return sp, ErrNotInt
		}
	case rangeScore:
		sp.score, err = parseScoreRange(lo, hi)
	case rangeLex:
		sp.lex, err = parseLexRange(lo, hi)
	}
	return sp, err
}

// selectRange returns the items sp selects, in reply order.
func (z *zsetValue) selectRange(sp zrangeSpec) []zitem {
	n := z.len()
	var from, to int
	switch sp.kind {
	case rangeRank:
		start, stop := sp.start, sp.stop
		if start < 0 {
			start += int64(n)
		}
		if stop < 0 {
			stop += int64(n)
		}
		start = max(start, 0)
		if start > stop || start >= int64(n) {
			return nil
		}
		stop = min(stop, int64(n)-1)
		if sp.rev {
			from, to = n-1-int(stop), n-int(start)
		} else {
			from, to = int(start), int(stop)+1
		}
	case rangeScore:
		from, to = z.byScore(sp.score)
	case rangeLex:
		from, to = z.byLex(sp.lex)
	}
	items := make([]zitem, 0, to-from)
	if sp.rev {
		for i := to - 1; i >= from; i-- {
			items = append(items, z.items[i])
		}
	} else {
		items = append(items, z.items[from:to]...)
	}
	if sp.limit {
		if sp.offset < 0 || sp.offset >= int64(len(items)) {
			return nil
		}
		items = items[sp.offset:]
		if sp.count >= 0 && sp.count < int64(len(items)) {
			items = items[:sp.count]
		}
	}
	return items
}

// writeItems replies with members, and their scores if asked: RESP2 a flat array, RESP3 an
// array of [member, score] pairs.
func writeItems(c *Ctx, items []zitem, withScores bool) {
	switch {
	case !withScores:
		c.W.Array(len(items))
	case c.W.Proto() >= 3:
		c.W.Array(len(items))
	default:
		c.W.Array(2 * len(items))
	}
	for _, it := range items {
		if withScores && c.W.Proto() >= 3 {
			c.W.Array(2)
		}
		c.W.Bulk(it.member)
		if withScores {
			c.score(it.score)
		}
	}
}

func zrangeGeneric(c *Ctx, kind int, rev bool) {
	sp, err := parseZRange(c.Args[2:], kind, rev, false)
	if err != nil {
		c.Err(err)
		return
	}
	var items []zitem
	err = readZ(c, c.Args[1], func(v *zview) error {
		var err error
		items, err = v.selectRange(sp)
		return err
	})
	if err != nil {
		c.Err(err)
		return
	}
	writeItems(c, items, sp.withScores)
}

func zrangeCmd(c *Ctx)           { zrangeGeneric(c, rangeRank, false) }
func zrevrangeCmd(c *Ctx)        { zrangeGeneric(c, rangeRank, true) }
func zrangebyscoreCmd(c *Ctx)    { zrangeGeneric(c, rangeScore, false) }
func zrevrangebyscoreCmd(c *Ctx) { zrangeGeneric(c, rangeScore, true) }
func zrangebylexCmd(c *Ctx)      { zrangeGeneric(c, rangeLex, false) }
func zrevrangebylexCmd(c *Ctx)   { zrangeGeneric(c, rangeLex, true) }

func zrangestoreCmd(c *Ctx) {
	sp, err := parseZRange(c.Args[3:], rangeRank, false, true)
	if err != nil {
		c.Err(err)
		return
	}
	var n int
	var missed []int
	keys := []kspKey{{DB: c.DB(), Key: c.Args[1]}, {DB: c.DB(), Key: c.Args[2]}}
	err = c.KS.Update(c.Sess, keys, func(tx *keyspace.Tx) error {
		missed = txMissing(tx, 1, 1, typeZSet)
		src := newZSet()
		if m, ok := tx.Meta(1); ok {
			if m.Type != typeZSet {
				return ErrWrongType
			}
			b, _, err := tx.Value(1)
			if err != nil {
				return err
			}
			if src, err = decodeZSet(b); err != nil {
				return err
			}
		}
		dst := newZSet()
		for _, it := range src.selectRange(sp) {
			dst.set(it.member, it.score)
		}
		n = dst.len()
		return putValue(tx, 0, dst, 0, typeZSet)
	})
	stateMisses(c, keys, missed)
	if err != nil {
		c.Err(err)
		return
	}
	notifyStore(c, pubsub.ZSet, c.Cmd.Name, c.Args[1], n)
	c.W.Int(int64(n))
}

func zremRange(c *Ctx, kind int) {
	sp, err := parseZRange(c.Args[2:4], kind, false, true)
	if err != nil {
		c.Err(err)
		return
	}
	var n int
	err = updateZSet(c, c.Args[1], func(z *zsetValue, exists bool) (bool, error) {
		n = 0
		if !exists {
			return false, nil
		}
		items := z.selectRange(sp)
		for _, it := range items {
			z.remove(it.member)
		}
		n = len(items)
		return n > 0, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if n > 0 {
		c.Notify(pubsub.ZSet, c.Cmd.Name, c.Args[1]) // zremrangebyrank, ...byscore, ...bylex
	}
	c.W.Int(int64(n))
}

func zremrangebyrankCmd(c *Ctx)  { zremRange(c, rangeRank) }
func zremrangebyscoreCmd(c *Ctx) { zremRange(c, rangeScore) }
func zremrangebylexCmd(c *Ctx)   { zremRange(c, rangeLex) }

// zpop pops up to count items (the lowest scores, or the highest with max) from the first
// non-empty sorted set of keys: its key and the items, or a nil key (popFirst). counted says
// the command takes a count, which its effect states.
func zpop(c *Ctx, keys [][]byte, max bool, count int64, counted bool) (key []byte, items []zitem, err error) {
	key, err = popFirstKey(c, keys, typeZSet, func(tx *keyspace.Tx, i int) error {
		v, err := openZ(tx, i)
		if err != nil {
			return err
		}
		if items, err = v.pop(max, int(min(count, math.MaxInt32))); err != nil {
			return err
		}
		name := "ZPOPMIN"
		if max {
			name = "ZPOPMAX"
		}
		c.Propagate(popEffect(name, keys[i], len(items), counted))
		return v.store(c)
	})
	if err == nil && key != nil && len(items) > 0 {
		c.Notify(pubsub.ZSet, map[bool]string{false: "zpopmin", true: "zpopmax"}[max], key)
	}
	return key, items, err
}

// zpopCmd is ZPOPMIN and ZPOPMAX: RESP2 a flat array; RESP3 [member, score] without a count
// and pairs with one.
func zpopCmd(c *Ctx, max bool) {
	if len(c.Args) > 3 {
		c.Err(ErrSyntax)
		return
	}
	count, nested := int64(1), false
	if len(c.Args) == 3 {
		n, ok := ParseInt(c.Args[2])
		if !ok || n < 0 {
			c.Err(errPositive)
			return
		}
		count, nested = n, true
	}
	if count == 0 {
		// Still WRONGTYPE for a key of another type; Redis looks the key up for writing
		// (lookupKeyWrite), so a missing one states no "keymiss".
		if m, ok := c.KS.Lookup(c.Sess, c.DB(), c.Args[1]); ok && m.Type != typeZSet {
			c.Err(ErrWrongType)
			return
		}
		c.W.Array(0)
		return
	}
	_, items, err := zpop(c, c.Args[1:2], max, count, len(c.Args) == 3)
	if err != nil {
		c.Err(err)
		return
	}
	if nested {
		writeItems(c, items, true)
		return
	}
	c.W.Array(2 * len(items))
	for _, it := range items {
		c.W.Bulk(it.member)
		c.score(it.score)
	}
}

func zpopminCmd(c *Ctx) { zpopCmd(c, false) }
func zpopmaxCmd(c *Ctx) { zpopCmd(c, true) }

// bzpopCmd is BZPOPMIN and BZPOPMAX: [key, member, score], or a null array at the timeout.
func bzpopCmd(c *Ctx, max bool) {
	deadline, err := parseTimeout(c, c.Args[len(c.Args)-1])
	if err != nil {
		c.Err(err)
		return
	}
	keys := c.Args[1 : len(c.Args)-1]
	key, items, err := zpop(c, keys, max, 1, false)
	switch {
	case err != nil:
		c.Err(err)
	case key == nil && blockOn(c, keys, deadline):
	case key == nil:
		c.W.NullArray()
	default:
		c.W.Array(3)
		c.W.Bulk(key)
		c.W.Bulk(items[0].member)
		c.score(items[0].score)
	}
}

func bzpopminCmd(c *Ctx) { bzpopCmd(c, false) }
func bzpopmaxCmd(c *Ctx) { bzpopCmd(c, true) }

// zmpopArgs parses [B]ZMPOP's numkeys keys MIN|MAX [COUNT count] from position at.
func zmpopArgs(args [][]byte, at int) (keys [][]byte, max bool, count int64, err error) {
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
	switch {
	case is(args[where], "MIN"):
	case is(args[where], "MAX"):
		max = true
	default:
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
	if count == -1 {
		count = 1
	}
	return args[at+1 : where], max, count, nil
}

func zmpopKeys(at int) func([][]byte) ([]int, error) {
	return func(args [][]byte) ([]int, error) {
		keys, _, _, err := zmpopArgs(args, at)
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

func zmpopReply(c *Ctx, keys [][]byte, max bool, count int64, deadline time.Time, block bool) {
	key, items, err := zpop(c, keys, max, count, true)
	switch {
	case err != nil:
		c.Err(err)
	case key == nil && block && blockOn(c, keys, deadline):
	case key == nil:
		c.W.NullArray()
	default:
		c.W.Array(2)
		c.W.Bulk(key)
		c.W.Array(len(items))
		for _, it := range items {
			c.W.Array(2)
			c.W.Bulk(it.member)
			c.score(it.score)
		}
	}
}

func zmpopCmd(c *Ctx) {
	keys, max, count, err := zmpopArgs(c.Args, 1)
	if err != nil {
		c.Err(err)
		return
	}
	zmpopReply(c, keys, max, count, time.Time{}, false)
}

func bzmpopCmd(c *Ctx) {
	deadline, err := parseTimeout(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	keys, max, count, err := zmpopArgs(c.Args, 2)
	if err != nil {
		c.Err(err)
		return
	}
	zmpopReply(c, keys, max, count, deadline, true)
}

// zrandmemberCmd follows HRANDFIELD (writeRandom).
func zrandmemberCmd(c *Ctx) {
	if len(c.Args) == 2 {
		z, err := readZSet(c, c.Args[1])
		switch {
		case err != nil:
			c.Err(err)
		case z == nil:
			c.W.Null()
		default:
			c.W.Bulk(z.items[rand.IntN(z.len())].member)
		}
		return
	}
	count, withScores, ok := randArgs(c, "WITHSCORES")
	if !ok {
		return
	}
	z, err := readZSet(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	if z == nil {
		z = newZSet()
	}
	writeRandom(c, z.len(), count, withScores, func(i int) {
		c.W.Bulk(z.items[i].member)
		if withScores {
			c.score(z.items[i].score)
		}
	})
}

// zsetOp is ZUNION, ZINTER or ZDIFF.
type zsetOp int

const (
	zUnion zsetOp = iota
	zInter
	zDiff
)

// zopArgs are the parsed numkeys, keys, weights, aggregate and WITHSCORES of ZUNION and the
// others, from position at (numkeys).
type zopArgs struct {
	keys       [][]byte
	weights    []float64
	agg        string
	withScores bool
}

// parseZOp parses ZUNION and the others: err is a numkeys error, answered at once; optErr an
// error in the options after the keys, which Redis finds only after checking the keys' types.
func parseZOp(c *Ctx, op zsetOp, args [][]byte, at int, store bool) (a zopArgs, optErr, err error) {
	a = zopArgs{agg: "sum"}
	numkeys, ok := ParseInt(args[at])
	if !ok {
		return a, nil, ErrNotInt
	}
	if numkeys < 1 {
		return a, nil, Error("ERR at least 1 input key is needed for '" + c.Cmd.Name + "' command")
	}
	if numkeys > int64(len(args)-at-1) {
		return a, nil, ErrSyntax
	}
	a.keys = args[at+1 : at+1+int(numkeys)]
	for j := at + 1 + int(numkeys); j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case op != zDiff && is(args[j], "WEIGHTS") && more >= int(numkeys):
			for k := 0; k < int(numkeys); k++ {
				j++
				w, ok := parseScore(args[j])
				if !ok {
					return a, Error("ERR weight value is not a float"), nil
				}
				a.weights = append(a.weights, w)
			}
		case op != zDiff && is(args[j], "AGGREGATE") && more >= 1:
			j++
			switch {
			case is(args[j], "SUM"):
				a.agg = "sum"
			case is(args[j], "MIN"):
				a.agg = "min"
			case is(args[j], "MAX"):
				a.agg = "max"
			default:
				return a, ErrSyntax, nil
			}
		case !store && is(args[j], "WITHSCORES"):
			a.withScores = true
		default:
			return a, ErrSyntax, nil
		}
	}
	return a, nil, nil
}

// txZSources reads keys from position first of tx as sorted sets; a set counts as a sorted set
// of score 1, as in Redis; anything else is WRONGTYPE. A missing key is nil.
func txZSources(tx *keyspace.Tx, first, n int) ([]*zsetValue, error) {
	out := make([]*zsetValue, n)
	var need error
	for i := 0; i < n; i++ {
		m, ok := tx.Meta(first + i)
		if !ok {
			continue
		}
		if m.Type != typeZSet && m.Type != typeSet {
			return nil, ErrWrongType
		}
		b, _, err := tx.Value(first + i)
		if err != nil {
			need = err
			continue
		}
		if m.Type == typeSet {
			s, err := decodeSet(b)
			if err != nil {
				return nil, err
			}
			z := newZSet()
			for _, mem := range s.members {
				z.set(mem, 1)
			}
			out[i] = z
			continue
		}
		if out[i], err = decodeZSet(b); err != nil {
			return nil, err
		}
	}
	if need != nil {
		return nil, need
	}
	return out, nil
}

// combineZ computes op over sets with a's weights and aggregate as Redis's
// zunionInterDiffGenericCommand does: the inputs taken smallest first (a missing key is empty);
// a weighted score that is NaN (0 times an infinity) is 0 in a union and in an intersection's
// first input, while a later input's NaN makes a sum 0 and is ignored by MIN and MAX; a sum of
// inf and -inf is 0. The result is a sorted set.
func combineZ(op zsetOp, sets []*zsetValue, a zopArgs) *zsetValue {
	weight := func(i int) float64 {
		if a.weights == nil {
			return 1
		}
		return a.weights[i]
	}
	size := func(i int) int {
		if sets[i] == nil {
			return 0
		}
		return sets[i].len()
	}
	order := make([]int, len(sets))
	for i := range order {
		order[i] = i
	}
	if op != zDiff {
		sort.SliceStable(order, func(x, y int) bool { return size(order[x]) < size(order[y]) })
	}
	first := func(s, w float64) float64 {
		r := s * w
		if math.IsNaN(r) {
			return 0
		}
		return r
	}
	agg := func(target, val float64) float64 {
		switch a.agg {
		case "min":
			if val < target {
				return val
			}
			return target
		case "max":
			if val > target {
				return val
			}
			return target
		}
		r := target + val
		if math.IsNaN(r) {
			return 0
		}
		return r
	}
	out := newZSet()
	switch op {
	case zUnion:
		acc := map[string]float64{}
		var members [][]byte
		for _, i := range order {
			if sets[i] == nil {
				continue
			}
			for _, it := range sets[i].items {
				// A union makes every weighted NaN 0, not only the first.
				if cur, ok := acc[string(it.member)]; ok {
					acc[string(it.member)] = agg(cur, first(it.score, weight(i)))
				} else {
					acc[string(it.member)] = first(it.score, weight(i))
					members = append(members, it.member)
				}
			}
		}
		for _, m := range members {
			out.set(m, acc[string(m)])
		}
	case zInter:
		for _, z := range sets {
			if z == nil {
				return out
			}
		}
		base := order[0]
		for _, it := range sets[base].items {
			s := first(it.score, weight(base))
			in := true
			for _, j := range order[1:] {
				other, ok := sets[j].score(it.member)
				if !ok {
					in = false
					break
				}
				s = agg(s, other*weight(j))
			}
			if in {
				out.set(it.member, s)
			}
		}
	case zDiff:
		if sets[0] == nil {
			return out
		}
		for _, it := range sets[0].items {
			in := false
			for _, z := range sets[1:] {
				if z != nil {
					if _, ok := z.score(it.member); ok {
						in = true
						break
					}
				}
			}
			if !in {
				out.set(it.member, it.score)
			}
		}
	}
	return out
}

// numkeysKeys finds the keys of a command whose numkeys is at position at.
func numkeysKeys(at int) func([][]byte) ([]int, error) {
	return func(args [][]byte) ([]int, error) {
		n, ok := ParseInt(args[at])
		if !ok || n < 1 || n > int64(len(args)-at-1) {
			return nil, ErrSyntax
		}
		out := make([]int, n)
		for i := range out {
			out[i] = at + 1 + i
		}
		return out, nil
	}
}

// storeCommand makes c a command with a destination key and then numkeys source keys
// (ZUNIONSTORE and the like).
func storeCommand(c *Command) *Command {
	c = movableKeys(c, 2, storeKeys)
	c.StoreKey = true
	return c
}

// storeKeys finds the keys of ZUNIONSTORE and the like: the destination, then numkeys keys.
func storeKeys(args [][]byte) ([]int, error) {
	src, err := numkeysKeys(2)(args)
	if err != nil {
		return nil, err
	}
	return append([]int{1}, src...), nil
}

func zopCmd(c *Ctx, op zsetOp) {
	a, optErr, err := parseZOp(c, op, c.Args, 1, false)
	if err != nil {
		c.Err(err)
		return
	}
	ks := dbKeys(c, a.keys)
	var res *zsetValue
	var missed []int
	err = c.KS.Update(c.Sess, ks, func(tx *keyspace.Tx) error {
		missed = txMissing(tx, 0, len(ks), typeZSet, typeSet)
		sets, err := txZSources(tx, 0, len(ks))
		if err != nil {
			return err
		}
		if optErr != nil {
			return optErr
		}
		res = combineZ(op, sets, a)
		return nil
	})
	stateMisses(c, ks, missed)
	if err != nil {
		c.Err(err)
		return
	}
	writeItems(c, res.items, a.withScores)
}

func zunionCmd(c *Ctx) { zopCmd(c, zUnion) }
func zinterCmd(c *Ctx) { zopCmd(c, zInter) }
func zdiffCmd(c *Ctx)  { zopCmd(c, zDiff) }

func zopStoreCmd(c *Ctx, op zsetOp) {
	a, optErr, err := parseZOp(c, op, c.Args, 2, true)
	if err != nil {
		c.Err(err)
		return
	}
	ks := []kspKey{{DB: c.DB(), Key: c.Args[1]}}
	for _, k := range a.keys {
		ks = append(ks, kspKey{DB: c.DB(), Key: k})
	}
	var n int
	var missed []int
	err = c.KS.Update(c.Sess, ks, func(tx *keyspace.Tx) error {
		missed = txMissing(tx, 1, len(a.keys), typeZSet, typeSet)
		sets, err := txZSources(tx, 1, len(a.keys))
		if err != nil {
			return err
		}
		if optErr != nil {
			return optErr
		}
		res := combineZ(op, sets, a)
		for i := range res.items {
			res.items[i].member = append([]byte(nil), res.items[i].member...)
		}
		res.index = nil
		n = res.len()
		return putValue(tx, 0, res, 0, typeZSet)
	})
	stateMisses(c, ks, missed)
	if err != nil {
		c.Err(err)
		return
	}
	notifyStore(c, pubsub.ZSet, c.Cmd.Name, c.Args[1], n)
	c.W.Int(int64(n))
}

func zunionstoreCmd(c *Ctx) { zopStoreCmd(c, zUnion) }
func zinterstoreCmd(c *Ctx) { zopStoreCmd(c, zInter) }
func zdiffstoreCmd(c *Ctx)  { zopStoreCmd(c, zDiff) }

// zintercardArgs parses ZINTERCARD numkeys key [key ...] [LIMIT limit] as Redis's
// zunionInterDiffGenericCommand does (its errors differ from SINTERCARD's).
func zintercardArgs(c *Ctx) (numkeys, limit int64, err error) {
	numkeys, ok := ParseInt(c.Args[1])
	switch {
	case !ok:
		return 0, 0, ErrNotInt
	case numkeys < 1:
		return 0, 0, Error("ERR at least 1 input key is needed for 'zintercard' command")
	case numkeys > int64(len(c.Args)-2):
		return 0, 0, ErrSyntax
	}
	for j := 2 + int(numkeys); j < len(c.Args); j++ {
		if is(c.Args[j], "LIMIT") && j+1 < len(c.Args) {
			j++
			if limit, ok = ParseInt(c.Args[j]); !ok || limit < 0 {
				return 0, 0, Error("ERR LIMIT can't be negative")
			}
		} else {
			return 0, 0, ErrSyntax
		}
	}
	return numkeys, limit, nil
}

func zintercardCmd(c *Ctx) {
	numkeys, limit, err := zintercardArgs(c)
	if err != nil {
		c.Err(err)
		return
	}
	ks := dbKeys(c, c.Args[2:2+numkeys])
	var n int64
	var missed []int
	err = c.KS.Update(c.Sess, ks, func(tx *keyspace.Tx) error {
		missed = txMissing(tx, 0, len(ks), typeZSet, typeSet)
		sets, err := txZSources(tx, 0, len(ks))
		if err != nil {
			return err
		}
		n = int64(combineZ(zInter, sets, zopArgs{agg: "sum"}).len())
		return nil
	})
	stateMisses(c, ks, missed)
	if err != nil {
		c.Err(err)
		return
	}
	if limit > 0 {
		n = min(n, limit)
	}
	c.W.Int(n)
}

// scanScore is a score as ZSCAN shows it: a listpack holds an integral score as an integer,
// which Redis prints in full ("123456789012345680", not "1.2345678901234568e+17").
func scanScore(z *zsetValue, s float64) string {
	if z.flags&zsetSkiplistEnc == 0 && s == math.Trunc(s) && math.Abs(s) < 1<<63 {
		return strconv.FormatInt(int64(s), 10)
	}
	return formatScore(s)
}

// zscanCmd pages as HSCAN does; scores are bulk strings, in RESP3 too, as Redis's.
func zscanCmd(c *Ctx) {
	var z *zsetValue
	scanCollection(c, func() ([][]byte, bool, error) {
		var err error
		if z, err = readZSet(c, c.Args[1]); err != nil || z == nil {
			z = newZSet()
		}
		members := make([][]byte, z.len())
		for i, it := range z.items {
			members[i] = it.member
		}
		return members, z.flags&zsetSkiplistEnc == 0, err
	}, 2, func(i int) {
		c.W.Bulk(z.items[i].member)
		c.W.BulkString(scanScore(z, z.items[i].score))
	})
}

func zcountCmd(c *Ctx)    { zcountGeneric(c, rangeScore) }
func zlexcountCmd(c *Ctx) { zcountGeneric(c, rangeLex) }
