package commands

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"sort"
	"strconv"
)

// A sorted set's value, as stored in its record (keyspace.TypeZSet):
//
//	0  version  byte     zsetFormat
//	1  flags    byte     zsetSkiplistEnc: OBJECT ENCODING says "skiplist" (see below)
//	2  count    uvarint  members
//	   items    count x (score float64 bits, little endian; uvarint len, member bytes)
//
// Items are in Redis's order: by score, then by member bytes. zsetSkiplistEnc remembers that
// the set once went past Redis's listpack limits (128 members, or a member over 64 bytes):
// Redis converts such a set to a skiplist and never back.
const (
	zsetFormat      = 1
	zsetSkiplistEnc = 1

	zsetMaxListpackEntries = 128
	zsetMaxListpackValue   = 64
)

var errBadZSet = errors.New("ERR lavik: a sorted set record does not decode")

type zitem struct {
	score  float64
	member []byte
}

// less is Redis's order of sorted-set items.
func (a zitem) less(b zitem) bool {
	return a.score < b.score || a.score == b.score && bytes.Compare(a.member, b.member) < 0
}

// zsetValue is a decoded sorted set; index maps a member to its score.
type zsetValue struct {
	items  []zitem
	flags  byte
	index  map[string]float64
	others int // as hashValue's
}

func decodeZSet(b []byte) (*zsetValue, error) {
	r := blobReader{b}
	flags, n, ok := r.header(zsetFormat)
	if !ok || n > uint64(len(r.b))/9 {
		return nil, errBadZSet
	}
	z := &zsetValue{flags: flags, items: make([]zitem, 0, n)}
	for i := uint64(0); i < n; i++ {
		if len(r.b) < 8 {
			return nil, errBadZSet
		}
		score := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
		r.b = r.b[8:]
		m, ok := r.next()
		if !ok || math.IsNaN(score) {
			return nil, errBadZSet
		}
		it := zitem{score, m}
		if len(z.items) > 0 && !z.items[len(z.items)-1].less(it) {
			return nil, errBadZSet
		}
		z.items = append(z.items, it)
	}
	if len(r.b) != 0 {
		return nil, errBadZSet
	}
	return z, nil
}

func (z *zsetValue) encode() []byte {
	size := 2 + 10
	for _, it := range z.items {
		size += 18 + len(it.member)
	}
	b := append(make([]byte, 0, size), zsetFormat, z.flags)
	b = appendUvarint(b, uint64(len(z.items)))
	for _, it := range z.items {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(it.score))
		b = appendBlob(b, it.member)
	}
	return b
}

func (z *zsetValue) len() int { return len(z.items) }

func (z *zsetValue) buildIndex() {
	if z.index == nil {
		z.index = make(map[string]float64, len(z.items))
		for _, it := range z.items {
			z.index[string(it.member)] = it.score
		}
	}
}

// score returns member's score.
func (z *zsetValue) score(m []byte) (float64, bool) {
	z.buildIndex()
	s, ok := z.index[string(m)]
	return s, ok
}

// pos returns the position of the item (score, m), which is in the set.
func (z *zsetValue) pos(score float64, m []byte) int {
	it := zitem{score, m}
	return sort.Search(len(z.items), func(i int) bool { return !z.items[i].less(it) })
}

// rank returns member's rank from the lowest score.
func (z *zsetValue) rank(m []byte) (int, bool) {
	s, ok := z.score(m)
	if !ok {
		return 0, false
	}
	return z.pos(s, m), true
}

// set gives member m score s (adding it if new) and reports whether it was new.
func (z *zsetValue) set(m []byte, s float64) bool {
	old, exists := z.score(m)
	// As Redis's zsetAdd, the set becomes a skiplist before the member goes in; a listpack
	// keeps no negative zero (it prints 0).
	if len(m) > zsetMaxListpackValue || !exists && z.others+len(z.items)+1 > zsetMaxListpackEntries {
		z.flags |= zsetSkiplistEnc
	}
	if s == 0 && z.flags&zsetSkiplistEnc == 0 {
		s = 0
	}
	if exists {
		if old == s {
			return false
		}
		i := z.pos(old, m)
		z.items = append(z.items[:i], z.items[i+1:]...)
	}
	it := zitem{s, m}
	i := z.pos(s, m)
	z.items = append(z.items, zitem{})
	copy(z.items[i+1:], z.items[i:])
	z.items[i] = it
	z.index[string(m)] = s
	return !exists
}

// remove removes member m and reports whether it was there.
func (z *zsetValue) remove(m []byte) bool {
	s, ok := z.score(m)
	if !ok {
		return false
	}
	i := z.pos(s, m)
	z.items = append(z.items[:i], z.items[i+1:]...)
	delete(z.index, string(m))
	return true
}

