package commands

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/lavikdb/lavik/services/data/keyspace"
)

// Sorted sets grouped twice. A sorted set whose encoding passes the keyspace's group threshold is
// stored as two kinds of groups under one directory (keyspace/grouped.go):
//
//   - order chunks, first: the items in Redis's order (score, then member), cut in runs of about
//     the target size (keyspace.GroupTarget); a chunk's summary is its item count (uvarint) and
//     its first item (score as float64 bits, then the member), so that the chunk holding an
//     item, a rank or a score is found without reading any;
//   - member groups, after them: the same items grouped by member hash, as a hash's fields are
//     (keyed.go), summary the lowest hash and count, so that a member's score is one read.
//
// Each group is an encoded sorted set of its own. The directory's meta is the set's header
// (format, flags, count) and the number of order chunks. So ZSCORE reads one member group,
// ZRANK that and one order chunk, ZADD and ZREM write at most two order chunks and one member
// group, ZRANGE by rank (or by score or lex with a LIMIT) reads the chunks it overlaps, ZPOPMIN
// and ZPOPMAX an end chunk and the popped members' groups, ZCARD the directory alone. Commands
// that read or rewrite the whole set (ZUNIONSTORE, ZREMRANGEBY*, ZRANDMEMBER, ZSCAN, ...) join
// the order chunks.

var errBadZGroup = errors.New("ERR lavik: a grouped sorted set does not decode")

func zmeta(flags byte, n, chunks int) []byte {
	b := binary.AppendUvarint([]byte{zsetFormat, flags}, uint64(n))
	return binary.AppendUvarint(b, uint64(chunks))
}

func parseZMeta(m []byte) (flags byte, n, chunks int, err error) {
	if len(m) < 4 || m[0] != zsetFormat {
		return 0, 0, 0, errBadZGroup
	}
	a, k := binary.Uvarint(m[2:])
	if k <= 0 {
		return 0, 0, 0, errBadZGroup
	}
	b, k2 := binary.Uvarint(m[2+k:])
	if k2 <= 0 {
		return 0, 0, 0, errBadZGroup
	}
	return m[1], int(a), int(b), nil
}

func chunkSum(items []zitem) []byte {
	b := binary.AppendUvarint(nil, uint64(len(items)))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(items[0].score))
	return append(b, items[0].member...)
}

func parseChunkSum(s []byte) (n int, first zitem, err error) {
	c, k := binary.Uvarint(s)
	if k <= 0 || len(s) < k+8 {
		return 0, zitem{}, errBadZGroup
	}
	return int(c), zitem{math.Float64frombits(binary.LittleEndian.Uint64(s[k:])), s[k+8:]}, nil
}

// cutItems appends items (in order) to gs as order chunks of about target bytes.
func cutItems(gs []keyspace.Group, items []zitem, flags byte, target int) []keyspace.Group {
	start, acc := 0, 0
	emit := func(end int) {
		z := &zsetValue{items: items[start:end], flags: flags}
		gs = append(gs, keyspace.NewGroup(z.encode(), chunkSum(z.items)))
		start, acc = end, 0
	}
	for i, it := range items {
		if acc >= target {
			emit(i)
		}
		acc += len(it.member) + 10
	}
	if start < len(items) {
		emit(len(items))
	}
	return gs
}

// cutMembers appends items to gs as member groups of about target bytes, by member hash; first
// says the first of them starts the hash range at 0, else it starts at lo.
func cutMembers(gs []keyspace.Group, items []zitem, flags byte, target int, lo uint64, first bool) []keyspace.Group {
	hs := make([]uint64, len(items))
	for i, it := range items {
		hs[i] = memberHash(it.member)
	}
	idx := sortByHash(hs)
	start, acc := 0, 0
	emit := func(end int) {
		run := make([]zitem, 0, end-start)
		for _, i := range idx[start:end] {
			run = append(run, items[i])
		}
		slices.SortFunc(run, func(a, b zitem) int {
			if a.less(b) {
				return -1
			}
			return 1
		})
		l := hs[idx[start]]
		if first {
			l, first = 0, false
		} else if start == 0 {
			l = lo
		}
		z := &zsetValue{items: run, flags: flags}
		gs = append(gs, keyspace.NewGroup(z.encode(), groupSum(l, len(run))))
		start, acc = end, 0
	}
	for n, i := range idx {
		if acc >= target && hs[i] != hs[idx[n-1]] {
			emit(n)
		}
		acc += len(items[i].member) + 10
	}
	if start < len(idx) {
		emit(len(idx))
	}
	return gs
}

