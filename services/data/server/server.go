package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/config"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
	"github.com/lavikdb/lavik/services/data/script"
	"github.com/lavikdb/lavik/services/data/tracking"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// Options configure a Server.
type Options struct {
	Config     *config.Config
	Keyspace   *keyspace.Keyspace
	Logger     *slog.Logger
	ConfigFile string
	// Replication is the node's replication (package repl); nil: a node without it
	// (commands.Standalone). SetReplication sets it later.
	Replication commands.Replication
}

// Server accepts RESP connections and runs their commands.
type Server struct {
	cfg  *config.Config
	ks   *keyspace.Keyspace
	repl commands.Replication
	log  *slog.Logger
	ln   net.Listener
	port int

	started    time.Time
	runID      string
	configFile string

	limits atomic.Pointer[resp.Limits]
	// outLimits is client-output-buffer-limit, by client class.
	outLimits atomic.Pointer[[3]config.OutputLimit]

	blockers blockers
	intro    introspection // SLOWLOG, LATENCY, MONITOR, CLIENT PAUSE (introspect.go)
	scripts  *script.Engine
	// ps is the node's pub/sub registry (pubsub.go).
	ps *pubsub.Registry
	// track is client-side caching's tracker (tracking.go).
	track *tracking.Tracker

	// loopsMu guards loops and procsHeld (startLoops raised GOMAXPROCS for them) between
	// Serve and Close; loopsStopped: Close stopped them, and no more may start.
	loopsMu      sync.Mutex
	loops        []*loop
	procsHeld    bool
	loopsStopped bool
	// authRequired mirrors requirepass != "", asked before every command.
	authRequired atomic.Bool

	mu      sync.Mutex
	clients map[int64]*commands.Client
	conns   map[int64]*conn
	nextID  atomic.Int64
	wg      sync.WaitGroup

	shutdown     chan struct{}
	shutdownOnce sync.Once
	closed       atomic.Bool

	stats struct {
		conns, cmds, rejected, netIn, netOut, protoErrs, errReplies, qbufKills, obufKills atomic.Uint64
		opsPerSec                                                                         atomic.Int64
	}
}

