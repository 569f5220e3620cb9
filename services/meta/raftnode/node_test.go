package raftnode

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/vfs"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

func TestReplicateInOrderAndNotLeader(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	c.startAll()
	lead := c.leader()
	want := values("v", 0, 30)
	for i, v := range want {
		// The state machine's result (its length after the apply) comes back to Propose.
		if res := c.propose(v); string(res) != fmt.Sprint(i+1) {
			t.Fatalf("propose %s: result %q, want %d", v, res, i+1)
		}
	}
	c.converge(want, 1, 2, 3)

	var follower uint64
	for _, id := range c.peers {
		if id != lead {
			follower = id
		}
	}
	_, err := c.nodes[follower].Propose(context.Background(), []byte("x"))
	if !errors.Is(err, ErrNotLeader) {
		t.Fatalf("propose on follower: %v, want ErrNotLeader", err)
	}
	if id, ok := LeaderID(err); !ok || id != lead {
		t.Fatalf("LeaderID(%v) = %d, %v; want %d", err, id, ok, lead)
	}
	st := c.nodes[lead].Status()
	if !slices.Equal(st.Voters, []uint64{1, 2, 3}) || st.Applied < uint64(len(want)) || st.Commit < st.Applied {
		t.Fatalf("leader status %+v", st)
	}
}

func TestLeaderStopRestartNoDoubleApply(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	c.startAll()
	want := values("a", 0, 10)
	c.proposeAll(want)
	old := c.leader()
	c.stop(old)
	if lead := c.leader(); lead == old {
		t.Fatalf("stopped member %d still leader", old)
	}
	more := values("b", 0, 10)
	c.proposeAll(more)
	want = append(want, more...)
	// Restart from its directory and its (durable) state machine: the WAL replays, raft
	// re-commits, and entries the state machine holds are not applied again.
	c.start(old, false)
	c.converge(want, 1, 2, 3)
	last := values("c", 0, 5)
	c.proposeAll(last)
	c.converge(append(want, last...), 1, 2, 3)
}

