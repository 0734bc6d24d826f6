package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Challenge is what an MCP server answered when it refused a request: the status (401, or 403
// for insufficient_scope), its WWW-Authenticate header lines, and the URL it refused.
type Challenge struct {
	Status          int
	WWWAuthenticate []string
	URL             string
}

// bearer returns the parameters of the challenge's Bearer scheme (nil without one).
func (c Challenge) bearer() map[string]string {
	cs, err := oauthex.ParseWWWAuthenticate(c.WWWAuthenticate)
	if err != nil {
		return nil
	}
	for _, ch := range cs {
		if ch.Scheme == "bearer" {
			return ch.Params
		}
	}
	return nil
}

// InsufficientScope reports whether the server wants more access than the token it got.
func (c Challenge) InsufficientScope() bool {
	return c.Status == http.StatusForbidden && c.bearer()["error"] == "insufficient_scope"
}

// Scopes are the scopes the challenge names, if any.
func (c Challenge) Scopes() []string { return strings.Fields(c.bearer()["scope"]) }

// NeedsAuthError is how a request to an MCP server fails when the server wants the owner to
// sign in (401), or to grant more (403 insufficient_scope). Nothing retries it: the server waits
// for the owner (docs/design.md#rule-14, needs-auth).
type NeedsAuthError struct{ Challenge Challenge }

func (e *NeedsAuthError) Error() string {
	if e.Challenge.InsufficientScope() {
		return "the server wants more access than Maven was granted (insufficient_scope)"
	}
	return fmt.Sprintf("the server wants you to sign in (HTTP %d)", e.Challenge.Status)
}

// ErrResourceMismatch means the server's protected resource metadata names another resource:
// its authorization server would issue tokens for something else, so Maven signs in nowhere
// (RFC 9728 section 3.3).
var ErrResourceMismatch = errors.New("the server's protected resource metadata names another resource")

// ErrNoBrowserSignIn means the authorization server's metadata lists grant types without the
// authorization code grant (a machine-to-machine one, client credentials): the owner has no
// sign-in in a browser to do there, so Maven offers none.
var ErrNoBrowserSignIn = errors.New("this server's authorization server does not offer browser sign-in")

// Need is what a server asks the owner to sign in for, as its card shows it and the sign-in's
// step-up approves it.
type Need struct {
	Resource string // the MCP server, as the resource indicator names it
	Issuer   string // the authorization server
	// AuthorizationEndpoint is where the owner's browser goes.
	AuthorizationEndpoint string
	// MetadataDocument is set when the authorization server takes client ID metadata documents;
	// IssResponse when it names itself in its answers (RFC 9207
	// authorization_response_iss_parameter_supported), which Maven then requires.
	MetadataDocument, IssResponse bool
	// Scopes are what Maven will ask for, in order; none means the scope is left out.
	Scopes []string
	// StepUp is set when the server asked for more than Maven holds (insufficient_scope).
	StepUp bool
}

// ScopeText is the scopes as one line.
func (n Need) ScopeText() string { return strings.Join(n.Scopes, " ") }

// Digest names a need of server as the page showed it (the item's digest of the sign-in's
// step-up): the server, the authorization server and the scopes.
func Digest(server, issuer, scopes string) string {
	h := sha256.Sum256([]byte(server + "\x00" + issuer + "\x00" + scopes))
	return "sha256:" + hex.EncodeToString(h[:])
}

// Registration is how Maven can identify itself to an authorization server.
type Registration struct {
	// MetadataDocument is Maven's client ID metadata document URL ("" without an https origin).
	MetadataDocument bool
	// Configured is a pre-registered client from the config; its scopes, if any, replace the
	// advertised ones.
	Configured *Configured
}

// Configured is a client registered ahead of time (the config's "oauth" key), secrets expanded.
type Configured struct {
	ClientID, ClientSecret string
	Scopes                 []string
}

// Discover finds what server (reached at serverURL) asks for after refusing with ch: its
// protected resource metadata (from the challenge, then the well-known paths), its
// authorization server's metadata (OAuth, then OpenID), and the scopes Maven would request —
// those of the challenge, else those the resource supports; a pre-registered client's own
// scopes replace the advertised ones; offline_access is added when the authorization server
// offers it (Maven keeps refresh tokens sealed); a step-up keeps what was granted. It follows
// go-sdk's auth.AuthorizationCodeHandler, which then signs in, step for step, so that what the
// owner approves is what it will request; and it refuses a resource that is not this server,
// where go-sdk's would fall back to guessing.
func Discover(ctx context.Context, client *http.Client, serverURL string, ch Challenge, granted []string, reg Registration) (Need, error) {
	prm, err := resourceMetadata(ctx, client, serverURL, ch)
	if err != nil {
		return Need{}, err
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, client)
	if err != nil {
		return Need{}, fmt.Errorf("authorization server metadata of %s: %w", issuer, err)
	}
	if asm == nil {
		// The 2025-03-26 revision's fallback: the endpoints at their default paths.
		asm = &oauthex.AuthServerMeta{Issuer: issuer, AuthorizationEndpoint: issuer + "/authorize",
			TokenEndpoint: issuer + "/token", RegistrationEndpoint: issuer + "/register"}
	}
	// Without grant_types_supported, RFC 8414 section 2 says the authorization server takes
	// ["authorization_code", "implicit"].
	if asm.GrantTypesSupported != nil && !slices.Contains(asm.GrantTypesSupported, "authorization_code") {
		return Need{}, fmt.Errorf("%w: %s lists only the grant types %q", ErrNoBrowserSignIn, asm.Issuer, asm.GrantTypesSupported)
	}
	if !reg.MetadataDocument || !asm.ClientIDMetadataDocumentSupported {
		if reg.Configured == nil && asm.RegistrationEndpoint == "" {
			return Need{}, fmt.Errorf("the authorization server %s lets no client register itself: register Maven there and give its client id in the server's \"oauth\" config", asm.Issuer)
		}
	}
	scopes := ch.Scopes()
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	if reg.Configured != nil && len(reg.Configured.Scopes) > 0 {
		scopes = union(reg.Configured.Scopes, ch.Scopes())
	}
	if slices.Contains(asm.ScopesSupported, offlineAccess) && !slices.Contains(scopes, offlineAccess) {
		scopes = append(slices.Clip(scopes), offlineAccess)
	}
	if ch.InsufficientScope() {
		scopes = union(granted, scopes)
	}
	return Need{Resource: prm.Resource, Issuer: asm.Issuer, AuthorizationEndpoint: asm.AuthorizationEndpoint,
		MetadataDocument: asm.ClientIDMetadataDocumentSupported, IssResponse: asm.AuthorizationResponseIssParameterSupported,
		Scopes: scopes, StepUp: ch.InsufficientScope()}, nil
}

// offlineAccess is the scope that asks for a refresh token where the authorization server
// lists it (SEP-2207).
const offlineAccess = "offline_access"

// union is a's scopes, then those of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// resourceMetadata fetches the protected resource metadata where the MCP specification says
// to look, as go-sdk does. Without any, the server's origin is its own authorization server
// (the 2025-03-26 revision). A document that names another resource is refused.
func resourceMetadata(ctx context.Context, client *http.Client, serverURL string, ch Challenge) (*oauthex.ProtectedResourceMetadata, error) {
	candidates := metadataURLs(ch.bearer()["resource_metadata"], serverURL)
	for _, c := range candidates {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, client)
		if err == nil && prm != nil {
			if len(prm.AuthorizationServers) == 0 {
				return nil, fmt.Errorf("the protected resource metadata at %s names no authorization server", c.url)
			}
			return prm, nil
		}
	}
	for _, c := range candidates {
		if other, ok := namedResource(ctx, client, c.url, serverURL); ok && other != c.resource {
			return nil, fmt.Errorf("%w: %s names %q, not %q", ErrResourceMismatch, c.url, other, c.resource)
		}
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("server URL: %w", err)
	}
	u.Path, u.RawQuery, u.Fragment = "", "", ""
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{u.String()}, Resource: serverURL}, nil
}

