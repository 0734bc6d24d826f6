package clients

import (
	"testing"

	"maven/internal/enumtest"
)

// TestEveryStateAndKindHasItsWords: every State and Kind constant is in its table, once, with
// words of its own, which /clients and `maven client list` show (docs/style.md#enumerations).
func TestEveryStateAndKindHasItsWords(t *testing.T) {
	enumtest.Listed(t, ".", "State", States())
	enumtest.Listed(t, ".", "Kind", Kinds())
	seen := map[string]bool{}
	for _, s := range states {
		if s.Said == "" || seen[s.Said] {
			t.Errorf("state %q says %q", s.Member, s.Said)
		}
		seen[s.Said] = true
	}
	for _, k := range kinds {
		if k.Said == "" || seen[k.Said] {
			t.Errorf("kind %q says %q", k.Member, k.Said)
		}
		seen[k.Said] = true
	}
}
