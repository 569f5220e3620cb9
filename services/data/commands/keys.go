package commands

import (
	"bytes"
	"math"
	"strconv"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

func init() {
	register(
		&Command{Name: "del", Arity: -2, Flags: FlagWrite, FirstKey: 1, LastKey: -1, Step: 1,
			Group: "generic", Since: "1.0.0", Complexity: "O(N) where N is the number of keys that will be removed.", Summary: "Deletes one or more keys.", Handler: delCmd},
		&Command{Name: "unlink", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: -1, Step: 1,
			Group: "generic", Since: "4.0.0", Complexity: "O(1) for each key removed regardless of its size.", Summary: "Asynchronously deletes one or more keys.", Handler: delCmd},
		&Command{Name: "exists", Arity: -2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1,
			Group: "generic", Since: "1.0.0", Complexity: "O(N) where N is the number of keys to check.", Summary: "Determines whether one or more keys exist.", Handler: existsCmd},
		&Command{Name: "touch", Arity: -2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1,
			Group: "generic", Since: "3.2.1", Complexity: "O(N) where N is the number of keys that will be touched.", Summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed.", Handler: touchCmd},
		&Command{Name: "type", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "1.0.0", Complexity: "O(1)", Summary: "Determines the type of value stored at a key.", Handler: typeCmd},
		&Command{Name: "expire", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "1.0.0", Complexity: "O(1)", Summary: "Sets the expiration time of a key in seconds.", Handler: expireCmd},
		&Command{Name: "pexpire", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "2.6.0", Complexity: "O(1)", Summary: "Sets the expiration time of a key in milliseconds.", Handler: pexpireCmd},
		&Command{Name: "expireat", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "1.2.0", Complexity: "O(1)", Summary: "Sets the expiration time of a key to a Unix timestamp.", Handler: expireatCmd},
		&Command{Name: "pexpireat", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "2.6.0", Complexity: "O(1)", Summary: "Sets the expiration time of a key to a Unix milliseconds timestamp.", Handler: pexpireatCmd},
		&Command{Name: "ttl", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "1.0.0", Complexity: "O(1)", Summary: "Returns the expiration time in seconds of a key.", Handler: ttlCmd},
		&Command{Name: "pttl", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "2.6.0", Complexity: "O(1)", Summary: "Returns the expiration time in milliseconds of a key.", Handler: pttlCmd},
		&Command{Name: "expiretime", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "7.0.0", Complexity: "O(1)", Summary: "Returns the expiration time of a key as a Unix timestamp.", Handler: expiretimeCmd},
		&Command{Name: "pexpiretime", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "7.0.0", Complexity: "O(1)", Summary: "Returns the expiration time of a key as a Unix milliseconds timestamp.", Handler: pexpiretimeCmd},
		&Command{Name: "persist", Arity: 2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "2.2.0", Complexity: "O(1)", Summary: "Removes the expiration time of a key.", Handler: persistCmd},
		&Command{Name: "rename", Arity: 3, Flags: FlagWrite, FirstKey: 1, LastKey: 2, Step: 1,
			Group: "generic", Since: "1.0.0", Complexity: "O(1)", Summary: "Renames a key and overwrites the destination.", Handler: renameCmd},
		&Command{Name: "renamenx", Arity: 3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 2, Step: 1,
			Group: "generic", Since: "1.0.0", Complexity: "O(1)", Summary: "Renames a key only when the target key name doesn't exist.", Handler: renamenxCmd},
		&Command{Name: "copy", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 2, Step: 1,
			Group: "generic", Since: "6.2.0", Complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.", Summary: "Copies the value of a key to a new key.", Handler: copyCmd},
		&Command{Name: "move", Arity: 3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "1.0.0", Complexity: "O(1)", Summary: "Moves a key to another database.", Handler: moveCmd},
		&Command{Name: "scan", Arity: -2, Flags: FlagReadonly, Group: "generic", Since: "2.8.0",
			Complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
			Summary:    "Iterates over the key names in the database.", Handler: scanCmd},
		&Command{Name: "keys", Arity: 2, Flags: FlagReadonly, Group: "generic", ExtraACL: []string{"@dangerous"}, Since: "1.0.0",
			Complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
			Summary:    "Returns all key names that match a pattern.", Handler: keysCmd},
		&Command{Name: "randomkey", Arity: 1, Flags: FlagReadonly, Group: "generic", Since: "1.0.0", Complexity: "O(1)",
			Summary: "Returns a random key name from the database.", Handler: randomkeyCmd},
		&Command{Name: "object", Arity: -2, Group: "generic", Since: "2.2.3", Complexity: "Depends on subcommand.",
			Summary: "A container for object introspection commands.",
			Subcommands: map[string]*Command{
				"encoding": {Arity: 3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, Since: "2.2.3", Complexity: "O(1)",
					Summary: "Returns the internal encoding of a Redis object.", Handler: objectEncodingCmd},
				"freq": {Arity: 3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, Since: "4.0.0", Complexity: "O(1)",
					Summary: "Returns the logarithmic access frequency counter of a Redis object.", Handler: objectFreqCmd},
				"idletime": {Arity: 3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, Since: "2.2.3", Complexity: "O(1)",
					Summary: "Returns the time since the last access to a Redis object.", Handler: objectIdletimeCmd},
				"refcount": {Arity: 3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, Since: "2.2.3", Complexity: "O(1)",
					Summary: "Returns the reference count of a value of a key.", Handler: objectRefcountCmd},
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "6.2.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: helpCmd},
			}},
	)
}

func delCmd(c *Ctx) {
	pos := make([]int, len(c.Args)-1)
	for i := range pos {
		pos[i] = i + 1
	}
	var n int64
	deleted := make([]bool, len(pos))
	err := c.KS.Update(c.Sess, c.keyArgs(pos...), func(tx *keyspace.Tx) error {
		n = 0
		for i := range pos {
			deleted[i] = tx.Delete(i)
			if deleted[i] {
				n++
			}
		}
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	for i, d := range deleted {
		if d {
			c.Notify(pubsub.Generic, "del", c.Args[pos[i]])
		}
	}
	c.W.Int(n)
}

// EXISTS and TOUCH look each key up for reading (lookupKeyRead), so each missing one states
// keymiss, as TYPE and the TTL family do: in Redis 7.0 only OBJECT's lookups state none.
func existsCmd(c *Ctx) { c.W.Int(int64(c.KS.Exists(c.Sess, c.DB(), c.Args[1:], c.keyMissAt(1)))) }

func touchCmd(c *Ctx) { c.W.Int(int64(c.KS.Touch(c.Sess, c.DB(), c.Args[1:], c.keyMissAt(1)))) }

// OBJECT FREQ and IDLETIME report the key's access word (keyspace/access.go), which holds the
// LFU counter under an LFU policy and the access clock otherwise, so each answers only under
// its kind of policy, with Redis's errors.
func objectFreqCmd(c *Ctx) {
	a, ok := c.KS.AccessOf(c.Sess, c.DB(), c.Args[2])
	switch {
	case !ok:
		c.W.Null()
	case !a.LFU:
		c.Err(Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."))
	default:
		c.W.Int(int64(a.Freq))
	}
}

func objectIdletimeCmd(c *Ctx) {
	a, ok := c.KS.AccessOf(c.Sess, c.DB(), c.Args[2])
	switch {
	case !ok:
		c.W.Null()
	case a.LFU:
		c.Err(Error("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."))
	default:
		c.W.Int(a.IdleMs / 1000)
	}
}

func typeCmd(c *Ctx) {
	m, ok := c.KS.Lookup(c.Sess, c.DB(), c.Args[1])
	if !ok {
		c.KeyMiss(c.Args[1])
		c.W.Simple("none")
		return
	}
	c.W.Simple(keyspace.TypeName(m.Type))
}

// expireArgs are EXPIRE's parsed options.
type expireArgs struct {
	at             int64
	nx, xx, gt, lt bool
}

// parseExpireArgs checks in Redis's order: the options, then the time, which must be an integer
// that neither scaling to milliseconds nor adding to now overflows.
func parseExpireArgs(c *Ctx, unit expireUnit, absolute bool) (expireArgs, error) {
	var a expireArgs
	for _, arg := range c.Args[3:] {
		switch {
		case is(arg, "NX"):
			a.nx = true
		case is(arg, "XX"):
			a.xx = true
		case is(arg, "GT"):
			a.gt = true
		case is(arg, "LT"):
			a.lt = true
		default:
			return a, Error("ERR Unsupported option " + string(arg))
		}
	}
	if a.nx && (a.xx || a.gt || a.lt) {
		return a, Error("ERR NX and XX, GT or LT options at the same time are not compatible")
	}
	if a.gt && a.lt {
		return a, Error("ERR GT and LT options at the same time are not compatible")
	}
	n, err := intArg(c.Args[2])
	if err != nil {
		return a, err
	}
	// Redis allows zero and negative times here (the key is deleted). Seconds that do not fit
	// in milliseconds either way are invalid, but of the addition to now only a sum past the
	// largest time is: now is positive, so a negative time cannot overflow, and Redis deletes
	// the key even for PEXPIRE k -9223372036854775808.
	ms := n
	if unit == unitSeconds {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return a, ErrInvalidExpire(c.Cmd.Name)
		}
		ms = n * 1000
	}
	if !absolute {
		now := c.Now()
		if ms > math.MaxInt64-now {
			return a, ErrInvalidExpire(c.Cmd.Name)
		}
		ms += now
	}
	a.at = ms
	return a, nil
}

func expireCmd(c *Ctx)    { expireGeneric(c, unitSeconds, false) }
func pexpireCmd(c *Ctx)   { expireGeneric(c, unitMillis, false) }
func expireatCmd(c *Ctx)  { expireGeneric(c, unitSeconds, true) }
func pexpireatCmd(c *Ctx) { expireGeneric(c, unitMillis, true) }

func expireGeneric(c *Ctx, unit expireUnit, absolute bool) {
	a, err := parseExpireArgs(c, unit, absolute)
	if err != nil {
		c.Err(err)
		return
	}
	var set, deleted bool
	err = c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		set, deleted = false, false
		m, ok := tx.Meta(0)
		if !ok {
			return nil
		}
		cur := m.ExpireAt // 0 = no TTL, which GT/LT treat as infinite
		switch {
		case a.nx && cur != 0, a.xx && cur == 0:
			return nil
		case a.gt && (cur == 0 || a.at <= cur):
			return nil
		case a.lt && cur != 0 && a.at >= cur:
			return nil
		}
		if a.at <= tx.Now() {
			tx.Delete(0)
			deleted = true
		} else {
			tx.SetExpire(0, a.at)
		}
		set = true
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	switch {
	case deleted:
		c.Notify(pubsub.Generic, "del", c.Args[1])
	case set:
		c.Notify(pubsub.Generic, "expire", c.Args[1])
	}
	c.W.Int(b2i(set))
}

// ttlGeneric replies the TTL or expire time of key 1: -2 missing, -1 no expiry.
func ttlGeneric(c *Ctx, f func(expireAt, now int64) int64) {
	m, ok := c.KS.Lookup(c.Sess, c.DB(), c.Args[1])
	switch {
	case !ok:
		c.KeyMiss(c.Args[1])
		c.W.Int(-2)
	case m.ExpireAt == 0:
		c.W.Int(-1)
	default:
		c.W.Int(f(m.ExpireAt, c.Now()))
	}
}

// msToNearestSec rounds ms >= 0 to the nearest second, halves up, as Redis's (ms+500)/1000 but
// without its overflow: for an expire-at near the largest 64-bit millisecond time (PEXPIREAT k
// 9223372036854775807) Redis answers EXPIRETIME with 9223372036854776, not a wrapped negative.
func msToNearestSec(ms int64) int64 { return ms/1000 + (ms%1000+500)/1000 }

func ttlCmd(c *Ctx) {
	ttlGeneric(c, func(at, now int64) int64 { return msToNearestSec(max(at-now, 0)) })
}
func pttlCmd(c *Ctx)        { ttlGeneric(c, func(at, now int64) int64 { return max(at-now, 0) }) }
func expiretimeCmd(c *Ctx)  { ttlGeneric(c, func(at, _ int64) int64 { return msToNearestSec(at) }) }
func pexpiretimeCmd(c *Ctx) { ttlGeneric(c, func(at, _ int64) int64 { return at }) }

func persistCmd(c *Ctx) {
	var done bool
	err := c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		m, ok := tx.Meta(0)
		done = ok && m.ExpireAt != 0
		if done {
			tx.SetExpire(0, 0)
		}
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if done {
		c.Notify(pubsub.Generic, "persist", c.Args[1])
	}
	c.W.Int(b2i(done))
}

// moveValue copies key src to dst inside tx (value, type and TTL), optionally deleting src.
func moveValue(tx *keyspace.Tx, src, dst int, deleteSrc bool) error {
	m, _ := tx.Meta(src)
	v, _, err := tx.Value(src)
	if err != nil {
		return err
	}
	if deleteSrc {
		tx.Delete(src)
	}
	vtype := m.Type
	if m.Raw {
		vtype |= keyspace.RawHint
	}
	tx.Put(dst, v, m.ExpireAt, vtype)
	return nil
}

func renameCmd(c *Ctx)   { renameGeneric(c, false) }
func renamenxCmd(c *Ctx) { renameGeneric(c, true) }

func renameGeneric(c *Ctx, nx bool) {
	var renamed bool
	same := string(c.Args[1]) == string(c.Args[2])
	err := c.KS.Update(c.Sess, c.keyArgs(1, 2), func(tx *keyspace.Tx) error {
		renamed = false
		if !tx.Exists(0) {
			return ErrNoSuchKey
		}
		if same {
			renamed = !nx
			return nil
		}
		if nx && tx.Exists(1) {
			return nil
		}
		renamed = true
		return moveValue(tx, 0, 1, true)
	})
	if err == nil && renamed && !same {
		c.NotifyNew(c.DB(), c.Args[2]) // Redis deletes the destination and adds it anew
		c.Notify(pubsub.Generic, "rename_from", c.Args[1])
		c.Notify(pubsub.Generic, "rename_to", c.Args[2])
	}
	switch {
	case err != nil:
		c.Err(err)
	case nx:
		c.W.Int(b2i(renamed))
	default:
		c.OK()
	}
}

func copyCmd(c *Ctx) {
	dstDB, replace := c.DB(), false
	for i := 3; i < len(c.Args); i++ {
		switch {
		case is(c.Args[i], "REPLACE"):
			replace = true
		case is(c.Args[i], "DB") && i+1 < len(c.Args):
			db, err := dbArg(c, c.Args[i+1])
			if err != nil {
				c.Err(err)
				return
			}
			dstDB = db
			i++
		default:
			c.Err(ErrSyntax)
			return
		}
	}
	if dstDB == c.DB() && string(c.Args[1]) == string(c.Args[2]) {
		c.Err(ErrSameObject)
		return
	}
	keys := []keyspace.Key{{DB: c.DB(), Key: c.Args[1]}, {DB: dstDB, Key: c.Args[2]}}
	var copied, missed bool
	err := c.KS.Update(c.Sess, keys, func(tx *keyspace.Tx) error {
		copied, missed = false, !tx.Exists(0)
		if missed || (tx.Exists(1) && !replace) {
			return nil
		}
		copied = true
		return moveValue(tx, 0, 1, false)
	})
	if missed {
		// The source is looked up for reading (lookupKeyRead), the destination for writing.
		c.KeyMiss(c.Args[1])
	}
	if err != nil {
		c.Err(err)
		return
	}
	if copied {
		c.NotifyNew(dstDB, c.Args[2]) // REPLACE deletes the destination and adds it anew
		c.NotifyDB(pubsub.Generic, "copy_to", dstDB, c.Args[2])
	}
	c.W.Int(b2i(copied))
}

func moveCmd(c *Ctx) {
	db, err := dbArg(c, c.Args[2])
	if err != nil {
		c.Err(err)
		return
	}
	if db == c.DB() {
		c.Err(ErrSameObject)
		return
	}
	keys := []keyspace.Key{{DB: c.DB(), Key: c.Args[1]}, {DB: db, Key: c.Args[1]}}
	var moved bool
	err = c.KS.Update(c.Sess, keys, func(tx *keyspace.Tx) error {
		moved = false
		if !tx.Exists(0) || tx.Exists(1) {
			return nil
		}
		moved = true
		return moveValue(tx, 0, 1, true)
	})
	if err != nil {
		c.Err(err)
		return
	}
	if moved {
		c.NotifyNew(db, c.Args[1])
		c.Notify(pubsub.Generic, "move_from", c.Args[1])
		c.NotifyDB(pubsub.Generic, "move_to", db, c.Args[1])
	}
	c.W.Int(b2i(moved))
}

// scanArgs are SCAN's parsed options.
type scanArgs struct {
	cursor uint64
	match  []byte
	count  int
	typ    string
	hasTyp bool
}

// parseScanArgs parses a cursor and the options after it (args[0] is the cursor): MATCH and
// COUNT, and TYPE where withType (SCAN; not HSCAN and the like).
func parseScanArgs(args [][]byte, withType bool) (scanArgs, error) {
	a := scanArgs{count: 10}
	cur, ok := parseCursor(args[0])
	if !ok {
		return a, ErrInvalidCursor
	}
	a.cursor = cur
	for i := 1; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return a, ErrSyntax
		}
		v := args[i+1]
		switch {
		case is(args[i], "MATCH"):
			a.match = v
		case is(args[i], "COUNT"):
			n, err := intArg(v)
			if err != nil {
				return a, err
			}
			if n < 1 {
				return a, ErrSyntax
			}
			a.count = int(min(n, 1<<20))
		case withType && is(args[i], "TYPE"):
			a.typ, a.hasTyp = string(v), true
		default:
			return a, ErrSyntax
		}
	}
	// The pattern "*" means no pattern, as in Redis: GlobMatch, like Redis's matcher, does not
	// match "*" against the empty key.
	if len(a.match) == 1 && a.match[0] == '*' {
		a.match = nil
	}
	return a, nil
}

// parseCursor parses a SCAN cursor the way Redis's parseScanCursorOrReply does with strtoul(3),
// since clients may send any unsigned 64-bit number back, and a few send more: the argument is
// read as a C string (up to its first NUL byte); it may not start with white space; one '+' or
// '-' sign may precede the digits, and a negative cursor wraps modulo 2^64 ("-1" is
// 18446744073709551615); leading zeros are allowed; the empty string is cursor 0. Anything else,
// or a magnitude above 2^64-1, is not a cursor.
func parseCursor(b []byte) (uint64, bool) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return 0, true
	}
	neg := b[0] == '-'
	if b[0] == '+' || b[0] == '-' {
		b = b[1:]
	}
	// ParseUint in base 10 takes digits only: no sign, space or underscore.
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

func scanCmd(c *Ctx) {
	a, err := parseScanArgs(c.Args[1:], true)
	if err != nil {
		c.Err(err)
		return
	}
	var keys [][]byte
	// Any cursor is accepted, as in Redis: one that Scan never returned ends the iteration.
	next := c.KS.Scan(c.Sess, c.DB(), a.cursor, a.count, func(key []byte, m keyspace.Meta) {
		if a.hasTyp && !equalFoldString(keyspace.TypeName(m.Type), a.typ) {
			return
		}
		if a.match != nil && !GlobMatch(a.match, key, false) {
			return
		}
		keys = append(keys, append([]byte{}, key...))
	})
	c.W.Array(2)
	c.W.BulkString(strconv.FormatUint(next, 10))
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.Bulk(k)
	}
}

func equalFoldString(a, b string) bool { return is([]byte(a), upper([]byte(b))) }

func keysCmd(c *Ctx) {
	pat := c.Args[1]
	var keys [][]byte
	if GlobIsLiteral(pat) {
		if _, ok := c.KS.Lookup(c.Sess, c.DB(), pat); ok {
			keys = append(keys, pat)
		}
	} else {
		all := len(pat) == 1 && pat[0] == '*'
		c.KS.Keys(c.Sess, c.DB(), func(key []byte, _ keyspace.Meta) {
			if all || GlobMatch(pat, key, false) {
				keys = append(keys, append([]byte{}, key...))
			}
		})
	}
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.Bulk(k)
	}
}

