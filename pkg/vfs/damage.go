package vfs

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"syscall"
)

// This file damages data a MemFS already holds durably, as a failing disk does: a bit that
// rots, a sector that can no longer be read, a write that lands in the wrong place. That is the
// opposite case to CrashCloneRandom, whose damage is limited to bytes that were never synced
// (a torn tail), and to a failed Sync (see SyncFailer), which loses bytes before they are
// durable. Corruption tests use both kinds: a recovery that survives torn tails must still
// detect, and report, damage in the middle of a segment that was synced long ago.

// ErrNotSynced is returned when asked to damage bytes that a file has not synced: the damage is
// done to the disk, and the disk holds only what was synced.
var ErrNotSynced = errors.New("vfs: no synced bytes to damage there")

// DamageKind says how a range of a file was damaged.
type DamageKind int

const (
	// BitFlip inverts one bit of one byte: bit rot, or a flaky controller or cable that no
	// checksum below the file system caught.
	BitFlip DamageKind = iota + 1
	// SectorZeroed makes a whole sector read as zeros: what is left when an unreadable sector
	// was rewritten with zeros so that the drive remaps it (hdparm --write-sector, a repair
	// tool), or when an SSD lost the mapping of a block, which then reads as zeros. A sector
	// that cannot be read at all is a read error, which NewErrorFS's injector models instead.
	SectorZeroed
	// SectorGarbage replaces every byte of a sector with a different one: what a misdirected
	// write leaves, another block's data landing in this sector. Every byte differs from what
	// was there, so the damage cannot happen to leave a checksum intact by chance.
	SectorGarbage
)

var damageKindNames = [...]string{
	BitFlip:       "bit flip",
	SectorZeroed:  "zeroed sector",
	SectorGarbage: "garbage sector",
}

func (k DamageKind) String() string {
	if k > 0 && int(k) < len(damageKindNames) {
		return damageKindNames[k]
	}
	return fmt.Sprintf("DamageKind(%d)", int(k))
}

// Damage is one damaged range of a file.
type Damage struct {
	// Path is the file, absolute and cleaned ("data/f" is reported as "/data/f").
	Path string
	// Off is the first damaged byte and Len the number of damaged bytes: 1 for a BitFlip, the
	// sector size for a lost sector, less if the sector reaches past the file's synced length.
	Off, Len int64
	Kind     DamageKind
	// Bit is the bit a BitFlip inverted, 0 being the least significant; 0 for other kinds.
	Bit int
}

func (d Damage) String() string {
	if d.Kind == BitFlip {
		return fmt.Sprintf("%s: bit %d of byte %d flipped", d.Path, d.Bit, d.Off)
	}
	return fmt.Sprintf("%s: %s at %d, %d bytes", d.Path, d.Kind, d.Off, d.Len)
}

// FlipBit inverts bit (0 to 7, 0 the least significant) of the byte at off in the durable
// contents of name. It returns ErrNotSynced, wrapped in *os.PathError, if off is not below the
// file's synced length.
//
// Damage changes the durable contents, which a later CrashClone keeps, and what reads of the
// file return from now on, as if the page cache had read the damaged sector back: a change to
// those bytes not yet synced is undone for them. That is simpler than the page cache, in which
// a pending write would win, and it keeps reads and crashes in agreement, which is what a test
// needs. The exception is bytes that an unsynced truncation cut off: they are damaged on disk
// only, and freed by the next Sync. Damage a crash clone, or a file with nothing pending, to
// have neither matter.
func (fs *MemFS) FlipBit(name string, off int64, bit int) (Damage, error) {
	if bit < 0 || bit > 7 {
		return Damage{}, fmt.Errorf("vfs: FlipBit %s: bit %d is not in 0..7: %w", name, bit, syscall.EINVAL)
	}
	n, unlock, err := fs.lockFile(name, off)
	if err != nil {
		return Damage{}, err
	}
	defer unlock()
	n.flipBitLocked(off, bit)
	return Damage{Path: cleanPath(name), Off: off, Len: 1, Kind: BitFlip, Bit: bit}, nil
}

