package keyspace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// Upgrading a data directory of format 1 (Lavik 0.1) to format 2, when it is opened.
//
// Format 2 changed the record layout (a 48-byte header with flags, a durability watermark, a
// sub-record id and an extension block), gave segments a header, and stopped repeating a large
// value's key in each of its chunks. Offsets change with the layout, so a format-1 segment cannot
// be read in place: the upgrade rewrites every shard's segments, record by record and in order,
// into a work directory inside the shard's directory (upgradeDir), then moves them in place of
// the old ones. A chunk record becomes a sub-record of the object whose id is the hash of its key
// (upgradeObjectID), and the manifests that name chunks are rewritten with the chunks' new
// locations. Checkpoints are not converted: the first start replays the converted log and writes
// new ones. Format 1's recovery rules apply to what is read: a torn tail of a shard's newest
// segment is left out, and a record that fails its CRC elsewhere is skipped (format 1 skipped it
// too) and counted in the log.
//
// The upgrade needs free space for a copy of the data. It survives a crash at any point, and
// only renames files within a directory or from the work directory into its parent, never
// directories (a crash could leave a directory under two names on some file systems):
//
//  1. convert every shard into its work directory; a crash before step 2 starts leaves the old
//     data untouched, and the next start begins again;
//  2. write upgradeMarker in the data directory: from here on the next start finishes;
//  3. in each shard, rename the old segments to format-1 backup names (oldSuffix), then move
//     the converted ones in (a segment's header says which format a file is, so a start that
//     finds this half done can tell);
//  4. write formatFile: the directory is of format 2;
//  5. remove the backups, the work directories, the old checkpoints, layoutFileV1 and the marker.
const (
	upgradeDir    = "upgrade"
	upgradeMarker = "UPGRADING"
	oldSuffix     = ".seg1"
)

// upgradeStats count what an upgrade did.
type upgradeStats struct {
	segments, records, chunks, manifests int
	tornBytes, corrupt                   int64
}

// upgradeDirectory upgrades dir, of format 1 with shards shards, to the current format.
func upgradeDirectory(fsys vfs.FS, dir string, shards int, log *slog.Logger) error {
	if done, err := exists(fsys, filepath.Join(dir, upgradeMarker)); err != nil || done {
		if err == nil {
			err = finishUpgrade(fsys, dir, shards, log)
		}
		return err
	}
	log.Info("upgrading the data directory from format 1 to format 2", "dir", dir, "shards", shards)
	var st upgradeStats
	for i := 0; i < shards; i++ {
		sd := filepath.Join(dir, shardDirName(i))
		work := filepath.Join(sd, upgradeDir)
		// What an attempt that did not get to the marker left.
		if err := removeAll(fsys, work); err != nil {
			return fmt.Errorf("keyspace: upgrade: %w", err)
		}
		if err := fsys.MkdirAll(work, 0o755); err != nil {
			return fmt.Errorf("keyspace: upgrade: %w", err)
		}
		if err := convertShard(fsys, sd, work, i, &st, log); err != nil {
			return fmt.Errorf("keyspace: upgrade of shard %d: %w", i, err)
		}
		if err := syncDirs(fsys, work, sd); err != nil {
			return fmt.Errorf("keyspace: upgrade: %w", err)
		}
	}
	log.Info("data converted to format 2", "segments", st.segments, "records", st.records, "chunks", st.chunks,
		"manifests", st.manifests, "torn_bytes_left_out", st.tornBytes, "corrupt_records_skipped", st.corrupt)
	if err := vfs.WriteFileAtomic(fsys, dir, upgradeMarker, []byte("converted\n")); err != nil {
		return fmt.Errorf("keyspace: upgrade: %w", err)
	}
	return finishUpgrade(fsys, dir, shards, log)
}

func exists(fsys vfs.FS, p string) (bool, error) {
	_, err := fsys.Stat(p)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("keyspace: %w", err)
}

