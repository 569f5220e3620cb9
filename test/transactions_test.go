package test

// End-to-end tests of transactions (MULTI, EXEC, DISCARD, WATCH, UNWATCH) as a client sees them:
// go-redis's transaction API, bare RESP for the exact reply bytes, concurrent clients for
// atomicity and isolation, kill -9 for crash atomicity, and the redis-py and ioredis programs of
// clients/. Every test that does not skip itself passes against redis-server too
// (LAVIK_TEST_SERVER=redis): that is how the reply texts are known to be Redis's.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

var (
	txOK     = respStatus("OK")
	txQueued = respStatus("QUEUED")
)

const (
	errTxAbortPrev   = "EXECABORT Transaction discarded because of previous errors."
	errTxExecNoMulti = "ERR EXEC without MULTI"
	errTxDiscNoMulti = "ERR DISCARD without MULTI"
	errTxNested      = "ERR MULTI calls can not be nested"
	errTxWatchMulti  = "ERR WATCH inside MULTI is not allowed"
	errTxNotAllowed  = "ERR Command not allowed inside a transaction"
)

// txCmd is one command of a transaction, written as its arguments.
func txCmd(args ...string) []string { return args }

// txRun sends MULTI, each of cmds (each must reply +QUEUED) and EXEC, and returns EXEC's reply.
func (r *respConn) txRun(cmds ...[]string) any {
	r.t.Helper()
	r.expect(txOK, "MULTI")
	for _, c := range cmds {
		r.expect(txQueued, c...)
	}
	return r.do("EXEC")
}

// rawLine reads one line of reply as it is on the wire, CRLF included: for the replies whose
// type the decoder hides (a RESP2 null array and a RESP3 null are both nil to it).
func (r *respConn) rawLine() string {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := r.br.ReadString('\n')
	if err != nil {
		r.t.Fatalf("read reply line: %v", err)
	}
	return line
}

// txValue is a value of n bytes made of numbered copies of seed: values of different seeds
// differ, and a piece of one found in another place shows.
func txValue(seed string, n int) string {
	var b strings.Builder
	b.Grow(n + 32)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s/%d;", seed, i)
	}
	return b.String()[:n]
}

// clientNamed returns the fields of the CLIENT LIST line of the connection named name.
func clientNamed(t testing.TB, list, name string) map[string]string {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if f := clientFields(line); f["name"] == name {
			return f
		}
	}
	t.Fatalf("no client named %q in CLIENT LIST:\n%s", name, list)
	return nil
}

