package commands

import (
	"regexp"
	"strings"
	"testing"
)

// The table is data that COMMAND, COMMAND DOCS, the dispatcher's arity and auth checks and
// COMMAND GETKEYS all read. These tests check that every entry is complete and self-consistent;
// test/table_test.go checks the same entries against the running server's behaviour.

var (
	tblSinceRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	tblNameRE  = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	// Lavik's own commands live in the "lavik." namespace, as Redis modules' commands do.
	// Redis's own names may hold an underscore (EVAL_RO, SORT_RO, GEORADIUS_RO).
	tblTopRE  = regexp.MustCompile(`^([a-z][a-z0-9_-]*|lavik\.[a-z][a-z0-9-]*)$`)
	tblGroups = map[string]bool{"string": true, "generic": true, "connection": true, "server": true, "transactions": true, "hash": true, "set": true, "list": true, "sorted-set": true, "stream": true, "scripting": true, "bitmap": true, "hyperloglog": true, "geo": true, "pubsub": true}
)

func TestTableEntriesComplete(t *testing.T) {
	all := AllWithSubcommands()
	if len(all) == 0 {
		t.Fatal("the command table is empty")
	}
	for _, c := range all {
		if c.Summary == "" {
			t.Errorf("%s: no Summary", c.Name)
		}
		if !tblSinceRE.MatchString(c.Since) {
			t.Errorf("%s: Since %q is not a version", c.Name, c.Since)
		}
		if !tblGroups[c.Group] {
			t.Errorf("%s: Group %q is not one of the documented groups", c.Name, c.Group)
		}
		if c.Complexity == "" {
			t.Errorf("%s: no Complexity", c.Name)
		}
		if c.Handler == nil && len(c.Subcommands) == 0 {
			t.Errorf("%s: no Handler and no subcommands", c.Name)
		}
		if c.Subcommands != nil && len(c.Subcommands) == 0 {
			t.Errorf("%s: empty (non-nil) Subcommands map", c.Name)
		}
		if c.Flags&FlagWrite != 0 && c.Flags&FlagReadonly != 0 {
			t.Errorf("%s: flagged both write and readonly", c.Name)
		}
		known := FlagPrefetch // Lavik's own, hidden from COMMAND on purpose
		for _, n := range flagNames {
			known |= n.f
		}
		if c.Flags&^known != 0 {
			t.Errorf("%s: flag bits %#x have no name, so COMMAND would hide them", c.Name, uint32(c.Flags&^known))
		}
		if c.FullName() != c.Name {
			t.Errorf("%s: FullName %q differs from Name", c.Name, c.FullName())
		}
	}
}

func TestTableNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range AllWithSubcommands() {
		if seen[c.Name] {
			t.Errorf("duplicate command name %q", c.Name)
		}
		seen[c.Name] = true
	}
	for _, c := range All() {
		if !tblTopRE.MatchString(c.Name) {
			t.Errorf("top-level name %q is not lower-case letters, digits, dashes and underscores (after lavik. for Lavik's own)", c.Name)
		}
		if c.Parent != nil {
			t.Errorf("%s: top-level command has a Parent", c.Name)
		}
		for key, sub := range c.Subcommands {
			if !tblNameRE.MatchString(key) {
				t.Errorf("%s: subcommand key %q is not lower-case letters, digits and dashes", c.Name, key)
			}
			if want := c.Name + "|" + key; sub.Name != want {
				t.Errorf("subcommand %q of %s is named %q, want %q", key, c.Name, sub.Name, want)
			}
			if sub.Parent != c {
				t.Errorf("%s: Parent is not %s", sub.Name, c.Name)
			}
			if len(sub.Subcommands) != 0 {
				t.Errorf("%s: subcommands nest only one level deep", sub.Name)
			}
		}
	}
}

