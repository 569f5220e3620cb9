package test

// TestCommandTable walks the command table the running server reports (COMMAND, COMMAND LIST)
// and checks every entry against what the server does: the arity in the table is the arity the
// dispatcher enforces, COMMAND INFO agrees with COMMAND, COMMAND GETKEYS finds the keys a real
// invocation names, write commands change exactly those keys and nothing else does, and only
// no_auth commands run before AUTH. Each command needs a sample invocation in tblSamples, so a
// command added to the table without one fails here.
//
// The file speaks RESP2 over its own small connection type rather than the shared helpers, so
// that it sees status, bulk and error replies exactly as sent and does not depend on what a
// client library does when it connects.

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lavikdb/lavik/test/harness"
)

// tblRequired are the commands and subcommands the server must list, each with Redis 7.0's
// arity and key positions (first, last, step), which clients rely on to check arguments and to
// route keys; LAVIK_TEST_SERVER=redis checks these values against redis-server itself. Against
// redis-server, which has hundreds more commands, the walk is restricted to these.
var tblRequired = []tblRef{
	{"ping", -1, 0, 0, 0}, {"echo", 2, 0, 0, 0}, {"quit", -1, 0, 0, 0}, {"hello", -1, 0, 0, 0},
	{"auth", -2, 0, 0, 0}, {"select", 2, 0, 0, 0}, {"reset", 1, 0, 0, 0}, {"client", -2, 0, 0, 0}, {"client|id", 2, 0, 0, 0},
	{"client|setname", 3, 0, 0, 0}, {"client|getname", 2, 0, 0, 0}, {"client|list", -2, 0, 0, 0},
	{"client|info", 2, 0, 0, 0}, {"client|kill", -3, 0, 0, 0}, {"client|reply", 3, 0, 0, 0},
	{"client|no-evict", 3, 0, 0, 0}, {"info", -1, 0, 0, 0}, {"config", -2, 0, 0, 0},
	{"config|get", -3, 0, 0, 0}, {"config|set", -4, 0, 0, 0}, {"config|resetstat", 2, 0, 0, 0},
	{"dbsize", 1, 0, 0, 0}, {"flushdb", -1, 0, 0, 0}, {"flushall", -1, 0, 0, 0}, {"swapdb", 3, 0, 0, 0}, {"time", 1, 0, 0, 0},
	{"shutdown", -1, 0, 0, 0}, {"get", 2, 1, 1, 1}, {"set", -3, 1, 1, 1}, {"setnx", 3, 1, 1, 1},
	{"setex", 4, 1, 1, 1}, {"psetex", 4, 1, 1, 1}, {"mget", -2, 1, -1, 1}, {"mset", -3, 1, -1, 2},
	{"msetnx", -3, 1, -1, 2}, {"getset", 3, 1, 1, 1}, {"getdel", 2, 1, 1, 1}, {"getex", -2, 1, 1, 1},
	{"append", 3, 1, 1, 1}, {"strlen", 2, 1, 1, 1}, {"getrange", 4, 1, 1, 1}, {"substr", 4, 1, 1, 1},
	{"setrange", 4, 1, 1, 1}, {"incr", 2, 1, 1, 1}, {"decr", 2, 1, 1, 1}, {"incrby", 3, 1, 1, 1},
	{"decrby", 3, 1, 1, 1}, {"incrbyfloat", 3, 1, 1, 1}, {"del", -2, 1, -1, 1},
	{"unlink", -2, 1, -1, 1}, {"exists", -2, 1, -1, 1}, {"type", 2, 1, 1, 1}, {"expire", -3, 1, 1, 1},
	{"pexpire", -3, 1, 1, 1}, {"expireat", -3, 1, 1, 1}, {"pexpireat", -3, 1, 1, 1},
	{"ttl", 2, 1, 1, 1}, {"pttl", 2, 1, 1, 1}, {"expiretime", 2, 1, 1, 1},
	{"pexpiretime", 2, 1, 1, 1}, {"persist", 2, 1, 1, 1}, {"rename", 3, 1, 2, 1},
	{"renamenx", 3, 1, 2, 1}, {"copy", -3, 1, 2, 1}, {"move", 3, 1, 1, 1}, {"scan", -2, 0, 0, 0},
	{"keys", 2, 0, 0, 0}, {"randomkey", 1, 0, 0, 0}, {"touch", -2, 1, -1, 1}, {"object", -2, 0, 0, 0},
	{"object|encoding", 3, 2, 2, 1}, {"command", -1, 0, 0, 0}, {"command|count", 2, 0, 0, 0},
	{"command|info", -2, 0, 0, 0}, {"command|docs", -2, 0, 0, 0}, {"command|list", -2, 0, 0, 0},
	{"multi", 1, 0, 0, 0}, {"exec", 1, 0, 0, 0}, {"discard", 1, 0, 0, 0}, {"watch", -2, 1, -1, 1},
	{"unwatch", 1, 0, 0, 0},
	{"xadd", -5, 1, 1, 1}, {"xlen", 2, 1, 1, 1}, {"xrange", -4, 1, 1, 1}, {"xrevrange", -4, 1, 1, 1},
	{"xdel", -3, 1, 1, 1}, {"xtrim", -4, 1, 1, 1}, {"xsetid", -3, 1, 1, 1}, {"xinfo", -2, 0, 0, 0},
	{"xinfo|stream", -3, 2, 2, 1}, {"xinfo|groups", 3, 2, 2, 1}, {"xinfo|consumers", 4, 2, 2, 1},
	{"xinfo|help", 2, 0, 0, 0}, {"xread", -4, 0, 0, 0}, {"xgroup", -2, 0, 0, 0},
	{"xgroup|create", -5, 2, 2, 1}, {"xgroup|setid", -5, 2, 2, 1}, {"xgroup|destroy", 4, 2, 2, 1},
	{"xgroup|createconsumer", 5, 2, 2, 1}, {"xgroup|delconsumer", 5, 2, 2, 1}, {"xgroup|help", 2, 0, 0, 0},
	{"xreadgroup", -7, 0, 0, 0}, {"xack", -4, 1, 1, 1}, {"xpending", -3, 1, 1, 1}, {"xclaim", -6, 1, 1, 1},
	{"xautoclaim", -6, 1, 1, 1},
	{"setbit", 4, 1, 1, 1}, {"getbit", 3, 1, 1, 1}, {"bitcount", -2, 1, 1, 1}, {"bitpos", -3, 1, 1, 1},
	{"bitop", -4, 2, -1, 1}, {"bitfield", -2, 1, 1, 1}, {"bitfield_ro", -2, 1, 1, 1},
	{"pfadd", -2, 1, 1, 1}, {"pfcount", -2, 1, -1, 1}, {"pfmerge", -2, 1, -1, 1},
	{"geoadd", -5, 1, 1, 1}, {"geodist", -4, 1, 1, 1}, {"geohash", -2, 1, 1, 1}, {"geopos", -2, 1, 1, 1},
	{"georadius", -6, 1, 1, 1}, {"georadiusbymember", -5, 1, 1, 1}, {"georadius_ro", -6, 1, 1, 1},
	{"georadiusbymember_ro", -5, 1, 1, 1}, {"geosearch", -7, 1, 1, 1}, {"geosearchstore", -8, 1, 2, 1},
	{"sort", -2, 1, 1, 1}, {"sort_ro", -2, 1, 1, 1}, {"lcs", -3, 1, 2, 1},
}

type tblRef struct {
	name                     string
	arity, first, last, step int64
}

// tblSample is one realistic invocation of a command and what it must do.
type tblSample struct {
	name  string     // full name as COMMAND reports it ("config|get")
	setup [][]string // run on the invoking connection first, on an empty keyspace
	// args is the invocation; nil for a container, which has no behaviour of its own.
	args []string
	keys []string // the keys args names, in argument order, as COMMAND GETKEYS must return them
	// changes are the keys whose value or expiry the invocation changes, created or removes;
	// "1:k" is key k in database 1. Exactly these must differ afterwards.
	changes []string
	// want is the expected reply: string (bulk), tblSimple, tblErr, int, nil (null), []any,
	// or a tblCheck.
	want any
	// authArgs, for a no_auth command, is an invocation that succeeds before AUTH on a server
	// started with --requirepass pw.
	authArgs []string
	closes   bool // the server closes the connection after replying
}

