package commands

// HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, on strings holding Redis's representation
// (hll.go), so that values move between Lavik and Redis with GET and SET.

import (
	"encoding/binary"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

const (
	errHLLCorrupt Error = "INVALIDOBJ Corrupted HLL object detected"
	errNotHLL     Error = "WRONGTYPE Key is not a valid HyperLogLog string value."
)

func init() {
	hll := func(name string, arity int, flags Flag, last int, complexity, summary string, h func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: last, Step: 1,
			Group: "hyperloglog", Since: "2.8.9", Complexity: complexity, Summary: summary, Handler: h}
	}
	register(
		hll("pfadd", -2, FlagWrite|FlagDenyOOM|FlagFast, 1, "O(1) to add every element.", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", pfaddCmd),
		hll("pfcount", -2, FlagReadonly, -1, "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).", pfcountCmd),
		hll("pfmerge", -2, FlagWrite|FlagDenyOOM, -1, "O(N) to merge N HyperLogLogs, but with high constant times.", "Merges one or more HyperLogLog values into a single key.", pfmergeCmd),
	)
}

// txHLL reads key i of tx as an HLL: nil for a missing key, an error for another type or a
// string that is not an HLL.
func txHLL(tx *keyspace.Tx, i int) ([]byte, error) {
	m, ok := tx.Meta(i)
	if !ok {
		return nil, nil
	}
	if m.Type != typeString {
		return nil, ErrWrongType
	}
	v, _, err := tx.Value(i)
	if err != nil {
		return nil, err
	}
	if !hllValid(v) {
		return nil, errNotHLL
	}
	return v, nil
}

func pfaddCmd(c *Ctx) {
	var updated bool
	err := c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		cur, err := txHLL(tx, 0)
		if err != nil {
			return err
		}
		exp := int64(0)
		updated = false
		var v []byte
		if cur == nil {
			v, updated = hllNew(), true
		} else {
			m, _ := tx.Meta(0)
			exp = m.ExpireAt
			v = append(make([]byte, 0, len(cur)+8), cur...)
		}
		for _, ele := range c.Args[2:] {
			nv, r := hllAdd(v, ele)
			if r < 0 {
				return errHLLCorrupt
			}
			v = nv
			updated = updated || r == 1
		}
		if !updated {
			return nil
		}
		hllInvalidate(v)
		tx.Put(0, v, exp, typeString|keyspace.RawHint)
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	if updated {
		c.Notify(pubsub.String, "pfadd", c.Args[1])
	}
	c.W.Int(b2i(updated))
}

func pfcountCmd(c *Ctx) {
	if len(c.Args) > 2 {
		var max [hllRegisters]uint8
		var missed []int
		keys := c.keyArgs(argRange(1, len(c.Args))...)
		err := c.KS.Update(c.Sess, keys, func(tx *keyspace.Tx) error {
			max = [hllRegisters]uint8{}
			missed = txMissing(tx, 0, len(keys), typeString)
			for i := range c.Args[1:] {
				v, err := txHLL(tx, i)
				if err != nil {
					return err
				}
				if v != nil && !hllMergeInto(&max, v) {
					return errHLLCorrupt
				}
			}
			return nil
		})
		stateMisses(c, keys, missed)
		if err != nil {
			c.Err(err)
			return
		}
		c.W.Int(int64(hllEstimate(hllRawHisto(&max))))
		return
	}
	var card uint64
	var missed bool
	err := c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		missed = !tx.Exists(0)
		v, err := txHLL(tx, 0)
		if err != nil || v == nil {
			card = 0
			return err
		}
		if hllCacheValid(v) {
			card = binary.LittleEndian.Uint64(v[8:16])
			return nil
		}
		h, ok := hllHisto(v)
		if !ok {
			return errHLLCorrupt
		}
		card = hllEstimate(h)
		if c.KS.Follower() {
			return nil // a follower's values change only by its primary's stream
		}
		// As Redis, store the cardinality in the header; the change a follower applies is the
		// 8 bytes written, not a recount.
		var enc [8]byte
		binary.LittleEndian.PutUint64(enc[:], card)
		c.Propagate([][]byte{[]byte("SETRANGE"), c.Args[1], []byte("8"), enc[:]})
		return tx.WriteAt(0, 8, enc[:], typeString|keyspace.RawHint)
	})
	if missed {
		c.KeyMiss(c.Args[1])
	}
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Int(int64(card))
}

func argRange(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// pfmergeCmd reads every key, the destination first (Redis's lookupKeyRead of each: a missing
// one states keymiss), then writes the destination.
func pfmergeCmd(c *Ctx) {
	keys := c.keyArgs(argRange(1, len(c.Args))...)
	var missed []int
	err := c.KS.Update(c.Sess, keys, func(tx *keyspace.Tx) error {
		missed = txMissing(tx, 0, len(keys), typeString)
		var max [hllRegisters]uint8
		dense := false
		for i := range c.Args[1:] {
			v, err := txHLL(tx, i)
			if err != nil {
				return err
			}
			if v == nil {
				continue
			}
			dense = dense || v[4] == hllDense
			if !hllMergeInto(&max, v) {
				return errHLLCorrupt
			}
		}
		cur, _ := txHLL(tx, 0) // checked above
		exp := int64(0)
		var v []byte
		if cur == nil {
			v = hllNew()
		} else {
			m, _ := tx.Meta(0)
			exp = m.ExpireAt
			v = append([]byte(nil), cur...)
		}
		if dense {
			var ok bool
			if v, ok = hllToDense(v); !ok {
				return errHLLCorrupt
			}
		}
		for j := range max {
			if max[j] != 0 {
				v, _ = hllSet(v, j, int(max[j]))
			}
		}
		hllInvalidate(v)
		tx.Put(0, v, exp, typeString|keyspace.RawHint)
		return nil
	})
	stateMisses(c, keys, missed)
	if err != nil {
		c.Err(err)
		return
	}
	c.Notify(pubsub.String, "pfadd", c.Args[1]) // whether or not the merge changed it, as Redis
	c.OK()
}
