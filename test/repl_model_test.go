package test

// A randomized replication test: seeded random writes of every family on a primary while its
// follower is killed and its link dropped, then the two keyspaces compared (TestReplModel).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

const (
	// replModelDBs is how many databases the clients write; every key lives in one of them.
	replModelDBs = 4
	// replModelKeys is the number of keys of each kind in each database.
	replModelKeys = 40
	// replModelClients is the number of concurrent writers.
	replModelClients = 6
	// replModelRun is how long the writers run (LAVIK_REPL_MODEL_DURATION overrides it for a
	// soak): long enough for a few hundred thousand commands, two follower kills and a dropped
	// link, short enough for the test to stay well under a minute.
	replModelRun = 20 * time.Second
)

// replModelKinds are the key-name prefixes, one per type: a command of a family mostly picks a
// key of its own kind, sometimes one of another (so that types collide).
var replModelKinds = []string{"s", "h", "l", "t", "z", "x"}

// replModelSeed returns the test's seed: LAVIK_REPL_MODEL_SEED when set, else the clock. It is
// logged, and again with how to replay it when the test fails. (The test module does not depend
// on the root module, so this mirrors pkg/testseed instead of importing it.)
func replModelSeed(t *testing.T) uint64 {
	t.Helper()
	const env = "LAVIK_REPL_MODEL_SEED"
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(env); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", env, s, err)
		}
		seed = v
	}
	t.Logf("seed %d", seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d; rerun with %s=%d go test -run '^%s$'", seed, env, seed, t.Name())
		}
	})
	return seed
}

// replModelGen draws random write commands. One per client: it is not safe for concurrent use.
type replModelGen struct {
	rng   *rand.Rand
	redis bool     // against redis-server: no LAVIK.* commands
	ids   []string // stream ids recently returned by XADD and XREADGROUP, for XDEL, XACK, XCLAIM
	flush int      // 1 in flush key commands of one kind is a FLUSHDB (1 in 20 of those a FLUSHALL)
}

func (g *replModelGen) n(n int) int       { return g.rng.IntN(n) }
func (g *replModelGen) chance(n int) bool { return g.rng.IntN(n) == 0 }
func (g *replModelGen) pick(s ...string) string {
	return s[g.rng.IntN(len(s))]
}

// key returns a key of kind (one of replModelKinds): one in twenty times of another kind, and
// one in three times one of four hot keys, which blocking pops wait on and transactions share.
func (g *replModelGen) key(kind string) string {
	if g.chance(20) {
		kind = g.kind()
	}
	i := g.n(replModelKeys)
	if g.chance(3) {
		i = g.n(4)
	}
	return fmt.Sprintf("%s:%d", kind, i)
}

// hotKey returns one of the first eight keys of kind, mostly: consumer groups live on few
// streams, so that XREADGROUP, XACK and XCLAIM find them.
func (g *replModelGen) hotKey(kind string) string {
	if g.chance(10) {
		return g.key(kind)
	}
	return fmt.Sprintf("%s:%d", kind, g.n(8))
}

func (g *replModelGen) kind() string { return replModelKinds[g.n(len(replModelKinds))] }

// keys returns 1..max keys of kind.
func (g *replModelGen) keys(kind string, max int) []any {
	out := make([]any, 1+g.n(max))
	for i := range out {
		out[i] = g.key(kind)
	}
	return out
}

// str returns a string value: mostly short, sometimes a number (for INCR), rarely over 64 KiB
// (a chunked value).
func (g *replModelGen) str() string {
	switch r := g.n(400); {
	case r == 0:
		return strings.Repeat(fmt.Sprintf("big%d-", g.n(1000)), (65<<10+g.n(200<<10))/8)
	case r < 5:
		return strings.Repeat("m", 1000+g.n(8000))
	case r < 120:
		return strconv.Itoa(g.n(2000) - 1000)
	case r < 140:
		return fmt.Sprintf("%d.%d", g.n(100), g.n(100))
	}
	return fmt.Sprintf("v%d", g.n(50))
}

// elem returns a list element from a small alphabet, so that LINSERT, LREM and LPOS find them;
// sometimes a long one, so that lists grow past the group threshold.
func (g *replModelGen) elem() string {
	if g.chance(20) {
		return fmt.Sprintf("%s-%d", strings.Repeat("e", 100+g.n(400)), g.n(5))
	}
	return g.pick("a", "b", "c", "d", "e", "f", "1", "2", "3")
}

func (g *replModelGen) field() string { return fmt.Sprintf("f%d", g.n(30)) }

func (g *replModelGen) member() string {
	if g.chance(3) {
		return strconv.Itoa(g.n(30)) // integer members: Redis's intset encoding
	}
	return fmt.Sprintf("m%d", g.n(30))
}

