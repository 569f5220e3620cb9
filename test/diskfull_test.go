package test

// Disk-full test: lavik-data runs on a small file system of its own until the value log cannot
// be written, and is checked against DESIGN.md's promise: writes fail with a clear error, reads
// go on, nothing already written is lost, and the node recovers by itself when space returns.
//
// The file system is a loop-mounted ext4 image (O_DIRECT reads, delayed allocation) and a tmpfs
// (buffered reads; ENOSPC straight from write), each in its own subtest that skips when it
// cannot be mounted. Mounting needs root, which CI and the development machines have; a
// failure injected through pkg/vfs is what the keyspace unit tests use instead, and this test
// is the check that the real system calls produce the same behaviour end to end.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

const (
	// misconfPrefix starts the reply of every write that failed, or was refused, because the
	// value log could not be written, and of every read of such a write.
	misconfPrefix = "MISCONF lavik: "
	// pendingPrefix starts the reply of a read whose answer depends on a write the value log
	// could not store yet.
	pendingPrefix = "MISCONF lavik: this reply depends on a write"
	// refusedSuffix ends the reply of a write refused before it ran because an earlier write
	// failed; a write that ran and then failed its durability wait has no such suffix.
	refusedSuffix = "; write commands are refused until it succeeds"
	enospcText    = "no space left on device"

	diskFullValueSize = 64 << 10
	// diskFullFiller is what the test occupies before the server starts and frees to give
	// space back: several of the server's 64 KiB writes and 1 MiB segments, so that recovery
	// does not depend on exactly how full the server left the disk.
	diskFullFiller = 8 << 20
	// diskFullMaxWrites bounds the filling loop far above what the file systems here hold
	// (at most 64 MiB / 64 KiB), so a mount that does not limit space fails instead of
	// filling the host's disk.
	diskFullMaxWrites = 4000
)

// diskFullFS is one way of making a small file system at dir.
type diskFullFS struct {
	name  string
	mount func(scratch, dir string) error
}

var diskFullFileSystems = []diskFullFS{
	{"ext4", func(scratch, dir string) error {
		img := filepath.Join(scratch, "disk.img")
		f, err := os.Create(img)
		if err != nil {
			return err
		}
		err = f.Truncate(64 << 20)
		f.Close()
		if err != nil {
			return err
		}
		// -m 0: no blocks reserved for root (the server runs as root in CI, and a reserve it
		// may dip into would only blur how full "full" is). Eager inode-table and journal
		// initialisation keeps the kernel's lazy-init thread from writing behind the test.
		if err := runCmd("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", img); err != nil {
			return err
		}
		return runCmd("mount", "-o", "loop", img, dir)
	}},
	{"tmpfs", func(scratch, dir string) error {
		return runCmd("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", dir)
	}},
}

func runCmd(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// TestDiskFull fills the file system under the server's --dir and checks each step of the
// disk-full behaviour, then gives space back and restarts.
//
// A write that got an error reply is "not known to be durable", as with Redis's MISCONF: it
// may have been applied in memory before its write to the log failed, and the background sync
// then persists it once space returns. So after the error such a key is either absent or holds
// exactly the value attempted, never anything else; a write refused before it ran (the reply
// ends in refusedSuffix) must have had no effect at all. Acknowledged writes must all survive.
func TestDiskFull(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("Lavik's disk-full replies and recovery; redis-server's MISCONF differs")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small file system for the data directory")
	}
	for _, fs := range diskFullFileSystems {
		t.Run(fs.name, func(t *testing.T) { testDiskFull(t, fs) })
	}
}

