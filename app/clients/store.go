package clients

import (
	"context"
	"errors"
	"time"
)

// TokenKind is what an OAuth token row holds.
type TokenKind string

// The kinds of token row: what fosite stores under a token's signature.
const (
	TokenCode    TokenKind = "code"    // an authorization code
	TokenPKCE    TokenKind = "pkce"    // the PKCE challenge an authorization code was issued for
	TokenAccess  TokenKind = "access"  // an access token
	TokenRefresh TokenKind = "refresh" // a refresh token
)

// Token is one stored OAuth token: never the token itself, only its signature (the HMAC half
// fosite's strategy keys it by, which cannot be turned back into the token), the authorization
// it belongs to, and fosite's request, as JSON.
type Token struct {
	Kind      TokenKind
	Signature string
	// RequestID names the authorization (one consent) every token of a refresh family shares.
	RequestID string
	ClientID  string
	// Active is false for a code that was used and a refresh token that was rotated: kept so
	// that their reuse is recognised.
	Active bool
	// ExpiresAt is when the row may go; zero for never.
	ExpiresAt time.Time
	Request   []byte
}

// ErrTokenSpent means a refresh token that is not active any more was to be rotated: another
// request spent it first.
var ErrTokenSpent = errors.New("the refresh token was spent")

// Store keeps the clients and the OAuth server's tokens. db.ClientStore implements it with bun
// on SQLite.
type Store interface {
	// Client returns ErrNotFound if no client has that id.
	Client(ctx context.Context, id string) (Client, error)
	// Clients returns every client, newest first.
	Clients(ctx context.Context) ([]Client, error)
	// AddStatic inserts the static client c, or puts it in place of a revoked one of the same
	// id; ErrExists if one of that id is not revoked.
	AddStatic(ctx context.Context, c Client) error
	// Register first deletes the pending clients created before expired, then inserts c (a
	// pending registered client) unless max pending clients remain: then ErrTooMany, and
	// nothing is inserted. One transaction.
	Register(ctx context.Context, c Client, expired time.Time, max int) error
	// Approve makes the client of c.ID approved with c's policy at c.ApprovedAt: a metadata
	// client is inserted if it is not there, and its name and redirect URIs are c's. A
	// registered client must exist: ErrNotFound otherwise.
	Approve(ctx context.Context, c Client) error
	// SetPolicy changes the tools of an approved client; ErrNotFound if no approved client has
	// that id.
	SetPolicy(ctx context.Context, id string, all bool, toolIDs []int64) error
	// Revoke marks an approved client revoked at at, forgets its static token, and deletes
	// every token issued to it, in one transaction; ErrNotFound if no approved client has id.
	Revoke(ctx context.Context, id string, at time.Time) error
	// Seen records that a token of the client worked at at, and adds calls to its count.
	Seen(ctx context.Context, id string, at time.Time, calls int64) error
	// DeleteExpired deletes the pending clients created before pendingBefore and the tokens
	// whose expiry is before now, and says how many of each went.
	DeleteExpired(ctx context.Context, pendingBefore, now time.Time) (clients, tokens int, err error)

	// CreateToken stores t.
	CreateToken(ctx context.Context, t Token) error
	// Token returns ErrNotFound if no token of kind has that signature.
	Token(ctx context.Context, kind TokenKind, signature string) (Token, error)
	// DeactivateToken marks one active token inactive; ErrNotFound if no active token of kind
	// has that signature.
	DeactivateToken(ctx context.Context, kind TokenKind, signature string) error
	// DeleteToken deletes one token; none there is no error.
	DeleteToken(ctx context.Context, kind TokenKind, signature string) error
	// DeactivateTokens marks inactive every token of kind of one authorization.
	DeactivateTokens(ctx context.Context, kind TokenKind, requestID string) error
	// DeleteTokens deletes every token of kind of one authorization.
	DeleteTokens(ctx context.Context, kind TokenKind, requestID string) error
	// RotateRefresh spends the refresh token signature of the authorization requestID: it,
	// and every other refresh token of that authorization, become inactive, and its access
	// tokens are deleted, in one transaction. ErrTokenSpent if that refresh token was not
	// active (nothing changes).
	RotateRefresh(ctx context.Context, requestID, signature string) error
}

// Settings keeps small daemon-wide values (db.SettingsStore): the OAuth server's secret.
type Settings interface {
	// Setting returns "" when the key was never set.
	Setting(ctx context.Context, key string) (string, error)
	SetSetting(ctx context.Context, key, value string) error
}
