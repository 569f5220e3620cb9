package commands

// Bitmaps: bit commands on strings (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD,
// BITFIELD_RO), as Redis 7.0's bitops.c. Bits are numbered from the most significant bit of the
// first byte. Commands that touch a few bits read and write through Tx.ReadAt and Tx.WriteAt,
// so that on a large (chunked) string they touch one chunk, not the value; BITCOUNT and BITPOS
// read only the bytes of their range (GetRange), streamed.

import (
	"errors"
	"math"
	"math/bits"

	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

const (
	errBitOffset Error = "ERR bit offset is not an integer or out of range"
	errBitValue  Error = "ERR bit is not an integer or out of range"
	errBitType   Error = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
)

func init() {
	str := func(name string, arity int, flags Flag, since, complexity, summary string, h func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "bitmap", Since: since, Complexity: complexity, Summary: summary, Handler: h}
	}
	bitop := str("bitop", -4, FlagWrite|FlagDenyOOM, "2.6.0", "O(N)", "Performs bitwise operations on multiple strings, and stores the result.", bitopCmd)
	bitop.FirstKey, bitop.LastKey = 2, -1
	register(
		str("setbit", 4, FlagWrite|FlagDenyOOM, "2.2.0", "O(1)", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", setbitCmd),
		str("getbit", 3, FlagReadonly|FlagFast, "2.2.0", "O(1)", "Returns a bit value by offset.", getbitCmd),
		str("bitcount", -2, FlagReadonly, "2.6.0", "O(N)", "Counts the number of set bits (population counting) in a string.", bitcountCmd),
		str("bitpos", -3, FlagReadonly, "2.8.7", "O(N)", "Finds the first set (1) or clear (0) bit in a string.", bitposCmd),
		bitop,
		str("bitfield", -2, FlagWrite|FlagDenyOOM, "3.2.0", "O(1) for each subcommand specified", "Performs arbitrary bitfield integer operations on strings.", bitfieldCmd),
		str("bitfield_ro", -2, FlagReadonly|FlagFast, "6.0.0", "O(1) for each subcommand specified", "Performs arbitrary read-only bitfield integer operations on strings.", bitfieldRoCmd),
	)
}

// bitOffsetArg parses a bit offset as Redis's getBitOffsetFromArgument: an integer from 0 to
// the last bit of a string of proto-max-bulk-len bytes; with hash, "#n" means n*width.
func bitOffsetArg(c *Ctx, b []byte, hash bool, width int) (int64, error) {
	useHash := hash && len(b) > 0 && b[0] == '#'
	if useHash {
		b = b[1:]
	}
	v, ok := ParseInt(b)
	if !ok {
		return 0, errBitOffset
	}
	if useHash {
		if v != 0 && (v > math.MaxInt64/int64(width) || v < math.MinInt64/int64(width)) {
			return 0, errBitOffset
		}
		v *= int64(width)
	}
	if v < 0 || v>>3 >= maxStringLen(c) {
		return 0, errBitOffset
	}
	return v, nil
}

// readStringRange reads the bytes [from, to) a span function picks of key's string value,
// streamed to part. It reports whether the key exists; a key of another type is ErrWrongType.
func readStringRange(c *Ctx, key []byte, span func(n int64) (from, to int64), part func(n int64, b []byte) error) (bool, error) {
	var n int64
	found, err := c.KS.GetRange(c.Sess, c.DB(), key, func(l int) (int, int) {
		n = int64(l)
		f, t := span(n)
		return int(f), int(t)
	}, func(v keyspace.Value, m keyspace.Meta) error {
		if m.Type != typeString {
			return ErrWrongType
		}
		return v.Each(func(b []byte) error { return part(n, b) })
	})
	return found, err
}

func setbitCmd(c *Ctx) {
	off, err := bitOffsetArg(c, c.Args[2], false, 0)
	if err != nil {
		c.Err(err)
		return
	}
	if len(c.Args[3]) != 1 || c.Args[3][0] != '0' && c.Args[3][0] != '1' {
		c.Err(errBitValue)
		return
	}
	on := c.Args[3][0] == '1'
	var old int64
	var changed bool
	err = c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		m, ok := tx.Meta(0)
		if ok && m.Type != typeString {
			return ErrWrongType
		}
		// As Redis 7.0: a write that creates or grows the string, or flips the bit, is news.
		changed = !ok || int64(m.Len) <= off>>3
		b, err := tx.ReadAt(0, off>>3, 1)
		if err != nil {
			return err
		}
		var cur byte
		if len(b) == 1 {
			cur = b[0]
		}
		mask := byte(1) << (7 - off&7)
		old = 0
		if cur&mask != 0 {
			old = 1
		}
		nb := cur &^ mask
		if on {
			nb |= mask
		}
		changed = changed || nb != cur
		// Of a large string only the chunk holding the byte is read and written again.
		return tx.WriteAt(0, off>>3, []byte{nb}, typeString|keyspace.RawHint)
	})
	if err != nil {
		c.Err(err)
		return
	}
	if changed {
		c.Notify(pubsub.String, "setbit", c.Args[1])
	}
	c.W.Int(old)
}

