package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// noDirectFS is a file system without direct I/O, as tmpfs and some overlay file systems are:
// OpenDirect gives a buffered file (direct=false), as vfs.FS documents. The value log then reads
// through the page cache, where io_uring completes a read of cached data at once, in the
// io_uring_enter that submits it.
type noDirectFS struct{ vfs.FS }

func (fs noDirectFS) OpenDirect(name string) (vfs.File, bool, error) {
	f, err := fs.FS.Open(name)
	return f, false, err
}

// TestLoopGetRunEndingInMemory: a run of GETs whose first ones read more than the 4 MiB a batch
// holds at once from the disk and whose last ones need no read (missing keys) is answered
// promptly, on an otherwise quiet server. The last GETs are looked up only once the window has
// room, after the reads before them have completed; no read of theirs will signal the loop, so
// the loop must answer them before it sleeps, not at its next wake-up (the next event of any
// connection, or the idle sweep's second).
//
// Where the reads before them complete together (here: cached, on a file system without direct
// I/O) the window has room only once all are handed on, whichever run length puts the window's
// edge there; the test tries the lengths around it.
func TestLoopGetRunEndingInMemory(t *testing.T) {
	ts := startDiskServerOn(t, noDirectFS{vfs.Default})
	setup := ts.dial(t)
	val := strings.Repeat("x", 40<<10)
	var vals []cmd
	for i := 0; i < 128; i++ {
		vals = append(vals, cmd{"SET", fmt.Sprintf("v%d", i), val})
	}
	setup.send(vals...)
	for range vals {
		setup.expect("+OK")
	}
	c := ts.dial(t)
	// 4 MiB / 40 KiB is 102.4: the window's edge is around there.
	for disk := 96; disk <= 110; disk++ {
		var gets []cmd
		var want []string
		for i := 0; i < 128; i++ {
			if i < disk {
				gets = append(gets, cmd{"GET", fmt.Sprintf("v%d", i)})
				want = append(want, bulk(val))
			} else {
				gets = append(gets, cmd{"GET", fmt.Sprintf("missing%d", i)})
				want = append(want, "(nil)")
			}
		}
		start := time.Now()
		c.send(gets...)
		for i, w := range want {
			if got := c.read(); got != w {
				t.Fatalf("%d GETs from the disk, then missing keys: reply %d: got %.40s, want %.40s", disk, i, got, w)
			}
		}
		// Far above the run's time (tens of milliseconds), below the loop's one-second sleep.
		if d := time.Since(start); d > 600*time.Millisecond {
			t.Fatalf("a run of %d GETs from the disk then %d of missing keys was answered after %v", disk, 128-disk, d)
		}
	}
}
