// Package agents is the MCP server agents reach (docs/design.md#rule-26): LLM-driven assistants
// such as Home Assistant's Assist, Claude and VS Code, each belonging to a client the owner
// approved. Every client gets go-sdk servers of its own whose tools are exactly the enabled
// rows it may use, shown as the owner approved them (docs/design.md#rule-27), kept current
// within a moment of every change; and every call is checked, classified and run through the
// one run path voice uses, or refused with words an assistant can say
// (docs/design.md#rule-28). It holds no HTTP server: handlers mount its servers.
package agents

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/limits"
	"maven/app/runner"
)

// Rows reads the allowlist (*allowlist.Service).
type Rows interface {
	List(ctx context.Context, filter allowlist.Filter) ([]allowlist.Tool, error)
	// Get returns allowlist.ErrNotFound if no row has that id.
	Get(ctx context.Context, id int64) (allowlist.Tool, error)
	// Changed returns a channel closed after the next committed update.
	Changed() <-chan struct{}
	// Version changes after every update; ChangedSince returns the ids of the rows the updates
	// after version wrote, and false when it does not know them.
	Version() uint64
	ChangedSince(version uint64) ([]int64, bool)
}

// Runner runs a row through the one run path (*runner.Executor): it reads the row again in
// the step that runs it.
type Runner interface {
	Exec(ctx context.Context, row allowlist.Tool, args map[string]any) (runner.Result, error)
}

// AllowTools names the tools of a server that may take arguments without the owner
// (*mcp.Manager: the server's allow_tools, docs/design.md#rule-15).
type AllowTools interface {
	AllowTools(server string) []string
}

// Limits are the owner's limits on the rows' arguments (*limits.Service,
// docs/design.md#rule-33).
type Limits interface {
	// InForce returns the limits in force on each of rows, as they were read, by id; a row
	// without any is absent.
	InForce(ctx context.Context, rows []allowlist.Tool) (map[int64]*limits.Active, error)
	// Changed returns a channel closed after the next save of limits.
	Changed() <-chan struct{}
}

// Lock says whether the daemon is locked (*vault.Gate).
type Lock interface {
	Locked() bool
}

// Recorder appends to the activity feed (*activity.Log).
type Recorder interface {
	Append(ctx context.Context, events ...activity.Event) error
}

// Policy is what one client may see and use: every enabled row, now and later, or only the
// rows named.
type Policy struct {
	Name     string  // the client's name as the owner sees it
	AllTools bool    // every enabled row
	ToolIDs  []int64 // else only these rows
}

// allows reports whether the policy covers the row with that id.
func (p Policy) allows(id int64) bool {
	if p.AllTools {
		return true
	}
	for _, t := range p.ToolIDs {
		if t == id {
			return true
		}
	}
	return false
}

// Clients reads the clients' current policies (app/clients).
type Clients interface {
	// Policy returns the client's current policy; an error wrapping ErrUnknownClient when no
	// such client is approved (never was, or was revoked).
	Policy(ctx context.Context, clientID string) (Policy, error)
}

// ErrUnknownClient means a client the owner has not approved, or no longer does.
var ErrUnknownClient = errors.New("no such client")

// Deps are what the service needs; all are required.
type Deps struct {
	Rows     Rows
	Runner   Runner
	Allow    AllowTools
	Limits   Limits
	Lock     Lock
	Clients  Clients
	Activity Recorder
	// Pending keeps the calls that need the owner (docs/design.md#rule-31).
	Pending Pending
}

// Defaults for Options.
const (
	// DefaultKeepAlive is how often a 2025-era session is pinged; one that misses two pings in
	// a row ends.
	DefaultKeepAlive = 30 * time.Second
	// DefaultCallsPerSecond and DefaultBurst bound each client's calls, and so what its agents
	// can write to the activity feed.
	DefaultCallsPerSecond = 10
	DefaultBurst          = 30
)

// Options tune a Service; zero values take the defaults.
type Options struct {
	Logger         *slog.Logger
	Version        string // Maven's version, as its servers name themselves
	KeepAlive      time.Duration
	CallsPerSecond float64
	Burst          int
	Now            func() time.Time
}

// Service serves every client's agents. It is safe for concurrent use; Run keeps the clients'
// tools current.
type Service struct {
	d    Deps
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	clients map[string]*client
	dirty   map[string]bool // clients whose policy is to be read again
	kick    chan struct{}

	// reconcile serialises building what the rows show and applying it to the clients.
	reconcile sync.Mutex
	shown     shownRows

	// listed is closed once an agent's tools/list is answered, and replaced (Listed).
	listedMu sync.Mutex
	listed   chan struct{}
}