func testDiskFull(t *testing.T, fs diskFullFS) {
	seed := e2eSeed(t)
	scratch := t.TempDir()
	mnt := filepath.Join(scratch, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.mount(scratch, mnt); err != nil {
		t.Skipf("cannot mount a small %s file system: %v", fs.name, err)
	}
	// Registered before harness.Start, so it runs after the server is stopped (cleanups run
	// last-in first-out), and after TempDir's removal is registered, so it runs before it.
	t.Cleanup(func() {
		if err := runCmd("umount", mnt); err != nil {
			t.Errorf("unmount: %v; detaching lazily", err)
			if err := runCmd("umount", "-l", mnt); err != nil {
				t.Errorf("lazy unmount: %v", err)
			}
		}
	})

	// The server gets a sub-directory, so that the file system's root (lost+found on ext4) and
	// the test's own files stay out of its way.
	dataDir := filepath.Join(mnt, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	writeFiller(t, filler, diskFullFiller)

	// harness.Start passes its own temp dir as --dir first; the later --dir wins, as every
	// later option overrides an earlier one in config.Parse.
	s := harness.Start(t, "--dir", dataDir, "--segment-size", "1mb")
	ctx := harness.Ctx(t)
	// Short timeouts and no retries: a hang or a dropped connection must show up as such.
	c := s.ClientOpts(&redis.Options{MaxRetries: -1, PoolSize: 2,
		DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})

	acked := map[string][]byte{}     // acknowledged: must hold exactly this value
	attempted := map[string][]byte{} // error reply: absent or exactly this value
	refused := map[string]bool{}     // refused before it ran: must be absent
	value := func(i int) []byte {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		b := make([]byte, diskFullValueSize)
		for j := 0; j+8 <= len(b); j += 8 {
			v := rng.Uint64()
			for k := 0; k < 8; k++ {
				b[j+k] = byte(v >> (8 * k))
			}
		}
		return b
	}

	// 1. Write until the disk is full.
	var failedKey, fullErr string
	for i := 0; i < diskFullMaxWrites && failedKey == ""; i++ {
		k, v := fmt.Sprintf("full:%05d", i), value(i)
		err := c.Set(ctx, k, v, 0).Err()
		if err == nil {
			acked[k] = v
			continue
		}
		checkMisconf(t, s, "SET "+k+" on a full disk", err)
		failedKey, fullErr = k, err.Error()
		attempted[k] = v
	}
	if failedKey == "" {
		t.Fatalf("%d writes of %d bytes all succeeded on a %s file system meant to be small; is it mounted?",
			diskFullMaxWrites, diskFullValueSize, fs.name)
	}
	t.Logf("disk full after %d acknowledged writes of %d bytes: %s", len(acked), diskFullValueSize, fullErr)
	if !strings.HasPrefix(fullErr, misconfPrefix) {
		t.Fatalf("SET %s: %q does not start with %q", failedKey, fullErr, misconfPrefix)
	}

	// 2. Reads go on, from memory and from disk.
	verifyDiskFull(t, s, acked, attempted, refused, "with the disk full")
	if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING with the disk full: %q, %v", got, err)
	}
	if _, err := c.Info(ctx).Result(); err != nil {
		t.Fatalf("INFO with the disk full: %v", err)
	}
	if st := writeStatus(t, c); st != "err" {
		t.Fatalf("INFO persistence with the disk full: aof_last_write_status:%s, want err", st)
	}

	// 3. Later writes are refused, quickly, and have no effect. A write the server did run
	// (no refusal suffix) is judged by the rule for error replies instead.
	someAcked := sortedKeys(acked)[0]
	big := value(-1)
	refusals := []struct {
		args   []any
		writes map[string][]byte // key -> value the command would leave; nil value: deleted
	}{
		{[]any{"SET", "refused:small", "x"}, map[string][]byte{"refused:small": []byte("x")}},
		{[]any{"SET", "refused:big", big}, map[string][]byte{"refused:big": big}},
		{[]any{"DEL", someAcked}, map[string][]byte{someAcked: nil}},
		{[]any{"INCR", "refused:counter"}, map[string][]byte{"refused:counter": []byte("1")}},
		{[]any{"MSET", "refused:m1", "a", "refused:m2", "b"}, map[string][]byte{"refused:m1": []byte("a"), "refused:m2": []byte("b")}},
	}
	for _, r := range refusals {
		start := time.Now()
		err := c.Do(ctx, r.args...).Err()
		what := fmt.Sprintf("%s with the disk full", cmdString(r.args[:2]))
		checkMisconf(t, s, what, err)
		t.Logf("%s: %q after %v", what, err.Error(), time.Since(start).Round(time.Microsecond))
		if !s.Running() {
			t.Fatalf("server exited after %s:\n%s", what, s.Log())
		}
		ran := !strings.HasSuffix(err.Error(), refusedSuffix)
		if ran {
			// Ran and then failed its durability wait: allowed (the admission check and the
			// failure are not atomic), and judged by the rule for error replies.
			t.Logf("%s was run rather than refused", what)
		}
		for k, v := range r.writes {
			switch {
			case !ran && v != nil:
				refused[k] = true
			case ran && v != nil:
				attempted[k] = v
			case ran: // a DEL: the key may be gone or still hold its acknowledged value
				attempted[k] = nil
				delete(acked, k)
			}
		}
	}
	// The background sync retries the failed flush once a second; while the disk stays full a
	// retry must fail again and leave writes refused, not clear the error or lose the record.
	harness.Eventually(t, 10*time.Second, "the background sync to retry on the full disk", func() bool {
		return strings.Contains(s.Log(), `msg="background sync failed"`)
	})
	err := c.Set(ctx, "refused:after-retry", "x", 0).Err()
	checkMisconf(t, s, "SET after a failed background retry", err)
	if !strings.HasSuffix(err.Error(), refusedSuffix) {
		t.Fatalf("SET after a failed background retry ran instead of being refused: %q", err.Error())
	}
	refused["refused:after-retry"] = true
	verifyDiskFull(t, s, acked, attempted, refused, "after refused writes")
	if st := writeStatus(t, c); st != "err" {
		t.Fatalf("INFO persistence after refused writes: aof_last_write_status:%s, want err", st)
	}

	// 4. Give space back; the server must notice by itself (its background sync retries the
	// failed flush every second) and take writes again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	var lastErr error
	deadline := freed.Add(10 * time.Second)
	for {
		lastErr = c.Set(ctx, "probe", "back", 0).Err()
		if lastErr == nil {
			break
		}
		var rerr redis.Error
		if !errors.As(lastErr, &rerr) || !strings.HasPrefix(lastErr.Error(), misconfPrefix) {
			t.Fatalf("SET while space returns: %v\n%s", lastErr, s.Log())
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes still failing 10 s after space was freed: %q\nserver log:\n%s", lastErr, s.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("writes accepted again %v after space was freed", time.Since(freed).Round(time.Millisecond))
	acked["probe"] = []byte("back")
	if st := writeStatus(t, c); st != "ok" {
		t.Fatalf("INFO persistence after recovery: aof_last_write_status:%s, want ok", st)
	}
	for i := 0; i < 20; i++ {
		k, v := fmt.Sprintf("after:%02d", i), value(100000+i)
		if err := c.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatalf("SET %s after recovery: %v", k, err)
		}
		acked[k] = v
	}
	verifyDiskFull(t, s, acked, attempted, refused, "after recovery")

	// 5. Nothing acknowledged is lost across a restart. With space back, the shutdown syncs
	// everything and reports success.
	s.Stop()
	if code := s.ExitCode(); code != 0 {
		t.Fatalf("lavik-data exited with code %d on SIGTERM after recovering:\n%s", code, s.Log())
	}
	s.Restart()
	verifyDiskFull(t, s, acked, attempted, refused, "after restart")
	if st := writeStatus(t, s.Client()); st != "ok" {
		t.Fatalf("INFO persistence after restart: aof_last_write_status:%s, want ok", st)
	}
	logDiskFullServerLog(t, s)
}

// writeFiller creates name holding n zero bytes, written (not sparse) and synced, so that its
// blocks are really taken from the file system.
func writeFiller(t *testing.T, name string, n int) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, n)); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("sync %s: %v", name, err)
	}
}

