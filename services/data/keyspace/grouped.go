package keyspace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// Grouped values. A value of any type but a string (a hash, set, list, sorted set or stream)
// whose encoding is longer than Options.GroupThreshold (GroupMin, 32 KiB; the group-threshold setting) is not one record but a
// directory and groups: each group is a sub-record (vlog.KindSub) of a few KiB, and the
// directory, an ordinary put record with vlog.FlagDir, names them. It is the same layer as a
// large string's manifest and chunks (chunked.go), and shares all of its machinery: the
// directory is a manifest whose groups have lengths, ids and summaries of their own (groupDir);
// liveness is through it, the collector moves groups and rewrites the directory by
// compare-and-swap (relocateChunked), removal queues it so its groups are counted dead
// (drainLocked), and the index entry carries flagChunked and, in vlen, the directory's size. A
// string is chunked by offset; every other type is grouped by its own codec (GroupCodec), which
// the package defining the type's encoding registers: a hash and a set by member hash, a list by
// position. A type without a codec is grouped by plain cuts of its encoding, so that every large
// value is stored the same way.
//
// # Directory
//
//	0  magic   byte     'G'
//	1  object  uint64   the object id its groups carry in their key field
//	9  next    uint64   the id the next new group gets
//	17 count   uint32   groups
//	21 metaLen uint32   then metaLen bytes of the type's own header (its count, flags, ...)
//	   groups  count x (shard uint16, segment uint32, offset uint32, id uvarint, length uvarint,
//	                    sumLen uvarint, sum): in the type's order
//
// A group's record carries its id in its Sub field, so a reader checks that it read the group the
// directory names (ids are never reused within an object, so a group moved or replaced cannot be
// mistaken for another). A summary is what the type needs to pick groups without reading them:
// a hash's lowest member hash and count, a list's element count.
//
// # Operations
//
// A transaction sees a grouped value through Tx.Dir (the directory, read once) and Tx.Groups (the
// groups it asks for, read in one batch), and writes it back with Tx.PutGroups: a new directory
// in which every group it did not change is kept as it is (its record stays where it is) and
// every changed one is new. So a focused command (HGET, HSET, LINDEX, ...) reads and writes a
// constant number of records: the directory and the groups it touches. A whole-value read
// (Tx.Value, Get: HGETALL, RENAME, DUMP, ...) reads every group in one batch of reads and joins
// them with the codec, and a whole value put (Tx.Put) longer than the threshold is split by it;
// so commands that treat a value whole work on grouped values unchanged.
//
// # Memory
//
// Nothing per group is kept in DRAM but a directory while it is cached, decoded (dirpatch.go:
// 53-73 bytes a group, under 1% of the value at the group sizes GroupTarget picks). An object costs its index entry and its object id in shard.objs, like a chunked
// string. The directory costs about 20-30 bytes per group on disk; one over patchMinDir is a
// base and a patch, so an edit rewrites the patch, not the directory.
const (
	// GroupMin is the encoded length above which a value that is not a string is grouped.
	GroupMin = 32 << 10

	dirMagic  = 'G'
	dirHeader = 25
)

var errNotGrouped = errors.New("keyspace: internal error: groups asked of a value that is not grouped")

// groupDir is what a grouped value's directory adds to a manifest.
type groupDir struct {
	next uint64
	meta []byte
	ids  []uint64
	lens []int
	sums [][]byte
}

// dirSize is the payload size of a directory.
func dirSize(g *groupDir) int {
	n := dirHeader + len(g.meta)
	for j := range g.ids {
		n += groupEntrySize(g, j)
	}
	return n
}

func (m *manifest) encodeDir(dst []byte) []byte {
	g := m.g
	dst = append(dst, dirMagic)
	dst = binary.LittleEndian.AppendUint64(dst, m.oid)
	dst = binary.LittleEndian.AppendUint64(dst, g.next)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(g.ids)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(g.meta)))
	dst = append(dst, g.meta...)
	for j := range m.locs {
		dst = appendGroupEntry(dst, m, j)
	}
	return dst
}

