package vfs

import (
	"maps"
	"math/rand/v2"
	"slices"
)

// CrashClone returns a new MemFS holding only what fs has made durable, as if the machine lost
// power at this instant: each file's contents as of its last File.Sync, under the names its
// directories held at their last SyncDir. The clone shares nothing with fs; files open on fs are
// not open on the clone.
//
// A file reachable under two durable names (a rename across directories after which only the
// destination was synced) is one file with two names in the clone, as a crashed ext4 could
// leave it.
func (fs *MemFS) CrashClone() *MemFS {
	return fs.crashClone(func(n *memNode) []byte {
		return append([]byte(nil), n.synced...)
	})
}

// CrashCloneRandom is CrashClone for a crash in the middle of writeback: each file additionally
// keeps a random prefix of the bytes it holds beyond its synced length, which is what a torn
// append at the tail of a log looks like. For each file, a quarter of the time nothing past the
// synced length survives, a quarter of the time all of it does, and otherwise a uniformly random
// prefix, so both edges come up often in a short test.
//
// Overwrites of already-synced bytes and truncations below the synced length are never kept.
// Rejected: keeping torn overwrites or zero-filled tails. Lavik's value log only appends, and
// each extra failure mode here would have to be matched by one in every recovery test's model.
// Bytes lost to a failed sync (see SyncFailer) are zeros in the kept tail: writeback skips
// them, but a kept byte after them implies the file size covers them.
//
// This models writes cut short by the crash; FlipBit, LoseSector and DamageRandom model the
// other case, a disk that damages what was already durable.
//
// The same rng state gives the same clone, so a failing test can print its seed.
func (fs *MemFS) CrashCloneRandom(rng *rand.Rand) *MemFS {
	return fs.crashClone(func(n *memNode) []byte {
		out := append([]byte(nil), n.synced...)
		if len(n.data) <= len(n.synced) {
			return out
		}
		tail := n.data[len(n.synced):]
		var keep int
		switch rng.IntN(4) {
		case 0:
			keep = 0
		case 1:
			keep = len(tail)
		default:
			keep = rng.IntN(len(tail) + 1)
		}
		out = append(out, tail[:keep]...)
		for _, r := range n.lost {
			if lo, hi := max(r.off, int64(len(n.synced))), min(r.end, int64(len(out))); lo < hi {
				clear(out[lo:hi])
			}
		}
		return out
	})
}

// crashClone copies the durable tree of fs; contents gives the surviving bytes of each file and
// is called with the file's lock held, once per file, in a deterministic order.
func (fs *MemFS) crashClone(contents func(n *memNode) []byte) *MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	seen := make(map[*memNode]*memNode)
	var clone func(n *memNode) *memNode
	clone = func(n *memNode) *memNode {
		if c, ok := seen[n]; ok {
			return c
		}
		if !n.isDir {
			n.mu.RLock()
			data := contents(n)
			n.mu.RUnlock()
			c := newFileNode(data)
			seen[n] = c
			return c
		}
		c := newDirNode()
		seen[n] = c
		// Walk names in sorted order so that rng draws do not depend on map iteration.
		for _, name := range slices.Sorted(maps.Keys(n.durable)) {
			child := clone(n.durable[name])
			c.children[name] = child
			c.durable[name] = child
		}
		return c
	}
	return &MemFS{root: clone(fs.root)}
}
