package e2e

import (
	"encoding/json"
	"testing"

	"github.com/playwright-community/playwright-go"

	"maven/app/mcp/mcptest"
)

// TestToolsPageScreenshots: /tools with a realistic allowlist — proposed, enabled and disabled
// rows, a redefinition with its diff, a flagged row, a long unbroken name, open schemas — saved
// as full-page screenshots at desktop width and at 390 px on a phone, and at 390 px nothing
// overflows sideways.
func TestToolsPageScreenshots(t *testing.T) {
	t.Parallel()
	schema := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	project := map[string]any{"type": "string", "description": "Project name, as shown in the task app"}
	mcpServer := startScripted(t,
		mcptest.ToolSpec{Name: "list_tasks", Description: "Lists the open tasks of a project.", ReadOnly: true,
			InputSchema: schema(map[string]any{"type": "object", "properties": map[string]any{"project": project}})},
		mcptest.ToolSpec{Name: "delete_task", Description: "Deletes a task for good.",
			InputSchema: schema(map[string]any{"type": "object", "required": []string{"id"}, "properties": map[string]any{"id": map[string]any{"type": "integer"}}})},
		mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks by title.", ReadOnly: true,
			InputSchema: schema(map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}})},
		mcptest.ToolSpec{Name: "create_task_with_a_deliberately_long_name_that_never_offers_a_place_to_wrap",
			Description: "Creates a task through https://tasks.example/api/v1/projects/inbox/tasks?include=subtasks,comments,attachments,reminders,labels"},
		mcptest.ToolSpec{Name: "read_notes", Description: "Reads your\u200b notes.", ReadOnly: true},
	)
	m := startMaven(t, mavenOptions{Config: configFor("5m", mcpServer.URL)})
	tb := newBrowser(t)
	registerOwner(t, m, tb)

	list := waitTool(t, m, "tasks_list_tasks", "proposed")
	del := waitTool(t, m, "tasks_delete_task", "proposed")
	search := waitTool(t, m, "tasks_search_tasks", "proposed")
	waitTool(t, m, "tasks_read_notes", "proposed")
	tb.Goto(m.URL("/tools"))
	for _, id := range []int64{list.ID, search.ID} {
		check(t, button(row(tb, id), "Enable").Click(), "click Enable")
		check(t, tb.Expect.Locator(row(tb, id)).ToHaveAttribute("data-state", "enabled"), "row enabled")
	}
	// Both get phrases; search_tasks's are voided below by its redefinition.
	savePhrases(t, tb, list.ID, "list (tasks | my tasks) [in {project}]")
	savePhrases(t, tb, search.ID, "search tasks for {query}")
	check(t, button(row(tb, del.ID), "Reject").Click(), "click Reject")
	check(t, tb.Expect.Locator(row(tb, del.ID)).ToHaveAttribute("data-state", "disabled"), "row disabled")

	// search_tasks is redefined: a new description and a new argument.
	mcpServer.Redefine(mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks by title, and archives what it finds.",
		InputSchema: schema(map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}, "archive": map[string]any{"type": "boolean"}}})})
	waitTool(t, m, search.Name, "proposed")

	tb.Goto(m.URL("/tools"))
	check(t, tb.Expect.Locator(row(tb, search.ID).Locator(".diff")).ToBeVisible(), "the diff of the redefinition")
	check(t, tb.Expect.Locator(tb.Page.Locator(`#mcp-servers [data-server="tasks"]`)).ToHaveAttribute("data-state", "connected"), "server connected")
	check(t, tb.Expect.Locator(row(tb, search.ID).Locator(".warning")).ToContainText("phrases were for the earlier shape"), "the void phrases")
	badPhrase(t, tb, list.ID)
	openSchemas(t, tb)
	tb.Screenshot("tools-desktop")
	assertNoSidewaysOverflow(t, tb, desktop.width)

	// The same session on a phone.
	small := newBrowser(t, phone)
	cookies, err := tb.Context.Cookies(m.BaseURL)
	check(t, err, "read cookies")
	for _, c := range cookies {
		check(t, small.Context.AddCookies([]playwright.OptionalCookie{{
			Name: c.Name, Value: c.Value, URL: playwright.String(m.BaseURL),
		}}), "copy the session cookie to the phone")
	}
	small.Goto(m.URL("/tools"))
	check(t, small.Expect.Page(small.Page).ToHaveURL(toolsURL), "the phone is signed in on /tools")
	check(t, small.Expect.Locator(row(small, search.ID).Locator(".diff")).ToBeVisible(), "the diff on the phone")
	badPhrase(t, small, list.ID)
	openSchemas(t, small)
	small.Screenshot("tools-390")
	assertNoSidewaysOverflow(t, small, phone.width)
}

// openSchemas opens every collapsed input schema, so the screenshot and the overflow check see
// them.
func openSchemas(t *testing.T, tb *tab) {
	t.Helper()
	summaries := tb.Page.Locator("details.more:not([open]) > summary")
	n, err := summaries.Count()
	check(t, err, "count schemas")
	for i := 0; i < n; i++ {
		check(t, summaries.First().Click(), "open a schema")
	}
	check(t, tb.Expect.Locator(summaries).ToHaveCount(0), "every schema open")
}

// assertNoSidewaysOverflow fails unless the page fits width: nothing makes it scroll sideways.
func assertNoSidewaysOverflow(t *testing.T, tb *tab, width int) {
	t.Helper()
	var got struct {
		ScrollWidth int      `json:"scrollWidth"`
		Wide        []string `json:"wide"`
	}
	evalJSON(t, tb.Page, `(width) => ({
		scrollWidth: document.documentElement.scrollWidth,
		wide: [...document.querySelectorAll("body *")]
			.filter((e) => e.getBoundingClientRect().right > width + 0.5)
			.slice(0, 10)
			.map((e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + String(e.className).trim().split(/\s+/).join(".") : "")),
	})`, width, &got)
	if got.ScrollWidth > width {
		t.Errorf("at %d px the page is %d px wide; elements past the edge: %q", width, got.ScrollWidth, got.Wide)
	}
}

// savePhrases writes phrases into row id's box and saves them (one passkey gesture).
func savePhrases(t *testing.T, tb *tab, id int64, text string) {
	t.Helper()
	r := row(tb, id)
	check(t, r.Locator(`textarea[name="phrases"]`).Fill(text), "write phrases")
	check(t, button(r, "Save phrases").Click(), "click Save phrases")
	check(t, tb.Expect.Locator(r.Locator(".phrases-feedback")).ToHaveText("Phrases saved."), "phrases saved")
}

// badPhrase adds a line that cannot be used to row id's phrases and tries to save them: the
// line is named beside the box.
func badPhrase(t *testing.T, tb *tab, id int64) {
	t.Helper()
	r := row(tb, id)
	box := r.Locator(`textarea[name="phrases"]`)
	text, err := box.InputValue()
	check(t, err, "read the box")
	check(t, box.Fill(text+"\nshow {projects} please"), "add a bad line")
	check(t, button(r, "Save phrases").Click(), "click Save phrases")
	check(t, tb.Expect.Locator(r.Locator(".line-errors")).ToContainText("Line 2"), "the bad line named")
}
