package engine_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestArchitectureDoc keeps docs/architecture.md true: every row of its
// table "PyTorch's functions and ours" names a file that exists and a
// method (Type.Method) or function declared in that very file, and its
// table of the engine's files lists every file of the package, once.
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

	layers := fileLayers(t)
	files := engineFiles(t)
	for _, name := range files {
		if _, ok := layers[name]; !ok {
			t.Errorf("docs/architecture.md's table of the engine's files does not list engine/%s", name)
		}
	}
	for name := range layers {
		if _, err := os.Stat(name); err != nil {
			t.Errorf("docs/architecture.md's table of the engine's files lists engine/%s, which does not exist", name)
		}
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
		if r := recvType(fd); r != "" {
			name = r + "." + name
		}
		out[strings.TrimSpace(name)] = true
	}
	return out, nil
}

// recvType is the name of a method's receiver type, "" for a function.
func recvType(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) != 1 {
		return ""
	}
	typ := fd.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// The engine's layers, lowest first, as docs/architecture.md names them.
var layerRank = map[string]int{"data": 0, "tree": 1, "façade": 2}

// fileLayers reads docs/architecture.md's table of the engine's files:
// the layer of each file (by its name in engine/).
func fileLayers(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| (data|tree|façade) \\| `engine/([a-z0-9_]+\\.go)` \\| .+ \\|$")
	out := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		layer, name := m[1], m[2]
		if _, dup := out[name]; dup {
			t.Errorf("docs/architecture.md lists engine/%s twice", name)
		}
		out[name] = layer
	}
	if len(out) < 20 {
		t.Fatalf("found %d files in the table of the engine's files, want all (did its format change?)", len(out))
	}
	return out
}

// engineFiles lists the package's non-test Go files.
func engineFiles(t *testing.T) []string {
	t.Helper()
	all, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	return out
}

// TestEngineLayers keeps the engine's files in the layers that
// docs/architecture.md draws: the data (tensors, events, errors, the
// views' types) under the tree (the managers, what they share, the nodes
// and functions), under the façade (the Engine: Apply, the rollback, the
// non-call records, the views). No file refers to anything declared in a
// file of a higher layer, and every method is declared in its type's
// layer: the tree never reaches the Engine, only what the Engine shares
// with it (shared.go).
func TestEngineLayers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command here (a test binary carried to another machine)")
	}
	layers := fileLayers(t)
	// The layers mean something only with the tree and the façade where
	// they are: a table that moved them would pass anything.
	for name, want := range map[string]string{
		"manager.go": "tree", "record.go": "tree", "execute.go": "tree", "checkpoint.go": "tree", "dealloc.go": "tree",
		"shared.go": "tree", "engine.go": "façade", "call.go": "façade", "snapshot.go": "façade",
	} {
		if layers[name] != want {
			t.Errorf("docs/architecture.md puts engine/%s in layer %q, want %q", name, layers[name], want)
		}
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range engineFiles(t) {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: exportImporter(t, fset, files)}
	pkg, err := conf.Check("github.com/cgtviz/cgtviz/engine", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	layerOf := func(pos token.Pos) (string, string) {
		name := filepath.Base(fset.Position(pos).Filename)
		return name, layers[name]
	}
	bad := map[string]bool{}
	checked := 0
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !declaredAtTop(obj, pkg) {
			continue
		}
		from, fromLayer := layerOf(id.Pos())
		to, toLayer := layerOf(obj.Pos())
		checked++
		if layerRank[fromLayer] < layerRank[toLayer] {
			bad[fmt.Sprintf("engine/%s (%s) refers to %s, declared in engine/%s (%s)", from, fromLayer, obj.Name(), to, toLayer)] = true
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || recvType(fd) == "" {
				continue
			}
			typ := pkg.Scope().Lookup(recvType(fd))
			if typ == nil {
				continue
			}
			file, layer := layerOf(fd.Pos())
			typFile, typLayer := layerOf(typ.Pos())
			if layer != typLayer {
				bad[fmt.Sprintf("engine/%s (%s) declares %s.%s, whose type is in engine/%s (%s)", file, layer, recvType(fd), fd.Name.Name, typFile, typLayer)] = true
			}
		}
	}
	var msgs []string
	for m := range bad {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	for _, m := range msgs {
		t.Error(m)
	}
	if checked < 2000 {
		t.Fatalf("checked %d references between the engine's declarations, want all of them (did the type check find the package?)", checked)
	}
}

// declaredAtTop reports whether obj is one of the package's own
// declarations that a file can refer to from another: a package-level
// name, a method or a struct field (not a local).
func declaredAtTop(obj types.Object, pkg *types.Package) bool {
	if obj.Parent() == pkg.Scope() {
		return true
	}
	switch o := obj.(type) {
	case *types.Func:
		return o.Type().(*types.Signature).Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}

// exportImporter imports the packages files import from the export data
// the go command has built for them (one go list, which the build cache
// answers), not from source: checking the standard library's sources as
// well took seconds.
func exportImporter(t *testing.T, fset *token.FileSet, files []*ast.File) types.Importer {
	t.Helper()
	seen := map[string]bool{}
	args := []string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}
	for _, f := range files {
		for _, im := range f.Imports {
			p, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !seen[p] && p != "unsafe" {
				seen[p] = true
				args = append(args, p)
			}
		}
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		path, file, _ := strings.Cut(string(line), "\t")
		exports[path] = file
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
}
