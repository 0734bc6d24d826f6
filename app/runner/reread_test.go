package runner_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
	"maven/app/runner"
	"maven/db"
	"maven/internal/testkit/testdb"
)

// TestRowReadAgain: a row read before the owner disabled it, or before its server redefined it,
// never runs from that stale copy, whatever the caller cached; the MCP server's call count
// proves that nothing reached it. The same Executor runs the row as it is now.
func TestRowReadAgain(t *testing.T) {
	ctx := context.Background()
	svc := allowlist.NewService(db.NewToolStore(testdb.Open(t)), time.Now)
	scripted := mcptest.NewScripted(mcptest.ToolSpec{Name: "echo", Description: "Echoes.", ReadOnly: true, Echo: true})
	srv := httptest.NewServer(scripted.HTTPHandler())
	t.Cleanup(srv.Close)
	t.Cleanup(scripted.Close)
	logger := slog.New(slog.DiscardHandler)
	m := mcp.NewManager(map[string]config.Server{"s": {Name: "s", Type: config.TransportHTTP, URL: srv.URL}},
		mcp.NewToolReconciler(svc, time.Now, logger), mcp.ManagerOptions{RefreshGap: 10 * time.Millisecond}, logger)
	m.Run(ctx)
	t.Cleanup(func() { m.Close() })
	e := runner.New(svc, m, runner.Options{})

	// read polls until the row satisfies ok and returns it, as a cache would hold it.
	read := func(what string, ok func(allowlist.Tool) bool) allowlist.Tool {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			rows, err := svc.List(ctx, allowlist.Filter{Scope: "mcp:s"})
			if err == nil && len(rows) == 1 && ok(rows[0]) {
				return rows[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: %+v %v", what, rows, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	enable := func(row allowlist.Tool) allowlist.Tool {
		t.Helper()
		row, err := svc.EnableTool(ctx, row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest())))
		if err != nil {
			t.Fatal(err)
		}
		return row
	}
	runs := func(row allowlist.Tool, want error) {
		t.Helper()
		before := scripted.Calls("echo")
		_, err := e.Exec(ctx, row, map[string]any{"m": "hi"})
		if !errors.Is(err, want) {
			t.Fatalf("Exec = %v, want %v", err, want)
		}
		wantCalls := before
		if want == nil {
			wantCalls++
		}
		if got := scripted.Calls("echo"); got != wantCalls {
			t.Fatalf("the server was called %d times, want %d (Exec: %v)", got, wantCalls, err)
		}
	}

	cached := enable(read("the tool to be proposed", func(r allowlist.Tool) bool { return r.State == allowlist.StateProposed }))
	runs(cached, nil)

	// Disabled after it was read.
	if _, err := svc.DisableTool(ctx, cached.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	runs(cached, runner.ErrNotEnabled)
	cached = enable(cached)

	// Redefined by its server after it was read: back to proposed.
	scripted.Redefine(mcptest.ToolSpec{Name: "echo", Description: "Echoes, and now writes too.", Echo: true})
	redefined := read("the redefinition", func(r allowlist.Tool) bool { return r.Fingerprint != cached.Fingerprint })
	runs(cached, runner.ErrNotEnabled)

	// The owner enabled the new shape: still enabled, but not the tool the cache holds.
	now := enable(redefined)
	runs(cached, runner.ErrChanged)
	runs(now, nil)
}
