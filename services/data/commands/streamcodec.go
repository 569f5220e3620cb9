package commands

import (
	"encoding/binary"
	"errors"
	"sort"
	"strconv"
)

// A stream's value, as stored in its record (keyspace.TypeStream), one record holding the
// entries and the consumer groups:
//
//	0  version   byte     streamFormat
//	1  flags     byte     0
//	   last id   uvarint ms, uvarint seq   the last id ever generated (XADD, XSETID)
//	   added     uvarint  entries ever added
//	   max del   uvarint ms, uvarint seq   the largest id removed by XDEL
//	   count     uvarint  entries, each: uvarint ms, uvarint seq, uvarint n, n blobs (field, value, ...)
//	   groups    uvarint  groups, each:
//	     name blob, last-delivered id (2 uvarint), entries-read (varint, -1: unknown),
//	     pel count, each: id (2 uvarint), consumer blob, delivery time ms (varint), deliveries (uvarint)
//	     consumers count, each: name blob, seen time ms (varint)
//
// The first entry's id is not stored: it is the first of the entries. A consumer's pending
// entries are the group's PEL entries naming it. Entries, groups (by name), PEL entries (by id)
// and consumers (by name) are kept sorted, as Redis's radix trees keep them.
const streamFormat = 1

var errBadStream = errors.New("ERR lavik: a stream record does not decode")

// streamID is an entry's id, ms-seq.
type streamID struct{ ms, seq uint64 }

var maxStreamID = streamID{^uint64(0), ^uint64(0)}

func (a streamID) cmp(b streamID) int {
	switch {
	case a.ms < b.ms:
		return -1
	case a.ms > b.ms:
		return 1
	case a.seq < b.seq:
		return -1
	case a.seq > b.seq:
		return 1
	}
	return 0
}

func (a streamID) less(b streamID) bool { return a.cmp(b) < 0 }
func (a streamID) isZero() bool         { return a.ms == 0 && a.seq == 0 }

// next is the smallest id greater than a; ok false when a is the largest.
func (a streamID) next() (streamID, bool) {
	switch {
	case a.seq < ^uint64(0):
		return streamID{a.ms, a.seq + 1}, true
	case a.ms < ^uint64(0):
		return streamID{a.ms + 1, 0}, true
	}
	return a, false
}

// prev is the largest id smaller than a; ok false when a is 0-0.
func (a streamID) prev() (streamID, bool) {
	switch {
	case a.seq > 0:
		return streamID{a.ms, a.seq - 1}, true
	case a.ms > 0:
		return streamID{a.ms - 1, ^uint64(0)}, true
	}
	return a, false
}

func (a streamID) String() string {
	return strconv.FormatUint(a.ms, 10) + "-" + strconv.FormatUint(a.seq, 10)
}

// streamEntry is one entry: its id and its field/value pairs, flat.
type streamEntry struct {
	id     streamID
	fields [][]byte
}

// streamPending is an entry of a group's PEL: delivered to consumer and not yet acknowledged.
type streamPending struct {
	id            streamID
	consumer      string
	deliveryTime  int64 // unix ms of the last delivery
	deliveryCount uint64
}

type streamConsumer struct {
	name     string
	seenTime int64 // unix ms of the last read or claim
}

// streamInvalidEntriesRead is Redis's SCG_INVALID_ENTRIES_READ: the group's read counter is
// unknown.
const streamInvalidEntriesRead = -1

type streamGroup struct {
	name        string
	lastID      streamID
	entriesRead int64
	pel         []streamPending  // by id
	consumers   []streamConsumer // by name
}

// streamValue is a decoded stream.
type streamValue struct {
	lastID       streamID
	entriesAdded uint64
	maxDeleted   streamID
	entries      []streamEntry  // by id
	groups       []*streamGroup // by name
	// part, for a part of a grouped stream (streamgrouped.go): entries are only some of the
	// stream's, and part says what the whole has.
	part *streamPart
}

// streamPart is what a part of a grouped stream knows of the whole: its length and first id.
type streamPart struct {
	n     int
	first streamID
}

func newStream() *streamValue { return &streamValue{} }

// len is never 0: an empty stream is still a key (putValue removes empty collections).
func (s *streamValue) len() int { return len(s.entries) + 1 }

