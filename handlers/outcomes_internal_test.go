package handlers

import (
	"testing"

	"maven/app/voice"
)

// TestEveryOutcomeHasATone: the activity page shows every voice outcome with a tone, and offers
// each once in its filter (docs/style.md#enumerations).
func TestEveryOutcomeHasATone(t *testing.T) {
	offered := map[voice.Outcome]int{}
	for _, o := range outcomeTones {
		offered[o.outcome]++
		if o.tone != "ok" && o.tone != "calm" && o.tone != "trouble" {
			t.Errorf("outcome %q has the tone %q, not ok, calm or trouble", o.outcome, o.tone)
		}
	}
	for _, o := range voice.Outcomes() {
		if offered[o] != 1 {
			t.Errorf("outcome %q is in outcomeTones (activity.go) %d times, not once: give it its tone there", o, offered[o])
		}
	}
	if len(outcomeTones) != len(voice.Outcomes()) {
		t.Errorf("outcomeTones has %d outcomes, voice.Outcomes %d", len(outcomeTones), len(voice.Outcomes()))
	}
}
