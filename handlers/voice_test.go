package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"maven/app/voice"

	"golang.org/x/time/rate"
)

type recordingTurner struct {
	conversation, text string
	calls              int
}

func (r *recordingTurner) Turn(_ context.Context, conversation, text string) voice.Reply {
	r.calls++
	r.conversation, r.text = conversation, text
	return voice.Reply{Speech: "You have 3 tasks.", Outcome: voice.OutcomeRan, Tool: "vikunja_list_tasks"}
}

type oneToken string

func (t oneToken) Check(s string) bool { return s == string(t) }

func TestVoicePost(t *testing.T) {
	const token = "mvt_secret"
	for _, c := range []struct {
		name       string
		method     string
		auth       func(*http.Request)
		body       string
		accept     string
		wantStatus int
		wantText   string // the utterance the turner got
		wantBody   string
	}{
		{name: "bearer", auth: bearer(token), body: `{"conversation_id":"c1","text":"list tasks"}`,
			wantStatus: 200, wantText: "list tasks", wantBody: `"outcome":"ran"`},
		{name: "basic with the token as password", auth: basic("homeassistant", token), body: `{"conversation_id":"c1","text":"list tasks"}`,
			wantStatus: 200, wantText: "list tasks", wantBody: `"output":"You have 3 tasks."`},
		{name: "home assistant query", auth: basic("", token), body: `{"conversation_id":"01HS6","query":"list tasks","system_prompt":"x","stream":false,"language":"en","exposed_entities":"..."}`,
			wantStatus: 200, wantText: "list tasks"},
		{name: "home assistant messages", auth: bearer(token), body: `{"conversation_id":"01HS6","messages":[{"role":"system","content":"be nice"},{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":"search tasks milk"}]}`,
			wantStatus: 200, wantText: "search tasks milk"},
		{name: "plain text", auth: bearer(token), accept: "text/plain", body: `{"conversation_id":"c","text":"x"}`,
			wantStatus: 200, wantText: "x", wantBody: "You have 3 tasks."},
		{name: "no token", body: `{"conversation_id":"c","text":"x"}`, wantStatus: 401},
		{name: "wrong token", auth: bearer("mvt_guess"), body: `{"conversation_id":"c","text":"x"}`, wantStatus: 401},
		{name: "token in the wrong scheme", auth: func(r *http.Request) { r.Header.Set("Authorization", "Token "+token) }, body: `{"conversation_id":"c","text":"x"}`, wantStatus: 401},
		{name: "too big", auth: bearer(token), body: `{"conversation_id":"c","text":"` + strings.Repeat("a", 9000) + `"}`, wantStatus: 413},
		{name: "bad json", auth: bearer(token), body: `{"conversation_id":`, wantStatus: 400},
		{name: "not an object", auth: bearer(token), body: `["list tasks"]`, wantStatus: 400},
		{name: "no text", auth: bearer(token), body: `{"conversation_id":"c"}`, wantStatus: 400},
		{name: "no conversation", auth: bearer(token), body: `{"text":"list tasks"}`, wantStatus: 400},
		{name: "wrong method", method: http.MethodGet, auth: bearer(token), wantStatus: 405},
	} {
		t.Run(c.name, func(t *testing.T) {
			turner := &recordingTurner{}
			h := voiceRoutes(turner, oneToken(token), rate.NewLimiter(100, 100), time.Now)
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, "/voice", strings.NewReader(c.body))
			if c.auth != nil {
				c.auth(req)
			}
			if c.accept != "" {
				req.Header.Set("Accept", c.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.wantStatus, rec.Body.String())
			}
			if c.wantStatus != 200 {
				if turner.calls != 0 {
					t.Fatal("a refused request reached the turner")
				}
				return
			}
			if turner.text != c.wantText {
				t.Fatalf("utterance %q, want %q", turner.text, c.wantText)
			}
			if !strings.Contains(rec.Body.String(), c.wantBody) {
				t.Fatalf("body %q lacks %q", rec.Body.String(), c.wantBody)
			}
			if c.accept == "" {
				var resp map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"speech", "outcome", "expects_reply", "tool", "output"} {
					if _, ok := resp[k]; !ok {
						t.Errorf("response lacks %q", k)
					}
				}
			}
		})
	}
}

func TestVoiceRateLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := voiceRoutes(&recordingTurner{}, oneToken("t"), rate.NewLimiter(1, 3), func() time.Time { return now })
	codes := []int{}
	for range 5 {
		req := httptest.NewRequest(http.MethodPost, "/voice", strings.NewReader(`{"conversation_id":"c","text":"x"}`))
		bearer("t")(req)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		codes = append(codes, rec.Code)
	}
	if want := []int{200, 200, 200, 429, 429}; !equalInts(codes, want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	now = now.Add(2 * time.Second)
	req := httptest.NewRequest(http.MethodPost, "/voice", strings.NewReader(`{"conversation_id":"c","text":"x"}`))
	bearer("t")(req)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("after refill: %d", rec.Code)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func bearer(token string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

func basic(user, pass string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(user, pass) }
}

// voiceRoutes mounts the webhook the way Routes does, without the web app around it.
func voiceRoutes(turner VoiceTurner, tokens TokenChecker, limit *rate.Limiter, now func() time.Time) http.Handler {
	s := &server{log: slog.New(slog.DiscardHandler)}
	r := chi.NewRouter()
	r.Post("/voice", s.handle(voicePost(turner, tokens, limit, now)))
	return r
}

// FuzzVoicePost feeds arbitrary bodies and headers to the webhook: it never panics, answers only
// with the contract's statuses, and reaches the turner only with a conversation and some text.
func FuzzVoicePost(f *testing.F) {
	for _, seed := range []string{
		`{"conversation_id":"c","text":"list tasks"}`,
		`{"conversation_id":"c","query":"x","messages":[{"role":"user","content":"y"}]}`,
		`{"conversation_id":"","text":""}`, `[]`, `null`, `{"text":1}`, "\xff\xfe", `{"messages":[{"role":"user"}]}`,
		`{"conversation_id":"c","text":"a","text":"b"}`,
	} {
		f.Add([]byte(seed), "application/json")
	}
	f.Fuzz(func(t *testing.T, body []byte, accept string) {
		turner := &recordingTurner{}
		h := voiceRoutes(turner, oneToken("t"), rate.NewLimiter(rate.Inf, 0), time.Now)
		req := httptest.NewRequest(http.MethodPost, "/voice", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200:
			if turner.calls != 1 || turner.conversation == "" || strings.TrimSpace(turner.text) == "" {
				t.Fatalf("200 with turn %+v", turner)
			}
		case 400, 413:
			if turner.calls != 0 {
				t.Fatal("a refused body reached the turner")
			}
		default:
			t.Fatalf("status %d", rec.Code)
		}
	})
}
