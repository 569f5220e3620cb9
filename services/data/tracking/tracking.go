// Package tracking is lavik-data's client-side caching: CLIENT TRACKING, as Redis 7.0 has it.
//
// # Design
//
// A connection's side is a State, owned by the connection (its zero value is "tracking off");
// the node's side is the Tracker. In the default mode the Tracker remembers, for each key a
// tracking client read, the ids of those clients (the table); a change of the key sends each
// of them one invalidation and forgets the key, so a client hears of a key once per read, as
// in Redis. The table is by key name only, not by database, as Redis's is. In BCAST mode
// nothing is remembered: a change of any key under one of a client's prefixes is sent to it.
//
// The server tells the Tracker what the commands read and wrote (server/tracking.go): the keys
// of a read-only command, taken from the command table's key positions, after it ran; the keys
// a write command's key positions name (its sources excepted where the table knows them only
// as read), the keys a script wrote, the keys expiry removes (the keyspace's expire hook), and
// a flush (every tracking client gets a null invalidation, the table is emptied). While no
// client tracks, that costs one atomic load per command (Active).
//
// An invalidation goes where pub/sub messages go: the receiving connection's mailbox
// (pubsub.Subscriber), taken by its own event loop before it runs anything else of the
// connection. A RESP3 client gets the push `>2 invalidate [keys]`; a client with REDIRECT
// sends it to the other connection: as that push if it speaks RESP3, else, if it is in
// pub/sub mode, as a message on __redis__:invalidate; otherwise nothing is sent, as Redis
// does. A redirect to a connection that is gone marks the client (flag R of CLIENT LIST), and
// a RESP3 client is told with a `tracking-redir-broken` push.
//
// The table is bounded by tracking-table-max-keys: a read that makes it larger forgets keys
// chosen at random, sending their invalidations, as Redis's trackingLimitUsedSlots does (Redis
// does it a little later, from its event loop; here it is the read's).
//
// Rejected: hooking the keyspace's change path (where WATCH marks its keys), which would see
// exactly the keys that changed: its hooks run under the shard locks, and the writer's
// connection (NOLOOP) is not known there. The cost of the dispatcher's key positions is that a
// write command that changed nothing (SET ... NX of an existing key) still invalidates its
// key, which only makes a client read the key again.
package tracking

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lavikdb/lavik/services/data/pubsub"
)

// Flag is a tracking option or state of a connection.
type Flag uint32

// The flags (Redis's CLIENT_TRACKING_*).
const (
	On          Flag = 1 << iota // tracking is on
	BCast                        // broadcasting mode (BCAST)
	OptIn                        // OPTIN: only reads after CLIENT CACHING YES are remembered
	OptOut                       // OPTOUT: reads after CLIENT CACHING NO are not remembered
	NoLoop                       // NOLOOP: no invalidation for the client's own writes
	BrokenRedir                  // the redirect's connection is gone
	Caching                      // CLIENT CACHING was given for the next command
)

// State is one connection's tracking state; the zero value is off. Its flags and redirect are
// read by other connections (CLIENT LIST, invalidations) and so are atomic; they are changed
// under the Tracker's lock.
type State struct {
	flags    atomic.Uint32
	redirect atomic.Int64
	// id and sub are the connection's, set by Enable; prefixes are its BCAST prefixes in the
	// order given. Guarded by the Tracker's lock.
	id       int64
	sub      *pubsub.Subscriber
	prefixes []string
}

// Flags returns the state's flags.
func (st *State) Flags() Flag { return Flag(st.flags.Load()) }

// Tracking reports whether tracking is on.
func (st *State) Tracking() bool { return st.Flags()&On != 0 }

// Redirect is the id invalidations are redirected to: -1 with tracking off, 0 for none.
func (st *State) Redirect() int64 {
	if !st.Tracking() {
		return -1
	}
	return st.redirect.Load()
}

