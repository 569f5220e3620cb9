package server_test

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/pkg/testseed"
)

// testSeed is the seed of a randomized test (testseed.Seed): LAVIK_SERVER_SEED replays one.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	return testseed.Seed(t, "LAVIK_SERVER_SEED")
}

// sig renders a reply for comparison and failure messages: like show, but a long bulk string
// is its start, length and checksum, so that a failure over a 200 KiB value stays readable.
func sig(v resp.Value) string {
	switch v.Kind {
	case resp.BulkString:
		return bulkSig(v.Str)
	case resp.Array:
		parts := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			parts[i] = sig(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return show(v)
}

func bulkSig(b []byte) string {
	if len(b) <= 64 {
		return strconv.Quote(string(b))
	}
	return fmt.Sprintf("%q...(%d bytes, crc %08x)", b[:32], len(b), crc32.ChecksumIEEE(b))
}

// value makes a value that names its writer, key and write, padded to size bytes, so that a
// reply carrying another connection's or another write's value is told apart.
func value(conn int, key string, seq, size int) string {
	head := fmt.Sprintf("c%d/%s/%d/", conn, key, seq)
	if size <= len(head) {
		return head
	}
	pad := make([]byte, size-len(head))
	for i := range pad {
		pad[i] = byte('a' + (i/7+seq)%26)
	}
	return head + string(pad)
}

// check judges one reply; it returns a description of what is wrong, or "".
type check func(v resp.Value) string

func wantSig(want string) check {
	return func(v resp.Value) string {
		if got := sig(v); got != want {
			return "got " + got + ", want " + want
		}
		return ""
	}
}

func wantBulk(val string) check { return wantSig(bulkSig([]byte(val))) }

func wantBulkOrNil(val string, ok bool) check {
	if !ok {
		return wantSig("(nil)")
	}
	return wantBulk(val)
}

// pipeline is commands to send in one write and the checks of their replies, in order.
type pipeline struct {
	buf    []byte
	checks []check
	names  []string
}

func (p *pipeline) add(c check, args ...string) {
	p.buf = resp.AppendCommandStrings(p.buf, args...)
	p.checks = append(p.checks, c)
	name := strings.Join(args, " ")
	if len(name) > 60 {
		name = name[:60] + "..."
	}
	p.names = append(p.names, name)
}

// run sends the pipeline, from a goroutine of its own (the server stops reading a client that
// does not read its replies, so writing it all before reading could wait for ever), and checks
// every reply in order. It returns the first thing wrong.
func (p *pipeline) run(nc net.Conn, rd *resp.ReplyReader) error {
	sent := make(chan error, 1)
	go func() {
		nc.SetWriteDeadline(time.Now().Add(waitFor))
		_, err := nc.Write(p.buf)
		sent <- err
	}()
	for i, c := range p.checks {
		nc.SetReadDeadline(time.Now().Add(waitFor))
		v, err := rd.Read()
		if err != nil {
			return fmt.Errorf("reply %d of %d (%s): %v", i, len(p.checks), p.names[i], err)
		}
		if what := c(v); what != "" {
			return fmt.Errorf("reply %d of %d (%s): %s", i, len(p.checks), p.names[i], what)
		}
	}
	if err := <-sent; err != nil {
		return fmt.Errorf("write: %v", err)
	}
	return nil
}

// orderWorker is one connection of TestLoopRepliesInOrder with its model of its own keys.
type orderWorker struct {
	id    int
	rng   *rand.Rand
	model map[string]string
	n     int64 // its counter
	seq   int
	// lastShared is the last value of the shared counter this connection saw: INCRs of others
	// may come between its own, but it never goes back.
	lastShared int64
}

const (
	orderSmallKeys = 24
	orderShared    = 4
)

func (w *orderWorker) key(i int) string { return fmt.Sprintf("c%d:k%d", w.id, i) }

// bigKey is one of the connection's two keys that get values longer than 64 KiB (stored in
// chunks, answered by a goroutine: the detached path).
func (w *orderWorker) bigKey() string { return fmt.Sprintf("c%d:big%d", w.id, w.rng.IntN(2)) }

func (w *orderWorker) get(p *pipeline, k string) {
	v, ok := w.model[k]
	p.add(wantBulkOrNil(v, ok), "GET", k)
}

func (w *orderWorker) set(p *pipeline, k string, size int) {
	w.seq++
	v := value(w.id, k, w.seq, size)
	w.model[k] = v
	p.add(wantSig("+OK"), "SET", k, v)
}

// smallSize is the length of a value that is one record: mostly short, some of several KiB, a
// few just under the 64 KiB at which GET runs detached (their replies pass the loop's flush
// threshold).
func (w *orderWorker) smallSize() int {
	switch r := w.rng.IntN(100); {
	case r < 80:
		return 8 + w.rng.IntN(120)
	case r < 98:
		return 1<<10 + w.rng.IntN(4<<10)
	default:
		return 40<<10 + w.rng.IntN(20<<10)
	}
}

// pipeline makes n random commands, one run of more than 128 GETs among them.
func (w *orderWorker) pipeline(n int) *pipeline {
	p := &pipeline{}
	longRun := w.rng.IntN(n)
	for i := 0; i < n; i++ {
		if i == longRun {
			for j := 0; j < 129+w.rng.IntN(100); j++ {
				w.get(p, w.key(w.rng.IntN(orderSmallKeys)))
			}
			continue
		}
		switch r := w.rng.IntN(100); {
		case r < 22:
			w.set(p, w.key(w.rng.IntN(orderSmallKeys)), w.smallSize())
		case r < 50:
			w.get(p, w.key(w.rng.IntN(orderSmallKeys)))
		case r < 56:
			for j := 0; j < 2+w.rng.IntN(8); j++ {
				w.get(p, w.key(w.rng.IntN(orderSmallKeys)))
			}
		case r < 62:
			w.n++
			p.add(wantSig(":"+strconv.FormatInt(w.n, 10)), "INCR", fmt.Sprintf("c%d:n", w.id))
		case r < 67:
			k := w.key(w.rng.IntN(orderSmallKeys))
			_, ok := w.model[k]
			delete(w.model, k)
			p.add(wantSig(":"+strconv.Itoa(boolInt(ok))), "DEL", k)
		case r < 71:
			args := []string{"MGET"}
			var want []string
			// Now and then more than 32 keys: MGET then runs detached.
			nk := 2 + w.rng.IntN(4)
			if w.rng.IntN(4) == 0 {
				nk = 33 + w.rng.IntN(10)
			}
			for j := 0; j < nk; j++ {
				k := w.key(w.rng.IntN(orderSmallKeys))
				args = append(args, k)
				if v, ok := w.model[k]; ok {
					want = append(want, bulkSig([]byte(v)))
				} else {
					want = append(want, "(nil)")
				}
			}
			p.add(wantSig("["+strings.Join(want, " ")+"]"), args...)
		case r < 77:
			// A shared key: another connection may have overwritten it since this one's SET,
			// so a GET sees some connection's value of that key.
			j := w.rng.IntN(orderShared)
			k := fmt.Sprintf("shared%d", j)
			if w.rng.IntN(2) == 0 {
				w.seq++
				p.add(wantSig("+OK"), "SET", k, value(w.id, k, w.seq, 16+w.rng.IntN(2000)))
			} else {
				p.add(func(v resp.Value) string {
					if v.Kind != resp.BulkString || !bytes.Contains(v.Str, []byte("/"+k+"/")) {
						return "got " + sig(v) + ", want a value of " + k
					}
					return ""
				}, "GET", k)
			}
		case r < 80:
			p.add(func(v resp.Value) string {
				if v.Kind != resp.Integer || v.Int <= w.lastShared {
					return fmt.Sprintf("got %s, want an integer above %d, the last this connection saw", sig(v), w.lastShared)
				}
				w.lastShared = v.Int
				return ""
			}, "INCR", "shared:n")
		case r < 81:
			w.set(p, w.bigKey(), 70<<10+w.rng.IntN(60<<10))
		case r < 84:
			w.get(p, w.bigKey())
		case r < 85:
			// SET ... GET of a long value runs detached too.
			k := w.bigKey()
			old, ok := w.model[k]
			w.seq++
			v := value(w.id, k, w.seq, 70<<10+w.rng.IntN(30<<10))
			w.model[k] = v
			p.add(wantBulkOrNil(old, ok), "SET", k, v, "GET")
		default:
			p.add(wantSig(bulk(strconv.Itoa(i))), "ECHO", strconv.Itoa(i))
		}
	}
	return p
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestLoopRepliesInOrder: 32 connections, on every loop, each send pipelines of random commands
// on their own keys and a few shared ones: SETs, GETs single and in runs (one longer than the
// 128 a batch takes), INCRs, DELs, MGETs (some long enough to run detached), values of a few
// bytes to 130 KiB (those over 64 KiB are stored in chunks: the GETs that find them go detached
// from inside a batch), SET ... GET. The keyspace is on disk and read through io_uring, with appendfsync
// always, so that GETs are answered on the loops' rings, most from the disk (a synced record
// is no longer held in memory), while the same connections' writes wait for their syncs. Every
// reply must be the one a model of the connection's keys predicts, in order.
func TestLoopRepliesInOrder(t *testing.T) {
	seed := testSeed(t)
	ts := startDiskServer(t, nil)
	setup := ts.dial(t)
	for j := 0; j < orderShared; j++ {
		k := fmt.Sprintf("shared%d", j)
		setup.send(cmd{"SET", k, value(-1, k, 0, 100)})
		setup.expect("+OK")
	}
	const conns, rounds, perRound = 32, 2, 200
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		c := ts.dial(t)
		w := &orderWorker{id: i, rng: rand.New(rand.NewPCG(seed, uint64(i))), model: map[string]string{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				if err := w.pipeline(perRound).run(c.nc, c.rd); err != nil {
					errs <- fmt.Errorf("connection %d, pipeline %d: %w", w.id, r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := ts.ringReads(); n == 0 {
		t.Errorf("the loops' rings read nothing: the GETs did not take the io_uring path")
	} else {
		t.Logf("ring reads: %d", n)
	}
}
