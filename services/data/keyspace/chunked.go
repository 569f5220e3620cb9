package keyspace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// Large strings. A string longer than ChunkThreshold is not one record but ChunkSize chunk
// records (sub-records, vlog.KindSub; the last one shorter) and one manifest, so that GETRANGE,
// SETRANGE and APPEND read and write only the chunks they touch instead of the whole value.
//
// # Records
//
// Each chunked value is an object with a random 64-bit id. Chunk j holds bytes
// [j*ChunkSize, min((j+1)*ChunkSize, length)); its record carries the object id in its key field
// (8 bytes, not the key: a 64 KiB key with a 1 MiB value writes about 1 MiB, not 9 MB), j in its
// Sub field, the version of the manifest that first wrote it, and its own CRC. A reader checks
// that a chunk carries the manifest's object id and index and has the chunk's length. The
// manifest is an ordinary put record with vlog.FlagDir set, whose payload is
//
//	0  length  uint64   the string's length
//	8  chunk   uint32   the chunk size (ChunkSize)
//	12 count   uint32   chunks: ceil(length/chunk)
//	16 object  uint64   the object id its chunks carry
//	24 locs    count x (shard uint16, segment uint32, offset uint32): where chunk j lives
//
// all little endian: 10 bytes per 8 KiB, about 128 KB for a 100 MB string. A location names the
// shard whose log holds the chunk, so that a manifest may one day name chunks another shard
// wrote; today every chunk lies in its manifest's shard. Chunks are appended before their
// manifest, in the same shard log, so the log's prefix durability means that a manifest that
// survived a crash has all its chunks. Segment ids are never reused, so a (shard, segment,
// offset) names one record for ever. Replay never applies a sub-record (it is reachable only
// through a manifest), so a dead chunk can neither hide nor resurrect anything.
//
// The index entry of a chunked value points at its manifest, carries flagChunked (checkpoints
// carry it as vtChunked in the entry's type byte) and keeps the logical length in vlen, so STRLEN,
// TYPE and SCAN need no disk read; the manifest's own record size follows from the length and
// the chunk size (shard.recLen), which is what accounting and reads use.
//
// Each shard keeps, in memory, the object ids of the chunked values whose manifests it holds
// (shard.objs): the collector finds a chunk's owner through it. It costs about a hundred bytes
// and the key per chunked value, under 0.2% of the value's bytes.
//
// # Reads and writes
//
// GET reads the manifest, then every chunk in batches of readBatch reads through the engine.
// GETRANGE reads the manifest and only the chunks overlapping the range. SETRANGE and APPEND
// (Tx.WriteAt) read the manifest and only the edge chunks the patch overwrites in part, write the
// chunks it changes and a new manifest that reuses every untouched chunk's location. So each
// edit also rewrites the manifest, about 0.12% of the value (128 KB for 100 MB): accepted,
// because it keeps one record per value in the index and a manifest that is checked whole by
// its CRC. A value edited in place never shrinks; SET replaces it whole, chunked again or not
// by its new length, so strings cross the threshold both ways naturally.
//
// A reader takes the manifest's location under the shard's read lock, but the chunks' only after
// reading the manifest, when a collection may have moved them and dropped their segment: such a
// read fails with vlog.ErrSegmentGone, and the reader looks again if the key's entry has moved.
//
// # Space accounting
//
// A chunk record is live from its append until no manifest of its key names it; the log counts
// dead chunks apart (vlog.Log.MarkChunkDead), because they never hide anything and so never keep
// a tombstone alive. When a new manifest replaces an old one in a commit that has both (an
// edit, a collector move), the old manifest and exactly the chunks the new one no longer names
// are marked dead there. When a chunked key is removed or overwritten without its manifest in
// hand (DEL, SET over it, expiry, FLUSHDB, RENAME over it, ...), the manifest's location joins
// the shard's queue of dead manifests (markDeadLocked), and the collector reads each one and
// marks its chunks dead (drainLocked) before it picks a segment, and again before it drops one.
// A segment holding a queued manifest is not dropped until the queue has been read; FLUSHALL
// and a FLUSHDB that empties a shard mark everything dead at once and clear the queue, and a
// read that was in flight then discards what it read (flushGen). After Open the live bytes are
// recomputed from the index, which reads the manifests of the chunked values (indexLiveLocked):
// only chunked keys pay for that.
//
// # Reclamation
//
// A chunk in a segment being collected is live if and only if the current manifest of its
// object's key names exactly its location. The collector notes the keys whose chunks (found
// through shard.objs) or live manifest it finds in the segment and then, per key, reads the
// manifest and the chunks it names in the segment, relocateRound at a time so that memory
// stays bounded, appends their copies under the shard lock while the key's entry still points
// at that manifest, and last, by the same compare-and-swap as every move, one new manifest
// (same version, type and object, current expire-at) naming them (relocateChunked). Copies of a
// value that changed meanwhile are marked dead.
//
// Moving a key's chunks kills its old manifest, which usually lies in another segment. With
// manifests large against segments (1 MiB segments and 512 MB strings: 640 KB manifests) that
// could make the other segment worth collecting, and two segments could hand a value's chunks
// back and forth for ever. So a collection the policy chose goes ahead only if the manifests it
// would kill elsewhere weigh less than half the dead bytes it frees (planRelocation); otherwise it
// is deferred until the segment holds more garbage. Every collection the policy completes then
// lowers the dead bytes on disk, and the collector settles. At the default 64 MiB segments no
// manifest (5 MB at most) comes near that.
//
// # Why 64 KiB
//
// ChunkThreshold trades the two costs. Below it a value is one record: GET is one read and one
// round trip, and an edit rewrites at most 64 KiB, about what an edit of a 64 MB chunked value
// costs in manifest alone. Above it a GET costs a round trip more (manifest, then chunks), which
// the transfer time of such a value dwarfs, and an edit costs its edge chunks plus 10 bytes per
// chunk. On NVMe a 64 KiB read takes little longer than a 4 KiB one, so chunking smaller values
// (the design's first sketch said 8 KiB) would add a round trip to every GET of them to save
// little. The chunk size stays 8 KiB: the unit a range read or an edit pays.
//
// Rejected: a run-length manifest (one entry per run of adjacent chunks), far smaller for a
// value written once, but its size would no longer follow from the length, and the index has no
// room to hold it; a manifest read in part (only the locations a range needs), which could not
// be verified by its CRC.
const (
	// ChunkSize is the size of a chunk of a large string.
	ChunkSize = 8 << 10
	// ChunkThreshold is the length above which a string is stored in chunks.
	ChunkThreshold = 64 << 10
	// MaxValueLen is the longest value the index can describe (its length is 32 bits).
	MaxValueLen = math.MaxUint32

	// vtChunked marks a chunked value in an index or checkpoint entry's type byte (records say
	// it with vlog.FlagDir); Put and Tx.Put clear it from the types they are given.
	vtChunked uint8 = 0x20

	manifestHeader  = 24
	manifestLocSize = 10
	// oidSize is the size of an object id, the key field of its sub-records.
	oidSize = 8
	// readBatch bounds the chunk reads submitted to the engine at once (and the buffers they
	// hold): 256 reads of 8 KiB.
	readBatch = 256
	// fillChunks is the most chunks a read may take from disk and still add to the value
	// cache: a range read of a few chunks may be hot, a GET of 100 MB would only evict.
	fillChunks = 8
	// relocateRound bounds the chunks the collector moves under one manifest rewrite.
	relocateRound = 512
	// readRetries bounds how often a reader looks again after the chunks it was reading moved.
	readRetries = 100
)

