package commands

import (
	"math/rand/v2"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

const typeSet = keyspace.TypeSet

func init() {
	set := func(name string, arity int, flags Flag, since, complexity, summary string, h func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "set", Since: since, Complexity: complexity, Summary: summary, Handler: h}
	}
	multi := func(c *Command, last int) *Command { c.LastKey = last; return c }
	w, r := FlagWrite|FlagDenyOOM|FlagFast, FlagReadonly|FlagFast
	register(
		set("sadd", -3, w, "1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.", "Adds one or more members to a set. Creates the key if it doesn't exist.", saddCmd),
		set("srem", -3, FlagWrite|FlagFast, "1.0.0", "O(N) where N is the number of members to be removed.", "Removes one or more members from a set. Deletes the set if the last member was removed.", sremCmd),
		set("smembers", 2, FlagReadonly, "1.0.0", "O(N) where N is the set cardinality.", "Returns all members of a set.", smembersCmd),
		set("sismember", 3, r, "1.0.0", "O(1)", "Determines whether a member belongs to a set.", sismemberCmd),
		set("smismember", -3, r, "6.2.0", "O(N) where N is the number of elements being checked for membership", "Determines whether multiple members belong to a set.", smismemberCmd),
		set("scard", 2, r, "1.0.0", "O(1)", "Returns the number of members in a set.", scardCmd),
		set("spop", -2, FlagWrite|FlagFast, "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", spopCmd),
		set("srandmember", -2, FlagReadonly, "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.", "Get one or multiple random members from a set", srandmemberCmd),
		multi(set("smove", 4, w, "1.0.0", "O(1)", "Moves a member from one set to another.", smoveCmd), 2),
		multi(set("sinter", -2, FlagReadonly, "1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", "Returns the intersect of multiple sets.", sinterCmd), -1),
		multi(set("sunion", -2, FlagReadonly, "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Returns the union of multiple sets.", sunionCmd), -1),
		multi(set("sdiff", -2, FlagReadonly, "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Returns the difference of multiple sets.", sdiffCmd), -1),
		multi(set("sinterstore", -3, FlagWrite|FlagDenyOOM, "1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", "Stores the intersect of multiple sets in a key.", sinterstoreCmd), -1),
		multi(set("sunionstore", -3, FlagWrite|FlagDenyOOM, "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Stores the union of multiple sets in a key.", sunionstoreCmd), -1),
		multi(set("sdiffstore", -3, FlagWrite|FlagDenyOOM, "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Stores the difference of multiple sets in a key.", sdiffstoreCmd), -1),
		&Command{Name: "sintercard", Arity: -3, Flags: FlagReadonly | FlagMovableKeys, Keys: sintercardKeys, KeyNumAt: 1,
			Group: "set", Since: "7.0.0", Complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
			Summary: "Returns the number of members of the intersect of multiple sets.", Handler: sintercardCmd},
		set("sscan", -3, FlagReadonly, "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", "Iterates over members of a set.", sscanCmd),
	)
}

func newSet() *setValue { return &setValue{} }

func readSet(c *Ctx, key []byte) (*setValue, error) {
	s, _, err := readValue(c, key, typeSet, decodeSet)
	return s, err
}

// updateSet runs fn on the set at key inside a transaction: fn gets the part of it that holds
// members (nil: all of it) and must change no other member (keyedType.update).
func updateSet(c *Ctx, key []byte, members [][]byte, fn func(s *setValue, exists bool) (bool, error)) error {
	return setType.update(c, key, members, fn)
}

// writeSet replies with members as a set (an array in RESP2).
func writeSet(c *Ctx, members [][]byte) {
	c.W.Set(len(members))
	for _, m := range members {
		c.W.Bulk(m)
	}
}

