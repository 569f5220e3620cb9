package keyspace

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lavikdb/lavik/pkg/testseed"
	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// testSeed is the seed of a randomized test (testseed.Seed): LAVIK_KEYSPACE_SEED replays one.
func testSeed(t testing.TB) uint64 {
	t.Helper()
	return testseed.Seed(t, "LAVIK_KEYSPACE_SEED")
}

// scaledOps is the number of operations a randomized test runs: def, or LAVIK_KEYSPACE_OPS
// when set (for soak runs).
func scaledOps(def int) int {
	if s := os.Getenv("LAVIK_KEYSPACE_OPS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return def
}

// dbKey names a key of the model.
type dbKey struct {
	db  int
	key string
}

func (k dbKey) String() string {
	if len(k.key) > 24 {
		return fmt.Sprintf("%d/%q...(%d bytes)", k.db, k.key[:24], len(k.key))
	}
	return fmt.Sprintf("%d/%q", k.db, k.key)
}

// mval is a key's value in the model.
type mval struct {
	val string
	exp int64 // unix ms, 0 = none
}

func (v mval) visible(now int64) bool { return v.exp == 0 || v.exp > now }

func (v mval) String() string {
	s := v.val
	if len(s) > 24 {
		s = fmt.Sprintf("%s...(%d bytes)", s[:24], len(s))
	}
	if v.exp != 0 {
		return fmt.Sprintf("%q exp=%d", s, v.exp)
	}
	return strconv.Quote(s)
}

type changeKind uint8

const (
	chSet changeKind = iota
	chDel
	chFlushDB
	chFlushAll
)

// change is one record's effect on one shard, in the order the keyspace appends records to that
// shard's log. Recovery after a crash must produce, in each shard, the state after some prefix
// of that shard's changes.
type change struct {
	shard int
	kind  changeKind
	k     dbKey // for chFlushDB only k.db
	v     mval
	// tx is the keyspace's id of the transaction the change was part of (0: a change that
	// took one record). A transaction a crash cut is not applied anywhere (txcond.go).
	tx uint64
}

func applyChange(st map[dbKey]mval, c change, nShards int) {
	switch c.kind {
	case chSet:
		st[c.k] = c.v
	case chDel:
		delete(st, c.k)
	case chFlushDB, chFlushAll:
		for k := range st {
			if (c.kind == chFlushAll || k.db == c.k.db) && shardFor(nShards, k.db, k.key) == c.shard {
				delete(st, k)
			}
		}
	}
}

// txEffect is what a transaction does to one distinct key, in the order of first appearance in
// its key list. late marks deletes and expire changes, which commit appends after every put.
type txEffect struct {
	k    dbKey
	v    mval
	del  bool
	late bool
}

var errNoSuchKey = errors.New("no such key")

// workload runs seeded random operations against a Keyspace and a model of it. Every operation
// checks its own result; fullCheck compares the whole keyspace.
type workload struct {
	t       testing.TB
	seed    uint64
	rng     *rand.Rand
	clk     *testClock
	opts    Options
	ks      *Keyspace
	se      *Session
	nShards int

	// m is the model: base with every change applied. Keys whose expire-at passed may linger
	// in it; they are invisible.
	m       map[dbKey]mval
	base    map[dbKey]mval
	changes []change
	// durable: changes[:durable] survive a crash (synced).
	durable int

	dbs      []int
	names    []string
	waitProb float64 // chance of Session.Wait after an operation
	syncProb float64 // chance of an explicit sync of every shard's log after an operation
	nops     int
	recent   []string
	// curTx is the id of the transaction of several records the current operation committed.
	curTx atomic.Uint64
}

func newWorkload(t testing.TB, seed uint64, rng *rand.Rand, clk *testClock, opts Options) *workload {
	if opts.chunkSize == 0 {
		// Large values in small chunks, so that most runs store many values chunked (at the
		// default 64 KiB threshold none of the workload's values would be).
		opts.chunkSize = []int{64, 256, 1024, ChunkSize}[rng.IntN(4)]
		opts.chunkMin = []int{100, 1000, 4096, ChunkThreshold}[rng.IntN(4)]
	}
	w := &workload{
		t: t, seed: seed, rng: rng, clk: clk, opts: opts, nShards: opts.Shards,
		m: map[dbKey]mval{}, base: map[dbKey]mval{}, waitProb: 1,
	}
	w.opts.onTx = func(id uint64) { w.curTx.Store(id) }
	opts = w.opts
	w.dbs = []int{0, 0, 0, 1, 2, opts.Databases - 1}
	n := 20 + rng.IntN(200)
	for i := 0; i < n; i++ {
		w.names = append(w.names, fmt.Sprintf("key:%d", i))
	}
	w.names = append(w.names, "", strings.Repeat("long", 100))
	w.ks = mustOpen(t, opts)
	w.se = w.ks.NewSession()
	return w
}

func (w *workload) notef(format string, args ...any) {
	s := fmt.Sprintf("%d: ", w.nops) + fmt.Sprintf(format, args...)
	if len(w.recent) == 40 {
		w.recent = w.recent[1:]
	}
	w.recent = append(w.recent, s)
}

func (w *workload) fatalf(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("seed %d, op %d (shards %d, segment %d, fsync %v, chunks of %d over %d): %s\nlast ops:\n  %s",
		w.seed, w.nops, w.opts.Shards, w.opts.SegmentSize, w.opts.Fsync, w.opts.chunkSize, w.opts.chunkMin,
		fmt.Sprintf(format, args...), strings.Join(w.recent, "\n  "))
}

func (w *workload) emit(c change) {
	c.tx = w.curTx.Load()
	w.changes = append(w.changes, c)
	applyChange(w.m, c, w.nShards)
}

func (w *workload) emitKey(k dbKey, v mval, del bool) {
	c := change{shard: shardFor(w.nShards, k.db, k.key), kind: chSet, k: k, v: v}
	if del {
		c.kind = chDel
	}
	w.emit(c)
}

// emitTx records a transaction's effects in commit order: puts first, then deletes and expire
// changes, each in key order.
func (w *workload) emitTx(effs []txEffect) {
	for _, late := range []bool{false, true} {
		for _, e := range effs {
			if e.late == late {
				w.emitKey(e.k, e.v, e.del)
			}
		}
	}
}

// get returns the model's visible value of k.
func (w *workload) get(k dbKey) (mval, bool) {
	v, ok := w.m[k]
	if !ok || !v.visible(w.clk.Now()) {
		return mval{}, false
	}
	return v, true
}

func (w *workload) pickKey() dbKey {
	return dbKey{db: w.dbs[w.rng.IntN(len(w.dbs))], key: w.names[w.rng.IntN(len(w.names))]}
}

func (w *workload) pickKeys(n int) []dbKey {
	ks := make([]dbKey, n)
	for i := range ks {
		ks[i] = w.pickKey()
	}
	return ks
}

func toKeys(ks []dbKey) []Key {
	out := make([]Key, len(ks))
	for i, k := range ks {
		out[i] = Key{DB: k.db, Key: []byte(k.key)}
	}
	return out
}

// bigValue returns a value longer than the chunk threshold (a few chunks to a few dozen).
func (w *workload) bigValue() string {
	n := w.opts.chunkMin + 1 + w.rng.IntN(min(30*w.opts.chunkSize, 64<<10))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('A' + (w.nops+i/w.opts.chunkSize)%26)
	}
	copy(b, fmt.Sprintf("%d|", w.nops))
	return string(b)
}

