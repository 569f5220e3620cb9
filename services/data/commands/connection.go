package commands

import (
	"crypto/subtle"
	"math"
	"strconv"
	"strings"
	"time"
)

func init() {
	register(
		&Command{Name: "ping", Arity: -1, Flags: FlagFast, Group: "connection", Since: "1.0.0", Complexity: "O(1)",
			Summary: "Returns the server's liveliness response.", Handler: pingCmd},
		&Command{Name: "echo", Arity: 2, Flags: FlagFast | FlagStale | FlagLoading, Group: "connection", Since: "1.0.0", Complexity: "O(1)",
			Summary: "Returns the given string.", Handler: echoCmd},
		&Command{Name: "quit", Arity: -1, Flags: FlagNoAuth | FlagFast | FlagStale | FlagLoading | FlagNoScript | FlagAllowBusy, Group: "connection", Since: "1.0.0", Complexity: "O(1)",
			Summary: "Closes the connection.", Handler: quitCmd},
		&Command{Name: "hello", Arity: -1, Flags: FlagNoAuth | FlagFast | FlagStale | FlagLoading | FlagNoScript | FlagAllowBusy, Group: "connection", Since: "6.0.0", Complexity: "O(1)",
			Summary: "Handshakes with the Redis server.", Handler: helloCmd},
		&Command{Name: "auth", Arity: -2, Flags: FlagNoAuth | FlagFast | FlagStale | FlagLoading | FlagNoScript | FlagAllowBusy, Group: "connection", Since: "1.0.0", Complexity: "O(N) where N is the number of passwords defined for the user",
			Summary: "Authenticates the connection.", Handler: authCmd},
		&Command{Name: "reset", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagAllowBusy, Group: "connection", Since: "6.2.0", Complexity: "O(1)",
			Summary: "Resets the connection.", Handler: resetCmd},
		&Command{Name: "select", Arity: 2, Flags: FlagFast | FlagStale | FlagLoading, Group: "connection", Since: "1.0.0", Complexity: "O(1)",
			Summary: "Changes the selected database.", Handler: selectCmd},
		&Command{Name: "client", Arity: -2, Group: "connection", Since: "2.4.0", Complexity: "Depends on subcommand.",
			Summary: "A container for client connection commands.",
			Subcommands: map[string]*Command{
				"id": {Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "5.0.0", Complexity: "O(1)",
					Summary: "Returns the unique client ID of the connection.", Handler: clientIDCmd},
				"setname": {Arity: 3, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "2.6.9", Complexity: "O(1)",
					Summary: "Sets the connection name.", Handler: clientSetnameCmd},
				"getname": {Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "2.6.9", Complexity: "O(1)",
					Summary: "Returns the name of the connection.", Handler: clientGetnameCmd},
				"list": {Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.4.0", Complexity: "O(N) where N is the number of client connections",
					Summary: "Lists open connections.", Handler: clientListCmd},
				"info": {Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "6.2.0", Complexity: "O(1)",
					Summary: "Returns information about the connection.", Handler: clientInfoCmd},
				"kill": {Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.4.0", Complexity: "O(N) where N is the number of client connections",
					Summary: "Terminates open connections.", Handler: clientKillCmd},
				"unblock": {Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "5.0.0", Complexity: "O(log N) where N is the number of client connections",
					Summary: "Unblocks a client blocked by a blocking command from a different connection.", Handler: clientUnblockCmd},
				"reply": {Arity: 3, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "3.2.0", Complexity: "O(1)",
					Summary: "Instructs the server whether to reply to commands.", Handler: clientReplyCmd},
				"pause": {Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "3.0.0", Complexity: "O(1)",
					Summary: "Suspends commands processing.", Handler: clientPauseCmd},
				"unpause": {Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "6.2.0", Complexity: "O(N) Where N is the number of paused clients",
					Summary: "Resumes processing commands from paused clients.", Handler: clientUnpauseCmd},
				"no-touch": {Arity: 3, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "7.2.0", Complexity: "O(1)",
					Summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", Handler: clientNoTouchCmd},
				"no-evict": {Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "7.0.0", Complexity: "O(1)",
					Summary: "Sets the client eviction mode of the connection.", Handler: clientNoEvictCmd},
				"tracking": {Arity: -3, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "6.0.0", Complexity: "O(1). Some options may introduce additional complexity.",
					Summary: "Controls server-assisted client-side caching for the connection.", Handler: clientTrackingCmd},
				"caching": {Arity: 3, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "6.0.0", Complexity: "O(1)",
					Summary: "Instructs the server whether to track the keys in the next request.", Handler: clientCachingCmd},
				"getredir": {Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "6.0.0", Complexity: "O(1)",
					Summary: "Returns the client ID to which the connection's tracking notifications are redirected.", Handler: clientGetredirCmd},
				"trackinginfo": {Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "6.2.0", Complexity: "O(1)",
					Summary: "Returns information about server-assisted client-side caching for the connection.", Handler: clientTrackingInfoCmd},
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: helpCmd},
			}},
	)
}

