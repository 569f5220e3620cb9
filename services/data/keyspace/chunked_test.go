package keyspace

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// chunkTestOpts are testOpts with tiny chunks, so that values of a few hundred bytes are stored
// in many: longer than 40 bytes, in chunks of 16.
func chunkTestOpts(fs vfs.FS, clk *testClock) Options {
	opts := testOpts(fs, clk)
	opts.chunkSize, opts.chunkMin = 16, 40
	return opts
}

// isChunked reports whether (db, key) is stored chunked.
func isChunked(ks *Keyspace, db int, key string) bool {
	h := ks.hash(uint8(db), []byte(key))
	s := ks.shardOf(h)
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, _, ok := s.ix.find(uint32(h), uint8(db), []byte(key))
	return ok && s.ix.entry(i).chunked()
}

// writeAt runs Tx.WriteAt on one key (an APPEND when off < 0) and waits for it.
func writeAt(t testing.TB, ks *Keyspace, se *Session, db int, key string, off int64, patch []byte) {
	t.Helper()
	err := ks.Update(se, []Key{{DB: db, Key: []byte(key)}}, func(tx *Tx) error {
		at := off
		if off < 0 {
			m, _ := tx.Meta(0)
			at = int64(m.Len)
		}
		return tx.WriteAt(0, at, patch, TypeString|RawHint)
	})
	if err == nil {
		err = se.Wait()
	}
	if err != nil {
		t.Fatalf("WriteAt %d/%q at %d (%d bytes): %v", db, key, off, len(patch), err)
	}
}

// modelWriteAt is WriteAt on a []byte.
func modelWriteAt(v []byte, off int, patch []byte) []byte {
	if off < 0 {
		off = len(v)
	}
	nv := make([]byte, max(len(v), off+len(patch)))
	copy(nv, v)
	copy(nv[off:], patch)
	return nv
}

func getRange(t testing.TB, ks *Keyspace, db int, key string, from, to int) ([]byte, bool) {
	t.Helper()
	var got []byte
	ok, err := ks.getRangeBytes(db, []byte(key), func(n int) (int, int) {
		f := min(from, n)
		return f, max(f, min(to, n))
	}, func(part []byte, _ Meta) { got = append([]byte(nil), part...) })
	if err != nil {
		t.Fatalf("GetRange %d/%q [%d, %d): %v", db, key, from, to, err)
	}
	return got, ok
}

// checkChunkedModel compares every key of model (db 0) with ks: whole values, lengths, the
// storage form (chunked exactly when longer than the threshold, since edits never shrink a
// value), and ranges at and around every chunk boundary and at random.
func checkChunkedModel(t *testing.T, ks *Keyspace, model map[string][]byte, rng *rand.Rand, when string) {
	t.Helper()
	cs := ks.opts.chunkSize
	for k, v := range model {
		got, m, ok := getString(t, ks, 0, k)
		if !ok || got != string(v) || m.Len != len(v) {
			t.Fatalf("%s: %q = %d bytes (present %v, Len %d), want %d bytes %q", when, k, len(got), ok, m.Len, len(v), short(string(v)))
		}
		if lm, _ := ks.Lookup(nil, 0, []byte(k)); lm.Len != len(v) {
			t.Fatalf("%s: Lookup(%q).Len = %d, want %d", when, k, lm.Len, len(v))
		}
		if c := isChunked(ks, 0, k); c != (len(v) > ks.opts.chunkMin) {
			t.Fatalf("%s: %q of %d bytes: chunked %v", when, k, len(v), c)
		}
		var spans [][2]int
		for b := 0; b <= len(v)+cs; b += cs {
			spans = append(spans, [2]int{b, b + cs}, [2]int{max(b-1, 0), b + 1}, [2]int{b + 3, b + 2*cs + 5})
		}
		for range 10 {
			from := rng.IntN(len(v) + 10)
			spans = append(spans, [2]int{from, from + rng.IntN(3*cs)})
		}
		for _, sp := range spans {
			got, ok := getRange(t, ks, 0, k, sp[0], sp[1])
			f := min(sp[0], len(v))
			want := v[f:max(f, min(sp[1], len(v)))]
			if !ok || !bytes.Equal(got, want) {
				t.Fatalf("%s: %q [%d, %d) of %d bytes = %q (present %v), want %q", when, k, sp[0], sp[1], len(v), got, ok, want)
			}
		}
	}
	var n int
	ks.Keys(nil, 0, func([]byte, Meta) { n++ })
	if n != len(model) {
		t.Fatalf("%s: %d keys, want %d", when, n, len(model))
	}
	if err := checkAccounting(ks); err != nil {
		t.Fatalf("%s: %v", when, err)
	}
}

