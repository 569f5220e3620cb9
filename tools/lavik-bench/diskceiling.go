package main

import (
	"fmt"
	"time"
)

// diskParams configures the ceiling measurement.
type diskParams struct {
	Dir      string        // where the file is made (the servers' work directory)
	Size     int64         // file size in bytes
	Record   int           // record bytes a read covers, before alignment
	Engine   string        // vlog engine: auto, uring or pread
	Depth    int           // reads in flight
	Batch    int           // reads per engine call; Depth/Batch goroutines
	Warmup   time.Duration // unmeasured reads before the window
	Duration time.Duration // the measured window
	Seed     uint64
}

// DiskCeiling is the result of the ceiling measurement.
type DiskCeiling struct {
	File        string  `json:"file,omitempty"`
	FileBytes   int64   `json:"file_bytes"`
	WriteS      float64 `json:"write_s"`
	Engine      string  `json:"engine"`
	Depth       int     `json:"depth"`
	Batch       int     `json:"batch"`
	RecordBytes int     `json:"record_bytes"`
	Align       int64   `json:"align_bytes"`
	AvgReadB    float64 `json:"avg_read_bytes"`
	WindowS     float64 `json:"window_s"`
	Reads       int64   `json:"reads"`
	ReadsPS     float64 `json:"reads_per_sec"`
	MBps        float64 `json:"mb_per_sec"`
	CPUUsPerOp  float64 `json:"cpu_us_per_read"`
	Errors      int64   `json:"errors"`
	Skipped     string  `json:"skipped,omitempty"`
}

// String is the one-line report of the ceiling.
func (d *DiskCeiling) String() string {
	if d.Skipped != "" {
		return "disk ceiling: not measured: " + d.Skipped
	}
	return fmt.Sprintf("disk ceiling: %s random reads/s of %.0f B on average (a %d B record widened to %d B blocks, O_DIRECT, %s, %d in flight, %s file, %gs); %.1f us CPU per read; %.0f MB/s",
		qps(d.ReadsPS), d.AvgReadB, d.RecordBytes, d.Align, d.Engine, d.Depth, humanBytes(float64(d.FileBytes)),
		d.WindowS, d.CPUUsPerOp, d.MBps)
}

// diskFileSize rounds a requested ceiling file size down to whole 4 MiB chunks (the unit it is
// written in, a multiple of every direct-I/O alignment).
func diskFileSize(n int64) int64 { return n &^ (4<<20 - 1) }

// directSpan is the read that covers a record of n bytes at byte offset off of a file of size
// bytes opened with O_DIRECT: offset and length widened to whole units of align (a power of
// two), as the value log reads a record (vlog prepareRead), and cut at the end of the file.
func directSpan(off int64, n int, align, size int64) (start int64, length int) {
	start = off &^ (align - 1)
	end := min((off+int64(n)+align-1)&^(align-1), size)
	return start, int(end - start)
}

// maxDirectSpan is the longest directSpan of a record of n bytes: one that starts on the last
// byte of a unit.
func maxDirectSpan(n int, align int64) int {
	return int((int64(n) + 2*align - 2) / align * align)
}
