package commands

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lavikdb/lavik/services/data/keyspace"
)

// Streams grouped by entry id. A stream whose encoding passes the keyspace's group threshold is
// stored as chunks of consecutive entries and one record of its consumer groups (keyspace/
// grouped.go). Each chunk is an encoded stream holding only entries, summary its entry count
// (uvarint), first and last ids; the consumer groups' record, last, is an encoded stream holding only
// the groups (their last ids, read counters, pending entries and consumers). The directory's meta
// is the stream's header: last id, entries added, largest deleted id, length, chunk count. So
// XADD reads and writes the last chunk (and, trimming, drops whole chunks from the front and cuts
// one), XRANGE and XREAD with a COUNT read the chunks from the one holding their start until
// they have enough, XREADGROUP reads those and the groups' record and writes the latter, XACK the
// groups' record alone, XLEN the directory. Other commands (XDEL, XTRIM, XCLAIM, XINFO, ...)
// read and write the stream whole.

var errBadSGroup = errors.New("ERR lavik: a grouped stream does not decode")

func smeta(h *streamValue, n, chunks int) []byte {
	b := []byte{streamFormat, 1}
	b = appendID(b, h.lastID)
	b = binary.AppendUvarint(b, h.entriesAdded)
	b = appendID(b, h.maxDeleted)
	b = binary.AppendUvarint(b, uint64(n))
	return binary.AppendUvarint(b, uint64(chunks))
}

func parseSMeta(m []byte) (h *streamValue, n, chunks int, err error) {
	if len(m) < 2 || m[0] != streamFormat || m[1] != 1 {
		return nil, 0, 0, errBadSGroup
	}
	r := &streamReader{blobReader: blobReader{m[2:]}}
	h = &streamValue{lastID: r.id(), entriesAdded: r.uvarint(), maxDeleted: r.id()}
	n, chunks = int(r.uvarint()), int(r.uvarint())
	if r.bad || len(r.b) != 0 {
		return nil, 0, 0, errBadSGroup
	}
	return h, n, chunks, nil
}

func sChunkSum(es []streamEntry) []byte {
	return appendID(appendID(binary.AppendUvarint(nil, uint64(len(es))), es[0].id), es[len(es)-1].id)
}

func parseSChunkSum(s []byte) (n int, first, last streamID, err error) {
	r := &streamReader{blobReader: blobReader{s}}
	n, first, last = int(r.uvarint()), r.id(), r.id()
	if r.bad || len(r.b) != 0 {
		return 0, first, last, errBadSGroup
	}
	return n, first, last, nil
}

// chunkValue is a chunk of entries es as it is encoded: a stream whose last id is theirs.
func chunkValue(es []streamEntry) *streamValue {
	c := &streamValue{entries: es}
	if len(es) > 0 {
		c.lastID = es[len(es)-1].id
	}
	return c
}

// cutEntries appends es as chunks of about target bytes.
func cutEntries(gs []keyspace.Group, es []streamEntry, target int) []keyspace.Group {
	start, acc := 0, 0
	emit := func(end int) {
		c := chunkValue(es[start:end])
		gs = append(gs, keyspace.NewGroup(c.encode(), sChunkSum(c.entries)))
		start, acc = end, 0
	}
	for i, e := range es {
		if acc >= target {
			emit(i)
		}
		acc += 8
		for _, f := range e.fields {
			acc += len(f) + 1
		}
	}
	if start < len(es) {
		emit(len(es))
	}
	return gs
}

func init() {
	keyspace.RegisterGroupCodec(typeStream, &keyspace.GroupCodec{
		Split: func(val []byte) (*keyspace.Directory, bool) {
			s, err := decodeStream(val)
			if err != nil {
				return nil, false
			}
			gs := cutEntries(nil, s.entries, keyspace.GroupTarget(int64(len(val))))
			chunks := len(gs)
			gs = append(gs, keyspace.NewGroup((&streamValue{groups: s.groups}).encode(), nil))
			return &keyspace.Directory{Meta: smeta(s, len(s.entries), chunks), Groups: gs}, true
		},
		Join: func(meta []byte, groups [][]byte) ([]byte, error) {
			h, n, chunks, err := parseSMeta(meta)
			if err != nil || chunks+1 != len(groups) {
				return nil, errBadSGroup
			}
			for _, g := range groups[:chunks] {
				c, err := decodeStream(g)
				if err != nil {
					return nil, err
				}
				h.entries = append(h.entries, c.entries...)
			}
			cg, err := decodeStream(groups[chunks])
			if err != nil {
				return nil, err
			}
			h.groups = cg.groups
			if len(h.entries) != n {
				return nil, fmt.Errorf("%w: %d entries, its directory says %d", errBadSGroup, len(h.entries), n)
			}
			return h.encode(), nil
		},
	})
}

