package commands

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSetCodecModel: random adds and removes against a map, encoded and decoded after every
// step; the intset encoding holds while every member is an integer and there are at most 512,
// and hashtable stays once reached.
func TestSetCodecModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := &setValue{}
	model := map[string]bool{}
	ints := true
	for step := 0; step < 4000; step++ {
		var m string
		if step < 2000 {
			m = fmt.Sprint(rng.IntN(600)) // integers only, past 512 members at some point
		} else {
			m = fmt.Sprintf("m%d", rng.IntN(300))
		}
		if rng.IntN(3) < 2 {
			if got := s.add([]byte(m)); got == model[m] {
				t.Fatalf("step %d: add %s = %v with it there = %v", step, m, got, model[m])
			}
			model[m] = true
			if step >= 2000 || len(model) > setMaxIntsetEntries {
				ints = false
			}
		} else {
			if got := s.remove([]byte(m)); got != model[m] {
				t.Fatalf("step %d: remove %s = %v, want %v", step, m, got, model[m])
			}
			delete(model, m)
		}
		d, err := decodeSet(s.encode())
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if d.len() != len(model) {
			t.Fatalf("step %d: %d members, want %d", step, d.len(), len(model))
		}
		for k := range model {
			if !d.has([]byte(k)) {
				t.Fatalf("step %d: %s missing", step, k)
			}
		}
		if want := map[bool]string{true: "intset", false: "hashtable"}[ints]; d.encoding() != want {
			t.Fatalf("step %d: encoding %s, want %s", step, d.encoding(), want)
		}
		s = d
	}
}

// FuzzDecodeSet: no input makes decodeSet panic, and what it accepts encodes back stably.
func FuzzDecodeSet(f *testing.F) {
	s := &setValue{}
	s.add([]byte("1"))
	s.add([]byte("x"))
	f.Add(s.encode())
	f.Add([]byte{setFormat, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeSet(b)
		if err != nil {
			return
		}
		got := d.encode()
		d2, err := decodeSet(got)
		if err != nil || string(d2.encode()) != string(got) {
			t.Fatalf("re-encoding is not stable: %x", b)
		}
	})
}
