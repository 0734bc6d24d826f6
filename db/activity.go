package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/uptrace/bun"

	"maven/app/activity"
)

// activityRow is the bun model of the append-only activity table.
type activityRow struct {
	bun.BaseModel `bun:"table:activity"`

	ID      int64         `bun:"id,pk,autoincrement"`
	At      string        `bun:"at"`
	Actor   string        `bun:"actor"`
	Action  string        `bun:"action"`
	ToolID  sql.NullInt64 `bun:"tool_id"`
	Tool    string        `bun:"tool"`
	Outcome string        `bun:"outcome"`
	Detail  string        `bun:"detail"`
}

// ActivityStore keeps the activity feed; it implements activity.Store.
type ActivityStore struct {
	db *bun.DB

	insertOnce sync.Once
	insert     *sql.Stmt
	pending    *sql.Stmt // pendingEventsSQL
	insertErr  error
}

// NewActivityStore returns the activity store over db.
func NewActivityStore(db *bun.DB) *ActivityStore { return &ActivityStore{db: db} }

// AppendActivity implements activity.Store. Every voice turn appends an entry, so its
// statements are prepared once instead of built and parsed each time. The tool events not in the
// feed yet are copied first, in the same transaction, so that the feed's ids stay in the order
// things committed, as when a trigger copied each event (entries of one time read in id order).
func (s *ActivityStore) AppendActivity(ctx context.Context, entries []*activity.Entry) error {
	s.insertOnce.Do(func() {
		s.insert, s.insertErr = s.db.DB.PrepareContext(context.Background(),
			"INSERT INTO activity (at, actor, action, tool_id, tool, outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?)")
		if s.insertErr == nil {
			s.pending, s.insertErr = s.db.DB.PrepareContext(context.Background(), pendingEventsSQL)
		}
	})
	if s.insertErr != nil {
		return fmt.Errorf("prepare activity insert: %w", s.insertErr)
	}
	tx, err := s.db.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("insert activity: %w", err)
	}
	defer tx.Rollback()
	if _, err := copyPendingIn(ctx, tx, tx.StmtContext(ctx, s.pending).QueryRowContext(ctx), -1); err != nil {
		return err
	}
	insert := tx.StmtContext(ctx, s.insert)
	for _, e := range entries {
		toolID := sql.NullInt64{Int64: e.ToolID, Valid: e.ToolID != 0}
		detail := string(e.Detail)
		if detail == "" {
			detail = "{}"
		}
		res, err := insert.ExecContext(ctx, formatTime(e.At), e.Actor, e.Action, toolID, e.Tool, e.Outcome, detail)
		if err != nil {
			return fmt.Errorf("insert activity: %w", err)
		}
		if e.ID, err = res.LastInsertId(); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("insert activity: %w", err)
	}
	return nil
}

