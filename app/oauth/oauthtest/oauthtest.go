// Package oauthtest is a fake OAuth 2.1 authorization server and an MCP endpoint it protects,
// for tests: the server publishes protected resource metadata and answers 401 with a
// WWW-Authenticate challenge; the authorization server publishes its metadata, registers
// clients dynamically, authorizes at once (redirecting to the client's callback, as the
// conformance suite's does) or after a click on its page in a browser, checks PKCE (S256)
// and the resource indicator, issues access tokens that expire and refresh tokens that rotate,
// and can revoke them. Everything is counted, so tests can say what reached whom.
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options shape the fake.
type Options struct {
	// TokenLifetime is how long an access token lasts (1h).
	TokenLifetime time.Duration
	// ScopesSupported are the authorization server's scopes; with "offline_access" among them
	// a refresh token is issued only when it is asked for, without it always.
	ScopesSupported []string
	// ChallengeScope is the scope the 401 names ("" for none).
	ChallengeScope string
	// Page makes /authorize show a page with an "Allow" link instead of redirecting at once.
	Page bool
	// AnyResource makes /authorize take any resource indicator, as an authorization server that
	// does not check them against what it protects does.
	AnyResource bool
	// GrantTypes are the grant types its metadata lists (authorization_code and refresh_token
	// when nil).
	GrantTypes []string
	// Iss makes the authorization server name itself in its answers (RFC 9207) and say so in its
	// metadata.
	Iss bool
}

// Server is the protected MCP endpoint (URL) and its authorization server (Issuer), on one
// httptest server. Its counters are safe to read at any time.
type Server struct {
	URL    string // the MCP endpoint: Issuer + "/mcp"
	Issuer string

	// Requests counts requests to the MCP endpoint; WithToken those that carried a bearer token
	// of any kind; Refused those answered 401.
	Requests, WithToken, Refused atomic.Int64
	// Discoveries counts reads of the protected resource metadata; Registrations, Authorizations,
	// Exchanges and Refreshes the authorization server's work.
	Discoveries, Registrations, Authorizations, Exchanges, Refreshes atomic.Int64

	opts Options
	srv  *httptest.Server
	mcp  http.Handler

	mu       sync.Mutex
	clients  map[string]client
	codes    map[string]grant
	access   map[string]grant // access token → grant, with its expiry
	refresh  map[string]grant
	problems []string
}

type client struct {
	secret    string
	redirects []string
}

type grant struct {
	client, redirect, challenge, resource, scope string
	expires                                      time.Time
}

// New starts the fake in front of mcp (an MCP streamable HTTP handler) and stops it with the
// test.
func New(t interface{ Cleanup(func()) }, mcp http.Handler, opts Options) *Server {
	if opts.TokenLifetime <= 0 {
		opts.TokenLifetime = time.Hour
	}
	s := &Server{opts: opts, mcp: mcp, clients: map[string]client{}, codes: map[string]grant{},
		access: map[string]grant{}, refresh: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", s.serveMCP)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", s.resourceMetadata)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.serverMetadata)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("GET /authorize/allow", s.allow)
	mux.HandleFunc("POST /token", s.token)
	s.srv = httptest.NewServer(mux)
	s.Issuer = s.srv.URL
	s.URL = s.srv.URL + "/mcp"
	t.Cleanup(s.srv.Close)
	return s
}

// Revoke makes every token issued so far worthless: the MCP endpoint refuses the access tokens
// and the token endpoint the refresh tokens (invalid_grant).
func (s *Server) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
	clear(s.refresh)
}

// ForgetClients forgets every client registered so far, as an authorization server that was
// reset does: it refuses them at /authorize (no redirect back) and at the token endpoint
// (invalid_client).
func (s *Server) ForgetClients() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.clients)
}

// RevokeRefresh makes the refresh tokens issued so far worthless (invalid_grant), leaving the
// access tokens to expire on their own.
func (s *Server) RevokeRefresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.refresh)
}

// Problems are the protocol mistakes the fake saw a client make (a missing PKCE verifier, a
// wrong resource, an unknown client…); a well-behaved client leaves none.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.problems)
}

func (s *Server) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok {
		s.WithToken.Add(1)
	}
	s.mu.Lock()
	g, valid := s.access[tok]
	s.mu.Unlock()
	if !ok || !valid || time.Now().After(g.expires) {
		s.Refused.Add(1)
		challenge := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, s.Issuer)
		if s.opts.ChallengeScope != "" {
			challenge += fmt.Sprintf(`, scope="%s"`, s.opts.ChallengeScope)
		}
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
		return
	}
	s.mcp.ServeHTTP(w, r)
}

func (s *Server) resourceMetadata(w http.ResponseWriter, _ *http.Request) {
	s.Discoveries.Add(1)
	writeJSON(w, http.StatusOK, map[string]any{"resource": s.URL, "authorization_servers": []string{s.Issuer}})
}

func (s *Server) serverMetadata(w http.ResponseWriter, _ *http.Request) {
	meta := map[string]any{
		"issuer": s.Issuer, "authorization_endpoint": s.Issuer + "/authorize", "token_endpoint": s.Issuer + "/token",
		"registration_endpoint": s.Issuer + "/register", "response_types_supported": []string{"code"},
		"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	}
	if len(s.opts.ScopesSupported) > 0 {
		meta["scopes_supported"] = s.opts.ScopesSupported
	}
	if s.opts.Iss {
		meta["authorization_response_iss_parameter_supported"] = true
	}
	if s.opts.GrantTypes != nil {
		meta["grant_types_supported"] = s.opts.GrantTypes
	}
	writeJSON(w, http.StatusOK, meta)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	s.Registrations.Add(1)
	var md struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(r.Body).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id, secret := "client-"+rand.Text(), "secret-"+rand.Text()
	s.mu.Lock()
	s.clients[id] = client{secret: secret, redirects: md.RedirectURIs}
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "client_secret": secret,
		"redirect_uris": md.RedirectURIs, "token_endpoint_auth_method": "client_secret_basic"})
}

