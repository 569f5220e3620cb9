package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	metav1 "github.com/lavikdb/lavik/proto/lavik/meta/v1"
)

// needMeta refuses a command that only lavik-meta can answer when --meta is not given.
func needMeta(command string, g globals) error {
	if len(g.Meta) == 0 {
		return usageErrorf("%s needs lavik-meta (--meta host:port), which owns the topology and failover: "+
			"pass the client (gRPC) address of one or more lavik-meta members, e.g. --meta 10.0.0.1:7480,10.0.0.2:7480", command)
	}
	return nil
}

// metaClient calls the Meta service of the members of --meta. It tries them in order, moving
// on only when a member cannot be reached (nothing was sent, so nothing can have been
// decided), and follows a NotLeader answer to the leader it names once: a leader that moved
// again is reported rather than chased, since an operator should see an election in progress.
type metaClient struct {
	addrs   []string
	timeout time.Duration
	note    func(string) // tells the operator about a redirect (stderr)
}

func newMetaClient(g globals, stderr io.Writer) *metaClient {
	return &metaClient{addrs: g.Meta, timeout: g.Timeout, note: func(s string) { fmt.Fprintf(stderr, "lavikctl: %s\n", s) }}
}

// call runs fn (the RPC named what) within timeout against the members; the error is an
// *exitError whose message names the member and what to do.
func (m *metaClient) call(ctx context.Context, what string, timeout time.Duration, fn func(context.Context, metav1.MetaClient) error) error {
	var unreachable []*exitError
	for _, addr := range m.addrs {
		reached, err := m.callAt(ctx, addr, what, timeout, fn)
		if err == nil {
			return nil
		}
		if !reached {
			unreachable = append(unreachable, asExit(err))
			continue
		}
		if ee := asExit(err); ee.code == exitTimeout && !isDecision(what) && ctx.Err() == nil {
			// A member that accepts connections but does not answer (stopped, overloaded):
			// a read may as well be asked of another one.
			m.note(fmt.Sprintf("lavik-meta member %s did not answer %s within %v; asking the next member", addr, what, timeout))
			unreachable = append(unreachable, ee)
			continue
		}
		var nl *notLeaderError
		if !errors.As(err, &nl) {
			return err
		}
		if nl.detail.LeaderAddress == "" || nl.detail.LeaderId == 0 {
			return &exitError{code: exitFailed, err: fmt.Errorf("lavik-meta member %s is not the leader and knows of none: an election is going on; retry in a moment", addr)}
		}
		m.note(fmt.Sprintf("lavik-meta member %s is not the leader; the leader is member %d at %s: retrying %s there",
			addr, nl.detail.LeaderId, nl.detail.LeaderAddress, what))
		_, err = m.callAt(ctx, nl.detail.LeaderAddress, what, timeout, fn)
		if errors.As(err, &nl) {
			return &exitError{code: exitFailed, err: fmt.Errorf("lavik-meta member %s, named the leader by %s, is not the leader either (it names %d at %s): leadership is moving; retry in a moment",
				nl.addr, addr, nl.detail.LeaderId, nl.detail.LeaderAddress)}
		}
		return err
	}
	return combine(unreachable, "no lavik-meta member of --meta could be reached")
}

// notLeaderError is an UNAVAILABLE answer with a NotLeader detail.
type notLeaderError struct {
	addr   string
	detail *metav1.NotLeader
	err    error
}

func (e *notLeaderError) Error() string { return e.err.Error() }

