package test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

// rssBytes reads a process's resident set size.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// TestMGetMemoryBounded: MGET naming a key with a 60 KiB value 10,000 times, a 600 MB reply the
// client reads as it comes, costs the server less than 64 MiB of memory beyond what it held
// before: values are read a bounded batch at a time and the reply goes out as it is made, so
// memory follows the configuration, not what a client asks for. Every element of the reply is
// the value.
func TestMGetMemoryBounded(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("redis-server builds the whole reply in its output buffer (no limit for normal clients)")
	}
	s := harness.Start(t)
	ctx := context.Background()
	rdb := s.Client()
	defer rdb.Close()
	val := bytes.Repeat([]byte("0123456789abcdef"), 60<<10/16)
	if err := rdb.Set(ctx, "big", val, 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Warm up: a small MGET, so that pools and buffers every request uses exist before the
	// baseline is taken.
	if got, err := rdb.MGet(ctx, "big", "big").Result(); err != nil || len(got) != 2 {
		t.Fatalf("MGET: %v %v", len(got), err)
	}
	base, err := rssBytes(s.Pid())
	if err != nil {
		t.Fatal(err)
	}

	const n = 10000
	var req bytes.Buffer
	fmt.Fprintf(&req, "*%d\r\n$4\r\nMGET\r\n", n+1)
	for range n {
		req.WriteString("$3\r\nbig\r\n")
	}
	conn := s.Conn()
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Minute))

	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // sample the server's resident memory while the reply streams
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if r, err := rssBytes(s.Pid()); err == nil && r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReaderSize(conn, 64<<10)
	line, err := rd.ReadString('\n')
	if err != nil || line != fmt.Sprintf("*%d\r\n", n) {
		t.Fatalf("reply header %q, %v", line, err)
	}
	head := fmt.Sprintf("$%d\r\n", len(val))
	got := make([]byte, len(val)+2)
	for i := range n {
		line, err := rd.ReadString('\n')
		if err != nil || line != head {
			t.Fatalf("element %d: header %q, %v", i, line, err)
		}
		if _, err := io.ReadFull(rd, got); err != nil {
			t.Fatalf("element %d: %v", i, err)
		}
		if !bytes.Equal(got[:len(val)], val) || string(got[len(val):]) != "\r\n" {
			t.Fatalf("element %d is not the value", i)
		}
	}
	close(stop)
	wg.Wait()
	extra := peak.Load() - base
	t.Logf("server RSS %d MiB before, peak %d MiB while streaming a %d MB reply: %d MiB extra",
		base>>20, peak.Load()>>20, n*len(val)/1e6, extra>>20)
	if extra > 64<<20 {
		t.Fatalf("MGET of %d x %d bytes took %d MiB of memory beyond the %d MiB before; want under 64 MiB",
			n, len(val), extra>>20, base>>20)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}
