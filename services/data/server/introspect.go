package server

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/config"
	"github.com/lavikdb/lavik/services/data/observe"
)

// introspection is what the server records about its commands for SLOWLOG, LATENCY, MONITOR,
// INFO latencystats and errorstats, and the state of CLIENT PAUSE. Every command is measured
// once, in dispatch (or, for a batch of GETs, when each GET's reply is written), and observe
// hands the figure to each of them.
type introspection struct {
	slow     *observe.SlowLog
	latency  *observe.Latency
	tracking atomic.Bool // latency-tracking

	// Monitors (MONITOR): the connections that receive every command run.
	monMu    sync.Mutex
	monitors []*conn
	nmon     atomic.Int32

	// Pause (CLIENT PAUSE): until when, and whether reads are paused too; the connections
	// parked meanwhile.
	pauseMu     sync.Mutex
	pauseActive atomic.Bool
	pauseAll    atomic.Bool
	pauseUntil  atomic.Int64 // unix ns
	pauseTimer  *time.Timer
	paused      []*conn
	npaused     atomic.Int64

	errMu  sync.Mutex
	errors map[string]uint64 // error replies by their first word (INFO errorstats)
}

// maxErrorKinds bounds the distinct error prefixes errorstats counts, as Redis's 128.
const maxErrorKinds = 128

func (in *introspection) init(cfg *config.Config) {
	in.slow = observe.NewSlowLog()
	in.latency = observe.NewLatency()
	in.errors = map[string]uint64{}
	for _, n := range []string{"slowlog-log-slower-than", "slowlog-max-len", "latency-monitor-threshold", "latency-tracking"} {
		in.configChanged(n, cfg.Get(n))
	}
}

// configChanged applies a setting of the introspection (the others are ignored).
func (in *introspection) configChanged(name, value string) {
	n, _ := strconv.ParseInt(value, 10, 64)
	switch name {
	case "slowlog-log-slower-than":
		in.slow.SetThreshold(n)
	case "slowlog-max-len":
		in.slow.SetMaxLen(n)
	case "latency-monitor-threshold":
		in.latency.SetThreshold(n)
	case "latency-tracking":
		in.tracking.Store(value == "yes")
	}
}

// SlowLog implements commands.Introspector.
func (s *Server) SlowLog() *observe.SlowLog { return s.intro.slow }

// Latency implements commands.Introspector.
func (s *Server) Latency() *observe.Latency { return s.intro.latency }

// ConfigRewrite implements commands.Introspector.
func (s *Server) ConfigRewrite() error {
	if s.configFile == "" {
		return commands.Error("ERR The server is running without a config file")
	}
	if err := s.cfg.Rewrite(s.configFile); err != nil {
		s.log.Warn("config rewrite failed", "file", s.configFile, "err", err)
		return commands.Error("ERR Rewriting config file: " + strings.TrimPrefix(err.Error(), "config: rewrite: "))
	}
	s.log.Info("config rewritten", "file", s.configFile)
	return nil
}

// ErrorStats implements commands.Introspector: error replies by their first word, sorted.
func (s *Server) ErrorStats() map[string]uint64 {
	in := &s.intro
	in.errMu.Lock()
	defer in.errMu.Unlock()
	out := make(map[string]uint64, len(in.errors))
	for k, v := range in.errors {
		out[k] = v
	}
	return out
}

// countError counts an error reply (its text without the leading '-') by its first word.
func (s *Server) countError(line string) {
	kind, _, _ := strings.Cut(line, " ")
	in := &s.intro
	in.errMu.Lock()
	if _, ok := in.errors[kind]; ok || len(in.errors) < maxErrorKinds {
		in.errors[kind]++
	}
	in.errMu.Unlock()
}

// countErrorAt counts the error reply c wrote from mark.
func (c *conn) countErrorAt(mark int) {
	b := c.w.Bytes()
	if mark >= len(b) || b[mark] != '-' {
		return
	}
	line := b[mark+1:]
	if i := strings.IndexAny(string(line[:min(len(line), 64)]), " \r"); i >= 0 {
		line = line[:i]
	}
	c.s.countError(string(line))
}

// resetIntrospection clears the counters CONFIG RESETSTAT resets.
func (s *Server) resetIntrospection() {
	s.intro.errMu.Lock()
	s.intro.errors = map[string]uint64{}
	s.intro.errMu.Unlock()
	for _, cmd := range commands.AllWithSubcommands() {
		if h := cmd.Stats.Hist.Load(); h != nil {
			h.Reset()
		}
	}
}

