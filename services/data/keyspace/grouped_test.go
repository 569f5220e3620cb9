package keyspace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// groupTestOpts are testOpts in which values not strings longer than groupMin bytes are grouped.
func groupTestOpts(fs vfs.FS, clk *testClock, groupMin int) Options {
	opts := testOpts(fs, clk)
	opts.GroupThreshold = groupMin
	return opts
}

// withPatchModes runs test twice: with directories one record up to patchMinDir, as the
// server runs, and with every directory a base and patches.
func withPatchModes(t *testing.T, test func(t *testing.T)) {
	t.Run("default", test)
	t.Run("patches", func(t *testing.T) {
		setPatchMin(t, 0)
		test(t)
	})
}

// groupState is what a transaction and the readers see of a key that may be grouped.
type groupState struct {
	found   bool
	grouped bool
	meta    Meta // Tx.Meta
	dirMeta []byte
	lens    []int
	sums    [][]byte
	groups  [][]byte // Tx.Groups of every group
	whole   []byte   // Tx.Value
}

// readGroupState reads key's state through a transaction: Grouped, Dir, Groups of every group,
// Meta and Value.
func readGroupState(t testing.TB, ks *Keyspace, db int, key string) groupState {
	t.Helper()
	var st groupState
	err := ks.Update(ks.NewSession(), []Key{{DB: db, Key: []byte(key)}}, func(tx *Tx) error {
		st = groupState{}
		st.meta, st.found = tx.Meta(0)
		if !st.found {
			if tx.Grouped(0) {
				return errors.New("a missing key is grouped")
			}
			return nil
		}
		st.grouped = tx.Grouped(0)
		d, err := tx.Dir(0)
		if err != nil {
			return err
		}
		if st.grouped != (d != nil) {
			return fmt.Errorf("Grouped %v, but Dir returned %v", st.grouped, d)
		}
		if d != nil {
			js := make([]int, len(d.Groups))
			for j := range js {
				js[j] = j
			}
			gs, err := tx.Groups(0, js)
			if err != nil {
				return err
			}
			st.dirMeta = bytes.Clone(d.Meta)
			for j, g := range d.Groups {
				if g.Len != len(gs[j]) {
					return fmt.Errorf("group %d: Len %d, payload of %d bytes", j, g.Len, len(gs[j]))
				}
				st.lens = append(st.lens, g.Len)
				st.sums = append(st.sums, bytes.Clone(g.Sum))
				st.groups = append(st.groups, bytes.Clone(gs[j]))
			}
		}
		v, ok, err := tx.Value(0)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("Value of an existing key: missing")
		}
		st.whole = bytes.Clone(v)
		return nil
	})
	if err != nil {
		t.Fatalf("reading %d/%q in a transaction: %v", db, key, err)
	}
	return st
}

// getGrouped reads key's whole value with Get, by Value.Bytes and by Value.Each, which must agree.
func getGrouped(t testing.TB, ks *Keyspace, db int, key string) ([]byte, Meta, bool) {
	t.Helper()
	var out []byte
	var meta Meta
	ok, err := ks.Get(nil, db, []byte(key), func(v Value, m Meta) error {
		b, err := v.Bytes()
		if err != nil {
			return err
		}
		var each []byte
		if err := v.Each(func(p []byte) error { each = append(each, p...); return nil }); err != nil {
			return err
		}
		if !bytes.Equal(each, b) {
			return fmt.Errorf("Value.Each gave %d bytes, Value.Bytes %d", len(each), len(b))
		}
		out, meta = bytes.Clone(b), m
		return nil
	})
	if err != nil {
		t.Fatalf("get %d/%q: %v", db, key, err)
	}
	return out, meta, ok
}

// putValue puts val whole with Tx.Put and waits for it.
func putValue(t testing.TB, ks *Keyspace, se *Session, db int, key string, val []byte, exp int64, vtype uint8) {
	t.Helper()
	err := ks.Update(se, []Key{{DB: db, Key: []byte(key)}}, func(tx *Tx) error {
		tx.Put(0, val, exp, vtype)
		return nil
	})
	if err == nil {
		err = se.Wait()
	}
	if err != nil {
		t.Fatalf("put %d/%q (%d bytes): %v", db, key, len(val), err)
	}
}

// plainCuts is how a value without a codec is grouped: pieces of GroupTarget bytes.
func plainCuts(v []byte) [][]byte {
	t := GroupTarget(int64(len(v)))
	var out [][]byte
	for off := 0; off < len(v); off += t {
		out = append(out, v[off:min(off+t, len(v))])
	}
	return out
}

