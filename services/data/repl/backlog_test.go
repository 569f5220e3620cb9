package repl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/testseed"
	"github.com/lavikdb/lavik/pkg/vfs"
)

const seedEnv = "LAVIK_REPL_SEED"

// smallGeometry reaches segment and buffer edges with little data.
var smallGeometry = geometry{segSize: 4 << 10, bufSize: 1 << 10, maxPending: 4}

// randomBytes returns n bytes from rng; a stream of them shows any byte served from the wrong
// offset, which a periodic pattern could hide.
func randomBytes(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := rng.Uint64()
		for j := i; j < min(i+8, n); j++ {
			p[j] = byte(v)
			v >>= 8
		}
	}
	return p
}

func mustOpen(t testing.TB, fs vfs.FS, dir string, size, start int64, g *geometry) *Backlog {
	t.Helper()
	var b *Backlog
	var err error
	if g == nil {
		b, err = OpenBacklog(fs, dir, size, start)
	} else {
		b, err = openBacklog(fs, dir, size, start, *g)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// model is the whole stream as appended, for checking a Backlog against.
type model struct {
	start int64
	data  []byte
}

func (m *model) end() int64 { return m.start + int64(len(m.data)) }

func (m *model) at(off int64, n int) []byte {
	return m.data[off-m.start : off-m.start+int64(n)]
}

// checkInvariants checks what must hold between any two operations.
func checkInvariants(t *testing.T, b *Backlog, m *model, faults bool, prevFirst int64) {
	t.Helper()
	st := b.Stats()
	if st.End != m.end() {
		t.Fatalf("End %d, want %d", st.End, m.end())
	}
	if st.First < prevFirst || st.First < m.start || st.First > st.End {
		t.Fatalf("First %d (was %d): want within [%d, %d] and never lower", st.First, prevFirst, m.start, st.End)
	}
	if got := st.End - st.First; got >= b.size+b.segSize {
		t.Fatalf("retains %d bytes, want < size %d + segment %d", got, b.size, b.segSize)
	}
	if !faults {
		if written := st.End - m.start; st.End-st.First < min(b.size, written) {
			t.Fatalf("retains %d bytes of %d written, want at least min(size %d, written)", st.End-st.First, written, b.size)
		}
		if (st.First-m.start)%b.segSize != 0 {
			t.Fatalf("First %d is not a segment boundary (start %d, segment %d)", st.First, m.start, b.segSize)
		}
	}
	if st.MemBytes+st.DiskBytes != st.End-st.First {
		t.Fatalf("MemBytes %d + DiskBytes %d != End-First %d", st.MemBytes, st.DiskBytes, st.End-st.First)
	}
	if st.MemBytes > int64(b.maxPending+1)*int64(b.bufSize) {
		t.Fatalf("MemBytes %d, want at most %d buffers of %d", st.MemBytes, b.maxPending+1, b.bufSize)
	}
}

// checkRead reads n bytes at off and checks them against m. Without faults nothing moves First
// but Append, which the caller runs, so the answer is exact; with faults the writer may move
// First during the read, which may then come back short or trimmed, never wrong.
func checkRead(t *testing.T, b *Backlog, m *model, off int64, n int, faults bool) {
	t.Helper()
	first := b.First()
	p := make([]byte, n)
	got, err := b.ReadAt(p, off)
	switch {
	case off > m.end():
		if !errors.Is(err, ErrBeyondEnd) || got != 0 {
			t.Fatalf("ReadAt(%d) past End %d = %d, %v; want ErrBeyondEnd", off, m.end(), got, err)
		}
		return
	case off < first:
		if !errors.Is(err, ErrTrimmed) || got != 0 {
			t.Fatalf("ReadAt(%d) before First %d = %d, %v; want ErrTrimmed", off, first, got, err)
		}
		return
	}
	want := int(min(int64(n), m.end()-off))
	if faults && errors.Is(err, ErrTrimmed) {
		if now := b.First(); off >= now {
			t.Fatalf("ReadAt(%d) = ErrTrimmed but First is %d", off, now)
		}
		return
	}
	if err != nil {
		t.Fatalf("ReadAt(%d, %d bytes) in [%d, %d]: %v", off, n, first, m.end(), err)
	}
	if got != want && !(faults && got < want && b.First() > off+int64(got)) {
		t.Fatalf("ReadAt(%d, %d bytes) = %d bytes, want %d (First %d, End %d)", off, n, got, want, first, m.end())
	}
	if !bytes.Equal(p[:got], m.at(off, got)) {
		t.Fatalf("ReadAt(%d, %d bytes) returned bytes that differ from the stream", off, n)
	}
}

// checkFiles checks the segment files once the writer is idle: each is named by its first
// offset, holds bytes no older than the first retained segment, and all hold no more than the
// retained bytes plus one segment.
func checkFiles(t *testing.T, fs vfs.FS, dir string, b *Backlog, faults bool) {
	t.Helper()
	b.waitIdle()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	first, end := b.First(), b.End()
	var total int64
	for _, name := range names {
		base, err := strconv.ParseInt(strings.TrimSuffix(name, segmentSuffix), 10, 64)
		if err != nil || !strings.HasSuffix(name, segmentSuffix) || len(name) != 20+len(segmentSuffix) {
			t.Fatalf("unexpected file %q in the backlog directory", name)
		}
		fi, err := fs.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !faults && base+fi.Size() <= first {
			t.Fatalf("segment %s [%d, %d) holds only trimmed bytes (First %d) with the writer idle", name, base, base+fi.Size(), first)
		}
		if fi.Size() > b.segSize {
			t.Fatalf("segment %s has %d bytes, more than a segment (%d)", name, fi.Size(), b.segSize)
		}
		total += fi.Size()
	}
	if !faults && total > end-first+b.segSize {
		t.Fatalf("segment files hold %d bytes; retained %d, segment %d", total, end-first, b.segSize)
	}
}

// runModel runs seeded random appends and reads against a Backlog and the model.
func runModel(t *testing.T, fs vfs.FS, dir string, rng *rand.Rand, size int64, g *geometry, ops int, faults bool) {
	m := &model{start: rng.Int64N(1 << 40)}
	if rng.IntN(4) == 0 {
		m.start = int64(rng.IntN(2)) // Redis's 1, or 0
	}
	b := mustOpen(t, fs, dir, size, m.start, g)
	seg := int(b.segSize)
	prevFirst := m.start
	for i := range ops {
		switch r := rng.IntN(100); {
		case r < 45:
			var n int
			switch rng.IntN(10) {
			case 0:
				n = 1 + rng.IntN(3*seg) // up to 3 segments in one call
			case 1, 2:
				n = 1 + rng.IntN(b.bufSize+1)
			default:
				n = 1 + rng.IntN(200)
			}
			p := randomBytes(rng, n)
			m.data = append(m.data, p...)
			if end := b.Append(p); end != m.end() {
				t.Fatalf("op %d: Append of %d bytes returned %d, want %d", i, n, end, m.end())
			}
		case r < 90:
			first, end := b.First(), m.end()
			var off int64
			switch rng.IntN(8) {
			case 0:
				off = first
			case 1:
				off = end
			case 2:
				off = end - rng.Int64N(min(end-first, int64(b.bufSize))+1)
			case 3:
				off = first - 1 - rng.Int64N(int64(seg)) // trimmed (or before the start)
				if off < 0 {
					off = first
				}
			case 4:
				off = end + 1 + rng.Int64N(100)
			default:
				off = first + rng.Int64N(end-first+1)
			}
			checkRead(t, b, m, off, 1+rng.IntN(2*seg), faults)
		case r < 95:
			checkFiles(t, fs, dir, b, faults)
		default:
			// An empty read at any retained offset, and an empty append, change nothing.
			if n, err := b.ReadAt(nil, b.First()); n != 0 || err != nil {
				t.Fatalf("op %d: empty ReadAt = %d, %v", i, n, err)
			}
			if end := b.Append(nil); end != m.end() {
				t.Fatalf("op %d: empty Append returned %d, want %d", i, end, m.end())
			}
		}
		checkInvariants(t, b, m, faults, prevFirst)
		prevFirst = b.First()
	}
	checkFiles(t, fs, dir, b, faults)
	if !faults {
		if err := b.Err(); err != nil {
			t.Fatalf("Err() = %v without injected faults", err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if names, err := fs.List(dir); err != nil || len(names) != 0 {
		t.Fatalf("after Close the directory holds %q (%v), want nothing", names, err)
	}
}

func TestBacklogModel(t *testing.T) {
	seed := testseed.Seed(t, seedEnv)
	t.Run("mem-small", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := range 20 {
			size := 1 + rng.Int64N(6*smallGeometry.segSize)
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				runModel(t, vfs.NewMem(), "/backlog", rng, size, &smallGeometry, 1500, false)
			})
		}
	})
	t.Run("mem", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(seed, 2))
		for i, size := range []int64{1000, 300 << 10, 1 << 20, 5 << 20} {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				runModel(t, vfs.NewMem(), "/backlog", rng, size, nil, 600, false)
			})
		}
	})
	t.Run("os", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(seed, 3))
		runModel(t, vfs.Default, filepath.Join(t.TempDir(), "backlog"), rng, 512<<10, nil, 600, false)
	})
	t.Run("faults", func(t *testing.T) {
		// Failed creations and writes, short ones included: the backlog may retain less, but
		// never serves a wrong byte.
		rng := rand.New(rand.NewPCG(seed, 4))
		for i := range 10 {
			inj := vfs.NewRandom(rand.New(rand.NewPCG(seed, uint64(100+i))), 0.1, errors.New("injected"), vfs.OpWrite, vfs.OpCreate)
			fs := vfs.NewErrorFS(vfs.NewMem(), inj)
			size := 1 + rng.Int64N(6*smallGeometry.segSize)
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				runModel(t, fs, "/backlog", rng, size, &smallGeometry, 1500, true)
				if inj.Failed() == 0 {
					t.Fatal("no fault was injected")
				}
			})
		}
	})
}