var errValueTooLong = fmt.Errorf("keyspace: value longer than %d bytes", int64(MaxValueLen))

// chunkLoc is where a chunk lives: the shard whose log holds it and its location there.
type chunkLoc struct {
	shard uint16
	loc   vlog.Loc
}

// manifest is a chunked value's manifest, or a grouped value's directory (grouped.go, g set).
type manifest struct {
	length int64      // the value's length; a directory's payload size
	chunk  int        // chunk size; 0 for a directory
	oid    uint64     // the object id its chunks carry
	locs   []chunkLoc // chunk (or group) j's record
	g      *groupDir  // a grouped value's directory: its groups' ids, lengths and summaries
	// Of a patch directory (dirpatch.go): its base, the splices that make its groups of the
	// base's, and its count of groups.
	base    *dirBase
	splices []dirSplice
	count   int
}

// newObjectID returns the id of a new chunked value. Ids are random: two values sharing one
// only cost the collector a wasted look (it checks the manifest names the exact location).
func newObjectID() uint64 { return rand.Uint64() }

// oidKey is the key field of an object's sub-records.
func oidKey(oid uint64) []byte {
	return binary.LittleEndian.AppendUint64(make([]byte, 0, oidSize), oid)
}

func chunkCount(length int64, chunk int) int {
	return int((length + int64(chunk) - 1) / int64(chunk))
}

// manifestSize is the payload size of the manifest of a length-byte value.
func manifestSize(length int64, chunk int) int {
	return manifestHeader + manifestLocSize*chunkCount(length, chunk)
}

// span is the byte range of the value that chunk j holds.
func (m *manifest) span(j int) (from, to int64) {
	from = int64(j) * int64(m.chunk)
	return from, min(from+int64(m.chunk), m.length)
}

// spanLen is chunk j's length (a group's, for a directory).
func (m *manifest) spanLen(j int) int {
	if m.g != nil {
		return m.g.lens[j]
	}
	from, to := m.span(j)
	return int(to - from)
}

// subOf is the Sub field of chunk j's record: its index, or a group's id.
func (m *manifest) subOf(j int) uint64 {
	if m.g != nil {
		return m.g.ids[j]
	}
	return uint64(j)
}

// size is the manifest's payload size.
func (m *manifest) size() int {
	if m.g != nil {
		return int(m.length)
	}
	return manifestSize(m.length, m.chunk)
}

// clone copies m deeply enough to change its locations.
// A patch directory's clone is a whole directory (baseView).
func (m *manifest) clone() *manifest {
	c := *m
	if m.g != nil {
		c = *m.baseView()
		g := *m.g
		c.g = &g
	}
	c.locs = slices.Clone(m.locs)
	return &c
}

// chunkRecSize is the size of chunk j's record.
func (m *manifest) chunkRecSize(j int) int64 { return vlog.RecordSize(0, oidSize, m.spanLen(j)) }

func (m *manifest) encode(dst []byte) []byte {
	if m.g != nil && m.base != nil {
		return m.encodePatch(dst)
	}
	if m.g != nil {
		return m.encodeDir(dst)
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(m.length))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(m.chunk))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(m.locs)))
	dst = binary.LittleEndian.AppendUint64(dst, m.oid)
	for _, l := range m.locs {
		dst = binary.LittleEndian.AppendUint16(dst, l.shard)
		dst = binary.LittleEndian.AppendUint32(dst, l.loc.Seg)
		dst = binary.LittleEndian.AppendUint32(dst, l.loc.Off)
	}
	return dst
}

// decodeManifestHeader checks a manifest payload's shape (chunk size, count, size) and returns
// the value's length.
func decodeManifestHeader(b []byte, chunk int) (int64, error) {
	if len(b) < manifestHeader {
		return 0, fmt.Errorf("%w: manifest of %d bytes", vlog.ErrCorrupt, len(b))
	}
	length := int64(binary.LittleEndian.Uint64(b))
	cs := int(binary.LittleEndian.Uint32(b[8:]))
	count := int(binary.LittleEndian.Uint32(b[12:]))
	switch {
	case cs != chunk:
		return 0, fmt.Errorf("%w: manifest of %d-byte chunks, this keyspace uses %d", vlog.ErrCorrupt, cs, chunk)
	case length <= 0 || length > MaxValueLen || count != chunkCount(length, chunk) || len(b) != manifestSize(length, chunk):
		return 0, fmt.Errorf("%w: manifest of length %d, %d chunks, %d bytes", vlog.ErrCorrupt, length, count, len(b))
	}
	return length, nil
}