// count is the stream's length: its entries', or a part's whole stream's (streamgrouped.go).
func (s *streamValue) count() int {
	if s.part != nil {
		return s.part.n
	}
	return len(s.entries)
}

func (s *streamValue) firstID() streamID {
	if s.part != nil {
		return s.part.first
	}
	if len(s.entries) == 0 {
		return streamID{}
	}
	return s.entries[0].id
}

// search returns the position of the first entry with an id >= id.
func (s *streamValue) search(id streamID) int {
	return sort.Search(len(s.entries), func(i int) bool { return !s.entries[i].id.less(id) })
}

func (s *streamValue) group(name []byte) *streamGroup {
	i := sort.Search(len(s.groups), func(i int) bool { return s.groups[i].name >= string(name) })
	if i < len(s.groups) && s.groups[i].name == string(name) {
		return s.groups[i]
	}
	return nil
}

// addGroup adds a group and reports false when one of that name exists.
func (s *streamValue) addGroup(g *streamGroup) bool {
	i := sort.Search(len(s.groups), func(i int) bool { return s.groups[i].name >= g.name })
	if i < len(s.groups) && s.groups[i].name == g.name {
		return false
	}
	s.groups = append(s.groups, nil)
	copy(s.groups[i+1:], s.groups[i:])
	s.groups[i] = g
	return true
}

func (s *streamValue) delGroup(name []byte) bool {
	for i, g := range s.groups {
		if g.name == string(name) {
			s.groups = append(s.groups[:i], s.groups[i+1:]...)
			return true
		}
	}
	return false
}

// pendingAt returns the position of id in the PEL and whether it is there.
func (g *streamGroup) pendingAt(id streamID) (int, bool) {
	i := sort.Search(len(g.pel), func(i int) bool { return !g.pel[i].id.less(id) })
	return i, i < len(g.pel) && g.pel[i].id == id
}

func (g *streamGroup) consumerAt(name string) (int, bool) {
	i := sort.Search(len(g.consumers), func(i int) bool { return g.consumers[i].name >= name })
	return i, i < len(g.consumers) && g.consumers[i].name == name
}

func (g *streamGroup) consumer(name string) *streamConsumer {
	if i, ok := g.consumerAt(name); ok {
		return &g.consumers[i]
	}
	return nil
}

// addConsumer creates the consumer unless it exists, and reports whether it did.
func (g *streamGroup) addConsumer(name string, now int64) (*streamConsumer, bool) {
	i, ok := g.consumerAt(name)
	if ok {
		return &g.consumers[i], false
	}
	g.consumers = append(g.consumers, streamConsumer{})
	copy(g.consumers[i+1:], g.consumers[i:])
	g.consumers[i] = streamConsumer{name: name, seenTime: now}
	return &g.consumers[i], true
}

// delConsumer removes the consumer and its pending entries; it returns how many there were,
// -1 when there is no such consumer.
func (g *streamGroup) delConsumer(name string) int {
	i, ok := g.consumerAt(name)
	if !ok {
		return -1
	}
	g.consumers = append(g.consumers[:i], g.consumers[i+1:]...)
	n, kept := 0, g.pel[:0]
	for _, p := range g.pel {
		if p.consumer == name {
			n++
		} else {
			kept = append(kept, p)
		}
	}
	g.pel = kept
	return n
}

// pendingOf counts the consumer's pending entries.
func (g *streamGroup) pendingOf(name string) int {
	n := 0
	for _, p := range g.pel {
		if p.consumer == name {
			n++
		}
	}
	return n
}

// addPending records id as delivered to consumer at now, replacing an older record of it.
func (g *streamGroup) addPending(id streamID, consumer string, now int64) {
	i, ok := g.pendingAt(id)
	if ok {
		g.pel[i] = streamPending{id: id, consumer: consumer, deliveryTime: now, deliveryCount: 1}
		return
	}
	g.pel = append(g.pel, streamPending{})
	copy(g.pel[i+1:], g.pel[i:])
	g.pel[i] = streamPending{id: id, consumer: consumer, deliveryTime: now, deliveryCount: 1}
}

func (g *streamGroup) ack(id streamID) bool {
	i, ok := g.pendingAt(id)
	if ok {
		g.pel = append(g.pel[:i], g.pel[i+1:]...)
	}
	return ok
}