// TestBacklogStartOffset checks a stream that starts at an arbitrary offset: the offsets and
// segment names follow it, and nothing before it is readable.
func TestBacklogStartOffset(t *testing.T) {
	const start = 1<<40 + 12345
	fs := vfs.NewMem()
	rng := rand.New(rand.NewPCG(1, 2))
	b := mustOpen(t, fs, "/d", 8<<10, start, &smallGeometry)
	if b.First() != start || b.End() != start {
		t.Fatalf("empty backlog: First %d End %d, want both %d", b.First(), b.End(), start)
	}
	if n, err := b.ReadAt(make([]byte, 10), start); n != 0 || err != nil {
		t.Fatalf("ReadAt(start) on an empty backlog = %d, %v; want 0, nil", n, err)
	}
	if _, err := b.ReadAt(make([]byte, 10), start-1); !errors.Is(err, ErrTrimmed) {
		t.Fatalf("ReadAt(start-1) = %v, want ErrTrimmed", err)
	}
	if _, err := b.ReadAt(make([]byte, 10), start+1); !errors.Is(err, ErrBeyondEnd) {
		t.Fatalf("ReadAt(start+1) = %v, want ErrBeyondEnd", err)
	}
	data := randomBytes(rng, 10<<10)
	if end := b.Append(data); end != start+int64(len(data)) {
		t.Fatalf("Append returned %d, want %d", end, start+len(data))
	}
	b.waitIdle()
	names, err := fs.List("/d")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for off := int64(start); off+smallGeometry.segSize <= start+int64(len(data)); off += smallGeometry.segSize {
		want = append(want, fmt.Sprintf("%020d.blog", off))
	}
	want = append(want, fmt.Sprintf("%020d.blog", start+8<<10)) // the last, partial segment
	want = slices.Compact(want)
	if !slices.Equal(names, want) {
		t.Fatalf("segment files %q, want %q", names, want)
	}
	p := make([]byte, len(data))
	if n, err := b.ReadAt(p, start); err != nil || n != len(data) || !bytes.Equal(p, data) {
		t.Fatalf("ReadAt(start) = %d, %v, equal %v", n, err, bytes.Equal(p[:n], data[:n]))
	}
}