func decodeManifest(b []byte, chunk int) (*manifest, error) {
	length, err := decodeManifestHeader(b, chunk)
	if err != nil {
		return nil, err
	}
	m := &manifest{length: length, chunk: chunk, oid: binary.LittleEndian.Uint64(b[16:]), locs: make([]chunkLoc, chunkCount(length, chunk))}
	p := b[manifestHeader:]
	for j := range m.locs {
		m.locs[j] = chunkLoc{shard: binary.LittleEndian.Uint16(p),
			loc: vlog.Loc{Seg: binary.LittleEndian.Uint32(p[2:]), Off: binary.LittleEndian.Uint32(p[6:])}}
		p = p[manifestLocSize:]
	}
	return m, nil
}

func (e *entry) chunked() bool { return e.w0&flagChunked != 0 }

// recLen is the payload length of the record e points at: the value, or a chunked value's
// manifest (a grouped value's directory keeps its own size in vlen).
func (s *shard) recLen(e *entry) int {
	if e.chunked() && e.vtype() == TypeString {
		return manifestSize(int64(e.vlen), s.cs)
	}
	return int(e.vlen)
}

// recSize is the size of the record e points at.
func (s *shard) recSize(e *entry) int64 {
	return vlog.RecordSize(txExtLen(e.tx(), s.nshards), len(s.ix.key(e)), s.recLen(e))
}

// recordValueLen returns what the index keeps of a put record: the value's length (for a
// manifest, the length it describes) and whether the value is chunked.
func (s *shard) recordValueLen(h vlog.Header, val []byte) (uint32, bool, error) {
	if h.Flags&vlog.FlagDir == 0 {
		return h.ValLen, false, nil
	}
	if h.VType != TypeString {
		_, err := decodeDir(val)
		return uint32(len(val)), true, err
	}
	n, err := decodeManifestHeader(val, s.cs)
	return uint32(n), true, err
}

// logOf returns the log of shard i.
func (ks *Keyspace) logOf(i uint16) *vlog.Log { return ks.shards[i].log }

// recRead is one record to read.
type recRead struct {
	log *vlog.Log
	loc vlog.Loc
	n   int
}

// readRecords reads the records rs, readBatch at a time in one engine batch each, and calls each
// for every one in order, with its bytes (valid during the call) or the error that kept it from
// being read (an error of the read itself, or vlog.ErrSegmentGone). When each returns an error
// readRecords stops and returns it. fill says whether records read from disk may be added to the
// value cache. No lock need be held; shard locks may be.
func (ks *Keyspace) readRecords(rs []recRead, fill bool, each func(i int, rec []byte, err error) error) error {
	n := min(len(rs), readBatch)
	rds := make([]vlog.Read, n)
	ptrs := make([]*vlog.Read, 0, n)
	perr := make([]error, n)
	for start := 0; start < len(rs); start += readBatch {
		batch := rs[start:min(start+readBatch, len(rs))]
		ptrs = ptrs[:0]
		for i, r := range batch {
			if fill {
				perr[i] = r.log.PrepareRead(&rds[i], r.loc, r.n)
			} else {
				perr[i] = r.log.PrepareReadNoFill(&rds[i], r.loc, r.n)
			}
			if perr[i] == nil {
				ptrs = append(ptrs, &rds[i])
			}
		}
		vlog.Submit(ks.opts.Engine, ptrs)
		var stop error
		for i := range batch {
			if stop == nil {
				var err error
				switch {
				case perr[i] != nil:
					err = perr[i]
				case rds[i].Err != nil:
					err = rds[i].Err
				}
				if err != nil {
					stop = each(start+i, nil, err)
				} else {
					stop = each(start+i, rds[i].Data, nil)
				}
			}
			if perr[i] == nil {
				rds[i].Release()
			}
		}
		if stop != nil {
			return stop
		}
	}
	return nil
}

// manifestOf verifies that rec is the manifest of (db, key) describing length bytes (any key
// when key is nil, any length when length < 0) and decodes it; the record returned aliases rec.
func (s *shard) manifestOf(rec []byte, db uint8, key []byte, length int64) (*manifest, vlog.Record, error) {
	r, err := vlog.DecodeRecord(rec)
	if err != nil {
		return nil, r, err
	}
	h := r.Header
	if h.Kind != vlog.KindPut || h.Flags&vlog.FlagDir == 0 || (key != nil && (h.DB != db || !bytes.Equal(r.Key, key))) {
		return nil, r, fmt.Errorf("%w: index points at a record that is not the key's manifest", vlog.ErrCorrupt)
	}
	m, err := decodeManifestOf(r.Val, h.VType, s.cs)
	if err == nil && length >= 0 && m.length != length {
		err = fmt.Errorf("%w: manifest of %d bytes, the index says %d", vlog.ErrCorrupt, m.length, length)
	}
	return m, r, err
}

// chunkOf verifies that rec is chunk j of the object m describes and returns its bytes.
func chunkOf(rec []byte, m *manifest, j int) ([]byte, error) {
	r, err := vlog.DecodeRecord(rec)
	if err != nil {
		return nil, err
	}
	h := r.Header
	if h.Kind != vlog.KindSub || len(r.Key) != oidSize || binary.LittleEndian.Uint64(r.Key) != m.oid ||
		h.Sub != m.subOf(j) || len(r.Val) != m.spanLen(j) {
		return nil, fmt.Errorf("%w: manifest names a record that is not its chunk %d", vlog.ErrCorrupt, j)
	}
	return r.Val, nil
}

// chunkRead is the read of chunk j of m.
func (ks *Keyspace) chunkRead(m *manifest, j int) recRead {
	cl := m.locs[j]
	if int(cl.shard) >= len(ks.shards) {
		// A manifest naming a shard this keyspace does not have: the read fails as corrupt.
		return recRead{log: ks.shards[0].log, loc: vlog.Loc{}, n: int(m.chunkRecSize(j))}
	}
	return recRead{log: ks.logOf(cl.shard), loc: cl.loc, n: int(m.chunkRecSize(j))}
}

