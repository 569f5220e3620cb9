package fsm

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// wireField is one decoded protobuf field: a varint (v) or a length-delimited value (b).
// Only those two wire types are used by this package's messages; anything else is refused,
// since a field of another type can only come from a writer this package does not know.
type wireField struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

// wireFields splits b into its fields, in the order they appear. what names the message in
// errors.
func wireFields(b []byte, what string) ([]wireField, error) {
	var out []wireField
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("%w: %s: bad tag: %v", ErrDecode, what, protowire.ParseError(n))
		}
		b = b[n:]
		f := wireField{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			return nil, fmt.Errorf("%w: %s: field %d has unsupported wire type %d", ErrDecode, what, num, typ)
		}
		if n < 0 {
			return nil, fmt.Errorf("%w: %s: field %d: %v", ErrDecode, what, num, protowire.ParseError(n))
		}
		b = b[n:]
		out = append(out, f)
	}
	return out, nil
}

// want checks that f has wire type typ.
func (f wireField) want(typ protowire.Type, what string) error {
	if f.typ != typ {
		return fmt.Errorf("%w: %s: field %d has wire type %d, want %d", ErrDecode, what, f.num, f.typ, typ)
	}
	return nil
}

// unknown is the error for a field number the message does not define. Unknown fields are
// refused rather than skipped (protobuf's usual forward compatibility) because a field this
// version does not understand may change what the command means: applying the rest would apply
// it half-way, differently from a member that understands it.
func (f wireField) unknown(what string) error {
	return fmt.Errorf("%w: %s: unknown field %d", ErrDecode, what, f.num)
}

// The append helpers write proto3's canonical form: fields in number order, zero values left
// out. Every encoder in this package calls them in field-number order, so equal values encode
// to equal bytes; Snapshot's determinism rests on that.

func appendUint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendMessage writes m even when it is empty: presence is what selects a command's kind.
func appendMessage(b []byte, num protowire.Number, m []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}
