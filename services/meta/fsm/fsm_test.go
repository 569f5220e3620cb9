package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lavikdb/lavik/pkg/testseed"
	commonv1 "github.com/lavikdb/lavik/proto/lavik/common/v1"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/grpc/codes"
)

func openT(t *testing.T, path string) *FSM {
	t.Helper()
	f, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() }) // a second Close after the test's own is harmless
	return f
}

// randCommand returns a command over a small universe of ids, so that conflicts (other
// group, wrong epoch, overlapping slots, primary removal) are frequent. The expected epoch
// is usually the group's current one, read from f, so promotions succeed often enough.
func randCommand(r *rand.Rand, f *FSM) Command {
	node := fmt.Sprintf("n%d", r.IntN(6))
	group := fmt.Sprintf("g%d", r.IntN(3))
	epoch := uint64(r.IntN(4))
	if g, err := f.Group(group); err == nil && r.IntN(4) > 0 {
		epoch = g.Epoch
	}
	switch r.IntN(9) {
	case 0, 1:
		return RegisterNode{NodeID: node, ShardGroup: group, DataAddress: node + ":6379",
			AdminAddress: node + ":7000", Epoch: uint64(r.IntN(3)), Version: fmt.Sprint(r.IntN(2))}
	case 2, 3:
		return SetPrimary{ShardGroup: group, NodeID: node, ExpectedEpoch: epoch}
	case 4:
		return ClearPrimary{ShardGroup: group, ExpectedEpoch: epoch}
	case 5:
		return RemoveNode{NodeID: node}
	case 6:
		var rs []SlotRange
		for range r.IntN(3) {
			lo := uint32(r.IntN(NumSlots))
			rs = append(rs, SlotRange{lo, min(lo+uint32(r.IntN(3000)), NumSlots-1)})
		}
		return AssignSlots{ShardGroup: group, Ranges: rs}
	case 7:
		id := uint64(r.IntN(4))
		return AddMember{ID: id, Name: fmt.Sprintf("m%d", r.IntN(4)), PeerAddress: fmt.Sprintf("p%d:2380", id)}
	default:
		return RemoveMember{ID: uint64(r.IntN(4))}
	}
}

// checkInvariants checks the state's documented invariants against the previous topology.
func checkInvariants(t *testing.T, prev, cur Topology) {
	t.Helper()
	prevEpoch := map[string]GroupView{}
	for _, g := range prev.Groups {
		prevEpoch[g.ID] = g
	}
	owner := map[uint32]string{}
	for i, g := range cur.Groups {
		if i > 0 && cur.Groups[i-1].ID >= g.ID {
			t.Fatalf("groups not ordered: %q then %q", cur.Groups[i-1].ID, g.ID)
		}
		if p, ok := prevEpoch[g.ID]; ok {
			if g.Epoch < p.Epoch {
				t.Fatalf("group %s epoch went from %d to %d", g.ID, p.Epoch, g.Epoch)
			}
			if g.Epoch == p.Epoch && g.Primary != p.Primary {
				t.Fatalf("group %s at epoch %d had primaries %q and %q", g.ID, g.Epoch, p.Primary, g.Primary)
			}
		}
		if (g.Primary == "") != (g.PrimaryNode == nil) {
			t.Fatalf("group %s: primary %q, primary node %v", g.ID, g.Primary, g.PrimaryNode)
		}
		if g.PrimaryNode != nil && g.PrimaryNode.Role != RolePrimary {
			t.Fatalf("group %s: primary %s has role %v", g.ID, g.Primary, g.PrimaryNode.Role)
		}
		for j, n := range g.Followers {
			if n.Role == RolePrimary || n.Group != g.ID || n.ReportedEpoch > g.Epoch {
				t.Fatalf("group %s (epoch %d): follower %+v", g.ID, g.Epoch, n)
			}
			if j > 0 && g.Followers[j-1].ID >= n.ID {
				t.Fatalf("group %s: followers not ordered", g.ID)
			}
		}
		for j, r := range g.Slots {
			if r.Start > r.End || r.End >= NumSlots || j > 0 && g.Slots[j-1].End+1 >= r.Start {
				t.Fatalf("group %s: slots %v not sorted, disjoint and apart", g.ID, g.Slots)
			}
			for s := r.Start; s <= r.End; s++ {
				if o, ok := owner[s]; ok {
					t.Fatalf("slot %d owned by %s and %s", s, o, g.ID)
				}
				owner[s] = g.ID
			}
		}
	}
}

