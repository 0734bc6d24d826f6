package voice

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MaxRequestBody is the largest webhook body read: Home Assistant sends the whole chat log and
// every exposed entity (≈28 KiB for 150 entities; large homes send far more).
const MaxRequestBody = 1 << 20

// WebhookRequest is what a webhook body says, reduced to what a turn needs.
type WebhookRequest struct {
	Conversation string
	// Text is the utterance: "text" (Maven's own shape), else "query", else the content of the
	// last "messages" entry whose role is "user" (Home Assistant's webhook-conversation).
	Text   string
	UserID string
	Stream bool // the answer is wanted as NDJSON
}

// buffers are the decoders' read buffers, reused: a turn allocates enough already.
var buffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 16<<10)
	return &b
}}

// RequestError is a body that is not JSON, or not the shape a webhook request has.
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

// DecodeRequest reads a webhook body as a stream and keeps only what a turn needs: the chat
// log (system prompt included) and exposed_entities are walked past, never held, and of the
// messages only the last user message is kept. The whole body is checked to be JSON. A
// failure to read is returned wrapped (an http.MaxBytesError stays visible to errors.As);
// anything wrong with the JSON is a *RequestError.
func DecodeRequest(r io.Reader) (WebhookRequest, error) {
	buf := buffers.Get().(*[]byte)
	defer buffers.Put(buf)
	d := &decoder{src: r, buf: (*buf)[:0]}
	req, err := d.request()
	if err != nil && d.readErr != nil {
		return WebhookRequest{}, fmt.Errorf("read the webhook body: %w", d.readErr)
	}
	return req, err
}

func (d *decoder) request() (WebhookRequest, error) {
	var req WebhookRequest
	var text, query, lastUser string
	if c, err := d.nonSpace(); err != nil || c != '{' {
		return req, d.bad(err, "the body is not a JSON object")
	}
	d.pos++
	err := d.members(func(key string) error {
		var err error
		switch key {
		case "conversation_id":
			req.Conversation, err = d.optString(key)
		case "text":
			text, err = d.optString(key)
		case "query":
			query, err = d.optString(key)
		case "user_id":
			req.UserID, err = d.optString(key)
		case "stream":
			req.Stream, err = d.optBool(key)
		case "messages":
			lastUser, err = d.lastUserMessage()
		default:
			err = d.skipValue(0)
		}
		return err
	})
	if err != nil {
		return req, err
	}
	if c, err := d.nonSpace(); err != io.EOF {
		return req, d.bad(err, fmt.Sprintf("unexpected %q after the JSON object", c))
	}
	switch {
	case text != "":
		req.Text = text
	case query != "":
		req.Text = query
	default:
		req.Text = lastUser
	}
	return req, nil
}

// lastUserMessage walks the messages array and keeps the content of the last user message.
func (d *decoder) lastUserMessage() (string, error) {
	c, err := d.nonSpace()
	if err != nil {
		return "", d.bad(err, "")
	}
	if c == 'n' {
		return "", d.literal("null")
	}
	if c != '[' {
		return "", &RequestError{"messages must be a list"}
	}
	d.pos++
	last := ""
	err = d.elements(func() error {
		c, err := d.nonSpace()
		if err == nil && c == 'n' {
			return d.literal("null")
		}
		if err != nil || c != '{' {
			return d.bad(err, "each message must be an object")
		}
		d.pos++
		role, content, haveContent := "", "", false
		err = d.members(func(key string) error {
			switch {
			case key == "role":
				var err error
				role, err = d.optString("a message's role")
				return err
			case key == "content" && (role == "" || role == "user"):
				// Kept only while it may be the user's; content before role is rare.
				var err error
				content, err = d.optString("a message's content")
				haveContent = true
				return err
			}
			return d.skipValue(0)
		})
		if err == nil && role == "user" && haveContent {
			last = content
		}
		return err
	})
	return last, err
}

// optString reads a string or null ("").
func (d *decoder) optString(what string) (string, error) {
	c, err := d.nonSpace()
	switch {
	case err != nil:
		return "", d.bad(err, "")
	case c == 'n':
		return "", d.literal("null")
	case c != '"':
		return "", &RequestError{what + " must be a string"}
	}
	raw, err := d.str(true)
	if err != nil {
		return "", err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", &RequestError{what + " is not a valid JSON string"}
	}
	return s, nil
}

// optBool reads true, false or null (false).
func (d *decoder) optBool(what string) (bool, error) {
	c, err := d.nonSpace()
	switch {
	case err != nil:
		return false, d.bad(err, "")
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return false, d.literal("null")
	}
	return false, &RequestError{what + " must be true or false"}
}

// errTruncated is a body that ends inside the JSON value.
var errTruncated = &RequestError{"the body ends before its JSON does"}

// bad returns the error of a failed read: the read error, a truncation, or msg.
func (d *decoder) bad(err error, msg string) error {
	switch {
	case d.readErr != nil:
		return d.readErr
	case errors.Is(err, io.EOF):
		return errTruncated
	case msg == "" && err != nil:
		return err
	}
	return &RequestError{msg}
}
