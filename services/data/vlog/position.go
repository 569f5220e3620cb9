package vlog

import "slices"

// What the keyspace's index checkpoints need from the log: where the log ends now (Position),
// replay that starts at a checkpoint's position instead of at the first record (Replay's from),
// and which segments exist (SegmentIDs).
//
// A checkpoint covers every record before its position. Replay from there still verifies every
// record it reads; the segments before the position are opened for reads but never read at
// start-up.

// Position returns where the next record will be appended, as a location (the end of the active
// segment; the record may start the next segment instead, which is later still) and as an LSN.
// Every record appended before the call lies before it. The caller that needs the position to
// mean "nothing after it has happened yet" holds whatever lock its appends hold.
func (l *Log) Position() (Loc, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.cur()
	return Loc{Seg: c.seg.id, Off: uint32(c.size)}, c.lsnBase + uint64(c.size)
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
