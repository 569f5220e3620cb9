// Package server is lavik-data's RESP front end: the listener, the event loops that serve the
// connections, and the dispatcher that admits every command through the command table.
//
// # Event loops
//
// Connections are served by one event loop per P (loop_linux.go): a goroutine with an epoll set
// of its connections' sockets, edge-triggered and non-blocking. A round of a loop serves every
// connection that is ready: it reads what the socket has, parses up to 128 pipelined commands,
// and runs them. The GETs of all the round's connections are answered together: their lookups
// and disk reads go on the loop's own io_uring (vlog.Ring), a bounded window at a time, submitted
// with one io_uring_enter per round and reaped from the completion ring without a system call,
// while the loop serves other connections; each answer is written as soon as it and the ones
// before it on its connection are in. A connection waiting for its GETs is paused, so pipelines
// keep their order. At the end of the round each connection waits for the durability its
// replies depend on (the value log's group commit, see below) and writes them with one system
// call, as far as the socket takes them; the rest goes when epoll says there is room.
//
// Nothing a loop does waits for a client or for long on the disk. A wait that may fsync
// (appendfsync always) goes to a goroutine, and the connections whose replies depend on it are
// paused until it is done. A command that may make a reply too long to buffer or wait long for
// the disk (a value over 64 KiB, MGET of many keys, KEYS, SCAN, FLUSHALL, RENAME of a large
// value: conn.heavy) runs detached: on a goroutine that streams its reply as it is made,
// waiting for the client as long as it takes, and then hands the connection back to its loop.
// The same path will park blocking commands, replication streams and subscribers.
//
// Each loop waits in epoll_wait in a system call; the runtime gets one P more than there are
// loops, so that a loop coming back from its wait finds its P instead of handing it round
// threads, and the value log's syncs, the collector and the rest have one of their own.
//
// # Pub/sub
//
// A subscriber is a connection parked in its loop like any other (pubsub.go; the registry and
// its design are package pubsub's). PUBLISH, on the publisher's loop, appends the message to
// each subscriber's mailbox and, when that mailbox was empty, posts msgDeliver to the
// subscriber's loop through the inbox a blocked command's wake-up uses; that loop moves the
// mailbox into the connection's output before running anything else of it, and writes it at
// the round's end like a reply, held to the pubsub class of client-output-buffer-limit. A
// RESP2 client with subscriptions runs only what commands.SubscribeModeErr allows; its GETs
// leave the batch path for the dispatcher's check.
//
// # Durability of replies
//
// Before a round's replies go out, each connection's keyspace session waits for the durability
// the appendfsync policy promises, so a reply is never sent for a write that could still be
// lost by a crash the policy covers, nor for a read of one. If that wait fails (disk full, I/O
// error), the replies that depended on it are replaced by an error that says what happened
// rather than sent as OK.
//
// Rejected: a goroutine per connection, the shape Go's netpoller gives for free. Each request
// then cost a read that found nothing (EAGAIN) before the goroutine parked, a park and a wake-up,
// and a reaper's wake-up per disk completion, and the GETs of different connections were never
// read from the SSD together; nor could a connection be parked cheaply. io_uring for the sockets
// too: a system call costs about 0.2 us here, against 4-5 us of TCP work per reply that no
// interface saves.
package server