// authorize checks the authorization request and approves it: at once with a redirect, or
// with the page's Allow button.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	s.Authorizations.Add(1)
	q := r.URL.Query()
	s.mu.Lock()
	c, known := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	switch {
	case !known:
		s.problem("authorize: unknown client %q", q.Get("client_id"))
	case !slices.Contains(c.redirects, q.Get("redirect_uri")):
		s.problem("authorize: redirect_uri %q was not registered", q.Get("redirect_uri"))
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		s.problem("authorize: no S256 code challenge")
	case q.Get("resource") != s.URL && !s.opts.AnyResource:
		s.problem("authorize: resource %q, want %q", q.Get("resource"), s.URL)
	case q.Get("state") == "":
		s.problem("authorize: no state")
	default:
		if s.opts.Page {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			// The request as it came, already encoded: the link repeats it.
			_ = allowPage.Execute(w, template.URL("/authorize/allow?"+r.URL.RawQuery))
			return
		}
		s.approve(w, r, q)
		return
	}
	http.Error(w, "bad authorization request", http.StatusBadRequest)
}

var allowPage = template.Must(template.New("allow").Parse(`<!doctype html><title>Fake authorization server</title>
<h1>Let Maven in?</h1><p><a href="{{.}}">Allow</a></p>`))

func (s *Server) allow(w http.ResponseWriter, r *http.Request) { s.approve(w, r, r.URL.Query()) }

// approve issues a code for the request and sends the browser back with it.
func (s *Server) approve(w http.ResponseWriter, r *http.Request, q url.Values) {
	code := "code-" + rand.Text()
	s.mu.Lock()
	s.codes[code] = grant{client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		resource: q.Get("resource"), scope: q.Get("scope"), expires: time.Now().Add(time.Minute)}
	s.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := back.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	if s.opts.Iss {
		v.Set("iss", s.Issuer)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	c, known := s.clients[id]
	s.mu.Unlock()
	if !known || c.secret != secret {
		s.problem("token: client %q did not authenticate", id)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		s.exchange(w, r, id)
	case "refresh_token":
		s.Refreshes.Add(1)
		s.mu.Lock()
		g, ok := s.refresh[r.PostForm.Get("refresh_token")]
		delete(s.refresh, r.PostForm.Get("refresh_token")) // rotated: each is used once
		s.mu.Unlock()
		if !ok || g.client != id {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		s.issue(w, g, true)
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
	}
}

func (s *Server) exchange(w http.ResponseWriter, r *http.Request, clientID string) {
	s.Exchanges.Add(1)
	code := r.PostForm.Get("code")
	s.mu.Lock()
	g, ok := s.codes[code]
	delete(s.codes, code)
	s.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case !ok || time.Now().After(g.expires) || g.client != clientID:
		s.problem("token: unknown, spent or foreign code")
	case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		s.problem("token: the PKCE verifier does not match")
	case r.PostForm.Get("redirect_uri") != g.redirect:
		s.problem("token: redirect_uri %q, want %q", r.PostForm.Get("redirect_uri"), g.redirect)
	case r.PostForm.Get("resource") != g.resource:
		s.problem("token: resource %q, want %q", r.PostForm.Get("resource"), g.resource)
	default:
		offline := !slices.Contains(s.opts.ScopesSupported, "offline_access") || slices.Contains(strings.Fields(g.scope), "offline_access")
		s.issue(w, g, offline)
		return
	}
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
}

// issue answers with a new access token for g, and a refresh token if withRefresh.
func (s *Server) issue(w http.ResponseWriter, g grant, withRefresh bool) {
	access := "at-" + rand.Text()
	g.expires = time.Now().Add(s.opts.TokenLifetime)
	body := map[string]any{"access_token": access, "token_type": "Bearer",
		"expires_in": int(s.opts.TokenLifetime.Round(time.Second) / time.Second)}
	if g.scope != "" {
		body["scope"] = g.scope
	}
	s.mu.Lock()
	s.access[access] = g
	if withRefresh {
		rt := "rt-" + rand.Text()
		s.refresh[rt] = g
		body["refresh_token"] = rt
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, body)
}

// ClientSecrets returns the secrets of the clients registered dynamically so far.
func (s *Server) ClientSecrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.clients {
		out = append(out, c.secret)
	}
	return out
}

// Tokens returns the access and refresh tokens that are valid now.
func (s *Server) Tokens() (access, refresh []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, g := range s.access {
		if time.Now().Before(g.expires) {
			access = append(access, t)
		}
	}
	for t := range s.refresh {
		refresh = append(refresh, t)
	}
	return access, refresh
}

// Authorize is the owner's browser at an authorization server that approves at once (this
// fake, or the conformance suite's): it requests the authorization URL and returns where the
// answer redirects, Maven's callback with the code and state.
func Authorize(ctx context.Context, authURL string) (*url.URL, error) {
	c := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil, fmt.Errorf("GET %s: %s, want a redirect back to the client", authURL, resp.Status)
	}
	return url.Parse(resp.Header.Get("Location"))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
