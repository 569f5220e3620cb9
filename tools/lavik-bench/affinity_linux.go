package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// allowedCPUs is the affinity mask of the calling thread: the CPUs this process may use.
func allowedCPUs() (cpuList, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	return fromCPUSet(&set), nil
}

// processCPUs is the affinity mask of process pid's main thread.
func processCPUs(pid int) (cpuList, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity(%d): %w", pid, err)
	}
	return fromCPUSet(&set), nil
}

func fromCPUSet(set *unix.CPUSet) cpuList {
	var out cpuList
	for c := 0; c <= maxCPU; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// threadIDs lists the threads of process pid.
func threadIDs(pid int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	ids := make([]int, 0, len(ents))
	for _, e := range ents {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// setProcessAffinity sets the affinity of every thread of process pid to cpus and returns how
// many threads it set. sched_setaffinity acts on one thread; a thread created meanwhile
// inherits the mask of its creator, which may not have been set yet, so the threads are listed
// again until a pass finds none it has not set. A thread that exits meanwhile is skipped.
func setProcessAffinity(pid int, cpus cpuList) (int, error) {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	done := map[int]bool{}
	for pass := 0; pass < 100; pass++ {
		ids, err := threadIDs(pid)
		if err != nil {
			return len(done), fmt.Errorf("threads of %d: %w", pid, err)
		}
		fresh := 0
		for _, tid := range ids {
			if done[tid] {
				continue
			}
			fresh++
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, syscall.ESRCH) {
				return len(done), fmt.Errorf("sched_setaffinity(%d, %s): %w", tid, cpus, err)
			}
			done[tid] = true
		}
		if fresh == 0 {
			return len(done), nil
		}
	}
	return len(done), fmt.Errorf("threads of %d kept appearing while setting their affinity", pid)
}

// threadCPUs reads Cpus_allowed_list of every thread of process pid (threads that exit while
// they are read are skipped).
func threadCPUs(pid int) (map[int]cpuList, error) {
	ids, err := threadIDs(pid)
	if err != nil {
		return nil, err
	}
	out := map[int]cpuList{}
	for _, tid := range ids {
		b, err := os.ReadFile(filepath.Join(fmt.Sprintf("/proc/%d/task/%d", pid, tid), "status"))
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("Cpus_allowed_list:")); ok {
				if out[tid], err = parseCPUList(string(v)); err != nil {
					return nil, fmt.Errorf("/proc/%d/task/%d/status: %w", pid, tid, err)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no thread of process %d could be read", pid)
	}
	return out, nil
}

// checkAffinity reports how many threads process pid has and an error naming any thread not
// allowed exactly the CPUs in want.
func checkAffinity(pid int, want cpuList) (int, error) {
	m, err := threadCPUs(pid)
	if err != nil {
		return 0, err
	}
	for tid, got := range m {
		if !got.equal(want) {
			return len(m), fmt.Errorf("thread %d of process %d may run on CPUs %s, not %s", tid, pid, got, want)
		}
	}
	return len(m), nil
}

// pinSelf pins every thread of this process to cpus and sets GOMAXPROCS to their number
// (unless keepProcs: --threads chose it). The returned function restores the previous mask
// and GOMAXPROCS.
func pinSelf(cpus cpuList, keepProcs bool) (restore func() error, err error) {
	prev, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	procs := runtime.GOMAXPROCS(0)
	if !keepProcs {
		runtime.GOMAXPROCS(len(cpus))
	}
	if _, err := setProcessAffinity(os.Getpid(), cpus); err != nil {
		_, _ = setProcessAffinity(os.Getpid(), prev)
		runtime.GOMAXPROCS(procs)
		return nil, err
	}
	return func() error {
		_, err := setProcessAffinity(os.Getpid(), prev)
		runtime.GOMAXPROCS(procs)
		return err
	}, nil
}
