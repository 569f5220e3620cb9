package test

// The hash model test drives the server and an in-memory model with the same seeded random hash
// commands, mixed with the key commands and string SET/GET on the same keys so that WRONGTYPE
// shows both ways, compares every reply, and across clean and kill -9 restarts compares the
// whole keyspace. It reuses the string model test's run loop (model_test.go). The key space is
// small (20 keys, 30 fields) so that commands keep meeting the hashes earlier ones built.

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

// hashEntry is one key of the model: a hash (fields not nil) or a string.
type hashEntry struct {
	fields map[string]string // nil for a string; never empty for a hash
	order  []string          // the hash's fields in the order they were added: failure reports do not change from run to run
	str    string
	ttl    bool
}

func (e *hashEntry) typeName() string {
	if e.fields != nil {
		return "hash"
	}
	return "string"
}

// set sets field f to v and reports whether f is new.
func (e *hashEntry) set(f, v string) bool {
	_, had := e.fields[f]
	if !had {
		e.order = append(e.order, f)
	}
	e.fields[f] = v
	return !had
}

// del removes field f and reports whether it was there.
func (e *hashEntry) del(f string) bool {
	if _, ok := e.fields[f]; !ok {
		return false
	}
	delete(e.fields, f)
	e.order = slices.DeleteFunc(e.order, func(x string) bool { return x == f })
	return true
}

// all returns the hash's fields, values or both as an array whose order does not matter.
func (e *hashEntry) all(fields, vals bool) wireReply {
	group := int64(1)
	if fields && vals {
		group = 2
	}
	want := wireReply{Kind: wUnordered, Int: group, Elems: []wireReply{}}
	if e == nil {
		return want
	}
	for _, f := range e.order {
		if fields {
			want.Elems = append(want.Elems, wBulk(f))
		}
		if vals {
			want.Elems = append(want.Elems, wBulk(e.fields[f]))
		}
	}
	return want
}

// wrongType is the reply of a hash command on a string and of a string command on a hash.
var wrongType = wErr(errWrongType)

// hreplaceScript does on redis-server what LAVIK.HREPLACE does on Lavik: the key becomes a hash
// of exactly the given fields, keeps its expire time, and a key of another type is an error.
// MULTI, DEL, HSET, EXEC (what lavik-bench sends to Redis) would drop the TTL and overwrite a
// string, so the model could not be the same for both servers.
const hreplaceScript = `local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'none' and t ~= 'hash' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local at = redis.call('PEXPIRETIME', KEYS[1])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV))
if at > 0 then redis.call('PEXPIREAT', KEYS[1], at) end
return redis.call('HLEN', KEYS[1])`

// hashGen produces random hash, key and string operations and applies each to its model. It is
// the hash model test's modelGen.
type hashGen struct {
	rng    *rand.Rand
	dbs    [2]map[string]*hashEntry
	cur    int // database selected on the connection
	keys   []string
	fields []string
}

func newHashGen(rng *rand.Rand) *hashGen {
	keys := []string{"", "sp ace", "\x00bin\xff", "ключ", "{tag}h"}
	for i := len(keys); i < 20; i++ {
		keys = append(keys, "h"+strconv.Itoa(i))
	}
	fields := []string{"", "f ld", "\x00\xff", "поле", "\r\n"}
	for i := len(fields); i < 30; i++ {
		fields = append(fields, "f"+strconv.Itoa(i))
	}
	return &hashGen{rng: rng, dbs: [2]map[string]*hashEntry{{}, {}}, keys: keys, fields: fields}
}

func (g *hashGen) selected() int { return g.cur }

func (g *hashGen) key() string { return g.keys[g.rng.IntN(len(g.keys))] }

// field picks a field: half the time one that the hash e has, if it has any.
func (g *hashGen) field(e *hashEntry) string {
	if e != nil && len(e.order) > 0 && g.rng.IntN(2) == 0 {
		return e.order[g.rng.IntN(len(e.order))]
	}
	return g.fields[g.rng.IntN(len(g.fields))]
}

func (g *hashGen) bytesOf(n int) string {
	b := make([]byte, n)
	binary := g.rng.IntN(2) == 0
	for i := range b {
		if binary {
			b[i] = byte(g.rng.Uint32())
		} else {
			b[i] = "abcdefghijklmnopqrstuvwxyz0123456789-_"[g.rng.IntN(38)]
		}
	}
	return string(b)
}

