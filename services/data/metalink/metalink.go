// Package metalink is a data node's link to lavik-meta: it registers the node, heartbeats, and
// does what the answers say: take the role meta assigns (primary, or follower of the primary it
// names), adopt the epoch (persisted before anything is done under it), and take writes only
// under the lease each answer grants, counted from when the heartbeat was sent. A node that
// cannot reach meta gets no lease renewal, so it stops taking writes when its lease runs out:
// that, and meta waiting out the lease before it promotes anyone, is what keeps two primaries
// from taking writes at once.
package metalink

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	commonv1 "github.com/lavikdb/lavik/proto/lavik/common/v1"
	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
	"github.com/lavikdb/lavik/services/data/repl"
)

// Config configures the link.
type Config struct {
	// Meta are the client addresses of lavik-meta members (any of them; the leader is found).
	Meta []string
	// DataAddr is the address clients and followers dial for this node's RESP port;
	// AdminAddr its admin API's ("" when none).
	DataAddr, AdminAddr string
	ShardGroup          string
	Version             string
	Logger              *slog.Logger
	// DialOptions are added to the link's own when it dials a member (tests route the link
	// through a dialer that can cut it off from chosen members; production sets none).
	DialOptions []grpc.DialOption
}

// Link is a running link to meta.
type Link struct {
	cfg   Config
	node  *repl.Node
	ident *repl.Identity
	log   *slog.Logger

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	leader string // the member to ask first

	stop chan struct{}
	done chan struct{}
}

// Start registers the node (retrying until meta answers) in the background and heartbeats. The
// node takes no writes until meta grants it a lease.
func Start(cfg Config, node *repl.Node, ident *repl.Identity) *Link {
	l := &Link{cfg: cfg, node: node, ident: ident, log: cfg.Logger, conns: map[string]*grpc.ClientConn{},
		stop: make(chan struct{}), done: make(chan struct{})}
	node.Manage(ident)
	go l.run()
	return l
}

// Close stops heartbeating (the lease then runs out).
func (l *Link) Close() {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	for _, c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
}

func (l *Link) conn(addr string) (*grpc.ClientConn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.conns[addr]; c != nil {
		return c, nil
	}
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, l.cfg.DialOptions...)
	c, err := grpc.NewClient(addr, opts...)
	if err == nil {
		l.conns[addr] = c
	}
	return c, err
}

// attemptTimeout bounds one call to one member: a member that is stopped or cut off (its
// port still accepting connections) must not hold up the search for the leader, which has
// to be found within a lease.
const attemptTimeout = 250 * time.Millisecond

// call runs fn against the leader, trying the members and following NotLeader details; each
// try gets attemptTimeout of ctx's time.
func (l *Link) call(ctx context.Context, fn func(context.Context, metav1.MetaClient) error) error {
	l.mu.Lock()
	order := []string{}
	if l.leader != "" {
		order = append(order, l.leader)
	}
	order = append(order, l.cfg.Meta...)
	l.mu.Unlock()
	var last error
	for i := 0; i < len(order) && i < 8; i++ {
		addr := order[i]
		c, err := l.conn(addr)
		if err != nil {
			last = err
			continue
		}
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err = fn(actx, metav1.NewMetaClient(c))
		cancel()
		if err == nil {
			l.mu.Lock()
			l.leader = addr
			l.mu.Unlock()
			return nil
		}
		last = err
		st, _ := status.FromError(err)
		if st.Code() != codes.Unavailable && st.Code() != codes.DeadlineExceeded {
			return err
		}
		l.mu.Lock()
		if l.leader == addr {
			l.leader = "" // start from the list next time, unless a member names the leader
		}
		l.mu.Unlock()
		if ctx.Err() != nil {
			return last
		}
		for _, d := range st.Details() {
			if nl, ok := d.(*metav1.NotLeader); ok && nl.LeaderAddress != "" && nl.LeaderAddress != addr {
				order = append(order[:i+1], append([]string{nl.LeaderAddress}, order[i+1:]...)...)
			}
		}
	}
	return last
}

