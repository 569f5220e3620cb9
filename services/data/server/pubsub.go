package server

import (
	"github.com/lavikdb/lavik/services/data/commands"
	"github.com/lavikdb/lavik/services/data/config"
	"github.com/lavikdb/lavik/services/data/pubsub"
)

// Pub/sub on the event loops (see package pubsub). A subscriber is a connection like any other,
// parked in its loop's epoll set while it has nothing to read. A publisher, on any loop,
// appends the message to the subscriber's mailbox and, when the mailbox was empty, posts
// msgDeliver to the subscriber's loop: the inbox and wake-up a parked blocking command's
// wake-up uses (block.go). The loop then serves the connection (service), which first moves the
// mailbox into its output; the round's end writes it like a reply. While the connection is
// away from the loop (a detached command, a durability wait, its GETs in flight) the mailbox
// waits: the loop serves it again when it comes back, so a message never lands in the middle
// of a reply.
//
// A subscriber's unwritten output is held to the pubsub class of client-output-buffer-limit
// (outputClass), by the checks every connection's output gets (flushLoop, sweepIdle); its
// mailbox is bounded by the same hard limit (pubsub.Registry.SetMaxMail), so a subscriber whose
// loop is slow to take it is closed rather than left to grow.

func matchGlob(pattern, s []byte) bool { return commands.GlobMatch(pattern, s, false) }

// newSubscriber makes c's pub/sub state.
func (c *conn) newSubscriber() *pubsub.Subscriber {
	return pubsub.NewSubscriber(&c.cl.Proto,
		func() { c.lp.post(loopMsg{kind: msgDeliver, c: c}) },
		func() {
			c.s.stats.obufKills.Add(1)
			c.s.log.Warn("client closed for overcoming of output buffer limits", "client", c.cl.Addr,
				"id", c.cl.ID, "class", "pubsub", "limit", c.s.cfg.Get("client-output-buffer-limit"))
			c.kill()
		})
}

// takeMail moves the messages delivered to c into its output. The loop owns c.
func (lp *loop) takeMail(c *conn) {
	if sub := c.cl.Sub; sub != nil && sub.HasMail() {
		sub.Take(c.w.Raw)
		lp.markDirty(c)
	}
}

// outputClass is c's client-output-buffer-limit class: pubsub while it has a subscription, as
// Redis's getClientType.
func (c *conn) outputClass() int {
	if c.class == config.ClassNormal && c.cl.Sub != nil && c.cl.Sub.Subscribed() {
		return config.ClassPubSub
	}
	return c.class
}

// updatePubSub applies the settings pub/sub depends on.
func (s *Server) updatePubSub() {
	s.ps.SetMaxMail(s.outLimits.Load()[config.ClassPubSub].Hard)
	f, _ := pubsub.ParseNotify(s.cfg.Get("notify-keyspace-events"))
	s.ps.SetNotify(f)
}

// PubSub returns the server's pub/sub registry.
func (s *Server) PubSub() *pubsub.Registry { return s.ps }