// value is 0-100 bytes, now and then 200, or one that looks like an integer, or nearly, for
// HINCRBY. Values over 64 bytes turn a Redis hash from a listpack into a hash table.
func (g *hashGen) value() string {
	switch r := g.rng.IntN(100); {
	case r < 10:
		return edgeNumbers[g.rng.IntN(len(edgeNumbers))]
	case r < 25:
		return strconv.Itoa(g.rng.IntN(2000) - 1000)
	case r < 30:
		return g.bytesOf(200)
	default:
		return g.bytesOf(g.rng.IntN(101))
	}
}

func (g *hashGen) ttlSeconds() string { return strconv.Itoa(1000 + g.rng.IntN(100000)) }

// lookup returns key k in the selected database (nil when missing) and whether a hash command
// must answer WRONGTYPE.
func (g *hashGen) lookup(k string) (e *hashEntry, wrong bool) {
	e = g.dbs[g.cur][k]
	return e, e != nil && e.fields == nil
}

func (g *hashGen) hreplaceArgs(k string, pairs []string) []string {
	if harness.IsRedis() {
		return append([]string{"EVAL", hreplaceScript, "1", k}, pairs...)
	}
	return append([]string{"LAVIK.HREPLACE", k}, pairs...)
}

func (g *hashGen) next() modelOp {
	rng := g.rng
	db := g.dbs[g.cur]
	k := g.key()
	e, wrong := g.lookup(k)
	switch r := rng.IntN(1000); {
	case r < 165: // HSET (HMSET now and then) with 1-4 pairs, repeats allowed
		cmd := "HSET"
		if rng.IntN(5) == 0 {
			cmd = "HMSET"
		}
		args := []string{cmd, k}
		for i := rng.IntN(4); i >= 0; i-- {
			args = append(args, g.field(e), g.value())
		}
		if wrong {
			return modelOp{args: args, want: wrongType}
		}
		if e == nil {
			e = &hashEntry{fields: map[string]string{}}
			db[k] = e
		}
		added := int64(0)
		for i := 2; i < len(args); i += 2 {
			if e.set(args[i], args[i+1]) {
				added++
			}
		}
		if cmd == "HMSET" {
			return modelOp{args: args, want: wOK}
		}
		return modelOp{args: args, want: wInt(added)}
	case r < 215:
		f, v := g.field(e), g.value()
		args := []string{"HSETNX", k, f, v}
		switch {
		case wrong:
			return modelOp{args: args, want: wrongType}
		case e == nil:
			e = &hashEntry{fields: map[string]string{}}
			db[k] = e
		}
		if _, ok := e.fields[f]; ok {
			return modelOp{args: args, want: wInt(0)}
		}
		e.set(f, v)
		return modelOp{args: args, want: wInt(1)}
	case r < 290: // HDEL with 1-3 fields, repeats allowed; the key goes with its last field
		args := []string{"HDEL", k}
		for i := rng.IntN(3); i >= 0; i-- {
			args = append(args, g.field(e))
		}
		switch {
		case wrong:
			return modelOp{args: args, want: wrongType}
		case e == nil:
			return modelOp{args: args, want: wInt(0)}
		}
		n := int64(0)
		for _, f := range args[2:] {
			if e.del(f) {
				n++
			}
		}
		if len(e.fields) == 0 {
			delete(db, k)
		}
		return modelOp{args: args, want: wInt(n)}
	case r < 365:
		return g.hget(k, e, wrong)
	case r < 405:
		args := []string{"HMGET", k}
		var want []wireReply
		for i := rng.IntN(4); i >= 0; i-- {
			f := g.field(e)
			args = append(args, f)
			if v, ok := e.lookupField(f); ok {
				want = append(want, wBulk(v))
			} else {
				want = append(want, wNil())
			}
		}
		if wrong {
			return modelOp{args: args, want: wrongType}
		}
		return modelOp{args: args, want: wArr(want...)}
	case r < 435:
		args := []string{"HLEN", k}
		if wrong {
			return modelOp{args: args, want: wrongType}
		}
		if e == nil {
			return modelOp{args: args, want: wInt(0)}
		}
		return modelOp{args: args, want: wInt(int64(len(e.fields)))}
	case r < 465:
		f := g.field(e)
		args := []string{"HSTRLEN", k, f}
		if wrong {
			return modelOp{args: args, want: wrongType}
		}
		v, _ := e.lookupField(f)
		return modelOp{args: args, want: wInt(int64(len(v)))}
	case r < 495:
		f := g.field(e)
		args := []string{"HEXISTS", k, f}
		if wrong {
			return modelOp{args: args, want: wrongType}
		}
		if _, ok := e.lookupField(f); ok {
			return modelOp{args: args, want: wInt(1)}
		}
		return modelOp{args: args, want: wInt(0)}
	case r < 585:
		return g.hincrby(k, e, wrong)
	case r < 645: // HGETALL / HKEYS / HVALS, in whatever order the server keeps
		cmd := []string{"HGETALL", "HKEYS", "HVALS"}[rng.IntN(3)]
		args := []string{cmd, k}
		if wrong {
			return modelOp{args: args, want: wrongType}
		}
		return modelOp{args: args, want: e.all(cmd != "HVALS", cmd != "HKEYS")}
	case r < 655: // HRANDFIELD with a count that takes every field: the reply is the whole hash
		n := 0
		if e != nil {
			n = len(e.fields)
		}
		args := []string{"HRANDFIELD", k, strconv.Itoa(n + rng.IntN(3))}
		withValues := rng.IntN(2) == 0
		if withValues {
			args = append(args, "WITHVALUES")
		}
		if wrong {
			return modelOp{args: args, want: wrongType}
		}
		return modelOp{args: args, want: e.all(true, withValues)}
	case r < 685: // LAVIK.HREPLACE with 1-4 pairs, repeats allowed
		var pairs []string
		for i := rng.IntN(4); i >= 0; i-- {
			pairs = append(pairs, g.field(e), g.value())
		}
		args := g.hreplaceArgs(k, pairs)
		if wrong {
			return modelOp{args: args, want: wrongType}
		}
		ne := &hashEntry{fields: map[string]string{}, ttl: e != nil && e.ttl}
		for i := 0; i < len(pairs); i += 2 {
			ne.set(pairs[i], pairs[i+1])
		}
		db[k] = ne
		return modelOp{args: args, want: wInt(int64(len(ne.fields)))}
	case r < 710: // DEL with 1-3 keys, repeats allowed
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
	case r < 730: // EXISTS with repeats
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
	case r < 760:
		if e == nil {
			return modelOp{args: []string{"TYPE", k}, want: wStatus("none")}
		}
		return modelOp{args: []string{"TYPE", k}, want: wStatus(e.typeName())}
	case r < 790:
		args := []string{"EXPIRE", k, g.ttlSeconds()}
		if e == nil {
			return modelOp{args: args, want: wInt(0)}
		}
		e.ttl = true
		return modelOp{args: args, want: wInt(1)}
	case r < 805:
		args := []string{"PERSIST", k}
		if e == nil || !e.ttl {
			return modelOp{args: args, want: wInt(0)}
		}
		e.ttl = false
		return modelOp{args: args, want: wInt(1)}
	case r < 825:
		args := []string{"TTL", k}
		switch {
		case e == nil:
			return modelOp{args: args, want: wInt(-2)}
		case !e.ttl:
			return modelOp{args: args, want: wInt(-1)}
		}
		return modelOp{args: args, want: wireReply{Kind: wAnyPositive}}
	case r < 855: // RENAME, onto a key of either type or onto itself
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
	case r < 885:
		g.cur = rng.IntN(2)
		return modelOp{args: []string{"SELECT", strconv.Itoa(g.cur)}, want: wOK}
	case r < 910: // SET [EX]: replaces a hash too
		v := g.value()
		args := []string{"SET", k, v}
		ttl := rng.IntN(4) == 0
		if ttl {
			args = append(args, "EX", g.ttlSeconds())
		}
		db[k] = &hashEntry{str: v, ttl: ttl}
		return modelOp{args: args, want: wOK}
	case r < 935:
		args := []string{"GET", k}
		switch {
		case e == nil:
			return modelOp{args: args, want: wNil()}
		case e.fields != nil:
			return modelOp{args: args, want: wrongType}
		}
		return modelOp{args: args, want: wBulk(e.str)}
	case r < 945:
		args := []string{"STRLEN", k}
		switch {
		case e == nil:
			return modelOp{args: args, want: wInt(0)}
		case e.fields != nil:
			return modelOp{args: args, want: wrongType}
		}
		return modelOp{args: args, want: wInt(int64(len(e.str)))}
	case r < 960: // errors found before the key is looked at
		errs := []modelOp{
			{args: []string{"HSET", k, "f"}, want: wErr("ERR wrong number of arguments for 'hset' command")},
			{args: []string{"HSET", k, "f", "v", "g"}, want: wErr("ERR wrong number of arguments for 'hset' command")},
			{args: []string{"HMSET", k, "f", "v", "g"}, want: wErr("ERR wrong number of arguments for 'hmset' command")},
			{args: []string{"HSETNX", k, "f"}, want: wErr("ERR wrong number of arguments for 'hsetnx' command")},
			{args: []string{"HGET", k}, want: wErr("ERR wrong number of arguments for 'hget' command")},
			{args: []string{"HDEL", k}, want: wErr("ERR wrong number of arguments for 'hdel' command")},
			{args: []string{"HINCRBY", k, "f"}, want: wErr("ERR wrong number of arguments for 'hincrby' command")},
		}
		return errs[rng.IntN(len(errs))]
	case r < 970:
		return modelOp{args: []string{"DBSIZE"}, want: wInt(int64(len(db)))}
	default:
		return g.hget(k, e, wrong)
	}
}

