package vlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// FormatVersion is the format of the segments (and records) this version writes. A segment of
// a later format is refused (ErrNewerFormat); format 1 segments had no header and are upgraded
// by the keyspace before the log opens them.
const FormatVersion = 2

// SegmentHeaderSize is the size of the header at the start of every segment; the first record
// starts after it, so no record has offset 0. Layout (little endian):
//
//	0  magic    [8]byte "LAVIKSEG"
//	8  format   uint16  FormatVersion
//	10 size     uint16  SegmentHeaderSize
//	12 features uint32  segment features this version must know; none are defined yet
//	16 id       uint32  the segment's id (its file name)
//	20 prev     uint32  the segment before it when it was created; 0: none
//	24 created  int64   unix milliseconds
//	32 prevSize int64   prev's final size; 0: unknown
//	40 reserved [20]byte
//	60 crc32c   uint32  over bytes [0, 60)
//
// A rotation creates segment k+1 only once nothing more will be appended to segment k, so k's
// size is final then and k+1's header records it: recovery compares it with what k holds (a
// full segment that lost its unsynced tail exactly at a record boundary ends cleanly, and only
// this size says it is short; see recover in replay.go). The first segment of a log records no
// predecessor, nor does a header a repair rewrote (its old contents cannot be trusted); a
// header with a zero prevSize skips the check. Reserved bytes are written as zero and ignored
// when read, as the CRC covers them: a later field that this version must understand to read
// the segment sets a feature bit instead.
const SegmentHeaderSize = 64

const segMagic = "LAVIKSEG"

// knownSegFeatures are the segment feature bits this version understands.
const knownSegFeatures uint32 = 0

// segHeader is a decoded segment header.
type segHeader struct {
	format   uint16
	features uint32
	id       uint32
	created  int64
	// prev is the segment before this one when it was created, with its final size; the zero
	// SegExtent when there was none or it is not known.
	prev SegExtent
}

// appendSegHeader appends the header of segment id, created after segment prev (the zero
// SegExtent: none, or not known).
func appendSegHeader(dst []byte, id uint32, created int64, prev SegExtent) []byte {
	var b [SegmentHeaderSize]byte
	copy(b[:], segMagic)
	binary.LittleEndian.PutUint16(b[8:], FormatVersion)
	binary.LittleEndian.PutUint16(b[10:], SegmentHeaderSize)
	binary.LittleEndian.PutUint32(b[16:], id)
	binary.LittleEndian.PutUint32(b[20:], prev.ID)
	binary.LittleEndian.PutUint64(b[24:], uint64(created))
	binary.LittleEndian.PutUint64(b[32:], uint64(prev.Size))
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	return append(dst, b[:]...)
}

// decodeSegHeader checks the header of segment id. A header that does not verify is corrupt; one
// that verifies but names a later format or features this version does not know is of class
// ErrNewerFormat.
func decodeSegHeader(b []byte, id uint32) (segHeader, error) {
	if len(b) < SegmentHeaderSize {
		return segHeader{}, fmt.Errorf("%w: segment header of %d bytes", ErrCorrupt, len(b))
	}
	if string(b[:8]) != segMagic {
		return segHeader{}, fmt.Errorf("%w: segment header magic %q", ErrCorrupt, b[:8])
	}
	if crc32.Checksum(b[:60], castagnoli) != binary.LittleEndian.Uint32(b[60:]) {
		return segHeader{}, fmt.Errorf("%w: segment header crc", ErrCorrupt)
	}
	h := segHeader{
		format:   binary.LittleEndian.Uint16(b[8:]),
		features: binary.LittleEndian.Uint32(b[12:]),
		id:       binary.LittleEndian.Uint32(b[16:]),
		created:  int64(binary.LittleEndian.Uint64(b[24:])),
		prev: SegExtent{
			ID:   binary.LittleEndian.Uint32(b[20:]),
			Size: int64(binary.LittleEndian.Uint64(b[32:])),
		},
	}
	switch {
	case h.format > FormatVersion:
		return h, fmt.Errorf("%w: segment format %d (this version reads %d)", ErrNewerFormat, h.format, FormatVersion)
	case h.format != FormatVersion || binary.LittleEndian.Uint16(b[10:]) != SegmentHeaderSize:
		return h, fmt.Errorf("%w: segment format %d with a %d-byte header", ErrCorrupt, h.format, binary.LittleEndian.Uint16(b[10:]))
	case h.features&^knownSegFeatures != 0:
		return h, fmt.Errorf("%w: segment features %#x", ErrNewerFormat, h.features)
	case h.id != id:
		return h, fmt.Errorf("%w: segment header says segment %d", ErrCorrupt, h.id)
	}
	return h, nil
}

