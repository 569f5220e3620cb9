package test

// lavik-meta with real processes: three members and two data nodes in one shard group; the
// primary killed with kill -9 under WAIT-acknowledged writes; the meta leader killed.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

func metaBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("LAVIK_META_BIN")
	if p == "" {
		p = filepath.Join("..", "bin", "lavik-meta")
	}
	p, err := filepath.Abs(p)
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		t.Fatalf("lavik-meta binary: %v (run make build, or set LAVIK_META_BIN)", err)
	}
	return p
}

func metaFreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// metaMember is one lavik-meta process.
type metaMember struct {
	id                     int
	client, peer, sentinel string
	dir                    string
	cmd                    *exec.Cmd
	exited                 chan struct{}
	mu                     sync.Mutex
	log                    strings.Builder
	peers                  string
	join                   bool // added by lavikctl meta add: start with --join
	t                      *testing.T
}

func (m *metaMember) start() {
	t := m.t
	m.cmd = exec.Command(metaBinary(t), "--id", fmt.Sprint(m.id), "--dir", m.dir, "--listen", m.client, "--peer-listen", m.peer,
		"--sentinel-listen", m.sentinel, "--peers", m.peers)
	if m.join {
		m.cmd.Args = append(m.cmd.Args, "--join")
	}
	pr, pw := io.Pipe()
	m.cmd.Stdout, m.cmd.Stderr = pw, pw
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.exited = make(chan struct{})
	ready := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			m.mu.Lock()
			m.log.WriteString(sc.Text() + "\n")
			m.mu.Unlock()
			if strings.Contains(sc.Text(), "lavik-meta member running") {
				select {
				case ready <- struct{}{}:
				default:
				}
			}
		}
	}()
	go func() { m.cmd.Wait(); pw.Close(); close(m.exited) }()
	select {
	case <-ready:
	case <-m.exited:
		t.Fatalf("lavik-meta %d exited:\n%s", m.id, m.logText())
	case <-time.After(30 * time.Second):
		t.Fatalf("lavik-meta %d not ready", m.id)
	}
}

func (m *metaMember) logText() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.log.String()
}

func (m *metaMember) kill() {
	m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
}

// startMeta starts a three-member lavik-meta group.
func startMeta(t *testing.T) []*metaMember { return startMetaAdvertising(t, nil) }

// startMetaAdvertising starts a three-member lavik-meta group whose members give others
// (data nodes, lavikctl, in their not-leader answers) the client address advertise returns
// for them: a proxy in front of it, say. nil: their own.
func startMetaAdvertising(t *testing.T, advertise func(m *metaMember) string) []*metaMember {
	var ms []*metaMember
	var peers []string
	for id := 1; id <= 3; id++ {
		m := &metaMember{id: id, client: metaFreeAddr(t), peer: metaFreeAddr(t), sentinel: metaFreeAddr(t), dir: t.TempDir(), t: t}
		ms = append(ms, m)
		client := m.client
		if advertise != nil {
			client = advertise(m)
		}
		peers = append(peers, fmt.Sprintf("%d=meta-%d@%s@%s", id, id, m.peer, client))
	}
	for _, m := range ms {
		m.peers = strings.Join(peers, ",")
		m.start()
	}
	t.Cleanup(func() {
		for _, m := range ms {
			select {
			case <-m.exited:
			default:
				m.kill()
			}
		}
	})
	return ms
}

func metaAddrs(ms []*metaMember) string {
	var a []string
	for _, m := range ms {
		a = append(a, m.client)
	}
	return strings.Join(a, ",")
}

// roleOf returns ROLE's first element.
func roleOf(c *redis.Client) string {
	v, err := c.Do(context.Background(), "ROLE").Slice()
	if err != nil || len(v) == 0 {
		return ""
	}
	s, _ := v[0].(string)
	return s
}

