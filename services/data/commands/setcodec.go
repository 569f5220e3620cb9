package commands

import (
	"errors"

	"github.com/lavikdb/lavik/services/data/keyspace"
)

// A set's value, as stored in its record (keyspace.TypeSet):
//
//	0  version  byte     setFormat
//	1  flags    byte     setTableEnc: OBJECT ENCODING says "hashtable" (see below)
//	2  count    uvarint  members
//	   members  count x (uvarint len, bytes)
//
// Members keep the order they were added in. Redis 7.0 keeps a set of integers (at most 512,
// set-max-intset-entries) as an intset and any other as a hash table, converting once and never
// back; setTableEnc remembers that conversion for OBJECT ENCODING.
const (
	setFormat   = 1
	setTableEnc = 1

	setMaxIntsetEntries = 512
)

var errBadSet = errors.New("ERR lavik: a set record does not decode")

// setValue is a decoded set.
type setValue struct {
	members [][]byte
	flags   byte
	index   memberIndex
	others  int // as hashValue's
}

func decodeSet(b []byte) (*setValue, error) {
	r := blobReader{b}
	flags, n, ok := r.header(setFormat)
	if !ok {
		return nil, errBadSet
	}
	s := &setValue{flags: flags, members: make([][]byte, 0, n)}
	for i := uint64(0); i < n; i++ {
		m, ok := r.next()
		if !ok {
			return nil, errBadSet
		}
		s.members = append(s.members, m)
	}
	if len(r.b) != 0 {
		return nil, errBadSet
	}
	return s, nil
}

func (s *setValue) encode() []byte {
	size := 2 + 10
	for _, m := range s.members {
		size += 10 + len(m)
	}
	b := append(make([]byte, 0, size), setFormat, s.flags)
	b = appendUvarint(b, uint64(len(s.members)))
	for _, m := range s.members {
		b = appendBlob(b, m)
	}
	return b
}

func (s *setValue) len() int { return len(s.members) }

func (s *setValue) has(m []byte) bool { return s.index.find(s.members, m) >= 0 }

// add adds m and reports whether it is new. The bytes are kept, not copied.
func (s *setValue) add(m []byte) bool {
	if s.has(m) {
		return false
	}
	if _, ok := ParseInt(m); !ok || s.others+len(s.members)+1 > setMaxIntsetEntries {
		s.flags |= setTableEnc
	}
	s.members = append(s.members, m)
	s.index.appended(m, len(s.members)-1)
	return true
}

// remove removes m and reports whether it was there.
func (s *setValue) remove(m []byte) bool {
	i := s.index.find(s.members, m)
	if i < 0 {
		return false
	}
	s.members = append(s.members[:i], s.members[i+1:]...)
	s.index.removed(m, i)
	return true
}

// encoding is what OBJECT ENCODING reports.
func (s *setValue) encoding() string {
	if s.flags&setTableEnc != 0 {
		return "hashtable"
	}
	return "intset"
}

// The grouped layer's view of a set (keyed.go).

func (s *setValue) keys() [][]byte  { return s.members }
func (s *setValue) size(i int) int  { return len(s.members[i]) + 1 }
func (s *setValue) flagBits() byte  { return s.flags }
func (s *setValue) orFlags(f byte)  { s.flags |= f }
func (s *setValue) setOthers(n int) { s.others = n }

func (s *setValue) pick(idx []int) *setValue {
	p := &setValue{flags: s.flags, members: make([][]byte, len(idx))}
	for n, i := range idx {
		p.members[n] = s.members[i]
	}
	return p
}

func (s *setValue) absorb(o *setValue) {
	s.members = append(s.members, o.members...)
	s.flags |= o.flags
	s.index = memberIndex{}
}

var setType = &keyedType[*setValue]{typ: keyspace.TypeSet, format: setFormat, decode: decodeSet,
	empty: func() *setValue { return &setValue{} }}

func init() { setType.register() }
