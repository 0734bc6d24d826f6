package db

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/uptrace/bun"
)

// Upkeep does the database's upkeep off the writers' path (docs/style.md#storage): it copies the
// write-ahead log into the database file after commits, and merges the search index's segments
// once writes pause.
//
// SQLite's automatic checkpoint runs inside the commit that crosses its threshold, and FTS5
// merges segments inside the write that adds one: either way one writer (a server's discovery,
// the owner's click) waits for work that all of them made. A passive checkpoint takes no lock a
// reader or a writer waits for. A merge is a write, so it waits for a pause and goes in small
// steps, and stops at the next writer. Both automatic forms stay as backstops: SQLite
// checkpoints at 8000 pages (Open), FTS5 merges a level of 128 segments (crisismerge).
type Upkeep struct {
	kick  chan struct{}
	pause time.Duration
	log   *slog.Logger
}

const (
	// mergePause is how long no transaction may commit before the index is merged.
	mergePause = 250 * time.Millisecond
	// mergeStepPages bounds one merge step, and so what a writer may wait for.
	mergeStepPages = 64
)

// NewUpkeep returns an Upkeep: give its Committed to Open as OnCommit, then Run it.
func NewUpkeep(log *slog.Logger) *Upkeep {
	return &Upkeep{kick: make(chan struct{}, 1), pause: mergePause, log: log}
}

// Committed tells the upkeep that a transaction is committing. It never blocks: commits that
// come while the upkeep works make one more round.
func (u *Upkeep) Committed() {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

// Run does the upkeep of bdb until ctx ends: a checkpoint after commits, and merges of the search
// index once no commit has come for mergePause. A commit's own pages may land just after the
// checkpoint it asked for; they are copied at the next round, or when bdb closes.
func (u *Upkeep) Run(ctx context.Context, bdb *bun.DB) {
	// Merge first whatever an earlier run left unmerged.
	pause := time.NewTimer(u.pause)
	defer pause.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-u.kick:
			u.report(checkpoint(ctx, bdb))
			pause.Reset(u.pause)
		case <-pause.C:
			others, err := u.merge(ctx, bdb)
			u.report(err)
			u.report(checkpoint(ctx, bdb))
			if others {
				pause.Reset(u.pause)
				continue
			}
			// Nobody else wrote while it merged: the commit waiting to be seen was the merge's own.
			// (A writer's that lands just now is caught up with at the next round.)
			select {
			case <-u.kick:
			default:
			}
		}
	}
}

func (u *Upkeep) report(err error) {
	if err != nil {
		u.log.Warn("database upkeep", "err", err)
	}
}

// merge merges the search index a step at a time on a connection of its own, until nothing is
// left to merge or another connection commits, and reports whether one did (a writer came, and
// the merge is to be taken up again at the next pause). PRAGMA data_version moves for a
// connection when another one commits, never for its own commits.
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
	for {
		merged, err := mergeStep(ctx, conn)
		if err != nil {
			return false, err
		}
		now, err := version()
		if err != nil {
			return false, fmt.Errorf("merge the search index: %w", err)
		}
		if now != start {
			return true, nil
		}
		if !merged {
			return false, nil
		}
	}
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
	if _, err := bdb.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil && ctx.Err() == nil {
		return fmt.Errorf("checkpoint: %w", mapError(err, nil))
	}
	return nil
}
