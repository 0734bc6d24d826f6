package e2e

import (
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestActivityFiltersByOutcome: the owner enables list_tasks; voice runs it, then hears words
// that match nothing. /activity lists both turns newest first, above the enable. Choosing the
// outcome "matched nothing" swaps in that turn alone and the address says so; with JavaScript
// off, the same form gives the same list. Screenshots at 1280 and 390 px, light and dark.
func TestActivityFiltersByOutcome(t *testing.T) {
	t.Parallel()
	j := startTaskJourney(t, "5m")
	m, tb := j.m, j.tb
	check(t, button(row(tb, j.list.ID), "Enable").Click(), "click Enable")
	check(t, tb.Expect.Locator(row(tb, j.list.ID)).ToHaveAttribute("data-state", "enabled"), "row enabled")

	token := voiceToken(t, m)
	if r := say(t, m, token, "list tasks"); r.Outcome != "ran" {
		t.Fatalf("list tasks: %+v", r)
	}
	if r := say(t, m, token, "open the pod bay doors"); r.Outcome != "no_match" {
		t.Fatalf("open the pod bay doors: %+v", r)
	}
	waitForTurn(t, m, "open the pod bay doors")

	check(t, pageLink(tb.Page, "Activity").Click(), "open Activity from the nav")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexpOf(`/activity$`)), "at /activity")
	entries := tb.Page.Locator("#activity-list .entry")
	first, second := entries.Nth(0), entries.Nth(1)
	check(t, tb.Expect.Locator(first).ToHaveAttribute("data-outcome", "no_match"), "the newest turn matched nothing")
	check(t, tb.Expect.Locator(first.Locator(".utterance")).ToHaveText("“open the pod bay doors”"), "with its words")
	check(t, tb.Expect.Locator(first.Locator(".badge")).ToHaveText("matched nothing"), "and its outcome in words")
	check(t, tb.Expect.Locator(second).ToHaveAttribute("data-outcome", "ran"), "the turn before it ran")
	check(t, tb.Expect.Locator(second).ToHaveAttribute("data-tool", "tasks_list_tasks"), "list_tasks")
	check(t, tb.Expect.Locator(tb.Page.Locator(`.entry[data-action="enabled"][data-tool="tasks_list_tasks"]`)).ToHaveCount(1), "the enable is listed")
	shoot(t, tb, m, "activity")

	outcome := tb.Page.GetByLabel("Voice outcome")
	_, err := outcome.SelectOption(playwright.SelectOptionValues{Labels: &[]string{"matched nothing"}})
	check(t, err, "choose the outcome")
	check(t, pageButton(tb.Page, "Show").Click(), "click Show")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexpOf(`/activity\?.*outcome=no_match`)), "the address names the filter")
	check(t, tb.Expect.Locator(entries).ToHaveCount(1), "only the turn that matched nothing")
	check(t, tb.Expect.Locator(entries.First()).ToHaveAttribute("data-outcome", "no_match"), "it is that turn")

	// Without JavaScript the form is a plain GET form.
	plain := newBrowser(t, desktop.withoutScript())
	tb.shareSession(plain, m.BaseURL)
	plain.Goto(m.URL("/activity"))
	_, err = plain.Page.GetByLabel("Voice outcome").SelectOption(playwright.SelectOptionValues{Labels: &[]string{"ran"}})
	check(t, err, "choose the outcome without JavaScript")
	check(t, pageButton(plain.Page, "Show").Click(), "submit without JavaScript")
	check(t, plain.Expect.Page(plain.Page).ToHaveURL(regexpOf(`/activity\?.*outcome=ran`)), "the form was submitted")
	plainEntries := plain.Page.Locator("#activity-list .entry")
	check(t, plain.Expect.Locator(plainEntries).ToHaveCount(1), "only the turn that ran")
	check(t, plain.Expect.Locator(plainEntries.First()).ToHaveAttribute("data-tool", "tasks_list_tasks"), "the run of list_tasks")
}

// pageLink finds a link on the page by its exact text.
func pageLink(p playwright.Page, label string) playwright.Locator {
	return p.GetByRole(*playwright.AriaRoleLink, playwright.PageGetByRoleOptions{Name: label, Exact: playwright.Bool(true)})
}

