package test

// The collection model tests drive the server and an in-memory model with the same seeded random
// commands, one test per type: TestSetModel, TestListModel and TestZSetModel. Each mixes its
// type's write and read commands with the key commands, with the other collection types' and
// the string commands on the same keys (WRONGTYPE both ways; ZUNIONSTORE also reads sets), and
// now and then a MULTI/EXEC of commands of every type, checked as one reply. They reuse the string
// model test's run loop (model_test.go): every reply is compared, and across clean and kill -9
// restarts so is the whole keyspace. The key space is small (10 keys in two databases, 14
// members) so that commands keep meeting what earlier ones built.
//
// Scores are a few integers and halves, so that ties (ordered by member) are common and sums
// stay exact, plus now and then other spellings and the infinities. Replies format them as
// Redis 7.0 does: "%.17g", "inf" and "-inf". Redis 7.0 keeps a small sorted set in a listpack,
// which stores an integral score as an integer, so a stored -0 reads back as 0 (a skiplist,
// used past 128 members or for members over 64 bytes, would keep -0); the model's sorted sets
// stay small, and it stores -0 as 0 but replies -0 where Redis replies with the computed score
// (ZINCRBY, ZADD INCR). BYLEX ranges are only defined over members of one score, so the lex
// commands go to keys whose sorted sets have a single score.

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

const (
	errIndexRange      = "ERR index out of range"
	errLposRank        = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	errLposCount       = "ERR COUNT can't be negative"
	errLposMaxlen      = "ERR MAXLEN can't be negative"
	errMpopCount       = "ERR count should be greater than 0"
	errZaddNXXX        = "ERR XX and NX options at the same time are not compatible"
	errZaddGTLTNX      = "ERR GT, LT, and/or NX options at the same time are not compatible"
	errZaddIncrPairs   = "ERR INCR option supports a single increment-element pair"
	errZRangeLimit     = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	errZRangeLexScores = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
)

// collEntry is one key of the model: a string, set, list or sorted set.
type collEntry struct {
	kind string             // the TYPE reply: "string", "set", "list" or "zset"
	str  string             // a string's value
	set  map[string]bool    // a set's members
	list []string           // a list's elements, head first
	zset map[string]float64 // a sorted set's scores by member
	ttl  bool
	// Invariant: a set, list or sorted set is never empty; the key goes with its last member.
}

// size is the number of members or elements; 0 for a string or a missing key (nil).
func (e *collEntry) size() int {
	if e == nil {
		return 0
	}
	return len(e.set) + len(e.list) + len(e.zset)
}

// members returns a set's or sorted set's members in byte order: failure reports and the
// choices made from them do not change from run to run.
func (e *collEntry) members() []string {
	var ms []string
	if e != nil {
		for m := range e.set {
			ms = append(ms, m)
		}
		for m := range e.zset {
			ms = append(ms, m)
		}
	}
	slices.Sort(ms)
	return ms
}

type zmember struct {
	member string
	score  float64
}

// zsorted returns a sorted set's members in Redis order: by score, ties by member bytes.
func (e *collEntry) zsorted() []zmember {
	var zs []zmember
	if e != nil {
		for m, s := range e.zset {
			zs = append(zs, zmember{m, s})
		}
	}
	slices.SortFunc(zs, func(a, b zmember) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return strings.Compare(a.member, b.member)
	})
	return zs
}

// uniform reports whether the sorted set e has a single score, so that BYLEX ranges are defined.
func (e *collEntry) uniform() bool {
	zs := e.zsorted()
	return len(zs) > 0 && zs[0].score == zs[len(zs)-1].score
}

func (e *collEntry) push(v string, left bool) {
	if left {
		e.list = slices.Insert(e.list, 0, v)
	} else {
		e.list = append(e.list, v)
	}
}

func (e *collEntry) pop(left bool) string {
	if left {
		v := e.list[0]
		e.list = e.list[1:]
		return v
	}
	v := e.list[len(e.list)-1]
	e.list = e.list[:len(e.list)-1]
	return v
}

// fmtScore formats a score as Redis 7.0 replies with it.
func fmtScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// storedScore is the score a small Redis sorted set keeps for s: -0 becomes 0.
func storedScore(s float64) float64 {
	if s == 0 {
		return 0
	}
	return s
}

func wBulks(ss []string) []wireReply {
	out := make([]wireReply, len(ss))
	for i, s := range ss {
		out[i] = wBulk(s)
	}
	return out
}

// wMembers is an array of ss in any order.
func wMembers(ss []string) wireReply {
	return wireReply{Kind: wUnordered, Int: 1, Elems: wBulks(ss)}
}

func wNilArray() wireReply { return wireReply{Kind: '*', Null: true} }

// wZMembers is the reply of a sorted-set range: members, each followed by its score if
// withScores.
func wZMembers(zs []zmember, withScores bool) wireReply {
	out := wArr()
	for _, z := range zs {
		out.Elems = append(out.Elems, wBulk(z.member))
		if withScores {
			out.Elems = append(out.Elems, wBulk(fmtScore(z.score)))
		}
	}
	return out
}

// collMembers are the members of sets and sorted sets: integers (Redis keeps a set of only
// integers as an intset) and strings, all short so that Redis's sorted sets stay listpacks.
var collMembers = []string{"a", "b", "c", "d", "aa", "", "1", "2", "10", "-5", "007", "m 1", "\x00\xff", "ä"}

// listElems are the elements of lists: few, so that LREM, LPOS and LINSERT's pivot find them.
var listElems = []string{"a", "b", "c", "", "1", "x y", "\x00\xff"}

// longElem turns a Redis quicklist node into a plain node.
var longElem = "long:" + strings.Repeat("0123456789", 10)

// zScores are the score arguments and their values: the first zCommonScores most of the time.
var zScores = []struct {
	arg string
	val float64
}{
	{"0", 0}, {"1", 1}, {"2", 2}, {"3", 3}, {"-1", -1}, {"-2", -2}, {"0.5", 0.5}, {"1.5", 1.5},
	{"-0.5", -0.5}, {"2.5", 2.5},
	{"1.0", 1}, {".5", 0.5}, {"+2", 2}, {"1e0", 1}, {"-0", math.Copysign(0, -1)},
	{"+inf", math.Inf(1)}, {"-inf", math.Inf(-1)}, {"inf", math.Inf(1)},
}

const zCommonScores = 10

// badScores are refused as scores: Redis parses with strtod and refuses leading spaces, an
// empty string, trailing bytes and nan.
var badScores = []string{"abc", "nan", "", "1.5.5", " 1"}

var scoreBounds = []string{"-inf", "+inf", "0", "1", "(1", "1.5", "(1.5", "-1", "(-1", "2", "(2", "3",
	"(0.5", "-0.5", "(-inf", "(+inf"}

var lexBounds = []string{"-", "+", "[a", "(a", "[b", "(b", "[aa", "[1", "(10", "[", "(", "[c", "(d",
	"[ä", "[m 1"}

var zWeights = []string{"1", "2", "0.5", "-1", "0", "3"}

type scoreBound struct {
	val float64
	ex  bool
}

func parseScoreBound(s string) scoreBound {
	v, err := strconv.ParseFloat(strings.TrimPrefix(s, "("), 64)
	if err != nil {
		panic("bad score bound in the model: " + s)
	}
	return scoreBound{v, strings.HasPrefix(s, "(")}
}

func inScoreRange(x float64, lo, hi scoreBound) bool {
	return (x > lo.val || !lo.ex && x == lo.val) && (x < hi.val || !hi.ex && x == hi.val)
}

// inLexRange reports whether member x lies between the BYLEX bounds lo and hi.
func inLexRange(x, lo, hi string) bool {
	gte := lo == "-" || lo != "+" && (x > lo[1:] || lo[0] == '[' && x == lo[1:])
	lte := hi == "+" || hi != "-" && (x < hi[1:] || hi[0] == '[' && x == hi[1:])
	return gte && lte
}

// rankRange converts Redis start and stop indexes (LRANGE, LTRIM, ZRANGE) over n elements into
// the half-open range [lo, hi).
func rankRange(start, stop, n int) (lo, hi int) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0
	}
	return start, min(stop, n-1) + 1
}

// collGen produces random operations on sets, lists, sorted sets, strings and keys, mostly on
// its focus type, and applies each to its model. It is the collection model tests' modelGen.
type collGen struct {
	rng   *rand.Rand
	focus string // "set", "list" or "zset"
	dbs   [2]map[string]*collEntry
	cur   int  // database selected on the connection
	inTx  bool // generating a transaction: every reply must be predictable (no random SPOP)
	keys  []string
	// members are the members sets and sorted sets are made of, elems the elements of lists:
	// collMembers and listElems, and more and longer ones in the grouped variants.
	members, elems []string
}

