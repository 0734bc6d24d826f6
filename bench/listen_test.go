package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
	"maven/db"
)

// listenTimes are the listen figure's two sides, from the same signal: the row back in
// proposed in Maven, and a plain go-sdk client of the same server hearing the change and
// listing the tools again (the floor: the server's own announcement and listing, without the
// reconcile).
type listenTimes struct{ proposed, listed []time.Duration }

// benchListen times, n times, how long an enabled tool of a server that speaks only MCP
// 2026-07-28 takes to be back in proposed after the server redefines it: the server (scripted-mcp
// -era modern, a process of its own, over streamable HTTP or stdio) re-reads its tools on SIGHUP
// and announces the change on its subscriptions/listen stream; Maven lists, reconciles and
// writes the row. The clock runs from the signal to the row read back as proposed. Beside it,
// from the same signal, a go-sdk client of its own listening to the same server (over HTTP) or
// to a twin process on the same tools file (over stdio, signalled at the same instant) hears the
// change and lists the tools again. Changes are RefreshGap (1 s) apart, as a server's list
// changes are served at most once a gap.
func benchListen(t *testing.T, scripted string, transport config.Transport, n int) listenTimes {
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
	pidFile, twinPID := filepath.Join(dir, "pid"), filepath.Join(dir, "twin.pid")
	cfg := config.Server{Name: "modern", Type: transport, Command: scripted, Args: []string{"-era", "modern", "-pid", pidFile, toolsFile}}
	var floor sdk.Transport
	if transport == config.TransportHTTP {
		cfg = config.Server{Name: "modern", Type: transport, URL: startScriptedHTTP(t, scripted, toolsFile, "-era", "modern", "-pid", pidFile)}
		floor = &sdk.StreamableClientTransport{Endpoint: cfg.URL}
	} else {
		floor = &sdk.CommandTransport{Command: exec.Command(scripted, "-era", "modern", "-pid", twinPID, toolsFile)}
	}
	heard := make(chan time.Time, 4)
	var direct *sdk.ClientSession
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, _ *sdk.ToolListChangedRequest) {
			if _, err := direct.ListTools(ctx, nil); err == nil {
				heard <- time.Now()
			}
		},
	})
	direct, err := client.Connect(ctx, floor, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()

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
	pids := []int{readPID(t, pidFile)}
	if transport != config.TransportHTTP {
		pids = append(pids, readPID(t, twinPID))
	}
	var lt listenTimes
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
		for len(heard) > 0 {
			<-heard
		}
		start := time.Now()
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
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
		lt.proposed = append(lt.proposed, time.Since(start))
		select {
		case at := <-heard:
			lt.listed = append(lt.listed, at.Sub(start))
		case <-time.After(30 * time.Second):
			t.Fatalf("the direct client never heard that %s changed", row.Name)
		}
	}
	return lt
}

// readPID waits for a scripted server's pid file.
func readPID(t *testing.T, file string) int {
	var pid int
	waitFor(t, "the server's pid", 30*time.Second, func() bool {
		b, _ := os.ReadFile(file)
		pid, _ = strconv.Atoi(string(b))
		return pid > 0
	})
	return pid
}

// reportListen adds how soon a 2026-07-28 server's list change puts a row back in proposed,
// beside a plain client of the same server hearing the change and listing again.
func reportListen(t *testing.T, e *benchEnv, rep *report) {
	scripted := buildScripted(t, e.dir)
	for _, transport := range []config.Transport{config.TransportHTTP, config.TransportStdio} {
		lt := benchListen(t, scripted, transport, e.n(20))
		rep.versus(fmt.Sprintf("A 2026-07-28 server (%s) redefines an enabled tool → its row back in `proposed`, through `subscriptions/listen` (median of %d)", transport, len(lt.proposed)),
			lt.proposed, lt.listed, "a go-sdk client of the server hearing it and listing again", targetListenRatio)
		rep.raw(fmt.Sprintf("listen, %s: list change to proposed", transport), lt.proposed)
		rep.raw(fmt.Sprintf("listen, %s: list change to a direct client's new listing, beside it", transport), lt.listed)
	}
}
