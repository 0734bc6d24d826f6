package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/config"
)

// protocolVersion is the MCP revision Maven asks for. go-sdk v1.8.0 would otherwise try
// 2026-07-28 first, under which it sends no keepalive pings (so a dead HTTP session goes
// unnoticed), caches tool lists by TTL, and opens no standalone stream for list_changed. The
// npm servers Maven meets speak 2025-11-25 anyway.
const protocolVersion = "2025-11-25"

// stableSession is how long a session must have lasted for the redial delay to start over.
const stableSession = 30 * time.Second

// errInterrupted ends a session or a dial that Maven itself stopped (lock, new secrets): the
// supervisor decides again at once, without backoff.
var errInterrupted = errors.New("interrupted")

// configError marks a failure that retrying soon will not fix: the command is missing, the URL
// cannot be used. The server shows as failed and is retried at BackoffMax.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// supervisor owns one server's connection: it dials, lists, refreshes and redials, all on its
// own goroutine, and publishes the session for CallTool.
type supervisor struct {
	m            *Manager
	name         string
	cfg          config.Server // as configured: secret references unexpanded
	needsSecrets bool
	logger       *slog.Logger
	client       *sdk.Client
	wake         chan struct{} // secrets or approvals changed
	refresh      chan struct{} // a refresh is pending; with the one running, at most two
	// The command line of a stdio server and its digest (StdioCommand); "" for http and sse.
	display, digest string

	mu         sync.Mutex
	secretVals [][]byte // values of the secrets in use, masked in errors; zeroed once locked
	st         ServerStatus
	session    *sdk.ClientSession // nil unless connected
	sessCtx    context.Context    // ends with the session; nil with it
	sessEnded  <-chan struct{}    // closed once the connection itself has ended; nil with it
	endSession context.CancelFunc // ends the current dial or session
}

func newSupervisor(m *Manager, name string, cfg config.Server) *supervisor {
	trust, trustText := TrustOf(cfg)
	s := &supervisor{
		m:            m,
		name:         name,
		cfg:          cfg,
		needsSecrets: cfg.NeedsSecrets(),
		logger:       m.logger.With("mcp_server", name),
		wake:         make(chan struct{}, 1),
		refresh:      make(chan struct{}, 1),
		st: ServerStatus{
			Name:      name,
			Transport: string(cfg.Type),
			Target:    cfg.Target(),
			Trust:     trust,
			TrustText: trustText,
			State:     StateConnecting,
			Since:     time.Now(),
		},
	}
	if cfg.Type == config.TransportStdio {
		s.display, s.digest = StdioCommand(cfg)
	}
	switch {
	case cfg.Disabled:
		s.st.State = StateDisabled
	case s.needsSecrets && m.secrets == nil:
		s.st.State = StateLocked
	}
	keepAlive := m.opts.KeepAlive
	if keepAlive < 0 {
		keepAlive = 0
	}
	s.client = sdk.NewClient(&sdk.Implementation{Name: "maven", Version: m.opts.Version}, &sdk.ClientOptions{
		Logger: s.logger,
		// No roots: Maven has none to offer, and a server that asks for them can hold up
		// Close for seconds (PEERS.md).
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			s.requestRefresh()
		},
		KeepAlive: keepAlive,
		// One lost ping is a blip; two in a row mean the session is dead.
		KeepAliveFailureThreshold: 2,
		// Maven answers no server-initiated requests, so it has nothing to retry with.
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	})
	return s
}

// snapshot returns the server's status.
func (s *supervisor) snapshot() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// current returns the live session, its context, the channel closed when its connection ends,
// and the status, read together.
func (s *supervisor) current() (*sdk.ClientSession, context.Context, <-chan struct{}, ServerStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session, s.sessCtx, s.sessEnded, s.st
}

// set moves to state with lastErr; Since changes only with the state.
func (s *supervisor) set(state State, lastErr string) {
	s.update(func(st *ServerStatus) {
		s.enter(st, state)
		st.LastError = lastErr
	})
}

func (s *supervisor) update(f func(*ServerStatus)) {
	s.mu.Lock()
	before := s.st
	f(&s.st)
	changed := s.st != before
	s.mu.Unlock()
	if changed {
		s.m.notifyChange()
	}
}