// TestTransactionCommands checks MULTI, EXEC and DISCARD reply for reply against Redis 7: the
// go-redis transaction pipeline, queued-command errors (the whole transaction discarded) against
// errors while running (only that command fails), the misuse errors, null and empty replies in
// RESP2 and RESP3, commands inside a transaction that see its own writes (SELECT, FLUSHDB, DBSIZE,
// KEYS, SCAN, MGET, 2 MB values), commands refused inside a transaction, and CLIENT LIST's view of a
// connection that is queuing.
func TestTransactionCommands(t *testing.T) {
	s, c := startServer(t)

	subtest(t, c, "TxPipelined", func(t *testing.T, k checker) {
		ctx := k.ctx
		var set *redis.StatusCmd
		var incr *redis.IntCmd
		var get *redis.StringCmd
		var mget *redis.SliceCmd
		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			set = p.Set(ctx, "tx:a", "10", 0)
			incr = p.IncrBy(ctx, "tx:a", 5)
			get = p.Get(ctx, "tx:a")
			mget = p.MGet(ctx, "tx:a", "tx:missing")
			return nil
		})
		if err != nil {
			t.Fatalf("TxPipelined: %v", err)
		}
		if len(cmds) != 4 || set.Val() != "OK" || incr.Val() != 15 || get.Val() != "15" ||
			!slices.Equal(mget.Val(), []any{"15", nil}) {
			t.Fatalf("TxPipelined replies: SET %q, INCRBY %d, GET %q, MGET %v", set.Val(), incr.Val(), get.Val(), mget.Val())
		}
		// The TxPipeline form, executed twice: each Exec is its own MULTI ... EXEC.
		p := c.TxPipeline()
		a := p.Incr(ctx, "tx:n")
		if _, err := p.Exec(ctx); err != nil || a.Val() != 1 {
			t.Fatalf("first Exec: %v, INCR %d", err, a.Val())
		}
		b := p.Incr(ctx, "tx:n")
		if _, err := p.Exec(ctx); err != nil || b.Val() != 2 {
			t.Fatalf("second Exec: %v, INCR %d", err, b.Val())
		}
	})

	subtest(t, c, "QueuedErrorDiscardsAll", func(t *testing.T, k checker) {
		k.ok("SET", "tx:pre", "before")
		r := dialRESP(t, s)
		r.expect(txOK, "MULTI")
		r.expect(txQueued, "SET", "tx:a", "1")
		r.expect(respError("ERR unknown command 'NOSUCH', with args beginning with: 'x' "), "NOSUCH", "x")
		r.expect(respError("ERR wrong number of arguments for 'get' command"), "GET")
		r.expect(txQueued, "SET", "tx:pre", "after") // still queued after a refusal
		r.expect(respError(errTxAbortPrev), "EXEC")
		r.expect(respError(errTxExecNoMulti), "EXEC") // the transaction is over
		k.eq(0, "EXISTS", "tx:a")
		k.eq("before", "GET", "tx:pre")

		// go-redis: Exec returns the EXECABORT error, the refused command its own error.
		var bad *redis.Cmd
		_, err := c.TxPipelined(k.ctx, func(p redis.Pipeliner) error {
			p.Set(k.ctx, "tx:b", "1", 0)
			bad = p.Do(k.ctx, "NOSUCH")
			p.Set(k.ctx, "tx:c", "1", 0)
			return nil
		})
		if err == nil || err.Error() != errTxAbortPrev {
			t.Fatalf("TxPipelined with an unknown command: %v; want %q", err, errTxAbortPrev)
		}
		if bad.Err() == nil || bad.Err().Error() != "ERR unknown command 'NOSUCH', with args beginning with: " {
			t.Fatalf("the unknown command's error: %v", bad.Err())
		}
		k.eq(0, "EXISTS", "tx:b", "tx:c")
		k.eq("PONG", "PING") // the pooled connection is usable again
	})

	subtest(t, c, "RuntimeErrorOthersApply", func(t *testing.T, k checker) {
		k.ok("SET", "tx:s", "abc")
		r := dialRESP(t, s)
		got := r.txRun(txCmd("SET", "tx:a", "1"), txCmd("INCR", "tx:s"), txCmd("SET", "tx:b", "2"), txCmd("INCRBY", "tx:a", "2"),
			txCmd("SET", "tx:c", "x", "EX", "-1"))
		want := []any{txOK, respError(errNotInt), txOK, int64(3), respError("ERR invalid expire time in 'set' command")}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EXEC: got %s; want %s", short(got), short(want))
		}
		k.eq("3", "GET", "tx:a")
		k.eq("2", "GET", "tx:b")
		k.eq("abc", "GET", "tx:s")
		k.eq(0, "EXISTS", "tx:c")

		// go-redis: Exec returns the first failed command's error; the others have their replies.
		var incr *redis.IntCmd
		var set *redis.StatusCmd
		_, err := c.TxPipelined(k.ctx, func(p redis.Pipeliner) error {
			incr = p.Incr(k.ctx, "tx:s")
			set = p.Set(k.ctx, "tx:d", "4", 0)
			return nil
		})
		if err == nil || err.Error() != errNotInt || incr.Err() == nil || set.Val() != "OK" {
			t.Fatalf("TxPipelined: %v; INCR %v; SET %q", err, incr.Err(), set.Val())
		}
		k.eq("4", "GET", "tx:d")
	})

	subtest(t, c, "Discard", func(t *testing.T, k checker) {
		k.ok("SET", "tx:k", "old")
		r := dialRESP(t, s)
		r.expect(txOK, "MULTI")
		r.expect(txQueued, "SET", "tx:k", "new")
		r.expect(txQueued, "INCR", "tx:n")
		r.expect(txOK, "DISCARD")
		r.expect(respError(errTxExecNoMulti), "EXEC")
		r.expect(respError(errTxDiscNoMulti), "DISCARD")
		r.expect("old", "GET", "tx:k") // runs at once again
		k.eq(0, "EXISTS", "tx:n")
	})

	subtest(t, c, "MisuseErrors", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(respError(errTxExecNoMulti), "EXEC")
		r.expect(respError(errTxDiscNoMulti), "DISCARD")
		// A nested MULTI and a WATCH inside MULTI are refused without spoiling the transaction.
		r.expect(txOK, "MULTI")
		r.expect(respError(errTxNested), "MULTI")
		r.expect(respError(errTxWatchMulti), "WATCH", "tx:k")
		r.expect(txQueued, "SET", "tx:k", "1")
		r.expect(txQueued, "UNWATCH") // queued, unlike WATCH
		r.expect([]any{txOK, txOK}, "EXEC")
		k.eq("1", "GET", "tx:k")
	})

	subtest(t, c, "EmptyTransaction", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(txOK, "MULTI")
		r.send("EXEC")
		if got := r.rawLine(); got != "*0\r\n" {
			t.Fatalf("EXEC of an empty transaction: %q; want \"*0\\r\\n\"", got)
		}
		r.do("HELLO", "3")
		r.expect(txOK, "MULTI")
		r.send("EXEC")
		if got := r.rawLine(); got != "*0\r\n" {
			t.Fatalf("RESP3 EXEC of an empty transaction: %q; want \"*0\\r\\n\"", got)
		}
		_, err := c.TxPipelined(k.ctx, func(redis.Pipeliner) error { return nil })
		if err != nil {
			t.Fatalf("empty TxPipelined: %v", err)
		}
	})

	subtest(t, c, "AbortedExecIsNull", func(t *testing.T, k checker) {
		for _, proto := range []string{"2", "3"} {
			r := dialRESP(t, s)
			want := "*-1\r\n"
			if proto == "3" {
				r.do("HELLO", "3")
				want = "_\r\n"
			}
			r.expect(txOK, "WATCH", "tx:k")
			k.ok("SET", "tx:k", "other")
			r.expect(txOK, "MULTI")
			r.expect(txQueued, "SET", "tx:k", "mine")
			r.send("EXEC")
			if got := r.rawLine(); got != want {
				t.Fatalf("RESP%s: aborted EXEC: %q; want %q", proto, got, want)
			}
			k.eq("other", "GET", "tx:k")
		}
		// go-redis reports TxFailedErr in both protocols.
		for _, proto := range []int{2, 3} {
			gc := s.ClientOpts(&redis.Options{Protocol: proto})
			err := gc.Watch(k.ctx, func(tx *redis.Tx) error {
				k.ok("SET", "tx:k", fmt.Sprint("changed", proto))
				_, err := tx.TxPipelined(k.ctx, func(p redis.Pipeliner) error {
					p.Set(k.ctx, "tx:k", "mine", 0)
					return nil
				})
				return err
			}, "tx:k")
			if !errors.Is(err, redis.TxFailedErr) {
				t.Fatalf("RESP%d: Watch with a conflicting write: %v; want %v", proto, err, redis.TxFailedErr)
			}
		}
		k.eq("changed3", "GET", "tx:k")
	})

	subtest(t, c, "SelectInsideMulti", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		got := r.txRun(txCmd("SELECT", "1"), txCmd("SET", "tx:k", "one"), txCmd("SELECT", "99"), txCmd("SET", "tx:j", "still-one"),
			txCmd("SELECT", "0"), txCmd("SET", "tx:k", "zero"), txCmd("SELECT", "2"))
		want := []any{txOK, txOK, respError("ERR DB index is out of range"), txOK, txOK, txOK, txOK}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EXEC: got %s; want %s", short(got), short(want))
		}
		// The last SELECT stays in force after EXEC.
		r.expect(nil, "GET", "tx:k")
		r.expect(txOK, "SET", "tx:k", "two")
		for db, want := range []string{"zero", "one", "two"} {
			if v, err := s.ClientOpts(&redis.Options{DB: db}).Get(k.ctx, "tx:k").Result(); err != nil || v != want {
				t.Fatalf("db %d: GET tx:k = %q, %v; want %q", db, v, err, want)
			}
		}
		if v, err := s.ClientOpts(&redis.Options{DB: 1}).Get(k.ctx, "tx:j").Result(); err != nil || v != "still-one" {
			t.Fatalf("db 1: GET tx:j = %q, %v", v, err)
		}
	})

	subtest(t, c, "FlushInsideMulti", func(t *testing.T, k checker) {
		db1 := newChecker(t, s.ClientOpts(&redis.Options{DB: 1}))
		k.ok("MSET", "tx:a", "1", "tx:b", "2")
		db1.ok("SET", "tx:c", "3")
		r := dialRESP(t, s)
		got := r.txRun(txCmd("SET", "tx:gone", "x"), txCmd("FLUSHDB"), txCmd("SET", "tx:n", "1"), txCmd("DBSIZE"),
			txCmd("KEYS", "*"), txCmd("GET", "tx:a"))
		want := []any{txOK, txOK, txOK, int64(1), []any{"tx:n"}, nil}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EXEC: got %s; want %s", short(got), short(want))
		}
		k.eq([]string{"tx:n"}, "KEYS", "*")
		db1.eq("3", "GET", "tx:c") // FLUSHDB left the other database alone

		got = r.txRun(txCmd("SET", "tx:x", "1"), txCmd("FLUSHALL"), txCmd("SELECT", "1"), txCmd("SET", "tx:y", "1"),
			txCmd("DBSIZE"), txCmd("SELECT", "0"), txCmd("DBSIZE"))
		want = []any{txOK, txOK, txOK, txOK, int64(1), txOK, int64(0)}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EXEC: got %s; want %s", short(got), short(want))
		}
		k.eq(0, "DBSIZE")
		db1.eq([]string{"tx:y"}, "KEYS", "*")
	})

	subtest(t, c, "ReadsSeeOwnWrites", func(t *testing.T, k checker) {
		k.ok("MSET", "tx:x1", "1", "tx:x2", "2", "tx:x3", "3", "tx:x4", "4", "tx:x5", "5")
		r := dialRESP(t, s)
		got := r.txRun(txCmd("DEL", "tx:x1"), txCmd("SET", "tx:y1", "a"), txCmd("SET", "tx:y2", "b"), txCmd("RENAME", "tx:x2", "tx:z"),
			txCmd("DBSIZE"), txCmd("KEYS", "*"), txCmd("SCAN", "0", "COUNT", "1000"), txCmd("EXISTS", "tx:x1", "tx:x2", "tx:y1", "tx:z"),
			txCmd("GET", "tx:z"), txCmd("RANDOMKEY"))
		a := got.([]any)
		if len(a) != 10 {
			t.Fatalf("EXEC: %s", short(got))
		}
		wantKeys := []string{"tx:x3", "tx:x4", "tx:x5", "tx:y1", "tx:y2", "tx:z"}
		if a[4] != int64(6) {
			t.Errorf("DBSIZE inside EXEC: %s; want 6", short(a[4]))
		}
		if keys := sortedStrings(t, a[5].([]any)); !slices.Equal(keys, wantKeys) {
			t.Errorf("KEYS * inside EXEC: %v; want %v", keys, wantKeys)
		}
		scan := a[6].([]any)
		if scan[0] != "0" || !slices.Equal(sortedStrings(t, scan[1].([]any)), wantKeys) {
			t.Errorf("SCAN 0 COUNT 1000 inside EXEC: %s; want cursor 0 and %v", short(scan), wantKeys)
		}
		if a[7] != int64(2) || a[8] != "2" {
			t.Errorf("EXISTS, GET inside EXEC: %s, %s; want 2, \"2\"", short(a[7]), short(a[8]))
		}
		if rk, _ := a[9].(string); !slices.Contains(wantKeys, rk) {
			t.Errorf("RANDOMKEY inside EXEC: %s; want one of %v", short(a[9]), wantKeys)
		}
		if keys := sortedStrings(t, k.arr("KEYS", "*")); !slices.Equal(keys, wantKeys) {
			t.Errorf("KEYS * after EXEC: %v; want %v", keys, wantKeys)
		}
	})

	subtest(t, c, "LargeValues", func(t *testing.T, k checker) {
		big := txValue("big", 2<<20)
		ctx := k.ctx
		var get, rng *redis.StringCmd
		var n, app *redis.IntCmd
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "tx:big", big, 0)
			get = p.Get(ctx, "tx:big")
			app = p.Append(ctx, "tx:big", "tail")
			n = p.StrLen(ctx, "tx:big")
			rng = p.GetRange(ctx, "tx:big", -6, -1)
			p.Copy(ctx, "tx:big", "tx:big2", 0, false)
			return nil
		})
		if err != nil {
			t.Fatalf("TxPipelined: %v", err)
		}
		if get.Val() != big {
			t.Fatalf("GET inside EXEC: %d bytes, first difference at %d", len(get.Val()), firstDiff([]byte(get.Val()), []byte(big)))
		}
		if app.Val() != 2<<20+4 || n.Val() != 2<<20+4 || rng.Val() != big[len(big)-2:]+"tail" {
			t.Fatalf("APPEND %d, STRLEN %d, GETRANGE %q", app.Val(), n.Val(), rng.Val())
		}
		for _, key := range []string{"tx:big", "tx:big2"} {
			if v := k.str("GET", key); v != big+"tail" {
				t.Fatalf("GET %s after EXEC: %d bytes, first difference at %d", key, len(v), firstDiff([]byte(v), []byte(big+"tail")))
			}
		}
	})

	subtest(t, c, "MGetInsideExec", func(t *testing.T, k checker) {
		k.ok("SET", "tx:a", "1")
		r := dialRESP(t, s)
		got := r.txRun(txCmd("MGET", "tx:a", "tx:b", "tx:c"), txCmd("SET", "tx:b", "2"), txCmd("DEL", "tx:a"),
			txCmd("MGET", "tx:a", "tx:b", "tx:c"), txCmd("MSET", "tx:a", "x", "tx:c", "y"), txCmd("MGET", "tx:a", "tx:b", "tx:c"))
		want := []any{[]any{"1", nil, nil}, txOK, int64(1), []any{nil, "2", nil}, txOK, []any{"x", "2", "y"}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EXEC: got %s; want %s", short(got), short(want))
		}
	})

	subtest(t, c, "ShutdownRefused", func(t *testing.T, k checker) {
		k.ok("SET", "tx:k", "before")
		r := dialRESP(t, s)
		r.expect(txOK, "MULTI")
		r.expect(txQueued, "SET", "tx:k", "after")
		r.expect(respError(errTxNotAllowed), "SHUTDOWN")
		r.expect(respError(errTxNotAllowed), "SHUTDOWN", "NOSAVE")
		r.expect(respError(errTxAbortPrev), "EXEC")
		r.expect(respStatus("PONG"), "PING")
		k.eq("before", "GET", "tx:k")
		if !s.Running() {
			t.Fatal("the server exited")
		}
	})

	subtest(t, c, "ClientListWhileQueuing", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(txOK, "CLIENT", "SETNAME", "txlist")
		f := clientNamed(t, k.str("CLIENT", "LIST"), "txlist")
		if f["flags"] != "N" || f["multi"] != "-1" {
			t.Fatalf("before MULTI: flags=%s multi=%s; want N, -1", f["flags"], f["multi"])
		}
		r.expect(txOK, "MULTI")
		f = clientNamed(t, k.str("CLIENT", "LIST"), "txlist")
		if f["flags"] != "x" || f["multi"] != "0" {
			t.Fatalf("after MULTI: flags=%s multi=%s; want x, 0", f["flags"], f["multi"])
		}
		r.expect(txQueued, "SET", "tx:a", "1")
		r.expect(txQueued, "INCR", "tx:b")
		f = clientNamed(t, k.str("CLIENT", "LIST"), "txlist")
		if f["flags"] != "x" || f["multi"] != "2" {
			t.Fatalf("two commands queued: flags=%s multi=%s; want x, 2", f["flags"], f["multi"])
		}
		r.expect([]any{txOK, int64(1)}, "EXEC")
		f = clientNamed(t, k.str("CLIENT", "LIST"), "txlist")
		if f["flags"] != "N" || f["multi"] != "-1" {
			t.Fatalf("after EXEC: flags=%s multi=%s; want N, -1", f["flags"], f["multi"])
		}
		r.expect(txOK, "MULTI")
		r.expect(txQueued, "SET", "tx:a", "2")
		r.expect(txOK, "DISCARD")
		f = clientNamed(t, k.str("CLIENT", "LIST"), "txlist")
		if f["flags"] != "N" || f["multi"] != "-1" {
			t.Fatalf("after DISCARD: flags=%s multi=%s; want N, -1", f["flags"], f["multi"])
		}
	})

	subtest(t, c, "ClientListLastQueuedCommand", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(txOK, "CLIENT", "SETNAME", "txcmd")
		r.expect(txOK, "MULTI")
		r.expect(txQueued, "SET", "tx:a", "1")
		if f := clientNamed(t, k.str("CLIENT", "LIST"), "txcmd"); f["cmd"] != "set" {
			t.Fatalf("CLIENT LIST while queuing a SET: cmd=%s; want set", f["cmd"])
		}
	})

	subtest(t, c, "ClientInfoInsideExec", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(txOK, "CLIENT", "SETNAME", "txinfo")
		got := r.txRun(txCmd("SET", "tx:a", "1"), txCmd("CLIENT", "INFO"))
		a := got.([]any)
		f := clientNamed(t, a[1].(string), "txinfo")
		if f["flags"] != "x" || f["multi"] != "2" {
			t.Fatalf("CLIENT INFO inside EXEC: flags=%s multi=%s; want x, 2", f["flags"], f["multi"])
		}
	})
}

