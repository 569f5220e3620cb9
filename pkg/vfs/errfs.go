package vfs

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
)

// Op names a file-system operation for error injection.
type Op int

// The operations an Injector is asked about. OpAny is never passed to an Injector; injectors in
// this package accept it to mean every operation.
const (
	OpAny      Op = iota
	OpCreate      // FS.Create
	OpOpen        // FS.Open, FS.OpenReadWrite, FS.OpenDirect
	OpRead        // File.ReadAt
	OpWrite       // File.Write, File.WriteAt
	OpSync        // File.Sync
	OpTruncate    // File.Truncate
	OpClose       // File.Close; the underlying file is closed anyway
	OpRemove      // FS.Remove
	OpRename      // FS.Rename (path is the old name)
	OpMkdirAll    // FS.MkdirAll
	OpList        // FS.List
	OpSyncDir     // FS.SyncDir
	OpStat        // FS.Stat, File.Size
)

var opNames = [...]string{
	OpAny:      "any",
	OpCreate:   "create",
	OpOpen:     "open",
	OpRead:     "read",
	OpWrite:    "write",
	OpSync:     "sync",
	OpTruncate: "truncate",
	OpClose:    "close",
	OpRemove:   "remove",
	OpRename:   "rename",
	OpMkdirAll: "mkdir",
	OpList:     "list",
	OpSyncDir:  "syncdir",
	OpStat:     "stat",
}

func (op Op) String() string {
	if op >= 0 && int(op) < len(opNames) {
		return opNames[op]
	}
	return fmt.Sprintf("Op(%d)", int(op))
}

// Injector decides whether an operation fails. MaybeError is called before the operation reaches
// the wrapped file system, from any goroutine; a non-nil result fails the operation with that
// error (wrapped in *os.PathError or *os.LinkError, so errors.Is sees it) and, except for short
// writes, the operation does not happen.
type Injector interface {
	MaybeError(op Op, path string) error
}

// ShortWriter is implemented by injectors that let a failing write store part of its data
// first, as a full disk or a torn request does. ShortWrite is called after MaybeError failed an
// OpWrite of n bytes and returns how many of them to write before reporting the error.
type ShortWriter interface {
	ShortWrite(path string, n int) int
}

// SyncFailer is implemented by files that can model what Linux does to a file whose fsync
// failed. The kernel reports the writeback error once and may mark the dirty pages clean
// without having written them: the bytes written since the last successful sync are then not
// on disk, and a later fsync that succeeds does not write them, although reads still return
// them from the page cache until the pages are evicted. Only writing the same bytes again makes
// them durable. PostgreSQL's "fsyncgate" (2018) is the well-known victim.
//
// The errorFS of NewErrorFS calls SyncFailed on the file it wraps whenever it fails a Sync.
// MemFS files implement it, and so do errorFS files, so wrappers nest. OS files do not: an
// injected failure never reached the kernel, so their bytes stay dirty and the next Sync makes
// them durable. No wrapper can undo that, and none needs to for real failures, which the
// kernel already handles this way. Tests of the loss therefore wrap a MemFS.
type SyncFailer interface {
	// SyncFailed records that a Sync of the file failed: the bytes written since its previous
	// Sync will not become durable unless they are written again.
	SyncFailed()
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op, path string) error

// MaybeError implements Injector.
func (f InjectorFunc) MaybeError(op Op, path string) error { return f(op, path) }

func opMatches(want []Op, op Op) bool {
	return len(want) == 0 || slices.Contains(want, OpAny) || slices.Contains(want, op)
}

// After fails the n-th and every later operation matching op. Build it with InjectAfter.
type After struct {
	op    Op
	n     int64
	err   error
	count atomic.Int64
}

// InjectAfter returns an injector that fails the n-th (counting from 1) and every later
// operation matching op (OpAny matches all) with err. n <= 1 fails from the first.
func InjectAfter(op Op, n int, err error) *After {
	return &After{op: op, n: int64(max(n, 1)), err: err}
}

