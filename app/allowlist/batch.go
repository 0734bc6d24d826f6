package allowlist

import (
	"context"
	"errors"
	"fmt"

	"maven/app/auth"
)

// Outcome is what a batch approval did with one of its items: Err is nil when the row was
// enabled; otherwise the row stayed as it was, and Err says why (a *ShapeChangedError when the
// far end redefined it since the owner's page showed it, ErrIllegalTransition when it is no
// longer in a state that can be enabled, ErrNotFound when it is gone).
type Outcome struct {
	Tool Tool // the row as it is after the batch (as it was when Err is not nil)
	ID   int64
	Err  error
}

// EnableTools enables, in one transaction, every row the proof approves (one step-up naming several
// rows and the fingerprint each showed, docs/design.md#rule-21). A row that is no longer the shape
// the owner was shown is refused for itself alone, as is one no longer in a state that can be
// enabled or one that is gone: the owner approved each item as shown, so the others are still
// exactly what they approved. The outcomes come in the proof's order. An error from the store rolls
// the whole batch back and is returned instead.
func (s *Service) EnableTools(ctx context.Context, proof auth.StepUp) ([]Outcome, error) {
	approval := proof.Approval()
	if approval.Action != auth.ActionEnableTool || len(approval.Items) == 0 {
		return nil, fmt.Errorf("enable tools: %w", auth.ErrStepUpRequired)
	}
	var out []Outcome
	err := s.Update(ctx, func(tx *Tx) error {
		out = make([]Outcome, 0, len(approval.Items))
		for _, it := range approval.Items {
			t, err := tx.Enable(ctx, it.Target, proof)
			if err != nil && !itemRefusal(err) {
				return err
			}
			if err != nil {
				// Report the row as it stands (a redefined one carries it, for its diff); a row
				// that is gone has none.
				if changed := new(ShapeChangedError); errors.As(err, &changed) {
					t = changed.Tool
				} else {
					t, _ = tx.st.GetTool(ctx, it.Target)
				}
			}
			out = append(out, Outcome{Tool: t, ID: it.Target, Err: err})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// itemRefusal reports an error of Tx.Enable that refuses one item and leaves the batch's
// transaction as it was: each is returned before anything is written.
func itemRefusal(err error) bool {
	return errors.Is(err, ErrShapeChanged) || errors.Is(err, ErrIllegalTransition) || errors.Is(err, ErrNotFound)
}
