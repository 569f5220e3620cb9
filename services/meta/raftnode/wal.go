package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lavikdb/lavik/pkg/vfs"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Record types of the write-ahead log. Zero is not a type, so that a zero-filled tail (bytes a
// crash lost inside a file whose size survived) never parses as a record.
const (
	recEntry     byte = 1 // a raftpb.Entry
	recHardState byte = 2 // a raftpb.HardState
	recSnapshot  byte = 3 // a raftpb.SnapshotMetadata: a snapshot received from the leader replaced the log
)

const (
	// recHeaderSize is type (1), payload length (4, little endian), CRC32C (4, little endian)
	// of the type, the length and the payload.
	recHeaderSize = 9
	// maxRecordSize bounds a record's payload so that a damaged length field is detected as
	// damage instead of as a request to read gigabytes. Raft entries here are small topology
	// commands; a larger one is refused when written.
	maxRecordSize = 64 << 20
	walSuffix     = ".wal"
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// walRecord is one decoded record, in the order the WAL holds them.
type walRecord struct {
	typ   byte
	entry raftpb.Entry
	hs    raftpb.HardState
	snap  raftpb.SnapshotMetadata
}

// segment is one WAL file. Segments are named by a sequence number that only grows.
type segment struct {
	seq  uint64
	name string
	// maxIndex is the highest raft index any entry or snapshot record of the segment names;
	// the segment may be deleted once a retained snapshot covers it.
	maxIndex uint64
}

// wal is the append-only log of entries, hard states and received-snapshot markers, split into
// segment files in one directory. It is used by the node's loop goroutine only.
type wal struct {
	fs       vfs.FS
	dir      string
	segBytes int64
	log      *slog.Logger

	segs []segment // sorted by seq; the last one is open for appending
	f    vfs.File  // the last segment
	off  int64     // write offset in f: the end of its last valid record
	// hs is the newest hard state written; a new segment starts with it, so that deleting the
	// segments before it never loses the hard state.
	hs  raftpb.HardState
	buf []byte
}

func segName(seq uint64) string { return fmt.Sprintf("%016x%s", seq, walSuffix) }

// appendRecord encodes one record onto buf.
func appendRecord(buf []byte, typ byte, payload []byte) []byte {
	var h [recHeaderSize]byte
	h[0] = typ
	binary.LittleEndian.PutUint32(h[1:5], uint32(len(payload)))
	crc := crc32.Update(0, crcTable, h[:5])
	crc = crc32.Update(crc, crcTable, payload)
	binary.LittleEndian.PutUint32(h[5:9], crc)
	buf = append(buf, h[:]...)
	return append(buf, payload...)
}

// parseRecord decodes the record at data[off:]. It returns the record's total length, or a
// reason why there is no valid record there.
func parseRecord(data []byte, off int64) (typ byte, payload []byte, n int64, reason string) {
	rest := data[off:]
	if len(rest) < recHeaderSize {
		return 0, nil, 0, "incomplete record header"
	}
	typ = rest[0]
	if typ < recEntry || typ > recSnapshot {
		return 0, nil, 0, fmt.Sprintf("unknown record type %d", typ)
	}
	ln := binary.LittleEndian.Uint32(rest[1:5])
	if ln > maxRecordSize {
		return 0, nil, 0, fmt.Sprintf("record length %d over the limit", ln)
	}
	if int64(len(rest)) < recHeaderSize+int64(ln) {
		return 0, nil, 0, "incomplete record payload"
	}
	payload = rest[recHeaderSize : recHeaderSize+int64(ln)]
	crc := crc32.Update(0, crcTable, rest[:5])
	crc = crc32.Update(crc, crcTable, payload)
	if crc != binary.LittleEndian.Uint32(rest[5:9]) {
		return 0, nil, 0, "record checksum mismatch"
	}
	return typ, payload, recHeaderSize + int64(ln), ""
}

// validRecordAfter reports whether any offset after off starts a valid record: a bad record
// with a valid one after it is damage in the middle of the log, not a torn append.
func validRecordAfter(data []byte, off int64) bool {
	for p := off + 1; p+recHeaderSize <= int64(len(data)); p++ {
		if _, _, _, reason := parseRecord(data, p); reason == "" {
			return true
		}
	}
	return false
}

func decodeRecord(typ byte, payload []byte) (walRecord, error) {
	r := walRecord{typ: typ}
	var err error
	switch typ {
	case recEntry:
		err = r.entry.Unmarshal(payload)
	case recHardState:
		err = r.hs.Unmarshal(payload)
	case recSnapshot:
		err = r.snap.Unmarshal(payload)
	}
	return r, err
}

// openWAL reads every segment of dir in order and opens the last one for appending. A bad record
// at the tail of the last segment with nothing valid after it is a torn append: it is cut off
// (truncated and synced) and logged. Any other bad record is corruption, reported with the file
// and offset (ErrCorrupt): a record that was synced, and that later records follow, was
// acknowledged, and silently dropping it could lose a committed entry.
func openWAL(fsys vfs.FS, dir string, segBytes int64, log *slog.Logger) (*wal, []walRecord, error) {
	w := &wal{fs: fsys, dir: dir, segBytes: segBytes, log: log}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("raftnode: wal: %w", err)
	}
	names, err := fsys.List(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("raftnode: wal: %w", err)
	}
	for _, name := range names {
		if !strings.HasSuffix(name, walSuffix) {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, walSuffix), 16, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("raftnode: wal: unexpected file %s", filepath.Join(dir, name))
		}
		w.segs = append(w.segs, segment{seq: seq, name: name})
	}
	var recs []walRecord
	for i := range w.segs {
		seg := &w.segs[i]
		path := filepath.Join(dir, seg.name)
		last := i == len(w.segs)-1
		if i > 0 && seg.seq != w.segs[i-1].seq+1 {
			return nil, nil, &CorruptError{Path: path, Offset: -1, Reason: fmt.Sprintf("segment %016x is missing", w.segs[i-1].seq+1)}
		}
		data, err := readAll(fsys, path)
		if err != nil {
			return nil, nil, fmt.Errorf("raftnode: wal: %w", err)
		}
		var off int64
		for off < int64(len(data)) {
			typ, payload, n, reason := parseRecord(data, off)
			if reason != "" {
				if !last || validRecordAfter(data, off) {
					return nil, nil, &CorruptError{Path: path, Offset: off, Reason: reason}
				}
				log.Warn("wal torn tail cut", "file", path, "offset", off, "dropped_bytes", int64(len(data))-off, "reason", reason)
				if err := truncateSync(fsys, path, off); err != nil {
					return nil, nil, fmt.Errorf("raftnode: wal: cutting torn tail of %s: %w", path, err)
				}
				break
			}
			r, err := decodeRecord(typ, payload)
			if err != nil {
				return nil, nil, &CorruptError{Path: path, Offset: off, Reason: "undecodable record: " + err.Error()}
			}
			switch r.typ {
			case recEntry:
				seg.maxIndex = max(seg.maxIndex, r.entry.Index)
			case recSnapshot:
				seg.maxIndex = max(seg.maxIndex, r.snap.Index)
			case recHardState:
				w.hs = r.hs
			}
			recs = append(recs, r)
			off += n
		}
		if last {
			w.off = off
		}
	}
	if len(w.segs) == 0 {
		if err := w.createSegment(0); err != nil {
			return nil, nil, err
		}
		return w, recs, nil
	}
	f, err := fsys.OpenReadWrite(filepath.Join(dir, w.segs[len(w.segs)-1].name))
	if err != nil {
		return nil, nil, fmt.Errorf("raftnode: wal: %w", err)
	}
	w.f = f
	return w, recs, nil
}