// pickLarge returns a key whose value is longer than the chunk threshold half the time (when
// there is one), so that edits often hit chunked values; else any key.
func (w *workload) pickLarge() dbKey {
	if w.rng.IntN(2) == 0 {
		now := w.clk.Now()
		var big []dbKey
		for k, v := range w.m {
			if len(v.val) > w.opts.chunkMin && v.visible(now) {
				big = append(big, k)
			}
		}
		if len(big) > 0 {
			slices.SortFunc(big, func(a, b dbKey) int { return strings.Compare(a.String(), b.String()) })
			return big[w.rng.IntN(len(big))]
		}
	}
	return w.pickKey()
}

// value returns a fresh value: mostly small, sometimes larger than a segment.
func (w *workload) value() string {
	var n int
	switch r := w.rng.IntN(100); {
	case r < 80:
		n = w.rng.IntN(48)
	case r < 97:
		n = 48 + w.rng.IntN(2000)
	default:
		n = 4000 + w.rng.IntN(20000)
	}
	b := make([]byte, 0, n+12)
	b = fmt.Appendf(b, "%d|", w.nops)
	c := byte('a' + w.rng.IntN(26))
	for len(b) < n {
		b = append(b, c)
		if w.rng.IntN(16) == 0 {
			c = byte(w.rng.IntN(256))
		}
	}
	return string(b)
}

func (w *workload) rel(exp int64) string {
	if exp == 0 {
		return "none"
	}
	return fmt.Sprintf("now%+d", exp-w.clk.Now())
}

