package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Memory cgroups for `capacity`: the server runs in a cgroup of its own whose limit covers
// everything the kernel charges to it, its heap and the page cache of the files it writes and
// reads alike, so "lavik-data in 2 GiB" means the whole server, as a container limit would.
//
// The cgroup is created below the cgroup lavik-bench itself runs in, so whatever limits and
// accounting already apply to the harness (a container, a systemd scope, a CI runner) still
// apply to the server. cgroup v2 is used when the unified hierarchy offers the memory
// controller to new children there (memory.max, memory.peak, memory.events); otherwise the v1
// memory hierarchy (memory.limit_in_bytes, memory.max_usage_in_bytes, memory.failcnt,
// memory.oom_control). Swap does not extend the limit where the kernel lets us say so
// (memory.swap.max 0; memory.memsw.limit_in_bytes equal to the limit).
//
// The server is moved in right after it starts, before anything is loaded. Rejected: starting
// it inside the cgroup (clone3 with CLONE_INTO_CGROUP exists only for v2, and the few pages the
// Go runtime touches before the move do not change a figure measured in GiB). What it touched
// before the move stays charged where lavik-bench runs.

// errNoMemoryCgroup says neither hierarchy can give the server a memory limit here.
var errNoMemoryCgroup = errors.New("no usable memory cgroup")

// memCgroup is a memory cgroup the harness created; remove deletes it.
type memCgroup struct {
	version int    // 1 or 2
	dir     string // its directory in the cgroup file system
	limit   int64  // as the kernel reads it back (rounded to pages)
}

// cgroupStats is one reading of a memory cgroup's accounting. Anon and File split Usage into
// the server's own memory and the page cache charged to it.
type cgroupStats struct {
	Usage     int64 `json:"usage_bytes"`
	Peak      int64 `json:"peak_bytes"` // since the cgroup was created; 0 when the kernel does not say (v2 before 5.19)
	Limit     int64 `json:"limit_bytes"`
	Anon      int64 `json:"anon_bytes"`
	File      int64 `json:"file_bytes"`
	Dirty     int64 `json:"dirty_bytes"`
	Writeback int64 `json:"writeback_bytes"`
	// LimitHits counts how often usage reached the limit and the kernel had to reclaim
	// (v1 memory.failcnt, v2 "max" in memory.events): expected once the page cache fills it.
	LimitHits int64 `json:"limit_hits"`
	OOMKills  int64 `json:"oom_kills"` // processes of the cgroup the OOM killer killed
}

var cgroupSeq atomic.Int64

// newMemCgroup creates a memory cgroup limited to limit bytes, named after name and this
// process. It fails with errNoMemoryCgroup, saying why for each hierarchy, when neither works.
func newMemCgroup(name string, limit int64) (*memCgroup, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("cgroup: memory limit %d: want a positive number of bytes", limit)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("%w: %v (memory cgroups are a Linux feature)", errNoMemoryCgroup, err)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoMemoryCgroup, err)
	}
	return newMemCgroupIn(mounts, self, name, limit)
}

// newMemCgroupIn is newMemCgroup given the contents of /proc/self/mountinfo and
// /proc/self/cgroup.
func newMemCgroupIn(mounts, self []byte, name string, limit int64) (*memCgroup, error) {
	child := fmt.Sprintf("lavik-bench-%s-%d-%d", name, os.Getpid(), cgroupSeq.Add(1))
	var why []string
	if parent, err := cgroupV2Parent(mounts, self); err != nil {
		why = append(why, "cgroup v2: "+err.Error())
	} else if g, err := createMemCgroup(2, filepath.Join(parent, child), limit); err != nil {
		why = append(why, "cgroup v2: "+err.Error())
	} else {
		return g, nil
	}
	if parent, err := cgroupV1Parent(mounts, self); err != nil {
		why = append(why, "cgroup v1: "+err.Error())
	} else if g, err := createMemCgroup(1, filepath.Join(parent, child), limit); err != nil {
		why = append(why, "cgroup v1: "+err.Error())
	} else {
		return g, nil
	}
	return nil, fmt.Errorf("%w: %s", errNoMemoryCgroup, strings.Join(why, "; "))
}

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	root, point, fstype string
	superOpts           []string
}