func (g *hashGen) hget(k string, e *hashEntry, wrong bool) modelOp {
	f := g.field(e)
	args := []string{"HGET", k, f}
	if wrong {
		return modelOp{args: args, want: wrongType}
	}
	if v, ok := e.lookupField(f); ok {
		return modelOp{args: args, want: wBulk(v)}
	}
	return modelOp{args: args, want: wNil()}
}

// lookupField returns field f of the hash e, which may be nil or a string (no fields).
func (e *hashEntry) lookupField(f string) (string, bool) {
	if e == nil {
		return "", false
	}
	v, ok := e.fields[f]
	return v, ok
}

// hincrby is HINCRBY: the increment is parsed before the key is looked at (a bad one is an
// error even on a string), then the field's value as Redis's string2ll would.
func (g *hashGen) hincrby(k string, e *hashEntry, wrong bool) modelOp {
	rng := g.rng
	f := g.field(e)
	if e != nil && rng.IntN(2) == 0 {
		// Mostly a field that holds an integer, so that increments add up and overflow.
		var ints []string
		for _, x := range e.order {
			if _, ok := redisParseInt(e.fields[x]); ok {
				ints = append(ints, x)
			}
		}
		if len(ints) > 0 {
			f = ints[rng.IntN(len(ints))]
		}
	}
	var by int64
	var incr string
	switch r := rng.IntN(20); {
	case r == 0:
		incr = []string{"abc", "1.5", "", "99999999999999999999", "+1", " 1", "-0", "0x10"}[rng.IntN(8)]
		return modelOp{args: []string{"HINCRBY", k, f, incr}, want: wErr(errNotInt)}
	case r == 1:
		by = math.MaxInt64 - int64(rng.IntN(10))
	case r == 2:
		by = math.MinInt64 + int64(rng.IntN(10))
	case r <= 5:
		// Up to the limit exactly, or one past it.
		v, _ := e.lookupField(f)
		switch n, _ := redisParseInt(v); {
		case n > 0:
			by = math.MaxInt64 - n + int64(rng.IntN(2))
		case n < 0:
			by = math.MinInt64 - n - int64(rng.IntN(2))
		default:
			by = math.MaxInt64
		}
	default:
		by = int64(rng.IntN(201) - 100)
	}
	args := []string{"HINCRBY", k, f, strconv.FormatInt(by, 10)}
	if wrong {
		return modelOp{args: args, want: wrongType}
	}
	old := int64(0)
	if v, ok := e.lookupField(f); ok {
		n, ok := redisParseInt(v)
		if !ok {
			return modelOp{args: args, want: wErr("ERR hash value is not an integer")}
		}
		old = n
	}
	if (by > 0 && old > math.MaxInt64-by) || (by < 0 && old < math.MinInt64-by) {
		return modelOp{args: args, want: wErr(errOverflow)}
	}
	if e == nil {
		e = &hashEntry{fields: map[string]string{}}
		g.dbs[g.cur][k] = e
	}
	e.set(f, strconv.FormatInt(old+by, 10))
	return modelOp{args: args, want: wInt(old + by)}
}

