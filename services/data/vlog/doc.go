// Package vlog is Lavik's value log: per-shard, append-only segment files of CRC-checked
// records, the I/O engines that read them back, and recovery.
//
// # Records
//
// Every change to a key is one self-describing record (see record.go): a 48-byte header (CRC32C,
// kind, database, value type, flags, version, expire-at, a sub-record index and how much of its
// segment was synced when it was appended), an optional extension block (a transaction's commit
// condition), the key and the payload. A record can be verified alone, so recovery rebuilds the
// whole index from the log with no other metadata, and a reader that fetched a record from disk
// checks its CRC and key before serving a single byte of it. Each segment starts with a 64-byte
// header naming the format, the segment, and the segment before it with the size it had when
// this one was created, which tells recovery when a segment lost its end; a kind, flag or format
// this version does not know is refused (ErrNewerFormat), never taken for damage. format1.go reads the previous format, for
// the keyspace's upgrade.
//
// A large value is the exception that proves the rule: its bytes are sub-records (KindSub), each
// carrying the value's object id and the chunk's index, and the change itself is one put record,
// the value's manifest, which names the chunks by location (package keyspace, chunked.go).
// Chunks precede their manifest in the log, so a manifest that survived a crash has all its
// chunks. The log treats sub-records as opaque but for their accounting (reclaim.go): replay
// hands them on like any record, and the keyspace never applies one.
//
// A change of several records (a transaction: MSET over shards, MULTI/EXEC) carries its commit
// condition in each record's extension block; the keyspace applies it at recovery only if every
// part reached its log. AddBarrier keeps a log from making anything after its part durable before
// the other parts are (see the keyspace's txcond.go).
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
// Open tells a torn tail from corruption (replay.go). Bytes a crash cut short were never
// acknowledged as durable, and a torn tail (a bad record with nothing valid that claims it
// synced) is cut. Bytes that were synced and no longer verify (a flipped bit, a lost sector) are
// corruption: the node refuses to start with a *CorruptionError naming the segment and offset,
// or, with Options.Repair, moves the damaged bytes into the shard's quarantine directory and
// keeps every valid record after them. Records carry what proves which bytes were synced (their
// Synced field, flagPrevSealed, and mark records after quiet syncs).
//
// Replay then hands every verified record, from a position (an index checkpoint's, position.go)
// or from the start, to the keyspace. The segments before the position are opened for reads
// without being read; a record they hold that went bad since is found by the read that fetches
// it, which refuses it as corrupt (counted in INFO persistence), rather than at start-up.
package vlog
