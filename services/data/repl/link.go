package repl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

// A follower's link to its primary: connect, hand-shake as Redis replicas do (PING, AUTH,
// REPLCONF listening-port and capa, PSYNC), load a snapshot when the primary sends one, then
// apply the stream for as long as the link lives, and reconnect when it breaks.
//
// Applying. The stream's commands run through the command table, in batches: each batch is one
// keyspace EXEC (all of it or none of it applies, whatever crashes) that also writes the
// follower's replication state (history id, offset, the stream's database and clock) to a key
// of keyspace.InternalDB. After a kill -9 or a power loss the follower therefore knows exactly
// which offset its data stands at and asks for the stream from there: a partial resync, with
// nothing applied twice or skipped. A batch never ends inside a MULTI ... EXEC of the stream.
// Each command decides by the primary's clock (LAVIK.CLOCK), so expiry and relative times come
// out as they did on the primary.

const (
	linkConnect    int32 = iota // not connected; will connect
	linkConnecting              // handshake
	linkSync                    // receiving a snapshot
	linkConnected               // streaming
)

// stateKey is the key of keyspace.InternalDB holding a follower's replication state.
var stateKey = []byte("repl-state")

// replState is what a follower persists with its data.
type replState struct {
	replid string
	offset int64 // the stream offset the data stands at
	db     int   // the database the stream's last SELECT chose (-1: none)
	clock  int64 // the stream's last LAVIK.CLOCK (0: none)
}

func (s replState) encode() []byte {
	return fmt.Appendf(nil, "1 %s %d %d %d", s.replid, s.offset, s.db, s.clock)
}

func decodeState(b []byte) (replState, bool) {
	var s replState
	var v int
	n, err := fmt.Sscanf(string(b), "%d %s %d %d %d", &v, &s.replid, &s.offset, &s.db, &s.clock)
	return s, err == nil && n == 5 && v == 1 && len(s.replid) == 40
}

// loadState reads the persisted state; ok false when there is none (never synced, or a full
// resync did not finish).
func loadState(ks *keyspace.Keyspace) (replState, bool) {
	var st replState
	ok := false
	ks.Get(nil, keyspace.InternalDB, stateKey, func(v keyspace.Value, _ keyspace.Meta) error {
		b, err := v.Bytes()
		if err == nil {
			st, ok = decodeState(b)
		}
		return err
	})
	return st, ok
}

type link struct {
	n         *Node
	host      string
	port      int
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	state     atomic.Int32
	lastIO    atomic.Int64 // unix ms of the last bytes from the primary
	downAt    atomic.Int64 // unix ms the link went down
	read      atomic.Int64 // stream offset read
	applied   atomic.Int64 // stream offset applied and durable
	syncBytes atomic.Int64
	syncKeys  atomic.Int64
	mu        sync.Mutex
	id        string // the primary's history id; guarded by mu
	connMu    sync.Mutex
	conn      net.Conn
	ackKick   chan struct{}
}

func newLink(n *Node, host string, port int) *link {
	ctx, cancel := context.WithCancel(context.Background())
	l := &link{n: n, host: host, port: port, ctx: ctx, cancel: cancel, done: make(chan struct{}), ackKick: make(chan struct{}, 1)}
	l.downAt.Store(time.Now().UnixMilli())
	if st, ok := loadState(n.ks); ok {
		l.applied.Store(st.offset)
		l.read.Store(st.offset)
		l.id = st.replid
	}
	return l
}

func (l *link) replID() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id
}

func (l *link) downSince() time.Time { return time.UnixMilli(l.downAt.Load()) }

func (l *link) roleState() string {
	switch l.state.Load() {
	case linkConnecting:
		return "connecting"
	case linkSync:
		return "sync"
	case linkConnected:
		return "connected"
	}
	return "connect"
}

// stop ends the link and waits for its goroutine.
func (l *link) stop() {
	l.cancel()
	l.connMu.Lock()
	if l.conn != nil {
		l.conn.Close()
	}
	l.connMu.Unlock()
	<-l.done
}

