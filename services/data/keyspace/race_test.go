//go:build race

package keyspace

// raceEnabled: the race detector slows single-goroutine loops several times over without
// checking anything in them, so tests of the index alone run fewer operations under it.
const raceEnabled = true
