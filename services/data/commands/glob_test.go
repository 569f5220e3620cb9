package commands

import (
	"bytes"
	"strings"
	"testing"
)

// globCase is one pattern/string pair and what Redis answers for it. The
// nocase=false expectations were taken from KEYS on a Redis 7.0 x86-64 server;
// the nocase ones from Redis's stringmatchlen built with glibc.
type globCase struct {
	pattern, s string
	nocase     bool
	want       bool
}

var globCases = []globCase{
	// Empty inputs: the empty string matches only the empty pattern.
	{"", "", false, true},
	{"", "a", false, false},
	{"a", "", false, false},
	{"*", "", false, false},
	{"**", "", false, false},
	{"?", "", false, false},
	{"?*", "", false, false},

	// '?' and '*'.
	{"?", "a", false, true},
	{"?", "ab", false, false},
	{"??", "ab", false, true},
	{"a?c", "abc", false, true},
	{"a?c", "ac", false, false},
	{"*", "abc", false, true},
	{"h*llo", "hllo", false, true},
	{"h*llo", "heeeello", false, true},
	{"h?llo", "hello", false, true},
	{"a*b", "ab", false, true},
	{"a*b", "a", false, false},
	{"*a", "a", false, true},
	{"*a", "ba", false, true},
	{"*a", "ab", false, false},
	{"a*", "a", false, true},
	{"a**", "a", false, true},
	{"a*?", "a", false, false},
	{"a*?", "ab", false, true},
	{"*?*", "x", false, true},
	{"a*b*c", "abxbxc", false, true},
	{"a*b*c", "abxbxcx", false, false},
	{"*a*a*a*b", "aaaaaaab", false, true},
	{"*a*a*a*b", "aaaaaaa", false, false},

	// From Redis's keyspace tests (KEYS with pattern, KEYS with hashtag).
	{"foo*", "foo_a", false, true},
	{"foo*", "key_x", false, false},
	{"foo*", "fo", false, false},
	{"{a}*", "{a}x", false, true},
	{"{a}*", "{b}a", false, false},
	{"*{b}*", "{b}a", false, true},
	{"*{b}*", "{a}x", false, false},

	// Brackets.
	{"h[ae]llo", "hallo", false, true},
	{"h[ae]llo", "hillo", false, false},
	{"h[^e]llo", "hallo", false, true},
	{"h[^e]llo", "hello", false, false},
	{"h[a-b]llo", "hbllo", false, true},
	{"h[a-b]llo", "hcllo", false, false},
	{"h[b-a]llo", "hallo", false, true},
	{"[z-a]", "m", false, true},
	{"[a-z]", "A", false, false},
	{"[Z-a]", "_", false, true},
	{"[a-c-e]", "d", false, false},
	{"[a-c-e]", "-", false, true},
	{"[a-c-e]", "e", false, true},
	{"[---]", "-", false, true},
	{"[*]", "*", false, true},
	{"[?]", "a", false, false},
	{"[[]", "[", false, true},
	{"[^-]", "-", false, false},
	{"[^-]", "+", false, true},

	// "[]" is an empty set and "[^]" matches any byte.
	{"[]", "]", false, false},
	{"[]]", "]", false, false},
	{"[]]", "]]", false, false},
	{"[]-a]", "-a]", false, false},
	{"[]-a]", "b", false, false},
	{"[^]", "x", false, true},
	{"[^]", "]", false, true},
	{"[^]]", "x]", false, true},
	{"[^]]", "x", false, false},

	// A '-' after the first byte of a set makes a range even up to ']',
	// and then the brackets are left open.
	{"[a-]", "]", false, true},
	{"[a-]", "_", false, true},
	{"[a-]", "-", false, false},
	{"[a-]", "b", false, false},
	{"[a-]x", "ax", false, false},
	{"[a-]x", "x", false, true},

	// Unclosed brackets end with the pattern.
	{"[ab", "a", false, true},
	{"[ab", "b", false, true},
	{"[ab", "c", false, false},
	{"[ab", "ab", false, false},
	{"[", "a", false, false},
	{"[", "[", false, false},
	{"[^", "a", false, true},
	{"[^", "^", false, true},
	{"[^a", "b", false, true},
	{"[^a", "a", false, false},
	{"*[", "a[", false, false},
	{"*[", "a", false, false},
	{"a*[b", "axb", false, true},
	{"a*[b", "axc", false, false},

	// Escapes, outside and inside brackets, and a lone trailing backslash.
	{`\*`, "*", false, true},
	{`\*`, "a", false, false},
	{`h\?llo`, "h?llo", false, true},
	{`h\?llo`, "hello", false, false},
	{`\a`, "a", false, true},
	{`\\`, `\`, false, true},
	{`\`, `\`, false, true},
	{`a\`, `a\`, false, true},
	{`a\`, "a", false, false},
	{`*\`, `a\`, false, true},
	{`*\`, "a", false, false},
	{`\**`, "*abc", false, true},
	{`\**`, "abc", false, false},
	{`[\]]`, "]", false, true},
	{`[\]`, "]", false, true},
	{`[\]`, `\`, false, false},
	{`[\`, `\`, false, true},
	{`[\`, "a", false, false},
	{`[\a-z]`, "-", false, true},
	{`[\a-z]`, "b", false, false},
	{`[\a-z]`, "z", false, true},
	{`[a\-z]`, "m", false, false},
	{`[a\-z]`, "-", false, true},

	// Range bounds compare as signed chars.
	{"[\x00-\xff]", "\x80", false, false},
	{"[\x00-\xff]", "\xff", false, true},
	{"[\x00-\xff]", "\x00", false, true},
	{"[\x00-\xff]", "a", false, false},
	{"[a-\xff]", "0", false, true},
	{"[a-\xff]", "b", false, false},
	{"[\x80-\xff]", "\x90", false, true},
	{"[\x7f-\x80]", "a", false, true},
	{"[\x80-^]", "\x90", false, true},

	// nocase folds ASCII letters only, after a range's ends are ordered,
	// and not for an escaped byte inside brackets.
	{"HELLO", "hello", true, true},
	{"HELLO", "hello", false, false},
	{"Foo*", "fOObar", true, true},
	{"h?LLO", "hello", true, true},
	{"*B*", "abc", true, true},
	{"*B*", "ac", true, false},
	{"[a-z]", "Q", true, true},
	{"[A-Z]", "q", true, true},
	{"[A]", "a", true, true},
	{"[^A]", "a", true, false},
	{`\A`, "a", true, true},
	{`[\A]`, "a", true, false},
	{`[\A]`, "A", true, true},
	{"[Z-a]", "_", true, false},
	{"[Z-a]", "z", true, false},
	{"[Z-a]", "Z", true, false},
	{"[@-[]", "a", true, false},
	{"[@-[]", "A", false, true},
	{"[@-[]", "{", true, false},
	{"\xc0", "\xe0", true, false},
	// glibc's tolower maps signed -128..-2 to 128..254 but leaves -1 alone.
	{"[\x80-^]", "*", true, false},
	{"[\x80-^]", "\x90", true, false},
	{"[\xff-^]", "*", true, true},
}

func TestGlobMatch(t *testing.T) {
	for _, c := range globCases {
		if got := GlobMatch([]byte(c.pattern), []byte(c.s), c.nocase); got != c.want {
			t.Errorf("GlobMatch(%q, %q, nocase=%v) = %v, want %v", c.pattern, c.s, c.nocase, got, c.want)
		}
		if got := refGlobMatch([]byte(c.pattern), []byte(c.s), c.nocase); got != c.want {
			t.Errorf("refGlobMatch(%q, %q, nocase=%v) = %v, want %v", c.pattern, c.s, c.nocase, got, c.want)
		}
	}
}

// TestGlobMatchPathological checks that patterns which made Redis's old
// recursive matcher exponential finish; the test would time out otherwise.
func TestGlobMatchPathological(t *testing.T) {
	// Redis's "Regression for pattern matching long nested loops".
	if GlobMatch([]byte(strings.Repeat("a*", 20)+"b"), bytes.Repeat([]byte("a"), 40), false) {
		t.Error("a*a*...*b matched a string of a's")
	}
	long := bytes.Repeat([]byte("a"), 10000)
	if GlobMatch([]byte(strings.Repeat("a*", 900)+"b"), long, false) {
		t.Error("900 stars then b matched a string of a's")
	}
	if !GlobMatch([]byte(strings.Repeat("a*", 900)+"a"), long, false) {
		t.Error("900 stars then a did not match a string of a's")
	}
	if GlobMatch([]byte(strings.Repeat("*?", 900)+"b"), long, true) {
		t.Error("*?*?...b matched a string of a's")
	}
}

// TestGlobMatchStarLimit checks the cap on '*' runs that Redis enforces by
// bounding its recursion depth at 1000.
func TestGlobMatchStarLimit(t *testing.T) {
	// Redis's "Regression for pattern matching very long nested loops".
	if GlobMatch([]byte(strings.Repeat("*?", 50000)), bytes.Repeat([]byte("a"), 50000), false) {
		t.Error(`50000 "*?" matched 50000 a's`)
	}
	for _, c := range []struct {
		pattern string
		s       string
		want    bool
	}{
		{strings.Repeat("*a", 1000), strings.Repeat("a", 1000), true},
		{strings.Repeat("*a", 1000), strings.Repeat("a", 1001), true},
		{strings.Repeat("*a", 1001), strings.Repeat("a", 1001), false},
		{strings.Repeat("*a", 1001), strings.Repeat("a", 2000), false},
		// A final run of stars does not count.
		{strings.Repeat("*a", 1000) + "*", strings.Repeat("a", 1001), true},
		{strings.Repeat("*a", 1000) + "***", strings.Repeat("a", 1000), true},
		// Neither do stars inside brackets or escaped ones.
		{strings.Repeat("[*]", 1001) + "*a", strings.Repeat("*", 1001) + "a", true},
		{strings.Repeat(`\*`, 1001) + "*a", strings.Repeat("*", 1001) + "a", true},
		{strings.Repeat("*a", 1001) + "*", strings.Repeat("a", 1002), false},
	} {
		if got := GlobMatch([]byte(c.pattern), []byte(c.s), false); got != c.want {
			t.Errorf("GlobMatch(%d-byte pattern, %d-byte string) = %v, want %v", len(c.pattern), len(c.s), got, c.want)
		}
	}
}

func TestGlobIsLiteral(t *testing.T) {
	for _, c := range []struct {
		pattern string
		want    bool
	}{
		{"", true},
		{"user:1000", true},
		{"{tag}key", true},
		{"a]b^c-d", true},
		{"\xff\x00", true},
		{"user:*", false},
		{"user:?", false},
		{"user:[12]", false},
		{`user\:1`, false},
	} {
		if got := GlobIsLiteral([]byte(c.pattern)); got != c.want {
			t.Errorf("GlobIsLiteral(%q) = %v, want %v", c.pattern, got, c.want)
		}
		if !c.want {
			continue
		}
		// A literal pattern matches itself and nothing else.
		p := []byte(c.pattern)
		if !GlobMatch(p, p, false) {
			t.Errorf("literal %q does not match itself", c.pattern)
		}
		for _, other := range []string{"", "x", c.pattern + "x", "x" + c.pattern} {
			if other != c.pattern && GlobMatch(p, []byte(other), false) {
				t.Errorf("literal %q matches %q", c.pattern, other)
			}
		}
	}
}

// FuzzGlobMatch compares GlobMatch with refGlobMatch on short inputs.
func FuzzGlobMatch(f *testing.F) {
	for _, c := range globCases {
		f.Add([]byte(c.pattern), []byte(c.s), c.nocase)
	}
	f.Fuzz(func(t *testing.T, pattern, s []byte, nocase bool) {
		// The reference backtracks without limit; keep it fast.
		if len(pattern) > 16 || len(s) > 16 {
			return
		}
		if got, want := GlobMatch(pattern, s, nocase), refGlobMatch(pattern, s, nocase); got != want {
			t.Fatalf("GlobMatch(%q, %q, nocase=%v) = %v, reference says %v", pattern, s, nocase, got, want)
		}
	})
}

// refGlobMatch is the model GlobMatch is checked against: a plain recursive
// backtracking matcher that follows the control flow of Redis's
// stringmatchlen byte by byte, reading past the end of the pattern as the
// NUL that ends an sds string. It has no protection against blowup, so it is
// only for short inputs.
func refGlobMatch(p, s []byte, nocase bool) bool {
	at := func(i int) byte {
		if i < len(p) {
			return p[i]
		}
		return 0
	}
	lower := func(c int) int { // glibc tolower, C locale, on a signed char
		if c >= 'A' && c <= 'Z' {
			return c + 32
		}
		if c < -1 {
			return c + 256
		}
		return c
	}
	var match func(pi, si int) bool
	match = func(pi, si int) bool {
		for pi < len(p) && si < len(s) {
			c := s[si]
			switch at(pi) {
			case '*':
				for pi < len(p) && at(pi+1) == '*' {
					pi++
				}
				if pi == len(p)-1 {
					return true
				}
				for ; si < len(s); si++ {
					if match(pi+1, si) {
						return true
					}
				}
				return false
			case '?':
				si++
			case '[':
				pi++
				not := at(pi) == '^'
				if not {
					pi++
				}
				matched := false
				for {
					if at(pi) == '\\' && len(p)-pi >= 2 {
						pi++
						if at(pi) == c {
							matched = true
						}
					} else if at(pi) == ']' {
						break
					} else if pi == len(p) {
						pi--
						break
					} else if len(p)-pi >= 3 && at(pi+1) == '-' {
						lo, hi, x := int(int8(at(pi))), int(int8(at(pi+2))), int(int8(c))
						if lo > hi {
							lo, hi = hi, lo
						}
						if nocase {
							lo, hi, x = lower(lo), lower(hi), lower(x)
						}
						pi += 2
						if x >= lo && x <= hi {
							matched = true
						}
					} else if at(pi) == c || (nocase && lower(int(int8(at(pi)))) == lower(int(int8(c)))) {
						matched = true
					}
					pi++
				}
				if matched == not {
					return false
				}
				si++
			default:
				if at(pi) == '\\' && len(p)-pi >= 2 {
					pi++
				}
				if at(pi) != c && !(nocase && lower(int(int8(at(pi)))) == lower(int(int8(c)))) {
					return false
				}
				si++
			}
			pi++
			if si == len(s) {
				for pi < len(p) && at(pi) == '*' {
					pi++
				}
			}
		}
		return pi == len(p) && si == len(s)
	}
	return match(0, 0)
}

func BenchmarkGlobMatch(b *testing.B) {
	for _, c := range []struct {
		name       string
		pattern, s []byte
	}{
		{"prefix", []byte("user:*"), []byte("user:12345:profile")},
		{"class", []byte("user:[0-9]*:pro?ile"), []byte("user:12345:profile")},
		{"adversarial", []byte(strings.Repeat("a*", 30) + "b"), bytes.Repeat([]byte("a"), 200)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				GlobMatch(c.pattern, c.s, false)
			}
		})
	}
}
