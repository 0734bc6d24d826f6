package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"maven/app/activity"
)

// Errors of a sign-in.
var (
	// ErrNoSignIn means the callback names no sign-in of this browser session in progress: an
	// unknown, spent or expired state, or another session's.
	ErrNoSignIn = errors.New("no sign-in of yours is in progress for this answer")
	// ErrTooManySignIns means MaxFlows sign-ins are in progress already.
	ErrTooManySignIns = errors.New("too many sign-ins in progress; finish or wait for one")
	// ErrChanged means the authorization request is not what the owner approved: the server or
	// its authorization server changed what it asks for since the page showed it.
	ErrChanged = errors.New("the server changed what it asks for since you approved it")
	// ErrRefused means the authorization server answered the callback with an error (the owner
	// declined, or it refused the request).
	ErrRefused = errors.New("the authorization server refused the sign-in")
	// ErrMixUp means the answer on the callback is not from the sign-in's authorization server:
	// it came back to another one's callback, or names another issuer (RFC 9207), or names none
	// where the authorization server said it would (RFC 9700 section 4.4). Its code is not
	// exchanged.
	ErrMixUp = errors.New("the answer is not from the authorization server this sign-in is at")
	// errEnded ends a sign-in that a lock, or the same sign-in begun again, cut short.
	errEnded = errors.New("the sign-in was ended before the authorization server answered: Maven was locked, or it was begun again")
)

// SignIn is one sign-in the owner asked for.
type SignIn struct {
	Server    string
	ServerURL string    // the MCP endpoint, secrets expanded
	Challenge Challenge // the refusal that made it need a sign-in
	Need      Need      // what the owner approved
	// Session is the owner's browser session: only it can finish the sign-in.
	Session string
	// Origin is the browser's origin, one of Options.Origins: the callback lands on it.
	Origin     string
	Configured *Configured // a pre-registered client, secrets expanded; nil for none
	// Done is called once the sign-in ended: with nil after its credentials were sealed.
	Done func(error)
}

// flow is a sign-in in progress: from Begin to its callback, then its token exchange.
type flow struct {
	session, server string
	// issuer is the sign-in's authorization server, path the callback it sends the browser
	// back to; iss is set when it names itself in its answers (RFC 9207).
	issuer, path string
	iss          bool
	expires      time.Time
	answer       chan callback // the callback's parameters, once
	outcome      chan error    // the exchange's result, once
	// handedOver is set once Begin returned the authorization URL: from then on, a failure is
	// the sign-in's to report; before, Begin returns it to its caller.
	handedOver atomic.Bool
}

// callback is what the authorization server sent the browser back with, and where.
type callback struct{ path, code, state, iss, errCode, errText string }

// flows are the sign-ins in progress, by state. Only a stepped-up owner begins one (Begin is
// behind the sign-in's step-up), at most max at once and one per session and server: nothing
// anonymous can grow them or evict one, and a callback finishes only its own session's.
type flows struct {
	max int
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	byState map[string]*flow
	running map[string]*reservation // by session+"\x00"+server
}

func newFlows(max int, ttl time.Duration, now func() time.Time) *flows {
	return &flows{max: max, ttl: ttl, now: now, byState: map[string]*flow{}, running: map[string]*reservation{}}
}

// Begin starts a sign-in and returns the authorization URL to send the owner's browser to.
// go-sdk's auth.AuthorizationCodeHandler runs it, on a goroutine of its own until the callback
// or FlowTTL: discovery, client registration, PKCE, the resource indicator; its authorization
// request must be exactly what the owner approved (in.Need) or nothing is opened (ErrChanged).
// A sign-in begun again by the same session for the same server replaces the first.
func (s *Service) Begin(ctx context.Context, in SignIn) (string, error) {
	if !slices.Contains(s.opts.Origins, in.Origin) {
		return "", fmt.Errorf("sign-in from %q: not one of Maven's origins", in.Origin)
	}
	flowCtx, cancel, err := s.flows.reserve(in.Session, in.Server)
	if err != nil {
		return "", err
	}
	plan := s.plan(ctx, in)
	f := &flow{session: in.Session, server: in.Server, issuer: in.Need.Issuer, path: plan.path, iss: in.Need.IssResponse,
		expires: s.opts.Now().Add(s.opts.FlowTTL), answer: make(chan callback, 1), outcome: make(chan error, 1)}
	opened := make(chan string, 1)
	failed := make(chan error, 1)
	var got struct {
		cfg *oauth2.Config
		tok *oauth2.Token
	}
	h, err := auth.NewAuthorizationCodeHandler(s.handlerConfig(in, plan, func(c *oauth2.Config, t *oauth2.Token) {
		got.cfg, got.tok = c, t
	}, s.fetcher(in.Need, f, opened)))
	if err != nil {
		cancel()
		return "", fmt.Errorf("sign-in to %s: %w", in.Server, err)
	}
	go func() {
		defer cancel()
		err := authorize(flowCtx, h, in)
		if err == nil {
			err = s.seal(in, got.cfg, got.tok, plan.redirects)
		} else if clientRefused(err) {
			s.stale.set(in.Server, true)
		}
		s.finish(in, f, err)
		f.outcome <- err
		failed <- err
	}()
	wait := time.NewTimer(beginTimeout)
	defer wait.Stop()
	select {
	case u := <-opened:
		f.handedOver.Store(true)
		return u, nil
	case err := <-failed:
		return "", fmt.Errorf("sign-in to %s: %w", in.Server, err)
	case <-wait.C:
		cancel()
		return "", fmt.Errorf("sign-in to %s: its authorization server did not answer within %s", in.Server, beginTimeout)
	case <-ctx.Done():
		cancel()
		return "", ctx.Err()
	}
}

