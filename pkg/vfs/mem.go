package vfs

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that also records what would survive a power loss.
//
// Files are inodes: an open File keeps working after its name is removed or renamed, as on a
// POSIX file system. Each file keeps its current contents and the contents as of its last
// File.Sync. Each directory keeps its current entries and the entries as of its last SyncDir, so
// a file that was created, synced, but whose directory was never synced is lost by CrashClone,
// and a rename or removal not followed by SyncDir may be undone. That is stricter than ext4 in
// its default mode, on purpose: code that is correct here is correct on any POSIX file system.
//
// Directories created by MkdirAll are durable at once. Modelling mkdir durability strictly would
// require every caller to sync each new directory's parent up to the root, which real servers do
// not do for their data directory and which would make every test set-up noisy.
//
// A Sync that an error-injecting wrapper fails (see SyncFailer) loses the bytes written since
// the previous Sync for good, as Linux may after a failed fsync. FlipBit, LoseSector and
// DamageRandom damage bytes that were already durable, as a failing disk does.
//
// Paths are cleaned with filepath.Clean; relative and absolute paths share one root, so "a" and
// "/a" name the same file. Permissions and modification times are not modelled.
type MemFS struct {
	mu sync.Mutex
	// root is the directory "/" (and "."). Directory entries, in every directory, are
	// protected by mu.
	root *memNode
}

// memNode is a file or a directory.
type memNode struct {
	isDir bool

	// Directory fields, protected by MemFS.mu.
	children map[string]*memNode
	// durable holds the entries as of the last SyncDir (or MkdirAll, for directories).
	durable map[string]*memNode

	// File fields, protected by mu.
	mu   sync.RWMutex
	data []byte
	// synced is the content as of the last File.Sync. It never aliases data.
	synced []byte
	// dirtyFrom is the lowest offset changed since the last Sync, or noneDirty. Sync copies
	// only data[dirtyFrom:], so a log that appends and syncs often costs O(bytes written)
	// rather than O(file size) per sync.
	// Invariant: data[:min(dirtyFrom, len(synced), len(data))] equals the same prefix of
	// synced, except in the ranges of lost.
	dirtyFrom int64
	// lost holds the ranges written before a Sync that failed (see SyncFailer) and not written
	// since. Reads return data there, but Sync leaves them as synced holds them, or zeros past
	// its end: the kernel marked those pages clean without writing them.
	// Invariant: sorted, disjoint, non-adjacent and within [0, len(data)).
	lost spans
	// truncatedTo is the smallest size the file was truncated to since the last successful Sync,
	// or noneDirty. Once a Sync makes the truncation durable, the old synced bytes from there on
	// are gone (the blocks were freed), so a lost range there becomes zeros, not old contents.
	truncatedTo int64
}

const noneDirty = math.MaxInt64

func newDirNode() *memNode {
	return &memNode{
		isDir:    true,
		children: make(map[string]*memNode),
		durable:  make(map[string]*memNode),
	}
}

// newFileNode returns a file whose contents, all durable, are data (which it takes over).
func newFileNode(data []byte) *memNode {
	return &memNode{
		data:        data,
		synced:      slices.Clone(data),
		dirtyFrom:   noneDirty,
		truncatedTo: noneDirty,
	}
}

var _ FS = (*MemFS)(nil)

// NewMem returns an empty in-memory file system whose root directory exists.
func NewMem() *MemFS {
	return &MemFS{root: newDirNode()}
}

// splitPath cleans name and returns its components below the root ("a/b" -> ["a" "b"]).
func splitPath(name string) []string {
	c := filepath.Clean(name)
	c = strings.TrimPrefix(c, string(filepath.Separator))
	if c == "" || c == "." {
		return nil
	}
	return strings.Split(c, string(filepath.Separator))
}

// lookupDirLocked returns the directory node for the components in parts.
func (fs *MemFS) lookupDirLocked(parts []string) (*memNode, error) {
	n := fs.root
	for _, p := range parts {
		c, ok := n.children[p]
		if !ok {
			return nil, syscall.ENOENT
		}
		if !c.isDir {
			return nil, syscall.ENOTDIR
		}
		n = c
	}
	return n, nil
}

