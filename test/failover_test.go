package test

// Failover drills with real processes: three lavik-meta members and two data nodes, as on the
// three VMs (member 1 beside data-a, member 2 beside data-b, member 3 alone). A primary cut
// off from meta; a whole data VM lost; a hundred short pauses of the primary; a switchover
// through lavikctl under load; meta membership changes; redis-py's Sentinel client across a
// failover.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
	"github.com/redis/go-redis/v9"
)

// metaLease is lavik-meta's default lease: how long a primary cut off from meta may still take
// writes.
const metaLease = 480 * time.Millisecond

// cutProxy forwards TCP connections to target until cut: then it closes the ones open and
// refuses new ones, as a network partition would, until healed.
type cutProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { l.Close(); p.setCut(true) })
	go p.serve()
	return p
}

func (p *cutProxy) addr() string { return p.l.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *cutProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *cutProxy) forward(c net.Conn) {
	defer c.Close()
	if !p.track(c) {
		return
	}
	u, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	if !p.track(u) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); done <- struct{}{} }()
	go func() { io.Copy(c, u); done <- struct{}{} }()
	<-done
}

// setCut cuts (closing every connection) or heals the link.
func (p *cutProxy) setCut(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = on
	if on {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

func (m *metaMember) pause()  { m.cmd.Process.Signal(syscall.SIGSTOP) }
func (m *metaMember) resume() { m.cmd.Process.Signal(syscall.SIGCONT) }

// metaCluster is the reference topology: ms[0] beside data node "data-a", ms[1] beside
// "data-b", ms[2] the meta-only voter. data-a reaches the members only through proxies, so
// its link to meta can be cut: the members name the proxies as their client addresses (a
// not-leader answer sends data-a to the leader's proxy). data-b and lavikctl dial the members
// themselves (and also follow those answers to the proxies, which work while not cut).
type metaCluster struct {
	t       *testing.T
	ms      []*metaMember
	data    map[string]*harness.Server
	proxies []*cutProxy // data-a's, one per member
	admin   map[string]int
}

func startMetaCluster(t *testing.T) *metaCluster {
	if harness.IsRedis() {
		t.Skip("lavik-meta is Lavik's")
	}
	c := &metaCluster{t: t, data: map[string]*harness.Server{}, admin: map[string]int{}}
	c.ms = startMetaAdvertising(t, func(m *metaMember) string {
		p := newCutProxy(t, m.client)
		c.proxies = append(c.proxies, p)
		return p.addr()
	})
	for _, id := range []string{"data-a", "data-b"} {
		var addrs []string
		for i, m := range c.ms {
			if id == "data-a" {
				addrs = append(addrs, c.proxies[i].addr())
			} else {
				addrs = append(addrs, m.client)
			}
		}
		c.admin[id] = freeAdminPort(t)
		c.data[id] = harness.Start(t, "--meta", strings.Join(addrs, ","), "--node-id", id, "--shard-group", "g",
			"--admin-port", fmt.Sprint(c.admin[id]))
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range c.ms {
				t.Logf("meta-%d's log:\n%s", m.id, m.logText())
			}
			for id, s := range c.data {
				t.Logf("%s's log:\n%s", id, s.Log())
			}
		}
	})
	return c
}

// member is the meta member beside data node id.
func (c *metaCluster) member(id string) *metaMember {
	if id == "data-a" {
		return c.ms[0]
	}
	return c.ms[1]
}

func (c *metaCluster) other(id string) string {
	if id == "data-a" {
		return "data-b"
	}
	return "data-a"
}

// placed waits until one node is primary and takes writes and the other follows it, and
// returns the primary's id.
func (c *metaCluster) placed(d time.Duration) string {
	var primary string
	harness.Eventually(c.t, d, "a writable primary and a follower", func() bool {
		primary = ""
		for id, s := range c.data {
			cl := probeClient(s)
			r := roleOf(cl)
			if r == "master" && cl.Set(context.Background(), "placed-probe", id, 0).Err() == nil {
				primary = id
			}
			cl.Close()
		}
		if primary == "" {
			return false
		}
		fc := probeClient(c.data[c.other(primary)])
		defer fc.Close()
		return roleOf(fc) == "slave"
	})
	return primary
}