// TestChunkedRoundTrip writes, appends to and overwrites parts of values across the chunking
// threshold and across chunk boundaries, against a []byte model, and compares them whole and
// in ranges after every step and after restarts (from a checkpoint and the log tail, and by a
// full replay).
func TestChunkedRoundTrip(t *testing.T) {
	seed := testSeed(t)
	for _, ckpt := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoints=%v", ckpt), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			clk := newTestClock()
			opts := chunkTestOpts(vfs.NewMem(), clk)
			opts.Shards, opts.SegmentSize = 2, 512
			if !ckpt {
				opts.CheckpointInterval = -1
			}
			ks := mustOpen(t, opts)
			se := ks.NewSession()
			defer func() { mustClose(t, ks) }()
			model := map[string][]byte{}
			pat := func(n int, c byte) []byte {
				b := make([]byte, n)
				for i := range b {
					b[i] = c + byte(i%7)
				}
				return b
			}
			put := func(k string, v []byte) {
				mustPut(t, ks, se, 0, k, string(v), 0)
				model[k] = v
			}
			edit := func(k string, off int, patch []byte) {
				writeAt(t, ks, se, 0, k, int64(off), patch)
				model[k] = modelWriteAt(model[k], off, patch)
			}
			step := func(what string) {
				t.Helper()
				checkChunkedModel(t, ks, model, rng, what)
			}
			restart := func() {
				t.Helper()
				mustClose(t, ks)
				ks = mustOpen(t, opts)
				se = ks.NewSession()
				step("after a restart")
			}

			put("a", pat(40, 'a'))
			step("40 bytes: one record")
			put("a", pat(41, 'b'))
			step("41 bytes: chunked")
			put("a", pat(40, 'c'))
			step("back to one record")
			edit("b", -1, pat(30, 'd'))
			edit("b", -1, pat(10, 'e'))
			step("appended to 40")
			edit("b", -1, pat(1, 'f'))
			step("APPEND across the threshold")
			edit("c", 100, pat(5, 'g'))
			step("SETRANGE creating a chunked value")
			put("a", pat(100, 'h'))
			edit("a", 10, pat(20, 'i'))
			step("SETRANGE over two chunks in part")
			edit("a", 16, pat(16, 'j'))
			step("SETRANGE of exactly one chunk")
			edit("a", 99, pat(3, 'k'))
			step("SETRANGE growing the last chunk")
			edit("a", 250, pat(7, 'l'))
			step("SETRANGE past the end: a gap of zero chunks")
			edit("a", -1, pat(13, 'm'))
			edit("a", -1, pat(32, 'n'))
			step("APPEND to chunk boundaries")
			edit("a", 0, nil)
			step("empty patch")
			edit("d", 0, pat(30, 'o'))
			edit("d", 20, pat(30, 'p'))
			step("SETRANGE growing a small value past the threshold")
			restart()

			names := []string{"a", "b", "c", "d", "e", "f"}
			for i := 0; i < 600; i++ {
				k := names[rng.IntN(len(names))]
				n := len(model[k])
				switch r := rng.IntN(10); {
				case r < 2:
					put(k, pat(rng.IntN(200), byte('A'+i%26)))
				case r < 5:
					edit(k, -1, pat(rng.IntN(60), byte('a'+i%26)))
				case r < 9:
					edit(k, rng.IntN(n+40), pat(rng.IntN(70), byte('0'+i%10)))
				default:
					if err := ks.Update(se, []Key{{Key: []byte(k)}}, func(tx *Tx) error { tx.Delete(0); return nil }); err != nil {
						t.Fatal(err)
					}
					delete(model, k)
				}
				if i%50 == 0 {
					step(fmt.Sprintf("random op %d", i))
				}
				if i%200 == 199 {
					restart()
				}
			}
			step("after the random ops")
			restart()
		})
	}
}

