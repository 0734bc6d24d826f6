package db

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestMapError drives real SQLite into each condition mapError knows and checks the app error
// each becomes, by result code alone.
func TestMapError(t *testing.T) {
	ctx := context.Background()
	bdb, err := Open(ctx, filepath.Join(t.TempDir(), "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	for _, q := range []string{
		`CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT UNIQUE)`,
		`CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent (id))`,
		`INSERT INTO parent (id, name) VALUES (1, 'one')`,
	} {
		if _, err := bdb.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	errDup, errGone := errors.New("duplicate"), errors.New("gone")
	meanings := map[int]error{codeUnique: errDup, codeForeignKey: errGone}

	_, err = bdb.ExecContext(ctx, `INSERT INTO parent (id, name) VALUES (2, 'one')`)
	if got := mapError(err, meanings); got != errDup {
		t.Errorf("UNIQUE violation (%v) mapped to %v", err, got)
	}
	_, err = bdb.ExecContext(ctx, `INSERT INTO child (parent_id) VALUES (7)`)
	if got := mapError(err, meanings); got != errGone {
		t.Errorf("FOREIGN KEY violation (%v) mapped to %v", err, got)
	}
	// A code the caller gave no meaning keeps the driver's error.
	_, err = bdb.ExecContext(ctx, `INSERT INTO parent (id, name) VALUES (1, 'two')`)
	if got := mapError(err, meanings); got != err || sqliteCode(err) != codePrimaryKey {
		t.Errorf("PRIMARY KEY violation (%v, code %d) mapped to %v", err, sqliteCode(err), got)
	}
	if mapError(nil, meanings) != nil {
		t.Error("nil mapped to an error")
	}
	plain := errors.New("not from sqlite")
	if mapError(plain, meanings) != plain {
		t.Error("an error without a SQLite code changed")
	}
}

func TestOpenRefusesAFileThatIsNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "maven.db")
	if err := os.WriteFile(path, []byte("this is a text file, not SQLite, and long enough to have a header....."), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a text file: %v, want ErrCorrupt", err)
	}
}
