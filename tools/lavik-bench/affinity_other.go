//go:build !linux

package main

import "errors"

// CPU affinity is set and read through Linux system calls and /proc; elsewhere the pinned
// cells are skipped (allowedCPUs reports why).

var errNoAffinity = errors.New("CPU pinning is implemented for Linux only")

func allowedCPUs() (cpuList, error)                         { return nil, errNoAffinity }
func processCPUs(pid int) (cpuList, error)                  { return nil, errNoAffinity }
func setProcessAffinity(pid int, cpus cpuList) (int, error) { return 0, errNoAffinity }
func checkAffinity(pid int, want cpuList) (int, error)      { return 0, errNoAffinity }
func pinSelf(cpus cpuList, keepProcs bool) (func() error, error) {
	return nil, errNoAffinity
}
