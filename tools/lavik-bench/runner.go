package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const dialTimeout = 5 * time.Second

// runParams is one measured point: a workload against one server with a fixed number of
// connections and pipeline depth.
type runParams struct {
	System     string // label in reports, e.g. "redis"
	Addr       string
	Workload   Workload
	HashUpdate string // updateHReplace or updateMulti for hash workloads
	Conns      int
	Pipeline   int
	Warmup     time.Duration
	Duration   time.Duration
	// Timeout bounds how long after the window a reply may still arrive before the connection
	// counts as failed (a hung server must not hang the benchmark).
	Timeout      time.Duration
	VerifySample float64 // fraction of read replies compared byte for byte
	Seed         uint64
	ServerPID    int // when known, the server's CPU use and storage reads over the window are reported
	// OtherPID, when known, is a server that is not being measured (compare's idle one): its
	// CPU over the window is reported, since on shared cores its background work (a
	// collector, say) takes time from the measured one.
	OtherPID int
	Round    int
	// WindowOpens, when set, is called once the connections are open, before the load starts,
	// with the time the measured window will open (repl starts a full resync at that instant).
	// It must not block.
	WindowOpens func(at time.Time)
}

// RunResult is the outcome of one measured point.
type RunResult struct {
	System     string      `json:"system"`
	Addr       string      `json:"addr"`
	Workload   string      `json:"workload"`
	Conns      int         `json:"conns"`
	Pipeline   int         `json:"pipeline"`
	Threads    int         `json:"threads"`
	Round      int         `json:"round,omitempty"`
	Mode       string      `json:"mode,omitempty"` // compare: "pinned" or "zipf" cells
	WarmupS    float64     `json:"warmup_s"`
	WindowS    float64     `json:"window_s"`
	HashUpdate string      `json:"hash_update,omitempty"`
	Ops        []OpStats   `json:"ops"`
	Total      OpStats     `json:"total"`
	Errors     ErrorCounts `json:"errors"`
	Checked    int64       `json:"replies_checked"`
	Verified   int64       `json:"replies_verified"`
	ClientCPU  float64     `json:"client_cpu_pct"`
	ServerCPU  float64     `json:"server_cpu_pct,omitempty"`
	// ServerCPUSec is the server's user+system CPU time over the window, and ServerUsPerOp
	// that time divided by the operations answered in the window: the server's cost of one
	// operation, whatever the number of cores it used.
	ServerCPUSec  float64 `json:"server_cpu_s,omitempty"`
	ServerUsPerOp float64 `json:"server_cpu_us_per_op,omitempty"`
	// ServerReadBytes is what the server caused to be read from storage over the window
	// (read_bytes of /proc/PID/io: direct reads count, page cache hits do not).
	ServerReadBytes int64    `json:"server_read_bytes"`
	OtherCPU        float64  `json:"other_server_cpu_pct,omitempty"`
	ErrorSamples    []string `json:"error_samples,omitempty"`
	Unsupported     string   `json:"unsupported,omitempty"`
	Interrupted     bool     `json:"interrupted,omitempty"`
}

// Failed reports whether any error was counted.
func (r *RunResult) Failed() bool { return r.Errors.Total() > 0 }