func pingCmd(c *Ctx) {
	if len(c.Args) <= 2 && c.Client.Sub != nil && c.Client.Proto.Load() == 2 && c.Client.Sub.Subscribed() {
		// A subscribed RESP2 client reads every reply as a message: Redis answers in that shape.
		c.W.Array(2)
		c.W.BulkString("pong")
		if len(c.Args) == 2 {
			c.W.Bulk(c.Args[1])
		} else {
			c.W.BulkString("")
		}
		return
	}
	switch len(c.Args) {
	case 1:
		c.W.Simple("PONG")
	case 2:
		c.W.Bulk(c.Args[1])
	default:
		c.Err(arityErr("ping"))
	}
}

func echoCmd(c *Ctx) { c.W.Bulk(c.Args[1]) }

// resetCmd is RESET, as Redis 7.0 has it: the connection is back to how it started. Its
// transaction is discarded and its keys unwatched, replies are on again (this one included: the
// server sends RESET's reply even under CLIENT REPLY OFF), it is no longer a monitor, its name,
// NO-EVICT and NO-TOUCH are cleared, it speaks RESP2 in database 0, and it is authenticated as
// the default user only if that user needs no password.
func resetCmd(c *Ctx) {
	if c.Client.Multi != nil {
		c.Discard()
	} else {
		c.KS.Unwatch(c.Sess, &c.Client.Watches)
	}
	if cl := c.Client; cl.Sub != nil && c.PS != nil {
		takeMail(c) // what was published before the RESET comes before its reply
		c.PS.UnsubscribeAll(cl.Sub)
	}
	stopTracking(c)
	c.Client.ReplyMode, c.Client.SkipNext = ReplyOn, false
	c.Client.SetName("")
	c.Client.NoEvict.Store(false)
	c.Client.NoTouch.Store(false)
	c.Client.DB.Store(0)
	c.Client.Proto.Store(2)
	c.W.SetProto(2)
	c.Client.Authed = c.Srv.Config().Get("requirepass") == ""
	if in, ok := c.Srv.(Introspector); ok {
		in.StopMonitor(c.Client)
	}
	c.W.Simple("RESET")
}

func quitCmd(c *Ctx) {
	c.OK()
	c.Client.CloseAfterReply = true
}

// checkPassword compares in constant time.
func checkPassword(c *Ctx, user, pass []byte) bool {
	want := c.Srv.Config().Get("requirepass")
	if user != nil && string(user) != "default" {
		return false
	}
	if want == "" {
		return true // the default user has nopass
	}
	return subtle.ConstantTimeCompare(pass, []byte(want)) == 1
}

