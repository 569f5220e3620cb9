// Package resp speaks the Redis serialization protocol: a server-side request Reader, a reply
// Writer for RESP2 and RESP3, and a client-side ReplyReader used by the benchmark tool,
// replication and tests.
//
// The request Reader sits on the server's hot path, so it is built to do no per-command
// allocation. It owns one read buffer per connection and parses commands in place: the
// arguments it returns are sub-slices of that buffer, and the [][]byte headers they live in come
// from a pool that is reset on every call. Inline arguments are unquoted in place as well,
// which is safe because unquoting never lengthens a token. The price is a short lifetime:
// whatever ReadCommands returns is valid only until the next call, and a caller that keeps an
// argument (as a key or value in the keyspace) must copy it. Copying inside the Reader instead
// was rejected because most arguments (command names, keys looked up and thrown away) are never
// kept.
//
// The Reader follows Redis 7's processInlineBuffer and processMultibulkBuffer closely, including
// their leniencies (the two bytes after a bulk or a length line are skipped, not checked to be
// CRLF) and their error texts, because clients and test suites match on those texts. Parsing is
// incremental: a command that arrives in many small reads is scanned once, not from its start
// on every read. The buffer grows only as bytes arrive, so a client that announces a 512 MiB
// argument and sends nothing costs one small buffer, and it is swapped for a small one once a
// large request has been consumed so one big SET does not pin memory for the life of the
// connection. Deliberate differences from Redis: a NUL byte is an ordinary byte everywhere
// (Redis's C string functions stop at it, which makes its behaviour on such input depend on
// where the NUL falls), and the pre-authentication limits on argument count and size are left
// to the server, which knows whether a client has authenticated.
//
// The Writer appends encoded replies to a byte slice that the connection flushes; it chooses
// the RESP2 or RESP3 form of maps, sets, pushes, nulls, doubles, booleans and verbatim strings
// from the protocol version the client negotiated with HELLO, so command handlers never branch
// on the version. Doubles are formatted like Redis 7.2 (its d2string and fpconv layout).
//
// The ReplyReader favours safety over speed: every byte slice in a returned Value is a fresh
// copy, so values may be kept across reads. Callers that only need to consume replies (a load
// generator counting errors) use Skip, which allocates nothing.
package resp
