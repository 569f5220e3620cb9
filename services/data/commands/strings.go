package commands

import (
	"bytes"
	"math"
	"strconv"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

type kspKey = keyspace.Key

const typeString = keyspace.TypeString

func init() {
	register(
		&Command{Name: "get", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "1.0.0", Complexity: "O(1)", Summary: "Returns the string value of a key.", Handler: getCmd},
		&Command{Name: "set", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "1.0.0", Complexity: "O(1)", Summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", Handler: setCmd},
		&Command{Name: "setnx", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "1.0.0", Complexity: "O(1)", Summary: "Set the string value of a key only when the key doesn't exist.", Handler: setnxCmd},
		&Command{Name: "setex", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "2.0.0", Complexity: "O(1)", Summary: "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", Handler: setexCmd},
		&Command{Name: "psetex", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "2.6.0", Complexity: "O(1)", Summary: "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", Handler: psetexCmd},
		&Command{Name: "mget", Arity: -2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1,
			Group: "string", Since: "1.0.0", Complexity: "O(N) where N is the number of keys to retrieve.", Summary: "Atomically returns the string values of one or more keys.", Handler: mgetCmd},
		&Command{Name: "mset", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: -1, Step: 2,
			Group: "string", Since: "1.0.1", Complexity: "O(N) where N is the number of keys to set.", Summary: "Atomically creates or modifies the string values of one or more keys.", Handler: msetCmd},
		&Command{Name: "msetnx", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: -1, Step: 2,
			Group: "string", Since: "1.0.1", Complexity: "O(N) where N is the number of keys to set.", Summary: "Atomically modifies the string values of one or more keys only when all keys don't exist.", Handler: msetnxCmd},
		&Command{Name: "getset", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "1.0.0", Complexity: "O(1)", Summary: "Returns the previous string value of a key after setting it to a new value.", Handler: getsetCmd},
		&Command{Name: "getdel", Arity: 2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "6.2.0", Complexity: "O(1)", Summary: "Returns the string value of a key after deleting the key.", Handler: getdelCmd},
		&Command{Name: "getex", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "6.2.0", Complexity: "O(1)", Summary: "Returns the string value of a key after setting its expiration time.", Handler: getexCmd},
		&Command{Name: "append", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "2.0.0", Complexity: "O(1).", Summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.", Handler: appendCmd},
		&Command{Name: "strlen", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "2.2.0", Complexity: "O(1)", Summary: "Returns the length of a string value.", Handler: strlenCmd},
		&Command{Name: "getrange", Arity: 4, Flags: FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "2.4.0", Complexity: "O(N) where N is the length of the returned string.", Summary: "Returns a substring of the string stored at a key.", Handler: getrangeCmd},
		&Command{Name: "substr", Arity: 4, Flags: FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "1.0.0", Complexity: "O(N) where N is the length of the returned string.", Summary: "Returns a substring from a string value.", Handler: getrangeCmd},
		&Command{Name: "setrange", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "2.2.0", Complexity: "O(1), not counting the time taken to copy the new string in place.", Summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", Handler: setrangeCmd},
		&Command{Name: "incr", Arity: 2, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "1.0.0", Complexity: "O(1)", Summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Handler: incrCmd},
		&Command{Name: "decr", Arity: 2, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "1.0.0", Complexity: "O(1)", Summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Handler: decrCmd},
		&Command{Name: "incrby", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "1.0.0", Complexity: "O(1)", Summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Handler: incrbyCmd},
		&Command{Name: "decrby", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "1.0.0", Complexity: "O(1)", Summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", Handler: decrbyCmd},
		&Command{Name: "incrbyfloat", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "string", Since: "2.6.0", Complexity: "O(1)", Summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Handler: incrbyfloatCmd},
	)
}

func getCmd(c *Ctx) {
	found, err := c.KS.Get(c.Sess, c.DB(), c.Args[1], func(v keyspace.Value, m keyspace.Meta) error {
		if m.Type != typeString {
			c.Err(ErrWrongType)
			return nil
		}
		return writeValue(c, v)
	})
	switch {
	case c.Broken:
	case err != nil:
		c.Err(err)
	case !found:
		c.KeyMiss(c.Args[1])
		c.W.Null()
	}
}

// setArgs are SET's parsed options.
type setArgs struct {
	nx, xx, get, keepTTL bool
	// expOpt and expVal are the last EX, PX, EXAT or PXAT option and its value, not yet
	// checked; nil when there is none.
	expOpt, expVal []byte
}

// parseSetArgs checks the syntax of SET's options as Redis's parseExtendedStringArgumentsOrReply
// does, and only the syntax: NX and XX exclude each other, KEEPTTL and the expire options too,
// and an expire option may be repeated (the last one counts) but not mixed with another kind.
// Anything else is a syntax error, whatever comes before or after it. The expire value is
// checked afterwards (see setExpireAt), so "EX abc EX 10" sets a TTL of 10 seconds and
// "EX abc NX XX" is a syntax error, as in Redis.
func parseSetArgs(args [][]byte) (setArgs, error) {
	var a setArgs
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case is(arg, "NX") && !a.xx:
			a.nx = true
		case is(arg, "XX") && !a.nx:
			a.xx = true
		case is(arg, "GET"):
			a.get = true
		case is(arg, "KEEPTTL") && a.expOpt == nil:
			a.keepTTL = true
		case isExpireOpt(arg) && !a.keepTTL && (a.expOpt == nil || bytes.EqualFold(arg, a.expOpt)) && i+1 < len(args):
			a.expOpt, a.expVal = arg, args[i+1]
			i++
		default:
			return a, ErrSyntax
		}
	}
	return a, nil
}

// expireAt returns the absolute expire time (unix ms) the parsed expire option asks for, or 0
// when there is none.
func (a setArgs) expireAt(cmd string, now int64) (int64, error) {
	if a.expOpt == nil {
		return 0, nil
	}
	return parseExpireOpt(cmd, a.expOpt, a.expVal, now)
}

func isExpireOpt(arg []byte) bool {
	return is(arg, "EX") || is(arg, "PX") || is(arg, "EXAT") || is(arg, "PXAT")
}

// parseExpireOpt converts the value of an EX/PX/EXAT/PXAT option to absolute unix ms.
func parseExpireOpt(cmd string, opt, val []byte, now int64) (int64, error) {
	unit, abs := unitSeconds, false
	switch {
	case is(opt, "PX"):
		unit = unitMillis
	case is(opt, "EXAT"):
		abs = true
	case is(opt, "PXAT"):
		unit, abs = unitMillis, true
	}
	return expireAt(cmd, val, unit, abs, now)
}

// setCmd checks in Redis's order: the options' syntax, the expire time, then the old value's
// type (GET), then NX or XX.
func setCmd(c *Ctx) {
	a, err := parseSetArgs(c.Args[3:])
	if err != nil {
		c.Err(err)
		return
	}
	expireAt, err := a.expireAt("set", c.Now())
	if err != nil {
		c.Err(err)
		return
	}
	key, val := c.Args[1], c.Args[2]
	if !a.nx && !a.xx && !a.get && !a.keepTTL {
		if err := c.KS.Put(c.Sess, c.DB(), key, val, expireAt, typeString); err != nil {
			c.Err(err)
			return
		}
		notifySet(c, key, expireAt)
		c.OK()
		return
	}
	var old []byte
	var hadOld, done, missed bool
	err = c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		m, exists := tx.Meta(0)
		hadOld, done, missed = false, false, a.get && !exists
		if a.get && exists {
			if m.Type != typeString {
				return ErrWrongType
			}
			v, _, err := tx.Value(0)
			if err != nil {
				return err
			}
			old, hadOld = v, true
		}
		if (a.nx && exists) || (a.xx && !exists) {
			return nil
		}
		exp := expireAt
		if a.keepTTL && exists {
			exp = m.ExpireAt
		}
		if exp != 0 && exp <= tx.Now() {
			tx.Delete(0)
		} else {
			tx.Put(0, val, exp, typeString)
		}
		done = true
		return nil
	})
	if missed {
		// SET ... GET reads the key first (getGenericCommand): its miss comes before "set".
		c.KeyMiss(key)
	}
	if err == nil && done {
		notifySet(c, key, expireAt)
	}
	switch {
	case err != nil:
		c.Err(err)
	case a.get && hadOld:
		c.W.Bulk(old)
	case a.get, !done:
		c.W.Null()
	default:
		c.OK()
	}
}

func setnxCmd(c *Ctx) {
	var set bool
	err := c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		set = !tx.Exists(0)
		if set {
			tx.Put(0, c.Args[2], 0, typeString)
		}
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if set {
		c.Notify(pubsub.String, "set", c.Args[1])
	}
	c.W.Int(b2i(set))
}

// notifySet states SET's events: "set", and "expire" when it gave the key a time to live.
//
// A time already past (EXAT or PXAT) leaves no key here, where Redis 7.0 stores the key and
// expires it at its next lookup or expire cycle: so the events are Redis's whole sequence,
// "new" when there was no key (not the keyspace's record, as nothing was created), "set",
// "expire", then "expired" at once, in place of the "del" of the key the write replaced. A
// follower applying the SET (Held set: only the applier of the primary's stream has it) states
// "del" instead of "expired", as a Redis replica does when the primary's expiry reaches it.
func notifySet(c *Ctx, key []byte, expireAt int64) {
	if expireAt != 0 && expireAt <= c.Now() {
		if !c.Sess.TakeKey(c.DB(), key, false) {
			c.NotifyNew(c.DB(), key)
		}
		c.Notify(pubsub.String, "set", key)
		c.Notify(pubsub.Generic, "expire", key)
		switch {
		case c.Held != nil && c.PS.Notifying(pubsub.Generic):
			c.PS.NotifyKeyspaceHeld(c.Held, pubsub.Generic, "del", c.DB(), key)
		case c.Held == nil && c.PS.Notifying(pubsub.Expired):
			c.PS.NotifyKeyspaceHeld(c.Held, pubsub.Expired, "expired", c.DB(), key)
		}
		return
	}
	c.Notify(pubsub.String, "set", key)
	if expireAt != 0 {
		c.Notify(pubsub.Generic, "expire", key)
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func setexCmd(c *Ctx)  { setexGeneric(c, "setex", unitSeconds) }
func psetexCmd(c *Ctx) { setexGeneric(c, "psetex", unitMillis) }

func setexGeneric(c *Ctx, name string, unit expireUnit) {
	at, err := expireAt(name, c.Args[2], unit, false, c.Now())
	if err != nil {
		c.Err(err)
		return
	}
	if err := c.KS.Put(c.Sess, c.DB(), c.Args[1], c.Args[3], at, typeString); err != nil {
		c.Err(err)
		return
	}
	notifySet(c, c.Args[1], at)
	c.OK()
}

// WriteGetReplies answers GET for each key, in order, reading every value in one batch of SSD
// reads: the server uses it for a run of pipelined GETs. It returns how many replies were
// errors.
// After each reply it calls after (when not nil) with the key's position, so that the server can
// tell each reply's extent.
func WriteGetReplies(c *Ctx, keys [][]byte, after func(i int)) (failed int) {
	c.KS.MGet(c.Sess, c.DB(), keys, false, func(i int, v keyspace.Value, m keyspace.Meta, ok bool, err error) error {
		bad, err := WriteGetReply(c, keys[i], v, m, ok, err)
		if err != nil {
			return err
		}
		if bad {
			failed++
		}
		if after != nil {
			after(i)
		}
		return nil
	}, c.MaybeFlush)
	return failed
}

// WriteGetReply writes GET's reply for what a read of key found (keyspace.MGet's or ReadMany's
// callback arguments) and reports whether it is an error reply. A miss states "keymiss" (KeyMiss:
// one atomic load while class m is off), so the batched GETs of the event loops state it as the
// command does. The error returned
// means the value could not be written whole (the reply is broken, see writeValue).
func WriteGetReply(c *Ctx, key []byte, v keyspace.Value, m keyspace.Meta, ok bool, err error) (bool, error) {
	switch {
	case err != nil:
		c.W.Error(ErrorLine(err))
		return true, nil
	case !ok:
		c.KeyMiss(key)
		c.W.Null()
	case m.Type != typeString:
		c.W.Error(string(ErrWrongType))
		return true, nil
	default:
		return false, writeValue(c, v)
	}
	return false, nil
}

// mgetCmd streams its reply: values are read a bounded batch at a time and handed to the
// client as the reply grows (Ctx.MaybeFlush), so that MGET of many keys or large values holds a
// few megabytes whatever it names (keyspace.MGet).
func mgetCmd(c *Ctx) {
	keys := c.Args[1:]
	c.W.Array(len(keys))
	// One instant's values, as Redis's MGET: a concurrent MSET or EXEC is not seen half done.
	c.KS.MGet(c.Sess, c.DB(), keys, true, func(i int, v keyspace.Value, m keyspace.Meta, ok bool, err error) error {
		// MGET answers nil for a missing key or one of another type; a failed read is an
		// error element.
		switch {
		case err != nil:
			c.W.Error(ErrorLine(err))
			c.Failed = true
		case !ok:
			c.KeyMiss(keys[i])
			c.W.Null()
		case m.Type != typeString:
			c.W.Null()
		default:
			return writeValue(c, v)
		}
		return nil
	}, c.MaybeFlush)
}

func msetCmd(c *Ctx) {
	if len(c.Args)%2 == 0 {
		c.Err(arityErr(c.Cmd.Name))
		return
	}
	n := (len(c.Args) - 1) / 2
	pos := make([]int, n)
	for i := range pos {
		pos[i] = 1 + 2*i
	}
	err := c.KS.Update(c.Sess, c.keyArgs(pos...), func(tx *keyspace.Tx) error {
		for i := range pos {
			tx.Put(i, c.Args[pos[i]+1], 0, typeString)
		}
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	for _, p := range pos {
		c.Notify(pubsub.String, "set", c.Args[p])
	}
	c.OK()
}

func msetnxCmd(c *Ctx) {
	if len(c.Args)%2 == 0 {
		c.Err(arityErr(c.Cmd.Name))
		return
	}
	n := (len(c.Args) - 1) / 2
	pos := make([]int, n)
	for i := range pos {
		pos[i] = 1 + 2*i
	}
	var set bool
	err := c.KS.Update(c.Sess, c.keyArgs(pos...), func(tx *keyspace.Tx) error {
		set = false
		for i := range pos {
			if tx.Exists(i) {
				return nil
			}
		}
		for i := range pos {
			tx.Put(i, c.Args[pos[i]+1], 0, typeString)
		}
		set = true
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if set {
		for _, p := range pos {
			c.Notify(pubsub.String, "set", c.Args[p])
		}
	}
	c.W.Int(b2i(set))
}

// getThen reads key 1's string value inside a transaction and lets then decide what to write.
// It replies with the old value (nil if missing), or with then's error, which cancels the write.
// Once it committed, it states the event then set in event and class, if any.
func getThen(c *Ctx, then func(tx *keyspace.Tx, exists bool, m keyspace.Meta) error) {
	getThenNotify(c, then, nil, nil)
}

// getThenNotify is getThen with the event then sets in *ev (of class *cl).
func getThenNotify(c *Ctx, then func(tx *keyspace.Tx, exists bool, m keyspace.Meta) error, ev *string, cl *pubsub.Class) {
	var event string
	var class pubsub.Class
	var old []byte
	var had bool
	err := c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		m, exists := tx.Meta(0)
		had = exists
		if exists {
			if m.Type != typeString {
				return ErrWrongType
			}
			v, _, err := tx.Value(0)
			if err != nil {
				return err
			}
			old = v
		}
		return then(tx, exists, m)
	})
	if ev != nil {
		event, class = *ev, *cl
	}
	if err == nil && !had {
		// GETSET, GETDEL and GETEX read the key first (lookupKeyRead): the miss comes before
		// the events of what they write.
		c.KeyMiss(c.Args[1])
	}
	if err == nil && event != "" {
		c.Notify(class, event, c.Args[1])
	}
	switch {
	case err != nil:
		c.Err(err)
	case had:
		c.W.Bulk(old)
	default:
		c.W.Null()
	}
}

func getsetCmd(c *Ctx) {
	ev, cl := "set", pubsub.String
	getThenNotify(c, func(tx *keyspace.Tx, _ bool, _ keyspace.Meta) error {
		tx.Put(0, c.Args[2], 0, typeString)
		return nil
	}, &ev, &cl)
}

func getdelCmd(c *Ctx) {
	var ev string
	cl := pubsub.Generic
	getThenNotify(c, func(tx *keyspace.Tx, exists bool, _ keyspace.Meta) error {
		ev = ""
		if exists {
			tx.Delete(0)
			ev = "del"
		}
		return nil
	}, &ev, &cl)
}

// getexArgs are GETEX's parsed options: PERSIST, or the last EX, PX, EXAT or PXAT option and its
// value, not yet checked.
type getexArgs struct {
	persist        bool
	expOpt, expVal []byte
}

// parseGetexArgs checks the syntax of GETEX's options as Redis does: PERSIST or one kind of
// expire option, each possibly repeated.
func parseGetexArgs(args [][]byte) (getexArgs, error) {
	var a getexArgs
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case is(arg, "PERSIST") && a.expOpt == nil:
			a.persist = true
		case isExpireOpt(arg) && !a.persist && (a.expOpt == nil || bytes.EqualFold(arg, a.expOpt)) && i+1 < len(args):
			a.expOpt, a.expVal = arg, args[i+1]
			i++
		default:
			return a, ErrSyntax
		}
	}
	return a, nil
}

// getexCmd checks in Redis's order: the options' syntax; then a missing key answers nil and a
// key of another type WRONGTYPE, whatever the expire time; only then is the time checked.
func getexCmd(c *Ctx) {
	a, err := parseGetexArgs(c.Args[2:])
	if err != nil {
		c.Err(err)
		return
	}
	if !a.persist && a.expOpt == nil {
		// Plain GETEX is a read: no transaction, no write.
		getCmd(c)
		return
	}
	var at int64
	var atErr error
	if a.expOpt != nil {
		at, atErr = parseExpireOpt("getex", a.expOpt, a.expVal, c.Now())
	}
	var ev string
	cl := pubsub.Generic
	getThenNotify(c, func(tx *keyspace.Tx, exists bool, m keyspace.Meta) error {
		ev = ""
		switch {
		case !exists:
		case atErr != nil:
			return atErr
		case a.persist:
			if m.ExpireAt != 0 {
				tx.SetExpire(0, 0)
				ev = "persist"
			}
		default:
			tx.SetExpire(0, at)
			ev = "expire"
			if at <= tx.Now() {
				ev = "del"
			}
		}
		return nil
	}, &ev, &cl)
}

func maxStringLen(c *Ctx) int64 { return c.Srv.Config().Int("proto-max-bulk-len") }

func appendCmd(c *Ctx) {
	var newLen int64
	err := c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		m, exists := tx.Meta(0)
		if !exists {
			tx.Put(0, c.Args[2], 0, typeString)
			newLen = int64(len(c.Args[2]))
			return nil
		}
		if m.Type != typeString {
			return ErrWrongType
		}
		if int64(m.Len)+int64(len(c.Args[2])) > maxStringLen(c) {
			return ErrStringTooLong
		}
		// Of a large (chunked) value only the last chunk is read and rewritten.
		if err := tx.WriteAt(0, int64(m.Len), c.Args[2], typeString|keyspace.RawHint); err != nil {
			return err
		}
		newLen = int64(m.Len) + int64(len(c.Args[2]))
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.Notify(pubsub.String, "append", c.Args[1])
	c.W.Int(newLen)
}

func strlenCmd(c *Ctx) {
	m, ok := c.KS.Lookup(c.Sess, c.DB(), c.Args[1])
	switch {
	case !ok:
		c.KeyMiss(c.Args[1])
		c.W.Int(0)
	case m.Type != typeString:
		c.Err(ErrWrongType)
	default:
		c.W.Int(int64(m.Len))
	}
}

func getrangeCmd(c *Ctx) {
	start, err1 := intArg(c.Args[2])
	end, err2 := intArg(c.Args[3])
	if err1 != nil || err2 != nil {
		c.Err(ErrNotInt)
		return
	}
	// Only the part asked for is read: of a large (chunked) value, the chunks overlapping it.
	found, err := c.KS.GetRange(c.Sess, c.DB(), c.Args[1], func(n int) (int, int) {
		return substrSpan(int64(n), start, end)
	}, func(v keyspace.Value, m keyspace.Meta) error {
		if m.Type != typeString {
			c.Err(ErrWrongType)
			return nil
		}
		return writeValue(c, v)
	})
	switch {
	case c.Broken:
	case err != nil:
		c.Err(err)
	case !found:
		c.KeyMiss(c.Args[1])
		c.W.BulkString("")
	}
}

// substrSpan applies GETRANGE's index rules to a value of n bytes and returns the byte range
// [from, to) to reply: negative indexes count from the end, both are clamped, and an empty
// range gives "".
func substrSpan(n, start, end int64) (int, int) {
	if start < 0 && end < 0 && start > end {
		return 0, 0
	}
	if start < 0 {
		start = n + start
	}
	if end < 0 {
		end = n + end
	}
	start = max(start, 0)
	end = max(end, 0)
	if end >= n {
		end = n - 1
	}
	if n == 0 || start > end {
		return 0, 0
	}
	return int(start), int(end + 1)
}

func setrangeCmd(c *Ctx) {
	off, err := intArg(c.Args[2])
	if err != nil {
		c.Err(err)
		return
	}
	if off < 0 {
		c.Err(ErrOffset)
		return
	}
	patch := c.Args[3]
	var newLen int64
	err = c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		m, exists := tx.Meta(0)
		if exists && m.Type != typeString {
			return ErrWrongType
		}
		if len(patch) == 0 {
			newLen = int64(m.Len) // 0 when missing; nothing is created
			return nil
		}
		if off > maxStringLen(c)-int64(len(patch)) {
			return ErrStringTooLong
		}
		// Of a large (chunked) value only the chunks the patch overwrites in part are read.
		if err := tx.WriteAt(0, off, patch, typeString|keyspace.RawHint); err != nil {
			return err
		}
		newLen = max(int64(m.Len), off+int64(len(patch)))
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if len(patch) > 0 {
		c.Notify(pubsub.String, "setrange", c.Args[1])
	}
	c.W.Int(newLen)
}

func incrCmd(c *Ctx) { incrGeneric(c, 1) }
func decrCmd(c *Ctx) { incrGeneric(c, -1) }

func incrbyCmd(c *Ctx) {
	n, err := intArg(c.Args[2])
	if err != nil {
		c.Err(err)
		return
	}
	incrGeneric(c, n)
}

func decrbyCmd(c *Ctx) {
	n, err := intArg(c.Args[2])
	if err != nil {
		c.Err(err)
		return
	}
	if n == math.MinInt64 {
		c.Err(Error("ERR decrement would overflow"))
		return
	}
	incrGeneric(c, -n)
}

func incrGeneric(c *Ctx, by int64) {
	var result int64
	err := c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		m, exists := tx.Meta(0)
		var cur int64
		if exists {
			if m.Type != typeString {
				return ErrWrongType
			}
			if m.Len > 20 {
				return ErrNotInt
			}
			v, _, err := tx.Value(0)
			if err != nil {
				return err
			}
			var ok bool
			if cur, ok = ParseInt(v); !ok {
				return ErrNotInt
			}
		}
		if (by < 0 && cur < 0 && by < math.MinInt64-cur) || (by > 0 && cur > 0 && by > math.MaxInt64-cur) {
			return ErrOverflow
		}
		result = cur + by
		tx.Put(0, strconv.AppendInt(nil, result, 10), m.ExpireAt, typeString)
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.Notify(pubsub.String, "incrby", c.Args[1])
	c.W.Int(result)
}

func incrbyfloatCmd(c *Ctx) {
	incr, ok := ParseLongDouble(c.Args[2])
	if !ok {
		c.Err(ErrNotFloat)
		return
	}
	var out []byte
	err := c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		m, exists := tx.Meta(0)
		cur, _ := ParseLongDouble([]byte("0"))
		if exists {
			if m.Type != typeString {
				return ErrWrongType
			}
			v, _, err := tx.Value(0)
			if err != nil {
				return err
			}
			var ok bool
			if cur, ok = ParseLongDouble(v); !ok {
				return ErrNotFloat
			}
		}
		sum, ok := AddLongDouble(cur, incr)
		if !ok {
			return Error("ERR increment would produce NaN or Infinity")
		}
		out = AppendLongDouble(nil, sum)
		tx.Put(0, out, m.ExpireAt, typeString)
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.Notify(pubsub.String, "incrbyfloat", c.Args[1])
	c.W.Bulk(out)
}
