package commands

import (
	"runtime"
	"testing"
)

func TestGCPausesResetByResetstat(t *testing.T) {
	runtime.GC()
	if p := gcPauses(); p.count < 2 || p.max <= 0 {
		t.Fatalf("after a GC: %+v, want at least its two pauses", p)
	}
	resetGCPauses()
	if p := gcPauses(); p.count != 0 {
		t.Fatalf("after a reset: %d pauses, want 0", p.count)
	}
	runtime.GC()
	if p := gcPauses(); p.count < 2 || p.p99 <= 0 || p.stopP99 <= 0 {
		t.Fatalf("one GC after a reset: %+v, want its two pauses", p)
	}
}
