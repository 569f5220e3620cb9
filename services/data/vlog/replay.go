package vlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// Recovery: what Open does before the log takes appends, and Replay.
//
// # Torn tail or corruption
//
// A crash in the middle of writing can leave the end of the log torn: bytes the application
// wrote but never synced may be missing, zeroed or half there, and since the kernel writes
// dirty pages back in no particular order, a later page may have reached the disk while an
// earlier one did not. Such bytes were never acknowledged as durable, so recovery may cut them
// off. Bytes that were synced are another matter: if they no longer verify, the disk lost them
// (a flipped bit, a lost sector), and cutting the log there would silently drop every
// acknowledged write after them. Recovery tells the two apart with what the records say about
// durability:
//
//   - every record carries Synced, the bytes of its segment that were synced when it was
//     appended, so a bad record at offset B is in synced data if any valid record of the
//     segment, before or after it, claims more than B;
//   - records appended once the previous segment was wholly synced carry flagPrevSealed, so a
//     segment whose successor holds such a record was sealed: all of it is synced data;
//   - when the records do not already prove it, the log appends a mark (KindMark) after a sync
//     (Log.Mark, called once a second) and at Close, so that a quiet log is proven too.
//
// Open first works out which segments may end in a torn tail: the newest, and going back, each
// one whose successor holds no record proving it sealed (usually just the newest; two right
// after a rotation). It reads those, and at the first bad record B of the oldest of them:
//
//   - if no record claims B synced (no valid record, or only ones whose Synced is at most B),
//     it is a torn tail: the segment is cut at B and every later segment removed, because the
//     log is durable as a prefix and records after a hole were never durable either;
//   - otherwise it is corruption, like any bad record Replay finds in the other segments, or a
//     record that fails in a sealed segment.
//
// A segment that lost its unsynced tail exactly at a record boundary ends cleanly: there is no
// bad record to find. Its successor's header gives it away: it records the size the segment had
// when a rotation created the successor, which is final (nothing is appended to a full
// segment). A segment that may end in a torn tail and is shorter than that lost a torn tail, and
// the segments after it go as after any other. A sealed segment shorter than that lost synced
// data: corruption, at the end of its last record that verifies. Only headers are compared, so
// every sealed segment is checked at Open. A header that records no size (the first segment's,
// or one a repair rewrote) says nothing, and neither does one whose predecessor is missing: a
// segment is dropped (reclamation, FLUSHALL) only once sealed.
//
// Corruption stops the node: Open or Replay returns a *CorruptionError naming the segment and
// offset. With Options.Repair the damaged bytes (from the bad record to the next record that
// verifies) are copied into a file of the shard's quarantine directory, overwritten with one
// mark record of the same length, and recovery goes on with every valid record after them.
// Keys whose newest record was in those bytes fall back to their previous record, as if that
// write had not happened; the file, named after the segment and offset, keeps the bytes for an
// operator. Synced bytes lost from a sealed segment's end cannot be moved aside: a repair keeps
// what is left of a record they cut short and fills the lost range with marks (markLost).
// Rejected: resynchronising silently (a key would silently go back in time) and keeping valid
// records found after a torn hole (a large value's manifest could outlive its chunks, a
// transaction half of its parts).
//
// A record that verifies but that this version cannot read (an unknown kind, flag or reserved
// byte, a newer segment format) is never cut: the data directory was written by a newer
// version, and the node refuses to start (ErrNewerFormat).
//
// Once the tails are settled, Open syncs the segments that may have held them: what a killed
// process left in the page cache becomes durable before any new record claims it is.
//
// # Replay
//
// Replay reads every segment in order from a position (a checkpoint's, or the start) and
// hands each verified record to the caller; the segments before the position are opened for
// reads but never read at start-up, which is what makes a restart with a checkpoint cost the
// checkpoint plus the log tail. A record they hold that went bad since is found by the read that
// fetches it, which refuses it as corrupt.