// SetCaching records CLIENT CACHING YES|NO for the next command.
func (st *State) SetCaching() { st.flags.Or(uint32(Caching)) }

// EndCommand forgets CLIENT CACHING once the command after it ran.
func (st *State) EndCommand() {
	if st.Flags()&Caching != 0 {
		st.flags.And(^uint32(Caching))
	}
}

// ListFlags are the flags CLIENT LIST shows for the state: t (tracking), R (its redirect is
// broken), B (BCAST).
func (st *State) ListFlags() string {
	f := st.Flags()
	if f&On == 0 {
		return ""
	}
	s := "t"
	if f&BrokenRedir != 0 {
		s += "R"
	}
	if f&BCast != 0 {
		s += "B"
	}
	return s
}

// Options are CLIENT TRACKING ON's options.
type Options struct {
	Redirect                     int64
	Prefixes                     []string
	BCast, OptIn, OptOut, NoLoop bool
}

// Tracker is the node's tracking table and its tracking clients. Safe for concurrent use.
type Tracker struct {
	ps *pubsub.Registry
	// lookup finds a connected client's mailbox by id (nil: no such client).
	lookup func(id int64) *pubsub.Subscriber

	// n is the number of tracking clients: Active's one load.
	n       atomic.Int32
	maxKeys atomic.Int64

	mu sync.Mutex
	// clients are the tracking clients by id.
	clients map[int64]*State
	// keys are the keys read by default-mode clients, with the ids of those clients.
	keys map[string]map[int64]struct{}
	// items counts the (key, id) pairs of keys.
	items int
	// bcast are the BCAST clients of each prefix.
	bcast map[string]map[*State]struct{}
}

// New returns a Tracker delivering through ps; lookup finds a client's mailbox by its id.
func New(ps *pubsub.Registry, lookup func(id int64) *pubsub.Subscriber) *Tracker {
	t := &Tracker{ps: ps, lookup: lookup, clients: map[int64]*State{}, keys: map[string]map[int64]struct{}{},
		bcast: map[string]map[*State]struct{}{}}
	t.maxKeys.Store(1000000)
	return t
}

// Active reports whether any client tracks: one atomic load.
func (t *Tracker) Active() bool { return t != nil && t.n.Load() > 0 }

// Exists reports whether a client with id is connected (REDIRECT's check).
func (t *Tracker) Exists(id int64) bool { return t.lookup(id) != nil }

