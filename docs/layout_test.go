package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLayoutListsEveryPackage: the layout trees of README.md#layout and design.md#layout name
// every Go package of the repository (every directory go list ./... finds), and nothing that is
// not there, so a new package is written down where a newcomer looks for it.
func TestLayoutListsEveryPackage(t *testing.T) {
	packages := goPackageDirs(t)
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, readmeLayout, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	for file, text := range map[string]string{
		"README.md#layout":      readmeLayout,
		"docs/design.md#layout": section(t, "design.md", `<a id="layout"></a>`),
	} {
		listed := layoutTree(t, file, text)
		for _, dir := range packages {
			if !slices.Contains(listed, dir) {
				t.Errorf("%s does not list the package %s/", file, dir)
			}
		}
		for _, dir := range listed {
			if info, err := os.Stat(filepath.Join(repoRoot, dir)); err != nil || !info.IsDir() {
				t.Errorf("%s lists %s/, which is not a directory", file, dir)
			}
		}
	}
}

// layoutTree reads the first code block of text as a tree: each line names a directory
// ("app/", "cmd/maven/"), indented two spaces under its parent. It returns their paths.
func layoutTree(t *testing.T, file, text string) []string {
	t.Helper()
	_, block, ok := strings.Cut(text, "```\n")
	if ok {
		block, _, ok = strings.Cut(block, "```\n")
	}
	if !ok {
		t.Fatalf("%s has no code block", file)
	}
	var dirs, parents []string
	for _, line := range strings.Split(block, "\n") {
		name := strings.TrimLeft(line, " ")
		depth := (len(line) - len(name)) / 2
		name, _, _ = strings.Cut(name, " ")
		if !strings.HasSuffix(name, "/") {
			continue // a description's second line, or blank
		}
		if depth > len(parents) {
			t.Fatalf("%s: %q is indented under nothing", file, line)
		}
		parents = append(parents[:depth], strings.TrimSuffix(name, "/"))
		dirs = append(dirs, strings.Join(parents, "/"))
	}
	if len(dirs) == 0 {
		t.Fatalf("%s: its code block names no directory", file)
	}
	return dirs
}

// goPackageDirs returns the directories holding a Go file, as go list ./... walks them: not
// node_modules, testdata, or a directory whose name starts with "." or "_".
func goPackageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") ||
				d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if dir := filepath.ToSlash(filepath.Dir(rel)); strings.HasSuffix(rel, ".go") && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}