func (l *Link) run() {
	defer close(l.done)
	interval := 100 * time.Millisecond
	registered := false
	for {
		if !registered {
			var err error
			if interval, err = l.register(); err == nil {
				registered = true
			} else {
				l.log.Warn("meta: cannot register; retrying", "err", err)
			}
		}
		if registered {
			err := l.heartbeat(&interval)
			if status.Code(err) == codes.NotFound {
				registered = false
			} else if err != nil {
				l.log.Debug("meta: heartbeat failed", "err", err)
			}
		}
		select {
		case <-l.stop:
			return
		case <-time.After(interval):
		}
	}
}

func (l *Link) register() (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var resp *metav1.RegisterNodeResponse
	err := l.call(ctx, func(ctx context.Context, c metav1.MetaClient) error {
		var err error
		resp, err = c.RegisterNode(ctx, &metav1.RegisterNodeRequest{NodeId: l.ident.NodeID(), DataAddress: l.cfg.DataAddr,
			AdminAddress: l.cfg.AdminAddr, ShardGroup: l.cfg.ShardGroup, Epoch: l.ident.Epoch(), Version: l.cfg.Version})
		return err
	})
	if err != nil {
		return 100 * time.Millisecond, err
	}
	l.log.Info("meta: registered", "node", l.ident.NodeID(), "group", l.cfg.ShardGroup, "role", resp.AssignedRole.String(), "epoch", resp.Epoch)
	return max(time.Duration(resp.HeartbeatIntervalMs)*time.Millisecond, 10*time.Millisecond), nil
}

// heartbeat sends one heartbeat and acts on the answer: the role through the node's state
// machine (repl.Node.Assign, which persists the epoch first), then the lease.
func (l *Link) heartbeat(interval *time.Duration) error {
	writable := l.node.Writable() // before the offset: see HeartbeatRequest.writable
	st := l.node.Status()
	req := &metav1.HeartbeatRequest{Writable: writable, NodeId: l.ident.NodeID(), Epoch: l.ident.Epoch(), ReplicationId: st.ReplID,
		ReplicationOffset: uint64(max(st.Offset, 0)), Health: metav1.Health_HEALTH_OK, Role: commonv1.Role_ROLE_PRIMARY,
		DataIncomplete: st.Incomplete}
	if st.Follower {
		req.Role = commonv1.Role_ROLE_FOLLOWER
	}
	switch {
	case st.Incomplete:
		// Not to be promoted, whatever its link does: the mark says the data is partial.
		req.Health, req.HealthDetail = metav1.Health_HEALTH_SYNCING, "data incomplete: "+st.IncompleteReason
	case st.SyncInProgress:
		req.Health, req.HealthDetail = metav1.Health_HEALTH_SYNCING, "full resync in progress"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sent := l.node.LeaseClock()
	var resp *metav1.HeartbeatResponse
	err := l.call(ctx, func(ctx context.Context, c metav1.MetaClient) error {
		var err error
		resp, err = c.Heartbeat(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	if resp.HeartbeatIntervalMs > 0 {
		*interval = time.Duration(resp.HeartbeatIntervalMs) * time.Millisecond
	}
	a := repl.Assignment{Epoch: resp.Epoch}
	switch resp.AssignedRole {
	case commonv1.Role_ROLE_PRIMARY:
		a.Primary = true
	case commonv1.Role_ROLE_FOLLOWER:
		a.PrimaryAddr = resp.PrimaryAddress
	default:
		l.node.RevokeLease()
		return nil
	}
	if err := l.node.Assign(a); err != nil {
		if errors.Is(err, repl.ErrStaleEpoch) {
			l.log.Error("meta answered with an older epoch than this node has seen; ignoring it", "meta_epoch", resp.Epoch, "seen", l.ident.Epoch())
		}
		l.node.RevokeLease()
		return err
	}
	if a.Primary && resp.LeaseDurationMs > 0 {
		l.node.GrantLease(sent, time.Duration(resp.LeaseDurationMs)*time.Millisecond, resp.Epoch)
	} else {
		l.node.RevokeLease()
	}
	return nil
}