// CorruptionError is damaged data found by recovery: bytes that were durable and no longer
// verify, followed by valid records.
type CorruptionError struct {
	Segment string // the segment file
	Offset  int64  // where the damage starts
	Length  int64  // bytes up to the next record that verifies (or the end of the segment)
	Reason  error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("vlog: corrupt data in %s at offset %d (%d bytes up to the next valid record): %v; "+
		"this is damaged durable data, not a torn write, so the log is not cut there. Restart with "+
		"repair-corrupt-log yes to move the damaged bytes aside into the shard's quarantine directory "+
		"and keep every valid record after them, or restore the data directory",
		e.Segment, e.Offset, e.Length, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }

// ErrReplayStart is returned by Replay when the position to start from lies beyond the log: no
// segment at or after the position's segment exists, or that segment is shorter than the
// position's offset. The checkpoint that named the position claims records the log does not
// hold (files were lost or replaced, or recovery cut them), and the caller must not trust it.
var ErrReplayStart = errors.New("vlog: replay start position is beyond the end of the log")

// SegExtent is one segment as recovery left it.
type SegExtent struct {
	ID   uint32
	Size int64
}

// Extent is a log as Open recovered it: its segments, ascending, with their sizes.
type Extent struct {
	Segs []SegExtent
}

// Reached reports whether the recovered log holds every byte of segment seg before end. A
// segment that is missing but older than the newest was dropped once sealed, so it did.
func (e Extent) Reached(seg, end uint32) bool {
	if len(e.Segs) == 0 {
		return false
	}
	i, found := slices.BinarySearchFunc(e.Segs, seg, func(s SegExtent, id uint32) int { return int(int64(s.ID) - int64(id)) })
	if !found {
		return seg < e.Segs[len(e.Segs)-1].ID
	}
	return int64(end) <= e.Segs[i].Size
}

// Extent returns the log as Open recovered it.
func (l *Log) Extent() Extent { return l.ext }

// recovered is what recover found: the segments left and, for the newest, what its records prove
// (see openSeg).
type recovered struct {
	ids               []uint32
	sizes             []int64
	claimed, lastReal int64
	proved            bool
	// firstID is the id a log left with no segment starts at: ids are never reused.
	firstID uint32
	// tx are the transaction records of the segments that may have had a torn tail.
	tx []TxRecord
}

// TxRecord is the first of a run of records of one transaction, with its extension block.
type TxRecord struct {
	At  Loc
	Ext []byte
}

// TailTx returns the transaction records (the first of each run sharing an extension block)
// that recovery found in the segments that may have had a torn tail, in log order: the only
// place a transaction a crash cut can have parts (see AddBarrier). The keyspace checks each
// transaction against every shard's log and cuts the logs at those that are incomplete (CutAt)
// before it replays.
func (l *Log) TailTx() []TxRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []TxRecord
	for _, r := range l.tailTx {
		if l.ext.Reached(r.At.Seg, r.At.Off+1) {
			out = append(out, r)
		}
	}
	return out
}

// CutAt cuts the log at at, a record recovery found (TailTx): it and everything after it go, as
// a torn tail would, before anything is replayed or appended.
func (l *Log) CutAt(at Loc) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.open) != 1 || l.open[0].size != l.open[0].writtenOff || at.Off < SegmentHeaderSize {
		return fmt.Errorf("vlog: cut at %v after the log took appends", at)
	}
	var keep []SegExtent
	for _, s := range l.ext.Segs {
		switch {
		case s.ID < at.Seg:
			keep = append(keep, s)
		case s.ID == at.Seg:
			if int64(at.Off) > s.Size {
				return fmt.Errorf("vlog: cut at %v beyond the segment's %d bytes", at, s.Size)
			}
			keep = append(keep, SegExtent{ID: s.ID, Size: int64(at.Off)})
		}
	}
	if len(keep) == 0 || keep[len(keep)-1].ID != at.Seg {
		return fmt.Errorf("vlog: cut at %v: no such segment", at)
	}
	l.open[0].wf.Close()
	l.open = nil
	for _, s := range l.ext.Segs {
		if s.ID > at.Seg {
			seg := l.segs[s.ID]
			delete(l.segs, s.ID)
			seg.release()
			if err := l.opts.FS.Remove(l.segPath(s.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("vlog: %w", err)
			}
			l.log.Warn("segment after an incomplete transaction removed", "segment", l.segPath(s.ID))
		}
	}
	if err := l.truncate(at.Seg, int64(at.Off)); err != nil {
		return err
	}
	if err := l.opts.FS.SyncDir(l.opts.Dir); err != nil {
		return fmt.Errorf("vlog: %w", err)
	}
	wf, err := l.opts.FS.OpenReadWrite(l.segPath(at.Seg))
	if err != nil {
		return fmt.Errorf("vlog: %w", err)
	}
	size := int64(at.Off)
	// What the records left prove is not known without reading them again: Mark will prove
	// it anew.
	l.open = []*openSeg{{seg: l.segs[at.Seg], wf: wf, size: size, writtenOff: size, syncedOff: size,
		tailOff: size, dirSynced: true, prevSealed: true, lastReal: size}}
	l.ext.Segs = keep
	var tx []TxRecord
	for _, r := range l.tailTx {
		if r.At.Seg < at.Seg || r.At.Seg == at.Seg && r.At.Off < at.Off {
			tx = append(tx, r)
		}
	}
	l.tailTx = tx
	l.stable = min(l.stable, l.open[0].lsnBase+uint64(size))
	l.updateBoundsLocked()
	return nil
}

