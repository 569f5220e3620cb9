package commands

import (
	"strings"
	"testing"
)

func splitArgs(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// TestParseSetArgs: SET's options are checked for syntax alone, in any order, as Redis does; the
// expire value is kept (the last one given) for a later check. The syntax errors were checked
// against redis-server 7.0.15.
func TestParseSetArgs(t *testing.T) {
	for _, c := range []struct {
		args string
		want string // "syntax" for a syntax error, else the flags and the expire option kept
	}{
		{"", ""},
		{"NX", "nx"},
		{"xx", "xx"},
		{"NX NX", "nx"},
		{"GET GET", "get"},
		{"KEEPTTL KEEPTTL", "keepttl"},
		{"NX GET", "nx get"},
		{"GET XX KEEPTTL", "xx get keepttl"},
		{"EX 10", "EX=10"},
		{"ex 10 EX 20", "EX=20"},
		{"EX abc EX 10", "EX=10"},
		{"EX 10 EX abc", "EX=abc"},
		{"EX -1 EX 10", "EX=10"},
		{"PXAT 0", "PXAT=0"},
		{"NX EX 10 GET", "nx get EX=10"},
		{"EX EX", "EX=EX"}, // the value is taken as it is, and is checked later

		{"NX XX", "syntax"},
		{"XX NX", "syntax"},
		{"EX", "syntax"},
		{"NX EX", "syntax"},
		{"EX 10 PX", "syntax"},
		{"KEEPTTL EX 10", "syntax"},
		{"EX 10 KEEPTTL", "syntax"},
		{"PX 10 EX 10", "syntax"},
		{"EX 10 EXAT 10", "syntax"},
		{"PXAT 10 PX 10", "syntax"},
		{"EX EX 10", "syntax"}, // EX's value is "EX", then "10" is no option
		{"EX abc NX XX", "syntax"},
		{"PERSIST", "syntax"},
		{"foo", "syntax"},
		{"NX foo", "syntax"},
		{"EX 10 foo", "syntax"},
	} {
		a, err := parseSetArgs(splitArgs(c.args))
		got := "syntax"
		if err == nil {
			var parts []string
			for _, f := range []struct {
				on   bool
				name string
			}{{a.nx, "nx"}, {a.xx, "xx"}, {a.get, "get"}, {a.keepTTL, "keepttl"}} {
				if f.on {
					parts = append(parts, f.name)
				}
			}
			if a.expOpt != nil {
				parts = append(parts, string(a.expOpt)+"="+string(a.expVal))
			}
			got = strings.Join(parts, " ")
		} else if err != ErrSyntax {
			t.Errorf("SET k v %s: error %v, want a syntax error or none", c.args, err)
		}
		if got != c.want {
			t.Errorf("SET k v %s: %q, want %q", c.args, got, c.want)
		}
	}
}

func TestParseGetexArgs(t *testing.T) {
	for _, c := range []struct {
		args string
		want string
	}{
		{"", ""},
		{"PERSIST", "persist"},
		{"persist PERSIST", "persist"},
		{"EX 10", "EX=10"},
		{"EX -1 ex 10", "ex=10"},
		{"EX 10 EX abc", "EX=abc"},

		{"EX", "syntax"},
		{"EX 10 PX 10", "syntax"},
		{"EX 10 PERSIST", "syntax"},
		{"PERSIST EX 10", "syntax"},
		{"KEEPTTL", "syntax"},
		{"NX", "syntax"},
		{"GET", "syntax"},
		{"EX 10 foo", "syntax"},
	} {
		a, err := parseGetexArgs(splitArgs(c.args))
		got := "syntax"
		switch {
		case err != nil && err != ErrSyntax:
			t.Errorf("GETEX k %s: error %v, want a syntax error or none", c.args, err)
		case err != nil:
		case a.persist:
			got = "persist"
		case a.expOpt != nil:
			got = string(a.expOpt) + "=" + string(a.expVal)
		default:
			got = ""
		}
		if got != c.want {
			t.Errorf("GETEX k %s: %q, want %q", c.args, got, c.want)
		}
	}
}