func getbitCmd(c *Ctx) {
	off, err := bitOffsetArg(c, c.Args[2], false, 0)
	if err != nil {
		c.Err(err)
		return
	}
	var bit int64
	found, err := readStringRange(c, c.Args[1], func(n int64) (int64, int64) {
		if off>>3 >= n {
			return 0, 0
		}
		return off >> 3, off>>3 + 1
	}, func(_ int64, b []byte) error {
		if len(b) > 0 && b[0]&(1<<(7-off&7)) != 0 {
			bit = 1
		}
		return nil
	})
	if !found && err == nil {
		c.KeyMiss(c.Args[1])
	}
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Int(bit)
}

// bitRange is a BITCOUNT or BITPOS range resolved against a string of n bytes, in bits:
// [from, to] inclusive; empty when from > to.
type bitRange struct{ from, to int64 }

// resolveBitRange applies Redis's index rules: negative indexes count from the end, both are
// clamped; in BYTE units a range covers whole bytes.
func resolveBitRange(n, start, end int64, isBit bool) bitRange {
	total := n
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if start > end {
		return bitRange{0, -1}
	}
	if isBit {
		return bitRange{start, end}
	}
	return bitRange{start << 3, end<<3 + 7}
}

// bytesOf is the byte span [from, to) holding r's bits.
func (r bitRange) bytesOf() (int64, int64) {
	if r.from > r.to {
		return 0, 0
	}
	return r.from >> 3, r.to>>3 + 1
}

// rangeUnit parses an optional BYTE|BIT argument.
func rangeUnit(b []byte) (isBit bool, err error) {
	switch {
	case is(b, "BIT"):
		return true, nil
	case is(b, "BYTE"):
		return false, nil
	}
	return false, ErrSyntax
}

