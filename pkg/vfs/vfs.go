// Package vfs is the file-system interface every piece of Lavik's disk I/O goes through.
//
// Production code uses Default (the operating system). Tests substitute an in-memory file
// system, a crash-simulating file system that keeps only what was synced, or an error-injecting
// wrapper, and can damage synced data as a failing disk does (bit flips, lost sectors), so
// recovery can be exercised without pulling power cords or waiting for bad sectors. The interface is the small
// set of operations the value log and checkpoints need; anything more belongs to a caller.
package vfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// ErrNoFD is returned by File.Fd for files that are not backed by an operating-system descriptor
// (in-memory files). I/O engines that need a descriptor fall back to File.ReadAt.
var ErrNoFD = errors.New("vfs: file has no descriptor")

// File is an open file. ReadAt and WriteAt are safe for concurrent use; Write appends at the
// file's current write position and must not be called concurrently with itself.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Closer
	// Sync makes everything written so far durable (fdatasync on the OS file system).
	Sync() error
	// Truncate changes the size of the file; the write position is left unchanged.
	Truncate(size int64) error
	// Size reports the current size of the file.
	Size() (int64, error)
	// Fd returns the operating-system descriptor, or ErrNoFD.
	Fd() (uintptr, error)
}

// FS is a file system.
type FS interface {
	// Create creates or truncates name for reading and writing; writes append from offset 0.
	Create(name string) (File, error)
	// OpenReadWrite opens an existing file for reading and writing; writes append at its end.
	OpenReadWrite(name string) (File, error)
	// Open opens an existing file read-only.
	Open(name string) (File, error)
	// OpenDirect opens an existing file read-only, bypassing the page cache where the file
	// system supports it (O_DIRECT). Reads from such a file must use offsets and lengths
	// aligned to DirectAlign(f) (at most AlignedBlock) and AlignedBlock-aligned buffers. File
	// systems without direct I/O return a regular read-only file and report direct=false.
	OpenDirect(name string) (f File, direct bool, err error)
	// Remove removes a file.
	Remove(name string) error
	// Rename atomically renames oldname to newname, replacing newname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries in dir, sorted.
	List(dir string) ([]string, error)
	// SyncDir makes the directory entries of dir (creations, removals, renames) durable.
	SyncDir(dir string) error
	// Stat returns information about a file.
	Stat(name string) (os.FileInfo, error)
}

// AlignedBlock is the alignment of memory for direct reads, and the largest alignment of their
// offsets and lengths (see DirectAlign).
const AlignedBlock = 4096

// WriteFile creates (or truncates) the file at path, writes data and syncs it. The directory
// entry is not synced: a caller that needs the name durable syncs the directory.
func WriteFile(fsys FS, path string, data []byte) error {
	f, err := fsys.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFileAtomic replaces name in dir durably: a temporary file is written and synced, renamed
// over name, and the directory synced, so that a crash leaves the old contents or the new, never
// a mixture.
func WriteFileAtomic(fsys FS, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	err := WriteFile(fsys, tmp, data)
	if err == nil {
		err = fsys.Rename(tmp, filepath.Join(dir, name))
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		fsys.Remove(tmp)
	}
	return err
}