func (l *Log) segPath(id uint32) string { return filepath.Join(l.opts.Dir, segName(id)) }

// recover checks every segment's header and settles the tail (see the top of this file).
func (l *Log) recover(ids []uint32) (recovered, error) {
	var rec recovered
	var keep []uint32
	// torn holds the segments whose header never became durable: a crash interrupted their
	// creation, and nothing in them was durable either (the header is their first bytes).
	torn := map[uint32]herrAt{}
	// prev is what each segment's header that verified records of the segment before it, and
	// sizes are the segments' sizes on disk.
	prev := map[uint32]SegExtent{}
	sizes := map[uint32]int64{}
	for _, id := range ids {
		p := l.segPath(id)
		b, size, err := readPrefix(l.opts.FS, p, SegmentHeaderSize)
		if err != nil {
			return rec, err
		}
		h, herr := decodeSegHeader(b, id)
		switch {
		case herr == nil:
			prev[id] = h.prev
		case errors.Is(herr, ErrNewerFormat):
			return rec, fmt.Errorf("vlog: %s: %w; the data directory was written by a newer version of Lavik", p, herr)
		case size <= SegmentHeaderSize:
			torn[id] = herrAt{herr}
		case l.opts.Repair:
			if err := l.repairHeader(id, b); err != nil {
				return rec, err
			}
		default:
			return rec, &CorruptionError{Segment: p, Offset: 0, Length: SegmentHeaderSize, Reason: herr}
		}
		sizes[id] = size
		keep = append(keep, id)
	}
	if len(keep) == 0 {
		return rec, nil
	}
	// The segments that may end in a torn tail: the newest, and each before it that no record
	// of its successor proves sealed.
	c := len(keep) - 1
	for c > 0 {
		proof := false
		if _, ok := torn[keep[c]]; !ok {
			var err error
			if proof, err = l.sealProof(keep[c]); err != nil {
				return rec, err
			}
		}
		if proof {
			break
		}
		c--
	}
	for _, id := range keep[:c] {
		if h, ok := torn[id]; ok {
			// A sealed segment cannot have lost its header to a crash.
			return rec, &CorruptionError{Segment: l.segPath(id), Offset: 0, Length: SegmentHeaderSize, Reason: h.err}
		}
	}
	// A sealed segment shorter than its successor's header recorded lost synced bytes at its
	// end. Only the headers are needed, so every sealed segment is checked, not only the one
	// the proof names: they were sealed in order.
	for j := 0; j < c; j++ {
		if want, short := recordedLonger(keep, j, prev, sizes[keep[j]]); short {
			if err := l.lostSealed(keep[j], sizes[keep[j]], want, keep[j+1]); err != nil {
				return rec, err
			}
		}
	}
	for i := c; i < len(keep); i++ {
		if _, ok := torn[keep[i]]; ok {
			// Nothing of it was durable: it goes, with everything after it. It is never the
			// first of the chain (that one holds a record proving its predecessor sealed), so
			// the segment before it was scanned and is the newest now.
			if err := l.removeAfter(keep, i-1); err != nil {
				return rec, err
			}
			keep = keep[:i]
			break
		}
		t, err := l.scanTail(keep[i])
		if err != nil {
			return rec, err
		}
		rec.claimed, rec.proved, rec.lastReal = t.claimed, t.proved, t.lastReal
		rec.tx = append(rec.tx, t.tx...)
		if t.torn {
			if err := l.truncate(keep[i], t.cut); err != nil {
				return rec, err
			}
		} else if want, short := recordedLonger(keep, i, prev, t.end); short {
			// The segment ends cleanly, but before the size the next one recorded when a
			// rotation created it: its unsynced tail was lost exactly at a record boundary,
			// and the records of the segments after it follow a hole. Nothing in it is cut.
			l.log.Warn("torn tail lost at a record boundary", "segment", l.segPath(keep[i]), "offset", t.end,
				"recorded_size", want, "bytes", want-t.end)
		} else {
			continue
		}
		if err := l.removeAfter(keep, i); err != nil {
			return rec, err
		}
		keep = keep[:i+1]
		break
	}
	if len(keep) == 0 {
		return recovered{firstID: ids[len(ids)-1] + 1}, nil
	}
	// A killed process (not a lost machine) leaves its last writes in the page cache: make them
	// durable now, before any new record claims they are.
	for _, id := range keep[min(c, len(keep)-1):] {
		if err := syncFile(l.opts.FS, l.segPath(id)); err != nil {
			return rec, err
		}
	}
	for _, id := range keep {
		fi, err := l.opts.FS.Stat(l.segPath(id))
		if err != nil {
			return rec, fmt.Errorf("vlog: %w", err)
		}
		rec.ids = append(rec.ids, id)
		rec.sizes = append(rec.sizes, fi.Size())
	}
	return rec, nil
}

