package fsm

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"
)

// The snapshot is this package's own encoding rather than bbolt's file (tx.WriteTo): a bbolt
// file's bytes depend on its history (free pages, transaction ids, page order), so two members
// with equal state would send different snapshots, and the file format would tie the snapshot
// to the bbolt version. The records in key order make the bytes a function of the state alone,
// which the determinism test checks directly.
//
//	message Snapshot { uint64 format = 1; uint64 applied = 2; repeated MemberRecord members = 3;
//	  repeated GroupRecord groups = 4; repeated NodeRecord nodes = 5; }
const (
	snapFormat  protowire.Number = 1
	snapApplied protowire.Number = 2
	snapMember  protowire.Number = 3
	snapGroup   protowire.Number = 4
	snapNode    protowire.Number = 5
)

// Snapshot returns the whole state as of Applied(), and that index.
func (f *FSM) Snapshot() ([]byte, uint64, error) {
	var b []byte
	var index uint64
	err := f.view(func(s state) error {
		var err error
		if index, err = s.applied(); err != nil {
			return err
		}
		b = appendUint(nil, snapFormat, formatVersion)
		b = appendUint(b, snapApplied, index)
		// Records are copied as stored, after a decode check: they were written by this
		// package's canonical encoders, so equal state gives equal bytes.
		for _, bk := range []struct {
			num    protowire.Number
			bucket *bolt.Bucket
			name   []byte
			check  func([]byte) error
		}{
			{snapMember, s.members, bucketMembers, func(v []byte) error { _, err := decodeMember(v); return err }},
			{snapGroup, s.groups, bucketGroups, func(v []byte) error { _, err := decodeGroup(v); return err }},
			{snapNode, s.nodes, bucketNodes, func(v []byte) error { _, err := decodeNode(v); return err }},
		} {
			err := bk.bucket.ForEach(func(k, v []byte) error {
				if err := bk.check(v); err != nil {
					return corrupt(bk.name, k, err)
				}
				b = appendMessage(b, bk.num, v)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("fsm: snapshot: %w", err)
	}
	return b, index, nil
}

// snapshotState is a decoded snapshot.
type snapshotState struct {
	applied uint64
	members []Member
	groups  []Group
	nodes   []Node
}

func decodeSnapshot(data []byte) (snapshotState, error) {
	const what = "snapshot"
	fs, err := wireFields(data, what)
	if err != nil {
		return snapshotState{}, err
	}
	var st snapshotState
	var format uint64
	for _, f := range fs {
		typ := protowire.BytesType
		if f.num == snapFormat || f.num == snapApplied {
			typ = protowire.VarintType
		}
		if err := f.want(typ, what); err != nil {
			return snapshotState{}, err
		}
		switch f.num {
		case snapFormat:
			format = f.v
		case snapApplied:
			st.applied = f.v
		case snapMember:
			m, err := decodeMember(f.b)
			if err != nil {
				return snapshotState{}, err
			}
			st.members = append(st.members, m)
		case snapGroup:
			g, err := decodeGroup(f.b)
			if err != nil {
				return snapshotState{}, err
			}
			st.groups = append(st.groups, g)
		case snapNode:
			n, err := decodeNode(f.b)
			if err != nil {
				return snapshotState{}, err
			}
			st.nodes = append(st.nodes, n)
		default:
			return snapshotState{}, f.unknown(what)
		}
	}
	if format != formatVersion {
		return snapshotState{}, fmt.Errorf("%w: snapshot format %d, this version reads %d", ErrDecode, format, formatVersion)
	}
	return st, nil
}

// Restore replaces the whole state by data, a Snapshot taken at index. It decodes all of data
// first and then replaces the state in one bbolt transaction, so a failure or a crash leaves
// the old state or the new one, never a mix. An undecodable snapshot, or one taken at another
// index than index, is refused with the state unchanged.
func (f *FSM) Restore(data []byte, index uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := decodeSnapshot(data)
	if err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	if st.applied != index {
		return fmt.Errorf("fsm: restore: snapshot is at index %d, not %d", st.applied, index)
	}
	err = f.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMembers, bucketGroups, bucketNodes} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		s, err := newState(tx)
		if err != nil {
			return err
		}
		for _, m := range st.members {
			if err := s.putMember(m); err != nil {
				return err
			}
		}
		for _, g := range st.groups {
			if err := s.putGroup(g); err != nil {
				return err
			}
		}
		for _, n := range st.nodes {
			if err := s.putNode(n); err != nil {
				return err
			}
		}
		return s.meta.Put(keyApplied, u64bytes(index))
	})
	if err != nil {
		return fmt.Errorf("fsm: restore: %w", closedErr(err))
	}
	f.applied.Store(index)
	return nil
}
