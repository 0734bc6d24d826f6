package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"maven/app/voice"
	"maven/app/voice/hatest"
)

type recordingTurner struct {
	req   voice.Request
	calls int
	panic bool
}

func (r *recordingTurner) Turn(_ context.Context, req voice.Request) voice.Reply {
	r.calls++
	r.req = req
	if r.panic {
		panic("a bug in a turn")
	}
	return voice.Reply{Speech: "You have 3 tasks.", Output: "You have 3 tasks: a, b and c.", Outcome: voice.OutcomeRan, Tool: "vikunja_list_tasks"}
}

type oneToken string

func (t oneToken) Check(s string) bool { return s == string(t) }

// voiceRoutes mounts the webhook the way server.routes does, without the web app around it.
func voiceRoutes(turner VoiceTurner, tokens TokenChecker) http.Handler {
	s := &server{log: slog.New(slog.DiscardHandler)}
	r := chi.NewRouter()
	r.Post("/voice", s.handle(voicePost(turner, tokens, s.log)))
	return r
}

func TestVoicePost(t *testing.T) {
	const token = "mvt_secret"
	for _, c := range []struct {
		name       string
		method     string
		auth       func(*http.Request)
		body       string
		accept     string
		ctype      string // "" sends application/json; "-" sends none
		wantStatus int
		wantText   string // the utterance the turner got
		wantBody   string
	}{
		{name: "bearer", auth: bearer(token), body: `{"conversation_id":"c1","text":"list tasks"}`,
			wantStatus: 200, wantText: "list tasks", wantBody: `"outcome":"ran"`},
		{name: "basic with the token as password", auth: basic("homeassistant", token), body: `{"conversation_id":"c1","text":"list tasks"}`,
			wantStatus: 200, wantText: "list tasks", wantBody: `"output":"You have 3 tasks: a, b and c."`},
		{name: "plain text", auth: bearer(token), accept: "text/plain", body: `{"conversation_id":"c","text":"x"}`,
			wantStatus: 200, wantText: "x", wantBody: "You have 3 tasks."},
		{name: "no token", body: `{"conversation_id":"c","text":"x"}`, wantStatus: 401},
		{name: "wrong token", auth: bearer("mvt_guess"), body: `{"conversation_id":"c","text":"x"}`, wantStatus: 401},
		{name: "token in the wrong scheme", auth: func(r *http.Request) { r.Header.Set("Authorization", "Token "+token) }, body: `{"conversation_id":"c","text":"x"}`, wantStatus: 401},
		{name: "a body of 1 MiB is read", auth: bearer(token), body: `{"conversation_id":"c","text":"x","pad":"` + strings.Repeat("a", voice.MaxRequestBody-60) + `"}`,
			wantStatus: 200, wantText: "x"},
		{name: "over 1 MiB", auth: bearer(token), body: `{"conversation_id":"c","text":"` + strings.Repeat("a", voice.MaxRequestBody) + `"}`, wantStatus: 413},
		{name: "bad json", auth: bearer(token), body: `{"conversation_id":`, wantStatus: 400},
		{name: "not an object", auth: bearer(token), body: `["list tasks"]`, wantStatus: 400},
		{name: "no text", auth: bearer(token), body: `{"conversation_id":"c"}`, wantStatus: 400},
		{name: "no conversation", auth: bearer(token), body: `{"text":"list tasks"}`, wantStatus: 400},
		{name: "conversation too long", auth: bearer(token), body: `{"conversation_id":"` + strings.Repeat("c", 300) + `","text":"x"}`, wantStatus: 400},
		{name: "wrong method", method: http.MethodGet, auth: bearer(token), wantStatus: 405},
		{name: "json with a charset", auth: bearer(token), ctype: "application/json; charset=utf-8", body: `{"conversation_id":"c","text":"x"}`,
			wantStatus: 200, wantText: "x"},
		{name: "a +json type", auth: bearer(token), ctype: "application/vnd.maven+json", body: `{"conversation_id":"c","text":"x"}`,
			wantStatus: 200, wantText: "x"},
		{name: "a form, as curl -d sends", auth: bearer(token), ctype: "application/x-www-form-urlencoded", body: `{"conversation_id":"c","text":"x"}`,
			wantStatus: 415, wantBody: "Content-Type: application/json"},
		{name: "a text/plain body", auth: bearer(token), ctype: "text/plain", body: `{"conversation_id":"c","text":"x"}`, wantStatus: 415},
		{name: "no content type", auth: bearer(token), ctype: "-", body: `{"conversation_id":"c","text":"x"}`, wantStatus: 415},
		{name: "a malformed content type", auth: bearer(token), ctype: "application/json;;", body: `{"conversation_id":"c","text":"x"}`, wantStatus: 415},
		{name: "no token comes first", ctype: "text/plain", body: `{"conversation_id":"c","text":"x"}`, wantStatus: 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			turner := &recordingTurner{}
			h := voiceRoutes(turner, oneToken(token))
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
			switch c.ctype {
			case "":
				req.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				req.Header.Set("Content-Type", c.ctype)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.wantStatus {
				t.Fatalf("status %d, want %d: %.200s", rec.Code, c.wantStatus, rec.Body.String())
			}
			if c.wantStatus != 200 {
				if turner.calls != 0 {
					t.Fatal("a refused request reached the turner")
				}
				if !strings.Contains(rec.Body.String(), c.wantBody) {
					t.Fatalf("body %q lacks %q", rec.Body.String(), c.wantBody)
				}
				return
			}
			if turner.req.Text != c.wantText {
				t.Fatalf("utterance %q, want %q", turner.req.Text, c.wantText)
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

// TestVoicePostAsHomeAssistantPosts sends what the webhook-conversation integration sends, for
// homes of different sizes, with and without streaming, authenticated as it is configured to
// (HTTP Basic), and reads the answer as the integration reads it.
func TestVoicePostAsHomeAssistantPosts(t *testing.T) {
	log := []hatest.Message{
		hatest.Text("system", hatest.SystemPrompt),
		hatest.Text("user", "turn on the kitchen light"),
		{Role: "assistant"},
		hatest.Text("tool_result", `{"response_type": "action_done"}`),
		hatest.Text("assistant", "Done."),
		hatest.Text("user", "list tasks"),
	}
	user := "6c4e0b9f1a2d"
	for _, c := range []struct {
		name     string
		entities int
		stream   bool
	}{
		{"no entities", 0, false},
		{"12 entities, streaming", 12, true},
		{"150 entities", 150, false},
		{"150 entities, streaming", 150, true},
		{"2,000 entities, streaming", 2000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			turner := &recordingTurner{}
			h := voiceRoutes(turner, oneToken("mvt_secret"))
			body := hatest.Body(hatest.Chat{ConversationID: "01JF8Q", Log: log, Stream: c.stream, UserID: &user, Entities: hatest.Home(c.entities)})
			req := httptest.NewRequest(http.MethodPost, "/voice", bytes.NewReader(body))
			req.SetBasicAuth("homeassistant", "mvt_secret")
			req.Header.Set("Content-Type", hatest.ContentType)
			req.Header.Set("Accept", "*/*") // aiohttp's default
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body.String())
			}
			if want := (voice.Request{Conversation: "01JF8Q", Text: "list tasks", UserID: user}); turner.req != want {
				t.Fatalf("turn %+v, want %+v", turner.req, want)
			}
			if !c.stream {
				var resp map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp["output"] != "You have 3 tasks: a, b and c." {
					t.Fatalf("%v %s", err, rec.Body.String())
				}
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/x-ndjson" {
				t.Fatalf("content type %q", ct)
			}
			if got := readStream(t, rec.Body); got != "You have 3 tasks." {
				t.Fatalf("streamed %q", got)
			}
		})
	}
}

// readStream reads an NDJSON answer line by line as the integration does: item contents are
// appended, end stops, lines that are not JSON are skipped. It fails if no end line came.
func readStream(t *testing.T, r io.Reader) string {
	t.Helper()
	var answer strings.Builder
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var chunk map[string]any
		if json.Unmarshal([]byte(line), &chunk) != nil {
			continue
		}
		switch chunk["type"] {
		case "item":
			s, _ := chunk["content"].(string)
			answer.WriteString(s)
		case "end":
			return answer.String()
		}
	}
	t.Fatalf("the stream ended without an end line after %q", answer.String())
	return ""
}

// countingReader is a request body that counts what the server read of it.
type countingReader struct {
	left, read int
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.left)
	for i := range p[:n] {
		p[i] = ' '
	}
	c.left -= n
	c.read += n
	return n, nil
}