// signal wakes the supervisor to look at the secrets and the approval again.
func (s *supervisor) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// requestRefresh asks for a refresh; requests made while one is pending coalesce.
func (s *supervisor) requestRefresh() {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

// lock ends the current dial or session at once and shows the server as locked; the
// supervisor closes the session on its own goroutine.
func (s *supervisor) lock() {
	s.mu.Lock()
	if s.endSession != nil {
		s.endSession()
	}
	s.session, s.sessCtx, s.sessEnded = nil, nil, nil
	changed := s.st.State != StateLocked
	if changed {
		s.st.State, s.st.Since, s.st.LastError = StateLocked, time.Now(), ""
	}
	s.mu.Unlock()
	if changed {
		s.m.notifyChange()
	}
}

// run supervises the server until ctx is done.
func (s *supervisor) run(ctx context.Context) {
	if s.cfg.Disabled {
		s.set(StateDisabled, "")
		return
	}
	bo := backoff{min: s.m.opts.BackoffMin, max: s.m.opts.BackoffMax}
	for ctx.Err() == nil {
		approved, err := s.approved(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			d := bo.next()
			s.set(StateBackoff, s.errText(err))
			s.logger.Warn("mcp server: cannot check its command line", "error", s.errText(err), "retry_in", d.Round(time.Millisecond))
			s.sleep(ctx, d)
			continue
		case !approved:
			// Never started: the owner has not seen this command line (DESIGN.md rule 25).
			s.set(StateDisabled, MsgUnapproved)
			s.logger.Info("mcp server waits for the owner to approve its command line")
			s.sleep(ctx, 0)
			continue
		}

		cfg, gen, err := s.resolve()
		switch {
		case errors.Is(err, ErrLocked):
			s.set(StateLocked, lockedReason(err))
			s.sleep(ctx, 0)
			continue
		case err != nil:
			s.set(StateFailed, s.errText(err))
			s.logger.Warn("mcp server cannot be dialled", "error", s.errText(err))
			s.sleep(ctx, s.m.opts.BackoffMax)
			continue
		}

		up, err := s.connect(ctx, cfg, gen)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errInterrupted):
			continue
		}
		if up >= min(stableSession, s.m.opts.BackoffMax) {
			bo.reset()
		}
		var ce *configError
		if errors.As(err, &ce) {
			s.set(StateFailed, s.errText(err))
			s.logger.Warn("mcp server failed", "error", s.errText(err), "retry_in", s.m.opts.BackoffMax)
			s.sleep(ctx, s.m.opts.BackoffMax)
			continue
		}
		d := bo.next()
		s.set(StateBackoff, s.errText(err))
		s.logger.Info("mcp server unavailable", "error", s.errText(err), "retry_in", d.Round(time.Millisecond))
		s.sleep(ctx, d)
	}
}

// approved asks ManagerOptions.ApproveStdio whether a stdio server's command line may start;
// anything else needs no approval.
func (s *supervisor) approved(ctx context.Context) (bool, error) {
	if s.cfg.Type != config.TransportStdio || s.m.opts.ApproveStdio == nil {
		return true, nil
	}
	return s.m.opts.ApproveStdio(ctx, s.name, s.display, s.digest)
}

// lockedReason is the LastError of a locked server: empty while the vault is locked, the
// missing secret's name when it is open.
func lockedReason(err error) string {
	if errors.Is(err, config.ErrSecretNotSet) {
		return strings.TrimPrefix(err.Error(), ErrLocked.Error()+": ")
	}
	return ""
}

// maxErrorText bounds an error message kept as LastError, logged, or returned by CallTool: a
// server writes the message of its JSON-RPC errors, and may make it megabytes long.
const maxErrorText = 1024

// errText is err's message with every secret value masked: errors of HTTP clients quote the
// URL they were given, and the status page and logs must never show a secret. It is cut to
// maxErrorText bytes, after masking so that no part of a secret survives the cut.
func (s *supervisor) errText(err error) string {
	msg := []byte(err.Error())
	s.mu.Lock()
	for _, v := range s.secretVals {
		msg = bytes.ReplaceAll(msg, v, []byte("***"))
	}
	s.mu.Unlock()
	if len(msg) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = append(msg[:cut], " [cut]"...)
	}
	return string(msg)
}

