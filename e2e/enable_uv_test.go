package e2e

import (
	"testing"

	"maven/app/mcp/mcptest"
)

// TestEnableRefusedWithoutUserVerification: when the authenticator's answer to the step-up says
// the user was not verified (UV flag cleared), Maven refuses it: the page explains why, the row
// stays proposed, and so does the database. With verification back, the same button works.
func TestEnableRefusedWithoutUserVerification(t *testing.T) {
	t.Parallel()
	mcpServer := startScripted(t, mcptest.ToolSpec{Name: "list_tasks", Description: "Lists open tasks.", ReadOnly: true})
	m := startMaven(t, mavenOptions{Config: configFor("5m", mcpServer.URL)})
	tb := newBrowser(t)
	authID := registerOwner(t, m, tb)
	cdp := cdpSession(t, tb.Page)

	list := waitTool(t, m, "tasks_list_tasks", "proposed")
	tb.Goto(m.URL("/tools"))
	r := row(tb, list.ID)

	// The authenticator signs, but reports no user verification: the server sees the assertion
	// and must refuse it on this ceremony's own UV flag.
	setResponseOverrides(t, cdp, authID, responseOverrides{IsBadUV: true})
	before := signCount(t, tb, authID)
	check(t, button(r, "Enable").Click(), "click Enable")
	// The refusal is said beside the button that was pressed, not at the top of the page.
	flash := r.Locator(".actions .feedback[data-kind=error]")
	check(t, tb.Expect.Locator(flash).ToContainText("did not verify you"), "a readable error beside the button")
	if after := signCount(t, tb, authID); after != before+1 {
		t.Fatalf("sign count %d → %d: the authenticator should have answered once", before, after)
	}
	check(t, tb.Expect.Locator(r).ToHaveAttribute("data-state", "proposed"), "row stays proposed")
	check(t, tb.Expect.Locator(button(r, "Enable")).ToBeEnabled(), "Enable still offered")
	if got := toolState(t, m, "tasks_list_tasks"); got != "proposed" {
		t.Errorf("database: %q, want proposed", got)
	}
	tb.Screenshot("uv-refused")

	// Verified again, the same button goes through: the refusal was about UV.
	setResponseOverrides(t, cdp, authID, responseOverrides{})
	check(t, button(r, "Enable").Click(), "click Enable again")
	check(t, tb.Expect.Locator(r).ToHaveAttribute("data-state", "enabled"), "row enabled with UV")
	check(t, tb.Expect.Locator(flash).ToHaveCount(0), "the error is gone")
	waitTool(t, m, "tasks_list_tasks", "enabled")
}
