package docs

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = ".."

// The rule index: docs/README.md, from its anchor to the end of the file.
const (
	indexFile   = "README.md"
	indexAnchor = `<a id="where-each-rule-lives"></a>`
)

var (
	// rowKey finds what a row of the index is about: a design rule or a security requirement.
	rowKey = regexp.MustCompile(`\]\((design\.md#rule-[0-9a-z]+|security\.md#req-[0-9]+)\)`)
	// fileLink is a link to a file of the repository, relative to docs/.
	fileLink = regexp.MustCompile(`\[[^\]]*\]\(\.\./([^)#\s]+)\)`)
	// ident is a backticked Go identifier, possibly Type.Method, or a name in a non-Go file.
	ident = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_.-]*)`")
	// docCitation is a citation of a document of docs/, with an anchor or without.
	docCitation = regexp.MustCompile(`docs/([A-Za-z]+\.md)(#[A-Za-z0-9_-]+)?`)
	// mdLink is a Markdown link's target.
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// anchorTag is an explicit anchor.
	anchorTag = regexp.MustCompile(`<a id="([^"]+)"></a>`)
	// oldCitation is a citation of the design documents that lived outside the repository.
	oldCitation = regexp.MustCompile(`\b(DESIGN|AUTH|PEERS|STYLE)\.md\b|\.\./shared\b|/work/shared\b`)
)

// shippedMigrations cite the old documents in their comments and may never be edited
// (migrations are append-only); every new file cites docs/.
var shippedMigrations = map[string]bool{
	"db/migrations/20261201130000_vault.tx.up.sql":            true,
	"db/migrations/20261201150000_server_approvals.tx.up.sql": true,
}

// indexRow is one row of the rule index.
type indexRow struct {
	line        int
	key         string // "design.md#rule-7", "security.md#req-16"
	code, tests string // the cells
	notes       string
}

func readIndex(t *testing.T) []indexRow {
	t.Helper()
	data, err := os.ReadFile(indexFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, indexAnchor)
	if start < 0 {
		t.Fatalf("%s has no %s", indexFile, indexAnchor)
	}
	startLine := strings.Count(text[:start], "\n") + 1
	var rows []indexRow
	sc := bufio.NewScanner(strings.NewReader(text[start:]))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := startLine; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		m := rowKey.FindStringSubmatch(cells[0])
		if m == nil {
			continue // the header, the separator
		}
		if len(cells) != 4 {
			t.Errorf("%s:%d: %d cells, want 4 (rule | code | tests | notes); a cell may not hold \" | \"", indexFile, n, len(cells))
			continue
		}
		rows = append(rows, indexRow{line: n, key: m[1], code: cells[1], tests: cells[2], notes: cells[3]})
	}
	return rows
}

// ruleAnchor is a design rule's anchor in design.md.
var ruleAnchor = regexp.MustCompile(`<a id="(rule-[0-9]+b?)"></a>`)

