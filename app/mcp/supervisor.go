package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/config"
	"maven/app/oauth"
	"maven/app/reveal"
	"maven/app/vault"
)

// errInterrupted ends a session or a dial that Maven itself stopped (lock, new secrets): the
// supervisor decides again at once, without backoff.
var errInterrupted = errors.New("interrupted")

// configError marks a failure that retrying soon will not fix: the command is missing, the URL
// cannot be used. The server shows as failed and is retried at BackoffMax.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// supervisor owns one server's connection: it dials, lists, refreshes and redials, all on its
// own goroutine, and publishes the session for CallTool. Its loop is run; one session, from
// dial to close, is connect (session.go).
type supervisor struct {
	m             *Manager
	name          string
	cfg           config.Server // as configured: secret references unexpanded
	needsSecrets  bool
	logger        *slog.Logger
	client        *sdk.Client
	prober        func() *sdk.Client // made at the first probe (probe.go): most servers are never probed
	wake          chan struct{}      // secrets or approvals changed
	refreshWanted chan struct{}      // a refresh is pending; with the one running, at most two
	// The command line of a stdio server and its digest (StdioCommand); "" for http and sse.
	display, digest string
	// sealedAuth is set while the server's OAuth sign-in is sealed in the vault: like a
	// secret, it locks and unlocks with the vault.
	sealedAuth atomic.Bool
	// commandMissing is set while a stdio server waits out MissingCommandRetry: a reload wakes it.
	commandMissing atomic.Bool
	// child is the last start of a stdio server's process; only the supervisor's goroutine
	// touches it.
	child *stdioChild

	mu         sync.Mutex
	secretVals [][]byte // values of the secrets in use, masked in errors; zeroed once locked
	st         ServerStatus
	session    *sdk.ClientSession     // nil unless connected
	sessCtx    context.Context        // ends with the session; nil with it
	sessEnded  <-chan struct{}        // closed once the connection itself has ended; nil with it
	endSession context.CancelFunc     // ends the current dial or session
	dialAuth   *oauth.Session         // the OAuth of the current dial; nil for none
	wait       *authWait              // a refusal waiting for the owner to sign in; nil for none
	stepUps    int                    // step-ups asked for since a tool call last succeeded
	calls      map[*inflight]struct{} // calls in progress, for a server's questions (elicit.go)
}

func newSupervisor(m *Manager, name string, cfg config.Server) *supervisor {
	trust, trustText := TrustOf(cfg)
	s := &supervisor{
		m:             m,
		name:          name,
		cfg:           cfg,
		needsSecrets:  cfg.NeedsSecrets(),
		logger:        m.logger.With("mcp_server", name),
		wake:          make(chan struct{}, 1),
		refreshWanted: make(chan struct{}, 1),
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
	s.client = s.newClient()
	s.prober = sync.OnceValue(s.probeClient)
	return s
}

// run supervises the server until ctx is done: it waits firstDialIn (or until a wake), then
// until the server may be dialled (readyToDial), then connects, and after a session ends
// decides when to try again.
func (s *supervisor) run(ctx context.Context, firstDialIn time.Duration) {
	if s.cfg.Disabled {
		s.set(StateDisabled, "")
		return
	}
	if firstDialIn > 0 {
		s.sleep(ctx, firstDialIn)
	}
	bo := backoff{min: s.m.opts.BackoffMin, max: s.m.opts.BackoffMax}
	for ctx.Err() == nil {
		cfg, gen, ready := s.readyToDial(ctx, &bo)
		if !ready {
			continue
		}
		up, err := s.connect(ctx, cfg, gen)
		var churn *ChurnError
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errInterrupted), s.waiting() != nil:
			// Ended by Maven, or refused: it waits for a sign-in now (refusedNow).
			continue
		case errors.As(err, &churn):
			s.stopListening(ctx, churn)
			continue
		}
		if up >= min(stableSession, s.m.opts.BackoffMax) {
			bo.reset()
		}
		s.waitAfter(ctx, err, &bo)
	}
}

// readyToDial is the gate before each dial: the owner's approval of a stdio server's command
// line, its secrets (sealed while the vault is locked), a sign-in it waits for, and its sealed
// OAuth sign-in. It returns the config with its secrets expanded, their generation, and true
// when the server may be dialled now; false once it has shown what the server waits for and
// waited for it (or ctx ended), and the caller decides again.
func (s *supervisor) readyToDial(ctx context.Context, bo *backoff) (config.Server, uint64, bool) {
	approved, err := s.approved(ctx)
	switch {
	case ctx.Err() != nil:
		return config.Server{}, 0, false
	case err != nil:
		d := bo.next()
		s.set(StateBackoff, s.errText(err))
		s.logger.Warn("mcp server: cannot check its command line", "error", s.errText(err), "retry_in", d.Round(time.Millisecond))
		s.sleep(ctx, d)
		return config.Server{}, 0, false
	case !approved:
		// Never started: the owner has not seen this command line (docs/design.md#rule-25).
		s.set(StateAwaitingApproval, "")
		s.logger.Info("mcp server waits for the owner to approve its command line")
		s.sleep(ctx, 0)
		return config.Server{}, 0, false
	}

	cfg, gen, err := s.resolve()
	switch {
	case errors.Is(err, ErrLocked):
		s.set(StateLocked, lockedReason(err))
		s.sleep(ctx, 0)
		return config.Server{}, 0, false
	case err != nil:
		s.set(StateFailed, s.errText(err))
		s.logger.Warn("mcp server cannot be dialled", "error", s.errText(err))
		s.sleep(ctx, s.m.opts.BackoffMax)
		return config.Server{}, 0, false
	case s.waiting() != nil:
		// Refused: it waits for the owner to sign in, and is not dialled meanwhile.
		s.awaitSignIn(ctx, cfg)
		return config.Server{}, 0, false
	}
	if _, err := s.openAuth(ctx, cfg); errors.Is(err, vault.ErrLocked) {
		s.set(StateLocked, "")
		s.sleep(ctx, 0)
		return config.Server{}, 0, false
	} else if err != nil {
		d := bo.next()
		s.set(StateBackoff, s.errText(err))
		s.sleep(ctx, d)
		return config.Server{}, 0, false
	}
	return cfg, gen, true
}

