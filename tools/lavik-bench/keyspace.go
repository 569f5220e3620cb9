package main

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
)

// Key format: a 4-byte prefix and the key index as 12 zero-padded digits, 16 bytes in all.
// String records use "key:", hash records "hsh:", so a YCSB run never collides with the string
// keys loaded for GET/SET on the same server.
const (
	keyLen       = 16
	keyDigits    = 12
	maxKeys      = 999_999_999_999
	stringPrefix = "key:"
	hashPrefix   = "hsh:"

	// minValueSize is the smallest string value: the header "key:000000000001:v4294967295:"
	// (29 bytes) must fit, because verification reads the version back from it.
	minValueSize = 32
	// minFieldSize is the same for hash field values, whose header adds "f<field>:".
	minFieldSize = 40
	maxValueSize = 512 << 20
)

// appendKey appends the key with index i to dst.
func appendKey(dst []byte, prefix string, i int) []byte {
	dst = append(dst, prefix...)
	var d [keyDigits]byte
	for j := keyDigits - 1; j >= 0; j-- {
		d[j] = byte('0' + i%10)
		i /= 10
	}
	return append(dst, d[:]...)
}

// keyString returns the key with index i.
func keyString(prefix string, i int) string {
	var b [keyLen]byte
	return string(appendKey(b[:0], prefix, i))
}

// Values are a pure function of (key, version[, field]): a readable header that names them,
// "key:000000000042:v7:" (hash fields add "f3:"), then filler bytes taken from a fixed
// pseudo-random pool at an offset derived from the same inputs. Every process computes the same
// bytes, so a run can verify data another run loaded, and a server that returns the value of
// another key, an older version, a truncated or a corrupted value is caught. Generating a value
// is a copy, not a PRNG call per byte, so the generator costs little beside the server.
const (
	poolBits = 16
	poolSize = 1 << poolBits
	poolMask = poolSize - 1
)

// pool is the filler source; printable so values read well in redis-cli.
var pool = func() []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
	p := make([]byte, poolSize)
	s := uint64(0x1a2b3c4d5e6f7081)
	for i := range p {
		p[i] = alphabet[splitmix64(&s)&63]
	}
	return p
}()

