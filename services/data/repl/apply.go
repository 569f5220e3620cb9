package repl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/lavikdb/lavik/pkg/resp"
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/keyspace"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

// The applier: a follower runs its primary's stream in batches of whole units (a unit is one
// command, or the commands of a MULTI ... EXEC; a batch at most applyBatch commands, what one
// read brought), each batch in one keyspace EXEC over the shards of its units' keys only
// (keyspace.ExecIn). Readers and the collector on the other shards go on meanwhile; a batch that
// reaches the whole keyspace (FLUSHALL, SWAPDB, FUNCTION, a command the table gives no keys)
// locks every shard, as does one whose commands turn out to reach further than their keys said
// (keyspace.ErrExecShards: it is run again over every shard). A batch is visible at once and
// whole, and batches in stream order, so a follower's readers see what the primary's saw: a
// prefix of the stream, never a later write without an earlier one. Under light load (a write
// and its WAIT) a batch is one unit on one shard: a transaction of one shard, where the single
// state key made every batch one over two. Rejected: an EXEC per unit, measured: the follower
// spent so much more per SET that it fell behind (26.6 of 30.9 MB/s, lag 1.6 s, in make
// bench-repl); one EXEC per shard of a batch, which would show a reader a later write of one
// shard before an earlier one of another.
//
// The state goes with the data. Each shard holds its own replication state (a key of
// keyspace.InternalDB chosen to hash to it, shardStateKey): the stream offset up to which every
// unit touching the shard is applied there, with the stream's database and clock at that
// offset. A unit's EXEC writes the state of each shard it touches, so the unit and those states
// are one transaction: after a crash a shard holds a unit together with the state that says so,
// or neither (keyspace's transactions; several shards: txcond.go). The follower then resumes at
// the lowest offset any shard stands at (loadState), and, reading the stream again from there,
// skips in each shard the units its state says it has (applyUnit): every unit is applied once,
// whatever the crash left. A shard no unit touches for a while would hold the resume point
// back, so its state is brought forward (writing it alone, at a unit boundary, where it is true)
// once it trails the stream by stateRefresh. The global state key (stateKey) is the base: it is
// written where the data is replaced or the history changes (a full resync, a step-down, a
// promotion); shard states carry the base they go with, and a shard state of another base is
// ignored (a full resync empties them anyway, with the rest of InternalDB). Rejected: one state
// key written by every EXEC, which made each unit a transaction over two shards (its own and
// the key's), and the key's shard a lock every unit takes; one EXEC of every shard per batch (as
// before), which stopped every reader and writer of the follower for a whole batch, and waited
// for whichever shard was slowest (the collector dropping a segment held one for 100 ms).
//
// A unit is applied once, and made durable once: a commit that fails applied nothing and runs
// again; once committed, a failed durability wait is waited again, never run again (applyOnce,
// wait). Units the replay may find in some shards are applied one at a time (applyUnit), each
// where it is missing. The units read together are made durable together (one group commit), then
// acknowledged to the primary at once (ack), so a WAIT on the primary learns of them without
// asking.
//
// The primary's PUBLISHes (keyless pub/sub units) touch no shard: they are published once the
// units before them are durable, and, on a replay after a crash, skipped up to the furthest
// shard state (their subscribers went with the crash; a message is at most once, as in Redis).

// shardStateKey names shard i's state key: the first "repl-state:<n>" that hashes to it.
func shardStateKeys(ks *keyspace.Keyspace) [][]byte {
	keys := make([][]byte, ks.NumShards())
	for n, left := 0, len(keys); left > 0; n++ {
		k := []byte("repl-state:" + strconv.Itoa(n))
		if s := ks.ShardOf(keyspace.InternalDB, k); keys[s] == nil {
			keys[s] = k
			left--
		}
	}
	return keys
}

// shardState is a shard's persisted state: st, as of base (the global state's replid and
// offset when the shard states were started).
type shardState struct {
	baseID  string
	baseOff int64
	st      replState
}