// beginTimeout bounds what Begin waits for the authorization URL (go-sdk fetches the metadata
// again, and may register Maven): an authorization server that never answers must not hold the
// owner's request, nor one of the sign-ins in progress, for minutes.
const beginTimeout = 30 * time.Second

// authorize runs go-sdk's authorization code flow for the refusal in.Challenge.
func authorize(ctx context.Context, h *auth.AuthorizationCodeHandler, in SignIn) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.ServerURL, nil)
	if err != nil {
		return err
	}
	resp := &http.Response{StatusCode: in.Challenge.Status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}
	for _, v := range in.Challenge.WWWAuthenticate {
		resp.Header.Add("WWW-Authenticate", v)
	}
	return h.Authorize(ctx, req, resp)
}

// callbacks are Maven's redirect URIs at path, one on each origin.
func (s *Service) callbacks(path string) []string {
	redirects := make([]string, 0, len(s.opts.Origins))
	for _, o := range s.opts.Origins {
		redirects = append(redirects, o+path)
	}
	return redirects
}

// clientPlan is how one sign-in identifies Maven, and where the browser comes back.
type clientPlan struct {
	metadataDocument bool                       // Maven's client ID metadata document
	client           *oauthex.ClientCredentials // the configured client, or the one registered before
	register         bool                       // register dynamically, with redirects
	redirects        []string                   // a client Maven registers: its callbacks
	path             string                     // the callback path of this sign-in
}

// plan chooses how in identifies Maven, in go-sdk's order: its client ID metadata document where
// the authorization server takes one and the browser's origin is https, else the configured
// client, else the one Maven registered there before, else dynamic registration. The first
// two come back to CallbackPath (what the document lists, what the owner registered); a client
// Maven registers comes back to its authorization server's own, CallbackPathFor.
func (s *Service) plan(ctx context.Context, in SignIn) clientPlan {
	var configured *oauthex.ClientCredentials
	if c := in.Configured; c != nil {
		configured = &oauthex.ClientCredentials{ClientID: c.ClientID}
		if c.ClientSecret != "" {
			configured.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: c.ClientSecret}
		}
	}
	switch {
	case s.metadataDocumentURL() != "" && strings.HasPrefix(in.Origin, "https://") && in.Need.MetadataDocument:
		return clientPlan{metadataDocument: true, client: configured, path: CallbackPath}
	case configured != nil:
		return clientPlan{client: configured, path: CallbackPath}
	}
	path := CallbackPathFor(in.Need.Issuer)
	if reuse, redirects := s.registered(ctx, in); reuse != nil {
		return clientPlan{client: reuse, redirects: redirects, path: path}
	}
	return clientPlan{register: true, redirects: s.callbacks(path), path: path}
}

// handlerConfig is go-sdk's configuration of one sign-in: the client plan chose, refresh tokens
// asked for, and exactly the approved scopes.
func (s *Service) handlerConfig(in SignIn, plan clientPlan, keep func(*oauth2.Config, *oauth2.Token), fetch auth.AuthorizationCodeFetcher) *auth.AuthorizationCodeHandlerConfig {
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              in.Origin + plan.path,
		AuthorizationCodeFetcher: fetch,
		PreregisteredClient:      plan.client,
		ScopeFilter:              func([]string) []string { return slices.Clone(in.Need.Scopes) },
		RequestRefreshToken:      true,
		// Maven checks the answer's issuer itself (fetcher), where it is sent or promised.
		AcceptUnadvertisedIss: true,
		Client:                s.opts.HTTP,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			keep(c, t)
			return c.TokenSource(ctx, t), nil
		},
	}
	if plan.metadataDocument {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: s.metadataDocumentURL()}
	}
	if plan.register {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: plan.redirects, ClientName: clientName,
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}}
	}
	return cfg
}