// schunk is one chunk of a grouped stream as a command sees it.
type schunk struct {
	from    int // its index in the directory read; -1 for a new one
	entries []streamEntry
	loaded  bool
	changed bool
	// count, first and last are the chunk's summary, parsed from the directory when the
	// view first needs them (sview.at): a command looks at a few chunks of thousands.
	parsed bool
	count  int
	first  streamID
	last   streamID
}

// sview is a stream as a command sees it: whole when it is one record, or the chunks (loaded as
// needed) and the consumer groups of a grouped one.
type sview struct {
	tx      *keyspace.Tx
	i       int
	exists  bool
	grouped bool
	whole   *streamValue
	d       *keyspace.Directory
	hdr     *streamValue // the header: last id, entries added, largest deleted id
	n       int
	chunks  []schunk
	cg      *streamValue // the consumer groups, when loaded
	cgDirty bool
	bad     bool // a chunk's summary did not parse (at)
}

// at is chunk j with its summary parsed. A summary that does not parse sets v.bad, which load,
// store and the reads check.
func (v *sview) at(j int) *schunk {
	c := &v.chunks[j]
	if !c.parsed {
		n, first, last, err := parseSChunkSum(v.d.Groups[c.from].Sum)
		if err != nil || n <= 0 {
			v.bad = true
		}
		c.count, c.first, c.last, c.parsed = n, first, last, true
	}
	return c
}

// openS opens key i of tx as a stream: missing is exists false and an empty stream.
func openS(tx *keyspace.Tx, i int) (*sview, error) {
	m, ok := tx.Meta(i)
	switch {
	case !ok:
		return &sview{tx: tx, i: i, whole: newStream()}, nil
	case m.Type != typeStream:
		return nil, ErrWrongType
	case !tx.Grouped(i):
		b, _, err := tx.Value(i)
		if err != nil {
			return nil, err
		}
		s, err := decodeStream(b)
		if err != nil {
			return nil, err
		}
		return &sview{tx: tx, i: i, exists: true, whole: s, n: len(s.entries)}, nil
	}
	d, err := tx.Dir(i)
	if err != nil {
		return nil, err
	}
	h, n, chunks, err := parseSMeta(d.Meta)
	if err != nil || chunks+1 != len(d.Groups) {
		return nil, errBadSGroup
	}
	v := &sview{tx: tx, i: i, exists: true, grouped: true, d: d, hdr: h, n: n, chunks: make([]schunk, chunks)}
	for j := range v.chunks {
		v.chunks[j].from = j
	}
	return v, nil
}

// load reads chunks js of the view that are not loaded.
func (v *sview) load(js ...int) error {
	if v.bad {
		return errBadSGroup
	}
	var want, at []int
	for _, j := range js {
		if c := &v.chunks[j]; !c.loaded && c.from >= 0 {
			want, at = append(want, c.from), append(at, j)
		}
	}
	if len(want) == 0 {
		return nil
	}
	gs, err := v.tx.Groups(v.i, want)
	if err != nil {
		return err
	}
	for k, g := range gs {
		s, err := decodeStream(g)
		if err != nil {
			return err
		}
		c := &v.chunks[at[k]]
		c.entries, c.loaded = s.entries, true
	}
	return nil
}

// groups loads the consumer groups of a grouped stream.
func (v *sview) groups() error {
	if v.cg != nil || !v.grouped {
		return nil
	}
	gs, err := v.tx.Groups(v.i, []int{len(v.d.Groups) - 1})
	if err != nil {
		return err
	}
	v.cg, err = decodeStream(gs[0])
	return err
}

// value is the stream as the commands of streams.go use it: the whole, or the header, the
// entries es and the groups if loaded, with what the whole has (streamPart).
func (v *sview) value(es []streamEntry) *streamValue {
	if !v.grouped {
		return v.whole
	}
	s := &streamValue{lastID: v.hdr.lastID, entriesAdded: v.hdr.entriesAdded, maxDeleted: v.hdr.maxDeleted,
		entries: es, part: &streamPart{n: v.n}}
	if len(v.chunks) > 0 {
		s.part.first = v.at(0).first
	}
	if v.cg != nil {
		s.groups = v.cg.groups
	}
	return s
}

// header is the stream's header (last id, entries added, largest deleted id).
func (v *sview) header() *streamValue {
	if v.grouped {
		return v.hdr
	}
	return v.whole
}

