package e2e

import (
	"fmt"
	"net/http"
	"testing"
)

// TestStepUpBoundToOneTool: a step-up performed for enabling tool A cannot be spent on tool B.
// The page drives the JSON endpoints itself: begin for A, the passkey assertion, finish; then a
// POST to enable B is refused with 403 and B stays proposed, while A's grant is still there for A.
func TestStepUpBoundToOneTool(t *testing.T) {
	t.Parallel()
	j := startTaskJourney(t, "5m")
	m, tb, a, b := j.m, j.tb, j.list, j.del

	stepUp(t, tb, a.ID)
	res := enableFrom(t, tb, b.ID)
	if res.Status != http.StatusForbidden {
		t.Fatalf("enable B with A's step-up: %+v, want 403", res)
	}
	if su, _ := res.Body["step_up"].(map[string]any); su == nil || fmt.Sprint(su["items"]) != fmt.Sprintf("[map[fingerprint:%s id:%d]]", *b.Fingerprint, b.ID) {
		t.Errorf("the 403 asks for a step-up for B: %v", res.Body)
	}
	if got := toolState(t, m, b.Name); got != "proposed" {
		t.Fatalf("database: B is %q after the refused enable, want proposed", got)
	}
	if got := toolState(t, m, a.Name); got != "proposed" {
		t.Fatalf("database: A is %q, want proposed: nothing enabled it yet", got)
	}

	// A's grant was not spent by the attempt on B: it still enables A, once.
	res = enableFrom(t, tb, a.ID)
	if res.Type != "opaqueredirect" && res.Status != http.StatusOK {
		t.Fatalf("enable A with A's step-up: %+v, want success", res)
	}
	waitTool(t, m, a.Name, "enabled")
	if got := toolState(t, m, b.Name); got != "proposed" {
		t.Errorf("database: B is %q, want proposed", got)
	}

	tb.Goto(m.URL("/tools"))
	check(t, tb.Expect.Locator(row(tb, a.ID)).ToHaveAttribute("data-state", "enabled"), "A enabled on the page")
	check(t, tb.Expect.Locator(row(tb, b.ID)).ToHaveAttribute("data-state", "proposed"), "B proposed on the page")
}
