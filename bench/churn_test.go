package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"maven/app/allowlist"
	"maven/app/config"
	"maven/app/mcp"
	"maven/db"
)

// churnServer is what one hostile server left in the database after the run.
type churnServer struct {
	events    int // tool_events rows of its tools, discovery included
	repeats   int // tool_event_repeats rows: events that count redefinitions after them
	rows      int // its tools rows
	refreshes int // complete lists handed to the reconciler
	status    mcp.ServerStatus
}

// benchChurn runs two hostile stdio servers (scripted-mcp) of 100 tools each under one Manager
// with the daemon's default options, the real reconciler and a database, for d: one gives
// every tool a new description every 200 ms, the other a new name. It returns what each left.
func benchChurn(t *testing.T, scripted string, d time.Duration) (redefiner, renamer churnServer) {
	ctx := context.Background()
	dir := t.TempDir()
	bdb, err := db.Open(ctx, filepath.Join(dir, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	logger := slog.New(slog.DiscardHandler)
	svc := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	rec := mcp.NewToolReconciler(svc, time.Now, logger)
	var mu sync.Mutex
	lists := map[string]int{}
	rec.OnReconcile(func(server string, _ time.Duration) {
		mu.Lock()
		lists[server]++
		mu.Unlock()
	})
	servers := map[string]config.Server{}
	for name, flag := range map[string]string{"redefiner": "-redefine-every", "renamer": "-rename-every"} {
		specs, err := json.Marshal(catalog(name, 100))
		if err != nil {
			t.Fatal(err)
		}
		file := writeFile(t, dir, name+".json", specs)
		servers[name] = config.Server{Type: config.TransportStdio, Command: scripted, Args: []string{flag, "200ms", file}}
	}
	m := mcp.NewManager(servers, rec, mcp.ManagerOptions{Version: "bench"}, logger)
	m.Run(ctx)
	time.Sleep(d) // the figure is what d of churn leaves behind: the wait is the measurement
	statuses := m.Status()
	m.Close()
	at := func(name string) churnServer {
		mu.Lock()
		defer mu.Unlock()
		c := churnServer{refreshes: lists[name], events: count(t, bdb, "tool_events", name),
			repeats: count(t, bdb, "tool_event_repeats", name), rows: countRows(t, bdb, name)}
		for _, st := range statuses {
			if st.Name == name {
				c.status = st
			}
		}
		return c
	}
	return at("redefiner"), at("renamer")
}

// count counts the rows of tool_events, or of tool_event_repeats, that belong to server's tools.
func count(t *testing.T, bdb *bun.DB, table, server string) int {
	var n int
	q := "SELECT count(*) FROM tool_events AS e JOIN tools AS t ON t.id = e.tool_id WHERE t.scope = ?"
	if table == "tool_event_repeats" {
		q = "SELECT count(*) FROM tool_event_repeats AS r JOIN tool_events AS e ON e.id = r.event_id " +
			"JOIN tools AS t ON t.id = e.tool_id WHERE t.scope = ?"
	}
	err := bdb.NewRaw(q, allowlist.MCPScope(server)).Scan(context.Background(), &n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func countRows(t *testing.T, bdb *bun.DB, server string) int {
	n, err := bdb.NewSelect().Table("tools").Where("scope = ?", allowlist.MCPScope(server)).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// reportChurn adds what a minute of two hostile servers churning their tools writes.
func reportChurn(t *testing.T, e *benchEnv, rep *report) {
	redefiner, renamer := benchChurn(t, buildScripted(t, e.dir), churnRun)
	rep.add("Audit rows (`tool_events`) written by a server redefining 100 tools every 200 ms, in 60 s",
		fmt.Sprint(redefiner.events))
	rep.add("Tool rows and audit rows left by a server renaming 100 tools every 200 ms, in 60 s",
		fmt.Sprintf("%d rows, %d events", renamer.rows, renamer.events))
	for _, c := range []struct {
		name string
		churnServer
	}{{"redefiner", redefiner}, {"renamer", renamer}} {
		rep.rawLine(fmt.Sprintf("churn, %s: %d complete lists reconciled, %d rows, %d events, %d repeat counts; ends %s %q",
			c.name, c.refreshes, c.rows, c.events, c.repeats, c.status.State, c.status.LastError))
	}

}