// herrAt is why a segment's header does not verify.
type herrAt struct{ err error }

// recordedLonger reports whether the header of keep[i+1] names keep[i] as the segment before it
// with a final size above have, and returns that size. A header that names another segment (the
// one before it was dropped once sealed), none, or no size (a header a repair rewrote) says
// nothing.
func recordedLonger(keep []uint32, i int, prev map[uint32]SegExtent, have int64) (int64, bool) {
	if i+1 >= len(keep) {
		return 0, false
	}
	p, ok := prev[keep[i+1]]
	return p.Size, ok && p.ID == keep[i] && p.Size > have
}

// lostSealed handles sealed segment id, which holds size bytes where the header of its successor
// succ recorded want: the disk lost synced bytes from its end (a truncated file). That is
// corruption, reported at the end of the last record that verifies: a *CorruptionError, or with
// Options.Repair, markLost.
func (l *Log) lostSealed(id uint32, size, want int64, succ uint32) error {
	sc, done, err := l.segScan(id)
	if err != nil {
		return err
	}
	end, off, err := sc.validEnd()
	done()
	if errors.Is(err, ErrNewerFormat) {
		return l.newerErr(id, off, err)
	}
	if err != nil {
		return fmt.Errorf("vlog: recover %s: %w", l.segPath(id), err)
	}
	l.corrupt.Add(1)
	reason := fmt.Errorf("%w: the header of %s records that this sealed segment held %d bytes, and %d are left: "+
		"synced data is missing from its end", ErrCorrupt, segName(succ), want, size)
	if !l.opts.Repair {
		return &CorruptionError{Segment: l.segPath(id), Offset: end, Length: want - end, Reason: reason}
	}
	return l.markLost(id, end, size, want, reason)
}

// markLostChunk bounds the mark records markLost writes, so a large loss needs no large buffer
// and no record over MaxRecordSize.
const markLostChunk = 1 << 20

