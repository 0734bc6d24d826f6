package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"maven/app/activity"
	"maven/app/mcp/mcptest"
	"maven/app/oauth"
	"maven/app/oauth/oauthtest"
	"maven/app/vault"
	"maven/internal/testkit/testclock"
)

// memVault seals nothing: it stands in for the vault where sealing is not what is tested
// (app/mcp's tests use the real one).
type memVault struct {
	mu     sync.Mutex
	m      map[string][]byte
	locked bool
}

func (v *memVault) SealOAuth(_ context.Context, server string, value []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.locked {
		return vault.ErrLocked
	}
	if v.m == nil {
		v.m = map[string][]byte{}
	}
	v.m[server] = slices.Clone(value)
	return nil
}

func (v *memVault) OpenOAuth(_ context.Context, server string) ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	b, ok := v.m[server]
	switch {
	case !ok:
		return nil, vault.ErrNotFound
	case v.locked:
		return nil, vault.ErrLocked
	}
	return slices.Clone(b), nil
}

func (v *memVault) DeleteOAuth(_ context.Context, server string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, server)
	return nil
}

func (v *memVault) OAuthServers(context.Context) ([]string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Sorted(maps.Keys(v.m)), nil
}

// feed records activity events.
type feed struct {
	mu     sync.Mutex
	events []activity.Event
}

func (f *feed) Append(_ context.Context, evs ...activity.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, evs...)
	return nil
}

func (f *feed) actions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		out = append(out, e.Action)
	}
	return out
}

const origin = "http://localhost:8080"

type fixture struct {
	fake *oauthtest.Server
	svc  *oauth.Service
	v    *memVault
	feed *feed
}

func newFixture(t *testing.T, opts oauthtest.Options) *fixture {
	f := &fixture{v: &memVault{}, feed: &feed{}}
	f.fake = oauthtest.New(t, mcptest.NewScripted(mcptest.ToolSpec{Name: "echo", Echo: true}).HTTPHandler(), opts)
	f.svc = oauth.New(f.v, f.feed, oauth.Options{Origins: []string{origin, "https://maven.example"}})
	return f
}

// refusal is the challenge of an MCP request without a token.
func (f *fixture) refusal(t *testing.T) oauth.Challenge {
	t.Helper()
	resp, err := http.Post(f.fake.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return oauth.Challenge{Status: resp.StatusCode, WWWAuthenticate: resp.Header.Values("WWW-Authenticate"), URL: f.fake.URL}
}

// follow requests the authorization URL as a browser would and returns the redirect back to
// Maven's callback (for the clients Maven registers, that of the authorization server).
func follow(t *testing.T, authURL string) *url.URL {
	t.Helper()
	loc, err := oauthtest.Authorize(context.Background(), authURL)
	if err != nil || loc.Scheme+"://"+loc.Host != origin || !strings.HasPrefix(loc.Path, oauth.CallbackPath+"/") {
		t.Fatalf("authorize: %v, Location %v: want a redirect to Maven's callback", err, loc)
	}
	return loc
}

func (f *fixture) signIn(t *testing.T, need oauth.Need, ch oauth.Challenge, session string) (string, chan error) {
	t.Helper()
	done := make(chan error, 1)
	u, err := f.svc.Begin(context.Background(), oauth.SignIn{Server: "tasks", ServerURL: f.fake.URL, Challenge: ch,
		Need: need, Session: session, Origin: origin, Done: func(err error) { done <- err }})
	if err != nil {
		t.Fatal(err)
	}
	return u, done
}

// TestSignInSealsATokenThatWorks walks one sign-in through go-sdk against the fake: discovery
// shows what the owner approves, the authorization request asks for exactly that, the callback
// of the owner's own session finishes it once, and the sealed token opens the server.
func TestSignInSealsATokenThatWorks(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, oauthtest.Options{ScopesSupported: []string{"tasks:read", "offline_access"}, ChallengeScope: "tasks:read"})
	ch := f.refusal(t)
	need, err := oauth.Discover(ctx, f.svc.HTTPClient(), f.fake.URL, ch, nil, oauth.Registration{})
	if err != nil {
		t.Fatal(err)
	}
	if need.Issuer != f.fake.Issuer || need.Resource != f.fake.URL || need.ScopeText() != "tasks:read offline_access" || need.StepUp {
		t.Fatalf("need %+v", need)
	}

	authURL, done := f.signIn(t, need, ch, "owner-session")
	q := follow(t, authURL)
	// Another browser session cannot finish it, nor spend it.
	if _, err := f.svc.Complete(ctx, "someone-else", q); !errors.Is(err, oauth.ErrNoSignIn) {
		t.Fatalf("complete from another session: %v, want ErrNoSignIn", err)
	}
	server, err := f.svc.Complete(ctx, "owner-session", q)
	if err != nil || server != "tasks" {
		t.Fatalf("complete: %q %v", server, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("done: %v", err)
	}
	if _, err := f.svc.Complete(ctx, "owner-session", q); !errors.Is(err, oauth.ErrNoSignIn) {
		t.Fatalf("a replayed callback: %v, want ErrNoSignIn", err)
	}
	if p := f.fake.Problems(); len(p) > 0 {
		t.Fatalf("the authorization server saw mistakes: %v", p)
	}
	if got := f.feed.actions(); !slices.Equal(got, []string{activity.ActionSignedIn}) {
		t.Fatalf("activity %v", got)
	}

	sess, err := f.svc.Open(ctx, "tasks", f.fake.URL, nil)
	if err != nil || !sess.SignedIn() {
		t.Fatalf("open: signed in %v, %v", sess != nil && sess.SignedIn(), err)
	}
	ts, _ := sess.TokenSource(ctx)
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, f.fake.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		t.Fatal("the sealed token was refused")
	}
	if !slices.Equal(sess.Granted(), []string{"offline_access", "tasks:read"}) {
		t.Fatalf("granted %v", sess.Granted())
	}
}

