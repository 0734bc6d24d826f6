package db_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/db"
)

// newRunnableStore holds one proposed MCP row with a fingerprint and one local row without.
func newRunnableStore(tb testing.TB) (*db.ToolStore, allowlist.Tool, allowlist.Tool) {
	tb.Helper()
	ctx := context.Background()
	bdb := newDB(tb)
	store := db.NewToolStore(bdb)
	svc := allowlist.NewService(store, time.Now)
	mcpRow, _, err := svc.ProposeTool(ctx, allowlist.Proposal{Name: "tasks_search", Cmd: []string{"mcp", "tasks", "search"},
		Scope: allowlist.MCPScope("tasks"), Source: allowlist.SourceDiscovery, Actor: "test", Fingerprint: "sha256:1",
		Description: "Searches tasks", InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`),
		Declared: `{"description":"Searches tasks","inputSchema":{"type":"object","properties":{"query":{"type":"string"}}},"name":"search"}`})
	if err != nil {
		tb.Fatal(err)
	}
	local, _, err := svc.ProposeTool(ctx, allowlist.Proposal{Name: "reboot", Cmd: []string{"/sbin/reboot", "now"},
		Scope: allowlist.ScopeLocal, Source: allowlist.SourceCLI, Actor: "test"})
	if err != nil {
		tb.Fatal(err)
	}
	return store, mcpRow, local
}

// TestGetRunnable: the runner's read gives a row's state, fingerprint and command as GetTool
// does, and ErrNotFound for a row that is not there.
func TestGetRunnable(t *testing.T) {
	ctx := context.Background()
	store, mcpRow, local := newRunnableStore(t)
	for _, id := range []int64{mcpRow.ID, local.ID} {
		row, err := store.GetTool(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := store.GetRunnable(ctx, id)
		if err != nil || got.State != row.State || got.Fingerprint != row.Fingerprint || !slices.Equal(got.Cmd, row.Cmd) {
			t.Errorf("GetRunnable(%d) = %+v, %v; the row is %+v", id, got, err, row)
		}
	}
	if _, err := store.GetRunnable(ctx, local.ID+100); !errors.Is(err, allowlist.ErrNotFound) {
		t.Errorf("GetRunnable of a missing row: %v", err)
	}
}

// BenchmarkReadBeforeRun: the read the runner makes before every run, against reading the whole
// row.
func BenchmarkReadBeforeRun(b *testing.B) {
	ctx := context.Background()
	store, row, _ := newRunnableStore(b)
	b.Run("GetRunnable", func(b *testing.B) {
		for b.Loop() {
			if _, err := store.GetRunnable(ctx, row.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("GetTool", func(b *testing.B) {
		for b.Loop() {
			if _, err := store.GetTool(ctx, row.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}
