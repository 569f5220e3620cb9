// Package admin is lavik-data's admin API over gRPC (lavik/data/v1 DataAdmin), which lavikctl
// and lavik-meta call: the node's role, epoch, replication state and size (Status), and a
// follower's rebuild (Rebuild). Clients use the RESP port; this one only reports and maintains.
package admin

import (
	"context"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonv1 "github.com/lavikdb/lavik/proto/lavik/common/v1"
	datav1 "github.com/lavikdb/lavik/proto/lavik/data/v1"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/repl"
)

// Server serves DataAdmin for one node.
type Server struct {
	datav1.UnimplementedDataAdminServer
	node    *repl.Node
	ks      *keyspace.Keyspace
	ident   *repl.Identity // nil for a node without meta
	version string
}

// New returns the admin service of a node; ident is nil for a node that runs without meta.
func New(node *repl.Node, ks *keyspace.Keyspace, ident *repl.Identity, version string) *Server {
	return &Server{node: node, ks: ks, ident: ident, version: version}
}

// Serve serves s on lis until the returned server is stopped.
func Serve(lis net.Listener, s *Server) *grpc.Server {
	g := grpc.NewServer()
	datav1.RegisterDataAdminServer(g, s)
	go g.Serve(lis)
	return g
}

// Status implements DataAdmin: counters only, never the disk.
func (s *Server) Status(ctx context.Context, _ *datav1.StatusRequest) (*datav1.StatusResponse, error) {
	st := s.node.Status()
	ks := s.ks.Stats(nil)
	r := &datav1.StatusResponse{
		Writable:          s.node.Writable(),
		ReplicationId:     st.ReplID,
		ReplicationOffset: uint64(max(st.Offset, 0)),
		KeyCount:          uint64(max(ks.Keys, 0)),
		DiskBytes:         uint64(max(ks.Log.DiskBytes, 0)),
		Version:           s.version,
		DataIncomplete:    st.Incomplete,
	}
	if st.Incomplete {
		r.DataIncompleteReason = st.IncompleteReason
	}
	switch {
	case st.Follower:
		r.Role = commonv1.Role_ROLE_FOLLOWER
	case s.ident != nil && r.Writable:
		r.Role = commonv1.Role_ROLE_PRIMARY
	case s.ident != nil:
		// Under meta, not placed yet or without a lease: it serves no writes.
		r.Role = commonv1.Role_ROLE_UNSPECIFIED
	default:
		r.Role = commonv1.Role_ROLE_STANDALONE
	}
	if s.ident != nil {
		r.NodeId, r.Epoch = s.ident.NodeID(), s.ident.Epoch()
	}
	for _, f := range st.Followers {
		r.Followers = append(r.Followers, &datav1.FollowerLink{Address: f.Addr, State: followerState(f.State),
			AckedOffset: uint64(max(f.Acked, 0)), LastAckAgeMs: ms(f.AckAge)})
	}
	if st.Follower {
		r.PrimaryLink = &datav1.PrimaryLink{PrimaryAddress: st.PrimaryAddr, State: linkState(st.LinkState),
			PrimaryOffset: uint64(max(st.PrimaryOffset, 0)), LastIoAgeMs: ms(st.LastIOAge)}
		if st.SyncInProgress {
			r.PrimaryLink.FullSyncBytesReceived = uint64(st.SyncBytes)
		}
	}
	return r, nil
}

// Rebuild implements DataAdmin.
func (s *Server) Rebuild(ctx context.Context, req *datav1.RebuildRequest) (*datav1.RebuildResponse, error) {
	host, portStr, err := net.SplitHostPort(req.PrimaryAddress)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port <= 0 || port > 65535 {
		return nil, status.Errorf(codes.InvalidArgument, "admin: primary_address %q: want host:port", req.PrimaryAddress)
	}
	// The node's role state machine decides (repl/role.go): under meta only at its current
	// epoch and from the primary meta assigned.
	already, err := s.node.Rebuild(host, port, req.ExpectedEpoch)
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "admin: %v", err)
	}
	return &datav1.RebuildResponse{AlreadyRunning: already}, nil
}

func ms(d time.Duration) uint32 { return uint32(min(max(d.Milliseconds(), 0), 1<<32-1)) }

func linkState(s string) datav1.LinkState {
	switch s {
	case "connect", "connecting":
		return datav1.LinkState_LINK_STATE_HANDSHAKE
	case "sync":
		return datav1.LinkState_LINK_STATE_FULL_SYNC
	case "connected":
		return datav1.LinkState_LINK_STATE_ONLINE
	}
	return datav1.LinkState_LINK_STATE_UNSPECIFIED
}

func followerState(s string) datav1.LinkState {
	switch s {
	case "wait_bgsave", "send_bulk":
		return datav1.LinkState_LINK_STATE_FULL_SYNC
	case "online":
		return datav1.LinkState_LINK_STATE_ONLINE
	}
	return datav1.LinkState_LINK_STATE_UNSPECIFIED
}
