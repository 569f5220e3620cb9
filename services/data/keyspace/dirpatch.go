package keyspace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// Patch directories. A grouped value's directory is about 25 bytes a group, so a one-level
// directory rewritten by every edit costs the edit O(sqrt(size)) bytes at the best group size
// (GroupTarget): 25 KB for each XADD to a 1M-entry stream, more than the entry by a thousand
// times. A large directory is therefore kept in two records: a base, a sub-record of the object
// (vlog.KindSub, its Sub an id from the object's counter, so never mistaken for a group) holding
// a whole directory ('G'), and the key's put record, a patch ('P') naming the base and the
// splices that turn its groups into the value's. An edit writes the groups it changed and a new
// patch against the same base, a few dozen bytes when it changed a group or two; when the patch
// grows past about the square root of 64 times the base's size (patchLimit), the edit writes a
// new base instead, so the base's cost is spread over many edits. A directory under
// patchMinDir bytes stays one record.
//
// # Patch
//
//	0  magic    byte     'P'
//	1  object   uint64   as a directory's
//	9  next     uint64
//	17 count    uint32   groups of the value (after the splices)
//	21 metaLen  uint32
//	25 base     shard uint16, segment uint32, offset uint32: the base's record
//	35 baseSub  uint64   its Sub field
//	43 baseLen  uint32   its payload length
//	47 splices  uint32
//	51 meta     metaLen bytes
//	   splices  each (at uvarint, del uvarint, ins uvarint, then ins groups as a directory's):
//	            base groups [at, at+del) replaced by ins groups, in ascending order of at
//
// The base is written before the patch in the same log (as groups are), so a patch that
// survived a crash has its base. It is live while the key's patch names it: like a group, it is
// marked dead when a commit writes a directory without it, read by the collector through the
// object table and moved by relocateChunked, which keeps the patch (its form and length, by
// which a checkpoint's replay knows the copy) against a copy of the base with the same Sub.
//
// # Reading
//
// A reader of a patch needs its base: resolveDir reads it (one more read) unless the keyspace's
// cache (dirCache, dirCacheBytes of DRAM) holds it. The cache also holds each key's current
// directory resolved, which the commit that wrote it leaves there, so the next transaction on
// the key reads its groups alone. Both are keyed by the location of their record: records never
// change once written and segment ids are never reused, so the cache needs no invalidation.
const (
	patchMagic  = 'P'
	patchHeader = 51
	// dirCacheBytes bounds the DRAM of the directory cache.
	dirCacheBytes = 64 << 20
)

// patchMinDir is the directory size from which a directory is a base and patches (tests lower
// it to make every directory one).
var patchMinDir = 4 << 10

// dirBase is the base of a patch directory.
type dirBase struct {
	loc   chunkLoc
	sub   uint64
	n     int       // its payload length
	man   *manifest // the base decoded, once resolved (a directory without base)
	fresh bool      // written by the commit that planned it (its loc is set then)
}

// recSize is the size of the base's record.
func (b *dirBase) recSize() int64 { return vlog.RecordSize(0, oidSize, b.n) }

// in reports whether l lies in segment seg of shard sid.
func (l chunkLoc) in(sid int, seg uint32) bool { return int(l.shard) == sid && l.loc.Seg == seg }

// dirSplice replaces base groups [at, at+del) with groups [from, from+ins) of the directory.
type dirSplice struct{ at, del, from, ins int }

// groupEntrySize is the encoded size of group j of g.
func groupEntrySize(g *groupDir, j int) int {
	return manifestLocSize + uvarintLen(int(g.ids[j])) + uvarintLen(g.lens[j]) + uvarintLen(len(g.sums[j])) + len(g.sums[j])
}

func appendGroupEntry(dst []byte, m *manifest, j int) []byte {
	g, l := m.g, m.locs[j]
	dst = binary.LittleEndian.AppendUint16(dst, l.shard)
	dst = binary.LittleEndian.AppendUint32(dst, l.loc.Seg)
	dst = binary.LittleEndian.AppendUint32(dst, l.loc.Off)
	dst = binary.AppendUvarint(dst, g.ids[j])
	dst = binary.AppendUvarint(dst, uint64(g.lens[j]))
	dst = binary.AppendUvarint(dst, uint64(len(g.sums[j])))
	return append(dst, g.sums[j]...)
}

