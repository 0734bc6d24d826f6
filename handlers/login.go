package handlers

import (
	"errors"
	"net/http"

	"maven/views"
)

// loginPage offers "Sign in with passkey" (GET /login).
func (s *server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.signedIn(r) {
		http.Redirect(w, r, "/tools", http.StatusSeeOther)
		return
	}
	has, err := s.auth.HasPasskeys(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderPage(w, r, http.StatusOK, views.PageLogin, views.LoginPage{
		Page: s.pageInfo(r, "Sign in", ""), HasPasskeys: has,
	})
}

// loginBeginPost begins a discoverable sign-in.
func (s *server) loginBeginPost(w http.ResponseWriter, r *http.Request) {
	if err := readJSON(w, r, &struct{}{}); err != nil {
		s.fail(w, r, err)
		return
	}
	assertion, err := s.auth.BeginLogin(r.Context(), s.sessionID(r.Context()), origin(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"options": assertion})
}

// loginFinishPost verifies the sign-in and makes the session the owner's, under a new token.
func (s *server) loginFinishPost(w http.ResponseWriter, r *http.Request) {
	var body finishBody
	if err := readJSON(w, r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	resp, perr := parseAssertion(body.Credential)
	p, err := s.auth.FinishLogin(ctx, s.sessionID(ctx), resp)
	if err != nil {
		s.fail(w, r, errors.Join(err, perr))
		return
	}
	if err := s.signIn(ctx, p.ID); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "redirect": "/tools"})
}

// logoutPost ends the session: its step-up grants go with it.
func (s *server) logoutPost(w http.ResponseWriter, r *http.Request) {
	if err := s.endSession(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	if isHTMX(r) {
		w.Header().Set(hxRedirect, "/login")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
