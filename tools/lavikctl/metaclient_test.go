package main

// lavik-meta does not exist yet, so the Meta client is tested only on its error paths: stand-in
// members that answer every call with an error (never with data), to check that lavikctl
// follows a NotLeader detail once and reports what it found.

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
)

// refusingMember answers ListMembers with err, and counts the calls.
type refusingMember struct {
	metav1.UnimplementedMetaServer
	err   func() error
	calls int
}

func (m *refusingMember) ListMembers(context.Context, *metav1.ListMembersRequest) (*metav1.ListMembersResponse, error) {
	m.calls++
	return nil, m.err()
}

func serveMember(t *testing.T, m *refusingMember) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	metav1.RegisterMetaServer(g, m)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

func notLeader(id uint64, addr string) func() error {
	return func() error {
		st, _ := status.New(codes.Unavailable, "meta: not the leader").WithDetails(&metav1.NotLeader{LeaderId: id, LeaderAddress: addr})
		return st.Err()
	}
}

func listMembers(m *metaClient) error {
	return m.call(context.Background(), "ListMembers", m.timeout, func(ctx context.Context, c metav1.MetaClient) error {
		_, err := c.ListMembers(ctx, &metav1.ListMembersRequest{})
		return err
	})
}

func TestMetaClientFollowsNotLeaderOnce(t *testing.T) {
	leader := &refusingMember{err: func() error { return status.Error(codes.FailedPrecondition, "meta: stand-in leader") }}
	leaderAddr := serveMember(t, leader)
	follower := &refusingMember{err: notLeader(3, leaderAddr)}
	followerAddr := serveMember(t, follower)
	var notes bytes.Buffer
	m := &metaClient{addrs: []string{closedAddr(t), followerAddr}, timeout: 5 * time.Second, note: func(s string) { notes.WriteString(s + "\n") }}

	err := listMembers(m)
	// The unreachable first address is skipped, the follower redirects, the leader's own
	// error is the answer.
	if follower.calls != 1 || leader.calls != 1 {
		t.Fatalf("calls: follower %d, leader %d; want 1 each", follower.calls, leader.calls)
	}
	if e := asExit(err); e.code != exitFailed || !strings.Contains(e.Error(), "lavik-meta member "+leaderAddr+" refused ListMembers: FAILED_PRECONDITION: meta: stand-in leader") {
		t.Fatalf("error: %v", err)
	}
	if !strings.Contains(notes.String(), "the leader is member 3 at "+leaderAddr) {
		t.Fatalf("no note of the redirect: %q", notes.String())
	}
}

func TestMetaClientNoLeader(t *testing.T) {
	a := &refusingMember{err: notLeader(0, "")}
	addr := serveMember(t, a)
	m := &metaClient{addrs: []string{addr}, timeout: 5 * time.Second, note: func(string) {}}
	if err := listMembers(m); !strings.Contains(err.Error(), "an election is going on") || asExit(err).code != exitFailed {
		t.Fatalf("error: %v", err)
	}

	// A leader that names yet another one is reported, not chased.
	c := &refusingMember{err: notLeader(9, "127.0.0.1:1")}
	cAddr := serveMember(t, c)
	b := &refusingMember{err: notLeader(2, cAddr)}
	m.addrs = []string{serveMember(t, b)}
	if err := listMembers(m); !strings.Contains(err.Error(), "leadership is moving") || c.calls != 1 {
		t.Fatalf("error: %v (calls to the second: %d)", err, c.calls)
	}

	// UNAVAILABLE without a detail (no quorum) is final: nothing was decided, and another
	// member would say the same.
	d := &refusingMember{err: func() error { return status.Error(codes.Unavailable, "meta: no quorum") }}
	other := &refusingMember{err: notLeader(0, "")}
	m.addrs = []string{serveMember(t, d), serveMember(t, other)}
	if err := listMembers(m); !strings.Contains(err.Error(), "UNAVAILABLE: meta: no quorum") || other.calls != 0 {
		t.Fatalf("error: %v (calls to the other: %d)", err, other.calls)
	}
}