// lastEntry is the id of the stream's last entry (zero when it has none).
func (v *sview) lastEntry() (streamID, error) {
	if !v.grouped {
		if n := len(v.whole.entries); n > 0 {
			return v.whole.entries[n-1].id, nil
		}
		return streamID{}, nil
	}
	if k := len(v.chunks) - 1; k >= 0 {
		if c := v.at(k); !v.bad {
			return c.last, nil // a chunk is never empty
		}
		return streamID{}, errBadSGroup
	}
	return streamID{}, nil
}

// chunkFor is the chunk where an entry of id is or would be.
func (v *sview) chunkFor(id streamID) int {
	j := 0
	for lo, hi := 0, len(v.chunks); lo < hi; {
		mid := (lo + hi) / 2
		if v.at(mid).first.cmp(id) <= 0 {
			j, lo = mid, mid+1
		} else {
			hi = mid
		}
	}
	return j
}

// rangeEntries is streamValue.streamRange over the view, reading only the chunks from the one
// holding the range's start (its end, rev) on, more at a time until count entries are found.
func (v *sview) rangeEntries(start, end streamID, count int64, rev bool) ([]*streamEntry, error) {
	if !v.grouped {
		return v.whole.streamRange(start, end, count, rev), nil
	}
	if len(v.chunks) == 0 || end.less(start) {
		return nil, nil
	}
	a, b := v.chunkFor(start), v.chunkFor(end)+1
	for step := 2; ; step *= 2 {
		lo, hi := a, b
		if count > 0 {
			if rev {
				lo = max(a, b-step)
			} else {
				hi = min(b, a+step)
			}
		}
		js := make([]int, 0, hi-lo)
		for j := lo; j < hi; j++ {
			js = append(js, j)
		}
		if err := v.load(js...); err != nil {
			return nil, err
		}
		w := &streamValue{}
		for _, j := range js {
			w.entries = append(w.entries, v.chunks[j].entries...)
		}
		out := w.streamRange(start, end, count, rev)
		if lo == a && hi == b || int64(len(out)) >= count {
			return out, nil
		}
	}
}

// entry is the entry id, nil when the stream does not have it.
func (v *sview) entry(id streamID) (*streamEntry, error) {
	if !v.grouped {
		return v.whole.entry(id), nil
	}
	if len(v.chunks) == 0 {
		return nil, nil
	}
	j := v.chunkFor(id)
	if err := v.load(j); err != nil {
		return nil, err
	}
	es := v.chunks[j].entries
	for k := range es {
		if es[k].id == id {
			return &es[k], nil
		}
	}
	return nil, nil
}

// chunkLen is the encoded size of chunk j.
func (v *sview) chunkLen(j int) int {
	if c := &v.chunks[j]; c.changed || c.from < 0 {
		return len(chunkValue(c.entries).encode())
	}
	return v.d.Groups[v.chunks[j].from].Len
}

// appendEntry adds an entry at the end (XADD; its id is above the last).
func (v *sview) appendEntry(id streamID, fields [][]byte) error {
	if !v.grouped {
		v.whole.append(id, fields)
		v.n++
		return nil
	}
	e := streamEntry{id: id, fields: fields}
	k := len(v.chunks) - 1
	// The last chunk is sealed at edgeCut and merged into the one before it while the two fit
	// the group target: groups stay near the target while an XADD rewrites 2 KiB on average.
	if k >= 0 && v.chunkLen(k) < edgeCut {
		if err := v.load(k); err != nil {
			return err
		}
		c := v.at(k)
		c.entries = append(c.entries[:len(c.entries):len(c.entries)], e)
		c.count++
		c.changed, c.last = true, id
	} else {
		if k >= 1 && v.chunkLen(k-1)+v.chunkLen(k) <= keyspace.GroupTarget(v.d.Bytes()) {
			// Seal the last chunk into the one before it.
			if err := v.load(k-1, k); err != nil {
				return err
			}
			last := v.at(k)
			c := v.at(k - 1)
			c.entries = append(c.entries[:len(c.entries):len(c.entries)], last.entries...)
			c.count += last.count
			c.changed, c.last = true, last.last
			v.chunks = v.chunks[:k]
		}
		if v.bad {
			return errBadSGroup
		}
		v.chunks = append(v.chunks, schunk{from: -1, entries: []streamEntry{e}, loaded: true, changed: true, parsed: true, count: 1, first: id, last: id})
	}
	v.hdr.lastID = id
	v.hdr.entriesAdded++
	v.n++
	return nil
}

