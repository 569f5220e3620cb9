package keyspace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// Transactions in the log. A command that changes several keys (MSET, DEL of many keys, RENAME,
// MOVE, a MULTI/EXEC block) writes several records, usually in the logs of several shards, and
// each shard's log is durable as a prefix of its own. Without more, a crash could keep some of
// the records and lose others: half a RENAME, part of an EXEC. So every record that takes
// effect in such a transaction carries, in its extension block (vlog.FlagTx), the transaction's
// commit condition: its id and, for each shard it wrote to, where that shard's part ends in the
// shard's log. Each part is appended as one contiguous run (vlog.Log.Reserve says where it will
// end before anything is appended, which is why every appender holds the shard's lock).
//
// A transaction is complete when every shard's log, as recovered, reaches the end of that shard's
// part (vlog.Extent.Reached). The condition is positional, so no commit record has to outlive the
// parts: a part copied by the collector keeps its condition, and a segment dropped by reclamation
// was sealed, hence reached.
//
// Dropping an incomplete transaction alone would not be enough: records after its part in one
// log may have been computed from it (an INCR of a key it set, a FLUSHDB that found its keys
// gone), and keeping them while dropping the transaction would leave a state no order of the
// commands could produce. So each log also keeps, after a transaction's part, a barrier
// (vlog.Log.AddBarrier): nothing after the part is written before every other part is written,
// or synced under appendfsync always. Then a crash that loses a part of a transaction can only
// have kept, in the other logs, what followed that transaction unsynced, and recovery
// (cutIncompleteTx) cuts each of them at the transaction's part, as it cuts a torn tail: every
// shard's log stays a prefix of its records, no transaction is half there, and nothing that was
// acknowledged as synced is lost. Under everysec a cut may take acknowledged writes of the last
// second with it, as losing power may anyway. Cutting a log can make another transaction
// incomplete; recovery goes on until none is. Only the segments that may have had a torn tail
// can hold a part of an incomplete transaction (they are the only ones not yet proven synced),
// so recovery reads no more than it reads for torn tails.
//
// Replay (replayLocked) checks every record of a transaction again and skips any whose
// transaction is incomplete, which only a bug or damage can leave. It also skips the records of
// transactions listed in abortedFile: one whose part could not be appended whole (only a bug or a
// closing log gets there; the parts appended already stay in the logs, and the list keeps them
// from applying whatever the logs reach later).
//
// Rejected: a commit record per transaction (it would have to outlive every part, and the
// collector would need to know which), two-phase commit with a sync between phases (a second
// fdatasync on every multi-key write under appendfsync always), and dropping incomplete
// transactions without cutting what followed them.

// txCond is a transaction's commit condition: its id and where each shard's part ends.
type txCond struct {
	id   uint64
	ends []txEnd
}

// txEnd says that the part of shard ends at (just before) at in that shard's log.
type txEnd struct {
	shard uint16
	at    vlog.Loc
}

// txCondSize is the encoded size of the condition of a transaction over n shards.
func txCondSize(n int) int { return 10 + 10*n }

// Layout (little endian): id uint64, n uint16, then n x (shard uint16, segment uint32, offset
// uint32).
func (c *txCond) encode(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, c.id)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(c.ends)))
	for _, e := range c.ends {
		dst = binary.LittleEndian.AppendUint16(dst, e.shard)
		dst = binary.LittleEndian.AppendUint32(dst, e.at.Seg)
		dst = binary.LittleEndian.AppendUint32(dst, e.at.Off)
	}
	return dst
}

func decodeTxCond(b []byte) (txCond, error) {
	if len(b) < 10 {
		return txCond{}, fmt.Errorf("%w: transaction condition of %d bytes", vlog.ErrCorrupt, len(b))
	}
	c := txCond{id: binary.LittleEndian.Uint64(b)}
	n := int(binary.LittleEndian.Uint16(b[8:]))
	if len(b) != txCondSize(n) || n == 0 {
		return txCond{}, fmt.Errorf("%w: transaction condition of %d bytes for %d shards", vlog.ErrCorrupt, len(b), n)
	}
	c.ends = make([]txEnd, n)
	for i := range c.ends {
		p := b[10+10*i:]
		c.ends[i] = txEnd{shard: binary.LittleEndian.Uint16(p),
			at: vlog.Loc{Seg: binary.LittleEndian.Uint32(p[2:]), Off: binary.LittleEndian.Uint32(p[6:])}}
	}
	return c, nil
}

// abortedFile lists, in the data directory, the transactions whose parts could not all be
// appended: their records never apply.
const abortedFile = "ABORTED_TX"

// txState is the keyspace's transaction bookkeeping.
type txState struct {
	mu sync.Mutex
	// next is the next transaction id.
	next uint64
	// aborted holds the ids in abortedFile; fresh are the ones to add to it.
	aborted map[uint64]bool
	fresh   []uint64
	// exts are the logs as recovered, by shard, during Open only.
	exts []vlog.Extent
	// cut counts the incomplete transactions recovery cut from the logs.
	cut atomic.Uint64
}

