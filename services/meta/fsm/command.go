package fsm

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// CommandVersion is the only command encoding version this package applies. A new version is
// for a change an older member must not apply at all; it is refused with ErrDecode, so a
// member running older code stops at that entry instead of diverging from the others.
const CommandVersion = 1

// Command is one replicated decision: the data of a raft entry. The concrete types are the
// exported structs below; Encode turns one into entry data and Decode back.
type Command interface {
	// kind is the envelope field number that carries the command.
	kind() protowire.Number
	encode() []byte
}

// The envelope:
//
//	message Command {
//	  uint32 version = 1;            // CommandVersion
//	  oneof kind {                   // exactly one
//	    RegisterNode  register_node  = 2;
//	    SetPrimary    set_primary    = 3;
//	    ClearPrimary  clear_primary  = 4;
//	    RemoveNode    remove_node    = 5;
//	    AddMember     add_member     = 6;
//	    RemoveMember  remove_member  = 7;
//	    AssignSlots   assign_slots   = 8;
//	  }
//	}
//
// Field numbers are never reused: a removed kind's number stays reserved.
const (
	fieldVersion     protowire.Number = 1
	kindRegisterNode protowire.Number = 2
	kindSetPrimary   protowire.Number = 3
	kindClearPrimary protowire.Number = 4
	kindRemoveNode   protowire.Number = 5
	kindAddMember    protowire.Number = 6
	kindRemoveMember protowire.Number = 7
	kindAssignSlots  protowire.Number = 8
	kindLast                          = kindAssignSlots
)

// maxCommandLength bounds an entry's data. Real commands are a few hundred bytes; the bound
// only keeps a corrupt length from looking like a command.
const maxCommandLength = 1 << 20

const (
	commandWhat   = "command"
	slotRangeWhat = "SlotRange"
)

// RegisterNode announces a data node, or updates a known one's addresses and version. Its
// group is created (at the node's reported epoch, without primary) if it does not exist.
// Refused: an invalid id or an empty data address (INVALID_ARGUMENT); a node id registered in
// another group, or a reported epoch above the group's (FAILED_PRECONDITION: meta is behind
// the node). The result carries the assigned role, the group's epoch and its primary.
//
//	message RegisterNode { string node_id = 1; string data_address = 2;
//	  string admin_address = 3; string shard_group = 4; uint64 epoch = 6; string version = 7; }
//
// The numbers are RegisterNodeRequest's; 5 (its role hint) is left out because the state
// machine does not use it: the failover layer reads it and decides with SetPrimary.
type RegisterNode struct {
	NodeID       string
	DataAddress  string
	AdminAddress string
	ShardGroup   string
	Epoch        uint64
	Version      string
}

// SetPrimary names the group's primary at a new epoch: if the group is at ExpectedEpoch and
// the node is registered in it, the epoch rises by one, the node becomes primary and every
// other node of the group a follower. ExpectedEpoch is always checked (0 is the epoch of a new
// group, not "any"): the failover layer decided on a state, and a decision made on an older
// state must not apply. Health is not checked: it is not in the replicated state (the leader
// checks it before proposing). Naming the current primary again is allowed and still raises
// the epoch. The result carries the new epoch and the primary.
//
//	message SetPrimary { string shard_group = 1; string node_id = 2; uint64 expected_epoch = 3;
//	  reserved 4, 5; }
//
// Fields 4 and 5 held the chosen node's replication position, which nothing decided by (the
// data nodes settle a returning primary's resync between themselves): entries written with
// them decode, and they are ignored.
type SetPrimary struct {
	ShardGroup    string
	NodeID        string
	ExpectedEpoch uint64
}

// ClearPrimary fences the group's primary: if the group is at ExpectedEpoch, the epoch rises
// by one and the group has no primary; the old primary's role becomes RoleUnspecified, the
// other nodes keep theirs. Used when the primary must lose its authority before a promotion
// can be decided. The result carries the new epoch.
//
//	message ClearPrimary { string shard_group = 1; uint64 expected_epoch = 2; }
type ClearPrimary struct {
	ShardGroup    string
	ExpectedEpoch uint64
}

// RemoveNode forgets a data node. The group stays (with its epoch and slots) even when it has
// no node left. Refused with FAILED_PRECONDITION for the group's current primary: removing it
// would leave a group whose epoch still names a node meta no longer knows, without the epoch
// bump that fences it; fence it first with ClearPrimary (or move the primary with
// SetPrimary). NOT_FOUND for an unknown node.
//
//	message RemoveNode { string node_id = 1; }
type RemoveNode struct {
	NodeID string
}

// AddMember records a meta raft member, mirroring a raft conf change that adds it. Adding a
// known id updates its name and addresses (a conf change can be re-proposed). Refused:
// id 0 (INVALID_ARGUMENT), a name used by another member (FAILED_PRECONDITION).
//
//	message AddMember { uint64 id = 1; string name = 2; string peer_address = 3;
//	  string client_address = 4; }
type AddMember struct {
	ID            uint64
	Name          string
	PeerAddress   string
	ClientAddress string
}

