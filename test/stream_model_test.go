package test

// The stream model test drives the server and an in-memory model with the same seeded random
// stream commands (XADD with explicit, ms and ms-* ids, exact MAXLEN and MINID trimming and
// NOMKSTREAM; XLEN, XRANGE, XREVRANGE, XREAD, XDEL, XTRIM; XGROUP CREATE, SETID, DESTROY,
// CREATECONSUMER, DELCONSUMER; XREADGROUP new and history reads, with and without NOACK; XACK;
// XPENDING summary and extended; XINFO GROUPS and STREAM), mixed with DEL, EXPIRE, RENAME, TYPE
// and string SET/GET on the same keys so that WRONGTYPE shows both ways, compares every reply,
// and across clean and kill -9 restarts compares the whole keyspace: every stream's entries,
// groups (XINFO GROUPS), pending entries (XPENDING summary and extended) and XINFO STREAM's
// counters. It reuses the string model test's run loop (model_test.go).
//
// Nothing time-dependent is compared: XPENDING's idle times only have to be integers >= 0, and
// XINFO CONSUMERS (seen and active times) is not used. "~" trimming is not used: Lavik trims
// exactly where Redis trims whole radix-tree nodes. Group entries-read and lag follow Redis 7.0
// (streamEstimateDistanceFromFirstEverEntry, streamRangeHasTombstones).

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

const (
	smErrIDSmall  = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	smErrIDZero   = "ERR The ID specified in XADD must be greater than 0-0"
	smErrNoKey    = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	smErrBusy     = "BUSYGROUP Consumer Group name already exists"
	smInvalidRead = -1 // a group's entries-read when it is not known (Redis's SCG_INVALID_ENTRIES_READ)
)

// smID is a stream entry id.
type smID struct{ ms, seq uint64 }

