package db_test

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/db"
)

// TestOpenMigratesAnOlderDatabase: a database that the released Maven migrated, up to
// tool_event_repeats, gets every later migration on Open, and ends with the same migrations
// applied as a new database. A shipped migration keeps its id for ever (bun records only the
// id): every migration written since sorts after it.
func TestOpenMigratesAnOlderDatabase(t *testing.T) {
	ctx := context.Background()
	const shippedUpTo = "20261202090000"
	all, older := migrationNames(t, ""), migrationNames(t, shippedUpTo)
	if len(older) == len(all) {
		t.Fatalf("no migration after %s to apply", shippedUpTo)
	}

	path := filepath.Join(t.TempDir(), "maven.db")
	earlier := migratedTo(t, path, shippedUpTo)
	if got := appliedNames(t, earlier); !slices.Equal(got, older) {
		t.Fatalf("the earlier database applied %v, want %v", got, older)
	}
	// What the passkey slots' public keys add must be among what the earlier Maven never ran.
	if _, err := earlier.ExecContext(ctx, "SELECT public_key FROM vault_slots"); err == nil {
		t.Fatalf("the database of migrations up to %s already has vault_slots.public_key", shippedUpTo)
	}
	// A row the earlier Maven indexed is found by the index that replaced that one.
	if _, err := earlier.ExecContext(ctx, `INSERT INTO tools (name, cmd, scope, state, destructive, read_only,
		description, source, created_at, updated_at) VALUES ('weather', '["/bin/weather"]', 'local', 'proposed', 1, 0,
		'Reads the Forecast', 'cli', '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')`); err != nil {
		t.Fatal(err)
	}
	earlier.Close()

	bdb, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if got := appliedNames(t, bdb); !slices.Equal(got, all) {
		t.Fatalf("after Open: %v, want %v", got, all)
	}
	var automerge int
	if err := bdb.QueryRowContext(ctx, "SELECT v FROM tools_search_config WHERE k = 'automerge'").Scan(&automerge); err != nil || automerge != 0 {
		t.Fatalf("automerge = %d, %v; want 0", automerge, err)
	}
	found, err := db.NewToolStore(bdb).ListTools(ctx, allowlist.Filter{Query: "FORECAST"})
	if err != nil || len(found) != 1 || found[0].Name != "weather" {
		t.Fatalf("searching the migrated index: %v, %v", found, err)
	}
	if _, err := bdb.ExecContext(ctx, "SELECT count(*) FROM tool_event_repeats"); err != nil {
		t.Fatal(err)
	}
	if _, err := bdb.ExecContext(ctx, "SELECT public_key FROM vault_slots"); err != nil {
		t.Fatal(err)
	}

	fresh, err := db.Open(ctx, filepath.Join(t.TempDir(), "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got := appliedNames(t, fresh); !slices.Equal(got, all) {
		t.Fatalf("a new database applied %v, want %v", got, all)
	}
}

// TestAnUpgradedFeedReadsInTimeOrder: a database from before the activity feed has row events
// and a command line approved between two of them; the upgrade copies the row events and then
// the approvals into the feed, so by id the approval comes last. The feed reads by time, then
// id: newest first as things happened, and its pages continue in that order.
func TestAnUpgradedFeedReadsInTimeOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "maven.db")
	earlier := migratedTo(t, path, "20261202090000")
	for _, stmt := range []string{
		`INSERT INTO tools (id, name, cmd, scope, state, destructive, read_only, description, source, created_at, updated_at)
		 VALUES (1, 'weather', '["/bin/weather"]', 'local', 'enabled', 1, 0, '', 'cli', '2026-12-01T09:00:00.000000000Z', '2026-12-01T11:00:00.000000000Z')`,
		`INSERT INTO tool_events (tool_id, at, actor, action) VALUES (1, '2026-12-01T09:00:00.000000000Z', 'cli', 'proposed')`,
		`INSERT INTO tool_events (tool_id, at, actor, action) VALUES (1, '2026-12-01T11:00:00.000000000Z', 'owner', 'enabled')`,
		`INSERT INTO tool_events (tool_id, at, actor, action) VALUES (1, '2026-12-01T12:00:00.000000000Z', 'voice', 'voice_ran')`,
		`INSERT INTO mcp_server_commands (server, digest, display, seen_at, approved_at, approved_by)
		 VALUES ('notes', 'sha256:1', 'notes-server', '2026-12-01T09:30:00.000000000Z', '2026-12-01T10:00:00.000000000Z', 'owner')`,
	} {
		if _, err := earlier.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	earlier.Close()

	bdb, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	feed := activity.New(db.NewActivityStore(bdb), nil)
	if err := feed.Append(ctx, activity.Event{At: time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC), Actor: "owner", Action: activity.ActionLocked}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for f := (activity.Filter{Limit: 2}); ; {
		page, err := feed.Query(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			got = append(got, e.At.Format("15:04")+" "+e.Action)
		}
		if page.Next == 0 {
			break
		}
		f.Before = page.Next
	}
	want := []string{"13:00 locked", "12:00 voice_turn", "11:00 enabled", "10:00 command_approved", "09:00 proposed"}
	if !slices.Equal(got, want) {
		t.Fatalf("the upgraded feed, newest first, page by page:\n%v\nwant\n%v", got, want)
	}
	changes, err := feed.Query(ctx, activity.Filter{Kind: activity.KindChanges})
	if err != nil || len(changes.Entries) != 3 || changes.Entries[0].Action != activity.ActionLocked {
		t.Fatalf("the changes: %+v, %v", changes.Entries, err)
	}
}

// migrationFS holds the migration files whose id is at most upTo (all of them for "").
func migrationFS(t *testing.T, upTo string) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	for _, name := range migrationFiles(t) {
		if upTo != "" && name[:len(upTo)] > upTo {
			continue
		}
		data, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = &fstest.MapFile{Data: data}
	}
	return out
}

// migratedTo opens the database at path with the migrations up to upTo applied, as a Maven of
// that time left it.
func migratedTo(t *testing.T, path, upTo string) *bun.DB {
	t.Helper()
	ctx := context.Background()
	sqldb, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	earlier := bun.NewDB(sqldb, sqlitedialect.New())
	migrations := migrate.NewMigrations()
	if err := migrations.Discover(migrationFS(t, upTo)); err != nil {
		t.Fatal(err)
	}
	m := migrate.NewMigrator(earlier, migrations, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return earlier
}

// migrationNames are the ids of the migrations of migrationFS, in order, each once.
func migrationNames(t *testing.T, upTo string) []string {
	t.Helper()
	var ids []string
	for name := range migrationFS(t, upTo).(fstest.MapFS) {
		id, _, _ := strings.Cut(name, "_")
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("two migrations share an id: %v", ids)
	}
	return ids
}

func migrationFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".up.sql") {
			names = append(names, e.Name())
		}
	}
	return names
}

// appliedNames are the ids bun recorded as applied, in order.
func appliedNames(t *testing.T, bdb *bun.DB) []string {
	t.Helper()
	var ids []string
	if err := bdb.NewSelect().Table("bun_migrations").Column("name").Order("name").Scan(context.Background(), &ids); err != nil {
		t.Fatal(err)
	}
	return ids
}
