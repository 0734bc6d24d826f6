package allowlist

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

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