func authCmd(c *Ctx) {
	var user, pass []byte
	switch len(c.Args) {
	case 2:
		pass = c.Args[1]
	case 3:
		user, pass = c.Args[1], c.Args[2]
	default:
		c.Err(ErrSyntax)
		return
	}
	if user == nil && c.Srv.Config().Get("requirepass") == "" {
		c.Err(Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"))
		return
	}
	if !checkPassword(c, user, pass) {
		c.Err(ErrWrongPass)
		return
	}
	c.Client.Authed = true
	c.OK()
}

func helloCmd(c *Ctx) {
	proto := int(c.Client.Proto.Load())
	i := 1
	if len(c.Args) > 1 {
		v, err := intArg(c.Args[1])
		if err != nil {
			c.Err(Error("ERR Protocol version is not an integer or out of range"))
			return
		}
		if v < 2 || v > 3 {
			c.Err(Error("NOPROTO unsupported protocol version"))
			return
		}
		proto = int(v)
		i = 2
	}
	var user, pass, name []byte
	authGiven, nameGiven := false, false
	for ; i < len(c.Args); i++ {
		more := len(c.Args) - i - 1
		switch {
		case is(c.Args[i], "AUTH") && more >= 2:
			user, pass, authGiven = c.Args[i+1], c.Args[i+2], true
			i += 2
		case is(c.Args[i], "SETNAME") && more >= 1:
			name, nameGiven = c.Args[i+1], true
			i++
		default:
			c.Err(Error("ERR Syntax error in HELLO option '" + string(c.Args[i]) + "'"))
			return
		}
	}
	if authGiven {
		if !checkPassword(c, user, pass) {
			c.Err(ErrWrongPass)
			return
		}
		c.Client.Authed = true
	}
	if !c.Client.Authed && c.Srv.Config().Get("requirepass") != "" {
		c.Err(Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"))
		return
	}
	if nameGiven {
		if err := validClientName(name); err != nil {
			c.Err(err)
			return
		}
		c.Client.SetName(string(name))
	}
	c.Client.Proto.Store(int32(proto))
	c.W.SetProto(proto)
	c.W.Map(7)
	c.W.BulkString("server")
	c.W.BulkString("redis")
	c.W.BulkString("version")
	c.W.BulkString(RedisVersion)
	c.W.BulkString("proto")
	c.W.Int(int64(proto))
	c.W.BulkString("id")
	c.W.Int(c.Client.ID)
	c.W.BulkString("mode")
	c.W.BulkString("standalone")
	c.W.BulkString("role")
	c.W.BulkString("master")
	c.W.BulkString("modules")
	c.W.Array(0)
}

func selectCmd(c *Ctx) {
	n, err := intArg(c.Args[1])
	if err != nil {
		c.Err(ErrNotInt)
		return
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		c.Err(Error("ERR value is out of range, value must between -2147483648 and 2147483647"))
		return
	}
	if n < 0 || n >= int64(c.KS.Databases()) {
		c.Err(ErrDBIndex)
		return
	}
	c.Client.DB.Store(int32(n))
	c.OK()
}

func clientIDCmd(c *Ctx) { c.W.Int(c.Client.ID) }

func validClientName(name []byte) error {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			return Error("ERR Client names cannot contain spaces, newlines or special characters.")
		}
	}
	return nil
}

func clientSetnameCmd(c *Ctx) {
	if err := validClientName(c.Args[2]); err != nil {
		c.Err(err)
		return
	}
	c.Client.SetName(string(c.Args[2]))
	c.OK()
}

func clientGetnameCmd(c *Ctx) {
	if n := c.Client.Name(); n != "" {
		c.W.BulkString(n)
		return
	}
	c.W.Null()
}

func clientListCmd(c *Ctx) {
	var ids map[int64]bool
	for i := 2; i < len(c.Args); i++ {
		switch {
		case is(c.Args[i], "TYPE") && i+1 < len(c.Args):
			t := strings.ToLower(string(c.Args[i+1]))
			switch t {
			case "normal":
			case "master", "replica", "slave", "pubsub":
				ids = map[int64]bool{} // no such clients yet
			default:
				c.Err(Error("ERR Unknown client type '" + string(c.Args[i+1]) + "'"))
				return
			}
			i++
		case is(c.Args[i], "ID") && i+1 < len(c.Args):
			ids = map[int64]bool{}
			for i++; i < len(c.Args); i++ {
				id, err := strconv.ParseInt(string(c.Args[i]), 10, 64)
				if err != nil || id <= 0 {
					c.Err(Error("ERR Invalid client ID"))
					return
				}
				ids[id] = true
			}
		default:
			c.Err(ErrSyntax)
			return
		}
	}
	var b strings.Builder
	now := time.Now()
	for _, cl := range c.Srv.Clients() {
		if ids != nil && !ids[cl.ID] {
			continue
		}
		b.WriteString(cl.Info(now))
		b.WriteByte('\n')
	}
	c.W.Verbatim("txt", b.String())
}

func clientInfoCmd(c *Ctx) { c.W.Verbatim("txt", c.Client.Info(time.Now())+"\n") }