// RemoveMember forgets a meta raft member, mirroring a conf change that removes it. NOT_FOUND
// for an unknown id.
//
//	message RemoveMember { uint64 id = 1; }
type RemoveMember struct {
	ID uint64
}

// AssignSlots sets the group's slots to exactly Ranges (replacing what it owned; empty
// unassigns all). Ranges may be given in any order and may overlap or touch each other: they
// are merged. Replace rather than add so that re-proposing is harmless and a migration is two
// plain commands (shrink the source, grow the target). Refused: a range past 16383 or with
// start > end (INVALID_ARGUMENT), an unknown group (NOT_FOUND), a slot owned by another group
// (FAILED_PRECONDITION).
//
//	message AssignSlots { string shard_group = 1; repeated SlotRange ranges = 2; }
//	message SlotRange { uint32 start = 1; uint32 end = 2; }
type AssignSlots struct {
	ShardGroup string
	Ranges     []SlotRange
}

func (RegisterNode) kind() protowire.Number { return kindRegisterNode }
func (SetPrimary) kind() protowire.Number   { return kindSetPrimary }
func (ClearPrimary) kind() protowire.Number { return kindClearPrimary }
func (RemoveNode) kind() protowire.Number   { return kindRemoveNode }
func (AddMember) kind() protowire.Number    { return kindAddMember }
func (RemoveMember) kind() protowire.Number { return kindRemoveMember }
func (AssignSlots) kind() protowire.Number  { return kindAssignSlots }

// Encode returns the entry data for c.
func Encode(c Command) []byte {
	b := appendUint(nil, fieldVersion, CommandVersion)
	return appendMessage(b, c.kind(), c.encode())
}

// Decode parses entry data. It refuses (ErrDecode) a malformed encoding, a version other than
// CommandVersion, no kind or more than one, and any unknown field.
func Decode(data []byte) (Command, error) {
	if len(data) > maxCommandLength {
		return nil, fmt.Errorf("%w: command of %d bytes, limit %d", ErrDecode, len(data), maxCommandLength)
	}
	fs, err := wireFields(data, commandWhat)
	if err != nil {
		return nil, err
	}
	var version uint64
	var body *wireField
	for i := range fs {
		f := &fs[i]
		switch {
		case f.num == fieldVersion:
			if err := f.want(protowire.VarintType, commandWhat); err != nil {
				return nil, err
			}
			version = f.v
		case f.num >= kindRegisterNode && f.num <= kindLast:
			if err := f.want(protowire.BytesType, commandWhat); err != nil {
				return nil, err
			}
			if body != nil {
				return nil, fmt.Errorf("%w: command has two kinds (fields %d and %d)", ErrDecode, body.num, f.num)
			}
			body = f
		default:
			return nil, f.unknown(commandWhat)
		}
	}
	if version != CommandVersion {
		return nil, fmt.Errorf("%w: command version %d, this member applies %d", ErrDecode, version, CommandVersion)
	}
	if body == nil {
		return nil, fmt.Errorf("%w: command has no kind", ErrDecode)
	}
	return decodeBody(body.num, body.b)
}

