package db_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/uptrace/bun"

	"maven/db"
)

// TestDatabaseFilesAreOwnerOnly checks the database, its write-ahead log and its shared-memory
// index are 0600 under the usual umask, and that Open tightens files an older Maven left 0644.
func TestDatabaseFilesAreOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "maven.db")
	check := func(when string) {
		t.Helper()
		for _, suffix := range []string{"", "-wal", "-shm"} {
			fi, err := os.Stat(path + suffix)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %s has mode %v, want 0600", when, filepath.Base(path+suffix), fi.Mode().Perm())
			}
		}
	}
	bdb, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bdb.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES ('k', 'v', '2026')`); err != nil {
		t.Fatal(err)
	}
	check("a new database")
	bdb.Close()

	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Chmod(path+suffix, 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	bdb, err = db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if _, err := bdb.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES ('k2', 'v', '2026')`); err != nil {
		t.Fatal(err)
	}
	check("a database left 0644")
}

func TestOpenRefusesANewerDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "maven.db")
	bdb, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	// What a later Maven's migration leaves behind.
	if _, err := bdb.ExecContext(ctx, `INSERT INTO bun_migrations (name, group_id, migrated_at)
		VALUES ('29991231000000', 99, CURRENT_TIMESTAMP)`); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	_, err = db.Open(ctx, path)
	if !errors.Is(err, db.ErrNewerSchema) || !strings.Contains(err.Error(), "migration 29991231000000") {
		t.Fatalf("Open of a newer database: %v", err)
	}
	t.Log(err)
}

// TestOpenSetsThePragmas: every pooled connection gets the pragmas Open asks for.
func TestOpenSetsThePragmas(t *testing.T) {
	ctx := context.Background()
	bdb := newDB(t)
	// Two connections held at once, so that the second is not the first one again.
	var conns []bun.Conn
	for range 2 {
		c, err := bdb.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	want := map[string]string{
		"busy_timeout": "5000", "journal_mode": "wal", "foreign_keys": "1",
		"synchronous": "1", "temp_store": "2", "wal_autocheckpoint": "24000", "cache_size": "-512",
	}
	for i, c := range conns {
		for pragma, value := range want {
			var got string
			if err := c.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil || got != value {
				t.Errorf("connection %d: PRAGMA %s = %q, %v; want %q", i, pragma, got, err, value)
			}
		}
	}
}

// TestADiscoverySizedBurstLeavesTheLogToTheUpkeep: ten transactions of about a thousand pages
// each, more than a discovery of 100 servers × 100 new tools writes, are all still in the
// write-ahead log after the last commit: no writer among them checkpointed it (SQLite's
// checkpoint inside a commit rewinds the log, and the next commit writes over it from the
// start), which is left to the upkeep once writes pause.
func TestADiscoverySizedBurstLeavesTheLogToTheUpkeep(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "maven.db")
	bdb, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	const transactions, pagesEach = 10, 1000
	for i := range transactions {
		if _, err := bdb.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, zeroblob(?), '2026')`,
			fmt.Sprint("burst", i), pagesEach*4096); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// A log file is a 32-byte header and frames of a 24-byte header and a 4,096-byte page.
	if frames := (fi.Size() - 32) / (24 + 4096); frames < transactions*pagesEach {
		t.Errorf("the log holds %d frames after %d transactions of %d pages: a writer checkpointed it", frames, transactions, pagesEach)
	}
}

// TestSearchIndexMergesAtRest: the search index keeps the merge settings its migration gave it
// (FTS5 stores them in the index's own config table): no merge inside a write until a level holds
// 128 segments, since the upkeep merges when writes pause.
func TestSearchIndexMergesAtRest(t *testing.T) {
	ctx := context.Background()
	bdb := newDB(t)
	for k, want := range map[string]int{"automerge": 0, "crisismerge": 128} {
		var v int
		if err := bdb.QueryRowContext(ctx, "SELECT v FROM tools_search_config WHERE k = ?", k).Scan(&v); err != nil || v != want {
			t.Errorf("%s = %d, %v; want %d", k, v, err, want)
		}
	}
}

// TestOpenAPathWithURIDelimiters: a '#', '?' or '%' in the path is part of the file's name, not
// the end of it: two such databases that differ only after it stay two databases, each at its
// own path.
func TestOpenAPathWithURIDelimiters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, name := range []string{"x#01", "x#02", "y?a=b", "z%41"} {
		path := filepath.Join(dir, name, "maven.db")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		bdb, err := db.Open(ctx, path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := bdb.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES ('k', ?, '2026')`, name); err != nil {
			t.Fatalf("%s: a second database at the same file? %v", name, err)
		}
		bdb.Close()
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s: the database is not at its path: %v", name, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("a database file outside its directory: %s", e.Name())
		}
	}
}

// newDB opens a fresh database in a temporary directory, closed when the test ends.
func newDB(tb testing.TB) *bun.DB {
	tb.Helper()
	bdb, err := db.Open(context.Background(), filepath.Join(tb.TempDir(), "maven.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { bdb.Close() })
	return bdb
}
