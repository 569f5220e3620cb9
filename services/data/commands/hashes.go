package commands

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

const typeHash = keyspace.TypeHash

func init() {
	hash := func(name string, arity int, flags Flag, since, complexity, summary string, h func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "hash", Since: since, Complexity: complexity, Summary: summary, Handler: h}
	}
	w, r := FlagWrite|FlagDenyOOM|FlagFast, FlagReadonly|FlagFast
	register(
		hash("hset", -4, w, "2.0.0", "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.", "Creates or modifies the value of a field in a hash.", hsetCmd),
		hash("hmset", -4, w, "2.0.0", "O(N) where N is the number of fields being set.", "Sets the values of multiple fields.", hmsetCmd),
		hash("hsetnx", 4, w, "2.0.0", "O(1)", "Sets the value of a field in a hash only when the field doesn't exist.", hsetnxCmd),
		hash("hget", 3, r, "2.0.0", "O(1)", "Returns the value of a field in a hash.", hgetCmd),
		hash("hmget", -3, r, "2.0.0", "O(N) where N is the number of fields being requested.", "Returns the values of all fields in a hash.", hmgetCmd),
		hash("hdel", -3, FlagWrite|FlagFast, "2.0.0", "O(N) where N is the number of fields to be removed.", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", hdelCmd),
		hash("hlen", 2, r, "2.0.0", "O(1)", "Returns the number of fields in a hash.", hlenCmd),
		hash("hstrlen", 3, r, "3.2.0", "O(1)", "Returns the length of the value of a field.", hstrlenCmd),
		hash("hexists", 3, r, "2.0.0", "O(1)", "Determines whether a field exists in a hash.", hexistsCmd),
		hash("hkeys", 2, FlagReadonly, "2.0.0", "O(N) where N is the size of the hash.", "Returns all fields in a hash.", hkeysCmd),
		hash("hvals", 2, FlagReadonly, "2.0.0", "O(N) where N is the size of the hash.", "Returns all values in a hash.", hvalsCmd),
		hash("hgetall", 2, FlagReadonly, "2.0.0", "O(N) where N is the size of the hash.", "Returns all fields and values in a hash.", hgetallCmd),
		hash("hincrby", 4, w, "2.0.0", "O(1)", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", hincrbyCmd),
		hash("hincrbyfloat", 4, w, "2.6.0", "O(1)", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", hincrbyfloatCmd),
		hash("hrandfield", -2, FlagReadonly, "6.2.0", "O(N) where N is the number of fields returned", "Returns one or more random fields from a hash.", hrandfieldCmd),
		hash("hscan", -3, FlagReadonly, "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", "Iterates over fields and values of a hash.", hscanCmd),
		hash("lavik.hreplace", -4, FlagWrite|FlagDenyOOM, "0.2.0", "O(N) where N is the number of fields given.", "Replaces the whole hash atomically with the given fields and values.", hreplaceCmd),
	)
}

// readHash reads the hash at key for a command that only reads it: nil when the key does not
// exist, ErrWrongType when it holds another type.
func readHash(c *Ctx, key []byte) (*hashValue, error) {
	h, _, err := readValue(c, key, typeHash, decodeHash)
	return h, err
}

// readFields reads the part of the hash at key that holds fields (all of a hash stored as one
// record; the groups of those fields of a grouped one, keyed.go): empty when the key does not
// exist, ErrWrongType when it holds another type.
func readFields(c *Ctx, key []byte, fields [][]byte) (*hashValue, error) {
	h, _, err := hashType.read(c, key, fields)
	return h, err
}

// updateHash runs fn on the hash at key inside a transaction: fn gets the part of it that holds
// fields (nil: all of it) and must change no other field (keyedType.update).
func updateHash(c *Ctx, key []byte, fields [][]byte, fn func(h *hashValue, exists bool) (bool, error)) error {
	return hashType.update(c, key, fields, fn)
}

// pairFields are the fields of the field value pairs from args[2].
func pairFields(args [][]byte) [][]byte {
	fs := make([][]byte, 0, len(args)/2)
	for i := 2; i+1 < len(args); i += 2 {
		fs = append(fs, args[i])
	}
	return fs
}

// pairsArity checks that args after the key are field value pairs.
func pairsArity(c *Ctx) bool {
	if len(c.Args)%2 != 0 {
		c.Err(ArityError(c.Cmd))
		return false
	}
	return true
}

func hsetPairs(c *Ctx) (int64, bool) {
	if !pairsArity(c) {
		return 0, false
	}
	var added int64
	err := updateHash(c, c.Args[1], pairFields(c.Args), func(h *hashValue, _ bool) (bool, error) {
		added = 0
		for i := 2; i < len(c.Args); i += 2 {
			if h.set(c.Args[i], c.Args[i+1]) {
				added++
			}
		}
		return true, nil
	})
	if err != nil {
		c.Err(err)
		return 0, false
	}
	c.Notify(pubsub.Hash, "hset", c.Args[1])
	return added, true
}

func hsetCmd(c *Ctx) {
	if n, ok := hsetPairs(c); ok {
		c.W.Int(n)
	}
}

func hmsetCmd(c *Ctx) {
	if _, ok := hsetPairs(c); ok {
		c.OK()
	}
}

func hsetnxCmd(c *Ctx) {
	var added bool
	err := updateHash(c, c.Args[1], c.Args[2:3], func(h *hashValue, _ bool) (bool, error) {
		if _, ok := h.get(c.Args[2]); ok {
			added = false
			return false, nil
		}
		added = h.set(c.Args[2], c.Args[3])
		return true, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if added {
		c.Notify(pubsub.Hash, "hset", c.Args[1])
	}
	c.W.Int(boolInt(added))
}

func hreplaceCmd(c *Ctx) {
	if !pairsArity(c) {
		return
	}
	// A new hash of exactly the fields given; the key keeps its expire time, as an HSET
	// would. The old value is not read: only its type and expire time matter.
	h := &hashValue{}
	for i := 2; i < len(c.Args); i += 2 {
		h.set(c.Args[i], c.Args[i+1])
	}
	n := h.len()
	val := h.encode()
	err := c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		m, exists := tx.Meta(0)
		if exists && m.Type != typeHash {
			return ErrWrongType
		}
		tx.Put(0, val, m.ExpireAt, typeHash)
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	// Not a Redis command: it states the event of HSET, which it replaces for a whole hash.
	c.Notify(pubsub.Hash, "hset", c.Args[1])
	c.W.Int(int64(n))
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func hgetCmd(c *Ctx) {
	h, err := readFields(c, c.Args[1], c.Args[2:3])
	if err != nil {
		c.Err(err)
		return
	}
	if v, ok := h.get(c.Args[2]); ok {
		c.W.Bulk(v)
	} else {
		c.W.Null()
	}
}

func hmgetCmd(c *Ctx) {
	h, err := readFields(c, c.Args[1], c.Args[2:])
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Array(len(c.Args) - 2)
	for _, f := range c.Args[2:] {
		if v, ok := h.get(f); ok {
			c.W.Bulk(v)
		} else {
			c.W.Null()
		}
	}
}

func hdelCmd(c *Ctx) { changeEach(c, updateHash, (*hashValue).del) }

func hlenCmd(c *Ctx) {
	n, err := hashType.count(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Int(int64(n))
}

func hstrlenCmd(c *Ctx) {
	h, err := readFields(c, c.Args[1], c.Args[2:3])
	if err != nil {
		c.Err(err)
		return
	}
	v, _ := h.get(c.Args[2])
	c.W.Int(int64(len(v)))
}

func hexistsCmd(c *Ctx) {
	h, err := readFields(c, c.Args[1], c.Args[2:3])
	if err != nil {
		c.Err(err)
		return
	}
	_, found := h.get(c.Args[2])
	c.W.Int(boolInt(found))
}

// hashAll replies with the fields, the values or both of the hash at c.Args[1].
func hashAll(c *Ctx, fields, vals bool) {
	h, err := readHash(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	if h == nil {
		h = &hashValue{}
	}
	switch {
	case fields && vals:
		c.W.Map(h.len())
	default:
		c.W.Array(h.len())
	}
	for i := range h.fields {
		if fields {
			c.W.Bulk(h.fields[i])
		}
		if vals {
			c.W.Bulk(h.vals[i])
		}
	}
}

func hkeysCmd(c *Ctx)   { hashAll(c, true, false) }
func hvalsCmd(c *Ctx)   { hashAll(c, false, true) }
func hgetallCmd(c *Ctx) { hashAll(c, true, true) }

func hincrbyCmd(c *Ctx) {
	incr, ok := ParseInt(c.Args[3])
	if !ok {
		c.Err(ErrNotInt)
		return
	}
	var out int64
	err := updateHash(c, c.Args[1], c.Args[2:3], func(h *hashValue, _ bool) (bool, error) {
		var cur int64
		if v, ok := h.get(c.Args[2]); ok {
			if cur, ok = ParseInt(v); !ok {
				return false, Error("ERR hash value is not an integer")
			}
		}
		if incr > 0 && cur > math.MaxInt64-incr || incr < 0 && cur < math.MinInt64-incr {
			return false, ErrOverflow
		}
		out = cur + incr
		h.set(c.Args[2], strconv.AppendInt(nil, out, 10))
		return true, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.Notify(pubsub.Hash, "hincrby", c.Args[1])
	c.W.Int(out)
}

func hincrbyfloatCmd(c *Ctx) {
	incr, ok := ParseLongDouble(c.Args[3])
	if !ok {
		c.Err(ErrNotFloat)
		return
	}
	if incr.IsInf() {
		c.Err(Error("ERR value is NaN or Infinity"))
		return
	}
	var out []byte
	err := updateHash(c, c.Args[1], c.Args[2:3], func(h *hashValue, _ bool) (bool, error) {
		cur, _ := ParseLongDouble([]byte("0"))
		if v, ok := h.get(c.Args[2]); ok {
			if cur, ok = ParseLongDouble(v); !ok {
				return false, Error("ERR hash value is not a float")
			}
		}
		sum, ok := AddLongDouble(cur, incr)
		if !ok {
			return false, Error("ERR increment would produce NaN or Infinity")
		}
		out = AppendLongDouble(nil, sum)
		h.set(c.Args[2], out)
		return true, nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.Notify(pubsub.Hash, "hincrbyfloat", c.Args[1])
	c.W.Bulk(out)
}

// hrandfieldCmd follows Redis's hrandfieldWithCountCommand (writeRandom).
func hrandfieldCmd(c *Ctx) {
	if len(c.Args) == 2 {
		h, err := readHash(c, c.Args[1])
		switch {
		case err != nil:
			c.Err(err)
		case h == nil:
			c.W.Null()
		default:
			c.W.Bulk(h.fields[rand.IntN(h.len())])
		}
		return
	}
	count, withValues, ok := randArgs(c, "WITHVALUES")
	if !ok {
		return
	}
	h, err := readHash(c, c.Args[1])
	if err != nil {
		c.Err(err)
		return
	}
	if h == nil {
		h = &hashValue{}
	}
	writeRandom(c, h.len(), count, withValues, func(i int) {
		c.W.Bulk(h.fields[i])
		if withValues {
			c.W.Bulk(h.vals[i])
		}
	})
}

// hscanCmd pages through the fields in hash order (scanCollection).
func hscanCmd(c *Ctx) {
	var h *hashValue
	scanCollection(c, func() ([][]byte, bool, error) {
		var err error
		if h, err = readHash(c, c.Args[1]); err != nil || h == nil {
			h = &hashValue{}
		}
		return h.fields, h.flags&hashTableEnc == 0, err
	}, 2, func(i int) {
		c.W.Bulk(h.fields[i])
		c.W.Bulk(h.vals[i])
	})
}
