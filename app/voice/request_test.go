package voice_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"maven/app/voice"
	"maven/app/voice/hatest"
)

func ptr(s string) *string { return &s }

func TestDecodeHomeAssistantRequests(t *testing.T) {
	multiTurn := []hatest.Message{
		hatest.Text("system", hatest.SystemPrompt),
		hatest.Text("user", "turn on the kitchen light"),
		{Role: "assistant", Content: nil}, // a turn that only called tools
		hatest.Text("tool_result", `{"speech": {}, "response_type": "action_done"}`),
		hatest.Text("assistant", "The kitchen light is on."),
		hatest.Text("user", "Hey Maven, search tasks \"oat\" milk ü"),
	}
	for _, c := range []struct {
		name string
		chat hatest.Chat
	}{
		{"an empty home", hatest.Chat{ConversationID: "01JF8", Log: []hatest.Message{hatest.Text("system", hatest.SystemPrompt), hatest.Text("user", "Hey Maven, search tasks \"oat\" milk ü")}}},
		{"a flat with 12 entities, streaming", hatest.Chat{ConversationID: "01JF8", Log: multiTurn, Stream: true, UserID: ptr("8f1c"), Entities: hatest.Home(12)}},
		{"a house with 150 entities", hatest.Chat{ConversationID: "01JF8", Log: multiTurn, ExtraPrompt: ptr("Answer briefly."), UserID: ptr("8f1c"), Entities: hatest.Home(150)}},
		{"an estate with 2,000 entities", hatest.Chat{ConversationID: "01JF8", Log: multiTurn, Stream: true, Entities: hatest.Home(2000)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := hatest.Body(c.chat)
			got, err := voice.DecodeRequest(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			want := voice.WebhookRequest{Conversation: "01JF8", Text: "Hey Maven, search tasks \"oat\" milk ü", Stream: c.chat.Stream}
			if c.chat.UserID != nil {
				want.UserID = *c.chat.UserID
			}
			if got != want {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestDecodeKeepsOnlyWhatATurnNeeds(t *testing.T) {
	body := hatest.Body(hatest.Chat{ConversationID: "c", Log: []hatest.Message{hatest.Text("system", strings.Repeat("prompt ", 20000)),
		hatest.Text("user", "list tasks")}, Entities: hatest.Home(2000)})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := voice.DecodeRequest(bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
		t.Fatalf("decoding a %d-byte body allocated %d bytes: it held what it should skip", len(body), alloc)
	}
}

func TestDecodeWhichUtterance(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"conversation_id":"c","text":"a","query":"b","messages":[{"role":"user","content":"c"}]}`, "a"},
		{`{"conversation_id":"c","query":"b","messages":[{"role":"user","content":"c"}]}`, "b"},
		{`{"conversation_id":"c","query":null,"messages":[{"role":"user","content":"c"},{"role":"assistant","content":"d"}]}`, "c"},
		{`{"conversation_id":"c","messages":[{"content":"first","role":"user"},{"content":"not me","role":"system"}]}`, "first"},
		{`{"messages":null,"conversation_id":"c","text":"a \u00fc\ud83d\ude00"}`, "a ü😀"},
	} {
		got, err := voice.DecodeRequest(strings.NewReader(c.body))
		if err != nil || got.Text != c.want {
			t.Errorf("%s: %q %v, want %q", c.body, got.Text, err, c.want)
		}
	}
}

func TestDecodeRefusesWhatIsNotARequest(t *testing.T) {
	for _, body := range []string{
		``, `[]`, `"text"`, `{`, `{"conversation_id":`, `{"conversation_id":"c"`, `{"a":1}x`, `{"a":1}{}`,
		`{"conversation_id":3}`, `{"text":["x"]}`, `{"stream":"yes"}`, `{"messages":{}}`, `{"messages":["hi"]}`,
		`{"messages":[{"role":"user","content":7}]}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":"\u12"}`,
		`{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{"a":tru}`, `{"a":nul}`, `{"a":[1,]}`, `{"a":[1 2]}`,
		`{"a" 1}`, `{a:1}`, `{"a":1,}`, `{"a":{"b":1,}}`,
		`{"exposed_entities":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	} {
		_, err := voice.DecodeRequest(strings.NewReader(body))
		var re *voice.RequestError
		if !errors.As(err, &re) {
			t.Errorf("%q: got %v, want a *RequestError", body, err)
		}
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestDecodePassesReadErrorsOn(t *testing.T) {
	boom := errors.New("connection reset")
	_, err := voice.DecodeRequest(io.MultiReader(strings.NewReader(`{"exposed_entities":"abc`), failingReader{boom}))
	var re *voice.RequestError
	if !errors.Is(err, boom) || errors.As(err, &re) {
		t.Fatalf("%v", err)
	}
}

// FuzzDecodeRequest checks the hand-written walker against encoding/json: it accepts only
// JSON, and where both read a request they agree on it.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"conversation_id":"c","text":"hi"}`))
	f.Add(hatest.Body(hatest.Chat{ConversationID: "c", Log: []hatest.Message{hatest.Text("user", "x")}, Entities: hatest.Home(3)}))
	f.Add([]byte(`{"messages":[{"role":"user","content":"a\"b"}],"stream":true,"n":-0.5e+3,"o":{"p":[null,false]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := voice.DecodeRequest(bytes.NewReader(body))
		var ref struct {
			ConversationID *string `json:"conversation_id"`
			Text           *string `json:"text"`
			Query          *string `json:"query"`
			UserID         *string `json:"user_id"`
			Stream         *bool   `json:"stream"`
			Messages       []struct {
				Role    *string `json:"role"`
				Content *string `json:"content"`
			} `json:"messages"`
		}
		// encoding/json also takes a key in another case ("Stream"); the walker does not.
		// Compare only bodies where that cannot matter.
		refErr := json.Unmarshal(body, &ref)
		comparable := refErr == nil && bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) &&
			plainKeys(body, "conversation_id", "text", "query", "user_id", "stream", "messages", "role", "content")
		if err != nil {
			if comparable {
				t.Fatalf("refused a request encoding/json reads: %q: %v", body, err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if !comparable {
			return
		}
		if ref.ConversationID != nil && *ref.ConversationID != got.Conversation {
			t.Fatalf("conversation %q vs %q", got.Conversation, *ref.ConversationID)
		}
		if ref.Stream != nil && *ref.Stream != got.Stream {
			t.Fatalf("stream %v vs %v", got.Stream, *ref.Stream)
		}
		if ref.UserID != nil && *ref.UserID != got.UserID {
			t.Fatalf("user %q vs %q", got.UserID, *ref.UserID)
		}
	})
}

// plainKeys reports whether each key appears at most once, and never in another case or
// escaped.
func plainKeys(body []byte, keys ...string) bool {
	lower := bytes.ToLower(body)
	for _, k := range keys {
		if bytes.Count(lower, []byte(k)) != bytes.Count(body, []byte(k)) || bytes.Count(body, []byte(k)) > 1 || bytes.Contains(body, []byte(`\u`)) {
			return false
		}
	}
	return true
}
