package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/go-webauthn/webauthn/protocol"
)

// maxJSONBody bounds the WebAuthn endpoints' bodies; an attestation is a few kilobytes.
const maxJSONBody = 64 << 10

// finishBody is what maven.js posts to finish a ceremony.
type finishBody struct {
	Name       string          `json:"name"` // registrations: what to call the passkey
	Credential json.RawMessage `json:"credential"`
}

// readJSON decodes r's body into v; anything malformed or too long is errBadRequest.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, maxJSONBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && err != io.EOF {
		return fmt.Errorf("%w: %w", errBadRequest, err)
	}
	return nil
}

// parseCreation parses a registration answer with go-webauthn's own parser. A parse failure
// still goes to auth (as nil), which consumes the pending ceremony: one attempt per ceremony.
func parseCreation(raw json.RawMessage) (*protocol.ParsedCredentialCreationData, error) {
	p, err := protocol.ParseCredentialCreationResponseBody(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadCredential, err)
	}
	return p, nil
}

// parseAssertion parses a sign-in or step-up answer; see parseCreation.
func parseAssertion(raw json.RawMessage) (*protocol.ParsedCredentialAssertionData, error) {
	p, err := protocol.ParseCredentialRequestResponseBody(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadCredential, err)
	}
	return p, nil
}

// origin is the origin a ceremony is bound to: the one the browser says it is on. auth refuses
// it unless it is configured.
func origin(r *http.Request) string { return r.Header.Get("Origin") }