func init() {
	keyspace.RegisterGroupCodec(typeZSet, &keyspace.GroupCodec{
		Split: func(val []byte) (*keyspace.Directory, bool) {
			z, err := decodeZSet(val)
			if err != nil || z.len() == 0 {
				return nil, false
			}
			// Each structure holds every item: targets from half the bytes each.
			target := keyspace.GroupTarget(int64(len(val)))
			flags := z.flags
			gs := cutItems(nil, z.items, flags, target)
			chunks := len(gs)
			gs = cutMembers(gs, z.items, flags, target, 0, true)
			return &keyspace.Directory{Meta: zmeta(flags, z.len(), chunks), Groups: gs}, true
		},
		Join: func(meta []byte, groups [][]byte) ([]byte, error) {
			flags, n, chunks, err := parseZMeta(meta)
			if err != nil || chunks > len(groups) {
				return nil, errBadZGroup
			}
			out := &zsetValue{flags: flags, items: make([]zitem, 0, n)}
			for _, g := range groups[:chunks] {
				z, err := decodeZSet(g)
				if err != nil {
					return nil, err
				}
				out.items = append(out.items, z.items...)
			}
			if out.len() != n {
				return nil, fmt.Errorf("%w: %d items, its directory says %d", errBadZGroup, out.len(), n)
			}
			return out.encode(), nil
		},
	})
}

// zview is a sorted set as a command sees it: the whole set when it is one record, or the groups
// of a grouped one it loaded.
type zview struct {
	exists  bool
	grouped bool
	whole   *zsetValue // not grouped: the set
	d       *keyspace.Directory
	n       int
	flags   byte
	chunks  int     // order chunks: groups [0, chunks); member groups after
	starts  []int   // the rank of each chunk's first item, and n
	firsts  []zitem // each chunk's first item
	members keyspace.Directory
	// Loaded and changed groups, by index in d.
	got   map[int]*zsetValue
	dirty map[int]bool
	tx    *keyspace.Tx
	i     int
}

// openZ opens key i of tx as a sorted set (see listView for the pattern): missing is an empty set.
func openZ(tx *keyspace.Tx, i int) (*zview, error) {
	m, ok := tx.Meta(i)
	switch {
	case !ok:
		return &zview{whole: newZSet(), tx: tx, i: i}, nil
	case m.Type != typeZSet:
		return nil, ErrWrongType
	case !tx.Grouped(i):
		b, _, err := tx.Value(i)
		if err != nil {
			return nil, err
		}
		z, err := decodeZSet(b)
		if err != nil {
			return nil, err
		}
		return &zview{exists: true, whole: z, n: z.len(), tx: tx, i: i}, nil
	}
	d, err := tx.Dir(i)
	if err != nil {
		return nil, err
	}
	v := &zview{exists: true, grouped: true, d: d, tx: tx, i: i, got: map[int]*zsetValue{}, dirty: map[int]bool{}}
	if v.flags, v.n, v.chunks, err = parseZMeta(d.Meta); err != nil || v.chunks < 1 || v.chunks >= len(d.Groups) {
		return nil, errBadZGroup
	}
	v.starts = make([]int, v.chunks+1)
	v.firsts = make([]zitem, v.chunks)
	for j := 0; j < v.chunks; j++ {
		c, first, err := parseChunkSum(d.Groups[j].Sum)
		if err != nil {
			return nil, err
		}
		v.starts[j+1], v.firsts[j] = v.starts[j]+c, first
	}
	if v.starts[v.chunks] != v.n {
		return nil, errBadZGroup
	}
	v.members = keyspace.Directory{Groups: d.Groups[v.chunks:]}
	return v, nil
}

// need loads groups js (indexes in d) not loaded yet; like Tx.Groups it may ask for a new attempt.
func (v *zview) need(js ...int) error {
	var want []int
	for _, j := range js {
		if _, ok := v.got[j]; !ok && !slices.Contains(want, j) {
			want = append(want, j)
		}
	}
	if len(want) == 0 {
		return nil
	}
	gs, err := v.tx.Groups(v.i, want)
	if err != nil {
		return err
	}
	for k, g := range gs {
		z, err := decodeZSet(g)
		if err != nil {
			return err
		}
		v.got[want[k]] = z
	}
	return nil
}

// memberGroup is the index in d of the member group of m.
func (v *zview) memberGroup(m []byte) int { return v.chunks + groupOf(&v.members, memberHash(m)) }

