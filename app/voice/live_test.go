package voice_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
	"maven/db"
)

// liveTool is one scripted tool served over streamable HTTP to an MCP manager over a real
// database, its row discovered and enabled: what a turn reaches in the daemon.
type liveTool struct {
	db      *bun.DB
	rows    *allowlist.Service
	manager *mcp.Manager
	row     allowlist.Tool
	url     string
}

func newLiveTool(tb testing.TB, server string, spec mcptest.ToolSpec, allow ...string) *liveTool {
	tb.Helper()
	ctx := context.Background()
	remote := mcptest.NewScripted(spec)
	tb.Cleanup(remote.Close)
	srv := httptest.NewServer(remote.HTTPHandler())
	tb.Cleanup(srv.Close)
	bdb, err := db.Open(ctx, filepath.Join(tb.TempDir(), "maven.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { bdb.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l := &liveTool{db: bdb, rows: allowlist.NewService(db.NewToolStore(bdb), time.Now), url: srv.URL}
	servers := map[string]config.Server{server: {Name: server, Type: config.TransportHTTP, URL: srv.URL, AllowTools: allow}}
	l.manager = mcp.NewManager(servers, mcp.NewToolReconciler(l.rows, time.Now, logger), mcp.ManagerOptions{}, logger)
	l.manager.Run(ctx)
	tb.Cleanup(func() { l.manager.Close() })
	for deadline := time.Now().Add(10 * time.Second); l.row.ID == 0; {
		if list, _ := l.rows.List(ctx, allowlist.Filter{Scope: allowlist.MCPScope(server)}); len(list) == 1 {
			l.row = list[0]
		} else if time.Now().After(deadline) {
			tb.Fatalf("%s was never proposed", spec.Name)
		}
	}
	if l.row, err = l.rows.EnableTool(ctx, l.row.ID, authtest.Proof(tb, auth.One(auth.ActionEnableTool, l.row.ID, l.row.ApprovalDigest()))); err != nil {
		tb.Fatal(err)
	}
	return l
}