// readChunks reads chunks js of m and calls put with each one's position in js and its bytes
// (valid during the call).
func (ks *Keyspace) readChunks(m *manifest, js []int, put func(i int, b []byte)) error {
	rs := make([]recRead, len(js))
	for i, j := range js {
		rs[i] = ks.chunkRead(m, j)
	}
	return ks.readRecords(rs, len(js) <= fillChunks, func(i int, rec []byte, err error) error {
		if err == nil {
			var b []byte
			if b, err = chunkOf(rec, m, js[i]); err == nil {
				put(i, b)
				return nil
			}
		}
		if errors.Is(err, vlog.ErrSegmentGone) {
			return fmt.Errorf("keyspace: %w", err) // the reader decides: moved, or lost
		}
		return ks.readErr(err)
	})
}

// chunkRange lists the chunks of m overlapping bytes [from, to).
func (m *manifest) chunkRange(from, to int64) []int {
	if from >= to {
		return nil
	}
	lo, hi := int(from/int64(m.chunk)), int((to-1)/int64(m.chunk))
	js := make([]int, 0, hi-lo+1)
	for j := lo; j <= hi; j++ {
		js = append(js, j)
	}
	return js
}

// readValueRange reads bytes [from, to) of the value m describes into dst.
func (ks *Keyspace) readValueRange(m *manifest, from, to int64, dst []byte) error {
	js := m.chunkRange(from, to)
	return ks.readChunks(m, js, func(i int, b []byte) {
		cf, _ := m.span(js[i])
		lo, hi := max(from, cf), min(to, cf+int64(len(b)))
		copy(dst[lo-from:], b[lo-cf:hi-cf])
	})
}

// markChunkDead records that no manifest names chunk j of m any more.
func (ks *Keyspace) markChunkDead(m *manifest, j int) {
	if cl := m.locs[j]; int(cl.shard) < len(ks.shards) {
		ks.logOf(cl.shard).MarkChunkDead(cl.loc, m.chunkRecSize(j))
	}
}

// chunkedBytes is the size of the records appendChunkedLocked appends: the chunks js of m and
// a manifest for key with an extension block of extLen bytes.
func chunkedBytes(m *manifest, js []int, keyLen, extLen int) int64 {
	var n int64
	for _, j := range js {
		n += m.chunkRecSize(j)
	}
	if m.base != nil && m.base.fresh {
		n += m.base.recSize()
	}
	return n + vlog.RecordSize(extLen, keyLen, m.size())
}

// appendChunkedLocked appends the chunks js (ascending) of value m of key, whose bytes data
// gives, then the manifest as a record with header h and extension ext, and returns the
// manifest's location and the LSN past it. m.locs must hold the locations of the chunks not in
// js; those of js are set. If an append fails, the chunks appended are marked dead (no manifest
// names them) and the error is returned. The shard lock is held.
func (ks *Keyspace) appendChunkedLocked(s *shard, h vlog.Header, ext, key []byte, m *manifest, js []int, data func(j int) []byte) (vlog.Loc, uint64, error) {
	ch := vlog.Header{Kind: vlog.KindSub, DB: h.DB, Version: h.Version}
	oid := oidKey(m.oid)
	fail := func(done []int, err error) (vlog.Loc, uint64, error) {
		for _, j := range done {
			ks.markChunkDead(m, j)
		}
		return vlog.Loc{}, 0, fmt.Errorf("keyspace: %w", err)
	}
	for n, j := range js {
		ch.Sub = m.subOf(j)
		loc, _, err := s.log.Append(ch, oid, data(j))
		if err != nil {
			return fail(js[:n], err)
		}
		m.locs[j] = chunkLoc{shard: uint16(s.id), loc: loc}
	}
	var newBase *dirBase
	if b := m.base; b != nil && b.fresh {
		// A patch directory's new base (or a relocated copy of its base), after the groups
		// it names.
		bm := b.man
		if bm == nil {
			bm = m.baseView()
		}
		ch.Sub = b.sub
		loc, _, err := s.log.Append(ch, oid, bm.encodeDir(make([]byte, 0, b.n)))
		if err != nil {
			return fail(js, err)
		}
		b.loc, b.man, b.fresh = chunkLoc{shard: uint16(s.id), loc: loc}, bm, false
		ks.dirs.put(b.loc, bm)
		newBase = b
	}
	h.Flags |= vlog.FlagDir
	loc, lsn, err := s.log.AppendExt(h, ext, key, m.encode(make([]byte, 0, m.size())))
	if err != nil {
		ks.markBaseDead(newBase)
		return fail(js, err)
	}
	return loc, lsn, nil
}

// putChunkedLocked commits k, a put of a value longer than the threshold: its chunks, then
// its manifest, a new object. The shard lock is held and the index has room for the key.
func (tx *Tx) putChunkedLocked(se *Session, k *txKey, i uint32, found bool, ext []byte, code uint8) error {
	s := k.shard
	n := int64(len(k.val))
	m := k.newManifest(s)
	js := make([]int, len(m.locs))
	for j := range js {
		js[j] = j
	}
	h := recordHeader(vlog.KindPut, k.db, k.vtype, k.expireAt, s.version+1, ext)
	loc, lsn, err := tx.ks.appendChunkedLocked(s, h, ext, k.key, m, js, func(j int) []byte {
		from, to := m.span(j)
		return k.val[from:to]
	})
	s.version++
	if err != nil {
		return err
	}
	tx.noteLocked(se, k, lsn)
	if found {
		s.markDeadLocked(s.ix.entry(i))
	}
	v := valueRef{vtype: k.vtype | vtChunked, tx: code, expireAt: k.expireAt, seg: loc.Seg, off: loc.Off, vlen: uint32(n)}
	if _, _, err = s.pointLocked(i, found, uint32(k.hash), k.db, k.key, v); err != nil {
		return err
	}
	s.registerLocked(m.oid, k.db, k.key)
	if invariants {
		tx.ks.checkKeyLocked(s, k.db, k.key)
	}
	return nil
}

