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

// TestEveryApprovalStateHasATone: /approvals shows every state of a pending call with its tone
// ("attention" only for the calls that wait for the owner).
func TestEveryApprovalStateHasATone(t *testing.T) {
	enumtest.Listed(t, "../app/pending", "State", approvalTones.Members())
	for _, s := range approvalTones {
		if s.Said != "ok" && s.Said != "calm" && s.Said != "trouble" && s.Said != "attention" {
			t.Errorf("state %q has the tone %q, not ok, calm, trouble or attention", s.Member, s.Said)
		}
	}
}

// TestEveryApprovalEventHasATone: /activity shows every event of a pending call with its tone.
func TestEveryApprovalEventHasATone(t *testing.T) {
	enumtest.Listed(t, "../app/pending", "Event", approvalEventTones.Members())
	for _, e := range approvalEventTones {
		if e.Said != "ok" && e.Said != "calm" && e.Said != "trouble" {
			t.Errorf("event %q has the tone %q, not ok, calm or trouble", e.Member, e.Said)
		}
	}
}