// patchSize is the payload size of m's patch.
func patchSize(m *manifest, spl []dirSplice) int {
	n := patchHeader + len(m.g.meta)
	for _, s := range spl {
		n += uvarintLen(s.at) + uvarintLen(s.del) + uvarintLen(s.ins)
		for j := s.from; j < s.from+s.ins; j++ {
			n += groupEntrySize(m.g, j)
		}
	}
	return n
}

// patchLimit is the largest patch written against a base of n bytes: about the square root of
// 64 n, so that a patch and the base's share of a rewrite cost an edit about the same.
func patchLimit(n int) int { return max(512, int(math.Sqrt(64*float64(n)))) }

func (m *manifest) encodePatch(dst []byte) []byte {
	g, b := m.g, m.base
	dst = append(dst, patchMagic)
	dst = binary.LittleEndian.AppendUint64(dst, m.oid)
	dst = binary.LittleEndian.AppendUint64(dst, g.next)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(g.ids)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(g.meta)))
	dst = binary.LittleEndian.AppendUint16(dst, b.loc.shard)
	dst = binary.LittleEndian.AppendUint32(dst, b.loc.loc.Seg)
	dst = binary.LittleEndian.AppendUint32(dst, b.loc.loc.Off)
	dst = binary.LittleEndian.AppendUint64(dst, b.sub)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(b.n))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(m.splices)))
	dst = append(dst, g.meta...)
	for _, s := range m.splices {
		dst = binary.AppendUvarint(dst, uint64(s.at))
		dst = binary.AppendUvarint(dst, uint64(s.del))
		dst = binary.AppendUvarint(dst, uint64(s.ins))
		for j := s.from; j < s.from+s.ins; j++ {
			dst = appendGroupEntry(dst, m, j)
		}
	}
	return dst
}

// decodePatch decodes a patch (b is a copy the manifest may keep). Until resolveDir applies it
// to its base, the manifest's groups are the splices' inserted ones, in order.
func decodePatch(b []byte) (*manifest, error) {
	bad := func(what string) (*manifest, error) {
		return nil, fmt.Errorf("%w: patch directory of %d bytes: %s", vlog.ErrCorrupt, len(b), what)
	}
	if len(b) < patchHeader || b[0] != patchMagic {
		return bad("no header")
	}
	count := int(binary.LittleEndian.Uint32(b[17:]))
	metaLen := int(binary.LittleEndian.Uint32(b[21:]))
	nspl := int(binary.LittleEndian.Uint32(b[47:]))
	p := b[patchHeader:]
	if metaLen > len(p) || nspl > len(p) || count > math.MaxInt32 {
		return bad("counts out of range")
	}
	base := &dirBase{
		loc: chunkLoc{shard: binary.LittleEndian.Uint16(b[25:]),
			loc: vlog.Loc{Seg: binary.LittleEndian.Uint32(b[27:]), Off: binary.LittleEndian.Uint32(b[31:])}},
		sub: binary.LittleEndian.Uint64(b[35:]),
		n:   int(binary.LittleEndian.Uint32(b[43:])),
	}
	g := &groupDir{next: binary.LittleEndian.Uint64(b[9:]), meta: p[:metaLen:metaLen]}
	m := &manifest{length: int64(len(b)), oid: binary.LittleEndian.Uint64(b[1:]), g: g, base: base, count: count}
	if base.sub >= g.next || base.n < dirHeader {
		return bad("base out of range")
	}
	p = p[metaLen:]
	uv := func() (int, bool) {
		v, k := binary.Uvarint(p)
		if k <= 0 || v > math.MaxInt32 {
			return 0, false
		}
		p = p[k:]
		return int(v), true
	}
	last := 0
	for range nspl {
		at, ok1 := uv()
		del, ok2 := uv()
		ins, ok3 := uv()
		if !ok1 || !ok2 || !ok3 || at < last || ins > len(p)/manifestLocSize {
			return bad("splice out of range")
		}
		m.splices = append(m.splices, dirSplice{at: at, del: del, from: len(m.locs), ins: ins})
		last = at + del
		for range ins {
			if len(p) < manifestLocSize {
				return bad("truncated")
			}
			l := chunkLoc{shard: binary.LittleEndian.Uint16(p),
				loc: vlog.Loc{Seg: binary.LittleEndian.Uint32(p[2:]), Off: binary.LittleEndian.Uint32(p[6:])}}
			p = p[manifestLocSize:]
			id, ok1 := uv()
			n, ok2 := uv()
			sl, ok3 := uv()
			if !ok1 || !ok2 || !ok3 || uint64(id) >= g.next || n > 1<<30 || sl > len(p) {
				return bad("group out of range")
			}
			m.locs = append(m.locs, l)
			g.ids, g.lens, g.sums = append(g.ids, uint64(id)), append(g.lens, n), append(g.sums, p[:sl:sl])
			p = p[sl:]
		}
	}
	if len(p) != 0 {
		return bad("trailing bytes")
	}
	if count > base.n/manifestLocSize+len(m.locs) {
		return bad("more groups than its base and splices can hold") // before applyPatch allocates them
	}
	return m, nil
}

