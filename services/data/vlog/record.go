package vlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Kind is what a record does to its key.
type Kind uint8

// Record kinds.
const (
	// KindPut sets the key to the payload.
	KindPut Kind = 1
	// KindDelete removes the key (a tombstone).
	KindDelete Kind = 2
	// KindExpire changes only the key's expire-at; the value stays where it is.
	KindExpire Kind = 3
	// KindFlushDB removes every key of the record's database that is older than the record.
	KindFlushDB Kind = 4
	// KindFlushAll removes every key older than the record.
	KindFlushAll Kind = 5
	// KindChunk is one segment of a large value: a piece of the payload of the key's chunked
	// put (its manifest, see keyspace/chunked.go), which names it by location. A chunk record
	// does nothing to its key by itself: replay hands it on and the keyspace ignores it, so a
	// dead chunk can never hide or resurrect anything. It carries the key and database so that
	// a reader can check it belongs to the key and the collector can find the key that owns it;
	// its expire-at field holds the chunk's byte offset in the value instead of a time.
	KindChunk Kind = 6
)

func (k Kind) String() string {
	switch k {
	case KindPut:
		return "put"
	case KindDelete:
		return "delete"
	case KindExpire:
		return "expire"
	case KindFlushDB:
		return "flushdb"
	case KindFlushAll:
		return "flushall"
	case KindChunk:
		return "chunk"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// HeaderSize is the fixed size of a record header. Layout (little endian):
//
//	0  crc32c   uint32  over bytes [4, end of record)
//	4  magic    uint8   recordMagic
//	5  kind     uint8
//	6  db       uint8
//	7  vtype    uint8   value type (string, ...)
//	8  keyLen   uint32
//	12 valLen   uint32
//	16 version  uint64
//	24 expireAt int64   unix milliseconds, 0 = no expiry (a chunk's offset in its value)
//	32 key, then value
const HeaderSize = 32

const recordMagic = 0xA7

// MaxRecordSize bounds one record so a corrupt length cannot make recovery allocate gigabytes.
const MaxRecordSize = 1<<30 + HeaderSize

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is the class of every corruption error: a record whose CRC, magic or lengths do
// not verify. Callers test with errors.Is and never serve the record.
var ErrCorrupt = errors.New("vlog: corrupt record")

// Header is a decoded record header.
type Header struct {
	Kind     Kind
	DB       uint8
	VType    uint8
	KeyLen   uint32
	ValLen   uint32
	Version  uint64
	ExpireAt int64
}

// Size is the total size of the record the header describes.
func (h Header) Size() int64 { return RecordSize(int(h.KeyLen), int(h.ValLen)) }

// RecordSize is the encoded size of a record with the given key and value lengths.
func RecordSize(keyLen, valLen int) int64 { return int64(HeaderSize + keyLen + valLen) }

// AppendRecord encodes a record onto dst.
func AppendRecord(dst []byte, h Header, key, val []byte) []byte {
	h.KeyLen, h.ValLen = uint32(len(key)), uint32(len(val))
	start := len(dst)
	var hdr [HeaderSize]byte
	hdr[4] = recordMagic
	hdr[5] = byte(h.Kind)
	hdr[6] = h.DB
	hdr[7] = h.VType
	binary.LittleEndian.PutUint32(hdr[8:], h.KeyLen)
	binary.LittleEndian.PutUint32(hdr[12:], h.ValLen)
	binary.LittleEndian.PutUint64(hdr[16:], h.Version)
	binary.LittleEndian.PutUint64(hdr[24:], uint64(h.ExpireAt))
	dst = append(dst, hdr[:]...)
	dst = append(dst, key...)
	dst = append(dst, val...)
	crc := crc32.Checksum(dst[start+4:], castagnoli)
	binary.LittleEndian.PutUint32(dst[start:], crc)
	return dst
}

// DecodeHeader decodes and sanity-checks the header at the start of b without checking the CRC.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: short header (%d bytes)", ErrCorrupt, len(b))
	}
	if b[4] != recordMagic {
		return Header{}, fmt.Errorf("%w: bad magic %#x", ErrCorrupt, b[4])
	}
	h := Header{
		Kind:     Kind(b[5]),
		DB:       b[6],
		VType:    b[7],
		KeyLen:   binary.LittleEndian.Uint32(b[8:]),
		ValLen:   binary.LittleEndian.Uint32(b[12:]),
		Version:  binary.LittleEndian.Uint64(b[16:]),
		ExpireAt: int64(binary.LittleEndian.Uint64(b[24:])),
	}
	if h.Kind < KindPut || h.Kind > KindChunk {
		return Header{}, fmt.Errorf("%w: bad kind %d", ErrCorrupt, h.Kind)
	}
	if h.Size() > MaxRecordSize {
		return Header{}, fmt.Errorf("%w: record size %d over limit", ErrCorrupt, h.Size())
	}
	return h, nil
}

// DecodeRecord verifies the whole record at the start of b (which must hold at least the full
// record) and returns its header, key and value. Key and value alias b.
func DecodeRecord(b []byte) (h Header, key, val []byte, err error) {
	h, err = DecodeHeader(b)
	if err != nil {
		return h, nil, nil, err
	}
	n := h.Size()
	if int64(len(b)) < n {
		return h, nil, nil, fmt.Errorf("%w: record of %d bytes truncated to %d", ErrCorrupt, n, len(b))
	}
	want := binary.LittleEndian.Uint32(b)
	if got := crc32.Checksum(b[4:n], castagnoli); got != want {
		return h, nil, nil, fmt.Errorf("%w: crc %#08x, want %#08x", ErrCorrupt, got, want)
	}
	key = b[HeaderSize : HeaderSize+int(h.KeyLen)]
	val = b[HeaderSize+int(h.KeyLen) : n]
	return h, key, val, nil
}
