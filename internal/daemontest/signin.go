package daemontest

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"maven/app/auth"
	"maven/app/auth/authtest"
)

// Enroll lets the registered passkey id unlock Maven, as maven.js does right after registering
// it: with no vault yet this creates it (OAuth tokens and secrets are sealed there), and the
// recovery code it returns is shown once.
func (b *Browser) Enroll(ctx context.Context, a *authtest.Authenticator, id int64) (string, error) {
	var done struct {
		OK           bool   `json:"ok"`
		RecoveryCode string `json:"recovery_code"`
		Error        string `json:"error"`
	}
	err := b.Ceremony(ctx, "/passkeys/"+strconv.FormatInt(id, 10)+"/enroll/begin", "/passkeys/enroll/finish",
		map[string]any{}, a.Get, nil, &done)
	if err == nil && !done.OK {
		err = fmt.Errorf("enroll passkey %d: %s", id, done.Error)
	}
	return done.RecoveryCode, err
}

// SetSecret seals value under name as the /secrets page does, behind its step-up.
func (b *Browser) SetSecret(ctx context.Context, a *authtest.Authenticator, name, value string) error {
	if err := b.StepUp(ctx, a, auth.One(auth.ActionSetSecret, 0, name)); err != nil {
		return err
	}
	form := url.Values{"name": {name}, "value": {value}}
	status, raw, err := b.Do(ctx, http.MethodPost, "/secrets", "application/x-www-form-urlencoded", []byte(form.Encode()))
	if err != nil {
		return err
	}
	if status != http.StatusSeeOther {
		return fmt.Errorf("POST /secrets: %d %s", status, bytes.TrimSpace(raw))
	}
	return nil
}

var signInRE = regexp.MustCompile(`<form\b[^>]*\bclass="sign-in\b[^>]*>`)

// SignInShown returns the fingerprint of server's Sign in button on the servers card, and
// whether the card shows one.
func (b *Browser) SignInShown(ctx context.Context, server string) (string, bool, error) {
	status, card, err := b.Do(ctx, http.MethodGet, "/tools/servers", "", nil)
	if err != nil {
		return "", false, err
	}
	if status != http.StatusOK {
		return "", false, fmt.Errorf("GET /tools/servers: %d %s", status, bytes.TrimSpace(card))
	}
	for _, form := range signInRE.FindAll(card, -1) {
		attrs := map[string]string{}
		for _, a := range attrRE.FindAllSubmatch(form, -1) {
			attrs[string(a[1])] = html.UnescapeString(string(a[2]))
		}
		if attrs["data-sign-in"] == server {
			return attrs["data-fingerprint"], true, nil
		}
	}
	return "", false, nil
}

// SignIn signs Maven in to server as the owner does from the servers card: the Sign in button
// asks for a step-up naming what the card shows (the server, its authorization server and the
// scopes), then sends the browser to the authorization server, which sends it back to Maven's
// callback. authorize plays the owner at the authorization server: given the authorization
// URL, it returns where the authorization server redirects the browser (Maven's callback), as
// oauthtest.Authorize does for one that approves at once.
func (b *Browser) SignIn(ctx context.Context, a *authtest.Authenticator, server string, authorize func(ctx context.Context, authURL string) (*url.URL, error)) error {
	fingerprint, shown, err := b.SignInShown(ctx, server)
	if err != nil {
		return err
	}
	if !shown {
		return fmt.Errorf("the servers card shows no Sign in for %q", server)
	}
	if err := b.StepUp(ctx, a, auth.One(auth.ActionSignIn, 0, fingerprint)); err != nil {
		return err
	}
	form := url.Values{"server": {server}, "fingerprint": {fingerprint}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/servers/sign-in", bytes.NewReader([]byte(form.Encode())))
	if err != nil {
		return err
	}
	status, location, body, err := b.send(req, "application/x-www-form-urlencoded")
	if err != nil {
		return err
	}
	if status != http.StatusSeeOther || location == "" {
		return fmt.Errorf("POST /servers/sign-in: %d %s", status, body)
	}
	back, err := authorize(ctx, location)
	if err != nil {
		return fmt.Errorf("at the authorization server: %w", err)
	}
	callback := back.RequestURI()
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, b.base+callback, nil)
	if err != nil {
		return err
	}
	status, location, body, err = b.send(req, "")
	if err != nil {
		return err
	}
	if status != http.StatusSeeOther || location != "/tools#mcp-servers" {
		return fmt.Errorf("GET %s: %d %s", callback, status, body)
	}
	return nil
}

// send sends req as a page of the origin would, and returns the status, the Location and the
// body.
func (b *Browser) send(req *http.Request, contentType string) (int, string, []byte, error) {
	if b.base != b.Origin {
		req.Host = strings.TrimPrefix(b.Origin, "http://")
	}
	if req.Method != http.MethodGet {
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Origin", b.Origin)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, "", nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), bytes.TrimSpace(body.Bytes()), nil
}
