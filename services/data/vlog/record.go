package vlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Kind is what a record does to its key.
type Kind uint8

// Record kinds. A kind this version does not know makes the record, and the data directory,
// unreadable: see ErrNewerFormat.
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
	// KindSub is a sub-record of a grouped value: one piece of a value whose put record (its
	// directory, FlagDir) names it by location, such as a chunk of a large string. Its key
	// field holds the 8-byte id of the object it belongs to, not the key, so that a key of
	// 64 KiB does not repeat in every 8 KiB chunk, and a renamed object keeps its pieces; its
	// Sub field says which piece it is and its Version is the version of the directory that
	// first wrote it. A sub-record does nothing by itself: replay hands it on and the keyspace
	// never applies it, so a dead one can neither hide nor resurrect anything.
	KindSub Kind = 6
	// KindMark does nothing to any key. The log appends one to prove durability (its Synced
	// field and flagPrevSealed, see Header) when the records before it carry no such proof,
	// and a repair writes one over bytes it moved aside (replay.go).
	KindMark Kind = 7

	maxKind = KindMark
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
	case KindSub:
		return "sub"
	case KindMark:
		return "mark"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Record flags (Header.Flags). A bit this version does not know makes the record unreadable
// (ErrNewerFormat).
const (
	// FlagRaw: the value was last written by an in-place edit (APPEND, SETRANGE), which Redis
	// reports as the "raw" encoding whatever the length.
	FlagRaw uint8 = 1 << 0
	// FlagDir: the payload is a directory naming sub-records (KindSub) by location, such as
	// a large string's manifest. Valid on puts only.
	FlagDir uint8 = 1 << 1
	// FlagTx: the record is part of a transaction that wrote more than one record, and its
	// extension block holds the transaction's commit condition (see the keyspace's tx
	// records): replay applies the record only if every part of the transaction is in the log.
	FlagTx uint8 = 1 << 2
	// flagPrevSealed is set by the log on records appended once the previous segment was
	// wholly synced. It lets recovery tell a torn tail of that segment (possible while no
	// record says so) from corruption (replay.go).
	flagPrevSealed uint8 = 1 << 7

	knownFlags = FlagRaw | FlagDir | FlagTx | flagPrevSealed
)

// HeaderSize is the fixed size of a record header. Layout (format 2, little endian):
//
//	0  crc32c   uint32  over bytes [4, end of record)
//	4  magic    uint8   recordMagic
//	5  kind     uint8
//	6  db       uint8
//	7  vtype    uint8   value type (string, ...): the keyspace's
//	8  flags    uint8   FlagRaw, FlagDir, FlagTx, flagPrevSealed
//	9  reserved uint8   zero
//	10 extLen   uint16  bytes of the extension block after the header
//	12 keyLen   uint32
//	16 valLen   uint32
//	20 synced   uint32  bytes of this record's segment that were synced when it was appended
//	24 version  uint64
//	32 expireAt int64   absolute unix milliseconds, 0 = no expiry
//	40 sub      uint64  which piece of its object a sub-record is; 0 on other records
//	48 extension block (extLen bytes), key (keyLen), value (valLen)
//
// Format 1 (Lavik 0.1) had a 32-byte header without flags, synced, sub and extension, kept the
// chunked and raw bits in vtype and used expireAt as a chunk's offset; the keyspace upgrades
// such a directory when it opens it.
const HeaderSize = 48

// recordMagic marks a format-2 record; format 1 used 0xA7.
const recordMagic = 0xB2

// MaxRecordSize bounds one record so a corrupt length cannot make recovery allocate gigabytes:
// key and value of up to 1 GiB together, plus the header and an extension block (at most
// 64 KiB: its length is 16 bits).
const MaxRecordSize = 1<<30 + HeaderSize + 1<<16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is the class of every corruption error: a record whose CRC, magic or lengths do
// not verify. Callers test with errors.Is and never serve the record.
var ErrCorrupt = errors.New("vlog: corrupt record")

// ErrNewerFormat is the class of errors for data this version cannot read because a newer
// version wrote it: a record that verifies but has a kind, flag or reserved byte this version
// does not know, a segment or data directory of a later format. Recovery never treats such
// data as a torn tail: the node refuses to start.
var ErrNewerFormat = errors.New("vlog: written by a newer version of Lavik")

// Header is a decoded record header.
type Header struct {
	Kind  Kind
	DB    uint8
	VType uint8
	Flags uint8
	// Synced is set by the log when it appends the record (any value given is replaced).
	Synced   uint32
	Version  uint64
	ExpireAt int64
	Sub      uint64

	ExtLen uint16
	KeyLen uint32
	ValLen uint32
}

