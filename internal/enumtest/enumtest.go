// Package enumtest reads a package's own source for the members of one of its enumerations, so
// that its test can check that every member has its words (docs/style.md#enumerations): a
// constant added without them fails that test, not a page at run time. Only tests import it.
package enumtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Values returns the values of the constants of type typeName that the non-test Go files in dir
// declare, in file and declaration order: `StateLocked State = "locked"` or
// `StateLocked = State("locked")`. A constant of that type whose value is not a string literal
// fails the test, as does a dir that declares none.
func Values(t testing.TB, dir, typeName string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var values []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			if gen, ok := decl.(*ast.GenDecl); ok && gen.Tok == token.CONST {
				for _, spec := range gen.Specs {
					values = append(values, typed(t, fset, spec.(*ast.ValueSpec), typeName)...)
				}
			}
		}
	}
	if len(values) == 0 {
		t.Fatalf("%s declares no constant of type %s", dir, typeName)
	}
	return values
}

// Listed fails the test unless members holds every constant of type typeName that dir declares
// (see Values), each once, and nothing else: a table of an enumeration lists each member.
func Listed[M ~string](t testing.TB, dir, typeName string, members []M) {
	t.Helper()
	declared := Values(t, dir, typeName)
	count := map[string]int{}
	for _, m := range members {
		count[string(m)]++
	}
	for _, v := range declared {
		if count[v] != 1 {
			t.Errorf("the %s %q is in the table %d times, not once: list it once, with what is said of it", typeName, v, count[v])
		}
		delete(count, v)
	}
	for v := range count {
		t.Errorf("the table lists %q, which %s does not declare as a %s", v, dir, typeName)
	}
}

// typed returns the values of the constants spec declares with type typeName.
func typed(t testing.TB, fset *token.FileSet, spec *ast.ValueSpec, typeName string) []string {
	t.Helper()
	isType := func(e ast.Expr) bool { id, ok := e.(*ast.Ident); return ok && id.Name == typeName }
	var out []string
	for i, v := range spec.Values {
		if call, ok := v.(*ast.CallExpr); ok && isType(call.Fun) && len(call.Args) == 1 {
			v = call.Args[0]
		} else if spec.Type == nil || !isType(spec.Type) {
			continue
		}
		lit, ok := v.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			t.Fatalf("%s: %s is a %s whose value is not a string literal", fset.Position(v.Pos()), spec.Names[i].Name, typeName)
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatalf("%s: %v", fset.Position(v.Pos()), err)
		}
		out = append(out, s)
	}
	return out
}
