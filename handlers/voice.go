package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"maven/app/voice"
)

// VoiceTurner handles one utterance (voice.Service).
type VoiceTurner interface {
	Turn(ctx context.Context, req voice.Request) voice.Reply
}

// TokenChecker checks the webhook's bearer token in constant time (bearer.Tokens).
type TokenChecker interface {
	Check(token string) bool
}

// maxConversationID bounds the ids kept in memory for pending questions.
const maxConversationID = 256

// voiceResponse is the webhook's JSON answer. Home Assistant's webhook-conversation reads the
// field its "output field" option names ("output" by default).
type voiceResponse struct {
	Speech       string `json:"speech"`
	Outcome      string `json:"outcome"`
	ExpectsReply bool   `json:"expects_reply"`
	Tool         string `json:"tool"`
	Output       string `json:"output"`
}

// streamLine is one NDJSON line of a streamed answer, the shape webhook-conversation reads.
type streamLine struct {
	Type    string `json:"type"`
	Content string `json:"content,omitempty"`
}

// voicePost is POST /voice: authenticate, read, turn, answer. The token only lets a front end
// submit utterances; it can never enable a tool or satisfy a step-up. Only a bad token (401), a
// body that does not say it is JSON (415), one that is not a webhook request (400) and one over
// voice.MaxRequestBody (413) are returned as errors: a front end such as Home Assistant turns
// any other status into "Error contacting webhook", so every failure of the turn itself, the
// rate limit included, is a spoken 200.
func voicePost(turner VoiceTurner, tokens TokenChecker, log *slog.Logger) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !tokens.Check(requestToken(r)) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="maven", Basic realm="maven"`)
			return apiError{http.StatusUnauthorized, "missing or wrong voice token"}
		}
		if !saysJSON(r.Header.Get("Content-Type")) {
			return apiError{http.StatusUnsupportedMediaType, "the body must be JSON, sent with Content-Type: application/json"}
		}
		req, err := readVoiceRequest(w, r)
		if err != nil {
			return err
		}
		reply := safeTurn(r.Context(), turner, voice.Request{Conversation: req.Conversation, Text: req.Text, UserID: req.UserID}, log)
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case req.Stream:
			w.Header().Set("Content-Type", "application/x-ndjson")
			enc := json.NewEncoder(w)
			_ = enc.Encode(streamLine{Type: "item", Content: reply.Speech})
			_ = enc.Encode(streamLine{Type: "end"})
		case wantsPlainText(r):
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, reply.Speech)
		default:
			writeJSON(w, http.StatusOK, voiceResponse{Speech: reply.Speech, Outcome: string(reply.Outcome),
				ExpectsReply: reply.ExpectsReply, Tool: reply.Tool, Output: reply.Output})
		}
		return nil
	}
}

// saysJSON reports whether a Content-Type is JSON's: application/json or application/…+json,
// with any parameters. Home Assistant's webhook-conversation always sends application/json
// (docs/peers.md#home-assistant). A missing one is refused too: it is what a page's fetch with
// an untyped body sends without a preflight (docs/security.md#req-39).
func saysJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// readVoiceRequest decodes the webhook's body, streaming, up to voice.MaxRequestBody; its
// errors are apiErrors (400, 413).
func readVoiceRequest(w http.ResponseWriter, r *http.Request) (voice.WebhookRequest, error) {
	tooLarge := apiError{http.StatusRequestEntityTooLarge, "the body is larger than 1 MiB"}
	if r.ContentLength > voice.MaxRequestBody {
		return voice.WebhookRequest{}, tooLarge
	}
	req, err := voice.DecodeRequest(http.MaxBytesReader(w, r.Body, voice.MaxRequestBody))
	var tooBig *http.MaxBytesError
	var bad *voice.RequestError
	switch {
	case errors.As(err, &tooBig):
		return req, tooLarge
	case errors.As(err, &bad):
		return req, apiError{http.StatusBadRequest, "the body is not a webhook request: " + bad.Msg}
	case err != nil:
		return req, apiError{http.StatusBadRequest, "could not read the body"}
	case req.Conversation == "":
		return req, apiError{http.StatusBadRequest, "conversation_id is required"}
	case len(req.Conversation) > maxConversationID:
		return req, apiError{http.StatusBadRequest, "conversation_id is too long"}
	case strings.TrimSpace(req.Text) == "":
		return req, apiError{http.StatusBadRequest, "text (or query, or a user message) is required"}
	}
	return req, nil
}

// safeTurn runs a turn; a panic in it is logged and answered in words, not with a 500 the
// front end would read out as a webhook error.
func safeTurn(ctx context.Context, turner VoiceTurner, req voice.Request, log *slog.Logger) (reply voice.Reply) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("voice: turn panicked", "panic", v)
			reply = voice.Reply{Speech: "Something went wrong on my side; the daemon log says what.", Outcome: voice.OutcomeError}
			reply.Output = reply.Speech
		}
	}()
	return turner.Turn(ctx, req)
}

// requestToken reads a bearer token, or the password of HTTP Basic auth, which is all Home
// Assistant's webhook-conversation integration can send.
func requestToken(r *http.Request) string {
	if _, pass, ok := r.BasicAuth(); ok {
		return pass
	}
	h := r.Header.Get("Authorization")
	if scheme, token, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token)
	}
	return ""
}

// wantsPlainText reports whether the client asked for the speech alone.
func wantsPlainText(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "text/plain":
			return true
		case "application/json", "*/*":
			return false
		}
	}
	return false
}
