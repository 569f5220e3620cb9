package keyspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// testClock is the injected keyspace clock (unix ms). Tests move it by hand; the keyspace's
// background expiry reads it too.
type testClock struct{ ms atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ms.Store(1_700_000_000_000)
	return c
}

func (c *testClock) Now() int64           { return c.ms.Load() }
func (c *testClock) Advance(ms int64)     { c.ms.Add(ms) }
func (c *testClock) After(ms int64) int64 { return c.Now() + ms }

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// testOpts returns options for a small keyspace on fs: 4 shards, 16 KiB segments, appendfsync
// always.
func testOpts(fs vfs.FS, clk *testClock) Options {
	eng, err := vlog.NewEngine("pread", 16)
	if err != nil {
		panic(err)
	}
	return Options{
		FS:          fs,
		Dir:         "/data",
		Shards:      4,
		SegmentSize: 16 << 10,
		Engine:      eng,
		Fsync:       vlog.FsyncAlways,
		Databases:   16,
		Logger:      quietLogger,
		Now:         clk.Now,
	}
}

func mustOpen(t testing.TB, opts Options) *Keyspace {
	t.Helper()
	ks, err := Open(opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return ks
}

func mustClose(t testing.TB, ks *Keyspace) {
	t.Helper()
	if err := ks.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// mustPut sets key and waits for it as a connection would before replying.
func mustPut(t testing.TB, ks *Keyspace, se *Session, db int, key, val string, expireAt int64) {
	t.Helper()
	if err := ks.Put(se, db, []byte(key), []byte(val), expireAt, TypeString); err != nil {
		t.Fatalf("put %d/%q: %v", db, key, err)
	}
	if err := se.Wait(); err != nil {
		t.Fatalf("wait after put %d/%q: %v", db, key, err)
	}
}

// getString returns key's value and metadata; a read error fails the test.
func getString(t testing.TB, ks *Keyspace, db int, key string) (string, Meta, bool) {
	t.Helper()
	var val string
	var meta Meta
	ok, err := ks.getBytes(db, []byte(key), func(v []byte, m Meta) {
		val, meta = string(v), m
	})
	if err != nil {
		t.Fatalf("get %d/%q: %v", db, key, err)
	}
	return val, meta, ok
}

func wantValue(t testing.TB, ks *Keyspace, db int, key, want string) {
	t.Helper()
	got, _, ok := getString(t, ks, db, key)
	if !ok {
		t.Fatalf("get %d/%q: missing, want %q", db, key, want)
	}
	if got != want {
		t.Fatalf("get %d/%q = %q, want %q", db, key, got, want)
	}
}

func wantMissing(t testing.TB, ks *Keyspace, db int, key string) {
	t.Helper()
	if got, _, ok := getString(t, ks, db, key); ok {
		t.Fatalf("get %d/%q = %q, want missing", db, key, got)
	}
}

// shardFor is the shard (of n) that (db, key) lives in.
func shardFor(n int, db int, key string) int {
	if n == 1 {
		return 0
	}
	bits := 0
	for 1<<bits < n {
		bits++
	}
	return int(hashKey(uint8(db), []byte(key)) >> (64 - bits))
}

// keyInShard returns the first key prefix<n> of db that lives in shard (of n shards).
func keyInShard(n, db, shard int, prefix string) string {
	for i := 0; ; i++ {
		k := prefix + strconv.Itoa(i)
		if shardFor(n, db, k) == shard {
			return k
		}
	}
}

// keysOf returns the sorted keys Keys reports for db.
func keysOf(ks *Keyspace, db int) []string {
	var out []string
	ks.Keys(nil, db, func(key []byte, _ Meta) { out = append(out, string(key)) })
	sort.Strings(out)
	return out
}

// segmentFiles lists the segment files of every shard directory of fs under dir.
func segmentFiles(t testing.TB, fs vfs.FS, dir string, shards int) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	for s := 0; s < shards; s++ {
		names, err := fs.List(filepath.Join(dir, fmt.Sprintf("shard-%03d", s)))
		if err != nil {
			t.Fatalf("list shard %d: %v", s, err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, ".seg") {
				out[s] = append(out[s], n)
			}
		}
	}
	return out
}

func TestOpenValidatesOptions(t *testing.T) {
	clk := newTestClock()
	for _, tc := range []struct {
		name   string
		mutate func(*Options)
	}{
		{"shards not a power of two", func(o *Options) { o.Shards = 3 }},
		{"zero shards", func(o *Options) { o.Shards = 0 }},
		{"too many shards", func(o *Options) { o.Shards = 2048 }},
		{"zero databases", func(o *Options) { o.Databases = 0 }},
		{"too many databases", func(o *Options) { o.Databases = MaxDatabases + 1 }},
		{"zero segment size", func(o *Options) { o.SegmentSize = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOpts(vfs.NewMem(), clk)
			tc.mutate(&opts)
			if ks, err := Open(opts); err == nil {
				ks.Close()
				t.Fatalf("Open accepted %+v", opts)
			}
		})
	}
}

func TestPutGetLookup(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	ks := mustOpen(t, opts)
	se := ks.NewSession()

	if _, ok := ks.Lookup(nil, 0, []byte("a")); ok {
		t.Fatal("Lookup of a missing key reported it present")
	}
	wantMissing(t, ks, 0, "a")

	// Served from the tail before the session waits.
	if err := ks.Put(se, 0, []byte("a"), []byte("1"), 0, TypeString); err != nil {
		t.Fatal(err)
	}
	if !se.Dirty() {
		t.Fatal("session not dirty after a put")
	}
	wantValue(t, ks, 0, "a", "1")
	m1, ok := ks.Lookup(nil, 0, []byte("a"))
	if !ok || m1.Type != TypeString || m1.Len != 1 || m1.ExpireAt != 0 {
		t.Fatalf("Lookup = %+v, %v", m1, ok)
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	if se.Dirty() {
		t.Fatal("session dirty after Wait")
	}
	if tb := ks.Stats(nil).Log.TailBytes; tb != 0 {
		t.Fatalf("appendfsync always: %d tail bytes left after Wait", tb)
	}

	// Served from the segment file through the engine once synced.
	reads := ks.Stats(nil).Engine.Reads
	wantValue(t, ks, 0, "a", "1")
	if ks.Stats(nil).Engine.Reads == reads {
		t.Fatal("a synced value was not read through the engine")
	}

	// Overwrite: new length.
	mustPut(t, ks, se, 0, "a", "22", 0)
	_, m2, _ := getString(t, ks, 0, "a")
	if m2.Len != 2 || m2.Type != TypeString {
		t.Fatalf("after overwrite meta %+v (before %+v)", m2, m1)
	}

	// Databases are part of the key identity.
	mustPut(t, ks, se, 1, "a", "db1", 0)
	wantValue(t, ks, 0, "a", "22")
	wantValue(t, ks, 1, "a", "db1")
	wantMissing(t, ks, 2, "a")

	// Empty key, empty value, binary key, large value spanning segments.
	mustPut(t, ks, se, 0, "", "empty key", 0)
	mustPut(t, ks, se, 0, "empty", "", 0)
	mustPut(t, ks, se, 0, "bin\x00\xff", "bin", 0)
	big := strings.Repeat("x", 3*int(opts.SegmentSize))
	mustPut(t, ks, se, 0, "big", big, 0)
	wantValue(t, ks, 0, "", "empty key")
	wantValue(t, ks, 0, "empty", "")
	wantValue(t, ks, 0, "bin\x00\xff", "bin")
	wantValue(t, ks, 0, "big", big)

	// A put with an expire-at already past deletes the key.
	mustPut(t, ks, se, 0, "bin\x00\xff", "gone", clk.Now())
	wantMissing(t, ks, 0, "bin\x00\xff")
	// ... and is a no-op on a missing key.
	mustPut(t, ks, se, 0, "never", "gone", clk.Now()-1)
	wantMissing(t, ks, 0, "never")

	if n := ks.DBSize(nil, 0); n != 4 {
		t.Fatalf("DBSize(0) = %d, want 4", n)
	}
	mustClose(t, ks)
	if err := ks.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}

	ks = mustOpen(t, opts)
	defer ks.Close()
	wantValue(t, ks, 0, "a", "22")
	wantValue(t, ks, 1, "a", "db1")
	wantValue(t, ks, 0, "", "empty key")
	wantValue(t, ks, 0, "empty", "")
	wantValue(t, ks, 0, "big", big)
	wantMissing(t, ks, 0, "bin\x00\xff")
	if _, m3, _ := getString(t, ks, 0, "a"); m3 != m2 {
		t.Fatalf("meta after reopen %+v, want %+v", m3, m2)
	}
	// Record versions keep growing after a reopen, so the new value wins the next replay.
	se = ks.NewSession()
	mustPut(t, ks, se, 0, "a", "333", 0)
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	defer ks.Close()
	wantValue(t, ks, 0, "a", "333")
}

func TestMGet(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer ks.Close()
	se := ks.NewSession()
	var keys [][]byte
	want := map[int]string{}
	for i := 0; i < 40; i++ {
		k := fmt.Sprintf("k%d", i)
		keys = append(keys, []byte(k))
		switch i % 4 {
		case 0: // on disk
			mustPut(t, ks, se, 0, k, "disk"+k, 0)
			want[i] = "disk" + k
		case 1: // in the tail (not waited for)
			if err := ks.Put(se, 0, []byte(k), []byte("tail"+k), 0, TypeString); err != nil {
				t.Fatal(err)
			}
			want[i] = "tail" + k
		case 2: // expires below
			mustPut(t, ks, se, 0, k, "exp"+k, clk.After(100))
		case 3: // missing
		}
	}
	keys = append(keys, []byte("k0"), []byte("k1")) // duplicates
	want[40], want[41] = want[0], want[1]
	clk.Advance(100)
	seen := 0
	ks.mgetBytes(0, keys, true, func(i int, val []byte, _ Meta, ok bool, err error) {
		if i != seen {
			t.Fatalf("MGet called for %d, want %d (in order)", i, seen)
		}
		seen++
		if err != nil {
			t.Fatalf("MGet %q: %v", keys[i], err)
		}
		w, present := want[i]
		if ok != present || (ok && string(val) != w) {
			t.Fatalf("MGet %q = %q, %v; want %q, %v", keys[i], val, ok, w, present)
		}
	})
	if seen != len(keys) {
		t.Fatalf("MGet called fn %d times for %d keys", seen, len(keys))
	}
	// Another database sees none of them.
	ks.mgetBytes(3, keys, false, func(i int, val []byte, _ Meta, ok bool, err error) {
		if ok || err != nil {
			t.Fatalf("MGet db 3 %q = %q, %v, %v", keys[i], val, ok, err)
		}
	})
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateTxOps(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer ks.Close()
	se := ks.NewSession()
	key := func(k string) Key { return Key{DB: 0, Key: []byte(k)} }

	// A missing key.
	err := ks.Update(se, []Key{key("m")}, func(tx *Tx) error {
		if tx.Exists(0) {
			t.Error("missing key exists")
		}
		if v, ok, err := tx.Value(0); v != nil || ok || err != nil {
			t.Errorf("Value of missing key = %q, %v, %v", v, ok, err)
		}
		if _, ok := tx.Meta(0); ok {
			t.Error("Meta of missing key reported ok")
		}
		if tx.Now() != clk.Now() {
			t.Errorf("tx.Now %d, clock %d", tx.Now(), clk.Now())
		}
		if tx.Delete(0) {
			t.Error("Delete of missing key reported it existed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := ks.Stats(nil); st.Log.Appends != 0 {
		t.Fatalf("a transaction that changed nothing appended %d records", st.Log.Appends)
	}

	// Reads see the transaction's own writes, without a disk read.
	exp := clk.After(5000)
	err = ks.Update(se, []Key{key("a")}, func(tx *Tx) error {
		tx.Put(0, []byte("hello"), exp, TypeString)
		v, ok, err := tx.Value(0)
		if err != nil || !ok || string(v) != "hello" {
			t.Errorf("Value after Put = %q, %v, %v", v, ok, err)
		}
		m, ok := tx.Meta(0)
		if !ok || m.Len != 5 || m.ExpireAt != exp || m.Type != TypeString {
			t.Errorf("Meta after Put = %+v, %v", m, ok)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantValue(t, ks, 0, "a", "hello")

	// SetExpire is visible through Meta within the transaction and after it.
	exp2 := clk.After(9000)
	err = ks.Update(se, []Key{key("a")}, func(tx *Tx) error {
		tx.SetExpire(0, exp2)
		if m, ok := tx.Meta(0); !ok || m.ExpireAt != exp2 {
			t.Errorf("Meta after SetExpire(%d) = %+v, %v", exp2, m, ok)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := ks.Lookup(nil, 0, []byte("a")); !ok || m.ExpireAt != exp2 {
		t.Fatalf("Lookup after SetExpire = %+v, %v", m, ok)
	}
	// SetExpire(0) persists.
	err = ks.Update(se, []Key{key("a")}, func(tx *Tx) error {
		tx.SetExpire(0, 0)
		if m, ok := tx.Meta(0); !ok || m.ExpireAt != 0 {
			t.Errorf("Meta after SetExpire(0) = %+v, %v", m, ok)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := ks.Lookup(nil, 0, []byte("a")); !ok || m.ExpireAt != 0 {
		t.Fatalf("Lookup after persist = %+v, %v", m, ok)
	}
	// SetExpire in the past deletes.
	err = ks.Update(se, []Key{key("a")}, func(tx *Tx) error {
		tx.SetExpire(0, tx.Now())
		if tx.Exists(0) {
			t.Error("key exists after SetExpire(now)")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantMissing(t, ks, 0, "a")

	// An error from fn aborts every write.
	mustPut(t, ks, se, 0, "b", "keep", 0)
	boom := errors.New("boom")
	err = ks.Update(se, []Key{key("b"), key("c")}, func(tx *Tx) error {
		tx.Delete(0)
		tx.Put(1, []byte("x"), 0, TypeString)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	wantValue(t, ks, 0, "b", "keep")
	wantMissing(t, ks, 0, "c")

	// Duplicate keys share state, with and without the map used for long key lists.
	for _, n := range []int{2, 12} {
		var ks2 []Key
		for i := 0; i < n; i++ {
			ks2 = append(ks2, key(fmt.Sprintf("d%d", i%(n/2))))
		}
		err = ks.Update(se, ks2, func(tx *Tx) error {
			for i := 0; i < n/2; i++ {
				tx.Put(i, []byte(fmt.Sprintf("v%d", i)), 0, TypeString)
			}
			for i := n / 2; i < n; i++ {
				v, ok, err := tx.Value(i)
				if err != nil || !ok || string(v) != fmt.Sprintf("v%d", i-n/2) {
					t.Errorf("dup %d: Value = %q, %v, %v", i, v, ok, err)
				}
			}
			tx.Delete(n - 1) // deletes the same key as position n/2-1
			if tx.Exists(n/2 - 1) {
				t.Errorf("dup: key exists at one position after delete at its duplicate")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n/2-1; i++ {
			wantValue(t, ks, 0, fmt.Sprintf("d%d", i), fmt.Sprintf("v%d", i))
		}
		wantMissing(t, ks, 0, fmt.Sprintf("d%d", n/2-1))
	}

	// Put then Delete of a new key in one transaction writes nothing.
	before := ks.Stats(nil).Log.Appends
	err = ks.Update(se, []Key{key("tmp")}, func(tx *Tx) error {
		tx.Put(0, []byte("x"), 0, TypeString)
		if !tx.Delete(0) {
			t.Error("Delete after Put reported the key did not exist")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := ks.Stats(nil).Log.Appends - before; d != 0 {
		t.Fatalf("put+delete of a new key appended %d records", d)
	}
	wantMissing(t, ks, 0, "tmp")
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateValueFromDisk(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer ks.Close()
	se := ks.NewSession()
	mustPut(t, ks, se, 0, "k", "on disk", 0)
	reads := ks.Stats(nil).Engine.Reads

	calls := 0
	err := ks.Update(se, []Key{{DB: 0, Key: []byte("k")}}, func(tx *Tx) error {
		calls++
		v, ok, err := tx.Value(0)
		if err != nil {
			if calls == 1 && !errors.Is(err, errNeedValue) {
				t.Errorf("first Value error %v, want errNeedValue", err)
			}
			return err
		}
		if !ok || string(v) != "on disk" {
			t.Errorf("Value = %q, %v", v, ok)
		}
		tx.Put(0, append(append([]byte(nil), v...), '!'), 0, TypeString)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("fn ran %d times, want 2 (need value, then with it)", calls)
	}
	if ks.Stats(nil).Engine.Reads == reads {
		t.Fatal("the value was not read through the engine")
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	wantValue(t, ks, 0, "k", "on disk!")
}

// hookEngine calls hook (when set) before each batch of disk reads.
type hookEngine struct {
	vlog.Engine
	hook atomic.Pointer[func()]
}

func (h *hookEngine) Read(reqs []*vlog.ReadReq) {
	if f := h.hook.Load(); f != nil {
		(*f)()
	}
	h.Engine.Read(reqs)
}

// TestUpdateRetriesWhenValueChanges changes the key from another session while Update reads
// its value from disk (its locks dropped), and checks that the function runs again with the new
// value; after three lost races the read happens with the locks held.
func TestUpdateRetriesWhenValueChanges(t *testing.T) {
	for _, changes := range []int{1, 3} {
		t.Run(fmt.Sprintf("changes=%d", changes), func(t *testing.T) {
			clk := newTestClock()
			opts := testOpts(vfs.NewMem(), clk)
			he := &hookEngine{Engine: opts.Engine}
			opts.Engine = he
			ks := mustOpen(t, opts)
			defer ks.Close()
			se, other := ks.NewSession(), ks.NewSession()
			mustPut(t, ks, se, 0, "k", "v0", 0)
			s := ks.shardOf(hashKey(0, []byte("k")))

			var hookCalls int
			hook := func() {
				hookCalls++
				if hookCalls <= changes {
					// Runs on the Update's goroutine while its locks are dropped.
					mustPut(t, ks, other, 0, "k", fmt.Sprintf("v%d", hookCalls), 0)
					return
				}
				if hookCalls == 4 {
					// The anti-starvation attempt reads holding the shard lock.
					if s.mu.TryLock() {
						s.mu.Unlock()
						t.Error("fourth fetch ran without the shard lock held")
					}
				}
			}
			he.hook.Store(&hook)
			calls := 0
			err := ks.Update(se, []Key{{DB: 0, Key: []byte("k")}}, func(tx *Tx) error {
				calls++
				v, _, err := tx.Value(0)
				if err != nil {
					return err
				}
				tx.Put(0, append(append([]byte(nil), v...), '!'), 0, TypeString)
				return nil
			})
			he.hook.Store(nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := se.Wait(); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("v%d!", changes)
			wantValue(t, ks, 0, "k", want)
			if calls != changes+2 {
				t.Fatalf("fn ran %d times, want %d", calls, changes+2)
			}
		})
	}
}

// TestUpdateCachedValueValidity changes a key while Update reads its value: an EXPIRE keeps the
// record, so the value read stays valid and the function runs just once more; deleting the key
// and writing the same bytes again makes a new record, whose value is read afresh.
func TestUpdateCachedValueValidity(t *testing.T) {
	if invariants {
		t.Skip("counts reads, and the invariants build reads records back")
	}
	for _, c := range []struct {
		name   string
		change func(ks *Keyspace, se *Session, clk *testClock) error
		calls  int
	}{
		{"expire", func(ks *Keyspace, se *Session, clk *testClock) error {
			return ks.Update(se, []Key{{DB: 0, Key: []byte("k")}}, func(tx *Tx) error {
				tx.SetExpire(0, clk.After(60_000))
				return nil
			})
		}, 2},
		{"rewrite", func(ks *Keyspace, se *Session, _ *testClock) error {
			return ks.Update(se, []Key{{DB: 0, Key: []byte("k")}}, func(tx *Tx) error {
				tx.Delete(0)
				return nil
			})
		}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := newTestClock()
			opts := testOpts(vfs.NewMem(), clk)
			he := &hookEngine{Engine: opts.Engine}
			opts.Engine = he
			ks := mustOpen(t, opts)
			defer ks.Close()
			se, other := ks.NewSession(), ks.NewSession()
			mustPut(t, ks, se, 0, "k", "v0", 0)
			fetches := 0
			hook := func() {
				fetches++
				if fetches == 1 {
					if err := c.change(ks, other, clk); err != nil {
						t.Error(err)
					}
					if c.name == "rewrite" {
						mustPut(t, ks, other, 0, "k", "v0", 0)
					}
				}
			}
			he.hook.Store(&hook)
			calls := 0
			var expireAt int64
			err := ks.Update(se, []Key{{DB: 0, Key: []byte("k")}}, func(tx *Tx) error {
				calls++
				v, _, err := tx.Value(0)
				if err != nil {
					return err
				}
				m, _ := tx.Meta(0)
				expireAt = m.ExpireAt
				tx.Put(0, append(append([]byte(nil), v...), '!'), m.ExpireAt, TypeString)
				return nil
			})
			he.hook.Store(nil)
			if err != nil {
				t.Fatal(err)
			}
			if calls != c.calls || fetches != c.calls-1 {
				t.Fatalf("fn ran %d times with %d fetches, want %d and %d", calls, fetches, c.calls, c.calls-1)
			}
			if want := map[string]int64{"expire": clk.After(60_000)}[c.name]; expireAt != want {
				t.Fatalf("the function saw expire-at %d, want %d", expireAt, want)
			}
			wantValue(t, ks, 0, "k", "v0!")
		})
	}
}

// TestUpdateConcurrentCounter increments one counter from several goroutines with
// read-modify-write transactions whose values come from disk, while another goroutine keeps
// writing other keys of the same shard. A lost update means a stale value was used.
func TestUpdateConcurrentCounter(t *testing.T) {
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	opts.Shards = 1
	ks := mustOpen(t, opts)
	defer ks.Close()
	const workers = 4
	per := 150
	if testing.Short() {
		per = 50
	}
	mustPut(t, ks, ks.NewSession(), 0, "ctr", "0", 0)
	var wg sync.WaitGroup
	var stop atomic.Bool
	var retries atomic.Int64
	errc := make(chan error, workers+1)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			se := ks.NewSession()
			for i := 0; i < per; i++ {
				calls := 0
				err := ks.Update(se, []Key{{DB: 0, Key: []byte("ctr")}}, func(tx *Tx) error {
					calls++
					v, _, err := tx.Value(0)
					if err != nil {
						return err
					}
					n, err := strconv.Atoi(string(v))
					if err != nil {
						return err
					}
					tx.Put(0, []byte(strconv.Itoa(n+1)), 0, TypeString)
					return nil
				})
				if err == nil {
					err = se.Wait()
				}
				if err != nil {
					errc <- err
					return
				}
				retries.Add(int64(calls - 2))
			}
		}()
	}
	var noise sync.WaitGroup
	noise.Add(1)
	go func() {
		defer noise.Done()
		se := ks.NewSession()
		for i := 0; !stop.Load(); i++ {
			if err := ks.Put(se, 0, []byte(fmt.Sprintf("noise%d", i%50)), []byte("x"), 0, TypeString); err != nil {
				errc <- err
				return
			}
			if err := se.Wait(); err != nil {
				errc <- err
				return
			}
		}
	}()
	wg.Wait()
	stop.Store(true)
	noise.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	wantValue(t, ks, 0, "ctr", strconv.Itoa(workers*per))
	t.Logf("%d extra transaction attempts from concurrent changes", retries.Load())
}

func TestExpiryLazy(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer ks.Close()
	se := ks.NewSession()
	exp := clk.After(1000)
	mustPut(t, ks, se, 0, "k", "v", exp)
	mustPut(t, ks, se, 0, "keep", "v", 0)
	if m, ok := ks.Lookup(nil, 0, []byte("k")); !ok || m.ExpireAt != exp {
		t.Fatalf("Lookup = %+v, %v", m, ok)
	}
	if info := ks.Info(nil)[0]; info.Keys != 2 || info.Expires != 1 {
		t.Fatalf("Info before expiry = %+v", info)
	}
	clk.Advance(999)
	wantValue(t, ks, 0, "k", "v")
	clk.Advance(1)
	wantMissing(t, ks, 0, "k")
	if _, ok := ks.Lookup(nil, 0, []byte("k")); ok {
		t.Fatal("Lookup returned an expired key")
	}
	ks.mgetBytes(0, [][]byte{[]byte("k"), []byte("keep")}, false, func(i int, val []byte, _ Meta, ok bool, err error) {
		if err != nil || ok != (i == 1) {
			t.Fatalf("MGet %d = %q, %v, %v", i, val, ok, err)
		}
	})
	err := ks.Update(se, []Key{{DB: 0, Key: []byte("k")}}, func(tx *Tx) error {
		if tx.Exists(0) {
			t.Error("transaction sees an expired key")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Lazy expiry removed it: counts drop, and the counter says one key expired.
	if n := ks.DBSize(nil, 0); n != 1 {
		t.Fatalf("DBSize after lazy expiry = %d, want 1", n)
	}
	if info := ks.Info(nil)[0]; info.Keys != 1 || info.Expires != 0 {
		t.Fatalf("Info after expiry = %+v", info)
	}
	if n := ks.Stats(nil).ExpiredKeys; n != 1 {
		t.Fatalf("ExpiredKeys = %d, want 1", n)
	}
	// A new put of the key starts without a TTL.
	mustPut(t, ks, se, 0, "k", "again", 0)
	if m, ok := ks.Lookup(nil, 0, []byte("k")); !ok || m.ExpireAt != 0 {
		t.Fatalf("Lookup after re-put = %+v, %v", m, ok)
	}
}

func TestExpiryActive(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer ks.Close()
	se := ks.NewSession()
	const short, long, none = 3000, 500, 500
	for i := 0; i < short; i++ {
		if err := ks.Put(se, i%2, []byte(fmt.Sprintf("s%d", i)), []byte("v"), clk.After(1000), TypeString); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < long; i++ {
		if err := ks.Put(se, 0, []byte(fmt.Sprintf("l%d", i)), []byte("v"), clk.After(60_000), TypeString); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < none; i++ {
		if err := ks.Put(se, 1, []byte(fmt.Sprintf("n%d", i)), []byte("v"), 0, TypeString); err != nil {
			t.Fatal(err)
		}
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	if info := ks.Info(nil); info[0].Expires+info[1].Expires != short+long {
		t.Fatalf("Info expires = %d+%d, want %d", info[0].Expires, info[1].Expires, short+long)
	}
	clk.Advance(1500)
	removed := 0
	for round := 0; ks.DBSize(nil, 0)+ks.DBSize(nil, 1) > long+none; round++ {
		if round > 1000 {
			t.Fatalf("active expiry stalled at %d keys", ks.DBSize(nil, 0)+ks.DBSize(nil, 1))
		}
		for _, s := range ks.shards {
			removed += ks.expireShard(s)
		}
	}
	if removed == 0 {
		t.Log("the background cycle removed every key first")
	}
	info := ks.Info(nil)
	if info[0].Keys != long || info[0].Expires != long || info[1].Keys != none || info[1].Expires != 0 {
		t.Fatalf("Info after active expiry = %+v", info[:2])
	}
	if info[0].AvgTTLMs <= 0 {
		t.Fatalf("avg ttl %d after sweeping keys with a TTL", info[0].AvgTTLMs)
	}
	if n := ks.Stats(nil).ExpiredKeys; n != short {
		t.Fatalf("ExpiredKeys = %d, want %d", n, short)
	}
	for i := 0; i < long; i += 37 {
		wantValue(t, ks, 0, fmt.Sprintf("l%d", i), "v")
	}
	for i := 0; i < none; i += 37 {
		wantValue(t, ks, 1, fmt.Sprintf("n%d", i), "v")
	}
}

// TestExpiryChangesSurviveRestart: a key's expire-at as changed by EXPIRE or PERSIST after its
// put is what counts after a restart, even when the put's own expire-at has passed by then.
func TestExpiryChangesSurviveRestart(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	setExpire := func(key string, at int64) {
		t.Helper()
		err := ks.Update(se, []Key{{DB: 0, Key: []byte(key)}}, func(tx *Tx) error {
			tx.SetExpire(0, at)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t0 := clk.Now()
	mustPut(t, ks, se, 0, "persisted", "p", t0+1000)
	setExpire("persisted", 0)
	mustPut(t, ks, se, 0, "extended", "e", t0+1000)
	setExpire("extended", t0+10_000)
	mustPut(t, ks, se, 0, "shortened", "s", t0+10_000)
	setExpire("shortened", t0+500)
	mustPut(t, ks, se, 0, "plain", "x", t0+1000)
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	check := func(ks *Keyspace, when string) {
		t.Helper()
		if m, ok := ks.Lookup(nil, 0, []byte("persisted")); !ok || m.ExpireAt != 0 {
			t.Errorf("%s: persisted key: %+v, %v; want present without TTL", when, m, ok)
		}
		if m, ok := ks.Lookup(nil, 0, []byte("extended")); !ok || m.ExpireAt != t0+10_000 {
			t.Errorf("%s: extended key: %+v, %v; want present until %d", when, m, ok, t0+10_000)
		}
		if _, ok := ks.Lookup(nil, 0, []byte("shortened")); ok {
			t.Errorf("%s: shortened key present", when)
		}
		if _, ok := ks.Lookup(nil, 0, []byte("plain")); ok {
			t.Errorf("%s: expired key present", when)
		}
		if n := ks.DBSize(nil, 0); n != 2 {
			t.Errorf("%s: DBSize = %d, want 2", when, n)
		}
		if info := ks.Info(nil)[0]; info.Keys != 2 || info.Expires != 1 {
			t.Errorf("%s: Info = %+v, want 2 keys, 1 with TTL", when, info)
		}
	}
	mustClose(t, ks)
	clk.Advance(2000)
	ks = mustOpen(t, opts)
	check(ks, "after restart")
	crashed := mem.CrashClone()
	mustClose(t, ks)
	ks = mustOpen(t, testOpts(crashed, clk))
	check(ks, "after crash")
	mustClose(t, ks)
}

func TestScanGuarantee(t *testing.T) {
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	opts.Fsync = vlog.FsyncNo
	ks := mustOpen(t, opts)
	defer ks.Close()
	se := ks.NewSession()
	const stable = 2000
	want := map[string]bool{}
	for i := 0; i < stable; i++ {
		k := fmt.Sprintf("stable%d", i)
		want[k] = true
		if err := ks.Put(se, 0, []byte(k), []byte("v"), 0, TypeString); err != nil {
			t.Fatal(err)
		}
	}
	// Expired keys are never returned.
	for i := 0; i < 200; i++ {
		if err := ks.Put(se, 0, []byte(fmt.Sprintf("expired%d", i)), []byte("v"), clk.After(10), TypeString); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(10)

	// Churn: other keys of db 0 and db 1 come and go, growing each shard's table and reusing
	// freed entries while the scans run.
	var stop atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			se := ks.NewSession()
			for i := 0; !stop.Load(); i++ {
				db := g
				k := []byte(fmt.Sprintf("churn%d-%d", g, i%30000))
				if err := ks.Put(se, db, k, []byte("c"), 0, TypeString); err != nil {
					errc <- err
					return
				}
				if i%3 == 0 {
					old := []byte(fmt.Sprintf("churn%d-%d", g, (i/3*7)%30000))
					if err := ks.Update(se, []Key{{DB: db, Key: old}}, func(tx *Tx) error { tx.Delete(0); return nil }); err != nil {
						errc <- err
						return
					}
				}
				if i%64 == 0 {
					if err := se.Wait(); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	scans := 6
	if testing.Short() {
		scans = 3
	}
	for scan := 0; scan < scans; scan++ {
		seen := map[string]bool{}
		var cursor uint64
		calls := 0
		for {
			count := 1 + calls%37
			cursor = ks.Scan(nil, 0, cursor, count, func(key []byte, m Meta) {
				k := string(key)
				if strings.HasPrefix(k, "churn1-") || strings.HasPrefix(k, "expired") {
					t.Errorf("scan of db 0 returned %q", k)
				}
				seen[k] = true
			})
			calls++
			if cursor == 0 {
				break
			}
			if !ks.ValidCursor(cursor) {
				t.Fatalf("Scan returned invalid cursor %#x", cursor)
			}
			if calls > 1_000_000 {
				t.Fatal("scan does not terminate")
			}
		}
		missing := 0
		for k := range want {
			if !seen[k] {
				missing++
			}
		}
		if missing > 0 {
			t.Fatalf("scan %d: %d of %d keys present throughout were not returned", scan, missing, stable)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if ks.ValidCursor(uint64(opts.Shards) << 32) {
		t.Fatal("a cursor past the last shard is valid")
	}
	// An empty db: no keys, and the iteration ends (possibly after empty pages, as in Redis).
	var c uint64
	for calls := 0; ; calls++ {
		c = ks.Scan(nil, 5, c, 10, func([]byte, Meta) { t.Fatal("scan of an empty db returned a key") })
		if c == 0 {
			break
		}
		if calls > 1000 {
			t.Fatal("scan of an empty db does not terminate")
		}
	}
}

func TestKeys(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer ks.Close()
	se := ks.NewSession()
	var want []string
	for i := 0; i < 5000; i++ {
		k := fmt.Sprintf("k%05d", i)
		exp := int64(0)
		if i%10 == 0 {
			exp = clk.After(50)
		} else {
			want = append(want, k)
		}
		if err := ks.Put(se, 2, []byte(k), []byte("v"), exp, TypeString); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := ks.Put(se, 3, []byte(k), []byte("v"), 0, TypeString); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(50)
	got := keysOf(ks, 2)
	if !slices.Equal(got, want) {
		t.Fatalf("Keys(2): %d keys, want %d", len(got), len(want))
	}
	if n := len(keysOf(ks, 3)); n != 1667 {
		t.Fatalf("Keys(3): %d keys, want 1667", n)
	}
	if n := len(keysOf(ks, 0)); n != 0 {
		t.Fatalf("Keys(0): %d keys, want 0", n)
	}
}

func TestRandomKey(t *testing.T) {
	clk := newTestClock()
	ks := mustOpen(t, testOpts(vfs.NewMem(), clk))
	defer ks.Close()
	se := ks.NewSession()
	if k := ks.RandomKey(nil, 0); k != nil {
		t.Fatalf("RandomKey of an empty keyspace = %q", k)
	}
	// Sparse: one key in db 2 while db 0 is big.
	for i := 0; i < 5000; i++ {
		if err := ks.Put(se, 0, []byte(fmt.Sprintf("big%d", i)), []byte("v"), 0, TypeString); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, ks, se, 2, "lonely", "v", 0)
	for i := 0; i < 20; i++ {
		if k := ks.RandomKey(nil, 2); string(k) != "lonely" {
			t.Fatalf("RandomKey(2) = %q, want lonely", k)
		}
		if k := ks.RandomKey(nil, 0); !strings.HasPrefix(string(k), "big") {
			t.Fatalf("RandomKey(0) = %q", k)
		}
	}
	if k := ks.RandomKey(nil, 1); k != nil {
		t.Fatalf("RandomKey of an empty db = %q", k)
	}
	// Mostly expired (and not yet removed): never an expired key.
	live := map[string]bool{"live0": true, "live1": true, "live2": true}
	for i := 0; i < 2000; i++ {
		if err := ks.Put(se, 3, []byte(fmt.Sprintf("dead%d", i)), []byte("v"), clk.After(10), TypeString); err != nil {
			t.Fatal(err)
		}
	}
	for k := range live {
		mustPut(t, ks, se, 3, k, "v", 0)
	}
	clk.Advance(10)
	for i := 0; i < 200; i++ {
		k := ks.RandomKey(nil, 3)
		if !live[string(k)] {
			t.Fatalf("RandomKey(3) = %q, want one of the live keys", k)
		}
	}
	// Only expired keys: nil.
	for i := 0; i < 100; i++ {
		if err := ks.Put(se, 4, []byte(fmt.Sprintf("dead%d", i)), []byte("v"), clk.After(10), TypeString); err != nil {
			t.Fatal(err)
		}
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10)
	if k := ks.RandomKey(nil, 4); k != nil {
		t.Fatalf("RandomKey of a db of expired keys = %q", k)
	}
}

func TestDBSizeAndInfo(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	for i := 0; i < 10; i++ {
		exp := int64(0)
		if i < 3 {
			exp = clk.After(100_000)
		}
		mustPut(t, ks, se, 0, fmt.Sprintf("k%d", i), "v", exp)
	}
	for i := 0; i < 4; i++ {
		mustPut(t, ks, se, 5, fmt.Sprintf("k%d", i), "v", 0)
	}
	check := func(when string, keys0, exp0, keys5 int64) {
		t.Helper()
		info := ks.Info(nil)
		if len(info) != opts.Databases {
			t.Fatalf("%s: Info has %d databases", when, len(info))
		}
		if ks.DBSize(nil, 0) != keys0 || info[0].Keys != keys0 || info[0].Expires != exp0 {
			t.Fatalf("%s: db 0 size %d info %+v, want %d keys %d expires", when, ks.DBSize(nil, 0), info[0], keys0, exp0)
		}
		if ks.DBSize(nil, 5) != keys5 || info[5].Keys != keys5 || info[5].Expires != 0 {
			t.Fatalf("%s: db 5 size %d info %+v, want %d keys", when, ks.DBSize(nil, 5), info[5], keys5)
		}
		var total int64
		for db := range info {
			total += info[db].Keys
		}
		if st := ks.Stats(nil); st.Keys != total {
			t.Fatalf("%s: Stats.Keys %d, Info total %d", when, st.Keys, total)
		}
	}
	check("initial", 10, 3, 4)
	update := func(key string, fn func(tx *Tx)) {
		t.Helper()
		if err := ks.Update(se, []Key{{DB: 0, Key: []byte(key)}}, func(tx *Tx) error { fn(tx); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	update("k0", func(tx *Tx) { tx.SetExpire(0, 0) })                  // persist
	update("k5", func(tx *Tx) { tx.SetExpire(0, tx.Now()+50_000) })    // add a TTL
	update("k1", func(tx *Tx) { tx.Delete(0) })                        // delete one with a TTL
	update("k6", func(tx *Tx) { tx.Delete(0) })                        // delete one without
	mustPut(t, ks, se, 0, "k2", "overwritten without ttl", 0)          // drop a TTL by overwriting
	mustPut(t, ks, se, 0, "k7", "overwritten with ttl", clk.After(10)) // add one by overwriting
	check("after changes", 8, 2, 4)
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	check("after reopen", 8, 2, 4)
	clk.Advance(10) // k7 expires; it stays counted until removed, as in Redis
	check("after k7 expired", 8, 2, 4)
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	defer ks.Close()
	check("after reopen past k7's expiry", 7, 1, 4)
}

func TestFlushDB(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	for db := 0; db < 3; db++ {
		for i := 0; i < 300; i++ {
			if err := ks.Put(se, db, []byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("v%d-%d", db, i)), 0, TypeString); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := ks.FlushDB(se, 1); err != nil {
		t.Fatal(err)
	}
	if err := ks.FlushDB(se, 7); err != nil { // empty: nothing to do
		t.Fatal(err)
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	// Written after the flush: must survive it on replay.
	mustPut(t, ks, se, 1, "k5", "after flush", 0)
	check := func(ks *Keyspace, when string) {
		t.Helper()
		if n := ks.DBSize(nil, 1); n != 1 {
			t.Fatalf("%s: DBSize(1) = %d, want 1", when, n)
		}
		wantValue(t, ks, 1, "k5", "after flush")
		wantMissing(t, ks, 1, "k6")
		for _, db := range []int{0, 2} {
			if n := ks.DBSize(nil, db); n != 300 {
				t.Fatalf("%s: DBSize(%d) = %d, want 300", when, db, n)
			}
			for i := 0; i < 300; i += 29 {
				wantValue(t, ks, db, fmt.Sprintf("k%d", i), fmt.Sprintf("v%d-%d", db, i))
			}
		}
	}
	check(ks, "before reopen")
	crashed := mem.CrashClone()
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	check(ks, "after reopen")
	mustClose(t, ks)
	ks = mustOpen(t, testOpts(crashed, clk))
	check(ks, "after crash")
	mustClose(t, ks)
}

func TestFlushAll(t *testing.T) {
	clk := newTestClock()
	mem := vfs.NewMem()
	opts := testOpts(mem, clk)
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	for db := 0; db < 3; db++ {
		for i := 0; i < 400; i++ {
			if err := ks.Put(se, db, []byte(fmt.Sprintf("k%d", i)), bytes.Repeat([]byte{'v'}, 100), 0, TypeString); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := se.Wait(); err != nil {
		t.Fatal(err)
	}
	before := segmentFiles(t, mem, opts.Dir, opts.Shards)
	for s, names := range before {
		if len(names) < 2 {
			t.Fatalf("shard %d has %d segments; the test wants several", s, len(names))
		}
	}
	if err := ks.FlushAll(se); err != nil {
		t.Fatal(err)
	}
	after := segmentFiles(t, mem, opts.Dir, opts.Shards)
	for s := 0; s < opts.Shards; s++ {
		if len(after[s]) != 1 {
			t.Fatalf("shard %d after FLUSHALL has segments %v, want only the new one", s, after[s])
		}
		if slices.Contains(before[s], after[s][0]) {
			t.Fatalf("shard %d kept old segment %s", s, after[s][0])
		}
	}
	for db := 0; db < opts.Databases; db++ {
		if n := ks.DBSize(nil, db); n != 0 {
			t.Fatalf("DBSize(%d) = %d after FLUSHALL", db, n)
		}
	}
	if k := ks.RandomKey(nil, 0); k != nil {
		t.Fatalf("RandomKey after FLUSHALL = %q", k)
	}
	crashedEmpty := mem.CrashClone()
	mustPut(t, ks, se, 1, "new", "after flushall", 0)
	crashedNew := mem.CrashClone()
	check := func(ks *Keyspace, when string, wantNew bool) {
		t.Helper()
		var n int64
		for db := 0; db < 3; db++ {
			n += ks.DBSize(nil, db)
			if got := keysOf(ks, db); len(got) > 0 && !(db == 1 && wantNew && len(got) == 1) {
				t.Fatalf("%s: db %d has keys %v", when, db, got[:min(len(got), 5)])
			}
		}
		if wantNew {
			wantValue(t, ks, 1, "new", "after flushall")
		}
		if want := map[bool]int64{true: 1, false: 0}[wantNew]; n != want {
			t.Fatalf("%s: %d keys, want %d", when, n, want)
		}
	}
	mustClose(t, ks)
	ks = mustOpen(t, opts)
	check(ks, "after reopen", true)
	mustClose(t, ks)
	for _, c := range []struct {
		name string
		fs   *vfs.MemFS
		new  bool
	}{{"crash after flushall", crashedEmpty, false}, {"crash after a later put", crashedNew, true}} {
		ks = mustOpen(t, testOpts(c.fs, clk))
		check(ks, c.name, c.new)
		mustClose(t, ks)
	}
}

// TestShardCountIsPartOfTheLayout reopens a data directory with another shard count: the keys
// would land in shards lookups never visit, so Open must refuse, and StoredShards tells main
// which count to use.
func TestShardCountIsPartOfTheLayout(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOpts(mem, newTestClock())
	ks, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	se := ks.NewSession()
	if err := ks.Put(se, 0, []byte("k"), []byte("v"), 0, TypeString); err != nil {
		t.Fatal(err)
	}
	se.Wait()
	ks.Close()
	if n, ok, err := StoredShards(mem, opts.Dir); err != nil || !ok || n != 4 {
		t.Fatalf("stored shards %d %v %v", n, ok, err)
	}
	opts.Shards = 8
	if _, err := Open(opts); err == nil || !strings.Contains(err.Error(), "created with 4 shards") {
		t.Fatalf("reopen with 8 shards: %v", err)
	}
	opts.Shards = 4
	ks, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ks.Close()
	if found, err := ks.getBytes(0, []byte("k"), func([]byte, Meta) {}); !found || err != nil {
		t.Fatalf("key lost: %v %v", found, err)
	}
}

// valueBytes assembles a value from its pieces, as a streaming reply would read it.
func valueBytes(v Value) ([]byte, error) {
	out := make([]byte, 0, v.Len)
	err := v.Each(func(p []byte) error {
		out = append(out, p...)
		return nil
	})
	if err == nil && len(out) != v.Len {
		err = fmt.Errorf("value of %d bytes streamed as %d", v.Len, len(out))
	}
	return out, err
}

// getBytes is Get with the value read whole (through Value.Each).
func (ks *Keyspace) getBytes(db int, key []byte, fn func(val []byte, m Meta)) (bool, error) {
	return ks.Get(nil, db, key, func(v Value, m Meta) error {
		b, err := valueBytes(v)
		if err == nil {
			fn(b, m)
		}
		return err
	})
}

// getRangeBytes is GetRange with the part read whole.
func (ks *Keyspace) getRangeBytes(db int, key []byte, span func(n int) (int, int), fn func(part []byte, m Meta)) (bool, error) {
	return ks.GetRange(nil, db, key, span, func(v Value, m Meta) error {
		b, err := valueBytes(v)
		if err == nil {
			fn(b, m)
		}
		return err
	})
}

// mgetBytes is MGet with every value read whole.
func (ks *Keyspace) mgetBytes(db int, keys [][]byte, snapshot bool, fn func(i int, val []byte, m Meta, ok bool, err error)) {
	ks.MGet(nil, db, keys, snapshot, func(i int, v Value, m Meta, ok bool, err error) error {
		var b []byte
		if ok && err == nil {
			b, err = valueBytes(v)
			ok = err == nil
		}
		fn(i, b, m, ok, err)
		return nil
	}, nil)
}
