package clients

import (
	"slices"

	"github.com/ory/fosite"
)

// oauthClient is a client as fosite sees it.
type oauthClient struct {
	c         Client
	resources []string
}

var _ fosite.Client = oauthClient{}

// ClientOf is the client behind fosite's c, as it registered or as its metadata document
// says (then StatePending until the owner approved it, whatever the database says); false for a
// client that is not Maven's.
func ClientOf(c fosite.Client) (Client, bool) {
	o, ok := c.(oauthClient)
	return o.c, ok
}

// oauthClient is c for fosite: it may ask for Maven's resources, and nothing else.
func (s *Service) oauthClient(c Client) fosite.Client {
	return oauthClient{c: c, resources: s.resources}
}

func (o oauthClient) GetID() string             { return o.c.ID }
func (o oauthClient) GetHashedSecret() []byte   { return o.c.SecretHash }
func (o oauthClient) GetRedirectURIs() []string { return slices.Clone(o.c.RedirectURIs) }
func (o oauthClient) GetGrantTypes() fosite.Arguments {
	return fosite.Arguments(slices.Clone(o.c.GrantTypes))
}

// GetResponseTypes is the code flow alone.
func (o oauthClient) GetResponseTypes() fosite.Arguments { return fosite.Arguments{"code"} }

// GetScopes is none: scopes grant nothing here, and the scope strategy lets any through.
func (o oauthClient) GetScopes() fosite.Arguments { return nil }

// IsPublic: a client without a secret proves nothing at the token endpoint but its PKCE
// verifier.
func (o oauthClient) IsPublic() bool { return o.c.AuthMethod == authNone }

// GetAudience is Maven's MCP server at each configured origin: a token is bound to one.
func (o oauthClient) GetAudience() fosite.Arguments {
	return fosite.Arguments(slices.Clone(o.resources))
}
