// Package schedpolicy sets the Linux scheduling policy of every thread of the process (the
// sched-policy setting of lavik-data).
package schedpolicy

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Apply applies a sched-policy setting: "normal" changes nothing; "batch" puts every thread of the process
// under SCHED_BATCH, keeping each thread's nice value: Linux then does not let a thread we wake
// preempt the thread that woke it. The Go runtime wakes threads all the time (handing work
// between Ps, and after every GC stop-the-world the restarting thread wakes the others), and
// under SCHED_OTHER on a busy machine the woken thread could take the waker's core at once,
// leaving the world-restart unfinished for a scheduler tick. Threads created later inherit the
// policy of the thread that creates them; the task list is walked until a pass changes nothing,
// so a thread cloned during a pass is caught by the next.
func Apply(policy string) error {
	if policy != "batch" {
		return nil
	}
	for pass := 0; pass < 10; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		changed := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			attr, err := unix.SchedGetAttr(tid, 0)
			if err != nil {
				continue // the thread exited
			}
			if attr.Policy == unix.SCHED_BATCH {
				continue
			}
			attr.Policy = unix.SCHED_BATCH
			attr.Priority = 0
			if err := unix.SchedSetAttr(tid, attr, 0); err != nil && err != unix.ESRCH {
				return fmt.Errorf("sched_setattr(%d, SCHED_BATCH): %w", tid, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return nil
}
