package fsm

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// view runs fn on the state in one read transaction.
func (f *FSM) view(fn func(s state) error) error {
	err := f.db.View(func(tx *bolt.Tx) error {
		s, err := newState(tx)
		if err != nil {
			return err
		}
		return fn(s)
	})
	return closedErr(err)
}

// Topology returns every shard group with its nodes, read at one applied index (its Version).
// On a follower member it may lag the leader's; the API layer decides whether that matters.
func (f *FSM) Topology() (Topology, error) {
	var t Topology
	err := f.view(func(s state) error {
		var err error
		if t.Version, err = s.applied(); err != nil {
			return err
		}
		groups, err := s.allGroups()
		if err != nil {
			return err
		}
		nodes, err := s.allNodes()
		if err != nil {
			return err
		}
		byGroup := make(map[string][]Node)
		for _, n := range nodes { // in id order, so each group's list is too
			byGroup[n.Group] = append(byGroup[n.Group], n)
		}
		for _, g := range groups {
			v := GroupView{Group: g}
			for _, n := range byGroup[g.ID] {
				if n.ID == g.Primary {
					v.PrimaryNode = &n
				} else {
					v.Followers = append(v.Followers, n)
				}
			}
			if g.Primary != "" && v.PrimaryNode == nil {
				return fmt.Errorf("%w: shard group %q names primary %q, which is not registered", ErrCorrupt, g.ID, g.Primary)
			}
			t.Groups = append(t.Groups, v)
		}
		return nil
	})
	if err != nil {
		return Topology{}, fmt.Errorf("fsm: topology: %w", err)
	}
	return t, nil
}

// Node returns a registered node, or ErrNotFound.
func (f *FSM) Node(id string) (Node, error) {
	var n Node
	err := f.view(func(s state) error {
		var ok bool
		var err error
		if n, ok, err = s.node(id); err == nil && !ok {
			err = ErrNotFound
		}
		return err
	})
	if err != nil {
		return Node{}, fmt.Errorf("fsm: node %q: %w", id, err)
	}
	return n, nil
}

// Group returns a shard group with its nodes, or ErrNotFound.
func (f *FSM) Group(id string) (GroupView, error) {
	var v GroupView
	err := f.view(func(s state) error {
		g, ok, err := s.group(id)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		v.Group = g
		nodes, err := s.groupNodes(id)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.ID == g.Primary {
				v.PrimaryNode = &n
			} else {
				v.Followers = append(v.Followers, n)
			}
		}
		return nil
	})
	if err != nil {
		return GroupView{}, fmt.Errorf("fsm: shard group %q: %w", id, err)
	}
	return v, nil
}

// Members returns the recorded meta members, ordered by raft id.
func (f *FSM) Members() ([]Member, error) {
	var ms []Member
	err := f.view(func(s state) error {
		var err error
		ms, err = s.allMembers()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: members: %w", err)
	}
	return ms, nil
}
