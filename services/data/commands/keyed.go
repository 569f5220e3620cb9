package commands

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/lavikdb/lavik/services/data/keyspace"
)

// Hashes and sets grouped by member hash. A hash or set whose encoding passes the keyspace's
// group threshold (keyspace.GroupMin) is stored as groups (keyspace/grouped.go), each an encoded
// hash or set of its own holding the members whose memberHash falls in its range, so that a
// command naming members (HGET, HSET, HDEL, HINCRBY, SISMEMBER, SADD, SREM, ...) reads the
// directory and the groups of those members only, and writes back those groups and a new
// directory: a constant number of records however large the collection.
//
// The directory's meta is the collection's header (format byte, flags, member count), so HLEN
// and SCARD read the directory alone. A group's summary is the lowest hash of its range (8
// bytes, little endian; the first group's is 0) and its member count (uvarint): group j holds
// the members whose hash h has lo(j) <= h < lo(j+1). A group that grows past twice the target
// size (keyspace.GroupTarget) splits in two at its median hash; one that empties is dropped
// (its range joins its neighbour's); a collection that shrinks below half the threshold becomes
// one record again. Members of one hash always share a group. Groups do not merge otherwise: a
// collection that shrinks by deletions keeps groups smaller than the target until it is
// rewritten whole (LAVIK.HREPLACE, RENAME, a restore).
//
// Commands that want the whole collection (HGETALL, SMEMBERS, SINTER, HSCAN, ...) read it
// joined: every group in one batch of reads. The collection's flags (the encoding OBJECT
// ENCODING reports) are the whole's, in the directory's meta; a part a command changes knows how
// many members the rest holds (setOthers), so that it converts when the whole passes Redis's
// limits, as Redis does.

// keyed is a decoded hash or set, as the grouped layer handles it.
type keyed[T any] interface {
	collection
	// keys are its members (a hash's fields), in order.
	keys() [][]byte
	// size is what member i costs in its encoding, about.
	size(i int) int
	// pick is a new collection of the same flags holding members idx, in that order.
	pick(idx []int) T
	// absorb adds o's members, which it does not have.
	absorb(o T)
	flagBits() byte
	orFlags(f byte)
	// setOthers says how many members of the whole it is a part of it does not hold.
	setOthers(n int)
}

// keyedType is what the grouped layer needs of a type.
type keyedType[T keyed[T]] struct {
	typ    uint8
	format byte
	decode func([]byte) (T, error)
	empty  func() T
}

var errBadGroup = errors.New("ERR lavik: a grouped collection does not decode")

// meta is a directory's meta for a collection of flags and n members.
func (kt *keyedType[T]) meta(flags byte, n int) []byte {
	return binary.AppendUvarint([]byte{kt.format, flags}, uint64(n))
}

func (kt *keyedType[T]) parseMeta(m []byte) (flags byte, n int, err error) {
	if len(m) < 3 || m[0] != kt.format {
		return 0, 0, errBadGroup
	}
	c, k := binary.Uvarint(m[2:])
	if k <= 0 {
		return 0, 0, errBadGroup
	}
	return m[1], int(c), nil
}

func groupSum(lo uint64, n int) []byte {
	return binary.AppendUvarint(binary.LittleEndian.AppendUint64(nil, lo), uint64(n))
}

func parseSum(s []byte) (lo uint64, n int) {
	if len(s) < 9 {
		return 0, 0
	}
	c, _ := binary.Uvarint(s[8:])
	return binary.LittleEndian.Uint64(s), int(c)
}

// groupOf is the group of d holding members of hash h: the last whose range starts at or below.
func groupOf(d *keyspace.Directory, h uint64) int {
	j, _ := slices.BinarySearchFunc(d.Groups, h, func(g keyspace.Group, h uint64) int {
		lo, _ := parseSum(g.Sum)
		if lo <= h {
			return -1
		}
		return 1
	})
	return max(j-1, 0)
}

