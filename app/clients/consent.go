package clients

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/ory/fosite"

	"maven/app/auth"
)

// Bounds of the authorization requests in progress. Only the signed-in owner begins one (the
// consent page asks anyone else to sign in first), so no stranger can hold one, evict one or
// make them grow.
const (
	// RequestLifetime is how long a consent page may stay open before it must be loaded again.
	RequestLifetime = 15 * time.Minute
	maxRequests     = 64 // in all
	maxPerSession   = 8  // per browser session
)

// Request is an authorization request the owner's browser is looking at: what the consent page
// shows, and the request itself, answered once the owner allows or denies it.
type Request struct {
	// ID names it in the page's form; Session is the browser session it belongs to (auth's id
	// of it): no other session can answer it.
	ID, Session string
	Client      Client // as it registered, or as its metadata document says
	RedirectURI string
	// Resource is what the token will be bound to (RFC 8707): the one the client asked for, or
	// Maven's MCP server at the origin the owner's browser is at.
	Resource string
	// Form is the request's parameters as they came (state, the PKCE challenge, …).
	Form    url.Values
	Created time.Time
}

// requests are the authorization requests in progress, in memory: a restart ends every
// session, and them with it.
type requests struct {
	now  func() time.Time
	mu   sync.Mutex
	list []Request // oldest first
}

func newRequests(now func() time.Time) *requests { return &requests{now: now} }

// add keeps r, forgetting what expired, and the oldest of its session's (or of all) past the
// bounds.
func (q *requests) add(r Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.expire()
	mine := 0
	for _, x := range q.list {
		if x.Session == r.Session {
			mine++
		}
	}
	if mine >= maxPerSession {
		i := slices.IndexFunc(q.list, func(x Request) bool { return x.Session == r.Session })
		q.list = slices.Delete(q.list, i, i+1)
	}
	if len(q.list) >= maxRequests {
		q.list = q.list[1:]
	}
	q.list = append(q.list, r)
}

// get returns the request id of session sid, and removes it when take; ErrNoRequest for none.
func (q *requests) get(sid, id string, take bool) (Request, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.expire()
	i := slices.IndexFunc(q.list, func(x Request) bool { return x.ID == id && x.Session == sid })
	if i < 0 || sid == "" {
		return Request{}, ErrNoRequest
	}
	r := q.list[i]
	if take {
		q.list = slices.Delete(q.list, i, i+1)
	}
	return r, nil
}

func (q *requests) expire() {
	cutoff := q.now().Add(-RequestLifetime)
	q.list = slices.DeleteFunc(q.list, func(x Request) bool { return !x.Created.After(cutoff) })
}

// challengeS256 is what a PKCE S256 challenge looks like: base64url, no padding, of a SHA-256.
var challengeS256 = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// errInvalidTarget is RFC 8707's refusal of a resource Maven is not.
var errInvalidTarget = &fosite.RFC6749Error{ErrorField: "invalid_target", CodeField: 400,
	DescriptionField: "The requested resource is invalid, unknown, or malformed."}

// Check refuses, before the owner is asked, what fosite would let through of an authorization
// request parsed at origin: a PKCE challenge that is not S256 (plain included), a redirect URI
// not exactly one the client registered (fosite would take any port of a loopback one), or a
// resource that is not Maven's MCP server. It returns the resource the token will be bound to:
// <origin>/mcp, for a request naming /sse too (the same server by the older transport, whose
// protected-resource metadata names it as its own). Its errors are fosite's, for the client's
// redirect.
func (s *Service) Check(ar fosite.AuthorizeRequester, origin string) (string, error) {
	form := ar.GetRequestForm()
	if form.Get("code_challenge_method") != "S256" || !challengeS256.MatchString(form.Get("code_challenge")) {
		return "", fosite.ErrInvalidRequest.WithHint("Maven takes PKCE with code_challenge_method=S256 and a code_challenge, and nothing else.")
	}
	if raw := form.Get("redirect_uri"); raw != "" && !slices.Contains(ar.GetClient().GetRedirectURIs(), raw) {
		return "", fosite.ErrInvalidRequest.WithHint("The redirect_uri is not exactly one this client registered.")
	}
	switch asked := form["resource"]; len(asked) {
	case 0:
		return ResourceOf(origin), nil
	case 1:
		if res, ok := mcpResource(asked[0]); ok && slices.Contains(s.resources, res) {
			return res, nil
		}
	}
	return "", errInvalidTarget.WithHintf("Maven is the resource %s.", ResourceOf(origin))
}