// resolved reports whether m's groups are the value's: a manifest, a directory, or a patch
// applied to its base.
func (m *manifest) resolved() bool { return m.base == nil || m.base.man != nil }

// applyPatch makes m's groups the value's: its base's with its splices applied.
func (m *manifest) applyPatch(bm *manifest) error {
	bg := bm.g
	if bm.oid != m.oid || bm.base != nil {
		return fmt.Errorf("%w: the base of a patch directory is another object's", vlog.ErrCorrupt)
	}
	ins := *m.g
	insLocs := m.locs
	g := &groupDir{next: ins.next, meta: ins.meta, ids: make([]uint64, 0, m.count), lens: make([]int, 0, m.count), sums: make([][]byte, 0, m.count)}
	locs := make([]chunkLoc, 0, m.count)
	prev := 0
	spl := make([]dirSplice, len(m.splices))
	for i, s := range m.splices {
		if s.at < prev || s.at+s.del > len(bg.ids) || len(g.ids)+(s.at-prev)+s.ins > m.count {
			return fmt.Errorf("%w: a patch directory's splice lies outside its base", vlog.ErrCorrupt)
		}
		g.ids, g.lens, g.sums = append(g.ids, bg.ids[prev:s.at]...), append(g.lens, bg.lens[prev:s.at]...), append(g.sums, bg.sums[prev:s.at]...)
		locs = append(locs, bm.locs[prev:s.at]...)
		spl[i] = dirSplice{at: s.at, del: s.del, from: len(g.ids), ins: s.ins}
		g.ids, g.lens, g.sums = append(g.ids, ins.ids[s.from:s.from+s.ins]...), append(g.lens, ins.lens[s.from:s.from+s.ins]...), append(g.sums, ins.sums[s.from:s.from+s.ins]...)
		locs = append(locs, insLocs[s.from:s.from+s.ins]...)
		prev = s.at + s.del
	}
	g.ids, g.lens, g.sums = append(g.ids, bg.ids[prev:]...), append(g.lens, bg.lens[prev:]...), append(g.sums, bg.sums[prev:]...)
	locs = append(locs, bm.locs[prev:]...)
	if len(g.ids) != m.count {
		return fmt.Errorf("%w: a patch directory of %d groups makes %d of its base", vlog.ErrCorrupt, m.count, len(g.ids))
	}
	m.g, m.locs, m.splices, m.base.man = g, locs, spl, bm
	return nil
}

// diffDir returns the splices that turn base's groups into m's: a group m keeps from base, in
// order and unchanged, is not in them. Groups keep their order in a value, so one pass does;
// most groups are the base's next one or newer than the base, and only the others are looked
// up by id.
func diffDir(base, m *manifest) []dirSplice {
	var at map[uint64]int
	var spl []dirSplice
	b, from := 0, 0 // next base group; first group of m not yet matched
	for j, id := range m.g.ids {
		if id >= base.g.next {
			continue // a group newer than the base
		}
		bj := b
		for bj < len(base.g.ids) && bj < b+3 && base.g.ids[bj] != id {
			bj++ // a group or two replaced
		}
		if bj >= len(base.g.ids) || base.g.ids[bj] != id {
			if at == nil {
				at = make(map[uint64]int, len(base.g.ids))
				for k, id := range base.g.ids {
					at[id] = k
				}
			}
			var ok bool
			if bj, ok = at[id]; !ok || bj < b {
				continue
			}
		}
		if base.locs[bj] != m.locs[j] || base.g.lens[bj] != m.g.lens[j] || !bytes.Equal(base.g.sums[bj], m.g.sums[j]) {
			continue
		}
		if bj > b || j > from {
			spl = append(spl, dirSplice{at: b, del: bj - b, from: from, ins: j - from})
		}
		b, from = bj+1, j+1
	}
	if b < len(base.g.ids) || from < len(m.g.ids) {
		spl = append(spl, dirSplice{at: b, del: len(base.g.ids) - b, from: from, ins: len(m.g.ids) - from})
	}
	return spl
}