// nextID returns a new transaction id.
func (t *txState) nextID() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	return t.next
}

// loadAborted reads abortedFile and sets the first transaction id above every id it lists and
// above the clock (in nanoseconds), so that no id is ever reused.
func (t *txState) loadAborted(fsys vfs.FS, dir string) error {
	t.aborted = map[uint64]bool{}
	t.next = uint64(time.Now().UnixNano())
	f, err := fsys.Open(filepath.Join(dir, abortedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("keyspace: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("keyspace: %w", err)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("keyspace: read %s: %w", abortedFile, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, err := strconv.ParseUint(line, 10, 64)
		if err != nil {
			return fmt.Errorf("keyspace: %s is malformed: %q", abortedFile, line)
		}
		t.aborted[id] = true
		t.next = max(t.next, id)
	}
	return nil
}

// complete reports whether every part of the transaction with condition c is in the logs as
// exts describes them.
func complete(c txCond, exts []vlog.Extent) bool {
	for _, e := range c.ends {
		if int(e.shard) >= len(exts) || !exts[e.shard].Reached(e.at.Seg, e.at.Off) {
			return false
		}
	}
	return true
}

// decide says whether a record of the transaction with condition c is applied at replay: not if
// the transaction is listed as aborted or is incomplete.
func (t *txState) decide(c txCond) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.aborted[c.id] && complete(c, t.exts)
}

// cutIncompleteTx cuts every shard's log at the first part of an incomplete transaction it
// holds, until every transaction is complete (see the top of this file). Open calls it after
// the logs recovered their tails and before anything is replayed.
func (ks *Keyspace) cutIncompleteTx() error {
	for {
		exts := make([]vlog.Extent, len(ks.shards))
		for i, s := range ks.shards {
			exts[i] = s.log.Extent()
		}
		cut := false
		for _, s := range ks.shards {
			for _, r := range s.log.TailTx() {
				c, err := decodeTxCond(r.Ext)
				if err != nil {
					return fmt.Errorf("keyspace: shard %d segment %d offset %d: %w", s.id, r.At.Seg, r.At.Off, err)
				}
				if complete(c, exts) && !ks.tx.isAborted(c.id) {
					continue
				}
				ks.log.Warn("a transaction a crash left incomplete is cut from the log, with what followed it",
					"shard", s.id, "segment", r.At.Seg, "offset", r.At.Off, "transaction", c.id)
				if err := s.log.CutAt(r.At); err != nil {
					return fmt.Errorf("keyspace: shard %d: %w", s.id, err)
				}
				ks.tx.cut.Add(1)
				cut = true
				break
			}
		}
		if !cut {
			return nil
		}
	}
}

// abort lists a transaction that could not be appended whole (the append of one of its parts
// failed) and makes the list durable at once: the parts already appended must never apply,
// whatever the logs later reach.
func (t *txState) abort(fsys vfs.FS, dir string, id uint64) error {
	t.mu.Lock()
	t.aborted[id] = true
	t.fresh = append(t.fresh, id)
	t.mu.Unlock()
	return t.saveAborted(fsys, dir)
}

// saveAborted makes the list durable if it grew: the whole list, written anew and renamed into
// place.
func (t *txState) saveAborted(fsys vfs.FS, dir string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.fresh) == 0 {
		return nil
	}
	ids := make([]uint64, 0, len(t.aborted))
	for id := range t.aborted {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := []byte("# transactions whose parts could not all be appended: their records never apply\n")
	for _, id := range ids {
		b = strconv.AppendUint(b, id, 10)
		b = append(b, '\n')
	}
	if err := vfs.WriteFileAtomic(fsys, dir, abortedFile, b); err != nil {
		return fmt.Errorf("keyspace: record aborted transactions: %w", err)
	}
	t.fresh = nil
	return nil
}

// txCode is what an index entry keeps of a record's transaction, so that it knows the record's
// size: 0 for a record of no transaction, n for one over n shards up to 254, and 255 for one over
// 255 or more, whose condition then lists every shard of the keyspace (the shards not in it with
// a zero location, which every log reaches).
func txCode(n, nshards int) uint8 {
	if n < 255 {
		return uint8(n)
	}
	return 255
}

// txExtLen is the extension block's length for a transaction code.
func txExtLen(code uint8, nshards int) int {
	switch code {
	case 0:
		return 0
	case 255:
		return txCondSize(nshards)
	}
	return txCondSize(int(code))
}

// newTx returns the condition of a new transaction, with its id.
func (ks *Keyspace) newTx() txCond {
	c := txCond{id: ks.tx.nextID()}
	if ks.opts.onTx != nil {
		ks.opts.onTx(c.id)
	}
	return c
}

// Aborted reports whether transaction id was found incomplete by a recovery.
func (t *txState) isAborted(id uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.aborted[id]
}