// New returns a Service over d; it fails when a dependency is missing.
func New(d Deps, opts Options) (*Service, error) {
	if d.Rows == nil || d.Runner == nil || d.Allow == nil || d.Limits == nil || d.Lock == nil || d.Clients == nil || d.Activity == nil || d.Pending == nil {
		return nil, errors.New("agents: Rows, Runner, Allow, Limits, Lock, Clients, Activity and Pending are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.CallsPerSecond <= 0 {
		opts.CallsPerSecond = DefaultCallsPerSecond
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultBurst
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{d: d, opts: opts, log: opts.Logger, clients: map[string]*client{}, dirty: map[string]bool{},
		kick: make(chan struct{}, 1), shown: shownRows{byID: map[int64]*entry{}}}, nil
}

// client is one approved client's servers and what they offer.
type client struct {
	id string
	// legacy serves 2025-era sessions (streamable HTTP with sessions, and SSE); modern serves
	// 2026-07-28 requests, each on its own.
	legacy, modern *sdk.Server
	calls          *rate.Limiter

	mu     sync.Mutex
	policy Policy
	listed map[string]*entry // by tool name: what its servers offer now
	// listedIDs is listed by row id; shown is the read of the rows (shownRows.gen) they show,
	// under the policy (0: none, or the policy changed since).
	listedIDs map[int64]*entry
	shown     uint64
	revoked   bool
}

func (c *client) current() (Policy, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.policy, c.revoked
}

// Servers returns the servers of a client's agents: legacy for 2025-era sessions and SSE,
// modern for 2026-07-28 requests. A client's first request builds them with the tools it may
// see now; it fails with ErrUnknownClient for a client the owner has not approved.
func (s *Service) Servers(ctx context.Context, clientID string) (legacy, modern *sdk.Server, err error) {
	s.mu.Lock()
	c := s.clients[clientID]
	s.mu.Unlock()
	if c != nil {
		return c.legacy, c.modern, nil
	}
	policy, err := s.d.Clients.Policy(ctx, clientID)
	if err != nil {
		return nil, nil, fmt.Errorf("agents: client %q: %w", clientID, err)
	}
	s.reconcile.Lock()
	defer s.reconcile.Unlock()
	s.mu.Lock()
	c = s.clients[clientID]
	s.mu.Unlock()
	if c != nil {
		return c.legacy, c.modern, nil
	}
	if err := s.shown.read(ctx, s.d.Rows, s.d.Limits, s.log); err != nil {
		return nil, nil, err
	}
	c = s.newClient(clientID, policy)
	s.apply(c)
	s.mu.Lock()
	s.clients[clientID] = c
	s.mu.Unlock()
	return c.legacy, c.modern, nil
}

// Listed returns a channel closed once an agent's tools/list has been answered after this call.
// A burst of listings (a hundred sessions listing 1,000 tools) leaves tens of MiB of garbage the
// collector keeps for the next: the daemon gives it back once they pause (cmd/maven).
func (s *Service) Listed() <-chan struct{} {
	s.listedMu.Lock()
	defer s.listedMu.Unlock()
	if s.listed == nil {
		s.listed = make(chan struct{})
	}
	return s.listed
}

// noteListings closes Listed's channel after every tools/list a client's servers answer.
func (s *Service) noteListings(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if method == "tools/list" {
			s.listedMu.Lock()
			if s.listed != nil {
				close(s.listed)
				s.listed = nil
			}
			s.listedMu.Unlock()
		}
		return res, err
	}
}

// ClientChanged is told that a client's policy changed or that it was revoked: its agents see
// the change within a moment, and a revoked client's sessions end (Run applies it).
func (s *Service) ClientChanged(clientID string) {
	s.mu.Lock()
	if s.clients[clientID] != nil {
		s.dirty[clientID] = true
	}
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run keeps every client's tools the enabled rows it may use, as the rows and their limits are
// now, until ctx is done: it applies each committed change of the allowlist, each save of
// limits and each ClientChanged within a moment (docs/design.md#rule-27).
func (s *Service) Run(ctx context.Context) {
	for {
		changed, limited := s.d.Rows.Changed(), s.d.Limits.Changed()
		if err := s.reconcileAll(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("agents: keep the tools agents see current", "err", err)
		}
		select {
		case <-changed:
		case <-limited:
		case <-s.kick:
		case <-ctx.Done():
			return
		}
	}
}

// reconcileAll reads the policies of the clients that changed, ends the sessions of those
// revoked, and applies the rows as they are now to every client.
func (s *Service) reconcileAll(ctx context.Context) error {
	s.reconcile.Lock()
	defer s.reconcile.Unlock()
	s.mu.Lock()
	dirty := s.dirty
	s.dirty = map[string]bool{}
	clients := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	for id := range dirty {
		if err := s.readPolicy(ctx, id); err != nil {
			return err
		}
	}
	if err := s.shown.read(ctx, s.d.Rows, s.d.Limits, s.log); err != nil {
		return err
	}
	for _, c := range clients {
		if _, revoked := c.current(); !revoked {
			s.apply(c)
		}
	}
	return nil
}

// readPolicy reads a client's policy again; a client no longer approved is dropped and its
// sessions end.
func (s *Service) readPolicy(ctx context.Context, id string) error {
	s.mu.Lock()
	c := s.clients[id]
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	policy, err := s.d.Clients.Policy(ctx, id)
	switch {
	case errors.Is(err, ErrUnknownClient):
		s.drop(c)
		return nil
	case err != nil:
		return fmt.Errorf("agents: client %q: %w", id, err)
	}
	c.mu.Lock()
	c.policy, c.shown = policy, 0
	c.mu.Unlock()
	return nil
}

// drop forgets a revoked client and ends its sessions: its agents are cut off at once, and a
// call already past its checks finds it revoked.
func (s *Service) drop(c *client) {
	s.mu.Lock()
	if s.clients[c.id] == c {
		delete(s.clients, c.id)
	}
	s.mu.Unlock()
	c.mu.Lock()
	c.revoked = true
	c.mu.Unlock()
	for _, srv := range []*sdk.Server{c.legacy, c.modern} {
		for ss := range srv.Sessions() {
			ss.Close()
		}
	}
	s.log.Info("agents: a revoked client's sessions ended", "client", c.id)
}
