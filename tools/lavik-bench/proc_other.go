//go:build !linux

package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Memory, CPU and parent-death handling read /proc; elsewhere they report nothing.

func selfCPU() time.Duration        { return 0 }
func procCPU(pid int) time.Duration { return -1 }
func rssBytes(pid int) (int64, error) {
	return 0, errors.New("resident memory is read from /proc (Linux only)")
}
func setChildAttrs(cmd *exec.Cmd) {}

func peakRSSBytes(pid int) (int64, error) { return rssBytes(pid) }
func smapsRollup(pid int) (map[string]int64, error) {
	return nil, errors.New("smaps_rollup is read from /proc (Linux only)")
}

// diskUsage returns the sizes of the files under dir; without block counts, allocated is the
// same figure.
func diskUsage(dir string) (apparent, allocated int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			apparent += info.Size()
		}
		return nil
	})
	return apparent, apparent, err
}

func procIO(pid int) (read, written int64, err error) {
	return 0, 0, errors.New("I/O counters are read from /proc (Linux only)")
}

// fsSpace is unknown here: -1 bytes available.
func fsSpace(dir string) (avail int64, tmpfs bool, err error) { return -1, false, nil }

// openDirectWrite opens name for writing; direct I/O is Linux only here.
func openDirectWrite(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0o644)
}