// observe records one command that ran (args, on db) for d: its latency histogram, the slow
// log, the latency monitor and the monitors. For EXEC, multi is the transaction it ran, whose
// commands the monitors see before the EXEC, as in Redis.
func (s *Server) observe(c *conn, cmd *commands.Command, args [][]byte, multi *commands.Multi, d time.Duration) {
	in := &s.intro
	if in.tracking.Load() {
		h := cmd.Stats.Hist.Load()
		if h == nil {
			cmd.Stats.Hist.CompareAndSwap(nil, new(observe.Hist))
			h = cmd.Stats.Hist.Load()
		}
		h.Record(uint64(d.Microseconds()))
	}
	if cmd.Flags&commands.FlagSkipSlowlog == 0 && in.slow.Slow(d) {
		in.slow.Add(time.Now(), d, args, redaction(cmd, args), c.cl.Addr, c.cl.Name())
	}
	if cmd.Flags&commands.FlagFast != 0 {
		in.latency.Note("fast-command", d)
	} else {
		in.latency.Note("command", d)
	}
	if in.nmon.Load() > 0 && !c.ctx.Retrying {
		if multi != nil && cmd.Name == "exec" {
			multi.Each(func(qc *commands.Command, qargs [][]byte) { s.feedMonitors(c, qc, qargs) })
		}
		s.feedMonitors(c, cmd, args)
	}
}

// redaction says which arguments of a command line are secrets that the slow log and the
// monitors show as "(redacted)", as Redis does: AUTH's, HELLO's AUTH pair, MIGRATE's AUTH and
// AUTH2, CONFIG SET's requirepass and masterauth values.
func redaction(cmd *commands.Command, args [][]byte) func(int) bool {
	switch cmd.Name {
	case "auth":
		return func(i int) bool { return i >= 1 }
	case "hello":
		for i := 2; i+2 < len(args); i++ {
			if strings.EqualFold(string(args[i]), "AUTH") {
				at := i
				return func(j int) bool { return j == at+1 || j == at+2 }
			}
		}
	case "migrate":
		for i := 6; i < len(args); i++ {
			switch {
			case strings.EqualFold(string(args[i]), "AUTH"):
				at := i
				return func(j int) bool { return j == at+1 }
			case strings.EqualFold(string(args[i]), "AUTH2"):
				at := i
				return func(j int) bool { return j == at+1 || j == at+2 }
			}
		}
	case "config|set":
		return func(j int) bool {
			if j < 3 || j%2 == 0 {
				return false
			}
			n := strings.ToLower(string(args[j-1]))
			return n == "requirepass" || n == "masterauth"
		}
	}
	return nil
}

// Monitors (MONITOR). A monitor is a connection like the others, on its loop; the commands of
// every loop append their lines to its monBuf and post it a msgMonitor when monBuf was empty,
// so a burst of commands costs its loop one wake-up. Its loop moves monBuf into the
// connection's output (drainMonitor) and writes it at the end of the round, as it writes any
// reply: the lines go out as they come, not batched per second.
//
// What a monitor is sent but has not read is bounded: client-output-buffer-limit's normal hard
// limit when it has one, else monitorMaxPending. A monitor over it is disconnected, as Redis
// disconnects a client over its output limit, rather than letting a slow reader make the
// server hold every command in memory.
const monitorMaxPending = 64 << 20

// StartMonitor implements commands.Introspector: the client's connection becomes a monitor.
func (s *Server) StartMonitor(cl *commands.Client) {
	s.mu.Lock()
	c := s.conns[cl.ID]
	s.mu.Unlock()
	if c == nil || c.monitor.Load() {
		return
	}
	c.monitor.Store(true)
	in := &s.intro
	in.monMu.Lock()
	in.monitors = append(in.monitors, c)
	in.nmon.Store(int32(len(in.monitors)))
	in.monMu.Unlock()
}

// StopMonitor implements commands.Introspector: the client's connection is a monitor no more.
func (s *Server) StopMonitor(cl *commands.Client) {
	s.mu.Lock()
	c := s.conns[cl.ID]
	s.mu.Unlock()
	if c != nil {
		s.stopMonitor(c)
	}
}