func smembersCmd(c *Ctx) {
	s, err := readSet(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	if s == nil {
		s = newSet()
	}
	writeSet(c, s.members)
}

func sismemberCmd(c *Ctx) {
	s, _, err := setType.read(c, c.Args[1], c.Args[2:3])
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Int(boolInt(s.has(c.Args[2])))
}

func smismemberCmd(c *Ctx) {
	s, _, err := setType.read(c, c.Args[1], c.Args[2:])
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Array(len(c.Args) - 2)
	for _, m := range c.Args[2:] {
		c.W.Int(boolInt(s.has(m)))
	}
}

func scardCmd(c *Ctx) {
	n, err := setType.count(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Int(int64(n))
}

const errPositive Error = "ERR value is out of range, must be positive"

func spopCmd(c *Ctx) {
	if len(c.Args) > 3 {
		c.Err(ErrSyntax)
		return
	}
	count := int64(-1) // no count: one member, a bulk reply
	if len(c.Args) == 3 {
		n, ok := ParseInt(c.Args[2])
		if !ok || n < 0 {
			c.Err(errPositive)
			return
		}
		count = n
	}
	var popped [][]byte
	err := updateSet(c, c.Args[1], nil, func(s *setValue, exists bool) (bool, error) {
		popped = popped[:0]
		if !exists || count == 0 {
			return false, nil
		}
		n := int(min(max(count, 1), int64(s.len())))
		for _, i := range rand.Perm(s.len())[:n] {
			popped = append(popped, s.members[i])
		}
		for _, m := range popped {
			s.remove(m)
		}
		// The members were chosen at random: a follower removes these.
		c.Propagate(append([][]byte{[]byte("SREM"), c.Args[1]}, popped...))
		return true, nil
	})
	if err == nil && len(popped) > 0 {
		c.Notify(pubsub.Set, "spop", c.Args[1])
	}
	switch {
	case err != nil:
		c.Err(err)
	case count < 0 && len(popped) == 0:
		c.W.Null()
	case count < 0:
		c.W.Bulk(popped[0])
	default:
		writeSet(c, popped)
	}
}

func srandmemberCmd(c *Ctx) {
	if len(c.Args) > 3 {
		c.Err(ErrSyntax)
		return
	}
	if len(c.Args) == 2 {
		s, err := readSet(c, c.Args[1])
		switch {
		case err != nil:
			c.Err(err)
		case s == nil:
			c.W.Null()
		default:
			c.W.Bulk(s.members[rand.IntN(s.len())])
		}
		return
	}
	count, _, ok := randArgs(c, "")
	if !ok {
		return
	}
	s, err := readSet(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	if s == nil {
		s = newSet()
	}
	writeRandom(c, s.len(), count, false, func(i int) { c.W.Bulk(s.members[i]) })
}

func smoveCmd(c *Ctx) {
	var moved, removed, added bool
	keys := []kspKey{{DB: c.DB(), Key: c.Args[1]}, {DB: c.DB(), Key: c.Args[2]}}
	err := c.KS.Update(c.Sess, keys, func(tx *keyspace.Tx) error {
		moved, removed, added = false, false, false
		if _, ok := tx.Meta(0); !ok {
			return nil // a missing source moves nothing, whatever the destination holds
		}
		m := c.Args[3:4]
		src, _, sg, sd, sjs, err := setType.view(tx, 0, m)
		if err != nil {
			return err
		}
		dm, dexists := tx.Meta(1)
		if dexists && dm.Type != typeSet {
			return ErrWrongType
		}
		if string(c.Args[1]) == string(c.Args[2]) {
			moved = src.has(c.Args[3])
			return nil
		}
		if !src.remove(c.Args[3]) {
			return nil
		}
		dst, _, dg, dd, djs, err := setType.view(tx, 1, m)
		if err != nil {
			return err
		}
		moved, removed = true, true
		if err := setType.writeBack(c, tx, 0, src, sg, sd, sjs); err != nil {
			return err
		}
		if dst.add(c.Args[3]) {
			added = true
			return setType.writeBack(c, tx, 1, dst, dg, dd, djs)
		}
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if removed {
		c.Notify(pubsub.Set, "srem", c.Args[1])
	}
	if added {
		c.Notify(pubsub.Set, "sadd", c.Args[2])
	}
	c.W.Int(boolInt(moved))
}

// setOp is SINTER, SUNION or SDIFF over sets (nil for a missing key), in Redis's order: the
// members of the first set (of every set for a union) in their order.
type setOp int

const (
	opInter setOp = iota
	opUnion
	opDiff
)

func combine(op setOp, sets []*setValue) [][]byte {
	var out [][]byte
	switch op {
	case opInter:
		for _, s := range sets {
			if s == nil {
				return nil
			}
		}
		for _, m := range sets[0].members {
			in := true
			for _, s := range sets[1:] {
				if !s.has(m) {
					in = false
					break
				}
			}
			if in {
				out = append(out, m)
			}
		}
	case opUnion:
		u := newSet()
		for _, s := range sets {
			if s != nil {
				for _, m := range s.members {
					u.add(m)
				}
			}
		}
		out = u.members
	case opDiff:
		if sets[0] == nil {
			return nil
		}
		for _, m := range sets[0].members {
			in := false
			for _, s := range sets[1:] {
				if s != nil && s.has(m) {
					in = true
					break
				}
			}
			if !in {
				out = append(out, m)
			}
		}
	}
	return out
}

// readSets reads the sets named by keys at one instant (a transaction that writes nothing).
func readSets(c *Ctx, keys [][]byte) ([]*setValue, error) {
	var sets []*setValue
	var missed []int
	ks := dbKeys(c, keys)
	err := c.KS.Update(c.Sess, ks, func(tx *keyspace.Tx) error {
		var err error
		missed = txMissing(tx, 0, len(keys), typeSet)
		sets, err = txValues(tx, len(keys), typeSet, decodeSet)
		return err
	})
	stateMisses(c, ks, missed)
	return sets, err
}

func setOpCmd(c *Ctx, op setOp) {
	sets, err := readSets(c, c.Args[1:])
	if err != nil {
		c.Err(err)
		return
	}
	writeSet(c, combine(op, sets))
}

func sinterCmd(c *Ctx) { setOpCmd(c, opInter) }
func sunionCmd(c *Ctx) { setOpCmd(c, opUnion) }
func sdiffCmd(c *Ctx)  { setOpCmd(c, opDiff) }

// setOpStoreCmd stores the result of op over c.Args[2:] in c.Args[1], whatever it held; an
// empty result removes it.
func setOpStoreCmd(c *Ctx, op setOp) {
	keys := dbKeys(c, c.Args[1:])
	var n int
	var deleted bool
	var missed []int
	err := c.KS.Update(c.Sess, keys, func(tx *keyspace.Tx) error {
		deleted = false
		// The sources (lookupKeyRead: misses state keymiss) are keys 1..; the destination
		// (key 0) may be of any type.
		missed = txMissing(tx, 1, len(keys)-1, typeSet)
		sets := make([]*setValue, len(keys)-1)
		var need error
		for i := 1; i < len(keys); i++ {
			m, ok := tx.Meta(i)
			if !ok {
				continue
			}
			if m.Type != typeSet {
				return ErrWrongType
			}
			b, _, err := tx.Value(i)
			if err != nil {
				need = err
				continue
			}
			if sets[i-1], err = decodeSet(b); err != nil {
				return err
			}
		}
		if need != nil {
			return need
		}
		res := newSet()
		for _, m := range combine(op, sets) {
			res.add(append([]byte(nil), m...))
		}
		n = res.len()
		if n == 0 {
			deleted = tx.Delete(0)
			return nil
		}
		tx.Put(0, res.encode(), 0, typeSet)
		return nil
	})
	stateMisses(c, keys, missed)
	if err != nil {
		c.Err(err)
		return
	}
	switch {
	case n > 0:
		c.Notify(pubsub.Set, c.Cmd.Name, c.Args[1]) // sinterstore, sunionstore, sdiffstore
	case deleted:
		c.Notify(pubsub.Generic, "del", c.Args[1])
	}
	c.W.Int(int64(n))
}

func sinterstoreCmd(c *Ctx) { setOpStoreCmd(c, opInter) }
func sunionstoreCmd(c *Ctx) { setOpStoreCmd(c, opUnion) }
func sdiffstoreCmd(c *Ctx)  { setOpStoreCmd(c, opDiff) }

// sintercardArgs parses SINTERCARD numkeys key [key ...] [LIMIT limit] as Redis does.
func sintercardArgs(args [][]byte) (numkeys, limit int64, err error) {
	numkeys, ok := ParseInt(args[1])
	if !ok || numkeys < 1 {
		return 0, 0, Error("ERR numkeys should be greater than 0")
	}
	if numkeys > int64(len(args)-2) {
		return 0, 0, Error("ERR Number of keys can't be greater than number of args")
	}
	for j := 2 + int(numkeys); j < len(args); j++ {
		if is(args[j], "LIMIT") && j+1 < len(args) {
			j++
			if limit, ok = ParseInt(args[j]); !ok || limit < 0 {
				return 0, 0, Error("ERR LIMIT can't be negative")
			}
		} else {
			return 0, 0, ErrSyntax
		}
	}
	return numkeys, limit, nil
}

// sintercardKeys is SINTERCARD's key finder: numkeys keys after numkeys.
func sintercardKeys(args [][]byte) ([]int, error) {
	numkeys, _, err := sintercardArgs(args)
	if err != nil {
		return nil, err
	}
	out := make([]int, numkeys)
	for i := range out {
		out[i] = 2 + i
	}
	return out, nil
}

func sintercardCmd(c *Ctx) {
	numkeys, limit, err := sintercardArgs(c.Args)
	if err != nil {
		c.Err(err)
		return
	}
	sets, err := readSets(c, c.Args[2:2+numkeys])
	if err != nil {
		c.Err(err)
		return
	}
	n := int64(len(combine(opInter, sets)))
	if limit > 0 {
		n = min(n, limit)
	}
	c.W.Int(n)
}

// sscanCmd pages through the members in hash order (scanCollection).
func sscanCmd(c *Ctx) {
	var s *setValue
	scanCollection(c, func() ([][]byte, bool, error) {
		var err error
		if s, err = readSet(c, c.Args[1]); err != nil || s == nil {
			s = newSet()
		}
		return s.members, s.flags&setTableEnc == 0, err
	}, 1, func(i int) { c.W.Bulk(s.members[i]) })
}

func saddCmd(c *Ctx) { changeEach(c, updateSet, (*setValue).add) }
func sremCmd(c *Ctx) { changeEach(c, updateSet, (*setValue).remove) }
