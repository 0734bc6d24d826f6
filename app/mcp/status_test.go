package mcp

import (
	"testing"

	"maven/internal/enumtest"
)

// TestEveryStateHasItsWords: every State constant is in states, once, with the words the card
// and `maven status` say of it, and is either trouble, or waits for the owner, or neither
// (docs/style.md#enumerations).
func TestEveryStateHasItsWords(t *testing.T) {
	enumtest.Listed(t, ".", "State", States())
	for _, st := range states {
		if st.Said.words == "" {
			t.Errorf("state %q has no words in states (status.go)", st.Member)
		}
		if st.Said.needsOwner && st.Said.trouble {
			t.Errorf("state %q both needs the owner and is trouble: a failure is only trouble", st.Member)
		}
	}
}

func TestRecordedReadsABackoffAsConnecting(t *testing.T) {
	for _, st := range States() {
		want := st
		if st == StateBackoff {
			want = StateConnecting
		}
		if got := st.Recorded(); got != want {
			t.Errorf("%s is recorded as %s, want %s", st, got, want)
		}
	}
}
