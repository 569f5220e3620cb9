package commands

import "bytes"

// globMaxStarGroups is how many '*' runs followed by more pattern a pattern
// may contain and still match anything. Redis bounds the recursion of its
// matcher at this depth (CVE-2024-31228) and reports "no match" past it, so
// KEYS with 50,000 copies of "*?" finds nothing even against a long enough
// key. The matcher here does not recurse, but it keeps the limit so that the
// answer stays the same as Redis's.
const globMaxStarGroups = 1000

// GlobMatch reports whether s matches the glob-style pattern, with the
// semantics of Redis's stringmatchlen (KEYS, SCAN MATCH, HSCAN, SSCAN, ZSCAN,
// PSUBSCRIBE):
//
//   - '*' matches any run of bytes and '?' exactly one byte;
//   - "[abc]" matches one byte of a set, "[^abc]" one byte outside it,
//     "[a-z]" a range, which may be written backwards ("[z-a]" is "[a-z]");
//     inside brackets '\' makes the next byte literal;
//   - "\x" matches x literally; a lone trailing '\' matches a backslash;
//   - a pattern that ends inside brackets acts as if they were closed there,
//     so "[ab" is "[ab]";
//   - nocase folds ASCII A-Z only, as tolower in the C locale does.
//
// Redis quirks kept on purpose, since clients see them:
//
//   - the empty string matches only the empty pattern, so "*" does not match
//     "" (KEYS and SCAN special-case the pattern "*" before matching; callers
//     must do the same);
//   - "[]" is an empty set that matches nothing, and "[^]" matches any byte;
//   - a '-' right after the first byte of a set always makes a range, even
//     when the upper bound is the closing ']': "[a-]" is the range ']'..'a'
//     and leaves the brackets unclosed;
//   - with nocase, an escaped byte inside brackets still compares exactly,
//     and a range is lower-cased after its ends are put in order, so
//     "[Z-a]" with nocase matches nothing;
//   - range bounds compare as C signed chars, as on the x86-64 builds of
//     Redis: bytes 0x80-0xFF sort below 0x00, so "[\x00-\xff]" matches only
//     0x00 and 0xFF; with nocase, glibc's tolower then maps 0x80-0xFE (but
//     not 0xFF) back above 0x7F, and GlobMatch follows that too;
//   - a pattern with more than 1000 '*' runs that are followed by anything
//     else never matches (see globMaxStarGroups).
//
// Redis's matcher recurses at every '*', and before 7.0.9 patterns like
// "a*a*a*a*b" took it exponential time. This one does not recurse: on a
// mismatch it retries only from the most recent '*', letting that star take
// one more byte, so it runs in O(len(pattern)*len(s)) time and constant
// space whatever the pattern. The answers are the same, because every
// element other than '*' consumes exactly one byte, so giving an earlier
// star more bytes can never succeed where the later one failed.
func GlobMatch(pattern, s []byte, nocase bool) bool {
	if len(s) == 0 {
		return len(pattern) == 0
	}
	if bytes.Count(pattern, []byte{'*'}) > globMaxStarGroups &&
		globStarGroups(pattern) > globMaxStarGroups {
		return false
	}

	pi, si := 0, 0
	// Where to resume after a mismatch: the pattern index just past the most
	// recent star run, and the string index that run currently ends at.
	// starP < 0 means no star has been seen yet, so a mismatch is final.
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(pattern) && pattern[pi] == '*' {
			for pi < len(pattern) && pattern[pi] == '*' {
				pi++
			}
			if pi == len(pattern) {
				return true // a trailing star takes the rest of s
			}
			starP, starS = pi, si
			continue
		}
		if pi < len(pattern) {
			if ok, next := globMatchOne(pattern, pi, s[si], nocase); ok {
				pi = next
				si++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		// Let the last star take one more byte and retry what follows it.
		starS++
		pi, si = starP, starS
	}
	// s is used up: only stars may remain, and they match the empty rest.
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

// GlobIsLiteral reports whether pattern has none of the bytes that are
// special to GlobMatch ('*', '?', '[', '\'), so that it matches exactly the
// one key equal to it and KEYS or SCAN can look that key up directly.
func GlobIsLiteral(pattern []byte) bool {
	return bytes.IndexAny(pattern, `*?[\`) < 0
}

// globMatchOne matches c against the single non-star element of pattern
// starting at index i, and returns the index just past that element. How far
// an element reaches depends only on the pattern, never on c, which is what
// lets GlobMatch retry an element against another byte.
func globMatchOne(pattern []byte, i int, c byte, nocase bool) (bool, int) {
	switch pattern[i] {
	case '?':
		return true, i + 1
	case '[':
		return globMatchSet(pattern, i+1, c, nocase)
	case '\\':
		if i+1 < len(pattern) {
			i++
		}
	}
	p := pattern[i]
	return p == c || (nocase && globLower(p) == globLower(c)), i + 1
}

// globMatchSet matches c against the bracket expression whose body starts
// at pattern[i], just after the '['. It returns the index past the closing
// ']', or len(pattern) if the brackets are never closed. The order of the
// cases is Redis's, and it decides the quirks listed on GlobMatch: an escape
// wins over ']', and ']' is checked before a range, so "[]" is empty.
func globMatchSet(pattern []byte, i int, c byte, nocase bool) (bool, int) {
	negate := i < len(pattern) && pattern[i] == '^'
	if negate {
		i++
	}
	matched := false
	for {
		switch {
		case len(pattern)-i >= 2 && pattern[i] == '\\':
			// Exact comparison even with nocase, as in Redis.
			if pattern[i+1] == c {
				matched = true
			}
			i += 2
		case i >= len(pattern):
			return matched != negate, len(pattern)
		case pattern[i] == ']':
			return matched != negate, i + 1
		case len(pattern)-i >= 3 && pattern[i+1] == '-':
			lo, hi := int(int8(pattern[i])), int(int8(pattern[i+2]))
			if lo > hi {
				lo, hi = hi, lo
			}
			x := int(int8(c))
			if nocase {
				lo, hi, x = globLowerInt(lo), globLowerInt(hi), globLowerInt(x)
			}
			if lo <= x && x <= hi {
				matched = true
			}
			i += 3
		default:
			if pattern[i] == c || (nocase && globLower(pattern[i]) == globLower(c)) {
				matched = true
			}
			i++
		}
	}
}

// globStarGroups counts the runs of '*' in pattern that are followed by
// another element; a run at the very end matches without Redis recursing, so
// it does not count towards globMaxStarGroups.
func globStarGroups(pattern []byte) int {
	groups := 0
	for i := 0; i < len(pattern); {
		switch pattern[i] {
		case '*':
			for i < len(pattern) && pattern[i] == '*' {
				i++
			}
			if i < len(pattern) {
				groups++
			}
		default:
			_, i = globMatchOne(pattern, i, 0, false)
		}
	}
	return groups
}

// globLower is tolower in the C locale.
func globLower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}

// globLowerInt is glibc's tolower in the C locale applied to a byte widened
// as a signed char, as Redis does in ranges. Besides folding A-Z, glibc's
// table maps -128..-2 to 128..254, while -1 (0xFF) is EOF and stays -1; so
// with nocase a range bound or byte from 0x80-0xFE moves above 0x7F again.
func globLowerInt(x int) int {
	switch {
	case 'A' <= x && x <= 'Z':
		return x + ('a' - 'A')
	case x < -1:
		return x + 256
	}
	return x
}