// watchCase is one WATCH scenario: setup runs first (on a db 0 client), the watcher then
// watches keys, between runs, and a transaction must be aborted (abort) or run.
type watchCase struct {
	name    string
	setup   [][]string
	keys    []string
	between func(t *testing.T, w *respConn, other, db1 checker)
	abort   bool
}

// watchDo runs args on the other client as a step of a watch case.
func watchDo(args ...any) func(t *testing.T, w *respConn, other, db1 checker) {
	return func(t *testing.T, w *respConn, other, db1 checker) { other.do(args...) }
}

// TestWatch checks WATCH end to end as Redis 7 defines it: which changes of a watched key, by
// another client or by the watcher itself, make EXEC reply with a null array (running nothing),
// and which do not (reads, writes that change nothing, the same name in another database,
// flushes that find no such key, keys already expired when watched); that UNWATCH, EXEC and
// DISCARD forget the watched keys; and that watches of disconnected clients do not linger.
func TestWatch(t *testing.T) {
	s, c := startServer(t)
	other1 := s.ClientOpts(&redis.Options{DB: 1})
	// ttlSleep lets a key's TTL run out without touching the key: waiting for the clock, not for
	// an event, so there is nothing to poll.
	ttlSleep := func() { time.Sleep(150 * time.Millisecond) }
	cases := []watchCase{
		{name: "OtherClientWrite", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: watchDo("SET", "w:k", "x"), abort: true},
		{name: "OtherClientWritesSameValue", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: watchDo("SET", "w:k", "v"), abort: true},
		{name: "OwnWriteBeforeMulti", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: func(t *testing.T, w *respConn, _, _ checker) { w.expect(txOK, "SET", "w:k", "own") }, abort: true},
		{name: "OwnReadBeforeMulti", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: func(t *testing.T, w *respConn, _, _ checker) { w.expect("v", "GET", "w:k") }},
		{name: "OtherClientRead", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, o, _ checker) {
				o.eq("v", "GET", "w:k")
				o.eq(1, "EXISTS", "w:k")
				o.eq(1, "TOUCH", "w:k")
			}},
		{name: "SameKeyOtherDB", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, _, db1 checker) { db1.ok("SET", "w:k", "x"); db1.eq(1, "DEL", "w:k") }},
		{name: "SetnxNoop", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, o, _ checker) { o.eq(0, "SETNX", "w:k", "x") }},
		{name: "SetNXNoop", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, o, _ checker) { o.null("SET", "w:k", "x", "NX") }},
		{name: "DelMissingNoop", keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, o, _ checker) { o.eq(0, "DEL", "w:k") }},
		{name: "PersistWithoutTTLNoop", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, o, _ checker) { o.eq(0, "PERSIST", "w:k") }},
		{name: "ExpireMissingNoop", keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, o, _ checker) { o.eq(0, "EXPIRE", "w:k", "100") }},
		{name: "CreationOfMissingKey", keys: []string{"w:k"}, between: watchDo("SET", "w:k", "new"), abort: true},
		{name: "Del", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"}, between: watchDo("DEL", "w:k"), abort: true},
		{name: "Unlink", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"}, between: watchDo("UNLINK", "w:k"), abort: true},
		{name: "Expire", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"}, between: watchDo("EXPIRE", "w:k", "100"), abort: true},
		{name: "Persist", setup: [][]string{{"SET", "w:k", "v", "EX", "100"}}, keys: []string{"w:k"}, between: watchDo("PERSIST", "w:k"), abort: true},
		{name: "Incr", setup: [][]string{{"SET", "w:k", "1"}}, keys: []string{"w:k"}, between: watchDo("INCR", "w:k"), abort: true},
		{name: "Append", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"}, between: watchDo("APPEND", "w:k", "x"), abort: true},
		{name: "Setrange", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"}, between: watchDo("SETRANGE", "w:k", "0", "x"), abort: true},
		{name: "Getdel", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"}, between: watchDo("GETDEL", "w:k"), abort: true},
		{name: "GetexPersist", setup: [][]string{{"SET", "w:k", "v", "EX", "100"}}, keys: []string{"w:k"},
			between: watchDo("GETEX", "w:k", "PERSIST"), abort: true},
		{name: "Mset", keys: []string{"w:k"}, between: watchDo("MSET", "w:j", "1", "w:k", "2"), abort: true},
		{name: "RenameFrom", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"}, between: watchDo("RENAME", "w:k", "w:j"), abort: true},
		{name: "RenameTo", setup: [][]string{{"SET", "w:j", "v"}}, keys: []string{"w:k"}, between: watchDo("RENAME", "w:j", "w:k"), abort: true},
		{name: "MoveAway", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"}, between: watchDo("MOVE", "w:k", "1"), abort: true},
		{name: "MoveIn", keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, _, db1 checker) {
				db1.ok("SET", "w:k", "v")
				db1.eq(1, "MOVE", "w:k", "0")
			}, abort: true},
		{name: "CopyReplace", setup: [][]string{{"SET", "w:k", "v"}, {"SET", "w:j", "j"}}, keys: []string{"w:k"},
			between: watchDo("COPY", "w:j", "w:k", "REPLACE"), abort: true},
		{name: "OneOfSeveralKeys", keys: []string{"w:a", "w:b", "w:c"}, between: watchDo("SET", "w:c", "1"), abort: true},
		{name: "OtherClientsTransaction", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, _, _ checker) {
				o := dialRESP(t, s)
				if got := o.txRun(txCmd("INCR", "w:n"), txCmd("SET", "w:k", "x")); !reflect.DeepEqual(got, []any{int64(1), txOK}) {
					t.Fatalf("the other client's EXEC: %s", short(got))
				}
			}, abort: true},
		{name: "FlushallExistingKey", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"}, between: watchDo("FLUSHALL"), abort: true},
		{name: "FlushallMissingKey", setup: [][]string{{"SET", "w:other", "v"}}, keys: []string{"w:k"}, between: watchDo("FLUSHALL")},
		{name: "FlushdbExistingKey", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"}, between: watchDo("FLUSHDB"), abort: true},
		{name: "FlushdbOtherDB", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, _, db1 checker) { db1.ok("SET", "w:k", "v"); db1.ok("FLUSHDB") }},
		{name: "ExpiresBetweenWatchAndExec", setup: [][]string{{"SET", "w:k", "v", "PX", "100"}}, keys: []string{"w:k"},
			between: func(*testing.T, *respConn, checker, checker) { ttlSleep() }, abort: true},
		{name: "ExpiresAndIsReadBetweenWatchAndExec", setup: [][]string{{"SET", "w:k", "v", "PX", "100"}}, keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, o, _ checker) { ttlSleep(); o.null("GET", "w:k") }, abort: true},
		{name: "AlreadyExpiredWhenWatched", setup: [][]string{{"SET", "w:k", "v", "PX", "20"}, {"SLEEP"}}, keys: []string{"w:k"},
			between: func(*testing.T, *respConn, checker, checker) { ttlSleep() }},
		{name: "AlreadyExpiredThenRead", setup: [][]string{{"SET", "w:k", "v", "PX", "20"}, {"SLEEP"}}, keys: []string{"w:k"},
			between: func(t *testing.T, _ *respConn, o, _ checker) { o.null("GET", "w:k"); o.eq(0, "EXISTS", "w:k") }},
		{name: "AlreadyExpiredThenWritten", setup: [][]string{{"SET", "w:k", "v", "PX", "20"}, {"SLEEP"}}, keys: []string{"w:k"},
			between: watchDo("SET", "w:k", "new"), abort: true},
		{name: "WatchedTwiceOnceWritten", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k", "w:k"},
			between: watchDo("SET", "w:k", "x"), abort: true},
		{name: "WatchInOtherDBThenWritten", keys: []string{"w:k"},
			between: func(t *testing.T, w *respConn, _, db1 checker) {
				w.expect(txOK, "SELECT", "1")
				w.expect(txOK, "WATCH", "w:j") // a db 1 key
				w.expect(txOK, "SELECT", "0")
				db1.ok("SET", "w:j", "x")
			}, abort: true},
		{name: "UnwatchForgets", setup: [][]string{{"SET", "w:k", "v"}}, keys: []string{"w:k"},
			between: func(t *testing.T, w *respConn, o, _ checker) { o.ok("SET", "w:k", "x"); w.expect(txOK, "UNWATCH") }},
	}
	for _, tc := range cases {
		subtest(t, c, tc.name, func(t *testing.T, k checker) {
			for _, a := range tc.setup {
				if a[0] == "SLEEP" {
					ttlSleep()
					continue
				}
				args := make([]any, len(a))
				for i, s := range a {
					args[i] = s
				}
				k.do(args...)
			}
			db1 := newChecker(t, other1)
			db1.ok("FLUSHDB")
			w := dialRESP(t, s)
			args := append([]string{"WATCH"}, tc.keys...)
			w.expect(txOK, args...)
			tc.between(t, w, k, db1)
			got := w.txRun(txCmd("SET", "w:probe", "ran"), txCmd("INCR", "w:count"))
			if tc.abort {
				if got != nil {
					t.Fatalf("EXEC: %s; want a null reply (the watched key changed)", short(got))
				}
				k.eq(0, "EXISTS", "w:probe", "w:count")
			} else {
				if want := []any{txOK, int64(1)}; !reflect.DeepEqual(got, want) {
					t.Fatalf("EXEC: %s; want %s (no watched key changed)", short(got), short(want))
				}
				k.eq("ran", "GET", "w:probe")
			}
			// Either way EXEC forgot the watched keys: a second transaction runs whatever happens.
			k.ok("SET", "w:k", "again")
			if got := w.txRun(txCmd("INCR", "w:count2")); !reflect.DeepEqual(got, []any{int64(1)}) {
				t.Fatalf("second EXEC: %s; want [1] (EXEC unwatches)", short(got))
			}
		})
	}

	subtest(t, c, "DiscardUnwatches", func(t *testing.T, k checker) {
		w := dialRESP(t, s)
		w.expect(txOK, "WATCH", "w:k")
		w.expect(txOK, "MULTI")
		w.expect(txQueued, "SET", "w:k", "mine")
		w.expect(txOK, "DISCARD")
		k.ok("SET", "w:k", "other")
		if got := w.txRun(txCmd("SET", "w:k", "mine")); !reflect.DeepEqual(got, []any{txOK}) {
			t.Fatalf("EXEC after DISCARD and another client's write: %s; want [OK]", short(got))
		}
		k.eq("mine", "GET", "w:k")
	})

	subtest(t, c, "ExecAbortUnwatches", func(t *testing.T, k checker) {
		// A transaction discarded by EXECABORT forgets the watched keys as well.
		w := dialRESP(t, s)
		w.expect(txOK, "WATCH", "w:k")
		w.expect(txOK, "MULTI")
		w.expect(respError("ERR unknown command 'NOSUCH', with args beginning with: "), "NOSUCH")
		w.expect(respError(errTxAbortPrev), "EXEC")
		k.ok("SET", "w:k", "other")
		if got := w.txRun(txCmd("SET", "w:k", "mine")); !reflect.DeepEqual(got, []any{txOK}) {
			t.Fatalf("EXEC after EXECABORT and another client's write: %s; want [OK]", short(got))
		}
	})

	subtest(t, c, "DisconnectedWatchers", func(t *testing.T, k checker) {
		keys := make([]string, 200)
		for i := range keys {
			keys[i] = fmt.Sprintf("w:d%d", i)
		}
		clients := func() int {
			n, _ := strconv.Atoi(infoFields(k.str("INFO", "clients"))["connected_clients"])
			return n
		}
		before := clients()
		for i := 0; i < 50; i++ {
			w := dialRESP(t, s)
			w.expect(txOK, append([]string{"WATCH"}, keys...)...)
			if i%2 == 0 {
				w.expect(txOK, "MULTI") // gone in the middle of a transaction, too
				w.expect(txQueued, "SET", keys[i], "never")
			}
			w.c.Close()
		}
		// The server forgets them: writes of the keys go on, and a new watcher is unaffected by
		// anything that happened before it watched.
		mset := []any{"MSET"}
		for _, key := range keys {
			mset = append(mset, key, "v")
		}
		k.ok(mset...)
		w := dialRESP(t, s)
		w.expect(txOK, append([]string{"WATCH"}, keys...)...)
		if got := w.txRun(txCmd("DEL", keys[0])); !reflect.DeepEqual(got, []any{int64(1)}) {
			t.Fatalf("EXEC of a new watcher: %s", short(got))
		}
		harness.Eventually(t, 10*time.Second, "the closed connections to go", func() bool {
			return clients() == before+1 // w

		})
		k.eq(199, "DBSIZE")
	})
}

// TestTransactionWatchRetryCounter is go-redis's optimistic-locking example under contention:
// goroutines increment one counter by GET, then SET inside MULTI ... EXEC, under WATCH, retrying
// on redis.TxFailedErr. No increment may be lost or applied twice: the counter ends at exactly
// the number of successful transactions. One conflict is forced (another client writes between
// a GET and its EXEC) so that the retry path runs on every machine, however the goroutines are
// scheduled.
func TestTransactionWatchRetryCounter(t *testing.T) {
	s := harness.Start(t)
	const workers, each = 8, 40
	c := s.ClientOpts(&redis.Options{PoolSize: workers + 2})
	ctx := harness.Ctx(t)
	const key = "tx:counter"
	var retries, forced atomic.Int64
	incr := func(worker, n int) error {
		txf := func(tx *redis.Tx) error {
			v, err := tx.Get(ctx, key).Int()
			if err != nil && err != redis.Nil {
				return err
			}
			if worker == 0 && n == 0 && forced.CompareAndSwap(0, 1) {
				// Another client's increment lands between this GET and the EXEC below.
				if err := c.Incr(ctx, key).Err(); err != nil {
					return err
				}
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, key, v+1, 0)
				return nil
			})
			return err
		}
		for attempt := 0; attempt < 10000; attempt++ {
			err := c.Watch(ctx, txf, key)
			if err == nil {
				return nil
			}
			if !errors.Is(err, redis.TxFailedErr) {
				return err
			}
			retries.Add(1)
		}
		return fmt.Errorf("worker %d: increment %d failed 10000 times", worker, n)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < each; n++ {
				if err := incr(w, n); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := int64(workers*each) + forced.Load()
	if got, err := c.Get(ctx, key).Int64(); err != nil || got != want {
		t.Fatalf("counter %d (%v); want %d: %d increments and %d forced, no lost update", got, err, want, workers*each, forced.Load())
	}
	if retries.Load() == 0 {
		t.Fatal("no transaction was retried, not even the forced conflict")
	}
	t.Logf("%d increments, %d retries on redis.TxFailedErr", workers*each, retries.Load())
}

// failHung fails t for a server that stopped answering: it makes the server print its
// goroutines (SIGQUIT ends a Go program with a dump of them) and quotes the ones in Lavik's
// code, so that a deadlock names itself.
func failHung(t *testing.T, s *harness.Server, what string) {
	t.Helper()
	syscall.Kill(s.Pid(), syscall.SIGQUIT)
	s.WaitExit(10 * time.Second)
	var stacks []string
	for _, g := range strings.Split(s.Log(), "\n\n") {
		if !strings.HasPrefix(g, "goroutine ") || !strings.Contains(g, "lavik/services/data/vlog") {
			continue
		}
		lines := strings.Split(g, "\n")
		keep := lines[:1]
		for _, l := range lines[1:] {
			if f, ok := strings.CutPrefix(l, "github.com/lavikdb/lavik/services/data/"); ok {
				keep = append(keep, "  "+f) // function(receiver and arguments): the log and LSN waited for
			}
		}
		stacks = append(stacks, strings.Join(keep, "\n"))
	}
	t.Fatalf("%s: the server stopped answering (requests timed out); its goroutines in the value log:\n%s",
		what, strings.Join(stacks, "\n"))
}

// isTimeout reports whether err is a client's read or write deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isoRun is a concurrent workload of TestTransactionIsolation and TestTransactionPlainReads:
// goroutines that run until the transfers are done, failures collected, and a server that stops
// answering reported as such.
type isoRun struct {
	t        *testing.T
	s        *harness.Server
	c        *redis.Client
	wg       sync.WaitGroup
	mu       sync.Mutex
	failures []string
	hung     atomic.Bool
	busy     atomic.Int64 // transferers still running
}

const (
	isoAccounts = 16
	isoInitial  = 1000
)

func newIsoRun(t *testing.T) *isoRun {
	s := harness.Start(t)
	r := &isoRun{t: t, s: s, c: s.ClientOpts(&redis.Options{PoolSize: 16, ReadTimeout: 10 * time.Second, MaxRetries: -1})}
	ctx := harness.Ctx(t)
	var mset []any
	for i := 0; i < isoAccounts; i++ {
		mset = append(mset, isoAcct(i), isoInitial)
	}
	if err := r.c.MSet(ctx, mset...).Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

func isoAcct(i int) string { return fmt.Sprintf("acct:%d", i) }

func isoAccts() []string {
	out := make([]string, isoAccounts)
	for i := range out {
		out[i] = isoAcct(i)
	}
	return out
}

// fail records a failure; false tells the goroutine to stop.
func (r *isoRun) fail(err error, format string, args ...any) {
	if err != nil && isTimeout(err) {
		r.hung.Store(true)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failures) < 10 {
		r.failures = append(r.failures, fmt.Sprintf(format, args...))
	}
}

// go runs f until the transfers are done (f returns false to stop early).
func (r *isoRun) loop(f func(n int) bool) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for n := 0; r.busy.Load() > 0 && !r.hung.Load(); n++ {
			if !f(n) {
				return
			}
		}
	}()
}

// transfers starts n goroutines that each make count transfers in MULTI ... EXEC.
func (r *isoRun) transfers(n, count int) {
	ctx := harness.Ctx(r.t)
	acct := isoAccts()
	r.busy.Add(int64(n))
	for w := 0; w < n; w++ {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.busy.Add(-1)
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; i < count && !r.hung.Load(); i++ {
				a, b := rng.IntN(isoAccounts), rng.IntN(isoAccounts-1)
				if b >= a {
					b++
				}
				amt := int64(1 + rng.IntN(50))
				_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.DecrBy(ctx, acct[a], amt)
					p.IncrBy(ctx, acct[b], amt)
					return nil
				})
				if err != nil {
					r.fail(err, "transfer: %v", err)
					return
				}
			}
		}()
	}
}