// planPatch decides how m, the directory a commit writes over prev (the directory it read, of
// the same object; nil for a new object), is stored: whole when small, else a patch against
// prev's base when small enough, else a patch against a new base. It sets m.length.
func planPatch(m, prev *manifest) {
	full := dirSize(m.g)
	m.base, m.splices, m.length = nil, nil, int64(full)
	if full < patchMinDir {
		return
	}
	if prev != nil && prev.base != nil && prev.base.man != nil {
		spl := diffDir(prev.base.man, m)
		if n := patchSize(m, spl); n <= patchLimit(prev.base.n) {
			b := *prev.base
			b.fresh = false
			m.base, m.splices, m.length, m.count = &b, spl, int64(n), len(m.locs)
			return
		}
	}
	m.base = &dirBase{sub: m.g.next, fresh: true}
	m.g.next++
	m.base.n = dirSize(m.g)
	m.length, m.count = int64(patchSize(m, nil)), len(m.locs)
}

// baseView is m as a whole directory (its groups, no base), what a new base holds.
func (m *manifest) baseView() *manifest {
	c := *m
	c.base, c.splices, c.count = nil, nil, 0
	c.length = int64(dirSize(c.g))
	return &c
}

// dirCache holds decoded directories (bases and keys' resolved ones) by the location of their
// record, up to dirCacheBytes, evicting the oldest first.
type dirCache struct {
	mu           sync.Mutex
	m            map[chunkLoc]*manifest
	order        []chunkLoc // insertion order, for eviction
	bytes        int
	hits, misses uint64
}

func (c *dirCache) stats() DirCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return DirCacheStats{Entries: int64(len(c.m)), Bytes: int64(c.bytes), Hits: c.hits, Misses: c.misses}
}

// dirCost is the DRAM a cached directory holds, about: its arrays (a location, id, length and
// summary slice, 56 bytes a group) and its summaries' and meta's bytes. Measured on decoded
// 2,000-group directories: 73 bytes a group for a base (its decoding keeps the record's bytes),
// 53 for a resolved patch (its summaries are its base's).
func dirCost(m *manifest) int {
	n := len(m.locs)*56 + len(m.g.meta) + 128
	for _, s := range m.g.sums {
		n += len(s)
	}
	return n
}

func (c *dirCache) get(l chunkLoc) *manifest {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.m[l]
	if m != nil {
		c.hits++
	} else {
		c.misses++
	}
	return m
}

func (c *dirCache) drop(l chunkLoc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.m[l]; ok {
		c.bytes -= dirCost(m)
		delete(c.m, l)
		// Its place in order stays until eviction reaches it, which skips it then; the order
		// is compacted when it holds many such places.
		if len(c.order) > 64 && len(c.order) > 2*len(c.m) {
			c.order = slices.DeleteFunc(c.order, func(o chunkLoc) bool { _, ok := c.m[o]; return !ok })
		}
	}
}

func (c *dirCache) put(l chunkLoc, m *manifest) {
	cost := dirCost(m)
	if cost > dirCacheBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[chunkLoc]*manifest{}
	}
	if _, ok := c.m[l]; ok {
		return
	}
	for c.bytes+cost > dirCacheBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		if om, ok := c.m[old]; ok {
			c.bytes -= dirCost(om)
			delete(c.m, old)
		}
	}
	c.m[l] = m
	c.order = append(c.order, l)
	c.bytes += cost
}

