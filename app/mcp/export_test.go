package mcp

import "maven/app/allowlist"

// NameSuffix is the suffix LocalName usually gives a pair whose name collides or is cut, for
// tests that check the names it gives.
func NameSuffix(server, tool string) string { return nameSuffix(server, tool, nameSuffixLen) }

// BindPositional binds tail to row's arguments as the voice service does, reading the row
// afresh: rule 15 in one call, for the tests of it.
func BindPositional(row allowlist.Tool, allowed bool, tail string) (map[string]any, error) {
	return NewPositional(row, allowed).Bind(tail)
}

// Canonical returns d's canonical form (see Fingerprint).
func (d Declared) Canonical() (string, error) {
	shape, err := Fingerprint(d)
	return shape.Canonical, err
}

// SetChurnBudget replaces the default budget; zero fields keep their defaults. Call it before
// the manager runs.
func (r *ToolReconciler) SetChurnBudget(b ChurnBudget) {
	r.budget = b.withDefaults()
}