// markLost repairs segment id, whose records end at end and whose bytes end at size, short of
// the want bytes it held. There is little to move aside: the bytes from size on are gone. What
// is left of a record cut short, [end, size), goes into the quarantine directory, and mark
// records fill [end, want), so the segment verifies again, has the size its successor recorded
// (the next Open finds nothing to repair) and every location in the log keeps its meaning: a
// read of a lost record finds a mark where it was and refuses it as corrupt. Keys whose newest
// record was lost fall back to their previous record, as with any repair. Rejected: taking the
// shorter size as the truth (rewriting the successor's header), which loses the only record of
// how much was lost and makes the successor's header say something that was never true.
func (l *Log) markLost(id uint32, end, size, want int64, reason error) error {
	p := l.segPath(id)
	if want-end < HeaderSize {
		return fmt.Errorf("vlog: cannot repair %s at offset %d: the lost range is %d bytes, shorter than a record header",
			p, end, want-end)
	}
	f, err := l.opts.FS.OpenReadWrite(p)
	if err != nil {
		return fmt.Errorf("vlog: repair: %w", err)
	}
	defer f.Close()
	qp := ""
	if size > end {
		data := make([]byte, size-end)
		if _, err := f.ReadAt(data, end); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("vlog: repair: %w", err)
		}
		if qp, err = l.keepAside(fmt.Sprintf("%s.%d.bad", segName(id), end), data); err != nil {
			return err
		}
	}
	for off := end; off < want; {
		n := min(want-off, markLostChunk)
		if rest := want - off - n; rest > 0 && rest < HeaderSize {
			n -= HeaderSize // leave the last mark room for its header
		}
		pad := AppendRecord(nil, Header{Kind: KindMark, Synced: uint32(off)}, nil, nil, make([]byte, n-HeaderSize))
		if _, err := f.WriteAt(pad, off); err != nil {
			return fmt.Errorf("vlog: repair: %w", err)
		}
		off += n
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("vlog: repair: %w", err)
	}
	l.repaired.Add(1)
	l.log.Warn("synced bytes lost from a sealed segment's end; marks stand in for them and the valid records after them are kept",
		"segment", p, "offset", end, "bytes", want-end, "missing", want-size, "file", qp, "reason", reason.Error())
	return nil
}

// removeAfter removes the segments after keep[i], which follow a torn tail: none of them was
// durable, since the log is durable as a prefix.
func (l *Log) removeAfter(keep []uint32, i int) error {
	if len(keep) <= i+1 {
		return nil
	}
	for _, later := range keep[i+1:] {
		if err := l.opts.FS.Remove(l.segPath(later)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("vlog: %w", err)
		}
		l.log.Warn("segment after a torn tail removed: none of it was durable", "segment", l.segPath(later))
	}
	if err := l.opts.FS.SyncDir(l.opts.Dir); err != nil {
		return fmt.Errorf("vlog: %w", err)
	}
	return nil
}

// readPrefix reads up to n bytes from the start of a file and returns them with its size.
func readPrefix(fsys vfs.FS, p string, n int) ([]byte, int64, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, 0, fmt.Errorf("vlog: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, 0, fmt.Errorf("vlog: %w", err)
	}
	b := make([]byte, min(int64(n), size))
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("vlog: %w", err)
	}
	return b, size, nil
}

func syncFile(fsys vfs.FS, p string) error {
	f, err := fsys.OpenReadWrite(p)
	if err != nil {
		return fmt.Errorf("vlog: %w", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("vlog: sync %s: %w", p, err)
	}
	return nil
}

func (l *Log) truncate(id uint32, at int64) error {
	f, err := l.opts.FS.OpenReadWrite(l.segPath(id))
	if err != nil {
		return fmt.Errorf("vlog: truncate torn tail: %w", err)
	}
	err = f.Truncate(at)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("vlog: truncate torn tail: %w", err)
	}
	return nil
}

// segScan opens segment id for a sequential read of its records.
func (l *Log) segScan(id uint32) (*scanner, func(), error) {
	f, err := l.opts.FS.Open(l.segPath(id))
	if err != nil {
		return nil, nil, fmt.Errorf("vlog: %w", err)
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("vlog: %w", err)
	}
	return &scanner{f: f, size: size}, func() { f.Close() }, nil
}

// sealProof reports whether a valid record of segment id says the segment before it was wholly
// synced when the record was appended. It reads only up to the first such record, past bad
// records: a record that verifies was appended as it reads, so its flag is true of the moment
// it was appended whether or not the record itself became durable (a record after a torn hole,
// or after damage). Stopping at a bad record instead would make a sealed segment look as if it
// might end in a torn tail whenever its successor is damaged before its proof, and a second
// damage in the sealed segment's last records would then be cut, with every later segment, as
// a torn tail.
func (l *Log) sealProof(id uint32) (bool, error) {
	sc, done, err := l.segScan(id)
	if err != nil {
		return false, err
	}
	defer done()
	for off := int64(SegmentHeaderSize); off < sc.size; {
		r, err := sc.record(off)
		if err != nil {
			if errors.Is(err, ErrNewerFormat) {
				return false, l.newerErr(id, off, err)
			}
			off = sc.resync(off + 1)
			continue
		}
		if r.Header.Flags&flagPrevSealed != 0 {
			return true, nil
		}
		off += r.Size()
	}
	return false, nil
}

