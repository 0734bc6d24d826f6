package e2e

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"maven/app/mcp/mcptest"
)

// TestServersCardStaysLiveAfterApproval: two new stdio servers wait for their command lines'
// approval, calmly (no error). After `Approve and start` on one, while the other still waits,
// the card keeps refreshing: the approved server shows connected with its tools, and the list
// learns of its proposals without a reload ("3 new tools to review — Show").
func TestServersCardStaysLiveAfterApproval(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, err := mcptest.BuildCommand(dir)
	if err != nil {
		t.Fatal(err)
	}
	notesTools, filesTools := filepath.Join(dir, "notes.json"), filepath.Join(dir, "files.json")
	if err := mcptest.WriteTools(notesTools,
		mcptest.ToolSpec{Name: "read_notes", Description: "Reads notes.", ReadOnly: true, Text: "none"},
		mcptest.ToolSpec{Name: "search_notes", Description: "Searches notes.", ReadOnly: true, Text: "none"},
		mcptest.ToolSpec{Name: "add_note", Description: "Adds a note.", Text: "ok"},
	); err != nil {
		t.Fatal(err)
	}
	if err := mcptest.WriteTools(filesTools, mcptest.ToolSpec{Name: "list_files", Description: "Lists files.", ReadOnly: true, Text: "none"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(map[string]any{
		"refresh_interval": "1s",
		"mcpServers": map[string]any{
			"notes": map[string]any{"command": bin, "args": []string{notesTools}},
			"files": map[string]any{"command": bin, "args": []string{filesTools}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := startMaven(t, mavenOptions{Config: string(cfg)})
	tb := newBrowser(t)
	registerOwner(t, m, tb)
	tb.Goto(m.URL("/tools"))

	notes, files := tb.Page.Locator(`[data-server="notes"]`), tb.Page.Locator(`[data-server="files"]`)
	check(t, tb.Expect.Locator(notes).ToHaveAttribute("data-state", "awaiting-approval"), "notes waits for approval")
	check(t, tb.Expect.Locator(files).ToHaveAttribute("data-state", "awaiting-approval"), "files waits for approval")
	check(t, tb.Expect.Locator(notes.Locator(".badge.state")).ToHaveText("awaiting your approval"), "a calm state, in words")
	check(t, tb.Expect.Locator(notes).Not().ToContainText("Last error"), "not shown as an error")
	check(t, tb.Expect.Locator(tb.Page.Locator("#config-start")).ToContainText("propose their tools here once they connect"), "the empty list says where tools come from")
	tb.Screenshot("waiting")

	check(t, notes.Locator("details.pending-command summary").Click(), "unfold the command line of notes")
	// The click's first answer (the 403 that asks for the step-up) is held until the card's next
	// refresh has had its chance to go out and be swapped in: htmx raises the step-up on the
	// button, and a card swapped in before that answer took the button out of the page and the
	// owner's click with it (CI saw it).
	approval := holdNext(t, tb, "**/servers/commands/*/approve", "the approval")
	check(t, button(notes, "Approve and start").Click(), "approve notes")
	held := approval()
	refresh, err := tb.Page.Evaluate(nextRefreshOfTheCard)
	check(t, err, "wait for the card's next refresh")
	if refresh != "waits" {
		t.Errorf("the card's refresh, while the click was on its way: %v, want it to wait its turn", refresh)
	}
	check(t, held.Continue(), "let the click's answer through")
	check(t, tb.Expect.Locator(notes).ToHaveAttribute("data-state", "connected"), "notes connected, without a reload")
	check(t, tb.Expect.Locator(notes.Locator(".server-tools")).ToHaveText("3 tools"), "with its tools counted")
	check(t, tb.Expect.Locator(files).ToHaveAttribute("data-state", "awaiting-approval"), "files still waits")
	check(t, files.Locator("details.pending-command summary").Click(), "unfold the command line of files")
	check(t, tb.Expect.Locator(button(files, "Approve and start")).ToBeEnabled(), "and can still be approved")

	news := tb.Page.Locator("#tools-news")
	check(t, tb.Expect.Locator(news).ToContainText("3 new tools to review"), "the list learns of the new proposals")
	tb.Screenshot("news")
	checkAxe(t, tb, "tools with a command line waiting and the news")
	check(t, button(news, "Show").Click(), "show them")
	check(t, tb.Expect.Locator(tb.Page.Locator(`[data-tool-name^="notes_"]`)).ToHaveCount(3), "the new proposals are listed")
	check(t, tb.Expect.Locator(news).ToBeEmpty(), "the notice is gone")
}

// nextRefreshOfTheCard resolves once the servers card's next refresh has tried to go out: "waits"
// if htmx held it back (it decides at once, after htmx:confirm, whether it sends now), "swapped"
// once a refresh that went out has been swapped in.
const nextRefreshOfTheCard = `() => new Promise((resolve) => {
  const card = (e) => e.detail && e.detail.elt && e.detail.elt.id === 'mcp-servers';
  document.addEventListener('htmx:confirm', function confirmed(e) {
    if (!card(e)) return;
    document.removeEventListener('htmx:confirm', confirmed);
    let sent = false;
    const sending = (s) => { if (card(s)) sent = true; };
    document.addEventListener('htmx:beforeSend', sending);
    setTimeout(() => {
      document.removeEventListener('htmx:beforeSend', sending);
      if (!sent) { resolve('waits'); return; }
      document.addEventListener('htmx:afterSettle', () => resolve('swapped'), { once: true });
    }, 0);
  });
})`
