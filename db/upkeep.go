package db

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/uptrace/bun"
)

// Upkeep does the database's upkeep off the writers' path (docs/style.md#storage): once writes
// pause, it copies the tool events appended since its last round into the activity feed, adds
// the rows inserted since to the search index, merges the index's segments and copies the
// write-ahead log into the database file.
//
// SQLite's automatic checkpoint runs inside the commit that crosses its threshold, and FTS5
// merges segments inside the write that adds one: either way one writer (a server's discovery,
// the owner's click) waits for work that all of them made. A passive checkpoint takes no lock a
// reader or a writer waits for. A merge is a write, so it waits for a pause (or, under writes
// that never pause, a few seconds at most) and goes in small steps between which writers get in.
// Both wait for the same pause: a browsing owner's session commits on every page, and a
// checkpoint for each would sync the disk on every request.
// Both automatic forms stay as backstops: SQLite checkpoints at 24,000 pages (Open), FTS5 merges a
// level of 128 segments (crisismerge).
type Upkeep struct {
	kick chan struct{}
	log  *slog.Logger
}

const (
	// upkeepPause is how long no transaction may commit before a round of upkeep, and
	// upkeepLatest how long a round waits at most for such a pause once a commit came.
	upkeepPause  = 250 * time.Millisecond
	upkeepLatest = 5 * time.Second
	// mergeStepPages bounds one merge step, and so what a writer may wait for.
	mergeStepPages = 64
)

// NewUpkeep returns an Upkeep: give its Committed to Open as OnCommit, then Run it.
func NewUpkeep(log *slog.Logger) *Upkeep {
	return &Upkeep{kick: make(chan struct{}, 1), log: log}
}

// Committed tells the upkeep that a transaction is committing. It never blocks: commits that
// come while the upkeep works make one more round.
func (u *Upkeep) Committed() {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

// Run does the upkeep of bdb until ctx ends: a round of merging the search index, then a
// checkpoint, once no commit has come for upkeepPause, or upkeepLatest after the first commit
// since the last round.
func (u *Upkeep) Run(ctx context.Context, bdb *bun.DB) {
	// Merge first whatever an earlier run left unmerged.
	pause := time.NewTimer(upkeepPause)
	defer pause.Stop()
	latest := time.NewTimer(upkeepLatest)
	latest.Stop()
	defer latest.Stop()
	waiting := false // a commit came since the last merge
	for {
		select {
		case <-ctx.Done():
			return
		case <-u.kick:
			pause.Reset(upkeepPause)
			if !waiting {
				waiting = true
				latest.Reset(upkeepLatest)
			}
			continue
		case <-pause.C:
		case <-latest.C:
		}
		pause.Stop()
		latest.Stop()
		waiting = false
		others, err := u.merge(ctx, bdb)
		u.report(ctx, err)
		u.report(ctx, checkpoint(ctx, bdb))
		if !others {
			// Nobody else wrote while it merged: the commit waiting to be seen was the merge's
			// own. (A writer's that lands just now is caught up with at its next commit.)
			select {
			case <-u.kick:
			default:
			}
		}
	}
}

// report logs err, unless the upkeep is being stopped (which cuts its statements short).
func (u *Upkeep) report(ctx context.Context, err error) {
	if err != nil && ctx.Err() == nil {
		u.log.Warn("database upkeep", "err", err)
	}
}

// merge copies the pending tool events into the feed, indexes the new rows and merges the
// search index, a step at a time on a connection of its own, each step its own transaction,
// until nothing is left to do, and reports whether another connection committed
// meanwhile (PRAGMA data_version moves for a connection when another one commits, never for its
// own commits).
func (u *Upkeep) merge(ctx context.Context, bdb *bun.DB) (others bool, err error) {
	conn, err := bdb.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("merge the search index: %w", err)
	}
	defer conn.Close()
	version := func() (v int64, err error) {
		err = conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v)
		return v, err
	}
	start, err := version()
	if err != nil {
		return false, fmt.Errorf("merge the search index: %w", err)
	}
	// The events a discovery appended go into the feed (a read of the feed that comes first
	// copies them itself: ActivityStore.ListActivity).
	if err := copyPendingEvents(ctx, conn); err != nil {
		return false, err
	}
	for {
		indexed, err := indexStep(ctx, conn)
		if err != nil {
			return false, err
		}
		if !indexed {
			break
		}
	}
	for {
		merged, err := mergeStep(ctx, conn)
		if err != nil {
			return false, err
		}
		if !merged {
			break
		}
	}
	end, err := version()
	if err != nil {
		return false, fmt.Errorf("merge the search index: %w", err)
	}
	return end != start, nil
}

// indexStepRows bounds the rows one step of indexing adds to the search index, and so what a
// writer may wait for; each step is one segment of the index.
const indexStepRows = 2000

// indexStep adds to the search index, in one transaction, up to indexStepRows of the rows not in
// it yet, those after tools_search_through, and moves that on past them. It reports whether
// there were any. The transaction holds the write lock, so no row changes between being read
// and being indexed.
func indexStep(ctx context.Context, conn bun.Conn) (bool, error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("index new rows: %w", mapError(err, nil))
	}
	defer tx.Rollback()
	var through int64
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT id FROM tools_search_through").Scan(&through); err != nil {
		return false, fmt.Errorf("index new rows: %w", err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT max(id) FROM (SELECT id FROM tools WHERE id > ? ORDER BY id LIMIT ?)",
		through, indexStepRows).Scan(&last); err != nil {
		return false, fmt.Errorf("index new rows: %w", err)
	}
	if !last.Valid {
		return false, nil // nothing new: the transaction wrote nothing
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO tools_search (rowid, name, scope, cmd, description) "+
		"SELECT id, name, scope, cmd, description FROM tools WHERE id > ? AND id <= ?", through, last.Int64); err != nil {
		return false, fmt.Errorf("index new rows: %w", mapError(err, nil))
	}
	if _, err := tx.ExecContext(ctx, "UPDATE tools_search_through SET id = ?", last.Int64); err != nil {
		return false, fmt.Errorf("index new rows: %w", mapError(err, nil))
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("index new rows: %w", mapError(err, nil))
	}
	return true, nil
}

// mergeStep writes up to mergeStepPages pages of merged index segments, and reports whether
// there were any to merge: FTS5 documents that a merge that did work moves total_changes() by
// two or more.
func mergeStep(ctx context.Context, conn bun.Conn) (bool, error) {
	var before, after int64
	if err := conn.QueryRowContext(ctx, "SELECT total_changes()").Scan(&before); err != nil {
		return false, fmt.Errorf("merge the search index: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO tools_search (tools_search, rank) VALUES ('merge', ?)", mergeStepPages); err != nil {
		return false, fmt.Errorf("merge the search index: %w", mapError(err, nil))
	}
	if err := conn.QueryRowContext(ctx, "SELECT total_changes()").Scan(&after); err != nil {
		return false, fmt.Errorf("merge the search index: %w", err)
	}
	return after-before >= 2, nil
}

// checkpoint copies as much of the log as no reader still needs, without waiting for a lock.
func checkpoint(ctx context.Context, bdb *bun.DB) error {
	if _, err := bdb.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		return fmt.Errorf("checkpoint: %w", mapError(err, nil))
	}
	return nil
}