// checkSum fails the run unless vals are the accounts and add up to their initial total.
func (r *isoRun) checkSum(how string, vals []any) {
	var total int64
	for i, v := range vals {
		s, _ := v.(string)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			r.fail(nil, "%s: account %d holds %s", how, i, short(v))
			return
		}
		total += n
	}
	if total != isoAccounts*isoInitial {
		r.fail(nil, "%s read a total of %d; want %d", how, total, isoAccounts*isoInitial)
	}
}

// finish waits for the workload and fails t for what went wrong; the accounts' final total
// must be the initial one.
func (r *isoRun) finish() {
	t := r.t
	r.wg.Wait()
	if r.hung.Load() {
		failHung(t, r.s, strings.Join(r.failures, "; "))
	}
	if len(r.failures) > 0 {
		t.Fatalf("%d failures, the first:\n  %s", len(r.failures), strings.Join(r.failures, "\n  "))
	}
	vals, err := r.c.MGet(harness.Ctx(t), isoAccts()...).Result()
	if err != nil {
		t.Fatal(err)
	}
	r.checkSum("the final MGET", vals)
	if len(r.failures) > 0 {
		t.Fatal(r.failures[0])
	}
}

// TestTransactionIsolation runs, all at once: transfers between 16 accounts in MULTI ... EXEC
// (DECRBY one, INCRBY another), readers that read every account in MULTI; MGET; EXEC, and
// plain writers of other keys in the same shards (MSET of pairs that must stay equal, SET,
// INCR) that read their pairs back in MULTI; GET; GET; EXEC. Every read must find the
// accounts' total unchanged and every pair equal: no transaction sees half of another or half
// of an MSET, and no transfer is lost.
func TestTransactionIsolation(t *testing.T) {
	r := newIsoRun(t)
	ctx := harness.Ctx(t)
	acct := isoAccts()
	r.transfers(4, 250)
	for i := 0; i < 2; i++ {
		r.loop(func(int) bool {
			var mg *redis.SliceCmd
			if _, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				mg = p.MGet(ctx, acct...)
				return nil
			}); err != nil {
				r.fail(err, "MULTI MGET EXEC: %v", err)
				return false
			}
			r.checkSum("MULTI MGET EXEC", mg.Val())
			return true
		})
	}
	for p := 0; p < 2; p++ {
		r.loop(func(n int) bool {
			a, b := fmt.Sprintf("pair:%d:a", n%8), fmt.Sprintf("pair:%d:b", n%8)
			v := fmt.Sprintf("p%d-%d", p, n)
			if err := r.c.MSet(ctx, a, v, b, v).Err(); err != nil {
				r.fail(err, "MSET: %v", err)
				return false
			}
			if err := r.c.Set(ctx, fmt.Sprintf("noise:%d", n%64), v, 0).Err(); err != nil {
				r.fail(err, "SET: %v", err)
				return false
			}
			if err := r.c.Incr(ctx, "noise:count").Err(); err != nil {
				r.fail(err, "INCR: %v", err)
				return false
			}
			var ga, gb *redis.StringCmd
			if _, err := r.c.TxPipelined(ctx, func(pp redis.Pipeliner) error {
				ga = pp.Get(ctx, a)
				gb = pp.Get(ctx, b)
				return nil
			}); err != nil {
				r.fail(err, "MULTI GET GET EXEC: %v", err)
				return false
			}
			if ga.Val() != gb.Val() {
				r.fail(nil, "MULTI GET %s GET %s EXEC: %q, %q; one MSET wrote them", a, b, ga.Val(), gb.Val())
			}
			return true
		})
	}
	r.finish()
}