func decodeBody(kind protowire.Number, b []byte) (Command, error) {
	what := kindName(kind)
	fs, err := wireFields(b, what)
	if err != nil {
		return nil, err
	}
	// str and num check the wire type and store the value; each case below lists its fields.
	var ferr error
	str := func(f wireField, dst *string) {
		if ferr == nil {
			if ferr = f.want(protowire.BytesType, what); ferr == nil {
				*dst = string(f.b)
			}
		}
	}
	num := func(f wireField, dst *uint64) {
		if ferr == nil {
			if ferr = f.want(protowire.VarintType, what); ferr == nil {
				*dst = f.v
			}
		}
	}
	switch kind {
	case kindRegisterNode:
		var c RegisterNode
		for _, f := range fs {
			switch f.num {
			case 1:
				str(f, &c.NodeID)
			case 2:
				str(f, &c.DataAddress)
			case 3:
				str(f, &c.AdminAddress)
			case 4:
				str(f, &c.ShardGroup)
			case 6:
				num(f, &c.Epoch)
			case 7:
				str(f, &c.Version)
			default:
				ferr = f.unknown(what)
			}
			if ferr != nil {
				return nil, ferr
			}
		}
		return c, nil
	case kindSetPrimary:
		var c SetPrimary
		for _, f := range fs {
			switch f.num {
			case 1:
				str(f, &c.ShardGroup)
			case 2:
				str(f, &c.NodeID)
			case 3:
				num(f, &c.ExpectedEpoch)
			case 4, 5: // reserved: see SetPrimary
			default:
				ferr = f.unknown(what)
			}
			if ferr != nil {
				return nil, ferr
			}
		}
		return c, nil
	case kindClearPrimary:
		var c ClearPrimary
		for _, f := range fs {
			switch f.num {
			case 1:
				str(f, &c.ShardGroup)
			case 2:
				num(f, &c.ExpectedEpoch)
			default:
				ferr = f.unknown(what)
			}
			if ferr != nil {
				return nil, ferr
			}
		}
		return c, nil
	case kindRemoveNode:
		var c RemoveNode
		for _, f := range fs {
			switch f.num {
			case 1:
				str(f, &c.NodeID)
			default:
				ferr = f.unknown(what)
			}
			if ferr != nil {
				return nil, ferr
			}
		}
		return c, nil
	case kindAddMember:
		var c AddMember
		for _, f := range fs {
			switch f.num {
			case 1:
				num(f, &c.ID)
			case 2:
				str(f, &c.Name)
			case 3:
				str(f, &c.PeerAddress)
			case 4:
				str(f, &c.ClientAddress)
			default:
				ferr = f.unknown(what)
			}
			if ferr != nil {
				return nil, ferr
			}
		}
		return c, nil
	case kindRemoveMember:
		var c RemoveMember
		for _, f := range fs {
			switch f.num {
			case 1:
				num(f, &c.ID)
			default:
				ferr = f.unknown(what)
			}
			if ferr != nil {
				return nil, ferr
			}
		}
		return c, nil
	case kindAssignSlots:
		var c AssignSlots
		for _, f := range fs {
			switch f.num {
			case 1:
				str(f, &c.ShardGroup)
			case 2:
				if ferr = f.want(protowire.BytesType, what); ferr == nil {
					var r SlotRange
					r, ferr = decodeSlotRange(f.b)
					c.Ranges = append(c.Ranges, r)
				}
			default:
				ferr = f.unknown(what)
			}
			if ferr != nil {
				return nil, ferr
			}
		}
		return c, nil
	}
	return nil, fmt.Errorf("%w: unknown command kind %d", ErrDecode, kind)
}

func kindName(k protowire.Number) string {
	switch k {
	case kindRegisterNode:
		return "RegisterNode"
	case kindSetPrimary:
		return "SetPrimary"
	case kindClearPrimary:
		return "ClearPrimary"
	case kindRemoveNode:
		return "RemoveNode"
	case kindAddMember:
		return "AddMember"
	case kindRemoveMember:
		return "RemoveMember"
	case kindAssignSlots:
		return "AssignSlots"
	}
	return fmt.Sprintf("kind %d", k)
}

func (c RegisterNode) encode() []byte {
	b := appendString(nil, 1, c.NodeID)
	b = appendString(b, 2, c.DataAddress)
	b = appendString(b, 3, c.AdminAddress)
	b = appendString(b, 4, c.ShardGroup)
	b = appendUint(b, 6, c.Epoch)
	return appendString(b, 7, c.Version)
}

func (c SetPrimary) encode() []byte {
	b := appendString(nil, 1, c.ShardGroup)
	b = appendString(b, 2, c.NodeID)
	return appendUint(b, 3, c.ExpectedEpoch)
}

func (c ClearPrimary) encode() []byte {
	b := appendString(nil, 1, c.ShardGroup)
	return appendUint(b, 2, c.ExpectedEpoch)
}

func (c RemoveNode) encode() []byte { return appendString(nil, 1, c.NodeID) }

func (c AddMember) encode() []byte {
	b := appendUint(nil, 1, c.ID)
	b = appendString(b, 2, c.Name)
	b = appendString(b, 3, c.PeerAddress)
	return appendString(b, 4, c.ClientAddress)
}

func (c RemoveMember) encode() []byte { return appendUint(nil, 1, c.ID) }

func (c AssignSlots) encode() []byte {
	b := appendString(nil, 1, c.ShardGroup)
	for _, r := range c.Ranges {
		b = appendMessage(b, 2, encodeSlotRange(r))
	}
	return b
}

func encodeSlotRange(r SlotRange) []byte {
	b := appendUint(nil, 1, uint64(r.Start))
	return appendUint(b, 2, uint64(r.End))
}

// decodeSlotRange parses a SlotRange. Values past uint32 are clamped to a value the range
// check refuses (so they become INVALID_ARGUMENT, not a silent wrap-around).
func decodeSlotRange(b []byte) (SlotRange, error) {
	fs, err := wireFields(b, slotRangeWhat)
	if err != nil {
		return SlotRange{}, err
	}
	var r SlotRange
	for _, f := range fs {
		if err := f.want(protowire.VarintType, slotRangeWhat); err != nil {
			return SlotRange{}, err
		}
		v := uint32(min(f.v, 1<<32-1))
		switch f.num {
		case 1:
			r.Start = v
		case 2:
			r.End = v
		default:
			return SlotRange{}, f.unknown(slotRangeWhat)
		}
	}
	return r, nil
}
