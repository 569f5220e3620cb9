package commands

import "errors"

// A list's value, as stored in its record (keyspace.TypeList):
//
//	0  version   byte     listFormat
//	1  flags     byte     0
//	2  count     uvarint  elements
//	   elements  count x (uvarint len, bytes), head first
//
// OBJECT ENCODING says "quicklist", as Redis 7.0 does for every list.
const listFormat = 1

var errBadList = errors.New("ERR lavik: a list record does not decode")

// listValue is a decoded list, head first.
type listValue struct {
	elems [][]byte
}

func decodeList(b []byte) (*listValue, error) {
	r := blobReader{b}
	_, n, ok := r.header(listFormat)
	if !ok {
		return nil, errBadList
	}
	l := &listValue{elems: make([][]byte, 0, n)}
	for i := uint64(0); i < n; i++ {
		e, ok := r.next()
		if !ok {
			return nil, errBadList
		}
		l.elems = append(l.elems, e)
	}
	if len(r.b) != 0 {
		return nil, errBadList
	}
	return l, nil
}

func (l *listValue) encode() []byte {
	size := 2 + 10
	for _, e := range l.elems {
		size += 10 + len(e)
	}
	b := append(make([]byte, 0, size), listFormat, 0)
	b = appendUvarint(b, uint64(len(l.elems)))
	for _, e := range l.elems {
		b = appendBlob(b, e)
	}
	return b
}

func (l *listValue) len() int { return len(l.elems) }

// push adds e at the head (left) or the tail.
func (l *listValue) push(e []byte, left bool) {
	if left {
		l.elems = append(l.elems, nil)
		copy(l.elems[1:], l.elems)
		l.elems[0] = e
	} else {
		l.elems = append(l.elems, e)
	}
}

// pop removes and returns the head (left) or tail element; the list is not empty.
func (l *listValue) pop(left bool) []byte {
	if left {
		e := l.elems[0]
		l.elems = l.elems[1:]
		return e
	}
	e := l.elems[len(l.elems)-1]
	l.elems = l.elems[:len(l.elems)-1]
	return e
}

// index resolves a Redis index (negative from the tail) to a position, ok false out of range.
func (l *listValue) index(i int64) (int, bool) { return indexIn(len(l.elems), i) }

// indexIn resolves a Redis index into a list of n elements.
func indexIn(n int, i int64) (int, bool) {
	if i < 0 {
		i += int64(n)
	}
	if i < 0 || i >= int64(n) {
		return 0, false
	}
	return int(i), true
}

// span resolves LRANGE/LTRIM's start and stop to a half-open range [from, to), empty when it
// selects nothing.
func (l *listValue) span(start, stop int64) (int, int) { return spanIn(len(l.elems), start, stop) }

// spanIn is span for a list of n elements.
func spanIn(n64 int, start, stop int64) (int, int) {
	n := int64(n64)
	if start < 0 {
		start = max(start+n, 0)
	}
	if stop < 0 {
		stop += n
	}
	if start > stop || start >= n {
		return 0, 0
	}
	return int(start), int(min(stop, n-1) + 1)
}
