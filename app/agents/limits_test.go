package agents_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"maven/app/agents"
	"maven/app/agents/agentstest"
	"maven/app/limits"
	"maven/app/mcp/mcptest"
)

// thermostatTool is a destructive tool with a number, an enum and a string to limit.
var thermostatTool = mcptest.ToolSpec{Name: "set_temperature", Description: "Sets the thermostat.", Echo: true,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number"},"mode":{"type":"string","enum":["heat","cool","off"]},"unit":{"type":"string"}},"required":["temperature"]}`)}

func warmLimits(t *testing.T, unasked bool) limits.Set {
	t.Helper()
	var s limits.Set
	js := `{"properties":{"temperature":{"minimum":17,"maximum":23},"mode":{"enum":["heat","cool"]}},"run_without_asking":` +
		map[bool]string{true: "true", false: "false"}[unasked] + `}`
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLimitsAreWhatAgentsSeeAndWhatRuns: saving limits reaches a connected agent as a list
// change within a second; it is shown the schema narrowed by them; a call outside them is a
// tool error naming the property and the limit, never sent; a call within them of the
// destructive row still needs the owner until the owner lets such calls run without asking,
// and then runs, the feed saying why.
func TestLimitsAreWhatAgentsSeeAndWhatRuns(t *testing.T) {
	w, s := world(t, agentstest.Options{}, []mcptest.ToolSpec{thermostatTool}, "s_set_temperature")
	w.Clients.Set("c", agents.Policy{Name: "Home Assistant", AllTools: true})
	cs, changed := agent(t, w, "c")
	untilListed(t, cs, "s_set_temperature")

	w.SetLimits(t, "s_set_temperature", warmLimits(t, false))
	select {
	case <-changed:
	case <-time.After(time.Second):
		t.Fatal("no list change within a second of saving limits")
	}
	var temp map[string]any
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.Tools[0].InputSchema)
		var shown struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(b, &shown); err != nil {
			t.Fatal(err)
		}
		if temp = shown.Properties["temperature"]; temp["maximum"] == 23.0 {
			if mode := shown.Properties["mode"]["enum"].([]any); len(mode) != 2 || shown.Properties["unit"]["type"] != "string" {
				t.Errorf("the narrowed schema shows %s", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a second after the save, the agent is shown %s", b)
		}
	}
	if temp["minimum"] != 17.0 || temp["type"] != "number" {
		t.Errorf("temperature is shown as %v", temp)
	}

	text, isErr := call(t, cs, "s_set_temperature", map[string]any{"temperature": 30, "mode": "heat"})
	want := "The arguments do not fit s_set_temperature: temperature must be between 17 and 23 (the owner's limit), not 30. Nothing was done."
	if !isErr || text != want {
		t.Errorf("outside the limits:\n got %q (error %v)\nwant %q", text, isErr, want)
	}
	if text, isErr := call(t, cs, "s_set_temperature", map[string]any{"temperature": 20, "mode": "off"}); !isErr || !strings.Contains(text, "mode must be heat or cool") {
		t.Errorf("a mode outside the limits: %q (error %v)", text, isErr)
	}
	if text, isErr := call(t, cs, "s_set_temperature", map[string]any{"temperature": 20}); !isErr || !strings.Contains(text, "I've asked for your approval on your phone") {
		t.Errorf("within the limits, not to run unasked: %q (error %v)", text, isErr)
	}
	if n := s.Calls("set_temperature"); n != 0 {
		t.Fatalf("the server was called %d times", n)
	}
	e := w.Entries(t)
	if len(e) != 3 || e[2].Outcome != string(agents.OutcomeOutsideLimits) ||
		!strings.Contains(string(e[2].Detail), `"reason":"temperature must be between 17 and 23 (the owner's limit), not 30"`) {
		t.Errorf("the feed records %+v", e)
	}

	w.SetLimits(t, "s_set_temperature", warmLimits(t, true))
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		text, isErr := call(t, cs, "s_set_temperature", map[string]any{"temperature": 20})
		if !isErr && text == `{"temperature":20}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a second after letting them run unasked, a call within the limits answers %q (error %v)", text, isErr)
		}
	}
	if text, isErr := call(t, cs, "s_set_temperature", map[string]any{"temperature": 24}); !isErr || !strings.Contains(text, "temperature must be between 17 and 23") {
		t.Errorf("outside the limits that run unasked: %q (error %v)", text, isErr)
	}
	if n := s.Calls("set_temperature"); n != 1 {
		t.Errorf("the server was called %d times, want once", n)
	}
	if e := w.Entries(t); e[1].Outcome != "ran" || !strings.Contains(string(e[1].Detail), "within the limits you let run without asking") {
		t.Errorf("the feed records %+v", e[1])
	}
}

// TestARedefinitionVoidsTheLimitsForAgents: once the server redefines the limited row and the
// owner enables the new shape, the agent is shown the new schema without the limits, and the
// destructive row no longer runs unasked: it needs the owner again.
func TestARedefinitionVoidsTheLimitsForAgents(t *testing.T) {
	w, s := world(t, agentstest.Options{}, []mcptest.ToolSpec{thermostatTool}, "s_set_temperature")
	w.Clients.Set("c", agents.Policy{Name: "Home Assistant", AllTools: true})
	w.SetLimits(t, "s_set_temperature", warmLimits(t, true))
	cs, _ := agent(t, w, "c")
	if text, isErr := call(t, cs, "s_set_temperature", map[string]any{"temperature": 20}); isErr {
		t.Fatalf("within the limits: %q", text)
	}
	redefined := thermostatTool
	redefined.Description = "Sets the thermostat, and the boiler."
	s.Redefine(redefined)
	untilListed(t, cs)
	w.Enable(t, "s_set_temperature")
	untilListed(t, cs, "s_set_temperature")
	if text, isErr := call(t, cs, "s_set_temperature", map[string]any{"temperature": 20}); !isErr || !strings.Contains(text, "I've asked for your approval on your phone") {
		t.Errorf("the redefined row, enabled again: %q (error %v)", text, isErr)
	}
	if text, isErr := call(t, cs, "s_set_temperature", map[string]any{"temperature": 30}); !isErr || !strings.Contains(text, "I've asked for your approval on your phone") {
		t.Errorf("the old limits still hold: %q (error %v)", text, isErr)
	}
	if n := s.Calls("set_temperature"); n != 1 {
		t.Errorf("the server was called %d times, want once", n)
	}
}
