// Package vlog is Lavik's value log: per-shard, append-only segment files of CRC-checked
// records, the I/O engines that read them back, and recovery.
//
// # Records
//
// Every change to a key is one self-describing record (see record.go): CRC32C, kind, database,
// value type, key, version, expire-at and payload. A record can be verified alone, so recovery
// rebuilds the whole index from the log with no other metadata, and a reader that fetched a
// record from disk checks its CRC and key before serving a single byte of it.
//
// A large value is the exception that proves the rule: its bytes are chunk records (KindChunk),
// each carrying the key and its offset in the value, and the change itself is one put record,
// the value's manifest, which names the chunks by location (package keyspace, chunked.go).
// Chunks precede their manifest in the log, so a manifest that survived a crash has all its
// chunks. The log treats chunk records as opaque but for their accounting (reclaim.go): replay
// hands them on like any record, and the keyspace never applies one.
//
// # Writing and durability
//
// A shard's Log appends records to an in-memory tail and returns a log sequence number (LSN, the
// byte position in the shard's whole history). Before a connection sends the replies of a batch
// it calls Flush with the highest LSN it produced: the first caller becomes the group-commit
// leader and write()s everything appended so far in one system call, and with fsync also
// fdatasyncs it; callers arriving meanwhile wait for the leader and are usually covered by its
// write. This is Redis's appendfsync contract: with every policy a reply is sent only after its
// write reached the operating system (a killed process loses nothing acknowledged); with
// "always" only after it reached the disk.
//
// Bytes stay in the tail until they are synced, and reads of such records are served from the
// tail. Reads of synced records go to the file opened with O_DIRECT through an Engine, so the
// SSD path is what is measured, never the page cache. (Reading unsynced bytes with O_DIRECT
// would make the kernel write back dirty pages inside a GET.)
//
// # Value cache
//
// An optional Cache (Options.Cache, one per process) keeps hot records in DRAM by location.
// Records never change, so the cache needs no invalidation: see Cache for the design.
//
// # Reclamation
//
// The log keeps per-segment space accounting (live, dead, and which dead bytes may be older puts
// and which are chunks, which never need hiding),
// reads sealed segments back sequentially, and drops a segment whose file goes once no reader or
// pin (a replication stream) uses it; see reclaim.go. What to rewrite is decided by the keyspace,
// which owns the index.
//
// # Recovery policy
//
// Replay reads every segment in order and verifies every record. A record that fails its CRC
// (or cannot be decoded) in the newest segment is a torn tail: the segment is truncated at the
// last good record and the cut is logged, because a crash in the middle of a write can leave
// exactly that. A bad record in any older (sealed) segment cannot be a torn write: it is
// reported as corruption, counted, never served, and replay resynchronises at the next offset
// where a whole record verifies. Keys whose newest record was lost that way fall back to the
// newest record that verifies; the corruption counter in INFO persistence tells the operator.
//
// With an index checkpoint (Options.ReplayFrom, position.go) replay starts at the position the
// checkpoint covers: the same checks apply to the records from there on, and the segments before
// it are opened for reads without being read. A record they hold that went bad since is then
// found by the read that fetches it, which refuses it as corrupt, rather than at start-up.
package vlog