// shortMS is a TTL that runs out during the run.
func (g *replModelGen) shortMS() int { return 20 + g.n(181) }

// longS is a TTL that outlives the test.
func (g *replModelGen) longS() int { return 3600 + g.n(3600) }

// ttlArgs returns the expiry options of SET, GETEX and the like: none, a relative or absolute
// one (short or long), KEEPTTL or PERSIST when allowed.
func (g *replModelGen) ttlArgs(keep string) []any {
	now := time.Now()
	switch g.n(9) {
	case 0:
		return []any{"EX", g.longS()}
	case 1:
		return []any{"PX", g.shortMS()}
	case 2:
		return []any{"PX", g.longS() * 1000}
	case 3:
		return []any{"EXAT", now.Unix() + int64(g.longS())}
	case 4:
		return []any{"PXAT", now.UnixMilli() + int64(g.shortMS())}
	case 5:
		if keep != "" {
			return []any{keep}
		}
	}
	return nil
}

// score returns a sorted-set score: small integers (ties, for BYLEX), fractions, infinities.
func (g *replModelGen) score() string {
	switch g.n(20) {
	case 0:
		return "+inf"
	case 1:
		return "-inf"
	case 2, 3, 4:
		return fmt.Sprintf("%d.%d", g.n(10), g.n(10))
	}
	return strconv.Itoa(g.n(8))
}

// streamID returns an id for XADD: "*" mostly, else explicit ones near the clock (which often
// collide with the top id and fail), "<ms>-*", or small ones (which succeed on a new stream).
func (g *replModelGen) streamID() string {
	ms := time.Now().UnixMilli()
	switch g.n(10) {
	case 0:
		return fmt.Sprintf("%d-%d", ms+int64(g.n(5))-2, g.n(3))
	case 1:
		return fmt.Sprintf("%d-*", ms+int64(g.n(3)))
	case 2:
		return fmt.Sprintf("%d-%d", g.n(5), 1+g.n(3))
	}
	return "*"
}

// knownID returns a stream id seen recently, or a made-up one.
func (g *replModelGen) knownID() string {
	if len(g.ids) == 0 || g.chance(8) {
		return fmt.Sprintf("%d-%d", time.Now().UnixMilli()-int64(g.n(3000)), g.n(2))
	}
	return g.ids[g.n(len(g.ids))]
}

func (g *replModelGen) noteID(id string) {
	if len(g.ids) == 64 {
		g.ids = g.ids[1:]
	}
	g.ids = append(g.ids, id)
}

// observe remembers the stream ids in a reply.
func (g *replModelGen) observe(args []any, reply any) {
	switch strings.ToUpper(fmt.Sprint(args[0])) {
	case "XADD":
		if s, ok := reply.(string); ok {
			g.noteID(s)
		}
	case "XREADGROUP", "XAUTOCLAIM":
		// [[key, [[id, fields], ...]]] and [cursor, [[id, fields], ...], deleted]: take every
		// string that looks like an id.
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case []any:
				for _, e := range v {
					walk(e)
				}
			case string:
				if a, b, ok := strings.Cut(v, "-"); ok && a != "" && b != "" && strings.Trim(a+b, "0123456789") == "" {
					g.noteID(v)
				}
			}
		}
		walk(reply)
	}
}

// cmd returns one random write command. Blocking ones wait 10..200 ms.
func (g *replModelGen) cmd() []any {
	switch r := g.n(100); {
	case r < 22:
		return g.stringCmd()
	case r < 36:
		return g.keyCmd()
	case r < 48:
		return g.hashCmd()
	case r < 62:
		return g.listCmd()
	case r < 72:
		return g.setCmd()
	case r < 84:
		return g.zsetCmd()
	default:
		return g.streamCmd()
	}
}

func (g *replModelGen) stringCmd() []any {
	k := g.key("s")
	switch g.n(19) {
	case 0, 1, 2:
		args := []any{"SET", k, g.str()}
		args = append(args, g.ttlArgs("KEEPTTL")...)
		if g.chance(3) {
			args = append(args, g.pick("NX", "XX"))
		}
		if g.chance(3) {
			args = append(args, "GET")
		}
		return args
	case 3:
		return []any{"SETEX", k, g.longS(), g.str()}
	case 4:
		return []any{"PSETEX", k, g.shortMS(), g.str()}
	case 5:
		return []any{"SETNX", k, g.str()}
	case 6:
		return []any{"GETSET", k, g.str()}
	case 7:
		return []any{"GETDEL", k}
	case 8:
		args := []any{"GETEX", k}
		return append(args, g.ttlArgs("PERSIST")...)
	case 9:
		return []any{"APPEND", k, g.str()}
	case 10:
		off := g.n(64)
		if g.chance(10) {
			off = g.n(100_000) // zero padding, perhaps into a chunked value
		}
		return []any{"SETRANGE", k, off, g.str()}
	case 11:
		return []any{"INCR", k}
	case 12:
		return []any{g.pick("INCRBY", "DECRBY"), k, g.n(200) - 100}
	case 13:
		return []any{"INCRBYFLOAT", k, fmt.Sprintf("%d.%d", g.n(20)-10, g.n(1000))}
	case 14:
		return []any{"DECR", k}
	case 15, 16:
		args := []any{g.pick("MSET", "MSETNX")}
		for range 1 + g.n(4) {
			args = append(args, g.key("s"), g.str())
		}
		return args
	case 17:
		args := []any{"SET", k, g.str(), "PX", g.shortMS()}
		if g.chance(2) {
			args = append(args, "GET")
		}
		return args
	default:
		return []any{"GET", k} // a read: lazy expiry on the primary
	}
}

