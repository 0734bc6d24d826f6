package handlers

import (
	"errors"
	"net/http"

	"maven/app/auth"
	"maven/views"
)

// setupPage shows the passkey registration of a setup link (GET /setup?token=…). Looking does
// not use the link; registering does.
func (s *server) setupPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	err := s.auth.CheckSetupToken(r.Context(), token)
	if err != nil && !errors.Is(err, auth.ErrSetupLinkInvalid) {
		s.fail(w, r, err)
		return
	}
	page := views.SetupPage{Page: s.pageInfo(r, "Set up", ""), Usable: err == nil}
	status := http.StatusOK
	if page.Usable {
		page.Token = token
	} else {
		status = http.StatusGone
	}
	s.renderPage(w, r, status, views.PageSetup, page)
}

// setupBeginPost begins the registration; the first call uses the setup link for good.
func (s *server) setupBeginPost(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Token string `json:"token"`
	}
	if err := readJSON(w, r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	creation, err := s.auth.BeginSetup(r.Context(), s.sessionID(r.Context()), origin(r), body.Token)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"options": creation})
}

// setupFinishPost stores the new passkey and signs the owner in with it.
func (s *server) setupFinishPost(w http.ResponseWriter, r *http.Request) {
	var body finishBody
	if err := readJSON(w, r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	resp, perr := parseCreation(body.Credential)
	p, err := s.auth.FinishRegistration(ctx, s.sessionID(ctx), resp, body.Name)
	if err != nil {
		s.fail(w, r, errors.Join(err, perr))
		return
	}
	if err := s.signIn(ctx, p.ID); err != nil {
		s.fail(w, r, err)
		return
	}
	// prf tells maven.js to run the enrollment assertion right away: authenticators rarely
	// return a PRF result at creation, and the first PRF passkey creates the vault.
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "redirect": "/tools", "id": p.ID, "prf": p.CanUnlock()})
}
