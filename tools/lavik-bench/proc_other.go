//go:build !linux

package main

import (
	"errors"
	"os/exec"
	"time"
)

// Memory, CPU and parent-death handling read /proc; elsewhere they report nothing.

func selfCPU() time.Duration        { return 0 }
func procCPU(pid int) time.Duration { return -1 }
func rssBytes(pid int) (int64, error) {
	return 0, errors.New("resident memory is read from /proc (Linux only)")
}
func setChildAttrs(cmd *exec.Cmd) {}
