package commands

import (
	"github.com/lavikdb/lavik/services/data/pubsub"
)

// Pub/sub commands (package pubsub holds the registry and the delivery). Replies follow Redis
// 7.0's pubsub.c: one confirmation per channel, counting the subscriptions the client has left
// (channels and patterns together; shard channels apart), pushes to a RESP3 client and arrays
// to a RESP2 one. A RESP2 client with a subscription may run only the commands
// SubscribeModeErr lets through.

func init() {
	const sub = FlagPubSub | FlagNoScript | FlagLoading | FlagStale
	register(
		&Command{Name: "subscribe", Arity: -2, Flags: sub, Group: "pubsub", Since: "2.0.0", Complexity: "O(N) where N is the number of channels to subscribe to.",
			Summary: "Listen for messages published to channels.", Handler: subscribeCmd(pubsub.Channel, "subscribe")},
		&Command{Name: "psubscribe", Arity: -2, Flags: sub, Group: "pubsub", Since: "2.0.0", Complexity: "O(N) where N is the number of patterns to subscribe to.",
			Summary: "Listen for messages published to channels matching the given patterns.", Handler: subscribeCmd(pubsub.Pattern, "psubscribe")},
		&Command{Name: "ssubscribe", Arity: -2, Flags: sub, Group: "pubsub", Since: "7.0.0", Complexity: "O(N) where N is the number of shard channels to subscribe to.",
			Summary: "Listen for messages published to shard channels.", Handler: subscribeCmd(pubsub.Shard, "ssubscribe")},
		&Command{Name: "unsubscribe", Arity: -1, Flags: sub, Group: "pubsub", Since: "2.0.0", Complexity: "O(N) where N is the number of clients already subscribed to a channel.",
			Summary: "Stop listening for messages posted to channels.", Handler: unsubscribeCmd(pubsub.Channel, "unsubscribe")},
		&Command{Name: "punsubscribe", Arity: -1, Flags: sub, Group: "pubsub", Since: "2.0.0", Complexity: "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
			Summary: "Stop listening for messages posted to channels matching the given patterns.", Handler: unsubscribeCmd(pubsub.Pattern, "punsubscribe")},
		&Command{Name: "sunsubscribe", Arity: -1, Flags: sub, Group: "pubsub", Since: "7.0.0", Complexity: "O(N) where N is the number of clients already subscribed to a shard channel.",
			Summary: "Stop listening for messages posted to shard channels.", Handler: unsubscribeCmd(pubsub.Shard, "sunsubscribe")},
		&Command{Name: "publish", Arity: 3, Flags: FlagPubSub | FlagLoading | FlagStale | FlagFast, Group: "pubsub", Since: "2.0.0", Complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
			Summary: "Post a message to a channel.", Handler: publishCmd},
		&Command{Name: "spublish", Arity: 3, Flags: FlagPubSub | FlagLoading | FlagStale | FlagFast, Group: "pubsub", Since: "7.0.0", Complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
			Summary: "Post a message to a shard channel", Handler: publishCmd},
		&Command{Name: "pubsub", Arity: -2, Group: "pubsub", Since: "2.8.0", Complexity: "Depends on subcommand.",
			Summary: "A container for Pub/Sub commands",
			Subcommands: map[string]*Command{
				"channels": {Arity: -2, Flags: FlagPubSub | FlagLoading | FlagStale, Since: "2.8.0", Complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
					Summary: "Returns the active channels.", Handler: pubsubChannelsCmd(pubsub.Channel)},
				"shardchannels": {Arity: -2, Flags: FlagPubSub | FlagLoading | FlagStale, Since: "7.0.0", Complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
					Summary: "Returns the active shard channels.", Handler: pubsubChannelsCmd(pubsub.Shard)},
				"numsub": {Arity: -2, Flags: FlagPubSub | FlagLoading | FlagStale, Since: "2.8.0", Complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
					Summary: "Returns a count of subscribers to channels.", Handler: pubsubNumsubCmd(pubsub.Channel)},
				"shardnumsub": {Arity: -2, Flags: FlagPubSub | FlagLoading | FlagStale, Since: "7.0.0", Complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
					Summary: "Returns the count of subscribers of shard channels.", Handler: pubsubNumsubCmd(pubsub.Shard)},
				"numpat": {Arity: 2, Flags: FlagPubSub | FlagLoading | FlagStale, Since: "2.8.0", Complexity: "O(1)",
					Summary: "Returns a count of unique pattern subscriptions.", Handler: pubsubNumpatCmd},
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "6.2.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: helpCmd},
			}},
	)
}

