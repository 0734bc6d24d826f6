package mcp

// One session with a server, from dial to close. How the two protocol eras differ is told in
// client.go.

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

// stableSession is how long a session must have lasted for the redial delay to start over.
const stableSession = 30 * time.Second

// modernProtocol is the first revision of the 2026 era: stateless, no pings.
const modernProtocol = "2026-07-28"

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
	via     attempt            // the transport that reached the server
	watch   *httpWatch         // its HTTP exchanges, for a remote server
}

// attempt is one way to reach a server: a transport, and what the servers card calls it.
type attempt struct {
	kind      config.Transport
	transport sdk.Transport
}

// modern reports whether the session speaks the 2026 era.
func (sess *session) modern() bool {
	ir := sess.cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= modernProtocol
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

	watch := newHTTPWatch()
	attempts, err := s.attempts(cfg, killCtx, watch)
	if err != nil {
		return 0, &configError{err}
	}
	s.setIfLive(sessCtx, func(st *ServerStatus) { s.enter(st, StateConnecting) })
	cs, via, err := s.dial(ctx, sessCtx, cfg, attempts, watch, endSession, kill)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	sess := &session{cs: cs, ctx: sessCtx, end: endSession, kill: kill, ended: make(chan struct{}),
		cfg: cfg, gen: gen, via: via, watch: watch}
	defer s.teardown(sess)
	go func() {
		sess.waitErr = cs.Wait()
		close(sess.ended)
	}()
	err = s.serve(ctx, sess)
	return time.Since(start), err
}

// attempts are the transports to try, in order: the configured one, and for a url given without
// a type (config.Server.TypeGuessed), the older SSE transport after streamable HTTP.
func (s *supervisor) attempts(cfg config.Server, killCtx context.Context, watch *httpWatch) ([]attempt, error) {
	t, err := s.buildTransport(cfg, killCtx, watch)
	if err != nil {
		return nil, err
	}
	out := []attempt{{cfg.Type, t}}
	if cfg.TypeGuessed && cfg.Type == config.TransportHTTP {
		sse := cfg
		sse.Type = config.TransportSSE
		if t, err = s.buildTransport(sse, killCtx, watch); err != nil {
			return nil, err
		}
		out = append(out, attempt{config.TransportSSE, t})
	}
	return out, nil
}

// dial connects and initializes within DialTimeout, through the first attempt, or the next one
// if the server refused the POSTs of the first with a 4xx (the MCP spec's backwards
// compatibility: a server that answers so speaks the older SSE transport). A dial given up
// (timeout, lock, shutdown) kills the transport at once. The error says why it failed:
// errInterrupted when Maven gave it up, a configError when retrying soon will not help.
func (s *supervisor) dial(ctx, sessCtx context.Context, cfg config.Server, attempts []attempt, watch *httpWatch, endSession, kill context.CancelFunc) (*sdk.ClientSession, attempt, error) {
	var timedOut atomic.Bool
	timer := time.AfterFunc(s.m.opts.DialTimeout, func() {
		timedOut.Store(true)
		endSession()
	})
	// An abandoned dial is killed outright: on a failed initialize the sdk closes the session
	// itself, and that close waits up to 5s for a notifications/cancelled that a black-holed
	// server never takes. Its connections are closed too: Connect can outlive its context.
	conns := &connRecorder{}
	stopKillOnAbandon := context.AfterFunc(sessCtx, func() {
		kill()
		conns.close()
	})
	via := attempts[0]
	cs, err := s.client.Connect(sessCtx, conns.via(via.transport), nil)
	if err != nil && len(attempts) > 1 && watch.refusedPost() && sessCtx.Err() == nil {
		s.logger.Info("mcp server refused the streamable HTTP POST; trying the SSE transport", "error", s.errText(err))
		via = attempts[1]
		cs, err = s.client.Connect(sessCtx, conns.via(via.transport), nil)
	}
	timer.Stop()
	stopKillOnAbandon()
	if err == nil && sessCtx.Err() != nil {
		// Connected just as the dial was given up.
		closeSession(cs, kill, s.closeGrace())
		err = sessCtx.Err()
	}
	switch {
	case err == nil:
		return cs, via, nil
	case ctx.Err() != nil:
		return nil, via, ctx.Err()
	case timedOut.Load():
		return nil, via, fmt.Errorf("dial: no answer within %s: %w", s.m.opts.DialTimeout, context.DeadlineExceeded)
	case sessCtx.Err() != nil:
		return nil, via, errInterrupted
	case cfg.Type == config.TransportStdio && isStartError(err):
		return nil, via, &configError{s.startError(err)}
	}
	return nil, via, fmt.Errorf("dial: %w", err)
}

// serve publishes the session for CallTool and keeps its tool list current until it ends: the
// connection ended, Maven ended it (errInterrupted: lock, new secrets), ctx is done, or a
// refresh found the server unreachable.
func (s *supervisor) serve(ctx context.Context, sess *session) error {
	live := s.setIfLive(sess.ctx, func(st *ServerStatus) {
		s.session, s.sessCtx, s.sessEnded = sess.cs, sess.ctx, sess.ended
		s.enter(st, StateConnected)
		st.LastError, st.LastStderr = "", ""
		st.Transport = string(sess.via.kind)
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
	listenEnded, probeFailed := s.watchModern(sess)
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
		case <-listenEnded:
			return errors.New("session ended: the server closed its subscriptions/listen stream")
		case err := <-probeFailed:
			return fmt.Errorf("session ended: %w", err)
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

// connRecorder remembers the connections a dial made, so that a dial given up can close them.
// go-sdk's Connect can outlive its context: over streamable HTTP it opens the standalone stream
// inside Connect, on the connection's own context, and retries one that fails for ten seconds
// and more; only closing the connection ends that. The connection itself is returned
// unwrapped, because the sdk finds the streamable one by its type.
type connRecorder struct {
	mu     sync.Mutex
	conns  []sdk.Connection
	closed bool
}

// via returns t, recording the connections it makes.
func (r *connRecorder) via(t sdk.Transport) sdk.Transport { return &recordingTransport{t, r} }

type recordingTransport struct {
	sdk.Transport
	r *connRecorder
}

func (t *recordingTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.r.mu.Lock()
	defer t.r.mu.Unlock()
	if t.r.closed {
		conn.Close()
		return nil, errInterrupted
	}
	t.r.conns = append(t.r.conns, conn)
	return conn, nil
}

// close closes the connections made, and any made later.
func (r *connRecorder) close() {
	r.mu.Lock()
	r.closed = true
	conns := r.conns
	r.mu.Unlock()
	for _, conn := range conns {
		conn.Close()
	}
}
