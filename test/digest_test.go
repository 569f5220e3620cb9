package test

// LAVIK.DIGEST, DEBUG DIGEST and DEBUG DIGEST-VALUE: two servers given the same data, written
// in a different order and stored differently (one groups every collection past 256 bytes, the
// other keeps them whole), have the same digests; any change of a value, an expiry, a key's
// name or database changes them; a restart and a kill -9 keep them.

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

// digestOp is one write of the data both servers get.
type digestOp []any

// digestData is the writes of a keyspace of every type in two databases, with expiries: built
// from a seed, in an order the caller may shuffle (each key's writes keep their order).
func digestData(seed uint64) [][]digestOp {
	rng := rand.New(rand.NewPCG(seed, 1))
	exp := time.Now().Add(time.Hour).UnixMilli()
	var keys [][]digestOp
	add := func(ops ...digestOp) { keys = append(keys, ops) }
	for i := range 20 {
		add(digestOp{"SET", fmt.Sprint("s", i), strings.Repeat("v", rng.IntN(300))})
	}
	add(digestOp{"SET", "big", strings.Repeat("x", 200_000)}) // a chunked string
	for i := range 6 {
		k := fmt.Sprint("h", i)
		var ops []digestOp
		for j := range 40 * (i + 1) {
			ops = append(ops, digestOp{"HSET", k, fmt.Sprint("f", j), strings.Repeat("h", rng.IntN(40))})
		}
		ops = append(ops, digestOp{"HDEL", k, "f3"})
		add(ops...)
		k = fmt.Sprint("set", i)
		ops = nil
		for j := range 50 * (i + 1) {
			ops = append(ops, digestOp{"SADD", k, fmt.Sprintf("member-%d-%d", j, rng.IntN(1000))})
		}
		add(ops...)
		k = fmt.Sprint("z", i)
		ops = nil
		for j := range 50 * (i + 1) {
			ops = append(ops, digestOp{"ZADD", k, rng.IntN(100), fmt.Sprint("zm", j)})
		}
		ops = append(ops, digestOp{"ZINCRBY", k, 0.5, "zm1"})
		add(ops...)
		k = fmt.Sprint("l", i)
		ops = nil
		for j := range 40 * (i + 1) {
			ops = append(ops, digestOp{"RPUSH", k, fmt.Sprintf("elem-%d", j)})
		}
		ops = append(ops, digestOp{"LPOP", k})
		add(ops...)
		k = fmt.Sprint("x", i)
		ops = nil
		for j := range 30 * (i + 1) {
			ops = append(ops, digestOp{"XADD", k, fmt.Sprintf("%d-1", j+1), "field", fmt.Sprint("value", j)})
		}
		ops = append(ops, digestOp{"XGROUP", "CREATE", k, "g", "0"}, digestOp{"XREADGROUP", "GROUP", "g", "c", "COUNT", 3, "STREAMS", k, ">"})
		add(ops...)
	}
	add(digestOp{"SET", "e1", "expires"}, digestOp{"PEXPIREAT", "e1", exp})
	add(digestOp{"HSET", "e2", "a", "b"}, digestOp{"PEXPIREAT", "e2", exp + 1000})
	// Database 1: a key of the same name as one of database 0, and its own.
	add(digestOp{"SELECT", 1}, digestOp{"SET", "s1", "other"}, digestOp{"RPUSH", "only1", "a", "b"}, digestOp{"SELECT", 0})
	return keys
}

// applyDigestData writes keys (each key's writes in order; the keys in the order perm gives).
func applyDigestData(t *testing.T, c *redis.Client, keys [][]digestOp, perm []int) {
	t.Helper()
	ctx := harness.Ctx(t)
	for _, i := range perm {
		// SELECT must stay on one connection: a pipeline of the key's writes.
		if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, op := range keys[i] {
				p.Do(ctx, []any(op)...)
			}
			return nil
		}); err != nil {
			t.Fatalf("writes of key %d: %v", i, err)
		}
	}
}

func digestOf(t *testing.T, k checker, cmd ...any) string {
	t.Helper()
	v, err := k.do(cmd...)
	s, ok := v.(string)
	if err != nil || !ok || len(s) != 40 {
		t.Fatalf("%v: got %v, %v; want 40 hex digits", cmd, v, err)
	}
	return s
}

// digestDiff lists the keys of database 0 whose DEBUG DIGEST-VALUE differs between two servers.
func digestDiff(t *testing.T, ka, kb checker) []string {
	t.Helper()
	keys, err := ka.do("KEYS", "*")
	if err != nil {
		t.Fatal(err)
	}
	var diff []string
	for _, k := range keys.([]any) {
		va, _ := ka.do("DEBUG", "DIGEST-VALUE", k)
		vb, _ := kb.do("DEBUG", "DIGEST-VALUE", k)
		if fmt.Sprint(va) != fmt.Sprint(vb) {
			diff = append(diff, k.(string))
		}
	}
	return diff
}