// New creates a server; Listen and Serve start it.
func New(o Options) *Server {
	id := make([]byte, 20)
	rand.Read(id)
	s := &Server{
		cfg: o.Config, ks: o.Keyspace, repl: commands.Standalone{}, log: o.Logger, started: time.Now(),
		runID: hex.EncodeToString(id), configFile: o.ConfigFile,
		clients: map[int64]*commands.Client{}, conns: map[int64]*conn{}, shutdown: make(chan struct{}),
		ps: pubsub.NewRegistry(matchGlob),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.ks != nil && s.cfg != nil {
		applyLimits(s.ks, s.cfg)
	}
	if o.Replication != nil {
		s.repl = o.Replication
	}
	s.track = s.newTracker()
	s.track.SetMaxKeys(s.cfg.Int("tracking-table-max-keys"))
	s.scripts = script.New(s.log)
	fsys := vfs.Default
	if s.ks != nil {
		fsys = s.ks.FS()
	}
	if err := commands.LoadFunctions(fsys, s.cfg.Get("dir"), s.scripts); err != nil {
		s.log.Error("loading the functions' libraries failed", "err", err)
	}
	s.updateLimits()
	s.intro.init(s.cfg)
	s.ks.SetExpireHook(func(db int, key []byte) {
		if s.ps.Notifying(pubsub.Expired) {
			s.ps.NotifyKeyspace(pubsub.Expired, "expired", db, key)
		}
		if s.track.Active() {
			s.track.Invalidate(0, [][]byte{key})
		}
	})
	s.ks.SetEvictHook(func(db int, key []byte) {
		if s.ps.Notifying(pubsub.Evicted) {
			s.ps.NotifyKeyspace(pubsub.Evicted, "evicted", db, key)
		}
		if s.track.Active() {
			s.track.Invalidate(0, [][]byte{key})
		}
	})
	if s.ks != nil {
		s.ks.SetLatency(s.intro.latency)
	}
	s.authRequired.Store(s.cfg.Get("requirepass") != "")
	return s
}

// SetReplication gives the server the node's replication (package repl); before Serve.
func (s *Server) SetReplication(r commands.Replication) { s.repl = r }

// updateLimits refreshes the protocol limits from the config (called on CONFIG SET).
func (s *Server) updateLimits() {
	s.limits.Store(&resp.Limits{
		MaxBulkLen: s.cfg.Int("proto-max-bulk-len"),
		// Redis 7 bounds the count by INT_MAX only, which lets one request make the server
		// allocate 2^31 argument headers before a byte of them arrives; 1,048,576 is Redis 6's
		// bound, which no client library exceeds in practice.
		MaxMultibulkLen: resp.DefaultMaxMultibulkLen,
		MaxQueryBuffer:  s.cfg.Int("client-query-buffer-limit"),
	})
	ol := s.cfg.OutputLimits()
	s.outLimits.Store(&ol)
	s.updatePubSub()
}

// Redis's limits for a client that has not authenticated yet, so that an unauthenticated
// connection cannot make the server buffer much.
var unauthLimits = resp.Limits{MaxMultibulkLen: 10, MaxBulkLen: 16384, MaxQueryBuffer: 1 << 20}

// ConfigChanged applies a run-time configuration change.
func (s *Server) ConfigChanged(name, value string) {
	s.intro.configChanged(name, value)
	switch name {
	case "proto-max-bulk-len", "client-query-buffer-limit", "client-output-buffer-limit", "notify-keyspace-events":
		s.updateLimits()
	case "requirepass":
		s.authRequired.Store(value != "")
	case "tracking-table-max-keys":
		s.track.SetMaxKeys(s.cfg.Int(name))
	case "appendfsync":
		f, _ := vlog.ParseFsync(value)
		s.ks.SetFsync(f)
	case "maxmemory", "maxdisk", "maxmemory-policy", "maxmemory-samples", "lfu-log-factor", "lfu-decay-time":
		applyLimits(s.ks, s.cfg)
	case "reclaim-rate":
		n, _ := strconv.ParseInt(value, 10, 64)
		s.ks.SetReclaimRate(n)
	}
}

// Listen binds the configured address.
func (s *Server) Listen() error {
	addr := net.JoinHostPort(s.cfg.Get("bind"), s.cfg.Get("port"))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", addr, err)
	}
	s.ln = ln
	s.port = ln.Addr().(*net.TCPAddr).Port
	// With --port 0 the kernel picked the port: CONFIG GET port reports the real one.
	s.cfg.SetStartup("port", strconv.Itoa(s.port))
	return nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until Close and hands each to an event loop (loop_linux.go).
func (s *Server) Serve() error {
	if err := s.startLoops(); err != nil {
		return err
	}
	go s.opsSampler()
	next := 0
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.closed.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Error("accept failed", "err", err)
			time.Sleep(10 * time.Millisecond) // EMFILE and friends: don't spin
			continue
		}
		s.stats.conns.Add(1)
		s.mu.Lock()
		if s.closed.Load() {
			// Close ran between Accept and here and has closed the connections it knew of;
			// registered now, this one would outlive Close or keep it waiting.
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		if int64(len(s.clients)) >= s.cfg.Int("maxclients") {
			s.mu.Unlock()
			s.stats.rejected.Add(1)
			nc.Write([]byte("-ERR max number of clients reached\r\n"))
			nc.Close()
			continue
		}
		fd, err := takeFd(nc)
		if err != nil {
			s.mu.Unlock()
			s.log.Error("cannot take the connection's socket", "err", err)
			nc.Close()
			continue
		}
		lp := s.loops[next%len(s.loops)]
		next++
		cl := s.newClient(nc)
		c := s.newConn(fd, cl, lp)
		s.clients[cl.ID] = cl
		s.conns[cl.ID] = c
		s.wg.Add(1)
		s.mu.Unlock()
		nc.Close() // the loop has its own descriptor of the socket
		lp.post(loopMsg{kind: msgAdd, c: c})
	}
}

// startLoops starts the event loops, one per P. The runtime gets one P more, for everything else
// (the value log's syncs, the collector, the io_uring reaper): a loop waits in epoll_wait in a
// system call, and a P left to the others lets it come back to its own at once, instead of
// handing it round threads at every wait.
//
// Servers in one process (tests start many) share that P: the first raises GOMAXPROCS, the
// last to close lowers it back, and each runs as many loops as the first.
func (s *Server) startLoops() error {
	s.loopsMu.Lock()
	defer s.loopsMu.Unlock()
	if s.loopsStopped {
		return errors.New("server: closed")
	}
	procs.Lock()
	if procs.servers == 0 {
		procs.loops = runtime.GOMAXPROCS(0)
		runtime.GOMAXPROCS(procs.loops + 1)
	}
	procs.servers++
	n := procs.loops
	procs.Unlock()
	s.procsHeld = true
	for i := 0; i < n; i++ {
		lp, err := newLoop(s, i)
		if err != nil {
			return fmt.Errorf("server: event loop: %w", err)
		}
		s.loops = append(s.loops, lp)
		go lp.run()
	}
	return nil
}

// procs counts the servers of the process that hold the P startLoops adds.
var procs struct {
	sync.Mutex
	servers, loops int
}

// releaseProcs gives back the P of startLoops once no server holds it.
func (s *Server) releaseProcs() {
	if !s.procsHeld {
		return
	}
	s.procsHeld = false
	procs.Lock()
	defer procs.Unlock()
	if procs.servers--; procs.servers == 0 {
		runtime.GOMAXPROCS(procs.loops)
	}
}

