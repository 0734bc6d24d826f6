package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-webauthn/webauthn/protocol"
)

// maxJSONBody bounds the WebAuthn endpoints' bodies; an attestation is a few kilobytes.
const maxJSONBody = 64 << 10

// The six ceremonies (sign-in, setup, adding a passkey, step-up, unlock, enrolling a passkey in
// the vault) share one shape: a begin endpoint answers with the options auth made for
// navigator.credentials (sendOptions), and a finish endpoint hands the browser's answer to auth
// (finishAssertion, finishCreation).

// ceremonyStart is a begin endpoint's answer: the options for navigator.credentials as
// go-webauthn made them, and, for a step-up, what the gesture will approve.
type ceremonyStart struct {
	Options any    `json:"options"`
	Prompt  string `json:"prompt,omitempty"`
}

// sendOptions answers a begin endpoint with the options auth made, or fails with its error.
func sendOptions(w http.ResponseWriter, options any, err error) error {
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ceremonyStart{Options: options})
	return nil
}

// finishBody is what maven.js posts to finish a ceremony.
type finishBody struct {
	Name       string          `json:"name"` // registrations: what to call the passkey
	Credential json.RawMessage `json:"credential"`
}

// finishAssertion reads a finish request and hands its assertion to verify (one of auth's
// Finish… methods) for the ceremony sid began. An answer go-webauthn cannot parse still goes, as
// nil, so the pending ceremony is consumed: one attempt per ceremony. The parse failure is
// joined to verify's error, for the log.
func finishAssertion[T any](w http.ResponseWriter, r *http.Request, sid string,
	verify func(context.Context, string, *protocol.ParsedCredentialAssertionData) (T, error)) (T, error) {
	var body finishBody
	if err := readJSON(w, r, &body); err != nil {
		var zero T
		return zero, err
	}
	resp, perr := protocol.ParseCredentialRequestResponseBody(bytes.NewReader(body.Credential))
	if perr != nil {
		resp, perr = nil, fmt.Errorf("%w: %w", errBadCredential, perr)
	}
	out, err := verify(r.Context(), sid, resp)
	if err != nil {
		return out, errors.Join(err, perr)
	}
	return out, nil
}

// finishCreation is finishAssertion for a registration, which also names the new passkey.
func finishCreation[T any](w http.ResponseWriter, r *http.Request, sid string,
	verify func(context.Context, string, *protocol.ParsedCredentialCreationData, string) (T, error)) (T, error) {
	var body finishBody
	if err := readJSON(w, r, &body); err != nil {
		var zero T
		return zero, err
	}
	resp, perr := protocol.ParseCredentialCreationResponseBody(bytes.NewReader(body.Credential))
	if perr != nil {
		resp, perr = nil, fmt.Errorf("%w: %w", errBadCredential, perr)
	}
	out, err := verify(r.Context(), sid, resp, body.Name)
	if err != nil {
		return out, errors.Join(err, perr)
	}
	return out, nil
}

// origin is the origin a ceremony is bound to: the one the browser says it is on. auth refuses
// it unless it is configured.
func origin(r *http.Request) string { return r.Header.Get("Origin") }
