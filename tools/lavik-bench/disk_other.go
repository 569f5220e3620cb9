//go:build !linux

package main

import "context"

// measureDisk reads with O_DIRECT through the value log's engines, which exist on Linux only.
func measureDisk(ctx context.Context, p diskParams) (*DiskCeiling, error) {
	return &DiskCeiling{FileBytes: p.Size, Skipped: "direct reads through the value log's engines are Linux only"}, nil
}

// recordBytes is the value-log record size (a 48-byte header, the key and the value).
func recordBytes(keyLen, valueLen int) int { return 48 + keyLen + valueLen }