// chunkOf is the order chunk where item it belongs.
func (v *zview) chunkOf(it zitem) int {
	j, _ := slices.BinarySearchFunc(v.firsts, it, func(f, it zitem) int {
		if it.less(f) {
			return 1
		}
		return -1
	})
	return max(j-1, 0)
}

// chunkAtRank is the order chunk holding rank r (the last one for r past the end).
func (v *zview) chunkAtRank(r int) int {
	j, _ := slices.BinarySearch(v.starts[:v.chunks], r+1)
	return max(j-1, 0)
}

// scores returns the current scores of ms (a missing member is absent from the map).
func (v *zview) scores(ms [][]byte) (map[string]float64, error) {
	out := make(map[string]float64, len(ms))
	if !v.grouped {
		for _, m := range ms {
			if s, ok := v.whole.score(m); ok {
				out[string(m)] = s
			}
		}
		return out, nil
	}
	js := make([]int, len(ms))
	for k, m := range ms {
		js[k] = v.memberGroup(m)
	}
	if err := v.need(js...); err != nil {
		return nil, err
	}
	for k, m := range ms {
		// One look in a group of hundreds: a scan, not the map score builds.
		for _, it := range v.got[js[k]].items {
			if bytes.Equal(it.member, m) {
				out[string(m)] = it.score
				break
			}
		}
	}
	return out, nil
}

// scratch is a sorted set of ms as they are now, for a command to change (ZADD, ZINCRBY, ZREM)
// before apply writes the difference.
func (v *zview) scratch(ms [][]byte) (*zsetValue, map[string]float64, error) {
	if !v.grouped {
		return v.whole, nil, nil
	}
	cur, err := v.scores(ms)
	if err != nil {
		return nil, nil, err
	}
	z := &zsetValue{flags: v.flags, others: v.n - len(cur)}
	for m, s := range cur {
		z.items = append(z.items, zitem{s, []byte(m)})
	}
	slices.SortFunc(z.items, func(a, b zitem) int {
		if a.less(b) {
			return -1
		}
		return 1
	})
	return z, cur, nil
}

// apply makes the grouped set match scratch z for the members ms, whose scores were old.
func (v *zview) apply(ms [][]byte, z *zsetValue, old map[string]float64) error {
	type change struct {
		m        []byte
		was, now float64
		had, has bool
	}
	var chs []change
	seen := map[string]bool{}
	var js []int
	for _, m := range ms {
		if seen[string(m)] {
			continue
		}
		seen[string(m)] = true
		was, had := old[string(m)]
		now, has := z.score(m)
		if had == has && (!had || was == now && math.Signbit(was) == math.Signbit(now)) {
			continue
		}
		ch := change{m, was, now, had, has}
		chs = append(chs, ch)
		if had {
			js = append(js, v.chunkOf(zitem{was, m}))
		}
		if has {
			js = append(js, v.chunkOf(zitem{now, m}))
		}
	}
	if err := v.need(js...); err != nil {
		return err
	}
	// The encoding the command's changes gave the set (Redis converts a listpack to a skiplist
	// before the member goes in), in every group it touches: a skiplist keeps -0.
	v.flags |= z.flags
	// The scores are known: items are removed and inserted by position (the scratch set made
	// -0 what the encoding keeps).
	for _, ch := range chs {
		g := v.memberGroup(ch.m)
		v.got[g].flags = v.flags
		if ch.had {
			j := v.chunkOf(zitem{ch.was, ch.m})
			v.got[j].flags = v.flags
			v.got[j].removeItem(zitem{ch.was, ch.m})
			v.got[g].removeItem(zitem{ch.was, ch.m})
			v.dirty[j], v.dirty[g] = true, true
			v.n--
		}
		if ch.has {
			j := v.chunkOf(zitem{ch.now, ch.m})
			v.got[j].flags = v.flags
			v.got[j].insertItem(zitem{ch.now, ch.m})
			v.got[g].insertItem(zitem{ch.now, ch.m})
			v.dirty[j], v.dirty[g] = true, true
			v.n++
		}
	}
	return nil
}

// removeItem removes it, which z holds (its member index, if built, is dropped).
func (z *zsetValue) removeItem(it zitem) {
	if i := z.pos(it.score, it.member); i < len(z.items) && bytes.Equal(z.items[i].member, it.member) {
		z.items = append(z.items[:i], z.items[i+1:]...)
	}
	z.index = nil
}

// insertItem inserts it, whose member z does not hold, in order.
func (z *zsetValue) insertItem(it zitem) {
	i := z.pos(it.score, it.member)
	z.items = append(z.items, zitem{})
	copy(z.items[i+1:], z.items[i:])
	z.items[i] = it
	z.index = nil
}