func (g *replModelGen) keyCmd() []any {
	kind := g.kind()
	k := g.key(kind)
	other := func() string { return g.key(kind) }
	cond := func(args []any) []any {
		if g.chance(2) {
			args = append(args, g.pick("NX", "XX", "GT", "LT"))
		}
		return args
	}
	now := time.Now()
	switch g.n(17) {
	case 0:
		return append([]any{"DEL"}, g.keys(kind, 3)...)
	case 1:
		return append([]any{"UNLINK"}, g.keys(kind, 3)...)
	case 2:
		return cond([]any{"EXPIRE", k, g.longS()})
	case 3:
		return cond([]any{"PEXPIRE", k, g.shortMS()})
	case 4:
		return cond([]any{"EXPIREAT", k, now.Unix() + int64(g.longS())})
	case 5:
		return cond([]any{"PEXPIREAT", k, now.UnixMilli() + int64(g.shortMS())})
	case 6:
		return cond([]any{g.pick("EXPIRE", "PEXPIREAT"), k, -1 - g.n(10)}) // in the past: a delete
	case 7:
		return []any{"PERSIST", k}
	case 8, 9:
		return []any{g.pick("RENAME", "RENAMENX"), k, other()}
	case 10, 11:
		args := []any{"COPY", k, other()}
		if g.chance(2) {
			args = append(args, "DB", g.n(replModelDBs))
		}
		if g.chance(2) {
			args = append(args, "REPLACE")
		}
		return args
	case 12:
		return []any{"MOVE", k, g.n(replModelDBs)}
	case 13:
		if g.flush > 0 && g.chance(g.flush) {
			if g.chance(20) {
				return []any{"FLUSHALL"}
			}
			return []any{"FLUSHDB"}
		}
		return []any{"EXISTS", k}
	case 14:
		if g.chance(50) {
			// Every key of two databases changes places while the other clients write to them.
			return []any{"SWAPDB", g.n(replModelDBs), g.n(replModelDBs)}
		}
		return []any{"PTTL", k} // a read: lazy expiry on the primary
	default:
		return []any{"PEXPIRE", k, g.shortMS()}
	}
}

func (g *replModelGen) hashCmd() []any {
	k := g.key("h")
	switch g.n(10) {
	case 0, 1:
		args := []any{g.pick("HSET", "HMSET"), k}
		for range 1 + g.n(4) {
			args = append(args, g.field(), g.str())
		}
		return args
	case 2:
		// Many fields: past a 256-byte group threshold, sometimes past the 32 KiB default.
		args := []any{"HSET", k}
		size := 20 + g.n(40)
		if g.chance(5) {
			size = 200 + g.n(300)
		}
		for i := range size {
			args = append(args, fmt.Sprintf("g%d", i), strings.Repeat("h", 10+g.n(150)))
		}
		return args
	case 3:
		return []any{"HSETNX", k, g.field(), g.str()}
	case 4:
		args := []any{"HDEL", k}
		for range 1 + g.n(3) {
			args = append(args, g.field())
		}
		if g.chance(3) {
			args = append(args, fmt.Sprintf("g%d", g.n(60)))
		}
		return args
	case 5:
		return []any{"HINCRBY", k, g.field(), g.n(100) - 50}
	case 6:
		return []any{"HINCRBYFLOAT", k, g.field(), fmt.Sprintf("%d.%d", g.n(20)-10, g.n(100))}
	case 7:
		if !g.redis {
			args := []any{"LAVIK.HREPLACE", k}
			for range 1 + g.n(6) {
				args = append(args, g.field(), g.str())
			}
			return args
		}
		return []any{"HDEL", k, g.field()}
	default:
		return []any{"HSET", k, g.field(), g.str()}
	}
}

