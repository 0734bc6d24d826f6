package e2e

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestSecretsPage is the owner setting a secret and replacing the recovery code on /secrets:
// `Set secret` asks for the passkey (the step-up is done and the form sent again by maven.js),
// the name is listed and the value never shown; `Make a new recovery code` asks for the passkey
// too and shows the new code once.
func TestSecretsPage(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	tb := newBrowser(t, phone)
	registerOwner(t, m, tb)

	tb.Goto(m.URL("/secrets"))
	nav := tb.Page.Locator(`nav[aria-label="Main"] > *`)
	// One line: every item's middle within a few pixels of the others'; and Sign out, which acts
	// on the session, above it, on the brand's line.
	ys := middles(t, nav)
	if len(ys) < 5 || slices.Max(ys)-slices.Min(ys) > 4 {
		t.Errorf("the nav at 390 px is not one line: its items' middles are %v", ys)
	}
	brand, signOut := middles(t, tb.Page.Locator(".masthead .brand")), middles(t, tb.Page.Locator(".masthead .session button"))
	if len(brand) != 1 || len(signOut) == 0 || slices.Max(signOut)-brand[0] > 4 || brand[0]-slices.Min(signOut) > 4 {
		t.Errorf("at 390 px Lock and Sign out (middles %v) are not on the brand's line (middle %v)", signOut, brand)
	}
	check(t, tb.Page.Locator("#secret-name").Fill("vikunja_token"), "type the name")
	check(t, tb.Page.Locator("#secret-value").Fill("tk-e2e-771"), "type the value")
	check(t, pageButton(tb.Page, "Set secret").Click(), "click Set secret")
	check(t, tb.Expect.Locator(tb.Page.Locator(`[data-secret="vikunja_token"]`)).ToBeVisible(), "the secret is listed")
	done := tb.Page.Locator("#secrets [data-focus]")
	check(t, tb.Expect.Locator(done).ToHaveText("“vikunja_token” is set and sealed."), "the page says what was done")
	check(t, tb.Expect.Locator(done).ToBeFocused(), "and focus is on it")
	html, err := tb.Page.Content()
	check(t, err, "read the page")
	if strings.Contains(html, "tk-e2e-771") {
		t.Fatal("the secret's value is on the page")
	}
	if strings.Contains(m.Log(), "tk-e2e-771") {
		t.Fatal("the secret's value reached the daemon's log")
	}

	check(t, pageButton(tb.Page, "Make a new recovery code").Click(), "click Make a new recovery code")
	codeEl := tb.Page.Locator("#recovery [data-recovery-code]")
	check(t, tb.Expect.Locator(codeEl).ToHaveText(regexp.MustCompile(`^[0-9A-Z]{4}(-[0-9A-Z]{4}){6}$`)), "the new code is shown")
	check(t, tb.Expect.Locator(tb.Page.Locator("#new-code-heading")).ToBeFocused(), "focus on the code's heading")
	// At 390 px the code takes two lines or more, and wraps only at its hyphens: no group of
	// four is cut.
	wraps, err := codeEl.Evaluate(`el => {
		const groups = Array.from(el.childNodes).filter(n => n.nodeType === Node.TEXT_NODE);
		const lines = new Set(groups.map(g => { const r = document.createRange(); r.selectNodeContents(g); return Math.round(r.getBoundingClientRect().top); }));
		const whole = groups.every(g => { const r = document.createRange(); r.selectNodeContents(g); return r.getClientRects().length === 1; });
		return { groups: groups.length, lines: lines.size, whole: whole };
	}`, nil)
	check(t, err, "measure the code")
	if w, _ := wraps.(map[string]any); w["groups"] != 7 || w["whole"] != true || w["lines"] == 1 {
		t.Errorf("the code on a phone: %v, want 7 groups over several lines, none cut", wraps)
	}
	download, err := tb.Page.ExpectDownload(func() error { return pageButton(tb.Page, "Download").Click() })
	check(t, err, "download the code")
	if got := download.SuggestedFilename(); got != "maven-recovery-code.txt" {
		t.Errorf("downloaded as %q", got)
	}
	path, err := download.Path()
	check(t, err, "read the download")
	code, err := codeEl.TextContent()
	check(t, err, "read the code")
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), code) {
		t.Errorf("the download does not hold the code: %v", err)
	}
	tb.Screenshot("new-recovery-code")
	saved := tb.Page.GetByRole(*playwright.AriaRoleLink, playwright.PageGetByRoleOptions{Name: "I have saved it"})
	check(t, saved.Click(), "acknowledge")
	check(t, tb.Expect.Locator(codeEl).ToHaveCount(0), "the code is not shown again")
}

// middles are the vertical middles of the elements l finds, in CSS pixels.
func middles(t *testing.T, l playwright.Locator) []float64 {
	t.Helper()
	got, err := l.EvaluateAll(`items => items.map(i => { const r = i.getBoundingClientRect(); return r.top + r.height / 2; })`)
	check(t, err, "measure the elements' middles")
	list, _ := got.([]any)
	var ys []float64
	for _, y := range list {
		if f, ok := y.(float64); ok {
			ys = append(ys, f)
		} else if n, ok := y.(int); ok {
			ys = append(ys, float64(n))
		}
	}
	return ys
}
