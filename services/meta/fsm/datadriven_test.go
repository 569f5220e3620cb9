package fsm

import (
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/*.txt")

// A testdata file is a list of cases. A case is command lines, `----`, and the expected output;
// cases are separated by blank lines and `#` lines are comments. Each case starts from an
// empty FSM; its n-th command line is applied at raft index n. The output is one line per
// command (`index verb: result` or `index verb: error: ...`), then `state:` and the dump.
//
// Command lines (key=value arguments may be left out; they are then empty or 0):
//
//	register NODE GROUP data=ADDR admin=ADDR epoch=N version=S
//	set-primary GROUP NODE expected=N replid=S offset=N
//	clear-primary GROUP expected=N
//	remove-node NODE
//	add-member ID name=S peer=ADDR client=ADDR
//	remove-member ID
//	assign-slots GROUP RANGE...        (RANGE: 5 or 0-8191)
//	raw HEX                            (entry data as given, for undecodable entries)
//	empty                              (an entry without data)
//	reapply N                          (apply the n-th line's data again at index N)
func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata files")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runFile(t, file) })
	}
}

type ddCase struct {
	input    []string // command lines
	expected []string
	start    int // line number of the first input line, for messages
}

func runFile(t *testing.T, file string) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var out []string // the rewritten file, for -update
	var c *ddCase
	inExpected := false
	flush := func() {
		if c == nil {
			return
		}
		got := runCase(t, c)
		if *update {
			out = append(out, c.input...)
			out = append(out, "----")
			out = append(out, got...)
		} else if strings.Join(got, "\n") != strings.Join(c.expected, "\n") {
			t.Errorf("%s:%d: got:\n%s\nwant:\n%s", file, c.start, strings.Join(got, "\n"), strings.Join(c.expected, "\n"))
		}
		c = nil
		inExpected = false
	}
	for i, line := range lines {
		switch {
		case line == "":
			flush()
			out = append(out, line)
		case c == nil && strings.HasPrefix(line, "#"):
			out = append(out, line)
		case c == nil:
			c = &ddCase{input: []string{line}, start: i + 1}
		case line == "----":
			inExpected = true
		case inExpected:
			c.expected = append(c.expected, line)
		default:
			c.input = append(c.input, line)
		}
	}
	flush()
	if *update {
		if err := os.WriteFile(file, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runCase(t *testing.T, c *ddCase) []string {
	f, err := Open(filepath.Join(t.TempDir(), "meta.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	datas := make([][]byte, len(c.input))
	for i, line := range c.input {
		index := uint64(i + 1)
		fields := strings.Fields(line)
		verb := fields[0]
		var data []byte
		if verb == "reapply" {
			n := atoi(t, line, fields[1])
			if n < 1 || n > uint64(i) {
				t.Fatalf("line %q: no earlier line %d", line, n)
			}
			data = datas[n-1]
			index = uint64(n)
		} else {
			data = parseCommand(t, line)
		}
		datas[i] = data
		res, err := f.Apply(index, data)
		prefix := fmt.Sprintf("%d %s: ", index, verb)
		switch {
		case err != nil:
			out = append(out, prefix+"error: "+err.Error())
		case res == nil:
			out = append(out, prefix+"no-op")
		default:
			r, err := DecodeResult(res)
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			out = append(out, prefix+r.String())
		}
	}
	return append(out, dump(t, f)...)
}

func atoi(t *testing.T, line, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	return v
}

// parseCommand turns a command line into entry data.
func parseCommand(t *testing.T, line string) []byte {
	t.Helper()
	fields := strings.Fields(line)
	var pos []string
	kv := map[string]string{}
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		} else {
			pos = append(pos, f)
		}
	}
	arg := func(i int) string {
		if i >= len(pos) {
			t.Fatalf("line %q: missing argument %d", line, i+1)
		}
		return pos[i]
	}
	num := func(k string) uint64 {
		if kv[k] == "" {
			return 0
		}
		return atoi(t, line, kv[k])
	}
	switch fields[0] {
	case "register":
		return Encode(RegisterNode{NodeID: arg(0), ShardGroup: arg(1), DataAddress: kv["data"],
			AdminAddress: kv["admin"], Epoch: num("epoch"), Version: kv["version"]})
	case "set-primary":
		return Encode(SetPrimary{ShardGroup: arg(0), NodeID: arg(1), ExpectedEpoch: num("expected")})
	case "clear-primary":
		return Encode(ClearPrimary{ShardGroup: arg(0), ExpectedEpoch: num("expected")})
	case "remove-node":
		return Encode(RemoveNode{NodeID: arg(0)})
	case "add-member":
		return Encode(AddMember{ID: atoi(t, line, arg(0)), Name: kv["name"], PeerAddress: kv["peer"], ClientAddress: kv["client"]})
	case "remove-member":
		return Encode(RemoveMember{ID: atoi(t, line, arg(0))})
	case "assign-slots":
		c := AssignSlots{ShardGroup: arg(0)}
		for _, r := range pos[1:] {
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			c.Ranges = append(c.Ranges, SlotRange{uint32(atoi(t, line, lo)), uint32(atoi(t, line, hi))})
		}
		return Encode(c)
	case "raw":
		b, err := hex.DecodeString(arg(0))
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		return b
	case "empty":
		return nil
	}
	t.Fatalf("line %q: unknown command", line)
	return nil
}

// dump renders the whole state through the read methods: what the API layer would see.
func dump(t *testing.T, f *FSM) []string {
	t.Helper()
	topo, err := f.Topology()
	if err != nil {
		t.Fatal(err)
	}
	members, err := f.Members()
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"state:", fmt.Sprintf("version %d", topo.Version)}
	if topo.Version != f.Applied() {
		t.Errorf("Topology version %d, Applied %d", topo.Version, f.Applied())
	}
	for _, m := range members {
		out = append(out, "member "+kvs(strconv.FormatUint(m.ID, 10), "name", m.Name, "peer", m.PeerAddress, "client", m.ClientAddress))
	}
	for _, g := range topo.Groups {
		var slots []string
		for _, r := range g.Slots {
			slots = append(slots, r.String())
		}
		out = append(out, "group "+kvs(g.ID, "epoch", strconv.FormatUint(g.Epoch, 10), "primary", g.Primary,
			"slots", strings.Join(slots, ",")))
		nodes := g.Followers
		if g.PrimaryNode != nil {
			nodes = append([]Node{*g.PrimaryNode}, nodes...)
		}
		for _, n := range nodes {
			out = append(out, "  node "+kvs(n.ID, "role", n.Role.String(), "data", n.DataAddress, "admin", n.AdminAddress,
				"version", n.Version, "reported", strconv.FormatUint(n.ReportedEpoch, 10)))
			// The single-record reads agree with the topology.
			got, err := f.Node(n.ID)
			if err != nil || got != n {
				t.Errorf("Node(%q) = %+v, %v; topology has %+v", n.ID, got, err, n)
			}
		}
	}
	return out
}

// kvs renders head followed by the non-empty key=value pairs.
func kvs(head string, pairs ...string) string {
	s := head
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			s += " " + pairs[i] + "=" + pairs[i+1]
		}
	}
	return s
}