// callAt calls one member; reached is false when the connection could not be made.
func (m *metaClient) callAt(ctx context.Context, addr, what string, timeout time.Duration, fn func(context.Context, metav1.MetaClient) error) (reached bool, err error) {
	c, err := dial(addr, metaPeer)
	if err != nil {
		return false, err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = fn(cctx, metav1.NewMetaClient(c.cc))
	if err == nil {
		return true, nil
	}
	st, _ := status.FromError(err)
	if st.Code() == codes.Unavailable {
		for _, d := range st.Details() {
			if nl, ok := d.(*metav1.NotLeader); ok {
				return true, &notLeaderError{addr: addr, detail: nl, err: err}
			}
		}
	}
	reached = c.lastDialErr() == nil
	if st.Code() == codes.DeadlineExceeded && cctx.Err() == nil {
		// Meta's own answer, not our deadline: Promote's target did not catch up in time, and
		// nothing changed.
		return true, &exitError{code: exitTimeout, err: fmt.Errorf("lavik-meta member %s: %s: DEADLINE_EXCEEDED: %s", addr, what, st.Message())}
	}
	ee := c.callError(what, timeout, err)
	if st.Code() == codes.DeadlineExceeded && reached && isDecision(what) {
		ee.err = fmt.Errorf("%w; whether meta decided it is unknown: check with lavikctl topology", ee.err)
	}
	return reached, ee
}

// isDecision reports whether the RPC what changes meta's state (its outcome matters on timeout).
func isDecision(what string) bool {
	switch what {
	case "Promote", "AddMember", "RemoveMember":
		return true
	}
	return false
}

// metaSection is status's part about lavik-meta. Its json tags are documented in statusHelp.
type metaSection struct {
	Configured   bool         `json:"configured"`
	Message      string       `json:"message,omitempty"`
	Error        string       `json:"error,omitempty"`
	Linearizable bool         `json:"linearizable"`
	Leader       string       `json:"leader"`
	Members      []memberDesc `json:"members"`
	// Groups are the shard groups as the leader sees them (nil when it could not be asked).
	Groups []groupDesc `json:"groups,omitempty"`
}

// groupDesc is a shard group in status's meta section.
type groupDesc struct {
	ID              string `json:"id"`
	Epoch           uint64 `json:"epoch"`
	Primary         string `json:"primary"`
	NoPrimaryReason string `json:"no_primary_reason"`
}

type memberDesc struct {
	ID            uint64 `json:"id"`
	Name          string `json:"name"`
	PeerAddress   string `json:"peer_address"`
	ClientAddress string `json:"client_address"`
	IsLeader      bool   `json:"is_leader"`
}

// metaSummary is where status reports on lavik-meta: "meta: not configured" without --meta,
// else its members and leader as one member knows them (a stale read, so that a status still
// answers while meta has no quorum). It never makes anything up: an error is reported as such.
func metaSummary(ctx context.Context, g globals) (metaSection, *exitError) {
	if len(g.Meta) == 0 {
		return metaSection{Message: "meta: not configured", Members: []memberDesc{}}, nil
	}
	s := metaSection{Configured: true, Members: []memberDesc{}}
	m := &metaClient{addrs: g.Meta, timeout: g.Timeout, note: func(string) {}}
	var resp *metav1.ListMembersResponse
	err := m.call(ctx, "ListMembers", g.Timeout, func(ctx context.Context, c metav1.MetaClient) (err error) {
		resp, err = c.ListMembers(ctx, &metav1.ListMembersRequest{Consistency: metav1.ReadConsistency_READ_CONSISTENCY_STALE})
		return err
	})
	if err != nil {
		ee := asExit(err)
		s.Error = ee.err.Error()
		return s, ee
	}
	s.Linearizable = resp.Linearizable
	s.Members = membersDesc(resp.Members)
	leaderAddr := ""
	for _, mb := range s.Members {
		if mb.IsLeader {
			s.Leader, leaderAddr = mb.Name, mb.ClientAddress
		}
	}
	// What the nodes report, and why a group has no primary, only the leader knows.
	if leaderAddr != "" {
		lm := &metaClient{addrs: []string{leaderAddr}, timeout: g.Timeout, note: func(string) {}}
		if topo, err := getTopology(ctx, lm, g.Timeout, true); err == nil && topo.HeartbeatsKnown {
			s.Groups = []groupDesc{}
			for _, sg := range topo.ShardGroups {
				gd := groupDesc{ID: sg.Id, Epoch: sg.Epoch, NoPrimaryReason: sg.NoPrimaryReason}
				if sg.Primary != nil {
					gd.Primary = sg.Primary.NodeId
				}
				s.Groups = append(s.Groups, gd)
			}
		}
	}
	return s, nil
}

func membersDesc(ms []*metav1.Member) []memberDesc {
	out := []memberDesc{}
	for _, mb := range ms {
		out = append(out, memberDesc{ID: mb.Id, Name: mb.Name, PeerAddress: mb.PeerAddress, ClientAddress: mb.ClientAddress, IsLeader: mb.IsLeader})
	}
	return out
}

func (s metaSection) tables() []table {
	switch {
	case !s.Configured:
		return []table{{notes: []string{s.Message}}}
	case s.Error != "":
		return []table{{notes: []string{"meta: unavailable (see the error below)"}}}
	}
	t := membersTable(s.Members)
	t.title = "meta members (leader: " + orNone(s.Leader) + ")"
	if !s.Linearizable {
		t.title += ", as one member last knew them"
	}
	out := []table{t}
	if s.Groups != nil {
		gt := table{title: "shard groups (as the leader sees them)", columns: []string{"GROUP", "EPOCH", "PRIMARY", "STATE"}}
		for _, g := range s.Groups {
			state := "ok"
			switch {
			case g.NoPrimaryReason != "":
				state = "NO WRITABLE PRIMARY: no follower is fit to be promoted: " + g.NoPrimaryReason
			case g.Primary == "":
				state = "no primary yet (a failover may be in progress)"
			}
			gt.rows = append(gt.rows, []string{g.ID, strconv.FormatUint(g.Epoch, 10), orNone(g.Primary), state})
		}
		out = append(out, gt)
	}
	return out
}

func membersTable(ms []memberDesc) table {
	t := table{columns: []string{"ID", "NAME", "CLIENT", "PEER", "LEADER"}}
	for _, m := range ms {
		t.rows = append(t.rows, []string{strconv.FormatUint(m.ID, 10), m.Name, m.ClientAddress, m.PeerAddress, yesNo(m.IsLeader)})
	}
	return t
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