// waitAfter shows why a session or a dial failed, and waits as long as that failure calls for:
// hours for a missing command, BackoffMax for a configuration that cannot work, the next backoff
// for the rest.
func (s *supervisor) waitAfter(ctx context.Context, err error, bo *backoff) {
	var ce *configError
	switch {
	case errors.Is(err, errCommandNotFound):
		s.waitForCommand(ctx, err)
		return
	case errors.As(err, &ce):
		s.set(StateFailed, s.errText(err))
		s.logger.Warn("mcp server failed", "error", s.errText(err), "retry_in", s.m.opts.BackoffMax)
		s.sleep(ctx, s.m.opts.BackoffMax)
		return
	}
	d := bo.next()
	if exit := s.exited(); exit != nil {
		// Its own words say why, once per failure and at warn: it will not get better alone.
		s.setExited(exit)
		s.logger.Warn("mcp server exited", "status", exit.Status, "stderr", strings.Join(exit.Stderr, "\n"),
			"retry_in", d.Round(time.Millisecond))
	} else {
		s.set(StateBackoff, s.errText(err))
		s.logger.Info("mcp server unavailable", "error", s.errText(err), "retry_in", d.Round(time.Millisecond))
	}
	s.sleep(ctx, d)
}

// exited returns how the stdio server's last process ended by itself, nil if it did not (or the
// server is not stdio).
func (s *supervisor) exited() *ExitError {
	if s.child == nil {
		return nil
	}
	return s.child.exit()
}

// setExited shows a server whose process exited as backing off, with its exit status and its
// last lines on stderr.
func (s *supervisor) setExited(exit *ExitError) {
	s.update(func(st *ServerStatus) {
		s.enter(st, StateBackoff)
		st.LastError = reveal.CutError(exit.Error(), maxErrorText)
		st.LastStderr = strings.Join(exit.Stderr, "\n")
	})
}

// waitForCommand shows a stdio server whose command is not found as failed, and waits
// MissingCommandRetry (hours) before looking again, or until a reload or an approval wakes it.
func (s *supervisor) waitForCommand(ctx context.Context, err error) {
	d := s.m.opts.MissingCommandRetry
	s.set(StateFailed, s.errText(err))
	s.logger.Warn("mcp server cannot start", "error", s.errText(err), "retry_in", d,
		"wake", "maven reload, once the command is installed")
	s.commandMissing.Store(true)
	defer s.commandMissing.Store(false)
	s.sleep(ctx, d)
}

// stopListening shows a server that went over its churn budget as failed and waits out the
// cooldown without dialling it. Nothing it offered is withdrawn: its rows stay as they were,
// and no call reaches it meanwhile. Wakes (unlock, approvals) do not end the wait; each shows
// the failure again, over a lock's state.
func (s *supervisor) stopListening(ctx context.Context, ce *ChurnError) {
	msg := fmt.Sprintf("%s: %s. Maven stopped listening to it for %s, or until the daemon restarts; nothing it offered was withdrawn",
		ErrTooManyChanges, ce.Detail, ce.Cooldown)
	s.logger.Warn("mcp server changes its tools too often; not listening to it", "detail", ce.Detail, "until", ce.Until)
	for ctx.Err() == nil {
		s.set(StateFailed, msg)
		d := time.Until(ce.Until)
		if d <= 0 {
			return
		}
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
	case s.refreshWanted <- struct{}{}:
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
	s.dialAuth = nil // the tokens go with the session
	changed := s.st.State != StateLocked
	if changed {
		s.st.State, s.st.Since, s.st.LastError = StateLocked, time.Now(), ""
	}
	s.mu.Unlock()
	if changed {
		s.m.notifyChange()
	}
}

// setEndSession publishes the function that ends the current dial or session, for lock.
func (s *supervisor) setEndSession(end context.CancelFunc) {
	s.mu.Lock()
	s.endSession = end
	s.mu.Unlock()
}

// snapshot returns the server's status.
func (s *supervisor) snapshot() ServerStatus {
	s.mu.Lock()
	st := s.st
	s.mu.Unlock()
	st.UsesSecrets, st.SignInSealed = s.needsSecrets, s.sealedAuth.Load()
	return st
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
		st.LastError, st.LastStderr = lastErr, ""
	})
}

// update applies f to the status, under the lock, and tells the Manager's watchers if it
// changed anything.
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

// setIfLive applies f to the status, under the same lock as lock() ends sessions, unless
// sessCtx has already ended; it reports whether it did.
func (s *supervisor) setIfLive(sessCtx context.Context, f func(*ServerStatus)) bool {
	live := false
	s.update(func(st *ServerStatus) {
		if live = sessCtx.Err() == nil; live {
			f(st)
		}
	})
	return live
}

// enter moves st to state, stamping Since only on a change.
func (s *supervisor) enter(st *ServerStatus, state State) {
	if st.State != state {
		st.State = state
		st.Since = time.Now()
	}
	if state != StateNeedsAuth {
		st.AuthServer, st.AuthScopes, st.AuthEndpoint = "", "", ""
	}
}
