package handlers_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/alexedwards/scs/sqlite3store"

	"maven/handlers"
)

type fixedLock bool

func (l fixedLock) Locked() bool { return bool(l) }

func TestHealthz(t *testing.T) {
	f := newFixture(t)
	for _, locked := range []bool{false, true} {
		d := handlers.Deps{
			Lock:     fixedLock(locked),
			Sessions: handlers.NewSessionManager(sqlite3store.NewWithConfig(f.db.DB, sqlite3store.Config{}), false),
			Auth:     f.auth, Tools: f.tools, Views: mustViews(t), Assets: mustAssets(t),
		}
		h, err := handlers.Routes(d)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		want := `{"status":"ok","locked":false}` + "\n"
		if locked {
			want = `{"status":"ok","locked":true}` + "\n"
		}
		if rec.Code != http.StatusOK || rec.Body.String() != want {
			t.Fatalf("locked=%v: %d %q", locked, rec.Code, rec.Body.String())
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Fatal("missing nosniff")
		}
		if len(rec.Result().Cookies()) != 0 {
			t.Fatal("healthz must not start a session")
		}
	}
}
