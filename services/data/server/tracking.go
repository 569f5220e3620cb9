package server

import (
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/pubsub"
	"github.com/lavikdb/lavik/services/data/tracking"
)

// Client-side caching on the dispatcher (see package tracking). After a command ran, while
// any client tracks (one atomic load, Tracker.Active), the dispatcher tells the tracker the
// keys the command wrote, by the command table's key positions (writtenKeys), and the keys a
// tracking client read: a read-only command's keys, and those of the read-only commands of an
// EXEC. Expiry tells it from the keyspace's expire hook (server.go); a flush, from here.

// newTracker makes the server's tracker: a redirect finds its connection by id.
func (s *Server) newTracker() *tracking.Tracker {
	return tracking.New(s.ps, func(id int64) *pubsub.Subscriber {
		s.mu.Lock()
		c := s.conns[id]
		s.mu.Unlock()
		if c == nil {
			return nil
		}
		return c.cl.Sub
	})
}

// Tracker returns the server's client-side caching tracker.
func (s *Server) Tracker() *tracking.Tracker { return s.track }

// trackCommand tells the tracker what cmd (args) did for client c: the keys it wrote (wrote:
// it may have written; multi is the transaction an EXEC ran) and read.
func (s *Server) trackCommand(c *conn, cmd *commands.Command, args [][]byte, multi *commands.Multi, wrote bool) {
	isExec := cmd.Name == "exec" && multi != nil
	if wrote {
		var keys [][]byte
		flush := false
		add := func(cmd *commands.Command, args [][]byte) {
			if cmd.Flags&commands.FlagWrite == 0 {
				return
			}
			if cmd.Name == "flushall" || cmd.Name == "flushdb" {
				flush = true
			}
			keys = writtenKeys(keys, cmd, args)
		}
		if isExec {
			multi.Each(add)
		} else {
			add(cmd, args)
		}
		for _, k := range c.ctx.Wrote {
			if !k.AllKeys { // a SWAPDB: Redis 7.0 invalidates nothing for it
				keys = append(keys, k.Key)
			}
		}
		if flush {
			s.track.InvalidateAll()
		}
		s.track.Invalidate(c.cl.ID, keys)
	}
	st := &c.cl.Tracking
	if !st.Tracking() {
		return
	}
	var keys [][]byte
	read := func(cmd *commands.Command, args [][]byte) {
		if cmd.Flags&commands.FlagReadonly != 0 {
			for _, p := range keyPositions(cmd, args) {
				keys = append(keys, args[p])
			}
		}
	}
	if isExec {
		multi.Each(read)
	} else {
		read(cmd, args)
	}
	s.track.Remember(st, keys)
	// CLIENT CACHING holds for the next command, or the transaction that follows it (Redis's
	// resetClient keeps it inside MULTI and after any CLIENT subcommand).
	if c.cl.Multi == nil && (cmd.Parent == nil || cmd.Parent.Name != "client") {
		st.EndCommand()
	}
}

// trackGets remembers the keys of a run of GETs (dispatchGets) read by a tracking client.
func (s *Server) trackGets(c *conn, keys [][]byte) {
	st := &c.cl.Tracking
	if !st.Tracking() || len(keys) == 0 {
		return
	}
	// CLIENT CACHING covers the first GET only: each GET is a command of its own.
	s.track.Remember(st, keys[:1])
	st.EndCommand()
	s.track.Remember(st, keys[1:])
}

// keyPositions are the positions of cmd's keys in args.
func keyPositions(cmd *commands.Command, args [][]byte) []int {
	if cmd.Keys != nil {
		pos, _ := cmd.Keys(args)
		return pos
	}
	return cmd.KeyIndexes(len(args))
}

// destOnly are the write commands whose keys past the first (COPY: but the second) are
// sources they only read: their invalidation names the destination alone, as Redis's.
var destOnly = map[string]int{
	"sunionstore": 0, "sinterstore": 0, "sdiffstore": 0, "zunionstore": 0, "zinterstore": 0,
	"zdiffstore": 0, "zrangestore": 0, "pfmerge": 0, "geosearchstore": 0, "bitop": 0, "copy": 1,
}

// writtenKeys appends the keys write command cmd (args) may have changed.
func writtenKeys(keys [][]byte, cmd *commands.Command, args [][]byte) [][]byte {
	pos := keyPositions(cmd, args)
	if i, ok := destOnly[cmd.Name]; ok {
		if i < len(pos) {
			return append(keys, args[pos[i]])
		}
		return keys
	}
	for _, p := range pos {
		keys = append(keys, args[p])
	}
	return keys
}