// step runs one random operation and checks its result.
func (w *workload) step() {
	w.nops++
	w.curTx.Store(0)
	switch r := w.rng.IntN(1000); {
	case r < 260:
		w.opPut()
	case r < 340:
		w.opGet()
	case r < 420:
		w.opDel()
	case r < 500:
		w.opRename()
	case r < 540:
		w.opCopy()
	case r < 610:
		w.opAppend()
	case r < 690:
		w.opExpire()
	case r < 730:
		w.opPersist()
	case r < 780:
		w.opMSet()
	case r < 810:
		w.opMGet()
	case r < 920:
		d := w.rng.Int64N(1500)
		w.notef("advance clock %dms", d)
		w.clk.Advance(d)
	case r < 932:
		w.opFlushDB()
	case r < 934:
		w.opFlushAll()
	case r < 960:
		w.opSetRange()
	case r < 980:
		w.opGetRange()
	default:
		w.opExec()
	}
	if w.rng.Float64() < w.waitProb {
		if err := w.se.Wait(); err != nil {
			w.fatalf("wait: %v", err)
		}
		if w.opts.Fsync == vlog.FsyncAlways {
			w.durable = len(w.changes)
		}
	}
	if w.rng.Float64() < w.syncProb {
		w.notef("sync every shard")
		for _, s := range w.ks.shards {
			if err := s.log.Sync(); err != nil {
				w.fatalf("sync shard %d: %v", s.id, err)
			}
		}
		w.durable = len(w.changes)
	}
}

func (w *workload) opPut() {
	k, v, now := w.pickKey(), w.value(), w.clk.Now()
	if w.rng.IntN(10) == 0 {
		v = w.bigValue()
	}
	var exp int64
	switch r := w.rng.IntN(20); {
	case r < 5:
		exp = now + 1 + w.rng.Int64N(5000)
	case r == 5:
		exp = now - w.rng.Int64N(100) // already past: deletes
	}
	w.notef("put %v len %d exp %s", k, len(v), w.rel(exp))
	if err := w.ks.Put(w.se, k.db, []byte(k.key), []byte(v), exp, TypeString); err != nil {
		w.fatalf("put %v: %v", k, err)
	}
	w.emitKey(k, mval{v, exp}, exp != 0 && exp <= now)
	w.checkKey(k)
}

func (w *workload) opGet() {
	k := w.pickKey()
	w.notef("get %v", k)
	w.checkKey(k)
}

func (w *workload) opDel() {
	keys := w.pickKeys(1 + w.rng.IntN(3))
	w.notef("del %v", keys)
	var n int
	err := w.ks.Update(w.se, toKeys(keys), func(tx *Tx) error {
		n = 0
		for i := range keys {
			if tx.Delete(i) {
				n++
			}
		}
		return nil
	})
	if err != nil {
		w.fatalf("del %v: %v", keys, err)
	}
	var effs []txEffect
	seen := map[dbKey]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if _, ok := w.get(k); ok {
			effs = append(effs, txEffect{k: k, del: true, late: true})
		}
	}
	if n != len(effs) {
		w.fatalf("del %v deleted %d keys, model %d", keys, n, len(effs))
	}
	w.emitTx(effs)
	for _, k := range keys {
		w.checkKey(k)
	}
}

// opRename is RENAME (same database) or MOVE-like (another database): delete the source, put its
// value and expire-at at the destination.
func (w *workload) opRename() {
	src, dst := w.pickKey(), w.pickKey()
	if src == dst {
		dst.db = (dst.db + 1) % w.opts.Databases
	}
	w.notef("rename %v -> %v", src, dst)
	err := w.ks.Update(w.se, toKeys([]dbKey{src, dst}), func(tx *Tx) error {
		if !tx.Exists(0) {
			return errNoSuchKey
		}
		m, _ := tx.Meta(0)
		v, _, err := tx.Value(0)
		if err != nil {
			return err
		}
		tx.Delete(0)
		tx.Put(1, v, m.ExpireAt, m.Type)
		return nil
	})
	sv, ok := w.get(src)
	switch {
	case !ok && !errors.Is(err, errNoSuchKey):
		w.fatalf("rename of missing %v: %v, want no such key", src, err)
	case ok && err != nil:
		w.fatalf("rename %v -> %v: %v", src, dst, err)
	case ok:
		w.emitTx([]txEffect{{k: src, del: true, late: true}, {k: dst, v: sv}})
	}
	w.checkKey(src)
	w.checkKey(dst)
}

