package voice_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/config"
	"maven/app/exec"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
	"maven/app/voice"
	"maven/db"
)

// BenchmarkVoiceTurnVsDirectCall measures, side by side in one run, a voice turn to a read-only
// tool on a loopback streamable-HTTP server (match, bind, audit event, call through the MCP
// manager) against a direct go-sdk CallTool on the same server. Each iteration does one of each,
// so both see the same machine load; the metrics are the medians, p99s and the median ratio
// (target: at most 1.3).
func BenchmarkVoiceTurnVsDirectCall(b *testing.B) {
	ctx := context.Background()
	remote := mcptest.NewScripted(mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks",
		InputSchema: json.RawMessage(stringSchema), ReadOnly: true, Echo: true})
	defer remote.Close()
	srv := httptest.NewServer(remote.HTTPHandler())
	defer srv.Close()

	bdb, err := db.Open(ctx, filepath.Join(b.TempDir(), "maven.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer bdb.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	rows := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	servers := map[string]config.Server{"tasks": {Name: "tasks", Type: config.TransportHTTP, URL: srv.URL, AllowTools: []string{"search_tasks"}}}
	manager := mcp.NewManager(servers, mcp.NewToolReconciler(rows, time.Now, logger), mcp.ManagerOptions{}, logger)
	manager.Run(ctx)
	defer manager.Close()

	var row allowlist.Tool
	deadline := time.Now().Add(10 * time.Second)
	for row.ID == 0 {
		list, _ := rows.List(ctx, allowlist.Filter{Scope: "mcp:tasks"})
		if len(list) == 1 {
			row = list[0]
		} else if time.Now().After(deadline) {
			b.Fatal("the tool was never proposed")
		}
	}
	if _, err := rows.EnableTool(ctx, row.ID, auth.ForTest(b, auth.ActionEnableTool, row.ID)); err != nil {
		b.Fatal(err)
	}
	turns := voice.New(voice.Deps{Rows: rows, Binder: manager, Runner: exec.New(manager, exec.Options{}), Lock: &lockFlag{}},
		voice.Options{Logger: logger, TurnsPerSecond: 1e9, Burst: 1e9})
	defer turns.Close()

	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil)
	direct, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()

	// Warm both paths (connections, matcher, prepared statements).
	for range 20 {
		if r := turns.Turn(ctx, voice.Request{Conversation: "bench", Text: "search tasks milk"}); r.Outcome != voice.OutcomeRan {
			b.Fatalf("voice turn: %+v", r)
		}
		if _, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "search_tasks", Arguments: map[string]any{"query": "milk"}}); err != nil {
			b.Fatal(err)
		}
	}

	var voiceTimes, directTimes []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		r := turns.Turn(ctx, voice.Request{Conversation: "bench", Text: "search tasks milk"})
		voiceTimes = append(voiceTimes, time.Since(start))
		if r.Outcome != voice.OutcomeRan {
			b.Fatalf("voice turn: %+v", r)
		}
		start = time.Now()
		if _, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "search_tasks", Arguments: map[string]any{"query": "milk"}}); err != nil {
			b.Fatal(err)
		}
		directTimes = append(directTimes, time.Since(start))
	}
	b.StopTimer()
	vm, dm := quantile(voiceTimes, 0.5), quantile(directTimes, 0.5)
	b.ReportMetric(float64(vm.Microseconds()), "voice-median-µs")
	b.ReportMetric(float64(quantile(voiceTimes, 0.99).Microseconds()), "voice-p99-µs")
	b.ReportMetric(float64(dm.Microseconds()), "direct-median-µs")
	b.ReportMetric(float64(quantile(directTimes, 0.99).Microseconds()), "direct-p99-µs")
	b.ReportMetric(float64(vm)/float64(dm), "median-ratio")
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}
