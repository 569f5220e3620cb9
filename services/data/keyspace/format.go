package keyspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// The data directory's format. formatFile records, as "name value" lines, the format version of
// everything under the directory, the shard count it was created with (a key's records live in
// the directory of the shard its hash picks, so another count would leave keys where lookups
// never go) and the features in use: additions a version may make to the format without a new
// version number, which an older binary must refuse rather than misread. This version writes
// format 2 with the features "groups": a put record with vlog.FlagDir whose type is not a string
// is a grouped value's directory (grouped.go), not a chunked string's manifest; and "patches":
// such a directory may be a patch against a base (dirpatch.go). A format-2 directory without
// them (written before collections were grouped, or before directories had patches) gets them
// recorded when it is opened.
//
// A directory of format 1 (Lavik 0.1, which recorded only its shard count, in layoutFileV1) is
// upgraded when it is opened (upgrade.go). A directory of a later format, or using a feature this
// version does not know, is refused with a message that says a newer version wrote it.
const (
	formatFile    = "LAVIK_FORMAT"
	formatVersion = vlog.FormatVersion
	layoutFileV1  = "LAVIK_LAYOUT"
)

// knownFeatures are the directory features this version reads.
var knownFeatures = map[string]bool{featureGroups: true, featurePatches: true}

const (
	// featureGroups: grouped values' directories (grouped.go).
	featureGroups = "groups"
	// featurePatches: patch directories (dirpatch.go).
	featurePatches = "patches"
)

// features are the features this version writes.
var features = []string{featureGroups, featurePatches}

// dirFormat is a parsed formatFile.
type dirFormat struct {
	version  int
	shards   int
	features []string
}

func (f dirFormat) encode() []byte {
	return []byte(fmt.Sprintf("# Lavik data directory; do not edit.\nformat %d\nshards %d\nfeatures %s\n",
		f.version, f.shards, strings.Join(f.features, " ")))
}

func parseFormat(b []byte) (dirFormat, error) {
	var f dirFormat
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, val, _ := strings.Cut(line, " ")
		seen[name] = true
		var err error
		switch name {
		case "format":
			f.version, err = strconv.Atoi(val)
		case "shards":
			f.shards, err = strconv.Atoi(val)
		case "features":
			f.features = strings.Fields(val)
		default:
			// A setting this version does not know: a newer format, or damage; either way
			// not something to guess about.
			return f, fmt.Errorf("unknown setting %q", name)
		}
		if err != nil {
			return f, fmt.Errorf("malformed %q", line)
		}
	}
	if !seen["format"] || !seen["shards"] || f.version <= 0 || f.shards <= 0 {
		return f, errors.New("format or shards missing")
	}
	return f, nil
}

// readSmall reads a small file whole; ok is false when it does not exist.
func readSmall(fsys vfs.FS, p string) ([]byte, bool, error) {
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, false, err
	}
	if size > 1<<20 {
		return nil, false, fmt.Errorf("%s is %d bytes", p, size)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	return b, true, nil
}

// readFormat reads dir's format: ok is false for a directory without one. A format-1 directory
// is reported as version 1 with its shard count.
func readFormat(fsys vfs.FS, dir string) (dirFormat, bool, error) {
	b, ok, err := readSmall(fsys, filepath.Join(dir, formatFile))
	if err != nil {
		return dirFormat{}, false, fmt.Errorf("keyspace: %w", err)
	}
	if ok {
		f, err := parseFormat(b)
		if err != nil {
			return f, false, fmt.Errorf("keyspace: %s in %s: %w", formatFile, dir, err)
		}
		return f, true, nil
	}
	b, ok, err = readSmall(fsys, filepath.Join(dir, layoutFileV1))
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("keyspace: %w", err)
		}
		return dirFormat{}, false, err
	}
	v, found := strings.CutPrefix(strings.TrimSpace(string(b)), "shards ")
	n, perr := strconv.Atoi(v)
	if !found || perr != nil || n <= 0 {
		return dirFormat{}, false, fmt.Errorf("keyspace: %s in %s is malformed", layoutFileV1, dir)
	}
	return dirFormat{version: 1, shards: n}, true, nil
}

// StoredShards returns the shard count recorded in dir, or ok false for a new directory.
func StoredShards(fsys vfs.FS, dir string) (n int, ok bool, err error) {
	f, ok, err := readFormat(fsys, dir)
	return f.shards, ok, err
}

// checkFormat makes sure dir can be opened by this version with shards shards: it records the
// format of a new directory, upgrades one of format 1, and refuses one of a later format, of
// unknown features or of another shard count.
func checkFormat(fsys vfs.FS, dir string, shards int, log *slog.Logger) error {
	f, ok, err := readFormat(fsys, dir)
	if err != nil {
		return err
	}
	switch {
	case ok && f.version > formatVersion:
		return fmt.Errorf("keyspace: %s has data format %d; this version of Lavik reads format %d: %w",
			dir, f.version, formatVersion, vlog.ErrNewerFormat)
	case ok && f.version == formatVersion:
		var unknown []string
		for _, name := range f.features {
			if !knownFeatures[name] {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) > 0 {
			return fmt.Errorf("keyspace: %s uses data features %s that this version of Lavik does not know: %w",
				dir, strings.Join(unknown, ", "), vlog.ErrNewerFormat)
		}
		if f.shards != shards {
			return fmt.Errorf("keyspace: %s was created with %d shards; start with --shards %d (or auto)", dir, f.shards, f.shards)
		}
		if missing := slices.DeleteFunc(slices.Clone(features), func(n string) bool { return slices.Contains(f.features, n) }); len(missing) > 0 {
			f.features = append(f.features, missing...)
			if err := vfs.WriteFileAtomic(fsys, dir, formatFile, f.encode()); err != nil {
				return fmt.Errorf("keyspace: record the data format: %w", err)
			}
		}
		// What a finished upgrade may have left behind.
		return cleanUpgrade(fsys, dir, shards)
	case ok && f.shards != shards:
		return fmt.Errorf("keyspace: %s was created with %d shards; start with --shards %d (or auto)", dir, f.shards, f.shards)
	case ok: // format 1
		return upgradeDirectory(fsys, dir, shards, log)
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("keyspace: %w", err)
	}
	names, err := fsys.List(dir)
	if err != nil {
		return fmt.Errorf("keyspace: %w", err)
	}
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "shard-") }) {
		return fmt.Errorf("keyspace: %s holds shard directories but no %s: not a Lavik data directory this version knows", dir, formatFile)
	}
	if err := vfs.WriteFileAtomic(fsys, dir, formatFile, dirFormat{version: formatVersion, shards: shards, features: features}.encode()); err != nil {
		return fmt.Errorf("keyspace: record the data format: %w", err)
	}
	return nil
}

// shardDirName is the directory of shard i under the data directory.
func shardDirName(i int) string { return fmt.Sprintf("shard-%03d", i) }

// removeAll removes a file or a directory tree.
func removeAll(fsys vfs.FS, p string) error {
	fi, err := fsys.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		names, err := fsys.List(p)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := removeAll(fsys, filepath.Join(p, n)); err != nil {
				return err
			}
		}
	}
	return fsys.Remove(p)
}