// TestMetaFailover: under lavik-meta, two data nodes become a primary and a follower; writes
// acknowledged with WAIT 1 all survive a kill -9 of the primary; the follower takes writes
// soon after (the time is logged); the old primary comes back as a follower of the new one
// with the same data; killing the meta leader elects another and changes no data node's role.
func TestMetaFailover(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("lavik-meta is Lavik's")
	}
	ms := startMeta(t)
	addrs := metaAddrs(ms)
	a := harness.Start(t, "--meta", addrs, "--node-id", "data-a", "--shard-group", "g")
	b := harness.Start(t, "--meta", addrs, "--node-id", "data-b", "--shard-group", "g")
	ac, bc := a.Client(), b.Client()
	ctx := context.Background()
	var p *harness.Server
	var pc, fc *redis.Client
	harness.Eventually(t, 20*time.Second, "a primary and a follower", func() bool {
		ra, rb := roleOf(ac), roleOf(bc)
		switch {
		case ra == "master" && rb == "slave":
			p, pc, fc = a, ac, bc
		case rb == "master" && ra == "slave":
			p, pc, fc = b, bc, ac
		default:
			return false
		}
		return pc.Set(ctx, "probe", "1", 0).Err() == nil
	})
	if err := fc.Set(ctx, "x", "1", 0).Err(); err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Fatalf("a write on the follower: %v, want READONLY", err)
	}
	// A client that finds the primary through Sentinel: lavik-meta's Sentinel port.
	var sentinels []string
	for _, m := range ms {
		sentinels = append(sentinels, m.sentinel)
	}
	fo := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "g", SentinelAddrs: sentinels,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	defer fo.Close()
	if err := fo.Set(ctx, "via-sentinel", "1", 0).Err(); err != nil {
		t.Fatalf("SET through the Sentinel-discovered primary: %v", err)
	}
	out, err := exec.Command("redis-cli", "-p", strings.Split(ms[0].sentinel, ":")[1], "SENTINEL", "get-master-addr-by-name", "g").CombinedOutput()
	if err != nil || !strings.Contains(string(out), strings.Split(p.Addr, ":")[1]) {
		t.Fatalf("redis-cli SENTINEL get-master-addr-by-name g: %q, %v; want the primary %s", out, err, p.Addr)
	}
	// Writes acknowledged by WAIT 1.
	var acked []string
	for i := range 300 {
		k := fmt.Sprint("acked-", i)
		if err := pc.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		if i%10 == 9 {
			n, err := pc.Do(ctx, "WAIT", 1, 2000).Int()
			if err != nil || n != 1 {
				t.Fatalf("WAIT 1: %d, %v", n, err)
			}
			for j := i - 9; j <= i; j++ {
				acked = append(acked, fmt.Sprint("acked-", j))
			}
		}
	}
	p.Kill()
	start := time.Now()
	harness.Eventually(t, 20*time.Second, "the follower taking writes", func() bool {
		return fc.Set(ctx, "after-failover", "1", 0).Err() == nil
	})
	t.Logf("the follower took writes %v after the primary's kill -9", time.Since(start).Round(time.Millisecond))
	// The Sentinel client follows the failover with no change of code.
	harness.Eventually(t, 20*time.Second, "the Sentinel client writing to the new primary", func() bool {
		return fo.Set(ctx, "via-sentinel-after", "1", 0).Err() == nil
	})
	if v, err := fc.Get(ctx, "via-sentinel-after").Result(); err != nil || v != "1" {
		t.Fatalf("the Sentinel client's write is not on the new primary: %q, %v", v, err)
	}
	for _, k := range acked {
		if n, err := fc.Exists(ctx, k).Result(); err != nil || n != 1 {
			t.Fatalf("acknowledged %s lost in the failover (%d, %v)", k, n, err)
		}
	}
	// The old primary comes back as a follower of the new one and gets its data.
	p.Restart()
	pc = p.Client()
	harness.Eventually(t, 20*time.Second, "the old primary following", func() bool { return roleOf(pc) == "slave" })
	waitInSync(t, fc, pc)
	assertSameData(t, fc, pc, 1)
	// The meta leader dies: another is elected; the data primary stays primary.
	lead := -1
	harness.Eventually(t, 10*time.Second, "a meta leader", func() bool {
		for i, m := range ms {
			if strings.Contains(m.logText(), "meta: leading") {
				lead = i
			}
		}
		return lead >= 0
	})
	epochBefore := replInfo(t, fc, "replication")["master_replid"]
	ms[lead].kill()
	// The primary's lease runs out unless a new meta leader renews it: write for a few seconds
	// and log the longest stretch of refused writes.
	var pause, longest time.Duration
	var failingSince time.Time
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if fc.Set(ctx, "after-meta-kill", "1", 0).Err() != nil {
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			pause = time.Since(failingSince)
			longest = max(longest, pause)
		} else {
			failingSince = time.Time{}
		}
	}
	t.Logf("after the meta leader's kill -9 the primary refused writes for %v at the longest", longest.Round(time.Millisecond))
	harness.Eventually(t, 20*time.Second, "writes on the primary after the meta leader's death", func() bool {
		return fc.Set(ctx, "after-meta-kill", "1", 0).Err() == nil
	})
	if roleOf(fc) != "master" || replInfo(t, fc, "replication")["master_replid"] != epochBefore {
		t.Fatal("the meta leader's death changed the data primary")
	}
}