func (s shardState) appendTo(b []byte) []byte {
	b = append(b, "2 "...)
	b = append(b, s.baseID...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, s.baseOff, 10)
	b = append(b, ' ')
	b = append(b, s.st.replid...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, s.st.offset, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(s.st.db), 10)
	b = append(b, ' ')
	return strconv.AppendInt(b, s.st.clock, 10)
}

func decodeShardState(b []byte) (shardState, bool) {
	var s shardState
	var v int
	n, err := fmt.Sscanf(string(b), "%d %s %d %s %d %d %d", &v, &s.baseID, &s.baseOff, &s.st.replid, &s.st.offset, &s.st.db, &s.st.clock)
	return s, err == nil && n == 7 && v == 2 && len(s.baseID) == 40 && len(s.st.replid) == 40
}

// loadStates reads the global state and the shard states that go with it: shards is nil unless
// every shard has one.
func loadStates(ks *keyspace.Keyspace) (g replState, shards []replState, ok bool) {
	get := func(key []byte, fn func(b []byte)) {
		ks.Get(nil, keyspace.InternalDB, key, func(v keyspace.Value, _ keyspace.Meta) error {
			b, err := v.Bytes()
			if err == nil {
				fn(b)
			}
			return err
		})
	}
	get(stateKey, func(b []byte) { g, ok = decodeState(b) })
	if !ok {
		return g, nil, false
	}
	for _, key := range shardStateKeys(ks) {
		var s shardState
		valid := false
		get(key, func(b []byte) { s, valid = decodeShardState(b) })
		if !valid || s.baseID != g.replid || s.baseOff != g.offset {
			return g, nil, true
		}
		shards = append(shards, s.st)
	}
	return g, shards, true
}

// resumeState is where the data stands as a whole: the lowest shard state, or the global state
// when the shard states are not (yet) there.
func resumeState(g replState, shards []replState) replState {
	if len(shards) == 0 {
		return g
	}
	low := shards[0]
	for _, s := range shards[1:] {
		if s.offset < low.offset {
			low = s
		}
	}
	return low
}

// stateRefresh is how far a shard's state may trail the stream before it is written alone. Too
// small: state writes to shards no unit touches; too large: a restarted follower reads (and
// skips) that much of the stream again, and needs the primary's backlog to still hold it.
const stateRefresh = 1 << 20

// applier runs the stream's commands.
type applier struct {
	l    *link
	ks   *keyspace.Keyspace
	ctx  commands.Ctx
	se   *keyspace.Session
	cmds []resp.Command
	// cur is the stream's state as read so far; upto its state after the last whole unit; the
	// offset of a MULTI not yet complete is not in upto.
	cur, upto replState
	// multi holds the commands of a MULTI ... EXEC of the stream not yet complete (copies).
	multi   []unitCmd
	inMulti bool
	// units are the whole units read and not yet applied; ackAsked says a GETACK came.
	units    []unit
	ackAsked bool
	// held are the messages the units being applied publish (keyspace events, the primary's
	// PUBLISHes), published once they are applied and durable, so that a subscriber told of
	// a change can read it, and a unit run again publishes nothing twice.
	held pubsub.Held

	// The shard states (see the top of this file). keys[i] is shard i's state key; at[i]
	// the state shard i stands at (persisted, or committed and waiting for durability);
	// base the global state they go with. replayTo is the furthest shard state when the
	// session began: up to there, units may already be applied (a replay after a crash).
	keys     [][]byte
	at       []replState
	base     replState
	replayTo int64
	all      []int // every shard's number
	scratch  []int
	union    []int
	val      []byte
	// dirty says units were committed since the last durability wait.
	dirty bool
}

// unit is what applies together: one command, or the commands of a MULTI ... EXEC, with the
// clock they run by.
type unit struct {
	cmds  []unitCmd
	clock int64
	after replState // the stream's state just past the unit
}

// unitCmd is one command and the database it runs in.
type unitCmd struct {
	db   int
	args [][]byte
}

