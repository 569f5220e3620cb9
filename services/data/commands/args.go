package commands

import (
	"bytes"
	"math"
	"strings"
)

// Argument parsing shared by several families.

// intArg parses a Redis integer argument.
func intArg(b []byte) (int64, error) {
	n, ok := ParseInt(b)
	if !ok {
		return 0, ErrNotInt
	}
	return n, nil
}

// dbArg parses a database index that must exist.
func dbArg(c *Ctx, b []byte) (int, error) {
	n, err := intArg(b)
	if err != nil {
		return 0, err
	}
	if n < 0 || n >= int64(c.KS.Databases()) {
		return 0, ErrDBIndex
	}
	return int(n), nil
}

// is reports whether arg equals the keyword kw, case-insensitively (kw is upper case).
func is(arg []byte, kw string) bool {
	return len(arg) == len(kw) && bytes.EqualFold(arg, []byte(kw))
}

func upper(b []byte) string { return strings.ToUpper(string(b)) }

// expireUnit says how an expire argument is given.
type expireUnit int

const (
	unitSeconds expireUnit = iota
	unitMillis
)

// expireAt converts an expire argument to absolute unix milliseconds with Redis's checks
// (getExpireMillisecondsOrReply): the value must be positive and must not overflow when
// scaled or added to now; otherwise "invalid expire time in '<cmd>' command".
func expireAt(cmd string, arg []byte, unit expireUnit, absolute bool, now int64) (int64, error) {
	n, err := intArg(arg)
	if err != nil {
		return 0, err
	}
	if n <= 0 || (unit == unitSeconds && n > math.MaxInt64/1000) {
		return 0, ErrInvalidExpire(cmd)
	}
	if unit == unitSeconds {
		n *= 1000
	}
	if !absolute {
		if n > math.MaxInt64-now {
			return 0, ErrInvalidExpire(cmd)
		}
		n += now
	}
	return n, nil
}

// keyArgs returns the keyspace keys for argv positions in the client's database.
func (c *Ctx) keyArgs(positions ...int) []kspKey {
	out := make([]kspKey, len(positions))
	for i, p := range positions {
		out[i] = kspKey{DB: c.DB(), Key: c.Args[p]}
	}
	return out
}
