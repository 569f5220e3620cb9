package test

// Replication of the bitmap, HyperLogLog, geo and SORT write commands: after each family's
// writes (and PFCOUNT's refresh of its cached cardinality) the follower holds the same data as
// the primary, byte for byte.

import (
	"strconv"
	"testing"

	"github.com/lavikdb/lavik/test/harness"
)

func TestReplBitsHLLGeoSort(t *testing.T) {
	_, _, pc, fc := replPair(t)
	ctx := harness.Ctx(t)
	k := newChecker(t, pc)
	step := func(what string, cmds ...[]any) {
		t.Helper()
		for _, cmd := range cmds {
			if err := pc.Do(ctx, cmd...).Err(); err != nil && err.Error() != "redis: nil" {
				t.Fatalf("%s: %v: %v", what, cmd, err)
			}
		}
		waitInSync(t, pc, fc)
		assertSameData(t, pc, fc, 1)
	}
	step("bitmaps",
		[]any{"SETBIT", "b", 100, 1}, []any{"SETBIT", "b", 7, 1}, []any{"SETBIT", "b", 100, 0},
		[]any{"BITFIELD", "bf", "SET", "i8", 0, -5, "INCRBY", "u4", "#3", 20, "OVERFLOW", "FAIL", "INCRBY", "u2", 40, 9},
		[]any{"BITOP", "XOR", "bx", "b", "bf"}, []any{"BITOP", "NOT", "bn", "b"}, []any{"BITOP", "AND", "bx", "none"})
	// A large (chunked) string edited bit by bit.
	k.eq(300001, "SETRANGE", "big", 300000, "x")
	step("bitmaps on a large string", []any{"SETBIT", "big", 8*250000 + 3, 1}, []any{"SETBIT", "big", 8 * 400000, 1},
		[]any{"BITFIELD", "big", "SET", "u16", 8 * 100000, 65535})
	var adds [][]any
	for i := 0; i < 30; i++ {
		args := []any{"PFADD", "h" + strconv.Itoa(i%3)}
		for j := 0; j < 200; j++ {
			args = append(args, strconv.Itoa(i*1000+j))
		}
		adds = append(adds, args)
	}
	step("hyperloglog", adds...)
	step("hyperloglog merge and cached count", []any{"PFMERGE", "hm", "h0", "h1", "h2"}, []any{"PFCOUNT", "hm"}, []any{"PFCOUNT", "h0"},
		[]any{"PFADD", "small", "a", "b"}, []any{"PFCOUNT", "small"})
	if got, want := fc.Get(ctx, "hm").Val(), pc.Get(ctx, "hm").Val(); got != want || want[15]&0x80 != 0 {
		t.Fatalf("the follower's PFCOUNT cache differs from the primary's, or was not refreshed")
	}
	step("geo",
		[]any{"GEOADD", "g", 13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania"},
		[]any{"GEOADD", "g", "XX", "CH", 13.5, 38.1, "Palermo"},
		[]any{"GEOSEARCHSTORE", "gs", "g", "FROMLONLAT", 15, 37, "BYRADIUS", 300, "km", "STOREDIST"},
		[]any{"GEORADIUS", "g", 15, 37, 300, "km", "STORE", "gr"},
		[]any{"GEORADIUSBYMEMBER", "g", "Catania", 10, "km", "STOREDIST", "grm"})
	step("sort",
		[]any{"RPUSH", "l", 5, 3, 9}, []any{"SORT", "l", "STORE", "ls"},
		[]any{"SADD", "s", "x", "y", "z"}, []any{"SORT", "s", "BY", "nosort", "STORE", "ss"},
		[]any{"SORT", "missing", "STORE", "ls"})
}