// streamReader reads the numbers and blobs of an encoded stream, remembering the first error.
type streamReader struct {
	blobReader
	bad bool
}

func (r *streamReader) uvarint() uint64 {
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *streamReader) varint() int64 {
	n, k := binary.Varint(r.b)
	if k <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *streamReader) id() streamID { return streamID{r.uvarint(), r.uvarint()} }

func (r *streamReader) blob() []byte {
	b, ok := r.next()
	if !ok {
		r.bad = true
	}
	return b
}

// count reads a count of items each taking at least min bytes, refusing one the rest cannot
// hold (a corrupt count must not allocate much).
func (r *streamReader) count(min int) int {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)/min) {
		r.bad = true
		return 0
	}
	return int(n)
}

func decodeStream(b []byte) (*streamValue, error) {
	if len(b) < 2 || b[0] != streamFormat || b[1] != 0 {
		return nil, errBadStream
	}
	r := &streamReader{blobReader: blobReader{b[2:]}}
	s := &streamValue{}
	s.lastID = r.id()
	s.entriesAdded = r.uvarint()
	s.maxDeleted = r.id()
	n := r.count(3)
	s.entries = make([]streamEntry, 0, n)
	for i := 0; i < n && !r.bad; i++ {
		e := streamEntry{id: r.id()}
		nf := r.count(1)
		if nf%2 != 0 || nf == 0 {
			return nil, errBadStream
		}
		e.fields = make([][]byte, nf)
		for j := range e.fields {
			e.fields[j] = r.blob()
		}
		if i > 0 && !s.entries[i-1].id.less(e.id) || s.lastID.less(e.id) {
			return nil, errBadStream
		}
		s.entries = append(s.entries, e)
	}
	ng := r.count(1)
	for i := 0; i < ng && !r.bad; i++ {
		g := &streamGroup{name: string(r.blob()), lastID: r.id(), entriesRead: r.varint()}
		np := r.count(5)
		g.pel = make([]streamPending, 0, np)
		for j := 0; j < np && !r.bad; j++ {
			p := streamPending{id: r.id(), consumer: string(r.blob()), deliveryTime: r.varint(), deliveryCount: r.uvarint()}
			if j > 0 && !g.pel[j-1].id.less(p.id) {
				return nil, errBadStream
			}
			g.pel = append(g.pel, p)
		}
		nc := r.count(2)
		g.consumers = make([]streamConsumer, 0, nc)
		for j := 0; j < nc && !r.bad; j++ {
			c := streamConsumer{name: string(r.blob()), seenTime: r.varint()}
			if j > 0 && g.consumers[j-1].name >= c.name {
				return nil, errBadStream
			}
			g.consumers = append(g.consumers, c)
		}
		for _, p := range g.pel {
			if _, ok := g.consumerAt(p.consumer); !ok {
				return nil, errBadStream
			}
		}
		if i > 0 && s.groups[i-1].name >= g.name {
			return nil, errBadStream
		}
		s.groups = append(s.groups, g)
	}
	if r.bad || len(r.b) != 0 {
		return nil, errBadStream
	}
	return s, nil
}

func appendID(b []byte, id streamID) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(b, id.ms), id.seq)
}

func (s *streamValue) encode() []byte {
	size := 64
	for _, e := range s.entries {
		size += 24
		for _, f := range e.fields {
			size += len(f) + binary.MaxVarintLen32
		}
	}
	b := make([]byte, 0, size)
	b = append(b, streamFormat, 0)
	b = appendID(b, s.lastID)
	b = binary.AppendUvarint(b, s.entriesAdded)
	b = appendID(b, s.maxDeleted)
	b = binary.AppendUvarint(b, uint64(len(s.entries)))
	for _, e := range s.entries {
		b = appendID(b, e.id)
		b = binary.AppendUvarint(b, uint64(len(e.fields)))
		for _, f := range e.fields {
			b = appendBlob(b, f)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(s.groups)))
	for _, g := range s.groups {
		b = appendBlob(b, []byte(g.name))
		b = appendID(b, g.lastID)
		b = binary.AppendVarint(b, g.entriesRead)
		b = binary.AppendUvarint(b, uint64(len(g.pel)))
		for _, p := range g.pel {
			b = appendID(b, p.id)
			b = appendBlob(b, []byte(p.consumer))
			b = binary.AppendVarint(b, p.deliveryTime)
			b = binary.AppendUvarint(b, p.deliveryCount)
		}
		b = binary.AppendUvarint(b, uint64(len(g.consumers)))
		for _, c := range g.consumers {
			b = appendBlob(b, []byte(c.name))
			b = binary.AppendVarint(b, c.seenTime)
		}
	}
	return b
}

