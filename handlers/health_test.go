package handlers_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"maven/app/auth/authtest"
)

func TestHealthz(t *testing.T) {
	f := newFixture(t)
	check := func(want string) {
		t.Helper()
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != http.StatusOK || rec.Body.String() != want+"\n" {
			t.Fatalf("healthz: %d %q, want %s", rec.Code, rec.Body.String(), want)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Fatal("missing nosniff")
		}
		if len(rec.Result().Cookies()) != 0 {
			t.Fatal("healthz must not start a session")
		}
	}
	check(healthUnlocked)
	// A daemon with a vault boots locked.
	f.setUp(authtest.New(testOrigin))
	check(healthUnlocked)
	f.boot()
	check(healthLocked)
}
