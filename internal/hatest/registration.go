package hatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// The token endpoint's authentication methods Home Assistant can present, public clients
// first (const.py's SUPPORTED_TOKEN_ENDPOINT_AUTH_METHODS).
const (
	authNone  = "none"
	authPost  = "client_secret_post"
	authBasic = "client_secret_basic"
)

var supportedAuthMethods = []string{authNone, authPost, authBasic}

// errRegistration is ClientRegistrationError, errSecretExpires its ClientSecretExpiresError.
var (
	errRegistration  = errors.New("client registration failed")
	errSecretExpires = fmt.Errorf("%w: the authorization server issued a client secret that expires", errRegistration)
)

// storedCredential is an application credential a registration stored, with what it was
// registered for (registration.py's RegisteredClientIdentity).
type storedCredential struct {
	authorizeURL, tokenURL, redirectURI string
	scopes                              []string // sorted, unique
	clientID, clientSecret, method      string
}

// registeredClient is _async_register_dynamic_client: a client stored before for this
// authorization server, redirect URI and scopes is used again; else Home Assistant registers
// one (RFC 7591) and stores it. Its failures are the flow's aborts.
func (ha *HomeAssistant) registeredClient(ctx context.Context, cfg *oauthConfig, scopes []string) (*oauthImpl, error) {
	redirect := ha.RedirectURI()
	norm := normalizedScopes(scopes)
	var stored *storedCredential
	for i, c := range ha.credentials {
		if c.authorizeURL == cfg.authorizeURL && c.tokenURL == cfg.tokenURL && c.redirectURI == redirect && slices.Equal(c.scopes, norm) {
			stored = &ha.credentials[i] // "Reusing dynamically registered client"
		}
	}
	if stored == nil {
		c, err := ha.registerClient(ctx, cfg.registrationEndpoint, redirect, cfg.authMethods, scopes)
		switch {
		case errors.Is(err, errSecretExpires):
			return nil, &Abort{Reason: "oauth_secret_expires", Err: err}
		case errors.Is(err, errRegistration):
			return nil, &Abort{Reason: "oauth_registration_failed", Err: err}
		case errors.Is(err, context.DeadlineExceeded):
			return nil, &Abort{Reason: "timeout_connect", Err: err}
		case err != nil:
			return nil, &Abort{Reason: "cannot_connect", Err: err}
		}
		c.authorizeURL, c.tokenURL, c.redirectURI, c.scopes = cfg.authorizeURL, cfg.tokenURL, redirect, norm
		ha.credentials = append(ha.credentials, c)
		stored = &c
	}
	secret := stored.clientSecret
	if stored.method == authNone {
		secret = "" // "Ignore a secret the server may have echoed"
	}
	return &oauthImpl{ha: ha, clientID: stored.clientID, clientSecret: secret, method: stored.method, pkce: newVerifier(),
		authorizeURL: stored.authorizeURL, tokenURL: stored.tokenURL, redirectURI: stored.redirectURI}, nil
}

func normalizedScopes(scopes []string) []string {
	out := slices.Clone(scopes)
	slices.Sort(out)
	return slices.Compact(out)
}

// registrationRequest is OAuthClientMetadata as model_dump(exclude_none=True) writes it, with
// application_type added.
type registrationRequest struct {
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope,omitempty"`
	ClientName              string   `json:"client_name"`
	ApplicationType         string   `json:"application_type"`
}

// registerClient is async_register_dynamic_client and _parse_registration_response.
func (ha *HomeAssistant) registerClient(ctx context.Context, endpoint, redirect string, methods, scopes []string) (storedCredential, error) {
	method := authBasic // RFC 8414's default when the metadata names none
	if methods != nil {
		i := slices.IndexFunc(supportedAuthMethods, func(m string) bool { return slices.Contains(methods, m) })
		if i < 0 {
			return storedCredential{}, fmt.Errorf("%w: no supported token endpoint auth method", errRegistration)
		}
		method = supportedAuthMethods[i]
	}
	body, err := json.Marshal(registrationRequest{RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: method,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		Scope: strings.Join(scopes, " "), ClientName: clientName, ApplicationType: "web"})
	if err != nil {
		return storedCredential{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return storedCredential{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := ha.http.Do(req)
	if err != nil {
		return storedCredential{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return storedCredential{}, err
	}
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusCreated {
		return storedCredential{}, fmt.Errorf("%w: registration failed with status %d", errRegistration, res.StatusCode)
	}
	return parseRegistration(raw, redirect, method, normalizedScopes(scopes))
}

// parseRegistration is _parse_registration_response: the redirect URI registered, the scopes
// granted, a client id, the method issued, its secret, and a secret that never expires.
func parseRegistration(raw []byte, redirect, requested string, scopes []string) (storedCredential, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var p map[string]any
	if err := dec.Decode(&p); err != nil || p == nil {
		return storedCredential{}, fmt.Errorf("%w: the response was not a JSON object", errRegistration)
	}
	if v, ok := p["redirect_uris"]; ok && v != nil {
		list, ok := v.([]any)
		if !ok || !slices.ContainsFunc(list, func(u any) bool { return u == redirect }) {
			return storedCredential{}, fmt.Errorf("%w: the response did not include the redirect URI", errRegistration)
		}
	}
	if v, ok := p["scope"]; ok && v != nil {
		s, ok := v.(string)
		granted := strings.Fields(s)
		if !ok || slices.ContainsFunc(scopes, func(sc string) bool { return !slices.Contains(granted, sc) }) {
			return storedCredential{}, fmt.Errorf("%w: the response did not grant the requested scopes", errRegistration)
		}
	}
	c := storedCredential{method: requested}
	if c.clientID, _ = p["client_id"].(string); c.clientID == "" {
		return storedCredential{}, fmt.Errorf("%w: the response did not include client_id", errRegistration)
	}
	if v, ok := p["token_endpoint_auth_method"]; ok && v != nil {
		if c.method, _ = v.(string); !slices.Contains(supportedAuthMethods, c.method) {
			return storedCredential{}, fmt.Errorf("%w: token_endpoint_auth_method %v is not supported", errRegistration, v)
		}
	}
	secret, isString := p["client_secret"].(string)
	switch {
	case c.method == authNone && p["client_secret"] != nil && !isString:
		return storedCredential{}, fmt.Errorf("%w: client_secret was invalid", errRegistration)
	case c.method != authNone && secret == "":
		return storedCredential{}, fmt.Errorf("%w: the response did not include client_secret", errRegistration)
	}
	c.clientSecret = secret
	return c, rejectExpiringSecret(p["client_secret_expires_at"])
}

// rejectExpiringSecret is _reject_expiring_client_secret: RFC 7591's 0 is a secret that never
// expires; any other time is a finite lifetime, which Home Assistant refuses, having no way to
// rotate application credentials.
func rejectExpiringSecret(v any) error {
	if v == nil {
		return nil
	}
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE-") {
		return fmt.Errorf("%w: client_secret_expires_at was invalid", errRegistration)
	}
	if n == "0" {
		return nil
	}
	return errSecretExpires
}
