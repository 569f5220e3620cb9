package commands

import (
	"slices"

	"github.com/cespare/xxhash/v2"
)

// Cursors of HSCAN and SSCAN. A collection is one record, so a cursor cannot be a position in
// it: adds and removes between calls would move members past it. The cursor is a point in the
// members' hash order instead, as Redis's bucket cursor is: a call returns, in hash order, the
// members whose hash is at least the cursor, about COUNT of them (never splitting members of
// equal hash), and the next cursor is one past the last hash returned; 0 when done. So every
// member present from the first call to the last is returned, and duplicates are possible only
// between members whose 63-bit hashes collide.

// memberHash is a member's place in the cursor order: never 0, which ends an iteration.
func memberHash(m []byte) uint64 { return xxhash.Sum64(m)>>1 | 1 }

// scanPage picks the members of one call: the indexes of members (filtered by match) to return
// and the next cursor.
func scanPage(members [][]byte, a scanArgs) ([]int, uint64) {
	type hm struct {
		h uint64
		i int
	}
	var order []hm
	for i, m := range members {
		if h := memberHash(m); h >= a.cursor {
			order = append(order, hm{h, i})
		}
	}
	slices.SortFunc(order, func(x, y hm) int {
		switch {
		case x.h < y.h:
			return -1
		case x.h > y.h:
			return 1
		}
		return 0
	})
	n := min(a.count, len(order))
	for n < len(order) && n > 0 && order[n].h == order[n-1].h {
		n++
	}
	next := uint64(0)
	if n < len(order) {
		next = order[n-1].h + 1
	}
	if next == 0 {
		// The last page (a compact collection's only one) in the collection's own order, as
		// Redis answers a listpack or an intset.
		slices.SortFunc(order[:n], func(x, y hm) int { return x.i - y.i })
	}
	var out []int
	for _, x := range order[:n] {
		if a.match == nil || GlobMatch(a.match, members[x.i], false) {
			out = append(out, x.i)
		}
	}
	return out, next
}
