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
	insertErr  error
}

// NewActivityStore returns the activity store over db.
func NewActivityStore(db *bun.DB) *ActivityStore { return &ActivityStore{db: db} }

// AppendActivity implements activity.Store. Every voice turn appends an entry, so the
// statement is prepared once instead of built and parsed each time.
func (s *ActivityStore) AppendActivity(ctx context.Context, entries []*activity.Entry) error {
	s.insertOnce.Do(func() {
		s.insert, s.insertErr = s.db.DB.PrepareContext(context.Background(),
			"INSERT INTO activity (at, actor, action, tool_id, tool, outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?)")
	})
	if s.insertErr != nil {
		return fmt.Errorf("prepare activity insert: %w", s.insertErr)
	}
	tx, err := s.db.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("insert activity: %w", err)
	}
	defer tx.Rollback()
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
// (outcome, at), (tool, at) and (action, at) for those filters.
func (s *ActivityStore) ListActivity(ctx context.Context, f activity.Filter) ([]activity.Entry, error) {
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
		q = q.Where("outcome = ?", f.Outcome)
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