// rankOf is m's rank (from the lowest score).
func (v *zview) rankOf(m []byte) (int, bool, error) {
	if !v.grouped {
		r, ok := v.whole.rank(m)
		return r, ok, nil
	}
	sc, err := v.scores([][]byte{m})
	if err != nil {
		return 0, false, err
	}
	s, ok := sc[string(m)]
	if !ok {
		return 0, false, nil
	}
	j := v.chunkOf(zitem{s, m})
	if err := v.need(j); err != nil {
		return 0, false, err
	}
	return v.starts[j] + v.got[j].pos(s, m), true, nil
}

// window returns the items of order chunks [a, b) as one set, and the rank of its first item.
func (v *zview) window(a, b int) (*zsetValue, int, error) {
	if !v.grouped {
		return v.whole, 0, nil
	}
	js := make([]int, 0, b-a)
	for j := a; j < b; j++ {
		js = append(js, j)
	}
	if err := v.need(js...); err != nil {
		return nil, 0, err
	}
	z := &zsetValue{flags: v.flags}
	for _, j := range js {
		z.items = append(z.items, v.got[j].items...)
	}
	return z, v.starts[a], nil
}

// selectRange is zsetValue.selectRange over the grouped set, reading only the chunks it needs:
// by rank, those the ranks fall in; by score or lex, from the first chunk that may hold the
// range's start on, more at a time while the result is not complete.
func (v *zview) selectRange(sp zrangeSpec) ([]zitem, error) {
	if !v.grouped {
		return v.whole.selectRange(sp), nil
	}
	if sp.kind == rangeRank {
		start, stop := sp.start, sp.stop
		n := int64(v.n)
		if start < 0 {
			start += n
		}
		if stop < 0 {
			stop += n
		}
		start = max(start, 0)
		if start > stop || start >= n {
			return nil, nil
		}
		stop = min(stop, n-1)
		from, to := int(start), int(stop)+1
		if sp.rev {
			from, to = int(n)-1-int(stop), int(n)-int(start)
		}
		a, b := v.chunkAtRank(from), v.chunkAtRank(to-1)+1
		z, base, err := v.window(a, b)
		if err != nil {
			return nil, err
		}
		sub := sp
		sub.rev = false
		sub.start, sub.stop = int64(from-base), int64(to-1-base)
		items := z.selectRange(sub)
		if sp.rev {
			slices.Reverse(items)
		}
		return items, nil
	}
	// The chunks that may hold the range: from the last whose first item is below the range's
	// start to the first whose first item is past its end.
	inLow := func(it zitem) bool {
		if sp.kind == rangeScore {
			return sp.score.aboveMin(it.score)
		}
		return sp.lex.aboveMin(it.member)
	}
	inHigh := func(it zitem) bool {
		if sp.kind == rangeScore {
			return sp.score.belowMax(it.score)
		}
		return sp.lex.belowMax(it.member)
	}
	lo := 0
	for lo+1 < v.chunks && !inLow(v.firsts[lo+1]) {
		lo++
	}
	hi := lo + 1
	for hi < v.chunks && inHigh(v.firsts[hi]) {
		hi++
	}
	want := int64(-1)
	if sp.limit && sp.count >= 0 && sp.offset >= 0 {
		want = sp.offset + sp.count
	}
	step := 2
	for {
		a, b := lo, hi
		if want >= 0 {
			if sp.rev {
				a = max(lo, hi-step)
			} else {
				b = min(hi, lo+step)
			}
		}
		z, _, err := v.window(a, b)
		if err != nil {
			return nil, err
		}
		full := sp
		full.limit = false
		all := z.selectRange(full)
		if (a == lo && b == hi) || int64(len(all)) >= want {
			return z.selectRange(sp), nil
		}
		step *= 2
	}
}

// pop removes and returns up to count items from the low end (or the high end with max).
func (v *zview) pop(max bool, count int) ([]zitem, error) {
	if !v.grouped {
		var items []zitem
		for n := 0; n < count && v.whole.len() > 0; n++ {
			j := 0
			if max {
				j = v.whole.len() - 1
			}
			items = append(items, v.whole.items[j])
			v.whole.removeRange(j, j+1)
		}
		return items, nil
	}
	count = min(count, v.n)
	from, to := 0, count
	if max {
		from, to = v.n-count, v.n
	}
	z, base, err := v.window(v.chunkAtRank(from), v.chunkAtRank(to-1)+1)
	if err != nil {
		return nil, err
	}
	items := slices.Clone(z.items[from-base : to-base])
	if max {
		slices.Reverse(items)
	}
	ms := make([][]byte, len(items))
	for k, it := range items {
		ms[k] = it.member
	}
	old, err := v.scores(ms)
	if err != nil {
		return nil, err
	}
	return items, v.apply(ms, &zsetValue{}, old)
}