// parentLocked returns the directory holding name and name's last component. For the root
// itself it returns base "".
func (fs *MemFS) parentLocked(name string) (dir *memNode, base string, err error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return nil, "", nil
	}
	dir, err = fs.lookupDirLocked(parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	return dir, parts[len(parts)-1], nil
}

// lookupLocked returns the node called name, file or directory.
func (fs *MemFS) lookupLocked(name string) (*memNode, error) {
	dir, base, err := fs.parentLocked(name)
	if err != nil {
		return nil, err
	}
	if base == "" {
		return fs.root, nil
	}
	n, ok := dir.children[base]
	if !ok {
		return nil, syscall.ENOENT
	}
	return n, nil
}

// Create implements FS.
func (fs *MemFS) Create(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parentLocked(name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if base == "" {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	n, ok := dir.children[base]
	switch {
	case ok && n.isDir:
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	case ok:
		// O_TRUNC truncates the existing inode, which other open handles share. Like any
		// other change to the contents, the truncation is durable only after File.Sync.
		n.mu.Lock()
		n.truncateLocked(0)
		n.mu.Unlock()
	default:
		n = newFileNode(nil)
		dir.children[base] = n
	}
	return &memFile{node: n, name: name}, nil
}

func (fs *MemFS) openFile(name string, readOnly bool) (*memFile, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.lookupLocked(name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if n.isDir {
		// os.Open succeeds on a directory, but every File method but Close then fails;
		// refusing early gives callers a clearer error.
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	f := &memFile{node: n, name: name, readOnly: readOnly}
	if !readOnly {
		n.mu.RLock()
		f.pos = int64(len(n.data))
		n.mu.RUnlock()
	}
	return f, nil
}

// OpenReadWrite implements FS.
func (fs *MemFS) OpenReadWrite(name string) (File, error) {
	f, err := fs.openFile(name, false)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Open implements FS.
func (fs *MemFS) Open(name string) (File, error) {
	f, err := fs.openFile(name, true)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// OpenDirect implements FS. Memory has no page cache to bypass, so direct is always false.
func (fs *MemFS) OpenDirect(name string) (File, bool, error) {
	f, err := fs.Open(name)
	return f, false, err
}

// Remove implements FS. It removes a file or an empty directory. Removing a file is durable only
// after SyncDir on its directory; open handles keep working.
func (fs *MemFS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base, err := fs.parentLocked(name)
	if err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	if base == "" {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.EBUSY}
	}
	n, ok := dir.children[base]
	if !ok {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOENT}
	}
	if n.isDir && len(n.children) > 0 {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(dir.children, base)
	if n.isDir {
		// Directories are durable as soon as they exist (see MemFS); keep that symmetric.
		delete(dir.durable, base)
	}
	return nil
}

// Rename implements FS. The new name and the removal of the old one become durable separately,
// by SyncDir on their directories; until then a crash may undo either.
func (fs *MemFS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	lerr := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	odir, obase, err := fs.parentLocked(oldname)
	if err != nil {
		return lerr(err)
	}
	ndir, nbase, err := fs.parentLocked(newname)
	if err != nil {
		return lerr(err)
	}
	if obase == "" || nbase == "" {
		return lerr(syscall.EBUSY)
	}
	n, ok := odir.children[obase]
	if !ok {
		return lerr(syscall.ENOENT)
	}
	if ndir.children[nbase] == n {
		// Same name, or two names of one file (see CrashClone): POSIX rename does nothing.
		return nil
	}
	if old, ok := ndir.children[nbase]; ok {
		switch {
		case n.isDir && !old.isDir:
			return lerr(syscall.ENOTDIR)
		case !n.isDir && old.isDir:
			return lerr(syscall.EEXIST)
		case old.isDir && len(old.children) > 0:
			return lerr(syscall.ENOTEMPTY)
		}
	}
	if n.isDir {
		// Refuse to move a directory below itself.
		for d := ndir; ; {
			if d == n {
				return lerr(syscall.EINVAL)
			}
			p := fs.parentOfLocked(d)
			if p == nil {
				break
			}
			d = p
		}
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	return nil
}

// parentOfLocked returns the directory whose current entries hold d, or nil for the root. It is
// a walk of the tree, which is fine for a test file system.
func (fs *MemFS) parentOfLocked(d *memNode) *memNode {
	var find func(dir *memNode) *memNode
	find = func(dir *memNode) *memNode {
		for _, c := range dir.children {
			if c == d {
				return dir
			}
			if c.isDir {
				if p := find(c); p != nil {
					return p
				}
			}
		}
		return nil
	}
	return find(fs.root)
}

// MkdirAll implements FS. The permission bits are ignored.
func (fs *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.root
	for _, p := range splitPath(dir) {
		c, ok := n.children[p]
		if !ok {
			c = newDirNode()
			n.children[p] = c
			n.durable[p] = c
		} else if !c.isDir {
			return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		n = c
	}
	return nil
}

// List implements FS. Like the OS implementation it lists every entry, subdirectories included.
func (fs *MemFS) List(dir string) ([]string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, err := fs.lookupDirLocked(splitPath(dir))
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	names := make([]string, 0, len(d.children))
	for name := range d.children {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// SyncDir implements FS: the current entries of dir become its durable entries.
func (fs *MemFS) SyncDir(dir string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d, err := fs.lookupDirLocked(splitPath(dir))
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	d.durable = make(map[string]*memNode, len(d.children))
	for name, c := range d.children {
		d.durable[name] = c
	}
	return nil
}

// Stat implements FS.
func (fs *MemFS) Stat(name string) (os.FileInfo, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.lookupLocked(name)
	if err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	fi := memFileInfo{name: filepath.Base(filepath.Clean(name)), isDir: n.isDir}
	if !n.isDir {
		n.mu.RLock()
		fi.size = int64(len(n.data))
		n.mu.RUnlock()
	}
	return fi, nil
}

// memFile is an open file of a MemFS.
type memFile struct {
	node     *memNode
	name     string
	readOnly bool

	// pos is the write position of Write, protected by node.mu.
	pos    int64
	closed bool // protected by node.mu
}

func (f *memFile) pathErr(op string, err error) error {
	return &os.PathError{Op: op, Path: f.name, Err: err}
}

// checkLocked reports why f cannot be used for op, or nil.
func (f *memFile) checkLocked(op string, write bool) error {
	if f.closed {
		return f.pathErr(op, os.ErrClosed)
	}
	if write && f.readOnly {
		return f.pathErr(op, syscall.EBADF)
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, f.pathErr("read", syscall.EINVAL)
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// writeAtLocked writes p at off, growing the file with zeros if off is past its end. The
// written range is no longer lost: the next Sync writes it.
func (n *memNode) writeAtLocked(p []byte, off int64) {
	n.dirtyFrom = min(n.dirtyFrom, off, int64(len(n.data)))
	end := off + int64(len(p))
	n.lost = n.lost.remove(off, end)
	if end > int64(len(n.data)) {
		if end > int64(cap(n.data)) {
			// Grow geometrically so appends are amortised O(1).
			grown := make([]byte, end, max(end, 2*int64(cap(n.data))))
			copy(grown, n.data)
			n.data = grown
		} else {
			old := len(n.data)
			n.data = n.data[:end]
			clear(n.data[old:])
		}
	}
	copy(n.data[off:], p)
}

// truncateLocked changes the size of the file to size.
func (n *memNode) truncateLocked(size int64) {
	if size > int64(len(n.data)) {
		n.writeAtLocked(nil, size)
		return
	}
	n.dirtyFrom = min(n.dirtyFrom, size)
	n.truncatedTo = min(n.truncatedTo, size)
	n.data = n.data[:size]
	n.lost = n.lost.remove(size, noneDirty)
}

// syncLocked makes the current contents durable, except the lost ranges, in O(bytes changed
// since the last Sync + number of lost ranges).
func (n *memNode) syncLocked() {
	size := int64(len(n.data))
	// Durable bytes before keep survive as they are; from keep on the file is new or was
	// truncated away, so what Sync does not copy reads as zeros.
	keep := min(int64(len(n.synced)), size, n.truncatedTo)
	n.synced = slices.Grow(n.synced[:keep], int(size-keep))[:size]
	clear(n.synced[keep:])
	// Bytes before min(dirtyFrom, keep) equal synced already, or are lost.
	pos := min(n.dirtyFrom, keep)
	for _, r := range n.lost {
		if r.end <= pos {
			continue
		}
		if r.off > pos {
			copy(n.synced[pos:r.off], n.data[pos:r.off])
		}
		pos = r.end
	}
	if pos < size {
		copy(n.synced[pos:], n.data[pos:])
	}
	n.dirtyFrom = noneDirty
	n.truncatedTo = noneDirty
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, f.pathErr("write", syscall.EINVAL)
	}
	f.node.writeAtLocked(p, off)
	return len(p), nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	f.node.writeAtLocked(p, f.pos)
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) Close() error {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if f.closed {
		return f.pathErr("close", os.ErrClosed)
	}
	f.closed = true
	return nil
}

// Sync makes the file's current contents its durable contents, except bytes lost to an earlier
// failed Sync (see SyncFailed). Like fdatasync it says nothing about the file's name: that takes
// SyncDir.
func (f *memFile) Sync() error {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if err := f.checkLocked("sync", false); err != nil {
		return err
	}
	f.node.syncLocked()
	return nil
}

var _ SyncFailer = (*memFile)(nil)

// SyncFailed implements SyncFailer: everything written since the last Sync, successful or not,
// joins the lost ranges, and the file counts as clean. The size and any truncation stay pending
// and become durable with the next successful Sync, which is why lost bytes past the old synced
// length come back from a crash as zeros in a file of the new length rather than as a shorter
// file: on ext4 the size is metadata, journaled on its own, while the data blocks it covers were
// never written. Closed files are left alone, as fsync on a closed descriptor fails with EBADF
// without touching the page cache.
func (f *memFile) SyncFailed() {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if f.closed {
		return
	}
	n := f.node
	// dirtyFrom over-approximates what was written: bytes in [dirtyFrom, len(data)) that were
	// not written equal their durable contents (or are zeros past the synced length), so
	// marking them lost changes nothing a crash could show.
	if from := min(n.dirtyFrom, int64(len(n.data))); from < int64(len(n.data)) {
		n.lost = n.lost.add(from, int64(len(n.data)))
	}
	n.dirtyFrom = noneDirty
}

func (f *memFile) Truncate(size int64) error {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if err := f.checkLocked("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return f.pathErr("truncate", syscall.EINVAL)
	}
	f.node.truncateLocked(size)
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	if err := f.checkLocked("stat", false); err != nil {
		return 0, err
	}
	return int64(len(f.node.data)), nil
}

func (f *memFile) Fd() (uintptr, error) { return 0, ErrNoFD }

// memFileInfo implements os.FileInfo for MemFS.
type memFileInfo struct {
	name  string
	size  int64
	isDir bool
}

func (fi memFileInfo) Name() string { return fi.name }
func (fi memFileInfo) Size() int64  { return fi.size }
func (fi memFileInfo) Mode() os.FileMode {
	if fi.isDir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
func (fi memFileInfo) ModTime() time.Time { return time.Time{} }
func (fi memFileInfo) IsDir() bool        { return fi.isDir }
func (fi memFileInfo) Sys() any           { return nil }

// span is the byte range [off, end) of a file.
type span struct{ off, end int64 }

// spans is a set of bytes as sorted, disjoint, non-adjacent ranges. Its methods return the
// updated set and may reuse the receiver's array only when nothing changes.
type spans []span

// add returns s with [off, end) added.
func (s spans) add(off, end int64) spans {
	if off >= end {
		return s
	}
	out := make(spans, 0, len(s)+1)
	i := 0
	for i < len(s) && s[i].end < off {
		out = append(out, s[i])
		i++
	}
	for i < len(s) && s[i].off <= end {
		off, end = min(off, s[i].off), max(end, s[i].end)
		i++
	}
	out = append(out, span{off, end})
	return append(out, s[i:]...)
}

// remove returns s without [off, end).
func (s spans) remove(off, end int64) spans {
	if off >= end || !s.overlaps(off, end) {
		return s
	}
	out := make(spans, 0, len(s)+1)
	for _, r := range s {
		if r.end <= off || r.off >= end {
			out = append(out, r)
			continue
		}
		if r.off < off {
			out = append(out, span{r.off, off})
		}
		if r.end > end {
			out = append(out, span{end, r.end})
		}
	}
	return out
}

// overlaps reports whether any byte of [off, end) is in s.
func (s spans) overlaps(off, end int64) bool {
	for _, r := range s {
		if r.off < end && off < r.end {
			return true
		}
	}
	return false
}