// checkKeyspace compares every key's type, value (HGETALL or GET) and whether it has an expire
// time, and each DBSIZE.
func (g *hashGen) checkKeyspace(r *modelRun, when string) {
	r.t.Helper()
	for db, m := range g.dbs {
		want := make(map[string]modelKey, len(m))
		for k, e := range m {
			if e.fields != nil {
				want[k] = modelKey{typ: "hash", cmd: []string{"HGETALL", k}, want: e.all(true, true), ttl: e.ttl}
			} else {
				want[k] = modelKey{typ: "string", cmd: []string{"GET", k}, want: wBulk(e.str), ttl: e.ttl}
			}
		}
		checkModelDB(r, when, db, want)
	}
}

// TestHashModel runs 3,000 random hash, key and string operations (scaled by $LAVIK_MODEL_OPS
// like TestRandomOpsModel, so make soak runs more) in pipelines of 1-64 over 20 keys in two
// databases, comparing every reply with the model. Every 300 operations it compares the whole
// keyspace and restarts the server, alternately clean and with kill -9 (appendfsync always, so
// every acknowledged write must survive), then compares again.
func TestHashModel(t *testing.T) { runHashModel(t, 3000, 2, 0) }

// TestHashModelGrouped is TestHashModel on a server with the least group threshold (256
// bytes), so that hashes of more than a few fields are grouped (a directory and groups by field
// hash) and the commands meet them being built, edited, split, emptied, shrunk back to one
// record, renamed and restarted; on 6 keys rather than 20, 100 fields rather than 30, and with
// an HSET of 5-15 pairs one operation in ten, so that hashes grow larger.
func TestHashModelGrouped(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("group-threshold is Lavik's")
	}
	runHashModel(t, 3000, 12, 6, "--group-threshold", "256")
}