// probeClient is a client that fails fast and never retries: a refused write is seen as such.
func probeClient(s *harness.Server) *redis.Client {
	return s.ClientOpts(&redis.Options{MaxRetries: -1, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, PoolSize: 2})
}

// metaEpoch reads the group's epoch from meta's topology through lavikctl.
func (c *metaCluster) epoch() uint64 {
	out, stderr, code := runCtl(c.t, "--meta", metaAddrs(c.ms), "--timeout", "1s", "--json", "topology")
	if code != 0 {
		c.t.Fatalf("lavikctl topology: exit %d: %s", code, stderr)
	}
	var doc struct {
		ShardGroups []struct {
			ID    string `json:"id"`
			Epoch uint64 `json:"epoch"`
		} `json:"shard_groups"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.ShardGroups) != 1 {
		c.t.Fatalf("lavikctl topology --json: %v\n%s", err, out)
	}
	return doc.ShardGroups[0].Epoch
}

// writeLog is a writer's record of acknowledged writes.
type writeLog struct {
	mu    sync.Mutex
	keys  []string
	first time.Time // when the first acknowledged write was sent
	last  time.Time // when the last acknowledgement arrived
	fails int
}

func (w *writeLog) ok(k string, sent time.Time) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys = append(w.keys, k)
	if w.first.IsZero() {
		w.first = sent
	}
	w.last = now
}

// writeLoop writes prefix:N keys through c until stop closes, recording what is acknowledged.
func writeLoop(c *redis.Client, prefix string, every time.Duration, stop <-chan struct{}, w *writeLog, wg *sync.WaitGroup) {
	defer wg.Done()
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		k := fmt.Sprintf("%s:%d", prefix, i)
		sent := time.Now()
		if err := c.Set(ctx, k, prefix, 0).Err(); err == nil {
			w.ok(k, sent)
		} else {
			w.mu.Lock()
			w.fails++
			w.mu.Unlock()
		}
		if every > 0 {
			time.Sleep(every)
		}
	}
}

// TestMetaPartitionedPrimary cuts the primary off from meta (its meta member SIGSTOPped, its
// links to the other members cut) while a client keeps writing to it and another keeps trying
// the follower: the primary stops taking writes within its lease, the follower is promoted,
// and the two never take writes in overlapping time. Healed, the old primary follows the new
// one and holds the same data.
func TestMetaPartitionedPrimary(t *testing.T) {
	c := startMetaCluster(t)
	// data-a's link to meta is the one that can be cut: make it the primary.
	if c.placed(20*time.Second) != "data-a" {
		if out, stderr, code := runCtl(t, "--meta", metaAddrs(c.ms), "promote", "data-a"); code != 0 {
			t.Fatalf("lavikctl promote data-a: exit %d\n%s%s", code, out, stderr)
		}
	}
	pid := c.placed(20 * time.Second)
	if pid != "data-a" {
		t.Fatalf("the primary is %s after promoting data-a", pid)
	}
	fid := c.other(pid)
	pc, fc := probeClient(c.data[pid]), probeClient(c.data[fid])
	defer pc.Close()
	defer fc.Close()
	epoch0 := c.epoch()

	var old, nw writeLog
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go writeLoop(pc, "old", 0, stop, &old, &wg)
	go writeLoop(fc, "new", time.Millisecond, stop, &nw, &wg)
	time.Sleep(500 * time.Millisecond)

	cut := time.Now()
	c.member(pid).pause()
	for _, p := range c.proxies {
		p.setCut(true)
	}
	defer func() {
		if t.Failed() {
			for _, m := range c.ms[1:] {
				out, stderr, _ := runCtl(t, "--meta", m.client, "--timeout", "1s", "topology")
				t.Logf("topology from %d: %s%s", m.id, out, stderr)
			}
			old.mu.Lock()
			t.Logf("old primary: last ack %v after the cut, %d fails", old.last.Sub(cut), old.fails)
			old.mu.Unlock()
		}
	}()
	harness.Eventually(t, 20*time.Second, "the follower taking writes", func() bool {
		nw.mu.Lock()
		defer nw.mu.Unlock()
		return len(nw.keys) > 0
	})
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	oldStop := old.last.Sub(cut)
	newStart := nw.first.Sub(cut)
	t.Logf("cut off at 0: the old primary's last acknowledged write at %v (%d before the cut and after), the new primary's first at %v",
		oldStop.Round(time.Millisecond), len(old.keys), newStart.Round(time.Millisecond))
	if oldStop > metaLease+150*time.Millisecond {
		t.Errorf("the cut-off primary acknowledged a write %v after the cut: past its %v lease", oldStop, metaLease)
	}
	if !old.last.Before(nw.first) {
		t.Fatalf("two primaries took writes at once: the old one acknowledged a write at %v, the new one accepted one sent at %v",
			oldStop, newStart)
	}
	// Healed, the old primary follows and is rebuilt to the new primary's data: the writes it
	// acknowledged after the last one its follower got are gone from it too.
	c.member(pid).resume()
	for _, p := range c.proxies {
		p.setCut(false)
	}
	if e := c.epoch(); e <= epoch0 {
		t.Fatalf("epoch %d after the failover, was %d", e, epoch0)
	}
	harness.Eventually(t, 20*time.Second, "the old primary following", func() bool { return roleOf(pc) == "slave" })
	waitInSync(t, fc, pc)
	assertSameData(t, fc, pc, 1)
	ctx := context.Background()
	for _, k := range nw.keys {
		if n, err := pc.Exists(ctx, k).Result(); err != nil || n != 1 {
			t.Fatalf("%s, acknowledged by the new primary, is not on the rejoined node (%d, %v)", k, n, err)
		}
	}
}

// TestMetaLoseDataVM kills the primary's whole VM (its data node and the meta member beside it,
// kill -9): the other data VM's member and the voter keep a quorum, promote the follower, and
// answer linearizable reads; the lost VM comes back as a follower with the same data.
func TestMetaLoseDataVM(t *testing.T) {
	c := startMetaCluster(t)
	pid := c.placed(20 * time.Second)
	fid := c.other(pid)
	pc := c.data[pid].Client()
	fc := probeClient(c.data[fid])
	defer fc.Close()
	ctx := context.Background()
	for i := range 200 {
		if err := pc.Set(ctx, fmt.Sprint("vm:", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := pc.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d, %v", n, err)
	}
	epoch0 := c.epoch()
	start := time.Now()
	c.data[pid].Kill()
	c.member(pid).kill()
	harness.Eventually(t, 20*time.Second, "the follower taking writes", func() bool {
		return fc.Set(ctx, "after-vm-loss", "1", 0).Err() == nil
	})
	t.Logf("the follower took writes %v after its primary's VM died", time.Since(start).Round(time.Millisecond))
	for i := range 200 {
		if n, err := fc.Exists(ctx, fmt.Sprint("vm:", i)).Result(); err != nil || n != 1 {
			t.Fatalf("vm:%d, acknowledged by WAIT 1, lost (%d, %v)", i, n, err)
		}
	}
	// Two of three members: a quorum answers linearizable reads and records the new epoch.
	var live []string
	for _, m := range c.ms {
		if m != c.member(pid) {
			live = append(live, m.client)
		}
	}
	out, stderr, code := runCtl(t, "--meta", strings.Join(live, ","), "--json", "topology")
	if code != 0 || !strings.Contains(out, `"linearizable": true`) {
		t.Fatalf("lavikctl topology on the two members left: exit %d\n%s%s", code, out, stderr)
	}
	if e := c.epoch(); e <= epoch0 {
		t.Fatalf("epoch %d, was %d", e, epoch0)
	}
	// The VM comes back.
	c.member(pid).start()
	c.data[pid].Restart()
	pc = c.data[pid].Client()
	harness.Eventually(t, 20*time.Second, "the old primary following", func() bool { return roleOf(pc) == "slave" })
	waitInSync(t, fc, pc)
	assertSameData(t, fc, pc, 1)
}

// TestMetaHiccups pauses the primary (SIGSTOP) 100 times, each for less than the failover time,
// under writes: no failover, the epoch stays, and the primary takes writes after each pause.
func TestMetaHiccups(t *testing.T) {
	c := startMetaCluster(t)
	pid := c.placed(20 * time.Second)
	pc := probeClient(c.data[pid])
	defer pc.Close()
	epoch0 := c.epoch()
	promotions := func() (n int) {
		for _, m := range c.ms {
			n += strings.Count(m.logText(), "meta: promoted")
		}
		return n
	}
	promoted0 := promotions()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	ctx := context.Background()
	var longest time.Duration
	for i := range 100 {
		d := time.Duration(50+rng.IntN(300)) * time.Millisecond // up to 350 ms: under the lease
		c.data[pid].Pause()
		time.Sleep(d)
		c.data[pid].Resume()
		resumed := time.Now()
		harness.Eventually(t, 5*time.Second, fmt.Sprintf("a write after pause %d (%v)", i, d), func() bool {
			return pc.Set(ctx, "hiccup", i, 0).Err() == nil
		})
		longest = max(longest, time.Since(resumed))
		time.Sleep(time.Duration(100+rng.IntN(150)) * time.Millisecond)
	}
	if e := c.epoch(); e != epoch0 {
		t.Fatalf("epoch %d after 100 short pauses, was %d: a failover happened", e, epoch0)
	}
	if r := roleOf(pc); r != "master" {
		t.Fatalf("the paused primary is %q", r)
	}
	if n := promotions(); n != promoted0 {
		t.Fatalf("meta promoted %d nodes during the pauses", n-promoted0)
	}
	t.Logf("100 pauses of 50-350 ms: no failover; the longest wait for a write after a resume was %v", longest.Round(time.Millisecond))
}

// TestMetaSwitchover: lavikctl promote under write load through go-redis's FailoverClient
// (which finds the primary through lavik-meta's Sentinel port): every acknowledged write is on
// the new primary, the pause lavikctl reports is close to what the clients saw, and the
// errors operators can make are refused with a reason and exit status 1.
func TestMetaSwitchover(t *testing.T) {
	c := startMetaCluster(t)
	pid := c.placed(20 * time.Second)
	fid := c.other(pid)
	var sentinels []string
	for _, m := range c.ms {
		sentinels = append(sentinels, m.sentinel)
	}
	fo := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "g", SentinelAddrs: sentinels,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
	defer fo.Close()
	ctx := context.Background()
	var mu sync.Mutex
	var acked []string
	var lastOK time.Time
	var gap time.Duration
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("sw:%d:%d", w, i)
				if err := fo.Set(ctx, k, i, 0).Err(); err == nil {
					mu.Lock()
					acked = append(acked, k)
					if !lastOK.IsZero() {
						gap = max(gap, time.Since(lastOK))
					}
					lastOK = time.Now()
					mu.Unlock()
				} else {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	time.Sleep(time.Second)
	out, stderr, code := runCtl(t, "--meta", metaAddrs(c.ms), "--json", "promote", fid)
	if code != 0 {
		t.Fatalf("lavikctl promote %s: exit %d\n%s%s", fid, code, out, stderr)
	}
	var res struct {
		Primary  string `json:"primary_node_id"`
		CaughtUp bool   `json:"caught_up"`
		PausedMs int    `json:"writes_paused_ms"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Primary != fid || !res.CaughtUp || res.PausedMs <= 0 {
		t.Fatalf("lavikctl promote --json: %v\n%s", err, out)
	}
	fc := c.data[fid].Client()
	harness.Eventually(t, 10*time.Second, "writes through the Sentinel client on the new primary", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) > 0 && fc.Exists(ctx, acked[len(acked)-1]).Val() == 1
	})
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	for _, k := range acked {
		if n, err := fc.Exists(ctx, k).Result(); err != nil || n != 1 {
			t.Fatalf("%s, acknowledged before or after the switchover, is not on the new primary (%d, %v)", k, n, err)
		}
	}
	t.Logf("switchover: lavikctl reported writes paused %d ms; the clients' longest gap between acknowledged writes was %v; %d writes, none lost",
		res.PausedMs, gap.Round(time.Millisecond), len(acked))
	pc := c.data[pid].Client()
	harness.Eventually(t, 20*time.Second, "the old primary following", func() bool { return roleOf(pc) == "slave" })
	waitInSync(t, fc, pc)
	assertSameData(t, fc, pc, 1)

	// Mistakes are refused, with what to do.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"promote", fid}, "not a follower"},         // already the primary
		{[]string{"promote", "data-z"}, "in no shard group"}, // no such node
		{[]string{"promote", "--expected-epoch", "1", pid}, "epoch"},
	} {
		_, stderr, code := runCtl(t, append([]string{"--meta", metaAddrs(c.ms)}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("lavikctl %v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, stderr, code := runCtl(t, "promote", fid); code != 2 || !strings.Contains(stderr, "--meta") {
		t.Errorf("lavikctl promote without --meta: exit %d, %q", code, stderr)
	}
}

// TestMetaMembershipAndStatus: lavikctl status with real lavik-meta (data nodes found through
// meta; members and leader); a fourth member added with lavikctl meta add and started with
// --join catches up and serves linearizable reads; removed with meta remove, the group goes on
// with three; the meta-only member's RSS stays under 100 MiB.
func TestMetaMembershipAndStatus(t *testing.T) {
	c := startMetaCluster(t)
	pid := c.placed(20 * time.Second)
	meta := metaAddrs(c.ms)

	out, stderr, code := runCtl(t, "--meta", meta, "--json", "status")
	if code != 0 {
		t.Fatalf("lavikctl status: exit %d\n%s%s", code, out, stderr)
	}
	var st struct {
		Nodes []struct {
			NodeID string `json:"node_id"`
			Role   string `json:"role"`
		} `json:"nodes"`
		Meta struct {
			Leader  string `json:"leader"`
			Members []struct {
				ID       uint64 `json:"id"`
				IsLeader bool   `json:"is_leader"`
			} `json:"members"`
		} `json:"meta"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err, out)
	}
	roles := map[string]string{}
	for _, n := range st.Nodes {
		roles[n.NodeID] = n.Role
	}
	if len(st.Nodes) != 2 || roles[pid] != "PRIMARY" || roles[c.other(pid)] != "FOLLOWER" || len(st.Meta.Members) != 3 || st.Meta.Leader == "" {
		t.Fatalf("lavikctl status --json:\n%s", out)
	}
	table, _, _ := runCtl(t, "--meta", meta, "status")
	for _, want := range []string{pid, "PRIMARY", "FOLLOWER", "meta members (leader: meta-"} {
		if !strings.Contains(table, want) {
			t.Fatalf("lavikctl status table lacks %q:\n%s", want, table)
		}
	}

	// A fourth member.
	m4 := &metaMember{id: 4, client: metaFreeAddr(t), peer: metaFreeAddr(t), sentinel: metaFreeAddr(t), dir: t.TempDir(), t: t}
	out, stderr, code = runCtl(t, "--meta", meta, "--json", "meta", "add", "--name", "meta-4", "--peer", m4.peer, "--client", m4.client)
	var added struct {
		Member struct {
			ID uint64 `json:"id"`
		} `json:"member"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &added) != nil || added.Member.ID <= 3 {
		t.Fatalf("lavikctl meta add: exit %d\n%s%s", code, out, stderr)
	}
	id := added.Member.ID
	m4.id = int(id)
	m4.join = true
	m4.start()
	t.Cleanup(func() {
		select {
		case <-m4.exited:
		default:
			m4.kill()
		}
	})
	defer func() {
		if t.Failed() {
			t.Logf("meta-4:\n%s", m4.logText())
		}
	}()
	harness.Eventually(t, 20*time.Second, "the new member serving linearizable reads", func() bool {
		out, _, code := runCtl(t, "--meta", m4.client, "--json", "topology")
		return code == 0 && strings.Contains(out, pid)
	})
	list, _, _ := runCtl(t, "--meta", meta, "meta", "list")
	if !strings.Contains(list, "meta-4") {
		t.Fatalf("meta list after add:\n%s", list)
	}
	out, stderr, code = runCtl(t, "--meta", meta, "meta", "remove", fmt.Sprint(id))
	if code != 0 {
		t.Fatalf("lavikctl meta remove %d: exit %d\n%s%s", id, code, out, stderr)
	}
	list, _, _ = runCtl(t, "--meta", meta, "meta", "list")
	if strings.Contains(list, "meta-4") {
		t.Fatalf("meta list after remove:\n%s", list)
	}
	m4.kill()
	// Three members still decide: a switchover commits.
	if out, stderr, code := runCtl(t, "--meta", meta, "promote", c.other(pid)); code != 0 {
		t.Fatalf("promote after the removal: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code := runCtl(t, "--meta", meta, "meta", "remove", "99"); code != 1 || stderr == "" {
		t.Fatalf("meta remove of no member: exit %d, %q", code, stderr)
	}

	rss := processRSS(t, c.ms[2].cmd.Process.Pid)
	t.Logf("the meta-only member's RSS: %.1f MiB", float64(rss)/(1<<20))
	if rss > 100<<20 {
		t.Fatalf("the meta-only member uses %d bytes of RSS, over 100 MiB", rss)
	}
}

// processRSS reads VmRSS of pid from /proc.
func processRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// TestMetaRedisPySentinel: redis-py's Sentinel client, pointed at lavik-meta's Sentinel ports,
// finds the primary, writes, and follows a kill -9 failover to the new primary.
func TestMetaRedisPySentinel(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		clientMissing(t, "%s is missing: the redis-py test needs Debian's python3 and python3-redis", python)
	}
	c := startMetaCluster(t)
	pid := c.placed(20 * time.Second)
	var ports []string
	for _, m := range c.ms {
		_, p, _ := net.SplitHostPort(m.sentinel)
		ports = append(ports, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join("clients", "python", "sentinel.py"), "g", strings.Join(ports, ","))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var first, last map[string]any
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &first) != nil {
		cmd.Wait()
		t.Fatalf("sentinel.py: no first line: %s", stderr.String())
	}
	_, port, _ := net.SplitHostPort(c.data[pid].Addr)
	if fmt.Sprint(first["master_port"]) != port {
		t.Fatalf("redis-py found the master at %v, want %s", first, port)
	}
	c.data[pid].Kill()
	for lines.Scan() {
		json.Unmarshal(lines.Bytes(), &last)
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("sentinel.py: %v\n%s", err, stderr.String())
		}
		t.Fatal(err)
	}
	_, fport, _ := net.SplitHostPort(c.data[c.other(pid)].Addr)
	if last == nil || fmt.Sprint(last["master_port"]) != fport {
		t.Fatalf("redis-py ended at %v, want the new primary's port %s\n%s", last, fport, stderr.String())
	}
	t.Logf("redis-py %v: %v then %v", first["redis_py"], first, last)
}
