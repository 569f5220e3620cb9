package commands

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"

	"github.com/lavikdb/lavik/services/data/keyspace"
)

// Digests. `LAVIK.DIGEST` (and `DEBUG DIGEST`) is a SHA-1 digest of the whole keyspace, and
// `DEBUG DIGEST-VALUE key ...` one per key, so that tests and operators can show that two nodes
// (a primary and its follower) hold the same data: the same keys in the same databases, with
// the same values and the same absolute expiry. They depend on what a client sees of a value,
// never on how it is stored: the order a hash or set was built in, a collection being grouped
// or not (group-threshold may differ between nodes), where its records lie. Like Redis's, the
// keyspace digest combines the keys' digests by XOR, so the order keys are visited in does not
// matter; it reads every value, and it is taken key by key, not atomically: compare nodes with
// writes stopped. An empty keyspace's digest is forty zeros, as in Redis. The digests are
// Lavik's own (Redis's differ: it hashes its own encodings).

func init() {
	register(
		&Command{Name: "lavik.digest", Arity: 1, Flags: FlagReadonly | FlagAdmin | FlagNoScript, Group: "server",
			Since: "0.3.0", Complexity: "O(N) where N is the number of keys and the bytes of their values",
			Summary: "Returns a digest of every key, value and expiry of every database.", Handler: digestCmd},
		&Command{Name: "debug", Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Group: "server",
			Since: "1.0.0", Complexity: "Depends on subcommand.", Summary: "A container for debugging commands.",
			Subcommands: map[string]*Command{
				"digest": {Arity: 2, Flags: FlagReadonly | FlagAdmin | FlagNoScript, Since: "1.0.0",
					Complexity: "O(N)", Summary: "Returns a digest of the whole keyspace (LAVIK.DIGEST).", Handler: digestCmd},
				"sleep": {Arity: 3, Flags: FlagAdmin | FlagNoScript, Since: "1.0.0", Complexity: "O(1)",
					Summary: "Sleeps for the given seconds (a float); holds up only this client.", Handler: debugSleepCmd},
				"object": {Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagReadonly, Since: "1.0.0", Complexity: "O(1)",
					Summary: "Returns low-level information about a key.", Handler: debugObjectCmd},
				"digest-value": {Arity: -2, Flags: FlagReadonly | FlagAdmin | FlagNoScript, Since: "1.0.0",
					Complexity: "O(N) in the keys' sizes", Summary: "Returns a digest of each key's value.", Handler: digestValueCmd},
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "1.0.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: helpCmd},
			}},
	)
}

// digestScanCount is how many keys a digest visits per step of its scan.
const digestScanCount = 256

// emptyDigest is the digest of nothing: an empty keyspace, a missing key.
var emptyDigest = [sha1.Size]byte{}

func digestHex(d [sha1.Size]byte) string { return hex.EncodeToString(d[:]) }

// xorInto adds d to acc.
func xorInto(acc *[sha1.Size]byte, d [sha1.Size]byte) {
	for i := range acc {
		acc[i] ^= d[i]
	}
}

