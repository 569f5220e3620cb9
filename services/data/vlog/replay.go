package vlog

import (
	"errors"
	"fmt"
	"io"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// replayChunk is how much of a segment replay reads per call.
const replayChunk = 4 << 20

// replaySegment verifies every record of segment id from offset from on, in order, and hands it
// to fn. It returns the offset just past the last good record. See the package doc for the
// corruption policy: in the last segment the first bad record and everything after it is a torn
// tail and is cut off; in a sealed segment a bad record is counted and skipped, and replay
// resynchronises on the next offset where a whole record verifies.
func (l *Log) replaySegment(id uint32, from int64, last bool, fn ReplayFunc) (int64, error) {
	path := l.opts.Dir + "/" + segName(id)
	f, err := l.opts.FS.Open(path)
	if err != nil {
		return 0, fmt.Errorf("vlog: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, fmt.Errorf("vlog: %w", err)
	}
	sc := &scanner{f: f, size: size}
	off := from
	for off < size {
		h, key, val, err := sc.record(off)
		if err == nil {
			if err := fn(Loc{Seg: id, Off: uint32(off)}, h, key, val); err != nil {
				return 0, err
			}
			off += h.Size()
			continue
		}
		if !errors.Is(err, ErrCorrupt) {
			return 0, fmt.Errorf("vlog: replay %s: %w", path, err)
		}
		if last {
			cut := size - off
			l.tornCuts.Add(uint64(cut))
			l.log.Warn("torn tail cut off", "segment", path, "offset", off, "bytes", cut, "reason", err.Error())
			wf, err := l.opts.FS.OpenReadWrite(path)
			if err != nil {
				return 0, fmt.Errorf("vlog: truncate torn tail: %w", err)
			}
			terr := wf.Truncate(off)
			if terr == nil {
				terr = wf.Sync()
			}
			wf.Close()
			if terr != nil {
				return 0, fmt.Errorf("vlog: truncate torn tail: %w", terr)
			}
			return off, nil
		}
		l.corrupt.Add(1)
		next := sc.resync(off + 1)
		l.log.Error("corrupt record skipped", "segment", path, "offset", off, "skipped_bytes", next-off, "reason", err.Error())
		off = next
	}
	return off, nil
}

// scanner reads records from a file through a window buffer.
type scanner struct {
	f     vfs.File
	size  int64
	buf   []byte
	start int64 // file offset of buf[0]
}

// window returns at least n bytes from off (fewer only at end of file).
func (s *scanner) window(off int64, n int) ([]byte, error) {
	if off >= s.start && off+int64(n) <= s.start+int64(len(s.buf)) {
		return s.buf[off-s.start:], nil
	}
	want := max(n, replayChunk)
	if rem := s.size - off; int64(want) > rem {
		want = int(rem)
	}
	if cap(s.buf) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	got, err := s.f.ReadAt(s.buf, off)
	if err != nil && !(errors.Is(err, io.EOF) && got == want) {
		if !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	s.buf, s.start = s.buf[:got], off
	return s.buf, nil
}

// record decodes and verifies the record at off. Key and value alias the window.
func (s *scanner) record(off int64) (Header, []byte, []byte, error) {
	b, err := s.window(off, HeaderSize)
	if err != nil {
		return Header{}, nil, nil, err
	}
	h, err := DecodeHeader(b)
	if err != nil {
		return h, nil, nil, err
	}
	if off+h.Size() > s.size {
		return h, nil, nil, fmt.Errorf("%w: record at %d runs past the end of the segment", ErrCorrupt, off)
	}
	if b, err = s.window(off, int(h.Size())); err != nil {
		return h, nil, nil, err
	}
	return DecodeRecord(b)
}

// resync finds the next offset at or after from where a whole record verifies, or the end.
func (s *scanner) resync(from int64) int64 {
	for off := from; off+HeaderSize <= s.size; off++ {
		b, err := s.window(off, HeaderSize)
		if err != nil {
			return s.size
		}
		if b[4] != recordMagic {
			continue
		}
		if _, _, _, err := s.record(off); err == nil {
			return off
		}
	}
	return s.size
}
