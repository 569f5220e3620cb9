package keyspace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// The checkpoint file of one shard (checkpoint.go says when and how it is taken). Layout, all
// integers little endian:
//
//	header, ckptHeaderSize bytes:
//	  0  magic        [8]byte  "LAVIKCKP"
//	  8  format       uint32   ckptFormat
//	  12 shard        uint32   the shard's id
//	  16 shards       uint32   the keyspace's shard count (a key's shard depends on it)
//	  20 pos.Seg      uint32   the log position the checkpoint covers: every record before it
//	  24 pos.Off      uint32     is reflected, replay starts there
//	  28 databases    uint32   the databases setting: keys of higher ones are not in it
//	  32 version      uint64   the shard's version at pos: records at or below it are reflected
//	  40 created      int64    unix ms, for the operator
//	  48 hintEntries  uint64   live entries when the checkpoint started, to size the index
//	  56 hintArena    uint64   key-arena bytes then, likewise
//	  64 crc          uint32   CRC32C of bytes [0, 64)
//	  68 reserved     uint32   zero
//	blocks, each:
//	  0  length       uint32   payload bytes, > 0
//	  4  count        uint32   entries in the payload, > 0
//	  8  payload      entries back to back
//	  .  crc          uint32   CRC32C of the block's length, count and payload
//	end marker:       8 zero bytes (a block of length 0 and count 0)
//	trailer, ckptTrailerSize bytes:
//	  0  entries      uint64   entries in all blocks
//	  8  file crc     uint32   CRC32C of every byte from the header through the end marker
//	  12 magic        [8]byte  "LAVIKEND"
//	  20 crc          uint32   CRC32C of trailer bytes [0, 20)
//
// and nothing after the trailer. An entry is db (1 byte), meta (1 byte: value type in the low
// four bits, 0x10 for the raw hint, 0x20 for a chunked value whose manifest the entry points
// at, see chunked.go, 0x40 when the record is part of a transaction), the record's transaction
// code (1 byte, txCode) when meta has 0x40, then uvarints expire-at, segment, offset, value
// length, key length, and the key's bytes: about 8 bytes of metadata beside the key for a
// typical entry, so a checkpoint is a small fraction of the log it replaces. Format 1 had no
// transaction codes.
//
// The per-block CRC lets a reader reject a damaged block before a single entry of it reaches the
// index; the whole-file CRC and the entry count in the trailer catch what per-block checks cannot
// (a lost, repeated or reordered block); the exact end catches appended junk. A file that fails
// any check is rejected whole, never used in part.
//
// Entries carry no version: the index keeps none (an 8-byte version a key does not fit the
// 48-byte budget) and reading each record's header back from the log to learn it would cost a
// random read per key. The header's version is enough; see checkpoint.go for why.
const (
	ckptFormat      = 2
	ckptHeaderSize  = 72
	ckptTrailerSize = 24
	// ckptMaxBlock bounds a block's payload when reading, so a damaged length cannot make the
	// loader allocate gigabytes. Writers close a block at ckptBlockBytes or after one entry,
	// and an entry is at most a key (which a record bounds) and some metadata.
	ckptMaxBlock = vlog.MaxRecordSize + 64
	// ckptBlockBytes is where a writer closes a block (and, for a checkpoint being taken, drops
	// the shard lock; see ckptChunkEntries).
	ckptBlockBytes = 1 << 20
)

var (
	ckptMagic    = [8]byte{'L', 'A', 'V', 'I', 'K', 'C', 'K', 'P'}
	ckptEndMagic = [8]byte{'L', 'A', 'V', 'I', 'K', 'E', 'N', 'D'}
)

// errCheckpointCorrupt is the class of every reason a checkpoint file is rejected.
var errCheckpointCorrupt = errors.New("keyspace: checkpoint corrupt")

func ckptCorrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errCheckpointCorrupt, fmt.Sprintf(format, args...))
}

// ckptHeader is a checkpoint's header.
type ckptHeader struct {
	shard, shards uint32
	databases     uint32
	pos           vlog.Loc
	version       uint64
	created       int64
	hintEntries   uint64
	hintArena     uint64
}

