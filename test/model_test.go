package test

// The model test drives the server and an in-memory model with the same seeded random string
// and key commands, compares every reply, and across clean and kill -9 restarts compares the
// whole keyspace. Only long TTLs are used, so the model needs to know whether a key has a TTL,
// never when it ends.

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

var seedFlag = flag.Int64("seed", 0, "seed for the randomized end-to-end tests (0: from the clock)")

// e2eSeed returns the seed for a randomized test, logs it, and repeats it when the test fails.
func e2eSeed(t *testing.T) int64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -seed %d)", seed, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: rerun with -run '^%s$' -seed %d", seed, t.Name(), seed)
		}
	})
	return seed
}

type modelEntry struct {
	val string
	ttl bool
}

// strModel is the reference: two databases of strings, each remembering whether it has a TTL.
type strModel struct {
	dbs [2]map[string]modelEntry
	cur int // database selected on the connection
}

// wAnyPositive stands for "any integer > 0" in expected replies (the TTL of a key with a TTL).
const wAnyPositive = 'P'

// wUnordered stands for an array whose elements, taken in groups of Int (1 for HKEYS, 2 for
// HGETALL's field-value pairs), may come in any order; Elems holds them in the model's order.
const wUnordered = 'U'

type modelOp struct {
	args []string
	want wireReply
	// tx, when set, makes the operation a transaction: MULTI, the commands of tx (each with the
	// reply it must give inside EXEC's), EXEC. want is then EXEC's reply and args is unused.
	tx []modelOp
	// check, when set, takes the place of want for a reply the model cannot predict (SPOP picks
	// its members at random): it checks the reply and only then applies the operation to the
	// model, so batch ends a pipeline with such an operation.
	check func(got wireReply) error
}

func (o modelOp) String() string {
	if o.check != nil {
		return o.cmds() + " -> (checked against the model)"
	}
	return o.cmds() + " -> " + o.want.String()
}

// cmds formats the command, or the commands of a transaction.
func (o modelOp) cmds() string {
	if o.tx == nil {
		return fmtArgs(o.args)
	}
	parts := []string{"MULTI"}
	for _, q := range o.tx {
		parts = append(parts, fmtArgs(q.args))
	}
	return strings.Join(append(parts, "EXEC"), "; ")
}

// appendWire appends the commands of o to buf.
func (o modelOp) appendWire(buf *bytes.Buffer) {
	if o.tx == nil {
		buf.Write(wireCmd(o.args...))
		return
	}
	buf.Write(wireCmd("MULTI"))
	for _, q := range o.tx {
		buf.Write(wireCmd(q.args...))
	}
	buf.Write(wireCmd("EXEC"))
}

// matches reports whether got is the reply want describes; an array matches element by element,
// so that wAnyPositive and wUnordered work inside EXEC's reply.
func matches(want, got wireReply) bool {
	switch want.Kind {
	case wAnyPositive:
		return got.Kind == ':' && got.Int > 0
	case wUnordered:
		return got.Kind == '*' && !got.Null && sameGroups(want.Elems, got.Elems, int(want.Int))
	case '*':
		if want.Null || got.Kind != '*' || got.Null || len(want.Elems) != len(got.Elems) {
			return want.equal(got)
		}
		for i := range want.Elems {
			if !matches(want.Elems[i], got.Elems[i]) {
				return false
			}
		}
		return true
	}
	return want.equal(got)
}

// sameGroups reports whether a and b hold the same groups of n consecutive elements, in any
// order, counting repeats.
func sameGroups(a, b []wireReply, n int) bool {
	if len(a) != len(b) || len(a)%n != 0 {
		return false
	}
	// Not String(), which shortens long strings.
	key := func(e []wireReply) string {
		var sb strings.Builder
		for _, x := range e {
			fmt.Fprintf(&sb, "%c%d%v%q;", x.Kind, x.Int, x.Null, x.Str)
		}
		return sb.String()
	}
	count := map[string]int{}
	for i := 0; i < len(a); i += n {
		count[key(a[i:i+n])]++
		count[key(b[i:i+n])]--
	}
	for _, c := range count {
		if c != 0 {
			return false
		}
	}
	return true
}

