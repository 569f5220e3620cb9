package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat; 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// selfCPU is the CPU time (user + system) this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the CPU time process pid has used, or -1 when it cannot be read.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name (field 2) may contain spaces; fields are counted after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return -1
	}
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64) // field 14: utime
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64) // field 15: stime
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(ut+st) * time.Second / clockTicks
}

// rssBytes returns VmRSS of process pid.
func rssBytes(pid int) (int64, error) { return statusBytes(pid, "VmRSS") }

// peakRSSBytes returns VmHWM of process pid: the most it has had resident.
func peakRSSBytes(pid int) (int64, error) { return statusBytes(pid, "VmHWM") }

// statusBytes returns a "NAME: N kB" field of /proc/<pid>/status in bytes.
func statusBytes(pid int, name string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	if n, ok := kBFields(b)[name]; ok {
		return n, nil
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", name, pid)
}

// smapsRollup returns the "NAME: N kB" fields of /proc/<pid>/smaps_rollup in bytes: where the
// process's resident memory is (Anonymous, Pss_File, Private_Dirty, ...).
func smapsRollup(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return nil, err
	}
	return kBFields(b), nil
}

func kBFields(b []byte) map[string]int64 {
	out := map[string]int64{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		name, rest, ok := bytes.Cut(line, []byte(":"))
		f := bytes.Fields(rest)
		if !ok || len(f) != 2 || string(f[1]) != "kB" {
			continue
		}
		if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
			out[string(name)] = kb << 10
		}
	}
	return out
}

// procIO returns the bytes process pid has caused to be read from and written to storage
// (read_bytes and write_bytes of /proc/<pid>/io; page cache hits are not reads).
func procIO(pid int) (read, written int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		name, v, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			continue
		}
		switch string(name) {
		case "read_bytes":
			read = n
		case "write_bytes":
			written = n
		}
	}
	return read, written, nil
}

// diskUsage returns the bytes the files under dir hold (their sizes) and occupy on disk (the
// blocks allocated to them, as du counts).
func diskUsage(dir string) (apparent, allocated int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			allocated += st.Blocks * 512
		}
		if info.Mode().IsRegular() {
			apparent += info.Size()
		}
		return nil
	})
	return apparent, allocated, err
}

// tmpfsMagic is TMPFS_MAGIC from statfs(2).
const tmpfsMagic = 0x01021994

// fsSpace returns the bytes available to an unprivileged writer in the file system holding dir,
// and whether it is a tmpfs (whose files live in memory).
func fsSpace(dir string) (avail int64, tmpfs bool, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false, err
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Type) == tmpfsMagic, nil
}

// setChildAttrs makes a child server die with the benchmark even if the benchmark is killed
// before it can stop it.
func setChildAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// openDirectWrite opens name for writing with O_DIRECT, or without it where the file system
// refuses it (EINVAL).
func openDirectWrite(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC|syscall.O_DIRECT, 0o644)
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Err == syscall.EINVAL {
		return os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0o644)
	}
	return f, err
}