func readAll(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && size > 0 {
		return nil, err
	}
	return data, nil
}

func truncateSync(fsys vfs.FS, path string, size int64) error {
	f, err := fsys.OpenReadWrite(path)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// createSegment creates segment seq, makes its name durable, and makes it the one appended to.
// It starts with the newest hard state, so that the segments before it can be deleted.
func (w *wal) createSegment(seq uint64) error {
	name := segName(seq)
	path := filepath.Join(w.dir, name)
	f, err := w.fs.Create(path)
	if err != nil {
		return fmt.Errorf("raftnode: wal: %w", err)
	}
	// Sync the directory before anything is appended: a synced record in a file whose name
	// was lost is lost.
	if err := w.fs.SyncDir(w.dir); err != nil {
		f.Close()
		return fmt.Errorf("raftnode: wal: %w", err)
	}
	if w.f != nil {
		if err := w.f.Close(); err != nil {
			f.Close()
			return fmt.Errorf("raftnode: wal: %w", err)
		}
	}
	w.f, w.off = f, 0
	w.segs = append(w.segs, segment{seq: seq, name: name})
	if !raft.IsEmptyHardState(w.hs) {
		payload, err := w.hs.Marshal()
		if err != nil {
			return fmt.Errorf("raftnode: wal: %w", err)
		}
		w.buf = appendRecord(w.buf[:0], recHardState, payload)
		return w.writeBuf()
	}
	return nil
}

func (w *wal) writeBuf() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(w.buf, w.off); err != nil {
		return fmt.Errorf("raftnode: wal: write %s: %w", w.segs[len(w.segs)-1].name, err)
	}
	w.off += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// save appends a received snapshot's marker, entries and the hard state, in that order, and
// syncs. The hard state comes last so that a torn append never keeps a commit index whose
// entries were cut. A segment that has grown past segBytes is closed first; the records of one
// call never span two segments.
func (w *wal) save(hs raftpb.HardState, ents []raftpb.Entry, snap *raftpb.SnapshotMetadata) error {
	if raft.IsEmptyHardState(hs) && len(ents) == 0 && snap == nil {
		return nil
	}
	if w.off >= w.segBytes {
		if err := w.createSegment(w.segs[len(w.segs)-1].seq + 1); err != nil {
			return err
		}
	}
	seg := &w.segs[len(w.segs)-1]
	buf := w.buf[:0]
	if snap != nil {
		payload, err := snap.Marshal()
		if err != nil {
			return fmt.Errorf("raftnode: wal: %w", err)
		}
		buf = appendRecord(buf, recSnapshot, payload)
		seg.maxIndex = max(seg.maxIndex, snap.Index)
	}
	for i := range ents {
		payload, err := ents[i].Marshal()
		if err != nil {
			return fmt.Errorf("raftnode: wal: %w", err)
		}
		if len(payload) > maxRecordSize {
			return fmt.Errorf("raftnode: wal: entry %d is %d bytes, over the %d limit", ents[i].Index, len(payload), maxRecordSize)
		}
		buf = appendRecord(buf, recEntry, payload)
		seg.maxIndex = max(seg.maxIndex, ents[i].Index)
	}
	if !raft.IsEmptyHardState(hs) {
		payload, err := hs.Marshal()
		if err != nil {
			return fmt.Errorf("raftnode: wal: %w", err)
		}
		buf = appendRecord(buf, recHardState, payload)
	}
	w.buf = buf
	if err := w.writeBuf(); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("raftnode: wal: sync %s: %w", seg.name, err)
	}
	if !raft.IsEmptyHardState(hs) {
		w.hs = hs
	}
	return nil
}