// TestIndexCoversEveryRule checks that the index has exactly one row per design rule (every
// rule-N anchor of design.md: 1–25, 15b and those added since) and per security requirement
// (1–40).
func TestIndexCoversEveryRule(t *testing.T) {
	design, err := os.ReadFile(filepath.Join(repoRoot, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, m := range ruleAnchor.FindAllStringSubmatch(string(design), -1) {
		want["design.md#"+m[1]] = true
	}
	for i := 1; i <= 25; i++ {
		if !want["design.md#rule-"+strconv.Itoa(i)] {
			t.Errorf("design.md has no anchor rule-%d", i)
		}
	}
	for i := 1; i <= 40; i++ {
		want["security.md#req-"+strconv.Itoa(i)] = true
	}
	seen := map[string]int{}
	for _, r := range readIndex(t) {
		if prev, dup := seen[r.key]; dup {
			t.Errorf("%s:%d: %s has a row already, at line %d", indexFile, r.line, r.key, prev)
		}
		seen[r.key] = r.line
		if !want[r.key] {
			t.Errorf("%s:%d: %s is no rule or requirement", indexFile, r.line, r.key)
		}
	}
	for k := range want {
		if _, ok := seen[k]; !ok {
			t.Errorf("%s: no row for %s", indexFile, k)
		}
	}
}

// TestIndexNamesWhatExists checks every file, function and test the index names: a file must
// exist, a Go identifier after it must be declared in it (a test must be a top-level Test, Fuzz
// or Benchmark function of a _test.go file), and a name after another kind of file must occur
// in it. A row with no code or no test must say so in its notes.
func TestIndexNamesWhatExists(t *testing.T) {
	decls := map[string]map[string]bool{}
	for _, r := range readIndex(t) {
		where := fmt.Sprintf("%s:%d (%s)", indexFile, r.line, r.key)
		code := checkCell(t, where+" code", r.code, false, decls)
		tests := checkCell(t, where+" tests", r.tests, true, decls)
		said := strings.Contains(r.notes, "Not met") || strings.Contains(r.notes, "No test")
		if code == 0 && !strings.Contains(r.notes, "Not met") {
			t.Errorf("%s: no code named, and the notes do not say \"Not met\"", where)
		}
		if tests == 0 && !said {
			t.Errorf("%s: no test named, and the notes do not say \"Not met\" or \"No test\"", where)
		}
	}
}

// checkCell checks the "[file](../path): `Name`, `Name`; …" items of one cell and returns how
// many names it checked.
func checkCell(t *testing.T, where, cell string, tests bool, decls map[string]map[string]bool) int {
	t.Helper()
	links := fileLink.FindAllStringSubmatchIndex(cell, -1)
	if len(links) == 0 {
		if ident.MatchString(cell) {
			t.Errorf("%s: names %q without linking the file they are in", where, cell)
		}
		return 0
	}
	if before := cell[:links[0][0]]; ident.MatchString(before) {
		t.Errorf("%s: %q comes before any file link", where, before)
	}
	checked := 0
	for i, l := range links {
		path := cell[l[2]:l[3]]
		end := len(cell)
		if i+1 < len(links) {
			end = links[i+1][0]
		}
		names := ident.FindAllStringSubmatch(cell[l[1]:end], -1)
		full := filepath.Join(repoRoot, filepath.FromSlash(path))
		if _, err := os.Stat(full); err != nil {
			t.Errorf("%s: %s does not exist", where, path)
			continue
		}
		if tests && !strings.HasSuffix(path, "_test.go") && len(names) > 0 {
			t.Errorf("%s: tests named in %s, which is not a _test.go file", where, path)
		}
		for _, n := range names {
			checked++
			name := n[1]
			if !strings.HasSuffix(path, ".go") {
				if !fileContains(t, full, name) {
					t.Errorf("%s: %s does not contain %q", where, path, name)
				}
				continue
			}
			if tests && !isTestName(name) {
				t.Errorf("%s: %s is not a Test, Fuzz or Benchmark function", where, name)
			}
			d, ok := decls[full]
			if !ok {
				d = declared(t, full)
				decls[full] = d
			}
			if !d[name] {
				t.Errorf("%s: %s declares no %s", where, path, name)
			}
		}
	}
	return checked
}

func isTestName(name string) bool {
	for _, p := range []string{"Test", "Fuzz", "Benchmark"} {
		if strings.HasPrefix(name, p) && !strings.Contains(name, ".") {
			return true
		}
	}
	return false
}

// declared returns the top-level names a Go file declares: functions, types, variables and
// constants by name, methods as Type.Method and by name.
func declared(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	out := map[string]bool{}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			out[d.Name.Name] = true
			if d.Recv != nil && len(d.Recv.List) == 1 {
				out[receiverType(d.Recv.List[0].Type)+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					out[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						out[n.Name] = true
					}
				}
			}
		}
	}
	return out
}

