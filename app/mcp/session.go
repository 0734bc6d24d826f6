package mcp

// One session with a server, from dial to close. The two protocol eras (DESIGN.md rule 12)
// differ in three places, each one function: how a session starts (dial: the initialize
// handshake, or server/discover in 2026-07-28, chosen by sessionOptions), how list changes
// arrive (newClient's ToolListChangedHandler: notifications/tools/list_changed, or a
// subscriptions/listen stream), and how a list is read (listTools in refresh.go, where a ttlMs
// cache hint must never hide a redefinition).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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

// newClient is the sdk client of one server. A list_changed it receives asks for a refresh.
func (s *supervisor) newClient() *sdk.Client {
	keepAlive := s.m.opts.KeepAlive
	if keepAlive < 0 {
		keepAlive = 0
	}
	return sdk.NewClient(&sdk.Implementation{Name: "maven", Version: s.m.opts.Version}, &sdk.ClientOptions{
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
}

// sessionOptions are the options of every dial: the protocol revision Maven speaks.
func sessionOptions() *sdk.ClientSessionOptions {
	return &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion}
}

// session is one live connection to a server.
type session struct {
	cs      *sdk.ClientSession
	ctx     context.Context    // carries the lists and calls; ends with the session
	end     context.CancelFunc // ends the session (lock, new secrets, shutdown)
	kill    context.CancelFunc // the transport's last resort: SIGKILL, or abort HTTP requests
	ended   chan struct{}      // closed once the connection itself has ended
	waitErr error              // why the connection ended; read only after ended is closed
	cfg     config.Server      // as dialled, secrets expanded
	gen     uint64             // the secrets generation cfg was expanded with
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

	s.setEndSession(endSession)
	defer s.setEndSession(nil)
	// A lock between resolve and here found no endSession to cancel: look again.
	if s.m.generation() != gen {
		return 0, errInterrupted
	}

	transport, err := s.buildTransport(cfg, killCtx)
	if err != nil {
		return 0, &configError{err}
	}
	s.setIfLive(sessCtx, func(st *ServerStatus) { s.enter(st, StateConnecting) })
	cs, err := s.dial(ctx, sessCtx, cfg, transport, endSession, kill)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	sess := &session{cs: cs, ctx: sessCtx, end: endSession, kill: kill, ended: make(chan struct{}),
		cfg: cfg, gen: gen}
	defer s.teardown(sess)
	go func() {
		sess.waitErr = cs.Wait()
		close(sess.ended)
	}()
	err = s.serve(ctx, sess)
	return time.Since(start), err
}

// dial connects and initializes within DialTimeout. A dial given up (timeout, lock, shutdown)
// kills the transport at once. The error says why it failed: errInterrupted when Maven gave it
// up, a configError when retrying soon will not help.
func (s *supervisor) dial(ctx, sessCtx context.Context, cfg config.Server, transport sdk.Transport, endSession, kill context.CancelFunc) (*sdk.ClientSession, error) {
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
	cs, err := s.client.Connect(sessCtx, conns, sessionOptions())
	timer.Stop()
	stopKillOnAbandon()
	if err == nil && sessCtx.Err() != nil {
		// Connected just as the dial was given up.
		closeSession(cs, kill, s.closeGrace())
		err = sessCtx.Err()
	}
	switch {
	case err == nil:
		return cs, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case timedOut.Load():
		return nil, fmt.Errorf("dial: no answer within %s: %w", s.m.opts.DialTimeout, context.DeadlineExceeded)
	case sessCtx.Err() != nil:
		return nil, errInterrupted
	case cfg.Type == config.TransportStdio && isStartError(err):
		return nil, &configError{s.startError(err)}
	}
	return nil, fmt.Errorf("dial: %w", err)
}

// serve publishes the session for CallTool and keeps its tool list current until it ends: the
// connection ended, Maven ended it (errInterrupted: lock, new secrets), ctx is done, or a
// refresh found the server unreachable.
func (s *supervisor) serve(ctx context.Context, sess *session) error {
	live := s.setIfLive(sess.ctx, func(st *ServerStatus) {
		s.session, s.sessCtx, s.sessEnded = sess.cs, sess.ctx, sess.ended
		s.enter(st, StateConnected)
		st.LastError = ""
	})
	if !live {
		return errInterrupted
	}
	if ir := sess.cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		s.logger.Info("mcp server connected", "server_name", ir.ServerInfo.Name,
			"server_version", ir.ServerInfo.Version, "protocol", ir.ProtocolVersion)
	} else {
		s.logger.Info("mcp server connected")
	}

	sched := newRefreshSchedule(s.m.opts)
	defer sched.stop()
	// A request left over from an earlier session is served by this first refresh.
	select {
	case <-s.refreshWanted:
	default:
	}
	if err := s.refresh(ctx, sess, sched); err != nil {
		return fmt.Errorf("session lost: %w", err)
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sess.ended:
			if sess.waitErr != nil {
				return fmt.Errorf("session ended: %w", sess.waitErr)
			}
			return errors.New("session ended: closed by the server")
		case <-sess.ctx.Done():
			return errInterrupted
		case <-s.wake:
			if s.secretsChanged(sess.cfg, &sess.gen) {
				return errInterrupted
			}
		case <-s.refreshWanted:
			if sched.requested() {
				err = s.refresh(ctx, sess, sched)
			}
		case <-sched.gapTimer.C:
			err = s.refresh(ctx, sess, sched)
		case <-sched.ticker.C:
			err = s.refresh(ctx, sess, sched)
		case <-sched.retry.C:
			err = s.refresh(ctx, sess, sched)
		}
		if err != nil {
			return fmt.Errorf("session lost: %w", err)
		}
	}
}

// teardown ends a session in order: unpublish it so that no new call starts, end the calls in
// flight (the sdk's Close waits for them), then close it.
func (s *supervisor) teardown(sess *session) {
	s.mu.Lock()
	s.session, s.sessCtx, s.sessEnded = nil, nil, nil
	s.mu.Unlock()
	sess.end()
	closeSession(sess.cs, sess.kill, s.closeGrace())
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
