package allowlist

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"maven/app/auth"
)

// Service applies the allowlist rules: the state machine, destructive only ever raised, and one
// audit event for every change, written in the same transaction as the change.
type Service struct {
	store Store
	now   func() time.Time
	// writing admits one Update at a time. SQLite lets one transaction write at a time anyway;
	// without it, a hundred servers discovered at once were a hundred connections (each with
	// its page cache) waiting for the write lock, and an owner's click waited among them.
	writing chan struct{}
	// version counts committed updates, so readers can cache what they derive from the rows
	// (the voice matcher) and rebuild only after a change.
	version atomic.Uint64
	// changes are the rows each recent update wrote (ChangedSince).
	changes changeLog
	// runnable holds the Runnable reads made at one version, and counts the whole allowlist's
	// counts; after any update neither is used.
	runnable runnableCache
	counts   countsCache
	// changed is closed after the next update and replaced (see Changed).
	changedMu sync.Mutex
	changed   chan struct{}
}

// NewService returns a Service over store. now is the clock (time.Now in the daemon).
func NewService(store Store, now func() time.Time) *Service {
	return &Service{store: store, now: now, writing: make(chan struct{}, 1)}
}

// Get returns one row, or ErrNotFound.
func (s *Service) Get(ctx context.Context, id int64) (Tool, error) {
	return s.store.GetTool(ctx, id)
}

// List returns the rows that match filter.
func (s *Service) List(ctx context.Context, filter Filter) ([]Tool, error) {
	return s.store.ListTools(ctx, filter)
}

// Events returns the audit trail of one row (all rows for 0), oldest first.
func (s *Service) Events(ctx context.Context, toolID int64) ([]Event, error) {
	return s.store.ListEvents(ctx, toolID)
}

// Update runs fn with a Tx in one database transaction: either every change fn made and its
// events are kept, or none. Updates run one at a time, in the order they came; one that waits
// returns ctx's error, unchanged, once ctx ends.
func (s *Service) Update(ctx context.Context, fn func(*Tx) error) error {
	select {
	case s.writing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writing }()
	tx := &Tx{now: s.now().UTC()}
	err := s.store.Update(ctx, func(st TxStore) error {
		tx.st = st
		return fn(tx)
	})
	s.recordUpdate(tx.written) // even after an error: a cache rebuilt for nothing costs little
	s.changedMu.Lock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.changedMu.Unlock()
	return err
}

// Version changes after every update; equal versions mean the rows have not changed.
func (s *Service) Version() uint64 { return s.version.Load() }

// Changed returns a channel that is closed once an update after this call has committed (or
// failed): what derives from the rows and must follow them within a moment (the tools agents
// see, docs/design.md#rule-27) waits on it, takes a new one, then reads the rows. Many updates
// may stand behind one close.
func (s *Service) Changed() <-chan struct{} {
	s.changedMu.Lock()
	defer s.changedMu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// ProposeTool proposes one row in its own transaction. See Tx.Propose.
func (s *Service) ProposeTool(ctx context.Context, p Proposal) (t Tool, created bool, err error) {
	err = s.Update(ctx, func(tx *Tx) error {
		t, created, err = tx.Propose(ctx, p)
		return err
	})
	return t, created, err
}

// EnableTool enables one row. proof must be a step-up for enabling this row, and the row must
// still be the shape the proof says the owner was shown (its ApprovalDigest), else a
// *ShapeChangedError and nothing changes.
func (s *Service) EnableTool(ctx context.Context, id int64, proof auth.StepUp) (t Tool, err error) {
	err = s.Update(ctx, func(tx *Tx) error {
		t, err = tx.Enable(ctx, id, proof)
		return err
	})
	return t, err
}

// DisableTool disables one row. Disabling only ever narrows what can run, so it needs no step-up.
func (s *Service) DisableTool(ctx context.Context, id int64, actor string) (t Tool, err error) {
	err = s.Update(ctx, func(tx *Tx) error {
		t, err = tx.Disable(ctx, id, actor)
		return err
	})
	return t, err
}
