package e2e

import (
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// reportCSP makes every Content-Security-Policy violation of tb's pages a console error the
// watcher records: the browser reports one to the page as a securitypolicyviolation event,
// whether or not it also writes to the console. The init script is the browser's own, not the
// page's, so the policy does not apply to it.
func reportCSP(t *testing.T, tb *tab) {
	t.Helper()
	check(t, tb.Context.AddInitScript(playwright.Script{Content: playwright.String(`document.addEventListener('securitypolicyviolation', function (e) {
		console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber);
	});`)}), "report CSP violations")
}

// cspReports are the CSP violations tb's pages reported so far.
func cspReports(tb *tab) []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var out []string
	for _, n := range tb.notes {
		if strings.Contains(n, "Content Security Policy") || strings.Contains(n, "CSP violation") {
			out = append(out, n)
		}
	}
	return out
}

// TestNoCSPViolationOnHTMXSwaps: the owner lets the servers card poll, searches, filters,
// enables with a step-up (the row and the filters are swapped), renames a passkey, opens the
// secrets and switches the activity feed; no page reports a Content-Security-Policy violation
// on the way (htmx's indicator styles among them: includeIndicatorStyles is off in the
// htmx-config meta, and the stylesheet has them).
func TestNoCSPViolationOnHTMXSwaps(t *testing.T) {
	t.Parallel()
	j := startTaskJourney(t, "5m")
	tb := j.tb
	reportCSP(t, tb)
	tb.Goto(j.m.URL("/tools"))
	_, err := tb.Page.ExpectResponse(regexpOf(`/tools/servers`), func() error { return nil })
	check(t, err, "the servers card polls")
	check(t, tb.Page.Locator("#tool-search").Fill("tasks list"), "search")
	check(t, tb.Expect.Locator(tb.Page.Locator("#tool-list [data-state]")).ToHaveCount(1), "the search swapped the list")
	check(t, tb.Page.Locator("#tool-search").Fill(""), "clear the search")
	check(t, tb.Expect.Locator(tb.Page.Locator("#tool-list [data-state]")).ToHaveCount(2), "both rows again")
	check(t, tb.Page.Locator(`#tool-filters [data-state-filter="proposed"]`).Click(), "filter")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexpOf(`state=proposed`)), "filtered")
	check(t, button(row(tb, j.list.ID), "Enable").Click(), "enable with a step-up")
	check(t, tb.Expect.Locator(tb.Page.Locator("#moved-"+itoa(j.list.ID))).ToBeVisible(), "the row moved")
	waitTool(t, j.m, "tasks_list_tasks", "enabled")
	tb.Goto(j.m.URL("/passkeys"))
	check(t, tb.Page.Locator(`#passkey-list input[name="name"]`).First().Fill("Laptop"), "a passkey's new name")
	check(t, tb.Page.Locator("#passkey-list form.rename button").First().Click(), "rename it")
	check(t, tb.Expect.Locator(tb.Page.Locator(`#passkey-list [data-passkey-name="Laptop"]`)).ToHaveCount(1), "the list swapped")
	tb.Goto(j.m.URL("/secrets"))
	tb.Goto(j.m.URL("/activity"))
	check(t, tb.Page.Locator(".kind-switch label").First().Click(), "the switch")
	check(t, tb.Expect.Locator(tb.Page.Locator("#activity-list .entry").First()).ToBeVisible(), "the list swapped")
	if got := cspReports(tb); len(got) > 0 {
		t.Fatalf("CSP violations:\n%s", strings.Join(got, "\n"))
	}
}
