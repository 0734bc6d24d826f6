package db_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"maven/app/allowlist"
	"maven/db"
)

// openWithUpkeep opens a database as serve does, the upkeep hearing its commits, which commits
// counts; the upkeep runs once run is called, until the test ends.
func openWithUpkeep(t *testing.T, path string, commits *atomic.Int64) (bdb *bun.DB, run func()) {
	t.Helper()
	ctx := context.Background()
	upkeep := db.NewUpkeep(slog.New(slog.DiscardHandler))
	bdb, err := db.Open(ctx, path, db.OnCommit(func() { commits.Add(1); upkeep.Committed() }))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	started := false
	t.Cleanup(func() {
		stop()
		if started {
			<-done
		}
		bdb.Close()
	})
	return bdb, func() {
		started = true
		go func() { defer close(done); upkeep.Run(runCtx, bdb) }()
	}
}

// TestUpkeepCopiesCommitsIntoTheFile: with the upkeep running, what a commit wrote reaches the
// database file itself, long before SQLite's own checkpoint (walBackstopPages) would copy it; without
// it, the file stays as the migrations left it.
func TestUpkeepCopiesCommitsIntoTheFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "maven.db")
	bdb, run := openWithUpkeep(t, path, new(atomic.Int64))
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	write := func(key string) {
		if _, err := bdb.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, zeroblob(200000), '2026')`, key); err != nil {
			t.Fatal(err)
		}
	}
	before := size()
	write("a")
	if got := size(); got != before {
		t.Fatalf("the file grew from %d to %d bytes with no upkeep running", before, got)
	}
	run()
	write("b")
	waitFor(t, "the log copied into the file", func() bool { return size() >= before+200000 })
}

// TestUpkeepMergesTheIndexWhenWritesPause: each change of an indexed row's text adds a segment
// to the search index, and no write merges them (automerge 0); once writes pause, the upkeep merges them, finds every
// row as before, and then goes quiet: its own merges do not start it again.
func TestUpkeepMergesTheIndexWhenWritesPause(t *testing.T) {
	ctx := context.Background()
	var commits atomic.Int64
	bdb, run := openWithUpkeep(t, filepath.Join(t.TempDir(), "maven.db"), &commits)
	const rows = 20
	proposeEach(t, bdb, rows)
	if n := segments(t, bdb); n < rows {
		t.Fatalf("%d segments after %d changes of rows, before any upkeep: did a write merge them?", n, rows)
	}
	run()
	waitFor(t, "the index merged", func() bool { return segments(t, bdb) < 4 })
	found, err := db.NewToolStore(bdb).ListTools(ctx, allowlist.Filter{Query: "FORECAST"})
	if err != nil || len(found) != rows {
		t.Fatalf("after the merge the index finds %d rows (%v), want %d", len(found), err, rows)
	}

	// With nobody writing, the upkeep settles: a window of four pauses comes in which nothing
	// commits. A merge that its own commits restarted would never give one. (The window observes
	// an absence; the last round's end is waited for by looking again, not by a fixed sleep.)
	deadline := time.Now().Add(15 * time.Second)
	for {
		before := commits.Load()
		time.Sleep(4 * 250 * time.Millisecond)
		n := commits.Load() - before
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d commits in the last window with nobody writing: the upkeep keeps restarting itself", n)
		}
	}
}

// TestUpkeepMergesUnderWritesThatNeverPause: a browsing owner's session commits on every page,
// so a pause may never come; the index is merged all the same, within upkeepLatest (5 s).
func TestUpkeepMergesUnderWritesThatNeverPause(t *testing.T) {
	ctx := context.Background()
	bdb, run := openWithUpkeep(t, filepath.Join(t.TempDir(), "maven.db"), new(atomic.Int64))
	proposeEach(t, bdb, 20)
	if n := segments(t, bdb); n < 20 {
		t.Fatalf("%d segments after 20 changes of rows, before any upkeep", n)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := bdb.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, 'v', '2026')`, fmt.Sprint(i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	run()
	waitFor(t, "the index merged while writes go on", func() bool { return segments(t, bdb) < 4 })
}

