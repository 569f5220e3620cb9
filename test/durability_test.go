package test

// Durability tests write through the public protocol, stop the server cleanly or with kill -9,
// and check what comes back against what the clients were told.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

// ttlSlack absorbs millisecond rounding and the gap between the test's clock readings and the
// server's; TTLs here are minutes long, so the windows stay tight.
const ttlSlack = 50 * time.Millisecond

// durEntry is what one key must hold. A key with a TTL must expire between setLo+ttl and
// setHi+ttl, the clock readings taken around the pipeline that set it.
type durEntry struct {
	val          []byte
	ttl          time.Duration // 0: no TTL
	setLo, setHi time.Time
}

type durModel struct {
	dbs     map[int]map[string]*durEntry
	deleted map[int]map[string]bool
}

func (m *durModel) set(db int, k string, e *durEntry) {
	m.dbs[db][k] = e
	delete(m.deleted[db], k)
}

func (m *durModel) del(db int, k string) {
	delete(m.dbs[db], k)
	m.deleted[db][k] = true
}

// randValue returns sizes from 0 B to 4 KiB, log-uniform so that small values dominate, and
// 1 in 5,000 values of 100-200 KiB.
func randValue(rng *rand.Rand) []byte {
	n := int(math.Exp(rng.Float64()*math.Log(4097))) - 1
	if rng.IntN(5000) == 0 {
		n = 100<<10 + rng.IntN(100<<10)
	}
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func randTTL(rng *rand.Rand) time.Duration {
	return 5*time.Minute + time.Duration(rng.Int64N(int64(10*time.Minute)))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// verifyDurModel checks every live key's value and TTL, every deleted key's absence and each
// database's DBSIZE.
func verifyDurModel(t *testing.T, s *harness.Server, m *durModel, when string) {
	t.Helper()
	ctx := harness.Ctx(t)
	var problems []string
	report := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	for _, db := range []int{0, 1, 3} {
		c := s.ClientOpts(&redis.Options{DB: db})
		n, err := c.DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("%s: DBSIZE db %d: %v", when, db, err)
		}
		if n != int64(len(m.dbs[db])) {
			report("db %d: DBSIZE %d, want %d", db, n, len(m.dbs[db]))
		}
		keys := sortedKeys(m.dbs[db])
		for lo := 0; lo < len(keys); lo += 1000 {
			batch := keys[lo:min(lo+1000, len(keys))]
			pipe := c.Pipeline()
			gets := make([]*redis.StringCmd, len(batch))
			pttls := make([]*redis.Cmd, len(batch))
			for i, k := range batch {
				gets[i] = pipe.Get(ctx, k)
				pttls[i] = pipe.Do(ctx, "PTTL", k)
			}
			tb := time.Now()
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("%s: db %d: pipeline: %v", when, db, err)
			}
			ta := time.Now()
			for i, k := range batch {
				e := m.dbs[db][k]
				got, err := gets[i].Bytes()
				switch {
				case errors.Is(err, redis.Nil):
					report("db %d key %q: missing", db, k)
					continue
				case err != nil:
					t.Fatalf("%s: GET %q: %v", when, k, err)
				case string(got) != string(e.val):
					report("db %d key %q: value of %d bytes differs from the %d written (first difference at byte %d)",
						db, k, len(got), len(e.val), firstDiff(got, e.val))
				}
				pttl, err := pttls[i].Int64()
				if err != nil {
					t.Fatalf("%s: PTTL %q: %v", when, k, err)
				}
				if e.ttl == 0 {
					if pttl != -1 {
						report("db %d key %q: PTTL %d, want -1 (no TTL)", db, k, pttl)
					}
					continue
				}
				minMS := (e.setLo.Add(e.ttl).Sub(ta) - ttlSlack).Milliseconds()
				maxMS := (e.setHi.Add(e.ttl).Sub(tb) + ttlSlack).Milliseconds()
				if pttl < minMS || pttl > maxMS {
					report("db %d key %q: PTTL %d ms, want %d..%d", db, k, pttl, minMS, maxMS)
				}
			}
			if len(problems) > 20 {
				break
			}
		}
		deleted := sortedKeys(m.deleted[db])
		for lo := 0; lo < len(deleted); lo += 1000 {
			batch := deleted[lo:min(lo+1000, len(deleted))]
			pipe := c.Pipeline()
			cmds := make([]*redis.IntCmd, len(batch))
			for i, k := range batch {
				cmds[i] = pipe.Exists(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("%s: db %d: pipeline: %v", when, db, err)
			}
			for i, k := range batch {
				if cmds[i].Val() != 0 {
					report("db %d key %q: deleted but exists", db, k)
				}
			}
		}
		c.Close()
	}
	if len(problems) > 0 {
		if len(problems) > 20 {
			problems = append(problems[:20], "... and more")
		}
		t.Fatalf("%s:\n  %s", when, strings.Join(problems, "\n  "))
	}
}

func firstDiff(a, b []byte) int {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestDurabilityRestartKeepsEverything writes 100,000 keys (20,000 with -short) of mixed sizes
// and TTLs into db 0 and 5,000 into db 3, overwrites and deletes some, and checks everything
// byte for byte across two clean restarts.
func TestDurabilityRestartKeepsEverything(t *testing.T) {
	seed := e2eSeed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	s := harness.Start(t)
	ctx := harness.Ctx(t)
	m := &durModel{
		dbs:     map[int]map[string]*durEntry{0: {}, 1: {}, 3: {}},
		deleted: map[int]map[string]bool{0: {}, 1: {}, 3: {}},
	}
	clients := map[int]*redis.Client{0: s.ClientOpts(&redis.Options{DB: 0}), 3: s.ClientOpts(&redis.Options{DB: 3})}
	keyName := func(i int) string { return fmt.Sprintf("dur:%06d", i) }

	// exec runs one pipeline and returns the clock readings around it.
	exec := func(pipe redis.Pipeliner) (time.Time, time.Time) {
		t.Helper()
		lo := time.Now()
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("pipeline: %v", err)
		}
		return lo, time.Now()
	}

	// load writes keys first..first+n-1 into db, 1,000 per pipeline: a third with TTLs (SET PX
	// or SET then PEXPIRE), the rest by MSET or plain SET.
	load := func(db, first, n int) {
		c := clients[db]
		for lo := first; lo < first+n; lo += 1000 {
			pipe := c.Pipeline()
			type pending struct {
				k string
				e *durEntry
			}
			var batch []pending
			var mset []any
			useMSET := rng.IntN(2) == 0
			for i := lo; i < min(lo+1000, first+n); i++ {
				k := keyName(i)
				e := &durEntry{val: randValue(rng)}
				switch {
				case rng.IntN(3) == 0:
					e.ttl = randTTL(rng)
					if rng.IntN(2) == 0 {
						pipe.Set(ctx, k, e.val, e.ttl)
					} else {
						pipe.Set(ctx, k, e.val, 0)
						pipe.PExpire(ctx, k, e.ttl)
					}
				case useMSET:
					mset = append(mset, k, e.val)
					if len(mset) == 200 {
						pipe.MSet(ctx, mset...)
						mset = nil
					}
				default:
					pipe.Set(ctx, k, e.val, 0)
				}
				batch = append(batch, pending{k, e})
			}
			if len(mset) > 0 {
				pipe.MSet(ctx, mset...)
			}
			setLo, setHi := exec(pipe)
			for _, p := range batch {
				p.e.setLo, p.e.setHi = setLo, setHi
				m.set(db, p.k, p.e)
			}
		}
	}

	start := time.Now()
	nKeys := 100000
	if testing.Short() {
		nKeys = 20000
	}
	load(0, 0, nKeys)
	load(3, 0, 5000) // same names as in db 0, other values

	// Overwrite a tenth of db 0 in several ways, each with its own effect on the TTL.
	{
		c := clients[0]
		pipe := c.Pipeline()
		type change struct {
			k string
			e *durEntry
		}
		var changes []change
		flush := func() {
			if len(changes) == 0 {
				return
			}
			lo, hi := exec(pipe)
			for _, ch := range changes {
				if ch.e.ttl != 0 && ch.e.setLo.IsZero() {
					ch.e.setLo, ch.e.setHi = lo, hi
				}
				m.set(0, ch.k, ch.e)
			}
			changes = nil
			pipe = c.Pipeline()
		}
		for _, i := range rng.Perm(nKeys)[:nKeys/10] {
			k := keyName(i)
			old := m.dbs[0][k]
			e := &durEntry{val: randValue(rng)}
			switch rng.IntN(5) {
			case 0: // plain SET drops the TTL
				pipe.Set(ctx, k, e.val, 0)
			case 1:
				pipe.SetArgs(ctx, k, e.val, redis.SetArgs{KeepTTL: true})
				e.ttl, e.setLo, e.setHi = old.ttl, old.setLo, old.setHi
			case 2:
				e.ttl = randTTL(rng)
				pipe.Set(ctx, k, e.val, e.ttl)
			case 3:
				pipe.Persist(ctx, k)
				e.val = old.val
			case 4: // APPEND keeps the TTL
				extra := randValue(rng)
				pipe.Append(ctx, k, string(extra))
				e.val = append(slices.Clip(old.val), extra...)
				e.ttl, e.setLo, e.setHi = old.ttl, old.setLo, old.setHi
			}
			changes = append(changes, change{k, e})
			if len(changes) == 1000 {
				flush()
			}
		}
		flush()
	}

	// Delete 5% of db 0 and 2% of db 3 with DEL, UNLINK and GETDEL; recreate a fifth of them.
	for _, d := range []struct{ db, frac int }{{0, 20}, {3, 50}} {
		db, frac := d.db, d.frac
		c := clients[db]
		keys := sortedKeys(m.dbs[db])
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		victims := keys[:len(keys)/frac]
		pipe := c.Pipeline()
		var getdels []*redis.StringCmd
		var getdelWant [][]byte
		for i := 0; i < len(victims); {
			switch rng.IntN(3) {
			case 0:
				n := min(1+rng.IntN(10), len(victims)-i)
				pipe.Del(ctx, victims[i:i+n]...)
				i += n
			case 1:
				pipe.Unlink(ctx, victims[i])
				i++
			case 2:
				getdels = append(getdels, pipe.GetDel(ctx, victims[i]))
				getdelWant = append(getdelWant, m.dbs[db][victims[i]].val)
				i++
			}
		}
		exec(pipe)
		for i, cmd := range getdels {
			if got, _ := cmd.Bytes(); string(got) != string(getdelWant[i]) {
				t.Fatalf("GETDEL %s: got %d bytes, want the %d written", cmd.Args()[1], len(got), len(getdelWant[i]))
			}
		}
		for _, k := range victims {
			m.del(db, k)
		}
		pipe = c.Pipeline()
		var again []string
		var vals []*durEntry
		for _, k := range victims[:len(victims)/5] {
			e := &durEntry{val: randValue(rng)}
			pipe.Set(ctx, k, e.val, 0)
			again, vals = append(again, k), append(vals, e)
		}
		exec(pipe)
		for i, k := range again {
			m.set(db, k, vals[i])
		}
	}
	t.Logf("wrote %d+%d keys in %v", len(m.dbs[0]), len(m.dbs[3]), time.Since(start).Round(time.Millisecond))

	verifyDurModel(t, s, m, "before restart")
	for i := 1; i <= 2; i++ {
		start := time.Now()
		s.Restart()
		t.Logf("restart %d took %v", i, time.Since(start).Round(time.Millisecond))
		verifyDurModel(t, s, m, fmt.Sprintf("after restart %d", i))
	}
}

// killOp is one write by a kill -9 writer.
type killOp struct {
	kind byte // 's' SET, 'i' INCR, 'd' DEL
	key  string
	val  string // for SET
}

// killState is what the model knows about a key: its value if it exists.
type killState struct {
	exists bool
	val    string
}

func (op killOp) String() string {
	switch op.kind {
	case 's':
		return fmt.Sprintf("SET %s %s", op.key, shorten(op.val))
	case 'i':
		return "INCR " + op.key
	}
	return "DEL " + op.key
}

func (st killState) String() string {
	if !st.exists {
		return "absent"
	}
	return shorten(st.val)
}

// after returns the state of the key once op has been applied to st.
func (op killOp) after(st killState) killState {
	switch op.kind {
	case 's':
		return killState{true, op.val}
	case 'd':
		return killState{}
	}
	n, _ := strconv.ParseInt(st.val, 10, 64)
	return killState{true, strconv.FormatInt(n+1, 10)}
}

// killWriter owns its keys; model holds the acknowledged state of each, inflight the write that
// was sent but not acknowledged when the server died.
type killWriter struct {
	id       int
	keys     []string
	model    map[string]killState
	inflight *killOp
	err      error // an unexpected reply (not a connection error)
}

func newKillWriter(id int) *killWriter {
	w := &killWriter{id: id, model: map[string]killState{}}
	for i := 0; i < 24; i++ {
		w.keys = append(w.keys, fmt.Sprintf("w%d:s%d", id, i))
	}
	for i := 0; i < 4; i++ {
		w.keys = append(w.keys, fmt.Sprintf("w%d:c%d", id, i))
	}
	return w
}

// run writes until an error: SET on string keys, INCR on counter keys, DEL on both. Every reply
// is checked against the model so far.
func (w *killWriter) run(ctx context.Context, c *redis.Conn, rng *rand.Rand, round int,
	acks *atomic.Int64, stop *atomic.Bool) {
	for n := 0; !stop.Load(); n++ {
		var op killOp
		switch r := rng.IntN(10); {
		case r < 5:
			op = killOp{kind: 's', key: w.keys[rng.IntN(24)]}
			pad := rng.IntN(2000)
			if rng.IntN(50) == 0 {
				pad = 8<<10 + rng.IntN(16<<10)
			}
			op.val = fmt.Sprintf("w%d-r%d-n%d-", w.id, round, n)
			for len(op.val) < pad {
				op.val += "0123456789abcdef"
			}
		case r < 8:
			op = killOp{kind: 'i', key: w.keys[24+rng.IntN(4)]}
		default:
			op = killOp{kind: 'd', key: w.keys[rng.IntN(len(w.keys))]}
		}
		w.inflight = &op
		before := w.model[op.key]
		var err error
		switch op.kind {
		case 's':
			err = c.Set(ctx, op.key, op.val, 0).Err()
		case 'i':
			var got int64
			got, err = c.Incr(ctx, op.key).Result()
			if want := op.after(before).val; err == nil && strconv.FormatInt(got, 10) != want {
				w.err = fmt.Errorf("INCR %s = %d, want %s", op.key, got, want)
				return
			}
		case 'd':
			var got int64
			got, err = c.Del(ctx, op.key).Result()
			want := int64(0)
			if before.exists {
				want = 1
			}
			if err == nil && got != want {
				w.err = fmt.Errorf("DEL %s = %d, want %d", op.key, got, want)
				return
			}
		}
		if err != nil {
			var rerr redis.Error
			if errors.As(err, &rerr) {
				w.err = fmt.Errorf("%v: %w", op, err)
			}
			return // the server is gone; op stays in flight
		}
		w.model[op.key] = op.after(before)
		w.inflight = nil
		acks.Add(1)
	}
}

// plausible reports whether st is a state writer w could have left in key k at some point: a
// loss of recent writes, not garbage or another writer's data.
func (w *killWriter) plausible(k string, st killState) bool {
	if !st.exists {
		return true
	}
	if strings.HasPrefix(k, fmt.Sprintf("w%d:s", w.id)) {
		return strings.HasPrefix(st.val, fmt.Sprintf("w%d-", w.id))
	}
	n, err := strconv.ParseInt(st.val, 10, 64)
	return err == nil && n > 0
}

// runKillRounds runs rounds of 8 concurrent writers, kill -9 at a random moment 0.5-1 s into
// each round, restarts on the same directory and checks every acknowledged write. With lossOK,
// a key that went back to an older state of its own is logged instead of failing the test.
func runKillRounds(t *testing.T, rounds int, lossOK bool, args ...string) {
	seed := e2eSeed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	s := harness.Start(t, args...)
	ctx := harness.Ctx(t)
	writers := make([]*killWriter, 8)
	for i := range writers {
		writers[i] = newKillWriter(i)
	}
	for round := 1; round <= rounds; round++ {
		c := s.ClientOpts(&redis.Options{PoolSize: len(writers) + 2, MaxRetries: -1,
			ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
		var acks atomic.Int64
		var stop atomic.Bool
		var wg sync.WaitGroup
		for i, w := range writers {
			wg.Add(1)
			wrng := rand.New(rand.NewPCG(uint64(seed), uint64(100*round+i)))
			// One sticky connection per writer: once the kill breaks it, go-redis reports the
			// error instead of dialing the dead server again.
			conn := c.Conn()
			go func() {
				defer wg.Done()
				defer conn.Close()
				w.run(ctx, conn, wrng, round, &acks, &stop)
			}()
		}
		killAt := time.Now().Add(500*time.Millisecond + time.Duration(rng.Int64N(int64(500*time.Millisecond))))
		harness.Eventually(t, 60*time.Second, "0.5-1 s of acknowledged writes", func() bool {
			return time.Now().After(killAt) && acks.Load() >= 50
		})
		s.Kill()
		stop.Store(true)
		wg.Wait()
		c.Close()
		inflight := 0
		for _, w := range writers {
			if w.err != nil {
				t.Fatalf("round %d, writer %d: %v (seed %d)", round, w.id, w.err, seed)
			}
			if w.inflight != nil {
				inflight++
			}
		}
		t.Logf("round %d: %d writes acknowledged, %d unacknowledged when the server died", round, acks.Load(), inflight)

		s.KillRestart()
		v := s.ClientOpts(&redis.Options{})
		live, lost := int64(0), 0
		for _, w := range writers {
			for _, k := range w.keys {
				got, err := v.Get(ctx, k).Result()
				st := killState{exists: err == nil, val: got}
				if err != nil && !errors.Is(err, redis.Nil) {
					t.Fatalf("GET %s: %v", k, err)
				}
				acked := w.model[k]
				ok := st == acked
				if w.inflight != nil && w.inflight.key == k && st == w.inflight.after(acked) {
					ok = true
				}
				if !ok && lossOK && w.plausible(k, st) {
					lost++
					ok = true
				}
				if !ok {
					pending := "none"
					if w.inflight != nil {
						pending = w.inflight.String()
					}
					t.Fatalf("round %d, writer %d, key %s: after kill -9 got %v, acknowledged %v, unacknowledged write: %s (seed %d)",
						round, w.id, k, st, acked, pending, seed)
				}
				w.model[k] = st
				if st.exists {
					live++
				}
			}
			w.inflight = nil
		}
		if lost > 0 {
			t.Logf("round %d: %d keys lost acknowledged writes (tolerated only against Redis)", round, lost)
		}
		if n, err := v.DBSize(ctx).Result(); err != nil || n != live {
			t.Fatalf("round %d: DBSIZE %d (%v), want %d (seed %d)", round, n, err, live, seed)
		}
		v.Close()
	}
}

// TestDurabilityKill9AppendfsyncAlways: with fsync before every reply, no acknowledged write is
// lost to kill -9; three rounds on the same data directory.
func TestDurabilityKill9AppendfsyncAlways(t *testing.T) {
	runKillRounds(t, 3, false, "--appendfsync", "always")
}

// TestDurabilityKill9Everysec: a process crash (not a power loss) loses nothing acknowledged
// under the default policy either, because each write reaches the OS before its reply is sent.
//
// Redis does not quite promise this: under everysec it postpones the write(2) of its AOF buffer
// while the previous background fsync is still running (up to 2 s) and replies meanwhile, so on
// a slow disk a kill -9 loses acknowledged writes. Against Redis such losses are only logged.
func TestDurabilityKill9Everysec(t *testing.T) {
	runKillRounds(t, 2, harness.IsRedis())
}

// TestDurabilityExpiredKeysStayExpiredAfterRestart: keys that expired before a clean or kill -9
// restart, or while the server was down, do not come back; long TTLs survive.
func TestDurabilityExpiredKeysStayExpiredAfterRestart(t *testing.T) {
	// always: the kill -9 phase is about expiry, not about the everysec window (see above).
	s := harness.Start(t, "--appendfsync", "always")
	ctx := harness.Ctx(t)
	m := &durModel{dbs: map[int]map[string]*durEntry{0: {}, 1: {}, 3: {}},
		deleted: map[int]map[string]bool{0: {}, 1: {}, 3: {}}}

	phase := func(name string, restart func()) {
		c := s.ClientOpts(&redis.Options{})
		pipe := c.Pipeline()
		var long []string
		for i := 0; i < 200; i++ {
			k := fmt.Sprintf("%s:short:%d", name, i)
			if i%2 == 0 {
				pipe.Set(ctx, k, "v", 200*time.Millisecond)
			} else {
				pipe.Set(ctx, k, "v", 0)
				pipe.PExpire(ctx, k, 200*time.Millisecond)
			}
			m.deleted[0][k] = true
			long = append(long, fmt.Sprintf("%s:long:%d", name, i))
			pipe.Set(ctx, long[i], "long", time.Hour)
			plain := fmt.Sprintf("%s:plain:%d", name, i)
			pipe.Set(ctx, plain, "plain", 0)
			m.dbs[0][plain] = &durEntry{val: []byte("plain")}
		}
		lo := time.Now()
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		hi := time.Now()
		for _, k := range long {
			m.dbs[0][k] = &durEntry{val: []byte("long"), ttl: time.Hour, setLo: lo, setHi: hi}
		}
		// The probe is set last, so once it has expired all the short keys have too; only the
		// probe is read, the others stay untouched until the restart.
		probe := name + ":probe"
		if err := c.Set(ctx, probe, "p", 200*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
		m.deleted[0][probe] = true
		harness.Eventually(t, 30*time.Second, "the probe key to expire", func() bool {
			return c.Exists(ctx, probe).Val() == 0
		})
		c.Close()
		restart()
		verifyExpired(t, s, m, name)
	}
	phase("clean", s.Restart)
	phase("kill", s.KillRestart)

	// Keys that expire while the server is down must not come back either.
	c := s.ClientOpts(&redis.Options{})
	pipe := c.Pipeline()
	for i := 0; i < 200; i++ {
		k := fmt.Sprintf("down:short:%d", i)
		pipe.Set(ctx, k, "v", 300*time.Millisecond)
		m.deleted[0][k] = true
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	expired := time.Now().Add(300 * time.Millisecond)
	c.Close()
	s.Stop()
	// Waiting for the clock itself is the point here: there is no event to poll while the
	// server is down.
	harness.Eventually(t, 10*time.Second, "the TTL to pass while the server is down", func() bool {
		return time.Now().After(expired.Add(50 * time.Millisecond))
	})
	s.Restart()
	verifyExpired(t, s, m, "down")
}

// verifyExpired checks that SCAN, EXISTS and GET show no expired key right after a restart,
// that the other keys are intact, and that DBSIZE settles on the live count (Redis counts
// expired keys that nothing has removed yet, so DBSIZE alone may lag).
func verifyExpired(t *testing.T, s *harness.Server, m *durModel, when string) {
	t.Helper()
	ctx := harness.Ctx(t)
	c := s.ClientOpts(&redis.Options{})
	seen := map[string]bool{}
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		seen[iter.Val()] = true
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	for k := range m.deleted[0] {
		if seen[k] {
			t.Fatalf("%s: SCAN returned expired key %q", when, k)
		}
	}
	for k := range m.dbs[0] {
		if !seen[k] {
			t.Fatalf("%s: SCAN did not return live key %q", when, k)
		}
	}
	dead := sortedKeys(m.deleted[0])
	if n := c.Exists(ctx, dead...).Val(); n != 0 {
		t.Fatalf("%s: %d expired keys still exist", when, n)
	}
	for _, k := range dead[:10] {
		if err := c.Get(ctx, k).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("%s: GET %s of an expired key: %v", when, k, err)
		}
	}
	harness.Eventually(t, 10*time.Second, "DBSIZE to count only live keys", func() bool {
		return c.DBSize(ctx).Val() == int64(len(m.dbs[0]))
	})
	c.Close()
	verifyDurModel(t, s, m, when)
}