func (w *workload) opCopy() {
	src, dst := w.pickKey(), w.pickKey()
	if src == dst {
		dst.db = (dst.db + 1) % w.opts.Databases
	}
	replace := w.rng.IntN(2) == 0
	w.notef("copy %v -> %v replace %v", src, dst, replace)
	var copied bool
	err := w.ks.Update(w.se, toKeys([]dbKey{src, dst}), func(tx *Tx) error {
		copied = false
		if !tx.Exists(0) || (tx.Exists(1) && !replace) {
			return nil
		}
		m, _ := tx.Meta(0)
		v, _, err := tx.Value(0)
		if err != nil {
			return err
		}
		tx.Put(1, v, m.ExpireAt, m.Type)
		copied = true
		return nil
	})
	if err != nil {
		w.fatalf("copy: %v", err)
	}
	sv, sok := w.get(src)
	_, dok := w.get(dst)
	want := sok && (!dok || replace)
	if copied != want {
		w.fatalf("copy %v -> %v copied %v, model %v", src, dst, copied, want)
	}
	if want {
		w.emitTx([]txEffect{{k: dst, v: sv}})
	}
	w.checkKey(src)
	w.checkKey(dst)
}

// opAppend is APPEND: read the value (from disk if need be) and write it back longer, keeping
// the expire-at; or, half the time, the way the command does it (WriteAt at the end).
func (w *workload) opAppend() {
	k, suffix := w.pickKey(), w.value()
	if w.rng.IntN(2) == 0 {
		k = w.pickLarge()
		w.notef("append (WriteAt) %v len %d", k, len(suffix))
		w.writeAt(k, -1, suffix)
		return
	}
	w.notef("append %v len %d", k, len(suffix))
	var newLen int
	err := w.ks.Update(w.se, toKeys([]dbKey{k}), func(tx *Tx) error {
		v, ok, err := tx.Value(0)
		if err != nil {
			return err
		}
		var exp int64
		if ok {
			m, _ := tx.Meta(0)
			if m.Len != len(v) {
				return fmt.Errorf("Meta.Len %d, value of %d bytes", m.Len, len(v))
			}
			exp = m.ExpireAt
		}
		nv := append(append(make([]byte, 0, len(v)+len(suffix)), v...), suffix...)
		tx.Put(0, nv, exp, TypeString)
		newLen = len(nv)
		return nil
	})
	if err != nil {
		w.fatalf("append %v: %v", k, err)
	}
	old, _ := w.get(k)
	nv := mval{old.val + suffix, old.exp}
	if newLen != len(nv.val) {
		w.fatalf("append %v: length %d, model %d", k, newLen, len(nv.val))
	}
	w.emitTx([]txEffect{{k: k, v: nv}})
	w.checkKey(k)
}

// opSetRange is SETRANGE: WriteAt at an offset inside the value, at or across a chunk boundary,
// or past its end (the gap is zero-filled).
func (w *workload) opSetRange() {
	k := w.pickLarge()
	old, _ := w.get(k)
	n, cs := len(old.val), w.opts.chunkSize
	var off int
	switch r := w.rng.IntN(4); {
	case r == 0:
		off = max(0, (w.rng.IntN(n/cs+2))*cs+w.rng.IntN(3)-1) // around a chunk boundary
	case r == 1:
		off = n + w.rng.IntN(3*cs) // past the end
	default:
		off = w.rng.IntN(n + 1)
	}
	patch := w.value()
	if w.rng.IntN(3) == 0 {
		patch = patch[:min(len(patch), w.rng.IntN(2*cs))]
	}
	w.notef("setrange %v off %d len %d (value %d)", k, off, len(patch), n)
	w.writeAt(k, off, patch)
}

// writeAt runs Tx.WriteAt (off -1: at the end) and checks the value it leaves.
func (w *workload) writeAt(k dbKey, off int, patch string) {
	var newLen int
	err := w.ks.Update(w.se, toKeys([]dbKey{k}), func(tx *Tx) error {
		m, ok := tx.Meta(0)
		at := int64(off)
		if off < 0 {
			at = int64(m.Len)
		}
		if err := tx.WriteAt(0, at, []byte(patch), TypeString|RawHint); err != nil {
			return err
		}
		nm, _ := tx.Meta(0)
		if want := max(int64(m.Len), at+int64(len(patch))); int64(nm.Len) != want || ok && nm.ExpireAt != m.ExpireAt {
			return fmt.Errorf("Meta after WriteAt(%d, %d bytes) = %+v, before %+v", at, len(patch), nm, m)
		}
		newLen = nm.Len
		return nil
	})
	if err != nil {
		w.fatalf("writeAt %v: %v", k, err)
	}
	old, ok := w.get(k)
	at := off
	if off < 0 {
		at = len(old.val)
	}
	b := []byte(old.val)
	if need := at + len(patch); need > len(b) {
		b = append(b, make([]byte, need-len(b))...)
	}
	copy(b[at:], patch)
	nv := mval{string(b), old.exp}
	if !ok {
		nv.exp = 0
	}
	if newLen != len(nv.val) {
		w.fatalf("writeAt %v: length %d, model %d", k, newLen, len(nv.val))
	}
	w.emitTx([]txEffect{{k: k, v: nv}}) // with an empty patch maybe no record: the same value
	w.checkKey(k)
}