// TestTransactionConcurrentWritersProgress: eight clients write four keys at a time, half of
// them in MULTI; SET x4; EXEC and half with MSET, keys drawn from a thousand so that most writes
// span several shards. Every write must be answered: a server that stops answering fails the
// test with its goroutines in the value log.
func TestTransactionConcurrentWritersProgress(t *testing.T) {
	s := harness.Start(t)
	c := s.ClientOpts(&redis.Options{PoolSize: 8, ReadTimeout: 10 * time.Second, MaxRetries: -1})
	ctx := harness.Ctx(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for n := 0; n < 500; n++ {
				var kv []any
				for i := 0; i < 4; i++ {
					kv = append(kv, fmt.Sprintf("prog:%d", rng.IntN(1000)), n)
				}
				var err error
				if w%2 == 0 {
					_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						for i := 0; i < len(kv); i += 2 {
							p.Set(ctx, kv[i].(string), kv[i+1], 0)
						}
						return nil
					})
				} else {
					err = c.MSet(ctx, kv...).Err()
				}
				if err != nil {
					errs[w] = fmt.Errorf("writer %d, write %d: %w", w, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && isTimeout(err) {
			failHung(t, s, err.Error())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestTransactionPlainReads: a single command is atomic too. A plain MGET of every account,
// while transfers run in MULTI ... EXEC, must find the total unchanged, and a plain MGET of a
// pair that plain MSETs write must find both halves equal, as in Redis.
func TestTransactionPlainReads(t *testing.T) {
	r := newIsoRun(t)
	ctx := harness.Ctx(t)
	acct := isoAccts()
	r.transfers(4, 250)
	for i := 0; i < 2; i++ {
		r.loop(func(int) bool {
			vals, err := r.c.MGet(ctx, acct...).Result()
			if err != nil {
				r.fail(err, "MGET: %v", err)
				return false
			}
			r.checkSum("a plain MGET", vals)
			return true
		})
	}
	pair := []string{"pair:a", "pair:b", "pair:c", "pair:d", "pair:e", "pair:f", "pair:g", "pair:h"}
	r.loop(func(n int) bool {
		mset := []any{}
		for _, k := range pair {
			mset = append(mset, k, n)
		}
		if err := r.c.MSet(ctx, mset...).Err(); err != nil {
			r.fail(err, "MSET: %v", err)
			return false
		}
		return true
	})
	r.loop(func(int) bool {
		vals, err := r.c.MGet(ctx, pair...).Result()
		if err != nil {
			r.fail(err, "MGET: %v", err)
			return false
		}
		for _, v := range vals {
			if v != vals[0] {
				r.fail(nil, "a plain MGET of keys one MSET writes read %v", vals)
				break
			}
		}
		return true
	})
	r.finish()
}

// crashTx describes the transactions of TestTransactionKill9AllOrNothing: generation g sets
// every key of keys to crashValue(g, i) and increments crashCount.
const (
	crashKeys  = 20
	crashCount = "crash:count"
	crashBig   = 200 << 10
)

func crashKey(i int) string { return fmt.Sprintf("crash:%c%d:key", 'a'+rune(i%26), i*7919) }

// crashValue is key i's value in generation g: one of the 20 (a different one each generation,
// so that over time it lands in every shard) is 200 KiB, stored in chunks; the others are short.
// Each begins with "g<g>:k<i>:" so that a value read back names its generation.
func crashValue(g int64, i int) string {
	prefix := fmt.Sprintf("g%d:k%d:", g, i)
	if int(g%crashKeys) == i {
		return txValue(prefix, crashBig)
	}
	return txValue(prefix, len(prefix)+10+int(g%50))
}

// crashEncode appends generation g's transaction as RESP: MULTI, 20 SETs, INCR, EXEC.
func crashEncode(b []byte, g int64) []byte {
	cmd := func(args ...string) {
		b = fmt.Appendf(b, "*%d\r\n", len(args))
		for _, a := range args {
			b = fmt.Appendf(b, "$%d\r\n", len(a))
			b = append(b, a...)
			b = append(b, "\r\n"...)
		}
	}
	cmd("MULTI")
	for i := 0; i < crashKeys; i++ {
		cmd("SET", crashKey(i), crashValue(g, i))
	}
	cmd("INCR", crashCount)
	cmd("EXEC")
	return b
}

// TestTransactionKill9AllOrNothing: a client sends pipelines of transactions (MULTI, 20 SETs of
// keys spread over the shards, one of them 200 KiB, an INCR, EXEC) while another writes other
// keys, and the server is killed with SIGKILL at a random moment. After a restart every one of
// the 20 keys must hold the same generation (each transaction is all there or not at all), no
// older than the last EXEC acknowledged (appendfsync always), and the counter must equal the
// number of transactions that survived: none lost in between, none applied twice.
func TestTransactionKill9AllOrNothing(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("Lavik-only: crash atomicity of EXEC in Lavik's value log")
	}
	seed := e2eSeed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	s := harness.Start(t, "--appendfsync", "always")
	ctx := harness.Ctx(t)
	var (
		next      int64 = 1 // the next generation to send; generations are never reused
		recovered int64     // generation found after the last restart (0: none)
		count     int64     // crashCount found after the last restart
	)
	for round := 1; round <= 4; round++ {
		first := next
		var sent, acked atomic.Int64   // highest generation sent, and acknowledged by its EXEC reply
		var werr atomic.Pointer[error] // the writer's complaint about a reply
		fail := func(err error) { werr.Store(&err) }
		var wexit atomic.Pointer[error] // why the writer stopped: the kill, or a server that hung
		stopped := func(err error) { wexit.Store(&err) }
		var wg sync.WaitGroup
		nc := s.Conn()
		r := &respConn{t: t, c: nc, br: bufio.NewReaderSize(nc, 1<<16)}
		wrng := rand.New(rand.NewPCG(uint64(seed), uint64(round)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for g := first; ; {
				n := 1 + wrng.IntN(4) // transactions in this pipeline
				buf = buf[:0]
				for j := 0; j < n; j++ {
					buf = crashEncode(buf, g+int64(j))
				}
				sent.Store(g + int64(n) - 1)
				nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
				if _, err := nc.Write(buf); err != nil {
					stopped(err)
					return // the server is gone
				}
				for j := 0; j < n; j++ {
					for q := 0; q < crashKeys+3; q++ { // +OK, +QUEUED x 21, EXEC's array
						v, err := r.readErr()
						if err != nil {
							stopped(err)
							return
						}
						var want any = txQueued
						switch q {
						case 0:
							want = txOK
						case crashKeys + 2:
							wantCount := count + g - first + 1
							a, ok := v.([]any)
							if !ok || len(a) != crashKeys+1 || a[crashKeys] != wantCount {
								fail(fmt.Errorf("generation %d: EXEC replied %s; want %d OKs and %d", g, short(v), crashKeys, wantCount))
								return
							}
							continue
						}
						if v != want {
							fail(fmt.Errorf("generation %d, reply %d: %s; want %s", g, q, short(v), short(want)))
							return
						}
					}
					acked.Store(g)
					g++
				}
			}
		}()
		// Plain writes of other keys go on in every shard meanwhile.
		noise := s.ClientOpts(&redis.Options{MaxRetries: -1})
		wg.Add(1)
		go func() {
			defer wg.Done()
			nrng := rand.New(rand.NewPCG(uint64(seed), uint64(100+round)))
			for n := 0; ; n++ {
				key := fmt.Sprintf("crash:noise:%d", nrng.IntN(500))
				if err := noise.Set(ctx, key, txValue(key, 1+nrng.IntN(4096)), 0).Err(); err != nil {
					return
				}
			}
		}()
		killAt := time.Now().Add(200*time.Millisecond + time.Duration(rng.Int64N(int64(500*time.Millisecond))))
		harness.Eventually(t, 60*time.Second, "a few acknowledged transactions", func() bool {
			return time.Now().After(killAt) && acked.Load() >= first+2 || werr.Load() != nil || wexit.Load() != nil
		})
		if err := wexit.Load(); err != nil && isTimeout(*err) {
			failHung(t, s, fmt.Sprintf("round %d, before the kill: %v", round, *err))
		} else if err != nil {
			t.Fatalf("round %d: the connection failed before the kill: %v", round, *err)
		}
		s.Kill()
		wg.Wait()
		noise.Close()
		if err := werr.Load(); err != nil {
			t.Fatalf("round %d: %v", round, *err)
		}
		s.KillRestart()
		next = sent.Load() + 1

		v := s.ClientOpts(&redis.Options{})
		keys := make([]string, crashKeys)
		for i := range keys {
			keys[i] = crashKey(i)
		}
		vals, err := v.MGet(ctx, keys...).Result()
		if err != nil {
			t.Fatalf("round %d: MGET after restart: %v", round, err)
		}
		gens := make([]int64, crashKeys)
		for i, val := range vals {
			str, _ := val.(string)
			var g int64
			var k int
			if _, err := fmt.Sscanf(str, "g%d:k%d:", &g, &k); err != nil || k != i || str != crashValue(g, i) {
				t.Fatalf("round %d: key %d holds %s, not a value the client wrote (seed %d)", round, i, short(val), seed)
			}
			gens[i] = g
		}
		g := gens[0]
		for i, gi := range gens {
			if gi != g {
				t.Fatalf("round %d: key 0 holds generation %d, key %d generation %d: a transaction survived in part (all generations: %v; seed %d)",
					round, g, i, gi, gens, seed)
			}
		}
		if g < acked.Load() || g > sent.Load() {
			t.Fatalf("round %d: the keys hold generation %d; acknowledged up to %d, sent up to %d (seed %d)", round, g, acked.Load(), sent.Load(), seed)
		}
		wantCount := count
		if g >= first {
			wantCount += g - first + 1
		} else if g != recovered {
			t.Fatalf("round %d: generation %d came back; the last restart found %d (seed %d)", round, g, recovered, seed)
		}
		if got, err := v.Get(ctx, crashCount).Int64(); err != nil || got != wantCount {
			t.Fatalf("round %d: %s = %d (%v); want %d, one per surviving transaction (seed %d)", round, crashCount, got, err, wantCount, seed)
		}
		t.Logf("round %d: generations %d..%d sent, %d acknowledged, %d survived the kill", round, first, sent.Load(), acked.Load(), g)
		recovered, count = g, wantCount
		v.Close()
	}
}

// TestTransactionBadInput: misused transaction commands get Redis's errors and leave the
// connection in the right state; binary, empty and inline arguments queue like any others; a
// transaction of 100,000 commands runs in order; and a client that disconnects in the middle
// of a transaction, even in the middle of its EXEC, leaves nothing of it applied and the server
// serving.
func TestTransactionBadInput(t *testing.T) {
	s, c := startServer(t)
	arity := func(name string) respError {
		return respError("ERR wrong number of arguments for '" + name + "' command")
	}

	subtest(t, c, "MultiWithArguments", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(arity("multi"), "MULTI", "garbage", "\x00\xff")
		r.expect(respError(errTxExecNoMulti), "EXEC") // no transaction was started
		r.expect(txOK, "MULTI")
		r.expect(arity("multi"), "MULTI", "garbage") // refused inside: the transaction is spoiled
		r.expect(txQueued, "SET", "bi:k", "v")
		r.expect(respError(errTxAbortPrev), "EXEC")
		k.eq(0, "EXISTS", "bi:k")
	})

	subtest(t, c, "ExecWithArguments", func(t *testing.T, k checker) {
		const abort = "EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"
		r := dialRESP(t, s)
		r.expect(respError(abort), "EXEC", "now")
		r.expect(txOK, "MULTI")
		r.expect(txQueued, "SET", "bi:k", "v")
		r.expect(respError(abort), "EXEC", "now", "please")
		r.expect(respError(errTxExecNoMulti), "EXEC") // the refused EXEC discarded it
		k.eq(0, "EXISTS", "bi:k")
		// A refused EXEC forgets the watched keys too.
		r.expect(txOK, "WATCH", "bi:w")
		r.expect(txOK, "MULTI")
		r.expect(respError(abort), "EXEC", "x")
		k.ok("SET", "bi:w", "changed")
		if got := r.txRun(txCmd("SET", "bi:k", "v")); !reflect.DeepEqual(got, []any{txOK}) {
			t.Fatalf("EXEC after a refused EXEC and a write of the key watched before it: %s; want [OK]", short(got))
		}
	})

	subtest(t, c, "DiscardWatchUnwatchArity", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.expect(arity("discard"), "DISCARD", "x")
		r.expect(arity("watch"), "WATCH")
		r.expect(arity("unwatch"), "UNWATCH", "x")
		for _, bad := range [][]string{{"DISCARD", "x"}, {"WATCH"}, {"UNWATCH", "x"}} {
			r.expect(txOK, "MULTI")
			r.expect(txQueued, "SET", "bi:k", "v")
			r.expect(arity(strings.ToLower(bad[0])), bad...) // refused inside MULTI: spoiled
			r.expect(txQueued, "SET", "bi:j", "v")
			r.expect(respError(errTxAbortPrev), "EXEC")
			k.eq(0, "EXISTS", "bi:k", "bi:j")
		}
	})

	subtest(t, c, "BinaryAndEmptyArguments", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		key, val := "bi:\x00\r\n*1\r\n$4\r\nEXEC\r\n\xff", "\r\n+OK\r\n\x00"
		got := r.txRun(txCmd("SET", "", ""), txCmd("SET", key, val), txCmd("GET", key), txCmd("GET", ""), txCmd("STRLEN", key))
		want := []any{txOK, txOK, val, "", int64(len(val))}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EXEC: %s; want %s", short(got), short(want))
		}
		k.eq(val, "GET", key)
	})

	subtest(t, c, "InlineCommands", func(t *testing.T, k checker) {
		r := dialRESP(t, s)
		r.sendRaw("MULTI\r\nSET bi:i 1\r\nINCR bi:i\r\nEXEC\r\n")
		for _, want := range []any{txOK, txQueued, txQueued, []any{txOK, int64(2)}} {
			if got := r.read(); !reflect.DeepEqual(got, want) {
				t.Fatalf("inline transaction: %s; want %s", short(got), short(want))
			}
		}
	})

	subtest(t, c, "HundredThousandQueued", func(t *testing.T, k checker) {
		const n = 100_000
		r := dialRESP(t, s)
		go func() {
			// Written from a goroutine while the replies are read: neither side's buffers must
			// hold all of it.
			var b bytes.Buffer
			b.WriteString("*1\r\n$5\r\nMULTI\r\n")
			for i := 0; i < n; i++ {
				if i%2 == 0 {
					key := fmt.Sprintf("bi:%d", i)
					fmt.Fprintf(&b, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(key), key)
				} else {
					b.WriteString("*2\r\n$4\r\nINCR\r\n$6\r\nbi:ctr\r\n")
				}
			}
			b.WriteString("*1\r\n$4\r\nEXEC\r\n")
			r.c.SetWriteDeadline(time.Now().Add(60 * time.Second))
			r.c.Write(b.Bytes()) // an error shows as missing replies
		}()
		if got := r.read(); got != txOK {
			t.Fatalf("MULTI: %s", short(got))
		}
		for i := 0; i < n; i++ {
			if got := r.read(); got != txQueued {
				t.Fatalf("command %d: %s; want QUEUED", i, short(got))
			}
		}
		got, ok := r.read().([]any)
		if !ok || len(got) != n {
			t.Fatalf("EXEC: %d replies; want %d", len(got), n)
		}
		for i, v := range got {
			var want any = txOK
			if i%2 == 1 {
				want = int64(i/2 + 1)
			}
			if v != want {
				t.Fatalf("EXEC reply %d: %s; want %s", i, short(v), short(want))
			}
		}
		k.eq(n/2+1, "DBSIZE")
		k.eq(strconv.Itoa(n/2), "GET", "bi:ctr")
		k.eq("bi:99998", "GET", "bi:99998")
		r.expect(respStatus("PONG"), "PING")
	})

	subtest(t, c, "DisconnectMidTransaction", func(t *testing.T, k checker) {
		for _, tail := range []string{
			"",                    // gone after queuing
			"*1\r\n$4\r\nEX",      // gone in the middle of EXEC's bytes
			"*1\r\n$4\r\nEXEC\r",  // one byte short of a whole EXEC
			"*2\r\n$3\r\nSET\r\n", // in the middle of another queued command
		} {
			r := dialRESP(t, s)
			r.expect(txOK, "MULTI")
			for i := 0; i < 50; i++ {
				r.expect(txQueued, "SET", fmt.Sprintf("bi:gone:%d", i), "v")
			}
			r.expect(txQueued, "FLUSHALL")
			if tail != "" {
				r.sendRaw(tail)
			}
			r.c.Close()
		}
		// The server keeps serving, and nothing of the transactions was applied (their FLUSHALL
		// would have emptied db 0).
		k.ok("SET", "bi:canary", "v")
		harness.Eventually(t, 10*time.Second, "the closed connections to go", func() bool {
			return !strings.Contains(k.str("CLIENT", "LIST"), "flags=x")
		})
		k.eq(1, "DBSIZE")
		r := dialRESP(t, s)
		if got := r.txRun(txCmd("INCR", "bi:after")); !reflect.DeepEqual(got, []any{int64(1)}) {
			t.Fatalf("EXEC on a new connection: %s", short(got))
		}
	})
}

