package commands

import (
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lavikdb/lavik/services/data/config"
	"github.com/lavikdb/lavik/services/data/keyspace"
)

func init() {
	register(
		&Command{Name: "info", Arity: -1, Flags: FlagLoading | FlagStale, Group: "server", ExtraACL: []string{"@dangerous"}, Since: "1.0.0", Complexity: "O(1)",
			Summary: "Returns information and statistics about the server.", Handler: infoCmd},
		&Command{Name: "config", Arity: -2, Group: "server", Since: "2.0.0", Complexity: "Depends on subcommand.",
			Summary: "A container for server configuration commands.",
			Subcommands: map[string]*Command{
				"get": {Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.0.0", Complexity: "O(N) when N is the number of configuration parameters provided",
					Summary: "Returns the effective values of configuration parameters.", Handler: configGetCmd},
				"set": {Arity: -4, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.0.0", Complexity: "O(N) when N is the number of configuration parameters provided",
					Summary: "Sets configuration parameters in-flight.", Handler: configSetCmd},
				"rewrite": {Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.8.0", Complexity: "O(1)",
					Summary: "Persists the effective configuration to file.", Handler: configRewriteCmd},
				"resetstat": {Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.0.0", Complexity: "O(1)",
					Summary: "Resets the server's statistics.", Handler: configResetstatCmd},
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: helpCmd},
			}},
		&Command{Name: "dbsize", Arity: 1, Flags: FlagReadonly | FlagFast, Group: "server", ExtraACL: []string{"@keyspace"}, Since: "1.0.0", Complexity: "O(1)",
			Summary: "Returns the number of keys in the database.", Handler: dbsizeCmd},
		&Command{Name: "flushdb", Arity: -1, Flags: FlagWrite, Group: "server", ExtraACL: []string{"@keyspace", "@dangerous"}, Since: "1.0.0", Complexity: "O(N) where N is the number of keys in the selected database",
			Summary: "Remove all keys from the current database.", Handler: flushdbCmd},
		&Command{Name: "flushall", Arity: -1, Flags: FlagWrite, Group: "server", ExtraACL: []string{"@keyspace", "@dangerous"}, Since: "1.0.0", Complexity: "O(N) where N is the total number of keys in all databases",
			Summary: "Removes all keys from all databases.", Handler: flushallCmd},
		&Command{Name: "swapdb", Arity: 3, Flags: FlagWrite | FlagFast, Group: "server", ExtraACL: []string{"@keyspace", "@dangerous"}, Since: "4.0.0",
			Complexity: "O(N) where N is the count of clients watching or blocking on keys from both databases.",
			Summary:    "Swaps two Redis databases.", Handler: swapdbCmd},
		&Command{Name: "time", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, Group: "server", Since: "2.6.0", Complexity: "O(1)",
			Summary: "Returns the server time.", Handler: timeCmd},
		&Command{Name: "shutdown", Arity: -1, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale | FlagNoMulti | FlagAllowBusy, Group: "server", Since: "1.0.0",
			Complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
			Summary:    "Synchronously saves the database(s) to disk and shuts down the Redis server.", Handler: shutdownCmd},
		&Command{Name: "command", Arity: -1, Flags: FlagLoading | FlagStale, Group: "server", Since: "2.8.13", Complexity: "O(N) where N is the total number of Redis commands",
			Summary: "Returns detailed information about all commands.", Handler: commandCmd,
			Subcommands: map[string]*Command{
				"count": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "2.8.13", Complexity: "O(1)",
					Summary: "Returns a count of commands.", Handler: commandCountCmd},
				"info": {Arity: -2, Flags: FlagLoading | FlagStale, Since: "2.8.13", Complexity: "O(N) where N is the number of commands to look up",
					Summary: "Returns information about one, multiple or all commands.", Handler: commandInfoCmd},
				"docs": {Arity: -2, Flags: FlagLoading | FlagStale, Since: "7.0.0", Complexity: "O(N) where N is the number of commands to look up",
					Summary: "Returns documentary information about one, multiple or all commands.", Handler: commandDocsCmd},
				"list": {Arity: -2, Flags: FlagLoading | FlagStale, Since: "7.0.0", Complexity: "O(N) where N is the total number of Redis commands",
					Summary: "Returns a list of command names.", Handler: commandListCmd},
				"getkeysandflags": {Arity: -4, Flags: FlagLoading | FlagStale, Since: "7.0.0", Complexity: "O(N) where N is the number of arguments to the command",
					Summary: "Extracts the key names and access flags for an arbitrary command.", Handler: commandGetkeysandflagsCmd},
				"getkeys": {Arity: -4, Flags: FlagLoading | FlagStale, Since: "2.8.13", Complexity: "O(N) where N is the number of arguments to the command",
					Summary: "Extracts the key names from an arbitrary command.", Handler: commandGetkeysCmd},
				"help": {Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: helpCmd},
			}},
	)
}