// walSegments lists the WAL segment files of a member.
func walSegments(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List("/member/wal")
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestSnapshotCompactionAndCatchUp(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	c.snapN = 10
	c.segBytes = 512
	c.startAll()
	lead := c.leader()
	var lagging uint64
	for _, id := range c.peers {
		if id != lead {
			lagging = id
		}
	}
	want := values("s", 0, 5)
	c.proposeAll(want)
	c.converge(want, c.peers...)
	c.stop(lagging)
	more := values("t", 0, 120)
	c.proposeAll(more)
	want = append(want, more...)
	c.converge(want, lead)

	segs := walSegments(t, c.fs[lead])
	if len(segs) == 0 || segs[0] == segName(0) || len(segs) > 10 {
		t.Fatalf("leader wal segments after compaction: %v", segs)
	}
	snaps, err := listSnaps(c.fs[lead], "/member/snap")
	if err != nil || len(snaps) == 0 || len(snaps) > snapKeep {
		t.Fatalf("leader snapshots %v, %v", snaps, err)
	}
	st := c.nodes[lead].Status()
	if st.FirstLogIndex <= 5 || st.SnapshotIndex == 0 {
		t.Fatalf("leader log not compacted: %+v", st)
	}

	// The lagging member's log ends before the leader's first index: it needs a snapshot.
	c.start(lagging, false)
	c.converge(want, lagging)
	if _, restores := c.sms[lagging].state(); restores == 0 {
		t.Fatalf("member %d caught up without restoring a snapshot", lagging)
	}

	// Restart the leader with an empty state machine: it must load its newest snapshot and
	// replay only the WAL after it.
	c.stop(lead)
	c.sms[lead] = newTestSM()
	c.start(lead, false)
	if _, restores := c.sms[lead].state(); restores != 1 {
		t.Fatalf("restart restored %d snapshots, want 1", restores)
	}
	c.converge(want, c.peers...)
	fin := values("u", 0, 5)
	c.proposeAll(fin)
	c.converge(append(want, fin...), c.peers...)
}

// TestCrashKeepsAcknowledged crashes every member's file system (keeping only synced bytes
// plus a random part of the unsynced tail) while proposals run, restarts all members with
// empty state machines, and checks that every proposal whose Propose returned is applied, on
// every member, in the same order.
func TestCrashKeepsAcknowledged(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run("", func(t *testing.T) {
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, seed))
			c := newCluster(t, 1, 2, 3)
			c.snapN = 15
			c.segBytes = 1024
			c.startAll()
			c.leader()

			var (
				mu    sync.Mutex
				acked []string
				wg    sync.WaitGroup
			)
			stop := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					v := values("k", i, i+1)[0]
					for _, n := range c.snapshotNodes() {
						ctx, cancel := context.WithTimeout(context.Background(), time.Second)
						_, err := n.Propose(ctx, []byte(v))
						cancel()
						if err == nil {
							mu.Lock()
							acked = append(acked, v)
							mu.Unlock()
							break
						}
					}
				}
			}()
			waitFor(t, 10*time.Second, "40 acknowledged proposals", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(acked) >= 40+int(seed)*7
			})
			// Power fails everywhere at once: first nothing gets through, then each file
			// system is cloned. Cloning members one by one on a live network would let a
			// member cloned early acknowledge an entry afterwards, which no real crash can do.
			c.net.setDrop(func(raftpb.Message) bool { return true })
			clones := map[uint64]*vfs.MemFS{}
			for _, id := range c.peers {
				clones[id] = c.fs[id].CrashCloneRandom(rng)
			}
			// Everything acknowledged by now was synced by a quorum before its clone.
			mu.Lock()
			durable := slices.Clone(acked)
			mu.Unlock()
			close(stop)
			wg.Wait()
			c.stopAll()

			c2 := newCluster(t, 1, 2, 3)
			c2.snapN, c2.segBytes = c.snapN, c.segBytes
			c2.fs = clones
			c2.startAll()
			c2.leader()
			c2.propose("after-crash")
			defer func() {
				if t.Failed() {
					for _, id := range c2.peers {
						v, r := c2.sms[id].state()
						t.Logf("member %d: %d values, %d restores, status %+v err %v", id, len(v), r, c2.nodes[id].Status(), c2.nodes[id].Err())
						ch := make(chan string, 1)
						c2.nodes[id].control(func(rn *raft.RawNode) { ch <- fmt.Sprintf("%+v", rn.Status().Progress) })
						t.Logf("member %d progress %s", id, <-ch)
					}
				}
			}()
			waitFor(t, 10*time.Second, "members to converge", func() bool {
				a, _ := c2.sms[1].state()
				for _, id := range c2.peers {
					b, _ := c2.sms[id].state()
					if !slices.Equal(a, b) || len(b) == 0 || b[len(b)-1] != "after-crash" {
						return false
					}
				}
				return true
			})
			got, _ := c2.sms[1].state()
			have := make(map[string]bool)
			for _, v := range got {
				if have[v] {
					t.Fatalf("value %s applied twice", v)
				}
				have[v] = true
			}
			for _, v := range durable {
				if !have[v] {
					t.Fatalf("acknowledged proposal %s lost in the crash (%d acknowledged, %d applied)", v, len(durable), len(got))
				}
			}
		})
	}
}

// snapshotNodes returns the running nodes (the proposer tries each; followers refuse fast).
func (c *cluster) snapshotNodes() []*Node {
	var out []*Node
	for _, id := range c.peers {
		if n := c.nodes[id]; n != nil {
			out = append(out, n)
		}
	}
	return out
}

func TestMembershipAddRemove(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	c.startAll()
	want := values("m", 0, 10)
	c.proposeAll(want)
	lead := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.nodes[lead].AddMember(ctx, 4); err != nil {
		t.Fatalf("add member: %v", err)
	}
	c.start(4, true)
	c.converge(want, 4)
	more := values("n", 0, 10)
	c.proposeAll(more)
	want = append(want, more...)
	c.converge(want, 1, 2, 3, 4)
	waitFor(t, 5*time.Second, "member 4 to know the voters", func() bool {
		return slices.Equal(c.nodes[4].Status().Voters, []uint64{1, 2, 3, 4})
	})

	// Remove a member that is not the leader, then stop it.
	victim := uint64(2)
	if lead == victim {
		victim = 3
	}
	lead = c.leader()
	if err := c.nodes[lead].RemoveMember(ctx, victim); err != nil {
		t.Fatalf("remove member: %v", err)
	}
	c.stop(victim)
	last := values("o", 0, 10)
	c.proposeAll(last)
	want = append(want, last...)
	var rest []uint64
	for _, id := range []uint64{1, 2, 3, 4} {
		if id != victim {
			rest = append(rest, id)
		}
	}
	c.converge(want, rest...)
	for _, id := range rest {
		if v := c.nodes[id].Status().Voters; !slices.Equal(v, rest) {
			t.Fatalf("member %d voters %v, want %v", id, v, rest)
		}
	}
}