// opGetRange reads a random part of a value with GetRange.
func (w *workload) opGetRange() {
	k := w.pickLarge()
	a, b := w.rng.IntN(30000), w.rng.IntN(30000)
	if w.rng.IntN(2) == 0 {
		b = a + w.rng.IntN(3*w.opts.chunkSize)
	}
	span := func(n int) (int, int) {
		from := min(a, n)
		return from, max(from, min(b, n))
	}
	w.notef("getrange %v %d %d", k, a, b)
	var got string
	ok, err := w.ks.getRangeBytes(k.db, []byte(k.key), span, func(part []byte, m Meta) {
		got = string(part)
		if m.Type != TypeString {
			w.fatalf("getrange %v: type %d", k, m.Type)
		}
	})
	if err != nil {
		w.fatalf("getrange %v: %v", k, err)
	}
	want, wok := w.get(k)
	if ok != wok {
		w.fatalf("getrange %v: present %v, model %v", k, ok, wok)
	}
	if from, to := span(len(want.val)); ok && got != want.val[from:to] {
		w.fatalf("getrange %v [%d, %d) of %d bytes: %q, model %q", k, from, to, len(want.val), short(got), short(want.val[from:to]))
	}
}

// short abbreviates s for a failure message.
func short(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q...(%d bytes)", s[:40], len(s))
	}
	return strconv.Quote(s)
}

func (w *workload) opExpire() {
	k := w.pickKey()
	at := w.clk.Now() + w.rng.Int64N(6000) - 1000
	w.notef("expire %v at %s", k, w.rel(at))
	var set bool
	err := w.ks.Update(w.se, toKeys([]dbKey{k}), func(tx *Tx) error {
		set = false
		if !tx.Exists(0) {
			return nil
		}
		tx.SetExpire(0, at)
		set = true
		m, ok := tx.Meta(0)
		if at <= tx.Now() {
			if ok {
				return fmt.Errorf("key exists after SetExpire in the past")
			}
		} else if !ok || m.ExpireAt != at {
			return fmt.Errorf("Meta after SetExpire(%d) = %+v, %v", at, m, ok)
		}
		return nil
	})
	if err != nil {
		w.fatalf("expire %v: %v", k, err)
	}
	v, ok := w.get(k)
	if set != ok {
		w.fatalf("expire %v set %v, model has key %v", k, set, ok)
	}
	if ok {
		if at <= w.clk.Now() {
			w.emitTx([]txEffect{{k: k, del: true, late: true}})
		} else {
			w.emitTx([]txEffect{{k: k, v: mval{v.val, at}, late: true}})
		}
	}
	w.checkKey(k)
}

func (w *workload) opPersist() {
	k := w.pickKey()
	w.notef("persist %v", k)
	var done bool
	err := w.ks.Update(w.se, toKeys([]dbKey{k}), func(tx *Tx) error {
		m, ok := tx.Meta(0)
		done = ok && m.ExpireAt != 0
		if done {
			tx.SetExpire(0, 0)
		}
		return nil
	})
	if err != nil {
		w.fatalf("persist %v: %v", k, err)
	}
	v, ok := w.get(k)
	if want := ok && v.exp != 0; done != want {
		w.fatalf("persist %v = %v, model %v", k, done, want)
	}
	if done {
		w.emitTx([]txEffect{{k: k, v: mval{v.val, 0}, late: true}})
	}
	w.checkKey(k)
}

// opMSet puts several keys (duplicates allowed: the last put wins) in one transaction.
func (w *workload) opMSet() {
	keys := w.pickKeys(2 + w.rng.IntN(3))
	vals := make([][]byte, len(keys))
	for i := range vals {
		vals[i] = []byte(w.value())
	}
	w.notef("mset %v", keys)
	err := w.ks.Update(w.se, toKeys(keys), func(tx *Tx) error {
		for i := range keys {
			tx.Put(i, vals[i], 0, TypeString)
		}
		return nil
	})
	if err != nil {
		w.fatalf("mset: %v", err)
	}
	var effs []txEffect
	pos := map[dbKey]int{}
	for i, k := range keys {
		if j, ok := pos[k]; ok {
			effs[j].v = mval{string(vals[i]), 0}
			continue
		}
		pos[k] = len(effs)
		effs = append(effs, txEffect{k: k, v: mval{string(vals[i]), 0}})
	}
	w.emitTx(effs)
	for _, k := range keys {
		w.checkKey(k)
	}
}

