package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// These tests find the parent cgroup in made-up hierarchies: mountinfo and /proc/self/cgroup
// text pointing at a temporary directory that stands in for the cgroup file systems. The kernel
// side (limits read back, a process moved in, removal) is TestMemCgroupLive.

// fakeCgroupFS lays out files under root; contents maps a relative path to its text.
func fakeCgroupFS(t *testing.T, contents map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, text := range contents {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// mountinfo returns mountinfo lines for a cgroup2 mount at v2 (if not "") and a v1 memory
// mount at v1 (if not ""), both of the hierarchy root "/" unless given as "root:point".
func mountinfo(v2, v1 string) []byte {
	split := func(s string) (string, string) {
		if r, p, ok := strings.Cut(s, ":"); ok {
			return r, p
		}
		return "/", s
	}
	lines := []string{"22 1 0:21 / / rw,relatime - ext4 /dev/vda rw"}
	if v2 != "" {
		r, p := split(v2)
		lines = append(lines, "41 31 0:38 "+r+" "+p+" rw,relatime - cgroup2 cgroup2 rw")
	}
	if v1 != "" {
		r, p := split(v1)
		lines = append(lines, "35 31 0:32 "+r+" "+p+" rw,relatime - cgroup cgroup rw,memory")
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

const selfCgroupText = "9:name=systemd:/\n4:memory:/jobs/j1\n1:cpu:/\n0::/jobs/j1\n"

func TestCgroupV2ChosenWhenItDelegatesMemory(t *testing.T) {
	root := fakeCgroupFS(t, map[string]string{
		"unified/cgroup.controllers":             "cpu io memory pids",
		"unified/cgroup.subtree_control":         "cpu memory",
		"unified/jobs/j1/cgroup.subtree_control": "memory",
		"memory/jobs/j1/memory.limit_in_bytes":   "9223372036854771712",
	})
	g, err := newMemCgroupIn(mountinfo(filepath.Join(root, "unified"), filepath.Join(root, "memory")), []byte(selfCgroupText), "t", 2<<30)
	if err != nil {
		t.Fatal(err)
	}
	if g.version != 2 || filepath.Dir(g.dir) != filepath.Join(root, "unified/jobs/j1") || g.limit != 2<<30 {
		t.Fatalf("got %s limit %d", g, g.limit)
	}
	if b, _ := os.ReadFile(filepath.Join(g.dir, "memory.max")); string(b) != "2147483648" {
		t.Errorf("memory.max = %q", b)
	}
}

func TestCgroupV2RootWhenOwnCgroupDoesNotDelegate(t *testing.T) {
	root := fakeCgroupFS(t, map[string]string{
		"unified/cgroup.controllers":     "memory",
		"unified/cgroup.subtree_control": "memory",
		"unified/jobs/j1/cgroup.procs":   "1",
	})
	g, err := newMemCgroupIn(mountinfo(filepath.Join(root, "unified"), ""), []byte(selfCgroupText), "t", 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if g.version != 2 || filepath.Dir(g.dir) != filepath.Join(root, "unified") {
		t.Fatalf("got %s", g)
	}
}

// TestCgroupV1WhenV2HasNoMemory is the layout of the development machines: a cgroup2 mount
// without controllers, and the v1 memory hierarchy.
func TestCgroupV1WhenV2HasNoMemory(t *testing.T) {
	root := fakeCgroupFS(t, map[string]string{
		"unified/cgroup.controllers":                 "",
		"unified/cgroup.subtree_control":             "",
		"memory/memory.limit_in_bytes":               "9223372036854771712",
		"memory/jobs/j1/memory.limit_in_bytes":       "9223372036854771712",
		"memory/jobs/j1/memory.memsw.limit_in_bytes": "9223372036854771712",
	})
	g, err := newMemCgroupIn(mountinfo(filepath.Join(root, "unified"), filepath.Join(root, "memory")), []byte(selfCgroupText), "t", 512<<20)
	if err != nil {
		t.Fatal(err)
	}
	if g.version != 1 || filepath.Dir(g.dir) != filepath.Join(root, "memory/jobs/j1") || g.limit != 512<<20 {
		t.Fatalf("got %s limit %d", g, g.limit)
	}
	if !strings.HasPrefix(filepath.Base(g.dir), "lavik-bench-t-") {
		t.Errorf("name %s", g.dir)
	}
}

// TestCgroupV1MountOfSubtree: a container that mounts only its own part of the hierarchy sees
// its cgroup path relative to the mount's root.
func TestCgroupV1MountOfSubtree(t *testing.T) {
	root := fakeCgroupFS(t, map[string]string{
		"memory/j1/memory.limit_in_bytes": "9223372036854771712",
	})
	g, err := newMemCgroupIn(mountinfo("", "/jobs:"+filepath.Join(root, "memory")), []byte(selfCgroupText), "t", 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(g.dir) != filepath.Join(root, "memory/j1") {
		t.Fatalf("got %s", g)
	}
}

func TestNoMemoryCgroupSaysWhy(t *testing.T) {
	root := fakeCgroupFS(t, map[string]string{"unified/cgroup.controllers": "cpu", "unified/cgroup.subtree_control": "cpu"})
	_, err := newMemCgroupIn(mountinfo(filepath.Join(root, "unified"), ""), []byte(selfCgroupText), "t", 64<<20)
	if !errors.Is(err, errNoMemoryCgroup) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"cgroup v2: " + filepath.Join(root, "unified") + " does not offer the memory controller",
		"cgroup v1: no v1 memory hierarchy mounted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
	root = fakeCgroupFS(t, map[string]string{"unified/cgroup.controllers": "memory", "unified/cgroup.subtree_control": ""})
	_, err = newMemCgroupIn(mountinfo(filepath.Join(root, "unified"), ""), []byte(selfCgroupText), "t", 64<<20)
	if err == nil || !strings.Contains(err.Error(), "not enabled for children") {
		t.Fatalf("got %v", err)
	}
}

func TestCgroupStatsV1(t *testing.T) {
	dir := fakeCgroupFS(t, map[string]string{
		"memory.usage_in_bytes":     "2000\n",
		"memory.max_usage_in_bytes": "3000\n",
		"memory.failcnt":            "17\n",
		"memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
		"memory.stat":               "cache 1200\nrss 700\nrss_huge 0\ndirty 40\nwriteback 8\ntotal_rss 700\n",
	})
	st, err := (&memCgroup{version: 1, dir: dir, limit: 4096}).stats()
	if err != nil {
		t.Fatal(err)
	}
	want := cgroupStats{Usage: 2000, Peak: 3000, Limit: 4096, Anon: 700, File: 1200, Dirty: 40, Writeback: 8, LimitHits: 17, OOMKills: 1}
	if st != want {
		t.Errorf("got %+v\nwant %+v", st, want)
	}
}

func TestCgroupStatsV2(t *testing.T) {
	dir := fakeCgroupFS(t, map[string]string{
		"memory.current": "2000\n",
		"memory.peak":    "3000\n",
		"memory.events":  "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n",
		"memory.stat":    "anon 700\nfile 1200\nfile_dirty 40\nfile_writeback 8\n",
	})
	st, err := (&memCgroup{version: 2, dir: dir, limit: 4096}).stats()
	if err != nil {
		t.Fatal(err)
	}
	want := cgroupStats{Usage: 2000, Peak: 3000, Limit: 4096, Anon: 700, File: 1200, Dirty: 40, Writeback: 8, LimitHits: 5, OOMKills: 1}
	if st != want {
		t.Errorf("got %+v\nwant %+v", st, want)
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/mnt/a\040b\134c`); got != `/mnt/a b\c` {
		t.Errorf("got %q", got)
	}
}
