package vlog

// Tests of what flushing waits for: a rotation waits for no sync, and a transaction's barrier
// makes a log's later bytes wait for the other parts (written, or synced under appendfsync
// always), so that a crash never keeps what followed a part whose transaction it broke.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// waitDone waits up to d for ch and fails the test, with every goroutine's stack, if it does not
// come: a test of "does not wait" must not hang when it does.
func waitDone[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		t.Fatalf("%s: still waiting after %v\n%s", what, d, buf[:runtime.Stack(buf, true)])
		panic("unreachable")
	}
}

// gate is an injector that blocks the operations it matches while closed, telling entered
// about each one that blocks.
type gate struct {
	ops     []vfs.Op
	prefix  string // paths it blocks (all when empty)
	closed  atomic.Bool
	entered chan string
	open    chan struct{}
}

func newGate(prefix string, ops ...vfs.Op) *gate {
	return &gate{ops: ops, prefix: prefix, entered: make(chan string, 64), open: make(chan struct{})}
}

func (g *gate) MaybeError(op vfs.Op, path string) error {
	if g.closed.Load() && slices.Contains(g.ops, op) && strings.HasPrefix(path, g.prefix) {
		g.entered <- fmt.Sprintf("%v %s", op, path)
		<-g.open
	}
	return nil
}

func (g *gate) close() { g.closed.Store(true) }

// release lets every blocked operation go, and every later one.
func (g *gate) release() {
	g.closed.Store(false)
	close(g.open)
}

// TestRotationDoesNotWaitForSync blocks a sync leader inside fdatasync and, meanwhile, appends
// enough to rotate several times, writes without syncing now and then, and after each append
// reads back the new record and a random earlier one (from memory: none is synced): none of that
// may wait for the sync. Afterwards every record is durable.
func TestRotationDoesNotWaitForSync(t *testing.T) {
	mem := vfs.NewMem()
	g := newGate("", vfs.OpSync)
	opts := recOpts(vfs.NewErrorFS(mem, g), "/d")
	opts.SegmentSize = 4096
	l, _ := collect(t, opts)
	rng := rand.New(rand.NewPCG(17, 17))
	r0, _ := appendPut(t, l, 0, randBytes(rng, 300))
	recs := []rec{r0}
	g.close()
	syncDone := make(chan error, 1)
	go func() { syncDone <- l.Sync() }()
	waitDone(t, g.entered, 5*time.Second, "the sync leader to reach fdatasync")

	work := make(chan error, 1)
	go func() {
		work <- func() error {
			for i := 1; i < 80; i++ {
				key := fmt.Sprintf("k%04d", i)
				val := randBytes(rng, 300)
				loc, lsn, err := l.Append(Header{Kind: KindPut, Version: uint64(i + 1)}, []byte(key), val)
				if err != nil {
					return err
				}
				recs = append(recs, rec{loc: loc, h: Header{Kind: KindPut, KeyLen: uint32(len(key)), ValLen: uint32(len(val))}, key: key, val: val})
				if i%7 == 0 {
					if err := l.Flush(lsn, false); err != nil {
						return err
					}
				}
				for _, r := range []rec{recs[rng.IntN(len(recs))], recs[len(recs)-1]} {
					var rd Read
					if err := l.PrepareRead(&rd, r.loc, int(r.h.Size())); err != nil {
						return err
					}
					Submit(l.opts.Engine, []*Read{&rd})
					v, err := decodeVal(rd.Data)
					if err == nil {
						err = rd.Err
					}
					rd.Release()
					if err != nil || !bytes.Equal(v, r.val) {
						return fmt.Errorf("read %s at %v: %q, %v", r.key, r.loc, v, err)
					}
				}
			}
			return nil
		}()
	}()
	if err := waitDone(t, work, 5*time.Second, "appends, rotations, writes and reads while a sync is blocked"); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.Rotations < 3 {
		t.Fatalf("%d rotations, want at least 3", st.Rotations)
	}
	select {
	case err := <-syncDone:
		t.Fatalf("the sync returned (%v) while fdatasync was blocked", err)
	default:
	}
	g.release()
	if err := waitDone(t, syncDone, 5*time.Second, "the released sync"); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	l.Close()
	l2, got := collect(t, recOpts(crashed, "/d"))
	defer l2.Close()
	sameRecords(t, "after a crash", got, recs)
}

