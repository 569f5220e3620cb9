package test

// Corruption end to end: a byte of a cleanly closed value log goes bad on disk. The server must
// refuse to start, saying where and how to repair, rather than cut the log there; started with
// repair-corrupt-log yes it moves the damaged bytes aside and serves everything else.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lavikdb/lavik/test/harness"
)

// Format-2 value-log layout (services/data/vlog): a 64-byte segment header, then records with a
// 48-byte header holding the extension, key and value lengths at 10, 12 and 16.
const (
	segHeaderSize = 64
	recHeaderSize = 48
)

// recordAt walks the records of a segment and returns the one holding byte off: its offset,
// size and key.
func recordAt(t *testing.T, seg []byte, off int64) (start, size int64, key string) {
	t.Helper()
	for p := int64(segHeaderSize); p+recHeaderSize <= int64(len(seg)); p += size {
		h := seg[p:]
		ext := int64(binary.LittleEndian.Uint16(h[10:]))
		kl, vl := int64(binary.LittleEndian.Uint32(h[12:])), int64(binary.LittleEndian.Uint32(h[16:]))
		size = recHeaderSize + ext + kl + vl
		if off < p+size {
			return p, size, string(h[recHeaderSize+ext : recHeaderSize+ext+kl])
		}
	}
	t.Fatalf("no record holds byte %d of a %d-byte segment", off, len(seg))
	return 0, 0, ""
}

// TestCorruptSegmentRefusesToStart flips a byte of a record in the middle of the newest segment
// of a cleanly stopped server: a start exits with an error naming the segment and the record's
// offset and saying how to repair; a start with repair-corrupt-log yes serves every other key,
// finds the damaged key missing (its only record is gone) and keeps its bytes in quarantine.
func TestCorruptSegmentRefusesToStart(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("Lavik's value log and repair-corrupt-log")
	}
	s := harness.Start(t, "--shards", "1", "--segment-size", "1048576")
	ctx := harness.Ctx(t)
	c := s.Client()
	const keys = 1500
	val := func(i int) string { return fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", 200+i%100)) }
	pipe := c.Pipeline()
	for i := 0; i < keys; i++ {
		pipe.Set(ctx, fmt.Sprintf("key:%d", i), val(i), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// SHUTDOWN closes the connection instead of replying.
	r := dialRESP(t, s)
	r.send("SHUTDOWN")
	r.expectClosed(60 * time.Second)
	if !s.WaitExit(60 * time.Second) {
		t.Fatal("the server is still running after SHUTDOWN")
	}
	if code := s.ExitCode(); code != 0 {
		t.Fatalf("SHUTDOWN: exit code %d\n%s", code, s.Log())
	}

	// Flip a byte in the middle of the newest segment, inside a record's value.
	shardDir := filepath.Join(s.Dir, "shard-000")
	segs, err := filepath.Glob(filepath.Join(shardDir, "*.seg"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segment in %s: %v", shardDir, err)
	}
	path := segs[len(segs)-1]
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start, size, damagedKey := recordAt(t, data, int64(len(data))/2)
	data[start+size-10] ^= 0x20
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}

	// A start refuses, naming the segment and the offset and saying how to repair.
	runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(runCtx, harness.DataBinary(t), "--port", "0", "--bind", "127.0.0.1",
		"--dir", s.Dir, "--shards", "1", "--segment-size", "1048576").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("start over a damaged segment: %v, want a non-zero exit\n%s", err, out)
	}
	for _, want := range []string{path, fmt.Sprintf("at offset %d", start), "repair-corrupt-log yes"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the log of the refused start does not say %q:\n%s", want, out)
		}
	}
	if after, err := os.ReadFile(path); err != nil || string(after) != string(data) {
		t.Fatalf("the refused start changed the damaged segment (%v)", err)
	}

	// Repair: everything but the damaged record is served, its bytes are kept aside.
	s.Args = append(s.Args, "--repair-corrupt-log", "yes")
	s.Restart()
	c = s.Client()
	for i := 0; i < keys; i++ {
		key := fmt.Sprintf("key:%d", i)
		got, err := c.Get(ctx, key).Result()
		switch {
		case key == damagedKey:
			if !errors.Is(err, redis.Nil) {
				t.Fatalf("GET of the damaged %s = %q, %v; want nil", key, got, err)
			}
		case err != nil || got != val(i):
			t.Fatalf("GET %s = %.20q, %v; want %.20q", key, got, err, val(i))
		}
	}
	q := filepath.Join(shardDir, "quarantine", fmt.Sprintf("%s.%d.bad", filepath.Base(path), start))
	if fi, err := os.Stat(q); err != nil || fi.Size() != size {
		t.Fatalf("quarantine file %s: %v, want the %d damaged bytes\n%s", q, err, size, s.Log())
	}
}
