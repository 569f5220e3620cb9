package commands

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lavikdb/lavik/services/data/keyspace"
)

// Lists grouped by position. A list whose encoding passes the keyspace's group threshold is
// stored as groups of consecutive elements (keyspace/grouped.go), each an encoded list of its
// own, head first; a group's summary is its element count (uvarint) and the directory's meta the
// list's header (format, flags, length). A command sees a window of the list (listView): the
// groups covering the positions it needs, found from the counts without reading any group. So
// LPUSH and LPOP read and write the head group, RPUSH and RPOP the tail one, LINDEX and LSET the
// group holding the index, LRANGE the groups it overlaps, LLEN the directory alone: a constant
// number of records for commands near either end however long the list. A window written back
// is cut again into groups of about the target size (keyspace.GroupTarget) when it passed
// twice that, and is one group otherwise (so emptied groups disappear and neighbours merge).
// LINSERT, LREM and LPOS, which scan, work on the whole list.

var errBadListGroup = errors.New("ERR lavik: a grouped list does not decode")

func listMeta(n int) []byte { return binary.AppendUvarint([]byte{listFormat, 0}, uint64(n)) }

func parseListMeta(m []byte) (int, error) {
	if len(m) < 3 || m[0] != listFormat {
		return 0, errBadListGroup
	}
	n, k := binary.Uvarint(m[2:])
	if k <= 0 {
		return 0, errBadListGroup
	}
	return int(n), nil
}

func listSum(n int) []byte { return binary.AppendUvarint(nil, uint64(n)) }

func parseListSum(s []byte) int {
	n, _ := binary.Uvarint(s)
	return int(n)
}

// cutList appends elems to gs as groups of about target bytes.
func cutList(gs []keyspace.Group, elems [][]byte, target int) []keyspace.Group {
	start, acc := 0, 0
	emit := func(end int) {
		l := &listValue{elems: elems[start:end]}
		gs = append(gs, keyspace.NewGroup(l.encode(), listSum(end-start)))
		start, acc = end, 0
	}
	for i, e := range elems {
		if acc >= target {
			emit(i)
		}
		acc += len(e) + 2
	}
	if start < len(elems) {
		emit(len(elems))
	}
	return gs
}

func init() {
	keyspace.RegisterGroupCodec(typeList, &keyspace.GroupCodec{
		Split: func(val []byte) (*keyspace.Directory, bool) {
			l, err := decodeList(val)
			if err != nil || l.len() == 0 {
				return nil, false
			}
			return &keyspace.Directory{Meta: listMeta(l.len()), Groups: cutList(nil, l.elems, keyspace.GroupTarget(int64(len(val))))}, true
		},
		Join: func(meta []byte, groups [][]byte) ([]byte, error) {
			n, err := parseListMeta(meta)
			if err != nil {
				return nil, err
			}
			out := &listValue{elems: make([][]byte, 0, n)}
			for _, g := range groups {
				l, err := decodeList(g)
				if err != nil {
					return nil, err
				}
				out.elems = append(out.elems, l.elems...)
			}
			if out.len() != n {
				return nil, fmt.Errorf("%w: %d elements, its directory says %d", errBadListGroup, out.len(), n)
			}
			return out.encode(), nil
		},
	})
}

// listView is a list as a command sees it: all of it when it is one record, or a window of
// whole groups of a grouped one.
type listView struct {
	exists  bool
	n       int // the list's length
	grouped bool
	d       *keyspace.Directory
	starts  []int      // of a grouped list: the position of each group's first element, and n
	l       *listValue // the window's elements (the whole list when not grouped)
	base    int        // the position of l.elems[0]
	lo, hi  int        // the window's groups [lo, hi); hi == lo before load
	wcount  int        // the window's elements when loaded
	wbytes  int64
	keepOut bool // store drops the groups outside the window (LTRIM)
	// edgeNew, set by a push that seals the list's end group (pushEnd) or a pop that cuts a
	// large one (popEnd), is how many elements at the window's head (edgeLeft) or tail store
	// writes as a group of their own.
	edgeNew  int
	edgeLeft bool
}

// openList opens key i of tx as a list: its length and, when grouped, its directory; the
// elements of a grouped list come with load. A missing key is an empty list (exists false).
func openList(tx *keyspace.Tx, i int) (*listView, error) {
	m, ok := tx.Meta(i)
	switch {
	case !ok:
		return &listView{l: newList()}, nil
	case m.Type != typeList:
		return nil, ErrWrongType
	case !tx.Grouped(i):
		b, _, err := tx.Value(i)
		if err != nil {
			return nil, err
		}
		l, err := decodeList(b)
		if err != nil {
			return nil, err
		}
		return &listView{exists: true, n: l.len(), l: l}, nil
	}
	d, err := tx.Dir(i)
	if err != nil {
		return nil, err
	}
	n, err := parseListMeta(d.Meta)
	if err != nil {
		return nil, err
	}
	v := &listView{exists: true, n: n, grouped: true, d: d, starts: make([]int, len(d.Groups)+1), l: newList()}
	for j, g := range d.Groups {
		v.starts[j+1] = v.starts[j] + parseListSum(g.Sum)
	}
	if v.starts[len(d.Groups)] != n {
		return nil, errBadListGroup
	}
	return v, nil
}

