package commands

import (
	"strings"
	"sync"

	"github.com/lavikdb/lavik/pkg/resp"
)

// What Redis says about its commands. COMMAND INFO and COMMAND DOCS describe a command Redis
// also has as redis-server 7.0 does (redisdocs_gen.go, written by tools/gencmddocs from the
// server's own replies): its ACL categories, tips, key specs and documentation, arguments
// included, so that clients and tools (redis-cli's help, cluster clients' key extraction) see
// Redis's description. Arity, flags and the first/last/step key positions come from the table,
// since they are what the dispatcher enforces; a test checks both against redis-server. A
// command of Lavik's own (LAVIK.*) is described from its table entry alone.

var (
	redisDocsOnce sync.Once
	redisInfo     map[string]resp.Value
	redisDocs     map[string]resp.Value
)

func loadRedisDocs() {
	parse := func(src map[string]string) map[string]resp.Value {
		out := make(map[string]resp.Value, len(src))
		for name, text := range src {
			v, err := resp.NewReplyReader(strings.NewReader(text)).Read()
			if err != nil {
				panic("commands: redisdocs_gen.go: " + name + ": " + err.Error())
			}
			out[name] = v
		}
		return out
	}
	redisInfo = parse(redisCommandInfo)
	redisDocs = parse(redisCommandDocs)
}

// redisCommand returns redis-server's COMMAND INFO entry for name, if Redis has the command.
func redisCommand(name string) (resp.Value, bool) {
	redisDocsOnce.Do(loadRedisDocs)
	v, ok := redisInfo[name]
	return v, ok && len(v.Elems) == 10
}

// redisCommandDoc returns redis-server's COMMAND DOCS entry for name, if Redis has the command.
func redisCommandDoc(name string) (resp.Value, bool) {
	redisDocsOnce.Do(loadRedisDocs)
	v, ok := redisDocs[name]
	return v, ok
}

// writeReply writes v in the connection's protocol (a map or set is a flat array in RESP2).
func writeReply(w *resp.Writer, v resp.Value) {
	switch v.Kind {
	case resp.SimpleString:
		w.Simple(string(v.Str))
	case resp.Integer:
		w.Int(v.Int)
	case resp.BulkString, resp.Verbatim:
		w.Bulk(v.Str)
	case resp.Null:
		w.Null()
	case resp.Array:
		w.Array(len(v.Elems))
	case resp.Set:
		w.Set(len(v.Elems))
	case resp.Map:
		w.Map(len(v.Elems) / 2)
	}
	for _, e := range v.Elems {
		writeReply(w, e)
	}
}

// keySpec is one of Redis's key specs, as COMMAND INFO gives it.
type keySpec struct {
	flags []string
	// begin_search: index, or keyword searched from startFrom (negative: from the end).
	index     int
	keyword   string
	startFrom int
	// find_keys: range (lastKey relative to the first key, -1 the last argument; keyStep;
	// limit) or keynum (keyNumIdx, firstKey, keyStep relative to the begin_search point).
	keynum                     bool
	lastKey, keyStep, limit    int
	keyNumIdx, firstKey        int
	unknownBegin, unknownFinds bool
}

// field returns the value of key in map m.
func field(m resp.Value, key string) (resp.Value, bool) {
	for i := 0; i+1 < len(m.Elems); i += 2 {
		if string(m.Elems[i].Str) == key {
			return m.Elems[i+1], true
		}
	}
	return resp.Value{}, false
}

func fieldInt(m resp.Value, key string) int {
	v, _ := field(m, key)
	return int(v.Int)
}