// bigHashGen is the grouped variant's hashGen: one operation in ten is an HSET of many pairs
// (bulkHSet), and it counts the operations whose key holds, once they ran, a hash longer than
// the least group threshold (256 bytes).
type bigHashGen struct {
	*hashGen
	bigOps int
}

func (g *bigHashGen) next() modelOp {
	var op modelOp
	if g.rng.IntN(10) == 0 {
		op = g.bulkHSet()
	} else {
		op = g.hashGen.next()
	}
	if len(op.args) > 1 {
		if e := g.dbs[g.cur][op.args[1]]; e != nil && e.fields != nil && e.encodedAtLeast() > 256 {
			g.bigOps++
		}
	}
	return op
}

// bulkHSet is HSET of 5-15 pairs, repeats allowed, so that hashes grow past the threshold
// faster than the other commands take them apart.
func (g *bigHashGen) bulkHSet() modelOp {
	k := g.key()
	e, wrong := g.lookup(k)
	args := []string{"HSET", k}
	for i := 5 + g.rng.IntN(11); i > 0; i-- {
		args = append(args, g.field(e), g.value())
	}
	if wrong {
		return modelOp{args: args, want: wrongType}
	}
	if e == nil {
		e = &hashEntry{fields: map[string]string{}}
		g.dbs[g.cur][k] = e
	}
	added := int64(0)
	for i := 2; i < len(args); i += 2 {
		if e.set(args[i], args[i+1]) {
			added++
		}
	}
	return modelOp{args: args, want: wInt(added)}
}

// runHashModel runs the hash model test: full operations on a server started with args. With
// keys > 0 (the grouped variant), on the first keys of newHashGen's keys, with 70 more fields,
// and one operation in ten an HSET of 5-15 pairs, so that hashes grow large.
func runHashModel(t *testing.T, full int, stream uint64, keys int, args ...string) {
	ops := modelOps(t, full, full)
	seed := e2eSeed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), stream))
	g := &bigHashGen{hashGen: newHashGen(rng)}
	var gen modelGen = g.hashGen
	if keys > 0 {
		gen = g
		g.keys = g.keys[:keys]
		for i := 0; i < 70; i++ { // and more fields, for larger hashes
			g.fields = append(g.fields, "grouped-field-"+strconv.Itoa(i))
		}
	}
	r := startModelRun(t, seed, gen, args...)
	start := time.Now()
	restarts := r.run(rng, ops, 300)
	hashes, big := 0, 0
	for _, db := range g.dbs {
		for _, e := range db {
			if e.fields != nil {
				hashes++
				if e.encodedAtLeast() > 256 {
					big++
				}
			}
		}
	}
	t.Logf("%d ops, %d restarts, %d+%d keys (%d hashes, %d of them over 256 bytes) at the end, %v", r.done, restarts,
		len(g.dbs[0]), len(g.dbs[1]), hashes, big, time.Since(start).Round(time.Millisecond))
	if keys > 0 {
		t.Logf("%d of %d operations on a key holding a hash over 256 bytes", g.bigOps, r.done)
	}
}

// encodedAtLeast is a lower bound of the hash's encoded length: its fields and values, a length
// byte each.
func (e *hashEntry) encodedAtLeast() int {
	n := 0
	for f, v := range e.fields {
		n += len(f) + len(v) + 2
	}
	return n
}
