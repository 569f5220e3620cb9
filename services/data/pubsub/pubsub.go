// Package pubsub is lavik-data's publish/subscribe registry: which connections listen on which
// channels, patterns and shard channels, and the delivery of messages to them; and the
// keyspace notifications (notify.go) published through it.
//
// # Design
//
// A connection's side is a Subscriber: its subscriptions, owned by the connection, and a
// mailbox, the messages published to it and not yet taken by its event loop. The Registry maps
// each channel (and shard channel) to its subscribers and lists the patterns; it is shared by
// every loop, behind one RWMutex that publishers take for reading.
//
// PUBLISH runs on the publisher's loop: it encodes the message once per protocol (a RESP2
// array, a RESP3 push), appends it to each receiving Subscriber's mailbox and calls the
// Subscriber's wake function, which posts one message to the subscriber's own loop (the same
// loop inbox a blocking command's wake-up goes through, server/block.go). That loop moves the
// mailbox into the connection's output before it runs anything else of the connection, so a
// subscriber is a parked connection like any other: no goroutine, no thread. One subscriber
// receives messages in the order they reached its mailbox, and a publisher's messages reach the
// mailbox in the order they were published. A subscriber that does not read is held to its
// client-output-buffer-limit by its loop, like any connection's replies; the mailbox itself is
// bounded by the hard limit (MaxMail), so a loop that is busy elsewhere cannot let it grow
// without end.
//
// Rejected: a channel (Go chan) per subscriber, read by a goroutine: a goroutine per
// subscriber, and a publisher that must choose between blocking on a slow reader and dropping.
// Delivering by writing to the subscriber's socket from the publisher's loop: two loops would
// then write to one socket, and a reply being written would interleave with a message.
package pubsub

import (
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
)

// Kind is a namespace of subscriptions.
type Kind int

// The kinds: channels (SUBSCRIBE), patterns (PSUBSCRIBE), shard channels (SSUBSCRIBE).
const (
	Channel Kind = iota
	Pattern
	Shard
	numKinds
)

// Subscriber is one connection's pub/sub state. Its subscriptions are changed only by the
// connection's own commands (one goroutine at a time); its counts and mailbox are read and
// written by publishers on other loops.
type Subscriber struct {
	wake func()
	// overflow is called (once) when the mailbox passes MaxMail: the connection is to close.
	overflow func()

	// subs are the subscriptions of each kind, in the order made; set holds them too.
	subs   [numKinds][]string
	set    [numKinds]map[string]struct{}
	counts [numKinds]atomic.Int32

	// proto is the connection's protocol (2 or 3, HELLO): a RESP3 client's messages are
	// pushes.
	proto *atomic.Int32

	mu sync.Mutex
	// mail holds the encoded messages not yet taken by the connection's loop; dead is set once
	// the mailbox overflowed: nothing more is delivered.
	mail []byte
	dead bool
	// pending mirrors len(mail), read without the lock.
	pending atomic.Int64
}

// NewSubscriber returns a connection's Subscriber: proto is the connection's protocol
// version, wake asks its loop to take the mailbox (Take), overflow closes the connection.
func NewSubscriber(proto *atomic.Int32, wake, overflow func()) *Subscriber {
	return &Subscriber{proto: proto, wake: wake, overflow: overflow}
}

// Count returns the number of subscriptions of kind k.
func (s *Subscriber) Count(k Kind) int { return int(s.counts[k].Load()) }

// Subscribed reports whether the connection has any subscription (it is "in pub/sub mode").
func (s *Subscriber) Subscribed() bool {
	return s.counts[Channel].Load()+s.counts[Pattern].Load()+s.counts[Shard].Load() > 0
}

// List returns the subscriptions of kind k, in the order made.
func (s *Subscriber) List(k Kind) []string { return append([]string(nil), s.subs[k]...) }

// HasMail reports whether messages wait in the mailbox.
func (s *Subscriber) HasMail() bool { return s.pending.Load() > 0 }

// Take appends the mailbox to dst and empties it.
func (s *Subscriber) Take(dst func([]byte)) {
	s.mu.Lock()
	if len(s.mail) > 0 {
		dst(s.mail)
		s.mail = s.mail[:0]
		if cap(s.mail) > 64<<10 {
			s.mail = nil // a burst's buffer is not kept for good
		}
		s.pending.Store(0)
	}
	s.mu.Unlock()
}

// deliver appends one encoded message, unless that makes the mailbox longer than max bytes
// (0: no limit); it reports whether the message reached the subscriber.
func (s *Subscriber) deliver(m *message, max int64) bool {
	b := m.resp2
	if s.proto != nil && s.proto.Load() == 3 {
		b = m.resp3
	}
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return false
	}
	s.mail = append(s.mail, b...)
	n := int64(len(s.mail))
	s.pending.Store(n)
	over := false
	if max > 0 && n > max {
		s.dead, s.mail, over = true, nil, true
		s.pending.Store(0)
	}
	s.mu.Unlock()
	if over {
		if s.overflow != nil {
			s.overflow()
		}
		return true // it reached the subscriber, which could not keep it
	}
	if n == int64(len(b)) && s.wake != nil {
		// The first message since the loop last took the mailbox: the loop takes everything
		// there when it comes, so later ones need no wake-up of their own.
		s.wake()
	}
	return true
}

// Registry is the node's subscriptions. Safe for concurrent use.
type Registry struct {
	match func(pattern, s []byte) bool

	mu sync.RWMutex
	// byName are the subscribers of each channel (Channel) and shard channel (Shard); patterns,
	// of each pattern (Pattern).
	byName [numKinds]map[string]map[*Subscriber]struct{}

	// maxMail bounds each mailbox: client-output-buffer-limit's pubsub hard limit.
	maxMail atomic.Int64
	// notify is notify-keyspace-events as flags (notify.go); read on every notifying command.
	notify atomic.Uint32
}