// stopMonitor forgets a monitor, closed or reset.
func (s *Server) stopMonitor(c *conn) {
	if !c.monitor.Load() {
		return
	}
	in := &s.intro
	in.monMu.Lock()
	for i, m := range in.monitors {
		if m == c {
			in.monitors = append(in.monitors[:i], in.monitors[i+1:]...)
			break
		}
	}
	in.nmon.Store(int32(len(in.monitors)))
	c.monitor.Store(false)
	in.monMu.Unlock()
	c.monMu.Lock()
	c.monBuf = nil // lines fed before RESET and not yet drained go with the monitor
	c.monMu.Unlock()
}

// monitorLimit is the most a monitor may have pending.
func (s *Server) monitorLimit() int64 {
	if l := s.outLimits.Load()[config.ClassNormal]; l.Hard > 0 {
		return l.Hard
	}
	return monitorMaxPending
}

// feedMonitors sends one command line, run by c, to every monitor, in Redis's format:
// +<unix time with microseconds> [<db> <addr>] "arg" "arg" ... Administrative commands are
// not shown, as in Redis.
func (s *Server) feedMonitors(c *conn, cmd *commands.Command, args [][]byte) {
	if cmd.Flags&commands.FlagAdmin != 0 {
		return
	}
	now := time.Now()
	var b strings.Builder
	b.WriteByte('+')
	b.WriteString(strconv.FormatInt(now.Unix(), 10))
	b.WriteByte('.')
	us := strconv.FormatInt(int64(now.Nanosecond()/1000), 10)
	b.WriteString(strings.Repeat("0", 6-len(us)) + us)
	b.WriteString(" [")
	b.WriteString(strconv.Itoa(c.ctx.DB()))
	b.WriteByte(' ')
	b.WriteString(c.cl.Addr)
	b.WriteString("] ")
	red := redaction(cmd, args)
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if red != nil && red(i) {
			b.WriteString(`"(redacted)"`)
		} else {
			writeRepr(&b, a)
		}
	}
	b.WriteString("\r\n")
	line := b.String()
	limit := s.monitorLimit()
	in := &s.intro
	in.monMu.Lock()
	mons := append([]*conn(nil), in.monitors...)
	in.monMu.Unlock()
	for _, m := range mons {
		m.monMu.Lock()
		if m.monOver {
			m.monMu.Unlock()
			continue
		}
		if int64(len(m.monBuf)+len(line))+m.cl.OutBuf.Load() > limit {
			m.monOver = true
			m.monMu.Unlock()
			s.stats.obufKills.Add(1)
			s.log.Warn("monitor closed for overcoming of output buffer limits", "client", m.cl.Addr, "id", m.cl.ID, "limit", limit)
			m.kill()
			continue
		}
		post := len(m.monBuf) == 0
		m.monBuf = append(m.monBuf, line...)
		m.monMu.Unlock()
		if post {
			m.lp.post(loopMsg{kind: msgMonitor, c: m})
		}
	}
}

// drainMonitor moves what was fed to a monitor into its output; on its loop.
func (c *conn) drainMonitor() {
	c.monMu.Lock()
	buf := c.monBuf
	c.monBuf = nil
	c.monMu.Unlock()
	if len(buf) > 0 {
		c.w.Raw(buf)
		c.lp.markDirty(c)
	}
}

// writeRepr writes a as Redis's sdscatrepr does: in double quotes, with \\ \" \n \r \t \a \b
// escaped and other unprintable bytes as \xHH.
func writeRepr(b *strings.Builder, a []byte) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, ch := range a {
		switch ch {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(ch)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		default:
			if ch >= 0x20 && ch < 0x7f {
				b.WriteByte(ch)
			} else {
				b.WriteString(`\x`)
				b.WriteByte(hex[ch>>4])
				b.WriteByte(hex[ch&15])
			}
		}
	}
	b.WriteByte('"')
}

// Pause (CLIENT PAUSE). A command that the pause holds is not run: its connection is parked,
// as a blocked connection is (it runs and reads nothing, costs nothing), and counts among the
// blocked clients as in Redis. When the pause ends (its deadline, CLIENT UNPAUSE) every parked
// connection is posted back to its loop and goes on with its pipeline from that command.

// Pause implements commands.Introspector: pause until the deadline, writes only or every
// command. As in Redis, a pause never shortens one in force nor makes it less strict.
func (s *Server) Pause(until time.Time, all bool) {
	in := &s.intro
	in.pauseMu.Lock()
	defer in.pauseMu.Unlock()
	if all {
		in.pauseAll.Store(true)
	}
	if !in.pauseActive.Load() || until.UnixNano() > in.pauseUntil.Load() {
		in.pauseUntil.Store(until.UnixNano())
		if in.pauseTimer != nil {
			in.pauseTimer.Stop()
		}
		in.pauseTimer = time.AfterFunc(time.Until(until), func() { s.endPause(false) })
	}
	in.pauseActive.Store(true)
}

