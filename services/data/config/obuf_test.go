package config

import "testing"

// TestOutputLimitsFile: Redis's config files give client-output-buffer-limit one class a line;
// each line changes its class only, sizes are normalised to bytes, "replica" is "slave", and a
// malformed line is refused with the line number.
func TestOutputLimitsFile(t *testing.T) {
	c := New()
	err := c.LoadFile("client-output-buffer-limit normal 1mb 512kb 10\n"+
		"client-output-buffer-limit replica 512mb 128mb 120\n", "lavik.conf")
	if err != nil {
		t.Fatal(err)
	}
	want := "normal 1048576 524288 10 slave 536870912 134217728 120 pubsub 33554432 8388608 60"
	if got := c.Get("client-output-buffer-limit"); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	l := c.OutputLimits()
	if l[ClassNormal] != (OutputLimit{Hard: 1 << 20, Soft: 512 << 10, SoftSeconds: 10}) {
		t.Fatalf("normal: %+v", l[ClassNormal])
	}
	if err := c.LoadFile("\n\nclient-output-buffer-limit pubsub 1mb\n", "lavik.conf"); err == nil || err.Error()[:13] != "lavik.conf:3:" {
		t.Fatalf("malformed line: %v", err)
	}
	if got := c.Get("client-output-buffer-limit"); got != want {
		t.Fatalf("after a refused line: got %q, want %q", got, want)
	}
}

// TestOutputLimitsRuntime: CONFIG SET of several classes at once applies all of them, and one
// bad class refuses the whole change.
func TestOutputLimitsRuntime(t *testing.T) {
	c := New()
	if err := c.SetRuntime([][2]string{{"client-output-buffer-limit", "pubsub 0 0 0 normal 10kb 0 0"}}); err != nil {
		t.Fatal(err)
	}
	want := "normal 10240 0 0 slave 268435456 67108864 60 pubsub 0 0 0"
	if got := c.Get("client-output-buffer-limit"); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if err := c.SetRuntime([][2]string{{"client-output-buffer-limit", "normal 1 1 1 bogus 0 0 0"}}); err == nil {
		t.Fatal("a bad class was accepted")
	}
	if got := c.Get("client-output-buffer-limit"); got != want {
		t.Fatalf("after a refused change: got %q, want %q", got, want)
	}
}