// takeFd returns a descriptor of nc's socket that the server owns (a duplicate: closing nc
// leaves it open), non-blocking, with Nagle off.
func takeFd(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, errors.New("not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) { fd, derr = unix.Dup(int(f)) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if _, ok := nc.(*net.TCPConn); ok {
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	return fd, nil
}

// forget drops a closed connection from the server.
func (s *Server) forget(c *conn) {
	s.ks.Unwatch(nil, &c.cl.Watches)
	s.ps.UnsubscribeAll(c.cl.Sub)
	s.track.Disable(&c.cl.Tracking)
	s.mu.Lock()
	delete(s.clients, c.cl.ID)
	delete(s.conns, c.cl.ID)
	s.mu.Unlock()
	s.wg.Done()
}

func (s *Server) newClient(nc net.Conn) *commands.Client {
	cl := &commands.Client{
		ID:      s.nextID.Add(1),
		Addr:    nc.RemoteAddr().String(),
		LAddr:   nc.LocalAddr().String(),
		Created: time.Now(),
		// As in Redis, a client that connects while no password is required is
		// authenticated: a password set later with CONFIG SET does not lock out the
		// connections already open, the one that set it included.
		Authed: !s.authRequired.Load(),
	}
	cl.Proto.Store(2)
	cl.LastActive.Store(time.Now().UnixMilli())
	return cl
}

// opsSampler computes instantaneous_ops_per_sec once a second.
func (s *Server) opsSampler() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := s.stats.cmds.Load()
	for {
		select {
		case <-s.shutdown:
			return
		case <-t.C:
		}
		now := s.stats.cmds.Load()
		s.stats.opsPerSec.Store(int64(now - last))
		last = now
	}
}

// Done is closed when SHUTDOWN asks the process to stop.
func (s *Server) Done() <-chan struct{} { return s.shutdown }

// Shutdown implements commands.Server: it asks the process to stop.
func (s *Server) Shutdown() { s.shutdownOnce.Do(func() { close(s.shutdown) }) }

// Close stops accepting, closes every connection and waits for their goroutines, so that no
// command is running when the keyspace is closed after it.
func (s *Server) Close() {
	s.closed.Store(true)
	s.Shutdown()
	if s.ln != nil {
		s.ln.Close()
	}
	s.mu.Lock()
	for _, cl := range s.clients {
		cl.Close()
	}
	s.mu.Unlock()
	// A running script is stopped, its writes dropped: nothing else would end a runaway one.
	s.scripts.Abort()
	s.wg.Wait()
	s.loopsMu.Lock()
	defer s.loopsMu.Unlock()
	if !s.loopsStopped {
		s.loopsStopped = true
		for _, lp := range s.loops {
			lp.stop()
			<-lp.done
		}
		s.releaseProcs()
	}
}

// Config implements commands.Server.
func (s *Server) Config() *config.Config { return s.cfg }

// Clients implements commands.Server.
func (s *Server) Clients() []*commands.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*commands.Client, 0, len(s.clients))
	for _, c := range s.clients {
		out = append(out, c)
	}
	sortClients(out)
	return out
}

func sortClients(cs []*commands.Client) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].ID < cs[j-1].ID; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// Stats implements commands.Server.
func (s *Server) Stats() commands.ServerStats {
	s.mu.Lock()
	n := len(s.clients)
	s.mu.Unlock()
	exe, _ := os.Executable()
	return commands.ServerStats{
		Started: s.started, Port: s.port, ConfigFile: s.configFile, Executable: exe, RunID: s.runID,
		ConnectionsReceived: s.stats.conns.Load(), CommandsProcessed: s.stats.cmds.Load(),
		RejectedConnections: s.stats.rejected.Load(), NetInputBytes: s.stats.netIn.Load(),
		NetOutputBytes: s.stats.netOut.Load(), OpsPerSec: s.stats.opsPerSec.Load(),
		ProtocolErrors: s.stats.protoErrs.Load(), ConnectedClients: int64(n),
		TotalErrorReplies: s.stats.errReplies.Load(), ClientQueryBufLimitKills: s.stats.qbufKills.Load(),
		ClientOutputBufLimitKills: s.stats.obufKills.Load(),
		BlockedClients:            s.blockers.n.Load() + s.intro.npaused.Load(),
	}
}

// ResetStats implements commands.Server.
func (s *Server) ResetStats() {
	s.stats.conns.Store(0)
	s.stats.cmds.Store(0)
	s.stats.rejected.Store(0)
	s.stats.netIn.Store(0)
	s.stats.netOut.Store(0)
	s.stats.protoErrs.Store(0)
	s.stats.errReplies.Store(0)
	s.stats.qbufKills.Store(0)
	s.stats.obufKills.Store(0)
	s.resetIntrospection()
}

// applyLimits gives the keyspace the memory and disk limits and the LFU tuning of cfg.
func applyLimits(ks *keyspace.Keyspace, cfg *config.Config) {
	p, _ := keyspace.ParsePolicy(cfg.Get("maxmemory-policy"))
	ks.SetLFU(cfg.Int("lfu-log-factor"), cfg.Int("lfu-decay-time"))
	ks.SetLimits(keyspace.Limits{MaxMemory: cfg.Int("maxmemory"), MaxDisk: cfg.Int("maxdisk"), Policy: p,
		Samples: int(cfg.Int("maxmemory-samples"))})
}
