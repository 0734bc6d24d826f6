package notify

import (
	"testing"

	"maven/internal/enumtest"
)

// TestEveryNotifierHasItsWords: every Notifier constant is in notifiers, once, with its name
// for the owner (docs/style.md#enumerations).
func TestEveryNotifierHasItsWords(t *testing.T) {
	enumtest.Listed(t, ".", "Notifier", Notifiers())
	for _, n := range notifiers {
		if n.Said == "" {
			t.Errorf("notifier %q has no words in notifiers (notify.go)", n.Member)
		}
	}
}
