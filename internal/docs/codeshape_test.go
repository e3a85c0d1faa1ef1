package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// funcLengths returns the length in lines of every function and method
// in the module's non-test Go files, keyed "path:Name".
func funcLengths(t *testing.T, root string) map[string]int {
	t.Helper()
	out := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok {
				out[filepath.ToSlash(rel)+":"+fn.Name.Name] = fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// exportedIdentifiers counts the exported top-level names of the package
// in dir: functions, methods, types, constants and variables.
func exportedIdentifiers(t *testing.T, dir string) int {
	t.Helper()
	fset := token.NewFileSet()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	n := 0
	for _, p := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() {
					n++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							n++
						}
					case *ast.ValueSpec:
						for _, name := range s.Names {
							if name.IsExported() {
								n++
							}
						}
					}
				}
			}
		}
	}
	return n
}

// The code keeps the shape that lets the next engineer hold it: at most
// eight functions over 100 lines outside cmd/ (whose long functions are
// help text), a run's Execute and executeLive at most 80 lines each
// (named steps), and analyze's exported surface at most what other
// packages use. `go test -v -run TestCodeShape ./internal/docs` prints
// the counts.
func TestCodeShape(t *testing.T) {
	root := repoRoot(t)
	lengths := funcLengths(t, root)
	var long []string
	for name, n := range lengths {
		if n > 100 && !strings.HasPrefix(name, "cmd/") {
			long = append(long, name)
		}
	}
	sort.Strings(long)
	for _, name := range long {
		t.Logf("%4d lines  %s", lengths[name], name)
	}
	t.Logf("%d functions over 100 lines outside cmd/", len(long))
	if len(long) > 8 {
		t.Errorf("%d functions over 100 lines outside cmd/ (at most 8): split the new ones into named steps", len(long))
	}
	for _, name := range []string{"internal/run/execute.go:Execute", "internal/run/live.go:executeLive"} {
		if n, ok := lengths[name]; !ok || n > 80 {
			t.Errorf("%s: %d lines (at most 80; found %v)", name, n, ok)
		}
	}
	n := exportedIdentifiers(t, filepath.Join(root, "internal", "analyze"))
	t.Logf("internal/analyze exports %d identifiers", n)
	if n > 150 {
		t.Errorf("internal/analyze exports %d identifiers (at most 150): unexport what no other package uses", n)
	}
}
