package commands

// LCS, as Redis 7.0's lcsCommand: the longest common subsequence of two strings by the
// classic dynamic-programming table, walked back to give the subsequence, its length (LEN) or
// the matching ranges (IDX, longest from the end first, MINMATCHLEN, WITHMATCHLEN).

import (
	"github.com/lavikdb/lavik/services/data/keyspace"
)

func init() {
	register(&Command{Name: "lcs", Arity: -3, Flags: FlagReadonly, FirstKey: 1, LastKey: 2, Step: 1,
		Group: "string", Since: "7.0.0", Complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
		Summary: "Finds the longest common substring.", Handler: lcsCmd})
}

type lcsRange struct{ a0, a1, b0, b1, n uint32 }

func lcsCmd(c *Ctx) {
	var a, b []byte
	var missed [2]bool
	err := c.KS.Update(c.Sess, c.keyArgs(1, 2), func(tx *keyspace.Tx) error {
		missed = [2]bool{!tx.Exists(0), !tx.Exists(1)}
		for i, dst := range []*[]byte{&a, &b} {
			*dst = nil
			m, ok := tx.Meta(i)
			if !ok {
				continue
			}
			if m.Type != typeString {
				return Error("ERR The specified keys must contain string values")
			}
			v, _, err := tx.Value(i)
			if err != nil {
				return err
			}
			*dst = v
		}
		return nil
	})
	// Both keys are looked up (lookupKeyRead) before either's type is checked.
	for i, m := range missed {
		if m {
			c.KeyMiss(c.Args[1+i])
		}
	}
	if err != nil {
		c.Err(err)
		return
	}
	var getLen, getIdx, withLen bool
	var minLen int64
	for j := 3; j < len(c.Args); j++ {
		more := len(c.Args) - 1 - j
		switch {
		case is(c.Args[j], "IDX"):
			getIdx = true
		case is(c.Args[j], "LEN"):
			getLen = true
		case is(c.Args[j], "WITHMATCHLEN"):
			withLen = true
		case is(c.Args[j], "MINMATCHLEN") && more > 0:
			if minLen, err = intArg(c.Args[j+1]); err != nil {
				c.Err(err)
				return
			}
			minLen = max(minLen, 0)
			j++
		default:
			c.Err(ErrSyntax)
			return
		}
	}
	if getIdx && getLen {
		c.Err(Error("ERR If you want both the length and indexes, please just use IDX."))
		return
	}
	alen, blen := uint32(len(a)), uint32(len(b))
	if uint64(len(a)) >= 1<<32-2 || uint64(len(b)) >= 1<<32-2 {
		c.Err(Error("ERR String too long for LCS"))
		return
	}
	if (uint64(alen)+1)*(uint64(blen)+1)*4 > uint64(maxStringLen(c)) {
		c.Err(Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"))
		return
	}
	w := blen + 1
	lcs := make([]uint32, (alen+1)*w)
	at := func(i, j uint32) uint32 { return lcs[j+i*w] }
	for i := uint32(1); i <= alen; i++ {
		for j := uint32(1); j <= blen; j++ {
			if a[i-1] == b[j-1] {
				lcs[j+i*w] = at(i-1, j-1) + 1
			} else {
				lcs[j+i*w] = max(at(i-1, j), at(i, j-1))
			}
		}
	}
	idx := at(alen, blen)
	total := idx
	compute := getIdx || !getLen
	var result []byte
	if compute {
		result = make([]byte, idx)
	}
	var ranges []lcsRange
	as, ae, bs, be := alen, uint32(0), uint32(0), uint32(0)
	i, j := alen, blen
	for compute && i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			if as == alen {
				as, ae, bs, be = i-1, i-1, j-1, j-1
			} else if as == i && bs == j {
				as--
				bs--
			} else {
				emit = true
			}
			if as == 0 || bs == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if at(i-1, j) > at(i, j-1) {
				i--
			} else {
				j--
			}
			if as != alen {
				emit = true
			}
		}
		n := ae - as + 1
		if emit {
			if minLen == 0 || int64(n) >= minLen {
				ranges = append(ranges, lcsRange{as, ae, bs, be, n})
			}
			as = alen
		}
	}
	switch {
	case getIdx:
		c.W.Map(2)
		c.W.BulkString("matches")
		c.W.Array(len(ranges))
		for _, r := range ranges {
			c.W.Array(2 + int(b2i(withLen)))
			c.W.Array(2)
			c.W.Int(int64(r.a0))
			c.W.Int(int64(r.a1))
			c.W.Array(2)
			c.W.Int(int64(r.b0))
			c.W.Int(int64(r.b1))
			if withLen {
				c.W.Int(int64(r.n))
			}
		}
		c.W.BulkString("len")
		c.W.Int(int64(total))
	case getLen:
		c.W.Int(int64(total))
	default:
		c.W.Bulk(result)
	}
}
