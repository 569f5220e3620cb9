package commands

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

// TestStreamCodecModel: random appends, deletions, trims and group operations against a
// simple model (a map of entries by id, a map of PEL entries by group); after every step the
// stream survives a round trip through its encoding unchanged, its entries are the model's in
// id order, and each group's PEL is the model's in id order.
func TestStreamCodecModel(t *testing.T) {
	seed := uint64(7)
	rng := rand.New(rand.NewPCG(seed, 8))
	s := newStream()
	entries := map[streamID]string{}
	pel := map[string]map[streamID]string{}
	for step := 0; step < 3000; step++ {
		switch op := rng.IntN(10); {
		case op < 5:
			id, _ := s.lastID.next()
			if rng.IntN(3) == 0 {
				id = streamID{s.lastID.ms + uint64(rng.IntN(3)) + 1, uint64(rng.IntN(3))}
			}
			v := fmt.Sprint(step)
			s.append(id, [][]byte{[]byte("f"), []byte(v)})
			entries[id] = v
		case op == 5 && len(s.entries) > 0:
			id := s.entries[rng.IntN(len(s.entries))].id
			if !s.del(id) {
				t.Fatalf("seed %d step %d: del %v of an entry there failed", seed, step, id)
			}
			delete(entries, id)
		case op == 6:
			max := int64(rng.IntN(40))
			n := s.trimMaxLen(max, 0)
			if want := int64(len(entries)) - max; n != maxInt(want, 0) {
				t.Fatalf("seed %d step %d: trim to %d removed %d of %d", seed, step, max, n, len(entries))
			}
			for _, id := range sortedIDs(entries)[:n] {
				delete(entries, id)
			}
		case op == 7:
			name := fmt.Sprintf("g%d", rng.IntN(3))
			if s.group([]byte(name)) == nil {
				s.addGroup(&streamGroup{name: name, entriesRead: streamInvalidEntriesRead})
				pel[name] = map[streamID]string{}
			}
		case op == 8 && len(s.groups) > 0 && len(s.entries) > 0:
			g := s.groups[rng.IntN(len(s.groups))]
			e := s.entries[rng.IntN(len(s.entries))]
			cons := fmt.Sprintf("c%d", rng.IntN(3))
			g.addConsumer(cons, int64(step))
			g.addPending(e.id, cons, int64(step))
			s.delivered(g, e.id)
			pel[g.name][e.id] = cons
		case op == 9 && len(s.groups) > 0:
			g := s.groups[rng.IntN(len(s.groups))]
			if len(g.pel) > 0 {
				id := g.pel[rng.IntN(len(g.pel))].id
				if !g.ack(id) {
					t.Fatalf("seed %d step %d: ack of a pending entry failed", seed, step)
				}
				delete(pel[g.name], id)
			}
		}
		d, err := decodeStream(s.encode())
		if err != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
		if !reflect.DeepEqual(d.encode(), s.encode()) {
			t.Fatalf("seed %d step %d: re-encoding differs", seed, step)
		}
		var got []streamID
		for _, e := range d.entries {
			got = append(got, e.id)
			if string(e.fields[1]) != entries[e.id] {
				t.Fatalf("seed %d step %d: entry %v holds %q, want %q", seed, step, e.id, e.fields[1], entries[e.id])
			}
		}
		if want := sortedIDs(entries); !reflect.DeepEqual(got, want) && len(want)+len(got) > 0 {
			t.Fatalf("seed %d step %d: entries %v, want %v", seed, step, got, want)
		}
		for _, g := range d.groups {
			var ids []streamID
			for _, p := range g.pel {
				ids = append(ids, p.id)
				if pel[g.name][p.id] != p.consumer {
					t.Fatalf("seed %d step %d: %v pending for %q, want %q", seed, step, p.id, p.consumer, pel[g.name][p.id])
				}
			}
			if want := sortedIDs(pel[g.name]); !reflect.DeepEqual(ids, want) && len(want)+len(ids) > 0 {
				t.Fatalf("seed %d step %d: group %s PEL %v, want %v", seed, step, g.name, ids, want)
			}
		}
	}
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func sortedIDs[V any](m map[streamID]V) []streamID {
	out := make([]streamID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].less(out[j]) })
	return out
}

// TestStreamIDParse checks the id forms Redis's stream commands accept.
func TestStreamIDParse(t *testing.T) {
	for _, tc := range []struct {
		in     string
		strict bool
		want   streamID
		ok     bool
	}{
		{"1-2", false, streamID{1, 2}, true},
		{"5", false, streamID{5, 7}, true},
		{"-", false, streamID{}, true},
		{"+", false, maxStreamID, true},
		{"-", true, streamID{}, false},
		{"18446744073709551615-18446744073709551615", true, maxStreamID, true},
		{"18446744073709551616", true, streamID{}, false},
		{"-1", true, streamID{}, false},
		{"1-x", true, streamID{}, false},
		{"1-*", true, streamID{}, false},
		{"", true, streamID{}, false},
	} {
		got, err := parseStreamID([]byte(tc.in), 7, tc.strict, nil)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("parse %q strict=%v: %v %v, want %v ok=%v", tc.in, tc.strict, got, err, tc.want, tc.ok)
		}
	}
	var seqGiven bool
	if id, err := parseStreamID([]byte("3-*"), 0, true, &seqGiven); err != nil || seqGiven || id != (streamID{3, 0}) {
		t.Errorf("parse 3-*: %v %v seqGiven=%v", id, err, seqGiven)
	}
}

func FuzzDecodeStream(f *testing.F) {
	s := newStream()
	s.append(streamID{1, 1}, [][]byte{[]byte("a"), []byte("1")})
	s.append(streamID{2, 0}, [][]byte{[]byte("b"), []byte("2")})
	g := &streamGroup{name: "g", entriesRead: -1}
	s.addGroup(g)
	g.addConsumer("c", 5)
	g.addPending(streamID{1, 1}, "c", 6)
	f.Add(s.encode())
	f.Add(newStream().encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeStream(b)
		if err != nil {
			return
		}
		got := d.encode()
		d2, err := decodeStream(got)
		if err != nil || string(d2.encode()) != string(got) {
			t.Fatalf("re-encoding is not stable: %x", b)
		}
	})
}