// newManifest is the manifest of k's new chunked value, its chunks' locations still unset; k
// remembers it so that sizing and committing agree.
func (k *txKey) newManifest(s *shard) *manifest {
	if k.plan == nil {
		n := int64(len(k.val))
		k.plan = &manifest{length: n, chunk: s.cs, oid: newObjectID(), locs: make([]chunkLoc, chunkCount(n, s.cs))}
	}
	return k.plan
}

// editManifest is the manifest of k's edited chunked value (Tx.WriteAt): the old one's chunk
// locations, for the length the edit gives; the edited chunks' are set when they are appended.
func (k *txKey) editManifest() (*manifest, []int) {
	base := k.man
	m := &manifest{length: k.elen, chunk: base.chunk, oid: base.oid, locs: make([]chunkLoc, chunkCount(k.elen, base.chunk))}
	copy(m.locs, base.locs)
	js := make([]int, 0, len(k.edits))
	for j := range k.edits {
		js = append(js, j)
	}
	slices.Sort(js)
	return m, js
}

// editChunkedLocked commits k's edit of its chunked value (Tx.WriteAt): the chunks it changed,
// then a manifest naming them and every unchanged chunk of the old one. The old manifest and
// the chunks it no longer names are dead now. The shard lock is held.
func (tx *Tx) editChunkedLocked(se *Session, k *txKey, i uint32, found bool, ext []byte, code uint8) error {
	s := k.shard
	if !found || !s.ix.entry(i).chunked() || s.ix.entry(i).loc() != k.manLoc {
		// Update holds the shard locks from the attempt's start to its commit.
		return fmt.Errorf("keyspace: internal error: edit of %q committed over a changed value", k.key)
	}
	base := k.man
	m, js := k.editManifest()
	h := recordHeader(vlog.KindPut, k.db, k.vtype, k.expireAt, s.version+1, ext)
	loc, lsn, err := tx.ks.appendChunkedLocked(s, h, ext, k.key, m, js, func(j int) []byte { return k.edits[j] })
	s.version++
	if err != nil {
		return err
	}
	tx.noteLocked(se, k, lsn)
	e := s.ix.entry(i)
	s.log.MarkDead(vlog.Loc{Seg: e.seg, Off: e.off}, s.recSize(e))
	for _, j := range js {
		if j < len(base.locs) {
			tx.ks.markChunkDead(base, j)
		}
	}
	v := valueRef{vtype: k.vtype | vtChunked, tx: code, expireAt: k.expireAt, seg: loc.Seg, off: loc.Off, vlen: uint32(k.elen)}
	_, _, err = s.pointLocked(i, true, uint32(k.hash), k.db, k.key, v)
	if invariants && err == nil {
		tx.ks.checkKeyLocked(s, k.db, k.key)
	}
	return err
}

// objKey is a chunked value's key in its shard's object table.
type objKey struct {
	db  uint8
	key string
}

// registerLocked records that the chunked value of (db, key), whose manifest this shard holds,
// is object oid. The shard lock is held.
func (s *shard) registerLocked(oid uint64, db uint8, key []byte) {
	if s.objs == nil {
		s.objs = map[uint64][]objKey{}
	}
	k := objKey{db: db, key: string(key)}
	if !slices.Contains(s.objs[oid], k) {
		s.objs[oid] = append(s.objs[oid], k)
	}
}

// unregisterLocked forgets that (db, key) is object oid. The shard lock is held.
func (ks *Keyspace) unregisterLocked(s *shard, oid uint64, db uint8, key []byte) {
	owners := s.objs[oid]
	i := slices.Index(owners, objKey{db: db, key: string(key)})
	if i < 0 {
		return
	}
	owners = slices.Delete(owners, i, i+1)
	if len(owners) == 0 {
		delete(s.objs, oid)
	} else {
		s.objs[oid] = owners
	}
}

// readValue reads key's value, or the part of it span picks from its length (nil: all of it),
// and calls fn with it. It serves chunked values, whose chunks fn reads as it streams them
// (Value.Each), their segments pinned meanwhile so that no collection can take them away; it
// serves plain ones too, which it may meet when the value changed since the caller looked. It
// reports whether the key exists and returns the read's error or fn's; it counts no hit or
// miss. se is made to wait for what the reply depends on.
func (ks *Keyspace) readValue(se *Session, ldb int, key []byte, span func(n int) (int, int), fn func(v Value, m Meta) error) (bool, error) {
	for attempt := 0; ; attempt++ {
		var p pendingRead
		// Translated on every attempt: a retry reads the key as it is now.
		db, h, s := ks.rlockKey(ldb, key)
		dep := s.depLocked(h)
		i, _, ok := s.ix.find(uint32(h), db, key)
		if !ok {
			s.mu.RUnlock()
			ks.noteDep(se, s, dep)
			return false, nil
		}
		e := s.ix.entry(i)
		if e.expired(ks.readNow()) {
			s.mu.RUnlock()
			ks.expireKey(s, h, db, key)
			ks.noteDep(se, s, dep)
			return false, nil
		}
		m := e.metaOf()
		mloc := e.loc()
		s.prepareLocked(&p, e, db, key)
		s.mu.RUnlock()
		ks.noteDep(se, s, dep)
		if p.ready {
			reads := [1]*vlog.Read{&p.rd}
			vlog.Submit(ks.opts.Engine, reads[:])
		}
		val, err := ks.value(&p)
		if err == nil && !p.chunked {
			from, to := 0, len(val)
			if span != nil {
				from, to = span(len(val))
			}
			err = fn(Value{Len: to - from, whole: val[from:to]}, m)
		}
		var man *manifest
		if err == nil && p.chunked {
			man, err = decodeManifestOf(val, m.Type, s.cs)
			if err == nil && man.length != int64(m.Len) {
				err = fmt.Errorf("%w: manifest of %d bytes, the index says %d", vlog.ErrCorrupt, man.length, m.Len)
			}
			if err != nil {
				err = ks.readErr(err)
			}
		}
		if p.ready {
			p.rd.Release()
		}
		if err == nil && p.chunked {
			if err = ks.resolveDir(man); errors.Is(err, vlog.ErrSegmentGone) && attempt < readRetries && ks.moved(s, h, db, key, mloc) {
				ks.stats.moved.Add(1)
				continue // a collection moved the directory's base
			}
		}
		if err != nil || !p.chunked {
			return true, err
		}
		unpin, ok := ks.pinChunks(man)
		if !ok {
			if attempt < readRetries && ks.moved(s, h, db, key, mloc) {
				ks.stats.moved.Add(1)
				continue // a collection moved the chunks and dropped their segment: look again
			}
			return true, ks.readErr(fmt.Errorf("%w: a segment the manifest of %q names is gone", vlog.ErrCorrupt, key))
		}
		if man.g != nil {
			// A grouped value is read whole, joined, when fn asks (Value.Bytes).
			err = fn(Value{Len: m.Len, ks: ks, man: man, vtype: m.Type}, m)
			unpin()
			return true, err
		}
		from, to := 0, m.Len
		if span != nil {
			from, to = span(m.Len)
		}
		err = fn(Value{Len: to - from, ks: ks, man: man, from: int64(from), to: int64(to)}, m)
		unpin()
		return true, err
	}
}

