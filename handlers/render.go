package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"maven/views"
)

// render answers with the partial when isPartial(r), the full page otherwise. Both come from the
// same partial templates.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, page string, pageData any, partial string, partialData any) {
	if isPartial(r) {
		s.renderPartial(w, r, status, partial, partialData)
		return
	}
	s.renderPage(w, r, status, page, pageData)
}

// renderPage renders a full page into a buffer first, so a template error becomes a clean 500
// rather than half a page under a 200.
func (s *server) renderPage(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	var buf bytes.Buffer
	if err := s.views.Page(&buf, page, data); err != nil {
		s.renderFailed(w, r, err)
		return
	}
	writeHTML(w, status, &buf)
}

// renderPartial renders one partial, buffered like renderPage.
func (s *server) renderPartial(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var buf bytes.Buffer
	if err := s.views.Partial(&buf, name, data); err != nil {
		s.renderFailed(w, r, err)
		return
	}
	writeHTML(w, status, &buf)
}

// renderFailed answers a template failure with a plain 500: rendering the error page could fail
// the same way.
func (s *server) renderFailed(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("render failed", "path", r.URL.Path, "err", err)
	http.Error(w, "Something went wrong on Maven's side.", http.StatusInternalServerError)
}

func writeHTML(w http.ResponseWriter, status int, buf *bytes.Buffer) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// writeJSON answers with v as JSON; the WebAuthn endpoints speak it.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"encoding failed"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// pageInfo returns the layout data for a page.
func (s *server) pageInfo(r *http.Request, title, nav string) views.Page {
	p := views.Page{Title: title, SignedIn: s.signedIn(r), Nav: nav, Locked: s.vault.Locked()}
	if p.SignedIn && s.vault.HasVault() && !s.vault.Locked() {
		p.CanLock = true
		used, err := s.vault.RecoveryUsed(r.Context())
		if err != nil {
			s.log.Warn("cannot tell whether the recovery code was used", "err", err)
		}
		p.RecoveryUsed = used
	}
	return p
}

// wantsJSON reports whether r is one of the JSON endpoints' requests (maven.js's fetch calls).
func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json") ||
		strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
}

// timeOf is t as every page shows a time: one format, to the minute, in the daemon's zone.
func timeOf(t time.Time) views.Time {
	if t.IsZero() {
		return views.Time{}
	}
	return views.Time{Text: t.Local().Format("2 Jan 2006, 15:04"), ISO: t.UTC().Format(time.RFC3339)}
}