func (g *replModelGen) listCmd() []any {
	k := g.key("l")
	timeout := fmt.Sprintf("0.%03d", 10+g.n(190))
	end := func() string { return g.pick("LEFT", "RIGHT") }
	switch g.n(20) {
	case 0, 1, 2:
		args := []any{g.pick("LPUSH", "RPUSH"), k}
		for range 1 + g.n(5) {
			args = append(args, g.elem())
		}
		return args
	case 3:
		return []any{g.pick("LPUSHX", "RPUSHX"), k, g.elem()}
	case 4:
		args := []any{g.pick("LPOP", "RPOP"), k}
		if g.chance(2) {
			args = append(args, g.n(4))
		}
		return args
	case 5:
		return []any{"LINSERT", k, g.pick("BEFORE", "AFTER"), g.elem(), g.elem()}
	case 6:
		return []any{"LSET", k, g.n(10) - 5, g.elem()}
	case 7:
		return []any{"LREM", k, g.n(5) - 2, g.elem()}
	case 8:
		return []any{"LTRIM", k, g.n(5) - 1, g.n(30) - 5}
	case 9:
		return []any{"LMOVE", k, g.key("l"), end(), end()}
	case 10:
		return []any{"RPOPLPUSH", k, g.key("l")}
	case 11:
		args := append([]any{"LMPOP"}, nkeys(g.keys("l", 3))...)
		args = append(args, end())
		if g.chance(2) {
			args = append(args, "COUNT", 1+g.n(3))
		}
		return args
	case 12, 13:
		return append(append([]any{g.pick("BLPOP", "BRPOP")}, g.keys("l", 2)...), timeout)
	case 14:
		return []any{"BLMOVE", k, g.key("l"), end(), end(), timeout}
	case 15:
		return []any{"BRPOPLPUSH", k, g.key("l"), timeout}
	case 16:
		args := append([]any{"BLMPOP", timeout}, nkeys(g.keys("l", 2))...)
		return append(args, end(), "COUNT", 1+g.n(3))
	case 17:
		// A long list: past either group threshold.
		args := []any{"RPUSH", k}
		for range 50 + g.n(200) {
			args = append(args, g.elem())
		}
		return args
	default:
		return []any{"RPUSH", k, g.elem()}
	}
}

// nkeys prefixes keys with their count, as LMPOP, ZUNIONSTORE and the like take them.
func nkeys(keys []any) []any { return append([]any{len(keys)}, keys...) }

func (g *replModelGen) setCmd() []any {
	k := g.key("t")
	switch g.n(12) {
	case 0, 1, 2:
		args := []any{"SADD", k}
		for range 1 + g.n(6) {
			args = append(args, g.member())
		}
		return args
	case 3:
		args := []any{"SADD", k}
		for range 30 + g.n(100) {
			args = append(args, fmt.Sprintf("long-%s-%d", strings.Repeat("s", g.n(60)), g.n(1000)))
		}
		return args
	case 4:
		return []any{"SREM", k, g.member(), g.member()}
	case 5, 6:
		args := []any{"SPOP", k}
		if g.chance(2) {
			args = append(args, g.n(5))
		}
		return args
	case 7:
		return []any{"SMOVE", k, g.key("t"), g.member()}
	case 8:
		return append([]any{"SINTERSTORE", g.key("t")}, g.keys("t", 3)...)
	case 9:
		return append([]any{"SUNIONSTORE", g.key("t")}, g.keys("t", 3)...)
	case 10:
		return append([]any{"SDIFFSTORE", g.key("t")}, g.keys("t", 3)...)
	default:
		return []any{"SADD", k, g.member()}
	}
}