func (w *workload) opMGet() {
	db := w.dbs[w.rng.IntN(len(w.dbs))]
	n := 1 + w.rng.IntN(6)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(w.names[w.rng.IntN(len(w.names))])
	}
	snapshot := w.rng.IntN(2) == 0
	w.notef("mget db %d %q snapshot %v", db, keys, snapshot)
	calls := 0
	w.ks.mgetBytes(db, keys, snapshot, func(i int, val []byte, _ Meta, ok bool, err error) {
		calls++
		k := dbKey{db, string(keys[i])}
		if err != nil {
			w.fatalf("mget %v: %v", k, err)
		}
		want, wok := w.get(k)
		if ok != wok || (ok && string(val) != want.val) {
			w.fatalf("mget %v = %q, %v; model %v, %v", k, val, ok, want, wok)
		}
	})
	if calls != n {
		w.fatalf("mget of %d keys called fn %d times", n, calls)
	}
	want := 0
	for _, k := range keys {
		if _, ok := w.get(dbKey{db, string(k)}); ok {
			want++
		}
	}
	if got := w.ks.Exists(w.se, db, keys, nil); got != want {
		w.fatalf("exists %q = %d, model %d", keys, got, want)
	}
}

func (w *workload) opFlushDB() {
	db := w.dbs[w.rng.IntN(len(w.dbs))]
	w.notef("flushdb %d", db)
	if err := w.ks.FlushDB(w.se, db); err != nil {
		w.fatalf("flushdb %d: %v", db, err)
	}
	for s := 0; s < w.nShards; s++ {
		w.emit(change{shard: s, kind: chFlushDB, k: dbKey{db: db}})
	}
	for db2 := range w.opts.Databases {
		if db2 != db && w.ks.DBSize(nil, db2) < int64(len(w.visibleKeys(db2))) {
			w.fatalf("flushdb %d: db %d lost keys", db, db2)
		}
	}
	if n := w.ks.DBSize(nil, db); n != 0 {
		w.fatalf("flushdb %d: %d keys left", db, n)
	}
}

func (w *workload) opFlushAll() {
	w.notef("flushall")
	if err := w.ks.FlushAll(w.se); err != nil {
		w.fatalf("flushall: %v", err)
	}
	for s := 0; s < w.nShards; s++ {
		w.emit(change{shard: s, kind: chFlushAll})
	}
	// FLUSHALL syncs every shard's log: everything before it and the flush itself are durable.
	w.durable = len(w.changes)
	for db := range w.opts.Databases {
		if n := w.ks.DBSize(nil, db); n != 0 {
			w.fatalf("flushall: db %d has %d keys", db, n)
		}
	}
}

// checkKey compares one key through Get and Lookup with the model.
func (w *workload) checkKey(k dbKey) {
	w.t.Helper()
	want, wok := w.get(k)
	var val string
	var meta Meta
	ok, err := w.ks.getBytes(k.db, []byte(k.key), func(v []byte, m Meta) { val, meta = string(v), m })
	if err != nil {
		w.fatalf("get %v: %v", k, err)
	}
	if ok != wok {
		w.fatalf("get %v: present %v, model %v (%v)", k, ok, wok, want)
	}
	if !ok {
		if _, lok := w.ks.Lookup(nil, k.db, []byte(k.key)); lok {
			w.fatalf("lookup %v: present, model missing", k)
		}
		return
	}
	got := mval{val, meta.ExpireAt}
	if got != want || meta.Len != len(val) || meta.Type != TypeString {
		w.fatalf("get %v = %v (meta %+v), model %v", k, got, meta, want)
	}
	if lm, lok := w.ks.Lookup(nil, k.db, []byte(k.key)); !lok || lm.ExpireAt != want.exp || lm.Len != len(want.val) {
		w.fatalf("lookup %v = %+v, %v; model %v", k, lm, lok, want)
	}
}

func (w *workload) visibleKeys(db int) []string {
	now := w.clk.Now()
	var out []string
	for k, v := range w.m {
		if k.db == db && v.visible(now) {
			out = append(out, k.key)
		}
	}
	sort.Strings(out)
	return out
}

// fullCheck compares every database with the model: the key set (through Keys), every value,
// and the counts; exact says no expired key may still be counted (right after Open).
func (w *workload) fullCheck(exact bool) {
	w.t.Helper()
	info := w.ks.Info(nil)
	for db := range w.opts.Databases {
		want := w.visibleKeys(db)
		var got []string
		w.ks.Keys(nil, db, func(key []byte, _ Meta) { got = append(got, string(key)) })
		sort.Strings(got)
		if !slices.Equal(got, want) {
			w.fatalf("db %d: keys differ from the model:\n%s", db, diffKeys(got, want))
		}
		for _, k := range want {
			w.checkKey(dbKey{db, k})
		}
		n := w.ks.DBSize(nil, db)
		if n < int64(len(want)) || (exact && n != int64(len(want))) {
			w.fatalf("db %d: DBSize %d, model %d keys (exact %v)", db, n, len(want), exact)
		}
		if exact {
			var exps int64
			for _, k := range want {
				if w.m[dbKey{db, k}].exp != 0 {
					exps++
				}
			}
			if info[db].Keys != n || info[db].Expires != exps {
				w.fatalf("db %d: info %+v, model %d keys %d with a TTL", db, info[db], n, exps)
			}
		}
	}
}

