package e2e

// The harness: virtual WebAuthn authenticators through CDP's WebAuthn domain.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// authenticatorOptions are CDP's WebAuthn.VirtualAuthenticatorOptions.
type authenticatorOptions struct {
	Protocol            string `json:"protocol"`  // "ctap2" or "u2f"
	Transport           string `json:"transport"` // "internal", "usb", "nfc", "ble", "hybrid"
	HasResidentKey      bool   `json:"hasResidentKey"`
	HasUserVerification bool   `json:"hasUserVerification"`
	IsUserVerified      bool   `json:"isUserVerified"`
	HasPRF              bool   `json:"hasPrf"`
	// Backup flags of the credentials it creates.
	DefaultBackupEligibility bool `json:"defaultBackupEligibility"`
	DefaultBackupState       bool `json:"defaultBackupState"`
}

// passkey is a platform authenticator with discoverable credentials, user verification that
// succeeds, and PRF: what a phone or laptop passkey offers. Change fields for other kinds.
func passkey() authenticatorOptions {
	return authenticatorOptions{
		Protocol: "ctap2", Transport: "internal",
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, HasPRF: true,
	}
}

var (
	cdpMu       sync.Mutex
	cdpSessions = map[playwright.Page]playwright.CDPSession{}
)

// cdpSession returns the page's DevTools session with the WebAuthn domain enabled, made once per
// page: an authenticator is only reachable through the session that added it.
func cdpSession(t *testing.T, page playwright.Page) playwright.CDPSession {
	t.Helper()
	cdpMu.Lock()
	s, ok := cdpSessions[page]
	cdpMu.Unlock()
	if ok {
		return s
	}
	// Now and then, with many pages starting at once on two cores, Chromium never answers
	// WebAuthn.enable on a fresh session. A command with no answer must not hang the suite (nor,
	// through a shared lock, every other test): give it a deadline and one more session.
	var err error
	for attempt := 1; ; attempt++ {
		s, err = page.Context().NewCDPSession(page)
		if err != nil {
			t.Fatalf("new CDP session: %v", err)
		}
		// enableUI false: no UI for the virtual authenticator, ceremonies answer straight away.
		_, err = sendWithin(s, "WebAuthn.enable", map[string]any{"enableUI": false}, cdpDeadline)
		if err == nil {
			break
		}
		s.Detach()
		if attempt == 2 {
			t.Fatalf("WebAuthn.enable: %v", err)
		}
		t.Logf("WebAuthn.enable: %v; trying a new CDP session", err)
	}
	cdpMu.Lock()
	cdpSessions[page] = s
	cdpMu.Unlock()
	page.OnClose(func(playwright.Page) {
		cdpMu.Lock()
		delete(cdpSessions, page)
		cdpMu.Unlock()
	})
	return s
}

// cdpDeadline bounds one CDP command: they answer in milliseconds when they answer at all.
const cdpDeadline = 15 * time.Second

// sendWithin sends a CDP command and gives up after d.
func sendWithin(s playwright.CDPSession, method string, params map[string]any, d time.Duration) (any, error) {
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := s.Send(method, params)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(d):
		return nil, fmt.Errorf("no answer within %s", d)
	}
}

// cdpSend sends a CDP command, failing the test on error, and decodes the result into out (if
// not nil).
func cdpSend(t *testing.T, cdp playwright.CDPSession, method string, params any, out any) {
	t.Helper()
	var p map[string]any
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
	}
	res, err := sendWithin(cdp, method, p, cdpDeadline)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if out == nil {
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s result %s: %v", method, b, err)
	}
}

// addAuthenticator attaches a virtual authenticator to the page and returns its id. The browser
// then uses it for every WebAuthn ceremony on that page, without any prompt. Chromium allows one
// "internal" authenticator per page: give a second one another transport ("usb").
func addAuthenticator(t *testing.T, page playwright.Page, opts authenticatorOptions) string {
	t.Helper()
	var res struct {
		AuthenticatorID string `json:"authenticatorId"`
	}
	cdpSend(t, cdpSession(t, page), "WebAuthn.addVirtualAuthenticator", map[string]any{"options": opts}, &res)
	return res.AuthenticatorID
}

// replaceAuthenticator removes the authenticator and adds a fresh one with opts, holding copies
// of the old one's credentials (with their sign counts and backup flags but not their PRF
// secrets: CDP cannot carry those, so the copies answer no PRF). It returns the new id.
func replaceAuthenticator(t *testing.T, page playwright.Page, id string, opts authenticatorOptions) string {
	t.Helper()
	cdp := cdpSession(t, page)
	var res struct {
		Credentials []map[string]any `json:"credentials"`
	}
	cdpSend(t, cdp, "WebAuthn.getCredentials", map[string]any{"authenticatorId": id}, &res)
	cdpSend(t, cdp, "WebAuthn.removeVirtualAuthenticator", map[string]any{"authenticatorId": id}, nil)
	newID := addAuthenticator(t, page, opts)
	for _, c := range res.Credentials {
		cdpSend(t, cdp, "WebAuthn.addCredential", map[string]any{"authenticatorId": newID, "credential": c}, nil)
	}
	return newID
}

