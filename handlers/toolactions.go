package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/views"
)

// toolAsShown answers an Enable whose row no longer has the shape its page showed (the form's
// fingerprint) with the row as it is now and what changed, before the passkey is asked for.
// EnableTool checks again, in its transaction: this only spares the owner a gesture.
func (s *server) toolAsShown(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		t, shown, err := s.shownRow(w, r, maxJSONBody)
		if err != nil {
			return err
		}
		var changed *allowlist.ShapeChangedError
		if err := allowlist.CheckShown(t, shown); errors.As(err, &changed) {
			return s.toolChangedSinceShown(w, r, changed)
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// shownRow reads an action on the route's row as the owner's page showed it: the row as it is
// now, and the fingerprint the page rendered of it (the form field "fingerprint", reading at
// most limit bytes of form).
func (s *server) shownRow(w http.ResponseWriter, r *http.Request, limit int64) (allowlist.Tool, string, error) {
	id, err := idParam(r)
	if err != nil {
		return allowlist.Tool{}, "", err
	}
	if err := readForm(w, r, limit); err != nil {
		return allowlist.Tool{}, "", err
	}
	shown := r.PostForm.Get("fingerprint")
	if shown == "" {
		return allowlist.Tool{}, "", fmt.Errorf("%w: %s without the fingerprint shown", errBadRequest, r.URL.Path)
	}
	t, err := s.tools.Get(r.Context(), id)
	return t, shown, err
}

// toolEnablePost enables a row. requireStepUp has already spent the session's grant for exactly
// this row as the page showed it; without it this handler never runs.
func (s *server) toolEnablePost(w http.ResponseWriter, r *http.Request) error {
	id, err := idParam(r)
	if err != nil {
		return err
	}
	t, err := s.tools.EnableTool(r.Context(), id, proofFrom(r.Context()))
	var changed *allowlist.ShapeChangedError
	switch {
	case errors.As(err, &changed):
		return s.toolChangedSinceShown(w, r, changed)
	case err != nil:
		return err
	}
	return s.toolChanged(w, r, t, "Enabled")
}

// toolChangedSinceShown refuses an approval of a row that changed since its page showed it: 409
// with the row as it is now and, field by field, what changed since that page. Nothing was
// changed. A browser without htmx gets the error page, which says to reload.
func (s *server) toolChangedSinceShown(w http.ResponseWriter, r *http.Request, changed *allowlist.ShapeChangedError) error {
	if !isHTMX(r) {
		return changed
	}
	row, err := s.changedRow(r, changed, notEnabled)
	if err != nil {
		return err
	}
	s.renderPartial(w, r, http.StatusConflict, views.PartialToolRow, row)
	return nil
}

// refusal is what an action refused for a row that changed since the page showed it did not
// do: the title of the diff, and the warning on the row.
type refusal struct{ title, warning string }

var (
	notEnabled = refusal{"Changed since this page showed it: nothing was enabled",
		"This tool changed after the page showed it, so it was not enabled. Check what it declares now before you enable it."}
	phrasesNotSaved = refusal{"Changed since this page showed it: the phrases were not saved",
		"This tool changed after the page showed it, so its phrases were not saved. Check what it declares now; what you wrote is kept."}
)

// changedRow is the view of a row refused because it changed since the page showed it: the
// row as it is now, what was not done and, field by field, what changed since that page.
func (s *server) changedRow(r *http.Request, changed *allowlist.ShapeChangedError, why refusal) (views.ToolRow, error) {
	seen, err := s.tools.DeclaredWhen(r.Context(), changed.Tool.ID, changed.Shown)
	if err != nil {
		return views.ToolRow{}, err
	}
	row, err := s.guidedRow(r.Context(), changed.Tool)
	if err != nil {
		return views.ToolRow{}, err
	}
	row.Diff, row.DiffTitle = nil, why.title
	if seen != "" {
		row.Diff = declaredDiff(seen, changed.Tool.Declared)
	}
	row.ChangedSinceShown = why.warning
	s.log.Info("approval refused: the tool changed since it was shown", "tool", changed.Tool.ID,
		"shown", changed.Shown, "now", changed.Tool.ApprovalDigest())
	return row, nil
}

// toolDisablePost disables a row (a proposal's Reject, an enabled row's Disable). Disabling
// only narrows what can run: no step-up.
func (s *server) toolDisablePost(w http.ResponseWriter, r *http.Request) error {
	id, err := idParam(r)
	if err != nil {
		return err
	}
	before, err := s.tools.Get(r.Context(), id)
	if err != nil {
		return err
	}
	t, err := s.tools.DisableTool(r.Context(), id, "owner")
	if err != nil {
		return err
	}
	did := "Disabled"
	if before.State == allowlist.StateProposed {
		did = "Rejected"
	}
	return s.toolChanged(w, r, t, did)
}

// toolChanged answers an action on a row, for htmx: the row again, in place, saying what was
// done, when it still belongs in the page's view; otherwise a short note where it was, saying
// where it went with a link there. Either way the state filters' counts follow (out of band).
// The row never jumps away under the owner's pointer. Any other browser goes back to the list.
func (s *server) toolChanged(w http.ResponseWriter, r *http.Request, t allowlist.Tool, did string) error {
	if !isHTMX(r) {
		http.Redirect(w, r, "/tools", http.StatusSeeOther)
		return nil
	}
	view := viewOfPage(r)
	filters, _, err := s.stateFilters(r, view)
	if err != nil {
		return err
	}
	filters.OOB = true
	change := views.RowChange{Filters: filters}
	where := stateLabel(t.State)
	if view.shows(t.State) {
		row, err := s.guidedRow(r.Context(), t)
		if err != nil {
			return err
		}
		row.Status = did + "."
		change.Row = &row
	} else {
		change.Moved = &views.MovedRow{
			ID: t.ID, Name: t.Name, Message: did + ".", Where: where,
			URL: toolsView{q: t.Name, state: t.State}.url(0),
		}
	}
	s.renderPartial(w, r, http.StatusOK, views.PartialToolChanged, change)
	return nil
}

// toolsSelected approves enabling the rows the owner selected on /tools (form field "tool",
// repeated, each "ID:FINGERPRINT" as the row showed it): one step-up names every row and its
// fingerprint (docs/design.md#rule-21).
func toolsSelected(w http.ResponseWriter, r *http.Request) (auth.Approval, error) {
	if err := readForm(w, r, maxJSONBody); err != nil {
		return auth.Approval{}, err
	}
	return selected(auth.ActionEnableTool, r.PostForm["tool"], true)
}

// toolsEnablePost enables the selected rows with the one step-up requireStepUp spent for all of
// them, in one transaction. A row redefined since the page showed it is refused for itself
// alone and shown with what changed; the others are enabled, being exactly what the owner
// approved. The answer is the list again (the page's view), with what happened beside the
// button.
func (s *server) toolsEnablePost(w http.ResponseWriter, r *http.Request) error {
	outcomes, err := s.tools.EnableTools(r.Context(), proofFrom(r.Context()))
	if err != nil {
		return err
	}
	if !isHTMX(r) {
		http.Redirect(w, r, "/tools", http.StatusSeeOther)
		return nil
	}
	view := viewOfPage(r)
	list, err := s.toolList(r, view)
	if err != nil {
		return err
	}
	result := &views.BatchResult{}
	changedRows := map[int64]views.ToolRow{}
	for _, o := range outcomes {
		var changed *allowlist.ShapeChangedError
		switch {
		case o.Err == nil:
			result.Enabled = append(result.Enabled, o.Tool.Name)
		case errors.As(o.Err, &changed):
			row, err := s.changedRow(r, changed, notEnabled)
			if err != nil {
				return err
			}
			changedRows[o.ID] = row
			result.Refused = append(result.Refused, views.Refusal{Name: o.Tool.Name,
				Reason: "it changed since this page showed it; its row shows what changed, enable it again if you agree"})
		case errors.Is(o.Err, allowlist.ErrNotFound):
			result.Refused = append(result.Refused, views.Refusal{Name: fmt.Sprintf("tool %d", o.ID), Reason: "it no longer exists"})
		default:
			result.Refused = append(result.Refused, views.Refusal{Name: o.Tool.Name,
				Reason: fmt.Sprintf("it is %s now, so it cannot be enabled", strings.ToLower(stateLabel(o.Tool.State)))})
		}
	}
	if len(result.Enabled) > 0 && !view.shows(allowlist.StateEnabled) {
		result.Moved = toolsView{q: view.q, state: allowlist.StateEnabled}.url(0)
	}
	for i := range list.Groups {
		for j, row := range list.Groups[i].Rows {
			if changed, ok := changedRows[row.ID]; ok {
				list.Groups[i].Rows[j] = changed
			}
		}
	}
	list.Result = result
	s.renderPartial(w, r, http.StatusOK, views.PartialToolList, list)
	return nil
}
