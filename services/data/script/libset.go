package script

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// A set of libraries as bytes: what the data directory's FUNCTIONS file holds, what a full
// resync hands a follower, and FUNCTION DUMP's payload (Redis's payload is RDB-encoded; Lavik
// reads only its own, and says so when given Redis's):
//
//	"lavik-functions 2\n"
//	per library:  len(code) "\n" code "\n"
//	end:          crc32c of every byte before it, 4 bytes little-endian
//
// Version 1, which older files hold, is the same without the checksum.

const (
	libsHeader1 = "lavik-functions 1\n"
	libsHeader2 = "lavik-functions 2\n"
)

var libsCRC = crc32.MakeTable(crc32.Castagnoli)

// Errors of DecodeLibraries.
var (
	// ErrLibsCorrupt is a payload that is not a whole, intact set of libraries.
	ErrLibsCorrupt = errors.New("ERR payload version or checksum are wrong")
	// ErrRedisDump is a payload of Redis's FUNCTION DUMP.
	ErrRedisDump = errors.New("ERR lavik: the payload is a Redis FUNCTION DUMP (RDB-encoded), which Lavik cannot read; " +
		"load the libraries' code with FUNCTION LOAD instead")
)

// EncodeLibraries encodes the code of libs.
func EncodeLibraries(libs []*Library) []byte {
	var b bytes.Buffer
	b.WriteString(libsHeader2)
	for _, l := range libs {
		fmt.Fprintf(&b, "%d\n%s\n", len(l.Code), l.Code)
	}
	return binary.LittleEndian.AppendUint32(b.Bytes(), crc32.Checksum(b.Bytes(), libsCRC))
}

// DecodeLibraries decodes what EncodeLibraries made (or a version 1 file): the libraries' code.
func DecodeLibraries(data []byte) ([]string, error) {
	var body []byte
	switch {
	case bytes.HasPrefix(data, []byte(libsHeader2)):
		if len(data) < len(libsHeader2)+4 {
			return nil, ErrLibsCorrupt
		}
		n := len(data) - 4
		if crc32.Checksum(data[:n], libsCRC) != binary.LittleEndian.Uint32(data[n:]) {
			return nil, ErrLibsCorrupt
		}
		body = data[len(libsHeader2):n]
	case bytes.HasPrefix(data, []byte(libsHeader1)):
		body = data[len(libsHeader1):]
	case isRedisDump(data):
		return nil, ErrRedisDump
	default:
		return nil, ErrLibsCorrupt
	}
	var codes []string
	for len(body) > 0 {
		line, after, ok := bytes.Cut(body, []byte("\n"))
		n, err := strconv.Atoi(string(line))
		if !ok || err != nil || n < 0 || n+1 > len(after) || after[n] != '\n' {
			return nil, ErrLibsCorrupt
		}
		codes = append(codes, string(after[:n]))
		body = after[n+1:]
	}
	return codes, nil
}

// isRedisDump reports whether data looks like Redis 7's FUNCTION DUMP: RDB function opcodes
// (245, or 246 of 7.0's release candidates), and a trailer of a 2-byte RDB version and an
// 8-byte CRC64.
func isRedisDump(data []byte) bool {
	return len(data) > 10 && (data[0] == 245 || data[0] == 246)
}

// Restore policies of RestoreLibrariesLocked (FUNCTION RESTORE's).
const (
	RestoreAppend  = "append"  // a library that exists already is an error
	RestoreReplace = "replace" // a library of the same name is replaced
	RestoreFlush   = "flush"   // every library goes first
)

// RestoreLibrariesLocked loads codes with policy: all of them, or, on the first error, none
// (the libraries stay as they were). The engine is held.
func (e *Engine) RestoreLibrariesLocked(codes []string, policy string) error {
	saved := &libraries{libs: cloneMap(e.lib.libs), funcs: cloneMap(e.lib.funcs)}
	if policy == RestoreFlush {
		e.FlushLibrariesLocked()
	}
	for _, code := range codes {
		if _, err := e.LoadLibraryLocked(code, policy != RestoreAppend); err != nil {
			e.lib = saved
			e.librariesChangedLocked()
			// FUNCTION RESTORE words a library that exists already without FUNCTION LOAD's quotes.
			if m := err.Error(); strings.HasPrefix(m, "ERR Library '") && strings.HasSuffix(m, "' already exists") {
				err = errors.New(strings.NewReplacer("'", "").Replace(m))
			}
			return err
		}
	}
	return nil
}

func cloneMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