func dbsizeCmd(c *Ctx) { c.W.Int(c.KS.DBSize(c.Sess, c.DB())) }

// flushMode checks FLUSHDB/FLUSHALL's optional ASYNC|SYNC. Both are done synchronously: the
// keys leave the index at once, and the disk space is given back by dropping whole segments
// (FLUSHALL) or by reclamation (FLUSHDB), neither of which blocks clients for long.
func flushMode(c *Ctx) error {
	switch {
	case len(c.Args) == 1:
		return nil
	case len(c.Args) == 2 && (is(c.Args[1], "ASYNC") || is(c.Args[1], "SYNC")):
		return nil
	}
	return ErrSyntax
}

func flushdbCmd(c *Ctx) {
	if err := flushMode(c); err != nil {
		c.Err(err)
		return
	}
	if err := c.KS.FlushDB(c.Sess, c.DB()); err != nil {
		c.Err(err)
		return
	}
	c.OK()
}

func flushallCmd(c *Ctx) {
	if err := flushMode(c); err != nil {
		c.Err(err)
		return
	}
	if err := c.KS.FlushAll(c.Sess); err != nil {
		c.Err(err)
		return
	}
	c.OK()
}

// swapdbCmd is SWAPDB index1 index2: clients of either database see the other's keys from
// then on (keyspace.SwapDB). Allowed in MULTI, as in Redis.
func swapdbCmd(c *Ctx) {
	a, ok := swapDBIndex(c.Args[1])
	if !ok {
		c.Err(Error("ERR invalid first DB index"))
		return
	}
	b, ok := swapDBIndex(c.Args[2])
	if !ok {
		c.Err(Error("ERR invalid second DB index"))
		return
	}
	if err := c.KS.SwapDB(c.Sess, a, b); err != nil {
		if errors.Is(err, keyspace.ErrDBRange) {
			err = ErrDBIndex
		}
		c.Err(err)
		return
	}
	// Every key of either database may now hold something (Redis's scanDatabaseForReadyKeys):
	// the server wakes the clients parked on keys of both, alone, in EXEC or in a script.
	c.Wrote = append(c.Wrote, KeyRef{DB: a, AllKeys: true}, KeyRef{DB: b, AllKeys: true})
	c.OK()
}