func (l *Log) newerErr(id uint32, off int64, err error) error {
	return fmt.Errorf("vlog: %s at offset %d: %w; the data directory was written by a newer version of Lavik and this one refuses to start rather than cut it",
		l.segPath(id), off, err)
}

// tailScan is what scanTail found in one segment.
type tailScan struct {
	torn bool
	cut  int64 // with torn: where the durable records end
	end  int64 // the segment's size
	// tx are the runs of records of transactions (vlog.FlagTx) before the cut.
	tx []TxRecord
	// What the records kept prove (see openSeg): the highest Synced, whether one carries
	// flagPrevSealed, and where the last record that is not a mark ends.
	claimed, lastReal int64
	proved            bool
}

func (t *tailScan) note(r *Record, off int64) {
	if r.Header.Flags&FlagTx != 0 && (len(t.tx) == 0 || !bytes.Equal(t.tx[len(t.tx)-1].Ext, r.Ext)) {
		t.tx = append(t.tx, TxRecord{At: r.Loc, Ext: append([]byte(nil), r.Ext...)})
	}
	t.claimed = max(t.claimed, int64(r.Header.Synced))
	t.proved = t.proved || r.Header.Flags&flagPrevSealed != 0
	if r.Header.Kind != KindMark {
		t.lastReal = off + r.Size()
	}
}

// scanTail reads a segment that may end in a torn tail and decides, at its first bad record,
// between a torn tail and corruption (see the top of this file). Corruption is repaired with
// Options.Repair, and the scan goes on.
func (l *Log) scanTail(id uint32) (tailScan, error) {
	t := tailScan{lastReal: SegmentHeaderSize}
	sc, done, err := l.segScan(id)
	if err != nil {
		return t, err
	}
	defer done()
	t.end = sc.size
	for off := int64(SegmentHeaderSize); off < sc.size; {
		r, err := sc.record(off)
		if err == nil {
			r.Loc = Loc{Seg: id, Off: uint32(off)}
			t.note(&r, off)
			off += r.Size()
			continue
		}
		if errors.Is(err, ErrNewerFormat) {
			return t, l.newerErr(id, off, err)
		}
		if !errors.Is(err, ErrCorrupt) {
			return t, fmt.Errorf("vlog: recover %s: %w", l.segPath(id), err)
		}
		next, claim, valid := sc.claimsAfter(off)
		if off >= t.claimed && claim <= off {
			t.torn, t.cut = true, off
			l.tornCuts.Add(uint64(sc.size - off))
			l.log.Warn("torn tail cut off", "segment", l.segPath(id), "offset", off, "bytes", sc.size-off,
				"unsynced_records_after_it", valid, "reason", err.Error())
			return t, nil
		}
		if err := l.damaged(id, off, next, err); err != nil {
			return t, err
		}
		t.claimed = max(t.claimed, off) // the mark written over the damage claims it
		off = next
	}
	return t, nil
}

// damaged handles corruption at [off, next) of segment id: a *CorruptionError, or with
// Options.Repair the bytes moved aside.
func (l *Log) damaged(id uint32, off, next int64, reason error) error {
	l.corrupt.Add(1)
	if !l.opts.Repair {
		return &CorruptionError{Segment: l.segPath(id), Offset: off, Length: next - off, Reason: reason}
	}
	return l.quarantine(id, off, next, reason)
}

// quarantineDir is where a repair keeps damaged bytes, under the shard's directory.
const quarantineDir = "quarantine"

