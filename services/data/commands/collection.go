package commands

import (
	"bytes"

	"github.com/lavikdb/lavik/services/data/keyspace"
)

// A collection is a hash or a set as one record: decoded whole, changed in memory and written
// back whole by the commands of its type.
type collection interface {
	len() int
	encode() []byte
}

// readValue reads the collection of type typ at key for a command that only reads it: found
// false when the key does not exist, ErrWrongType when it holds another type.
func readValue[T collection](c *Ctx, key []byte, typ uint8, decode func([]byte) (T, error)) (v T, found bool, err error) {
	if p := c.Pre; p != nil && p.DB == c.DB() && bytes.Equal(p.Key, key) {
		switch {
		case p.Err != nil:
			return v, false, p.Err
		case !p.Found:
			return v, false, nil
		case p.Meta.Type != typ:
			return v, false, ErrWrongType
		}
		v, err = decode(bytes.Clone(p.Val))
		return v, err == nil, err
	}
	found, err = c.KS.Get(c.Sess, c.DB(), key, func(val keyspace.Value, m keyspace.Meta) error {
		if m.Type != typ {
			return ErrWrongType
		}
		b, err := val.Bytes()
		if err != nil {
			return err
		}
		// The read's buffer goes back to its pool when Get returns; the decoded value points
		// into what it decodes.
		v, err = decode(bytes.Clone(b))
		return err
	})
	return v, found && err == nil, err
}

// updateValue runs fn on the collection of type typ at key inside a transaction: v is the
// collection (empty() when the key does not exist, exists false), and fn reports whether it
// changed it. A changed collection is written back with its expire time, or removed when it is
// empty.
func updateValue[T collection](c *Ctx, key []byte, typ uint8, decode func([]byte) (T, error), empty func() T, fn func(v T, exists bool) (bool, error)) error {
	return c.KS.Update(c.Sess, []kspKey{{DB: c.DB(), Key: key}}, func(tx *keyspace.Tx) error {
		vals, err := txValues(tx, 1, typ, decode)
		if err != nil {
			return err
		}
		m, exists := tx.Meta(0)
		v := vals[0]
		if !exists {
			v = empty()
		}
		changed, err := fn(v, exists)
		if err != nil || !changed {
			return err
		}
		return putValue(tx, 0, v, m.ExpireAt, typ)
	})
}

// putValue writes v as key i of tx, or removes the key when v is empty.
func putValue[T collection](tx *keyspace.Tx, i int, v T, expireAt int64, typ uint8) error {
	if v.len() == 0 {
		tx.Delete(i)
		return nil
	}
	tx.Put(i, v.encode(), expireAt, typ)
	return nil
}

// txValues decodes keys 0..n-1 of tx as collections of type typ: the zero T for a missing key,
// ErrWrongType when one holds another type. Every value on disk is asked for at once, so that
// the transaction fetches them in one round.
func txValues[T collection](tx *keyspace.Tx, n int, typ uint8, decode func([]byte) (T, error)) ([]T, error) {
	out := make([]T, n)
	var need error
	for i := 0; i < n; i++ {
		m, ok := tx.Meta(i)
		if !ok {
			continue
		}
		if m.Type != typ {
			return nil, ErrWrongType
		}
		b, _, err := tx.Value(i)
		if err != nil {
			if need == nil {
				need = err
			}
			continue
		}
		if out[i], err = decode(b); err != nil {
			return nil, err
		}
	}
	if need != nil {
		return nil, need
	}
	return out, nil
}