// decodeDir decodes a grouped value's directory. Its meta and sums are in a copy of b: callers
// decode records whose buffers go back to the log's pool when the read is released (a reader's
// Value, the collector's rewrite of the directory), while the directory is used after that.
func decodeDir(b []byte) (*manifest, error) {
	bad := func(what string) (*manifest, error) {
		return nil, fmt.Errorf("%w: directory of %d bytes: %s", vlog.ErrCorrupt, len(b), what)
	}
	if len(b) > 0 && b[0] == patchMagic {
		return decodePatch(bytes.Clone(b))
	}
	if len(b) < dirHeader || b[0] != dirMagic {
		return bad("no header")
	}
	b = bytes.Clone(b)
	count := int(binary.LittleEndian.Uint32(b[17:]))
	metaLen := int(binary.LittleEndian.Uint32(b[21:]))
	p := b[dirHeader:]
	if metaLen > len(p) || count > len(p)/manifestLocSize {
		return bad("counts out of range")
	}
	g := &groupDir{next: binary.LittleEndian.Uint64(b[9:]), meta: p[:metaLen:metaLen],
		ids: make([]uint64, count), lens: make([]int, count), sums: make([][]byte, count)}
	m := &manifest{length: int64(len(b)), oid: binary.LittleEndian.Uint64(b[1:]), locs: make([]chunkLoc, count), g: g}
	p = p[metaLen:]
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(p)
		if k <= 0 {
			return 0, false
		}
		p = p[k:]
		return v, true
	}
	for j := 0; j < count; j++ {
		if len(p) < manifestLocSize {
			return bad("truncated")
		}
		m.locs[j] = chunkLoc{shard: binary.LittleEndian.Uint16(p),
			loc: vlog.Loc{Seg: binary.LittleEndian.Uint32(p[2:]), Off: binary.LittleEndian.Uint32(p[6:])}}
		p = p[manifestLocSize:]
		id, ok1 := uv()
		n, ok2 := uv()
		sl, ok3 := uv()
		if !ok1 || !ok2 || !ok3 || id >= g.next || n > 1<<30 || sl > uint64(len(p)) {
			return bad("group out of range")
		}
		g.ids[j], g.lens[j], g.sums[j] = id, int(n), p[:sl:sl]
		p = p[sl:]
	}
	if len(p) != 0 {
		return bad("trailing bytes")
	}
	return m, nil
}

// decodeManifestOf decodes the manifest of a chunked string or the directory of a grouped value
// of another type.
func decodeManifestOf(b []byte, vtype uint8, chunk int) (*manifest, error) {
	if vtype&0xf == TypeString {
		return decodeManifest(b, chunk)
	}
	return decodeDir(b)
}

// Group is one group of a grouped value's directory: the length of its payload and the summary
// its type keeps of it. A Group taken from a Directory a transaction read stands for that group
// as it is on disk; NewGroup makes one with new contents.
type Group struct {
	Len  int
	Sum  []byte
	from int    // its index in the directory the transaction read; -1 for a new group
	data []byte // a new group's payload
}

// NewGroup is a group holding data, with summary sum.
func NewGroup(data, sum []byte) Group { return Group{Len: len(data), Sum: sum, from: -1, data: data} }

// Directory is a grouped value's directory: the type's header and its groups in order.
type Directory struct {
	Meta   []byte
	Groups []Group
}

// Bytes is the size of every group's payload.
func (d *Directory) Bytes() int64 {
	var n int64
	for _, g := range d.Groups {
		n += int64(g.Len)
	}
	return n
}

// GroupCodec is how a type's encoded value is grouped.
type GroupCodec struct {
	// Split cuts a whole encoded value into a directory whose groups are all new (NewGroup);
	// ok false leaves the value to the plain cuts every type without a codec gets.
	Split func(val []byte) (d *Directory, ok bool)
	// Join makes the whole encoded value of a directory's meta and every one of its groups.
	Join func(meta []byte, groups [][]byte) ([]byte, error)
}

