package test

// End-to-end tests of lavik-data's event loops under concurrent load: a mixed pipelined workload
// checked reply by reply against a model, and redis-benchmark's pipelined GET, SET, MSET and a
// custom MGET. The server runs with its defaults: the io engine is io_uring where the kernel
// allows it, so each loop answers GETs on its own ring.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

// loopSeed is the seed of TestLoopMixedWorkload: LAVIK_TEST_SEED when set, else a fresh one,
// printed when the test fails.
func loopSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LAVIK_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LAVIK_TEST_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d; rerun with LAVIK_TEST_SEED=%d", seed, seed)
		}
	})
	return seed
}

// mixedWorker is one goroutine of TestLoopMixedWorkload, with its model of its own keys.
type mixedWorker struct {
	id    int
	rng   *rand.Rand
	model map[string]string
	n     int64 // its counter
	seq   int
	// lastShared is the last value of the shared counter it saw: others' INCRs may come
	// between its own, but the counter never goes back.
	lastShared int64
}

const (
	mixedWorkers = 64
	mixedKeys    = 10000 / mixedWorkers // per worker: 10,000 keys in all
)

func (w *mixedWorker) key() string { return fmt.Sprintf("w%d:k%d", w.id, w.rng.IntN(mixedKeys)) }

// value makes a value that names its writer, key and write: a reply carrying another worker's or
// another write's value is told apart.
func (w *mixedWorker) value(key string, size int) string {
	w.seq++
	head := fmt.Sprintf("%s/%d/", key, w.seq)
	return head + strings.Repeat(string(rune('a'+w.seq%26)), max(0, size-len(head)))
}

// expectation checks one command's result after the pipeline ran.
type expectation struct {
	cmd   redis.Cmder
	check func() string // "" when right
}

func describe(v string, ok bool) string {
	switch {
	case !ok:
		return "(nil)"
	case len(v) > 48:
		return fmt.Sprintf("%q...(%d bytes)", v[:32], len(v))
	}
	return strconv.Quote(v)
}

// round runs one pipeline of 10 to 40 random commands and checks every result.
func (w *mixedWorker) round(ctx context.Context, c *redis.Client) error {
	pipe := c.Pipeline()
	var exps []expectation
	str := func(cmd *redis.StringCmd, want string, ok bool) {
		exps = append(exps, expectation{cmd, func() string {
			got, err := cmd.Result()
			gotOK := err == nil
			if err != nil && err != redis.Nil {
				return "error " + err.Error()
			}
			if gotOK != ok || got != want {
				return "got " + describe(got, gotOK) + ", want " + describe(want, ok)
			}
			return ""
		}})
	}
	ok := func(cmd *redis.StatusCmd) {
		exps = append(exps, expectation{cmd, func() string {
			if got, err := cmd.Result(); err != nil || got != "OK" {
				return fmt.Sprintf("got %q, %v; want OK", got, err)
			}
			return ""
		}})
	}
	n := 10 + w.rng.IntN(31)
	for i := 0; i < n; i++ {
		switch r := w.rng.IntN(100); {
		case r < 30:
			k := w.key()
			v := w.value(k, 1024)
			w.model[k] = v
			ok(pipe.Set(ctx, k, v, 0))
		case r < 60:
			k := w.key()
			v, ok := w.model[k]
			str(pipe.Get(ctx, k), v, ok)
		case r < 75:
			keys := make([]string, 2+w.rng.IntN(15))
			want := make([]string, len(keys))
			present := make([]bool, len(keys))
			for j := range keys {
				keys[j] = w.key()
				want[j], present[j] = w.model[keys[j]]
			}
			cmd := pipe.MGet(ctx, keys...)
			exps = append(exps, expectation{cmd, func() string {
				got, err := cmd.Result()
				if err != nil {
					return "error " + err.Error()
				}
				if len(got) != len(keys) {
					return fmt.Sprintf("%d values for %d keys", len(got), len(keys))
				}
				for j, k := range keys {
					s, gotOK := got[j].(string)
					if gotOK != present[j] || s != want[j] {
						return fmt.Sprintf("element %d (%s): got %s, want %s", j, k, describe(s, gotOK), describe(want[j], present[j]))
					}
				}
				return ""
			}})
		case r < 85:
			w.n++
			want := w.n
			cmd := pipe.Incr(ctx, fmt.Sprintf("w%d:n", w.id))
			exps = append(exps, expectation{cmd, func() string {
				if got, err := cmd.Result(); err != nil || got != want {
					return fmt.Sprintf("got %d, %v; want %d", got, err, want)
				}
				return ""
			}})
		case r < 90:
			cmd := pipe.Incr(ctx, "shared:n")
			exps = append(exps, expectation{cmd, func() string {
				got, err := cmd.Result()
				if err != nil || got <= w.lastShared {
					return fmt.Sprintf("got %d, %v; want above %d, the last this worker saw", got, err, w.lastShared)
				}
				w.lastShared = got
				return ""
			}})
		case r < 93:
			// A 200 KiB value: stored in chunks, answered by a goroutine of its own.
			k := fmt.Sprintf("w%d:big%d", w.id, w.rng.IntN(2))
			v := w.value(k, 200<<10)
			w.model[k] = v
			ok(pipe.Set(ctx, k, v, 0))
		case r < 97:
			k := fmt.Sprintf("w%d:big%d", w.id, w.rng.IntN(2))
			v, ok := w.model[k]
			str(pipe.Get(ctx, k), v, ok)
		default:
			k := w.key()
			_, ok := w.model[k]
			delete(w.model, k)
			cmd := pipe.Del(ctx, k)
			exps = append(exps, expectation{cmd, func() string {
				want := int64(0)
				if ok {
					want = 1
				}
				if got, err := cmd.Result(); err != nil || got != want {
					return fmt.Sprintf("got %d, %v; want %d", got, err, want)
				}
				return ""
			}})
		}
	}
	// Exec reports the first failed command, a GET of a missing key included: each result is
	// checked below instead.
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		var rerr redis.Error
		if !errors.As(err, &rerr) {
			return fmt.Errorf("pipeline: %w", err)
		}
	}
	for i, e := range exps {
		if what := e.check(); what != "" {
			return fmt.Errorf("command %d of %d (%.80s): %s", i, len(exps), fmt.Sprint(e.cmd.Args()), what)
		}
	}
	return nil
}

