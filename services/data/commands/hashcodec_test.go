package commands

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestHashCodecModel: random sets and deletes against a map, encoded and decoded after every
// step; order is first-set order, and the encoding flag goes to hashtable past the limits and
// stays there.
func TestHashCodecModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := &hashValue{}
	model := map[string]string{}
	var order []string
	for step := 0; step < 3000; step++ {
		f := fmt.Sprintf("f%d", rng.IntN(200))
		switch rng.IntN(3) {
		case 0, 1:
			v := fmt.Sprintf("v%d", rng.IntN(1000))
			if rng.IntN(50) == 0 {
				v = fmt.Sprintf("%070d", rng.IntN(1000)) // past the listpack value limit
			}
			if _, ok := model[f]; !ok {
				order = append(order, f)
			}
			model[f] = v
			_, had := h.get([]byte(f))
			if added := h.set([]byte(f), []byte(v)); added == had {
				t.Fatalf("step %d: set %s reported new=%v with the field there=%v", step, f, added, had)
			}
		case 2:
			_, had := model[f]
			if got := h.del([]byte(f)); got != had {
				t.Fatalf("step %d: del %s = %v, want %v", step, f, got, had)
			}
			if had {
				delete(model, f)
				for i, o := range order {
					if o == f {
						order = append(order[:i], order[i+1:]...)
						break
					}
				}
			}
		}
		d, err := decodeHash(h.encode())
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if d.len() != len(order) {
			t.Fatalf("step %d: %d fields, want %d", step, d.len(), len(order))
		}
		for i, f := range order {
			if string(d.fields[i]) != f || string(d.vals[i]) != model[f] {
				t.Fatalf("step %d: field %d is %s=%s, want %s=%s", step, i, d.fields[i], d.vals[i], f, model[f])
			}
			if v, ok := d.get([]byte(f)); !ok || string(v) != model[f] {
				t.Fatalf("step %d: get %s", step, f)
			}
		}
		if len(model) > hashMaxListpackEntries && d.encoding() != "hashtable" {
			t.Fatalf("step %d: %d fields, encoding %s", step, len(model), d.encoding())
		}
		h = d
	}
	if h.encoding() != "hashtable" {
		t.Fatal("the hashtable encoding did not stay")
	}
}

// FuzzDecodeHash: no input makes decodeHash panic, and what it accepts encodes back the same.
func FuzzDecodeHash(f *testing.F) {
	h := &hashValue{}
	h.set([]byte("a"), []byte("1"))
	h.set([]byte(""), []byte("xyz"))
	f.Add(h.encode())
	f.Add([]byte{hashFormat, 0, 0})
	f.Add([]byte{hashFormat, 0, 200, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeHash(b)
		if err != nil {
			return
		}
		if got := d.encode(); string(got) != string(b) {
			// Varints may be non-minimal in the input; a second round must be stable.
			d2, err := decodeHash(got)
			if err != nil || string(d2.encode()) != string(got) {
				t.Fatalf("re-encoding is not stable: %x", b)
			}
		}
	})
}
