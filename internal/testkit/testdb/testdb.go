// Package testdb opens the real database of Maven's tests: SQLite in a file of the test's own
// temporary directory, through db.Open, so with its pragmas and every migration
// (docs/style.md#storage). Production code never imports it.
package testdb

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/uptrace/bun"

	"maven/db"
)

// Open opens a new database, maven.db in tb's temporary directory, with opts, and closes it
// when the test ends.
func Open(tb testing.TB, opts ...db.Option) *bun.DB {
	tb.Helper()
	bdb, err := db.Open(context.Background(), filepath.Join(tb.TempDir(), "maven.db"), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { bdb.Close() })
	return bdb
}