// pinChunks keeps the segments holding m's chunks while a reader streams them
// (vlog.Log.PinSegments). It reports false when one is gone already.
func (ks *Keyspace) pinChunks(m *manifest) (func(), bool) {
	bySeg := map[uint16][]uint32{}
	for _, cl := range m.locs {
		if int(cl.shard) >= len(ks.shards) {
			return nil, false
		}
		ids := bySeg[cl.shard]
		if len(ids) == 0 || ids[len(ids)-1] != cl.loc.Seg {
			bySeg[cl.shard] = append(ids, cl.loc.Seg)
		}
	}
	var unpins []func()
	release := func() {
		for _, u := range unpins {
			u()
		}
	}
	for shard, ids := range bySeg {
		slices.Sort(ids)
		u, ok := ks.logOf(shard).PinSegments(slices.Compact(ids))
		if !ok {
			release()
			return nil, false
		}
		unpins = append(unpins, u)
	}
	return release, true
}

// moved reports whether key's entry no longer points at the record at loc.
func (ks *Keyspace) moved(s *shard, h uint64, db uint8, key []byte, loc uint64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, _, ok := s.ix.find(uint32(h), db, key)
	return !ok || s.ix.entry(i).loc() != loc
}

// GetRange reads part of a key's value and calls fn with it: span gets the value's length and
// returns the byte range [from, to) to read (0 <= from <= to <= length). Of a chunked value only
// the chunks overlapping the range are read, as fn streams them. It reports whether the key
// exists (an expired key does not) and returns the read's error or fn's. se (nil: none) is made
// to wait for what the reply depends on.
func (ks *Keyspace) GetRange(se *Session, db int, key []byte, span func(n int) (from, to int), fn func(v Value, m Meta) error) (bool, error) {
	if se.batch() != nil {
		return ks.getBatch(se, db, key, span, fn)
	}
	found, err := ks.readValue(se, db, key, span, fn)
	if found {
		ks.stats.hits.Add(1)
	} else {
		ks.stats.misses.Add(1)
	}
	return found, err
}

// deadManifest is a queued manifest of a chunked value that was removed or overwritten: its
// chunks are still counted live until the collector reads it (drainLocked).
type deadManifest struct {
	loc vlog.Loc
	n   int64 // the record's size
}

// queueDeadLocked queues the manifest e points at, which the index just stopped pointing at.
func (s *shard) queueDeadLocked(e *entry, n int64) {
	s.deadMans = append(s.deadMans, deadManifest{loc: vlog.Loc{Seg: e.seg, Off: e.off}, n: n})
}

// queuedInLocked reports whether a queued dead manifest lies in segment id.
func (s *shard) queuedInLocked(id uint32) bool {
	for _, d := range s.deadMans {
		if d.loc.Seg == id {
			return true
		}
	}
	return false
}

// drainDeadManifests reads the dead manifests queued in s and marks their chunks dead.
func (ks *Keyspace) drainDeadManifests(s *shard) {
	ks.rc.mu.Lock()
	defer ks.rc.mu.Unlock()
	ks.drainLocked(s)
}

// drainLocked reads the manifests queued in s when it is called and marks their chunks dead.
// The collector's mu is held, so no segment is dropped by reclamation meanwhile; FLUSHALL may
// drop them, but it changes flushGen, and what was read is then discarded (the flush counted
// every chunk dead already). A manifest that could not be read for an I/O error is queued
// again; a corrupt one is reported, and its chunks stay counted live until the next start.
func (ks *Keyspace) drainLocked(s *shard) {
	s.mu.Lock()
	q, gen := s.deadMans, s.flushGen
	s.deadMans = nil
	s.mu.Unlock()
	if len(q) == 0 {
		return
	}
	type deadObj struct {
		m   *manifest
		db  uint8
		key []byte
	}
	for start := 0; start < len(q); start += readBatch {
		batch := q[start:min(start+readBatch, len(q))]
		rs := make([]recRead, len(batch))
		for i, d := range batch {
			rs[i] = recRead{log: s.log, loc: d.loc, n: int(d.n)}
		}
		var dead []deadObj
		var again []deadManifest
		ks.readRecords(rs, false, func(i int, rec []byte, err error) error {
			var m *manifest
			var r vlog.Record
			if err == nil {
				m, r, err = s.manifestOf(rec, 0, nil, -1)
			}
			if err == nil {
				err = ks.resolveDir(m)
			}
			switch {
			case err == nil:
				dead = append(dead, deadObj{m, r.Header.DB, append([]byte(nil), r.Key...)})
			case errors.Is(err, vlog.ErrSegmentGone):
				// FLUSHALL dropped it (flushGen tells), or something is badly wrong.
				ks.log.Debug("dead manifest's segment is gone", "shard", s.id, "segment", batch[i].loc.Seg)
			case isCorrupt(err):
				ks.readErr(err)
				ks.log.Error("dead manifest unreadable: its chunks stay counted live until a restart", "shard", s.id, "segment", batch[i].loc.Seg, "offset", batch[i].loc.Off)
			default:
				again = append(again, batch[i])
			}
			return nil
		})
		s.mu.Lock()
		if s.flushGen == gen {
			for _, d := range dead {
				for j := range d.m.locs {
					ks.markChunkDead(d.m, j)
				}
				ks.markBaseDead(d.m.base)
				ks.unregisterLocked(s, d.m.oid, d.db, d.key)
			}
			s.deadMans = append(s.deadMans, again...)
		}
		s.mu.Unlock()
	}
}

