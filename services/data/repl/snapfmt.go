package repl

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The full resync's payload. Redis sends an RDB file as one bulk ("$<len>" or, streamed,
// "$EOF:<40 random bytes>" ... the same 40 bytes); Lavik sends its own snapshot in the streamed
// form, so redis-cli --replica and other tools that skip the payload work unchanged, and only a
// Lavik follower reads it:
//
//	"LVKSNAP" 0x01
//	per key:  'K' db(uvarint) type(1) expire-at(varint, unix ms, 0 none) key(uvarint len, bytes) value(uvarint len, bytes)
//	libraries: 'F' len(uvarint) FUNCTION's libraries (script.EncodeLibraries), once, before the keys
//	end:      'E' keys(uvarint) crc32c(4, little-endian) of every byte before the 'E'
//
// The libraries travel with the keys as Redis's RDB carries them: a follower that joins, or is
// rebuilt, after FUNCTION LOAD has them, and has them still once promoted. A snapshot without
// an 'F' record (an older primary's) holds no library.
//
// A value is the type's whole encoding, as the keyspace stores a value that is not grouped: the
// follower stores it by the same Put a client's write makes, which groups it as its own
// group-threshold says.

var snapMagic = []byte("LVKSNAP\x01")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// maxSnapValue bounds one value of a snapshot, as proto-max-bulk-len bounds a client's.
const maxSnapValue = 1 << 32

// ErrBadSnapshot is a payload a follower cannot load.
var ErrBadSnapshot = errors.New("repl: bad snapshot payload")

// snapWriter encodes a snapshot.
type snapWriter struct {
	w    *bufio.Writer
	crc  uint32
	keys uint64
	tmp  []byte
}

func newSnapWriter(w *bufio.Writer) *snapWriter {
	sw := &snapWriter{w: w}
	sw.write(snapMagic)
	return sw
}

func (sw *snapWriter) write(b []byte) error {
	sw.crc = crc32.Update(sw.crc, crcTable, b)
	_, err := sw.w.Write(b)
	return err
}

// key writes one key; its value's bytes may be given in pieces by each.
func (sw *snapWriter) key(db int, typ uint8, expireAt int64, key, val []byte) error {
	t := append(sw.tmp[:0], 'K')
	t = binary.AppendUvarint(t, uint64(db))
	t = append(t, typ)
	t = binary.AppendVarint(t, expireAt)
	t = binary.AppendUvarint(t, uint64(len(key)))
	t = append(t, key...)
	t = binary.AppendUvarint(t, uint64(len(val)))
	sw.tmp = t
	if err := sw.write(t); err != nil {
		return err
	}
	sw.keys++
	return sw.write(val)
}

// functions writes the libraries' record.
func (sw *snapWriter) functions(payload []byte) error {
	t := append(sw.tmp[:0], 'F')
	t = binary.AppendUvarint(t, uint64(len(payload)))
	sw.tmp = t
	if err := sw.write(t); err != nil {
		return err
	}
	return sw.write(payload)
}

// end writes the end record.
func (sw *snapWriter) end() error {
	t := append(sw.tmp[:0], 'E')
	t = binary.AppendUvarint(t, sw.keys)
	if err := sw.write(t); err != nil {
		return err
	}
	var c [4]byte
	binary.LittleEndian.PutUint32(c[:], sw.crc)
	_, err := sw.w.Write(c[:])
	return err
}

// snapKey is one key a snapReader read.
type snapKey struct {
	DB       int
	Type     uint8
	ExpireAt int64
	Key, Val []byte
}

// snapReader decodes a snapshot.
type snapReader struct {
	r    *bufio.Reader
	crc  uint32
	keys uint64
	done bool
	// funcs is the libraries' record, once read (nil: none yet).
	funcs []byte
}

