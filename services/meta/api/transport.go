package api

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
)

// Stepper is what receives a member's inbound raft messages and hears about delivery (a
// raftnode.Node).
type Stepper interface {
	Step(ctx context.Context, m raftpb.Message) error
	ReportUnreachable(id uint64)
	ReportSnapshot(id uint64, status raft.SnapshotStatus)
}

// Transport carries raft messages to the other members over the Raft gRPC service, one stream
// per peer fed by a bounded queue: Send never blocks on the network; what a full queue or a
// broken stream cannot take is dropped (raft retries) and the peer reported unreachable.
type Transport struct {
	log  *slog.Logger
	mu   sync.Mutex
	node Stepper
	// peers are the queues by member id; addrs their peer addresses.
	peers map[uint64]*peer
	// self is this member's peer address, sent with every message (RaftMessage.from_address).
	self string
	// fault, when set, is asked about every outbound message (see Fault).
	fault Fault
	stop  chan struct{}
}

// Fault decides the fate of one outbound raft message: dropped, or sent after delay. Tests
// set one (Config.RaftFault) to cut chosen links between members and to delay messages;
// production sets none.
type Fault func(m raftpb.Message) (drop bool, delay time.Duration)

type peer struct {
	id   uint64
	addr string
	q    chan raftpb.Message
	done chan struct{}
}

// peerQueue is how many messages may wait for one peer.
const peerQueue = 4096

// NewTransport returns a transport; SetNode must be called before it is used.
func NewTransport(log *slog.Logger) *Transport {
	return &Transport{log: log, peers: map[uint64]*peer{}, stop: make(chan struct{})}
}

// SetNode names the member's raft node, which gets delivery reports.
func (t *Transport) SetNode(n Stepper) {
	t.mu.Lock()
	t.node = n
	t.mu.Unlock()
}

// SetSelf sets the peer address this member's messages say they come from.
func (t *Transport) SetSelf(addr string) {
	t.mu.Lock()
	t.self = addr
	t.mu.Unlock()
}

// learnPeer records a sender's address if this member knows none for it.
func (t *Transport) learnPeer(id uint64, addr string) {
	t.mu.Lock()
	known := t.peers[id] != nil
	t.mu.Unlock()
	if !known && addr != "" && id != 0 {
		t.SetPeer(id, addr)
	}
}

// SetPeer adds or changes member id's peer address ("" removes it).
func (t *Transport) SetPeer(id uint64, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.peers[id]; p != nil {
		if p.addr == addr {
			return
		}
		close(p.done)
		delete(t.peers, id)
	}
	if addr == "" {
		return
	}
	p := &peer{id: id, addr: addr, q: make(chan raftpb.Message, peerQueue), done: make(chan struct{})}
	t.peers[id] = p
	go t.run(p)
}

// SetFault sets the fault applied to outbound messages (nil: none).
func (t *Transport) SetFault(f Fault) {
	t.mu.Lock()
	t.fault = f
	t.mu.Unlock()
}

// Send implements raftnode.Transport.
func (t *Transport) Send(msgs []raftpb.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		if t.fault != nil {
			drop, delay := t.fault(m)
			if drop {
				continue // lost on the way: raft retries, as after any loss
			}
			if delay > 0 {
				time.AfterFunc(delay, func() {
					t.mu.Lock()
					t.enqueueLocked(m)
					t.mu.Unlock()
				})
				continue
			}
		}
		t.enqueueLocked(m)
	}
}

// enqueueLocked queues m for its peer, or drops it and reports the peer unreachable when the
// queue is full.
func (t *Transport) enqueueLocked(m raftpb.Message) {
	p := t.peers[m.To]
	if p == nil {
		return
	}
	select {
	case p.q <- m:
	default:
		t.reportLocked(m, p.id)
	}
}

func (t *Transport) reportLocked(m raftpb.Message, to uint64) {
	if t.node == nil {
		return
	}
	if m.Type == raftpb.MsgSnap {
		t.node.ReportSnapshot(to, raft.SnapshotFailure)
	}
	t.node.ReportUnreachable(to)
}

func (t *Transport) report(m raftpb.Message, to uint64) {
	t.mu.Lock()
	t.reportLocked(m, to)
	t.mu.Unlock()
}

// run streams p's queue to it, reconnecting after failures.
func (t *Transport) run(p *peer) {
	cc, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.log.Error("raft transport: bad peer address", "peer", p.id, "addr", p.addr, "err", err)
		return
	}
	defer cc.Close()
	client := metav1.NewRaftClient(cc)
	for {
		select {
		case <-p.done:
			return
		case <-t.stop:
			return
		default:
		}
		ctx, cancel := context.WithCancel(context.Background())
		stream, err := client.Send(ctx)
		if err == nil {
			err = t.pump(p, stream)
		}
		cancel()
		if err != nil {
			select {
			case <-p.done:
				return
			case <-t.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// pump sends queued messages on stream until it breaks.
func (t *Transport) pump(p *peer, stream metav1.Raft_SendClient) error {
	for {
		select {
		case <-p.done:
			stream.CloseSend()
			return nil
		case <-t.stop:
			stream.CloseSend()
			return nil
		case m := <-p.q:
			b, err := m.Marshal()
			if err != nil {
				return err
			}
			t.mu.Lock()
			self := t.self
			t.mu.Unlock()
			if err := stream.Send(&metav1.RaftMessage{Data: b, FromAddress: self}); err != nil {
				t.report(m, p.id)
				return err
			}
			if m.Type == raftpb.MsgSnap {
				t.mu.Lock()
				if t.node != nil {
					t.node.ReportSnapshot(p.id, raft.SnapshotFinish)
				}
				t.mu.Unlock()
			}
		}
	}
}

// Close stops every stream.
func (t *Transport) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
}

// raftServer serves the Raft service: it steps inbound messages into the node.
type raftServer struct {
	metav1.UnimplementedRaftServer
	t *Transport
}

func (s *raftServer) Send(stream metav1.Raft_SendServer) error {
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return stream.SendAndClose(&metav1.RaftSendResponse{})
		}
		if err != nil {
			return err
		}
		var m raftpb.Message
		if err := m.Unmarshal(msg.Data); err != nil {
			return err
		}
		s.t.learnPeer(m.From, msg.FromAddress)
		s.t.mu.Lock()
		n := s.t.node
		s.t.mu.Unlock()
		if n != nil {
			n.Step(stream.Context(), m)
		}
	}
}

// RegisterRaft serves t's inbound side on g.
func RegisterRaft(g *grpc.Server, t *Transport) { metav1.RegisterRaftServer(g, &raftServer{t: t}) }
