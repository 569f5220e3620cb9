package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRewriteKeepsCommentsAndUnknownLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lavik.conf")
	orig := "# my settings\nport 7000\nsome-other-tool-setting 5\n\n# memory\nmaxmemory 1mb\nmaxmemory 2mb\n"
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	c := New()
	if err := c.SetStartup("port", "7000"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetRuntime([][2]string{{"maxmemory", "3mb"}, {"slowlog-max-len", "7"}, {"requirepass", ""}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Rewrite(path); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# my settings\nport 7000\nsome-other-tool-setting 5\n\n# memory\nmaxmemory 3145728\n" + rewriteMarker + "\nslowlog-max-len 7\n"
	if string(got) != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", st.Mode())
	}
	// A second rewrite changes nothing, and the file loads back to the same values.
	if err := c.Rewrite(path); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(path)
	if string(again) != want {
		t.Fatalf("second rewrite:\n%s", again)
	}
	c2 := New()
	// (lavik-data refuses settings it does not know; the tool's line is left out here.)
	known := strings.Replace(string(again), "some-other-tool-setting 5\n", "", 1)
	if err := c2.LoadFile(known, path); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"maxmemory", "slowlog-max-len", "port"} {
		if c2.Get(n) != c.Get(n) {
			t.Errorf("%s: %q after reload, want %q", n, c2.Get(n), c.Get(n))
		}
	}
}
