package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Workload is an operation mix over one keyspace.
//
//   - get, set: every operation a GET or a SET of a string record.
//   - mixed: GET and SET in the ratio --ratio (1:1 by default).
//   - ycsb-a, ycsb-b: YCSB workloads A (50% reads, 50% updates) and B (95% reads) over hash
//     records of --fields fields of --field-size bytes. A read is HGETALL; an update replaces
//     the whole record: LAVIK.HREPLACE on Lavik, DEL + HSET inside MULTI/EXEC on Redis, so both
//     do the same atomic replace (--hash-update picks; see resolveHashUpdate).
type Workload struct {
	Name     string
	ReadFrac float64 // probability that an operation is the read
	Kind     recordKind
}

func (w Workload) readOp() opKind {
	if w.Kind == kindHash {
		return opHGetAll
	}
	return opGet
}

func (w Workload) writeOp() opKind {
	if w.Kind == kindHash {
		return opUpdate
	}
	return opSet
}

// workloadNames lists the workloads in the order the help text gives them.
var workloadNames = []string{"get", "set", "mixed", "ycsb-a", "ycsb-b"}

// parseWorkload resolves a workload name; ratio ("GETS:SETS") applies to mixed only.
func parseWorkload(name, ratio string) (Workload, error) {
	switch name {
	case "get":
		return Workload{Name: name, ReadFrac: 1}, nil
	case "set":
		return Workload{Name: name, ReadFrac: 0}, nil
	case "mixed":
		r, w, err := parseRatio(ratio)
		if err != nil {
			return Workload{}, err
		}
		return Workload{Name: name, ReadFrac: float64(r) / float64(r+w)}, nil
	case "ycsb-a":
		return Workload{Name: name, ReadFrac: 0.5, Kind: kindHash}, nil
	case "ycsb-b":
		return Workload{Name: name, ReadFrac: 0.95, Kind: kindHash}, nil
	}
	return Workload{}, fmt.Errorf("workload %q: want one of %s", name, strings.Join(workloadNames, ", "))
}

// parseRatio parses "GETS:SETS", e.g. "1:1" or "9:1".
func parseRatio(s string) (reads, writes int, err error) {
	a, b, ok := strings.Cut(s, ":")
	if ok {
		reads, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			writes, err = strconv.Atoi(strings.TrimSpace(b))
		}
	}
	if !ok || err != nil || reads < 0 || writes < 0 || reads+writes == 0 {
		return 0, 0, fmt.Errorf("--ratio %q: want GETS:SETS with non-negative integers, e.g. 1:1", s)
	}
	return reads, writes, nil
}

// Hash update methods.
const (
	updateHReplace = "hreplace" // LAVIK.HREPLACE key field value ...
	updateMulti    = "multi"    // MULTI, DEL key, HSET key field value ..., EXEC
	updateAuto     = "auto"
)

// resolveHashUpdate picks the update method for --hash-update auto: LAVIK.HREPLACE when the
// server knows the command, MULTI/DEL/HSET/EXEC otherwise. The probe writes and deletes one key
// outside the keyspace. The method used is printed with the results.
func resolveHashUpdate(addr, mode string) (string, error) {
	if mode != updateAuto {
		return mode, nil
	}
	probe := hashPrefix + "lavik-bench-probe"
	p, err := adminDo(addr, dialTimeout, "LAVIK.HREPLACE", probe, fieldName(0), "x")
	if err != nil {
		return "", err
	}
	if p.isError() {
		if isUnsupported(p.str) {
			return updateMulti, nil
		}
		return "", fmt.Errorf("probing LAVIK.HREPLACE: %s", p.str)
	}
	if _, err := adminDo(addr, dialTimeout, "DEL", probe); err != nil {
		return "", err
	}
	return updateHReplace, nil
}

// hashUpdateLabel describes an update method for reports.
func hashUpdateLabel(m string) string {
	switch m {
	case updateHReplace:
		return "LAVIK.HREPLACE"
	case updateMulti:
		return "MULTI DEL HSET EXEC"
	}
	return ""
}

// appendHashFields appends field/value pairs of version v of hash key k.
func (ks *Keyspace) appendHashFields(b []byte, k int, v uint32) []byte {
	for f := 0; f < ks.Fields; f++ {
		b = appendBulkString(b, fieldName(f))
		b = appendBulkHeader(b, ks.FieldSize)
		b = ks.appendField(b, k, v, f)
		b = append(b, '\r', '\n')
	}
	return b
}

// appendHSet appends HSET (or, with cmd, another command of the same shape) of a whole record.
func (ks *Keyspace) appendHSet(b []byte, cmd string, k int, v uint32) []byte {
	b = appendArrayHeader(b, 2+2*ks.Fields)
	b = appendBulkString(b, cmd)
	b = appendBulkKey(b, ks.Prefix, k)
	return ks.appendHashFields(b, k, v)
}

// appendSet appends SET of version v of string key k.
func (ks *Keyspace) appendSet(b []byte, k int, v uint32) []byte {
	b = append(b, "*3\r\n$3\r\nSET\r\n"...)
	b = appendBulkKey(b, ks.Prefix, k)
	b = appendBulkHeader(b, ks.valueSize(k, v))
	b = ks.appendValue(b, k, v)
	return append(b, '\r', '\n')
}

// checkHash verifies an HGETALL reply: every field present once, all from one version (an
// update replaces the record atomically, so a mix of versions is a torn write) within [lo, hi].
func (ks *Keyspace) checkHash(elems []reply, k int, lo, hi uint32, full bool) error {
	if len(elems) != 2*ks.Fields {
		return wrongValue("%s: %d fields returned, expected %d", keyString(ks.Prefix, k), len(elems)/2, ks.Fields)
	}
	seen := make([]bool, ks.Fields)
	var ver uint32
	for i := 0; i < len(elems); i += 2 {
		name, val := elems[i], elems[i+1]
		if name.kind != '$' || val.kind != '$' || name.null || val.null {
			return wrongValue("%s: HGETALL element is not a bulk string", keyString(ks.Prefix, k))
		}
		num, ok := strings.CutPrefix(name.str, "field")
		f, err := strconv.Atoi(num)
		if !ok || err != nil || f < 0 || f >= ks.Fields || seen[f] {
			return wrongValue("%s: unexpected or repeated field %q", keyString(ks.Prefix, k), name.str)
		}
		seen[f] = true
		v, err := ks.checkField([]byte(val.str), k, f, full)
		if err != nil {
			return err
		}
		if i == 0 {
			ver = v
		} else if v != ver {
			return wrongValue("%s: fields of versions %d and %d in one record (torn update)", keyString(ks.Prefix, k), ver, v)
		}
	}
	if ver < lo || ver > hi {
		return wrongValue("%s: version %d returned, expected %d..%d", keyString(ks.Prefix, k), ver, lo, hi)
	}
	return nil
}

// classifyErrorReply turns an error reply into an error kind.
func classifyErrorReply(msg string) errKind {
	if isUnsupported(msg) {
		return errUnsupported
	}
	return errReply
}

// fatalKind is the error kind of a connection-level failure.
func fatalKind(err error) errKind {
	if errors.Is(err, errProtocol) {
		return errProto
	}
	return errIO
}