type fsmState struct {
	topo    Topology
	members []Member
	snap    []byte
	index   uint64
}

func readState(t *testing.T, f *FSM) fsmState {
	t.Helper()
	var s fsmState
	var err error
	if s.topo, err = f.Topology(); err != nil {
		t.Fatal(err)
	}
	if s.members, err = f.Members(); err != nil {
		t.Fatal(err)
	}
	if s.snap, s.index, err = f.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if s.index != f.Applied() || s.topo.Version != s.index {
		t.Fatalf("snapshot index %d, topology version %d, Applied %d", s.index, s.topo.Version, f.Applied())
	}
	return s
}

// TestRandomDeterminism applies one seeded random command sequence to two FSMs. Midway, A is
// replaced by a new FSM restored from A's snapshot, and B is closed and reopened. At every
// step both give the same result bytes, Topology, Members and Snapshot bytes; re-applying an
// old index is a no-op on both; and the invariants hold.
func TestRandomDeterminism(t *testing.T) {
	seed := testseed.Seed(t, "LAVIK_FSM_SEED")
	r := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	a := openT(t, filepath.Join(dir, "a.db"))
	pathB := filepath.Join(dir, "b.db")
	b := openT(t, pathB)
	const steps = 600
	var prev Topology
	var datas [][]byte
	outcomes := map[Code]int{}
	index := uint64(0)
	for step := range steps {
		if step == steps/3 {
			snap, at, err := a.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			c := openT(t, filepath.Join(dir, "c.db"))
			// Give c some state of its own first: Restore must replace it, not merge.
			if _, err := c.Apply(1, Encode(RegisterNode{NodeID: "stale", ShardGroup: "gx", DataAddress: "x:1"})); err != nil {
				t.Fatal(err)
			}
			if err := c.Restore(snap, at); err != nil {
				t.Fatal(err)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			a = c
		}
		if step == 2*steps/3 {
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b = openT(t, pathB)
		}
		index += 1 + uint64(r.IntN(2)) // gaps are allowed
		var data []byte
		if r.IntN(20) > 0 {
			data = Encode(randCommand(r, a))
		}
		datas = append(datas, data)
		ra, err := a.Apply(index, data)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		rb, err := b.Apply(index, data)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if !bytes.Equal(ra, rb) {
			t.Fatalf("step %d: results differ: %x vs %x", step, ra, rb)
		}
		if ra != nil {
			res, err := DecodeResult(ra)
			if err != nil {
				t.Fatal(err)
			}
			outcomes[res.Code]++
		}
		sa, sb := readState(t, a), readState(t, b)
		if !reflect.DeepEqual(sa, sb) {
			t.Fatalf("step %d: states differ:\n%+v\n%+v", step, sa, sb)
		}
		checkInvariants(t, prev, sa.topo)
		prev = sa.topo
		// An old index again, with whatever data: nothing changes.
		old := uint64(1 + r.IntN(int(index)))
		if res, err := a.Apply(old, datas[r.IntN(len(datas))]); res != nil || err != nil {
			t.Fatalf("step %d: re-apply of index %d: %x, %v", step, old, res, err)
		}
		if again := readState(t, a); !reflect.DeepEqual(again, sa) {
			t.Fatalf("step %d: re-apply of index %d changed the state", step, old)
		}
	}
	// The sequence exercised each outcome, or the comparison above proved little.
	for _, c := range []Code{CodeOK, CodeNotFound, CodeFailedPrecondition, CodeInvalidArgument} {
		if outcomes[c] == 0 {
			t.Errorf("no %v result in %d steps: %v", c, steps, outcomes)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestReopenKeepsApplied: Applied after reopening is the last committed index, and the state
// is as it was, including after refused commands and empty entries.
func TestReopenKeepsApplied(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	f := openT(t, path)
	if f.Applied() != 0 {
		t.Fatalf("new FSM: Applied %d", f.Applied())
	}
	cmds := [][]byte{
		Encode(RegisterNode{NodeID: "n1", ShardGroup: "g1", DataAddress: "a:1"}),
		Encode(SetPrimary{ShardGroup: "g1", NodeID: "n1", ExpectedEpoch: 0}),
		Encode(SetPrimary{ShardGroup: "g1", NodeID: "n1", ExpectedEpoch: 0}), // refused
		nil,
	}
	for i, c := range cmds {
		if _, err := f.Apply(uint64(10+i), c); err != nil {
			t.Fatal(err)
		}
	}
	before := readState(t, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Topology(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Topology after Close: %v", err)
	}
	if _, err := f.Apply(99, cmds[0]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
	f = openT(t, path)
	if f.Applied() != 13 {
		t.Fatalf("Applied after reopen = %d, want 13", f.Applied())
	}
	if after := readState(t, f); !reflect.DeepEqual(before, after) {
		t.Fatalf("state changed across reopen:\n%+v\n%+v", before, after)
	}
}

// TestUndecodableChangesNothing: every undecodable entry returns ErrDecode and leaves the
// state, the applied index and the database file's content as they were.
func TestUndecodableChangesNothing(t *testing.T) {
	f := openT(t, filepath.Join(t.TempDir(), "meta.db"))
	if _, err := f.Apply(1, Encode(RegisterNode{NodeID: "n1", ShardGroup: "g1", DataAddress: "a:1"})); err != nil {
		t.Fatal(err)
	}
	before := readState(t, f)
	good := Encode(AssignSlots{ShardGroup: "g1", Ranges: []SlotRange{{0, 10}, {20, 30}}})
	bad := [][]byte{
		{0xff},
		good[:len(good)-1],                    // truncated
		append(bytes.Clone(good), 0x78, 0x01), // unknown envelope field 15
		{0x08, 0x01},                          // version only, no kind
		bytes.Repeat([]byte{0x08, 0x01}, maxCommandLength),
	}
	// Every single-byte corruption of a valid command either still decodes or is refused;
	// none panics, and refused ones change nothing.
	for i := range good {
		for _, x := range []byte{0x00, 0xff, 0x80} {
			c := bytes.Clone(good)
			c[i] = x
			if _, err := Decode(c); err != nil {
				bad = append(bad, c)
			}
		}
	}
	for _, data := range bad {
		res, err := f.Apply(2, data)
		if !errors.Is(err, ErrDecode) || res != nil {
			t.Fatalf("Apply(%x) = %x, %v; want ErrDecode", data, res, err)
		}
		if after := readState(t, f); !reflect.DeepEqual(before, after) {
			t.Fatalf("Apply(%x) changed the state", data)
		}
	}
	// And the index is still free for the real entry.
	if res, err := f.Apply(2, good); err != nil || res == nil {
		t.Fatalf("Apply(good) = %x, %v", res, err)
	}
}

// TestRestoreRefusesBadSnapshots: a snapshot that does not decode, or is at another index,
// leaves the state as it was.
func TestRestoreRefusesBadSnapshots(t *testing.T) {
	f := openT(t, filepath.Join(t.TempDir(), "meta.db"))
	if _, err := f.Apply(5, Encode(AddMember{ID: 1, Name: "m1", PeerAddress: "p:1"})); err != nil {
		t.Fatal(err)
	}
	before := readState(t, f)
	snap := before.snap
	for name, tc := range map[string]struct {
		data  []byte
		index uint64
	}{
		"other index":    {snap, 4},
		"truncated":      {snap[:len(snap)-1], 5},
		"unknown field":  {append(bytes.Clone(snap), 0x30, 0x01), 5},
		"unknown format": {append([]byte{0x08, 0x02}, snap[2:]...), 5},
		"empty":          {nil, 0},
	} {
		if err := f.Restore(tc.data, tc.index); err == nil {
			t.Errorf("%s: Restore succeeded", name)
		}
		if after := readState(t, f); !reflect.DeepEqual(before, after) {
			t.Fatalf("%s: a refused Restore changed the state", name)
		}
	}
}

// TestOpenRefusesUnknownFormat: a database written by a future layout is not read as this one.
func TestOpenRefusesUnknownFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	f := openT(t, path)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyFormat, u64bytes(2)) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of format 2: %v, want ErrCorrupt", err)
	}
}

// TestReservedFieldsDecode: a SetPrimary entry and a GroupRecord written with the replication
// position they once carried (fields 4 and 5, now reserved) still decode, without it.
func TestReservedFieldsDecode(t *testing.T) {
	old := appendUint(appendString(SetPrimary{"g1", "n1", 3}.encode(), 4, "r1"), 5, 99)
	c, err := decodeBody(kindSetPrimary, old)
	if err != nil || !reflect.DeepEqual(c, SetPrimary{"g1", "n1", 3}) {
		t.Fatalf("old SetPrimary: %#v, %v", c, err)
	}
	g := Group{ID: "g1", Epoch: 3, Primary: "n1", Slots: []SlotRange{{0, 9}}}
	rec := encodeGroup(g)
	rec = appendUint(appendString(rec, 4, "r1"), 5, 99)
	got, err := decodeGroup(rec)
	if err != nil || !reflect.DeepEqual(got, g) {
		t.Fatalf("old GroupRecord: %#v, %v", got, err)
	}
}

// TestCommandRoundTrip: Decode(Encode(c)) == c for every kind, with every field set.
func TestCommandRoundTrip(t *testing.T) {
	for _, c := range []Command{
		RegisterNode{"n1", "a:1", "a:2", "g1", 7, "0.1"},
		SetPrimary{"g1", "n1", 3},
		ClearPrimary{"g1", 4},
		RemoveNode{"n1"},
		AddMember{1, "m1", "p:1", "c:1"},
		RemoveMember{2},
		AssignSlots{"g1", []SlotRange{{5, 9}, {0, 0}}},
	} {
		got, err := Decode(Encode(c))
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("Decode(Encode(%#v)) = %#v, %v", c, got, err)
		}
	}
	r := Result{Code: CodeFailedPrecondition, Reason: "x", Epoch: 3, Role: RoleFollower, PrimaryNodeID: "n1"}
	if got, err := DecodeResult(r.Encode()); err != nil || got != r {
		t.Errorf("DecodeResult(Encode(%+v)) = %+v, %v", r, got, err)
	}
}

// TestValuesMatchTheAPI: Code and Role convert to gRPC codes and commonv1.Role by value.
func TestValuesMatchTheAPI(t *testing.T) {
	for c, want := range map[Code]codes.Code{
		CodeOK: codes.OK, CodeInvalidArgument: codes.InvalidArgument,
		CodeNotFound: codes.NotFound, CodeFailedPrecondition: codes.FailedPrecondition,
	} {
		if codes.Code(c) != want {
			t.Errorf("Code %v = %d, gRPC %v = %d", c, c, want, want)
		}
	}
	for r, want := range map[Role]commonv1.Role{
		RoleUnspecified: commonv1.Role_ROLE_UNSPECIFIED, RolePrimary: commonv1.Role_ROLE_PRIMARY, RoleFollower: commonv1.Role_ROLE_FOLLOWER,
	} {
		if commonv1.Role(r) != want {
			t.Errorf("Role %v = %d, commonv1 %v = %d", r, r, want, want)
		}
	}
}
