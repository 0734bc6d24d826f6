package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"maven/app/allowlist"
)

func (r eventRow) event() allowlist.Event {
	e := allowlist.Event{ID: r.ID, ToolID: r.ToolID, At: parseTime(r.At), Actor: r.Actor,
		Action: r.Action, Detail: json.RawMessage(r.Detail), Repeats: int(r.Repeats.Int64)}
	if r.LastRepeat.Valid {
		e.LastRepeat = parseTime(r.LastRepeat.String)
		e.LastRepeatDetail = json.RawMessage(r.LastDetail.String)
	}
	return e
}

// LastEvent implements allowlist.TxStore.
func (t toolTx) LastEvent(ctx context.Context, toolID int64) (allowlist.Event, error) {
	var r eventRow
	err := t.tx.NewSelect().Model(&r).Where("tool_id = ?", toolID).Order("id DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return allowlist.Event{}, allowlist.ErrNotFound
	}
	if err != nil {
		return allowlist.Event{}, fmt.Errorf("last event of tool %d: %w", toolID, err)
	}
	return r.event(), nil
}

// CountRepeat implements allowlist.TxStore.
func (t toolTx) CountRepeat(ctx context.Context, eventID int64, at time.Time, detail json.RawMessage) error {
	if len(detail) == 0 {
		detail = json.RawMessage("{}")
	}
	_, err := t.tx.NewRaw(`INSERT INTO tool_event_repeats (event_id, count, last_at, last_detail) VALUES (?, 1, ?, ?)
		ON CONFLICT (event_id) DO UPDATE SET count = count + 1, last_at = excluded.last_at, last_detail = excluded.last_detail`,
		eventID, formatTime(at), string(detail)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("count a repeat of event %d: %w", eventID, eventInsertError(err))
	}
	return nil
}