// Errors of CLIENT TRACKING ON, with Redis 7.0's texts.
var (
	ErrPrefixNeedsBCast = errors.New("ERR PREFIX option requires BCAST mode to be enabled")
	ErrSwitchBCast      = errors.New("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
	ErrOptBCast         = errors.New("ERR OPTIN and OPTOUT are not compatible with BCAST")
	ErrOptInOut         = errors.New("ERR You can't specify both OPTIN mode and OPTOUT mode")
	ErrSwitchOpt        = errors.New("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
)

// Enable turns tracking on for the connection id (mailbox sub) with opts, or changes its
// options, after the checks Redis makes; redirect existence is the caller's (Exists).
func (t *Tracker) Enable(st *State, id int64, sub *pubsub.Subscriber, o Options) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := st.Flags()
	switch {
	case !o.BCast && len(o.Prefixes) > 0:
		return ErrPrefixNeedsBCast
	case f&On != 0 && (f&BCast != 0) != o.BCast:
		return ErrSwitchBCast
	case o.BCast && (o.OptIn || o.OptOut):
		return ErrOptBCast
	case o.OptIn && o.OptOut:
		return ErrOptInOut
	case o.OptIn && f&OptOut != 0 || o.OptOut && f&OptIn != 0:
		return ErrSwitchOpt
	}
	if o.BCast {
		if err := checkPrefixes(st.prefixes, o.Prefixes); err != nil {
			return err
		}
	}
	if f&On == 0 {
		t.n.Add(1)
	}
	st.id, st.sub = id, sub
	t.clients[id] = st
	nf := On | f&Caching
	if o.BCast {
		nf |= BCast
		if len(o.Prefixes) == 0 {
			t.addPrefixLocked(st, "")
		}
		for _, p := range o.Prefixes {
			t.addPrefixLocked(st, p)
		}
	}
	if o.OptIn {
		nf |= OptIn
	}
	if o.OptOut {
		nf |= OptOut
	}
	if o.NoLoop {
		nf |= NoLoop
	}
	st.redirect.Store(o.Redirect)
	st.flags.Store(uint32(nf))
	return nil
}

// checkPrefixes returns Redis's error when one of add overlaps (one is a prefix of the other)
// with one of have or with another of add.
func checkPrefixes(have, add []string) error {
	for i, p := range add {
		for _, h := range have {
			if overlap(h, p) {
				return fmt.Errorf("ERR Prefix '%s' overlaps with an existing prefix '%s'. Prefixes for a single client must not overlap.", p, h)
			}
		}
		for _, q := range add[i+1:] {
			if overlap(p, q) {
				return fmt.Errorf("ERR Prefix '%s' overlaps with another provided prefix '%s'. Prefixes for a single client must not overlap.", p, q)
			}
		}
	}
	return nil
}

func overlap(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }

func (t *Tracker) addPrefixLocked(st *State, p string) {
	for _, h := range st.prefixes {
		if h == p {
			return
		}
	}
	st.prefixes = append(st.prefixes, p)
	m := t.bcast[p]
	if m == nil {
		m = map[*State]struct{}{}
		t.bcast[p] = m
	}
	m[st] = struct{}{}
}

// Disable turns tracking off (CLIENT TRACKING OFF, RESET, the connection closing). The keys
// the client read stay in the table until they change or are evicted, as in Redis: the
// invalidation then finds the client no longer tracking and sends nothing.
func (t *Tracker) Disable(st *State) {
	if !st.Tracking() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !st.Tracking() {
		return
	}
	for _, p := range st.prefixes {
		if m := t.bcast[p]; m != nil {
			delete(m, st)
			if len(m) == 0 {
				delete(t.bcast, p)
			}
		}
	}
	st.prefixes = nil
	if t.clients[st.id] == st {
		delete(t.clients, st.id)
	}
	st.flags.Store(0)
	st.redirect.Store(0)
	t.n.Add(-1)
}

// Prefixes returns the client's BCAST prefixes, sorted (Redis keeps them in a radix tree).
func (t *Tracker) Prefixes(st *State) []string {
	t.mu.Lock()
	p := append([]string(nil), st.prefixes...)
	t.mu.Unlock()
	sort.Strings(p)
	return p
}

// SetMaxKeys sets tracking-table-max-keys (0: no limit), forgetting keys past it.
func (t *Tracker) SetMaxKeys(n int64) {
	t.maxKeys.Store(n)
	t.mu.Lock()
	t.limitLocked()
	t.mu.Unlock()
}

// Remember records that st's client read keys, unless it does not track them (BCAST, or
// OPTIN without CLIENT CACHING YES, or OPTOUT after CLIENT CACHING NO).
func (t *Tracker) Remember(st *State, keys [][]byte) {
	f := st.Flags()
	if f&On == 0 || f&BCast != 0 || len(keys) == 0 {
		return
	}
	if f&OptIn != 0 && f&Caching == 0 || f&OptOut != 0 && f&Caching != 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		ids := t.keys[string(k)]
		if ids == nil {
			ids = map[int64]struct{}{}
			t.keys[string(k)] = ids
		}
		if _, ok := ids[st.id]; !ok {
			ids[st.id] = struct{}{}
			t.items++
		}
	}
	t.limitLocked()
}

