package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The size limits of style.md#sizes.
const (
	maxFileLines = 500
	maxFuncLines = 80
)

// sizeException is a row of style.md's table: `file` or `file`: `function`, then its limit.
var sizeException = regexp.MustCompile("^\\| `([^`]+)`(?:: `([^`]+)`)? \\| ([0-9]+) \\|")

// TestSizes: every non-test Go file of the repository stays within maxFileLines and every
// function within maxFuncLines, or within the limit style.md#sizes gives it with a reason; an
// exception that is no longer needed is an error too, so the table stays true.
func TestSizes(t *testing.T) {
	limits := sizeExceptions(t)
	used := map[string]bool{}
	fset := token.NewFileSet()
	for _, rel := range repoFiles(t) {
		if filepath.Ext(rel) != ".go" || strings.HasSuffix(rel, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(repoRoot, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		check := func(key string, lines, limit int) {
			if l, ok := limits[key]; ok {
				used[key] = true
				if lines <= limit {
					t.Errorf("%s is %d lines, within the usual %d: drop its entry from style.md#sizes", key, lines, limit)
				}
				limit = l
			}
			if lines > limit {
				t.Errorf("%s is %d lines, over %d: split it, or give style.md#sizes the reason it reads better whole", key, lines, limit)
			}
		}
		check(rel, fset.File(f.Pos()).LineCount(), maxFileLines)
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				check(rel+": "+fn.Name.Name, lines, maxFuncLines)
			}
		}
	}
	for key := range limits {
		if !used[key] {
			t.Errorf("style.md#sizes lists %s, which does not exist", key)
		}
	}
}

// sizeExceptions reads style.md#sizes: "file" or "file: function" to its limit in lines.
func sizeExceptions(t *testing.T) map[string]int {
	t.Helper()
	limits := map[string]int{}
	for _, line := range strings.Split(section(t, "style.md", `<a id="sizes"></a>`), "\n") {
		m := sizeException.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key := m[1]
		if m[2] != "" {
			key += ": " + m[2]
		}
		limits[key], _ = strconv.Atoi(m[3])
	}
	if len(limits) == 0 {
		t.Fatal("style.md#sizes lists no exceptions: the table's format changed?")
	}
	return limits
}

// section returns the text of docs/file from the anchor to the next anchor.
func section(t *testing.T, file, anchor string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), anchor)
	if !ok {
		t.Fatalf("%s has no %s", file, anchor)
	}
	if i := strings.Index(rest, `<a id="`); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