// fetcher hands the authorization URL to Begin, once it has checked it asks for what the owner
// approved, and waits for the callback.
func (s *Service) fetcher(need Need, f *flow, opened chan<- string) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, err := url.Parse(args.URL)
		if err != nil {
			return nil, err
		}
		if err := asApproved(u, need); err != nil {
			return nil, err
		}
		state := u.Query().Get("state")
		s.flows.add(state, f)
		defer s.flows.remove(state)
		opened <- args.URL
		select {
		case a := <-f.answer:
			if err := f.fromItsIssuer(a); err != nil {
				return nil, err
			}
			// The authorization server knew the client well enough to send the browser back.
			s.stale.set(f.server, false)
			if a.errCode != "" {
				return nil, fmt.Errorf("%w: %s %s", ErrRefused, a.errCode, a.errText)
			}
			return &auth.AuthorizationResult{Code: a.code, State: a.state, Iss: a.iss}, nil
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("no answer from the authorization server within %s", s.opts.FlowTTL)
			}
			return nil, errEnded
		}
	}
}

// fromItsIssuer checks that the answer a is from the flow's authorization server: it came back
// to that authorization server's callback, and names it (RFC 9207) if it names any, as it must
// where the authorization server said it would. Otherwise its code may be another authorization
// server's, which Maven would send, with the PKCE verifier, to this one's token endpoint (a
// mix-up, RFC 9700 section 4.4).
func (f *flow) fromItsIssuer(a callback) error {
	switch {
	case a.path != f.path:
		return fmt.Errorf("%w: it came back to the callback of another authorization server (%s), not of %s", ErrMixUp, a.path, f.issuer)
	case a.iss != "" && a.iss != f.issuer:
		return fmt.Errorf("%w: it names the authorization server %q, not %q", ErrMixUp, a.iss, f.issuer)
	case a.iss == "" && f.iss:
		return fmt.Errorf("%w: %s says it names itself in its answers, and this one names no authorization server", ErrMixUp, f.issuer)
	}
	return nil
}

