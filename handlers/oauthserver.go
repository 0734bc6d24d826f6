package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/ory/fosite"

	mauth "maven/app/auth"
	"maven/app/clients"
)

// Clients is what the handlers need of the agents' clients and Maven's authorization server
// (*clients.Service, docs/design.md#rule-29).
type Clients interface {
	// Provider is fosite's authorization server, which parses and answers the OAuth requests.
	Provider() fosite.OAuth2Provider
	// Register fails with a *clients.MetadataError for metadata it refuses, clients.ErrTooMany
	// when the registrations waiting for consent are at their cap.
	Register(ctx context.Context, r clients.Registration) (clients.Registered, error)
	// Check refuses, with fosite's errors, what Maven takes of no authorization request, and
	// returns the resource the token will be bound to.
	Check(ar fosite.AuthorizeRequester, origin string) (string, error)
	Begin(sid string, ar fosite.AuthorizeRequester, resource string) (clients.Request, error)
	// Request, Consent and Deny fail with clients.ErrNoRequest for a request this session does
	// not have; Consent needs a step-up for auth.ActionConsentClient naming
	// clients.ConsentDigest (else auth.ErrStepUpRequired).
	Request(sid, id string) (clients.Request, error)
	Consent(ctx context.Context, sid, id string, choice clients.Choice, proof mauth.StepUp) (clients.Request, error)
	Deny(ctx context.Context, sid, id string) (clients.Request, error)
	Respond(ctx context.Context, ar fosite.AuthorizeRequester, r clients.Request) (fosite.AuthorizeResponder, error)
	// TokenRefused records what a refused token request says of its client (a reused refresh
	// token).
	TokenRefused(ctx context.Context, ar fosite.AccessRequester, err error)
	List(ctx context.Context) ([]clients.Client, error)
	// Client fails with clients.ErrNotFound if no client has that id.
	Client(ctx context.Context, id string) (clients.Client, error)
	// SetTools needs a step-up for auth.ActionClientTools naming clients.ToolsDigest.
	SetTools(ctx context.Context, id string, choice clients.Choice, proof mauth.StepUp) error
	// Revoke fails with clients.ErrNotFound if no approved client has that id.
	Revoke(ctx context.Context, id, actor string) error
}

// The OAuth endpoints (docs/design.md#http).
const (
	pathResourceMetadata = "/.well-known/oauth-protected-resource"
	pathServerMetadata   = "/.well-known/oauth-authorization-server"
	pathAuthorize        = "/oauth/authorize"
	pathToken            = "/oauth/token"
	pathRegister         = "/oauth/register"
	pathRevoke           = "/oauth/revoke"
	pathSSE              = "/sse"
	// maxOAuthBody bounds a registration, token or revocation request.
	maxOAuthBody = 16 << 10
)

// issuerOf is the configured origin r came in at, which is the issuer its OAuth documents and
// answers name: the one whose host is r's, and whose scheme is how r came (https directly or
// through a trusted proxy); the first of that host else. Only requests at a configured origin's
// host get this far (requireOriginHost).
func (s *server) issuerOf(r *http.Request) string {
	scheme := "http"
	if isHTTPS(r) {
		scheme = "https"
	}
	first := ""
	for _, o := range s.origins {
		u, err := url.Parse(o)
		if err != nil || !sameHost(u, r.Host) {
			continue
		}
		if u.Scheme == scheme {
			return strings.TrimSuffix(o, "/")
		}
		if first == "" {
			first = strings.TrimSuffix(o, "/")
		}
	}
	return first
}

// sameHost reports whether the origin u is at host (a Host header), its scheme's default port
// spelled out or not.
func sameHost(u *url.URL, host string) bool {
	h := strings.ToLower(u.Host)
	host = strings.ToLower(host)
	return h == host || u.Port() == "" && host == h+":"+defaultPorts[u.Scheme]
}

// resourceMetadataGet is RFC 9728's protected-resource metadata of Maven's MCP server, at the
// root and under the /mcp path suffix: the resource is <origin>/mcp, its authorization server
// Maven at the same origin. Under the /sse suffix the resource is <origin>/sse, the same server
// by the older transport: Home Assistant takes a document only if its resource is exactly the
// URL the user typed (config_flow.py, _resource_metadata_from_document). go-sdk serves it, with
// CORS open, as public metadata is.
func (s *server) resourceMetadataGet(w http.ResponseWriter, r *http.Request) {
	issuer := s.issuerOf(r)
	resource := clients.ResourceOf(issuer)
	if r.URL.Path == pathResourceMetadata+pathSSE {
		resource = issuer + pathSSE
	}
	auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   []string{issuer},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Maven",
	}).ServeHTTP(w, r)
}

// serverMetadata is RFC 8414's authorization server metadata, as Maven fills it.
type serverMetadata struct {
	Issuer                                 string   `json:"issuer"`
	AuthorizationEndpoint                  string   `json:"authorization_endpoint"`
	TokenEndpoint                          string   `json:"token_endpoint"`
	RegistrationEndpoint                   string   `json:"registration_endpoint"`
	RevocationEndpoint                     string   `json:"revocation_endpoint"`
	ResponseTypesSupported                 []string `json:"response_types_supported"`
	ResponseModesSupported                 []string `json:"response_modes_supported"`
	GrantTypesSupported                    []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported      []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported          []string `json:"code_challenge_methods_supported"`
	ClientIDMetadataDocumentSupported      bool     `json:"client_id_metadata_document_supported"`
	AuthorizationResponseIssParameter      bool     `json:"authorization_response_iss_parameter_supported"`
}