// TestTableArity checks the arity field: never 0, and a subcommand counts its parent's name
// and its own, so it needs at least two arguments.
func TestTableArity(t *testing.T) {
	for _, c := range AllWithSubcommands() {
		min := c.Arity
		if min < 0 {
			min = -min
		}
		switch {
		case c.Arity == 0:
			t.Errorf("%s: arity 0", c.Name)
		case c.Parent != nil && min < 2:
			t.Errorf("%s: subcommand arity %d counts fewer than its two names", c.Name, c.Arity)
		case c.Parent == nil && len(c.Subcommands) > 0 && c.Handler == nil && c.Arity != -2:
			// A container without a handler of its own is always called with a subcommand.
			t.Errorf("%s: container arity %d, want -2", c.Name, c.Arity)
		}
		if !c.CheckArity(min) {
			t.Errorf("%s: CheckArity(%d) false at the minimum", c.Name, min)
		}
		if min > 1 && c.CheckArity(min-1) {
			t.Errorf("%s: CheckArity(%d) true below the minimum", c.Name, min-1)
		}
		if c.Arity > 0 && c.CheckArity(c.Arity+1) {
			t.Errorf("%s: exact arity %d accepts %d arguments", c.Name, c.Arity, c.Arity+1)
		}
		if c.Arity < 0 && !c.CheckArity(min+5) {
			t.Errorf("%s: variadic arity %d refuses %d arguments", c.Name, c.Arity, min+5)
		}
	}
}

// TestTableKeySpecs checks FirstKey, LastKey and Step against each other and against the
// arity, and that KeyIndexes finds at least one key in every invocation the arity admits.
func TestTableKeySpecs(t *testing.T) {
	for _, c := range AllWithSubcommands() {
		min := c.Arity
		if min < 0 {
			min = -min
		}
		if c.FirstKey == 0 {
			if c.LastKey != 0 || c.Step != 0 {
				t.Errorf("%s: no first key but LastKey %d, Step %d", c.Name, c.LastKey, c.Step)
			}
			if got := c.KeyIndexes(min + 3); got != nil {
				t.Errorf("%s: no key spec but KeyIndexes = %v", c.Name, got)
			}
			continue
		}
		if len(c.Subcommands) > 0 {
			t.Errorf("%s: a container has no keys of its own; its subcommands do", c.Name)
		}
		if c.FirstKey < 0 {
			t.Errorf("%s: FirstKey %d < 0", c.Name, c.FirstKey)
			continue
		}
		if c.Parent != nil && c.FirstKey < 2 {
			t.Errorf("%s: FirstKey %d points at the command name", c.Name, c.FirstKey)
		}
		if c.Step <= 0 {
			t.Errorf("%s: FirstKey %d with Step %d", c.Name, c.FirstKey, c.Step)
		}
		if c.FirstKey >= min {
			t.Errorf("%s: FirstKey %d is not among the %d arguments the arity requires", c.Name, c.FirstKey, min)
		}
		switch {
		case c.LastKey == 0:
			t.Errorf("%s: FirstKey %d with LastKey 0", c.Name, c.FirstKey)
		case c.LastKey > 0:
			if c.LastKey < c.FirstKey {
				t.Errorf("%s: LastKey %d before FirstKey %d", c.Name, c.LastKey, c.FirstKey)
			}
			if c.LastKey >= min {
				t.Errorf("%s: LastKey %d is not among the %d arguments the arity requires", c.Name, c.LastKey, min)
			}
			if (c.LastKey-c.FirstKey)%max(c.Step, 1) != 0 {
				t.Errorf("%s: LastKey %d is not reached from FirstKey %d in steps of %d", c.Name, c.LastKey, c.FirstKey, c.Step)
			}
		default:
			// A key position counted from the end only makes sense when the count varies.
			if c.Arity > 0 {
				t.Errorf("%s: LastKey %d with exact arity %d", c.Name, c.LastKey, c.Arity)
			}
			if min+c.LastKey < c.FirstKey {
				t.Errorf("%s: with %d arguments LastKey %d ends before FirstKey %d", c.Name, min, c.LastKey, c.FirstKey)
			}
		}
		if c.Step > 1 && c.Arity < 0 && c.LastKey == -1 && (min-c.FirstKey)%c.Step != 0 {
			t.Errorf("%s: the minimal invocation (%d arguments) does not end on a whole group of %d", c.Name, min, c.Step)
		}
		for argc := min; argc <= min+4; argc++ {
			if !c.CheckArity(argc) {
				continue
			}
			pos := c.KeyIndexes(argc)
			if len(pos) == 0 {
				t.Errorf("%s: KeyIndexes(%d) found no key", c.Name, argc)
			}
			for i, p := range pos {
				if p < c.FirstKey || p >= argc || (i > 0 && p != pos[i-1]+c.Step) {
					t.Errorf("%s: KeyIndexes(%d) = %v", c.Name, argc, pos)
					break
				}
			}
		}
	}
}

