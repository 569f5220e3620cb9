package vlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// What the keyspace's upgrade of a format-1 data directory needs from the log: a decoder of
// format-1 records, and a writer of format-2 segments that is not a Log (it writes converted
// segments into another directory, records one after another, and syncs each when done).

// Format-1 record layout (Lavik 0.1), little endian:
//
//	0  crc32c   uint32  over bytes [4, end of record)
//	4  magic    uint8   0xA7
//	5  kind     uint8   1 put, 2 delete, 3 expire, 4 flushdb, 5 flushall, 6 chunk
//	6  db       uint8
//	7  vtype    uint8   value type; 0x10 raw, 0x20 chunked (the record is a manifest)
//	8  keyLen   uint32
//	12 valLen   uint32
//	16 version  uint64
//	24 expireAt int64   unix ms (a chunk's byte offset in its value)
//	32 key, then value
const (
	headerSizeV1 = 32
	magicV1      = 0xA7
	// KindChunkV1 is format 1's chunk of a large value, which carried its whole key.
	KindChunkV1 Kind = 6
)

// DecodeRecordV1 verifies the format-1 record at the start of b and returns it (Ext is empty;
// its Header's VType keeps format 1's raw and chunked bits). An error is of class ErrCorrupt.
func DecodeRecordV1(b []byte) (Record, error) {
	if len(b) < headerSizeV1 {
		return Record{}, fmt.Errorf("%w: short format-1 header (%d bytes)", ErrCorrupt, len(b))
	}
	if b[4] != magicV1 {
		return Record{}, fmt.Errorf("%w: bad format-1 magic %#x", ErrCorrupt, b[4])
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
	if h.Kind < KindPut || h.Kind > KindChunkV1 {
		return Record{}, fmt.Errorf("%w: bad format-1 kind %d", ErrCorrupt, h.Kind)
	}
	n := int64(headerSizeV1) + int64(h.KeyLen) + int64(h.ValLen)
	if n > 1<<30+headerSizeV1 || int64(len(b)) < n {
		return Record{}, fmt.Errorf("%w: format-1 record of %d bytes, %d at hand", ErrCorrupt, n, len(b))
	}
	if crc32.Checksum(b[4:n], castagnoli) != binary.LittleEndian.Uint32(b) {
		return Record{}, fmt.Errorf("%w: format-1 crc", ErrCorrupt)
	}
	k := headerSizeV1 + int(h.KeyLen)
	return Record{Header: h, Key: b[headerSizeV1:k:k], Val: b[k:n:n]}, nil
}

// SizeV1 is the size of a format-1 record with the given header.
func SizeV1(h Header) int64 { return int64(headerSizeV1) + int64(h.KeyLen) + int64(h.ValLen) }

// SegmentWriter writes one new segment file record after record, outside any Log: the upgrade
// of a format-1 directory uses it. Every record claims the bytes before it synced and the
// previous segment sealed, which Close makes true by syncing the file before anything uses it.
type SegmentWriter struct {
	f   vfs.File
	id  uint32
	off int64
	buf []byte
}

// NewSegmentWriter creates segment id in dir, with its header. prev is the segment written
// before it, as its writer's Extent gives it once closed, or the zero SegExtent for the first
// one: the header records it, as a rotation does (see SegmentHeaderSize).
func NewSegmentWriter(fsys vfs.FS, dir string, id uint32, prev SegExtent) (*SegmentWriter, error) {
	f, err := fsys.Create(filepath.Join(dir, segName(id)))
	if err != nil {
		return nil, fmt.Errorf("vlog: %w", err)
	}
	return &SegmentWriter{f: f, id: id, off: SegmentHeaderSize, buf: appendSegHeader(nil, id, time.Now().UnixMilli(), prev)}, nil
}

// Extent returns the segment's id and the size it has with the records appended so far.
func (w *SegmentWriter) Extent() SegExtent { return SegExtent{ID: w.id, Size: w.off} }

// Append adds a record and returns its location.
func (w *SegmentWriter) Append(h Header, ext, key, val []byte) (Loc, error) {
	loc := Loc{Seg: w.id, Off: uint32(w.off)}
	if w.off > MaxSegmentSize+MaxRecordSize {
		return loc, fmt.Errorf("vlog: segment %d over the size limit", w.id)
	}
	h.Synced = uint32(w.off)
	h.Flags |= flagPrevSealed
	w.buf = AppendRecord(w.buf, h, ext, key, val)
	w.off += RecordSize(len(ext), len(key), len(val))
	if len(w.buf) >= 4<<20 {
		return loc, w.flush()
	}
	return loc, nil
}

func (w *SegmentWriter) flush() error {
	if _, err := w.f.Write(w.buf); err != nil {
		return fmt.Errorf("vlog: %w", err)
	}
	w.buf = w.buf[:0]
	return nil
}

// Close writes what is buffered, syncs and closes the file.
func (w *SegmentWriter) Close() error {
	err := w.flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("vlog: %w", err)
	}
	return nil
}

// SegmentName is the file name of segment id; ParseSegmentName its inverse.
func SegmentName(id uint32) string { return segName(id) }

// ParseSegmentName returns the id of a segment file name.
func ParseSegmentName(name string) (uint32, bool) { return parseSegName(name) }