// setUserVerified makes the authenticator's next user verifications succeed or fail. Chromium
// answers a failed verification with NotAllowedError in the page, so the server never sees it,
// and the authenticator stays unusable after one (switching back to true does not help): use
// replaceAuthenticator to go on. To make the server see an assertion without UV, use
// setResponseOverrides with IsBadUV.
func setUserVerified(t *testing.T, cdp playwright.CDPSession, id string, verified bool) {
	t.Helper()
	cdpSend(t, cdp, "WebAuthn.setUserVerified", map[string]any{"authenticatorId": id, "isUserVerified": verified}, nil)
}

// responseOverrides are CDP's WebAuthn.setResponseOverrideBits: they corrupt the authenticator's
// next responses.
type responseOverrides struct {
	IsBogusSignature bool `json:"isBogusSignature"`
	IsBadUV          bool `json:"isBadUV"` // UV flag cleared in the response
	IsBadUP          bool `json:"isBadUP"` // UP flag cleared in the response
}

// setResponseOverrides sets (or, with the zero value, clears) the authenticator's response
// overrides.
func setResponseOverrides(t *testing.T, cdp playwright.CDPSession, id string, o responseOverrides) {
	t.Helper()
	params := map[string]any{"authenticatorId": id}
	b, _ := json.Marshal(o)
	json.Unmarshal(b, &params)
	cdpSend(t, cdp, "WebAuthn.setResponseOverrideBits", params, nil)
}

// virtualCredential is CDP's WebAuthn.Credential. Binary fields are standard base64.
type virtualCredential struct {
	CredentialID         string `json:"credentialId"`
	IsResidentCredential bool   `json:"isResidentCredential"`
	RPID                 string `json:"rpId"`
	PrivateKey           string `json:"privateKey"`
	UserHandle           string `json:"userHandle"`
	SignCount            int    `json:"signCount"`
	LargeBlob            string `json:"largeBlob,omitempty"`
	BackupEligibility    *bool  `json:"backupEligibility,omitempty"`
	BackupState          *bool  `json:"backupState,omitempty"`
	UserName             string `json:"userName,omitempty"`
	UserDisplayName      string `json:"userDisplayName,omitempty"`
}

// IDBase64URL is the credential id as the page and the server see it (unpadded base64url).
func (c virtualCredential) IDBase64URL() string {
	b, err := base64.StdEncoding.DecodeString(c.CredentialID)
	if err != nil {
		return c.CredentialID
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// virtualCredentials lists the credentials the authenticator holds.
func virtualCredentials(t *testing.T, cdp playwright.CDPSession, id string) []virtualCredential {
	t.Helper()
	var res struct {
		Credentials []virtualCredential `json:"credentials"`
	}
	cdpSend(t, cdp, "WebAuthn.getCredentials", map[string]any{"authenticatorId": id}, &res)
	return res.Credentials
}

// onlyCredential returns the authenticator's one credential, failing unless it holds exactly one.
func onlyCredential(t *testing.T, cdp playwright.CDPSession, id string) virtualCredential {
	t.Helper()
	creds := virtualCredentials(t, cdp, id)
	if len(creds) != 1 {
		t.Fatalf("authenticator holds %d credentials, want 1: %+v", len(creds), creds)
	}
	return creds[0]
}

// setCredentialProperties changes a credential's backup flags (BE, BS); nil leaves one as is.
func setCredentialProperties(t *testing.T, cdp playwright.CDPSession, id, credentialID string, backupEligibility, backupState *bool) {
	t.Helper()
	params := map[string]any{"authenticatorId": id, "credentialId": credentialID}
	if backupEligibility != nil {
		params["backupEligibility"] = *backupEligibility
	}
	if backupState != nil {
		params["backupState"] = *backupState
	}
	cdpSend(t, cdp, "WebAuthn.setCredentialProperties", params, nil)
}

// setSignCount replaces a credential with a copy whose signature counter is n, as a cloned
// authenticator would present it. CDP has no direct setter, so the credential is removed and
// added back, which loses its PRF secret: the copy answers no PRF.
func setSignCount(t *testing.T, cdp playwright.CDPSession, id, credentialID string, n int) {
	t.Helper()
	var res struct {
		Credential map[string]any `json:"credential"`
	}
	cdpSend(t, cdp, "WebAuthn.getCredential", map[string]any{"authenticatorId": id, "credentialId": credentialID}, &res)
	if res.Credential == nil {
		t.Fatalf("no credential %s", credentialID)
	}
	res.Credential["signCount"] = n
	cdpSend(t, cdp, "WebAuthn.removeCredential", map[string]any{"authenticatorId": id, "credentialId": credentialID}, nil)
	cdpSend(t, cdp, "WebAuthn.addCredential", map[string]any{"authenticatorId": id, "credential": res.Credential}, nil)
}

// evalJSON runs script in the page (a function expression, awaited if it returns a promise) with
// arg, and decodes its result into out.
func evalJSON(t *testing.T, page playwright.Page, script string, arg any, out any) {
	t.Helper()
	res, err := page.Evaluate(script, arg)
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("evaluate result %s: %v", b, err)
	}
}