// finishUpgrade moves the converted segments in place of the old ones (steps 3 to 5 above).
func finishUpgrade(fsys vfs.FS, dir string, shards int, log *slog.Logger) error {
	for i := 0; i < shards; i++ {
		sd := filepath.Join(dir, shardDirName(i))
		work := filepath.Join(sd, upgradeDir)
		conv, err := fsys.List(work)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("keyspace: upgrade: %w", err)
		}
		names, err := fsys.List(sd)
		if err != nil {
			return fmt.Errorf("keyspace: upgrade: %w", err)
		}
		for _, n := range names {
			if _, ok := vlog.ParseSegmentName(n); !ok {
				continue
			}
			p := filepath.Join(sd, n)
			if newer, err := isFormat2(fsys, p); err != nil {
				return err
			} else if !newer {
				if err := fsys.Rename(p, p[:len(p)-len(".seg")]+oldSuffix); err != nil {
					return fmt.Errorf("keyspace: upgrade: %w", err)
				}
			}
		}
		if err := fsys.SyncDir(sd); err != nil {
			return fmt.Errorf("keyspace: upgrade: %w", err)
		}
		for _, n := range conv {
			if _, ok := vlog.ParseSegmentName(n); ok {
				if err := fsys.Rename(filepath.Join(work, n), filepath.Join(sd, n)); err != nil {
					return fmt.Errorf("keyspace: upgrade: %w", err)
				}
			}
		}
		if err := syncDirs(fsys, sd, work); err != nil {
			return fmt.Errorf("keyspace: upgrade: %w", err)
		}
	}
	if err := vfs.WriteFileAtomic(fsys, dir, formatFile, dirFormat{version: formatVersion, shards: shards, features: features}.encode()); err != nil {
		return fmt.Errorf("keyspace: upgrade: %w", err)
	}
	log.Info("data directory upgraded to format 2", "dir", dir)
	return cleanUpgrade(fsys, dir, shards)
}

// isFormat2 reports whether a segment file starts with a format-2 header.
func isFormat2(fsys vfs.FS, p string) (bool, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return false, fmt.Errorf("keyspace: upgrade: %w", err)
	}
	defer f.Close()
	b := make([]byte, 8)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("keyspace: upgrade: %w", err)
	}
	return n == 8 && string(b) == "LAVIKSEG", nil
}

