package e2e

import (
	"encoding/json"
	"testing"
)

// secretsConfig is a daemon whose one MCP server, "tasks", needs the secret tasks_token.
func secretsConfig(t *testing.T, url string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"refresh_interval": "1s",
		"mcpServers": map[string]any{"tasks": map[string]any{
			"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer ${secret:tasks_token}"},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSecretsPageListsMissingNames: before any secret is set, /secrets lists the one the config
// refers to, which server uses it and that it is missing (never "No secrets yet"); setting it
// from its own row connects the server.
func TestSecretsPageListsMissingNames(t *testing.T) {
	t.Parallel()
	mcpServer := startScripted(t)
	m := startMaven(t, mavenOptions{Config: secretsConfig(t, mcpServer.URL)})
	tb := newBrowser(t)
	registerOwner(t, m, tb)

	tb.Goto(m.URL("/secrets"))
	item := tb.Page.Locator(`[data-secret="tasks_token"]`)
	check(t, tb.Expect.Locator(item).ToHaveAttribute("data-missing", ""), "the secret the config needs is listed as missing")
	check(t, tb.Expect.Locator(item).ToContainText("used by tasks"), "with the server that uses it")
	check(t, tb.Expect.Locator(tb.Page.Locator("#secrets .warning")).ToContainText("1 secret the config refers to is not set"), "the page says something is missing")
	check(t, tb.Expect.Locator(tb.Page.GetByText("No secrets yet")).ToHaveCount(0), "never \"No secrets yet\"")
	tb.Screenshot("missing")
	checkAxe(t, tb, "secrets with a missing secret")

	check(t, item.Locator("input[name=value]").Fill("tk-e2e-5150"), "type the value")
	check(t, button(item, "Set tasks_token").Click(), "set it from its row")
	check(t, tb.Expect.Locator(item.Locator(".badge.sealed")).ToHaveText("set"), "now set")
	check(t, tb.Expect.Locator(tb.Page.Locator("#secrets .warning")).ToHaveCount(0), "nothing is missing")
	tb.Goto(m.URL("/tools"))
	check(t, tb.Expect.Locator(tb.Page.Locator(`[data-server="tasks"]`)).ToHaveAttribute("data-state", "connected"), "the server connects with it")
}