const segSuffix = ".seg"

func segName(id uint32) string { return fmt.Sprintf("%08d%s", id, segSuffix) }

// segment is one segment file of a log: its read side and its space accounting.
type segment struct {
	id     uint32
	path   string
	rf     vfs.File // read side, O_DIRECT where supported
	direct bool
	align  int64        // offset and length alignment of direct reads (vfs.DirectAlign)
	refs   atomic.Int32 // readers in flight plus one for being listed
	fs     vfs.FS
	remove bool // set when dropped; the last reference closes and removes the file
	// acct is the segment's space accounting (reclaim.go), guarded by the log's mu.
	acct segAcct
	// gone, when set, is called once the dropped segment's file is removed and the removal
	// is durable (reclaim.go); unlist, when its last reference goes, before the file does.
	gone, unlist func()
	// removals, set when dropped, counts removals in flight on goroutines (releaseRead), which
	// the log's Close waits for.
	removals *sync.WaitGroup
}

func (s *segment) acquire() { s.refs.Add(1) }

// tryAcquire takes a reference unless the last one is gone (the file is being removed).
func (s *segment) tryAcquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.retire(false)
	}
}

// releaseRead is release for a read on the request path: should it be the last reference of a
// dropped segment, the file's removal (an unlink and a directory sync, milliseconds on a busy
// disk) goes to a goroutine, not the event loop that finished the read.
func (s *segment) releaseRead() {
	if s.refs.Add(-1) == 0 {
		s.retire(true)
	}
}

// retire closes the segment once its last reference is gone and removes its file if it was
// dropped, on a goroutine of its own when async.
func (s *segment) retire(async bool) {
	if s.unlist != nil {
		s.unlist()
	}
	s.rf.Close()
	if !s.remove {
		return
	}
	if async && s.removals != nil {
		s.removals.Add(1)
		go func() {
			defer s.removals.Done()
			s.removeFile()
		}()
		return
	}
	s.removeFile()
}

// removeFile removes a dropped segment's file. Removal only reclaims space (whatever dropped
// the segment made it irrelevant first), so failures are not fatal; the directory sync keeps a
// crash from bringing the file back to be replayed again.
func (s *segment) removeFile() {
	if s.fs.Remove(s.path) == nil && s.fs.SyncDir(filepath.Dir(s.path)) == nil && s.gone != nil {
		s.gone()
	}
}

// openSegment opens the read side of segment id.
func (l *Log) openSegment(id uint32) (*segment, error) {
	p := filepath.Join(l.opts.Dir, segName(id))
	rf, direct, err := l.opts.FS.OpenDirect(p)
	if err != nil {
		return nil, fmt.Errorf("vlog: %w", err)
	}
	s := &segment{id: id, path: p, rf: rf, direct: direct, fs: l.opts.FS, align: vfs.AlignedBlock}
	if direct {
		s.align = vfs.DirectAlign(rf)
	}
	// The header is no record: dead from the start, and never a put that could resurrect
	// anything (SetLive recomputes this for the segments found at Open).
	s.acct.dead, s.acct.nonPut = SegmentHeaderSize, SegmentHeaderSize
	s.refs.Store(1)
	return s, nil
}
