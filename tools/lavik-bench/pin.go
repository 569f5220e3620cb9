package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Pinned cells measure per-core efficiency: each server on its own CPUs (one core: CPU 0) and
// the generator on others (CPU 1), so neither server can borrow the generator's core and the
// ratio of two pinned cells is work per core, not who wins a fight over two cores.
//
// How each side is pinned:
//   - lavik-data is started through `taskset -c CPUS` (util-linux). It must be pinned before
//     it starts: the Go runtime sizes GOMAXPROCS from the affinity mask at start-up, and
//     lavik-data runs one event loop per P. exec.Cmd cannot set an affinity before exec, and
//     pinning it afterwards would leave it with a loop per CPU of the machine on one core.
//   - redis-server is pinned while it runs (sched_setaffinity on every thread in
//     /proc/PID/task; threads it creates later inherit the mask), so it keeps the data it
//     loaded; nothing in it is sized by the CPU count (io-threads is a setting, 1 by default).
//   - the generator pins every thread of its own process the same way before the cells start,
//     and sets GOMAXPROCS to the number of its CPUs (unless --threads says otherwise); Go
//     threads created later inherit the mask from the thread that creates them.
//
// At the end of the pinned cells the harness reads Cpus_allowed_list of every thread of the
// three processes and reports any that is not where it should be.

// cpuList is a sorted set of CPU numbers, written as taskset -c and Cpus_allowed_list write it:
// "0", "0-3,6".
type cpuList []int

// parseCPUList parses "0", "1,3", "0-3,6".
func parseCPUList(s string) (cpuList, error) {
	seen := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b > maxCPU {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number or range (e.g. 0, 2-3)", s, part)
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("CPU list %q is empty", s)
	}
	out := make(cpuList, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}

// maxCPU is the highest CPU number a list may name (the kernel's default cpu_set_t size).
const maxCPU = 1023

// String writes the list with ranges: "0-3,6".
func (c cpuList) String() string {
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(c[j]))
		}
		i = j + 1
	}
	return b.String()
}

func (c cpuList) has(cpu int) bool {
	i := sort.SearchInts(c, cpu)
	return i < len(c) && c[i] == cpu
}

func (c cpuList) equal(o cpuList) bool {
	if len(c) != len(o) {
		return false
	}
	for i := range c {
		if c[i] != o[i] {
			return false
		}
	}
	return true
}

// pinSpec is --pin: the CPUs of the servers and of the generator in the pinned cells.
type pinSpec struct {
	Server cpuList `json:"server"`
	Client cpuList `json:"client"`
}

func (p pinSpec) enabled() bool { return len(p.Server) > 0 }

func (p pinSpec) String() string {
	if !p.enabled() {
		return ""
	}
	return "server=" + p.Server.String() + ",client=" + p.Client.String()
}

// parsePin parses "server=0,client=1"; a list may continue after a comma ("server=0,2,client=1-3").
// The two sets must not overlap. An empty string is no pinning.
func parsePin(s string) (pinSpec, error) {
	var p pinSpec
	if strings.TrimSpace(s) == "" {
		return p, nil
	}
	lists := map[string]string{}
	cur := ""
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if name, val, ok := strings.Cut(part, "="); ok {
			cur = strings.TrimSpace(name)
			if cur != "server" && cur != "client" {
				return p, fmt.Errorf("--pin %q: %q is not server or client", s, cur)
			}
			if _, dup := lists[cur]; dup {
				return p, fmt.Errorf("--pin %q: %s given twice", s, cur)
			}
			lists[cur] = val
			continue
		}
		if cur == "" {
			return p, fmt.Errorf("--pin %q: want server=CPUS,client=CPUS, e.g. server=0,client=1", s)
		}
		lists[cur] += "," + part
	}
	var err error
	for name, dst := range map[string]*cpuList{"server": &p.Server, "client": &p.Client} {
		v, ok := lists[name]
		if !ok {
			return p, fmt.Errorf("--pin %q: no %s CPUs (want server=CPUS,client=CPUS)", s, name)
		}
		if *dst, err = parseCPUList(v); err != nil {
			return p, fmt.Errorf("--pin: %s: %w", name, err)
		}
	}
	for _, c := range p.Server {
		if p.Client.has(c) {
			return p, fmt.Errorf("--pin %q: CPU %d is both the servers' and the generator's", s, c)
		}
	}
	return p, nil
}

// unavailable says why the pinned cells cannot run on a process allowed the CPUs in allowed,
// or "" when they can.
func (p pinSpec) unavailable(allowed cpuList) string {
	if len(allowed) < 2 {
		return fmt.Sprintf("this process may use %d CPU (%s); pinning needs one for the servers and another for the generator", len(allowed), allowed)
	}
	for _, c := range append(append(cpuList(nil), p.Server...), p.Client...) {
		if !allowed.has(c) {
			return fmt.Sprintf("CPU %d is not among the CPUs this process may use (%s)", c, allowed)
		}
	}
	return ""
}
