package fsm

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Result is what Apply returns (encoded) for a command, on every member alike: a refusal is a
// result, not an error, because the entry is committed and every member must advance past it
// in the same way.
//
//	message Result { uint32 code = 1; string reason = 2; uint64 epoch = 3; uint32 role = 4;
//	  string primary_node_id = 5; }
type Result struct {
	// Code is CodeOK or why the command was refused.
	Code Code
	// Reason says why, for the gRPC status message; empty when Code is CodeOK.
	Reason string
	// Epoch is the group's epoch after the command (RegisterNode, SetPrimary, ClearPrimary).
	Epoch uint64
	// Role is the node's assigned role (RegisterNode).
	Role Role
	// PrimaryNodeID is the group's primary after the command (RegisterNode, SetPrimary); ""
	// when it has none.
	PrimaryNodeID string
}

// OK reports whether the command was applied as asked.
func (r Result) OK() bool { return r.Code == CodeOK }

func (r Result) String() string {
	s := r.Code.String()
	if r.Reason != "" {
		s += " " + fmt.Sprintf("%q", r.Reason)
	}
	if r.Epoch != 0 {
		s += fmt.Sprintf(" epoch=%d", r.Epoch)
	}
	if r.Role != RoleUnspecified {
		s += " role=" + r.Role.String()
	}
	if r.PrimaryNodeID != "" {
		s += " primary=" + r.PrimaryNodeID
	}
	return s
}

// Encode returns r's wire form, which Apply returns.
func (r Result) Encode() []byte {
	b := appendUint(nil, 1, uint64(r.Code))
	b = appendString(b, 2, r.Reason)
	b = appendUint(b, 3, r.Epoch)
	b = appendUint(b, 4, uint64(r.Role))
	b = appendString(b, 5, r.PrimaryNodeID)
	if b == nil {
		b = []byte{} // an OK result with no values: empty, but not nil (nil is Apply's no-op)
	}
	return b
}

// DecodeResult parses what Apply returned.
func DecodeResult(b []byte) (Result, error) {
	const what = "result"
	fs, err := wireFields(b, what)
	if err != nil {
		return Result{}, err
	}
	var r Result
	for _, f := range fs {
		typ := protowire.VarintType
		if f.num == 2 || f.num == 5 {
			typ = protowire.BytesType
		}
		if err := f.want(typ, what); err != nil {
			return Result{}, err
		}
		switch f.num {
		case 1:
			r.Code = Code(min(f.v, 1<<32-1))
		case 2:
			r.Reason = string(f.b)
		case 3:
			r.Epoch = f.v
		case 4:
			r.Role = Role(min(f.v, 1<<32-1))
		case 5:
			r.PrimaryNodeID = string(f.b)
		default:
			return Result{}, f.unknown(what)
		}
	}
	return r, nil
}

// refuse builds a refusal. Reasons start with the package name like error messages, since the
// API layer passes them on as the gRPC status message.
func refuse(code Code, format string, args ...any) Result {
	return Result{Code: code, Reason: "fsm: " + fmt.Sprintf(format, args...)}
}