// run connects and serves the link until stop, reconnecting after a second when it breaks.
func (l *link) run() {
	defer close(l.done)
	log := l.n.log.With("primary", net.JoinHostPort(l.host, strconv.Itoa(l.port)))
	var lastErr string
	for l.ctx.Err() == nil {
		err := l.session(log)
		l.state.Store(linkConnect)
		l.downAt.Store(time.Now().UnixMilli())
		if l.ctx.Err() != nil {
			return
		}
		if err != nil && err.Error() != lastErr {
			log.Warn("replication: link to primary down", "err", err)
			lastErr = err.Error()
		}
		select {
		case <-time.After(time.Second):
		case <-l.ctx.Done():
			return
		}
	}
}

// session is one connection to the primary, from dial to the link breaking.
func (l *link) session(log interface {
	Info(string, ...any)
	Warn(string, ...any)
}) error {
	l.state.Store(linkConnecting)
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(l.ctx, "tcp", net.JoinHostPort(l.host, strconv.Itoa(l.port)))
	if err != nil {
		return err
	}
	l.connMu.Lock()
	l.conn = conn
	l.connMu.Unlock()
	defer conn.Close()
	br := bufio.NewReaderSize(&ioCounter{r: &deadlineReader{c: conn, d: l.n.opts.Timeout}, l: l}, 64<<10)
	ask := func(args ...string) (string, error) {
		conn.SetWriteDeadline(time.Now().Add(l.n.opts.Timeout))
		if _, err := conn.Write(appendCommand(nil, args...)); err != nil {
			return "", err
		}
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
	reply, err := ask("PING")
	if err != nil {
		return err
	}
	if pw := l.n.opts.MasterAuth(); pw != "" {
		if reply, err = ask("AUTH", pw); err != nil {
			return err
		}
		if reply != "+OK" {
			return fmt.Errorf("repl: primary refused masterauth: %s", strings.TrimPrefix(reply, "-"))
		}
	} else if strings.HasPrefix(reply, "-NOAUTH") {
		return errors.New("repl: the primary requires a password: set masterauth")
	}
	if reply, err = ask("REPLCONF", "listening-port", strconv.Itoa(l.n.opts.ListeningPort())); err != nil {
		return err
	} else if reply != "+OK" {
		return fmt.Errorf("repl: REPLCONF listening-port: %s", reply)
	}
	if reply, err = ask("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return err
	}
	st, have := loadState(l.n.ks)
	have = have && !l.n.staleState.Load()
	psyncID, psyncOff := "?", "-1"
	if have {
		psyncID, psyncOff = st.replid, strconv.FormatInt(st.offset+1, 10)
	}
	if reply, err = ask("PSYNC", psyncID, psyncOff); err != nil {
		return err
	}
	f := strings.Fields(reply)
	switch {
	case len(f) >= 1 && f[0] == "+CONTINUE":
		if len(f) >= 2 && f[1] != st.replid {
			st.replid = f[1] // the primary's history continues under a new name
		}
		log.Info("replication: partial resync", "replid", st.replid, "offset", st.offset)
	case len(f) == 3 && f[0] == "+FULLRESYNC":
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || len(f[1]) != 40 {
			return fmt.Errorf("repl: bad reply to PSYNC: %q", reply)
		}
		st = replState{replid: f[1], offset: off, db: -1}
		l.state.Store(linkSync)
		start := time.Now()
		if err := l.loadSnapshot(br, st); err != nil {
			return err
		}
		log.Info("replication: full resync done", "keys", l.syncKeys.Load(), "bytes", l.syncBytes.Load(), "took", time.Since(start))
	default:
		return fmt.Errorf("repl: primary refused PSYNC: %q", reply)
	}
	l.mu.Lock()
	l.id = st.replid
	l.mu.Unlock()
	l.applied.Store(st.offset)
	l.read.Store(st.offset)
	l.state.Store(linkConnected)
	ackDone := make(chan struct{})
	defer close(ackDone)
	go l.acker(conn, ackDone)
	return l.apply(br, st)
}

// ioCounter notes when bytes arrive from the primary.
type ioCounter struct {
	r io.Reader
	l *link
}

func (c *ioCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.l.lastIO.Store(time.Now().UnixMilli())
	}
	return n, err
}