// MaybeError implements Injector.
func (a *After) MaybeError(op Op, path string) error {
	if !opMatches([]Op{a.op}, op) {
		return nil
	}
	if a.count.Add(1) >= a.n {
		return a.err
	}
	return nil
}

// Count reports how many matching operations have been seen, failed or not.
func (a *After) Count() int { return int(a.count.Load()) }

// Toggle fails matching operations while it is enabled, such as a disk that is full until
// space is freed. Enable and Disable may be called from any goroutine while I/O is running.
type Toggle struct {
	ops     []Op
	err     error
	enabled atomic.Bool
}

// NewToggle returns a disabled Toggle that fails ops (every operation if none are given) with
// err while enabled.
func NewToggle(err error, ops ...Op) *Toggle {
	return &Toggle{ops: slices.Clone(ops), err: err}
}

// Enable makes matching operations fail from now on.
func (t *Toggle) Enable() { t.enabled.Store(true) }

// Disable makes operations succeed again.
func (t *Toggle) Disable() { t.enabled.Store(false) }

// Enabled reports whether the toggle is failing operations.
func (t *Toggle) Enabled() bool { return t.enabled.Load() }

// MaybeError implements Injector.
func (t *Toggle) MaybeError(op Op, path string) error {
	if t.enabled.Load() && opMatches(t.ops, op) {
		return t.err
	}
	return nil
}

// Random fails each matching operation with probability p, drawing from a seeded generator so a
// failing run can be replayed from its seed (with the same sequence of operations). Failed
// writes store a random prefix of their data first unless NoShortWrites was called.
type Random struct {
	ops []Op
	p   float64
	err error

	mu          sync.Mutex
	rng         *rand.Rand // protected by mu; rand.Rand is not safe for concurrent use
	noShort     bool       // protected by mu
	failedCount int        // protected by mu
}

// NewRandom returns an injector that fails ops (every operation if none are given) with
// probability p, returning err.
func NewRandom(rng *rand.Rand, p float64, err error, ops ...Op) *Random {
	return &Random{ops: slices.Clone(ops), p: p, err: err, rng: rng}
}

// NoShortWrites makes failed writes write nothing, and returns r.
func (r *Random) NoShortWrites() *Random {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noShort = true
	return r
}

// Failed reports how many operations r has failed.
func (r *Random) Failed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failedCount
}

// MaybeError implements Injector.
func (r *Random) MaybeError(op Op, path string) error {
	if !opMatches(r.ops, op) {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rng.Float64() < r.p {
		r.failedCount++
		return r.err
	}
	return nil
}

// ShortWrite implements ShortWriter: a uniformly random prefix shorter than n.
func (r *Random) ShortWrite(path string, n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.noShort || n <= 0 {
		return 0
	}
	return r.rng.IntN(n)
}

// NewErrorFS returns base with errors injected by inj. Files opened through it inject errors
// too.
//
// A failed Sync loses the bytes written since the file's previous Sync, as on Linux: reads
// still return them, but no later Sync makes them durable unless they are written again. This
// needs the base file's help (see SyncFailer); over MemFS a crash clone then shows the lost
// bytes as they were before (old contents, or zeros past the old synced length). Over the OS
// file system an injected failure loses nothing, so a caller that wrongly trusts a retried Sync
// is only caught on MemFS. Only the handle whose Sync failed sees the error: Linux would also
// report it once to other descriptors open on the file, which is not modelled.
func NewErrorFS(base FS, inj Injector) FS {
	return &errorFS{base: base, inj: inj}
}

var _ FS = (*errorFS)(nil)

type errorFS struct {
	base FS
	inj  Injector
}

func (fs *errorFS) check(op Op, path string) error {
	if err := fs.inj.MaybeError(op, path); err != nil {
		return &os.PathError{Op: op.String(), Path: path, Err: err}
	}
	return nil
}

func (fs *errorFS) wrap(f File, name string, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, fs: fs, name: name}, nil
}