func (l *link) apply(br *bufio.Reader, st replState) error {
	ks := l.n.ks
	a := &applier{l: l, ks: ks, se: ks.NewSession(), cur: st, upto: st, keys: shardStateKeys(ks)}
	cl := &commands.Client{ID: -1, Addr: "primary", Authed: true, Created: time.Now()}
	a.ctx = commands.Ctx{W: resp.NewWriter(), Client: cl, Srv: l.n.opts.Server, KS: ks, Sess: a.se, Repl: l.n, NoBlock: true,
		PS: l.n.opts.PubSub, Held: &a.held}
	for i := range a.keys {
		a.all = append(a.all, i)
	}
	if err := a.start(st); err != nil {
		return err
	}
	rd := resp.NewReader(br, resp.Limits{})
	for {
		var err error
		a.cmds, err = rd.ReadCommands(a.cmds, 4096)
		if err != nil {
			return err
		}
		for _, c := range a.cmds {
			a.read(c)
			l.read.Add(int64(c.Size))
		}
		if err := a.flush(); err != nil {
			return err
		}
	}
}

// start loads the shard states the session resumes from (st is where loadState said the data
// stands, with the history id the primary continues under), or starts them at st.
func (a *applier) start(st replState) error {
	g, shards, ok := loadStates(a.ks)
	if !ok {
		return errors.New("repl: the replication state is gone")
	}
	a.base = g
	if shards != nil && resumeState(g, shards).offset == st.offset {
		a.at = shards
		for _, s := range shards {
			a.replayTo = max(a.replayTo, s.offset)
		}
		same := true
		for _, s := range shards {
			same = same && s.replid == st.replid
		}
		if same {
			return nil
		}
	} else {
		a.at = make([]replState, len(a.keys))
		for i := range a.at {
			a.at[i] = st
		}
		a.replayTo = st.offset
	}
	// New shard states, or the history continues under a new id (a promoted primary's): every
	// shard's state is written, in one EXEC of every shard, each keeping its offset.
	for i := range a.at {
		a.at[i].replid = st.replid
	}
	return a.applyOnce(nil, a.all, func() {
		for i := range a.keys {
			a.putState(i, a.at[i])
		}
	})
}

// read takes one command of the stream.
func (a *applier) read(c resp.Command) {
	a.cur.offset += int64(c.Size)
	name := c.Args[0]
	is := func(s string) bool { return len(name) == len(s) && bytes.EqualFold(name, []byte(s)) }
	switch {
	case a.inMulti && is("exec"):
		a.units = append(a.units, unit{cmds: a.multi, clock: a.cur.clock, after: a.cur})
		a.multi, a.inMulti = nil, false
	case a.inMulti:
		args := make([][]byte, len(c.Args))
		for i, arg := range c.Args {
			args[i] = bytes.Clone(arg)
		}
		a.multi = append(a.multi, unitCmd{db: a.cur.db, args: args})
		if is("select") && len(c.Args) == 2 {
			a.cur.db, _ = strconv.Atoi(string(c.Args[1]))
		}
		return
	case is("multi"):
		a.inMulti = true
		return
	case is("select") && len(c.Args) == 2:
		if db, err := strconv.Atoi(string(c.Args[1])); err == nil {
			a.cur.db = db
		}
	case is("lavik.clock") && len(c.Args) == 2:
		if ms, err := strconv.ParseInt(string(c.Args[1]), 10, 64); err == nil {
			a.cur.clock = ms
		}
	case is("ping"):
	case is("replconf"):
		if len(c.Args) >= 2 && bytes.EqualFold(c.Args[1], []byte("getack")) {
			a.ackAsked = true
		}
	default:
		a.units = append(a.units, unit{cmds: []unitCmd{{db: a.cur.db, args: c.Args}}, clock: a.cur.clock, after: a.cur})
	}
	a.upto = a.cur
}

