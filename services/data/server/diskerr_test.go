package server_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// TestWriteErrorFailsRepliesAndRefusesWrites fills the disk under appendfsync always, once for
// writes and once for syncs of the value log. A write whose durability wait fails is answered
// with the error, not +OK, while the other replies of its pipeline stand; from then on write
// commands are refused on every connection and everything else is served; once the disk has
// space again the keyspace's background retry clears the error and writes are accepted.
func TestWriteErrorFailsRepliesAndRefusesWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   vfs.Op
	}{
		{"write", vfs.OpWrite},
		{"sync", vfs.OpSync},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := vfs.NewToggle(syscall.ENOSPC, tc.op)
			ts := startServer(t, vfs.NewErrorFS(vfs.NewMem(), full))
			t.Cleanup(full.Disable) // runs first: the keyspace closes on a healthy disk
			failed := "-" + commands.DurabilityError(&vlog.WriteError{Op: tc.name, Err: syscall.ENOSPC}, true)
			const refused = "-MISCONF lavik: writing the value log failed: no space left on device; write commands are refused until it succeeds"
			a, b := ts.dial(t), ts.dial(t)
			a.send(cmd{"SET", "k0", "v0"}, cmd{"SET", "n", "1"})
			a.expect("+OK", "+OK")

			full.Enable()
			a.send(cmd{"PING"}, cmd{"SET", "k1", "v1"}, cmd{"GET", "k0"}, cmd{"INCR", "n"}, cmd{"ECHO", "after"})
			a.expect("+PONG", failed, bulk("v0"), failed, bulk("after"))
			if err := ts.ks.WriteErr(); err == nil {
				t.Fatal("the keyspace reports no write error after a failed wait")
			}

			// Write commands are refused on every connection, before they touch the
			// keyspace; reads and other commands are served.
			for _, c := range []*client{a, b} {
				c.send(cmd{"SET", "k2", "v2"}, cmd{"DEL", "k0"}, cmd{"INCR", "n"},
					cmd{"GET", "k0"}, cmd{"GET", "k2"}, cmd{"EXISTS", "k0"}, cmd{"PING"})
				c.expect(refused, refused, refused, bulk("v0"), "(nil)", ":1", "+PONG")
			}
			if got := ts.dial(t).do("GET", "k0"); got != bulk("v0") {
				t.Fatalf("GET on a new connection: %s", got)
			}

			// Space is back: the background retry (once a second) clears the error. Until
			// then every write is refused, never half-done.
			full.Disable()
			eventually(t, "accepting writes", func() bool {
				switch got := b.do("SET", "k3", "v3"); got {
				case "+OK":
					return true
				case refused:
					return false
				default:
					t.Fatalf("SET while the error clears: %s", got)
					return false
				}
			})
			if err := ts.ks.WriteErr(); err != nil {
				t.Fatalf("WriteErr after a write succeeded: %v", err)
			}
			a.send(cmd{"SET", "k4", "v4"}, cmd{"GET", "k3"}, cmd{"GET", "k4"}, cmd{"GET", "k0"}, cmd{"GET", "k2"})
			a.expect("+OK", bulk("v3"), bulk("v4"), bulk("v0"), "(nil)")
		})
	}
}

// TestWriteErrorRepliesOfOneBatch: when the durability wait of a pipeline fails, only the
// replies of its write commands are replaced; errors, reads and replies dropped by CLIENT
// REPLY stay as they were.
func TestWriteErrorRepliesOfOneBatch(t *testing.T) {
	full := vfs.NewToggle(syscall.ENOSPC, vfs.OpSync)
	ts := startServer(t, vfs.NewErrorFS(vfs.NewMem(), full))
	t.Cleanup(full.Disable)
	failed := "-" + commands.DurabilityError(&vlog.WriteError{Op: "sync", Err: syscall.ENOSPC}, true)
	c := ts.dial(t)
	c.send(cmd{"SET", "a", "1"})
	c.expect("+OK")
	full.Enable()
	val := strings.Repeat("x", 100)
	c.send(
		cmd{"SET", "b", val},
		cmd{"GET", "a"}, cmd{"GET", "a"},
		cmd{"SET", "c"}, // wrong arity: refused, not run
		cmd{"CLIENT", "REPLY", "SKIP"}, cmd{"SET", "skipped", "1"},
		cmd{"APPEND", "a", "2"},
		cmd{"NOSUCH"},
		cmd{"MSET", "d", "1", "e", "2"},
		cmd{"ECHO", "end"},
	)
	c.expect(
		failed,
		bulk("1"), bulk("1"),
		"-ERR wrong number of arguments for 'set' command",
		failed,
		"-ERR unknown command 'NOSUCH', with args beginning with: ",
		failed,
		bulk("end"),
	)
	c.expect() // the skipped SET's reply stays dropped
	if got := c.do("PING"); got != "+PONG" {
		t.Fatalf("PING: %s", got)
	}
}
