package allowlist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"maven/app/auth"
)

// Tx applies rule-checked changes inside one transaction (see Service.Update). Its methods are
// the only way to write rows and their events; what it reads for a caller (List, TakenNames) is
// methods of its own, so that it never hands out the store (TestOnlyTheAllowlistWrites).
type Tx struct {
	st  TxStore
	now time.Time
	// written are the ids of the rows the transaction wrote (Service.ChangedSince).
	written []int64
}

// List returns the rows that match filter, as the transaction sees them.
func (tx *Tx) List(ctx context.Context, filter Filter) ([]Tool, error) {
	return tx.st.ListTools(ctx, filter)
}

// TakenNames reports which of names a row holds, as the transaction sees them.
func (tx *Tx) TakenNames(ctx context.Context, names []string) (map[string]bool, error) {
	return tx.st.TakenNames(ctx, names)
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
	tx.written = append(tx.written, t.ID)
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