// flush applies the units read, waits until they are durable, and acknowledges them.
func (a *applier) flush() error {
	for units := a.units; len(units) > 0; {
		if units[0].after.offset <= a.replayTo {
			// A replay after a crash: unit by unit, each in the shards that lack it.
			if err := a.applyUnit(&units[0]); err != nil {
				return err
			}
			units = units[1:]
			continue
		}
		n, err := a.applyBatch(units)
		if err != nil {
			return err
		}
		units = units[n:]
	}
	clear(a.units)
	a.units = a.units[:0]
	// Shards no unit touched lately: their states come forward to here, a unit boundary, so
	// that a restart does not resume from far back.
	for i := range a.at {
		if a.upto.offset-a.at[i].offset > stateRefresh {
			st := a.upto
			if err := a.applyOnce(nil, a.scratchOf(i), func() { a.putState(i, st) }); err != nil {
				return err
			}
			a.at[i] = st
		}
	}
	if a.dirty {
		if err := a.wait(); err != nil {
			return err
		}
		a.dirty = false
	}
	a.held.Release(a.l.n.opts.PubSub)
	// Past the last unit only PING, SELECT and the like were read, which change no data: they
	// count as applied without a write (a restart reads them again).
	a.l.applied.Store(a.upto.offset)
	a.ks.SetClockFloor(a.upto.clock)
	// Acknowledged at once, from here: a primary's WAIT learns of the write as soon as it is
	// durable here, without asking (GETACK) and without a hand-off to the acker goroutine.
	if a.ackAsked || a.l.applied.Load() > a.l.acked.Load() {
		a.ackAsked = false
		a.l.connMu.Lock()
		conn := a.l.conn
		a.l.connMu.Unlock()
		if conn != nil && a.l.ack(conn) != nil {
			conn.Close() // the next read fails and the link reconnects
		}
	}
	return nil
}

// applyBatch applies the first units (up to applyBatch commands) in one EXEC over the shards
// of their keys, which also brings those shards' states to the batch's end, and returns how many
// it applied.
func (a *applier) applyBatch(units []unit) (int, error) {
	n, cmds, all := 0, 0, false
	shards := a.union[:0]
	for n < len(units) && (n == 0 || cmds+len(units[n].cmds) <= applyBatch) {
		us, ok := a.shardsOf(&units[n])
		if !ok {
			all = true
		}
		for _, s := range us {
			if !containsInt(shards, s) {
				shards = append(shards, s)
			}
		}
		cmds += len(units[n].cmds)
		n++
	}
	sortInts(shards)
	a.union = shards
	if all {
		shards = a.all
	}
	batch := units[:n]
	run := func() {
		for i := range batch {
			a.se.SetClock(batch[i].clock)
			for _, c := range batch[i].cmds {
				a.run(c)
			}
		}
	}
	if len(shards) == 0 {
		// Pub/sub only: no shard, no state; published with what is before it, once durable.
		run()
		a.se.SetClock(0)
		return n, nil
	}
	end := batch[n-1].after
	err := a.applyOnce(&end, shards, run)
	if errors.Is(err, keyspace.ErrExecShards) {
		// Its commands reached beyond their keys' shards (MOVE, COPY ... DB): every shard.
		shards = a.all
		err = a.applyOnce(&end, shards, run)
	}
	if err != nil {
		return 0, err
	}
	for _, s := range shards {
		a.at[s] = end
	}
	return n, nil
}

// applyBatch is the most commands one EXEC of the applier runs: the shards of their keys are
// locked while it does, so readers of those shards wait for at most that many.
const applyBatch = 256