func newCollGen(rng *rand.Rand, focus string) *collGen {
	keys := []string{"", "sp ace", "\x00bin\xff", "ключ", "{tag}c"}
	for i := len(keys); i < 10; i++ {
		keys = append(keys, "c"+strconv.Itoa(i))
	}
	return &collGen{rng: rng, focus: focus, dbs: [2]map[string]*collEntry{{}, {}}, keys: keys, members: collMembers, elems: listElems}
}

func (g *collGen) selected() int { return g.cur }

func (g *collGen) db() map[string]*collEntry { return g.dbs[g.cur] }

func (g *collGen) key() string { return g.keys[g.rng.IntN(len(g.keys))] }

// keyOf picks a key: half the time one that holds a value of one of kinds, if there is one, so
// that commands mostly meet values of their type rather than missing keys and WRONGTYPE.
func (g *collGen) keyOf(kinds ...string) string {
	if g.rng.IntN(2) == 0 {
		var ks []string
		for _, k := range g.keys {
			if e := g.db()[k]; e != nil && slices.Contains(kinds, e.kind) {
				ks = append(ks, k)
			}
		}
		if len(ks) > 0 {
			return ks[g.rng.IntN(len(ks))]
		}
	}
	return g.key()
}

// keyList returns k and up to n-1 more keys picked by keyOf(kinds), repeats allowed.
func (g *collGen) keyList(k string, n int, kinds ...string) []string {
	ks := []string{k}
	for i := g.rng.IntN(n); i > 0; i-- {
		ks = append(ks, g.keyOf(kinds...))
	}
	return ks
}

// lookup returns key k in the selected database (nil when missing) and whether a command on
// values of type kind must answer WRONGTYPE.
func (g *collGen) lookup(k, kind string) (e *collEntry, wrong bool) {
	e = g.db()[k]
	return e, e != nil && e.kind != kind
}

// dropIfEmpty deletes key k when its collection e has lost its last member.
func (g *collGen) dropIfEmpty(k string, e *collEntry) {
	if e.size() == 0 && g.db()[k] == e {
		delete(g.db(), k)
	}
}

// member picks a set or sorted-set member: half the time one that e has, if it has any.
func (g *collGen) member(e *collEntry) string {
	if ms := e.members(); len(ms) > 0 && g.rng.IntN(2) == 0 {
		return ms[g.rng.IntN(len(ms))]
	}
	return g.members[g.rng.IntN(len(g.members))]
}

// newMember picks a member to add: mostly any member, sometimes one that e has.
func (g *collGen) newMember(e *collEntry) string {
	if g.rng.IntN(2) == 0 {
		return g.member(e)
	}
	return g.members[g.rng.IntN(len(g.members))]
}

// elem picks a list element: half the time one that e has, if it is a list.
func (g *collGen) elem(e *collEntry) string {
	switch {
	case e != nil && len(e.list) > 0 && g.rng.IntN(2) == 0:
		return e.list[g.rng.IntN(len(e.list))]
	case g.rng.IntN(30) == 0:
		return longElem
	}
	return g.elems[g.rng.IntN(len(g.elems))]
}

// index picks a list or rank index around a length of n, out of range now and then.
func (g *collGen) index(n int) int { return g.rng.IntN(2*n+7) - n - 3 }

// indexPair picks start and stop indexes around a length of n, mostly in order.
func (g *collGen) indexPair(n int) (start, stop int) {
	start, stop = g.index(n), g.index(n)
	norm := func(i int) int {
		if i < 0 {
			return i + n
		}
		return i
	}
	if norm(start) > norm(stop) && g.rng.IntN(5) > 0 {
		start, stop = stop, start
	}
	return start, stop
}

func (g *collGen) indexPairArgs(n int) (start, stop string) {
	a, b := g.indexPair(n)
	return strconv.Itoa(a), strconv.Itoa(b)
}

// scoreRange picks BYSCORE bounds, mostly min before max.
func (g *collGen) scoreRange() (lo, hi string) {
	lo, hi = scoreBounds[g.rng.IntN(len(scoreBounds))], scoreBounds[g.rng.IntN(len(scoreBounds))]
	if parseScoreBound(lo).val > parseScoreBound(hi).val && g.rng.IntN(5) > 0 {
		lo, hi = hi, lo
	}
	return lo, hi
}

// lexRange picks BYLEX bounds, mostly min before max.
func (g *collGen) lexRange() (lo, hi string) {
	order := func(b string) string {
		switch b {
		case "-":
			return ""
		case "+":
			return "\xff\xff"
		}
		return b[1:]
	}
	lo, hi = lexBounds[g.rng.IntN(len(lexBounds))], lexBounds[g.rng.IntN(len(lexBounds))]
	if order(lo) > order(hi) && g.rng.IntN(5) > 0 {
		lo, hi = hi, lo
	}
	return lo, hi
}

func (g *collGen) ttlSeconds() string { return strconv.Itoa(1000 + g.rng.IntN(100000)) }

func wrongTypeOp(args []string) modelOp { return modelOp{args: args, want: wErr(errWrongType)} }

func (g *collGen) next() modelOp {
	switch r := g.rng.IntN(100); {
	case r < 3:
		return g.multiExec()
	case r < 6:
		g.cur = g.rng.IntN(2)
		return modelOp{args: []string{"SELECT", strconv.Itoa(g.cur)}, want: wOK}
	case r < 75:
		return g.typeOp(g.focus)
	case r < 87:
		return g.keyOp()
	case r < 94:
		others := slices.DeleteFunc([]string{"set", "list", "zset"}, func(k string) bool { return k == g.focus })
		return g.typeOp(others[g.rng.IntN(len(others))])
	default:
		return g.stringOp()
	}
}

func (g *collGen) typeOp(kind string) modelOp {
	switch kind {
	case "set":
		return g.setOp()
	case "list":
		return g.listOp()
	}
	return g.zsetOp()
}

// multiExec returns a transaction of 2-6 commands of every type. Errors in it are all found
// when the command runs (a wrong number of arguments would abort EXEC instead).
func (g *collGen) multiExec() modelOp {
	g.inTx = true
	defer func() { g.inTx = false }()
	tx := make([]modelOp, 2+g.rng.IntN(5))
	want := wArr()
	for i := range tx {
		switch r := g.rng.IntN(10); {
		case r < 6:
			tx[i] = g.typeOp([]string{"set", "list", "zset"}[g.rng.IntN(3)])
		case r < 9:
			tx[i] = g.keyOp()
		default:
			tx[i] = g.stringOp()
		}
		if tx[i].check != nil {
			panic("collGen: an unpredictable reply inside a transaction")
		}
		want.Elems = append(want.Elems, tx[i].want)
	}
	return modelOp{tx: tx, want: want}
}

// keyOp is DEL, EXISTS, TYPE, EXPIRE (long TTLs only), PERSIST, TTL or RENAME.
func (g *collGen) keyOp() modelOp {
	rng, db := g.rng, g.db()
	k := g.key()
	e := db[k]
	switch r := rng.IntN(100); {
	case r < 18: // DEL with 1-3 keys, repeats allowed
		args := []string{"DEL"}
		n := int64(0)
		for i := rng.IntN(3); i >= 0; i-- {
			kk := g.key()
			if rng.IntN(3) == 0 {
				kk = k
			}
			args = append(args, kk)
			if _, ok := db[kk]; ok {
				delete(db, kk)
				n++
			}
		}
		return modelOp{args: args, want: wInt(n)}
	case r < 30: // EXISTS with repeats
		args := []string{"EXISTS"}
		n := int64(0)
		for i := rng.IntN(3); i >= 0; i-- {
			kk := g.key()
			if rng.IntN(3) == 0 {
				kk = k
			}
			args = append(args, kk)
			if _, ok := db[kk]; ok {
				n++
			}
		}
		return modelOp{args: args, want: wInt(n)}
	case r < 45:
		if e == nil {
			return modelOp{args: []string{"TYPE", k}, want: wStatus("none")}
		}
		return modelOp{args: []string{"TYPE", k}, want: wStatus(e.kind)}
	case r < 62:
		args := []string{"EXPIRE", k, g.ttlSeconds()}
		if e == nil {
			return modelOp{args: args, want: wInt(0)}
		}
		e.ttl = true
		return modelOp{args: args, want: wInt(1)}
	case r < 72:
		args := []string{"PERSIST", k}
		if e == nil || !e.ttl {
			return modelOp{args: args, want: wInt(0)}
		}
		e.ttl = false
		return modelOp{args: args, want: wInt(1)}
	case r < 80:
		args := []string{"TTL", k}
		switch {
		case e == nil:
			return modelOp{args: args, want: wInt(-2)}
		case !e.ttl:
			return modelOp{args: args, want: wInt(-1)}
		}
		return modelOp{args: args, want: wireReply{Kind: wAnyPositive}}
	default: // RENAME onto a key of any type, or onto itself
		dst := g.key()
		if rng.IntN(10) == 0 {
			dst = k
		}
		args := []string{"RENAME", k, dst}
		if e == nil {
			return modelOp{args: args, want: wErr(errNoSuchKey)}
		}
		delete(db, k)
		db[dst] = e
		return modelOp{args: args, want: wOK}
	}
}

