package bench

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
	"maven/app/mcp"
	"maven/db"
)

// reconcileTimes are the totals of one reconcile of servers × tools: all new, unchanged (the
// reconciler remembers the fingerprints), and unchanged after Forget (compared with the
// database).
type reconcileTimes struct {
	first, unchanged, forgotten time.Duration
}

// benchReconcile reconciles 100 servers × 100 tools into a fresh database, in-process, three
// passes, and returns their totals.
func benchReconcile(t *testing.T) reconcileTimes {
	ctx := context.Background()
	// As the daemon opens it, with its upkeep: checkpoints as the passes write, and the search
	// index merged in the pauses between them.
	upkeep := db.NewUpkeep(slog.New(slog.DiscardHandler))
	bdb, err := db.Open(ctx, filepath.Join(t.TempDir(), "maven.db"), db.OnCommit(upkeep.Committed))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); upkeep.Run(runCtx, bdb) }()
	defer func() { stop(); <-done }()
	svc := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	rec := mcp.NewToolReconciler(svc, time.Now, slog.New(slog.DiscardHandler))
	const servers = 100
	lists := make([][]*sdk.Tool, servers)
	for s := range servers {
		lists[s] = sdkTools(catalog(serverName(s), 100))
	}
	pass := func() time.Duration {
		start := time.Now()
		for s, list := range lists {
			if err := rec.Reconcile(ctx, serverName(s), list); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var rt reconcileTimes
	rt.first = pass()
	counts, err := svc.CountByState(ctx, allowlist.Filter{})
	if err != nil || counts[allowlist.StateProposed] != servers*100 {
		t.Fatalf("after the first reconcile: %v %v", counts, err)
	}
	before := svc.Version()
	rt.unchanged = pass()
	if v := svc.Version(); v != before {
		t.Fatalf("an unchanged reconcile opened a write transaction: version %d → %d", before, v)
	}
	for s := range servers {
		rec.Forget(serverName(s))
	}
	rt.forgotten = pass()
	after, err := svc.CountByState(ctx, allowlist.Filter{})
	if err != nil || after[allowlist.StateProposed] != servers*100 {
		t.Fatalf("after the pass that compared with the database: %v %v", after, err)
	}
	return rt
}

// reportReconcile adds the reconcile of 100 servers × 100 tools, three runs.
func reportReconcile(t *testing.T, e *benchEnv, rep *report) {
	var first, unchanged, forgotten []time.Duration
	for range 3 {
		rt := benchReconcile(t)
		first, unchanged, forgotten = append(first, rt.first), append(unchanged, rt.unchanged), append(forgotten, rt.forgotten)
	}
	rep.add("Reconcile 100 servers × 100 tools, all new: total (median of 3; not yet a ratio)", ms(median(first)))
	rep.add("Reconcile, unchanged, fingerprints remembered: total (median of 3; not yet a ratio)", ms(median(unchanged)))
	rep.add("Reconcile, unchanged, compared with the database (after `Forget`): total (median of 3)", ms(median(forgotten)))
	rep.raw("reconcile, all new", first)
	rep.raw("reconcile, unchanged", unchanged)
	rep.raw("reconcile, after Forget", forgotten)

}
