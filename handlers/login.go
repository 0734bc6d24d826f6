package handlers

import (
	"net/http"

	"maven/views"
)

// Why a browser was sent to /login (?why=…), so the page can say what happened.
const (
	// whyPasskeyRemoved: the owner removed the passkey this session signed in with.
	whyPasskeyRemoved = "passkey-removed"
	// whyRecovered: the recovery code unlocked Maven, which signs no one in.
	whyRecovered = "recovered"
)

// loginPage offers "Sign in with passkey" (GET /login).
func (s *server) loginPage(w http.ResponseWriter, r *http.Request) error {
	if s.signedIn(r) {
		http.Redirect(w, r, "/tools", http.StatusSeeOther)
		return nil
	}
	has, err := s.auth.HasPasskeys(r.Context())
	if err != nil {
		return err
	}
	page := views.LoginPage{Page: s.pageInfo(r, "Sign in", ""), Reach: s.reach(r), HasPasskeys: has}
	// Why the browser was sent here, from a fixed list: the page never shows text from the URL.
	switch why := r.URL.Query().Get("why"); why {
	case whyPasskeyRemoved, whyRecovered:
		page.Why = why
	}
	s.renderPage(w, r, http.StatusOK, views.PageLogin, page)
	return nil
}

// loginBeginPost begins a discoverable sign-in.
func (s *server) loginBeginPost(w http.ResponseWriter, r *http.Request) error {
	if err := readEmpty(w, r); err != nil {
		return err
	}
	opts, err := s.auth.BeginLogin(r.Context(), s.ceremonyID(w, r), origin(r))
	return sendOptions(w, opts, err)
}

// loginFinishPost verifies the sign-in and makes the session the owner's, under a new token.
func (s *server) loginFinishPost(w http.ResponseWriter, r *http.Request) error {
	p, err := finishAssertion(w, r, ceremonyIDOf(r), s.auth.FinishLogin)
	if err != nil {
		return err
	}
	if err := s.signIn(w, r, p.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "redirect": "/tools"})
	return nil
}

// logoutPost ends the session: its step-up grants go with it.
func (s *server) logoutPost(w http.ResponseWriter, r *http.Request) error {
	if err := s.endSession(r.Context()); err != nil {
		return err
	}
	redirect(w, r, "/login")
	return nil
}
