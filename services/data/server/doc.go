// Package server is lavik-data's RESP front end: the listener, one goroutine per connection,
// and the dispatcher that admits every command through the command table.
//
// A connection reads in batches: one read parses up to 128 pipelined commands; their replies
// are encoded into one buffer and written with one system call, coalesced up to 64 KiB. Before
// a batch's replies go out, the connection's keyspace session waits for the durability the
// appendfsync policy promises, so a reply is never sent for a write that could still be lost
// by a crash the policy covers. If that wait fails (disk full, I/O error), the replies of the
// batch's write commands are replaced by the error rather than sent as OK.
//
// Rejected: an event loop multiplexing connections on a few goroutines (as Redis does). Go's
// scheduler and netpoller already give that shape; a goroutine per connection keeps the code
// linear and lets a connection that waits for the SSD block only itself.
package server
