// Package observe holds what lavik-data records about its own behaviour for the introspection
// commands: the slow log (SLOWLOG), the latency monitor's events (LATENCY), and the per-command
// latency histograms INFO latencystats reads.
//
// The server's dispatcher measures every command once, in one place, and hands the figure here;
// the commands package reads it back. Each is an object owned by one server (no package state),
// safe for concurrent use, and cheap on the hot path: a command under the thresholds costs an
// atomic load, and a histogram sample one atomic add.
package observe
