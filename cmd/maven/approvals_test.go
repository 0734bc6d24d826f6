package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp/mcptest"
	"maven/internal/daemontest"
)

// approvalsJSON is `maven approvals --json`.
func approvalsJSON(t *testing.T, data string) []approvalResult {
	t.Helper()
	out, err := maven(t, data, "approvals", "--json")
	if err != nil {
		t.Fatalf("approvals --json: %v: %s", err, out)
	}
	var calls []approvalResult
	if err := json.Unmarshal([]byte(out), &calls); err != nil {
		t.Fatalf("approvals --json: %v\n%s", err, out)
	}
	return calls
}

// agentCall has an agent with token call name at the daemon's /mcp, and returns its text.
func agentCall(t *testing.T, origin, token, name string) string {
	t.Helper()
	ctx := context.Background()
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: withToken{token}}
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: origin + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n")
}

var bindingRE = regexp.MustCompile(`name="binding" value="([^"]+)"`)

// TestAKilledRunIsInterruptedAndNeverRunAgain drives the daemon as wired: an agent's call of a
// destructive tool waits for the owner, `maven approvals` lists it with its page's address,
// the owner approves it with a step-up naming its binding, and the daemon is killed (SIGKILL)
// while the upstream server runs it. After the restart `maven approvals` says the call was
// interrupted, and the tool was called once: nothing runs it again, and the agent's same call
// asks the owner anew (docs/design.md#rule-31).
func TestAKilledRunIsInterruptedAndNeverRunAgain(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	// The door takes a minute to unlock: the daemon dies in the middle.
	door := mcptest.NewScripted(mcptest.ToolSpec{Name: "unlock_door", Description: "Unlocks the front door.", Text: "unlocked", DelayMS: 60_000})
	defer door.Close()
	up := serveScripted(t, door, "127.0.0.1:0")
	cfg := filepath.Join(dir, "maven.json")
	c := fmt.Sprintf(`{"refresh_interval": "1s", "mcpServers": {"home": {"type": "http", "url": "http://%s/mcp"}},
		"agents": {"approval_wait": "1s"}}`, up.addr)
	if err := os.WriteFile(cfg, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, data, "--config", cfg)
	ctx := context.Background()
	var row toolResult
	waitFor(t, 15*time.Second, func() bool {
		rows := toolsJSON(t, data)
		if len(rows) == 1 {
			row = rows[0]
		}
		return row.Name == "home_unlock_door"
	})
	a := authtest.New(d.proc.Origin())
	b := daemontest.NewBrowser(d.proc)
	if _, err := b.Register(ctx, newSetupLink(t, data).URL, a, "Phone"); err != nil {
		t.Fatal(err)
	}
	if err := b.Enable(ctx, a, row.ID, row.Name); err != nil {
		t.Fatal(err)
	}
	token, err := maven(t, data, "client", "add", "kitchen")
	if err != nil {
		t.Fatalf("client add: %v %s", err, token)
	}
	token = strings.TrimSpace(token)
	if said := agentCall(t, d.proc.Origin(), token, "home_unlock_door"); !strings.Contains(said, "I've asked for your approval on your phone") {
		t.Fatalf("the agent was told %q", said)
	}
	calls := approvalsJSON(t, data)
	if len(calls) != 1 || calls[0].State != "pending" || calls[0].Client != "kitchen" || calls[0].Tool != "home_unlock_door" {
		t.Fatalf("approvals: %+v", calls)
	}
	call := calls[0]
	if out, err := maven(t, data, "approvals"); err != nil || !strings.Contains(out, "pending") || !strings.Contains(out, call.URL) {
		t.Errorf("approvals: %v\n%s", err, out)
	}

	status, page, err := b.Do(ctx, http.MethodGet, fmt.Sprintf("/approvals/%d", call.ID), "", nil)
	m := bindingRE.FindSubmatch(page)
	if err != nil || status != http.StatusOK || m == nil {
		t.Fatalf("the call's page: %d %v\n%s", status, err, page)
	}
	binding := string(m[1])
	if err := b.StepUp(ctx, a, auth.One(auth.ActionApproveCall, call.ID, binding)); err != nil {
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() {
		_, _, err := b.Do(ctx, http.MethodPost, fmt.Sprintf("/approvals/%d/approve", call.ID), "application/x-www-form-urlencoded",
			[]byte(url.Values{"binding": {binding}}.Encode()))
		answered <- err
	}()
	waitFor(t, 15*time.Second, func() bool { return door.Calls("unlock_door") == 1 })
	if got := approvalsJSON(t, data); got[0].State != "running" {
		t.Fatalf("while the door unlocks the call is %q", got[0].State)
	}
	d.proc.Kill()
	if err := <-answered; err == nil {
		t.Error("the approval was answered though the daemon died in the run")
	}

	d = startDaemon(t, data, "--config", cfg)
	got := approvalsJSON(t, data)
	if len(got) != 1 || got[0].State != "interrupted" || !strings.Contains(got[0].Reason, "not run again") {
		t.Fatalf("after the restart: %+v", got)
	}
	if said := agentCall(t, d.proc.Origin(), token, "home_unlock_door"); !strings.Contains(said, "I've asked for your approval on your phone") {
		t.Errorf("the agent's same call after the restart: %q", said)
	}
	if n := door.Calls("unlock_door"); n != 1 {
		t.Errorf("the door was asked to unlock %d times, want once", n)
	}
}
