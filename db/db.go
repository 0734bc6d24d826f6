// Package db stores Maven's state in SQLite through bun and implements the store interfaces the
// app packages declare.
package db

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// walBackstopPages is the size of the write-ahead log, in pages, at which a committing writer
// checkpoints it itself (SQLite's wal_autocheckpoint).
const walBackstopPages = 24000

// cacheKiB is the page cache of each of the database's connections, in KiB (SQLite's
// cache_size).
const cacheKiB = 512

// Open opens (creating if needed) the SQLite database at path and applies every pending
// migration. The file, its write-ahead log and shared-memory index are readable by the owner
// only (0600). A database a newer Maven has migrated is refused (ErrNewerSchema), before anything
// is written to it. The pragmas run in this order on every pooled connection: busy_timeout first,
// so that switching to WAL waits instead of failing, then WAL, then foreign keys.
//
// The connections come from a driver of Open's own, so that what it adds to them (the search
// function, the options' hooks) reaches no other database in the process.
func Open(ctx context.Context, path string, opts ...Option) (*bun.DB, error) {
	if err := ownerOnly(path); err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// A statement that writes many rows keeps its rollback journal in memory, not in a
	// temporary file created and deleted for it.
	q.Add("_pragma", "temp_store(MEMORY)")
	// Each pooled connection keeps a page cache of its own, SQLite's default 2 MiB; the file is
	// in the kernel's page cache, which all of them share, so a page missing from a
	// connection's costs a read, not a disk access. With 512 KiB each the daemon holds 1.2 MiB
	// less after discovering 100 servers × 100 tools (three connections open), and the search
	// and the reconcile read the same (bench/README.md).
	q.Add("_pragma", "cache_size(-"+strconv.Itoa(cacheKiB)+")")
	// SQLite's own checkpoint, which runs inside the commit that crosses its threshold, stays
	// as the backstop of Upkeep, which checkpoints once writes pause (and within 5 s of a
	// commit under writes that never pause). The backstop sits above a burst of discovery
	// (100 servers × 100 new tools write about 9,400 pages), so that no discovery's writer
	// copies the log and syncs the file in the middle of it: 17% of that discovery's time at
	// 8,000 pages (issue 23). It still bounds the log at 24,000 pages, about 96 MB.
	q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(walBackstopPages)+")")
	// BEGIN IMMEDIATE takes the write lock up front, so two writers queue on busy_timeout
	// instead of failing when one upgrades a read transaction.
	q.Set("_txlock", "immediate")
	dsn, err := fileURI(path, q)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}

	drv, err := newDriver(opts)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	bdb := bun.NewDB(sql.OpenDB(connector{drv: drv, dsn: dsn}), sqlitedialect.New())
	if err := bdb.PingContext(ctx); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open database %s: %w", path, mapError(err, nil))
	}
	if err := Migrate(ctx, bdb); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	// SQLite creates the -wal and -shm files with the database's own mode; tighten any an
	// older Maven left readable by others.
	if err := ownerOnly(path); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return bdb, nil
}

// fileURI is SQLite's URI for the database file at path with the query q. SQLite
// percent-decodes a URI's path, and the driver cuts the DSN at its first '?': the path is
// escaped, so a '#', '?' or '%' in it names the file and does not end it. The path is made
// absolute, so that no first segment can read as an authority.
func fileURI(path string, q url.Values) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), OmitHost: true, RawQuery: q.Encode()}
	return u.String(), nil
}

// dbFileSuffixes are the files of one SQLite database in WAL mode.
var dbFileSuffixes = []string{"", "-wal", "-shm"}

// ownerOnly creates the database file with mode 0600 if it does not exist (SQLite would create
// it 0644, and the -wal and -shm files after it), and sets 0600 on the files that do.
func ownerOnly(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	for _, suffix := range dbFileSuffixes {
		err := os.Chmod(path+suffix, 0o600)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ErrNewerSchema means the database was migrated by a newer Maven than this binary: running on
// it could corrupt what the newer version wrote.
var ErrNewerSchema = errors.New("the database was migrated by a newer Maven")

// Migrate applies the embedded migrations that have not run yet.
func Migrate(ctx context.Context, bdb *bun.DB) error {
	migrations := migrate.NewMigrations()
	if err := migrations.Discover(migrationFiles); err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	m := migrate.NewMigrator(bdb, migrations, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("prepare migrations: %w", mapError(err, nil))
	}
	if err := refuseNewer(ctx, m, migrations); err != nil {
		return err
	}
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate database: %w", mapError(err, nil))
	}
	return nil
}

// refuseNewer returns ErrNewerSchema, naming the migrations, if the database has migrations
// applied that this binary does not ship.
func refuseNewer(ctx context.Context, m *migrate.Migrator, known *migrate.Migrations) error {
	applied, err := m.AppliedMigrations(ctx)
	if err != nil {
		return fmt.Errorf("read applied migrations: %w", mapError(err, nil))
	}
	ours := known.Sorted()
	var unknown []string
	for _, a := range applied {
		if !slices.ContainsFunc(ours, func(o migrate.Migration) bool { return o.Name == a.Name }) {
			unknown = append(unknown, a.Name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	latest := ""
	if len(ours) > 0 {
		latest = ours[len(ours)-1].Name + "_" + ours[len(ours)-1].Comment
	}
	return fmt.Errorf("%w: it has migration %s, and this binary knows none after %s; run that newer Maven, or restore a backup made by this version (the database was left unchanged)",
		ErrNewerSchema, strings.Join(unknown, ", "), latest)
}
