package clients

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
)

// Lifetimes of what the authorization server issues.
const (
	// CodeLifespan: a client exchanges its code at once (RFC 9700 recommends minutes).
	CodeLifespan = 5 * time.Minute
	// AccessLifespan: an access token is checked on every request anyway; an hour bounds what
	// a stolen one is worth.
	AccessLifespan = time.Hour
	// RefreshLifespan: a client that goes unused longer signs in again. Every refresh rotates
	// the refresh token, and a rotated one shown again revokes its whole family.
	RefreshLifespan = 90 * 24 * time.Hour
)

// secretKey is the settings key of the authorization server's HMAC secret.
const secretKey = "oauth_server_secret"

// globalSecret returns the HMAC secret fosite keys its tokens with: 32 random bytes made on the
// first start and kept in the settings table. It signs nothing outside Maven: only Maven checks
// its tokens, and it stores only their signatures.
func globalSecret(ctx context.Context, settings Settings) ([]byte, error) {
	v, err := settings.Setting(ctx, secretKey)
	if err != nil {
		return nil, fmt.Errorf("read the authorization server's secret: %w", err)
	}
	if v != "" {
		b, err := hex.DecodeString(v)
		if err != nil || len(b) != 32 {
			return nil, errors.New("the stored authorization server's secret is corrupt")
		}
		return b, nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generate the authorization server's secret: %w", err)
	}
	if err := settings.SetSetting(ctx, secretKey, hex.EncodeToString(b)); err != nil {
		return nil, fmt.Errorf("store the authorization server's secret: %w", err)
	}
	return b, nil
}

// newProvider composes fosite for exactly what Maven offers: the authorization code grant with
// PKCE S256 only (plain refused), refresh tokens rotated on every use (reuse revokes the family:
// RefreshTokenGrantHandler.handleRefreshTokenReuse), RFC 7009 revocation, and the introspection
// Authenticate uses. Tokens are opaque HMAC tokens; only their signatures are stored.
func newProvider(ctx context.Context, settings Settings, st *storage) (fosite.OAuth2Provider, error) {
	secret, err := globalSecret(ctx, settings)
	if err != nil {
		return nil, err
	}
	cfg := &fosite.Config{
		AccessTokenLifespan:            AccessLifespan,
		RefreshTokenLifespan:           RefreshLifespan,
		AuthorizeCodeLifespan:          CodeLifespan,
		GlobalSecret:                   secret,
		EnforcePKCE:                    true,
		EnablePKCEPlainChallengeMethod: false,
		// Every client with the refresh_token grant gets refresh tokens, whatever it asked
		// for: scopes grant nothing here (the consent's tools do).
		RefreshTokenScopes: []string{},
		ScopeStrategy:      func([]string, string) bool { return true },
		// A token is bound to exactly one of Maven's resources (RFC 8707).
		AudienceMatchingStrategy: fosite.ExactAudienceMatchingStrategy,
		// state is optional with PKCE (OAuth 2.1 section 7.5.1), and the TypeScript SDK's client
		// sends none; below zero, fosite asks for no length.
		MinParameterEntropy: -1,
		ClientSecretsHasher: sha256Hasher{},
	}
	return compose.Compose(cfg, st, compose.NewOAuth2HMACStrategy(cfg),
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2TokenIntrospectionFactory,
		compose.OAuth2TokenRevocationFactory,
		compose.OAuth2PKCEFactory,
	), nil
}

// sha256Hasher hashes client secrets with SHA-256 and compares them in constant time: they are
// 256 random bits, so a slow password hash would add nothing but time.
type sha256Hasher struct{}

var errWrongSecret = errors.New("wrong client secret")

func (sha256Hasher) Hash(_ context.Context, data []byte) ([]byte, error) {
	sum := sha256.Sum256(data)
	return sum[:], nil
}

func (sha256Hasher) Compare(_ context.Context, hash, data []byte) error {
	sum := sha256.Sum256(data)
	if subtle.ConstantTimeCompare(sum[:], hash) != 1 {
		return errWrongSecret
	}
	return nil
}

// subject is the resource owner of every authorization: Maven has one owner.
const subject = "owner"

// NewSession is the session fosite keeps with an authorization (the token endpoint hands one
// to fosite to fill): who approved it, and when each of its tokens expires.
func NewSession() *fosite.DefaultSession {
	return &fosite.DefaultSession{Subject: subject, ExpiresAt: map[fosite.TokenType]time.Time{}}
}