// split is the codec's Split: a whole value cut into groups of about the target size by member
// hash.
func (kt *keyedType[T]) split(val []byte) (*keyspace.Directory, bool) {
	v, err := kt.decode(val)
	if err != nil || v.len() == 0 {
		return nil, false
	}
	idx, hs := byHash(v)
	target := keyspace.GroupTarget(int64(len(val)))
	d := &keyspace.Directory{Meta: kt.meta(v.flagBits(), v.len())}
	kt.appendGroups(d, v, idx, hs, target, true)
	return d, true
}

// byHash returns v's member positions sorted by member hash, and the hashes by position.
func byHash[T keyed[T]](v T) ([]int, []uint64) {
	ms := v.keys()
	hs := make([]uint64, len(ms))
	for i, m := range ms {
		hs[i] = memberHash(m)
	}
	return sortByHash(hs), hs
}

// sortByHash returns the positions 0..len(hs)-1 ordered by hs.
func sortByHash(hs []uint64) []int {
	idx := make([]int, len(hs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(hs[a], hs[b]) })
	return idx
}

// prefetched reports whether the server read key whole for the command (Ctx.Pre): a value that
// is not grouped, or a missing key.
func prefetched(c *Ctx, key []byte) bool {
	p := c.Pre
	return p != nil && p.DB == c.DB() && bytes.Equal(p.Key, key) && !errors.Is(p.Err, keyspace.ErrLarge)
}

// readCollection runs fn on a view of the collection of type typ at key for a command that only
// reads it: made by whole of the value read whole (prefetched, or read with the index's read
// lock), or, when the index says the value is grouped, by open in a transaction that writes
// nothing (which reads only the groups fn asks for). A value that becomes grouped between the
// look and the read is read whole, joined: correct, if slower.
func readCollection[T collection, V any](c *Ctx, key []byte, typ uint8, decode func([]byte) (T, error),
	whole func(v T, found bool) V, open func(tx *keyspace.Tx, i int) (V, error), fn func(V) error) error {
	if m, ok := c.KS.Lookup(c.Sess, c.DB(), key); prefetched(c, key) || !ok || !m.Grouped {
		v, found, err := readValue(c, key, typ, decode)
		if err != nil {
			return err
		}
		return fn(whole(v, found))
	}
	return c.KS.Update(c.Sess, []kspKey{{DB: c.DB(), Key: key}}, func(tx *keyspace.Tx) error {
		v, err := open(tx, 0)
		if err != nil {
			return err
		}
		return fn(v)
	})
}

// appendGroups appends to d the members idx of v (sorted by hash) as groups of about target
// bytes, never cutting between members of one hash; first says the first starts at hash 0.
func (kt *keyedType[T]) appendGroups(d *keyspace.Directory, v T, idx []int, hs []uint64, target int, first bool) {
	start, acc := 0, 0
	emit := func(end int) {
		run := idx[start:end]
		lo := hs[run[0]]
		if first {
			lo, first = 0, false
		}
		sub := v.pick(run)
		d.Groups = append(d.Groups, keyspace.NewGroup(sub.encode(), groupSum(lo, len(run))))
		start, acc = end, 0
	}
	for n, i := range idx {
		if acc >= target && hs[i] != hs[idx[n-1]] {
			emit(n)
		}
		acc += v.size(i)
	}
	if start < len(idx) {
		emit(len(idx))
	}
}

func (kt *keyedType[T]) join(meta []byte, groups [][]byte) ([]byte, error) {
	flags, n, err := kt.parseMeta(meta)
	if err != nil {
		return nil, fmt.Errorf("%w: meta %x", err, meta)
	}
	out := kt.empty()
	out.orFlags(flags)
	for j, g := range groups {
		v, err := kt.decode(g)
		if err != nil {
			return nil, fmt.Errorf("%w: group %d of %d bytes", err, j, len(g))
		}
		out.absorb(v)
	}
	if out.len() != n {
		return nil, fmt.Errorf("%w: %d members, its directory says %d", errBadGroup, out.len(), n)
	}
	return out.encode(), nil
}

func (kt *keyedType[T]) register() {
	keyspace.RegisterGroupCodec(kt.typ, &keyspace.GroupCodec{Split: kt.split, Join: kt.join})
}

