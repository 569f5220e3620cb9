package test

// HyperLogLog: PFADD, PFCOUNT and PFMERGE through go-redis with Redis's errors, and byte
// compatibility with redis-server: the same PFADDs give the same bytes on both, and a value
// copied from one to the other with GET and SET counts the same.

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

func TestHyperLogLog(t *testing.T) {
	_, c := startServer(t)
	subtest(t, c, "Basics", func(t *testing.T, k checker) {
		k.eq(1, "PFADD", "h", "a", "b", "c")
		k.eq(0, "PFADD", "h", "a")
		k.eq(3, "PFCOUNT", "h")
		k.eq(1, "PFADD", "e") // creates an empty HLL
		k.eq(0, "PFADD", "e")
		k.eq(0, "PFCOUNT", "e")
		k.eq(0, "PFCOUNT", "missing")
		k.eq(1, "PFADD", "h2", "c", "d")
		k.eq(4, "PFCOUNT", "h", "h2", "missing")
		k.ok("PFMERGE", "m", "h", "h2")
		k.eq(4, "PFCOUNT", "m")
		k.ok("PFMERGE", "m2")
		k.eq(0, "PFCOUNT", "m2")
		k.eq("string", "TYPE", "m")
		k.eq("raw", "OBJECT", "ENCODING", "m")
		for i := 0; i < 2000; i++ {
			k.do("PFADD", "big", "e"+strconv.Itoa(i), "f"+strconv.Itoa(i))
		}
		k.between(3920, 4080, "PFCOUNT", "big")
		k.eq(int64(12304), "STRLEN", "big")
		k.ok("PFMERGE", "h", "big")
		k.between(3920, 4080, "PFCOUNT", "h")
	})
	subtest(t, c, "Errors", func(t *testing.T, k checker) {
		k.do("RPUSH", "l", "a")
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "PFADD", "l", "a")
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "PFCOUNT", "l")
		k.err("WRONGTYPE Operation against a key holding the wrong kind of value", "PFMERGE", "d", "l")
		k.ok("SET", "s", "not an hll at all")
		k.err("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFADD", "s", "a")
		k.err("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFCOUNT", "s")
		k.err("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFCOUNT", "s", "l")
		k.err("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFMERGE", "s", "missing")
		// A sparse value with bytes past its last register is corrupt.
		k.eq(1, "PFADD", "h", "a", "b")
		k.do("APPEND", "h", "hello")
		k.err("INVALIDOBJ Corrupted HLL object detected", "PFCOUNT", "h")
		k.err("INVALIDOBJ Corrupted HLL object detected", "PFCOUNT", "h", "missing")
		k.err("INVALIDOBJ Corrupted HLL object detected", "PFMERGE", "d", "h")
		// A dense value of the wrong length is not an HLL.
		for i := 0; i < 3000; i++ {
			k.do("PFADD", "d", strconv.Itoa(i))
		}
		k.do("APPEND", "d", "x")
		k.err("WRONGTYPE Key is not a valid HyperLogLog string value.", "PFCOUNT", "d")
		k.err("ERR wrong number of arguments for 'pfadd' command", "PFADD")
	})
}

// startRedisRef starts a redis-server on an ephemeral port for the test, the reference the
// byte-compatibility tests compare with, and stops it at the end.
func startRedisRef(t *testing.T) *redis.Client {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed: cannot compare with it")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), Protocol: 2})
	t.Cleanup(func() { c.Close() })
	ctx := harness.Ctx(t)
	harness.Eventually(t, 10*time.Second, "redis-server answers", func() bool { return c.Ping(ctx).Err() == nil })
	return c
}

// TestHyperLogLogRedisBytes runs the same PFADD, PFCOUNT and PFMERGE on the server under test
// and on a redis-server it starts, and compares the values byte for byte after every step,
// through sparse values, the promotion to dense and dense values; then copies values across
// both ways and checks the counts.
func TestHyperLogLogRedisBytes(t *testing.T) {
	ref := startRedisRef(t)
	_, c := startServer(t)
	ctx := harness.Ctx(t)
	same := func(what, key string) {
		t.Helper()
		a, errA := c.Get(ctx, key).Result()
		b, errB := ref.Get(ctx, key).Result()
		if a != b || (errA == nil) != (errB == nil) {
			t.Fatalf("%s: %s differs: %d bytes (%v) here, %d bytes (%v) on redis-server; first difference at %d",
				what, key, len(a), errA, len(b), errB, firstDiff([]byte(a), []byte(b)))
		}
	}
	both := func(args ...any) {
		t.Helper()
		x, errA := c.Do(ctx, args...).Result()
		y, errB := ref.Do(ctx, args...).Result()
		if fmt.Sprint(x, errA) != fmt.Sprint(y, errB) {
			t.Fatalf("%v: %v, %v here; %v, %v on redis-server", args, x, errA, y, errB)
		}
	}
	n := 0
	for _, batch := range []int{1, 1, 2, 5, 10, 50, 100, 300, 500, 1000, 3000, 10000} {
		args := []any{"PFADD", "h"}
		for i := 0; i < batch; i++ {
			args = append(args, fmt.Sprintf("item-%d-%x", n, n*7919))
			n++
		}
		both(args...)
		same(fmt.Sprintf("after %d elements", n), "h")
		both("PFCOUNT", "h")
		same(fmt.Sprintf("after PFCOUNT of %d elements", n), "h")
		both("PFADD", "h", "item-0-0") // already counted: nothing changes
		same("after a repeated element", "h")
	}
	// Values with registers above 32 (VAL's limit) go dense at once: long zero runs in the hash.
	for i := 0; i < 300; i++ {
		both("PFADD", "s"+strconv.Itoa(i%3), "x"+strconv.Itoa(i), strconv.Itoa(i*i))
	}
	for i := 0; i < 3; i++ {
		same("small sparse values", "s"+strconv.Itoa(i))
	}
	both("PFMERGE", "m", "s0", "s1", "s2")
	same("PFMERGE of sparse values", "m")
	both("PFMERGE", "m2", "s0", "h")
	same("PFMERGE of sparse and dense", "m2")
	both("PFCOUNT", "s0", "s1", "h")
	// Copies both ways count the same as the original.
	for _, key := range []string{"h", "s1", "m"} {
		both("PFADD", key, "one more")
		v := ref.Get(ctx, key).Val()
		if err := c.Set(ctx, "from-redis:"+key, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		want := ref.PFCount(ctx, key).Val()
		if got := c.PFCount(ctx, "from-redis:"+key).Val(); got != want {
			t.Fatalf("a copy of redis-server's %s counts %d here; redis-server counts %d", key, got, want)
		}
		v = c.Get(ctx, key).Val()
		if err := ref.Set(ctx, "from-here:"+key, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := ref.PFCount(ctx, "from-here:"+key).Val(); got != c.PFCount(ctx, key).Val() {
			t.Fatalf("redis-server counts a copy of %s as %d; here it counts %d", key, got, c.PFCount(ctx, key).Val())
		}
	}
}
