package repl

import (
	"strings"
	"testing"

	"github.com/lavikdb/lavik/pkg/vfs"
)

// TestIdentity: a node id is made once per data directory and kept; the epoch only grows and
// survives a crash once SeeEpoch returned; another id for the directory, or a damaged file, is
// refused.
func TestIdentity(t *testing.T) {
	mem := vfs.NewMem()
	mem.MkdirAll("/d", 0o755)
	a, err := LoadIdentity(mem, "/d", "")
	if err != nil {
		t.Fatal(err)
	}
	if !ValidNodeID(a.NodeID()) || a.Epoch() != 0 {
		t.Fatalf("new identity %q epoch %d", a.NodeID(), a.Epoch())
	}
	if err := a.SeeEpoch(7); err != nil {
		t.Fatal(err)
	}
	if err := a.SeeEpoch(3); err != nil || a.Epoch() != 7 {
		t.Fatalf("a lower epoch: %v, epoch %d", err, a.Epoch())
	}
	// A power loss right after SeeEpoch returned keeps it.
	b, err := LoadIdentity(mem.CrashClone(), "/d", "")
	if err != nil || b.NodeID() != a.NodeID() || b.Epoch() != 7 {
		t.Fatalf("after a crash: %v %q %d, want %q 7", err, b.NodeID(), b.Epoch(), a.NodeID())
	}
	if _, err := LoadIdentity(mem, "/d", a.NodeID()); err != nil {
		t.Fatalf("the directory's own id given: %v", err)
	}
	if _, err := LoadIdentity(mem, "/d", "other"); err == nil || !strings.Contains(err.Error(), "belongs to node") {
		t.Fatalf("another id for the directory: %v", err)
	}
	if _, err := LoadIdentity(mem, "/e", "bad id!"); err == nil {
		t.Fatal("an invalid id accepted")
	}
	vfs.WriteFile(mem, "/d/NODE", []byte("garbage"))
	if _, err := LoadIdentity(mem, "/d", ""); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a damaged file: %v", err)
	}
}