// TestLoopMixedWorkload: 64 goroutines, each on a connection of its own, run pipelines of SET,
// GET, MGET, INCR and DEL on 10,000 keys of 1 KiB values (each goroutine its own share) and on
// values of 200 KiB, for a few seconds. Every result must be the one a per-goroutine model
// predicts; a counter all of them increment never goes back for any one of them.
func TestLoopMixedWorkload(t *testing.T) {
	seed := loopSeed(t)
	s := harness.Start(t)
	c := s.ClientOpts(&redis.Options{PoolSize: mixedWorkers, MinIdleConns: mixedWorkers})
	ctx := harness.Ctx(t)
	deadline := time.Now().Add(4 * time.Second)
	errs := make(chan error, mixedWorkers)
	rounds := make([]int, mixedWorkers)
	var wg sync.WaitGroup
	for i := 0; i < mixedWorkers; i++ {
		w := &mixedWorker{id: i, rng: rand.New(rand.NewPCG(seed, uint64(i))), model: map[string]string{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := w.round(ctx, c); err != nil {
					errs <- fmt.Errorf("worker %d, pipeline %d: %w", w.id, rounds[w.id], err)
					return
				}
				rounds[w.id]++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := 0
	for _, n := range rounds {
		total += n
	}
	t.Logf("%d pipelines checked", total)
	if total < mixedWorkers {
		t.Errorf("only %d pipelines in 4s", total)
	}
}

// benchTitleRE matches the requests-per-second line redis-benchmark -q prints for each test.
var benchTitleRE = regexp.MustCompile(`(?m)^(.+?): [0-9.]+ requests per second`)

// TestRedisBenchmarkLoop runs redis-benchmark pipelined (-P 16) with 50 clients against the
// event loops: GET, SET and MSET, then MGET of ten random keys (redis-benchmark has no MGET test
// of its own, so it is given as a command line). Each run must finish and report its figures,
// with no error printed and none counted by the server. It checks that the loops serve the stock
// tool, not how fast.
func TestRedisBenchmarkLoop(t *testing.T) {
	bench := lookTool(t, "redis-benchmark")
	s := harness.Start(t)
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"-h", host, "-p", port, "-c", "50", "-P", "16", "-r", "10000", "-q"}
	mget := []string{"MGET"}
	for i := 0; i < 10; i++ {
		mget = append(mget, "key:__rand_int__")
	}
	for _, run := range []struct {
		args []string
		want []string // the titles of the tests' lines
	}{
		{[]string{"-t", "get,set,mset", "-n", "20000", "-d", "1024"}, []string{"GET", "MSET (10 keys)", "SET"}},
		{append([]string{"-n", "5000"}, mget...), []string{strings.Join(mget, " ")}},
	} {
		out := runTool(t, bench, append(append([]string{}, base...), run.args...)...)
		// -q redraws a progress line with \r; the final figures follow the last \r.
		out = strings.ReplaceAll(out, "\r", "\n")
		if m := benchErrRE.FindString(out); m != "" {
			t.Fatalf("redis-benchmark %s printed %q:\n%s", strings.Join(run.args, " "), m, out)
		}
		seen := map[string]bool{}
		for _, m := range benchTitleRE.FindAllStringSubmatch(out, -1) {
			seen[m[1]] = true
		}
		for _, w := range run.want {
			if !seen[w] {
				t.Fatalf("redis-benchmark %s: no requests-per-second line for %q:\n%s", strings.Join(run.args, " "), w, out)
			}
		}
		t.Logf("redis-benchmark %s:\n%s", strings.Join(run.args, " "), strings.Join(benchTitleRE.FindAllString(out, -1), "\n"))
	}
	// redis-cli, not go-redis: go-redis's CLIENT SETINFO on connecting is an error reply of
	// its own (Redis 7.0 has no SETINFO either).
	info := runTool(t, lookTool(t, "redis-cli"), "-h", host, "-p", port, "INFO", "stats")
	if !regexp.MustCompile(`(?m)^total_error_replies:0\r?$`).MatchString(info) {
		t.Fatalf("the server replied with errors during the runs:\n%s", info)
	}
}