// runPoint runs one measured point. Errors during the run are counted in the result; the
// returned error is for failures to set the run up (no connection could be made).
//
// Timeline: all connections are opened first; then every connection runs closed-loop for
// Warmup+Duration and finishes the batch it has in flight. Throughput is the operations
// answered inside the window [Warmup, Warmup+Duration) divided by Duration; latency is recorded
// for every operation sent inside the window, even when its reply comes after it (up to
// Timeout), so the window's end does not hide a stall. Errors are counted whenever they happen,
// warm-up included.
func runPoint(ctx context.Context, p runParams, ks *Keyspace, chooser keyChooser) (RunResult, error) {
	res := RunResult{
		System: p.System, Addr: p.Addr, Workload: p.Workload.Name, Conns: p.Conns,
		Pipeline: p.Pipeline, Threads: runtime.GOMAXPROCS(0), Round: p.Round,
		WarmupS: p.Warmup.Seconds(), WindowS: p.Duration.Seconds(),
	}
	if p.Workload.Kind == kindHash {
		res.HashUpdate = hashUpdateLabel(p.HashUpdate)
	}
	conns, err := dialAll(ctx, p.Addr, p.Conns)
	if err != nil {
		return res, err
	}
	rec := newRecorder(2 * runtime.GOMAXPROCS(0))
	base := time.Now()
	startNs, endNs := int64(p.Warmup), int64(p.Warmup+p.Duration)
	if p.WindowOpens != nil {
		p.WindowOpens(base.Add(p.Warmup))
	}
	deadline := base.Add(p.Warmup + p.Duration + p.Timeout)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i, c := range conns {
		_ = c.SetDeadline(deadline)
		w := &worker{
			p: &p, ks: ks, chooser: chooser, conn: c, rd: newRespReader(c), rec: rec.forConn(i),
			rng: rand.New(rand.NewPCG(p.Seed, uint64(p.Round)<<32|uint64(i))), base: base,
			startNs: startNs, endNs: endNs, stop: &stop, pend: make([]pending, p.Pipeline),
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop()
		}()
	}
	done := make(chan struct{})
	win := make(chan windowUsage, 1)
	go func() { win <- measureWindow(ctx, base, p.Warmup, p.Duration, p.ServerPID, p.OtherPID) }()
	go func() {
		select {
		case <-ctx.Done():
			stop.Store(true)
			for _, c := range conns {
				_ = c.SetDeadline(time.Now())
			}
		case <-done:
		}
	}()
	wg.Wait()
	close(done)
	for _, c := range conns {
		c.Close()
	}
	res.Interrupted = ctx.Err() != nil
	res.Ops, res.Total = rec.summarize(p.Duration.Seconds())
	res.Errors = res.Total.Errors
	res.Checked, res.Verified = rec.checked, rec.verified
	res.ErrorSamples, res.Unsupported = rec.samples, rec.unsupport
	u := <-win
	res.ClientCPU, res.ServerCPU, res.OtherCPU = u.clientPct, u.serverPct, u.otherPct
	res.ServerCPUSec, res.ServerReadBytes = u.serverCPU.Seconds(), u.serverRead
	if res.Total.Count > 0 && u.serverCPU > 0 {
		res.ServerUsPerOp = float64(u.serverCPU.Nanoseconds()) / 1e3 / float64(res.Total.Count)
	}
	return res, nil
}

// dialAll opens n connections, at most 32 dials at a time (a burst of 1,280 can overflow a
// listen backlog), each retried a few times.
func dialAll(ctx context.Context, addr string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var d net.Dialer
			var c net.Conn
			var err error
			for attempt := 0; attempt < 3; attempt++ {
				dctx, cancel := context.WithTimeout(ctx, dialTimeout)
				c, err = d.DialContext(dctx, "tcp", addr)
				cancel()
				if err == nil || ctx.Err() != nil {
					break
				}
				time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	if firstErr != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, fmt.Errorf("connecting to %s: %w", addr, firstErr)
	}
	return conns, nil
}

// windowUsage is what the processes involved used over a run's window.
type windowUsage struct {
	clientPct, serverPct, otherPct float64 // percent of one core
	serverCPU                      time.Duration
	serverRead                     int64
}

