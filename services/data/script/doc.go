// Package script is lavik-data's Lua engine: EVAL scripts and FUNCTION libraries, with Redis
// 7.0's semantics, on github.com/yuin/gopher-lua (Lua 5.1, the language Redis embeds).
//
// One Engine per server owns one Lua state. Scripts are compiled once and cached by the SHA1
// of their body (SCRIPT LOAD, EVALSHA); SCRIPT FLUSH drops them. A script's environment is a
// proxy of the globals table: reading a name that does not exist and assigning any global
// raise Redis's errors, so nothing leaks from one script to the next. The libraries are
// Redis's: base (without dofile, loadfile, require, print, setfenv, getfenv), string, table,
// math (math.random is Redis's lrand48, seeded once per engine, as Redis 7 does), and redis,
// cjson, cmsgpack, bit and struct, written in Go (cjson.go, cmsgpack.go, bit.go, structlib.go).
//
// The engine knows nothing of commands: redis.call and redis.pcall go to a Host, which runs the
// command and hands back its RESP reply, which the engine converts to Lua values (convert.go).
// The command layer (commands/scripting.go) runs a script inside keyspace.Exec, so that it is
// atomic with respect to every other client and its writes commit, and replicate, as one
// transaction of the commands it ran: a follower never runs Lua.
//
// Libraries are kept, dumped (FUNCTION DUMP) and handed to a follower by a full resync in one
// encoding, with a checksum (libset.go); a change publishes it at once (LibrariesPayload), so
// that readers which must not wait for a running script (a full resync holding the keyspace's
// locks, FUNCTION STATS) never take the engine. The engine is always taken before the
// keyspace's locks (commands.Ctx.lockEngine), also by an EXEC that runs a script.
//
// Time: while a script runs, Running is true and the event loops park the other clients'
// commands instead of running them (they would wait on the shard locks the script holds).
// Once the script has run longer than the busy threshold (busy-reply-threshold), Busy is true
// and those clients get -BUSY; SCRIPT KILL (FUNCTION KILL for a function) cancels the Lua state's context, which stops the
// script at its next instruction, unless the script has written (UNKILLABLE): its writes must
// commit whole or the keyspace would hold half a script.
package script
