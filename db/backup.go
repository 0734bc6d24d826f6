package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/uptrace/bun"
)

// ErrBackupExists means the backup's file is there already: a backup never overwrites.
var ErrBackupExists = errors.New("the file exists; a backup never overwrites one")

// Backup writes a consistent copy of the database to path while it is in use: SQLite's VACUUM
// INTO reads one snapshot in a read transaction, so writers go on and the copy holds each of
// their transactions whole or not at all. The file is created 0600 (it holds the sealed
// secrets, the passkeys and the audit trail), must not exist, and is synced to disk before
// Backup returns. It returns the copy's size.
func Backup(ctx context.Context, bdb *bun.DB, path string) (int64, error) {
	if !filepath.IsAbs(path) {
		return 0, fmt.Errorf("backup to %s: the path must be absolute", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return 0, fmt.Errorf("backup to %s: %w", path, ErrBackupExists)
	}
	if err != nil {
		return 0, fmt.Errorf("backup to %s: %w", path, err)
	}
	f.Close()
	// VACUUM INTO fills a file that exists only if it is empty, as this one is.
	if _, err := bdb.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		os.Remove(path)
		return 0, fmt.Errorf("backup to %s: %w", path, mapError(err, nil))
	}
	size, err := syncFile(path)
	if err != nil {
		os.Remove(path)
		return 0, fmt.Errorf("backup to %s: %w", path, err)
	}
	return size, nil
}

// syncFile flushes path to disk and returns its size.
func syncFile(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