func (h *ckptHeader) encode() []byte {
	b := make([]byte, ckptHeaderSize)
	copy(b, ckptMagic[:])
	binary.LittleEndian.PutUint32(b[8:], ckptFormat)
	binary.LittleEndian.PutUint32(b[12:], h.shard)
	binary.LittleEndian.PutUint32(b[16:], h.shards)
	binary.LittleEndian.PutUint32(b[20:], h.pos.Seg)
	binary.LittleEndian.PutUint32(b[24:], h.pos.Off)
	binary.LittleEndian.PutUint32(b[28:], h.databases)
	binary.LittleEndian.PutUint64(b[32:], h.version)
	binary.LittleEndian.PutUint64(b[40:], uint64(h.created))
	binary.LittleEndian.PutUint64(b[48:], h.hintEntries)
	binary.LittleEndian.PutUint64(b[56:], h.hintArena)
	binary.LittleEndian.PutUint32(b[64:], crc32.Checksum(b[:64], ckptCRCTable))
	return b
}

func decodeCkptHeader(b []byte) (ckptHeader, error) {
	if len(b) < ckptHeaderSize {
		return ckptHeader{}, ckptCorrupt("short header (%d bytes)", len(b))
	}
	if [8]byte(b[:8]) != ckptMagic {
		return ckptHeader{}, ckptCorrupt("bad magic %q", b[:8])
	}
	if got, want := crc32.Checksum(b[:64], ckptCRCTable), binary.LittleEndian.Uint32(b[64:]); got != want {
		return ckptHeader{}, ckptCorrupt("header crc %#08x, want %#08x", got, want)
	}
	if f := binary.LittleEndian.Uint32(b[8:]); f != ckptFormat {
		return ckptHeader{}, ckptCorrupt("format %d, this build reads %d", f, ckptFormat)
	}
	if binary.LittleEndian.Uint32(b[68:]) != 0 {
		return ckptHeader{}, ckptCorrupt("reserved header bytes set")
	}
	return ckptHeader{
		shard:       binary.LittleEndian.Uint32(b[12:]),
		shards:      binary.LittleEndian.Uint32(b[16:]),
		pos:         vlog.Loc{Seg: binary.LittleEndian.Uint32(b[20:]), Off: binary.LittleEndian.Uint32(b[24:])},
		databases:   binary.LittleEndian.Uint32(b[28:]),
		version:     binary.LittleEndian.Uint64(b[32:]),
		created:     int64(binary.LittleEndian.Uint64(b[40:])),
		hintEntries: binary.LittleEndian.Uint64(b[48:]),
		hintArena:   binary.LittleEndian.Uint64(b[56:]),
	}, nil
}

var ckptCRCTable = crc32.MakeTable(crc32.Castagnoli)

// preemptStep bounds the bytes one CRC or copy call handles. Those calls run in assembly the
// scheduler cannot preempt, and a stop-the-world (every GC has two) waits for them: a 1 MiB
// block in one call held a GC pause up to a millisecond on a busy machine.
const preemptStep = 64 << 10

// ckptCRC is crc32.Update over b, in preemptStep pieces.
func ckptCRC(crc uint32, b []byte) uint32 {
	for len(b) > preemptStep {
		crc = crc32.Update(crc, ckptCRCTable, b[:preemptStep])
		b = b[preemptStep:]
	}
	return crc32.Update(crc, ckptCRCTable, b)
}

// ckptEntry is one index entry as a checkpoint holds it.
type ckptEntry struct {
	db       uint8
	vtype    uint8 // with RawHint when the entry has the raw flag, vtChunked when chunked
	tx       uint8 // the record's transaction code (txCode)
	expireAt int64
	seg, off uint32
	vlen     uint32
	key      []byte
}

// ckptTx marks, in an entry's meta byte, that a transaction code follows.
const ckptTx = 0x40