// TestChunkedTxView checks what a transaction sees of its own edits of a chunked value: Meta and
// Value after one or two WriteAt, and WriteAt combined with SetExpire, Delete and Put.
func TestChunkedTxView(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, chunkTestOpts(vfs.NewMem(), clk))
	defer mustClose(t, ks)
	se := ks.NewSession()
	base := strings.Repeat("0123456789abcdef", 10) // 160 bytes, 10 chunks
	exp := clk.After(60_000)
	mustPut(t, ks, se, 0, "k", base, exp)
	keys := []Key{{Key: []byte("k")}}
	want := []byte(base)
	err := ks.Update(se, keys, func(tx *Tx) error {
		if err := tx.WriteAt(0, 20, []byte("XXXX"), TypeString|RawHint); err != nil {
			return err
		}
		if err := tx.WriteAt(0, 170, []byte("YY"), TypeString|RawHint); err != nil {
			return err
		}
		m, ok := tx.Meta(0)
		if !ok || m.Len != 172 || m.ExpireAt != exp || !m.Raw {
			return fmt.Errorf("Meta after two edits: %+v", m)
		}
		v, _, err := tx.Value(0)
		if err != nil {
			return err
		}
		w := modelWriteAt(modelWriteAt([]byte(base), 20, []byte("XXXX")), 170, []byte("YY"))
		if !bytes.Equal(v, w) {
			return fmt.Errorf("Value after two edits = %q, want %q", v, w)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want = modelWriteAt(modelWriteAt(want, 20, []byte("XXXX")), 170, []byte("YY"))
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	got, m, _ := getString(t, ks, 0, "k")
	if got != string(want) || m.ExpireAt != exp || !isChunked(ks, 0, "k") {
		t.Fatalf("after commit: %q %+v, want %q", got, m, want)
	}

	// SetExpire after an edit keeps the edit; Put after one replaces it; Delete drops it.
	exp2 := clk.After(90_000)
	err = ks.Update(se, keys, func(tx *Tx) error {
		if err := tx.WriteAt(0, 0, []byte("Z"), TypeString|RawHint); err != nil {
			return err
		}
		tx.SetExpire(0, exp2)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want[0] = 'Z'
	if got, m, _ := getString(t, ks, 0, "k"); got != string(want) || m.ExpireAt != exp2 {
		t.Fatalf("edit then SetExpire: %q %+v", got, m)
	}
	err = ks.Update(se, keys, func(tx *Tx) error {
		if err := tx.WriteAt(0, 0, []byte("Q"), TypeString); err != nil {
			return err
		}
		tx.Put(0, []byte("short"), 0, TypeString)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, m, _ := getString(t, ks, 0, "k"); got != "short" || m.ExpireAt != 0 || isChunked(ks, 0, "k") {
		t.Fatalf("edit then Put: %q %+v", got, m)
	}
	mustPut(t, ks, se, 0, "k", base, 0)
	err = ks.Update(se, keys, func(tx *Tx) error {
		if err := tx.WriteAt(0, 0, []byte("Q"), TypeString); err != nil {
			return err
		}
		if !tx.Delete(0) || tx.Exists(0) {
			return errors.New("Delete after WriteAt")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantMissing(t, ks, 0, "k")
	if err := checkAccounting(ks); err != nil {
		t.Fatal(err)
	}
}

// engineDelta runs f and returns the engine reads and bytes it caused and the log bytes it
// appended (over every shard).
func engineDelta(ks *Keyspace, f func()) (reads, readBytes, appended uint64) {
	// Bytes appended, less the mark records the background sync may append meanwhile (a slow
	// run, -race, can see one): they are no part of the operation measured.
	appendedNow := func() uint64 {
		var n uint64
		for _, s := range ks.shards {
			n += s.log.AppendedLSN() - s.log.Stats().Marks*uint64(vlog.RecordSize(0, 0, 0))
		}
		return n
	}
	e0, a0 := ks.opts.Engine.Stats(), appendedNow()
	f()
	e1, a1 := ks.opts.Engine.Stats(), appendedNow()
	return e1.Reads - e0.Reads, e1.Bytes - e0.Bytes, a1 - a0
}

// TestChunkedEngineCounters is the requirement: on a 100 MB string, GETRANGE, SETRANGE
// and APPEND of 100 bytes touch only the chunks they need, which the engine's read counters and
// the log's appended bytes show. The value cache is off and every write is synced, so every
// read goes to the engine (the pread engine counts exactly the bytes of each record: memory
// files are not read with O_DIRECT).
func TestChunkedEngineCounters(t *testing.T) {
	if invariants {
		t.Skip("counts reads, and the invariants build reads records back")
	}
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	opts.Shards, opts.SegmentSize, opts.ReclaimRate = 1, 64<<20, 0
	ks := mustOpen(t, opts)
	defer func() { mustClose(t, ks) }()
	se := ks.NewSession()
	const n = 100<<20 + 1234 // the last chunk partial
	val := make([]byte, n)
	for i := range val {
		val[i] = byte(i*7 + i>>13)
	}
	key := "big"
	if err := ks.Put(se, 0, []byte(key), val, 0, TypeString); err != nil {
		t.Fatal(err)
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	manRec := uint64(vlog.RecordSize(0, len(key), manifestSize(n, ChunkSize)))
	chunkRec := uint64(vlog.RecordSize(0, oidSize, ChunkSize))
	t.Logf("100 MB value: %d chunks, manifest record %d bytes, chunk record %d", chunkCount(n, ChunkSize), manRec, chunkRec)

	reads, bytesRead, _ := engineDelta(ks, func() {
		if m, ok := ks.Lookup(nil, 0, []byte(key)); !ok || m.Len != n {
			t.Fatalf("STRLEN: %+v %v", m, ok)
		}
	})
	if reads != 0 {
		t.Fatalf("STRLEN read %d records", reads)
	}

	mid := 50*ChunkSize*128 - 50 // 100 bytes across a chunk boundary in the middle
	reads, bytesRead, _ = engineDelta(ks, func() {
		got, _ := getRange(t, ks, 0, key, mid, mid+100)
		if !bytes.Equal(got, val[mid:mid+100]) {
			t.Fatal("GETRANGE returned other bytes")
		}
	})
	t.Logf("GETRANGE of 100 bytes: %d reads, %d bytes", reads, bytesRead)
	if reads > 3 || bytesRead > manRec+2*chunkRec {
		t.Fatalf("GETRANGE of 100 bytes: %d reads of %d bytes; want at most the manifest and 2 chunks (%d bytes)", reads, bytesRead, manRec+2*chunkRec)
	}

	patch := bytes.Repeat([]byte("S"), 100)
	reads, bytesRead, appended := engineDelta(ks, func() { writeAt(t, ks, se, 0, key, int64(mid), patch) })
	copy(val[mid:], patch)
	t.Logf("SETRANGE of 100 bytes: %d reads, %d bytes; %d bytes appended", reads, bytesRead, appended)
	if reads > 3 || bytesRead > manRec+2*chunkRec || appended > manRec+2*chunkRec {
		t.Fatalf("SETRANGE of 100 bytes: %d reads of %d bytes, %d bytes appended; want at most the manifest and 2 chunks (%d bytes) each way",
			reads, bytesRead, appended, manRec+2*chunkRec)
	}

	for i := 0; i < 2; i++ { // the first APPEND fills the partial last chunk, the second starts one
		suffix := bytes.Repeat([]byte{byte('0' + i)}, 100)
		if i == 1 {
			suffix = bytes.Repeat([]byte{'1'}, ChunkSize)
		}
		reads, bytesRead, appended = engineDelta(ks, func() { writeAt(t, ks, se, 0, key, -1, suffix) })
		val = append(val, suffix...)
		t.Logf("APPEND of %d bytes: %d reads, %d bytes; %d bytes appended", len(suffix), reads, bytesRead, appended)
		man := uint64(vlog.RecordSize(0, len(key), manifestSize(int64(len(val)), ChunkSize)))
		if reads > 2 || bytesRead > man+chunkRec || appended > man+2*chunkRec {
			t.Fatalf("APPEND: %d reads of %d bytes, %d bytes appended; want at most the manifest and the last chunk read, 2 chunks and a manifest written",
				reads, bytesRead, appended)
		}
	}

	check := func(when string) {
		got, m, ok := getString(t, ks, 0, key)
		if !ok || m.Len != len(val) || got != string(val) {
			t.Fatalf("%s: GET differs from the model (%d bytes, want %d)", when, len(got), len(val))
		}
	}
	check("GET")
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	check("GET after a restart")
	reads, bytesRead, _ = engineDelta(ks, func() {
		got, _ := getRange(t, ks, 0, key, mid, mid+100)
		if !bytes.Equal(got, val[mid:mid+100]) {
			t.Fatal("GETRANGE after the restart returned other bytes")
		}
	})
	manRec = uint64(vlog.RecordSize(0, len(key), manifestSize(int64(len(val)), ChunkSize)))
	if reads > 3 || bytesRead > manRec+2*chunkRec {
		t.Fatalf("GETRANGE after a restart: %d reads of %d bytes", reads, bytesRead)
	}
}

// TestChunkedCrashDuringWrite crashes before every file-system call of a chunked SET, SETRANGE
// and APPEND (small segments, so the chunks cross rotations): each key recovers to its old value
// or its new one, never a mixture, never a torn or missing chunk, and the accounting is exact.
func TestChunkedCrashDuringWrite(t *testing.T) {
	for _, random := range []bool{false, true} {
		t.Run(fmt.Sprintf("torn=%v", random), func(t *testing.T) {
			seed := testSeed(t)
			clk := newTestClock()
			mem := vfs.NewMem()
			cr := &crasher{mem: mem}
			if random {
				cr.rng = rand.New(rand.NewPCG(seed, 3))
			}
			opts := chunkTestOpts(vfs.NewErrorFS(mem, cr), clk)
			opts.Shards, opts.SegmentSize = 1, 256
			ks := mustOpen(t, opts)
			se := ks.NewSession()
			old := strings.Repeat("old-value.", 30)
			mustPut(t, ks, se, 0, "k", old, 0)
			type op struct {
				name string
				run  func()
				want string
			}
			newVal := strings.Repeat("new-value!", 25)
			ops := []op{
				{"set", func() { mustPut(t, ks, se, 0, "k", newVal, 0) }, newVal},
				{"setrange", func() { writeAt(t, ks, se, 0, "k", 30, []byte(strings.Repeat("#", 40))) },
					string(modelWriteAt([]byte(newVal), 30, []byte(strings.Repeat("#", 40))))},
				{"append", func() { writeAt(t, ks, se, 0, "k", -1, []byte(strings.Repeat("+", 50))) }, ""},
			}
			ops[2].want = ops[1].want + strings.Repeat("+", 50)
			prev := old
			for _, o := range ops {
				cr.mu.Lock()
				cr.every, cr.clones = true, nil
				cr.mu.Unlock()
				o.run()
				cr.mu.Lock()
				cr.every = false
				clones := append(cr.clones, mem.CrashClone())
				cr.mu.Unlock()
				if len(clones) < 3 {
					t.Fatalf("%s: only %d crash points", o.name, len(clones))
				}
				states := map[string]int{}
				for i, c := range clones {
					o2 := chunkTestOpts(c, clk)
					o2.Shards, o2.SegmentSize = 1, 256
					rks := mustOpen(t, o2)
					got, _, ok := getString(t, rks, 0, "k")
					switch {
					case ok && got == prev:
						states["old"]++
					case ok && got == o.want:
						states["new"]++
					default:
						t.Fatalf("%s: crash %d of %d recovered %q (present %v); want the old or the new value", o.name, i+1, len(clones), short(got), ok)
					}
					if i == len(clones)-1 && got != o.want {
						t.Fatalf("%s: the acknowledged write was lost", o.name)
					}
					if err := checkAccounting(rks); err != nil {
						t.Fatalf("%s: crash %d: %v", o.name, i+1, err)
					}
					mustClose(t, rks)
				}
				t.Logf("%s: %d crash points: %v", o.name, len(clones), states)
				prev = o.want
			}
			mustClose(t, ks)
		})
	}
}

// TestChunkedReclaimCrashEachStep collects segments holding chunks, with a crash before every
// file-system change of each collection (reclaimScenario): live chunks are moved with a new
// manifest, dead ones dropped, a segment holding a removed value's manifest is dropped only
// once its chunks are accounted for, and nothing is lost or resurrected, with full replays and
// from checkpoints.
func TestChunkedReclaimCrashEachStep(t *testing.T) {
	big := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	runReclaimCases(t, func(o *Options) { o.chunkSize, o.chunkMin = 64, 100 }, []reclaimCase{
		{"expires-while-moving", func(c *reclaimScenario, ckpt bool) {
			// The manifest is live when the segment is read and its key expires before
			// the moves, which writes no record: the older put must stay hidden.
			c.put(0, "v", "old", 0)
			s1 := c.seal()
			c.put(0, "v", big('b', 300), c.clk.After(100))
			s2 := c.seal()
			if ckpt {
				c.checkpoint()
			}
			c.ks.opts.afterScan = func() { c.clk.Advance(200) }
			c.collect(s2)
			c.ks.opts.afterScan = nil
			c.restart()
			c.collect(s1)
			c.finish()
		}},
		{"live-chunks-moved", func(c *reclaimScenario, ckpt bool) {
			s0 := c.active()
			c.put(0, "v", big('a', 700), 0) // 11 chunks over two segments
			s1 := c.active()
			if ckpt {
				c.checkpoint()
			}
			c.seal()
			c.put(0, "w", big('b', 600), 0)
			c.collect(s0) // chunks only: moved with a new manifest
			c.collect(s1) // chunks and the manifest
			c.collect(c.seal())
			c.restart()
			c.finish()
		}},
		{"edited", func(c *reclaimScenario, ckpt bool) {
			s0 := c.active()
			c.put(0, "v", big('a', 900), 0)
			s1 := c.active()
			c.seal()
			if ckpt {
				c.checkpoint()
			}
			c.writeAt(0, "v", 10, big('x', 100)) // replaces chunks 0-6: dead chunks beside live ones
			c.writeAt(0, "v", -1, big('y', 70))
			c.collect(s0)
			c.collect(s1)
			c.collect(c.seal())
			c.restart()
			c.finish()
		}},
		{"deleted", func(c *reclaimScenario, ckpt bool) {
			s0 := c.active()
			c.put(0, "v", big('a', 900), 0)
			s1 := c.active()
			if ckpt {
				c.checkpoint()
			}
			c.seal()
			c.del(0, "v") // the manifest is queued; its chunks die when the collector reads it
			s2 := c.seal()
			c.collect(s1) // holds the queued manifest
			c.collect(s0)
			c.collect(s2)
			c.finish()
		}},
		{"overwritten-and-expired", func(c *reclaimScenario, ckpt bool) {
			c.put(0, "v", big('a', 900), 0)
			s1 := c.active()
			c.seal()
			if ckpt {
				c.checkpoint()
			}
			c.put(0, "v", big('b', 300), c.clk.After(100))
			s2 := c.seal()
			c.clk.Advance(200) // expires: removed on access, writes no record
			c.collect(s2)
			c.collect(s1)
			c.finish()
		}},
	})
}

// writeAt edits a value of the scenario (an APPEND when off < 0).
func (c *reclaimScenario) writeAt(db int, key string, off int, patch string) {
	c.t.Helper()
	writeAt(c.t, c.ks, c.se, db, key, int64(off), []byte(patch))
	v := c.model[dbKey{db, key}]
	v.val = string(modelWriteAt([]byte(v.val), off, []byte(patch)))
	c.model[dbKey{db, key}] = v
}

// TestChunkedCheckpointCrash crashes before every file-system call of checkpoints taken while
// chunked values are written, edited, moved by the collector and deleted between the chunks of
// the copy; every crash recovers each key to a state at or after its last acknowledged write.
// Then a restart from the last checkpoint and a full replay of the same files give the same
// strings.
func TestChunkedCheckpointCrash(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	clk := newTestClock()
	mem := vfs.NewMem()
	cr := &crasher{mem: mem}
	opts := chunkTestOpts(vfs.NewErrorFS(mem, cr), clk)
	opts.Shards, opts.SegmentSize, opts.ckptChunk = 2, 512, 1
	var h ckptHooks
	h.install(&opts)
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	keys := []string{"a", "b", "c", "d", "e"}
	type ack struct {
		state  int // index into history[key]
		clones int // clones taken before the acknowledgement
	}
	history := map[string][]string{} // "" = absent
	acks := map[string][]ack{}
	for _, k := range keys {
		history[k], acks[k] = []string{""}, []ack{{0, 0}}
	}
	write := func() {
		k := keys[rng.IntN(len(keys))]
		cur := history[k][len(history[k])-1]
		var next string
		switch r := rng.IntN(10); {
		case r < 3:
			next = strings.Repeat(string(rune('A'+rng.IntN(26))), 50+rng.IntN(300))
			mustPut(t, ks, se, 0, k, next, 0)
		case r < 8:
			off := rng.IntN(len(cur) + 30)
			patch := strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(60))
			next = string(modelWriteAt([]byte(cur), off, []byte(patch)))
			writeAt(t, ks, se, 0, k, int64(off), []byte(patch))
		default:
			if err := ks.Update(se, []Key{{Key: []byte(k)}}, func(tx *Tx) error { tx.Delete(0); return nil }); err != nil {
				t.Fatal(err)
			}
			if err := se.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		history[k] = append(history[k], next)
		cr.mu.Lock()
		n := len(cr.clones)
		cr.mu.Unlock()
		acks[k] = append(acks[k], ack{len(history[k]) - 1, n})
	}
	for range 30 {
		write()
	}
	var clones []*vfs.MemFS
	for round := 0; round < 4; round++ {
		cr.mu.Lock()
		cr.every, cr.clones = true, nil
		cr.mu.Unlock()
		for k := range acks {
			acks[k] = acks[k][len(acks[k])-1:]
			acks[k][0].clones = 0
		}
		h.between = func() {
			write()
			if rng.IntN(3) == 0 {
				ckptReclaimAll(t, ks, rng)
			}
		}
		if err := ks.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		h.between = nil
		cr.mu.Lock()
		cr.every = false
		clones = cr.clones
		cr.clones = nil
		cr.mu.Unlock()
		for i, c := range clones {
			o := opts
			o.FS, o.ckptHook = c, nil
			rks := mustOpen(t, o)
			if st := ckptStats(rks); st.Rejected != 0 {
				t.Fatalf("round %d crash %d: checkpoint rejected", round, i)
			}
			for _, k := range keys {
				got, _, ok := getString(t, rks, 0, k)
				if !ok {
					got = ""
				}
				lo := 0
				for _, a := range acks[k] {
					if a.clones <= i {
						lo = a.state
					}
				}
				if !slices.Contains(history[k][lo:], got) {
					t.Fatalf("round %d crash %d of %d: %q = %q, no state at or after its acknowledged one %d", round, i+1, len(clones), k, short(got), lo)
				}
			}
			if err := checkAccounting(rks); err != nil {
				t.Fatalf("round %d crash %d: %v", round, i+1, err)
			}
			mustClose(t, rks)
		}
		t.Logf("round %d: %d crash points", round, len(clones))
	}
	mustClose(t, ks)
	// The same files: from the checkpoint and the tail, and by a full replay.
	state := func(fs vfs.FS, ckpt bool) map[string]string {
		o := chunkTestOpts(fs, clk)
		o.Shards, o.SegmentSize = 2, 512
		if !ckpt {
			o.CheckpointInterval = -1
		}
		rks := mustOpen(t, o)
		defer mustClose(t, rks)
		if ckpt && ckptStats(rks).LoadedEntries == 0 {
			t.Fatal("no checkpoint loaded")
		}
		st := map[string]string{}
		for _, k := range keys {
			if v, _, ok := getString(t, rks, 0, k); ok {
				st[k] = v
			}
		}
		return st
	}
	final := mem.CrashClone()
	a, b := state(final.CrashClone(), true), state(final, false)
	for _, k := range keys {
		if a[k] != b[k] || a[k] != history[k][len(history[k])-1] {
			t.Fatalf("%q: %q from the checkpoint, %q by a full replay, written %q", k, short(a[k]), short(b[k]), short(history[k][len(history[k])-1]))
		}
	}
}

// TestChunkedReclaimFreesSpace overwrites a large value several times (SET, SETRANGE, APPEND),
// lets the collector run, and checks that disk use comes back near the live data; then deletes
// it (and lets another expire) and checks that the space of the dead chunks comes back too,
// down to about a segment per shard, and that nothing returns after a restart.
func TestChunkedReclaimFreesSpace(t *testing.T) {
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	opts.SegmentSize = 64 << 10
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	const n = 1 << 20
	for r := 0; r < 5; r++ {
		mustPut(t, ks, se, 0, "big", strings.Repeat(string(rune('a'+r)), n), 0)
		writeAt(t, ks, se, 0, "big", int64(r*100_000), bytes.Repeat([]byte("x"), 50_000))
		writeAt(t, ks, se, 0, "big", -1, bytes.Repeat([]byte("y"), 20_000))
	}
	mustPut(t, ks, se, 0, "temp", strings.Repeat("t", n/2), clk.After(1000))
	before := ks.Stats(nil)
	reclaimUntilIdle(t, ks)
	st := ks.Stats(nil)
	t.Logf("overwritten: disk %d bytes before reclaiming, %d after; live %d", before.Log.DiskBytes, st.Log.DiskBytes, st.Reclaim.LiveBytes)
	// The policy leaves segments up to half dead while disk use is within 1.5 times the live data.
	if st.Reclaim.LiveBytes < n || st.Log.DiskBytes > st.Reclaim.LiveBytes*3/2+int64(2*opts.Shards)*opts.SegmentSize {
		t.Fatalf("after overwrites: disk %d bytes, live %d", st.Log.DiskBytes, st.Reclaim.LiveBytes)
	}
	if err := ks.Update(se, []Key{{Key: []byte("big")}}, func(tx *Tx) error { tx.Delete(0); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2000)
	for _, s := range ks.shards {
		for ks.expireShard(s) > 0 {
		}
	}
	reclaimUntilIdle(t, ks)
	st = ks.Stats(nil)
	t.Logf("deleted: disk %d bytes, live %d, %d segments", st.Log.DiskBytes, st.Reclaim.LiveBytes, st.Log.Segments)
	if st.Reclaim.LiveBytes != 0 || st.Log.DiskBytes > int64(opts.Shards)*opts.SegmentSize {
		t.Fatalf("after deleting: disk %d bytes, live %d; want at most a segment a shard", st.Log.DiskBytes, st.Reclaim.LiveBytes)
	}
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	defer mustClose(t, ks)
	if n := ks.DBSize(nil, 0); n != 0 {
		t.Fatalf("%d keys came back: %v", n, keysOf(ks, 0))
	}
}

// TestChunkedConcurrentReads reads chunked values while writers replace them (SET), rewrite them
// whole in place (WriteAt) and append to them, and collections (the background collector, and
// random segments collected whatever the policy says) move chunks and drop their segments:
// every read sees one value whole (all its bytes written by the same write), never a mixture or
// an error, since a reader whose chunks moved looks again.
func TestChunkedConcurrentReads(t *testing.T) {
	clk := newTestClock()
	opts := chunkTestOpts(vfs.NewMem(), clk)
	opts.chunkSize, opts.chunkMin = 32, 100
	opts.SegmentSize, opts.ReclaimRate, opts.Fsync = 2<<10, 1<<30, vlog.FsyncEverysec
	ks := mustOpen(t, opts)
	defer mustClose(t, ks)
	keys := []string{"p", "q", "r", "stable", "grow"}
	se := ks.NewSession()
	for _, k := range keys {
		mustPut(t, ks, se, 0, k, strings.Repeat("@", 300), 0)
	}
	churn := keys[:3]
	uniform := func(b []byte) bool {
		for _, c := range b {
			if c != b[0] {
				return false
			}
		}
		return true
	}
	iters := 3000
	if raceEnabled {
		iters = 500
	}
	var stop atomic.Bool
	var writers, readers sync.WaitGroup
	errc := make(chan error, 8)
	for w := 0; w < 2; w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			se := ks.NewSession()
			// The iterations, and on a busy machine more until the collector has moved
			// something while the readers run.
			start := time.Now()
			more := func(i int) bool {
				return i < iters || ks.rc.moved.Load() == 0 && time.Since(start) < 30*time.Second
			}
			for i := 0; more(i) && !stop.Load(); i++ {
				k := churn[(i+w)%len(churn)]
				c := byte('A' + (i+w*13)%26)
				var err error
				switch {
				case w == 1 && i%4 == 1:
					// Appends keep the value uniform and leave its old chunks live among
					// the dead ones: the collector has chunks to move.
					err = ks.Update(se, []Key{{Key: []byte("grow")}}, func(tx *Tx) error {
						m, _ := tx.Meta(0)
						return tx.WriteAt(0, int64(m.Len), bytes.Repeat([]byte{'@'}, 7), TypeString)
					})
				case i%2 == 0:
					err = ks.Put(se, 0, []byte(k), bytes.Repeat([]byte{c}, 200+i%200), 0, TypeString)
				default:
					err = ks.Update(se, []Key{{Key: []byte(k)}}, func(tx *Tx) error {
						m, _ := tx.Meta(0)
						return tx.WriteAt(0, 0, bytes.Repeat([]byte{c}, m.Len), TypeString)
					})
				}
				if err == nil {
					err = se.Wait()
				}
				if err != nil {
					errc <- err
					stop.Store(true)
					return
				}
				if i%10 == 0 {
					ks.SetReclaimRate(opts.ReclaimRate) // wake the collector
				}
			}
		}()
	}
	readers.Add(1)
	go func() {
		defer readers.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		for !stop.Load() {
			if _, err := reclaimRandom(ks, rng, 2); err != nil {
				errc <- err
				stop.Store(true)
				return
			}
		}
	}()
	for r := 0; r < 3; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; !stop.Load(); i++ {
				k := keys[(i+r)%len(keys)]
				var got []byte
				var err error
				switch i % 3 {
				case 0:
					_, err = ks.getBytes(0, []byte(k), func(v []byte, _ Meta) { got = append([]byte(nil), v...) })
				case 1:
					_, err = ks.getRangeBytes(0, []byte(k), func(n int) (int, int) { return n / 3, n }, func(v []byte, _ Meta) { got = append([]byte(nil), v...) })
				default:
					err = ks.Update(ks.NewSession(), []Key{{Key: []byte(k)}}, func(tx *Tx) error {
						v, _, err := tx.Value(0)
						got = append([]byte(nil), v...)
						return err
					})
				}
				if err == nil && !uniform(got) {
					err = fmt.Errorf("read of %q saw a mixture: %q", k, got)
				}
				if err != nil {
					errc <- err
					stop.Store(true)
					return
				}
			}
		}()
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	st := ks.Stats(nil).Reclaim
	t.Logf("collector: %d segments, %d bytes moved; reads that looked again after their chunks moved: %d",
		st.Segments, st.BytesMoved, ks.stats.moved.Load())
	if st.BytesMoved == 0 {
		t.Fatal("the collector moved nothing while the readers ran")
	}
	if err := checkAccounting(ks); err != nil {
		t.Fatal(err)
	}
}

// TestChunkedDiskFull fills the disk in the middle of a chunked write that spans several
// segments. Rotating to a new segment waits for no disk, so the write takes effect in memory and
// its durability wait reports the full disk; while the error stands the log takes no more, reads
// go on, and once space returns a retry writes everything: the value survives a crash and the
// accounting is exact.
func TestChunkedDiskFull(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	full := vfs.NewToggle(syscall.ENOSPC, vfs.OpWrite)
	opts := chunkTestOpts(vfs.NewErrorFS(mem, full), clk)
	opts.Shards, opts.SegmentSize = 1, 512
	ks := mustOpen(t, opts)
	defer func() { mustClose(t, ks) }()
	se := ks.NewSession()
	old := strings.Repeat("o", 300)
	mustPut(t, ks, se, 0, "k", old, 0)
	full.Enable()
	newVal := strings.Repeat("n", 2000)
	if err := ks.Put(se, 0, []byte("k"), []byte(newVal), 0, TypeString); err != nil {
		t.Fatalf("a chunked write in memory failed: %v", err)
	}
	if err := se.Wait(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("durability wait with a full disk: %v, want ENOSPC", err)
	}
	if err := ks.Put(se, 0, []byte("other"), []byte("x"), 0, TypeString); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write while the disk is full: %v, want ENOSPC", err)
	}
	wantValue(t, ks, 0, "k", newVal)
	if got, _ := getRange(t, ks, 0, "k", 100, 120); string(got) != newVal[100:120] {
		t.Fatalf("GETRANGE with a full disk: %q", got)
	}
	// Nothing of the new value is durable yet: a crash now keeps the old one.
	if crashed := mem.CrashClone(); true {
		o2 := chunkTestOpts(crashed, clk)
		o2.Shards, o2.SegmentSize = 1, 512
		rks := mustOpen(t, o2)
		wantValue(t, rks, 0, "k", old)
		mustClose(t, rks)
	}
	full.Disable()
	if err := ks.shards[0].log.Retry(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	writeAt(t, ks, se, 0, "k", 250, []byte(strings.Repeat("x", 100)))
	want := string(modelWriteAt([]byte(newVal), 250, []byte(strings.Repeat("x", 100))))
	wantValue(t, ks, 0, "k", want)
	if err := checkAccounting(ks); err != nil {
		t.Fatal(err)
	}
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	wantValue(t, ks, 0, "k", want)
	if err := checkAccounting(ks); err != nil {
		t.Fatal(err)
	}
	o2 := chunkTestOpts(crashed, clk)
	o2.Shards, o2.SegmentSize = 1, 512
	rks := mustOpen(t, o2)
	defer mustClose(t, rks)
	wantValue(t, rks, 0, "k", newVal) // the retry made it durable
}

// TestChunkedCorruptChunkNotServed flips a byte of one synced chunk: GET and a GETRANGE over it
// fail with ErrCorrupt, a GETRANGE of other chunks still works.
func TestChunkedCorruptChunkNotServed(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := chunkTestOpts(mem, clk)
	opts.Shards, opts.SegmentSize = 1, 1<<20
	ks := mustOpen(t, opts)
	defer func() { mustClose(t, ks) }()
	se := ks.NewSession()
	val := strings.Repeat("0123456789abcdef", 20)
	mustPut(t, ks, se, 0, "k", val, 0)
	// The chunks are the first records of the segment: flip a byte in chunk 3's payload.
	s := ks.shards[0]
	seg := s.log.SegmentIDs()[0]
	path := fmt.Sprintf("%s/%08d.seg", s.ckpt.dir, seg)
	f, err := mem.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	off := vlog.SegmentHeaderSize + 3*vlog.RecordSize(0, oidSize, 16) + vlog.HeaderSize + oidSize + 5
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := ks.getBytes(0, []byte("k"), func([]byte, Meta) { t.Fatal("corrupt value served") }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("GET of a value with a corrupt chunk: %v", err)
	}
	if _, err := ks.getRangeBytes(0, []byte("k"), func(int) (int, int) { return 50, 52 }, func([]byte, Meta) { t.Fatal("corrupt bytes served") }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("GETRANGE over the corrupt chunk: %v", err)
	}
	if got, _ := getRange(t, ks, 0, "k", 100, 140); string(got) != val[100:140] {
		t.Fatalf("GETRANGE of intact chunks: %q", got)
	}
}

// TestChunkedReadAfterMove collects every sealed segment (moving the chunks of a value and
// dropping their segments) right after a reader has read the value's manifest, before it reads
// the chunks: GET, GETRANGE and a transaction's Value find the chunks gone, see that the key's
// entry moved, and read again, getting the right bytes (WriteAt sees the entry moved first).
func TestChunkedReadAfterMove(t *testing.T) {
	val := strings.Repeat("0123456789abcdef", 20)[:300]
	for _, op := range []string{"get", "getrange", "value", "writeat"} {
		t.Run(op, func(t *testing.T) {
			clk := newTestClock()
			opts := chunkTestOpts(vfs.NewMem(), clk)
			opts.Shards, opts.SegmentSize = 1, 512
			he := &hookEngine{Engine: opts.Engine}
			opts.Engine = he
			ks := mustOpen(t, opts)
			defer mustClose(t, ks)
			se := ks.NewSession()
			mustPut(t, ks, se, 0, "k", val, 0)
			for i := 0; i < 10; i++ { // seal the value's segments
				mustPut(t, ks, se, 1, fmt.Sprint("fill", i), strings.Repeat("f", 30), 0)
			}
			s := ks.shards[0]
			calls := 0
			hook := func() {
				if calls++; calls != 1 {
					return // the first read is the manifest's
				}
				he.hook.Store(nil)
				for _, g := range s.log.SegmentStats() {
					if !g.Active && !g.Pending {
						if err := reclaimNow(ks, s, g.ID); err != nil {
							t.Error(err)
						}
					}
				}
			}
			he.hook.Store(&hook)
			want := val
			var got string
			var err error
			switch op {
			case "get":
				_, err = ks.getBytes(0, []byte("k"), func(v []byte, _ Meta) { got = string(v) })
			case "getrange":
				_, err = ks.getRangeBytes(0, []byte("k"), func(n int) (int, int) { return 5, n - 5 }, func(v []byte, _ Meta) { got = string(v) })
				want = val[5 : len(val)-5]
			case "value":
				err = ks.Update(se, []Key{{Key: []byte("k")}}, func(tx *Tx) error {
					v, _, err := tx.Value(0)
					got = string(v)
					return err
				})
			case "writeat":
				writeAt(t, ks, se, 0, "k", 20, []byte("XY"))
				got, _, _ = getString(t, ks, 0, "k")
				want = string(modelWriteAt([]byte(val), 20, []byte("XY")))
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s read %q, want %q", op, got, want)
			}
			if calls == 0 || ks.rc.segments.Load() == 0 {
				t.Fatal("nothing was collected during the read")
			}
			// WriteAt's first attempt reads only the manifest; the next one finds the entry
			// moved before it reads a chunk.
			if n := ks.stats.moved.Load(); n == 0 && op != "writeat" {
				t.Fatal("the reader did not find its chunks moved")
			}
			if err := checkAccounting(ks); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestChunkedRelocationRace changes a chunked value while the collector is reading its manifest
// or chunks to move them (its locks dropped): the move must not commit over the change (the
// compare-and-swap), its copies count as dead, and the collection still completes.
func TestChunkedRelocationRace(t *testing.T) {
	val := strings.Repeat("0123456789abcdef", 20)[:300]
	for _, op := range []string{"writeat", "put", "delete"} {
		for _, at := range []int{1, 2} { // during the manifest's read, or the chunks'
			t.Run(fmt.Sprintf("%s-read%d", op, at), func(t *testing.T) {
				clk := newTestClock()
				opts := chunkTestOpts(vfs.NewMem(), clk)
				opts.Shards, opts.SegmentSize = 1, 512
				he := &hookEngine{Engine: opts.Engine}
				opts.Engine = he
				ks := mustOpen(t, opts)
				defer func() { mustClose(t, ks) }()
				se, other := ks.NewSession(), ks.NewSession()
				mustPut(t, ks, se, 0, "k", val, 0)
				s := ks.shards[0]
				victim := s.log.SegmentIDs()[0] // holds the first chunks
				for s.log.SegmentIDs()[len(s.log.SegmentIDs())-1] == victim || len(s.log.SegmentIDs()) < 3 {
					mustPut(t, ks, se, 1, fmt.Sprint("fill", len(s.log.SegmentIDs())), strings.Repeat("f", 100), 0)
				}
				want, present := val, true
				calls := 0
				hook := func() {
					if calls++; calls != at {
						return
					}
					switch op {
					case "writeat":
						writeAt(t, ks, other, 0, "k", 0, []byte("NEW"))
						want = "NEW" + val[3:]
					case "put":
						mustPut(t, ks, other, 0, "k", "small now", 0)
						want = "small now"
					case "delete":
						if err := ks.Update(other, []Key{{Key: []byte("k")}}, func(tx *Tx) error { tx.Delete(0); return nil }); err != nil {
							t.Error(err)
						}
						present = false
					}
				}
				he.hook.Store(&hook)
				if err := reclaimNow(ks, s, victim); err != nil {
					t.Fatal(err)
				}
				he.hook.Store(nil)
				if calls < at {
					t.Fatalf("the collection made %d engine reads; the change was not made during it", calls)
				}
				if s.log.HasSegment(victim) {
					t.Fatal("the segment is still there")
				}
				got, _, ok := getString(t, ks, 0, "k")
				if ok != present || ok && got != want {
					t.Fatalf("after the collection: %q (present %v), want %q (present %v)", short(got), ok, short(want), present)
				}
				if err := checkAccounting(ks); err != nil {
					t.Fatal(err)
				}
				mustClose(t, ks)
				ks = mustOpen(t, opts)
				if got, _, ok := getString(t, ks, 0, "k"); ok != present || ok && got != want {
					t.Fatalf("after a restart: %q (present %v), want %q", short(got), ok, short(want))
				}
			})
		}
	}
}

// TestChunkedReclaimSettles edits chunked values whose manifests are large against the segments
// (16-byte chunks, 1 KiB segments): moving a value's chunks kills its manifest in another
// segment, which could then be worth collecting, and so on for ever. The policy must settle
// (reclaimUntilIdle fails after 10,000 collections), keep every value, and once the values are
// deleted give all their space back.
func TestChunkedReclaimSettles(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	clk := newTestClock()
	opts := chunkTestOpts(vfs.NewMem(), clk)
	opts.Shards, opts.SegmentSize = 2, 1<<10
	ks := mustOpen(t, opts)
	defer func() { mustClose(t, ks) }()
	se := ks.NewSession()
	model := map[string][]byte{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprint("v", rng.IntN(6))
		switch rng.IntN(4) {
		case 0:
			v := bytes.Repeat([]byte{byte('a' + i%26)}, 200+rng.IntN(400))
			mustPut(t, ks, se, 0, k, string(v), 0)
			model[k] = v
		default:
			off, patch := rng.IntN(len(model[k])+20), bytes.Repeat([]byte{byte('A' + i%26)}, 1+rng.IntN(40))
			writeAt(t, ks, se, 0, k, int64(off), patch)
			model[k] = modelWriteAt(model[k], off, patch)
		}
		if i%50 == 49 {
			reclaimUntilIdle(t, ks)
		}
	}
	n := reclaimUntilIdle(t, ks)
	checkChunkedModel(t, ks, model, rng, "after reclaiming")
	st := ks.Stats(nil)
	t.Logf("settled after %d more collections: disk %d bytes, live %d", n, st.Log.DiskBytes, st.Reclaim.LiveBytes)
	for k := range model {
		if err := ks.Update(se, []Key{{Key: []byte(k)}}, func(tx *Tx) error { tx.Delete(0); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	reclaimUntilIdle(t, ks)
	if st := ks.Stats(nil); st.Reclaim.LiveBytes != 0 || st.Log.DiskBytes > int64(opts.Shards)*opts.SegmentSize {
		t.Fatalf("after deleting everything: disk %d bytes, live %d", st.Log.DiskBytes, st.Reclaim.LiveBytes)
	}
}