// metadataURL is a place protected resource metadata may be, and the resource it must name.
type metadataURL struct{ url, resource string }

// metadataURLs are the challenge's resource_metadata, then the well-known URL at the path of
// the MCP endpoint, then at the root (whose resource is the origin).
func metadataURLs(fromChallenge, serverURL string) []metadataURL {
	var out []metadataURL
	if fromChallenge != "" {
		out = append(out, metadataURL{fromChallenge, serverURL})
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return out
	}
	m := *u
	m.RawQuery, m.Fragment = "", ""
	m.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
	out = append(out, metadataURL{m.String(), serverURL})
	m.Path = "/.well-known/oauth-protected-resource"
	root := *u
	root.Path, root.RawQuery, root.Fragment = "", "", ""
	return append(out, metadataURL{m.String(), root.String()})
}

// namedResource reads the resource a metadata document on the MCP server's own origin names,
// to tell a document about something else from none at all. Only the server's origin is read:
// a challenge may point anywhere, and go-sdk's checks have already refused what they refused.
func namedResource(ctx context.Context, client *http.Client, metadata, serverURL string) (string, bool) {
	m, err1 := url.Parse(metadata)
	s, err2 := url.Parse(serverURL)
	if err1 != nil || err2 != nil || !strings.EqualFold(m.Scheme+"://"+m.Host, s.Scheme+"://"+s.Host) {
		return "", false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metadata, nil)
	if err != nil {
		return "", false
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != "application/json" {
		return "", false
	}
	var doc struct {
		Resource *string `json:"resource"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc) != nil || doc.Resource == nil {
		return "", false
	}
	return *doc.Resource, true
}
