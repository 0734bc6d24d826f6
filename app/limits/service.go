package limits

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
)

// ErrNotLimitable means the row is not an enabled MCP tool with a fingerprint. Service.Save
// fails with it, *Error, auth.ErrStepUpRequired, allowlist.ErrNotFound and
// allowlist.ErrShapeChanged.
var ErrNotLimitable = errors.New("only an enabled MCP tool takes limits")

// Saved is what the owner last saved for one row.
type Saved struct {
	ToolID int64
	Set    Set
	// Fingerprint is the row's fingerprint the limits were saved for; Void is set once the
	// row was redefined after that (db sets it in the redefinition's transaction). Either way a
	// redefinition voids them with the approval.
	Fingerprint string
	Void        bool
	SavedAt     time.Time
	SavedBy     string
}

// InForce reports whether the limits apply to row as it is now: enabled, the very shape they
// were saved for, and not redefined since.
func (s Saved) InForce(row allowlist.Tool) bool {
	return !s.Void && !s.Set.Empty() && s.ToolID == row.ID && Takes(row) && s.Fingerprint == row.Fingerprint
}

// Takes reports whether row takes limits: only an enabled MCP row with a fingerprint does.
func Takes(row allowlist.Tool) bool {
	return row.State == allowlist.StateEnabled && row.IsMCP() && row.Fingerprint != ""
}

// Store keeps the saved limits. db implements it with bun on SQLite.
type Store interface {
	// Limits returns the saved limits of the rows with the given ids, or of every row when ids
	// is nil; rows that never had any are absent.
	Limits(ctx context.Context, ids []int64) (map[int64]Saved, error)
	// SaveLimits replaces the limits of s.ToolID (no longer void) and appends a "limits_set"
	// event to that row's audit trail, in one transaction; allowlist.ErrNotFound if there is
	// no such row.
	SaveLimits(ctx context.Context, s Saved) error
}

// Rows reads allowlist rows (allowlist.Service).
type Rows interface {
	// Get returns allowlist.ErrNotFound if no row has that id.
	Get(ctx context.Context, id int64) (allowlist.Tool, error)
	// Version changes after every update of the rows.
	Version() uint64
}

// Active is the limits in force on one row, ready to check calls.
type Active struct {
	Set Set
	// Canonical is the set's canonical JSON: two rows' limits are the same exactly when theirs are.
	Canonical string
	checker   *Checker
	err       error // the saved limits could not be compiled: every call is refused
}

// Check returns a *Violation naming the property and the limit a call's args are outside of.
func (a *Active) Check(args map[string]any) error {
	if a.err != nil {
		return a.err
	}
	return a.checker.Check(args)
}

// CheckProperty returns a *Violation if v, the value of property name, is outside its limit.
func (a *Active) CheckProperty(name string, v any) error {
	if a.err != nil {
		return a.err
	}
	return a.checker.CheckProperty(name, v)
}

// Fixed returns the value the owner fixed property name to, if they did.
func (a *Active) Fixed(name string) (any, bool) {
	if a.err != nil {
		return nil, false
	}
	return a.checker.Fixed(name)
}

// Service saves the owner's limits and checks calls against those in force. It is safe for
// concurrent use.
type Service struct {
	store Store
	rows  Rows
	now   func() time.Time
	// version counts saves; changed is closed after the next one (see Changed).
	version   atomic.Uint64
	changedMu sync.Mutex
	changed   chan struct{}
	// cache holds every row's saved limits, compiled, as read at a version of the limits and
	// of the rows: a redefinition voids limits in the rows' transaction.
	cacheMu sync.Mutex
	cache   *cached
}

