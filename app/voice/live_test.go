package voice_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
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
	"maven/internal/testkit/testdb"
)

// liveTool is one scripted tool served over streamable HTTP to an MCP manager over a real
// database, its row discovered and enabled: what a turn reaches in the daemon.
type liveTool struct {
	*liveServer
	row allowlist.Tool
}

func newLiveTool(tb testing.TB, server string, spec mcptest.ToolSpec, allow ...string) *liveTool {
	tb.Helper()
	remote := mcptest.NewScripted(spec)
	tb.Cleanup(remote.Close)
	l := newLiveServer(tb, remote, config.Server{Name: server, AllowTools: allow}, 1, mcp.ManagerOptions{})
	return &liveTool{liveServer: l, row: l.enabled[0]}
}

// liveServer is a scripted server served over streamable HTTP to a running MCP manager over a
// fresh database, with every tool it lists discovered and enabled.
type liveServer struct {
	db      *bun.DB
	rows    *allowlist.Service
	manager *mcp.Manager
	url     string
	enabled []allowlist.Tool
}

// newLiveServer serves remote as cfg (its name and allow_tools; the URL is filled in), waits
// for its tools tools to be proposed, and enables them as the owner would.
func newLiveServer(tb testing.TB, remote *mcptest.Scripted, cfg config.Server, tools int, opts mcp.ManagerOptions) *liveServer {
	tb.Helper()
	ctx := context.Background()
	srv := httptest.NewServer(remote.HTTPHandler())
	tb.Cleanup(srv.Close)
	bdb := testdb.Open(tb)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l := &liveServer{db: bdb, rows: allowlist.NewService(db.NewToolStore(bdb), time.Now), url: srv.URL}
	cfg.Type, cfg.URL = config.TransportHTTP, srv.URL
	l.manager = mcp.NewManager(map[string]config.Server{cfg.Name: cfg}, mcp.NewToolReconciler(l.rows, time.Now, logger), opts, logger)
	l.manager.Run(ctx)
	tb.Cleanup(func() { l.manager.Close() })
	var (
		listed []allowlist.Tool
		err    error
	)
	for deadline := time.Now().Add(10 * time.Second); len(listed) < tools; time.Sleep(5 * time.Millisecond) {
		if listed, err = l.rows.List(ctx, allowlist.Filter{Scope: allowlist.MCPScope(cfg.Name)}); err != nil {
			tb.Fatal(err)
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d tools of %s proposed", len(listed), tools, cfg.Name)
		}
	}
	for _, row := range listed {
		row, err := l.rows.EnableTool(ctx, row.ID, authtest.Proof(tb, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest())))
		if err != nil {
			tb.Fatal(err)
		}
		l.enabled = append(l.enabled, row)
	}
	return l
}
