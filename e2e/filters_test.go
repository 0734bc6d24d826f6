package e2e

import (
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestStateFiltersAndWhereARowWent: the state filters are links with counts; in the Proposed
// view, Enable replaces the row with a note saying where it went, focused, with a link that
// shows it under Enabled, and the counts follow.
func TestStateFiltersAndWhereARowWent(t *testing.T) {
	t.Parallel()
	j := startTaskJourney(t, "5m")
	tb := j.tb
	filters := tb.Page.Locator("#tool-filters")
	count := func(state string) string { return `[data-state-filter="` + state + `"] .n` }

	check(t, filters.Locator(`[data-state-filter="proposed"]`).Click(), "show the proposals")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexpOf(`/tools\?state=proposed$`)), "the filter is in the address")
	check(t, tb.Expect.Locator(filters.Locator(`[aria-current="page"]`)).ToContainText("Proposed"), "the current filter is marked")
	check(t, tb.Expect.Locator(tb.Page.Locator("#tool-list [data-state]")).ToHaveCount(2), "only the two proposals")

	check(t, tb.Expect.Locator(button(row(tb, j.list.ID), "Enable")).ToHaveAccessibleName("Enable tasks_list_tasks"), "the button names its tool")
	check(t, tb.Expect.Locator(button(row(tb, j.list.ID), "Enable")).ToHaveText("Enable"), "and says Enable")
	check(t, tb.Expect.Locator(button(row(tb, j.del.ID), "Reject")).ToHaveAccessibleName("Reject tasks_delete_task"), "Reject names its tool too")
	check(t, button(row(tb, j.list.ID), "Enable").Click(), "enable list_tasks")
	moved := tb.Page.Locator("#moved-" + itoa(j.list.ID))
	check(t, tb.Expect.Locator(moved).ToContainText("tasks_list_tasks: Enabled. It is now under Enabled."), "the note says where the row went")
	check(t, tb.Expect.Locator(moved.Locator(".feedback")).ToBeFocused(), "focus is on the note")
	check(t, tb.Expect.Locator(row(tb, j.list.ID)).ToHaveCount(0), "the row left the Proposed view")
	check(t, tb.Expect.Locator(filters.Locator(count("enabled"))).ToHaveText("1"), "the Enabled count follows")
	check(t, tb.Expect.Locator(filters.Locator(count("proposed"))).ToHaveText("1"), "the Proposed count follows")
	tb.Screenshot("moved")

	link := moved.GetByRole(*playwright.AriaRoleLink, playwright.LocatorGetByRoleOptions{Name: "Enabled", Exact: playwright.Bool(true)})
	check(t, link.Click(), "follow the note")
	check(t, tb.Expect.Locator(row(tb, j.list.ID)).ToHaveAttribute("data-state", "enabled"), "the row is under Enabled")
	check(t, tb.Expect.Locator(tb.Page.Locator(`#tool-list [data-state="proposed"]`)).ToHaveCount(0), "and nothing else")
	waitTool(t, j.m, "tasks_list_tasks", "enabled")
}

// TestSearchTakesWordsInAnyOrder: typing "tasks list" in the search box finds list_tasks, as
// voice would hear it, and not delete_task; the search is in the address.
func TestSearchTakesWordsInAnyOrder(t *testing.T) {
	t.Parallel()
	j := startTaskJourney(t, "5m")
	tb := j.tb
	check(t, tb.Page.Locator("#tool-search").Fill("tasks list"), "type the words in another order")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(regexpOf(`/tools\?q=tasks(\+|%20)list`)), "the search is in the address")
	check(t, tb.Expect.Locator(tb.Page.Locator("#tool-list [data-state]")).ToHaveCount(1), "one row")
	check(t, tb.Expect.Locator(row(tb, j.list.ID)).ToBeVisible(), "list_tasks")
	check(t, tb.Page.Locator("#tool-search").Fill("task delete"), "the start of a word")
	check(t, tb.Expect.Locator(row(tb, j.del.ID)).ToBeVisible(), "delete_task")
	check(t, tb.Expect.Locator(row(tb, j.list.ID)).ToHaveCount(0), "and not list_tasks")
}
