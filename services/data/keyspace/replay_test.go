package keyspace

import (
	"fmt"
	"testing"

	"github.com/lavikdb/lavik/services/data/vlog"
)

// TestReplayKeepsNewestRecord replays records out of version order, as a log holding rewritten
// records would present them, and checks that each key's entry follows its newest record.
func TestReplayKeepsNewestRecord(t *testing.T) {
	s := &shard{ix: newTestIndex(t), dbs: 16, keys: make([]int64, MaxDatabases), expires: make([]int64, MaxDatabases)}
	defer s.replayVer.free()
	ks := &Keyspace{}
	replay := func(kind vlog.Kind, key string, version uint64, off uint32, expireAt int64) {
		t.Helper()
		h := vlog.Header{Kind: kind, DB: 1, Version: version, ExpireAt: expireAt, ValLen: 7}
		if err := s.replayLocked(ks, &vlog.Record{Loc: vlog.Loc{Seg: 1, Off: off}, Header: h, Key: []byte(key)}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(key string, off uint32, expireAt int64) {
		t.Helper()
		i, _, ok := s.ix.find(uint32(hashKey(1, []byte(key))), 1, []byte(key))
		if !ok {
			t.Fatalf("%s not in the index", key)
		}
		if e := s.ix.entry(i); e.off != off || e.expireAt != expireAt {
			t.Fatalf("%s: off %d expire-at %d; want %d and %d", key, e.off, e.expireAt, off, expireAt)
		}
	}
	// Enough keys that the version table grows several times.
	for i := 0; i < 5000; i++ {
		replay(vlog.KindPut, fmt.Sprintf("k%d", i), uint64(10*i+10), uint32(i), 0)
	}
	replay(vlog.KindPut, "k7", 5, 9999, 0)      // older put: ignored
	replay(vlog.KindExpire, "k7", 60, 0, 123)   // older expire: ignored
	replay(vlog.KindExpire, "k8", 100, 0, 456)  // newer expire: applied, location kept
	replay(vlog.KindPut, "k8", 95, 8888, 456)   // a copy made after it, carrying its expire-at: applied
	replay(vlog.KindPut, "k8", 90, 7777, 0)     // older than the put: ignored
	replay(vlog.KindDelete, "k9", 50, 0, 0)     // older delete: ignored
	replay(vlog.KindDelete, "k4999", 1e6, 0, 0) // newer delete: applied
	replay(vlog.KindPut, "k4999", 1e6+1, 77, 0) // a later put brings it back
	want("k7", 7, 0)
	want("k8", 8888, 456)
	want("k9", 9, 0)
	want("k4999", 77, 0)
	if s.version != 1e6+1 || s.keys[1] != 5000 || s.expires[1] != 1 {
		t.Fatalf("version %d, keys %d, expires %d", s.version, s.keys[1], s.expires[1])
	}
	if len(s.replayVer.v) < 5000 {
		t.Fatalf("version table of %d entries for 5000 keys", len(s.replayVer.v))
	}
}
