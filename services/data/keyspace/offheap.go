package keyspace

import (
	"errors"
	"os"
	"sync/atomic"
	"unsafe"
)

// Off-heap memory for the index. The index's big arrays (slots, entries, key arena, and the
// replay version table) hold no Go pointers, so they need not live on the Go heap; outside it
// they are invisible to the collector, do not count towards GOGC's heap goal (which would let
// the process grow to twice the index before a collection), and go back to the OS the moment
// they are freed. On Linux a region is an anonymous private mapping grown with mremap, which
// moves page-table entries instead of copying bytes; elsewhere it falls back to the Go heap.
//
// Rule for callers: a slice into a region is valid only until the region is resized or freed.
// The index resizes and frees regions only under the shard's write lock, and every slice it
// hands out (keys to Scan callbacks, entry pointers) is used under the read or write lock.
//
// Rejected: the Go heap with GOGC tuning (a process-wide knob, and the collector would still
// walk the arrays' spans); cgo malloc (cgo in the build for nothing mmap cannot do).

// region is a resizable block of zeroed memory outside the Go heap. The zero value is empty.
type region struct {
	b []byte // the whole mapping: len(b) == cap(b) == mapped size
}

// offheapBytes is the size of every live region in the process.
var offheapBytes atomic.Int64

// errNoMemory is returned when the OS refuses memory for the index.
var errNoMemory = errors.New("keyspace: cannot allocate index memory")

var pageSize = os.Getpagesize()

func roundPage(n int) int { return (n + pageSize - 1) &^ (pageSize - 1) }

// size is the mapped size in bytes.
func (r *region) size() int { return len(r.b) }

// resize makes the region n bytes rounded up to whole pages, keeping its contents up to the
// smaller size; bytes beyond the old size read as zero. Slices into the region taken before
// the call are invalid after it.
func (r *region) resize(n int) error {
	n = roundPage(n)
	if n == len(r.b) {
		return nil
	}
	if n == 0 {
		r.free()
		return nil
	}
	b, err := osResize(r.b, n)
	if err != nil {
		return errors.Join(errNoMemory, err)
	}
	offheapBytes.Add(int64(len(b) - len(r.b)))
	r.b = b
	return nil
}

// free returns the region's memory to the OS; the region is empty afterwards.
func (r *region) free() {
	if len(r.b) == 0 {
		return
	}
	osFree(r.b)
	offheapBytes.Add(-int64(len(r.b)))
	r.b = nil
}

// growSize is the size to resize a region of cur bytes to when it needs need bytes: at least
// a sixteenth more, so a region filled one element at a time is remapped O(log n) times, and
// little enough that the mapped but unused tail stays small against the 48-byte budget.
func growSize(cur, need int) int {
	return max(need, cur+cur/16, pageSize)
}

// view returns the region as a slice of T (pointer-free) covering n elements.
func view[T any](r *region, n int) []T {
	if n == 0 {
		return nil
	}
	var z T
	if uintptr(n)*unsafe.Sizeof(z) > uintptr(len(r.b)) {
		panic("keyspace: region view past its end")
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(r.b))), n)
}

// capOf is how many T fit in the region.
func capOf[T any](r *region) int {
	var z T
	return len(r.b) / int(unsafe.Sizeof(z))
}