// LoseSector damages the sector of name that holds off, the sectorSize bytes starting at the
// multiple of sectorSize at or below off, as a disk loses a sector: kind SectorZeroed makes it
// read as zeros and kind SectorGarbage replaces each byte with a different one drawn from rng
// (which SectorZeroed does not use and may be nil). Only the synced bytes of the sector are
// damaged: a sector that reaches past the synced length is cut short there, and the file does
// not grow. LoseSector returns ErrNotSynced, wrapped in *os.PathError, if off is not below the
// synced length. Zeroing a sector that already reads as zeros changes nothing, and is reported
// all the same.
//
// What reads return changes as for FlipBit.
func (fs *MemFS) LoseSector(name string, off, sectorSize int64, kind DamageKind, rng *rand.Rand) (Damage, error) {
	switch {
	case sectorSize <= 0:
		return Damage{}, fmt.Errorf("vfs: LoseSector %s: sector size %d: %w", name, sectorSize, syscall.EINVAL)
	case kind != SectorZeroed && kind != SectorGarbage:
		return Damage{}, fmt.Errorf("vfs: LoseSector %s: %v is not a kind of lost sector: %w", name, kind, syscall.EINVAL)
	case kind == SectorGarbage && rng == nil:
		return Damage{}, fmt.Errorf("vfs: LoseSector %s: garbage needs a random source: %w", name, syscall.EINVAL)
	}
	n, unlock, err := fs.lockFile(name, off)
	if err != nil {
		return Damage{}, err
	}
	defer unlock()
	start := off - off%sectorSize
	end := min(start+sectorSize, int64(len(n.synced)))
	n.loseLocked(start, end, kind, rng)
	return Damage{Path: cleanPath(name), Off: start, Len: end - start, Kind: kind}, nil
}

// DamageOptions says where DamageRandom damages files, and how.
type DamageOptions struct {
	// Match selects the files to damage by path, absolute and cleaned ("/data/000001.vlog");
	// nil selects every file. It is called with the file system locked, so it must not use it.
	Match func(path string) bool
	// SectorSize is the size of the aligned sectors that damage is placed in and that lost
	// sectors lose. Zero means 4096, the physical sector of current drives: those that present
	// 512-byte logical sectors (512e) still lose whole 4096-byte physical ones.
	SectorSize int64
	// Kinds are the kinds of damage to choose from, each equally likely; empty means all.
	Kinds []DamageKind
}

// DamageRandom damages n random places in the synced bytes of the files opts.Match selects and
// returns what it did, sorted by path and offset. The places are distinct sectors, chosen
// uniformly among the sectors that hold synced bytes of selected files, so no damage undoes or
// hides another (two flips of one bit would cancel out) and a test can attribute each error
// that recovery reports to one Damage. A file with several names is damaged once, under the
// first of them in sorted order that Match selects.
//
// Every Damage changes the file: a lost sector that would be zeroed but already reads as zeros
// is filled with garbage instead, and reported as SectorGarbage, because damage nothing can
// detect would make a test that expects every damage to be reported fail for no fault of the
// code under test. What reads return changes as for FlipBit.
//
// It returns an error, and damages nothing, if the selected files hold fewer than n sectors of
// synced data. The same rng state and file system give the same damage, so a failing test can
// print its seed; use it on a CrashClone to damage a crashed disk before recovery reads it.
func (fs *MemFS) DamageRandom(rng *rand.Rand, n int, opts DamageOptions) ([]Damage, error) {
	sector := opts.SectorSize
	if sector == 0 {
		sector = 4096
	}
	kinds := opts.Kinds
	if len(kinds) == 0 {
		kinds = []DamageKind{BitFlip, SectorZeroed, SectorGarbage}
	}
	switch {
	case n < 0:
		return nil, fmt.Errorf("vfs: DamageRandom: %d places: %w", n, syscall.EINVAL)
	case sector < 0:
		return nil, fmt.Errorf("vfs: DamageRandom: sector size %d: %w", sector, syscall.EINVAL)
	case rng == nil:
		return nil, fmt.Errorf("vfs: DamageRandom: no random source: %w", syscall.EINVAL)
	}
	for _, k := range kinds {
		if k != BitFlip && k != SectorZeroed && k != SectorGarbage {
			return nil, fmt.Errorf("vfs: DamageRandom: %v: %w", k, syscall.EINVAL)
		}
	}

	fs.mu.Lock()
	defer fs.mu.Unlock()
	files := fs.filesLocked(opts.Match)
	// Hold every selected file still while counting and damaging. Only this function locks
	// two files at once, and it does so under fs.mu, so the order cannot deadlock.
	for _, f := range files {
		f.node.mu.Lock()
		defer f.node.mu.Unlock()
	}
	var total int64
	firsts := make([]int64, len(files)) // the index of each file's first sector among all
	for i, f := range files {
		firsts[i] = total
		total += (int64(len(f.node.synced)) + sector - 1) / sector
	}
	if int64(n) > total {
		return nil, fmt.Errorf("vfs: DamageRandom: %d places asked for, but the selected files hold only %d sectors of synced data", n, total)
	}

	out := make([]Damage, 0, n)
	fi := 0
	// Sectors are damaged in ascending order, files sorted by path first, so out is sorted.
	for _, s := range sampleDistinct(rng, total, n) {
		for fi+1 < len(files) && firsts[fi+1] <= s {
			fi++
		}
		f := files[fi]
		start := (s - firsts[fi]) * sector
		end := min(start+sector, int64(len(f.node.synced)))
		d := Damage{Path: f.path, Off: start, Len: end - start, Kind: kinds[rng.IntN(len(kinds))]}
		switch d.Kind {
		case BitFlip:
			d.Off, d.Len, d.Bit = start+rng.Int64N(end-start), 1, rng.IntN(8)
			f.node.flipBitLocked(d.Off, d.Bit)
		case SectorZeroed:
			if !slices.ContainsFunc(f.node.synced[start:end], func(b byte) bool { return b != 0 }) {
				d.Kind = SectorGarbage
			}
			f.node.loseLocked(start, end, d.Kind, rng)
		case SectorGarbage:
			f.node.loseLocked(start, end, d.Kind, rng)
		}
		out = append(out, d)
	}
	return out, nil
}

