package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
	"maven/db"
)

// benchListen times, n times, how long an enabled tool of a server that speaks only MCP
// 2026-07-28 takes to be back in proposed after the server redefines it: the server (scripted-mcp
// -era modern, a process of its own, over streamable HTTP or stdio) re-reads its tools on SIGHUP
// and announces the change on its subscriptions/listen stream; Maven lists, reconciles and
// writes the row. The clock runs from the signal to the row read back as proposed. Changes are
// RefreshGap (1 s) apart, as a server's list changes are served at most once a gap.
func benchListen(t *testing.T, scripted string, transport config.Transport, n int) []time.Duration {
	ctx := context.Background()
	dir := t.TempDir()
	// One tool per sample: the churn budget allows a tool 10 redefinitions an hour.
	specs := make([]mcptest.ToolSpec, n)
	for i := range specs {
		specs[i] = mcptest.ToolSpec{Name: fmt.Sprintf("list_%02d", i), Description: "Lists tasks.", ReadOnly: true, Text: "milk"}
	}
	toolsFile := filepath.Join(dir, "tools.json")
	if err := mcptest.WriteTools(toolsFile, specs...); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "pid")
	cfg := config.Server{Name: "modern", Type: transport, Command: scripted, Args: []string{"-era", "modern", "-pid", pidFile, toolsFile}}
	if transport == config.TransportHTTP {
		cfg = config.Server{Name: "modern", Type: transport, URL: startScriptedHTTP(t, scripted, toolsFile, "-era", "modern", "-pid", pidFile)}
	}

	bdb, err := db.Open(ctx, filepath.Join(dir, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	logger := slog.New(slog.DiscardHandler)
	rows := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	manager := mcp.NewManager(map[string]config.Server{"modern": cfg}, mcp.NewToolReconciler(rows, time.Now, logger),
		mcp.ManagerOptions{Version: "bench"}, logger)
	manager.Run(ctx)
	defer manager.Close()

	var listed []allowlist.Tool
	waitFor(t, "the tools to be proposed", 30*time.Second, func() bool {
		listed, _ = rows.List(ctx, allowlist.Filter{Scope: "mcp:modern"})
		return len(listed) == n
	})
	for _, row := range listed {
		if _, err := rows.EnableTool(ctx, row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest()))); err != nil {
			t.Fatal(err)
		}
	}
	var pid int
	waitFor(t, "the server's pid", 30*time.Second, func() bool {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(string(b))
		return pid > 0
	})
	var took []time.Duration
	for i, row := range listed {
		time.Sleep(mcp.DefaultRefreshGap + 100*time.Millisecond) // past the gap since the last list
		for j := range specs {
			if specs[j].Name == row.RemoteName() {
				specs[j].Description = fmt.Sprintf("Lists tasks (redefinition %d).", i)
			}
		}
		if err := mcptest.WriteTools(toolsFile, specs...); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for {
			if row, err = rows.Get(ctx, row.ID); err != nil {
				t.Fatal(err)
			}
			if row.State == allowlist.StateProposed {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("the redefinition never brought %s back to proposed (%s)", row.Name, row.State)
			}
			time.Sleep(200 * time.Microsecond)
		}
		took = append(took, time.Since(start))
	}
	return took
}

// reportListen adds how soon a 2026-07-28 server's list change puts a row back in proposed.
func reportListen(t *testing.T, e *benchEnv, rep *report) {
	scripted := buildScripted(t, e.dir)
	for _, transport := range []config.Transport{config.TransportHTTP, config.TransportStdio} {
		took := benchListen(t, scripted, transport, e.n(20))
		rep.add(fmt.Sprintf("A 2026-07-28 server (%s) redefines an enabled tool → its row back in `proposed`, through `subscriptions/listen`: median of %d", transport, len(took)),
			fmt.Sprintf("%s (not yet a ratio; was ≤ %s)", ms(median(took)), ms(targetListenMedian)))
		rep.raw(fmt.Sprintf("listen, %s: list change to proposed", transport), took)
	}

}
