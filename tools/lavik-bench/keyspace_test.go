package main

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func testKeyspace(n int, vs ValueSpec) *Keyspace {
	ks := newKeyspace(stringPrefix, kindString, n)
	ks.Value = vs
	ks.Loaded = true
	return ks
}

func TestKeyFormat(t *testing.T) {
	if got := keyString(stringPrefix, 42); got != "key:000000000042" || len(got) != keyLen {
		t.Errorf("key %q", got)
	}
	if got := keyString(hashPrefix, maxKeys); got != "hsh:999999999999" {
		t.Errorf("key %q", got)
	}
	if got := string(appendBulkKey(nil, stringPrefix, 7)); got != "$16\r\nkey:000000000007\r\n" {
		t.Errorf("bulk key %q", got)
	}
}

func TestValueDerivation(t *testing.T) {
	ks := testKeyspace(1000, ValueSpec{1000, 4000})
	sizes := map[int]bool{}
	for k := 0; k < 1000; k++ {
		for v := uint32(0); v < 3; v++ {
			a := ks.appendValue(nil, k, v)
			b := ks.appendValue([]byte("prefix"), k, v)[6:]
			if !bytes.Equal(a, b) {
				t.Fatalf("key %d v%d: value depends on the buffer it is appended to", k, v)
			}
			if len(a) != ks.valueSize(k, v) || len(a) < 1000 || len(a) > 4000 {
				t.Fatalf("key %d v%d: %d bytes", k, v, len(a))
			}
			sizes[len(a)] = true
			want := keyString(stringPrefix, k) + ":v" + string(appendUint(nil, uint64(v))) + ":"
			if !bytes.HasPrefix(a, []byte(want)) {
				t.Fatalf("value starts %q, want %q", a[:30], want)
			}
			if err := ks.checkValue(a, k, v, v, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(sizes) < 500 {
		t.Errorf("only %d distinct sizes in 1000-4000", len(sizes))
	}
	if bytes.Equal(ks.appendValue(nil, 1, 0)[20:200], ks.appendValue(nil, 1, 1)[20:200]) {
		t.Error("versions 0 and 1 share their filler")
	}
	// A fixed size is fixed; values longer than the filler pool wrap around it.
	big := testKeyspace(10, ValueSpec{3 * poolSize, 3 * poolSize})
	if v := big.appendValue(nil, 3, 9); len(v) != 3*poolSize || big.checkValue(v, 3, 9, 9, true) != nil {
		t.Errorf("large value: %d bytes", len(v))
	}
}

func TestCheckValueCatches(t *testing.T) {
	ks := testKeyspace(100, ValueSpec{1024, 1024})
	good := ks.appendValue(nil, 5, 2)
	flip := func(i int) []byte {
		b := append([]byte(nil), good...)
		b[i] ^= 1
		return b
	}
	cases := []struct {
		name string
		val  []byte
		lo   uint32
		hi   uint32
		full bool
		want string
	}{
		{"filler byte flipped", flip(900), 2, 2, true, "bytes differ"},
		{"header byte flipped", flip(3), 2, 2, false, "does not start with its key"},
		{"another key's value", ks.appendValue(nil, 6, 2), 2, 2, false, "does not start with its key"},
		{"truncated", good[:1000], 2, 2, false, "has 1000 bytes"},
		{"stale version", ks.appendValue(nil, 5, 1), 2, 3, false, "version 1 returned, expected 2..3"},
		{"version never written", ks.appendValue(nil, 5, 4), 2, 3, false, "version 4 returned"},
		{"empty", nil, 0, 0, false, "does not start"},
		{"no version", []byte("key:000000000005:v:xxxxxxxxxxxxxxxxxxxxxx"), 0, 0, false, "malformed version"},
	}
	for _, c := range cases {
		err := ks.checkValue(c.val, 5, c.lo, c.hi, c.full)
		var ve *valueError
		if err == nil || !errors.As(err, &ve) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// A flipped filler byte passes the cheap check: only the byte-for-byte comparison sees it.
	if err := ks.checkValue(flip(900), 5, 2, 2, false); err != nil {
		t.Errorf("cheap check: %v", err)
	}
}

func TestCheckHash(t *testing.T) {
	ks := newKeyspace(hashPrefix, kindHash, 10)
	ks.Fields, ks.FieldSize = 4, 64
	record := func(k int, vers ...uint32) []reply {
		var out []reply
		for f := 0; f < ks.Fields; f++ {
			v := vers[0]
			if f < len(vers) {
				v = vers[f]
			}
			out = append(out, reply{kind: '$', str: fieldName(f)}, reply{kind: '$', str: string(ks.appendField(nil, k, v, f))})
		}
		return out
	}
	if err := ks.checkHash(record(3, 2), 3, 1, 2, true); err != nil {
		t.Fatal(err)
	}
	// Field order does not matter.
	r := record(3, 2)
	r[0], r[1], r[2], r[3] = r[2], r[3], r[0], r[1]
	if err := ks.checkHash(r, 3, 2, 2, true); err != nil {
		t.Error(err)
	}
	bad := map[string][]reply{
		"torn update":   record(3, 2, 1, 2, 2),
		"missing field": record(3, 2)[2:],
		"wrong key":     record(4, 2),
		"stale":         record(3, 0),
	}
	corrupt := record(3, 2)
	b := []byte(corrupt[3].str)
	b[50] ^= 1
	corrupt[3].str = string(b)
	bad["corrupt field"] = corrupt
	dup := record(3, 2)
	dup[2] = dup[0]
	bad["duplicate field"] = dup
	for name, r := range bad {
		if err := ks.checkHash(r, 3, 1, 2, true); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

// TestVersionBounds checks the floor/ceiling bookkeeping against the cases it must get right.
func TestVersionBounds(t *testing.T) {
	ks := testKeyspace(4, ValueSpec{64, 64})
	// A write with nothing else in flight raises the floor once answered.
	v, clean := ks.beginWrite(0)
	if v != 1 || !clean || ks.readCeil(0) != 1 || ks.readFloor(0) != 0 {
		t.Fatalf("v %d clean %v ceil %d floor %d", v, clean, ks.readCeil(0), ks.readFloor(0))
	}
	ks.endWrite(0, v, clean, true)
	if ks.readFloor(0) != 1 {
		t.Fatalf("floor %d after a lone write", ks.readFloor(0))
	}
	// Two overlapping writes: the server may apply them in either order, so neither may raise
	// the floor past what is certain.
	v2, c2 := ks.beginWrite(0)
	v3, c3 := ks.beginWrite(0)
	if !c2 || c3 {
		t.Fatalf("clean flags %v %v", c2, c3)
	}
	ks.endWrite(0, v3, c3, true)
	ks.endWrite(0, v2, c2, true)
	if ks.readFloor(0) != 1 || ks.readCeil(0) != 3 {
		t.Fatalf("after overlap: floor %d ceil %d", ks.readFloor(0), ks.readCeil(0))
	}
	// A failed write does not raise the floor, but its version stays possible.
	v4, c4 := ks.beginWrite(0)
	ks.endWrite(0, v4, c4, false)
	if ks.readFloor(0) != 1 || ks.readCeil(0) != 4 {
		t.Fatalf("after failure: floor %d ceil %d", ks.readFloor(0), ks.readCeil(0))
	}
	// Unknown history accepts any version above the floor.
	ks.Unknown = true
	if ks.readCeil(1) != ^uint32(0) {
		t.Error("unknown ceiling")
	}
}

// TestVersionBoundsModel runs random interleavings of writes to one key against a model of a
// server that applies each write at some moment between its issue and its reply, and checks
// that a read issued after and answered before any moment accepts the value current then.
func TestVersionBoundsModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		ks := testKeyspace(1, ValueSpec{64, 64})
		type w struct {
			v       uint32
			clean   bool
			applied bool
		}
		var inflight []*w
		current := uint32(0)
		for step := 0; step < 60; step++ {
			switch r.IntN(4) {
			case 0: // issue a write
				v, c := ks.beginWrite(0)
				inflight = append(inflight, &w{v: v, clean: c})
			case 1: // the server applies an in-flight write
				if len(inflight) > 0 {
					x := inflight[r.IntN(len(inflight))]
					if !x.applied {
						x.applied, current = true, x.v
					}
				}
			case 2: // the reply to an applied write arrives
				for i, x := range inflight {
					if x.applied {
						ks.endWrite(0, x.v, x.clean, true)
						inflight = append(inflight[:i], inflight[i+1:]...)
						break
					}
				}
			case 3: // a read issued and answered now sees current
				if lo, hi := ks.readFloor(0), ks.readCeil(0); current < lo || current > hi {
					t.Fatalf("trial %d step %d: current version %d outside [%d, %d]", trial, step, current, lo, hi)
				}
			}
		}
	}
}