// purge deletes the oldest segments while every index they name is at most index, never the
// segment being appended to.
func (w *wal) purge(index uint64) error {
	n := 0
	for n < len(w.segs)-1 && w.segs[n].maxIndex <= index {
		n++
	}
	if n == 0 {
		return nil
	}
	for _, s := range w.segs[:n] {
		if err := w.fs.Remove(filepath.Join(w.dir, s.name)); err != nil {
			return fmt.Errorf("raftnode: wal: purge: %w", err)
		}
	}
	w.segs = append(w.segs[:0], w.segs[n:]...)
	if err := w.fs.SyncDir(w.dir); err != nil {
		return fmt.Errorf("raftnode: wal: purge: %w", err)
	}
	w.log.Debug("wal purged", "segments", n, "through_index", index)
	return nil
}

func (w *wal) close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// replayResult is the raft state rebuilt from a snapshot and the WAL after it.
type replayResult struct {
	ents []raftpb.Entry // contiguous from snap.Index+1
	hs   raftpb.HardState
}

// errNotCovered says the WAL does not hold the entries that follow a snapshot, so that the
// snapshot cannot be the starting point (an older one, whose WAL was purged).
var errNotCovered = errors.New("raftnode: wal does not cover the snapshot")

// replay rebuilds the log that follows a snapshot at snapIndex from the records, in order. An
// entry record for index i replaces the entries from i on, as raft's append did when it wrote it
// (a new leader overwriting a conflicting suffix), so the later record for an index wins.
func replay(recs []walRecord, snapIndex uint64) (replayResult, error) {
	var res replayResult
	for _, r := range recs {
		switch r.typ {
		case recHardState:
			res.hs = r.hs
		case recSnapshot:
			if r.snap.Index > snapIndex {
				return res, fmt.Errorf("%w: a snapshot at index %d was received after it", errNotCovered, r.snap.Index)
			}
			res.ents = res.ents[:0]
		case recEntry:
			i := r.entry.Index
			switch {
			case i <= snapIndex:
				// Rewriting an index the snapshot covers discarded every later entry then.
				res.ents = res.ents[:0]
			case i > snapIndex+uint64(len(res.ents))+1:
				return res, fmt.Errorf("%w: entry %d follows index %d", errNotCovered, i, snapIndex+uint64(len(res.ents)))
			default:
				res.ents = append(res.ents[:i-snapIndex-1], r.entry)
			}
		}
	}
	last := snapIndex + uint64(len(res.ents))
	if res.hs.Commit > last {
		return res, fmt.Errorf("%w: commit index %d is past the last entry %d", errNotCovered, res.hs.Commit, last)
	}
	res.hs.Commit = max(res.hs.Commit, snapIndex)
	return res, nil
}
