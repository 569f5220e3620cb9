package commands

import (
	"sort"
	"strings"
	"sync/atomic"

	"github.com/lavikdb/lavik/services/data/observe"
)

// Flag is a command property, as in Redis's command table.
type Flag uint32

// Command flags.
const (
	FlagWrite       Flag = 1 << iota // may modify the keyspace
	FlagReadonly                     // reads keys, never modifies them
	FlagFast                         // O(1) or O(log N)
	FlagAdmin                        // administrative
	FlagNoAuth                       // allowed before authentication
	FlagLoading                      // allowed while loading
	FlagStale                        // allowed on a stale replica
	FlagDenyOOM                      // may grow memory use
	FlagNoScript                     // not allowed in scripts
	FlagNoMulti                      // not allowed in MULTI
	FlagSkipSlowlog                  // not logged in the slow log
	FlagAllowBusy                    // allowed while a script is busy
	FlagMovableKeys                  // its keys are found by Keys, not by FirstKey..LastKey
	FlagBlocking                     // may block the client (BLPOP, ...): runs on the event loop
	// FlagPrefetch (not a Redis flag, never listed): the command reads one key, argument 1, whole
	// and nothing else, so an event loop may read that key in its batch of disk reads and run
	// the command on what was read (Ctx.Pre).
	FlagPrefetch
	FlagPubSub // a pub/sub command (Redis's CMD_PUBSUB)
)

var flagNames = []struct {
	f    Flag
	name string
}{
	{FlagWrite, "write"}, {FlagReadonly, "readonly"}, {FlagDenyOOM, "denyoom"}, {FlagAdmin, "admin"}, {FlagPubSub, "pubsub"},
	{FlagNoScript, "noscript"}, {FlagLoading, "loading"}, {FlagStale, "stale"}, {FlagSkipSlowlog, "skip_slowlog"},
	{FlagFast, "fast"}, {FlagNoAuth, "no_auth"}, {FlagNoMulti, "no_multi"}, {FlagAllowBusy, "allow_busy"},
	{FlagBlocking, "blocking"}, {FlagMovableKeys, "movablekeys"},
}