func appendCkptEntry(b []byte, e *ckptEntry) []byte {
	if e.tx != 0 {
		b = append(b, e.db, e.vtype|ckptTx, e.tx)
	} else {
		b = append(b, e.db, e.vtype)
	}
	b = binary.AppendUvarint(b, uint64(e.expireAt))
	b = binary.AppendUvarint(b, uint64(e.seg))
	b = binary.AppendUvarint(b, uint64(e.off))
	b = binary.AppendUvarint(b, uint64(e.vlen))
	b = binary.AppendUvarint(b, uint64(len(e.key)))
	return append(b, e.key...)
}

// decodeCkptEntry decodes the entry at the start of b into e (e.key aliases b) and returns its
// encoded size.
func decodeCkptEntry(b []byte, e *ckptEntry) (int, error) {
	if len(b) < 2 {
		return 0, ckptCorrupt("entry cut short")
	}
	e.db, e.vtype, e.tx = b[0], b[1], 0
	if e.vtype&^(RawHint|vtChunked|ckptTx|0xf) != 0 {
		return 0, ckptCorrupt("entry meta %#x", e.vtype)
	}
	n := 2
	if e.vtype&ckptTx != 0 {
		if len(b) < 3 || b[2] == 0 {
			return 0, ckptCorrupt("entry transaction code missing")
		}
		e.vtype &^= ckptTx
		e.tx = b[2]
		n = 3
	}
	var v [5]uint64
	limits := [5]uint64{1<<63 - 1, 1<<32 - 1, 1<<32 - 1, 1<<32 - 1, 1<<32 - 1}
	for i := range v {
		x, w := binary.Uvarint(b[n:])
		if w <= 0 || x > limits[i] {
			return 0, ckptCorrupt("entry field %d undecodable", i)
		}
		v[i] = x
		n += w
	}
	e.expireAt, e.seg, e.off, e.vlen = int64(v[0]), uint32(v[1]), uint32(v[2]), uint32(v[3])
	if uint64(len(b)-n) < v[4] {
		return 0, ckptCorrupt("key of %d bytes runs past its block", v[4])
	}
	e.key = b[n : n+int(v[4]) : n+int(v[4])]
	return n + int(v[4]), nil
}

// ckptWriter writes a checkpoint file: the header, blocks as the caller fills them, then the
// end marker and trailer. It keeps the running CRC of everything written.
type ckptWriter struct {
	f       vfs.File
	crc     uint32
	entries uint64
	size    int64
	block   []byte // the open block: 8-byte block header, then payload
	count   uint32 // entries in the open block
}

func newCkptWriter(f vfs.File, h *ckptHeader) (*ckptWriter, error) {
	w := &ckptWriter{f: f, block: make([]byte, 8, ckptBlockBytes+1024)}
	return w, w.write(h.encode())
}

func (w *ckptWriter) write(b []byte) error {
	if _, err := w.f.Write(b); err != nil {
		return err
	}
	w.crc = ckptCRC(w.crc, b)
	w.size += int64(len(b))
	return nil
}

// add appends an entry to the open block.
func (w *ckptWriter) add(e *ckptEntry) {
	w.block = appendCkptEntry(w.block, e)
	w.count++
}

// addEncoded appends an entry already encoded by appendCkptEntry to the open block.
func (w *ckptWriter) addEncoded(b []byte) {
	w.block = append(w.block, b...)
	w.count++
}

// full reports whether the open block has reached its size.
func (w *ckptWriter) full() bool { return len(w.block) >= ckptBlockBytes }

// flushBlock closes the open block, if it holds anything, and writes it.
func (w *ckptWriter) flushBlock() error {
	if w.count == 0 {
		return nil
	}
	binary.LittleEndian.PutUint32(w.block[0:], uint32(len(w.block)-8))
	binary.LittleEndian.PutUint32(w.block[4:], w.count)
	w.block = binary.LittleEndian.AppendUint32(w.block, ckptCRC(0, w.block))
	err := w.write(w.block)
	w.entries += uint64(w.count)
	w.block, w.count = w.block[:8], 0
	return err
}