// append adds an entry with id, which the caller checked is above lastID.
func (s *streamValue) append(id streamID, fields [][]byte) {
	s.entries = append(s.entries, streamEntry{id: id, fields: fields})
	s.lastID = id
	s.entriesAdded++
}

// del removes the entry id and reports whether it was there.
func (s *streamValue) del(id streamID) bool {
	i := s.search(id)
	if i == len(s.entries) || s.entries[i].id != id {
		return false
	}
	s.entries = append(s.entries[:i], s.entries[i+1:]...)
	if s.maxDeleted.less(id) {
		s.maxDeleted = id
	}
	return true
}

// trimMaxLen removes the oldest entries beyond maxlen, at most limit of them when limit > 0,
// and returns how many it removed.
func (s *streamValue) trimMaxLen(maxlen, limit int64) int64 {
	n := int64(len(s.entries)) - maxlen
	if n <= 0 {
		return 0
	}
	if limit > 0 && n > limit {
		n = limit
	}
	s.entries = append(s.entries[:0:0], s.entries[n:]...)
	return n
}

// trimMinID removes the entries below minid, at most limit of them when limit > 0.
func (s *streamValue) trimMinID(minid streamID, limit int64) int64 {
	n := int64(s.search(minid))
	if limit > 0 && n > limit {
		n = limit
	}
	if n == 0 {
		return 0
	}
	s.entries = append(s.entries[:0:0], s.entries[n:]...)
	return n
}

// estimateEntriesRead is Redis's streamEstimateDistanceFromFirstEverEntry: the number of
// entries added up to id, or streamInvalidEntriesRead when it cannot tell.
func (s *streamValue) estimateEntriesRead(id streamID) int64 {
	if s.entriesAdded == 0 {
		return 0
	}
	if s.count() == 0 && id.cmp(s.lastID) < 1 {
		return int64(s.entriesAdded)
	}
	switch c := id.cmp(s.lastID); {
	case c == 0:
		return int64(s.entriesAdded)
	case c > 0:
		return streamInvalidEntriesRead
	}
	first := s.firstID()
	if s.maxDeleted.isZero() || s.maxDeleted.less(first) {
		switch c := id.cmp(first); {
		case c < 0:
			return int64(s.entriesAdded) - int64(s.count())
		case c == 0:
			return int64(s.entriesAdded) - int64(s.count()) + 1
		}
	}
	return streamInvalidEntriesRead
}

// hasTombstones is Redis's streamRangeHasTombstones for the range from start to the end.
func (s *streamValue) hasTombstones(start streamID) bool {
	if s.count() == 0 || s.maxDeleted.isZero() {
		return false
	}
	if s.maxDeleted.less(s.firstID()) {
		return false
	}
	return start.cmp(s.maxDeleted) <= 0
}

// lag is the group's lag as XINFO reports it: ok false when it cannot be told.
func (s *streamValue) lag(g *streamGroup) (int64, bool) {
	if s.entriesAdded == 0 {
		return 0, true
	}
	if g.entriesRead != streamInvalidEntriesRead && !s.hasTombstones(g.lastID) {
		return int64(s.entriesAdded) - g.entriesRead, true
	}
	if r := s.estimateEntriesRead(g.lastID); r != streamInvalidEntriesRead {
		return int64(s.entriesAdded) - r, true
	}
	return 0, false
}

// delivered moves the group's last-delivered id to id, keeping its read counter, as Redis
// does when it serves a new entry to a group.
func (s *streamValue) delivered(g *streamGroup, id streamID) {
	if !g.lastID.less(id) {
		return
	}
	if g.entriesRead != streamInvalidEntriesRead && !s.hasTombstones(id) {
		g.entriesRead++
	} else if s.entriesAdded != 0 {
		g.entriesRead = s.estimateEntriesRead(id)
	}
	g.lastID = id
}
