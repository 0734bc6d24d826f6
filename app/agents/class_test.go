package agents

import (
	"testing"

	"maven/app/allowlist"
	"maven/internal/enumtest"
)

// TestEveryClassHasItsWords: every Class constant is in classes, once, with words of its own
// (docs/style.md#enumerations).
func TestEveryClassHasItsWords(t *testing.T) {
	enumtest.Listed(t, ".", "Class", Classes())
	seen := map[string]bool{}
	for _, c := range classes {
		if c.Said == "" || seen[c.Said] {
			t.Errorf("class %q has no words of its own in classes (class.go): %q", c.Member, c.Said)
		}
		seen[c.Said] = true
	}
}

// TestEveryOutcomeHasItsWords: every Outcome constant is in outcomes, once, with words of its
// own.
func TestEveryOutcomeHasItsWords(t *testing.T) {
	enumtest.Listed(t, ".", "Outcome", Outcomes())
	seen := map[string]bool{}
	for _, o := range outcomes {
		if o.Said == "" || seen[o.Said] {
			t.Errorf("outcome %q has no words of its own in outcomes (outcome.go): %q", o.Member, o.Said)
		}
		seen[o.Said] = true
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