// loadSnapshot replaces the keyspace with the snapshot that follows +FULLRESYNC.
func (l *link) loadSnapshot(br *bufio.Reader, st replState) error {
	line, err := br.ReadString('\n')
	for err == nil && line == "\n" { // Redis primaries send newlines while preparing
		line, err = br.ReadString('\n')
	}
	if err != nil {
		return err
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "$EOF:") || len(line) != 5+40 {
		return fmt.Errorf("%w: payload announced as %q (only a Lavik primary's streamed snapshot is understood)", ErrBadSnapshot, line)
	}
	mark := line[5:]
	ks := l.n.ks
	se := ks.NewSession()
	// From the FLUSHALL on, the data is a part of nothing until the whole snapshot is in: the
	// node says so, durably, before it (role.go), and the mark goes only at the end.
	if err := l.n.markIncomplete(incompleteMark{replid: st.replid, offset: st.offset,
		reason: fmt.Sprintf("full resync from %s not finished", net.JoinHostPort(l.host, strconv.Itoa(l.port)))}); err != nil {
		return err
	}
	// The old data and the old state go first, in one FLUSHALL: a crash while loading leaves
	// no state, and the next start does a full resync again.
	if err := ks.FlushAll(se); err != nil {
		return err
	}
	l.syncKeys.Store(0)
	l.syncBytes.Store(0)
	sr, err := newSnapReader(br)
	if err != nil {
		return err
	}
	var k snapKey
	for {
		err := sr.next(&k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := ks.Put(se, k.DB, k.Key, k.Val, k.ExpireAt, k.Type); err != nil {
			return err
		}
		l.syncBytes.Add(int64(len(k.Key) + len(k.Val)))
		if l.syncKeys.Add(1)%1024 == 0 {
			if err := se.Wait(); err != nil {
				return err
			}
		}
		if l.ctx.Err() != nil {
			return l.ctx.Err()
		}
	}
	end := make([]byte, 40)
	if _, err := io.ReadFull(br, end); err != nil {
		return err
	}
	if string(end) != mark {
		return fmt.Errorf("%w: payload not followed by its end mark", ErrBadSnapshot)
	}
	// The libraries, before the state that says the snapshot is loaded: a crash in between
	// leaves no state, and the next start resyncs again.
	if err := commands.RestoreFunctions(l.n.opts.Server, ks.FS(), sr.funcs); err != nil {
		return fmt.Errorf("repl: the snapshot's libraries: %w", err)
	}
	// The data, synced before the state that says it is all there (the logs are per shard: a
	// power loss could otherwise keep the state and lose keys of another shard), then the state,
	// synced, then the mark goes.
	if err := se.Wait(); err != nil {
		return err
	}
	if err := ks.SyncAll(); err != nil {
		return err
	}
	if err := ks.Put(se, keyspace.InternalDB, stateKey, st.encode(), 0, keyspace.TypeString); err != nil {
		return err
	}
	if err := se.Wait(); err != nil {
		return err
	}
	if err := ks.SyncAll(); err != nil {
		return err
	}
	l.n.staleState.Store(false)
	l.n.mu.Lock()
	l.n.clearMarkLocked()
	l.n.mu.Unlock()
	return nil
}

// applier runs the stream's commands.
type applier struct {
	l    *link
	ctx  commands.Ctx
	se   *keyspace.Session
	cmds []resp.Command
	// cur is the stream's state as read so far; upto its state after the last whole unit (what
	// a batch persists); the offset of a MULTI not yet complete is not in upto.
	cur, upto replState
	// multi holds the commands of a MULTI ... EXEC of the stream not yet complete (copies).
	multi   []unitCmd
	inMulti bool
	// units are the whole units read and not yet applied; ackAsked says a GETACK came.
	units    []unit
	ackAsked bool
	// held are the messages the batch being applied publishes (keyspace events, the
	// primary's PUBLISHes), published once it is applied and durable, so that a subscriber
	// told of a change can read it, and a batch run again publishes nothing twice.
	held pubsub.Held
}

// unit is what applies together: one command, or the commands of a MULTI ... EXEC, with the
// clock they run by.
type unit struct {
	cmds  []unitCmd
	clock int64
	after replState // the stream's state just past the unit
}

// unitCmd is one command and the database it runs in.
type unitCmd struct {
	db   int
	args [][]byte
}

// applyBatch is the most commands one EXEC of the applier runs: every shard is locked while it
// does, so readers on the follower wait for at most that many.
const applyBatch = 256

func (l *link) apply(br *bufio.Reader, st replState) error {
	a := &applier{l: l, se: l.n.ks.NewSession(), cur: st, upto: st}
	cl := &commands.Client{ID: -1, Addr: "primary", Authed: true, Created: time.Now()}
	a.ctx = commands.Ctx{W: resp.NewWriter(), Client: cl, Srv: l.n.opts.Server, KS: l.n.ks, Sess: a.se, Repl: l.n, NoBlock: true,
		PS: l.n.opts.PubSub, Held: &a.held}
	rd := resp.NewReader(br, resp.Limits{})
	for {
		var err error
		a.cmds, err = rd.ReadCommands(a.cmds, 4096)
		if err != nil {
			return err
		}
		for _, c := range a.cmds {
			a.read(c)
			l.read.Add(int64(c.Size))
		}
		if err := a.flush(); err != nil {
			return err
		}
	}
}

// read takes one command of the stream.
func (a *applier) read(c resp.Command) {
	a.cur.offset += int64(c.Size)
	name := strings.ToLower(string(c.Args[0]))
	switch {
	case a.inMulti && name == "exec":
		a.units = append(a.units, unit{cmds: a.multi, clock: a.cur.clock, after: a.cur})
		a.multi, a.inMulti = nil, false
	case a.inMulti:
		args := make([][]byte, len(c.Args))
		for i, arg := range c.Args {
			args[i] = bytes.Clone(arg)
		}
		a.multi = append(a.multi, unitCmd{db: a.cur.db, args: args})
		if name == "select" && len(c.Args) == 2 {
			a.cur.db, _ = strconv.Atoi(string(c.Args[1]))
		}
		return
	case name == "multi":
		a.inMulti = true
		return
	case name == "select" && len(c.Args) == 2:
		if db, err := strconv.Atoi(string(c.Args[1])); err == nil {
			a.cur.db = db
		}
	case name == "lavik.clock" && len(c.Args) == 2:
		if ms, err := strconv.ParseInt(string(c.Args[1]), 10, 64); err == nil {
			a.cur.clock = ms
		}
	case name == "ping":
	case name == "replconf":
		if len(c.Args) >= 2 && strings.EqualFold(string(c.Args[1]), "getack") {
			a.ackAsked = true
		}
	default:
		a.units = append(a.units, unit{cmds: []unitCmd{{db: a.cur.db, args: c.Args}}, clock: a.cur.clock, after: a.cur})
	}
	a.upto = a.cur
}

// flush applies the units read, a batch at a time, each batch with the state it brings the
// follower to, and makes them durable; then the link acknowledges them when asked.
func (a *applier) flush() error {
	ks := a.l.n.ks
	for len(a.units) > 0 {
		n, cmds := 0, 0
		for n < len(a.units) && (n == 0 || cmds+len(a.units[n].cmds) <= applyBatch) {
			cmds += len(a.units[n].cmds)
			n++
		}
		batch := a.units[:n]
		st := batch[n-1].after
		if n == len(a.units) {
			st = a.upto // with what came after the last unit (SELECT, PING, ...)
		}
		if err := a.applyOnce(batch, st); err != nil {
			return err
		}
		a.units = a.units[n:]
		a.l.applied.Store(st.offset)
		ks.SetClockFloor(st.clock)
		a.held.Release(a.l.n.opts.PubSub)
	}
	a.units = a.units[:0]
	// Past the last unit only PING, SELECT and the like were read, which change no data: they
	// count as applied without a write (a restart reads them again).
	if a.upto.offset > a.l.applied.Load() {
		a.l.applied.Store(a.upto.offset)
		ks.SetClockFloor(a.upto.clock)
	}
	if a.ackAsked {
		a.ackAsked = false
		a.l.ackNow()
	}
	return nil
}

// applyOnce applies batch, bringing the follower to state st, exactly once, and waits until it is
// durable. A commit that fails applied nothing (keyspace.Exec) and is run again; once it
// succeeded the batch is in memory and in the logs' tails, so a failed durability wait is
// retried as a wait, never as a second run: running it again would apply INCR twice.
func (a *applier) applyOnce(batch []unit, st replState) error {
	ks := a.l.n.ks
	logged := false
	for {
		a.held.Drop()
		_, err := ks.Exec(a.se, nil, func() {
			for _, u := range batch {
				a.se.SetClock(u.clock)
				for _, c := range u.cmds {
					a.run(c)
				}
			}
			ks.Put(a.se, keyspace.InternalDB, stateKey, st.encode(), 0, keyspace.TypeString)
		})
		a.se.SetClock(0)
		if err == nil {
			break
		}
		if !logged {
			a.l.n.log.Warn("replication: cannot apply the stream; retrying", "err", err)
			logged = true
		}
		if err := a.pause(); err != nil {
			return err
		}
	}
	// A failed wait forgets what the session waited for (Session.Wait), so the retries wait
	// for everything the logs hold, which covers the batch.
	err := a.se.Wait()
	for err != nil {
		if !logged {
			a.l.n.log.Warn("replication: the applied stream is not durable yet; waiting", "err", err)
			logged = true
		}
		if err := a.pause(); err != nil {
			return err
		}
		err = ks.WaitAll()
	}
	return nil
}

// pause waits before a retry, or returns the link's end.
func (a *applier) pause() error {
	select {
	case <-time.After(100 * time.Millisecond):
		return nil
	case <-a.l.ctx.Done():
		return a.l.ctx.Err()
	}
}

// run runs one command of the stream. Its reply goes nowhere: the primary's client got it.
func (a *applier) run(c unitCmd) {
	cmd := commands.Lookup(c.args[0])
	if cmd == nil {
		a.l.n.log.Warn("replication: unknown command in the stream", "cmd", string(c.args[0]))
		return
	}
	if cmd.Subcommands != nil && len(c.args) >= 2 {
		if sub := cmd.LookupSub(c.args[1]); sub != nil {
			cmd = sub
		}
	}
	if cmd.Handler == nil || !cmd.CheckArity(len(c.args)) {
		return
	}
	ctx := &a.ctx
	ctx.Client.DB.Store(int32(max(c.db, 0)))
	ctx.Args, ctx.Cmd, ctx.Failed, ctx.Broken, ctx.BrokenErr, ctx.Block, ctx.Wrote = c.args, cmd, false, false, nil, nil, ctx.Wrote[:0]
	ctx.W.Reset()
	a.se.TrackKeys(ctx.TrackingKeys())
	defer func() {
		if r := recover(); r != nil {
			a.l.n.log.Error("replication: command panicked", "cmd", cmd.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	cmd.Handler(ctx)
}

// ackNow asks the acker to acknowledge at once.
func (l *link) ackNow() {
	select {
	case l.ackKick <- struct{}{}:
	default:
	}
}

// acker sends REPLCONF ACK <applied offset> once a second and when asked, until done.
func (l *link) acker(conn net.Conn, done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-l.ackKick:
		case <-done:
			return
		}
		conn.SetWriteDeadline(time.Now().Add(l.n.opts.Timeout))
		if _, err := conn.Write(appendCommand(nil, "REPLCONF", "ACK", strconv.FormatInt(l.applied.Load(), 10))); err != nil {
			conn.Close()
			return
		}
	}
}