// finish writes the last block, the end marker and the trailer.
func (w *ckptWriter) finish() error {
	if err := w.flushBlock(); err != nil {
		return err
	}
	if err := w.write(make([]byte, 8)); err != nil {
		return err
	}
	t := make([]byte, ckptTrailerSize)
	binary.LittleEndian.PutUint64(t[0:], w.entries)
	binary.LittleEndian.PutUint32(t[8:], w.crc)
	copy(t[12:], ckptEndMagic[:])
	binary.LittleEndian.PutUint32(t[20:], crc32.Checksum(t[:20], ckptCRCTable))
	return w.write(t)
}

// ckptRun collects encoded entries and writes them sorted by their home slot in a table of
// 1<<bits slots (the low bits of the index hash), so that whoever loads them into a table of
// that size fills its slot array front to back instead of taking a cache miss per key at a
// random slot, which is most of what loading costs otherwise. A run holds at most
// ckptRunEntries entries or ckptRunBytes of them; a shard with more is written as several
// sorted runs, each still a forward sweep over the slots. Its buffers live off the Go heap like
// the index (offheap.go) and are freed after the checkpoint.
type ckptRun struct {
	mask                    uint32
	dataMem, recMem, tmpMem region
	used                    int       // bytes of dataMem holding encoded entries
	recs                    []ckptRec // view of recMem, one per entry, in the order added
}

// ckptRec locates one encoded entry of a run and holds its sort key.
type ckptRec struct{ home, off, n uint32 }

const (
	ckptRunEntries = 2 << 20
	ckptRunBytes   = 64 << 20
)

// newCkptRun returns a run sorting for a table of 1<<bits slots, sized for about hint entries
// of avg bytes each.
func newCkptRun(bits uint, hint, avg int) *ckptRun {
	r := &ckptRun{mask: uint32(uint64(1)<<bits - 1)}
	hint = min(hint, ckptRunEntries)
	r.grow(min(hint*avg, ckptRunBytes), hint)
	return r
}

// grow makes room for data bytes and n records; false when memory is refused.
func (r *ckptRun) grow(data, n int) bool {
	if data > len(r.dataMem.b) && r.dataMem.resize(growSize(len(r.dataMem.b), data)) != nil {
		return false
	}
	if n > cap(r.recs) {
		if r.recMem.resize(growSize(r.recMem.size(), n*12)) != nil {
			return false
		}
		k := len(r.recs)
		r.recs = view[ckptRec](&r.recMem, capOf[ckptRec](&r.recMem))[:k]
	}
	return true
}

func (r *ckptRun) add(hash uint32, e *ckptEntry) error {
	if !r.grow(r.used+2+5*binary.MaxVarintLen64+len(e.key), len(r.recs)+1) {
		return errNoMemory
	}
	b := appendCkptEntry(r.dataMem.b[r.used:r.used:len(r.dataMem.b)], e)
	r.recs = append(r.recs, ckptRec{home: hash & r.mask, off: uint32(r.used), n: uint32(len(b))})
	r.used += len(b)
	return nil
}

func (r *ckptRun) full() bool { return len(r.recs) >= ckptRunEntries || r.used >= ckptRunBytes }

// flush writes the run's entries through w in home-slot order and empties the run.
func (r *ckptRun) flush(w *ckptWriter) error {
	if err := r.sort(); err != nil {
		return err
	}
	for _, rec := range r.recs {
		w.addEncoded(r.dataMem.b[rec.off : rec.off+rec.n])
		if w.full() {
			if err := w.flushBlock(); err != nil {
				return err
			}
		}
	}
	r.used, r.recs = 0, r.recs[:0]
	return nil
}

func (r *ckptRun) free() {
	r.dataMem.free()
	r.recMem.free()
	r.tmpMem.free()
	r.recs, r.used = nil, 0
}