// Names returns the flag names in Redis's order.
func (f Flag) Names() []string {
	var out []string
	for _, n := range flagNames {
		if f&n.f != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// Command is one entry of the table.
type Command struct {
	Name string // lower case; "parent|sub" for subcommands
	// Arity is Redis's: N > 0 means exactly N arguments including the name, -N at least N.
	Arity int
	Flags Flag
	// FirstKey, LastKey and Step locate the keys in argv (LastKey -1 = last argument, -2 =
	// second to last); FirstKey 0 means no keys.
	FirstKey, LastKey, Step int
	// Keys, for a command with FlagMovableKeys, returns the positions of the keys in args (a
	// count argument says how many, as SINTERCARD numkeys): COMMAND GETKEYS and its key spec
	// (a keynum spec with the count at position 1) follow it.
	Keys func(args [][]byte) ([]int, error)
	// KeyNumAt, for a command with Keys, is where its key count is (Redis's keynum key spec);
	// StoreKey says a destination key comes first, at 1 (ZUNIONSTORE).
	KeyNumAt int
	StoreKey bool
	// Keyword, for a command with Keys whose keys follow a keyword (XREAD and XREADGROUP:
	// STREAMS, searched from argument KeywordFrom), makes COMMAND report Redis's keyword key
	// spec instead of the keynum one: the keys run from after the keyword to the end, half of
	// the arguments left.
	Keyword     string
	KeywordFrom int
	Group       string // Redis doc group: string, generic, connection, server
	Summary     string
	Since       string
	Complexity  string
	Handler     func(c *Ctx)
	// ExtraACL lists ACL categories Redis gives the command beyond those derived from its
	// flags and group (see aclCategories).
	ExtraACL []string
	// Subcommands, for container commands (CLIENT, CONFIG, COMMAND, OBJECT). The container
	// has no handler of its own; HELP is answered from this list.
	Subcommands map[string]*Command
	// Parent is set on subcommands.
	Parent *Command

	Stats CommandStats
}

// CommandStats are the counters INFO commandstats reports.
type CommandStats struct {
	Calls, Usec, Rejected, Failed atomic.Uint64
	// Hist is the command's latency histogram (INFO latencystats), made at its first call.
	Hist atomic.Pointer[observe.Hist]
}

// FullName is the name COMMAND and INFO use ("client|list" for a subcommand).
func (c *Command) FullName() string { return c.Name }

// CheckArity reports whether argc arguments (including the name) fit the arity.
func (c *Command) CheckArity(argc int) bool {
	if c.Arity > 0 {
		return argc == c.Arity
	}
	return argc >= -c.Arity
}

// KeyIndexes returns the positions of the keys in argv, following the table's key spec. The
// caller has checked arity.
func (c *Command) KeyIndexes(argc int) []int {
	if c.FirstKey == 0 {
		return nil
	}
	last := c.LastKey
	if last < 0 {
		last = argc + last
	}
	var out []int
	for i := c.FirstKey; i <= last && i < argc; i += max(c.Step, 1) {
		out = append(out, i)
	}
	return out
}

var table = map[string]*Command{}

// register adds commands to the table; called from each family file's init.
// movableKeys makes c a command whose keys follow a key count at position at (LMPOP numkeys
// ...): keys finds them in a command line.
func movableKeys(c *Command, at int, keys func([][]byte) ([]int, error)) *Command {
	c.FirstKey, c.LastKey, c.Step, c.Keys, c.KeyNumAt = 0, 0, 0, keys, at
	c.Flags |= FlagMovableKeys
	return c
}

// prefetchable are the commands that read one key, argument 1, whole and nothing else
// (FlagPrefetch). Random picks are not among them: their counts may ask for long replies.
var prefetchable = map[string]bool{
	"hget": true, "hmget": true, "hlen": true, "hstrlen": true, "hexists": true, "hkeys": true,
	"hvals": true, "hgetall": true, "hscan": true,
	"smembers": true, "sismember": true, "smismember": true, "scard": true, "sscan": true,
	"llen": true, "lrange": true, "lindex": true, "lpos": true,
	"zscore": true, "zmscore": true, "zcard": true, "zcount": true, "zlexcount": true, "zrank": true,
	"zrevrank": true, "zrange": true, "zrevrange": true, "zrangebyscore": true,
	"zrevrangebyscore": true, "zrangebylex": true, "zrevrangebylex": true, "zscan": true,
}

func register(cmds ...*Command) {
	for _, c := range cmds {
		if _, dup := table[c.Name]; dup {
			panic("commands: duplicate command " + c.Name)
		}
		if prefetchable[c.Name] {
			c.Flags |= FlagPrefetch
		}
		for name, sub := range c.Subcommands {
			sub.Name = c.Name + "|" + name
			sub.Parent = c
			if sub.Group == "" {
				sub.Group = c.Group
			}
		}
		table[c.Name] = c
	}
}

// Lookup finds a command by name, case-insensitively, without allocating for names of up to
// 32 bytes.
func Lookup(name []byte) *Command {
	var buf [32]byte
	if len(name) > len(buf) {
		return table[strings.ToLower(string(name))]
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return table[string(buf[:len(name)])]
}

// LookupSub finds a subcommand of parent.
func (c *Command) LookupSub(name []byte) *Command {
	if c.Subcommands == nil {
		return nil
	}
	return c.Subcommands[strings.ToLower(string(name))]
}

// All returns every top-level command sorted by name.
func All() []*Command {
	out := make([]*Command, 0, len(table))
	for _, c := range table {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AllWithSubcommands returns every command and subcommand sorted by full name.
func AllWithSubcommands() []*Command {
	var out []*Command
	for _, c := range All() {
		out = append(out, c)
		for _, s := range c.subsSorted() {
			out = append(out, s)
		}
	}
	return out
}

func (c *Command) subsSorted() []*Command {
	out := make([]*Command, 0, len(c.Subcommands))
	for _, s := range c.Subcommands {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