// ListActivity implements activity.Store. The feed reads by time, then id: an upgrade copied
// the earlier row events and command-line approvals into it in two blocks
// (20261213090100_activity), so their ids are not in the order they happened. Every filter is
// served by an index in that order: at (with the rowid every index holds) for paging and a day,
// (outcome, at) of the entries with an outcome, (tool, at) and (action, at) for those filters.
//
// It first copies into the feed the tool events that are not in it yet (copyPendingEvents), so
// that it never misses one that has committed (docs/design.md#rule-3).
func (s *ActivityStore) ListActivity(ctx context.Context, f activity.Filter) ([]activity.Entry, error) {
	if err := copyPendingEvents(ctx, s.db); err != nil {
		return nil, err
	}
	var rows []activityRow
	q := s.db.NewSelect().Model(&rows).OrderExpr("at DESC, id DESC").Limit(int64(f.Limit))
	if f.Before > 0 {
		q = q.Where("(at, id) < (SELECT at, id FROM activity WHERE id = ?)", f.Before)
	}
	if !f.Since.IsZero() {
		q = q.Where("at >= ?", formatTime(f.Since))
	}
	if !f.Until.IsZero() {
		q = q.Where("at < ?", formatTime(f.Until))
	}
	if f.Outcome != "" {
		// The index on (outcome, at) holds only the entries with an outcome.
		q = q.Where("outcome = ? AND outcome != ''", f.Outcome)
	}
	if f.Tool != "" {
		q = q.Where("tool = ?", f.Tool)
	}
	if f.Action != "" {
		q = q.Where("action = ?", f.Action)
	}
	if actions, except := f.Kind.Actions(); except {
		q = q.Where("action NOT IN (?)", bun.List(actions))
	} else if actions != nil {
		q = q.Where("action IN (?)", bun.List(actions))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list activity: %w", err)
	}
	out := make([]activity.Entry, len(rows))
	for i, r := range rows {
		out[i] = activity.Entry{ID: r.ID, At: parseTime(r.At), Actor: r.Actor, Action: r.Action,
			ToolID: r.ToolID.Int64, Tool: r.Tool, Outcome: r.Outcome, Detail: json.RawMessage(r.Detail)}
	}
	return out, nil
}

// feedStepEvents bounds the tool events one step copies into the feed, and so what a writer
// may wait for.
const feedStepEvents = 2000

// pendingEventsSQL reads the highest tool event in the feed and the highest appended: those
// between are still to copy. Both are the last entry of an index.
const pendingEventsSQL = "SELECT (SELECT COALESCE(max(event_id), 0) FROM activity), (SELECT COALESCE(max(id), 0) FROM tool_events)"

// copyPendingEvents copies into the feed every tool event not in it yet, feedStepEvents a
// transaction. Nothing pending (the usual case for a read) takes no write lock.
func copyPendingEvents(ctx context.Context, db bun.IDB) error {
	var through, last int64
	if err := db.QueryRowContext(ctx, pendingEventsSQL).Scan(&through, &last); err != nil {
		return fmt.Errorf("copy tool events into the feed: %w", err)
	}
	for pending := last > through; pending; {
		var err error
		if pending, err = feedStep(ctx, db); err != nil {
			return err
		}
	}
	return nil
}

// feedStep copies into the feed, in one transaction, up to feedStepEvents of the tool events
// not in it yet, and reports whether there were any. The transaction holds the write lock from
// its start (BEGIN IMMEDIATE, Open), so two copies never read the same watermark.
func feedStep(ctx context.Context, db bun.IDB) (bool, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("copy tool events into the feed: %w", mapError(err, nil))
	}
	defer tx.Rollback()
	copied, err := copyPendingIn(ctx, tx, tx.QueryRowContext(ctx, pendingEventsSQL), feedStepEvents)
	if err != nil || !copied {
		return false, err // nothing new: the transaction wrote nothing
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("copy tool events into the feed: %w", mapError(err, nil))
	}
	return true, nil
}

// copyPendingIn copies into the feed, in tx (which holds the write lock), up to limit (-1: all)
// of the tool events after the highest event_id it holds, in id order, as migration
// 20261227090000 maps them. pending is tx's answer to pendingEventsSQL; it reports whether
// there were any to copy.
func copyPendingIn(ctx context.Context, tx bun.IConn, pending *sql.Row, limit int) (bool, error) {
	var through, last int64
	if err := pending.Scan(&through, &last); err != nil {
		return false, fmt.Errorf("copy tool events into the feed: %w", err)
	}
	if last <= through {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO activity (at, actor, action, tool_id, tool, outcome, detail, event_id) "+
		"SELECT at, actor, action, tool_id, tool, outcome, detail, event_id FROM tool_events_as_activity "+
		"WHERE event_id > ? ORDER BY event_id LIMIT ?", through, limit); err != nil {
		return false, fmt.Errorf("copy tool events into the feed: %w", mapError(err, nil))
	}
	return true, nil
}
