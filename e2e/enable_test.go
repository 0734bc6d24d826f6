package e2e

import (
	"testing"
)

// TestEnableWithStepUp: a tool a scripted MCP server offers shows up proposed; `Enable` asks for
// the passkey, the authenticator answers, and the row turns enabled in place — and the database
// agrees.
func TestEnableWithStepUp(t *testing.T) {
	t.Parallel()
	j := startTaskJourney(t, "5m")
	m, tb, authID, list := j.m, j.tb, j.authID, j.list
	r := row(tb, list.ID)
	check(t, tb.Expect.Locator(r).ToHaveAttribute("data-state", "proposed"), "row proposed")
	check(t, tb.Expect.Locator(r).ToHaveAttribute("data-tool-name", "tasks_list_tasks"), "row name")

	before := signCount(t, tb, authID)
	check(t, button(r, "Enable").Click(), "click Enable")
	check(t, tb.Expect.Locator(r).ToHaveAttribute("data-state", "enabled"), "row enabled")
	check(t, tb.Expect.Locator(button(r, "Disable")).ToBeVisible(), "Disable offered on the enabled row")
	check(t, tb.Expect.Locator(button(r, "Enable")).ToHaveCount(0), "no Enable on the enabled row")
	if after := signCount(t, tb, authID); after != before+1 {
		t.Errorf("sign count %d → %d: want exactly one assertion for the step-up", before, after)
	}

	db := tools(t, m)
	if got := db["tasks_list_tasks"].State; got != "enabled" {
		t.Errorf("database: tasks_list_tasks is %q, want enabled", got)
	}
	if got := db["tasks_delete_task"].State; got != "proposed" {
		t.Errorf("database: tasks_delete_task is %q, want it untouched (proposed)", got)
	}
	check(t, tb.Expect.Locator(row(tb, db["tasks_delete_task"].ID)).ToHaveAttribute("data-state", "proposed"), "the other row stays proposed")
	// Without a reload, the row stays where it was and says what was done, and the counts agree.
	enabledRow := row(tb, db["tasks_list_tasks"].ID)
	check(t, tb.Expect.Locator(enabledRow.Locator(".tool-line .feedback")).ToHaveText("Enabled."), "the row says it was enabled")
	check(t, tb.Expect.Locator(enabledRow.Locator(".tool-line .feedback")).ToBeFocused(), "focus stays on the row")
	check(t, tb.Expect.Locator(tb.Page.Locator(`#tool-filters [data-state-filter="enabled"] .n`)).ToHaveText("1"), "enabled count follows")
	check(t, tb.Expect.Locator(tb.Page.Locator(`#tool-filters [data-state-filter="proposed"] .n`)).ToHaveText("1"), "proposed count follows")

	// The page after a reload says the same as the database.
	tb.Goto(m.URL("/tools"))
	check(t, tb.Expect.Locator(r).ToHaveAttribute("data-state", "enabled"), "row enabled after reload")
}
