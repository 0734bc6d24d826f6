package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"maven/app/activity"
	mauth "maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/clients"
)

// testResource is Maven's MCP server at the fixture's origin.
var testResource = clients.ResourceOf(testOrigin)

// agentRedirect is where the test clients take their answers (they never listen there: the
// owner's browser reads the redirect off Maven's answer).
const agentRedirect = "http://127.0.0.1:33418/callback"

// agent is an HTTP client of an agents' client: it reaches the listening app at the fixture's
// origin (http://localhost:8080), as a client on the owner's network would.
func (f *fixture) agent() *http.Client {
	f.t.Helper()
	if f.srv == nil {
		f.listen()
	}
	addr := f.srv.Listener.Addr().String()
	return &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// agentContext carries the agent's HTTP client for golang.org/x/oauth2.
func (f *fixture) agentContext() context.Context {
	return context.WithValue(context.Background(), oauth2.HTTPClient, f.agent())
}

// registerAgent registers a public client the way go-sdk's client does, and returns its oauth2
// config.
func (f *fixture) registerAgent(name string) *oauth2.Config {
	f.t.Helper()
	reg, err := oauthex.RegisterClient(context.Background(), testOrigin+"/oauth/register", &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{agentRedirect}, TokenEndpointAuthMethod: "none", ClientName: name,
		GrantTypes: []string{"authorization_code", "refresh_token"},
	}, f.agent())
	if err != nil {
		f.t.Fatal(err)
	}
	return &oauth2.Config{ClientID: reg.ClientID, RedirectURL: agentRedirect, Endpoint: oauth2.Endpoint{
		AuthURL: testOrigin + "/oauth/authorize", TokenURL: testOrigin + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
}

var consentRequest = regexp.MustCompile(`hx-post="/oauth/authorize/([A-Za-z0-9]+)"`)

// consentPage opens an authorization URL in the owner's browser and returns the consent page's
// request id.
func (b *browser) consentPage(authURL string) string {
	t := b.f.t
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page := b.get(u.RequestURI())
	m := consentRequest.FindStringSubmatch(page.Body.String())
	if page.Code != http.StatusOK || m == nil {
		t.Fatalf("consent page: %d %s", page.Code, page.Body.String())
	}
	return m[1]
}

// allow clicks Allow with passkey for choice as htmx does: the 403 asks for a step-up, a does
// it, and the second POST is answered with the redirect to the client. It returns the
// redirect, and the step-up's prompt.
func (b *browser) allow(a *authtest.Authenticator, id string, choice url.Values) (*url.URL, string) {
	t := b.f.t
	t.Helper()
	var asked beginAnswer
	rec := b.htmx(http.MethodPost, "/oauth/authorize/"+id, choice)
	if rec.Code != http.StatusForbidden || json.Unmarshal(rec.Body.Bytes(), &asked) != nil || asked.StepUp == nil {
		t.Fatalf("Allow before the step-up: %d %s", rec.Code, rec.Body.String())
	}
	prompt := b.beginStepUp(*asked.StepUp).Prompt
	b.mustStepUp(a, *asked.StepUp)
	rec = b.htmx(http.MethodPost, "/oauth/authorize/"+id, choice)
	to, err := url.Parse(rec.Header().Get("HX-Redirect"))
	if err != nil || to.String() == "" {
		t.Fatalf("Allow: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}
	return to, prompt
}

var everyTool = url.Values{"tools": {"all"}}

// authorize runs the code flow's browser half for cfg with PKCE: the owner signed in at b
// allows choice. It returns the code and the verifier.
func (b *browser) authorize(a *authtest.Authenticator, cfg *oauth2.Config, choice url.Values, opts ...oauth2.AuthCodeOption) (code, verifier string) {
	t := b.f.t
	t.Helper()
	verifier = oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("state-123456", append(opts, oauth2.S256ChallengeOption(verifier))...)
	to, _ := b.allow(a, b.consentPage(authURL), choice)
	q := to.Query()
	if q.Get("state") != "state-123456" || q.Get("iss") != testOrigin || q.Get("code") == "" {
		t.Fatalf("the redirect %s", to)
	}
	return q.Get("code"), verifier
}

// TestMetadataDocuments: RFC 9728's protected-resource metadata, at the root and under /mcp,
// names Maven's MCP server and Maven as its authorization server, and under /sse names /sse
// (the same server by the older transport); RFC 8414's server metadata
// names every endpoint, S256 alone, client ID metadata documents and iss; both are open to
// other origins (CORS), as public metadata is.
func TestMetadataDocuments(t *testing.T) {
	f := newFixture(t)
	c := f.agent()
	for path, resource := range map[string]string{
		"/.well-known/oauth-protected-resource":     testResource,
		"/.well-known/oauth-protected-resource/mcp": testResource,
		"/.well-known/oauth-protected-resource/sse": testOrigin + "/sse",
	} {
		// GetProtectedResourceMetadata fails unless the document's resource is the one asked.
		prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), testOrigin+path, resource, c)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !slices.Equal(prm.AuthorizationServers, []string{testOrigin}) {
			t.Errorf("%s: authorization servers %v", path, prm.AuthorizationServers)
		}
	}
	asm, err := auth.GetAuthServerMetadata(context.Background(), testOrigin, c)
	if err != nil {
		t.Fatal(err)
	}
	if asm.Issuer != testOrigin || asm.RegistrationEndpoint != testOrigin+"/oauth/register" || asm.RevocationEndpoint != testOrigin+"/oauth/revoke" ||
		asm.TokenEndpoint != testOrigin+"/oauth/token" || asm.AuthorizationEndpoint != testOrigin+"/oauth/authorize" ||
		!slices.Equal(asm.CodeChallengeMethodsSupported, []string{"S256"}) || !asm.ClientIDMetadataDocumentSupported ||
		!asm.AuthorizationResponseIssParameterSupported || asm.TokenEndpointAuthMethodsSupported[0] != "none" {
		t.Errorf("server metadata = %+v", asm)
	}
	res, err := c.Get(testOrigin + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("server metadata CORS: %v", res.Header)
	}
	// Another well-known document is a plain 404, which discovery reads as "none here".
	if res, err := c.Get(testOrigin + "/.well-known/openid-configuration"); err != nil || res.StatusCode != http.StatusNotFound {
		t.Errorf("openid-configuration: %v %v", res, err)
	}
	// At a host that is not a configured origin's, nothing is said.
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/.well-known/oauth-authorization-server", nil)
	req.Host = "evil.example"
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("metadata at another host: %v %v", res.StatusCode, err)
	}
}

// TestOAuthFlowWithARealClient: golang.org/x/oauth2 with PKCE, registered by go-sdk's DCR, gets
// a code through the consent page and a step-up, exchanges it, and its token opens Maven's MCP
// server and nothing else; a refresh rotates both tokens; the rotated refresh token shown again
// revokes the whole family, and says so in the feed; RFC 7009 revocation ends a token; Revoke
// on /clients ends them all.
func TestOAuthFlowWithARealClient(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	cfg := f.registerAgent("Test agent")
	code, verifier := b.authorize(a, cfg, everyTool)
	tok, err := cfg.Exchange(f.agentContext(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken == "" || !strings.HasPrefix(tok.AccessToken, "ory_at_") || tok.Expiry.IsZero() {
		t.Fatalf("token = %+v", tok)
	}
	g, err := f.clients.Authenticate(ctx, tok.AccessToken, testResource)
	if err != nil || g.ClientID != cfg.ClientID || g.Name != "Test agent" || !g.AllTools || g.Expires.IsZero() {
		t.Fatalf("Authenticate = %+v, %v", g, err)
	}
	for name, tc := range map[string]struct{ token, resource string }{
		"another resource":  {tok.AccessToken, "https://elsewhere.example/mcp"},
		"the refresh token": {tok.RefreshToken, testResource},
		"a forged token":    {tok.AccessToken[:len(tok.AccessToken)-2] + "xx", testResource},
	} {
		if _, err := f.clients.Authenticate(ctx, tc.token, tc.resource); !errors.Is(err, clients.ErrInvalidToken) {
			t.Errorf("%s: Authenticate = %v, want ErrInvalidToken", name, err)
		}
	}

	// A refresh rotates: new tokens, the old access token gone.
	first := tok
	tok, err = cfg.TokenSource(f.agentContext(), &oauth2.Token{RefreshToken: first.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken == first.RefreshToken || tok.AccessToken == first.AccessToken {
		t.Fatalf("the refresh did not rotate: %+v", tok)
	}
	if _, err := f.clients.Authenticate(ctx, first.AccessToken, testResource); !errors.Is(err, clients.ErrInvalidToken) {
		t.Errorf("the access token before the refresh: %v, want ErrInvalidToken", err)
	}
	if _, err := f.clients.Authenticate(ctx, tok.AccessToken, testResource); err != nil {
		t.Fatalf("the refreshed access token: %v", err)
	}
	// The spent refresh token comes back: the family is revoked.
	if _, err := cfg.TokenSource(f.agentContext(), &oauth2.Token{RefreshToken: first.RefreshToken}).Token(); err == nil {
		t.Fatal("a spent refresh token was taken again")
	}
	if _, err := f.clients.Authenticate(ctx, tok.AccessToken, testResource); !errors.Is(err, clients.ErrInvalidToken) {
		t.Errorf("the family's access token after the reuse: %v, want ErrInvalidToken", err)
	}
	if _, err := cfg.TokenSource(f.agentContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err == nil {
		t.Error("the family's newest refresh token still works after the reuse")
	}
	if !f.feedHas(clients.ActionTokenReused, "Test agent") {
		t.Error("the reuse is not in the activity feed")
	}

	// A new authorization; RFC 7009 ends its access token.
	code, verifier = b.authorize(a, cfg, everyTool)
	tok, err = cfg.Exchange(f.agentContext(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if res := f.agentPost("/oauth/revoke", url.Values{"token": {tok.AccessToken}, "client_id": {cfg.ClientID}}); res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	if _, err := f.clients.Authenticate(ctx, tok.AccessToken, testResource); !errors.Is(err, clients.ErrInvalidToken) {
		t.Errorf("a revoked access token: %v, want ErrInvalidToken", err)
	}

	// Another; Revoke on /clients ends everything of the client.
	code, verifier = b.authorize(a, cfg, everyTool)
	tok, err = cfg.Exchange(f.agentContext(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.clients.Authenticate(ctx, tok.AccessToken, testResource); err != nil {
		t.Fatalf("the new token before the client's revocation: %v", err)
	}
	if rec := b.htmx(http.MethodPost, "/clients/revoke", url.Values{"client": {cfg.ClientID}}); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "is revoked") {
		t.Fatalf("Revoke: %d %s", rec.Code, rec.Body.String())
	}
	if _, err := f.clients.Authenticate(ctx, tok.AccessToken, testResource); !errors.Is(err, clients.ErrInvalidToken) {
		t.Errorf("a revoked client's token: %v, want ErrInvalidToken", err)
	}
	if _, err := cfg.TokenSource(f.agentContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err == nil {
		t.Error("a revoked client's refresh token still works")
	}
}

// agentPost posts a form to the app as an agent does.
func (f *fixture) agentPost(path string, form url.Values) *http.Response {
	f.t.Helper()
	res, err := f.agent().PostForm(testOrigin+path, form)
	if err != nil {
		f.t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// feedHas reports whether the activity feed holds an event of action about the client named
// name.
func (f *fixture) feedHas(action, name string) bool {
	f.t.Helper()
	page, err := f.feed.Query(context.Background(), activity.Filter{Action: action})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, e := range page.Entries {
		if strings.Contains(string(e.Detail), `"client":"`+name+`"`) {
			return true
		}
	}
	return false
}

// TestCodeAndVerifierAttacks: a code is exchanged once, with its own verifier, for the resource
// it was bound to. A wrong verifier spends the code; a reused code revokes what it issued; a
// token request naming another resource is refused, one naming /sse is /mcp's; an access token
// past its hour is refused.
func TestCodeAndVerifierAttacks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	cfg := f.registerAgent("Test agent")

	code, verifier := b.authorize(a, cfg, everyTool)
	if _, err := cfg.Exchange(f.agentContext(), code, oauth2.VerifierOption(oauth2.GenerateVerifier())); err == nil {
		t.Fatal("a wrong verifier was taken")
	}
	if _, err := cfg.Exchange(f.agentContext(), code, oauth2.VerifierOption(verifier)); err == nil {
		t.Error("the code still worked after a wrong verifier")
	}

	code, verifier = b.authorize(a, cfg, everyTool)
	if _, err := cfg.Exchange(f.agentContext(), code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", "https://elsewhere.example/mcp")); !isOAuthError(err, "invalid_target") {
		t.Errorf("a token request for another resource: %v, want invalid_target", err)
	}

	code, verifier = b.authorize(a, cfg, everyTool, oauth2.SetAuthURLParam("resource", testResource))
	tok, err := cfg.Exchange(f.agentContext(), code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", testResource))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Exchange(f.agentContext(), code, oauth2.VerifierOption(verifier)); err == nil {
		t.Fatal("a code was exchanged twice")
	}
	if _, err := f.clients.Authenticate(ctx, tok.AccessToken, testResource); !errors.Is(err, clients.ErrInvalidToken) {
		t.Errorf("the token of a reused code: %v, want ErrInvalidToken", err)
	}

	// /sse's protected-resource metadata names /sse: a client names it in both requests, and
	// its token opens /mcp and /sse alike.
	sse := testOrigin + "/sse"
	code, verifier = b.authorize(a, cfg, everyTool, oauth2.SetAuthURLParam("resource", sse))
	if tok, err = cfg.Exchange(f.agentContext(), code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", sse)); err != nil {
		t.Fatalf("a token request for %s: %v", sse, err)
	}
	for _, at := range []string{testResource, sse} {
		if _, err := f.clients.Authenticate(ctx, tok.AccessToken, at); err != nil {
			t.Errorf("the token of an authorization for %s, at %s: %v", sse, at, err)
		}
	}

	code, verifier = b.authorize(a, cfg, everyTool)
	if tok, err = cfg.Exchange(f.agentContext(), code, oauth2.VerifierOption(verifier)); err != nil {
		t.Fatal(err)
	}
	g, err := f.clients.Authenticate(ctx, tok.AccessToken, testResource)
	if err != nil {
		t.Fatal(err)
	}
	// fosite stamps the expiry by the wall clock, which has run on since the fixture's clock
	// started (by seconds, on a loaded machine): go a second past the expiry itself.
	f.clock.Set(g.Expires.Add(time.Second))
	if _, err := f.clients.Authenticate(ctx, tok.AccessToken, testResource); !errors.Is(err, clients.ErrInvalidToken) {
		t.Errorf("an expired access token: %v, want ErrInvalidToken", err)
	}
}

func isOAuthError(err error, code string) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == code
}

// TestAuthorizationRequestsRefusedBeforeTheOwner: PKCE plain (or none) and a foreign resource
// are refused without a consent page: on a page while the client was never approved (anyone
// may register any redirect URI, and Maven must not be a redirector to it), at the client's
// redirect URI, with state and iss, once it was; a redirect URI one character off the
// registered one is never sent anything, and neither is a document on a private address.
func TestAuthorizationRequestsRefusedBeforeTheOwner(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	cfg := f.registerAgent("Test agent")
	base := func(edit func(url.Values)) string {
		q := url.Values{"response_type": {"code"}, "client_id": {cfg.ClientID}, "redirect_uri": {agentRedirect},
			"state": {"s-123456789"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
			"code_challenge_method": {"S256"}}
		edit(q)
		return "/oauth/authorize?" + q.Encode()
	}
	refused := map[string]func(url.Values){
		"plain":            func(q url.Values) { q.Set("code_challenge_method", "plain") },
		"no PKCE":          func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") },
		"another resource": func(q url.Values) { q.Set("resource", "https://elsewhere.example/mcp") },
	}
	for name, edit := range refused {
		if rec := b.get(base(edit)); rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
			t.Errorf("%s, a client never approved: %d, Location %q", name, rec.Code, rec.Header().Get("Location"))
		}
	}
	b.authorize(a, cfg, everyTool)
	for name, edit := range refused {
		rec := b.get(base(edit))
		to, _ := url.Parse(rec.Header().Get("Location"))
		if rec.Code != http.StatusSeeOther || !strings.HasPrefix(to.String(), agentRedirect+"?") || to.Query().Get("error") == "" ||
			to.Query().Get("state") != "s-123456789" || to.Query().Get("iss") != testOrigin {
			t.Errorf("%s: %d to %s", name, rec.Code, to)
		}
	}
	// A client named by a document on a private address is never fetched, nor asked about.
	for _, doc := range []string{"https://127.0.0.1/client.json", "https://10.0.0.7/client.json", "https://[::1]/client.json"} {
		rec := b.get(base(func(q url.Values) { q.Set("client_id", doc) }))
		if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" || consentRequest.MatchString(rec.Body.String()) {
			t.Errorf("a document at %s: %d, Location %q", doc, rec.Code, rec.Header().Get("Location"))
		}
	}
	for name, redirect := range map[string]string{
		"another port":     "http://127.0.0.1:33419/callback",
		"one letter off":   "http://127.0.0.1:33418/callbacc",
		"a trailing slash": agentRedirect + "/",
		"another host":     "https://evil.example/callback",
	} {
		rec := b.get(base(func(q url.Values) { q.Set("redirect_uri", redirect) }))
		if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" || consentRequest.MatchString(rec.Body.String()) {
			t.Errorf("%s: %d, Location %q", name, rec.Code, rec.Header().Get("Location"))
		}
	}
}

// TestConsentIsBoundToItsSessionAndItsTicks: an authorization request shown in one browser
// session cannot be answered from another (another session's state), and the step-up covers
// exactly the tools ticked: a POST of another set asks for a new one.
func TestConsentIsBoundToItsSessionAndItsTicks(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	echo, other := f.enabled(t, a, "echo"), f.enabled(t, a, "other")
	cfg := f.registerAgent("Test agent")
	authURL := cfg.AuthCodeURL("s-123456789", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	id := b.consentPage(authURL)

	// Another signed-in session of the owner cannot answer it, step-up or not.
	b2 := f.browser()
	mustOK(t, "sign in again", b2.login(a))
	onlyEcho := url.Values{"tools": {"ticked"}, "tool": {itoa(echo.ID)}}
	if rec := b2.htmx(http.MethodPost, "/oauth/authorize/"+id, onlyEcho); rec.Code != http.StatusConflict {
		t.Errorf("Allow from another session: %d %s", rec.Code, rec.Body.String())
	}
	if rec := b2.htmx(http.MethodPost, "/oauth/authorize/"+id+"/deny", nil); rec.Code != http.StatusConflict {
		t.Errorf("Deny from another session: %d", rec.Code)
	}

	// A step-up for echo alone does not cover echo and other.
	var asked beginAnswer
	rec := b.htmx(http.MethodPost, "/oauth/authorize/"+id, onlyEcho)
	if json.Unmarshal(rec.Body.Bytes(), &asked) != nil || asked.StepUp == nil {
		t.Fatalf("Allow: %d %s", rec.Code, rec.Body.String())
	}
	prompt := b.beginStepUp(*asked.StepUp).Prompt
	b.mustStepUp(a, *asked.StepUp)
	both := url.Values{"tools": {"ticked"}, "tool": {itoa(echo.ID), itoa(other.ID)}}
	if rec := b.htmx(http.MethodPost, "/oauth/authorize/"+id, both); rec.Code != http.StatusForbidden {
		t.Fatalf("Allow of another set under the step-up of one: %d %s", rec.Code, rec.Body.String())
	}
	rec = b.htmx(http.MethodPost, "/oauth/authorize/"+id, onlyEcho)
	if to, err := url.Parse(rec.Header().Get("HX-Redirect")); err != nil || to.Query().Get("code") == "" {
		t.Fatalf("Allow of the set the step-up named: %d %v", rec.Code, rec.Header())
	}
	for _, want := range []string{"Test agent", cfg.ClientID, agentRedirect, "one tool: echo"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the step-up's prompt %q does not name %q", prompt, want)
		}
	}
	g, err := f.clients.Policy(context.Background(), cfg.ClientID)
	if err != nil || g.AllTools || !slices.Equal(g.ToolIDs, []int64{echo.ID}) {
		t.Errorf("Policy = %+v, %v", g, err)
	}
	if !f.feedHas(clients.ActionConsented, "Test agent") {
		t.Error("the consent is not in the activity feed")
	}
	if page := b.get("/activity").Body.String(); !strings.Contains(page, "Client allowed") || !strings.Contains(page, "Test agent") {
		t.Errorf("/activity does not show the consent: %s", page)
	}
}

// enabled proposes a local command and enables it behind a real step-up.
func (f *fixture) enabled(t *testing.T, a *authtest.Authenticator, name string) struct{ ID int64 } {
	t.Helper()
	row := f.propose(name)
	if _, err := f.tools.EnableTool(context.Background(), row.ID, authtest.Proof(t, enableOf(row))); err != nil {
		t.Fatal(err)
	}
	return struct{ ID int64 }{row.ID}
}

// TestConsentRefusesCrossOriginAndFraming: Allow and Deny from another site are refused
// before anything is read (cross-origin protection), and the consent page is never framed.
func TestConsentRefusesCrossOriginAndFraming(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	cfg := f.registerAgent("Test agent")
	authURL := cfg.AuthCodeURL("s-123456789", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	u, _ := url.Parse(authURL)
	page := b.get(u.RequestURI())
	if csp := page.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || page.Header().Get("X-Frame-Options") != "DENY" {
		t.Errorf("the consent page may be framed: %v", page.Header())
	}
	id := consentRequest.FindStringSubmatch(page.Body.String())[1]
	// The owner's own step-up for this very consent is spent by no cross-site request.
	var asked beginAnswer
	json.Unmarshal(b.htmx(http.MethodPost, "/oauth/authorize/"+id, everyTool).Body.Bytes(), &asked)
	b.mustStepUp(a, *asked.StepUp)
	// Another site's page, by its Origin, or by Fetch Metadata alone.
	for _, from := range [][2]string{{"cross-site", "https://evil.example"}, {"cross-site", ""}, {"", "https://evil.example"}} {
		b.siteHeader, b.origin = from[0], from[1]
		for _, path := range []string{"/oauth/authorize/" + id, "/oauth/authorize/" + id + "/deny"} {
			if rec := b.htmx(http.MethodPost, path, everyTool); rec.Code != http.StatusForbidden || rec.Header().Get("HX-Redirect") != "" {
				t.Errorf("a POST %s from %v: %d %v", path, from, rec.Code, rec.Header())
			}
		}
	}
	c, err := f.clients.Client(context.Background(), cfg.ClientID)
	if err != nil || c.State != clients.StatePending {
		t.Errorf("after the cross-site POSTs the client is %+v, %v", c, err)
	}
	b.siteHeader, b.origin = "same-origin", testOrigin
	if rec := b.htmx(http.MethodPost, "/oauth/authorize/"+id, everyTool); rec.Header().Get("HX-Redirect") == "" {
		t.Errorf("the owner's own Allow after them: %d %s", rec.Code, rec.Body.String())
	}
}

// TestConsentPageAsksToSignInOrUnlockFirst: a browser not signed in is offered the sign-in,
// which comes back to this very request, and is never shown the tools or a form to allow.
func TestConsentPageAsksToSignInOrUnlockFirst(t *testing.T) {
	f := newFixture(t)
	f.signUp(authtest.New(testOrigin))
	cfg := f.registerAgent("Test agent")
	authURL := cfg.AuthCodeURL("s-123456789", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	u, _ := url.Parse(authURL)
	rec := f.browser().get(u.RequestURI())
	body := rec.Body.String()
	next := `data-next="` + strings.ReplaceAll(u.RequestURI(), "&", "&amp;") + `"`
	if rec.Code != http.StatusOK || !strings.Contains(body, `data-action="login"`) || !strings.Contains(body, next) ||
		consentRequest.MatchString(body) || strings.Contains(body, "Allow with passkey") {
		t.Errorf("signed out: %d %s", rec.Code, body)
	}
	if !strings.Contains(body, "Test agent") || !strings.Contains(body, "127.0.0.1:33418") {
		t.Errorf("the page does not name the client and where its answer goes: %s", body)
	}

	// Locked, the page offers the unlock, which signs in too, and comes back.
	vf := newVaultFixture(t, "")
	owner, _ := vf.setUp(authtest.New(testOrigin))
	reg, err := vf.clients.Register(context.Background(), clients.Registration{ClientName: "Test agent",
		RedirectURIs: []string{agentRedirect}, TokenEndpointAuthMethod: "none"})
	if err != nil {
		t.Fatal(err)
	}
	vf.boot()
	cfg.ClientID = reg.ClientID
	u, _ = url.Parse(cfg.AuthCodeURL("s-123456789", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	next = `data-next="` + strings.ReplaceAll(u.RequestURI(), "&", "&amp;") + `"`
	for _, b := range []*browser{owner, vf.browser()} {
		rec := b.get(u.RequestURI())
		body := rec.Body.String()
		if rec.Code != http.StatusOK || !strings.Contains(body, `data-action="unlock"`) || !strings.Contains(body, next) ||
			consentRequest.MatchString(body) {
			t.Errorf("locked: %d %s", rec.Code, body)
		}
	}
}

// TestConsentPagesAreLimitedPerSource: a source opens twenty consent pages at once, then is
// refused (each may fetch a client's metadata document).
func TestConsentPagesAreLimitedPerSource(t *testing.T) {
	f := newFixture(t)
	cfg := f.registerAgent("Test agent")
	u, _ := url.Parse(cfg.AuthCodeURL("s-123456789", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	b := f.browser()
	var refused int
	for range 25 {
		if b.get(u.RequestURI()).Code == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused != 5 {
		t.Errorf("%d of 25 consent pages refused, want 5", refused)
	}
}

// TestDenyAnswersAccessDenied: Deny sends access_denied, with the state and iss, and approves
// nothing.
func TestDenyAnswersAccessDenied(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	cfg := f.registerAgent("Test agent")
	id := b.consentPage(cfg.AuthCodeURL("s-123456789", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	rec := b.htmx(http.MethodPost, "/oauth/authorize/"+id+"/deny", nil)
	to, err := url.Parse(rec.Header().Get("HX-Redirect"))
	if err != nil || to.Query().Get("error") != "access_denied" || to.Query().Get("state") != "s-123456789" || to.Query().Get("iss") != testOrigin {
		t.Fatalf("Deny: %d to %v", rec.Code, to)
	}
	if _, err := f.clients.Policy(context.Background(), cfg.ClientID); !errors.Is(err, clients.ErrNotFound) {
		t.Errorf("a denied client has a policy: %v", err)
	}
	if !f.feedHas(clients.ActionDenied, "Test agent") {
		t.Error("the denial is not in the activity feed")
	}
}

// TestRegistrationFloodFromOneSource: a source registers ten clients at once, then is refused
// (429 with Retry-After) without anything stored; the owner's pending consent is untouched.
func TestRegistrationFloodFromOneSource(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	cfg := f.registerAgent("The owner's agent")
	id := b.consentPage(cfg.AuthCodeURL("s-123456789", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	body := `{"redirect_uris": ["https://evil.example/cb"], "token_endpoint_auth_method": "none"}`
	var refused int
	for range 30 {
		res, err := f.agent().Post(testOrigin+"/oauth/register", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusTooManyRequests {
			refused++
			if res.Header.Get("Retry-After") == "" {
				t.Error("a 429 without Retry-After")
			}
		}
	}
	list, err := f.clients.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The owner's registration spent one of the ten.
	if refused != 21 || len(list) != 10 {
		t.Errorf("%d of 30 refused, %d clients stored; want 21 and 10", refused, len(list))
	}
	if to, _ := b.allow(a, id, everyTool); to.Query().Get("code") == "" {
		t.Errorf("the owner's consent after the flood: %s", to)
	}
}

// TestHomeAssistantShapedRegistration: Home Assistant's registration (home-assistant/core
// homeassistant/components/mcp/registration.py, async_register_dynamic_client, at commit
// 00b00102104c57ec28e05371131a97d38c4be956) is answered as its _parse_registration_response
// needs, and its authorization (config_flow.py's extra_authorize_data: access_type=offline,
// prompt=consent, PKCE by LocalOAuth2ImplementationWithPkce, no resource) is bound to Maven's
// MCP server at the origin it came to.
func TestHomeAssistantShapedRegistration(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	// What registration.py sends when the metadata lists "none" first.
	body := `{"redirect_uris": ["` + agentRedirect + `"], "token_endpoint_auth_method": "none",
		"grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
		"client_name": "Home Assistant", "application_type": "web"}`
	res, err := f.agent().Post(testOrigin+"/oauth/register", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var reg map[string]any
	json.NewDecoder(res.Body).Decode(&reg)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated || reg["client_id"] == "" || !slices.Contains(anyStrings(reg["redirect_uris"]), agentRedirect) {
		t.Fatalf("registration: %d %v", res.StatusCode, reg)
	}
	if v, ok := reg["client_secret_expires_at"]; ok && v != float64(0) {
		t.Errorf("client_secret_expires_at = %v", v)
	}
	cfg := &oauth2.Config{ClientID: reg["client_id"].(string), RedirectURL: agentRedirect, Endpoint: oauth2.Endpoint{
		AuthURL: testOrigin + "/oauth/authorize", TokenURL: testOrigin + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	code, verifier := b.authorize(a, cfg, everyTool, oauth2.SetAuthURLParam("access_type", "offline"), oauth2.SetAuthURLParam("prompt", "consent"))
	tok, err := cfg.Exchange(f.agentContext(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.clients.Authenticate(context.Background(), tok.AccessToken, testResource); err != nil {
		t.Errorf("a token of an authorization that named no resource, at %s: %v", testResource, err)
	}
}

func anyStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestGoSDKClientSignsIn: go-sdk's own OAuth client (auth.AuthorizationCodeHandler), from the
// 401 a protected /mcp answers, discovers Maven, registers, is sent through the consent page,
// checks iss and state, and ends with a token that opens Maven's MCP server.
func TestGoSDKClientSignsIn(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{agentRedirect}, TokenEndpointAuthMethod: "none", ClientName: "go-sdk client",
			GrantTypes: []string{"authorization_code", "refresh_token"}}},
		RedirectURL: agentRedirect,
		Client:      f.agent(),
		AuthorizationCodeFetcher: func(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			to, _ := b.allow(a, b.consentPage(args.URL), everyTool)
			q := to.Query()
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// What /mcp answers a request without a token.
	req, _ := http.NewRequest(http.MethodPost, testResource, nil)
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{
		"Www-Authenticate": {`Bearer resource_metadata="` + testOrigin + `/.well-known/oauth-protected-resource"`}}}
	if err := h.Authorize(context.Background(), req, resp); err != nil {
		t.Fatal(err)
	}
	ts, _ := h.TokenSource(context.Background())
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	if g, err := f.clients.Authenticate(context.Background(), tok.AccessToken, testResource); err != nil || g.Name != "go-sdk client" {
		t.Errorf("Authenticate = %+v, %v", g, err)
	}
}

// TestClientToolsNeedAStepUp: on /clients a client's tools change only with a step-up naming the
// client and the new set, whose prompt says them.
func TestClientToolsNeedAStepUp(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	echo := f.enabled(t, a, "echo")
	if _, _, err := f.clients.AddStatic(context.Background(), "desk", clients.Choice{All: true}); err != nil {
		t.Fatal(err)
	}
	page := b.get("/clients")
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), `data-client="static:desk"`) || !strings.Contains(page.Body.String(), ">Revoke</button>") {
		t.Fatalf("/clients: %d %s", page.Code, page.Body.String())
	}
	form := url.Values{"client": {"static:desk"}, "tools": {"ticked"}, "tool": {itoa(echo.ID)}}
	rec := b.htmx(http.MethodPost, "/clients/tools", form)
	var asked beginAnswer
	if rec.Code != http.StatusForbidden || json.Unmarshal(rec.Body.Bytes(), &asked) != nil || asked.StepUp == nil ||
		asked.StepUp.Action != mauth.ActionClientTools {
		t.Fatalf("Save tools before a step-up: %d %s", rec.Code, rec.Body.String())
	}
	if prompt := b.beginStepUp(*asked.StepUp).Prompt; !strings.Contains(prompt, "desk") || !strings.Contains(prompt, "echo") {
		t.Errorf("prompt %q", prompt)
	}
	b.mustStepUp(a, *asked.StepUp)
	if rec := b.htmx(http.MethodPost, "/clients/tools", form); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "now sees one tool: echo") {
		t.Fatalf("Save tools: %d %s", rec.Code, rec.Body.String())
	}
	if g, err := f.clients.Policy(context.Background(), "static:desk"); err != nil || g.AllTools || !slices.Equal(g.ToolIDs, []int64{echo.ID}) {
		t.Errorf("Policy = %+v, %v", g, err)
	}
}