// clientMissing skips a test whose client library is not installed, or fails it when
// LAVIK_REQUIRE_CLIENTS=1 (CI installs them: .ci/run).
func clientMissing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("LAVIK_REQUIRE_CLIENTS") == "1" {
		t.Fatalf("%s (LAVIK_REQUIRE_CLIENTS=1 requires it)", msg)
	}
	t.Skip(msg)
}

// runClient runs a client program and returns the JSON object it prints, failing t with its
// output when it exits non-zero.
func runClient(t *testing.T, name string, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%s %s printed no JSON object (%v):\n%s", name, strings.Join(args, " "), err, stdout.String())
	}
	return out
}

// runPythonClient runs clients/python/<script> PORT with Debian's python3 and redis-py (the
// test is skipped, or fails under CI, when they are missing) and returns its JSON summary.
func runPythonClient(t *testing.T, script, port string) map[string]any {
	t.Helper()
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		clientMissing(t, "%s is missing: the redis-py test needs Debian's python3 and python3-redis", python)
	}
	if out, err := exec.Command(python, "-c", "import redis").CombinedOutput(); err != nil {
		clientMissing(t, "redis-py is not installed for %s (apt-get install python3-redis): %s", python, bytes.TrimSpace(out))
	}
	return runClient(t, python, filepath.Join("clients", "python", script), port)
}

