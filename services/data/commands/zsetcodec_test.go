package commands

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestZSetCodecModel: random score changes and removals against a map; after every step the
// decoded set is in Redis's order (score, then member), ranks and scores agree with the model,
// and score and lex ranges select what a scan of the model selects.
func TestZSetCodecModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	z := newZSet()
	model := map[string]float64{}
	for step := 0; step < 3000; step++ {
		m := fmt.Sprintf("m%02d", rng.IntN(60))
		if rng.IntN(4) == 0 {
			_, had := model[m]
			if got := z.remove([]byte(m)); got != had {
				t.Fatalf("step %d: remove %s = %v, want %v", step, m, got, had)
			}
			delete(model, m)
		} else {
			s := float64(rng.IntN(10)) / 2
			_, had := model[m]
			if got := z.set([]byte(m), s); got == had {
				t.Fatalf("step %d: set %s reported new=%v with it there=%v", step, m, got, had)
			}
			model[m] = s
		}
		d, err := decodeZSet(z.encode())
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		var want []zitem
		for k, s := range model {
			want = append(want, zitem{s, []byte(k)})
		}
		sort.Slice(want, func(i, j int) bool { return want[i].less(want[j]) })
		if d.len() != len(want) {
			t.Fatalf("step %d: %d items, want %d", step, d.len(), len(want))
		}
		for i, it := range want {
			if d.items[i].score != it.score || string(d.items[i].member) != string(it.member) {
				t.Fatalf("step %d: item %d is %v, want %v", step, i, d.items[i], it)
			}
			if r, ok := d.rank(it.member); !ok || r != i {
				t.Fatalf("step %d: rank of %s = %d, want %d", step, it.member, r, i)
			}
		}
		lo, hi := float64(rng.IntN(10))/2, float64(rng.IntN(10))/2
		r := scoreRange{min: lo, max: hi, minExc: rng.IntN(2) == 0, maxExc: rng.IntN(2) == 0}
		from, to := d.byScore(r)
		n := 0
		for _, it := range want {
			if r.aboveMin(it.score) && r.belowMax(it.score) {
				n++
			}
		}
		if to-from != n {
			t.Fatalf("step %d: %d items in %+v, want %d", step, to-from, r, n)
		}
		z = d
	}
}

// FuzzDecodeZSet: no input makes decodeZSet panic, and what it accepts encodes back stably.
func FuzzDecodeZSet(f *testing.F) {
	z := newZSet()
	z.set([]byte("a"), 1.5)
	z.set([]byte("b"), -2)
	f.Add(z.encode())
	f.Add([]byte{zsetFormat, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeZSet(b)
		if err != nil {
			return
		}
		got := d.encode()
		d2, err := decodeZSet(got)
		if err != nil || string(d2.encode()) != string(got) {
			t.Fatalf("re-encoding is not stable: %x", b)
		}
	})
}