// tblGeoK makes k a geo index of two places.
var tblGeoK = [][]string{{"GEOADD", "k", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"}}

// tblSamples must hold one entry per command and subcommand the server lists.
var tblSamples = []tblSample{
	// connection
	{name: "ping", args: []string{"PING"}, want: tblSimple("PONG")},
	{name: "echo", args: []string{"ECHO", "hello"}, want: "hello"},
	{name: "quit", args: []string{"QUIT"}, want: tblOK, closes: true, authArgs: []string{"QUIT"}},
	{name: "hello", args: []string{"HELLO", "2"}, want: tblArrayHead("server"),
		authArgs: []string{"HELLO", "2", "AUTH", "default", "pw"}},
	// The default user has no password here, so any password is accepted for it.
	{name: "auth", args: []string{"AUTH", "default", "whatever"}, want: tblOK, authArgs: []string{"AUTH", "pw"}},
	{name: "select", args: []string{"SELECT", "1"}, want: tblOK},
	{name: "reset", args: []string{"RESET"}, want: tblSimple("RESET"), authArgs: []string{"RESET"}},
	// pubsub
	{name: "subscribe", args: []string{"SUBSCRIBE", "ch"}, want: []any{"subscribe", "ch", int64(1)}},
	{name: "psubscribe", args: []string{"PSUBSCRIBE", "c*"}, want: []any{"psubscribe", "c*", int64(1)}},
	{name: "ssubscribe", args: []string{"SSUBSCRIBE", "ch"}, want: []any{"ssubscribe", "ch", int64(1)}},
	{name: "unsubscribe", args: []string{"UNSUBSCRIBE", "ch"}, want: []any{"unsubscribe", "ch", int64(0)}},
	{name: "punsubscribe", args: []string{"PUNSUBSCRIBE", "c*"}, want: []any{"punsubscribe", "c*", int64(0)}},
	{name: "sunsubscribe", args: []string{"SUNSUBSCRIBE", "ch"}, want: []any{"sunsubscribe", "ch", int64(0)}},
	{name: "publish", args: []string{"PUBLISH", "ch", "m"}, want: 0},
	{name: "spublish", args: []string{"SPUBLISH", "ch", "m"}, want: 0},
	{name: "pubsub"},
	{name: "pubsub|channels", args: []string{"PUBSUB", "CHANNELS"}, want: []any{}},
	{name: "pubsub|shardchannels", args: []string{"PUBSUB", "SHARDCHANNELS"}, want: []any{}},
	{name: "pubsub|numsub", args: []string{"PUBSUB", "NUMSUB", "ch"}, want: []any{"ch", int64(0)}},
	{name: "pubsub|shardnumsub", args: []string{"PUBSUB", "SHARDNUMSUB", "ch"}, want: []any{"ch", int64(0)}},
	{name: "pubsub|numpat", args: []string{"PUBSUB", "NUMPAT"}, want: 0},
	{name: "pubsub|help", args: []string{"PUBSUB", "HELP"}, want: tblHelp("PUBSUB")},
	{name: "client"},
	{name: "client|id", args: []string{"CLIENT", "ID"}, want: tblIntIn(1, 1<<62)},
	{name: "client|setname", args: []string{"CLIENT", "SETNAME", "tbl"}, want: tblOK},
	{name: "client|getname", args: []string{"CLIENT", "GETNAME"}, want: nil},
	{name: "client|list", args: []string{"CLIENT", "LIST"}, want: tblContains("id=")},
	{name: "client|info", args: []string{"CLIENT", "INFO"}, want: tblContains("id=")},
	// A filter that matches nobody.
	{name: "client|kill", args: []string{"CLIENT", "KILL", "ID", "999999999"}, want: 0},
	// A client that is not blocked.
	{name: "client|unblock", args: []string{"CLIENT", "UNBLOCK", "999999999"}, want: 0},
	{name: "client|reply", args: []string{"CLIENT", "REPLY", "ON"}, want: tblOK},
	{name: "client|no-evict", args: []string{"CLIENT", "NO-EVICT", "ON"}, want: tblOK},
	{name: "client|help", args: []string{"CLIENT", "HELP"}, want: tblHelp("CLIENT")},

	// transactions
	{name: "multi", args: []string{"MULTI"}, want: tblOK},
	{name: "exec", setup: [][]string{{"MULTI"}, {"ECHO", "hi"}}, args: []string{"EXEC"}, want: []any{"hi"}},
	{name: "discard", setup: [][]string{{"MULTI"}, {"SET", "k", "v"}}, args: []string{"DISCARD"}, want: tblOK},
	{name: "watch", args: []string{"WATCH", "a", "b"}, keys: tblAB, want: tblOK},
	{name: "unwatch", setup: [][]string{{"WATCH", "a"}}, args: []string{"UNWATCH"}, want: tblOK},

	// server
	{name: "info", args: []string{"INFO", "server"}, want: tblContains("redis_version:")},
	{name: "config"},
	{name: "config|get", args: []string{"CONFIG", "GET", "timeout"}, want: []any{"timeout", "0"}},
	{name: "config|set", args: []string{"CONFIG", "SET", "timeout", "0"}, want: tblOK},
	{name: "config|resetstat", args: []string{"CONFIG", "RESETSTAT"}, want: tblOK},
	{name: "config|help", args: []string{"CONFIG", "HELP"}, want: tblHelp("CONFIG")},
	{name: "dbsize", setup: tblSetAB, args: []string{"DBSIZE"}, want: 2},
	{name: "flushdb", setup: tblTwoDBs, args: []string{"FLUSHDB"}, changes: []string{"a"}, want: tblOK},
	{name: "flushall", setup: tblTwoDBs, args: []string{"FLUSHALL"}, changes: []string{"1:b", "a"}, want: tblOK},
	{name: "swapdb", setup: tblTwoDBs, args: []string{"SWAPDB", "0", "1"}, changes: []string{"1:a", "1:b", "a", "b"}, want: tblOK},
	{name: "time", args: []string{"TIME"}, want: tblCheck(tblTime)},
	// Run last, by TestCommandTable/Shutdown, which checks that the server goes.
	{name: "shutdown", args: []string{"SHUTDOWN", "NOSAVE"}},
	{name: "command", args: []string{"COMMAND"}, want: tblArrayMin(10)},
	{name: "command|count", args: []string{"COMMAND", "COUNT"}, want: tblIntIn(10, 1<<20)},
	{name: "command|info", args: []string{"COMMAND", "INFO", "get"}, want: tblCommandInfoOf("get")},
	{name: "command|docs", args: []string{"COMMAND", "DOCS", "get"}, want: tblArrayHead("get")},
	{name: "command|list", args: []string{"COMMAND", "LIST"}, want: tblHas("get")},
	{name: "command|getkeys", args: []string{"COMMAND", "GETKEYS", "SET", "k", "v"}, want: []any{"k"}},
	{name: "command|help", args: []string{"COMMAND", "HELP"}, want: tblHelp("COMMAND")},

	// string
	{name: "get", setup: tblSetK("v1"), args: []string{"GET", "k"}, keys: tblK, want: "v1"},
	{name: "set", setup: tblSetK("old"), args: []string{"SET", "k", "new"}, keys: tblK, changes: tblK, want: tblOK},
	{name: "setnx", args: []string{"SETNX", "k", "v"}, keys: tblK, changes: tblK, want: 1},
	{name: "setex", args: []string{"SETEX", "k", "100", "v"}, keys: tblK, changes: tblK, want: tblOK},
	{name: "psetex", args: []string{"PSETEX", "k", "100000", "v"}, keys: tblK, changes: tblK, want: tblOK},
	{name: "mget", setup: tblSetAB, args: []string{"MGET", "a", "b"}, keys: tblAB, want: []any{"1", "2"}},
	{name: "mset", setup: tblSetAB, args: []string{"MSET", "a", "x", "b", "y"}, keys: tblAB, changes: tblAB, want: tblOK},
	{name: "msetnx", args: []string{"MSETNX", "a", "1", "b", "2"}, keys: tblAB, changes: tblAB, want: 1},
	{name: "getset", setup: tblSetK("old"), args: []string{"GETSET", "k", "new"}, keys: tblK, changes: tblK, want: "old"},
	{name: "getdel", setup: tblSetK("v"), args: []string{"GETDEL", "k"}, keys: tblK, changes: tblK, want: "v"},
	{name: "getex", setup: tblSetK("v"), args: []string{"GETEX", "k", "EX", "100"}, keys: tblK, changes: tblK, want: "v"},
	{name: "append", setup: tblSetK("ab"), args: []string{"APPEND", "k", "cd"}, keys: tblK, changes: tblK, want: 4},
	{name: "strlen", setup: tblSetK("hello"), args: []string{"STRLEN", "k"}, keys: tblK, want: 5},
	{name: "getrange", setup: tblSetK("hello"), args: []string{"GETRANGE", "k", "1", "3"}, keys: tblK, want: "ell"},
	{name: "substr", setup: tblSetK("hello"), args: []string{"SUBSTR", "k", "1", "3"}, keys: tblK, want: "ell"},
	{name: "setrange", setup: tblSetK("hello"), args: []string{"SETRANGE", "k", "1", "a"}, keys: tblK, changes: tblK, want: 5},
	{name: "incr", setup: tblSetK("10"), args: []string{"INCR", "k"}, keys: tblK, changes: tblK, want: 11},
	{name: "decr", setup: tblSetK("10"), args: []string{"DECR", "k"}, keys: tblK, changes: tblK, want: 9},
	{name: "incrby", setup: tblSetK("10"), args: []string{"INCRBY", "k", "5"}, keys: tblK, changes: tblK, want: 15},
	{name: "decrby", setup: tblSetK("10"), args: []string{"DECRBY", "k", "5"}, keys: tblK, changes: tblK, want: 5},
	{name: "incrbyfloat", setup: tblSetK("10"), args: []string{"INCRBYFLOAT", "k", "1.5"}, keys: tblK, changes: tblK, want: "11.5"},

	{name: "lcs", setup: [][]string{{"MSET", "a", "ohmytext", "b", "mynewtext"}}, args: []string{"LCS", "a", "b"}, keys: tblAB, want: "mytext"},

	// bitmap
	{name: "setbit", args: []string{"SETBIT", "k", "7", "1"}, keys: tblK, changes: tblK, want: 0},
	{name: "getbit", setup: tblSetK("a"), args: []string{"GETBIT", "k", "1"}, keys: tblK, want: 1},
	{name: "bitcount", setup: tblSetK("a"), args: []string{"BITCOUNT", "k"}, keys: tblK, want: 3},
	{name: "bitpos", setup: tblSetK("a"), args: []string{"BITPOS", "k", "1"}, keys: tblK, want: 1},
	{name: "bitop", setup: tblSetAB, args: []string{"BITOP", "OR", "d", "a", "b"}, keys: []string{"d", "a", "b"}, changes: []string{"d"}, want: 1},
	{name: "bitfield", args: []string{"BITFIELD", "k", "SET", "u8", "0", "97"}, keys: tblK, changes: tblK, want: []any{int64(0)}},
	{name: "bitfield_ro", setup: tblSetK("a"), args: []string{"BITFIELD_RO", "k", "GET", "u8", "0"}, keys: tblK, want: []any{int64(97)}},

	// hyperloglog
	{name: "pfadd", args: []string{"PFADD", "k", "a", "b"}, keys: tblK, changes: tblK, want: 1},
	{name: "pfcount", setup: [][]string{{"PFADD", "a", "x"}, {"PFADD", "b", "y"}}, args: []string{"PFCOUNT", "a", "b"}, keys: tblAB, want: 2},
	{name: "pfmerge", setup: [][]string{{"PFADD", "a", "x"}, {"PFADD", "b", "y"}}, args: []string{"PFMERGE", "a", "b"}, keys: tblAB, changes: []string{"a"}, want: tblOK},

	// sort
	{name: "sort", setup: [][]string{{"RPUSH", "k", "2", "1"}}, args: []string{"SORT", "k", "STORE", "d"}, keys: []string{"k", "d"}, changes: []string{"d"}, want: 2},
	{name: "sort_ro", setup: [][]string{{"RPUSH", "k", "2", "1"}}, args: []string{"SORT_RO", "k"}, keys: tblK, want: []any{"1", "2"}},

	// geo
	{name: "geoadd", args: []string{"GEOADD", "k", "13.361389", "38.115556", "Palermo"}, keys: tblK, changes: tblK, want: 1},
	{name: "geodist", setup: tblGeoK, args: []string{"GEODIST", "k", "Palermo", "Catania", "km"}, keys: tblK, want: "166.2742"},
	{name: "geohash", setup: tblGeoK, args: []string{"GEOHASH", "k", "Palermo"}, keys: tblK, want: []any{"sqc8b49rny0"}},
	{name: "geopos", setup: tblGeoK, args: []string{"GEOPOS", "k", "x"}, keys: tblK, want: []any{nil}},
	{name: "georadius", setup: tblGeoK, args: []string{"GEORADIUS", "k", "15", "37", "100", "km", "STORE", "d"}, keys: []string{"k", "d"}, changes: []string{"d"}, want: 1},
	{name: "georadiusbymember", setup: tblGeoK, args: []string{"GEORADIUSBYMEMBER", "k", "Palermo", "10", "km", "STORE", "d"}, keys: []string{"k", "d"}, changes: []string{"d"}, want: 1},
	{name: "georadius_ro", setup: tblGeoK, args: []string{"GEORADIUS_RO", "k", "15", "37", "100", "km"}, keys: tblK, want: []any{"Catania"}},
	{name: "georadiusbymember_ro", setup: tblGeoK, args: []string{"GEORADIUSBYMEMBER_RO", "k", "Catania", "10", "km"}, keys: tblK, want: []any{"Catania"}},
	{name: "geosearch", setup: tblGeoK, args: []string{"GEOSEARCH", "k", "FROMLONLAT", "15", "37", "BYRADIUS", "100", "km"}, keys: tblK, want: []any{"Catania"}},
	{name: "geosearchstore", setup: tblGeoK, args: []string{"GEOSEARCHSTORE", "d", "k", "FROMLONLAT", "15", "37", "BYBOX", "200", "200", "km"}, keys: []string{"d", "k"}, changes: []string{"d"}, want: 1},

	// hash
	{name: "hset", setup: tblHashK, args: []string{"HSET", "k", "a", "9", "c", "3"}, keys: tblK, changes: tblK, want: 1},
	{name: "hmset", setup: tblHashK, args: []string{"HMSET", "k", "a", "9"}, keys: tblK, changes: tblK, want: tblOK},
	{name: "hsetnx", setup: tblHashK, args: []string{"HSETNX", "k", "c", "3"}, keys: tblK, changes: tblK, want: 1},
	{name: "hget", setup: tblHashK, args: []string{"HGET", "k", "a"}, keys: tblK, want: "1"},
	{name: "hmget", setup: tblHashK, args: []string{"HMGET", "k", "a", "x"}, keys: tblK, want: []any{"1", nil}},
	{name: "hdel", setup: tblHashK, args: []string{"HDEL", "k", "a", "x"}, keys: tblK, changes: tblK, want: 1},
	{name: "hlen", setup: tblHashK, args: []string{"HLEN", "k"}, keys: tblK, want: 2},
	{name: "hstrlen", setup: tblHashK, args: []string{"HSTRLEN", "k", "b"}, keys: tblK, want: 1},
	{name: "hexists", setup: tblHashK, args: []string{"HEXISTS", "k", "b"}, keys: tblK, want: 1},
	{name: "hkeys", setup: tblHashK, args: []string{"HKEYS", "k"}, keys: tblK, want: []any{"a", "b"}},
	{name: "hvals", setup: tblHashK, args: []string{"HVALS", "k"}, keys: tblK, want: []any{"1", "2"}},
	{name: "hgetall", setup: tblHashK, args: []string{"HGETALL", "k"}, keys: tblK, want: []any{"a", "1", "b", "2"}},
	{name: "hincrby", setup: tblHashK, args: []string{"HINCRBY", "k", "a", "5"}, keys: tblK, changes: tblK, want: 6},
	{name: "hincrbyfloat", setup: tblHashK, args: []string{"HINCRBYFLOAT", "k", "a", "0.5"}, keys: tblK, changes: tblK, want: "1.5"},
	{name: "hrandfield", setup: tblHashK, args: []string{"HRANDFIELD", "k", "-3"}, keys: tblK, want: tblArrayLen(3)},
	{name: "hscan", setup: tblHashK, args: []string{"HSCAN", "k", "0"}, keys: tblK, want: []any{"0", []any{"a", "1", "b", "2"}}},
	{name: "lavik.hreplace", setup: tblHashK, args: []string{"LAVIK.HREPLACE", "k", "z", "26"}, keys: tblK, changes: tblK, want: 1},

	// set
	{name: "sadd", setup: tblSetS, args: []string{"SADD", "k", "a", "z"}, keys: tblK, changes: tblK, want: 1},
	{name: "srem", setup: tblSetS, args: []string{"SREM", "k", "a", "z"}, keys: tblK, changes: tblK, want: 1},
	{name: "smembers", setup: tblSetS, args: []string{"SMEMBERS", "k"}, keys: tblK, want: tblSetOf("a", "b")},
	{name: "sismember", setup: tblSetS, args: []string{"SISMEMBER", "k", "a"}, keys: tblK, want: 1},
	{name: "smismember", setup: tblSetS, args: []string{"SMISMEMBER", "k", "a", "z"}, keys: tblK, want: []any{int64(1), int64(0)}},
	{name: "scard", setup: tblSetS, args: []string{"SCARD", "k"}, keys: tblK, want: 2},
	{name: "spop", setup: tblSetS, args: []string{"SPOP", "k", "5"}, keys: tblK, changes: tblK, want: tblSetOf("a", "b")},
	{name: "srandmember", setup: tblSetS, args: []string{"SRANDMEMBER", "k", "5"}, keys: tblK, want: tblSetOf("a", "b")},
	{name: "smove", setup: tblSetS, args: []string{"SMOVE", "k", "d", "a"}, keys: []string{"k", "d"}, changes: []string{"d", "k"}, want: 1},
	{name: "sinter", setup: tblSetS, args: []string{"SINTER", "k", "k"}, keys: []string{"k", "k"}, want: tblSetOf("a", "b")},
	{name: "sunion", setup: tblSetS, args: []string{"SUNION", "k", "x"}, keys: []string{"k", "x"}, want: tblSetOf("a", "b")},
	{name: "sdiff", setup: tblSetS, args: []string{"SDIFF", "k", "x"}, keys: []string{"k", "x"}, want: tblSetOf("a", "b")},
	{name: "sinterstore", setup: tblSetS, args: []string{"SINTERSTORE", "d", "k"}, keys: []string{"d", "k"}, changes: []string{"d"}, want: 2},
	{name: "sunionstore", setup: tblSetS, args: []string{"SUNIONSTORE", "d", "k"}, keys: []string{"d", "k"}, changes: []string{"d"}, want: 2},
	{name: "sdiffstore", setup: tblSetS, args: []string{"SDIFFSTORE", "d", "k"}, keys: []string{"d", "k"}, changes: []string{"d"}, want: 2},
	{name: "sintercard", setup: tblSetS, args: []string{"SINTERCARD", "1", "k", "LIMIT", "1"}, keys: tblK, want: 1},
	{name: "sscan", setup: tblSetS, args: []string{"SSCAN", "k", "0"}, keys: tblK, want: tblScanOf("a", "b")},

	// list
	{name: "lpush", setup: tblListK, args: []string{"LPUSH", "k", "z"}, keys: tblK, changes: tblK, want: 3},
	{name: "rpush", setup: tblListK, args: []string{"RPUSH", "k", "z"}, keys: tblK, changes: tblK, want: 3},
	{name: "lpushx", setup: tblListK, args: []string{"LPUSHX", "k", "z"}, keys: tblK, changes: tblK, want: 3},
	{name: "rpushx", setup: tblListK, args: []string{"RPUSHX", "k", "z"}, keys: tblK, changes: tblK, want: 3},
	{name: "lpop", setup: tblListK, args: []string{"LPOP", "k"}, keys: tblK, changes: tblK, want: "a"},
	{name: "rpop", setup: tblListK, args: []string{"RPOP", "k"}, keys: tblK, changes: tblK, want: "b"},
	{name: "llen", setup: tblListK, args: []string{"LLEN", "k"}, keys: tblK, want: 2},
	{name: "lrange", setup: tblListK, args: []string{"LRANGE", "k", "0", "-1"}, keys: tblK, want: []any{"a", "b"}},
	{name: "lindex", setup: tblListK, args: []string{"LINDEX", "k", "-1"}, keys: tblK, want: "b"},
	{name: "lset", setup: tblListK, args: []string{"LSET", "k", "0", "z"}, keys: tblK, changes: tblK, want: tblOK},
	{name: "linsert", setup: tblListK, args: []string{"LINSERT", "k", "BEFORE", "b", "z"}, keys: tblK, changes: tblK, want: 3},
	{name: "lrem", setup: tblListK, args: []string{"LREM", "k", "0", "a"}, keys: tblK, changes: tblK, want: 1},
	{name: "ltrim", setup: tblListK, args: []string{"LTRIM", "k", "0", "0"}, keys: tblK, changes: tblK, want: tblOK},
	{name: "lpos", setup: tblListK, args: []string{"LPOS", "k", "b"}, keys: tblK, want: 1},
	{name: "lmove", setup: tblListK, args: []string{"LMOVE", "k", "d", "LEFT", "RIGHT"}, keys: []string{"k", "d"}, changes: []string{"d", "k"}, want: "a"},
	{name: "rpoplpush", setup: tblListK, args: []string{"RPOPLPUSH", "k", "d"}, keys: []string{"k", "d"}, changes: []string{"d", "k"}, want: "b"},
	{name: "lmpop", setup: tblListK, args: []string{"LMPOP", "2", "x", "k", "LEFT"}, keys: []string{"x", "k"}, changes: tblK, want: []any{"k", []any{"a"}}},
	{name: "blpop", setup: tblListK, args: []string{"BLPOP", "x", "k", "1"}, keys: []string{"x", "k"}, changes: tblK, want: []any{"k", "a"}},
	{name: "brpop", setup: tblListK, args: []string{"BRPOP", "k", "1"}, keys: tblK, changes: tblK, want: []any{"k", "b"}},
	{name: "blmove", setup: tblListK, args: []string{"BLMOVE", "k", "d", "RIGHT", "LEFT", "1"}, keys: []string{"k", "d"}, changes: []string{"d", "k"}, want: "b"},
	{name: "brpoplpush", setup: tblListK, args: []string{"BRPOPLPUSH", "k", "d", "1"}, keys: []string{"k", "d"}, changes: []string{"d", "k"}, want: "b"},
	{name: "blmpop", setup: tblListK, args: []string{"BLMPOP", "1", "1", "k", "RIGHT", "COUNT", "2"}, keys: tblK, changes: tblK, want: []any{"k", []any{"b", "a"}}},

	// sorted set
	{name: "zadd", setup: tblZSetK, args: []string{"ZADD", "k", "3", "c"}, keys: tblK, changes: tblK, want: 1},
	{name: "zincrby", setup: tblZSetK, args: []string{"ZINCRBY", "k", "2", "a"}, keys: tblK, changes: tblK, want: "3"},
	{name: "zrem", setup: tblZSetK, args: []string{"ZREM", "k", "a", "x"}, keys: tblK, changes: tblK, want: 1},
	{name: "zscore", setup: tblZSetK, args: []string{"ZSCORE", "k", "b"}, keys: tblK, want: "2"},
	{name: "zmscore", setup: tblZSetK, args: []string{"ZMSCORE", "k", "b", "x"}, keys: tblK, want: []any{"2", nil}},
	{name: "zcard", setup: tblZSetK, args: []string{"ZCARD", "k"}, keys: tblK, want: 2},
	{name: "zcount", setup: tblZSetK, args: []string{"ZCOUNT", "k", "(1", "+inf"}, keys: tblK, want: 1},
	{name: "zlexcount", setup: tblZSetK, args: []string{"ZLEXCOUNT", "k", "-", "+"}, keys: tblK, want: 2},
	{name: "zrank", setup: tblZSetK, args: []string{"ZRANK", "k", "b"}, keys: tblK, want: 1},
	{name: "zrevrank", setup: tblZSetK, args: []string{"ZREVRANK", "k", "b"}, keys: tblK, want: 0},
	{name: "zrange", setup: tblZSetK, args: []string{"ZRANGE", "k", "0", "-1", "WITHSCORES"}, keys: tblK, want: []any{"a", "1", "b", "2"}},
	{name: "zrevrange", setup: tblZSetK, args: []string{"ZREVRANGE", "k", "0", "-1"}, keys: tblK, want: []any{"b", "a"}},
	{name: "zrangebyscore", setup: tblZSetK, args: []string{"ZRANGEBYSCORE", "k", "2", "+inf"}, keys: tblK, want: []any{"b"}},
	{name: "zrevrangebyscore", setup: tblZSetK, args: []string{"ZREVRANGEBYSCORE", "k", "+inf", "-inf"}, keys: tblK, want: []any{"b", "a"}},
	{name: "zrangebylex", setup: tblZSetK, args: []string{"ZRANGEBYLEX", "k", "[b", "+"}, keys: tblK, want: []any{"b"}},
	{name: "zrevrangebylex", setup: tblZSetK, args: []string{"ZREVRANGEBYLEX", "k", "+", "-"}, keys: tblK, want: []any{"b", "a"}},
	{name: "zrangestore", setup: tblZSetK, args: []string{"ZRANGESTORE", "d", "k", "0", "0"}, keys: []string{"d", "k"}, changes: []string{"d"}, want: 1},
	{name: "zremrangebyrank", setup: tblZSetK, args: []string{"ZREMRANGEBYRANK", "k", "0", "0"}, keys: tblK, changes: tblK, want: 1},
	{name: "zremrangebyscore", setup: tblZSetK, args: []string{"ZREMRANGEBYSCORE", "k", "2", "2"}, keys: tblK, changes: tblK, want: 1},
	{name: "zremrangebylex", setup: tblZSetK, args: []string{"ZREMRANGEBYLEX", "k", "[a", "[a"}, keys: tblK, changes: tblK, want: 1},
	{name: "zpopmin", setup: tblZSetK, args: []string{"ZPOPMIN", "k"}, keys: tblK, changes: tblK, want: []any{"a", "1"}},
	{name: "zpopmax", setup: tblZSetK, args: []string{"ZPOPMAX", "k"}, keys: tblK, changes: tblK, want: []any{"b", "2"}},
	{name: "bzpopmin", setup: tblZSetK, args: []string{"BZPOPMIN", "k", "1"}, keys: tblK, changes: tblK, want: []any{"k", "a", "1"}},
	{name: "bzpopmax", setup: tblZSetK, args: []string{"BZPOPMAX", "k", "1"}, keys: tblK, changes: tblK, want: []any{"k", "b", "2"}},
	{name: "zmpop", setup: tblZSetK, args: []string{"ZMPOP", "1", "k", "MIN"}, keys: tblK, changes: tblK, want: []any{"k", []any{[]any{"a", "1"}}}},
	{name: "bzmpop", setup: tblZSetK, args: []string{"BZMPOP", "1", "1", "k", "MAX"}, keys: tblK, changes: tblK, want: []any{"k", []any{[]any{"b", "2"}}}},
	{name: "zrandmember", setup: tblZSetK, args: []string{"ZRANDMEMBER", "k", "-3"}, keys: tblK, want: tblArrayLen(3)},
	{name: "zunion", setup: tblZSetK, args: []string{"ZUNION", "2", "k", "x"}, keys: []string{"k", "x"}, want: []any{"a", "b"}},
	{name: "zinter", setup: tblZSetK, args: []string{"ZINTER", "1", "k"}, keys: tblK, want: []any{"a", "b"}},
	{name: "zdiff", setup: tblZSetK, args: []string{"ZDIFF", "2", "k", "x"}, keys: []string{"k", "x"}, want: []any{"a", "b"}},
	{name: "zunionstore", setup: tblZSetK, args: []string{"ZUNIONSTORE", "d", "1", "k"}, keys: []string{"d", "k"}, changes: []string{"d"}, want: 2},
	{name: "zinterstore", setup: tblZSetK, args: []string{"ZINTERSTORE", "d", "1", "k"}, keys: []string{"d", "k"}, changes: []string{"d"}, want: 2},
	{name: "zdiffstore", setup: tblZSetK, args: []string{"ZDIFFSTORE", "d", "1", "k"}, keys: []string{"d", "k"}, changes: []string{"d"}, want: 2},
	{name: "zintercard", setup: tblZSetK, args: []string{"ZINTERCARD", "1", "k"}, keys: tblK, want: 2},
	{name: "zscan", setup: tblZSetK, args: []string{"ZSCAN", "k", "0"}, keys: tblK, want: []any{"0", []any{"a", "1", "b", "2"}}},

	// stream
	{name: "xadd", setup: tblStreamK, args: []string{"XADD", "k", "3-1", "c", "3"}, keys: tblK, changes: tblK, want: "3-1"},
	{name: "xlen", setup: tblStreamK, args: []string{"XLEN", "k"}, keys: tblK, want: 2},
	{name: "xrange", setup: tblStreamK, args: []string{"XRANGE", "k", "-", "+", "COUNT", "1"}, keys: tblK, want: []any{[]any{"1-1", []any{"a", "1"}}}},
	{name: "xrevrange", setup: tblStreamK, args: []string{"XREVRANGE", "k", "+", "-", "COUNT", "1"}, keys: tblK, want: []any{[]any{"2-1", []any{"b", "2"}}}},
	{name: "xdel", setup: tblStreamK, args: []string{"XDEL", "k", "1-1", "9-9"}, keys: tblK, changes: tblK, want: 1},
	{name: "xtrim", setup: tblStreamK, args: []string{"XTRIM", "k", "MAXLEN", "1"}, keys: tblK, changes: tblK, want: 1},
	{name: "xsetid", setup: tblStreamK, args: []string{"XSETID", "k", "5-0"}, keys: tblK, changes: tblK, want: tblOK},
	{name: "xread", setup: tblStreamK, args: []string{"XREAD", "COUNT", "1", "STREAMS", "x", "k", "0", "0"}, keys: []string{"x", "k"},
		want: []any{[]any{"k", []any{[]any{"1-1", []any{"a", "1"}}}}}},
	{name: "xgroup"},
	{name: "xgroup|create", setup: tblStreamK, args: []string{"XGROUP", "CREATE", "k", "g", "$"}, keys: tblK, changes: tblK, want: tblOK},
	{name: "xgroup|setid", setup: tblGroupK, args: []string{"XGROUP", "SETID", "k", "g", "0"}, keys: tblK, changes: tblK, want: tblOK},
	{name: "xgroup|destroy", setup: tblGroupK, args: []string{"XGROUP", "DESTROY", "k", "g"}, keys: tblK, changes: tblK, want: 1},
	{name: "xgroup|createconsumer", setup: tblGroupK, args: []string{"XGROUP", "CREATECONSUMER", "k", "g", "c2"}, keys: tblK, changes: tblK, want: 1},
	{name: "xgroup|delconsumer", setup: tblGroupK, args: []string{"XGROUP", "DELCONSUMER", "k", "g", "c"}, keys: tblK, changes: tblK, want: 1},
	{name: "xgroup|help", args: []string{"XGROUP", "HELP"}, want: tblHelp("XGROUP")},
	{name: "xreadgroup", setup: tblGroupK, args: []string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "k", ">"}, keys: tblK, changes: tblK,
		want: []any{[]any{"k", []any{[]any{"2-1", []any{"b", "2"}}}}}},
	{name: "xack", setup: tblGroupK, args: []string{"XACK", "k", "g", "1-1"}, keys: tblK, changes: tblK, want: 1},
	{name: "xpending", setup: tblGroupK, args: []string{"XPENDING", "k", "g"}, keys: tblK, want: []any{int64(1), "1-1", "1-1", []any{[]any{"c", "1"}}}},
	{name: "xclaim", setup: tblGroupK, args: []string{"XCLAIM", "k", "g", "c2", "0", "1-1", "JUSTID"}, keys: tblK, changes: tblK, want: []any{"1-1"}},
	{name: "xautoclaim", setup: tblGroupK, args: []string{"XAUTOCLAIM", "k", "g", "c2", "0", "0", "JUSTID"}, keys: tblK, changes: tblK, want: []any{"0-0", []any{"1-1"}, []any{}}},
	{name: "xinfo"},
	{name: "xinfo|stream", setup: tblStreamK, args: []string{"XINFO", "STREAM", "k"}, keys: tblK, want: tblArrayHead("length")},
	{name: "xinfo|groups", setup: tblStreamK, args: []string{"XINFO", "GROUPS", "k"}, keys: tblK, want: []any{}},
	{name: "xinfo|consumers", setup: tblStreamK, args: []string{"XINFO", "CONSUMERS", "k", "g"}, keys: tblK,
		want: tblErr("NOGROUP No such consumer group 'g' for key name 'k'")},
	{name: "xinfo|help", args: []string{"XINFO", "HELP"}, want: tblHelp("XINFO")},

	// generic
	{name: "del", setup: tblSetABC, args: []string{"DEL", "a", "b"}, keys: tblAB, changes: tblAB, want: 2},
	{name: "unlink", setup: tblSetABC, args: []string{"UNLINK", "a", "b"}, keys: tblAB, changes: tblAB, want: 2},
	{name: "exists", setup: tblSetABC, args: []string{"EXISTS", "a", "x"}, keys: []string{"a", "x"}, want: 1},
	{name: "touch", setup: tblSetAB, args: []string{"TOUCH", "a", "b", "c"}, keys: []string{"a", "b", "c"}, want: 2},
	{name: "type", setup: tblSetK("v"), args: []string{"TYPE", "k"}, keys: tblK, want: tblSimple("string")},
	{name: "expire", setup: tblSetK("v"), args: []string{"EXPIRE", "k", "100"}, keys: tblK, changes: tblK, want: 1},
	{name: "pexpire", setup: tblSetK("v"), args: []string{"PEXPIRE", "k", "100000"}, keys: tblK, changes: tblK, want: 1},
	{name: "expireat", setup: tblSetK("v"), args: []string{"EXPIREAT", "k", "4102444800"}, keys: tblK, changes: tblK, want: 1},
	{name: "pexpireat", setup: tblSetK("v"), args: []string{"PEXPIREAT", "k", "4102444800000"}, keys: tblK, changes: tblK, want: 1},
	{name: "ttl", setup: tblSetKEx, args: []string{"TTL", "k"}, keys: tblK, want: tblIntIn(1, 100)},
	{name: "pttl", setup: tblSetKEx, args: []string{"PTTL", "k"}, keys: tblK, want: tblIntIn(1, 100000)},
	{name: "expiretime", setup: [][]string{{"SET", "k", "v", "EXAT", "4102444800"}},
		args: []string{"EXPIRETIME", "k"}, keys: tblK, want: 4102444800},
	{name: "pexpiretime", setup: [][]string{{"SET", "k", "v", "PXAT", "4102444800123"}},
		args: []string{"PEXPIRETIME", "k"}, keys: tblK, want: 4102444800123},
	{name: "persist", setup: tblSetKEx, args: []string{"PERSIST", "k"}, keys: tblK, changes: tblK, want: 1},
	{name: "rename", setup: tblSetA, args: []string{"RENAME", "a", "b"}, keys: tblAB, changes: tblAB, want: tblOK},
	{name: "renamenx", setup: tblSetA, args: []string{"RENAMENX", "a", "b"}, keys: tblAB, changes: tblAB, want: 1},
	{name: "copy", setup: tblSetA, args: []string{"COPY", "a", "b"}, keys: tblAB, changes: []string{"b"}, want: 1},
	{name: "move", setup: tblSetK("v"), args: []string{"MOVE", "k", "1"}, keys: tblK, changes: []string{"1:k", "k"}, want: 1},
	{name: "scan", setup: tblSetAB, args: []string{"SCAN", "0", "COUNT", "100"}, want: tblScanOf("a", "b")},
	{name: "keys", setup: tblSetAB, args: []string{"KEYS", "*"}, want: tblSetOf("a", "b")},
	{name: "randomkey", setup: tblSetA, args: []string{"RANDOMKEY"}, want: "a"},
	// introspection
	{name: "acl"},
	{name: "acl|help", args: []string{"ACL", "HELP"}, want: tblArrayMin(1)},
	{name: "acl|whoami", args: []string{"ACL", "WHOAMI"}, want: "default"},
	{name: "client|no-touch", args: []string{"CLIENT", "NO-TOUCH", "on"}, want: tblOK},
	{name: "client|pause", args: []string{"CLIENT", "PAUSE", "1", "WRITE"}, want: tblOK},
	{name: "client|unpause", args: []string{"CLIENT", "UNPAUSE"}, want: tblOK},
	{name: "command|getkeysandflags", args: []string{"COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v"}, want: tblArrayLen(1)},
	{name: "config|rewrite", args: []string{"CONFIG", "REWRITE"}, want: tblErr("ERR The server is running without a config file")},
	{name: "debug|object", setup: tblSetK("v"), args: []string{"DEBUG", "OBJECT", "k"}, want: tblCheck(func(v any) string {
		if s, ok := v.(tblSimple); !ok || !strings.HasPrefix(string(s), "Value at:") {
			return "want a status reply starting Value at:"
		}
		return ""
	})},
	{name: "debug|sleep", args: []string{"DEBUG", "SLEEP", "0"}, want: tblOK},
	{name: "lastsave", args: []string{"LASTSAVE"}, want: tblIntIn(1, 1<<40)},
	{name: "latency"},
	{name: "latency|doctor", args: []string{"LATENCY", "DOCTOR"}, want: tblCheck(tblNonEmpty)},
	{name: "latency|help", args: []string{"LATENCY", "HELP"}, want: tblArrayMin(1)},
	{name: "latency|history", args: []string{"LATENCY", "HISTORY", "command"}, want: []any{}},
	{name: "latency|latest", args: []string{"LATENCY", "LATEST"}, want: []any{}},
	{name: "latency|reset", args: []string{"LATENCY", "RESET"}, want: 0},
	{name: "memory"},
	{name: "memory|doctor", args: []string{"MEMORY", "DOCTOR"}, want: tblCheck(tblNonEmpty)},
	{name: "memory|help", args: []string{"MEMORY", "HELP"}, want: tblArrayMin(1)},
	{name: "memory|malloc-stats", args: []string{"MEMORY", "MALLOC-STATS"}, want: tblCheck(tblNonEmpty)},
	{name: "memory|purge", args: []string{"MEMORY", "PURGE"}, want: tblOK},
	{name: "memory|stats", args: []string{"MEMORY", "STATS"}, want: tblArrayMin(2)},
	{name: "memory|usage", setup: tblSetK("v"), args: []string{"MEMORY", "USAGE", "k"}, keys: tblK, want: tblIntIn(1, 1<<20)},
	{name: "monitor", args: []string{"MONITOR"}, want: tblOK},
	{name: "client|caching", args: []string{"CLIENT", "CACHING", "YES"}, want: tblCheck(tblWantErr)},
	{name: "client|getredir", args: []string{"CLIENT", "GETREDIR"}, want: -1},
	{name: "client|tracking", args: []string{"CLIENT", "TRACKING", "OFF"}, want: tblOK},
	{name: "client|trackinginfo", args: []string{"CLIENT", "TRACKINGINFO"}, want: tblArrayMin(2)},
	{name: "latency|graph", args: []string{"LATENCY", "GRAPH", "command"}, want: tblCheck(tblWantErr)},
	{name: "latency|histogram", args: []string{"LATENCY", "HISTOGRAM", "set"}, want: tblCheck(func(v any) string {
		if tblIsErr(v) {
			return "want a reply, not an error"
		}
		return ""
	})},
	{name: "object|freq", setup: tblSetK("v"), args: []string{"OBJECT", "FREQ", "k"}, keys: tblK, want: tblCheck(tblWantErr)},
	{name: "object|idletime", setup: tblSetK("v"), args: []string{"OBJECT", "IDLETIME", "k"}, keys: tblK, want: tblIntIn(0, 100)},
	{name: "object|refcount", setup: tblSetK("v"), args: []string{"OBJECT", "REFCOUNT", "k"}, keys: tblK, want: 1},
	{name: "slowlog"},
	{name: "slowlog|get", args: []string{"SLOWLOG", "GET"}, want: tblCheck(func(v any) string {
		if _, ok := v.([]any); !ok {
			return "want an array"
		}
		return ""
	})},
	{name: "slowlog|help", args: []string{"SLOWLOG", "HELP"}, want: tblArrayMin(1)},
	{name: "slowlog|len", args: []string{"SLOWLOG", "LEN"}, want: tblIntIn(0, 1<<20)},
	{name: "slowlog|reset", args: []string{"SLOWLOG", "RESET"}, want: tblOK},
	{name: "object"},
	{name: "object|encoding", setup: tblSetK("12345"), args: []string{"OBJECT", "ENCODING", "k"}, keys: tblK, want: "int"},
	{name: "object|help", args: []string{"OBJECT", "HELP"}, want: tblHelp("OBJECT")},
	{name: "debug"},
	{name: "debug|digest", setup: tblSetK("v"), args: []string{"DEBUG", "DIGEST"}, want: tblCheck(tblDigest)},
	{name: "debug|digest-value", setup: tblSetK("v"), args: []string{"DEBUG", "DIGEST-VALUE", "k"}, want: tblCheck(func(v any) string {
		if a, ok := v.([]any); !ok || len(a) != 1 {
			return "want one digest"
		}
		return tblDigest(v.([]any)[0])
	})},
	{name: "debug|help", args: []string{"DEBUG", "HELP"}, want: tblHelp("DEBUG")},
	{name: "lavik.digest", setup: tblSetK("v"), args: []string{"LAVIK.DIGEST"}, want: tblCheck(tblDigest)},

	// replication
	{name: "role", args: []string{"ROLE"}, want: tblArrayHead("master")},
	{name: "wait", setup: tblSetK("v"), args: []string{"WAIT", "0", "0"}, want: 0},
	// scripting
	{name: "eval", setup: tblSetK("v"), args: []string{"EVAL", "return redis.call('get', KEYS[1])", "1", "k"}, keys: []string{"k"}, want: "v"},
	{name: "eval_ro", setup: tblSetK("v"), args: []string{"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"}, keys: []string{"k"}, want: "v"},
	{name: "evalsha", args: []string{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "1", "k"}, keys: []string{"k"}, want: tblErr("NOSCRIPT No matching script. Please use EVAL.")},
	{name: "evalsha_ro", args: []string{"EVALSHA_RO", "ffffffffffffffffffffffffffffffffffffffff", "1", "k"}, keys: []string{"k"}, want: tblErr("NOSCRIPT No matching script. Please use EVAL.")},
	{name: "fcall", args: []string{"FCALL", "nosuchfn", "1", "k"}, keys: []string{"k"}, want: tblErr("ERR Function not found")},
	{name: "fcall_ro", args: []string{"FCALL_RO", "nosuchfn", "1", "k"}, keys: []string{"k"}, want: tblErr("ERR Function not found")},
	{name: "script"},
	{name: "script|load", args: []string{"SCRIPT", "LOAD", "return 1"}, want: "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"},
	{name: "script|exists", args: []string{"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}, want: tblCheck(tblAnyArray)},
	{name: "script|flush", args: []string{"SCRIPT", "FLUSH"}, want: tblOK},
	{name: "script|kill", args: []string{"SCRIPT", "KILL"}, want: tblErr("NOTBUSY No scripts in execution right now.")},
	{name: "function"},
	{name: "function|load", args: []string{"FUNCTION", "LOAD", "#!lua name=tbllib\nredis.register_function('tblf', function() return 1 end)"}, want: "tbllib"},
	{name: "function|list", args: []string{"FUNCTION", "LIST", "LIBRARYNAME", "nosuch*"}, want: []any{}},
	{name: "function|delete", args: []string{"FUNCTION", "DELETE", "nosuchlib"}, want: tblErr("ERR Library not found")},
	{name: "function|flush", args: []string{"FUNCTION", "FLUSH"}, want: tblOK},
	{name: "function|dump", args: []string{"FUNCTION", "DUMP"}, want: tblCheck(func(v any) string {
		if _, ok := v.(string); !ok {
			return "want a bulk string payload"
		}
		return ""
	})},
	{name: "function|restore", args: []string{"FUNCTION", "RESTORE", "not a payload"}, want: tblCheck(func(v any) string {
		if !tblIsErr(v) {
			return "want an error for a payload that is none"
		}
		return ""
	})},
	{name: "function|stats", args: []string{"FUNCTION", "STATS"}, want: tblArrayMin(4)},
	{name: "function|kill", args: []string{"FUNCTION", "KILL"}, want: tblErr("NOTBUSY No scripts in execution right now.")},
	{name: "replconf", args: []string{"REPLCONF", "listening-port", "6380"}, want: tblOK},
	{name: "replicaof", args: []string{"REPLICAOF", "NO", "ONE"}, want: tblOK},
	{name: "slaveof", args: []string{"SLAVEOF", "NO", "ONE"}, want: tblOK},
	{name: "lavik.resync", args: []string{"LAVIK.RESYNC"}, want: tblErr("ERR this node follows no primary: LAVIK.RESYNC rebuilds a follower")},
	// The connection becomes a replication link: the first reply says how it starts.
	{name: "psync", setup: tblSetK("v"), args: []string{"PSYNC", "?", "-1"}, want: tblCheck(func(v any) string {
		if s, ok := v.(tblSimple); !ok || !strings.HasPrefix(string(s), "FULLRESYNC ") {
			return "want +FULLRESYNC <replid> <offset>"
		}
		return ""
	})},
	// The whole keyspace as the full resync's payload: Lavik's snapshot (or Redis's RDB file).
	{name: "sync", setup: tblSetK("v"), args: []string{"SYNC"}, want: tblCheck(func(v any) string {
		if s, ok := v.(string); !ok || !strings.HasPrefix(s, "LVKSNAP") && !strings.HasPrefix(s, "REDIS") {
			return "want a snapshot payload"
		}
		return ""
	})},
}

var (
	tblK      = []string{"k"}
	tblAB     = []string{"a", "b"}
	tblSetA   = [][]string{{"SET", "a", "1"}}
	tblSetAB  = [][]string{{"SET", "a", "1"}, {"SET", "b", "2"}}
	tblSetABC = [][]string{{"SET", "a", "1"}, {"SET", "b", "2"}, {"SET", "c", "3"}}
	tblSetKEx = [][]string{{"SET", "k", "v", "EX", "100"}}
	// tblTwoDBs puts a in db 0 and b in db 1, so FLUSHDB and FLUSHALL can be told apart.
	tblTwoDBs = [][]string{{"SET", "a", "1"}, {"SELECT", "1"}, {"SET", "b", "2"}, {"SELECT", "0"}}
)

func tblSetK(v string) [][]string { return [][]string{{"SET", "k", v}} }

// tblZSetK makes k the sorted set a=1, b=2.
var tblZSetK = [][]string{{"ZADD", "k", "1", "a", "2", "b"}}

// tblStreamK makes k the stream 1-1 a=1, 2-1 b=2.
var tblStreamK = [][]string{{"XADD", "k", "1-1", "a", "1"}, {"XADD", "k", "2-1", "b", "2"}}

// tblGroupK makes k the stream of tblStreamK with a group g, whose consumer c was delivered
// 1-1 and has not acknowledged it.
var tblGroupK = append(tblStreamK[:len(tblStreamK):len(tblStreamK)], []string{"XGROUP", "CREATE", "k", "g", "0"},
	[]string{"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "k", ">"})

// tblListK makes k the list a, b.
var tblListK = [][]string{{"RPUSH", "k", "a", "b"}}

// tblSetS makes k a set of a and b.
var tblSetS = [][]string{{"SADD", "k", "a", "b"}}

// tblHashK makes k a hash of a=1, b=2.
var tblHashK = [][]string{{"HSET", "k", "a", "1", "b", "2"}}

func TestCommandTable(t *testing.T) {
	s := harness.Start(t)
	ctl := tblDial(t, s.Addr)

	// Everything COMMAND reports, subcommands included, by full name.
	infos := map[string]*tblInfo{}
	all, ok := ctl.do("COMMAND").([]any)
	if !ok {
		t.Fatalf("COMMAND: not an array")
	}
	for _, v := range all {
		info, err := tblParseInfo(v)
		if err != nil {
			t.Fatalf("COMMAND: %v", err)
		}
		for _, i := range append([]*tblInfo{info}, info.subs...) {
			if infos[i.name] != nil {
				t.Errorf("COMMAND reports %s twice", i.name)
			}
			infos[i.name] = i
		}
	}
	if got := ctl.do("COMMAND", "COUNT"); got != int64(len(all)) {
		t.Errorf("COMMAND COUNT = %s; COMMAND reports %d commands", tblShow(got), len(all))
	}

	listed := map[string]bool{}
	list, _ := ctl.do("COMMAND", "LIST").([]any)
	for _, v := range list {
		name, _ := v.(string)
		listed[name] = true
		if infos[name] == nil {
			t.Errorf("COMMAND LIST has %q, which COMMAND does not report", name)
		}
	}
	for name := range infos {
		if !listed[name] {
			t.Errorf("COMMAND reports %s, which COMMAND LIST does not have", name)
		}
	}
	var missing []string
	for _, ref := range tblRequired {
		if !listed[ref.name] {
			missing = append(missing, ref.name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("COMMAND LIST lacks required commands: %s", strings.Join(missing, " "))
	}

	// The walk: everything the server lists, or against redis-server the required ones.
	var walk []string
	if harness.IsRedis() {
		for _, ref := range tblRequired {
			if listed[ref.name] {
				walk = append(walk, ref.name)
			}
		}
	} else {
		for name := range listed {
			walk = append(walk, name)
		}
	}
	sort.Strings(walk)
	t.Logf("walking %d commands and subcommands", len(walk))

	samples := map[string]*tblSample{}
	for i := range tblSamples {
		sm := &tblSamples[i]
		if samples[sm.name] != nil {
			t.Fatalf("two samples for %s", sm.name)
		}
		samples[sm.name] = sm
		if !harness.IsRedis() && !listed[sm.name] {
			t.Errorf("sample for %s, which the server does not list", sm.name)
		}
	}
	missing = nil
	for _, name := range walk {
		if samples[name] == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("no sample invocation in tblSamples for %d listed commands: %s", len(missing), strings.Join(missing, " "))
	}

	t.Run("Arity", func(t *testing.T) {
		c := tblDial(t, s.Addr)
		for _, name := range walk {
			info := infos[name]
			head := strings.Split(strings.ToUpper(name), "|")
			min := int(info.arity)
			if min < 0 {
				min = -min
			}
			var tries [][]string
			// One argument short; skipped when that would leave out the (sub)command name
			// itself, e.g. arity -1, where the bare command is legitimately valid.
			if min-1 >= len(head) {
				tries = append(tries, tblFill(head, min-1))
			}
			if info.arity > 0 {
				tries = append(tries, tblFill(head, min+1))
			}
			want := tblErr("ERR wrong number of arguments for '" + name + "' command")
			if name == "exec" {
				// A refused EXEC discards the transaction and says why (Redis 7).
				want = tblErr("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command")
			}
			for _, args := range tries {
				if got := c.do(args...); got != want {
					t.Errorf("%s (arity %d): got %s, want %s", tblFmt(args), info.arity, tblShow(got), tblShow(want))
				}
			}
		}
	})

	// Each subtest dials its own connections: a connection fails the test it was dialled for.
	t.Run("CommandInfo", func(t *testing.T) {
		ctl := tblDial(t, s.Addr)
		for _, name := range walk {
			want := infos[name]
			if slices.Contains(want.flags, "write") && slices.Contains(want.flags, "readonly") {
				t.Errorf("%s: flagged both write and readonly", name)
			}
			if want.first == 0 && (want.last != 0 || want.step != 0) || want.first > 0 && want.step <= 0 {
				t.Errorf("%s: inconsistent key spec first %d last %d step %d", name, want.first, want.last, want.step)
			}
			r, ok := ctl.do("COMMAND", "INFO", strings.ToUpper(name)).([]any)
			if !ok || len(r) != 1 {
				t.Errorf("COMMAND INFO %s: got %s, want one entry", name, tblShow(r))
				continue
			}
			got, err := tblParseInfo(r[0])
			if err != nil {
				t.Errorf("COMMAND INFO %s: %v", name, err)
				continue
			}
			if g, w := got.String(), want.String(); g != w {
				t.Errorf("COMMAND INFO %s = %s; COMMAND says %s", name, g, w)
			}
		}
		if got := ctl.do("COMMAND", "INFO", "nosuchcommand"); !reflect.DeepEqual(got, []any{nil}) {
			t.Errorf("COMMAND INFO nosuchcommand = %s, want [(nil)]", tblShow(got))
		}
	})

	// The behaviour checks below hold whatever arity the table declares; this pins the
	// declared arity and key positions of the required commands to Redis's.
	t.Run("MatchesRedis", func(t *testing.T) {
		for _, ref := range tblRequired {
			info := infos[ref.name]
			if info == nil {
				continue // reported as missing above
			}
			got := tblRef{info.name, info.arity, info.first, info.last, info.step}
			if got != ref {
				t.Errorf("%s: arity %d, keys %d %d %d; Redis 7.0 has arity %d, keys %d %d %d", ref.name,
					got.arity, got.first, got.last, got.step, ref.arity, ref.first, ref.last, ref.step)
			}
		}
	})

	t.Run("CommandDocs", func(t *testing.T) {
		ctl := tblDial(t, s.Addr)
		for _, name := range walk {
			r, ok := ctl.do("COMMAND", "DOCS", name).([]any)
			if !ok || len(r) != 2 || r[0] != name {
				t.Errorf("COMMAND DOCS %s: got %s", name, tblShow(r))
				continue
			}
			doc := tblPairs(r[1])
			for _, field := range []string{"summary", "since", "group", "complexity"} {
				if field == "complexity" && (name == "monitor" || name == "psync" || name == "sync") {
					continue // redis-server 7.0 documents none, and COMMAND DOCS gives Redis's
				}
				if v, _ := doc[field].(string); v == "" {
					t.Errorf("COMMAND DOCS %s: no %s", name, field)
				}
			}
		}
	})

	t.Run("GetKeys", func(t *testing.T) {
		ctl := tblDial(t, s.Addr)
		gk := infos["command|getkeys"]
		if gk == nil {
			t.Fatal("COMMAND does not report command|getkeys")
		}
		for _, name := range walk {
			sm, info := samples[name], infos[name]
			if sm == nil || sm.args == nil {
				continue
			}
			// A command with movable keys (SINTERCARD) reports first key 0 and finds its keys
			// from its arguments.
			movable := slices.Contains(info.flags, "movablekeys")
			if (info.first > 0 || movable) != (sm.keys != nil) {
				t.Errorf("%s: COMMAND says first key %d, but the sample %s names keys %q",
					name, info.first, tblFmt(sm.args), sm.keys)
			}
			var want any = tblErr("ERR The command has no key arguments")
			if sm.keys != nil {
				want = tblStrings(sm.keys)
			}
			args := append([]string{"COMMAND", "GETKEYS"}, sm.args...)
			if !tblArityOK(gk.arity, len(args)) {
				// Too short for COMMAND GETKEYS itself (Redis 7.0: arity -4, so a
				// one-word command cannot be asked about).
				want = tblErr("ERR wrong number of arguments for 'command|getkeys' command")
			}
			if got := ctl.do(args...); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: got %s, want %s", tblFmt(args), tblShow(got), tblShow(want))
			}
			// An invocation the command's own arity refuses has no key positions.
			if sm.keys != nil && info.arity > 0 {
				args = append(args, "x")
				want := tblErr("ERR Invalid number of arguments specified for command")
				if got := ctl.do(args...); got != want {
					t.Errorf("%s: got %s, want %s", tblFmt(args), tblShow(got), tblShow(want))
				}
			}
		}
	})

	t.Run("Behaviour", func(t *testing.T) {
		for _, name := range walk {
			sm, info := samples[name], infos[name]
			if sm == nil {
				continue
			}
			if sm.args == nil {
				// A container is only ever run through its subcommands, walked on their own.
				if len(info.subs) == 0 {
					t.Errorf("%s: the sample has no invocation, but COMMAND reports no subcommands", name)
				}
				continue
			}
			if name == "shutdown" {
				continue // run by the Shutdown subtest, after everything else
			}
			t.Run(name, func(t *testing.T) { tblRunSample(t, s.Addr, sm, info) })
		}
	})

	t.Run("NoAuth", func(t *testing.T) {
		sp := harness.Start(t, "--requirepass", "pw")
		admin := tblDial(t, sp.Addr)
		tblMustOK(t, admin, "AUTH", "pw")
		// Keys the samples name, so that a write that slipped through would show.
		for _, kv := range [][]string{{"k", "10"}, {"a", "1"}, {"b", "2"}, {"c", "3"}} {
			tblMustOK(t, admin, "SET", kv[0], kv[1])
		}
		before := tblSnapshot(t, admin)
		anon := tblDial(t, sp.Addr)
		order := slices.DeleteFunc(slices.Clone(walk), func(n string) bool { return n == "shutdown" })
		if slices.Contains(walk, "shutdown") {
			order = append(order, "shutdown") // last, in case the server wrongly obeys it
		}
		for _, name := range order {
			sm, info := samples[name], infos[name]
			if sm == nil || sm.args == nil {
				continue // a container: its subcommands are walked
			}
			noAuth := slices.Contains(info.flags, "no_auth")
			if noAuth != (sm.authArgs != nil) {
				t.Errorf("%s: no_auth flag is %v but the sample's authArgs is %q", name, noAuth, sm.authArgs)
			}
			if !noAuth {
				want := tblErr("NOAUTH Authentication required.")
				if name == "exec" {
					want = tblErr("EXECABORT Transaction discarded because of: NOAUTH Authentication required.")
				}
				if got := anon.do(sm.args...); got != want {
					t.Errorf("%s before AUTH: got %s, want %s", tblFmt(sm.args), tblShow(got), tblShow(want))
				}
				continue
			}
			if sm.authArgs == nil {
				continue
			}
			c := tblDial(t, sp.Addr) // these authenticate or close the connection
			if got := c.do(sm.authArgs...); tblIsErr(got) {
				t.Errorf("%s before AUTH: got %s, want success", tblFmt(sm.authArgs), tblShow(got))
			}
			c.nc.Close()
		}
		if !sp.Running() {
			t.Fatalf("the server exited during the walk:\n%s", sp.Log())
		}
		after := tblSnapshot(t, admin)
		if d := tblDiff(before, after); len(d) > 0 {
			t.Errorf("commands refused with NOAUTH changed keys %q", d)
		}
	})

	// Shutdown runs last: it stops the server.
	t.Run("Shutdown", func(t *testing.T) {
		sm := samples["shutdown"]
		if sm == nil || !slices.Contains(walk, "shutdown") {
			t.Skip("no shutdown command listed")
		}
		c := tblDial(t, s.Addr)
		c.send(sm.args...)
		if got, err := c.read(); err == nil {
			t.Errorf("%s: got reply %s, want the connection closed", tblFmt(sm.args), tblShow(got))
		}
		if !s.WaitExit(60 * time.Second) {
			t.Errorf("%s: the server is still running after 60s", tblFmt(sm.args))
		}
	})
}

// tblRunSample runs one sample on a fresh connection and checks its reply, the keys it changed
// and that these agree with its write and readonly flags.
func tblRunSample(t *testing.T, addr string, sm *tblSample, info *tblInfo) {
	t.Helper()
	ctl := tblDial(t, addr)
	defer ctl.nc.Close()
	tblMustOK(t, ctl, "FLUSHALL")
	c := tblDial(t, addr)
	defer c.nc.Close()
	for _, args := range sm.setup {
		if got := c.do(args...); tblIsErr(got) {
			t.Fatalf("%s setup %s: %s", sm.name, tblFmt(args), tblShow(got))
		}
	}
	before := tblSnapshot(t, ctl)
	got := c.do(sm.args...)
	if msg := tblMatch(sm.want, got); msg != "" {
		t.Errorf("%s: %s", tblFmt(sm.args), msg)
	}
	if sm.closes {
		if r, err := c.read(); err == nil {
			t.Errorf("%s: got %s after the reply, want the connection closed", tblFmt(sm.args), tblShow(r))
		}
	}
	changed := tblDiff(before, tblSnapshot(t, ctl))
	want := slices.Sorted(slices.Values(sm.changes))
	if !slices.Equal(changed, want) {
		t.Errorf("%s changed keys %q, want %q", tblFmt(sm.args), changed, want)
	}

	write := slices.Contains(info.flags, "write")
	switch {
	case write && len(sm.changes) == 0 && !strings.HasPrefix(sm.name, "function|"):
		// FUNCTION LOAD, DELETE and FLUSH are write commands in Redis that change the
		// libraries, not keys.
		t.Errorf("%s is flagged write, but its sample changes no key: give it one that does", sm.name)
	case !write && len(sm.changes) > 0:
		t.Errorf("%s changes keys %q but is not flagged write (flags %q)", sm.name, sm.changes, info.flags)
	}
	if slices.Contains(info.flags, "readonly") && len(changed) > 0 {
		t.Errorf("%s is flagged readonly but changed %q", sm.name, changed)
	}
	if sm.keys != nil {
		for _, k := range sm.changes {
			if _, key, ok := strings.Cut(k, ":"); ok {
				k = key
			}
			if !slices.Contains(sm.keys, k) {
				t.Errorf("%s: the sample changes %q, which is not among its keys %q", sm.name, k, sm.keys)
			}
		}
	}
}

// tblInfo is the part of a COMMAND entry this test compares.
type tblInfo struct {
	name              string
	arity             int64
	flags             []string
	first, last, step int64
	subs              []*tblInfo
}

func (i *tblInfo) String() string {
	return fmt.Sprintf("{%s arity %d flags %q keys %d %d %d}", i.name, i.arity, i.flags, i.first, i.last, i.step)
}

func tblParseInfo(v any) (*tblInfo, error) {
	a, ok := v.([]any)
	if !ok || len(a) < 6 {
		return nil, fmt.Errorf("entry %s is not an array of at least 6", tblShow(v))
	}
	i := &tblInfo{}
	var ok1, ok2, ok3, ok4, ok5 bool
	i.name, ok1 = a[0].(string)
	i.arity, ok2 = a[1].(int64)
	i.first, ok3 = a[3].(int64)
	i.last, ok4 = a[4].(int64)
	i.step, ok5 = a[5].(int64)
	flags, ok6 := a[2].([]any)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
		return nil, fmt.Errorf("malformed entry %s", tblShow(v))
	}
	for _, f := range flags {
		switch f := f.(type) {
		case tblSimple:
			i.flags = append(i.flags, string(f))
		case string:
			i.flags = append(i.flags, f)
		default:
			return nil, fmt.Errorf("%s: flag %s is not a string", i.name, tblShow(f))
		}
	}
	if len(a) >= 10 {
		subs, _ := a[9].([]any)
		for _, s := range subs {
			sub, err := tblParseInfo(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", i.name, err)
			}
			i.subs = append(i.subs, sub)
		}
	}
	return i, nil
}

// tblSnapshot returns every key of databases 0 and 1 ("1:" prefixed) with its value and
// absolute expiry, read with SCAN, GET and PEXPIRETIME, none of which changes anything.
func tblSnapshot(t testing.TB, c *tblConn) map[string]string {
	t.Helper()
	out := map[string]string{}
	for db := 0; db <= 1; db++ {
		tblMustOK(t, c, "SELECT", strconv.Itoa(db))
		cursor := "0"
		for {
			r, ok := c.do("SCAN", cursor, "COUNT", "1000").([]any)
			if !ok || len(r) != 2 {
				t.Fatalf("SCAN %s: got %s", cursor, tblShow(r))
			}
			keys, _ := r[1].([]any)
			for _, k := range keys {
				key, _ := k.(string)
				name := key
				if db == 1 {
					name = "1:" + key
				}
				out[name] = tblValue(c, key) + " expires " + tblShow(c.do("PEXPIRETIME", key))
			}
			cursor, _ = r[0].(string)
			if cursor == "0" || cursor == "" {
				break
			}
		}
	}
	tblMustOK(t, c, "SELECT", "0")
	return out
}

// tblValue shows key's value whatever its type: the fields of a hash and the members of a set
// sorted, so that two snapshots of the same value compare equal.
func tblValue(c *tblConn, key string) string {
	typ := tblShow(c.do("TYPE", key))
	var items []any
	switch {
	case strings.Contains(typ, "hash"):
		items, _ = c.do("HGETALL", key).([]any)
		pairs := make([]string, 0, len(items)/2)
		for i := 0; i+1 < len(items); i += 2 {
			pairs = append(pairs, tblShow(items[i])+"="+tblShow(items[i+1]))
		}
		sort.Strings(pairs)
		return typ + " " + strings.Join(pairs, ",")
	case strings.Contains(typ, "stream"):
		// XINFO STREAM FULL shows what XRANGE does not: the last id, the counters, the groups.
		// fmt, not tblShow, which shortens long arrays.
		return typ + " " + fmt.Sprint(c.do("XRANGE", key, "-", "+")) + " " + fmt.Sprint(c.do("XINFO", "STREAM", key, "FULL", "COUNT", "0"))
	case strings.Contains(typ, "zset"):
		items, _ = c.do("ZRANGE", key, "0", "-1", "WITHSCORES").([]any)
		return typ + " " + tblShow(items)
	case strings.Contains(typ, "list"):
		items, _ = c.do("LRANGE", key, "0", "-1").([]any)
		return typ + " " + tblShow(items)
	case strings.Contains(typ, "set"):
		items, _ = c.do("SMEMBERS", key).([]any)
		members := make([]string, 0, len(items))
		for _, m := range items {
			members = append(members, tblShow(m))
		}
		sort.Strings(members)
		return typ + " " + strings.Join(members, ",")
	}
	return tblShow(c.do("GET", key))
}

// tblDiff returns, sorted, the keys that differ between two snapshots.
func tblDiff(a, b map[string]string) []string {
	out := []string{}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// tblArityOK reports whether argc arguments, the name included, fit a Redis arity.
func tblArityOK(arity int64, argc int) bool {
	if arity > 0 {
		return int64(argc) == arity
	}
	return int64(argc) >= -arity
}

// tblFill returns head followed by filler arguments up to n arguments in all.
func tblFill(head []string, n int) []string {
	out := slices.Clone(head)
	for len(out) < n {
		out = append(out, "x")
	}
	return out
}

// Reply checks.

type (
	tblSimple string           // a +status reply
	tblErr    string           // a -error reply
	tblCheck  func(any) string // "" when the reply is right, else what is wrong
)

var tblOK = tblSimple("OK")

func tblIsErr(v any) bool { _, ok := v.(tblErr); return ok }

func tblMatch(want, got any) string {
	switch w := want.(type) {
	case tblCheck:
		if msg := w(got); msg != "" {
			return fmt.Sprintf("got %s: %s", tblShow(got), msg)
		}
		return ""
	case int:
		want = int64(w)
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Sprintf("got %s, want %s", tblShow(got), tblShow(want))
	}
	return ""
}

// tblWantErr wants an error reply (a sample whose realistic use needs state the table does not
// set up: tracking mode, latency samples, an LFU policy).
func tblWantErr(v any) string {
	if !tblIsErr(v) {
		return "want an error"
	}
	return ""
}

// tblNonEmpty wants a non-empty bulk or verbatim string.
func tblNonEmpty(v any) string {
	if s, ok := v.(string); !ok || s == "" {
		return "want a non-empty string"
	}
	return ""
}

func tblIntIn(lo, hi int64) tblCheck {
	return func(v any) string {
		if n, ok := v.(int64); !ok || n < lo || n > hi {
			return fmt.Sprintf("want an integer in [%d, %d]", lo, hi)
		}
		return ""
	}
}

// tblDigest wants a keyspace digest of something: forty hex digits, not all zero.
func tblDigest(v any) string {
	s, ok := v.(tblSimple)
	if _, err := hex.DecodeString(string(s)); !ok || len(s) != 40 || err != nil || s == tblSimple(strings.Repeat("0", 40)) {
		return "want a status of forty hex digits, not all zero"
	}
	return ""
}

func tblContains(sub string) tblCheck {
	return func(v any) string {
		if s, ok := v.(string); !ok || !strings.Contains(s, sub) {
			return fmt.Sprintf("want a bulk string containing %q", sub)
		}
		return ""
	}
}

func tblArrayHead(first string) tblCheck {
	return func(v any) string {
		if a, ok := v.([]any); !ok || len(a) == 0 || a[0] != first {
			return fmt.Sprintf("want an array starting with %q", first)
		}
		return ""
	}
}

func tblArrayMin(n int) tblCheck {
	return func(v any) string {
		if a, ok := v.([]any); !ok || len(a) < n {
			return fmt.Sprintf("want an array of at least %d", n)
		}
		return ""
	}
}

func tblHas(s string) tblCheck {
	return func(v any) string {
		if a, ok := v.([]any); !ok || !slices.Contains(a, any(s)) {
			return fmt.Sprintf("want an array holding %q", s)
		}
		return ""
	}
}

// tblSetOf wants an array of exactly these strings in any order.
func tblSetOf(want ...string) tblCheck {
	return func(v any) string {
		a, ok := v.([]any)
		if !ok {
			return "want an array"
		}
		var got []string
		for _, e := range a {
			s, _ := e.(string)
			got = append(got, s)
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			return fmt.Sprintf("want the strings %q in any order", want)
		}
		return ""
	}
}

// tblScanOf wants a complete one-call SCAN reply holding exactly these keys.
func tblScanOf(keys ...string) tblCheck {
	return func(v any) string {
		a, ok := v.([]any)
		if !ok || len(a) != 2 || a[0] != "0" {
			return "want [\"0\", keys]: two keys with COUNT 100 fit in one call"
		}
		return tblSetOf(keys...)(a[1])
	}
}

// tblHelp wants a container's HELP: status lines, the first naming the container.
func tblHelp(container string) tblCheck {
	return func(v any) string {
		a, ok := v.([]any)
		if !ok || len(a) < 3 {
			return "want an array of help lines"
		}
		for _, l := range a {
			if _, ok := l.(tblSimple); !ok {
				return "want status lines"
			}
		}
		if !strings.HasPrefix(string(a[0].(tblSimple)), container+" ") {
			return fmt.Sprintf("want the first line to start with %q", container)
		}
		return ""
	}
}

func tblTime(v any) string {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return "want [seconds, microseconds]"
	}
	sec, err1 := strconv.ParseInt(fmt.Sprint(a[0]), 10, 64)
	usec, err2 := strconv.ParseInt(fmt.Sprint(a[1]), 10, 64)
	if err1 != nil || err2 != nil || usec < 0 || usec >= 1e6 {
		return "want two decimal bulk strings, microseconds below 1e6"
	}
	if d := time.Since(time.Unix(sec, 0)); d < -time.Hour || d > time.Hour {
		return "want the current time"
	}
	return ""
}

func tblCommandInfoOf(name string) tblCheck {
	return func(v any) string {
		a, ok := v.([]any)
		if !ok || len(a) != 1 {
			return "want one entry"
		}
		if info, err := tblParseInfo(a[0]); err != nil || info.name != name {
			return fmt.Sprintf("want the entry of %s", name)
		}
		return ""
	}
}

func tblStrings(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// tblPairs reads a RESP2 flattened map.
func tblPairs(v any) map[string]any {
	a, _ := v.([]any)
	out := map[string]any{}
	for i := 0; i+1 < len(a); i += 2 {
		if k, ok := a[i].(string); ok {
			out[k] = a[i+1]
		}
	}
	return out
}

func tblShow(v any) string {
	switch v := v.(type) {
	case nil:
		return "(nil)"
	case tblSimple:
		return "+" + string(v)
	case tblErr:
		return "-" + string(v)
	case string:
		if len(v) > 80 {
			return strconv.Quote(v[:80]) + "..."
		}
		return strconv.Quote(v)
	case int64:
		return ":" + strconv.FormatInt(v, 10)
	case int:
		return ":" + strconv.Itoa(v)
	case []any:
		parts := make([]string, 0, len(v))
		for i, e := range v {
			if i == 8 {
				parts = append(parts, fmt.Sprintf("... (%d in all)", len(v)))
				break
			}
			parts = append(parts, tblShow(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case tblCheck:
		return "(check)"
	}
	return fmt.Sprintf("%#v", v)
}

func tblFmt(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if a == "" || strings.ContainsAny(a, " \"\r\n") {
			q[i] = strconv.Quote(a)
		}
	}
	return strings.Join(q, " ")
}

// tblConn is a bare RESP2 connection.
type tblConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func tblDial(t testing.TB, addr string) *tblConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &tblConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *tblConn) send(args ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c.nc, b.String()); err != nil {
		c.t.Fatalf("send %s: %v", tblFmt(args), err)
	}
}

func (c *tblConn) read() (any, error) {
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	return tblReadReply(c.br)
}

// do sends one command and returns its reply, failing the test on an I/O error.
func (c *tblConn) do(args ...string) any {
	c.t.Helper()
	c.send(args...)
	r, err := c.read()
	if err != nil {
		c.t.Fatalf("%s: %v", tblFmt(args), err)
	}
	return r
}

func tblMustOK(t testing.TB, c *tblConn, args ...string) {
	t.Helper()
	if got := c.do(args...); got != tblOK {
		t.Fatalf("%s: got %s, want +OK", tblFmt(args), tblShow(got))
	}
}

func tblReadReply(br *bufio.Reader) (any, error) {
	line, err := br.ReadString('\n')
	for err == nil && line == "\n" {
		// A primary preparing a full resync's payload sends newlines to keep the link alive.
		line, err = br.ReadString('\n')
	}
	if err != nil {
		return nil, err
	}
	if mark, ok := strings.CutPrefix(line, "$EOF:"); ok && len(mark) == 42 {
		// A streamed payload (SYNC): its bytes up to the 40-byte mark that ends it.
		mark = mark[:40]
		var payload []byte
		for !strings.HasSuffix(string(payload), mark) {
			b, err := br.ReadByte()
			if err != nil {
				return nil, err
			}
			payload = append(payload, b)
		}
		return string(payload[:len(payload)-40]), nil
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("malformed reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return tblSimple(body), nil
	case '-':
		return tblErr(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, fmt.Errorf("bad bulk length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, fmt.Errorf("bad array length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = tblReadReply(br); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// tblArrayLen wants an array of n elements.
func tblArrayLen(n int) tblCheck {
	return func(v any) string {
		if a, ok := v.([]any); !ok || len(a) != n {
			return fmt.Sprintf("want an array of %d elements", n)
		}
		return ""
	}
}

// tblAnyArray accepts any array reply (SCRIPT EXISTS depends on what ran before).
func tblAnyArray(v any) string {
	if _, ok := v.([]any); !ok {
		return "not an array"
	}
	return ""
}