// TestADiscoveryLeavesTheSearchIndexToTheUpkeep: a discovery's transaction writes nothing to the
// search index, yet a search right after finds its rows; once writes pause, the upkeep indexes
// them, and a search finds them through the index, a row's new text included.
func TestADiscoveryLeavesTheSearchIndexToTheUpkeep(t *testing.T) {
	ctx := context.Background()
	bdb, run := openWithUpkeep(t, filepath.Join(t.TempDir(), "maven.db"), new(atomic.Int64))
	store := db.NewToolStore(bdb)
	svc := allowlist.NewService(store, time.Now)
	ps := make([]allowlist.Proposal, 100)
	for i := range ps {
		name := fmt.Sprintf("weather_%03d", i)
		ps[i] = allowlist.Proposal{Name: name, Cmd: []string{"mcp", "weather", name}, Scope: "mcp:weather",
			ReadOnly: true, Description: "Reads the forecast", Source: allowlist.SourceDiscovery}
	}
	if err := svc.Update(ctx, func(tx *allowlist.Tx) error { _, err := tx.ProposeNew(ctx, ps); return err }); err != nil {
		t.Fatal(err)
	}
	indexed := func() int {
		var n int
		if err := bdb.QueryRowContext(ctx, "SELECT count(*) FROM tools_search_docsize").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	found := func(query string) int {
		rows, err := store.ListTools(ctx, allowlist.Filter{Query: query})
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	if n := indexed(); n != 0 {
		t.Fatalf("the discovery's transaction indexed %d rows; want none, the upkeep's work", n)
	}
	if n := found("FORECAST"); n != 100 {
		t.Fatalf("a search right after the discovery finds %d rows; want 100", n)
	}
	// A row changed before its turn goes in as it is then; one changed after, by the trigger.
	if _, err := bdb.ExecContext(ctx, "UPDATE tools SET description = 'Reads the moon' WHERE name = 'weather_001'"); err != nil {
		t.Fatal(err)
	}
	run()
	waitFor(t, "the rows indexed", func() bool { return indexed() == 100 })
	if _, err := bdb.ExecContext(ctx, "UPDATE tools SET description = 'Reads the tides' WHERE name = 'weather_007'"); err != nil {
		t.Fatal(err)
	}
	if n, m, k := found("FORECAST"), found("tides"), found("moon"); n != 98 || m != 1 || k != 1 {
		t.Fatalf("through the index: %d rows hold forecast, %d tides, %d moon; want 98, 1 and 1", n, m, k)
	}
	if _, err := bdb.ExecContext(ctx, "INSERT INTO tools_search (tools_search) VALUES ('integrity-check')"); err != nil {
		t.Fatalf("the index disagrees with the rows: %v", err)
	}
}

// proposeEach proposes n tools, has them all indexed, then changes each one's description in a
// transaction of its own: n segments of the index, as the upkeep left it after a discovery
// and n changes of rows since.
func proposeEach(t *testing.T, bdb *bun.DB, n int) {
	t.Helper()
	ctx := context.Background()
	svc := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	for i := range n {
		name := fmt.Sprintf("weather_%02d", i)
		if _, _, err := svc.ProposeTool(ctx, allowlist.Proposal{Name: name, Cmd: []string{"mcp", "weather", name},
			Scope: "mcp:weather", ReadOnly: true, Description: "Reads the weather", Source: allowlist.SourceDiscovery}); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{
		"INSERT INTO tools_search (tools_search) VALUES ('rebuild')",
		"UPDATE tools_search_through SET id = (SELECT max(id) FROM tools)",
	} {
		if _, err := bdb.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if _, err := bdb.ExecContext(ctx, "UPDATE tools SET description = 'Reads the forecast' WHERE name = ?",
			fmt.Sprintf("weather_%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// segments counts the search index's segments.
func segments(t *testing.T, bdb *bun.DB) int {
	t.Helper()
	var n int
	if err := bdb.QueryRowContext(context.Background(), "SELECT count(DISTINCT segid) FROM tools_search_idx").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOnCommitSeesWritesOnly: the hook runs once for each transaction that writes, and not for
// one that only reads.
func TestOnCommitSeesWritesOnly(t *testing.T) {
	ctx := context.Background()
	var commits atomic.Int32
	bdb, err := db.Open(ctx, filepath.Join(t.TempDir(), "maven.db"), db.OnCommit(func() { commits.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	before := commits.Load()
	if _, err := bdb.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES ('k', 'v', '2026')`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := bdb.QueryRowContext(ctx, `SELECT count(*) FROM settings`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if got := commits.Load() - before; got != 1 {
		t.Fatalf("one write and one read ran the hook %d times, want 1", got)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
