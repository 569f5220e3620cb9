package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// loadParams configures the load phase.
type loadParams struct {
	System   string
	Addr     string
	Conns    int
	Pipeline int // commands per batch on each connection
	Progress io.Writer
	Bar      bool // draw a progress bar (only on a terminal)
	Timeout  time.Duration
}

// LoadResult is what the load phase did.
type LoadResult struct {
	System  string  `json:"system"`
	First   int     `json:"first_key,omitempty"` // index of the first key written (a range load)
	Pass    int     `json:"overwrite,omitempty"` // 1, 2, ...: a pass writing every key again after the load
	Keys    int     `json:"keys"`
	Bytes   int64   `json:"value_bytes"`
	Seconds float64 `json:"seconds"`
	KeysPS  float64 `json:"keys_per_sec"`
	DBSize  int64   `json:"dbsize"`
}

// unsupportedError says the server rejected a command as unknown.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return "unsupported: " + e.msg }

// load writes version 0 of every key in ks: pipelined SETs (HSETs for hash records) over
// several connections, key ranges handed out in chunks. Every reply must be a success, and
// DBSIZE afterwards must count at least the keys written: a server that drops writes fails here.
func load(ctx context.Context, p loadParams, ks *Keyspace) (LoadResult, error) {
	return loadRange(ctx, p, ks, 0, ks.N)
}

// loadRange writes version 0 of keys [lo, hi) of ks, as load does for all of them. Ranges are
// loaded in order from 0 (capacity grows a dataset this way, so the keys loaded first stay
// valid), so DBSIZE afterwards must count at least hi keys.
func loadRange(ctx context.Context, p loadParams, ks *Keyspace, lo, hi int) (LoadResult, error) {
	res := LoadResult{System: p.System, First: lo, Keys: hi - lo}
	if lo < 0 || hi > ks.N || lo >= hi {
		return res, fmt.Errorf("loading %s: key range [%d, %d) outside [0, %d) or empty", p.System, lo, hi, ks.N)
	}
	bar := progressbar.NewOptions64(int64(hi-lo),
		progressbar.OptionSetWriter(p.Progress),
		progressbar.OptionSetVisibility(p.Bar),
		progressbar.OptionSetDescription("loading "+p.System),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("keys"),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	conns, err := dialAll(ctx, p.Addr, p.Conns)
	if err != nil {
		return res, err
	}
	start := time.Now()
	var next atomic.Int64
	next.Store(int64(lo))
	var bytes atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			n, err := loadConn(ctx, c, p, ks, &next, int64(hi), bar)
			bytes.Add(n)
			if err != nil {
				errs <- err
			}
		}()
	}
	stopWatch := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			_ = c.SetDeadline(time.Now())
		}
	})
	wg.Wait()
	stopWatch()
	_ = bar.Finish()
	close(errs)
	if ctx.Err() != nil {
		return res, errInterrupted
	}
	if err := <-errs; err != nil {
		return res, err
	}
	res.Seconds = time.Since(start).Seconds()
	res.Bytes = bytes.Load()
	res.KeysPS = float64(hi-lo) / res.Seconds
	a, err := dialAdmin(p.Addr, dialTimeout)
	if err != nil {
		return res, err
	}
	defer a.Close()
	if res.DBSize, err = a.dbsize(); err != nil {
		return res, err
	}
	if res.DBSize < int64(hi) {
		return res, fmt.Errorf("%s holds %d keys after %d were written", p.System, res.DBSize, hi)
	}
	ks.Loaded, ks.Unknown = hi == ks.N, false
	return res, nil
}

// loadConn loads chunks of keys below end on one connection until none are left; it returns
// the value bytes written.
func loadConn(ctx context.Context, c net.Conn, p loadParams, ks *Keyspace, next *atomic.Int64, end int64, bar *progressbar.ProgressBar) (int64, error) {
	rd := newRespReader(c)
	var buf []byte
	var written int64
	chunk := int64(p.Pipeline)
	for ctx.Err() == nil {
		lo := next.Add(chunk) - chunk
		if lo >= end {
			return written, nil
		}
		hi := min(lo+chunk, end)
		buf = buf[:0]
		for k := int(lo); k < int(hi); k++ {
			if ks.Kind == kindHash {
				buf = ks.appendHSet(buf, "HSET", k, 0)
				written += int64(ks.Fields * ks.FieldSize)
			} else {
				buf = ks.appendSet(buf, k, 0)
				written += int64(ks.valueSize(k, 0))
			}
		}
		if p.Timeout > 0 {
			_ = c.SetDeadline(time.Now().Add(p.Timeout))
		}
		if _, err := c.Write(buf); err != nil {
			return written, fmt.Errorf("loading %s: %w", p.System, err)
		}
		for k := lo; k < hi; k++ {
			r, err := rd.readReply()
			if err != nil {
				return written, fmt.Errorf("loading %s: %w", p.System, err)
			}
			switch {
			case r.isError() && isUnsupported(r.str):
				return written, &unsupportedError{msg: r.str}
			case r.isError():
				return written, fmt.Errorf("loading %s: %s replied %s", p.System, keyString(ks.Prefix, int(k)), r.str)
			case ks.Kind == kindString && !(r.kind == '+' && r.str == "OK"):
				return written, fmt.Errorf("loading %s: SET replied %s", p.System, r)
			case ks.Kind == kindHash && r.kind != ':':
				return written, fmt.Errorf("loading %s: HSET replied %s", p.System, r)
			}
		}
		_ = bar.Add64(hi - lo)
	}
	return written, errInterrupted
}

// isTerminal reports whether w is a terminal, where a progress bar can redraw itself.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// String is the one-line report of a load.
func (r LoadResult) String() string {
	what := fmt.Sprintf("%d keys", r.Keys)
	if r.First > 0 {
		what = fmt.Sprintf("%d keys (%d to %d)", r.Keys, r.First, r.First+r.Keys-1)
	}
	verb := "loaded"
	if r.Pass > 0 {
		verb = fmt.Sprintf("overwrite %d,", r.Pass)
	}
	return fmt.Sprintf("%s %s: %s, %s of values in %.1fs (%.0f keys/s), DBSIZE %d",
		verb, r.System, what, humanBytes(float64(r.Bytes)), r.Seconds, r.KeysPS, r.DBSize)
}