// quarantine copies bytes [off, next) of segment id into the quarantine directory and overwrites
// them with one mark record of the same length, so the segment verifies again and keeps every
// record after them.
func (l *Log) quarantine(id uint32, off, next int64, reason error) error {
	p := l.segPath(id)
	if next-off < HeaderSize {
		return fmt.Errorf("vlog: cannot repair %s at offset %d: the damaged range is %d bytes, shorter than a record header",
			p, off, next-off)
	}
	f, err := l.opts.FS.OpenReadWrite(p)
	if err != nil {
		return fmt.Errorf("vlog: repair: %w", err)
	}
	defer f.Close()
	data := make([]byte, next-off)
	if _, err := f.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("vlog: repair: %w", err)
	}
	qp, err := l.keepAside(fmt.Sprintf("%s.%d.bad", segName(id), off), data)
	if err != nil {
		return err
	}
	pad := AppendRecord(nil, Header{Kind: KindMark, Synced: uint32(off)}, nil, nil, make([]byte, next-off-HeaderSize))
	if _, err := f.WriteAt(pad, off); err != nil {
		return fmt.Errorf("vlog: repair: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("vlog: repair: %w", err)
	}
	l.repaired.Add(1)
	l.log.Warn("damaged bytes moved aside; the valid records after them are kept", "segment", p, "offset", off,
		"bytes", next-off, "file", qp, "reason", reason.Error())
	return nil
}

// repairHeader moves a damaged segment header aside and writes a good one. The new header names
// no previous segment: what the damaged one recorded cannot be trusted, so the size of the
// segment before it goes unchecked.
func (l *Log) repairHeader(id uint32, old []byte) error {
	p := l.segPath(id)
	qp, err := l.keepAside(segName(id)+".header.bad", old)
	if err != nil {
		return err
	}
	f, err := l.opts.FS.OpenReadWrite(p)
	if err != nil {
		return fmt.Errorf("vlog: repair: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteAt(appendSegHeader(nil, id, 0, SegExtent{}), 0); err != nil {
		return fmt.Errorf("vlog: repair: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("vlog: repair: %w", err)
	}
	l.corrupt.Add(1)
	l.repaired.Add(1)
	l.log.Warn("damaged segment header rewritten", "segment", p, "file", qp)
	return nil
}

// keepAside writes data durably into the quarantine directory under name and returns its path.
func (l *Log) keepAside(name string, data []byte) (string, error) {
	dir := filepath.Join(l.opts.Dir, quarantineDir)
	if err := l.opts.FS.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("vlog: repair: %w", err)
	}
	qp := filepath.Join(dir, name)
	err := vfs.WriteFile(l.opts.FS, qp, data)
	if err == nil {
		err = l.opts.FS.SyncDir(dir)
	}
	if err == nil {
		err = l.opts.FS.SyncDir(l.opts.Dir)
	}
	if err != nil {
		return "", fmt.Errorf("vlog: repair: %w", err)
	}
	return qp, nil
}

// Replay hands every verified record from position from on (the zero Loc: from the start) to
// fn, in log order; the records alias replay's buffer and are valid only during the call. A
// record that does not verify is corruption (Open already cut any torn tail): a
// *CorruptionError, or with Options.Repair the damaged bytes moved aside. Replay runs once,
// after Open and before any append.
func (l *Log) Replay(from Loc, fn func(r *Record) error) error {
	if err := l.checkReplayFrom(from); err != nil {
		return err
	}
	for _, s := range l.ext.Segs {
		start := int64(SegmentHeaderSize)
		switch {
		case s.ID < from.Seg:
			continue
		case s.ID == from.Seg:
			start = max(start, int64(from.Off))
		}
		if err := l.replaySegment(s.ID, start, s.Size, fn); err != nil {
			return err
		}
	}
	return nil
}

// checkReplayFrom checks a replay start position against the recovered log.
func (l *Log) checkReplayFrom(from Loc) error {
	if from == (Loc{}) {
		return nil
	}
	segs := l.ext.Segs
	if len(segs) == 0 {
		return fmt.Errorf("%w: start %d:%d, no segment", ErrReplayStart, from.Seg, from.Off)
	}
	if segs[len(segs)-1].ID < from.Seg {
		return fmt.Errorf("%w: start %d:%d, newest segment %d", ErrReplayStart, from.Seg, from.Off, segs[len(segs)-1].ID)
	}
	for _, s := range segs {
		if s.ID == from.Seg && s.Size < int64(from.Off) {
			return fmt.Errorf("%w: start %d:%d, segment size %d", ErrReplayStart, from.Seg, from.Off, s.Size)
		}
	}
	// A segment dropped (FLUSHALL, reclamation) after the checkpoint: whatever it held before
	// the position is dead or was copied to a later segment, which is replayed whole.
	return nil
}

func (l *Log) replaySegment(id uint32, from, size int64, fn func(r *Record) error) error {
	sc, done, err := l.segScan(id)
	if err != nil {
		return err
	}
	defer done()
	sc.size = min(sc.size, size)
	for off := from; off < sc.size; {
		r, err := sc.record(off)
		if err == nil {
			r.Loc = Loc{Seg: id, Off: uint32(off)}
			if err := fn(&r); err != nil {
				return err
			}
			off += r.Size()
			continue
		}
		if errors.Is(err, ErrNewerFormat) {
			return l.newerErr(id, off, err)
		}
		if !errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("vlog: replay %s: %w", l.segPath(id), err)
		}
		next := sc.resync(off + 1)
		if err := l.damaged(id, off, next, err); err != nil {
			return err
		}
		off = next
	}
	return nil
}