func (g *replModelGen) zsetCmd() []any {
	k := g.key("z")
	timeout := fmt.Sprintf("0.%03d", 10+g.n(190))
	lex := func() string {
		switch g.n(4) {
		case 0:
			return "-"
		case 1:
			return "+"
		}
		return g.pick("[", "(") + g.member()
	}
	switch g.n(18) {
	case 0, 1, 2:
		args := []any{"ZADD", k}
		if g.chance(3) {
			args = append(args, g.pick("NX", "XX"))
		}
		if g.chance(3) {
			args = append(args, g.pick("GT", "LT"))
		}
		if g.chance(3) {
			args = append(args, "CH")
		}
		if g.chance(4) {
			return append(args, "INCR", g.score(), g.member())
		}
		for range 1 + g.n(4) {
			args = append(args, g.score(), g.member())
		}
		return args
	case 3:
		args := []any{"ZADD", k}
		for range 30 + g.n(200) {
			args = append(args, g.n(1000), fmt.Sprintf("zm-%s-%d", strings.Repeat("z", g.n(40)), g.n(2000)))
		}
		return args
	case 4:
		return []any{"ZINCRBY", k, g.score(), g.member()}
	case 5:
		return []any{"ZREM", k, g.member(), g.member()}
	case 6:
		args := []any{g.pick("ZPOPMIN", "ZPOPMAX"), k}
		if g.chance(2) {
			args = append(args, g.n(4))
		}
		return args
	case 7:
		return []any{"ZREMRANGEBYSCORE", k, g.pick("-inf", "(1", "2", "0"), g.pick("+inf", "3", "(5")}
	case 8:
		return []any{"ZREMRANGEBYRANK", k, g.n(4) - 2, g.n(6) - 2}
	case 9:
		return []any{"ZREMRANGEBYLEX", k, lex(), lex()}
	case 10:
		args := []any{"ZRANGESTORE", g.key("z"), k}
		switch g.n(3) {
		case 0:
			args = append(args, g.n(5)-2, g.n(10)-2)
		case 1:
			args = append(args, g.pick("-inf", "1", "(2"), g.pick("+inf", "5"), "BYSCORE")
		default:
			args = append(args, lex(), lex(), "BYLEX")
		}
		if g.chance(3) {
			args = append(args, "REV")
		}
		if args[len(args)-1] != "REV" && len(args) > 5 && g.chance(2) {
			args = append(args, "LIMIT", g.n(3), g.n(5)-1)
		}
		return args
	case 11, 12:
		args := append([]any{g.pick("ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"), g.key("z")}, nkeys(g.keys("z", 3))...)
		if args[0] != "ZDIFFSTORE" {
			if g.chance(3) {
				args = append(args, "WEIGHTS")
				for range args[2].(int) {
					args = append(args, g.pick("1", "2", "0.5", "-1", "0"))
				}
			}
			if g.chance(3) {
				args = append(args, "AGGREGATE", g.pick("SUM", "MIN", "MAX"))
			}
		}
		return args
	case 13:
		return []any{"ZMPOP", 1, k, g.pick("MIN", "MAX"), "COUNT", 1 + g.n(3)}
	case 14:
		return append(append([]any{g.pick("BZPOPMIN", "BZPOPMAX")}, g.keys("z", 2)...), timeout)
	case 15:
		return append([]any{"BZMPOP", timeout}, append(nkeys(g.keys("z", 2)), g.pick("MIN", "MAX"))...)
	default:
		return []any{"ZADD", k, g.score(), g.member()}
	}
}

func (g *replModelGen) streamCmd() []any {
	k := g.key("x")
	if g.chance(2) {
		k = g.hotKey("x")
	}
	grp := fmt.Sprintf("g%d", g.n(3))
	consumer := fmt.Sprintf("c%d", g.n(4))
	trim := func() []any {
		var strategy []any
		if g.chance(2) {
			strategy = []any{"MAXLEN", g.pick("=", "~"), g.n(40)}
		} else {
			strategy = []any{"MINID", g.pick("=", "~"), g.knownID()}
		}
		if strategy[1] == "~" && g.chance(2) {
			strategy = append(strategy, "LIMIT", g.n(200))
		}
		return strategy
	}
	switch g.n(22) {
	case 0, 1, 2, 3, 4:
		args := []any{"XADD", k}
		if g.chance(10) {
			args = append(args, "NOMKSTREAM")
		}
		if g.chance(3) {
			args = append(args, trim()...)
		}
		args = append(args, g.streamID())
		for range 1 + g.n(3) {
			args = append(args, g.field(), g.str())
		}
		return args
	case 5:
		// A burst of entries: a stream past either group threshold.
		args := []any{"XADD", k, "MAXLEN", "~", 300 + g.n(300), "*"}
		for range 20 + g.n(30) {
			args = append(args, g.field(), strings.Repeat("x", 20+g.n(80)))
		}
		return args
	case 6:
		return append([]any{"XTRIM", k}, trim()...)
	case 7:
		return []any{"XDEL", k, g.knownID(), g.knownID()}
	case 8:
		args := []any{"XGROUP", "CREATE", k, grp, g.pick("$", "0", g.knownID())}
		if g.chance(2) {
			args = append(args, "MKSTREAM")
		}
		return args
	case 9:
		return []any{"XGROUP", "SETID", k, grp, g.pick("$", "0", g.knownID())}
	case 10:
		return []any{"XGROUP", g.pick("DELCONSUMER", "CREATECONSUMER"), k, grp, consumer}
	case 11, 12, 13:
		args := []any{"XREADGROUP", "GROUP", grp, consumer, "COUNT", 1 + g.n(5)}
		if g.chance(4) {
			args = append(args, "BLOCK", 10+g.n(100))
		}
		if g.chance(3) {
			args = append(args, "NOACK")
		}
		return append(args, "STREAMS", k, g.pick(">", ">", "0"))
	case 14, 15:
		return []any{"XACK", k, grp, g.knownID(), g.knownID()}
	case 16:
		args := []any{"XCLAIM", k, grp, consumer, g.n(100), g.knownID(), g.knownID()}
		if g.chance(3) {
			args = append(args, "IDLE", g.n(1000))
		}
		if g.chance(4) {
			args = append(args, "RETRYCOUNT", g.n(5))
		}
		if g.chance(4) {
			args = append(args, "FORCE")
		}
		if g.chance(3) {
			args = append(args, "JUSTID")
		}
		return args
	case 17:
		args := []any{"XAUTOCLAIM", k, grp, consumer, g.n(100), g.pick("0", "0-0", g.knownID()), "COUNT", 1 + g.n(10)}
		if g.chance(3) {
			args = append(args, "JUSTID")
		}
		return args
	case 18:
		args := []any{"XSETID", k, g.pick(g.knownID(), fmt.Sprintf("%d-0", time.Now().UnixMilli()+int64(g.n(2000))))}
		if g.chance(3) {
			args = append(args, "ENTRIESADDED", 1000+g.n(1000), "MAXDELETEDID", "0-1")
		}
		return args
	case 19:
		if g.chance(3) {
			return []any{"XGROUP", "DESTROY", k, grp}
		}
		return []any{"XGROUP", "CREATE", k, grp, "$", "MKSTREAM"}
	default:
		return []any{"XADD", k, "*", g.field(), g.str()}
	}
}