// barrierLogs opens logs a and b on one file system behind inj.
func barrierLogs(t *testing.T, inj vfs.Injector) (mem *vfs.MemFS, a, b *Log) {
	t.Helper()
	mem = vfs.NewMem()
	fs := vfs.NewErrorFS(mem, inj)
	a, _ = collect(t, recOpts(fs, "/a"))
	b, _ = collect(t, recOpts(fs, "/b"))
	t.Cleanup(func() {
		if !t.Failed() { // a failed test may have left them deadlocked
			a.Close()
			b.Close()
		}
	})
	return mem, a, b
}

// fileSize is the size of a file as reads see it.
func fileSize(t *testing.T, fs vfs.FS, path string) int64 {
	t.Helper()
	fi, err := fs.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestBarrierWaitsForPeer: a transaction has a part in log a and one in log b, each log with a
// barrier after its part. A flush of a's later record writes a's part, then waits until b's part
// is written (peer sync off) or synced (on), and writes nothing after a's part meanwhile.
func TestBarrierWaitsForPeer(t *testing.T) {
	for _, peerSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("peerSync=%v", peerSync), func(t *testing.T) {
			op := vfs.OpWrite
			if peerSync {
				op = vfs.OpSync
			}
			g := newGate("/b/", op)
			mem, a, b := barrierLogs(t, g)
			a.SetPeerSync(peerSync)
			b.SetPeerSync(peerSync)
			pa, aEnd := appendPut(t, a, 0, []byte("part of the transaction in a"))
			_, bEnd := appendPut(t, b, 1, []byte("part of the transaction in b"))
			a.AddBarrier(aEnd, []Peer{{Log: b, LSN: bEnd}})
			b.AddBarrier(bEnd, []Peer{{Log: a, LSN: aEnd}})
			_, later := appendPut(t, a, 2, []byte("written after the transaction in a"))

			g.close()
			done := make(chan error, 1)
			go func() { done <- a.Flush(later, false) }()
			waitDone(t, g.entered, 5*time.Second, "b's part to be flushed for a's barrier")
			aPath := filepath.Join("/a", segName(pa.loc.Seg))
			if got := fileSize(t, mem, aPath); got != pa.end() {
				t.Fatalf("a's file holds %d bytes while b's part is not %s, want a's part only (%d)",
					got, map[bool]string{false: "written", true: "synced"}[peerSync], pa.end())
			}
			if a.DurableLSN(false) != aEnd {
				t.Fatalf("a written up to %d, want its part's end %d", a.DurableLSN(false), aEnd)
			}
			select {
			case err := <-done:
				t.Fatalf("a's flush returned (%v) before b's part was durable enough", err)
			default:
			}
			g.release()
			if err := waitDone(t, done, 5*time.Second, "a's flush once b is released"); err != nil {
				t.Fatal(err)
			}
			if a.DurableLSN(false) < later || b.DurableLSN(peerSync) < bEnd {
				t.Fatalf("a written to %d (want %d), b to %d (want %d)", a.DurableLSN(false), later, b.DurableLSN(peerSync), bEnd)
			}
			if !peerSync && b.DurableLSN(true) >= bEnd {
				t.Fatal("b synced although nothing asked for it")
			}
		})
	}
}

