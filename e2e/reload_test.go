package e2e

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"maven/app/mcp/mcptest"
)

// TestReloadShowsOnTools: a server added to the config and reloaded with SIGHUP appears on the
// "MCP servers" card and proposes its tools without a page reload; the config's warning and,
// once a broken file is refused, its errors are shown calmly at the top of /tools, with what to
// do, on a desktop and on a phone in dark mode, passing axe.
func TestReloadShowsOnTools(t *testing.T) {
	t.Parallel()
	mcpServer := startScripted(t, mcptest.ToolSpec{Name: "list_tasks", Description: "Lists open tasks.", ReadOnly: true})
	m := startMaven(t, mavenOptions{Config: `{"refresh_interval": "1s"}`})
	owner := newBrowser(t)
	registerOwner(t, m, owner)
	owner.Goto(m.URL("/tools"))
	check(t, owner.Expect.Locator(owner.Page.Locator("#mcp-servers")).ToContainText("No MCP servers are configured"), "no server yet")

	reload := func(config string) {
		t.Helper()
		if err := os.WriteFile(m.config, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		before := strings.Count(m.Log(), "SIGHUP: reloading")
		if err := m.proc.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, pollTimeout, "the reload to end", func() bool {
			log := m.Log()
			return strings.Count(log, "SIGHUP: reloading") > before &&
				strings.Count(log, `msg="config reloaded"`)+strings.Count(log, `msg="config refused`) > before
		})
	}
	reload(`{"refresh_interval": "1s", "mcpServers": {"tasks": {"type": "http", "url": "` + mcpServer.URL + `", "timeout": 30}}}`)
	server := owner.Page.Locator(`#mcp-servers [data-server="tasks"]`)
	check(t, owner.Expect.Locator(server).ToHaveAttribute("data-state", "connected"), "the added server connects, on the card as it polls")
	waitTool(t, m, "tasks_list_tasks", "proposed")

	owner.Goto(m.URL("/tools"))
	notes := owner.Page.Locator("#config-problems")
	check(t, owner.Expect.Locator(notes).ToContainText("mcpServers.tasks.timeout"), "the warning, by its key")
	check(t, owner.Expect.Locator(notes).ToContainText("then run maven reload"), "what to do")

	reload(`{"refresh_interval": "1s", "mcpServers": {"tasks": {"type": "http", "url": "ftp://nowhere"}}, "tols": []}`)
	for _, dev := range []device{desktop, phone.inDark()} {
		tb := newBrowser(t, dev)
		owner.shareSession(tb, m.BaseURL)
		tb.Goto(m.URL("/tools"))
		notes := tb.Page.Locator("#config-problems")
		check(t, tb.Expect.Locator(notes).ToContainText("did not apply it: it has 2 errors"), "the refusal")
		check(t, tb.Expect.Locator(notes).ToContainText("mcpServers.tasks.url"), "one error")
		check(t, tb.Expect.Locator(notes).ToContainText(`did you mean "tools"`), "the other")
		check(t, tb.Expect.Locator(notes).ToContainText("Maven goes on with the config it had"), "nothing changed")
		check(t, tb.Expect.Locator(tb.Page.Locator(`#mcp-servers [data-server="tasks"]`)).ToHaveAttribute("data-state", "connected"),
			"the running server is untouched")
		checkAxe(t, tb, dev.name+" tools with a refused reload")
		tb.Screenshot(dev.name + "-refused-reload")
	}
}
