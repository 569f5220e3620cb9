// deploy/ holds no Go code; this test keeps the example config in step with lavik-data.

package deploy

import (
	"os"
	"regexp"
	"testing"

	"github.com/lavikdb/lavik/services/data/config"
)

// TestExampleConfig checks that lavik-data.conf parses as lavik-data parses it and documents
// every option lavik-data accepts, as a setting or as a commented-out "# name value" line.
func TestExampleConfig(t *testing.T) {
	const path = "lavik-data.conf"
	if _, err := config.Parse([]string{path}); err != nil {
		t.Fatalf("lavik-data would refuse %s: %v", path, err)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range config.Params {
		re := regexp.MustCompile(`(?m)^(# )?` + regexp.QuoteMeta(p.Name) + ` `)
		if !re.Match(text) {
			t.Errorf("%s does not mention option %q; add it with a comment saying what it does", path, p.Name)
		}
	}
}