func parseMountinfo(b []byte) []mountEntry {
	var out []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		out = append(out, mountEntry{root: unescapeMount(f[3]), point: unescapeMount(f[4]), fstype: g[0],
			superOpts: strings.Split(g[2], ",")})
	}
	return out
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// selfCgroup returns this process's path in the hierarchy that /proc/self/cgroup lists with
// the controller ctl ("" for the v2 line "0::/path").
func selfCgroup(self []byte, ctl string) (string, bool) {
	for _, line := range strings.Split(string(self), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if ctl == "" && f[0] == "0" && f[1] == "" {
			return f[2], true
		}
		for _, c := range strings.Split(f[1], ",") {
			if ctl != "" && c == ctl {
				return f[2], true
			}
		}
	}
	return "", false
}

// cgroupDir maps a cgroup path to its directory under the mount m, or "" when the mount does
// not show it (a mount of a subtree that does not contain it).
func cgroupDir(m mountEntry, path string) string {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	return filepath.Join(m.point, rel)
}

// cgroupV2Parent finds where a v2 child with the memory controller can be made: this process's
// own cgroup if it delegates memory to its children, else the root of the hierarchy if that
// does (the root is exempt from v2's rule that only leaves hold processes).
func cgroupV2Parent(mounts, self []byte) (string, error) {
	var m *mountEntry
	for _, e := range parseMountinfo(mounts) {
		if e.fstype == "cgroup2" {
			m = &e
			break
		}
	}
	if m == nil {
		return "", errors.New("no cgroup2 file system mounted")
	}
	var candidates []string
	if p, ok := selfCgroup(self, ""); ok {
		if d := cgroupDir(*m, p); d != "" {
			candidates = append(candidates, d)
		}
	}
	candidates = append(candidates, m.point)
	for _, d := range candidates {
		if hasWord(filepath.Join(d, "cgroup.subtree_control"), "memory") {
			return d, nil
		}
	}
	if !hasWord(filepath.Join(m.point, "cgroup.controllers"), "memory") {
		return "", fmt.Errorf("%s does not offer the memory controller (cgroup.controllers)", m.point)
	}
	return "", fmt.Errorf("the memory controller is not enabled for children of %s (cgroup.subtree_control)",
		strings.Join(candidates, " or "))
}

