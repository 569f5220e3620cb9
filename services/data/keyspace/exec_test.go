package keyspace

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// opExec runs a random transaction of commands through Exec (MULTI ... EXEC): puts, reads,
// deletes, appends, expire changes, renames, enumerations, flushes and a failing command, each
// checked against a shadow of the model that the transaction's own writes change. It then
// records the commit's changes in the model: the flushes first, then each key's final state, all
// part of one transaction (the crash tests check that a crash keeps all of it or none).
func (w *workload) opExec() {
	n := 1 + w.rng.IntN(8)
	now := w.clk.Now()
	shadow := maps.Clone(w.m)
	var touched []dbKey
	seenKey := map[dbKey]bool{}
	touch := func(k dbKey) {
		if !seenKey[k] {
			seenKey[k] = true
			touched = append(touched, k)
		}
	}
	flushed := map[int]bool{}
	flushAll := false
	get := func(k dbKey) (mval, bool) {
		v, ok := shadow[k]
		if !ok || !v.visible(now) {
			return mval{}, false
		}
		return v, true
	}
	visible := func(db int) []string {
		var out []string
		for k, v := range shadow {
			if k.db == db && v.visible(now) {
				out = append(out, k.key)
			}
		}
		sort.Strings(out)
		return out
	}
	var failure string
	failf := func(format string, args ...any) {
		if failure == "" {
			failure = fmt.Sprintf(format, args...)
		}
	}
	checkKey := func(k dbKey) {
		want, wok := get(k)
		var got mval
		ok, err := w.ks.Get(w.se, k.db, []byte(k.key), func(v Value, m Meta) error {
			b, err := valueBytes(v)
			got = mval{string(b), m.ExpireAt}
			if m.Len != len(b) {
				return fmt.Errorf("Meta.Len %d, value of %d bytes", m.Len, len(b))
			}
			return err
		})
		switch {
		case err != nil:
			failf("exec: get %v: %v", k, err)
		case ok != wok || ok && got != want:
			failf("exec: get %v = %v (present %v), shadow %v (present %v)", k, got, ok, want, wok)
		}
		m, lok := w.ks.Lookup(w.se, k.db, []byte(k.key))
		if lok != wok || lok && (m.ExpireAt != want.exp || m.Len != len(want.val)) {
			failf("exec: lookup %v = %+v, %v; shadow %v, %v", k, m, lok, want, wok)
		}
	}
	var ops []string
	ran, err := w.ks.Exec(w.se, nil, func() {
		for i := 0; i < n && failure == ""; i++ {
			switch r := w.rng.IntN(100); {
			case r < 28:
				k, v := w.pickKey(), w.value()
				if w.rng.IntN(8) == 0 {
					v = w.bigValue()
				}
				var exp int64
				switch w.rng.IntN(10) {
				case 0:
					exp = now + 1 + w.rng.Int64N(5000)
				case 1:
					exp = now - w.rng.Int64N(10)
				}
				ops = append(ops, fmt.Sprintf("put %v len %d exp %s", k, len(v), w.rel(exp)))
				if err := w.ks.Put(w.se, k.db, []byte(k.key), []byte(v), exp, TypeString); err != nil {
					failf("exec: put %v: %v", k, err)
				}
				touch(k)
				if exp != 0 && exp <= now {
					delete(shadow, k)
				} else {
					shadow[k] = mval{v, exp}
				}
				checkKey(k)
			case r < 40:
				k := w.pickKey()
				ops = append(ops, fmt.Sprintf("get %v", k))
				checkKey(k)
			case r < 50:
				keys := w.pickKeys(1 + w.rng.IntN(2))
				ops = append(ops, fmt.Sprintf("del %v", keys))
				cnt := 0
				err := w.ks.Update(w.se, toKeys(keys), func(tx *Tx) error {
					cnt = 0
					for i := range keys {
						if tx.Delete(i) {
							cnt++
						}
					}
					return nil
				})
				want := 0
				for _, k := range keys {
					if _, ok := get(k); ok {
						want++
					}
					delete(shadow, k)
					touch(k)
				}
				if err != nil || cnt != want {
					failf("exec: del %v = %d, %v; shadow %d", keys, cnt, err, want)
				}
			case r < 60:
				k, suffix := w.pickLarge(), w.value()
				ops = append(ops, fmt.Sprintf("append %v len %d", k, len(suffix)))
				err := w.ks.Update(w.se, toKeys([]dbKey{k}), func(tx *Tx) error {
					m, _ := tx.Meta(0)
					return tx.WriteAt(0, int64(m.Len), []byte(suffix), TypeString|RawHint)
				})
				if err != nil {
					failf("exec: append %v: %v", k, err)
				}
				old, _ := get(k)
				shadow[k] = mval{old.val + suffix, old.exp}
				touch(k)
				checkKey(k)
			case r < 68:
				k := w.pickKey()
				at := now + w.rng.Int64N(6000) - 1000
				if w.rng.IntN(4) == 0 {
					at = 0 // PERSIST
				}
				ops = append(ops, fmt.Sprintf("expire %v at %s", k, w.rel(at)))
				err := w.ks.Update(w.se, toKeys([]dbKey{k}), func(tx *Tx) error {
					if tx.Exists(0) {
						tx.SetExpire(0, at)
					}
					return nil
				})
				if err != nil {
					failf("exec: expire %v: %v", k, err)
				}
				if v, ok := get(k); ok {
					touch(k)
					if at != 0 && at <= now {
						delete(shadow, k)
					} else {
						shadow[k] = mval{v.val, at}
					}
				}
				checkKey(k)
			case r < 75:
				src, dst := w.pickKey(), w.pickKey()
				if src == dst {
					dst.db = (dst.db + 1) % w.opts.Databases
				}
				ops = append(ops, fmt.Sprintf("rename %v -> %v", src, dst))
				err := w.ks.Update(w.se, toKeys([]dbKey{src, dst}), func(tx *Tx) error {
					if !tx.Exists(0) {
						return errNoSuchKey
					}
					m, _ := tx.Meta(0)
					v, _, err := tx.Value(0)
					if err != nil {
						return err
					}
					tx.Delete(0)
					tx.Put(1, v, m.ExpireAt, m.Type)
					return nil
				})
				sv, ok := get(src)
				switch {
				case !ok && !errors.Is(err, errNoSuchKey), ok && err != nil:
					failf("exec: rename %v -> %v: %v (source present %v)", src, dst, err, ok)
				case ok:
					delete(shadow, src)
					shadow[dst] = sv
					touch(src)
					touch(dst)
				}
				checkKey(src)
				checkKey(dst)
			case r < 81:
				db := w.dbs[w.rng.IntN(len(w.dbs))]
				keys := make([][]byte, 1+w.rng.IntN(5))
				for i := range keys {
					keys[i] = []byte(w.names[w.rng.IntN(len(w.names))])
				}
				ops = append(ops, fmt.Sprintf("mget db %d %q", db, keys))
				calls := 0
				err := w.ks.MGet(w.se, db, keys, true, func(i int, v Value, m Meta, ok bool, err error) error {
					calls++
					var b []byte
					if ok && err == nil {
						b, err = valueBytes(v)
					}
					want, wok := get(dbKey{db, string(keys[i])})
					if err != nil || ok != wok || ok && string(b) != want.val {
						failf("exec: mget %d/%q = %q, %v, %v; shadow %v, %v", db, keys[i], short(string(b)), ok, err, want, wok)
					}
					return nil
				}, nil)
				if err != nil || calls != len(keys) {
					failf("exec: mget of %d keys: %d calls, %v", len(keys), calls, err)
				}
			case r < 86:
				db := w.dbs[w.rng.IntN(len(w.dbs))]
				ops = append(ops, fmt.Sprintf("keys db %d", db))
				var got []string
				w.ks.Keys(w.se, db, func(key []byte, _ Meta) { got = append(got, string(key)) })
				sort.Strings(got)
				if want := visible(db); !slices.Equal(got, want) {
					failf("exec: keys of db %d differ from the shadow:\n%s", db, diffKeys(got, want))
				}
				if size := w.ks.DBSize(w.se, db); size < int64(len(got)) {
					failf("exec: dbsize %d of db %d with %d keys", size, db, len(got))
				}
			case r < 90:
				db := w.dbs[w.rng.IntN(len(w.dbs))]
				ops = append(ops, fmt.Sprintf("randomkey db %d", db))
				key := w.ks.RandomKey(w.se, db)
				if _, ok := get(dbKey{db, string(key)}); key != nil && !ok || key == nil && len(visible(db)) > 0 {
					failf("exec: randomkey of db %d = %q, shadow keys %d", db, key, len(visible(db)))
				}
			case r < 94:
				db := w.dbs[w.rng.IntN(len(w.dbs))]
				ops = append(ops, fmt.Sprintf("flushdb %d", db))
				if err := w.ks.FlushDB(w.se, db); err != nil {
					failf("exec: flushdb: %v", err)
				}
				flushed[db] = true
				for k := range shadow {
					if k.db == db {
						delete(shadow, k)
					}
				}
				if size := w.ks.DBSize(w.se, db); size != 0 {
					failf("exec: dbsize %d after flushdb", size)
				}
			case r < 95:
				ops = append(ops, "flushall")
				if err := w.ks.FlushAll(w.se); err != nil {
					failf("exec: flushall: %v", err)
				}
				flushAll = true
				clear(shadow)
			default:
				k := w.pickKey()
				ops = append(ops, fmt.Sprintf("failing write of %v", k))
				boom := errors.New("boom")
				err := w.ks.Update(w.se, toKeys([]dbKey{k}), func(tx *Tx) error {
					tx.Put(0, []byte("never"), 0, TypeString)
					return boom
				})
				if err != boom {
					failf("exec: failing write returned %v", err)
				}
				checkKey(k)
			}
		}
	})
	w.notef("exec %s", strings.Join(ops, "; "))
	if failure != "" {
		w.fatalf("%s", failure)
	}
	if err != nil || !ran {
		w.fatalf("exec: ran %v, %v", ran, err)
	}
	switch {
	case flushAll:
		for s := 0; s < w.nShards; s++ {
			w.emit(change{shard: s, kind: chFlushAll})
		}
	default:
		for _, db := range slices.Sorted(maps.Keys(flushed)) {
			for s := 0; s < w.nShards; s++ {
				w.emit(change{shard: s, kind: chFlushDB, k: dbKey{db: db}})
			}
		}
	}
	for _, k := range touched {
		sv, sok := shadow[k]
		mv, mok := w.m[k]
		switch {
		case sok && (!mok || mv != sv):
			w.emitKey(k, sv, false)
		case !sok && mok:
			w.emitKey(k, mval{}, true)
		}
	}
	for _, k := range touched {
		w.checkKey(k)
	}
}