// lenPrefixed appends b to dst after its length.
func lenPrefixed(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// valueDigest is the digest of an encoded value of type typ as a client sees it: a string's
// bytes; a list's elements in order; a hash's fields and values, a set's members, a sorted
// set's members and scores, whatever their order; a stream's entries, its last id, counters
// and consumer groups with their consumers and pending entries (by id and name), but not the
// times of deliveries and reads, which each node's clock sets.
func valueDigest(typ uint8, enc []byte) ([sha1.Size]byte, error) {
	var acc [sha1.Size]byte
	var buf []byte
	unordered := func(parts ...[]byte) {
		buf = buf[:0]
		for _, p := range parts {
			buf = lenPrefixed(buf, p)
		}
		xorInto(&acc, sha1.Sum(buf))
	}
	var n int
	switch typ {
	case typeString:
		return sha1.Sum(append([]byte{'s'}, enc...)), nil
	case typeHash:
		h, err := decodeHash(enc)
		if err != nil {
			return acc, err
		}
		for i := range h.fields {
			unordered(h.fields[i], h.vals[i])
		}
		n = len(h.fields)
	case typeSet:
		s, err := decodeSet(enc)
		if err != nil {
			return acc, err
		}
		for _, m := range s.members {
			unordered(m)
		}
		n = len(s.members)
	case typeZSet:
		z, err := decodeZSet(enc)
		if err != nil {
			return acc, err
		}
		for _, it := range z.items {
			unordered(it.member, binary.LittleEndian.AppendUint64(nil, math.Float64bits(it.score)))
		}
		n = len(z.items)
	case typeList:
		l, err := decodeList(enc)
		if err != nil {
			return acc, err
		}
		h := sha1.New()
		for _, e := range l.elems {
			h.Write(lenPrefixed(buf[:0], e))
		}
		copy(acc[:], h.Sum(nil))
		n = len(l.elems)
	case typeStream:
		s, err := decodeStream(enc)
		if err != nil {
			return acc, err
		}
		// The encoding of the decoded stream (what it holds, not how its records are cut),
		// without the times of deliveries and reads: each node's clock sets them.
		for _, g := range s.groups {
			for i := range g.pel {
				g.pel[i].deliveryTime = 0
			}
			for i := range g.consumers {
				g.consumers[i].seenTime = 0
			}
		}
		acc = sha1.Sum(s.encode())
		n = len(s.entries)
	default:
		return acc, fmt.Errorf("ERR lavik: no digest for a value of type %d", typ)
	}
	out := append([]byte{'c', typ}, acc[:]...)
	return sha1.Sum(binary.AppendUvarint(out, uint64(n))), nil
}

// keyDigest is the digest of key in database db: its value's digest and its expire-at (unix
// ms, 0 for none); found false and the empty digest when it is missing.
func keyDigest(c *Ctx, db int, key []byte) (d [sha1.Size]byte, expireAt int64, found bool, err error) {
	found, err = c.KS.Get(c.Sess, db, key, func(v keyspace.Value, m keyspace.Meta) error {
		b, err := v.Bytes()
		if err != nil {
			return err
		}
		d, err = valueDigest(m.Type, b)
		expireAt = m.ExpireAt
		return err
	})
	return d, expireAt, found, err
}

// keyspaceDigest is the digest of every database: the XOR of each key's digest of its
// database, name, value digest and expire-at.
func keyspaceDigest(c *Ctx) ([sha1.Size]byte, error) {
	var acc [sha1.Size]byte
	var keys [][]byte
	var buf []byte
	seen := false
	for db := 0; db < c.KS.Databases(); db++ {
		for cursor := uint64(0); ; {
			keys = keys[:0]
			cursor = c.KS.Scan(c.Sess, db, cursor, digestScanCount, func(key []byte, _ keyspace.Meta) {
				keys = append(keys, append([]byte(nil), key...))
			})
			for _, k := range keys {
				d, exp, found, err := keyDigest(c, db, k)
				if err != nil {
					return acc, err
				}
				if !found {
					continue // removed since the scan saw it
				}
				buf = binary.AppendUvarint(buf[:0], uint64(db))
				buf = lenPrefixed(buf, k)
				buf = append(buf, d[:]...)
				buf = binary.LittleEndian.AppendUint64(buf, uint64(exp))
				xorInto(&acc, sha1.Sum(buf))
				seen = true
			}
			if cursor == 0 {
				break
			}
		}
	}
	if !seen {
		return emptyDigest, nil
	}
	return sha1.Sum(acc[:]), nil
}

func digestCmd(c *Ctx) {
	d, err := keyspaceDigest(c)
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Simple(digestHex(d))
}

func digestValueCmd(c *Ctx) {
	keys := c.Args[2:]
	ds := make([]string, len(keys))
	for i, k := range keys {
		d, _, found, err := keyDigest(c, c.DB(), k)
		if err != nil {
			c.Err(err)
			return
		}
		if !found {
			d = emptyDigest
		}
		ds[i] = digestHex(d)
	}
	c.W.Array(len(ds))
	for _, d := range ds {
		c.W.Simple(d)
	}
}
