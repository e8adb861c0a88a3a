package race

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestSample(t *testing.T) {
	for _, n := range []int{0, 1, 4, 16} {
		keep, again := Sample(n), Sample(n)
		kept := 0
		for range 16000 {
			k := keep()
			if k != again() {
				t.Fatalf("Sample(%d) is not repeatable", n)
			}
			if k {
				kept++
			}
		}
		want := 16000 / Stride(n)
		if kept < want*9/10 || kept > want*11/10 {
			t.Errorf("Sample(%d) kept %d of 16000, want about %d", n, kept, want)
		}
		if Size(16000, n) != max(16000/Stride(n), 1) || Size(1, 16) != 1 {
			t.Errorf("Size(16000, %d) = %d", n, Size(16000, n))
		}
	}
	if Stride(16) != map[bool]int{false: 1, true: 16}[Enabled] {
		t.Errorf("Stride(16) = %d with the race detector %v", Stride(16), Enabled)
	}
}

// Every test that runs a sample under the race detector (one that calls
// Sample, Size or Stride) is named in make test-grids, which runs it whole
// without it: otherwise its whole grid would run nowhere. A test that
// only asks whether the detector is on (Enabled) samples nothing.
func TestGridsRunWhole(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^test-grids:\n\tgo test .*-run '\^\(([^)]*)\)\$\$' (.*)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no test-grids target of the form go test -run '^(A|B)$$' ./pkg...")
	}
	named, pkgs := strings.Split(string(m[1]), "|"), strings.Fields(string(m[2]))
	var using []string
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		pkg := "./" + filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../../")))
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "race" && sel.Sel.Name != "Enabled" {
						using = append(using, fn.Name.Name)
						if !slices.Contains(named, fn.Name.Name) || !slices.Contains(pkgs, pkg) {
							t.Errorf("%s (%s) runs a sample under the race detector, but make test-grids does not run it in %s", fn.Name.Name, path, pkg)
						}
						return false
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(using) < 5 {
		t.Errorf("only %v use the package: the search finds nothing", using)
	}
}