// asApproved checks an authorization request against the need the owner approved: the same
// endpoint, resource and scopes, and PKCE with S256.
func asApproved(u *url.URL, need Need) error {
	q := u.Query()
	endpoint := *u
	endpoint.RawQuery, endpoint.Fragment = "", ""
	want, err := url.Parse(need.AuthorizationEndpoint)
	if err != nil {
		return err
	}
	want.RawQuery, want.Fragment = "", ""
	scopes := strings.Fields(q.Get("scope"))
	switch {
	case endpoint.String() != want.String():
		return fmt.Errorf("%w: the authorization endpoint is %s, not %s", ErrChanged, endpoint.String(), want.String())
	case q.Get("resource") != need.Resource:
		return fmt.Errorf("%w: the resource is %q, not %q", ErrChanged, q.Get("resource"), need.Resource)
	case !sameSet(scopes, need.Scopes):
		return fmt.Errorf("%w: the scopes are %q, not %q", ErrChanged, strings.Join(scopes, " "), need.ScopeText())
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "":
		return fmt.Errorf("%w: the request lacks PKCE (S256) or a state", ErrChanged)
	}
	return nil
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// seal keeps what the sign-in got: the client go-sdk used, whether Maven registered it (with
// the callbacks redirects), and the token.
func (s *Service) seal(in SignIn, c *oauth2.Config, t *oauth2.Token, redirects []string) error {
	if c == nil || t == nil {
		return errors.New("the sign-in returned no token")
	}
	scopes := strings.Fields(fmt.Sprint(t.Extra("scope")))
	if t.Extra("scope") == nil {
		scopes = slices.Clone(in.Need.Scopes)
	}
	// Their order means nothing (RFC 6749 section 3.3), and go-sdk asks for them in a map's
	// order: kept sorted, what a step-up asks for again comes out the same every time.
	slices.Sort(scopes)
	creds := Credentials{Issuer: in.Need.Issuer, Resource: in.Need.Resource, ClientID: c.ClientID,
		ClientSecret: c.ClientSecret, TokenURL: c.Endpoint.TokenURL, AuthStyle: c.Endpoint.AuthStyle,
		Scopes: scopes, Token: t}
	if c.ClientID != s.metadataDocumentURL() && (in.Configured == nil || c.ClientID != in.Configured.ClientID) {
		creds.Registered, creds.Redirects = true, redirects
	}
	ctx, cancel := context.WithTimeout(context.Background(), sealTimeout)
	defer cancel()
	if err := s.save(ctx, in.Server, creds); err != nil {
		return fmt.Errorf("seal the tokens: %w", err)
	}
	return nil
}

// finish records how the sign-in f ended and tells the caller. A failure is logged here once
// Begin handed out the authorization URL (at the callback, the exchange, or the flow's end);
// one before is Begin's error, which its caller reports: each failure is logged once.
func (s *Service) finish(in SignIn, f *flow, err error) {
	detail := map[string]any{"issuer": in.Need.Issuer, "scopes": in.Need.ScopeText()}
	if err != nil {
		detail["error"] = errorText(err)
		if f.handedOver.Load() {
			s.logger.Warn("oauth: sign-in failed", "server", in.Server, "issuer", in.Need.Issuer, "err", err)
		}
		s.record("owner", activity.ActionSignInFailed, in.Server, detail)
	} else {
		s.logger.Info("oauth: signed in", "server", in.Server, "issuer", in.Need.Issuer)
		s.record("owner", activity.ActionSignedIn, in.Server, detail)
	}
	if in.Done != nil {
		in.Done(err)
	}
}

// Complete finishes the sign-in the callback's state names, for the owner's browser session
// that began it, with the callback at (its path, and its query: code, state, iss; or error and
// error_description). It returns the server once the token exchange is done, or why it
// failed: ErrMixUp for an answer at another authorization server's callback, or naming another
// issuer. The state is spent on the first callback of its session; another session's callback
// spends nothing (ErrNoSignIn).
func (s *Service) Complete(ctx context.Context, session string, at *url.URL) (string, error) {
	q := at.Query()
	state := q.Get("state")
	f := s.flows.take(state, session)
	if f == nil {
		return "", ErrNoSignIn
	}
	f.answer <- callback{path: at.Path, code: q.Get("code"), state: state, iss: q.Get("iss"),
		errCode: q.Get("error"), errText: q.Get("error_description")}
	select {
	case err := <-f.outcome:
		return f.server, err
	case <-ctx.Done():
		return f.server, ctx.Err()
	}
}

// reserve makes room for a sign-in of session to server: it ends that session's earlier one
// to the same server and refuses past max. The context bounds the sign-in to the flows' TTL;
// the release function ends it and gives its room back.
func (fl *flows) reserve(session, server string) (context.Context, context.CancelFunc, error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	key := session + "\x00" + server
	if earlier, ok := fl.running[key]; ok {
		earlier.cancel()
		delete(fl.running, key)
	}
	if len(fl.running) >= fl.max {
		return nil, nil, ErrTooManySignIns
	}
	ctx, cancel := context.WithTimeout(context.Background(), fl.ttl)
	r := &reservation{cancel: cancel}
	fl.running[key] = r
	release := func() {
		cancel()
		fl.mu.Lock()
		defer fl.mu.Unlock()
		if fl.running[key] == r {
			delete(fl.running, key)
		}
	}
	return ctx, release, nil
}

// EndSignIns ends every sign-in in progress, as a lock does: each holds, until its callback,
// what finishing it needs (a client secret, perhaps opened from the vault, and the PKCE
// verifier), and none may outlive the lock (docs/design.md#rule-22). Each fails, and its
// server's card offers the sign-in again.
func (s *Service) EndSignIns() { s.flows.endAll() }

// endAll ends every sign-in in progress.
func (fl *flows) endAll() {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for key, r := range fl.running {
		r.cancel()
		delete(fl.running, key)
	}
}

// reservation is the room one sign-in takes.
type reservation struct{ cancel context.CancelFunc }

func (fl *flows) add(state string, f *flow) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	fl.byState[state] = f
}

func (fl *flows) remove(state string) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	delete(fl.byState, state)
}

// take removes and returns the unexpired flow of state if session began it; nil otherwise,
// leaving another session's flow in place.
func (fl *flows) take(state, session string) *flow {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	f := fl.byState[state]
	if f == nil || f.session != session || state == "" {
		return nil
	}
	delete(fl.byState, state)
	if fl.now().After(f.expires) {
		return nil
	}
	return f
}