// measureWindow reads the generator's, the server's (pid) and the idle server's (other) CPU
// time, and the server's storage reads, when the window opens and when it closes. A pid of 0
// is not read. It returns zeros when the run is interrupted.
func measureWindow(ctx context.Context, base time.Time, warmup, window time.Duration, pid, other int) windowUsage {
	wait := func(d time.Duration) bool {
		t := time.NewTimer(time.Until(base.Add(d)))
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !wait(warmup) {
		return windowUsage{}
	}
	readBytes := func() int64 {
		if pid <= 0 {
			return -1
		}
		r, _, err := procIO(pid)
		if err != nil {
			return -1
		}
		return r
	}
	c0, s0, o0, r0 := selfCPU(), procCPU(pid), procCPU(other), readBytes()
	if !wait(warmup + window) {
		return windowUsage{}
	}
	c1, s1, o1, r1 := selfCPU(), procCPU(pid), procCPU(other), readBytes()
	secs := window.Seconds()
	u := windowUsage{clientPct: 100 * (c1 - c0).Seconds() / secs}
	if s0 >= 0 && s1 >= 0 {
		u.serverCPU = s1 - s0
		u.serverPct = 100 * u.serverCPU.Seconds() / secs
	}
	if o0 >= 0 && o1 >= 0 {
		u.otherPct = 100 * (o1 - o0).Seconds() / secs
	}
	if r0 >= 0 && r1 >= 0 {
		u.serverRead = r1 - r0
	}
	return u
}

// pending is one operation of the batch in flight on a connection.
type pending struct {
	op    opKind
	k     int
	ver   uint32 // write: the version written; read: the floor when the read was issued
	clean bool   // write: no other write to k was in flight when it was issued
	full  bool   // read: compare every byte
}

// worker drives one connection: write Pipeline commands, read Pipeline replies, repeat.
type worker struct {
	p       *runParams
	ks      *Keyspace
	chooser keyChooser
	conn    net.Conn
	rd      *respReader
	rec     *connRecorder
	rng     *rand.Rand
	base    time.Time
	startNs int64
	endNs   int64
	stop    *atomic.Bool
	wbuf    []byte
	pend    []pending
}

func (w *worker) now() int64 { return int64(time.Since(w.base)) }

func (w *worker) loop() {
	defer w.rec.flush()
	for !w.stop.Load() && w.now() < w.endNs {
		w.wbuf = w.wbuf[:0]
		for i := range w.pend {
			w.issue(&w.pend[i])
		}
		tw := w.now()
		if _, err := w.conn.Write(w.wbuf); err != nil {
			w.abort(0, err)
			return
		}
		for i := range w.pend {
			p := &w.pend[i]
			kind, desc, err := w.complete(p)
			t := w.now()
			if err != nil {
				w.abort(i, err)
				return
			}
			switch {
			case kind >= 0:
				w.rec.fail(p.op, kind, desc)
			default:
				if t >= w.startNs && t < w.endNs {
					w.rec.complete(p.op)
				}
				if tw >= w.startNs && tw < w.endNs {
					w.rec.record(p.op, t-tw)
				}
			}
		}
	}
}

// abort accounts for the operations from pend[i] on, which will get no reply.
func (w *worker) abort(i int, err error) {
	for ; i < len(w.pend); i++ {
		p := &w.pend[i]
		if p.op == opSet || p.op == opUpdate {
			w.ks.endWrite(p.k, p.ver, p.clean, false)
		}
		if !w.stop.Load() {
			w.rec.fail(p.op, fatalKind(err), err.Error())
		}
	}
}

// issue picks the next operation and appends its command to the write buffer.
func (w *worker) issue(p *pending) {
	ks := w.ks
	k := w.chooser.next(w.rng)
	rf := w.p.Workload.ReadFrac
	read := rf >= 1 || (rf > 0 && w.rng.Float64() < rf)
	*p = pending{k: k}
	if read {
		p.op = w.p.Workload.readOp()
		p.ver = ks.readFloor(k)
		p.full = w.p.VerifySample >= 1 || (w.p.VerifySample > 0 && w.rng.Float64() < w.p.VerifySample)
		if p.op == opGet {
			w.wbuf = append(w.wbuf, "*2\r\n$3\r\nGET\r\n"...)
		} else {
			w.wbuf = append(w.wbuf, "*2\r\n$7\r\nHGETALL\r\n"...)
		}
		w.wbuf = appendBulkKey(w.wbuf, ks.Prefix, k)
		return
	}
	p.op = w.p.Workload.writeOp()
	p.ver, p.clean = ks.beginWrite(k)
	switch {
	case p.op == opSet:
		w.wbuf = ks.appendSet(w.wbuf, k, p.ver)
	case w.p.HashUpdate == updateHReplace:
		w.wbuf = ks.appendHSet(w.wbuf, "LAVIK.HREPLACE", k, p.ver)
	default:
		w.wbuf = append(w.wbuf, "*1\r\n$5\r\nMULTI\r\n*2\r\n$3\r\nDEL\r\n"...)
		w.wbuf = appendBulkKey(w.wbuf, ks.Prefix, k)
		w.wbuf = ks.appendHSet(w.wbuf, "HSET", k, p.ver)
		w.wbuf = append(w.wbuf, "*1\r\n$4\r\nEXEC\r\n"...)
	}
}

// complete reads the reply (or replies) of p. It returns kind -1 for success, an error kind and
// a description for a failed operation, or err when the connection can no longer be used.
func (w *worker) complete(p *pending) (kind errKind, desc string, err error) {
	switch p.op {
	case opGet:
		kind, desc, err = w.completeGet(p)
	case opHGetAll:
		kind, desc, err = w.completeHGetAll(p)
	default:
		kind, desc, err = w.completeWrite(p)
		if err == nil {
			w.ks.endWrite(p.k, p.ver, p.clean, kind < 0)
		}
	}
	return kind, desc, err
}

func (w *worker) completeGet(p *pending) (errKind, string, error) {
	t, line, err := w.rd.readLine()
	if err != nil {
		return 0, "", err
	}
	switch t {
	case '$':
		n, err := parseLen(line)
		if err != nil {
			return 0, "", err
		}
		if n < 0 {
			return errMissing, keyString(w.ks.Prefix, p.k) + ": nil reply for a loaded key", nil
		}
		b, err := w.rd.readBulkBody(n)
		if err != nil {
			return 0, "", err
		}
		return w.checked(p, w.ks.checkValue(b, p.k, p.ver, w.ks.readCeil(p.k), p.full))
	case '-':
		return classifyErrorReply(string(line)), string(line), nil
	}
	return 0, "", fmt.Errorf("%w: GET answered with type %q", errProtocol, t)
}

func (w *worker) completeHGetAll(p *pending) (errKind, string, error) {
	r, err := w.rd.readReply()
	if err != nil {
		return 0, "", err
	}
	switch {
	case r.isError():
		return classifyErrorReply(r.str), r.str, nil
	case r.kind != '*' || r.null:
		return errProto, "HGETALL answered " + r.String(), nil
	case len(r.elems) == 0:
		return errMissing, keyString(w.ks.Prefix, p.k) + ": empty record for a loaded key", nil
	}
	return w.checked(p, w.ks.checkHash(r.elems, p.k, p.ver, w.ks.readCeil(p.k), p.full))
}

// checked counts a verified read and classifies a verification failure.
func (w *worker) checked(p *pending, err error) (errKind, string, error) {
	w.rec.checked++
	if p.full {
		w.rec.verified++
	}
	if err != nil {
		return errWrong, err.Error(), nil
	}
	return -1, "", nil
}

// completeWrite reads the replies of SET, LAVIK.HREPLACE or MULTI/DEL/HSET/EXEC.
func (w *worker) completeWrite(p *pending) (errKind, string, error) {
	if p.op == opSet { // the hot path, without allocation
		t, line, err := w.rd.readLine()
		switch {
		case err != nil:
			return 0, "", err
		case t == '+' && string(line) == "OK":
			return -1, "", nil
		case t == '-':
			return classifyErrorReply(string(line)), string(line), nil
		}
		return 0, "", fmt.Errorf("%w: SET answered with type %q", errProtocol, t)
	}
	n := 1
	if p.op == opUpdate && w.p.HashUpdate != updateHReplace {
		n = 4
	}
	kind, desc := errKind(-1), ""
	note := func(k errKind, d string) {
		if kind < 0 {
			kind, desc = k, d
		}
	}
	for i := 0; i < n; i++ {
		r, err := w.rd.readReply()
		if err != nil {
			return 0, "", err
		}
		switch {
		case r.isError():
			note(classifyErrorReply(r.str), r.str)
		case n == 1 && p.op == opUpdate && r.kind != '+' && r.kind != ':':
			note(errProto, "LAVIK.HREPLACE answered "+r.String())
		case n == 4 && i == 3:
			if r.kind != '*' || r.null || len(r.elems) != 2 {
				note(errProto, "EXEC answered "+r.String())
			}
			for _, e := range r.elems {
				if e.isError() {
					note(classifyErrorReply(e.str), e.str)
				}
			}
		}
	}
	return kind, desc, nil
}

// errInterrupted is returned when a signal cut a run short.
var errInterrupted = errors.New("interrupted")