// indexLiveLocked computes the bytes of every segment of s that the index points at: each
// entry's record and, for a chunked value, the chunks its manifest names (read from the log).
// A manifest that cannot be read is reported in the error (its chunks are not counted; the key
// is unreadable anyway). The shard lock is held.
func (ks *Keyspace) indexLiveLocked(s *shard) (map[uint32]int64, error) {
	live := map[uint32]int64{}
	var rs []recRead
	var idx []uint32
	for i := uint32(0); i < s.ix.high; i++ {
		e := s.ix.entry(i)
		if !e.live() {
			continue
		}
		n := s.recSize(e)
		live[e.seg] += n
		if e.chunked() {
			rs = append(rs, recRead{log: s.log, loc: vlog.Loc{Seg: e.seg, Off: e.off}, n: int(n)})
			idx = append(idx, i)
		}
	}
	var errs []error
	ks.readRecords(rs, false, func(i int, rec []byte, err error) error {
		e := s.ix.entry(idx[i])
		key := s.ix.key(e)
		var m *manifest
		if err == nil {
			m, _, err = s.manifestOf(rec, e.db(), key, int64(e.vlen))
		}
		if err == nil {
			err = ks.resolveDir(m)
		}
		if err != nil {
			if len(errs) < 10 {
				errs = append(errs, fmt.Errorf("manifest of %d/%q: %w", e.db(), key, err))
			}
			return nil
		}
		for j, cl := range m.locs {
			if int(cl.shard) == s.id {
				live[cl.loc.Seg] += m.chunkRecSize(j)
			}
		}
		if b := m.base; b != nil && int(b.loc.shard) == s.id {
			live[b.loc.loc.Seg] += b.recSize()
		}
		s.registerLocked(m.oid, e.db(), key)
		return nil
	})
	return live, errors.Join(errs...)
}

// relocateChunked moves what segment seg holds of the chunked value of (db, key) out of it: the
// chunks its manifest names there, and the manifest. It reads the manifest, then the chunks in
// seg relocateRound at a time, appending copies of each round under the shard lock while the
// key's entry still points at that manifest, and finally, by the same compare-and-swap, one new
// manifest naming the copies (same version and type, current expire-at); the old manifest and
// the moved chunks are dead then. One manifest per key and segment: a rewrite per round would
// kill as many manifests elsewhere (see planRelocation). Copies of a value changed meanwhile are
// marked dead and the key is tried again.
func (ks *Keyspace) relocateChunked(s *shard, seg uint32, db uint8, key []byte, limit bool) error {
	h := ks.hash(db, key)
	for tries := 0; ; tries++ {
		if tries > readRetries {
			return fmt.Errorf("keyspace: reclaim segment %d of shard %d: key %q kept changing", seg, s.id, key)
		}
		done, err := ks.relocateOnce(s, seg, h, db, key, limit)
		if done || err != nil {
			return err
		}
	}
}

