package mcp

import (
	"testing"

	"maven/internal/enumtest"
)

// TestEveryStateHasItsWords: every State constant is in states, once, with the words the card
// and `maven status` say of it, and is either trouble, or waits for the owner, or neither
// (docs/style.md#enumerations).
func TestEveryStateHasItsWords(t *testing.T) {
	listed := map[State]bool{}
	for _, st := range states {
		if listed[st.state] {
			t.Errorf("state %q is in states twice", st.state)
		}
		listed[st.state] = true
		if st.words == "" {
			t.Errorf("state %q has no words in states", st.state)
		}
		if st.needsOwner && st.trouble {
			t.Errorf("state %q both needs the owner and is trouble: a failure is only trouble", st.state)
		}
	}
	declared := enumtest.Values(t, ".", "State")
	for _, v := range declared {
		if !listed[State(v)] {
			t.Errorf("state %q is declared but not in states (status.go): give it its words there", v)
		}
	}
	if len(declared) != len(states) {
		t.Errorf("status.go declares %d states and states lists %d", len(declared), len(states))
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
