package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/config"
	"maven/app/oauth"
	"maven/app/runner"
)

// Reconciler turns a server's tool list into allowlist rows.
type Reconciler interface {
	// Reconcile applies tools, the complete result of a successful, fully paginated tools/list
	// of the connected server. The Manager never calls it with a partial or failed list, nor
	// for a server that is down, dialling or locked (docs/design.md#rule-10). Calls for one server
	// never overlap; calls for different servers may. An error matching ErrTooManyChanges
	// (a *ChurnError) ends the session: the server is failed and not dialled until the error's
	// Until.
	Reconcile(ctx context.Context, server string, tools []*sdk.Tool) error
}

// Defaults for ManagerOptions.
const (
	DefaultRefreshInterval   = 5 * time.Minute
	DefaultDialTimeout       = 10 * time.Second
	DefaultListTimeout       = 30 * time.Second
	DefaultCallTimeout       = 30 * time.Second
	DefaultKeepAlive         = 30 * time.Second
	DefaultBackoffMin        = 500 * time.Millisecond
	DefaultBackoffMax        = 60 * time.Second
	DefaultTerminateDuration = time.Second
	DefaultRefreshGap        = time.Second
	// DefaultMissingCommandRetry is long: a program that is not installed does not appear by
	// itself, and installing it is followed by a reload, which retries at once.
	DefaultMissingCommandRetry = 6 * time.Hour
)

// Caps on one tools/list. A longer list is treated as incomplete and never reconciled: a
// server must not be able to exhaust memory or withdraw rows by listing without end.
const (
	MaxListPages = 100
	MaxListTools = 20000
)

// Errors of CallTool and of a refresh; each is wrapped with context, so test with errors.Is.
var (
	// ErrUnknownServer means no server of that name is configured.
	ErrUnknownServer = errors.New("unknown MCP server")
	// ErrDisabled means the server is disabled in the config.
	ErrDisabled = errors.New("MCP server is disabled")
	// ErrLocked means the server needs a secret and the vault is locked or lacks it.
	ErrLocked = errors.New("MCP server is locked")
	// ErrNotConnected means the server has no live session right now (dialling, backing off,
	// failed, or the Manager is not running). Calls never dial.
	ErrNotConnected = errors.New("MCP server is not connected")
	// ErrIncompleteList means a tools/list went past MaxListPages or MaxListTools, or its
	// cursors went round in a circle.
	ErrIncompleteList = errors.New("tool list is incomplete")
)

// ManagerOptions tune a Manager; zero values take the defaults.
type ManagerOptions struct {
	RefreshInterval time.Duration // how often connected servers are listed again (5m)
	DialTimeout     time.Duration // connect and initialize (10s)
	ListTimeout     time.Duration // all pages of one tools/list (30s)
	CallTimeout     time.Duration // one tools/call (30s)
	// RefreshGap is the least time from one refresh to the next that a list_changed asks for
	// (1s): notifications that come sooner are served together once it has passed.
	RefreshGap time.Duration
	// KeepAlive is the interval of the pings that detect a dead session (30s); a negative
	// value turns them off.
	KeepAlive  time.Duration
	BackoffMin time.Duration // first redial delay (500ms)
	BackoffMax time.Duration // longest redial delay, and the retry delay of a failed one (60s)
	// TerminateDuration is how long a stdio server may take to exit after its stdin closes
	// before it is signalled (1s).
	TerminateDuration time.Duration
	// MissingCommandRetry is how long a stdio server whose command is not found waits before
	// looking again, unless a reload or Wake ends the wait (6h).
	MissingCommandRetry time.Duration
	// Secrets looks up a sealed secret by name; nil means the vault is locked. See
	// Manager.SetSecrets. It is called from the supervisors' goroutines.
	Secrets func(name string) ([]byte, bool)
	// Getenv reads PATH, HOME and LANG of the daemon for stdio servers (os.Getenv).
	Getenv func(string) string
	// Version is the client version sent in initialize ("dev").
	Version string
	// Transport carries the requests of remote servers, their configured headers and OAuth
	// tokens with them (http.DefaultTransport).
	Transport http.RoundTripper
	// OAuth signs Maven in to remote (streamable HTTP) servers that refuse it, and keeps their
	// sealed tokens; nil leaves such servers failing like any other refusal.
	OAuth *oauth.Service
	// ApproveStdio reports whether the owner approved a stdio server's command line (see
	// StdioCommand); the supervisor asks before every start, and an unapproved command line
	// never starts: the server shows as StateAwaitingApproval until Wake. Nil approves
	// every command line. It is called from the supervisors' goroutines.
	ApproveStdio func(ctx context.Context, server, display, digest string) (bool, error)
}