// relocateOnce is one attempt of relocateChunked; done false asks for another.
func (ks *Keyspace) relocateOnce(s *shard, seg uint32, h uint64, db uint8, key []byte, limit bool) (done bool, err error) {
	s.mu.Lock()
	if !s.log.HasSegment(seg) {
		s.mu.Unlock()
		return true, nil // FLUSHALL dropped it
	}
	i, ok, _ := ks.findLiveLocked(s, h, db, key, ks.opts.Now())
	if !ok || !s.ix.entry(i).chunked() {
		s.mu.Unlock()
		return true, nil
	}
	e := s.ix.entry(i)
	mloc, mn, length, gen := vlog.Loc{Seg: e.seg, Off: e.off}, s.recSize(e), int64(e.vlen), s.flushGen
	wantLoc := e.loc()
	s.mu.Unlock()

	var man *manifest
	var mh vlog.Header
	var mext []byte // the manifest's extension block: a copy keeps a transaction's condition
	err = ks.readRecords([]recRead{{log: s.log, loc: mloc, n: int(mn)}}, false, func(_ int, rec []byte, err error) error {
		if err == nil {
			var r vlog.Record
			if man, r, err = s.manifestOf(rec, db, key, length); err == nil {
				mh, mext = r.Header, append([]byte(nil), r.Ext...)
			}
		}
		return err
	})
	if err == nil {
		err = ks.resolveDir(man)
	}
	switch {
	case err == nil:
	case errors.Is(err, vlog.ErrSegmentGone) && ks.moved(s, h, db, key, wantLoc):
		return false, nil // changed meanwhile
	case isCorrupt(err):
		// The value is unreadable: its chunks stay, and the segment is left alone
		// (reclaimSegment finds it still live).
		ks.readErr(err)
		return true, nil
	default:
		return true, err
	}
	ks.rc.scanned.Add(uint64(mn))
	var js []int
	for j, l := range man.locs {
		if l.in(s.id, seg) {
			js = append(js, j)
		}
	}
	if len(js) == 0 && mloc.Seg != seg && (man.base == nil || !man.base.loc.in(s.id, seg)) {
		return true, nil // nothing of it here (any more)
	}
	copies := make([]vlog.Loc, 0, len(js))
	// abandon marks the copies made dead (nothing names them), unless a flush counted every
	// record dead since they were made. The shard lock is held.
	abandon := func() {
		if s.flushGen == gen {
			for n, loc := range copies {
				s.log.MarkChunkDead(loc, man.chunkRecSize(js[n]))
			}
		}
	}
	var lsn uint64
	for start := 0; start < len(js); start += relocateRound {
		round := js[start:min(start+relocateRound, len(js))]
		chunks := make([][]byte, len(round))
		var read int64
		err := ks.readChunks(man, round, func(i int, b []byte) {
			chunks[i] = append([]byte(nil), b...)
			read += man.chunkRecSize(round[i])
		})
		ks.rc.scanned.Add(uint64(read))
		s.mu.Lock()
		if err != nil || !ks.pointsAtLocked(s, h, db, key, wantLoc) {
			abandon()
			s.mu.Unlock()
			switch {
			case err == nil:
				return false, nil // changed meanwhile
			case isCorrupt(err):
				return true, nil // reported by the read; as above
			case errors.Is(err, vlog.ErrSegmentGone) && ks.moved(s, h, db, key, wantLoc):
				return false, nil
			}
			return true, err
		}
		ch := vlog.Header{Kind: vlog.KindSub, DB: db, Version: mh.Version}
		oid := oidKey(man.oid)
		var written int64
		for n, j := range round {
			ch.Sub = man.subOf(j)
			loc, l, err := s.log.Append(ch, oid, chunks[n])
			if err != nil {
				abandon()
				s.mu.Unlock()
				return true, fmt.Errorf("keyspace: %w", err)
			}
			copies, lsn = append(copies, loc), l
			written += man.chunkRecSize(j)
		}
		s.mu.Unlock()
		ks.rc.moved.Add(uint64(written))
		err = s.log.Flush(lsn, false)
		if err == nil && limit {
			err = ks.throttle(read + written)
		}
		if err != nil {
			// No manifest will name the copies made so far.
			s.mu.Lock()
			abandon()
			s.mu.Unlock()
			return true, err
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if !ks.pointsAtLocked(s, h, db, key, wantLoc) {
		abandon()
		return false, nil // changed meanwhile: read the new manifest
	}
	nm := man.clone()
	for n, j := range js {
		nm.locs[j] = chunkLoc{shard: uint16(s.id), loc: copies[n]}
	}
	// A directory keeps its form and length (a checkpoint's replay recognises the copy by it):
	// a patch keeps its splices, against a copy of its base when the base or a group of it
	// moved.
	copiedBase := man.base != nil && relocatedPatch(man, nm, js, s.id, seg)
	e = s.ix.entry(i)
	mh.ExpireAt = e.expireAt
	loc, lsn, err := ks.appendChunkedLocked(s, mh, mext, key, nm, nil, nil)
	if err != nil {
		abandon()
		return true, err
	}
	s.log.MarkDead(mloc, mn)
	for _, j := range js {
		ks.markChunkDead(man, j)
	}
	if copiedBase {
		ks.markBaseDead(man.base)
	}
	if nm.g != nil {
		ks.dirs.drop(headLoc(s, e))
		ks.dirs.put(chunkLoc{shard: uint16(s.id), loc: loc}, nm)
	}
	e.seg, e.off = loc.Seg, loc.Off
	if invariants {
		ks.checkEntryLocked(s, i)
	}
	ks.rc.moved.Add(uint64(vlog.RecordSize(len(mext), len(key), nm.size())))
	if copiedBase {
		ks.rc.moved.Add(uint64(nm.base.recSize()))
	}
	return true, s.log.Flush(lsn, false)
}

// pointsAtLocked reports whether key's entry is live and points at the record at loc.
func (ks *Keyspace) pointsAtLocked(s *shard, h uint64, db uint8, key []byte, loc uint64) bool {
	i, _, ok := s.ix.find(uint32(h), db, key)
	return ok && s.ix.entry(i).loc() == loc && !s.ix.entry(i).expired(ks.opts.Now())
}

// planRelocation reads the manifests of the chunked values keys (see rewriteSegment) and
// returns those that have chunks, or their manifest, in segment seg, with what moving them out
// would kill elsewhere: the manifest of each that lies in another segment. Collecting seg frees
// its dead bytes but makes these dead, so a collection whose spill is not well below its gain
// would make no progress (with manifests large against segments, two segments could hand the
// same chunks back and forth for ever). A key whose manifest cannot be read is kept, at no cost:
// relocateChunked sorts it out.
func (ks *Keyspace) planRelocation(s *shard, seg uint32, keys map[string]uint64) ([]string, int64) {
	type cand struct {
		key    string
		loc    vlog.Loc
		n      int64
		length int64
	}
	var cands []cand
	s.mu.Lock()
	for k := range keys {
		db, key := k[0], []byte(k[1:])
		if i, _, ok := s.ix.find(uint32(ks.hash(db, key)), db, key); ok {
			if e := s.ix.entry(i); e.chunked() {
				cands = append(cands, cand{k, vlog.Loc{Seg: e.seg, Off: e.off}, s.recSize(e), int64(e.vlen)})
			}
		}
	}
	s.mu.Unlock()
	rs := make([]recRead, len(cands))
	for i, c := range cands {
		rs[i] = recRead{log: s.log, loc: c.loc, n: int(c.n)}
	}
	var move []string
	var spill int64
	ks.readRecords(rs, false, func(i int, rec []byte, err error) error {
		c := cands[i]
		ks.rc.scanned.Add(uint64(c.n))
		var m *manifest
		if err == nil {
			m, _, err = s.manifestOf(rec, c.key[0], []byte(c.key[1:]), c.length)
		}
		if err == nil {
			err = ks.resolveDir(m)
		}
		here := err != nil || c.loc.Seg == seg || m.base != nil && m.base.loc.in(s.id, seg)
		for j := 0; m != nil && !here && j < len(m.locs); j++ {
			here = m.locs[j].in(s.id, seg)
		}
		if here {
			move = append(move, c.key)
			if err == nil && c.loc.Seg != seg {
				spill += c.n
			}
			if err == nil && m.baseCopied(s.id, seg) && m.base.loc.loc.Seg != seg {
				spill += m.base.recSize() // the copy kills the base where it lies
			}
		}
		return nil
	})
	return move, spill
}