func bitcountCmd(c *Ctx) {
	// As in Redis 7.0 the key is looked up first: a missing key counts 0 whatever the range.
	m, ok := c.KS.Lookup(c.Sess, c.DB(), c.Args[1])
	if !ok {
		c.KeyMiss(c.Args[1])
		c.W.Int(0)
		return
	}
	if m.Type != typeString {
		c.Err(ErrWrongType)
		return
	}
	var start, end int64 = 0, -1
	isBit := false
	switch len(c.Args) {
	case 2:
	case 4, 5:
		var e1, e2 error
		start, e1 = intArg(c.Args[2])
		end, e2 = intArg(c.Args[3])
		if e1 != nil || e2 != nil {
			c.Err(ErrNotInt)
			return
		}
		if len(c.Args) == 5 {
			var err error
			if isBit, err = rangeUnit(c.Args[4]); err != nil {
				c.Err(err)
				return
			}
		}
		if start < 0 && end < 0 && start > end {
			c.W.Int(0)
			return
		}
	default:
		c.Err(ErrSyntax)
		return
	}
	var r bitRange
	var count int64
	var pos int64 // byte position of the next part
	_, err := readStringRange(c, c.Args[1], func(n int64) (int64, int64) {
		r = resolveBitRange(n, start, end, isBit)
		f, t := r.bytesOf()
		pos = f
		return f, t
	}, func(_ int64, b []byte) error {
		for _, x := range b {
			if pos == r.from>>3 {
				x &= 0xff >> (r.from & 7)
			}
			if pos == r.to>>3 {
				x &= 0xff << (7 - r.to&7)
			}
			count += int64(bits.OnesCount8(x))
			pos++
		}
		return nil
	})
	if err != nil {
		c.Err(err)
		return
	}
	c.W.Int(count)
}

// errBitFound stops BITPOS's read of its range at the bit it looked for.
var errBitFound = errors.New("commands: bit found")

func bitposCmd(c *Ctx) {
	want, err := intArg(c.Args[2])
	if err != nil {
		c.Err(err)
		return
	}
	if want != 0 && want != 1 {
		c.Err(Error("ERR The bit argument must be 1 or 0."))
		return
	}
	m, ok := c.KS.Lookup(c.Sess, c.DB(), c.Args[1])
	if !ok {
		c.KeyMiss(c.Args[1])
		// A missing key is an endless run of zeros.
		c.W.Int(map[bool]int64{true: -1, false: 0}[want == 1])
		return
	}
	if m.Type != typeString {
		c.Err(ErrWrongType)
		return
	}
	var start, end int64 = 0, -1
	isBit, endGiven := false, false
	switch len(c.Args) {
	case 3:
	case 4, 5, 6:
		if start, err = intArg(c.Args[3]); err != nil {
			c.Err(err)
			return
		}
		if len(c.Args) == 6 {
			if isBit, err = rangeUnit(c.Args[5]); err != nil {
				c.Err(err)
				return
			}
		}
		if len(c.Args) >= 5 {
			if end, err = intArg(c.Args[4]); err != nil {
				c.Err(err)
				return
			}
			endGiven = true
		}
	default:
		c.Err(ErrSyntax)
		return
	}
	var r bitRange
	var pos int64
	found := int64(-1)
	_, err = readStringRange(c, c.Args[1], func(n int64) (int64, int64) {
		e := end
		if !endGiven && isBit {
			e = n<<3 + 7
		}
		r = resolveBitRange(n, start, e, isBit)
		f, t := r.bytesOf()
		pos = f
		return f, t
	}, func(_ int64, b []byte) error {
		for _, x := range b {
			if want == 0 {
				x = ^x
			}
			if pos == r.from>>3 {
				x &= 0xff >> (r.from & 7)
			}
			if pos == r.to>>3 {
				x &= 0xff << (7 - r.to&7)
			}
			if x != 0 {
				found = pos<<3 + int64(bits.LeadingZeros8(x))
				return errBitFound // read no further
			}
			pos++
		}
		return nil
	})
	if err != nil && err != errBitFound {
		c.Err(err)
		return
	}
	switch {
	case found >= 0 || r.from > r.to || want == 1 || endGiven:
		c.W.Int(found)
	default:
		// Looking for a clear bit without an explicit end: the string continues with zeros.
		c.W.Int(r.to + 1)
	}
}

