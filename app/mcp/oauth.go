package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"maven/app/config"
	"maven/app/oauth"
)

// A remote server that refuses Maven (401, or 403 insufficient_scope) waits for the owner to
// sign in to it (docs/design.md#rule-14, needs-auth): it is never redialled for it. The supervisor
// learns what the server asks for once (discovery), shows it, and sleeps until a sign-in
// succeeds. The sign-in itself is app/oauth's, begun from the servers card behind a step-up.

// Errors of SignIn.
var (
	// ErrNoSignInNeeded means the server does not wait for a sign-in.
	ErrNoSignInNeeded = errors.New("the server does not need a sign-in")
	// ErrSignInChanged means the server's need is no longer the one the owner approved.
	ErrSignInChanged = errors.New("what the server asks for changed since the page showed it")
	// ErrNeedsSignIn fails a call to a server that waits for the owner to sign in to it (or
	// that refused the call for more scope).
	ErrNeedsSignIn = errors.New("MCP server wants the owner to sign in")
)

// maxStepUps bounds the step-ups (sign-ins for more scope) of a server in a row with no tool
// call in between that succeeded: a server that asks for more each time is not asked for again.
const maxStepUps = 3

// authWait is a refusal waiting for the owner's sign-in.
type authWait struct {
	challenge oauth.Challenge
	granted   []string    // the scopes of the token the server refused
	need      *oauth.Need // once discovered
	// refused is set when no sign-in can help: the server refuses what it was granted, or
	// asked for more too often.
	refused string
	// moved is set when the server had a sign-in for another address (a reload moved it).
	moved bool
}

// openAuth opens the OAuth of the next dial of cfg: the sealed sign-in of a remote server, if it
// has one for cfg's URL. vault.ErrLocked while it is sealed.
func (s *supervisor) openAuth(ctx context.Context, cfg config.Server) (*oauth.Session, error) {
	s.mu.Lock()
	s.dialAuth = nil
	s.mu.Unlock()
	if s.m.opts.OAuth == nil || cfg.Type != config.TransportHTTP {
		return nil, nil
	}
	sess, err := s.m.opts.OAuth.Open(ctx, s.name, cfg.URL, s.refusedNow)
	if err != nil {
		s.sealedAuth.Store(true)
		return nil, err
	}
	s.sealedAuth.Store(sess.Sealed())
	s.mu.Lock()
	s.dialAuth = sess
	s.mu.Unlock()
	return sess, nil
}

// refused makes the server wait for a sign-in after it refused ch. A request for more scope is
// a step-up; one for scopes the token already holds, or one step-up too many, cannot be helped
// by signing in, and the server shows as failed instead.
func (s *supervisor) refused(ch oauth.Challenge) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &authWait{challenge: ch}
	if s.dialAuth != nil && s.dialAuth.SignedIn() {
		w.granted = s.dialAuth.Granted()
	}
	w.moved = s.dialAuth != nil && s.dialAuth.Moved()
	if ch.InsufficientScope() {
		s.stepUps++
		asked := ch.Scopes()
		switch {
		case len(asked) > 0 && !slices.ContainsFunc(asked, func(sc string) bool { return !slices.Contains(w.granted, sc) }):
			w.refused = fmt.Sprintf("it refuses access it was granted (scopes %q), so signing in again would not help", ch.Scopes())
		case s.stepUps > maxStepUps:
			w.refused = fmt.Sprintf("it asked for more access %d times in a row, so Maven stopped asking you", s.stepUps)
		}
	}
	s.wait = w
}

// awaitSignIn shows what the server waits for, discovering it the first time, and sleeps until
// the owner signs in (or something else wakes the supervisor, which then looks again).
func (s *supervisor) awaitSignIn(ctx context.Context, cfg config.Server) {
	s.mu.Lock()
	w := s.wait
	s.mu.Unlock()
	if w.refused != "" {
		s.set(StateFailed, "the server wants more access: "+w.refused+". Nothing it offered was withdrawn; a restart tries again")
		s.sleep(ctx, 0)
		return
	}
	if w.need == nil {
		dctx, cancel := context.WithTimeout(ctx, s.m.opts.DialTimeout)
		need, err := oauth.Discover(dctx, s.m.opts.OAuth.HTTPClient(), cfg.URL, w.challenge, w.granted, s.registration(cfg))
		cancel()
		if err != nil {
			s.set(StateFailed, s.errText(fmt.Errorf("it wants a sign-in, but %w", err)))
			s.logger.Warn("mcp server wants a sign-in that Maven cannot offer", "error", s.errText(err), "retry_in", s.m.opts.BackoffMax)
			s.sleep(ctx, s.m.opts.BackoffMax)
			return
		}
		s.mu.Lock()
		w.need = &need
		s.mu.Unlock()
		s.logger.Info("mcp server waits for the owner to sign in", "authorization_server", need.Issuer, "scopes", need.ScopeText())
	}
	s.update(func(st *ServerStatus) {
		s.enter(st, StateNeedsAuth)
		st.LastError = (&oauth.NeedsAuthError{Challenge: w.challenge}).Error()
		if w.moved {
			st.LastError = "the server's address changed since you signed in; sign in again"
		}
		st.AuthServer, st.AuthScopes, st.AuthEndpoint = w.need.Issuer, w.need.ScopeText(), w.need.AuthorizationEndpoint
	})
	s.sleep(ctx, 0)
}

