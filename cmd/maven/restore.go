package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"maven/app/ipc"
)

// sqliteHeader begins every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// cliRestore is `maven restore FILE`: it puts a backup in place of the database of a data
// directory no daemon runs on. The copy is written beside the database and renamed over it, so
// a crash leaves either database whole; the database it replaces is kept beside it, with its
// WAL, and the new one starts without the old one's WAL and shared memory, which belong to the
// other file.
func cliRestore(ctx context.Context, in *invocation, args []string) error {
	f, rest, _, err := in.parseClient("restore", args, false)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usagef("restore", "usage: maven restore FILE (a file 'maven backup' wrote; stop the daemon first)")
	}
	switch err := f.call(ctx, "status", nil, nil); {
	case err == nil:
		return fmt.Errorf("a daemon is running on %s: stop it first (systemctl stop maven, or end its 'maven serve'), then restore", f.dataDir)
	case !errors.Is(err, ipc.ErrNotRunning):
		return fmt.Errorf("cannot tell whether a daemon runs on %s, so nothing was restored: %w", f.dataDir, err)
	}
	kept, err := restoreDatabase(rest[0], f.dataDir, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(in.stdout, "restored %s to %s (mode 0600)\n", rest[0], filepath.Join(f.dataDir, "maven.db"))
	if kept != "" {
		fmt.Fprintf(in.stdout, "the database it replaced is kept as %s\n", kept)
	}
	fmt.Fprintln(in.stdout, "Start the daemon: it starts locked, and the passkeys and the recovery code of the backup's time unlock it.")
	return nil
}

// restoreDatabase copies the backup at src into dataDir as maven.db, and returns where the
// database it replaced now is ("" when there was none). dataDir is made 0700 and the database
// 0600.
func restoreDatabase(src, dataDir string, now time.Time) (kept string, err error) {
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	defer in.Close()
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(in, head); err != nil || !bytes.Equal(head, sqliteHeader) {
		return "", fmt.Errorf("restore: %s is not an SQLite database (a file 'maven backup' wrote)", src)
	}
	if _, err := in.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	tmp, err := os.CreateTemp(dataDir, ".maven.db.restore-*")
	if err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	_, err = io.Copy(tmp, in)
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("restore: write the copy: %w", err)
	}

	db := filepath.Join(dataDir, "maven.db")
	if _, err := os.Stat(db); err == nil {
		kept = filepath.Join(dataDir, "maven.db.replaced-"+now.UTC().Format("20060102T150405Z"))
		// A hard link keeps the old database whole until the rename below replaces the name.
		if err := os.Link(db, kept); err != nil {
			return "", fmt.Errorf("restore: keep the database it replaces: %w", err)
		}
	}
	if err := os.Rename(tmp.Name(), db); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	// The old database's WAL goes with it (SQLite pairs a database with the file of its name
	// and -wal); its shared memory is only a cache.
	if err := moveOrRemove(db+"-wal", kept, "-wal"); err != nil {
		return kept, err
	}
	if err := moveOrRemove(db+"-shm", "", ""); err != nil {
		return kept, err
	}
	return kept, syncDir(dataDir)
}

// moveOrRemove renames path to kept+suffix, or removes it when kept is "", if it exists.
func moveOrRemove(path, kept, suffix string) error {
	var err error
	if kept != "" {
		err = os.Rename(path, kept+suffix)
	} else {
		err = os.Remove(path)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("restore: sync %s: %w", dir, err)
	}
	return nil
}
