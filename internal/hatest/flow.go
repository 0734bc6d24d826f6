package hatest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// AuthenticateHeader is what a 401's WWW-Authenticate says (auth.py): where the server's
// protected-resource metadata is, resolved against the MCP server's URL, and the scopes it
// asks for.
type AuthenticateHeader struct {
	ResourceMetadataURL string
	Scopes              []string
}

var (
	resourceMetadataRE = regexp.MustCompile(`resource_metadata="([^"]+)"`)
	scopeRE            = regexp.MustCompile(`scope="([^"]+)"`)
)

// authenticateHeader is AuthenticateHeader.from_header: nil without a resource_metadata.
func authenticateHeader(serverURL string, h http.Header) *AuthenticateHeader {
	m := resourceMetadataRE.FindStringSubmatch(h.Get("WWW-Authenticate"))
	if m == nil {
		return nil
	}
	base, err := url.Parse(serverURL)
	if err != nil {
		return nil
	}
	ref, err := url.Parse(m[1])
	if err != nil {
		return nil
	}
	a := &AuthenticateHeader{ResourceMetadataURL: base.ResolveReference(ref).String()}
	if s := scopeRE.FindStringSubmatch(h.Get("WWW-Authenticate")); s != nil {
		a.Scopes = strings.Split(s[1], " ")
	}
	return a
}

// The ways validate_input fails.
var (
	errCannotConnect       = errors.New("cannot connect")
	errTimeoutConnect      = errors.New("timeout connecting")
	errMissingCapabilities = errors.New("the MCP server does not support the 'Tools' capability")
)

// invalidAuth is validate_input's InvalidAuth: a 401, with what its header said.
type invalidAuth struct{ header *AuthenticateHeader }

func (invalidAuth) Error() string { return "invalid auth" }

// validateInput is validate_input: a session at url, with the token if any, whose server must
// offer tools; it returns the server's name.
func (ha *HomeAssistant) validateInput(ctx context.Context, serverURL, token string) (string, error) {
	if u, err := url.Parse(serverURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &FormError{Key: "invalid_url", Err: fmt.Errorf("%q is not a URL", serverURL)}
	}
	s, res, err := ha.openSession(ctx, serverURL, token)
	if err != nil {
		var se *StatusError
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return "", fmt.Errorf("%w: %w", errTimeoutConnect, err)
		case errors.As(err, &se) && se.Code == http.StatusUnauthorized:
			return "", invalidAuth{authenticateHeader(serverURL, se.Header)}
		}
		return "", fmt.Errorf("%w: %w", errCannotConnect, err)
	}
	defer s.Close()
	if res.Capabilities == nil || res.Capabilities.Tools == nil {
		return "", errMissingCapabilities
	}
	return res.ServerInfo.Name, nil
}

// Flow is a config flow of the integration in progress.
type Flow struct {
	ha     *HomeAssistant
	id     string
	url    string
	header *AuthenticateHeader
	oauth  *oauthConfig
	scope  []string
	impl   *oauthImpl
	// AuthorizeURL is the external step's URL (async_external_step(step_id="auth")), which the
	// frontend opens in the user's browser.
	AuthorizeURL string
	back         chan callbackInput
}

// AddIntegration is the user adding the integration and typing the server's URL
// (async_step_user). A server that needs no auth makes an entry at once (Flow nil). One that
// answers 401 is discovered, Home Assistant registers with it, and the flow stops at its
// external step: open Flow.AuthorizeURL in the user's browser, then call Finish. An abort is
// an *Abort, the form shown again a *FormError.
func (ha *HomeAssistant) AddIntegration(ctx context.Context, serverURL string) (*Flow, *Entry, error) {
	title, err := ha.validateInput(ctx, serverURL, "")
	var ia invalidAuth
	var fe *FormError
	switch {
	case err == nil:
		return nil, &Entry{ha: ha, Title: title, URL: serverURL}, nil
	case errors.As(err, &ia):
		f := &Flow{ha: ha, id: randomID(), url: serverURL, header: ia.header, back: make(chan callbackInput, 1)}
		if err := f.authDiscovery(ctx); err != nil {
			return nil, nil, err
		}
		return f, nil, nil
	case errors.Is(err, errMissingCapabilities):
		return nil, nil, &Abort{Reason: "missing_capabilities", Err: err}
	case errors.As(err, &fe):
		return nil, nil, fe
	case errors.Is(err, errTimeoutConnect):
		return nil, nil, &FormError{Key: "timeout_connect", Err: err}
	case errors.Is(err, errCannotConnect):
		return nil, nil, &FormError{Key: "cannot_connect", Err: err}
	}
	return nil, nil, &FormError{Key: "unknown", Err: err}
}