// groupAt is the group holding position p, the last one for p at or past the end.
func (v *listView) groupAt(p int) int {
	lo, hi := 0, len(v.d.Groups)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if v.starts[mid] <= p {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// load makes the window cover positions [from, to) (clipped to the list), or the group at from
// when the range is empty: LPUSH loads (0, 0), RPUSH (n, n). Nothing is read of a list that is
// one record (it is all loaded) or missing.
func (v *listView) load(tx *keyspace.Tx, i int, from, to int) error {
	if !v.grouped {
		return nil
	}
	from, to = max(from, 0), min(to, v.n)
	lo := v.groupAt(from)
	hi := lo + 1
	if to > from {
		hi = v.groupAt(to-1) + 1
	}
	js := make([]int, 0, hi-lo)
	for j := lo; j < hi; j++ {
		js = append(js, j)
	}
	gs, err := tx.Groups(i, js)
	if err != nil {
		return err
	}
	l := &listValue{elems: make([][]byte, 0, v.starts[hi]-v.starts[lo])}
	var nb int64
	for n, g := range gs {
		p, err := decodeList(g)
		if err != nil {
			return err
		}
		l.elems = append(l.elems, p.elems...)
		nb += int64(v.d.Groups[js[n]].Len)
	}
	if l.len() != v.starts[hi]-v.starts[lo] {
		return errBadListGroup
	}
	v.l, v.base, v.lo, v.hi, v.wcount, v.wbytes = l, v.starts[lo], lo, hi, l.len(), nb
	return nil
}

// at is the element at position p, which the window holds.
func (v *listView) at(p int) []byte { return v.l.elems[p-v.base] }

// store writes the list back as the command changed the window: the whole list, or the window's
// groups cut again between the groups it did not touch. An emptied list is removed; a grouped
// one that shrank below half the threshold becomes one record again.
func (v *listView) store(c *Ctx, tx *keyspace.Tx, i int) error {
	m, _ := tx.Meta(i)
	if !v.grouped {
		return putValue(tx, i, v.l, m.ExpireAt, typeList)
	}
	if v.hi == v.lo {
		return fmt.Errorf("lavik: internal error: a grouped list stored with no window")
	}
	total := v.d.Bytes() - v.wbytes
	n := v.n - v.wcount + v.l.len()
	before, after := v.d.Groups[:v.lo], v.d.Groups[v.hi:]
	if v.keepOut {
		before, after, total, n = nil, nil, 0, v.l.len()
	}
	if n == 0 {
		tx.Delete(i)
		return nil
	}
	enc := v.l.encode()
	total += int64(len(enc))
	if total < int64(c.KS.GroupMin()/2) {
		// Small again: one record of the groups before, the window and the groups after.
		var js []int
		for j := range v.d.Groups {
			if !v.keepOut && (j < v.lo || j >= v.hi) {
				js = append(js, j)
			}
		}
		gs, err := tx.Groups(i, js)
		if err != nil {
			return err
		}
		whole := newList()
		for k, g := range gs {
			if k == len(before) {
				whole.elems = append(whole.elems, v.l.elems...)
			}
			p, err := decodeList(g)
			if err != nil {
				return err
			}
			whole.elems = append(whole.elems, p.elems...)
		}
		if len(gs) == len(before) {
			whole.elems = append(whole.elems, v.l.elems...)
		}
		tx.Put(i, whole.encode(), m.ExpireAt, typeList)
		return nil
	}
	target := keyspace.GroupTarget(total)
	nd := &keyspace.Directory{Meta: listMeta(n), Groups: make([]keyspace.Group, 0, len(before)+len(after)+3)}
	nd.Groups = append(nd.Groups, before...)
	put := func(elems [][]byte) {
		l := &listValue{elems: elems}
		switch enc := l.encode(); {
		case len(elems) == 0:
		case len(enc) <= 2*target:
			nd.Groups = append(nd.Groups, keyspace.NewGroup(enc, listSum(len(elems))))
		default:
			nd.Groups = cutList(nd.Groups, elems, target)
		}
	}
	switch e := v.l.elems; {
	case v.edgeNew > 0 && v.edgeLeft:
		put(e[:v.edgeNew])
		put(e[v.edgeNew:])
	case v.edgeNew > 0:
		put(e[:len(e)-v.edgeNew])
		put(e[len(e)-v.edgeNew:])
	default:
		put(e)
	}
	nd.Groups = append(nd.Groups, after...)
	return tx.PutGroups(i, nd, m.ExpireAt, typeList)
}

// readListView runs fn on the list at key for a command that only reads it (readCollection),
// with load to make the window cover what it needs (a no-op unless the list is grouped).
func readListView(c *Ctx, key []byte, fn func(v *listView, load func(from, to int) error) error) error {
	var tx *keyspace.Tx
	return readCollection(c, key, typeList, decodeList, func(l *listValue, found bool) *listView {
		if !found {
			return &listView{l: newList()}
		}
		return &listView{exists: true, l: l, n: l.len()}
	}, func(t *keyspace.Tx, i int) (*listView, error) {
		tx = t
		return openList(t, i)
	}, func(v *listView) error {
		return fn(v, func(from, to int) error { return v.load(tx, 0, from, to) })
	})
}

// updateListView runs fn on the list at key in a transaction (openList), storing it when fn
// reports a change.
func updateListView(c *Ctx, key []byte, fn func(tx *keyspace.Tx, v *listView) (bool, error)) error {
	return c.KS.Update(c.Sess, []kspKey{{DB: c.DB(), Key: key}}, func(tx *keyspace.Tx) error {
		v, err := openList(tx, 0)
		if err != nil {
			return err
		}
		changed, err := fn(tx, v)
		if err != nil || !changed {
			return err
		}
		return v.store(c, tx, 0)
	})
}

// popEnd pops up to count elements from the head (left) or the tail of list i of tx (at least
// one; the list exists) and stores it.
func popEnd(c *Ctx, tx *keyspace.Tx, i int, v *listView, left bool, count int) ([][]byte, error) {
	count = min(max(count, 1), v.n)
	from, to := 0, count
	if !left {
		from, to = v.n-count, v.n
	}
	if err := v.load(tx, i, from, to); err != nil {
		return nil, err
	}
	popped := make([][]byte, 0, count)
	for range count {
		popped = append(popped, v.l.pop(left))
	}
	if v.grouped && v.hi-v.lo == 1 && v.wbytes >= 2*edgeCut {
		// A large end group is cut as it is popped: its end piece of edgeCut bytes a
		// group of its own, so that the next pops rewrite that piece rather than the group.
		es, k, acc := v.l.elems, 0, 0
		for k < len(es) && acc < edgeCut {
			e := es[k]
			if !left {
				e = es[len(es)-1-k]
			}
			acc += len(e) + 2
			k++
		}
		if k < len(es) {
			v.edgeNew, v.edgeLeft = k, left
		}
	}
	return popped, v.store(c, tx, i)
}

// edgeCut is the size past which the end group of a grouped list or stream, which a push (an
// XADD) rewrites, is sealed: the next push starts a new group there, and the sealed one joins
// its neighbour while the two fit (a list: twice the group target, where its groups split; a
// stream: the target). A pop cuts a larger end group of a list to a piece of this size. So a
// push or a pop rewrites 2 KiB on average while groups stay near the target.
const edgeCut = 4 << 10

// pushEnd pushes elems one by one at the head (left) or the tail of list i of tx and stores it;
// it returns the list's new length.
func pushEnd(c *Ctx, tx *keyspace.Tx, i int, v *listView, left bool, elems ...[]byte) (int, error) {
	at := 0
	if !left {
		at = v.n
	}
	if v.grouped && len(v.d.Groups) > 0 {
		edge, nb := 0, 1
		if !left {
			edge, nb = len(v.d.Groups)-1, len(v.d.Groups)-2
		}
		if v.d.Groups[edge].Len >= edgeCut {
			// Seal the end group: the pushed elements are a group of their own; the sealed
			// one is read with its neighbour and joins it when the two fit twice the target.
			from, to := v.starts[edge], v.starts[edge+1]
			if nb >= 0 && nb < len(v.d.Groups) && v.d.Groups[edge].Len+v.d.Groups[nb].Len <= 2*keyspace.GroupTarget(v.d.Bytes()) {
				from, to = min(from, v.starts[nb]), max(to, v.starts[nb+1])
			}
			if err := v.load(tx, i, from, to); err != nil {
				return 0, err
			}
			v.edgeNew, v.edgeLeft = len(elems), left
		}
	}
	if v.edgeNew == 0 {
		if err := v.load(tx, i, at, at); err != nil {
			return 0, err
		}
	}
	for _, e := range elems {
		v.l.push(e, left)
	}
	return v.n + len(elems), v.store(c, tx, i)
}
