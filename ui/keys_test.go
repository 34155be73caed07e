package ui

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListEveryKey keeps docs/tui.md's key table in step with the
// KeyMap: every key the help shows must be documented there.
func TestDocsListEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/tui.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range DefaultKeyMap().FullHelp() {
		for _, b := range col {
			parts := strings.Split(b.Help().Key, "/")
			if b.Help().Key == "/" {
				parts = []string{"/"}
			}
			for _, k := range parts {
				if k == "1-6" {
					k = "1`–`6"
				}
				if !strings.Contains(string(doc), "`"+k+"`") {
					t.Errorf("docs/tui.md does not document the key %q (%s)", k, b.Help().Desc)
				}
			}
		}
	}
}
