package repl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

func encodeSnap(t *testing.T, keys []snapKey) []byte {
	t.Helper()
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	sw := newSnapWriter(bw)
	for _, k := range keys {
		if err := sw.key(k.DB, k.Type, k.ExpireAt, k.Key, k.Val); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.end(); err != nil {
		t.Fatal(err)
	}
	bw.Flush()
	return out.Bytes()
}

func decodeSnap(b []byte) ([]snapKey, error) {
	sr, err := newSnapReader(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		return nil, err
	}
	var out []snapKey
	for {
		var k snapKey
		err := sr.next(&k)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, k)
	}
}

// TestSnapshotFormat: keys round-trip (expiries negative, zero and huge, empty keys and
// values, every database), and any flipped byte, lost tail or extra key is refused, never
// loaded as something else.
func TestSnapshotFormat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var keys []snapKey
	for i := range 200 {
		k := snapKey{DB: i % 256, Type: uint8(i % 6), Key: []byte(fmt.Sprint("key", i)), Val: bytes.Repeat([]byte{byte(i)}, rng.IntN(3000))}
		switch i % 4 {
		case 1:
			k.ExpireAt = 1_800_000_000_000 + int64(i)
		case 2:
			k.ExpireAt = -5
		case 3:
			k.ExpireAt = 1<<62 + 7
		}
		if i == 7 {
			k.Key, k.Val = []byte{}, []byte{}
		}
		keys = append(keys, k)
	}
	b := encodeSnap(t, keys)
	got, err := decodeSnap(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(keys) {
		t.Fatalf("%d keys back, want %d", len(got), len(keys))
	}
	for i := range keys {
		w, g := keys[i], got[i]
		if w.DB != g.DB || w.Type != g.Type || w.ExpireAt != g.ExpireAt || !bytes.Equal(w.Key, g.Key) || !bytes.Equal(w.Val, g.Val) {
			t.Fatalf("key %d: got db %d type %d exp %d %q (%d bytes), want db %d type %d exp %d %q (%d bytes)",
				i, g.DB, g.Type, g.ExpireAt, g.Key, len(g.Val), w.DB, w.Type, w.ExpireAt, w.Key, len(w.Val))
		}
	}
	for range 300 {
		bad := bytes.Clone(b)
		bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
		if _, err := decodeSnap(bad); err == nil {
			t.Fatal("a flipped byte went unnoticed")
		}
	}
	for _, cut := range []int{0, 5, len(b) / 2, len(b) - 1} {
		if _, err := decodeSnap(b[:cut]); err == nil {
			t.Fatalf("a snapshot cut at %d of %d bytes loaded", cut, len(b))
		}
	}
	if _, err := decodeSnap([]byte("REDIS0011 not ours")); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("an RDB payload: %v, want ErrBadSnapshot", err)
	}
}

// TestStateEncoding: a follower's persisted state round-trips and anything else is no state.
func TestStateEncoding(t *testing.T) {
	st := replState{replid: "0123456789abcdef0123456789abcdef01234567", offset: 123456789012, db: 7, clock: 1_800_000_000_123}
	got, ok := decodeState(st.encode())
	if !ok || got != st {
		t.Fatalf("decode(encode(%+v)) = %+v, %v", st, got, ok)
	}
	for _, b := range []string{"", "1 short 1 2 3", "2 0123456789abcdef0123456789abcdef01234567 1 2 3", "1 0123456789abcdef0123456789abcdef01234567 x 2 3"} {
		if _, ok := decodeState([]byte(b)); ok {
			t.Fatalf("%q decoded as a state", b)
		}
	}
}

// TestSnapshotFunctions: the libraries' record round-trips ahead of the keys, a snapshot
// without one reads as no libraries, and a flipped byte in it is refused by the checksum.
func TestSnapshotFunctions(t *testing.T) {
	lib := []byte("lavik-functions 2\nsome libraries")
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	sw := newSnapWriter(bw)
	if err := sw.functions(lib); err != nil {
		t.Fatal(err)
	}
	if err := sw.key(0, 0, 0, []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := sw.end(); err != nil {
		t.Fatal(err)
	}
	bw.Flush()
	read := func(b []byte) ([]byte, []snapKey, error) {
		sr, err := newSnapReader(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			return nil, nil, err
		}
		var keys []snapKey
		for {
			var k snapKey
			if err := sr.next(&k); err == io.EOF {
				return sr.funcs, keys, nil
			} else if err != nil {
				return nil, nil, err
			}
			keys = append(keys, k)
		}
	}
	funcs, keys, err := read(out.Bytes())
	if err != nil || !bytes.Equal(funcs, lib) || len(keys) != 1 || string(keys[0].Key) != "k" {
		t.Fatalf("round trip: funcs %q keys %v err %v", funcs, keys, err)
	}
	if funcs, _, err := read(encodeSnap(t, []snapKey{{Key: []byte("k")}})); err != nil || funcs != nil {
		t.Fatalf("without the record: funcs %q err %v", funcs, err)
	}
	b := bytes.Clone(out.Bytes())
	b[len(snapMagic)+5] ^= 1 // inside the libraries
	if _, _, err := read(b); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("a flipped byte in the libraries: %v", err)
	}
}