// sort orders recs by home with a stable LSD radix sort, 11 bits a pass, only over the bits
// the mask keeps: linear, where a comparison sort of a few million entries would cost more
// than the cache misses it saves the loader.
func (r *ckptRun) sort() error {
	n := len(r.recs)
	if n == 0 {
		return nil
	}
	if r.tmpMem.size() < n*12 && r.tmpMem.resize(n*12) != nil {
		return errNoMemory
	}
	src, dst := r.recs, view[ckptRec](&r.tmpMem, n)
	for shift := uint(0); shift < 32 && r.mask>>shift != 0; shift += 11 {
		var count [1<<11 + 1]int
		for _, x := range src {
			count[(x.home>>shift)&(1<<11-1)+1]++
		}
		for i := 1; i < len(count); i++ {
			count[i] += count[i-1]
		}
		for _, x := range src {
			d := (x.home >> shift) & (1<<11 - 1)
			dst[count[d]] = x
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &r.recs[0] {
		copy(r.recs, src)
	}
	return nil
}

// ckptReader reads a checkpoint file front to back, verifying as it goes.
type ckptReader struct {
	r       *bufio.Reader
	crc     uint32
	entries uint64
	block   []byte
	done    bool
}

func newCkptReader(f vfs.File, size int64) (*ckptReader, ckptHeader, error) {
	r := &ckptReader{r: bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20)}
	b, err := r.read(ckptHeaderSize)
	if err != nil {
		return nil, ckptHeader{}, err
	}
	h, err := decodeCkptHeader(b)
	return r, h, err
}

// read returns the next n bytes (valid until the next call) and adds them to the running CRC.
func (r *ckptReader) read(n int) ([]byte, error) {
	if cap(r.block) < n {
		r.block = make([]byte, n)
	}
	b := r.block[:n]
	// In preemptStep pieces: bufio copies what it buffered with one memmove.
	for p := b; len(p) > 0; {
		step := min(len(p), preemptStep)
		if _, err := io.ReadFull(r.r, p[:step]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, ckptCorrupt("file ends early")
			}
			return nil, err
		}
		p = p[step:]
	}
	r.crc = ckptCRC(r.crc, b)
	return b, nil
}

// next returns the next block's verified payload and entry count, or ok=false after the trailer
// has been read and verified.
func (r *ckptReader) next() (payload []byte, count int, ok bool, err error) {
	if r.done {
		return nil, 0, false, nil
	}
	hdr, err := r.read(8)
	if err != nil {
		return nil, 0, false, err
	}
	n, c := binary.LittleEndian.Uint32(hdr[0:]), binary.LittleEndian.Uint32(hdr[4:])
	if n == 0 && c == 0 {
		return nil, 0, false, r.trailer()
	}
	if n == 0 || c == 0 || uint64(n) > ckptMaxBlock || c > n {
		return nil, 0, false, ckptCorrupt("block header length %d count %d", n, c)
	}
	crc := crc32.Checksum(hdr, ckptCRCTable)
	// read reuses r.block: keep the header's fields, then read payload and crc together.
	b, err := r.read(int(n) + 4)
	if err != nil {
		return nil, 0, false, err
	}
	crc = ckptCRC(crc, b[:n])
	if want := binary.LittleEndian.Uint32(b[n:]); crc != want {
		return nil, 0, false, ckptCorrupt("block crc %#08x, want %#08x", crc, want)
	}
	r.entries += uint64(c)
	return b[:n], int(c), true, nil
}

func (r *ckptReader) trailer() error {
	fileCRC := r.crc
	t := make([]byte, ckptTrailerSize)
	if _, err := io.ReadFull(r.r, t); err != nil {
		return ckptCorrupt("trailer missing")
	}
	if got, want := crc32.Checksum(t[:20], ckptCRCTable), binary.LittleEndian.Uint32(t[20:]); got != want {
		return ckptCorrupt("trailer crc %#08x, want %#08x", got, want)
	}
	if [8]byte(t[12:20]) != ckptEndMagic {
		return ckptCorrupt("bad end magic")
	}
	if n := binary.LittleEndian.Uint64(t[0:]); n != r.entries {
		return ckptCorrupt("trailer counts %d entries, blocks held %d", n, r.entries)
	}
	if want := binary.LittleEndian.Uint32(t[8:]); fileCRC != want {
		return ckptCorrupt("file crc %#08x, want %#08x", fileCRC, want)
	}
	if _, err := r.r.ReadByte(); err != io.EOF {
		return ckptCorrupt("bytes after the trailer")
	}
	r.done = true
	return nil
}