// Unpause implements commands.Introspector (CLIENT UNPAUSE).
func (s *Server) Unpause() { s.endPause(true) }

// PauseState implements commands.Introspector.
func (s *Server) PauseState() (active, all bool, until time.Time) {
	return s.intro.pauseActive.Load(), s.intro.pauseAll.Load(), time.Unix(0, s.intro.pauseUntil.Load())
}

// endPause ends the pause (now, or at its deadline when forced is false) and wakes the
// connections it held.
func (s *Server) endPause(forced bool) {
	in := &s.intro
	in.pauseMu.Lock()
	if !in.pauseActive.Load() || !forced && time.Now().UnixNano() < in.pauseUntil.Load() {
		in.pauseMu.Unlock()
		return
	}
	in.pauseActive.Store(false)
	in.pauseAll.Store(false)
	if in.pauseTimer != nil {
		in.pauseTimer.Stop()
		in.pauseTimer = nil
	}
	held := in.paused
	in.paused = nil
	in.npaused.Store(0)
	in.pauseMu.Unlock()
	for _, c := range held {
		c.lp.post(loopMsg{kind: msgUnpause, c: c})
	}
}

// pausedCmd reports whether the pause in force holds c's command args: every command with
// ALL; with WRITE, a write, and an EXEC whose transaction writes (a command queued in MULTI
// is not run, so it is not held).
func (c *conn) pausedCmd(args [][]byte) bool {
	in := &c.s.intro
	if !in.pauseActive.Load() {
		return false
	}
	if time.Now().UnixNano() >= in.pauseUntil.Load() {
		c.s.endPause(false)
		return false
	}
	if in.pauseAll.Load() {
		return true
	}
	cmd := commands.Lookup(args[0])
	if cmd == nil {
		return false
	}
	if cmd.Name == "exec" {
		return c.cl.Multi != nil && c.cl.Multi.Writes()
	}
	if c.cl.Multi != nil && !cmd.RunsInMulti() {
		return false
	}
	return cmd.Flags&commands.FlagWrite != 0
}

// parkPaused parks c until the pause ends; it reports false when the pause ended meanwhile
// (c is to go on).
func (lp *loop) parkPaused(c *conn) bool {
	in := &lp.s.intro
	in.pauseMu.Lock()
	defer in.pauseMu.Unlock()
	if !in.pauseActive.Load() {
		return false
	}
	c.paused = true
	c.pausedFlag.Store(true)
	in.paused = append(in.paused, c)
	in.npaused.Store(int64(len(in.paused)))
	lp.markDirty(c) // the replies of the commands before it go out
	return true
}

// unpark forgets a paused connection that closed.
func (s *Server) unpark(c *conn) {
	if !c.paused {
		return
	}
	c.paused = false
	c.pausedFlag.Store(false)
	in := &s.intro
	in.pauseMu.Lock()
	for i, p := range in.paused {
		if p == c {
			in.paused = append(in.paused[:i], in.paused[i+1:]...)
			break
		}
	}
	in.npaused.Store(int64(len(in.paused)))
	in.pauseMu.Unlock()
}

// connInfo is the connection's part of CLIENT LIST (commands.Client.ConnInfo).
func (c *conn) connInfo() commands.ConnInfo {
	ci := commands.ConnInfo{FD: c.fd, QbufFree: c.qbufFree.Load(), ArgvMem: c.argvMem.Load(),
		Monitor: c.monitor.Load(), Paused: c.pausedFlag.Load()}
	return ci
}

// connIntro is a connection's state for the introspection (embedded in conn).
type connIntro struct {
	// A monitor's lines not yet moved to its output (feedMonitors, drainMonitor); monOver: it
	// went over its limit and is being closed.
	monitor atomic.Bool
	monMu   sync.Mutex
	monBuf  []byte
	monOver bool
	// paused: parked by CLIENT PAUSE (loop only); pausedFlag mirrors it for CLIENT LIST.
	paused     bool
	pausedFlag atomic.Bool
	// For CLIENT LIST, stored by the loop after each read and parse.
	qbufFree, argvMem atomic.Int64
}
