package handlers

import (
	"net/http"
	"strings"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/views"
)

// confirmChoice is the Confirm setting of an enabled destructive row, as its form offers it.
func confirmChoice(t allowlist.Tool) *views.ConfirmChoice {
	current := t.Confirm
	if current == "" {
		current = allowlist.ConfirmVoice
	}
	c := &views.ConfirmChoice{}
	for _, way := range allowlist.Confirms() {
		c.Options = append(c.Options, views.Option{Value: string(way), Label: way.Words(), Selected: way == current})
	}
	return c
}

// confirmAsShown approves setting how the route's row is confirmed as its page showed it: the
// form's "confirm" and the row's "fingerprint" (allowlist.ConfirmDigest).
func confirmAsShown(w http.ResponseWriter, r *http.Request) (auth.Approval, error) {
	id, err := idParam(r)
	if err != nil {
		return auth.Approval{}, err
	}
	if err := readForm(w, r, maxJSONBody); err != nil {
		return auth.Approval{}, err
	}
	return auth.One(auth.ActionSetConfirm, id, r.PostForm.Get("confirm")+" "+r.PostForm.Get("fingerprint")), nil
}

// confirmOf is the setting a confirmation's step-up names.
func confirmOf(digest string) allowlist.Confirm {
	way, _, _ := strings.Cut(digest, " ")
	return allowlist.Confirm(way)
}

// toolConfirmPost sets how a row's voice calls are confirmed (docs/design.md#rule-32):
// requireStepUp has spent the session's grant for this setting of this row as its page showed
// it. The row comes back in place saying what was saved.
func (s *server) toolConfirmPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id, err := idParam(r)
	if err != nil {
		return err
	}
	t, err := s.tools.SetConfirm(ctx, id, allowlist.Confirm(r.PostForm.Get("confirm")), proofFrom(ctx))
	if err != nil {
		return err
	}
	if !isHTMX(r) {
		http.Redirect(w, r, "/tools", http.StatusSeeOther)
		return nil
	}
	row, err := s.guidedRow(ctx, t)
	if err != nil {
		return err
	}
	if row.Voice.Confirm != nil {
		row.Voice.Confirm.Status = "Saved: voice calls of it are confirmed " + t.Confirm.Words() + "."
	}
	s.renderPartial(w, r, http.StatusOK, views.PartialToolRow, row)
	return nil
}
