package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/auth/authtest"
	"maven/internal/daemontest"
)

// bearer adds a client's token to every request.
type withToken struct{ token string }

func (b withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestAStaticClientsAgentReachesItsTools drives the daemon as wired: an agent with the token
// `maven client add` printed connects to /mcp with go-sdk's client, sees the enabled tool its
// client may use, is refused the destructive one with words to say, and its call is counted on
// the client; once `maven client revoke` ran, its next request is refused. Without a token, /mcp
// points at the protected-resource metadata. (docs/design.md#rule-29)
func TestAStaticClientsAgentReachesItsTools(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	d := startDaemon(t, data)
	ctx := context.Background()
	if out, err := maven(t, data, "propose", "hello", "--", "/bin/echo", "hi"); err != nil {
		t.Fatalf("propose: %v %s", err, out)
	}
	out, err := maven(t, data, "tools", "--json")
	var rows []toolResult
	if err != nil || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 {
		t.Fatalf("tools: %v %s", err, out)
	}
	a := authtest.New(d.proc.Origin())
	b := daemontest.NewBrowser(d.proc)
	if _, err := b.Register(ctx, newSetupLink(t, data).URL, a, "Phone"); err != nil {
		t.Fatal(err)
	}
	if err := b.Enable(ctx, a, rows[0].ID, "hello"); err != nil {
		t.Fatal(err)
	}
	token, err := maven(t, data, "client", "add", "desk")
	if err != nil {
		t.Fatalf("client add: %v %s", err, token)
	}
	endpoint := d.proc.Origin() + "/mcp"

	res, err := http.Post(endpoint, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), "/.well-known/oauth-protected-resource") {
		t.Fatalf("/mcp without a token: %d %v", res.StatusCode, res.Header)
	}

	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: withToken{strings.TrimSpace(token)}}
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	list, err := session.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "hello" {
		t.Fatalf("tools/list: %+v, %v", list, err)
	}
	called, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "hello"})
	if err != nil || !called.IsError {
		t.Fatalf("tools/call of a destructive tool: %+v, %v", called, err)
	}
	// The call's entry, and its count, are written just after it is answered (activity.Batcher).
	var clients []clientResult
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, err = maven(t, data, "client", "list", "--json")
		clients = nil
		if err != nil || json.Unmarshal([]byte(out), &clients) != nil || len(clients) != 1 {
			t.Fatalf("client list after a call: %v %s", err, out)
		}
		if clients[0].Calls == 1 || time.Now().After(deadline) {
			break
		}
	}
	if clients[0].Calls != 1 || clients[0].LastSeen == nil {
		t.Fatalf("client list after a call: %s", out)
	}

	if out, err := maven(t, data, "client", "revoke", "desk"); err != nil {
		t.Fatalf("client revoke: %v %s", err, out)
	}
	fresh, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err == nil {
		fresh.Close()
		t.Fatal("a revoked client's agent connected")
	}
	if _, err := session.ListTools(ctx, nil); err == nil {
		t.Error("a revoked client's open session still lists tools")
	}
}