// TestBacklogConcurrentReaders streams from several offsets at once while a writer appends, as
// followers' senders do; run it with -race.
func TestBacklogConcurrentReaders(t *testing.T) {
	seed := testseed.Seed(t, seedEnv)
	for _, tc := range []struct {
		name string
		size int64 // retention; trimming readers fall behind
		trim bool
	}{
		{"retain-all", 64 << 20, false},
		{"trimming", 24 << 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			stream := randomBytes(rng, 4<<20)
			const start = 1
			b := mustOpen(t, vfs.NewMem(), "/d", tc.size, start, &smallGeometry)
			m := &model{start: start, data: stream}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			const readers = 8
			var wg sync.WaitGroup
			var resyncs atomic.Int64
			errs := make(chan error, readers+1)
			for r := range readers {
				bufLen := 1 + rng.IntN(3*int(smallGeometry.segSize))
				wg.Go(func() {
					off := int64(start)
					if r%2 == 1 {
						// A follower that joins mid-stream, at the end as it is then.
						if err := b.Wait(ctx, start+int64(r)<<18); err != nil {
							errs <- err
							return
						}
						off = b.End()
					}
					p := make([]byte, bufLen)
					for off < m.end() {
						if err := b.Wait(ctx, off); err != nil {
							errs <- fmt.Errorf("reader %d: Wait(%d): %w", r, off, err)
							return
						}
						n, err := b.ReadAt(p, off)
						if errors.Is(err, ErrTrimmed) && tc.trim {
							resyncs.Add(1)
							off = b.First() // a full resync, then partial from there
							continue
						}
						if err != nil {
							errs <- fmt.Errorf("reader %d: ReadAt(%d): %w", r, off, err)
							return
						}
						if n == 0 {
							errs <- fmt.Errorf("reader %d: ReadAt(%d) returned nothing after Wait", r, off)
							return
						}
						if !bytes.Equal(p[:n], m.at(off, n)) {
							errs <- fmt.Errorf("reader %d: ReadAt(%d) returned %d bytes that differ from the stream", r, off, n)
							return
						}
						off += int64(n)
					}
				})
			}
			wg.Go(func() {
				wrng := rand.New(rand.NewPCG(seed, 8))
				for rest := stream; len(rest) > 0; {
					n := min(len(rest), 1+wrng.IntN(3000))
					b.Append(rest[:n])
					rest = rest[n:]
				}
			})
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if !tc.trim && resyncs.Load() != 0 {
				t.Errorf("%d resyncs with nothing trimmed", resyncs.Load())
			}
			t.Logf("%d resyncs", resyncs.Load())
		})
	}
}

