package e2e

import (
	"net/http"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestPageAtAnotherAddressLinksToTheConfiguredOne: the owner opens Maven by its IP address,
// which is not one of its configured origins. The page is refused (421) with a short, styled
// page that names the configured origin as a link; following it reaches the unlock or sign-in
// page there. Nothing of the session or the passkeys is offered at the wrong address.
func TestPageAtAnotherAddressLinksToTheConfiguredOne(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	tb := newBrowser(t)

	res, err := tb.Page.Goto("http://"+m.Addr+"/login", playwright.PageGotoOptions{Timeout: playwright.Float(float64(actionTimeout.Milliseconds()))})
	check(t, err, "open Maven by its IP address")
	if res.Status() != http.StatusMisdirectedRequest {
		t.Fatalf("GET /login at %s: %d, want 421", m.Addr, res.Status())
	}
	page := tb.Page.Locator("#wrong-host")
	check(t, tb.Expect.Locator(page.Locator("h1")).ToHaveText("Maven is not at this address"), "the refusal says what happened")
	link := page.Locator("ul.origins").GetByRole(*playwright.AriaRoleLink, playwright.LocatorGetByRoleOptions{Name: m.BaseURL, Exact: playwright.Bool(true)})
	check(t, tb.Expect.Locator(link).ToHaveAttribute("href", m.BaseURL+"/"), "it links to the configured origin")
	check(t, tb.Expect.Locator(pageButton(tb.Page, "Sign in with passkey")).ToHaveCount(0), "no sign-in at the wrong address")
	tb.Screenshot("wrong-address")

	check(t, link.Click(), "follow the link")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexpOf(`^`+m.BaseURL+`/`)), "at the configured origin")
	check(t, tb.Expect.Locator(tb.Page.Locator("#wrong-host")).ToHaveCount(0), "the page answers there")
}