func (fs *errorFS) Create(name string) (File, error) {
	if err := fs.check(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := fs.base.Create(name)
	return fs.wrap(f, name, err)
}

func (fs *errorFS) OpenReadWrite(name string) (File, error) {
	if err := fs.check(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := fs.base.OpenReadWrite(name)
	return fs.wrap(f, name, err)
}

func (fs *errorFS) Open(name string) (File, error) {
	if err := fs.check(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := fs.base.Open(name)
	return fs.wrap(f, name, err)
}

func (fs *errorFS) OpenDirect(name string) (File, bool, error) {
	if err := fs.check(OpOpen, name); err != nil {
		return nil, false, err
	}
	f, direct, err := fs.base.OpenDirect(name)
	wf, err := fs.wrap(f, name, err)
	if err != nil {
		return nil, false, err
	}
	return wf, direct, nil
}

func (fs *errorFS) Remove(name string) error {
	if err := fs.check(OpRemove, name); err != nil {
		return err
	}
	return fs.base.Remove(name)
}

func (fs *errorFS) Rename(oldname, newname string) error {
	if err := fs.inj.MaybeError(OpRename, oldname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return fs.base.Rename(oldname, newname)
}

func (fs *errorFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := fs.check(OpMkdirAll, dir); err != nil {
		return err
	}
	return fs.base.MkdirAll(dir, perm)
}

func (fs *errorFS) List(dir string) ([]string, error) {
	if err := fs.check(OpList, dir); err != nil {
		return nil, err
	}
	return fs.base.List(dir)
}

func (fs *errorFS) SyncDir(dir string) error {
	if err := fs.check(OpSyncDir, dir); err != nil {
		return err
	}
	return fs.base.SyncDir(dir)
}

func (fs *errorFS) Stat(name string) (os.FileInfo, error) {
	if err := fs.check(OpStat, name); err != nil {
		return nil, err
	}
	return fs.base.Stat(name)
}

// errorFile wraps a File of an errorFS. Fd passes through: an I/O engine that reads through the
// descriptor bypasses injection, which is why tests of such engines use MemFS (no descriptor).
type errorFile struct {
	File
	fs   *errorFS
	name string
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

// shortWrite asks the injector how much of a failing write of n bytes to store.
func (f *errorFile) shortWrite(n int) int {
	sw, ok := f.fs.inj.(ShortWriter)
	if !ok {
		return 0
	}
	return min(max(sw.ShortWrite(f.name, n), 0), n)
}

func (f *errorFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		k := f.shortWrite(len(p))
		if k == 0 {
			return 0, err
		}
		n, werr := f.File.WriteAt(p[:k], off)
		if werr != nil {
			return n, werr
		}
		return n, err
	}
	return f.File.WriteAt(p, off)
}

func (f *errorFile) Write(p []byte) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		k := f.shortWrite(len(p))
		if k == 0 {
			return 0, err
		}
		n, werr := f.File.Write(p[:k])
		if werr != nil {
			return n, werr
		}
		return n, err
	}
	return f.File.Write(p)
}

func (f *errorFile) Sync() error {
	if err := f.fs.check(OpSync, f.name); err != nil {
		f.SyncFailed()
		return err
	}
	return f.File.Sync()
}

var _ SyncFailer = (*errorFile)(nil)

// SyncFailed implements SyncFailer by passing the failure on to the wrapped file, if it can
// model it, so that an errorFS over an errorFS over a MemFS loses data like one errorFS does.
func (f *errorFile) SyncFailed() {
	if sf, ok := f.File.(SyncFailer); ok {
		sf.SyncFailed()
	}
}

func (f *errorFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *errorFile) Close() error {
	cerr := f.File.Close()
	if err := f.fs.check(OpClose, f.name); err != nil {
		return err
	}
	return cerr
}

func (f *errorFile) Size() (int64, error) {
	if err := f.fs.check(OpStat, f.name); err != nil {
		return 0, err
	}
	return f.File.Size()
}
