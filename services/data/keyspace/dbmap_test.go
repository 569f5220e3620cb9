package keyspace

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// refMap is the reference: a plain permutation swapped in memory.
type refMap [16]int

func identityRef() refMap {
	var m refMap
	for i := range m {
		m[i] = i
	}
	return m
}

func checkMap(t *testing.T, ks *Keyspace, want refMap, seed uint64, when string) {
	t.Helper()
	for l, p := range want {
		if got := ks.physicalDB(l); got != p {
			t.Fatalf("seed %d, %s: logical db %d is physical %d, want %d", seed, when, l, got, p)
		}
		if got := ks.logicalDB(p); got != l {
			t.Fatalf("seed %d, %s: physical db %d is logical %d, want %d", seed, when, p, got, l)
		}
	}
}

// refData is the reference's data: the value of each key of each logical database.
type refData [16]map[string]string

func (d refData) clone() refData {
	var c refData
	for i, m := range d {
		c[i] = maps.Clone(m)
		if c[i] == nil {
			c[i] = map[string]string{}
		}
	}
	return c
}

// dataOf reads every key of every logical database through the keyspace's operations: Keys,
// Get, DBSize and Info must all speak logical numbers.
func dataOf(t *testing.T, ks *Keyspace) refData {
	t.Helper()
	var got refData
	info := ks.Info(nil)
	for db := range got {
		got[db] = map[string]string{}
		var keys []string
		ks.Keys(nil, db, func(k []byte, _ Meta) { keys = append(keys, string(k)) })
		for _, k := range keys {
			v, _, ok := getString(t, ks, db, k)
			if !ok {
				t.Fatalf("db %d: key %q scanned but not found", db, k)
			}
			got[db][k] = v
		}
		if n := ks.DBSize(nil, db); n != int64(len(keys)) {
			t.Fatalf("db %d: DBSize %d, Keys %d", db, n, len(keys))
		}
		if info[db].Keys != int64(len(keys)) {
			t.Fatalf("db %d: Info says %d keys, Keys %d", db, info[db].Keys, len(keys))
		}
	}
	return got
}

