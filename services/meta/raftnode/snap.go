package raftnode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lavikdb/lavik/pkg/vfs"
	"go.etcd.io/raft/v3/raftpb"
)

// Snapshot file layout: magic (8), CRC32C of the payload (4, little endian), payload length
// (8, little endian), payload (a marshaled raftpb.Snapshot: metadata and state-machine data).
const (
	snapMagic      = "LVKSNAP1"
	snapHeaderSize = 8 + 4 + 8
	snapSuffix     = ".snap"
	// snapKeep is how many snapshot files are retained. The WAL is purged only up to the
	// older one, so that if the newest is found damaged at restart the older one plus the
	// WAL still rebuild the state. Rejected: purging up to the newest (the WAL would be
	// smaller, but one bad sector in the newest snapshot would make the member unrecoverable
	// on its own).
	snapKeep = 2
)

// snapFile is a snapshot file name, parsed.
type snapFile struct {
	name        string
	term, index uint64
}

func snapName(term, index uint64) string {
	return fmt.Sprintf("%016x-%016x%s", term, index, snapSuffix)
}

func encodeSnap(snap raftpb.Snapshot) ([]byte, error) {
	payload, err := snap.Marshal()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, snapHeaderSize, snapHeaderSize+len(payload))
	copy(buf, snapMagic)
	binary.LittleEndian.PutUint32(buf[8:12], crc32.Checksum(payload, crcTable))
	binary.LittleEndian.PutUint64(buf[12:20], uint64(len(payload)))
	return append(buf, payload...), nil
}

// decodeSnap verifies and decodes a snapshot file; its error is the reason it is damaged.
func decodeSnap(data []byte) (raftpb.Snapshot, error) {
	var snap raftpb.Snapshot
	if len(data) < snapHeaderSize || !bytes.Equal(data[:8], []byte(snapMagic)) {
		return snap, errors.New("bad snapshot header")
	}
	n := binary.LittleEndian.Uint64(data[12:20])
	if n != uint64(len(data)-snapHeaderSize) {
		return snap, fmt.Errorf("snapshot payload is %d bytes, header says %d", len(data)-snapHeaderSize, n)
	}
	payload := data[snapHeaderSize:]
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(data[8:12]) {
		return snap, errors.New("snapshot checksum mismatch")
	}
	if err := snap.Unmarshal(payload); err != nil {
		return snap, fmt.Errorf("undecodable snapshot: %v", err)
	}
	return snap, nil
}

// saveSnap writes snap durably: to a temporary file, synced, renamed into place, and the
// directory synced (vfs.WriteFileAtomic), so that a crash leaves the whole file or none.
func saveSnap(fsys vfs.FS, dir string, snap raftpb.Snapshot) error {
	data, err := encodeSnap(snap)
	if err != nil {
		return fmt.Errorf("raftnode: snapshot: %w", err)
	}
	name := snapName(snap.Metadata.Term, snap.Metadata.Index)
	if err := vfs.WriteFileAtomic(fsys, dir, name, data); err != nil {
		return fmt.Errorf("raftnode: snapshot %s: %w", name, err)
	}
	return nil
}

// listSnaps returns the snapshot files of dir, newest (highest index) first, and removes the
// temporary files a crash left behind.
func listSnaps(fsys vfs.FS, dir string) ([]snapFile, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("raftnode: snapshot: %w", err)
	}
	var out []snapFile
	for _, name := range names {
		if strings.HasSuffix(name, ".tmp") {
			if err := fsys.Remove(filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("raftnode: snapshot: %w", err)
			}
			continue
		}
		var sf snapFile
		if _, err := fmt.Sscanf(name, "%016x-%016x.snap", &sf.term, &sf.index); err != nil || snapName(sf.term, sf.index) != name {
			continue
		}
		sf.name = name
		out = append(out, sf)
	}
	slices.SortFunc(out, func(a, b snapFile) int {
		if a.index != b.index {
			return -cmpUint(a.index, b.index)
		}
		return -cmpUint(a.term, b.term)
	})
	return out, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func loadSnap(fsys vfs.FS, dir string, sf snapFile) (raftpb.Snapshot, error) {
	path := filepath.Join(dir, sf.name)
	data, err := readAll(fsys, path)
	if err != nil {
		return raftpb.Snapshot{}, fmt.Errorf("raftnode: snapshot %s: %w", path, err)
	}
	snap, err := decodeSnap(data)
	if err != nil {
		return snap, &CorruptError{Path: path, Offset: -1, Reason: err.Error()}
	}
	if snap.Metadata.Index != sf.index || snap.Metadata.Term != sf.term {
		return snap, &CorruptError{Path: path, Offset: -1, Reason: fmt.Sprintf("holds term %d index %d", snap.Metadata.Term, snap.Metadata.Index)}
	}
	return snap, nil
}

// purgeSnaps removes all but the snapKeep newest snapshot files and returns the index the WAL
// may be purged up to: that of the oldest one kept.
func purgeSnaps(fsys vfs.FS, dir string) (uint64, error) {
	snaps, err := listSnaps(fsys, dir)
	if err != nil || len(snaps) == 0 {
		return 0, err
	}
	if len(snaps) > snapKeep {
		for _, sf := range snaps[snapKeep:] {
			if err := fsys.Remove(filepath.Join(dir, sf.name)); err != nil {
				return 0, fmt.Errorf("raftnode: snapshot: purge: %w", err)
			}
		}
		if err := fsys.SyncDir(dir); err != nil {
			return 0, fmt.Errorf("raftnode: snapshot: purge: %w", err)
		}
		snaps = snaps[:snapKeep]
	}
	return snaps[len(snaps)-1].index, nil
}