// authDiscovery is async_step_auth_discovery: the protected-resource metadata the 401 named
// (RFC 9728), else the server's own URL; the authorization server's metadata (RFC 8414); the
// scopes (_select_scopes); then dynamic registration if the server advertises it, else the
// application credential; then the authorize URL.
func (f *Flow) authDiscovery(ctx context.Context) error {
	asURL := f.url
	var prm *resourceMetadata
	if f.header != nil {
		var err error
		if prm, err = f.ha.discoverProtectedResource(ctx, f.header.ResourceMetadataURL, f.url); err != nil {
			return discoveryAbort(err)
		}
		// "Use the first authorization server from the resource metadata."
		asURL = prm.AuthorizationServers[0]
	}
	cfg, err := f.ha.discoverAuthorizationServer(ctx, asURL)
	if err != nil {
		return discoveryAbort(err)
	}
	f.oauth = cfg
	switch {
	case f.header != nil && len(f.header.Scopes) > 0:
		f.scope = f.header.Scopes
	case prm != nil && len(prm.ScopesSupported) > 0:
		f.scope = prm.ScopesSupported
	default:
		f.scope = cfg.scopes
	}
	if cfg.registrationEndpoint != "" {
		if f.impl, err = f.ha.registeredClient(ctx, cfg, f.scope); err != nil {
			return err
		}
	} else if c := f.ha.opts.Credential; c != nil {
		// An application credential's implementation is MCPAuthImplementation: PKCE too, and
		// the secret in the token request's body (LocalOAuth2Implementation._token_request).
		f.impl = &oauthImpl{ha: f.ha, clientID: c.ClientID, clientSecret: c.ClientSecret, method: authPost, pkce: newVerifier(),
			authorizeURL: cfg.authorizeURL, tokenURL: cfg.tokenURL, redirectURI: f.ha.RedirectURI()}
	} else {
		return &Abort{Reason: "missing_credentials"}
	}
	f.AuthorizeURL = f.impl.authorizeRequest(f.ha.encodeState(f.id, f.impl.redirectURI), f.extraAuthorizeData())
	f.ha.mu.Lock()
	f.ha.flows[f.id] = f
	f.ha.mu.Unlock()
	return nil
}

// extraAuthorizeData is the flow's extra_authorize_data: "params to ensure we get back a
// refresh token", and the scopes if there are any. No resource: the flow names none.
func (f *Flow) extraAuthorizeData() [][2]string {
	extra := [][2]string{{"access_type", "offline"}, {"prompt", "consent"}}
	if f.scope != nil {
		extra = append(extra, [2]string{"scope", strings.Join(f.scope, " ")})
	}
	return extra
}

func discoveryAbort(err error) error {
	var a *Abort
	switch {
	case errors.As(err, &a):
		return a
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, errTimeoutConnect):
		return &Abort{Reason: "timeout_connect", Err: err}
	case errors.Is(err, errCannotConnect):
		return &Abort{Reason: "cannot_connect", Err: err}
	}
	return &Abort{Reason: "unknown", Err: err}
}

// Finish waits for the user's browser to come back to Home Assistant's callback, then ends the
// flow: async_step_creation exchanges the code (aborting with oauth_unauthorized, oauth_failed
// or oauth_error), and async_oauth_create_entry checks the token opens the server.
func (f *Flow) Finish(ctx context.Context) (*Entry, error) {
	var in callbackInput
	select {
	case in = <-f.back:
	case <-ctx.Done():
		return nil, fmt.Errorf("the browser never came back to Home Assistant: %w", ctx.Err())
	}
	if in.err != "" {
		return nil, &Abort{Reason: "user_rejected_authorize", Err: errors.New(in.err)}
	}
	token, err := f.impl.exchange(ctx, in.code, in.redirectURI)
	if err != nil {
		return nil, err
	}
	title, err := f.ha.validateInput(ctx, f.url, token.AccessToken)
	switch {
	case errors.Is(err, errMissingCapabilities):
		return nil, &Abort{Reason: "missing_capabilities", Err: err}
	case errors.Is(err, errTimeoutConnect):
		return nil, &Abort{Reason: "timeout_connect", Err: err}
	case errors.Is(err, errCannotConnect):
		return nil, &Abort{Reason: "cannot_connect", Err: err}
	case err != nil:
		return nil, &Abort{Reason: "unknown", Err: err}
	}
	return &Entry{ha: f.ha, Title: title, URL: f.url, AuthorizationURL: f.oauth.authorizeURL, TokenURL: f.oauth.tokenURL,
		Scope: f.scope, ClientID: f.impl.clientID, impl: f.impl, token: token}, nil
}