// Begin keeps the authorization request ar (checked, its resource bound) for the owner's
// browser session sid to answer, and returns it.
func (s *Service) Begin(sid string, ar fosite.AuthorizeRequester, resource string) (Request, error) {
	oc, ok := ar.GetClient().(oauthClient)
	if !ok || sid == "" {
		return Request{}, fmt.Errorf("%w: not a request of Maven's clients", ErrInvalid)
	}
	r := Request{ID: rand.Text(), Session: sid, Client: oc.c, RedirectURI: ar.GetRedirectURI().String(),
		Resource: resource, Form: cloneValues(ar.GetRequestForm()), Created: s.now()}
	s.requests.add(r)
	return r, nil
}

// Request returns the authorization request id of the browser session sid; ErrNoRequest if it
// has none of that id (answered already, expired, or another session's).
func (s *Service) Request(sid, id string) (Request, error) { return s.requests.get(sid, id, false) }

// ConsentDigest is what the step-up of a consent names (docs/design.md#rule-29): the request
// (and so its state and PKCE challenge), the client id, the redirect URI, the resource, and the
// tools the owner ticked.
func ConsentDigest(r Request, c Choice) string {
	c = c.normal()
	return digestOf(struct {
		Request  string  `json:"request"`
		Client   string  `json:"client_id"`
		Redirect string  `json:"redirect_uri"`
		Resource string  `json:"resource"`
		All      bool    `json:"all"`
		Tools    []int64 `json:"tools"`
	}{r.ID, r.Client.ID, r.RedirectURI, r.Resource, c.All, c.ToolIDs})
}

// Consent allows the authorization request id of session sid for choice's tools, as the
// step-up proof approves for ActionConsentClient (ConsentDigest): the client is approved with
// that policy, and the request is returned, answered, for the handler to send the code.
// auth.ErrStepUpRequired without such a proof (the request stays); ErrNoRequest if the session
// has no such request; ErrNotFound if a registration expired meanwhile.
func (s *Service) Consent(ctx context.Context, sid, id string, choice Choice, proof auth.StepUp) (Request, error) {
	r, err := s.requests.get(sid, id, false)
	if err != nil {
		return Request{}, err
	}
	choice = choice.normal()
	if !proof.Approves(auth.ActionConsentClient, auth.Item{Digest: ConsentDigest(r, choice)}) {
		return Request{}, auth.ErrStepUpRequired
	}
	if r, err = s.requests.get(sid, id, true); err != nil {
		return Request{}, err // answered meanwhile by another request of the same session
	}
	c := r.Client
	c.State, c.AllTools, c.ToolIDs, c.ApprovedAt = StateApproved, choice.All, choice.ToolIDs, s.now()
	if err := s.store.Approve(ctx, c); err != nil {
		return Request{}, err
	}
	s.cache.changed()
	s.record(ctx, "owner", ActionConsented, c, map[string]any{"redirect_uri": r.RedirectURI, "tools": choice.record()})
	s.changed(c.ID)
	return r, nil
}

// Deny answers the authorization request id of session sid with a refusal; ErrNoRequest if the
// session has no such request.
func (s *Service) Deny(ctx context.Context, sid, id string) (Request, error) {
	r, err := s.requests.get(sid, id, true)
	if err != nil {
		return Request{}, err
	}
	s.record(ctx, "owner", ActionDenied, r.Client, map[string]any{"redirect_uri": r.RedirectURI})
	return r, nil
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}
