package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"maven/app/voice"
)

// VoiceTurner handles one utterance (voice.Service).
type VoiceTurner interface {
	Turn(ctx context.Context, conversation, text string) voice.Reply
}

// TokenChecker checks the webhook's bearer token in constant time (bearer.Tokens).
type TokenChecker interface {
	Check(token string) bool
}

// maxVoiceBody is the largest webhook body read (DESIGN.md: bodies over 8 KiB get 413).
const maxVoiceBody = 8 << 10

// maxConversationID bounds the ids kept in memory for confirm turns.
const maxConversationID = 256

// voiceRequest is the body of POST /voice. Besides Maven's own shape it accepts what Home
// Assistant's webhook-conversation integration sends: `query`, or the last `messages` entry
// whose role is "user". Other fields that integration sends are ignored.
type voiceRequest struct {
	ConversationID string `json:"conversation_id"`
	Text           string `json:"text"`
	Query          string `json:"query"`
	Messages       []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func (r voiceRequest) utterance() string {
	switch {
	case strings.TrimSpace(r.Text) != "":
		return r.Text
	case strings.TrimSpace(r.Query) != "":
		return r.Query
	}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// voiceResponse is the webhook's answer. Output repeats Speech for front ends (Home Assistant's
// webhook-conversation) that read that field.
type voiceResponse struct {
	Speech       string `json:"speech"`
	Outcome      string `json:"outcome"`
	ExpectsReply bool   `json:"expects_reply"`
	Tool         string `json:"tool"`
	Output       string `json:"output"`
}

// voicePost is POST /voice: authenticate, read, turn, answer. The token only lets a front end
// submit utterances; it can never enable a tool or satisfy a step-up.
// limit is read against now, so tests can move time.
func voicePost(turner VoiceTurner, tokens TokenChecker, limit *rate.Limiter, now func() time.Time) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !tokens.Check(requestToken(r)) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="maven", Basic realm="maven"`)
			return apiError{http.StatusUnauthorized, "missing or wrong voice token"}
		}
		if !limit.AllowN(now(), 1) {
			w.Header().Set("Retry-After", "1")
			return apiError{http.StatusTooManyRequests, "too many requests"}
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxVoiceBody))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return apiError{http.StatusRequestEntityTooLarge, "the body is larger than 8 KiB"}
		case err != nil:
			return apiError{http.StatusBadRequest, "could not read the body"}
		}
		var req voiceRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return apiError{http.StatusBadRequest, "the body is not a JSON object of the expected shape"}
		}
		text := req.utterance()
		switch {
		case req.ConversationID == "":
			return apiError{http.StatusBadRequest, "conversation_id is required"}
		case len(req.ConversationID) > maxConversationID:
			return apiError{http.StatusBadRequest, "conversation_id is too long"}
		case strings.TrimSpace(text) == "":
			return apiError{http.StatusBadRequest, "text (or query, or a user message) is required"}
		}

		reply := turner.Turn(r.Context(), req.ConversationID, text)
		w.Header().Set("Cache-Control", "no-store")
		if wantsPlainText(r) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, reply.Speech)
			return nil
		}
		writeJSON(w, http.StatusOK, voiceResponse{Speech: reply.Speech, Outcome: string(reply.Outcome),
			ExpectsReply: reply.ExpectsReply, Tool: reply.Tool, Output: reply.Speech})
		return nil
	}
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

// The webhook's rate limit: a person speaks a few turns a minute; a leaked token must not be
// able to hammer tools.
const (
	voiceRate  rate.Limit = 5  // turns per second, sustained
	voiceBurst int        = 30 // turns at once
)
