package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/limits"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
	"maven/app/runner"
	"maven/db"
	"maven/internal/testkit/testdb"
)

// TestACallOutsideTheLimitsIsNeverSent: whatever front end asked, the run path refuses an MCP
// call outside the owner's limits on its row with an error naming the property and the limit,
// and the server's call count does not move; a call within them runs (docs/design.md#rule-33).
func TestACallOutsideTheLimitsIsNeverSent(t *testing.T) {
	ctx := context.Background()
	bdb := testdb.Open(t)
	rows := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	lim := limits.NewService(db.NewLimitsStore(bdb), rows, time.Now)
	scripted := mcptest.NewScripted(mcptest.ToolSpec{Name: "set", Description: "Sets the temperature.", Echo: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number"}}}`)})
	srv := httptest.NewServer(scripted.HTTPHandler())
	t.Cleanup(srv.Close)
	t.Cleanup(scripted.Close)
	logger := slog.New(slog.DiscardHandler)
	m := mcp.NewManager(map[string]config.Server{"s": {Name: "s", Type: config.TransportHTTP, URL: srv.URL}},
		mcp.NewToolReconciler(rows, time.Now, logger), mcp.ManagerOptions{RefreshGap: 10 * time.Millisecond}, logger)
	m.Run(ctx)
	t.Cleanup(func() { m.Close() })
	e := runner.New(rows, m, runner.Options{Limits: lim})

	var row allowlist.Tool
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		list, err := rows.List(ctx, allowlist.Filter{Scope: "mcp:s"})
		if err == nil && len(list) == 1 {
			row = list[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no row proposed: %v", err)
		}
	}
	row, err := rows.EnableTool(ctx, row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest())))
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := 17.0, 23.0
	set := limits.Set{Props: map[string]limits.Limit{"temperature": {Kind: limits.KindRange, Min: &lo, Max: &hi}}}
	digest, err := limits.Digest(row.Fingerprint, set)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Save(ctx, row.ID, row.Fingerprint, set, authtest.Proof(t, auth.One(auth.ActionSetLimits, row.ID, digest))); err != nil {
		t.Fatal(err)
	}

	_, err = e.Exec(ctx, row, map[string]any{"temperature": 30.0})
	var v *limits.Violation
	if !errors.As(err, &v) || v.Property != "temperature" {
		t.Fatalf("outside the limits: %v", err)
	}
	if n := scripted.Calls("set"); n != 0 {
		t.Fatalf("the server was called %d times", n)
	}
	if _, err := e.Exec(ctx, row, map[string]any{"temperature": 20.0}); err != nil {
		t.Fatal(err)
	}
	if n := scripted.Calls("set"); n != 1 {
		t.Errorf("within the limits, the server was called %d times", n)
	}
}