type cached struct {
	version, rows uint64
	saved         map[int64]Saved
	active        map[int64]*Active
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

// Changed returns a channel closed once a save after this call has committed: what agents are
// shown follows the limits within a moment (docs/design.md#rule-27), as it follows the rows.
func (s *Service) Changed() <-chan struct{} {
	s.changedMu.Lock()
	defer s.changedMu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// Limits returns the saved limits of the rows with the given ids (every row when ids is nil),
// in force or not (Saved.InForce).
func (s *Service) Limits(ctx context.Context, ids []int64) (map[int64]Saved, error) {
	m, err := s.store.Limits(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read limits: %w", err)
	}
	return m, nil
}

// Prepare is the one check saving draft as row's limits must pass, short of the step-up, and
// returns the set to save: the row is still the shape its page showed (shown, its fingerprint;
// a *allowlist.ShapeChangedError), it takes limits (ErrNotLimitable), and every field reads and
// fits the schema (an *Error naming each property).
func Prepare(row allowlist.Tool, shown string, draft Draft) (Set, error) {
	schema, err := limitable(row, shown)
	if err != nil {
		return Set{}, err
	}
	return draft.Parse(schema)
}

// limitable returns row's schema if row is still the shape shown and takes limits.
func limitable(row allowlist.Tool, shown string) (Schema, error) {
	// A row changed since it was shown says how first: a redefinition also unenables it.
	if err := allowlist.CheckShown(row, shown); err != nil {
		return Schema{}, err
	}
	if !Takes(row) {
		return Schema{}, ErrNotLimitable
	}
	return ReadSchema(row.InputSchema)
}

// Save replaces the limits of row id with set (an empty set clears them). proof is a step-up
// for auth.ActionSetLimits on id naming Digest(shown, set): shown is the fingerprint the
// owner's page showed of the row. It fails with auth.ErrStepUpRequired (no such step-up, or
// one that approved other limits), allowlist.ErrNotFound, allowlist.ErrShapeChanged,
// ErrNotLimitable or an *Error; then nothing is saved.
func (s *Service) Save(ctx context.Context, id int64, shown string, set Set, proof auth.StepUp) (Saved, error) {
	row, err := s.rows.Get(ctx, id)
	if err != nil {
		return Saved{}, fmt.Errorf("save limits of tool %d: %w", id, err)
	}
	approved, ok := proof.Shown(auth.ActionSetLimits, row.ID)
	if !ok {
		return Saved{}, fmt.Errorf("save limits of tool %d: %w", id, auth.ErrStepUpRequired)
	}
	schema, err := limitable(row, shown)
	if err != nil {
		return Saved{}, fmt.Errorf("save limits of tool %d: %w", id, err)
	}
	if err := Validate(schema, set); err != nil {
		return Saved{}, fmt.Errorf("save limits of tool %d: %w", id, err)
	}
	want, err := Digest(row.Fingerprint, set)
	if err != nil {
		return Saved{}, err
	}
	if approved != want {
		return Saved{}, fmt.Errorf("save limits of tool %d: the step-up approved other limits: %w", id, auth.ErrStepUpRequired)
	}
	saved := Saved{ToolID: id, Set: set, Fingerprint: row.Fingerprint, SavedAt: s.now().UTC(), SavedBy: proof.Owner()}
	if err := s.store.SaveLimits(ctx, saved); err != nil {
		return Saved{}, fmt.Errorf("save limits of tool %d: %w", id, err)
	}
	s.version.Add(1)
	s.changedMu.Lock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.changedMu.Unlock()
	return saved, nil
}

// InForce returns the limits in force on each of rows, as the rows were read, by id; a row
// without any is absent.
func (s *Service) InForce(ctx context.Context, rows []allowlist.Tool) (map[int64]*Active, error) {
	c, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int64]*Active{}
	for _, row := range rows {
		if a := c.active[row.ID]; a != nil && c.saved[row.ID].InForce(row) {
			out[row.ID] = a
		}
	}
	return out, nil
}

// Check returns a *Violation (errors.Is ErrOutside) naming the property and the limit when args,
// a call's arguments to row, are outside the limits in force on it; nil when they are within
// them or it has none. It is the one check every front end makes before a call is sent or
// shown to the owner (docs/design.md#rule-33).
func (s *Service) Check(ctx context.Context, row allowlist.Tool, args map[string]any) error {
	in, err := s.InForce(ctx, []allowlist.Tool{row})
	if err != nil {
		return fmt.Errorf("check the limits of %s: %w", row.Name, err)
	}
	if a := in[row.ID]; a != nil {
		return a.Check(args)
	}
	return nil
}

// current returns every row's saved limits, compiled, read again only after a save or an
// update of the rows. A read that raced one is kept at the versions before it, which no later
// lookup matches.
func (s *Service) current(ctx context.Context) (*cached, error) {
	v, rv := s.version.Load(), s.rows.Version()
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if c := s.cache; c != nil && c.version == v && c.rows == rv {
		return c, nil
	}
	saved, err := s.store.Limits(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("read limits: %w", err)
	}
	c := &cached{version: v, rows: rv, saved: saved, active: make(map[int64]*Active, len(saved))}
	for id, sv := range saved {
		if sv.Void || sv.Set.Empty() {
			continue
		}
		canonical, err := sv.Set.Canonical()
		a := &Active{Set: sv.Set, Canonical: string(canonical), err: err}
		if err == nil {
			a.checker, a.err = Compile(sv.Set)
		}
		c.active[id] = a
	}
	s.cache = c
	return c, nil
}