// runNodeClient runs clients/node/<script> PORT with Node.js and ioredis and returns its JSON
// summary.
func runNodeClient(t *testing.T, script, port string) map[string]any {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		clientMissing(t, "node is not installed: the ioredis test needs Node.js (apt-get install nodejs npm)")
	}
	dir := filepath.Join("clients", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ioredis", "package.json")); err != nil {
		clientMissing(t, "ioredis is not installed: run npm ci --prefix test/clients/node")
	}
	return runClient(t, node, filepath.Join(dir, script), port)
}

// TestTransactionClientLibraries runs the transaction programs of clients/: redis-py
// (pipeline(transaction=True), transaction() with its WATCH retry loop, WatchError, errors
// inside EXEC, EXECABORT) and ioredis (multi().exec(), multi({pipeline: false}), a null exec()
// after a concurrent change of a watched key, UNWATCH, errors inside EXEC, EXECABORT,
// DISCARD). Each program checks every reply itself and exits non-zero on a difference.
func TestTransactionClientLibraries(t *testing.T) {
	s := harness.Start(t)
	_, port, _ := net.SplitHostPort(s.Addr)

	t.Run("redis-py", func(t *testing.T) {
		out := runPythonClient(t, "tx.py", port)
		t.Logf("redis-py %v: %v", out["redis_py"], out)
	})

	t.Run("ioredis", func(t *testing.T) {
		out := runNodeClient(t, "tx.js", port)
		t.Logf("ioredis %v: %v", out["ioredis"], out)
	})
}
