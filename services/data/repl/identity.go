package repl

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// Identity is what a data node keeps about itself in its data directory for lavik-meta: its node
// id, stable for the life of the directory (a wiped node comes back under a new id), and the
// highest epoch it has seen, which never decreases, across restarts too: meta refuses a node
// that has seen a higher epoch than meta knows of (its state would be older than the node's),
// and a node never acts on an epoch lower than one it has acted on.
//
// It lives in a file of its own (NODE), not in the keyspace: FLUSHALL empties every database,
// the node's own included, and must not change who the node is. The file is replaced whole
// (write, fsync, rename, fsync the directory), so a crash leaves the old one or the new one.
type Identity struct {
	fs   vfs.FS
	path string

	// created: LoadIdentity made the file (the data directory was new to meta).
	created bool

	mu     sync.Mutex
	nodeID string
	epoch  uint64
}

// identityFile is the file's name in the data directory.
const identityFile = "NODE"

var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidNodeID reports whether id is a node id meta accepts: 1 to 64 of [A-Za-z0-9._-].
func ValidNodeID(id string) bool { return nodeIDPattern.MatchString(id) }

// LoadIdentity reads the node's identity from dir, making one (with id, or a random id when id
// is "") at the first start. An id given that differs from the stored one is refused: a data
// directory belongs to one node.
func LoadIdentity(fsys vfs.FS, dir, id string) (*Identity, error) {
	if id != "" && !ValidNodeID(id) {
		return nil, fmt.Errorf("repl: node id %q: want 1 to 64 of [A-Za-z0-9._-]", id)
	}
	ident := &Identity{fs: fsys, path: filepath.Join(dir, identityFile)}
	f, err := fsys.Open(ident.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if id == "" {
			var b [8]byte
			rand.Read(b[:])
			id = "data-" + hex.EncodeToString(b[:])
		}
		ident.nodeID, ident.created = id, true
		return ident, ident.saveLocked()
	case err != nil:
		return nil, fmt.Errorf("repl: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("repl: %w", err)
	}
	b := make([]byte, min(size, 4096))
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("repl: reading %s: %w", ident.path, err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != 3 || fields[0] != "1" || !ValidNodeID(fields[1]) {
		return nil, fmt.Errorf("repl: %s is damaged (%q): restore it or move the data directory aside", ident.path, b)
	}
	epoch, err := strconv.ParseUint(fields[2], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("repl: %s is damaged (%q): restore it or move the data directory aside", ident.path, b)
	}
	if id != "" && id != fields[1] {
		return nil, fmt.Errorf("repl: the data directory belongs to node %q, not %q", fields[1], id)
	}
	ident.nodeID, ident.epoch = fields[1], epoch
	return ident, nil
}

// Created reports whether LoadIdentity made the identity: the data directory had none.
func (i *Identity) Created() bool { return i.created }

// NodeID is the node's id.
func (i *Identity) NodeID() string { return i.nodeID }

// Epoch is the highest epoch the node has seen.
func (i *Identity) Epoch() uint64 {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.epoch
}

// SeeEpoch records that the node has seen epoch e, durably, before it returns: the caller may
// act on e once it returns nil. A lower epoch changes nothing.
func (i *Identity) SeeEpoch(e uint64) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if e <= i.epoch {
		return nil
	}
	old := i.epoch
	i.epoch = e
	if err := i.saveLocked(); err != nil {
		i.epoch = old
		return err
	}
	return nil
}

func (i *Identity) saveLocked() error {
	tmp := i.path + ".tmp"
	if err := vfs.WriteFile(i.fs, tmp, fmt.Appendf(nil, "1 %s %d\n", i.nodeID, i.epoch)); err != nil {
		return fmt.Errorf("repl: writing %s: %w", tmp, err)
	}
	if err := i.fs.Rename(tmp, i.path); err != nil {
		return fmt.Errorf("repl: %w", err)
	}
	if err := i.fs.SyncDir(filepath.Dir(i.path)); err != nil {
		return fmt.Errorf("repl: %w", err)
	}
	return nil
}
