package db_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/uptrace/bun"

	"maven/db"
)

// TestOpenSetsThePragmas: every pooled connection gets the pragmas Open asks for.
func TestOpenSetsThePragmas(t *testing.T) {
	ctx := context.Background()
	bdb, err := db.Open(ctx, filepath.Join(t.TempDir(), "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
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
		"synchronous": "1", "temp_store": "2", "wal_autocheckpoint": "8000",
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

// TestSearchIndexMergesAtSixteen: the search index keeps the automerge setting its migration gave
// it (FTS5 stores it in the index's own config table).
func TestSearchIndexMergesAtSixteen(t *testing.T) {
	ctx := context.Background()
	bdb, err := db.Open(ctx, filepath.Join(t.TempDir(), "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	var v int
	if err := bdb.QueryRowContext(ctx, "SELECT v FROM tools_search_config WHERE k = 'automerge'").Scan(&v); err != nil || v != 16 {
		t.Fatalf("automerge = %d, %v; want 16", v, err)
	}
}