// waitForGoroutine polls the stacks of every goroutine until one holds all of frames, in that
// order from the top, and fails the test after d.
func waitForGoroutine(t *testing.T, d time.Duration, frames ...string) {
	t.Helper()
	deadline := time.Now().Add(d)
	buf := make([]byte, 1<<20)
	for {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			rest, ok := g, true
			for _, f := range frames {
				i := strings.Index(rest, f)
				if i < 0 {
					ok = false
					break
				}
				rest = rest[i+len(f):]
			}
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine reached %v within %v", frames, d)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBarrierLeadersDoNotWaitForEachOther: transactions T1 and T2 each have a part in logs a and b.
// b's write leader is inside its first write (up to T1's part) when a's leader, having written
// T1's part in a, waits for b to write T1's part. b's leader finishes that write and goes on to
// T2's part, then waits at T2's barrier for a. a's leader must be woken by the write it waits
// for, not only when b's leader is done, or each leader waits for the other for ever.
func TestBarrierLeadersDoNotWaitForEachOther(t *testing.T) {
	g := newGate("/b/", vfs.OpWrite)
	_, a, b := barrierLogs(t, g)
	for i := 0; i < 2; i++ {
		_, aEnd := appendPut(t, a, 2*i, []byte("part in a"))
		_, bEnd := appendPut(t, b, 2*i+1, []byte("part in b"))
		a.AddBarrier(aEnd, []Peer{{Log: b, LSN: bEnd}})
		b.AddBarrier(bEnd, []Peer{{Log: a, LSN: aEnd}})
	}
	_, aLast := appendPut(t, a, 4, []byte("after both in a"))
	_, bLast := appendPut(t, b, 5, []byte("after both in b"))

	g.close()
	bDone := make(chan error, 1)
	go func() { bDone <- b.Flush(bLast, false) }()
	waitDone(t, g.entered, 5*time.Second, "b's leader to start writing")
	aDone := make(chan error, 1)
	go func() { aDone <- a.Flush(aLast, false) }()
	// a's leader wrote T1's part and waits for b's leader to write T1's part in b.
	waitForGoroutine(t, 5*time.Second, "sync.(*Cond).Wait", "vlog.(*Log).Flush", "vlog.(*Log).resolveLocked")
	g.release()
	if err := waitDone(t, aDone, 5*time.Second, "a's flush"); err != nil {
		t.Fatal(err)
	}
	if err := waitDone(t, bDone, 5*time.Second, "b's flush"); err != nil {
		t.Fatal(err)
	}
}

// txExt encodes a test transaction's condition: its id and where each part ends, by log.
func txExt(id uint64, ends map[int]Loc) []byte {
	b := binary.LittleEndian.AppendUint64(nil, id)
	for i := 0; i < 8; i++ {
		if e, ok := ends[i]; ok {
			b = append(b, byte(i))
			b = binary.LittleEndian.AppendUint32(b, e.Seg)
			b = binary.LittleEndian.AppendUint32(b, e.Off)
		}
	}
	return b
}

func decodeTxExt(b []byte) (id uint64, ends map[int]Loc) {
	id, ends = binary.LittleEndian.Uint64(b), map[int]Loc{}
	for p := b[8:]; len(p) >= 9; p = p[9:] {
		ends[int(p[0])] = Loc{Seg: binary.LittleEndian.Uint32(p[1:]), Off: binary.LittleEndian.Uint32(p[5:])}
	}
	return id, ends
}

// txCloner takes crash clones before random mutating operations: of a power loss
// (CrashCloneRandom: what was synced, and part of what was not), or with kill set of a killed
// process (everything written, as the page cache keeps it). Every mutating operation passes
// through its mutex, so a clone never holds an operation that started after one it lacks had
// finished. synced and written are the transactions whose every part a flush made synced, or
// written; a clone keeps the set its kind of crash must keep whole.
type txCloner struct {
	mu     sync.Mutex
	mem    *vfs.MemFS
	dirs   []string
	kill   bool
	rng    *rand.Rand
	p      float64
	max    int
	clones []txClone
	// ackMu guards synced and written; taken under mu, never the other way round.
	ackMu           sync.Mutex
	synced, written map[uint64]bool
}

type txClone struct {
	fs    *vfs.MemFS
	acked map[uint64]bool
}

func (c *txCloner) MaybeError(op vfs.Op, path string) error {
	switch op {
	case vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpTruncate, vfs.OpRemove, vfs.OpSyncDir:
	default:
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.clones) >= c.max || c.rng.Float64() >= c.p {
		return nil
	}
	c.ackMu.Lock()
	acked := maps.Clone(c.synced)
	if c.kill {
		acked = maps.Clone(c.written)
	}
	c.ackMu.Unlock()
	clone := txClone{acked: acked}
	if c.kill {
		clone.fs = killClone(c.mem, c.dirs)
	} else {
		clone.fs = c.mem.CrashCloneRandom(c.rng)
	}
	c.clones = append(c.clones, clone)
	return nil
}

// killClone copies the files of dirs as they read now, which is what a process that was killed
// leaves: the kernel still writes back whatever it was given.
func killClone(mem *vfs.MemFS, dirs []string) *vfs.MemFS {
	out := vfs.NewMem()
	for _, d := range dirs {
		out.MkdirAll(d, 0o755)
		names, err := mem.List(d)
		if err != nil {
			continue // not created yet
		}
		for _, n := range names {
			src, err := mem.Open(filepath.Join(d, n))
			if err != nil {
				panic(err) // nothing here removes files while the clone runs
			}
			size, _ := src.Size()
			b := make([]byte, size)
			src.ReadAt(b, 0)
			src.Close()
			f, _ := out.Create(filepath.Join(d, n))
			f.WriteAt(b, 0)
			f.Sync()
			f.Close()
		}
		out.SyncDir(d)
	}
	return out
}

// TestBarriersConcurrent commits transactions over three logs from several goroutines, each
// holding the locks of the logs it appends to (taken in a global order, as shards' locks are),
// while other goroutines flush random logs, synced or not, and append marks. Nothing may
// deadlock, and crash clones taken at random points must satisfy what recovery relies on: a
// transaction a crash left incomplete has every part that survived in the region of its log that
// recovery reads for torn tails (TailTx), so cutting there leaves nothing after it; and a
// transaction flushed in every log before the crash is complete. With peer sync on (appendfsync
// always) that holds for a power loss and "flushed" means synced; with it off, barriers order
// only the writes, and it holds for a killed process, "flushed" meaning written (for a power loss
// see TestBarrierWrittenOnlyPowerLoss).
func TestBarriersConcurrent(t *testing.T) {
	for _, peerSync := range []bool{true, false} {
		t.Run(fmt.Sprintf("peerSync=%v", peerSync), func(t *testing.T) {
			seed := recoverSeed(t, uint64(time.Now().UnixNano()))
			runBarriers(t, seed, peerSync)
		})
	}
}

func runBarriers(t *testing.T, seed uint64, peerSync bool) {
	const nlogs, committers, flushers, perCommitter = 3, 4, 3, 150
	mem := vfs.NewMem()
	cl := &txCloner{mem: mem, dirs: []string{"/l0", "/l1", "/l2"}, kill: !peerSync, rng: rand.New(rand.NewPCG(seed, 1)),
		p: 0.01, max: 25, synced: map[uint64]bool{}, written: map[uint64]bool{}}
	fs := vfs.NewErrorFS(mem, cl)
	logs := make([]*Log, nlogs)
	locks := make([]sync.Mutex, nlogs)
	for i := range logs {
		opts := recOpts(fs, fmt.Sprintf("/l%d", i))
		opts.SegmentSize = 4096
		logs[i], _ = collect(t, opts)
		logs[i].SetPeerSync(peerSync)
	}
	var nextID atomic.Uint64
	var stop atomic.Bool
	errc := make(chan error, committers+flushers)
	var wg, fwg sync.WaitGroup
	for g := 0; g < committers; g++ {
		rng := rand.New(rand.NewPCG(seed, uint64(10+g)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < perCommitter; n++ {
				if err := commitRandom(rng, logs, locks, &nextID, cl); err != nil {
					errc <- err
					stop.Store(true)
					return
				}
			}
		}()
	}
	for g := 0; g < flushers; g++ {
		rng := rand.New(rand.NewPCG(seed, uint64(20+g)))
		fwg.Add(1)
		go func() {
			defer fwg.Done()
			for !stop.Load() {
				i := rng.IntN(nlogs)
				l := logs[i]
				var err error
				if rng.IntN(10) == 0 {
					locks[i].Lock()
					_, _, err = l.Mark()
					locks[i].Unlock()
				} else {
					err = l.Flush(l.AppendedLSN(), rng.IntN(2) == 0)
				}
				if err != nil {
					errc <- err
					stop.Store(true)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		stop.Store(true)
		fwg.Wait()
		for _, l := range logs {
			if err := l.Sync(); err != nil {
				errc <- err
			}
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("committers and flushers still running after 60s: deadlock?\n%s\n%s", dumpLogs(logs), buf[:runtime.Stack(buf, true)])
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	cl.mu.Lock()
	clones := cl.clones
	cl.max = 0
	cl.mu.Unlock()
	for _, l := range logs {
		l.Close()
	}
	t.Logf("%d transactions, %d crash clones", nextID.Load(), len(clones))
	if len(clones) < 5 {
		t.Fatalf("only %d crash clones", len(clones))
	}
	for i, c := range clones {
		if err := checkTxClone(c, nlogs); err != nil {
			t.Fatalf("crash clone %d: %v", i, err)
		}
	}
}

// commitRandom appends one transaction over two or three logs, or a plain record to one log,
// holding the logs' locks in order, and sometimes waits for it as a session would.
func commitRandom(rng *rand.Rand, logs []*Log, locks []sync.Mutex, nextID *atomic.Uint64, cl *txCloner) error {
	val := func() []byte { return bytes.Repeat([]byte{'v'}, 1+rng.IntN(400)) }
	if rng.IntN(4) == 0 {
		i := rng.IntN(len(logs))
		locks[i].Lock()
		_, lsn, err := logs[i].Append(Header{Kind: KindPut, Version: 1}, []byte("plain"), val())
		locks[i].Unlock()
		if err == nil && rng.IntN(2) == 0 {
			err = logs[i].Flush(lsn, rng.IntN(2) == 0)
		}
		return err
	}
	var in []int
	for len(in) < 2 {
		in = in[:0]
		for i := range logs {
			if rng.IntN(3) != 0 {
				in = append(in, i)
			}
		}
	}
	id := nextID.Add(1)
	lsns := map[int]uint64{}
	err := func() error {
		for _, i := range in {
			locks[i].Lock()
			defer locks[i].Unlock()
		}
		// The condition's length depends only on the logs in it: size the parts with a
		// placeholder, then encode where Reserve says they end.
		ends := map[int]Loc{}
		for _, i := range in {
			ends[i] = Loc{}
		}
		extLen := len(txExt(id, ends))
		vals := map[int][][]byte{}
		for _, i := range in {
			var n int64
			for j := 0; j < 1+rng.IntN(3); j++ {
				v := val()
				vals[i] = append(vals[i], v)
				n += RecordSize(extLen, len(txKey(id, i, j)), len(v))
			}
			end, err := logs[i].Reserve(n)
			if err != nil {
				return err
			}
			ends[i] = end
		}
		ext := txExt(id, ends)
		for _, i := range in {
			for j, v := range vals[i] {
				_, lsn, err := logs[i].AppendExt(Header{Kind: KindPut, Flags: FlagTx, Version: id}, ext, []byte(txKey(id, i, j)), v)
				if err != nil {
					return err
				}
				lsns[i] = lsn
			}
		}
		for _, i := range in {
			var peers []Peer
			for _, o := range in {
				if o != i {
					peers = append(peers, Peer{Log: logs[o], LSN: lsns[o]})
				}
			}
			logs[i].AddBarrier(lsns[i], peers)
		}
		return nil
	}()
	if err != nil || rng.IntN(3) == 0 {
		return err
	}
	sync := rng.IntN(2) == 0
	for _, i := range in {
		if err := logs[i].Flush(lsns[i], sync); err != nil {
			return err
		}
	}
	cl.ackMu.Lock()
	cl.written[id] = true
	if sync {
		cl.synced[id] = true
	}
	cl.ackMu.Unlock()
	return nil
}

func txKey(id uint64, log, j int) string { return fmt.Sprintf("t%d.%d.%d", id, log, j) }

// checkTxClone opens the logs of a crash clone and checks every transaction part it holds.
func checkTxClone(c txClone, nlogs int) error {
	logs := make([]*Log, nlogs)
	exts := make([]Extent, nlogs)
	for i := range logs {
		l, err := Open(recOpts(c.fs, fmt.Sprintf("/l%d", i)))
		if err != nil {
			return err
		}
		defer l.Close()
		logs[i], exts[i] = l, l.Extent()
	}
	complete := func(ends map[int]Loc) bool {
		for i, e := range ends {
			if !exts[i].Reached(e.Seg, e.Off) {
				return false
			}
		}
		return true
	}
	seen := map[uint64]map[int]Loc{}
	for i, l := range logs {
		tail := map[Loc]bool{}
		for _, r := range l.TailTx() {
			tail[r.At] = true
		}
		var prev []byte
		err := l.Replay(Loc{}, func(r *Record) error {
			if r.Header.Flags&FlagTx == 0 {
				prev = nil
				return nil
			}
			first := !bytes.Equal(prev, r.Ext)
			prev = append(prev[:0], r.Ext...)
			if !first {
				return nil
			}
			id, ends := decodeTxExt(r.Ext)
			seen[id] = ends
			if !complete(ends) && !tail[r.Loc] {
				return fmt.Errorf("transaction %d is incomplete (ends %v, logs %v) but its part in log %d at %v is not "+
					"where recovery looks for torn tails (%v): what follows it in that log could be kept",
					id, ends, exts, i, r.Loc, l.TailTx())
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for id := range c.acked {
		if ends, ok := seen[id]; !ok || !complete(ends) {
			return fmt.Errorf("transaction %d was flushed in every log before the crash and is not whole after it (%v)", id, ends)
		}
	}
	return nil
}

// TestBarrierWrittenOnlyPowerLoss: with barriers that wait only for their peers to be written
// (appendfsync everysec), log a writes what follows a transaction's part once b's part is
// written, and a's own sync (the keyspace syncs its shards one after the other) makes all of it
// durable while b's part is still only written. A power loss then keeps a's part and what follows
// it and loses b's part: the transaction is incomplete, and recovery must find a's part (TailTx)
// to cut a there, with what followed it. So a's full segment must not count as sealed on its
// sync alone (SealWhenStable): only once a stable cut (SetStable) covers it, which the keyspace
// sets only when every log has synced past a consistent cut.
func TestBarrierWrittenOnlyPowerLoss(t *testing.T) {
	mem := vfs.NewMem()
	a, _ := collect(t, func() Options {
		o := recOpts(mem, "/a")
		o.SegmentSize, o.SealWhenStable = 4096, true
		return o
	}())
	b, _ := collect(t, func() Options { o := recOpts(mem, "/b"); o.SealWhenStable = true; return o }())
	defer a.Close()
	defer b.Close()
	ext := txExt(1, map[int]Loc{0: {}, 1: {}})
	aPart, aEnd, err := a.AppendExt(Header{Kind: KindPut, Flags: FlagTx, Version: 1}, ext, []byte("x"), []byte("part in a"))
	if err != nil {
		t.Fatal(err)
	}
	bPart, bEnd, err := b.AppendExt(Header{Kind: KindPut, Flags: FlagTx, Version: 1}, ext, []byte("y"), []byte("part in b"))
	if err != nil {
		t.Fatal(err)
	}
	a.AddBarrier(aEnd, []Peer{{Log: b, LSN: bEnd}})
	b.AddBarrier(bEnd, []Peer{{Log: a, LSN: aEnd}})
	for i := 0; ; i++ { // what follows in a, into a new segment
		r, _ := appendPut(t, a, i, bytes.Repeat([]byte{'f'}, 300))
		if r.loc.Seg != aPart.Seg {
			break
		}
	}
	if err := a.Flush(a.AppendedLSN(), false); err != nil { // waits for b's part to be written
		t.Fatal(err)
	}
	if err := a.Sync(); err != nil { // a's turn in the once-a-second sync
		t.Fatal(err)
	}
	if lsn, _, err := a.Mark(); err != nil {
		t.Fatal(err)
	} else if err := a.Flush(lsn, true); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone() // before b's turn
	a2, err := Open(recOpts(crashed, "/a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	b2, err := Open(recOpts(crashed, "/b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if b2.Extent().Reached(bPart.Seg, bPart.Off+uint32(RecordSize(len(ext), 1, len("part in b")))) {
		t.Fatal("b's part survived; the test needs it lost")
	}
	if !slices.ContainsFunc(a2.TailTx(), func(r TxRecord) bool { return r.At == aPart }) {
		t.Fatalf("the incomplete transaction's part in a (%v) is not in a's TailTx %v (a recovered as %v)", aPart, a2.TailTx(), a2.Extent())
	}
}

// dumpLogs describes the logs' write state and first barriers, for a test that found them stuck.
func dumpLogs(logs []*Log) string {
	s := ""
	for i, l := range logs {
		l.mu.Lock()
		s += fmt.Sprintf("log %d %p: written %d synced %d appended %d writing %v syncing %v reserved %v\n", i, l, l.boundLocked(writtenOf), l.boundLocked(syncedOf), l.cur().lsnBase+uint64(l.cur().size), l.writing, l.syncing, l.reserved)
		for _, o := range l.open {
			s += fmt.Sprintf("   open seg %d base %d size %d written %d synced %d full %v\n", o.seg.id, o.lsnBase, o.size, o.writtenOff, o.syncedOff, o.full)
		}
		for j, b := range l.barriers {
			if j > 4 {
				break
			}
			s += fmt.Sprintf("   barrier end %d peers", b.end)
			for _, p := range b.peers {
				for k, q := range logs {
					if q == p.Log {
						s += fmt.Sprintf(" L%d@%d", k, p.LSN)
					}
				}
			}
			s += "\n"
		}
		l.mu.Unlock()
	}
	return s
}

// failWrites fails every write under prefix while on.
type failWrites struct {
	prefix string
	on     atomic.Bool
}

func (f *failWrites) MaybeError(op vfs.Op, path string) error {
	if op == vfs.OpWrite && f.on.Load() && strings.HasPrefix(path, f.prefix) {
		return errInjected
	}
	return nil
}

var errInjected = fmt.Errorf("injected write failure")

// TestBarrierPeerFailureClears: a's write leader fails at a transaction's barrier because b
// cannot write its part, which leaves a refusing appends (its error names the peer). Once b
// writes again, whoever resolves that barrier (here a reader's FlushTx, not a's leader) clears
// a's error, and so does a's Retry: a log whose own writes work must not refuse appends for
// ever because a peer failed once.
func TestBarrierPeerFailureClears(t *testing.T) {
	inj := &failWrites{prefix: "/b/"}
	_, a, b := barrierLogs(t, inj)
	_, aEnd := appendPut(t, a, 0, []byte("part of the transaction in a"))
	_, bEnd := appendPut(t, b, 1, []byte("part of the transaction in b"))
	a.AddBarrier(aEnd, []Peer{{Log: b, LSN: bEnd}})
	b.AddBarrier(bEnd, []Peer{{Log: a, LSN: aEnd}})
	_, later := appendPut(t, a, 2, []byte("written after the transaction in a"))

	inj.on.Store(true)
	var we *WriteError
	if err := a.Flush(later, false); !errors.As(err, &we) || !we.Peer {
		t.Fatalf("a's flush past the barrier while b fails: %v, want a peer WriteError", err)
	}
	if _, _, err := a.Append(Header{Kind: KindPut, Version: 9}, []byte("k"), []byte("v")); err == nil {
		t.Fatal("a took an append while its transaction's part in b was not written")
	}
	inj.on.Store(false)
	if err := b.Flush(bEnd, false); err != nil {
		t.Fatal(err)
	}
	if err := a.FlushTx(aEnd, false); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteErr(); err != nil {
		t.Fatalf("a's error stands after its barrier resolved: %v", err)
	}
	if err := a.Retry(); err != nil {
		t.Fatal(err)
	}
	_, end := appendPut(t, a, 3, []byte("after the recovery"))
	if err := a.Flush(end, true); err != nil {
		t.Fatal(err)
	}
	if a.DurableLSN(true) < end {
		t.Fatalf("a durable to %d, want %d", a.DurableLSN(true), end)
	}
}
