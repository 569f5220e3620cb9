package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lavikdb/lavik/test/harness"
)

// threadPolicies returns the scheduling policy (field 41 of /proc/PID/task/TID/stat) of every
// thread of pid, by thread id.
func threadPolicies(t *testing.T, pid int) map[string]string {
	t.Helper()
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	out := map[string]string{}
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited
		}
		// The command name (field 2) is in parentheses and may hold spaces: count from the
		// last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		out[filepath.Base(filepath.Dir(p))] = f[41-3]
	}
	return out
}

// sched-policy batch (the default) puts every thread of the server, including those the Go
// runtime starts while it serves, under SCHED_BATCH (policy 3); normal leaves SCHED_OTHER (0).
func TestSchedPolicy(t *testing.T) {
	if harness.IsRedis() {
		t.Skip("a Lavik setting")
	}
	for _, c := range []struct {
		args []string
		want string
	}{{nil, "3"}, {[]string{"--sched-policy", "normal"}, "0"}} {
		s := harness.Start(t, c.args...)
		rdb := s.Client()
		// Work that makes the runtime start more threads: many connections, writes, reads.
		for i := 0; i < 200; i++ {
			if err := rdb.Set(harness.Ctx(t), fmt.Sprint("k", i), strings.Repeat("v", 1000), 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		pol := threadPolicies(t, s.Pid())
		for tid, p := range pol {
			if p != c.want {
				t.Errorf("%v: thread %s has policy %s, want %s (all: %v)", c.args, tid, p, c.want, pol)
			}
		}
		s.Stop()
	}
}