// checkMisconf fails unless err is a RESP error reply starting with misconfPrefix and naming
// ENOSPC.
func checkMisconf(t *testing.T, s *harness.Server, what string, err error) {
	t.Helper()
	var rerr redis.Error
	switch {
	case err == nil:
		t.Fatalf("%s: succeeded; want a %q error", what, misconfPrefix)
	case !errors.As(err, &rerr):
		t.Fatalf("%s: %v (not an error reply; server running: %v)\nserver log:\n%s", what, err, s.Running(), s.Log())
	case !strings.HasPrefix(err.Error(), misconfPrefix) || !strings.Contains(err.Error(), enospcText):
		t.Fatalf("%s: error reply %q; want one starting %q and saying %q", what, err.Error(), misconfPrefix, enospcText)
	}
}

// writeStatus returns INFO persistence's aof_last_write_status.
func writeStatus(t *testing.T, c *redis.Client) string {
	t.Helper()
	info, err := c.Info(harness.Ctx(t), "persistence").Result()
	if err != nil {
		t.Fatalf("INFO persistence: %v", err)
	}
	st, ok := infoFields(info)["aof_last_write_status"]
	if !ok {
		t.Fatalf("INFO persistence has no aof_last_write_status:\n%s", info)
	}
	return st
}

// verifyDiskFull checks that every acknowledged key holds its value, every key whose write got
// an error is absent or holds the value attempted (nil: a DEL of an acknowledged key, so absent
// or kept), every key whose writes were all refused is absent, and DBSIZE counts exactly the
// keys found.
func verifyDiskFull(t *testing.T, s *harness.Server, acked, attempted map[string][]byte, refused map[string]bool, when string) {
	t.Helper()
	ctx := harness.Ctx(t)
	c := s.ClientOpts(&redis.Options{MaxRetries: -1, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	defer c.Close()
	var problems []string
	// get reads k: its value, or absent, or pending when the answer depends on a write the
	// value log has not stored yet (no reply exposes what could still be lost).
	pendings := 0
	get := func(k string) ([]byte, bool) {
		v, err := c.Get(ctx, k).Bytes()
		if errors.Is(err, redis.Nil) {
			return nil, false
		}
		if err != nil && strings.HasPrefix(err.Error(), pendingPrefix) {
			pendings++
			return nil, false
		}
		if err != nil {
			t.Fatalf("%s: GET %s: %v", when, k, err)
		}
		return v, true
	}
	for _, k := range sortedKeys(acked) {
		before := pendings
		got, ok := get(k)
		switch {
		case pendings > before:
			problems = append(problems, fmt.Sprintf("acknowledged key %s: read as not durable", k))
		case !ok:
			problems = append(problems, fmt.Sprintf("acknowledged key %s: missing", k))
		case !bytes.Equal(got, acked[k]):
			problems = append(problems, fmt.Sprintf("acknowledged key %s: %d bytes differ from the %d written (first difference at byte %d)",
				k, len(got), len(acked[k]), firstDiff(got, acked[k])))
		}
	}
	present := 0
	var states []string
	for _, k := range sortedKeys(attempted) {
		before := pendings
		got, ok := get(k)
		want := attempted[k]
		switch {
		case pendings > before:
			states = append(states, k+" pending")
		case !ok:
			states = append(states, k+" absent")
		case want == nil:
			present++
			states = append(states, k+" kept")
		case bytes.Equal(got, want):
			present++
			states = append(states, k+" = value attempted")
		default:
			present++
			problems = append(problems, fmt.Sprintf("key %s, whose write got an error: %d bytes, neither absent nor the %d attempted (first difference at byte %d)",
				k, len(got), len(want), firstDiff(got, want)))
		}
	}
	for _, k := range sortedKeys(refused) {
		if got, ok := get(k); ok {
			present++
			problems = append(problems, fmt.Sprintf("key %s exists (%d bytes) though its only write was refused", k, len(got)))
		}
	}
	t.Logf("%s: %d acknowledged keys checked; error-reply keys: %s", when, len(acked), strings.Join(states, ", "))
	n, err := c.DBSize(ctx).Result()
	switch {
	case err != nil && pendings > 0 && strings.HasPrefix(err.Error(), pendingPrefix):
		// The count includes writes not yet stored: it waits for them too.
	case err != nil:
		t.Fatalf("%s: DBSIZE: %v", when, err)
	case n != int64(len(acked)+present):
		problems = append(problems, fmt.Sprintf("DBSIZE %d, want %d", n, len(acked)+present))
	}
	if len(problems) > 0 {
		if len(problems) > 20 {
			problems = append(problems[:20], "... and more")
		}
		t.Fatalf("%s:\n  %s\nserver log:\n%s", when, strings.Join(problems, "\n  "), s.Log())
	}
}

// logDiskFullServerLog logs the server's error and warning lines, which say what an operator
// would have seen while the disk was full.
func logDiskFullServerLog(t *testing.T, s *harness.Server) {
	var lines []string
	for _, l := range strings.Split(s.Log(), "\n") {
		if strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") {
			lines = append(lines, l)
		}
	}
	if len(lines) > 10 {
		lines = append(append(lines[:5], fmt.Sprintf("... %d more ...", len(lines)-10)), lines[len(lines)-5:]...)
	}
	t.Logf("server errors and warnings:\n%s", strings.Join(lines, "\n"))
}