func diffKeys(got, want []string) string {
	g, m := map[string]bool{}, map[string]bool{}
	for _, k := range got {
		if g[k] {
			return fmt.Sprintf("key %q listed twice", k)
		}
		g[k] = true
	}
	for _, k := range want {
		m[k] = true
	}
	var b strings.Builder
	n := 0
	for _, k := range got {
		if !m[k] && n < 10 {
			fmt.Fprintf(&b, "  unexpected %q\n", k)
			n++
		}
	}
	for _, k := range want {
		if !g[k] && n < 20 {
			fmt.Fprintf(&b, "  missing %q\n", k)
			n++
		}
	}
	return b.String()
}

// restart closes the keyspace cleanly, opens it again and compares everything.
func (w *workload) restart() {
	w.t.Helper()
	w.notef("restart")
	if err := w.ks.Close(); err != nil {
		w.fatalf("close: %v", err)
	}
	ks, err := Open(w.opts)
	if err != nil {
		w.fatalf("reopen: %v", err)
	}
	w.ks, w.se = ks, ks.NewSession()
	w.durable = len(w.changes)
	w.fullCheck(true)
}

func (w *workload) close() {
	w.t.Helper()
	if err := w.ks.Close(); err != nil {
		w.fatalf("close: %v", err)
	}
}

// modelConfig draws the keyspace shape of one seeded run.
func modelConfig(rng *rand.Rand, opts *Options) {
	opts.Shards = []int{1, 2, 4, 8}[rng.IntN(4)]
	opts.SegmentSize = []int64{2 << 10, 8 << 10, 64 << 10}[rng.IntN(3)]
	opts.Fsync = []vlog.Fsync{vlog.FsyncAlways, vlog.FsyncEverysec, vlog.FsyncNo}[rng.IntN(3)]
}

// TestModel runs seeded random operations against the keyspace and a map model, comparing each
// result, and every few hundred operations closes and reopens the keyspace and compares it
// whole.
func TestModel(t *testing.T) {
	base := testSeed(t)
	total := scaledOps(12000)
	const perSeed = 2000
	for round := 0; round*perSeed < total; round++ {
		seed := base + uint64(round)
		ops := min(perSeed, total-round*perSeed)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			clk := newTestClock()
			opts := testOpts(vfs.NewMem(), clk)
			modelConfig(rng, &opts)
			w := newWorkload(t, seed, rng, clk, opts)
			restartEvery := 100 + rng.IntN(400)
			for i := 1; i <= ops; i++ {
				w.step()
				if i%restartEvery == 0 {
					w.restart()
				}
				if i%97 == 0 {
					w.fullCheck(false)
				}
			}
			w.restart()
			w.close()
		})
	}
}

// stateOf reads every key of every database of ks: the state recovery produced.
func stateOf(ks *Keyspace, dbs int) (map[dbKey]mval, error) {
	st := map[dbKey]mval{}
	for db := 0; db < dbs; db++ {
		var keys []string
		ks.Keys(nil, db, func(k []byte, _ Meta) { keys = append(keys, string(k)) })
		for _, k := range keys {
			var v mval
			ok, err := ks.getBytes(db, []byte(k), func(val []byte, m Meta) { v = mval{string(val), m.ExpireAt} })
			if err != nil {
				return nil, fmt.Errorf("get %d/%q: %w", db, k, err)
			}
			if !ok {
				return nil, fmt.Errorf("key %d/%q listed but missing", db, k)
			}
			if _, dup := st[dbKey{db, k}]; dup {
				return nil, fmt.Errorf("key %d/%q listed twice", db, k)
			}
			st[dbKey{db, k}] = v
		}
	}
	return st, nil
}

