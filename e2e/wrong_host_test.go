package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestPageAtAnotherAddressLinksToTheConfiguredOne: the owner opens the setup link by Maven's IP
// address, which is not one of its configured origins. The page is refused (421) with a short,
// styled page that names the configured origin as a link to the same page there, token and all;
// following it reaches the setup page there, and the passkey registers. Nothing of the session
// or the passkeys is offered at the wrong address.
func TestPageAtAnotherAddressLinksToTheConfiguredOne(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	tb := newBrowser(t)
	addAuthenticator(t, tb.Page, passkey())

	setup := m.Rebase(m.SetupLink())
	atIP := "http://" + m.Addr + strings.TrimPrefix(setup, m.BaseURL)
	res, err := tb.Page.Goto(atIP, playwright.PageGotoOptions{Timeout: playwright.Float(float64(actionTimeout.Milliseconds()))})
	check(t, err, "open the setup link by Maven's IP address")
	if res.Status() != http.StatusMisdirectedRequest {
		t.Fatalf("GET %s: %d, want 421", atIP, res.Status())
	}
	page := tb.Page.Locator("#wrong-host")
	check(t, tb.Expect.Locator(page.Locator("h1")).ToHaveText("Maven is not at this address"), "the refusal says what happened")
	link := page.Locator("ul.origins").GetByRole(*playwright.AriaRoleLink, playwright.LocatorGetByRoleOptions{Name: m.BaseURL, Exact: playwright.Bool(true)})
	check(t, tb.Expect.Locator(link).ToHaveAttribute("href", setup), "it links to the same page at the configured origin, token kept")
	check(t, tb.Expect.Locator(pageButton(tb.Page, "Register passkey")).ToHaveCount(0), "no registration at the wrong address")
	tb.Screenshot("wrong-address")

	check(t, link.Click(), "follow the link")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(setup), "at the configured origin, on the same page")
	check(t, tb.Expect.Locator(tb.Page.Locator("#wrong-host")).ToHaveCount(0), "the page answers there")
	check(t, pageButton(tb.Page, "Register passkey").Click(), "the setup link still works: register")
	check(t, registered(tb, tb.Page.Locator("#recovery-code").Or(tb.Page.Locator(`nav[aria-label="Main"]`)).First()), "registered")
}