// swapDBIndex parses a SWAPDB database index as Redis does (an integer that fits in 32 bits;
// the range is checked after).
func swapDBIndex(b []byte) (int, bool) {
	n, err := intArg(b)
	if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

func timeCmd(c *Ctx) {
	now := time.Now()
	c.W.Array(2)
	c.W.BulkString(strconv.FormatInt(now.Unix(), 10))
	c.W.BulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

func shutdownCmd(c *Ctx) {
	var save, nosave, abort, other bool
	for _, a := range c.Args[1:] {
		switch {
		case is(a, "NOSAVE"):
			nosave = true
		case is(a, "SAVE"):
			save = true
		case is(a, "NOW"), is(a, "FORCE"):
			other = true
		case is(a, "ABORT"):
			abort = true
		default:
			c.Err(ErrSyntax)
			return
		}
	}
	// SAVE and NOSAVE are accepted for compatibility: every acknowledged write is already in
	// the value log, so there is nothing to save.
	if (save && nosave) || (abort && (save || nosave || other)) {
		c.Err(ErrSyntax)
		return
	}
	if abort {
		c.Err(Error("ERR No shutdown in progress."))
		return
	}
	// Like Redis, a successful SHUTDOWN sends no reply: the connection closes.
	c.Client.CloseAfterReply = true
	c.Srv.Shutdown()
}

func configGetCmd(c *Ctx) {
	cfg := c.Srv.Config()
	seen := map[string]bool{}
	var names []string
	for _, pat := range c.Args[2:] {
		for _, n := range config.Names() {
			if !seen[n] && GlobMatch([]byte(strings.ToLower(string(pat))), []byte(n), true) {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	c.W.Map(len(names))
	for _, n := range names {
		c.W.BulkString(n)
		c.W.BulkString(cfg.Show(n))
	}
}

func configSetCmd(c *Ctx) {
	args := c.Args[2:]
	if len(args)%2 != 0 {
		c.Err(ErrSyntax)
		return
	}
	var pairs [][2]string
	seen := map[string]bool{}
	for i := 0; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		if seen[name] {
			c.Err(Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - duplicate parameter"))
			return
		}
		seen[name] = true
		pairs = append(pairs, [2]string{name, string(args[i+1])})
	}
	err := c.Srv.Config().SetRuntime(pairs)
	var unknown *config.ErrUnknown
	var bad *config.ErrBadValue
	var imm *config.ErrImmutable
	switch {
	case err == nil:
		c.OK()
	case errors.As(err, &unknown):
		c.Err(Error("ERR Unknown option or number of arguments for CONFIG SET - '" + unknown.Name + "'"))
	case errors.As(err, &bad):
		c.Err(Error("ERR CONFIG SET failed (possibly related to argument '" + bad.Name + "') - " + bad.Reason))
	case errors.As(err, &imm):
		c.Err(Error("ERR CONFIG SET failed (possibly related to argument '" + imm.Name + "') - can't set immutable config"))
	default:
		c.Err(err)
	}
}

func configResetstatCmd(c *Ctx) {
	for _, cmd := range AllWithSubcommands() {
		cmd.Stats.Calls.Store(0)
		cmd.Stats.Usec.Store(0)
		cmd.Stats.Rejected.Store(0)
		cmd.Stats.Failed.Store(0)
	}
	c.Srv.ResetStats()
	c.KS.ResetStats()
	resetGCPauses()
	c.OK()
}

// ACL categories derived from the table, as Redis reports them: read/write from the flags, the
// data-type category from the group, plus the command's ExtraACL. Containers are only @slow.
func aclCategories(cmd *Command) []string {
	if cmd.Subcommands != nil && cmd.Handler == nil {
		return []string{"@slow"}
	}
	out := append([]string(nil), cmd.ExtraACL...)
	if cmd.Flags&FlagWrite != 0 {
		out = append(out, "@write")
	}
	if cmd.Flags&FlagReadonly != 0 {
		out = append(out, "@read")
	}
	switch cmd.Group {
	case "string":
		out = append(out, "@string")
	case "generic":
		if cmd.Name != "sort" && cmd.Name != "sort_ro" { // Redis gives SORT the types it reads instead
			out = append(out, "@keyspace")
		}
	case "connection":
		out = append(out, "@connection")
	case "bitmap", "hyperloglog", "geo", "stream":
		out = append(out, "@"+cmd.Group)
	}
	if cmd.Flags&FlagAdmin != 0 {
		out = append(out, "@admin", "@dangerous")
	}
	if cmd.Name == "command" || cmd.Parent != nil && cmd.Parent.Name == "command" {
		out = append(out, "@connection")
	}
	if cmd.Flags&FlagFast != 0 {
		out = append(out, "@fast")
	} else {
		out = append(out, "@slow")
	}
	if cmd.Flags&FlagBlocking != 0 {
		out = append(out, "@blocking")
	}
	return out
}

// writeCommandInfo writes COMMAND INFO's 10-element reply for cmd.
func writeCommandInfo(c *Ctx, cmd *Command) {
	c.W.Array(10)
	c.W.BulkString(cmd.Name)
	c.W.Int(int64(cmd.Arity))
	flags := cmd.Flags.Names()
	c.W.Set(len(flags))
	for _, f := range flags {
		c.W.Simple(f)
	}
	r, ok := redisCommand(cmd.Name)
	if ok && cmd.Flags&FlagMovableKeys != 0 {
		// The legacy first/last/step of a command with movable keys only informs (clients
		// ask GETKEYS): Redis's, such as ZUNIONSTORE's destination.
		for _, v := range r.Elems[3:6] {
			writeReply(c.W, v)
		}
	} else {
		c.W.Int(int64(cmd.FirstKey))
		c.W.Int(int64(cmd.LastKey))
		c.W.Int(int64(cmd.Step))
	}
	if ok {
		// ACL categories, tips and key specs as Redis gives them (commanddocs.go).
		for _, v := range r.Elems[6:9] {
			writeReply(c.W, v)
		}
		writeSubcommandInfo(c, cmd)
		return
	}
	cats := aclCategories(cmd)
	c.W.Set(len(cats))
	for _, a := range cats {
		c.W.Simple(a)
	}
	c.W.Array(0) // tips
	switch {
	case cmd.FirstKey > 0:
		// One key spec in Redis's range form.
		last := cmd.LastKey
		if last > 0 {
			last -= cmd.FirstKey
		}
		flag := "RO"
		if cmd.Flags&FlagWrite != 0 {
			flag = "RW"
		}
		c.W.Array(1)
		c.writeKV(specMap{"flags", []string{flag},
			"begin_search", specMap{"type", "index", "spec", specMap{"index", cmd.FirstKey}},
			"find_keys", specMap{"type", "range", "spec", specMap{"lastkey", last, "keystep", cmd.Step, "limit", 0}},
			"notes", ""})
	case cmd.Keyword != "":
		// Redis's keyword form (XREAD): the keys from after the keyword, half of what follows.
		c.W.Array(1)
		c.writeKV(specMap{"flags", []string{"RO", "access"},
			"begin_search", specMap{"type", "keyword", "spec", specMap{"keyword", cmd.Keyword, "startfrom", cmd.KeywordFrom}},
			"find_keys", specMap{"type", "range", "spec", specMap{"lastkey", -1, "keystep", 1, "limit", 2}}})
	case cmd.Keys != nil:
		// Redis's keynum form: the count at KeyNumAt, the keys right after it; a destination
		// first has a spec of its own.
		var specs []specMap
		flag := "RO"
		if cmd.StoreKey {
			specs = append(specs, specMap{"flags", []string{"OW"},
				"begin_search", specMap{"type", "index", "spec", specMap{"index", 1}},
				"find_keys", specMap{"type", "range", "spec", specMap{"lastkey", 0, "keystep", 1, "limit", 0}}})
		} else if cmd.Flags&FlagWrite != 0 {
			flag = "RW"
		}
		specs = append(specs, specMap{"flags", []string{flag},
			"begin_search", specMap{"type", "index", "spec", specMap{"index", cmd.KeyNumAt}},
			"find_keys", specMap{"type", "keynum", "spec", specMap{"keynumidx", 0, "firstkey", 1, "keystep", 1}}})
		c.W.Array(len(specs))
		for _, sp := range specs {
			c.writeKV(sp)
		}
	default:
		c.W.Array(0)
	}
	writeSubcommandInfo(c, cmd)
}

func writeSubcommandInfo(c *Ctx, cmd *Command) {
	subs := cmd.subsSorted()
	c.W.Array(len(subs))
	for _, s := range subs {
		writeCommandInfo(c, s)
	}
}

// specMap is a map reply written in order (writeKV): name, value pairs where a value is an int, a
// string (bulk), a []string (a set of simple strings) or a nested specMap.
type specMap []any

func (c *Ctx) writeKV(m specMap) {
	c.W.Map(len(m) / 2)
	for i := 0; i < len(m); i += 2 {
		c.W.BulkString(m[i].(string))
		switch v := m[i+1].(type) {
		case int:
			c.W.Int(int64(v))
		case string:
			c.W.BulkString(v)
		case []string:
			c.W.Set(len(v))
			for _, f := range v {
				c.W.Simple(f)
			}
		case specMap:
			c.writeKV(v)
		}
	}
}

func commandCmd(c *Ctx) {
	if len(c.Args) > 1 {
		sub := c.Cmd.LookupSub(c.Args[1])
		if sub == nil {
			c.Err(unknownSubcommand(c.Cmd, c.Args[1]))
			return
		}
		// Reached only via the dispatcher's container handling; kept for completeness.
		sub.Handler(c)
		return
	}
	all := All()
	c.W.Array(len(all))
	for _, cmd := range all {
		writeCommandInfo(c, cmd)
	}
}

func unknownSubcommand(parent *Command, sub []byte) Error {
	return Error("ERR unknown subcommand '" + string(sub) + "'. Try " + strings.ToUpper(parent.Name) + " HELP.")
}

// UnknownSubcommand is the error for an unknown subcommand of a container command.
func UnknownSubcommand(parent *Command, sub []byte) Error { return unknownSubcommand(parent, sub) }

func commandCountCmd(c *Ctx) { c.W.Int(int64(len(table))) }

// lookupFull finds "name" or "parent|sub".
func lookupFull(name string) *Command {
	name = strings.ToLower(name)
	if p, s, ok := strings.Cut(name, "|"); ok {
		if parent := table[p]; parent != nil && parent.Subcommands != nil {
			return parent.Subcommands[s]
		}
		return nil
	}
	return table[name]
}

func commandInfoCmd(c *Ctx) {
	if len(c.Args) == 2 {
		commandCmd(&Ctx{Args: c.Args[:1], W: c.W, Client: c.Client, Srv: c.Srv, KS: c.KS, Cmd: table["command"]})
		return
	}
	c.W.Array(len(c.Args) - 2)
	for _, a := range c.Args[2:] {
		if cmd := lookupFull(string(a)); cmd != nil {
			writeCommandInfo(c, cmd)
		} else {
			c.W.NullArray()
		}
	}
}

func writeCommandDocs(c *Ctx, cmd *Command) {
	subs := cmd.subsSorted()
	n := 4
	if len(subs) > 0 {
		n++
	}
	if r, ok := redisCommandDoc(cmd.Name); ok {
		// Redis's documentation (commanddocs.go), with the subcommands Lavik has.
		c.W.Map(len(r.Elems)/2 + min(len(subs), 1))
		for _, v := range r.Elems {
			writeReply(c.W, v)
		}
		writeSubcommandDocs(c, subs)
		return
	}
	c.W.Map(n)
	c.W.BulkString("summary")
	c.W.BulkString(cmd.Summary)
	c.W.BulkString("since")
	c.W.BulkString(cmd.Since)
	c.W.BulkString("group")
	c.W.BulkString(cmd.Group)
	c.W.BulkString("complexity")
	c.W.BulkString(cmd.Complexity)
	writeSubcommandDocs(c, subs)
}

func writeSubcommandDocs(c *Ctx, subs []*Command) {
	if len(subs) > 0 {
		c.W.BulkString("subcommands")
		c.W.Map(len(subs))
		for _, s := range subs {
			c.W.BulkString(s.Name)
			writeCommandDocs(c, s)
		}
	}
}

func commandDocsCmd(c *Ctx) {
	var cmds []*Command
	if len(c.Args) == 2 {
		cmds = All()
	} else {
		for _, a := range c.Args[2:] {
			if cmd := lookupFull(string(a)); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.W.Map(len(cmds))
	for _, cmd := range cmds {
		c.W.BulkString(cmd.Name)
		writeCommandDocs(c, cmd)
	}
}

func commandListCmd(c *Ctx) {
	var filter func(*Command) bool
	if len(c.Args) > 2 {
		if len(c.Args) != 5 || !is(c.Args[2], "FILTERBY") {
			c.Err(ErrSyntax)
			return
		}
		v := string(c.Args[4])
		switch {
		case is(c.Args[3], "MODULE"):
			filter = func(*Command) bool { return false }
		case is(c.Args[3], "ACLCAT"):
			filter = func(cmd *Command) bool {
				for _, cat := range aclCategories(cmd) {
					if strings.EqualFold(cat[1:], v) {
						return true
					}
				}
				return false
			}
		case is(c.Args[3], "PATTERN"):
			filter = func(cmd *Command) bool { return GlobMatch([]byte(v), []byte(cmd.Name), true) }
		default:
			c.Err(ErrSyntax)
			return
		}
	}
	var names []string
	for _, cmd := range AllWithSubcommands() {
		if filter == nil || filter(cmd) {
			names = append(names, cmd.Name)
		}
	}
	sort.Strings(names)
	c.W.Array(len(names))
	for _, n := range names {
		c.W.BulkString(n)
	}
}

// commandKeys resolves COMMAND GETKEYS' and GETKEYSANDFLAGS' arguments: the command line
// (from argument 2), its command and the positions of its keys in it; ok false when an error
// was replied.
func commandKeys(c *Ctx) (args [][]byte, cmd *Command, pos []int, ok bool) {
	args = c.Args[2:]
	cmd = Lookup(args[0])
	if cmd != nil && cmd.Subcommands != nil && len(args) > 1 {
		cmd = cmd.LookupSub(args[1])
	}
	if cmd == nil {
		c.Err(Error("ERR Invalid command specified"))
		return nil, nil, nil, false
	}
	if cmd.FirstKey == 0 && cmd.Keys == nil {
		c.Err(Error("ERR The command has no key arguments"))
		return nil, nil, nil, false
	}
	if !cmd.CheckArity(len(args)) {
		c.Err(Error("ERR Invalid number of arguments specified for command"))
		return nil, nil, nil, false
	}
	if cmd.Keys == nil {
		return args, cmd, cmd.KeyIndexes(len(args)), true
	}
	pos, err := cmd.Keys(args)
	if err != nil || len(pos) == 0 {
		c.Err(Error("ERR Invalid arguments specified for command"))
		return nil, nil, nil, false
	}
	return args, cmd, pos, true
}

func commandGetkeysCmd(c *Ctx) {
	args, _, pos, ok := commandKeys(c)
	if !ok {
		return
	}
	c.W.Array(len(pos))
	for _, p := range pos {
		c.W.Bulk(args[p])
	}
}