// keySpecs returns the key specs Redis gives the command named name.
func keySpecs(name string) []keySpec {
	info, ok := redisCommand(name)
	if !ok {
		return nil
	}
	var out []keySpec
	for _, m := range info.Elems[8].Elems {
		var ks keySpec
		if f, ok := field(m, "flags"); ok {
			for _, e := range f.Elems {
				ks.flags = append(ks.flags, string(e.Str))
			}
		}
		bs, _ := field(m, "begin_search")
		t, _ := field(bs, "type")
		spec, _ := field(bs, "spec")
		switch string(t.Str) {
		case "index":
			ks.index = fieldInt(spec, "index")
		case "keyword":
			kw, _ := field(spec, "keyword")
			ks.keyword = string(kw.Str)
			ks.startFrom = fieldInt(spec, "startfrom")
		default:
			ks.unknownBegin = true
		}
		fk, _ := field(m, "find_keys")
		t, _ = field(fk, "type")
		spec, _ = field(fk, "spec")
		switch string(t.Str) {
		case "range":
			ks.lastKey, ks.keyStep, ks.limit = fieldInt(spec, "lastkey"), fieldInt(spec, "keystep"), fieldInt(spec, "limit")
		case "keynum":
			ks.keynum = true
			ks.keyNumIdx, ks.firstKey, ks.keyStep = fieldInt(spec, "keynumidx"), fieldInt(spec, "firstkey"), fieldInt(spec, "keystep")
		default:
			ks.unknownFinds = true
		}
		out = append(out, ks)
	}
	return out
}

// positions returns the argument positions the spec names in args (args[0] the command name),
// as Redis's getKeysUsingKeySpecs finds them; nil when it names none or cannot say.
func (ks keySpec) positions(args [][]byte) []int {
	if ks.unknownBegin || ks.unknownFinds {
		return nil
	}
	argc := len(args)
	first := ks.index
	if ks.keyword != "" {
		first = 0
		start, end, step := ks.startFrom, argc, 1
		if start < 0 {
			start, end, step = argc+start, 0, -1
		}
		for i := start; i != end && i > 0 && i < argc; i += step {
			if strings.EqualFold(string(args[i]), ks.keyword) {
				first = i + 1
				break
			}
		}
		if first == 0 {
			return nil
		}
	}
	if first <= 0 || first >= argc {
		return nil
	}
	var last, step int
	if ks.keynum {
		at := first + ks.keyNumIdx
		if at >= argc {
			return nil
		}
		n, ok := ParseInt(args[at])
		if !ok || n < 0 {
			return nil
		}
		step = max(ks.keyStep, 1)
		first = first + ks.firstKey
		last = first + (int(n)-1)*step
	} else {
		step = max(ks.keyStep, 1)
		switch {
		case ks.lastKey >= 0:
			last = first + ks.lastKey
		case ks.limit <= 1:
			last = argc + ks.lastKey
		default:
			last = first + ((argc+ks.lastKey)-first)/ks.limit
		}
	}
	var out []int
	for i := first; i <= last && i < argc; i += step {
		out = append(out, i)
	}
	return out
}

// keyFlags returns the key-spec flags of the key at argument position pos of args for cmd, from
// Redis's key specs; ok is false when no spec names it.
func keyFlags(cmd *Command, args [][]byte, pos int) ([]string, bool) {
	for _, ks := range keySpecs(cmd.Name) {
		for _, p := range ks.positions(args) {
			if p == pos {
				if len(ks.flags) > 0 && ks.flags[len(ks.flags)-1] == "variable_flags" {
					return variableKeyFlags(cmd, args), true
				}
				return ks.flags, true
			}
		}
	}
	return nil, false
}

// variableKeyFlags are the flags of a key whose spec says variable_flags: they depend on the
// arguments, as Redis's setGetKeys and bitfieldGetKeys decide them.
func variableKeyFlags(cmd *Command, args [][]byte) []string {
	switch cmd.Name {
	case "set":
		for _, a := range args[3:] {
			if strings.EqualFold(string(a), "get") {
				return []string{"RW", "access", "update"}
			}
		}
		return []string{"OW", "update"}
	case "bitfield":
		for i := 2; i < len(args); i++ {
			switch strings.ToLower(string(args[i])) {
			case "get":
				i += 2
			case "set", "incrby":
				return []string{"RW", "access", "update"}
			case "overflow":
				i++
			}
		}
		return []string{"RO", "access"}
	}
	return []string{"RW", "access", "update"}
}
