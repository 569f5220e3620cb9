package keyspace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/lavikdb/lavik/pkg/testseed"
	"github.com/lavikdb/lavik/pkg/vfs"
)

// snapState reads a snapshot whole: "db/key" -> value.
func snapState(t *testing.T, sn *Snapshot) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := sn.Each(func(db int, key []byte, v Value, m Meta) error {
		b, err := v.Bytes()
		if err != nil {
			return err
		}
		k := fmt.Sprintf("%d/%s", db, key)
		if _, dup := got[k]; dup {
			return fmt.Errorf("key %s twice", k)
		}
		got[k] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSnapshotIsAnInstant: a snapshot taken amid writes reads back exactly the keyspace of its
// instant, whatever is overwritten, deleted, flushed and collected after it (plain and chunked
// values, several databases, expired keys left out), and the change sink is called with the
// snapshot's instant between the changes before it and those after.
func TestSnapshotIsAnInstant(t *testing.T) {
	seed := testseed.Seed(t, "LAVIK_SNAPSHOT_SEED")
	rng := rand.New(rand.NewPCG(seed, 7))
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	opts.chunkSize, opts.chunkMin = 64, 200
	ks := mustOpen(t, opts)
	defer mustClose(t, ks)
	se := ks.NewSession()
	sink := &recordingSink{}
	ks.SetChangeSink(sink, nil)

	model := map[string]string{}
	write := func() {
		db := rng.IntN(3)
		key := fmt.Sprint("k", rng.IntN(300))
		mk := fmt.Sprintf("%d/%s", db, key)
		se.Propagate(db, [][]byte{[]byte("W"), []byte(mk)})
		switch r := rng.IntN(10); {
		case r < 6:
			val := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, 1+rng.IntN(500))
			var exp int64
			if rng.IntN(5) == 0 {
				exp = clk.Now() + int64(1+rng.IntN(3))*1000
			}
			if err := ks.Put(se, db, []byte(key), val, exp, TypeString); err != nil {
				t.Fatal(err)
			}
			model[mk] = string(val)
		default:
			if err := ks.Update(se, []Key{{DB: db, Key: []byte(key)}}, func(tx *Tx) error {
				tx.Delete(0)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			delete(model, mk)
		}
		if err := se.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	for range 2000 {
		write()
	}
	// Some keys expire by the snapshot's instant.
	clk.Advance(2000)
	before := sink.count()
	var atChange int
	sn := ks.Snapshot(func() { atChange = sink.count() })
	defer sn.Close()
	want := map[string]string{}
	// What the snapshot must hold is what reads see now.
	for mk := range model {
		var db int
		var key string
		fmt.Sscanf(mk, "%d/%s", &db, &key)
		if v, ok := getValue(t, ks, db, key); ok {
			want[mk] = string(v)
		}
	}
	for range 3000 {
		write()
	}
	if err := ks.FlushAll(se); err != nil {
		t.Fatal(err)
	}
	ckptReclaimAll(t, ks, rng)
	got := snapState(t, sn)
	if len(got) != len(want) || sn.Keys() != len(want) {
		t.Fatalf("seed %d: snapshot has %d keys (Keys %d), the instant had %d", seed, len(got), sn.Keys(), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("seed %d: snapshot's %s = %.20q (%d bytes), want %.20q (%d bytes)", seed, k, got[k], len(got[k]), v, len(v))
		}
	}
	if atChange != before || before == 0 {
		t.Fatalf("seed %d: the snapshot's instant came after %d changes, want %d", seed, atChange, before)
	}
}

// getValue reads a key whole.
func getValue(t *testing.T, ks *Keyspace, db int, key string) ([]byte, bool) {
	t.Helper()
	var out []byte
	ok, err := ks.Get(nil, db, []byte(key), func(v Value, m Meta) error {
		b, err := v.Bytes()
		out = bytes.Clone(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, ok
}

type recordedChange struct {
	now     int64
	effects []Effect
}

// recordingSink keeps copies of the changes it is given. Like any sink it is called for
// changes of different shards at once (the active expiry and a reader, here).
type recordingSink struct {
	mu      sync.Mutex
	changes []recordedChange
}

func (r *recordingSink) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.changes)
}

func (r *recordingSink) Change(c *Change) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc := recordedChange{now: c.Now}
	for _, e := range c.Effects {
		var args [][]byte
		for _, a := range e.Args {
			args = append(args, bytes.Clone(a))
		}
		rc.effects = append(rc.effects, Effect{DB: e.DB, Args: args})
	}
	r.changes = append(r.changes, rc)
	return int64(len(r.changes))
}

// TestChangeSinkOrderAndUnits: every committed change reaches the sink once, with the effect its
// session stated; an EXEC's commands are one change; a command that commits nothing gives none;
// expiry's removals are DELs; a follower removes no expired key.
func TestChangeSinkOrderAndUnits(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer mustClose(t, ks)
	se := ks.NewSession()
	sink := &recordingSink{}
	ks.SetChangeSink(sink, nil)
	arg := func(s ...string) [][]byte {
		var out [][]byte
		for _, a := range s {
			out = append(out, []byte(a))
		}
		return out
	}
	se.Propagate(0, arg("SET", "a", "1"))
	mustPut(t, ks, se, 0, "a", "1", 0)
	// Nothing written: nothing logged, and the effect does not linger.
	se.Propagate(0, arg("NOOP"))
	if err := ks.Update(se, []Key{{DB: 0, Key: []byte("nope")}}, func(tx *Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	se.DropEffects()
	// An EXEC over several shards: one change, both effects.
	if _, err := ks.Exec(se, nil, func() {
		for i, k := range []string{"x", "y", "z", "w"} {
			se.Propagate(i, arg("SET", k, "v"))
			if err := ks.Put(se, i, []byte(k), []byte("v"), 0, TypeString); err != nil {
				t.Fatal(err)
			}
			se.KeepEffect()
		}
	}); err != nil {
		t.Fatal(err)
	}
	// Expiry.
	mustPut(t, ks, se, 0, "e", "1", clk.Now()+10)
	clk.Advance(20)
	if _, ok := getValue(t, ks, 0, "e"); ok {
		t.Fatal("expired key served")
	}
	var got []string
	sink.mu.Lock()
	changes := append([]recordedChange(nil), sink.changes...)
	sink.mu.Unlock()
	for _, c := range changes {
		s := ""
		for _, e := range c.effects {
			s += fmt.Sprintf("%d:%s;", e.DB, bytes.Join(e.Args, []byte(" ")))
		}
		got = append(got, s)
	}
	want := []string{"0:SET a 1;", "0:SET x v;1:SET y v;2:SET z v;3:SET w v;", "0:DEL e;"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes = %q, want %q", got, want)
	}
	// A follower's reads hide an expired key but leave it for the primary's DEL.
	ks.SetFollower(true)
	mustPut(t, ks, se, 0, "f", "1", clk.Now()+10)
	clk.Advance(20)
	if _, ok := getValue(t, ks, 0, "f"); ok {
		t.Fatal("follower served an expired key")
	}
	if n := ks.DBSize(nil, 0); n != 3 { // a, x and f
		t.Fatalf("a follower's DBSIZE is %d, want 3 (the expired key kept)", n)
	}
	if sink.count() != 3 {
		t.Fatalf("a follower's read logged a removal: %d changes", sink.count())
	}
}
