package allowlist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	// version counts committed updates, so readers can cache what they derive from the rows
	// (the voice matcher) and rebuild only after a change.
	version atomic.Uint64
	// runnable holds the Runnable reads made at one version; after any update none is used.
	runnable runnableCache
	// changed is closed after the next update and replaced (see Changed).
	changedMu sync.Mutex
	changed   chan struct{}
}

// NewService returns a Service over store. now is the clock (time.Now in the daemon).
func NewService(store Store, now func() time.Time) *Service {
	return &Service{store: store, now: now}
}

// Get returns one row, or ErrNotFound.
func (s *Service) Get(ctx context.Context, id int64) (Tool, error) {
	return s.store.GetTool(ctx, id)
}

// List returns the rows that match filter.
func (s *Service) List(ctx context.Context, filter Filter) ([]Tool, error) {
	return s.store.ListTools(ctx, filter)
}

// CountByState counts the rows that match filter in each state.
func (s *Service) CountByState(ctx context.Context, filter Filter) (map[State]int, error) {
	return s.store.CountByState(ctx, filter)
}

// Events returns the audit trail of one row (all rows for 0), oldest first.
func (s *Service) Events(ctx context.Context, toolID int64) ([]Event, error) {
	return s.store.ListEvents(ctx, toolID)
}

