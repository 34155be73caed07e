package engine_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureDoc keeps docs/architecture.md true: every row of its
// table "PyTorch's functions and ours" names a file that exists and a
// method (Type.Method) or function declared in that very file.
func TestArchitectureDoc(t *testing.T) {
	f, err := os.Open("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| .* \\| `(engine/[^`]+\\.go)` \\| `([A-Za-z_][A-Za-z0-9_.]*)` \\|$")
	rows := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		rows++
		file, name := m[1], m[2]
		decls, err := declsOf(filepath.Join("..", file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if !decls[name] {
			t.Errorf("docs/architecture.md names %s in %s, which declares no such method or function", name, file)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if rows < 20 {
		t.Fatalf("found %d rows in the table, want the whole table (did its format change?)", rows)
	}
}

// declsOf returns the functions of a Go file as "Func" and methods as
// "Type.Method".
func declsOf(path string) (map[string]bool, error) {
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, d := range file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			typ := fd.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		out[strings.TrimSpace(name)] = true
	}
	return out, nil
}