func bitopCmd(c *Ctx) {
	op := upper(c.Args[1])
	switch op {
	case "AND", "OR", "XOR", "NOT":
	default:
		c.Err(ErrSyntax)
		return
	}
	srcs := c.Args[3:]
	if op == "NOT" && len(srcs) != 1 {
		c.Err(Error("ERR BITOP NOT must be called with a single source key."))
		return
	}
	keys := make([]kspKey, 0, 1+len(srcs))
	keys = append(keys, kspKey{DB: c.DB(), Key: c.Args[2]})
	for _, k := range srcs {
		keys = append(keys, kspKey{DB: c.DB(), Key: k})
	}
	var maxLen int
	var missed []int // the sources found missing, up to the first of another type
	err := c.KS.Update(c.Sess, keys, func(tx *keyspace.Tx) error {
		vals := make([][]byte, len(srcs))
		maxLen, missed = 0, missed[:0]
		for i := range srcs {
			m, ok := tx.Meta(i + 1)
			if !ok {
				missed = append(missed, i)
				continue
			}
			if m.Type != typeString {
				return ErrWrongType
			}
			v, _, err := tx.Value(i + 1)
			if err != nil {
				return err
			}
			vals[i] = v
			maxLen = max(maxLen, len(v))
		}
		if maxLen == 0 {
			tx.Delete(0)
			return nil
		}
		out := make([]byte, maxLen)
		for j := range out {
			var x byte
			for i, v := range vals {
				var b byte
				if j < len(v) {
					b = v[j]
				}
				switch {
				case i == 0 && op != "NOT":
					x = b
				case op == "AND":
					x &= b
				case op == "OR":
					x |= b
				case op == "XOR":
					x ^= b
				case op == "NOT":
					x = ^b
				}
			}
			out[j] = x
		}
		tx.Put(0, out, 0, typeString|keyspace.RawHint)
		return nil
	})
	// The sources are read (lookupKeyRead), the destination is not.
	for _, i := range missed {
		c.KeyMiss(srcs[i])
	}
	if err != nil {
		c.Err(err)
		return
	}
	notifyStore(c, pubsub.String, "set", c.Args[2], maxLen)
	c.W.Int(int64(maxLen))
}

// Bitfield overflow behaviours.
const (
	bfWrap = iota
	bfSat
	bfFail
)

// bitfieldOp is one GET, SET or INCRBY of BITFIELD.
type bitfieldOp struct {
	op       byte // 'g', 's', 'i'
	signed   bool
	width    int
	off      int64
	val      int64
	overflow int
}

func bitfieldType(b []byte) (signed bool, width int, err error) {
	if len(b) < 2 {
		return false, 0, errBitType
	}
	switch b[0] {
	case 'i', 'I':
		signed = true
	case 'u', 'U':
	default:
		return false, 0, errBitType
	}
	n, ok := ParseInt(b[1:])
	if !ok || n < 1 || signed && n > 64 || !signed && n > 63 {
		return false, 0, errBitType
	}
	return signed, int(n), nil
}

// parseBitfield parses BITFIELD's operations as Redis does, in order, stopping at the first
// error.
func parseBitfield(c *Ctx) ([]bitfieldOp, error) {
	var ops []bitfieldOp
	ow := bfWrap
	args := c.Args
	for j := 2; j < len(args); j++ {
		rem := len(args) - j - 1
		var op bitfieldOp
		switch {
		case is(args[j], "GET") && rem >= 2:
			op.op = 'g'
		case is(args[j], "SET") && rem >= 3:
			op.op = 's'
		case is(args[j], "INCRBY") && rem >= 3:
			op.op = 'i'
		case is(args[j], "OVERFLOW") && rem >= 1:
			j++
			switch {
			case is(args[j], "WRAP"):
				ow = bfWrap
			case is(args[j], "SAT"):
				ow = bfSat
			case is(args[j], "FAIL"):
				ow = bfFail
			default:
				return nil, Error("ERR Invalid OVERFLOW type specified")
			}
			continue
		default:
			return nil, ErrSyntax
		}
		var err error
		if op.signed, op.width, err = bitfieldType(args[j+1]); err != nil {
			return nil, err
		}
		if op.off, err = bitOffsetArg(c, args[j+2], true, op.width); err != nil {
			return nil, err
		}
		if op.op != 'g' {
			if op.val, err = intArg(args[j+3]); err != nil {
				return nil, err
			}
			j++
		}
		op.overflow = ow
		ops = append(ops, op)
		j += 2
	}
	return ops, nil
}