// removeRange removes items [from, to).
func (z *zsetValue) removeRange(from, to int) int {
	if from >= to {
		return 0
	}
	for _, it := range z.items[from:to] {
		if z.index != nil {
			delete(z.index, string(it.member))
		}
	}
	z.items = append(z.items[:from], z.items[to:]...)
	return to - from
}

func (z *zsetValue) encoding() string {
	if z.flags&zsetSkiplistEnc != 0 {
		return "skiplist"
	}
	return "listpack"
}

// scoreRange is a ZRANGEBYSCORE range: min and max, each inclusive or not.
type scoreRange struct {
	min, max       float64
	minExc, maxExc bool
}

// parseScoreBound parses "1.5", "(1.5", "-inf", "+inf" as Redis's zslParseRange does.
func parseScoreBound(b []byte) (float64, bool, bool) {
	exc := len(b) > 0 && b[0] == '('
	if exc {
		b = b[1:]
	}
	// strtod skips leading white space and reads nothing as 0; what follows the number must
	// be the end.
	b = bytes.TrimLeft(b, " \t\n\v\f\r")
	if len(b) == 0 {
		return 0, exc, true
	}
	f, ok := ParseFloat(b)
	if !ok || math.IsNaN(f) {
		return 0, false, false
	}
	return f, exc, true
}

func parseScoreRange(minArg, maxArg []byte) (scoreRange, error) {
	var r scoreRange
	var ok1, ok2 bool
	r.min, r.minExc, ok1 = parseScoreBound(minArg)
	r.max, r.maxExc, ok2 = parseScoreBound(maxArg)
	if !ok1 || !ok2 {
		return r, Error("ERR min or max is not a float")
	}
	return r, nil
}

func (r scoreRange) aboveMin(s float64) bool {
	return s > r.min || !r.minExc && s == r.min
}

func (r scoreRange) belowMax(s float64) bool {
	return s < r.max || !r.maxExc && s == r.max
}

// byScore returns the positions [from, to) of the items in r.
func (z *zsetValue) byScore(r scoreRange) (int, int) {
	from := sort.Search(len(z.items), func(i int) bool { return r.aboveMin(z.items[i].score) })
	to := sort.Search(len(z.items), func(i int) bool { return !r.belowMax(z.items[i].score) })
	if to < from {
		to = from
	}
	return from, to
}

// lexRange is a ZRANGEBYLEX range: "-" and "+" are the open ends.
type lexRange struct {
	min, max       []byte
	minInf, maxInf int // -1 for "-", +1 for "+", 0 for a string
	minExc, maxExc bool
}

func parseLexBound(b []byte) (s []byte, inf int, exc bool, ok bool) {
	switch {
	case len(b) == 1 && b[0] == '+':
		return nil, 1, false, true
	case len(b) == 1 && b[0] == '-':
		return nil, -1, false, true
	case len(b) > 0 && b[0] == '(':
		return b[1:], 0, true, true
	case len(b) > 0 && b[0] == '[':
		return b[1:], 0, false, true
	}
	return nil, 0, false, false
}

func parseLexRange(minArg, maxArg []byte) (lexRange, error) {
	var r lexRange
	var ok1, ok2 bool
	r.min, r.minInf, r.minExc, ok1 = parseLexBound(minArg)
	r.max, r.maxInf, r.maxExc, ok2 = parseLexBound(maxArg)
	if !ok1 || !ok2 {
		return r, Error("ERR min or max not valid string range item")
	}
	return r, nil
}

func (r lexRange) aboveMin(m []byte) bool {
	switch r.minInf {
	case -1:
		return true
	case 1:
		return false
	}
	c := bytes.Compare(m, r.min)
	return c > 0 || !r.minExc && c == 0
}

func (r lexRange) belowMax(m []byte) bool {
	switch r.maxInf {
	case 1:
		return true
	case -1:
		return false
	}
	c := bytes.Compare(m, r.max)
	return c < 0 || !r.maxExc && c == 0
}

// byLex returns the positions [from, to) of the items in r; lex ranges assume equal scores,
// as Redis's do.
func (z *zsetValue) byLex(r lexRange) (int, int) {
	from := sort.Search(len(z.items), func(i int) bool { return r.aboveMin(z.items[i].member) })
	to := sort.Search(len(z.items), func(i int) bool { return !r.belowMax(z.items[i].member) })
	if to < from {
		to = from
	}
	return from, to
}

// formatScore is Redis 7.0's text of a score ("%.17g"): 0.1 is "0.10000000000000001".
func formatScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}
