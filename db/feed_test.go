package db_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/db"
)

// discover proposes n new tools of server in one transaction, as a first discovery does.
func discover(t *testing.T, bdb *bun.DB, server string, n int) {
	t.Helper()
	ps := make([]allowlist.Proposal, n)
	for i := range ps {
		name := fmt.Sprintf("%s_%03d", server, i)
		ps[i] = allowlist.Proposal{Name: name, Cmd: []string{"mcp", server, name}, Scope: allowlist.MCPScope(server),
			ReadOnly: true, Description: "Reads the forecast", Source: allowlist.SourceDiscovery}
	}
	svc := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	if err := svc.Update(context.Background(), func(tx *allowlist.Tx) error { _, err := tx.ProposeNew(context.Background(), ps); return err }); err != nil {
		t.Fatal(err)
	}
}

// copied counts the tool events in the feed, failing if one is there twice.
func copied(t *testing.T, bdb *bun.DB) int {
	t.Helper()
	var n, distinct int
	if err := bdb.QueryRowContext(context.Background(),
		"SELECT count(event_id), count(DISTINCT event_id) FROM activity").Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != distinct {
		t.Fatalf("%d tool events in the feed, %d of them distinct", n, distinct)
	}
	return n
}

// TestADiscoveryLeavesTheFeedToItsReaders: a discovery's transaction writes nothing to the
// activity feed, yet a read of the feed right after it, with no upkeep running, holds every
// event it appended (docs/design.md#rule-3).
func TestADiscoveryLeavesTheFeedToItsReaders(t *testing.T) {
	ctx := context.Background()
	bdb, _ := openWithUpkeep(t, filepath.Join(t.TempDir(), "maven.db"), new(atomic.Int64))
	discover(t, bdb, "weather", 100)
	if n := copied(t, bdb); n != 0 {
		t.Fatalf("the discovery's transaction wrote %d feed entries; want none", n)
	}
	got, err := db.NewActivityStore(bdb).ListActivity(ctx, activity.Filter{Limit: activity.MaxLimit, Action: "proposed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 {
		t.Fatalf("the feed right after the discovery holds %d of its 100 events", len(got))
	}
	if got[0].Tool != "weather_099" || got[99].Tool != "weather_000" || got[0].ToolID == 0 || got[0].Actor != "system" {
		t.Fatalf("the feed right after the discovery: newest %+v, oldest %+v", got[0], got[99])
	}
}

// TestUpkeepCopiesTheFeedWhenWritesPause: once writes pause, the upkeep copies the events a
// discovery appended into the feed, with no read asking for them.
func TestUpkeepCopiesTheFeedWhenWritesPause(t *testing.T) {
	bdb, run := openWithUpkeep(t, filepath.Join(t.TempDir(), "maven.db"), new(atomic.Int64))
	for _, server := range []string{"weather", "notes", "files"} {
		discover(t, bdb, server, 1000)
	}
	if n := copied(t, bdb); n != 0 {
		t.Fatalf("the discoveries' transactions wrote %d feed entries; want none", n)
	}
	run()
	waitFor(t, "the upkeep to copy the events", func() bool { return copied(t, bdb) == 3000 })
}

// TestTheFeedCopiesEachEventOnce: reads of the feed and the upkeep copy events at once, while
// discoveries append more and pause; each event is copied once, and every read holds every
// event committed before it.
func TestTheFeedCopiesEachEventOnce(t *testing.T) {
	ctx := context.Background()
	bdb, run := openWithUpkeep(t, filepath.Join(t.TempDir(), "maven.db"), new(atomic.Int64))
	run()
	store := db.NewActivityStore(bdb)
	var committed atomic.Int64 // events committed so far
	done := make(chan struct{})
	errs := make(chan error, 4)
	var readers sync.WaitGroup
	for range 3 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				before := committed.Load()
				got, err := store.ListActivity(ctx, activity.Filter{Limit: 1, Action: "proposed"})
				if err != nil {
					errs <- err
					return
				}
				if before > 0 && (len(got) == 0 || got[0].ID == 0) {
					errs <- fmt.Errorf("a read after %d events found none", before)
					return
				}
				var n int64
				if err := bdb.QueryRowContext(ctx, "SELECT count(event_id) FROM activity").Scan(&n); err != nil {
					errs <- err
					return
				}
				if n < before {
					errs <- fmt.Errorf("a read after %d events left %d in the feed", before, n)
					return
				}
			}
		})
	}
	for s := range 20 {
		discover(t, bdb, fmt.Sprintf("server%02d", s), 100)
		committed.Add(100)
		if s%5 == 4 {
			// Writes pause until the upkeep's round has run (it indexes the new rows just after
			// copying the events), so that its copies run beside the reads' too.
			waitFor(t, "the upkeep's round", func() bool {
				var behind bool
				if err := bdb.QueryRowContext(ctx, "SELECT (SELECT id FROM tools_search_through) < (SELECT max(id) FROM tools)").Scan(&behind); err != nil {
					t.Fatal(err)
				}
				return !behind
			})
		}
	}
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := store.ListActivity(ctx, activity.Filter{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if n := copied(t, bdb); n != 2000 {
		t.Fatalf("%d events in the feed; want 2000", n)
	}
}

// feedWrites append the same tool events to a database, raw: a voice turn of the old form
// (voice_<outcome>), an event with a detail, and a row renamed between two of its events, as
// a proposal renames a local command that is not enabled.
var feedWrites = []string{
	`INSERT INTO tools (id, name, cmd, scope, state, destructive, read_only, description, source, created_at, updated_at)
	 VALUES (1, 'weather', '["/bin/weather"]', 'local', 'proposed', 1, 0, '', 'cli', '2026-12-01T09:00:00.000000000Z', '2026-12-01T09:00:00.000000000Z')`,
	`INSERT INTO tool_events (tool_id, at, actor, action) VALUES (1, '2026-12-01T09:00:00.000000000Z', 'cli', 'proposed')`,
	`INSERT INTO tool_events (tool_id, at, actor, action, detail)
	 VALUES (1, '2026-12-01T10:00:00.000000000Z', 'voice', 'voice_needs_args', '{"utterance":"weather now"}')`,
	`UPDATE tools SET name = 'forecast' WHERE id = 1`,
	`INSERT INTO tool_events (tool_id, at, actor, action, detail)
	 VALUES (1, '2026-12-01T11:00:00.000000000Z', 'cli', 'updated', '{"name":"forecast","old_name":"weather"}')`,
}

// feedRows are the feed's entries of tool events, in id order, all but their ids.
func feedRows(t *testing.T, bdb *bun.DB) []string {
	t.Helper()
	rows, err := bdb.QueryContext(context.Background(), "SELECT json_array(at, actor, action, tool_id, tool, outcome, detail, event_id) "+
		"FROM activity WHERE event_id IS NOT NULL ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTheFeedCopiesEventsAsTheTriggerDid: the feed's copy of tool events, made after their
// commit, holds what the trigger that copied each as it was appended (up to migration
// 20261226090000) wrote, field for field: a voice turn's action and outcome, and the name a
// row had when the event was appended, though it was renamed before the copy.
func TestTheFeedCopiesEventsAsTheTriggerDid(t *testing.T) {
	ctx := context.Background()
	earlier := migratedTo(t, filepath.Join(t.TempDir(), "maven.db"), "20261226090000")
	defer earlier.Close()
	bdb := newDB(t)
	for _, stmt := range feedWrites {
		for _, d := range []*bun.DB{earlier, bdb} {
			if _, err := d.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.NewActivityStore(bdb).ListActivity(ctx, activity.Filter{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	want, got := feedRows(t, earlier), feedRows(t, bdb)
	if len(want) != 3 || !slices.Equal(got, want) {
		t.Fatalf("the feed's copy of the events:\n%v\nthe trigger's:\n%v", got, want)
	}
}
