package clients

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ory/fosite"

	"maven/app/activity"
	"maven/app/auth"
)

// Bounds of the anonymous state (docs/design.md#rule-29).
const (
	// PendingLifetime is how long a registration never consented to is kept.
	PendingLifetime = 15 * time.Minute
	// MaxPending is how many registrations may wait for consent at once; beyond it, new ones
	// are refused until the oldest expire. None is ever evicted for a newer one, so a flood
	// cannot end the owner's consent in progress.
	MaxPending = 100
	// seenEvery is how often a client's last-seen time is written: its agents authenticate on
	// every request.
	seenEvery = time.Minute
)

// The activity feed's actions of clients.
const (
	ActionAdded       = "client_added"         // a static token issued
	ActionConsented   = "client_consented"     // the owner allowed a client, behind a step-up
	ActionDenied      = "client_denied"        // the owner denied an authorization request
	ActionToolsSet    = "client_tools_changed" // the owner changed a client's tools
	ActionRevoked     = "client_revoked"       // the owner revoked a client
	ActionTokenReused = "client_token_reused"  // a spent refresh token came back: its family is revoked
)

// Feed records the clients' events in the activity feed (*activity.Log).
type Feed interface {
	Append(ctx context.Context, events ...activity.Event) error
}

// Options configure a Service. Origins is required.
type Options struct {
	// Origins are the configured origins: Maven's MCP server is the resource <origin>/mcp at
	// each, and a token is bound to one of them.
	Origins []string
	// Activity records consents, revocations and token reuse; nil records nothing.
	Activity Feed
	Logger   *slog.Logger
	Now      func() time.Time // time.Now when nil
}

// Service is the clients and Maven's authorization server. It is safe for concurrent use.
type Service struct {
	store     Store
	feed      Feed
	log       *slog.Logger
	now       func() time.Time
	resources []string // <origin>/mcp, one per configured origin
	provider  fosite.OAuth2Provider
	documents *documents
	requests  *requests

	cache  approvedCache // approved clients, as the database holds them
	tokens tokenCache    // access tokens verified lately

	mu       sync.Mutex
	onChange []func(clientID string)
	static   map[string][]byte    // approved static client id → its token's SHA-256
	seen     map[string]time.Time // client id → when its last-seen time was last written
}