// replayChunk is how much of a segment a scanner reads per call.
const replayChunk = 4 << 20

// scanner reads records from a file through a window buffer.
type scanner struct {
	f     vfs.File
	size  int64
	buf   []byte
	start int64 // file offset of buf[0]
}

// window returns at least n bytes from off (fewer only at end of file).
func (s *scanner) window(off int64, n int) ([]byte, error) {
	if off >= s.start && off+int64(n) <= s.start+int64(len(s.buf)) {
		return s.buf[off-s.start:], nil
	}
	want := max(n, replayChunk)
	if rem := s.size - off; int64(want) > rem {
		want = int(rem)
	}
	if cap(s.buf) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	got, err := s.f.ReadAt(s.buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	s.buf, s.start = s.buf[:got], off
	return s.buf, nil
}

// record decodes and verifies the record at off. Its slices alias the window.
func (s *scanner) record(off int64) (Record, error) {
	b, err := s.window(off, HeaderSize)
	if err != nil {
		return Record{}, err
	}
	h, err := DecodeHeader(b)
	if err != nil {
		return Record{}, err
	}
	if off+h.Size() > s.size {
		return Record{}, fmt.Errorf("%w: record at %d runs past the end of the segment", ErrCorrupt, off)
	}
	if b, err = s.window(off, int(h.Size())); err != nil {
		return Record{}, err
	}
	return DecodeRecord(b)
}

// verifies reports whether a whole record verifies at off: a readable one, or one a newer
// version wrote (it verified; this version refuses it later).
func (s *scanner) verifies(off int64) bool {
	_, err := s.record(off)
	return err == nil || errors.Is(err, ErrNewerFormat)
}

// resync finds the next offset at or after from where a whole record verifies, or the end.
func (s *scanner) resync(from int64) int64 {
	for off := from; off+HeaderSize <= s.size; off++ {
		b, err := s.window(off, HeaderSize)
		if err != nil {
			return s.size
		}
		if b[4] == recordMagic && s.verifies(off) {
			return off
		}
	}
	return s.size
}

// validEnd returns where the last record that verifies ends (the segment header's end when
// none does), reading past bad records. It stops at a record this version cannot read, with its
// offset and an error of class ErrNewerFormat.
func (s *scanner) validEnd() (end, off int64, err error) {
	end = SegmentHeaderSize
	for off = end; off < s.size; {
		r, err := s.record(off)
		switch {
		case err == nil:
			off += r.Size()
			end = off
		case errors.Is(err, ErrCorrupt):
			off = s.resync(off + 1)
		default:
			return end, off, err
		}
	}
	return end, off, nil
}

// claimsAfter looks at what follows a bad record at off: the next offset where a record
// verifies (or the end), the highest Synced claim of the valid records from there to the end,
// and how many there are.
func (s *scanner) claimsAfter(off int64) (next, claim int64, valid int) {
	next = s.resync(off + 1)
	for p := next; p < s.size; {
		r, err := s.record(p)
		if err != nil {
			p = s.resync(p + 1)
			continue
		}
		claim = max(claim, int64(r.Header.Synced))
		valid++
		p += r.Size()
	}
	return next, claim, valid
}