var groupCodecs [16]*GroupCodec

// RegisterGroupCodec sets the codec of type vtype (not a string). It is meant for package
// initialisation.
func RegisterGroupCodec(vtype uint8, c *GroupCodec) { groupCodecs[vtype&0xf] = c }

// plainCodec cuts an encoding into pieces and joins them back: the grouping of a type without a
// codec of its own.
var plainCodec = GroupCodec{
	Split: func(val []byte) (*Directory, bool) {
		t := GroupTarget(int64(len(val)))
		d := &Directory{}
		for off := 0; off < len(val); off += t {
			d.Groups = append(d.Groups, NewGroup(val[off:min(off+t, len(val))], nil))
		}
		return d, true
	},
	Join: func(_ []byte, groups [][]byte) ([]byte, error) {
		n := 0
		for _, g := range groups {
			n += len(g)
		}
		out := make([]byte, 0, n)
		for _, g := range groups {
			out = append(out, g...)
		}
		return out, nil
	},
}

// splitValue groups val, a whole value of type vtype.
func splitValue(val []byte, vtype uint8) *Directory {
	if c := groupCodecs[vtype&0xf]; c != nil {
		if d, ok := c.Split(val); ok {
			return d
		}
	}
	d, _ := plainCodec.Split(val)
	return d
}

// joinValue makes the whole value of type vtype from a directory's meta and groups.
func joinValue(vtype uint8, meta []byte, groups [][]byte) ([]byte, error) {
	c := groupCodecs[vtype&0xf]
	if c == nil || isPlain(meta) {
		c = &plainCodec
	}
	v, err := c.Join(meta, groups)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", vlog.ErrCorrupt, err)
	}
	return v, nil
}

// isPlain reports whether a directory's meta says plain cuts: a codec must write a meta, the
// plain cuts write none.
func isPlain(meta []byte) bool { return len(meta) == 0 }

// GroupTarget is the size a type keeps its groups near for a value of total bytes: the square
// root of twice the total, between 16 KiB and 64 KiB. An edit rewrites a group and a patch of
// the directory (dirpatch.go), whose share of the base grows with the groups' count, so groups
// grow slowly with the value; at least 16 KiB keeps a large value's decoded directory and base
// in DRAM (53 and 73 bytes a group, dirCost) under 1% of the value. A 30 MB value has 16 KiB
// groups; 2 GB, 64 KiB.
func GroupTarget(total int64) int {
	t := int(math.Sqrt(float64(total) * 2))
	return min(max(t, 16<<10), 64<<10)
}

// GroupMin is the encoded length above which a value that is not a string is grouped.
func (ks *Keyspace) GroupMin() int { return ks.opts.GroupThreshold }

// Grouped reports whether key i's value is grouped, as the transaction sees it, without reading
// anything. A value put whole in this transaction is not, until it commits.
func (tx *Tx) Grouped(i int) bool {
	k := tx.keys[i]
	switch {
	case !k.found || k.op == opPut:
		return false
	case k.op == opGroups:
		return true
	}
	return k.entry.chunked() && k.entry.vtype() != TypeString
}

// Dir returns key i's directory, nil when its value is not grouped (Grouped). Like Value, it may
// return an error the function must return as is. The directory must not be modified: a new one
// is made of its groups and new ones, for PutGroups.
func (tx *Tx) Dir(i int) (*Directory, error) {
	k := tx.keys[i]
	if k.op == opGroups {
		return k.gview, nil
	}
	if !tx.Grouped(i) {
		return nil, nil
	}
	if !k.manValid() {
		k.wantMan = true
		return nil, errNeedValue
	}
	if k.dview == nil {
		g := k.man.g
		d := &Directory{Meta: g.meta, Groups: make([]Group, len(g.ids))}
		for j := range d.Groups {
			d.Groups[j] = Group{Len: g.lens[j], Sum: g.sums[j], from: j}
		}
		k.dview = d
	}
	return k.dview, nil
}

