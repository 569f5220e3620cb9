package test

// Large strings: a 100 MB string is stored in 8 KiB chunks, so GETRANGE, SETRANGE and APPEND on
// it touch only the chunks they need (INFO's engine and log counters show it), and it survives
// restarts and kill -9 exactly like any value.

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/lavikdb/lavik/test/harness"
)

// redisSubstr is GETRANGE on a local copy: negative indexes count from the end, both clamp.
func redisSubstr(v []byte, start, end int64) []byte {
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		return nil
	}
	if start < 0 {
		start = n + start
	}
	if end < 0 {
		end = n + end
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if n == 0 || start > end {
		return nil
	}
	return v[start : end+1]
}

// ioFigures are the INFO counters of the disk work a command did.
type ioFigures struct{ reads, readBytes, written int64 }

func readIOFigures(t *testing.T, k checker) ioFigures {
	t.Helper()
	f := infoFields(k.str("INFO", "all"))
	var r ioFigures
	for name, p := range map[string]*int64{
		"lavik_engine_reads": &r.reads, "lavik_engine_read_bytes": &r.readBytes, "lavik_log_bytes_written": &r.written,
	} {
		v, err := strconv.ParseInt(f[name], 10, 64)
		if err != nil {
			t.Fatalf("INFO %s = %q: %v", name, f[name], err)
		}
		*p = v
	}
	return r
}

