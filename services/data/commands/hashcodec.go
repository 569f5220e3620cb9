package commands

import (
	"encoding/binary"
	"errors"
)

// A hash's value, as stored in its record (keyspace.TypeHash):
//
//	0  version  byte     hashFormat
//	1  flags    byte     hashTableEnc: OBJECT ENCODING says "hashtable" (see below)
//	2  count    uvarint  fields
//	   pairs    count x (uvarint len, field bytes, uvarint len, value bytes)
//
// Fields keep the order they were first set in, as Redis's listpack does. hashTableEnc
// remembers that the hash once went past Redis's listpack limits (128 fields, or a field or
// value over 64 bytes): Redis converts such a hash to a hash table and never back, and OBJECT
// ENCODING reports it so.
const (
	hashFormat   = 1
	hashTableEnc = 1

	hashMaxListpackEntries = 128
	hashMaxListpackValue   = 64
)

var errBadHash = errors.New("ERR lavik: a hash record does not decode")

// hashValue is a decoded hash.
type hashValue struct {
	fields, vals [][]byte
	flags        byte
	index        memberIndex
	// others counts the fields of the hash this value is a part of that it does not hold (a
	// grouped hash's, keyed.go): the encoding's limits are the whole's.
	others int
}

// memberIndex finds a member (a hash's field, a set's member) among a collection's: by a scan
// while there are few, through a map built on first use beyond that.
type memberIndex struct{ m map[string]int }

func (x *memberIndex) find(members [][]byte, m []byte) int {
	if len(members) <= 16 {
		for i, f := range members {
			if string(f) == string(m) {
				return i
			}
		}
		return -1
	}
	if x.m == nil {
		x.m = make(map[string]int, len(members))
		for i, f := range members {
			x.m[string(f)] = i
		}
	}
	if i, ok := x.m[string(m)]; ok {
		return i
	}
	return -1
}

// appended notes member m appended at position i; removed notes the removal of member m from
// position i, which moved the members after it one place down.
func (x *memberIndex) appended(m []byte, i int) {
	if x.m != nil {
		x.m[string(m)] = i
	}
}

func (x *memberIndex) removed(m []byte, i int) {
	if x.m == nil {
		return
	}
	delete(x.m, string(m))
	for k, j := range x.m {
		if j > i {
			x.m[k] = j - 1
		}
	}
}

// blobReader reads the uvarint-prefixed byte strings of an encoded collection.
type blobReader struct{ b []byte }

func (r *blobReader) next() ([]byte, bool) {
	l, k := binary.Uvarint(r.b)
	if k <= 0 || l > uint64(len(r.b)-k) {
		return nil, false
	}
	v := r.b[k : k+int(l) : k+int(l)]
	r.b = r.b[k+int(l):]
	return v, true
}

// header reads a collection's version, flags and count, checking the version.
func (r *blobReader) header(version byte) (flags byte, n uint64, ok bool) {
	if len(r.b) < 2 || r.b[0] != version {
		return 0, 0, false
	}
	flags = r.b[1]
	r.b = r.b[2:]
	n, k := binary.Uvarint(r.b)
	if k <= 0 || n > uint64(len(r.b)) {
		return 0, 0, false
	}
	r.b = r.b[k:]
	return flags, n, true
}

func appendBlob(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func decodeHash(b []byte) (*hashValue, error) {
	r := blobReader{b}
	flags, n, ok := r.header(hashFormat)
	if !ok {
		return nil, errBadHash
	}
	h := &hashValue{flags: flags, fields: make([][]byte, 0, n), vals: make([][]byte, 0, n)}
	for i := uint64(0); i < n; i++ {
		f, ok1 := r.next()
		v, ok2 := r.next()
		if !ok1 || !ok2 {
			return nil, errBadHash
		}
		h.fields = append(h.fields, f)
		h.vals = append(h.vals, v)
	}
	if len(r.b) != 0 {
		return nil, errBadHash
	}
	return h, nil
}

func (h *hashValue) encode() []byte {
	size := 2 + binary.MaxVarintLen64
	for i := range h.fields {
		size += 2*binary.MaxVarintLen64 + len(h.fields[i]) + len(h.vals[i])
	}
	b := make([]byte, 0, size)
	b = append(b, hashFormat, h.flags)
	b = appendUvarint(b, uint64(len(h.fields)))
	for i := range h.fields {
		b = appendBlob(b, h.fields[i])
		b = appendBlob(b, h.vals[i])
	}
	return b
}

func (h *hashValue) len() int { return len(h.fields) }

// find returns the position of field, or -1.
func (h *hashValue) find(field []byte) int { return h.index.find(h.fields, field) }

func (h *hashValue) get(field []byte) ([]byte, bool) {
	if i := h.find(field); i >= 0 {
		return h.vals[i], true
	}
	return nil, false
}

// set sets field to val and reports whether the field is new. The bytes are kept, not copied.
func (h *hashValue) set(field, val []byte) bool {
	if len(field) > hashMaxListpackValue || len(val) > hashMaxListpackValue {
		h.flags |= hashTableEnc
	}
	if i := h.find(field); i >= 0 {
		h.vals[i] = val
		return false
	}
	h.fields = append(h.fields, field)
	h.vals = append(h.vals, val)
	h.index.appended(field, len(h.fields)-1)
	if h.others+len(h.fields) > hashMaxListpackEntries {
		h.flags |= hashTableEnc
	}
	return true
}

// del removes field and reports whether it was there; the others keep their order.
func (h *hashValue) del(field []byte) bool {
	i := h.find(field)
	if i < 0 {
		return false
	}
	h.fields = append(h.fields[:i], h.fields[i+1:]...)
	h.vals = append(h.vals[:i], h.vals[i+1:]...)
	h.index.removed(field, i)
	return true
}

// encoding is what OBJECT ENCODING reports.
func (h *hashValue) encoding() string {
	if h.flags&hashTableEnc != 0 {
		return "hashtable"
	}
	return "listpack"
}

func appendUvarint(b []byte, n uint64) []byte { return binary.AppendUvarint(b, n) }

// The grouped layer's view of a hash (keyed.go).

func (h *hashValue) keys() [][]byte  { return h.fields }
func (h *hashValue) size(i int) int  { return len(h.fields[i]) + len(h.vals[i]) + 2 }
func (h *hashValue) flagBits() byte  { return h.flags }
func (h *hashValue) orFlags(f byte)  { h.flags |= f }
func (h *hashValue) setOthers(n int) { h.others = n }

func (h *hashValue) pick(idx []int) *hashValue {
	p := &hashValue{flags: h.flags, fields: make([][]byte, len(idx)), vals: make([][]byte, len(idx))}
	for n, i := range idx {
		p.fields[n], p.vals[n] = h.fields[i], h.vals[i]
	}
	return p
}

func (h *hashValue) absorb(o *hashValue) {
	h.fields = append(h.fields, o.fields...)
	h.vals = append(h.vals, o.vals...)
	h.flags |= o.flags
	h.index = memberIndex{}
}

var hashType = &keyedType[*hashValue]{typ: typeHash, format: hashFormat, decode: decodeHash,
	empty: func() *hashValue { return &hashValue{} }}

func init() { hashType.register() }