func TestVoicePostDoesNotReadAnOversizedBodyWhole(t *testing.T) {
	h := voiceRoutes(&recordingTurner{}, oneToken("t"))
	for _, c := range []struct {
		name     string
		declared bool
		maxRead  int
	}{
		{"declared too long", true, 0},
		{"chunked, without a length", false, voice.MaxRequestBody + 64<<10},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := &countingReader{left: 64 << 20}
			req := httptest.NewRequest(http.MethodPost, "/voice", io.MultiReader(strings.NewReader(`{"conversation_id":"c","text":"x","pad":`), body))
			req.ContentLength = -1
			if c.declared {
				req.ContentLength = 64 << 20
			}
			req.Header.Set("Authorization", "Bearer t")
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusRequestEntityTooLarge || body.read > c.maxRead {
				t.Fatalf("status %d after reading %d bytes (at most %d)", rec.Code, body.read, c.maxRead)
			}
		})
	}
}

func TestAFailedTurnIsStillSpoken(t *testing.T) {
	h := voiceRoutes(&recordingTurner{panic: true}, oneToken("t"))
	req := httptest.NewRequest(http.MethodPost, "/voice", strings.NewReader(`{"conversation_id":"c","text":"x","stream":true}`))
	req.Header.Set("Authorization", "Bearer t")
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(readStream(t, rec.Body), "went wrong") {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
}

func bearer(token string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

func basic(user, pass string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(user, pass) }
}

// FuzzVoicePost feeds arbitrary bodies and headers to the webhook: it never panics, answers only
// with the contract's statuses, and reaches the turner only with a conversation and some text.
func FuzzVoicePost(f *testing.F) {
	for _, seed := range []string{
		`{"conversation_id":"c","text":"list tasks"}`,
		`{"conversation_id":"c","query":"x","messages":[{"role":"user","content":"y"}]}`,
		`{"conversation_id":"","text":""}`, `[]`, `null`, `{"text":1}`, "\xff\xfe", `{"messages":[{"role":"user"}]}`,
		`{"conversation_id":"c","text":"a","text":"b","stream":true}`,
	} {
		f.Add([]byte(seed), "application/json")
	}
	f.Fuzz(func(t *testing.T, body []byte, accept string) {
		turner := &recordingTurner{}
		h := voiceRoutes(turner, oneToken("t"))
		req := httptest.NewRequest(http.MethodPost, "/voice", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200:
			if turner.calls != 1 || turner.req.Conversation == "" || strings.TrimSpace(turner.req.Text) == "" {
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