// shoot saves screenshots of the page tb is on at 1280 and 390 px, light and dark, in tabs
// signed in as tb, and fails if the page scrolls sideways on the phone.
func shoot(t *testing.T, tb *tab, m *mavenProc, name string) {
	t.Helper()
	url := tb.Page.URL()
	for _, dev := range []device{desktop, desktop.inDark(), phone, phone.inDark()} {
		other := newBrowser(t, dev)
		tb.shareSession(other, m.BaseURL)
		other.Goto(url)
		other.Screenshot(name + "-" + dev.name)
		assertNoSidewaysOverflow(t, other, dev.width)
		check(t, other.Context.Close(), "close the tab")
	}
}

// TestActivitySwitchRepliesAndDiscovery: the two tools the tasks server offered are one line,
// "tasks proposed 2 tools — show", whose link shows /tools with only them; a voice turn shows
// what Maven said back; the Voice / Changes / Servers switch swaps in one kind of entry at once
// and puts it in the address.
func TestActivitySwitchRepliesAndDiscovery(t *testing.T) {
	t.Parallel()
	j := startTaskJourney(t, "5m")
	m, tb := j.m, j.tb
	check(t, button(row(tb, j.list.ID), "Enable").Click(), "click Enable")
	check(t, tb.Expect.Locator(row(tb, j.list.ID)).ToHaveAttribute("data-state", "enabled"), "row enabled")
	token := voiceToken(t, m)
	r := say(t, m, token, "list tasks")
	if r.Outcome != "ran" {
		t.Fatalf("list tasks: %+v", r)
	}
	waitForTurn(t, m, "list tasks")

	tb.Goto(m.URL("/activity"))
	entries := tb.Page.Locator("#activity-list .entry")
	ran := tb.Page.Locator(`#activity-list .entry[data-outcome="ran"]`)
	check(t, tb.Expect.Locator(ran.Locator(".reply")).ToHaveText("Maven: “"+r.Speech+"”"), "the turn shows what Maven said back")
	discovery := tb.Page.Locator(`#activity-list .entry[data-action="proposed"]`)
	check(t, tb.Expect.Locator(discovery).ToHaveCount(1), "the discovery is one line")
	check(t, tb.Expect.Locator(discovery.Locator(".entry-line")).ToContainText("tasks proposed 2 tools — show"), "saying which server and how many")

	// The switch's radio buttons are drawn as its labels: the owner clicks a label.
	kind := func(label string) playwright.Locator {
		return tb.Page.Locator(".kind-switch label").GetByText(label, playwright.LocatorGetByTextOptions{Exact: playwright.Bool(true)})
	}
	check(t, kind("Voice").Click(), "switch to Voice")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexpOf(`/activity\?kind=voice&`)), "the address names the kind")
	check(t, tb.Expect.Locator(entries).ToHaveCount(1), "only the voice turn")
	check(t, tb.Expect.Locator(entries.First()).ToHaveAttribute("data-action", "voice_turn"), "it is the turn")
	check(t, tb.Expect.Locator(tb.Page.GetByRole(*playwright.AriaRoleRadio, playwright.PageGetByRoleOptions{Name: "Voice", Exact: playwright.Bool(true)})).ToBeChecked(), "Voice is the checked radio button")
	check(t, kind("Servers").Click(), "switch to Servers")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexpOf(`/activity\?kind=servers&`)), "the address follows")
	check(t, tb.Expect.Locator(entries.First()).ToHaveAttribute("data-action", "server_state"), "the server's states")
	check(t, kind("Changes").Click(), "switch to Changes")
	check(t, tb.Expect.Locator(tb.Page.Locator(`#activity-list .entry[data-action="voice_turn"]`)).ToHaveCount(0), "no voice turn")
	check(t, tb.Expect.Locator(tb.Page.Locator(`#activity-list .entry[data-action="enabled"]`)).ToHaveCount(1), "the enable")
	shoot(t, tb, m, "activity-changes")

	check(t, discovery.GetByRole(*playwright.AriaRoleLink, playwright.LocatorGetByRoleOptions{Name: "show"}).Click(), "show the discovery's tools")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexpOf(`/tools\?ids=`)), "on /tools")
	check(t, tb.Expect.Locator(tb.Page.Locator("#tool-list [data-state]")).ToHaveCount(2), "both tools, and only them")
	check(t, tb.Expect.Locator(tb.Page.Locator("#tool-list .chosen")).ToContainText("Only the 2 tools of one discovery."), "the list says so")
}