func sameData(a, b refData) bool {
	for i := range a {
		if !maps.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestDBMapSwapsSurviveRestartsAndCrashes swaps databases at random (alone and inside EXECs,
// with writes and FLUSHALLs around them), between writes, FLUSHDBs, FLUSHALLs and restarts, and
// checks the map and every database's data against a reference; at random points it takes a
// crash clone of the file system (power loss in the middle of whatever runs, a swap included)
// and checks that the reopened keyspace holds the map and data of before or after the operation
// that was running, never anything else.
func TestDBMapSwapsSurviveRestartsAndCrashes(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		clk := newTestClock()
		mem := vfs.NewMem()
		cr := &crasher{mem: mem}
		opts := testOpts(vfs.NewErrorFS(mem, cr), clk)
		opts.Shards = []int{1, 2, 4, 8}[rng.IntN(4)]
		opts.SegmentSize = 2 << 10
		opts.CheckpointInterval = []int64{-1, 4 << 10}[rng.IntN(2)]
		ks := mustOpen(t, opts)
		se := ks.NewSession()
		want := identityRef()
		data := refData{}.clone()
		for op := 0; op < 300; op++ {
			before, beforeData := want, data.clone()
			cr.arm(rng, 30)
			key := func() string { return "k" + string(rune('a'+rng.IntN(8))) }
			switch r := rng.IntN(100); {
			case r < 30:
				db, k, v := rng.IntN(16), key(), "v"+strconv.Itoa(op)
				mustPut(t, ks, se, db, k, v, 0)
				data[db][k] = v
			case r < 35:
				db, k := rng.IntN(16), key()
				if err := ks.Update(se, []Key{{DB: db, Key: []byte(k)}}, func(tx *Tx) error {
					tx.Delete(0)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if err := se.Wait(); err != nil {
					t.Fatal(err)
				}
				delete(data[db], k)
			case r < 65:
				a, b := rng.IntN(16), rng.IntN(16)
				if err := ks.SwapDB(se, a, b); err != nil {
					t.Fatalf("seed %d: swapdb: %v", seed, err)
				}
				if err := se.Wait(); err != nil {
					t.Fatal(err)
				}
				want[a], want[b] = want[b], want[a]
				data[a], data[b] = data[b], data[a]
			case r < 75:
				// An EXEC: a write, a swap, a write to a swapped database, maybe a FLUSHALL
				// before or after, committed as one.
				a, b := rng.IntN(16), rng.IntN(16)
				k1, k2, v := key(), key(), "x"+strconv.Itoa(op)
				flush := rng.IntN(6)
				var err error
				ran, xerr := ks.Exec(se, nil, func() {
					if flush == 0 {
						err = errors.Join(err, ks.FlushAll(se))
					}
					err = errors.Join(err, ks.Put(se, a, []byte(k1), []byte(v), 0, TypeString))
					err = errors.Join(err, ks.SwapDB(se, a, b))
					err = errors.Join(err, ks.Put(se, a, []byte(k2), []byte(v), 0, TypeString))
					if flush == 1 {
						err = errors.Join(err, ks.FlushAll(se))
					}
				})
				if xerr != nil || err != nil || !ran {
					t.Fatalf("seed %d: exec: %v %v %v", seed, ran, xerr, err)
				}
				if err := se.Wait(); err != nil {
					t.Fatal(err)
				}
				if flush == 0 {
					want, data = identityRef(), refData{}.clone()
				}
				data[a][k1] = v
				want[a], want[b] = want[b], want[a]
				data[a], data[b] = data[b], data[a]
				data[a][k2] = v
				if flush == 1 {
					want, data = identityRef(), refData{}.clone()
				}
			case r < 78:
				db := rng.IntN(16)
				if err := ks.FlushDB(se, db); err != nil {
					t.Fatal(err)
				}
				if err := se.Wait(); err != nil {
					t.Fatal(err)
				}
				data[db] = map[string]string{}
			case r < 80:
				if err := ks.FlushAll(se); err != nil {
					t.Fatal(err)
				}
				want, data = identityRef(), refData{}.clone()
			case r < 92:
				mustClose(t, ks)
				ks = mustOpen(t, opts)
				se = ks.NewSession()
			default:
				ks.Checkpoint() //nolint:errcheck // a failed checkpoint changes nothing
			}
			clone := cr.taken()
			cr.disarm()
			checkMap(t, ks, want, seed, "after op")
			if got := dataOf(t, ks); !sameData(got, data) {
				t.Fatalf("seed %d op %d: data %v, want %v", seed, op, got, data)
			}
			if clone == nil {
				continue
			}
			copts := opts
			copts.FS = clone
			cks, err := Open(copts)
			if err != nil {
				t.Fatalf("seed %d: open after crash: %v", seed, err)
			}
			ok := true
			for l := range want {
				if cks.physicalDB(l) != before[l] {
					ok = false
				}
			}
			got := dataOf(t, cks)
			if ok && sameData(got, beforeData) {
				mustClose(t, cks)
				continue
			}
			checkMap(t, cks, want, seed, "after crash")
			if !sameData(got, data) {
				t.Fatalf("seed %d op %d: after crash data %v, want %v or %v", seed, op, got, beforeData, data)
			}
			mustClose(t, cks)
		}
		mustClose(t, ks)
	}
}

// TestSwapDBErrorsAndWatches checks the range errors, a swap with itself, and that watchers of
// keys of either database are marked dirty while others are not.
func TestSwapDBErrorsAndWatches(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer mustClose(t, ks)
	se := ks.NewSession()
	for _, c := range [][2]int{{-1, 0}, {0, 16}, {16, 16}} {
		if err := ks.SwapDB(se, c[0], c[1]); !errors.Is(err, ErrDBRange) {
			t.Fatalf("swapdb %v: %v, want ErrDBRange", c, err)
		}
	}
	if err := ks.SwapDB(se, 3, 3); err != nil || ks.physicalDB(3) != 3 {
		t.Fatalf("swapdb 3 3: %v, db 3 is %d", err, ks.physicalDB(3))
	}
	// As Redis: a watched key of either database is touched if it exists in either of them.
	mustPut(t, ks, se, 0, "a", "v", 0)
	mustPut(t, ks, se, 2, "a", "v", 0)
	var w0, w1, w2, w3 Watches
	ks.Watch(&w0, 0, []byte("a"))       // exists
	ks.Watch(&w1, 1, []byte("missing")) // in neither: reads the same after the swap
	ks.Watch(&w2, 2, []byte("a"))       // another database
	ks.Watch(&w3, 1, []byte("a"))       // exists in the other database
	if err := ks.SwapDB(se, 0, 1); err != nil {
		t.Fatal(err)
	}
	got := [4]bool{w0.dirty.Load(), w1.dirty.Load(), w2.dirty.Load(), w3.dirty.Load()}
	if got != [4]bool{true, false, false, true} {
		t.Fatalf("dirty after swapdb 0 1: %v, want [true false false true]", got)
	}
	if ks.physicalDB(0) != 1 || ks.physicalDB(1) != 0 {
		t.Fatalf("map after swapdb 0 1: %d %d", ks.physicalDB(0), ks.physicalDB(1))
	}
	if ks.Fsync() != vlog.FsyncAlways {
		t.Fatal("test options changed")
	}
}

// TestSwapDBRacesOperations runs swaps of databases 0 and 1 against reads of several keys at
// one instant and transactions over several keys: each must act on one database, the one its
// number named at some instant, never on a mix of the two (run it with -race).
func TestSwapDBRacesOperations(t *testing.T) {
	ks := mustOpen(t, testOpts(vfs.NewMem(), newTestClock()))
	defer mustClose(t, ks)
	se := ks.NewSession()
	for db, tag := range []string{"A", "B"} {
		mustPut(t, ks, se, db, "tag", tag, 0)
		mustPut(t, ks, se, db, "tag2", tag, 0)
	}
	done := make(chan struct{})
	errc := make(chan error, 3)
	go func() {
		se := ks.NewSession()
		var err error
		for i := 0; i < 300 && err == nil; i++ {
			err = ks.SwapDB(se, 0, 1)
		}
		close(done)
		errc <- err
	}()
	go func() { // snapshot reads: both keys of one database
		se := ks.NewSession()
		keys := [][]byte{[]byte("tag"), []byte("tag2")}
		for {
			select {
			case <-done:
				errc <- nil
				return
			default:
			}
			var got [2]string
			err := ks.MGet(se, 0, keys, true, func(i int, v Value, _ Meta, ok bool, err error) error {
				b, _ := v.Bytes()
				got[i] = string(b)
				return err
			}, nil)
			if err != nil || got[0] != got[1] {
				errc <- fmt.Errorf("mget of db 0: %q %v", got, err)
				return
			}
		}
	}()
	go func() { // transactions: both keys of one database, rewritten together
		se := ks.NewSession()
		keys := []Key{{DB: 0, Key: []byte("tag")}, {DB: 0, Key: []byte("tag2")}}
		for n := 0; ; n++ {
			select {
			case <-done:
				errc <- nil
				return
			default:
			}
			err := ks.Update(se, keys, func(tx *Tx) error {
				v, ok, err := tx.Value(0)
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("tag missing")
				}
				w, _, err := tx.Value(1)
				if err != nil {
					return err
				}
				if string(v) != string(w) {
					return fmt.Errorf("tx saw %q and %q", v, w)
				}
				nv := []byte(string(v[:1]) + strconv.Itoa(n))
				tx.Put(0, nv, 0, TypeString)
				tx.Put(1, nv, 0, TypeString)
				return nil
			})
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	for range 3 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	for db := range 2 {
		a, _, _ := getString(t, ks, db, "tag")
		b, _, _ := getString(t, ks, db, "tag2")
		if a != b || a == "" {
			t.Fatalf("db %d: tag %q tag2 %q", db, a, b)
		}
	}
	a, _, _ := getString(t, ks, 0, "tag")
	b, _, _ := getString(t, ks, 1, "tag")
	if a[:1] == b[:1] {
		t.Fatalf("databases mixed: %q %q", a, b)
	}
}
