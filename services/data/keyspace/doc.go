// Package keyspace is Lavik's keyspace: keys split into shards by hash, each shard owning an
// in-memory index partition (index.go), a value log (package vlog) and its expiry bookkeeping.
//
// A shard's lock covers only memory: lookups take the index entry (the value's location) under
// the read lock and read the value from the SSD outside any lock, then verify the record's CRC
// and key. Writers append a record to the shard's log tail and update the index under the write
// lock; they never wait for the disk while holding it. Read-modify-write commands (INCR,
// APPEND, RENAME, ...) run as optimistic transactions (tx.go): the function runs under the locks
// of every shard it touches; if it needs a value that is on disk, the locks are dropped, the
// value is read, and the function runs again if and only if no key it looked at changed.
//
// A change of several records (a transaction over several keys or shards, a FLUSHALL) is one
// unit in the logs: its records carry a commit condition naming where each shard's part ends,
// and recovery applies it only if every part is there (txcond.go). MULTI ... EXEC runs its
// commands under every shard's lock against an overlay of their writes and commits them as one
// such transaction (exec.go); WATCH registers keys in their shards, whose writers mark the
// watchers (watch.go).
//
// Durability is per connection: a Session remembers the highest log position it produced in
// each shard, and Session.Wait (called before a batch's replies go out) group-commits those
// logs according to the appendfsync policy. Reads are durable too: a read of a key whose newest
// record is not yet as durable as the policy promises makes its session wait for it
// (durable.go), so no reply exposes what a crash could take back.
//
// The data directory records its format (format.go, LAVIK_FORMAT); a directory of the previous
// format is converted at Open, crash-safely (upgrade.go), and a newer one is refused.
//
// The index (index.go) costs at most 48 bytes a key beyond the key's bytes: a 32-byte entry, a
// 4-byte slot at load 0.375-0.75 and a length prefix for the key. Its arrays hold no pointers and
// live outside the Go heap (offheap.go), so the collector neither scans them nor lets GOGC
// double them; the Go heap holds nothing per key.
//
// Databases (SELECT 0-15) are part of the key identity: the hash, the index entry and every
// record carry the database number. That number is physical: a map from the numbers clients
// use to physical ones (dbmap.go), kept as one InternalDB key per shard and rewritten in every
// shard as one transaction, is what SWAPDB changes, in O(shards) and without rewriting a key.
// Every operation translates through it and re-checks it under its shard lock.
//
// A string longer than ChunkThreshold (64 KiB) is stored as 8 KiB chunk records plus a manifest
// record naming them (chunked.go): the index entry points at the manifest and keeps the
// string's length, so STRLEN, TYPE and SCAN still read nothing; GETRANGE (GetRange) reads the
// manifest and only the chunks it overlaps, SETRANGE and APPEND (Tx.WriteAt) read the manifest
// and the edge chunks and write the chunks they change and a new manifest; the bit commands
// read through Tx.ReadAt (readat.go), which reads only the chunks a byte range overlaps. Chunks die with
// their manifest; the collector counts and moves them like any record, under the same
// compare-and-swap.
//
// Expiry is lazy (every access checks expire-at; an expired key is never returned) plus an
// active cycle (expire.go) that sweeps each shard's entries incrementally. Removing an expired
// key writes no record: its newest record already carries the expire-at, so recovery drops it
// too (reclamation keeps that record, or a tombstone in its place, while an older put of the key
// may still be on disk).
//
// Each key also has a 16-bit access word beside its entry (access.go: the LRU clock, or the LFU
// counter under an LFU policy), 2.3 bytes a key, which reads and writes update and
// introspection does not. Eviction (evict.go) keeps the DRAM figure INFO reports as used_memory
// under maxmemory and the log's live bytes under maxdisk, sampling entries per shard into an
// eviction pool as Redis does, and removes a key as a DEL the keyspace states.
//
// Reclamation (reclaim.go) gives dead records' space back in the background: it tracks each
// segment's dead bytes as the index stops pointing at records, rewrites the live records of the
// emptiest sealed segments (moving each index entry only if it still points at the old record)
// and deletes the segments, at a rate Options.ReclaimRate bounds.
//
// Restart does not replay the whole log: each shard checkpoints its index (checkpoint.go) in
// the background as its log grows and at Close, and Open loads the checkpoint and replays only
// the records after the log position it covers. A checkpoint that fails any check is ignored
// and the shard replays its whole log, which is always correct.
package keyspace