// clientUnblockCmd is CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if the client was blocked (its
// command then answers as at a timeout, or with an UNBLOCKED error), else 0.
func clientUnblockCmd(c *Ctx) {
	id, ok := ParseInt(c.Args[2])
	if !ok {
		c.Err(ErrNotInt)
		return
	}
	withError := false
	switch {
	case len(c.Args) == 4 && is(c.Args[3], "ERROR"):
		withError = true
	case len(c.Args) == 4 && is(c.Args[3], "TIMEOUT"):
	case len(c.Args) == 4:
		c.Err(Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"))
		return
	case len(c.Args) > 4:
		c.Err(Error("ERR unknown subcommand or wrong number of arguments for '" + string(c.Args[1]) + "'. Try CLIENT HELP."))
		return
	}
	for _, cl := range c.Srv.Clients() {
		if cl.ID == id && cl.Unblock != nil {
			c.W.Int(boolInt(cl.Unblock(withError)))
			return
		}
	}
	c.W.Int(0)
}

// clientKillCmd implements both forms: CLIENT KILL addr:port (old: +OK or "No such client")
// and CLIENT KILL <filter> <value> ... (new: the number killed).
func clientKillCmd(c *Ctx) {
	if len(c.Args) == 3 {
		addr := string(c.Args[2])
		for _, cl := range c.Srv.Clients() {
			if cl.Addr == addr {
				cl.Close()
				c.OK()
				return
			}
		}
		c.Err(Error("ERR No such client"))
		return
	}
	type filter struct {
		id                int64
		addr, laddr       string
		user              string
		maxAge            int64
		skipMe            bool
		hasID, hasMaxAg   bool
		typeNone          bool
		replicas, primary bool // TYPE replica|slave, TYPE master
	}
	f := filter{skipMe: true}
	args := c.Args[2:]
	if len(args)%2 != 0 {
		c.Err(ErrSyntax)
		return
	}
	for i := 0; i < len(args); i += 2 {
		k, v := args[i], string(args[i+1])
		switch {
		case is(k, "ID"):
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id <= 0 {
				c.Err(Error("ERR client-id should be greater than 0"))
				return
			}
			f.id, f.hasID = id, true
		case is(k, "ADDR"):
			f.addr = v
		case is(k, "LADDR"):
			f.laddr = v
		case is(k, "USER"):
			f.user = v
		case is(k, "TYPE"):
			switch strings.ToLower(v) {
			case "normal":
			case "replica", "slave":
				f.typeNone, f.replicas = true, true
			case "master":
				f.typeNone, f.primary = true, true
			case "pubsub":
				f.typeNone = true
			default:
				c.Err(Error("ERR Unknown client type '" + v + "'"))
				return
			}
		case is(k, "SKIPME"):
			switch strings.ToLower(v) {
			case "yes":
				f.skipMe = true
			case "no":
				f.skipMe = false
			default:
				c.Err(ErrSyntax)
				return
			}
		case is(k, "MAXAGE"):
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				c.Err(ErrNotInt)
				return
			}
			f.maxAge, f.hasMaxAg = n, true
		default:
			c.Err(ErrSyntax)
			return
		}
	}
	killed := 0
	if f.replicas || f.primary {
		// Replication links are not clients of the connection table (package repl has them);
		// the other filters do not apply to them.
		killed = c.Repl.KillLinks(f.replicas)
	}
	now := time.Now()
	for _, cl := range c.Srv.Clients() {
		switch {
		case f.typeNone:
			continue
		case f.hasID && cl.ID != f.id:
			continue
		case f.addr != "" && cl.Addr != f.addr:
			continue
		case f.laddr != "" && cl.LAddr != f.laddr:
			continue
		case f.user != "" && f.user != "default":
			continue
		case f.hasMaxAg && int64(now.Sub(cl.Created).Seconds()) < f.maxAge:
			continue
		case f.skipMe && cl == c.Client:
			continue
		}
		if cl == c.Client {
			c.Client.CloseAfterReply = true
		} else {
			cl.Close()
		}
		killed++
	}
	c.W.Int(int64(killed))
}

func clientReplyCmd(c *Ctx) {
	switch {
	case is(c.Args[2], "ON"):
		c.Client.ReplyMode = ReplyOn
		c.OK()
	case is(c.Args[2], "OFF"):
		c.Client.ReplyMode = ReplyOff
	case is(c.Args[2], "SKIP"):
		// The dispatcher drops this command's own reply and the next one's.
		c.Client.ReplyMode = ReplySkip
	default:
		c.Err(ErrSyntax)
	}
}

func clientNoEvictCmd(c *Ctx) {
	switch {
	case is(c.Args[2], "ON"):
		c.Client.NoEvict.Store(true)
	case is(c.Args[2], "OFF"):
		c.Client.NoEvict.Store(false)
	default:
		c.Err(ErrSyntax)
		return
	}
	c.OK()
}

// helpCmd answers <CONTAINER> HELP from the table.
func helpCmd(c *Ctx) {
	parent := c.Cmd.Parent
	subs := parent.subsSorted()
	name := strings.ToUpper(parent.Name)
	c.W.Array(1 + 2*len(subs))
	c.W.Simple(name + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, s := range subs {
		sub := strings.ToUpper(strings.TrimPrefix(s.Name, parent.Name+"|"))
		c.W.Simple(sub)
		c.W.Simple("    " + s.Summary)
	}
}
