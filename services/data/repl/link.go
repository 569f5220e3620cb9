package repl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/keyspace"
)

// A follower's link to its primary: connect, hand-shake as Redis replicas do (PING, AUTH,
// REPLCONF listening-port and capa, PSYNC), load a snapshot when the primary sends one, then
// apply the stream for as long as the link lives, and reconnect when it breaks.
//
// Applying (apply.go). The stream's commands run through the command table, in batches of whole
// units (one command, or a MULTI ... EXEC), each in a keyspace EXEC over the shards of its keys
// that also writes those shards' replication states (the stream offset, database and clock
// each stands at). After a kill -9 or a power loss the follower therefore knows exactly which
// units each shard holds, resumes from the lowest shard state with a partial resync, and skips
// what a shard has: nothing applied twice or skipped. Each command decides by the primary's clock
// (LAVIK.CLOCK), so expiry and relative times come out as they did on the primary.

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

// loadState reads where the persisted data stands: the lowest of the shards' states, or the
// global state when there are none (apply.go); ok false when there is no state (never synced, or
// a full resync did not finish).
func loadState(ks *keyspace.Keyspace) (replState, bool) {
	g, shards, ok := loadStates(ks)
	if !ok {
		return replState{}, false
	}
	return resumeState(g, shards), true
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
	// ackMu serializes the acknowledgements the applier and the acker write; acked is the
	// offset last acknowledged.
	ackMu sync.Mutex
	acked atomic.Int64
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