// Groups returns the payloads of groups js of key i's directory (as Dir returns it), which must
// not be modified. Like Value, it may return an error the function must return as is; the groups
// it lacks are then read in one batch.
func (tx *Tx) Groups(i int, js []int) ([][]byte, error) {
	k := tx.keys[i]
	d, err := tx.Dir(i)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, errNotGrouped
	}
	out := make([][]byte, len(js))
	var need bool
	for n, j := range js {
		g := d.Groups[j]
		if g.from < 0 {
			out[n] = g.data
		} else if b, ok := k.parts[g.from]; ok && k.manValid() {
			out[n] = b
		} else {
			k.wantParts, need = append(k.wantParts, g.from), true
		}
	}
	if need {
		return nil, errNeedValue
	}
	return out, nil
}

// PutGroups sets key i to the grouped value d (type vtype) with expireAt: its groups taken from
// the directory Dir returned in this attempt stay where they are, the new ones are written, and
// the old groups d does not name are dead once it commits. A d of no group removes the key.
func (tx *Tx) PutGroups(i int, d *Directory, expireAt int64, vtype uint8) error {
	k := tx.keys[i]
	if len(d.Groups) == 0 {
		tx.Delete(i)
		return nil
	}
	for _, g := range d.Groups {
		if g.from >= 0 && (!k.manValid() || k.man.g == nil || g.from >= len(k.man.g.ids)) {
			return fmt.Errorf("keyspace: internal error: a directory of %q keeps a group of another", k.key)
		}
	}
	k.op, k.gview, k.expireAt, k.vtype, k.found = opGroups, d, expireAt, vtype&^vtChunked, true
	k.val, k.edits, k.gplan = nil, nil, nil
	return nil
}

// groupedValue is key k's whole value when the transaction grouped it (opGroups): the groups it
// has, joined; the groups it lacks are asked for.
func (tx *Tx) groupedValue(i int) ([]byte, error) {
	k := tx.keys[i]
	js := make([]int, len(k.gview.Groups))
	for j := range js {
		js[j] = j
	}
	gs, err := tx.Groups(i, js)
	if err != nil {
		return nil, err
	}
	return joinValue(k.vtype, k.gview.Meta, gs)
}

// groupsPlan is the manifest k's grouped value is committed as, and the groups of it that are
// new (to append), made once: for PutGroups, over the directory read (same object, its kept
// groups where they are); for a put of a whole value, its split, a new object.
func (k *txKey) groupsPlan() (*manifest, []int) {
	if k.gplan != nil {
		return k.gplan, k.gnew
	}
	if k.op == opPut {
		k.gview = splitValue(k.val, k.vtype)
	}
	k.gplan, k.gnew = k.planDir(k.gview)
	return k.gplan, k.gnew
}

// planDir is the manifest of directory d over k's, and its new groups: over a directory of the
// same object (PutGroups) its kept groups where they are and new ids from its counter; else a
// new object.
func (k *txKey) planDir(d *Directory) (*manifest, []int) {
	m := &manifest{oid: newObjectID(), locs: make([]chunkLoc, len(d.Groups)), g: &groupDir{meta: d.Meta,
		ids: make([]uint64, len(d.Groups)), lens: make([]int, len(d.Groups)), sums: make([][]byte, len(d.Groups))}}
	if k.op == opGroups && k.manValid() && k.man.g != nil {
		m.oid, m.g.next = k.man.oid, k.man.g.next
	}
	var prev *manifest
	if k.op == opGroups && k.manValid() && k.man.g != nil {
		prev = k.man
	}
	var fresh []int
	for j, gr := range d.Groups {
		m.g.sums[j] = gr.Sum
		if gr.from >= 0 {
			m.locs[j], m.g.ids[j], m.g.lens[j] = k.man.locs[gr.from], k.man.g.ids[gr.from], k.man.g.lens[gr.from]
			continue
		}
		m.g.ids[j], m.g.lens[j] = m.g.next, len(gr.data)
		m.g.next++
		fresh = append(fresh, j)
	}
	planPatch(m, prev)
	return m, fresh
}

