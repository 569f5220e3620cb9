package metav1_test

// Only the messages' encoding is tested here: the Meta service's behaviour is tested against
// lavik-meta itself, not against a stand-in.

import (
	"testing"

	"google.golang.org/protobuf/proto"

	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
)

func TestHeartbeatRoundTrip(t *testing.T) {
	in := &metav1.HeartbeatRequest{
		NodeId:            "data-1",
		Role:              metav1.Role_ROLE_PRIMARY,
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
		AssignedRole:        metav1.Role_ROLE_PRIMARY,
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
