package commands

// SORT and SORT_RO, as Redis 7.0's sort.c: the elements of a list, set or sorted set, sorted
// numerically or (ALPHA) bytewise, optionally by the values of other keys (BY pattern, with
// "*" replaced by the element and "->field" reading a hash field), answered as themselves or
// as other keys' values (GET pattern, "#" for the element), or stored as a list (STORE).
//
// The source and the keys the patterns name are read before the write of the destination,
// which is one transaction of its own: a concurrent write to a pattern key may or may not be
// seen, where Redis's single thread sees none. The destination reaches followers as the list
// written (DEL and RPUSH), not as a SORT to run again.

import (
	"bytes"
	"math"
	"sort"
	"strconv"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

func init() {
	sortCmd := &Command{Name: "sort", Arity: -2, Flags: FlagWrite | FlagDenyOOM | FlagMovableKeys, FirstKey: 1, LastKey: 1, Step: 1,
		Keys: sortKeys, Group: "generic", Since: "1.0.0", ExtraACL: []string{"@set", "@sortedset", "@list", "@dangerous"},
		Complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
		Summary:    "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.", Handler: func(c *Ctx) { sortGeneric(c, false) }}
	sortRo := &Command{Name: "sort_ro", Arity: -2, Flags: FlagReadonly | FlagMovableKeys, FirstKey: 1, LastKey: 1, Step: 1,
		Keys: sortKeys, Group: "generic", Since: "7.0.0", ExtraACL: []string{"@set", "@sortedset", "@list", "@dangerous"},
		Complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
		Summary:    "Returns the sorted elements of a list, a set, or a sorted set.", Handler: func(c *Ctx) { sortGeneric(c, true) }}
	register(sortCmd, sortRo)
}

// sortKeys finds SORT's keys: the source, and the key after STORE.
func sortKeys(args [][]byte) ([]int, error) {
	out := []int{1}
	for i := 2; i < len(args)-1; i++ {
		switch {
		case is(args[i], "STORE"):
			out = append(out, i+1)
			i++
		case is(args[i], "LIMIT"):
			i += 2
		case is(args[i], "BY"), is(args[i], "GET"):
			i++
		}
	}
	return out, nil
}

// sortArgs are SORT's parsed options.
type sortArgs struct {
	desc, alpha, dontSort bool
	start, count          int64
	store, by             []byte
	gets                  [][]byte
}

func parseSort(c *Ctx, ro bool) (a sortArgs, err error) {
	a.count = -1
	args := c.Args
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch {
		case is(args[j], "ASC"):
			a.desc = false
		case is(args[j], "DESC"):
			a.desc = true
		case is(args[j], "ALPHA"):
			a.alpha = true
		case is(args[j], "LIMIT") && left >= 2:
			if a.start, err = intArg(args[j+1]); err != nil {
				return a, err
			}
			if a.count, err = intArg(args[j+2]); err != nil {
				return a, err
			}
			j += 2
		case !ro && is(args[j], "STORE") && left >= 1:
			a.store = args[j+1]
			j++
		case is(args[j], "BY") && left >= 1:
			a.by = args[j+1]
			a.dontSort = bytes.IndexByte(a.by, '*') < 0
			j++
		case is(args[j], "GET") && left >= 1:
			a.gets = append(a.gets, args[j+1])
			j++
		default:
			return a, ErrSyntax
		}
	}
	return a, nil
}

// lookupByPattern is Redis's lookupKeyByPattern: "#" is the element itself; otherwise the first
// "*" is replaced by the element and the key read as a string, or, with "->field" after the
// "*", as a hash field. A pattern without "*", a missing key or one of another type give nil.
func lookupByPattern(c *Ctx, pat, elem []byte) ([]byte, bool, error) {
	if len(pat) == 1 && pat[0] == '#' {
		return elem, true, nil
	}
	star := bytes.IndexByte(pat, '*')
	if star < 0 {
		return nil, false, nil
	}
	var field []byte
	rest := pat[star+1:]
	if f := bytes.Index(rest, []byte("->")); f >= 0 && f+2 < len(rest) {
		field = rest[f+2:]
		rest = rest[:f]
	}
	key := make([]byte, 0, len(pat)+len(elem))
	key = append(append(append(key, pat[:star]...), elem...), rest...)
	if field != nil {
		h, err := readFields(c, key, [][]byte{field})
		if err == ErrWrongType {
			return nil, false, nil
		}
		if err != nil || h == nil {
			return nil, false, err
		}
		v, ok := h.get(field)
		return v, ok, nil
	}
	var out []byte
	found, err := c.KS.Get(c.Sess, c.DB(), key, func(v keyspace.Value, m keyspace.Meta) error {
		if m.Type != typeString {
			return ErrWrongType
		}
		b, err := v.Bytes()
		out = bytes.Clone(b)
		return err
	})
	if err == ErrWrongType {
		return nil, false, nil
	}
	if !found && err == nil {
		c.KeyMiss(key) // a lookupKeyRead that missed, as readFields' for "->field"
	}
	return out, found && err == nil, err
}

