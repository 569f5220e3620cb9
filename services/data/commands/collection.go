package commands

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

// A collection is a hash or a set as one record: decoded whole, changed in memory and written
// back whole by the commands of its type.
type collection interface {
	len() int
	encode() []byte
}

// readValue reads the collection of type typ at key for a command that only reads it: found
// false when the key does not exist, ErrWrongType when it holds another type.
func readValue[T collection](c *Ctx, key []byte, typ uint8, decode func([]byte) (T, error)) (v T, found bool, err error) {
	if p := c.Pre; p != nil && p.DB == c.DB() && bytes.Equal(p.Key, key) {
		switch {
		case p.Err != nil:
			return v, false, p.Err
		case !p.Found:
			return v, false, nil
		case p.Meta.Type != typ:
			return v, false, ErrWrongType
		}
		// Val stays valid while the command runs, which is as long as v is used: no copy.
		v, err = decode(p.Val)
		return v, err == nil, err
	}
	found, err = c.KS.Get(c.Sess, c.DB(), key, func(val keyspace.Value, m keyspace.Meta) error {
		if m.Type != typ {
			return ErrWrongType
		}
		b, err := val.Bytes()
		if err != nil {
			return err
		}
		// The read's buffer goes back to its pool when Get returns; the decoded value points
		// into what it decodes.
		v, err = decode(bytes.Clone(b))
		return err
	})
	return v, found && err == nil, err
}

// updateValue runs fn on the collection of type typ at key inside a transaction: v is the
// collection (empty() when the key does not exist, exists false), and fn reports whether it
// changed it. A changed collection is written back with its expire time, or removed when it is
// empty.
func updateValue[T collection](c *Ctx, key []byte, typ uint8, decode func([]byte) (T, error), empty func() T, fn func(v T, exists bool) (bool, error)) error {
	return c.KS.Update(c.Sess, []kspKey{{DB: c.DB(), Key: key}}, func(tx *keyspace.Tx) error {
		vals, err := txValues(tx, 1, typ, decode)
		if err != nil {
			return err
		}
		m, exists := tx.Meta(0)
		v := vals[0]
		if !exists {
			v = empty()
		}
		changed, err := fn(v, exists)
		if err != nil || !changed {
			return err
		}
		return putValue(tx, 0, v, m.ExpireAt, typ)
	})
}

// putValue writes v as key i of tx, or removes the key when v is empty.
func putValue[T collection](tx *keyspace.Tx, i int, v T, expireAt int64, typ uint8) error {
	if v.len() == 0 {
		tx.Delete(i)
		return nil
	}
	tx.Put(i, v.encode(), expireAt, typ)
	return nil
}

// txValues decodes keys 0..n-1 of tx as collections of type typ: the zero T for a missing key,
// ErrWrongType when one holds another type. Every value on disk is asked for at once, so that
// the transaction fetches them in one round.
func txValues[T collection](tx *keyspace.Tx, n int, typ uint8, decode func([]byte) (T, error)) ([]T, error) {
	out := make([]T, n)
	var need error
	for i := 0; i < n; i++ {
		m, ok := tx.Meta(i)
		if !ok {
			continue
		}
		if m.Type != typ {
			return nil, ErrWrongType
		}
		b, _, err := tx.Value(i)
		if err != nil {
			if need == nil {
				need = err
			}
			continue
		}
		if out[i], err = decode(b); err != nil {
			return nil, err
		}
	}
	if need != nil {
		return nil, need
	}
	return out, nil
}