func randomkeyCmd(c *Ctx) {
	if k := c.KS.RandomKey(c.Sess, c.DB()); k != nil {
		c.W.Bulk(k)
		return
	}
	c.W.Null()
}

// groupedEncoding is OBJECT ENCODING of the grouped collection of type typ at key.
func groupedEncoding(c *Ctx, key []byte, typ uint8) (string, error) {
	var flags byte
	err := c.KS.Update(c.Sess, []kspKey{{DB: c.DB(), Key: key}}, func(tx *keyspace.Tx) error {
		d, err := tx.Dir(0)
		if err != nil || d == nil || len(d.Meta) < 2 {
			return err
		}
		flags = d.Meta[1]
		return nil
	})
	switch typ {
	case typeHash:
		return (&hashValue{flags: flags}).encoding(), err
	case typeSet:
		return (&setValue{flags: flags}).encoding(), err
	case typeZSet:
		return (&zsetValue{flags: flags}).encoding(), err
	case typeList:
		return "quicklist", err
	}
	return "stream", err
}

func objectEncodingCmd(c *Ctx) {
	// A string written by an in-place edit, or longer than any short encoding, is "raw" by
	// its metadata alone: a large value is not read.
	if m, ok := c.KS.Lookup(c.Sess, c.DB(), c.Args[2]); ok && m.Type == typeString && (m.Raw || m.Len > 44) {
		c.W.BulkString("raw")
		return
	} else if ok && m.Grouped {
		// A grouped collection: its encoding from its directory's meta (the flags byte after the
		// format byte, for hashes, sets and sorted sets), not from its groups.
		enc, err := groupedEncoding(c, c.Args[2], m.Type)
		if err != nil {
			c.Err(err)
			return
		}
		c.W.BulkString(enc)
		return
	}
	var enc string
	found, err := c.KS.Get(c.Sess, c.DB(), c.Args[2], func(v keyspace.Value, m keyspace.Meta) error {
		val, err := v.Bytes()
		if err != nil {
			return err
		}
		switch m.Type {
		case typeHash:
			h, err := decodeHash(val)
			if err != nil {
				return err
			}
			enc = h.encoding()
		case typeList:
			enc = "quicklist"
		case typeStream:
			enc = "stream"
		case typeZSet:
			z, err := decodeZSet(val)
			if err != nil {
				return err
			}
			enc = z.encoding()
		case typeSet:
			s, err := decodeSet(val)
			if err != nil {
				return err
			}
			enc = s.encoding()
		default:
			enc = stringEncoding(val)
			if m.Raw {
				enc = "raw"
			}
		}
		return nil
	})
	switch {
	case err != nil:
		c.Err(err)
	case !found:
		c.W.Null()
	default:
		c.W.BulkString(enc)
	}
}

// stringEncoding is the encoding Redis would report for a string value: "int" for a value that
// is a canonical 64-bit integer, "embstr" up to 44 bytes, "raw" beyond.
func stringEncoding(v []byte) string {
	if len(v) <= 20 {
		if _, ok := ParseInt(v); ok {
			return "int"
		}
	}
	if len(v) <= 44 {
		return "embstr"
	}
	return "raw"
}
