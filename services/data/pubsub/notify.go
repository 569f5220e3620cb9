package pubsub

import (
	"errors"
	"strconv"
)

// Class is a class of keyspace events, Redis's notify-keyspace-events flags.
type Class uint32

// The classes and the two destinations (Redis's NOTIFY_* values).
const (
	Keyspace Class = 1 << iota // K: __keyspace@<db>__:<key>, message the event
	Keyevent                   // E: __keyevent@<db>__:<event>, message the key
	Generic                    // g: DEL, EXPIRE, RENAME, ...
	String                     // $
	List                       // l
	Set                        // s
	Hash                       // h
	ZSet                       // z
	Expired                    // x: a key expired
	Evicted                    // e: a key evicted for maxmemory or maxdisk
	Stream                     // t
	KeyMiss                    // m: a read found no key (commands.Ctx.KeyMiss)
	Module                     // d
	NewKey                     // n: a key was created
	// All is A: every class but m and n.
	All = Generic | String | List | Set | Hash | ZSet | Expired | Evicted | Stream | Module
)

// ErrNotifyFlags is Redis's error for a notify-keyspace-events value with a character it does
// not know.
var ErrNotifyFlags = errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")

// ParseNotify parses a notify-keyspace-events value.
func ParseNotify(v string) (Class, error) {
	var f Class
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case 'A':
			f |= All
		case 'g':
			f |= Generic
		case '$':
			f |= String
		case 'l':
			f |= List
		case 's':
			f |= Set
		case 'h':
			f |= Hash
		case 'z':
			f |= ZSet
		case 'x':
			f |= Expired
		case 'e':
			f |= Evicted
		case 'K':
			f |= Keyspace
		case 'E':
			f |= Keyevent
		case 't':
			f |= Stream
		case 'm':
			f |= KeyMiss
		case 'd':
			f |= Module
		case 'n':
			f |= NewKey
		default:
			return 0, ErrNotifyFlags
		}
	}
	return f, nil
}

// String formats flags as CONFIG GET shows them (Redis's keyspaceEventsFlagsToString).
func (f Class) String() string {
	var b []byte
	if f&All == All {
		b = append(b, 'A')
	} else {
		for _, c := range []struct {
			c Class
			b byte
		}{{Generic, 'g'}, {String, '$'}, {List, 'l'}, {Set, 's'}, {Hash, 'h'}, {ZSet, 'z'},
			{Expired, 'x'}, {Evicted, 'e'}, {Stream, 't'}, {Module, 'd'}, {NewKey, 'n'}} {
			if f&c.c != 0 {
				b = append(b, c.b)
			}
		}
	}
	if f&Keyspace != 0 {
		b = append(b, 'K')
	}
	if f&Keyevent != 0 {
		b = append(b, 'E')
	}
	if f&KeyMiss != 0 {
		b = append(b, 'm')
	}
	return string(b)
}

// SetNotify sets notify-keyspace-events.
func (r *Registry) SetNotify(f Class) { r.notify.Store(uint32(f)) }

// Notifying reports whether events of class are published: one atomic load, so that a
// command's notification costs nothing while they are off (the default). Safe on a nil
// Registry.
func (r *Registry) Notifying(class Class) bool {
	if r == nil {
		return false
	}
	f := Class(r.notify.Load())
	return f&class != 0 && f&(Keyspace|Keyevent) != 0
}

// Message is a message to publish later (Held): on a channel, or a shard channel.
type Message struct {
	Channel, Payload string
	Shard            bool
}

// Held collects the messages of a command that are to be published later, in order (a
// follower publishes those of its primary's stream once the batch they belong to committed).
// A nil *Held publishes at once.
type Held struct{ msgs []Message }

// Publish publishes message on channel now (h nil) or holds it.
func (h *Held) Publish(r *Registry, channel, message string, shard bool) int {
	if h != nil {
		h.msgs = append(h.msgs, Message{channel, message, shard})
		return 0
	}
	if shard {
		return r.SPublish(channel, message)
	}
	return r.Publish(channel, message)
}

// Release publishes the messages held, in order, and forgets them.
func (h *Held) Release(r *Registry) {
	for _, m := range h.msgs {
		if m.Shard {
			r.SPublish(m.Channel, m.Payload)
		} else {
			r.Publish(m.Channel, m.Payload)
		}
	}
	h.Drop()
}

// Len is the number of messages held.
func (h *Held) Len() int { return len(h.msgs) }

// Truncate forgets the messages held after the first n (a unit that did not commit and will run
// again, after others that did).
func (h *Held) Truncate(n int) {
	clear(h.msgs[n:])
	h.msgs = h.msgs[:n]
}

// Drop forgets the messages held (a batch that did not commit and will run again).
func (h *Held) Drop() {
	clear(h.msgs)
	h.msgs = h.msgs[:0]
}

// NotifyKeyspace publishes event of class about key of database db, as Redis's
// notifyKeyspaceEvent: on __keyspace@<db>__:<key> with the event as message (K), and on
// __keyevent@<db>__:<event> with the key (E).
func (r *Registry) NotifyKeyspace(class Class, event string, db int, key []byte) {
	r.NotifyKeyspaceHeld(nil, class, event, db, key)
}

// NotifyKeyspaceHeld is NotifyKeyspace with the messages held in h (nil: published now).
func (r *Registry) NotifyKeyspaceHeld(h *Held, class Class, event string, db int, key []byte) {
	f := Class(r.notify.Load())
	if f&class == 0 {
		return
	}
	d := strconv.Itoa(db)
	if f&Keyspace != 0 {
		h.Publish(r, "__keyspace@"+d+"__:"+string(key), event, false)
	}
	if f&Keyevent != 0 {
		h.Publish(r, "__keyevent@"+d+"__:"+event, string(key), false)
	}
}