// TestBacklogReadDuringTrim holds a read inside a segment file while retention trims that
// segment: the read still gets the appended bytes, and the file goes away after it.
func TestBacklogReadDuringTrim(t *testing.T) {
	const start = 100
	var blockOnce atomic.Bool
	entered, release := make(chan string), make(chan struct{})
	inj := vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpRead && blockOnce.CompareAndSwap(true, false) {
			entered <- path
			<-release
		}
		return nil
	})
	fs := vfs.NewErrorFS(vfs.NewMem(), inj)
	rng := rand.New(rand.NewPCG(3, 4))
	m := &model{start: start, data: randomBytes(rng, 40<<10)}
	b := mustOpen(t, fs, "/d", 8<<10, start, &smallGeometry)
	b.Append(m.data[:8<<10])
	b.waitIdle() // everything on disk: the read below goes to the first segment

	blockOnce.Store(true)
	type result struct {
		n   int
		err error
		p   []byte
	}
	done := make(chan result)
	go func() {
		p := make([]byte, 300)
		n, err := b.ReadAt(p, start+10)
		done <- result{n, err, p}
	}()
	path := <-entered
	if want := fmt.Sprintf("/d/%020d.blog", start); path != want {
		t.Fatalf("read blocked in %s, want %s", path, want)
	}
	b.Append(m.data[8<<10:])
	b.waitIdle()
	if first := b.First(); first <= start+smallGeometry.segSize {
		t.Fatalf("First %d: the first segment was not trimmed", first)
	}
	if _, err := fs.Stat(path); err != nil {
		t.Fatalf("segment under a read in flight is gone: %v", err)
	}
	close(release)
	r := <-done
	if r.err != nil || r.n != 300 || !bytes.Equal(r.p, m.at(start+10, 300)) {
		t.Fatalf("read across the trim = %d, %v, equal %v", r.n, r.err, bytes.Equal(r.p[:r.n], m.at(start+10, r.n)))
	}
	if _, err := fs.Stat(path); err == nil {
		t.Fatalf("segment %s still exists after its last read ended", path)
	}
	if _, err := b.ReadAt(make([]byte, 1), start+10); !errors.Is(err, ErrTrimmed) {
		t.Fatalf("ReadAt of the trimmed segment = %v, want ErrTrimmed", err)
	}
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestBacklogWriteError fails the writes of three buffers (a full disk): their bytes, and all
// before them, are no longer claimed, and the bytes after them are still served.
func TestBacklogWriteError(t *testing.T) {
	const start = 1
	diskFull := errors.New("no space left on device")
	toggle := vfs.NewToggle(diskFull, vfs.OpWrite)
	fs := vfs.NewErrorFS(vfs.NewMem(), toggle)
	rng := rand.New(rand.NewPCG(5, 6))
	m := &model{start: start, data: randomBytes(rng, 14<<10)}
	buf := smallGeometry.bufSize
	b := mustOpen(t, fs, "/d", 1<<20, start, &smallGeometry)

	b.Append(m.data[:6*buf])
	b.waitIdle()
	toggle.Enable()
	b.Append(m.data[6*buf : 9*buf])
	b.waitIdle()
	toggle.Disable()
	b.Append(m.data[9*buf:])
	b.waitIdle()

	lostEnd := int64(start + 9*buf)
	if first := b.First(); first != lostEnd {
		t.Fatalf("First %d after losing [%d, %d), want %d", first, start+6*buf, lostEnd, lostEnd)
	}
	for _, off := range []int64{start, start + int64(6*buf), start + int64(8*buf) + 5, lostEnd - 1} {
		if n, err := b.ReadAt(make([]byte, 10), off); !errors.Is(err, ErrTrimmed) || n != 0 {
			t.Fatalf("ReadAt(%d) in or before the lost range = %d, %v; want ErrTrimmed", off, n, err)
		}
	}
	for off := lostEnd; off < m.end(); off += 777 {
		p := make([]byte, 1000)
		n, err := b.ReadAt(p, off)
		if want := int(min(1000, m.end()-off)); err != nil || n != want || !bytes.Equal(p[:n], m.at(off, n)) {
			t.Fatalf("ReadAt(%d) after the lost range = %d, %v", off, n, err)
		}
	}
	st := b.Stats()
	if st.WriteErrors != 3 || st.LostBytes != int64(3*buf) || !errors.Is(st.Err, diskFull) || !errors.Is(b.Err(), diskFull) {
		t.Fatalf("Stats: %d write errors, %d lost bytes, err %v; want 3, %d, the injected error", st.WriteErrors, st.LostBytes, st.Err, 3*buf)
	}
	if st.DiskBytes == 0 || st.DiskBytes+st.MemBytes != st.End-st.First {
		t.Fatalf("Stats: disk %d + mem %d, want End-First %d with some on disk", st.DiskBytes, st.MemBytes, st.End-st.First)
	}
}