// Update runs fn with a Tx in one database transaction: either every change fn made and its
// events are kept, or none.
func (s *Service) Update(ctx context.Context, fn func(*Tx) error) error {
	err := s.store.Update(ctx, func(st TxStore) error {
		return fn(&Tx{st: st, now: s.now().UTC()})
	})
	s.version.Add(1) // even after an error: a cache rebuilt for nothing costs little
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

// Withdraw withdraws one row with the reason recorded as its provenance.
func (s *Service) Withdraw(ctx context.Context, id int64, actor, reason string) (t Tool, err error) {
	err = s.Update(ctx, func(tx *Tx) error {
		t, err = tx.Withdraw(ctx, id, actor, reason)
		return err
	})
	return t, err
}

// Tx applies rule-checked changes inside one transaction (see Service.Update).
type Tx struct {
	st  TxStore
	now time.Time
}

// Store gives read access to the transaction's store.
func (tx *Tx) Store() TxStore { return tx.st }

// Propose creates a proposed row, or returns the row that already has this identity (scope, cmd:
// docs/design.md#rule-1). Proposing is idempotent: an existing proposed row is updated in place, a
// withdrawn one comes back as proposed, and an enabled or disabled one keeps its state (only its
// spoken name may change for a local command, and not while it is enabled: ErrInvalid). A name
// that belongs to another row is refused (ErrInvalid). destructive is only ever raised.
func (tx *Tx) Propose(ctx context.Context, p Proposal) (Tool, bool, error) {
	if err := validateProposal(p); err != nil {
		return Tool{}, false, err
	}
	if p.Scope == ScopeLocal {
		// A local command makes no promise not to write, so it is always destructive.
		p.Destructive, p.ReadOnly = true, false
	}
	existing, err := tx.st.FindByCmd(ctx, p.Scope, p.Cmd)
	if errors.Is(err, ErrNotFound) {
		if err := tx.checkNameFree(ctx, p.Name, 0); err != nil {
			return Tool{}, false, err
		}
		rows, err := tx.insertProposed(ctx, []Proposal{p})
		if err != nil {
			return Tool{}, false, err
		}
		return rows[0], true, nil
	}
	if err != nil {
		return Tool{}, false, fmt.Errorf("find tool %q: %w", p.Name, err)
	}

	t := existing
	switch t.State {
	case StateProposed, StateWithdrawn:
		t.State = StateProposed
		t.Destructive = t.Destructive || p.Destructive
		t.ReadOnly = p.ReadOnly
		t.Description, t.InputSchema = p.Description, schemaOrEmpty(p.InputSchema)
		t.Fingerprint, t.Declared, t.RenameOf = p.Fingerprint, p.Declared, p.RenameOf
		t.Provenance = p.Provenance
	}
	if t.Scope == ScopeLocal && p.Name != t.Name {
		if t.State == StateEnabled {
			// The owner's step-up approved this command under its name, which is what voice
			// answers to (docs/design.md#rule-2): renaming it is for the owner to approve too.
			return Tool{}, false, fmt.Errorf("%w: this command is already tool %d %q, enabled under that name; a proposal cannot rename an enabled tool. "+
				"Disable it on /tools, propose it again as %q, and enable it under the new name", ErrInvalid, t.ID, t.Name, p.Name)
		}
		t.Name = p.Name
	}
	if t.Name != existing.Name {
		if err := tx.checkNameFree(ctx, t.Name, t.ID); err != nil {
			return Tool{}, false, err
		}
	}
	if sameRow(t, existing) {
		return existing, false, nil
	}
	action := "updated"
	if existing.State == StateWithdrawn {
		action = "reproposed"
	}
	return t, false, tx.save(ctx, &t, existing, p.Actor, action, map[string]any{
		"provenance": p.Provenance, "rename_of": p.RenameOf,
	})
}

// ProposeNew proposes tools that have no row yet, as Propose does, but in a few statements for
// all of them instead of several each: a server's first listing may hold thousands. It fails,
// and the transaction with it, if a proposal is invalid, or if a row already has its identity
// (scope, cmd) or its name (ErrInvalid): the caller knows the rows are new.
func (tx *Tx) ProposeNew(ctx context.Context, ps []Proposal) ([]Tool, error) {
	for i := range ps {
		if err := validateProposal(ps[i]); err != nil {
			return nil, err
		}
		if ps[i].Scope == ScopeLocal {
			ps[i].Destructive, ps[i].ReadOnly = true, false
		}
	}
	return tx.insertProposed(ctx, ps)
}

// insertProposed stores each proposal as a new proposed row, with its event.
func (tx *Tx) insertProposed(ctx context.Context, ps []Proposal) ([]Tool, error) {
	rows := make([]Tool, len(ps))
	ptrs := make([]*Tool, len(ps))
	for i, p := range ps {
		rows[i] = Tool{
			Name: p.Name, Cmd: slices.Clone(p.Cmd), Scope: p.Scope, State: StateProposed,
			Destructive: p.Destructive, ReadOnly: p.ReadOnly, Description: p.Description,
			InputSchema: schemaOrEmpty(p.InputSchema), Fingerprint: p.Fingerprint, Declared: p.Declared,
			RenameOf: p.RenameOf, Source: p.Source, Provenance: p.Provenance,
			CreatedAt: tx.now, UpdatedAt: tx.now,
		}
		ptrs[i] = &rows[i]
	}
	if err := tx.st.InsertTools(ctx, ptrs); err != nil {
		if len(ps) == 1 {
			return nil, fmt.Errorf("insert tool %q: %w", ps[0].Name, err)
		}
		return nil, fmt.Errorf("insert %d tools: %w", len(ps), err)
	}
	events := make([]Event, len(ps))
	for i, p := range ps {
		e, err := newEvent(tx.now, rows[i].ID, p.Actor, "proposed", map[string]any{
			"state": StateProposed, "destructive": rows[i].Destructive, "provenance": p.Provenance,
			"rename_of": p.RenameOf,
		})
		if err != nil {
			return nil, err
		}
		events[i] = e
	}
	if err := tx.st.AppendEvents(ctx, events); err != nil {
		return nil, fmt.Errorf("append proposed events: %w", err)
	}
	return rows, nil
}

// Enable moves a proposed or disabled row to enabled. Only a step-up for enabling this very row,
// as the owner was shown it, can do it: a row redefined since is refused with a
// *ShapeChangedError.
func (tx *Tx) Enable(ctx context.Context, id int64, proof auth.StepUp) (Tool, error) {
	shown, ok := proof.Shown(auth.ActionEnableTool, id)
	if !ok {
		return Tool{}, fmt.Errorf("enable tool %d: %w", id, auth.ErrStepUpRequired)
	}
	t, err := tx.st.GetTool(ctx, id)
	if err != nil {
		return Tool{}, err
	}
	if err := CheckShown(t, shown); err != nil {
		return Tool{}, err
	}
	if err := checkTransition(t, StateEnabled); err != nil {
		return Tool{}, err
	}
	old := t
	t.State = StateEnabled
	at := tx.now
	t.EnabledAt, t.EnabledBy = &at, proof.Owner()
	return t, tx.save(ctx, &t, old, proof.Owner(), "enabled", nil)
}

// Disable moves a proposed or enabled row to disabled.
func (tx *Tx) Disable(ctx context.Context, id int64, actor string) (Tool, error) {
	t, err := tx.transition(ctx, id, StateDisabled)
	if err != nil {
		return Tool{}, err
	}
	old := t
	t.State = StateDisabled
	return t, tx.save(ctx, &t, old, actor, "disabled", nil)
}

// Withdraw moves any row that is not already withdrawn to withdrawn; reason becomes its
// provenance.
func (tx *Tx) Withdraw(ctx context.Context, id int64, actor, reason string) (Tool, error) {
	t, err := tx.transition(ctx, id, StateWithdrawn)
	if err != nil {
		return Tool{}, err
	}
	old := t
	t.State, t.Provenance = StateWithdrawn, reason
	return t, tx.save(ctx, &t, old, actor, "withdrawn", map[string]any{"reason": reason})
}

// actionRedefined is the audit action of Redeclare.
const actionRedefined = "redefined"

// Redeclaration is a new declared shape for an existing MCP row.
type Redeclaration struct {
	Fingerprint   string
	Declared      string
	Description   string
	InputSchema   json.RawMessage
	ReadOnly      bool
	ChangedFields []string
	Provenance    string
	// CoalesceSince, when set, lets a redefinition that changes nothing but the shape be counted as
	// a repeat of the row's previous redefinition instead of appending an event of its own: only if
	// that redefinition is the row's latest event and was recorded at or after CoalesceSince (issue
	// 10: a server redefining a tool without end must not grow the audit trail without end;
	// docs/design.md#rule-3). A redefinition that changes the row's state or raises destructive is
	// always an event.
	CoalesceSince time.Time
}

// Redeclare records that the far end now declares a different shape for a row
// (docs/design.md#rule-8). An enabled row goes back to proposed, keeping the shape the owner
// approved for a diff; a disabled row stays disabled and records the new shape; a proposed row is
// updated in place. If the tool stopped claiming read-only, destructive is raised; it is never
// lowered. The change is an event, or a repeat of the last one (see Redeclaration.CoalesceSince).
func (tx *Tx) Redeclare(ctx context.Context, id int64, r Redeclaration) (Tool, error) {
	t, err := tx.st.GetTool(ctx, id)
	if err != nil {
		return Tool{}, err
	}
	if t.State == StateWithdrawn {
		return Tool{}, fmt.Errorf("%w: tool %d is withdrawn; propose it again instead", ErrIllegalTransition, id)
	}
	old := t
	if t.State == StateEnabled || t.State == StateDisabled {
		t.PreviousDeclared = old.Declared
	}
	if t.State == StateEnabled {
		t.State = StateProposed
	}
	t.Destructive = t.Destructive || !r.ReadOnly
	t.ReadOnly = r.ReadOnly
	t.Fingerprint, t.Declared = r.Fingerprint, r.Declared
	t.Description, t.InputSchema = r.Description, schemaOrEmpty(r.InputSchema)
	t.ChangedFields, t.Provenance = slices.Clone(r.ChangedFields), r.Provenance
	// The previous shape is kept in the trail, so a page that showed it can show what changed.
	detail := map[string]any{
		"changed": r.ChangedFields, "fingerprint": r.Fingerprint, "previous_fingerprint": old.Fingerprint,
		"previous_declared": old.Declared, "destructive_raised": t.Destructive && !old.Destructive,
	}
	repeatOf, err := tx.repeatable(ctx, old, t, r.CoalesceSince)
	if err != nil {
		return Tool{}, err
	}
	if repeatOf == 0 {
		return t, tx.save(ctx, &t, old, "discovery", actionRedefined, detail)
	}
	if err := tx.write(ctx, &t, old); err != nil {
		return Tool{}, err
	}
	e, err := newEvent(tx.now, t.ID, "discovery", actionRedefined, detail)
	if err != nil {
		return Tool{}, err
	}
	if err := tx.st.CountRepeat(ctx, repeatOf, tx.now, e.Detail); err != nil {
		return Tool{}, fmt.Errorf("count a redefinition of tool %d: %w", t.ID, err)
	}
	return t, nil
}

// AdoptFingerprint gives a row that predates fingerprints its first one (docs/design.md#rule-9): an
// upgrade is not a redefinition, so the state does not change, but the adoption is an event.
func (tx *Tx) AdoptFingerprint(ctx context.Context, id int64, fingerprint, declared string) (Tool, error) {
	t, err := tx.st.GetTool(ctx, id)
	if err != nil {
		return Tool{}, err
	}
	if t.Fingerprint != "" {
		return Tool{}, fmt.Errorf("%w: tool %d already has a fingerprint", ErrIllegalTransition, id)
	}
	old := t
	t.Fingerprint, t.Declared = fingerprint, declared
	return t, tx.save(ctx, &t, old, "discovery", "fingerprint_adopted", map[string]any{"fingerprint": fingerprint})
}

// transition loads a row and checks that the owner-driven move to "to" is legal.
func (tx *Tx) transition(ctx context.Context, id int64, to State) (Tool, error) {
	t, err := tx.st.GetTool(ctx, id)
	if err != nil {
		return Tool{}, err
	}
	return t, checkTransition(t, to)
}

// checkTransition refuses moving t to the state to unless CanTransition allows it.
func checkTransition(t Tool, to State) error {
	if !CanTransition(t.State, to) {
		return fmt.Errorf("%w: %s → %s (tool %d)", ErrIllegalTransition, t.State, to, t.ID)
	}
	return nil
}

// CanTransition reports whether a row may move from one state to another by an explicit action
// (rule 2). enabled → proposed happens only through Redeclare, never by request.
func CanTransition(from, to State) bool {
	switch to {
	case StateEnabled:
		return from == StateProposed || from == StateDisabled
	case StateDisabled:
		return from == StateProposed || from == StateEnabled
	case StateWithdrawn:
		return from != StateWithdrawn
	case StateProposed:
		return from == StateWithdrawn
	}
	return false
}

// repeatable returns the id of the redefinition event that redefining old into t may be counted
// against, or 0 when it must be an event of its own: t changes more than the shape, or old's
// latest event is not a redefinition recorded since since (zero: never coalesce).
func (tx *Tx) repeatable(ctx context.Context, old, t Tool, since time.Time) (int64, error) {
	if since.IsZero() || t.State != old.State || t.Destructive != old.Destructive {
		return 0, nil
	}
	last, err := tx.st.LastEvent(ctx, old.ID)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if last.Action != actionRedefined || last.At.Before(since) {
		return 0, nil
	}
	return last.ID, nil
}

// save writes t and its event: every change of a row is appended to the audit trail, which is
// never rewritten (docs/design.md#rule-3).
func (tx *Tx) save(ctx context.Context, t *Tool, old Tool, actor, action string, detail map[string]any) error {
	if err := tx.write(ctx, t, old); err != nil {
		return err
	}
	if detail == nil {
		detail = map[string]any{}
	}
	if old.State != t.State {
		detail["from"], detail["to"] = old.State, t.State
	}
	if old.Name != t.Name {
		detail["old_name"], detail["name"] = old.Name, t.Name
	}
	return tx.event(ctx, t.ID, actor, action, detail)
}

// write stores t over old, stamped now. docs/design.md#rule-4 is checked here too, so no caller
// can lower destructive.
func (tx *Tx) write(ctx context.Context, t *Tool, old Tool) error {
	if old.Destructive && !t.Destructive {
		return fmt.Errorf("%w: destructive is never lowered (tool %d)", ErrIllegalTransition, t.ID)
	}
	t.UpdatedAt = tx.now
	if err := tx.st.UpdateTool(ctx, t); err != nil {
		return fmt.Errorf("update tool %d: %w", t.ID, err)
	}
	return nil
}

func (tx *Tx) event(ctx context.Context, toolID int64, actor, action string, detail map[string]any) error {
	e, err := newEvent(tx.now, toolID, actor, action, detail)
	if err != nil {
		return err
	}
	if err := tx.st.AppendEvents(ctx, []Event{e}); err != nil {
		return fmt.Errorf("append %s event for tool %d: %w", action, toolID, err)
	}
	return nil
}

// newEvent builds an audit event; empty detail values are left out.
func newEvent(at time.Time, toolID int64, actor, action string, detail map[string]any) (Event, error) {
	for k, v := range detail {
		if v == "" || v == nil {
			delete(detail, k)
		}
	}
	if detail == nil {
		detail = map[string]any{}
	}
	b, err := json.Marshal(detail)
	if err != nil {
		return Event{}, fmt.Errorf("encode event detail: %w", err)
	}
	if actor == "" {
		actor = "system"
	}
	return Event{ToolID: toolID, At: at, Actor: actor, Action: action, Detail: b}, nil
}

func (tx *Tx) checkNameFree(ctx context.Context, name string, self int64) error {
	other, err := tx.st.FindByName(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find tool named %q: %w", name, err)
	}
	if other.ID == self {
		return nil
	}
	return fmt.Errorf("%w: the name %q already belongs to another tool (id %d, %s, %s)", ErrInvalid, name, other.ID, other.Scope, other.State)
}