// mask returns err with the message of errText, still matching what err matches.
func (s *supervisor) mask(err error) error {
	return &maskedError{msg: s.errText(err), err: err}
}

type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// sleep waits for d (forever if d is 0), a wake signal or ctx.
func (s *supervisor) sleep(ctx context.Context, d time.Duration) {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
	case <-s.wake:
	case <-timeout:
	}
}

// resolve returns the server's config with secrets expanded and the secrets generation it
// used. It fails with ErrLocked while a needed secret is unavailable.
func (s *supervisor) resolve() (config.Server, uint64, error) {
	lookup, gen := s.m.lookup()
	if !s.needsSecrets {
		return s.cfg, gen, nil
	}
	if lookup == nil {
		// Locked, and the last session's errors are masked and recorded: forget the values.
		s.mu.Lock()
		for _, v := range s.secretVals {
			clear(v)
		}
		s.secretVals = nil
		s.mu.Unlock()
		return config.Server{}, gen, fmt.Errorf("the vault is locked: %w", ErrLocked)
	}
	var fresh [][]byte
	for _, name := range s.cfg.SecretRefs() {
		if v, ok := lookup(name); ok && len(v) > 0 {
			fresh = append(fresh, v, escaped(url.QueryEscape, v), escaped(url.PathEscape, v))
		}
	}
	s.mu.Lock()
	// Values used before stay masked too: an error may outlive a rotation.
	vals := append(s.secretVals, fresh...)
	// Longest first, so a secret that contains another is masked whole.
	slices.SortFunc(vals, func(a, b []byte) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return bytes.Compare(a, b)
	})
	// Each value is a buffer of its own: a duplicate is zeroed as it is dropped.
	kept := vals[:0]
	for _, v := range vals {
		if len(kept) > 0 && bytes.Equal(kept[len(kept)-1], v) {
			clear(v)
			continue
		}
		kept = append(kept, v)
	}
	s.secretVals = kept
	s.mu.Unlock()
	cfg, err := s.cfg.Expanded(lookup)
	if errors.Is(err, config.ErrSecretNotSet) {
		return config.Server{}, gen, fmt.Errorf("%w: %w", ErrLocked, err)
	}
	if err != nil {
		return config.Server{}, gen, err
	}
	return cfg, gen, nil
}

// escaped returns v as escape writes it, in a buffer of its own; v is read in place, not copied.
func escaped(escape func(string) string, v []byte) []byte {
	return []byte(escape(unsafe.String(unsafe.SliceData(v), len(v))))
}