func (o ManagerOptions) withDefaults() ManagerOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.RefreshInterval, DefaultRefreshInterval)
	def(&o.RefreshGap, DefaultRefreshGap)
	def(&o.DialTimeout, DefaultDialTimeout)
	def(&o.ListTimeout, DefaultListTimeout)
	def(&o.CallTimeout, DefaultCallTimeout)
	if o.KeepAlive == 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	def(&o.BackoffMin, DefaultBackoffMin)
	def(&o.BackoffMax, DefaultBackoffMax)
	if o.BackoffMax < o.BackoffMin {
		o.BackoffMax = o.BackoffMin
	}
	def(&o.TerminateDuration, DefaultTerminateDuration)
	def(&o.MissingCommandRetry, DefaultMissingCommandRetry)
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	return o
}

// Manager keeps one supervised connection per configured MCP server, refreshes their tool
// lists into the Reconciler and calls their tools. It is safe for concurrent use.
type Manager struct {
	rec     Reconciler
	opts    ManagerOptions
	logger  *slog.Logger
	changes chan struct{}
	// The list caps; fields so that tests can lower them.
	maxPages, maxTools int
	// servers is what the Manager runs; Reconfigure replaces it whole, so readers need no lock.
	servers atomic.Pointer[supervisorSet]
	// reconfiguring serializes Reconfigure.
	reconfiguring sync.Mutex

	mu         sync.Mutex
	secrets    func(string) ([]byte, bool)
	secretsGen uint64 // bumped by every SetSecrets
	started    bool
	closed     bool
	runCtx     context.Context // the context Run was given, for supervisors started later
	cancel     context.CancelFunc
	runs       map[*supervisor]*running // the supervisors' goroutines
	wg         sync.WaitGroup
}

// NewManager returns a Manager for servers (keyed by name) that reports complete tool lists to
// rec, which must not be nil. Nothing is dialled until Run.
func NewManager(servers map[string]config.Server, rec Reconciler, opts ManagerOptions, logger *slog.Logger) *Manager {
	if rec == nil {
		panic("mcp: NewManager needs a Reconciler")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{
		rec:      rec,
		opts:     opts.withDefaults(),
		logger:   logger,
		changes:  make(chan struct{}, 1),
		maxPages: MaxListPages,
		maxTools: MaxListTools,
		secrets:  opts.Secrets,
		runs:     map[*supervisor]*running{},
	}
	set := newSupervisorSet()
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		set.add(newSupervisor(m, name, withName(name, servers[name])))
	}
	m.servers.Store(set)
	return m
}

// Run starts one supervisor goroutine per server under ctx and returns at once: every dial
// happens in a supervisor (docs/design.md#rule-13). Calls after the first, or after Close, do
// nothing. Cancelling ctx stops the supervisors like Close does, but only Close waits for them.
func (m *Manager) Run(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed {
		m.logger.Warn("mcp manager: Run called twice or after Close")
		return
	}
	m.started = true
	m.runCtx, m.cancel = context.WithCancel(ctx)
	// Dialling every server at the instant the daemon starts makes their dials, a few hundred
	// microseconds of CPU each, compete with its first answers on the same few cores; spread
	// out a little, the daemon answers first (docs/design.md#rule-13).
	for _, s := range m.servers.Load().list() {
		m.start(s, dialSpread())
	}
}

// Close stops every supervisor, closes every session (stdio servers have exited when it
// returns) and waits for all of it. It is safe to call more than once.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
	return nil
}

// Wake makes server's supervisor look again at once at what it waits for: its secrets, or the
// approval of its command line. An unknown server is ignored. It never blocks.
func (m *Manager) Wake(server string) {
	if s, ok := m.servers.Load().byName[server]; ok {
		s.signal()
	}
}

