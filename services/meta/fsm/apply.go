package fsm

import (
	"fmt"
	"math"
	"slices"
)

// apply applies one decoded command to s. Every check comes before the first write, so a
// refused command writes nothing. The error is for storage failures and corruption only.
func (s state) apply(c Command) (Result, error) {
	switch c := c.(type) {
	case RegisterNode:
		return s.registerNode(c)
	case SetPrimary:
		return s.setPrimary(c)
	case ClearPrimary:
		return s.clearPrimary(c)
	case RemoveNode:
		return s.removeNode(c)
	case AddMember:
		return s.addMember(c)
	case RemoveMember:
		return s.removeMember(c)
	case AssignSlots:
		return s.assignSlots(c)
	}
	return Result{}, fmt.Errorf("fsm: no apply for command %T", c) // unreachable: Decode knows the same kinds
}

// checkID returns a refusal for an id that is not 1 to 64 characters of [A-Za-z0-9._-] (the
// proto's rule for node and shard group ids), or nil.
func checkID(what, id string) *Result {
	ok := len(id) >= 1 && len(id) <= 64
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if ok {
		return nil
	}
	r := refuse(CodeInvalidArgument, "%s %q is not 1 to 64 characters of [A-Za-z0-9._-]", what, id)
	return &r
}

func (s state) registerNode(c RegisterNode) (Result, error) {
	if r := checkID("node id", c.NodeID); r != nil {
		return *r, nil
	}
	if r := checkID("shard group", c.ShardGroup); r != nil {
		return *r, nil
	}
	if c.DataAddress == "" {
		return refuse(CodeInvalidArgument, "node %q has no data address", c.NodeID), nil
	}
	n, known, err := s.node(c.NodeID)
	if err != nil {
		return Result{}, err
	}
	if known && n.Group != c.ShardGroup {
		return refuse(CodeFailedPrecondition, "node %q is registered in shard group %q, not %q", c.NodeID, n.Group, c.ShardGroup), nil
	}
	g, exists, err := s.group(c.ShardGroup)
	if err != nil {
		return Result{}, err
	}
	if !exists {
		// Implicit creation, at the node's epoch: a fresh meta adopting nodes that already
		// hold data must not start below an epoch they have seen, or it could name a second
		// primary at an epoch that already had one. No primary is named here; the failover
		// layer does that with SetPrimary, at a higher epoch.
		g = Group{ID: c.ShardGroup, Epoch: c.Epoch}
		if err := s.putGroup(g); err != nil {
			return Result{}, err
		}
	} else if c.Epoch > g.Epoch {
		return refuse(CodeFailedPrecondition, "node %q has seen epoch %d but shard group %q is at %d: meta's state is older than the node's", c.NodeID, c.Epoch, g.ID, g.Epoch), nil
	}
	if !known {
		n = Node{ID: c.NodeID, Group: c.ShardGroup}
		if g.Primary != "" {
			n.Role = RoleFollower
		}
	}
	n.DataAddress = c.DataAddress
	n.AdminAddress = c.AdminAddress
	n.Version = c.Version
	n.ReportedEpoch = max(n.ReportedEpoch, c.Epoch)
	if err := s.putNode(n); err != nil {
		return Result{}, err
	}
	return Result{Epoch: g.Epoch, Role: n.Role, PrimaryNodeID: g.Primary}, nil
}

// groupAt loads a group and checks its epoch; a non-nil Result is the refusal.
func (s state) groupAt(id string, expected uint64) (Group, *Result, error) {
	if r := checkID("shard group", id); r != nil {
		return Group{}, r, nil
	}
	g, ok, err := s.group(id)
	if err != nil || !ok {
		r := refuse(CodeNotFound, "shard group %q not found", id)
		return Group{}, &r, err
	}
	if g.Epoch != expected {
		r := refuse(CodeFailedPrecondition, "shard group %q is at epoch %d, not the expected %d", id, g.Epoch, expected)
		return Group{}, &r, nil
	}
	if g.Epoch == math.MaxUint64 {
		r := refuse(CodeFailedPrecondition, "shard group %q is at the last epoch", id)
		return Group{}, &r, nil
	}
	return g, nil, nil
}

func (s state) setPrimary(c SetPrimary) (Result, error) {
	if r := checkID("node id", c.NodeID); r != nil {
		return *r, nil
	}
	if r := checkID("shard group", c.ShardGroup); r != nil {
		return *r, nil
	}
	// NOT_FOUND before FAILED_PRECONDITION, as Promote documents them.
	if _, ok, err := s.group(c.ShardGroup); err != nil || !ok {
		return refuse(CodeNotFound, "shard group %q not found", c.ShardGroup), err
	}
	n, ok, err := s.node(c.NodeID)
	if err != nil || !ok {
		return refuse(CodeNotFound, "node %q not found", c.NodeID), err
	}
	if n.Group != c.ShardGroup {
		return refuse(CodeFailedPrecondition, "node %q is in shard group %q, not %q", c.NodeID, n.Group, c.ShardGroup), nil
	}
	g, r, err := s.groupAt(c.ShardGroup, c.ExpectedEpoch)
	if r != nil || err != nil {
		return deref(r), err
	}
	g.Epoch++
	g.Primary = c.NodeID
	if err := s.putGroup(g); err != nil {
		return Result{}, err
	}
	if err := s.setRoles(g); err != nil {
		return Result{}, err
	}
	return Result{Epoch: g.Epoch, PrimaryNodeID: g.Primary}, nil
}