// connect dials cfg, serves the session until it ends, and returns how long it was up. The
// error says why it ended; errInterrupted when Maven ended it.
func (s *supervisor) connect(ctx context.Context, cfg config.Server, gen uint64) (time.Duration, error) {
	// sessCtx carries the dial, the lists and the calls; killCtx is the transport's last resort
	// (SIGKILL for a stdio server, abort for HTTP requests), cancelled only once a graceful
	// close had its chance.
	sessCtx, endSession := context.WithCancel(ctx)
	defer endSession()
	killCtx, kill := context.WithCancel(context.Background())
	defer kill()

	s.mu.Lock()
	s.endSession = endSession
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.endSession = nil
		s.mu.Unlock()
	}()
	// A lock between resolve and here found no endSession to cancel: look again.
	if s.m.generation() != gen {
		return 0, errInterrupted
	}

	transport, err := s.transport(cfg, killCtx)
	if err != nil {
		return 0, &configError{err}
	}
	s.setIfLive(sessCtx, func(st *ServerStatus) { s.enter(st, StateConnecting) })

	var timedOut atomic.Bool
	timer := time.AfterFunc(s.m.opts.DialTimeout, func() {
		timedOut.Store(true)
		endSession()
	})
	// An abandoned dial is killed outright: on a failed initialize the sdk closes the session
	// itself, and that close waits up to 5s for a notifications/cancelled that a black-holed
	// server never takes. Its connection is closed too: Connect can outlive its context.
	conns := &connRecorder{Transport: transport}
	stopKillOnAbandon := context.AfterFunc(sessCtx, func() {
		kill()
		conns.close()
	})
	cs, err := s.client.Connect(sessCtx, conns, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	timer.Stop()
	stopKillOnAbandon()
	if err == nil && sessCtx.Err() != nil {
		// Connected just as the dial was given up.
		closeSession(cs, kill, s.closeGrace())
		err = sessCtx.Err()
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case timedOut.Load():
			return 0, fmt.Errorf("dial: no answer within %s: %w", s.m.opts.DialTimeout, context.DeadlineExceeded)
		case sessCtx.Err() != nil:
			return 0, errInterrupted
		case cfg.Type == config.TransportStdio && isStartError(err):
			return 0, &configError{s.startError(err)}
		}
		return 0, fmt.Errorf("dial: %w", err)
	}
	start := time.Now()
	// Teardown order matters: unpublish so no new call starts, end the calls in flight (the
	// sdk's Close waits for them), then close.
	defer func() {
		s.mu.Lock()
		s.session, s.sessCtx, s.sessEnded = nil, nil, nil
		s.mu.Unlock()
		endSession()
		closeSession(cs, kill, s.closeGrace())
	}()
	ended := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cs.Wait()
		close(ended)
	}()

	live := s.setIfLive(sessCtx, func(st *ServerStatus) {
		s.session, s.sessCtx, s.sessEnded = cs, sessCtx, ended
		s.enter(st, StateConnected)
		st.LastError = ""
	})
	if !live {
		return 0, errInterrupted
	}
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		s.logger.Info("mcp server connected", "server_name", ir.ServerInfo.Name,
			"server_version", ir.ServerInfo.Version, "protocol", ir.ProtocolVersion)
	} else {
		s.logger.Info("mcp server connected")
	}

	ticker := time.NewTicker(s.m.opts.RefreshInterval)
	defer ticker.Stop()
	retryBo := backoff{min: s.m.opts.BackoffMin, max: s.m.opts.BackoffMax}
	retry := time.NewTimer(0)
	retry.Stop()
	defer retry.Stop()
	// A list_changed that comes sooner than RefreshGap after the last refresh waits for the gap
	// to pass: a server announcing changes without end gets one refresh per gap, not a refresh
	// loop that keeps a core busy and, if its list churns, the audit trail growing.
	gap := time.NewTimer(0)
	gap.Stop()
	defer gap.Stop()
	gapPending := false
	var lastRefresh time.Time
	// refresh returns an error only when the list failed because the server cannot be reached
	// at all: then the session is over, and the supervisor says so (backoff) at once instead of
	// after the keepalive gives up.
	refresh := func() error {
		retry.Stop()
		gap.Stop()
		gapPending = false
		defer func() { lastRefresh = time.Now() }()
		if err := s.refreshTools(ctx, sessCtx, cs); err != nil {
			if connectionLost(err) {
				return err
			}
			if sessCtx.Err() == nil {
				// A failed list leaves the session up: calls may still work, and nothing is
				// withdrawn. Try again sooner than the next periodic refresh.
				retry.Reset(retryBo.next())
			}
			return nil
		}
		retryBo.reset()
		return nil
	}
	// A request left over from an earlier session is served by this first refresh.
	select {
	case <-s.refresh:
	default:
	}
	if err := refresh(); err != nil {
		return time.Since(start), fmt.Errorf("session lost: %w", err)
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-ended:
			if waitErr != nil {
				return time.Since(start), fmt.Errorf("session ended: %w", waitErr)
			}
			return time.Since(start), errors.New("session ended: closed by the server")
		case <-sessCtx.Done():
			return time.Since(start), errInterrupted
		case <-s.wake:
			if s.secretsChanged(cfg, &gen) {
				return time.Since(start), errInterrupted
			}
		case <-s.refresh:
			if wait := s.m.opts.RefreshGap - time.Since(lastRefresh); wait > 0 {
				if !gapPending {
					gap.Reset(wait)
					gapPending = true
				}
			} else {
				err = refresh()
			}
		case <-gap.C:
			err = refresh()
		case <-ticker.C:
			err = refresh()
		case <-retry.C:
			err = refresh()
		}
		if err != nil {
			return time.Since(start), fmt.Errorf("session lost: %w", err)
		}
	}
}

