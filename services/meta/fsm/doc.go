// Package fsm is lavik-meta's replicated state machine: the topology (shard groups, data
// nodes, meta members) and the authority over it (each group's epoch and primary), applied
// from committed raft entries to a bbolt database.
//
// Apply is a pure function of the state and the entry: it reads nothing but the bbolt
// transaction (no clock, no randomness, no map iteration order), so every member that applies
// the same entries holds the same state, and its Snapshot bytes are equal. That is why nothing
// wall-clock is in the replicated state: leases, heartbeat times and health live in the meta
// leader's memory (package failover), which turns what it observes into commands here. The
// applied index is written in the same bbolt transaction as the entry's effect, so after a
// crash the state and Applied() agree and raft replays exactly the entries after it. A
// refused command (wrong epoch, unknown node, overlapping slots, ...) is applied all the same:
// the index advances and the Result says why, so every member refuses it alike. Apply fails
// only on an entry it cannot decode or a storage error; it then changes nothing, and the raft
// layer must stop rather than skip it.
//
// Commands, results, stored records and snapshots are protobuf messages encoded by hand with
// protowire (their schemas are in the comments beside each type), rather than JSON or
// generated code. Protobuf because the API is protobuf and the same field-number discipline
// gives versioning; by hand because the messages are few and small, and because the encoders
// are then canonical by construction (fields in number order, zero values left out), which the
// snapshot's byte-for-byte determinism needs and neither encoding/json (map order, float
// formatting) nor generated marshalling (not promised deterministic across versions)
// guarantees. Decoding is strict where protobuf usually is lenient: an unknown version, kind or
// field is refused with ErrDecode, because skipping a field a newer leader meant would apply
// the entry differently on this member.
//
// bbolt layout (format 1): bucket "meta" holds "format" (uint64 big-endian, 1) and "applied"
// (uint64 big-endian); bucket "members" maps a raft id (uint64 big-endian) to a MemberRecord;
// "groups" maps a group id to a GroupRecord (epoch, primary, slots); "nodes" maps a node id to a NodeRecord (group, addresses, version, role, reported
// epoch). A group's nodes are found by scanning "nodes": a topology is tens of nodes, and an
// index bucket would be one more thing every write must keep in step. Groups are created
// implicitly by the first RegisterNode that names them, at that node's epoch, and are never
// removed.
//
// Snapshot is this package's own encoding (the records in key order), not bbolt's file: see
// snapshot.go. Restore decodes the whole snapshot first and then replaces the buckets in one
// bbolt transaction, so it is atomic without a temporary file.
//
// bbolt does its own file I/O (a memory map and its own fsyncs), so this package does not go
// through pkg/vfs as the rest of Lavik's storage does: bbolt takes a path, not a file system.
// Its crash safety (copy-on-write pages, two checksummed meta pages) is what the one-transaction
// rule above relies on; the tests here reopen and restore, but cannot cut power under bbolt.
package fsm
