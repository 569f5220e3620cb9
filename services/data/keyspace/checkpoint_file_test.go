package keyspace

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// writeCkptFile writes a checkpoint file holding entries, closing a block every perBlock entries.
func writeCkptFile(t *testing.T, fs vfs.FS, path string, h ckptHeader, entries []ckptEntry, perBlock int) []byte {
	t.Helper()
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := newCkptWriter(f, &h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		w.add(&entries[i])
		if (i+1)%perBlock == 0 || w.full() {
			if err := w.flushBlock(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, _ := f.Size()
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != w.size {
		t.Fatalf("writer counted %d bytes, file has %d", w.size, len(b))
	}
	return b
}

// readCkptBytes decodes a whole checkpoint file.
func readCkptBytes(b []byte) (ckptHeader, []ckptEntry, error) {
	fs := vfs.NewMem()
	f, _ := fs.Create("/c")
	f.Write(b)
	r, h, err := newCkptReader(f, int64(len(b)))
	if err != nil {
		return h, nil, err
	}
	var out []ckptEntry
	for {
		payload, count, ok, err := r.next()
		if err != nil {
			return h, nil, err
		}
		if !ok {
			return h, out, nil
		}
		for off := 0; off < len(payload); count-- {
			var e ckptEntry
			n, err := decodeCkptEntry(payload[off:], &e)
			if err != nil {
				return h, nil, err
			}
			e.key = bytes.Clone(e.key)
			out = append(out, e)
			off += n
		}
		if count != 0 {
			return h, nil, ckptCorrupt("count")
		}
	}
}

func testCkptEntries(rng *rand.Rand, n int) []ckptEntry {
	out := make([]ckptEntry, n)
	for i := range out {
		e := &out[i]
		e.db = uint8(rng.IntN(16))
		e.vtype = uint8(rng.IntN(16))
		if rng.IntN(4) == 0 {
			e.vtype |= RawHint
		}
		if rng.IntN(3) == 0 {
			e.expireAt = 1_700_000_000_000 + rng.Int64N(1e9)
		}
		e.seg, e.off, e.vlen = rng.Uint32(), rng.Uint32(), rng.Uint32N(1<<20)
		e.key = make([]byte, rng.IntN(40))
		for j := range e.key {
			e.key[j] = byte(rng.Uint32())
		}
	}
	if n > 0 {
		out[0].key = nil // the empty key is a key
		out[n-1].expireAt, out[n-1].seg, out[n-1].off, out[n-1].vlen = 1<<63-1, 1<<32-1, 1<<32-1, 1<<32-1
	}
	return out
}

func TestCheckpointFileRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := ckptHeader{shard: 3, shards: 8, databases: 16, pos: vlog.Loc{Seg: 17, Off: 123456}, version: 987654321,
		created: 1_700_000_000_123, hintEntries: 1000, hintArena: 40000}
	for _, n := range []int{0, 1, 7, 1000} {
		for _, perBlock := range []int{1, 3, 1 << 30} {
			t.Run(fmt.Sprintf("entries=%d/block=%d", n, perBlock), func(t *testing.T) {
				entries := testCkptEntries(rng, n)
				b := writeCkptFile(t, vfs.NewMem(), "/c", h, entries, perBlock)
				gh, got, err := readCkptBytes(b)
				if err != nil {
					t.Fatal(err)
				}
				if gh != h {
					t.Fatalf("header %+v, want %+v", gh, h)
				}
				if len(got) != len(entries) {
					t.Fatalf("%d entries, want %d", len(got), len(entries))
				}
				for i := range got {
					g, w := got[i], entries[i]
					if !bytes.Equal(g.key, w.key) {
						t.Fatalf("entry %d key %q, want %q", i, g.key, w.key)
					}
					if g.db != w.db || g.vtype != w.vtype || g.expireAt != w.expireAt || g.seg != w.seg || g.off != w.off || g.vlen != w.vlen {
						t.Fatalf("entry %d = %+v, want %+v", i, g, w)
					}
				}
			})
		}
	}
}

// TestCheckpointFileDamageDetected cuts a checkpoint file at every length and flips every bit
// of it: each damaged file must be rejected, never read as a (shorter or different) checkpoint.
func TestCheckpointFileDamageDetected(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	h := ckptHeader{shard: 1, shards: 4, pos: vlog.Loc{Seg: 2, Off: 99}, version: 42}
	b := writeCkptFile(t, vfs.NewMem(), "/c", h, testCkptEntries(rng, 12), 5)
	if _, _, err := readCkptBytes(b); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(b); n++ {
		if _, _, err := readCkptBytes(b[:n]); !errors.Is(err, errCheckpointCorrupt) {
			t.Fatalf("cut to %d of %d bytes: err %v", n, len(b), err)
		}
	}
	for _, extra := range [][]byte{{0}, []byte("junk"), b[:8]} {
		if _, _, err := readCkptBytes(append(bytes.Clone(b), extra...)); !errors.Is(err, errCheckpointCorrupt) {
			t.Fatalf("with %d bytes appended: err %v", len(extra), err)
		}
	}
	for i := range b {
		for bit := 0; bit < 8; bit++ {
			d := bytes.Clone(b)
			d[i] ^= 1 << bit
			if _, _, err := readCkptBytes(d); !errors.Is(err, errCheckpointCorrupt) {
				t.Fatalf("bit %d of byte %d of %d flipped: err %v", bit, i, len(b), err)
			}
		}
	}
	// A block dropped, repeated or moved keeps every block's own CRC valid.
	blocks := splitCkptBlocks(t, b)
	body := func(bs [][]byte) []byte {
		out := bytes.Clone(b[:ckptHeaderSize])
		for _, x := range bs {
			out = append(out, x...)
		}
		return append(out, b[len(b)-8-ckptTrailerSize:]...)
	}
	if _, _, err := readCkptBytes(body(blocks)); err != nil {
		t.Fatalf("reassembled file: %v", err)
	}
	for name, bs := range map[string][][]byte{
		"dropped":  blocks[1:],
		"repeated": append([][]byte{blocks[0]}, blocks...),
		"swapped":  append([][]byte{blocks[1], blocks[0]}, blocks[2:]...),
	} {
		if _, _, err := readCkptBytes(body(bs)); !errors.Is(err, errCheckpointCorrupt) {
			t.Fatalf("block %s: err %v", name, err)
		}
	}
}

// splitCkptBlocks returns the blocks of a checkpoint file, each with its header and CRC.
func splitCkptBlocks(t *testing.T, b []byte) [][]byte {
	var out [][]byte
	off := ckptHeaderSize
	for {
		n := int(uint32(b[off]) | uint32(b[off+1])<<8 | uint32(b[off+2])<<16 | uint32(b[off+3])<<24)
		if n == 0 {
			break
		}
		out = append(out, b[off:off+8+n+4])
		off += 8 + n + 4
	}
	if len(out) < 3 {
		t.Fatalf("only %d blocks", len(out))
	}
	return out
}

// TestCheckpointRunSortsAndStaysSmall: a run writes its entries ordered by home slot (stably)
// whatever order they came in, across several flushes, and its buffers grow with what it holds.
func TestCheckpointRunSortsAndStaysSmall(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 100_000
	for _, bits := range []uint{10, 17, 24, 32} {
		r := newCkptRun(bits, 10, 20) // a small hint: the run has to grow
		mem := vfs.NewMem()
		f, _ := mem.Create("/c")
		w, err := newCkptWriter(f, &ckptHeader{})
		if err != nil {
			t.Fatal(err)
		}
		hashes := map[string]uint32{}
		var keyBytes int
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("key:%d", i)
			h := rng.Uint32()
			hashes[k] = h
			keyBytes += len(k)
			if err := r.add(h, &ckptEntry{seg: uint32(i), key: []byte(k)}); err != nil {
				t.Fatal(err)
			}
			if i == n/2 {
				if got, limit := r.recMem.size(), (n/2+1)*12*17/16+2*pageSize; got > limit {
					t.Fatalf("record buffer %d bytes for %d records", got, n/2+1)
				}
				if got, limit := r.dataMem.size(), (keyBytes+(n/2+1)*60)*17/16+2*pageSize; got > limit {
					t.Fatalf("data buffer %d bytes for %d key bytes", got, keyBytes)
				}
				if err := r.flush(w); err != nil { // a second run follows
					t.Fatal(err)
				}
			}
		}
		if err := r.flush(w); err != nil {
			t.Fatal(err)
		}
		r.free()
		if err := w.finish(); err != nil {
			t.Fatal(err)
		}
		size, _ := f.Size()
		b := make([]byte, size)
		f.ReadAt(b, 0)
		_, got, err := readCkptBytes(b)
		if err != nil || len(got) != n {
			t.Fatalf("bits %d: %d entries, %v", bits, len(got), err)
		}
		mask := uint32(uint64(1)<<bits - 1)
		for i := 1; i < len(got); i++ {
			if i == n/2+1 {
				continue // the second run starts over
			}
			a, b := hashes[string(got[i-1].key)]&mask, hashes[string(got[i].key)]&mask
			if a > b || a == b && got[i-1].seg > got[i].seg {
				t.Fatalf("bits %d: entry %d (home %d, seg %d) after entry %d (home %d, seg %d)", bits, i, b, got[i].seg, i-1, a, got[i-1].seg)
			}
		}
	}
}
