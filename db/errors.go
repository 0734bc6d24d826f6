package db

import (
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Conditions of the database as a whole, whatever the query. mapError wraps them around the
// driver's error, so a log line says what happened in words and errors.Is still finds the cause.
var (
	// ErrBusy means another connection held the write lock past the busy timeout.
	ErrBusy = errors.New("the database is busy")
	// ErrFull means the disk (or the file system's quota) is full.
	ErrFull = errors.New("the disk holding the database is full")
	// ErrReadOnly means the database file or its directory cannot be written.
	ErrReadOnly = errors.New("the database cannot be written (check the data directory's owner and permissions)")
	// ErrCorrupt means the file is damaged or not a SQLite database: restore a backup.
	ErrCorrupt = errors.New("the database file is damaged or is not a Maven database")
)

// Extended result codes of the constraint failures a caller can give a meaning to.
const (
	codeUnique     = sqlite3.SQLITE_CONSTRAINT_UNIQUE
	codePrimaryKey = sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	codeForeignKey = sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
)

// sqliteCode returns the SQLite extended result code err carries, or 0 if it carries none.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// mapError is the one place a SQLite error becomes an error of the app: meanings gives, for this
// statement, the app error an extended result code stands for (a UNIQUE violation on a passkey's
// credential ID is auth.ErrDuplicatePasskey), and that error is returned alone, as the caller's
// contract says. Conditions of the whole database (busy, full, read-only, damaged) are wrapped
// the same way everywhere. Anything else is returned unchanged; nil stays nil. Nothing matches an
// error's text.
func mapError(err error, meanings map[int]error) error {
	if err == nil {
		return nil
	}
	code := sqliteCode(err)
	if code == 0 {
		return err
	}
	if appErr, ok := meanings[code]; ok {
		return appErr
	}
	// The primary result code is the low byte of the extended one.
	switch code & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("%w: %w", ErrBusy, err)
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("%w: %w", ErrFull, err)
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}

// affectedOne turns an UPDATE or DELETE that touched no row into notFound, and maps a failed
// statement's error.
func affectedOne(res sql.Result, err error, notFound error) error {
	if err != nil {
		return mapError(err, nil)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound
	}
	return nil
}