// TestSignInOpensOnlyWhatWasApproved: an authorization request that is not what the page
// showed (here, the authorization server's metadata moved its endpoint since) is never opened.
func TestSignInOpensOnlyWhatWasApproved(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, oauthtest.Options{ChallengeScope: "tasks:read"})
	var logs strings.Builder
	f.svc = oauth.New(f.v, f.feed, oauth.Options{Origins: []string{origin}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ch := f.refusal(t)
	need, err := oauth.Discover(ctx, f.svc.HTTPClient(), f.fake.URL, ch, nil, oauth.Registration{})
	if err != nil {
		t.Fatal(err)
	}
	need.AuthorizationEndpoint = "https://elsewhere.example/authorize"
	done := make(chan error, 1)
	_, err = f.svc.Begin(ctx, oauth.SignIn{Server: "tasks", ServerURL: f.fake.URL, Challenge: ch, Need: need,
		Session: "s", Origin: origin, Done: func(err error) { done <- err }})
	if !errors.Is(err, oauth.ErrChanged) {
		t.Fatalf("begin: %v, want ErrChanged", err)
	}
	if err := <-done; !errors.Is(err, oauth.ErrChanged) {
		t.Fatalf("done: %v", err)
	}
	if n := f.fake.Authorizations.Load(); n != 0 {
		t.Fatalf("%d authorization requests reached the server", n)
	}
	if got := f.feed.actions(); !slices.Equal(got, []string{activity.ActionSignInFailed}) {
		t.Fatalf("activity %v", got)
	}
	if strings.Contains(logs.String(), "sign-in failed") {
		t.Fatalf("the sign-in logged the failure Begin returned, which its caller logs:\n%s", logs.String())
	}
	if _, err := f.svc.Begin(ctx, oauth.SignIn{Server: "tasks", ServerURL: f.fake.URL, Challenge: ch, Need: need,
		Session: "s", Origin: "http://evil.example"}); err == nil {
		t.Fatal("a callback on an origin that is not Maven's was accepted")
	}
}

// TestSignInsInProgressAreBounded: one per session and server (a second replaces the first),
// at most MaxFlows in all; an expired one cannot be finished.
func TestSignInsInProgressAreBounded(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(time.Now())
	f := newFixture(t, oauthtest.Options{})
	f.svc = oauth.New(f.v, f.feed, oauth.Options{Origins: []string{origin}, MaxFlows: 2, Now: clock.Now})
	ch := f.refusal(t)
	need, err := oauth.Discover(ctx, f.svc.HTTPClient(), f.fake.URL, ch, nil, oauth.Registration{})
	if err != nil {
		t.Fatal(err)
	}
	begin := func(session string) (string, error) {
		return f.svc.Begin(ctx, oauth.SignIn{Server: "tasks", ServerURL: f.fake.URL, Challenge: ch, Need: need, Session: session, Origin: origin})
	}
	first, err := begin("a")
	if err != nil {
		t.Fatal(err)
	}
	second, err := begin("a")
	if err != nil {
		t.Fatalf("the same session again: %v", err)
	}
	if _, err := begin("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := begin("c"); !errors.Is(err, oauth.ErrTooManySignIns) {
		t.Fatalf("a third sign-in in progress: %v, want ErrTooManySignIns", err)
	}
	if _, err := f.svc.Complete(ctx, "a", follow(t, first)); !errors.Is(err, oauth.ErrNoSignIn) && err == nil {
		t.Fatalf("the replaced sign-in finished: %v", err)
	}
	clock.Advance(oauth.DefaultFlowTTL + time.Second)
	if _, err := f.svc.Complete(ctx, "a", follow(t, second)); !errors.Is(err, oauth.ErrNoSignIn) {
		t.Fatalf("an expired sign-in: %v, want ErrNoSignIn", err)
	}
}

// TestDiscoverRefusesAnotherResource: protected resource metadata naming another resource is
// refused, and nothing is asked of any authorization server.
func TestDiscoverRefusesAnotherResource(t *testing.T) {
	mux := http.NewServeMux()
	var base string
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"resource":"https://evil.example/mcp","authorization_servers":["` + base + `"]}`))
	})
	asked := false
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) { asked = true })
	srv := newServer(t, mux)
	base = srv
	ch := oauth.Challenge{Status: 401, WWWAuthenticate: []string{`Bearer resource_metadata="` + srv + `/.well-known/oauth-protected-resource/mcp"`}}
	_, err := oauth.Discover(context.Background(), http.DefaultClient, srv+"/mcp", ch, nil, oauth.Registration{})
	if !errors.Is(err, oauth.ErrResourceMismatch) || !strings.Contains(err.Error(), "https://evil.example/mcp") {
		t.Fatalf("discover: %v, want ErrResourceMismatch naming the other resource", err)
	}
	if asked {
		t.Fatal("an authorization server was asked for its metadata")
	}
}

func newServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestMetadataDocument: Maven's client ID metadata document exists only with an https origin,
// names its own URL as the client id, and lists only https callbacks.
func TestMetadataDocument(t *testing.T) {
	svc := oauth.New(&memVault{}, nil, oauth.Options{Origins: []string{origin, "https://maven.example"}})
	doc := svc.MetadataDocument()
	if doc["client_id"] != "https://maven.example"+oauth.MetadataDocumentPath || !svc.HasMetadataDocument() {
		t.Fatalf("document %v", doc)
	}
	if got := doc["redirect_uris"].([]string); !slices.Equal(got, []string{"https://maven.example" + oauth.CallbackPath}) {
		t.Fatalf("redirect uris %v", got)
	}
	if svc := oauth.New(&memVault{}, nil, oauth.Options{Origins: []string{origin}}); svc.MetadataDocument() != nil || svc.HasMetadataDocument() {
		t.Fatal("a document without an https origin")
	}
}

// TestCredentialsDoNotFollowARedirect: a token endpoint that answers a refresh with 307 to
// another origin (another port of its host) would have the refresh token and the client secret
// posted there again; Maven refuses the redirect, and the other server sees nothing.
func TestCredentialsDoNotFollowARedirect(t *testing.T) {
	ctx := context.Background()
	var leaked atomic.Int64
	elsewhere := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("refresh_token") != "" || r.PostForm.Get("client_secret") != "" || r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"at-elsewhere","token_type":"Bearer","expires_in":3600}`))
	}))
	issuer := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere+"/token", http.StatusTemporaryRedirect)
	}))
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInParams, oauth2.AuthStyleInHeader} {
		v := &memVault{}
		raw, err := json.Marshal(oauth.Credentials{Issuer: issuer, Resource: "http://tasks.example/mcp", ClientID: "maven",
			ClientSecret: "cs-" + t.Name(), TokenURL: issuer + "/token", AuthStyle: style,
			Token: &oauth2.Token{AccessToken: "at-old", RefreshToken: "rt-" + t.Name(), Expiry: time.Now().Add(-time.Hour)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := v.SealOAuth(ctx, "tasks", raw); err != nil {
			t.Fatal(err)
		}
		sess, err := oauth.New(v, nil, oauth.Options{Origins: []string{origin}}).Open(ctx, "tasks", "http://tasks.example/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		ts, _ := sess.TokenSource(ctx)
		if tok, err := ts.Token(); err == nil {
			t.Errorf("auth style %d: a refresh through a redirect gave %q", style, tok.AccessToken)
		}
	}
	if n := leaked.Load(); n != 0 {
		t.Fatalf("the other origin got the refresh token or the client secret %d times", n)
	}
}

// TestASignInCoversOnlyItsResource: the token of a sign-in goes only to the URLs its resource
// covers (RFC 8707): its own, one below it, any on an origin whose resource is the origin, the
// default port spelled out or not, the query aside; never another host, port, scheme or path.
func TestASignInCoversOnlyItsResource(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		resource, dialled string
		covered           bool
	}{
		{"https://tasks.example/mcp", "https://tasks.example/mcp", true},
		{"https://tasks.example/mcp", "https://TASKS.example:443/mcp?key=new", true},
		{"https://tasks.example/mcp", "https://tasks.example/mcp/v2", true},
		{"https://tasks.example", "https://tasks.example/other", true},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp", true},
		{"https://tasks.example/mcp", "https://tasks.example/mcp2", false},
		{"https://tasks.example/mcp", "https://tasks.example/", false},
		{"https://tasks.example/mcp", "https://other.example/mcp", false},
		{"https://tasks.example/mcp", "http://tasks.example/mcp", false},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8081/mcp", false},
		{"", "https://tasks.example/mcp", false},
	} {
		v := &memVault{}
		raw, _ := json.Marshal(oauth.Credentials{Issuer: "https://auth.example", Resource: c.resource, ClientID: "maven",
			TokenURL: "https://auth.example/token", Token: &oauth2.Token{AccessToken: "at", Expiry: time.Now().Add(time.Hour)}})
		if err := v.SealOAuth(ctx, "tasks", raw); err != nil {
			t.Fatal(err)
		}
		sess, err := oauth.New(v, nil, oauth.Options{}).Open(ctx, "tasks", c.dialled, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sess.SignedIn() != c.covered || sess.Moved() == c.covered || !sess.Sealed() {
			t.Errorf("a sign-in for %q dialling %q: signed in %v, moved %v; want covered %v",
				c.resource, c.dialled, sess.SignedIn(), sess.Moved(), c.covered)
		}
	}
}

// TestAnAnswerCountsOnlyFromItsAuthorizationServer: a sign-in's answer is accepted only at the
// callback of the sign-in's authorization server, and only naming it where it names itself
// (RFC 9207): an answer elsewhere, or naming none though the authorization server said it
// would, fails the sign-in as a mix-up, spends it, and its code is never exchanged.
func TestAnAnswerCountsOnlyFromItsAuthorizationServer(t *testing.T) {
	ctx := context.Background()
	for name, tamper := range map[string]func(u *url.URL){
		"at another callback": func(u *url.URL) { u.Path = oauth.CallbackPath },
		"at another authorization server's callback": func(u *url.URL) {
			u.Path = oauth.CallbackPathFor("https://elsewhere.example")
		},
		"naming no issuer": func(u *url.URL) {
			q := u.Query()
			q.Del("iss")
			u.RawQuery = q.Encode()
		},
		"naming another issuer": func(u *url.URL) {
			q := u.Query()
			q.Set("iss", "https://elsewhere.example")
			u.RawQuery = q.Encode()
		},
	} {
		f := newFixture(t, oauthtest.Options{Iss: true})
		ch := f.refusal(t)
		need, err := oauth.Discover(ctx, f.svc.HTTPClient(), f.fake.URL, ch, nil, oauth.Registration{})
		if err != nil || !need.IssResponse {
			t.Fatalf("discover: %+v %v", need, err)
		}
		authURL, done := f.signIn(t, need, ch, "owner-session")
		back := follow(t, authURL)
		if back.Path != oauth.CallbackPathFor(f.fake.Issuer) || back.Query().Get("iss") != f.fake.Issuer {
			t.Fatalf("the authorization server answered at %s", back)
		}
		genuine := *back
		tamper(back)
		if _, err := f.svc.Complete(ctx, "owner-session", back); !errors.Is(err, oauth.ErrMixUp) {
			t.Errorf("an answer %s: %v, want ErrMixUp", name, err)
		}
		if err := <-done; !errors.Is(err, oauth.ErrMixUp) {
			t.Errorf("an answer %s: the sign-in ended with %v", name, err)
		}
		if _, err := f.svc.Complete(ctx, "owner-session", &genuine); !errors.Is(err, oauth.ErrNoSignIn) {
			t.Errorf("the genuine answer after one %s: %v, want the sign-in spent", name, err)
		}
		if n := f.fake.Exchanges.Load(); n != 0 {
			t.Errorf("an answer %s: %d codes exchanged", name, n)
		}
	}
}

// TestDiscoverNeedsTheCodeGrant: metadata without grant_types_supported takes the RFC 8414
// default (authorization_code and implicit), and one that lists the code grant signs in; one
// that lists other grants only offers no browser sign-in.
func TestDiscoverNeedsTheCodeGrant(t *testing.T) {
	for grants, want := range map[string]error{
		"": nil,
		`"grant_types_supported": ["authorization_code"],`: nil,
		`"grant_types_supported": ["client_credentials"],`: oauth.ErrNoBrowserSignIn,
		`"grant_types_supported": [],`:                     oauth.ErrNoBrowserSignIn,
	} {
		mux := http.NewServeMux()
		var base string
		mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"resource":"` + base + `/mcp","authorization_servers":["` + base + `"]}`))
		})
		mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"issuer":"` + base + `",` + grants + `"authorization_endpoint":"` + base + `/authorize",
				"token_endpoint":"` + base + `/token","registration_endpoint":"` + base + `/register","response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}`))
		})
		base = newServer(t, mux)
		ch := oauth.Challenge{Status: 401, WWWAuthenticate: []string{`Bearer resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`}}
		_, err := oauth.Discover(context.Background(), http.DefaultClient, base+"/mcp", ch, nil, oauth.Registration{})
		if !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("metadata with %q: %v, want %v", grants, err, want)
		}
	}
}

// TestALockEndsTheSignInsInProgress: a sign-in in progress holds what it needs to finish (a
// client secret, the PKCE verifier) until its callback; a lock ends it, and its answer, come
// later, finishes nothing.
func TestALockEndsTheSignInsInProgress(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, oauthtest.Options{})
	ch := f.refusal(t)
	need, err := oauth.Discover(ctx, f.svc.HTTPClient(), f.fake.URL, ch, nil, oauth.Registration{})
	if err != nil {
		t.Fatal(err)
	}
	authURL, done := f.signIn(t, need, ch, "owner-session")
	f.svc.EndSignIns()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "locked") {
			t.Fatalf("the sign-in ended with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the lock did not end the sign-in in progress")
	}
	if _, err := f.svc.Complete(ctx, "owner-session", follow(t, authURL)); !errors.Is(err, oauth.ErrNoSignIn) {
		t.Fatalf("its answer after the lock: %v, want ErrNoSignIn", err)
	}
	if n := f.fake.Exchanges.Load(); n != 0 {
		t.Fatalf("%d codes exchanged", n)
	}
}
