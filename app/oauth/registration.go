package oauth

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// A client Maven registered dynamically at an authorization server is sealed with the server's
// tokens, and a later sign-in to the same authorization server reuses it rather than
// registering again (issue 12). It is registered anew once the authorization server shows it
// no longer knows it: it refuses it at the token endpoint (invalid_client), or a sign-in begun
// with it never came back to Maven's callback (an authorization server does not redirect a
// request from a client it does not know, RFC 6749 section 4.1.2.1).

// staleClients are the servers whose sealed registration is not to be reused. It is memory
// only: after a restart a stale registration is tried once more, and costs one sign-in.
type staleClients struct {
	mu    sync.Mutex
	stale map[string]bool
}

func (c *staleClients) set(server string, stale bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stale == nil {
		c.stale = map[string]bool{}
	}
	if stale {
		c.stale[server] = true
	} else {
		delete(c.stale, server)
	}
}

func (c *staleClients) is(server string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stale[server]
}

// registered returns the client Maven registered for in's server at its authorization server
// and sealed, if a sign-in can reuse it: it was registered dynamically at the same issuer with
// that issuer's callback on the browser's origin (a client registered before callbacks were per
// authorization server is not: Maven registers once more), no client is configured instead,
// and the authorization server has not shown it stale. Nil means go-sdk registers as usual. From here until the
// sign-in's callback arrives, the registration counts as stale.
func (s *Service) registered(ctx context.Context, in SignIn) (*oauthex.ClientCredentials, []string) {
	if in.Configured != nil || s.stale.is(in.Server) {
		return nil, nil
	}
	creds, err := s.Load(ctx, in.Server)
	if err != nil || !creds.Registered || creds.ClientID == "" || creds.Issuer != in.Need.Issuer ||
		!slices.Contains(creds.Redirects, in.Origin+CallbackPathFor(in.Need.Issuer)) {
		return nil, nil
	}
	s.stale.set(in.Server, true)
	c := &oauthex.ClientCredentials{Issuer: creds.Issuer, ClientID: creds.ClientID}
	if creds.ClientSecret != "" {
		c.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: creds.ClientSecret}
	}
	return c, creds.Redirects
}

// clientRefused reports whether err is the token endpoint refusing the client itself.
func clientRefused(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && (re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client")
}