// SubscribeModeErr returns the error for cmd sent by a RESP2 client that has subscriptions,
// which may run only (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PING, QUIT and RESET, as in Redis; nil
// when cmd may run. The server's dispatcher asks before running a command.
func SubscribeModeErr(cl *Client, cmd *Command) error {
	if cl.Sub == nil || cl.Proto.Load() != 2 || !cl.Sub.Subscribed() {
		return nil
	}
	switch cmd.Name {
	case "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "ping", "quit", "reset":
		return nil
	}
	return Error("ERR Can't execute '" + cmd.Name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
}

// subCount is the count a (un)subscribe confirmation reports: channels and patterns together,
// or shard channels alone.
func subCount(s *pubsub.Subscriber, k pubsub.Kind) int64 {
	if k == pubsub.Shard {
		return int64(s.Count(pubsub.Shard))
	}
	return int64(s.Count(pubsub.Channel) + s.Count(pubsub.Pattern))
}

// takeMail moves the messages already delivered to the client into its replies, so that a
// (un)subscribe confirmation comes after every message published before it, as in Redis where
// both go to one output buffer.
func takeMail(c *Ctx) {
	if c.Client.Sub.HasMail() {
		c.Client.Sub.Take(c.W.Raw)
	}
}

func subscribeCmd(k pubsub.Kind, verb string) func(c *Ctx) {
	return func(c *Ctx) {
		s := c.Client.Sub
		if s == nil || c.PS == nil {
			c.Err(Error("ERR " + verb + " is not available on this connection"))
			return
		}
		takeMail(c)
		for _, ch := range c.Args[1:] {
			c.PS.Subscribe(s, k, string(ch))
			c.W.Push(3)
			c.W.BulkString(verb)
			c.W.Bulk(ch)
			c.W.Int(subCount(s, k))
		}
	}
}

func unsubscribeCmd(k pubsub.Kind, verb string) func(c *Ctx) {
	return func(c *Ctx) {
		s := c.Client.Sub
		if s == nil || c.PS == nil {
			c.Err(Error("ERR " + verb + " is not available on this connection"))
			return
		}
		takeMail(c)
		names := c.Args[1:]
		if len(names) == 0 {
			all := s.List(k)
			if len(all) == 0 {
				c.W.Push(3)
				c.W.BulkString(verb)
				c.W.Null()
				c.W.Int(subCount(s, k))
				return
			}
			for _, n := range all {
				names = append(names, []byte(n))
			}
		}
		for _, ch := range names {
			c.PS.Unsubscribe(s, k, string(ch))
			c.W.Push(3)
			c.W.BulkString(verb)
			c.W.Bulk(ch)
			c.W.Int(subCount(s, k))
		}
	}
}

// publishCmd is PUBLISH and SPUBLISH. As in Redis, the command goes down the replication
// stream too (keyspace.Keyspace.Announce), in its place among the writes, whoever received it:
// a follower delivers it to its own subscribers.
func publishCmd(c *Ctx) {
	n := 0
	if c.PS != nil {
		n = c.Held.Publish(c.PS, string(c.Args[1]), string(c.Args[2]), c.Cmd.Name == "spublish")
	}
	if c.KS != nil {
		c.KS.Announce(c.Sess, c.DB(), c.Args)
	}
	c.W.Int(int64(n))
}

func pubsubChannelsCmd(k pubsub.Kind) func(c *Ctx) {
	return func(c *Ctx) {
		if len(c.Args) > 3 {
			c.Err(UnknownSubcommand(c.Cmd.Parent, c.Args[1]))
			return
		}
		var pattern []byte
		if len(c.Args) == 3 {
			pattern = c.Args[2]
		}
		var names []string
		if c.PS != nil {
			names = c.PS.Active(k, pattern)
		}
		c.W.Array(len(names))
		for _, n := range names {
			c.W.BulkString(n)
		}
	}
}

func pubsubNumsubCmd(k pubsub.Kind) func(c *Ctx) {
	return func(c *Ctx) {
		c.W.Array(2 * (len(c.Args) - 2))
		for _, ch := range c.Args[2:] {
			c.W.Bulk(ch)
			n := 0
			if c.PS != nil {
				n = c.PS.NumSub(k, string(ch))
			}
			c.W.Int(int64(n))
		}
	}
}

func pubsubNumpatCmd(c *Ctx) {
	n := 0
	if c.PS != nil {
		n = c.PS.Len(pubsub.Pattern)
	}
	c.W.Int(int64(n))
}

// Notify states a keyspace event of the command: event (Redis's name: "set", "del",
// "expire", ...) of class about key in the client's database, published as Redis's
// notifyKeyspaceEvent does when notify-keyspace-events enables the class. While notifications
// are off (the default) it costs one atomic load and a look at an empty list.
//
// Two events come from the keyspace (keyspace.Session.TrackKeys) rather than from handlers:
// "new" (class n) comes before the first event about a key the command's commit created, as
// Redis's dbAdd states it before the command's own event; and "del" comes after the event about
// a key the commit removed (a collection that lost its last element: LPOP, HDEL, SREM, ZREM,
// SMOVE's source, ...), as Redis deletes an empty collection right after stating the change.
// The events whose key is removed by design (rename_from, move_from) and "del" itself take the
// removal without adding one.
func (c *Ctx) Notify(class pubsub.Class, event string, key []byte) {
	c.NotifyDB(class, event, c.DB(), key)
}

// NotifyDB is Notify for a key of database db (MOVE's and COPY's destination).
func (c *Ctx) NotifyDB(class pubsub.Class, event string, db int, key []byte) {
	removed := false
	switch event {
	case "del", "rename_from", "move_from":
		c.Sess.TakeKey(db, key, false)
	default:
		if c.Sess.TakeKey(db, key, true) {
			c.NotifyNew(db, key)
		}
		removed = c.Sess.TakeKey(db, key, false)
	}
	if c.PS.Notifying(class) {
		c.PS.NotifyKeyspaceHeld(c.Held, class, event, db, key)
	}
	if removed && c.PS.Notifying(pubsub.Generic) {
		c.PS.NotifyKeyspaceHeld(c.Held, pubsub.Generic, "del", db, key)
	}
}

// notifyStore states the event of a command that stored a result of n elements (or bytes) in
// key: event (its own name: ZUNIONSTORE's "zunionstore", SORT's "sortstore", BITOP's "set") when
// it stored some, or "del" when an empty result removed what the key held, and nothing when
// the key was and stays missing, as Redis's store commands (setKey, or dbDelete of the
// destination). The removal is the keyspace's record (TakeKey), kept while class g is on.
func notifyStore(c *Ctx, class pubsub.Class, event string, key []byte, n int) {
	switch {
	case n > 0:
		c.Notify(class, event, key)
	case c.Sess.TakeKey(c.DB(), key, false):
		c.Notify(pubsub.Generic, "del", key)
	}
}

// KeyMiss states the event "keymiss" (class m) about key of the client's database: a read of
// the command found no such key (or an expired one), as Redis's lookupKey states it for every
// lookupKeyRead that misses. Redis states it once per lookup, so a command that looks a key up
// twice (XREAD) or several keys (MGET, SUNION, BITOP) states one per lookup that missed; the
// lookups of write commands (lookupKeyWrite: INCR, LPOP, SREM, ...) and OBJECT's state none. A
// handler calls it where Redis's command looks the key up for reading, and before the events of
// its writes (GETSET states keymiss, then new and set). While class m is off (the default, and
// not part of A) it costs one atomic load. A parked blocking command run again (Retrying) states
// none: Redis serves a blocked client through lookupKeyWrite.
func (c *Ctx) KeyMiss(key []byte) {
	if c.PS.Notifying(pubsub.KeyMiss) && !c.Retrying {
		c.PS.NotifyKeyspaceHeld(c.Held, pubsub.KeyMiss, "keymiss", c.DB(), key)
	}
}

// keyMissAt returns a function stating keymiss about c.Args[first+i], for a read of several
// keys that reports its misses by position (keyspace.Exists); nil while class m is off.
func (c *Ctx) keyMissAt(first int) func(i int) {
	if !c.PS.Notifying(pubsub.KeyMiss) {
		return nil
	}
	return func(i int) { c.KeyMiss(c.Args[first+i]) }
}

// NotifyNew states the event "new" about key of database db: for the commands that put a key
// there in Redis by deleting and adding it (RENAME's and COPY ... REPLACE's destination), or
// that state it before an event about another key (MOVE). The keyspace's own record of the
// creation, if any, is taken.
func (c *Ctx) NotifyNew(db int, key []byte) {
	c.Sess.TakeKey(db, key, true)
	if c.PS.Notifying(pubsub.NewKey) {
		c.PS.NotifyKeyspaceHeld(c.Held, pubsub.NewKey, "new", db, key)
	}
}

// TrackingKeys reports whether the command's keyspace session should list the keys it creates
// and removes (keyspace.Session.TrackKeys): while events "new" or "del" are published.
func (c *Ctx) TrackingKeys() bool { return c.PS.Notifying(pubsub.NewKey | pubsub.Generic) }