// plannedDirSize is the size of the directory PutGroups will write for k, as Tx.Meta reports it
// before the commit plans it for good.
func (k *txKey) plannedDirSize() int {
	m, _ := k.planDir(k.gview)
	return int(m.length)
}

// groupsLocked commits k's grouped value (PutGroups, or a put of a large value of a type not a
// string): the new groups, then the directory. Over a directory of the same object, the old
// directory and exactly the groups the new one no longer names are dead; over anything else, the
// old record is queued dead as a removal's is. The shard lock is held.
func (tx *Tx) groupsLocked(se *Session, k *txKey, i uint32, found bool, ext []byte, code uint8) error {
	s := k.shard
	m, fresh := k.groupsPlan()
	same := k.op == opGroups && k.manValid() && k.man.oid == m.oid
	if same && (!found || s.ix.entry(i).loc() != k.manLoc) {
		// Update holds the shard locks from the attempt's start to its commit.
		return fmt.Errorf("keyspace: internal error: groups of %q committed over a changed value", k.key)
	}
	d := k.gview
	h := recordHeader(vlog.KindPut, k.db, k.vtype|vtChunked, k.expireAt, s.version+1, ext)
	loc, lsn, err := tx.ks.appendChunkedLocked(s, h, ext, k.key, m, fresh, func(j int) []byte { return d.Groups[j].data })
	s.version++
	if err != nil {
		return err
	}
	tx.noteLocked(se, k, lsn)
	if same {
		e := s.ix.entry(i)
		s.log.MarkDead(vlog.Loc{Seg: e.seg, Off: e.off}, s.recSize(e))
		kept := make([]bool, len(k.man.locs))
		for _, gr := range d.Groups {
			if gr.from >= 0 {
				kept[gr.from] = true
			}
		}
		for j, ok := range kept {
			if !ok {
				tx.ks.markChunkDead(k.man, j)
			}
		}
		if ob := k.man.base; ob != nil && (m.base == nil || m.base.loc != ob.loc) {
			tx.ks.markBaseDead(ob)
		}
	} else if found {
		s.markDeadLocked(s.ix.entry(i))
	}
	if found {
		tx.ks.dirs.drop(headLoc(s, s.ix.entry(i)))
	}
	v := valueRef{vtype: k.vtype | vtChunked, tx: code, expireAt: k.expireAt, seg: loc.Seg, off: loc.Off, vlen: uint32(m.length)}
	if _, _, err = s.pointLocked(i, found, uint32(k.hash), k.db, k.key, v); err != nil {
		return err
	}
	// The next transaction on the key finds its directory decoded and resolved.
	tx.ks.dirs.put(chunkLoc{shard: uint16(s.id), loc: loc}, m)
	s.registerLocked(m.oid, k.db, k.key)
	if invariants {
		tx.ks.checkKeyLocked(s, k.db, k.key)
	}
	return nil
}

// readGrouped reads every group of the directory m of a value of type vtype and joins them.
func (ks *Keyspace) readGrouped(m *manifest, vtype uint8) ([]byte, error) {
	js := make([]int, len(m.locs))
	for j := range js {
		js[j] = j
	}
	gs := make([][]byte, len(js))
	if err := ks.readChunks(m, js, func(i int, b []byte) { gs[i] = append([]byte(nil), b...) }); err != nil {
		return nil, err
	}
	v, err := joinValue(vtype, m.g.meta, gs)
	if err != nil {
		return nil, ks.readErr(err)
	}
	return v, nil
}