// The delay before the supervisors' first dial at Run, and between an unlock and their first
// dial with the new secrets: dialSpreadDelay and up to dialSpreadJitter more.
const (
	dialSpreadDelay  = 50 * time.Millisecond
	dialSpreadJitter = 100 * time.Millisecond
)

// dialSpread is how long one supervisor waits before dialling at Run or after an unlock.
func dialSpread() time.Duration { return dialSpreadDelay + rand.N(dialSpreadJitter) }

// Status returns every server's status, sorted by name.
func (m *Manager) Status() []ServerStatus {
	sups := m.servers.Load().list()
	out := make([]ServerStatus, 0, len(sups))
	for _, s := range sups {
		out = append(out, s.snapshot())
	}
	return out
}

// Changes returns a channel that receives a value after any server's status changed. Changes
// coalesce: one receive may stand for many. It is meant for one consumer (a page that
// refreshes its servers card).
func (m *Manager) Changes() <-chan struct{} { return m.changes }

func (m *Manager) notifyChange() {
	select {
	case m.changes <- struct{}{}:
	default:
	}
}

// AllowTools returns the server's configured allow_tools (docs/design.md#rule-15), nil for an
// unknown server.
func (m *Manager) AllowTools(server string) []string {
	return slices.Clone(m.servers.Load().allow[server])
}