// TestBacklogReadError checks that a failed segment read is reported as itself, not as
// ErrTrimmed (which would make the follower resync for nothing) nor as success.
func TestBacklogReadError(t *testing.T) {
	badSector := errors.New("input/output error")
	toggle := vfs.NewToggle(badSector, vfs.OpRead)
	fs := vfs.NewErrorFS(vfs.NewMem(), toggle)
	b := mustOpen(t, fs, "/d", 1<<20, 1, &smallGeometry)
	data := randomBytes(rand.New(rand.NewPCG(7, 7)), 8<<10)
	b.Append(data)
	b.waitIdle()
	toggle.Enable()
	if n, err := b.ReadAt(make([]byte, 100), 1); !errors.Is(err, badSector) || errors.Is(err, ErrTrimmed) || n != 0 {
		t.Fatalf("ReadAt with a failing disk = %d, %v; want the read error", n, err)
	}
	toggle.Disable()
	p := make([]byte, len(data))
	if n, err := b.ReadAt(p, 1); err != nil || n != len(data) || !bytes.Equal(p, data) {
		t.Fatalf("ReadAt after the disk recovered = %d, %v", n, err)
	}
}

// TestBacklogWait checks Wait's three ways out: new bytes, a done context, Close.
func TestBacklogWait(t *testing.T) {
	b := mustOpen(t, vfs.NewMem(), "/d", 1<<20, 1, nil)
	ctx := context.Background()
	b.Append([]byte("abc"))
	if err := b.Wait(ctx, 3); err != nil { // End is 4
		t.Fatalf("Wait below End: %v", err)
	}
	woke := make(chan error)
	go func() { woke <- b.Wait(ctx, 4) }()
	b.Append([]byte("d"))
	if err := <-woke; err != nil {
		t.Fatalf("Wait woken by Append: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	go func() { woke <- b.Wait(cctx, 5) }()
	cancel()
	if err := <-woke; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context = %v", err)
	}

	go func() { woke <- b.Wait(ctx, 5) }()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait across Close = %v, want ErrClosed", err)
	}
	if _, err := b.ReadAt(make([]byte, 1), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("ReadAt after Close = %v, want ErrClosed", err)
	}
}

