package e2e

import (
	"testing"

	"github.com/playwright-community/playwright-go"
	"golang.org/x/oauth2"

	"maven/app/mcp/mcptest"
)

// TestEveryPagePassesAxe runs axe-core on every page, at 1280 px and at 390 px on a phone, in
// light and in dark mode: setup, sign-in, the address refusal, /tools with proposals, enabled
// rows, a diff, a server and the batch bar, a phrase refused line by line, /passkeys, /approvals,
// /activity (and a filter it refused), /secrets (with a missing secret and a new recovery
// code), the consent page (signed out, and with the tools to tick), /clients (a client's tools
// unfolded), an error page, and /unlock while locked. No serious or critical violation is
// allowed.
func TestEveryPagePassesAxe(t *testing.T) {
	t.Parallel()
	mcpServer := startScripted(t,
		mcptest.ToolSpec{Name: "list_tasks", Description: "Lists open tasks.", ReadOnly: true},
		mcptest.ToolSpec{Name: "delete_task", Description: "Deletes a task."},
	)
	m := startMaven(t, mavenOptions{Config: secretsConfig(t, mcpServer.URL)})
	owner := newBrowser(t)
	registerOwner(t, m, owner)
	owner.Goto(m.URL("/secrets"))
	item := owner.Page.Locator(`[data-secret="tasks_token"]`)
	check(t, item.Locator("input[name=value]").Fill("tk-axe"), "type the secret")
	check(t, button(item, "Set tasks_token").Click(), "set it")
	check(t, owner.Expect.Locator(item.Locator(".badge.sealed")).ToBeVisible(), "set")
	list := waitTool(t, m, "tasks_list_tasks", "proposed")
	owner.Goto(m.URL("/tools"))
	check(t, button(row(owner, list.ID), "Enable").Click(), "enable one")
	check(t, owner.Expect.Locator(row(owner, list.ID)).ToHaveAttribute("data-state", "enabled"), "enabled")
	m.CLI("client", "add", "desk", "--tools", "tasks_list_tasks")
	consentURL := registerAgent(t, m, "E2E agent").cfg.AuthCodeURL("axe-state", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))

	for _, dev := range []device{desktop, phone, desktop.inDark(), phone.inDark()} {
		tb := newBrowser(t, dev)
		// Signed out: setup, sign-in, another address.
		tb.Goto(m.Rebase(setupLink(t, m)))
		checkAxe(t, tb, dev.name+" setup")
		tb.Goto(m.URL("/login"))
		checkAxe(t, tb, dev.name+" sign-in")
		_, err := tb.Page.Goto("http://"+m.Addr+"/login", playwright.PageGotoOptions{})
		check(t, err, "open another address")
		checkAxe(t, tb, dev.name+" wrong address")
		tb.Goto(consentURL)
		checkAxe(t, tb, dev.name+" consent, signed out")

		// Signed in, as the owner.
		owner.shareSession(tb, m.BaseURL)
		tb.Goto(m.URL("/tools"))
		check(t, tb.Expect.Locator(tb.Page.Locator(`[data-server="tasks"]`)).ToHaveAttribute("data-state", "connected"), "the server on the card")
		checkAxe(t, tb, dev.name+" tools")
		badPhrase(t, tb, list.ID)
		checkAxe(t, tb, dev.name+" tools with a phrase refused")
		check(t, tb.Page.Locator(`#tool-filters [data-state-filter="enabled"]`).Click(), "filter")
		check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexpOf(`state=enabled`)), "filtered")
		checkAxe(t, tb, dev.name+" tools filtered")
		tb.Goto(m.URL("/passkeys"))
		checkAxe(t, tb, dev.name+" passkeys")
		tb.Goto(m.URL("/approvals"))
		check(t, tb.Expect.Locator(tb.Page.Locator("#push h2")).ToHaveText("Notifications"), "the approvals page")
		checkAxe(t, tb, dev.name+" approvals")
		tb.Goto(consentURL)
		check(t, tb.Expect.Locator(pageButton(tb.Page, "Allow with passkey")).ToBeVisible(), "the consent page")
		checkAxe(t, tb, dev.name+" consent")
		tb.Goto(m.URL("/clients"))
		check(t, tb.Page.Locator(`[data-client="static:desk"] .client-tools summary`).Click(), "unfold a client's tools")
		checkAxe(t, tb, dev.name+" clients")
		if _, err := tb.Page.Goto(m.URL("/activity?outcome=no_match&day=not-a-day")); err != nil {
			t.Fatalf("open /activity with a bad day: %v", err)
		}
		checkAxe(t, tb, dev.name+" activity, a filter refused")
		tb.Goto(m.URL("/activity"))
		checkAxe(t, tb, dev.name+" activity")
		tb.Goto(m.URL("/secrets"))
		check(t, tb.Page.Locator("details.confirm summary").First().Click(), "open a delete confirmation")
		checkAxe(t, tb, dev.name+" secrets")
		if _, err := tb.Page.Goto(m.URL("/no-such-page")); err != nil {
			t.Fatalf("open a missing page: %v", err)
		}
		checkAxe(t, tb, dev.name+" error page")
	}

	// Locked: the unlock page, on a phone, as it is used.
	owner.Goto(m.URL("/tools"))
	check(t, pageButton(owner.Page, "Lock").Click(), "lock")
	check(t, owner.Expect.Page(owner.Page).ToHaveURL(regexpOf(`/unlock$`)), "at /unlock")
	for _, dev := range []device{phone, phone.inDark(), desktop} {
		tb := newBrowser(t, dev)
		tb.Goto(m.URL("/unlock"))
		check(t, tb.Page.Locator("#recovery summary").Click(), "open the recovery code form")
		checkAxe(t, tb, dev.name+" unlock")
	}
}

// setupLink asks the running daemon for a fresh setup link.
func setupLink(t *testing.T, m *mavenProc) string {
	t.Helper()
	link := setupLinkRE.FindString(m.CLI("setup-link"))
	if link == "" {
		t.Fatal("maven setup-link printed no link")
	}
	return link
}