// TestTableKeyIndexesExamples pins KeyIndexes on the three shapes of key spec.
func TestTableKeyIndexesExamples(t *testing.T) {
	for _, tc := range []struct {
		name string
		argc int
		want []int
	}{
		{"get", 2, []int{1}},
		{"set", 5, []int{1}},
		{"mget", 4, []int{1, 2, 3}},
		{"mset", 5, []int{1, 3}},
		{"mset", 7, []int{1, 3, 5}},
		{"rename", 3, []int{1, 2}},
		{"copy", 5, []int{1, 2}},
		{"object|encoding", 3, []int{2}},
		{"ping", 2, nil},
	} {
		c := lookupFull(tc.name)
		if c == nil {
			t.Errorf("%s: not in the table", tc.name)
			continue
		}
		got := c.KeyIndexes(tc.argc)
		if len(got) != len(tc.want) {
			t.Errorf("%s: KeyIndexes(%d) = %v, want %v", tc.name, tc.argc, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: KeyIndexes(%d) = %v, want %v", tc.name, tc.argc, got, tc.want)
				break
			}
		}
	}
}

func TestTableLookup(t *testing.T) {
	for _, c := range All() {
		for _, n := range []string{c.Name, strings.ToUpper(c.Name), tblMixedCase(c.Name)} {
			if got := Lookup([]byte(n)); got != c {
				t.Errorf("Lookup(%q) = %v, want %s", n, got, c.Name)
			}
		}
		for key, sub := range c.Subcommands {
			for _, n := range []string{key, strings.ToUpper(key), tblMixedCase(key)} {
				if got := c.LookupSub([]byte(n)); got != sub {
					t.Errorf("%s LookupSub(%q) = %v, want %s", c.Name, n, got, sub.Name)
				}
			}
			if got := lookupFull(strings.ToUpper(sub.Name)); got != sub {
				t.Errorf("lookupFull(%q) = %v, want %s", strings.ToUpper(sub.Name), got, sub.Name)
			}
		}
		if c.Subcommands == nil && c.LookupSub([]byte("help")) != nil {
			t.Errorf("%s: LookupSub found a subcommand of a plain command", c.Name)
		}
	}
	long := strings.Repeat("G", 40) // longer than Lookup's stack buffer
	for _, n := range []string{"", "nosuchcommand", long, "GET\x00", "get|x"} {
		if got := Lookup([]byte(n)); got != nil {
			t.Errorf("Lookup(%q) = %s, want nil", n, got.Name)
		}
	}
	// Non-ASCII bytes must not fold onto an ASCII command name.
	if got := Lookup([]byte("G\xc5T")); got != nil {
		t.Errorf("Lookup(G\\xc5T) = %s, want nil", got.Name)
	}
	if got := testing.AllocsPerRun(100, func() { Lookup([]byte("INCRBYFLOAT")) }); got != 0 {
		t.Errorf("Lookup allocates %v times per call, want 0", got)
	}
}

func TestTableRegisterRefusesDuplicates(t *testing.T) {
	before := len(table)
	defer func() {
		if recover() == nil {
			t.Error("registering a second \"get\" did not panic")
		}
		if len(table) != before || table["get"].Handler == nil {
			t.Error("a refused registration changed the table")
		}
	}()
	register(&Command{Name: "get", Arity: 2})
}

func TestTableSorted(t *testing.T) {
	all := AllWithSubcommands()
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		// Subcommands follow their parent; within each level names ascend.
		if a.Parent == nil && b.Parent == a {
			continue
		}
		ka, kb := a.Name, b.Name
		if a.Parent != nil && b.Parent == nil {
			ka = a.Parent.Name
		}
		if ka >= kb {
			t.Errorf("AllWithSubcommands: %s before %s", a.Name, b.Name)
		}
	}
	n := 0
	for _, c := range All() {
		n += 1 + len(c.Subcommands)
	}
	if n != len(all) {
		t.Errorf("AllWithSubcommands has %d entries, want %d", len(all), n)
	}
}

// tblMixedCase upper-cases every other letter.
func tblMixedCase(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i += 2 {
		if 'a' <= b[i] && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}
