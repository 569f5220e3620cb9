// Package raftnode is one lavik-meta member's raft layer: an etcd-raft RawNode driven by a
// single loop goroutine, with its own durable log and snapshots written through pkg/vfs. The
// state machine (bbolt) and the gRPC transport live elsewhere and are passed in as
// StateMachine and Transport.
//
// # The loop
//
// One goroutine owns the RawNode, raft's MemoryStorage, the WAL and the state machine. It takes
// one event at a time (a tick, an inbound message, a proposal, a read, a snapshot or
// unreachable report) and then handles every Ready in the order the raft README gives: (1)
// persist: a received snapshot's file, then one WAL append of its marker, the new entries and
// the hard state, synced once; then the same into MemoryStorage; (2) send the messages; (3)
// apply the snapshot (SM.Restore if the state machine is behind it) and the committed entries
// (normal ones to SM.Apply unless SM.Applied() already covers them; conf changes to raft,
// always, since the membership lives in raft and not in the state machine); (4) Advance.
// Persisting before sending is the simple safe order: a vote or an append acknowledgement then
// never promises what a crash could take back. Rejected: sending the leader's appends in
// parallel with its fsync (the README allows it); it saves one fsync of latency per round
// trip, which a topology store does not need. Any error while persisting or applying stops the
// loop; Stop and Err return it. Nothing is retried or skipped: an index cannot be left out.
//
// Proposals carry a 16-byte envelope (a random per-Start nonce and a sequence number) so that
// the member that proposed an entry can hand the state machine's result back to the caller;
// the state machine sees the data without it. Followers refuse proposals (ErrNotLeader, with
// the leader's id) rather than forward them. ReadIndex uses raft's ReadIndex (ReadOnlySafe, a
// quorum heartbeat round) and then waits for the local applied index to reach the read index,
// so it is a linearizable barrier on followers too. CheckQuorum and PreVote are on.
//
// # Proofs of leadership
//
// Confirm asks the leader for a proof that it leads: a ReadIndex round of its own, started at
// or after a given time, answered by a quorum at its term, and reported once the state machine
// has applied the round's read index (Confirmed returns the newest). Every later leader was
// elected after the round's start: one of its voters answered the round first. The meta leader
// bounds the write leases it grants by it (package failover). Rounds start on demand, one in
// flight serving every caller it covers and no two closer than Config.ConfirmGap, so an idle
// group pays nothing and a busy one at most a round per gap (rejected: a round every few
// milliseconds whether asked for or not, which cost an idle three-member group about twice its
// CPU). Rejected too: raft's own leader lease (ReadOnlyLeaseBased, CheckQuorum's recent
// activity): it is not exposed with times, and its safety rests on clocks raft does not
// measure. ProposeAt appends an entry only if the member still leads at the given term, so
// that a decision made under one term's knowledge is not proposed by the same member leading
// again later.
//
// # WAL
//
// Dir/wal/<seq, 16 hex>.wal segments, each a sequence of records: type (1 byte: 1 entry, 2
// hard state, 3 received-snapshot marker), payload length (4 bytes LE), CRC32C of type,
// length and payload (4 bytes LE), payload (the raftpb message, marshaled). A segment past
// WALSegmentBytes is closed and a new one, whose name is made durable by syncing the directory
// before anything is appended, starts with the current hard state, so deleting older segments
// never loses it. On replay records are applied in order; an entry record for index i
// replaces the entries from i on, as raft's append did (a new leader overwriting a conflicting
// suffix), so the later record for an index wins; a snapshot marker empties the log.
// Recovery policy: a bad record at the tail of the last segment with no valid record after it
// is a torn append (never acknowledged): it is cut off and logged. A bad record anywhere else,
// or followed by any valid record, is damage to acknowledged data: Start fails with a
// *CorruptError (ErrCorrupt) naming the file and offset; silently truncating there could drop
// a committed entry.
//
// # Snapshots
//
// Dir/snap/<term>-<index>.snap (16 hex digits each): magic "LVKSNAP1", CRC32C (4 bytes LE)
// and length (8 bytes LE) of the payload, payload (a marshaled raftpb.Snapshot: metadata with
// the conf state, and SM.Snapshot()'s data). Every SnapshotEntries applied entries the loop
// takes one, labelled with its applied index (the entries between SM.Applied() and it are
// empty or conf changes the state machine never sees), writes it with vfs.WriteFileAtomic
// (write, fsync, rename, fsync the directory), compacts MemoryStorage to it, keeps the two
// newest snapshot files and deletes the WAL segments wholly before the older of the two. Raft
// sends a compacted-past follower the snapshot in MsgSnap; the follower persists it like its
// own and restores its state machine from it. At Start the newest snapshot whose CRC verifies
// and which the WAL continues is used (a damaged one is logged and skipped, falling back to the
// older one, which purging kept covered), the state machine is restored if it is behind it,
// the WAL entries after it are loaded into MemoryStorage with the hard state, and raft
// re-commits from there.
package raftnode