// groupsFor lists the groups of d holding members ms (all of them for ms nil), ascending.
func groupsFor(d *keyspace.Directory, ms [][]byte) []int {
	if ms == nil {
		js := make([]int, len(d.Groups))
		for j := range js {
			js[j] = j
		}
		return js
	}
	js := make([]int, 0, len(ms))
	for _, m := range ms {
		js = append(js, groupOf(d, memberHash(m)))
	}
	slices.Sort(js)
	return slices.Compact(js)
}

// part reads the groups js of key i's directory d into one collection.
func (kt *keyedType[T]) part(tx *keyspace.Tx, i int, d *keyspace.Directory, js []int) (T, error) {
	var zero T
	flags, n, err := kt.parseMeta(d.Meta)
	if err != nil {
		return zero, err
	}
	gs, err := tx.Groups(i, js)
	if err != nil {
		return zero, err
	}
	v := kt.empty()
	v.orFlags(flags)
	for _, g := range gs {
		// The groups' bytes stay unchanged while the transaction runs; v points into them.
		p, err := kt.decode(g)
		if err != nil {
			return zero, err
		}
		v.absorb(p)
	}
	v.setOthers(n - v.len())
	return v, nil
}

// view is the collection at key i of tx for a command about members ms (nil: all of them): the
// whole value, or of a grouped one the groups holding ms (grouped true, d its directory and js
// those groups). exists false: the key is missing and v is empty.
func (kt *keyedType[T]) view(tx *keyspace.Tx, i int, ms [][]byte) (v T, exists, grouped bool, d *keyspace.Directory, js []int, err error) {
	m, exists := tx.Meta(i)
	switch {
	case !exists:
		return kt.empty(), false, false, nil, nil, nil
	case m.Type != kt.typ:
		return v, true, false, nil, nil, ErrWrongType
	case !tx.Grouped(i):
		b, _, err := tx.Value(i)
		if err != nil {
			return v, true, false, nil, nil, err
		}
		v, err = kt.decode(b)
		return v, true, false, nil, nil, err
	}
	if d, err = tx.Dir(i); err != nil {
		return v, true, true, nil, nil, err
	}
	js = groupsFor(d, ms)
	v, err = kt.part(tx, i, d, js)
	return v, true, true, d, js, err
}

// update runs fn on the collection at key (see view) in a transaction and writes back what it
// changed: the whole value, or the groups js and a directory. fn gets only the members ms may
// touch: it must change no other.
func (kt *keyedType[T]) update(c *Ctx, key []byte, ms [][]byte, fn func(v T, exists bool) (bool, error)) error {
	return c.KS.Update(c.Sess, []kspKey{{DB: c.DB(), Key: key}}, func(tx *keyspace.Tx) error {
		v, exists, grouped, d, js, err := kt.view(tx, 0, ms)
		if err != nil {
			return err
		}
		changed, err := fn(v, exists)
		if err != nil || !changed {
			return err
		}
		return kt.writeBack(c, tx, 0, v, grouped, d, js)
	})
}

// writeBack writes v, as view gave it and a command changed it, back to key i of tx.
func (kt *keyedType[T]) writeBack(c *Ctx, tx *keyspace.Tx, i int, v T, grouped bool, d *keyspace.Directory, js []int) error {
	m, _ := tx.Meta(i)
	if !grouped {
		return putValue(tx, i, v, m.ExpireAt, kt.typ)
	}
	return kt.putPart(c, tx, i, d, js, v, m.ExpireAt)
}