// applyUnit applies u once: in an EXEC over the shards of its keys, with their states.
func (a *applier) applyUnit(u *unit) error {
	shards, ok := a.shardsOf(u)
	if len(shards) == 0 && ok {
		// Pub/sub only: no shard, no state; run after what is before it is committed, and
		// published with it once durable.
		if u.after.offset <= a.replayTo {
			return nil
		}
		for _, c := range u.cmds {
			a.run(c)
		}
		return nil
	}
	if !ok {
		shards = a.all
	}
	if u.after.offset <= a.replayTo {
		// A replay after a crash: the unit is in every shard it touches, or in none.
		done := 0
		for _, s := range shards {
			if a.at[s].offset >= u.after.offset {
				done++
			}
		}
		if done == len(shards) {
			return nil
		}
		if done > 0 {
			a.l.n.staleState.Store(true)
			return fmt.Errorf("repl: unit ending at %d applied in %d of its %d shards; the follower needs a full resync", u.after.offset, done, len(shards))
		}
	}
	run := func() {
		a.se.SetClock(u.clock)
		for _, c := range u.cmds {
			a.run(c)
		}
	}
	err := a.applyOnce(&u.after, shards, run)
	if errors.Is(err, keyspace.ErrExecShards) {
		// Its commands reached beyond their keys' shards (MOVE, COPY ... DB): every shard.
		shards = a.all
		err = a.applyOnce(&u.after, shards, run)
	}
	if err != nil {
		return err
	}
	for _, s := range shards {
		a.at[s] = u.after
	}
	return nil
}

// applyOnce runs fn and writes the states of shards (as of after; nil: as fn writes them) in
// one EXEC over those shards, once: a commit that fails applied nothing (keyspace's EXEC) and
// runs again. It returns ErrExecShards, having applied nothing, when fn reached beyond shards.
func (a *applier) applyOnce(after *replState, shards []int, fn func()) error {
	logged := false
	mark := a.held.Len()
	for {
		a.held.Truncate(mark)
		var err error
		body := func() {
			fn()
			a.se.SetClock(0)
			if after != nil {
				for _, s := range shards {
					a.putState(s, *after)
				}
			}
			if len(shards) == len(a.all) {
				// The global state again, as it was: a FLUSHALL among the commands took it
				// with the rest of InternalDB.
				a.ks.Put(a.se, keyspace.InternalDB, stateKey, a.base.encode(), 0, keyspace.TypeString)
			}
		}
		if len(shards) == len(a.all) {
			_, err = a.ks.Exec(a.se, nil, body)
		} else {
			err = a.ks.ExecIn(a.se, shards, body)
		}
		a.se.SetClock(0)
		if err == nil {
			a.dirty = true
			return nil
		}
		if errors.Is(err, keyspace.ErrExecShards) {
			a.held.Truncate(mark)
			return err
		}
		if !logged {
			a.l.n.log.Warn("replication: cannot apply the stream; retrying", "err", err)
			logged = true
		}
		if err := a.pause(); err != nil {
			return err
		}
	}
}

// wait makes the units committed since the last wait durable. Once committed they are in memory
// and in the logs' tails, so a failed wait is retried as a wait, never by running them again:
// that would apply INCR twice.
func (a *applier) wait() error {
	// A failed wait forgets what the session waited for (Session.Wait), so the retries wait
	// for everything the logs hold, which covers the units.
	err := a.se.Wait()
	logged := false
	for err != nil {
		if !logged {
			a.l.n.log.Warn("replication: the applied stream is not durable yet; waiting", "err", err)
			logged = true
		}
		if err := a.pause(); err != nil {
			return err
		}
		err = a.ks.WaitAll()
	}
	return nil
}

// putState writes shard i's state st, inside the applier's EXEC.
func (a *applier) putState(i int, st replState) {
	a.val = shardState{baseID: a.base.replid, baseOff: a.base.offset, st: st}.appendTo(a.val[:0])
	// The EXEC keeps the value until it commits: a copy, as the buffer is reused.
	a.ks.Put(a.se, keyspace.InternalDB, a.keys[i], bytes.Clone(a.val), 0, keyspace.TypeString)
}

// scratchOf returns a one-shard list of shard i.
func (a *applier) scratchOf(i int) []int {
	a.scratch = append(a.scratch[:0], i)
	return a.scratch
}

