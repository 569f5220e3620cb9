package metav1_test

// Only the messages' encoding is tested here: the Meta service's behaviour is tested against
// lavik-meta itself, not against a stand-in.

import (
	"testing"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/lavikdb/lavik/proto/lavik/common/v1"
	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
)

func TestHeartbeatRoundTrip(t *testing.T) {
	in := &metav1.HeartbeatRequest{
		NodeId:            "data-1",
		Role:              commonv1.Role_ROLE_PRIMARY,
		Epoch:             7,
		ReplicationId:     "8f1c0e3a9b2d4c5e6f708192a3b4c5d6e7f80912",
		ReplicationOffset: 1 << 40,
		Health:            metav1.Health_HEALTH_DEGRADED,
		HealthDetail:      "disk full",
	}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	out := &metav1.HeartbeatRequest{}
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if !proto.Equal(in, out) {
		t.Fatalf("round trip changed the message:\n in: %v\nout: %v", in, out)
	}

	resp := &metav1.HeartbeatResponse{
		AssignedRole:        commonv1.Role_ROLE_PRIMARY,
		Epoch:               7,
		LeaseDurationMs:     3000,
		LeaseExpiresUnixMs:  1_700_000_000_000,
		HeartbeatIntervalMs: 500,
	}
	b, err = proto.Marshal(resp)
	if err != nil {
		t.Fatalf("marshal response: %v", err)
	}
	got := &metav1.HeartbeatResponse{}
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatalf("unmarshal response: %v", err)
	}
	if !proto.Equal(resp, got) {
		t.Fatalf("response round trip changed the message:\n in: %v\nout: %v", resp, got)
	}
}

// TestNotLeaderDetail: a member that is not the leader answers UNAVAILABLE with a NotLeader
// detail, which a caller reads back from the error it gets (as it crosses the wire).
func TestNotLeaderDetail(t *testing.T) {
	st, err := status.New(codes.Unavailable, "meta: not the leader").WithDetails(&metav1.NotLeader{LeaderId: 3, LeaderAddress: "10.0.0.3:7480"})
	if err != nil {
		t.Fatal(err)
	}
	wire, err := proto.Marshal(st.Proto())
	if err != nil {
		t.Fatal(err)
	}
	var back spb.Status
	if err := proto.Unmarshal(wire, &back); err != nil {
		t.Fatal(err)
	}
	got := status.FromProto(&back)
	if got.Code() != codes.Unavailable {
		t.Fatalf("code %v", got.Code())
	}
	var nl *metav1.NotLeader
	for _, d := range got.Details() {
		if v, ok := d.(*metav1.NotLeader); ok {
			nl = v
		}
	}
	if nl == nil || nl.LeaderId != 3 || nl.LeaderAddress != "10.0.0.3:7480" {
		t.Fatalf("details %v, want the NotLeader detail", got.Details())
	}
}
