package commands

// RESET (Redis 6.2): the connection back to the state of a new one, as Redis's
// clearClientConnectionState: no transaction or watched keys, no subscriptions, replies on,
// database 0, RESP2, no name, eviction allowed, and authenticated only if no password is
// required.

func init() {
	register(&Command{Name: "reset", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagAllowBusy,
		Group: "connection", Since: "6.2.0", Complexity: "O(1)",
		Summary: "Resets the connection.", Handler: resetCmd})
}

func resetCmd(c *Ctx) {
	cl := c.Client
	c.Discard()
	if cl.Sub != nil && c.PS != nil {
		takeMail(c) // what was published before the RESET comes before its reply
		c.PS.UnsubscribeAll(cl.Sub)
	}
	cl.ReplyMode, cl.SkipNext = ReplyOn, false
	cl.DB.Store(0)
	cl.Proto.Store(2)
	c.W.SetProto(2)
	cl.SetName("")
	cl.NoEvict.Store(false)
	cl.Authed = c.Srv.Config().Get("requirepass") == ""
	c.W.Simple("RESET")
}
