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
// read-only, and carries no arguments or is named in allow_tools runs at once; and a call
// within the limits of a row whose owner let them run without asking (rule 33).
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
		// unasked: within the limits of a row set to run them without asking.
		unasked bool
	}{
		{"read-only, no arguments", readOnly, nil, nil, ClassRunNow, false},
		{"read-only, arguments, allow_tools names it", readOnly, args, []string{"list"}, ClassRunNow, false},
		{"read-only, arguments, allow_tools names another", readOnly, args, []string{"other"}, ClassArguments, false},
		{"read-only, arguments, no allow_tools", readOnly, args, nil, ClassArguments, false},
		{"destructive", destructive, nil, []string{"delete"}, ClassDestructive, false},
		{"destructive though it claims read-only", destructiveClaimingReadOnly, nil, nil, ClassDestructive, false},
		{"neither destructive nor read-only", claimsNothing, nil, nil, ClassNotReadOnly, false},
		{"a local command", local, nil, nil, ClassDestructive, false},
		{"destructive, within limits to run unasked", destructive, args, nil, ClassWithinLimits, true},
		{"read-only, arguments, no allow_tools, within limits to run unasked", readOnly, args, nil, ClassWithinLimits, true},
	} {
		if got := Classify(c.row, c.args, c.allow, c.unasked); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		if got := Classify(c.row, c.args, c.allow, c.unasked); got.NeedsOwner() != (c.want != ClassRunNow && c.want != ClassWithinLimits) {
			t.Errorf("%s: NeedsOwner is %v", c.name, got.NeedsOwner())
		}
	}
}
