package e2e

import (
	"testing"

	"maven/app/mcp/mcptest"
)

// TestDisableWithoutStepUp: disabling only narrows what can run, so `Disable` needs no passkey.
// The journey proves it by taking the authenticator away before clicking: a step-up could not
// succeed, yet the row turns disabled, on the page and in the database.
func TestDisableWithoutStepUp(t *testing.T) {
	t.Parallel()
	mcpServer := startScripted(t, mcptest.ToolSpec{Name: "list_tasks", Description: "Lists open tasks.", ReadOnly: true})
	m := startMaven(t, mavenOptions{Config: configFor("5m", mcpServer.URL)})
	tb := newBrowser(t)
	authID := registerOwner(t, m, tb)

	list := waitTool(t, m, "tasks_list_tasks", "proposed")
	tb.Goto(m.URL("/tools"))
	r := row(tb, list.ID)
	check(t, button(r, "Enable").Click(), "click Enable")
	check(t, tb.Expect.Locator(r).ToHaveAttribute("data-state", "enabled"), "row enabled")

	cdpSend(t, cdpSession(t, tb.Page), "WebAuthn.removeVirtualAuthenticator", map[string]any{"authenticatorId": authID}, nil)
	check(t, button(r, "Disable").Click(), "click Disable")
	check(t, tb.Expect.Locator(r).ToHaveAttribute("data-state", "disabled"), "row disabled")
	check(t, tb.Expect.Locator(button(r, "Enable")).ToBeVisible(), "Enable offered again")
	check(t, tb.Expect.Locator(tb.Page.Locator("#flash .flash")).ToHaveCount(0), "no message: nothing asked for a passkey")
	if got := toolState(t, m, "tasks_list_tasks"); got != "disabled" {
		t.Errorf("database: %q, want disabled", got)
	}
}