// registration is how Maven can identify itself to the server's authorization server.
func (s *supervisor) registration(cfg config.Server) oauth.Registration {
	r := oauth.Registration{MetadataDocument: s.m.opts.OAuth.HasMetadataDocument()}
	if o := cfg.OAuth; o != nil {
		r.Configured = &oauth.Configured{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes}
	}
	return r
}

// waiting returns the refusal the server waits on, nil if none.
func (s *supervisor) waiting() *authWait {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wait
}

// signInNeed returns the refusal the server waits on and what signing in must ask for, once
// discovery found it; ok is false before.
func (s *supervisor) signInNeed() (w *authWait, need oauth.Need, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wait == nil || s.wait.need == nil {
		return nil, oauth.Need{}, false
	}
	return s.wait, *s.wait.need, true
}

// SignIn begins the owner's sign-in to server from the browser session (at origin) that
// approved it with a step-up naming digest (oauth.Digest of what the card showed), and
// returns the URL to send the browser to. The server must be waiting for a sign-in, for just
// that (ErrNoSignInNeeded, ErrSignInChanged). Once the callback finishes it, the server dials
// with its new token; a failure shows on its card.
func (m *Manager) SignIn(ctx context.Context, server, digest, session, origin string) (string, error) {
	s, ok := m.servers.Load().byName[server]
	if !ok {
		return "", fmt.Errorf("mcp server %q: %w", server, ErrUnknownServer)
	}
	if m.opts.OAuth == nil {
		return "", fmt.Errorf("mcp server %q: %w", server, ErrNoSignInNeeded)
	}
	st := s.snapshot()
	w, need, ok := s.signInNeed()
	if st.State != StateNeedsAuth || !ok {
		return "", fmt.Errorf("mcp server %q is %s: %w", server, st.State, ErrNoSignInNeeded)
	}
	// The approval is checked against the very request the sign-in makes, not the card's copy.
	if oauth.Digest(server, need.Issuer, need.ScopeText()) != digest {
		return "", fmt.Errorf("mcp server %q: %w", server, ErrSignInChanged)
	}
	cfg, _, err := s.resolve()
	if err != nil {
		return "", fmt.Errorf("mcp server %q: %w", server, err)
	}
	in := oauth.SignIn{Server: server, ServerURL: cfg.URL, Challenge: w.challenge, Need: need,
		Session: session, Origin: origin, Done: func(err error) { s.signInDone(w, err) }}
	if r := s.registration(cfg); r.Configured != nil {
		in.Configured = r.Configured
	}
	u, err := m.opts.OAuth.Begin(ctx, in)
	if err != nil {
		return "", fmt.Errorf("mcp server %q: %w", server, err)
	}
	return u, nil
}

// signInDone ends the wait w after a sign-in: on success the supervisor dials with the new
// token; a failure shows on the card, which still offers the sign-in.
func (s *supervisor) signInDone(w *authWait, err error) {
	if err != nil {
		msg := s.errText(fmt.Errorf("the sign-in failed: %w", err))
		s.update(func(st *ServerStatus) {
			if st.State == StateNeedsAuth {
				st.LastError = msg
			}
		})
		return
	}
	s.mu.Lock()
	if s.wait == w {
		s.wait = nil
	}
	s.mu.Unlock()
	s.signal()
}

// callSucceeded resets the step-up count: the access the server asked for was enough.
func (s *supervisor) callSucceeded() {
	s.mu.Lock()
	s.stepUps = 0
	s.mu.Unlock()
}

// refusedNow makes the server wait for a sign-in the moment it refuses a request (the dial, a
// list, a call, a keepalive ping) and ends the session: nothing is withdrawn, and no request
// retries with the token refused.
func (s *supervisor) refusedNow(ch oauth.Challenge) {
	s.refused(ch)
	s.mu.Lock()
	if s.endSession != nil {
		s.endSession()
	}
	s.mu.Unlock()
}