// connRecorder is a transport that remembers the connection it made, so that a dial given up
// can close it. go-sdk's Connect can outlive its context: over streamable HTTP it opens the
// standalone stream inside Connect, on the connection's own context, and retries one that
// fails for ten seconds and more; only closing the connection ends that. The connection itself
// is returned unwrapped, because the sdk finds the streamable one by its type.
type connRecorder struct {
	sdk.Transport
	mu     sync.Mutex
	conn   sdk.Connection
	closed bool
}

func (t *connRecorder) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		conn.Close()
		return nil, errInterrupted
	}
	t.conn = conn
	return conn, nil
}

// close closes the connection made, if any, and any made later.
func (t *connRecorder) close() {
	t.mu.Lock()
	t.closed = true
	conn := t.conn
	t.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// setIfLive applies f to the status, under the same lock as lock() ends sessions, unless
// sessCtx has already ended; it reports whether it did.
func (s *supervisor) setIfLive(sessCtx context.Context, f func(*ServerStatus)) bool {
	s.mu.Lock()
	if sessCtx.Err() != nil {
		s.mu.Unlock()
		return false
	}
	before := s.st
	f(&s.st)
	changed := s.st != before
	s.mu.Unlock()
	if changed {
		s.m.notifyChange()
	}
	return true
}

// enter moves st to state, stamping Since only on a change.
func (s *supervisor) enter(st *ServerStatus, state State) {
	if st.State != state {
		st.State = state
		st.Since = time.Now()
	}
}

// startError describes a stdio server that could not start, naming the command as configured.
func (s *supervisor) startError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("start %q: %w", s.cfg.Command, pe.Err)
	}
	var ee *osexec.Error
	if errors.As(err, &ee) {
		return fmt.Errorf("start %q: %w", s.cfg.Command, ee.Err)
	}
	return fmt.Errorf("start %q: %w", s.cfg.Command, err)
}

// secretsChanged reports whether new secrets make the session's config stale: the vault was
// locked, a secret went missing, or a value it uses changed.
func (s *supervisor) secretsChanged(inUse config.Server, gen *uint64) bool {
	if !s.needsSecrets {
		return false
	}
	cfg, newGen, err := s.resolve()
	if err != nil {
		return true
	}
	if !reflect.DeepEqual(cfg, inUse) {
		s.logger.Info("mcp server secrets changed; reconnecting")
		return true
	}
	*gen = newGen
	return false
}

// closeGrace bounds a graceful close before the transport is killed: a stdio server gets
// TerminateDuration after stdin closes and as long again after SIGTERM.
func (s *supervisor) closeGrace() time.Duration {
	return 2*s.m.opts.TerminateDuration + time.Second
}

