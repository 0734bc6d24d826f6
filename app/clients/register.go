package clients

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// How a client authenticates at the token endpoint.
const (
	authNone  = "none"
	authPost  = "client_secret_post"
	authBasic = "client_secret_basic"
)

// AuthMethods are the token endpoint authentication methods Maven takes, public clients first:
// Home Assistant picks the first it knows of what the metadata lists.
func AuthMethods() []string { return []string{authNone, authPost, authBasic} }

// The grant types a client may register.
const (
	grantCode    = "authorization_code"
	grantRefresh = "refresh_token"
)

// Limits of a client's metadata.
const (
	maxRedirectURIs   = 10
	maxRedirectURILen = 2000
	maxClientNameLen  = 100
	maxScopeLen       = 1000
	// unnamed is what a client that gave no name is called.
	unnamed = "Unnamed client"
)

// Registration is a dynamic client registration request (RFC 7591 section 2): the fields
// Maven reads; any other is ignored.
type Registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientName              string   `json:"client_name"`
	Scope                   string   `json:"scope"`
}

// Registered is the registration response (RFC 7591 section 3.2.1).
type Registered struct {
	ClientID         string `json:"client_id"`
	ClientSecret     string `json:"client_secret,omitempty"`
	ClientIDIssuedAt int64  `json:"client_id_issued_at"`
	// ClientSecretExpiresAt is 0, never, with a secret (Home Assistant refuses one that
	// expires), and absent without one.
	ClientSecretExpiresAt   *int64   `json:"client_secret_expires_at,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientName              string   `json:"client_name"`
	Scope                   string   `json:"scope,omitempty"`
}

// MetadataError refuses a registration, or a metadata document, for what it says: Code is RFC
// 7591's error code (invalid_redirect_uri, invalid_client_metadata), Description says why.
type MetadataError struct{ Code, Description string }

func (e *MetadataError) Error() string { return e.Code + ": " + e.Description }

// Is makes a MetadataError match ErrInvalid.
func (e *MetadataError) Is(target error) bool { return target == ErrInvalid }

func badMetadata(format string, args ...any) error {
	return &MetadataError{Code: "invalid_client_metadata", Description: fmt.Sprintf(format, args...)}
}

func badRedirect(format string, args ...any) error {
	return &MetadataError{Code: "invalid_redirect_uri", Description: fmt.Sprintf(format, args...)}
}

// Register registers a client (RFC 7591): a public one (token_endpoint_auth_method "none"), or
// one with a secret that never expires. It waits for the owner's consent, and is deleted if
// none comes within PendingLifetime; at most MaxPending wait at once (ErrTooMany beyond).
func (s *Service) Register(ctx context.Context, r Registration) (Registered, error) {
	c, err := checkRegistration(r)
	if err != nil {
		return Registered{}, err
	}
	c.ID = rand.Text()
	var secret string
	if c.AuthMethod != authNone {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return Registered{}, fmt.Errorf("generate a client secret: %w", err)
		}
		secret = base64.RawURLEncoding.EncodeToString(raw)
		sum := sha256.Sum256([]byte(secret))
		c.SecretHash = sum[:]
	}
	now := s.now()
	c.CreatedAt = now
	if err := s.store.Register(ctx, c, now.Add(-PendingLifetime), MaxPending); err != nil {
		return Registered{}, err
	}
	out := Registered{ClientID: c.ID, ClientSecret: secret, ClientIDIssuedAt: now.Unix(),
		RedirectURIs: c.RedirectURIs, TokenEndpointAuthMethod: c.AuthMethod, GrantTypes: c.GrantTypes,
		ResponseTypes: []string{"code"}, ClientName: c.Name, Scope: c.Scope}
	if secret != "" {
		never := int64(0)
		out.ClientSecretExpiresAt = &never
	}
	return out, nil
}

// checkRegistration is the pending client a registration asks for, or why it cannot be one.
func checkRegistration(r Registration) (Client, error) {
	c := Client{Kind: KindRegistered, State: StatePending, Name: r.ClientName, Scope: r.Scope,
		AuthMethod: r.TokenEndpointAuthMethod, AllTools: false}
	if c.AuthMethod == "" {
		c.AuthMethod = authBasic // RFC 7591's default
	}
	if !slices.Contains(AuthMethods(), c.AuthMethod) {
		return Client{}, badMetadata("token_endpoint_auth_method is one of %s, not %q", strings.Join(AuthMethods(), ", "), c.AuthMethod)
	}
	grants, err := checkGrants(r.GrantTypes, r.ResponseTypes)
	if err != nil {
		return Client{}, err
	}
	c.GrantTypes = grants
	if c.Name, err = checkClientName(r.ClientName); err != nil {
		return Client{}, err
	}
	if len(r.Scope) > maxScopeLen {
		return Client{}, badMetadata("scope is at most %d bytes", maxScopeLen)
	}
	if c.RedirectURIs, err = checkRedirectURIs(r.RedirectURIs); err != nil {
		return Client{}, err
	}
	return c, nil
}

// checkGrants refuses grant and response types beyond the code flow and its refresh tokens;
// the grant types are authorization_code by default (RFC 7591).
func checkGrants(grants, responses []string) ([]string, error) {
	if len(grants) == 0 {
		grants = []string{grantCode}
	}
	for _, g := range grants {
		if g != grantCode && g != grantRefresh {
			return nil, badMetadata("grant_types may hold %s and %s, not %q", grantCode, grantRefresh, g)
		}
	}
	if !slices.Contains(grants, grantCode) {
		return nil, badMetadata("grant_types must hold %s", grantCode)
	}
	for _, t := range responses {
		if t != "code" {
			return nil, badMetadata("response_types may hold only \"code\", not %q", t)
		}
	}
	grants = slices.Clone(grants)
	slices.Sort(grants)
	return slices.Compact(grants), nil
}

// checkClientName is the name a client gave, or unnamed; a name too long is refused. Hidden
// characters are not refused: the pages show them (docs/design.md#rule-25).
func checkClientName(name string) (string, error) {
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > maxClientNameLen {
		return "", badMetadata("client_name is at most %d characters of UTF-8", maxClientNameLen)
	}
	if strings.TrimSpace(name) == "" {
		return unnamed, nil
	}
	return name, nil
}

// checkRedirectURIs refuses redirect URIs that are missing, too many or too long, relative,
// carry a fragment, or would send a code in the clear: http is only for a loopback address
// (RFC 8252), and a private-use scheme (a native app's) must not be one a browser runs.
func checkRedirectURIs(uris []string) ([]string, error) {
	if len(uris) == 0 || len(uris) > maxRedirectURIs {
		return nil, badRedirect("redirect_uris holds 1 to %d URIs", maxRedirectURIs)
	}
	for _, raw := range uris {
		if err := checkRedirectURI(raw); err != nil {
			return nil, err
		}
	}
	return slices.Clone(uris), nil
}

// forbiddenSchemes run or read something in the browser instead of reaching an app.
var forbiddenSchemes = []string{"javascript", "data", "file", "vbscript", "about", "blob", "filesystem", "view-source", "ws", "wss"}

func checkRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case len(raw) > maxRedirectURILen:
		return badRedirect("a redirect URI is at most %d bytes", maxRedirectURILen)
	case err != nil || !u.IsAbs() || u.Opaque != "":
		return badRedirect("%q is not an absolute URI", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return badRedirect("%q has a fragment", raw)
	case u.User != nil:
		return badRedirect("%q names a user", raw)
	case strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return badRedirect("%q holds a space or a control character", raw)
	}
	switch scheme := strings.ToLower(u.Scheme); {
	case scheme == "https":
		if u.Host == "" {
			return badRedirect("%q names no host", raw)
		}
	case scheme == "http":
		if !isLoopbackHost(u.Hostname()) {
			return badRedirect("%q is plain http to another machine: use https, or a loopback address", raw)
		}
	case slices.Contains(forbiddenSchemes, scheme):
		return badRedirect("%q uses a scheme a browser runs, not an app's", raw)
	}
	return nil
}

// isLoopbackHost reports whether host is this machine's loopback: an address in 127.0.0.0/8,
// ::1, or localhost.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
