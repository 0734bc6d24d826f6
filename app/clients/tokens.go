package clients

import (
	"context"
	"errors"
	"slices"

	"github.com/ory/fosite"
)

// Respond is fosite's answer to the authorization request ar the owner allowed (r, which
// Consent returned): a code bound to r's resource (RFC 8707), the code and every token it leads
// to carrying it as their audience. (The handlers add iss to every answer, errors included.)
func (s *Service) Respond(ctx context.Context, ar fosite.AuthorizeRequester, r Request) (fosite.AuthorizeResponder, error) {
	ar.SetRequestedAudience(fosite.Arguments{r.Resource})
	ar.GrantAudience(r.Resource)
	return s.provider.NewAuthorizeResponse(ctx, ar, NewSession())
}

// CheckTokenRequest refuses a token request whose resource parameter names anything but the
// resource its authorization is bound to (RFC 8707 section 2.2), or its /sse (Check). A request
// that names none gets that resource.
func CheckTokenRequest(ar fosite.AccessRequester) error {
	bound := ar.GetRequestedAudience()
	for _, r := range ar.GetRequestForm()["resource"] {
		if res, ok := mcpResource(r); !ok || !slices.Contains(bound, res) {
			return errInvalidTarget.WithHint("This authorization is bound to another resource.")
		}
	}
	return nil
}

// TokenRefused records in the activity feed what a refused token request says about a client:
// a refresh token shown again after it was rotated, which fosite has answered by revoking every
// token of its authorization (docs/design.md#rule-29).
func (s *Service) TokenRefused(ctx context.Context, ar fosite.AccessRequester, err error) {
	if ar == nil || ar.GetClient() == nil || !errors.Is(err, fosite.ErrInactiveToken) ||
		!ar.GetGrantTypes().ExactOne(grantRefresh) {
		return
	}
	c, cerr := s.store.Client(ctx, ar.GetClient().GetID())
	if cerr != nil {
		s.log.Warn("a refresh token was reused by a client that is gone", "client", ar.GetClient().GetID())
		return
	}
	s.log.Warn("a rotated refresh token was used again: its authorization's tokens are revoked", "client", c.ID)
	s.record(ctx, "system", ActionTokenReused, c, nil)
	s.changed(c.ID)
}