// closeSession closes cs gracefully, and kills the transport if that takes longer than grace:
// the sdk's Close waits for calls in flight, a keepalive ping included.
func closeSession(cs *sdk.ClientSession, kill context.CancelFunc, grace time.Duration) {
	done := make(chan struct{})
	go func() {
		_ = cs.Close()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	kill()
	<-done
}

// refreshTools lists every tool and, only if the list is complete, reconciles it.
func (s *supervisor) refreshTools(ctx, sessCtx context.Context, cs *sdk.ClientSession) error {
	lctx, cancel := context.WithTimeout(sessCtx, s.m.opts.ListTimeout)
	tools, err := listAllTools(lctx, cs, s.m.maxPages, s.m.maxTools)
	cancel()
	if sessCtx.Err() != nil {
		// The session is ending (lock, shutdown): whatever arrived is not reconciled.
		return fmt.Errorf("tools/list: %w", sessCtx.Err())
	}
	if err != nil {
		err = fmt.Errorf("tools/list: %w", err)
		msg := s.errText(err)
		s.update(func(st *ServerStatus) { st.LastError = msg })
		s.logger.Warn("mcp tool list failed; nothing reconciled", "error", msg)
		return err
	}
	if err := s.m.rec.Reconcile(ctx, s.name, tools); err != nil {
		err = fmt.Errorf("reconcile: %w", err)
		msg := s.errText(err)
		s.update(func(st *ServerStatus) { st.LastError = msg })
		s.logger.Error("mcp reconcile failed", "error", msg)
		return err
	}
	s.update(func(st *ServerStatus) {
		st.Tools = len(tools)
		st.LastError = ""
	})
	s.logger.Debug("mcp tools reconciled", "tools", len(tools))
	return nil
}

// listAllTools follows the cursors of tools/list to the end. Past maxPages pages or maxTools
// tools, or when a cursor comes back, the list is incomplete and nothing is returned.
func listAllTools(ctx context.Context, cs *sdk.ClientSession, maxPages, maxTools int) ([]*sdk.Tool, error) {
	var tools []*sdk.Tool
	params := &sdk.ListToolsParams{}
	seen := map[string]bool{}
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fmt.Errorf("more than %d pages: %w", maxPages, ErrIncompleteList)
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		tools = append(tools, res.Tools...)
		if len(tools) > maxTools {
			return nil, fmt.Errorf("more than %d tools: %w", maxTools, ErrIncompleteList)
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("cursor %.40q came back: %w", res.NextCursor, ErrIncompleteList)
		}
		seen[res.NextCursor] = true
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
}

// transport builds the sdk transport of cfg (secrets expanded). Its errors are configuration
// errors. killCtx, once cancelled, kills a stdio server's process group or aborts HTTP requests.
func (s *supervisor) transport(cfg config.Server, killCtx context.Context) (sdk.Transport, error) {
	switch cfg.Type {
	case config.TransportStdio:
		return s.stdioTransport(cfg, killCtx)
	case config.TransportHTTP, config.TransportSSE:
		u, err := url.Parse(cfg.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("unusable URL %s", config.Server{Type: cfg.Type, URL: s.cfg.URL}.Target())
		}
		client := &http.Client{Transport: &headerTransport{
			base:    http.DefaultTransport,
			origin:  origin(u),
			headers: cfg.Headers,
			kill:    killCtx,
		}}
		if cfg.Type == config.TransportSSE {
			return &sdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: client}, nil
		}
		return &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client}, nil
	default:
		return nil, fmt.Errorf("unknown transport %q", cfg.Type)
	}
}