// TestLargeString builds a 100 MB string with SET and APPENDs, then runs GETRANGE, SETRANGE,
// APPEND, STRLEN and GET against a local copy, across a clean restart and a kill -9
// (appendfsync always: everything acknowledged must be there). On Lavik, INFO must show that a
// GETRANGE, SETRANGE or APPEND of 100 bytes in the middle reads and writes the manifest and a
// chunk or two, not the value: about 100 KB of manifest (8 bytes per 8 KiB chunk) plus 16 KiB.
func TestLargeString(t *testing.T) {
	var args []string
	if !harness.IsRedis() {
		// No collection, so that the engine counters show the commands' reads only; writes
		// synced before the reply, so that reads go to the disk rather than the tail.
		args = []string{"--appendfsync", "always", "--reclaim-rate", "0"}
	} else {
		args = []string{"--appendfsync", "always"}
	}
	s := harness.Start(t, args...)
	c := s.Client()
	k := newChecker(t, c)
	ctx := harness.Ctx(t)
	rng := rand.New(rand.NewPCG(7, 7))
	const key = "big"
	const total = 100 << 20
	model := make([]byte, total/2)
	for i := range model {
		model[i] = byte('a' + (i/8192+i%13)%26)
	}
	if err := c.Set(ctx, key, model, 0).Err(); err != nil {
		t.Fatal(err)
	}
	for len(model) < total {
		chunk := bytes.Repeat([]byte{byte('A' + len(model)/(1<<20)%26)}, 1<<20)
		n, err := c.Append(ctx, key, string(chunk)).Result()
		model = append(model, chunk...)
		if err != nil || n != int64(len(model)) {
			t.Fatalf("APPEND: %d, %v; want %d", n, err, len(model))
		}
	}

	check := func(when string) {
		t.Helper()
		k.eq(int64(len(model)), "STRLEN", key)
		k.eq("string", "TYPE", key)
		k.eq("raw", "OBJECT", "ENCODING", key)
		got, err := c.Get(ctx, key).Bytes()
		if err != nil || !bytes.Equal(got, model) {
			t.Fatalf("%s: GET: %d bytes, %v; want %d bytes (first difference at %d)", when, len(got), err, len(model), firstDiff(got, model))
		}
		n := int64(len(model))
		for _, r := range [][2]int64{{0, 99}, {n/2 - 50, n/2 + 49}, {-100, -1}, {n - 8192, n + 10}, {8191, 8192}, {5, 3}, {-5, -10}} {
			got, err := c.GetRange(ctx, key, r[0], r[1]).Bytes()
			if want := redisSubstr(model, r[0], r[1]); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: GETRANGE %d %d = %d bytes, %v; want %d bytes", when, r[0], r[1], len(got), err, len(want))
			}
		}
	}
	// edits runs random SETRANGE, APPEND and GETRANGE against the model.
	edits := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			switch rng.IntN(3) {
			case 0:
				off := rng.Int64N(int64(len(model)) + 20000)
				if rng.IntN(2) == 0 {
					off = off/8192*8192 - 1 // across a chunk boundary
				}
				off = max(off, 0)
				patch := bytes.Repeat([]byte{byte('0' + i%10)}, 1+rng.IntN(20000))
				got, err := c.SetRange(ctx, key, off, string(patch)).Result()
				if need := int(off) + len(patch); need > len(model) {
					model = append(model, make([]byte, need-len(model))...)
				}
				copy(model[off:], patch)
				if err != nil || got != int64(len(model)) {
					t.Fatalf("SETRANGE %d (%d bytes): %d, %v; want %d", off, len(patch), got, err, len(model))
				}
			case 1:
				suffix := bytes.Repeat([]byte{byte('p' + i%5)}, rng.IntN(10000))
				got, err := c.Append(ctx, key, string(suffix)).Result()
				model = append(model, suffix...)
				if err != nil || got != int64(len(model)) {
					t.Fatalf("APPEND %d bytes: %d, %v; want %d", len(suffix), got, err, len(model))
				}
			default:
				start := rng.Int64N(int64(len(model)))
				end := start + rng.Int64N(30000)
				got, err := c.GetRange(ctx, key, start, end).Bytes()
				if want := redisSubstr(model, start, end); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("GETRANGE %d %d: %d bytes, %v; want %d bytes", start, end, len(got), err, len(want))
				}
			}
		}
	}
	// touches checks with INFO that 100-byte commands in the middle of the value read and write
	// no more than the manifest and two chunks (with O_DIRECT, rounded to 4 KiB blocks).
	touches := func(when string) {
		t.Helper()
		if harness.IsRedis() {
			return
		}
		const limit = 192 << 10 // manifest ~100 KiB + 2 chunks + alignment; the value is 100 MiB
		mid := int64(len(model)/2/8192*8192 - 50)
		for _, cmd := range []struct {
			name string
			run  func()
		}{
			{"GETRANGE", func() {
				got, err := c.GetRange(ctx, key, mid, mid+99).Bytes()
				if err != nil || !bytes.Equal(got, model[mid:mid+100]) {
					t.Fatalf("%s: GETRANGE in the middle: %v", when, err)
				}
			}},
			{"SETRANGE", func() {
				patch := bytes.Repeat([]byte("S"), 100)
				if err := c.SetRange(ctx, key, mid, string(patch)).Err(); err != nil {
					t.Fatal(err)
				}
				copy(model[mid:], patch)
			}},
			{"APPEND", func() {
				suffix := bytes.Repeat([]byte("E"), 100)
				if err := c.Append(ctx, key, string(suffix)).Err(); err != nil {
					t.Fatal(err)
				}
				model = append(model, suffix...)
			}},
		} {
			before := readIOFigures(t, k)
			cmd.run()
			after := readIOFigures(t, k)
			reads, readBytes, written := after.reads-before.reads, after.readBytes-before.readBytes, after.written-before.written
			t.Logf("%s: %s of 100 bytes read %d records, %d bytes; wrote %d bytes", when, cmd.name, reads, readBytes, written)
			if reads < 1 || reads > 3 || readBytes > limit || written > limit {
				t.Fatalf("%s: %s of 100 bytes on a %d-byte string read %d records (%d bytes) and wrote %d bytes; want 1 to 3 records, at most %d bytes each way",
					when, cmd.name, len(model), reads, readBytes, written, limit)
			}
		}
	}

	check("after SET and APPENDs")
	touches("after SET and APPENDs")
	edits(40)
	check("after edits")
	s.Restart()
	c = s.Client()
	k = newChecker(t, c)
	check("after a restart")
	touches("after a restart")
	edits(40)
	s.KillRestart()
	c = s.Client()
	k = newChecker(t, c)
	check("after kill -9")
	edits(10)
	check("at the end")
	if err := c.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	k.eq(int64(0), "EXISTS", key)
	k.eq("", "GETRANGE", key, 0, -1)
}