// TestBacklogLargeAppend appends 100 MiB in one call: it is split into buffers, Append waits
// for the writer, and the retained end of it reads back.
func TestBacklogLargeAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MiB append")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	data := randomBytes(rng, 100<<20)
	const size = 8 << 20
	fs := vfs.NewMem()
	b := mustOpen(t, fs, "/d", size, 1, nil)
	b.Append([]byte("x"))
	m := &model{start: 1, data: append([]byte("x"), data...)}
	if end := b.Append(data); end != m.end() {
		t.Fatalf("Append returned %d, want %d", end, m.end())
	}
	first := b.First()
	if r := m.end() - first; r < size || r >= size+b.segSize {
		t.Fatalf("retains %d bytes, want [%d, %d)", r, size, size+b.segSize)
	}
	p := make([]byte, m.end()-first)
	if n, err := b.ReadAt(p, first); err != nil || n != len(p) || !bytes.Equal(p, m.at(first, n)) {
		t.Fatalf("ReadAt(First) = %d of %d, %v", n, len(p), err)
	}
	checkFiles(t, fs, "/d", b, false)
}

// TestOpenRemovesOldSegments checks that a backlog starts empty whatever an earlier process
// left, and leaves files that are not segments alone.
func TestOpenRemovesOldSegments(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"00000000000000000001.blog", "keep.txt"} {
		if err := vfs.WriteFile(fs, "/d/"+name, []byte("old")); err != nil {
			t.Fatal(err)
		}
	}
	b := mustOpen(t, fs, "/d", 1<<20, 1, nil)
	if names, _ := fs.List("/d"); !slices.Equal(names, []string{"keep.txt"}) {
		t.Fatalf("after Open the directory holds %q, want only keep.txt", names)
	}
	if b.First() != 1 || b.End() != 1 {
		t.Fatalf("First %d End %d, want an empty backlog at 1", b.First(), b.End())
	}
	if _, err := OpenBacklog(fs, "/e", 0, 1); err == nil {
		t.Fatal("OpenBacklog accepted size 0")
	}
	if _, err := OpenBacklog(fs, "/e", 1, -1); err == nil {
		t.Fatal("OpenBacklog accepted a negative start")
	}
}

// discardFS is a MemFS whose files drop what is written to them, so that a benchmark measures
// Append rather than the disk.
type discardFS struct{ *vfs.MemFS }

type discardFile struct{ vfs.File }

func (fs discardFS) Create(name string) (vfs.File, error) {
	f, err := fs.MemFS.Create(name)
	return discardFile{f}, err
}

func (discardFile) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkAppend measures the write path: 100-byte appends. With "discard" the writer's
// files drop their bytes, so the figure is Append's own cost; with "os" (page cache) and "mem"
// the writer is the bottleneck at these rates and Append waits for it, so the figure is the
// backlog's throughput.
func BenchmarkAppend(bm *testing.B) {
	for _, fsName := range []string{"discard", "os", "mem"} {
		bm.Run(fsName, func(bm *testing.B) {
			var fs vfs.FS = vfs.NewMem()
			dir := "/d"
			switch fsName {
			case "os":
				fs, dir = vfs.Default, bm.TempDir()
			case "discard":
				fs = discardFS{vfs.NewMem()}
			}
			b := mustOpen(bm, fs, dir, 64<<20, 1, nil)
			p := bytes.Repeat([]byte("x"), 100)
			bm.SetBytes(int64(len(p)))
			bm.ReportAllocs()
			for bm.Loop() {
				b.Append(p)
			}
		})
	}
}
