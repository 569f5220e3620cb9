package fsm

import (
	"errors"
	"fmt"
)

// ErrDecode marks an entry, a stored record or a snapshot that this version cannot decode: a
// malformed encoding, an unknown version, kind or field. Apply returns it (wrapped) instead of
// applying anything, so a member running older code stops rather than diverging.
var ErrDecode = errors.New("fsm: cannot decode")

// ErrNotFound is returned by the read methods for an unknown node, group or member.
var ErrNotFound = errors.New("fsm: not found")

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("fsm: closed")

// ErrCorrupt marks a database whose contents break this package's invariants (a missing bucket,
// an undecodable record, an unknown format). It is a different class from ErrDecode on an
// entry: the entry is the leader's problem, a corrupt database is this member's.
var ErrCorrupt = errors.New("fsm: corrupt database")

// Role is the role meta assigns a data node. The values are those of lavik.common.v1.Role, so the
// API layer converts with commonv1.Role(r) (lavik/common/v1); a test checks they agree.
type Role uint32

const (
	// RoleUnspecified: not placed, serves no writes (a new node of a group without primary,
	// or a primary fenced by ClearPrimary).
	RoleUnspecified Role = 0
	// RolePrimary: the one node of its group named primary at the group's epoch.
	RolePrimary Role = 2
	// RoleFollower: replicates from the primary.
	RoleFollower Role = 3
)

func (r Role) String() string {
	switch r {
	case RoleUnspecified:
		return "unspecified"
	case RolePrimary:
		return "primary"
	case RoleFollower:
		return "follower"
	}
	return fmt.Sprintf("role(%d)", uint32(r))
}

// Code is the outcome of a command. The values are the gRPC status codes the proto names for
// each case, so the API layer converts with codes.Code(c); a test checks they agree.
type Code uint32

const (
	// CodeOK: the command changed the state as asked (or found it already so).
	CodeOK Code = 0
	// CodeInvalidArgument: a malformed field (an id with a bad character, a slot past 16383).
	CodeInvalidArgument Code = 3
	// CodeNotFound: an unknown node, group or member.
	CodeNotFound Code = 5
	// CodeFailedPrecondition: the command conflicts with the current topology or epoch.
	CodeFailedPrecondition Code = 9
)

func (c Code) String() string {
	switch c {
	case CodeOK:
		return "OK"
	case CodeInvalidArgument:
		return "INVALID_ARGUMENT"
	case CodeNotFound:
		return "NOT_FOUND"
	case CodeFailedPrecondition:
		return "FAILED_PRECONDITION"
	}
	return fmt.Sprintf("code(%d)", uint32(c))
}

// NumSlots is the number of Redis Cluster hash slots.
const NumSlots = 16384

// SlotRange is the slots Start..End, both included (Redis's CLUSTER SLOTS convention).
// Invariant (in stored state): Start <= End < NumSlots.
type SlotRange struct {
	Start, End uint32
}

func (r SlotRange) String() string {
	if r.Start == r.End {
		return fmt.Sprint(r.Start)
	}
	return fmt.Sprintf("%d-%d", r.Start, r.End)
}

// Member is a lavik-meta raft member, as recorded by AddMember. The raft layer's conf changes
// are the authority on membership; this is the bookkeeping that lets the API answer with names
// and addresses.
type Member struct {
	// ID is the raft id. Invariant: non-zero.
	ID            uint64
	Name          string
	PeerAddress   string
	ClientAddress string
}

// Node is a registered data node.
type Node struct {
	ID           string
	Group        string
	DataAddress  string
	AdminAddress string
	Version      string
	// Role is the role meta assigned. Invariant: RolePrimary exactly when the group's Primary
	// is this node.
	Role Role
	// ReportedEpoch is the highest epoch the node reported when registering. Invariant: never
	// above its group's epoch (a registration that would break it is refused).
	ReportedEpoch uint64
}

// Group is a shard group.
type Group struct {
	ID string
	// Epoch is raised by every change of primary (SetPrimary, ClearPrimary). Invariant: only
	// grows, and each epoch has had at most one primary.
	Epoch uint64
	// Primary is the primary's node id at Epoch, "" when the group has none.
	Primary string
	// Slots are the owned hash slots, sorted, neither overlapping nor touching. Invariant: no
	// slot is owned by two groups.
	Slots []SlotRange
}

// GroupView is a group with its nodes, as Topology returns it.
type GroupView struct {
	Group
	// PrimaryNode is the primary's record; nil when the group has none.
	PrimaryNode *Node
	// Followers are the group's other nodes (followers and unplaced ones), ordered by id.
	Followers []Node
}

// Topology is the whole data-node topology.
type Topology struct {
	// Version is the applied index the topology was read at. Invariant: never decreases.
	Version uint64
	// Groups are ordered by id.
	Groups []GroupView
}
