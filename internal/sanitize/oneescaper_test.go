package sanitize

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// escaperPredicates are the unicode functions an escaper is built on: a
// package that calls one is deciding for itself what may reach a terminal.
var escaperPredicates = map[string]bool{"IsControl": true, "IsPrint": true, "IsGraphic": true}

// knownEscapers are the escapers not yet folded into this package, by
// file and function; the list only shrinks.
var knownEscapers = map[string]bool{
	"journal/verification.go:clean": true, // Go-quotes an actor or id that is not printable
}

// TestOneEscaper fails when code outside this package declares a function
// named like an escaper (printable, Printable, …) or calls unicode.IsControl,
// IsPrint or IsGraphic: text from outside is made safe here, in one form
// per way out, and nowhere else.
func TestOneEscaper(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "internal/sanitize" || d.Name() == "testdata" || d.Name() == "vendor" || (rel != "." && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		unicodeName := importName(f, "unicode")
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			where := rel + ":" + fn.Name.Name
			if knownEscapers[where] {
				continue
			}
			if strings.Contains(strings.ToLower(fn.Name.Name), "printable") {
				t.Errorf("%s: %s escapes text outside internal/sanitize; call sanitize (add a form there if a way out needs one)", fset.Position(fn.Pos()), fn.Name.Name)
			}
			if unicodeName == "" || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == unicodeName && escaperPredicates[sel.Sel.Name] {
					t.Errorf("%s: %s uses unicode.%s to decide what may be printed; use internal/sanitize", fset.Position(sel.Pos()), fn.Name.Name, sel.Sel.Name)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d Go files under %s: not the module root", files, root)
	}
}

// importName is the name f refers to the package at path by, or "".
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if strings.Trim(imp.Path.Value, `"`) != path {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return path[strings.LastIndex(path, "/")+1:]
	}
	return ""
}
