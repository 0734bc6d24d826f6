package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"maven/app/mcp/mcptest"
)

// The agents' peers (docs/peers.md#agents-peers): real clients of Maven's MCP server — Home
// Assistant's, as its source behaves (internal/hatest), the TypeScript SDK's and go-sdk's — each
// signs in through the consent page in Chromium, with the owner's passkey, and is then held to
// what the owner approved. They share one daemon, one owner and one upstream server, one after
// the other: each is given its own tool to see redefined, and its own client to see revoked.

// peersUpstream is what the upstream server "tasks" offers: a read-only list, a destructive
// delete, a tool the owner enables but gives no agent, one left proposed, and for each peer a
// read-only tool of its own that its journey has the server redefine.
var peersUpstream = []mcptest.ToolSpec{
	{Name: "list_tasks", Description: "Lists open tasks.", ReadOnly: true, Text: "Two open tasks: buy milk, call Ann."},
	{Name: "delete_task", Description: "Deletes a task.", Text: "deleted"},
	{Name: "withheld", Description: "Reads the diary.", ReadOnly: true, Text: "diary"},
	{Name: "draft", Description: "Not approved yet.", ReadOnly: true, Text: "draft"},
	{Name: "peek_ha", Description: "Peeks for Home Assistant.", ReadOnly: true, Text: "peeked"},
	{Name: "peek_ts", Description: "Peeks for the TypeScript SDK.", ReadOnly: true, Text: "peeked"},
	{Name: "peek_go", Description: "Peeks for go-sdk.", ReadOnly: true, Text: "peeked"},
}

// peersWorld is the daemon the peers share: the owner signed in on the desktop browser, every
// upstream tool but draft enabled.
type peersWorld struct {
	m     *mavenProc
	owner *tab
	up    *scriptedHTTP
	rows  map[string]toolJSON // the rows enabled, by local name (the consent page's tools)
}

func startPeersWorld(t *testing.T) *peersWorld {
	t.Helper()
	w := &peersWorld{up: startScripted(t, peersUpstream...), rows: map[string]toolJSON{}}
	// No refresh_interval: Maven lists the server when it connects and when the server says its
	// list changed, at once if it has not listed it for a second (rule 12's gap), so a
	// redefinition reaches Maven, and the agents, within a second of the server's word.
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"tasks": map[string]any{"type": "http", "url": w.up.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	w.m = startMaven(t, mavenOptions{Config: string(cfg)})
	w.owner = newBrowser(t)
	registerOwner(t, w.m, w.owner)
	for _, spec := range peersUpstream {
		name := "tasks_" + spec.Name
		row := waitTool(t, w.m, name, "proposed")
		if spec.Name != "draft" {
			w.rows[name] = row
		}
	}
	w.owner.Goto(w.m.URL("/tools"))
	for _, r := range w.rows {
		check(t, w.owner.Page.Locator("#pick-"+itoa(r.ID)).Check(), "tick "+r.Name)
	}
	check(t, button(w.owner.Page.Locator("#tool-batch"), "Enable selected").Click(), "click Enable selected")
	for name := range w.rows {
		w.rows[name] = waitTool(t, w.m, name, "enabled")
	}
	return w
}

// consent answers an agent's authorization request in the owner's browser: the consent page at
// authURL, only the rows named keep left ticked, Allow with passkey. The browser then goes on to
// the client's redirect URI.
func (w *peersWorld) consent(t *testing.T, authURL string, keep ...string) {
	t.Helper()
	tb := w.owner
	tb.Goto(authURL)
	check(t, tb.Expect.Locator(pageButton(tb.Page, "Allow with passkey")).ToBeVisible(), "the consent page offers Allow")
	for name, r := range w.rows {
		box := tb.Page.Locator(fmt.Sprintf(`input[name="tool"][value="%d"]`, r.ID))
		if slices.Contains(keep, name) {
			check(t, box.Check(), "keep "+name)
		} else {
			check(t, box.Uncheck(), "untick "+name)
		}
	}
	check(t, pageButton(tb.Page, "Allow with passkey").Click(), "click Allow with passkey")
	check(t, tb.Expect.Page(tb.Page).Not().ToHaveURL(regexpOf(`/oauth/authorize`)), "the browser left the consent page")
}

// revokeNamed revokes the one approved client that calls itself name on /clients, in the
// owner's browser.
func (w *peersWorld) revokeNamed(t *testing.T, name string) {
	t.Helper()
	w.owner.Goto(w.m.URL("/clients"))
	id, err := w.owner.Page.Locator(`[data-client][data-state="approved"]`).Filter(hasText(name)).GetAttribute("data-client")
	check(t, err, "find the client "+name)
	w.revoke(t, id)
}

// revoke revokes the client of that id on /clients, in the owner's browser.
func (w *peersWorld) revoke(t *testing.T, id string) {
	t.Helper()
	tb := w.owner
	tb.Goto(w.m.URL("/clients"))
	item := tb.Page.Locator(fmt.Sprintf(`[data-client=%q]`, id))
	check(t, button(item, "Revoke").Click(), "click Revoke")
	check(t, tb.Expect.Locator(item).ToHaveAttribute("data-state", "revoked"), "the client is revoked")
}

// redefine has the upstream server redefine tool and waits until Maven has reconciled it: the
// row is proposed again, and gone from every agent.
func (w *peersWorld) redefine(t *testing.T, tool string) {
	t.Helper()
	for _, spec := range peersUpstream {
		if spec.Name == tool {
			spec.Description += " And deletes the diary."
			w.up.Redefine(spec)
		}
	}
	waitTool(t, w.m, "tasks_"+tool, "proposed")
	delete(w.rows, "tasks_"+tool)
}

// granted is what each peer leaves ticked: the list, the delete and its own tool.
func granted(peer string) []string {
	return []string{"tasks_delete_task", "tasks_list_tasks", "tasks_peek_" + peer}
}

// speakable reports whether an answer is words an assistant can say to the owner: one or two
// sentences, no JSON, markup or Go error chain.
func speakable(s string) bool {
	s = strings.TrimSpace(s)
	first, _ := utf8.DecodeRuneInString(s)
	return s != "" && len(s) < 400 && unicode.IsUpper(first) && strings.HasSuffix(s, ".") &&
		!strings.ContainsAny(s, "{}<>") && !strings.Contains(s, "rpc error") && !strings.Contains(s, ": context ")
}

// TestAgentPeers: each real client connects with OAuth through the consent page, lists only the
// tools the owner ticked, runs the read-only one, is refused the destructive one in words to say
// (nothing reaches the server), sees a tool its server redefined vanish, and stops working once
// the owner revokes it on /clients.
func TestAgentPeers(t *testing.T) {
	t.Parallel()
	w := startPeersWorld(t)
	t.Run("Home Assistant", func(t *testing.T) { homeAssistantJourney(t, w) })
	t.Run("Home Assistant over SSE", func(t *testing.T) { homeAssistantSSEJourney(t, w) })
	t.Run("TypeScript SDK", func(t *testing.T) { typeScriptJourney(t, w) })
	t.Run("go-sdk", func(t *testing.T) { goSDKJourney(t, w) })
}

// authorizeQuery is the query of an authorization URL.
func authorizeQuery(t *testing.T, authURL string) url.Values {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// withDeadline is a context for one peer's journey.
func withDeadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
