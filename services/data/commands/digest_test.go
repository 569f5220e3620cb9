package commands

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestValueDigest: a hash's or set's digest does not depend on the order it was built in, a
// list's does; any change of a member, a value or an element changes it; types never collide.
func TestValueDigest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	digest := func(typ uint8, enc []byte) string {
		t.Helper()
		d, err := valueDigest(typ, enc)
		if err != nil {
			t.Fatal(err)
		}
		return digestHex(d)
	}
	fields := make([]string, 200)
	for i := range fields {
		fields[i] = fmt.Sprint("f", i)
	}
	hashOf := func(order []int, change int) []byte {
		h := &hashValue{}
		for _, i := range order {
			v := fmt.Sprint("v", i)
			if i == change {
				v += "!"
			}
			h.set([]byte(fields[i]), []byte(v))
		}
		return h.encode()
	}
	setOf := func(order []int) []byte {
		s := newSet()
		for _, i := range order {
			s.add([]byte(fields[i]))
		}
		return s.encode()
	}
	listOf := func(order []int) []byte {
		l := newList()
		for _, i := range order {
			l.push([]byte(fields[i]), false)
		}
		return l.encode()
	}
	inOrder := make([]int, len(fields))
	for i := range inOrder {
		inOrder[i] = i
	}
	shuffled := rng.Perm(len(fields))
	if digest(typeHash, hashOf(inOrder, -1)) != digest(typeHash, hashOf(shuffled, -1)) {
		t.Error("a hash's digest depends on the order of its fields")
	}
	if digest(typeHash, hashOf(inOrder, -1)) == digest(typeHash, hashOf(inOrder, 57)) {
		t.Error("a hash's digest misses a changed value")
	}
	if digest(typeSet, setOf(inOrder)) != digest(typeSet, setOf(shuffled)) {
		t.Error("a set's digest depends on the order of its members")
	}
	if digest(typeSet, setOf(inOrder)) == digest(typeSet, setOf(inOrder[1:])) {
		t.Error("a set's digest misses a removed member")
	}
	if digest(typeList, listOf(inOrder)) == digest(typeList, listOf(shuffled)) {
		t.Error("a list's digest misses the order of its elements")
	}
	// The same members as a set and as a list, a string of a list's encoding: different types.
	seen := map[string]uint8{}
	for typ, enc := range map[uint8][]byte{typeSet: setOf(inOrder), typeList: listOf(inOrder), typeString: listOf(inOrder)} {
		d := digest(typ, enc)
		if other, ok := seen[d]; ok {
			t.Errorf("types %d and %d share a digest", typ, other)
		}
		seen[d] = typ
	}
	if _, err := valueDigest(typeHash, []byte("not a hash")); err == nil {
		t.Error("a corrupt hash got a digest")
	}
}
