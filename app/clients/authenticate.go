package clients

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/ory/fosite"
)

// Authenticate verifies an agent's bearer token for the URL it was presented at (its MCP
// server's: "https://maven.example/mcp", or /sse, the same server by the older transport), on
// every request (docs/design.md#rule-29): a static token of an approved client, wherever it
// reaches Maven's MCP server (as the voice token does, at any address); or an access token Maven
// issued, unexpired, bound to exactly that server at that origin, of a client still approved.
// Anything else is ErrInvalidToken (unknown, expired, revoked, another resource, a refresh token
// or a code).
func (s *Service) Authenticate(ctx context.Context, token, presentedAt string) (Grant, error) {
	resource, ok := mcpResource(presentedAt)
	if !ok {
		return Grant{}, fmt.Errorf("%w: %q is not Maven's MCP server", ErrInvalidToken, presentedAt)
	}
	if strings.HasPrefix(token, staticPrefix) {
		id, ok := s.staticClient(token)
		if !ok {
			return Grant{}, fmt.Errorf("%w: no approved client has this static token", ErrInvalidToken)
		}
		return s.grant(ctx, id, Grant{})
	}
	v, ok := s.tokens.get(token)
	if !ok {
		var err error
		if v, err = s.verify(ctx, token); err != nil {
			return Grant{}, err
		}
		s.tokens.put(token, v)
	}
	if !slices.Contains(v.audience, resource) {
		return Grant{}, fmt.Errorf("%w: the token is for %v, not %s", ErrInvalidToken, v.audience, resource)
	}
	// fosite checks the expiry too, by the wall clock and once; this is by the service's, each
	// time.
	if v.expires.IsZero() || !s.now().Before(v.expires) {
		return Grant{}, fmt.Errorf("%w: the token expired at %s", ErrInvalidToken, v.expires)
	}
	return s.grant(ctx, v.clientID, Grant{Expires: v.expires})
}

// verify is what fosite says of an access token it issued: its HMAC and its stored signature
// checked, whose client it is, for which resource, until when.
func (s *Service) verify(ctx context.Context, token string) (verified, error) {
	gen := s.tokens.generation()
	use, ar, err := s.provider.IntrospectToken(ctx, token, fosite.AccessToken, NewSession())
	if err != nil {
		return verified{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if use != fosite.AccessToken {
		return verified{}, fmt.Errorf("%w: a %s is not an access token", ErrInvalidToken, use)
	}
	return verified{gen: gen, clientID: ar.GetClient().GetID(), audience: ar.GetGrantedAudience(),
		expires: ar.GetSession().GetExpiresAt(fosite.AccessToken)}, nil
}

// grant is the grant of the approved client id, with the expiry of the token that was shown.
func (s *Service) grant(ctx context.Context, id string, g Grant) (Grant, error) {
	c, err := s.approved(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Grant{}, fmt.Errorf("%w: client %s is gone", ErrInvalidToken, id)
	}
	if err != nil {
		return Grant{}, err
	}
	if c.State != StateApproved {
		return Grant{}, fmt.Errorf("%w: client %s is %s", ErrInvalidToken, id, c.State)
	}
	s.seenNow(ctx, id)
	expires := g.Expires
	g = grantOf(c)
	g.Expires = expires
	return g, nil
}

// mcpResource is the resource (RFC 8707) of the MCP server at the URL u: u itself for /mcp, and
// for /sse, the same server by the older transport, its /mcp; false for any other URL.
func mcpResource(u string) (string, bool) {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" || p.RawQuery != "" || p.Fragment != "" || p.Scheme != "http" && p.Scheme != "https" ||
		p.Path != "/mcp" && p.Path != "/sse" {
		return "", false
	}
	return p.Scheme + "://" + p.Host + "/mcp", true
}