// CallTool calls tool on server with args and flattens the result (see FlattenResult). It
// implements runner.MCPCaller. It never dials: an unknown, disabled, locked or unconnected server
// fails at once with ErrUnknownServer, ErrDisabled, ErrLocked or ErrNotConnected. The call is
// bounded by CallTimeout and ends early if the session ends (ErrNotConnected) or ctx is done
// (then the error wraps ctx.Err()). A tool that reports failure is a Result with IsError set.
func (m *Manager) CallTool(ctx context.Context, server, tool string, args map[string]any) (runner.Result, error) {
	s, ok := m.servers.Load().byName[server]
	if !ok {
		return runner.Result{}, fmt.Errorf("mcp server %q: %w", server, ErrUnknownServer)
	}
	cs, sessCtx, ended, err := m.callable(s)
	if err != nil {
		return runner.Result{}, err
	}
	if args == nil {
		args = map[string]any{}
	}

	// The clock stops while the server waits for the owner's answer to a question (elicit.go).
	callCtx, cancel := runner.WithTimeout(ctx, m.opts.CallTimeout)
	defer cancel()
	// A session that ends (lock, redial, shutdown) takes its calls with it.
	stop := context.AfterFunc(sessCtx, cancel)
	defer stop()
	callCtx, done := s.beginCall(callCtx, tool)
	defer done()
	res, err := callDetached(callCtx, cs, tool, args)
	if err == nil {
		s.callSucceeded()
		return FlattenResult(res), nil
	}
	if needsAuth := new(oauth.NeedsAuthError); errors.As(err, &needsAuth) {
		// The server waits for the owner now (refusedNow ended the session).
		return runner.Result{}, fmt.Errorf("mcp %s/%s: %w: %w", server, tool, ErrNeedsSignIn, needsAuth)
	}
	if connectionLost(err) {
		// A 2026-07-28 server over HTTP that is gone fails the call but not the session (each
		// request stands alone): a refresh finds out and ends it.
		s.requestRefresh()
	}
	if ctx.Err() == nil && callCtx.Err() == nil && !serverAnswered(err) {
		// A call cut off by its connection breaking (the server hung up, or sent what cannot be
		// read) fails a moment before the session's end shows: wait that moment, so that it
		// reads as ErrNotConnected. A JSON-RPC error is the server's own answer: no wait.
		t := time.NewTimer(sessionEndGrace)
		select {
		case <-ended:
		case <-sessCtx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	where := fmt.Sprintf("mcp %s/%s", server, tool)
	switch {
	case ctx.Err() != nil:
		return runner.Result{}, fmt.Errorf("%s: %w", where, ctx.Err())
	case (isClosed(ended) || sessCtx.Err() != nil) && s.waiting() != nil:
		// The server refused this call, or a request beside it, and refusedNow ended the
		// session before the refusal itself reached this call.
		return runner.Result{}, fmt.Errorf("%s: the server refused it and waits for a sign-in: %w", where, ErrNeedsSignIn)
	case isClosed(ended):
		return runner.Result{}, fmt.Errorf("%s: the connection ended during the call (%w): %w", where, s.mask(err), ErrNotConnected)
	case sessCtx.Err() != nil:
		return runner.Result{}, fmt.Errorf("%s: the session ended during the call: %w", where, ErrNotConnected)
	case runner.TimedOut(callCtx):
		return runner.Result{}, fmt.Errorf("%s: no answer within %s: %w", where, m.opts.CallTimeout, context.DeadlineExceeded)
	case errors.Is(err, sdk.ErrConnectionClosed):
		return runner.Result{}, fmt.Errorf("%s: %w (%w)", where, ErrNotConnected, s.mask(err))
	}
	return runner.Result{}, fmt.Errorf("%s: %w", where, s.mask(err))
}

// callable returns the server's live session, its context and the channel closed when its
// connection ends, or why a call cannot be made now.
func (m *Manager) callable(s *supervisor) (*sdk.ClientSession, context.Context, <-chan struct{}, error) {
	if s.cfg.Disabled {
		return nil, nil, nil, fmt.Errorf("mcp server %q: %w", s.name, ErrDisabled)
	}
	if s.needsSecrets || s.sealedAuth.Load() {
		// Checked here as well as by the state, so a call racing a lock is refused.
		if lookup, _ := m.lookup(); lookup == nil {
			return nil, nil, nil, fmt.Errorf("mcp server %q: %w", s.name, ErrLocked)
		}
	}
	cs, sessCtx, ended, st := s.current()
	switch {
	case st.State == StateLocked:
		return nil, nil, nil, fmt.Errorf("mcp server %q: %w", s.name, ErrLocked)
	case st.State == StateNeedsAuth:
		return nil, nil, nil, fmt.Errorf("mcp server %q: %w", s.name, ErrNeedsSignIn)
	case cs == nil || st.State != StateConnected:
		if st.LastError != "" {
			return nil, nil, nil, fmt.Errorf("mcp server %q is %s (%s): %w", s.name, st.State, st.LastError, ErrNotConnected)
		}
		return nil, nil, nil, fmt.Errorf("mcp server %q is %s: %w", s.name, st.State, ErrNotConnected)
	}
	return cs, sessCtx, ended, nil
}

// callDetached makes the call on a goroutine of its own and returns when it is answered or
// ctx is done. The sdk closes a closing connection on whichever goroutine retires its last
// call, so a cancelled call can be held up by the session's HTTP DELETE; the caller must not
// be. The session's teardown bounds the goroutine.
//
// The sdk's context follows ctx while the call waits, and not once it is answered: go-sdk reads
// the rest of an event-stream answer on the request's context after it delivered the result,
// and net/http keeps a connection only if its body was read to the end, so cancelling the call's
// context as the caller returns closed the connection under the stream's last bytes, and the
// next call dialled a new one. It is cancelled streamGrace later instead, which bounds a stream
// a server keeps open after its answer.
func callDetached(ctx context.Context, cs *sdk.ClientSession, tool string, args map[string]any) (*sdk.CallToolResult, error) {
	type answer struct {
		res *sdk.CallToolResult
		err error
	}
	sdkCtx, sdkCancel := context.WithCancel(context.WithoutCancel(ctx))
	follow := context.AfterFunc(ctx, sdkCancel)
	answered := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(sdkCtx, &sdk.CallToolParams{Name: tool, Arguments: args})
		answered <- answer{res, err}
	}()
	select {
	case a := <-answered:
		if follow() {
			time.AfterFunc(streamGrace, sdkCancel)
		}
		return a.res, a.err
	case <-ctx.Done():
		select {
		case a := <-answered: // an answer that arrived just in time still counts
			return a.res, a.err
		default:
			return nil, ctx.Err()
		}
	}
}

// streamGrace is how long an answered call's request may go on reading its event stream.
const streamGrace = time.Second

// sessionEndGrace is how long a failed call waits to see whether its session ended with it.
const sessionEndGrace = 100 * time.Millisecond

// serverAnswered reports whether err is a JSON-RPC error the server sent, rather than one the
// client raised on a stream it could not read (a parse error or an invalid message).
func serverAnswered(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code != jsonrpc.CodeParseError && we.Code != jsonrpc.CodeInvalidRequest
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Compile-time check that the Manager is what the Executor needs.
var _ runner.MCPCaller = (*Manager)(nil)
