package repl

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// TestStreamKeyless checks that commands that change no key (Keyspace.Announce, PUBLISH's way
// into the stream) go down the stream in order with the writes around them: without a SELECT
// or LAVIK.CLOCK of their own outside an EXEC, inside one in their place between MULTI and
// EXEC, and alone in an EXEC that writes nothing; and that they ship once what is before them
// is durable.
func TestStreamKeyless(t *testing.T) {
	engine, err := vlog.NewEngine("pread", 16)
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	fs := vfs.NewMem()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := int64(1_700_000_000_000)
	ks, err := keyspace.Open(keyspace.Options{FS: fs, Dir: "/data", Shards: 2, SegmentSize: 1 << 20, Engine: engine,
		Fsync: vlog.FsyncAlways, Databases: 16, Logger: quiet, CheckpointInterval: -1, Now: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer ks.Close()
	bl, err := OpenBacklog(fs, "/backlog", 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	st := NewStream(ks, bl, quiet)
	defer st.Close()
	ks.SetChangeSink(st, nil)
	defer ks.SetChangeSink(nil, nil)

	args := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	se := ks.NewSession()
	set := func(db int, key, val string) {
		t.Helper()
		se.Propagate(db, args("SET "+key+" "+val))
		if err := ks.Put(se, db, []byte(key), []byte(val), 0, keyspace.TypeString); err != nil {
			t.Fatal(err)
		}
	}
	set(0, "a", "1")
	ks.Announce(se, 0, args("PUBLISH ch m1"))
	set(0, "b", "2")
	ks.Announce(se, 5, args("PUBLISH ch m2")) // keyless: no SELECT 5
	set(0, "c", "3")
	// An EXEC: SET, PUBLISH, SET, in that order inside MULTI ... EXEC.
	if _, err := ks.Exec(se, nil, func() {
		se.Propagate(0, args("SET d 4"))
		ks.Put(se, 0, []byte("d"), []byte("4"), 0, keyspace.TypeString)
		se.KeepEffect()
		ks.Announce(se, 0, args("PUBLISH ch m3"))
		se.KeepEffect()
		se.Propagate(0, args("SET e 5"))
		ks.Put(se, 0, []byte("e"), []byte("5"), 0, keyspace.TypeString)
		se.KeepEffect()
	}); err != nil {
		t.Fatal(err)
	}
	// An EXEC that writes nothing but announces.
	if _, err := ks.Exec(se, nil, func() {
		ks.Announce(se, 0, args("PUBLISH ch m4"))
		se.KeepEffect()
	}); err != nil {
		t.Fatal(err)
	}
	se.EndCommand()
	end := st.End()
	if got := se.LastChange(); got != end {
		t.Fatalf("the session's last change is at %d, the stream ends at %d", got, end)
	}
	// Everything is durable (fsync always): the shipper gets to the end.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if sh := st.WaitShippable(ctx, end-1); sh != end {
		t.Fatalf("shippable %d, want %d", sh, end)
	}
	raw := make([]byte, end-bl.First())
	if _, err := bl.ReadAt(raw, bl.First()); err != nil {
		t.Fatal(err)
	}
	cmds, err := resp.NewReader(bytes.NewReader(raw), resp.Limits{}).ReadCommands(nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cmds {
		got = append(got, string(bytes.Join(c.Args, []byte(" "))))
	}
	want := []string{
		"LAVIK.CLOCK 1700000000000", "SELECT 0", "SET a 1", "PUBLISH ch m1", "SET b 2", "PUBLISH ch m2", "SET c 3",
		"MULTI", "SET d 4", "PUBLISH ch m3", "SET e 5", "EXEC",
		"PUBLISH ch m4",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("stream\n%q\nwant\n%q", got, want)
	}

	// Without a sink (no follower ever connected) Announce does nothing.
	ks.SetChangeSink(nil, nil)
	ks.Announce(se, 0, args("PUBLISH ch lost"))
	if st.End() != end {
		t.Fatalf("an Announce without a sink reached the stream")
	}
}
