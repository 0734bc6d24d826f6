package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"maven/app/mcp/mcptest"
)

// stoppedServerNoticed bounds how long the daemon may take to show a stopped HTTP server in
// backoff: the next tools/list (refresh_interval 1s) fails to connect, which ends the session,
// and the card polls every 2s. Before a failed connection ended the session, only the go-sdk's
// SSE reconnect budget did, about 20 s later; this bound keeps that from coming back.
const stoppedServerNoticed = 15 * time.Second

// TestServersCardShowsBackoff: the "MCP servers" card shows the scripted server connected, and,
// without a reload, waiting to retry (backoff) once the server is stopped.
func TestServersCardShowsBackoff(t *testing.T) {
	t.Parallel()
	mcpServer := startScripted(t, mcptest.ToolSpec{Name: "list_tasks", Description: "Lists open tasks.", ReadOnly: true})
	m := startMaven(t, mavenOptions{Config: configFor("5m", mcpServer.URL)})
	tb := newBrowser(t)
	registerOwner(t, m, tb)
	waitTool(t, m, "tasks_list_tasks", "proposed")

	tb.Goto(m.URL("/tools"))
	server := tb.Page.Locator(`#mcp-servers [data-server="tasks"]`)
	check(t, tb.Expect.Locator(server).ToHaveAttribute("data-state", "connected"), "server connected")
	check(t, tb.Expect.Locator(server).ToContainText("A service on this machine"), "trust level in words")
	check(t, tb.Expect.Locator(server).ToContainText(mcpServer.URL), "target")

	mcpServer.Stop()
	stopped := time.Now()
	check(t, tb.Expect.Locator(server).ToHaveAttribute("data-state", "backoff", playwright.LocatorAssertionsToHaveAttributeOptions{
		Timeout: playwright.Float(float64(stoppedServerNoticed.Milliseconds())),
	}), "server in backoff after it stopped")
	t.Logf("the card showed backoff %s after the server stopped", time.Since(stopped).Round(100*time.Millisecond))
	check(t, tb.Expect.Locator(server.Locator(".badge.state")).ToHaveText("waiting to retry"), "state in words")
	check(t, tb.Expect.Locator(server).ToContainText("Last error"), "the last error is shown")
	tb.Screenshot("backoff")

	// The IPC view agrees with the card.
	var servers []struct {
		Name  string `json:"name"`
		State string `json:"state"`
	}
	out := m.CLI("mcp-servers", "--json")
	if err := json.Unmarshal([]byte(out), &servers); err != nil {
		t.Fatalf("maven mcp-servers --json: %v\n%s", err, out)
	}
	if len(servers) != 1 || servers[0].Name != "tasks" || (servers[0].State != "backoff" && servers[0].State != "connecting") {
		t.Errorf("maven mcp-servers: %+v, want tasks in backoff (or dialling again)", servers)
	}
	// A stopped server withdraws nothing: the proposal stays.
	if got := toolState(t, m, "tasks_list_tasks"); got != "proposed" {
		t.Errorf("database: %q after the server stopped, want proposed", got)
	}
}