// splitmix64 advances *s and returns the next output of the SplitMix64 generator.
func splitmix64(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// mix hashes a key index, version and field into 64 bits.
func mix(k int, v uint32, f int) uint64 {
	s := uint64(k)*0x9e3779b97f4a7c15 ^ uint64(v)<<32 ^ uint64(f)
	return splitmix64(&s)
}

// appendFiller appends n filler bytes starting at pool offset off.
func appendFiller(dst []byte, off uint64, n int) []byte {
	o := int(off & poolMask)
	for n > 0 {
		c := min(n, poolSize-o)
		dst = append(dst, pool[o:o+c]...)
		n -= c
		o = 0
	}
	return dst
}

// equalFiller reports whether b equals the len(b) filler bytes starting at pool offset off.
func equalFiller(b []byte, off uint64) bool {
	o := int(off & poolMask)
	for len(b) > 0 {
		c := min(len(b), poolSize-o)
		if !bytes.Equal(b[:c], pool[o:o+c]) {
			return false
		}
		b = b[c:]
		o = 0
	}
	return true
}

// ValueSpec is the size of string values: fixed when Min == Max, otherwise uniform in
// [Min, Max], drawn per (key, version) so the size is part of what verification checks.
type ValueSpec struct {
	Min, Max int
}

func (s ValueSpec) String() string {
	if s.Min == s.Max {
		return fmt.Sprintf("%d B", s.Min)
	}
	return fmt.Sprintf("%d-%d B", s.Min, s.Max)
}

func (s ValueSpec) mean() float64 { return float64(s.Min+s.Max) / 2 }

// recordKind says what a keyspace holds.
type recordKind int

const (
	kindString recordKind = iota
	kindHash
)

// Keyspace describes the records of one workload on one server and tracks, per key, which
// versions a read may legitimately return.
//
// Version tracking. The load phase writes version 0 of every key. A timed write takes the next
// version from issued[k] and, once acknowledged, may raise floor[k]. A read issued at time t must
// return a version v with floor[k] (read at t) <= v <= issued[k] (read at the reply). floor only
// advances when a write was acknowledged while no other write to the same key overlapped it
// (none in flight when it was issued, none issued before its reply): then every later value
// has a higher version, whatever order the server applied concurrent writes from different
// connections in. Rejected: partitioning keys between connections (it would distort the key
// distribution) and "last acknowledged version" as the bound (wrong under concurrent writers).
// Overlapping writes on a hot key leave floor behind, which only loosens the check.
type Keyspace struct {
	Prefix    string
	Kind      recordKind
	N         int
	Value     ValueSpec // string records
	Fields    int       // hash records: fields per record
	FieldSize int       // hash records: bytes per field value

	// Loaded is true once every key holds version 0 (or, with Unknown, some earlier run's data).
	Loaded bool
	// Unknown is set when the data was loaded by another process: versions then start from an
	// unknown state, so reads are checked for a well-formed value of the right key at any version
	// (until a write by this process raises the floor).
	Unknown bool

	issued []atomic.Uint32 // highest version handed out for writing; 0 after load
	floor  []atomic.Uint32 // Invariant: floor[k] <= issued[k]
	// inflight counts writes to k issued but not yet answered; guarded by locks[k&lockMask].
	inflight []uint32
	locks    [lockStripes]paddedMutex
}

const (
	lockStripes = 4096
	lockMask    = lockStripes - 1
)

type paddedMutex struct {
	sync.Mutex
	_ [56]byte
}

// newKeyspace returns a keyspace of n records with no version history.
func newKeyspace(prefix string, kind recordKind, n int) *Keyspace {
	return &Keyspace{
		Prefix:   prefix,
		Kind:     kind,
		N:        n,
		issued:   make([]atomic.Uint32, n),
		floor:    make([]atomic.Uint32, n),
		inflight: make([]uint32, n),
	}
}

// beginWrite returns the version a write of key k carries and whether no other write to k was
// in flight when it was issued.
func (ks *Keyspace) beginWrite(k int) (v uint32, clean bool) {
	mu := &ks.locks[k&lockMask]
	mu.Lock()
	v = ks.issued[k].Load() + 1
	ks.issued[k].Store(v)
	clean = ks.inflight[k] == 0
	ks.inflight[k]++
	mu.Unlock()
	return v, clean
}

// endWrite records the reply to a write begun with beginWrite; ok is false when the server
// rejected it or the reply never came.
func (ks *Keyspace) endWrite(k int, v uint32, clean, ok bool) {
	mu := &ks.locks[k&lockMask]
	mu.Lock()
	ks.inflight[k]--
	if ok && clean && ks.issued[k].Load() == v && ks.floor[k].Load() < v {
		ks.floor[k].Store(v)
	}
	mu.Unlock()
}

// readFloor is the lowest version a read of k issued now may return.
func (ks *Keyspace) readFloor(k int) uint32 { return ks.floor[k].Load() }

// readCeil is the highest version a read of k answered now may return.
func (ks *Keyspace) readCeil(k int) uint32 {
	if ks.Unknown {
		return ^uint32(0)
	}
	return ks.issued[k].Load()
}

// valueSize is the length of version v of string key k.
func (ks *Keyspace) valueSize(k int, v uint32) int {
	s := ks.Value
	if s.Min == s.Max {
		return s.Min
	}
	return s.Min + int(mix(k, v, -1)%uint64(s.Max-s.Min+1))
}

// appendHeader appends "<key>:v<version>:" and, for fields (f >= 0), "f<field>:".
func (ks *Keyspace) appendHeader(dst []byte, k int, v uint32, f int) []byte {
	dst = appendKey(dst, ks.Prefix, k)
	dst = append(dst, ':', 'v')
	dst = appendUint(dst, uint64(v))
	dst = append(dst, ':')
	if f >= 0 {
		dst = append(dst, 'f')
		dst = appendUint(dst, uint64(f))
		dst = append(dst, ':')
	}
	return dst
}

// appendValue appends version v of string key k.
func (ks *Keyspace) appendValue(dst []byte, k int, v uint32) []byte {
	n := ks.valueSize(k, v)
	start := len(dst)
	dst = ks.appendHeader(dst, k, v, -1)
	return appendFiller(dst, mix(k, v, 0), n-(len(dst)-start))
}

// appendField appends field f of version v of hash key k.
func (ks *Keyspace) appendField(dst []byte, k int, v uint32, f int) []byte {
	start := len(dst)
	dst = ks.appendHeader(dst, k, v, f)
	return appendFiller(dst, mix(k, v, f+1), ks.FieldSize-(len(dst)-start))
}

// fieldName returns the name of field f: "field0", "field1", ... as in YCSB.
func fieldName(f int) string { return "field" + string(appendUint(nil, uint64(f))) }

func appendUint(dst []byte, u uint64) []byte {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	return append(dst, b[i:]...)
}

// valueError describes a reply that is not a value the server may legitimately return.
type valueError struct{ msg string }

func (e *valueError) Error() string { return e.msg }

func wrongValue(format string, a ...any) error {
	return &valueError{msg: fmt.Sprintf(format, a...)}
}

// parseHeader checks that b starts with the header of key k (and field f when f >= 0) and
// returns the version it names and the header length.
func (ks *Keyspace) parseHeader(b []byte, k int, f int) (v uint32, n int, err error) {
	var kb [keyLen]byte
	key := appendKey(kb[:0], ks.Prefix, k)
	if len(b) < keyLen+3 || !bytes.Equal(b[:keyLen], key) || b[keyLen] != ':' || b[keyLen+1] != 'v' {
		return 0, 0, wrongValue("%s: value does not start with its key: %q", key, preview(b))
	}
	i := keyLen + 2
	var u uint64
	for ; i < len(b) && b[i] != ':'; i++ {
		if b[i] < '0' || b[i] > '9' || i-keyLen-2 >= 10 {
			return 0, 0, wrongValue("%s: malformed version in %q", key, preview(b))
		}
		u = u*10 + uint64(b[i]-'0')
	}
	if i == keyLen+2 || i == len(b) || u > uint64(^uint32(0)) {
		return 0, 0, wrongValue("%s: malformed version in %q", key, preview(b))
	}
	i++
	if f >= 0 {
		want := append([]byte{'f'}, appendUint(nil, uint64(f))...)
		want = append(want, ':')
		if !bytes.HasPrefix(b[i:], want) {
			return 0, 0, wrongValue("%s: field %d holds %q", key, f, preview(b))
		}
		i += len(want)
	}
	return uint32(u), i, nil
}

// checkValue verifies a GET reply for key k against the versions [lo, hi] it may hold. The
// header, version and length are always checked (cheap); full also compares every byte.
func (ks *Keyspace) checkValue(b []byte, k int, lo, hi uint32, full bool) error {
	v, h, err := ks.parseHeader(b, k, -1)
	if err != nil {
		return err
	}
	if v < lo || v > hi {
		return wrongValue("%s: version %d returned, expected %d..%d", keyString(ks.Prefix, k), v, lo, hi)
	}
	if want := ks.valueSize(k, v); len(b) != want {
		return wrongValue("%s: version %d has %d bytes, expected %d", keyString(ks.Prefix, k), v, len(b), want)
	}
	if full && !equalFiller(b[h:], mix(k, v, 0)) {
		return wrongValue("%s: version %d: value bytes differ from what was written", keyString(ks.Prefix, k), v)
	}
	return nil
}

// checkField verifies one field value of hash key k and returns its version.
func (ks *Keyspace) checkField(b []byte, k, f int, full bool) (uint32, error) {
	v, h, err := ks.parseHeader(b, k, f)
	if err != nil {
		return 0, err
	}
	if len(b) != ks.FieldSize {
		return 0, wrongValue("%s: field%d has %d bytes, expected %d", keyString(ks.Prefix, k), f, len(b), ks.FieldSize)
	}
	if full && !equalFiller(b[h:], mix(k, v, f+1)) {
		return 0, wrongValue("%s: field%d version %d: bytes differ from what was written", keyString(ks.Prefix, k), f, v)
	}
	return v, nil
}

func preview(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}
