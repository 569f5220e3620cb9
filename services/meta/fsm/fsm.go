package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// StateMachine is what the raft layer (package raftnode) drives. FSM implements it.
type StateMachine interface {
	// Apply applies the committed entry at index. Entries come in index order; an index at or
	// below Applied() is a no-op. The index is persisted in the same transaction as the effect.
	Apply(index uint64, data []byte) (result []byte, err error)
	// Applied is the index of the last applied entry, 0 for a new state machine.
	Applied() uint64
	// Snapshot returns the whole state as of Applied(), and that index.
	Snapshot() (data []byte, index uint64, err error)
	// Restore replaces the whole state by a snapshot taken at index, atomically.
	Restore(data []byte, index uint64) error
}

var _ StateMachine = (*FSM)(nil)

// Bucket and key names: the bbolt layout, described in doc.go.
var (
	bucketMeta    = []byte("meta")
	bucketMembers = []byte("members")
	bucketGroups  = []byte("groups")
	bucketNodes   = []byte("nodes")
	keyApplied    = []byte("applied")
	keyFormat     = []byte("format")
)

// formatVersion is the version of the bbolt layout and of the snapshot encoding. Open and
// Restore refuse any other.
const formatVersion = 1

// Options configures Open.
type Options struct {
	// LockTimeout is how long Open waits for the file lock another process (or another FSM in
	// this one) holds. Zero means one second. Too low: a restart racing the previous process's
	// exit fails spuriously. Too high: a misconfigured second instance hangs instead of failing.
	LockTimeout time.Duration
}

// FSM is lavik-meta's replicated state machine: topology and authority in a bbolt file.
//
// Apply, Restore and Close are serialized by mu; the read methods are not, and read a
// consistent state from their own bbolt read transaction.
type FSM struct {
	mu sync.Mutex
	db *bolt.DB
	// applied mirrors the applied index stored in the meta bucket. Invariant: equal to it
	// outside Apply and Restore (it is set only after their transaction commits).
	applied atomic.Uint64
}

// Open opens (creating if needed) the state machine's database at path.
func Open(path string, opts Options) (*FSM, error) {
	timeout := opts.LockTimeout
	if timeout == 0 {
		timeout = time.Second
	}
	if timeout < 0 {
		return nil, fmt.Errorf("fsm: LockTimeout %v is negative", timeout)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("fsm: open %s: %w", path, err)
	}
	var applied uint64
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			// A new database: nothing else may be there.
			if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				return fmt.Errorf("%w: bucket %q without meta bucket", ErrCorrupt, name)
			}); err != nil {
				return err
			}
			if meta, err = tx.CreateBucket(bucketMeta); err != nil {
				return err
			}
			if err := meta.Put(keyFormat, u64bytes(formatVersion)); err != nil {
				return err
			}
			if err := meta.Put(keyApplied, u64bytes(0)); err != nil {
				return err
			}
			for _, name := range [][]byte{bucketMembers, bucketGroups, bucketNodes} {
				if _, err := tx.CreateBucket(name); err != nil {
					return err
				}
			}
		}
		var err error
		applied, err = readMeta(tx)
		return err
	})
	if err != nil {
		_ = db.Close() // the open error is the one to report
		return nil, fmt.Errorf("fsm: open %s: %w", path, err)
	}
	f := &FSM{db: db}
	f.applied.Store(applied)
	return f, nil
}

// readMeta checks the format and the buckets and returns the applied index.
func readMeta(tx *bolt.Tx) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, fmt.Errorf("%w: no meta bucket", ErrCorrupt)
	}
	format, ok := bytesU64(meta.Get(keyFormat))
	if !ok || format != formatVersion {
		return 0, fmt.Errorf("%w: format %x, this version reads %d", ErrCorrupt, meta.Get(keyFormat), formatVersion)
	}
	applied, ok := bytesU64(meta.Get(keyApplied))
	if !ok {
		return 0, fmt.Errorf("%w: applied index %x", ErrCorrupt, meta.Get(keyApplied))
	}
	for _, name := range [][]byte{bucketMembers, bucketGroups, bucketNodes} {
		if tx.Bucket(name) == nil {
			return 0, fmt.Errorf("%w: no %s bucket", ErrCorrupt, name)
		}
	}
	return applied, nil
}

// Close closes the database. Later calls of any method return ErrClosed.
func (f *FSM) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.db.Close(); err != nil {
		return fmt.Errorf("fsm: close: %w", err)
	}
	return nil
}

// Applied returns the index of the last applied entry.
func (f *FSM) Applied() uint64 { return f.applied.Load() }

// Apply applies the entry at index. data is an Encode'd command, or empty for an entry that
// carries none (raft's empty entry at a leader change), which only advances the index.
//
// The result is an encoded Result (DecodeResult), or nil for a no-op (an index already
// applied, or empty data). A refused command is applied too: the index advances and the
// result says why. Apply returns an error, and changes nothing, only for data that does not
// decode (ErrDecode) or a storage failure; either must stop the raft loop, since applying past
// it would make this member differ from the others.
//
// Indexes need not be consecutive: the raft layer may leave out entries that carry no command
// (conf changes, for instance); the index only has to grow.
func (f *FSM) Apply(index uint64, data []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index <= f.applied.Load() {
		return nil, nil
	}
	var cmd Command
	if len(data) > 0 {
		var err error
		if cmd, err = Decode(data); err != nil {
			return nil, fmt.Errorf("fsm: entry %d: %w", index, err)
		}
	}
	var result []byte
	err := f.db.Update(func(tx *bolt.Tx) error {
		s, err := newState(tx)
		if err != nil {
			return err
		}
		if cmd != nil {
			r, err := s.apply(cmd)
			if err != nil {
				return err
			}
			result = r.Encode()
		}
		return s.meta.Put(keyApplied, u64bytes(index))
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: apply entry %d: %w", index, closedErr(err))
	}
	f.applied.Store(index)
	return result, nil
}

// closedErr turns bbolt's "not open" into ErrClosed.
func closedErr(err error) error {
	if errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

func u64bytes(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func bytesU64(b []byte) (uint64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}