func syncDirs(fsys vfs.FS, dirs ...string) error {
	for _, d := range dirs {
		if err := fsys.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// cleanUpgrade removes what a finished upgrade leaves: the old segments, the work directories,
// the format-1 checkpoints, the old layout file and the marker.
func cleanUpgrade(fsys vfs.FS, dir string, shards int) error {
	marker := filepath.Join(dir, upgradeMarker)
	if ok, err := exists(fsys, marker); err != nil || !ok {
		return err
	}
	for i := 0; i < shards; i++ {
		sd := filepath.Join(dir, shardDirName(i))
		names, err := fsys.List(sd)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("keyspace: %w", err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, oldSuffix) || n == ckptName || n == ckptTmpName || n == upgradeDir {
				if err := removeAll(fsys, filepath.Join(sd, n)); err != nil {
					return fmt.Errorf("keyspace: remove %s after the upgrade: %w", n, err)
				}
			}
		}
		if err := fsys.SyncDir(sd); err != nil {
			return fmt.Errorf("keyspace: %w", err)
		}
	}
	for _, p := range []string{filepath.Join(dir, layoutFileV1), marker} {
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("keyspace: remove %s after the upgrade: %w", p, err)
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("keyspace: %w", err)
	}
	return nil
}

// upgradeObjectID is the object id a format-1 chunked value gets: the hash of the key its chunks
// carry. Every chunk a format-1 manifest names carries the manifest's key (format 1 copied a
// value's chunks when it renamed it), so a manifest and its chunks agree.
func upgradeObjectID(db uint8, key []byte) uint64 { return hashKey(db, key) }

// Format-1 value type bits and manifest layout.
const (
	rawV1            = 0x10
	chunkedV1        = 0x20
	manifestHeaderV1 = 16
)

// convertShard rewrites the format-1 segments of src into format-2 segments of the same ids in
// dst.
func convertShard(fsys vfs.FS, src, dst string, shard int, st *upgradeStats, log *slog.Logger) error {
	names, err := fsys.List(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a shard that never got a record
	}
	if err != nil {
		return err
	}
	var ids []uint32
	for _, n := range names {
		if id, ok := vlog.ParseSegmentName(n); ok {
			ids = append(ids, id)
		}
	}
	// Where each chunk went: a manifest follows its chunks in the same log.
	chunks := map[vlog.Loc]vlog.Loc{}
	// prev is the converted segment before the one being written, which its header records.
	var prev vlog.SegExtent
	for i, id := range ids {
		data, err := readAll(fsys, filepath.Join(src, vlog.SegmentName(id)))
		if err != nil {
			return err
		}
		w, err := vlog.NewSegmentWriter(fsys, dst, id, prev)
		if err != nil {
			return err
		}
		for off := 0; off < len(data); {
			r, err := vlog.DecodeRecordV1(data[off:])
			if err != nil {
				if i == len(ids)-1 {
					st.tornBytes += int64(len(data) - off)
					log.Warn("upgrade: torn tail of the newest segment left out, as format 1 would have cut it",
						"shard", shard, "segment", id, "offset", off, "bytes", len(data)-off)
					break
				}
				next := resyncV1(data, off+1)
				st.corrupt++
				log.Error("upgrade: corrupt format-1 record skipped, as format 1 skipped it", "shard", shard,
					"segment", id, "offset", off, "skipped_bytes", next-off)
				off = next
				continue
			}
			old := vlog.Loc{Seg: id, Off: uint32(off)}
			if err := convertRecord(w, &r, old, uint16(shard), chunks, st, log); err != nil {
				w.Close()
				return fmt.Errorf("segment %d offset %d: %w", id, off, err)
			}
			off += int(vlog.SizeV1(r.Header))
		}
		if err := w.Close(); err != nil {
			return err
		}
		prev = w.Extent()
		st.segments++
	}
	return nil
}

func convertRecord(w *vlog.SegmentWriter, r *vlog.Record, old vlog.Loc, shard uint16, chunks map[vlog.Loc]vlog.Loc, st *upgradeStats, log *slog.Logger) error {
	h := r.Header
	st.records++
	switch h.Kind {
	case vlog.KindChunkV1:
		if h.ExpireAt < 0 || h.ExpireAt%ChunkSize != 0 {
			return fmt.Errorf("chunk at value offset %d: not a multiple of the %d-byte chunk size", h.ExpireAt, ChunkSize)
		}
		oid := upgradeObjectID(h.DB, r.Key)
		nh := vlog.Header{Kind: vlog.KindSub, DB: h.DB, Version: h.Version, Sub: uint64(h.ExpireAt / ChunkSize)}
		loc, err := w.Append(nh, nil, oidKey(oid), r.Val)
		chunks[old] = loc
		st.chunks++
		return err
	case vlog.KindPut:
		nh := vlog.Header{Kind: vlog.KindPut, DB: h.DB, VType: h.VType & 0x0f, Version: h.Version, ExpireAt: h.ExpireAt}
		if h.VType&rawV1 != 0 {
			nh.Flags |= vlog.FlagRaw
		}
		val := r.Val
		if h.VType&chunkedV1 != 0 {
			nh.Flags |= vlog.FlagDir
			var err error
			if val, err = convertManifest(r.Val, upgradeObjectID(h.DB, r.Key), shard, chunks); err != nil {
				return err
			}
			st.manifests++
		}
		_, err := w.Append(nh, nil, r.Key, val)
		return err
	}
	_, err := w.Append(vlog.Header{Kind: h.Kind, DB: h.DB, Version: h.Version, ExpireAt: h.ExpireAt}, nil, r.Key, nil)
	return err
}

// convertManifest rewrites a format-1 manifest (length uint64, chunk size uint32, count uint32,
// then count x (segment uint32, offset uint32)) as a format-2 one naming the chunks' new
// locations. A chunk that was not converted (format 1 could not have read it either) keeps no
// location, so a read of the value reports it corrupt.
func convertManifest(b []byte, oid uint64, shard uint16, chunks map[vlog.Loc]vlog.Loc) ([]byte, error) {
	if len(b) < manifestHeaderV1 {
		return nil, fmt.Errorf("format-1 manifest of %d bytes", len(b))
	}
	m := &manifest{length: int64(binary.LittleEndian.Uint64(b)), chunk: int(binary.LittleEndian.Uint32(b[8:])), oid: oid}
	count := int(binary.LittleEndian.Uint32(b[12:]))
	if m.chunk != ChunkSize || count != chunkCount(m.length, m.chunk) || len(b) != manifestHeaderV1+8*count {
		return nil, fmt.Errorf("format-1 manifest of length %d, %d-byte chunks, %d chunks, %d bytes", m.length, m.chunk, count, len(b))
	}
	m.locs = make([]chunkLoc, count)
	for j := range m.locs {
		p := b[manifestHeaderV1+8*j:]
		old := vlog.Loc{Seg: binary.LittleEndian.Uint32(p), Off: binary.LittleEndian.Uint32(p[4:])}
		if loc, ok := chunks[old]; ok {
			m.locs[j] = chunkLoc{shard: shard, loc: loc}
		}
	}
	return m.encode(nil), nil
}

// resyncV1 finds the next offset from which a whole format-1 record verifies, or the end.
func resyncV1(data []byte, from int) int {
	for off := from; off < len(data); off++ {
		if off+4 >= len(data) || data[off+4] != 0xA7 {
			continue
		}
		if _, err := vlog.DecodeRecordV1(data[off:]); err == nil {
			return off
		}
	}
	return len(data)
}

// readAll reads a whole file.
func readAll(fsys vfs.FS, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}