// NewRegistry returns an empty registry; match is the glob matcher of pattern subscriptions.
func NewRegistry(match func(pattern, s []byte) bool) *Registry {
	r := &Registry{match: match}
	for k := range r.byName {
		r.byName[k] = map[string]map[*Subscriber]struct{}{}
	}
	return r
}

// Subscribe subscribes s to name (a channel, pattern or shard channel by k); it reports the
// number of subscriptions s then has (of every kind for Channel and Pattern, of shard channels
// for Shard, as Redis counts them in its replies). Called only from s's connection.
func (r *Registry) Subscribe(s *Subscriber, k Kind, name string) {
	if s.set[k] == nil {
		s.set[k] = map[string]struct{}{}
	}
	if _, ok := s.set[k][name]; ok {
		return
	}
	r.mu.Lock()
	subs := r.byName[k][name]
	if subs == nil {
		subs = map[*Subscriber]struct{}{}
		r.byName[k][name] = subs
	}
	subs[s] = struct{}{}
	r.mu.Unlock()
	s.set[k][name] = struct{}{}
	s.subs[k] = append(s.subs[k], name)
	s.counts[k].Add(1)
}

// Unsubscribe removes s's subscription to name; it reports whether there was one.
func (r *Registry) Unsubscribe(s *Subscriber, k Kind, name string) bool {
	if _, ok := s.set[k][name]; !ok {
		return false
	}
	r.mu.Lock()
	if subs := r.byName[k][name]; subs != nil {
		delete(subs, s)
		if len(subs) == 0 {
			delete(r.byName[k], name)
		}
	}
	r.mu.Unlock()
	delete(s.set[k], name)
	for i, n := range s.subs[k] {
		if n == name {
			s.subs[k] = append(s.subs[k][:i], s.subs[k][i+1:]...)
			break
		}
	}
	s.counts[k].Add(-1)
	return true
}

// UnsubscribeAll drops every subscription of s (RESET, the connection closing).
func (r *Registry) UnsubscribeAll(s *Subscriber) {
	if s == nil {
		return
	}
	for k := Kind(0); k < numKinds; k++ {
		for _, name := range s.List(k) {
			r.Unsubscribe(s, k, name)
		}
	}
}

// message is one publication, encoded for each protocol.
type message struct {
	resp2, resp3 []byte
}

func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func encode(parts ...string) *message {
	var body []byte
	for _, p := range parts {
		body = appendBulk(body, p)
	}
	head := strconv.Itoa(len(parts)) + "\r\n"
	m := &message{
		resp2: append([]byte("*"+head), body...),
		resp3: append([]byte(">"+head), body...),
	}
	return m
}

// SetMaxMail bounds each subscriber's mailbox (0: no bound): a subscriber whose mailbox would
// pass it is closed (its overflow), as Redis closes a pub/sub client past its hard
// client-output-buffer-limit.
func (r *Registry) SetMaxMail(n int64) { r.maxMail.Store(n) }

// Publish delivers payload to the subscribers of channel and of the patterns that match it;
// it returns how many received it (a subscriber of the channel and of a pattern counts
// twice, as in Redis).
func (r *Registry) Publish(channel, payload string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	max := r.maxMail.Load()
	n := 0
	if subs := r.byName[Channel][channel]; len(subs) > 0 {
		m := encode("message", channel, payload)
		for s := range subs {
			if s.deliver(m, max) {
				n++
			}
		}
	}
	for pat, subs := range r.byName[Pattern] {
		if !r.match([]byte(pat), []byte(channel)) {
			continue
		}
		m := encode("pmessage", pat, channel, payload)
		for s := range subs {
			if s.deliver(m, max) {
				n++
			}
		}
	}
	return n
}

// SPublish delivers payload to the subscribers of shard channel channel.
func (r *Registry) SPublish(channel, payload string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	max := r.maxMail.Load()
	n := 0
	if subs := r.byName[Shard][channel]; len(subs) > 0 {
		m := encode("smessage", channel, payload)
		for s := range subs {
			if s.deliver(m, max) {
				n++
			}
		}
	}
	return n
}

// Active returns the channels (Channel or Shard) with at least one subscriber, matching
// pattern when it is not nil, sorted.
func (r *Registry) Active(k Kind, pattern []byte) []string {
	r.mu.RLock()
	var out []string
	for name := range r.byName[k] {
		if pattern == nil || r.match(pattern, []byte(name)) {
			out = append(out, name)
		}
	}
	r.mu.RUnlock()
	sort.Strings(out)
	return out
}

// NumSub returns the number of subscribers of a channel (Channel or Shard).
func (r *Registry) NumSub(k Kind, name string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byName[k][name])
}

// Len returns the number of channels, patterns or shard channels with a subscriber (INFO's
// pubsub_channels, PUBSUB NUMPAT, ...); 0 on a nil Registry.
func (r *Registry) Len(k Kind) int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byName[k])
}

// Proto is the subscriber's connection's protocol version (2 or 3).
func (s *Subscriber) Proto() int {
	if s.proto == nil {
		return 2
	}
	return int(s.proto.Load())
}

// DeliverRaw appends b, a message already encoded for the subscriber's protocol (a client-side
// caching invalidation, package tracking), to its mailbox as a publish does; it reports
// whether the message reached the subscriber.
func (r *Registry) DeliverRaw(s *Subscriber, b []byte) bool {
	return s.deliver(&message{resp2: b, resp3: b}, r.maxMail.Load())
}