// checkPrefixes reports whether, in every shard, got (the visible state after recovery) equals
// base with some prefix changes[:j] applied, lo <= j <= len(changes), as seen at time now, less
// the changes of the transactions recovery found incomplete (aborted). A shard's log is a prefix
// of its records after any crash, and a transaction applies everywhere or nowhere, so this is
// exactly what recovery may produce; lo is how much was synced, and no synced change may belong
// to an aborted transaction.
func checkPrefixes(nShards int, base map[dbKey]mval, changes []change, lo int, got map[dbKey]mval, now int64, aborted func(uint64) bool) error {
	kept := make([]change, 0, len(changes))
	keptLo := 0
	for i, c := range changes {
		if c.tx != 0 && aborted(c.tx) {
			if i < lo {
				return fmt.Errorf("change %d (%v) was synced, but recovery aborted its transaction", i, c)
			}
			continue
		}
		if i < lo {
			keptLo++
		}
		kept = append(kept, c)
	}
	changes, lo = kept, keptLo
	for s := 0; s < nShards; s++ {
		inShard := func(k dbKey) bool { return shardFor(nShards, k.db, k.key) == s }
		cand := map[dbKey]mval{}
		for k, v := range base {
			if inShard(k) {
				cand[k] = v
			}
		}
		for _, c := range changes[:lo] {
			if c.shard == s {
				applyChange(cand, c, nShards)
			}
		}
		gotS := map[dbKey]mval{}
		for k, v := range got {
			if inShard(k) {
				gotS[k] = v
			}
		}
		same := func(k dbKey) bool {
			cv, cok := cand[k]
			cok = cok && cv.visible(now)
			gv, gok := gotS[k]
			return cok == gok && (!cok || cv == gv)
		}
		bad := map[dbKey]bool{}
		for k := range cand {
			if !same(k) {
				bad[k] = true
			}
		}
		for k := range gotS {
			if !same(k) {
				bad[k] = true
			}
		}
		badAtLo := maps.Clone(bad)
		for j := lo; len(bad) > 0 && j < len(changes); j++ {
			c := changes[j]
			if c.shard != s {
				continue
			}
			var touched []dbKey
			if c.kind == chSet || c.kind == chDel {
				touched = []dbKey{c.k}
			} else {
				for k := range cand {
					if c.kind == chFlushAll || k.db == c.k.db {
						touched = append(touched, k)
					}
				}
			}
			applyChange(cand, c, nShards)
			for _, k := range touched {
				if same(k) {
					delete(bad, k)
				} else {
					bad[k] = true
				}
			}
		}
		if len(bad) > 0 {
			var b strings.Builder
			n := 0
			for k := range bad {
				if n++; n > 4 {
					break
				}
				cv, cok := cand[k]
				gv, gok := gotS[k]
				fmt.Fprintf(&b, "\n  still off after all changes: %v: recovered %v (present %v), model %v (present %v)", k, gv, gok, cv, cok && cv.visible(now))
			}
			n = 0
			for k := range badAtLo {
				if n++; n > 8 {
					break
				}
				cv, cok := cand[k]
				gv, gok := gotS[k]
				fmt.Fprintf(&b, "\n  %v: recovered %v (present %v), synced state had it differently; after all changes: %v (present %v)", k, gv, gok, cv, cok && cv.visible(now))
			}
			return fmt.Errorf("shard %d: recovered state is not the state after any of changes [%d, %d] (%d keys off at %d):%s",
				s, lo, len(changes), len(badAtLo), lo, b.String())
		}
	}
	return nil
}

// recoverAndCheck opens a keyspace on fs, the file system a crash left, and checks it against
// the changes (at least changes[:lo] must be there). It returns the open keyspace and its state.
func (w *workload) recoverAndCheck(fs vfs.FS, lo int) (*Keyspace, map[dbKey]mval) {
	w.t.Helper()
	opts := w.opts
	opts.FS = fs
	ks, err := Open(opts)
	if err != nil {
		w.fatalf("open after crash: %v", err)
	}
	got, err := stateOf(ks, opts.Databases)
	if err != nil {
		ks.Close()
		w.fatalf("after crash: %v (a torn or corrupt record served?)", err)
	}
	if err := checkPrefixes(w.nShards, w.base, w.changes, lo, got, w.clk.Now(), ks.tx.isAborted); err != nil {
		ks.Close()
		w.fatalf("after crash (synced changes %d of %d): %v", lo, len(w.changes), err)
	}
	// Every key counted is a recovered key: recovery dropped what had expired.
	for db := range opts.Databases {
		var n int64
		for k := range got {
			if k.db == db {
				n++
			}
		}
		if ks.DBSize(nil, db) != n {
			ks.Close()
			w.fatalf("after crash: DBSize(%d) = %d, recovered %d keys", db, ks.DBSize(nil, db), n)
		}
	}
	return ks, got
}

// adopt makes the workload continue on ks (opened with fs), whose state is st; the old
// keyspace must be closed.
func (w *workload) adopt(fs vfs.FS, ks *Keyspace, st map[dbKey]mval) {
	w.opts.FS = fs
	w.ks, w.se = ks, ks.NewSession()
	w.base, w.m = st, maps.Clone(st)
	w.changes, w.durable = nil, 0
	w.notef("continue on the recovered keyspace")
}