// setRoles makes g.Primary the primary and every other node of g a follower.
func (s state) setRoles(g Group) error {
	nodes, err := s.groupNodes(g.ID)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		role := RoleFollower
		if n.ID == g.Primary {
			role = RolePrimary
		}
		if n.Role != role {
			n.Role = role
			if err := s.putNode(n); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s state) clearPrimary(c ClearPrimary) (Result, error) {
	g, r, err := s.groupAt(c.ShardGroup, c.ExpectedEpoch)
	if r != nil || err != nil {
		return deref(r), err
	}
	old := g.Primary
	g.Epoch++
	g.Primary = ""
	if err := s.putGroup(g); err != nil {
		return Result{}, err
	}
	if old != "" {
		n, ok, err := s.node(old)
		if err != nil {
			return Result{}, err
		}
		if !ok {
			return Result{}, fmt.Errorf("%w: shard group %q names primary %q, which is not registered", ErrCorrupt, g.ID, old)
		}
		n.Role = RoleUnspecified
		if err := s.putNode(n); err != nil {
			return Result{}, err
		}
	}
	return Result{Epoch: g.Epoch}, nil
}

func (s state) removeNode(c RemoveNode) (Result, error) {
	if r := checkID("node id", c.NodeID); r != nil {
		return *r, nil
	}
	n, ok, err := s.node(c.NodeID)
	if err != nil || !ok {
		return refuse(CodeNotFound, "node %q not found", c.NodeID), err
	}
	g, ok, err := s.group(n.Group)
	if err != nil {
		return Result{}, err
	}
	if ok && g.Primary == n.ID {
		return refuse(CodeFailedPrecondition, "node %q is the primary of shard group %q at epoch %d: fence it with ClearPrimary first", n.ID, g.ID, g.Epoch), nil
	}
	if err := s.nodes.Delete([]byte(n.ID)); err != nil {
		return Result{}, err
	}
	return Result{}, nil
}

func (s state) addMember(c AddMember) (Result, error) {
	if c.ID == 0 {
		return refuse(CodeInvalidArgument, "member id 0"), nil
	}
	if c.PeerAddress == "" {
		return refuse(CodeInvalidArgument, "member %d has no peer address", c.ID), nil
	}
	members, err := s.allMembers()
	if err != nil {
		return Result{}, err
	}
	for _, m := range members {
		if m.ID != c.ID && c.Name != "" && m.Name == c.Name {
			return refuse(CodeFailedPrecondition, "member name %q is taken by member %d", c.Name, m.ID), nil
		}
	}
	return Result{}, s.putMember(Member(c))
}

func (s state) removeMember(c RemoveMember) (Result, error) {
	if c.ID == 0 {
		return refuse(CodeInvalidArgument, "member id 0"), nil
	}
	if _, ok, err := s.member(c.ID); err != nil || !ok {
		return refuse(CodeNotFound, "member %d not found", c.ID), err
	}
	return Result{}, s.members.Delete(u64bytes(c.ID))
}

func (s state) assignSlots(c AssignSlots) (Result, error) {
	if r := checkID("shard group", c.ShardGroup); r != nil {
		return *r, nil
	}
	for _, r := range c.Ranges {
		if r.Start > r.End || r.End >= NumSlots {
			return refuse(CodeInvalidArgument, "slot range %d-%d is not within 0-%d with start <= end", r.Start, r.End, NumSlots-1), nil
		}
	}
	g, ok, err := s.group(c.ShardGroup)
	if err != nil || !ok {
		return refuse(CodeNotFound, "shard group %q not found", c.ShardGroup), err
	}
	ranges := normalizeSlots(c.Ranges)
	groups, err := s.allGroups()
	if err != nil {
		return Result{}, err
	}
	for _, other := range groups {
		if other.ID == g.ID {
			continue
		}
		if r, ok := firstOverlap(ranges, other.Slots); ok {
			return refuse(CodeFailedPrecondition, "slots %s are owned by shard group %q", r, other.ID), nil
		}
	}
	g.Slots = ranges
	return Result{}, s.putGroup(g)
}

// normalizeSlots sorts ranges and merges those that overlap or touch. It returns nil for none,
// so that equal slot sets are equal values.
func normalizeSlots(in []SlotRange) []SlotRange {
	if len(in) == 0 {
		return nil
	}
	rs := slices.Clone(in)
	slices.SortFunc(rs, func(a, b SlotRange) int { return int(a.Start) - int(b.Start) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.Start <= last.End+1 {
			last.End = max(last.End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}

// firstOverlap returns the first common slots of two sorted, disjoint range lists.
func firstOverlap(a, b []SlotRange) (SlotRange, bool) {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		lo, hi := max(a[i].Start, b[j].Start), min(a[i].End, b[j].End)
		if lo <= hi {
			return SlotRange{lo, hi}, true
		}
		if a[i].End < b[j].End {
			i++
		} else {
			j++
		}
	}
	return SlotRange{}, false
}

func deref(r *Result) Result {
	if r == nil {
		return Result{}
	}
	return *r
}