// changeEach is SADD, SREM, HDEL and ZREM: change (add or remove) for every member argument of
// the collection at c.Args[1], through update (updateSet, ...: given the members, so that a
// grouped collection reads only their groups), replying how many changed it.
func changeEach[T collection](c *Ctx, update func(*Ctx, []byte, [][]byte, func(T, bool) (bool, error)) error, change func(v T, m []byte) bool) {
	var n int64
	err := update(c, c.Args[1], c.Args[2:], func(v T, _ bool) (bool, error) {
		n = 0
		for _, m := range c.Args[2:] {
			if change(v, m) {
				n++
			}
		}
		return n > 0, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if ev, ok := changeEvents[c.Cmd.Name]; n > 0 && ok {
		c.Notify(ev.class, ev.event, c.Args[1])
	}
	c.W.Int(n)
}

// changeEvents are the keyspace events of the commands changeEach runs.
var changeEvents = map[string]struct {
	class pubsub.Class
	event string
}{
	"hdel": {pubsub.Hash, "hdel"}, "sadd": {pubsub.Set, "sadd"}, "srem": {pubsub.Set, "srem"},
	"zrem": {pubsub.ZSet, "zrem"},
}

// popFirstKey is the pop of LMPOP, BLPOP, ZMPOP, BZPOPMIN and the like: in one transaction,
// pop (which pops and stores) runs on the first of keys that exists; a key of another type is
// WRONGTYPE as pop opens it, except when a blocked client retries (it serves nobody then). key is
// the key popped from, nil when every key is missing.
func popFirstKey(c *Ctx, keys [][]byte, typ uint8, pop func(tx *keyspace.Tx, i int) error) (key []byte, err error) {
	err = c.KS.Update(c.Sess, dbKeys(c, keys), func(tx *keyspace.Tx) error {
		key = nil
		for i := range keys {
			m, ok := tx.Meta(i)
			if !ok || c.Retrying && m.Type != typ {
				continue
			}
			if err := pop(tx, i); err != nil {
				return err
			}
			key = keys[i]
			return nil
		}
		return nil
	})
	return key, err
}

// popEffect is the effect of a pop popFirstKey ran (BLPOP, LMPOP, BZPOPMIN, ZMPOP, ...): the
// single-key pop it did, name key [n], as Redis propagates them. The command itself would not
// do: a blocked client served by a retry skips keys of another type, which a follower running
// it would answer WRONGTYPE, popping nothing.
func popEffect(name string, key []byte, n int, counted bool) [][]byte {
	eff := [][]byte{[]byte(name), key}
	if counted {
		eff = append(eff, strconv.AppendInt(nil, int64(n), 10))
	}
	return eff
}

// dbKeys names keys in the client's database.
func dbKeys(c *Ctx, keys [][]byte) []kspKey {
	ks := make([]kspKey, len(keys))
	for i, k := range keys {
		ks[i] = kspKey{DB: c.DB(), Key: k}
	}
	return ks
}

// randArgs parses the count and the WITHVALUES or WITHSCORES word (with) of HRANDFIELD,
// SRANDMEMBER (with "") and ZRANDMEMBER, as Redis does; ok false when it replied an error.
func randArgs(c *Ctx, with string) (count int64, withValues, ok bool) {
	count, ok = ParseInt(c.Args[2])
	if !ok {
		c.Err(ErrNotInt)
		return 0, false, false
	}
	if count == math.MinInt64 {
		c.Err(Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"))
		return 0, false, false
	}
	switch {
	case len(c.Args) == 4 && with != "" && is(c.Args[3], with):
		withValues = true
	case len(c.Args) > 3:
		c.Err(ErrSyntax)
		return 0, false, false
	}
	if withValues && (count < -math.MaxInt64/2 || count > math.MaxInt64/2) {
		c.Err(Error("ERR value is out of range"))
		return 0, false, false
	}
	return count, withValues, true
}

// writeRandom replies count random elements of a collection of n (0: missing), as Redis's
// *RANDMEMBER and HRANDFIELD with a count: distinct ones for a positive count (all when it is at
// least n), -count that may repeat for a negative one, streamed however many. write writes
// element i: its member, and its value when withValues (RESP2 flat, RESP3 a pair each).
func writeRandom(c *Ctx, n int, count int64, withValues bool, write func(i int)) {
	resp3 := c.W.Proto() >= 3
	header := func(k int64) {
		if withValues && !resp3 {
			c.W.Array(int(2 * k))
		} else {
			c.W.Array(int(k))
		}
	}
	one := func(i int) {
		if withValues && resp3 {
			c.W.Array(2)
		}
		write(i)
	}
	if n > 0 && count < 0 {
		header(-count)
		for k := int64(0); k < -count; k++ {
			one(rand.IntN(n))
			if !c.MaybeFlush() {
				return
			}
		}
		return
	}
	var picks []int
	switch {
	case n == 0 || count <= 0:
	case count >= int64(n):
		picks = rand.Perm(n)
	default:
		picks = rand.Perm(n)[:count]
	}
	header(int64(len(picks)))
	for _, i := range picks {
		one(i)
	}
}

// scanCollection is HSCAN, SSCAN and ZSCAN: the cursor, then the key's type (read), then the
// options, as Redis checks them; a page of members in hash order (collscan.go), or all of a
// compact collection with cursor 0. write writes member i (and its value or score).
func scanCollection(c *Ctx, read func() (members [][]byte, compact bool, err error), perMember int, write func(i int)) {
	if _, ok := parseCursor(c.Args[2]); !ok {
		c.Err(ErrInvalidCursor)
		return
	}
	members, compact, err := read()
	if err != nil {
		c.Err(err)
		return
	}
	a, err := parseScanArgs(c.Args[2:], false)
	if err != nil {
		c.Err(err)
		return
	}
	if compact {
		// A listpack or intset comes whole, whatever the cursor, as in Redis.
		a.cursor, a.count = 0, max(len(members), 1)
	}
	page, next := scanPage(members, a)
	c.W.Array(2)
	c.W.BulkString(strconv.FormatUint(next, 10))
	c.W.Array(perMember * len(page))
	for _, i := range page {
		write(i)
	}
}