// resolveDir applies a patch directory to its base, reading the base unless the cache holds
// it. Other manifests are left as they are. A base whose segment is gone fails with
// vlog.ErrSegmentGone (wrapped), which the reader treats as a chunk's: the value moved.
func (ks *Keyspace) resolveDir(m *manifest) error {
	if m == nil || m.resolved() {
		return nil
	}
	b := m.base
	if bm := ks.dirs.get(b.loc); bm != nil {
		return m.applyPatch(bm)
	}
	if int(b.loc.shard) >= len(ks.shards) {
		return fmt.Errorf("%w: a patch directory names shard %d", vlog.ErrCorrupt, b.loc.shard)
	}
	var bm *manifest
	err := ks.readRecords([]recRead{{log: ks.logOf(b.loc.shard), loc: b.loc.loc, n: int(b.recSize())}}, false, func(_ int, rec []byte, err error) error {
		if err != nil {
			return err
		}
		r, err := vlog.DecodeRecord(rec)
		if err != nil {
			return err
		}
		h := r.Header
		if h.Kind != vlog.KindSub || len(r.Key) != oidSize || binary.LittleEndian.Uint64(r.Key) != m.oid || h.Sub != b.sub || len(r.Val) != b.n {
			return fmt.Errorf("%w: a patch directory names a record that is not its base", vlog.ErrCorrupt)
		}
		bm, err = decodeDir(r.Val)
		if err == nil && bm.base != nil {
			err = fmt.Errorf("%w: the base of a patch directory is a patch", vlog.ErrCorrupt)
		}
		return err
	})
	if err != nil {
		if errors.Is(err, vlog.ErrSegmentGone) {
			return fmt.Errorf("keyspace: %w", err)
		}
		return ks.readErr(err)
	}
	ks.dirs.put(b.loc, bm)
	return m.applyPatch(bm)
}

// baseIndex maps each group of m, a resolved patch directory, to its index in the base, or -1
// for a group its splices inserted.
func (m *manifest) baseIndex() []int {
	out := make([]int, len(m.locs))
	b, j := 0, 0
	for _, s := range m.splices {
		for ; b < s.at; b, j = b+1, j+1 {
			out[j] = b
		}
		for range s.ins {
			out[j] = -1
			j++
		}
		b += s.del
	}
	for ; j < len(out); b, j = b+1, j+1 {
		out[j] = b
	}
	return out
}

// baseCopied reports whether relocating what segment seg of shard sid holds of m, a resolved
// directory, copies its base: the base, or a group the base names, lies there.
func (m *manifest) baseCopied(sid int, seg uint32) bool {
	if m.base == nil {
		return false
	}
	if m.base.loc.in(sid, seg) {
		return true
	}
	for j, bi := range m.baseIndex() {
		if bi >= 0 && m.locs[j].in(sid, seg) {
			return true
		}
	}
	return false
}

// relocatedPatch makes nm, a whole clone of the resolved patch directory man whose groups js
// moved out of segment seg of shard sid, the same patch: man's splices against man's base, or
// against a copy of it (the same Sub, naming its moved groups where they are now) when
// baseCopied. Its length is man's. It reports whether the base is copied.
func relocatedPatch(man, nm *manifest, js []int, sid int, seg uint32) bool {
	nb := *man.base
	nb.fresh = false
	if man.baseCopied(sid, seg) {
		bi := man.baseIndex()
		bm := man.base.man.clone()
		for _, j := range js {
			if bi[j] >= 0 {
				bm.locs[bi[j]] = nm.locs[j]
			}
		}
		nb.man, nb.fresh = bm, true
	}
	nm.base, nm.splices, nm.count, nm.length = &nb, man.splices, man.count, man.length
	return nb.fresh
}

// headLoc is where the record of entry e of shard s lies.
func headLoc(s *shard, e *entry) chunkLoc {
	return chunkLoc{shard: uint16(s.id), loc: vlog.Loc{Seg: e.seg, Off: e.off}}
}

// markBaseDead records that no directory names base b any more, and drops it from the cache.
func (ks *Keyspace) markBaseDead(b *dirBase) {
	if b != nil && int(b.loc.shard) < len(ks.shards) {
		ks.logOf(b.loc.shard).MarkChunkDead(b.loc.loc, b.recSize())
		ks.dirs.drop(b.loc)
	}
}
