package clients

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ory/fosite"
)

// Authenticate verifies an agent's bearer token for the resource it was presented at (such as
// "https://maven.example/mcp"), on every request (docs/design.md#rule-29): a static token of an
// approved client, at any of Maven's resources; or an access token Maven issued, unexpired,
// bound to exactly that resource, of a client still approved. Anything else is ErrInvalidToken
// (unknown, expired, revoked, another resource, a refresh token or a code).
func (s *Service) Authenticate(ctx context.Context, token, resource string) (Grant, error) {
	if !slices.Contains(s.resources, resource) {
		return Grant{}, fmt.Errorf("%w: %q is not Maven's MCP server", ErrInvalidToken, resource)
	}
	if strings.HasPrefix(token, staticPrefix) {
		id, ok := s.staticClient(token)
		if !ok {
			return Grant{}, fmt.Errorf("%w: no approved client has this static token", ErrInvalidToken)
		}
		return s.grant(ctx, id, Grant{})
	}
	use, ar, err := s.provider.IntrospectToken(ctx, token, fosite.AccessToken, NewSession())
	if err != nil {
		return Grant{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if use != fosite.AccessToken {
		return Grant{}, fmt.Errorf("%w: a %s is not an access token", ErrInvalidToken, use)
	}
	if !slices.Contains(ar.GetGrantedAudience(), resource) {
		return Grant{}, fmt.Errorf("%w: the token is for %v, not %s", ErrInvalidToken, ar.GetGrantedAudience(), resource)
	}
	// fosite checks the expiry too, by the wall clock; this is by the service's.
	expires := ar.GetSession().GetExpiresAt(fosite.AccessToken)
	if expires.IsZero() || !s.now().Before(expires) {
		return Grant{}, fmt.Errorf("%w: the token expired at %s", ErrInvalidToken, expires)
	}
	return s.grant(ctx, ar.GetClient().GetID(), Grant{Expires: expires})
}

// grant is the grant of the approved client id, with the expiry of the token that was shown.
func (s *Service) grant(ctx context.Context, id string, g Grant) (Grant, error) {
	c, err := s.store.Client(ctx, id)
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