// redisParseInt mirrors Redis's string2ll: optional '-', no '+', no leading zeros, no spaces,
// at most 20 characters, within int64.
func redisParseInt(s string) (int64, bool) {
	if s == "" || len(s) > 20 {
		return 0, false
	}
	if s == "0" {
		return 0, true
	}
	p := s
	if p[0] == '-' {
		p = p[1:]
	}
	if p == "" || p[0] < '1' || p[0] > '9' {
		return 0, false
	}
	for _, c := range []byte(p) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// opGen produces random operations, applies each to the model and returns it with the reply the
// server must give.
type opGen struct {
	rng  *rand.Rand
	m    *strModel
	keys []string
}

func newOpGen(rng *rand.Rand) *opGen {
	keys := []string{"", " ", "sp ace", "\x00bin\xff", "ключ", "{tag}k", "k\r\nnl"}
	for i := 0; i < 60; i++ {
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	m := &strModel{dbs: [2]map[string]modelEntry{{}, {}}}
	return &opGen{rng: rng, m: m, keys: keys}
}

func (g *opGen) key() string { return g.keys[g.rng.IntN(len(g.keys))] }

func (g *opGen) bytesOf(n int, binary bool) string {
	b := make([]byte, n)
	for i := range b {
		if binary {
			b[i] = byte(g.rng.Uint32())
		} else {
			b[i] = "abcdefghijklmnopqrstuvwxyz0123456789-_"[g.rng.IntN(38)]
		}
	}
	return string(b)
}

var edgeNumbers = []string{"0", "-0", "+1", "007", " 1", "1 ", "1e3", "", "12", "-12",
	"9223372036854775807", "-9223372036854775808", "9223372036854775808", "9223372036854775800",
	"-9223372036854775800", "18446744073709551616", "00", "3.5", "0x10"}

func (g *opGen) value() string {
	switch r := g.rng.IntN(100); {
	case r < 35:
		return g.bytesOf(g.rng.IntN(17), false)
	case r < 50:
		if g.rng.IntN(2) == 0 {
			return edgeNumbers[g.rng.IntN(len(edgeNumbers))]
		}
		return strconv.Itoa(g.rng.IntN(2000) - 1000)
	case r < 70:
		return g.bytesOf(g.rng.IntN(65), true)
	case r < 95:
		return g.bytesOf(64+g.rng.IntN(2000), g.rng.IntN(2) == 0)
	default:
		// Over 8 KiB: Lavik stores these as several segment records.
		return g.bytesOf(8<<10+g.rng.IntN(16<<10), true)
	}
}

func (g *opGen) ttlSeconds() string { return strconv.Itoa(1000 + g.rng.IntN(100000)) }

func (g *opGen) db() map[string]modelEntry { return g.m.dbs[g.m.cur] }

func (g *opGen) selected() int { return g.m.cur }

func bulkOrNil(e modelEntry, ok bool) wireReply {
	if !ok {
		return wNil()
	}
	return wBulk(e.val)
}

func (g *opGen) next() modelOp {
	db := g.db()
	rng := g.rng
	k := g.key()
	cur, exists := db[k]
	switch r := rng.IntN(1000); {
	case r < 180: // SET [NX|XX] [GET] [EX|PX|EXAT|KEEPTTL]
		v := g.value()
		args := []string{"SET", k, v}
		cond := rng.IntN(4) // 0,1: none, 2: NX, 3: XX
		switch cond {
		case 2:
			args = append(args, "NX")
		case 3:
			args = append(args, "XX")
		}
		get := rng.IntN(4) == 0
		if get {
			args = append(args, "GET")
		}
		ttl := false
		switch rng.IntN(6) {
		case 0:
			args, ttl = append(args, "EX", g.ttlSeconds()), true
		case 1:
			args, ttl = append(args, "PX", g.ttlSeconds()+"000"), true
		case 2:
			at := time.Now().Add(time.Duration(1000+rng.IntN(100000)) * time.Second).Unix()
			args, ttl = append(args, "EXAT", strconv.FormatInt(at, 10)), true
		case 3:
			args, ttl = append(args, "KEEPTTL"), exists && cur.ttl
		}
		doSet := !(cond == 2 && exists) && !(cond == 3 && !exists)
		var want wireReply
		switch {
		case get:
			want = bulkOrNil(cur, exists)
		case doSet:
			want = wOK
		default:
			want = wNil()
		}
		if doSet {
			db[k] = modelEntry{val: v, ttl: ttl}
		}
		return modelOp{args: args, want: want}
	case r < 300:
		return modelOp{args: []string{"GET", k}, want: bulkOrNil(cur, exists)}
	case r < 350: // DEL / UNLINK with repeats
		cmd := []string{"DEL", "UNLINK"}[rng.IntN(2)]
		args := []string{cmd}
		n := int64(0)
		for i := rng.IntN(3); i >= 0; i-- {
			kk := g.key()
			if rng.IntN(4) == 0 && len(args) > 1 {
				kk = args[1]
			}
			args = append(args, kk)
			if _, ok := db[kk]; ok {
				delete(db, kk)
				n++
			}
		}
		return modelOp{args: args, want: wInt(n)}
	case r < 410: // APPEND
		if len(cur.val) > 256<<10 {
			delete(db, k)
			return modelOp{args: []string{"DEL", k}, want: wInt(1)}
		}
		v := g.value()
		db[k] = modelEntry{val: cur.val + v, ttl: exists && cur.ttl}
		return modelOp{args: []string{"APPEND", k, v}, want: wInt(int64(len(cur.val) + len(v)))}
	case r < 470: // INCR family
		var args []string
		var by int64
		switch rng.IntN(5) {
		case 0:
			args, by = []string{"INCR", k}, 1
		case 1:
			args, by = []string{"DECR", k}, -1
		case 2:
			by = int64(rng.IntN(2001) - 1000)
			args = []string{"DECRBY", k, strconv.FormatInt(by, 10)}
			by = -by
		default:
			if rng.IntN(20) == 0 {
				return modelOp{args: []string{"INCRBY", k, []string{"abc", "1.5", "", "99999999999999999999"}[rng.IntN(4)]}, want: wErr("ERR value is not an integer or out of range")}

			}
			by = int64(rng.IntN(2001) - 1000)
			if rng.IntN(20) == 0 {
				by = math.MaxInt64 - int64(rng.IntN(10))
			}
			args = []string{"INCRBY", k, strconv.FormatInt(by, 10)}
		}
		old := int64(0)
		if exists {
			n, ok := redisParseInt(cur.val)
			if !ok {
				return modelOp{args: args, want: wErr("ERR value is not an integer or out of range")}
			}
			old = n
		}
		if (by > 0 && old > math.MaxInt64-by) || (by < 0 && old < math.MinInt64-by) {
			return modelOp{args: args, want: wErr("ERR increment or decrement would overflow")}
		}
		db[k] = modelEntry{val: strconv.FormatInt(old+by, 10), ttl: exists && cur.ttl}
		return modelOp{args: args, want: wInt(old + by)}
	case r < 520: // SETRANGE
		off := rng.IntN(64)
		if rng.IntN(5) == 0 {
			off = rng.IntN(30000)
		}
		if rng.IntN(50) == 0 {
			return modelOp{args: []string{"SETRANGE", k, "-1", "x"}, want: wErr("ERR offset is out of range")}
		}
		v := g.value()
		if len(v) > 4096 {
			v = v[:4096]
		}
		args := []string{"SETRANGE", k, strconv.Itoa(off), v}
		if v == "" {
			return modelOp{args: args, want: wInt(int64(len(cur.val)))}
		}
		b := []byte(cur.val)
		if need := off + len(v); need > len(b) {
			b = append(b, make([]byte, need-len(b))...)
		}
		copy(b[off:], v)
		db[k] = modelEntry{val: string(b), ttl: exists && cur.ttl}
		return modelOp{args: args, want: wInt(int64(len(b)))}
	case r < 580: // GETRANGE, mirroring Redis's index clamping
		n := len(cur.val)
		pick := func() int64 {
			switch rng.IntN(4) {
			case 0:
				return int64(rng.IntN(n+10)) - int64(n+5)
			case 1:
				return int64(rng.IntN(20) - 10)
			default:
				return int64(rng.IntN(n + 20))
			}
		}
		start, end := pick(), pick()
		args := []string{"GETRANGE", k, strconv.FormatInt(start, 10), strconv.FormatInt(end, 10)}
		if start < 0 && end < 0 && start > end {
			return modelOp{args: args, want: wBulk("")}
		}
		sl := int64(n)
		if start < 0 {
			start += sl
		}
		if end < 0 {
			end += sl
		}
		start, end = max(start, 0), max(end, 0)
		if end >= sl {
			end = sl - 1
		}
		if start > end || sl == 0 {
			return modelOp{args: args, want: wBulk("")}
		}
		return modelOp{args: args, want: wBulk(cur.val[start : end+1])}
	case r < 610:
		return modelOp{args: []string{"STRLEN", k}, want: wInt(int64(len(cur.val)))}
	case r < 640: // EXISTS with repeats
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
	case r < 680: // EXPIRE [NX|XX|GT|LT]; GT and LT only where the outcome does not depend on the TTL's value
		args := []string{"EXPIRE", k, g.ttlSeconds()}
		set := exists
		switch rng.IntN(5) {
		case 0:
			args, set = append(args, "NX"), exists && !cur.ttl
		case 1:
			args, set = append(args, "XX"), exists && cur.ttl
		case 2:
			if !cur.ttl {
				args, set = append(args, "GT"), false // no TTL counts as infinite
			}
		case 3:
			if !cur.ttl {
				args = append(args, "LT")
			}
		}
		if !set {
			return modelOp{args: args, want: wInt(0)}
		}
		db[k] = modelEntry{val: cur.val, ttl: true}
		return modelOp{args: args, want: wInt(1)}
	case r < 700:
		if exists && cur.ttl {
			db[k] = modelEntry{val: cur.val}
			return modelOp{args: []string{"PERSIST", k}, want: wInt(1)}
		}
		return modelOp{args: []string{"PERSIST", k}, want: wInt(0)}
	case r < 730:
		switch {
		case !exists:
			return modelOp{args: []string{"TTL", k}, want: wInt(-2)}
		case !cur.ttl:
			return modelOp{args: []string{"TTL", k}, want: wInt(-1)}
		}
		return modelOp{args: []string{"TTL", k}, want: wireReply{Kind: wAnyPositive}}
	case r < 760: // RENAME / RENAMENX
		dst := g.key()
		if rng.IntN(2) == 0 {
			if !exists {
				return modelOp{args: []string{"RENAME", k, dst}, want: wErr("ERR no such key")}
			}
			delete(db, k)
			db[dst] = cur
			return modelOp{args: []string{"RENAME", k, dst}, want: wOK}
		}
		if !exists {
			return modelOp{args: []string{"RENAMENX", k, dst}, want: wErr("ERR no such key")}
		}
		if _, ok := db[dst]; ok {
			return modelOp{args: []string{"RENAMENX", k, dst}, want: wInt(0)}
		}
		delete(db, k)
		db[dst] = cur
		return modelOp{args: []string{"RENAMENX", k, dst}, want: wInt(1)}
	case r < 790: // COPY [DB n] [REPLACE]
		dst := g.key()
		args := []string{"COPY", k, dst}
		to := g.m.cur
		if rng.IntN(2) == 0 {
			to = rng.IntN(2)
			args = append(args, "DB", strconv.Itoa(to))
		}
		replace := rng.IntN(2) == 0
		if replace {
			args = append(args, "REPLACE")
		}
		if to == g.m.cur && dst == k {
			return modelOp{args: args, want: wErr("ERR source and destination objects are the same")}
		}
		if !exists {
			return modelOp{args: args, want: wInt(0)}
		}
		if _, ok := g.m.dbs[to][dst]; ok && !replace {
			return modelOp{args: args, want: wInt(0)}
		}
		g.m.dbs[to][dst] = cur
		return modelOp{args: args, want: wInt(1)}
	case r < 820: // MOVE
		to := rng.IntN(2)
		args := []string{"MOVE", k, strconv.Itoa(to)}
		if to == g.m.cur {
			return modelOp{args: args, want: wErr("ERR source and destination objects are the same")}
		}
		if _, ok := g.m.dbs[to][k]; !exists || ok {
			return modelOp{args: args, want: wInt(0)}
		}
		delete(db, k)
		g.m.dbs[to][k] = cur
		return modelOp{args: args, want: wInt(1)}
	case r < 850: // MSET
		args := []string{"MSET"}
		for i := rng.IntN(4); i >= 0; i-- {
			kk, v := g.key(), g.value()
			args = append(args, kk, v)
			db[kk] = modelEntry{val: v}
		}
		return modelOp{args: args, want: wOK}
	case r < 870: // MSETNX
		args := []string{"MSETNX"}
		var kv []string
		taken := false
		for i := rng.IntN(3); i >= 0; i-- {
			kk, v := g.key(), g.value()
			kv = append(kv, kk, v)
			if _, ok := db[kk]; ok {
				taken = true
			}
		}
		args = append(args, kv...)
		if taken {
			return modelOp{args: args, want: wInt(0)}
		}
		for i := 0; i < len(kv); i += 2 {
			db[kv[i]] = modelEntry{val: kv[i+1]}
		}
		return modelOp{args: args, want: wInt(1)}
	case r < 900:
		delete(db, k)
		return modelOp{args: []string{"GETDEL", k}, want: bulkOrNil(cur, exists)}
	case r < 920: // GETEX [EX|PX|PERSIST]
		args := []string{"GETEX", k}
		ttl := cur.ttl
		switch rng.IntN(4) {
		case 0:
			args, ttl = append(args, "EX", g.ttlSeconds()), true
		case 1:
			args, ttl = append(args, "PX", g.ttlSeconds()+"000"), true
		case 2:
			args, ttl = append(args, "PERSIST"), false
		}
		if exists {
			db[k] = modelEntry{val: cur.val, ttl: ttl}
		}
		return modelOp{args: args, want: bulkOrNil(cur, exists)}
	case r < 950:
		g.m.cur = rng.IntN(2)
		return modelOp{args: []string{"SELECT", strconv.Itoa(g.m.cur)}, want: wOK}
	case r < 960:
		return modelOp{args: []string{"DBSIZE"}, want: wInt(int64(len(db)))}
	case r < 970: // errors that must not change anything
		errs := []modelOp{
			{args: []string{"SET", k, "v", "NX", "XX"}, want: wErr("ERR syntax error")},
			{args: []string{"SET", k, "v", "EX", "0"}, want: wErr("ERR invalid expire time in 'set' command")},
			{args: []string{"SET", k, "v", "KEEPTTL", "EX", "5"}, want: wErr("ERR syntax error")},
			{args: []string{"GETRANGE", k, "a", "1"}, want: wErr("ERR value is not an integer or out of range")},
			{args: []string{"EXPIRE", k, "100", "NX", "XX"}, want: wErr("ERR NX and XX, GT or LT options at the same time are not compatible")},
			{args: []string{"MOVE", k, "16"}, want: wErr("ERR DB index is out of range")},
			{args: []string{"GET"}, want: wErr("ERR wrong number of arguments for 'get' command")},
			{args: []string{"MSET", k}, want: wErr("ERR wrong number of arguments for 'mset' command")},
		}
		return errs[rng.IntN(len(errs))]
	case r < 971:
		clear(db)
		return modelOp{args: []string{"FLUSHDB"}, want: wOK}
	default:
		return modelOp{args: []string{"GET", k}, want: bulkOrNil(cur, exists)}
	}
}

// modelGen produces random operations, applying each to its model as it goes: opGen for
// strings, hashGen (hash_model_test.go) for hashes, collGen (coll_model_test.go) for sets,
// lists and sorted sets.
type modelGen interface {
	// next returns the next operation with the reply the server must give.
	next() modelOp
	// selected is the database selected on the connection once the operations so far ran.
	selected() int
	// checkKeyspace compares the server's whole keyspace with the model; it may leave any
	// database selected.
	checkKeyspace(r *modelRun, when string)
}

// modelRun holds the state of one model test run.
type modelRun struct {
	t       *testing.T
	seed    int64
	s       *harness.Server
	c       *wireConn
	g       modelGen
	done    int
	history []string // recent operations, for failure reports
}

// startModelRun starts a server for a model test of g, with the extra command-line arguments
// args, and connects to it. The server runs with appendfsync always: a kill -9 restart must keep
// every acknowledged write.
func startModelRun(t *testing.T, seed int64, g modelGen, args ...string) *modelRun {
	r := &modelRun{t: t, seed: seed, g: g}
	r.s = harness.Start(t, append([]string{"--appendfsync", "always"}, args...)...)
	r.reconnect()
	return r
}

// modelOps is the number of operations for a model test that runs full of them by default and
// short with -short. $LAVIK_MODEL_OPS (make soak) sets the string model's count and scales the
// others by the same factor: it is a count for TestRandomOpsModel's 20,000.
func modelOps(t *testing.T, full, short int) int {
	v := os.Getenv("LAVIK_MODEL_OPS")
	if v == "" {
		if testing.Short() {
			return short
		}
		return full
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("LAVIK_MODEL_OPS=%q: want a positive number", v)
	}
	return max(1, int(int64(n)*int64(full)/20000))
}

func (r *modelRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d, after %d ops: %s\nrecent operations (oldest first):\n  %s",
		r.seed, r.done, fmt.Sprintf(format, args...), strings.Join(r.history, "\n  "))
}

// trace appends wire, the bytes of one pipeline, to the file $LAVIK_MODEL_TRACE names, if it
// does: a failing seed's traffic, to replay against a server by hand.
func (r *modelRun) trace(wire []byte) {
	name := os.Getenv("LAVIK_MODEL_TRACE")
	if name == "" {
		return
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		r.t.Fatalf("LAVIK_MODEL_TRACE: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(wire); err != nil {
		r.t.Fatalf("LAVIK_MODEL_TRACE: %v", err)
	}
}

func (r *modelRun) remember(s string) {
	r.history = append(r.history, s)
	if len(r.history) > 40 {
		r.history = r.history[len(r.history)-40:]
	}
}

// batch sends up to n operations in one pipeline, fewer when one has a check, and checks each
// reply in order.
func (r *modelRun) batch(n int) {
	r.t.Helper()
	var ops []modelOp
	var dbs []int // database selected when each operation was sent
	var buf bytes.Buffer
	for len(ops) < n {
		dbs = append(dbs, r.g.selected())
		op := r.g.next()
		ops = append(ops, op)
		op.appendWire(&buf)
		if op.check != nil {
			break // the model is behind until the reply comes
		}
	}
	r.trace(buf.Bytes())
	werr := r.c.writeAsync(buf.Bytes())
	for i, op := range ops {
		got := r.readOp(op)
		if op.check != nil {
			r.remember(fmt.Sprintf("#%d db%d %v: got %v", r.done, dbs[i], op, got))
		} else {
			r.remember(fmt.Sprintf("#%d db%d %v", r.done, dbs[i], op))
		}
		r.done++
		if op.check != nil {
			if err := op.check(got); err != nil {
				r.fail("op %d of a pipeline of %d: %s\n  got  %v\n  %v", i, len(ops), op.cmds(), got, err)
			}
		} else if !matches(op.want, got) {
			r.fail("op %d of a pipeline of %d: %s\n  got  %v\n  want %v", i, len(ops), op.cmds(), got, op.want)
		}
	}
	if err := <-werr; err != nil {
		r.fail("write: %v", err)
	}
}

// readOp reads the reply of op; for a transaction, it checks MULTI's and the queued replies and
// returns EXEC's.
func (r *modelRun) readOp(op modelOp) wireReply {
	r.t.Helper()
	if op.tx == nil {
		return r.c.read()
	}
	if got := r.c.read(); !got.equal(wOK) {
		r.fail("%s: MULTI got %v", op.cmds(), got)
	}
	for _, q := range op.tx {
		if got := r.c.read(); !got.equal(wStatus("QUEUED")) {
			r.fail("%s: %s got %v, want +QUEUED", op.cmds(), fmtArgs(q.args), got)
		}
	}
	return r.c.read()
}

// reconnect opens a new connection and selects the model's current database.
func (r *modelRun) reconnect() {
	r.c = dialWire(r.t, r.s)
	r.c.expectDo(wOK, "SELECT", strconv.Itoa(r.g.selected()))
}

// run sends ops operations in pipelines of 1-64. Every restartEvery operations and at the end it
// compares the keyspace with the model, restarts the server, alternately clean and with kill -9,
// and compares again. It returns the number of restarts.
func (r *modelRun) run(rng *rand.Rand, ops, restartEvery int) int {
	r.t.Helper()
	restarts := 0
	nextRestart := restartEvery
	for r.done < ops {
		n := 1
		if rng.IntN(10) >= 3 {
			n = 1 + rng.IntN(64)
		}
		n = min(n, ops-r.done)
		r.batch(n)
		if r.done >= nextRestart || r.done >= ops {
			nextRestart += restartEvery
			kill := restarts%2 == 1
			r.compareKeyspace(fmt.Sprintf("before restart %d", restarts+1))
			if kill {
				r.s.KillRestart()
			} else {
				r.s.Restart()
			}
			restarts++
			r.remember(fmt.Sprintf("-- restart (kill -9: %v)", kill))
			r.reconnect()
			r.compareKeyspace(fmt.Sprintf("after restart %d (kill -9: %v)", restarts, kill))
		}
	}
	return restarts
}

// compareKeyspace checks the whole server keyspace against the model and selects the model's
// database again.
func (r *modelRun) compareKeyspace(when string) {
	r.t.Helper()
	r.g.checkKeyspace(r, when)
	r.c.expectDo(wOK, "SELECT", strconv.Itoa(r.g.selected()))
}

// checkModelKeys selects db and checks that SCAN lists exactly the keys in want.
func checkModelKeys[V any](r *modelRun, when string, db int, want map[string]V) {
	r.t.Helper()
	r.c.expectDo(wOK, "SELECT", strconv.Itoa(db))
	seen := map[string]bool{}
	cursor := "0"
	for {
		rep := r.c.do("SCAN", cursor, "COUNT", "100")
		if rep.Kind != '*' || len(rep.Elems) != 2 || rep.Elems[1].Kind != '*' {
			r.fail("%s: bad SCAN reply %v", when, rep)
		}
		for _, e := range rep.Elems[1].Elems {
			seen[e.Str] = true
		}
		if cursor = rep.Elems[0].Str; cursor == "0" {
			break
		}
	}
	var missing, extra []string
	for k := range want {
		if !seen[k] {
			missing = append(missing, strconv.Quote(k))
		}
	}
	for k := range seen {
		if _, ok := want[k]; !ok {
			extra = append(extra, strconv.Quote(k))
		}
	}
	if len(missing)+len(extra) > 0 {
		slices.Sort(missing)
		slices.Sort(extra)
		r.fail("%s: db %d keys differ: missing %v, unexpected %v", when, db, missing, extra)
	}
}

// modelKey is what checkModelDB expects of one key: its TYPE, the reply of cmd, a command that
// shows its whole value, and whether it has an expire time.
type modelKey struct {
	typ  string
	cmd  []string
	want wireReply
	ttl  bool
}

// checkModelDB selects db and checks it against want: SCAN lists exactly its keys, each key has
// its TYPE, value and expire time (PEXPIRETIME), and DBSIZE counts them.
func checkModelDB(r *modelRun, when string, db int, want map[string]modelKey) {
	r.t.Helper()
	checkModelKeys(r, when, db, want)
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	for _, k := range keys {
		buf.Write(wireCmd("TYPE", k))
		buf.Write(wireCmd(want[k].cmd...))
		buf.Write(wireCmd("PEXPIRETIME", k))
	}
	buf.Write(wireCmd("DBSIZE"))
	r.trace(buf.Bytes())
	werr := r.c.writeAsync(buf.Bytes())
	for _, k := range keys {
		e := want[k]
		if got := r.c.read(); !got.equal(wStatus(e.typ)) {
			r.fail("%s: db %d key %q: TYPE %v, want %s", when, db, k, got, e.typ)
		}
		if got := r.c.read(); !matches(e.want, got) {
			r.fail("%s: db %d key %q: %s got %v, want %v", when, db, k, fmtArgs(e.cmd), got, e.want)
		}
		at := r.c.read()
		if at.Kind != ':' || (e.ttl && at.Int <= 0) || (!e.ttl && at.Int != -1) {
			r.fail("%s: db %d key %q: PEXPIRETIME %v, want an expire time: %v", when, db, k, at, e.ttl)
		}
	}
	if got := r.c.read(); !got.equal(wInt(int64(len(want)))) {
		r.fail("%s: db %d DBSIZE %v, want %d", when, db, got, len(want))
	}
	if err := <-werr; err != nil {
		r.fail("write: %v", err)
	}
}

// checkKeyspace compares every key's value and whether it has a TTL, and each DBSIZE.
func (g *opGen) checkKeyspace(r *modelRun, when string) {
	r.t.Helper()
	for db, m := range g.m.dbs {
		want := make(map[string]modelKey, len(m))
		for k, e := range m {
			want[k] = modelKey{typ: "string", cmd: []string{"GET", k}, want: wBulk(e.val), ttl: e.ttl}
		}
		checkModelDB(r, when, db, want)
	}
}

// TestRandomOpsModel runs 20,000 random operations (3,000 with -short, $LAVIK_MODEL_OPS for soak
// runs) in pipelines of 1-64, restarting every 2,000 operations, alternately clean and kill -9.
func TestRandomOpsModel(t *testing.T) {
	ops := modelOps(t, 20000, 3000)
	seed := e2eSeed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	g := newOpGen(rng)
	r := startModelRun(t, seed, g)
	start := time.Now()
	restarts := r.run(rng, ops, 2000)
	t.Logf("%d ops, %d restarts, %d+%d keys at the end, %v", r.done, restarts,
		len(g.m.dbs[0]), len(g.m.dbs[1]), time.Since(start).Round(time.Millisecond))
}
