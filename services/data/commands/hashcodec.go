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

// hashValue is a decoded hash. index, built once the hash has more than a few fields, maps a
// field to its position.
type hashValue struct {
	fields, vals [][]byte
	flags        byte
	index        map[string]int
}

func decodeHash(b []byte) (*hashValue, error) {
	if len(b) < 2 || b[0] != hashFormat {
		return nil, errBadHash
	}
	h := &hashValue{flags: b[1]}
	b = b[2:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errBadHash
	}
	b = b[k:]
	h.fields = make([][]byte, 0, n)
	h.vals = make([][]byte, 0, n)
	next := func() ([]byte, bool) {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, false
		}
		v := b[k : k+int(l) : k+int(l)]
		b = b[k+int(l):]
		return v, true
	}
	for i := uint64(0); i < n; i++ {
		f, ok1 := next()
		v, ok2 := next()
		if !ok1 || !ok2 {
			return nil, errBadHash
		}
		h.fields = append(h.fields, f)
		h.vals = append(h.vals, v)
	}
	if len(b) != 0 {
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
	b = binary.AppendUvarint(b, uint64(len(h.fields)))
	for i := range h.fields {
		b = binary.AppendUvarint(b, uint64(len(h.fields[i])))
		b = append(b, h.fields[i]...)
		b = binary.AppendUvarint(b, uint64(len(h.vals[i])))
		b = append(b, h.vals[i]...)
	}
	return b
}

func (h *hashValue) len() int { return len(h.fields) }

// find returns the position of field, or -1.
func (h *hashValue) find(field []byte) int {
	if len(h.fields) <= 16 {
		for i, f := range h.fields {
			if string(f) == string(field) {
				return i
			}
		}
		return -1
	}
	if h.index == nil {
		h.index = make(map[string]int, len(h.fields))
		for i, f := range h.fields {
			h.index[string(f)] = i
		}
	}
	if i, ok := h.index[string(field)]; ok {
		return i
	}
	return -1
}

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
	if h.index != nil {
		h.index[string(field)] = len(h.fields) - 1
	}
	if len(h.fields) > hashMaxListpackEntries {
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
	h.index = nil
	return true
}

// encoding is what OBJECT ENCODING reports.
func (h *hashValue) encoding() string {
	if h.flags&hashTableEnc != 0 {
		return "hashtable"
	}
	return "listpack"
}
