package keyspace

import (
	"fmt"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// syncEngine is an AsyncEngine that reads at StartOne, for tests on the in-memory file system.
type syncEngine struct{ vlog.Engine }

func (e syncEngine) Room() int { return 1 << 20 }
func (e syncEngine) StartOne(q *vlog.ReadReq) {
	n, err := q.File.ReadAt(q.Buf[:q.N], q.Off)
	q.Done, q.Err = n, err
	q.MarkCompleted()
}
func (e syncEngine) Submit()   {}
func (e syncEngine) Poll() int { return 0 }

// BenchmarkReadsBatch measures the keyspace's side of an event loop's GETs: lookups, reads
// prepared and verified, answers handed on; a batch of 16 values of 1 KiB, synced.
func BenchmarkReadsBatch(b *testing.B) {
	opts := testOpts(vfs.NewMem(), newTestClock())
	opts.Shards = 8
	ks := mustOpen(b, opts)
	defer ks.Close()
	se := ks.NewSession()
	val := make([]byte, 1024)
	const n = 10000
	for i := 0; i < n; i++ {
		ks.Put(se, 0, fmt.Appendf(nil, "key:%d", i), val, 0, TypeString)
	}
	if err := ks.syncAll(); err != nil {
		b.Fatal(err)
	}
	eng := syncEngine{opts.Engine}
	reqs := make([]GetReq, 16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range reqs {
			reqs[j] = GetReq{Se: se, Key: fmt.Appendf(reqs[j].Key[:0], "key:%d", (i*16+j)%n)}
		}
		r := ks.StartReads(reqs, eng)
		got := 0
		for !r.Step(func(int, Value, Meta, bool, error) { got++ }) {
		}
		if got != len(reqs) {
			b.Fatal(got)
		}
	}
}
