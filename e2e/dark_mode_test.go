package e2e

import (
	"testing"

	"maven/app/mcp/mcptest"
)

// TestDarkMode: with the system in dark mode, /tools (servers card, proposals, an enabled row
// with phrases and a line refused, a redefinition's diff, the batch bar), /secrets and
// /activity are dark, legible and pass axe, at 1280 px and at 390 px; the screenshots are saved
// for a person to look at.
func TestDarkMode(t *testing.T) {
	t.Parallel()
	mcpServer := startScripted(t,
		mcptest.ToolSpec{Name: "list_tasks", Description: "Lists open tasks.", ReadOnly: true},
		mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks by title.", ReadOnly: true},
		mcptest.ToolSpec{Name: "delete_task", Description: "Deletes a task for good."},
	)
	m := startMaven(t, mavenOptions{Config: configFor("5m", mcpServer.URL)})
	tb := newBrowser(t, desktop.inDark())
	registerOwner(t, m, tb)
	list := waitTool(t, m, "tasks_list_tasks", "proposed")
	search := waitTool(t, m, "tasks_search_tasks", "proposed")
	tb.Goto(m.URL("/tools"))
	for _, id := range []int64{list.ID, search.ID} {
		check(t, button(row(tb, id), "Enable").Click(), "enable")
		check(t, tb.Expect.Locator(row(tb, id)).ToHaveAttribute("data-state", "enabled"), "enabled")
	}
	savePhrases(t, tb, list.ID, "list my tasks")
	mcpServer.Redefine(mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks by title, and archives what it finds."})
	waitTool(t, m, search.Name, "proposed")

	for i, tab := range []*tab{tb, newBrowser(t, phone.inDark())} {
		width := []string{"1280", "390"}[i]
		if tab != tb {
			tb.shareSession(tab, m.BaseURL)
		}
		tab.Goto(m.URL("/tools"))
		check(t, tab.Expect.Locator(row(tab, search.ID).Locator(".diff")).ToBeVisible(), "the diff")
		badPhrase(t, tab, list.ID)
		var bg struct {
			R, G, B int
		}
		evalJSON(t, tab.Page, `() => {
			const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number);
			return {r, g, b};
		}`, nil, &bg)
		if bg.R+bg.G+bg.B > 3*60 {
			t.Errorf("the page background is rgb(%d, %d, %d) in dark mode, want dark", bg.R, bg.G, bg.B)
		}
		tab.Screenshot("tools-dark-" + width)
		checkAxe(t, tab, "tools in dark mode")
		tab.Goto(m.URL("/secrets"))
		tab.Screenshot("secrets-dark-" + width)
		checkAxe(t, tab, "secrets in dark mode")
		tab.Goto(m.URL("/activity"))
		tab.Screenshot("activity-dark-" + width)
		checkAxe(t, tab, "activity in dark mode")
	}
}