// putPart writes back v, the members of groups js of directory d after a change: those groups
// are rewritten from it (split when grown past twice the target, dropped when empty), the others
// kept; the key is removed when nothing is left, and becomes one record again when small.
func (kt *keyedType[T]) putPart(c *Ctx, tx *keyspace.Tx, i int, d *keyspace.Directory, js []int, v T, expireAt int64) error {
	_, count, err := kt.parseMeta(d.Meta)
	if err != nil {
		return err
	}
	idx, hs := byHash(v)
	// Bucket v's members into the groups js by hash: groupOf over d picks among all groups, and
	// the members of v all hash into js.
	buckets := make(map[int][]int, len(js))
	for _, k := range idx {
		j := groupOf(d, hs[k])
		buckets[j] = append(buckets[j], k)
	}
	total := d.Bytes()
	target := keyspace.GroupTarget(total)
	nd := &keyspace.Directory{Groups: make([]keyspace.Group, 0, len(d.Groups)+1)}
	for j, g := range d.Groups {
		if _, ok := slices.BinarySearch(js, j); !ok {
			nd.Groups = append(nd.Groups, g)
			continue
		}
		lo, n := parseSum(g.Sum)
		total -= int64(g.Len)
		count -= n
		run := buckets[j]
		if len(run) == 0 {
			continue
		}
		count += len(run)
		sub := v.pick(run)
		sub.orFlags(v.flagBits())
		data := sub.encode()
		if len(data) <= 2*target || len(run) == 1 {
			nd.Groups = append(nd.Groups, keyspace.NewGroup(data, groupSum(lo, len(run))))
			total += int64(len(data))
			continue
		}
		from := len(nd.Groups)
		kt.appendGroups(nd, v, run, hs, max(len(data)/2, 1), false)
		for k := from; k < len(nd.Groups); k++ {
			total += int64(nd.Groups[k].Len)
		}
		// The first of them keeps the range's start.
		_, n0 := parseSum(nd.Groups[from].Sum)
		nd.Groups[from].Sum = groupSum(lo, n0)
	}
	if count <= 0 || len(nd.Groups) == 0 {
		tx.Delete(i)
		return nil
	}
	if lo0, n0 := parseSum(nd.Groups[0].Sum); lo0 != 0 {
		nd.Groups[0].Sum = groupSum(0, n0)
	}
	flags, _, _ := kt.parseMeta(d.Meta)
	flags |= v.flagBits()
	nd.Meta = kt.meta(flags, count)
	if total < int64(c.KS.GroupMin()/2) {
		// Small again: one record, of the groups it did not touch (a few, at this size) and v.
		var keep []int
		for j := range d.Groups {
			if _, ok := slices.BinarySearch(js, j); !ok {
				keep = append(keep, j)
			}
		}
		rest, err := kt.part(tx, i, d, keep)
		if err != nil {
			return err
		}
		rest.absorb(v)
		rest.orFlags(flags)
		tx.Put(i, rest.encode(), expireAt, kt.typ)
		return nil
	}
	return tx.PutGroups(i, nd, expireAt, kt.typ)
}

// read is view for a command that only reads (readCollection): the collection (or its part
// holding ms), empty and found false when the key is missing.
func (kt *keyedType[T]) read(c *Ctx, key []byte, ms [][]byte) (v T, found bool, err error) {
	err = readCollection(c, key, kt.typ, kt.decode, func(w T, ok bool) T {
		if found = ok; !ok {
			return kt.empty()
		}
		return w
	}, func(tx *keyspace.Tx, i int) (T, error) {
		w, ok, _, _, _, err := kt.view(tx, i, ms)
		found = ok
		return w, err
	}, func(w T) error {
		v = w
		return nil
	})
	return v, found && err == nil, err
}

// count is the number of members of the collection at key: of a grouped one, from its
// directory's meta (readCollection).
func (kt *keyedType[T]) count(c *Ctx, key []byte) (int, error) {
	var n int
	err := readCollection(c, key, kt.typ, kt.decode, func(w T, ok bool) int {
		if !ok {
			return 0
		}
		return w.len()
	}, func(tx *keyspace.Tx, i int) (int, error) {
		if !tx.Grouped(i) {
			m, ok := tx.Meta(i)
			if !ok {
				return 0, nil
			}
			if m.Type != kt.typ {
				return 0, ErrWrongType
			}
			b, _, err := tx.Value(i)
			if err != nil {
				return 0, err
			}
			w, err := kt.decode(b)
			if err != nil {
				return 0, err
			}
			return w.len(), nil
		}
		m, _ := tx.Meta(i)
		if m.Type != kt.typ {
			return 0, ErrWrongType
		}
		d, err := tx.Dir(i)
		if err != nil {
			return 0, err
		}
		_, cnt, err := kt.parseMeta(d.Meta)
		return cnt, err
	}, func(cnt int) error {
		n = cnt
		return nil
	})
	return n, err
}