// TestReadIndexWaitsForApply holds back the leader's appends to a follower, so that the
// follower learns the read index (its read state arrives) before it has the entry: the read
// must stay blocked until the entry is applied there.
func TestReadIndexWaitsForApply(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	c.startAll()
	c.proposeAll(values("r", 0, 3))
	lead := c.leader()
	var f uint64
	for _, id := range c.peers {
		if id != lead {
			f = id
		}
	}
	c.converge(values("r", 0, 3), f)
	c.net.setDrop(func(m raftpb.Message) bool {
		return m.From == lead && m.To == f && (m.Type == raftpb.MsgApp || m.Type == raftpb.MsgSnap)
	})
	c.propose("latest")
	fn := c.nodes[f]
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- fn.ReadIndex(ctx)
	}()
	waitFor(t, 10*time.Second, "the follower's read index to arrive", func() bool {
		return fn.readsWaiting.Load() > 0
	})
	select {
	case err := <-done:
		t.Fatalf("ReadIndex returned (%v) before the follower applied the latest proposal", err)
	default:
	}
	if got, _ := c.sms[f].state(); slices.Contains(got, "latest") {
		t.Fatal("follower applied the entry although appends were dropped")
	}
	c.net.setDrop(nil)
	if err := <-done; err != nil {
		t.Fatalf("ReadIndex: %v", err)
	}
	if got, _ := c.sms[f].state(); !slices.Contains(got, "latest") {
		t.Fatal("ReadIndex returned before the latest proposal was applied")
	}
	// And on the leader.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.nodes[lead].ReadIndex(ctx); err != nil {
		t.Fatalf("ReadIndex on leader: %v", err)
	}
}

// singleMember runs a one-member group, proposes n values and stops it, returning its FS.
func singleMember(t *testing.T, n int, segBytes int64) (*cluster, []string) {
	c := newCluster(t, 1)
	c.segBytes = segBytes
	c.start(1, false)
	want := values("d", 0, n)
	c.proposeAll(want)
	c.stop(1)
	return c, want
}

func TestWALDamageRefused(t *testing.T) {
	c, _ := singleMember(t, 20, 4<<20)
	seg := filepath.Join("/member/wal", segName(0))
	// A byte in the middle of the first segment: synced long ago and followed by valid
	// records. Offset 20 is inside the first record's payload (the bootstrap conf change).
	if _, err := c.fs[1].FlipBit(seg, 20, 3); err != nil {
		t.Fatal(err)
	}
	c.sms[1] = newTestSM()
	_, err := Start(c.config(1, false))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Start over a damaged WAL: %v, want ErrCorrupt", err)
	}
	if !strings.Contains(err.Error(), seg) || !strings.Contains(err.Error(), "at offset 0:") {
		t.Fatalf("error %q does not name the file and the record's offset", err)
	}
}

func TestWALTornTailCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func(t *testing.T, fs *vfs.MemFS, path string, size int64)
	}{
		{"incomplete-record", func(t *testing.T, fs *vfs.MemFS, path string, size int64) {
			f, err := fs.OpenReadWrite(path)
			if err != nil {
				t.Fatal(err)
			}
			// A header announcing 100 bytes of which 10 made it.
			rec := appendRecord(nil, recEntry, make([]byte, 100))[:recHeaderSize+10]
			if _, err := f.WriteAt(rec, size); err != nil {
				t.Fatal(err)
			}
			f.Sync()
			f.Close()
		}},
		{"bad-last-checksum", func(t *testing.T, fs *vfs.MemFS, path string, size int64) {
			// The last record is the final hard state; damage its last byte.
			if _, err := fs.FlipBit(path, size-1, 0); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, want := singleMember(t, 20, 4<<20)
			seg := filepath.Join("/member/wal", segName(0))
			st, err := c.fs[1].Stat(seg)
			if err != nil {
				t.Fatal(err)
			}
			tc.tear(t, c.fs[1], seg, st.Size())
			c.sms[1] = newTestSM()
			c.start(1, false)
			c.leader()
			c.converge(want, 1)
			if tc.name == "incomplete-record" {
				if st2, _ := c.fs[1].Stat(seg); st2.Size() < st.Size() {
					t.Fatalf("segment cut to %d, below the %d valid bytes", st2.Size(), st.Size())
				}
			}
		})
	}
}

