package db

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/uptrace/bun"

	"maven/app/allowlist"
	"maven/app/phrases"
)

// phrasesRow is the bun model of tool_phrases.
type phrasesRow struct {
	bun.BaseModel `bun:"table:tool_phrases"`

	ToolID      int64  `bun:"tool_id,pk"`
	Phrases     string `bun:"phrases"` // JSON list of strings
	Fingerprint string `bun:"fingerprint"`
	SavedAt     string `bun:"saved_at"`
	SavedBy     string `bun:"saved_by"`
}

// PhrasesStore keeps the owner's voice phrases; it implements phrases.Store.
type PhrasesStore struct {
	db *bun.DB
}

// NewPhrasesStore returns the phrases store over db.
func NewPhrasesStore(db *bun.DB) *PhrasesStore { return &PhrasesStore{db: db} }

// Phrases implements phrases.Store.
func (s *PhrasesStore) Phrases(ctx context.Context, ids []int64) (map[int64]phrases.Saved, error) {
	var rows []phrasesRow
	q := s.db.NewSelect().Model(&rows)
	if ids != nil {
		if len(ids) == 0 {
			return map[int64]phrases.Saved{}, nil
		}
		q = q.Where("tool_id IN (?)", bun.List(ids))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list phrases: %w", err)
	}
	out := make(map[int64]phrases.Saved, len(rows))
	for _, r := range rows {
		var lines []string
		if err := json.Unmarshal([]byte(r.Phrases), &lines); err != nil {
			return nil, fmt.Errorf("phrases of tool %d: %w", r.ToolID, err)
		}
		out[r.ToolID] = phrases.Saved{ToolID: r.ToolID, Lines: lines, Fingerprint: r.Fingerprint,
			SavedAt: parseTime(r.SavedAt), SavedBy: r.SavedBy}
	}
	return out, nil
}

// SavePhrases implements phrases.Store.
func (s *PhrasesStore) SavePhrases(ctx context.Context, p phrases.Saved) error {
	lines := p.Lines
	if lines == nil {
		lines = []string{}
	}
	list, err := json.Marshal(lines)
	if err != nil {
		return err
	}
	detail, err := json.Marshal(map[string]any{"phrases": lines, "fingerprint": p.Fingerprint})
	if err != nil {
		return err
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := getTool(ctx, tx, p.ToolID); err != nil {
			return err
		}
		r := phrasesRow{ToolID: p.ToolID, Phrases: string(list), Fingerprint: p.Fingerprint,
			SavedAt: formatTime(p.SavedAt), SavedBy: p.SavedBy}
		if _, err := tx.NewInsert().Model(&r).On("CONFLICT (tool_id) DO UPDATE").
			Set("phrases = EXCLUDED.phrases, fingerprint = EXCLUDED.fingerprint, saved_at = EXCLUDED.saved_at, saved_by = EXCLUDED.saved_by").
			Exec(ctx); err != nil {
			return fmt.Errorf("save phrases of tool %d: %w", p.ToolID, err)
		}
		return toolTx{tx: tx}.AppendEvents(ctx, []allowlist.Event{{ToolID: p.ToolID, At: p.SavedAt, Actor: p.SavedBy,
			Action: "phrases_set", Detail: detail}})
	})
}
