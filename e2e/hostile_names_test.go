package e2e

import (
	"sync"
	"testing"

	"github.com/playwright-community/playwright-go"

	"maven/app/mcp/mcptest"
)

// TestHostileToolTextShownAsText: what a server writes is shown as text, never run or hidden. A
// tool named <script>alert(1)</script> and a description carrying an <img onerror> appear
// literally, and no dialog ever opens, not even through enabling; a description with a
// zero-width space shows it as ⟨U+200B⟩ and flags the row.
func TestHostileToolTextShownAsText(t *testing.T) {
	t.Parallel()
	const (
		scriptName = "<script>alert(1)</script>"
		imgDesc    = `Greets you. <img src=x onerror="alert(2)">`
		zwspDesc   = "Reads your\u200b notes."
	)
	mcpServer := startScripted(t,
		mcptest.ToolSpec{Name: scriptName, Description: imgDesc, ReadOnly: true},
		mcptest.ToolSpec{Name: "read_notes", Description: zwspDesc, ReadOnly: true},
	)
	m := startMaven(t, mavenOptions{Config: configFor("5m", mcpServer.URL)})
	tb := newBrowser(t)
	var (
		mu      sync.Mutex
		dialogs []string
	)
	tb.Page.OnDialog(func(d playwright.Dialog) {
		mu.Lock()
		dialogs = append(dialogs, d.Type()+": "+d.Message())
		mu.Unlock()
		d.Dismiss()
	})
	registerOwner(t, m, tb)

	var hostile toolJSON
	waitFor(t, pollTimeout, "the tool named "+scriptName, func() bool {
		for _, r := range tools(t, m) {
			if len(r.Cmd) == 3 && r.Cmd[2] == scriptName {
				hostile = r
				return true
			}
		}
		return false
	})
	notes := waitTool(t, m, "tasks_read_notes", "proposed")
	tb.Goto(m.URL("/tools"))

	r := row(tb, hostile.ID)
	check(t, tb.Expect.Locator(r.Locator(".facts dd code").First()).ToHaveText(scriptName), "the server's name for the tool, as text")
	check(t, tb.Expect.Locator(r.Locator(".description")).ToHaveText(imgDesc), "the description, as text")
	check(t, tb.Expect.Locator(r.Locator("script, img")).ToHaveCount(0), "no element made from the server's text")
	check(t, tb.Expect.Locator(tb.Page.Locator("main script")).ToHaveCount(0), "no script element in the page body")

	// Enabling shows the name in the step-up prompt, also as text.
	check(t, button(r, "Enable").Click(), "click Enable")
	check(t, tb.Expect.Locator(r).ToHaveAttribute("data-state", "enabled"), "the hostile-named tool enabled")

	n := row(tb, notes.ID)
	check(t, tb.Expect.Locator(n).ToHaveClass(regexpOf(`\bflagged\b`)), "the row is flagged")
	check(t, tb.Expect.Locator(n.Locator(".warning")).ToContainText("invisible characters"), "the flag says why")
	mark := n.Locator(".description mark.hidden-char")
	check(t, tb.Expect.Locator(mark).ToHaveText("⟨U+200B⟩"), "the zero-width space spelled out")
	check(t, tb.Expect.Locator(mark).ToHaveAttribute("title", "zero-width space"), "and named")
	check(t, tb.Expect.Locator(n.Locator(".description")).ToHaveText("Reads your⟨U+200B⟩ notes."), "where it was")
	check(t, tb.Expect.Locator(r).Not().ToHaveClass(regexpOf(`\bflagged\b`)), "the visible-only row is not flagged")
	tb.Screenshot("hostile")

	// Reloading runs whatever the page would run; still nothing.
	tb.Goto(m.URL("/tools"))
	check(t, tb.Expect.Locator(r.Locator(".facts dd code").First()).ToHaveText(scriptName), "still text after a reload")
	mu.Lock()
	defer mu.Unlock()
	if len(dialogs) > 0 {
		t.Errorf("dialogs opened: %q", dialogs)
	}
}
