package handlers

import (
	"testing"

	"maven/internal/enumtest"
)

// TestEveryOutcomeHasATone: the activity page offers every voice outcome once, with its tone
// (docs/style.md#enumerations).
func TestEveryOutcomeHasATone(t *testing.T) {
	enumtest.Listed(t, "../app/voice", "Outcome", outcomeTones.Members())
	for _, o := range outcomeTones {
		if o.Said != "ok" && o.Said != "calm" && o.Said != "trouble" {
			t.Errorf("outcome %q has the tone %q, not ok, calm or trouble", o.Member, o.Said)
		}
	}
}

// TestEveryAgentOutcomeHasATone: the activity page shows every outcome of an agent's call with
// its tone.
func TestEveryAgentOutcomeHasATone(t *testing.T) {
	enumtest.Listed(t, "../app/agents", "Outcome", agentOutcomeTones.Members())
	for _, o := range agentOutcomeTones {
		if o.Said != "ok" && o.Said != "calm" && o.Said != "trouble" {
			t.Errorf("outcome %q has the tone %q, not ok, calm or trouble", o.Member, o.Said)
		}
	}
}