// New returns the Service over store, with the authorization server's secret in settings (one
// is made and kept there on the first start).
func New(ctx context.Context, store Store, settings Settings, opts Options) (*Service, error) {
	if len(opts.Origins) == 0 {
		return nil, errors.New("clients: no origin configured")
	}
	s := &Service{store: store, feed: opts.Activity, log: opts.Logger, now: opts.Now,
		static: map[string][]byte{}, seen: map[string]time.Time{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	for _, o := range opts.Origins {
		s.resources = append(s.resources, ResourceOf(o))
	}
	s.documents = newDocuments(guardedTransport(), s.now)
	s.requests = newRequests(s.now)
	provider, err := newProvider(ctx, settings, &storage{s: s})
	if err != nil {
		return nil, err
	}
	s.provider = provider
	all, err := store.Clients(ctx)
	if err != nil {
		return nil, fmt.Errorf("load clients: %w", err)
	}
	for _, c := range all {
		if c.Kind == KindStatic && c.State == StateApproved {
			s.static[c.ID] = c.SecretHash
		}
	}
	return s, nil
}

// ResourceOf is the resource Maven's MCP server is at the origin o (RFC 8707): <o>/mcp.
func ResourceOf(origin string) string { return strings.TrimSuffix(origin, "/") + "/mcp" }

// Provider is the OAuth 2.1 authorization server the handlers serve (fosite).
func (s *Service) Provider() fosite.OAuth2Provider { return s.provider }

// OnChange registers fn to be told, with the client's id, when a client's tools change or it
// is revoked: its agents' sessions then see the new set, or end.
func (s *Service) OnChange(fn func(clientID string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange = append(s.onChange, fn)
}

func (s *Service) changed(id string) {
	s.mu.Lock()
	fns := slices.Clone(s.onChange)
	s.mu.Unlock()
	for _, fn := range fns {
		fn(id)
	}
}

// List returns every client, newest first.
func (s *Service) List(ctx context.Context) ([]Client, error) {
	list, err := s.store.Clients(ctx)
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	return list, nil
}

// Client returns the client with that id; ErrNotFound if there is none.
func (s *Service) Client(ctx context.Context, id string) (Client, error) {
	return s.store.Client(ctx, id)
}

// Find returns the one client whose id is idOrName, or else the one not revoked whose name it
// is; ErrNotFound if there is none, ErrAmbiguous if several have that name.
func (s *Service) Find(ctx context.Context, idOrName string) (Client, error) {
	list, err := s.List(ctx)
	if err != nil {
		return Client{}, err
	}
	var named []Client
	for _, c := range list {
		switch {
		case c.ID == idOrName:
			return c, nil
		case c.Name == idOrName && c.State != StateRevoked:
			named = append(named, c)
		}
	}
	switch len(named) {
	case 0:
		return Client{}, fmt.Errorf("%w: %q", ErrNotFound, idOrName)
	case 1:
		return named[0], nil
	}
	ids := make([]string, len(named))
	for i, c := range named {
		ids[i] = c.ID
	}
	return Client{}, fmt.Errorf("%w: %q is the name of %s; name one by its id", ErrAmbiguous, idOrName, strings.Join(ids, ", "))
}

// Policy returns the tools an approved client may use now (the owner may edit them);
// ErrNotFound if it is not approved (revoked, or never consented to).
func (s *Service) Policy(ctx context.Context, clientID string) (Grant, error) {
	c, err := s.approved(ctx, clientID)
	if err != nil {
		return Grant{}, err
	}
	if c.State != StateApproved {
		return Grant{}, fmt.Errorf("%w: %s is %s", ErrNotFound, clientID, c.State)
	}
	return grantOf(c), nil
}

// Choice is the tools the owner chose for a client: every enabled tool, now and later, or only
// the rows ToolIDs names. Names are those rows' names as the page showed them, for the
// activity feed; the approval covers the ids.
type Choice struct {
	All     bool
	ToolIDs []int64
	Names   []string
}

// normal is c with its ids sorted and without repeats, and none when All.
func (c Choice) normal() Choice {
	if c.All {
		return Choice{All: true}
	}
	ids := slices.Clone(c.ToolIDs)
	slices.Sort(ids)
	return Choice{ToolIDs: slices.Compact(ids), Names: c.Names}
}

// record is how the activity feed names a choice.
func (c Choice) record() any {
	if c.All {
		return "every enabled tool, now and later"
	}
	if len(c.Names) > 0 {
		return c.Names
	}
	return c.ToolIDs
}

// digestOf is "sha256:" and the hex SHA-256 of v's JSON: what a step-up is bound to.
func digestOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("clients: marshal digest: " + err.Error()) // strings, bools and integers always marshal
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ToolsDigest is what the step-up that sets a client's tools names: the client and the choice
// (docs/design.md#rule-21).
func ToolsDigest(clientID string, c Choice) string {
	c = c.normal()
	return digestOf(struct {
		Client string  `json:"client_id"`
		All    bool    `json:"all"`
		Tools  []int64 `json:"tools"`
	}{clientID, c.All, c.ToolIDs})
}

// SetTools changes an approved client's tools to choice, as the step-up proof approves for
// ActionClientTools (ToolsDigest); auth.ErrStepUpRequired without one, ErrNotFound if the
// client is not approved. Its agents are told at once (OnChange).
func (s *Service) SetTools(ctx context.Context, clientID string, choice Choice, proof auth.StepUp) error {
	choice = choice.normal()
	if !proof.Approves(auth.ActionClientTools, auth.Item{Digest: ToolsDigest(clientID, choice)}) {
		return auth.ErrStepUpRequired
	}
	c, err := s.store.Client(ctx, clientID)
	if err != nil {
		return err
	}
	if err := s.store.SetPolicy(ctx, clientID, choice.All, choice.ToolIDs); err != nil {
		return err
	}
	s.cache.changed()
	s.record(ctx, "owner", ActionToolsSet, c, map[string]any{"tools": choice.record()})
	s.changed(clientID)
	return nil
}

// Revoke ends an approved client: its tokens stop working at once and are deleted, and its
// agents' sessions end (OnChange). actor is who did it ("owner", "cli"). ErrNotFound if no
// approved client has that id.
func (s *Service) Revoke(ctx context.Context, clientID, actor string) error {
	c, err := s.store.Client(ctx, clientID)
	if err != nil {
		return err
	}
	if err := s.store.Revoke(ctx, clientID, s.now()); err != nil {
		return err
	}
	s.cache.changed()
	s.tokens.revoked()
	s.mu.Lock()
	delete(s.static, clientID)
	s.mu.Unlock()
	s.record(ctx, actor, ActionRevoked, c, nil)
	s.changed(clientID)
	return nil
}

// RecordCalls counts n tool calls an agent of the client made (shown on /clients). A failure is
// logged, not the calls', which have happened.
func (s *Service) RecordCalls(ctx context.Context, clientID string, n int64) {
	if err := s.store.Seen(ctx, clientID, s.now(), n); err != nil {
		s.log.Warn("count a client's calls", "client", clientID, "calls", n, "err", err)
	}
}

// seenNow writes that a token of the client just worked, at most once every seenEvery: its
// agents authenticate on every request. A failure is logged, not the request's.
func (s *Service) seenNow(ctx context.Context, clientID string) {
	now := s.now()
	s.mu.Lock()
	last, ok := s.seen[clientID]
	due := !ok || now.Sub(last) >= seenEvery
	if due {
		s.seen[clientID] = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if err := s.store.Seen(ctx, clientID, now, 0); err != nil {
		s.log.Warn("record a client's last use", "client", clientID, "err", err)
	}
}

// Sweep deletes what expired: registrations never consented to after PendingLifetime, and
// the OAuth tokens past their expiry (authorization requests in progress expire by themselves).
func (s *Service) Sweep(ctx context.Context) error {
	now := s.now()
	clients, tokens, err := s.store.DeleteExpired(ctx, now.Add(-PendingLifetime), now)
	if err != nil {
		return fmt.Errorf("delete expired clients and tokens: %w", err)
	}
	if clients+tokens > 0 {
		s.log.Debug("expired clients and tokens deleted", "clients", clients, "tokens", tokens)
	}
	return nil
}

// Run sweeps every interval until ctx ends.
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Sweep(ctx); err != nil {
				s.log.Warn("sweep clients", "err", err)
			}
		}
	}
}

// record appends an event of client c to the activity feed; a failure is logged, not the
// action's, which has happened.
func (s *Service) record(ctx context.Context, actor, action string, c Client, detail map[string]any) {
	if s.feed == nil {
		return
	}
	if detail == nil {
		detail = map[string]any{}
	}
	detail["client"], detail["client_id"], detail["kind"] = c.Name, c.ID, c.Kind.Words()
	if err := s.feed.Append(ctx, activity.Event{Actor: actor, Action: action, Detail: detail}); err != nil {
		s.log.Error("record a client's event", "action", action, "client", c.ID, "err", err)
	}
}
