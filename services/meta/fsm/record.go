package fsm

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Stored records use the same hand-written protobuf encoding as commands (see doc.go):
//
//	message MemberRecord { uint64 id = 1; string name = 2; string peer_address = 3;
//	  string client_address = 4; }
//	message NodeRecord { string id = 1; string group = 2; string data_address = 3;
//	  string admin_address = 4; string version = 5; uint32 role = 6; uint64 reported_epoch = 7; }
//	message GroupRecord { string id = 1; uint64 epoch = 2; string primary = 3;
//	  reserved 4, 5; repeated SlotRange slots = 6; }
//
// GroupRecord's fields 4 and 5 held the primary's replication position when it was named,
// which nothing decided by: records written with them decode, and they are ignored.
//
// A record carries its own key, so a snapshot is just the records in key order.

func encodeMember(m Member) []byte {
	b := appendUint(nil, 1, m.ID)
	b = appendString(b, 2, m.Name)
	b = appendString(b, 3, m.PeerAddress)
	return appendString(b, 4, m.ClientAddress)
}

func encodeNode(n Node) []byte {
	b := appendString(nil, 1, n.ID)
	b = appendString(b, 2, n.Group)
	b = appendString(b, 3, n.DataAddress)
	b = appendString(b, 4, n.AdminAddress)
	b = appendString(b, 5, n.Version)
	b = appendUint(b, 6, uint64(n.Role))
	return appendUint(b, 7, n.ReportedEpoch)
}

func encodeGroup(g Group) []byte {
	b := appendString(nil, 1, g.ID)
	b = appendUint(b, 2, g.Epoch)
	b = appendString(b, 3, g.Primary)
	for _, r := range g.Slots {
		b = appendMessage(b, 6, encodeSlotRange(r))
	}
	return b
}

// fieldSpec is a record field: its wire type and where its value goes.
type fieldSpec struct {
	typ protowire.Type
	set func(f wireField) error
}

func decodeRecord(b []byte, what string, spec map[protowire.Number]fieldSpec) error {
	fs, err := wireFields(b, what)
	if err != nil {
		return err
	}
	for _, f := range fs {
		s, ok := spec[f.num]
		if !ok {
			return f.unknown(what)
		}
		if err := f.want(s.typ, what); err != nil {
			return err
		}
		if err := s.set(f); err != nil {
			return err
		}
	}
	return nil
}

func str(dst *string) fieldSpec {
	return fieldSpec{protowire.BytesType, func(f wireField) error { *dst = string(f.b); return nil }}
}

func u64(dst *uint64) fieldSpec {
	return fieldSpec{protowire.VarintType, func(f wireField) error { *dst = f.v; return nil }}
}

func decodeMember(b []byte) (Member, error) {
	var m Member
	err := decodeRecord(b, "MemberRecord", map[protowire.Number]fieldSpec{
		1: u64(&m.ID), 2: str(&m.Name), 3: str(&m.PeerAddress), 4: str(&m.ClientAddress),
	})
	if err == nil && m.ID == 0 {
		err = fmt.Errorf("%w: MemberRecord without id", ErrDecode)
	}
	return m, err
}

func decodeNode(b []byte) (Node, error) {
	var n Node
	var role uint64
	err := decodeRecord(b, "NodeRecord", map[protowire.Number]fieldSpec{
		1: str(&n.ID), 2: str(&n.Group), 3: str(&n.DataAddress), 4: str(&n.AdminAddress),
		5: str(&n.Version), 6: u64(&role), 7: u64(&n.ReportedEpoch),
	})
	if err == nil && (n.ID == "" || n.Group == "" || role > uint64(RoleFollower)) {
		err = fmt.Errorf("%w: NodeRecord %q: missing id or group, or role %d", ErrDecode, n.ID, role)
	}
	n.Role = Role(role)
	return n, err
}

func decodeGroup(b []byte) (Group, error) {
	var g Group
	err := decodeRecord(b, "GroupRecord", map[protowire.Number]fieldSpec{
		1: str(&g.ID), 2: u64(&g.Epoch), 3: str(&g.Primary), 4: str(new(string)), 5: u64(new(uint64)), // 4, 5 reserved
		6: {protowire.BytesType, func(f wireField) error {
			r, err := decodeSlotRange(f.b)
			g.Slots = append(g.Slots, r)
			return err
		}},
	})
	if err == nil && g.ID == "" {
		err = fmt.Errorf("%w: GroupRecord without id", ErrDecode)
	}
	return g, err
}