// sortScore parses a value to sort by as C's strtod does for Redis: leading spaces allowed,
// the whole rest must be the number, NaN and out-of-range refused; "" is 0.
func sortScore(b []byte) (float64, bool) {
	s := bytes.TrimLeft(b, " \t\n\v\f\r")
	if len(s) == 0 {
		return 0, true
	}
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

type sortItem struct {
	elem  []byte
	score float64
	cmp   []byte
	has   bool // cmp was found (ALPHA with BY)
}

func sortGeneric(c *Ctx, ro bool) {
	a, err := parseSort(c, ro)
	if err != nil {
		c.Err(err)
		return
	}
	m, ok := c.KS.Lookup(c.Sess, c.DB(), c.Args[1])
	var elems [][]byte
	isSet, native := false, true
	if !ok {
		c.KeyMiss(c.Args[1]) // with STORE too: Redis looks the source up for reading
	}
	if ok {
		switch m.Type {
		case typeList:
			l, err := readList(c, c.Args[1])
			if err != nil {
				c.Err(err)
				return
			}
			if l != nil {
				elems = l.elems
			}
		case typeSet:
			s, err := readSet(c, c.Args[1])
			if err != nil {
				c.Err(err)
				return
			}
			if s != nil {
				elems = s.members
			}
			isSet, native = true, false
		case typeZSet:
			z, err := readZSet(c, c.Args[1])
			if err != nil {
				c.Err(err)
				return
			}
			if z != nil {
				for _, it := range z.items {
					elems = append(elems, it.member)
				}
			}
		default:
			c.Err(ErrWrongType)
			return
		}
	}
	// A set has no order of its own: stored or unsorted, it is sorted ALPHA, as Redis does
	// for a result that must be the same on replicas.
	if a.dontSort && isSet && a.store != nil {
		a.dontSort, a.alpha, a.by = false, true, nil
	}
	n := int64(len(elems))
	start := max(a.start, 0)
	end := n - 1
	if a.count >= 0 {
		end = start + a.count - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	end = min(end, n-1)

	items := make([]sortItem, len(elems))
	for i, e := range elems {
		items[i].elem = e
	}
	if a.dontSort && native && a.desc {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	if !a.dontSort {
		convErr := false
		for i := range items {
			by := items[i].elem
			if a.by != nil {
				v, found, err := lookupByPattern(c, a.by, items[i].elem)
				if err != nil {
					c.Err(err)
					return
				}
				if !found {
					continue
				}
				by = v
			}
			if a.alpha {
				if a.by != nil {
					items[i].cmp, items[i].has = by, true
				}
			} else {
				s, ok := sortScore(by)
				if !ok {
					convErr = true
				}
				items[i].score = s
			}
		}
		if convErr {
			c.Err(Error("ERR One or more scores can't be converted into double"))
			return
		}
		sort.SliceStable(items, func(i, j int) bool {
			x, y := &items[i], &items[j]
			var cmp int
			switch {
			case !a.alpha:
				switch {
				case x.score > y.score:
					cmp = 1
				case x.score < y.score:
					cmp = -1
				default:
					cmp = bytes.Compare(x.elem, y.elem)
				}
			case a.by != nil:
				switch {
				case !x.has || !y.has:
					cmp = b2cmp(x.has) - b2cmp(y.has)
				default:
					cmp = bytes.Compare(x.cmp, y.cmp)
				}
			default:
				cmp = bytes.Compare(x.elem, y.elem)
			}
			if a.desc {
				cmp = -cmp
			}
			return cmp < 0
		})
	}
	var out [][]byte
	var missing []bool
	for j := start; j <= end && j >= 0; j++ {
		e := items[j].elem
		if len(a.gets) == 0 {
			out = append(out, e)
			missing = append(missing, false)
			continue
		}
		for _, g := range a.gets {
			v, found, err := lookupByPattern(c, g, e)
			if err != nil {
				c.Err(err)
				return
			}
			out = append(out, v)
			missing = append(missing, !found)
		}
	}
	if a.store == nil {
		c.W.Array(len(out))
		for i, v := range out {
			if missing[i] {
				c.W.Null()
			} else {
				c.W.Bulk(v)
			}
		}
		return
	}
	l := newList()
	for _, v := range out {
		l.elems = append(l.elems, v) // a missing GET stores ""
	}
	if len(out) == 0 {
		c.Propagate([][]byte{[]byte("DEL"), a.store})
	} else {
		c.Propagate([][]byte{[]byte("DEL"), a.store}, append([][]byte{[]byte("RPUSH"), a.store}, out...))
	}
	err = c.KS.Update(c.Sess, []kspKey{{DB: c.DB(), Key: a.store}}, func(tx *keyspace.Tx) error {
		return putValue(tx, 0, l, 0, typeList)
	})
	if err != nil {
		c.Err(err)
		return
	}
	notifyStore(c, pubsub.List, "sortstore", a.store, len(out))
	c.W.Int(int64(len(out)))
}

func b2cmp(b bool) int {
	if b {
		return 1
	}
	return 0
}
