package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"

	"maven/app/mcp/mcptest"
	"maven/app/oauth/oauthtest"
)

// TestSignInToAnOAuthServerWithOnePasskeyGesture: a remote server that refuses Maven shows on the
// servers card as needing a sign-in, naming its authorization server and the scopes; Sign in
// asks for exactly one passkey gesture, the browser goes to the authorization server, and once
// the owner allows it there, comes back to Maven, where the card shows the server connected and
// its tools are proposed (docs/design.md#rule-14, docs/design.md#rule-21, docs/design.md#rule-22).
func TestSignInToAnOAuthServerWithOnePasskeyGesture(t *testing.T) {
	t.Parallel()
	scripted := mcptest.NewScripted(mcptest.ToolSpec{Name: "list_tasks", Description: "Lists tasks.", ReadOnly: true, Text: "none"})
	t.Cleanup(scripted.Close)
	fake := oauthtest.New(t, scripted.HTTPHandler(), oauthtest.Options{Page: true, ChallengeScope: "tasks:read"})
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"tasks": map[string]any{"type": "http", "url": fake.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	m := startMaven(t, mavenOptions{Config: string(cfg)})
	tb := newBrowser(t)
	authID := registerOwner(t, m, tb)
	tb.Goto(m.URL("/tools"))

	server := tb.Page.Locator(`[data-server="tasks"]`)
	check(t, tb.Expect.Locator(server).ToHaveAttribute("data-state", "needs-auth"), "the server needs a sign-in")
	check(t, tb.Expect.Locator(server).ToContainText(fake.Issuer), "the card names the authorization server")
	check(t, tb.Expect.Locator(server).ToContainText("tasks:read"), "and the scope")
	checkAxe(t, tb, "the servers card with a server that needs a sign-in")

	before := signCount(t, tb, authID)
	check(t, button(server, "Sign in").Click(), "click Sign in")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexp.MustCompile("^"+regexp.QuoteMeta(fake.Issuer+"/authorize?"))), "the browser is at the authorization server")
	if after := signCount(t, tb, authID); after != before+1 {
		t.Errorf("sign count %d → %d: want exactly one assertion for the step-up", before, after)
	}
	check(t, tb.Page.GetByRole(*playwright.AriaRoleLink, playwright.PageGetByRoleOptions{Name: "Allow"}).Click(), "allow Maven at the authorization server")

	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexp.MustCompile(`/tools(#mcp-servers)?$`)), "back on /tools")
	server = tb.Page.Locator(`[data-server="tasks"]`)
	check(t, tb.Expect.Locator(server).ToHaveAttribute("data-state", "connected"), "the server is connected")
	waitTool(t, m, "tasks_list_tasks", "proposed")
	if p := fake.Problems(); len(p) > 0 {
		t.Fatalf("the authorization server saw mistakes: %v", p)
	}
	if out := m.CLI("events", "--json"); !strings.Contains(out, `"oauth_signed_in"`) {
		t.Fatalf("the activity feed does not record the sign-in:\n%s", out)
	}
}

// TestAPollDuringTheStepUpLosesNoClick: the servers card refreshes itself every two seconds, and
// a refresh that was on its way when the passkey prompt opened lands while it is open. It must
// not swap the card, and so the Sign in form, away under the prompt: htmx sends nothing from an
// element no longer in the page, and the owner's click would be lost without a word once the
// passkey said yes. Here the refresh is held back until the step-up's answer is on its way.
func TestAPollDuringTheStepUpLosesNoClick(t *testing.T) {
	t.Parallel()
	scripted := mcptest.NewScripted(mcptest.ToolSpec{Name: "list_tasks", Description: "Lists tasks.", ReadOnly: true, Text: "none"})
	t.Cleanup(scripted.Close)
	fake := oauthtest.New(t, scripted.HTTPHandler(), oauthtest.Options{Page: true, ChallengeScope: "tasks:read"})
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"tasks": map[string]any{"type": "http", "url": fake.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	m := startMaven(t, mavenOptions{Config: string(cfg)})
	tb := newBrowser(t)
	registerOwner(t, m, tb)
	tb.Goto(m.URL("/tools"))
	server := tb.Page.Locator(`[data-server="tasks"]`)
	check(t, tb.Expect.Locator(server).ToHaveAttribute("data-state", "needs-auth"), "the server needs a sign-in")

	poll := holdNext(t, tb, "**/tools/servers*", "the servers card's refresh")()
	// The refresh is on its way; its answer reaches the page once the passkey has answered.
	check(t, tb.Page.Route("**/step-up/finish", func(r playwright.Route) {
		poll.Continue()
		r.Continue()
	}), "intercept the step-up's finish")

	check(t, button(server, "Sign in").Click(), "click Sign in")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexp.MustCompile("^"+regexp.QuoteMeta(fake.Issuer+"/authorize?"))),
		"the browser is at the authorization server: the click survived the refresh")
}
