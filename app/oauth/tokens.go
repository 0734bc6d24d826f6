package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
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
	// moved is set when the sealed sign-in was for another address than the one dialled: its
	// token is not used.
	moved bool
	// onRefused hears of each refusal that wants a sign-in.
	onRefused func(Challenge)

	mu    sync.Mutex
	creds Credentials
}

var _ auth.OAuthHandler = (*Session)(nil)

// Open starts the OAuth of one dial of server at serverURL (secrets expanded): with its sealed
// credentials when it signed in (their token refreshed, and each new one sealed), without
// otherwise. ErrLocked (from the vault) while its credentials are sealed: no request may go out
// without them, nor with them. A sign-in is bound to the resource it was made for: when that
// does not cover serverURL (a reload moved the server), its token is not used (Moved), and stays
// sealed until a sign-in at the new address replaces it. refused is called with every refusal
// that wants a sign-in, as it happens (the dial, a list, a call or a ping), before the request
// fails.
func (s *Service) Open(ctx context.Context, server, serverURL string, refused func(Challenge)) (*Session, error) {
	sess := &Session{svc: s, server: server, onRefused: refused}
	creds, err := s.Load(ctx, server)
	switch {
	case isNotFound(err):
		return sess, nil
	case err != nil:
		return nil, err
	}
	sess.creds = creds
	if creds.Token != nil && !covers(creds.Resource, serverURL) {
		// Named by neither URL: either may carry a secret.
		s.logger.Warn("oauth: the sealed sign-in is for another address than the server's; its token is not used", "server", server)
		sess.moved = true
		return sess, nil
	}
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

// Moved reports whether the server has a sign-in, but for another address than the one
// dialled: it needs a sign-in there.
func (s *Session) Moved() bool { return s.moved }

// covers reports whether a token issued for resource (RFC 8707) may go to serverURL: the same
// origin (scheme, host and port, the default port implied), and serverURL's path is resource's
// or below it. An origin's resource covers all of it, as the protected resource metadata at its
// root says; the query is not compared (a secret there may change). A sign-in without a
// resource covers nothing.
func covers(resource, serverURL string) bool {
	r, err1 := url.Parse(resource)
	u, err2 := url.Parse(serverURL)
	if resource == "" || err1 != nil || err2 != nil || canonicalOrigin(r) != canonicalOrigin(u) {
		return false
	}
	base := strings.TrimSuffix(r.EscapedPath(), "/")
	p := u.EscapedPath()
	return base == "" || p == base || strings.HasPrefix(p, base+"/")
}

// canonicalOrigin is u's scheme://host:port, lower-cased, with the scheme's default port.
func canonicalOrigin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port))
}

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