func receiverType(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverType(x.X)
	case *ast.IndexExpr:
		return receiverType(x.X)
	case *ast.IndexListExpr:
		return receiverType(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

func fileContains(t *testing.T, path, s string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(data), s)
}

// anchors returns the anchors of a Markdown file: its explicit <a id> tags and the anchors
// GitHub makes of its headings.
func anchors(t *testing.T, path string, cache map[string]map[string]bool) map[string]bool {
	t.Helper()
	if a, ok := cache[path]; ok {
		return a
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]bool{}
	for _, m := range anchorTag.FindAllStringSubmatch(string(data), -1) {
		a[m[1]] = true
	}
	inCode := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if !inCode && strings.HasPrefix(line, "#") {
			a[headingSlug(strings.TrimLeft(line, "#"))] = true
		}
	}
	cache[path] = a
	return a
}

// headingSlug is GitHub's anchor of a heading: lower case, punctuation dropped, spaces as -.
func headingSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// repoFiles returns the repository's own text files (no dependencies, caches or binaries).
func repoFiles(t *testing.T) []string {
	t.Helper()
	exts := []string{".go", ".md", ".html", ".js", ".css", ".sql", ".service", ".json", ".sh", ".yml", ".yaml"}
	var out []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".min.js") || rel == "package-lock.json" {
			return nil
		}
		if slices.Contains(exts, filepath.Ext(rel)) || strings.HasPrefix(rel, "scripts/") {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDocCitationsResolve checks every docs/….md#anchor cited anywhere in the repository (Go
// comments, SQL, templates, JavaScript, CSS, scripts, Markdown), and every relative link of the
// Markdown files: the file exists, and so does the anchor.
func TestDocCitationsResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	for _, rel := range repoFiles(t) {
		data, err := os.ReadFile(filepath.Join(repoRoot, rel))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			for _, m := range docCitation.FindAllStringSubmatch(line, -1) {
				doc := filepath.Join(repoRoot, "docs", m[1])
				if _, err := os.Stat(doc); err != nil {
					t.Errorf("%s:%d: cites docs/%s, which does not exist", rel, n+1, m[1])
					continue
				}
				if m[2] == "#rule-N" || m[2] == "#req-N" {
					continue // the pattern itself, as docs/README.md explains it
				}
				if m[2] != "" && !anchors(t, doc, cache)[m[2][1:]] {
					t.Errorf("%s:%d: cites docs/%s%s, which has no such anchor", rel, n+1, m[1], m[2])
				}
			}
			if strings.HasSuffix(rel, ".md") {
				checkMarkdownLinks(t, rel, n+1, line, cache)
			}
		}
	}
}

// checkMarkdownLinks checks the relative links of one line of a Markdown file: they stay inside
// the repository, their file exists and so does their anchor.
func checkMarkdownLinks(t *testing.T, rel string, n int, line string, cache map[string]map[string]bool) {
	t.Helper()
	for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(target, "#")
		path := filepath.Join(repoRoot, filepath.Dir(rel), filepath.FromSlash(file))
		if file == "" {
			path = filepath.Join(repoRoot, rel)
		}
		if inside, _ := filepath.Rel(repoRoot, path); strings.HasPrefix(filepath.ToSlash(inside), "../") {
			t.Errorf("%s:%d: links %s, outside the repository", rel, n, target)
			continue
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s:%d: links %s, which does not exist", rel, n, target)
			continue
		}
		if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(t, path, cache)[anchor] {
			t.Errorf("%s:%d: links %s, which has no such anchor", rel, n, target)
		}
	}
}

// TestNothingCitesTheOldDocuments checks that no file cites the design documents that lived
// outside the repository: rules are cited as docs/design.md#rule-N and so on. Shipped migrations
// are exempt, since they are never edited.
func TestNothingCitesTheOldDocuments(t *testing.T) {
	for _, rel := range repoFiles(t) {
		if shippedMigrations[rel] || rel == "docs/index_test.go" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, rel))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			if m := oldCitation.FindString(line); m != "" {
				t.Errorf("%s:%d: cites %s; cite docs/ (see docs/README.md#citing-a-rule)", rel, n+1, m)
			}
		}
	}
}