// TestSnapshotFallback damages the newest snapshot: Start logs it and uses the older one with
// the WAL after it, which purging kept.
func TestSnapshotFallback(t *testing.T) {
	c := newCluster(t, 1)
	c.snapN = 10
	c.segBytes = 256
	c.start(1, false)
	want := values("f", 0, 45)
	c.proposeAll(want)
	c.stop(1)
	snaps, err := listSnaps(c.fs[1], "/member/snap")
	if err != nil || len(snaps) != 2 {
		t.Fatalf("snapshots %v, %v; want 2", snaps, err)
	}
	if _, err := c.fs[1].FlipBit(filepath.Join("/member/snap", snaps[0].name), snapHeaderSize+5, 1); err != nil {
		t.Fatal(err)
	}
	if segs := walSegments(t, c.fs[1]); segs[0] == segName(0) {
		t.Fatalf("wal not purged (%v): the fallback would not need the older snapshot", segs)
	}
	c.sms[1] = newTestSM()
	c.start(1, false)
	if _, restores := c.sms[1].state(); restores != 1 || c.sms[1].restoredIndex() != snaps[1].index {
		t.Fatalf("restart restored %d snapshots, the last at %d; want the older snapshot at %d", restores, c.sms[1].restoredIndex(), snaps[1].index)
	}
	c.leader()
	c.converge(want, 1)
}

func TestReplayLaterRecordWins(t *testing.T) {
	ent := func(term, index uint64, v string) walRecord {
		return walRecord{typ: recEntry, entry: raftpb.Entry{Term: term, Index: index, Data: []byte(v)}}
	}
	recs := []walRecord{
		ent(1, 1, "a"), ent(1, 2, "b"), ent(1, 3, "c"), ent(1, 4, "d"),
		{typ: recHardState, hs: raftpb.HardState{Term: 1, Commit: 2}},
		ent(2, 3, "C"), // a new leader overwrote 3 and dropped 4
		{typ: recHardState, hs: raftpb.HardState{Term: 2, Commit: 3}},
	}
	res, err := replay(recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range res.ents {
		got = append(got, string(e.Data))
	}
	if !slices.Equal(got, []string{"a", "b", "C"}) || res.hs.Commit != 3 {
		t.Fatalf("replay = %v commit %d", got, res.hs.Commit)
	}
	// From a snapshot at 2, the WAL from index 1 still covers it.
	if res, err = replay(recs, 2); err != nil || len(res.ents) != 1 || string(res.ents[0].Data) != "C" {
		t.Fatalf("replay after snapshot 2: %v, %v", res.ents, err)
	}
	// A WAL that starts after index 5 does not cover a snapshot at 2.
	if _, err := replay([]walRecord{ent(3, 6, "x")}, 2); !errors.Is(err, errNotCovered) {
		t.Fatalf("gap: %v", err)
	}
}

// TestSyncFailureStopsNode fails the WAL's fsync: the node must stop with that error (Propose,
// Err and Stop report it) instead of acknowledging what is not durable.
func TestSyncFailureStopsNode(t *testing.T) {
	injected := errors.New("injected sync failure")
	toggle := vfs.NewToggle(injected, vfs.OpSync)
	c := newCluster(t, 1)
	c.fs[1], c.sms[1] = vfs.NewMem(), newTestSM()
	cfg := c.config(1, false)
	cfg.FS = vfs.NewErrorFS(c.fs[1], toggle)
	n, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.nodes[1] = n
	c.net.add(n)
	c.proposeAll(values("e", 0, 3))

	toggle.Enable()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.Propose(ctx, []byte("lost")); !errors.Is(err, injected) || !errors.Is(err, ErrStopped) {
		t.Fatalf("Propose with failing sync: %v, want ErrStopped wrapping the sync error", err)
	}
	if err := n.Err(); !errors.Is(err, injected) {
		t.Fatalf("Err() = %v", err)
	}
	c.net.remove(1)
	delete(c.nodes, 1)
	if err := n.Stop(); !errors.Is(err, injected) {
		t.Fatalf("Stop() = %v, want the sync error", err)
	}
	if got, _ := c.sms[1].state(); slices.Contains(got, "lost") {
		t.Fatal("an entry whose WAL sync failed was applied")
	}
}