// patterned is n bytes that differ with seed and position (so that a group misplaced or
// taken from another value shows).
func patterned(n int, seed uint64) []byte {
	b := make([]byte, n)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// TestGroupedRoundTrip puts values of a type not a string of sizes around GroupMin and of a few
// MB whole and reads them back (Get, a transaction's Value and groups, Lookup), then again after
// a restart that replays the whole log and after one from a checkpoint.
func TestGroupedRoundTrip(t *testing.T) { withPatchModes(t, testGroupedRoundTrip) }

func testGroupedRoundTrip(t *testing.T) {
	for _, ckpt := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", ckpt), func(t *testing.T) {
			clk := newTestClock()
			mem := vfs.NewMem()
			opts := groupTestOpts(mem, clk, 0) // the default GroupMin
			opts.Shards, opts.SegmentSize = 2, 1<<20
			if !ckpt {
				opts.CheckpointInterval = -1
			}
			ks := mustOpen(t, opts)
			defer func() { mustClose(t, ks) }()
			if ks.GroupMin() != GroupMin {
				t.Fatalf("GroupMin() = %d, want %d", ks.GroupMin(), GroupMin)
			}
			se := ks.NewSession()
			sizes := []int{GroupMin - 1, GroupMin, GroupMin + 1, 1 << 20, 3<<20 + 7}
			types := []uint8{TypeList, TypeHash, TypeSet, TypeZSet, TypeList}
			vals := map[string][]byte{}
			vtypes := map[string]uint8{}
			exp := clk.After(1 << 40)
			for i, n := range sizes {
				k := fmt.Sprint("v", n)
				vals[k], vtypes[k] = patterned(n, uint64(i+1)), types[i]
				e := int64(0)
				if i%2 == 1 {
					e = exp
				}
				putValue(t, ks, se, 0, k, vals[k], e, types[i])
			}
			check := func(when string) {
				t.Helper()
				for i, n := range sizes {
					k := fmt.Sprint("v", n)
					want := vals[k]
					wantExp := int64(0)
					if i%2 == 1 {
						wantExp = exp
					}
					got, m, ok := getGrouped(t, ks, 0, k)
					if !ok || !bytes.Equal(got, want) {
						t.Fatalf("%s: Get(%q) = %d bytes (present %v), want %d bytes", when, k, len(got), ok, len(want))
					}
					if m.Type != vtypes[k] || m.ExpireAt != wantExp {
						t.Fatalf("%s: Get(%q) meta %+v, want type %d expire-at %d", when, k, m, vtypes[k], wantExp)
					}
					lm, ok := ks.Lookup(nil, 0, []byte(k))
					if !ok || lm.Type != vtypes[k] || lm.ExpireAt != wantExp {
						t.Fatalf("%s: Lookup(%q) = %+v %v", when, k, lm, ok)
					}
					st := readGroupState(t, ks, 0, k)
					if !st.found || !bytes.Equal(st.whole, want) || st.meta.Type != vtypes[k] || st.meta.ExpireAt != wantExp {
						t.Fatalf("%s: %q in a transaction: found %v, %d bytes, meta %+v", when, k, st.found, len(st.whole), st.meta)
					}
					if st.grouped != (n > GroupMin) {
						t.Fatalf("%s: %q of %d bytes: grouped %v", when, k, n, st.grouped)
					}
					if st.grouped {
						cuts := plainCuts(want)
						if len(st.groups) != len(cuts) || len(st.dirMeta) != 0 {
							t.Fatalf("%s: %q: %d groups, meta %q; want the %d plain cuts", when, k, len(st.groups), st.dirMeta, len(cuts))
						}
						for j := range cuts {
							if !bytes.Equal(st.groups[j], cuts[j]) || len(st.sums[j]) != 0 {
								t.Fatalf("%s: %q: group %d differs from the plain cut", when, k, j)
							}
						}
					}
					if isChunked(ks, 0, k) != (n > GroupMin) {
						t.Fatalf("%s: %q of %d bytes: stored chunked %v", when, k, n, !st.grouped)
					}
				}
				if err := checkAccounting(ks); err != nil {
					t.Fatalf("%s: %v", when, err)
				}
			}
			check("after the puts")
			restart := func(when string) {
				t.Helper()
				mustClose(t, ks)
				ks = mustOpen(t, opts)
				se = ks.NewSession()
				if ckpt && ckptStats(ks).LoadedEntries == 0 {
					t.Fatalf("%s: no checkpoint loaded", when)
				}
				check(when)
			}
			if ckpt {
				if err := ks.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
			restart("after a restart")
			// Overwrite across the threshold both ways, then restart again.
			k1, k2 := fmt.Sprint("v", 1<<20), fmt.Sprint("v", GroupMin-1)
			vals[k1], vals[k2] = patterned(100, 77), patterned(2<<20, 78)
			putValue(t, ks, se, 0, k1, vals[k1], exp, vtypes[k1])
			putValue(t, ks, se, 0, k2, vals[k2], 0, vtypes[k2])
			if got, _, _ := getGrouped(t, ks, 0, k1); !bytes.Equal(got, vals[k1]) {
				t.Fatalf("a grouped value overwritten by a small one reads %d bytes", len(got))
			}
			if st := readGroupState(t, ks, 0, k1); st.grouped {
				t.Fatal("a grouped value overwritten by a small one is still grouped")
			}
			if st := readGroupState(t, ks, 0, k2); !st.grouped || !bytes.Equal(st.whole, vals[k2]) {
				t.Fatal("a small value overwritten by a large one is not grouped")
			}
			if ckpt {
				if err := ks.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
			mustClose(t, ks)
			ks = mustOpen(t, opts)
			se = ks.NewSession()
			for k, v := range vals {
				if got, _, ok := getGrouped(t, ks, 0, k); !ok || !bytes.Equal(got, v) {
					t.Fatalf("after overwrites and a restart: %q = %d bytes (present %v), want %d", k, len(got), ok, len(v))
				}
			}
			if err := checkAccounting(ks); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// gref is the model of one key in TestGroupedModel.
type gref struct {
	vtype   uint8
	exp     int64
	grouped bool
	meta    []byte
	groups  [][]byte
	sums    [][]byte
	whole   []byte // an ungrouped value
}

func (r *gref) value() []byte {
	if !r.grouped {
		return r.whole
	}
	return bytes.Join(r.groups, nil)
}

// checkGroupRef compares key's state in ks with the model r (nil: absent).
func checkGroupRef(t testing.TB, ks *Keyspace, key string, r *gref, when string) {
	t.Helper()
	if err := groupRefErr(t, ks, key, r); err != nil {
		t.Fatalf("%s: %v", when, err)
	}
}

// groupRefErr reports how key's state in ks differs from the model r (nil: absent). A read that
// fails fails the test.
func groupRefErr(t testing.TB, ks *Keyspace, key string, r *gref) error {
	t.Helper()
	st := readGroupState(t, ks, 0, key)
	got, m, ok := getGrouped(t, ks, 0, key)
	lm, lok := ks.Lookup(nil, 0, []byte(key))
	if r == nil {
		if st.found || ok || lok {
			return fmt.Errorf("%q exists (tx %v, Get %v, Lookup %v), want it absent", key, st.found, ok, lok)
		}
		return nil
	}
	want := r.value()
	if !st.found || !ok || !lok {
		return fmt.Errorf("%q missing (tx %v, Get %v, Lookup %v)", key, st.found, ok, lok)
	}
	if !bytes.Equal(got, want) || !bytes.Equal(st.whole, want) {
		return fmt.Errorf("%q: Get %d bytes, Value %d bytes, want %d (equal %v, %v)", key, len(got), len(st.whole), len(want),
			bytes.Equal(got, want), bytes.Equal(st.whole, want))
	}
	for _, mm := range []Meta{st.meta, m, lm} {
		if mm.Type != r.vtype || mm.ExpireAt != r.exp {
			return fmt.Errorf("%q: meta %+v, want type %d expire-at %d", key, mm, r.vtype, r.exp)
		}
	}
	if st.grouped != r.grouped {
		return fmt.Errorf("%q: grouped %v, want %v", key, st.grouped, r.grouped)
	}
	if !r.grouped {
		return nil
	}
	if !bytes.Equal(st.dirMeta, r.meta) {
		return fmt.Errorf("%q: directory meta %q, want %q", key, st.dirMeta, r.meta)
	}
	if len(st.groups) != len(r.groups) {
		return fmt.Errorf("%q: %d groups, want %d", key, len(st.groups), len(r.groups))
	}
	for j := range r.groups {
		if st.lens[j] != len(r.groups[j]) || !bytes.Equal(st.groups[j], r.groups[j]) || !bytes.Equal(st.sums[j], r.sums[j]) {
			return fmt.Errorf("%q: group %d: %d bytes sum %q, want %d bytes sum %q (payload equal %v)", key, j,
				st.lens[j], st.sums[j], len(r.groups[j]), r.sums[j], bytes.Equal(st.groups[j], r.groups[j]))
		}
	}
	return nil
}

// TestGroupedModel edits grouped values through Tx.Dir, Tx.Groups and Tx.PutGroups (groups
// replaced, inserted and deleted, meta, expiry and type changed), puts them whole across the
// threshold, deletes them, against a model of their groups, with restarts (from checkpoints and
// by full replays) and collections of random segments between the edits. Last, the collector
// gives back the space of what was overwritten and then of everything deleted.
func TestGroupedModel(t *testing.T) { withPatchModes(t, testGroupedModel) }

func testGroupedModel(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	clk := newTestClock()
	const groupMin = 6000
	opts := groupTestOpts(vfs.NewMem(), clk, groupMin)
	opts.Shards, opts.SegmentSize = 2, 32<<10
	ks := mustOpen(t, opts)
	defer func() { mustClose(t, ks) }()
	se := ks.NewSession()
	keys := []string{"a", "b", "c", "d"}
	model := map[string]*gref{}
	var gen uint64
	newData := func() []byte {
		gen++
		n := 1 + rng.IntN(2500)
		if rng.IntN(20) == 0 {
			n = 0 // an empty group
		}
		return patterned(n, seed^gen<<20)
	}
	newSum := func() []byte {
		if rng.IntN(3) == 0 {
			return nil
		}
		gen++
		return []byte(fmt.Sprintf("sum%d", gen))
	}
	newExp := func() int64 {
		if rng.IntN(2) == 0 {
			return 0
		}
		return clk.After(1_000_000 + rng.Int64N(1_000_000))
	}
	vtypes := []uint8{TypeList, TypeHash, TypeSet}
	update := func(k string, fn func(tx *Tx) error) {
		t.Helper()
		err := ks.Update(se, []Key{{Key: []byte(k)}}, fn)
		if err == nil {
			err = se.Wait()
		}
		if err != nil {
			t.Fatalf("update of %q: %v", k, err)
		}
	}
	// putGroups writes the model's next state of k: each group is kept from the directory read
	// (from >= 0, its index there) or new.
	type plan struct {
		from []int
		data [][]byte
		sums [][]byte
	}
	putGroups := func(k string, r *gref, p plan, wantOld int) {
		t.Helper()
		update(k, func(tx *Tx) error {
			if wantOld >= 0 {
				d, err := tx.Dir(0)
				if err != nil {
					return err
				}
				if d == nil || len(d.Groups) != wantOld {
					return fmt.Errorf("directory of %d groups, the model has %d", len(d.Groups), wantOld)
				}
				nd := &Directory{Meta: r.meta}
				for j, f := range p.from {
					if f >= 0 {
						g := d.Groups[f]
						g.Sum = p.sums[j]
						nd.Groups = append(nd.Groups, g)
					} else {
						nd.Groups = append(nd.Groups, NewGroup(p.data[j], p.sums[j]))
					}
				}
				return tx.PutGroups(0, nd, r.exp, r.vtype)
			}
			nd := &Directory{Meta: r.meta}
			for j := range p.data {
				nd.Groups = append(nd.Groups, NewGroup(p.data[j], p.sums[j]))
			}
			return tx.PutGroups(0, nd, r.exp, r.vtype)
		})
	}
	keep := func(r *gref) plan {
		p := plan{}
		for j := range r.groups {
			p.from, p.data, p.sums = append(p.from, j), append(p.data, r.groups[j]), append(p.sums, r.sums[j])
		}
		return p
	}
	apply := func(r *gref, p plan) {
		r.groups, r.sums = slices.Clone(p.data), slices.Clone(p.sums)
	}
	restarts, collections := 0, 0
	const ops = 400
	for i := 0; i < ops; i++ {
		k := keys[rng.IntN(len(keys))]
		r := model[k]
		var what string
		switch op := rng.IntN(12); {
		case r == nil || op == 0:
			// A new grouped value over whatever is there (nothing, a grouped value or a
			// small one): every group new.
			what = "create"
			nr := &gref{vtype: vtypes[rng.IntN(len(vtypes))], exp: newExp(), grouped: true}
			if rng.IntN(2) == 0 {
				nr.meta = []byte(fmt.Sprintf("meta%d", i))
			}
			var p plan
			for range 1 + rng.IntN(12) {
				p.from, p.data, p.sums = append(p.from, -1), append(p.data, newData()), append(p.sums, newSum())
			}
			putGroups(k, nr, p, -1)
			apply(nr, p)
			model[k] = nr
		case !r.grouped:
			// A small value grouped again by PutGroups: its bytes cut anywhere.
			what = "regroup"
			v := r.whole
			var p plan
			for off := 0; off < len(v); {
				n := min(len(v)-off, 1+rng.IntN(3000))
				p.from, p.data, p.sums = append(p.from, -1), append(p.data, v[off:off+n]), append(p.sums, newSum())
				off += n
			}
			if len(p.data) == 0 {
				p.from, p.data, p.sums = append(p.from, -1), append(p.data, newData()), append(p.sums, newSum())
			}
			r.grouped, r.whole = true, nil
			putGroups(k, r, p, -1)
			apply(r, p)
		case op <= 2:
			what = "replace a group"
			p := keep(r)
			j := rng.IntN(len(p.from))
			p.from[j], p.data[j], p.sums[j] = -1, newData(), newSum()
			putGroups(k, r, p, len(r.groups))
			apply(r, p)
		case op == 3:
			what = "insert a group"
			p := keep(r)
			j := rng.IntN(len(p.from) + 1)
			p.from, p.data, p.sums = slices.Insert(p.from, j, -1), slices.Insert(p.data, j, newData()), slices.Insert(p.sums, j, newSum())
			putGroups(k, r, p, len(r.groups))
			apply(r, p)
		case op == 4:
			what = "delete a group"
			p := keep(r)
			j := rng.IntN(len(p.from))
			p.from, p.data, p.sums = slices.Delete(p.from, j, j+1), slices.Delete(p.data, j, j+1), slices.Delete(p.sums, j, j+1)
			putGroups(k, r, p, len(r.groups))
			if len(p.from) == 0 {
				what = "delete the last group: the key"
				delete(model, k)
			} else {
				apply(r, p)
			}
		case op == 5:
			// Several changes in one directory, one of them read, modified and written.
			what = "edit several groups"
			p := keep(r)
			j := rng.IntN(len(p.from))
			var old []byte
			update(k, func(tx *Tx) error {
				gs, err := tx.Groups(0, []int{j})
				if err != nil {
					return err
				}
				old = bytes.Clone(gs[0])
				return nil
			})
			if !bytes.Equal(old, r.groups[j]) {
				t.Fatalf("op %d: group %d of %q read %d bytes, the model has %d", i, j, k, len(old), len(r.groups[j]))
			}
			p.from[j], p.data[j] = -1, append(old, '+')
			p.from, p.data, p.sums = append(p.from, -1), append(p.data, newData()), append(p.sums, newSum())
			if len(p.from) > 2 {
				d := rng.IntN(len(p.from) - 1)
				p.from, p.data, p.sums = slices.Delete(p.from, d, d+1), slices.Delete(p.data, d, d+1), slices.Delete(p.sums, d, d+1)
			}
			p.from = slices.Insert(p.from, 0, -1)
			p.data, p.sums = slices.Insert(p.data, 0, newData()), slices.Insert(p.sums, 0, newSum())
			putGroups(k, r, p, len(r.groups))
			apply(r, p)
		case op == 6:
			what = "change meta and type"
			p := keep(r)
			r.meta = nil
			if rng.IntN(3) > 0 {
				r.meta = []byte(fmt.Sprintf("meta-%d-%s", i, bytes.Repeat([]byte("m"), rng.IntN(200))))
			}
			r.vtype = vtypes[rng.IntN(len(vtypes))]
			putGroups(k, r, p, len(r.groups))
		case op == 7:
			what = "change expiry by PutGroups"
			r.exp = newExp()
			putGroups(k, r, keep(r), len(r.groups))
		case op == 8:
			what = "change expiry by SetExpire"
			exp := newExp()
			update(k, func(tx *Tx) error { tx.SetExpire(0, exp); return nil })
			r.exp = exp
		case op == 9:
			what = "delete"
			update(k, func(tx *Tx) error {
				if !tx.Delete(0) {
					return errors.New("Delete: the key did not exist")
				}
				return nil
			})
			delete(model, k)
		default:
			// A whole put: grouped again by plain cuts, or one record below the threshold.
			n := rng.IntN(3 * groupMin)
			if rng.IntN(3) == 0 {
				n = groupMin - 1 + rng.IntN(3)
			}
			gen++
			v := patterned(n, seed^gen<<20)
			nr := &gref{vtype: vtypes[rng.IntN(len(vtypes))], exp: newExp(), grouped: n > groupMin}
			what = fmt.Sprintf("whole put of %d bytes", n)
			if nr.grouped {
				nr.groups = plainCuts(v)
				nr.sums = make([][]byte, len(nr.groups))
			} else {
				nr.whole = v
			}
			putValue(t, ks, se, 0, k, v, nr.exp, nr.vtype)
			model[k] = nr
		}
		when := fmt.Sprintf("op %d (%s of %q, seed %d)", i, what, k, seed)
		for _, k := range keys {
			checkGroupRef(t, ks, k, model[k], when)
		}
		if i%25 == 24 {
			n, err := reclaimRandom(ks, rng, 3)
			if err != nil {
				t.Fatalf("%s: collecting: %v", when, err)
			}
			collections += n
			if err := checkAccounting(ks); err != nil {
				t.Fatalf("%s: after collecting: %v", when, err)
			}
			for _, k := range keys {
				checkGroupRef(t, ks, k, model[k], when+", collected")
			}
		}
		if i%60 == 59 {
			ckpt := rng.IntN(2) == 0
			if ckpt {
				// (The keyspace running may have checkpoints off, after a full replay.)
				if err := ks.Checkpoint(); err != nil && !errors.Is(err, errCheckpointsOff) {
					t.Fatal(err)
				}
			}
			mustClose(t, ks)
			o := opts
			if !ckpt {
				o.CheckpointInterval = -1 // replay the whole log
			}
			ks = mustOpen(t, o)
			se = ks.NewSession()
			restarts++
			for _, k := range keys {
				checkGroupRef(t, ks, k, model[k], fmt.Sprintf("%s, restarted (checkpoint %v)", when, ckpt))
			}
			if err := checkAccounting(ks); err != nil {
				t.Fatalf("%s, restarted: %v", when, err)
			}
		}
	}
	t.Logf("%d ops, %d restarts, %d segments collected at random", ops, restarts, collections)

	before := ks.Stats(nil)
	reclaimUntilIdle(t, ks)
	st := ks.Stats(nil)
	t.Logf("collector: disk %d -> %d bytes, %d -> %d segments, live %d", before.Log.DiskBytes, st.Log.DiskBytes, before.Log.Segments, st.Log.Segments, st.Reclaim.LiveBytes)
	for _, k := range keys {
		checkGroupRef(t, ks, k, model[k], "after reclaiming")
	}
	if st.Log.DiskBytes > st.Reclaim.LiveBytes*3/2+int64(2*opts.Shards)*opts.SegmentSize {
		t.Fatalf("after reclaiming: disk %d bytes, live %d", st.Log.DiskBytes, st.Reclaim.LiveBytes)
	}
	// Overwrite groups with the collector idle, then let it give the space back.
	for i := 0; i < 150; i++ {
		k := keys[i%len(keys)]
		r := model[k]
		if r == nil || !r.grouped {
			continue
		}
		p := keep(r)
		j := rng.IntN(len(p.from))
		p.from[j], p.data[j], p.sums[j] = -1, newData(), newSum()
		putGroups(k, r, p, len(r.groups))
		apply(r, p)
	}
	before = ks.Stats(nil)
	reclaimUntilIdle(t, ks)
	st = ks.Stats(nil)
	t.Logf("after group overwrites: disk %d -> %d bytes, %d -> %d segments, live %d", before.Log.DiskBytes, st.Log.DiskBytes, before.Log.Segments, st.Log.Segments, st.Reclaim.LiveBytes)
	if st.Log.DiskBytes >= before.Log.DiskBytes || st.Log.Segments >= before.Log.Segments {
		t.Fatalf("the collector freed nothing of the overwritten groups: disk %d -> %d bytes, %d -> %d segments",
			before.Log.DiskBytes, st.Log.DiskBytes, before.Log.Segments, st.Log.Segments)
	}
	if st.Log.DiskBytes > st.Reclaim.LiveBytes*3/2+int64(2*opts.Shards)*opts.SegmentSize {
		t.Fatalf("after reclaiming overwritten groups: disk %d bytes, live %d", st.Log.DiskBytes, st.Reclaim.LiveBytes)
	}
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	se = ks.NewSession()
	for _, k := range keys {
		checkGroupRef(t, ks, k, model[k], "after reclaiming and a restart")
	}
	live := ks.Stats(nil).Reclaim.LiveBytes
	for _, k := range keys {
		update(k, func(tx *Tx) error { tx.Delete(0); return nil })
	}
	reclaimUntilIdle(t, ks)
	st = ks.Stats(nil)
	t.Logf("deleted: disk %d bytes, %d segments, live %d (was %d)", st.Log.DiskBytes, st.Log.Segments, st.Reclaim.LiveBytes, live)
	if st.Reclaim.LiveBytes != 0 || st.Log.DiskBytes > int64(opts.Shards)*opts.SegmentSize {
		t.Fatalf("after deleting everything: disk %d bytes, live %d; want at most a segment a shard", st.Log.DiskBytes, st.Reclaim.LiveBytes)
	}
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	if n := ks.DBSize(nil, 0); n != 0 {
		t.Fatalf("%d keys came back: %v", n, keysOf(ks, 0))
	}
}

// putDir writes key as a grouped value of fresh groups (PutGroups over whatever is there) and
// waits for it; it returns the model of what it wrote.
func putDir(t testing.TB, ks *Keyspace, se *Session, key string, meta []byte, groups [][]byte, exp int64, vtype uint8) *gref {
	t.Helper()
	r := &gref{vtype: vtype, exp: exp, grouped: true, meta: meta, groups: groups, sums: make([][]byte, len(groups))}
	for j := range groups {
		r.sums[j] = []byte(fmt.Sprint("s", j))
	}
	err := ks.Update(se, []Key{{Key: []byte(key)}}, func(tx *Tx) error {
		d := &Directory{Meta: meta}
		for j, g := range groups {
			d.Groups = append(d.Groups, NewGroup(g, r.sums[j]))
		}
		return tx.PutGroups(0, d, exp, vtype)
	})
	if err == nil {
		err = se.Wait()
	}
	if err != nil {
		t.Fatalf("PutGroups of %q: %v", key, err)
	}
	return r
}

// readDirManifest is key's directory as a transaction reads it.
func readDirManifest(t testing.TB, ks *Keyspace, key string) *manifest {
	t.Helper()
	var m *manifest
	err := ks.Update(ks.NewSession(), []Key{{Key: []byte(key)}}, func(tx *Tx) error {
		if _, err := tx.Dir(0); err != nil {
			return err
		}
		m = tx.keys[0].man
		return nil
	})
	if err != nil || m == nil {
		t.Fatalf("directory of %q: %v", key, err)
	}
	return m
}

// replaceGroup replaces group j of key's grouped value (type vtype) with data in a transaction
// that reads the directory and that group alone, and checks the group read was old (nil: any).
func replaceGroup(t testing.TB, ks *Keyspace, se *Session, key string, j int, data []byte, vtype uint8, old []byte) {
	t.Helper()
	err := ks.Update(se, []Key{{Key: []byte(key)}}, func(tx *Tx) error {
		d, err := tx.Dir(0)
		if err != nil {
			return err
		}
		gs, err := tx.Groups(0, []int{j})
		if err != nil {
			return err
		}
		if old != nil && !bytes.Equal(gs[0], old) {
			return fmt.Errorf("group %d read %q", j, gs[0])
		}
		nd := &Directory{Meta: d.Meta, Groups: slices.Clone(d.Groups)}
		nd.Groups[j] = NewGroup(data, d.Groups[j].Sum)
		return tx.PutGroups(0, nd, 0, vtype)
	})
	if err == nil {
		err = se.Wait()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestGroupedEngineCounters: of a grouped value of 2000 groups, a transaction that reads its
// directory and one group and replaces that group reads exactly those two records and appends
// exactly two (the group and the new directory); Lookup reads nothing; a whole read reads the
// directory and every group.
func TestGroupedEngineCounters(t *testing.T) { withPatchModes(t, testGroupedEngineCounters) }

func testGroupedEngineCounters(t *testing.T) {
	if invariants {
		t.Skip("counts reads, and the invariants build reads records back")
	}
	clk := newTestClock()
	opts := groupTestOpts(vfs.NewMem(), clk, 0)
	opts.Shards, opts.SegmentSize, opts.ReclaimRate = 1, 64<<20, 0
	ks := mustOpen(t, opts)
	defer func() { mustClose(t, ks) }()
	se := ks.NewSession()
	const n, size = 2000, 64
	groups := patternedGroups(n, size)
	key := "big"
	r := putDir(t, ks, se, key, []byte("hdr"), groups, 0, TypeList)
	dirLen := func() int {
		m, ok := ks.Lookup(nil, 0, []byte(key))
		if !ok {
			t.Fatal("the grouped value is missing")
		}
		return m.Len // a grouped value's entry keeps its directory's size
	}
	reads, _, _ := engineDelta(ks, func() { dirLen() })
	if reads != 0 {
		t.Fatalf("Lookup read %d records", reads)
	}
	const j = 1234
	repl := patterned(size+10, 99)
	// With no directory cached, the edit reads the directory (a patch: and its base) and the
	// group.
	patch := readDirManifest(t, ks, key).base != nil
	ks.dirs = dirCache{}
	wantReads := uint64(2)
	if patch {
		wantReads = 3
	}
	reads, _, appended := engineDelta(ks, func() { replaceGroup(t, ks, se, key, j, repl, TypeList, groups[j]) })
	r.groups[j] = repl
	want := uint64(vlog.RecordSize(0, oidSize, len(repl)) + vlog.RecordSize(0, len(key), dirLen()))
	t.Logf("focused edit of one group of %d: %d reads, %d bytes appended (a group and a directory: %d)", n, reads, appended, want)
	if reads != wantReads || appended != want {
		t.Fatalf("focused edit: %d reads, %d bytes appended; want %d reads (directory, base if a patch (%v), group) and %d bytes (group, directory)", reads, appended, wantReads, patch, want)
	}
	// The directory the edit wrote is cached: the next edit reads its group alone.
	reads, _, _ = engineDelta(ks, func() { replaceGroup(t, ks, se, key, j+1, groups[j+1], TypeList, groups[j+1]) })
	if reads != 1 {
		t.Fatalf("focused edit after one: %d reads, want 1 (the group; the directory is cached)", reads)
	}
	reads, _, _ = engineDelta(ks, func() {
		got, _, ok := getGrouped(t, ks, 0, key)
		if !ok || !bytes.Equal(got, r.value()) {
			t.Fatalf("Get: %d bytes (present %v), want %d", len(got), ok, len(r.value()))
		}
	})
	// getGrouped reads the value twice (Value.Bytes, then Value.Each).
	if reads != 1+2*n {
		t.Fatalf("Get of the whole value read %d records, want the directory and every group twice (%d)", reads, 1+2*n)
	}
	reads, _, _ = engineDelta(ks, func() {
		var v []byte
		ok, err := ks.Get(nil, 0, []byte(key), func(val Value, _ Meta) (err error) { v, err = val.Bytes(); return err })
		if err != nil || !ok || !bytes.Equal(v, r.value()) {
			t.Fatalf("Get: %d bytes (present %v), %v", len(v), ok, err)
		}
	})
	if reads != 1+n {
		t.Fatalf("Get of the whole value read %d records, want the directory and every group (%d)", reads, 1+n)
	}
	checkGroupRef(t, ks, key, r, "after the edit")
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	checkGroupRef(t, ks, key, r, "after a restart")
}

// groupCrashOpts are the options of the crash tests: small segments, so that a grouped write
// spans rotations.
func groupCrashOpts(fs vfs.FS, clk *testClock, shards int) Options {
	opts := groupTestOpts(fs, clk, 1000)
	opts.Shards, opts.SegmentSize = shards, 8<<10
	return opts
}

// crashEach runs op with a crash clone taken before every file-system change it makes, and one
// after it; it returns them.
func crashEach(t *testing.T, cr *crasher, mem *vfs.MemFS, op func()) []*vfs.MemFS {
	t.Helper()
	cr.mu.Lock()
	cr.every, cr.clones = true, nil
	cr.mu.Unlock()
	op()
	cr.mu.Lock()
	cr.every = false
	clones := append(cr.clones, mem.CrashClone())
	cr.clones = nil
	cr.mu.Unlock()
	if len(clones) < 3 {
		t.Fatalf("only %d crash points", len(clones))
	}
	return clones
}

// TestGroupedCrashDuringWrite crashes before every file-system call of grouped writes (a
// focused PutGroups edit, whole puts growing and shrinking a value, a PutGroups over a small
// value, a removal by an empty directory), with unsynced tails dropped whole or torn: the key
// recovers to its old state or its new one, whole, never a mixture or a failed read, the
// acknowledged write survives, and the accounting is exact.
func TestGroupedCrashDuringWrite(t *testing.T) { withPatchModes(t, testGroupedCrashDuringWrite) }

func testGroupedCrashDuringWrite(t *testing.T) {
	for _, random := range []bool{false, true} {
		t.Run(fmt.Sprintf("torn=%v", random), func(t *testing.T) {
			seed := testSeed(t)
			clk := newTestClock()
			mem := vfs.NewMem()
			cr := &crasher{mem: mem}
			if random {
				cr.rng = rand.New(rand.NewPCG(seed, 3))
			}
			ks := mustOpen(t, groupCrashOpts(vfs.NewErrorFS(mem, cr), clk, 1))
			defer func() { mustClose(t, ks) }()
			se := ks.NewSession()
			cut := func(v []byte, n int) [][]byte {
				var out [][]byte
				for len(v) > 0 {
					out, v = append(out, v[:min(n, len(v))]), v[min(n, len(v)):]
				}
				return out
			}
			cur := putDir(t, ks, se, "k", []byte("meta0"), cut(patterned(20_000, 1), 1500), 0, TypeList)
			type op struct {
				name string
				run  func() *gref // the new state
			}
			ops := []op{
				{"focused edit", func() *gref {
					next := &gref{vtype: TypeList, grouped: true, meta: []byte("meta1"), exp: clk.After(1 << 40)}
					err := ks.Update(se, []Key{{Key: []byte("k")}}, func(tx *Tx) error {
						d, err := tx.Dir(0)
						if err != nil {
							return err
						}
						gs, err := tx.Groups(0, []int{3})
						if err != nil {
							return err
						}
						nd := &Directory{Meta: next.meta}
						next.groups, next.sums = nil, nil
						for j, g := range d.Groups {
							switch j {
							case 3: // replaced by a group made of it
								data := append(bytes.Clone(gs[0]), "!"...)
								nd.Groups = append(nd.Groups, NewGroup(data, []byte("x")))
								next.groups, next.sums = append(next.groups, data), append(next.sums, []byte("x"))
							case 5: // a new group before it
								data := patterned(2500, 5)
								nd.Groups = append(nd.Groups, NewGroup(data, nil), g)
								next.groups, next.sums = append(next.groups, data, cur.groups[j]), append(next.sums, nil, cur.sums[j])
							case 8: // deleted
							default:
								nd.Groups = append(nd.Groups, g)
								next.groups, next.sums = append(next.groups, cur.groups[j]), append(next.sums, cur.sums[j])
							}
						}
						return tx.PutGroups(0, nd, next.exp, TypeList)
					})
					if err == nil {
						err = se.Wait()
					}
					if err != nil {
						t.Fatal(err)
					}
					return next
				}},
				{"whole put growing", func() *gref {
					v := patterned(30_000, 2)
					putValue(t, ks, se, 0, "k", v, 0, TypeHash)
					return &gref{vtype: TypeHash, grouped: true, groups: plainCuts(v), sums: make([][]byte, len(plainCuts(v)))}
				}},
				{"whole put shrinking", func() *gref {
					v := patterned(900, 3)
					putValue(t, ks, se, 0, "k", v, 0, TypeSet)
					return &gref{vtype: TypeSet, whole: v}
				}},
				{"PutGroups over a small value", func() *gref {
					return putDir(t, ks, se, "k", nil, cut(patterned(12_000, 4), 3000), 0, TypeList)
				}},
				{"removal by an empty directory", func() *gref {
					err := ks.Update(se, []Key{{Key: []byte("k")}}, func(tx *Tx) error {
						if _, err := tx.Dir(0); err != nil {
							return err
						}
						return tx.PutGroups(0, &Directory{}, 0, TypeList)
					})
					if err == nil {
						err = se.Wait()
					}
					if err != nil {
						t.Fatal(err)
					}
					return nil
				}},
			}
			for _, o := range ops {
				var next *gref
				clones := crashEach(t, cr, mem, func() { next = o.run() })
				states := map[string]int{}
				for i, c := range clones {
					rks := mustOpen(t, groupCrashOpts(c, clk, 1))
					errOld, errNew := groupRefErr(t, rks, "k", cur), groupRefErr(t, rks, "k", next)
					switch {
					case errNew == nil:
						states["new"]++
					case errOld == nil:
						states["old"]++
					default:
						t.Fatalf("%s: crash %d of %d: neither the old state (%v) nor the new one (%v)", o.name, i+1, len(clones), errOld, errNew)
					}
					if i == len(clones)-1 && errNew != nil {
						t.Fatalf("%s: the acknowledged write was lost: %v", o.name, errNew)
					}
					if err := checkAccounting(rks); err != nil {
						t.Fatalf("%s: crash %d: %v", o.name, i+1, err)
					}
					mustClose(t, rks)
				}
				t.Logf("%s: %d crash points: %v", o.name, len(clones), states)
				if states["old"] == 0 {
					t.Fatalf("%s: no crash point kept the old state", o.name)
				}
				cur = next
			}
		})
	}
}

// TestGroupedCrashMulti crashes before every file-system call of a transaction over two keys, in
// one shard or two, that edits a grouped value with PutGroups and puts the other key (a small
// value, or a large one grouped whole): both keys recover old or both new.
func TestGroupedCrashMulti(t *testing.T) { withPatchModes(t, testGroupedCrashMulti) }

func testGroupedCrashMulti(t *testing.T) {
	for _, sameShard := range []bool{true, false} {
		for _, large := range []bool{false, true} {
			t.Run(fmt.Sprintf("sameShard=%v/large=%v", sameShard, large), func(t *testing.T) {
				clk := newTestClock()
				mem := vfs.NewMem()
				cr := &crasher{mem: mem}
				ks := mustOpen(t, groupCrashOpts(vfs.NewErrorFS(mem, cr), clk, 2))
				defer func() { mustClose(t, ks) }()
				se := ks.NewSession()
				g := keyInShard(2, 0, 0, "g")
				o := keyInShard(2, 0, 1, "o")
				if sameShard {
					o = keyInShard(2, 0, 0, "o")
				}
				var groups [][]byte
				for j := range 8 {
					groups = append(groups, patterned(1200, uint64(j)))
				}
				gOld := putDir(t, ks, se, g, []byte("m"), groups, 0, TypeList)
				oOld := &gref{vtype: TypeString, whole: []byte("old")}
				mustPut(t, ks, se, 0, o, "old", 0)
				gNew := &gref{vtype: TypeList, grouped: true, meta: []byte("m2"), groups: slices.Clone(gOld.groups), sums: slices.Clone(gOld.sums)}
				gNew.groups[2], gNew.sums[2] = patterned(1500, 42), []byte("new")
				gNew.groups, gNew.sums = gNew.groups[:7], gNew.sums[:7]
				oVal := []byte("new small value")
				oNew := &gref{vtype: TypeString, whole: oVal}
				if large {
					oVal = patterned(20_000, 43)
					oNew = &gref{vtype: TypeZSet, grouped: true, groups: plainCuts(oVal), sums: make([][]byte, len(plainCuts(oVal)))}
				}
				clones := crashEach(t, cr, mem, func() {
					err := ks.Update(se, []Key{{Key: []byte(g)}, {Key: []byte(o)}}, func(tx *Tx) error {
						d, err := tx.Dir(0)
						if err != nil {
							return err
						}
						nd := &Directory{Meta: gNew.meta, Groups: slices.Clone(d.Groups[:7])}
						nd.Groups[2] = NewGroup(gNew.groups[2], gNew.sums[2])
						if err := tx.PutGroups(0, nd, 0, TypeList); err != nil {
							return err
						}
						tx.Put(1, oVal, 0, oNew.vtype)
						return nil
					})
					if err == nil {
						err = se.Wait()
					}
					if err != nil {
						t.Fatal(err)
					}
				})
				states := map[string]int{}
				for i, c := range clones {
					rks := mustOpen(t, groupCrashOpts(c, clk, 2))
					gNewErr, oNewErr := groupRefErr(t, rks, g, gNew), groupRefErr(t, rks, o, oNew)
					gOldErr, oOldErr := groupRefErr(t, rks, g, gOld), groupRefErr(t, rks, o, oOld)
					switch {
					case gNewErr == nil && oNewErr == nil:
						states["new"]++
					case gOldErr == nil && oOldErr == nil:
						states["old"]++
					default:
						t.Fatalf("crash %d of %d: not both old or both new: %v / %v; %v / %v", i+1, len(clones), gOldErr, gNewErr, oOldErr, oNewErr)
					}
					if i == len(clones)-1 && (gNewErr != nil || oNewErr != nil) {
						t.Fatalf("the acknowledged transaction was lost: %v, %v", gNewErr, oNewErr)
					}
					if err := checkAccounting(rks); err != nil {
						t.Fatalf("crash %d: %v", i+1, err)
					}
					mustClose(t, rks)
				}
				t.Logf("%d crash points: %v", len(clones), states)
				if states["old"] == 0 {
					t.Fatal("no crash point kept the old state")
				}
			})
		}
	}
}

// TestGroupedExpiry: grouped values whose expire-at passes (set by PutGroups, by a whole put,
// and by SetExpire) are gone, and once the collector has read their directories their groups
// are dead: the live bytes come back to those of the value that stays, and the space is
// given back.
func TestGroupedExpiry(t *testing.T) { withPatchModes(t, testGroupedExpiry) }

func testGroupedExpiry(t *testing.T) {
	clk := newTestClock()
	opts := groupTestOpts(vfs.NewMem(), clk, 1000)
	opts.Shards, opts.SegmentSize = 1, 16<<10
	ks := mustOpen(t, opts)
	defer func() { mustClose(t, ks) }()
	se := ks.NewSession()
	var groups [][]byte
	for j := range 20 {
		groups = append(groups, patterned(1000, uint64(j)))
	}
	stay := putDir(t, ks, se, "stay", []byte("m"), groups, 0, TypeList)
	liveStay := ks.Stats(nil).Reclaim.LiveBytes
	exp := clk.After(100)
	putDir(t, ks, se, "e1", []byte("m"), groups, exp, TypeHash)
	whole := patterned(25_000, 7)
	putValue(t, ks, se, 0, "e2", whole, exp, TypeSet)
	putDir(t, ks, se, "e3", nil, groups, 0, TypeList)
	err := ks.Update(se, []Key{{Key: []byte("e3")}}, func(tx *Tx) error { tx.SetExpire(0, exp); return nil })
	if err == nil {
		err = se.Wait()
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"e1", "e2", "e3"} {
		st := readGroupState(t, ks, 0, k)
		if !st.found || !st.grouped || st.meta.ExpireAt != exp {
			t.Fatalf("%q before its expiry: %+v", k, st.meta)
		}
	}
	if live := ks.Stats(nil).Reclaim.LiveBytes; live <= 3*liveStay {
		t.Fatalf("live bytes with the expiring values %d, with one value %d", live, liveStay)
	}
	clk.Advance(200)
	for _, k := range []string{"e1", "e2", "e3"} {
		checkGroupRef(t, ks, k, nil, "after the expiry")
	}
	checkGroupRef(t, ks, "stay", stay, "after the expiry")
	for _, s := range ks.shards {
		for ks.expireShard(s) > 0 {
		}
	}
	reclaimUntilIdle(t, ks) // and checkAccounting, which drains the dead directories
	st := ks.Stats(nil)
	t.Logf("after the expiry: live %d bytes (the value that stays: %d), disk %d, %d segments", st.Reclaim.LiveBytes, liveStay, st.Log.DiskBytes, st.Log.Segments)
	if st.Reclaim.LiveBytes != liveStay {
		t.Fatalf("live bytes after the expiry %d, want those of the value that stays, %d", st.Reclaim.LiveBytes, liveStay)
	}
	if st.Log.DiskBytes > liveStay*3/2+2*opts.SegmentSize {
		t.Fatalf("disk %d bytes after the expiry, live %d", st.Log.DiskBytes, liveStay)
	}
	checkGroupRef(t, ks, "stay", stay, "after collecting")
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	if got := keysOf(ks, 0); !slices.Equal(got, []string{"stay"}) {
		t.Fatalf("keys after a restart: %v", got)
	}
	checkGroupRef(t, ks, "stay", stay, "after a restart")
	if live := ks.Stats(nil).Reclaim.LiveBytes; live != liveStay {
		t.Fatalf("live bytes after a restart %d, want %d", live, liveStay)
	}
}

// testStreamCodec groups a value of TypeStream (which no other test of the package uses) in
// groups of 1000 bytes with a meta of 'C' and the value's length, which Join checks, and each
// group's first byte as its summary; a value whose length is a multiple of 7 is left to the
// plain cuts.
var testStreamCodec = &GroupCodec{
	Split: func(val []byte) (*Directory, bool) {
		if len(val)%7 == 0 {
			return nil, false
		}
		d := &Directory{Meta: binary.AppendUvarint([]byte{'C'}, uint64(len(val)))}
		for off := 0; off < len(val); off += 1000 {
			g := val[off:min(off+1000, len(val))]
			d.Groups = append(d.Groups, NewGroup(g, g[:1]))
		}
		return d, true
	},
	Join: func(meta []byte, groups [][]byte) ([]byte, error) {
		if len(meta) < 2 || meta[0] != 'C' {
			return nil, fmt.Errorf("meta %q", meta)
		}
		n, _ := binary.Uvarint(meta[1:])
		v := bytes.Join(groups, nil)
		if uint64(len(v)) != n {
			return nil, fmt.Errorf("%d bytes, the meta says %d", len(v), n)
		}
		return v, nil
	},
}

// TestGroupedCodec groups values with a codec of their type: whole puts are split by it and
// reads joined by it (its meta read back intact, through Get, MGet, a transaction, after a
// restart and after the collector moved every group), a split the codec declines falls back to
// plain cuts, and a join the codec refuses is reported corrupt, not served.
func TestGroupedCodec(t *testing.T) {
	prev := groupCodecs[TypeStream]
	RegisterGroupCodec(TypeStream, testStreamCodec)
	t.Cleanup(func() { groupCodecs[TypeStream] = prev })
	clk := newTestClock()
	opts := groupTestOpts(vfs.NewMem(), clk, 2000)
	opts.Shards, opts.SegmentSize = 1, 16<<10
	ks := mustOpen(t, opts)
	defer func() { mustClose(t, ks) }()
	se := ks.NewSession()
	split := func(v []byte) *gref {
		d, _ := testStreamCodec.Split(v)
		r := &gref{vtype: TypeStream, grouped: true, meta: d.Meta}
		for _, g := range d.Groups {
			r.groups, r.sums = append(r.groups, g.data), append(r.sums, g.Sum)
		}
		return r
	}
	v := patterned(25_000, 1)
	putValue(t, ks, se, 0, "s", v, 0, TypeStream)
	r := split(v)
	checkGroupRef(t, ks, "s", r, "a whole put split by the codec")
	mgetSnap := func(when string) {
		t.Helper()
		var got []byte
		err := ks.MGet(nil, 0, [][]byte{[]byte("s")}, true, func(_ int, val Value, _ Meta, ok bool, err error) error {
			if err == nil && ok {
				got, err = val.Bytes()
			}
			return err
		}, nil)
		if err != nil || !bytes.Equal(got, r.value()) {
			t.Fatalf("%s: MGET: %d bytes, %v", when, len(got), err)
		}
	}
	mgetSnap("after the put")

	// A focused edit: group 5 replaced by a longer one, the meta's length updated.
	ng := patterned(1500, 2)
	err := ks.Update(se, []Key{{Key: []byte("s")}}, func(tx *Tx) error {
		d, err := tx.Dir(0)
		if err != nil {
			return err
		}
		nd := &Directory{Meta: binary.AppendUvarint([]byte{'C'}, uint64(d.Bytes()+500)), Groups: slices.Clone(d.Groups)}
		nd.Groups[5] = NewGroup(ng, ng[:1])
		return tx.PutGroups(0, nd, 0, TypeStream)
	})
	if err == nil {
		err = se.Wait()
	}
	if err != nil {
		t.Fatal(err)
	}
	r.groups[5], r.sums[5], r.meta = ng, ng[:1], binary.AppendUvarint([]byte{'C'}, uint64(len(v)+500))
	checkGroupRef(t, ks, "s", r, "after a focused edit")
	mgetSnap("after a focused edit")
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	se = ks.NewSession()
	checkGroupRef(t, ks, "s", r, "after a restart")
	// Move every group: collect every sealed segment.
	for _, s := range ks.shards {
		for _, g := range s.log.SegmentStats() {
			if !g.Active && !g.Pending {
				if err := reclaimNow(ks, s, g.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if ks.rc.moved.Load() == 0 {
		t.Fatal("the collector moved nothing")
	}
	checkGroupRef(t, ks, "s", r, "after the collector moved the groups")
	mgetSnap("after the collector moved the groups")
	if err := checkAccounting(ks); err != nil {
		t.Fatal(err)
	}

	// Declined by the codec: plain cuts, no meta, joined plainly.
	p := patterned(7000, 3)
	putValue(t, ks, se, 0, "p", p, 0, TypeStream)
	checkGroupRef(t, ks, "p", &gref{vtype: TypeStream, grouped: true, groups: plainCuts(p), sums: make([][]byte, len(plainCuts(p)))}, "a split declined")

	// A directory whose meta the codec's Join refuses: reads fail as corrupt.
	bad := putDir(t, ks, se, "bad", []byte("C\x05"), [][]byte{[]byte("abc")}, 0, TypeStream)
	_ = bad
	if _, err := ks.Get(nil, 0, []byte("bad"), func(val Value, _ Meta) error { _, err := val.Bytes(); return err }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of a value its codec cannot join: %v, want ErrCorrupt", err)
	}
	err = ks.Update(se, []Key{{Key: []byte("bad")}}, func(tx *Tx) error { _, _, err := tx.Value(0); return err })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Tx.Value of a value its codec cannot join: %v, want ErrCorrupt", err)
	}
}
