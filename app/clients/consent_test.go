package clients_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/ory/fosite"
	"golang.org/x/oauth2"

	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/clients"
)

const redirect = "http://127.0.0.1:33418/cb"

// register registers a public client with one redirect URI.
func (f *fixture) register(t testing.TB, name string) string {
	t.Helper()
	reg, err := f.svc.Register(context.Background(), clients.Registration{ClientName: name,
		RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code", "refresh_token"}})
	if err != nil {
		t.Fatal(err)
	}
	return reg.ClientID
}

// authorizeQuery is an authorization request of client, with PKCE S256, as a client sends it.
func authorizeQuery(client string, edit func(url.Values)) url.Values {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {client},
		"redirect_uri":          {redirect},
		"state":                 {"state-of-the-client"},
		"code_challenge":        {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
		"code_challenge_method": {"S256"},
	}
	if edit != nil {
		edit(q)
	}
	return q
}

// parse is the authorization request q as fosite parses it, then checked.
func (f *fixture) parse(q url.Values) (fosite.AuthorizeRequester, string, error) {
	r := httptest.NewRequest("GET", origin+"/oauth/authorize?"+q.Encode(), nil)
	ar, err := f.svc.Provider().NewAuthorizeRequest(context.Background(), r)
	if err != nil {
		return ar, "", err
	}
	res, err := f.svc.Check(ar, origin)
	return ar, res, err
}

// TestAuthorizationRequestsMavenRefuses: before the owner is asked anything, a request without
// PKCE S256 (plain included), with a redirect URI that differs from the registered one by a
// character (a loopback port fosite alone would take among them), or for a resource that is
// not Maven's, is refused with an error for the client.
func TestAuthorizationRequestsMavenRefuses(t *testing.T) {
	f := newFixture(t)
	id := f.register(t, "VS Code")
	if _, res, err := f.parse(authorizeQuery(id, nil)); err != nil || res != resource {
		t.Fatalf("a good request: resource %q, %v", res, err)
	}
	if _, res, err := f.parse(authorizeQuery(id, func(q url.Values) { q.Set("resource", "http://localhost:8080/mcp") })); err != nil || res != "http://localhost:8080/mcp" {
		t.Errorf("a request for Maven at its other origin: resource %q, %v", res, err)
	}
	// /sse is the same server by the older transport: its token is /mcp's.
	sse := strings.TrimSuffix(resource, "/mcp") + "/sse"
	if _, res, err := f.parse(authorizeQuery(id, func(q url.Values) { q.Set("resource", sse) })); err != nil || res != resource {
		t.Errorf("a request for %s: resource %q, %v", sse, res, err)
	}
	for name, edit := range map[string]func(url.Values){
		"no PKCE": func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") },
		"plain": func(q url.Values) {
			q.Set("code_challenge_method", "plain")
			q.Set("code_challenge", strings.Repeat("a", 43))
		},
		"no method":            func(q url.Values) { q.Del("code_challenge_method") },
		"a short challenge":    func(q url.Values) { q.Set("code_challenge", "abc") },
		"another port":         func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:33419/cb") },
		"another path":         func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:33418/cc") },
		"a trailing slash":     func(q url.Values) { q.Set("redirect_uri", redirect+"/") },
		"another resource":     func(q url.Values) { q.Set("resource", "https://elsewhere.example/mcp") },
		"two resources":        func(q url.Values) { q["resource"] = []string{resource, resource} },
		"an implicit grant":    func(q url.Values) { q.Set("response_type", "token") },
		"an unknown client":    func(q url.Values) { q.Set("client_id", "nobody") },
		"a form_post response": func(q url.Values) { q.Set("response_mode", "form_post") },
	} {
		if _, _, err := f.parse(authorizeQuery(id, edit)); err == nil {
			t.Errorf("%s: the request was taken", name)
		}
	}
	// A registration past its 15 minutes, not swept yet, is gone too.
	late := f.register(t, "late")
	f.clock.Advance(clients.PendingLifetime)
	if _, _, err := f.parse(authorizeQuery(late, nil)); err == nil {
		t.Error("an expired registration was taken")
	}
	// A static client is no OAuth client.
	if _, _, err := f.svc.AddStatic(context.Background(), "desk", clients.Choice{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.parse(authorizeQuery("static:desk", nil)); err == nil {
		t.Error("a static client's id was taken")
	}
}

// TestConsentNeedsAStepUpNamingWhatWasShown: an authorization request is answered only by the
// browser session it was shown in, once, and Allow only with a step-up whose digest names that
// request, the client, its redirect URI and exactly the ticked tools.
func TestConsentNeedsAStepUpNamingWhatWasShown(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.register(t, "VS Code")
	ar, res, err := f.parse(authorizeQuery(id, nil))
	if err != nil {
		t.Fatal(err)
	}
	req, err := f.svc.Begin("session-a", ar, res)
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.svc.Begin("session-a", ar, res)
	if err != nil {
		t.Fatal(err)
	}
	if req.Client.ID != id || req.Client.Name != "VS Code" || req.RedirectURI != redirect || req.Resource != resource {
		t.Fatalf("request = %+v", req)
	}
	ticked := clients.Choice{ToolIDs: []int64{4, 2}}
	proofFor := func(r clients.Request, c clients.Choice) auth.StepUp {
		return authtest.Proof(t, auth.One(auth.ActionConsentClient, 0, clients.ConsentDigest(r, c)))
	}
	for name, proof := range map[string]auth.StepUp{
		"no proof":         {},
		"another tool set": proofFor(req, clients.Choice{ToolIDs: []int64{2}}),
		"every tool":       proofFor(req, clients.Choice{All: true}),
		"another request":  proofFor(other, ticked),
		"another action":   authtest.Proof(t, auth.One(auth.ActionClientTools, 0, clients.ConsentDigest(req, ticked))),
		"another redirect": proofFor(clients.Request{ID: req.ID, Client: req.Client, RedirectURI: "http://127.0.0.1:1/cb", Resource: req.Resource}, ticked),
		"another resource": proofFor(clients.Request{ID: req.ID, Client: req.Client, RedirectURI: req.RedirectURI, Resource: "x"}, ticked),
	} {
		if _, err := f.svc.Consent(ctx, "session-a", req.ID, ticked, proof); !errors.Is(err, auth.ErrStepUpRequired) {
			t.Errorf("%s: Consent = %v, want ErrStepUpRequired", name, err)
		}
	}
	proof := proofFor(req, clients.Choice{ToolIDs: []int64{2, 4}})
	if _, err := f.svc.Consent(ctx, "session-b", req.ID, ticked, proof); !errors.Is(err, clients.ErrNoRequest) {
		t.Errorf("from another session: %v, want ErrNoRequest", err)
	}
	done, err := f.svc.Consent(ctx, "session-a", req.ID, ticked, proof)
	if err != nil {
		t.Fatal(err)
	}
	if done.Form.Get("state") != "state-of-the-client" {
		t.Errorf("the answered request's state = %q", done.Form.Get("state"))
	}
	if _, err := f.svc.Consent(ctx, "session-a", req.ID, ticked, proof); !errors.Is(err, clients.ErrNoRequest) {
		t.Errorf("answered twice: %v, want ErrNoRequest", err)
	}
	g, err := f.svc.Policy(ctx, id)
	if err != nil || g.AllTools || !slices.Equal(g.ToolIDs, []int64{2, 4}) || g.Name != "VS Code" {
		t.Errorf("Policy = %+v, %v", g, err)
	}

	if _, err := f.svc.Deny(ctx, "session-b", other.ID); !errors.Is(err, clients.ErrNoRequest) {
		t.Errorf("Deny from another session: %v, want ErrNoRequest", err)
	}
	if _, err := f.svc.Deny(ctx, "session-a", other.ID); err != nil {
		t.Errorf("Deny: %v", err)
	}
	if got, want := f.actions(t), []string{clients.ActionConsented, clients.ActionDenied}; !slices.Equal(got, want) {
		t.Errorf("feed = %v, want %v", got, want)
	}
}

// TestRequestsInProgressAreBounded: a session holds at most a few requests in progress (the
// oldest goes), and they expire.
func TestRequestsInProgressAreBounded(t *testing.T) {
	f := newFixture(t)
	ar, res, err := f.parse(authorizeQuery(f.register(t, "c"), nil))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 20 {
		r, err := f.svc.Begin("s", ar, res)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if _, err := f.svc.Request("s", ids[0]); !errors.Is(err, clients.ErrNoRequest) {
		t.Errorf("the oldest of 20 requests is still kept: %v", err)
	}
	if _, err := f.svc.Request("s", ids[19]); err != nil {
		t.Errorf("the newest: %v", err)
	}
	f.clock.Advance(clients.RequestLifetime)
	if _, err := f.svc.Request("s", ids[19]); !errors.Is(err, clients.ErrNoRequest) {
		t.Errorf("a request outlived its lifetime: %v", err)
	}
}