func (s *supervisor) stdioTransport(cfg config.Server, killCtx context.Context) (sdk.Transport, error) {
	if cfg.Cwd != "" {
		// Checked here because a failed chdir in the child is reported as the command missing.
		fi, err := os.Stat(cfg.Cwd)
		if err != nil {
			return nil, fmt.Errorf("working directory %q: %w", cfg.Cwd, errors.Unwrap(err))
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("working directory %q is not a directory", cfg.Cwd)
		}
	}
	path := cfg.Command
	if strings.ContainsRune(path, '/') && !filepath.IsAbs(path) && cfg.Cwd != "" {
		path = filepath.Join(cfg.Cwd, path)
	}
	path, err := osexec.LookPath(path)
	if err != nil {
		// The message names the command as configured: the expanded one may hold a secret.
		switch {
		case errors.Is(err, osexec.ErrNotFound):
			return nil, fmt.Errorf("command %q not found on PATH: %w", s.cfg.Command, osexec.ErrNotFound)
		case errors.Is(err, fs.ErrPermission):
			return nil, fmt.Errorf("command %q is not executable: %w", s.cfg.Command, fs.ErrPermission)
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("command %q does not exist: %w", s.cfg.Command, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("command %q cannot be run", s.cfg.Command)
	}
	cmd := osexec.CommandContext(killCtx, path, cfg.Args...)
	cmd.Env = s.env(cfg.Env)
	cmd.Dir = cfg.Cwd
	cmd.Stderr = &stderrLog{logger: s.logger}
	// Its own process group, so that a kill reaches whatever it spawned, and a Ctrl-C meant
	// for the daemon does not reach it before the daemon closes it in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	cmd.WaitDelay = time.Second
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: s.m.opts.TerminateDuration}, nil
}

// env is a stdio server's whole environment: the daemon's PATH, HOME and LANG, then the
// configured variables. Nothing else of the daemon's environment reaches it.
func (s *supervisor) env(extra map[string]string) []string {
	getenv := s.m.opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	vars := map[string]string{}
	for _, k := range []string{"PATH", "HOME", "LANG"} {
		if v := getenv(k); v != "" {
			vars[k] = v
		}
	}
	for k, v := range extra {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// isStartError reports whether a stdio dial failed because the process could not start.
func isStartError(err error) bool {
	var ee *osexec.Error
	var pe *fs.PathError
	return errors.As(err, &ee) || errors.As(err, &pe)
}

// origin returns scheme://host of u, lower-cased.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// headerTransport adds the configured headers to requests for the server's own origin only, so
// a redirect or an SSE message endpoint elsewhere never receives its credentials, and aborts
// every request once kill is cancelled. It is an http.RoundTripper, not a wrapper of the sdk's
// connection: the sdk finds its streamable connection by type to open the list_changed stream.
type headerTransport struct {
	base    http.RoundTripper
	origin  string
	headers map[string]string
	kill    context.Context
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.kill, cancel)
	r := req.Clone(ctx)
	if origin(req.URL) == t.origin {
		for k, v := range t.headers {
			// The sdk's own headers (session, protocol version) win.
			if r.Header.Get(k) == "" {
				r.Header.Set(k, v)
			}
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	body := resp.Body
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		// The sdk reads a JSON answer whole, however long; an event stream it cuts per event.
		body = &limitedBody{ReadCloser: body, left: MaxResponseBytes}
	}
	// The body may be a long-lived event stream: the request context lives until it is closed.
	resp.Body = &cancelBody{ReadCloser: body, done: func() { stop(); cancel() }}
	return resp, nil
}

// MaxResponseBytes bounds an HTTP response that is not an event stream, as go-sdk bounds a
// stdio message and a server-sent event (16 MiB each): past it the read fails, and with it the
// session, instead of the daemon holding whatever a server cares to send.
const MaxResponseBytes = 16 << 20

// errResponseTooLarge fails the read of a body longer than MaxResponseBytes.
var errResponseTooLarge = fmt.Errorf("response longer than %d bytes", MaxResponseBytes)

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errResponseTooLarge
	}
	// One byte more than is left tells a body that ends at the limit from one that goes on.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errResponseTooLarge
	}
	return n, err
}

type cancelBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// stderrLog logs a stdio server's stderr line by line at debug level. It may hold secrets the
// server echoes, so it is never shown as the server's status.
type stderrLog struct {
	logger *slog.Logger
	buf    []byte
}

const maxStderrLine = 1024

func (w *stderrLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if room := maxStderrLine - len(w.buf); room > 0 {
				w.buf = append(w.buf, p[:min(room, len(p))]...)
			}
			break
		}
		if room := maxStderrLine - len(w.buf); room > 0 {
			w.buf = append(w.buf, p[:min(room, i)]...)
		}
		if line := strings.TrimSpace(string(w.buf)); line != "" {
			w.logger.Debug("mcp server stderr", "line", line)
		}
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// backoff yields exponentially growing delays with full jitter: each is drawn uniformly
// between min and a ceiling that doubles from min up to max.
type backoff struct {
	min, max time.Duration
	n        int
}

func (b *backoff) next() time.Duration {
	ceil := b.max
	if b.n < 32 {
		if c := b.min << b.n; c > 0 && c < b.max {
			ceil = c
			b.n++
		}
	}
	if ceil <= b.min {
		return b.min
	}
	return b.min + rand.N(ceil-b.min+1)
}

func (b *backoff) reset() { b.n = 0 }

// connectionLost reports whether err says the server could not be reached at all (the process
// is gone, the connection was refused or closed), as opposed to an answer it gave.
// The transport-level causes are checked first: go-sdk wraps a refused HTTP request in a
// JSON-RPC "rejected by transport" error too.
func connectionLost(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.As(err, &opErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