// stringOp is SET (replacing a value of any type and its TTL) or GET.
func (g *collGen) stringOp() modelOp {
	k := g.key()
	if g.rng.IntN(3) == 0 {
		v := listElems[g.rng.IntN(len(listElems))] + strconv.Itoa(g.rng.IntN(100))
		args := []string{"SET", k, v}
		ttl := g.rng.IntN(4) == 0
		if ttl {
			args = append(args, "EX", g.ttlSeconds())
		}
		g.db()[k] = &collEntry{kind: "string", str: v, ttl: ttl}
		return modelOp{args: args, want: wOK}
	}
	args := []string{"GET", k}
	switch e, wrong := g.lookup(k, "string"); {
	case wrong:
		return wrongTypeOp(args)
	case e == nil:
		return modelOp{args: args, want: wNil()}
	default:
		return modelOp{args: args, want: wBulk(e.str)}
	}
}

// ---- sets

func (g *collGen) setOp() modelOp {
	rng, db := g.rng, g.db()
	k := g.keyOf("set")
	e, wrong := g.lookup(k, "set")
	switch r := rng.IntN(100); {
	case r < 18: // SADD with 1-4 members, repeats allowed
		args := []string{"SADD", k}
		for i := rng.IntN(4); i >= 0; i-- {
			args = append(args, g.newMember(e))
		}
		if wrong {
			return wrongTypeOp(args)
		}
		if e == nil {
			e = &collEntry{kind: "set", set: map[string]bool{}}
			db[k] = e
		}
		n := int64(0)
		for _, m := range args[2:] {
			if !e.set[m] {
				e.set[m] = true
				n++
			}
		}
		return modelOp{args: args, want: wInt(n)}
	case r < 28: // SREM with 1-3 members
		args := []string{"SREM", k}
		for i := rng.IntN(3); i >= 0; i-- {
			args = append(args, g.member(e))
		}
		switch {
		case wrong:
			return wrongTypeOp(args)
		case e == nil:
			return modelOp{args: args, want: wInt(0)}
		}
		n := int64(0)
		for _, m := range args[2:] {
			if e.set[m] {
				delete(e.set, m)
				n++
			}
		}
		g.dropIfEmpty(k, e)
		return modelOp{args: args, want: wInt(n)}
	case r < 37:
		return g.spop(k, e, wrong)
	case r < 44:
		return g.smove(k, e, wrong)
	case r < 53: // SINTERSTORE, SUNIONSTORE, SDIFFSTORE: the destination's old value and type do not matter
		op := []string{"SINTER", "SUNION", "SDIFF"}[rng.IntN(3)]
		dst := g.key()
		keys := g.keyList(k, 3, "set")
		args := append([]string{op + "STORE", dst}, keys...)
		res, wrong := g.setAlgebra(op, keys)
		switch {
		case wrong:
			return wrongTypeOp(args)
		case len(res) == 0:
			delete(db, dst)
			return modelOp{args: args, want: wInt(0)}
		}
		db[dst] = &collEntry{kind: "set", set: res}
		return modelOp{args: args, want: wInt(int64(len(res)))}
	case r < 59:
		args := []string{"SISMEMBER", k, g.member(e)}
		if wrong {
			return wrongTypeOp(args)
		}
		return modelOp{args: args, want: wInt(b2i(e != nil && e.set[args[2]]))}
	case r < 65:
		args := []string{"SMISMEMBER", k}
		want := wArr()
		for i := rng.IntN(4); i >= 0; i-- {
			m := g.member(e)
			args = append(args, m)
			want.Elems = append(want.Elems, wInt(b2i(e != nil && e.set[m])))
		}
		if wrong {
			return wrongTypeOp(args)
		}
		return modelOp{args: args, want: want}
	case r < 70:
		args := []string{"SCARD", k}
		if wrong {
			return wrongTypeOp(args)
		}
		return modelOp{args: args, want: wInt(int64(e.size()))}
	case r < 75:
		args := []string{"SMEMBERS", k}
		if wrong {
			return wrongTypeOp(args)
		}
		return modelOp{args: args, want: wMembers(e.members())}
	case r < 87: // SINTER, SUNION, SDIFF
		op := []string{"SINTER", "SUNION", "SDIFF"}[rng.IntN(3)]
		keys := g.keyList(k, 3, "set")
		args := append([]string{op}, keys...)
		res, wrong := g.setAlgebra(op, keys)
		if wrong {
			return wrongTypeOp(args)
		}
		return modelOp{args: args, want: wMembers((&collEntry{set: res}).members())}
	case r < 97: // SINTERCARD [LIMIT]
		keys := g.keyList(k, 3, "set")
		args := append([]string{"SINTERCARD", strconv.Itoa(len(keys))}, keys...)
		limit := 0
		if rng.IntN(2) == 0 {
			limit = []int{0, 1, 2, 5}[rng.IntN(4)]
			args = append(args, "LIMIT", strconv.Itoa(limit))
		}
		res, wrong := g.setAlgebra("SINTER", keys)
		if wrong {
			return wrongTypeOp(args)
		}
		n := len(res)
		if limit > 0 {
			n = min(n, limit)
		}
		return modelOp{args: args, want: wInt(int64(n))}
	default: // argument errors, found before the keys are looked at
		errs := []modelOp{
			{args: []string{"SINTERCARD", "0", k}, want: wErr(errSetNumkeys)},
			{args: []string{"SINTERCARD", "2", k}, want: wErr(errSetNumkeysArgs)},
			{args: []string{"SINTERCARD", "1", k, "LIMIT", "-1"}, want: wErr(errSetLimit)},
			{args: []string{"SINTERCARD", "1", k, "LIMIT"}, want: wErr(errSyntax)},
			{args: []string{"SPOP", k, "-1"}, want: wErr(errSetPopCount)},
		}
		return errs[rng.IntN(len(errs))]
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// setAlgebra returns the result of op (SINTER, SUNION or SDIFF) over keys, or wrong when one of
// them holds another type: Redis checks every key's type first, even after a missing one.
func (g *collGen) setAlgebra(op string, keys []string) (res map[string]bool, wrong bool) {
	sets := make([]map[string]bool, len(keys))
	for i, k := range keys {
		e, w := g.lookup(k, "set")
		if w {
			return nil, true
		}
		if e != nil {
			sets[i] = e.set
		}
	}
	res = map[string]bool{}
	for m := range sets[0] {
		inAll, inAny := true, false
		for _, s := range sets[1:] {
			inAll = inAll && s[m]
			inAny = inAny || s[m]
		}
		if op == "SINTER" && inAll || op == "SDIFF" && !inAny {
			res[m] = true
		}
	}
	if op == "SUNION" {
		for _, s := range sets {
			for m := range s {
				res[m] = true
			}
		}
	}
	return res, false
}

// spop is SPOP with or without a count. When it takes some members and not others, the server
// picks them at random: the reply is checked to be members of the model's set, and exactly
// those leave the model.
func (g *collGen) spop(k string, e *collEntry, wrong bool) modelOp {
	rng := g.rng
	args := []string{"SPOP", k}
	count := -1 // no count argument
	if rng.IntN(3) > 0 {
		count = 1 + rng.IntN(4)
		if rng.IntN(10) == 0 {
			count = 0
		}
	}
	n := e.size()
	if g.inTx && !wrong && n > 0 && (count < 0 && n > 1 || count > 0 && count < n) {
		count = n + rng.IntN(2) // a transaction's SPOP takes the whole set
	}
	if count >= 0 {
		args = append(args, strconv.Itoa(count))
	}
	switch {
	case wrong:
		return wrongTypeOp(args)
	case e == nil && count < 0:
		return modelOp{args: args, want: wNil()}
	case e == nil || count == 0:
		return modelOp{args: args, want: wArr()}
	case count < 0 && n == 1:
		delete(g.db(), k)
		return modelOp{args: args, want: wBulk(e.members()[0])}
	case count >= n:
		delete(g.db(), k)
		return modelOp{args: args, want: wMembers(e.members())}
	}
	db, before := g.db(), fmt.Sprintf("%q", e.members())
	check := func(got wireReply) error {
		popped := got.Elems
		if count < 0 {
			if got.Kind != '$' || got.Null {
				return fmt.Errorf("want one member of %s", before)
			}
			popped = []wireReply{got}
		} else if got.Kind != '*' || got.Null || len(got.Elems) != count {
			return fmt.Errorf("want an array of %d members of %s", count, before)
		}
		for _, p := range popped {
			if p.Kind != '$' || p.Null || !e.set[p.Str] {
				return fmt.Errorf("popped %v: not a member of %s, or popped twice", p, before)
			}
			delete(e.set, p.Str)
		}
		if len(e.set) == 0 {
			delete(db, k)
		}
		return nil
	}
	return modelOp{args: args, check: check}
}

// smove is SMOVE, which answers 0 for a missing source before it looks at the destination's
// type.
func (g *collGen) smove(k string, e *collEntry, wrong bool) modelOp {
	dst := g.key()
	if g.rng.IntN(10) == 0 {
		dst = k
	}
	m := g.member(e)
	args := []string{"SMOVE", k, dst, m}
	de, dwrong := g.lookup(dst, "set")
	switch {
	case e == nil:
		return modelOp{args: args, want: wInt(0)}
	case wrong || dwrong:
		return wrongTypeOp(args)
	case dst == k || !e.set[m]:
		return modelOp{args: args, want: wInt(b2i(e.set[m]))}
	}
	delete(e.set, m)
	g.dropIfEmpty(k, e)
	if de == nil {
		de = &collEntry{kind: "set", set: map[string]bool{}}
		g.db()[dst] = de
	}
	de.set[m] = true
	return modelOp{args: args, want: wInt(1)}
}

// ---- lists

func (g *collGen) listOp() modelOp {
	rng := g.rng
	k := g.keyOf("list")
	e, wrong := g.lookup(k, "list")
	n := e.size()
	switch r := rng.IntN(100); {
	case r < 20: // LPUSH, RPUSH with 1-4 elements; a long list is trimmed instead
		if !wrong && n > 50 {
			e.list = e.list[:20]
			return modelOp{args: []string{"LTRIM", k, "0", "19"}, want: wOK}
		}
		return g.push(k, e, wrong, []string{"LPUSH", "RPUSH"}[rng.IntN(2)])
	case r < 24:
		return g.push(k, e, wrong, []string{"LPUSHX", "RPUSHX"}[rng.IntN(2)])
	case r < 33:
		return g.lpop(k, e, wrong)
	case r < 37:
		args := []string{"LSET", k, strconv.Itoa(g.index(n)), g.elem(e)}
		if rng.IntN(20) == 0 {
			args[2] = "x"
		}
		i, err := strconv.Atoi(args[2])
		switch {
		case e == nil:
			return modelOp{args: args, want: wErr(errNoSuchKey)}
		case wrong:
			return wrongTypeOp(args)
		case err != nil:
			return modelOp{args: args, want: wErr(errNotInt)}
		case i < 0:
			i += n
		}
		if i < 0 || i >= n {
			return modelOp{args: args, want: wErr(errIndexRange)}
		}
		e.list[i] = args[3]
		return modelOp{args: args, want: wOK}
	case r < 42:
		where := []string{"BEFORE", "AFTER"}[rng.IntN(2)]
		pivot, v := g.elem(e), g.elem(e)
		args := []string{"LINSERT", k, where, pivot, v}
		switch {
		case e == nil:
			return modelOp{args: args, want: wInt(0)}
		case wrong:
			return wrongTypeOp(args)
		}
		i := slices.Index(e.list, pivot)
		if i < 0 {
			return modelOp{args: args, want: wInt(-1)}
		}
		if where == "AFTER" {
			i++
		}
		e.list = slices.Insert(e.list, i, v)
		return modelOp{args: args, want: wInt(int64(len(e.list)))}
	case r < 46:
		return g.lrem(k, e, wrong)
	case r < 49:
		start, stop := g.indexPair(n)
		if rng.IntN(2) == 0 { // drop an element or two at either end
			start, stop = rng.IntN(3), -1-rng.IntN(3)
		}
		args := []string{"LTRIM", k, strconv.Itoa(start), strconv.Itoa(stop)}
		switch {
		case wrong:
			return wrongTypeOp(args)
		case e == nil:
			return modelOp{args: args, want: wOK}
		}
		lo, hi := rankRange(start, stop, n)
		e.list = slices.Clone(e.list[lo:hi])
		g.dropIfEmpty(k, e)
		return modelOp{args: args, want: wOK}
	case r < 57:
		return g.lmove(k, e, wrong, r < 52)
	case r < 62:
		return g.lmpop(k)
	case r < 66:
		args := []string{"LLEN", k}
		if wrong {
			return wrongTypeOp(args)
		}
		return modelOp{args: args, want: wInt(int64(n))}
	case r < 76:
		start, stop := g.indexPair(n)
		if rng.IntN(4) == 0 {
			start, stop = 0, -1
		}
		args := []string{"LRANGE", k, strconv.Itoa(start), strconv.Itoa(stop)}
		if wrong {
			return wrongTypeOp(args)
		}
		var sel []string
		if e != nil {
			lo, hi := rankRange(start, stop, n)
			sel = e.list[lo:hi]
		}
		return modelOp{args: args, want: wArr(wBulks(sel)...)}
	case r < 82:
		i := g.index(n)
		args := []string{"LINDEX", k, strconv.Itoa(i)}
		if i < 0 {
			i += n
		}
		switch {
		case wrong:
			return wrongTypeOp(args)
		case i < 0 || i >= n:
			return modelOp{args: args, want: wNil()}
		}
		return modelOp{args: args, want: wBulk(e.list[i])}
	case r < 97:
		return g.lpos(k, e, wrong)
	default: // argument errors, found before the key is looked at
		errs := []modelOp{
			{args: []string{"LPOS", k, "a", "RANK", "0"}, want: wErr(errLposRank)},
			{args: []string{"LPOS", k, "a", "COUNT", "-1"}, want: wErr(errLposCount)},
			{args: []string{"LPOS", k, "a", "MAXLEN", "-1"}, want: wErr(errLposMaxlen)},
			{args: []string{"LPOS", k, "a", "RANK"}, want: wErr(errSyntax)},
			{args: []string{"LMPOP", "1", k, "LEFT", "COUNT", "0"}, want: wErr(errMpopCount)},
			{args: []string{"LMPOP", "0", k, "LEFT"}, want: wErr(errSetNumkeys)},
			{args: []string{"LMPOP", "1", k, "MIDDLE"}, want: wErr(errSyntax)},
			{args: []string{[]string{"LPOP", "RPOP"}[rng.IntN(2)], k, "-1"}, want: wErr(errSetPopCount)},
			{args: []string{"LTRIM", k, "0", "x"}, want: wErr(errNotInt)},
		}
		return errs[rng.IntN(len(errs))]
	}
}

// push is LPUSH, RPUSH (which create the list), LPUSHX or RPUSHX (which do not) with 1-4
// elements.
func (g *collGen) push(k string, e *collEntry, wrong bool, cmd string) modelOp {
	args := []string{cmd, k}
	for i := g.rng.IntN(4); i >= 0; i-- {
		args = append(args, g.elem(e))
	}
	switch {
	case wrong:
		return wrongTypeOp(args)
	case e == nil && strings.HasSuffix(cmd, "X"):
		return modelOp{args: args, want: wInt(0)}
	case e == nil:
		e = &collEntry{kind: "list"}
		g.db()[k] = e
	}
	for _, v := range args[2:] {
		e.push(v, cmd[0] == 'L')
	}
	return modelOp{args: args, want: wInt(int64(len(e.list)))}
}

// lpop is LPOP or RPOP, with or without a count: a count makes the reply an array, a null
// array for a missing key.
func (g *collGen) lpop(k string, e *collEntry, wrong bool) modelOp {
	cmd := []string{"LPOP", "RPOP"}[g.rng.IntN(2)]
	args := []string{cmd, k}
	count := -1
	if g.rng.IntN(2) == 0 {
		count = 1 + g.rng.IntN(4)
		if g.rng.IntN(10) == 0 {
			count = 0
		}
		args = append(args, strconv.Itoa(count))
	}
	switch {
	case e == nil && count < 0:
		return modelOp{args: args, want: wNil()}
	case e == nil:
		return modelOp{args: args, want: wNilArray()}
	case wrong:
		return wrongTypeOp(args)
	case count < 0:
		v := e.pop(cmd == "LPOP")
		g.dropIfEmpty(k, e)
		return modelOp{args: args, want: wBulk(v)}
	}
	want := wArr()
	for i := 0; i < count && len(e.list) > 0; i++ {
		want.Elems = append(want.Elems, wBulk(e.pop(cmd == "LPOP")))
	}
	g.dropIfEmpty(k, e)
	return modelOp{args: args, want: want}
}

// lrem is LREM with a count from -2 to 2: from the head, from the tail, or all.
func (g *collGen) lrem(k string, e *collEntry, wrong bool) modelOp {
	count := g.rng.IntN(5) - 2
	v := g.elem(e)
	args := []string{"LREM", k, strconv.Itoa(count), v}
	switch {
	case e == nil:
		return modelOp{args: args, want: wInt(0)}
	case wrong:
		return wrongTypeOp(args)
	}
	limit := abs(count)
	if limit == 0 {
		limit = len(e.list)
	}
	removed := 0
	if count >= 0 {
		e.list = slices.DeleteFunc(e.list, func(x string) bool {
			if x == v && removed < limit {
				removed++
				return true
			}
			return false
		})
	} else {
		for i := len(e.list) - 1; i >= 0 && removed < limit; i-- {
			if e.list[i] == v {
				e.list = slices.Delete(e.list, i, i+1)
				removed++
			}
		}
	}
	g.dropIfEmpty(k, e)
	return modelOp{args: args, want: wInt(int64(removed))}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// lmove is LMOVE or RPOPLPUSH, onto another list or the same one: a missing source answers nil
// before the destination's type is looked at.
func (g *collGen) lmove(k string, e *collEntry, wrong, lmove bool) modelOp {
	dst := g.key()
	if g.rng.IntN(6) == 0 {
		dst = k
	}
	from, to := "RIGHT", "LEFT"
	args := []string{"RPOPLPUSH", k, dst}
	if lmove {
		from, to = []string{"LEFT", "RIGHT"}[g.rng.IntN(2)], []string{"LEFT", "RIGHT"}[g.rng.IntN(2)]
		args = []string{"LMOVE", k, dst, from, to}
	}
	de, dwrong := g.lookup(dst, "list")
	switch {
	case e == nil:
		return modelOp{args: args, want: wNil()}
	case wrong || dwrong:
		return wrongTypeOp(args)
	}
	v := e.pop(from == "LEFT")
	if de == nil {
		de = &collEntry{kind: "list"}
		g.db()[dst] = de
	}
	de.push(v, to == "LEFT")
	g.dropIfEmpty(k, e)
	return modelOp{args: args, want: wBulk(v)}
}

// lmpop is LMPOP over 1-3 keys: it pops from the first non-empty list and checks the types of
// the keys only up to that one.
func (g *collGen) lmpop(k string) modelOp {
	keys := g.keyList(k, 3, "list")
	where := []string{"LEFT", "RIGHT"}[g.rng.IntN(2)]
	args := append(append([]string{"LMPOP", strconv.Itoa(len(keys))}, keys...), where)
	count := 1
	if g.rng.IntN(2) == 0 {
		count = 1 + g.rng.IntN(4)
		args = append(args, "COUNT", strconv.Itoa(count))
	}
	for _, kk := range keys {
		e, wrong := g.lookup(kk, "list")
		switch {
		case e == nil:
			continue
		case wrong:
			return wrongTypeOp(args)
		}
		popped := wArr()
		for i := 0; i < count && len(e.list) > 0; i++ {
			popped.Elems = append(popped.Elems, wBulk(e.pop(where == "LEFT")))
		}
		g.dropIfEmpty(kk, e)
		return modelOp{args: args, want: wArr(wBulk(kk), popped)}
	}
	return modelOp{args: args, want: wNilArray()}
}

// lpos is LPOS with any of RANK (from the tail when negative), COUNT (0: all) and MAXLEN (the
// number of elements compared, 0: all).
func (g *collGen) lpos(k string, e *collEntry, wrong bool) modelOp {
	rng := g.rng
	v := g.elem(e)
	rank, count, maxlen := 1, -1, 0
	var opts [][]string
	if rng.IntN(3) == 0 {
		rank = []int{1, 2, 3, -1, -2}[rng.IntN(5)]
		opts = append(opts, []string{"RANK", strconv.Itoa(rank)})
	}
	if rng.IntN(3) == 0 {
		count = rng.IntN(3)
		opts = append(opts, []string{"COUNT", strconv.Itoa(count)})
	}
	if rng.IntN(3) == 0 {
		maxlen = []int{0, 1, 2, 4}[rng.IntN(4)]
		opts = append(opts, []string{"MAXLEN", strconv.Itoa(maxlen)})
	}
	rng.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	args := []string{"LPOS", k, v}
	for _, o := range opts {
		args = append(args, o...)
	}
	switch {
	case wrong:
		return wrongTypeOp(args)
	case e == nil && count < 0:
		return modelOp{args: args, want: wNil()}
	}
	n := e.size()
	found := wArr()
	matched := 0
	for scanned := 0; scanned < n && (maxlen == 0 || scanned < maxlen); scanned++ {
		i := scanned
		if rank < 0 {
			i = n - 1 - scanned
		}
		if e.list[i] != v {
			continue
		}
		if matched++; matched < abs(rank) {
			continue
		}
		found.Elems = append(found.Elems, wInt(int64(i)))
		if count < 0 || count > 0 && len(found.Elems) >= count {
			break
		}
	}
	switch {
	case count >= 0:
		return modelOp{args: args, want: found}
	case len(found.Elems) == 0:
		return modelOp{args: args, want: wNil()}
	}
	return modelOp{args: args, want: found.Elems[0]}
}

// ---- sorted sets

func (g *collGen) zsetOp() modelOp {
	rng, db := g.rng, g.db()
	k := g.keyOf("zset")
	e, wrong := g.lookup(k, "zset")
	switch r := rng.IntN(100); {
	case r < 20:
		return g.zadd(k, e, wrong)
	case r < 25:
		return g.zincrby(k, e, wrong)
	case r < 30: // ZREM with 1-3 members
		args := []string{"ZREM", k}
		for i := rng.IntN(3); i >= 0; i-- {
			args = append(args, g.member(e))
		}
		switch {
		case wrong:
			return wrongTypeOp(args)
		case e == nil:
			return modelOp{args: args, want: wInt(0)}
		}
		n := int64(0)
		for _, m := range args[2:] {
			if _, ok := e.zset[m]; ok {
				delete(e.zset, m)
				n++
			}
		}
		g.dropIfEmpty(k, e)
		return modelOp{args: args, want: wInt(n)}
	case r < 37:
		return g.zremrange(k, e, wrong)
	case r < 42:
		return g.zpop(k, e, wrong)
	case r < 49:
		return g.zstore(k)
	case r < 53:
		return g.zrange(k, g.key())
	case r < 57:
		args := []string{"ZSCORE", k, g.member(e)}
		if wrong {
			return wrongTypeOp(args)
		}
		if s, ok := e.zscore(args[2]); ok {
			return modelOp{args: args, want: wBulk(fmtScore(s))}
		}
		return modelOp{args: args, want: wNil()}
	case r < 60:
		args := []string{"ZMSCORE", k}
		want := wArr()
		for i := rng.IntN(3); i >= 0; i-- {
			m := g.member(e)
			args = append(args, m)
			if s, ok := e.zscore(m); ok {
				want.Elems = append(want.Elems, wBulk(fmtScore(s)))
			} else {
				want.Elems = append(want.Elems, wNil())
			}
		}
		if wrong {
			return wrongTypeOp(args)
		}
		return modelOp{args: args, want: want}
	case r < 63:
		args := []string{"ZCARD", k}
		if wrong {
			return wrongTypeOp(args)
		}
		return modelOp{args: args, want: wInt(int64(e.size()))}
	case r < 67:
		lo, hi := g.scoreRange()
		args := []string{"ZCOUNT", k, lo, hi}
		if wrong {
			return wrongTypeOp(args)
		}
		return modelOp{args: args, want: wInt(int64(len(zByScore(e.zsorted(), lo, hi))))}
	case r < 70:
		k, ok := g.lexKey()
		if !ok { // every key holds a sorted set of several scores
			return modelOp{args: []string{"DBSIZE"}, want: wInt(int64(len(db)))}
		}
		e, wrong := g.lookup(k, "zset")
		lo, hi := g.lexRange()
		args := []string{"ZLEXCOUNT", k, lo, hi}
		if wrong {
			return wrongTypeOp(args)
		}
		return modelOp{args: args, want: wInt(int64(len(zByLex(e.zsorted(), lo, hi))))}
	case r < 76: // ZRANK, ZREVRANK
		cmd := []string{"ZRANK", "ZREVRANK"}[rng.IntN(2)]
		args := []string{cmd, k, g.member(e)}
		if wrong {
			return wrongTypeOp(args)
		}
		zs := e.zsorted()
		i := slices.IndexFunc(zs, func(z zmember) bool { return z.member == args[2] })
		switch {
		case i < 0:
			return modelOp{args: args, want: wNil()}
		case cmd == "ZREVRANK":
			i = len(zs) - 1 - i
		}
		return modelOp{args: args, want: wInt(int64(i))}
	case r < 97:
		return g.zrange(k, "")
	default: // argument errors, found before the key is looked at
		errs := []modelOp{
			{args: []string{"ZADD", k, "NX", "XX", "1", "a"}, want: wErr(errZaddNXXX)},
			{args: []string{"ZADD", k, "GT", "LT", "1", "a"}, want: wErr(errZaddGTLTNX)},
			{args: []string{"ZADD", k, "INCR", "1", "a", "2", "b"}, want: wErr(errZaddIncrPairs)},
			{args: []string{"ZADD", k, "1", "a", "2"}, want: wErr(errSyntax)},
			{args: []string{"ZADD", k, "CH", "NX"}, want: wErr(errSyntax)},
			{args: []string{"ZRANGE", k, "0", "-1", "LIMIT", "0", "1"}, want: wErr(errZRangeLimit)},
			{args: []string{"ZRANGE", k, "-", "+", "BYLEX", "WITHSCORES"}, want: wErr(errZRangeLexScores)},
			{args: []string{"ZRANGE", k, "a", "1", "BYSCORE"}, want: wErr(errZMinMaxFloat)},
			{args: []string{"ZRANGE", k, "a", "+", "BYLEX"}, want: wErr(errZMinMaxLex)},
			{args: []string{"ZCOUNT", k, "(", "x"}, want: wErr(errZMinMaxFloat)},
			{args: []string{"ZREMRANGEBYRANK", k, "0", "x"}, want: wErr(errNotInt)},
			{args: []string{"ZUNIONSTORE", k, "0", k}, want: wErr("ERR at least 1 input key is needed for 'zunionstore' command")},
			{args: []string{"ZINTERSTORE", k, "2", k}, want: wErr(errSyntax)},
			{args: []string{[]string{"ZPOPMIN", "ZPOPMAX"}[rng.IntN(2)], k, "-1"}, want: wErr(errSetPopCount)},
		}
		return errs[rng.IntN(len(errs))]
	}
}

// zscore returns member m's score in the sorted set e, which may be nil.
func (e *collEntry) zscore(m string) (float64, bool) {
	if e == nil {
		return 0, false
	}
	s, ok := e.zset[m]
	return s, ok
}

// score picks a score argument and its value: mostly an integer or a half.
func (g *collGen) score() (string, float64) {
	i := g.rng.IntN(zCommonScores)
	if g.rng.IntN(8) == 0 {
		i = zCommonScores + g.rng.IntN(len(zScores)-zCommonScores)
	}
	return zScores[i].arg, zScores[i].val
}

// zadd is ZADD with any of NX XX GT LT CH INCR, now and then a refused combination or score,
// with 1-3 pairs. It follows Redis's zaddGenericCommand and zsetAdd: options, then scores,
// then the key.
func (g *collGen) zadd(k string, e *collEntry, wrong bool) modelOp {
	rng, db := g.rng, g.db()
	var nx, xx, gt, lt, ch, incr bool
	switch rng.IntN(6) {
	case 0:
		nx = true
	case 1:
		xx = true
	}
	if !nx || rng.IntN(4) == 0 { // NX with GT or LT is refused
		switch rng.IntN(6) {
		case 0:
			gt = true
		case 1:
			lt = true
		}
	}
	if rng.IntN(100) == 0 {
		nx, xx = true, true
	}
	ch, incr = rng.IntN(4) == 0, rng.IntN(5) == 0
	var flags []string
	for _, f := range []struct {
		on   bool
		name string
	}{{nx, "NX"}, {xx, "XX"}, {gt, "GT"}, {lt, "LT"}, {ch, "CH"}, {incr, "INCR"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	rng.Shuffle(len(flags), func(i, j int) { flags[i], flags[j] = flags[j], flags[i] })
	pairs := 1 + rng.IntN(4)
	if incr && rng.IntN(20) > 0 {
		pairs = 1
	}
	// A sorted set of one score keeps it half the time, and a new one starts with all scores 0
	// now and then, so that the BYLEX commands find keys to work on.
	same, sameArg := math.NaN(), ""
	switch {
	case !wrong && e != nil && e.uniform() && rng.IntN(2) == 0:
		same = e.zsorted()[0].score
		sameArg = fmtScore(same)
	case e == nil && rng.IntN(3) == 0:
		same, sameArg = 0, "0"
	}
	args := append([]string{"ZADD", k}, flags...)
	var scores []float64
	badScore := false
	for range pairs {
		arg, v := g.score()
		if sameArg != "" {
			arg, v = sameArg, same
		}
		if rng.IntN(100) == 0 {
			arg, badScore = badScores[rng.IntN(len(badScores))], true
		}
		args = append(args, arg, g.newMember(e))
		scores = append(scores, v)
	}
	switch {
	case nx && xx:
		return modelOp{args: args, want: wErr(errZaddNXXX)}
	case gt && lt || nx && (gt || lt):
		return modelOp{args: args, want: wErr(errZaddGTLTNX)}
	case incr && pairs > 1:
		return modelOp{args: args, want: wErr(errZaddIncrPairs)}
	case badScore:
		return modelOp{args: args, want: wErr(errNotFloat)}
	case wrong:
		return wrongTypeOp(args)
	}
	if e == nil {
		if xx {
			if incr {
				return modelOp{args: args, want: wNil()}
			}
			return modelOp{args: args, want: wInt(0)}
		}
		e = &collEntry{kind: "zset", zset: map[string]float64{}}
		db[k] = e
	}
	added, updated, processed := 0, 0, 0
	var last float64
	for i, s := range scores {
		m := args[len(args)-2*pairs+2*i+1]
		cur, exists := e.zset[m]
		switch {
		case exists && nx, !exists && xx:
			continue
		case exists:
			if incr {
				if s += cur; math.IsNaN(s) {
					return modelOp{args: args, want: wErr(errZNaN)}
				}
			}
			if lt && s >= cur || gt && s <= cur {
				continue
			}
			if s != cur {
				e.zset[m] = storedScore(s)
				updated++
			}
		default:
			e.zset[m] = storedScore(s)
			added++
		}
		processed++
		last = s
	}
	switch {
	case incr && processed == 0:
		return modelOp{args: args, want: wNil()}
	case incr:
		return modelOp{args: args, want: wBulk(fmtScore(last))}
	case ch:
		return modelOp{args: args, want: wInt(int64(added + updated))}
	}
	return modelOp{args: args, want: wInt(int64(added))}
}

// zincrby is ZINCRBY: a new member gets the increment itself (so -0 replies -0); infinities of
// opposite signs make NaN, an error.
func (g *collGen) zincrby(k string, e *collEntry, wrong bool) modelOp {
	arg, v := g.score()
	bad := g.rng.IntN(30) == 0
	if bad {
		arg = badScores[g.rng.IntN(len(badScores))]
	}
	m := g.member(e)
	args := []string{"ZINCRBY", k, arg, m}
	switch {
	case bad:
		return modelOp{args: args, want: wErr(errNotFloat)}
	case wrong:
		return wrongTypeOp(args)
	}
	if cur, ok := e.zscore(m); ok {
		if v += cur; math.IsNaN(v) {
			return modelOp{args: args, want: wErr(errZNaN)}
		}
	}
	if e == nil {
		e = &collEntry{kind: "zset", zset: map[string]float64{}}
		g.db()[k] = e
	}
	e.zset[m] = storedScore(v)
	return modelOp{args: args, want: wBulk(fmtScore(v))}
}

// zremrange is ZREMRANGEBYRANK, ZREMRANGEBYSCORE or ZREMRANGEBYLEX (on a key whose sorted set
// has one score).
func (g *collGen) zremrange(k string, e *collEntry, wrong bool) modelOp {
	rng := g.rng
	var args []string
	var sel func([]zmember) []zmember
	switch r := rng.IntN(10); {
	case r < 4:
		start, stop := g.indexPair(e.size())
		if rng.IntN(2) == 0 { // one or two members
			start = rng.IntN(2*e.size()+1) - e.size()
			stop = start + rng.IntN(2)
		}
		args = []string{"ZREMRANGEBYRANK", k, strconv.Itoa(start), strconv.Itoa(stop)}
		sel = func(zs []zmember) []zmember {
			lo, hi := rankRange(start, stop, len(zs))
			return zs[lo:hi]
		}
	case r < 7:
		lo, hi := g.scoreRange()
		args = []string{"ZREMRANGEBYSCORE", k, lo, hi}
		sel = func(zs []zmember) []zmember { return zByScore(zs, lo, hi) }
	default:
		lk, ok := g.lexKey()
		if !ok { // every key holds a sorted set of several scores
			return modelOp{args: []string{"DBSIZE"}, want: wInt(int64(len(g.db())))}
		}
		k = lk
		e, wrong = g.lookup(k, "zset")
		lo, hi := g.lexRange()
		args = []string{"ZREMRANGEBYLEX", k, lo, hi}
		sel = func(zs []zmember) []zmember { return zByLex(zs, lo, hi) }
	}
	switch {
	case wrong:
		return wrongTypeOp(args)
	case e == nil:
		return modelOp{args: args, want: wInt(0)}
	}
	gone := sel(e.zsorted())
	for _, z := range gone {
		delete(e.zset, z.member)
	}
	g.dropIfEmpty(k, e)
	return modelOp{args: args, want: wInt(int64(len(gone)))}
}

func zByScore(zs []zmember, lo, hi string) []zmember {
	from, to := parseScoreBound(lo), parseScoreBound(hi)
	var out []zmember
	for _, z := range zs {
		if inScoreRange(z.score, from, to) {
			out = append(out, z)
		}
	}
	return out
}

func zByLex(zs []zmember, lo, hi string) []zmember {
	var out []zmember
	for _, z := range zs {
		if inLexRange(z.member, lo, hi) {
			out = append(out, z)
		}
	}
	return out
}

// lexKey picks a key for a BYLEX command: mostly one whose sorted set has a single score (BYLEX
// is undefined otherwise), else a missing key or one of another type. ok is false when every
// key holds a sorted set of several scores.
func (g *collGen) lexKey() (k string, ok bool) {
	var uniform, other []string
	for _, k := range g.keys {
		switch e := g.db()[k]; {
		case e != nil && e.kind == "zset" && e.uniform():
			uniform = append(uniform, k)
		case e == nil || e.kind != "zset":
			other = append(other, k)
		}
	}
	if len(uniform) > 0 && (len(other) == 0 || g.rng.IntN(8) > 0) {
		return uniform[g.rng.IntN(len(uniform))], true
	}
	if len(other) > 0 {
		return other[g.rng.IntN(len(other))], true
	}
	return "", false
}

// zpop is ZPOPMIN or ZPOPMAX, with or without a count; both reply a flat array of members and
// scores, empty for a missing key.
func (g *collGen) zpop(k string, e *collEntry, wrong bool) modelOp {
	cmd := []string{"ZPOPMIN", "ZPOPMAX"}[g.rng.IntN(2)]
	args := []string{cmd, k}
	count := 1
	if g.rng.IntN(2) == 0 {
		count = 1 + g.rng.IntN(4)
		if g.rng.IntN(10) == 0 {
			count = 0
		}
		args = append(args, strconv.Itoa(count))
	}
	switch {
	case e == nil:
		return modelOp{args: args, want: wArr()}
	case wrong:
		return wrongTypeOp(args)
	}
	zs := e.zsorted()
	if cmd == "ZPOPMAX" {
		slices.Reverse(zs)
	}
	zs = zs[:min(count, len(zs))]
	for _, z := range zs {
		delete(e.zset, z.member)
	}
	g.dropIfEmpty(k, e)
	return modelOp{args: args, want: wZMembers(zs, true)}
}

// zstore is ZUNIONSTORE or ZINTERSTORE over 1-3 keys, with WEIGHTS and AGGREGATE now and then.
// Sets count as sorted sets of score 1. Redis checks the keys' types before it parses the
// options.
func (g *collGen) zstore(k string) modelOp {
	rng, db := g.rng, g.db()
	cmd := []string{"ZUNIONSTORE", "ZINTERSTORE"}[rng.IntN(2)]
	dst := g.key()
	keys := g.keyList(k, 3, "zset", "set")
	srcs := make([]zstoreSrc, len(keys))
	var weightArgs []string
	badWeight := false
	for i := range srcs {
		srcs[i].weight = 1
	}
	if rng.IntN(3) == 0 {
		weightArgs = []string{"WEIGHTS"}
		for i := range srcs {
			w := zWeights[rng.IntN(len(zWeights))]
			if rng.IntN(30) == 0 {
				w, badWeight = "x", true
			}
			srcs[i].weight, _ = strconv.ParseFloat(w, 64)
			weightArgs = append(weightArgs, w)
		}
	}
	agg := ""
	if rng.IntN(3) == 0 {
		agg = []string{"SUM", "MIN", "MAX"}[rng.IntN(3)]
	}
	args := func() []string {
		head := append([]string{cmd, dst, strconv.Itoa(len(keys))}, keys...)
		return append(append(head, weightArgs...), aggArgs(agg)...)
	}
	for i, kk := range keys {
		switch e := db[kk]; {
		case e == nil:
		case e.kind == "zset":
			srcs[i].scores = e.zset
		case e.kind == "set":
			srcs[i].scores = map[string]float64{}
			for m := range e.set {
				srcs[i].scores[m] = 1
			}
		default:
			return wrongTypeOp(args())
		}
	}
	if badWeight {
		return modelOp{args: args(), want: wErr(errZWeight)}
	}
	res, ok := zstoreResult(cmd == "ZINTERSTORE", srcs, agg)
	if !ok {
		// Redis's order would decide the result: ask for one that does not depend on it.
		weightArgs, agg = nil, "MAX"
		for i := range srcs {
			srcs[i].weight = 1
		}
		res, _ = zstoreResult(cmd == "ZINTERSTORE", srcs, agg)
	}
	if len(res) == 0 {
		delete(db, dst)
		return modelOp{args: args(), want: wInt(0)}
	}
	for m, s := range res {
		res[m] = storedScore(s)
	}
	db[dst] = &collEntry{kind: "zset", zset: res}
	return modelOp{args: args(), want: wInt(int64(len(res)))}
}

// zstoreSrc is one input of ZUNIONSTORE or ZINTERSTORE.
type zstoreSrc struct {
	scores map[string]float64 // nil for a missing key
	weight float64
}

// zstoreResult returns the result of ZUNIONSTORE or ZINTERSTORE (inter) over srcs. Redis sorts
// the inputs by size, leaving those of one size in no defined order, and the order can change
// a result: it adds up in that order, and a sum of inf and -inf is 0, and so is a weighted
// score that is NaN (0 times an infinity) in a union or ZINTERSTORE's first input, while a NaN
// from a later input sets a sum to 0 and leaves a MIN or MAX alone. ok is false when two of
// the orders Redis may pick give different results.
func zstoreResult(inter bool, srcs []zstoreSrc, agg string) (res map[string]float64, ok bool) {
	ok = true
	order := make([]zstoreSrc, 0, len(srcs))
	used := make([]bool, len(srcs))
	var permute func()
	permute = func() {
		if len(order) == len(srcs) {
			r := zstoreRun(inter, order, agg)
			if res == nil {
				res = r
			} else if !maps.Equal(res, r) {
				ok = false
			}
			return
		}
		for i, src := range srcs {
			if used[i] || len(order) > 0 && len(src.scores) < len(order[len(order)-1].scores) {
				continue
			}
			used[i] = true
			order = append(order, src)
			permute()
			order = order[:len(order)-1]
			used[i] = false
		}
	}
	permute()
	return res, ok
}

// zstoreRun computes ZUNIONSTORE's or ZINTERSTORE's result as Redis 7.0's
// zunionInterDiffGenericCommand does with its inputs in the order of srcs.
func zstoreRun(inter bool, srcs []zstoreSrc, agg string) map[string]float64 {
	aggregate := func(acc, v float64) float64 { // zunionInterAggregate
		switch agg {
		case "MIN":
			if v < acc {
				return v
			}
			return acc
		case "MAX":
			if v > acc {
				return v
			}
			return acc
		}
		if acc += v; math.IsNaN(acc) {
			return 0
		}
		return acc
	}
	weighted := func(src zstoreSrc, s float64) float64 {
		if v := src.weight * s; !math.IsNaN(v) {
			return v
		}
		return 0
	}
	res := map[string]float64{}
	if inter {
	members:
		for m, s := range srcs[0].scores {
			acc := weighted(srcs[0], s)
			for _, src := range srcs[1:] {
				v, in := src.scores[m]
				if !in {
					continue members
				}
				acc = aggregate(acc, src.weight*v)
			}
			res[m] = acc
		}
		return res
	}
	for _, src := range srcs {
		for m, s := range src.scores {
			if acc, in := res[m]; in {
				res[m] = aggregate(acc, weighted(src, s))
			} else {
				res[m] = weighted(src, s)
			}
		}
	}
	return res
}

func aggArgs(agg string) []string {
	if agg == "" {
		return nil
	}
	return []string{"AGGREGATE", agg}
}

// zrange is ZRANGE k, or ZRANGESTORE dst k when dst is not "": by rank, BYSCORE or BYLEX (on a
// key whose sorted set has one score), forward or REV, with LIMIT and WITHSCORES, the options in
// any order. A negative LIMIT offset selects nothing; a negative count, everything after the
// offset.
func (g *collGen) zrange(k, dst string) modelOp {
	rng := g.rng
	store := dst != ""
	by := []string{"", "BYSCORE", "BYLEX"}[rng.IntN(3)]
	if by == "BYLEX" {
		if lk, ok := g.lexKey(); ok {
			k = lk
		} else {
			by = "BYSCORE"
		}
	}
	e, wrong := g.lookup(k, "zset")
	rev := rng.IntN(3) == 0
	var a, b string // the range in argument order: max first for REV BYSCORE and REV BYLEX
	switch by {
	case "":
		a, b = g.indexPairArgs(e.size())
	case "BYSCORE":
		a, b = g.scoreRange()
	case "BYLEX":
		a, b = g.lexRange()
	}
	if rev && by != "" {
		a, b = b, a
	}
	limit := by != "" && rng.IntN(3) == 0
	offset, count := []int{0, 0, 0, 1, 2, -1}[rng.IntN(6)], []int{-1, -1, 1, 2, 3, 0}[rng.IntN(6)]
	withScores := !store && by != "BYLEX" && rng.IntN(2) == 0
	var opts [][]string
	if by != "" {
		opts = append(opts, []string{by})
	}
	if rev {
		opts = append(opts, []string{"REV"})
	}
	if limit {
		opts = append(opts, []string{"LIMIT", strconv.Itoa(offset), strconv.Itoa(count)})
	}
	if withScores {
		opts = append(opts, []string{"WITHSCORES"})
	}
	rng.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	args := []string{"ZRANGE", k, a, b}
	if store {
		args = []string{"ZRANGESTORE", dst, k, a, b}
	}
	for _, o := range opts {
		args = append(args, o...)
	}
	switch {
	case wrong:
		return wrongTypeOp(args)
	case e == nil && store:
		delete(g.db(), dst)
		return modelOp{args: args, want: wInt(0)}
	case e == nil:
		return modelOp{args: args, want: wArr()}
	}
	zs := e.zsorted()
	lo, hi := a, b
	if rev {
		slices.Reverse(zs)
		lo, hi = b, a
	}
	var sel []zmember
	switch by {
	case "":
		start, _ := strconv.Atoi(a)
		stop, _ := strconv.Atoi(b)
		l, h := rankRange(start, stop, len(zs))
		sel = zs[l:h]
	case "BYSCORE":
		sel = zByScore(zs, lo, hi)
	case "BYLEX":
		sel = zByLex(zs, lo, hi)
	}
	if limit {
		switch {
		case offset < 0 || offset >= len(sel):
			sel = nil
		case count < 0:
			sel = sel[offset:]
		default:
			sel = sel[offset:min(len(sel), offset+count)]
		}
	}
	if !store {
		return modelOp{args: args, want: wZMembers(sel, withScores)}
	}
	if len(sel) == 0 {
		delete(g.db(), dst)
		return modelOp{args: args, want: wInt(0)}
	}
	ne := &collEntry{kind: "zset", zset: map[string]float64{}}
	for _, z := range sel {
		ne.zset[z.member] = z.score
	}
	g.db()[dst] = ne
	return modelOp{args: args, want: wInt(int64(len(sel)))}
}

// checkKeyspace compares every key's type, value (GET, SMEMBERS, LRANGE 0 -1 or ZRANGE 0 -1
// WITHSCORES) and whether it has an expire time, and each DBSIZE.
func (g *collGen) checkKeyspace(r *modelRun, when string) {
	r.t.Helper()
	for db, m := range g.dbs {
		want := make(map[string]modelKey, len(m))
		for k, e := range m {
			mk := modelKey{typ: e.kind, ttl: e.ttl}
			switch e.kind {
			case "string":
				mk.cmd, mk.want = []string{"GET", k}, wBulk(e.str)
			case "set":
				mk.cmd, mk.want = []string{"SMEMBERS", k}, wMembers(e.members())
			case "list":
				mk.cmd, mk.want = []string{"LRANGE", k, "0", "-1"}, wArr(wBulks(e.list)...)
			case "zset":
				mk.cmd, mk.want = []string{"ZRANGE", k, "0", "-1", "WITHSCORES"}, wZMembers(e.zsorted(), true)
			}
			if e.kind != "string" && e.size() == 0 {
				r.fail("%s: the model holds an empty %s at db %d key %q", when, e.kind, db, k)
			}
			want[k] = mk
		}
		checkModelDB(r, when, db, want)
	}
}

// TestSetModel runs 3,000 random set operations mixed with the others (scaled by
// $LAVIK_MODEL_OPS like TestRandomOpsModel, so make soak runs more) in pipelines of 1-64 over 10
// keys in two databases, comparing every reply with the model. Every 300 operations it compares
// the whole keyspace and restarts the server, alternately clean and with kill -9 (appendfsync
// always, so every acknowledged write must survive), then compares again.
func TestSetModel(t *testing.T) { runCollModel(t, "set", 3, 3000, false) }

// TestListModel is TestSetModel for lists.
func TestListModel(t *testing.T) { runCollModel(t, "list", 4, 3000, false) }

// TestZSetModel is TestSetModel for sorted sets.
func TestZSetModel(t *testing.T) { runCollModel(t, "zset", 5, 3000, false) }

// TestCollModelGrouped runs TestSetModel, TestListModel and TestZSetModel on a server with the
// least group threshold (256 bytes), on 5 keys rather than 10, with sets and sorted sets drawn
// from 100 more members of 60 bytes and lists from 5 more such elements, so that collections
// of more than a few members are grouped: sets by member hash, lists and sorted sets by plain
// cuts of their encoding; one operation in ten adds 5-15 members, elements or pairs. (Under 64 bytes: Redis's listpacks would take them, so the model's
// encoding-dependent replies stay right.)
func TestCollModelGrouped(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("group-threshold is Lavik's")
	}
	for i, focus := range []string{"set", "list", "zset"} {
		t.Run(focus, func(t *testing.T) { runCollModel(t, focus, uint64(13+i), 3000, true) })
	}
}

// groupedCollMembers are collMembers and 100 members of 60 bytes; groupedListElems, listElems
// and 5 elements of 60 bytes.
var groupedCollMembers, groupedListElems = func() ([]string, []string) {
	long := func(i int) string { return fmt.Sprintf("grouped-%03d-", i) + strings.Repeat("x", 48) }
	ms, es := slices.Clone(collMembers), slices.Clone(listElems)
	for i := 0; i < 100; i++ {
		ms = append(ms, long(i))
	}
	for i := 0; i < 5; i++ {
		es = append(es, long(i))
	}
	return ms, es
}()

// bigCollGen is the grouped variant's collGen: one operation in ten adds many members to a
// collection of the focus type (bulkAdd), and it counts the operations whose first key holds,
// once they ran, a collection longer than the least group threshold (256 bytes).
type bigCollGen struct {
	*collGen
	bigOps int
}

func (g *bigCollGen) next() modelOp {
	var op modelOp
	if g.rng.IntN(10) == 0 {
		op = g.bulkAdd()
	} else {
		op = g.collGen.next()
	}
	if len(op.args) > 1 {
		if e := g.dbs[g.cur][op.args[1]]; e != nil && e.encodedAtLeast() > 256 {
			g.bigOps++
		}
	}
	return op
}

// bulkAdd is SADD, RPUSH or ZADD (after the focus type) of 5-15 members, elements or pairs,
// repeats allowed, so that collections grow past the threshold faster than the other commands
// take them apart.
func (g *bigCollGen) bulkAdd() modelOp {
	k := g.keyOf(g.focus)
	e, wrong := g.lookup(k, g.focus)
	n := 5 + g.rng.IntN(11)
	var args []string
	var scores []float64 // ZADD's, in order
	switch g.focus {
	case "set":
		args = []string{"SADD", k}
		for range n {
			args = append(args, g.newMember(e))
		}
	case "list":
		args = []string{"RPUSH", k}
		for range n {
			args = append(args, g.elem(e))
		}
	default:
		args = []string{"ZADD", k}
		for range n {
			arg, v := g.score()
			args = append(args, arg, g.newMember(e))
			scores = append(scores, v)
		}
	}
	if wrong {
		return wrongTypeOp(args)
	}
	if e == nil {
		e = &collEntry{kind: g.focus}
		switch g.focus {
		case "set":
			e.set = map[string]bool{}
		case "zset":
			e.zset = map[string]float64{}
		}
		g.db()[k] = e
	}
	added := int64(0)
	switch g.focus {
	case "set":
		for _, m := range args[2:] {
			if !e.set[m] {
				e.set[m] = true
				added++
			}
		}
	case "list":
		for _, v := range args[2:] {
			e.push(v, false)
		}
		added = int64(len(e.list))
	default:
		for i := 2; i < len(args); i += 2 {
			if _, ok := e.zset[args[i+1]]; !ok {
				added++
			}
			e.zset[args[i+1]] = storedScore(scores[i/2-1])
		}
	}
	return modelOp{args: args, want: wInt(added)}
}

func runCollModel(t *testing.T, focus string, stream uint64, full int, grouped bool) {
	ops := modelOps(t, full, full)
	seed := e2eSeed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), stream))
	g := newCollGen(rng, focus)
	var gen modelGen = g
	var args []string
	big := &bigCollGen{collGen: g}
	if grouped {
		g.members, g.elems, g.keys = groupedCollMembers, groupedListElems, g.keys[:5]
		gen, args = big, []string{"--group-threshold", "256"}
	}
	r := startModelRun(t, seed, gen, args...)
	start := time.Now()
	restarts := r.run(rng, ops, 300)
	kinds := map[string]int{}
	for _, db := range g.dbs {
		for _, e := range db {
			kinds[e.kind]++
		}
	}
	t.Logf("%d ops, %d restarts, %d+%d keys at the end (%v), %v", r.done, restarts,
		len(g.dbs[0]), len(g.dbs[1]), kinds, time.Since(start).Round(time.Millisecond))
	if grouped {
		t.Logf("%d of %d operations on a key holding a collection over 256 bytes", big.bigOps, r.done)
	}
}

// encodedAtLeast is a lower bound of a collection's encoded length: its members or elements, a
// length byte each; 0 for a string.
func (e *collEntry) encodedAtLeast() int {
	n := 0
	switch e.kind {
	case "set":
		for m := range e.set {
			n += len(m) + 1
		}
	case "list":
		for _, v := range e.list {
			n += len(v) + 1
		}
	case "zset":
		for m := range e.zset {
			n += len(m) + 1
		}
	}
	return n
}