// TestExecIsolated runs transfers between keys of different shards inside EXECs while other
// EXECs check that the total never changes and plain writes go on around them: an EXEC is never
// seen half done, by readers inside or outside one.
func TestExecIsolated(t *testing.T) {
	opts := testOpts(vfs.NewMem(), newTestClock())
	opts.Shards = 8
	ks := mustOpen(t, opts)
	defer ks.Close()
	const accounts = 16
	keys := make([]Key, accounts)
	setup := ks.NewSession()
	for i := range keys {
		keys[i] = Key{Key: fmt.Appendf(nil, "acct:%d", i)}
		if err := ks.Put(setup, 0, keys[i].Key, []byte("100"), 0, TypeString); err != nil {
			t.Fatal(err)
		}
	}
	total := func(se *Session) (int, error) {
		sum := 0
		err := ks.MGet(se, 0, func() [][]byte {
			var ks [][]byte
			for _, k := range keys {
				ks = append(ks, k.Key)
			}
			return ks
		}(), true, func(i int, v Value, m Meta, ok bool, err error) error {
			if err != nil || !ok {
				return fmt.Errorf("acct %d: %v, %v", i, ok, err)
			}
			var n int
			fmt.Sscan(string(v.whole), &n)
			sum += n
			return nil
		}, nil)
		return sum, err
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			se := ks.NewSession()
			for i := 0; !stop.Load(); i++ {
				a, b := (g*7+i)%accounts, (g*3+i*5+1)%accounts
				if a == b {
					continue
				}
				var err error
				ks.Exec(se, nil, func() {
					for _, step := range []struct {
						k Key
						d int
					}{{keys[a], -1}, {keys[b], 1}} {
						if err != nil {
							return
						}
						err = ks.Update(se, []Key{step.k}, func(tx *Tx) error {
							v, _, err := tx.Value(0)
							if err != nil {
								return err
							}
							var n int
							fmt.Sscan(string(v), &n)
							tx.Put(0, fmt.Append(nil, n+step.d), 0, TypeString)
							return nil
						})
					}
				})
				if err == nil {
					err = se.Wait()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		se := ks.NewSession()
		for i := 0; !stop.Load(); i++ {
			// Plain writes of other keys in every shard go on around the EXECs.
			if err := ks.Put(se, 0, fmt.Appendf(nil, "other:%d", i%100), []byte("x"), 0, TypeString); err != nil {
				errs <- err
				return
			}
		}
	}()
	se := ks.NewSession()
	for i := 0; i < 300; i++ {
		var sum int
		var err error
		ks.Exec(se, nil, func() { sum, err = total(se) })
		if err != nil {
			t.Fatal(err)
		}
		if sum != accounts*100 {
			t.Fatalf("EXEC saw a total of %d, want %d: another EXEC was half done", sum, accounts*100)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if sum, err := total(nil); err != nil || sum != accounts*100 {
		t.Fatalf("total %d, %v after the transfers", sum, err)
	}
}

// TestWatch checks what makes a watched key changed, as Redis 7 decides it.
func TestWatch(t *testing.T) {
	clk := newTestClock()
	opts := testOpts(vfs.NewMem(), clk)
	opts.Shards = 4
	ks := mustOpen(t, opts)
	defer ks.Close()
	other := ks.NewSession()
	put := func(db int, key string, exp int64) {
		t.Helper()
		if err := ks.Put(other, db, []byte(key), []byte("v"), exp, TypeString); err != nil {
			t.Fatal(err)
		}
	}
	update := func(key string, fn func(tx *Tx) error) {
		t.Helper()
		if err := ks.Update(other, []Key{{Key: []byte(key)}}, fn); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		setup   func()
		watch   []string
		between func()
		aborts  bool
	}{
		{"untouched", func() { put(0, "k", 0) }, []string{"k"}, func() { put(0, "other", 0) }, false},
		{"overwritten with the same value", func() { put(0, "k", 0) }, []string{"k"}, func() { put(0, "k", 0) }, true},
		{"deleted", func() { put(0, "k", 0) }, []string{"k"}, func() { update("k", func(tx *Tx) error { tx.Delete(0); return nil }) }, true},
		{"created", nil, []string{"k"}, func() { put(0, "k", 0) }, true},
		{"created and deleted", nil, []string{"k"}, func() {
			put(0, "k", 0)
			update("k", func(tx *Tx) error { tx.Delete(0); return nil })
		}, true},
		{"same key in another database", nil, []string{"k"}, func() { put(1, "k", 0) }, false},
		{"delete of a missing key", nil, []string{"k"}, func() { update("k", func(tx *Tx) error { tx.Delete(0); return nil }) }, false},
		{"expire set", func() { put(0, "k", 0) }, []string{"k"}, func() { update("k", func(tx *Tx) error { tx.SetExpire(0, clk.Now()+10000); return nil }) }, true},
		{"expired since", func() { put(0, "k", clk.Now()+100) }, []string{"k"}, func() { clk.Advance(200) }, true},
		{"expired since and removed", func() { put(0, "k", clk.Now()+100) }, []string{"k"}, func() {
			clk.Advance(200)
			ks.Lookup(nil, 0, []byte("k"))
		}, true},
		{"expired before watched", func() { put(0, "k", clk.Now()+100); clk.Advance(200) }, []string{"k"}, func() {
			ks.Lookup(nil, 0, []byte("k")) // its removal by expiry is no change
		}, false},
		{"expired before watched, then set", func() { put(0, "k", clk.Now()+100); clk.Advance(200) }, []string{"k"}, func() { put(0, "k", 0) }, true},
		{"flushdb of the key's database", func() { put(0, "k", 0) }, []string{"k"}, func() { ks.FlushDB(other, 0) }, true},
		{"flushdb without the key", func() { put(0, "x", 0) }, []string{"k"}, func() { ks.FlushDB(other, 0) }, false},
		{"flushall", func() { put(0, "k", 0) }, []string{"k"}, func() { ks.FlushAll(other) }, true},
		{"one of several", func() { put(0, "a", 0) }, []string{"a", "b", "c"}, func() { put(0, "c", 0) }, true},
		{"write inside another EXEC", func() { put(0, "k", 0) }, []string{"k"}, func() {
			ks.Exec(other, nil, func() { put(0, "k", 0) })
		}, true},
		{"read inside another EXEC", func() { put(0, "k", 0) }, []string{"k"}, func() {
			ks.Exec(other, nil, func() { ks.Lookup(other, 0, []byte("k")) })
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := ks.FlushAll(other); err != nil {
				t.Fatal(err)
			}
			if c.setup != nil {
				c.setup()
			}
			var w Watches
			se := ks.NewSession()
			for _, k := range c.watch {
				ks.Watch(&w, 0, []byte(k))
			}
			c.between()
			ranFn := false
			ran, err := ks.Exec(se, &w, func() {
				ranFn = true
				ks.Put(se, 0, []byte("marker"), []byte("1"), 0, TypeString)
			})
			if err != nil {
				t.Fatal(err)
			}
			if ran == c.aborts || ranFn == c.aborts {
				t.Fatalf("EXEC ran %v (fn %v), want aborted %v", ran, ranFn, c.aborts)
			}
			_, marked := ks.Lookup(nil, 0, []byte("marker"))
			if marked != ran {
				t.Fatalf("the EXEC's write is there: %v, ran %v", marked, ran)
			}
			if w.Len() != 0 {
				t.Fatalf("%d keys still watched after EXEC", w.Len())
			}
			for _, s := range ks.shards {
				if len(s.watched) != 0 {
					t.Fatalf("shard %d still has watch registrations", s.id)
				}
			}
		})
	}
}

// TestExecCommitError: an EXEC whose commit the log refuses (the disk is full) applies
// nothing, in memory or after a restart, whether it would have written one record or many.
func TestExecCommitError(t *testing.T) {
	mem := vfs.NewMem()
	full := vfs.NewToggle(syscall.ENOSPC, vfs.OpWrite)
	opts := testOpts(vfs.NewErrorFS(mem, full), newTestClock())
	opts.Shards = 4
	ks := mustOpen(t, opts)
	se := ks.NewSession()
	for i := 0; i < 8; i++ {
		mustPut(t, ks, se, 0, fmt.Sprintf("k%d", i), "old", 0)
	}
	full.Enable()
	for i := 0; ; i++ {
		failing := 0
		for _, s := range ks.shards {
			if s.log.WriteErr() != nil {
				failing++
			}
		}
		if failing == len(ks.shards) {
			break
		}
		ks.Put(se, 0, fmt.Appendf(nil, "during%d", i), []byte("x"), 0, TypeString) // fails once the shard knows
		if err := se.Wait(); err != nil && !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Wait with a full disk = %v, want ENOSPC", err)
		}
	}
	check := func(ks *Keyspace) {
		t.Helper()
		for i := 0; i < 8; i++ {
			wantValue(t, ks, 0, fmt.Sprintf("k%d", i), "old")
		}
		if _, ok := ks.Lookup(nil, 0, []byte("new")); ok {
			t.Fatal("a key the failed EXEC created exists")
		}
	}
	for _, n := range []int{0, 8} {
		ran, err := ks.Exec(se, nil, func() {
			for i := 0; i < n; i++ {
				ks.Put(se, 0, fmt.Appendf(nil, "k%d", i), []byte("new"), 0, TypeString)
			}
			ks.Put(se, 0, []byte("new"), []byte("new"), 0, TypeString)
			ks.FlushDB(se, 1)
		})
		if !ran || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("EXEC of %d writes on a full disk: ran %v, err %v; want ENOSPC", n, ran, err)
		}
		check(ks)
	}
	full.Disable()
	if err := ks.Close(); err != nil {
		t.Fatal(err)
	}
	opts.FS = mem
	ks = mustOpen(t, opts)
	defer ks.Close()
	check(ks)
}

// TestExecCrashAllOrNone crashes an EXEC's commit and durability wait before every file-system
// call they make (and with random torn tails): each recovery finds every key as before the
// EXEC or every key as after it, never a mix. The EXEC writes keys in every shard, a chunked
// value, an append to one, a delete, an expire change and a FLUSHDB of a database that has keys.
func TestExecCrashAllOrNone(t *testing.T) {
	for _, random := range []bool{false, true} {
		t.Run(fmt.Sprintf("torn=%v", random), func(t *testing.T) {
			seed := testSeed(t)
			clk := newTestClock()
			mem := vfs.NewMem()
			cr := &crasher{mem: mem}
			if random {
				cr.rng = rand.New(rand.NewPCG(seed, 3))
			}
			opts := testOpts(vfs.NewErrorFS(mem, cr), clk)
			opts.Shards = 4
			opts.chunkMin, opts.chunkSize = 1000, 256
			ks := mustOpen(t, opts)
			se := ks.NewSession()
			var keys []string
			for s := 0; s < opts.Shards; s++ {
				for i := 0; i < 3; i++ {
					keys = append(keys, keyInShard(opts.Shards, 0, s, fmt.Sprintf("k%d.%d.", s, i)))
				}
			}
			big := strings.Repeat("B", 5000)
			for _, k := range keys {
				mustPut(t, ks, se, 0, k, "before", 0)
			}
			mustPut(t, ks, se, 0, "big", big, 0)
			mustPut(t, ks, se, 1, "flushed", "before", 0)
			before := func(ks *Keyspace) map[dbKey]mval {
				st, err := stateOf(ks, opts.Databases)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			want0 := before(ks)

			cr.mu.Lock()
			cr.every = true
			cr.mu.Unlock()
			ran, err := ks.Exec(se, nil, func() {
				for i, k := range keys {
					switch i % 3 {
					case 0:
						ks.Put(se, 0, []byte(k), []byte("after"), 0, TypeString)
					case 1:
						ks.Update(se, []Key{{Key: []byte(k)}}, func(tx *Tx) error { tx.Delete(0); return nil })
					case 2:
						ks.Update(se, []Key{{Key: []byte(k)}}, func(tx *Tx) error { tx.SetExpire(0, clk.Now()+1e9); return nil })
					}
				}
				ks.Update(se, []Key{{Key: []byte("big")}}, func(tx *Tx) error {
					return tx.WriteAt(0, 4000, []byte("APPENDED-PAST-THE-END"), TypeString)
				})
				ks.Put(se, 0, []byte("newbig"), []byte(strings.Repeat("N", 3000)), 0, TypeString)
				ks.FlushDB(se, 1)
				ks.Put(se, 1, []byte("after-flush"), []byte("after"), 0, TypeString)
			})
			if err == nil {
				err = se.Wait()
			}
			cr.mu.Lock()
			cr.every = false
			clones := append(cr.clones, mem.CrashClone())
			cr.mu.Unlock()
			if !ran || err != nil {
				t.Fatalf("exec: ran %v, %v", ran, err)
			}
			want1 := before(ks)
			mustClose(t, ks)
			if len(clones) < 3 {
				t.Fatalf("only %d crash points", len(clones))
			}
			counts := map[string]int{}
			for i, c := range clones {
				o := opts
				o.FS = c
				ks := mustOpen(t, o)
				got := before(ks)
				mustClose(t, ks)
				switch {
				case maps.Equal(got, want0):
					counts["none"]++
				case maps.Equal(got, want1):
					counts["all"]++
				default:
					t.Fatalf("crash point %d of %d: the EXEC is half there:\n%s", i+1, len(clones), diffStates(got, want0, want1))
				}
				if i == len(clones)-1 && !maps.Equal(got, want1) {
					t.Fatal("the acknowledged EXEC is not all there after a crash")
				}
			}
			if counts["none"] == 0 || counts["all"] == 0 {
				t.Fatalf("crash points %v: want some before and some after the commit", counts)
			}
			t.Logf("%d crash points: %v", len(clones), counts)
		})
	}
}

// diffStates shows which keys of got match the state before (a) or after (b).
func diffStates(got, a, b map[dbKey]mval) string {
	var out []string
	all := map[dbKey]bool{}
	for _, m := range []map[dbKey]mval{got, a, b} {
		for k := range m {
			all[k] = true
		}
	}
	for k := range all {
		gv, gok := got[k]
		av, aok := a[k]
		bv, bok := b[k]
		state := "neither"
		switch {
		case gok == aok && gv == av && gok == bok && gv == bv:
			continue
		case gok == aok && gv == av:
			state = "before"
		case gok == bok && gv == bv:
			state = "after"
		}
		out = append(out, fmt.Sprintf("  %v: %s (got %v %v)", k, state, short(gv.val), gok))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestMGetSnapshot: MGet with snapshot never sees half of a write of several keys in several
// shards, while such writes run and random collections move records and drop segments.
func TestMGetSnapshot(t *testing.T) {
	opts := testOpts(vfs.NewMem(), newTestClock())
	opts.Shards, opts.SegmentSize = 8, 4<<10
	opts.chunkMin, opts.chunkSize = 200, 64
	ks := mustOpen(t, opts)
	defer ks.Close()
	keys := make([][]byte, 12)
	tk := make([]Key, len(keys))
	for i := range keys {
		keys[i] = []byte(keyInShard(8, 0, i%8, fmt.Sprintf("m%d.", i)))
		tk[i] = Key{Key: keys[i]}
	}
	put := func(se *Session, gen int) error {
		return ks.Update(se, tk, func(tx *Tx) error {
			for i := range keys {
				v := fmt.Appendf(nil, "%08d", gen)
				if i%4 == 0 { // some values chunked
					v = append(v, strings.Repeat("c", 300)...)
				}
				tx.Put(i, v, 0, TypeString)
			}
			return nil
		})
	}
	if err := put(ks.NewSession(), 0); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer func() { stop.Store(true); wg.Wait() }() // before Close, also when the test fails
	errs := make(chan error, 4)
	wg.Add(2)
	go func() {
		defer wg.Done()
		se := ks.NewSession()
		for gen := 1; !stop.Load(); gen++ {
			if err := put(se, gen); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(3, 4))
		for !stop.Load() {
			if _, err := reclaimRandom(ks, rng, 2); err != nil {
				errs <- err
				return
			}
		}
	}()
	se := ks.NewSession()
	for n := 0; n < 2000; n++ {
		var gens []string
		err := ks.MGet(se, 0, keys, true, func(i int, v Value, _ Meta, ok bool, err error) error {
			if err != nil || !ok {
				return fmt.Errorf("key %d: %v, %v", i, ok, err)
			}
			b, err := valueBytes(v)
			if err != nil {
				return err
			}
			gens = append(gens, string(b[:8]))
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gens {
			if g != gens[0] {
				t.Fatalf("read %d saw a write half done: %q", n, gens)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
