package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/uptrace/bun"

	"maven/app/allowlist"
	"maven/app/limits"
)

// limitsRow is the bun model of tool_limits.
type limitsRow struct {
	bun.BaseModel `bun:"table:tool_limits"`

	ToolID      int64          `bun:"tool_id,pk"`
	Limits      string         `bun:"limits"` // the set's canonical JSON
	Fingerprint string         `bun:"fingerprint"`
	SavedAt     string         `bun:"saved_at"`
	SavedBy     string         `bun:"saved_by"`
	VoidedAt    sql.NullString `bun:"voided_at"`
}

// LimitsStore keeps the owner's argument limits; it implements limits.Store.
type LimitsStore struct {
	db *bun.DB
}

// NewLimitsStore returns the limits store over db.
func NewLimitsStore(db *bun.DB) *LimitsStore { return &LimitsStore{db: db} }

// Limits implements limits.Store.
func (s *LimitsStore) Limits(ctx context.Context, ids []int64) (map[int64]limits.Saved, error) {
	var rows []limitsRow
	q := s.db.NewSelect().Model(&rows)
	if ids != nil {
		if len(ids) == 0 {
			return map[int64]limits.Saved{}, nil
		}
		q = q.Where("tool_id IN (?)", bun.List(ids))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list limits: %w", err)
	}
	out := make(map[int64]limits.Saved, len(rows))
	for _, r := range rows {
		var set limits.Set
		if err := json.Unmarshal([]byte(r.Limits), &set); err != nil {
			return nil, fmt.Errorf("limits of tool %d: %w", r.ToolID, err)
		}
		out[r.ToolID] = limits.Saved{ToolID: r.ToolID, Set: set, Fingerprint: r.Fingerprint, Void: r.VoidedAt.Valid,
			SavedAt: parseTime(r.SavedAt), SavedBy: r.SavedBy}
	}
	return out, nil
}

// SaveLimits implements limits.Store.
func (s *LimitsStore) SaveLimits(ctx context.Context, l limits.Saved) error {
	set, err := l.Set.Canonical()
	if err != nil {
		return err
	}
	detail, err := json.Marshal(map[string]any{"limits": json.RawMessage(set), "fingerprint": l.Fingerprint})
	if err != nil {
		return err
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := getTool(ctx, tx, l.ToolID); err != nil {
			return err
		}
		r := limitsRow{ToolID: l.ToolID, Limits: string(set), Fingerprint: l.Fingerprint,
			SavedAt: formatTime(l.SavedAt), SavedBy: l.SavedBy}
		if _, err := tx.NewInsert().Model(&r).On("CONFLICT (tool_id) DO UPDATE").
			Set("limits = EXCLUDED.limits, fingerprint = EXCLUDED.fingerprint, saved_at = EXCLUDED.saved_at, saved_by = EXCLUDED.saved_by, voided_at = NULL").
			Exec(ctx); err != nil {
			return fmt.Errorf("save limits of tool %d: %w", l.ToolID, err)
		}
		return toolTx{tx: tx}.AppendEvents(ctx, []allowlist.Event{{ToolID: l.ToolID, At: l.SavedAt, Actor: l.SavedBy,
			Action: "limits_set", Detail: detail}})
	})
}
