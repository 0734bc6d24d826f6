package e2e

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"maven/app/mcp/mcptest"
)

// TestNewStdioServerStartsOnlyOnceApproved: a stdio server the config names shows its exact command
// line on the servers card and is not started; `Approve and start` asks for the passkey, and only
// then does the server run and propose its tools (docs/design.md#rule-21, docs/design.md#rule-25).
func TestNewStdioServerStartsOnlyOnceApproved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, err := mcptest.BuildCommand(dir)
	if err != nil {
		t.Fatal(err)
	}
	toolsFile := filepath.Join(dir, "tools.json")
	if err := mcptest.WriteTools(toolsFile, mcptest.ToolSpec{Name: "read_notes", Description: "Reads notes.", ReadOnly: true, Text: "none"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(map[string]any{
		"refresh_interval": "1s",
		"mcpServers":       map[string]any{"notes": map[string]any{"command": bin, "args": []string{toolsFile}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := startMaven(t, mavenOptions{Config: string(cfg)})
	tb := newBrowser(t)
	authID := registerOwner(t, m, tb)
	tb.Goto(m.URL("/tools"))

	server := tb.Page.Locator(`[data-server="notes"]`)
	check(t, tb.Expect.Locator(server).ToHaveAttribute("data-state", "awaiting-approval"), "the new server is held back")
	pending := server.Locator("details.pending-command")
	check(t, tb.Expect.Locator(pending.Locator("pre.command-line")).Not().ToBeVisible(), "the waiting command line is one line")
	check(t, tb.Expect.Locator(pageButton(tb.Page, "Approve and start")).Not().ToBeVisible(), "approved only once seen")
	check(t, pending.Locator("summary").Click(), "unfold it")
	check(t, tb.Expect.Locator(tb.Page.Locator("pre.command-line")).ToContainText(bin), "its exact command line is shown")
	check(t, tb.Expect.Locator(tb.Page.Locator("pre.command-line")).ToContainText(toolsFile), "with its arguments")
	// The card polls every 2 s: the command line stays unfolded.
	_, err = tb.Page.ExpectResponse(regexpOf(`/tools/servers`), func() error { return nil })
	check(t, err, "a poll of the card")
	check(t, tb.Expect.Locator(pending.Locator("pre.command-line")).ToBeVisible(), "still unfolded after a poll")
	check(t, tb.Expect.Locator(pageButton(tb.Page, "Approve and start")).ToHaveAccessibleName("Approve and start notes"), "the button names the server")
	if got := tools(t, m); len(got) != 0 {
		t.Fatalf("an unapproved server proposed tools: %v", got)
	}

	before := signCount(t, tb, authID)
	check(t, pageButton(tb.Page, "Approve and start").Click(), "click Approve and start")
	check(t, tb.Expect.Locator(server).ToHaveAttribute("data-state", "connected"), "the server starts once approved")
	if after := signCount(t, tb, authID); after != before+1 {
		t.Errorf("sign count %d → %d: want exactly one assertion for the step-up", before, after)
	}
	waitTool(t, m, "notes_read_notes", "proposed")
	check(t, tb.Expect.Locator(pageButton(tb.Page, "Approve and start")).ToHaveCount(0), "nothing left to approve")
}