// trim applies a's trimming (XADD's): whole chunks go from the front unread, the chunk the cut
// falls in is read and cut.
func (v *sview) trim(a *streamTrimArgs) error {
	if !v.grouped {
		a.trim(v.whole)
		v.n = len(v.whole.entries)
		return nil
	}
	var rm int64
	switch a.strategy {
	case trimMaxLen:
		rm = int64(v.n) - a.maxlen
	case trimMinID:
		// Entries below minid: every chunk before the one minid falls in, and part of that one.
		j := v.chunkFor(a.minid)
		if len(v.chunks) > 0 && v.at(j).first.less(a.minid) {
			if err := v.load(j); err != nil {
				return err
			}
			w := &streamValue{entries: v.chunks[j].entries}
			rm = int64(w.search(a.minid))
		}
		for k := 0; k < j; k++ {
			rm += int64(v.at(k).count)
		}
	default:
		return nil
	}
	if a.limit > 0 {
		rm = min(rm, a.limit)
	}
	if rm <= 0 {
		return nil
	}
	drop := 0
	for drop < len(v.chunks) && int64(v.at(drop).count) <= rm {
		rm -= int64(v.chunks[drop].count)
		v.n -= v.chunks[drop].count
		drop++
	}
	if v.bad {
		return errBadSGroup
	}
	v.chunks = v.chunks[drop:]
	if rm > 0 && len(v.chunks) > 0 {
		if err := v.load(0); err != nil {
			return err
		}
		c := v.at(0)
		c.entries = c.entries[rm:]
		c.count -= int(rm)
		c.first = c.entries[0].id
		c.changed = true
		v.n -= int(rm)
	}
	return nil
}

// store writes the stream back: whole, or its changed chunks, its groups' record when changed
// and a new directory. One below half the threshold becomes one record again.
func (v *sview) store(c *Ctx) error {
	tx, i := v.tx, v.i
	m, _ := tx.Meta(i)
	if !v.grouped {
		return putValue(tx, i, v.whole, m.ExpireAt, typeStream)
	}
	if v.bad {
		return errBadSGroup
	}
	var total int64
	for _, ch := range v.chunks {
		if ch.changed {
			total += int64(len(chunkValue(ch.entries).encode()))
		} else {
			total += int64(v.d.Groups[ch.from].Len)
		}
	}
	var cgEnc []byte
	last := v.d.Groups[len(v.d.Groups)-1]
	if v.cgDirty {
		cgEnc = (&streamValue{groups: v.cg.groups}).encode()
		total += int64(len(cgEnc))
	} else {
		total += int64(last.Len)
	}
	if total < int64(c.KS.GroupMin()/2) {
		js := make([]int, len(v.chunks))
		for j := range js {
			js[j] = j
		}
		if err := v.load(js...); err != nil {
			return err
		}
		if err := v.groups(); err != nil {
			return err
		}
		s := v.value(nil)
		s.part = nil
		for _, ch := range v.chunks {
			s.entries = append(s.entries, ch.entries...)
		}
		tx.Put(i, s.encode(), m.ExpireAt, typeStream)
		return nil
	}
	target := keyspace.GroupTarget(total)
	nd := &keyspace.Directory{Groups: make([]keyspace.Group, 0, len(v.chunks)+2)}
	for _, ch := range v.chunks {
		switch {
		case !ch.changed:
			nd.Groups = append(nd.Groups, v.d.Groups[ch.from])
		case len(ch.entries) == 0:
		default:
			if enc := chunkValue(ch.entries).encode(); len(enc) <= 2*target {
				nd.Groups = append(nd.Groups, keyspace.NewGroup(enc, sChunkSum(ch.entries)))
			} else {
				nd.Groups = cutEntries(nd.Groups, ch.entries, target)
			}
		}
	}
	chunks := len(nd.Groups)
	if cgEnc != nil {
		nd.Groups = append(nd.Groups, keyspace.NewGroup(cgEnc, nil))
	} else {
		nd.Groups = append(nd.Groups, last)
	}
	nd.Meta = smeta(v.hdr, v.n, chunks)
	return tx.PutGroups(i, nd, m.ExpireAt, typeStream)
}

// readS runs fn on the stream at key for a command that only reads it (readCollection).
func readS(c *Ctx, key []byte, fn func(v *sview) error) error {
	return readCollection(c, key, typeStream, decodeStream, func(s *streamValue, found bool) *sview {
		if !found {
			return &sview{whole: newStream()}
		}
		return &sview{exists: true, whole: s, n: len(s.entries)}
	}, openS, fn)
}

// updateS runs fn on the stream at key in a transaction and stores it when fn reports a change.
func updateS(c *Ctx, key []byte, fn func(v *sview) (bool, error)) error {
	return c.KS.Update(c.Sess, []kspKey{{DB: c.DB(), Key: key}}, func(tx *keyspace.Tx) error {
		v, err := openS(tx, 0)
		if err != nil {
			return err
		}
		changed, err := fn(v)
		if err != nil || !changed {
			return err
		}
		return v.store(c)
	})
}