// limitLocked forgets keys, with their invalidations, while the table holds more than
// tracking-table-max-keys.
func (t *Tracker) limitLocked() {
	max := t.maxKeys.Load()
	if max <= 0 {
		return
	}
	for k := range t.keys {
		if int64(len(t.keys)) <= max {
			return
		}
		t.invalidateKeyLocked(0, k)
	}
}

// Invalidate sends the invalidations of keys changed by the client writer (0: by the server:
// expiry, eviction), default mode and BCAST alike.
func (t *Tracker) Invalidate(writer int64, keys [][]byte) {
	if !t.Active() || len(keys) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var bc map[*State][]string
	for i, k := range keys {
		ks := string(k)
		if dup(keys[:i], k) {
			continue
		}
		t.invalidateKeyLocked(writer, ks)
		for p, m := range t.bcast {
			if !strings.HasPrefix(ks, p) {
				continue
			}
			for st := range m {
				if st.Flags()&NoLoop != 0 && st.id == writer {
					continue
				}
				if bc == nil {
					bc = map[*State][]string{}
				}
				bc[st] = append(bc[st], ks)
			}
		}
	}
	for st, ks := range bc {
		t.sendLocked(st, keysValue(ks...))
	}
}

func dup(seen [][]byte, k []byte) bool {
	for _, s := range seen {
		if string(s) == string(k) {
			return true
		}
	}
	return false
}

// invalidateKeyLocked sends the invalidation of key to the default-mode clients that read it
// and forgets it.
func (t *Tracker) invalidateKeyLocked(writer int64, key string) {
	ids, ok := t.keys[key]
	if !ok {
		return
	}
	for id := range ids {
		st := t.clients[id]
		if st == nil || st.Flags()&BCast != 0 {
			continue
		}
		if st.Flags()&NoLoop != 0 && id == writer {
			continue
		}
		t.sendLocked(st, keysValue(key))
	}
	t.items -= len(ids)
	delete(t.keys, key)
}

// InvalidateAll sends every tracking client a null invalidation and empties the table
// (FLUSHALL, FLUSHDB), as Redis does whichever database was flushed.
func (t *Tracker) InvalidateAll() {
	if !t.Active() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range t.clients {
		if st.sub.Proto() == 3 {
			t.sendLocked(st, []byte("_\r\n"))
		} else {
			t.sendLocked(st, []byte("$-1\r\n"))
		}
	}
	clear(t.keys)
	t.items = 0
}

// Len returns the number of keys in the table and of (key, client) pairs.
func (t *Tracker) Len() (keys, items int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.keys), t.items
}

// keysValue is the keys part of an invalidation: an array of bulk strings.
func keysValue(keys ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(keys)) + "\r\n")
	for _, k := range keys {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, '\r', '\n')
		b = append(b, k...)
		b = append(b, '\r', '\n')
	}
	return b
}

// sendLocked sends st's client an invalidation whose keys part is value, as Redis's
// sendTrackingMessage: to the client or its redirect.
func (t *Tracker) sendLocked(st *State, value []byte) {
	target, redirected := st.sub, false
	if id := st.redirect.Load(); id != 0 {
		rs := t.lookup(id)
		if rs == nil {
			st.flags.Or(uint32(BrokenRedir))
			if st.sub.Proto() == 3 {
				t.ps.DeliverRaw(st.sub, []byte(">2\r\n$21\r\ntracking-redir-broken\r\n:"+strconv.FormatInt(id, 10)+"\r\n"))
			}
			return
		}
		target, redirected = rs, true
	}
	var b []byte
	switch {
	case target.Proto() == 3:
		b = append(b, ">2\r\n$10\r\ninvalidate\r\n"...)
	case redirected && target.Subscribed():
		b = append(b, "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"...)
	default:
		// A RESP2 connection that is not redirecting, or redirects to one that does not
		// listen: RESP2 has no way to tell it.
		return
	}
	t.ps.DeliverRaw(target, append(b, value...))
}
