// Package repl is Lavik's replication: a primary's change stream and the followers it serves
// (stream.go, primary.go), a follower's link to its primary (link.go), and the backlog on disk
// that lets a follower back from an outage continue where it stopped (backlog.go). The protocol
// is Redis's, so redis-cli --replica and Redis's tooling see what they expect: a follower says
// PING, AUTH (masterauth), REPLCONF listening-port and capa, then PSYNC <history id> <offset>; the
// primary answers +CONTINUE and the stream from that offset when its backlog still holds it, else
// +FULLRESYNC <history id> <offset>, a snapshot of the whole keyspace, and the stream from the
// snapshot's offset.
//
// What the stream holds. The keyspace hands every committed change to the Stream, in commit
// order, under the locks of the shards it touched, with the commands that redo it (the command
// layer states them: see keyspace/changes.go); expiry's removals are DELs; collector moves are
// never changes. Bytes leave for a follower only once the records they describe are durable on
// the primary. A change of several commands is one MULTI ... EXEC; LAVIK.CLOCK gives the clock
// the primary decided by, which the follower decides by too.
//
// The snapshot is the keyspace at one instant (keyspace.Snapshot: a copy of the index under
// every shard's lock, with every segment pinned), read and sent while the primary serves reads
// and writes, in Lavik's own format inside Redis's streamed-payload framing (snapfmt.go).
//
// The follower applies the stream through the command table in batches of whole units (a
// command, or a MULTI ... EXEC), each batch in a keyspace EXEC over the shards of its keys only,
// which also writes those shards' replication states (history id, offset, the stream's database and clock) to
// keys of keyspace.InternalDB, one per shard. After a crash each shard's data and its offset
// agree; the follower resumes with a partial resync from the lowest, and skips in each shard
// what it already holds (apply.go has the argument). It acknowledges what it applied as soon as
// it is durable, so WAIT on the primary needs no GETACK. The primary writes a change's bytes to
// its followers' sockets before the change's reply leaves (Stream.Ship). A node that takes writes as a primary records a history
// of its own, so that, following a primary again, it can never continue a stream its data has
// diverged from: it gets a full resync.
//
// # The backlog
//
// The primary writes one ordered byte stream of changes (RESP commands, as Redis's replication
// stream) and numbers its bytes by offset (master_repl_offset). A follower that reconnects asks
// for everything from an offset (PSYNC); if the Backlog still retains it, the follower gets a
// partial resync instead of a full one. Redis keeps a small in-memory ring; Lavik keeps the
// backlog on disk so that it can cover minutes of writes.
//
// Append runs on the write path of every write command, so it only copies into an in-memory
// buffer under a mutex: no system call, and no allocation once buffers are recycled. A
// background writer writes full buffers (1 MiB) to segment files named by their first offset
// (%020d.blog), with plain write(2) and no fsync: the backlog is a cache for partial resyncs,
// and a crashed primary starts a new history anyway. At most four full buffers wait for the
// writer; beyond that Append waits, which bounds memory and makes a disk slower than the write
// rate slow the writes rather than drop the stream. Retention is arithmetic on offsets: once
// the bytes after a segment boundary cover repl-backlog-size, First moves to that boundary (so
// at most one segment more than the size is retained), and the writer removes the files
// behind it. A segment read while it is trimmed stays open until the read ends (a reference
// count), so a reader never sees a file vanish under it.
//
// A failed write (a full disk) is not retried: First moves past the bytes it dropped, so a
// follower asking for them gets ErrTrimmed and a full resync, and Err and Stats report it. The
// backlog never serves a byte it did not successfully store, and never one from a file's torn
// tail.
//
// Followers' senders stream with Wait and ReadAt: Wait blocks on a channel that the next Append
// closes, allocated only while someone waits, so a quiet Append pays nothing for it.
package repl
