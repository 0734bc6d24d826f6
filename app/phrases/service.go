package phrases

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
)

// ErrNotPhrasable means the row is not an enabled MCP tool with a fingerprint. Service.Save
// fails with it, *Error, ErrTooMany, auth.ErrStepUpRequired, allowlist.ErrNotFound and
// allowlist.ErrShapeChanged.
var ErrNotPhrasable = errors.New("only an enabled MCP tool takes phrases")

// Saved is what the owner last saved for one row.
type Saved struct {
	ToolID int64
	Lines  []string // one template each; none once the owner cleared them
	// Fingerprint is the row's fingerprint the phrases were saved for: a redefinition of the
	// tool voids them together with the approval.
	Fingerprint string
	SavedAt     time.Time
	SavedBy     string
}

// UsableFor reports whether the phrases apply to row as it is now: enabled, and the very shape
// they were saved for.
func (s Saved) UsableFor(row allowlist.Tool) bool {
	return len(s.Lines) > 0 && s.ToolID == row.ID && Takes(row) && s.Fingerprint == row.Fingerprint
}

// Takes reports whether row takes phrases: only an enabled MCP row with a fingerprint does.
func Takes(row allowlist.Tool) bool {
	return row.State == allowlist.StateEnabled && row.IsMCP() && row.Fingerprint != ""
}

// Store keeps the saved phrases. db implements it with bun on SQLite.
type Store interface {
	// Phrases returns the saved phrases of the rows with the given ids, or of every row when
	// ids is nil; rows that never had any are absent.
	Phrases(ctx context.Context, ids []int64) (map[int64]Saved, error)
	// SavePhrases replaces the phrases of s.ToolID and appends a "phrases_set" event to that
	// row's audit trail, in one transaction; allowlist.ErrNotFound if there is no such row.
	SavePhrases(ctx context.Context, s Saved) error
}

// Rows reads allowlist rows (allowlist.Service).
type Rows interface {
	// Get returns allowlist.ErrNotFound if no row has that id.
	Get(ctx context.Context, id int64) (allowlist.Tool, error)
}

// Service saves and reads the owner's phrases. It is safe for concurrent use.
type Service struct {
	store Store
	rows  Rows
	now   func() time.Time
	// version counts saves, so the voice service rebuilds its phrase index only after one.
	version atomic.Uint64
}

// NewService returns a Service; now is time.Now when nil.
func NewService(store Store, rows Rows, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, rows: rows, now: now}
}

// Version changes after every save.
func (s *Service) Version() uint64 { return s.version.Load() }

// Phrases returns the saved phrases of the rows with the given ids (every row when ids is
// nil). Whether they still apply is Saved.UsableFor.
func (s *Service) Phrases(ctx context.Context, ids []int64) (map[int64]Saved, error) {
	m, err := s.store.Phrases(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read phrases: %w", err)
	}
	return m, nil
}

// Save replaces the phrases of row id with those of text (one template a line; an empty text
// clears them). proof is a step-up for auth.ActionSetPhrases on id, and names the fingerprint
// the owner's page showed of the row. It fails with auth.ErrStepUpRequired,
// allowlist.ErrNotFound, ErrNotPhrasable, allowlist.ErrShapeChanged (the row is no longer the
// shape shown), ErrTooMany, or an *Error naming every line that cannot be used; then nothing is
// saved.
func (s *Service) Save(ctx context.Context, id int64, text string, proof auth.StepUp) (Saved, error) {
	row, err := s.rows.Get(ctx, id)
	if err != nil {
		return Saved{}, fmt.Errorf("save phrases of tool %d: %w", id, err)
	}
	shown, ok := proof.Shown(auth.ActionSetPhrases, row.ID)
	if !ok {
		return Saved{}, fmt.Errorf("save phrases of tool %d: %w", id, auth.ErrStepUpRequired)
	}
	lines, err := Check(row, shown, text)
	if err != nil {
		return Saved{}, fmt.Errorf("save phrases of tool %d: %w", id, err)
	}
	saved := Saved{ToolID: id, Lines: lines, Fingerprint: row.Fingerprint, SavedAt: s.now().UTC(), SavedBy: proof.Owner()}
	if err := s.store.SavePhrases(ctx, saved); err != nil {
		return Saved{}, fmt.Errorf("save phrases of tool %d: %w", id, err)
	}
	s.version.Add(1)
	return saved, nil
}

// Check is the one check saving text as row's phrases must pass, short of the step-up, and
// returns the lines to keep: the row is still the shape shown (the fingerprint the owner's page
// showed; a *allowlist.ShapeChangedError), it takes phrases (ErrNotPhrasable), and every line
// compiles against its schema (a *Error naming each bad line).
func Check(row allowlist.Tool, shown, text string) ([]string, error) {
	// A row changed since it was shown says how first: a redefinition also unenables it.
	if err := allowlist.CheckShown(row, shown); err != nil {
		return nil, err
	}
	if !Takes(row) {
		return nil, ErrNotPhrasable
	}
	schema, err := ReadSchema(row.InputSchema)
	if err != nil {
		return nil, err
	}
	lines, _, err := Compile(row.RemoteName(), schema, text)
	return lines, err
}