// replModelStats counts what the clients did, for the log and for a sanity check that the
// commands mostly ran (a table whose commands all fail tests nothing).
type replModelStats struct {
	mu     sync.Mutex
	ok     map[string]int
	failed map[string]int
	errs   map[string]string // one error text per command name
}

func (s *replModelStats) note(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil || err == redis.Nil {
		s.ok[name]++
		return
	}
	s.failed[name]++
	s.errs[name] = err.Error()
}

// connErr reports whether err is a failure of the connection rather than a reply: an error
// reply (WRONGTYPE, a syntax error, EXECABORT...) and a nil reply are expected.
func connErr(err error) bool {
	if err == nil || err == redis.Nil {
		return false
	}
	var re redis.Error
	return !errors.As(err, &re)
}

// cmdName names a command for the statistics: "XGROUP CREATE", "SET".
func cmdName(args []any) string {
	name := strings.ToUpper(fmt.Sprint(args[0]))
	if name == "XGROUP" {
		name += " " + fmt.Sprint(args[1])
	}
	return name
}

// replModelClient runs random commands on one connection of pc until stop is closed.
func replModelClient(t *testing.T, pc *redis.Client, seed uint64, id int, stats *replModelStats, stop <-chan struct{}) {
	ctx := context.Background()
	g := &replModelGen{rng: rand.New(rand.NewPCG(seed, uint64(id))), redis: harness.IsRedis(), flush: 300}
	conn := pc.Conn()
	defer conn.Close()
	db := 0
	fail := func(what string, err error) {
		t.Errorf("client %d: %s: %v", id, what, err)
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		switch r := g.n(100); {
		case r < 3:
			db = g.n(replModelDBs)
			if err := conn.Select(ctx, db).Err(); err != nil {
				fail(fmt.Sprint("SELECT ", db), err)
				return
			}
		case r < 10:
			// A transaction of 1..6 commands, some in other databases (SELECT inside MULTI
			// changes the connection's database: it is set back after EXEC). One in three
			// WATCHes a key first and, half of those times, writes it before MULTI, which
			// aborts the EXEC.
			var cmds [][]any
			if g.chance(3) {
				w := g.key(g.kind())
				cmds = append(cmds, []any{"WATCH", w})
				if g.chance(2) {
					cmds = append(cmds, []any{"PEXPIRE", w, g.longS() * 1000}, []any{"SET", w, "touched"})
				}
			}
			cmds = append(cmds, []any{"MULTI"})
			for range 1 + g.n(6) {
				if g.chance(6) {
					cmds = append(cmds, []any{"SELECT", g.n(replModelDBs)})
				}
				cmds = append(cmds, g.cmd())
			}
			cmds = append(cmds, []any{"EXEC"}, []any{"SELECT", db})
			res, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, c := range cmds {
					p.Do(ctx, c...)
				}
				return nil
			})
			if connErr(err) {
				fail("MULTI/EXEC", err)
				return
			}
			for i, c := range res {
				if connErr(c.Err()) {
					fail(fmt.Sprint(cmds[i]), c.Err())
					return
				}
			}
			if err := res[len(res)-2].Err(); err == redis.Nil {
				stats.note("EXEC (aborted)", nil)
			} else {
				stats.note("EXEC", err)
			}
		default:
			args := g.cmd()
			res, err := conn.Do(ctx, args...).Result()
			if connErr(err) {
				fail(short(args), err)
				return
			}
			stats.note(cmdName(args), err)
			g.observe(args, res)
		}
	}
}

