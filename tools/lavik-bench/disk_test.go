//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestWriteRandomFile checks that the ceiling's file is really written (blocks allocated, not a
// hole that reads as zeros without I/O) with bytes that are not all alike.
func TestWriteRandomFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	const size = 8 << 20
	if err := writeRandomFile(context.Background(), name, size, 1); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Size() != size {
		t.Fatalf("size %v, %v", fi, err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Blocks*512 < size {
		t.Errorf("%d bytes allocated for %d written: sparse", st.Blocks*512, size)
	}
	b, _ := os.ReadFile(name)
	if bytes.Equal(b[:4096], b[4<<20:4<<20+4096]) || bytes.Count(b[:65536], []byte{0}) > 65536/64 {
		t.Error("the file's content is not random")
	}
}

// TestMeasureDisk runs the ceiling measurement on a small file for a moment: reads complete
// without errors, their average size lies between the record and its widest span, and the file
// is gone afterwards.
func TestMeasureDisk(t *testing.T) {
	dir := t.TempDir()
	p := diskParams{Dir: dir, Size: 64 << 20, Record: recordBytes(keyLen, 1024), Engine: "auto", Depth: 32, Batch: 8,
		Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond, Seed: 1}
	d, err := measureDisk(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if d.Skipped != "" {
		t.Skip(d.Skipped)
	}
	t.Log(d)
	if d.Reads == 0 || d.ReadsPS <= 0 || d.Errors != 0 || d.CPUUsPerOp <= 0 {
		t.Errorf("%+v", d)
	}
	if d.Align < 512 || d.AvgReadB < float64(p.Record) || d.AvgReadB > float64(maxDirectSpan(p.Record, d.Align)) {
		t.Errorf("align %d, average read %.0f B for a %d B record", d.Align, d.AvgReadB, p.Record)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if _, err := measureDisk(context.Background(), diskParams{Dir: dir, Size: 64 << 20, Record: 1088, Depth: 4, Batch: 8}); err == nil {
		t.Error("a batch larger than the depth was accepted")
	}
}