// sampleDistinct returns n distinct integers drawn uniformly from [0, total), sorted. It uses
// Floyd's algorithm: exactly n draws, whatever the ratio of n to total.
func sampleDistinct(rng *rand.Rand, total int64, n int) []int64 {
	set := make(map[int64]bool, n)
	for j := total - int64(n); j < total; j++ {
		t := rng.Int64N(j + 1)
		if set[t] {
			t = j
		}
		set[t] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// damageFile is a file DamageRandom may damage.
type damageFile struct {
	path string
	node *memNode
}

// filesLocked returns the files reachable under the current names of fs that match selects (all
// if match is nil), sorted by path, each file once under its first selected name.
func (fs *MemFS) filesLocked(match func(path string) bool) []damageFile {
	var all []damageFile
	var walk func(dir *memNode, path string)
	walk = func(dir *memNode, path string) {
		for name, c := range dir.children {
			p := path + "/" + name
			if c.isDir {
				walk(c, p)
			} else if match == nil || match(p) {
				all = append(all, damageFile{p, c})
			}
		}
	}
	walk(fs.root, "")
	slices.SortFunc(all, func(a, b damageFile) int { return strings.Compare(a.path, b.path) })
	seen := make(map[*memNode]bool, len(all))
	return slices.DeleteFunc(all, func(f damageFile) bool {
		dup := seen[f.node]
		seen[f.node] = true
		return dup
	})
}

// lockFile returns the file called name, locked, and the function that unlocks it. It fails if
// name is not a file or off is not within its synced bytes.
func (fs *MemFS) lockFile(name string, off int64) (*memNode, func(), error) {
	fs.mu.Lock()
	n, err := fs.lookupLocked(name)
	if err == nil && n.isDir {
		err = syscall.EISDIR
	}
	if err != nil {
		fs.mu.Unlock()
		return nil, nil, &os.PathError{Op: "damage", Path: name, Err: err}
	}
	n.mu.Lock()
	fs.mu.Unlock()
	if off < 0 || off >= int64(len(n.synced)) {
		n.mu.Unlock()
		return nil, nil, &os.PathError{Op: "damage", Path: name, Err: fmt.Errorf("offset %d of %d synced bytes: %w", off, len(n.synced), ErrNotSynced)}
	}
	return n, n.mu.Unlock, nil
}

// cleanPath returns name as DamageRandom names files: absolute and cleaned.
func cleanPath(name string) string {
	return "/" + strings.Join(splitPath(name), "/")
}

// flipBitLocked inverts bit of the durable byte at off, which must be below len(n.synced).
func (n *memNode) flipBitLocked(off int64, bit int) {
	n.synced[off] ^= 1 << bit
	n.showDamageLocked(off, off+1)
}

// loseLocked zeroes synced[off:end], or for SectorGarbage replaces each byte with another drawn
// from rng.
func (n *memNode) loseLocked(off, end int64, kind DamageKind, rng *rand.Rand) {
	b := n.synced[off:end]
	if kind == SectorZeroed {
		clear(b)
	} else {
		for i := range b {
			b[i] ^= byte(1 + rng.IntN(255))
		}
	}
	n.showDamageLocked(off, end)
}

// showDamageLocked makes reads of [off, end) return the durable bytes, except bytes the file
// was truncated below since the last Sync: the file holds other bytes there now (zeros or new
// writes), and the next Sync frees the damaged ones. Afterwards data equals synced in the rest,
// so the invariant on dirtyFrom holds, SyncFailed may mark those bytes lost without their
// having been written, and a later Sync keeps the damage whether they are lost or not.
func (n *memNode) showDamageLocked(off, end int64) {
	if end = min(end, int64(len(n.data)), n.truncatedTo); off < end {
		copy(n.data[off:end], n.synced[off:end])
	}
}