// replModelKeyspace returns every key name the clients use.
func replModelKeyspace() []string {
	var out []string
	for _, kind := range replModelKinds {
		for i := range replModelKeys {
			out = append(out, fmt.Sprintf("%s:%d", kind, i))
		}
	}
	return out
}

// waitShortTTLsGone polls the primary until no key of the key space, in any database, has a
// TTL under a minute: the short ones have run out (PTTL on the primary removes them, which
// replicates a DEL), so none expires while the two nodes are compared.
func waitShortTTLsGone(t *testing.T, pc *redis.Client) {
	t.Helper()
	ctx := context.Background()
	keys := replModelKeyspace()
	harness.Eventually(t, 30*time.Second, "short TTLs run out on the primary", func() bool {
		left := 0
		for db := range replModelDBs {
			cmds, err := pc.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Select(ctx, db)
				for _, k := range keys {
					p.PTTL(ctx, k)
				}
				p.Select(ctx, 0)
				return nil
			})
			if err != nil {
				t.Fatalf("PTTL on the primary: %v", err)
			}
			for _, c := range cmds[1 : len(cmds)-1] {
				if d := c.(*redis.DurationCmd).Val(); d > 0 && d < time.Minute {
					left++
				}
			}
		}
		return left == 0
	})
}

// assertConverged waits until the follower has everything the primary wrote and holds the same
// keyspace. The primary's expiry can still remove a key (and replicate the DEL) after the
// follower caught up, so a digest mismatch is read again after the next catch-up for a while;
// a real divergence persists, and assertSameData then names the keys that differ.
func assertConverged(t *testing.T, pc, fc *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		waitLinkUp(t, fc, replSyncWait)
		waitInSync(t, pc, fc)
		if digest(t, pc) == digest(t, fc) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitInSync(t, pc, fc)
	assertSameData(t, pc, fc, replModelDBs)
}

// streamsDiffer compares XINFO STREAM ... FULL of every stream of the key space on both nodes:
// DEBUG DIGEST leaves out the times of deliveries and reads, which a follower applying the
// stream by its primary's clock must still have alike (XPENDING's idle times and XAUTOCLAIM's
// choices follow from them). The radix tree's sizes describe storage, not data, and are left out.
// Against redis-server the consumers and the groups' entries-read and lag are left out too: Redis
// 7 replicates XREADGROUP as XCLAIM, so its follower sets seen-times by its own clock, lacks
// consumers that never owned an entry and often has no entries-read. It returns up to
// five streams that differ, and how many it compared.
func streamsDiffer(t *testing.T, pc, fc *redis.Client) (differ []string, compared int) {
	t.Helper()
	ctx := context.Background()
	skip := map[string]bool{"radix-tree-keys": true, "radix-tree-nodes": true}
	if harness.IsRedis() {
		skip["consumers"], skip["entries-read"], skip["lag"] = true, true, true
	}
	var norm func(v any) any
	norm = func(v any) any {
		a, ok := v.([]any)
		if !ok {
			return v
		}
		var out []any
		for i := 0; i < len(a); i++ {
			if name, ok := a[i].(string); ok && skip[name] && i+1 < len(a) {
				i++
				continue
			}
			out = append(out, norm(a[i]))
		}
		return out
	}
	for db := range replModelDBs {
		conns := [2]*redis.Conn{pc.Conn(), fc.Conn()}
		for _, c := range conns {
			defer c.Close()
			if err := c.Select(ctx, db).Err(); err != nil {
				t.Fatalf("SELECT %d: %v", db, err)
			}
		}
		for _, k := range replModelKeyspace() {
			if typ, _ := conns[0].Type(ctx, k).Result(); typ != "stream" {
				continue
			}
			compared++
			var infos [2]string
			for i, c := range conns {
				v, err := c.Do(ctx, "XINFO", "STREAM", k, "FULL").Result()
				infos[i] = fmt.Sprint(norm(v), err)
			}
			if infos[0] != infos[1] && len(differ) < 5 {
				differ = append(differ, fmt.Sprintf("db%d %q:\n  primary  %s\n  follower %s", db, k, infos[0], infos[1]))
			}
		}
	}
	return differ, compared
}

