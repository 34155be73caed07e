package main

import (
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// docCommands returns the commands the package documentation lists: the
// first word of each line of its "Commands:" block that starts a command
// (a tab, then the name; continuation lines are indented further).
func docCommands(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go has no package documentation")
	}
	_, block, ok := strings.Cut(f.Doc.Text(), "\nCommands:\n")
	if !ok {
		t.Fatal(`doc.go's documentation has no "Commands:" block`)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimLeft(block, "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, "\t") {
			break // the block ends at the next paragraph
		}
		if strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "\t ") {
			names = append(names, strings.Fields(l)[0])
		}
	}
	return names
}

// TestDocListsEveryCommand holds doc.go to the command table: every
// command `cgtviz -h` lists is documented, and nothing else is.
func TestDocListsEveryCommand(t *testing.T) {
	documented := docCommands(t)
	for _, c := range commands {
		if !slices.Contains(documented, c.name) {
			t.Errorf("doc.go's Commands block does not list %q (main.go's commands)", c.name)
		}
	}
	for _, name := range documented {
		if _, ok := byName[name]; !ok {
			t.Errorf("doc.go's Commands block lists %q, which is no command", name)
		}
	}
	if len(documented) != len(commands) {
		t.Errorf("doc.go lists %d commands, main.go has %d: %v", len(documented), len(commands), documented)
	}
}
