// Command lavik-bench measures Redis-compatible servers, and compares Lavik with Redis on the
// same machine, measured the same way. Every performance figure Lavik publishes comes from it.
//
// `run` drives one server: a load phase writes every key, then closed-loop connections (one
// goroutine each, on a raw net.Conn with its own RESP2 encoder and parser) write a batch of
// --pipeline commands and read the replies, for a warm-up and then a fixed window. Latency is
// measured from the batch's write to each reply and recorded in HDR histograms, sharded and
// merged at the end. `compare` starts redis-server and lavik-data side by side, loads both and
// walks a matrix of workloads, connection counts and pipeline depths in rounds that alternate
// which server goes first, so drift on a shared machine falls on both; it reports medians over
// rounds, the ratio Lavik/Redis, resident memory per key and Lavik's restart time. `capacity`
// runs lavik-data in a memory cgroup (cgroup.go) and measures GET at a base dataset, then again
// after growing it far past the limit, to show what reading values from the SSD costs. `repl`
// (repl.go) measures replication on each kind in turn: a full resync's time, the primary under
// load before, during and after one, and a follower's lag under SET load, from offsets sampled
// on both sides (repl_lag.go). `failover` (failover.go) kills the primary of a lavik-meta
// managed pair and of a Sentinel-managed Redis pair with SIGKILL, trial after trial, under two
// writers, and reports the time until the survivor takes writes and the acknowledged writes it
// lacks, with and without WAIT.
//
// Honesty is designed in rather than assumed. Values are a pure function of key and version
// (keyspace.go), every read reply is checked for key, version and length, a sample byte for
// byte, and the version bounds stay correct under concurrent writers without partitioning keys.
// Any error (error reply, wrong or missing value, I/O failure, a window with no answers) makes
// the summary say ERRORS and the exit status non-zero, so a server that is fast because it is
// wrong cannot pass.
//
// Rejected: a client library on the measured path (pooling, retries and allocation between the
// server and the number), one histogram per connection (230 KB each, 600 MB at 1,280
// connections), and open-loop rate control (the published curves are closed-loop sweeps over
// connection counts, as in memtier_benchmark).
package main
