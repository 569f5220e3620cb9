package commands

import (
	"strconv"

	"github.com/lavikdb/lavik/services/data/tracking"
)

// Client-side caching: CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO (the design is
// package tracking's; the server tells the tracker what commands read and write).

// TrackingServer is what a server offers client-side caching: its tracker.
type TrackingServer interface {
	Tracker() *tracking.Tracker
}

var errNoTracking = Error("ERR lavik: this server does not support client-side caching")

func tracker(c *Ctx) *tracking.Tracker {
	ts, ok := c.Srv.(TrackingServer)
	if !ok || ts.Tracker() == nil {
		c.Err(errNoTracking)
		return nil
	}
	return ts.Tracker()
}

// clientTrackingCmd is CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN]
// [OPTOUT] [NOLOOP], parsed and checked in Redis's order.
func clientTrackingCmd(c *Ctx) {
	t := tracker(c)
	if t == nil {
		return
	}
	var o tracking.Options
	args := c.Args
	for j := 3; j < len(args); j++ {
		more := j < len(args)-1
		switch {
		case is(args[j], "REDIRECT") && more:
			j++
			if o.Redirect != 0 {
				c.Err(Error("ERR A client can only redirect to a single other client"))
				return
			}
			id, err := strconv.ParseInt(string(args[j]), 10, 64)
			if err != nil {
				c.Err(ErrNotInt)
				return
			}
			if !t.Exists(id) {
				c.Err(Error("ERR The client ID you want redirect to does not exist"))
				return
			}
			o.Redirect = id
		case is(args[j], "BCAST"):
			o.BCast = true
		case is(args[j], "OPTIN"):
			o.OptIn = true
		case is(args[j], "OPTOUT"):
			o.OptOut = true
		case is(args[j], "NOLOOP"):
			o.NoLoop = true
		case is(args[j], "PREFIX") && more:
			j++
			o.Prefixes = append(o.Prefixes, string(args[j]))
		default:
			c.Err(ErrSyntax)
			return
		}
	}
	st := &c.Client.Tracking
	switch {
	case is(args[2], "ON"):
		if err := t.Enable(st, c.Client.ID, c.Client.Sub, o); err != nil {
			c.Err(Error(err.Error()))
			return
		}
	case is(args[2], "OFF"):
		t.Disable(st)
	default:
		c.Err(ErrSyntax)
		return
	}
	c.OK()
}

// clientCachingCmd is CLIENT CACHING YES|NO: whether the next command's reads are remembered,
// for a client tracking in OPTIN or OPTOUT mode.
func clientCachingCmd(c *Ctx) {
	st := &c.Client.Tracking
	f := st.Flags()
	if f&tracking.On == 0 {
		c.Err(Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"))
		return
	}
	switch {
	case is(c.Args[2], "YES"):
		if f&tracking.OptIn == 0 {
			c.Err(Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."))
			return
		}
	case is(c.Args[2], "NO"):
		if f&tracking.OptOut == 0 {
			c.Err(Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."))
			return
		}
	default:
		c.Err(ErrSyntax)
		return
	}
	st.SetCaching()
	c.OK()
}

// clientGetredirCmd is CLIENT GETREDIR: -1 with tracking off, 0 without a redirect, else its
// id.
func clientGetredirCmd(c *Ctx) { c.W.Int(c.Client.Tracking.Redirect()) }

// clientTrackingInfoCmd is CLIENT TRACKINGINFO, in Redis 7.0's shape: flags (a set), redirect,
// prefixes.
func clientTrackingInfoCmd(c *Ctx) {
	st := &c.Client.Tracking
	f := st.Flags()
	flags := []string{"off"}
	if f&tracking.On != 0 {
		flags[0] = "on"
	}
	if f&tracking.BCast != 0 {
		flags = append(flags, "bcast")
	}
	if f&tracking.OptIn != 0 {
		flags = append(flags, "optin")
		if f&tracking.Caching != 0 {
			flags = append(flags, "caching-yes")
		}
	}
	if f&tracking.OptOut != 0 {
		flags = append(flags, "optout")
		if f&tracking.Caching != 0 {
			flags = append(flags, "caching-no")
		}
	}
	if f&tracking.NoLoop != 0 {
		flags = append(flags, "noloop")
	}
	if f&tracking.BrokenRedir != 0 {
		flags = append(flags, "broken_redirect")
	}
	var prefixes []string
	if t, ok := c.Srv.(TrackingServer); ok && t.Tracker() != nil {
		prefixes = t.Tracker().Prefixes(st)
	}
	c.W.Map(3)
	c.W.BulkString("flags")
	c.W.Set(len(flags))
	for _, s := range flags {
		c.W.BulkString(s)
	}
	c.W.BulkString("redirect")
	c.W.Int(st.Redirect())
	c.W.BulkString("prefixes")
	c.W.Array(len(prefixes))
	for _, p := range prefixes {
		c.W.BulkString(p)
	}
}

// stopTracking turns the client's tracking off (RESET).
func stopTracking(c *Ctx) {
	if !c.Client.Tracking.Tracking() {
		return
	}
	if ts, ok := c.Srv.(TrackingServer); ok && ts.Tracker() != nil {
		ts.Tracker().Disable(&c.Client.Tracking)
	}
}