// shardsOf returns the shards of u's keys, in order, each once; ok false when u reaches the whole
// keyspace, or keys the table cannot tell (every shard). Pub/sub commands touch none.
func (a *applier) shardsOf(u *unit) (shards []int, ok bool) {
	shards = a.scratch[:0]
	defer func() { a.scratch = shards[:0] }()
	for _, c := range u.cmds {
		cmd := commands.Lookup(c.args[0])
		if cmd == nil {
			return nil, false
		}
		if cmd.Subcommands != nil && len(c.args) >= 2 {
			if sub := cmd.LookupSub(c.args[1]); sub != nil {
				cmd = sub
			}
		}
		if cmd.Flags&commands.FlagPubSub != 0 {
			continue
		}
		if !cmd.CheckArity(len(c.args)) {
			continue // the handler is not run (run)
		}
		var idx []int
		if cmd.Flags&commands.FlagMovableKeys != 0 {
			if cmd.Keys == nil {
				return nil, false
			}
			var err error
			if idx, err = cmd.Keys(c.args); err != nil {
				return nil, false
			}
		} else {
			idx = cmd.KeyIndexes(len(c.args))
		}
		if len(idx) == 0 {
			return nil, false // FLUSHALL, SWAPDB, FUNCTION, ...: the whole keyspace
		}
		for _, i := range idx {
			if i <= 0 || i >= len(c.args) {
				return nil, false
			}
			s := a.ks.ShardOf(max(c.db, 0), c.args[i])
			if !containsInt(shards, s) {
				shards = append(shards, s)
			}
		}
	}
	sortInts(shards)
	return append([]int(nil), shards...), true
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// sortInts sorts a handful of shard numbers.
func sortInts(xs []int) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

// pause waits before a retry, or returns the link's end.
func (a *applier) pause() error {
	select {
	case <-time.After(100 * time.Millisecond):
		return nil
	case <-a.l.ctx.Done():
		return a.l.ctx.Err()
	}
}

// run runs one command of the stream. Its reply goes nowhere: the primary's client got it.
func (a *applier) run(c unitCmd) {
	cmd := commands.Lookup(c.args[0])
	if cmd == nil {
		a.l.n.log.Warn("replication: unknown command in the stream", "cmd", string(c.args[0]))
		return
	}
	if cmd.Subcommands != nil && len(c.args) >= 2 {
		if sub := cmd.LookupSub(c.args[1]); sub != nil {
			cmd = sub
		}
	}
	if cmd.Handler == nil || !cmd.CheckArity(len(c.args)) {
		return
	}
	ctx := &a.ctx
	ctx.Client.DB.Store(int32(max(c.db, 0)))
	ctx.Args, ctx.Cmd, ctx.Failed, ctx.Broken, ctx.BrokenErr, ctx.Block, ctx.Wrote = c.args, cmd, false, false, nil, nil, ctx.Wrote[:0]
	ctx.W.Reset()
	a.se.TrackKeys(ctx.TrackingKeys())
	defer func() {
		if r := recover(); r != nil {
			a.l.n.log.Error("replication: command panicked", "cmd", cmd.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	cmd.Handler(ctx)
}

// acker sends REPLCONF ACK <applied offset> once a second and when asked, until done: the
// applier acknowledges what it applies as it goes (flush), this keeps an idle link's primary
// informed.
func (l *link) acker(conn net.Conn, done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-l.ackKick:
		case <-done:
			return
		}
		if l.ack(conn) != nil {
			conn.Close()
			return
		}
	}
}

// ack writes REPLCONF ACK <applied offset> on conn.
func (l *link) ack(conn net.Conn) error {
	l.ackMu.Lock()
	defer l.ackMu.Unlock()
	off := l.applied.Load()
	conn.SetWriteDeadline(time.Now().Add(l.n.opts.Timeout))
	_, err := conn.Write(appendCommand(nil, "REPLCONF", "ACK", strconv.FormatInt(off, 10)))
	if err == nil {
		l.acked.Store(off)
	}
	return err
}