// store writes the set back: the whole set, or the changed groups and a new directory. An
// emptied set is removed; one below half the threshold becomes one record again.
func (v *zview) store(c *Ctx) error {
	tx, i := v.tx, v.i
	m, _ := tx.Meta(i)
	if !v.grouped {
		return putValue(tx, i, v.whole, m.ExpireAt, typeZSet)
	}
	if len(v.dirty) == 0 {
		return nil
	}
	if v.n == 0 {
		tx.Delete(i)
		return nil
	}
	total := v.d.Bytes()
	for j := range v.dirty {
		total += int64(len(v.got[j].encode()) - v.d.Groups[j].Len)
	}
	if total < int64(c.KS.GroupMin()) {
		// Small again (each structure holds every item: half the threshold each).
		z, _, err := v.window(0, v.chunks)
		if err != nil {
			return err
		}
		z.flags = v.flags
		tx.Put(i, z.encode(), m.ExpireAt, typeZSet)
		return nil
	}
	target := keyspace.GroupTarget(total / 2)
	nd := &keyspace.Directory{Groups: make([]keyspace.Group, 0, len(v.d.Groups)+2)}
	flags := v.flags
	for j := 0; j < v.chunks; j++ {
		z := v.got[j]
		switch {
		case !v.dirty[j]:
			nd.Groups = append(nd.Groups, v.d.Groups[j])
		case z.len() == 0:
		default:
			z.flags = flags
			if enc := z.encode(); len(enc) <= 2*target {
				nd.Groups = append(nd.Groups, keyspace.NewGroup(enc, chunkSum(z.items)))
			} else {
				nd.Groups = cutItems(nd.Groups, z.items, flags, target)
			}
		}
	}
	chunks := len(nd.Groups)
	if chunks == 0 {
		return fmt.Errorf("lavik: internal error: a grouped sorted set of %d items has no chunk", v.n)
	}
	for j := v.chunks; j < len(v.d.Groups); j++ {
		z := v.got[j]
		switch {
		case !v.dirty[j]:
			nd.Groups = append(nd.Groups, v.d.Groups[j])
		case z.len() == 0:
		default:
			lo, _ := parseSum(v.d.Groups[j].Sum)
			z.flags = flags
			if enc := z.encode(); len(enc) <= 2*target || z.len() == 1 {
				nd.Groups = append(nd.Groups, keyspace.NewGroup(enc, groupSum(lo, z.len())))
			} else {
				nd.Groups = cutMembers(nd.Groups, z.items, flags, target, lo, false)
			}
		}
	}
	if len(nd.Groups) == chunks {
		return fmt.Errorf("lavik: internal error: a grouped sorted set of %d items has no member group", v.n)
	}
	if lo, n := parseSum(nd.Groups[chunks].Sum); lo != 0 {
		nd.Groups[chunks].Sum = groupSum(0, n)
	}
	nd.Meta = zmeta(flags, v.n, chunks)
	return tx.PutGroups(i, nd, m.ExpireAt, typeZSet)
}

// readZ runs fn on the sorted set at key for a command that only reads it (readCollection).
func readZ(c *Ctx, key []byte, fn func(v *zview) error) error {
	return readCollection(c, key, typeZSet, decodeZSet, func(z *zsetValue, found bool) *zview {
		if !found {
			return &zview{whole: newZSet()}
		}
		return &zview{exists: true, whole: z, n: z.len()}
	}, openZ, fn)
}

// updateZMembers runs fn on a sorted set holding the members ms of the set at key as they are
// (all of it when it is one record), in a transaction; fn may change only those members, and
// what it changed is written back.
func updateZMembers(c *Ctx, key []byte, ms [][]byte, fn func(z *zsetValue, exists bool) (bool, error)) error {
	return c.KS.Update(c.Sess, []kspKey{{DB: c.DB(), Key: key}}, func(tx *keyspace.Tx) error {
		v, err := openZ(tx, 0)
		if err != nil {
			return err
		}
		z, old, err := v.scratch(ms)
		if err != nil {
			return err
		}
		changed, err := fn(z, v.exists)
		if err != nil || !changed {
			return err
		}
		if v.grouped {
			if err := v.apply(ms, z, old); err != nil {
				return err
			}
		}
		return v.store(c)
	})
}
