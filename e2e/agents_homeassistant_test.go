package e2e

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"maven/internal/hatest"
)

// homeAssistantJourney: Home Assistant's MCP integration, as its source behaves, with My Home
// Assistant (default_config loads it), added with Maven's /mcp URL. Its config flow finds Maven
// from the 401, registers as a public client whose redirect URI is My Home Assistant's, and
// sends the owner's browser to the consent page with what config_flow.py asks (offline access,
// consent, PKCE S256; no resource, no scope); My Home Assistant sends the browser on to the
// instance (a route in the owner's browser stands in for it). The entry lists what the owner ticked
// and calls each tool in a session of its own, over streamable HTTP. A redefined tool is refused
// until the coordinator's next update, 30 minutes on, whose list no longer has it; an hour on,
// its token is refreshed; revoked, it needs a reauth.
func homeAssistantJourney(t *testing.T, w *peersWorld) {
	ctx := withDeadline(t)
	var later atomic.Int64 // how far Home Assistant's clock is ahead
	ha, err := hatest.New(hatest.Options{MyHomeAssistant: true,
		Now: func() time.Time { return time.Now().Add(time.Duration(later.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ha.Close() })
	check(t, w.owner.Page.Route(hatest.MyCallback+"*", func(r playwright.Route) {
		u, err := url.Parse(r.Request().URL())
		if err != nil {
			r.Abort()
			return
		}
		r.Fulfill(playwright.RouteFulfillOptions{Status: playwright.Int(http.StatusFound),
			Headers: map[string]string{"Location": ha.CallbackURL(u.RawQuery)}})
	}), "stand in for My Home Assistant")
	t.Cleanup(func() { w.owner.Page.Unroute(hatest.MyCallback + "*") })

	flow, entry, err := ha.AddIntegration(ctx, w.m.URL("/mcp"))
	if err != nil || flow == nil {
		t.Fatalf("adding the integration: flow %v, entry %v, %v", flow, entry, err)
	}
	q := authorizeQuery(t, flow.AuthorizeURL)
	if q.Get("access_type") != "offline" || q.Get("prompt") != "consent" || q.Get("code_challenge_method") != "S256" ||
		q.Has("resource") || q.Has("scope") || q.Get("redirect_uri") != hatest.MyCallback {
		t.Errorf("Home Assistant's authorization request: %v", q)
	}
	w.consent(t, flow.AuthorizeURL, granted("ha")...)
	if entry, err = flow.Finish(ctx); err != nil {
		t.Fatalf("the config flow: %v", err)
	}
	if entry.Title != "maven" || entry.Token().RefreshToken == "" {
		t.Errorf("the entry: %q, token %+v", entry.Title, entry.Token())
	}

	tools, err := entry.Refresh(ctx)
	if err != nil {
		t.Fatalf("the coordinator's first update: %v", err)
	}
	if got := haNames(tools); !slices.Equal(got, granted("ha")) {
		t.Fatalf("Home Assistant lists %q, want %q", got, granted("ha"))
	}
	for _, tool := range tools {
		if tool.Name == "tasks_delete_task" && (!tool.Destructive || tool.ReadOnly) || tool.Name == "tasks_list_tasks" && !tool.ReadOnly {
			t.Errorf("%s: read-only %v, destructive %v", tool.Name, tool.ReadOnly, tool.Destructive)
		}
	}
	if res, err := entry.Call(ctx, "tasks_list_tasks", nil); err != nil || res.Error || res.Text() != "Two open tasks: buy milk, call Ann." {
		t.Errorf("the read-only call: %+v, %v", res, err)
	}
	res, err := entry.Call(ctx, "tasks_delete_task", map[string]any{})
	if err != nil || !speakable(res.Text()) || w.up.Calls("delete_task") != 0 {
		t.Errorf("the destructive call: %+v, %v; the server ran it %d times", res, err, w.up.Calls("delete_task"))
	}
	// The config flow's check, the update and the two calls: a session each, none over SSE.
	if s := ha.Sessions(); s.Streamable != 4 || s.SSE != 0 {
		t.Errorf("Home Assistant's sessions: %+v, want 4 over streamable HTTP", s)
	}

	w.redefine(t, "peek_ha")
	// Until its next list, Home Assistant still offers the tool it listed: a call of it is
	// refused, and nothing runs.
	if res, err := entry.Call(ctx, "tasks_peek_ha", nil); err != nil || !res.Error || !speakable(res.Text()) || w.up.Calls("peek_ha") != 0 {
		t.Errorf("a call of the redefined tool: %+v, %v", res, err)
	}
	later.Store(int64(hatest.UpdateInterval))
	if tools, err = entry.Refresh(ctx); err != nil || slices.Contains(haNames(tools), "tasks_peek_ha") {
		t.Errorf("the next update after the redefinition: %q, %v", haNames(tools), err)
	}

	before := entry.Token()
	later.Store(int64(2 * hatest.UpdateInterval))
	if _, err := entry.Refresh(ctx); err != nil {
		t.Fatalf("an update an hour later: %v", err)
	}
	if after := entry.Token(); after.AccessToken == before.AccessToken || after.RefreshToken == before.RefreshToken {
		t.Errorf("an hour later the token was not refreshed and rotated")
	}

	w.revokeNamed(t, "Home Assistant")
	if _, err := entry.Refresh(ctx); !errors.Is(err, hatest.ErrAuthFailed) || entry.Reauth == nil || entry.Reauth.ResourceMetadataURL == "" {
		t.Errorf("an update after the revocation: %v (reauth %+v)", err, entry.Reauth)
	}
	if _, err := entry.Call(ctx, "tasks_list_tasks", nil); !errors.Is(err, hatest.ErrAuthFailed) {
		t.Errorf("a call after the revocation: %v", err)
	}
	later.Store(int64(4 * hatest.UpdateInterval))
	if _, err := entry.Refresh(ctx); !errors.Is(err, hatest.ErrAuthFailed) {
		t.Errorf("a refresh after the revocation: %v", err)
	}
}

func haNames(tools []hatest.Tool) []string {
	var out []string
	for _, tool := range tools {
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

// homeAssistantSSEJourney: Home Assistant's MCP integration added with Maven's /sse URL. Its
// client tries streamable HTTP first (coordinator.py's mcp_client): Maven's /sse answers that
// POST 405, so every session, the config flow's included, falls back to the SSE transport. Its
// config flow discovers /sse's own protected-resource metadata from the 401 (config_flow.py
// takes a document only if its resource is exactly the URL typed) and signs in as at /mcp.
func homeAssistantSSEJourney(t *testing.T, w *peersWorld) {
	ctx := withDeadline(t)
	ha, err := hatest.New(hatest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ha.Close() })
	flow, entry, err := ha.AddIntegration(ctx, w.m.URL("/sse"))
	if err != nil || flow == nil {
		t.Fatalf("adding the integration at /sse: flow %v, entry %v, %v", flow, entry, err)
	}
	keep := []string{"tasks_delete_task", "tasks_list_tasks"}
	w.consent(t, flow.AuthorizeURL, keep...)
	if entry, err = flow.Finish(ctx); err != nil {
		t.Fatalf("the config flow: %v", err)
	}
	tools, err := entry.Refresh(ctx)
	if err != nil || !slices.Equal(haNames(tools), keep) {
		t.Fatalf("the coordinator's first update: %q, %v", haNames(tools), err)
	}
	if res, err := entry.Call(ctx, "tasks_list_tasks", nil); err != nil || res.Error || res.Text() != "Two open tasks: buy milk, call Ann." {
		t.Errorf("the read-only call: %+v, %v", res, err)
	}
	if res, err := entry.Call(ctx, "tasks_delete_task", map[string]any{}); err != nil || !speakable(res.Text()) || w.up.Calls("delete_task") != 0 {
		t.Errorf("the destructive call: %+v, %v; the server ran it %d times", res, err, w.up.Calls("delete_task"))
	}
	// The config flow's check, the update and the two calls: four sessions, each over SSE.
	if s := ha.Sessions(); s.SSE != 4 || s.Streamable != 0 {
		t.Errorf("Home Assistant's sessions: %+v, want 4 over SSE", s)
	}
	w.revoke(t, entry.ClientID)
	if _, err := entry.Refresh(ctx); !errors.Is(err, hatest.ErrAuthFailed) {
		t.Errorf("an update after the revocation: %v", err)
	}
}