// TestReplModel tries hard to make a primary and its follower diverge: six clients run seeded
// random write commands of every family from a wide table (options and all) for replModelRun,
// over a small key space in four databases so that keys collide, change type, expire (TTLs of
// 20-200 ms) and move, with transactions (WATCH included, some aborted), blocking pops served by
// other clients' pushes and values past 64 KiB; meanwhile the follower is killed (kill -9) and
// restarted twice and its link dropped once (CLIENT KILL TYPE replica). The storage layouts
// differ: one node groups collections from 256 bytes, the other at the default. At the end the
// follower must hold exactly the primary's keyspace (DEBUG DIGEST, which covers expire times to
// the millisecond, and XINFO STREAM FULL), and on Lavik it must have come back every time by
// partial resync (sync_full stays at 1).
//
// The seed is logged; LAVIK_REPL_MODEL_SEED replays each client's command sequence (the
// interleaving of six clients is the scheduler's, so a replay is likely, not certain, to
// reproduce a failure). A divergence found this way belongs in a deterministic test of its own.
func TestReplModel(t *testing.T) {
	seed := replModelSeed(t)
	run := replModelRun
	if s := os.Getenv("LAVIK_REPL_MODEL_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("LAVIK_REPL_MODEL_DURATION=%q: %v", s, err)
		}
		run = d
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	// One node groups collections from 256 bytes, the other at the default (32 KiB): which
	// one is the seed's choice. Redis has no such setting.
	var pArgs, fArgs []string
	if !harness.IsRedis() {
		if rng.IntN(2) == 0 {
			pArgs = []string{"--group-threshold", "256"}
		} else {
			fArgs = []string{"--group-threshold", "256"}
		}
		t.Logf("group threshold 256 on the %s", map[bool]string{true: "primary", false: "follower"}[len(pArgs) > 0])
	}
	p := replNode(t, append(pArgs, "--repl-backlog-size", "1gb")...)
	f := replFollower(t, p, fArgs...)
	pc := p.ClientOpts(&redis.Options{PoolSize: 2 * replModelClients})
	fc := f.Client()
	waitInSync(t, pc, fc)
	full0, ok0, _ := syncStats(t, pc)

	stats := &replModelStats{ok: map[string]int{}, failed: map[string]int{}, errs: map[string]string{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	quit := make(chan struct{}) // closed when a client ends early (it failed)
	var quitOnce sync.Once
	for id := range replModelClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replModelClient(t, pc, seed, id+1, stats, stop)
			quitOnce.Do(func() { close(quit) })
		}()
	}
	halt := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}
	defer halt()

	// The faults, at fixed points of the run: the scenario's length, not a wait for a
	// condition (a client that fails ends it early).
	start := time.Now()
	until := func(frac float64) bool {
		select {
		case <-time.After(time.Until(start.Add(time.Duration(frac * float64(run))))):
			return true
		case <-quit:
			return false
		}
	}
	steps := []struct {
		at   float64
		what string
		do   func()
	}{
		{0.3, "kill -9 the follower", f.KillRestart},
		{0.55, "drop the link", func() {
			waitLinkUp(t, fc, replSyncWait)
			if n, err := pc.Do(harness.Ctx(t), "CLIENT", "KILL", "TYPE", "replica").Int(); err != nil || n != 1 {
				t.Fatalf("CLIENT KILL TYPE replica: %d, %v; want 1", n, err)
			}
		}},
		{0.8, "kill -9 the follower", f.KillRestart},
		{1, "stop", func() {}},
	}
	for _, s := range steps {
		if !until(s.at) {
			break
		}
		t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), s.what)
		s.do()
	}
	halt()
	if t.Failed() {
		return
	}

	var total, failed int
	var names []string
	for name, n := range stats.ok {
		total += n
		names = append(names, name)
	}
	for name, n := range stats.failed {
		failed += n
		if stats.ok[name] == 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "  %-18s ok %6d  error %6d  %s\n", name, stats.ok[name], stats.failed[name], stats.errs[name])
	}
	t.Logf("%d commands (%d error replies) in %v by %d clients:\n%s", total+failed, failed, time.Since(start).Round(time.Millisecond), replModelClients, b.String())
	// The table must mostly run: commands that all fail would compare two empty keyspaces.
	for _, name := range names {
		if stats.ok[name] == 0 && stats.failed[name] >= 20 {
			t.Errorf("%s failed all %d times (%s): the generator is wrong", name, stats.failed[name], stats.errs[name])
		}
	}

	waitShortTTLsGone(t, pc)
	assertConverged(t, pc, fc)
	d, n := streamsDiffer(t, pc, fc)
	t.Logf("XINFO STREAM FULL compared for %d streams", n)
	if len(d) > 0 {
		t.Errorf("XINFO STREAM FULL differs between primary and follower:\n%s", strings.Join(d, "\n"))
	}
	if n := replInt(t, replInfo(t, pc, "stats"), "expired_keys"); n == 0 {
		t.Errorf("no key expired on the primary: the short TTLs did not run out during the run")
	}
	full1, ok1, _ := syncStats(t, pc)
	t.Logf("sync_full %d -> %d, sync_partial_ok %d -> %d", full0, full1, ok0, ok1)
	if !harness.IsRedis() && (full1 != full0 || ok1 < ok0+3) {
		t.Fatalf("sync_full %d -> %d, sync_partial_ok %d -> %d: want the two restarts and the dropped link to resume by partial resync", full0, full1, ok0, ok1)
	}
}
