package fsm

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// state is the replicated state seen through one bbolt transaction.
type state struct {
	meta, members, groups, nodes *bolt.Bucket
}

func newState(tx *bolt.Tx) (state, error) {
	s := state{
		meta:    tx.Bucket(bucketMeta),
		members: tx.Bucket(bucketMembers),
		groups:  tx.Bucket(bucketGroups),
		nodes:   tx.Bucket(bucketNodes),
	}
	if s.meta == nil || s.members == nil || s.groups == nil || s.nodes == nil {
		return state{}, fmt.Errorf("%w: a bucket is missing", ErrCorrupt)
	}
	return s, nil
}

func (s state) applied() (uint64, error) {
	v, ok := bytesU64(s.meta.Get(keyApplied))
	if !ok {
		return 0, fmt.Errorf("%w: applied index %x", ErrCorrupt, s.meta.Get(keyApplied))
	}
	return v, nil
}

// corrupt wraps a record's decode error: in the database it is corruption, not a bad entry.
func corrupt(bucket []byte, key []byte, err error) error {
	return fmt.Errorf("%w: %s/%q: %v", ErrCorrupt, bucket, key, err)
}

func (s state) group(id string) (Group, bool, error) {
	v := s.groups.Get([]byte(id))
	if v == nil {
		return Group{}, false, nil
	}
	g, err := decodeGroup(v)
	if err != nil {
		return Group{}, false, corrupt(bucketGroups, []byte(id), err)
	}
	return g, true, nil
}

func (s state) node(id string) (Node, bool, error) {
	v := s.nodes.Get([]byte(id))
	if v == nil {
		return Node{}, false, nil
	}
	n, err := decodeNode(v)
	if err != nil {
		return Node{}, false, corrupt(bucketNodes, []byte(id), err)
	}
	return n, true, nil
}

func (s state) member(id uint64) (Member, bool, error) {
	v := s.members.Get(u64bytes(id))
	if v == nil {
		return Member{}, false, nil
	}
	m, err := decodeMember(v)
	if err != nil {
		return Member{}, false, corrupt(bucketMembers, u64bytes(id), err)
	}
	return m, true, nil
}

// allGroups returns every group, ordered by id.
func (s state) allGroups() ([]Group, error) {
	var out []Group
	err := s.groups.ForEach(func(k, v []byte) error {
		g, err := decodeGroup(v)
		if err != nil {
			return corrupt(bucketGroups, k, err)
		}
		out = append(out, g)
		return nil
	})
	return out, err
}

// allNodes returns every node, ordered by id. The topology is tens of nodes, so scanning them
// all is cheaper to keep right than a group->nodes index bucket that every write must keep in
// step.
func (s state) allNodes() ([]Node, error) {
	var out []Node
	err := s.nodes.ForEach(func(k, v []byte) error {
		n, err := decodeNode(v)
		if err != nil {
			return corrupt(bucketNodes, k, err)
		}
		out = append(out, n)
		return nil
	})
	return out, err
}

// allMembers returns every member, ordered by raft id.
func (s state) allMembers() ([]Member, error) {
	var out []Member
	err := s.members.ForEach(func(k, v []byte) error {
		m, err := decodeMember(v)
		if err != nil {
			return corrupt(bucketMembers, k, err)
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

func (s state) groupNodes(group string) ([]Node, error) {
	all, err := s.allNodes()
	if err != nil {
		return nil, err
	}
	var out []Node
	for _, n := range all {
		if n.Group == group {
			out = append(out, n)
		}
	}
	return out, nil
}

func (s state) putGroup(g Group) error { return s.groups.Put([]byte(g.ID), encodeGroup(g)) }
func (s state) putNode(n Node) error   { return s.nodes.Put([]byte(n.ID), encodeNode(n)) }
func (s state) putMember(m Member) error {
	return s.members.Put(u64bytes(m.ID), encodeMember(m))
}
