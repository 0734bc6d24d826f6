package db

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"maven/app/allowlist"
)

// TestDiscoveriesOfOneSizeShareTheirStatements: two servers' discoveries of 100 new tools each
// insert their rows and their events through the same two prepared statements; the second
// prepares none of its own.
func TestDiscoveriesOfOneSizeShareTheirStatements(t *testing.T) {
	ctx := context.Background()
	bdb, err := Open(ctx, filepath.Join(t.TempDir(), "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	store := NewToolStore(bdb)
	svc := allowlist.NewService(store, time.Now)
	discover := func(server string) {
		ps := make([]allowlist.Proposal, 100)
		for i := range ps {
			tool := fmt.Sprint("tool", i)
			ps[i] = allowlist.Proposal{Name: server + "_" + tool, Cmd: []string{"mcp", server, tool},
				Scope: allowlist.MCPScope(server), Source: allowlist.SourceDiscovery, Actor: "test"}
		}
		if err := svc.Update(ctx, func(tx *allowlist.Tx) error {
			_, err := tx.ProposeNew(ctx, ps)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	discover("alpha")
	first := map[string]any{}
	for q, st := range store.stmts.byQuery {
		first[q] = st
	}
	discover("beta")
	if len(first) != 2 || len(store.stmts.byQuery) != 2 {
		t.Fatalf("statements prepared: %d after one discovery, %d after two; want 2 and 2", len(first), len(store.stmts.byQuery))
	}
	for q, st := range store.stmts.byQuery {
		if first[q] != any(st) {
			t.Errorf("the second discovery prepared %.60q again", q)
		}
	}
	if n, err := svc.CountByState(ctx, allowlist.Filter{}); err != nil || n[allowlist.StateProposed] != 200 {
		t.Fatalf("rows proposed: %v, %v; want 200", n, err)
	}
}
