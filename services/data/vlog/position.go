package vlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// What the keyspace's index checkpoints need from the log: where the log ends now (Position),
// replay that starts at a checkpoint's position instead of at the first record
// (Options.ReplayFrom), and which segments exist (SegmentIDs).
//
// A checkpoint covers every record before its position. Replay from there still verifies every
// record it reads and still cuts a torn tail off the newest segment; the segments before the
// position are opened for reads but never read at start-up, which is what makes a restart with
// a checkpoint cost the checkpoint plus the log tail instead of the whole log.

// ErrReplayStart is returned by Open when Options.ReplayFrom lies beyond the log: no segment at
// or after the position's segment exists, or that segment is shorter than the position's offset.
// The checkpoint that named the position claims records the log does not hold (its log was
// synced past the position before the checkpoint was written, so this means files were lost or
// replaced), and the caller must not trust it.
var ErrReplayStart = errors.New("vlog: replay start position is beyond the end of the log")

// checkReplayFrom checks Options.ReplayFrom against the segments found (ids, ascending) before
// anything is replayed, so that a caller who gets ErrReplayStart can open the log again with a
// full replay and nothing has been truncated or handed to its replay function.
func (l *Log) checkReplayFrom(ids []uint32) error {
	from := l.opts.ReplayFrom
	if from == (Loc{}) {
		return nil
	}
	if len(ids) == 0 || ids[len(ids)-1] < from.Seg {
		newest := uint32(0)
		if len(ids) > 0 {
			newest = ids[len(ids)-1]
		}
		return fmt.Errorf("%w: start %d:%d, newest segment %d", ErrReplayStart, from.Seg, from.Off, newest)
	}
	if _, found := slices.BinarySearch(ids, from.Seg); !found {
		// Dropped (FLUSHALL, reclamation) after the checkpoint: whatever it held before the
		// position is dead or was copied to a later segment, which is replayed whole.
		return nil
	}
	fi, err := l.opts.FS.Stat(filepath.Join(l.opts.Dir, segName(from.Seg)))
	if err != nil {
		return fmt.Errorf("vlog: %w", err)
	}
	if fi.Size() < int64(from.Off) {
		return fmt.Errorf("%w: start %d:%d, segment size %d", ErrReplayStart, from.Seg, from.Off, fi.Size())
	}
	return nil
}

// replayStart says whether Open replays segment id and from which offset.
func (l *Log) replayStart(id uint32) (int64, bool) {
	from := l.opts.ReplayFrom
	switch {
	case id < from.Seg:
		return 0, false
	case id == from.Seg:
		return int64(from.Off), true
	}
	return 0, true
}

// Position returns where the next record will be appended, as a location (the end of the active
// segment; the record may start the next segment instead, which is later still) and as an LSN.
// Every record appended before the call lies before it. The caller that needs the position to
// mean "nothing after it has happened yet" holds whatever lock its appends hold.
func (l *Log) Position() (Loc, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Loc{Seg: l.active.id, Off: uint32(l.size)}, l.lsnBase + uint64(l.size)
}

// SegmentIDs returns the ids of the log's segments, ascending.
func (l *Log) SegmentIDs() []uint32 {
	l.mu.Lock()
	ids := make([]uint32, 0, len(l.segs))
	for id := range l.segs {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	slices.Sort(ids)
	return ids
}
