package voice_test

import (
	"context"
	"encoding/json"
	"testing"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/limits"
	"maven/app/voice"
)

const thermostatSchema = `{"type":"object","properties":{"temperature":{"type":"number"},
	"mode":{"type":"string","enum":["heat","cool","off"]},"unit":{"type":"string"}},"required":["temperature","unit"]}`

// setLimits saves js as row's limits, as the owner does on /tools.
func (w *world) setLimits(t *testing.T, row allowlist.Tool, js string) {
	t.Helper()
	var set limits.Set
	if err := json.Unmarshal([]byte(js), &set); err != nil {
		t.Fatal(err)
	}
	d, err := limits.Digest(row.Fingerprint, set)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.limits.Save(context.Background(), row.ID, row.Fingerprint, set, authtest.Proof(t, auth.One(auth.ActionSetLimits, row.ID, d))); err != nil {
		t.Fatal(err)
	}
}

// TestASlotOutsideTheLimitsIsAskedAgain: a phrase's slot outside the owner's limit is asked
// for again, saying the limit, and never sent; a value the owner fixed is filled without a
// question; within the limits the destructive row still gets its confirm turn until the owner
// lets such calls run without asking (docs/design.md#rule-33).
func TestASlotOutsideTheLimitsIsAskedAgain(t *testing.T) {
	w := newWorld(t)
	row := w.addPhrased(t, "home", "set_temperature", thermostatSchema, false,
		"set the heat to {temperature}", "set the heat to {temperature} on {mode}")
	w.setLimits(t, row, `{"properties":{"temperature":{"minimum":17,"maximum":23},"mode":{"enum":["heat","cool"]},"unit":{"const":"celsius"}}}`)

	r := w.turn("set the heat to 30")
	if r.Outcome != voice.OutcomeAsk || r.Speech != "Temperature must be between 17 and 23. What temperature? Say a number." {
		t.Fatalf("%+v", r)
	}
	if r = w.turn("twenty"); r.Outcome != voice.OutcomeConfirm || r.Speech != "Run set temperature on home with temperature 20 and unit celsius? It goes without mode. Say yes to confirm." {
		t.Fatalf("%+v", r)
	}
	if r = w.turn("yes"); r.Outcome != voice.OutcomeRan || w.runner.count() != 1 || w.runner.calls[0] != `home_set_temperature {"temperature":20,"unit":"celsius"}` {
		t.Fatalf("%+v %v", r, w.runner.calls)
	}
	if r = w.turn("set the heat to 20 on off"); r.Outcome != voice.OutcomeAsk || r.Speech != "Mode must be heat or cool. Which mode: heat or cool?" {
		t.Fatalf("%+v", r)
	}
	w.turn("cancel")

	w.setLimits(t, row, `{"properties":{"temperature":{"minimum":17,"maximum":23},"unit":{"const":"celsius"}},"run_without_asking":true}`)
	if r = w.turn("set the heat to 21"); r.Outcome != voice.OutcomeRan || w.runner.count() != 2 || w.runner.calls[1] != `home_set_temperature {"temperature":21,"unit":"celsius"}` {
		t.Fatalf("within limits to run without asking: %+v %v", r, w.runner.calls)
	}
	if r = w.turn("set the heat to 24"); r.Outcome != voice.OutcomeAsk || w.runner.count() != 2 {
		t.Fatalf("outside limits to run without asking: %+v %v", r, w.runner.calls)
	}
}

// TestAPositionalArgumentOutsideTheLimitsIsRefused: the words after a tool's name, bound by
// rule 15, are refused when outside the owner's limit, saying it, and nothing runs.
func TestAPositionalArgumentOutsideTheLimitsIsRefused(t *testing.T) {
	w := newWorld(t)
	row, err := w.svc.Get(context.Background(), w.ids["vikunja_search_tasks"])
	if err != nil {
		t.Fatal(err)
	}
	w.setLimits(t, row, `{"properties":{"query":{"maxLength":5}}}`)
	r := w.turn("search tasks groceries for the week")
	if r.Outcome != voice.OutcomeRefused || r.Speech != "I did not run search tasks on vikunja: Query must be at most 5 characters long." || w.runner.count() != 0 {
		t.Fatalf("%+v %v", r, w.runner.calls)
	}
	if r = w.turn("search tasks milk"); r.Outcome != voice.OutcomeRan || w.runner.count() != 1 {
		t.Fatalf("%+v %v", r, w.runner.calls)
	}
}
