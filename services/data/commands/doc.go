// Package commands is lavik-data's command table and the handlers of every command family
// (one file each: connection.go, server.go, strings.go, keys.go, ...).
//
// The table (table.go) is data: name, arity, typed flags, key positions, documentation and
// handler, the same shape as Redis's command table. The server's one dispatcher checks arity,
// authentication and write admission from it before a handler runs; COMMAND, COMMAND INFO,
// DOCS, LIST, COUNT and GETKEYS are generated from it; and a test walks it against real
// behaviour.
//
// Handlers parse their arguments into a typed struct first and report errors as values (see
// errors.go), translated to RESP error lines in one place.
package commands