func (a smID) cmp(b smID) int {
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

func (a smID) less(b smID) bool { return a.cmp(b) < 0 }
func (a smID) isZero() bool     { return a.ms == 0 && a.seq == 0 }
func (a smID) String() string   { return fmt.Sprintf("%d-%d", a.ms, a.seq) }

// smEnt is one stream entry: its id and its field-value pairs as given (repeats allowed).
type smEnt struct {
	id smID
	fv []string
}

// smPend is one pending entry of a group: who it was delivered to and how many times.
type smPend struct {
	id       smID
	consumer string
	count    int64
	// fuzzy, against Redis only, is set on the entries pending at a restart: Redis 7.0 does
	// not write the delivery counts of history reads to its AOF (it propagates only the
	// XCLAIMs of new deliveries), so they are lost at a restart. Against Redis the model does
	// not compare such an entry's count until a new delivery sets it to 1.
	fuzzy bool
}

type smGroup struct {
	lastID      smID
	entriesRead int64 // smInvalidRead when unknown
	consumers   map[string]bool
	pel         []smPend // by id
	// fuzzy, against Redis only, is set on the groups that were there at a restart: Redis 7.0
	// replays a group's reads from its AOF as XCLAIM ... LASTID, which moves last-delivered-id
	// but not entries-read, so after a restart it reports entries-read null and a lag of its
	// own. Lavik keeps both; against Redis the model does not compare them for such a group
	// until XGROUP SETID (or a new CREATE) sets entries-read again.
	fuzzy bool
}

// pendingAt returns where id is, or would go, in the group's PEL, and whether it is there.
func (g *smGroup) pendingAt(id smID) (int, bool) {
	return slices.BinarySearchFunc(g.pel, id, func(p smPend, id smID) int { return p.id.cmp(id) })
}

// smStream is a stream: entries by id and what Redis keeps besides them.
type smStream struct {
	ents   []smEnt
	last   smID  // last-generated-id
	maxDel smID  // max-deleted-entry-id (XDEL only; trimming does not set it)
	added  int64 // entries-added
	groups map[string]*smGroup
}

func (s *smStream) first() smID {
	if len(s.ents) == 0 {
		return smID{}
	}
	return s.ents[0].id
}

// at returns where id is, or would go, among the entries, and whether it is there.
func (s *smStream) at(id smID) (int, bool) {
	return slices.BinarySearchFunc(s.ents, id, func(e smEnt, id smID) int { return e.id.cmp(id) })
}

func (s *smStream) groupNames() []string {
	names := make([]string, 0, len(s.groups))
	for n := range s.groups {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// estimate is Redis 7.0's streamEstimateDistanceFromFirstEverEntry.
func (s *smStream) estimate(id smID) int64 {
	if s.added == 0 {
		return 0
	}
	if len(s.ents) == 0 && id.cmp(s.last) < 1 {
		return s.added
	}
	switch c := id.cmp(s.last); {
	case c == 0:
		return s.added
	case c > 0:
		return smInvalidRead
	}
	first := s.first()
	if s.maxDel.isZero() || s.maxDel.less(first) {
		switch c := id.cmp(first); {
		case c < 0:
			return s.added - int64(len(s.ents))
		case c == 0:
			return s.added - int64(len(s.ents)) + 1
		}
	}
	return smInvalidRead
}

// tombstonesFrom is Redis 7.0's streamRangeHasTombstones(s, start, NULL).
func (s *smStream) tombstonesFrom(start smID) bool {
	if len(s.ents) == 0 || s.maxDel.isZero() || s.maxDel.less(s.first()) {
		return false
	}
	return start.cmp(s.maxDel) <= 0
}

// lag is XINFO GROUPS's lag: ok false for a null.
func (s *smStream) lag(g *smGroup) (int64, bool) {
	if s.added == 0 {
		return 0, true
	}
	if g.entriesRead != smInvalidRead && !s.tombstonesFrom(g.lastID) {
		return s.added - g.entriesRead, true
	}
	if r := s.estimate(g.lastID); r != smInvalidRead {
		return s.added - r, true
	}
	return 0, false
}

// delivered moves the group past id as XREADGROUP > does for each entry it serves.
func (s *smStream) delivered(g *smGroup, id smID) {
	if !g.lastID.less(id) {
		return
	}
	if g.entriesRead != smInvalidRead && !s.tombstonesFrom(id) {
		g.entriesRead++
	} else if s.added != 0 {
		g.entriesRead = s.estimate(id)
	}
	g.lastID = id
}

func (s *smStream) trimMaxLen(n int) int64 {
	d := len(s.ents) - n
	if d <= 0 {
		return 0
	}
	s.ents = slices.Delete(s.ents, 0, d)
	return int64(d)
}

func (s *smStream) trimMinID(min smID) int64 {
	d, _ := s.at(min)
	s.ents = slices.Delete(s.ents, 0, d)
	return int64(d)
}

// encodedAtLeast is a lower bound of the stream's encoded length: its fields and values, a
// length byte each, and 2 bytes an id.
func (s *smStream) encodedAtLeast() int {
	n := 0
	for _, e := range s.ents {
		n += 2
		for _, x := range e.fv {
			n += len(x) + 1
		}
	}
	return n
}

// smKey is one key of the model: a stream (s not nil) or a string.
type smKey struct {
	s   *smStream
	str string
	ttl bool
}

func smEntryReply(e smEnt) wireReply { return wArr(wBulk(e.id.String()), wArr(wBulks(e.fv)...)) }

func smEntriesReply(es []smEnt) wireReply {
	out := make([]wireReply, len(es))
	for i, e := range es {
		out[i] = smEntryReply(e)
	}
	return wArr(out...)
}

// smGroupsReply is XINFO GROUPS's reply.
func smGroupsReply(s *smStream) wireReply {
	out := []wireReply{}
	for _, name := range s.groupNames() {
		g := s.groups[name]
		er := wNil()
		if g.entriesRead != smInvalidRead {
			er = wInt(g.entriesRead)
		}
		lag := wNil()
		if n, ok := s.lag(g); ok {
			lag = wInt(n)
		}
		if g.fuzzy {
			er, lag = wireReply{Kind: smAnyValue}, wireReply{Kind: smAnyValue}
		}
		out = append(out, wArr(
			wBulk("name"), wBulk(name),
			wBulk("consumers"), wInt(int64(len(g.consumers))),
			wBulk("pending"), wInt(int64(len(g.pel))),
			wBulk("last-delivered-id"), wBulk(g.lastID.String()),
			wBulk("entries-read"), er,
			wBulk("lag"), lag))
	}
	return wArr(out...)
}

// smPendingSummary is XPENDING's summary reply.
func smPendingSummary(g *smGroup) wireReply {
	if len(g.pel) == 0 {
		return wArr(wInt(0), wNil(), wNil(), wNilArray())
	}
	per := map[string]int{}
	for _, p := range g.pel {
		per[p.consumer]++
	}
	names := make([]string, 0, len(per))
	for c := range per {
		names = append(names, c)
	}
	slices.Sort(names)
	var cs []wireReply
	for _, c := range names {
		cs = append(cs, wArr(wBulk(c), wBulk(strconv.Itoa(per[c]))))
	}
	return wArr(wInt(int64(len(g.pel))), wBulk(g.pel[0].id.String()), wBulk(g.pel[len(g.pel)-1].id.String()), wArr(cs...))
}

// smAnyIdle stands for an idle time in an expected reply: any integer >= 0; smAnyValue, for
// any reply (a fuzzy group's entries-read and lag).
const (
	smAnyIdle  = 'I'
	smAnyValue = 'A'
)

// smPendingExt is XPENDING's extended reply for the pending entries from lo to hi, at most
// count, of consumer (all when "").
func smPendingExt(g *smGroup, lo, hi smID, count int, consumer string) wireReply {
	out := []wireReply{}
	for _, p := range g.pel {
		if len(out) == count {
			break
		}
		if p.id.less(lo) || hi.less(p.id) || consumer != "" && p.consumer != consumer {
			continue
		}
		n := wInt(p.count)
		if p.fuzzy {
			n = wireReply{Kind: smAnyValue}
		}
		out = append(out, wArr(wBulk(p.id.String()), wBulk(p.consumer), wireReply{Kind: smAnyIdle}, n))
	}
	return wArr(out...)
}

// smMatches is matches with smAnyIdle.
func smMatches(want, got wireReply) bool {
	switch want.Kind {
	case smAnyIdle:
		return got.Kind == ':' && got.Int >= 0
	case smAnyValue:
		return true
	case '*':
		if want.Null || got.Kind != '*' || got.Null || len(want.Elems) != len(got.Elems) {
			return want.equal(got)
		}
		for i := range want.Elems {
			if !smMatches(want.Elems[i], got.Elems[i]) {
				return false
			}
		}
		return true
	}
	return matches(want, got)
}

// smCheck is an operation whose reply holds idle times: a check in place of want.
func smCheck(args []string, want wireReply) modelOp {
	return modelOp{args: args, check: func(got wireReply) error {
		if !smMatches(want, got) {
			return fmt.Errorf("want %v (I: any idle time)", want)
		}
		return nil
	}}
}

// smInfoFields are the fields of XINFO STREAM the model knows.
var smInfoFields = []string{"length", "last-generated-id", "max-deleted-entry-id", "entries-added", "recorded-first-entry-id", "groups", "first-entry", "last-entry"}

func smInfoWant(s *smStream) map[string]wireReply {
	m := map[string]wireReply{
		"length":                  wInt(int64(len(s.ents))),
		"last-generated-id":       wBulk(s.last.String()),
		"max-deleted-entry-id":    wBulk(s.maxDel.String()),
		"entries-added":           wInt(s.added),
		"recorded-first-entry-id": wBulk(s.first().String()),
		"groups":                  wInt(int64(len(s.groups))),
		"first-entry":             wNil(),
		"last-entry":              wNil(),
	}
	if len(s.ents) > 0 {
		m["first-entry"] = smEntryReply(s.ents[0])
		m["last-entry"] = smEntryReply(s.ents[len(s.ents)-1])
	}
	return m
}

// smInfoCheck checks the fields of an XINFO STREAM reply the model knows.
func smInfoCheck(want map[string]wireReply, got wireReply) error {
	if got.Kind != '*' || got.Null {
		return fmt.Errorf("not an array")
	}
	for _, f := range smInfoFields {
		v, ok := got.mapValue(f)
		if !ok {
			return fmt.Errorf("no %s", f)
		}
		if !matches(want[f], v) {
			return fmt.Errorf("%s is %v, want %v", f, v, want[f])
		}
	}
	return nil
}

// smGen produces random stream, key and string operations and applies each to its model.
type smGen struct {
	rng       *rand.Rand
	dbs       [2]map[string]*smKey
	cur       int
	keys      []string
	groups    []string
	consumers []string
	fields    []string
	big       bool   // the grouped variant: larger values, more fields an entry, longer MAXLENs
	bigOps    int    // operations on a key holding a stream over 256 bytes, once they ran
	opKey     string // the key of the latest operation
}

func newSMGen(rng *rand.Rand, big bool) *smGen {
	g := &smGen{
		rng:       rng,
		dbs:       [2]map[string]*smKey{{}, {}},
		keys:      []string{"s0", "s1", "{t}s 2", "s3", "стрим"},
		groups:    []string{"g1", "g2", "g 3"},
		consumers: []string{"c1", "c2", "c 3"},
		fields:    []string{"f", "g", "x y", "", "поле"},
		big:       big,
	}
	if big {
		g.keys = g.keys[:3]
	}
	return g
}

func (g *smGen) selected() int { return g.cur }

func (g *smGen) db() map[string]*smKey { return g.dbs[g.cur] }

func (g *smGen) key() string { return g.keys[g.rng.IntN(len(g.keys))] }

// lookup returns key k (nil when missing), its stream (nil for a string or when missing) and
// whether a stream command must answer WRONGTYPE.
func (g *smGen) lookup(k string) (*smKey, *smStream, bool) {
	e := g.db()[k]
	if e == nil {
		return nil, nil, false
	}
	return e, e.s, e.s == nil
}

func (g *smGen) value() string {
	n := g.rng.IntN(21)
	if g.big {
		n = 100 + g.rng.IntN(400)
	}
	b := make([]byte, n)
	binary := g.rng.IntN(4) == 0
	for i := range b {
		if binary {
			b[i] = byte(g.rng.Uint32())
		} else {
			b[i] = "abcdefghijklmnopqrstuvwxyz0123456789-_"[g.rng.IntN(38)]
		}
	}
	return string(b)
}

func (g *smGen) ttlSeconds() string { return strconv.Itoa(1000 + g.rng.IntN(100000)) }

// someID is an id near the stream's: one of its entries', its last one's, or a random one up to
// a little past its last id, in the form "ms-seq" or, for seq 0, now and then "ms".
func (g *smGen) someID(s *smStream) (smID, string) {
	rng := g.rng
	var id smID
	switch r := rng.IntN(10); {
	case s != nil && len(s.ents) > 0 && r < 5:
		id = s.ents[rng.IntN(len(s.ents))].id
	case s != nil && r < 7:
		id = s.last
	default:
		top := uint64(5)
		if s != nil {
			top = s.last.ms + 3
		}
		id = smID{ms: uint64(rng.IntN(int(top) + 1)), seq: uint64(rng.IntN(4))}
	}
	if id.seq == 0 && rng.IntN(2) == 0 {
		return id, strconv.FormatUint(id.ms, 10)
	}
	return id, id.String()
}

// keyWhere picks a key: 4 times in 5 one of the selected database's keys for which ok is true,
// if there is one.
func (g *smGen) keyWhere(ok func(e *smKey) bool) string {
	if g.rng.IntN(5) > 0 {
		var ks []string
		for _, k := range g.keys {
			if e := g.db()[k]; e != nil && ok(e) {
				ks = append(ks, k)
			}
		}
		if len(ks) > 0 {
			return ks[g.rng.IntN(len(ks))]
		}
	}
	return g.key()
}

// minID is a MINID for trimming: someID, or in the grouped variant mostly the id of an entry
// in the stream's first quarter, so that streams stay long.
func (g *smGen) minID(s *smStream) (smID, string) {
	if g.big && s != nil && len(s.ents) > 0 && g.rng.IntN(4) > 0 {
		id := s.ents[g.rng.IntN(len(s.ents)/4+1)].id
		return id, id.String()
	}
	return g.someID(s)
}

// group picks a group name: 5 times in 6 one the stream has, if it has any.
func (g *smGen) group(s *smStream) string {
	if s != nil && len(s.groups) > 0 && g.rng.IntN(6) > 0 {
		names := s.groupNames()
		return names[g.rng.IntN(len(names))]
	}
	return g.groups[g.rng.IntN(len(g.groups))]
}

func (g *smGen) consumer() string { return g.consumers[g.rng.IntN(len(g.consumers))] }

func (g *smGen) maxLen() int {
	if g.big {
		return 10 + g.rng.IntN(90)
	}
	return g.rng.IntN(12)
}

func (g *smGen) next() modelOp {
	var op modelOp
	if g.rng.IntN(50) == 0 {
		op = g.multiExec()
	} else {
		op = g.op()
	}
	if e := g.db()[g.opKey]; e != nil && e.s != nil && e.s.encodedAtLeast() > 256 {
		g.bigOps++
	}
	return op
}

func (g *smGen) op() modelOp {
	rng := g.rng
	r := rng.IntN(1000)
	var k string
	switch {
	case r < 510: // stream commands: mostly on a stream
		k = g.keyWhere(func(e *smKey) bool { return e.s != nil })
	case r < 840: // group commands: mostly on a stream with groups
		k = g.keyWhere(func(e *smKey) bool { return e.s != nil && len(e.s.groups) > 0 })
	default:
		k = g.key()
	}
	g.opKey = k
	e, s, wrong := g.lookup(k)
	switch {
	case r < 250:
		return g.xadd(k, s, wrong)
	case r < 280:
		args := []string{"XLEN", k}
		if wrong {
			return wrongTypeOp(args)
		}
		n := 0
		if s != nil {
			n = len(s.ents)
		}
		return modelOp{args: args, want: wInt(int64(n))}
	case r < 360:
		return g.xrange(k, s, wrong)
	case r < 400:
		return g.xread(k, s, wrong)
	case r < 430: // XDEL of 1-3 ids, repeats allowed
		args := []string{"XDEL", k}
		var ids []smID
		for i := rng.IntN(3); i >= 0; i-- {
			id, arg := g.someID(s)
			if s != nil && rng.IntN(3) == 0 { // a pending one, for history reads of deleted entries
				if grp := s.groups[g.group(s)]; grp != nil && len(grp.pel) > 0 {
					id = grp.pel[rng.IntN(len(grp.pel))].id
					arg = id.String()
				}
			}
			args, ids = append(args, arg), append(ids, id)
		}
		if wrong {
			return wrongTypeOp(args)
		}
		n := int64(0)
		if s != nil {
			for _, id := range ids {
				if i, ok := s.at(id); ok {
					s.ents = slices.Delete(s.ents, i, i+1)
					if s.maxDel.less(id) {
						s.maxDel = id
					}
					n++
				}
			}
		}
		return modelOp{args: args, want: wInt(n)}
	case r < 455: // XTRIM MAXLEN|MINID [=]
		args := []string{"XTRIM", k}
		var trim func() int64
		if rng.IntN(2) == 0 {
			n := g.maxLen()
			args = append(args, "MAXLEN")
			if rng.IntN(2) == 0 {
				args = append(args, "=")
			}
			args = append(args, strconv.Itoa(n))
			trim = func() int64 { return s.trimMaxLen(n) }
		} else {
			id, arg := g.minID(s)
			args = append(args, "MINID")
			if rng.IntN(2) == 0 {
				args = append(args, "=")
			}
			args = append(args, arg)
			trim = func() int64 { return s.trimMinID(id) }
		}
		switch {
		case wrong:
			return wrongTypeOp(args)
		case s == nil:
			return modelOp{args: args, want: wInt(0)}
		}
		return modelOp{args: args, want: wInt(trim())}
	case r < 510:
		return g.xgroupCreate(k, s, wrong)
	case r < 525: // XGROUP SETID key group id|$
		gr := g.group(s)
		var id smID
		arg := "$"
		switch rng.IntN(3) {
		case 0:
			if s != nil {
				id = s.last
			}
		case 1:
			id, arg = smID{}, "0"
		default:
			id, arg = g.someID(s)
		}
		args := []string{"XGROUP", "SETID", k, gr, arg}
		if o := g.groupErr(k, gr, s, wrong, args); o != nil {
			return *o
		}
		grp := s.groups[gr]
		grp.lastID, grp.entriesRead, grp.fuzzy = id, smInvalidRead, false
		return modelOp{args: args, want: wOK}
	case r < 535:
		gr := g.group(s)
		args := []string{"XGROUP", "DESTROY", k, gr}
		switch {
		case wrong:
			return wrongTypeOp(args)
		case s == nil:
			return modelOp{args: args, want: wErr(smErrNoKey)}
		case s.groups[gr] == nil:
			return modelOp{args: args, want: wInt(0)}
		}
		delete(s.groups, gr)
		return modelOp{args: args, want: wInt(1)}
	case r < 560: // XGROUP CREATECONSUMER / DELCONSUMER
		gr, c := g.group(s), g.consumer()
		sub := []string{"CREATECONSUMER", "DELCONSUMER"}[rng.IntN(2)]
		args := []string{"XGROUP", sub, k, gr, c}
		if o := g.groupErr(k, gr, s, wrong, args); o != nil {
			return *o
		}
		grp := s.groups[gr]
		if sub == "CREATECONSUMER" {
			if grp.consumers[c] {
				return modelOp{args: args, want: wInt(0)}
			}
			grp.consumers[c] = true
			return modelOp{args: args, want: wInt(1)}
		}
		if !grp.consumers[c] {
			return modelOp{args: args, want: wInt(0)}
		}
		delete(grp.consumers, c)
		n := len(grp.pel)
		grp.pel = slices.DeleteFunc(grp.pel, func(p smPend) bool { return p.consumer == c })
		return modelOp{args: args, want: wInt(int64(n - len(grp.pel)))}
	case r < 700:
		return g.xreadgroup(k, s, wrong)
	case r < 760: // XACK of 1-3 ids, mostly pending ones
		gr := g.group(s)
		args := []string{"XACK", k, gr}
		var grp *smGroup
		if s != nil {
			grp = s.groups[gr]
		}
		var ids []smID
		for i := rng.IntN(3); i >= 0; i-- {
			id, arg := g.someID(s)
			if grp != nil && len(grp.pel) > 0 && rng.IntN(3) > 0 {
				id = grp.pel[rng.IntN(len(grp.pel))].id
				arg = id.String()
			}
			args, ids = append(args, arg), append(ids, id)
		}
		if wrong {
			return wrongTypeOp(args)
		}
		n := int64(0)
		if grp != nil {
			for _, id := range ids {
				if i, ok := grp.pendingAt(id); ok {
					grp.pel = slices.Delete(grp.pel, i, i+1)
					n++
				}
			}
		}
		return modelOp{args: args, want: wInt(n)}
	case r < 800:
		return g.xpending(k, s, wrong)
	case r < 830:
		args := []string{"XINFO", "GROUPS", k}
		switch {
		case wrong:
			return wrongTypeOp(args)
		case s == nil:
			return modelOp{args: args, want: wErr(errNoSuchKey)}
		}
		for _, grp := range s.groups {
			if grp.fuzzy {
				return smCheck(args, smGroupsReply(s))
			}
		}
		return modelOp{args: args, want: smGroupsReply(s)}
	case r < 840:
		args := []string{"XINFO", "STREAM", k}
		switch {
		case wrong:
			return wrongTypeOp(args)
		case s == nil:
			return modelOp{args: args, want: wErr(errNoSuchKey)}
		}
		want := smInfoWant(s)
		return modelOp{args: args, check: func(got wireReply) error { return smInfoCheck(want, got) }}
	case r < 865 && !(g.big && rng.IntN(2) == 0): // DEL of 1-2 keys; half as often when grouped
		args := []string{"DEL", k}
		if rng.IntN(2) == 0 {
			args = append(args, g.key())
		}
		n := int64(0)
		for _, kk := range args[1:] {
			if g.db()[kk] != nil {
				delete(g.db(), kk)
				n++
			}
		}
		return modelOp{args: args, want: wInt(n)}
	case r < 880:
		args := []string{"EXPIRE", k, g.ttlSeconds()}
		if e == nil {
			return modelOp{args: args, want: wInt(0)}
		}
		e.ttl = true
		return modelOp{args: args, want: wInt(1)}
	case r < 900:
		args := []string{"TYPE", k}
		switch {
		case e == nil:
			return modelOp{args: args, want: wStatus("none")}
		case s == nil:
			return modelOp{args: args, want: wStatus("string")}
		}
		return modelOp{args: args, want: wStatus("stream")}
	case r < 915: // RENAME, onto a key of either type or onto itself
		dst := g.key()
		args := []string{"RENAME", k, dst}
		if e == nil {
			return modelOp{args: args, want: wErr(errNoSuchKey)}
		}
		delete(g.db(), k)
		g.db()[dst] = e
		return modelOp{args: args, want: wOK}
	case r < 924: // SET: replaces a stream too
		v := g.value()
		args := []string{"SET", k, v}
		g.db()[k] = &smKey{str: v}
		return modelOp{args: args, want: wOK}
	case r < 950:
		args := []string{"GET", k}
		switch {
		case e == nil:
			return modelOp{args: args, want: wNil()}
		case s != nil:
			return wrongTypeOp(args)
		}
		return modelOp{args: args, want: wBulk(e.str)}
	case r < 965:
		g.cur = rng.IntN(2)
		return modelOp{args: []string{"SELECT", strconv.Itoa(g.cur)}, want: wOK}
	default:
		return g.xrange(k, s, wrong)
	}
}

// multiExec is a transaction of 2-5 operations. Those whose reply needs a check (read-only:
// XPENDING's extended form, XINFO STREAM, XINFO GROUPS of a fuzzy group) are drawn again. The
// errors in it are all found when the command runs, so EXEC runs every one.
func (g *smGen) multiExec() modelOp {
	tx := make([]modelOp, 2+g.rng.IntN(4))
	want := wArr()
	for i := range tx {
		for tx[i] = g.op(); tx[i].check != nil; tx[i] = g.op() {
		}
		want.Elems = append(want.Elems, tx[i].want)
	}
	return modelOp{tx: tx, want: want}
}

// groupErr is the error of XGROUP SETID, CREATECONSUMER and DELCONSUMER on a string, a missing
// key or a missing group, or nil.
func (g *smGen) groupErr(k, gr string, s *smStream, wrong bool, args []string) *modelOp {
	switch {
	case wrong:
		o := wrongTypeOp(args)
		return &o
	case s == nil:
		return &modelOp{args: args, want: wErr(smErrNoKey)}
	case s.groups[gr] == nil:
		return &modelOp{args: args, want: wErr("NOGROUP No such consumer group '" + gr + "' for key name '" + k + "'")}
	}
	return nil
}

// xadd is XADD [NOMKSTREAM] [MAXLEN|MINID [=] n] id field value...: mostly an explicit id
// above the last one, now and then ms-*, one not above the last (an error) or 0-0.
func (g *smGen) xadd(k string, s *smStream, wrong bool) modelOp {
	rng := g.rng
	args := []string{"XADD", k}
	nomk := rng.IntN(8) == 0
	if nomk {
		args = append(args, "NOMKSTREAM")
	}
	var last smID
	if s != nil {
		last = s.last
	}
	var trim func(s *smStream)
	switch rng.IntN(10) {
	case 0, 1, 2:
		n := g.maxLen()
		args = append(args, "MAXLEN")
		if rng.IntN(2) == 0 {
			args = append(args, "=")
		}
		args = append(args, strconv.Itoa(n))
		trim = func(s *smStream) { s.trimMaxLen(n) }
	case 3:
		id, arg := g.minID(s)
		args = append(args, "MINID")
		if rng.IntN(2) == 0 {
			args = append(args, "=")
		}
		args = append(args, arg)
		trim = func(s *smStream) { s.trimMinID(id) }
	}
	var id smID
	var idErr string
	switch r := rng.IntN(100); {
	case r < 70: // explicit, above the last id
		id.ms = last.ms + uint64(rng.IntN(3))
		if id.ms == last.ms {
			id.seq = last.seq + 1 + uint64(rng.IntN(3))
		} else {
			id.seq = uint64(rng.IntN(3))
		}
		if id.seq == 0 && rng.IntN(2) == 0 {
			args = append(args, strconv.FormatUint(id.ms, 10))
		} else {
			args = append(args, id.String())
		}
	case r < 85: // ms-*, now and then below the last ms
		ms := last.ms + uint64(rng.IntN(2))
		if rng.IntN(5) == 0 && last.ms > 0 {
			ms = last.ms - 1
		}
		args = append(args, strconv.FormatUint(ms, 10)+"-*")
		switch {
		case ms == last.ms:
			id = smID{ms: ms, seq: last.seq + 1}
		case ms > last.ms:
			id = smID{ms: ms}
		default:
			idErr = smErrIDSmall
		}
	case r < 97: // not above the last id
		if last.isZero() {
			args, idErr = append(args, "0-0"), smErrIDZero
			break
		}
		var arg string
		id, arg = g.someID(s)
		if last.less(id) {
			id, arg = last, last.String()
		}
		args = append(args, arg)
		if id.isZero() {
			idErr = smErrIDZero
		} else {
			idErr = smErrIDSmall
		}
	default:
		args, idErr = append(args, []string{"0-0", "0"}[rng.IntN(2)]), smErrIDZero
	}
	nf := 1 + rng.IntN(2)
	if g.big {
		nf = 1 + rng.IntN(4)
	}
	var fv []string
	for range nf {
		fv = append(fv, g.fields[rng.IntN(len(g.fields))], g.value())
	}
	args = append(args, fv...)
	switch {
	case idErr == smErrIDZero:
		return modelOp{args: args, want: wErr(idErr)}
	case wrong:
		return wrongTypeOp(args)
	case s == nil && nomk:
		return modelOp{args: args, want: wNil()}
	case idErr != "":
		return modelOp{args: args, want: wErr(idErr)}
	}
	if s == nil {
		s = &smStream{groups: map[string]*smGroup{}}
		g.db()[k] = &smKey{s: s}
	}
	s.ents = append(s.ents, smEnt{id: id, fv: fv})
	s.last = id
	s.added++
	if trim != nil {
		trim(s)
	}
	return modelOp{args: args, want: wBulk(id.String())}
}

// smBound is a range bound: the argument and the inclusive id it stands for.
type smBound struct {
	arg string
	id  smID
}

// bound picks a bound of a range: "-" or "+" (by end), or an id near the stream's, now and then
// exclusive.
func (g *smGen) bound(s *smStream, end bool) smBound {
	rng := g.rng
	if rng.IntN(4) == 0 {
		if end {
			return smBound{"+", smID{^uint64(0), ^uint64(0)}}
		}
		return smBound{"-", smID{}}
	}
	id, arg := g.someID(s)
	if !id.isZero() && arg == strconv.FormatUint(id.ms, 10) && end {
		id.seq = ^uint64(0) // "ms" as an end is ms-<max>
	}
	if rng.IntN(3) == 0 {
		switch {
		case end && !id.isZero():
			if id.seq == 0 {
				id = smID{id.ms - 1, ^uint64(0)}
			} else {
				id.seq--
			}
			arg = "(" + arg
		case !end:
			if id.seq == ^uint64(0) {
				id = smID{id.ms + 1, 0}
			} else {
				id.seq++
			}
			arg = "(" + arg
		}
	}
	if arg == "0" && end {
		id = smID{0, ^uint64(0)}
	}
	return smBound{arg, id}
}

// xrange is XRANGE or XREVRANGE with - + or bounds, with or without COUNT.
func (g *smGen) xrange(k string, s *smStream, wrong bool) modelOp {
	rng := g.rng
	lo, hi := g.bound(s, false), g.bound(s, true)
	rev := rng.IntN(3) == 0
	args := []string{"XRANGE", k, lo.arg, hi.arg}
	if rev {
		args = []string{"XREVRANGE", k, hi.arg, lo.arg}
	}
	count := -1
	if rng.IntN(2) == 0 {
		count = rng.IntN(6)
		if rng.IntN(10) == 0 {
			count = 0
		}
		args = append(args, "COUNT", strconv.Itoa(count))
	}
	switch {
	case wrong:
		return wrongTypeOp(args)
	case s == nil:
		return modelOp{args: args, want: wArr()}
	case count == 0:
		return modelOp{args: args, want: wNilArray()}
	}
	var sel []smEnt
	for _, e := range s.ents {
		if !e.id.less(lo.id) && !hi.id.less(e.id) {
			sel = append(sel, e)
		}
	}
	if rev {
		sel = slices.Clone(sel)
		slices.Reverse(sel)
	}
	if count > 0 && len(sel) > count {
		sel = sel[:count]
	}
	return modelOp{args: args, want: smEntriesReply(sel)}
}

// xread is XREAD [COUNT n] STREAMS key [key2] id [id2], non-blocking.
func (g *smGen) xread(k string, s *smStream, wrong bool) modelOp {
	rng := g.rng
	keys := []string{k}
	if rng.IntN(4) == 0 {
		keys = append(keys, g.key())
	}
	args := []string{"XREAD"}
	count := 0
	if rng.IntN(3) > 0 {
		count = 1 + rng.IntN(5)
		args = append(args, "COUNT", strconv.Itoa(count))
	}
	args = append(args, "STREAMS")
	args = append(args, keys...)
	var out []wireReply
	wrongAny := false
	var ids []string
	for _, kk := range keys {
		_, ks, w := g.lookup(kk)
		wrongAny = wrongAny || w
		if rng.IntN(10) == 0 {
			ids = append(ids, "$")
			continue
		}
		after, arg := g.someID(ks)
		if rng.IntN(5) == 0 {
			after, arg = smID{}, "0"
		}
		ids = append(ids, arg)
		if ks == nil {
			continue
		}
		var sel []smEnt
		for _, e := range ks.ents {
			if after.less(e.id) && (count == 0 || len(sel) < count) {
				sel = append(sel, e)
			}
		}
		if len(sel) > 0 {
			out = append(out, wArr(wBulk(kk), smEntriesReply(sel)))
		}
	}
	args = append(args, ids...)
	switch {
	case wrongAny:
		return wrongTypeOp(args)
	case len(out) == 0:
		return modelOp{args: args, want: wNilArray()}
	}
	return modelOp{args: args, want: wArr(out...)}
}

// xgroupCreate is XGROUP CREATE key group 0|$|id [MKSTREAM].
func (g *smGen) xgroupCreate(k string, s *smStream, wrong bool) modelOp {
	rng := g.rng
	gr := g.groups[rng.IntN(len(g.groups))]
	var id smID
	arg := "$"
	switch rng.IntN(3) {
	case 0:
		if s != nil {
			id = s.last
		}
	case 1:
		arg = "0"
	default:
		id, arg = g.someID(s)
	}
	args := []string{"XGROUP", "CREATE", k, gr, arg}
	mk := rng.IntN(2) == 0
	if mk {
		args = append(args, "MKSTREAM")
	}
	switch {
	case wrong:
		return wrongTypeOp(args)
	case s == nil && !mk:
		return modelOp{args: args, want: wErr(smErrNoKey)}
	case s != nil && s.groups[gr] != nil:
		return modelOp{args: args, want: wErr(smErrBusy)}
	}
	if s == nil {
		s = &smStream{groups: map[string]*smGroup{}}
		g.db()[k] = &smKey{s: s}
	}
	s.groups[gr] = &smGroup{lastID: id, entriesRead: smInvalidRead, consumers: map[string]bool{}}
	return modelOp{args: args, want: wOK}
}

// xreadgroup is XREADGROUP GROUP g c [COUNT n] [NOACK] STREAMS key >|id.
func (g *smGen) xreadgroup(k string, s *smStream, wrong bool) modelOp {
	rng := g.rng
	gr, c := g.group(s), g.consumer()
	args := []string{"XREADGROUP", "GROUP", gr, c}
	count := 0
	if rng.IntN(4) > 0 {
		count = 1 + rng.IntN(4)
		args = append(args, "COUNT", strconv.Itoa(count))
	}
	noack := rng.IntN(5) == 0
	if noack {
		args = append(args, "NOACK")
	}
	history := rng.IntN(3) == 0
	var grp *smGroup
	if s != nil {
		grp = s.groups[gr]
	}
	if history && grp != nil && len(grp.pel) > 0 && rng.IntN(2) == 0 {
		c = grp.pel[rng.IntN(len(grp.pel))].consumer // one with entries pending
		args[3] = c
	}
	if history && harness.IsRedis() && grp != nil && !grp.consumers[c] {
		// Redis 7.0 does not write to its AOF the consumer a history read creates (it
		// propagates only XCLAIMs, and a new consumer has nothing pending), so the consumer
		// is gone after a restart (redis/redis#14963). Lavik keeps it; against Redis, history
		// reads are by consumers that exist.
		cs := slices.Sorted(maps.Keys(grp.consumers))
		if len(cs) == 0 {
			history = false
		} else {
			c = cs[rng.IntN(len(cs))]
			args[3] = c
		}
	}
	var after smID
	if history {
		var arg string
		after, arg = smID{}, "0"
		if rng.IntN(3) == 0 {
			after, arg = g.someID(s)
		}
		args = append(args, "STREAMS", k, arg)
	} else {
		args = append(args, "STREAMS", k, ">")
	}
	switch {
	case wrong:
		return wrongTypeOp(args)
	case grp == nil:
		return modelOp{args: args, want: wErr("NOGROUP No such key '" + k + "' or consumer group '" + gr + "' in XREADGROUP with GROUP option")}
	}
	var out []wireReply
	if history {
		grp.consumers[c] = true
		for i := range grp.pel {
			p := &grp.pel[i]
			if count > 0 && len(out) == count {
				break
			}
			if p.consumer != c || !after.less(p.id) {
				continue
			}
			if j, ok := s.at(p.id); ok {
				p.count++
				out = append(out, smEntryReply(s.ents[j]))
			} else {
				out = append(out, wArr(wBulk(p.id.String()), wNilArray()))
			}
		}
		return modelOp{args: args, want: wArr(wArr(wBulk(k), wArr(out...)))}
	}
	if len(s.ents) == 0 || !grp.lastID.less(s.ents[len(s.ents)-1].id) {
		return modelOp{args: args, want: wNilArray()}
	}
	grp.consumers[c] = true
	start, _ := s.at(grp.lastID)
	for _, e := range s.ents[start:] {
		if count > 0 && len(out) == count {
			break
		}
		if !grp.lastID.less(e.id) {
			continue
		}
		s.delivered(grp, e.id)
		if !noack {
			if i, ok := grp.pendingAt(e.id); ok {
				grp.pel[i] = smPend{id: e.id, consumer: c, count: 1}
			} else {
				grp.pel = slices.Insert(grp.pel, i, smPend{id: e.id, consumer: c, count: 1})
			}
		}
		out = append(out, smEntryReply(e))
	}
	return modelOp{args: args, want: wArr(wArr(wBulk(k), wArr(out...)))}
}

// xpending is XPENDING key group, or XPENDING key group start end count [consumer].
func (g *smGen) xpending(k string, s *smStream, wrong bool) modelOp {
	rng := g.rng
	gr := g.group(s)
	args := []string{"XPENDING", k, gr}
	ext := rng.IntN(2) == 0
	var lo, hi smID
	count := 0
	consumer := ""
	if ext {
		lo, hi = smID{}, smID{^uint64(0), ^uint64(0)}
		loArg, hiArg := "-", "+"
		if rng.IntN(3) == 0 {
			lo, loArg = g.someID(s)
			hi, hiArg = g.someID(s)
			if hiArg == strconv.FormatUint(hi.ms, 10) {
				hi.seq = ^uint64(0)
			}
		}
		count = 1 + rng.IntN(10)
		args = append(args, loArg, hiArg, strconv.Itoa(count))
		if rng.IntN(3) == 0 {
			consumer = g.consumer()
			args = append(args, consumer)
		}
	}
	var grp *smGroup
	if s != nil {
		grp = s.groups[gr]
	}
	switch {
	case wrong:
		return wrongTypeOp(args)
	case grp == nil:
		return modelOp{args: args, want: wErr("NOGROUP No such key '" + k + "' or consumer group '" + gr + "'")}
	case !ext:
		return modelOp{args: args, want: smPendingSummary(grp)}
	}
	return smCheck(args, smPendingExt(grp, lo, hi, count, consumer))
}

// checkKeyspace compares every key's type, value and whether it has an expire time, and each
// DBSIZE: a stream's entries (XRANGE - +), XLEN, XINFO STREAM's counters, its groups (XINFO
// GROUPS) and each group's pending entries (XPENDING summary and extended).
func (g *smGen) checkKeyspace(r *modelRun, when string) {
	r.t.Helper()
	for db, m := range g.dbs {
		want := make(map[string]modelKey, len(m))
		for k, e := range m {
			if e.s != nil {
				want[k] = modelKey{typ: "stream", cmd: []string{"XRANGE", k, "-", "+"}, want: smEntriesReply(e.s.ents), ttl: e.ttl}
			} else {
				want[k] = modelKey{typ: "string", cmd: []string{"GET", k}, want: wBulk(e.str), ttl: e.ttl}
			}
		}
		checkModelDB(r, when, db, want)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s := m[k].s
			if s == nil {
				continue
			}
			expect := func(want wireReply, args ...string) {
				r.t.Helper()
				if got := r.c.do(args...); !smMatches(want, got) {
					r.fail("%s: db %d key %q: %s got %v, want %v", when, db, k, fmtArgs(args), got, want)
				}
			}
			expect(wInt(int64(len(s.ents))), "XLEN", k)
			expect(smGroupsReply(s), "XINFO", "GROUPS", k)
			if err := smInfoCheck(smInfoWant(s), r.c.do("XINFO", "STREAM", k)); err != nil {
				r.fail("%s: db %d key %q: XINFO STREAM: %v", when, db, k, err)
			}
			for _, name := range s.groupNames() {
				grp := s.groups[name]
				expect(smPendingSummary(grp), "XPENDING", k, name)
				expect(smPendingExt(grp, smID{}, smID{^uint64(0), ^uint64(0)}, 1<<20, ""), "XPENDING", k, name, "-", "+", "1048576")
				if harness.IsRedis() && strings.HasPrefix(when, "before restart") {
					grp.fuzzy = true // see smGroup.fuzzy and smPend.fuzzy
					for i := range grp.pel {
						grp.pel[i].fuzzy = true
					}
				}
			}
		}
	}
}

// TestStreamModel runs 25,000 random stream operations mixed with key and string ones (5,000
// with -short; scaled by $LAVIK_MODEL_OPS like TestRandomOpsModel, so make soak runs more) in
// pipelines of 1-64 over 5 keys in two databases, comparing every reply with the model. Every
// 300 operations it compares the whole keyspace and restarts the server, alternately clean and
// with kill -9 (appendfsync always, so every acknowledged write must survive), then compares
// again.
func TestStreamModel(t *testing.T) { runStreamModel(t, 25000, 21, false) }

// TestStreamModelGrouped is TestStreamModel (20,000 operations) on a server with the least
// group threshold (256 bytes), on 3 keys rather than 5, with entries of 1-4 fields of 100-500
// byte values, MAXLENs of 10-99, MINIDs mostly in a stream's first quarter and half as many
// DELs, so that most operations meet streams stored as chunks of entries (of 4 KiB and more)
// plus a record of their consumer groups, being built, trimmed, read by groups, acknowledged,
// renamed and restarted. Against Redis it runs the same operations on a plain server.
func TestStreamModelGrouped(t *testing.T) {
	if harness.IsRedis() {
		// group-threshold is Lavik's; the same operations check the model of larger streams.
		runStreamModel(t, 20000, 22, true)
		return
	}
	runStreamModel(t, 20000, 22, true, "--group-threshold", "256")
}

func runStreamModel(t *testing.T, full int, stream uint64, big bool, args ...string) {
	ops := modelOps(t, full, full/5)
	seed := e2eSeed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), stream))
	g := newSMGen(rng, big)
	r := startModelRun(t, seed, g, args...)
	start := time.Now()
	restarts := r.run(rng, ops, 300)
	streams, bigStreams, groups, pending := 0, 0, 0, 0
	for _, db := range g.dbs {
		for _, e := range db {
			if e.s == nil {
				continue
			}
			streams++
			if e.s.encodedAtLeast() > 256 {
				bigStreams++
			}
			groups += len(e.s.groups)
			for _, grp := range e.s.groups {
				pending += len(grp.pel)
			}
		}
	}
	t.Logf("%d ops, %d restarts, %d+%d keys (%d streams, %d of them over 256 bytes, %d groups, %d pending entries) at the end, %v",
		r.done, restarts, len(g.dbs[0]), len(g.dbs[1]), streams, bigStreams, groups, pending, time.Since(start).Round(time.Millisecond))
	t.Logf("%d of %d operations on a key holding a stream over 256 bytes", g.bigOps, r.done)
}
