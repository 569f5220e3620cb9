package keyspace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// layoutFile records the shard count a data directory was created with. A key's records live
// in the directory of the shard its hash picks, so opening the same data with another shard
// count would leave keys where lookups never go: Open refuses that instead.
const layoutFile = "LAVIK_LAYOUT"

// StoredShards returns the shard count recorded in dir, or ok false for a new directory.
func StoredShards(fsys vfs.FS, dir string) (n int, ok bool, err error) {
	f, err := fsys.Open(filepath.Join(dir, layoutFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("keyspace: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 64)
	m, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, false, fmt.Errorf("keyspace: read %s: %w", layoutFile, err)
	}
	v, found := strings.CutPrefix(strings.TrimSpace(string(buf[:m])), "shards ")
	n, perr := strconv.Atoi(v)
	if !found || perr != nil || n <= 0 {
		return 0, false, fmt.Errorf("keyspace: %s in %s is malformed", layoutFile, dir)
	}
	return n, true, nil
}

// checkLayout makes sure dir is used with the shard count it was created with, recording the
// count (durably) in a new directory.
func checkLayout(fsys vfs.FS, dir string, shards int) error {
	n, ok, err := StoredShards(fsys, dir)
	if err != nil {
		return err
	}
	if ok {
		if n != shards {
			return fmt.Errorf("keyspace: %s was created with %d shards; start with --shards %d (or auto)", dir, n, n)
		}
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("keyspace: %w", err)
	}
	tmp := filepath.Join(dir, layoutFile+".tmp")
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("keyspace: %w", err)
	}
	_, err = f.Write([]byte("shards " + strconv.Itoa(shards) + "\n"))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, filepath.Join(dir, layoutFile))
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("keyspace: record layout: %w", err)
	}
	return nil
}
