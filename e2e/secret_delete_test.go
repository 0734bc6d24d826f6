package e2e

import (
	"strings"
	"testing"
)

// TestDeletingASecretAsksFirst: Delete opens a confirmation naming the servers that will stop;
// confirming asks for the passkey (one gesture), and the secret is gone, listed as missing again
// since the config still refers to it.
func TestDeletingASecretAsksFirst(t *testing.T) {
	t.Parallel()
	mcpServer := startScripted(t)
	m := startMaven(t, mavenOptions{Config: secretsConfig(t, mcpServer.URL)})
	tb := newBrowser(t)
	authID := registerOwner(t, m, tb)
	tb.Goto(m.URL("/secrets"))
	item := tb.Page.Locator(`[data-secret="tasks_token"]`)
	check(t, item.Locator("input[name=value]").Fill("tk-e2e-8086"), "type the value")
	check(t, button(item, "Set tasks_token").Click(), "set it")
	check(t, tb.Expect.Locator(item.Locator(".badge.sealed")).ToBeVisible(), "set")

	confirm := item.Locator("details.confirm")
	check(t, tb.Expect.Locator(button(item, "Delete tasks_token")).ToBeHidden(), "nothing is deleted in one click")
	check(t, confirm.Locator("summary").Click(), "click Delete…")
	check(t, tb.Expect.Locator(confirm).ToContainText("These servers stop until it is set again: tasks"), "the confirmation names the server that stops")
	tb.Screenshot("confirm")
	before := signCount(t, tb, authID)
	check(t, button(item, "Delete tasks_token").Click(), "confirm")
	check(t, tb.Expect.Locator(item).ToHaveAttribute("data-missing", ""), "gone, and missing again")
	if after := signCount(t, tb, authID); after != before+1 {
		t.Errorf("sign count %d → %d: deleting a secret needs one passkey gesture", before, after)
	}
	if out := m.CLI("secret", "list"); !strings.Contains(out, "Missing: tasks_token") {
		t.Errorf("maven secret list does not agree after the delete:\n%s", out)
	}
}