func newSnapReader(r *bufio.Reader) (*snapReader, error) {
	sr := &snapReader{r: r}
	m := make([]byte, len(snapMagic))
	if err := sr.full(m); err != nil {
		return nil, err
	}
	if string(m) != string(snapMagic) {
		return nil, fmt.Errorf("%w: not a Lavik snapshot (the primary is not a Lavik node of this version?)", ErrBadSnapshot)
	}
	return sr, nil
}

func (sr *snapReader) full(b []byte) error {
	if _, err := io.ReadFull(sr.r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	sr.crc = crc32.Update(sr.crc, crcTable, b)
	return nil
}

func (sr *snapReader) byte() (byte, error) {
	var b [1]byte
	err := sr.full(b[:])
	return b[0], err
}

func (sr *snapReader) uvarint() (uint64, error) {
	var x uint64
	for shift := 0; shift < 64; shift += 7 {
		b, err := sr.byte()
		if err != nil {
			return 0, err
		}
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return x, nil
		}
	}
	return 0, fmt.Errorf("%w: varint overflows", ErrBadSnapshot)
}

// next reads the next key; it returns io.EOF after the end record, whose count and checksum it
// verified.
func (sr *snapReader) next(k *snapKey) error {
	if sr.done {
		return io.EOF
	}
	kind, err := sr.byte()
	if err != nil {
		return err
	}
	if kind == 'F' && sr.funcs == nil && sr.keys == 0 {
		n, err := sr.uvarint()
		if err != nil {
			return err
		}
		if n > maxSnapValue {
			return fmt.Errorf("%w: libraries of %d bytes", ErrBadSnapshot, n)
		}
		sr.funcs = make([]byte, n)
		if err := sr.full(sr.funcs); err != nil {
			return err
		}
		if kind, err = sr.byte(); err != nil {
			return err
		}
	}
	switch kind {
	case 'E':
		n, err := sr.uvarint()
		if err != nil {
			return err
		}
		want := sr.crc
		var c [4]byte
		if _, err := io.ReadFull(sr.r, c[:]); err != nil {
			return io.ErrUnexpectedEOF
		}
		if got := binary.LittleEndian.Uint32(c[:]); got != want {
			return fmt.Errorf("%w: checksum %08x, computed %08x", ErrBadSnapshot, got, want)
		}
		if n != sr.keys {
			return fmt.Errorf("%w: %d keys announced, %d read", ErrBadSnapshot, n, sr.keys)
		}
		sr.done = true
		return io.EOF
	case 'K':
	default:
		return fmt.Errorf("%w: record kind %q", ErrBadSnapshot, kind)
	}
	db, err := sr.uvarint()
	if err != nil {
		return err
	}
	typ, err := sr.byte()
	if err != nil {
		return err
	}
	ux, err := sr.uvarint()
	if err != nil {
		return err
	}
	exp := int64(ux >> 1)
	if ux&1 != 0 {
		exp = ^exp
	}
	kl, err := sr.uvarint()
	if err != nil {
		return err
	}
	if kl > maxSnapValue {
		return fmt.Errorf("%w: key of %d bytes", ErrBadSnapshot, kl)
	}
	k.Key = grow(k.Key, int(kl))
	if err := sr.full(k.Key); err != nil {
		return err
	}
	vl, err := sr.uvarint()
	if err != nil {
		return err
	}
	if vl > maxSnapValue {
		return fmt.Errorf("%w: value of %d bytes", ErrBadSnapshot, vl)
	}
	k.Val = grow(k.Val, int(vl))
	if err := sr.full(k.Val); err != nil {
		return err
	}
	if db > 255 {
		return fmt.Errorf("%w: database %d", ErrBadSnapshot, db)
	}
	k.DB, k.Type, k.ExpireAt = int(db), typ, exp
	sr.keys++
	return nil
}

// grow returns b resized to n, reusing its array when it is large enough (and not huge).
func grow(b []byte, n int) []byte {
	if cap(b) >= n && cap(b) <= 4*n+4096 {
		return b[:n]
	}
	return make([]byte, n)
}