// serverMetadataGet is RFC 8414's metadata of Maven's authorization server at the origin r came
// in at. No scopes are advertised: the consent's tools are what a client gets.
func (s *server) serverMetadataGet(w http.ResponseWriter, r *http.Request) {
	issuer := s.issuerOf(r)
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, serverMetadata{
		Issuer:                                 issuer,
		AuthorizationEndpoint:                  issuer + pathAuthorize,
		TokenEndpoint:                          issuer + pathToken,
		RegistrationEndpoint:                   issuer + pathRegister,
		RevocationEndpoint:                     issuer + pathRevoke,
		ResponseTypesSupported:                 []string{"code"},
		ResponseModesSupported:                 []string{"query"},
		GrantTypesSupported:                    []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported:      clients.AuthMethods(),
		RevocationEndpointAuthMethodsSupported: clients.AuthMethods(),
		CodeChallengeMethodsSupported:          []string{"S256"},
		ClientIDMetadataDocumentSupported:      true,
		AuthorizationResponseIssParameter:      true,
	})
}

// oauthError answers an endpoint machines call with RFC 6749's JSON error.
func oauthError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// registerPost is RFC 7591's dynamic client registration: anyone may register, within their
// source's budget, and the registration waits, bounded, for the owner's consent.
func (s *server) registerPost(w http.ResponseWriter, r *http.Request) error {
	if err := s.registrations.take(sourceOf(r)); err != nil {
		var limited rateLimited
		errors.As(err, &limited)
		w.Header().Set("Retry-After", strconv.Itoa(seconds(limited.wait)))
		oauthError(w, http.StatusTooManyRequests, "slow_down", "Too many registrations from this address; try again later.")
		return nil
	}
	var reg clients.Registration
	body := http.MaxBytesReader(w, r.Body, maxOAuthBody)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || json.NewDecoder(body).Decode(&reg) != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "The registration is a JSON object (application/json).")
		return nil
	}
	out, err := s.clients.Register(r.Context(), reg)
	var bad *clients.MetadataError
	switch {
	case errors.As(err, &bad):
		oauthError(w, http.StatusBadRequest, bad.Code, bad.Description)
	case errors.Is(err, clients.ErrTooMany):
		w.Header().Set("Retry-After", "60")
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "Too many clients wait for the owner's consent; try again later.")
	case err != nil:
		return err
	default:
		s.log.Info("a client registered", "client", out.ClientID, "name", out.ClientName, "source", r.RemoteAddr)
		writeJSON(w, http.StatusCreated, out)
	}
	return nil
}

// tokenPost is the token endpoint: an authorization code with its PKCE verifier, or a refresh
// token, which fosite rotates; a rotated one shown again revokes its authorization's tokens. A
// resource named must be the one the authorization is bound to.
func (s *server) tokenPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxOAuthBody)
	p := s.clients.Provider()
	ar, err := p.NewAccessRequest(ctx, r, clients.NewSession())
	if err == nil {
		err = clients.CheckTokenRequest(ar)
	}
	if err != nil {
		s.clients.TokenRefused(ctx, ar, err)
		s.log.Info("token request refused", "err", fosite.ErrorToRFC6749Error(err).WithExposeDebug(true).GetDescription())
		p.WriteAccessError(ctx, w, ar, err)
		return nil
	}
	resp, err := p.NewAccessResponse(ctx, ar)
	if err != nil {
		s.log.Warn("token response failed", "err", fosite.ErrorToRFC6749Error(err).WithExposeDebug(true).GetDescription())
		p.WriteAccessError(ctx, w, ar, err)
		return nil
	}
	p.WriteAccessResponse(ctx, w, ar, resp)
	return nil
}

// revokePost is RFC 7009's revocation: a token of the client that asks goes, with every token
// of its authorization.
func (s *server) revokePost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxOAuthBody)
	p := s.clients.Provider()
	p.WriteRevocationResponse(ctx, w, p.NewRevocationRequest(ctx, r))
	return nil
}

// answerAuthorize sends the browser where fosite's answer to an authorization request goes (the
// client's redirect URI, with a code or an error, and iss), in the way the requester understands:
// HX-Redirect for htmx, which a consent's Allow and Deny are, a 303 otherwise. fosite writes into
// a recorder so that iss is added to its errors too (RFC 9207), and so that no answer of its is
// an HTML form (form_post is refused before this).
func (s *server) answerAuthorize(w http.ResponseWriter, r *http.Request, issuer string, write func(http.ResponseWriter)) error {
	rec := &headerRecorder{header: http.Header{}}
	write(rec)
	loc, err := url.Parse(rec.header.Get("Location"))
	if err != nil || rec.header.Get("Location") == "" {
		return errors.New("fosite's authorization answer is no redirect")
	}
	q := loc.Query()
	if q.Get("iss") == "" {
		q.Set("iss", issuer)
		loc.RawQuery = q.Encode()
	}
	redirect(w, r, loc.String())
	return nil
}

// headerRecorder keeps the headers an answer was given, and drops its body.
type headerRecorder struct{ header http.Header }

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(int)             {}