// Size is the total size of the record the header describes.
func (h Header) Size() int64 { return RecordSize(int(h.ExtLen), int(h.KeyLen), int(h.ValLen)) }

// RecordSize is the encoded size of a record with the given extension, key and value lengths.
func RecordSize(extLen, keyLen, valLen int) int64 {
	return int64(HeaderSize + extLen + keyLen + valLen)
}

// Record is one decoded record. Ext, Key and Val alias the bytes it was decoded from.
type Record struct {
	Loc    Loc
	Header Header
	Ext    []byte
	Key    []byte
	Val    []byte
}

// Size is the record's encoded size.
func (r *Record) Size() int64 { return r.Header.Size() }

// AppendRecord encodes a record onto dst. The header's lengths are taken from ext, key and val.
func AppendRecord(dst []byte, h Header, ext, key, val []byte) []byte {
	h.ExtLen, h.KeyLen, h.ValLen = uint16(len(ext)), uint32(len(key)), uint32(len(val))
	start := len(dst)
	var hdr [HeaderSize]byte
	hdr[4] = recordMagic
	hdr[5] = byte(h.Kind)
	hdr[6] = h.DB
	hdr[7] = h.VType
	hdr[8] = h.Flags
	binary.LittleEndian.PutUint16(hdr[10:], h.ExtLen)
	binary.LittleEndian.PutUint32(hdr[12:], h.KeyLen)
	binary.LittleEndian.PutUint32(hdr[16:], h.ValLen)
	binary.LittleEndian.PutUint32(hdr[20:], h.Synced)
	binary.LittleEndian.PutUint64(hdr[24:], h.Version)
	binary.LittleEndian.PutUint64(hdr[32:], uint64(h.ExpireAt))
	binary.LittleEndian.PutUint64(hdr[40:], h.Sub)
	dst = append(dst, hdr[:]...)
	dst = append(dst, ext...)
	dst = append(dst, key...)
	dst = append(dst, val...)
	crc := crc32.Checksum(dst[start+4:], castagnoli)
	binary.LittleEndian.PutUint32(dst[start:], crc)
	return dst
}

// DecodeHeader decodes and sanity-checks the header at the start of b without checking the CRC
// or whether this version knows the record's kind and flags (DecodeRecord does both).
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
		Flags:    b[8],
		ExtLen:   binary.LittleEndian.Uint16(b[10:]),
		KeyLen:   binary.LittleEndian.Uint32(b[12:]),
		ValLen:   binary.LittleEndian.Uint32(b[16:]),
		Synced:   binary.LittleEndian.Uint32(b[20:]),
		Version:  binary.LittleEndian.Uint64(b[24:]),
		ExpireAt: int64(binary.LittleEndian.Uint64(b[32:])),
		Sub:      binary.LittleEndian.Uint64(b[40:]),
	}
	if h.Kind == 0 {
		return Header{}, fmt.Errorf("%w: kind 0", ErrCorrupt)
	}
	if h.Size() > MaxRecordSize {
		return Header{}, fmt.Errorf("%w: record size %d over limit", ErrCorrupt, h.Size())
	}
	return h, nil
}

// DecodeRecord verifies the whole record at the start of b (which must hold at least the full
// record) and returns it. A record whose CRC verifies but whose kind, flags or reserved byte
// this version does not know is refused with an error of class ErrNewerFormat.
func DecodeRecord(b []byte) (Record, error) {
	h, err := DecodeHeader(b)
	if err != nil {
		return Record{}, err
	}
	n := h.Size()
	if int64(len(b)) < n {
		return Record{}, fmt.Errorf("%w: record of %d bytes truncated to %d", ErrCorrupt, n, len(b))
	}
	want := binary.LittleEndian.Uint32(b)
	if got := crc32.Checksum(b[4:n], castagnoli); got != want {
		return Record{}, fmt.Errorf("%w: crc %#08x, want %#08x", ErrCorrupt, got, want)
	}
	switch {
	case h.Kind > maxKind:
		return Record{}, fmt.Errorf("%w: record kind %d", ErrNewerFormat, h.Kind)
	case h.Flags&^knownFlags != 0:
		return Record{}, fmt.Errorf("%w: record flags %#x", ErrNewerFormat, h.Flags)
	case b[9] != 0:
		return Record{}, fmt.Errorf("%w: reserved header byte %#x", ErrNewerFormat, b[9])
	}
	e := HeaderSize + int(h.ExtLen)
	k := e + int(h.KeyLen)
	return Record{Header: h, Ext: b[HeaderSize:e:e], Key: b[e:k:k], Val: b[k:n:n]}, nil
}
