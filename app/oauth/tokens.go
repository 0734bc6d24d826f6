package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"

	"maven/app/activity"
)

// Session is one dial's OAuth: the token source of the sealed sign-in, if any, and what the
// server said when it refused. It implements go-sdk's auth.OAuthHandler for the streamable HTTP
// transport, and never signs in on its own: a refusal fails the request with a
// *NeedsAuthError, and the owner signs in from the servers card.
type Session struct {
	svc    *Service
	server string
	ts     oauth2.TokenSource // nil without a sign-in
	// onRefused hears of each refusal that wants a sign-in.
	onRefused func(Challenge)

	mu    sync.Mutex
	creds Credentials
}

var _ auth.OAuthHandler = (*Session)(nil)

// Open starts the OAuth of one dial of server: with its sealed credentials when it signed in
// (their token refreshed, and each new one sealed), without otherwise. ErrLocked (from the
// vault) while its credentials are sealed: no request may go out without them, nor with them.
// refused is called with every refusal that wants a sign-in, as it happens (the dial, a list, a
// call or a ping), before the request fails.
func (s *Service) Open(ctx context.Context, server string, refused func(Challenge)) (*Session, error) {
	sess := &Session{svc: s, server: server, onRefused: refused}
	creds, err := s.Load(ctx, server)
	switch {
	case isNotFound(err):
		return sess, nil
	case err != nil:
		return nil, err
	}
	sess.creds = creds
	if creds.Token != nil {
		// Refreshes outlive the dial: they happen on whatever request finds the token expired.
		refreshCtx := context.WithValue(context.Background(), oauth2.HTTPClient, s.opts.HTTP)
		sess.ts = &sealingSource{sess: sess, base: creds.config().TokenSource(refreshCtx, creds.Token),
			last: creds.Token.AccessToken, canRefresh: creds.Token.RefreshToken != ""}
	}
	return sess, nil
}

// SignedIn reports whether the dial carries a token.
func (s *Session) SignedIn() bool { return s.ts != nil }

// Sealed reports whether the server has sealed credentials at all (a token or only its
// registered client): its dials then wait for an unlock.
func (s *Session) Sealed() bool { return s.creds.ClientID != "" }

// Granted returns the scopes of the current sign-in.
func (s *Session) Granted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.creds.Scopes)
}

// TokenSource implements auth.OAuthHandler.
func (s *Session) TokenSource(context.Context) (oauth2.TokenSource, error) { return s.ts, nil }

// Authorize implements auth.OAuthHandler: it signs in to nothing. A 401, or a 403 asking for
// more scope, fails the request with a *NeedsAuthError naming the challenge; any other 403 fails
// it as the refusal it is.
func (s *Session) Authorize(_ context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	ch := Challenge{Status: resp.StatusCode, WWWAuthenticate: resp.Header.Values("WWW-Authenticate"), URL: req.URL.String()}
	if ch.Status == http.StatusForbidden && !ch.InsufficientScope() {
		return fmt.Errorf("the server refused the request: %s", resp.Status)
	}
	if s.onRefused != nil {
		s.onRefused(ch)
	}
	return &NeedsAuthError{Challenge: ch}
}

// sealingSource hands out the sign-in's token, refreshing it when it is about to expire, and
// seals every new one (a refresh may rotate the refresh token too), so a restart starts from
// the newest. A refresh token the authorization server no longer accepts (invalid_grant) is
// forgotten and recorded; the request then goes out without a token, and the server's 401
// makes it need a sign-in.
type sealingSource struct {
	sess *Session
	base oauth2.TokenSource

	canRefresh bool

	mu      sync.Mutex
	last    string // the access token last sealed
	revoked bool
}

func (t *sealingSource) Token() (*oauth2.Token, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.revoked {
		return nil, errRevoked
	}
	tok, err := t.base.Token()
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re) && refused(re):
		if clientRefused(err) {
			t.sess.svc.stale.set(t.sess.server, true)
		}
		t.revoked = true
		t.sess.revoke()
		return nil, errRevoked
	case err != nil && !t.canRefresh:
		// Expired, and nothing to refresh it with: the server's 401 asks for a sign-in.
		return nil, errExpired
	case err != nil:
		// The authorization server is unreachable or failing: a transient failure.
		return nil, err
	}
	if tok.AccessToken != t.last {
		t.sess.refreshed(tok)
		t.last = tok.AccessToken
	}
	return tok, nil
}

// refused reports whether the token endpoint refused the refresh for good: the grant or the
// client is no longer valid (RFC 6749 section 5.2), rather than the server failing.
func refused(re *oauth2.RetrieveError) bool {
	switch re.ErrorCode {
	case "invalid_grant", "invalid_client", "unauthorized_client":
		return true
	}
	return re.Response != nil && (re.Response.StatusCode == http.StatusBadRequest || re.Response.StatusCode == http.StatusUnauthorized)
}

// errRevoked and errExpired stand for a token Maven no longer has. Each is an invalid_grant,
// which go-sdk's transport reads as "send the request without a token": the server then
// answers 401, and needs a sign-in.
var (
	errRevoked = &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the refresh token was revoked"}
	errExpired = &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the token expired and there is no refresh token"}
)

// refreshed seals a new token.
func (s *Session) refreshed(tok *oauth2.Token) {
	s.mu.Lock()
	s.creds.Token = tok
	creds := s.creds
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), sealTimeout)
	defer cancel()
	if err := s.svc.save(ctx, s.server, creds); err != nil {
		// Locked meanwhile: the session is ending, and the next unlock refreshes again.
		s.svc.logger.Warn("oauth: could not seal a refreshed token", "server", s.server, "err", err)
		return
	}
	s.svc.logger.Info("oauth: token refreshed", "server", s.server)
}

// revoke forgets the token whose refresh was refused, keeping the registered client, and
// records it.
func (s *Session) revoke() {
	s.mu.Lock()
	s.creds.Token = nil
	creds := s.creds
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), sealTimeout)
	defer cancel()
	if err := s.svc.save(ctx, s.server, creds); err != nil {
		s.svc.logger.Warn("oauth: could not forget a revoked token", "server", s.server, "err", err)
	}
	s.svc.logger.Warn("oauth: the refresh token was refused; the server needs a sign-in", "server", s.server)
	s.svc.record("system", activity.ActionTokenRevoked, s.server, map[string]any{"issuer": creds.Issuer})
}

// sealTimeout bounds sealing a token, which has no request context.
const sealTimeout = 5 * time.Second
