package handlers

import (
	"errors"
	"net/http"

	"maven/app/auth"
	"maven/views"
)

// setupPage shows the passkey registration of a setup link (GET /setup?token=…). Looking does
// not use the link; registering does.
func (s *server) setupPage(w http.ResponseWriter, r *http.Request) error {
	token := r.URL.Query().Get("token")
	err := s.auth.CheckSetupToken(r.Context(), token)
	if err != nil && !errors.Is(err, auth.ErrSetupLinkInvalid) {
		return err
	}
	page := views.SetupPage{Page: s.pageInfo(r, "Set up", ""), Reach: s.reach(r), Usable: err == nil}
	if page.Usable {
		// A setup link adds a passkey to the one owner: say so when there is one already.
		passkeys, err := s.auth.Passkeys(r.Context())
		if err != nil {
			return err
		}
		page.Passkeys = len(passkeys)
	}
	status := http.StatusOK
	if page.Usable {
		page.Token = token
	} else {
		status = http.StatusGone
	}
	s.renderPage(w, r, status, views.PageSetup, page)
	return nil
}

// setupBeginPost begins the registration; the first call uses the setup link for good.
func (s *server) setupBeginPost(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Token string `json:"token"`
	}
	if err := readJSON(w, r, &body); err != nil {
		return err
	}
	opts, err := s.auth.BeginSetup(r.Context(), s.ceremonyID(w, r), origin(r), body.Token)
	return sendOptions(w, opts, err)
}

// setupFinishPost stores the new passkey and signs the owner in with it.
func (s *server) setupFinishPost(w http.ResponseWriter, r *http.Request) error {
	p, err := finishCreation(w, r, ceremonyIDOf(r), s.auth.FinishRegistration)
	if err != nil {
		return err
	}
	if err := s.signIn(w, r, p.ID); err != nil {
		return err
	}
	// prf tells maven.js to run the enrollment assertion right away: authenticators rarely
	// return a PRF result at creation, and the first PRF passkey creates the vault.
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "redirect": "/tools", "id": p.ID, "prf": p.CanUnlock()})
	return nil
}
