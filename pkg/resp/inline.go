package resp

// splitInline splits an inline request line into arguments by the rules of Redis's
// sdssplitargs, appending them to args. It reports false on unbalanced quotes.
//
// The rules, which telnet users and test suites rely on:
//   - arguments are separated by runs of C isspace characters (space, \t, \n, \v, \f, \r),
//     but an unquoted argument ends only at a space, \t, \n or \r;
//   - a double or single quote may open anywhere in an argument: a"b c" is the single
//     argument `ab c` (but "a"b is invalid, see below);
//   - inside double quotes \xHH (two hex digits) is a byte, \n \r \t \b \a are the control
//     characters, and a backslash before any other byte is that byte;
//   - inside single quotes only \' is an escape;
//   - a closing quote must be followed by a space or the end of the line;
//   - a pair of quotes with nothing between them is an empty argument (Redis 7 keeps it).
//
// The line is rewritten in place: every argument is written at or before the position it was
// read from, because quotes and escapes only ever shrink it. The returned arguments alias line.
func splitInline(args [][]byte, line []byte) ([][]byte, bool) {
	n := len(line)
	p, w := 0, 0 // read and write positions; invariant: w <= p
	for {
		for p < n && isSpace(line[p]) {
			p++
		}
		if p == n {
			return args, true
		}
		tok := w
		inDouble, inSingle := false, false
	token:
		for {
			switch {
			case inDouble:
				if p == n {
					return args, false
				}
				c := line[p]
				switch {
				case c == '\\' && p+3 < n && line[p+1] == 'x' && isHex(line[p+2]) && isHex(line[p+3]):
					line[w] = unhex(line[p+2])<<4 | unhex(line[p+3])
					w++
					p += 4
				case c == '\\' && p+1 < n:
					line[w] = unescape(line[p+1])
					w++
					p += 2
				case c == '"':
					if p+1 < n && !isSpace(line[p+1]) {
						return args, false
					}
					p++
					break token
				default:
					line[w] = c
					w++
					p++
				}
			case inSingle:
				if p == n {
					return args, false
				}
				c := line[p]
				switch {
				case c == '\\' && p+1 < n && line[p+1] == '\'':
					line[w] = '\''
					w++
					p += 2
				case c == '\'':
					if p+1 < n && !isSpace(line[p+1]) {
						return args, false
					}
					p++
					break token
				default:
					line[w] = c
					w++
					p++
				}
			default:
				if p == n {
					break token
				}
				switch c := line[p]; c {
				case ' ', '\n', '\r', '\t':
					p++
					break token
				case '"':
					inDouble = true
					p++
				case '\'':
					inSingle = true
					p++
				default:
					line[w] = c
					w++
					p++
				}
			}
		}
		args = append(args, line[tok:w:w])
	}
}

// isSpace is C's isspace in the "C" locale.
func isSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	default:
		return c - '0'
	}
}

// unescape maps the byte after a backslash inside double quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	default:
		return c
	}
}
