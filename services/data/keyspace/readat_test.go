package keyspace

import (
	"bytes"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// TestReadAtTouchesOnlyItsChunks checks that ReadAt and a one-byte WriteAt on a chunked value
// (what SETBIT does) read the manifest and the one chunk holding the byte, never the whole
// value, and see the transaction's own edits.
func TestReadAtTouchesOnlyItsChunks(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, chunkTestOpts(vfs.NewMem(), clk))
	defer mustClose(t, ks)
	se := ks.NewSession()
	model := make([]byte, 1000) // 63 chunks of 16 bytes
	for i := range model {
		model[i] = byte(i * 7)
	}
	writeAt(t, ks, se, 0, "big", 0, model)
	if !isChunked(ks, 0, "big") {
		t.Fatal("a 1000-byte value is not chunked with chunkMin 40")
	}
	keys := []Key{{DB: 0, Key: []byte("big")}}
	for _, off := range []int64{0, 15, 16, 500, 999} {
		var got, after []byte
		var parts int
		var whole bool
		err := ks.Update(se, keys, func(tx *Tx) error {
			b, err := tx.ReadAt(0, off, 1)
			if err != nil {
				return err
			}
			got = append([]byte(nil), b...)
			if err := tx.WriteAt(0, off, []byte{b[0] ^ 0xff}, TypeString|RawHint); err != nil {
				return err
			}
			b, err = tx.ReadAt(0, off, 1)
			if err != nil {
				return err
			}
			after = append([]byte(nil), b...)
			k := tx.keys[0]
			parts, whole = len(k.parts), k.haveCached
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := se.Wait(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, model[off:off+1]) || after[0] != model[off]^0xff {
			t.Fatalf("ReadAt %d: %x then %x; want %x then %x", off, got, after, model[off], model[off]^0xff)
		}
		model[off] ^= 0xff
		if parts != 1 || whole {
			t.Fatalf("ReadAt %d read %d chunks (whole value: %v); want 1 chunk", off, parts, whole)
		}
	}
	// A range across chunks, and past the end.
	err := ks.Update(se, keys, func(tx *Tx) error {
		b, err := tx.ReadAt(0, 10, 40)
		if err != nil {
			return err
		}
		if !bytes.Equal(b, model[10:50]) {
			t.Fatalf("ReadAt 10+40 = %x; want %x", b, model[10:50])
		}
		if b, err = tx.ReadAt(0, 990, 40); err != nil {
			return err
		}
		if !bytes.Equal(b, model[990:]) {
			t.Fatalf("ReadAt 990+40 = %x; want %x", b, model[990:])
		}
		if b, _ = tx.ReadAt(0, 1000, 4); len(b) != 0 {
			t.Fatalf("ReadAt past the end = %x", b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := getRange(t, ks, 0, "big", 0, 1000); !bytes.Equal(got, model) {
		t.Fatal("value differs from the model after the edits")
	}
}