// getBits reads width bits from bit off of p (MSB first), zero past its end.
func getBits(p []byte, off int64, width int) uint64 {
	var v uint64
	for j := 0; j < width; j++ {
		byteAt := off >> 3
		var bit uint64
		if byteAt < int64(len(p)) {
			bit = uint64(p[byteAt]>>(7-off&7)) & 1
		}
		v = v<<1 | bit
		off++
	}
	return v
}

// setBits writes the low width bits of v at bit off of p (MSB first); p holds them.
func setBits(p []byte, off int64, width int, v uint64) {
	for j := 0; j < width; j++ {
		bit := v >> (width - 1 - j) & 1
		byteAt, mask := off>>3, byte(1)<<(7-off&7)
		if bit == 1 {
			p[byteAt] |= mask
		} else {
			p[byteAt] &^= mask
		}
		off++
	}
}

func signExtend(v uint64, width int) int64 {
	if width < 64 && v&(1<<(width-1)) != 0 {
		v |= ^uint64(0) << width
	}
	return int64(v)
}

// unsignedOverflow is Redis's checkUnsignedBitfieldOverflow: whether value+incr leaves the
// width's range, and the value WRAP or SAT gives then.
func unsignedOverflow(value uint64, incr int64, width int, ow int) (bool, uint64) {
	maxV := uint64(1)<<width - 1
	maxIncr := int64(maxV - value)
	minIncr := -int64(value)
	if value > maxV || incr > 0 && incr > maxIncr {
		if ow == bfSat {
			return true, maxV
		}
		return true, (value + uint64(incr)) &^ (^uint64(0) << width)
	}
	if incr < 0 && incr < minIncr {
		if ow == bfSat {
			return true, 0
		}
		return true, (value + uint64(incr)) &^ (^uint64(0) << width)
	}
	return false, 0
}

// signedOverflow is Redis's checkSignedBitfieldOverflow.
func signedOverflow(value, incr int64, width int, ow int) (bool, int64) {
	maxV := int64(math.MaxInt64)
	if width < 64 {
		maxV = int64(1)<<(width-1) - 1
	}
	minV := -maxV - 1
	maxIncr := int64(uint64(maxV) - uint64(value))
	minIncr := minV - value
	wrap := func() int64 {
		c := uint64(value) + uint64(incr)
		if width < 64 {
			mask := ^uint64(0) << width
			if c&(1<<(width-1)) != 0 {
				c |= mask
			} else {
				c &^= mask
			}
		}
		return int64(c)
	}
	if value > maxV || width != 64 && incr > maxIncr || value >= 0 && incr > 0 && incr > maxIncr {
		if ow == bfSat {
			return true, maxV
		}
		return true, wrap()
	}
	if value < minV || width != 64 && incr < minIncr || value < 0 && incr < 0 && incr < minIncr {
		if ow == bfSat {
			return true, minV
		}
		return true, wrap()
	}
	return false, 0
}

func bitfieldCmd(c *Ctx)   { bitfieldGeneric(c, false) }
func bitfieldRoCmd(c *Ctx) { bitfieldGeneric(c, true) }

// bitfieldReply is one element of BITFIELD's reply: a number, or nil for a FAIL overflow.
type bitfieldReply struct {
	v   int64
	nil bool
}