func TestDigest(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("LAVIK.DIGEST is Lavik's (Redis's DEBUG DIGEST hashes its own encodings)")
	}
	a := harness.Start(t, "--appendfsync", "always")
	b := harness.Start(t, "--group-threshold", "256")
	ca := a.ClientOpts(&redis.Options{PoolSize: 1})
	cb := b.ClientOpts(&redis.Options{PoolSize: 1})
	ka, kb := newChecker(t, ca), newChecker(t, cb)

	zero := strings.Repeat("0", 40)
	if d := digestOf(t, ka, "LAVIK.DIGEST"); d != zero {
		t.Fatalf("digest of an empty keyspace %s, want %s", d, zero)
	}
	ka.eq([]any{zero}, "DEBUG", "DIGEST-VALUE", "missing")

	keys := digestData(7)
	seq := make([]int, len(keys))
	for i := range seq {
		seq[i] = i
	}
	perm := rand.New(rand.NewPCG(8, 9)).Perm(len(keys))
	applyDigestData(t, ca, keys, seq)
	applyDigestData(t, cb, keys, perm)
	da, db := digestOf(t, ka, "LAVIK.DIGEST"), digestOf(t, kb, "LAVIK.DIGEST")
	if da != db || da == zero {
		t.Fatalf("same data, different order and threshold: digests %s and %s; keys that differ: %v", da, db, digestDiff(t, ka, kb))
	}
	if d := digestOf(t, ka, "DEBUG", "DIGEST"); d != da {
		t.Fatalf("DEBUG DIGEST %s, LAVIK.DIGEST %s", d, da)
	}
	names := []any{"DEBUG", "DIGEST-VALUE", "big", "h5", "set5", "z5", "l5", "x5", "e2", "missing"}
	va, err := ka.do(names...)
	vb, err2 := kb.do(names...)
	if err != nil || err2 != nil || fmt.Sprint(va) != fmt.Sprint(vb) {
		t.Fatalf("DEBUG DIGEST-VALUE: %v (%v) and %v (%v)", va, err, vb, err2)
	}
	if vs := va.([]any); vs[len(vs)-1] != zero || vs[0] == vs[1] {
		t.Fatalf("DEBUG DIGEST-VALUE: %v", vs)
	}

	// Each change shows, and undoing it restores the digest.
	for _, ch := range []struct{ do, undo []any }{
		{[]any{"HSET", "h2", "f0", "changed"}, nil},
		{[]any{"PEXPIRE", "s3", 100000000}, []any{"PERSIST", "s3"}},
		{[]any{"RENAME", "s4", "s4-renamed"}, []any{"RENAME", "s4-renamed", "s4"}},
		{[]any{"MOVE", "s5", 2}, nil},
		{[]any{"LSET", "l3", 0, "other"}, nil},
		{[]any{"ZADD", "z2", 99, "zm0"}, nil},
		{[]any{"XACK", "x1", "g", "1-1"}, nil},
		{[]any{"SETRANGE", "big", 100000, "y"}, []any{"SETRANGE", "big", 100000, "x"}},
	} {
		before := digestOf(t, ka, "LAVIK.DIGEST")
		if _, err := ka.do(ch.do...); err != nil {
			t.Fatalf("%v: %v", ch.do, err)
		}
		after := digestOf(t, ka, "LAVIK.DIGEST")
		if after == before {
			t.Fatalf("%v left the digest at %s", ch.do, before)
		}
		if ch.undo != nil {
			if _, err := ka.do(ch.undo...); err != nil {
				t.Fatalf("%v: %v", ch.undo, err)
			}
			if d := digestOf(t, ka, "LAVIK.DIGEST"); d != before {
				t.Fatalf("%v then %v: digest %s, want %s again", ch.do, ch.undo, d, before)
			}
		} else if _, err := kb.do(ch.do...); err != nil {
			t.Fatalf("%v on the other server: %v", ch.do, err)
		}
	}
	da, db = digestOf(t, ka, "LAVIK.DIGEST"), digestOf(t, kb, "LAVIK.DIGEST")
	if da != db {
		t.Fatalf("after the same changes: digests %s and %s", da, db)
	}
	a.Restart()
	if d := digestOf(t, newChecker(t, a.Client()), "LAVIK.DIGEST"); d != da {
		t.Fatalf("after a restart: digest %s, want %s", d, da)
	}
	a.KillRestart()
	if d := digestOf(t, newChecker(t, a.Client()), "LAVIK.DIGEST"); d != da {
		t.Fatalf("after kill -9 (appendfsync always): digest %s, want %s", d, da)
	}
	kb.err("ERR unknown subcommand 'NOPE'. Try DEBUG HELP.", "DEBUG", "NOPE")
	kb.err("ERR wrong number of arguments for 'lavik.digest' command", "LAVIK.DIGEST", "extra")
}