// cgroupV1Parent finds the v1 memory hierarchy and this process's cgroup in it.
func cgroupV1Parent(mounts, self []byte) (string, error) {
	for _, e := range parseMountinfo(mounts) {
		if e.fstype != "cgroup" || !contains(e.superOpts, "memory") {
			continue
		}
		if p, ok := selfCgroup(self, "memory"); ok {
			if d := cgroupDir(e, p); d != "" {
				if _, err := os.Stat(filepath.Join(d, "memory.limit_in_bytes")); err == nil {
					return d, nil
				}
			}
		}
		return e.point, nil
	}
	return "", errors.New("no v1 memory hierarchy mounted")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// hasWord reports whether the file at path lists word (space-separated).
func hasWord(path, word string) bool {
	b, err := os.ReadFile(path)
	return err == nil && contains(strings.Fields(string(b)), word)
}

// createMemCgroup makes the cgroup directory and sets its limit; on failure nothing is left.
func createMemCgroup(version int, dir string, limit int64) (g *memCgroup, err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	g = &memCgroup{version: version, dir: dir}
	defer func() {
		if err != nil {
			_ = os.Remove(dir)
		}
	}()
	lim := strconv.FormatInt(limit, 10)
	if version == 2 {
		if err := g.write("memory.max", lim); err != nil {
			return nil, err
		}
		if g.exists("memory.swap.max") {
			if err := g.write("memory.swap.max", "0"); err != nil {
				return nil, err
			}
		}
		g.limit, err = g.readInt("memory.max")
	} else {
		if err := g.write("memory.limit_in_bytes", lim); err != nil {
			return nil, err
		}
		if g.exists("memory.memsw.limit_in_bytes") { // only with swap accounting
			if err := g.write("memory.memsw.limit_in_bytes", lim); err != nil {
				return nil, err
			}
		}
		g.limit, err = g.readInt("memory.limit_in_bytes")
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

func (g *memCgroup) String() string { return fmt.Sprintf("%s (cgroup v%d)", g.dir, g.version) }

func (g *memCgroup) exists(file string) bool {
	_, err := os.Stat(filepath.Join(g.dir, file))
	return err == nil
}

func (g *memCgroup) write(file, value string) error {
	if err := os.WriteFile(filepath.Join(g.dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("cgroup: writing %q to %s: %w", value, filepath.Join(g.dir, file), err)
	}
	return nil
}

func (g *memCgroup) readInt(file string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, file))
	if err != nil {
		return 0, fmt.Errorf("cgroup: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroup: %s: %q is not a number", filepath.Join(g.dir, file), s)
	}
	return n, nil
}

// readKeyed reads a flat keyed file ("name value" per line: memory.stat, memory.events,
// memory.oom_control).
func (g *memCgroup) readKeyed(file string) (map[string]int64, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, file))
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				out[f[0]] = n
			}
		}
	}
	return out, nil
}

// addProc moves process pid (all its threads) into the cgroup.
func (g *memCgroup) addProc(pid int) error {
	return g.write("cgroup.procs", strconv.Itoa(pid))
}

// procs lists the processes in the cgroup.
func (g *memCgroup) procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// stats reads the cgroup's memory accounting.
func (g *memCgroup) stats() (cgroupStats, error) {
	st := cgroupStats{Limit: g.limit}
	var err error
	if g.version == 2 {
		if st.Usage, err = g.readInt("memory.current"); err != nil {
			return st, err
		}
		if g.exists("memory.peak") {
			if st.Peak, err = g.readInt("memory.peak"); err != nil {
				return st, err
			}
		}
		ev, err := g.readKeyed("memory.events")
		if err != nil {
			return st, err
		}
		st.LimitHits, st.OOMKills = ev["max"], ev["oom_kill"]
		ms, err := g.readKeyed("memory.stat")
		if err != nil {
			return st, err
		}
		st.Anon, st.File, st.Dirty, st.Writeback = ms["anon"], ms["file"], ms["file_dirty"], ms["file_writeback"]
		return st, nil
	}
	if st.Usage, err = g.readInt("memory.usage_in_bytes"); err != nil {
		return st, err
	}
	if st.Peak, err = g.readInt("memory.max_usage_in_bytes"); err != nil {
		return st, err
	}
	if st.LimitHits, err = g.readInt("memory.failcnt"); err != nil {
		return st, err
	}
	oc, err := g.readKeyed("memory.oom_control")
	if err != nil {
		return st, err
	}
	st.OOMKills = oc["oom_kill"]
	ms, err := g.readKeyed("memory.stat")
	if err != nil {
		return st, err
	}
	// v1 "rss" is anonymous memory, transparent huge pages included; "cache" the page cache.
	st.Anon, st.File, st.Dirty, st.Writeback = ms["rss"], ms["cache"], ms["dirty"], ms["writeback"]
	return st, nil
}

// remove deletes the cgroup once it holds no process, waiting up to timeout for the last one to
// be gone (a process that has exited can linger in cgroup.procs until it is reaped).
func (g *memCgroup) remove(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := os.Remove(g.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			procs, _ := g.procs()
			return fmt.Errorf("cgroup: removing %s (processes still in it: %v): %w", g.dir, procs, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
