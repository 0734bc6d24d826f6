package agents

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"

	"maven/app/allowlist"
)

// constantsOf returns the names' values of the constants of type typ declared in file.
func constantsOf(t *testing.T, file, typ string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		gen, ok := d.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); ok && id.Name == typ {
				for _, val := range v.Values {
					out = append(out, val.(*ast.BasicLit).Value)
				}
			}
		}
	}
	return out
}

// TestEveryClassHasItsWords: the list of classes holds every Class constant once, each with
// words of its own (docs/style.md#enumerations).
func TestEveryClassHasItsWords(t *testing.T) {
	declared := constantsOf(t, "class.go", "Class")
	if len(declared) != len(Classes()) {
		t.Errorf("class.go declares %d classes, the list holds %d", len(declared), len(Classes()))
	}
	seen := map[string]bool{}
	for _, c := range Classes() {
		if !slices.Contains(declared, `"`+string(c)+`"`) {
			t.Errorf("the list holds %q, which class.go does not declare", c)
		}
		if w := c.Words(); w == "" || w == string(c) || seen[w] {
			t.Errorf("class %q has no words of its own: %q", c, w)
		}
		seen[c.Words()] = true
	}
}

// TestEveryOutcomeHasItsWords: the list of outcomes holds every Outcome constant once, each with
// words of its own.
func TestEveryOutcomeHasItsWords(t *testing.T) {
	declared := constantsOf(t, "outcome.go", "Outcome")
	if len(declared) != len(Outcomes()) {
		t.Errorf("outcome.go declares %d outcomes, the list holds %d", len(declared), len(Outcomes()))
	}
	seen := map[string]bool{}
	for _, o := range Outcomes() {
		if !slices.Contains(declared, `"`+string(o)+`"`) {
			t.Errorf("the list holds %q, which outcome.go does not declare", o)
		}
		if w := o.Words(); w == "" || seen[w] {
			t.Errorf("outcome %q has no words of its own: %q", o, w)
		}
		seen[o.Words()] = true
	}
}

// TestClassify is rule 28's decision: only a call of a row that is not destructive, claims
// read-only, and carries no arguments or is named in allow_tools runs at once.
func TestClassify(t *testing.T) {
	readOnly := allowlist.Tool{Cmd: []string{"mcp", "s", "list"}, ReadOnly: true}
	destructive := allowlist.Tool{Cmd: []string{"mcp", "s", "delete"}, Destructive: true}
	claimsNothing := allowlist.Tool{Cmd: []string{"mcp", "s", "odd"}}
	destructiveClaimingReadOnly := allowlist.Tool{Cmd: []string{"mcp", "s", "odd"}, ReadOnly: true, Destructive: true}
	local := allowlist.Tool{Cmd: []string{"/usr/bin/true"}, Destructive: true}
	args := map[string]any{"q": "x"}
	for _, c := range []struct {
		name  string
		row   allowlist.Tool
		args  map[string]any
		allow []string
		want  Class
	}{
		{"read-only, no arguments", readOnly, nil, nil, ClassRunNow},
		{"read-only, arguments, allow_tools names it", readOnly, args, []string{"list"}, ClassRunNow},
		{"read-only, arguments, allow_tools names another", readOnly, args, []string{"other"}, ClassArguments},
		{"read-only, arguments, no allow_tools", readOnly, args, nil, ClassArguments},
		{"destructive", destructive, nil, []string{"delete"}, ClassDestructive},
		{"destructive though it claims read-only", destructiveClaimingReadOnly, nil, nil, ClassDestructive},
		{"neither destructive nor read-only", claimsNothing, nil, nil, ClassNotReadOnly},
		{"a local command", local, nil, nil, ClassDestructive},
	} {
		if got := Classify(c.row, c.args, c.allow); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		if got := Classify(c.row, c.args, c.allow); got.NeedsOwner() != (c.want != ClassRunNow) {
			t.Errorf("%s: NeedsOwner is %v", c.name, got.NeedsOwner())
		}
	}
}
