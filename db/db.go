// Package db stores Maven's state in SQLite through bun and implements the store interfaces the
// app packages declare.
package db

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"net/url"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Open opens (creating if needed) the SQLite database at path and applies every pending
// migration. The pragmas run in this order on every pooled connection: busy_timeout first, so
// that switching to WAL waits instead of failing, then WAL, then foreign keys.
func Open(ctx context.Context, path string) (*bun.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// A statement that writes many rows keeps its rollback journal in memory, not in a
	// temporary file created and deleted for it.
	q.Add("_pragma", "temp_store(MEMORY)")
	// Checkpoint every 8000 pages (about 32 MB of WAL), not 1000: a discovery of many servers
	// rewrites the same index pages in transaction after transaction, and a checkpoint copies
	// each page once however often it was written since the last.
	q.Add("_pragma", "wal_autocheckpoint(8000)")
	// BEGIN IMMEDIATE takes the write lock up front, so two writers queue on busy_timeout
	// instead of failing when one upgrades a read transaction.
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Opaque: path, RawQuery: q.Encode()}).String()

	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	bdb := bun.NewDB(sqldb, sqlitedialect.New())
	if err := bdb.PingContext(ctx); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if err := Migrate(ctx, bdb); err != nil {
		bdb.Close()
		return nil, err
	}
	return bdb, nil
}

// Migrate applies the embedded migrations that have not run yet.
func Migrate(ctx context.Context, bdb *bun.DB) error {
	migrations := migrate.NewMigrations()
	if err := migrations.Discover(migrationFiles); err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	m := migrate.NewMigrator(bdb, migrations, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("prepare migrations: %w", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate database: %w", err)
	}
	return nil
}