func bitfieldGeneric(c *Ctx, ro bool) {
	ops, err := parseBitfield(c)
	if err != nil {
		c.Err(err)
		return
	}
	readonly := true
	highest := int64(-1)
	for _, op := range ops {
		if op.op != 'g' {
			readonly = false
			highest = max(highest, op.off+int64(op.width)-1)
		}
	}
	if !readonly && ro {
		c.Err(Error("ERR BITFIELD_RO only supports the GET subcommand"))
		return
	}
	var out []bitfieldReply
	var missed bool
	// changes counts the SETs and INCRBYs that did not fail and either changed their bits or
	// came with the string created or grown, as Redis 7.0's count: none, no "setbit".
	var changes int
	err = c.KS.Update(c.Sess, c.keyArgs(1), func(tx *keyspace.Tx) error {
		out, changes = out[:0], 0
		m, exists := tx.Meta(0)
		missed = readonly && !exists
		if exists && m.Type != typeString {
			return ErrWrongType
		}
		grown := !readonly && (!exists || int64(m.Len) <= highest>>3)
		if grown {
			// Redis grows the string to the farthest bit written first, failures included.
			if err := tx.WriteAt(0, highest>>3, []byte{0}, typeString|keyspace.RawHint); err != nil {
				return err
			}
		}
		for _, op := range ops {
			from := op.off >> 3
			n := (op.off+int64(op.width)-1)>>3 - from + 1
			b, err := tx.ReadAt(0, from, n)
			if err != nil {
				return err
			}
			rel := op.off - from<<3
			old := getBits(b, rel, op.width)
			if op.op == 'g' {
				if op.signed {
					out = append(out, bitfieldReply{v: signExtend(old, op.width)})
				} else {
					out = append(out, bitfieldReply{v: int64(old)})
				}
				continue
			}
			var nv uint64
			var reply int64
			var over bool
			if op.signed {
				oldv := signExtend(old, op.width)
				var lim int64
				if op.op == 'i' {
					over, lim = signedOverflow(oldv, op.val, op.width, op.overflow)
					if over {
						reply = lim
					} else {
						reply = oldv + op.val
					}
					nv = uint64(reply)
				} else {
					newv := op.val
					if over, lim = signedOverflow(newv, 0, op.width, op.overflow); over {
						newv = lim
					}
					nv, reply = uint64(newv), oldv
				}
			} else {
				var lim uint64
				if op.op == 'i' {
					over, lim = unsignedOverflow(old, op.val, op.width, op.overflow)
					if over {
						nv = lim
					} else {
						nv = old + uint64(op.val)
					}
					reply = int64(nv)
				} else {
					nv = uint64(op.val)
					if over, lim = unsignedOverflow(nv, 0, op.width, op.overflow); over {
						nv = lim
					}
					reply = int64(old)
				}
			}
			if over && op.overflow == bfFail {
				out = append(out, bitfieldReply{nil: true})
				continue
			}
			out = append(out, bitfieldReply{v: reply})
			if grown || nv&(^uint64(0)>>(64-op.width)) != old {
				changes++
			}
			nb := append([]byte(nil), b...)
			nb = append(nb, make([]byte, n-int64(len(nb)))...)
			setBits(nb, rel, op.width, nv)
			if err := tx.WriteAt(0, from, nb, typeString|keyspace.RawHint); err != nil {
				return err
			}
		}
		return nil
	})
	if missed {
		// Only GETs: Redis looks the key up for reading (lookupKeyRead); with a SET or INCRBY
		// for writing, which states nothing.
		c.KeyMiss(c.Args[1])
	}
	if err != nil {
		c.Err(err)
		return
	}
	switch {
	case changes > 0:
		c.Notify(pubsub.String, "setbit", c.Args[1])
	case c.Sess.TakeKey(c.DB(), c.Args[1], true):
		// Only failed INCRBYs on a missing key: Redis created it (zeros up to the farthest
		// bit) and states only that.
		c.NotifyNew(c.DB(), c.Args[1])
	}
	c.W.Array(len(out))
	for _, r := range out {
		if r.nil {
			c.W.Null()
		} else {
			c.W.Int(r.v)
		}
	}
}
